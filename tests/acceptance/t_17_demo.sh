#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo (`make demo`, demo/demo.sh) end to end, shortened to 6
# supervisors, with the node agent and without it (AGENT=0): every step
# settles, each prints its chart and finds every gateway's gauges equal to
# it, the verdict line says even, and the demo
# leaves nothing behind (namespace, temp dir, BPF pins).  With the agent,
# connect-time steering took every Service connect (kube-proxy's DNAT none).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${RS_BUILD:-build}
[ "$(id -u)" -eq 0 ] || { echo "skip: not root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "skip: ip netns unavailable"; exit 77; }

fails=0
check() { # DESC CMD...
	if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

for agent in 1 0; do
	out=$(mktemp)
	tmp=$(mktemp -d)
	prefix="${RS_NS_PREFIX:-rs-$$}-demo$agent"
	pins_before=$(ls /sys/fs/bpf/ringsteer /sys/fs/bpf 2>/dev/null | sort)
	AGENT=$agent DEMO_SUPERVISORS=6 RS_NS_PREFIX=$prefix TMPDIR=$tmp \
		timeout -k 5 150 "$here/../../demo/demo.sh" "$build" >"$out" 2>&1
	rc=$?
	echo "---- demo AGENT=$agent: exit $rc"
	cat "$out"
	echo "----"
	check "AGENT=$agent: exit status 0" [ "$rc" -eq 0 ]
	check "AGENT=$agent: five steps" [ "$(grep -c '^== [1-5]\. ' "$out")" -eq 5 ]
	check "AGENT=$agent: a chart after each step" [ "$(grep -c 'verdict=' "$out")" -ge 5 ]
	check "AGENT=$agent: gauges equal the chart after each step" [ "$(grep -c '^checked: .*gauges equal' "$out")" -eq 5 ]
	check "AGENT=$agent: last line is an even verdict" \
		grep -qE '^verdict: even \(max - min = [01] over 2 gateways, 6 supervisors' <(tail -n 1 "$out")
	check "AGENT=$agent: a token refresh moved nobody" grep -q '^moved: 0 ' "$out"
	if [ "$agent" = 1 ] && ! grep -q 'cannot steer here' "$out"; then
		check "AGENT=1: the kernel steered connects" grep -qE '^kernel: +connects to the Service steered_netns=[1-9]' "$out"
		check "AGENT=1: kube-proxy's DNAT took none" grep -qE "^service: +connects kube-proxy's DNAT took: 0 " "$out"
	fi
	check "AGENT=$agent: no namespace left" [ -z "$(ip netns list | grep "^$prefix-")" ]
	check "AGENT=$agent: no temp dir left" [ -z "$(ls -A "$tmp")" ]
	check "AGENT=$agent: no BPF pins left" [ "$(ls /sys/fs/bpf/ringsteer /sys/fs/bpf 2>/dev/null | sort)" = "$pins_before" ]
	rm -rf "$out" "$tmp"
done
[ "$fails" -eq 0 ] || exit 1
echo "t_17: the demo ended even with and without the agent, and cleaned up"
