#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# skip_test.sh - a test that skips (exit 77) fails its run under CI=true and
# passes it, as skipped, otherwise: for tests/acceptance/run.sh and
# tests/kernel/run.sh (each copied beside one test that only skips, so no
# real test runs) and for tests/skip_status.sh, which the Makefile applies
# to the soak's status.
# usage: tests/skip_test.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

dir=$(mktemp -d /tmp/rs-skip-test-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/build" "$dir/acceptance" "$dir/kernel"
cp "$here/acceptance/run.sh" "$dir/acceptance/run.sh"
cp "$here/kernel/run.sh" "$dir/kernel/run.sh"
printf 'echo "skipped: on purpose"\nexit 77\n' >"$dir/acceptance/t_99_skip.sh"
printf 'echo "skipped: on purpose"\nexit 77\n' >"$dir/kernel/t_skip_only.sh"

# expect WANT_RC CI_VALUE DESC CMD...: CMD with CI=CI_VALUE exits WANT_RC
# (0, or "nonzero").
expect() {
	local want=$1 ci=$2 desc=$3 rc
	shift 3
	CI=$ci "$@" >"$dir/out" 2>&1
	rc=$?
	if { [ "$want" = 0 ] && [ $rc -eq 0 ]; } || { [ "$want" = nonzero ] && [ $rc -ne 0 ]; }; then
		ok
	else
		bad "$desc with CI=$ci: status $rc, want $want"
		sed 's/^/    /' "$dir/out"
	fi
}

for ci in true ""; do
	want=0
	[ "$ci" = true ] && want=nonzero
	expect $want "$ci" "acceptance/run.sh, one test skipping" bash "$dir/acceptance/run.sh" "$dir/build" t_99_skip
	expect $want "$ci" "kernel/run.sh, one test skipping" bash "$dir/kernel/run.sh" "$dir/build" t_skip_only
	expect $want "$ci" "skip_status.sh 77" bash "$here/skip_status.sh" 77
	expect 0 "$ci" "skip_status.sh 0" bash "$here/skip_status.sh" 0
	expect nonzero "$ci" "skip_status.sh 1" bash "$here/skip_status.sh" 1
done
# The soak's status goes through skip_status.sh in `make test`.
if grep -q 'soak.sh.*rc=\$\$?.*' "$here/../Makefile" && grep -q 'skip_status.sh \$\$rc soak' "$here/../Makefile"; then
	ok
else
	bad "the Makefile does not judge the soak's status with tests/skip_status.sh"
fi
echo "skip_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
