# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/cluster/pods.sh - the test cluster shaped like Kubernetes: node
# namespaces on a bridge, a network namespace and a cgroup per pod (each
# gateway and each supervisor is a pod), kube-proxy's nftables Service on
# every node, optionally a node agent per node.
#
# Source it after lib.sh:
#
#   . tests/cluster/lib.sh
#   . tests/cluster/pods.sh
#   cluster_up --gateways 0        the cluster's namespace, temp dir, store, secret
#                                  (no gateway before pods_up: it has no node yet)
#   pods_up K                      K node namespaces (1 to 9) on a bridge, the pod
#                                  cgroup directory, the Service; with RS_AGENT=1
#                                  an agent on every node (node_agent_start)
#   gw_start N / sup_start M ...   lib.sh as usual: the first start of gw-N / sup-M
#                                  makes its pod (pod_up) on node_of_gw N /
#                                  node_of_sup M; a restart reuses it
#
# Everything in lib.sh works unchanged (gw_stop/kill/restart, sup_*, sup_blip,
# where, loads, metric, all_attached, await/hold, cluster_down): this file
# redefines lib.sh's topology hooks (gw_ns, sup_ns, gw_addr, sup_addr,
# sup_node_args, gw_exec, sup_exec, sup_prepare, sups_blip_all, rs_all_ns,
# rs_down_hook), svc_update and
# rs_ns (node 1, hostNetwork: raw_send and gw_loop_ms reach every pod and the
# Service from there), and wraps gw_start and sup_start (pod_up first).
# gw_node_args stays lib.sh's (nothing): gateway pods get no --agent.
#
#   node_of_gw N / node_of_sup M   the node gw-N / sup-M runs on: RS_GW_NODE[N] /
#                                  RS_SUP_NODE[M] if the test set it (before the
#                                  pod's first start), else ((N - 1) % K) + 1
#   node_of_id gw-N                the node of a gateway id (empty if not gw-N)
#   node_ns K / node_addr K        node K's namespace / address
#   node_cgroup K                  node K's pods' parent cgroup (its agent's --cgroup)
#   nodes_exec K CMD...            CMD inside node K (nsenter: /sys stays, bpffs too)
#   pod_ns gw-N|sup-M              the pod's namespace
#   pod_cgroup gw-N|sup-M          the pod's cgroup directory
#   pod_up gw|sup I                make the pod gw-I / sup-I unless it exists
#                                  (sup_prepare M...: pod_up sup M for each; sups_start
#                                  makes every pod before it starts anyone)
#   svc_dnat_count [K]             connections the Service's DNAT rewrote on node K
#                                  (default: summed over every node): the packets
#                                  of its counter; only a connection's first packet
#                                  passes the nat hooks
#   node_agent_start K [ARGS...]   node K's agent; status 3 if it exited saying
#                                  event=no_steering
#   node_agent_stop K / node_agent_kill K   SIGTERM / SIGKILL, then wait for it
#   node_agent_metric K NAME [LABELMATCH]   value on node K's agent /metrics
#   sup_first_steer M              how sup-M's first dial went: "steered" (its
#                                  agent registered it to a gateway first),
#                                  "fallback" (the agent, or its store, did not
#                                  answer in time: the Service, by design), else
#                                  "unexplained" and the log line
#                                  (summed over matching lines; empty if none)
#   node_agent_log K               node K's agent's current log
#
# Topology (../shared/notes/test-network.md: own namespaces only, addresses
# from 198.18.0.0/15 and the ClusterIP from 198.19.0.0/16, nothing in the
# machine's namespace):
#
#   RS_NS             the cluster's namespace (lib.sh): the bridge rsbr and
#                     one veth end per node (nK); no address, no process
#   RS_NS-nK          node K: eth0 198.18.0.K/24 on the bridge; ip_forward;
#                     routes: each of its pods' /32 to that pod's veth, the
#                     other nodes' pod ranges 198.18.(10+J).0/24,
#                     198.18.(100+J).0/24 and 198.18.(110+J).0/24 via
#                     198.18.0.J, and 198.19.0.0/16 out
#                     of eth0 (hostNetwork processes need a route to the
#                     ClusterIP; the output hook's DNAT then reroutes)
#   RS_NS-gw-N        gw-N's pod on node K: eth0 198.18.(10+K).N/32 (N <= 254),
#                     the node's end is gN; --listen :7000, --peer :7001,
#                     --metrics :9100, all on the pod IP
#   RS_NS-sup-M       sup-M's pod on node K: eth0 198.18.(100+K).M/32 for
#                     M <= 254, 198.18.(110+K).(M-254)/32 for M in 255..508
#                     (400 supervisors: `make compare`), the node's end is sM;
#                     dials the Service (--bind its IP)
#   A pod's routes: 198.18.0.K dev eth0 scope link, default via 198.18.0.K.
#   sysctls, set in every node and pod namespace (never the machine's):
#   rp_filter=1 (strict: the routes are symmetric, so it holds, and asymmetry
#   would show), arp_ignore=0 (a pod ARPs for 198.18.0.K on a veth that has
#   no address, and the node must answer for an address on eth0; a node ARPs
#   for a pod from 198.18.0.K, which the pod routes back through eth0).
#
# The Service 198.19.0.100:7000 on every node (svc_update, run by gw_start /
# gw_stop / gw_kill), as kube-proxy's nftables mode writes it: table ip
# rs_svc, chain services jumped from the nat prerouting (traffic from pods)
# and output (hostNetwork processes) hooks, one rule
#   ip daddr 198.19.0.100 tcp dport 7000 counter name "svc_dnat"
#       dnat to numgen random mod N map { 0 : GW-POD-IP, ... } : 7000
# over every running gateway pod, and a reject of 198.19.0.100:7000 in the
# filter forward and output hooks, which only a connection no DNAT rewrote
# reaches (no endpoints: refused, as kube-proxy does).  Always DNAT: on pods
# the agent steers at connect time, before the DNAT, and the counter shows
# which connections it left to the DNAT.  svc_update flushes the table and
# refills it in one transaction; the named counter survives it.
#
# Cgroups (cgroup v2, found with findmnt): RS_POD_CGROUP=$CG2/rs-test-PID-RAND
# (exported), node K's pods under $RS_POD_CGROUP/nK, pod gw-N in
# $RS_POD_CGROUP/nK/pod-gw-N, sup-M in .../pod-sup-M.  A daemon is written into
# its pod's cgroup.procs by the shell nsenter starts in the pod's namespace,
# which then execs it: $! is the daemon's own pid.  One directory per node,
# not one for all: every node's pods share this one kernel, and node K's
# agent must see node K's pods only.
#
# The agents (RS_AGENT=1): node K's runs in RS_NS-nK with --service
# 198.19.0.100:7000, --cgroup $RS_POD_CGROUP/nK, --socket
# $RS_SOCK/agent-nK.sock, --member-socket $RS_SOCK/member-nK.sock, the
# cluster's --store and --ttl, --sync-interval 200, --metrics 198.18.0.K:9200,
# --pin-root /sys/fs/bpf/rs-test-PID-RAND (RS_POD_PIN_ROOT, one per cluster,
# removed by cluster_down); its log is $RS_DIR/log/agent-nK.S.log.
# Supervisors get --agent $RS_SOCK/member-nK.sock (their node's) unless
# RS_SUP_AGENT=0; gateways get no --agent (sk_lookup is for hostNetwork
# gateways, and these are pods).
#
# cluster_down (rs_down_hook) kills the agents, removes the pins, kills what
# is left in the pod cgroups and removes the directories once empty (polled,
# 5 s deadline); lib.sh then deletes every namespace of rs_all_ns.
#
# Environment:
#   RS_AGENT=1          an agent per node (above)
#   RS_SUP_AGENT=0      supervisors without --agent even so
#   RS_PODS_AGENT_ARGS  extra flags for every agent (word-split)

