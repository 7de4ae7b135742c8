#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Kernel steering acceptance 7: the agent's per-gateway connection gauge
# (from sockops) equals each gateway's supervisors gauge, after arrivals
# (steered, and redirected to peer endpoints), a departure and a restart.
. "$(dirname "$0")/../cluster/lib.sh"

export RS_AGENT=1
cluster_up --gateways 0
agent_start
RS_GW_ARGS="--agent $RS_SOCK/agent.sock"
gw_start 1
gw_start 2
equal() {
	local n a g
	for n in 1 2; do
		a=$(agent_metric ringsteer_agent_connections "gateway=\"gw-$n\"")
		g=$(metric "$n" ringsteer_gateway_supervisors)
		[ -n "$a" ] && [ "${a%.*}" = "$g" ] || return 1
	done
}
show() { echo "$1: agent gw-1=$(agent_metric ringsteer_agent_connections 'gateway="gw-1"') gw-2=$(agent_metric ringsteer_agent_connections 'gateway="gw-2"'); gateways gw-1=$(metric 1 ringsteer_gateway_supervisors) gw-2=$(metric 2 ringsteer_gateway_supervisors)"; }

sups_start 1 2 3 4 5 6
await "six supervisors attached" 15 all_attached 1 2 3 4 5 6
await "agent connections = gateway supervisors (6 attached)" 5 equal
show "6 attached"
sup_stop 3
await "sup-3 gone" 5 attached_is 5
await "agent connections = gateway supervisors (sup-3 left)" 5 equal
show "sup-3 left"
sup_restart 4
await "sup-4 back" 15 all_attached 4
await "agent connections = gateway supervisors (sup-4 restarted)" 5 equal
show "sup-4 restarted"
echo "t_15: agent connection gauges followed the gateways' supervisors gauges"
