#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent without privileges says so in one log line and exits 3, so a
# supervisor of the agent (and the gateways, redirect-only) can tell it from
# a crash; SIGTERM leaves the pins, so steering goes on after a clean stop.
set -u
. "$(dirname "$0")/lib.sh"
kt_up

kt_ns setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$RS_BUILD/ringsteer-agent" --service "$KT_SERVICE" $KT_CONNECT --socket "$KT_DIR/agent.sock" 2>"$KT_DIR/unpriv.log"
rc=$?
[ $rc = 3 ] || fail "unprivileged agent: status $rc, want 3: $(cat "$KT_DIR/unpriv.log")"
[ "$(wc -l <"$KT_DIR/unpriv.log")" = 1 ] && grep -q 'event=no_steering reason="not privileged' "$KT_DIR/unpriv.log" ||
	fail "want one no_steering line: $(cat "$KT_DIR/unpriv.log")"

# A kernel without sk_lookup (the probe overridden, so every kernel of the
# matrix runs this): one line naming the missing feature, status 3, nothing
# loaded or pinned.
kt_ns "$RS_BUILD/ringsteer-agent" --service "$KT_SERVICE" $KT_CONNECT --socket "$KT_DIR/agent.sock" \
	--probe-missing sk_lookup 2>"$KT_DIR/nolookup.log"
rc=$?
[ $rc = 3 ] || fail "agent without sk_lookup: status $rc, want 3: $(cat "$KT_DIR/nolookup.log")"
[ "$(wc -l <"$KT_DIR/nolookup.log")" = 1 ] &&
	grep -q 'event=no_steering reason="the kernel has no sk_lookup programs' "$KT_DIR/nolookup.log" ||
	fail "want one no_steering line naming sk_lookup: $(cat "$KT_DIR/nolookup.log")"
[ ! -e "/sys/fs/bpf/ringsteer/$KT_INO" ] || fail "an agent without sk_lookup pinned something"

agent_start
gws_start gw-a=127.0.1.1:7000
await "steered" 5 dial_is 127.0.2.1 gw-a
agent_stop
dial_is 127.0.2.1 gw-a || fail "steering stopped with a clean agent stop"
[ -e "/sys/fs/bpf/ringsteer/$KT_INO/link_steer" ] || fail "the link pin is gone"
echo "ok"
