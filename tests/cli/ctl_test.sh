#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctl_test.sh - ringsteerctl's offline forms against the vectors, and its
# answers to bad arguments (one line on stderr, exit status 2).
# usage: ctl_test.sh PATH/TO/ringsteerctl TEST_DATA_DIR
set -u
ctl=$1 data=$2
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# Every vector through the CLI: ring owner and walk, then placement.
while IFS=$'\t' read -r gws member owner clockwise; do
	expect_eq "owner $member" "$owner" "$("$ctl" ring --gateways "$gws" owner "$member")"
	expect_eq "walk $member" "$clockwise" "$("$ctl" ring --gateways "$gws" walk "$member" | paste -sd, -)"
done < <(jq -r '.sets[] | (.gateways | join(",")) as $g | .cases[] |
	[$g, .member_id, .owner, (.clockwise | join(","))] | @tsv' "$data/ring-sha256-be64.json")

while IFS=$'\t' read -r loads member expect cap; do
	expect_eq "place $member" "$expect cap=$cap" \
		"$("$ctl" place --explain --gateways "$loads" "$member" | awk '{print $1, $3}')"
done < <(jq -r '.cases[] | [(.loads | to_entries | map("\(.key)=\(.value)") | join(",")),
	.member_id, .expect, (.cap | tostring)] | @tsv' "$data/placement-bounded.json")

[ "$pass" -gt 100 ] || bad "too few vector cases ran ($pass)"

# Bad arguments: exit 2 and exactly one line on stderr.
expect_usage_error
expect_usage_error bogus
expect_usage_error ring owner m
expect_usage_error ring --gateways a,b
expect_usage_error ring --gateways a,b owner
expect_usage_error ring --gateways a,b spin m
expect_usage_error ring --gateways a,,b owner m
expect_usage_error ring --gateways "" owner m
expect_usage_error ring --gateways a,b owner m extra
expect_usage_error ring --nope a owner m
expect_usage_error ring --gateways
expect_usage_error ring --gateways "$(printf 'x%.0s' $(seq 300))" owner m
expect_usage_error place m
expect_usage_error place --gateways a=1,b owner
expect_usage_error place --gateways a=1,b=x m
expect_usage_error place --gateways a=1,b=-1 m
expect_usage_error place --gateways a=1,b=99999999999 m
expect_usage_error place --gateways a=1,a=2 m
expect_usage_error place --gateways =1 m
expect_usage_error place --gateways a=1 ""

# --json: the same answers as one JSON object each (vectors of the first set).
while IFS=$'\t' read -r gws member owner clockwise; do
	expect_eq "owner json $member" "$owner" "$("$ctl" ring --gateways "$gws" --json owner "$member" | jq -r .owner)"
	expect_eq "walk json $member" "$clockwise" \
		"$("$ctl" ring --gateways "$gws" --json walk "$member" | jq -r '.walk | join(",")')"
done < <(jq -r '.sets[0] | (.gateways | join(",")) as $g | .cases[:5][] |
	[$g, .member_id, .owner, (.clockwise | join(","))] | @tsv' "$data/ring-sha256-be64.json")
while IFS=$'\t' read -r loads member expect cap; do
	expect_eq "place json $member" "$expect $cap" \
		"$("$ctl" place --json --gateways "$loads" "$member" | jq -r '"\(.gateway) \(.cap)"')"
done < <(jq -r '.cases[:5][] | [(.loads | to_entries | map("\(.key)=\(.value)") | join(",")),
	.member_id, .expect, (.cap | tostring)] | @tsv' "$data/placement-bounded.json")
expect_usage_error place --gateways a=1 --store sqlite:/nonexistent/x.db m
expect_usage_error ring --gateways a --store sqlite:/nonexistent/x.db owner m

# --help succeeds, man-style.
expect_help
for cmd in ring place; do
	"$ctl" "$cmd" --help | grep -q '^SYNOPSIS$' && ok || bad "$cmd --help has no SYNOPSIS"
	expect_eq "help $cmd" "$("$ctl" "$cmd" --help)" "$("$ctl" help "$cmd")"
done
expect_help ring
expect_help place

summary ctl
