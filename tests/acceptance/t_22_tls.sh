#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 22: TLS and safe redirects (issue 9).  A CA and certificates are
# made with the openssl command at test time (tests/tls/make_certs.sh).
#
# TLS cluster, mutual (RS_TLS=1 RS_TLS_MTLS=1): gw-N's certificate names gw-N
# and the Service name ringsteer.test; sup-M's names sup-M.
#   place     2 gateways, 8 supervisors: all attach, placement redirects
#             happen (each verified: the target's certificate names it),
#             nobody refuses a target; ringsteer_gateway_insecure is 0 and the
#             certificate's expiry is exported
#   reload    gw-1's certificate is reissued: with no signal, the heartbeat
#             sees the files replaced and a new connection is served the new
#             certificate (serial); SIGHUP reloads again (reloads{ok} + 1);
#             a garbage key is refused once (reloads{error} + 1), not
#             retried every heartbeat, retried on SIGHUP (+ 1 more); the new
#             certificate still serves; the supervisors on gw-1 keep their
#             links throughout (same epoch, no disconnect)
#   refusals  plaintext bytes and a client with no certificate: the handshake
#             fails, counted reason="tls_handshake" (a silent connect and
#             close, a port probe, is not); sup-20 whose certificate
#             names sup-21: REJECT bad token, counted reason="client_cert"
#   rotation  sup-40 starts with a certificate from another CA and is refused;
#             its files are replaced (no signal) and its next dial uses them
#             and attaches; sup-1's files are replaced while it is attached
#             and reloaded at a heartbeat
#   rogue     gw-3 joins (outside the Service) with a certificate from the
#             right CA that names gw-x instead: a member placed on gw-3 is
#             redirected there, refuses it ("does not name gw-3", counted in
#             refused_total), falls back to the Service asking to stay and
#             stays where it lands
#   drain     gw-3 stops, then gw-2: its supervisors go to gw-1 by REDIRECT
#             {drain}, each target verified; everyone ends on gw-1
# Plaintext cluster (--insecure), targets allowed only in 127.0.1.1/32 and
# 127.0.1.2/32:
#   allow     a member placed on gw-3 (127.0.1.3) refuses the redirect before
#             dialing ("outside --redirect-allow") and stays where the Service
#             puts it; the gateways export insecure 1 and log event=insecure
# Flags: a gateway with neither --tls-* nor --insecure, or a supervisor with
# neither --tls-ca nor --insecure, exits 2 saying so; a gateway whose
# certificate file is missing exits 1 with event=tls_failed.
. "$(dirname "$0")/../cluster/lib.sh"

command -v openssl >/dev/null || { echo "missing tool: openssl" >&2; exit 1; }

# serial_of ADDR:PORT [NAME]: the serial of the certificate served there.
serial_of() {
	rs_ns openssl s_client -connect "$1" -servername "${2:-gw-1}" -CAfile "$RS_DIR/tls/ca.crt" \
		-cert "$RS_DIR/tls/sup-1.crt" -key "$RS_DIR/tls/sup-1.key" </dev/null 2>/dev/null |
		openssl x509 -noout -serial 2>/dev/null
}
file_serial() { openssl x509 -noout -serial -in "$1"; }
all_attached() { [ "$(count_attached)" -eq "$1" ]; }
# member_on GW FROM: the first sup-M, M >= FROM, that the store's placement puts on GW now.
member_on() {
	local m
	for ((m = $2; m < $2 + 400; m++)); do
		[ "$(ctl place --store "$RS_STORE" --ttl "$RS_TTL_MS" "sup-$m")" = "$1" ] && { echo "$m"; return 0; }
	done
	return 1
}
epochs_of() { local m; for m in "$@"; do printf '%s=%s ' "$m" "$(session "$m" epoch)"; done; }

