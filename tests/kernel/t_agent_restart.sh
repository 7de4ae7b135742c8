#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue test 3: the agent is SIGKILLed and steering continues (pins and table
# stay in the pinned maps, the pinned link keeps the program attached); a
# restarted agent adopts the pinned state (same link, same program, slots
# still holding the gateways' sockets without re-registration) and goes on:
# a session that moved in the store while it was down moves its pin.
set -u
. "$(dirname "$0")/lib.sh"
kt_up

now=$(($(date +%s%N) / 1000000))
"$RS_BUILD/ringsteerctl" init --store "$KT_STORE" >/dev/null || fail "cannot create the store"
sqlite3 "$KT_DIR/ringsteer.db" "
	INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('gw-a', '127.0.1.1:7001', 0, $now), ('gw-b', '127.0.1.2:7001', 0, $now);
	INSERT INTO sessions VALUES ('sup-1', 'i-1', 1, 'gw-b', 0, '127.0.2.1:40001', $now, $((now + 600000)), 1); UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s WHERE s.gateway_id = gateways.id AND s.state = 1);" ||
	fail "cannot fill the store"

agent_start --store "$KT_STORE" --ttl 600000
gws_start gw-a=127.0.1.1:7000 gw-b=127.0.1.2:7000
await "127.0.2.1 pinned to gw-b" 5 dial_is 127.0.2.1 gw-b
# by_table SRC...: every SRC lands on gw-a or gw-b (one process for all)
by_table() {
	local out
	out=$(dials "$@") && [ "$(grep -cE ' gw-(a|b)$' <<<"$out")" = $# ]
}
by_table 127.0.2.{2..9} || fail "not every source steered by the table: $(dials 127.0.2.{2..9})"
before=$(maps_json) || fail "ringsteerctl maps"
link_id=$(jq -r .links.link_steer.link_id <<<"$before")
prog_id=$(jq -r .links.link_steer.prog_id <<<"$before")
lookups=$(jq -r .lookups.lookups <<<"$before")
[ "$(jq -r '.pins[] | select(.source == "127.0.2.1") | .gateway' <<<"$before")" = gw-b ] || fail "pin not in maps: $before"

kt_log "SIGKILL the agent"
agent_kill
out=$(dials 127.0.2.1 127.0.2.1 127.0.2.1) && [ "$(grep -c ' gw-b$' <<<"$out")" = 3 ] ||
	fail "pinned steering stopped with the agent: $out"
by_table 127.0.2.{2..5} || fail "table steering stopped with the agent: $(dials 127.0.2.{2..5})"
sqlite3 "$KT_DIR/ringsteer.db" "UPDATE sessions SET gateway_id = 'gw-a' WHERE member_id = 'sup-1'; UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s WHERE s.gateway_id = gateways.id AND s.state = 1);"
dial_is 127.0.2.1 gw-b || fail "the maps changed with nobody to change them"

kt_log "restart the agent"
agent_start --store "$KT_STORE" --ttl 600000
agent_log | grep -q 'event=loaded start=adopted' || fail "the restarted agent did not adopt: $(agent_log)"
after=$(maps_json) || fail "ringsteerctl maps"
[ "$(jq -r .links.link_steer.link_id <<<"$after")" = "$link_id" ] || fail "the link changed"
[ "$(jq -r .links.link_steer.prog_id <<<"$after")" = "$prog_id" ] || fail "the program changed"
[ "$(jq -r '[.slots[] | select(.socket)] | length' <<<"$after")" = 2 ] || fail "slots lost their sockets: $after"
[ "$(jq -r .lookups.lookups <<<"$after")" -ge "$lookups" ] || fail "counters restarted"
await "pin follows the store to gw-a" 5 dial_is 127.0.2.1 gw-a

kt_log "a second agent for the same netns is refused"
kt_ns "$RS_BUILD/ringsteer-agent" --service "$KT_SERVICE" $KT_CONNECT --socket "$KT_DIR/agent2.sock" 2>"$KT_DIR/agent2.log"
rc=$?
[ $rc = 1 ] && grep -q 'another agent holds' "$KT_DIR/agent2.log" || fail "second agent: status $rc, $(cat "$KT_DIR/agent2.log")"
agent_stop
echo "ok"
