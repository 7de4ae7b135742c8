#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo/demo.sh - ringsteer's main job, told as a story on a local cluster.
#
# usage: demo/demo.sh BUILD_DIR        (`make demo`, `make demo AGENT=0`)
#
# A node shaped like Kubernetes' (tests/cluster/pods.sh): every gateway and
# every supervisor its own pod (network namespace, veth, /32, cgroup), the
# Service a ClusterIP that kube-proxy's nftables DNAT spreads at random, the
# embedded SQLite store, three gateways and twelve supervisors carrying 1 to
# 8 sandboxes.  With AGENT=1 the node agent steers at connect time: each
# supervisor registers with it (--agent) and its connect() to the ClusterIP
# is rewritten to the gateway the rule chose before kube-proxy sees it.  The story: start; restart
# every supervisor; a token refresh; a surge-first rolling restart of every
# gateway; a gateway SIGKILLed.  After each step it prints the per-gateway
# chart (`ringsteerctl status`) and the gauges, checks that they agree, and it waits for each step
# to settle with a deadline (it fails, saying what it waited for, rather than
# print a chart of a half-finished step).  It ends with one line,
#   verdict: even (max - min = D ...)   or   verdict: uneven (max - min = D ...)
# exits 0 when even, and removes everything it made.
#
# Every link is TLS 1.3 with client certificates (a CA made for the run with
# the openssl command, tests/tls/make_certs.sh): each redirect is followed
# only to a gateway whose certificate names the redirect's gateway id.
#
# Environment: AGENT=1 (default; falls back to the redirect path, saying
# so, when the kernel or privileges cannot steer) or AGENT=0; TLS=1
# (default) or TLS=0 (plaintext, --insecure); DEMO_SUPERVISORS (12),
# DEMO_GATEWAYS (3); RS_KEEP=1 keeps the temp dir.
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
export RS_BUILD=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../tests/cluster/lib.sh
. "$here/../tests/cluster/lib.sh"
# shellcheck source=../tests/cluster/pods.sh
. "$here/../tests/cluster/pods.sh"

AGENT=${AGENT:-1}
RS_TLS=${TLS:-1}
RS_TLS_MTLS=$RS_TLS
SUPS=${DEMO_SUPERVISORS:-12}
GWS=${DEMO_GATEWAYS:-3}
# The harness's fast clocks (heartbeat 200 ms, TTL 1 s) keep the story short.
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: needs root (network namespaces, nftables, BPF); try: sudo make demo" >&2
	exit 1
fi

t0=$(rs_now_ms)
step_no=0
members=$(seq 1 "$SUPS")
# shellcheck disable=SC2206
members=($members)

say() { printf '%s\n' "$*"; }
elapsed() { awk -v ms=$(($(rs_now_ms) - t0)) 'BEGIN { printf "%.1f s", ms / 1000 }'; }

# The gateways running now (harness numbers), in order.
running() {
	local n
	for n in $(printf '%s\n' "${!RS_GW_PID[@]}" | sort -n); do
		[ -n "${RS_GW_PID[$n]}" ] && printf '%s ' "$n"
	done
}

# Loads over the running gateways differ by at most one.
even_now() {
	local r
	r=$(running)
	# shellcheck disable=SC2086
	[ "$(spread $r)" -le 1 ]
}

# where-map: "sup-M gw-N" per attached supervisor, sorted.
placement() { rs_current | jq -r '"\(.member_id) \(.gateway_id)"' | sort; }
moved_since() { # FILE: supervisors whose gateway differs from FILE's
	join "$1" <(placement) | awk '$2 != $3' | wc -l
}

gauges() {
	local n line=""
	for n in $(running); do
		line+="gw-$n supervisors=$(metric "$n" ringsteer_gateway_supervisors)"
		line+=" busiest_sandboxes=$(metric "$n" ringsteer_gateway_busiest_supervisor_sandboxes)   "
	done
	say "gauges:   ${line%   }"
	if [ "$AGENT" = 1 ]; then
		local r
		r=$(nodes_exec 1 curl -fsS --max-time 2 "http://$(node_addr 1):$RS_NODES_AGENT_PORT/metrics" |
			awk '/^ringsteer_agent_connects_total\{/ {
				match($0, /result="[a-z_]+"/); r = substr($0, RSTART + 8, RLENGTH - 9)
				printf "%s=%s ", r, $2 }')
		say "kernel:   connects to the Service ${r% } (agent, cumulative)"
	fi
	say "service:  connects kube-proxy's DNAT took: $(svc_dnat_count) (cumulative)"
}

# Redirects the supervisors were sent, by reason, from their own logs (a
# stopped gateway takes its counters with it; the supervisors' logs stay).
redirects() { cat "$RS_DIR"/log/sup-*.log 2>/dev/null | grep -c "event=redirected .*reason=$1" || true; }

# show TITLE: the chart, the gauges, and the redirects since the last chart.
show() {
	local p d
	p=$(redirects placement)
	d=$(redirects drain)
	say ""
	say "-- after: $1   (at $(elapsed))"
	ctl status --store "$RS_STORE" --ttl "$RS_TTL_MS" || fail "ringsteerctl status failed"
	gauges
	gauges_match_chart || fail "$1: a gateway's gauges differ from the chart"
	say "checked:  every gateway's gauges equal its row in the chart"
	say "redirects since the last chart: placement $((p - ${last_p:-0})), drain handoff $((d - ${last_d:-0}))$([ "$AGENT" = 1 ] && echo ' (the kernel steered the other arrivals at connect time)')"
	last_p=$p last_d=$d
}

step() {
	step_no=$((step_no + 1))
	say ""
	say "== $step_no. $1"
}

