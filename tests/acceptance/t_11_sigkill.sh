#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drain acceptance 4: four gateways, 40 supervisors; SIGKILL one (no drain).
# Its supervisors reconnect through the Service and are placed by the rule
# within TTL plus backoff; afterwards every load <= cap = ceil(40 / 3), all
# 40 are attached, and only the dead gateway's supervisors moved.
#
# The scenario is tests/cluster/sigkill.sh's (gw_kill 1; awaited within the
# TTL + 4 s; each of gw-1's supervisors dialed the Service after the kill;
# nobody else changed epoch or gateway; gw-2..4 each hold <= ceil(40 / 3)
# and together 40, held for 1.5 s).  Here besides: only gw-1's supervisors
# logged a new attachment, and each new attachment was decided with gw-1
# out of the count (cap=14 in the accepting decision: placed, or a stay
# fallback below that cap).
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/../cluster/sigkill.sh"

SUPS=40
all=$(seq 1 $SUPS)

cluster_up --gateways 4
sups_start $all
await "$SUPS supervisors attached" 60 all_attached $all
echo "start: loads gw-1..4 = $(loads 1 2 3 4)"
# The kill, the re-placement, nobody else moved, loads within cap, held
# (tests/cluster/sigkill.sh).
sigkill_gateway "" 1 "$all" "2 3 4"
cap=$SK_CAP
want=$(for m in $SK_VICTIMS; do echo "sup-$m"; done | LC_ALL=C sort)
now=$(sup_attach_counts $all | LC_ALL=C sort)
extra=$(LC_ALL=C join <(echo "$SK_COUNTS") <(echo "$now") | awk '$3 != $2 { print $1 }')
[ "$extra" = "$want" ] || fail "new attachments logged by: $(echo $extra); gw-1 served: $(echo $want)"

# Placed by the rule: the decision that sent each victim to its new gateway
# used a cap no higher than ceil(40 / 3).  That decision is the accepting
# gateway's when the victim came via the Service (placed, or a Service
# fallback after a redirect to the dead gw-1, still live in the store until
# its TTL: decided over the ring without gw-1, its stay honored only below
# that cap, docs/ARCHITECTURE.md), or the redirecting gateway's when it came
# via a redirect (the target then honors its stay).
for m in $SK_VICTIMS; do
	a=$(grep -E 'event=attached( |$)' "$(sup_log "$m")" | tail -n 1)
	g=$(echo "$a" | logfield gateway)
	e=$(echo "$a" | logfield epoch)
	case $a in
	*via=redirect*)
		d=$(cat "$RS_DIR"/log/gw-*.log | grep -E "event=decision member=sup-$m epoch=$((e - 1)) .*outcome=redirect .*target=$g " | tail -n 1) ;;
	*) d=$(grep -E "event=decision member=sup-$m epoch=$e .*outcome=accept" "$(gw_log "${g#gw-}")" | tail -n 1) ;;
	esac
	[ -n "$d" ] || fail "sup-$m: no decision that placed it on $g (epoch $e): $a"
	case $a in
	*via=service*stay=1*) case $d in *reason=stay*) [ "$(echo "$d" | logfield cap)" = "$cap" ] ||
		fail "sup-$m: Service fallback decided with cap $(echo "$d" | logfield cap), want $cap (gw-1 excluded): $d" ;; esac ;;
	esac
	[ "$(echo "$d" | logfield cap)" -le "$cap" ] || fail "sup-$m: placed with a cap above $cap: $d"
done
echo "t_11: SIGKILL gw-1: its $SK_NV supervisors re-placed in $((SK_LAST - SK_T0)) ms (awaited $((SK_T1 - SK_T0)) ms, deadline ${SK_DEADLINE}s), nobody else moved; loads gw-2..4 = $(loads 2 3 4) (cap $cap)"
