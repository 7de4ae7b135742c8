#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/compare/contenders.sh - prints the "contenders, as configured" section
# of docs/COMPARISON.md (bench/compare/report.sh includes it), so that a reader
# can rebuild every peer: what each contender puts in front of the gateways,
# how the gateways and supervisors are started, and each proxy's and Service's
# configuration as the run writes it.
#
# The evenness pass's configurations are rendered by the functions that write
# them during the run (tests/cluster/lib.sh rs_svc_rules, bench/compare/lib.sh
# cmp_haproxy_cfg and cmp_nginx_cfg, with CMP_BALANCE_*), sourced here; the
# lines of the scripts shown are quoted and must be there verbatim, each a
# whole line (quote), so that a script changed without this file fails the
# report instead of leaving a stale description.  The prose and the table
# say what those lines mean.
# usage: contenders.sh   (exit 1, with the line, when a quote is not found)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster_lib=tests/cluster/lib.sh
pods_lib=tests/cluster/pods.sh
cmp_lib=bench/compare/lib.sh
datapath=bench/compare/datapath.sh

# quote FILE: a fenced block of the lines on stdin, each found verbatim (a
# whole line) in FILE, which is named above the block.
quote() {
	local file=$1 line body=""
	while IFS= read -r line; do
		grep -qxF -- "$line" "$root/$file" || { echo "contenders: not in $file: $line" >&2; exit 1; }
		body+="$line"$'\n'
	done
	# shellcheck disable=SC2016 # the backquotes are markdown's
	printf '%s:\n\n```\n%s```\n' "\`$file\`" "$body"
}

# render WHAT: the evenness pass's configuration WHAT, written by the run's own
# functions (RS_DIR, the run's temporary directory, left as a name).
render() {
	(
		# shellcheck source=../../tests/cluster/lib.sh
		. "$root/$cluster_lib"
		# shellcheck source=lib.sh
		. "$root/$cmp_lib"
		# shellcheck disable=SC2016,SC2034 # the name itself, read by the functions
		RS_DIR='$RS_DIR'
		case $1 in
		service) rs_svc_rules 1 2 3 4 ;;
		haproxy-leastconn) cmp_haproxy_cfg 1 "$CMP_BALANCE_LEASTCONN" ;;
		haproxy-bounded) cmp_haproxy_cfg 1 "$CMP_BALANCE_BOUNDED" ;;
		nginx-hash) cmp_nginx_cfg 1 ;;
		esac
	)
}

version() { # COMMAND...: its version line, or a note that it is not here
	local v
	v=$("$@" 2>&1 | head -n 1) || v=""
	echo "${v:-not installed where this report was written}"
}

