#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 18: the store goes down and comes back (issue 8).  Attached
# supervisors stay served; arrivals are accepted where they land (degraded,
# counted, logged); when the store answers again the gateways record what
# happened meanwhile (claims), with nobody reconnecting and nothing
# restarted.
#
# Run 1 (2 gateways, --store-timeout 100): 4 supervisors attach, 2 on each.
# The store goes down: each gateway's store_up reads 0, and for the whole
# outage sup-1..4 log no new attachment and the gateways keep serving all of
# them; sup-5..8 start and are all accepted degraded wherever the Service put
# them (degraded_accepts_total sums to 4).  /healthz latency is sampled all
# along and every failed store call logs how long it held the loop: the
# worst of each is printed, and a stall past 400 ms fails (supervisors give
# up after 3 heartbeats, 600 ms here).  The store
# comes back: store_up 1 again, the 8 sessions are in the store on the
# gateways the supervisors say they are attached to, claims recorded = 4;
# sup-9 is then placed by the rule (a decision, not degraded).  Last, the
# store goes down again and gw-1 is stopped: its drain cannot hand anyone
# off, does not spin (its store errors stay at about one per heartbeat) and
# ends at the drain budget; its supervisors, closed, land on gw-2 degraded
# and are recorded there when the store is back.
#
# Run 2: a supervisor accepted degraded on gw-1 reconnects elsewhere before
# the store returns (a second process of the same member, through a Service
# that points at gw-2 only, while the first keeps its link to gw-1).  gw-1
# heartbeats every 3 s, gw-2 every 200 ms, and the store comes back right
# after one of gw-1's failed heartbeats, so gw-2 claims the newer epoch
# first: gw-1's claim comes back -ESTALE and gw-1 closes its degraded
# session as superseded (claims_total{result="superseded"} = 1).
#
# The outage is store_down/store_up below: a held SQLite lock here; against
# PostgreSQL (RS_PG_DIR) the server is stopped and started.
. "$(dirname "$0")/../cluster/lib.sh"

RS_GW_ARGS="${RS_GW_ARGS:-} --store-timeout 100"

# Against PostgreSQL the outage stops a server: this test's own, never the
# one the other tests share (a failure mid-outage would leave it down).
pg_own=""
if [ -n "${RS_PG_DIR:-}" ]; then
	pg_own=$(mktemp -d /tmp/rs-pg18.XXXXXX) || exit 1
	"$(dirname "$0")/../pg/pg_server.sh" start "$pg_own" >/dev/null || { rm -rf "$pg_own"; exit 1; }
	RS_PG_DIR=$pg_own
fi
pg_own_stop() { [ -z "$pg_own" ] || "$(dirname "$0")/../pg/pg_server.sh" stop "$pg_own" >/dev/null 2>&1; }
own_trap() { trap 'cluster_down; rc=$?; pg_own_stop; exit $rc' EXIT; }
artifacts=${RS_ARTIFACTS:-}

# --- the outage ----------------------------------------------------------------

