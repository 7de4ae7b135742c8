# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/compare/lib.sh - shared helpers of `make compare` (issue 18).
#
# Source after tests/cluster/lib.sh.  One contender at a time runs on a
# fresh test cluster (cluster_up ... cluster_down), always the same way:
# CMP_GWS gateways, supervisors sup-1..sup-N each binding its own source
# (sup_addr: 127.0.2.M, from 251 on 127.0.3.(M-250)), the same seeds.
#
# Two topologies (cmp_topology CONTENDER says which):
#   flat  every contender but ringsteer-kernel: one namespace, gateways on
#         127.0.1.N, the Service 127.0.0.100:7000 (nftables DNAT), proxies
#         in the same namespace.
#   pods  ringsteer-kernel: tests/cluster/pods.sh, the Kubernetes-shaped
#         cluster, CMP_NODES (2) node namespaces, every gateway and
#         supervisor its own pod (netns, /32, cgroup), kube-proxy's Service
#         198.19.0.100:7000 on each node, a ringsteer-agent per node.  That
#         is how users run the kernel path: the agent steers at connect time
#         (cgroup connect4 rewrites a supervisor's connect to the Service into
#         its chosen gateway pod's endpoint, before kube-proxy's DNAT);
#         gateways are pods without --agent (sk_lookup is for hostNetwork
#         gateways, which Kubernetes users do not run), supervisors get
#         --agent (their node's member socket).  Supervisors alternate nodes
#         (pods.sh's node_of_sup), gateways too.  The caller sources pods.sh
#         at the top level of the contender's own subshell (its declare -A
#         must not be local to a function), after tests/cluster/lib.sh, so
#         that every other contender stays on the flat cluster.
#
#   cmp_topology CONTENDER  flat | pods
#   cmp_up CONTENDER        cluster, gateways 1..CMP_GWS, and whatever the
#                           contender puts in front of them (proxies, the agent);
#                           sets RS_SUP_SERVICE to where supervisors dial
#   cmp_gw_join N           start gw-N the contender's way (proxies already list
#                           gw-1..CMP_GWS_MAX; their health checks find it)
#   cmp_loads               the gateways' own gauges ringsteer_gateway_supervisors,
#                           space-separated, gw-1..CMP_GWS_MAX (0 for a stopped one)
#   cmp_spread LOADS        "max-min max/mean" over the running gateways' loads
#   cmp_settle TOTAL DL_S   await: every gauge read, their sum TOTAL, unchanged
#                           for CMP_SETTLE_MS; fails after DL_S seconds
#   cmp_map                 "sup-M gw-N" of every attached member, sorted (store)
#   cmp_moved A B           members whose gateway differs between maps A and B
#   emit CONTENDER MEASURE VALUE   one line of OUT/evenness.tsv
#
# Contenders (the TSV names): service, haproxy-leastconn-1, haproxy-leastconn-2,
# haproxy-bounded-1, haproxy-bounded-2, nginx-hash, ringsteer-redirect,
# ringsteer-kernel.  The proxies listen in the cluster's namespace on
# 127.0.0.201 (replica 1) and 127.0.0.202 (replica 2); with two replicas a
# second kube-proxy-style Service 127.0.0.110:7000 (nftables DNAT, numgen
# random) spreads the supervisors over them, each replica seeing its share.

CMP_GWS=${CMP_GWS:-4}
CMP_GWS_MAX=${CMP_GWS_MAX:-5}     # gw-5 is the one that joins
CMP_SETTLE_MS=${CMP_SETTLE_MS:-800}
CMP_PROXY_SVC=127.0.0.110
CMP_NODES=${CMP_NODES:-2}         # nodes of the pod topology (ringsteer-kernel)
CMP_CONTENDERS="service haproxy-leastconn-1 haproxy-leastconn-2 haproxy-bounded-1 haproxy-bounded-2 nginx-hash ringsteer-redirect ringsteer-kernel"
# The HAProxy contenders' balancing, the backend's first lines
# (cmp_haproxy_cfg; bench/compare/contenders.sh prints them in the report):
# least connections, and consistent hashing of the source address with
# bounded loads (no server above 125% of the mean).
CMP_BALANCE_LEASTCONN=$'\tbalance leastconn'
CMP_BALANCE_BOUNDED=$'\tbalance source\n\thash-type consistent\n\thash-balance-factor 125'

