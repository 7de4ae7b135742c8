#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/compare/report_test.sh - bench/compare/report.sh on the fixture
# (tests/compare/fixture: made-up figures for every contender, two passes of
# 40 and 400 supervisors): it writes the report and a chart per pass; with
# any one figure taken out of any of the three TSVs (the first, a middle and
# the last line of each) it fails and names it.  The report says how every
# contender is configured (bench/compare/contenders.sh).
# This is the check `make compare-quick` relies on.
set -u
here=$(cd "$(dirname "$0")" && pwd)
report="$here/../../bench/compare/report.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rs-report-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "report_test: FAIL: $*" >&2; fails=$((fails + 1)); }

mkdir -p "$tmp/in" "$tmp/docs"
cp "$here"/fixture/*.tsv "$tmp/in/"
if CMP_DOCS="$tmp/docs" "$report" "$tmp/in" >"$tmp/out" 2>&1; then
	for f in COMPARISON.md comparison-rounds.svg comparison-rounds.png comparison-rounds-400.svg comparison-rounds-400.png; do
		[ -s "$tmp/docs/$f" ] || bad "the fixture's report has no $f"
	done
	# every figure of the fixture is in the document
	n=$(awk -F'\t' '{ print $3 }' "$here"/fixture/evenness.tsv "$here"/fixture/datapath.tsv | sort -u |
		while read -r v; do grep -qF "| $v |" "$tmp/docs/COMPARISON.md" || echo "$v"; done | wc -l)
	[ "$n" = 0 ] || bad "$n fixture values are not in the tables"
	grep -q '^## Reading' "$tmp/docs/COMPARISON.md" || bad "no reading section"
	# the contenders as configured: the balancing lines, as the proxies get them
	grep -q '^## The contenders, as configured' "$tmp/docs/COMPARISON.md" || bad "no contenders section"
	for line in $'\tbalance source' $'\thash-type consistent' $'\thash-balance-factor 125' \
		$'\t\thash $remote_addr consistent;' $'\t\tnumgen random mod 4 vmap { 0 : goto ep_1, 1 : goto ep_2, 2 : goto ep_3, 3 : goto ep_4 }'; do
		grep -qxF -- "$line" "$tmp/docs/COMPARISON.md" || bad "the contenders section lacks [$line]"
	done
else
	bad "the fixture's report failed: $(cat "$tmp/out")"
fi
for f in evenness rounds datapath; do
	total=$(wc -l <"$here/fixture/$f.tsv")
	for line in 1 $((total / 2)) "$total"; do
		rm -rf "$tmp/in" "$tmp/docs2" && mkdir -p "$tmp/in"
		cp "$here"/fixture/*.tsv "$tmp/in/"
		sed -i "${line}d" "$tmp/in/$f.tsv"
		if CMP_DOCS="$tmp/docs2" "$report" "$tmp/in" >"$tmp/out" 2>&1; then
			bad "report.sh passed with line $line of $f.tsv taken out"
		elif ! grep -q 'missing figures' "$tmp/out"; then
			bad "line $line of $f.tsv out: failed without naming it: $(cat "$tmp/out")"
		fi
		[ ! -e "$tmp/docs2/COMPARISON.md" ] || bad "a report was written with line $line of $f.tsv missing"
	done
done
# A figure that is not a number (NA) counts as missing.
rm -rf "$tmp/in" && mkdir -p "$tmp/in" && cp "$here"/fixture/*.tsv "$tmp/in/"
sed -i '1s/\t[^\t]*$/\tNA/' "$tmp/in/datapath.tsv"
CMP_DOCS="$tmp/docs3" "$report" "$tmp/in" >/dev/null 2>&1 && bad "report.sh passed with an NA figure"
[ "$fails" = 0 ] || exit 1
echo "report_test: ok"
