#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 21: the gateway's limits (issue 9).  One gateway, gw-1, runs with
#   --max-frame 2048 --max-unauth-per-source 3 --max-unauth 5
#   --max-sessions 2 --limit-retry 3000 --hello-timeout 30000
# (a long HELLO deadline, so that the held connections below stay
# unauthenticated for the whole test).  In order:
#   frame     a header announcing 4000 bytes: REJECT BAD_FRAME and a close,
#             counted reason="frame_too_large"; a frame of exactly 2048 bytes
#             is waited for and judged on its content (a malformed HELLO:
#             bad_frame), not refused for its size
#   source    3 connections held open from 127.0.0.1 sending a HELLO one byte
#             every 200 ms (slower than any deadline but the HELLO's); a 4th
#             from there gets REJECT LIMIT (retry hint 3000) and a close,
#             counted reason="unauth_per_source", while sup-2 (source
#             127.0.2.2) still attaches
#   total     2 more held from 127.0.3.1 and 127.0.3.2 (5 waiting in all);
#             another from 127.0.3.1, which holds its share (5 / 3 = 1), is
#             refused likewise, counted reason="unauth_total"; one from
#             127.0.3.3, a new source under its share (5 / 4 = 1), is let in
#             by evicting the oldest of 127.0.0.1's three (the largest),
#             counted in ringsteer_gateway_unauth_evictions_total; the held
#             ones are then closed and the gauge
#             ringsteer_gateway_unauthenticated_connections returns to 0
#   sessions  sup-1 and sup-2 attached (the limit); sup-3 gets REJECT LIMIT
#             with retry_after_ms=3000, counted reason="sessions", its row is
#             taken back (the store shows 2 on gw-1), and it logs a retry no
#             sooner than 3000 ms, and its next attempt comes no sooner; when
#             sup-1 stops, sup-3 attaches at its next retry
# Every refusal also logs one event=reject line with its reason.  sup-1 and
# sup-2 keep their gateway, epoch and instance throughout (checked before
# sup-1 stops).
# Connections with a chosen source address are made by a small python3
# helper inside the namespace (bash's /dev/tcp cannot bind).
. "$(dirname "$0")/../cluster/lib.sh"

command -v python3 >/dev/null || { echo "missing tool: python3" >&2; exit 1; }

RETRY_MS=3000
RS_GW_ARGS="--hello-timeout 30000 --max-frame 2048 --max-unauth-per-source 3 --max-unauth 5 --max-sessions 2 --limit-retry $RETRY_MS"
cluster_up --gateways 1
ep=$(gw_addr 1):$RS_GW_LISTEN_PORT
glog=$(gw_log 1)

# conn.py hold SRC ADDR:PORT N      N connections from SRC, each trickling a
#                                   HELLO that never completes, held until
#                                   killed (prints "ready" once connected)
# conn.py probe SRC ADDR:PORT WAIT  one connection from SRC, says nothing,
#                                   prints closed|reset|open HEX... as raw.sh
cat >"$RS_DIR/conn.py" <<'EOF'
import socket, sys, time
mode, src, ep = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = ep.rsplit(":", 1)
def dial():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect((host, int(port)))
    return s
if mode == "hold":
    # A slow HELLO: one byte per socket every 200 ms, so the gateway's idle
    # timeout (3 heartbeats) never fires and the HELLO (1004 bytes) never
    # completes: only the HELLO deadline would end these.
    hello = b"\x00\x00\x03\xe8\x01\x01" + b"a" * 998
    held = [dial() for _ in range(int(sys.argv[4]))]
    print("ready", flush=True)
    for i in range(len(hello)):
        for h in held:
            h.send(hello[i:i + 1])
        time.sleep(0.2)
    time.sleep(3600)
s = dial()
s.settimeout(float(sys.argv[4]))
data = b""
try:
    while True:
        b = s.recv(4096)
        if not b:
            print("closed", data.hex(" "))
            break
        data += b
except socket.timeout:
    print("open", data.hex(" "))
except ConnectionResetError:
    print("reset", data.hex(" "))
