#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/fleet.sh - the design point (issue 27): G gateways (default 16) on
# one PostgreSQL server, N supervisors (default 100000) from S
# ringsteer-swarm processes (default 8: a process may hold at most 20,000
# open files here and the limit cannot be raised), through the cluster's
# random Service (tests/cluster/lib.sh: one netns, nftables numgen random).
# Each swarm binds its members to the addresses of its own slice of
# 198.18.0.0/15 (`ip route add local` makes them local).  Figures:
#
#   storm        ms from starting the swarms until every gateway's supervisors
#                gauge reads exactly N/G (goal: 30 s, stretch 10 s); the
#                attached total sampled once a second during it, and the
#                fewest attached in any second while some were pending
#                (goal: never 0)
#   degraded     ringsteer_gateway_degraded_accepts_total and over-cap
#                accepts summed over the gateways at the end of the storm;
#                stays and redirects (stays beyond the redirects: kept where
#                they landed), and arrivals
#                shed / timed out in the queue / expired (overload.c)
#   stmts/s      store statements per second summed over the gateways, with
#                0 and with N attached (goal: within 20%)
#   conntrack    the cluster netns's nf_conntrack_count with N attached, and
#                the machine's nf_conntrack_max
#   drain        gw-1 SIGTERMed: ms until it exits, its handed_off, the other
#                G-1 gateways' gauges (sum must be N, none above
#                ceil(N/(G-1)))
#   roll         a surge-first rolling restart of the remaining G-1 (for K =
#                2..G: start gw-(K+G), SIGTERM gw-K): wall time, handoffs,
#                abandoned and timed-out handoffs (goal 0), the swarms'
#                gaps_total and gap_max_seconds (goal 0)
#
# Knobs: FLEET_N, FLEET_GATEWAYS, FLEET_SWARMS, FLEET_STORM_S (how long the
# storm may take before it is reported as not reached, default 300),
# FLEET_ROLL=0 (skip the roll), FLEET_SWARM_ARGS (extra swarm flags),
# RS_GW_ARGS (extra gateway flags), FLEET_KEEP=1 (keep the cluster's logs).
# Needs root, `ip netns` and a PostgreSQL server binary (exit 77 without).
set -u
RS_BUILD=${1:-build}
FLEET_N=${FLEET_N:-100000}
FLEET_GATEWAYS=${FLEET_GATEWAYS:-16}
FLEET_SWARMS=${FLEET_SWARMS:-8}
FLEET_STORM_S=${FLEET_STORM_S:-300}
FLEET_ROLL=${FLEET_ROLL:-1}
FLEET_SWARM_ARGS=${FLEET_SWARM_ARGS:-}
# The gateway's own clocks (heartbeat 5 s, TTL 15 s), as a fleet runs: the
# test clocks' 1 s heartbeat is 100,000 frames a second each way here, more
# than 2 cores carry beside the storm (members idle-closed by the thousand).
RS_HEARTBEAT_MS=${RS_HEARTBEAT_MS:-5000}
RS_TTL_MS=${RS_TTL_MS:-15000}
FLEET_GW_ARGS=${RS_GW_ARGS:-}
RS_GW_ARGS="--max-unauth 4096 $FLEET_GW_ARGS"
RS_KEEP=${FLEET_KEEP:-0}
# shellcheck source=../tests/cluster/lib.sh
. "$(dirname "$0")/../tests/cluster/lib.sh"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

N=$FLEET_N G=$FLEET_GATEWAYS S=$FLEET_SWARMS
CMDLINE="FLEET_N=$N FLEET_GATEWAYS=$G FLEET_SWARMS=$S${FLEET_GW_ARGS:+ RS_GW_ARGS=\"$FLEET_GW_ARGS\"}${FLEET_SWARM_ARGS:+ FLEET_SWARM_ARGS=\"$FLEET_SWARM_ARGS\"} $0 $RS_BUILD"
# Each swarm's slice of 198.18.0.0/15: S a power of two, at most 64 (a /21
# of 2048 addresses each), the members of one swarm at most 19,000 (its
# links, plus one more for a moment per member handed off, under 20,000).
case $S in 1 | 2 | 4 | 8 | 16 | 32 | 64) ;; *) echo "fleet.sh: FLEET_SWARMS must be a power of two up to 64" >&2; exit 2 ;; esac
if [ $((N % G)) != 0 ] || [ $((N % S)) != 0 ] || [ $((N / S)) -gt 19000 ] || [ "$G" -lt 2 ] || [ "$G" -gt 100 ]; then
	echo "fleet.sh: FLEET_N must be a multiple of FLEET_GATEWAYS (2..100) and of FLEET_SWARMS, at most 19000 per swarm" >&2
	exit 2
fi
Q=$((N / G))
SLICE_BITS=$((15 + $(awk -v s="$S" 'BEGIN { print log(s) / log(2) }')))

