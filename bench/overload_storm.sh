#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# overload_storm.sh [BUILD_DIR [N [DEADLINE_MS]]] - goodput under overload
# (issue 27): one ringsteer-swarm of N members (10000) dials two gateways at
# once, 4096 dials in flight, each member giving up on its answer after
# DEADLINE_MS (300: tight, so that a local store is the bottleneck), the
# gateways given the same --admit-deadline when they have the flag.  With
# RS_PG_DIR (tests/pg/pg_server.sh) the store is PostgreSQL.  Prints one
# line: how long until all were attached, the swarm's timeouts and REJECTs,
# and the gateways' admissions decided, shed, timed out in the queue and
# expired (their member gone first).  Root only (tests/cluster/lib.sh).
#
# Run with a build of the parent commit for the before figure.  On 2 shared
# cores, PostgreSQL, N=10000, 300 ms: all attached in 20.2-20.3 s before,
# 11.4-19.6 s after; swarm timeouts 23,034-29,443 before, 10,475-14,000
# after; admissions decided 23,399-23,944 before, 18,928-19,692 after.
# With 2000 ms (the default) the store keeps up: 6.2 s before, 5.4 s
# after, nothing shed.  Figures vary with the machine's load.
set -u
export RS_BUILD=${1:-build}
N=${2:-10000}
DL=${3:-300}
export RS_CLOCKS=slow
. "$(dirname "$0")/../tests/cluster/lib.sh"

BIND=198.18.200.0/24
SWARM_METRICS=127.0.0.60:9300
swarm_metric() { rs_ns curl -fsS --max-time 2 "http://$SWARM_METRICS/metrics" | metric_of "$@"; }
swarm_metric_is() { [ "$(swarm_metric "$1" "${3:-}")" = "$2" ]; }
gw_sum() { # METRIC: summed over both gateways
	local n s=0 v
	for n in 1 2; do
		v=$(metric_of "$1" <<<"$(rs_ns curl -fsS --max-time 2 "http://$(gw_addr "$n"):$RS_GW_METRICS_PORT/metrics")")
		s=$((s + ${v:-0}))
	done
	echo "$s"
}

deadline_flag=""
"$RS_BUILD/ringsteer-gateway" --help 2>&1 | grep -q -- --admit-deadline && deadline_flag="--admit-deadline $DL"
RS_GW_ARGS="${RS_GW_ARGS:-} $deadline_flag --max-unauth 8192 --max-unauth-per-source 256"
cluster_up --gateways 2
ip -n "$RS_NS" route add local "$BIND" dev lo || fail "ip route add local $BIND dev lo"
swarm_log="$RS_DIR/log/swarm.log"
# shellcheck disable=SC2046
ip netns exec "$RS_NS" "$RS_BUILD/ringsteer-swarm" --service "$RS_SERVICE" --secret "$RS_SECRET" \
	--count "$N" --prefix sw- --bind "$BIND" --metrics "$SWARM_METRICS" --concurrency 4096 \
	--dial-timeout "$DL" $(rs_sup_transport_args 0) >"$swarm_log" 2>&1 &
swarm_pid=$!
await "the swarm reports $N attached" 300 swarm_metric_is ringsteer_swarm_attached "$N"
echo "overload_storm: N=$N deadline=${DL}ms $(grep -o 'all_attached_ms=[0-9]*' "$swarm_log" | head -n 1)" \
	"timeouts=$(swarm_metric ringsteer_swarm_failures_total 'reason="timeout"')" \
	"rejected=$(swarm_metric ringsteer_swarm_failures_total 'reason="rejected"')" \
	"admissions=$(gw_sum ringsteer_gateway_store_admissions_total)" \
	"shed=$(gw_sum ringsteer_gateway_arrivals_shed_total)" \
	"timed_out=$(gw_sum ringsteer_gateway_arrivals_timed_out_total)" \
	"expired=$(gw_sum ringsteer_gateway_arrivals_expired_total)"
kill -TERM "$swarm_pid"
await "the swarm exits after SIGTERM" 10 rs_gone "$swarm_pid"
