#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/scale.sh - issue 15's benchmark: 4 gateways and N supervisors (one
# ringsteer-swarm), in up to four configurations, figures side by side.
#
# Configurations (SCALE_CONFIGS, default all four, in this order):
#   plain-sqlite  plaintext, SQLite store
#   tls-sqlite    TLS 1.3 (RS_TLS=1 of tests/cluster/lib.sh), SQLite
#   plain-pg      plaintext, PostgreSQL (a throwaway server, tests/pg/pg_server.sh,
#                 started here and stopped at the end; a fresh database per run)
#   tls-pg        TLS 1.3, PostgreSQL
# Each runs in its own test cluster (tests/cluster/lib.sh, its own network
# namespace): 4 gateways (--max-unauth 4096, default --drain-budget 25000
# ms, the slow clocks RS_CLOCKS=slow: heartbeat 1 s, TTL 5 s, as t_26 runs
# the swarm), then one ringsteer-swarm of N members (SCALE_N, default
# 10000; a multiple of 4), each member its own source address from
# 198.18.0.0/16, which `ip route add local` makes local inside the
# namespace.  Figures, per configuration:
#
#   storm      ms from starting the swarm until the 4 gateways' supervisors
#              gauges read exactly N/4 each (one fetch of the 4 pages per
#              poll); also the swarm's own all_attached_ms
#   rss        per attached supervisor: (VmRSS with N/4 attached, the least
#              of the samples over ~6 s once every gateway has had two
#              heartbeats (malloc_trim runs on each) - VmRSS just before the
#              storm) / (N/4); the mean over the 4 gateways, and the largest;
#              RssAnon likewise (the process's own memory: VmRSS also counts
#              the shared libraries' code first touched during the storm)
#   stmts/s    ringsteer_gateway_store_statements_total summed over the 4
#              gateways, per second: per gateway, the increase between its
#              first and its last change seen while polling for ~6 s (the
#              counter moves at each heartbeat); with 0 attached (before the
#              storm), N attached, and N/4 attached (a fresh swarm of N/4 on
#              the replacement gateways after the roll).  Goal: it follows
#              the gateways, not the sessions
#   roll       a surge-first rolling restart (as bench/rolling_restart.sh):
#              for K = 1..4 start gw-(K+4), SIGTERM gw-K (the Service drops it
#              first), await its exit.  Wall time (first start to the last
#              exit), handoffs (event=drained handed_off= of the old
#              gateways' logs) per second of wall, the swarm's
#              ringsteer_swarm_gap_max_seconds and gaps_total after it
#              (goal: 0, make-before-break), abandoned and timed-out handoffs
#              (the old gateways' logs: event=handoff_abandoned,
#              event=handoff_timeout; goal 0), and the end loads of gw-5..8
#              (goal: N/4 each)
#   placements placements/s through the store at 1, 4 and 16 concurrent
#              arrivals against 0 and 40,000 rows: build/bench/bench_store
#              run once (SQLite, and PostgreSQL on the same server), its rows
#              put in the columns of the configurations on that store, its
#              tables printed whole below
# SCALE_STORM_ONLY=1: each configuration stops after the storm (storm and
# the swarm's all_attached_ms; no rss, stmts/s or roll), and bench_store is
# not run (bench/core_before_after.sh times the storm this way).
# Prints, last, one table (rows: figures, columns: configurations) and the
# command line.  A configuration that fails shows "-" where it got no
# figure; its cluster's logs are kept when SCALE_KEEP=1 (RS_KEEP).  Goals
# (issue 15): storm within 5 s plaintext on both stores; RSS at most 4 KiB
# per supervisor plaintext, 16 KiB TLS; gap 0; abandoned 0.
# Needs root and `ip netns` (exit 77 otherwise).  About 2.5 minutes per
# configuration at N=10000 on 2 cores, plus a minute for bench_store.
#
# usage: [SCALE_N=10000] [SCALE_CONFIGS="plain-sqlite tls-sqlite plain-pg tls-pg"]
#        [SCALE_STORM_ONLY=1] [SCALE_SWARM_ARGS=...] [RS_GW_ARGS="--drain-budget 15000 ..."] bench/scale.sh [BUILD_DIR]   (default build)
set -u
RS_BUILD=${1:-build}
SCALE_N=${SCALE_N:-10000}
SCALE_CONFIGS=${SCALE_CONFIGS:-plain-sqlite tls-sqlite plain-pg tls-pg}
SCALE_SWARM_ARGS=${SCALE_SWARM_ARGS:-}
SCALE_STORM_ONLY=${SCALE_STORM_ONLY:-0}
RS_CLOCKS=slow
SCALE_GW_ARGS=${RS_GW_ARGS:-} # the caller's extra gateway flags, named in the command line printed
RS_GW_ARGS="--max-unauth 4096 $SCALE_GW_ARGS"
RS_KEEP=${SCALE_KEEP:-0}
# shellcheck source=../tests/cluster/lib.sh
. "$(dirname "$0")/../tests/cluster/lib.sh"

