#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/compare/datapath_pods.sh OUT - ringsteer-kernel's data path, measured
# on its own path: the Kubernetes-shaped topology (tests/cluster/pods.sh), where
# the node agent's cgroup connect4 program rewrites a connect() to the Service
# into the chosen gateway pod's endpoint.  Part of `make compare`
# (bench/compare/datapath.sh runs it); writes OUT/datapath_pods.tsv
# (contender, measure, value):
#   pods-direct       sup pod -> gateway pod IP (veth, node routing, conntrack)
#   pods-service      sup pod -> ClusterIP (kube-proxy-shaped DNAT on the node)
#   ringsteer-kernel  sup pod -> ClusterIP, as a registered member: the agent's
#                     connect4 rewrites the destination before any packet
#                     exists (bench/steer_exec runs iperf3 and sockperf inside
#                     a member registration: the agent keys it on the pod's
#                     netns, so their connects are the member's)
# Measures: throughput_gbps (iperf3, receiver side), rtt_p50_us, rtt_avg_us,
# rtt_samples (sockperf ping-pong, full round trip), service_dnat_connects (how
# many connections the Service's DNAT rewrote during that contender's runs:
# the proof that ringsteer-kernel's never met kube-proxy's rule).
#
# The servers run in gw-1's pod on PORT 5201 (iperf3, then sockperf); the
# Service gets that port too (its own nft table, DNAT to gw-1's pod, a
# counter); gw-1 advertises pod-IP:5201 as its peer endpoint (--advertise-peer),
# so the agent's target for the member is that port, and the agent also steers
# ClusterIP:5201 (--service).  One gateway: the rule has one choice.
# QUICK=1: 256 MiB through iperf3, about 300 sockperf round trips.  Root only.
set -u
out=${1:?usage: datapath_pods.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
export RS_BUILD=${RS_BUILD:-$here/../../build}
if [ "${QUICK:-0}" = 1 ]; then
	iperf_s=1 iperf_len=(-n 256M) sp_args=(-t 1 --mps 600)
else
	iperf_s=10 iperf_len=(-t 10) sp_args=(-t 10 --mps max)
fi
for b in "$RS_BUILD/bench/steer_exec" "$RS_BUILD/ringsteer-agent"; do
	[ -x "$b" ] || { echo "datapath_pods: $b missing (make all $RS_BUILD/bench/steer_exec)" >&2; exit 1; }
done
# shellcheck source=../../tests/cluster/lib.sh
. "$here/../../tests/cluster/lib.sh"
# shellcheck source=../../tests/cluster/pods.sh
. "$here/../../tests/cluster/pods.sh"

PORT=5201
tsv="$out/datapath_pods.tsv"
: >"$tsv"
put() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$tsv"; }

export RS_AGENT=1
# shellcheck disable=SC2034 # (tests/cluster/pods.sh and lib.sh read these)
RS_PODS_AGENT_ARGS="--service $RS_SVC_ADDR:$PORT"
cluster_up --gateways 0
pods_up 1
gw_ip=$(gw_addr 1)
# shellcheck disable=SC2034
RS_GW_ARGS="--advertise-peer $gw_ip:$PORT"
gw_start 1
pod_up sup 1 # the pod only: the clients below are its processes
src=$(sup_addr 1)
member_sock="$RS_SOCK/member-n1.sock"
# (the servers start as `ip netns exec ... &`, not through a function, so
# that $! is the server itself)
listening() { ip netns exec "$(pod_ns gw-1)" ss -ltnH "sport = :$PORT" | grep -q .; }

nodes_exec 1 nft -f - <<EOF || fail "nft: the data port's Service"
table ip rs_cmpd {
	counter data_dnat {}
	chain pre { type nat hook prerouting priority dstnat - 1; policy accept;
		ip daddr $RS_SVC_ADDR tcp dport $PORT counter name "data_dnat" dnat to $gw_ip:$PORT; }
}
EOF
dnat_count() { nodes_exec 1 nft list counter ip rs_cmpd data_dnat | awk '$1 == "packets" { print $2 }'; }

# Steering is on once the agent's sync has seen gw-1 serving: a registered
# member's connect to the ClusterIP then never meets the DNAT (probed before
# any server listens: refused either way, only the counter tells).
steered_probe() {
	local d0
	d0=$(dnat_count)
	(sup_exec 1 "$RS_BUILD/bench/steer_exec" "$member_sock" dp-probe \
		bash -c "exec 3<>/dev/tcp/$RS_SVC_ADDR/$PORT" 2>/dev/null)
	[ "$(dnat_count)" = "$d0" ]
}
await "the agent steers a member's connect (gw-1 serving)" 15 steered_probe

# client CONTENDER CMD...: CMD in sup-1's pod (its netns and cgroup); for
# ringsteer-kernel inside a member registration.
client() {
	local c=$1
	shift
	if [ "$c" = ringsteer-kernel ]; then
		(sup_exec 1 "$RS_BUILD/bench/steer_exec" "$member_sock" dp-member "$@")
	else
		(sup_exec 1 "$@")
	fi
}
declare -A DST=([pods-direct]=$gw_ip [pods-service]=$RS_SVC_ADDR [ringsteer-kernel]=$RS_SVC_ADDR)
declare -A DNAT=()
CONTENDERS="pods-direct pods-service ringsteer-kernel"

# sockperf first: its server binds without SO_REUSEADDR, iperf3 with it, so
# only this order survives the first server's TIME_WAIT sockets on the port.
ip netns exec "$(pod_ns gw-1)" sockperf sr --tcp -i "$gw_ip" -p "$PORT" >"$out/sockperf-pods.server.out" 2>&1 &
srv=$!
disown "$srv"
await "sockperf in gw-1's pod" 10 listening
for c in $CONTENDERS; do
	rs_log "datapath_pods: $c sockperf"
	f="$out/sockperf-pods.$c.out"
	d0=$(dnat_count)
	client "$c" timeout 60 sockperf pp --tcp -i "${DST[$c]}" -p "$PORT" --client_ip "$src" "${sp_args[@]}" \
		--full-rtt >"$f" 2>&1 || fail "sockperf, $c: $(tail -n 3 "$f")"
	DNAT[$c]=$(($(dnat_count) - d0))
	put "$c" rtt_p50_us "$(awk '/percentile 50.000/ { print $NF }' "$f")"
	put "$c" rtt_avg_us "$(sed -n 's/.*avg-rtt=\([0-9.]*\).*/\1/p' "$f")"
	put "$c" rtt_samples "$(sed -n 's/.*Total \([0-9]*\) observations.*/\1/p' "$f")"
done
kill "$srv" 2>/dev/null
await "sockperf gone" 10 rs_gone "$srv"
ip netns exec "$(pod_ns gw-1)" iperf3 -s -B "$gw_ip" -p "$PORT" >"$out/iperf3-pods.server.out" 2>&1 &
srv=$!
disown "$srv"
await "iperf3 in gw-1's pod" 10 listening
for c in $CONTENDERS; do
	rs_log "datapath_pods: $c iperf3"
	d0=$(dnat_count)
	bps=$(client "$c" timeout $((iperf_s + 20)) iperf3 -c "${DST[$c]}" -p "$PORT" -B "$src" "${iperf_len[@]}" \
		--connect-timeout 3000 -J | jq -e '.end.sum_received.bits_per_second') || fail "iperf3, $c"
	DNAT[$c]=$((DNAT[$c] + $(dnat_count) - d0))
	put "$c" throughput_gbps "$(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 1e9 }')"
done
kill "$srv" 2>/dev/null
for c in $CONTENDERS; do put "$c" service_dnat_connects "${DNAT[$c]}"; done

# The figures mean what they say only if the Service's rule took the
# unregistered connects and none of the steered ones.
[ "${DNAT[pods-direct]}" = 0 ] || fail "pods-direct: the Service's DNAT took ${DNAT[pods-direct]} connects"
[ "${DNAT[pods-service]}" -ge 2 ] || fail "pods-service: the Service's DNAT took ${DNAT[pods-service]} connects, want 2 or more"
[ "${DNAT[ringsteer-kernel]}" = 0 ] ||
	fail "ringsteer-kernel: the Service's DNAT took ${DNAT[ringsteer-kernel]} connects (not steered)"
steered=$(node_agent_metric 1 ringsteer_agent_connects_total steered_netns)
rs_log "datapath_pods: agent's steered connects ${steered:-?}; wrote $tsv"
cluster_down
