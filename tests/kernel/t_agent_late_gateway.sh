#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real ringsteer-gateway keeps its sockets registered with the node agent
# (user/gateway/agent_registration.c):
#  1. started before any agent, it runs redirect-only, logs that once per
#     socket however many heartbeats retry, and is registered and steered to
#     within a heartbeat of the agent's start;
#  2. while the same agent runs, it does not register again;
#  3. after the agent is SIGKILLed and its pins removed (a fresh agent, no
#     state to adopt), the new agent's socket file tells the gateway to
#     register again, and Service connections are steered again;
#  4. after a clean agent stop (its socket file unlinked) the gateway says
#     so (gauge 0) and registers with the next agent.
# Nothing listens on the Service address 127.0.0.100: a connection to it
# succeeds only when sk_lookup steers it to the gateway's listener.  The
# gateway waits for a HELLO that never comes, answers REJECT and closes it
# (--hello-timeout), and counts a hello_timeout reject: that count proves the
# connection reached this gateway (kt_tool dial prints "refused" when nothing
# took it, else what it read: here the REJECT frame, binary).
set -u
. "$(dirname "$0")/lib.sh"
kt_up

GW_ADDR=127.0.1.1
HB_MS=200 # the gateway's heartbeat: registration retries ride on it
"$RS_BUILD/ringsteerctl" init --store "$KT_STORE" >/dev/null || fail "cannot create the store"
(umask 077 && head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n' >"$KT_DIR/secret")

gw_metrics() { kt_ns curl -fsS --max-time "$KT_HTTP_S" "http://$GW_ADDR:9100/metrics"; }
# metric NAME LABELMATCH: the value of the one series of NAME whose labels hold LABELMATCH
metric() { gw_metrics | awk -v n="$1" -v m="$2" 'index($1, n "{") == 1 && index($1, m) { print $2; exit }'; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
metric_ge() { local v; v=$(metric "$1" "$2") && [ -n "$v" ] && [ "$v" -ge "$3" ]; }
# Both sockets' registration gauges are $1 (one /metrics read: each
# process is dear on a qemu guest).
registered_is() {
	gw_metrics | awk -v want="$1" 'index($1, "ringsteer_gateway_agent_registered{") == 1 &&
		(index($1, "role=\"listen\"") || index($1, "role=\"peer\"")) { n++; if ($2 != want) bad = 1 }
		END { exit !(n == 2 && !bad) }'
}
hello_timeouts() { metric ringsteer_gateway_rejects_total 'reason="hello_timeout"'; }
count() { grep -c -- "$2" "$1"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# The gateway's store heartbeat ran at or after $1 (ms since the epoch).
beat_after() {
	local hb
	hb=$(sqlite3 "$KT_DIR/ringsteer.db" "SELECT heartbeat_ms FROM gateways WHERE id = 'gw-1'") && [ "${hb:-0}" -ge "$1" ]
}
# A few heartbeats pass: polled in the store, not slept.
beats() { local t=$(($(now_ms) + $1 * HB_MS)); await "$1 gateway heartbeats" 20 beat_after "$t"; }
# A Service connection is steered to the gateway: it connects (nothing else
# listens there) and the gateway counts its hello timeout.
steered() {
	local before out
	before=$(hello_timeouts) || return 1
	out=$(dial 127.0.2.1) || return 1
	[ "$out" != refused ] || return 1
	metric_ge ringsteer_gateway_rejects_total 'reason="hello_timeout"' $((before + 1))
}
not_steered() { [ "$(dial 127.0.2.1)" = refused ]; }

kt_log "gateway starts, no agent yet"
# nsenter itself (it execs the gateway): $! is the gateway's pid, which
# kt_down kills as KT_GWS_PID; its log is gws.log, which fail prints.
nsenter --net="/run/netns/$KT_NS" "$RS_BUILD/ringsteer-gateway" --id gw-1 --listen "$GW_ADDR:7000" \
	--peer "$GW_ADDR:7001" --metrics "$GW_ADDR:9100" --store "$KT_STORE" --secret "$KT_DIR/secret" --insecure \
	--heartbeat "$HB_MS" --ttl 2000 --hello-timeout 200 --agent "$KT_DIR/agent.sock" 2>"$KT_DIR/gws.log" &
KT_GWS_PID=$!
GWLOG="$KT_DIR/gws.log"
await "gateway started" 10 grep -q 'event=started' "$GWLOG"
await "/metrics up" 5 gw_metrics
registered_is 0 || fail "registered with no agent: $(gw_metrics | grep agent_)"
# Retries: each heartbeat tries both sockets (absent agent: at once).
await "6 retries against the absent agent" 5 metric_ge ringsteer_gateway_agent_registrations_total 'result="absent"' 6
for role in listen peer; do
	n=$(count "$GWLOG" "event=agent_unavailable role=$role")
	[ "$n" = 1 ] || fail "$n agent_unavailable lines for $role over several retries, want 1"
done
not_steered || fail "Service connection not refused with no agent"

kt_log "agent starts"
t0=$(now_ms)
agent_start --store "$KT_STORE"
A1="$KT_DIR/agent.1.log"
await "agent logged the listen registration" 5 grep -q 'event=registered gateway=gw-1 role=listen' "$A1"
await "agent logged the peer registration" 5 grep -q 'event=registered gateway=gw-1 role=peer' "$A1"
kt_log "registered $(($(now_ms) - t0)) ms after the agent started"
await "gauges 1" 10 registered_is 1
grep -q 'event=agent_registered role=listen slot=[0-9]* cause=retry' "$GWLOG" || fail "no retry registration logged"
await "Service connection steered to gw-1" 10 steered

kt_log "same agent: no registration again"
beats 6
[ "$(count "$A1" 'event=registered gateway=gw-1')" = 2 ] ||
	fail "registered again with the same agent: $(grep 'event=registered' "$A1")"
[ "$(count "$GWLOG" 'event=agent_registered')" = 2 ] || fail "gateway logged registrations again"
ok_before=$(metric ringsteer_gateway_agent_registrations_total 'result="ok"')
[ "$ok_before" = 2 ] || fail "registrations ok = $ok_before, want 2"

kt_log "SIGKILL the agent, remove its pins: the next agent starts fresh"
agent_kill
rm -rf "/sys/fs/bpf/ringsteer/$KT_INO"
await "steering gone with the pins" 5 not_steered
beats 2
[ "$(count "$GWLOG" 'event=agent_registered')" = 2 ] || fail "registered with nobody"
# Its socket file gone too, as it is for a moment while an agent restarts
# (a slow guest's gateway tried then): the attempts fail, and the next
# success is still with another agent, not a retry.
rm -f "$KT_DIR/agent.sock"
await "the gateway finds no agent" 5 sh -c "[ \"\$(grep -c 'event=agent_unavailable role=listen' '$GWLOG')\" = 2 ]"
t0=$(now_ms)
agent_start --store "$KT_STORE"
A2="$KT_DIR/agent.2.log"
agent_log | grep -q 'event=loaded start=created' ||
	fail "the second agent adopted state: it should start fresh: $(agent_log)"
await "gateway re-registered its listener" 5 grep -q 'event=registered gateway=gw-1 role=listen' "$A2"
await "gateway re-registered its peer socket" 5 grep -q 'event=registered gateway=gw-1 role=peer' "$A2"
kt_log "re-registered $(($(now_ms) - t0)) ms after the new agent started"
await "Service connection steered again" 10 steered
grep -q 'event=agent_registered role=listen slot=[0-9]* cause=agent_changed' "$GWLOG" ||
	fail "no agent_changed registration logged"
beats 6
[ "$(count "$A2" 'event=registered gateway=gw-1')" = 2 ] ||
	fail "registered again with the new agent: $(grep 'event=registered' "$A2")"
metric_is ringsteer_gateway_agent_registrations_total 'result="ok"' 4 || fail "registrations ok != 4"
registered_is 1 || fail "gauges not 1"

kt_log "clean agent stop: the gateway notices, and registers with the next agent"
n=$(count "$GWLOG" 'event=agent_unavailable role=listen')
agent_stop
await "gauges 0 once the socket file is gone" 5 registered_is 0
await "agent_unavailable logged once more" 5 sh -c "[ \"\$(grep -c 'event=agent_unavailable role=listen' '$GWLOG')\" = $((n + 1)) ]"
beats 2
[ "$(count "$GWLOG" 'event=agent_unavailable role=listen')" = $((n + 1)) ] || fail "agent_unavailable logged more than once more"
agent_start --store "$KT_STORE"
await "registered with the third agent" 5 grep -q 'event=registered gateway=gw-1 role=peer' "$KT_DIR/agent.3.log"
await "gauges 1" 10 registered_is 1
await "Service connection steered" 10 steered
agent_stop

kt_log "the gateway stops cleanly"
kill -TERM "$KT_GWS_PID"
wait "$KT_GWS_PID"
rc=$?
KT_GWS_PID=""
[ $rc = 0 ] || fail "gateway exited with status $rc after SIGTERM"
! grep -qE 'Sanitizer|runtime error:' "$GWLOG" || fail "sanitizer report in the gateway's log"
echo "ok"
