#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/compare/evenness.sh - evenness and stability of each contender
# (issue 18, `make compare`).
#
# For every contender (bench/compare/lib.sh: the Service alone, HAProxy
# leastconn and bounded-load consistent source hash with one and two
# replicas, nginx stream consistent hash, ringsteer's redirect path and
# ringsteer with kernel steering), on a fresh cluster of 4 gateways
# (ringsteer-kernel on the Kubernetes-shaped one, see below):
#   evenness (max-min and max/mean of the gateways' own gauge
#   ringsteer_gateway_supervisors) after a storm start of N supervisors,
#   after each of R rounds of restarting all of them, [full form: after a
#   surge-first rolling restart of the gateways, after a gateway SIGKILL];
#   stability: supervisors moved by a token refresh (SIGUSR1), by a short
#   blip (their TCP connections destroyed, ss -K), by a gateway joining
#   (gw-5); affinity: the share of a sample that come back to the same
#   gateway when restarted alone, one at a time.
# Every figure is measured here.  Writes OUT/evenness.tsv (contender,
# measure, value) and OUT/rounds.tsv (contender, round, max_minus_min;
# round 0 is the storm start).  QUICK=1: 40 supervisors, 2 rounds, an
# affinity sample of 2, no rolling restart or SIGKILL; then it checks that
# every contender produced every figure.
#
# ringsteer-kernel runs on tests/cluster/pods.sh (bench/compare/lib.sh,
# cmp_topology): 2 nodes, every gateway and supervisor its own pod, an agent
# per node steering at connect time, kube-proxy's DNAT behind it.  That is
# what users run on Kubernetes; sk_lookup on one flat namespace (gateways
# registering with the agent) is not.  The measures are the same; a blip
# there destroys the connections in the gateway pods (sups_blip_all).
# OUT/steering.tsv (contender, measure, value), ringsteer-redirect and
# ringsteer-kernel only: storm_redirects_per_arrival (placement redirects
# the gateways sent during the storm start, per supervisor) and, for
# ringsteer-kernel, storm_dnat_per_arrival (connects kube-proxy's DNAT took
# during the storm, per supervisor: near 0 when the agent steered them; the
# contender fails when they exceed the supervisors that fell back to the
# Service with a logged reason, plus a tenth, or fewer than a tenth were
# steered before their first dial: tests/cluster/pods.sh sup_first_steer).
#
# usage: bench/compare/evenness.sh BUILD_DIR OUT_DIR [CONTENDER...]
# Full form: 40 supervisors, ROUNDS=20, an affinity sample of 40, the rolling
# restart and the SIGKILL.  SUPS="40 400" adds a pass per count (a count
# other than the first gets the contender suffix "@N" in the TSVs), at most
# 500 (each supervisor its own address: 127.0.2.M, then 127.0.3.(M-250); on
# pods 198.18.(100+K).M, then 198.18.(110+K).(M-254)).  CMP_JOBS:
# contenders run side by side.
set -u
# shellcheck disable=SC2034 # (tests/cluster/lib.sh reads these)
RS_BUILD=${1:?usage: evenness.sh BUILD_DIR OUT_DIR [CONTENDER...]}
CMP_OUT=${2:?usage: evenness.sh BUILD_DIR OUT_DIR [CONTENDER...]}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../tests/cluster/lib.sh
. "$HERE/../../tests/cluster/lib.sh"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
	SUPS=${SUPS:-40} ROUNDS=${ROUNDS:-2} AFFINITY=${AFFINITY:-2} CMP_SETTLE_MS=${CMP_SETTLE_MS_QUICK:-300}
else
	SUPS=${SUPS:-40} ROUNDS=${ROUNDS:-20} AFFINITY=${AFFINITY:-40}
fi
for n in $SUPS; do
	# One supervisor process per address (sup_addr): 127.0.2.0/23 holds 500.
	[ "$n" -ge 1 ] && [ "$n" -le 500 ] || { echo "evenness.sh: SUPS=$n: 1..500 supervisors" >&2; exit 2; }
