#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_agent_member_rate.sh - registrations per key are rate-limited: a pod
# gets a burst of REG_LIMIT_BURST (16) registrations, then one per second;
# the excess is refused (reason rate_limited) and counted, the episode
# logged once, and another pod registers meanwhile as if nothing happened.
set -u
. "$(dirname "$0")/lib.sh"
kt_up
. "$(dirname "$0")/pods.sh"
SOCK="$KT_DIR/member.sock"
KT_METRICS=127.0.0.1:9202
agent_start --member-socket "$SOCK" --metrics "$KT_METRICS"
pod_up p1
pod_up p2
refused=0
for i in $(seq 1 20); do
	out=$(member p1 "$SOCK" sup-$i </dev/null)
	case $out in
	registered*) ;;
	"refused rate_limited "*) refused=$((refused + 1)) ;;
	*) fail "sup-$i: $out" ;;
	esac
done
[ $refused -ge 3 ] || fail "20 registrations at once from one pod: only $refused refused as rate_limited (burst 16)"
out=$(member p2 "$SOCK" other-1 </dev/null)
echo "$out" | grep -q '^registered ' || fail "another pod was refused while p1 was limited: $out"
log="$KT_DIR/agent.$KT_AGENT_STARTS.log"
[ "$(grep -c 'event=member_rate_limited' "$log")" = 1 ] ||
	fail "the episode was not logged once: $(grep -c 'event=member_rate_limited' "$log") lines"
[ "$(metric 'ringsteer_agent_member_registrations_total{result="rate_limited"}')" = $refused ] ||
	fail "rate_limited refusals not counted as $refused"
# The bucket refills: one more a second later.
sleep 1.1
out=$(member p1 "$SOCK" sup-9 </dev/null)
echo "$out" | grep -q '^registered ' || fail "no registration allowed after the refill: $out"
agent_stop
echo "ok"
