#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 41: the Service by its DNS name (issue 26, item 4).  Names come
# from the cluster's own hosts file (names_up, tests/cluster/with_names.sh:
# bound over /etc/hosts in each daemon's private mount namespace), never
# from the machine's.  TLS cluster; supervisors pass no --tls-server-name,
# so the certificate must name the --service name (gw-N's names gw-N and
# ringsteer.test, as a DNS SAN).
#   name      sup-1..4 --service ringsteer.test:7000 (-> the Service VIP):
#             each logs the lookup's one answer and attaches
#   san       sup-5 --service other.test:7000, the same VIP under a name no
#             certificate carries: its Service dials fail on the
#             certificate and it never attaches (the name is what is checked)
#   two       ringsteer.test -> 127.0.1.99 (nothing listens) then the VIP:
#             sup-6 logs both answers in that order, the dead one's connect
#             failing (answer_failed), then attaches, with no failed dial
#   late      sup-7 --service late.test:7000 before late.test exists: each
#             Service dial fails "cannot resolve", counted
#             (resolve_failures_total), backing off 1 s then 2 s (+-20%),
#             the supervisor alive; the name is added to the file and sup-7
#             attaches at its next dial
#   swarm     a swarm of 20 by ringsteer.test:7000 attaches, no resolve
#             failure; a swarm of 5 by soon.test:7000 counts
#             failures_total{reason="resolve"} >= 5 (every member) and
#             attaches once the name is added
. "$(dirname "$0")/../cluster/lib.sh"

RS_TLS=1
RS_SUP_SERVER_NAME= # the --service name is the certificate's
PORT=$RS_SVC_PORT
VIP=$RS_SVC_ADDR
DEAD=127.0.1.99
BIND=198.18.201.0/24

