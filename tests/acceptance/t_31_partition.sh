#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 31: liveness under a lasting partition (issue 17).  A
# supervisor whose Service fallbacks (STAY without REDIRECTED after a failed
# redirect) keep landing on a gateway at its cap, every redirect target
# unreachable, is accepted above the cap on its third round in a row there:
# liveness beats balance.  Counted (over_cap_accepts_total) and logged once.
#
# t_23's scenario: gw-2 and gw-3 registered and heartbeating but advertising
# peer endpoints where nothing listens; the Service delivers only to gw-1,
# which sup-A (owned by gw-1) fills to its cap.  sup-X, owned by gw-2, is
# redirected to gw-2 (fails), falls back with STAY: refused at the cap,
# sent to gw-3 (fails), falls back again: refused, sent to gw-2 (fails);
# the third fallback is accepted on gw-1 above the cap.  Checked: sup-X
# attached to gw-1 after exactly 3 failed redirects, gw-1's
# over_cap_accepts_total is 1 and its log has one event=over_cap_accept for
# sup-X (rounds=3), and it stays so (nothing moves it, nobody else counted).
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
# Rounds wait the supervisor's backoff (1 s, then 2 s, +-20%).
await "sup-$x attached to gw-1 (liveness)" 20 all_attached "$x"
is_on "$x" 1 || fail "sup-$x attached to $(where "$x"), not gw-1"
failed=$(log_count "$(sup_log "$x")" 'event=dial_failed via=redirect')
[ "$failed" = 3 ] || fail "sup-$x attached after $failed failed redirects, not 3"
metric_is 1 ringsteer_gateway_over_cap_accepts_total 1 ||
	fail "over_cap_accepts_total on gw-1: $(metric 1 ringsteer_gateway_over_cap_accepts_total), not 1"
logged() { log_count "$(gw_log 1)" "event=over_cap_accept member=sup-$x "; }
[ "$(logged)" = 1 ] || fail "gw-1 logged $(logged) over_cap_accept lines for sup-$x, not 1"
log_has "$(gw_log 1)" "event=over_cap_accept member=sup-$x rounds=3 " || fail "the over_cap_accept line does not say rounds=3"
still() {
	is_on "$x" 1 && is_on "$a" 1 && [ "$(logged)" = 1 ] && metric_is 1 ringsteer_gateway_over_cap_accepts_total 1
}
hold "sup-$x stays on gw-1, counted once" 2 still
echo "t_31: sup-$x attached to gw-1 above the cap after $failed failed redirects; loads $(loads 1 2 3)"
