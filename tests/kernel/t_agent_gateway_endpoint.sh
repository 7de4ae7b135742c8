#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_agent_gateway_endpoint.sh - a gateway id is not taken on the caller's
# uid alone: once the store says where gw-a is (peer 127.0.1.1:7001), a
# listener registered as gw-a must be on that address (refused otherwise:
# reason endpoint, counted), so a local process of an allowed uid cannot
# take gw-a's share of the Service with a socket of its own; a peer socket
# must be on that very endpoint; gw-a's own sockets register and gw-a is
# steered to.
set -u
. "$(dirname "$0")/lib.sh"
kt_up
KT_METRICS=127.0.0.1:9204
metric() { kt_ns curl -s --max-time "$KT_HTTP_S" "http://$KT_METRICS/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
now=$(($(date +%s%N) / 1000000))
"$RS_BUILD/ringsteerctl" init --store "$KT_STORE" >/dev/null || fail "cannot create the store"
sqlite3 "$KT_DIR/ringsteer.db" "INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('gw-a', '127.0.1.1:7001', 0, $now)" ||
	fail "cannot fill the store"
agent_start --store "$KT_STORE" --ttl 600000 --metrics "$KT_METRICS"
await "a sync read the store" 5 sh -c "[ \"\$(nsenter --net=/run/netns/$KT_NS curl -s http://$KT_METRICS/metrics | awk '\$1 == \"ringsteer_agent_syncs_total{result=\\\"ok\\\"}\" { print \$2 }')\" -ge 1 ]"
kt_ns ip addr add 127.0.1.5/32 dev lo
out=$(kt_ns timeout 10 "$RS_BUILD/kernel/kt_tool" serve "$KT_DIR/agent.sock" gw-a=127.0.1.5:7000 2>&1)
grep -q 'register gw-a: endpoint: ' <<<"$out" || fail "a listener of gw-a away from its advertised address: $out"
[ "$(metric 'ringsteer_agent_registration_refusals_total{reason="endpoint"}')" = 1 ] || fail "the refusal was not counted"
# A peer socket must be on the advertised endpoint itself (another port
# of that address is not it).
out=$(kt_ns timeout 10 "$RS_BUILD/kernel/kt_tool" serve "$KT_DIR/agent.sock" peer/gw-a=127.0.1.1:7002 2>&1)
grep -q 'register peer/gw-a: endpoint: ' <<<"$out" || fail "a peer socket of gw-a on another port: $out"
[ "$(metric 'ringsteer_agent_registration_refusals_total{reason="endpoint"}')" = 2 ] || fail "the peer refusal was not counted"
gws_start gw-a=127.0.1.1:7000 peer/gw-a=127.0.1.1:7001
await "steered to gw-a" 5 dial_is 127.0.2.1 gw-a
agent_stop
echo "ok"
