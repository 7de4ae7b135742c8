# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/cluster/lib.sh - a test cluster in a private network namespace.
#
# Source it from a bash test, then:
#
#   cluster_up [--gateways N]     netns, Service, store, secret; starts gateways 1..N
#   gw_start N [ARGS...]          gateway gw-N on 127.0.1.N (listen :7000, peer :7001,
#                                 metrics :9100); ARGS are extra gateway flags, kept
#                                 for gw_restart; waits for /readyz, then joins the
#                                 Service
#   gw_stop N / gw_kill N / gw_restart N   SIGTERM / SIGKILL / stop then start
#   svc_update [N...]             rewrite the Service's DNAT over gateways N... (default:
#                                 every running gateway)
#   sup_start M [SANDBOXES [ARGS...]]  supervisor sup-M binding sup_addr M (127.0.2.M for
#                                 M <= 250, then 127.0.3.(M - 250): 500 at most), token
#                                 minted with ringsteerctl token (ttl RS_SUP_TOKEN_TTL s)
#   sup_stop M / sup_kill M / sup_restart M
#   sup_set_sandboxes M K         new count in its --sandboxes-file, then SIGHUP
#   sup_blip M                    kill its TCP connections (ss -K) inside the netns
#   sups_blip_all                 kill every supervisor's TCP connections at once
#   where M                       prints the gateway id (gw-N) sup-M is attached to
#   count_on N                    supervisors attached to gw-N (from the store)
#   metric N NAME [LABELMATCH]    value of a metric on gw-N's /metrics (summed over
#                                 the lines whose labels contain LABELMATCH; 0 if none)
#   metric_of NAME [LABELMATCH]   the same over Prometheus text on stdin (any /metrics)
#   await "DESC" TIMEOUT_S CMD... poll CMD every 50 ms; on timeout print DESC and the
#                                 cluster state, and fail the test
#   hold "DESC" SECONDS CMD...    CMD must keep succeeding for SECONDS (polled), else fail
#   fail "MSG"                    print MSG and the cluster state, exit 1
#   cluster_down                  kill everything, delete the netns and the temp dir
#                                 (an EXIT trap installed by cluster_up)
#
# Member ids are sup-M, gateway ids gw-N.  Rules for the network:
# ../shared/notes/test-network.md: everything lives in its own namespace, the
# Service is nftables DNAT with `numgen random mod N` as kube-proxy makes it.
# Several nodes (namespaces on a bridge): source tests/cluster/nodes.sh after
# this file; it redefines the topology hooks (gw_ns, sup_ns, gw_addr, ...).
# Pods (a netns and a cgroup per gateway and supervisor, kube-proxy's Service
# on each node): tests/cluster/pods.sh, the same way.  The SIGKILL scenario
# (a gateway killed, its supervisors re-placed, nobody else moved):
# tests/cluster/sigkill.sh, sourced after this file.
#
# Environment:
#   RS_BUILD            directory of the binaries (default: build)
#   RS_HEARTBEAT_MS     gateway --heartbeat (200)    RS_TTL_MS  gateway --ttl (1000)
#   RS_GW_ARGS          extra flags for every gateway (word-split)
#   RS_SUP_ARGS         extra flags for every supervisor (word-split)
#   RS_SUP_TOKEN_TTL    lifetime in seconds of the tokens sup_start mints (3600)
#   RS_GW_EXIT_S        gw_stop / gw_kill wait this long for the gateway to exit (10);
#                       a drain of many supervisors takes up to --drain-budget (25 s)
#   RS_SUP_SERVICE      where supervisors dial (default the Service, 127.0.0.100:7000)
#   RS_ARTIFACTS        if set, cluster_down copies the logs and the store there
#   RS_KEEP=1           cluster_down keeps the temp dir (and says where)
#   (set by cluster_up) RS_DIR the cluster's files; RS_SOCK a short directory
#                       under /tmp for its UNIX sockets, gone at cluster_down
#   RS_NS_PREFIX        namespace names are PREFIX-1, PREFIX-2, ... (default rs-PID)
#   RS_VALGRIND=1       gateways and the agent run under valgrind (memcheck); any
#                       report fails the test at cluster_down
#   RS_STORE_DIR        where the SQLite store lives (default: RS_DIR); the fault
#                       matrix puts it on a small tmpfs
#   RS_PG_DIR           a PostgreSQL server's directory (tests/pg/pg_server.sh start):
#                       the store is a fresh database there instead of SQLite
#   RS_TLS=1            TLS 1.3: a CA made at cluster_up (tests/tls/make_certs.sh,
#                       $RS_DIR/tls), gw-N's certificate naming gw-N and the
#                       Service name ringsteer.test; RS_TLS_MTLS=1 adds client
#                       certificates naming sup-M.  A certificate already in
#                       $RS_DIR/tls (gw-N.crt, sup-M.crt) is used as it is, so a
#                       test can issue a wrong one first.  Default: plaintext,
#                       --insecure, targets allowed in RS_REDIRECT_ALLOW (default
#                       "127.0.0.0/8 198.18.0.0/15", one --redirect-allow each)

RS_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RS_BUILD=${RS_BUILD:-build}
# The slow clocks (heartbeat 1 s, TTL 5 s), for runs where a loop may stall
# longer than the fast ones allow: under valgrind (RS_VALGRIND=1), where a
# HELLO can take longer than 3 x 200 ms to decide and the idle timeout would
# close a link just accepted; and with RS_CLOCKS=slow, for 200 supervisors on
# two cores (t_20, the soak), where a burst of placements holds the loops
# past a 1 s TTL.  Tests state their deadlines in terms of these.
if [ "${RS_VALGRIND:-0}" = 1 ] || [ "${RS_CLOCKS:-}" = slow ]; then
	RS_HEARTBEAT_MS=${RS_HEARTBEAT_MS:-1000}
	RS_TTL_MS=${RS_TTL_MS:-5000}