pg_ctl_run() { # ARGS...: pg_ctl on the tests' server (tests/pg/pg_server.sh)
	local bindir
	for bindir in /usr/lib/postgresql/*/bin; do :; done
	runuser -u "${PG_SYSTEM_USER:-postgres}" -- "$bindir/pg_ctl" -D "$RS_PG_DIR/data" "$@"
}

store_down() {
	if [ -n "${RS_PG_DIR:-}" ]; then
		pg_ctl_run -m fast -w -t 30 stop >/dev/null || fail "could not stop PostgreSQL"
		rs_log "store down (PostgreSQL stopped)"
	else
		store_lock
	fi
}

store_up() {
	if [ -n "${RS_PG_DIR:-}" ]; then
		pg_ctl_run -l "$RS_PG_DIR/server.log" -w -t 30 \
			-o "-c listen_addresses='' -c unix_socket_directories='$RS_PG_DIR' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
			start >/dev/null || fail "could not start PostgreSQL"
		rs_log "store up (PostgreSQL started)"
	else
		store_unlock
	fi
}

# --- predicates ----------------------------------------------------------------

# sum NAME [LABELMATCH] N...: the metric summed over gw-N...
sum() {
	local name=$1 lm=$2 n t=0 v
	shift 2
	for n in "$@"; do
		v=$(metric "$n" "$name" "$lm") || return 1
		t=$((t + v))
	done
	echo "$t"
}
sum_is() { [ "$(sum "$1" "$2" "${@:4}")" = "$3" ]; } # NAME LABELMATCH VALUE N...
# logged_attached M...: each sup-M's current log has an attachment.
logged_attached() {
	local m
	for m in "$@"; do [ "$(sup_attach_count "$m")" -ge 1 ] || return 1; done
}
loop_max=0
# sample_loop N...: /healthz latency of each gw-N, the worst kept in loop_max.
sample_loop() {
	local n ms
	for n in "$@"; do
		ms=$(gw_loop_ms "$n")
		[ "$ms" -gt "$loop_max" ] && loop_max=$ms
	done
	return 0
}

# --- run 1 ---------------------------------------------------------------------

[ -n "$artifacts" ] && RS_ARTIFACTS="$artifacts/run1"
RS_GW_ARGS="$RS_GW_ARGS --drain-budget 2000"
cluster_up --gateways 2
own_trap
sups_start 1 2 3 4
await "sup-1..4 attached" 20 all_attached 1 2 3 4
two_each() { [ "$(loads 1 2)" = "2 2" ]; }
await "2 supervisors on each gateway" 5 two_each
before=$(sup_attach_counts 1 2 3 4)

store_down
down_at=$(rs_now_ms)
await "gw-1 reports the store down" 5 metric_is 1 ringsteer_gateway_store_up 0
await "gw-2 reports the store down" 5 metric_is 2 ringsteer_gateway_store_up 0

# Attached supervisors stay served for the whole outage.
served() {
	sample_loop 1 2
	[ "$(sup_attach_counts 1 2 3 4)" = "$before" ] || return 1
	[ "$(sum ringsteer_gateway_supervisors "" 1 2)" -ge 4 ]
}
sups_start 5 6 7 8
arrived() { served && logged_attached 5 6 7 8; }
await "sup-5..8 accepted during the outage" 10 arrived
hold "sup-1..4 stay attached, everyone served, store down" 1.5 served
sum_is ringsteer_gateway_supervisors "" 8 1 2 || fail "the gateways serve $(sum ringsteer_gateway_supervisors "" 1 2), not 8"
sum_is ringsteer_gateway_degraded_accepts_total "" 4 1 2 ||
	fail "degraded accepts: $(sum ringsteer_gateway_degraded_accepts_total "" 1 2), not 4"
sum_is ringsteer_gateway_unrecorded_supervisors "" 4 1 2 || fail "not 4 unrecorded supervisors"
metric_is 1 ringsteer_gateway_store_up 0 && metric_is 2 ringsteer_gateway_store_up 0 ||
	fail "store_up went back to 1 while the store was down"
for m in 5 6 7 8; do
	g=$(sup_last "$m" gateway)
	log_has "$(gw_log "${g#gw-}")" "event=degraded_accept member=sup-$m " || fail "$g logged no degraded_accept for sup-$m"
done
outage_ms=$(($(rs_now_ms) - down_at))
echo "outage 1: ${outage_ms} ms; sup-5..8 on: $(for m in 5 6 7 8; do sup_last "$m" gateway; done | tr '\n' ' ')"

store_up
await "gw-1 reports the store up" 5 metric_is 1 ringsteer_gateway_store_up 1
await "gw-2 reports the store up" 5 metric_is 2 ringsteer_gateway_store_up 1
await "the 8 sessions in the store where their supervisors are" 10 all_attached 1 2 3 4 5 6 7 8
await "4 claims recorded" 5 sum_is ringsteer_gateway_store_claims_total 'result="recorded"' 4 1 2
sum_is ringsteer_gateway_store_claims_total 'result="superseded"' 0 1 2 || fail "a claim was superseded"
sum_is ringsteer_gateway_unrecorded_supervisors "" 0 1 2 || fail "unrecorded supervisors left after the claims"
attached_is 8 || fail "the store counts $(count_attached) sessions, not 8"
[ "$(sup_attach_counts 1 2 3 4)" = "$before" ] || fail "sup-1..4 reattached: $(sup_attach_counts 1 2 3 4)"
loop1=$loop_max
# Each failed store call logs how long it held the loop (ms=): the stall.
stall1=$(cat "$(gw_log 1)" "$(gw_log 2)" | sed -n 's/.* event=store_error .* ms=\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
[ -n "$stall1" ] && [ "$stall1" -le 400 ] || fail "a store call held a gateway's loop ${stall1:-?} ms (supervisors time out at 600)"
echo "worst /healthz latency during outage 1: ${loop1} ms; longest failed store call: ${stall1} ms; loads after: $(loads 1 2)"

# Back to normal: a new arrival is placed by the rule.
sup_start 9
await "sup-9 attached" 10 all_attached 9
g=$(where 9)
log_has "$(gw_log 1)" "event=decision member=sup-9 " || log_has "$(gw_log 2)" "event=decision member=sup-9 " ||
	fail "no placement decision logged for sup-9"
! grep -q "event=degraded_accept member=sup-9 " "$(gw_log 1)" "$(gw_log 2)" || fail "sup-9 was accepted degraded"
sum_is ringsteer_gateway_degraded_accepts_total "" 4 1 2 || fail "degraded accepts grew after the store came back"
echo "sup-9 placed on $g by the rule"

# A drain while the store is down: nobody can be handed off; the budget ends it.
on1=$(metric 1 ringsteer_gateway_supervisors)
[ "$on1" -ge 1 ] || fail "gw-1 serves nobody before its drain"
loop_max=0
store_down
await "gw-1 reports the store down again" 5 metric_is 1 ringsteer_gateway_store_up 0
errs=$(log_count "$(gw_log 1)" 'event=store_error')
t0=$(rs_now_ms)
gw_stop 1
drain_ms=$(($(rs_now_ms) - t0))
glog=$(gw_log 1)
log_has "$glog" 'event=draining .*recorded=0' || fail "gw-1 did not log a drain unrecorded in the store"
[ "$(log_count "$glog" 'event=handoff_abandoned')" -eq "$on1" ] ||
	fail "gw-1 abandoned $(log_count "$glog" 'event=handoff_abandoned') supervisors, not $on1"
log_has "$glog" 'event=decision .*reason=drain-handoff' && fail "gw-1 handed someone off without a store"
errs=$(($(log_count "$glog" 'event=store_error') - errs))
[ "$errs" -le $((drain_ms / 200 + 5)) ] || fail "gw-1 logged $errs store errors in a ${drain_ms} ms drain: it spins"
echo "drain with the store down: ${drain_ms} ms, $on1 abandoned, $errs store errors"
on_gw2() {
	sample_loop 2
	local m
	for m in 1 2 3 4 5 6 7 8 9; do [ "$(sup_last "$m" gateway)" = gw-2 ] || return 1; done
}
await "every supervisor attached to gw-2" 15 on_gw2
store_up
await "gw-2 reports the store up" 5 metric_is 2 ringsteer_gateway_store_up 1
await "the 9 sessions in the store, all on gw-2" 10 all_attached 1 2 3 4 5 6 7 8 9
count_is 2 9 || fail "gw-2 holds $(count_on 2), not 9"
loop2=$loop_max
echo "worst /healthz latency on gw-2 during outage 2: ${loop2} ms"
cluster_down || { pg_own_stop; exit 1; }

# --- run 2 ---------------------------------------------------------------------

[ -n "$artifacts" ] && RS_ARTIFACTS="$artifacts/run2"
RS_TTL_MS=10000
RS_GW_ARGS="${RS_GW_ARGS% --drain-budget 2000}"
cluster_up
own_trap
gw_start 1 --heartbeat 3000
gw_start 2
x=1
store_down
svc_update 1
sup_start "$x"
await "sup-$x accepted by gw-1 during the outage" 10 logged_attached "$x"
[ "$(sup_last "$x" gateway)" = gw-1 ] || fail "sup-$x attached to $(sup_last "$x" gateway)"
log_has "$(gw_log 1)" "event=degraded_accept member=sup-$x " || fail "gw-1 did not accept sup-$x degraded"

# The same member, again, elsewhere: a second process through a Service
# that now leads to gw-2 only (the first keeps its link to gw-1).
svc_update 2
twin_log="$RS_DIR/log/sup-$x-twin.log"
rs_ns "$RS_BUILD/ringsteer-supervisor" --id "sup-$x" --service "$RS_SERVICE" --token-file "$RS_DIR/sup-$x.token" \
	--sandboxes 2 --bind "$(sup_addr $((100 + x)))" $(rs_sup_transport_args "$x") >"$twin_log" 2>&1 &
disown "$!"
await "the second sup-$x accepted by gw-2" 10 grep -qE 'event=attached .*gateway=gw-2' "$twin_log"
log_has "$(gw_log 2)" "event=degraded_accept member=sup-$x " || fail "gw-2 did not accept sup-$x degraded"
twin_epoch=$(grep -E 'event=attached( |$)' "$twin_log" | tail -n 1 | logfield epoch)
[ "$twin_epoch" -gt "$(sup_last "$x" epoch)" ] || fail "the second process's epoch is not newer"

# Back right after one of gw-1's failed heartbeats: gw-2 claims first.
hb=$(log_count "$(gw_log 1)" 'event=store_error op=heartbeat')
hb_failed() { [ "$(log_count "$(gw_log 1)" 'event=store_error op=heartbeat')" -gt "$hb" ]; }
await "a failed heartbeat on gw-1" 10 hb_failed
store_up
twin_recorded() { [ "$(where "$x")" = gw-2 ] && [ "$(session "$x" epoch)" = "$twin_epoch" ]; }
await "gw-2 records the newer sup-$x" 5 twin_recorded
metric_is 1 ringsteer_gateway_store_claims_total 0 'result="recorded"' || fail "gw-1 claimed before gw-2"
await "gw-1's claim superseded" 10 metric_is 1 ringsteer_gateway_store_claims_total 1 'result="superseded"'
log_has "$(gw_log 1)" "event=claim member=sup-$x .*result=superseded" || fail "gw-1 logged no superseded claim"
await "gw-1 closed its degraded sup-$x" 5 metric_is 1 ringsteer_gateway_supervisors 0
metric_is 1 ringsteer_gateway_superseded_total 1 || fail "gw-1 superseded_total is not 1"
metric_is 2 ringsteer_gateway_store_claims_total 1 'result="recorded"' || fail "gw-2 recorded no claim"
await "the first sup-$x told it is superseded" 5 log_has "$(sup_log "$x")" 'event=goodbye reason=superseded'
hold "the newer sup-$x stays on gw-2" 1 twin_recorded
echo "t_18: outage ${outage_ms} ms with 4 degraded accepts, all claimed; loop stall ${stall1} ms, worst /healthz ${loop1} ms (${loop2} ms under the drain's outage); drain ended by its budget; a stale degraded session's claim superseded and closed"
