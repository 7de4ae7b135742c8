#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/service_only.sh - how often the Service alone leaves a pair uneven.
#
# Acceptance scenario 1 (two gateways, two supervisors, restart both, R rounds)
# run twice in a test cluster (tests/cluster/lib.sh): first with the gateways'
# placement switched off (--no-placement: everyone is accepted where the
# Service's random DNAT delivers, which is what a plain Kubernetes Service
# does), then with ringsteer's placement.  A round is uneven when both
# supervisors end on one gateway.  Prints, last:
#   service alone: U/R rounds uneven (P%), ringsteer: U/R rounds uneven (P%)
# Needs root and `ip netns` (exit 77 otherwise).
#
# usage: bench/service_only.sh [BUILD_DIR [ROUNDS]]   (default build, 50)
set -u
RS_BUILD=${1:-build}
rounds=${2:-50}
# shellcheck source=../tests/cluster/lib.sh
. "$(dirname "$0")/../tests/cluster/lib.sh"

# run_rounds LABEL: prints the number of uneven rounds (stdout), one line
# per round on stderr.
run_rounds() {
	local label=$1 uneven=0 r a b
	cluster_up --gateways 2
	sups_start 1 2
	await "$label: both supervisors attached" 15 all_attached 1 2
	for r in $(seq 1 "$rounds"); do
		sups_stop 1 2
		sups_start 1 2
		await "$label round $r: both supervisors attached" 15 all_attached 1 2
		a=$(where 1) b=$(where 2)
		[ "$a" = "$b" ] && uneven=$((uneven + 1))
		printf '%s round %d: sup-1 %s, sup-2 %s%s\n' "$label" "$r" "$a" "$b" \
			"$([ "$a" = "$b" ] && echo '  (uneven)')" >&2
	done
	cluster_down
	echo "$uneven"
}

pct() { awk -v u="$1" -v n="$2" 'BEGIN { printf "%.0f", 100 * u / n }'; }

RS_GW_ARGS="--no-placement"
svc=$(run_rounds "service alone") || exit $?
RS_GW_ARGS=""
rs=$(run_rounds "ringsteer") || exit $?
echo "service alone: $svc/$rounds rounds uneven ($(pct "$svc" "$rounds")%), ringsteer: $rs/$rounds rounds uneven ($(pct "$rs" "$rounds")%)"