OUT=$(mktemp -d "${TMPDIR:-/tmp}/rs-fleet.XXXXXX")
CONFIG=fleet
: >"$OUT/$CONFIG"
PG_DIR=""
fleet_exit() {
	[ -z "$PG_DIR" ] || "$RS_LIB_DIR/../pg/pg_server.sh" stop "$PG_DIR" >/dev/null 2>&1
	rm -rf "$OUT"
}
trap fleet_exit EXIT

# slice K: swarm K's CIDR (K = 0..S-1), a 2^(32-SLICE_BITS) block of 198.18.0.0/15.
slice() {
	local size=$((1 << (32 - SLICE_BITS))) base=$(((198 << 24) | (18 << 16)))
	local a=$((base + $1 * size))
	echo "$((a >> 24 & 255)).$((a >> 16 & 255)).$((a >> 8 & 255)).$((a & 255))/$SLICE_BITS"
}
swarm_metrics_addr() { echo "127.0.0.$((62 + $1)):9300"; }
SWARM_PIDS=()
swarms_start() {
	local k
	for ((k = 0; k < S; k++)); do
		# shellcheck disable=SC2046,SC2086
		ip netns exec "$RS_NS" "$RS_BUILD/ringsteer-swarm" --service "$RS_SERVICE" --secret "$RS_SECRET" \
			--count $((N / S)) --prefix "f$k-" --bind "$(slice "$k")" --metrics "$(swarm_metrics_addr "$k")" \
			$(rs_sup_transport_args 0) $FLEET_SWARM_ARGS >"$RS_DIR/log/swarm.$k.log" 2>&1 &
		SWARM_PIDS[k]=$!
		disown "$!"
	done
}
swarms_stop() {
	local p
	for p in "${SWARM_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${SWARM_PIDS[@]}"; do await "a swarm exits after SIGTERM" 60 rs_gone "$p"; done
	SWARM_PIDS=()
}
# swarms_sum METRIC: METRIC summed over the swarms' pages.
swarms_sum() {
	local k urls=()
	for ((k = 0; k < S; k++)); do urls+=("http://$(swarm_metrics_addr "$k")/metrics"); done
	rs_ns curl -fsS --max-time 5 "${urls[@]}" | metric_of "$1"
}
sum_words() { awk '{ for (i = 1; i <= NF; i++) s += $i; print s + 0 }'; }
max_words() { awk '{ m = 0; for (i = 1; i <= NF; i++) if ($i > m) m = $i; print m }'; }

rs_require_netns
[ -x "$RS_BUILD/ringsteer-swarm" ] || { echo "fleet.sh: build first (make all)" >&2; exit 1; }
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rs-fleet-pg.XXXXXX")
"$RS_LIB_DIR/../pg/pg_server.sh" start "$PG_DIR" >/dev/null ||
	{ echo "fleet.sh: skipped (no PostgreSQL server: tests/pg/pg_server.sh)"; rm -rf "$PG_DIR"; PG_DIR=""; exit 77; }
RS_PG_DIR=$PG_DIR
ulimit -n "$(ulimit -Hn)" 2>/dev/null

