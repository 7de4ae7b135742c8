#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# skip_status.sh - whether a test's exit status passes: 0 does, and 77
# ("skipped") does too except with CI=true in the environment, where CI runs
# as root with every tool and a skip means a test that proved nothing.
# The runners (tests/acceptance/run.sh, tests/kernel/run.sh) apply the same
# rule to their counts; the Makefile applies it to single scripts (the soak).
# usage: tests/skip_status.sh STATUS [NAME]; exits 0 (passes) or 1.
set -u
rc=${1:?usage: $0 STATUS [NAME]}
name=${2:-test}
case $rc in
0) exit 0 ;;
77)
	if [ "${CI:-}" = true ]; then
		echo "$name: skipped (77), and CI=true: a skip counts as a failure"
		exit 1
	fi
	echo "$name: skipped (77)"
	exit 0
	;;
*) exit 1 ;;
esac