# --- TLS, mutual ----------------------------------------------------------------
RS_TLS=1 RS_TLS_MTLS=1
cluster_up --gateways 2
for m in 1 2 3 4 5 6 7 8; do sup_start "$m" 1; done
await "8 supervisors attached over TLS" 20 all_attached 8
redirects=$(($(metric 1 ringsteer_gateway_redirects_total placement) + $(metric 2 ringsteer_gateway_redirects_total placement)))
[ "$redirects" -gt 0 ] || fail "no placement redirect happened: nothing was verified"
for m in 1 2 3 4 5 6 7 8; do
	! log_has "$(sup_log "$m")" 'event=target_refused' || fail "sup-$m refused a good target"
done
metric_is 1 ringsteer_gateway_insecure 0 || fail "gw-1 exports insecure=$(metric 1 ringsteer_gateway_insecure)"
expiry=$(metric 1 ringsteer_gateway_tls_cert_expiry_timestamp_seconds)
now=$(date +%s)
[ "${expiry%.*}" -gt "$now" ] && [ "${expiry%.*}" -le $((now + 31 * 86400)) ] ||
	fail "certificate expiry exported as $expiry (now $now)"
rs_log "place: 8 attached, $redirects placement redirects verified"

# reload: a new certificate, the old links stay
on1=$(rs_current | jq -r 'select(.gateway_id == "gw-1") | .member_id' | sed 's/^sup-//' | sort -n)
[ -n "$on1" ] || fail "nobody on gw-1"
before=$(epochs_of $on1)
dis_before=$(cat $(for m in $on1; do sup_log "$m"; done) | grep -c 'event=disconnected' || true)
old_serial=$(serial_of "$(gw_addr 1):$RS_GW_PEER_PORT")
[ "$old_serial" = "$(file_serial "$RS_DIR/tls/gw-1.crt")" ] || fail "gw-1 serves $old_serial, not its file"
rm "$RS_DIR/tls/gw-1.crt"
rs_tls_issue gw-1 "DNS:gw-1,DNS:$RS_TLS_NAME"
new_serial=$(file_serial "$RS_DIR/tls/gw-1.crt")
[ "$new_serial" != "$old_serial" ] || fail "the reissued certificate has the old serial"
# No signal: the heartbeat sees the files replaced.  (Key and certificate
# are two renames: a heartbeat between them may fail a reload once.)
served() { [ "$(serial_of "$(gw_addr 1):$RS_GW_LISTEN_PORT")" = "$1" ]; }
await "gw-1 serves the new certificate unasked" 5 served "$new_serial"
ok=$(metric 1 ringsteer_gateway_tls_reloads_total 'result="ok"')
[ "$ok" -ge 1 ] || fail "the reload was not counted"
kill -HUP "${RS_GW_PID[1]}"
await "SIGHUP reloads the same files again" 5 metric_is 1 ringsteer_gateway_tls_reloads_total $((ok + 1)) 'result="ok"'
errs=$(metric 1 ringsteer_gateway_tls_reloads_total 'result="error"')
# Replaced in one rename, as a Secret's update is: written in place, the
# truncation and the write are two changes a heartbeat can see apart, and
# each is a (rightly counted) failed reload.
printf 'not a key\n' >"$RS_DIR/tls/gw-1.key.new"
mv "$RS_DIR/tls/gw-1.key.new" "$RS_DIR/tls/gw-1.key"
await "gw-1 refuses a garbage key" 5 metric_is 1 ringsteer_gateway_tls_reloads_total $((errs + 1)) 'result="error"'
hold "a bad file is not retried every heartbeat" 1 metric_is 1 ringsteer_gateway_tls_reloads_total $((errs + 1)) 'result="error"'
kill -HUP "${RS_GW_PID[1]}"
await "SIGHUP retries it" 5 metric_is 1 ringsteer_gateway_tls_reloads_total $((errs + 2)) 'result="error"'
log_has "$(gw_log 1)" 'event=tls_reload_failed' || fail "no tls_reload_failed line"
served "$new_serial" || fail "after a failed reload gw-1 serves $(serial_of "$(gw_addr 1):$RS_GW_LISTEN_PORT")"
hold "gw-1's supervisors stay through both reloads" 1 all_attached 8
[ "$(epochs_of $on1)" = "$before" ] || fail "epochs on gw-1 changed: $before -> $(epochs_of $on1)"
dis_after=$(cat $(for m in $on1; do sup_log "$m"; done) | grep -c 'event=disconnected' || true)
[ "$dis_after" -eq "$dis_before" ] || fail "a supervisor on gw-1 was disconnected by a reload"
rs_log "reload: serial $old_serial -> $new_serial, $(echo $on1 | wc -w) links kept, bad key refused"