RS_NODES=0          # nodes of this cluster (pods_up K)
RS_NODES_MADE=0     # node namespaces made so far (what cluster_down removes)
RS_NODES_SEQ=""     # the RS_CLUSTER_SEQ they belong to
RS_NODES_BRIDGE=rsbr
RS_NODES_AGENT_PORT=9200
RS_PODS_AGENT_ARGS=${RS_PODS_AGENT_ARGS:-}
RS_POD_CGROUP=""    # the cluster's cgroup directory (exported by pods_up)
RS_POD_PIN_ROOT=""  # the agents' --pin-root
declare -a RS_PODS=()   # pods made (gw-N, sup-M), what cluster_down removes
declare -A RS_GW_NODE=() RS_SUP_NODE=()
declare -A RS_NODE_AGENT_PID=() RS_NODE_AGENT_STARTS=()

RS_SVC_ADDR=198.19.0.100
RS_SERVICE=$RS_SVC_ADDR:$RS_SVC_PORT

# shellcheck source=node_helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"
node_cgroup() { echo "$RS_POD_CGROUP/n$1"; }
pod_ns() { echo "$RS_NS-$1"; }
pod_node() { case $1 in gw-*) node_of_gw "${1#gw-}" ;; *) node_of_sup "${1#sup-}" ;; esac; }
pod_cgroup() { echo "$(node_cgroup "$(pod_node "$1")")/pod-$1"; }

