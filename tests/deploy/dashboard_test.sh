#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/dashboard_test.sh - the Grafana dashboard
# (deploy/grafana/ringsteer.json) asks a real Prometheus only what it can
# answer (issue 28, part 4).
#
# usage: tests/deploy/dashboard_test.sh BUILD_DIR
# (RS_DASHBOARD replaces deploy/grafana/ringsteer.json.)
#
# a. The file: every panel and query names its data source as the
#    ${datasource} variable (type datasource, plugin prometheus), never a
#    fixed one; the panels cover what issue 28 asks (supervisors per
#    gateway, max - min, redirects and handoffs by reason, store up and
#    queue, the agent's connects, admission and handoff latency); every
#    expression, its Grafana variables replaced as Grafana would ($namespace
#    by the All value .*, $__rate_interval by a window), parses:
#    promtool has no "check expr", so each becomes a recording rule of a
#    generated rules file for `promtool check rules`.  No root needed.
# b. Live (root, ip netns; else exit 77 after a): a cluster shaped like
#    Kubernetes (tests/cluster/pods.sh: one node, the node agent with
#    connect-time steering, 2 gateway pods, 6 supervisor pods), and Debian's
#    Prometheus in the node's namespace, listening on its loopback, scraping
#    both gateways and the agent every second.  Once every target is up,
#    things happen for every panel to show: four supervisors dial gw-1
#    directly (placement redirects to gw-2), two through the Service (the
#    agent steers their connects), then `ringsteerctl drain gw-1` hands
#    gw-1's supervisors off.  Then every expression, through
#    /api/v1/query, must return a non-empty result with a value that is not
#    NaN (polled, with a deadline: Prometheus has to scrape what happened),
#    and the panels the events are for show them: 6 supervisors, placement
#    and drain redirects, completed handoffs, steered connects.
#    $__rate_interval stands for 5m here: the whole test, so each rate
#    and quantile spans the events it is meant to show.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
DASH=${RS_DASHBOARD:-$ROOT/deploy/grafana/ringsteer.json}
WINDOW=5m
for t in jq promtool; do
	command -v "$t" >/dev/null || { echo "missing tool: $t (make deps)" >&2; exit 1; }
done

bad() { echo "dashboard_test: $*" >&2; exit 1; }

# ---- a. the file ------------------------------------------------------------
jq -e . "$DASH" >/dev/null || bad "$DASH is not JSON"
jq -e '[.templating.list[] | select(.name == "datasource" and .type == "datasource" and .query == "prometheus")] | length == 1' \
	"$DASH" >/dev/null || bad "no \${datasource} variable of type datasource (prometheus)"
fixed=$(jq -r '[.. | objects | select(has("datasource")) | .datasource
	| select(type != "object" or .uid != "${datasource}" or .type != "prometheus")] | length' "$DASH")
[ "$fixed" = 0 ] || bad "$fixed panels or queries name a data source other than \${datasource}"

# "ID.REF<TAB>EXPR" per query, Grafana's variables replaced.
exprs=$(jq -r '.. | objects | select(has("targets")) | .id as $id | .targets[] | "\($id).\(.refId)\t\(.expr)"' "$DASH" |
	# shellcheck disable=SC2016 # Grafana's variables, taken literally
	sed -e 's/\$__rate_interval/'"$WINDOW"'/g' -e 's/\$namespace/.*/g')
[ -n "$exprs" ] || bad "no panel expressions"
n_exprs=$(printf '%s\n' "$exprs" | wc -l)
left=$(printf '%s\n' "$exprs" | grep -F '$') && bad "a variable other than \$namespace and \$__rate_interval: $left"
for m in ringsteer_gateway_supervisors ringsteer_gateway_draining ringsteer_gateway_redirects_total \
	ringsteer_gateway_handoffs_total ringsteer_gateway_store_up ringsteer_gateway_store_queue \
	ringsteer_agent_connects_total ringsteer_gateway_admission_seconds_bucket \
	ringsteer_gateway_handoff_seconds_bucket; do
	printf '%s\n' "$exprs" | grep -q "$m" || bad "no panel reads $m"
done
printf '%s\n' "$exprs" | grep -q 'max by (namespace) (ringsteer_gateway_supervisors.*) - min by (namespace)' ||
	bad "no max - min panel"

tmp=$(mktemp -d /tmp/rs-dash.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$exprs" | jq -R -s '{groups: [{name: "ringsteer-dashboard", rules: [split("\n")[] | select(length > 0)
	| split("\t") | {record: ("ringsteer_dashboard:panel_" + (.[0] | gsub("\\."; "_"))), expr: .[1]}]}]}' \
	>"$tmp/rules.json"
out=$(promtool check rules "$tmp/rules.json" 2>&1) || bad "promtool check rules refused a panel expression:
$out"
echo "dashboard_test: a. $n_exprs panel expressions parse (promtool check rules: $(printf '%s\n' "$out" | grep -o 'SUCCESS.*'))"

# ---- b. live: a real Prometheus over a small cluster ---------------------------
if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "dashboard_test: b. skipped: not root, or no ip netns"
	exit 77
