# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/cluster/nodes.sh - the test cluster over several "nodes": network
# namespaces joined by a bridge, one node agent each, one store for all.
#
# Source it after lib.sh:
#
#   . tests/cluster/lib.sh
#   . tests/cluster/nodes.sh
#   cluster_up --gateways 0        the cluster's namespace, temp dir, store, secret
#                                  (no gateway before nodes_up: it has no node yet)
#   nodes_up K                     K node namespaces on a bridge, addresses, Service
#   nodes_agents_up                one ringsteer-agent per node (RS_AGENT=1); status 3
#                                  (and RS_AGENT=0: the DNAT Service everywhere)
#                                  when the kernel lacks sk_lookup
#   gw_start N / sup_start M ...   lib.sh as usual: gw-N runs on node_of_gw N,
#                                  sup-M on node_of_sup M
#
# Everything in lib.sh works unchanged (gw_stop/kill/restart, sup_*, sup_blip,
# where, loads, metric, all_attached, await/hold, cluster_down): this file
# redefines lib.sh's topology hooks (gw_ns, sup_ns, gw_addr, sup_addr,
# gw_node_args, rs_all_ns, rs_down_hook) and svc_update.
#
#   node_of_gw N / node_of_sup M   the node gw-N / sup-M runs on: RS_GW_NODE[N] /
#                                  RS_SUP_NODE[M] if the test set it (before
#                                  nodes_up), else ((N - 1) % K) + 1
#   node_of_id gw-N                the node of a gateway id (empty if not gw-N)
#   node_ns K                      node K's namespace
#   nodes_exec K CMD...            CMD inside node K (nsenter: /sys stays, bpffs too)
#   node_agent_metric K NAME [LABELMATCH]  value on node K's agent /metrics
#                                  (summed over matching lines; empty if none)
#   node_agent_log K               node K's agent's current log
#
# Topology (../shared/notes/test-network.md: own namespaces only, addresses
# from 198.18.0.0/15, nothing in the machine's namespace):
#
#   RS_NS          the cluster's namespace (lib.sh): holds the bridge rsbr and
#                  one veth end per node (nK); no address, no process
#   RS_NS-nK       node K, K = 1..RS_NODES; its veth end is eth0, on it:
#     198.18.0.K/16         the node's address (its agent's /metrics :9200)
#     198.18.K.N/16         gw-N's address, for each gw-N on node K, N <= RS_NODES_MAX_GW
#                           (listen :7000, peer :7001, metrics :9100)
#     198.18.(100+K).M/16   sup-M's source address, for each sup-M on node K,
#                           M <= RS_NODES_MAX_SUP (each looks like its own pod)
#     198.19.0.100/32 on lo the Service address: a connection to
#                           198.19.0.100:7000 is local to the node
#   One /16 on one bridge: every address reaches every other without routes.
#
# The Service on node K (svc_update, run by gw_start / gw_stop / gw_kill):
#   - RS_AGENT=1 and a gateway runs on node K: no DNAT; node K's agent
#     (--service 198.19.0.100:7000) steers by sk_lookup to a gateway socket
#     of node K, which accepts or redirects to another node's peer endpoint.
#   - otherwise (no agent, or node K has no gateway left): nftables DNAT on
#     the output hook, numgen random over every running gateway's listen
#     endpoint on every node, as kube-proxy makes it (lib.sh's rules).  A node
#     whose last gateway is gone keeps a Service that way; sk_lookup could
#     only hand its connections to a local socket, and with no DNAT they
#     would be refused.
#
# The agents: node K's runs in RS_NS-nK with --socket $RS_SOCK/agent-nK.sock,
# --metrics 198.18.0.K:9200, the cluster's --store and --ttl, its pins under
# /sys/fs/bpf/ringsteer/<inode of RS_NS-nK>/ (removed by cluster_down); its
# log is $RS_DIR/log/agent-nK.S.log.  Gateways started while it runs
# register with it (--agent, from gw_node_args).
#
# The store is lib.sh's RS_STORE, one URL for every node: SQLite in RS_DIR
# (one file on the shared filesystem), or with RS_PG_DIR a fresh database
# on that PostgreSQL server (UNIX socket, equally reachable from every
# namespace).  lib.sh's cluster_up makes that choice; if it did not (an
# older lib.sh), nodes_up does, and keeps SQLite with a log line when
# tests/pg/pg_server.sh is missing.
#
# Environment:
#   RS_NODES_MAX_GW     nodes_up makes the addresses of gw-1..gw-MAX (16)
#   RS_NODES_MAX_SUP    and of sup-1..sup-MAX (64), each on its node
#   RS_NODES_AGENT_ARGS extra flags for every agent (word-split), e.g.
#                       "--probe-missing sk_lookup" to test the fallback

