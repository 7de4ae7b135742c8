#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 40: a peer that never reads cannot make a gateway hold its
# output without bound (issue 25, authenticated floods).  A client with a
# valid token attaches to gw-1, never reads, and asks for a token every
# 20 ms; gw-1 (--heartbeat 100: one TOKEN per 100 ms, --max-unsent 1024)
# answers until the kernel's buffers are full and its own output passes
# 1024 bytes, then closes the connection: ringsteer_gateway_unsent_closed_total
# goes to 1, one event=unsent_cap line, and the supervisors attached
# meanwhile are untouched.  The namespace's TCP send buffer is set small
# before the gateways start (net.ipv4.tcp_wmem is per namespace; an accepted
# socket takes its send buffer from its listener), so the kernel absorbs
# kilobytes, not megabytes, before the gateway's own queue grows.
#
# The client's receive buffer is 4 KiB (SO_RCVBUF 4096, doubled by the
# kernel), not the minimum: at the minimum its kernel drops segments it had
# advertised room for, stops taking gw-1's acknowledgements, its REFRESH stop
# leaving, and gw-1 ends the link as idle (3 heartbeats) before its output
# reaches the cap, in about one run of three (CI saw it).  Its send buffer is
# its own 1 MiB, above the namespace's small tcp_wmem, so a few small
# unacknowledged segments never block the next REFRESH.
. "$(dirname "$0")/../cluster/lib.sh"

RS_GW_ARGS="--heartbeat 100 --ttl 2000 --max-unsent 1024"
cluster_up --gateways 0
rs_ns sysctl -q -w net.ipv4.tcp_wmem="4096 4096 4096" || fail "cannot set the namespace's tcp_wmem"
gw_start 1
gw_start 2
sups_start 1 2
await "both supervisors attached" 15 all_attached 1 2
declare -A before
for m in 1 2; do
	before[$m]="$(where "$m") $(session "$m" epoch)"
done
ep=$(gw_addr 1):$RS_GW_LISTEN_PORT
token=$(sup_token 9 3600) || fail "could not mint a token"
hello=$(hello_hex sup-9 reader-never 1 0 "$token" 0)
refresh=$(frame_hex 7 "")
[ "$(metric 1 ringsteer_gateway_unsent_closed_total)" = 0 ] || fail "unsent_closed_total is not 0 at start"

t0=$(rs_now_ms)
out=$(rs_ns timeout 60 python3 - "$ep" "$hello" "$refresh" <<'EOF'
import socket, sys, time
host, port = sys.argv[1].rsplit(':', 1)
hello, refresh = bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each REFRESH leaves at once
# Its own room to send, above the namespace's small tcp_wmem: a REFRESH is
# one small segment of a kilobyte or more of buffer, and those the gateway
# has not acknowledged yet must not block the next.
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # never read: the window closes soon
s.connect((host, int(port)))
s.sendall(hello)
sent = 0
start = time.monotonic()
while time.monotonic() - start < 50:
    try:
        s.send(refresh)
        sent += 1
    except OSError as e:  # the gateway closed us: reset or broken pipe
        print("closed after %d REFRESH in %.1f s (%s)" % (sent, time.monotonic() - start, e.__class__.__name__))
        sys.exit(0)
    time.sleep(0.02)
print("still open after %d REFRESH in %.1f s" % (sent, time.monotonic() - start))
EOF
)
t1=$(rs_now_ms)
echo "client: $out ($((t1 - t0)) ms)"
case $out in
closed*) ;;
*)
	n=$(grep -c "event=idle_timeout member=sup-9" "$(gw_log 1)")
	fail "the gateway kept a connection that never reads: $out (gw-1 ended it as idle $n time(s) first)" ;;
esac
await "unsent_closed_total = 1" 5 metric_is 1 ringsteer_gateway_unsent_closed_total 1
n=$(log_count "$(gw_log 1)" "event=unsent_cap")
[ "$n" = 1 ] || fail "event=unsent_cap logged $n times, want 1"
echo "gw-1: $(grep -E 'event=unsent_cap' "$(gw_log 1)" | sed 's/^ts=[^ ]* //')"
for m in 1 2; do
	now="$(where "$m") $(session "$m" epoch)"
	[ "$now" = "${before[$m]}" ] || fail "sup-$m moved: before [${before[$m]}] now [$now]"
done
gw_ready 1 || fail "gw-1 not ready after the flood"
echo "t_40: a peer that never reads closed past --max-unsent, counted once; sup-1 and sup-2 untouched"
