#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 26: the load generator.  Two gateways, one ringsteer-swarm of
# 500 members (sw-1..sw-500), each its own protocol client with its own
# token and its own source address from 198.18.200.0/24.  Once the swarm
# reports all 500 attached, each gateway's supervisors gauge is exactly 250
# (ceil(500 / 2)), the store agrees, and so does the swarm's own count per
# gateway; on SIGTERM the swarm says GOODBYE on every link, exits 0, and
# both gauges fall to 0.
#
# Source addresses: `ip route add local 198.18.200.0/24 dev lo` inside the
# cluster's namespace makes every address of the prefix local (as all of
# 127.0.0.0/8 is), so the swarm binds member i to 198.18.200.(i mod 256)
# without adding 256 addresses, and without IP_FREEBIND.  Two members per
# address at most: well inside the gateways' --max-unauth-per-source (8).
#
# Clocks: heartbeat 1 s, TTL 5 s (RS_CLOCKS=slow, as t_20): 500 arrivals at
# once hold the gateways' loops on the store, under ASan and on PostgreSQL
# too, and a row gone dead mid-burst would let later arrivals in past the cap.
RS_CLOCKS=slow
. "$(dirname "$0")/../cluster/lib.sh"

N=500
BIND=198.18.200.0/24
SWARM_METRICS=127.0.0.60:9300

swarm_metric() { # NAME [LABELMATCH]
	rs_ns curl -fsS --max-time 2 "http://$SWARM_METRICS/metrics" | metric_of "$@"
}
swarm_metric_is() { [ "$(swarm_metric "$1" "${3:-}")" = "$2" ]; }
gauges_are() { metric_is 1 ringsteer_gateway_supervisors "$1" && metric_is 2 ringsteer_gateway_supervisors "$2"; }

cluster_up --gateways 2
[ -x "$RS_BUILD/ringsteer-swarm" ] || fail "missing binary: $RS_BUILD/ringsteer-swarm"
ip -n "$RS_NS" route add local "$BIND" dev lo || fail "ip route add local $BIND dev lo"

swarm_log="$RS_DIR/log/swarm.log"
start=$(rs_now_ms)
# shellcheck disable=SC2046
ip netns exec "$RS_NS" "$RS_BUILD/ringsteer-swarm" --service "$RS_SERVICE" --secret "$RS_SECRET" \
	--count "$N" --prefix sw- --bind "$BIND" --metrics "$SWARM_METRICS" $(rs_sup_transport_args 0) \
	>"$swarm_log" 2>&1 &
swarm_pid=$!

await "the swarm reports $N attached" 90 swarm_metric_is ringsteer_swarm_attached "$N"
took=$(($(rs_now_ms) - start))
await "the swarm's all_attached line" 5 log_has "$swarm_log" 'event=all_attached '
line=$(grep 'event=all_attached ' "$swarm_log" | head -n 1)
echo "swarm: $line"
echo "t_26: $N attached after ${took} ms by the test's clock, $(printf '%s\n' "$line" | logfield all_attached_ms) ms by the swarm's"

await "each gateway's supervisors gauge at $((N / 2))" 10 gauges_are $((N / 2)) $((N / 2))
hold "$((N / 2)) on each gateway" 1.5 gauges_are $((N / 2)) $((N / 2))
read -r l1 l2 < <(loads 1 2)
[ "$l1" = $((N / 2)) ] && [ "$l2" = $((N / 2)) ] || fail "the store says gw-1=$l1 gw-2=$l2, not $((N / 2)) each"
for n in 1 2; do
	v=$(swarm_metric ringsteer_swarm_attached_by_gateway "gateway=\"gw-$n\"")
	[ "$v" = $((N / 2)) ] || fail "the swarm counts $v on gw-$n, not $((N / 2))"
done
# Each member from its own source address: 500 links from the prefix, over
# all of its 256 addresses.
srcs=$(rs_ns ss -Htn state established src "$BIND" | awk '{ sub(/:[0-9]+$/, "", $3); print $3 }')
[ "$(printf '%s\n' "$srcs" | grep -c .)" = "$N" ] || fail "not $N links from $BIND: $(printf '%s\n' "$srcs" | grep -c .)"
[ "$(printf '%s\n' "$srcs" | sort -u | grep -c .)" = 256 ] || fail "the links do not use all 256 addresses of $BIND"
swarm_metric_is ringsteer_swarm_attach_seconds 0 && fail "ringsteer_swarm_attach_seconds missing or 0"
if command -v promtool >/dev/null; then # t_16 lints the daemons' pages; this one here
	lint=$(rs_ns curl -fsS --max-time 2 "http://$SWARM_METRICS/metrics" | promtool check metrics 2>&1) ||
		fail "promtool check metrics on the swarm's page: $lint"
	[ -z "$lint" ] || fail "promtool check metrics on the swarm's page: $lint"
fi
r=$(swarm_metric ringsteer_swarm_redirects_total)
f=$(swarm_metric ringsteer_swarm_failures_total)
echo "t_26: $((N / 2)) on each gateway by their gauges, the store and the swarm ($r redirects, $f failures)"

kill -TERM "$swarm_pid"
await "the swarm exits after SIGTERM" 10 rs_gone "$swarm_pid"
wait "$swarm_pid"
rc=$?
[ "$rc" = 0 ] || fail "the swarm exited $rc after SIGTERM"
log_has "$swarm_log" 'event=stopping .*attached=500 ' || fail "no event=stopping summary with attached=500"
await "both gateways' supervisors gauges at 0" 10 gauges_are 0 0
echo "t_26: SIGTERM: GOODBYE from all $N, both gauges at 0"