N=$SCALE_N
Q=$((N / 4))
BIND=198.18.0.0/16
SWARM_METRICS=127.0.0.62:9300
CMDLINE="${SCALE_GW_ARGS:+RS_GW_ARGS=\"$SCALE_GW_ARGS\" }SCALE_N=$SCALE_N SCALE_CONFIGS=\"$SCALE_CONFIGS\"$([ "$SCALE_STORM_ONLY" != 1 ] || echo " SCALE_STORM_ONLY=1")${SCALE_SWARM_ARGS:+ SCALE_SWARM_ARGS=\"$SCALE_SWARM_ARGS\"} $0 $RS_BUILD"
if [ $((N % 4)) != 0 ] || [ "$N" -lt 4 ] || [ "$N" -gt 60000 ]; then
	echo "scale.sh: SCALE_N must be a multiple of 4 between 4 and 60000 (one source address each in $BIND)" >&2
	exit 2
fi
for c in $SCALE_CONFIGS; do
	case $c in plain-sqlite | tls-sqlite | plain-pg | tls-pg) ;; *) echo "scale.sh: unknown configuration $c" >&2; exit 2 ;; esac
done
# The swarm holds N links, 2N for a moment per member handed off.
ulimit -n "$(ulimit -Hn)" 2>/dev/null

OUT=$(mktemp -d "${TMPDIR:-/tmp}/rs-scale.XXXXXX")
PG_DIR=""
scale_exit() {
	[ -z "$PG_DIR" ] || "$RS_LIB_DIR/../pg/pg_server.sh" stop "$PG_DIR" >/dev/null 2>&1
	rm -rf "$OUT"
}
trap scale_exit EXIT

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
swarm_metric() { rs_ns curl -fsS --max-time 2 "http://$SWARM_METRICS/metrics" | metric_of "$@"; }
swarm_metric_is() { [ "$(swarm_metric "$1")" = "$2" ]; }

SWARM_PID=""
SWARM_RUNS=0
swarm_start() { # COUNT
	SWARM_RUNS=$((SWARM_RUNS + 1))
	# shellcheck disable=SC2046,SC2086
	ip netns exec "$RS_NS" "$RS_BUILD/ringsteer-swarm" --service "$RS_SERVICE" --secret "$RS_SECRET" \
		--count "$1" --prefix sc- --bind "$BIND" --metrics "$SWARM_METRICS" $(rs_sup_transport_args 0) \
		$SCALE_SWARM_ARGS >"$RS_DIR/log/swarm.$SWARM_RUNS.log" 2>&1 &
	SWARM_PID=$!
	disown "$!"
}
swarm_stop() {
	kill -TERM "$SWARM_PID"
	await "the swarm exits after SIGTERM" 30 rs_gone "$SWARM_PID"
	SWARM_PID=""
}

# --- one configuration ---------------------------------------------------------

