#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 43: the gateways' latency histograms (issue 28, part 5) count
# exactly what happened, on a cluster of 2 gateways and 8 supervisors.
#
# a. Arrivals: six supervisors dial gw-1 directly (the rule sends those it
#    places on gw-2 there: placement redirects, at least one since gw-1
#    cannot hold six under the cap), two through the Service.  On each
#    gateway ringsteer_gateway_admission_seconds_count equals the HELLOs it
#    answered with ACCEPT or REDIRECT (accepts + placement redirects +
#    degraded accepts), and over both, 8 + the redirects.
# b. A drain: `ringsteerctl drain gw-1` hands its K supervisors to gw-2;
#    handoff_seconds_count on gw-1 is then K (= handoffs completed = drain
#    redirects), and gw-2 answered K more HELLOs.
# c. Store calls: store_seconds_count{kind="admit"} equals the admission
#    transactions each gateway handed out (none cancelled here), gw-1's
#    {kind="draining"} is 1 (its row marked once), heartbeats were timed.
# Every histogram series on both pages is well formed: buckets never fall
# as le grows, and +Inf equals _count.
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --gateways 2

# hist_ok N: every histogram series on gw-N's page is cumulative and its
# +Inf bucket is its _count.
hist_ok() {
	local page
	page=$(rs_ns curl -fsS --max-time 2 "http://$(gw_addr "$1"):$RS_GW_METRICS_PORT/metrics") || return 1
	printf '%s\n' "$page" | awk '
		/^#/ { next }
		$1 ~ /_bucket\{/ {
			s = $1; sub(/,?le="[^"]*"/, "", s); sub(/_bucket/, "", s)
			if ((s in last) && $2 + 0 < last[s]) { print "falls: " $0; bad = 1 }
			last[s] = $2 + 0
			if ($1 ~ /le="\+Inf"/) inf[s] = $2 + 0
			next
		}
		$1 ~ /_count\{/ { s = $1; sub(/_count/, "", s); cnt[s] = $2 + 0 }
		END {
			for (s in inf) if (!(s in cnt) || cnt[s] != inf[s]) { print "+Inf != _count: " s; bad = 1 }
			n = 0; for (s in inf) n++
			if (n < 9) { print "only " n " histogram series"; bad = 1 }
			exit bad
		}'
}

# answered N: the HELLOs gw-N answered with ACCEPT or REDIRECT, by its counters.
answered() {
	echo $(($(metric "$1" ringsteer_gateway_placements_total 'outcome="accept"') +
		$(metric "$1" ringsteer_gateway_redirects_total 'reason="placement"') +
		$(metric "$1" ringsteer_gateway_degraded_accepts_total)))
}
admissions() { metric "$1" ringsteer_gateway_admission_seconds_count; }
admissions_match() { [ "$(admissions "$1")" = "$(answered "$1")" ]; }

# a. arrivals
RS_SUP_SERVICE=$(gw_addr 1):$RS_GW_LISTEN_PORT sups_start 1 2 3 4 5 6
sups_start 7 8
await "eight supervisors attached" 20 all_attached 1 2 3 4 5 6 7 8
await "gw-1: admissions timed = HELLOs answered" 5 admissions_match 1
await "gw-2: admissions timed = HELLOs answered" 5 admissions_match 2
redirects=$(($(metric 1 ringsteer_gateway_redirects_total 'reason="placement"') +
	$(metric 2 ringsteer_gateway_redirects_total 'reason="placement"')))
accepts=$(($(metric 1 ringsteer_gateway_placements_total 'outcome="accept"') +
	$(metric 2 ringsteer_gateway_placements_total 'outcome="accept"')))
total=$(($(admissions 1) + $(admissions 2)))
[ "$redirects" -ge 1 ] || fail "no placement redirect (six dialed gw-1 directly)"
[ "$accepts" -eq 8 ] || fail "$accepts accepts for 8 supervisors (a redial?)"
[ "$total" -eq $((8 + redirects)) ] || fail "admission_seconds_count over both gateways is $total, want 8 + $redirects"
echo "a: 8 attached, $redirects placement redirects: admission_seconds_count $(admissions 1) + $(admissions 2) = $total"

# b. a drain of gw-1 (by hand: it stays up, so its page can be read after)
k=$(metric 1 ringsteer_gateway_supervisors)
[ "$k" -ge 1 ] || fail "gw-1 holds no supervisor to hand off"
before2=$(admissions 2)
[ "$(metric 1 ringsteer_gateway_handoff_seconds_count)" = 0 ] || fail "handoffs timed before any drain"
ctl drain gw-1 --store "$RS_STORE" >/dev/null || fail "ringsteerctl drain gw-1"
await "gw-1 empty" 15 metric_is 1 ringsteer_gateway_supervisors 0
await "eight supervisors attached after the drain" 15 all_attached 1 2 3 4 5 6 7 8
await "gw-1: $k handoffs timed" 5 metric_is 1 ringsteer_gateway_handoff_seconds_count "$k"
completed=$(metric 1 ringsteer_gateway_handoffs_total 'result="completed"')
drains=$(metric 1 ringsteer_gateway_redirects_total 'reason="drain"')
[ "$completed" -eq "$k" ] || fail "gw-1 completed $completed handoffs, want $k"
[ "$drains" -eq "$k" ] || fail "gw-1 sent $drains drain redirects, want $k"
await "gw-2 answered the $k handed-off HELLOs" 5 metric_is 2 ringsteer_gateway_admission_seconds_count $((before2 + k))
await "gw-2: admissions timed = HELLOs answered" 5 admissions_match 2
echo "b: drain of gw-1: handoff_seconds_count $k = completed $completed = drain redirects $drains; gw-2 admissions $before2 -> $((before2 + k))"

# c. store calls by kind
for n in 1 2; do
	want=$(metric "$n" ringsteer_gateway_store_admission_transactions_total)
	await "gw-$n: store_seconds{kind=admit} count = $want transactions" 5 \
		metric_is "$n" ringsteer_gateway_store_seconds_count "$want" 'kind="admit"'
	metric_ge "$n" ringsteer_gateway_store_seconds_count 1 'kind="heartbeat"' || fail "gw-$n: no heartbeat timed"
	sum=$(metric "$n" ringsteer_gateway_store_seconds_sum 'kind="heartbeat"')
	awk -v s="$sum" 'BEGIN { exit !(s > 0) }' || fail "gw-$n: heartbeats timed at $sum s in all"
done
[ "$(metric 1 ringsteer_gateway_store_seconds_count 'kind="draining"')" = 1 ] ||
	fail "gw-1: $(metric 1 ringsteer_gateway_store_seconds_count 'kind="draining"') draining writes timed, want 1"
echo "c: store_seconds{kind=admit} = admission transactions ($(metric 1 ringsteer_gateway_store_seconds_count 'kind="admit"'), $(metric 2 ringsteer_gateway_store_seconds_count 'kind="admit"')); draining 1 on gw-1"

hist_ok 1 || fail "gw-1: a malformed histogram: $(hist_ok 1)"
hist_ok 2 || fail "gw-2: a malformed histogram: $(hist_ok 2)"
echo "t_43: admission, handoff and store histograms count what happened, and are well formed"
