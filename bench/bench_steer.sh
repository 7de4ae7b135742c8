#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/bench_steer.sh - the cost of kernel steering, in a private netns:
# one gateway socket (kt_tool serve, registered with ringsteer-agent) and,
# in the same run with interleaved rounds, connections to the Service
# address (steered by sk_lookup to that socket) against connections straight
# to the socket's own address.  Reports ns per sk_lookup run from
# BPF_STATS_RUN_TIME (bpf_enable_stats) for steered lookups and for the
# early exit on other addresses, connections per second each way, and
# their ratio (goal >= 0.95).
#
# usage: bench/bench_steer.sh BUILD_DIR [SECONDS]   (default 10; root)
set -u
build=$(cd "${1:?usage: $0 BUILD_DIR [SECONDS]}" && pwd)
secs=${2:-10}
if [ "$(id -u)" != 0 ]; then
	echo "bench_steer: skipped (not root)"
	exit 0
fi
ns="rs-bench-$$"
dir=$(mktemp -d)
agent="" gw="" ino=""
cleanup() {
	[ -n "$gw" ] && kill -KILL "$gw" 2>/dev/null
	[ -n "$agent" ] && kill -KILL "$agent" 2>/dev/null
	# disowned (no "Killed" notices): wait for them by polling
	for _ in $(seq 50); do kill -0 $gw $agent 2>/dev/null || break; sleep 0.02; done
	[ -n "$ino" ] && rm -rf "/sys/fs/bpf/ringsteer/$ino"
	ip netns del "$ns" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns" && ip -n "$ns" link set lo up || exit 1
in_ns() { nsenter --net="/run/netns/$ns" "$@"; }
ino=$(in_ns stat -L -c %i /proc/self/ns/net)

nsenter --net="/run/netns/$ns" "$build/ringsteer-agent" --service 127.0.0.100:7000 \
	--no-connect --socket "$dir/agent.sock" 2>"$dir/agent.log" &
agent=$!
disown
for _ in $(seq 100); do grep -q event=ready "$dir/agent.log" && break; sleep 0.05; done
nsenter --net="/run/netns/$ns" "$build/kernel/kt_tool" serve "$dir/agent.sock" gw-a=127.0.1.1:7000 \
	>"$dir/gw.out" 2>"$dir/gw.log" &
gw=$!
disown
for _ in $(seq 100); do grep -q ready "$dir/gw.out" && break; sleep 0.05; done
if [ "$(in_ns "$build/kernel/kt_tool" dial 127.0.2.1 127.0.0.100:7000)" != gw-a ]; then
	echo "bench_steer: the Service is not steered"; cat "$dir/agent.log" "$dir/gw.log"; exit 1
fi
out=$(in_ns "$build/kernel/kt_tool" bench 127.0.0.100:7000 127.0.1.1:7000 "$secs" \
	"/sys/fs/bpf/ringsteer/$ino/link_steer") || { echo "$out"; exit 1; }
get() { awk -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
printf '%-44s %s\n' "sk_lookup ns/run, steered (BPF_STATS_RUN_TIME)" "$(get sk_lookup_ns_per_run_steered)"
printf '%-44s %s\n' "sk_lookup ns/run, not a Service (early exit)" "$(get sk_lookup_ns_per_run_other)"
printf '%-44s %s\n' "connections/s to the Service (steered)" "$(get steered_cps)"
printf '%-44s %s\n' "connections/s to the gateway socket" "$(get direct_cps)"
printf '%-44s %s (goal >= 0.95)\n' "ratio steered / direct" "$(get ratio)"
