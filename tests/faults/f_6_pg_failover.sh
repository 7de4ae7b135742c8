#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 2 of issue 25's matrix: PostgreSQL failover.  A primary and a
# streaming standby made with `pg_basebackup -R`, each on its own address
# on the veth (tests/faults/pg_tcp.sh); the gateways' URL names both hosts
# (postgres://h1:p,h2:p/db: the store asks target_session_attrs=read-write,
# so libpq skips the standby while it is one).  Two gateways, 20
# supervisors attached; the standby has replayed the ledger; the primary is
# killed (-m immediate), 4 arrive (accepted degraded: no writable host),
# then the standby is promoted (`pg_ctl promote`).  Wanted: the 20 stay,
# the gateways find the promoted server and record the 4 there within
# 2 x TTL, gauges equal its ledger, and a new arrival after the promotion
# is placed by the store and its row is on the promoted server.
. "$(dirname "$0")/faults_lib.sh"
. "$(dirname "$0")/pg_tcp.sh"

pgt_faults_up 2 20 2
faults_mark
d0=$(pgt_sum ringsteer_gateway_degraded_accepts_total)
c0=$(pgt_sum ringsteer_gateway_store_claims_total)
# The marked ledger on the standby before the primary dies (replication is
# asynchronous: what it has not replayed a real failover would lose).
lsn=$(pgt_sql 1 "SELECT pg_current_wal_lsn()") || fail "primary's WAL position"
await "the standby replayed the ledger ($lsn)" 10 \
	eval "[ \"\$(pgt_sql 2 \"SELECT pg_last_wal_replay_lsn() >= '$lsn'\")\" = t ]"
pgt_stop_immediate 1
echo "primary ${PGT_ADDR[1]} killed (-m immediate); standby ${PGT_ADDR[2]} still read-only"
faults_recovered_within $((2 * RS_TTL_MS)) "the store judged unavailable on a gateway" pgt_store_down_somewhere
sups_start 21 22 23 24
degraded_4() { [ $(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0)) -ge 4 ]; }
await "the 4 arrivals accepted degraded while no host is writable" 20 degraded_4
for m in 21 22 23 24; do log_has "$(sup_log "$m")" "event=attached" || fail "sup-$m not attached during the fault"; done
echo "primary down: $(pgt_counts)"
pgt_promote 2
[ "$(pgt_sql 2 "SELECT pg_is_in_recovery()")" = f ] || fail "the standby is still in recovery after pg_ctl promote"
echo "standby promoted"
RS_STORE="postgres:///$PGT_DB?host=${PGT_DIR[2]}" # the test reads the promoted server from now on
FAULTS_N=24
faults_recovered_within $((2 * RS_TTL_MS)) "promoted: the 4 recorded there, gauges = its ledger" pgt_recorded
faults_recovered_within $((2 * RS_TTL_MS)) "store_up 1 on both gateways" pgt_store_up_everywhere
pgt_untouched 20
sups_start 25
await "sup-25 attached after the promotion" 10 sup_attached 25
log_has "$(gw_log 1)" "event=decision member=sup-25 " || log_has "$(gw_log 2)" "event=decision member=sup-25 " ||
	fail "sup-25 was not placed by the store"
row=$(pgt_sql 2 "SELECT gateway_id || ' ' || epoch FROM sessions WHERE member_id = 'sup-25'" "$PGT_DB")
[ "$row" = "$(where 25) $(session 25 epoch)" ] && [ -n "$row" ] || fail "sup-25's row on the promoted server: [$row]"
echo "sup-25 placed by the store after the promotion; its row on ${PGT_ADDR[2]}: $row"
echo "after: $(pgt_counts); claims +$(($(pgt_sum ringsteer_gateway_store_claims_total) - c0)), degraded accepts +$(($(pgt_sum ringsteer_gateway_degraded_accepts_total) - d0))"
FAULTS_N=25
faults_check 21 22 23 24 25
echo "f_6: failover to the promoted standby: 20 untouched, 4 accepted degraded and recorded on it, a new arrival placed there"
