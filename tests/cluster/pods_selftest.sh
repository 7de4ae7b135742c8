#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cluster/pods_selftest.sh - the pod topology (tests/cluster/pods.sh)
# with ringsteer's gateways and supervisors, no agent (RS_AGENT=0):
#
# 1. one node, gateway pods gw-1 gw-2, supervisor pods sup-1 sup-2: both
#    attach through the Service and end 1/1 (the in-protocol redirect
#    balances them); the Service's DNAT counted exactly their two dials (a
#    redirect goes to a peer endpoint, not through the Service); each pod
#    has its own network namespace, address and cgroup directory, and its
#    daemon is the one process in that cgroup.
# 2. two nodes, both gateways on node 1, sup-1..4 round robin: a pod's dial
#    to the Service before any gateway is refused at once (no endpoints);
#    the four attach, 2/2.  sup-2 (node 2) reaches its gateway on node 1
#    both ways: through node 2's DNAT (the Service over that gateway only:
#    node 2's counter +1, node 1's unchanged, the gateway sees sup-2's pod
#    address on :7000) and by a redirect (the Service over the other
#    gateway only, which redirects it to the peer endpoint on node 1: the
#    gateway sees sup-2's pod address on :7001).
# After each, cluster_down leaves no namespace, cgroup directory, pin
# directory, process or temp dir.  Exit 77 (skipped) without root or ip netns.
# usage: tests/cluster/pods_selftest.sh   (binaries in RS_BUILD, default build)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=pods.sh
. "$here/pods.sh"
export RS_AGENT=0
t0=$(rs_now_ms)

loads_are() { [ "$(loads "${@:2}")" = "$1" ]; }
# conn_from N PORT M: gw-N's pod has an established connection on PORT from sup-M's pod address.
conn_from() {
	[ -n "$(ip netns exec "$(gw_ns "$1")" ss -Htn state established "( sport = :$2 and dst $(sup_addr "$3") )")" ]
}
# refused M: a connection from sup-M's pod to the Service is refused within 1 s.
refused() {
	local rc=0
	nsenter --net="/run/netns/$(sup_ns "$1")" curl -sS --max-time 1 "http://$RS_SERVICE/" >/dev/null 2>&1 || rc=$?
	[ "$rc" = 7 ]
}
ino() { stat -L -c %i "$1"; }
# down_clean: cluster_down, then nothing of the cluster is left.
down_clean() {
	local ns=$RS_NS cg=$RS_POD_CGROUP pins=$RS_POD_PIN_ROOT dir=$RS_DIR pids=("${RS_GW_PID[@]}" "${RS_SUP_PID[@]}") p
	cluster_down || fail "cluster_down failed"
	left=$(ip netns list | awk -v p="$ns" '$1 == p || index($1, p "-") == 1 { print $1 }')
	[ -z "$left" ] || fail "namespaces left behind: $left"
	[ ! -e "$cg" ] || fail "cgroup directory left behind: $cg"
	[ ! -e "$pins" ] || fail "pin directory left behind: $pins"
	[ ! -e "$dir" ] || fail "temp dir left behind: $dir"
	for p in "${pids[@]}"; do rs_gone "$p" || fail "process $p left behind"; done
	echo "cleanup: no namespace ($ns*), cgroup directory, pins, process or temp dir left"
}

# --- 1. one node -------------------------------------------------------------
cluster_up --gateways 0
pods_up 1
gw_start 1
gw_start 2
d0=$(svc_dnat_count)
sups_start 1 2
await "sup-1 and sup-2 attached" 10 all_attached 1 2
await "loads 1/1" 5 loads_are "1 1" 1 2
d1=$(svc_dnat_count)
[ "$d1" -eq $((d0 + 2)) ] || fail "1: the Service's DNAT counted $((d1 - d0)) connections, want 2 (one dial each)"
echo "1: loads gw-1/gw-2 = $(loads 1 2); DNAT counted $d0 -> $d1;" \
	"attached via: $(for m in 1 2; do printf 'sup-%s=%s ' "$m" "$(sup_last "$m" via)"; done)"

