#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_agent_member_rate.sh - registrations per key are rate-limited: a pod
# (here --member-burst 2) gets a burst of registrations, then one per second;
# the excess is refused (reason rate_limited) and counted, the episode
# logged once, and another pod registers meanwhile as if nothing happened.
set -u
. "$(dirname "$0")/lib.sh"
kt_up
. "$(dirname "$0")/pods.sh"
SOCK="$KT_DIR/member.sock"
KT_METRICS=127.0.0.1:9202
agent_start --member-socket "$SOCK" --metrics "$KT_METRICS" --member-burst 2
pod_up p1
pod_up p2
# A burst of 2, then one a second: of N sent in S seconds (a guest under
# TCG takes a quarter second each), at least N - 2 - ceil(S) are refused.
refused=0 n=12 t0=$(date +%s%N)
for i in $(seq 1 $n); do
	out=$(member p1 "$SOCK" sup-$i </dev/null)
	case $out in
	registered*) ;;
	"refused rate_limited "*) refused=$((refused + 1)) ;;
	*) fail "sup-$i: $out" ;;
	esac
done
took_s=$(( ($(date +%s%N) - t0 + 999999999) / 1000000000 ))
want=$((n - 2 - took_s))
[ $want -ge 1 ] || want=1
[ $refused -ge $want ] || fail "$n registrations in ${took_s} s from one pod: only $refused refused as rate_limited (burst 2: want >= $want)"
out=$(member p2 "$SOCK" other-1 </dev/null)
echo "$out" | grep -q '^registered ' || fail "another pod was refused while p1 was limited: $out"
log="$KT_DIR/agent.$KT_AGENT_STARTS.log"
# Once per episode: a refill between two refusals may start a second one.
[ "$(grep -c 'event=member_rate_limited' "$log")" -ge 1 ] && [ "$(grep -c 'event=member_rate_limited' "$log")" -le $((1 + took_s)) ] ||
	fail "the episode was not logged once: $(grep -c 'event=member_rate_limited' "$log") lines"
[ "$(metric 'ringsteer_agent_member_registrations_total{result="rate_limited"}')" = $refused ] ||
	fail "rate_limited refusals not counted as $refused"
# The bucket refills: one more a second later.
sleep 1.1
out=$(member p1 "$SOCK" sup-9 </dev/null)
echo "$out" | grep -q '^registered ' || fail "no registration allowed after the refill: $out"
agent_stop
echo "ok"
