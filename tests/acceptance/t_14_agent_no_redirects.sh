#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Kernel steering acceptance 6: two gateways, two supervisors with the node
# agent.  After the first round, restarting the supervisors (same source
# addresses) places them with zero redirects: the agent pinned each source
# to its gateway's socket, sk_lookup delivers it there, and the rule agrees.
#
# The Service address has no DNAT in agent mode: connections to it are
# steered by sk_lookup only.  Each supervisor is restarted in turn (its
# own session row goes at its GOODBYE; the other's still counts, so the
# rule sends it back where it was).  Redirects are read from both gateways'
# ringsteer_gateway_redirects_total{reason="placement"} before and after.
. "$(dirname "$0")/../cluster/lib.sh"

export RS_AGENT=1
cluster_up --gateways 0
agent_start
RS_GW_ARGS="--agent $RS_SOCK/agent.sock"
gw_start 1
gw_start 2
for n in 1 2; do
	log_has "$(gw_log "$n")" 'event=agent_registered role=listen' || fail "gw-$n did not register with the agent"
done
sups_start 1 2
await "first round: both supervisors attached" 15 all_attached 1 2
[ "$(where 1)" != "$(where 2)" ] || fail "first round: both on $(where 1)"
echo "first round: sup-1 on $(where 1), sup-2 on $(where 2)"
redirects() { echo $(($(metric 1 ringsteer_gateway_redirects_total 'reason="placement"') + \
	$(metric 2 ringsteer_gateway_redirects_total 'reason="placement"'))); }
pinned() { # the agent pinned both sources (ringsteerctl maps)
	local j
	j=$(nsenter --net="/run/netns/$RS_NS" "$RS_BUILD/ringsteerctl" maps --json) || return 1
	[ "$(jq '[.pins[]?] | length' <<<"$j")" -ge 2 ]
}
await "the agent pinned both supervisors' sources" 10 pinned

for round in 1 2 3; do
	before=$(redirects)
	for m in 1 2; do
		g=$(where "$m")
		sup_stop "$m"
		sup_start "$m"
		await "round $round: sup-$m attached again" 15 all_attached "$m"
		[ "$(where "$m")" = "$g" ] || fail "round $round: sup-$m moved from $g to $(where "$m")"
		sup_last "$m" via | grep -qx service || fail "round $round: sup-$m attached via $(sup_last "$m" via)"
	done
	after=$(redirects)
	[ "$after" -eq "$before" ] || fail "round $round: $((after - before)) redirects (want 0)"
	echo "round $round: sup-1 on $(where 1), sup-2 on $(where 2), redirects $before -> $after"
done
# Every restart was steered by the kernel (a pin, or the room-weighted table
# that gives all its weight to the gateway the supervisor just left), none
# fell through.
p=$(agent_metric ringsteer_agent_lookups_total 'result="pinned"')
t=$(agent_metric ringsteer_agent_lookups_total 'result="table"')
miss=$(agent_metric ringsteer_agent_lookups_total 'result="miss"')
[ $((${p%.*} + ${t%.*})) -ge 8 ] || fail "only $p pinned + $t table lookups for 8 connections"
[ "${miss%.*}" -eq 0 ] || fail "$miss lookups missed"
echo "t_14: 3 rounds of restarts, zero redirects; lookups: $p pinned, $t table, $miss missed"