# refusals: plaintext, no client certificate, a certificate for someone else
hs0=$(metric 2 ringsteer_gateway_rejects_total 'reason="tls_handshake"')
out=$(rs_ns "$RS_LIB_DIR/raw.sh" "$(gw_addr 2):$RS_GW_LISTEN_PORT" 0000002c0101 3)
case $out in closed* | reset*) ;; *) fail "plaintext to a TLS gateway: $out" ;; esac
rs_ns openssl s_client -connect "$(gw_addr 2):$RS_GW_LISTEN_PORT" -servername gw-2 -CAfile "$RS_DIR/tls/ca.crt" \
	</dev/null >/dev/null 2>&1 || true
await "2 failed handshakes counted" 5 metric_ge 2 ringsteer_gateway_rejects_total $((hs0 + 2)) 'reason="tls_handshake"'
# A port probe (connect, say nothing, close) is not a failed handshake.
hs1=$(metric 2 ringsteer_gateway_rejects_total 'reason="tls_handshake"')
out=$(rs_ns "$RS_LIB_DIR/raw.sh" "$(gw_addr 2):$RS_GW_LISTEN_PORT" "" 0.3)
[ "${out%% *}" = open ] || fail "a silent connection was closed at once: $out"
hold "a port probe is not counted" 1 metric_is 2 ringsteer_gateway_rejects_total "$hs1" 'reason="tls_handshake"'
rs_tls_issue sup-20 "DNS:sup-21"
sup_start 20 1
client_cert_refused() { # on either gateway: the Service picks one
	[ "$(($(metric 1 ringsteer_gateway_rejects_total 'reason="client_cert"') + \
		$(metric 2 ringsteer_gateway_rejects_total 'reason="client_cert"')))" -ge 1 ]
}
await "sup-20 refused for its certificate" 10 client_cert_refused
await "sup-20 told bad token" 5 log_has "$(sup_log 20)" 'event=rejected code=3 '
sup_stop 20
[ -z "$(session 20 gateway_id)" ] || fail "sup-20 has a session: $(session 20 gateway_id)"
rs_log "refusals: tls_handshake +$(($(metric 2 ringsteer_gateway_rejects_total 'reason="tls_handshake"') - hs0)), client_cert counted"

# rotation of a client certificate, no signal: sup-40 starts with one from
# another CA (refused at the handshake, it retries); its files are replaced
# with a good one, which its next dial loads (it watches them) and attaches
# with.  sup-1's is replaced while attached: reloaded at a heartbeat.
"$RS_LIB_DIR/../tls/make_certs.sh" "$RS_DIR/tls" issue sup-40 "DNS:sup-40" other-ca || fail "issue sup-40"
sup_start 40 1
await "sup-40 refused for its CA" 10 log_has "$(sup_log 40)" 'event=dial_failed via=service .*error='
! log_has "$(sup_log 40)" 'event=attached' || fail "sup-40 attached with a certificate from another CA"
rm "$RS_DIR/tls/sup-40.crt"
rs_tls_issue sup-40 "DNS:sup-40"
await "sup-40 attaches with its new certificate" 10 log_has "$(sup_log 40)" 'event=attached'
[ "$(log_count "$(sup_log 40)" 'event=tls_loaded')" -ge 2 ] || fail "sup-40 did not reload its files"
rm "$RS_DIR/tls/sup-1.crt"
rs_tls_issue sup-1 "DNS:sup-1"
reloaded_1() { [ "$(log_count "$(sup_log 1)" 'event=tls_loaded')" -ge 2 ]; }
await "sup-1 reloads its files while attached" 5 reloaded_1
sup_stop 40
rs_log "rotation: sup-40 attached after its files were replaced, sup-1 reloaded while attached"