RS_NODES=0          # nodes of this cluster (nodes_up K)
RS_NODES_MADE=0     # node namespaces made so far (what cluster_down removes)
RS_NODES_SEQ=""     # the RS_CLUSTER_SEQ they belong to
RS_NODES_MAX_GW=${RS_NODES_MAX_GW:-16}
RS_NODES_MAX_SUP=${RS_NODES_MAX_SUP:-64}
RS_NODES_AGENT_ARGS=${RS_NODES_AGENT_ARGS:-}
RS_NODES_BRIDGE=rsbr
RS_NODES_AGENT_PORT=9200
declare -A RS_GW_NODE=() RS_SUP_NODE=()
declare -A RS_NODE_AGENT_PID=() RS_NODE_AGENT_STARTS=() RS_NODE_PIN_DIR=()

# The Service: an address from 198.18.0.0/15, on every node's lo.
RS_SVC_ADDR=198.19.0.100
RS_SERVICE=$RS_SVC_ADDR:$RS_SVC_PORT

# shellcheck source=node_helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"

# lib.sh's topology hooks.
gw_ns() { node_ns "$(node_of_gw "$1")"; }
sup_ns() { node_ns "$(node_of_sup "$1")"; }
gw_addr() { echo "198.18.$(node_of_gw "$1").$1"; }
sup_addr() { echo "198.18.$((100 + $(node_of_sup "$1"))).$1"; }
gw_node_args() {
	local k
	k=$(node_of_gw "$1")
	if [ "${RS_AGENT:-0}" = 1 ] && [ -n "${RS_NODE_AGENT_PID[$k]:-}" ]; then
		echo "--agent $RS_SOCK/agent-n$k.sock"
	fi
}
rs_all_ns() {
	local k
	for ((k = 1; k <= RS_NODES_MADE; k++)); do node_ns "$k"; done
	[ -z "$RS_NS" ] || echo "$RS_NS"
}
rs_down_hook() {
	local k
	for k in "${!RS_NODE_AGENT_PID[@]}"; do node_agent_kill "$k"; done
	for k in "${!RS_NODE_PIN_DIR[@]}"; do
		[ -n "${RS_NODE_PIN_DIR[$k]}" ] && rm -rf "${RS_NODE_PIN_DIR[$k]}"
	done
	RS_NODE_PIN_DIR=()
}

# node_has_gw K: a gateway this test started runs on node K.
node_has_gw() {
	local n
	for n in "${!RS_GW_PID[@]}"; do
		[ -n "${RS_GW_PID[$n]}" ] && [ "$(node_of_gw "$n")" = "$1" ] && return 0
	done
	return 1
}

