#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 2: a supervisor reconnecting after a token refresh stays on its
# gateway: 10 refreshes with a short token lifetime, including while that
# gateway is above the even share.
#
# Tokens live 3 s (minted by ringsteerctl, and renewed by the gateways with
# --token-ttl 3; expiry is in whole seconds, so 2 to 3 s), so the supervisor
# refreshes about every 2 s and then redials its gateway with STAY.
# Phase 1 (even): gw-1 and gw-2, sup-1 and sup-2 one on each; 5 refreshes of
#   sup-1.
# Phase 2 (above the even share): the other gateway B stops, sup-2 comes over to
#   sup-1's gateway A, B starts again (a join moves nobody): A serves 2 of 2
#   with 2 gateways up, above ceil(2/2) = 1.  5 more refreshes of sup-1.
# Throughout, a watch fails at once if sup-1 is ever seen on another gateway
# (and in phase 2, if sup-2 leaves A).  After each phase: every refresh of
# either supervisor came before the token it replaced expired, and no gateway
# refused a token (a supervisor that lets its token lapse is refused when it
# must reconnect, e.g. when B stops).  At the end: >= 10 token_refreshed
# lines, every attachment of sup-1 logged on A, and each after the first a
# redial of A with stay=1 (via=refresh, or via=redial); the store has sup-1
# on A; A counted the stays.
. "$(dirname "$0")/../cluster/lib.sh"

export RS_SUP_TOKEN_TTL=3
RS_GW_ARGS="--token-ttl 3"

cluster_up --gateways 2
sups_start 1 2
await "both supervisors attached" 15 all_attached 1 2
A=$(where 1)
B=$(where 2)
[ "$A" != "$B" ] || fail "start: both supervisors on $A"
a=${A#gw-} b=${B#gw-}
echo "sup-1 on $A, sup-2 on $B"
log1=$(sup_log 1)

refreshes() { log_count "$log1" 'event=token_refreshed'; }
# watch: sup-1 never elsewhere than A (no row at all is allowed: a redial in
# flight); in phase 2 sup-2 never off A.
watch() {
	local g
	g=$(where 1)
	[ -z "$g" ] || [ "$g" = "$A" ] || fail "sup-1 moved from $A to $g (refresh #$(refreshes))"
	if [ "${phase:-1}" = 2 ]; then
		g=$(where 2)
		[ -z "$g" ] || [ "$g" = "$A" ] || fail "sup-2 moved from $A to $g in phase 2"
	fi
}
refreshed_to() { watch; [ "$(refreshes)" -ge "$1" ] && sup_attached 1; }

# refreshed_in_time M: each token_refreshed line of sup-M came before the
# expiry of the token it replaced (the one the previous line announced): a
# supervisor must renew while its token is still good, at about 80% of its
# lifetime, or a reconnect in between is refused (bad_token).
refreshed_in_time() {
	local line ts t_ms exp prev="" prev_ts=""
	while read -r line; do
		ts=${line#ts=}
		ts=${ts%% *}
		t_ms=$(date -d "$ts" +%s%3N)
		exp=$(logfield expiry <<<"$line")
		if [ -n "$prev" ] && [ "$t_ms" -ge $((prev * 1000)) ]; then
			fail "sup-$1 refreshed at $ts, after its token expired at $(date -u -d "@$prev" +%H:%M:%S) (that token came at $prev_ts)"
		fi
		prev=$exp prev_ts=$ts
	done < <(grep 'event=token_refreshed' "$(sup_log "$1")")
}
no_bad_token() {
	local f
	for f in "$RS_DIR"/log/gw-*.log; do
		! grep -q 'event=reject .*reason=bad_token' "$f" || fail "a supervisor used an expired or bad token: $(grep 'reason=bad_token' "$f" | head -n 1)"
	done
}

phase=1
await "phase 1: 5 token refreshes of sup-1" 40 refreshed_to 5
echo "phase 1: $(refreshes) refreshes, sup-1 on $(where 1)"
refreshed_in_time 1
refreshed_in_time 2
no_bad_token

gw_stop "$b"
await "sup-2 attached to $A after $B stopped" 20 is_on 2 "$a"
gw_start "$b"
phase=2
[ "$(count_on "$a")" -eq 2 ] || fail "phase 2: $A should serve 2, serves $(count_on "$a")"
base=$(refreshes)
await "phase 2: 5 more token refreshes of sup-1 while $A is above the even share" 40 refreshed_to $((base + 5))
[ "$(count_on "$a")" -eq 2 ] || fail "phase 2: $A should still serve 2, serves $(count_on "$a")"
echo "phase 2: $(refreshes) refreshes in all, $A serves $(count_on "$a"), $B serves $(count_on "$b")"

n=$(refreshes)
[ "$n" -ge 10 ] || fail "only $n refreshes"
refreshed_in_time 1
refreshed_in_time 2
no_bad_token
att=$(grep -E 'event=attached( |$)' "$log1")
[ -z "$(grep -v "gateway=$A " <<<"$att")" ] || fail "sup-1 attached elsewhere than $A: $(grep -v "gateway=$A " <<<"$att")"
redials=$(tail -n +2 <<<"$att" | grep -cE 'via=(refresh|redial) stay=1')
[ "$redials" -ge 10 ] || fail "sup-1: $redials redials with stay=1 to $A after a refresh (want >= 10); attachments: $att"
[ "$redials" -eq "$(($(wc -l <<<"$att") - 1))" ] || fail "sup-1: an attachment after the first was not a redial with stay=1: $att"
is_on 1 "$a" || fail "sup-1 not on $A at the end"
stays=$(metric "$a" ringsteer_gateway_stays_total)
[ "$stays" -ge 10 ] || fail "$A counted $stays stays (want >= 10)"
echo "t_2: $n refreshes, $redials redials with STAY, all on $A; $A stays_total=$stays"
