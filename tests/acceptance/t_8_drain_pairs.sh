#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drain acceptance 1: two gateways, two supervisors, a surge-first rolling
# restart of both gateways (start the replacement with a new id, wait until
# it is ready, then SIGTERM the old one, as a Deployment does by default),
# 10 rounds.  Every round ends with one supervisor on each gateway, and every
# move was a drain handoff (the old gateway counted it completed).
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --gateways 2
sups_start 1 2
await "both supervisors attached" 15 all_attached 1 2
live=(1 2)
next=3
one_each() { [ "$(count_on "${live[0]}")" -eq 1 ] && [ "$(count_on "${live[1]}")" -eq 1 ]; }
one_each || fail "start: not one per gateway"
for round in $(seq 1 "${ROUNDS:-10}"); do
	for i in 0 1; do
		old=${live[$i]}
		gw_start "$next" # returns once /readyz answers
		gw_stop "$old"    # SIGTERM: drains, exits
		completed=$(log_count "$(gw_log "$old")" 'event=drained')
		[ "$completed" -eq 1 ] || fail "round $round: gw-$old did not log event=drained"
		grep -q 'event=handoff_timeout\|event=handoff_abandoned' "$(gw_log "$old")" &&
			fail "round $round: gw-$old timed out or abandoned a handoff"
		live[$i]=$next
		next=$((next + 1))
	done
	await "round $round: both supervisors attached" 15 all_attached 1 2
	one_each || fail "round $round: gw-${live[0]}: $(count_on "${live[0]}"), gw-${live[1]}: $(count_on "${live[1]}")"
	echo "round $round: sup-1 on $(where 1), sup-2 on $(where 2)"
done
hold "one supervisor on each gateway after the last round" 1.5 one_each
echo "t_8: ${ROUNDS:-10} surge-first rolling restarts, each ended one per gateway"
