#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/kernel/run.sh - the kernel steering tests, each in its own network
# namespace, with the binaries of BUILD_DIR.
#
# usage: tests/kernel/run.sh BUILD_DIR [NAME...]
#   NAME: run only the tests whose name contains NAME.
#   RS_KERNEL_EXCLUDE: names (space-separated) not to run at all.
#   RS_KT_SCALE: every deadline the tests set is this many times longer
#     (default 1; the qemu guests raise it: see tests/kernel/lib.sh).
#   RS_KT_TRACE=1: the shell tests run under `bash -x`, each line stamped
#     with the time (PS4), into their outputs: where a slow guest's time goes.
#   RS_KT_OUT: where each test's output goes (default BUILD_DIR/kernel-tests;
#     the guests write straight to their results, so a guest stopped by its
#     limit still leaves what ran).
#
# table_test checks the bucket builder and the hash, precompute_test the
# known supervisors and their precomputed placements (no kernel).  The
# datapath tests (steer_test NAME) and the pin adoption tests (pin_test
# NAME) run in `unshare -n` with lo up; the
# agent tests (t_*.sh) make a named netns and run the agent in it with
# nsenter (it keeps the host's mount namespace, so bpffs pins outlive the
# agent as on a node).  Prints one line per test (ok / FAIL / skip), a failing
# test's output, the deadline that came closest to being missed (what each
# await took against its limit, and each test's time against its timeout),
# and last `kernel: N passed, N failed`.  A test exits 77 to be
# skipped, which it does only when not root: as root, a BPF program the
# kernel does not load or attach (a verifier rejection, an older kernel) is a
# failure, with libbpf's message and the verifier's log in the output.
# Exit status 1 on any failure; with CI=true in the environment a skip counts
# as a failure too (CI runs as root, where nothing may skip).
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR [NAME...]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
out_root=${RS_KT_OUT:-$build/kernel-tests}
mkdir -p "$out_root"
scale=${RS_KT_SCALE:-1}
deadlines="$out_root/deadlines"
: >"$deadlines"

# name and command of every test
tests=(table precompute)
for t in steered ipv6 pinned miss stalepin sockops sockops_own; do tests+=("steer_$t"); done
for t in configfail adopt layout names; do tests+=("pin_$t"); done
for t in "$here"/t_*.sh; do tests+=("$(basename "$t" .sh)"); done

pass=0 failed=0 skipped=0
for name in "${tests[@]}"; do
	case " ${RS_KERNEL_EXCLUDE:-} " in *" $name "*) continue ;; esac
	if [ $# -gt 0 ]; then
		want=0
		for n in "$@"; do case $name in *"$n"*) want=1 ;; esac; done
		[ $want = 1 ] || continue
	fi
	out="$out_root/$name.out"
	case $name in
	steer_* | pin_*) limit=$((60 * scale)) ;;
	*) limit=$((120 * scale)) ;;
	esac
	start=$(date +%s%N)
	if [ "$name" = table ] || [ "$name" = precompute ]; then
		"$build/kernel/${name}_test" >"$out" 2>&1 </dev/null
		rc=$?
	elif [ "$(id -u)" != 0 ]; then
		echo "skipped: not root" >"$out"
		rc=77
	else
		case $name in
		steer_* | pin_*)
			timeout -k 5 "$limit" unshare -n -- sh -c 'ip link set lo up && exec "$@"' sh \
				"$build/kernel/${name%%_*}_test" "${name#*_}" >"$out" 2>&1 </dev/null
			rc=$?
			;;
		*)
			RS_BUILD="$build" RS_KT_DEADLINES="$deadlines" \
				timeout -k 5 "$limit" bash ${RS_KT_TRACE:+-x} "$here/$name.sh" >"$out" 2>&1 </dev/null
			rc=$?
			;;
		esac
	fi
	secs=$(awk -v s="$start" -v e="$(date +%s%N)" 'BEGIN { printf "%.1f", (e - s) / 1e9 }')
	case $name in table | precompute) ;; *) echo "$secs $limit $name: the whole test" >>"$deadlines" ;; esac
	case $rc in
	0)
		pass=$((pass + 1))
		echo "ok   $name (${secs}s)"
		;;
	77)
		skipped=$((skipped + 1))
		echo "skip $name: $(tail -n 1 "$out")"
		;;
	*)
		failed=$((failed + 1))
		echo "FAIL $name (${secs}s, status $rc; output in $out)"
		tail -n 60 "$out" | sed 's/^/    /'
		;;
	esac
done
if [ $skipped -gt 0 ]; then
	echo "kernel: $skipped skipped (not root)"
	if [ "${CI:-}" = true ]; then
		echo "kernel: CI=true: skip counts as a failure (CI runs the kernel tests as root)"
		failed=$((failed + skipped))
	fi
fi
# The deadline used the most, as a share of its limit: the margin a slower
# machine has before a wait decides a result.
if [ -s "$deadlines" ]; then
	awk '$2 > 0 { r = $1 / $2; if (r > worst) { worst = r; line = $0 } }
		END { if (line != "") { split(line, f, " "); sub(/^[^ ]+ [^ ]+ /, "", line)
			printf "kernel: closest deadline: %ss of %ss (%.0f%%), %s\n", f[1], f[2], 100 * worst, line } }' "$deadlines"
fi
echo "kernel: $pass passed, $failed failed"
[ $failed -eq 0 ]