# lib.sh's topology hooks.
rs_ns() { nodes_exec 1 "$@"; }
gw_ns() { pod_ns "gw-$1"; }
sup_ns() { pod_ns "sup-$1"; }
gw_addr() { echo "198.18.$((10 + $(node_of_gw "$1"))).$1"; }
sup_addr() {
	local k
	k=$(node_of_sup "$1")
	if [ "$1" -le 254 ]; then echo "198.18.$((100 + k)).$1"; else echo "198.18.$((110 + k)).$(($1 - 254))"; fi
}
sup_node_args() {
	[ "${RS_AGENT:-0}" = 1 ] && [ "${RS_SUP_AGENT:-1}" != 0 ] || return 0
	echo "--agent $RS_SOCK/member-n$(node_of_sup "$1").sock"
}
# pod_exec POD CMD...: exec CMD in the pod's namespace and cgroup (run with &).
pod_exec() {
	local pod=$1
	shift
	# shellcheck disable=SC2016 # $$ and $@ are the inner shell's
	exec nsenter --net="/run/netns/$(pod_ns "$pod")" \
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(pod_cgroup "$pod")" "$@"
}
gw_exec() { local n=$1; shift; pod_exec "gw-$n" "$@"; }
sup_exec() { local m=$1; shift; pod_exec "sup-$m" "$@"; }
sup_prepare() { local m; for m in "$@"; do pod_up sup "$m"; done; }
# sups_blip_all: every supervisor's connection ends in a gateway pod (on
# --listen through the Service's DNAT, on --peer where the agent rewrote
# it): destroyed from the gateway's end, in each running gateway pod, those
# whose peer is a supervisor pod (198.18.96.0/19 holds 198.18.101-119.x);
# the RST reaches the supervisor at once.  Gateway-to-gateway links stay.
sups_blip_all() {
	local n
	for n in "${!RS_GW_PID[@]}"; do
		gw_alive "$n" || continue
		nsenter --net="/run/netns/$(gw_ns "$n")" ss -K -t -n state established "( dst 198.18.96.0/19 )" >/dev/null 2>&1
	done
}
rs_all_ns() {
	local k p
	if [ "$RS_NODES_SEQ" = "$RS_CLUSTER_SEQ" ]; then # nodes of this cluster
		for p in "${RS_PODS[@]}"; do pod_ns "$p"; done
		for ((k = 1; k <= RS_NODES_MADE; k++)); do node_ns "$k"; done
	fi
	[ -z "$RS_NS" ] || echo "$RS_NS"
}
rs_down_hook() {
	local k
	for k in "${!RS_NODE_AGENT_PID[@]}"; do node_agent_kill "$k"; done
	[ -z "$RS_POD_PIN_ROOT" ] || rm -rf "$RS_POD_PIN_ROOT"
	pods_cgroup_down
	RS_POD_PIN_ROOT="" RS_POD_CGROUP="" # RS_PODS stays: cluster_down deletes rs_all_ns next
}

