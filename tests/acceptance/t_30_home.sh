#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 30: a restart goes home (issue 17).  A supervisor that goes
# away (GOODBYE, or a dropped link) leaves its row as a reservation at its
# gateway for --home-grace, counted in that gateway's load; coming back
# within it, through the Service, it is sent home (or accepted there); a
# supervisor gone for good frees its place when the grace ends.
#
# Run 1: four gateways (--home-grace 30000), 40 supervisors: 10 on each.
# All 40 stop (SIGTERM: GOODBYE); while they are away the store still
# counts 10 on each gateway (reservations); all 40 start again and land
# wherever the Service puts them.  They must end 10/10/10/10 with at least
# 38 of 40 on the gateway they had before (the share is printed).
#
# Run 2: two gateways (--home-grace 3000), sup-1..4 two on each.  sup-X on
# gw-1 stops: gw-1 still counts 2 in the store, then 1 once the grace has
# passed (not before 3 s).  A newcomer owned by gw-2 on the ring arrives:
# gw-2 is at the cap (N = 4, cap 2), so it takes the freed place on gw-1.
# sup-X then returns and is placed by the rule (no reservation left: not
# sent "home" by reason reserved), every gateway within the cap (3).
. "$(dirname "$0")/../cluster/lib.sh"

base_args=${RS_GW_ARGS:-}

# --- run 1 ---------------------------------------------------------------------

RS_GW_ARGS="$base_args --home-grace 30000"
cluster_up --gateways 4
all=$(seq 1 40)
sups_start $all
# shellcheck disable=SC2086
await "40 supervisors attached" 60 all_attached $all
ten_each() { [ "$(loads 1 2 3 4)" = "10 10 10 10" ]; }
await "10 on each gateway" 10 ten_each
declare -A before
while read -r mem _ gw _; do before[$mem]=$gw; done < <(current_map)
[ "${#before[@]}" = 40 ] || fail "the store holds ${#before[@]} current sessions, not 40"

# shellcheck disable=SC2086
sups_stop $all
nobody() { attached_is 0; }
await "no session active once all 40 stopped" 10 nobody
held() { # every gateway still counts 10 in the store: the reservations
	[ "$(ctl gateways --store "$RS_STORE" --json | jq -r '[.[] | .supervisors] | join(" ")')" = "10 10 10 10" ]
}
held || fail "while away, the store counts $(ctl gateways --store "$RS_STORE" --json | jq -c '[.[] | .supervisors]'), not 10 on each"

restarted_at=$(rs_now_ms)
# shellcheck disable=SC2086
sups_start $all
# shellcheck disable=SC2086
await "40 supervisors attached again" 60 all_attached $all
await "10 on each gateway again" 10 ten_each
hold "10 on each gateway" 1 ten_each
home=0
while read -r mem _ gw _; do [ "${before[$mem]:-}" = "$gw" ] && home=$((home + 1)); done < <(current_map)
echo "t_30 run 1: $home of 40 back on their previous gateway; loads $(loads 1 2 3 4); restart took $(($(rs_now_ms) - restarted_at)) ms"
[ "$home" -ge 38 ] || fail "only $home of 40 went home"
cluster_down || exit 1

# --- run 2 ---------------------------------------------------------------------

grace=3000
RS_GW_ARGS="$base_args --home-grace $grace"
cluster_up --gateways 2
sups_start 1 2 3 4
await "sup-1..4 attached" 20 all_attached 1 2 3 4
two_each() { [ "$(loads 1 2)" = "2 2" ]; }
await "two on each gateway" 5 two_each
x=""
for m in 1 2 3 4; do [ "$(where "$m")" = gw-1 ] && { x=$m; break; }; done
[ -n "$x" ] || fail "nobody on gw-1"
store_load() { ctl gateways --store "$RS_STORE" --json | jq -r --arg g "gw-$1" '.[] | select(.id == $g) | .supervisors'; }
sup_stop "$x"
left_at=$(rs_now_ms)
[ "$(store_load 1)" = 2 ] || fail "gw-1 counts $(store_load 1) right after sup-$x left, not 2 (its place kept)"
freed() { [ "$(store_load 1)" = 1 ]; }
await "sup-$x's place on gw-1 freed" $((grace / 1000 + 5)) freed
took=$(($(rs_now_ms) - left_at))
[ "$took" -ge $((grace - 200)) ] || fail "sup-$x's place went after $took ms, before the grace ($grace ms)"

y=$(owned_by gw-2 100 gw-1,gw-2) || fail "no member owned by gw-2"
sup_start "$y"
await "sup-$y attached" 10 all_attached "$y"
is_on "$y" 1 || fail "sup-$y is on $(where "$y"), not on gw-1 (the freed place)"
sup_start "$x"
await "sup-$x attached again" 10 all_attached "$x"
grep -q "member=sup-$x .*reason=reserved" "$(gw_log 1)" "$(gw_log 2)" &&
	fail "sup-$x was sent to a reservation that had expired"
for l in $(loads 1 2); do [ "$l" -le 3 ] || fail "loads $(loads 1 2): above the cap (3)"; done
echo "t_30 run 2: sup-$x's place freed after $took ms (grace $grace); newcomer sup-$y took it on gw-1; loads $(loads 1 2)"
