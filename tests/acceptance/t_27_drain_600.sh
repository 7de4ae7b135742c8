#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 27: a drain that fits its budget.  600 supervisors (one
# ringsteer-swarm) attach to gw-1 alone; gw-2 and gw-3 join (nobody moves:
# there is no rebalancer); then gw-1 gets SIGTERM with a 5 s drain budget.
# The pace adapts (at 50 ms a handoff, the old fixed pace, 5 s would take
# 100 of them and abandon 500): all 600 are handed off make-before-break
# and gw-1 exits within the budget, with none abandoned and none timed out,
# and the two others end at 300/300 exactly (the handoff rule, cap
# ceil(600 / 2)), the swarm never seeing a member without a session: its
# ringsteer_swarm_gap_max_seconds (the longest time a member went from
# losing its attached link to its next ACCEPT) stays 0, no gap counted,
# and its SIGTERM summary says gap_max_ms=0.000.
RS_CLOCKS=slow
. "$(dirname "$0")/../cluster/lib.sh"

N=600
BUDGET_MS=5000
BIND=198.18.201.0/24
SWARM_METRICS=127.0.0.61:9300

swarm_metric() { # NAME [LABELMATCH]
	rs_ns curl -fsS --max-time 2 "http://$SWARM_METRICS/metrics" | metric_of "$@"
}
swarm_metric_is() { [ "$(swarm_metric "$1" "${3:-}")" = "$2" ]; }
gauges_are() { metric_is 2 ringsteer_gateway_supervisors "$1" && metric_is 3 ringsteer_gateway_supervisors "$2"; }

cluster_up
gw_start 1 --drain-budget "$BUDGET_MS" --max-unauth 1024
ip -n "$RS_NS" route add local "$BIND" dev lo || fail "ip route add local $BIND dev lo"
swarm_log="$RS_DIR/log/swarm.log"
# shellcheck disable=SC2046
ip netns exec "$RS_NS" "$RS_BUILD/ringsteer-swarm" --service "$RS_SERVICE" --secret "$RS_SECRET" \
	--count "$N" --prefix dr- --bind "$BIND" --metrics "$SWARM_METRICS" $(rs_sup_transport_args 0) \
	>"$swarm_log" 2>&1 &
swarm_pid=$!
await "the swarm reports $N attached to gw-1" 90 swarm_metric_is ringsteer_swarm_attached "$N"
await "gw-1 holds all $N" 10 metric_is 1 ringsteer_gateway_supervisors "$N"
gw_start 2 --max-unauth 1024
gw_start 3 --max-unauth 1024
hold "nobody moves when gateways join" 1 metric_is 1 ringsteer_gateway_supervisors "$N"
failures0=$(swarm_metric ringsteer_swarm_failures_total)

start=$(rs_now_ms)
gw_pid=${RS_GW_PID[1]}
kill -TERM "$gw_pid"
RS_GW_PID[1]=""
svc_update
await "gw-1 exits after its drain" $(((BUDGET_MS + 5000) / 1000)) rs_gone "$gw_pid"
took=$(($(rs_now_ms) - start))
glog=$(gw_log 1)
handed=$(grep 'event=drained ' "$glog" | logfield handed_off)
abandoned=$(log_count "$glog" 'event=handoff_abandoned')
timed_out=$(log_count "$glog" 'event=handoff_timeout')
echo "t_27: gw-1 drained $N in ${took} ms (budget $BUDGET_MS): handed off ${handed:-?}, abandoned $abandoned, timed out $timed_out"
[ "$abandoned" = 0 ] || fail "$abandoned supervisors abandoned"
[ "$timed_out" = 0 ] || fail "$timed_out handoffs timed out"
[ "$handed" = "$N" ] || fail "handed off ${handed:-none}, not $N"
[ "$took" -le $((BUDGET_MS + 1000)) ] || fail "the drain took $took ms, past its $BUDGET_MS ms budget"
await "gw-2 and gw-3 at $((N / 2)) each" 10 gauges_are $((N / 2)) $((N / 2))
await "the swarm counts $N attached" 10 swarm_metric_is ringsteer_swarm_attached "$N"
failures1=$(swarm_metric ringsteer_swarm_failures_total)
[ "$failures1" = "$failures0" ] || fail "the swarm counted $((failures1 - failures0)) failures during the drain"
gap=$(swarm_metric ringsteer_swarm_gap_max_seconds)
gaps=$(swarm_metric ringsteer_swarm_gaps_total)
[ "$gap" = 0 ] || fail "a member went ${gap}s without a session (ringsteer_swarm_gap_max_seconds; $gaps gaps)"
[ "$gaps" = 0 ] || fail "ringsteer_swarm_gaps_total is $gaps after a make-before-break drain"
kill -TERM "$swarm_pid"
await "the swarm exits after SIGTERM" 10 rs_gone "$swarm_pid"
log_has "$swarm_log" 'event=stopping .* gap_max_ms=0\.000 gaps=0( |$)' ||
	fail "the swarm's summary: $(grep 'event=stopping' "$swarm_log")"
echo "t_27: 300/300 on gw-2 and gw-3, no failure and no gap seen by the swarm"
