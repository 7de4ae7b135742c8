#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drain acceptance 5: a gateway joins: nobody moves.  Three gateways, 30
# supervisors; gw-4 starts (awaited ready, then in the Service).
#
# Before the join: all 30 attached, and the ledger's current row of each
# member (epoch, gateway) and each supervisor's count of event=attached lines
# are recorded.  After: for 2 s (> the session TTL, polled) every member's
# current row has the same epoch and gateway, each supervisor's attachment
# count is unchanged, gw-4 serves 0 in the ledger; then gw-4's own
# ringsteer_gateway_supervisors gauge is 0 and it logged no decision.
. "$(dirname "$0")/../cluster/lib.sh"

SUPS=30
all=$(seq 1 $SUPS)

cluster_up --gateways 3
sups_start $all
await "$SUPS supervisors attached" 60 all_attached $all
echo "before the join: loads gw-1..3 = $(loads 1 2 3)"
before=$(current_map | awk '{ print $1, $2, $3 }')
[ "$(echo "$before" | grep -c .)" -eq $SUPS ] || fail "ledger: $(echo "$before" | grep -c .) current rows, want $SUPS"
counts=$(sup_attach_counts $all)

unmoved() {
	[ "$(current_map | awk '{ print $1, $2, $3 }')" = "$before" ] &&
		[ "$(sup_attach_counts $all)" = "$counts" ] &&
		[ "$(loads 4)" -eq 0 ]
}
gw_start 4
hold "nobody moved after gw-4 joined (epochs, gateways, attachments; gw-4 serves 0)" 2 unmoved
metric_is 4 ringsteer_gateway_supervisors 0 || fail "gw-4's supervisors gauge is $(metric 4 ringsteer_gateway_supervisors)"
log_has "$(gw_log 4)" 'event=decision' && fail "gw-4 decided: $(grep -m 3 'event=decision' "$(gw_log 4)")"
echo "t_12: gw-4 joined, nobody moved for 2 s; loads gw-1..4 = $(loads 1 2 3 4)"
