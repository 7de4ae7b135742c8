#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 10 of issue 25's matrix (item 7: each hole as a case of its own):
# hostile epochs against a serving cluster.  Two gateways, 20 supervisors
# attached; then, through gw-1's supervisor port with valid tokens:
#   1. sup-30 says HELLO STAY with epoch 2^63-1 and hangs up: its real
#      process, whose epoch is its clock's (~1.8e15), must still attach (the
#      hole: every later HELLO was refused SUPERSEDED, for good);
#   2. sup-31 says HELLO with epoch 2^64-1 while sup-32..36 arrive: it is
#      refused at decode as a bad frame, counted, and none of the five is
#      refused UNAVAILABLE (the hole: the batch's transaction failed);
#   3. two connections of sup-37 with one epoch: one attached, the other
#      refused, and the gauge equals the ledger while both are open.
# Last, the 20 are where they were, with the same epochs (faults_check).
# The unit tests (tests/unit/test_hostile_epoch.c) pin the same rules on the
# core and the store; this case is the cluster, store and sockets included.
. "$(dirname "$0")/faults_lib.sh"

faults_up 2 20
faults_mark
ep=$(gw_addr 1):$RS_GW_LISTEN_PORT
rejects() { metric 1 ringsteer_gateway_rejects_total "reason=\"$1\""; }

# 1. The top epoch, then the member's own.
tok=$(sup_token 30 3600) || fail "could not mint a token for sup-30"
reply=$(raw_send "$ep" "$(hello_hex sup-30 hostile 9223372036854775807 1 "$tok" 0)" 1)
[ "$(reply_type "$reply")" = 2 ] || fail "HELLO STAY with epoch 2^63-1 not accepted: [$reply]"
sup0=$(rejects superseded)
sup_start 30
faults_recovered_within $((2 * RS_TTL_MS)) "sup-30 attached after a hostile epoch 2^63-1 of its id" all_attached 30
[ "$(rejects superseded)" = "$sup0" ] || fail "sup-30 was refused SUPERSEDED on the way"
echo "1: sup-30 epoch $(session 30 epoch) on $(where 30), after an epoch 2^63-1 of its id"

# 2. An epoch above INT64_MAX amid five arrivals.
bad0=$(rejects bad_frame) unavail0=$(($(rejects unavailable) + $(metric 2 ringsteer_gateway_rejects_total 'reason="unavailable"')))
tok=$(sup_token 31 3600) || fail "could not mint a token for sup-31"
over=$(frame_hex 1 "$(hex_str sup-31)$(hex_str hostile)ffffffffffffffff00$(hex_str "$tok")$(hex_u32 0)")
sups_start 32 33 34 35 36
reply=$(raw_send "$ep" "$over" 2)
[ "$(reply_type "$reply")" = 4 ] || fail "HELLO with epoch 2^64-1 not refused: [$reply]"
await "rejects{bad_frame} on gw-1 counts the epoch 2^64-1" 5 metric_is 1 ringsteer_gateway_rejects_total $((bad0 + 1)) 'reason="bad_frame"'
await "sup-32..36 attached" $((2 * RS_TTL_MS / 1000 + 10)) all_attached 32 33 34 35 36
unavail=$(($(rejects unavailable) + $(metric 2 ringsteer_gateway_rejects_total 'reason="unavailable"')))
[ "$unavail" = "$unavail0" ] || fail "arrivals refused UNAVAILABLE beside the epoch 2^64-1: $((unavail - unavail0))"
echo "2: epoch 2^64-1 refused as bad_frame (counted once); sup-32..36 attached, none refused unavailable"

# 3. One member, one epoch, two connections at once.
tok=$(sup_token 37 3600) || fail "could not mint a token for sup-37"
twin=$(hello_hex sup-37 twin 4242 1 "$tok" 0)
dir=$(mktemp -d "$RS_DIR/twins.XXXXXX")
raw_send "$ep" "$twin" 4 >"$dir/a" &
pa=$!
raw_send "$ep" "$twin" 4 >"$dir/b" &
pb=$!
one_attached() { [ "$(metric 1 ringsteer_gateway_supervisors)" = "$(count_on 1)" ] && [ -n "$(where 37)" ]; }
await "sup-37 attached once, gw-1's gauge = its ledger rows" 4 one_attached
gauges_match_ledger || fail "the gauges differ from the ledger while sup-37's twins are open"
wait "$pa" "$pb"
types="$(reply_type "$(cat "$dir/a")") $(reply_type "$(cat "$dir/b")")"
case $types in
"2 4" | "4 2") ;;
*) fail "sup-37's twins answered [$types] (want one ACCEPT 2, one REJECT 4): a=[$(cat "$dir/a")] b=[$(cat "$dir/b")]" ;;
esac
echo "3: two connections of sup-37 at one epoch: one accepted, one refused; gauge = ledger while both were open"

faults_check
echo "f_10: hostile epochs cost nobody else anything; the 20 stayed, gauges = ledger"
