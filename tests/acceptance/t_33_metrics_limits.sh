#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 33: the /metrics listener's limits (issue 25, user/util/http.c).
# One gateway, gw-1, its --metrics on 127.0.1.1:9100.  In order:
#   header    a request with a 64 KiB header gets no 200: an error status
#             or a close, well before it would have been served in full
#   slowloris a request line, then one header line every 300 ms, never the
#             blank line that ends the headers: the gateway closes it within
#             the request deadline (RS_HTTP_REQUEST_S, 5 s) plus slack, not
#             when the client gives up (20 s)
#   cap       RS_HTTP_MAX_CONNS + 16 idle connections held open at once: at
#             most RS_HTTP_MAX_CONNS stay established on :9100, and a scrape
#             made meanwhile still answers 200 within 2 s
# After each, /metrics still answers and gw-1 is ready.  A case that fails
# is reported and the next still runs (each hole shows on its own); the test
# fails at the end if any did.
# The helper (python3, inside the namespace) prints one line per case.
. "$(dirname "$0")/../cluster/lib.sh"

command -v python3 >/dev/null || { echo "missing tool: python3" >&2; exit 1; }

MAX_CONNS=32   # RS_HTTP_MAX_CONNS in user/util/http.h
DEADLINE_S=5   # RS_HTTP_REQUEST_S
cluster_up --gateways 1
host=$(gw_addr 1)
port=$RS_GW_METRICS_PORT

cat >"$RS_DIR/http.py" <<'EOF'
import socket, sys, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
def dial():
    return socket.create_connection((host, port), timeout=5)
def read_all(s, wait):
    # Everything until the peer closes or `wait` seconds pass.
    s.settimeout(wait)
    data, how = b"", "open"
    end = time.time() + wait
    try:
        while time.time() < end:
            b = s.recv(65536)
            if not b:
                how = "closed"
                break
            data += b
    except socket.timeout:
        pass
    except (ConnectionResetError, BrokenPipeError):
        how = "reset"
    return how, data
if mode == "big":
    s = dial()
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n"
    try:
        s.sendall(req)
    except (ConnectionResetError, BrokenPipeError):
        print("reset-on-send")
        sys.exit(0)
    how, data = read_all(s, 3)
    line = data.split(b"\r\n", 1)[0].decode("latin-1") if data else ""
    print(how, "[" + line + "]")
elif mode == "slow":
    give_up = float(sys.argv[4])
    s = dial()
    t0 = time.time()
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    s.settimeout(0.3)
    i = 0
    how = "open"
    while time.time() - t0 < give_up:
        try:
            b = s.recv(4096)
            if not b:
                how = "closed"
                break
        except socket.timeout:
            pass
        except ConnectionResetError:
            how = "reset"
            break
        try:
            s.sendall(b"X-Trickle-%d: y\r\n" % i)
        except (ConnectionResetError, BrokenPipeError):
            how = "reset"
            break
        i += 1
    print(how, "after_ms=%d" % int((time.time() - t0) * 1000), "lines=%d" % i)
elif mode == "hold":
    n, secs = int(sys.argv[4]), float(sys.argv[5])
    held = [dial() for _ in range(n)]
    print("ready", flush=True)
    time.sleep(secs)
EOF
hx() { rs_ns python3 "$RS_DIR/http.py" "$@"; }
scrape_ok() { rs_ns curl -fsS --max-time 2 -o /dev/null "http://$host:$port/metrics"; }
established() { rs_ns ss -Htn state established "( sport = :$port )" | wc -l; }
bad=()
miss() { rs_log "CASE FAILED: $*"; bad+=("$*"); }
still_serving() {
	await "gw-1 answers /metrics after $1" 3 scrape_ok
	gw_ready 1 || fail "gw-1 not ready after $1"
}

# --- oversized header ------------------------------------------------------------
out=$(hx big "$host" "$port")
echo "64 KiB header: $out"
case $out in
*"[HTTP/1."?" 200"*) miss "a 64 KiB header was served: $out" ;;
esac
still_serving "the oversized header"

# --- slowloris -------------------------------------------------------------------
out=$(hx slow "$host" "$port" 20)
echo "slowloris: $out"
case $out in
closed* | reset*) ;;
*) miss "a request trickled for 20 s was never closed: $out" ;;
esac
ms=$(echo "$out" | sed -n 's/.*after_ms=\([0-9]*\).*/\1/p')
[ "$ms" -le $(((DEADLINE_S + 2) * 1000)) ] || miss "slowloris closed after $ms ms, past the ${DEADLINE_S} s deadline + 2 s"
still_serving "the slowloris connection"

# --- connection cap --------------------------------------------------------------
n=$((MAX_CONNS + 16))
ip netns exec "$RS_NS" python3 "$RS_DIR/http.py" hold "$host" "$port" "$n" 30 >"$RS_DIR/hold.out" 2>&1 &
holder=$!
await "holder: $n idle connections" 10 grep -q ready "$RS_DIR/hold.out"
capped() { [ "$(established)" -le "$MAX_CONNS" ]; }
deadline=$(($(rs_now_ms) + 3000))
until capped || [ "$(rs_now_ms)" -ge "$deadline" ]; do sleep 0.05; done
capped || miss "$(established) connections established on :$port after 3 s, more than the cap $MAX_CONNS"
echo "cap: $n idle connections held, $(established) established on :$port"
t0=$(rs_now_ms)
scrape_ok || fail "a scrape while $n idle connections are held failed"
echo "cap: a scrape answered in $(($(rs_now_ms) - t0)) ms while they are held"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
still_serving "the idle connections"
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} case(s) failed: $(printf '[%s] ' "${bad[@]}")"
echo "t_33: an oversized header refused, a slowloris request closed by its deadline, idle connections capped while scrapes still answer"
