#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/acceptance/run.sh - the acceptance tests of the placement path, each in
# its own test cluster (tests/cluster/lib.sh), with the binaries of BUILD_DIR.
#
# usage: tests/acceptance/run.sh BUILD_DIR [NAME...]
#   NAME: run only the tests whose file name contains NAME (e.g. t_3).
#
# Prints one line per test (ok / FAIL / skip), a failing test's output, and
# last the line `acceptance: N passed, N failed`.  Exit status 1 on any
# failure.  A test exits 77 to be skipped, which it does only when not root
# or when `ip netns` is unavailable; with CI=true in the environment a skip
# counts as a failure (CI runs as root with ip netns, where nothing may skip).
# Every test's output, logs and store are
# kept in BUILD_DIR/acceptance/NAME/.  RS_TEST_TIMEOUT bounds one test (s).
# RS_ACCEPT_TAG names a second pass of the same tests (e.g. `pg`, against
# PostgreSQL: RS_PG_DIR set): its lines say [TAG], its files go to
# BUILD_DIR/acceptance-TAG/.
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR [NAME...]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
tag=${RS_ACCEPT_TAG:-}
out_root="$build/acceptance${tag:+-$tag}"
label=${tag:+ [$tag]}
mkdir -p "$out_root"

# The fault matrix (tests/faults/, `make faults`) runs through this runner
# too: RS_TEST_DIR names its directory, RS_TEST_PREFIX its files' prefix.
here=${RS_TEST_DIR:-$here}
pass=0 failed=0 skipped=0
for t in "$here"/"${RS_TEST_PREFIX:-t_}"*.sh; do
	name=$(basename "$t" .sh)
	if [ $# -gt 0 ]; then
		want=0
		for n in "$@"; do case $name in *"$n"*) want=1 ;; esac; done
		[ $want = 1 ] || continue
	fi
	dir="$out_root/$name"
	rm -rf "$dir" && mkdir -p "$dir"
	start=$(date +%s%N)
	prefix="rs-$$-${tag:+$tag-}$name"
	mkdir -p "$dir/tmp"
	RS_BUILD="$build" RS_ARTIFACTS="$dir" RS_NS_PREFIX="$prefix" TMPDIR="$dir/tmp" \
		timeout -k 5 "${RS_TEST_TIMEOUT:-300}" bash "$t" >"$dir/output" 2>&1 </dev/null
	rc=$?
	# A test killed outright cannot clean up: remove what it left in its own
	# namespaces (their processes, then the namespaces) and its temp dir.
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
		echo "(run.sh removed the namespace $ns the test left)" >>"$dir/output"
	done
	rm -rf "$dir/tmp"
	secs=$(awk -v s="$start" -v e="$(date +%s%N)" 'BEGIN { printf "%.1f", (e - s) / 1e9 }')
	case $rc in
	0)
		pass=$((pass + 1))
		echo "ok   $name$label (${secs}s)"
		;;
	77)
		skipped=$((skipped + 1))
		echo "skip $name$label: $(tail -n 1 "$dir/output")"
		;;
	*)
		failed=$((failed + 1))
		[ $rc -eq 124 ] && echo "(killed after ${RS_TEST_TIMEOUT:-300}s)" >>"$dir/output"
		echo "FAIL $name$label (${secs}s, status $rc; output and logs in $dir)"
		tail -n 80 "$dir/output" | sed 's/^/    /'
		;;
	esac
done
if [ $skipped -gt 0 ]; then
	echo "acceptance$label: $skipped skipped (not root, or no ip netns)"
	if [ "${CI:-}" = true ]; then
		echo "acceptance$label: CI=true: skip counts as a failure (CI runs the acceptance tests as root with ip netns)"
		failed=$((failed + skipped))
	fi
fi
echo "acceptance$label: $pass passed, $failed failed"
[ $failed -eq 0 ]
