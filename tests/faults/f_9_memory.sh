#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 5 of issue 25's matrix, memory: a gateway under a memory limit.
# The memory controller is on cgroup v1 on this machine (v2's memory.max
# where the v2 hierarchy has it; here memory.limit_in_bytes), so gw-1 starts
# inside a child cgroup of a v1 memory hierarchy (the mounted one, or one
# this test mounts and unmounts), under the test's own cgroup.  Two
# gateways, 20 supervisors attached; then the limit is set MARGIN_KIB above
# what gw-1's cgroup uses (memsw too: no swap escape), and EXTRA more
# supervisors arrive at once, about half of them gw-1's by the ring.
# Wanted: no spin (gw-1 under 50% of one core over 10 s of the pressure,
# /proc/PID/stat), what the kernel did counted (memory.failcnt: allocations
# that hit the limit and reclaimed; oom_kill in memory.oom_control), and
# full service once the limit is lifted: every supervisor attached, gauges
# = ledger, the 20 untouched.  The gateway has no memory-pressure refusal of
# its own (malloc does not fail under a cgroup limit: the kernel reclaims,
# or kills), so if the kernel OOM-kills gw-1, that is printed, and the case
# checks instead that gw-2 takes its supervisors over within 2 x TTL plus
# their reconnect backoff.
. "$(dirname "$0")/faults_lib.sh"

EXTRA=${EXTRA:-100}
MARGIN_KIB=${MARGIN_KIB:-0}
mem_root=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)
mem_mounted=""
if [ -z "$mem_root" ]; then
	mem_mounted=$(mktemp -d "${TMPDIR:-/tmp}/memcg.XXXXXX")
	mount -t cgroup -o memory none "$mem_mounted" || { rmdir "$mem_mounted"; echo "skip: no cgroup v1 memory controller" >&2; exit 77; }
	mem_root=$mem_mounted
fi
# Under the test's own cgroup where the mount shows it (its limits apply on
# top), else under the hierarchy's root.
own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
base=$mem_root
[ -n "$own" ] && [ -d "$mem_root$own" ] && base=$mem_root$own
cg="$base/rs-f9-$$"
mkdir "$cg" || fail "mkdir $cg"
rs_down_hook() {
	# Its processes are killed after this hook: lift the limit so that none
	# is stuck reclaiming, and remove the directory once they are gone.
	echo -1 >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
	echo -1 >"$cg/memory.limit_in_bytes" 2>/dev/null
	local p
	for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	for _ in $(seq 1 100); do [ -z "$(cat "$cg/cgroup.procs" 2>/dev/null)" ] && break; sleep 0.05; done
	rmdir "$cg" 2>/dev/null
	if [ -n "$mem_mounted" ]; then umount "$mem_mounted" && rmdir "$mem_mounted"; fi
}
gw_exec() {
	local n=$1
	shift
	[ "$n" = 1 ] && echo "$BASHPID" >"$cg/cgroup.procs"
	exec ip netns exec "$(gw_ns "$n")" "$@"
}
cgv() { cat "$cg/memory.$1"; }
kib() { echo $(($(cgv "$1") / 1024)); }
oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control"; }

faults_up 2 20
faults_mark
pid=${RS_GW_PID[1]}
glog=$(gw_log 1)
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat"; }
grep -qx "$pid" "$cg/cgroup.procs" || fail "gw-1 (pid $pid) is not in $cg"
use0=$(kib usage_in_bytes)
stat_kib() { awk -v k="$1" '$1 == k { print int($2 / 1024) }' "$cg/memory.stat"; }
anon0=$(stat_kib rss) cache0=$(stat_kib cache)
# What its cgroup holds now (anonymous memory, kernel memory, and the page
# cache of the store's file) plus MARGIN_KIB: every byte the burst needs
# beyond the margin has to come from reclaiming that cache.  (Its RSS is
# larger: the shared libraries' pages are charged to the cgroup that first
# touched them.)  With a limit just above the anonymous memory alone
# (MARGIN_KIB=-600 here) the kernel OOM-kills it instead.
limit=$(((use0 + MARGIN_KIB) * 1024))
echo "$limit" >"$cg/memory.limit_in_bytes" || fail "memory.limit_in_bytes"
echo "$limit" >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true # absent without swap accounting
fc0=$(cgv failcnt)
echo "gw-1 serves $(count_on 1): RSS $(rss_kib) KiB (shared pages charged elsewhere), cgroup uses $use0 KiB (anon $anon0, cache $cache0); limit set to $((limit / 1024)) KiB ($cg)"

