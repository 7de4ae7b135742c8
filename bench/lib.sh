# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib.sh - what the cluster benchmarks (scale.sh, fleet.sh) measure
# inside a cluster of tests/cluster/lib.sh (sourced after it): gauges and
# statement counters read from the gateways' /metrics pages, memory from
# /proc, a gateway drained.  put writes a figure to $OUT/$CONFIG.
# put KEY VALUE: one figure of the configuration running ($OUT/$CONFIG).
put() { echo "$1 $2" >>"$OUT/$CONFIG"; rs_log "$CONFIG: $1 = $2"; }

# gw_pages N...: the /metrics pages of gw-N..., concatenated (one curl).
gw_pages() {
	local n urls=()
	for n in "$@"; do urls+=("http://$(gw_addr "$n"):$RS_GW_METRICS_PORT/metrics"); done
	rs_ns curl -fsS --max-time 2 "${urls[@]}"
}
# gauges N...: the supervisors gauges of gw-N..., space-separated.
gauges() {
	local page n out=()
	page=$(gw_pages "$@") || return 1
	for n in "$@"; do
		out+=("$(printf '%s\n' "$page" | metric_of ringsteer_gateway_supervisors "gateway=\"gw-$n\"")")
	done
	echo "${out[*]}"
}
gauges_are() { # "A B C D" N...
	local want=$1
	shift
	[ "$(gauges "$@")" = "$want" ]
}
gauges_sum_is() { # SUM N...
	local want=$1
	shift
	[ "$(gauges "$@" | awk '{ for (i = 1; i <= NF; i++) s += $i; print s + 0 }')" = "$want" ]
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# RssAnon: the process's own memory, without the shared libraries' pages it
# touched for the first time during the storm (libcrypto's HMAC and TLS code:
# about 2 MB, once, whatever N; VmRSS counts them).
anon_kib() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"; }

# settle N...: each gw-N's statements counter moves twice (two heartbeats,
# so malloc_trim has run since whatever came before).
settle() {
	local n v0 i
	for n in "$@"; do
		v0=$(metric "$n" ringsteer_gateway_store_statements_total)
		for i in 1 2; do
			await "gw-$n heartbeats" 10 rs_moved "$n" "$v0"
			v0=$(metric "$n" ringsteer_gateway_store_statements_total)
		done
	done
}
rs_moved() { [ "$(metric "$1" ringsteer_gateway_store_statements_total)" != "$2" ]; }

# sample SECONDS N...: polls gw-N... for SECONDS; prints "ms n statements
# rss_kib" lines (one per gateway per poll).  The pause between polls only
# paces the sampling: nothing is awaited here.
sample() {
	local secs=$1 t end page n
	shift
	end=$(($(rs_now_ms) + secs * 1000))
	while :; do
		t=$(rs_now_ms)
		[ "$t" -lt "$end" ] || break
		page=$(gw_pages "$@") || continue
		for n in "$@"; do
			echo "$t $n $(printf '%s\n' "$page" | metric_of ringsteer_gateway_store_statements_total "gateway=\"gw-$n\"") $(rss_kib "${RS_GW_PID[$n]}") $(anon_kib "${RS_GW_PID[$n]}")"
		done
		sleep 0.1
	done
}
# stmts_rate: statements/s summed over the gateways of sample's output on
# stdin, each gateway's from its first to its last change of value.
stmts_rate() {
	awk '{
		if (($2 in prev) && $3 != prev[$2]) {
			if (!($2 in t0)) { t0[$2] = $1; v0[$2] = $3 }
			t1[$2] = $1; v1[$2] = $3
		}
		prev[$2] = $3
	} END {
		for (n in t0) if (t1[n] > t0[n]) { s += (v1[n] - v0[n]) * 1000 / (t1[n] - t0[n]); k++ }
		if (k) printf "%.1f\n", s; else print "-"
	}'
}
# rss_min: "n min_rss_kib" per gateway of sample's output on stdin.
rss_min() { awk '!($2 in m) || $4 < m[$2] { m[$2] = $4 } END { for (n in m) print n, m[n] }'; }
# anon_min: the same for RssAnon.
anon_min() { awk '!($2 in m) || $5 < m[$2] { m[$2] = $5 } END { for (n in m) print n, m[n] }'; }

# drain_stop K: SIGTERM gw-K (the Service drops it first) and await its
# exit past its drain budget (25 s) with room to spare.
drain_stop() {
	local k=$1 pid=${RS_GW_PID[$1]}
	RS_GW_PID[$k]=""
	svc_update
	kill -TERM "$pid"
	await "gw-$k exits after its drain" 60 rs_gone "$pid"
}

# roll_step K NEW: one step of a surge-first rolling restart: gw-NEW
# started, then gw-K drained (drain_stop).  Adds gw-K's handed_off,
# abandoned and timed-out handoffs (its log) to ROLL_HANDED,
# ROLL_ABANDONED and ROLL_TIMED_OUT, and sets ROLL_LAST to it (not run in
# $(...): the gateways it starts and stops are the caller's).
ROLL_HANDED=0 ROLL_ABANDONED=0 ROLL_TIMED_OUT=0
roll_step() {
	local k=$1 glog h
	gw_start "$2"
	drain_stop "$k"
	glog=$(gw_log "$k")
	h=$(grep 'event=drained ' "$glog" | logfield handed_off)
	ROLL_HANDED=$((ROLL_HANDED + ${h:-0}))
	ROLL_ABANDONED=$((ROLL_ABANDONED + $(log_count "$glog" 'event=handoff_abandoned')))
	ROLL_TIMED_OUT=$((ROLL_TIMED_OUT + $(log_count "$glog" 'event=handoff_timeout')))
	ROLL_LAST=${h:-?}
}
