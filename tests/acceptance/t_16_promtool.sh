#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 16: every /metrics page passes `promtool check metrics` (the
# Prometheus exposition-format linter, Debian package prometheus) with
# supervisors attached: both gateways' and the agent's.  The pages are not
# empty ones: supervisors are attached through the steered Service and
# straight to gw-1 (so some are redirected), one garbage connection is
# rejected, and the gauges and counters checked below are non-zero.
# promtool printing anything, or exiting nonzero, fails the test.  Each page
# carries one ringsteer_build_info series with the build's version and commit.
# The gateways' pages carry the latency histograms (admission, handoff, store
# calls by kind), the admission one with an observation per HELLO answered.
. "$(dirname "$0")/../cluster/lib.sh"

command -v promtool >/dev/null || { echo "missing tool: promtool (Debian package prometheus; make deps)" >&2; exit 1; }

export RS_AGENT=1
cluster_up --gateways 0
agent_start
RS_GW_ARGS="--agent $RS_SOCK/agent.sock"
gw_start 1
gw_start 2

# Three through the Service (sk_lookup steers them), three straight to gw-1's
# listen endpoint: bounded load redirects some of those to gw-2.
sups_start 1 2 3
RS_SUP_SERVICE=$(gw_addr 1):$RS_GW_LISTEN_PORT sups_start 4 5 6
await "six supervisors attached" 20 all_attached 1 2 3 4 5 6
reply=$(raw_send "$(gw_addr 1):$RS_GW_LISTEN_PORT" "$(hex_bytes 'GET / HTTP/1.0')0d0a0d0a" 3)
echo "garbage to gw-1: reply [$reply]"
await "the garbage connection counted as a reject" 5 metric_ge 1 ringsteer_gateway_rejects_total 1 'reason="bad_frame"'

total() { # NAME: sum over both gateways
	echo $(($(metric 1 "$1") + $(metric 2 "$1")))
}
[ "$(total ringsteer_gateway_supervisors)" -eq 6 ] || fail "gateways report $(total ringsteer_gateway_supervisors) supervisors, want 6"
[ "$(total ringsteer_gateway_redirects_total)" -ge 1 ] || fail "no redirect happened (want at least one)"
agent_sees() { # connections gauge of both gateways on the agent, total 6
	local a b
	a=$(agent_metric ringsteer_agent_connections 'gateway="gw-1"')
	b=$(agent_metric ringsteer_agent_connections 'gateway="gw-2"')
	[ -n "$a" ] && [ -n "$b" ] && [ $((${a%.*} + ${b%.*})) -eq 6 ]
}
await "agent: connections of both gateways add up to 6" 5 agent_sees
lookups=$(agent_metric ringsteer_agent_lookups_total 'result="table"')
[ "${lookups%.*}" -ge 1 ] || fail "agent: no steered lookup counted (table=$lookups)"

# The latency histograms are on the pages linted below, with observations:
# every HELLO answered (six attached, each redirect answered twice).
for h in admission_seconds handoff_seconds store_seconds; do
	for n in 1 2; do
		metric_page=$(rs_ns curl -fsS --max-time 2 "http://$(gw_addr "$n"):$RS_GW_METRICS_PORT/metrics")
		grep -qx "# TYPE ringsteer_gateway_$h histogram" <<<"$metric_page" || fail "gw-$n: no histogram ringsteer_gateway_$h"
	done
done
[ "$(total ringsteer_gateway_admission_seconds_count)" -ge 7 ] ||
	fail "admission_seconds_count over both gateways is $(total ringsteer_gateway_admission_seconds_count), want 6 + the redirects"

# check NAME URL: fetch inside the netns, lint with promtool.
check() {
	local name=$1 url=$2 page out rc
	page=$(rs_ns curl -fsS --max-time 2 "$url") || fail "$name: $url unreachable"
	[ -n "$page" ] || fail "$name: empty /metrics"
	out=$(printf '%s\n' "$page" | promtool check metrics 2>&1)
	rc=$?
	if [ $rc -ne 0 ] || [ -n "$out" ]; then
		printf '%s\n' "$page" | sed 's/^/    /' >&2
		fail "$name: promtool check metrics (status $rc): $out"
	fi
	echo "$name: promtool check metrics clean ($(printf '%s\n' "$page" | grep -vc '^#') samples)"
	# One build_info series, value 1, with the build's own version and commit.
	[ "$(printf '%s\n' "$page" | grep -c '^ringsteer_build_info{')" -eq 1 ] || fail "$name: not one ringsteer_build_info series"
	printf '%s\n' "$page" | grep -qxF "ringsteer_build_info{version=\"$version\",commit=\"$commit\"} 1" ||
		fail "$name: ringsteer_build_info is not version=$version commit=$commit: $(printf '%s\n' "$page" | grep '^ringsteer_build_info')"
}
# The build's version and commit, from --version (tests/cli/version_test.sh
# holds that to version.h and git).
read -r version commit < <("$RS_BUILD/ringsteer-gateway" --version | sed -n 's/^ringsteer-gateway \([^ ]*\) (commit \([^)]*\))$/\1 \2/p')
[ -n "${commit:-}" ] || fail "ringsteer-gateway --version: no version and commit"
check gw-1 "http://$(gw_addr 1):$RS_GW_METRICS_PORT/metrics"
check gw-2 "http://$(gw_addr 2):$RS_GW_METRICS_PORT/metrics"
check agent "http://$RS_AGENT_METRICS/metrics"
echo "t_16: gateway and agent /metrics pass promtool check metrics"
