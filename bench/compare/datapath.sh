#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/compare/datapath.sh OUT - the data path half of `make compare`: for
# each path a supervisor's established connection can take, in one run:
#   direct               supervisor -> gateway address
#   service              supervisor -> Service (nftables DNAT, numgen random)
#   haproxy-leastconn-1  supervisor -> HAProxy (TCP mode, balance leastconn, one replica)
#   haproxy-bounded-1    supervisor -> HAProxy (balance source, hash-type consistent,
#                        hash-balance-factor 125: consistent hashing with bounded loads)
#   nginx-hash           supervisor -> nginx stream (hash $remote_addr consistent)
#   ringsteer-redirect   HELLO via the Service, REDIRECT followed to the peer
#                        endpoint: from then on the supervisor talks to the gateway's
#                        own address (the data figures are taken there, by design the
#                        same path as direct, measured on their own)
#   ringsteer-kernel     connect-time rewrite (connect4) on the pod topology
#                        (tests/cluster/pods.sh): connect-to-ACCEPT measured by
#                        bench/connect_steer.sh (accept_time --agent: registration +
#                        steered); the data figures by bench/compare/datapath_pods.sh,
#                        iperf3 and sockperf run as a registered member (bench/steer_exec)
#                        so that their connects to the ClusterIP are the ones rewritten,
#                        beside that topology's own baselines:
#   pods-direct          sup pod -> gateway pod IP (veth and node routing)
#   pods-service         sup pod -> ClusterIP (kube-proxy-shaped DNAT on the node)
# measures (OUT/datapath.tsv: contender, measure, value; tab-separated, no header):
#   throughput_gbps (iperf3, receiver side), throughput_ratio (over direct; for
#   ringsteer-kernel and pods-* over pods-direct), rtt_p50_us, rtt_avg_us (sockperf
#   ping-pong, full round trip), rtt_ratio (p50, over the same baseline),
#   service_dnat_connects (pods-*, ringsteer-kernel: connections the Service's DNAT
#   rewrote during their runs; 0 for ringsteer-kernel, or datapath_pods.sh fails),
#   accept_p50_us, accept_p99_us (connect-to-ACCEPT of fresh members, bench/accept_time.c --all; the gateways run --no-placement behind the Service and
#   the proxies), extra_process_tiers, extra_sockets_per_supervisor (counted: the
#   proxy's established sockets with HELD connections open, over HELD).
# The gateway side: gw-1 and gw-2 (127.0.1.1, .2) each run the ringsteer gateway on
# :7000, an iperf3 server on :5201 and a sockperf server on :11111, on the gateway's
# address; the Service and each proxy front all three ports, with the contender's
# own balancing.  On the data ports the balancing has one endpoint, gw-1 (the
# Service: numgen random over two entries both gw-1; the proxies: a one-server
# backend): iperf3 makes a control and a data connection that must meet the same
# server, which random or leastconn balancing over two would split.  The
# per-packet path (DNAT and conntrack, or the proxy's two sockets and copy) is the
# same whichever endpoint is chosen.  The supervisor side binds 127.0.2.1.
# QUICK=1: 256 MiB through iperf3, about 300 sockperf round trips, 100 connects per contender.
# Root only (own network namespaces, tests/cluster/lib.sh).
set -u
out=${1:?usage: datapath.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
export RS_BUILD=${RS_BUILD:-$here/../../build}
quick=${QUICK:-0}
if [ "$quick" = 1 ]; then
	iperf_s=1 iperf_len=(-n 256M) sp_args=(-t 1 --mps 600) connects=100 held=10 steer_hellos=50 steer_connects=200
else
	iperf_s=10 iperf_len=(-t 10) sp_args=(-t 10 --mps max) connects=1000 held=10 steer_hellos=400 steer_connects=20000
fi
for t in iperf3 sockperf haproxy nginx jq; do
	command -v "$t" >/dev/null || { echo "datapath: $t missing (make compare-datapath-deps compare-deps)" >&2; exit 1; }
done
[ -x "$RS_BUILD/bench/accept_time" ] || { echo "datapath: $RS_BUILD/bench/accept_time missing (make all $RS_BUILD/bench/accept_time)" >&2; exit 1; }
tsv="$out/datapath.tsv"
raw="$out/datapath.raw"
: >"$raw"

# ---- part 1: one namespace, all but ringsteer-kernel ---------------------------
# Part 2, ringsteer-kernel on the pod topology (bench/connect_steer.sh's own
# namespaces): after part 1, or in QUICK while part 1 runs.
steer() {
	local b
	for b in kernel/kt_tool ringsteer-agent bench/steer_exec; do
		[ -x "$RS_BUILD/$b" ] || { echo "no $RS_BUILD/$b" >"$out/connect_steer.err"; return 1; }
	done
	"$here/../connect_steer.sh" "$RS_BUILD" "$steer_hellos" "$steer_connects" >"$out/connect_steer.out" 2>"$out/connect_steer.err" &&
		"$here/datapath_pods.sh" "$out" >"$out/datapath_pods.out" 2>&1
}
steer_pid=""
if [ "$quick" = 1 ]; then
	steer &
	steer_pid=$!
fi
(
# shellcheck source=../../tests/cluster/lib.sh
. "$here/../../tests/cluster/lib.sh"
IPERF_PORT=5201 SP_PORT=11111
SRC=127.0.2.1
declare -A FRONT=([direct]=127.0.1.1 [service]=$RS_SVC_ADDR [haproxy-leastconn-1]=127.0.0.101
	[haproxy-bounded-1]=127.0.0.102 [nginx-hash]=127.0.0.103 [ringsteer-redirect]=127.0.1.1)
PROXIES="haproxy-leastconn-1 haproxy-bounded-1 nginx-hash"
declare -A PROXY_PID=()
put() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$raw"; }
ns() { nsenter --net="/run/netns/$RS_NS" "$@"; }
listening() { ns ss -ltnH "src $1 and sport = :$2" | grep -q .; }

RS_GW_ARGS="--no-placement"
cluster_up --gateways 2
# The data servers on each gateway's address, and the Service over their ports
# too (the same numgen random DNAT as the gateways' port, its own table).
for g in 1 2; do
	a=$(gw_addr "$g")
	ns iperf3 -s -B "$a" -p "$IPERF_PORT" >"$RS_DIR/log/iperf3-$g.out" 2>&1 &
	disown "$!"
	ns sockperf sr --tcp -i "$a" -p "$SP_PORT" >"$RS_DIR/log/sockperf-$g.out" 2>&1 &
	disown "$!"
	await "iperf3 on gw-$g" 10 listening "$a" "$IPERF_PORT"
	await "sockperf on gw-$g" 10 listening "$a" "$SP_PORT"
done
ns nft -f - <<EOF || fail "nft: the data ports' Service"
table ip rs_cmp {
	chain ep_1 { meta l4proto tcp dnat to 127.0.1.1; }
	chain svc { numgen random mod 2 vmap { 0 : goto ep_1, 1 : goto ep_1 }; }
	chain services { ip daddr $RS_SVC_ADDR tcp dport { $IPERF_PORT, $SP_PORT } goto svc; }
	chain output { type nat hook output priority -100; policy accept; jump services; }
}
EOF

# The proxies: one replica each, a frontend per port on its own address.
hap_cfg() { # ADDR BALANCE...
	local addr=$1 p
	shift
	printf 'global\n\tmaxconn 4000\n\tpidfile %s/haproxy-%s.pid\ndefaults\n\tmode tcp\n\ttimeout connect 5s\n\ttimeout client 1h\n\ttimeout server 1h\n' "$RS_DIR" "$addr"
	for p in "$RS_GW_LISTEN_PORT" "$IPERF_PORT" "$SP_PORT"; do
		printf 'listen p%s\n\tbind %s:%s\n' "$p" "$addr" "$p"
		printf '\t%s\n' "$@"
		printf '\tserver gw-1 127.0.1.1:%s\n' "$p"
		[ "$p" != "$RS_GW_LISTEN_PORT" ] || printf '\tserver gw-2 127.0.1.2:%s\n' "$p"
	done
}
nginx_cfg() { # ADDR
	local p
	printf 'load_module /usr/lib/nginx/modules/ngx_stream_module.so;\ndaemon off;\nmaster_process on;\nworker_processes 1;\n'
	printf 'pid %s/nginx.pid;\nerror_log %s/log/nginx.err;\nevents { worker_connections 4000; }\nstream {\n' "$RS_DIR" "$RS_DIR"
	for p in "$RS_GW_LISTEN_PORT" "$IPERF_PORT" "$SP_PORT"; do
		printf '\tupstream u%s { hash $remote_addr consistent; server 127.0.1.1:%s;%s }\n' "$p" "$p" \
			"$([ "$p" != "$RS_GW_LISTEN_PORT" ] || echo " server 127.0.1.2:$p;")"
		printf '\tserver { listen %s:%s; proxy_pass u%s; proxy_timeout 1h; }\n' "$1" "$p" "$p"
	done
	printf '}\n'
}
hap_cfg 127.0.0.101 "balance leastconn" >"$RS_DIR/haproxy-leastconn.cfg"
hap_cfg 127.0.0.102 "balance source" "hash-type consistent" "hash-balance-factor 125" >"$RS_DIR/haproxy-bounded.cfg"
nginx_cfg 127.0.0.103 >"$RS_DIR/nginx.conf"
ns haproxy -W -f "$RS_DIR/haproxy-leastconn.cfg" >"$RS_DIR/log/haproxy-leastconn.out" 2>&1 &
PROXY_PID[haproxy-leastconn-1]=$!
disown "$!"
ns haproxy -W -f "$RS_DIR/haproxy-bounded.cfg" >"$RS_DIR/log/haproxy-bounded.out" 2>&1 &
PROXY_PID[haproxy-bounded-1]=$!
disown "$!"
ns nginx -p "$RS_DIR" -c "$RS_DIR/nginx.conf" >"$RS_DIR/log/nginx.out" 2>&1 &
PROXY_PID[nginx-hash]=$!
disown "$!"
for c in $PROXIES; do
	for p in "$RS_GW_LISTEN_PORT" "$IPERF_PORT" "$SP_PORT"; do
		await "$c on ${FRONT[$c]}:$p" 10 listening "${FRONT[$c]}" "$p"
	done
done

# Data figures, every contender in the same run.
data() { # CONTENDER: iperf3, then sockperf
	local c=$1 a=${FRONT[$1]} bps
	bps=$(ns timeout $((iperf_s + 20)) iperf3 -c "$a" -p "$IPERF_PORT" -B "$SRC" "${iperf_len[@]}" --connect-timeout 3000 -J | jq -e '.end.sum_received.bits_per_second') ||
		fail "iperf3 through $c ($a)"
	put "$c" throughput_gbps "$(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 1e9 }')"
	sockperf_run "$c" || fail "sockperf through $c ($a): $(cat "$RS_DIR/sp.$c")"
	rtt "$c"
}
sockperf_run() { ns timeout 60 sockperf pp --tcp -i "${FRONT[$1]}" -p "$SP_PORT" --client_ip "$SRC" "${sp_args[@]}" --full-rtt >"$RS_DIR/sp.$1" 2>&1; }
rtt() { # CONTENDER: the figures of its sockperf run
	local f="$RS_DIR/sp.$1"
	put "$1" rtt_p50_us "$(awk '/percentile 50.000/ { print $NF }' "$f")"
	put "$1" rtt_avg_us "$(sed -n 's/.*avg-rtt=\([0-9.]*\).*/\1/p' "$f")"
	put "$1" rtt_samples "$(sed -n 's/.*Total \([0-9]*\) observations.*/\1/p' "$f")"
}
accept() { # CONTENDER
	local r
	r=$(ns "$RS_BUILD/bench/accept_time" --all "${FRONT_7000[$1]}" "$RS_SECRET" "$SRC" "$connects") ||
		fail "accept_time through $1"
	put "$1" accept_p50_us "$(printf '%s\n' "$r" | awk '$1 == "all_median_us" { print $2 }')"
	put "$1" accept_p99_us "$(printf '%s\n' "$r" | awk '$1 == "all_p99_us" { print $2 }')"
	put "$1" accept_redirected "$(printf '%s\n' "$r" | awk '$1 == "redirected" { print $2 }')"
}
# Sockets per supervisor: HELD idle connections open through the front at once
# (HELD is 10 in both forms: the sockperf server holds a dozen or so at once)
# (to the sockperf server, which keeps idle connections; a gateway closes one
# that sends no HELLO), the front's own established TCP sockets counted (ss -p),
# over HELD.
descendants() { local p; echo "$1"; for p in $(ps -o pid= --ppid "$1"); do descendants "$p"; done; }
established_to() { [ "$(ns ss -tnH state established "dst $1:$SP_PORT" | wc -l)" -ge "$2" ]; }
sockets() { # CONTENDER
	local c=$1 pid=${PROXY_PID[$1]:-} n=0 pids fifo="$RS_DIR/hold.$1" holder
	if [ -n "$pid" ]; then
		# the proxy's whole tree (the shell behind `ns ... &`, its master, workers)
		pids=$(descendants "$pid" | tr -s ' \n' '|')
		pids=${pids#|} pids=${pids%|}
		mkfifo "$fifo"
		ns python3 -c 'import socket, sys
a, n, p, fifo = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
held = [socket.create_connection((a, p), timeout=5) for _ in range(n)]
open(fifo).read()' "${FRONT[$c]}" "$held" "$SP_PORT" "$fifo" &
		holder=$!
		await "$held connections through $c" 10 established_to "${FRONT[$c]}" "$held"
		# and the proxy's own HELD upstream connections (the sockperf server's
		# backlog is short: a SYN it drops is retried a second later)
		await "$held connections from $c to gw-1" 20 established_to 127.0.1.1 "$held"
		n=$(ns ss -tnpH state established | grep -cE "pid=($pids),")
		echo >"$fifo"
		await "the held connections through $c closed" 10 rs_gone "$holder"
	fi
	put "$c" extra_sockets_per_supervisor "$(awk -v n="$n" -v h="$held" 'BEGIN { printf "%.2f", n / h }')"
	case " $PROXIES " in *" $c "*) put "$c" extra_process_tiers 1 ;; *) put "$c" extra_process_tiers 0 ;; esac
}
declare -A FRONT_7000=([direct]=127.0.1.1:7000 [service]=$RS_SERVICE [haproxy-leastconn-1]=127.0.0.101:7000
	[haproxy-bounded-1]=127.0.0.102:7000 [nginx-hash]=127.0.0.103:7000 [ringsteer-redirect]=$RS_SERVICE)
for c in direct service $PROXIES ringsteer-redirect; do
	rs_log "datapath: $c"
	data "$c"
	[ "$c" = ringsteer-redirect ] || accept "$c"
	sockets "$c"
done
# ringsteer-redirect's connect-to-ACCEPT: the gateways with placement on (no
# --no-placement), connecting through the Service and following the redirect.
RS_GW_ARGS=""
gw_restart 1
gw_restart 2
accept ringsteer-redirect
)
rc=$?
if [ "$rc" != 0 ]; then # 77: skipped (not root, no network namespaces)
	[ -z "$steer_pid" ] || wait "$steer_pid"
	exit "$rc"
