#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent follows a --service given by name (issue 26, item 4): svc.test
# is served from the test's own hosts file, bound over /etc/hosts in the
# agent's private mount namespace (tests/cluster/with_names.sh), never from
# the machine's.  The agent also steers the numeric KT_SERVICE.
#   start     svc.test -> A: rs_services and rs_conn_svcs hold exactly
#             {KT_SERVICE, A:PORT}; a dial to A reaches gw-a (sk_lookup)
#   re-point  the file says B: without a restart both maps come to hold
#             exactly {KT_SERVICE, B:PORT} (A gone); a dial to B reaches gw-a,
#             one to A is refused; the move is counted
#             (service_updates_total 1) and logged (event=service_moved)
#   failure   svc.test removed: the lookups fail, counted and logged, and the
#             maps keep B (held for a while: never emptied); the name back on
#             B changes nothing (no second update)
set -u
. "$(dirname "$0")/lib.sh"
kt_up

PORT=7000
A=127.0.0.101
B=127.0.0.102
METRICS=127.0.0.1:9261
NAMES="$KT_DIR/names"
P="/sys/fs/bpf/ringsteer/$KT_INO"
mkdir -p "$NAMES"
printf 'nameserver 127.0.0.1\noptions attempts:1 timeout:1\n' >"$NAMES/resolv.conf"
printf 'hosts: files dns\n' >"$NAMES/nsswitch.conf"
# names_set LINE...: the hosts file rewritten in place (the bind mount holds its inode).
names_set() { printf '%s\n' "127.0.0.1 localhost" "$@" >"$NAMES/hosts"; }

# The Service endpoints in rs_services, sorted, one line ("ADDR:PORT ...").
svcs_sk_lookup() { maps_json | jq -r '[.services[].endpoint] | sort | join(" ")'; }
# The same from rs_conn_svcs (bpftool: the key's bytes; family and port
# little-endian u32s, then the address in network order).
svcs_connect() {
	bpftool -j map dump pinned "$P/rs_conn_svcs" | jq -r '.[].key | join(" ")' | while read -r -a k; do
		[ "$((k[0]))" = 2 ] || { echo "family$((k[0]))"; continue; }
		echo "$((k[8])).$((k[9])).$((k[10])).$((k[11])):$((k[4] + 256 * k[5]))"
	done | sort | tr '\n' ' ' | sed 's/ $//'
}
svcs_are() { [ "$(svcs_sk_lookup)" = "$*" ] && [ "$(svcs_connect)" = "$*" ]; }
metric() { kt_ns curl -fsS --max-time "$KT_HTTP_S" "http://$METRICS/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
metric_above() { local v; v=$(metric "$1") && [ "${v%.*}" -gt "$2" ]; }
want() { printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//'; }

# --- start ---------------------------------------------------------------------
names_set "$A svc.test"
KT_AGENT_PREFIX="$(cd "$(dirname "$0")/../cluster" && pwd)/with_names.sh $NAMES"
agent_start --service "svc.test:$PORT" --metrics "$METRICS"
gws_start gw-a=127.0.1.1:7000
with_a=$(want "$KT_SERVICE" "$A:$PORT")
await "both service maps hold {$with_a}" 5 svcs_are "$with_a"
grep -q "event=service_resolved service=svc.test:$PORT addresses=$A:$PORT" "$KT_DIR/agent.1.log" ||
	fail "no service_resolved line for svc.test -> $A: $(grep svc.test "$KT_DIR/agent.1.log")"
dial_to_is() { [ "$(dial "$1" "$2")" = "$3" ]; } # SRC DST WANT
await "a dial to $A:$PORT reaches gw-a" 5 dial_to_is 127.0.2.1 "$A:$PORT" gw-a
metric_is ringsteer_agent_service_updates_total 0 || fail "service_updates_total $(metric ringsteer_agent_service_updates_total) before any move"

# --- re-point ------------------------------------------------------------------
names_set "$B svc.test"
with_b=$(want "$KT_SERVICE" "$B:$PORT")
await "both service maps hold {$with_b}, $A gone" 5 svcs_are "$with_b"
[ "$(dial 127.0.2.2 "$B:$PORT")" = gw-a ] || fail "a dial to $B:$PORT does not reach gw-a: $(dial 127.0.2.2 "$B:$PORT")"
[ "$(dial 127.0.2.3 "$A:$PORT")" = refused ] || fail "$A:$PORT still steered: $(dial 127.0.2.3 "$A:$PORT")"
metric_is ringsteer_agent_service_updates_total 1 || fail "service_updates_total $(metric ringsteer_agent_service_updates_total), not 1"
grep -q "event=service_moved service=svc.test:$PORT addresses=$B:$PORT" "$KT_DIR/agent.1.log" ||
	fail "no service_moved line for svc.test -> $B"

# --- failure -------------------------------------------------------------------
failed=$(metric ringsteer_agent_service_resolve_failures_total)
names_set
await "failed lookups counted" 5 metric_above ringsteer_agent_service_resolve_failures_total "$((failed + 1))"
grep -q "event=service_resolve_failed service=svc.test:$PORT " "$KT_DIR/agent.1.log" || fail "no service_resolve_failed line"
# Several ticks (--sync-interval 100) of failed lookups: B stays.
for i in 1 2 3 4 5 6 7 8 9 10; do
	svcs_are "$with_b" || fail "the maps changed on a failed lookup ($i): $(svcs_sk_lookup) / $(svcs_connect)"
	sleep 0.1
done
failed=$(metric ringsteer_agent_service_resolve_failures_total)
names_set "$B svc.test"
# Resolving again: the count stops growing (3 ticks of --sync-interval 100
# between two reads).
unchanged() { local v; v=$(metric ringsteer_agent_service_resolve_failures_total) && sleep 0.3 && metric_is ringsteer_agent_service_resolve_failures_total "$v"; }
await "the lookups succeed again (failures stop growing)" 5 unchanged
svcs_are "$with_b" || fail "the maps changed when the name came back unchanged"
metric_is ringsteer_agent_service_updates_total 1 || fail "service_updates_total $(metric ringsteer_agent_service_updates_total) after the same answer came back"
agent_stop
echo "ok: $A then $B followed; $failed failed lookups kept $B"
