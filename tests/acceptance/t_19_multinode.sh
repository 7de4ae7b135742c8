#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Multi-node acceptance (issue 8): three nodes (network namespaces on a
# bridge, tests/cluster/nodes.sh), one gateway and one node agent per node,
# one store for all (SQLite on the shared filesystem, or PostgreSQL when
# RS_PG_DIR is set), six supervisors, two per node.  The two-gateway
# scenarios hold across nodes:
#
# a. placement: the six attach, loads 2/2/2, and at least one supervisor
#    sits on another node's gateway.  With the agents, every attachment
#    that came through the Service is on the supervisor's own node (sk_lookup
#    only hands a connection to a local socket), so each cross-node one came
#    by a redirect to the other node's peer endpoint.  (With these ids, the
#    rule leaves 2 to 6 of the six on another node's gateway in every one of
#    the 720 arrival orders, so "at least one" does not depend on timing.)
# b. restarts (t_1): a cross-node supervisor X and a local one Y are each
#    restarted three times; each comes back to the gateway it left (the
#    store and the loads are unchanged, so the rule gives the same answer).
#    With the agents, Y is steered to its node's gateway and accepted with no
#    redirect, X is steered locally and redirected across.  Then X and Y are
#    restarted as a pair: loads stay 2/2/2.  Nobody else's session changed.
# c. blip (t_3): a cross-node supervisor's connection is killed (ss -K in its
#    node): it redials its gateway on the other node with STAY (via=redial
#    stay=1), stays, its epoch grows, the gateway's stays counter grows,
#    nobody else changed.
# d. drain (t_8/t_9/t_10): surge-first restart of gw-1: gw-4 starts on
#    node 1, then gw-1 gets SIGTERM.  It hands its two supervisors off, each
#    accepted at its target before gw-1 closed its old link (the target's
#    accept and the supervisor's new attachment are no later than gw-1's
#    event=goodbye or =disconnected for it; the supervisor never logged disconnected or
#    goodbye): make before break.  Loads 2/2/2 over gw-2,3,4; nobody else moved.
# e. SIGKILL (t_11): gw-2 (node 2) is killed.  Its supervisors are re-placed
#    within the TTL + 4 s on the other nodes' gateways, each dialed the
#    Service after the kill, loads <= ceil(6 / 2), nobody else moved, held
#    1.5 s.  With the agents, node 2 has no gateway left, so its Service is
#    the DNAT over the other nodes' gateways (nodes.sh).
#
# Without sk_lookup the agent exits 3: the same scenarios run with the DNAT
# Service on every node, and the summary says so.  RS_T19_DNAT=1 forces that
# mode.
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/../cluster/nodes.sh"
. "$(dirname "$0")/../cluster/sigkill.sh"

SUPS=6
all=$(seq 1 $SUPS)
t_start=$(rs_now_ms)
declare -A took=()
phase() { took[$1]=$(($(rs_now_ms) - ${phase_t0:-$t_start})); phase_t0=$(rs_now_ms); }

cluster_up --gateways 0
nodes_up 3
mode=agent
if [ "${RS_T19_DNAT:-0}" = 1 ]; then
	mode="dnat (RS_T19_DNAT=1)"
elif ! nodes_agents_up; then
	mode="dnat (the agent found no sk_lookup and exited 3)"
fi
agents() { [ "$mode" = agent ]; }
echo "mode: $mode; store: ${RS_STORE%%:*}"
gw_start 1
gw_start 2
gw_start 3
if agents; then
	for n in 1 2 3; do
		log_has "$(gw_log "$n")" 'event=agent_registered role=listen' || fail "gw-$n did not register with node $n's agent"
	done
fi
phase up

