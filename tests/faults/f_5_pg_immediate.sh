#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 1c of issue 25's matrix: PostgreSQL (over TCP on a veth,
# tests/faults/pg_tcp.sh) stopped with `pg_ctl -m immediate` (every
# backend killed, no checkpoint: a crash), then started again (crash
# recovery).  Three gateways, 20 supervisors attached; 4 arrive while the
# server is down.  Wanted: the store judged unavailable (connections lost,
# then refused), the 20 stay where they are, the 4 accepted degraded
# (counted); once the server is back the gateways connect again and record
# them (claims) within 2 x TTL, gauges equal to the ledger.
. "$(dirname "$0")/faults_lib.sh"
. "$(dirname "$0")/pg_tcp.sh"

pgt_faults_up 3 20
faults_mark
d0=$(pgt_sum ringsteer_gateway_degraded_accepts_total)
c0=$(pgt_sum ringsteer_gateway_store_claims_total)
pgt_stop_immediate 1
echo "PostgreSQL stopped (-m immediate)"
faults_recovered_within $((2 * RS_TTL_MS)) "the store judged unavailable on a gateway" pgt_store_down_somewhere
sups_start 21 22 23 24
degraded_4() { [ $(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0)) -ge 4 ]; }
await "the 4 arrivals accepted degraded while the server is down" 20 degraded_4
for m in 21 22 23 24; do log_has "$(sup_log "$m")" "event=attached" || fail "sup-$m not attached during the fault"; done
hold "the 24 served while the server is down" 2 \
	eval '[ "$(($(metric 1 ringsteer_gateway_supervisors) + $(metric 2 ringsteer_gateway_supervisors) + $(metric 3 ringsteer_gateway_supervisors)))" = 24 ]'
echo "while down: $(pgt_counts)"
pgt_start 1
echo "PostgreSQL started again (crash recovery done: pg_ctl -w returned)"
FAULTS_N=24
faults_recovered_within $((2 * RS_TTL_MS)) "server back: the 4 recorded, gauges = ledger" pgt_recorded
faults_recovered_within $((2 * RS_TTL_MS)) "store_up 1 on every gateway" pgt_store_up_everywhere
pgt_untouched 20
echo "after: $(pgt_counts); claims +$(($(pgt_sum ringsteer_gateway_store_claims_total) - c0)), degraded accepts +$(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0))"
faults_check 21 22 23 24
echo "f_5: PostgreSQL crashed and restarted: 20 untouched, 4 accepted degraded and recorded once it was back"