fi
RS_HEARTBEAT_MS=${RS_HEARTBEAT_MS:-200}
RS_TTL_MS=${RS_TTL_MS:-1000}
RS_GW_ARGS=${RS_GW_ARGS:-}
RS_SUP_ARGS=${RS_SUP_ARGS:-}
RS_SUP_TOKEN_TTL=${RS_SUP_TOKEN_TTL:-3600}
RS_GW_EXIT_S=${RS_GW_EXIT_S:-10}

RS_SVC_ADDR=127.0.0.100
RS_SVC_PORT=7000
RS_SERVICE=$RS_SVC_ADDR:$RS_SVC_PORT
RS_GW_LISTEN_PORT=7000
RS_GW_PEER_PORT=7001
RS_GW_METRICS_PORT=9100

RS_NS=""            # network namespace name
RS_DIR=""           # temp dir: store, secret, tokens, logs
RS_STORE=""         # sqlite:$RS_DIR/ringsteer.db
RS_SECRET=""        # $RS_DIR/secret
RS_ERR_FD=2         # the test's stderr, saved (await silences its command)
declare -A RS_GW_PID=() RS_GW_XARGS=() RS_GW_STARTS=()
declare -A RS_SUP_PID=() RS_SUP_XARGS=() RS_SUP_STARTS=() RS_SUP_BOXES=()
declare -a RS_SVC_SET=()
RS_CLUSTER_SEQ=${RS_CLUSTER_SEQ:-0}

# --- small helpers -----------------------------------------------------------

rs_log() { printf '%s %s\n' "$(date +%H:%M:%S.%3N)" "$*" >&"$RS_ERR_FD"; }
rs_now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
rs_ns() { ip netns exec "$RS_NS" "$@"; }
gw_id() { echo "gw-$1"; }
gw_addr() { echo "127.0.1.$1"; }
# 127.0.2.1..250 for sup-1..250, then 127.0.3.1..250 (127.0.2.0/23 holds them all).
sup_addr() { echo "127.0.$((2 + ($1 - 1) / 250)).$((($1 - 1) % 250 + 1))"; }
# Topology hooks: tests/cluster/nodes.sh redefines these (with gw_addr,
# sup_addr and svc_update) to spread the cluster over node namespaces.
gw_ns() { echo "$RS_NS"; }     # the namespace gw-N runs in
sup_ns() { echo "$RS_NS"; }    # the namespace sup-M runs in
gw_node_args() { :; }          # extra flags for gw-N from its node
sup_node_args() { :; }         # extra flags for sup-M from its node
sup_prepare() { :; }           # sup_prepare M...: what sup-M needs before its first
                               # start (pods.sh: its pod), made by sups_start first
# sups_blip_all: every supervisor's established TCP connections destroyed at
# once (ss -K, both ends): here every one of them has its source in
# 127.0.2.0/23 and lives in the cluster's namespace (pods.sh: in each pod's).
sups_blip_all() { rs_ns ss -K -t -n state established "( src 127.0.2.0/23 or dst 127.0.2.0/23 )" >/dev/null 2>&1; }
# gw_exec N CMD... / sup_exec M CMD...: run CMD as gw-N's / sup-M's process.
# gw_start and sup_start call them with &, and they exec, so that $! is the
# daemon's own pid (tests/cluster/pods.sh adds a cgroup before the exec).
gw_exec() { local n=$1; shift; exec ip netns exec "$(gw_ns "$n")" "$@"; }
sup_exec() { local m=$1; shift; exec ip netns exec "$(sup_ns "$m")" "$@"; }
rs_all_ns() { echo "$RS_NS"; } # the namespaces cluster_down empties and deletes
rs_down_hook() { :; }          # run by cluster_down before it kills processes
gw_log() { echo "$RS_DIR/log/gw-$1.${2:-${RS_GW_STARTS[$1]:-1}}.log"; }
sup_log() { echo "$RS_DIR/log/sup-$1.${2:-${RS_SUP_STARTS[$1]:-1}}.log"; }
ctl() { "$RS_BUILD/ringsteerctl" "$@"; }
# rs_slow S: a start-up deadline of S seconds, times 6 under valgrind.
rs_slow() { if [ "${RS_VALGRIND:-0}" = 1 ]; then echo $(($1 * 6)); else echo "$1"; fi; }
# rs_valgrind_gw_args: under valgrind a store call takes many times longer,
# and one that outlasts --store-timeout (1 s) is taken for a store outage
# (arrivals accepted degraded, above the cap): give it 10 s there.  Tests
# that set --store-timeout in RS_GW_ARGS still win (later flags override).
# Transport flags (RS_TLS, above).
RS_TLS_NAME=ringsteer.test
rs_tls_issue() { # NAME SAN: a leaf certificate from the cluster's CA, unless one is there
	[ -s "$RS_DIR/tls/$1.crt" ] || "$RS_LIB_DIR/../tls/make_certs.sh" "$RS_DIR/tls" issue "$1" "$2" ||
		fail "make_certs.sh issue $1"
}
rs_gw_transport_args() {
	if [ "${RS_TLS:-0}" != 1 ]; then echo "--insecure"; return; fi
	rs_tls_issue "gw-$1" "DNS:gw-$1,DNS:$RS_TLS_NAME"
	echo "--tls-cert $RS_DIR/tls/gw-$1.crt --tls-key $RS_DIR/tls/gw-$1.key" \
		"$([ "${RS_TLS_MTLS:-0}" != 1 ] || echo "--tls-ca $RS_DIR/tls/ca.crt")"
}
rs_sup_transport_args() {
	if [ "${RS_TLS:-0}" != 1 ]; then
		local net
		echo "--insecure"
		for net in ${RS_REDIRECT_ALLOW:-127.0.0.0/8 198.18.0.0/15}; do echo "--redirect-allow $net"; done
		return
	fi
	# RS_SUP_SERVER_NAME= (empty): no --tls-server-name, the --service name is expected.
	local name=${RS_SUP_SERVER_NAME-$RS_TLS_NAME}
	echo "--tls-ca $RS_DIR/tls/ca.crt${name:+ --tls-server-name $name}"
	if [ "${RS_TLS_MTLS:-0}" = 1 ]; then
		rs_tls_issue "sup-$1" "DNS:sup-$1"
		echo "--tls-cert $RS_DIR/tls/sup-$1.crt --tls-key $RS_DIR/tls/sup-$1.key"
	fi
}

