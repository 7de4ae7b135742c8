#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cluster/selftest.sh - the harness's own mechanics, without ringsteer's
# daemons: namespace, the Service's random DNAT (both endpoints get a share),
# svc_update, ss -K on a connection, await and hold, and cleanup (no process,
# namespace or temp dir left).  Stand-in gateways are python3 http.server
# listeners.  Exit 77 (skipped) without root, ip netns or python3.
# usage: tests/cluster/selftest.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3" >&2; exit 77; }

cluster_up

# Stand-in gateways 1 and 2: each answers GET /id with its number.
for n in 1 2; do
	mkdir -p "$RS_DIR/www$n" && echo "$n" >"$RS_DIR/www$n/id"
	ip netns exec "$RS_NS" python3 -m http.server --bind "$(gw_addr "$n")" \
		--directory "$RS_DIR/www$n" "$RS_GW_LISTEN_PORT" >"$RS_DIR/log/fake-$n.log" 2>&1 &
	RS_GW_PID[$n]=$!
	disown "$!"
done
listening() { rs_ns ss -ltn | grep -q "$(gw_addr "$1"):$RS_GW_LISTEN_PORT"; }
await "fake gateway 1 listening" 5 listening 1
await "fake gateway 2 listening" 5 listening 2
svc_update

# 60 connections through the Service from a "pod" address: both endpoints
# must be picked, neither fewer than 10 times (p of failing ~ 1e-6).
declare -A seen=([1]=0 [2]=0)
for i in $(seq 60); do
	id=$(rs_ns curl -fsS --max-time 2 --interface "$(sup_addr 1)" "http://$RS_SERVICE/id") ||
		fail "request $i through the Service failed"
	seen[$id]=$((${seen[$id]:-0} + 1))
done
echo "service spread over 60 connections: gw1=${seen[1]} gw2=${seen[2]}"
[ "${seen[1]}" -ge 10 ] && [ "${seen[2]}" -ge 10 ] || fail "DNAT does not spread: ${seen[*]}"

# svc_update with one endpoint: every connection goes there.
svc_update 2
for i in $(seq 10); do
	id=$(rs_ns curl -fsS --max-time 2 --interface "$(sup_addr 1)" "http://$RS_SERVICE/id")
	[ "$id" = 2 ] || fail "svc_update 2: connection $i went to $id"
done
svc_update

# ss -K kills a held connection from a pod address (the client sees it close).
ip netns exec "$RS_NS" python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.2.7", 0)); s.connect(("127.0.0.100", 7000))
print("connected", flush=True)
s.settimeout(20)
try:
    d = s.recv(1)
    print("closed" if d == b"" else "data", flush=True)
except OSError as e:
    print("error", e.errno, flush=True)
' >"$RS_DIR/log/holder.log" 2>&1 &
holder=$!
await "holder connected" 5 log_has "$RS_DIR/log/holder.log" connected
sup_blip 7
await "holder sees its connection killed" 5 log_has "$RS_DIR/log/holder.log" 'closed|error'
wait "$holder"
echo "blip: holder saw: $(tail -n1 "$RS_DIR/log/holder.log")"

# await / hold: a condition that becomes true, one that stays true.
flag="$RS_DIR/flag"
(sleep 0.3 && touch "$flag") &
await "flag appears" 3 test -e "$flag"
hold "flag stays" 0.3 test -e "$flag"

# A failing await exits non-zero and prints its description (in a subshell,
# so this test goes on).
out=$( (RS_ERR_FD=2; await "never true" 0.2 false) 2>&1 ) && fail "await on false succeeded"
printf '%s\n' "$out" | grep -q 'timed out after 0.2s awaiting: never true' || fail "await's message: $out"

# Cleanup: run cluster_down now and check nothing is left.
ns=$RS_NS dir=$RS_DIR p1=${RS_GW_PID[1]}
cluster_down
ip netns list | grep -qw "$ns" && { echo "FAIL: namespace $ns left behind"; exit 1; }
[ -e "$dir" ] && { echo "FAIL: $dir left behind"; exit 1; }
rs_gone "$p1" || { echo "FAIL: process $p1 left behind"; exit 1; }
echo "selftest: ok"
