#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 42: TLS session resumption across the fleet (issue 27, part 5).
# mTLS cluster; every gateway's certificate names gw-1, gw-2, gw-3 and the
# Service name (a fleet certificate: a resumed handshake shows none, so a
# supervisor offers its session only to a name the session's certificate
# names).  gw-1 and gw-2 share a ticket keyring (one key, k1); gw-3 has its
# own.  A gateway sends a ticket once its ACCEPT is written.  Counts are
# ringsteer_gateway_tls_handshakes_total{kind}.
#   handoff   sup-A attached on gw-1 (full handshake, a ticket under k1);
#             gw-1 drains: REDIRECT{drain} to gw-2, where it resumes
#             (gw-2: resumed + 1, full + 0)
#   rotate    gw-2's keyring becomes k1 k2 (k2 signs; no signal: the
#             heartbeat sees the file): sup-A blipped redials gw-2 and
#             resumes its k1 ticket (one of the previous two), getting one
#             under k2; then k1..k5: k2 is older than the previous two, so
#             the next redial is a full handshake
#   other     gw-3 (another keyring) starts and gw-2 drains: sup-A's handoff
#             to gw-3 offers its session and gets a full handshake
#   mtls      openssl s_client with sup-51's certificate: a HELLO as sup-51
#             accepted at gw-3 (its ticket kept), then that session resumed
#             ("Reused") with a HELLO as sup-52: refused (client_cert + 1,
#             resumed + 1): the member check holds on a resumed link.
#             sup-50, whose certificate names sup-51, is refused at HELLO
#             twice and never resumes (a refused HELLO gets no ticket)
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
cluster_up --gateways 2
svc_update 1

# handoff: gw-1 -> gw-2 by the drain, shared keys
a=$(member_on gw-1 1) || fail "no member places on gw-1"
f1=$(hs 1 full)
sup_start "$a" 1
await "sup-$a attached on gw-1" 10 log_has "$(sup_log "$a")" 'event=attached gateway=gw-1 via=service'
[ "$(hs 1 full)" -eq $((f1 + 1)) ] || fail "gw-1 full handshakes $f1 -> $(hs 1 full), expected +1"
r2=$(hs 2 resumed) f2=$(hs 2 full)
gw_stop 1
await "sup-$a handed off to gw-2" 15 log_has "$(sup_log "$a")" 'event=attached gateway=gw-2 via=redirect'
[ "$(hs 2 resumed)" -eq $((r2 + 1)) ] && [ "$(hs 2 full)" -eq "$f2" ] ||
	fail "gw-2 after the handoff: resumed $r2 -> $(hs 2 resumed), full $f2 -> $(hs 2 full); expected resumed + 1"
rs_log "handoff: sup-$a resumed on gw-2 with gw-1's ticket"

# rotate: k1 k2 on gw-2 (k1 still accepted), then k1..k5 (k2 out)
reattached() { [ "$(log_count "$(sup_log "$a")" 'event=attached gateway=gw-2')" -ge $((att + 1)) ]; }
reloads=$(metric 2 ringsteer_gateway_tls_reloads_total 'result="ok"')
keyring "$RS_DIR/tickets-2" k1 k2
await "gw-2 reloads its ticket keys unasked" 5 metric_ge 2 ringsteer_gateway_tls_reloads_total $((reloads + 1)) 'result="ok"'
log_has "$(gw_log 2)" 'event=tls_reloaded .*ticket_key=k2' || fail "gw-2 does not say k2 signs"
r2=$(hs 2 resumed) f2=$(hs 2 full)
att=$(log_count "$(sup_log "$a")" 'event=attached gateway=gw-2')
sup_blip "$a"
await "sup-$a back on gw-2" 15 reattached
[ "$(hs 2 resumed)" -eq $((r2 + 1)) ] || fail "k1's ticket after k2 came: resumed $r2 -> $(hs 2 resumed), full $f2 -> $(hs 2 full)"
sleep 0.5 # its new ticket (under k2) follows the ACCEPT
reloads=$(metric 2 ringsteer_gateway_tls_reloads_total 'result="ok"')
keyring "$RS_DIR/tickets-2" k1 k2 k3 k4 k5
await "gw-2 reloads k1..k5" 5 metric_ge 2 ringsteer_gateway_tls_reloads_total $((reloads + 1)) 'result="ok"'
r2=$(hs 2 resumed) f2=$(hs 2 full)
att=$(log_count "$(sup_log "$a")" 'event=attached gateway=gw-2')
sup_blip "$a"
await "sup-$a back on gw-2 again" 15 reattached
[ "$(hs 2 full)" -eq $((f2 + 1)) ] && [ "$(hs 2 resumed)" -eq "$r2" ] ||
	fail "k2's ticket after k3..k5 came: full $f2 -> $(hs 2 full), resumed $r2 -> $(hs 2 resumed)"