run_config() {
	local cfg=$1 n t0 before=() before_anon=() pre post
	CONFIG=$cfg
	case $cfg in tls-*) RS_TLS=1 ;; *) RS_TLS=0 ;; esac
	case $cfg in *-pg) RS_PG_DIR=$PG_DIR ;; *) RS_PG_DIR="" ;; esac
	cluster_up --gateways 4
	ip -n "$RS_NS" route add local "$BIND" dev lo || fail "ip route add local $BIND dev lo"

	settle 1 2 3 4
	sample 6 1 2 3 4 >"$RS_DIR/idle.samples"
	put stmts_0 "$(stmts_rate <"$RS_DIR/idle.samples")"
	for n in 1 2 3 4; do before[n]=$(rss_kib "${RS_GW_PID[$n]}") before_anon[n]=$(anon_kib "${RS_GW_PID[$n]}"); done

	# The storm.
	t0=$(rs_now_ms)
	swarm_start "$N"
	await "$Q on each gateway" 300 gauges_are "$Q $Q $Q $Q" 1 2 3 4
	put storm_ms $(($(rs_now_ms) - t0))
	await "the swarm's all_attached line" 10 log_has "$RS_DIR/log/swarm.$SWARM_RUNS.log" 'event=all_attached '
	put swarm_all_ms "$(grep 'event=all_attached ' "$RS_DIR/log/swarm.$SWARM_RUNS.log" | head -n 1 | logfield all_attached_ms)"
	if [ "$SCALE_STORM_ONLY" = 1 ]; then
		swarm_stop
		cluster_down
		return
	fi

	# Settled: memory and store work with N attached.
	settle 1 2 3 4
	sample 6 1 2 3 4 >"$RS_DIR/full.samples"
	put stmts_n "$(stmts_rate <"$RS_DIR/full.samples")"
	post=$(rss_min <"$RS_DIR/full.samples")
	pre=""
	for n in 1 2 3 4; do pre+="$n ${before[n]}"$'\n'; done
	put rss_kib "$(join <(printf '%s' "$pre" | sort) <(printf '%s\n' "$post" | sort) |
		awk -v q="$Q" '{ d = ($3 - $2) / q; s += d; if (NR == 1 || d > mx) mx = d } END { printf "%.2f/%.2f\n", s / NR, mx }')"
	post=$(anon_min <"$RS_DIR/full.samples")
	pre=""
	for n in 1 2 3 4; do pre+="$n ${before_anon[n]}"$'\n'; done
	put anon_kib "$(join <(printf '%s' "$pre" | sort) <(printf '%s\n' "$post" | sort) |
		awk -v q="$Q" '{ d = ($3 - $2) / q; s += d; if (NR == 1 || d > mx) mx = d } END { printf "%.2f/%.2f\n", s / NR, mx }')"
	post=$(rss_min <"$RS_DIR/full.samples")
	pre=""
	for n in 1 2 3 4; do pre+="$n ${before[n]}"$'\n'; done
	put rss_raw "$(join <(printf '%s' "$pre" | sort) <(printf '%s\n' "$post" | sort) | awk '{ printf "%s%d->%d", (NR > 1 ? "," : ""), $2 / 1024, $3 / 1024 }')"

	# The surge-first rolling restart.
	local k
	ROLL_HANDED=0 ROLL_ABANDONED=0 ROLL_TIMED_OUT=0
	t0=$(rs_now_ms)
	for k in 1 2 3 4; do
		roll_step "$k" $((k + 4))
		rs_log "$cfg: gw-$k -> gw-$((k + 4)): handed off $ROLL_LAST; gauges gw-5..$((k + 4)): $(gauges $(seq 5 $((k + 4))))"
	done
	local wall=$(($(rs_now_ms) - t0))
	put roll_wall_ms "$wall"
	put roll_handoffs "$ROLL_HANDED"
	put handoffs_per_s "$(awk -v h="$ROLL_HANDED" -v w="$wall" 'BEGIN { printf "%.1f", h * 1000 / w }')"
	put abandoned "$ROLL_ABANDONED"
	put timed_out "$ROLL_TIMED_OUT"
	await "the swarm counts $N attached after the roll" 60 swarm_metric_is ringsteer_swarm_attached "$N"
	await "gw-5..8 hold all $N" 30 gauges_sum_is "$N" 5 6 7 8
	put end_loads "$(gauges 5 6 7 8 | tr ' ' /)"
	put gap_max_s "$(swarm_metric ringsteer_swarm_gap_max_seconds)"
	put gaps "$(swarm_metric ringsteer_swarm_gaps_total)"
	put swarm_failures "$(swarm_metric ringsteer_swarm_failures_total)"

	# Store work with N/4 attached: a fresh swarm of N/4.
	swarm_stop
	await "gw-5..8 empty" 30 gauges_are "0 0 0 0" 5 6 7 8
	swarm_start "$Q"
	await "$Q attached" 120 swarm_metric_is ringsteer_swarm_attached "$Q"
	settle 5 6 7 8
	sample 6 5 6 7 8 >"$RS_DIR/quarter.samples"
	put stmts_q "$(stmts_rate <"$RS_DIR/quarter.samples")"
	swarm_stop
	cluster_down
}