# pods_cgroup_down: SIGKILL to every process in the pod cgroups, then remove
# the directories, deepest first, as soon as they are empty (5 s deadline).
pods_cgroup_down() {
	[ -n "$RS_POD_CGROUP" ] && [ -d "$RS_POD_CGROUP" ] || return 0
	local pid deadline=$(($(rs_now_ms) + 5000))
	for pid in $(cat "$RS_POD_CGROUP"/*/*/cgroup.procs 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null
	done
	while :; do
		find "$RS_POD_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$RS_POD_CGROUP" ] || return 0
		if [ "$(rs_now_ms)" -ge "$deadline" ]; then
			rs_log "cgroup directories left behind in $RS_POD_CGROUP: $(cat "$RS_POD_CGROUP"/*/*/cgroup.procs 2>/dev/null | tr '\n' ' ')"
			return 1
		fi
		sleep 0.05
	done
}

# rs_pod_sysctls NS [FORWARD]: the namespace's IPv4 settings (see the header);
# "all" and "default" both, before its interfaces exist.
rs_pod_sysctls() {
	nsenter --net="/run/netns/$1" sysctl -q -w net.ipv4.ip_forward="${2:-0}" \
		net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.default.rp_filter=1 \
		net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.default.arp_ignore=0 >/dev/null
}

# pods_up K: the node namespaces, the bridge, the routes, the cgroups, the Service.
pods_up() {
	local want=$1 k j ns batch
	[ -n "$RS_NS" ] || fail "pods_up: cluster_up first"
	[ "$RS_NODES_SEQ" != "$RS_CLUSTER_SEQ" ] || fail "pods_up: nodes are up already"
	[ -z "$(printf '%s' "${RS_GW_PID[@]}")" ] || fail "pods_up: gateways started before the nodes (cluster_up --gateways 0)"
	[[ $want =~ ^[1-9]$ ]] || fail "pods_up: 1 to 9 nodes, not '$want'"
	RS_NODES=$want RS_NODES_MADE=0 RS_NODES_SEQ=$RS_CLUSTER_SEQ RS_PODS=()
	RS_NODE_AGENT_PID=() RS_NODE_AGENT_STARTS=()
	local cg2 tag="rs-test-$$-$RANDOM"
	# The shortest path: the machine's own mount, not a bind of it inside
	# another root (tests/image/image_test.sh binds /sys into the image).
	cg2=$(findmnt -n -o TARGET -t cgroup2 | awk '{ print length($0), $0 }' | sort -n | head -n 1 | cut -d' ' -f2-)
	[ -n "$cg2" ] || fail "pods_up: no cgroup2 mount (findmnt -t cgroup2)"
	RS_POD_CGROUP="$cg2/$tag" RS_POD_PIN_ROOT="/sys/fs/bpf/$tag"
	export RS_POD_CGROUP
	mkdir "$RS_POD_CGROUP" || fail "pods_up: mkdir $RS_POD_CGROUP"
	ip -n "$RS_NS" link add "$RS_NODES_BRIDGE" type bridge || fail "bridge in $RS_NS"
	ip -n "$RS_NS" link set "$RS_NODES_BRIDGE" up || fail "bridge up in $RS_NS"
	for ((k = 1; k <= want; k++)); do
		ns=$(node_ns "$k")
		ip netns add "$ns" || fail "ip netns add $ns"
		RS_NODES_MADE=$k # from now on cluster_down removes it
		mkdir "$(node_cgroup "$k")" || fail "mkdir $(node_cgroup "$k")"
		rs_pod_sysctls "$ns" 1 || fail "sysctls on node $k"
		ip -n "$RS_NS" link add "n$k" type veth peer name eth0 netns "$ns" || fail "veth for node $k"
		ip -n "$RS_NS" link set "n$k" master "$RS_NODES_BRIDGE" up || fail "veth n$k on the bridge"
		batch="link set lo up
link set eth0 up
addr add $(node_addr "$k")/24 dev eth0
route add 198.19.0.0/16 dev eth0
"
		for ((j = 1; j <= want; j++)); do
			[ "$j" = "$k" ] || batch+="route add 198.18.$((10 + j)).0/24 via $(node_addr "$j")
route add 198.18.$((100 + j)).0/24 via $(node_addr "$j")
route add 198.18.$((110 + j)).0/24 via $(node_addr "$j")
"
		done
		printf '%s' "$batch" | ip -n "$ns" -batch - || fail "addresses and routes on node $k"
	done
	svc_update
	rs_log "nodes up: $want namespaces $RS_NS-n1..$want on $RS_NODES_BRIDGE in $RS_NS; Service $RS_SERVICE; cgroups $RS_POD_CGROUP; store $RS_STORE"
	[ "${RS_AGENT:-0}" = 1 ] || return 0
	for ((k = 1; k <= want; k++)); do
		node_agent_start "$k" || fail "node $k's agent found no steering (status 3)"
	done
}

