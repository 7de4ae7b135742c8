#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A PostgreSQL store that stops answering (every process of the server
# SIGSTOPped: connections stay open, nothing comes back) never freezes the
# agent: its store calls run on a worker thread, not on its loop.  While the
# store is frozen a supervisor's registration is still answered, before the
# server continues ("registered", without a target: the store has not
# chosen one, after the agent's --steer-wait), /metrics answers and shows
# the stuck call and the skipped ticks, and no sync completes; once the
# server continues (SIGCONT) the next sync completes and the late
# registration gets its entry.  Results are orders of events, never a
# number of milliseconds: PostgreSQL in a loaded qemu guest answers a steer
# in 0.5 to 1.2 s, so the agent's --steer-wait is lib.sh's (2.5 s, scaled
# on the guests), its store calls fail only after eight of those
# (--store-timeout: the frozen call never fails before the thaw, so the
# answer is always the steer-wait's), and the registration answered while
# frozen is one answered before the thaw.  On a PostgreSQL server of its
# own, always (freezing a shared RS_PG_DIR server would stall other tests).
set -u
. "$(dirname "$0")/lib.sh"
kt_up

pgs="$(dirname "$0")/../pg/pg_server.sh"
# Its own directory, not under KT_DIR: the server runs as the postgres
# user, who cannot enter the test's 0700 temp dir.
pg_dir=$(mktemp -d /tmp/rs-kt-pg.XXXXXX) || fail "no directory for a PostgreSQL server"
PG_PIDS=""
pg_freeze() {
	local pm
	pm=$(head -n 1 "$pg_dir/data/postmaster.pid") || return 1
	PG_PIDS="$pm $(pgrep -P "$pm" | tr '\n' ' ')"
	kill -STOP $PG_PIDS
}
pg_thaw() {
	[ -n "$PG_PIDS" ] && kill -CONT $PG_PIDS 2>/dev/null
	PG_PIDS=""
}
HOLDERS=""
# The registrations' holders go first: kt_down waits for every child.
trap 'rc=$?; [ -n "$HOLDERS" ] && kill $HOLDERS 2>/dev/null; (exit $rc); kt_down' EXIT
pg_down() {
	pg_thaw # before stopping it, or the stop waits for a frozen server
	"$pgs" stop "$pg_dir" >/dev/null 2>&1 || echo "could not stop the PostgreSQL server in $pg_dir" >&2
}
kt_at_exit pg_down
# The server is this test's alone: its own database `ringsteer` serves (a
# second CREATE DATABASE costs a guest about 2 s).
url=$("$pgs" start "$pg_dir") || fail "cannot start a PostgreSQL server: is postgresql installed?"
"$RS_BUILD/ringsteerctl" init --store "$url" >/dev/null || fail "cannot create the store"
# --ttl 2000 so the watched tick (TTL/4) polls every 500 ms and a read is
# in flight when the server freezes; the gateways' heartbeats are dated ten
# minutes ahead, so their rows stay live without a heartbeat writer.
now=$(($(date +%s%N) / 1000000 + 600000))
psql -X -q -v ON_ERROR_STOP=1 "$url" -c \
	"INSERT INTO gateways VALUES ('gw-a', '127.0.1.1:7001', 0, $now), ('gw-b', '127.0.1.2:7001', 0, $now)" \
	>/dev/null || fail "cannot fill the store"

agent_start --store "$url" --ttl 2000 --sync-interval 200 --metrics 127.0.0.1:9201 \
	--store-timeout $((8 * KT_STEER_WAIT_MS))
metric() { kt_ns curl -fsS --max-time "$KT_HTTP_S" http://127.0.0.1:9201/metrics | awk -v n="$1" '$1 == n { print $2 }'; }
metric_above() { awk -v a="$(metric "$1")" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 > b + 0) }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }

# register NAME MEMBER: registers MEMBER from cgroup KT_CG/NAME of the
# node's netns (a hostNetwork supervisor, keyed by that cgroup) and holds
# the registration (its stdin a FIFO nobody writes to or closes); its
# answer lands in KT_DIR/NAME.out.
mkfifo "$KT_DIR/hold" || fail "mkfifo"
exec 9<>"$KT_DIR/hold"
register() {
	mkdir -p "$KT_CG/$1"
	nsenter --net="/run/netns/$KT_NS" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$KT_CG/$1" \
		"$RS_BUILD/kernel/kt_tool" member "$KT_DIR/member.sock" "$2" <"$KT_DIR/hold" >"$KT_DIR/$1.out" 2>&1 &
	HOLDERS="$HOLDERS $!"
}

answer_ms() { sed -n 's/^answer_ms=//p' "$KT_DIR/$1.out"; }

# The store answers: the registration is steered (a target in its answer).
register m1 sup-1
await "sup-1 answered" 5 grep -q '^answer_ms=' "$KT_DIR/m1.out"
grep -q "^registered .*connects go to gw-" "$KT_DIR/m1.out" || fail "sup-1: $(cat "$KT_DIR/m1.out")"
kt_deadline_note "sup-1 steered through the store (against --steer-wait)" \
	"$(awk -v ms="$(answer_ms m1)" 'BEGIN { printf "%.2f", ms / 1000 }')" \
	"$(awk -v ms="$KT_STEER_WAIT_MS" 'BEGIN { printf "%.2f", ms / 1000 }')"
await "a sync completes" 5 metric_above 'ringsteer_agent_syncs_total{result="ok"}' 1

# Freeze the server: the next sync read hangs on the worker, and no sync
# completes from here until the thaw.
pg_freeze || fail "cannot freeze the PostgreSQL server"
kt_log "PostgreSQL frozen: $PG_PIDS"
await "a store call stuck" 5 metric_above ringsteer_agent_store_busy_seconds 0
skipped=$(metric ringsteer_agent_sync_skipped_total)
ok_frozen=$(metric 'ringsteer_agent_syncs_total{result="ok"}')

# A registration is still answered while the server is frozen: without a
# target, counted late.
register m2 sup-2
# (its answer is the steer-wait's: the deadline is twenty of those)
await "sup-2 answered while the store is frozen" $((20 * KT_STEER_WAIT_MS / 1000 / KT_SCALE)) \
	grep -q '^answer_ms=' "$KT_DIR/m2.out"
kt_log "sup-2 answered in $(answer_ms m2) ms while the store is frozen: $(head -n 1 "$KT_DIR/m2.out")"
grep -q "^registered .*store has not answered" "$KT_DIR/m2.out" || fail "sup-2: $(cat "$KT_DIR/m2.out")"

# /metrics answers, and shows the ticks skipped behind the stuck read; no
# sync completed since the freeze (ticks came and were skipped).
await "ticks skipped while frozen" 5 metric_above ringsteer_agent_sync_skipped_total "$skipped"
metric_above ringsteer_agent_member_steer_late_total 0 || fail "late registration not counted"
[ "$(metric 'ringsteer_agent_syncs_total{result="ok"}')" = "$ok_frozen" ] || fail "a sync completed on a frozen store"

# The server continues: the next sync completes, sup-2 gets its entry.
pg_thaw
kt_log "PostgreSQL continues"
await "a sync completes after SIGCONT" 10 metric_above 'ringsteer_agent_syncs_total{result="ok"}' "$ok_frozen"
await "sup-1 and sup-2 entries" 10 metric_is 'ringsteer_agent_map_entries{map="rs_clients"}' 2
agent_stop
echo "ok (registration answered in $(answer_ms m2) ms with the store frozen, $(answer_ms m1) ms steered before)"
