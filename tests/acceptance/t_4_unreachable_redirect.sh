#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 4: a redirect to an unreachable peer endpoint: the supervisor
# returns to the Service with STAY and is accepted where it lands.
#
# gw-2 advertises a peer endpoint where nothing listens (--advertise-peer
# 127.0.1.222:7001: connection refused); the Service delivers only to gw-1.
# The member is one whose ring owner is gw-2, so gw-1 (both empty, cap 1)
# redirects it there.  The supervisor must log, in this order: redirected
# (target gw-2), dial_failed, then attached gateway=gw-1 via=service stay=1;
# the store shows it on gw-1 and nobody on gw-2; gw-1 counted a placement
# redirect and a stay, and logged both decisions; and it stays put for 1.5 s
# (beyond the reservation and the TTL).
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up
gw_start 1
gw_start 2 --advertise-peer 127.0.1.222:7001
svc_update 1

m=""
for i in $(seq 1 64); do
	if [ "$(ctl ring --gateways gw-1,gw-2 owner "sup-$i")" = gw-2 ]; then m=$i; break; fi
done
[ -n "$m" ] || fail "no member among sup-1..64 is owned by gw-2"
echo "sup-$m: ring owner gw-2"

sup_start "$m"
await "sup-$m attached" 20 sup_attached "$m"
log=$(sup_log "$m")
lr=$(grep -n 'event=redirected' "$log" | head -n 1 | cut -d: -f1)
lf=$(grep -n 'event=dial_failed' "$log" | head -n 1 | cut -d: -f1)
la=$(grep -n -E 'event=attached( |$)' "$log" | head -n 1 | cut -d: -f1)
[ -n "$lr" ] && grep 'event=redirected' "$log" | head -n 1 | grep -q 'target=gw-2' ||
	fail "sup-$m was not redirected to gw-2"
[ -n "$lf" ] && [ "$lf" -gt "$lr" ] || fail "sup-$m: no dial_failed after the redirect"
[ -n "$la" ] && [ "$la" -gt "$lf" ] || fail "sup-$m: no attachment after the failed dial"
att=$(sed -n "${la}p" "$log")
grep -q 'gateway=gw-1 via=service stay=1' <<<"$att" || fail "sup-$m: first attachment not gw-1 via the Service with STAY: $att"
is_on "$m" 1 || fail "sup-$m is on $(where "$m")"
count_is 2 0 || fail "gw-2 serves $(count_on 2)"
[ "$(metric 1 ringsteer_gateway_redirects_total 'reason="placement"')" -ge 1 ] || fail "gw-1 counted no placement redirect"
[ "$(metric 1 ringsteer_gateway_stays_total)" -ge 1 ] || fail "gw-1 counted no stay"
glog=$(gw_log 1)
log_has "$glog" "event=decision member=sup-$m .*outcome=redirect" || fail "gw-1 logged no redirect decision for sup-$m"
log_has "$glog" "event=decision member=sup-$m .*outcome=accept" || fail "gw-1 logged no accept decision for sup-$m"
hold "sup-$m stays on gw-1" 1.5 is_on "$m" 1
echo "t_4: $(sed -n "${lr}p;${lf}p;${la}p" "$log" | sed 's/^ts=[^ ]* //' | tr '\n' '|')"