attached() { [ -n "$(where "$1")" ]; }
swarm_metric() { # METRICS NAME [LABELMATCH]
	local at=$1
	shift
	rs_ns curl -fsS --max-time 2 "http://$at/metrics" | metric_of "$@"
}
swarm_metric_is() { [ "$(swarm_metric "$1" "$2" "${4:-}")" = "$3" ]; }
swarm_metric_ge() { local v; v=$(swarm_metric "$1" "$2" "${4:-}") && [ "${v%.*}" -ge "$3" ]; }
# swarm_start LOG METRICS ARGS...: a ringsteer-swarm with the cluster's names; prints its pid.
swarm_start() {
	local log=$1 at=$2
	shift 2
	# shellcheck disable=SC2046
	ip netns exec "$RS_NS" $(rs_names_prefix) "$RS_BUILD/ringsteer-swarm" --secret "$RS_SECRET" --bind "$BIND" \
		--metrics "$at" $(rs_sup_transport_args 0) "$@" >"$log" 2>&1 &
	echo $!
}
SWARM_PIDS=()
rs_down_hook() { local p; for p in "${SWARM_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; }
swarm_stop() {
	kill -TERM "$1" 2>/dev/null
	await "swarm pid $1 exits after SIGTERM" 10 rs_gone "$1"
}

cluster_up --gateways 2
[ -x "$RS_BUILD/ringsteer-swarm" ] || fail "missing binary: $RS_BUILD/ringsteer-swarm"
ip -n "$RS_NS" route add local "$BIND" dev lo || fail "ip route add local $BIND dev lo"
names_up "$VIP ringsteer.test" "$VIP other.test"

# --- name -----------------------------------------------------------------------
for m in 1 2 3 4; do RS_SUP_SERVICE=ringsteer.test:$PORT sup_start "$m" 1; done
await "sup-1..4 attached by name" 20 attached_is 4
for m in 1 2 3 4; do
	log_has "$(sup_log "$m")" "event=resolved service=ringsteer.test:$PORT answers=$VIP:$PORT( |$)" ||
		fail "sup-$m logged no lookup of ringsteer.test answering $VIP:$PORT"
	log_has "$(sup_log "$m")" 'event=resolve_failed' && fail "sup-$m: a lookup failed"
done
rs_log "name: 4 attached through ringsteer.test"

# --- san ------------------------------------------------------------------------
RS_SUP_SERVICE=other.test:$PORT sup_start 5 1
await "sup-5's Service dial refused on the certificate" 10 \
	log_has "$(sup_log 5)" "event=dial_failed via=service endpoint=other.test:$PORT .*other\\.test"
attached 5 && fail "sup-5 attached under a name its gateways' certificates do not carry"
log_has "$(sup_log 5)" "event=resolved service=other.test:$PORT answers=$VIP:$PORT" ||
	fail "sup-5 did not resolve other.test (the refusal must come from the certificate)"
sup_stop 5
rs_log "san: other.test refused on the certificate ($(grep -m1 'event=dial_failed' "$(sup_log 5)" | sed -n 's/.* error="\([^"]*\)".*/\1/p'))"

# --- two ------------------------------------------------------------------------
names_set "$DEAD ringsteer.test" "$VIP ringsteer.test" "$VIP other.test"
RS_SUP_SERVICE=ringsteer.test:$PORT sup_start 6 1
await "sup-6 attached through the second answer" 20 attached 6
log_has "$(sup_log 6)" "event=resolved service=ringsteer.test:$PORT answers=\"$DEAD:$PORT $VIP:$PORT\"" ||
	fail "sup-6 did not log the two answers, $DEAD first: $(grep -m1 'event=resolved' "$(sup_log 6)")"
log_has "$(sup_log 6)" "event=answer_failed service=ringsteer.test:$PORT endpoint=$DEAD:$PORT " ||
	fail "sup-6 logged no failed connect to the dead answer $DEAD:$PORT"
log_has "$(sup_log 6)" 'event=dial_failed' && fail "sup-6's dial failed as a whole, though its second answer worked"
rs_log "two: $DEAD refused, $VIP attached, one dial"

# --- late -----------------------------------------------------------------------
RS_SUP_SERVICE=late.test:$PORT sup_start 7 1 --tls-server-name ringsteer.test
retries_ge() { [ "$(log_count "$(sup_log 7)" 'event=retry ')" -ge "$1" ]; }
await "sup-7's two failed dials and their retries" 15 retries_ge 2
log_has "$(sup_log 7)" "event=resolve_failed service=late.test:$PORT .*resolve_failures_total=2( |$)" ||
	fail "sup-7 did not count its second failed lookup: $(grep 'event=resolve_failed' "$(sup_log 7)" | tail -n 1)"
log_has "$(sup_log 7)" "event=dial_failed via=service endpoint=late.test:$PORT error=\"cannot resolve late.test:$PORT: " ||
	fail "sup-7's failed dial does not say the name did not resolve"
sup_alive 7 || fail "sup-7 exited on a name that does not resolve"
attached 7 && fail "sup-7 attached without its name"
# Backs off as any failed Service dial: 1 s, then 2 s, each +-20%.
mapfile -t waits < <(sed -n 's/.* event=retry in_ms=\([0-9]*\) .*/\1/p' "$(sup_log 7)")
[ "${#waits[@]}" -ge 2 ] || fail "sup-7 logged ${#waits[@]} retries after 2 failed lookups"
[ "${waits[0]}" -ge 800 ] && [ "${waits[0]}" -le 1200 ] && [ "${waits[1]}" -ge 1600 ] && [ "${waits[1]}" -le 2400 ] ||
	fail "sup-7's retries are ${waits[*]} ms, not 1000 then 2000 (+-20%)"
names_set "$DEAD ringsteer.test" "$VIP ringsteer.test" "$VIP other.test" "$VIP late.test"
await "sup-7 attached once late.test exists" 30 attached 7
failures=$(grep -c 'event=resolve_failed' "$(sup_log 7)")
rs_log "late: $failures failed lookups (retries ${waits[*]} ms...), then attached"

# --- swarm ----------------------------------------------------------------------
log1="$RS_DIR/log/swarm-1.log" at1=127.0.0.61:9300
pid1=$(swarm_start "$log1" "$at1" --service "ringsteer.test:$PORT" --count 20 --prefix swa-)
SWARM_PIDS+=("$pid1")
await "swarm 1: 20 attached by name" 30 swarm_metric_is "$at1" ringsteer_swarm_attached 20
swarm_metric_is "$at1" ringsteer_swarm_failures_total 0 'reason="resolve"' ||
	fail "swarm 1 counted resolve failures: $(swarm_metric "$at1" ringsteer_swarm_failures_total 'reason="resolve"')"
log2="$RS_DIR/log/swarm-2.log" at2=127.0.0.62:9300
pid2=$(swarm_start "$log2" "$at2" --service "soon.test:$PORT" --count 5 --prefix swb- --tls-server-name ringsteer.test)
SWARM_PIDS+=("$pid2")
await "swarm 2: every member's lookup failed and was counted" 15 \
	swarm_metric_ge "$at2" ringsteer_swarm_failures_total 5 'reason="resolve"'
swarm_metric_is "$at2" ringsteer_swarm_attached 0 || fail "swarm 2 attached members without a name"
rs_gone "$pid2" && fail "swarm 2 exited on a name that does not resolve"
names_set "$DEAD ringsteer.test" "$VIP ringsteer.test" "$VIP other.test" "$VIP late.test" "$VIP soon.test"
await "swarm 2: 5 attached once soon.test exists" 40 swarm_metric_is "$at2" ringsteer_swarm_attached 5
r2=$(swarm_metric "$at2" ringsteer_swarm_failures_total 'reason="resolve"')
swarm_stop "$pid1"
swarm_stop "$pid2"
rs_log "swarm: 20 attached by name; 5 attached after $r2 counted resolve failures"
echo "t_41: by name 4+1+1 supervisors, other.test refused on its certificate, late.test after $failures failed lookups, swarms 20 and 5 (after $r2)"