# pod_up gw|sup I: the pod's namespace, its veth pair to its node, its
# address and routes, its cgroup directory; nothing if it exists.
pod_up() {
	local pod=$1-$2 k ns node veth addr
	case " ${RS_PODS[*]} " in *" $pod "*) return 0 ;; esac
	[ "$RS_NODES_SEQ" = "$RS_CLUSTER_SEQ" ] || fail "pod_up $pod: pods_up first"
	[[ $2 =~ ^[1-9][0-9]*$ ]] && [ "$2" -le "$([ "$1" = gw ] && echo 254 || echo 508)" ] ||
		fail "pod_up: $pod: gw 1 to 254, sup 1 to 508"
	k=$(pod_node "$pod") ns=$(pod_ns "$pod") node=$(node_ns "$k") veth=${1:0:1}$2
	[ "$k" -ge 1 ] && [ "$k" -le "$RS_NODES" ] || fail "pod_up $pod: no node $k"
	if [ "$1" = gw ]; then addr=$(gw_addr "$2"); else addr=$(sup_addr "$2"); fi
	ip netns add "$ns" || fail "ip netns add $ns"
	RS_PODS+=("$pod") # from now on cluster_down removes it
	mkdir "$(pod_cgroup "$pod")" || fail "mkdir $(pod_cgroup "$pod")"
	rs_pod_sysctls "$ns" || fail "sysctls in pod $pod"
	ip -n "$ns" link add eth0 type veth peer name "$veth" netns "$node" || fail "veth for pod $pod"
	printf 'link set %s up\nroute add %s/32 dev %s\n' "$veth" "$addr" "$veth" | ip -n "$node" -batch - ||
		fail "route to pod $pod on node $k"
	printf '%s\n' "link set lo up" "link set eth0 up" "addr add $addr/32 dev eth0" \
		"route add $(node_addr "$k") dev eth0 scope link" "route add default via $(node_addr "$k") dev eth0" |
		ip -n "$ns" -batch - || fail "address and routes in pod $pod"
}

# gw_start / sup_start: lib.sh's, once the pod is there.
eval "rs_lib_$(declare -f gw_start)"
eval "rs_lib_$(declare -f sup_start)"
gw_start() { pod_up gw "$1"; rs_lib_gw_start "$@"; }
sup_start() { pod_up sup "$1"; rs_lib_sup_start "$@"; }