# svc_update [N...]: lib.sh's Service, per node (see the header): the DNAT
# over gateways N... (default every running gateway) on each node without
# a steering agent and a local gateway; no DNAT on the others.
svc_update() {
	local set=() n k ns
	if [ $# -gt 0 ]; then
		set=("$@")
	else
		for n in $(printf '%s\n' "${!RS_GW_PID[@]}" | sort -n); do
			[ -n "${RS_GW_PID[$n]}" ] && set+=("$n")
		done
	fi
	RS_SVC_SET=("${set[@]}")
	for ((k = 1; k <= RS_NODES_MADE; k++)); do
		ns=$(node_ns "$k")
		if [ "${RS_AGENT:-0}" = 1 ] && node_has_gw "$k"; then
			ip netns exec "$ns" nft delete table ip rs_svc 2>/dev/null
		else
			rs_svc_rules "${set[@]}" | ip netns exec "$ns" nft -f - ||
				fail "nft: could not load the Service on node $k"
		fi
	done
}

# nodes_store: PostgreSQL when RS_PG_DIR says so and lib.sh did not choose it.
nodes_store() {
	[ -n "${RS_PG_DIR:-}" ] || return 0
	case $RS_STORE in sqlite:*) ;; *) return 0 ;; esac
	local pgs="$RS_LIB_DIR/../pg/pg_server.sh" url
	if [ ! -f "$pgs" ]; then
		rs_log "RS_PG_DIR is set but tests/pg/pg_server.sh is missing: the store stays $RS_STORE"
		return 0
	fi
	url=$(bash "$pgs" newdb "$RS_PG_DIR" "rs_$$_${RS_CLUSTER_SEQ}_$RANDOM") ||
		fail "pg_server.sh newdb in $RS_PG_DIR failed"
	url=$(printf '%s\n' "$url" | tail -n 1)
	[ -n "$url" ] || fail "pg_server.sh newdb in $RS_PG_DIR printed no URL"
	RS_STORE=$url
}

# nodes_up K: the node namespaces, the bridge, the addresses, the Service.
nodes_up() {
	local want=$1 k ns n batch
	[ -n "$RS_NS" ] || fail "nodes_up: cluster_up first"
	[ "$RS_NODES_SEQ" != "$RS_CLUSTER_SEQ" ] || fail "nodes_up: nodes are up already"
	[ -z "$(printf '%s' "${RS_GW_PID[@]}")" ] || fail "nodes_up: gateways started before the nodes (cluster_up --gateways 0)"
	[[ $want =~ ^[1-9][0-9]?$ ]] && [ "$want" -le 99 ] || fail "nodes_up: 1 to 99 nodes, not '$want'"
	RS_NODES=$want RS_NODES_MADE=0 RS_NODES_SEQ=$RS_CLUSTER_SEQ
	RS_NODE_AGENT_PID=() RS_NODE_AGENT_STARTS=() RS_NODE_PIN_DIR=()
	nodes_store
	ip -n "$RS_NS" link add "$RS_NODES_BRIDGE" type bridge || fail "bridge in $RS_NS"
	ip -n "$RS_NS" link set "$RS_NODES_BRIDGE" up || fail "bridge up in $RS_NS"
	for ((k = 1; k <= want; k++)); do
		ns=$(node_ns "$k")
		ip netns add "$ns" || fail "ip netns add $ns"
		RS_NODES_MADE=$k # from now on cluster_down removes it
		ip -n "$RS_NS" link add "n$k" type veth peer name eth0 netns "$ns" || fail "veth for node $k"
		ip -n "$RS_NS" link set "n$k" master "$RS_NODES_BRIDGE" up || fail "veth n$k on the bridge"
		batch="link set lo up
link set eth0 up
addr add $(node_addr "$k")/16 dev eth0
addr add $RS_SVC_ADDR/32 dev lo
"
		for ((n = 1; n <= RS_NODES_MAX_GW; n++)); do
			[ "$(node_of_gw "$n")" = "$k" ] && batch+="addr add $(gw_addr "$n")/16 dev eth0
"
		done
		for ((n = 1; n <= RS_NODES_MAX_SUP; n++)); do
			[ "$(node_of_sup "$n")" = "$k" ] && batch+="addr add $(sup_addr "$n")/16 dev eth0
"
		done
		printf '%s' "$batch" | ip -n "$ns" -batch - || fail "addresses on node $k"
	done
	svc_update
	rs_log "nodes up: $want namespaces $RS_NS-n1..$want on $RS_NODES_BRIDGE in $RS_NS; Service $RS_SERVICE; store $RS_STORE"
}

