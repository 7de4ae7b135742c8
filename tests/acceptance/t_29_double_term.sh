#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 29: a second SIGTERM exits at once and ends the gateway's
# sessions with its row, in one transaction, never one transaction per
# session (issue 17).  One gateway, 200 swarm members attached to it; the
# first SIGTERM starts a drain that waits for another serving gateway
# (there is none, so nobody is handed off); the second one exits.  A row
# trigger the test adds to the store records, for every session row
# deleted, whether the gateway's row still existed at that moment: the
# gateway's removal deletes its row first and then its sessions in the same
# transaction, so a session ended one by one is the only kind deleted while
# the row is there.  After the exit: no such deletion, all 200 sessions
# deleted with the row, the row and every session of gw-1 gone.
#
# Clocks: RS_CLOCKS=slow (as t_26): 200 arrivals at once on one gateway.
RS_CLOCKS=slow
. "$(dirname "$0")/../cluster/lib.sh"

N=200
BIND=198.18.202.0/24
SWARM_METRICS=127.0.0.62:9300

swarm_metric() { # NAME [LABELMATCH]
	rs_ns curl -fsS --max-time 2 "http://$SWARM_METRICS/metrics" | metric_of "$@"
}
swarm_metric_is() { [ "$(swarm_metric "$1" "${3:-}")" = "$2" ]; }

# SQL on the store, SQLite or PostgreSQL; prints the rows, one a line.
store_sql() {
	case $RS_STORE in
	sqlite:*) sqlite3 -cmd '.timeout 10000' "${RS_STORE#sqlite:}" "$1" ;;
	*) psql -X -q -A -t -v ON_ERROR_STOP=1 "$RS_STORE" -c "$1" ;;
	esac
}

cluster_up
gw_start 1 --max-unauth 1024
case $RS_STORE in
sqlite:*)
	store_sql "CREATE TABLE t29_deleted (member_id TEXT, gateway_live INTEGER);
		CREATE TRIGGER t29_deleted AFTER DELETE ON sessions BEGIN
		  INSERT INTO t29_deleted VALUES (OLD.member_id,
		    EXISTS (SELECT 1 FROM gateways WHERE id = OLD.gateway_id));
		END;" || fail "cannot add the trigger"
	;;
*)
	store_sql "CREATE TABLE t29_deleted (member_id TEXT, gateway_live INTEGER);
		CREATE FUNCTION t29_deleted() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
		  INSERT INTO t29_deleted VALUES (OLD.member_id,
		    (EXISTS (SELECT 1 FROM gateways WHERE id = OLD.gateway_id))::int);
		  RETURN OLD;
		END \$\$;
		CREATE TRIGGER t29_deleted AFTER DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION t29_deleted();" ||
		fail "cannot add the trigger"
	;;
esac

ip -n "$RS_NS" route add local "$BIND" dev lo || fail "ip route add local $BIND dev lo"
swarm_log="$RS_DIR/log/swarm.log"
# shellcheck disable=SC2046
ip netns exec "$RS_NS" "$RS_BUILD/ringsteer-swarm" --service "$RS_SERVICE" --secret "$RS_SECRET" \
	--count "$N" --prefix dt- --bind "$BIND" --metrics "$SWARM_METRICS" $(rs_sup_transport_args 0) \
	>"$swarm_log" 2>&1 &
swarm_pid=$!
await "the swarm reports $N attached" 90 swarm_metric_is ringsteer_swarm_attached "$N"
await "gw-1 holds all $N" 10 metric_is 1 ringsteer_gateway_supervisors "$N"
[ "$(store_sql "SELECT COUNT(*) FROM sessions WHERE gateway_id = 'gw-1'")" = "$N" ] ||
	fail "the store does not hold $N sessions on gw-1"
[ "$(store_sql "SELECT COUNT(*) FROM t29_deleted")" = 0 ] || fail "sessions deleted before the stop"

gw_pid=${RS_GW_PID[1]}
RS_GW_PID[1]=""
svc_update
kill -TERM "$gw_pid"
await "gw-1 draining" 10 log_has "$(gw_log 1)" 'event=draining'
kill -TERM "$gw_pid"
await "gw-1 exits after the second SIGTERM" 10 rs_gone "$gw_pid"
kill -TERM "$swarm_pid"
await "the swarm exits" 10 rs_gone "$swarm_pid"

one_by_one=$(store_sql "SELECT COUNT(*) FROM t29_deleted WHERE gateway_live = 1")
with_row=$(store_sql "SELECT COUNT(*) FROM t29_deleted WHERE gateway_live = 0")
echo "t_29: sessions deleted one by one: $one_by_one; with the gateway's row: $with_row"
[ "$one_by_one" = 0 ] || fail "$one_by_one sessions ended one transaction each after the second SIGTERM"
[ "$with_row" = "$N" ] || fail "$with_row sessions deleted with the gateway's row, want $N"
[ "$(store_sql "SELECT COUNT(*) FROM gateways WHERE id = 'gw-1'")" = 0 ] || fail "gw-1's row is still there"
[ "$(store_sql "SELECT COUNT(*) FROM sessions WHERE gateway_id = 'gw-1'")" = 0 ] || fail "gw-1's sessions are still there"
echo "t_29: the second SIGTERM removed gw-1's row and its $N sessions in one transaction"