cg2=$(findmnt -n -o TARGET -t cgroup2 | head -n 1)
for pod in sup-1 sup-2 gw-1; do
	case $pod in sup-*) pid=${RS_SUP_PID[${pod#sup-}]} ;; *) pid=${RS_GW_PID[${pod#gw-}]} ;; esac
	[ "$(ino "/proc/$pid/ns/net")" = "$(ino "/run/netns/$(pod_ns "$pod")")" ] ||
		fail "1: $pod (pid $pid) is not in its pod's namespace $(pod_ns "$pod")"
	want="0::${RS_POD_CGROUP#"$cg2"}/n1/pod-$pod"
	[ "$(grep '^0::' "/proc/$pid/cgroup")" = "$want" ] || fail "1: $pod's cgroup is $(grep '^0::' "/proc/$pid/cgroup"), want $want"
	[ "$(cat "$(pod_cgroup "$pod")/cgroup.procs")" = "$pid" ] || fail "1: $pod's cgroup holds $(cat "$(pod_cgroup "$pod")/cgroup.procs" | tr '\n' ' '), want $pid only"
done
for other in "/run/netns/$(sup_ns 2)" "/run/netns/$(gw_ns 1)" "/run/netns/$(node_ns 1)" /proc/self/ns/net; do
	[ "$(ino "/proc/${RS_SUP_PID[1]}/ns/net")" != "$(ino "$other")" ] || fail "1: sup-1 shares its namespace with $other"
done
ip -n "$(sup_ns 1)" -4 -o addr show dev eth0 | grep -q " $(sup_addr 1)/32 " || fail "1: sup-1's pod does not hold $(sup_addr 1)/32"
echo "1: isolation: sup-1 alone in $(sup_ns 1) ($(sup_addr 1)/32) and $(pod_cgroup sup-1); sup-2, gw-1, node 1, this shell: other namespaces"
down_clean

# --- 2. two nodes, both gateways on node 1 ------------------------------------
# shellcheck disable=SC2034 # read by pods.sh (node_of_gw)
RS_GW_NODE=([1]=1 [2]=1)
cluster_up --gateways 0
pods_up 2
pod_up sup 2
await "2: sup-2's pod refused at once by the Service without endpoints" 5 refused 2
gw_start 1
gw_start 2
sups_start 1 2 3 4
await "2: sup-1..4 attached" 10 all_attached 1 2 3 4
await "2: loads 2/2" 5 loads_are "2 2" 1 2
[ "$(node_of_sup 2)" = 2 ] && [ "$(node_of_gw 1)$(node_of_gw 2)" = 11 ] || fail "2: placement of the pods"
a=$(where 2) && a=${a#gw-} || fail "2: sup-2 attached nowhere"
b=$((3 - a))

# Through the DNAT: the Service over gw-a only.
svc_update "$a"
c1=$(svc_dnat_count 1) c2=$(svc_dnat_count 2)
sup_restart 2
await "2: sup-2 attached again" 10 all_attached 2
[ "$(sup_last 2 via) $(sup_last 2 gateway)" = "service gw-$a" ] ||
	fail "2: sup-2 attached $(sup_last 2 gateway) via $(sup_last 2 via), want gw-$a via service"
[ "$(svc_dnat_count 2) $(svc_dnat_count 1)" = "$((c2 + 1)) $c1" ] ||
	fail "2: DNAT counters node 2/1: $c2/$c1 -> $(svc_dnat_count 2)/$(svc_dnat_count 1), want +1/+0"
await "2: gw-$a sees sup-2's pod address on :7000" 5 conn_from "$a" 7000 2
echo "2: sup-2 (node 2, $(sup_addr 2)) -> Service -> node 2's DNAT -> gw-$a (node 1, $(gw_addr "$a")):7000"

# By a redirect: the Service over gw-b only, which sends sup-2 back to gw-a.
svc_update "$b"
c2=$(svc_dnat_count 2)
sup_restart 2
await "2: sup-2 attached again" 10 all_attached 2
[ "$(sup_last 2 via) $(sup_last 2 gateway)" = "redirect gw-$a" ] ||
	fail "2: sup-2 attached $(sup_last 2 gateway) via $(sup_last 2 via), want gw-$a via redirect"
log_has "$(sup_log 2)" "event=redirected target=gw-$a peer=$(gw_addr "$a"):$RS_GW_PEER_PORT " ||
	fail "2: sup-2 was not redirected to gw-$a's peer endpoint $(gw_addr "$a"):$RS_GW_PEER_PORT"
[ "$(svc_dnat_count 2)" = $((c2 + 1)) ] || fail "2: node 2's DNAT counted $(($(svc_dnat_count 2) - c2)) dials, want 1 (the redirect goes around it)"
await "2: gw-$a sees sup-2's pod address on :$RS_GW_PEER_PORT" 5 conn_from "$a" "$RS_GW_PEER_PORT" 2
echo "2: sup-2 -> Service -> gw-$b -> redirect -> gw-$a's peer endpoint $(gw_addr "$a"):$RS_GW_PEER_PORT (node 1)"
svc_update
[ "$(loads 1 2)" = "2 2" ] || fail "2: loads gw-1/gw-2 = $(loads 1 2), want 2 2"
down_clean

echo "pods selftest: ok ($(($(rs_now_ms) - t0)) ms)"