section() {
	cat <<'EOF'
## The contenders, as configured

Every contender runs the same gateways and supervisors, started by the test cluster's
library, plaintext (the run leaves `RS_TLS` unset):
EOF
	echo
	quote "$cluster_lib" <<'EOF'
	gw_exec "$n" $(rs_valgrind "$(gw_log "$n").vg") "$RS_BUILD/ringsteer-gateway" --id "gw-$n" \
		--listen "$a:$RS_GW_LISTEN_PORT" --peer "$a:$RS_GW_PEER_PORT" \
		--store "$RS_STORE" --secret "$RS_SECRET" --metrics "$a:$RS_GW_METRICS_PORT" \
		--heartbeat "$RS_HEARTBEAT_MS" --ttl "$RS_TTL_MS" $(rs_valgrind_gw_args) $(rs_gw_transport_args "$n") \
		$RS_GW_ARGS $(gw_node_args "$n") ${RS_GW_XARGS[$n]:-} >"$(gw_log "$n")" 2>&1 &
	sup_exec "$m" $(rs_names_prefix) "$RS_BUILD/ringsteer-supervisor" --id "sup-$m" \
		--service "${RS_SUP_SERVICE:-$RS_SERVICE}" --token-file "$tok" \
		--sandboxes "$boxes" --sandboxes-file "$boxf" --bind "$(sup_addr "$m")" $(rs_sup_transport_args "$m") \
EOF
	# The values those names have in the run, read from the library itself.
	(
		# shellcheck source=../../tests/cluster/lib.sh
		. "$root/$cluster_lib"
		# shellcheck source=lib.sh
		. "$root/$cmp_lib"
		echo
		echo "with \`--heartbeat $RS_HEARTBEAT_MS --ttl $RS_TTL_MS\`, the SQLite store \`sqlite:\$RS_DIR/ringsteer.db\`,"
		echo "gateway gw-N on $(gw_addr N) (listen :$RS_GW_LISTEN_PORT, peer :$RS_GW_PEER_PORT), $CMP_GWS of them (gw-$CMP_GWS_MAX"
		echo "joins in the join step), supervisor sup-M bound to its own source address (127.0.2.M, from"
		echo "sup-251 127.0.3.(M-250)), one sandbox each; the gateways \`--insecure\`, the supervisors"
		echo "\`--insecure\` and one \`--redirect-allow\` per network in \`RS_REDIRECT_ALLOW\`. What differs per"
		echo "contender is set by \`cmp_up\`:"
	)
	echo
	quote "$cmp_lib" <<'EOF'
	RS_GW_ARGS="--no-placement"
	unset RS_SUP_SERVICE
	CMP_INPROTO=0
	RS_REDIRECT_ALLOW="$RS_SVC_ADDR/32"
	case $c in
	service) ;;
	haproxy-leastconn-*) kind=haproxy CMP_BALANCE=$CMP_BALANCE_LEASTCONN ;;
	haproxy-bounded-*) kind=haproxy CMP_BALANCE=$CMP_BALANCE_BOUNDED ;;
	nginx-hash) kind=nginx ;;
	ringsteer-redirect) RS_GW_ARGS="" CMP_INPROTO=1 RS_REDIRECT_ALLOW="127.0.0.0/8" ;;
	ringsteer-kernel) RS_GW_ARGS="" RS_AGENT=1 CMP_INPROTO=1 RS_REDIRECT_ALLOW="198.18.0.0/15" ;;
	case $c in *-1 | nginx-hash) replicas=1 ;; *-2) replicas=2 ;; esac
			export RS_SUP_SERVICE="$(cmp_proxy_addr 1):$RS_SVC_PORT"
			RS_REDIRECT_ALLOW="$(cmp_proxy_addr 1)/32"
			RS_REDIRECT_ALLOW="$CMP_PROXY_SVC/32"
			export RS_SUP_SERVICE="$CMP_PROXY_SVC:$RS_SVC_PORT"
EOF
	cat <<'EOF'

So, per contender:

