#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 4 of issue 25's matrix: a wall-clock step of +-2 x TTL on one
# gateway.  A time namespace cannot move CLOCK_REALTIME, so gw-1 and gw-2
# run under libfaketime (LD_PRELOAD, an offset read from a file this test
# rewrites, no cache), with FAKETIME_DONT_FAKE_MONOTONIC=1: only their
# CLOCK_REALTIME moves (what an NTP step does; CLOCK_MONOTONIC never
# steps), so their timers, budgets and deadlines (monotonic) run on, and
# what they write to the store and compare with it (heartbeats, expiries,
# tokens: the wall clock) is off by the step.  Three gateways, 20
# supervisors attached, then:
#   +2 x TTL on gw-1   for 3 x TTL nobody is dead by the others' clock (the
#                      store's gateways live at --ttl, read with the real
#                      clock as gw-2 and gw-3 read it) and nothing moves;
#                      then gw-1 gets SIGTERM while still stepped: its drain
#                      hands everyone off (none abandoned, none timed out)
#                      within its budget, to gw-2 and gw-3
#   -2 x TTL on gw-2   the same, gw-2 drained to gw-3 while stepped back
# and at the end every supervisor is attached (those of gw-3 untouched),
# gauges = ledger, the re-placements within 2 x TTL of each drain's end.
# The case runs on SQLite, then on PostgreSQL (a server of its own,
# tests/pg/pg_server.sh; with RS_PG_DIR set, on that one only).
# On PostgreSQL liveness is on the server's clock (its now() with every
# begin, the skew each gateway measures applied to its times: store_pg.c),
# so every check is fatal there, and the step is seen in
# ringsteer_gateway_store_clock_skew_seconds rather than in the rows.
# On SQLite there is no server: every row time is the writer's wall clock
# and a row is live while heartbeat_ms >= now - ttl with the reader's now
# (store_internal.h, rs_store_gateway_live).  All gateways of one SQLite
# file share one machine's CLOCK_REALTIME, so one process stepped alone (as
# libfaketime does here) is not a fault production can have; what it shows
# is printed as a FINDING, fatal only with RS_FAULTS_STRICT=1: gw-2 stepped
# back writes heartbeats 2 x TTL old and is dead to the others; gw-1 stepped
# ahead reads its peers' heartbeats as 2 x TTL old, and its drain, finding
# no other live gateway, hands nobody off and closes everyone at its budget.
. "$(dirname "$0")/faults_lib.sh"

FT_LIB=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 2>/dev/null | head -n 1)
[ -n "$FT_LIB" ] || { echo "missing: libfaketime (make deps)" >&2; exit 1; }
BUDGET_MS=4000
STEP_S=$(awk -v t="$RS_TTL_MS" 'BEGIN { printf "%g", 2 * t / 1000 }')
ft_dir=$(mktemp -d "${TMPDIR:-/tmp}/faketime.XXXXXX")
echo "+0" >"$ft_dir/gw-1.rc"
echo "+0" >"$ft_dir/gw-2.rc"
# ft_step N OFFSET: gw-N's wall clock is OFFSET seconds off from now on
# (written whole, then renamed: the library reads the file on every call).
ft_step() { echo "$2" >"$ft_dir/gw-$1.rc.new" && mv "$ft_dir/gw-$1.rc.new" "$ft_dir/gw-$1.rc"; }
gw_exec() {
	local n=$1
	shift
	if [ -f "$ft_dir/gw-$n.rc" ]; then
		exec ip netns exec "$(gw_ns "$n")" env LD_PRELOAD="$FT_LIB" FAKETIME_TIMESTAMP_FILE="$ft_dir/gw-$n.rc" \
			FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 "$@"
	fi
	exec ip netns exec "$(gw_ns "$n")" "$@"
}
pg_dir="" ft_keep=0
rs_down_hook() {
	[ -z "$pg_dir" ] || "$(dirname "$0")/../pg/pg_server.sh" stop "$pg_dir" >/dev/null 2>&1
	pg_dir=""
	[ "$ft_keep" = 1 ] || rm -rf "$ft_dir"
}
RS_GW_ARGS="--drain-budget $BUDGET_MS"

