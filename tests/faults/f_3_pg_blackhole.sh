#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 1a of issue 25's matrix: PostgreSQL over TCP on a veth
# (tests/faults/pg_tcp.sh), blackholed for 30 s: nft drops every packet
# between the gateways' namespace and the server, both ways, no RST (a
# partition, a dead switch).  Two gateways, 20 supervisors attached; 4
# arrive during the blackhole.  Wanted: the store judged unavailable (a
# store call waits at most --store-timeout, 1 s), the 20 stay where they
# are, the 4 accepted degraded (counted) and, once the rule is gone, the
# gateways connect again and record them (claims) within 2 x TTL, gauges
# equal to the ledger, nothing unrecorded.
. "$(dirname "$0")/faults_lib.sh"
. "$(dirname "$0")/pg_tcp.sh"

BLACKHOLE_S=30
pgt_faults_up 2 20
faults_mark
d0=$(pgt_sum ringsteer_gateway_degraded_accepts_total)
c0=$(pgt_sum ringsteer_gateway_store_claims_total)
rs_ns nft -f - <<NFT || fail "nft"
table inet rsfault {
	chain out { type filter hook output priority 0; ip daddr ${PGT_ADDR[1]} drop; }
	chain in { type filter hook input priority 0; ip saddr ${PGT_ADDR[1]} drop; }
}
NFT
t0=$(rs_now_ms)
echo "blackhole on: every packet to and from ${PGT_ADDR[1]} dropped"
faults_recovered_within 10000 "the store judged unavailable on a gateway" pgt_store_down_somewhere
sups_start 21 22 23 24
degraded_4() { [ $(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0)) -ge 4 ]; }
await "the 4 arrivals accepted degraded during the blackhole" 20 degraded_4
for m in 21 22 23 24; do log_has "$(sup_log "$m")" "event=attached" || fail "sup-$m not attached during the fault"; done
# The rest of the 30 s: the 20 must stay served; hold polls, no idle sleep.
left=$(((BLACKHOLE_S * 1000 - ($(rs_now_ms) - t0)) / 1000))
[ "$left" -gt 0 ] && hold "the 20 stay attached, the gateways alive, during the blackhole" "$left" \
	eval 'gw_alive 1 && gw_alive 2 && [ "$(($(metric 1 ringsteer_gateway_supervisors) + $(metric 2 ringsteer_gateway_supervisors)))" = 24 ]'
echo "during the blackhole ($(( ($(rs_now_ms) - t0) / 1000 )) s): $(pgt_counts)"
rs_ns nft delete table inet rsfault
echo "blackhole off"
FAULTS_N=24
faults_recovered_within $((2 * RS_TTL_MS)) "blackhole ended: the 4 recorded, gauges = ledger" pgt_recorded
faults_recovered_within $((2 * RS_TTL_MS)) "store_up 1 on both gateways" pgt_store_up_everywhere
pgt_untouched 20
echo "after: $(pgt_counts); claims +$(($(pgt_sum ringsteer_gateway_store_claims_total) - c0)), degraded accepts +$(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0))"
faults_check 21 22 23 24
echo "f_3: PostgreSQL blackholed 30 s: 20 untouched, 4 accepted degraded and recorded once the network came back"
