#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drain acceptance 2: four gateways, 100 supervisors, a surge-first rolling
# restart of all four (start gw-5, await /readyz, SIGTERM gw-1; then gw-6 for
# gw-2, ...).  Ends with max - min <= 1 over the four live gateways; the
# supervisor moves equal the handoffs (nobody else moved); after every
# handoff round each member's one ledger row is active, live and on a live
# gateway, and the supervisor's own log agrees; none is left unattached.
#
# After each round (the old gateway has exited: gw_stop awaits it; then all
# 100 attached, awaited):
# - the old gateway logged event=drained with handed_off equal to its
#   reason=drain-handoff decisions, and no handoff_timeout/handoff_abandoned;
# - the ledger (every row, sessions --all) holds exactly 100 rows, 100
#   distinct members, each active, live and on one of the four live
#   gateways; and all_attached: each supervisor's last event=attached is its
#   current row's gateway and epoch;
# - nobody else moved: the supervisors with new event=attached lines are
#   exactly the members of the old gateway's drain-handoff decisions, one new
#   attachment each, now on the decision's target.
# At the end: moves (attachments after each supervisor's first, summed over
# its log) = handoffs (drain-handoff decisions summed over the four old
# gateways' logs); 100 attached and max - min <= 1 over the live four, held
# for 1.5 s (> the session TTL: no late move).
. "$(dirname "$0")/../cluster/lib.sh"

SUPS=100
names() { printf "gw-%s\n" "$@" | paste -sd, ; }
all=$(seq 1 $SUPS)

# ledger_ok N...: the ledger's every row: SUPS rows, SUPS distinct members,
# each active, live, on one of gw-N...
ledger_ok() {
	local live
	live=$(printf 'gw-%s\n' "$@" | jq -R . | jq -sc .)
	rs_sessions_json | jq -e --argjson live "$live" --argjson n "$SUPS" '
		length == $n and (map(.member_id) | unique | length) == $n and
		all(.[]; .state == "active" and .live == true and (.gateway_id as $g | any($live[]; . == $g)))' >/dev/null
}

cluster_up --gateways 4
sups_start $all
await "$SUPS supervisors attached" 60 all_attached $all
live=(1 2 3 4)
echo "start: loads gw-1..4 = $(loads "${live[@]}")"
first=$(sup_attach_counts $all | awk '{ s += $2 } END { print s }')
[ "$first" -eq $SUPS ] || fail "start: $first attachments logged by $SUPS supervisors (a move before the restart)"

next=5 handoffs=0
for i in 0 1 2 3; do
	old=${live[$i]}
	before=$(sup_attach_counts $all | LC_ALL=C sort)
	t0=$(rs_now_ms)
	gw_start "$next" # returns once /readyz answers and the Service has it
	gw_stop "$old"   # SIGTERM: drains, exits (awaited)
	t1=$(rs_now_ms)
	live[$i]=$next
	next=$((next + 1))
	await "round $((i + 1)): $SUPS supervisors attached" 20 all_attached $all

	log=$(gw_log "$old")
	decided=$(drain_handoffs "$old" | LC_ALL=C sort)
	n=$(printf '%s' "$decided" | grep -c .)
	log_count "$log" 'event=drained' | grep -qx 1 || fail "round $((i + 1)): gw-$old did not log event=drained once"
	ho=$(grep -E 'event=drained' "$log" | logfield handed_off)
	[ "$ho" = "$n" ] || fail "round $((i + 1)): gw-$old drained handed_off=$ho but logged $n drain-handoff decisions"
	log_has "$log" 'event=handoff_(timeout|abandoned)' &&
		fail "round $((i + 1)): gw-$old: $(grep -E 'event=handoff_(timeout|abandoned)' "$log" | head -n 3)"

	ledger_ok "${live[@]}" || fail "round $((i + 1)): ledger not $SUPS active live rows on $(names "${live[@]}")"

	after=$(sup_attach_counts $all | LC_ALL=C sort)
	moved=$(LC_ALL=C join <(echo "$before") <(echo "$after") | awk '$3 != $2 { print $1, $3 - $2 }')
	want=$(printf '%s\n' "$decided" | awk 'NF { print $1, 1 }')
	[ "$moved" = "$want" ] || fail "round $((i + 1)): moved (member, new attachments):
$moved
but gw-$old handed off:
$want"
	wrong=$(LC_ALL=C join <(printf '%s\n' "$decided") <(current_map) | awk '$2 != $5 { print $1 " target " $2 " but on " $5 }')
	[ -z "$wrong" ] || fail "round $((i + 1)): not on the handoff target: $wrong"

	caps=$(printf '%s\n' "$decided" | awk 'NF { print $3 }' | sort -u | paste -sd,)
	handoffs=$((handoffs + n))
	echo "round $((i + 1)): gw-$old -> gw-${live[$i]}: $n handoffs (cap $caps) in $((t1 - t0)) ms; loads $(names "${live[@]}") = $(loads "${live[@]}")"
done

moves=$(sup_attach_counts $all | awk '{ s += $2 - 1 } END { print s }')
[ "$moves" -eq "$handoffs" ] || fail "$moves supervisor moves but $handoffs handoffs"
end_ok() { attached_is $SUPS && [ "$(spread "${live[@]}")" -le 1 ]; }
end_ok || fail "end: loads $(names "${live[@]}") = $(loads "${live[@]}"), attached $(count_attached)"
hold "$SUPS attached, max - min <= 1 over $(names "${live[@]}")" 1.5 end_ok
echo "t_9: surge-first rolling restart of 4 gateways, $SUPS supervisors: $moves moves = $handoffs handoffs; loads $(names "${live[@]}") = $(loads "${live[@]}")"
