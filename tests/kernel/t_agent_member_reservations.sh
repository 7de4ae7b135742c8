#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_agent_member_reservations.sh - a pod's registrations cost the store one
# pending reservation at most, and not for long: each registration of
# another member id from the same netns replaces the reservation the last
# one wrote (withdrawn, counted replaced), and a reservation the member
# never claimed (it did not arrive at its gateway) is deleted by the agent
# once its lifetime (the store's reservation_ms, 5 s) ends, counted swept.
# Another pod's reservation is not touched by either.
set -u
. "$(dirname "$0")/lib.sh"
kt_up
. "$(dirname "$0")/pods.sh"
SOCK="$KT_DIR/member.sock"
KT_METRICS=127.0.0.1:9201
"$RS_BUILD/kernel/kt_tool" gateway "$KT_STORE" 300 gw-1=198.18.11.1:7001 gw-2=198.18.11.2:7001 &
KT_GWS_PID=$! # the EXIT trap kills it before it waits
await "gateway rows" 5 sh -c "'$RS_BUILD/ringsteerctl' gateways --store '$KT_STORE' --json | grep -q gw-2"
agent_start --store "$KT_STORE" --ttl 3000 --member-socket "$SOCK" --metrics "$KT_METRICS"
pod_up p1
pod_up p2

# p2's one registration: its reservation stays for its lifetime.
out=$(member p2 "$SOCK" other-1 </dev/null)
echo "$out" | grep -q '^registered ' || fail "other-1 not registered: $out"
# p1 registers three member ids in turn (each link closes): one reservation left.
for id in sup-1 sup-2 sup-3; do
	out=$(member p1 "$SOCK" $id </dev/null)
	echo "$out" | grep -q '^registered ' || fail "$id not registered: $out"
done
await "sup-1 and sup-2's reservations withdrawn" 5 sh -c "[ \"\$(sqlite3 '$KT_DIR/ringsteer.db' \"SELECT COUNT(*) FROM sessions WHERE state = 0 AND member_id IN ('sup-1', 'sup-2')\")\" = 0 ]"
rows=$(pending_rows)
grep -q '^sup-3 ' <<<"$rows" || fail "sup-3's reservation is not in the store: $rows"
grep -q '^other-1 ' <<<"$rows" || fail "p2's reservation was withdrawn by p1's registrations: $rows"
[ "$(metric 'ringsteer_agent_member_reservations_total{result="replaced"}')" = 2 ] ||
	fail "replaced reservations not counted: $(kt_ns curl -s "http://$KT_METRICS/metrics" | grep reservations)"
# Unclaimed: swept once the reservation ends (5 s from its write), within a sweep.
await "unclaimed reservations swept" 10 sh -c "[ -z \"\$(sqlite3 '$KT_DIR/ringsteer.db' 'SELECT member_id FROM sessions WHERE state = 0')\" ]"
[ "$(metric 'ringsteer_agent_member_reservations_total{result="swept"}')" = 2 ] ||
	fail "swept reservations not counted: $(kt_ns curl -s "http://$KT_METRICS/metrics" | grep reservations)"
agent_stop
echo "ok"
