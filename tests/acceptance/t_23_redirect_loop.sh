#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 23: two unreachable redirect targets do not make a supervisor
# spin (found by the soak: two gateways SIGKILLed within one TTL).
#
# gw-2 and gw-3 are registered and heartbeating but advertise peer endpoints
# where nothing listens (127.0.1.222:7001, 127.0.1.223:7001); the Service
# delivers only to gw-1.  sup-A, owned by gw-1 on the ring, fills gw-1 to its
# cap.  sup-X, owned by gw-2, is then redirected to gw-2, fails, falls back
# to the Service with STAY; gw-1 is at its cap, so the store places it again
# without gw-2 (store.h: a Service fallback), on gw-3, which fails too, and
# so on.  Before the fix the supervisor went back at once every time: about
# 1,200 failed redirects a second in the soak, a store transaction each.
# Now the second failed redirect in a row, and every one after it until an
# attach, waits the backoff (1 s doubling, +-20%), and the third fallback
# refused in a row on gw-1 is accepted there above the cap (issue 17:
# liveness beats balance; t_31 checks its count and log line).  Checked:
# at least 2 failed redirects (the loop is there), a retry line with
# stay=1, and the attach on gw-1 after exactly 3 failed redirects, with no
# more failed redirects afterwards (it does not spin on).
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up
gw_start 1
gw_start 2 --advertise-peer 127.0.1.222:7001
gw_start 3 --advertise-peer 127.0.1.223:7001
svc_update 1

a=$(owned_by gw-1 1 gw-1,gw-2,gw-3) || fail "no member owned by gw-1"
x=$(owned_by gw-2 1 gw-1,gw-2,gw-3) || fail "no member owned by gw-2"
sup_start "$a"
await "sup-$a attached to gw-1" 10 is_on "$a" 1

sup_start "$x"
failed() { log_count "$(sup_log "$x")" 'event=dial_failed via=redirect'; }
await "sup-$x fails a redirect twice" 5 bash -c "[ \$(grep -c 'event=dial_failed via=redirect' '$(sup_log "$x")') -ge 2 ]"
await "sup-$x attached (third round)" 20 all_attached "$x"
n=$(failed)
[ "$n" = 3 ] || fail "sup-$x attached after $n failed redirects, not 3"
log_has "$(sup_log "$x")" 'event=retry in_ms=[0-9]+ stay=1' || fail "sup-$x did not back off"
is_on "$x" 1 || fail "sup-$x attached to $(where "$x"), not gw-1"
no_spin() { [ "$(failed)" = 3 ] && is_on "$x" 1; }
hold "sup-$x stays attached, no more failed redirects" 2 no_spin
echo "t_23: sup-$x failed $n redirects, backed off, attached at $(where "$x")"
