#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault 6 of issue 25's matrix: a half-open supervisor link.  Every packet
# of sup-1's attached connection is dropped in the namespace (nft, both
# directions, no RST: what a dead node or a cut cable leaves), the rest of
# the fleet untouched.  Wanted: the gateway ends that session within three
# of its heartbeats (its gauge and the ledger drop sup-1's old epoch), sup-1
# is placed again on a new connection (within 2 x TTL), and nobody else
# moved; gauges equal the ledger after.
. "$(dirname "$0")/faults_lib.sh"

faults_up 3 20
faults_mark
gw=$(where 1)
gwn=${gw#gw-}
epoch=$(session 1 epoch)
# Its one established connection: to the gateway's peer port after a
# redirect, or to the Service address (the socket keeps the address it
# dialed; the DNAT is conntrack's), so by its source address alone.
port=$(rs_ns ss -Htn state established "( src $(sup_addr 1) )" | awk '{ n = split($3, a, ":"); print a[n] }')
[ "$(printf '%s\n' "$port" | grep -c .)" = 1 ] || fail "sup-1 has not exactly one established connection: [$port]"
before=$(metric "$gwn" ringsteer_gateway_supervisors)
echo "sup-1 on $gw (epoch $epoch, source port $port); $gw serves $before"
rs_ns nft -f - <<NFT || fail "nft"
table inet rsfault {
	chain out { type filter hook output priority 0; tcp sport $port drop; tcp dport $port drop; }
}
NFT
old_gone() { [ "$(session 1 epoch)" != "$epoch" ]; }
faults_recovered_within $((3 * RS_HEARTBEAT_MS + RS_TTL_MS)) "the half-open session replaced in the ledger" old_gone
faults_recovered_within $((2 * RS_TTL_MS)) "sup-1 attached again" all_attached 1
echo "sup-1 now on $(where 1) (epoch $(session 1 epoch)); $(grep -cE 'event=disconnected' "$(sup_log 1)") disconnect(s) logged"
rs_ns nft delete table inet rsfault
faults_check 1
echo "f_1: half-open link ended and sup-1 placed again; 19 others untouched"
