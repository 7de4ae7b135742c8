#!/usr/bin/env bash
# Drain acceptance 4: four gateways, 40 supervisors; SIGKILL one (no drain).
# Its supervisors reconnect through the Service and are placed by the rule
# within TTL plus backoff; afterwards every load <= cap = ceil(40 / 3), all
# 40 are attached, and only the dead gateway's supervisors moved.
#
# gw_kill 1 (the Service drops it first, as kube-proxy drops a dead
# endpoint).  Awaited with a deadline of the TTL + 4 s (the first Service
# backoff is 1 s +-20%, the second 2 s +-20%): each of gw-1's supervisors
# has a new event=attached, and all 40 are attached (last attachment = the
# current active, live row), none on gw-1.  Then: each of gw-1's supervisors
# dialed the Service after the kill (event=dialing via=service) and its new
# attachment was decided with gw-1 out of the count (cap=14 in the accepting
# decision: placed, or a stay fallback below that cap); every other
# supervisor kept its epoch, gateway and attachment count; gw-2..4 each hold
# <= ceil(40 / 3) and together 40, held for 1.5 s (> the TTL).
. "$(dirname "$0")/../cluster/lib.sh"

SUPS=40
all=$(seq 1 $SUPS)
cap=$(((SUPS + 2) / 3))

cluster_up --gateways 4
sups_start $all
await "$SUPS supervisors attached" 60 all_attached $all
echo "start: loads gw-1..4 = $(loads 1 2 3 4)"
before=$(current_map)
counts=$(sup_attach_counts $all | LC_ALL=C sort)
victims=$(echo "$before" | awk '$3 == "gw-1" { sub(/^sup-/, "", $1); print $1 }')
nv=$(echo "$victims" | grep -c .)
[ "$nv" -gt 0 ] || fail "gw-1 serves nobody"

# replaced: every victim logged a new attachment, all 40 are attached, none on gw-1.
replaced() {
	local m c
	for m in $victims; do
		c=$(sup_attach_count "$m")
		[ "$c" -gt "$(echo "$counts" | awk -v s="sup-$m" '$1 == s { print $2 }')" ] || return 1
	done
	all_attached $all && [ "$(loads 1)" -eq 0 ]
}

t0=$(rs_now_ms)
gw_kill 1
deadline=$(awk -v t="$RS_TTL_MS" 'BEGIN { printf "%.1f", t / 1000 + 4 }')
await "gw-1's $nv supervisors re-placed within ${deadline}s of the SIGKILL" "$deadline" replaced
t1=$(rs_now_ms)
# The last re-attachment, from the supervisors' own logs.
last=$(for m in $victims; do grep -E 'event=attached( |$)' "$(sup_log "$m")" | tail -n 1; done |
	log_ms | sort -n | tail -n 1 | cut -d' ' -f1)

for m in $victims; do
	# Lines after its first attachment: the loss, the redial, the Service.
	awk '/ event=attached( |$)/ { n++ } n >= 1' "$(sup_log "$m")" | grep -qE 'event=dialing via=service' ||
		fail "sup-$m (on gw-1) never dialed the Service after the kill"
done
after=$(current_map)
moved=$(LC_ALL=C join <(echo "$before") <(echo "$after") | awk '$2 != $5 || $3 != $6 { print $1 }')
want=$(for m in $victims; do echo "sup-$m"; done | LC_ALL=C sort)
[ "$moved" = "$want" ] || fail "moved (epoch or gateway changed): $(echo $moved); gw-1 served: $(echo $want)"
now=$(sup_attach_counts $all | LC_ALL=C sort)
extra=$(LC_ALL=C join <(echo "$counts") <(echo "$now") | awk '$3 != $2 { print $1 }')
[ "$extra" = "$want" ] || fail "new attachments logged by: $(echo $extra); gw-1 served: $(echo $want)"

# Placed by the rule: the decision that sent each victim to its new gateway
# used a cap no higher than ceil(40 / 3).  That decision is the accepting
# gateway's when the victim came via the Service (placed, or a Service
# fallback after a redirect to the dead gw-1, still live in the store until
# its TTL: decided over the ring without gw-1, its stay honored only below
# that cap, docs/ARCHITECTURE.md), or the redirecting gateway's when it came
# via a redirect (the target then honors its stay).
for m in $victims; do
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

within_cap() {
	local l c
	l=$(loads 2 3 4)
	for c in $l; do [ "$c" -le "$cap" ] || return 1; done
	[ "$(echo "$l" | awk '{ print $1 + $2 + $3 }')" -eq $SUPS ] && all_attached $all
}
within_cap || fail "after the kill: loads gw-2..4 = $(loads 2 3 4), cap $cap"
hold "loads gw-2..4 <= $cap, $SUPS attached" 1.5 within_cap
echo "t_11: SIGKILL gw-1: its $nv supervisors re-placed in $((last - t0)) ms (awaited $((t1 - t0)) ms, deadline ${deadline}s), nobody else moved; loads gw-2..4 = $(loads 2 3 4) (cap $cap)"
