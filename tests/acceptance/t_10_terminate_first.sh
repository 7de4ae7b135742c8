#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drain acceptance 3: terminate-first restart (SIGTERM the old gateway, then
# start its replacement) of all four gateways, 40 supervisors.  Every
# supervisor stays attached somewhere throughout, and loads never exceed the
# cap of the gateways live at each handoff, ceil(N / live).  The end is
# generally uneven (a replacement starts after the handoffs and nobody is
# moved to it: docs/ARCHITECTURE.md); the final loads are printed, not
# asserted.
#
# Each round: gw_stop OLD (awaits its exit), then all 40 attached (each
# supervisor's last event=attached is its current, active, live row); the
# cap= of every drain-handoff decision OLD logged equals ceil(40 / 3) (three
# gateways live besides the draining one); every live gateway holds at most
# that many and together 40.  Then gw_start NEW and all 40 attached again.
# Throughout: no supervisor logged event=disconnected or event=goodbye (no
# attached link was lost: every handoff was make before break).
. "$(dirname "$0")/../cluster/lib.sh"

SUPS=40
all=$(seq 1 $SUPS)
names() { printf "gw-%s\n" "$@" | paste -sd, ; }
never_lost() {
	local m lost
	for m in $all; do
		lost=$(grep -E 'event=(disconnected|goodbye)( |$)' "$(sup_log "$m")" | head -n 1)
		[ -z "$lost" ] || fail "$1: sup-$m lost its link: $lost"
	done
}

cluster_up --gateways 4
sups_start $all
await "$SUPS supervisors attached" 60 all_attached $all
live=(1 2 3 4)
echo "start: loads $(names "${live[@]}") = $(loads "${live[@]}")"
next=5
for i in 0 1 2 3; do
	old=${live[$i]}
	others=()
	for g in "${live[@]}"; do [ "$g" = "$old" ] || others+=("$g"); done
	cap=$(((SUPS + ${#others[@]} - 1) / ${#others[@]}))

	gw_stop "$old"
	await "gw-$old stopped: $SUPS supervisors attached" 20 all_attached $all
	never_lost "gw-$old stopped"
	caps=$(drain_handoffs "$old" | awk '{ print $3 }' | sort -u | paste -sd,)
	n=$(drain_handoffs "$old" | grep -c .)
	[ "$n" -eq 0 ] || [ "$caps" = "$cap" ] || fail "gw-$old: drain-handoff caps $caps, want $cap (ceil($SUPS / ${#others[@]}))"
	l=$(loads "${others[@]}")
	echo "gw-$old stopped: $n handoffs (cap ${caps:-none}); loads $(names "${others[@]}") = $l"
	for c in $l; do
		[ "$c" -le "$cap" ] || fail "gw-$old stopped: loads $(names "${others[@]}") = $l exceed the cap $cap"
	done
	[ "$(echo "$l" | tr ' ' '\n' | awk '{ s += $1 } END { print s }')" -eq $SUPS ] ||
		fail "gw-$old stopped: loads $l do not sum to $SUPS"

	gw_start "$next"
	live[$i]=$next
	next=$((next + 1))
	await "gw-${live[$i]} started: $SUPS supervisors attached" 20 all_attached $all
	never_lost "gw-${live[$i]} started"
	echo "gw-${live[$i]} started: loads $(names "${live[@]}") = $(loads "${live[@]}")"
done
echo "t_10: terminate-first restart of 4 gateways, $SUPS supervisors, attached throughout, loads within ceil($SUPS/3) = $cap; final loads $(names "${live[@]}") = $(loads "${live[@]}")"
