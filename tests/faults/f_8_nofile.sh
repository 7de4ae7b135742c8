#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 5 of issue 25's matrix, descriptors: a running gateway's soft
# RLIMIT_NOFILE lowered to 64 (prlimit --pid: the hard limit stays, and
# raising the soft one back needs no privilege; a test without
# CAP_SYS_RESOURCE could not raise a hard limit), after it derived its
# --max-sessions from the limit it started with, so that accept itself
# fails with EMFILE (a gateway started under 64 refuses with REJECT LIMIT
# first: t_34 covers that derivation).  Two gateways, 20 supervisors
# attached; then EXTRA more arrive, about half of them gw-1's by the ring.
# Wanted:
#   no spin     gw-1's CPU time (utime + stime, /proc/PID/stat) over 10 s
#               of the pressure stays under 50% of one core
#   counted     the pause logged once per listener (event=accept_paused),
#               none of libevent's own accept warnings, and
#               ringsteer_gateway_accept_errors_total{errno="EMFILE"} > 0 on
#               gw-1 (read after: its /metrics cannot accept either)
#   recovery    the soft limit raised back: gw-1 accepts again (a
#               supervisor of its own attaches) within 2 x TTL; every
#               supervisor is attached, gauges equal to the ledger, within
#               2 x TTL of its next retry (those refused wait their backoff);
#               the 20 untouched
. "$(dirname "$0")/faults_lib.sh"

command -v prlimit >/dev/null || { echo "missing tool: prlimit" >&2; exit 1; }
EXTRA=${EXTRA:-100}
faults_up 2 20
faults_mark
pid=${RS_GW_PID[1]}
glog=$(gw_log 1)
nfds() { ls "/proc/$pid/fd" | wc -l; }
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat"; }
emfile() { metric 1 ringsteer_gateway_accept_errors_total 'errno="EMFILE"'; }
soft0=$(prlimit --pid "$pid" --nofile -o SOFT --noheadings | tr -d ' ')
prlimit --pid "$pid" --nofile=64: || fail "prlimit --pid $pid --nofile=64:"
echo "gw-1 serves $(count_on 1) with $(nfds) descriptors open; soft limit $soft0 -> $(prlimit --pid "$pid" --nofile -o SOFT,HARD --noheadings | xargs)"

last=$((20 + EXTRA))
t_arrive=$(rs_now_ms)
sups_start $(seq 21 "$last")
# Its /metrics cannot accept either while it is out: the log says when.
paused() { log_has "$glog" 'event=accept_paused'; }
await "gw-1 out of descriptors (event=accept_paused)" 20 paused
echo "pressure: gw-1 holds $(nfds) descriptors"

hz=$(getconf CLK_TCK)
t0=$(rs_now_ms) c0=$(cpu_ticks)
sleep 10 # a measurement over a fixed window: there is no condition to await
t1=$(rs_now_ms) c1=$(cpu_ticks)
pct=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v ms=$((t1 - t0)) 'BEGIN { printf "%d", c * 100000 / hz / ms }')
echo "cpu: gw-1 $((c1 - c0)) ticks (CLK_TCK $hz) in $((t1 - t0)) ms: ${pct}% of one core; $(nfds) descriptors; attached meanwhile $(count_attached) of $last"
[ "$pct" -lt 50 ] || fail "gw-1 used ${pct}% of one core for 10 s out of descriptors"
paused=$(log_count "$glog" 'event=accept_paused')
echo "log: $paused accept_paused line(s) (one per listener), $(log_count "$glog" 'Error from accept') of libevent's own"
[ "$paused" -le 3 ] || fail "gw-1 logged $paused accept_paused lines in one episode (listen, peer, metrics: 3 at most)"
log_has "$glog" 'Error from accept' && fail "libevent's accept warnings reached gw-1's log"

press_ms=$(($(rs_now_ms) - t_arrive))
t_raise=$(rs_now_ms)
prlimit --pid "$pid" --nofile="$soft0": || fail "prlimit --pid $pid --nofile=$soft0:"
# A supervisor owned by gw-1 (by the ring over both), arriving now.
probe=$(owned_by gw-1 $((last + 1)) gw-1,gw-2) || fail "no member owned by gw-1"
sups_start "$probe"
faults_recovered_within $((2 * RS_TTL_MS)) "limit raised: gw-1 accepts again (sup-$probe attached to it)" is_on "$probe" 1
FAULTS_N=$probe
e1=$(emfile)
echo "counted: accept_errors_total{errno=\"EMFILE\"} $e1 on gw-1; rejects on gw-1 $(metric 1 ringsteer_gateway_rejects_total), gw-2 $(metric 2 ringsteer_gateway_rejects_total)"
[ "${e1:-0}" -ge 1 ] || fail "accept_errors_total{errno=\"EMFILE\"} is ${e1:-absent} on gw-1"
everyone() { all_attached $(seq 1 "$probe") && gauges_match_ledger; }
# Those not attached when the limit goes back retry on their own backoff
# (1 s doubling, +-20%: include/ringsteer/backoff.h); after P ms of
# pressure the longest wait in force is at most 1.2 x the largest doubling
# not above P, and each is then served within 2 x TTL of its retry (the
# limit counted from the raise).
backoff=1000
while [ $((2 * backoff)) -le "$press_ms" ]; do backoff=$((2 * backoff)); done
faults_recovered_within $((2 * RS_TTL_MS + backoff * 6 / 5 - ($(rs_now_ms) - t_raise))) \
	"limit raised: all $probe attached, gauges = ledger ($(($(rs_now_ms) - t_raise)) ms after the raise; $press_ms ms of pressure: backoff up to $((backoff * 6 / 5)) ms)" everyone
echo "after: gw-1 serves $(count_on 1) with $(nfds) descriptors, gw-2 $(count_on 2); resumed logged $(log_count "$glog" 'event=accept_resumed')"
for m in $(seq 1 20); do
	now="$(where "$m") $(session "$m" epoch)"
	[ "$now" = "${FAULTS_MARK[$m]}" ] || fail "sup-$m moved or lost: before [${FAULTS_MARK[$m]}] now [$now]"
done
faults_check $(seq 21 "$probe")
echo "f_8: out of descriptors, gw-1 paused accepting (${pct}% CPU, $e1 EMFILE counted) and served everyone once its limit was raised"
