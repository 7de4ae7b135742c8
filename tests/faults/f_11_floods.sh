#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 11 of issue 25's matrix (item 7: each hole as a case of its own): an
# authenticated flood against a serving cluster.  Two gateways, 20
# supervisors attached; sup-40, with a valid token, attaches to gw-1 with
# STAY and for 5 s sends a REFRESH every 2 ms and a SANDBOXES frame every
# millisecond (counts 1, 2, 3, ...), reading what gw-1 answers.  The rule
# (docs/PROTOCOL.md): one TOKEN per heartbeat a link, SANDBOXES written at
# most once a heartbeat with the latest value winning.  So, with the
# cluster's heartbeat H:
#   - TOKENs received <= 5 s / H + 2, and every other REFRESH counted in
#     ringsteer_gateway_refresh_limited_total;
#   - SANDBOXES written (sent minus ringsteer_gateway_sandboxes_coalesced_total)
#     <= 5 s / H + 2, and the ledger holds the last count sent within 2 H
#     of the flood's end;
#   - the 20 stay where they were with their epochs and the gauges equal the
#     ledger (faults_check); gw-1's store queue never reached its bound.
. "$(dirname "$0")/faults_lib.sh"

faults_up 2 20
faults_mark
ep=$(gw_addr 1):$RS_GW_LISTEN_PORT
tok=$(sup_token 40 3600) || fail "could not mint a token for sup-40"
hello=$(hello_hex sup-40 flood 1000 1 "$tok" 0)
lim0=$(metric 1 ringsteer_gateway_refresh_limited_total)
coal0=$(metric 1 ringsteer_gateway_sandboxes_coalesced_total)
full0=$(metric 1 ringsteer_gateway_store_queue_full_total)
dir=$(mktemp -d "$RS_DIR/flood.XXXXXX")
rs_ns timeout 30 python3 - "$ep" "$hello" "$dir" >"$dir/client.out" 2>&1 <<'EOF' &
import select, socket, struct, sys, time
host, port = sys.argv[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(bytes.fromhex(sys.argv[2]))
buf, types = b"", {}
def pump(wait):
    global buf
    r, _, _ = select.select([s], [], [], wait)
    if not r:
        return
    data = s.recv(65536)
    if not data:
        raise SystemExit("closed by gw-1")
    buf += data
    while len(buf) >= 4:
        n = struct.unpack(">I", buf[:4])[0]
        if len(buf) < 4 + n:
            break
        t = buf[5]
        types[t] = types.get(t, 0) + 1
        buf = buf[4 + n:]
while 2 not in types:  # ACCEPT
    pump(1)
refresh = struct.pack(">IBB", 2, 1, 7)
sent_r = sent_b = 0
start = time.monotonic()
while time.monotonic() - start < 5:
    sent_b += 1
    s.sendall(struct.pack(">IBBI", 6, 1, 6, sent_b))
    if sent_b % 2 == 0:
        s.sendall(refresh)
        sent_r += 1
    pump(0.001)
# After the flood, a HEARTBEAT every 100 ms: a supervisor's own, so gw-1
# does not end the link as idle (3 heartbeats) while the ledger is read.
beat = struct.pack(">IBB", 2, 1, 5)
end = time.monotonic()
while time.monotonic() - end < 0.5:
    s.sendall(beat)
    pump(0.1)
# The counts, then the link held open until the test has read the ledger.
with open(sys.argv[3] + "/counts.tmp", "w") as f:
    print(sent_r, sent_b, types.get(8, 0), types.get(4, 0), file=f)
import os
os.rename(sys.argv[3] + "/counts.tmp", sys.argv[3] + "/counts")
while not os.path.exists(sys.argv[3] + "/done") and time.monotonic() - end < 15:
    s.sendall(beat)
    pump(0.1)
EOF
client=$!
await "the flood's counts" 20 test -s "$dir/counts"
read -r sent_r sent_b tokens rejects <"$dir/counts"
hb=$RS_HEARTBEAT_MS
bound=$((5000 / hb + 2))
echo "sup-40 sent $sent_r REFRESH and $sent_b SANDBOXES in 5 s; got $tokens TOKEN, $rejects REJECT (heartbeat $hb ms: at most $bound of each)"
[ "$rejects" = 0 ] || fail "gw-1 refused the flooding member"
[ "$tokens" -ge 1 ] && [ "$tokens" -le "$bound" ] || fail "TOKENs answered: $tokens, want 1..$bound"
lim=$(($(metric 1 ringsteer_gateway_refresh_limited_total) - lim0))
[ "$lim" -ge $((sent_r - tokens)) ] || fail "refresh_limited counted $lim, want >= $((sent_r - tokens))"
coal=$(($(metric 1 ringsteer_gateway_sandboxes_coalesced_total) - coal0))
written=$((sent_b - coal))
[ "$written" -ge 1 ] && [ "$written" -le "$bound" ] || fail "SANDBOXES written $written times (coalesced $coal of $sent_b), want 1..$bound"
last_is() { [ "$(session 40 sandboxes)" = "$sent_b" ]; }
faults_recovered_within $((2 * hb)) "the ledger holding sup-40's last count ($sent_b)" last_is
touch "$dir/done"
wait "$client" || fail "the flooding client failed: $(cat "$dir/client.out")"
[ "$(metric 1 ringsteer_gateway_store_queue_full_total)" = "$full0" ] || fail "gw-1's store queue reached its bound"
echo "gw-1: $lim REFRESH limited, $coal SANDBOXES coalesced, $written written; store queue never full"
faults_check
echo "f_11: an authenticated flood costs nobody else anything; the 20 stayed, gauges = ledger"
