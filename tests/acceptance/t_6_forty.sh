#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 6: four gateways, 40 supervisors started at once: every gateway
# ends with exactly 10.
#
# Tokens are minted first, then the 40 processes start in one burst through
# the Service's random DNAT.  Once all 40 are attached (each process logged
# its attachment and the store's current session is it), each gateway must
# serve exactly 10, by the store and by its supervisors gauge, and that must
# hold for 1.5 s.
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --gateways 4
sups_start $(seq 1 40)
await "40 supervisors attached" 60 all_attached $(seq 1 40)
counts() { local n; for n in 1 2 3 4; do printf 'gw-%s=%s ' "$n" "$(count_on "$n")"; done; }
echo "after the burst: $(counts)"
ten_each() { local n; for n in 1 2 3 4; do count_is "$n" 10 || return 1; done; }
ten_each || fail "not 10 on each gateway: $(counts)"
gauge_ten() { local n; for n in 1 2 3 4; do metric_is "$n" ringsteer_gateway_supervisors 10 || return 1; done; }
await "each gateway's supervisors gauge at 10" 5 gauge_ten
hold "10 on each gateway" 1.5 ten_each
r=0
for n in 1 2 3 4; do r=$((r + $(metric "$n" ringsteer_gateway_redirects_total))); done
echo "t_6: 10 on each of 4 gateways ($r redirects)"
