#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/core_before_after.sh - the gateway core's before/after: the same two
# figures on a base revision and on this working tree, measured in one run.
#
# Why: a figure only says whether a change (here the rewrite of
# user/gateway/ over user/gwcore/) made things faster or slower when its
# baseline is measured on the same machine, under the same load, at the same
# time.  Figures from another day, or another machine, are not comparable on
# a shared 2-core host, whose speed drifts with whatever else runs on it; so
# both sides run here, alternated, and the ratio is what to read.
#
# Figures (the median of each side's runs, and new/base):
#   placement_ns   the cost of one placement decision at G = 10000: the
#                  "decide" figure of build/bench/bench_placement, the one its
#                  "goal: <= 1 us per placement decision at G = 10000" line
#                  prints in `make bench`; run as `bench_placement 10000` (that
#                  size alone, the same measurement)
#   storm_N_s      bench/scale.sh's storm: seconds from starting a swarm of N
#                  supervisors (RS_BENCH_STORM, default 10000) until each of
#                  the 4 gateways holds N/4 (its "storm: ms until N/4 on each
#                  gateway" row), plaintext on the SQLite store:
#                  SCALE_CONFIGS=plain-sqlite SCALE_STORM_ONLY=1 bench/scale.sh
#
# The base (RS_BENCH_BASE, default 9d34afb) is checked out in a git worktree,
# build/bench-base/<rev> (git worktree add --detach; reused when present),
# and built there into its own build/ with the Makefile's default flags.  The
# new side is BUILD_DIR (default build/), the working tree's build: it is not
# built here (`make bench` builds it first; otherwise `make all
# build/bench/bench_placement`); a warning says when make finds it out of
# date.  Both sides are driven by this tree's bench/scale.sh and
# tests/cluster/lib.sh, so only the binaries differ (the base's gateway must
# take this tree's flags).
#
# Each round runs base then new (both figures each), RS_BENCH_ROUNDS rounds
# (default 3): base, new, base, new..., so a drift in the machine's load falls
# on both sides alike.  A measurement, not an assertion: exits 0 whatever the
# figures, non-zero only when a build or a run fails (77, from scale.sh: not
# root, or no `ip netns`).  Needs root.  Each side's storm run is a whole
# cluster, up, settled and down (14 s at N = 2000 on 2 cores, more at
# 10000), its placement run a few seconds; the first run also builds the
# base.  The runs' outputs are kept in a temporary directory when one fails.
#
# usage: [RS_BENCH_BASE=9d34afb] [RS_BENCH_ROUNDS=3] [RS_BENCH_STORM=10000]
#        bench/core_before_after.sh [BUILD_DIR]   (default build)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
NEW_BUILD=$(realpath -m "${1:-$ROOT/build}")
BASE=${RS_BENCH_BASE:-9d34afb}
ROUNDS=${RS_BENCH_ROUNDS:-3}
STORM_N=${RS_BENCH_STORM:-10000}
PLACEMENT_G=10000
# What each side needs: the storm's gateway and swarm, ringsteerctl (the
# cluster's state dump when something fails), the placement benchmark.
TARGETS=(ringsteer-gateway ringsteer-swarm ringsteerctl bench/bench_placement)

log() { printf '%s core_before_after: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

case $ROUNDS in '' | *[!0-9]* | 0) die "RS_BENCH_ROUNDS must be a positive integer (got '$ROUNDS')" ;; esac
case $STORM_N in '' | *[!0-9]*) die "RS_BENCH_STORM must be a multiple of 4 (got '$STORM_N')" ;; esac
if [ $((STORM_N % 4)) != 0 ] || [ "$STORM_N" -lt 4 ]; then die "RS_BENCH_STORM must be a multiple of 4 (got $STORM_N)"; fi

LOGS=$(mktemp -d "${TMPDIR:-/tmp}/rs-before-after.XXXXXX")
on_exit() {
	local rc=$?
	if [ "$rc" = 0 ]; then rm -rf "$LOGS"; else log "exit $rc; the runs' outputs are in $LOGS"; fi
}
trap on_exit EXIT

# A make of its own: not the caller's (`make bench`) jobserver, SAN or BUILD.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES make "$@"; }

# --- the base: a worktree and its build -------------------------------------------

REV=$(git -C "$ROOT" rev-parse --verify --quiet "$BASE^{commit}") || die "RS_BENCH_BASE=$BASE: no such revision"
SHORT=$(git -C "$ROOT" rev-parse --short "$REV")
WT=$ROOT/build/bench-base/$SHORT
if [ -d "$WT" ] && [ "$(git -C "$WT" rev-parse --show-toplevel 2>/dev/null)" = "$WT" ]; then
	[ "$(git -C "$WT" rev-parse HEAD)" = "$REV" ] || git -C "$WT" checkout -q --detach "$REV"
	log "base $SHORT: reusing the worktree $WT"
