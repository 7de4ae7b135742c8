#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 35: the unauthenticated pool is shared fairly (issue 25, hole
# "first come, first served").  gw-1 runs with the default limits
# (--max-unauth 256, --max-unauth-per-source 8) and a long HELLO deadline.
# 32 sources (127.0.4.1..32) each hold 8 silent connections (a HELLO
# trickled one byte every 200 ms, never complete): 256, the whole pool, each
# source at its share 256 / 32 = 8.  A holder re-dials every connection the
# gateway closes, as an attacker would.  Then:
#   arrival   sup-1 (127.0.2.1, a 33rd source, under its share 256 / 33 = 7)
#             attaches within 15 s: its arrival evicts the oldest waiting
#             connection of a source over its share, counted in
#             ringsteer_gateway_unauth_evictions_total (before: every
#             arrival is refused unauth_total while the pool stays full)
#   stays     the holders' re-dials (sources at their share) are refused,
#             not evicting in turn: sup-1 stays attached 3 s, the pool stays
#             at most 256, and no source holds more than 8
. "$(dirname "$0")/../cluster/lib.sh"

command -v python3 >/dev/null || { echo "missing tool: python3" >&2; exit 1; }

SOURCES=32 PER=8
RS_GW_ARGS="--hello-timeout 60000"
# The slow clocks: the idle timeout (3 heartbeats) is then 3 s, well past
# the holder's 200 ms between bytes even on a loaded machine.
RS_HEARTBEAT_MS=1000 RS_TTL_MS=5000
cluster_up --gateways 1
ep=$(gw_addr 1):$RS_GW_LISTEN_PORT

cat >"$RS_DIR/hold.py" <<'EOF'
import socket, sys, time
ep, first, n, per, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
host, port = ep.rsplit(":", 1)
hello = b"\x00\x00\x03\xe8\x01\x01" + b"a" * 998
def dial(src):
    s = socket.socket()
    s.settimeout(1)
    s.bind((src, 0))
    s.connect((host, int(port)))
    s.setblocking(False)
    return s
slots = [["127.0.4.%d" % (first + i), None, 0] for i in range(n) for _ in range(per)]
redials = -len(slots)  # the first dial of each is not a re-dial
ready = False
end = time.time() + secs
while time.time() < end:
    for sl in slots:
        src, s, i = sl
        ok = s is not None
        if ok:
            try:
                if s.recv(4096) == b"":
                    ok = False
            except BlockingIOError:
                pass
            except OSError:
                ok = False
        if ok:
            try:
                s.send(hello[i % len(hello):i % len(hello) + 1])
                sl[2] = i + 1
            except BlockingIOError:
                pass
            except OSError:
                ok = False
        if not ok:
            # Closed by the gateway (evicted, or refused): dial again, as an
            # attacker keeping its sockets would.
            if s is not None:
                s.close()
            sl[1], sl[2] = None, 0
            try:
                sl[1] = dial(src)
                redials += 1
            except OSError:
                pass
    if not ready and all(sl[1] is not None for sl in slots):
        ready = True
        print("ready", flush=True)
    with open(sys.argv[6], "w") as f:
        f.write("%d\n" % max(redials, 0))
    time.sleep(0.2)
EOF
ip netns exec "$RS_NS" python3 "$RS_DIR/hold.py" "$ep" 1 "$SOURCES" "$PER" 120 "$RS_DIR/redials" >"$RS_DIR/hold.out" 2>&1 &
holder=$!
await "holder: $SOURCES sources x $PER connections" 20 grep -q ready "$RS_DIR/hold.out"
full() { metric_is 1 ringsteer_gateway_unauthenticated_connections $((SOURCES * PER)); }
await "the pool full: $((SOURCES * PER)) waiting" 10 full
echo "pool: $(metric 1 ringsteer_gateway_unauthenticated_connections) waiting from $SOURCES sources"

# --- arrival ------------------------------------------------------------------
t0=$(rs_now_ms)
sup_start 1
await "sup-1 (a new source) attaches while $SOURCES sources hold the pool" 15 all_attached 1
echo "arrival: sup-1 attached after $(($(rs_now_ms) - t0)) ms; evictions $(metric 1 ringsteer_gateway_unauth_evictions_total)"
metric_ge 1 ringsteer_gateway_unauth_evictions_total 1 || fail "sup-1 attached without an eviction counted"

# --- stays -----------------------------------------------------------------------
per_source_max() {
	rs_ns ss -Htn state established "( sport = :$RS_GW_LISTEN_PORT )" |
		awk '{ split($4, a, ":"); n[a[1]]++ } END { m = 0; for (s in n) if (s ~ /^127\.0\.4\./ && n[s] > m) m = n[s]; print m }'
}
steady() {
	sup_attached 1 && [ "$(metric 1 ringsteer_gateway_unauthenticated_connections)" -le $((SOURCES * PER)) ] &&
		[ "$(per_source_max)" -le "$PER" ]
}
hold "sup-1 stays attached, the pool at most $((SOURCES * PER)), no source over $PER" 3 steady
echo "stays: holders re-dialed $(cat "$RS_DIR/redials") times; waiting $(metric 1 ringsteer_gateway_unauthenticated_connections);" \
	"refused unauth_total $(metric 1 ringsteer_gateway_rejects_total 'reason="unauth_total"');" \
	"evictions $(metric 1 ringsteer_gateway_unauth_evictions_total); most from one source $(per_source_max)"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
gw_ready 1 || fail "gw-1 not ready"
echo "t_35: a new source's supervisor attached through a pool held by $SOURCES sources, by evicting from one over its share"