# The store's gateways as a peer with the real clock sees them at --ttl:
# "id live heartbeat_age_ms" (age < 0: written ahead of the real clock).
gw_rows() {
	local now
	now=$(rs_now_ms)
	ctl gateways --store "$RS_STORE" --all --json --ttl "$RS_TTL_MS" |
		jq -r --argjson now "$now" '.[] | "\(.id) \(.live) \(($now - .heartbeat_ms) | floor)"'
}
# all_live K: at least K gateways live by the real clock.
all_live() { [ "$(gw_rows | awk '$2 == "true"' | wc -l)" -ge "$1" ]; }
# gw_ahead N MS: gw-N's heartbeat row is at least MS ahead of the real clock
# (MS < 0: behind), so the step has reached what it writes.
gw_ahead() { gw_rows | awk -v g="gw-$1" -v ms="$2" '$1 == g { a = -$3; exit !(ms >= 0 ? a >= ms : a <= ms) } END { if (!NR) exit 1 }'; }
# unmoved M...: each sup-M's newest active row has the gateway and epoch
# it was marked with, live or not: a row that looks dead by the real clock
# (a finding, above) has not moved.
unmoved() {
	local m mem gw ep
	local -A row=()
	while read -r mem gw ep; do
		row[$mem]="$gw $ep"
	done < <(rs_sessions_json | jq -r '[.[] | select(.state == "active")] | group_by(.member_id)
		| map(max_by(.epoch)) | .[] | "\(.member_id) \(.gateway_id) \(.epoch)"')
	for m in "$@"; do [ "${row[sup-$m]:-}" = "${FAULTS_MARK[$m]}" ] || return 1; done
}
on_gw() { local n=$1 m; for m in $(seq 1 "$FAULTS_N"); do [ "${FAULTS_MARK[$m]%% *}" = "gw-$n" ] && echo "$m"; done; }
min_live=3
# finding MSG: a wanted property the gateway does not have yet (issue 25:
# liveness compares the nodes' wall clocks); printed, and fatal with
# RS_FAULTS_STRICT=1.
FINDINGS=()
finding() {
	rs_log "FINDING: $*"
	FINDINGS+=("$*")
	[ "${RS_FAULTS_STRICT:-0}" != 1 ] && [ "$FT_STORE" != postgresql ] || fail "$*"
}
# skew_is N OFFSET: gw-N's store measures its clock OFFSET s off the
# server's (ringsteer_gateway_store_clock_skew_seconds = server - local, so
# about -OFFSET), within half a second: the step reached gw-N's clock.
skew_is() {
	local v
	v=$(metric "$1" ringsteer_gateway_store_clock_skew_seconds) || return 1
	awk -v v="$v" -v o="$2" 'BEGIN { d = v + o; exit !(d < 0.5 && d > -0.5) }'
}

# step N OFFSET: the step, then 3 x TTL (long past the TTL at which a peer
# would have declared gw-N dead) in which nobody may be dead by the real
# clock at --ttl and nothing may move (polled; a dead row is a finding, a
# move fails the test).
step() {
	local n=$1 off=$2 ahead t0 dead="" first=""
	ahead=$(awk -v o="$off" 'BEGIN { printf "%d", o * 1000 * 3 / 4 }')
	t0=$(rs_now_ms)
	ft_step "$n" "$off"
	if [ "$FT_STORE" = postgresql ]; then
		# Liveness is on the server's clock: the step shows in the skew
		# gw-N measures, not in the rows it writes.
		await "gw-$n's store clock skew at ${off} s" 5 skew_is "$n" "$off"
		echo "gw-$n stepped ${off} s: skew $(metric "$n" ringsteer_gateway_store_clock_skew_seconds) s"
	else
		await "gw-$n's heartbeat row ${off} s off the real clock" 5 gw_ahead "$n" "$ahead"
	fi
	echo "gw-$n stepped ${off} s: rows (id live age_ms): $(gw_rows | tr '\n' ';')"
	while [ $(($(rs_now_ms) - t0)) -lt $((3 * RS_TTL_MS)) ]; do
		if ! all_live "$min_live"; then
			[ -n "$first" ] || first=$(($(rs_now_ms) - t0))
			dead=$(gw_rows | awk '$2 != "true" { printf "%s%s (age %s ms)", sep, $1, $3; sep = ", " }')
		fi
		unmoved $(seq 1 "$FAULTS_N") || fail "a supervisor moved while gw-$n was ${off} s off"
		sleep 0.05
	done
	[ -z "$first" ] || finding "gw-$n ${off} s off: declared dead by the real clock at --ttl ${first} ms after the step: $dead"
	echo "gw-$n ${off} s off for $((3 * RS_TTL_MS)) ms: nothing moved${first:+; dead: $dead}"
}

# drain N: SIGTERM gw-N (still stepped): every one of its supervisors
# handed off within the budget, none abandoned or timed out, each attached
# again within 2 x TTL of the drain's end.
drain() {
	local n=$1 pid=${RS_GW_PID[$1]} t0 took glog handed ab to mine
	mine=$(on_gw "$n" | tr '\n' ' ')
	glog=$(gw_log "$n")
	t0=$(rs_now_ms)
	RS_GW_PID[$n]=""
	svc_update
	kill -TERM "$pid"
	await "gw-$n exits after its drain" $(((BUDGET_MS + 5000) / 1000)) rs_gone "$pid"
	took=$(($(rs_now_ms) - t0))
	handed=$(grep 'event=drained ' "$glog" | logfield handed_off)
	ab=$(log_count "$glog" 'event=handoff_abandoned')
	to=$(log_count "$glog" 'event=handoff_timeout')
	echo "gw-$n drained in $took ms (budget $BUDGET_MS): handed off ${handed:-?} of $(echo $mine | wc -w), abandoned $ab, timed out $to"
	[ "$ab" = 0 ] && [ "$to" = 0 ] || finding "gw-$n's drain abandoned $ab, timed out $to"
	[ "${handed:-}" = "$(echo $mine | wc -w)" ] || finding "gw-$n handed off ${handed:-none} of $(echo $mine | wc -w)"
	[ "$took" -le $((BUDGET_MS + 1000)) ] || fail "gw-$n's drain took $took ms, past its $BUDGET_MS ms budget"
	# shellcheck disable=SC2086
	faults_recovered_within $((2 * RS_TTL_MS)) "gw-$n's supervisors attached again after its drain" all_attached $mine
	local m
	for m in $mine; do [ "$(where "$m")" != "gw-$n" ] || fail "sup-$m still on gw-$n"; done
}

# scenario STORE: the whole case on one cluster; STORE names its store.
scenario() {
	local label=$1 d1 d2 n
	FT_STORE=$label
	ft_step 1 +0
	ft_step 2 +0
	min_live=3 FINDINGS=()
	faults_up 3 20
	faults_mark
	for n in 1 2 3; do echo "[$label] gw-$n serves $(on_gw "$n" | wc -l)"; done
	d1=$(on_gw 1 | tr '\n' ' ')
	step 1 "+$STEP_S"
	drain 1
	min_live=2
	faults_mark # gw-1's moved
	d2=$(on_gw 2 | tr '\n' ' ')
	step 2 "-$STEP_S"
	drain 2
	min_live=1
	# shellcheck disable=SC2086
	faults_check $d1 $d2
	if [ ${#FINDINGS[@]} -gt 0 ]; then
		echo "f_7 [$label]: gw-1 +${STEP_S} s and gw-2 -${STEP_S} s off the wall clock: nothing moved, nothing lost; ${#FINDINGS[@]} finding(s): $(printf '[%s] ' "${FINDINGS[@]}")"
	else
		echo "f_7 [$label]: gw-1 +${STEP_S} s and gw-2 -${STEP_S} s off the wall clock: nobody dead by mistake, both drains handed everyone off within their budget"
	fi
}

if [ -n "${RS_PG_DIR:-}" ]; then
	scenario postgresql
	exit 0
fi
scenario sqlite
# On PostgreSQL too (issue 25), on a server of this test's own.
ft_keep=1
cluster_down
ft_keep=0
# Under /tmp: the server's UNIX socket lives in it (a sun_path holds 107 bytes).
pg_dir=$(mktemp -d /tmp/rs-pg.XXXXXX)
"$(dirname "$0")/../pg/pg_server.sh" start "$pg_dir" >/dev/null || { rm -rf "$ft_dir"; fail "no PostgreSQL server (tests/pg/pg_server.sh)"; }
RS_PG_DIR=$pg_dir
scenario postgresql
