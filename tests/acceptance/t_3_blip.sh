#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 3: a blip (its connection killed with ss -K): the supervisor
# redials its gateway with STAY and stays.
#
# Set up so that staying is not what placement would choose: gw-1 alone,
# sup-1 and sup-2 attach to it, then gw-2 joins (a join moves nobody), so gw-1
# serves 2 with 2 gateways (cap 1).  Five blips (sup-1, sup-2, sup-1, ...):
# each time the blipped supervisor logs a new attachment to gw-1 via=redial
# stay=1 with a higher epoch, the store shows it on gw-1 with that epoch, the
# other supervisor's session is untouched (same epoch), gw-2 serves none, and
# gw-1's stays counter went up.
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --gateways 1
sups_start 1 2
await "sup-1 and sup-2 attached to gw-1" 15 all_attached 1 2
is_on 1 1 && is_on 2 1 || fail "not both on gw-1"
gw_start 2
hold "gw-2 joining moves nobody" 0.5 count_is 1 2

for i in 1 2 3 4 5; do
	m=$((2 - i % 2)) o=$((1 + i % 2))
	e=$(session "$m" epoch) eo=$(session "$o" epoch)
	n=$(log_count "$(sup_log "$m")" 'event=attached( |$)')
	stays=$(metric 1 ringsteer_gateway_stays_total)
	sup_blip "$m"
	reattached() { [ "$(log_count "$(sup_log "$m")" 'event=attached( |$)')" -gt "$n" ] && sup_attached "$m"; }
	await "blip $i: sup-$m attached again" 10 reattached
	last=$(grep -E 'event=attached( |$)' "$(sup_log "$m")" | tail -n 1)
	grep -q 'gateway=gw-1 via=redial stay=1' <<<"$last" || fail "blip $i: sup-$m did not redial gw-1 with STAY: $last"
	is_on "$m" 1 || fail "blip $i: sup-$m is on $(where "$m")"
	[ "$(session "$m" epoch)" -gt "$e" ] || fail "blip $i: sup-$m epoch did not grow ($e)"
	[ "$(session "$o" epoch)" = "$eo" ] && is_on "$o" 1 || fail "blip $i: sup-$o was touched"
	count_is 2 0 || fail "blip $i: gw-2 serves $(count_on 2)"
	[ "$(metric 1 ringsteer_gateway_stays_total)" -gt "$stays" ] || fail "blip $i: gw-1 stays_total did not grow"
	echo "blip $i: sup-$m back on gw-1: $last"
done
hold "both stay on gw-1" 1.5 count_is 1 2
echo "t_3: 5 blips, each redialled gw-1 with STAY and stayed"
