#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Connect-time steering across two Kubernetes-shaped nodes (issue 14, tests
# 3, 5, 4; tests/cluster/pods.sh): 4 gateway pods, 40 supervisor pods, an
# agent on each node, one store.
#
# a. Storm: the 40 start together: 10/10/10/10, at most 10% of the arrivals
#    the agents steered before their dial redirected (each agent reserves
#    its callers' targets in the store, so concurrent arrivals and the
#    gateways' own decisions count them); an arrival that fell back to the
#    Service logged why.
# b. A gateway pod SIGKILLed: once the store shows it gone, no connect is
#    rewritten to it (the agents' connect counters keep growing while its
#    pod IP sees no new connection), and its supervisors end evenly on the
#    other three (each within the cap, ceil(40 / 3) = 14).
# c. Both agents SIGKILLed: their entries keep steering until they expire
#    (the TTL), then restarted supervisors go through kube-proxy (the DNAT
#    counter moves) and are placed in-protocol, evenly; restarted agents
#    adopt their pins and links (start=adopted), every supervisor registers
#    again by itself, and connects are steered again (the DNAT counter
#    stops).
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/../cluster/pods.sh"
SUPS=40
all=$(seq 1 $SUPS)
RS_AGENT=1

redirects() { cat "$RS_DIR"/log/gw-*.log 2>/dev/null | grep -c 'event=decision .*outcome=redirect' || true; }
# evenly: every gateway within the rule's cap, ceil(40 / 3) = 14, all 40 attached
even3() { [ "$(count_attached)" = $SUPS ] && loads 1 2 3 | awk '{ exit !($1 <= 14 && $2 <= 14 && $3 <= 14) }'; }
even4() { [ "$(loads 1 2 3 4)" = "10 10 10 10" ]; }

cluster_up --gateways 0
pods_up 2
for g in 1 2 3 4; do gw_start $g; done

# a. storm
r0=$(redirects)
# shellcheck disable=SC2086
sups_start $all
# shellcheck disable=SC2086
await "40 attached" "$(rs_slow 30)" all_attached $all
await "10/10/10/10" 5 even4
storm=$(( $(redirects) - r0 ))
# Steering is judged on the arrivals the agent steered before their first
# dial: a supervisor whose agent did not answer in time, or whose agent's
# store did not, goes through the Service by design (and may be redirected);
# on a loaded machine that is a few of them, on a quiet one none.  Each
# such fallback must have its reason logged.
steered=0 steered_redirected=0 fallback=0
for m in $all; do
	case $(sup_first_steer "$m") in
	steered)
		steered=$((steered + 1))
		cat "$RS_DIR"/log/gw-*.log | grep -q "event=decision member=sup-$m .*outcome=redirect" &&
			steered_redirected=$((steered_redirected + 1)) ;;
	fallback) fallback=$((fallback + 1)) ;;
	*) fail "sup-$m's first dial: $(sup_first_steer "$m")" ;;
	esac
done
[ $steered -ge 4 ] || fail "storm: only $steered of 40 steered before their dial ($fallback fell back, reasons logged)"
[ $((steered_redirected * 10)) -le "$steered" ] ||
	fail "storm: $steered_redirected of the $steered arrivals steered before their dial were redirected (at most 10%)"
[ $((storm - steered_redirected)) -le $fallback ] || fail "storm: $storm redirects, more than the $fallback fallbacks explain"
echo "storm: loads $(loads 1 2 3 4), $storm of 40 arrivals redirected ($steered steered before their dial, $steered_redirected of them redirected; $fallback fell back), DNAT +$(svc_dnat_count)"

# b. gw-4 SIGKILLed
victim_ip=$(gw_addr 4)
gw_kill 4
await "gw-4 gone from the store" $(( RS_TTL_MS / 1000 + 5 )) sh -c "! '$RS_BUILD/ringsteerctl' gateways --store '$RS_STORE' --ttl $RS_TTL_MS --json | grep -q '\"gw-4\"'"
# shellcheck disable=SC2086
await "40 attached on the other three, evenly" "$(rs_slow 40)" even3
# New connects are never rewritten to the dead pod (it would refuse them).
sups_stop 7 8
sups_start 7 8
await "sup-7, sup-8 back" 15 all_attached 7 8
for m in 7 8; do
	log_has "$(sup_log $m)" 'event=dial_failed' && fail "sup-$m's connect went to the dead gw-4 ($victim_ip)"
done
echo "gw-4 killed: loads $(loads 1 2 3), redirects $(( $(redirects) - r0 - storm ))"

# c. both agents SIGKILLed: kube-proxy after the entries expire
node_agent_kill 1
node_agent_kill 2
d0=$(svc_dnat_count)
sups_stop 1 2
sups_start 1 2
await "sup-1, sup-2 back" 15 all_attached 1 2
[ "$(svc_dnat_count)" = "$d0" ] || echo "note: a connect went to kube-proxy before the entries expired"
# past the TTL: entries expired, connects go through the DNAT
hold "the sessions while the entries expire (TTL)" "$(awk -v t="$RS_TTL_MS" 'BEGIN { print t / 1000 + 0.5 }')" all_attached 1 2
d1=$(svc_dnat_count)
sups_stop 3 4
sups_start 3 4
await "sup-3, sup-4 back through kube-proxy" 15 all_attached 3 4
[ "$(svc_dnat_count)" -ge $((d1 + 2)) ] || fail "after expiry the DNAT took $(( $(svc_dnat_count) - d1 )) connects (want 2)"
await "even after kube-proxy" 15 even3
# restarted agents adopt, and steer again
node_agent_start 1
node_agent_start 2
for k in 1 2; do log_has "$(node_agent_log $k)" 'start=adopted' || fail "node $k's agent did not adopt its pins"; done
# Every supervisor registers again with the agent that came back (at its
# next heartbeat), without a restart of its own.
members_back() { [ $(( $(node_agent_metric 1 ringsteer_agent_members) + $(node_agent_metric 2 ringsteer_agent_members) )) = $SUPS ]; }
await "all $SUPS supervisors registered again" 10 members_back
d2=$(svc_dnat_count)
sups_stop 5 6
sups_start 5 6
await "sup-5, sup-6 back" 15 all_attached 5 6
[ "$(svc_dnat_count)" = "$d2" ] || fail "restarted agents did not steer: the DNAT took $(( $(svc_dnat_count) - d2 ))"
await "even at the end" 15 even3
echo "agents killed and restarted: loads $(loads 1 2 3)"