# Each running gateway's gauges (supervisors, busiest supervisor's
# sandboxes) equal the chart's figures for it (the store's live sessions
# there, reservations included): the gauges are what an operator watches,
# the chart what the store decided.
gauges_match_chart() {
	local n json want
	json=$(ctl status --store "$RS_STORE" --ttl "$RS_TTL_MS" --json) || return 1
	for n in $(running); do
		want=$(jq -r --arg g "gw-$n" '.gateways[] | select(.id == $g) | "\(.supervisors) \(.busiest_sandboxes)"' <<<"$json")
		[ "$want" = "$(metric "$n" ringsteer_gateway_supervisors) $(metric "$n" ringsteer_gateway_busiest_supervisor_sandboxes)" ] || return 1
	done
}

settle() { # DESC: every supervisor attached, loads even, gauges = chart
	await "$1: all ${#members[@]} supervisors attached" 30 all_attached "${members[@]}"
	await "$1: loads even (max - min <= 1)" 15 even_now
	await "$1: every gateway's gauges equal the chart" 10 gauges_match_chart
}

# --- the agent, if this kernel lets it steer -------------------------------

# demo_agent: starts the node agent; on exit 3 (no BPF steering here, or not
# privileged) turns AGENT off: the Service's DNAT and the redirect path.
demo_agent() {
	local rc=0
	node_agent_start 1 || rc=$?
	if [ "$rc" -eq 3 ]; then
		say "note: the node agent cannot steer here ($(tail -n 1 "$(node_agent_log 1)"));"
		say "      showing the redirect path alone, as AGENT=0 would"
		AGENT=0 RS_AGENT=0
		return 0
	fi
	RS_AGENT=1 # supervisors register with it (pods.sh: --agent)
}

# --- the story -------------------------------------------------------------

say "ringsteer demo: $GWS gateways, $SUPS supervisors, $([ "$AGENT" = 1 ] && echo 'node agent steering connects in the kernel (AGENT=0: redirects only)' || echo 'no agent: the Service spreads at random, ringsteer redirects'), $([ "$RS_TLS" = 1 ] && echo 'mutual TLS 1.3' || echo 'plaintext (TLS=0)')"
export RS_AGENT=0
cluster_up --gateways 0
pods_up 1
[ "$AGENT" = 1 ] && demo_agent
for ((g = 1; g <= GWS; g++)); do
	gw_start "$g"
done

step "start: $GWS gateways, then $SUPS supervisors with 1 to 8 sandboxes each"
for m in "${members[@]}"; do
	RS_SUP_BOXES[$m]=$(((m * 5) % 8 + 1))
done
sups_start "${members[@]}"
settle "start"
show "start"

step "restart every supervisor (stop all, start all)"
placement >"$RS_DIR/before"
sups_stop "${members[@]}"
await "every session ended" 10 attached_is 0
sups_start "${members[@]}"
settle "supervisor restart"
show "supervisor restart"
say "moved to another gateway than before: $(moved_since "$RS_DIR/before") of $SUPS (a restart within --home-grace goes home; later, the rule decides again)"

step "token refresh: every supervisor renews its token and redials its gateway, asking to stay"
placement >"$RS_DIR/before"
declare -A refreshed=()
for m in "${members[@]}"; do
	refreshed[$m]=$(log_count "$(sup_log "$m")" 'event=token_refreshed')
	kill -USR1 "${RS_SUP_PID[$m]}"
done
refreshed_all() {
	local m
	for m in "${members[@]}"; do
		[ "$(log_count "$(sup_log "$m")" 'event=token_refreshed')" -gt "${refreshed[$m]}" ] || return 1
		[ "$(sup_last "$m" via)" = refresh ] || return 1
	done
}
await "every supervisor refreshed its token and reattached" 20 refreshed_all
settle "token refresh"
moved=$(moved_since "$RS_DIR/before")
[ "$moved" -eq 0 ] || fail "token refresh moved $moved supervisors"
show "token refresh"
say "moved: 0 (a refresh never moves anyone)"

step "surge-first rolling restart of every gateway (maxSurge 1, maxUnavailable 0)"
next=$((GWS + 1))
for old in $(running); do
	placement >"$RS_DIR/before"
	gw_start "$next"
	joined=$(moved_since "$RS_DIR/before")
	gw_stop "$old"
	settle "rolling restart: gw-$next in, gw-$old out"
	say "   gw-$next joined (moved: $joined), gw-$old drained and exited; handed off: $(drain_handoffs "$old" | wc -l); loads now $(loads $(running)) on gw-$(running | sed 's/ $//; s/ /,gw-/g')"
	next=$((next + 1))
done
show "rolling restart"

step "a gateway is SIGKILLed (no drain: its supervisors find their way back)"
set -- $(running)
victim=$1
gw_kill "$victim"
row_dead() { ! ctl gateways --store "$RS_STORE" --ttl "$RS_TTL_MS" --json | jq -e --arg g "gw-$victim" '.[] | select(.id == $g)'; }
await "gw-$victim's row is dead (its TTL passed)" 10 row_dead
settle "gw-$victim killed"
show "gw-$victim SIGKILLed"

json=$(ctl status --store "$RS_STORE" --ttl "$RS_TTL_MS" --json) || fail "ringsteerctl status --json failed"
spread=$(jq -r '.spread' <<<"$json")
gws=$(jq -r '.serving_gateways' <<<"$json")
sups=$(jq -r '.supervisors' <<<"$json")
say ""
if [ "$(jq -r '.even' <<<"$json")" = true ]; then
	say "verdict: even (max - min = $spread over $gws gateways, $sups supervisors, in $(elapsed))"
	exit 0
fi
say "verdict: uneven (max - min = $spread over $gws gateways, $sups supervisors, in $(elapsed))"
exit 1
