#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 3 of issue 25's matrix: SQLite on a small tmpfs filled to ENOSPC,
# then space freed.  Two gateways, 20 supervisors attached; the store's
# filesystem is filled; 4 supervisors arrive during the fault.  Wanted: the
# 20 stay where they are (nothing moved or lost), the 4 are accepted
# degraded (counted), and once space is freed the gateways record them
# (claims) within 2 x TTL, their gauges equal to the ledger, nothing
# unrecorded.
. "$(dirname "$0")/faults_lib.sh"

fs=$(mktemp -d "${TMPDIR:-/tmp}/storefs.XXXXXX")
mount -t tmpfs -o size=4m tmpfs "$fs" || { echo "skip: cannot mount a tmpfs"; exit 77; }
rs_down_hook() { umount -l "$fs" 2>/dev/null; }
RS_STORE_DIR=$fs
faults_up 2 20
faults_mark
d0=$(($(metric 1 ringsteer_gateway_degraded_accepts_total) + $(metric 2 ringsteer_gateway_degraded_accepts_total)))
dd if=/dev/zero of="$fs/fill" bs=64k 2>/dev/null # until ENOSPC
echo "store filesystem: $(df -h --output=used,avail "$fs" | tail -n 1)"
store_down() { [ "$(metric 1 ringsteer_gateway_store_up)" = 0 ] || [ "$(metric 2 ringsteer_gateway_store_up)" = 0 ]; }
RS_SUP_BOXES=() # arrivals during the fault
sups_start 21 22 23 24
degraded_4() {
	[ $(($(metric 1 ringsteer_gateway_degraded_accepts_total) + $(metric 2 ringsteer_gateway_degraded_accepts_total) - d0)) -ge 4 ]
}
await "the 4 arrivals accepted degraded while the store is full" 20 degraded_4
for m in 21 22 23 24; do
	log_has "$(sup_log "$m")" "event=attached" || fail "sup-$m not attached during the fault"
done
echo "errors while full: gw-1 $(metric 1 ringsteer_gateway_store_errors_total), gw-2 $(metric 2 ringsteer_gateway_store_errors_total); store_up gw-1=$(metric 1 ringsteer_gateway_store_up) gw-2=$(metric 2 ringsteer_gateway_store_up)"
rm -f "$fs/fill"
FAULTS_N=24
recorded() { all_attached $(seq 1 24) && gauges_match_ledger; }
faults_recovered_within $((2 * RS_TTL_MS + 2 * RS_HEARTBEAT_MS)) "space freed: the 4 recorded, gauges = ledger" recorded
for m in $(seq 1 20); do
	now="$(where "$m") $(session "$m" epoch)"
	[ "$now" = "${FAULTS_MARK[$m]}" ] || fail "sup-$m moved or lost: before [${FAULTS_MARK[$m]}] now [$now]"
done
echo "claims recorded: gw-1 $(metric 1 ringsteer_gateway_store_claims_total), gw-2 $(metric 2 ringsteer_gateway_store_claims_total)"
echo "f_2: SQLite full: 20 untouched, 4 accepted degraded and recorded once space came back"