else
	git -C "$ROOT" worktree prune
	mkdir -p "$ROOT/build/bench-base"
	git -C "$ROOT" worktree add -q --detach "$WT" "$REV"
	log "base $SHORT: worktree $WT added"
fi
BASE_BUILD=$WT/build
log "base $SHORT: make ${TARGETS[*]} (log: $LOGS/base-make.log)"
mk -C "$WT" -j2 BUILD="$BASE_BUILD" "${TARGETS[@]/#/$BASE_BUILD/}" >"$LOGS/base-make.log" 2>&1 ||
	{ tail -n 30 "$LOGS/base-make.log" >&2; die "base $SHORT: the build failed"; }

# --- the new side: the working tree's build, as it is --------------------------------

for t in "${TARGETS[@]}"; do
	[ -x "$NEW_BUILD/$t" ] || die "missing $NEW_BUILD/$t: build first (make all $NEW_BUILD/bench/bench_placement)"
done
mk -q -C "$ROOT" BUILD="$NEW_BUILD" "${TARGETS[@]/#/$NEW_BUILD/}" >/dev/null 2>&1 ||
	log "warning: make says $NEW_BUILD is out of date with the working tree (measured as it is)"
NEW_DESC="working tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || echo '+changes')"

# --- one measurement each --------------------------------------------------------------

# placement BUILD SIDE ROUND: ns per decision at G = 10000.  An older
# bench_placement without the one-size mode runs whole: its goal line then.
placement() {
	local out="$LOGS/placement.$2.$3.log" v
	"$1/bench/bench_placement" "$PLACEMENT_G" >"$out" 2>&1 ||
		{ tail -n 20 "$out" >&2; log "$2: bench_placement failed"; return 1; }
	v=$(sed -n "s/^G=$PLACEMENT_G .* decide \([0-9.]*\) ns.*/\1/p" "$out" | head -n 1)
	[ -n "$v" ] || v=$(sed -n "s/^goal: <= 1 us per placement decision at G = $PLACEMENT_G: .* (\([0-9.]*\) ns)\$/\1/p" "$out")
	[ -n "$v" ] || { tail -n 20 "$out" >&2; log "$2: no decide figure in bench_placement's output"; return 1; }
	echo "$v"
}

# storm BUILD SIDE ROUND: seconds until N/4 on each of the 4 gateways.
storm() {
	local out="$LOGS/storm.$2.$3.log" rc=0 ms
	SCALE_CONFIGS=plain-sqlite SCALE_N=$STORM_N SCALE_STORM_ONLY=1 "$ROOT/bench/scale.sh" "$1" >"$out" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		tail -n 30 "$out" >&2
		log "$2: bench/scale.sh exited $rc"
		return "$rc"
	fi
	if grep -q '== plain-sqlite: FAILED' "$out"; then
		tail -n 40 "$out" >&2
		log "$2: bench/scale.sh's configuration failed"
		return 1
	fi
	ms=$(awk '/^storm: ms until N\/4 on each gateway / { print $NF }' "$out")
	case $ms in '' | *[!0-9]*) tail -n 30 "$out" >&2; log "$2: no storm figure (got '$ms')"; return 1 ;; esac
	awk -v ms="$ms" 'BEGIN { printf "%.3f\n", ms / 1000 }'
}

# --- the rounds ----------------------------------------------------------------------

log "base $SHORT ($BASE_BUILD) vs $NEW_DESC ($NEW_BUILD): $ROUNDS round(s), placement at G = $PLACEMENT_G, storm of $STORM_N"
for ((r = 1; r <= ROUNDS; r++)); do
	for side in base new; do
		if [ "$side" = base ]; then b=$BASE_BUILD; else b=$NEW_BUILD; fi
		p=$(placement "$b" "$side" "$r")
		echo "$p" >>"$LOGS/placement.$side"
		s=$(storm "$b" "$side" "$r")
		echo "$s" >>"$LOGS/storm.$side"
		log "round $r/$ROUNDS $side: placement $p ns, storm $s s"
	done
done

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
figure() { # NAME FORMAT FILE_PREFIX
	awk -v name="$1" -v fmt="$2" -v b="$(median "$3.base")" -v n="$(median "$3.new")" \
		'BEGIN { printf "%s base=" fmt " new=" fmt " ratio=%.3f\n", name, b, n, (b > 0 ? n / b : 0) }'
}
figure placement_ns %.0f "$LOGS/placement"
figure "storm_${STORM_N}_s" %.3f "$LOGS/storm"
