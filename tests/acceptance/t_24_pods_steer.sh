#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Connect-time steering on a Kubernetes-shaped node (issue 14, tests 1, 2, 6;
# tests/cluster/pods.sh): every gateway and supervisor its own pod (netns,
# veth, /32, cgroup), kube-proxy's DNAT of the Service in the node, mutual
# TLS with the supervisors checking the Service's name.
#
# a. Agent on, supervisors with --agent: 2 gateways, 2 supervisors; five rounds
#    of restarting both end 1/1 every round; no placement redirect at all
#    (every connect was steered to the gateway the rule chose, which accepts),
#    and the DNAT counter never moves: no Service connect reached kube-proxy.
#    Each attachment came "via=service" (the supervisor dialed the Service
#    address, and TLS verified the Service's name over the rewritten connect).
# b. The same without --agent on the supervisors (RS_SUP_AGENT=0), and with
#    no agent at all: 1/1 by redirects, every connect through the DNAT.
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/../cluster/pods.sh"
export RS_TLS=1 RS_TLS_MTLS=1

even() { [ "$(spread 1 2)" = 0 ]; }
redirects() { cat "$RS_DIR"/log/gw-*.log 2>/dev/null | grep -c 'event=decision .*outcome=redirect' || true; }

scenario() { # LABEL ROUNDS: gateways 1 and 2 up; supervisors 1 and 2 restarted ROUNDS times
	local label=$1 rounds=$2 r
	sups_start 1 2
	await "$label: both attached" 15 all_attached 1 2
	await "$label: 1/1" 5 even
	for ((r = 1; r <= rounds; r++)); do
		sups_stop 1 2
		sups_start 1 2
		await "$label round $r: both attached" 15 all_attached 1 2
		[ "$(loads 1 2)" = "1 1" ] || fail "$label round $r: loads $(loads 1 2), not 1/1"
	done
}

# a. agent on
RS_AGENT=1 RS_SUP_AGENT=1
cluster_up --gateways 0
pods_up 1
gw_start 1
gw_start 2
dnat0=$(svc_dnat_count)
scenario "steered" 5
[ "$(redirects)" = 0 ] || fail "steered: $(redirects) placement redirects (want none)"
[ "$(svc_dnat_count)" = "$dnat0" ] || fail "steered: the DNAT counted $(( $(svc_dnat_count) - dnat0 )) connects"
for m in 1 2; do
	[ "$(sup_last "$m" via)" = service ] || fail "sup-$m did not attach via the Service address"
	log_has "$(sup_log "$m")" 'event=agent_registered' || fail "sup-$m never registered with the agent"
done
steered=$(node_agent_metric 1 ringsteer_agent_connects_total 'steered_netns')
echo "steered: 6 rounds 1/1, redirects 0, DNAT +0, agent steered_netns=${steered:-?}"
cluster_down

# b1. agent on, supervisors without --agent
RS_SUP_AGENT=0
cluster_up --gateways 0
pods_up 1
gw_start 1
gw_start 2
dnat0=$(svc_dnat_count)
scenario "no --agent" 2
[ "$(svc_dnat_count)" -ge $((dnat0 + 6)) ] || fail "no --agent: the DNAT did not take every connect"
echo "no --agent: 1/1, redirects $(redirects), DNAT +$(( $(svc_dnat_count) - dnat0 ))"
cluster_down

# b2. no agent
RS_AGENT=0
cluster_up --gateways 0
pods_up 1
gw_start 1
gw_start 2
scenario "no agent" 2
echo "no agent: 1/1, redirects $(redirects), DNAT +$(svc_dnat_count)"
