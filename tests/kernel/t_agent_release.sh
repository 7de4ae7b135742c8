#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A gateway that is gone (listener closed and its store row gone) frees its
# slot, and the agent keeps syncing: the kernel empties a sockmap slot by
# itself when the listener closes, and deleting an empty sockmap slot fails
# with EINVAL, which once stopped every later sync (pins to the dead slot
# stayed, new gateways never got buckets).  A gateway whose listener closed
# but whose row is live (restarting) keeps its slot and gets it back.
set -u
. "$(dirname "$0")/lib.sh"
kt_up

now=$(($(date +%s%N) / 1000000))
"$RS_BUILD/ringsteerctl" init --store "$KT_STORE" >/dev/null || fail "cannot create the store"
sqlite3 "$KT_DIR/ringsteer.db" "
	INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('gw-a', '127.0.1.1:7001', 0, $now), ('gw-b', '127.0.1.2:7001', 0, $now),
		('gw-c', '127.0.1.3:7001', 0, $now);" || fail "cannot fill the store"

agent_start --store "$KT_STORE" --ttl 600000 --metrics 127.0.0.1:9200
gws_start gw-a=127.0.1.1:7000 gw-b=127.0.1.2:7000
# One maps read per check (each process is dear on a qemu guest): the slots
# held by gw-a, gw-b and gw-c, and their buckets.
slots_are() {
	[ "$(maps_json | jq -r '[.slots[].gateway] as $g | [("gw-a", "gw-b", "gw-c") as $x | [$g[] | select(. == $x)] | length] | join(" ")')" = "$*" ]
}
buckets() { maps_json | jq -r '[("gw-b", "gw-c") as $x | [.slots[] | select(.gateway == $x) | .buckets] | add // 0] | join(" ")'; }
await "gw-a and gw-b registered" 5 slots_are 1 1 0

# Both listeners close; gw-a's row goes (it left), gw-b's stays (restarting).
kill -KILL "$KT_GWS_PID"
wait "$KT_GWS_PID" 2>/dev/null
sqlite3 "$KT_DIR/ringsteer.db" "DELETE FROM gateways WHERE id = 'gw-a'" || fail "store update"
await "gw-a's slot released" 5 grep -q 'event=slot_released .*gateway=gw-a' "$KT_DIR/agent.1.log"
slots_are 0 1 0 || fail "after the release: $(maps_json)"

# The syncs after the release keep working: a new gateway and the
# restarted one are steered to, and no pass failed.
syncs() { kt_ns curl -fsS --max-time "$KT_HTTP_S" http://127.0.0.1:9200/metrics | awk -v r="$1" 'index($1, "ringsteer_agent_syncs_total{result=\"" r "\"}") == 1 { print $2 }'; }
ok_before=$(syncs ok)
gws_start gw-b=127.0.1.2:7000 gw-c=127.0.1.3:7000
await "gw-b back, gw-c registered" 5 slots_are 0 1 1
syncs_after() { [ "$(syncs ok)" -gt $((ok_before + 3)) ]; }
await "three more sync passes" 5 syncs_after
[ "$(syncs error)" = 0 ] || fail "sync passes failed: $(syncs error); $(grep sync_failed "$KT_DIR/agent.1.log" | tail -n 3)"
! grep -q sync_failed "$KT_DIR/agent.1.log" || fail "sync_failed logged: $(grep sync_failed "$KT_DIR/agent.1.log" | tail -n 3)"
read -r b c <<<"$(buckets)"
[ "$((b + c))" = 4096 ] && [ "$b" -gt 0 ] && [ "$c" -gt 0 ] || fail "table after the release: gw-b $b, gw-c $c buckets"
# 31 sources (a source's bucket is a hash of its address: with gw-c holding
# about half the buckets, all 31 missing it would be a broken table).
seen=$(dials $(seq -f 127.0.2.%g 10 40) | cut -d' ' -f2 | tr '\n' ' ')
case $seen in *gw-a*) fail "a dial landed on the released gw-a: $seen" ;; esac
case $seen in *gw-c*) ;; *) fail "no dial reached the new gw-c: $seen" ;; esac
[ "$(wc -w <<<"$seen")" = 31 ] || fail "not every source dialed: $seen"

# Every row expires (a store stalled past the TTL) while both listeners stay
# open: the table keeps steering to them (it once went empty, refusing every
# Service connection until the store came back).
sqlite3 "$KT_DIR/ringsteer.db" "UPDATE gateways SET heartbeat_ms = $((now - 700000))" || fail "store update"
expired_seen() { [ "$(syncs ok)" -gt "$(cat "$KT_DIR/ok_mark")" ]; }
syncs ok >"$KT_DIR/ok_mark"
await "a sync after every row expired" 5 expired_seen
syncs ok >"$KT_DIR/ok_mark"
await "one more (the table swap, if any, is done)" 5 expired_seen
read -r b c <<<"$(buckets)"
[ "$((b + c))" = 4096 ] || fail "rows expired, listeners open: table gw-b $b gw-c $c"
[ -n "$(dial 127.0.2.77)" ] || fail "a Service dial was refused with every row expired"
agent_stop
echo "ok"
