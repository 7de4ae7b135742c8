#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 28: a PostgreSQL server that stops answering.  Two gateways on
# a throwaway server of the test's own (tests/pg/pg_server.sh: the suite's
# shared one is never stopped), 40 supervisors (one ringsteer-swarm)
# attached 20/20.  Then every process of the server is SIGSTOPped: the TCP
# (here UNIX) connections stay up and nothing answers, the case where a
# blocking client waits forever.  For 4 s: each gateway's /healthz answers
# within 100 ms every time (the loop never waits for the store), the store
# is judged unavailable (store_up 0) within about --store-timeout, every
# attached supervisor stays served (the swarm sees no failure, the gauges
# stay 20/20), and an arrival is accepted degraded where it lands.  After
# SIGCONT the gateways' store calls complete, store_up returns to 1, the
# degraded arrival is claimed, and a new arrival is placed by the store.
. "$(dirname "$0")/../cluster/lib.sh"

N=40
BIND=198.18.202.0/24
SWARM_METRICS=127.0.0.62:9300
pg_dir=$(mktemp -d /tmp/rs-pgst-XXXXXX)
"$(dirname "$0")/../pg/pg_server.sh" start "$pg_dir" >/dev/null || { rm -rf "$pg_dir"; echo "t_28: no PostgreSQL server" >&2; exit 1; }
RS_PG_DIR=$pg_dir

pg_pids() { # the postmaster and every backend of the test's own server
	local pm
	pm=$(head -n 1 "$pg_dir/data/postmaster.pid" 2>/dev/null) || return 0
	echo "$pm"
	pgrep -P "$pm" || true
}
pg_signal() { local p; for p in $(pg_pids); do kill -"$1" "$p" 2>/dev/null; done; }
pg_cleanup() { pg_signal CONT; "$(dirname "$0")/../pg/pg_server.sh" stop "$pg_dir" >/dev/null 2>&1 || true; }

swarm_metric() { rs_ns curl -fsS --max-time 2 "http://$SWARM_METRICS/metrics" | metric_of "$@"; }
swarm_metric_is() { [ "$(swarm_metric "$1" "${3:-}")" = "$2" ]; }
gauges_are() { metric_is 1 ringsteer_gateway_supervisors "$1" && metric_is 2 ringsteer_gateway_supervisors "$2"; }
# healthz_ms N: how long gw-N's /healthz took to answer, in ms (fails if it did not)
healthz_ms() {
	local s
	s=$(rs_ns curl -fsS --max-time 2 -o /dev/null -w '%{time_total}' "http://$(gw_addr "$1"):$RS_GW_METRICS_PORT/healthz") ||
		return 1
	awk -v s="$s" 'BEGIN { printf "%d\n", s * 1000 }'
}

cluster_up --gateways 2
trap 'rc=$?; cluster_down; pg_cleanup; exit $rc' EXIT
ip -n "$RS_NS" route add local "$BIND" dev lo || fail "ip route add local $BIND dev lo"
swarm_log="$RS_DIR/log/swarm.log"
# shellcheck disable=SC2046
ip netns exec "$RS_NS" "$RS_BUILD/ringsteer-swarm" --service "$RS_SERVICE" --secret "$RS_SECRET" \
	--count "$N" --prefix st- --bind "$BIND" --metrics "$SWARM_METRICS" $(rs_sup_transport_args 0) \
	>"$swarm_log" 2>&1 &
swarm_pid=$!
await "the swarm reports $N attached" 30 swarm_metric_is ringsteer_swarm_attached "$N"
await "20/20" 10 gauges_are 20 20
failures0=$(swarm_metric ringsteer_swarm_failures_total)

pg_signal STOP
stopped=$(rs_now_ms)
echo "t_28: PostgreSQL stopped (SIGSTOP: $(pg_pids | wc -l) processes)"
worst=0
end=$((stopped + 4000))
down_ms=
while [ "$(rs_now_ms)" -lt "$end" ]; do
	for n in 1 2; do
		ms=$(healthz_ms "$n") || fail "gw-$n's /healthz did not answer while the store is stopped"
		[ "$ms" -gt "$worst" ] && worst=$ms
	done
	if [ -z "$down_ms" ] && metric_is 1 ringsteer_gateway_store_up 0 && metric_is 2 ringsteer_gateway_store_up 0; then
		down_ms=$(($(rs_now_ms) - stopped))
	fi
done
echo "t_28: worst /healthz over 4 s of a stopped store: $worst ms; store_up 0 on both after ${down_ms:-never} ms"
[ "$worst" -le 100 ] || fail "/healthz took $worst ms while the store was stopped (bound: 100 ms)"
[ -n "$down_ms" ] || fail "the gateways never judged the store unavailable"
gauges_are 20 20 || fail "the gauges moved while the store was stopped"
swarm_metric_is ringsteer_swarm_attached "$N" || fail "the swarm lost members while the store was stopped"
[ "$(swarm_metric ringsteer_swarm_failures_total)" = "$failures0" ] || fail "the swarm counted failures while the store was stopped"
# An arrival now is accepted where it lands, unrecorded.
sup_start 1
# (its own log says so: the store cannot be asked)
await "sup-1 attached while the store is stopped" 10 log_has "$(sup_log 1)" 'event=attached '
down_for=$(($(rs_now_ms) - stopped))
metric_ge 1 ringsteer_gateway_degraded_accepts_total 1 || metric_ge 2 ringsteer_gateway_degraded_accepts_total 1 ||
	fail "sup-1's arrival was not a degraded accept"

pg_signal CONT
echo "t_28: PostgreSQL continued (SIGCONT) after $down_for ms"
await "store_up 1 on both gateways" 20 eval 'metric_is 1 ringsteer_gateway_store_up 1 && metric_is 2 ringsteer_gateway_store_up 1'
await "the degraded arrival claimed" 20 eval 'metric_is 1 ringsteer_gateway_unrecorded_supervisors 0 && metric_is 2 ringsteer_gateway_unrecorded_supervisors 0'
sup_start 2
await "sup-2 attached after the store returned" 10 sup_attached 2
log_has "$(gw_log 1)" "event=decision member=sup-2 " || log_has "$(gw_log 2)" "event=decision member=sup-2 " ||
	fail "sup-2 was not placed by the store"
swarm_metric_is ringsteer_swarm_attached "$N" || fail "the swarm lost members"
echo "t_28: after SIGCONT: store up, the degraded arrival claimed, a new arrival placed; $N swarm members attached throughout"