# --- one agent per node ------------------------------------------------------

node_agent_log() { echo "$RS_DIR/log/agent-n$1.${RS_NODE_AGENT_STARTS[$1]:-1}.log"; }
node_agent_alive() { [ -n "${RS_NODE_AGENT_PID[$1]:-}" ] && ! rs_gone "${RS_NODE_AGENT_PID[$1]}"; }
# The agent said ready, or is gone (exit 3 without sk_lookup).
node_agent_settled() { log_has "$(node_agent_log "$1")" 'event=ready' || ! node_agent_alive "$1"; }

# node_agent_start K [ARGS...]: node K's agent; status 3 if it found no
# sk_lookup (or no privileges) and exited, as the agent does.
node_agent_start() {
	local k=$1 ns
	shift
	[ -z "${RS_NODE_AGENT_PID[$k]:-}" ] || fail "node_agent_start $k: already running"
	ns=$(node_ns "$k")
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || fail "cannot mount bpffs"
	RS_NODE_AGENT_STARTS[$k]=$((${RS_NODE_AGENT_STARTS[$k]:-0} + 1))
	RS_NODE_PIN_DIR[$k]="/sys/fs/bpf/ringsteer/$(stat -L -c %i "/run/netns/$ns")"
	# shellcheck disable=SC2086
	nsenter --net="/run/netns/$ns" "$RS_BUILD/ringsteer-agent" --service "$RS_SERVICE" \
		--store "$RS_STORE" --ttl "$RS_TTL_MS" --sync-interval 100 \
		--metrics "$(node_addr "$k"):$RS_NODES_AGENT_PORT" --no-connect --socket "$RS_SOCK/agent-n$k.sock" \
		$RS_NODES_AGENT_ARGS "$@" 2>"$(node_agent_log "$k")" &
	RS_NODE_AGENT_PID[$k]=$!
	disown "$!"
	await "node $k's agent ready (or exited)" 10 node_agent_settled "$k"
	log_has "$(node_agent_log "$k")" 'event=ready' && return 0
	RS_NODE_AGENT_PID[$k]=""
	log_has "$(node_agent_log "$k")" 'event=no_steering' && return 3
	fail "node $k's agent exited: $(tail -n 3 "$(node_agent_log "$k")")"
}

node_agent_kill() {
	local k=$1 pid=${RS_NODE_AGENT_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null
	await "node $k's agent gone" 10 rs_gone "$pid"
	RS_NODE_AGENT_PID[$k]=""
}

# nodes_agents_up [ARGS...]: an agent on every node, then RS_AGENT=1 (the
# Service is the agents' on nodes with a gateway).  Status 3, RS_AGENT=0 and
# the DNAT Service on every node when the kernel has no sk_lookup.
nodes_agents_up() {
	local k rc
	for ((k = 1; k <= RS_NODES; k++)); do
		rc=0
		node_agent_start "$k" "$@" || rc=$?
		if [ "$rc" -eq 3 ]; then
			rs_log "node $k's agent: $(grep -m1 'event=no_steering' "$(node_agent_log "$k")")"
			local j
			for ((j = 1; j <= RS_NODES; j++)); do node_agent_kill "$j"; done
			RS_AGENT=0
			svc_update
			return 3
		fi
	done
	RS_AGENT=1
	export RS_AGENT
	svc_update
}

node_agent_metric() { # K NAME [LABELMATCH]
	nodes_exec "$1" curl -fsS --max-time 2 "http://$(node_addr "$1"):$RS_NODES_AGENT_PORT/metrics" |
		awk -v n="$2" -v l="${3:-}" '$1 ~ "^"n"({|$)" && index($1, l) { s += $2; seen = 1 }
			END { if (seen) printf "%d\n", s }'
}