t_arrive=$(rs_now_ms)
last=$((20 + EXTRA))
sups_start $(seq 21 "$last")
hz=$(getconf CLK_TCK)
t0=$(rs_now_ms) c0=$(cpu_ticks 2>/dev/null) # empty if the kernel killed it already
sleep 10 # a measurement over a fixed window: there is no condition to await
t1=$(rs_now_ms)
if [ -n "$c0" ] && gw_alive 1 && c1=$(cpu_ticks 2>/dev/null) && [ -n "$c1" ]; then
	pct=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v ms=$((t1 - t0)) 'BEGIN { printf "%d", c * 100000 / hz / ms }')
	echo "cpu: gw-1 $((c1 - c0)) ticks (CLK_TCK $hz) in $((t1 - t0)) ms: ${pct}% of one core"
	[ "$pct" -lt 50 ] || fail "gw-1 used ${pct}% of one core for 10 s under its memory limit"
fi
echo "pressure: cgroup uses $(kib usage_in_bytes) KiB (max $(kib max_usage_in_bytes)) of $((limit / 1024)) KiB; failcnt $(($(cgv failcnt) - fc0)); oom_kill $(oom_kills); gw-1 RSS $(rss_kib 2>/dev/null || echo -) KiB; attached $(count_attached) of $last"
echo "memory.stat: anon $(stat_kib rss) KiB (was $anon0), cache $(stat_kib cache) KiB (was $cache0)"

press_ms=$(($(rs_now_ms) - t_arrive))
backoff=1000
while [ $((2 * backoff)) -le "$press_ms" ]; do backoff=$((2 * backoff)); done
if gw_alive 1; then
	echo -1 >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
	echo -1 >"$cg/memory.limit_in_bytes" || fail "lifting memory.limit_in_bytes"
	t_lift=$(rs_now_ms)
	everyone() { all_attached $(seq 1 "$last") && gauges_match_ledger; }
	FAULTS_N=$last
	faults_recovered_within $((2 * RS_TTL_MS + backoff * 6 / 5)) \
		"limit lifted: all $last attached, gauges = ledger ($press_ms ms of pressure: backoff up to $((backoff * 6 / 5)) ms)" everyone
	echo "after: gw-1 serves $(count_on 1) (RSS $(rss_kib) KiB), gw-2 $(count_on 2); $(($(rs_now_ms) - t_lift)) ms after the lift"
	for m in $(seq 1 20); do
		now="$(where "$m") $(session "$m" epoch)"
		[ "$now" = "${FAULTS_MARK[$m]}" ] || fail "sup-$m moved or lost: before [${FAULTS_MARK[$m]}] now [$now]"
	done
	faults_check $(seq 21 "$last")
	echo "f_9: gw-1 under a memory limit $MARGIN_KIB KiB above its use: survived (${pct}% CPU, failcnt $(($(cgv failcnt) - fc0)), oom_kill $(oom_kills)), served everyone once lifted"
else
	echo "gw-1 was OOM-killed (oom_kill $(oom_kills)): its log ends $(tail -n 1 "$glog")"
	RS_GW_PID[1]="" # by the kernel, as this case allows: not "exited by itself"
	svc_update
	FAULTS_N=$last
	everyone() { all_attached $(seq 1 "$last") && gauges_match_ledger; }
	faults_recovered_within $((2 * RS_TTL_MS + backoff * 6 / 5)) "gw-1 killed: all $last attached to gw-2, gauges = ledger" everyone
	faults_check $(seq 1 "$last")
	echo "f_9: gw-1 OOM-killed under its memory limit; gw-2 took its supervisors over"
fi