# svc_update [N...]: the Service (see the header) over gateways N...
# (default every running gateway), the same on every node.
svc_update() {
	local set=() n k i map=""
	if [ $# -gt 0 ]; then
		set=("$@")
	else
		for n in $(printf '%s\n' "${!RS_GW_PID[@]}" | sort -n); do
			[ -n "${RS_GW_PID[$n]}" ] && set+=("$n")
		done
	fi
	RS_SVC_SET=("${set[@]}")
	[ "$RS_NODES_SEQ" = "$RS_CLUSTER_SEQ" ] || return 0 # cluster_up, before pods_up
	for i in "${!set[@]}"; do map+="${map:+, }$i : $(gw_addr "${set[$i]}")"; done
	local match="ip daddr $RS_SVC_ADDR tcp dport $RS_SVC_PORT" dnat=""
	[ -z "$map" ] || dnat="$match counter name \"svc_dnat\" dnat to numgen random mod ${#set[@]} map { $map } : $RS_GW_LISTEN_PORT"
	for ((k = 1; k <= RS_NODES_MADE; k++)); do
		nodes_exec "$k" nft -f - <<-EOF || fail "nft: could not load the Service on node $k"
			table ip rs_svc { counter svc_dnat { }; }
			flush table ip rs_svc
			table ip rs_svc {
				chain services {
					$dnat
				}
				chain prerouting { type nat hook prerouting priority dstnat; policy accept; jump services; }
				chain output { type nat hook output priority -100; policy accept; jump services; }
				chain no_endpoints { $match reject; }
				chain forward { type filter hook forward priority filter; policy accept; jump no_endpoints; }
				chain filter_output { type filter hook output priority filter; policy accept; jump no_endpoints; }
			}
		EOF
	done
}

# svc_dnat_count [K]: see the header.
svc_dnat_count() {
	local k s=0 v
	for k in ${1:-$(seq 1 "$RS_NODES_MADE")}; do
		v=$(nodes_exec "$k" nft list counter ip rs_svc svc_dnat | awk '$1 == "packets" { print $2 }')
		s=$((s + ${v:-0}))
	done
	echo "$s"
}

# --- one agent per node ------------------------------------------------------

node_agent_log() { echo "$RS_DIR/log/agent-n$1.${RS_NODE_AGENT_STARTS[$1]:-1}.log"; }
node_agent_alive() { [ -n "${RS_NODE_AGENT_PID[$1]:-}" ] && ! rs_gone "${RS_NODE_AGENT_PID[$1]}"; }
# The agent said ready, or is gone.
node_agent_settled() { log_has "$(node_agent_log "$1")" 'event=ready' || ! node_agent_alive "$1"; }

node_agent_start() {
	local k=$1
	shift
	[ -z "${RS_NODE_AGENT_PID[$k]:-}" ] || fail "node_agent_start $k: already running"
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || fail "cannot mount bpffs"
	RS_NODE_AGENT_STARTS[$k]=$((${RS_NODE_AGENT_STARTS[$k]:-0} + 1))
	# shellcheck disable=SC2046,SC2086
	# nsenter itself, not nodes_exec: $! must be the agent (nsenter execs it).
	nsenter --net="/run/netns/$(node_ns "$k")" $(rs_valgrind "$(node_agent_log "$k").vg") "$RS_BUILD/ringsteer-agent" \
		--service "$RS_SERVICE" --cgroup "$(node_cgroup "$k")" \
		--socket "$RS_SOCK/agent-n$k.sock" --member-socket "$RS_SOCK/member-n$k.sock" \
		--store "$RS_STORE" --ttl "$RS_TTL_MS" --sync-interval 200 \
		--metrics "$(node_addr "$k"):$RS_NODES_AGENT_PORT" --pin-root "$RS_POD_PIN_ROOT" \
		$RS_PODS_AGENT_ARGS "$@" 2>"$(node_agent_log "$k")" &
	RS_NODE_AGENT_PID[$k]=$!
	disown "$!"
	await "node $k's agent ready (or exited)" "$(rs_slow 10)" node_agent_settled "$k"
	log_has "$(node_agent_log "$k")" 'event=ready' && return 0
	RS_NODE_AGENT_PID[$k]=""
	log_has "$(node_agent_log "$k")" 'event=no_steering' && return 3
	fail "node $k's agent exited: $(tail -n 3 "$(node_agent_log "$k")")"
}

rs_node_agent_signal() {
	local k=$1 pid=${RS_NODE_AGENT_PID[$1]:-}
	[ -n "$pid" ] || return 0
	RS_NODE_AGENT_PID[$k]=""
	kill -"$2" "$pid" 2>/dev/null
	await "node $k's agent exits after SIG$2" 10 rs_gone "$pid"
}
node_agent_stop() { rs_node_agent_signal "$1" TERM; }
node_agent_kill() { rs_node_agent_signal "$1" KILL; }

node_agent_metric() { # K NAME [LABELMATCH]
	nodes_exec "$1" curl -fsS --max-time 2 "http://$(node_addr "$1"):$RS_NODES_AGENT_PORT/metrics" |
		awk -v n="$2" -v l="${3:-}" '$1 ~ "^"n"({|$)" && index($1, l) { s += $2; seen = 1 }
			END { if (seen) printf "%d\n", s }'
}
# A supervisor registers before it dials; its log's first registration or
# dial line says which way that dial went.
sup_first_steer() {
	local first
	first=$(grep -m1 -E 'event=(agent_registered|agent_unavailable|dialing) ' "$(sup_log "$1")")
	case $first in
	*'connects go to gw-'*) echo steered ;;
	*event=agent_unavailable* | *'store has not answered'*) echo fallback ;;
	*) echo "unexplained: $first" ;;
	esac
}