# rogue: gw-3's certificate names gw-x
rs_tls_issue gw-3 "DNS:gw-x,DNS:$RS_TLS_NAME"
gw_start 3
svc_update 1 2
r=$(member_on gw-3 30) || fail "no member id places on gw-3"
sup_start "$r" 1
await "sup-$r refuses gw-3" 10 log_has "$(sup_log "$r")" 'event=target_refused via=redirect .*gateway=gw-3 .*does not name gw-3'
# Its Service fallback is accepted where it lands unless that gateway is at
# the cap without gw-3; sup-40's place, kept on its gateway for the grace
# after it stopped (a restart goes home), may fill one: then the store
# places it on the other (via=redirect).  Either way on gw-1 or gw-2.
await "sup-$r attached after the refusal" 10 log_has "$(sup_log "$r")" 'event=attached gateway=gw-[12] via=(service|redirect) stay=1'
log_has "$(sup_log "$r")" 'refused_total=1( |$)' || fail "sup-$r does not count its refusal"
off_gw3() { [ "$(where "$r")" != gw-3 ]; }
hold "sup-$r stays off gw-3" 1 off_gw3
[ "$(count_on 3)" -eq 0 ] || fail "gw-3 holds $(count_on 3) sessions"
rs_log "rogue: sup-$r refused gw-3 and stayed on $(where "$r")"

# drain: every handoff target verified
gw_stop 3
gw_stop 2
on_gw1() { [ "$(count_on 1)" -eq 9 ]; }
await "everyone on gw-1 after gw-2's drain" 20 on_gw1
for m in 1 2 3 4 5 6 7 8 "$r"; do
	! log_has "$(sup_log "$m")" 'event=target_refused via=redirect .*gateway=gw-1' || fail "sup-$m refused gw-1"
done
rs_log "drain: 9 on gw-1, no refusal"
cluster_down

# --- plaintext, a narrow allow list ----------------------------------------------
RS_TLS=0 RS_TLS_MTLS=0 RS_REDIRECT_ALLOW="127.0.1.1/32 127.0.1.2/32"
cluster_up --gateways 3
svc_update 1 2
r=$(member_on gw-3 30) || fail "no member id places on gw-3"
sup_start "$r" 1
await "sup-$r refuses gw-3 in plaintext" 10 \
	log_has "$(sup_log "$r")" 'event=target_refused via=redirect endpoint=127.0.1.3:7001 gateway=gw-3 error="outside --redirect-allow"'
await "sup-$r attached after the refusal" 10 log_has "$(sup_log "$r")" 'event=attached gateway=gw-[12] via=service stay=1'
! log_has "$(sup_log "$r")" 'event=dialing via=redirect' || fail "sup-$r dialed the refused target"
metric_is 1 ringsteer_gateway_insecure 1 || fail "gw-1 does not export insecure 1"
log_has "$(gw_log 1)" 'level=warn .*event=insecure' || fail "gw-1 did not log event=insecure"
rs_log "allow: sup-$r refused 127.0.1.3 and stayed on $(where "$r")"

# --- flags --------------------------------------------------------------------
gwbin=$RS_BUILD/ringsteer-gateway
out=$("$gwbin" --id gw-9 --listen 127.0.0.1:1 --peer 127.0.0.1:2 --secret "$RS_SECRET" 2>&1); rc=$?
[ "$rc" -eq 2 ] && [[ $out == *"--insecure"* ]] || fail "gateway without transport flags: rc=$rc $out"
out=$("$RS_BUILD/ringsteer-supervisor" --id sup-9 --service 127.0.0.1:1 --token-file /dev/null 2>&1); rc=$?
[ "$rc" -eq 2 ] && [[ $out == *"--tls-ca"* ]] || fail "supervisor without transport flags: rc=$rc $out"
out=$("$gwbin" --id gw-9 --listen 127.0.0.1:1 --peer 127.0.0.1:2 --secret "$RS_SECRET" \
	--tls-cert "$RS_DIR/nonexistent.crt" --tls-key "$RS_DIR/nonexistent.key" 2>&1); rc=$?
[ "$rc" -eq 1 ] && [[ $out == *"event=tls_failed"* ]] || fail "gateway with a missing certificate: rc=$rc $out"
rs_log "flags: refused as expected"