fi
command -v prometheus >/dev/null || bad "missing tool: prometheus (Debian package prometheus; make deps)"
rm -rf "$tmp" && trap - EXIT
export RS_BUILD=$BUILD RS_ARTIFACTS=${RS_ARTIFACTS:-$BUILD/deploy-dashboard}
rm -rf "$RS_ARTIFACTS"
. "$ROOT/tests/cluster/lib.sh"
. "$ROOT/tests/cluster/pods.sh"
export RS_AGENT=1
cluster_up --gateways 0
pods_up 1
gw_start 1
gw_start 2

PROM=127.0.0.1:9090 # node 1's own loopback
cat >"$RS_DIR/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ringsteer-gateway
    static_configs:
      - targets: ["$(gw_addr 1):$RS_GW_METRICS_PORT", "$(gw_addr 2):$RS_GW_METRICS_PORT"]
  - job_name: ringsteer-agent
    static_configs:
      - targets: ["$(node_addr 1):$RS_NODES_AGENT_PORT"]
EOF
mkdir "$RS_DIR/tsdb"
# nsenter execs it: $! is Prometheus (cluster_down also kills whatever is
# left in the node's namespace).
nsenter --net="/run/netns/$(node_ns 1)" prometheus --config.file="$RS_DIR/prometheus.yml" \
	--storage.tsdb.path="$RS_DIR/tsdb" --web.listen-address="$PROM" >"$RS_DIR/log/prometheus.log" 2>&1 &
PROM_PID=$!
disown "$!"
prom() { nodes_exec 1 curl -fsS --max-time 3 "$@"; }
# query EXPR: the /api/v1/query answer (JSON).
query() { prom --data-urlencode "query=$1" "http://$PROM/api/v1/query"; }
# answers EXPR: success, a non-empty result, at least one value not NaN.
answers() {
	query "$1" | jq -e '.status == "success" and (.data.result | length > 0)
		and any(.data.result[]; (.value[1] != "NaN"))' >/dev/null
}
prom_ready() { ! rs_gone "$PROM_PID" && prom "http://$PROM/-/ready" >/dev/null; }
await "Prometheus ready" 20 prom_ready
await "Prometheus scraping both gateways and the agent" 15 answers 'count(up == 1) == 3'

# Events for every panel, once Prometheus has seen the counters at rest.
RS_SUP_AGENT=0 RS_SUP_SERVICE=$(gw_addr 1):$RS_GW_LISTEN_PORT sups_start 1 2 3 4
sups_start 5 6
await "six supervisors attached" 20 all_attached 1 2 3 4 5 6
metric_ge 1 ringsteer_gateway_redirects_total 1 'reason="placement"' ||
	metric_ge 2 ringsteer_gateway_redirects_total 1 'reason="placement"' || fail "no placement redirect"
k=$(metric 1 ringsteer_gateway_supervisors)
[ "$k" -ge 1 ] || fail "gw-1 holds nobody to hand off"
ctl drain gw-1 --store "$RS_STORE" >/dev/null || fail "ringsteerctl drain gw-1"
await "gw-1 drained" 15 metric_is 1 ringsteer_gateway_supervisors 0
await "six supervisors attached after the drain" 15 all_attached 1 2 3 4 5 6
await "gw-1: $k handoffs timed" 5 metric_is 1 ringsteer_gateway_handoff_seconds_count "$k"
steered=$(node_agent_metric 1 ringsteer_agent_connects_total steered)
echo "dashboard_test: b. $k handed off by the drain of gw-1; the agent steered ${steered:-0} connects"

# shows EXPR LABEL VALUE: the series of EXPR whose LABEL is VALUE is above 0
# (what the events above must have left in the panel).
shows() {
	query "$1" | jq -e --arg l "$2" --arg v "$3" \
		'any(.data.result[] | select(.metric[$l] == $v) | .value[1] | tonumber; . > 0)' >/dev/null
}
# supervisors EXPR N: the panel's series add up to N.
supervisors() { query "$1" | jq -e --argjson n "$2" '[.data.result[].value[1] | tonumber] | add == $n' >/dev/null; }
await "Prometheus has scraped the drain's end" 10 answers "ringsteer_gateway_handoff_seconds_count{gateway=\"gw-1\"} == $k"
while IFS=$'\t' read -r ref e; do
	await "panel $ref answers: $e" 20 answers "$e"
	case $e in
	"sum by (gateway) (ringsteer_gateway_supervisors"*) await "panel $ref: 6 supervisors" 10 supervisors "$e" 6 ;;
	*ringsteer_gateway_redirects_total*)
		await "panel $ref: placement redirects" 10 shows "$e" reason placement
		await "panel $ref: drain redirects" 10 shows "$e" reason drain ;;
	*ringsteer_gateway_handoffs_total*) await "panel $ref: completed handoffs" 10 shows "$e" result completed ;;
	*ringsteer_agent_connects_total*) await "panel $ref: steered connects" 10 shows "$e" result steered_netns ;;
	esac
	echo "dashboard_test: b. panel $ref: $(query "$e" | jq -c '[.data.result[] | {m: .metric, v: .value[1]}]' | cut -c1-160)"
done <<<"$exprs"
echo "dashboard_test: ok: $n_exprs expressions parse, and return data from Prometheus $(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }')"
