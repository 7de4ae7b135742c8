#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 1b of issue 25's matrix: a slow, lossy store.  PostgreSQL over TCP
# on a veth (tests/faults/pg_tcp.sh), the gateways reaching it through
# delay_proxy.py (300 ms added each way, so a round trip takes 600 ms of the
# 1 s --store-timeout: this kernel has no netem to delay packets) and nft
# dropping 3 packets in 10 of that traffic, both ways (`numgen random mod
# 10 < 3`), for 20 s.  Two gateways, 20 supervisors attached; 4 arrive
# during the fault.  Wanted: the gateways keep serving (their /healthz
# answers within 100 ms throughout, the 24 stay attached), the 4 are
# attached, placed by the slow store or accepted degraded (counted); once
# the loss and the delay end, everything is recorded within 2 x TTL,
# gauges equal to the ledger, the 20 untouched.
. "$(dirname "$0")/faults_lib.sh"
. "$(dirname "$0")/pg_tcp.sh"

FAULT_S=20
DELAY_MS=300
PROXY_PORT=6432
# The proxy must be up before the gateways dial it: started by the hook
# pgt_faults_up runs once the server is, before the first gateway; it
# forwards without delay until the fault (SIGUSR1), and again after (SIGUSR2).
proxy_pid=""
proxy_log=""
pgt_before_gateways() {
	proxy_log="$RS_DIR/log/proxy.log"
	ip netns exec "$PGT_NS" python3 "$(dirname "$0")/delay_proxy.py" "${PGT_ADDR[1]}" "$PROXY_PORT" \
		"${PGT_ADDR[1]}" "$PGT_PORT" "$DELAY_MS" >"$proxy_log" 2>&1 &
	proxy_pid=$!
	await "the delaying proxy listening" 10 grep -q listening "$proxy_log"
	PGT_URL="postgres://${PGT_ADDR[1]}:$PROXY_PORT/$PGT_DB"
}
pgt_faults_up 2 20
trap 'rc=$?; [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null; cluster_down; pgt_cleanup; exit $rc' EXIT
faults_mark
d0=$(pgt_sum ringsteer_gateway_degraded_accepts_total)
c0=$(pgt_sum ringsteer_gateway_store_claims_total)
e0=$(pgt_sum ringsteer_gateway_store_errors_total)
rs_ns nft -f - <<NFT || fail "nft"
table inet rsfault {
	chain out { type filter hook output priority 0; ip daddr ${PGT_ADDR[1]} tcp dport $PROXY_PORT numgen random mod 10 < 3 counter drop; }
	chain in { type filter hook input priority 0; ip saddr ${PGT_ADDR[1]} tcp sport $PROXY_PORT numgen random mod 10 < 3 counter drop; }
}
NFT
kill -USR1 "$proxy_pid"
await "the proxy delaying" 5 grep -q "delay $DELAY_MS ms" "$proxy_log"
t0=$(rs_now_ms)
echo "slow store on: $DELAY_MS ms each way through the proxy, 30% of packets dropped"
sups_start 21 22 23 24
arrived() { local m; for m in 21 22 23 24; do log_has "$(sup_log "$m")" event=attached || return 1; done; }
await "the 4 arrivals attached during the fault" 20 arrived
worst=0
down_seen=0
while [ $(($(rs_now_ms) - t0)) -lt $((FAULT_S * 1000)) ]; do
	for n in 1 2; do
		ms=$(gw_loop_ms "$n")
		[ "$ms" -gt "$worst" ] && worst=$ms
	done
	[ "$(($(metric 1 ringsteer_gateway_supervisors) + $(metric 2 ringsteer_gateway_supervisors)))" = 24 ] ||
		fail "a gateway stopped serving an attached supervisor during the slow store"
	pgt_store_down_somewhere && down_seen=1
	sleep 0.2 # the poll's pace: a sample every 200 ms over the fault's fixed length
done
dropped=$(rs_ns nft list table inet rsfault | grep -o 'packets [0-9]*' | awk '{ s += $2 } END { print s }')
echo "during the slow store ($FAULT_S s): worst /healthz $worst ms; store judged unavailable at some point: $down_seen; packets dropped $dropped; store errors +$(($(pgt_sum ringsteer_gateway_store_errors_total) - e0)); degraded accepts +$(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0))"
[ "$worst" -le 100 ] || fail "/healthz took $worst ms during the slow store (bound: 100 ms)"
rs_ns nft delete table inet rsfault
kill -USR2 "$proxy_pid"
echo "slow store off: loss and delay ended"
FAULTS_N=24
faults_recovered_within $((2 * RS_TTL_MS)) "slow store ended: the 24 recorded, gauges = ledger" pgt_recorded
faults_recovered_within $((2 * RS_TTL_MS)) "store_up 1 on both gateways" pgt_store_up_everywhere
pgt_untouched 20
echo "after: $(pgt_counts); claims +$(($(pgt_sum ringsteer_gateway_store_claims_total) - c0)), degraded accepts +$(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0))"
faults_check 21 22 23 24
echo "f_4: slow lossy store: the gateways kept serving, 20 untouched, the 4 arrivals recorded once it ended"
