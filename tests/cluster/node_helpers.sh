# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/cluster/node_helpers.sh - what every multi-node topology (nodes.sh,
# pods.sh) names the same way: node K's namespace and address, the node a
# gateway or supervisor runs on (RS_GW_NODE[N] / RS_SUP_NODE[M] if the test
# set it, else round robin over RS_NODES), and running a command in a node.
# Sourced by those files; needs RS_NS and RS_NODES.

node_ns() { echo "$RS_NS-n$1"; }
node_addr() { echo "198.18.0.$1"; }
node_of_gw() { echo "${RS_GW_NODE[$1]:-$((($1 - 1) % (RS_NODES > 0 ? RS_NODES : 1) + 1))}"; }
node_of_sup() { echo "${RS_SUP_NODE[$1]:-$((($1 - 1) % (RS_NODES > 0 ? RS_NODES : 1) + 1))}"; }
node_of_id() { case $1 in gw-[0-9]*) node_of_gw "${1#gw-}" ;; esac; }
nodes_exec() {
	local k=$1
	shift
	nsenter --net="/run/netns/$(node_ns "$k")" "$@"
}