# cross M: sup-M is attached to a gateway on another node than its own.
cross() { local g; g=$(where "$1") && [ "$(node_of_id "$g")" != "$(node_of_sup "$1")" ]; }
loads_are() { [ "$(loads "${@:2}")" = "$1" ]; }
# others_same BEFORE M...: every member but sup-M... has the epoch and gateway of BEFORE.
others_same() {
	local before=$1 skip
	shift
	skip=$(printf 'sup-%s\n' "$@")
	LC_ALL=C join <(echo "$before") <(current_map) |
		awk -v skip="$skip" 'BEGIN { split(skip, s, "\n"); for (i in s) x[s[i]] = 1 }
			!($1 in x) && ($2 != $5 || $3 != $6) { print $1 ": " $3 "/" $2 " -> " $6 "/" $5; bad = 1 }
			END { exit bad }'
}
placement_redirects() {
	local n s=0
	for n in "$@"; do s=$((s + $(metric "$n" ringsteer_gateway_redirects_total 'reason="placement"'))); done
	echo "$s"
}
show_map() { current_map | while read -r m _ g _; do printf '%s(n%s)->%s(n%s) ' "$m" "$(node_of_sup "${m#sup-}")" "$g" "$(node_of_id "$g")"; done; }

# --- a. placement across nodes ---------------------------------------------
sups_start $all
await "six supervisors attached" 15 all_attached $all
loads_are "2 2 2" 1 2 3 || fail "a: loads gw-1..3 = $(loads 1 2 3), want 2 2 2"
xs=() ls=()
for m in $all; do if cross "$m"; then xs+=("$m"); else ls+=("$m"); fi; done
[ ${#xs[@]} -ge 1 ] || fail "a: every supervisor is on its own node's gateway: $(show_map)"
if agents; then
	for m in $all; do
		a=$(grep -E 'event=attached( |$)' "$(sup_log "$m")" | tail -n 1)
		case $a in
		*via=service*) cross "$m" && fail "a: sup-$m attached through the Service on another node's gateway (not steered locally): $a" ;;
		*via=redirect*) cross "$m" || fail "a: sup-$m was redirected to its own node's gateway (steered off-node?): $a" ;;
		esac
	done
fi
echo "a: loads gw-1..3 = $(loads 1 2 3); cross-node: sup-${xs[*]}; $(show_map)"
phase a

# --- b. restarts come back to the same gateway -------------------------------
X=${xs[0]}
Y=${ls[0]:-}
[ -n "$Y" ] || Y=${xs[1]}
before=$(current_map)
for round in 1 2 3; do
	for m in "$X" "$Y"; do
		g=$(where "$m")
		agents && r0=$(placement_redirects 1 2 3)
		sup_restart "$m"
		await "b: round $round: sup-$m attached again" 15 all_attached "$m"
		now=$(where "$m")
		[ "$now" = "$g" ] || fail "b: round $round: sup-$m (node $(node_of_sup "$m")) moved from $g to $now"
		via=$(sup_last "$m" via)
		if agents; then
			r1=$(placement_redirects 1 2 3)
			if [ "$(node_of_id "$g")" != "$(node_of_sup "$m")" ]; then
				[ "$via" = redirect ] || fail "b: round $round: cross-node sup-$m attached via $via, want a redirect from its node's gateway"
			else
				[ "$via" = service ] && [ "$r1" -eq "$r0" ] ||
					fail "b: round $round: sup-$m (local) attached via $via with $((r1 - r0)) placement redirects, want steered straight to $g"
			fi
		fi
		echo "b: round $round: sup-$m (node $(node_of_sup "$m")) back on $g (node $(node_of_id "$g")) via $via"
	done
done
others_same "$before" "$X" "$Y" || fail "b: a supervisor other than sup-$X and sup-$Y changed (above)"
loads_are "2 2 2" 1 2 3 || fail "b: loads gw-1..3 = $(loads 1 2 3) after the restarts"
sups_stop "$X" "$Y"
sups_start "$X" "$Y"
await "b: the pair sup-$X, sup-$Y attached again" 15 all_attached "$X" "$Y"
others_same "$before" "$X" "$Y" || fail "b: the pair restart moved someone else (above)"
hold "b: loads 2/2/2 after the pair restart" 1.2 loads_are "2 2 2" 1 2 3
echo "b: pair restart: sup-$X on $(where "$X"), sup-$Y on $(where "$Y"); loads $(loads 1 2 3)"
phase b

# --- c. a blip: redial the gateway on the other node with STAY --------------
# A cross-node supervisor of (a) that b did not restart (its place is as in a).
Z=""
for m in "${xs[@]}"; do [ "$m" != "$X" ] && [ "$m" != "$Y" ] && { Z=$m; break; }; done
if [ -z "$Z" ]; then for m in $all; do cross "$m" && { Z=$m; break; }; done; fi
[ -n "$Z" ] || fail "c: no cross-node supervisor left: $(show_map)"
cross "$Z" || fail "c: sup-$Z is not on another node's gateway: $(show_map)"
gz=$(where "$Z")
before=$(current_map)
e=$(session "$Z" epoch)
n=$(sup_attach_count "$Z")
stays=$(metric "${gz#gw-}" ringsteer_gateway_stays_total)
sup_blip "$Z"
reattached() { [ "$(sup_attach_count "$Z")" -gt "$n" ] && sup_attached "$Z"; }
await "c: sup-$Z attached again after the blip" 10 reattached
last=$(grep -E 'event=attached( |$)' "$(sup_log "$Z")" | tail -n 1)
grep -q "gateway=$gz via=redial stay=1" <<<"$last" || fail "c: sup-$Z did not redial $gz with STAY: $last"
[ "$(where "$Z")" = "$gz" ] || fail "c: sup-$Z is on $(where "$Z"), was on $gz"
[ "$(session "$Z" epoch)" -gt "$e" ] || fail "c: sup-$Z's epoch did not grow ($e)"
[ "$(metric "${gz#gw-}" ringsteer_gateway_stays_total)" -gt "$stays" ] || fail "c: $gz's stays_total did not grow"
others_same "$before" "$Z" || fail "c: the blip of sup-$Z touched someone else (above)"
loads_are "2 2 2" 1 2 3 || fail "c: loads gw-1..3 = $(loads 1 2 3)"
echo "c: blip sup-$Z (node $(node_of_sup "$Z")): back on $gz (node $(node_of_id "$gz")): $last"
phase c

# --- d. surge-first restart of gw-1 across nodes ----------------------------
[ "$(node_of_gw 4)" = 1 ] || fail "d: gw-4 is meant for node 1, not $(node_of_gw 4)"
before=$(current_map)
counts=$(sup_attach_counts $all | LC_ALL=C sort)
victims=$(echo "$before" | awk '$3 == "gw-1" { sub(/^sup-/, "", $1); print $1 }')
nv=$(echo "$victims" | grep -c .)
gw_start 4
if agents; then
	log_has "$(gw_log 4)" 'event=agent_registered role=listen' || fail "d: gw-4 did not register with node 1's agent"
fi
count_is 4 0 || fail "d: gw-4 joining moved someone onto it"
t0=$(rs_now_ms)
gw_stop 1
await "d: six supervisors attached after gw-1's drain" 15 all_attached $all
t1=$(rs_now_ms)
log=$(gw_log 1)
[ "$(log_count "$log" 'event=drained')" -eq 1 ] || fail "d: gw-1 did not log event=drained once"
ho=$(grep -E 'event=drained' "$log" | logfield handed_off)
decided=$(drain_handoffs 1 | LC_ALL=C sort)
[ "$ho" = "$nv" ] && [ "$(printf '%s' "$decided" | grep -c .)" -eq "$nv" ] ||
	fail "d: gw-1 served $nv, handed_off=$ho, decisions: $decided"
log_has "$log" 'event=handoff_(timeout|abandoned)' && fail "d: $(grep -E 'event=handoff_(timeout|abandoned)' "$log")"
mbb=""
for m in $victims; do
	tgt=$(echo "$decided" | awk -v s="sup-$m" '$1 == s { print $2 }')
	[ "$(where "$m")" = "$tgt" ] || fail "d: sup-$m handed off to $tgt but on $(where "$m")"
	# Its lines since the attachment gw-1 drained (the last before the drain).
	c0=$(echo "$counts" | awk -v s="sup-$m" '$1 == s { print $2 }')
	lost=$(awk -v c="$c0" '/ event=attached( |$)/ { n++ } n >= c' "$(sup_log "$m")" | grep -E 'event=(disconnected|goodbye)( |$)' | head -n 1)
	[ -z "$lost" ] || fail "d: sup-$m lost its link during the handoff: $lost"
	closed=$(grep -E "event=(disconnected|goodbye) member=sup-$m( |$)" "$log" | log_ms | tail -n 1 | cut -d' ' -f1)
	att=$(grep -E "event=attached gateway=$tgt " "$(sup_log "$m")" | log_ms | tail -n 1 | cut -d' ' -f1)
	acc=$(grep -E "event=decision member=sup-$m .*outcome=accept" "$(gw_log "${tgt#gw-}")" | log_ms | tail -n 1 | cut -d' ' -f1)
	[ -n "$closed" ] && [ -n "$att" ] && [ -n "$acc" ] || fail "d: sup-$m: missing lines (closed '$closed', attached '$att', accepted '$acc')"
	[ "$acc" -le "$closed" ] && [ "$att" -le "$closed" ] ||
		fail "d: sup-$m: gw-1 closed its link at $closed ms, before $tgt accepted it ($acc) / it attached ($att)"
	mbb+=" sup-$m(n$(node_of_sup "$m"))->$tgt(n$(node_of_id "$tgt")) $((closed - acc))ms"
done
now=$(sup_attach_counts $all | LC_ALL=C sort)
moved=$(LC_ALL=C join <(echo "$counts") <(echo "$now") | awk '$3 != $2 { print $1, $3 - $2 }')
want=$(for m in $victims; do echo "sup-$m 1"; done | LC_ALL=C sort)
[ "$moved" = "$want" ] || fail "d: moved (member, new attachments): $(echo $moved); gw-1 served: $(echo $want)"
others_same "$before" $victims || fail "d: someone gw-1 did not serve changed (above)"
loads_are "2 2 2" 2 3 4 || fail "d: loads gw-2,3,4 = $(loads 2 3 4), want 2 2 2"
echo "d: gw-1 -> gw-4 (node 1): $nv handoffs in $((t1 - t0)) ms, each accepted before its old link closed (by):$mbb; loads gw-2,3,4 = $(loads 2 3 4)"
phase d

# --- e. SIGKILL a gateway on node 2 (tests/cluster/sigkill.sh) ---------------
live=(3 4)
sigkill_gateway "e: " 2 "$all" "${live[*]}"
vs=""
for m in $SK_VICTIMS; do
	g=$(where "$m")
	[ "$(node_of_id "$g")" != 2 ] || fail "e: sup-$m re-placed on $g, on node 2"
	vs+=" sup-$m(n$(node_of_sup "$m"))->$g(n$(node_of_id "$g")) via $(sup_last "$m" via)"
done
echo "e: SIGKILL gw-2 (node 2): $SK_NV re-placed in $((SK_LAST - SK_T0)) ms (awaited $((SK_T1 - SK_T0)) ms, deadline ${SK_DEADLINE}s):$vs; loads gw-3,4 = $(loads "${live[@]}") (cap $SK_CAP)"
phase e

steer=""
if agents; then
	for k in 1 2 3; do
		p=$(node_agent_metric "$k" ringsteer_agent_lookups_total 'result="pinned"')
		t=$(node_agent_metric "$k" ringsteer_agent_lookups_total 'result="table"')
		mi=$(node_agent_metric "$k" ringsteer_agent_lookups_total 'result="miss"')
		no=$(node_agent_metric "$k" ringsteer_agent_lookups_total 'result="none"')
		steer+=" n$k ${p:-0}/${t:-0}/${mi:-0}/${no:-0}"
	done
	steer="; lookups pinned/table/miss/none:$steer"
fi
echo "t_19: 3 nodes, $mode, ${RS_STORE%%:*} store: a placement ${took[a]} ms, b restarts ${took[b]} ms, c blip ${took[c]} ms, d drain ${took[d]} ms, e sigkill ${took[e]} ms; total $(($(rs_now_ms) - t_start)) ms$steer"