done
contenders=("$@")
[ ${#contenders[@]} -gt 0 ] || read -r -a contenders <<<"$CMP_CONTENDERS"
mkdir -p "$CMP_OUT"
# The storm start mints every token (sups_start); restarts reuse them.
RS_SUP_KEEP_TOKEN=1
: >"$CMP_OUT/evenness.tsv"
: >"$CMP_OUT/rounds.tsv"
: >"$CMP_OUT/steering.tsv"

# Await: every one of sup-1..N has attached at least once more than in
# the "sup-M count" list $1 (sup_attach_counts), and the store agrees.
# reattached BEFORE [M...] (default: everyone).
reattached() {
	local before=$1 m c b
	shift
	local mem=("$@")
	[ ${#mem[@]} -gt 0 ] || mem=("${ALL[@]}")
	while read -r m c; do
		b=$(printf '%s\n' "$before" | awk -v m="$m" '$1 == m { print $2 }')
		[ "$c" -gt "${b:-0}" ] || return 1
	done < <(sup_attach_counts "${mem[@]}")
	all_attached "${mem[@]}"
}
# quiet_blip M: sup-M's TCP connection destroyed (as sup_blip, without the log
# line), in the namespace sup-M runs in (its pod's on pods).
quiet_blip() {
	local a
	a=$(sup_addr "$1")
	ip netns exec "$(sup_ns "$1")" ss -K -t -n state established "( src $a or dst $a )" >/dev/null 2>&1
}

# The gateways' placement redirects so far (outcome="redirect", all reasons).
cmp_redirects() {
	local g s=0 v
	for ((g = 1; g <= CMP_GWS_MAX; g++)); do
		gw_alive "$g" || continue
		v=$(metric "$g" ringsteer_gateway_placements_total 'outcome="redirect"') || return 1
		s=$((s + v))
	done
	echo "$s"
}
steer_emit() { printf '%s\t%s\t%s\n' "$LABEL" "$1" "$2" >>"$CMP_STEER_TSV"; }

record() { # LABEL MEASURE-PREFIX: evenness of the settled loads
	local s
	s=$(cmp_spread "$CMP_LOADS")
	emit "$LABEL" "${1}_max_minus_min" "${s% *}"
	emit "$LABEL" "${1}_max_over_mean" "${s#* }"
	rs_log "$LABEL $1: loads $CMP_LOADS -> max-min ${s% *}, max/mean ${s#* }"
}

run_contender() {
	local c=$1 n=$2 m r g before back t0
	LABEL=$c
	[ "$n" = "${SUPS%% *}" ] || LABEL="$c@$n"
	mapfile -t ALL < <(seq 1 "$n")
	local deadline=$((30 + n / 4))
	# A gateway's drain hands its supervisors off 64 at a time; where they
	# cannot follow a redirect (the Service, the proxies) each batch waits
	# out --handoff-timeout (5 s): 100 of them outlast lib.sh's 10 s.
	# shellcheck disable=SC2034 # (read by lib.sh's rs_gw_signal)
	RS_GW_EXIT_S=$deadline
	cmp_up "$c"
	t0=$(rs_now_ms)
	emit "$LABEL" supervisors "$n"
	local dnat0=0
	# shellcheck disable=SC2119 # (svc_dnat_count: every node)
	[ "$(cmp_topology "$c")" != pods ] || dnat0=$(svc_dnat_count)

	# Storm start: everyone at once (their pods made first: sups_start).
	sups_start "${ALL[@]}"
	await "$LABEL: storm, all attached" "$deadline" all_attached "${ALL[@]}"
	cmp_settle "$n" "$deadline"
	record storm
	if [ "$CMP_INPROTO" = 1 ]; then
		# Steering: how many arrivals the gateways had to redirect, and (pods)
		# how many connects kube-proxy's DNAT took instead of the agent.
		local red per
		red=$(cmp_redirects) || fail "$LABEL: gateways' redirect counters unreadable"
		per=$(awk -v r="$red" -v n="$n" 'BEGIN { printf "%.3f", r / n }')
		steer_emit storm_redirects_per_arrival "$per"
		if [ "$(cmp_topology "$c")" = pods ]; then
			local dnat steered k v res results=""
			# shellcheck disable=SC2119 # (every node)
			dnat=$(($(svc_dnat_count) - dnat0))
			steer_emit storm_dnat_per_arrival "$(awk -v d="$dnat" -v n="$n" 'BEGIN { printf "%.3f", d / n }')"
			# The agents' connect counters, summed over the nodes, by result.
			for res in steered miss expired target_down; do
				steered=0
				for ((k = 1; k <= CMP_NODES; k++)); do
					v=$(node_agent_metric "$k" ringsteer_agent_connects_total "$res")
					steered=$((steered + ${v:-0}))
				done
				results+=" $res=$steered"
			done
			rs_log "$LABEL storm steering: $red redirects for $n supervisors ($per per arrival), DNAT took $dnat connects, agents' connects:$results"
			# A supervisor whose agent (or its store) did not answer in time
			# dials the Service by design; the DNAT's connects beyond those
			# fallbacks (and a tenth more) mean the agents did not steer.
			local m how fellback=0 first_steered=0
			for m in "${ALL[@]}"; do
				how=$(sup_first_steer "$m")
				case $how in
				steered) first_steered=$((first_steered + 1)) ;;
				fallback) fellback=$((fellback + 1)) ;;
				*) fail "$LABEL: sup-$m's first dial: $how" ;;
				esac
			done
			rs_log "$LABEL storm: $first_steered steered before their first dial, $fellback fell back to the Service (reasons logged)"
			[ "$first_steered" -ge $((n / 10)) ] || fail "$LABEL: only $first_steered of $n were steered before their first dial"
			[ "$dnat" -le $((fellback + n / 10)) ] ||
				fail "$LABEL: the DNAT took $dnat of $n storm connects, more than the $fellback fallbacks explain: the agents did not steer"
		else
			rs_log "$LABEL storm steering: $red redirects for $n supervisors ($per per arrival)"
		fi
	fi
	printf '%s\t0\t%s\n' "$LABEL" "$(cmp_spread "$CMP_LOADS" | cut -d' ' -f1)" >>"$CMP_ROUNDS_TSV"

	rs_log "$LABEL: rounds"
	# R rounds: stop everyone, start everyone.
	local sum=0 worst=0 ratio_sum=0 s
	for ((r = 1; r <= ROUNDS; r++)); do
		sups_stop "${ALL[@]}"
		for m in "${ALL[@]}"; do sup_start "$m"; done # tokens kept (RS_SUP_KEEP_TOKEN)
		await "$LABEL round $r: all attached" "$deadline" all_attached "${ALL[@]}"
		cmp_settle "$n" "$deadline"
		s=$(cmp_spread "$CMP_LOADS")
		printf '%s\t%d\t%s\n' "$LABEL" "$r" "${s% *}" >>"$CMP_ROUNDS_TSV"
		sum=$((sum + ${s% *}))
		[ "${s% *}" -le "$worst" ] || worst=${s% *}
		ratio_sum=$(awk -v a="$ratio_sum" -v b="${s#* }" 'BEGIN { printf "%.3f", a + b }')
	done
	emit "$LABEL" rounds_mean_max_minus_min "$(awk -v s="$sum" -v r="$ROUNDS" 'BEGIN { printf "%.2f", s / r }')"
	emit "$LABEL" rounds_worst_max_minus_min "$worst"
	emit "$LABEL" rounds_mean_max_over_mean "$(awk -v s="$ratio_sum" -v r="$ROUNDS" 'BEGIN { printf "%.3f", s / r }')"

	rs_log "$LABEL: refresh"
	# Token refresh: ringsteer's supervisors get SIGUSR1 (a make-before-break
	# redial of their gateway asking to STAY); a client of the Service or of
	# a proxy has no such thing: it reconnects through the front, one at a
	# time as tokens expire at different times (its connection closed, ss -K).
	before=$(cmp_map)
	local counts
	counts=$(sup_attach_counts "${ALL[@]}")
	if [ "$CMP_INPROTO" = 1 ]; then
		for m in "${ALL[@]}"; do kill -USR1 "${RS_SUP_PID[$m]}"; done
	else
		# In batches of REFRESH_BATCH (QUICK: n/4, else n/20, at least 1).
		local batch=${REFRESH_BATCH:-$((n / (QUICK == 1 ? 4 : 20)))} i
		[ "$batch" -ge 1 ] || batch=1
		for ((i = 0; i < n; i += batch)); do
			local part=("${ALL[@]:i:batch}")
			for m in "${part[@]}"; do quiet_blip "$m"; done
			await "$LABEL: sups ${part[0]}.. reconnected (refresh)" 15 reattached "$counts" "${part[@]}"
		done
	fi
	await "$LABEL: all reattached after a token refresh" "$deadline" reattached "$counts"
	cmp_settle "$n" "$deadline"
	emit "$LABEL" moved_by_refresh "$(cmp_moved "$before" "$(cmp_map)")"

	rs_log "$LABEL: blip"
	# Short blip: every supervisor's TCP connection destroyed at once.
	before=$(cmp_map)
	counts=$(sup_attach_counts "${ALL[@]}")
	sups_blip_all
	await "$LABEL: all reattached after a blip" "$deadline" reattached "$counts"
	cmp_settle "$n" "$deadline"
	emit "$LABEL" moved_by_blip "$(cmp_moved "$before" "$(cmp_map)")"

	rs_log "$LABEL: affinity"
	# Affinity: restart a sample alone, one at a time.
	back=0
	local k=$AFFINITY
	[ "$k" -le "$n" ] || k=$n
	for ((m = 1; m <= k; m++)); do
		g=$(where "$m")
		sup_stop "$m"
		sup_start "$m"
		await "$LABEL: sup-$m attached again" 15 all_attached "$m"
		[ "$(where "$m")" = "$g" ] && back=$((back + 1))
	done
	emit "$LABEL" affinity_share "$(awk -v b="$back" -v k="$k" 'BEGIN { printf "%.3f", b / k }')"
	cmp_settle "$n" "$deadline"

	rs_log "$LABEL: join"
	# A fifth gateway joins.
	before=$(cmp_map)
	cmp_gw_join 5
	cmp_settle "$n" "$deadline"
	emit "$LABEL" moved_by_join "$(cmp_moved "$before" "$(cmp_map)")"
	record after_join

	if [ "$QUICK" != 1 ]; then
		# Surge-first rolling restart of gw-1..4 (gw-5, just joined, is the
		# surge), then the surge leaves.
		for ((g = 1; g <= CMP_GWS; g++)); do
			gw_restart "$g"
			cmp_settle "$n" "$deadline"
		done
		gw_stop 5
		cmp_settle "$n" "$deadline"
		record after_rolling
		# A gateway SIGKILLed: its supervisors land elsewhere.
		gw_kill "$CMP_GWS"
		cmp_settle "$n" "$deadline"
		record after_sigkill
	fi
	emit "$LABEL" seconds "$(awk -v d="$(($(rs_now_ms) - t0))" 'BEGIN { printf "%.1f", d / 1000 }')"
	cluster_down
}

# Contenders run CMP_JOBS at a time (QUICK: 4, else 1), each on its own
# cluster (its own namespace), writing OUT/parts/LABEL.{tsv,rounds.tsv,log};
# the parts are joined in contender order at the end.
CMP_JOBS=${CMP_JOBS:-$([ "$QUICK" = 1 ] && echo 4 || echo 1)}
mkdir -p "$CMP_OUT/parts"
rm -f "$CMP_OUT"/parts/*
labels=()
declare -A job_label=() # running jobs: pid -> label
# job_reap: waits for whichever running contender ends first (a free slot
# goes to the next one at once, not when the oldest ends); its status, its
# log on failure.
job_reap() {
	local pid rc l
	wait -n -p pid "${!job_label[@]}"
	rc=$?
	l=${job_label[$pid]}
	unset "job_label[$pid]"
	[ "$rc" -ne 77 ] || skipped=1
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "evenness.sh: $l failed ($rc); its log:" >&2
		cat "$CMP_OUT/parts/$l.log" >&2
	fi
	return "$rc"
}
rc=0 skipped=0
for count in $SUPS; do
	for c in "${contenders[@]}"; do
		l=$c
		[ "$count" = "${SUPS%% *}" ] || l="$c@$count"
		labels+=("$l")
		(
			CMP_TSV="$CMP_OUT/parts/$l.tsv" CMP_ROUNDS_TSV="$CMP_OUT/parts/$l.rounds.tsv"
			CMP_STEER_TSV="$CMP_OUT/parts/$l.steering.tsv"
			RS_NS_PREFIX="rscmp-$$-${#labels[@]}"
			: >"$CMP_TSV"; : >"$CMP_ROUNDS_TSV"; : >"$CMP_STEER_TSV"
			# The pod topology for its contender only (top level of this
			# subshell: pods.sh's declare -A must not be a function's locals).
			if [ "$(cmp_topology "$c")" = pods ]; then
				# shellcheck source=../../tests/cluster/pods.sh
				. "$HERE/../../tests/cluster/pods.sh"
			fi
			run_contender "$c" "$count"
		) >"$CMP_OUT/parts/$l.log" 2>&1 &
		job_label[$!]=$l
		echo "evenness.sh: $l started ($count supervisors)"
		[ ${#job_label[@]} -lt "$CMP_JOBS" ] || job_reap || rc=1
	done
done
while [ ${#job_label[@]} -gt 0 ]; do job_reap || rc=1; done
for l in "${labels[@]}"; do
	cat "$CMP_OUT/parts/$l.tsv" >>"$CMP_OUT/evenness.tsv" 2>/dev/null
	cat "$CMP_OUT/parts/$l.rounds.tsv" >>"$CMP_OUT/rounds.tsv" 2>/dev/null
	cat "$CMP_OUT/parts/$l.steering.tsv" >>"$CMP_OUT/steering.tsv" 2>/dev/null
	grep -E ' (storm|after_[a-z]+): loads | storm steering: | storm: [0-9]+ steered ' "$CMP_OUT/parts/$l.log" | sed "s/^/  /"
done
# Skipped (77: not root, no network namespaces) when any contender was.
[ "$skipped" = 0 ] || { echo "evenness.sh: skipped (no network namespace)" >&2; exit 77; }
[ "$rc" -eq 0 ] || exit 1

# Every contender produced every figure.
want="supervisors storm_max_minus_min storm_max_over_mean rounds_mean_max_minus_min rounds_worst_max_minus_min
rounds_mean_max_over_mean moved_by_refresh moved_by_blip affinity_share moved_by_join
after_join_max_minus_min after_join_max_over_mean seconds"
[ "$QUICK" = 1 ] || want+=" after_rolling_max_minus_min after_rolling_max_over_mean after_sigkill_max_minus_min after_sigkill_max_over_mean"
missing=""
for n in $SUPS; do
	for c in "${contenders[@]}"; do
		l=$c
		[ "$n" = "${SUPS%% *}" ] || l="$c@$n"
		for w in $want; do
			awk -F'\t' -v c="$l" -v w="$w" '$1 == c && $2 == w && $3 ~ /^[0-9.]+$/ { f = 1 } END { exit !f }' \
				"$CMP_OUT/evenness.tsv" || missing+=" $l/$w"
		done
		[ "$(awk -F'\t' -v c="$l" '$1 == c' "$CMP_OUT/rounds.tsv" | wc -l)" -eq $((ROUNDS + 1)) ] || missing+=" $l/rounds.tsv"
	done
done
[ -z "$missing" ] || { echo "evenness.sh: missing figures:$missing" >&2; exit 1; }
echo "evenness.sh: ${#contenders[@]} contenders x ($SUPS) supervisors, all figures in $CMP_OUT/evenness.tsv"
