#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 5: gauges.  Supervisors with 3 and 5 sandboxes on one gateway
# give ringsteer_gateway_supervisors 2 and
# ringsteer_gateway_busiest_supervisor_sandboxes 5; both follow a changed
# count (5 -> 1: busiest 3; 3 -> 8: busiest 8) and a departure (sup-1 stops:
# 1 and 1; sup-2 killed: 0 and 0).  Each value is awaited on /metrics.
. "$(dirname "$0")/../cluster/lib.sh"

sv=ringsteer_gateway_supervisors
busy=ringsteer_gateway_busiest_supervisor_sandboxes
lab='gateway="gw-1"'
gauges() { metric_is 1 "$sv" "$1" "$lab" && metric_is 1 "$busy" "$2" "$lab"; }
show() { echo "$1: supervisors=$(metric 1 "$sv" "$lab") busiest=$(metric 1 "$busy" "$lab")"; }

cluster_up --gateways 1
sup_start 1 3
sup_start 2 5
await "both attached" 15 all_attached 1 2
await "gauges 2 and 5" 5 gauges 2 5
show "3 and 5 sandboxes"
sup_set_sandboxes 2 1
await "gauges 2 and 3 after sup-2 goes 5 -> 1" 5 gauges 2 3
show "3 and 1"
sup_set_sandboxes 1 8
await "gauges 2 and 8 after sup-1 goes 3 -> 8" 5 gauges 2 8
show "8 and 1"
sup_stop 1
await "gauges 1 and 1 after sup-1 stops" 5 gauges 1 1
show "sup-1 stopped"
sup_kill 2
await "gauges 0 and 0 after sup-2 is killed" 5 gauges 0 0
show "sup-2 killed"
echo "t_5: gauges followed counts and departures"
