#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 1: two gateways, two supervisors; restart both supervisors, 10
# rounds.  Every round ends with one supervisor on each gateway.
#
# A round stops both supervisors (SIGTERM, at once) and starts both again (at
# once, through the Service's random DNAT).  It ends when each new process has
# logged its attachment and the store's current session of each member is
# that attachment (same epoch and gateway, active, live); then gw-1 and gw-2
# must each hold exactly one.  At the end the split must hold for 1.5 s (more
# than the session TTL: no late move, no stale row counted).
. "$(dirname "$0")/../cluster/lib.sh"

one_each() { [ "$(count_on 1)" -eq 1 ] && [ "$(count_on 2)" -eq 1 ]; }

cluster_up --gateways 2
sups_start 1 2
await "round 0: both supervisors attached" 15 all_attached 1 2
one_each || fail "round 0: not one supervisor on each gateway (gw-1: $(count_on 1), gw-2: $(count_on 2))"

for round in $(seq 1 "${ROUNDS:-10}"); do
	sups_stop 1 2
	sups_start 1 2
	await "round $round: both restarted supervisors attached" 15 all_attached 1 2
	one_each || fail "round $round: not one supervisor on each gateway (gw-1: $(count_on 1), gw-2: $(count_on 2))"
	echo "round $round: sup-1 on $(where 1), sup-2 on $(where 2)"
done
hold "one supervisor on each gateway after the last round" 1.5 one_each
echo "t_1: ${ROUNDS:-10} rounds, each ended one per gateway"