EOF
holders=()
# hold NAME SRC N: starts a holder and waits until its connections are up.
hold_conns() {
	local out="$RS_DIR/hold-$1.out"
	# Not rs_ns (a function: & would fork a subshell): $! is python's pid.
	ip netns exec "$RS_NS" python3 "$RS_DIR/conn.py" hold "$2" "$ep" "$3" >"$out" 2>&1 &
	holders+=("$!")
	await "holder $1: $3 connections from $2" 5 grep -q ready "$out"
}
probe() { rs_ns python3 "$RS_DIR/conn.py" probe "$1" "$ep" "${2:-3}"; }
unauth_is() { metric_is 1 ringsteer_gateway_unauthenticated_connections "$1"; }
rejects() { metric 1 ringsteer_gateway_rejects_total "reason=\"$1\""; }
reject_logs() { log_count "$glog" "event=reject .*reason=$1( |$)"; }

# expect_refusal NAME REASON CODE REPLY C0 L0: REPLY is a close (with a
# REJECT CODE if any bytes came back); the counter and the log grew by one.
expect_refusal() {
	local name=$1 reason=$2 code=$3 reply=$4 c0=$5 l0=$6 words
	echo "$name: reply [$reply]"
	case $reply in
	closed* | reset*) ;;
	*) fail "$name: expected REJECT or a close, got [$reply]" ;;
	esac
	read -ra words <<<"$reply"
	if [ ${#words[@]} -gt 1 ]; then
		[ "$(reply_type "$reply")" = 4 ] || fail "$name: the reply is not a REJECT frame: [$reply]"
		[ "$(reply_reject_code "$reply")" = "$code" ] || fail "$name: REJECT code $(reply_reject_code "$reply"), want $code"
		if [ "$code" = 8 ]; then
			local retry=$((16#${words[9]}${words[10]}${words[11]}${words[12]}))
			[ "$retry" = "$RETRY_MS" ] || fail "$name: retry_after_ms $retry, want $RETRY_MS"
		fi
	fi
	counted() { metric_is 1 ringsteer_gateway_rejects_total $((c0 + 1)) "reason=\"$reason\""; }
	await "$name: rejects_total{reason=\"$reason\"} = $((c0 + 1))" 3 counted
	logged() { [ "$(reject_logs "$reason")" -gt "$l0" ]; }
	await "$name: gw-1 logs event=reject reason=$reason" 3 logged
}

sup_start 1
await "sup-1 attached" 15 all_attached 1
s1_before="$(where 1) $(session 1 epoch) $(session 1 instance_id)"

# --- frame size --------------------------------------------------------------
c0=$(rejects frame_too_large) l0=$(reject_logs frame_too_large) b0=$(rejects bad_frame)
reply=$(raw_send "$ep" "$(hex_u32 3996)0101$(hex_str sup-9)" 3)
expect_refusal "frame over --max-frame" frame_too_large 1 "$reply" "$c0" "$l0"
metric_is 1 ringsteer_gateway_rejects_total "$b0" 'reason="bad_frame"' || fail "the oversized frame was also counted bad_frame"
# Exactly 2048 bytes: a HELLO whose payload is 2042 bytes of 0x61 (its
# member id length 0x6161 runs past the frame: malformed).
body=$(printf '61%.0s' $(seq 1 2042))
c0=$(rejects bad_frame) l0=$(reject_logs bad_frame)
reply=$(raw_send "$ep" "$(hex_u32 2044)0101$body" 3)
expect_refusal "frame of exactly --max-frame" bad_frame 1 "$reply" "$c0" "$l0"

# --- unauthenticated connections per source -----------------------------------
hold_conns a 127.0.0.1 3
await "3 connections waiting for HELLO" 5 unauth_is 3
c0=$(rejects unauth_per_source) l0=$(reject_logs unauth_per_source)
reply=$(probe 127.0.0.1)
expect_refusal "4th from 127.0.0.1" unauth_per_source 8 "$reply" "$c0" "$l0"
sup_start 2
await "sup-2 (another source) attaches while 127.0.0.1 is at its limit" 15 all_attached 1 2
s2_before="$(where 2) $(session 2 epoch) $(session 2 instance_id)"
unauth_is 3 || fail "waiting connections: $(metric 1 ringsteer_gateway_unauthenticated_connections), want 3"

# --- unauthenticated connections in total -------------------------------------
hold_conns b 127.0.3.1 1
hold_conns c 127.0.3.2 1
await "5 connections waiting for HELLO" 5 unauth_is 5
c0=$(rejects unauth_total) l0=$(reject_logs unauth_total)
reply=$(probe 127.0.3.1)
expect_refusal "6th waiting connection (127.0.3.1, at its share)" unauth_total 8 "$reply" "$c0" "$l0"
e0=$(metric 1 ringsteer_gateway_unauth_evictions_total)
reply=$(probe 127.0.3.3 0.3) # shorter than the idle timeout (3 heartbeats)
echo "6th waiting connection (127.0.3.3, a new source): reply [$reply]"
case $reply in open*) ;; *) fail "127.0.3.3 (under its share) was not let in: [$reply]" ;; esac
evicted() { metric_is 1 ringsteer_gateway_unauth_evictions_total $((e0 + 1)); }
await "127.0.3.3's arrival evicted one: unauth_evictions_total = $((e0 + 1))" 3 evicted
kill "${holders[@]}" 2>/dev/null
await "held connections closed: none waiting" 5 unauth_is 0

# --- sessions --------------------------------------------------------------------
c0=$(rejects sessions) l0=$(reject_logs sessions)
sup_start 3
s3log=$(sup_log 3)
refused() { log_has "$s3log" "event=rejected code=8 retry_after_ms=$RETRY_MS "; }
await "sup-3 refused with REJECT LIMIT retry_after_ms=$RETRY_MS" 10 refused
counted() { metric_ge 1 ringsteer_gateway_rejects_total $((c0 + 1)) 'reason="sessions"'; }
await "rejects_total{reason=\"sessions\"} grows" 3 counted
logged() { [ "$(reject_logs sessions)" -gt "$l0" ]; }
await "gw-1 logs event=reject reason=sessions" 3 logged
retried() { log_has "$s3log" "event=retry in_ms="; }
await "sup-3 schedules its retry" 3 retried
in_ms=$(grep -E 'event=retry ' "$s3log" | head -n 1 | logfield in_ms)
[ "$in_ms" -ge "$RETRY_MS" ] || fail "sup-3 retries in $in_ms ms, sooner than the hint $RETRY_MS"
[ "$in_ms" -le $((RETRY_MS * 12 / 10)) ] || fail "sup-3 retries in $in_ms ms: more than the hint + 20% jitter"
echo "sup-3: $(grep -E 'event=rejected' "$s3log" | head -n 1 | sed 's/^ts=[^ ]* //')"
echo "sup-3: $(grep -E 'event=retry ' "$s3log" | head -n 1 | sed 's/^ts=[^ ]* //')"
two_on_gw1() { count_is 1 2 && all_attached 1 2 && ! sup_attached 3; }
# Over one retry: sup-3 dials again no sooner than the hint, is refused
# again, and nothing changes for the attached two (nor does its row stay).
hold "gw-1 keeps exactly sup-1 and sup-2; sup-3 stays out" 4 two_on_gw1
dials=$(grep -E 'event=dialing ' "$s3log" | log_ms | awk '{print $1}')
[ "$(echo "$dials" | wc -l)" -ge 2 ] || fail "sup-3 dialed once only in 4 s: $(cat "$s3log")"
prev=""
for t in $dials; do
	if [ -n "$prev" ] && [ $((t - prev)) -lt "$RETRY_MS" ]; then
		fail "sup-3 dialed again after $((t - prev)) ms, sooner than the hint: $(grep -E 'event=(dialing|rejected|retry) ' "$s3log")"
	fi
	prev=$t
done
echo "sup-3 dial times (ms): ${dials//$'\n'/ }"

now1="$(where 1) $(session 1 epoch) $(session 1 instance_id)"
now2="$(where 2) $(session 2 epoch) $(session 2 instance_id)"
[ "$now1" = "$s1_before" ] || fail "sup-1 touched: before [$s1_before] now [$now1]"
[ "$now2" = "$s2_before" ] || fail "sup-2 touched: before [$s2_before] now [$now2]"

sup_stop 1
# Its backoff has doubled meanwhile (a 4th attempt waits 8 s +-20%): wait that out.
await "sup-3 attaches once there is room" 20 all_attached 2 3
gw_ready 1 || fail "gw-1 not ready after the limits"
echo "t_21: frame size, unauthenticated connections per source and in total, and the session limit refused and counted; attached supervisors untouched"
