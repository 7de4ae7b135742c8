#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drain acceptance 6: sandboxes follow their supervisor.  Three gateways, 12
# supervisors with distinct sandbox counts, a surge-first rolling restart of
# the three (gw-4 for gw-1, gw-5 for gw-2, gw-6 for gw-3).  The sandbox
# counts in the ledger and in the gauges move with each handoff, and the sum
# over gateways is unchanged at every quiescent point.
#
# A quiescent point is after each step (gw_start NEW; gw_stop OLD, which
# awaits its exit), once all 12 are attached (awaited).  There:
# - ledger: each member's current row carries its own count (sessions json
#   .sandboxes), and the sum over the live gateways equals the sum of the
#   counts;
# - gauges (awaited, 5 s): each live gateway's ringsteer_gateway_supervisors
#   equals its ledger count and ringsteer_gateway_busiest_supervisor_sandboxes
#   the largest count among its members (0 if none).
# After a stop, additionally: each member OLD handed off is on the decision's
# target with its own count; each target's ledger sum grew by exactly the
# counts handed to it (nobody else's moved); the replacement's busiest gauge
# equals the largest count it received.
. "$(dirname "$0")/../cluster/lib.sh"

SUPS=12
all=$(seq 1 $SUPS)
boxes() { echo $(((7 * $1) % 23 + 1)); } # 8 15 22 6 13 20 4 11 18 2 9 16: distinct
declare -A want=()
total=0
for m in $all; do
	want[sup-$m]=$(boxes "$m")
	total=$((total + ${want[sup-$m]}))
done
names() { printf "gw-%s\n" "$@" | paste -sd, ; }

# gw_sums: "gw-N sum" of ledger sandboxes per gateway (current rows).
gw_sums() { current_map | awk '{ s[$3] += $4 } END { for (g in s) print g, s[g] }' | LC_ALL=C sort; }
sum_of() { echo "$1" | awk -v g="gw-$2" '$1 == g { print $2; f = 1 } END { if (!f) print 0 }'; }

# gauges_ok N...: each gw-N's two gauges agree with the ledger.
gauges_ok() {
	local map n c mx
	map=$(current_map)
	for n in "$@"; do
		c=$(echo "$map" | awk -v g="gw-$n" '$3 == g { c++ } END { print c + 0 }')
		mx=$(echo "$map" | awk -v g="gw-$n" '$3 == g && $4 > m { m = $4 } END { print m + 0 }')
		metric_is "$n" ringsteer_gateway_supervisors "$c" || return 1
		metric_is "$n" ringsteer_gateway_busiest_supervisor_sandboxes "$mx" || return 1
	done
}

# quiescent STEP N...: the checks of a quiescent point over live gw-N...
quiescent() {
	local step=$1 map bad s n
	shift
	await "$step: $SUPS supervisors attached" 20 all_attached $all
	map=$(current_map)
	bad=$(echo "$map" | while read -r mem _ gw b; do
		[ "$b" = "${want[$mem]}" ] || echo "$mem on $gw has $b, not ${want[$mem]};"
	done)
	[ -z "$bad" ] || fail "$step: ledger counts: $bad"
	s=0
	for n in "$@"; do s=$((s + $(sum_of "$(gw_sums)" "$n"))); done
	[ "$s" -eq "$total" ] || fail "$step: ledger sum over $(names "$@") is $s, want $total ($(gw_sums | paste -sd' '))"
	await "$step: gauges of $(names "$@") agree with the ledger" 5 gauges_ok "$@"
	echo "$step: ledger sums $(gw_sums | paste -sd' ' ) (total $s); busiest $(for n in "$@"; do printf 'gw-%s=%s ' "$n" "$(metric "$n" ringsteer_gateway_busiest_supervisor_sandboxes)"; done)"
}

cluster_up --gateways 3
for m in $all; do sup_start "$m" "${want[sup-$m]}"; done
live=(1 2 3)
quiescent "start" "${live[@]}"

next=4
for i in 0 1 2; do
	old=${live[$i]}
	gw_start "$next"
	live[$i]=$next
	quiescent "gw-$next started" "${live[@]}" $old
	before=$(gw_sums)
	gw_stop "$old"
	quiescent "gw-$old stopped" "${live[@]}"
	after=$(gw_sums)
	map=$(current_map)
	handed=$(drain_handoffs "$old")
	[ -n "$handed" ] || fail "gw-$old handed off nobody"
	while read -r mem target _; do
		[ -n "$mem" ] || continue
		got=$(echo "$map" | awk -v m="$mem" '$1 == m { print $3, $4 }')
		[ "$got" = "$target ${want[$mem]}" ] ||
			fail "gw-$old stopped: $mem handed to $target with ${want[$mem]} sandboxes, ledger: $got"
	done <<<"$handed"
	for n in "${live[@]}"; do
		moved=$(echo "$handed" | awk -v g="gw-$n" '$2 == g { print $1 }')
		add=0 mx=0
		for mem in $moved; do
			add=$((add + ${want[$mem]}))
			[ "${want[$mem]}" -gt "$mx" ] && mx=${want[$mem]}
		done
		[ $(($(sum_of "$after" "$n") - $(sum_of "$before" "$n"))) -eq "$add" ] ||
			fail "gw-$old stopped: gw-$n's ledger sum went $(sum_of "$before" "$n") -> $(sum_of "$after" "$n"), handed to it: $add"
		if [ "$n" = "$next" ]; then
			metric_is "$n" ringsteer_gateway_busiest_supervisor_sandboxes "$mx" ||
				fail "gw-$n received max $mx but its busiest gauge is $(metric "$n" ringsteer_gateway_busiest_supervisor_sandboxes)"
			echo "gw-$old stopped: gw-$n received $(echo $moved | wc -w) supervisors, $add sandboxes, busiest $mx"
		fi
	done
	next=$((next + 1))
done
echo "t_13: sandboxes followed $((next - 4)) handoff rounds; sum $total at every quiescent point; ledger sums $(gw_sums | paste -sd' ')"