fi

# ---- part 2: ringsteer-kernel (started before part 1 in QUICK) ------------------------
kernel_ok=0
if [ "$quick" = 1 ]; then
	wait "$steer_pid" && kernel_ok=1
else
	steer && kernel_ok=1
fi
if [ "$kernel_ok" = 1 ]; then
	# What a supervisor pays: its registration with the node agent, then the
	# steered connect-to-ACCEPT ("registration + steered"); the steered part
	# alone is kept too.
	read -r p50 p99 < <(awk '/^  registration \+ steered/ { print $(NF - 1), $NF }' "$out/connect_steer.out")
	read -r s50 s99 < <(awk '/^  steered \(registered first\)/ { print $(NF - 1), $NF }' "$out/connect_steer.out")
	printf 'ringsteer-kernel\t%s\t%s\n' accept_p50_us "$p50" accept_p99_us "$p99" \
		accept_steered_only_p50_us "$s50" accept_steered_only_p99_us "$s99" accept_redirected 0 >>"$raw"
else
	echo "datapath: ringsteer-kernel: bench/connect_steer.sh did not run (see $out/connect_steer.err); its connect-to-ACCEPT is NA" >&2
	printf 'ringsteer-kernel\taccept_p50_us\tNA\nringsteer-kernel\taccept_p99_us\tNA\n' >>"$raw"
