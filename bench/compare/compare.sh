#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/compare/compare.sh - `make compare` (issue 18): ringsteer against the
# Service alone, HAProxy 2.6 and nginx stream, in one run.
#
#   evenness.sh BUILD OUT   evenness and stability (OUT/evenness.tsv, OUT/rounds.tsv;
#                           OUT/steering.tsv: ringsteer's redirects and, on the pod
#                           topology, kube-proxy's DNAT per arrival in the storm)
#   datapath.sh OUT         the data path, when present (OUT/datapath.tsv)
#   report.sh OUT           docs/COMPARISON.md and the chart, when present
#
# TSVs: tab-separated, no header; evenness.tsv and datapath.tsv are
# "contender measure value", rounds.tsv is "contender round max_minus_min".
# Contender names: service haproxy-leastconn-1 haproxy-leastconn-2
# haproxy-bounded-1 haproxy-bounded-2 nginx-hash ringsteer-redirect
# ringsteer-kernel (datapath.sh adds direct).  RS_BUILD is exported.
# QUICK=1 (make compare-quick) is passed through: the short form, with
# datapath.sh beside evenness.sh (about 46 s in all on 2 cores).  So is
# SUPS (make compare SUPS="40 400"): evenness.sh's supervisor counts, one
# pass each (default 40; a pass of 400 adds about 45 minutes to the full
# form: 8 contenders one after another, 4 to 6 minutes each at 20 rounds).
# Needs root and `ip netns` (77, skipped, otherwise: tests/skip_status.sh).
#
# usage: bench/compare/compare.sh [BUILD_DIR [OUT_DIR]]  (default build, BUILD/compare)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
out=${2:-$build/compare}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
RS_BUILD=$(cd "$build" && pwd) || exit 1
export RS_BUILD
export QUICK=${QUICK:-0}
t0=$(date +%s)

# The short form only checks that every figure is there, so its data path
# runs beside the evenness passes (its own namespaces) to stay under a
# minute; the full form runs them one after the other, each on an idle
# machine.
dp_pid=""
if [ "$QUICK" = 1 ] && [ -x "$here/datapath.sh" ]; then
	echo "== bench/compare/datapath.sh (QUICK=$QUICK, beside evenness.sh) -> $out"
	"$here/datapath.sh" "$out" >"$out/datapath.log" 2>&1 &
	dp_pid=$!
fi
echo "== bench/compare/evenness.sh (QUICK=$QUICK) -> $out"
"$here/evenness.sh" "$RS_BUILD" "$out"
rc=$?
if [ "$rc" -ne 0 ]; then
	[ -z "$dp_pid" ] || { kill "$dp_pid" 2>/dev/null; wait "$dp_pid"; }
	echo "compare: evenness.sh failed ($rc)" >&2
	exit "$rc"
fi
t1=$(date +%s)
if [ -n "$dp_pid" ]; then
	wait "$dp_pid"
	rc=$?
	cat "$out/datapath.log"
	[ "$rc" -eq 0 ] || { echo "compare: datapath.sh failed ($rc)" >&2; exit "$rc"; }
elif [ -x "$here/datapath.sh" ]; then
	echo "== bench/compare/datapath.sh (QUICK=$QUICK) -> $out"
	"$here/datapath.sh" "$out" || { rc=$?; echo "compare: datapath.sh failed ($rc)" >&2; exit "$rc"; }
else
	echo "== (no bench/compare/datapath.sh: data path figures skipped)"
fi
t2=$(date +%s)
if [ -x "$here/report.sh" ]; then
	echo "== bench/compare/report.sh -> docs/COMPARISON.md"
	"$here/report.sh" "$out" || { rc=$?; echo "compare: report.sh failed ($rc)" >&2; exit "$rc"; }
else
	echo "== (no bench/compare/report.sh: no report written)"
fi
if [ -n "$dp_pid" ]; then
	echo "compare: evenness $((t1 - t0)) s, the data path beside it, $((t2 - t0)) s in all; results in $out"
else
	echo "compare: evenness $((t1 - t0)) s, data path $((t2 - t1)) s; results in $out"
fi
