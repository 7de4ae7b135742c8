#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/version_test.sh - every program answers --version with
# "NAME MAJOR.MINOR.PATCH (commit C)" and exits 0, the version being the one
# include/ringsteer/version.h defines (read here with awk, not through the
# library) and, in a git checkout, C this checkout's HEAD (git's first 12
# hex digits, "-dirty" allowed).  All six programs give the same line but
# for their name.
#
# usage: tests/cli/version_test.sh BUILD_DIR
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
field() { awk -v f="RINGSTEER_VERSION_$1" '$1 == "#define" && $2 == f { print $3 }' "$root/include/ringsteer/version.h"; }
want_version="$(field MAJOR).$(field MINOR).$(field PATCH)"
case $want_version in
[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "version_test: cannot read the version from version.h ($want_version)" >&2; exit 2 ;;
esac
head=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || true)

pass=0 fails=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
commits=""
for p in ringsteer-gateway ringsteer-supervisor ringsteer-agent ringsteer-swarm ringsteerctl ringsteer-vopr; do
	out=$("$build/$p" --version 2>&1)
	rc=$?
	[ "$rc" -eq 0 ] && ok || bad "$p --version exited $rc"
	if [[ $out =~ ^$p\ ([0-9]+\.[0-9]+\.[0-9]+)\ \(commit\ ([0-9a-z-]+)\)$ ]]; then
		ok
		[ "${BASH_REMATCH[1]}" = "$want_version" ] && ok ||
			bad "$p --version says ${BASH_REMATCH[1]}, version.h $want_version"
		c=${BASH_REMATCH[2]}
		commits+="$c "
		if [ -n "$head" ]; then
			[ "${c%-dirty}" = "$head" ] && ok || bad "$p --version says commit $c, HEAD is $head"
		fi
	else
		bad "$p --version printed [$out]"
	fi
done
# One build, one commit: the six agree.
[ "$(printf '%s\n' $commits | sort -u | wc -l)" -eq 1 ] && ok || bad "the programs disagree on the commit: $commits"
if [ "$fails" -gt 0 ]; then
	echo "version: $pass passed, $fails failed"
	exit 1
fi
echo "version: $pass passed"