rs_log "== fleet: $G gateways on PostgreSQL, $N supervisors from $S swarms"
# The cluster runs in a subshell: cluster_up sets its own EXIT trap, and the
# PostgreSQL server outlives it (fleet_exit stops it).
run_fleet() {
	local now g total t0 t1 want storm_ms cap rest page k h news
	cluster_up --gateways "$G"
	ip -n "$RS_NS" route add local 198.18.0.0/15 dev lo || fail "ip route add local 198.18.0.0/15 dev lo"
	GWS=$(seq 1 "$G")
	# Statements per second over three heartbeats (the counters move at each).
	SAMPLE_S=$((3 * RS_HEARTBEAT_MS / 1000 + 1))
	# shellcheck disable=SC2086
	sample "$SAMPLE_S" $GWS >"$RS_DIR/idle.samples"
	put stmts_0 "$(stmts_rate <"$RS_DIR/idle.samples")"

	# The storm: every gateway at exactly N/G, the attached total each second.
	want=$(for _ in $GWS; do printf '%s ' "$Q"; done)
	want=${want% }
	t0=$(rs_now_ms)
	swarms_start
	storm_ms=""
	: >"$RS_DIR/storm.timeline"
	while :; do
		now=$(rs_now_ms)
		# shellcheck disable=SC2086
		g=$(gauges $GWS) || g=""
		total=$(echo "$g" | sum_words)
		echo "$((now - t0)) $total" >>"$RS_DIR/storm.timeline"
		[ "$g" = "$want" ] && { storm_ms=$((now - t0)); break; }
		[ $((now - t0)) -lt $((FLEET_STORM_S * 1000)) ] || break
		sleep 1 # pacing the samples, nothing awaited
	done
	# attached per second: the increase between consecutive samples, the fewest
	# while the total was still short of N (the first sample's second excluded:
	# the swarms were starting)
	put storm_ms "${storm_ms:-not reached in ${FLEET_STORM_S}s}"
	[ -n "$storm_ms" ] || [ "$total" != "$N" ] || put storm_all_attached_uneven "$N attached, not N/G on each"
	put attached_at_end "$total"
	put attached_per_s_min "$(awk -v n="$N" 'NR > 2 && prev < n { d = ($2 - prev) * 1000 / ($1 - pt); if (m == "" || d < m) m = d } { prev = $2; pt = $1 } END { printf "%s", (m == "" ? "-" : sprintf("%.0f", m)) }' "$RS_DIR/storm.timeline")"
	put timeline "$(awk 'NR % 5 == 1 { printf "%s%d:%d", (NR > 1 ? "," : ""), $1 / 1000, $2 }' "$RS_DIR/storm.timeline")"
	# shellcheck disable=SC2086
	put gauges_after_storm "$(gauges $GWS | tr ' ' /)"
	# shellcheck disable=SC2086
	page=$(gw_pages $GWS)
	put degraded_accepts "$(printf '%s\n' "$page" | metric_of ringsteer_gateway_degraded_accepts_total)"
	put over_cap_accepts "$(printf '%s\n' "$page" | metric_of ringsteer_gateway_over_cap_accepts_total)"
	# Arrivals accepted because they asked to stay: after a redirect (at its
	# target), a redial, a failed redirect's Service fallback.  Stays beyond
	# the redirects are those kept where they landed, which the rule's cap
	# does not move (no rebalancer): what leaves the loads uneven.
	put stays "$(printf '%s\n' "$page" | metric_of ringsteer_gateway_stays_total)"
	put redirects "$(printf '%s\n' "$page" | metric_of ringsteer_gateway_redirects_total)"
	put shed_timed_out_expired "$(printf '%s\n' "$page" | metric_of ringsteer_gateway_arrivals_shed_total)/$(printf '%s\n' "$page" | metric_of ringsteer_gateway_arrivals_timed_out_total)/$(printf '%s\n' "$page" | metric_of ringsteer_gateway_arrivals_expired_total)"
	put store_queue_full "$(printf '%s\n' "$page" | metric_of ringsteer_gateway_store_queue_full_total)"
	put swarm_failures "$(swarms_sum ringsteer_swarm_failures_total)"
	put conntrack "$(rs_ns cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null || echo -)/$(cat /proc/sys/net/netfilter/nf_conntrack_max 2>/dev/null || echo -)"

	# The drain and the roll need everyone attached, evenly or not.
	if [ "$total" = "$N" ]; then
		# shellcheck disable=SC2086
		sample "$SAMPLE_S" $GWS >"$RS_DIR/full.samples"
		put stmts_n "$(stmts_rate <"$RS_DIR/full.samples")"

		# One gateway SIGTERMed: the other G-1 hold all N, none above the cap.
		cap=$(((N + G - 2) / (G - 1)))
		t1=$(rs_now_ms)
		drain_stop 1
		put drain_ms $(($(rs_now_ms) - t1))
		put drain_handed_off "$(grep 'event=drained ' "$(gw_log 1)" | logfield handed_off)"
		rest=$(seq 2 "$G")
		# shellcheck disable=SC2086
		await "gw-2..$G hold all $N" 60 gauges_sum_is "$N" $rest
		# shellcheck disable=SC2086
		g=$(gauges $rest)
		put drain_max_load "$(echo "$g" | max_words) (cap $cap)"
		put drain_loads "$(echo "$g" | tr ' ' /)"

		if [ "$FLEET_ROLL" = 1 ]; then
			ROLL_HANDED=0 ROLL_ABANDONED=0 ROLL_TIMED_OUT=0
			t1=$(rs_now_ms)
			for k in $rest; do
				roll_step "$k" $((k + G))
				rs_log "fleet: gw-$k -> gw-$((k + G)): handed off $ROLL_LAST"
			done
			put roll_wall_ms $(($(rs_now_ms) - t1))
			put roll_handoffs "$ROLL_HANDED"
			put roll_abandoned "$ROLL_ABANDONED"
			put roll_timed_out "$ROLL_TIMED_OUT"
			news=$(seq $((G + 2)) $((2 * G)))
			# shellcheck disable=SC2086
			await "the new gateways hold all $N" 120 gauges_sum_is "$N" $news
			put roll_gaps "$(swarms_sum ringsteer_swarm_gaps_total)"
			put roll_gap_max_s "$(rs_ns curl -fsS --max-time 5 $(for ((k = 0; k < S; k++)); do echo "http://$(swarm_metrics_addr "$k")/metrics"; done) |
				awk '$1 == "ringsteer_swarm_gap_max_seconds" && $2 > m { m = $2 } END { print m + 0 }')"
		fi
	fi
	swarms_stop
	cluster_down
}
(run_fleet) || rs_log "== fleet: FAILED (its figures so far are kept)"

echo
echo "== issue 27: $G gateways on PostgreSQL, N=$N supervisors from $S swarms, heartbeat ${RS_HEARTBEAT_MS} ms, TTL ${RS_TTL_MS} ms"
while read -r k v; do printf '%-24s %s\n' "$k" "$v"; done <"$OUT/$CONFIG"
echo "command: $CMDLINE"
