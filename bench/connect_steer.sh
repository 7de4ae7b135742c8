#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/connect_steer.sh [BUILD_DIR [HELLOS [CONNECTS]]] - connect-time
# steering on the pod topology (tests/cluster/pods.sh: 1 node, CS_GATEWAYS
# gateway pods (default 4: with 2, half of the DNAT's arrivals land on the
# rule's gateway by chance and need no redirect), the node's agent, a
# supervisor pod with no supervisor in it).  From
# inside the supervisor pod's netns and cgroup (where the agent's cgroup
# connect4 program runs), in one run:
#  1. connect-to-ACCEPT of HELLOS fresh members (default 200), interleaved
#     (bench/accept_time.c --agent): steered (register with the agent, then
#     connect to the Service, which connect4 rewrites to the chosen gateway)
#     against kube-proxy's DNAT plus the in-protocol redirect (no
#     registration).  Median and p99 of each, the ratio of medians, and the
#     registration's own cost.  The Service's DNAT counter must move by
#     exactly HELLOS (every unregistered HELLO, no steered one).
#  2. ns per connect4 run with BPF_STATS_RUN_TIME (kt_tool connect_bench,
#     the program behind the agent's pinned link_below4_<pod cgroup id>, the
#     copy on the pod's cgroup, else link_connect4): CONNECTS
#     connects (default 20000) each to the Service unregistered, to the
#     Service registered (steered), and to gw-1's pod IP:7000 (another
#     address).
# Root only; prints a table at the end.
set -u
export RS_BUILD=${1:-build}
hellos=${2:-200}
connects=${3:-20000}
gateways=${CS_GATEWAYS:-4}
if [ "$(id -u)" != 0 ]; then
	echo "connect_steer: skipped (not root)"
	exit 0
fi
for b in "$RS_BUILD/bench/accept_time" "$RS_BUILD/kernel/kt_tool" "$RS_BUILD/ringsteer-agent"; do
	[ -x "$b" ] || { echo "connect_steer: $b missing (make BUILD=... all $RS_BUILD/kernel/kt_tool $RS_BUILD/bench/accept_time)"; exit 1; }
done
# shellcheck source=../tests/cluster/lib.sh
. "$(dirname "$0")/../tests/cluster/lib.sh"
# shellcheck source=../tests/cluster/pods.sh
. "$(dirname "$0")/../tests/cluster/pods.sh"

# It registers $hellos members from one pod, one after another, to time a
# registration plus its connect: the agent's burst per pod (16 by default,
# user/agent/reg_limit.h) is raised to cover them.
RS_PODS_AGENT_ARGS="${RS_PODS_AGENT_ARGS:-} --member-burst $((hellos + 16))"
export RS_AGENT=1
cluster_up --gateways 0
pods_up 1
for ((g = 1; g <= gateways; g++)); do gw_start "$g"; done
pod_up sup 1 # the pod only: the bench client is its one process
member_sock="$RS_SOCK/member-n1.sock"
src=$(sup_addr 1)
cs_out="$RS_DIR/connect_steer.out"

# 1. connect-to-ACCEPT, steered vs DNAT + redirect
dnat0=$(svc_dnat_count 1)
(sup_exec 1 "$RS_BUILD/bench/accept_time" --agent "$member_sock" "$RS_SERVICE" "$RS_SECRET" "$src" "$hellos") \
	>"$cs_out.1" || fail "accept_time --agent failed: $(cat "$cs_out.1")"
dnat_moved=$(($(svc_dnat_count 1) - dnat0))
[ "$dnat_moved" = "$hellos" ] ||
	fail "the Service's DNAT took $dnat_moved connects, want $hellos (only the unregistered HELLOs)"

# 2. ns per connect4 run
pins=("$RS_POD_PIN_ROOT"/*/link_connect4)
pin=${pins[0]}
[ -e "$pin" ] || fail "no link_connect4 pinned under $RS_POD_PIN_ROOT"
# The pod's cgroup is directly below the agent's --cgroup, so its own copy
# (link_below4_<its cgroup id>, user/agent/below.c) is the one that does the
# work; the --cgroup copy then only passes the connect on.
below="$(dirname "$pin")/link_below4_$(stat -c %i "$(pod_cgroup sup-1)")"
[ -e "$below" ] && pin=$below
(sup_exec 1 "$RS_BUILD/kernel/kt_tool" connect_bench "$pin" "$member_sock" "cs-stats-$$" "$RS_SERVICE" \
	"$(gw_addr 1):$RS_GW_LISTEN_PORT" "$connects") >"$cs_out.2" || fail "kt_tool connect_bench failed: $(cat "$cs_out.2")"

v() { awk -v k="$1" '$1 == k { print $2 }' "$cs_out".[12]; }
echo "connect_steer: 1 node, $gateways gateway pods, agent; client in pod sup-1 (netns + cgroup)"
printf '  %-44s %10s %10s\n' "connect-to-ACCEPT ($hellos HELLOs each)" "median us" "p99 us"
printf '  %-44s %10s %10s\n' "steered (registered first)" "$(v steered_median_us)" "$(v steered_p99_us)"
printf '  %-44s %10s %10s\n' "DNAT + redirect ($(v dnat_redirected) redirected)" "$(v dnat_median_us)" "$(v dnat_p99_us)"
printf '  %-44s %10s %10s\n' "  of which redirected (2 connects)" "$(v dnat_redirected_only_median_us)" "$(v dnat_redirected_only_p99_us)"
printf '  %-44s %10s %10s\n' "registration alone" "$(v register_median_us)" "$(v register_p99_us)"
printf '  %-44s %10s %10s\n' "registration + steered" "$(v steered_with_register_median_us)" "$(v steered_with_register_p99_us)"
printf '  %-44s %10s\n' "DNAT/steered (medians)" "$(v ratio_median_dnat_over_steered)"
printf '  %-44s %10s\n' "DNAT/(registration + steered) (medians)" "$(v ratio_median_dnat_over_steered_with_register)"
printf '  %-44s %10s\n' "steered HELLOs redirected (want 0)" "$(v steered_redirected)"
printf '  %-44s %10s\n' "Service DNAT counter moved (want $hellos)" "$dnat_moved"
printf '  %-44s %10s %10s\n' "connect4 program (BPF_STATS_RUN_TIME)" "ns/run" "runs"
printf '  %-44s %10s %10s\n' "to the Service, registered (rewritten)" "$(v connect4_ns_per_run_service_steered)" "$(v connect4_runs_service_steered)"
printf '  %-44s %10s %10s\n' "to the Service, unregistered (to DNAT)" "$(v connect4_ns_per_run_service_unregistered)" "$(v connect4_runs_service_unregistered)"
printf '  %-44s %10s %10s\n' "to another address ($(gw_addr 1):$RS_GW_LISTEN_PORT)" "$(v connect4_ns_per_run_other)" "$(v connect4_runs_other)"