| contender | in front of the gateways | gateways | supervisors dial | supervisors' `--redirect-allow` |
|---|---|---|---|---|
| service | the Service (nftables DNAT, below) | `--no-placement` | 127.0.0.100:7000 | 127.0.0.100/32 |
| haproxy-leastconn-1 | HAProxy on 127.0.0.201:7000, `balance leastconn` | `--no-placement` | 127.0.0.201:7000 | 127.0.0.201/32 |
| haproxy-leastconn-2 | two such replicas (127.0.0.201, .202), a Service 127.0.0.110:7000 in front of them | `--no-placement` | 127.0.0.110:7000 | 127.0.0.110/32 |
| haproxy-bounded-1 | HAProxy on 127.0.0.201:7000, `balance source`, `hash-type consistent`, `hash-balance-factor 125` | `--no-placement` | 127.0.0.201:7000 | 127.0.0.201/32 |
| haproxy-bounded-2 | two such replicas behind a Service 127.0.0.110:7000 | `--no-placement` | 127.0.0.110:7000 | 127.0.0.110/32 |
| nginx-hash | nginx stream on 127.0.0.201:7000, `hash $remote_addr consistent;` | `--no-placement` | 127.0.0.201:7000 | 127.0.0.201/32 |
| ringsteer-redirect | the Service | placement (no extra flag) | 127.0.0.100:7000 | 127.0.0.0/8 |
| ringsteer-kernel | the pod topology: kube-proxy-shaped DNAT on each node, a node agent per node | placement | 198.19.0.100:7000, with `--agent` (its node's member socket) | 198.18.0.0/15 |

`--no-placement` makes a gateway accept every supervisor where it lands, so the front alone
decides. A supervisor whose only allowed network is the front's address never redials a
gateway directly and follows no redirect (a drain's REDIRECT falls back to the front): it
is a plain client of the front, as any other client of a proxy would be. A token refresh
there is the connection closed (`ss -K`) and made again through the front; ringsteer's
supervisors get SIGUSR1 (a redial of their own gateway asking to stay;
`bench/compare/evenness.sh`).

The Service, as kube-proxy's nftables mode writes it (reduced), here over gw-1..gw-4
(`rs_svc_rules` in `tests/cluster/lib.sh`; the two-replica contenders put the same kind of
DNAT, `numgen random mod 2`, at 127.0.0.110:7000 in front of their proxies, `cmp_proxy_svc`
in `bench/compare/lib.sh`):

```
EOF
	render service
	cat <<'EOF'
```

EOF
	echo "HAProxy ($(version haproxy -v)), TCP mode, replica 1 of haproxy-bounded-1/2 as"
	echo "\`cmp_haproxy_cfg\` in \`$cmp_lib\` writes it (haproxy-leastconn-1/2: the same with"
	echo "\`balance leastconn\` alone in the backend's first line; replica 2 binds 127.0.0.202):"
	echo
	echo '```'
	render haproxy-bounded
	echo '```'
	echo
	echo "nginx ($(version nginx -v)), the stream module, as \`cmp_nginx_cfg\` in \`$cmp_lib\` writes it:"
	echo
	echo '```'
	render nginx-hash
	echo '```'
	cat <<'EOF'

ringsteer-kernel runs on the pod topology (`tests/cluster/pods.sh`: 2 node namespaces on a
bridge, every gateway and supervisor a pod with its own netns, /32 and cgroup, gateways and
supervisors alternating nodes: gw-N's pod is 198.18.(10+K).N on node K, sup-M's
198.18.(100+K).M); gateway pods get no `--agent` (sk_lookup is for hostNetwork
gateways). Its Service on every node, each node's agent, and the supervisors' `--agent`:

EOF
	quote "$pods_lib" <<'EOF'
#   ip daddr 198.19.0.100 tcp dport 7000 counter name "svc_dnat"
#       dnat to numgen random mod N map { 0 : GW-POD-IP, ... } : 7000
		--service "$RS_SERVICE" --cgroup "$(node_cgroup "$k")" \
		--socket "$RS_SOCK/agent-n$k.sock" --member-socket "$RS_SOCK/member-n$k.sock" \
		--store "$RS_STORE" --ttl "$RS_TTL_MS" --sync-interval 200 \
		--metrics "$(node_addr "$k"):$RS_NODES_AGENT_PORT" --pin-root "$RS_POD_PIN_ROOT" \
	echo "--agent $RS_SOCK/member-n$(node_of_sup "$1").sock"
EOF
	cat <<'EOF'

The data path half (`bench/compare/datapath.sh`) starts its own proxies, one replica each,
on their own addresses, with a frontend per port (the gateway's :7000, iperf3's :5201 and
sockperf's :11111), no health checks and a 5 s connect timeout; behind :7000 gw-1 and gw-2,
behind the data ports gw-1 alone (iperf3's control and data connections must meet one
server; its Service likewise DNATs the data ports by `numgen random` over two entries,
both gw-1). The balancing lines are the evenness pass's:

EOF
	quote "$datapath" <<'EOF'
hap_cfg 127.0.0.101 "balance leastconn" >"$RS_DIR/haproxy-leastconn.cfg"
hap_cfg 127.0.0.102 "balance source" "hash-type consistent" "hash-balance-factor 125" >"$RS_DIR/haproxy-bounded.cfg"
nginx_cfg 127.0.0.103 >"$RS_DIR/nginx.conf"
	printf 'global\n\tmaxconn 4000\n\tpidfile %s/haproxy-%s.pid\ndefaults\n\tmode tcp\n\ttimeout connect 5s\n\ttimeout client 1h\n\ttimeout server 1h\n' "$RS_DIR" "$addr"
		printf 'listen p%s\n\tbind %s:%s\n' "$p" "$addr" "$p"
		printf '\t%s\n' "$@"
		printf '\tserver gw-1 127.0.1.1:%s\n' "$p"
		[ "$p" != "$RS_GW_LISTEN_PORT" ] || printf '\tserver gw-2 127.0.1.2:%s\n' "$p"
	printf 'load_module /usr/lib/nginx/modules/ngx_stream_module.so;\ndaemon off;\nmaster_process on;\nworker_processes 1;\n'
	printf 'pid %s/nginx.pid;\nerror_log %s/log/nginx.err;\nevents { worker_connections 4000; }\nstream {\n' "$RS_DIR" "$RS_DIR"
		printf '\tupstream u%s { hash $remote_addr consistent; server 127.0.1.1:%s;%s }\n' "$p" "$p" \
			"$([ "$p" != "$RS_GW_LISTEN_PORT" ] || echo " server 127.0.1.2:$p;")"
		printf '\tserver { listen %s:%s; proxy_pass u%s; proxy_timeout 1h; }\n' "$1" "$p" "$p"
EOF
}

section