# evenness.sh points CMP_TSV (and CMP_ROUNDS_TSV) at one contender's own files.
emit() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"${CMP_TSV:-$CMP_OUT/evenness.tsv}"; }

cmp_proxy_addr() { echo "127.0.0.$((200 + $1))"; }

# cmp_haproxy_cfg R BALANCE_LINES: HAProxy 2.6 TCP mode, one frontend on
# replica R's address, every possible gateway a server with a fast health check.
cmp_haproxy_cfg() {
	local r=$1 bal=$2 n
	cat <<CFG
global
	maxconn 4000
	pidfile $RS_DIR/haproxy-$r.pid
defaults
	mode tcp
	timeout connect 1s
	timeout client 1h
	timeout server 1h
	option redispatch
	retries 2
frontend fe
	bind $(cmp_proxy_addr "$r"):$RS_SVC_PORT
	default_backend gws
backend gws
$bal
CFG
	for ((n = 1; n <= CMP_GWS_MAX; n++)); do
		printf '\tserver gw-%d %s:%d check inter 200ms fall 1 rise 1\n' "$n" "$(gw_addr "$n")" "$RS_GW_LISTEN_PORT"
	done
}

cmp_nginx_cfg() {
	local r=$1 n
	cat <<CFG
load_module /usr/lib/nginx/modules/ngx_stream_module.so;
worker_processes 1;
daemon off;
pid $RS_DIR/nginx-$r.pid;
error_log $RS_DIR/log/nginx-$r.log warn;
events { worker_connections 4096; }
stream {
	upstream gws {
		hash \$remote_addr consistent;
CFG
	for ((n = 1; n <= CMP_GWS_MAX; n++)); do
		printf '\t\tserver %s:%d max_fails=1 fail_timeout=1s;\n' "$(gw_addr "$n")" "$RS_GW_LISTEN_PORT"
	done
	cat <<CFG
	}
	server {
		listen $(cmp_proxy_addr "$r"):$RS_SVC_PORT;
		proxy_pass gws;
		proxy_connect_timeout 1s;
		proxy_timeout 1h;
	}
}
CFG
}

# cmp_proxy_start KIND R: haproxy or nginx replica R in the cluster's namespace.
cmp_proxy_up() { rs_ns ss -Hltn "sport = :$RS_SVC_PORT" | grep -q "$(cmp_proxy_addr "$1"):"; }
cmp_proxy_start() {
	local kind=$1 r=$2 cfg
	case $kind in
	haproxy)
		cfg="$RS_DIR/haproxy-$r.cfg"
		cmp_haproxy_cfg "$r" "$CMP_BALANCE" >"$cfg"
		ip netns exec "$RS_NS" haproxy -db -f "$cfg" >"$RS_DIR/log/haproxy-$r.log" 2>&1 &
		;;
	nginx)
		cfg="$RS_DIR/nginx-$r.conf"
		cmp_nginx_cfg "$r" >"$cfg"
		ip netns exec "$RS_NS" nginx -c "$cfg" -e "$RS_DIR/log/nginx-$r.err" >/dev/null 2>&1 &
		;;
	esac
	disown "$!"
	await "$kind replica $r listening" 10 cmp_proxy_up "$r"
}

# The two-replica Service in front of the proxies (its own nft table).
cmp_proxy_svc() {
	local n=$1 i vmap="" rules
	rules="table ip rs_psvc {}
delete table ip rs_psvc
table ip rs_psvc {
"
	for ((i = 1; i <= n; i++)); do
		rules+="	chain ep_$i { meta l4proto tcp dnat to $(cmp_proxy_addr "$i"):$RS_SVC_PORT; }
"
		vmap+="${vmap:+, }$((i - 1)) : goto ep_$i"
	done
	rules+="	chain svc { numgen random mod $n vmap { $vmap }; }
	chain services { ip daddr $CMP_PROXY_SVC tcp dport $RS_SVC_PORT goto svc; }
	chain output { type nat hook output priority -100; policy accept; jump services; }
}
"
	printf '%s' "$rules" | ip netns exec "$RS_NS" nft -f - || fail "nft: the proxies' Service"
}

cmp_topology() { if [ "$1" = ringsteer-kernel ]; then echo pods; else echo flat; fi; }

