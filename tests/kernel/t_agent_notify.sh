#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# With a PostgreSQL store the agent follows changes by LISTEN/NOTIFY (issue
# 8): the poll is slowed to TTL/4 (here 150 s, longer than the test), yet a
# new session's pin and a moved session's pin appear within a second; a
# heartbeat-only update notifies nothing (proved with a marker change
# committed after the heartbeats, not by waiting a while); when the watch connection is cut
# the agent falls back to polling at --sync-interval, re-arms the watch, and
# follows notifications again.  On the PostgreSQL server of RS_PG_DIR (from
# tests/pg/pg_server.sh start), else on a throwaway one it starts and stops
# itself: no server is a failure, not a skip (make deps installs
# postgresql; a run that cannot have one, like the vm-tests guests, excludes
# this test by name with RS_KERNEL_EXCLUDE).
set -u
. "$(dirname "$0")/lib.sh"
kt_up

pgs="$(dirname "$0")/../pg/pg_server.sh"
pg_dir=${RS_PG_DIR:-}
if [ -z "$pg_dir" ]; then
	# Its own directory, not under KT_DIR: the server runs as the
	# postgres user, who cannot enter the test's 0700 temp dir.
	pg_dir=$(mktemp -d /tmp/rs-kt-pg.XXXXXX) || fail "no directory for a PostgreSQL server"
	pg_stop() { "$pgs" stop "$pg_dir" >/dev/null 2>&1 || echo "could not stop the PostgreSQL server in $pg_dir" >&2; }
	kt_at_exit pg_stop
	"$pgs" start "$pg_dir" >/dev/null || fail "cannot start a PostgreSQL server (RS_PG_DIR unset): is postgresql installed?"
fi
url=$("$pgs" newdb "$pg_dir" "rs_kt_notify_$$") || fail "no database"
"$RS_BUILD/ringsteerctl" init --store "$url" >/dev/null || fail "cannot create the store"
sql() { psql -X -q -v ON_ERROR_STOP=1 "$url" -c "$1" >/dev/null; }
now=$(($(date +%s%N) / 1000000))
sql "INSERT INTO gateways VALUES ('gw-a', '127.0.1.1:7001', 0, $now), ('gw-b', '127.0.1.2:7001', 0, $now)" ||
	fail "cannot fill the store"

agent_start --store "$url" --ttl 600000 --sync-interval 300 --metrics 127.0.0.1:9200
gws_start gw-a=127.0.1.1:7000 gw-b=127.0.1.2:7000
await "agent watching the store" 5 grep -q 'event=watching' "$KT_DIR/agent.1.log"
metric() { kt_ns curl -fsS --max-time "$KT_HTTP_S" http://127.0.0.1:9200/metrics | awk -v n="$1" '$1 == n { print $2 }'; }
[ "$(metric ringsteer_agent_store_watching)" = 1 ] || fail "watching gauge: $(metric ringsteer_agent_store_watching)"

counted_past() { [ "$(metric ringsteer_agent_store_notifications_total)" -gt "$1" ]; }
pin_of() { maps_json | jq -r --arg s "$1" '.pins[] | select(.source == $s) | .gateway'; }
pin_is() { [ "$(pin_of "$1")" = "$2" ]; }
session() { # MEMBER GATEWAY SOURCE
	sql "INSERT INTO sessions VALUES ('$1', 'i', 1, '$2', 0, '$3', $now, $((now + 600000)), 1)"
}

syncs_before=$(metric 'ringsteer_agent_syncs_total{result="ok"}')
session sup-1 gw-b 127.0.3.1:40001 || fail "insert"
# While watching, the poll runs every TTL/4 (150 s): a pin within 10 s came
# from a notification (a 1 s limit here used 16% of itself on a loaded host).
await "sup-1 pinned to gw-b by notification" 10 pin_is 127.0.3.1 gw-b
sql "UPDATE sessions SET gateway_id = 'gw-a' WHERE member_id = 'sup-1'" || fail "update"
await "the pin follows sup-1 to gw-a" 10 pin_is 127.0.3.1 gw-a
[ "$(metric ringsteer_agent_store_notifications_total)" -ge 2 ] || fail "notifications: $(metric ringsteer_agent_store_notifications_total)"
syncs_after=$(metric 'ringsteer_agent_syncs_total{result="ok"}')
# No poll ran (the tick is 150 s): only the notified syncs, a few at most.
[ $((syncs_after - syncs_before)) -le 4 ] || fail "$((syncs_after - syncs_before)) syncs for two changes: polling?"

# Heartbeats notify nothing: one second of them, no notification.
n0=$(metric ringsteer_agent_store_notifications_total)
end=$(($(date +%s%N) + 1000000000))
while [ "$(date +%s%N)" -lt $end ]; do
	sql "UPDATE sessions SET heartbeat_ms = heartbeat_ms + 1; UPDATE gateways SET heartbeat_ms = heartbeat_ms + 1" ||
		fail "heartbeat update"
done
# A barrier, not a pause: PostgreSQL delivers notifications in commit order,
# so once the marker session's (committed last) is counted, any the
# heartbeats had sent would be counted before it, however slow the host.
session sup-hb gw-a 127.0.3.9:40009 || fail "insert the marker"
await "the marker session pinned by notification" 5 pin_is 127.0.3.9 gw-a
await "the marker's notification counted" 5 counted_past "$n0"
n1=$(metric ringsteer_agent_store_notifications_total)
[ "$n1" = $((n0 + 1)) ] ||
	fail "heartbeat-only updates notified: $n0 -> $n1 (the marker accounts for one)"
sql "DELETE FROM sessions WHERE member_id = 'sup-hb'" || fail "delete the marker"

# Cut the agent's connections: it falls back to polling, re-arms, follows again.
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()" ||
	fail "terminate"
sql "DELETE FROM sessions WHERE member_id = 'sup-1'" || fail "delete"
session sup-2 gw-b 127.0.3.2:40002 || fail "insert"
await "sup-2 pinned after the connection loss (poll or re-armed watch)" 5 pin_is 127.0.3.2 gw-b
await "watch re-armed" 5 bash -c "[ \$(grep -c 'event=watching' '$KT_DIR/agent.1.log') -ge 2 ]"
grep -q 'event=watch_lost' "$KT_DIR/agent.1.log" || fail "no watch_lost logged"
n2=$(metric ringsteer_agent_store_notifications_total)
session sup-3 gw-a 127.0.3.3:40003 || fail "insert"
await "sup-3 pinned by notification after the re-arm" 10 pin_is 127.0.3.3 gw-a
# pinned by the notification, not by a poll left over from the fallback
await "sup-3's notification counted" 5 counted_past "$n2"
agent_stop
echo "ok"