# --- main ------------------------------------------------------------------------

rs_require_netns
[ -x "$RS_BUILD/ringsteer-swarm" ] && { [ "$SCALE_STORM_ONLY" = 1 ] || [ -x "$RS_BUILD/bench/bench_store" ]; } ||
	{ echo "scale.sh: build first (make all build/bench/bench_store)" >&2; exit 1; }
case " $SCALE_CONFIGS " in
*-pg*)
	PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rs-scale-pg.XXXXXX")
	PG_URL=$("$RS_LIB_DIR/../pg/pg_server.sh" start "$PG_DIR") ||
		{ echo "scale.sh: no PostgreSQL server (tests/pg/pg_server.sh)" >&2; PG_DIR=""; exit 1; }
	;;
*) PG_URL="" ;;
esac

for c in $SCALE_CONFIGS; do
	: >"$OUT/$c"
	rs_log "== $c: 4 gateways, $N supervisors"
	(run_config "$c") || rs_log "== $c: FAILED (its figures so far are kept)"
done

# Placements through the store: one run, SQLite and (when a PostgreSQL
# configuration was asked for) PostgreSQL.
if [ "$SCALE_STORM_ONLY" = 1 ]; then
	echo "(SCALE_STORM_ONLY=1: bench_store not run)" >"$OUT/store_rows"
else
	rs_log "== bench_store${PG_URL:+ (SQLite and PostgreSQL)}"
	RS_BENCH_PG_URL=$PG_URL "$RS_BUILD/bench/bench_store" >"$OUT/store_rows" 2>&1 || rs_log "bench_store failed"
fi
for c in $SCALE_CONFIGS; do
	case $c in *-pg) want=postgres ;; *) want=sqlite ;; esac
	awk -v want="$want" '
		/placements per second/ { sec = $1; sub(/:$/, "", sec); next }
		sec == want && $2 == "concurrent" { printf "place_%s_0 %s\nplace_%s_40k %s\n", $1, $4, $1, $5 }
	' "$OUT/store_rows" >>"$OUT/$c"
done

rows=(
	"storm_ms|storm: ms until N/4 on each gateway"
	"swarm_all_ms|storm: the swarm's all_attached_ms"
	"anon_kib|RssAnon KiB/supervisor (mean/max of 4)"
	"rss_kib|VmRSS KiB/supervisor (mean/max of 4)"
	"rss_raw|RSS MiB before->after per gateway"
	"stmts_0|store statements/s, 0 attached"
	"stmts_q|store statements/s, N/4 attached"
	"stmts_n|store statements/s, N attached"
	"roll_wall_ms|roll: wall ms (4 surge-first)"
	"roll_handoffs|roll: handoffs"
	"handoffs_per_s|roll: handoffs/s of wall"
	"gap_max_s|roll: swarm gap_max_seconds"
	"gaps|roll: swarm gaps_total"
	"abandoned|roll: abandoned handoffs"
	"timed_out|roll: timed-out handoffs"
	"end_loads|roll: end loads gw-5..8"
	"swarm_failures|swarm failures_total at the end"
	"place_1_0|store placements/s, 1 arrival, 0 rows"
	"place_1_40k|  1 arrival, 40k rows"
	"place_4_0|  4 concurrent, 0 rows"
	"place_4_40k|  4 concurrent, 40k rows"
	"place_16_0|  16 concurrent, 0 rows"
	"place_16_40k|  16 concurrent, 40k rows"
)
[ "$SCALE_STORM_ONLY" != 1 ] || rows=("${rows[@]:0:2}")
echo
echo "== bench_store"
cat "$OUT/store_rows"
echo
echo "== issue 15: 4 gateways, N=$N supervisors (one ringsteer-swarm), heartbeat ${RS_HEARTBEAT_MS} ms, TTL ${RS_TTL_MS} ms, drain budget 25000 ms"
printf '%-40s' "figure"
for c in $SCALE_CONFIGS; do printf ' %18s' "$c"; done
echo
for r in "${rows[@]}"; do
	key=${r%%|*}
	printf '%-40s' "${r#*|}"
	for c in $SCALE_CONFIGS; do
		v=$(awk -v k="$key" '$1 == k { v = $2 } END { print (v == "" ? "-" : v) }' "$OUT/$c")
		printf ' %18s' "$v"
	done
	echo
done
echo "command: $CMDLINE"