cmp_up() {
	local c=$1 kind="" replicas=0 n
	CMP_C=$c
	export RS_AGENT=0
	RS_GW_ARGS="--no-placement"
	unset RS_SUP_SERVICE
	# A plain client of the Service or a proxy: it dials only there (no
	# direct redial of the last gateway, which would bypass the front).
	CMP_INPROTO=0
	RS_REDIRECT_ALLOW="$RS_SVC_ADDR/32"
	case $c in
	service) ;;
	haproxy-leastconn-*) kind=haproxy CMP_BALANCE=$CMP_BALANCE_LEASTCONN ;;
	haproxy-bounded-*) kind=haproxy CMP_BALANCE=$CMP_BALANCE_BOUNDED ;;
	nginx-hash) kind=nginx ;;
	ringsteer-redirect) RS_GW_ARGS="" CMP_INPROTO=1 RS_REDIRECT_ALLOW="127.0.0.0/8" ;;
	# On pods (cmp_topology): redirects name gateway pods, 198.18.0.0/15.
	ringsteer-kernel) RS_GW_ARGS="" RS_AGENT=1 CMP_INPROTO=1 RS_REDIRECT_ALLOW="198.18.0.0/15" ;;
	*) echo "unknown contender $c" >&2; exit 2 ;;
	esac
	case $c in *-1 | nginx-hash) replicas=1 ;; *-2) replicas=2 ;; esac
	cluster_up --gateways 0
	if [ "$(cmp_topology "$c")" = pods ]; then
		declare -F pods_up >/dev/null || fail "cmp_up $c: source tests/cluster/pods.sh first"
		pods_up "$CMP_NODES" # with RS_AGENT=1: an agent on every node
	fi
	for ((n = 1; n <= CMP_GWS; n++)); do gw_start "$n"; done
	if [ -n "$kind" ]; then
		for ((n = 1; n <= replicas; n++)); do cmp_proxy_start "$kind" "$n"; done
		if [ "$replicas" -eq 1 ]; then
			export RS_SUP_SERVICE="$(cmp_proxy_addr 1):$RS_SVC_PORT"
			RS_REDIRECT_ALLOW="$(cmp_proxy_addr 1)/32"
		else
			RS_REDIRECT_ALLOW="$CMP_PROXY_SVC/32"
			cmp_proxy_svc "$replicas"
			export RS_SUP_SERVICE="$CMP_PROXY_SVC:$RS_SVC_PORT"
		fi
	fi
	rs_log "contender $c up (gateways: ${RS_GW_ARGS:-placement}, supervisors dial ${RS_SUP_SERVICE:-$RS_SERVICE})"
}

cmp_gw_join() { gw_start "$1"; }

cmp_loads() {
	local n out=() v
	for ((n = 1; n <= CMP_GWS_MAX; n++)); do
		if gw_alive "$n"; then
			v=$(metric "$n" ringsteer_gateway_supervisors) || return 1
			out+=("$v")
		else
			out+=(0)
		fi
	done
	echo "${out[*]}"
}

# cmp_spread "LOADS": over the running gateways only.
cmp_spread() {
	local l=$1 n i=0 run=()
	for n in $l; do
		i=$((i + 1))
		gw_alive "$i" && run+=("$n")
	done
	echo "${run[*]}" | awk '{ mn = mx = $1; s = 0
		for (i = 1; i <= NF; i++) { s += $i; if ($i < mn) mn = $i; if ($i > mx) mx = $i }
		printf "%d %.3f\n", mx - mn, (s > 0 ? mx / (s / NF) : 0) }'
}

CMP_LAST=""
cmp_settled_poll() {
	local l s
	l=$(cmp_loads) || return 1
	s=$(echo "$l" | awk '{ for (i = 1; i <= NF; i++) s += $i; print s + 0 }')
	if [ "$l" != "${CMP_LAST%@*}" ] || [ "$s" -ne "$CMP_TOTAL" ]; then
		CMP_LAST="$l@$(rs_now_ms)"
		return 1
	fi
	[ $(($(rs_now_ms) - ${CMP_LAST#*@})) -ge "$CMP_SETTLE_MS" ]
}
cmp_settle() {
	CMP_TOTAL=$1 CMP_LAST=""
	await "$CMP_C: loads settle at $1 supervisors" "$2" cmp_settled_poll
	CMP_LOADS=${CMP_LAST%@*}
}

cmp_map() { rs_current | jq -r '"\(.member_id) \(.gateway_id)"' | sort; }
cmp_moved() { join <(printf '%s\n' "$1") <(printf '%s\n' "$2") | awk '$2 != $3 { n++ } END { print n + 0 }'; }