fi
# ringsteer-kernel's data figures, measured on its own path by
# datapath_pods.sh (iperf3 and sockperf as a registered member, every connect
# rewritten by connect4), beside the pod topology's own direct and Service
# paths (pods-direct is their baseline, as direct is part 1's).
if [ "$kernel_ok" = 1 ] && [ -s "$out/datapath_pods.tsv" ]; then
	cat "$out/datapath_pods.tsv" >>"$raw"
else
	echo "datapath: ringsteer-kernel: datapath_pods.sh did not run (see $out/datapath_pods.out); its data figures are NA" >&2
	printf 'ringsteer-kernel\tthroughput_gbps\tNA\nringsteer-kernel\trtt_p50_us\tNA\n' >>"$raw"
fi
printf 'ringsteer-kernel\textra_sockets_per_supervisor\t0.00\nringsteer-kernel\textra_process_tiers\t0\n' >>"$raw"

# Ratios over direct, then the table.
awk -F'\t' -v OFS='\t' '
	{ v[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } rows[++m] = $0 }
	END {
		for (i = 1; i <= m; i++) print rows[i]
		for (i = 1; i <= n; i++) {
			c = order[i]
			# each over the direct path of its own topology
			b = (c == "ringsteer-kernel" || c ~ /^pods-/) ? "pods-direct" : "direct"
			if (v[c, "throughput_gbps"] !~ /^[0-9.]+$/ || v[b, "throughput_gbps"] + 0 == 0) printf "%s\tthroughput_ratio\tNA\n", c
			else printf "%s\tthroughput_ratio\t%.3f\n", c, v[c, "throughput_gbps"] / v[b, "throughput_gbps"]
			if (v[c, "rtt_p50_us"] !~ /^[0-9.]+$/ || v[b, "rtt_p50_us"] + 0 == 0) printf "%s\trtt_ratio\tNA\n", c
			else printf "%s\trtt_ratio\t%.3f\n", c, v[c, "rtt_p50_us"] / v[b, "rtt_p50_us"]
		}
	}' "$raw" >"$tsv"