rs_valgrind_gw_args() { [ "${RS_VALGRIND:-0}" != 1 ] || echo "--store-timeout 10000"; }
# rs_valgrind LOG: the command prefix that runs a daemon under valgrind
# (memcheck; definite leaks count as errors) when RS_VALGRIND=1, else
# nothing.  cluster_down fails the test on any error in a LOG.
rs_valgrind() {
	[ "${RS_VALGRIND:-0}" = 1 ] || return 0
	echo valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
		--errors-for-leak-kinds=definite --suppressions="$RS_LIB_DIR/valgrind.supp" --log-file="$1"
}

# Exit 77 (skipped) unless this can make a network namespace.
rs_require_netns() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "skip: not root" >&2
		exit 77
	fi
	if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
		echo "skip: ip netns unavailable" >&2
		exit 77
	fi
	local t
	for t in nft ss jq curl; do
		command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
	done
}

# --- state dump, failure -----------------------------------------------------

cluster_state() {
	{
		echo "---- cluster state ($RS_NS, $RS_DIR) at $(date +%H:%M:%S.%3N)"
		echo "-- service endpoints: ${RS_SVC_SET[*]:-none}"
		echo "-- gateways (store):"
		ctl gateways --store "$RS_STORE" --all 2>&1 | sed 's/^/   /'
		echo "-- sessions (store):"
		ctl sessions --store "$RS_STORE" --all 2>&1 | sed 's/^/   /'
		local f
		for f in "$RS_DIR"/log/*.log; do
			[ -e "$f" ] || continue
			echo "-- ${f##*/} (last 15 lines):"
			tail -n 15 "$f" | sed 's/^/   /'
		done
		echo "----"
	} >&"$RS_ERR_FD" 2>&1
}

fail() {
	rs_log "FAIL: $*"
	[ -n "$RS_DIR" ] && [ -d "$RS_DIR" ] && cluster_state
	exit 1
}

# await "DESC" TIMEOUT_S CMD...: CMD (a command or function, run in this shell
# with stdout and stderr silenced) is polled every 50 ms until it succeeds.
await() {
	local desc=$1 timeout=$2
	shift 2
	local deadline now
	deadline=$(($(rs_now_ms) + $(awk -v t="$timeout" 'BEGIN { printf "%d", t * 1000 }')))
	while :; do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		now=$(rs_now_ms)
		if [ "$now" -ge "$deadline" ]; then
			fail "timed out after ${timeout}s awaiting: $desc"
		fi
		sleep 0.05
	done
}

# hold "DESC" SECONDS CMD...: CMD must succeed at every poll for SECONDS.
hold() {
	local desc=$1 secs=$2
	shift 2
	local deadline
	deadline=$(($(rs_now_ms) + $(awk -v t="$secs" 'BEGIN { printf "%d", t * 1000 }')))
	while [ "$(rs_now_ms)" -lt "$deadline" ]; do
		"$@" >/dev/null 2>&1 || fail "did not hold for ${secs}s: $desc"
		sleep 0.05
	done
}

# --- cluster -----------------------------------------------------------------

cluster_up() {
	local n=0
	while [ $# -gt 0 ]; do
		case $1 in
		--gateways) n=$2; shift 2 ;;
		*) echo "cluster_up: unknown argument $1" >&2; exit 2 ;;
		esac
	done
	rs_require_netns
	RS_BUILD=$(cd "$RS_BUILD" && pwd) || exit 1
	exec {RS_ERR_FD}>&2

	RS_CLUSTER_SEQ=$((RS_CLUSTER_SEQ + 1))
	RS_GW_PID=() RS_GW_XARGS=() RS_GW_STARTS=()
	RS_SUP_PID=() RS_SUP_XARGS=() RS_SUP_STARTS=() RS_SUP_BOXES=()
	RS_SVC_SET=()
	RS_NAMES_DIR=""
	RS_NS="${RS_NS_PREFIX:-rs-$$}-$RS_CLUSTER_SEQ"
	RS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ringsteer-cluster.XXXXXX")
	# UNIX sockets get a short directory of their own: a sun_path holds 107
	# bytes, and RS_DIR sits under the test's artifacts, as deep as the
	# checkout (CI's clone plus build/image-bin/acceptance-image/... passed it).
	RS_SOCK=$(mktemp -d /tmp/rs-sock.XXXXXX)
	mkdir -p "$RS_DIR/log"
	RS_STORE="sqlite:${RS_STORE_DIR:-$RS_DIR}/ringsteer.db"
	if [ -n "${RS_PG_DIR:-}" ]; then
		# A fresh database on the PostgreSQL server tests/pg/pg_server.sh runs.
		RS_STORE=$("$RS_LIB_DIR/../pg/pg_server.sh" newdb "$RS_PG_DIR" "rs_$$_${RS_CLUSTER_SEQ}_$RANDOM") ||
			{ rm -rf "$RS_DIR" "$RS_SOCK"; echo "cluster_up: no database on the PostgreSQL server in $RS_PG_DIR" >&2; exit 1; }
	fi
	RS_SECRET="$RS_DIR/secret"
	trap 'cluster_down; exit $?' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	(umask 077 && head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n' >"$RS_SECRET")
	if [ "${RS_TLS:-0}" = 1 ]; then
		"$RS_LIB_DIR/../tls/make_certs.sh" "$RS_DIR/tls" || fail "make_certs.sh: no CA"
	fi
	if ! ip netns add "$RS_NS"; then
		rm -rf "$RS_DIR" "$RS_SOCK"
		RS_NS="" RS_DIR="" RS_SOCK=""
		echo "skip: ip netns unavailable (ip netns add failed)" >&2
		exit 77
	fi
	ip -n "$RS_NS" link set lo up || fail "lo up in $RS_NS"
	svc_update
	rs_log "cluster $RS_NS up in $RS_DIR"

	local i
	for ((i = 1; i <= n; i++)); do
		gw_start "$i"
	done
}