rs_log "rotate: resumed under a previous key, refused once it was rotated out"

# other: gw-3's keyring differs: the handoff there is a full handshake
sleep 0.5 # sup-A's ticket under k5 follows its ACCEPT
gw_start 3
f3=$(hs 3 full) r3=$(hs 3 resumed)
gw_stop 2
await "sup-$a handed off to gw-3" 15 log_has "$(sup_log "$a")" 'event=attached gateway=gw-3 via=redirect'
[ "$(hs 3 full)" -eq $((f3 + 1)) ] && [ "$(hs 3 resumed)" -eq "$r3" ] ||
	fail "gw-3 after the handoff: full $f3 -> $(hs 3 full), resumed $r3 -> $(hs 3 resumed); expected full + 1"
rs_log "other: sup-$a's handoff to gw-3 (another keyring) was a full handshake"

# mtls: a resumed link's HELLO is still checked against the certificate.
# openssl s_client stands in for the supervisor (which cannot change its
# member): as sup-51 with sup-51's certificate it is accepted at gw-3 and
# gets a ticket, then resumes that session and says HELLO as sup-52.
rs_tls_issue sup-51 "DNS:sup-51"
# hello_bytes M: a HELLO from sup-M with a good token, as bytes on stdout.
hello_bytes() {
	local hex
	hex=$(hello_hex "sup-$1" raw "$(date +%s%6N)" 0 "$(sup_token "$1")" 1)
	# shellcheck disable=SC2059
	printf "$(printf '%s' "$hex" | sed 's/../\\x&/g')"
}
# client M SESSION_FLAG FILE: one link to gw-3's peer endpoint with sup-51's
# certificate, saying HELLO as sup-M; s_client's report on stdout.
client() {
	{ hello_bytes "$1"; sleep 1; } | rs_ns openssl s_client -connect "$(gw_addr 3):$RS_GW_PEER_PORT" \
		-servername gw-3 -CAfile "$RS_DIR/tls/ca.crt" -cert "$RS_DIR/tls/sup-51.crt" \
		-key "$RS_DIR/tls/sup-51.key" -nocommands "$2" "$3" 2>&1 | tr -d '\000'
}
cc=$(metric 3 ringsteer_gateway_rejects_total 'reason="client_cert"') r1=$(hs 3 resumed)
out=$(client 51 -sess_out "$RS_DIR/sup-51.sess")
[ -s "$RS_DIR/sup-51.sess" ] || fail "no session ticket for sup-51: $(tail -n 5 <<<"$out")"
grep -q '^New, TLSv1.3' <<<"$out" || fail "sup-51's first link was not a full handshake"
out=$(client 52 -sess_in "$RS_DIR/sup-51.sess")
grep -q '^Reused, TLSv1.3' <<<"$out" || fail "sup-51's session did not resume: $(grep -E '^(New|Reused)' <<<"$out")"
await "the resumed HELLO as sup-52 refused for the certificate" 5 \
	metric_is 3 ringsteer_gateway_rejects_total $((cc + 1)) 'reason="client_cert"'
[ "$(hs 3 resumed)" -eq $((r1 + 1)) ] || fail "gw-3 resumed $r1 -> $(hs 3 resumed), expected +1"
[ -z "$(session 52 gateway_id)" ] || fail "sup-52 has a session: $(session 52 gateway_id)"

# sup-50, whose certificate names sup-51, is refused at its HELLO, and a
# refused HELLO gets no ticket: its retry is a full handshake, refused again.
rs_tls_issue sup-50 "DNS:sup-51"
cc=$(metric 3 ringsteer_gateway_rejects_total 'reason="client_cert"') r1=$(hs 3 resumed)
sup_start 50 1
await "sup-50 refused twice for its certificate" 15 metric_ge 3 ringsteer_gateway_rejects_total $((cc + 2)) 'reason="client_cert"'
[ "$(hs 3 resumed)" -eq "$r1" ] || fail "a refused HELLO's link left a ticket that resumed"
sup_stop 50
rs_log "mtls: a resumed link saying another member's HELLO refused; a refused HELLO gets no ticket"
