#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent follows the store (docs/KERNEL.md, "Sync"): live sessions on local
# gateways pin their source addresses; a known supervisor with no live
# session gets a precomputed pin where the placement rule would put it
# (cross-checked with `ringsteerctl place`); the table is weighted by room,
# max(0, cap - load): a gateway at cap gets no buckets.
set -u
. "$(dirname "$0")/lib.sh"
kt_up

now=$(($(date +%s%N) / 1000000))
old=$((now - 700000)) # past the agent's --ttl 600000
# sup-x is known (its row is there) with no live session: its gateway gw-z
# is dead (a session counts while its gateway's row is live).
"$RS_BUILD/ringsteerctl" init --store "$KT_STORE" >/dev/null || fail "cannot create the store"
sqlite3 "$KT_DIR/ringsteer.db" "
	INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('gw-a', '127.0.1.1:7001', 0, $now), ('gw-b', '127.0.1.2:7001', 0, $now),
		('gw-z', '127.0.1.9:7001', 0, $old);
	INSERT INTO sessions VALUES
		('sup-1', 'i', 1, 'gw-a', 0, '127.0.3.1:40001', $now, $((now + 600000)), 1),
		('sup-2', 'i', 1, 'gw-b', 0, '127.0.3.2:40002', $now, $((now + 600000)), 1),
		('sup-x', 'i', 1, 'gw-z', 0, '127.0.2.50:40003', $old, $old, 1); UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s WHERE s.gateway_id = gateways.id AND s.state = 1);" || fail "cannot fill the store"

agent_start --store "$KT_STORE" --ttl 600000
gws_start gw-a=127.0.1.1:7000 gw-b=127.0.1.2:7000

want_x=$("$RS_BUILD/ringsteerctl" place --gateways gw-a=1,gw-b=1 sup-x) || fail "ringsteerctl place"
# pins_are SRC=GW...: each SRC is pinned to its GW (one maps read: each
# process is dear on a qemu guest).
pins_are() {
	local pins p
	pins=$(maps_json | jq -r '.pins[] | "\(.source)=\(.gateway)"') || return 1
	for p in "$@"; do grep -qx -- "$p" <<<"$pins" || return 1; done
}
await "session pins, and sup-x's precomputed on $want_x" 5 pins_are 127.0.3.1=gw-a 127.0.3.2=gw-b "127.0.2.50=$want_x"
[ "$(dials 127.0.3.1 127.0.3.2 127.0.2.50 | tr '\n' ' ')" = "127.0.3.1 gw-a 127.0.3.2 gw-b 127.0.2.50 $want_x " ] ||
	fail "the pinned sources did not land on their gateways: $(dials 127.0.3.1 127.0.3.2 127.0.2.50)"
# Equal room (cap 2, one each): half the buckets each.
buckets() { maps_json | jq -r '[("gw-a", "gw-b") as $x | [.slots[] | select(.gateway == $x) | .buckets] | add // 0] | join(" ")'; }
buckets_are() { [ "$(buckets)" = "$*" ]; }
buckets_are 2048 2048 || fail "equal room, unequal table: $(maps_json)"

# gw-a reaches cap: N = 4 (+1 arriving) over G = 2 -> cap 3; gw-a holds 3.
sqlite3 "$KT_DIR/ringsteer.db" "
	INSERT INTO sessions VALUES
		('sup-3', 'i', 1, 'gw-a', 0, '', $now, $((now + 600000)), 1),
		('sup-4', 'i', 1, 'gw-a', 0, '', $now, $((now + 600000)), 1); UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s WHERE s.gateway_id = gateways.id AND s.state = 1);" || fail "store update"
await "gw-a at cap gets no buckets" 5 buckets_are 0 4096
out=$(dials 127.0.2.90 127.0.2.91 127.0.2.92 127.0.2.93 127.0.2.94 127.0.2.95) &&
	[ "$(grep -c ' gw-b$' <<<"$out")" = 6 ] || fail "the table still sends to gw-a at cap: $out"

# The session moves: its pin follows.  A session that ends (its row
# deleted, as at a clean departure) leaves a known supervisor: its pin
# becomes its precomputed placement by the rule over the remaining loads
# (gw-a: sup-3, sup-4; gw-b: sup-1), as `ringsteerctl place` computes it.
sqlite3 "$KT_DIR/ringsteer.db" "UPDATE sessions SET gateway_id = 'gw-b' WHERE member_id = 'sup-1'; DELETE FROM sessions WHERE member_id = 'sup-2'; UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s WHERE s.gateway_id = gateways.id AND s.state = 1);"
want_2=$("$RS_BUILD/ringsteerctl" place --gateways gw-a=2,gw-b=1 sup-2) || fail "ringsteerctl place"
await "pin follows sup-1 to gw-b, sup-2's is its precomputed placement on $want_2" 5 \
	pins_are 127.0.3.1=gw-b "127.0.3.2=$want_2"
agent_stop
echo "ok"
