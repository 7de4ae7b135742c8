# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/kernel/pod_net.sh - a routed pod for the connect-time tests, sourced
# after lib.sh: its own netns, a veth into the node's (KT_NS) with a /32 and
# a default route via the node's 198.18.0.1, as a CNI wires a pod.  The
# caller's EXIT trap runs pod_net_down (before kt_down).
#   pod_net_up NAME ADDR DIR   netns KT_NS-NAME, address ADDR, cgroup DIR made
#   pod_net_down               deletes every pod netns made here
POD_NETS=()
pod_net_up() {
	local ns="$KT_NS-$1"
	ip netns add "$ns" || fail "netns $ns"
	POD_NETS+=("$ns")
	ip -n "$ns" link set lo up
	ip link add "v$1-$$" type veth peer name eth0 netns "$ns" || fail "veth for $1"
	ip link set "v$1-$$" netns "$KT_NS"
	ip -n "$KT_NS" link set "v$1-$$" up
	ip -n "$KT_NS" route add "$2/32" dev "v$1-$$"
	ip -n "$ns" addr add "$2/32" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add 198.18.0.1 dev eth0
	ip -n "$ns" route add default via 198.18.0.1 dev eth0
	mkdir -p "$3"
}
pod_net_down() { local ns; for ns in "${POD_NETS[@]}"; do ip netns del "$ns" 2>/dev/null; done; }
