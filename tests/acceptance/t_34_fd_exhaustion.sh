#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 34: out of descriptors (issue 25, hole "fd exhaustion").
# gw-1 runs under `prlimit --nofile=64:64`, so it cannot raise its limit,
# with unauthenticated limits above it (--max-unauth 1000
# --max-unauth-per-source 1000) and a long HELLO deadline, so that 150
# silent connections from one holder exhaust its descriptors (accept fails
# with EMFILE while the rest wait in the backlog).  Then:
#   cpu       over 5 s its CPU time (utime + stime, /proc/PID/stat) stays
#             under 50% of one core (a listener with no error callback spins
#             at 100% on a readable socket whose accept keeps failing)
#   log       its log has at most 2 lines about accepting (one when the
#             pause starts, one when it ends) and none from libevent's
#             own "Error from accept()" (which it writes on every failure)
#   recovery  the holder closes them; a supervisor then attaches, /metrics
#             answers, and ringsteer_gateway_accept_errors_total
#             {errno="EMFILE"} counted the failures
#   start     its started line says the limit it runs with (nofile=64) and
#             the --max-sessions derived from it (the flag is not given)
. "$(dirname "$0")/../cluster/lib.sh"

command -v python3 >/dev/null || { echo "missing tool: python3" >&2; exit 1; }
command -v prlimit >/dev/null || { echo "missing tool: prlimit" >&2; exit 1; }

HOLD=150
RS_GW_ARGS="--hello-timeout 60000 --max-unauth 1000 --max-unauth-per-source 1000"
# gw-N under a descriptor limit it cannot raise (prlimit execs the daemon,
# so $! stays its pid).
gw_exec() { local n=$1; shift; exec ip netns exec "$(gw_ns "$n")" prlimit --nofile=64:64 "$@"; }
cluster_up --gateways 1
ep=$(gw_addr 1):$RS_GW_LISTEN_PORT
glog=$(gw_log 1)
pid=${RS_GW_PID[1]}

cat >"$RS_DIR/hold.py" <<'EOF'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, secs = int(sys.argv[2]), float(sys.argv[3])
held = []
for _ in range(n):
    s = socket.socket()
    s.settimeout(5)
    s.connect((host, int(port)))  # completes in the backlog once accept fails
    held.append(s)
print("ready", flush=True)
# A HELLO one byte per socket every 200 ms, never complete: the idle timeout
# (3 heartbeats) never fires and only the HELLO deadline (60 s) would end
# them.  Bytes to a socket still in the backlog wait in its buffer.
hello = b"\x00\x00\x03\xe8\x01\x01" + b"a" * 998
end = time.time() + secs
i = 0
while time.time() < end and i < len(hello):
    for s in held:
        try:
            s.send(hello[i:i + 1])
        except OSError:
            pass
    i += 1
    time.sleep(0.2)
time.sleep(max(0, end - time.time()))
EOF
bad=()
miss() { rs_log "CASE FAILED: $*"; bad+=("$*"); }
ACCEPT_RE='event=accept_|Error from accept|Too many open files'
accept_lines() { grep -cE "$ACCEPT_RE" "$glog" || true; }
nfds() { ls "/proc/$pid/fd" | wc -l; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }

started=$(grep -E 'event=started' "$glog" | head -n 1)
echo "start: $(echo "$started" | grep -oE 'nofile=[^ ]* max_sessions=[^ ]*')"
lines0=$(accept_lines)
ip netns exec "$RS_NS" python3 "$RS_DIR/hold.py" "$ep" "$HOLD" 120 >"$RS_DIR/hold.out" 2>&1 &
holder=$!
await "holder: $HOLD connections made" 15 grep -q ready "$RS_DIR/hold.out"
full() { [ "$(nfds)" -ge 64 ]; }
await "gw-1 holds all 64 descriptors" 5 full
echo "gw-1 holds $(nfds) descriptors"

# --- cpu --------------------------------------------------------------------------
hz=$(getconf CLK_TCK)
t0=$(rs_now_ms) c0=$(cpu_ticks)
sleep 5 # a measurement over a fixed window: there is no condition to await
t1=$(rs_now_ms) c1=$(cpu_ticks)
pct=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v ms=$((t1 - t0)) 'BEGIN { printf "%d", c * 100000 / hz / ms }')
echo "cpu: $((c1 - c0)) ticks (CLK_TCK $hz) in $((t1 - t0)) ms: ${pct}% of one core"
[ "$pct" -lt 50 ] || miss "gw-1 used ${pct}% of one core for 5 s out of descriptors"

# --- log ---------------------------------------------------------------------------
n=$(($(accept_lines) - lines0))
echo "log: $n lines about accepting; $(wc -l <"$glog") lines in all"
grep -E "$ACCEPT_RE" "$glog" | head -n 3 | sed 's/^/  /'
[ "$n" -le 2 ] || miss "gw-1 logged $n lines about accepting in one episode"
grep -q 'Error from accept' "$glog" && miss "libevent's own accept warnings reached the log ($(grep -c 'Error from accept' "$glog"))"

# --- recovery -----------------------------------------------------------------------
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
sup_start 1
await "sup-1 attaches once the descriptors are back" 20 all_attached 1
scrape() { rs_ns curl -fsS --max-time 2 "http://$(gw_addr 1):$RS_GW_METRICS_PORT/metrics" >/dev/null; }
await "gw-1 answers /metrics" 5 scrape
errs=$(metric 1 ringsteer_gateway_accept_errors_total 'errno="EMFILE"')
echo "recovery: sup-1 attached; accept_errors_total{errno=\"EMFILE\"} = ${errs:-absent}"
[ "${errs:-0}" -ge 1 ] 2>/dev/null || miss "accept_errors_total{errno=\"EMFILE\"} is ${errs:-absent}, want >= 1"
resumed() { grep -q 'event=accept_resumed' "$glog"; }
await "gw-1 logs the end of the episode" 5 resumed
grep -E 'event=accept_(paused|resumed)' "$glog" | sed 's/^ts=[^ ]* //; s/^/  /'
n=$(($(accept_lines) - lines0))
[ "$n" -le 2 ] || miss "gw-1 logged $n lines about accepting in one episode, its end included"

# --- start ---------------------------------------------------------------------------
case $started in
*" nofile=64 "*) ;;
*) miss "the started line does not say nofile=64: $started" ;;
esac
case $started in
*" max_sessions="[1-9]*) ;;
*) miss "the started line has no max_sessions derived from the limit: $started" ;;
esac

[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} case(s) failed: $(printf '[%s] ' "${bad[@]}")"
echo "t_34: out of descriptors, gw-1 paused accepting (${pct}% CPU, $n log lines, $errs EMFILE counted), then served again"
