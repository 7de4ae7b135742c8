#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 32: deferred placement after a store outage (issue 17).  A
# supervisor accepted degraded was never placed by the rule; once claimed,
# if its gateway is above the cap it is placed by the rule once, paced and
# make-before-break like a drain handoff, and counted in
# redirects_total{reason="deferred"}.
#
# Three gateways; sup-1..3 are placed by the rule (one each).  The Service
# then delivers to gw-1 only, the store's write lock is held for 2 s, and
# sup-4..9 arrive: all six accepted degraded on gw-1 (7 there).  The lock
# goes and the Service spreads again.  gw-1 claims them; every claim that
# finds gw-1 above the cap (N = 9, G = 3: cap 3) marks its supervisor, and
# the marked are placed one per --drain-pace until gw-1 is at the cap.
# Checked: every gateway ends within cap + 1 (at most 4), gw-1's deferred
# redirects are exactly the degraded arrivals that left gw-1, each of them
# attached twice at most (moved once), and sup-1..3 never moved (one
# attachment each, on the gateway they were placed on).
. "$(dirname "$0")/../cluster/lib.sh"

RS_GW_ARGS="${RS_GW_ARGS:-} --store-timeout 100"
[ -z "${RS_PG_DIR:-}" ] || { echo "skip: the outage is a held SQLite lock"; exit 77; }

cluster_up --gateways 3
sups_start 1 2 3
await "sup-1..3 attached" 20 all_attached 1 2 3
one_each() { [ "$(loads 1 2 3)" = "1 1 1" ]; }
await "one supervisor on each gateway" 5 one_each
declare -A placed
for m in 1 2 3; do placed[$m]=$(where "$m"); done

svc_update 1
store_lock
locked_at=$(rs_now_ms)
await "gw-1 reports the store down" 5 metric_is 1 ringsteer_gateway_store_up 0
sups_start 4 5 6 7 8 9
degraded6() { metric_is 1 ringsteer_gateway_degraded_accepts_total 6; }
await "sup-4..9 accepted degraded on gw-1" 10 degraded6
# The rest of the 2 s outage: the placed three stay where they are.
stay_put() { local m; for m in 1 2 3; do [ "$(sup_attach_count "$m")" = 1 ] || return 1; done; }
left=$((2000 - ($(rs_now_ms) - locked_at)))
[ "$left" -gt 0 ] && hold "sup-1..3 stay attached while the store is locked" "$(awk -v l="$left" 'BEGIN { print l / 1000 }')" stay_put
store_unlock
svc_update

recorded6() { metric_is 1 ringsteer_gateway_store_claims_total 6 'result="recorded"'; }
await "gw-1 records the six claims" 10 recorded6
# Settled means the pacer is done, read first: loads reach cap + 1 one move
# before gw-1 reaches the cap, and a move still in flight leaves its
# supervisor between two attachments.
settled() {
	metric_is 1 ringsteer_gateway_deferred_placements_pending 0 || return 1
	all_attached 1 2 3 4 5 6 7 8 9 || return 1
	metric_is 1 ringsteer_gateway_unrecorded_supervisors 0 || return 1
	local l
	for l in $(loads 1 2 3); do [ "$l" -le 4 ] || return 1; done
}
await "loads within cap + 1 (4)" 15 settled
hold "loads stay within cap + 1" 1 settled

deferred=$(metric 1 ringsteer_gateway_redirects_total 'reason="deferred"')
off=0
for m in 4 5 6 7 8 9; do
	[ "$(where "$m")" = gw-1 ] || off=$((off + 1))
	[ "$(sup_attach_count "$m")" -le 2 ] || fail "sup-$m attached $(sup_attach_count "$m") times (moved more than once)"
done
[ "$deferred" = "$off" ] || fail "deferred redirects $deferred, but $off degraded arrivals left gw-1"
[ "$deferred" -ge 3 ] || fail "only $deferred deferred redirects: gw-1 held 7 at cap 3"
for m in 1 2 3; do
	[ "$(sup_attach_count "$m")" = 1 ] || fail "sup-$m, placed by the rule, attached again"
	[ "$(where "$m")" = "${placed[$m]}" ] || fail "sup-$m moved from ${placed[$m]} to $(where "$m")"
done
for n in 2 3; do
	[ "$(metric "$n" ringsteer_gateway_redirects_total 'reason="deferred"')" = 0 ] || fail "gw-$n redirected someone deferred"
done
echo "t_32: loads $(loads 1 2 3) after 6 degraded arrivals on gw-1; $deferred deferred redirects"