# Every contender, every figure, a number (what `make compare-quick` relies on).
missing=$(awk -F'\t' -v want="throughput_gbps throughput_ratio rtt_p50_us rtt_avg_us rtt_ratio accept_p50_us accept_p99_us extra_process_tiers extra_sockets_per_supervisor" '
	$3 ~ /^[0-9]+(\.[0-9]+)?$/ { ok[$1, $2] = 1 }
	END {
		n = split("direct service haproxy-leastconn-1 haproxy-bounded-1 nginx-hash ringsteer-redirect ringsteer-kernel", c, " ")
		m = split(want, w, " ")
		for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if (!((c[i], w[j]) in ok)) printf " %s/%s", c[i], w[j]
	}' "$tsv")
missing+=$(awk -F'\t' -v want="throughput_gbps throughput_ratio rtt_p50_us rtt_avg_us rtt_ratio service_dnat_connects" '
	$3 ~ /^[0-9]+(\.[0-9]+)?$/ { ok[$1, $2] = 1 }
	END {
		n = split("pods-direct pods-service ringsteer-kernel", c, " ")
		m = split(want, w, " ")
		for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if (!((c[i], w[j]) in ok)) printf " %s/%s", c[i], w[j]
	}' "$tsv")
[ -z "$missing" ] || { echo "datapath: missing figures:$missing (in $tsv)" >&2; exit 1; }
echo "datapath: wrote $tsv"
