#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 42: TLS session resumption across the fleet (issue 27, part 5).
# mTLS cluster; every gateway's certificate names gw-1, gw-2, gw-3 and the
# Service name (a fleet certificate: a resumed handshake shows none, so a
# supervisor offers its session only to a name the session's certificate
# names).  gw-1 and gw-2 share a ticket keyring (one key, k1); gw-3 has its
# own.  The Service holds gw-1 alone, so a member the store places elsewhere
# is redirected.  Counts are ringsteer_gateway_tls_handshakes_total{kind}.
#   redirect  sup-A, placed on gw-2: Service dial to gw-1 (full, its ticket
#             under k1), REDIRECT to gw-2: resumed (gw-2: resumed 1, full 0)
#   other     sup-B, placed on gw-3 (another keyring): gw-1 full, gw-3 full
#             (offered, refused), attaches all the same
#   rotate    gw-2's keyring becomes k1 k2 (k2 signs, no signal: the
#             heartbeat sees the file): sup-A blipped redials gw-2 and
#             resumes (k1 is one of the previous two; its ticket renewed
#             under k2); then k1..k5: k2 is older than the previous two,
#             so the next redial is a full handshake
#   mtls      sup-50 whose certificate names sup-51: refused at gw-1
#             (client_cert) after a full handshake that gave it a ticket;
#             its retry resumes and is refused again (client_cert + 1,
#             resumed + 1): the member check holds on a resumed link
. "$(dirname "$0")/../cluster/lib.sh"

command -v openssl >/dev/null || { echo "missing tool: openssl" >&2; exit 1; }

FLEET_SAN="DNS:gw-1,DNS:gw-2,DNS:gw-3,DNS:$RS_TLS_NAME"
# keyring FILE ID...: a ticket keyring of keys ID..., each secret the hash of
# its id (so gw-1 and gw-2 get the same k1), oldest first, all signing now.
keyring() {
	local f=$1 id
	shift
	{
		echo "ringsteer-keyring v1"
		for id in "$@"; do echo "$id hex:$(printf 'ticket %s' "$id" | sha256sum | cut -c1-64)"; done
	} >"$f.new"
	chmod 600 "$f.new"
	mv "$f.new" "$f"
}
tickets_of() { # N: gw-N's keyring file, made on first use (gw-3 gets its own key)
	local f="$RS_DIR/tickets-$1"
	if [ ! -s "$f" ]; then
		if [ "$1" = 3 ]; then keyring "$f" other; else keyring "$f" k1; fi
	fi
	echo "$f"
}
rs_gw_transport_args() {
	rs_tls_issue "gw-$1" "$FLEET_SAN"
	echo "--tls-cert $RS_DIR/tls/gw-$1.crt --tls-key $RS_DIR/tls/gw-$1.key --tls-ca $RS_DIR/tls/ca.crt" \
		"--tls-ticket-keys $(tickets_of "$1")"
}
hs() { metric "$1" ringsteer_gateway_tls_handshakes_total "kind=\"$2\""; }
member_on() {
	local m
	for ((m = $2; m < $2 + 400; m++)); do
		[ "$(ctl place --store "$RS_STORE" --ttl "$RS_TTL_MS" "sup-$m")" = "$1" ] && { echo "$m"; return 0; }
	done
	return 1
}

RS_TLS=1 RS_TLS_MTLS=1
cluster_up --gateways 3
svc_update 1

# redirect: gw-1 -> gw-2, shared keys
a=$(member_on gw-2 1) || fail "no member places on gw-2"
f1=$(hs 1 full) r2=$(hs 2 resumed) f2=$(hs 2 full)
sup_start "$a" 1
await "sup-$a attached on gw-2" 10 log_has "$(sup_log "$a")" 'event=attached gateway=gw-2 via=redirect'
[ "$(hs 1 full)" -eq $((f1 + 1)) ] || fail "gw-1 full handshakes $f1 -> $(hs 1 full), expected +1"
[ "$(hs 2 resumed)" -eq $((r2 + 1)) ] || fail "gw-2 resumed $r2 -> $(hs 2 resumed), expected +1"
[ "$(hs 2 full)" -eq "$f2" ] || fail "gw-2 full handshakes $f2 -> $(hs 2 full), expected none"
rs_log "redirect: sup-$a resumed on gw-2 with gw-1's ticket"

