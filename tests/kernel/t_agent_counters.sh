#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Upgrade across a counters layout change: a pin directory whose rs_stats
# has fewer counters (an agent before pin_stale: 6, not 7) is refused
# without --replace (exit 4, the old map still pinned: nothing changed), and
# with --replace a fresh rs_stats takes the pin once every link runs this
# agent's programs: the agent starts (upgraded), steering goes on with the
# slots and sockets it had, and the new counters count (the lookups of the
# steered connections show in the fresh map).  Any other map of another
# layout is still refused (a datapath whose state would be lost).
set -u
. "$(dirname "$0")/lib.sh"
kt_up
P="/sys/fs/bpf/ringsteer/$KT_INO"
stats_entries() { bpftool map show pinned "$P/rs_stats" | sed -n 's/.* max_entries \([0-9]*\).*/\1/p'; }

agent_start
gws_start gw-a=127.0.1.1:7000
await "steered" 5 dial_is 127.0.2.1 gw-a
agent_stop

# An older agent's rs_stats: 6 counters.
rm "$P/rs_stats"
bpftool map create "$P/rs_stats" type percpu_array key 4 value 8 entries 6 name rs_stats || fail "bpftool map create"
[ "$(stats_entries)" = 6 ] || fail "the old-layout rs_stats is not pinned"
[ "$(dial 127.0.2.1)" = gw-a ] || fail "steering stopped while no agent ran"

kt_ns "$RS_BUILD/ringsteer-agent" --service "$KT_SERVICE" $KT_CONNECT --socket "$KT_DIR/agent.sock" 2>"$KT_DIR/refused.log"
rc=$?
[ $rc = 4 ] && grep -q 'counters map of another layout' "$KT_DIR/refused.log" ||
	fail "no --replace: status $rc, $(cat "$KT_DIR/refused.log")"
[ "$(stats_entries)" = 6 ] || fail "a refused upgrade replaced rs_stats"

agent_start --replace
agent_log | grep -q 'event=loaded start=upgraded' || fail "not upgraded: $(agent_log)"
[ "$(stats_entries)" = 7 ] || fail "rs_stats was not replaced by a fresh one ($(stats_entries) entries)"
await "steered with the same socket" 5 dial_is 127.0.2.1 gw-a
lookups=$(maps_json | jq -r .lookups.lookups)
[ "${lookups:-0}" -ge 1 ] || fail "the fresh counters count nothing: $(maps_json | jq -c .lookups)"

# Any other map of another layout is refused, as before.
agent_stop
rm "$P/rs_pins"
bpftool map create "$P/rs_pins" type hash key 20 value 4 entries 16 name rs_pins || fail "bpftool map create"
kt_ns "$RS_BUILD/ringsteer-agent" --service "$KT_SERVICE" $KT_CONNECT --replace --socket "$KT_DIR/agent.sock" \
	2>"$KT_DIR/proto.log"
rc=$?
[ $rc = 1 ] && grep -q 'rs_pins does not match' "$KT_DIR/proto.log" || fail "rs_pins of another layout: status $rc"
echo "ok"