cluster_down() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "$RS_NS" ] || return "$rc"
	# A daemon that exited by itself, or a sanitizer report in any log, fails
	# the test even when its assertions passed.
	local k bad=""
	for k in "${!RS_GW_PID[@]}"; do
		[ -n "${RS_GW_PID[$k]}" ] && rs_gone "${RS_GW_PID[$k]}" && bad+=" gw-$k exited by itself;"
	done
	for k in "${!RS_SUP_PID[@]}"; do
		[ -n "${RS_SUP_PID[$k]}" ] && rs_gone "${RS_SUP_PID[$k]}" && bad+=" sup-$k exited by itself;"
	done
	# Valgrind's errors start "==PID== " and a capital; its own notes are
	# "==PID== Warning: ..." or "--PID-- ..." (an eBPF command or an ioctl
	# it does not model).
	local vg
	vg=$(for f in "$RS_DIR"/log/*.vg; do
		[ -f "$f" ] && grep -E '^==[0-9]+== [A-Z]' "$f" | grep -qvE '^==[0-9]+== Warning: ' && basename "$f"
	done | tr '\n' ' ')
	[ -z "$vg" ] || bad+=" valgrind report in $vg;"
	if grep -lE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$RS_DIR"/log/*.log >/dev/null 2>&1; then
		bad+=" sanitizer report in $(grep -lE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$RS_DIR"/log/*.log | xargs -n1 basename | tr '\n' ' ');"
	fi
	if [ -n "$bad" ]; then
		rs_log "FAIL:$bad"
		[ "$rc" -ne 0 ] || cluster_state
		[ "$rc" -ne 0 ] || rc=1
	fi
	[ "${RS_AGENT:-0}" = 1 ] && rs_agent_cleanup
	rs_down_hook
	local pid ns pids=()
	for pid in "${RS_SUP_PID[@]}" "${RS_GW_PID[@]}"; do
		[ -n "$pid" ] && pids+=("$pid")
	done
	# Everything else still inside our namespaces was started by this test too.
	for ns in $(rs_all_ns); do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			pids+=("$pid")
		done
	done
	for pid in "${pids[@]}"; do
		kill -KILL "$pid" 2>/dev/null
	done
	# Bounded wait (5 s) for them to be gone before the namespace goes.
	local i
	for ((i = 0; i < 100; i++)); do
		for pid in "${pids[@]}"; do
			rs_gone "$pid" || break
		done
		rs_gone "$pid" && break
		sleep 0.05
	done
	for ns in $(rs_all_ns); do
		ip netns del "$ns" 2>/dev/null
	done
	if [ -n "${RS_ARTIFACTS:-}" ] && [ -d "$RS_DIR" ]; then
		mkdir -p "$RS_ARTIFACTS"
		cp -r "$RS_DIR/log" "$RS_ARTIFACTS/" 2>/dev/null
		cp "$RS_DIR/ringsteer.db" "$RS_ARTIFACTS/" 2>/dev/null
	fi
	rm -rf "$RS_SOCK"
	if [ "${RS_KEEP:-0}" = 1 ]; then
		rs_log "kept $RS_DIR"
	else
		rm -rf "$RS_DIR"
	fi
	RS_NS=""
	return "$rc"
}

# --- names: the Service by its DNS name ----------------------------------------

# names_up LINE...: the cluster's own name service (hosts file LINEs, a
# resolv.conf whose server refuses at once, nsswitch "files dns") in
# RS_DIR/names; supervisors started from now on look names up there
# (with_names.sh), never in the machine's files.
names_up() {
	RS_NAMES_DIR="$RS_DIR/names"
	mkdir -p "$RS_NAMES_DIR"
	printf 'nameserver 127.0.0.1\noptions attempts:1 timeout:1\n' >"$RS_NAMES_DIR/resolv.conf"
	printf 'hosts: files dns\n' >"$RS_NAMES_DIR/nsswitch.conf"
	names_set "$@"
}
# names_set LINE...: rewrites the hosts file in place (the bind mounts hold
# its inode), e.g. names_set "127.0.0.100 ringsteer.test".
names_set() {
	[ -n "$RS_NAMES_DIR" ] || fail "names_set before names_up"
	printf '%s\n' "127.0.0.1 localhost" "$@" >"$RS_NAMES_DIR/hosts"
}
# rs_names_prefix: the command prefix that runs a daemon with the names (none before names_up).
rs_names_prefix() { [ -z "${RS_NAMES_DIR:-}" ] || echo "$RS_LIB_DIR/with_names.sh $RS_NAMES_DIR"; }

# --- the Service (kube-proxy's nftables mode, reduced) -----------------------

# svc_update [N...]: the Service 127.0.0.100:7000 DNATs each new connection to
# one of the listed gateways' listen endpoints, chosen by numgen random.  The
# table is replaced in one nft transaction.
svc_update() {
	local set=()
	if [ "${RS_AGENT:-0}" = 1 ]; then
		# With the node agent, sk_lookup steers the Service address: no
		# DNAT (kube-proxy does not own this address on such a node).
		ip netns exec "$RS_NS" nft delete table ip rs_svc 2>/dev/null
		return 0
	fi
	if [ $# -gt 0 ]; then
		set=("$@")
	else
		local n
		for n in $(printf '%s\n' "${!RS_GW_PID[@]}" | sort -n); do
			[ -n "${RS_GW_PID[$n]}" ] && set+=("$n")
		done
	fi
	RS_SVC_SET=("${set[@]}")
	rs_svc_rules "${set[@]}" | ip netns exec "$RS_NS" nft -f - || fail "nft: could not load the Service"
}

# rs_svc_rules N...: prints the nft script that replaces table ip rs_svc by
# the Service's DNAT over gw-N... (nodes.sh loads it on each node).
rs_svc_rules() {
	local set=("$@") rules i vmap=""
	rules="table ip rs_svc {}
delete table ip rs_svc
table ip rs_svc {
"
	for i in "${!set[@]}"; do
		rules+="	chain ep_${set[$i]} { meta l4proto tcp dnat to $(gw_addr "${set[$i]}"):$RS_GW_LISTEN_PORT; }
"
		vmap+="${vmap:+, }$i : goto ep_${set[$i]}"
	done
	rules+="	chain svc {
"
	[ ${#set[@]} -gt 0 ] && rules+="		numgen random mod ${#set[@]} vmap { $vmap }
"
	rules+="	}
	chain services { ip daddr $RS_SVC_ADDR tcp dport $RS_SVC_PORT goto svc; }
	chain output { type nat hook output priority -100; policy accept; jump services; }
	chain prerouting { type nat hook prerouting priority dstnat; policy accept; jump services; }
}
"
	printf '%s' "$rules"
}

# --- gateways ------------------------------------------------------------------

gw_alive() { [ -n "${RS_GW_PID[$1]:-}" ] && ! rs_gone "${RS_GW_PID[$1]}"; }

gw_ready() {
	gw_alive "$1" || fail "gw-$1 exited while starting (log: $(gw_log "$1"))"
	ip netns exec "$(gw_ns "$1")" curl -fsS --max-time 1 "http://$(gw_addr "$1"):$RS_GW_METRICS_PORT/readyz" >/dev/null
}

gw_start() {
	local n=$1
	shift
	[ -z "${RS_GW_PID[$n]:-}" ] || fail "gw_start $n: already running"
	[ -x "$RS_BUILD/ringsteer-gateway" ] || fail "missing binary: $RS_BUILD/ringsteer-gateway"
	if [ $# -gt 0 ]; then RS_GW_XARGS[$n]="$*"; fi
	RS_GW_STARTS[$n]=$((${RS_GW_STARTS[$n]:-0} + 1))
	local a
	a=$(gw_addr "$n")
	# shellcheck disable=SC2086,SC2046
	gw_exec "$n" $(rs_valgrind "$(gw_log "$n").vg") "$RS_BUILD/ringsteer-gateway" --id "gw-$n" \
		--listen "$a:$RS_GW_LISTEN_PORT" --peer "$a:$RS_GW_PEER_PORT" \
		--store "$RS_STORE" --secret "$RS_SECRET" --metrics "$a:$RS_GW_METRICS_PORT" \
		--heartbeat "$RS_HEARTBEAT_MS" --ttl "$RS_TTL_MS" $(rs_valgrind_gw_args) $(rs_gw_transport_args "$n") \
		$RS_GW_ARGS $(gw_node_args "$n") ${RS_GW_XARGS[$n]:-} >"$(gw_log "$n")" 2>&1 &
	RS_GW_PID[$n]=$!
	disown "$!" # no "Killed" notices; exits are awaited with rs_gone
	await "gw-$n ready (/readyz)" "$(rs_slow 10)" gw_ready "$n"
	svc_update
}

# Stops gw-N (signal SIG, default TERM) and waits for it to exit.  The Service
# drops it first, as kube-proxy drops a terminating endpoint.
rs_gw_signal() {
	local n=$1 sig=$2 pid=${RS_GW_PID[$1]:-}
	[ -n "$pid" ] || fail "gw $n is not running"
	RS_GW_PID[$n]=""
	svc_update
	kill -"$sig" "$pid" 2>/dev/null
	await "gw-$n exits after SIG$sig" "$RS_GW_EXIT_S" rs_gone "$pid"
}
# rs_gone PID: the process has exited (a zombie counts: it may be nobody's
# to reap, the daemons being disowned).
rs_gone() {
	[ -n "$1" ] || return 0
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$st" ] || [ "${st%% *}" = Z ]
}
gw_stop() { rs_gw_signal "$1" TERM; }
gw_kill() { rs_gw_signal "$1" KILL; }
gw_restart() { gw_stop "$1"; gw_start "$1"; }

# --- supervisors -----------------------------------------------------------------

sup_alive() { [ -n "${RS_SUP_PID[$1]:-}" ] && ! rs_gone "${RS_SUP_PID[$1]}"; }

# sup_token M [TTL_S [SECRET_FILE]]: prints a fresh token for sup-M.
sup_token() {
	ctl token --secret "${3:-$RS_SECRET}" --member "sup-$1" --ttl "${2:-$RS_SUP_TOKEN_TTL}"
}

sup_start() {
	local m=$1 boxes=${2:-${RS_SUP_BOXES[$1]:-1}}
	shift
	[ $# -gt 0 ] && shift
	[ -z "${RS_SUP_PID[$m]:-}" ] || fail "sup_start $m: already running"
	[ -x "$RS_BUILD/ringsteer-supervisor" ] || fail "missing binary: $RS_BUILD/ringsteer-supervisor"
	if [ $# -gt 0 ]; then RS_SUP_XARGS[$m]="$*"; fi
	RS_SUP_BOXES[$m]=$boxes
	RS_SUP_STARTS[$m]=$((${RS_SUP_STARTS[$m]:-0} + 1))
	local tok="$RS_DIR/sup-$m.token" boxf="$RS_DIR/sup-$m.sandboxes"
	if [ ! -s "$tok" ] || [ "${RS_SUP_KEEP_TOKEN:-0}" != 1 ]; then
		sup_token "$m" >"$tok.new" || fail "ringsteerctl token for sup-$m"
		mv "$tok.new" "$tok"
	fi
	echo "$boxes" >"$boxf"
	# shellcheck disable=SC2086,SC2046
	sup_exec "$m" $(rs_names_prefix) "$RS_BUILD/ringsteer-supervisor" --id "sup-$m" \
		--service "${RS_SUP_SERVICE:-$RS_SERVICE}" --token-file "$tok" \
		--sandboxes "$boxes" --sandboxes-file "$boxf" --bind "$(sup_addr "$m")" $(rs_sup_transport_args "$m") \
		$RS_SUP_ARGS $(sup_node_args "$m") ${RS_SUP_XARGS[$m]:-} >"$(sup_log "$m")" 2>&1 &
	RS_SUP_PID[$m]=$!
	disown "$!"
}

rs_sup_signal() {
	local m=$1 sig=$2 pid=${RS_SUP_PID[$1]:-}
	[ -n "$pid" ] || fail "sup $m is not running"
	RS_SUP_PID[$m]=""
	kill -"$sig" "$pid" 2>/dev/null
	await "sup-$m exits after SIG$sig" 10 rs_gone "$pid"
}
sup_stop() { rs_sup_signal "$1" TERM; }

# sups_stop M...: SIGTERM to all at once, then wait for each to exit.
sups_stop() {
	local m pids=()
	for m in "$@"; do
		[ -n "${RS_SUP_PID[$m]:-}" ] || fail "sup $m is not running"
		pids+=("${RS_SUP_PID[$m]}")
		kill -TERM "${RS_SUP_PID[$m]}" 2>/dev/null
		RS_SUP_PID[$m]=""
	done
	local pid
	for pid in "${pids[@]}"; do
		await "supervisor pid $pid exits after SIGTERM" 10 rs_gone "$pid"
	done
}

# sups_start M...: mints every token and makes whatever they need first
# (sup_prepare), then starts them all at once.
sups_start() {
	local m
	sup_prepare "$@"
	for m in "$@"; do
		sup_token "$m" >"$RS_DIR/sup-$m.token.new" || fail "ringsteerctl token for sup-$m"
		mv "$RS_DIR/sup-$m.token.new" "$RS_DIR/sup-$m.token"
	done
	for m in "$@"; do
		RS_SUP_KEEP_TOKEN=1 sup_start "$m"
	done
}
sup_kill() { rs_sup_signal "$1" KILL; }
sup_restart() { sup_stop "$1"; sup_start "$1"; }

sup_set_sandboxes() {
	local m=$1 k=$2
	sup_alive "$m" || fail "sup_set_sandboxes: sup-$m not running"
	RS_SUP_BOXES[$m]=$k
	echo "$k" >"$RS_DIR/sup-$m.sandboxes.new" && mv "$RS_DIR/sup-$m.sandboxes.new" "$RS_DIR/sup-$m.sandboxes"
	kill -HUP "${RS_SUP_PID[$m]}"
}

# sup_blip M: destroys sup-M's TCP sockets and their gateway-side peers
# (SOCK_DESTROY, CONFIG_INET_DIAG_DESTROY) inside the namespace.  Fails when
# nothing was killed.
sup_blip() {
	local a out
	a=$(sup_addr "$1")
	out=$(ip netns exec "$(sup_ns "$1")" ss -K -t -n state established "( src $a or dst $a )" 2>&1)
	if [ "$(printf '%s\n' "$out" | grep -c "$a")" -lt 1 ]; then
		fail "sup_blip $1: ss -K killed nothing: $out"
	fi
	rs_log "blip sup-$1: $(printf '%s\n' "$out" | grep -c "$a") sockets destroyed"
}

# --- queries ---------------------------------------------------------------------

# Every session row, JSON.  "live" is judged with the gateways' own --ttl:
# with ringsteerctl's default (15 s) a SIGKILLed gateway's sessions would
# count as live for 15 s after its row died under the harness's 1 s.
rs_sessions_json() { ctl sessions --store "$RS_STORE" --ttl "$RS_TTL_MS" --all --json; }
# The newest live active session of each member, as JSON lines.
rs_current() {
	rs_sessions_json | jq -c '[.[] | select(.state == "active" and .live)]
		| group_by(.member_id) | map(max_by(.epoch)) | .[]'
}

# owned_by GW FROM GATEWAYS: the first sup-M, M >= FROM, whose ring owner
# over GATEWAYS (comma-separated ids) is GW; status 1 if none in 200.
owned_by() {
	local i
	for ((i = $2; i < $2 + 200; i++)); do
		[ "$(ctl ring --gateways "$3" owner "sup-$i")" = "$1" ] && { echo "$i"; return 0; }
	done
	return 1
}

# where M: the gateway id sup-M is attached to (empty if none); status 1 if none.
where() {
	local g
	g=$(rs_current | jq -r --arg m "sup-$1" 'select(.member_id == $m) | .gateway_id')
	[ -n "$g" ] || return 1
	echo "$g"
}

# session M FIELD: a field of sup-M's current session.
session() { rs_current | jq -r --arg m "sup-$1" --arg f "$2" 'select(.member_id == $m) | .[$f]'; }

count_on() { rs_current | jq -s --arg g "gw-$1" '[.[] | select(.gateway_id == $g)] | length'; }
count_attached() { rs_current | jq -s 'length'; }

# metric N NAME [LABELMATCH]
metric() {
	local body
	body=$(ip netns exec "$(gw_ns "$1")" curl -fsS --max-time 2 "http://$(gw_addr "$1"):$RS_GW_METRICS_PORT/metrics") ||
		{ echo "metric: gw-$1 /metrics unreachable" >&2; return 1; }
	printf '%s\n' "$body" | metric_of "$2" "${3:-}"
}

# metric_of NAME [LABELMATCH]: the value of NAME in the Prometheus text on
# stdin, summed over the lines whose labels contain LABELMATCH (0 if none).
metric_of() {
	awk -v name="$1" -v lm="${2:-}" '
		/^#/ || NF < 2 { next }
		{
			key = $1; val = $2
			if (index($0, "{")) {
				key = substr($0, 1, index($0, "{") - 1)
				rest = substr($0, index($0, "}") + 1)
				split(rest, f, " "); val = f[1]
				labels = substr($0, index($0, "{"), index($0, "}") - index($0, "{") + 1)
			} else labels = ""
			if (key != name) next
			if (lm != "" && index(labels, lm) == 0) next
			sum += val; seen = 1
		}
		END { if (sum == int(sum)) printf "%d\n", sum; else print sum }'
}

# --- predicates for await / hold ----------------------------------------------

is_on() { [ "$(where "$1")" = "gw-$2" ]; }
count_is() { [ "$(count_on "$1")" -eq "$2" ]; }
attached_is() { [ "$(count_attached)" -eq "$1" ]; }
metric_is() { [ "$(metric "$1" "$2" "${4:-}")" = "$3" ]; }
metric_ge() { local v; v=$(metric "$1" "$2" "${4:-}") && [ "${v%.*}" -ge "$3" ]; }
# log_count FILE PATTERN: lines of FILE matching the extended regex PATTERN.
log_count() { grep -cE -- "$2" "$1" 2>/dev/null || true; }
log_has() { grep -qE -- "$2" "$1" 2>/dev/null; }
# logfield KEY: the value of KEY in the logfmt line on stdin (unquoted values).
logfield() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" | tail -n 1; }
# sup_last M KEY: KEY of the last event=attached line of sup-M's current log.
sup_last() { grep -E 'event=attached( |$)' "$(sup_log "$1")" 2>/dev/null | tail -n 1 | logfield "$2"; }
# all_attached M...: each sup-M's current process has logged an attachment,
# and the store's current session of sup-M is that one (same epoch and
# gateway), active and live.  One store query and one pass over the logs.
all_attached() {
	local -A cur=() last=()
	local mem ep gw f m
	while read -r mem ep gw; do
		cur[$mem]="$ep $gw"
	done < <(rs_current | jq -r '"\(.member_id) \(.epoch) \(.gateway_id)"')
	local files=()
	for m in "$@"; do files+=("$(sup_log "$m")"); done
	while read -r f ep gw; do
		last[$f]="$ep $gw"
	done < <(awk '/ event=attached( |$)/ {
			e = ""; g = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^epoch=/) e = substr($i, 7)
				if ($i ~ /^gateway=/) g = substr($i, 9)
			}
			last[FILENAME] = e " " g
		}
		END { for (f in last) print f, last[f] }' "${files[@]}" 2>/dev/null)
	for m in "$@"; do
		f=$(sup_log "$m")
		[ -n "${last[$f]:-}" ] && [ "${last[$f]}" = "${cur[sup-$m]:-}" ] || return 1
	done
}
sup_attached() { all_attached "$1"; }

# --- raw frames (docs/PROTOCOL.md, include/ringsteer/proto.h) -------------------
# Each prints hex.  A frame: u32 BE length of what follows, u8 version, u8 type,
# payload; a string is a u16 BE length and its bytes.

hex_u8() { printf '%02x' "$1"; }
hex_u16() { printf '%04x' "$1"; }
hex_u32() { printf '%08x' "$1"; }
hex_u64() { printf '%016x' "$1"; }
hex_bytes() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
hex_str() { hex_u16 "${#1}"; hex_bytes "$1"; }
# frame_hex TYPE PAYLOAD_HEX [VERSION]
frame_hex() {
	local payload=$2
	hex_u32 $((2 + ${#payload} / 2))
	hex_u8 "${3:-1}"
	hex_u8 "$1"
	printf '%s' "$payload"
}
# hello_hex MEMBER INSTANCE EPOCH FLAGS TOKEN SANDBOXES
hello_hex() {
	frame_hex 1 "$(hex_str "$1")$(hex_str "$2")$(hex_u64 "$3")$(hex_u8 "$4")$(hex_str "$5")$(hex_u32 "$6")"
}

# raw_send ADDR:PORT HEX [WAIT_S]: one exchange from inside the namespace;
# prints closed|reset|open HEX... or refused (see raw.sh).
raw_send() {
	rs_ns bash "$RS_LIB_DIR/raw.sh" "$@"
}

# reply_type LINE: the frame type of the first frame in raw_send's reply, in
# decimal, or empty when nothing came back.
reply_type() { set -- $1; [ $# -ge 7 ] && echo $((16#$7)); }
# reply_reject_code LINE: the REJECT code of that first frame (empty if not REJECT).
reply_reject_code() { set -- $1; [ $# -ge 9 ] && [ "$7" = 04 ] && echo $((16#$8$9)); }

# --- more queries (the drain tests) ------------------------------------------
#
#   loads N...                  the supervisors attached to gw-N..., space-separated
#                               in that order (one store query)
#   spread N...                 max - min of loads N...
#   current_map                 "member epoch gateway sandboxes" of each member's
#                               current session, sorted by member
#   sup_attach_count M          event=attached lines in sup-M's current log
#   sup_attach_counts M...      "sup-M count" for each, one awk pass
#   drain_handoffs N [FILE]     "member target cap" of each reason=drain-handoff
#                               decision in gw-N's current log (or FILE)
#   log_ms                      logfmt lines on stdin -> "MS line" (ts= as epoch ms)

loads() {
	local cur n out=()
	cur=$(rs_current | jq -r '.gateway_id') || return 1
	for n in "$@"; do
		out+=("$(printf '%s\n' "$cur" | grep -cx "gw-$n")")
	done
	echo "${out[*]}"
}

spread() {
	local l
	l=$(loads "$@") || return 1
	echo "$l" | awk '{ mn = mx = $1; for (i = 2; i <= NF; i++) { if ($i < mn) mn = $i; if ($i > mx) mx = $i }; print mx - mn }'
}

current_map() {
	rs_current | jq -r '"\(.member_id) \(.epoch) \(.gateway_id) \(.sandboxes)"' | sort
}

sup_attach_count() { log_count "$(sup_log "$1")" 'event=attached( |$)'; }

sup_attach_counts() {
	local m files=()
	for m in "$@"; do files+=("$(sup_log "$m")"); done
	awk 'BEGIN { for (i = 1; i < ARGC; i++) n[ARGV[i]] = 0 }
		/ event=attached( |$)/ { n[FILENAME]++ }
		END {
			for (i = 1; i < ARGC; i++) {
				b = ARGV[i]; sub(/.*\//, "", b); sub(/\.[0-9]+\.log$/, "", b)
				print b, n[ARGV[i]]
			}
		}' "${files[@]}"
}

drain_handoffs() {
	grep -E 'event=decision .*reason=drain-handoff( |$)' "${2:-$(gw_log "$1")}" 2>/dev/null |
		awk '{
			m = ""; t = ""; c = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^member=/) m = substr($i, 8)
				if ($i ~ /^target=/) t = substr($i, 8)
				if ($i ~ /^cap=/) c = substr($i, 5)
			}
			print m, t, c
		}'
}

# ts=YYYY-MM-DDTHH:MM:SS.mmmZ (UTC) to epoch milliseconds, in plain awk
# (days from civil date, H. Hinnant's algorithm).
log_ms() {
	awk '
	function days(y, m, d,   era, yoe, doy, doe) {
		y -= (m <= 2); era = int((y >= 0 ? y : y - 399) / 400)
		yoe = y - era * 400
		doy = int((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1
		doe = yoe * 365 + int(yoe / 4) - int(yoe / 100) + doy
		return era * 146097 + doe - 719468
	}
	match($0, /ts=[0-9]+-[0-9]+-[0-9]+T[0-9]+:[0-9]+:[0-9]+\.[0-9]+Z/) {
		s = substr($0, RSTART + 3, RLENGTH - 4)
		ms = days(substr(s, 1, 4) + 0, substr(s, 6, 2) + 0, substr(s, 9, 2) + 0) * 86400000 \
			+ (substr(s, 12, 2) * 3600 + substr(s, 15, 2) * 60 + substr(s, 18, 2)) * 1000 + substr(s, 21, 3)
		printf "%.0f %s\n", ms, $0
	}'
}

# --- the node agent (RS_AGENT=1) ---------------------------------------------
# agent_start [ARGS...]: ringsteer-agent in the cluster's namespace, steering
# the Service address, following the store; gateways started afterwards
# register with it (RS_GW_ARGS gets --agent).  nsenter, not ip netns exec:
# the latter remounts /sys and would hide bpffs.
RS_AGENT_PID=""
RS_AGENT_STARTS=0
RS_AGENT_METRICS=127.0.0.50:9200
agent_log() { echo "$RS_DIR/log/agent.$RS_AGENT_STARTS.log"; }
agent_start() {
	RS_AGENT_STARTS=$((RS_AGENT_STARTS + 1))
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || fail "cannot mount bpffs"
	# shellcheck disable=SC2046
	nsenter --net="/run/netns/$RS_NS" $(rs_valgrind "$(agent_log).vg") "$RS_BUILD/ringsteer-agent" \
		--service "$RS_SERVICE" --store "$RS_STORE" --ttl "$RS_TTL_MS" --sync-interval 100 \
		--metrics "$RS_AGENT_METRICS" --no-connect --socket "$RS_SOCK/agent.sock" "$@" 2>"$(agent_log)" &
	RS_AGENT_PID=$!
	disown "$!"
	await "agent ready" "$(rs_slow 10)" grep -q 'event=ready' "$(agent_log)"
	RS_PIN_DIR="/sys/fs/bpf/ringsteer/$(stat -L -c %i "/run/netns/$RS_NS")"
}
agent_kill() {
	[ -n "$RS_AGENT_PID" ] || return 0
	kill -KILL "$RS_AGENT_PID" 2>/dev/null
	await "agent gone" 10 rs_gone "$RS_AGENT_PID"
	RS_AGENT_PID=""
}
agent_metric() { # NAME [LABELMATCH]
	rs_ns curl -fsS --max-time 2 "http://$RS_AGENT_METRICS/metrics" |
		awk -v n="$1" -v l="${2:-}" '$1 ~ "^"n"({|$)" && index($1, l) { print $2; exit }'
}
# The pins outlive the agent by design; the test's own go with its namespace.
rs_agent_cleanup() {
	agent_kill
	[ -n "${RS_PIN_DIR:-}" ] && rm -rf "$RS_PIN_DIR"
	RS_PIN_DIR=""
}

# --- store outages and loop latency (t_18) -----------------------------------
#
#   store_lock                  SQLite store only: a sqlite3 process inside the
#                               namespace takes BEGIN EXCLUSIVE and holds it (it
#                               reads its commands from a fifo this shell keeps
#                               open); every writer then waits its busy timeout and
#                               fails (-EBUSY), readers still read (WAL)
#   store_unlock                commits, and waits for that process to exit
#   gw_loop_ms N                milliseconds one GET /healthz on gw-N takes: how
#                               long its event loop keeps a request waiting (9999
#                               when it gets no answer within 5 s)
RS_LOCK_PID="" RS_LOCK_FD=""
store_lock() {
	[ -z "$RS_LOCK_PID" ] || fail "store_lock: already locked"
	case $RS_STORE in sqlite:*) ;; *) fail "store_lock: not a SQLite store: $RS_STORE" ;; esac
	local fifo="$RS_DIR/store-lock.fifo" out="$RS_DIR/store-lock.out"
	rm -f "$fifo" "$out"
	mkfifo "$fifo" || fail "store_lock: mkfifo"
	rs_ns sqlite3 "${RS_STORE#sqlite:}" <"$fifo" >"$out" 2>&1 &
	RS_LOCK_PID=$!
	disown "$!"
	exec {RS_LOCK_FD}>"$fifo"
	printf '.timeout 10000\nBEGIN EXCLUSIVE;\nSELECT %s;\n' "'rs-locked'" >&"$RS_LOCK_FD"
	await "the store's write lock taken" 15 grep -q rs-locked "$out"
	rs_log "store locked (sqlite3 pid $RS_LOCK_PID)"
}
store_unlock() {
	[ -n "$RS_LOCK_PID" ] || fail "store_unlock: not locked"
	# .quit, not EOF: processes started meanwhile inherited the fifo's write end.
	printf 'COMMIT;\n.quit\n' >&"$RS_LOCK_FD"
	exec {RS_LOCK_FD}>&-
	await "the store's lock holder exits" 10 rs_gone "$RS_LOCK_PID"
	grep -q Error "$RS_DIR/store-lock.out" && fail "store_unlock: sqlite3 said: $(cat "$RS_DIR/store-lock.out")"
	RS_LOCK_PID="" RS_LOCK_FD=""
	rs_log "store unlocked"
}
gw_loop_ms() {
	local t
	t=$(rs_ns curl -fsS -o /dev/null --max-time 5 -w '%{time_total}' \
		"http://$(gw_addr "$1"):$RS_GW_METRICS_PORT/healthz" 2>/dev/null) || { echo 9999; return 0; }
	awk -v t="$t" 'BEGIN { printf "%d\n", t * 1000 + 0.5 }'
}