# other: gw-3's keyring differs: a full handshake there
b=$(member_on gw-3 $((a + 1))) || fail "no member places on gw-3"
f3=$(hs 3 full) r3=$(hs 3 resumed)
sup_start "$b" 1
await "sup-$b attached on gw-3" 10 log_has "$(sup_log "$b")" 'event=attached gateway=gw-3 via=redirect'
[ "$(hs 3 full)" -eq $((f3 + 1)) ] || fail "gw-3 full handshakes $f3 -> $(hs 3 full), expected +1"
[ "$(hs 3 resumed)" -eq "$r3" ] || fail "gw-3 resumed a ticket it has no key for"
rs_log "other: sup-$b did a full handshake on gw-3"

# rotate: k1 k2 on gw-2 (k1 still accepted), then k1..k5 (k2 out)
reloads=$(metric 2 ringsteer_gateway_tls_reloads_total 'result="ok"')
keyring "$RS_DIR/tickets-2" k1 k2
await "gw-2 reloads its ticket keys unasked" 5 metric_ge 2 ringsteer_gateway_tls_reloads_total $((reloads + 1)) 'result="ok"'
log_has "$(gw_log 2)" 'event=tls_reloaded .*ticket_key=k2' || fail "gw-2 does not say k2 signs"
r2=$(hs 2 resumed) f2=$(hs 2 full)
att=$(log_count "$(sup_log "$a")" 'event=attached')
sup_blip "$a"
reattached() { [ "$(log_count "$(sup_log "$a")" 'event=attached gateway=gw-2')" -ge $((att + 1)) ]; }
await "sup-$a back on gw-2" 15 reattached
[ "$(hs 2 resumed)" -eq $((r2 + 1)) ] || fail "k1's ticket after k2 came: resumed $r2 -> $(hs 2 resumed), full $f2 -> $(hs 2 full)"
reloads=$(metric 2 ringsteer_gateway_tls_reloads_total 'result="ok"')
keyring "$RS_DIR/tickets-2" k1 k2 k3 k4 k5
await "gw-2 reloads k1..k5" 5 metric_ge 2 ringsteer_gateway_tls_reloads_total $((reloads + 1)) 'result="ok"'
r2=$(hs 2 resumed) f2=$(hs 2 full)
att=$(log_count "$(sup_log "$a")" 'event=attached')
sup_blip "$a"
await "sup-$a back on gw-2 again" 15 reattached
[ "$(hs 2 full)" -eq $((f2 + 1)) ] && [ "$(hs 2 resumed)" -eq "$r2" ] ||
	fail "k2's ticket after k3..k5 came: full $f2 -> $(hs 2 full), resumed $r2 -> $(hs 2 resumed)"
rs_log "rotate: resumed under a previous key, refused once it was rotated out"

# mtls: a resumed link's HELLO is still checked against the certificate
rs_tls_issue sup-50 "DNS:sup-51"
cc=$(metric 1 ringsteer_gateway_rejects_total 'reason="client_cert"') r1=$(hs 1 resumed)
sup_start 50 1
await "sup-50 refused twice for its certificate" 15 metric_ge 1 ringsteer_gateway_rejects_total $((cc + 2)) 'reason="client_cert"'
metric_ge 1 ringsteer_gateway_tls_handshakes_total $((r1 + 1)) 'kind="resumed"' || fail "sup-50's retry did not resume"
sup_stop 50
[ -z "$(session 50 gateway_id)" ] || fail "sup-50 has a session: $(session 50 gateway_id)"
rs_log "mtls: sup-50 refused on resumed links too ($(hs 1 resumed) resumed on gw-1)"
