#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_agent_member_uid.sh - one uid cannot take every registration (and so
# every rs_clients entry the agent writes) by making netns of its own:
# with --member-uid-max 2, a third pod of the same uid is refused (reason
# uid_full, counted) while two hold theirs; when one closes, it registers.
set -u
. "$(dirname "$0")/lib.sh"
kt_up
. "$(dirname "$0")/pods.sh"
SOCK="$KT_DIR/member.sock"
KT_METRICS=127.0.0.1:9203
agent_start --member-socket "$SOCK" --metrics "$KT_METRICS" --member-uid-max 2
for p in p1 p2 p3; do pod_up $p; done
mkfifo "$KT_DIR/hold1" "$KT_DIR/hold2"
# (both started before either FIFO is opened: neither holds the other's open)
member p1 "$SOCK" sup-1 <"$KT_DIR/hold1" >"$KT_DIR/sup-1.out" &
member p2 "$SOCK" sup-2 <"$KT_DIR/hold2" >"$KT_DIR/sup-2.out" &
exec 7>"$KT_DIR/hold1" 8>"$KT_DIR/hold2"
await "sup-1 and sup-2 registered" 5 sh -c "grep -q '^registered' '$KT_DIR/sup-1.out' && grep -q '^registered' '$KT_DIR/sup-2.out'"
out=$(member p3 "$SOCK" sup-3 </dev/null)
echo "$out" | grep -q '^refused uid_full ' || fail "a third registration of one uid: $out"
[ "$(metric 'ringsteer_agent_member_registrations_total{result="uid_full"}')" = 1 ] || fail "uid_full not counted"
exec 7>&-
await "sup-1 gone" 5 grep -q 'event=member_gone member=sup-1' "$KT_DIR/agent.$KT_AGENT_STARTS.log"
out=$(member p3 "$SOCK" sup-3 </dev/null)
echo "$out" | grep -q '^registered ' || fail "no registration once the uid held fewer: $out"
exec 8>&-
agent_stop
echo "ok"
