# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/faults/pg_tcp.sh - PostgreSQL reached over TCP on a veth, for the
# store faults of issue 25's matrix (f_3..f_6).  Sourced after faults_lib.sh.
#
# The UNIX socket of tests/pg/pg_server.sh never sees a network fault, so
# here the server runs in a namespace of its own (PGT_NS), joined to the
# cluster's namespace by a veth: the cluster side holds 198.18.25.1/24, the
# server side 198.18.25.2 (and .3 for a standby).  The gateways dial the TCP
# address (gw_node_args gives them --store PGT_URL); the test itself reads
# the ledger (RS_STORE, ringsteerctl on the host) over the server's UNIX
# socket, which the faults never touch, so what it reads is the truth.
#
#   pgt_faults_up G N [SERVERS]  the pg namespace and veth, SERVERS (1 or 2:
#                                a streaming standby made by pg_basebackup
#                                -R) started, a fresh database, then G
#                                gateways on TCP and N supervisors attached
#                                (pgt_before_gateways, a hook, runs just
#                                before the first gateway starts)
#   pgt_start I / pgt_stop_immediate I / pgt_promote I / pgt_alive I
#   pgt_sql I SQL                one query on server I (its socket), -tA
#   PGT_ADDR[I] PGT_DIR[I]       server I's address, its directory

PGT_BIN=""
for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && PGT_BIN=$d; done
PGT_NS=""
PGT_PORT=5432
PGT_CLUSTER_ADDR=198.18.25.1
declare -A PGT_ADDR=([1]=198.18.25.2 [2]=198.18.25.3) PGT_DIR=()
PGT_DB=""
PGT_URL=""

pgt_as_pg() { runuser -u postgres -- "$@"; }
pgt_sql() { pgt_as_pg "$PGT_BIN/psql" -X -tA -v ON_ERROR_STOP=1 -h "${PGT_DIR[$1]}" -d "${3:-postgres}" -c "$2"; }
pgt_alive() { pgt_as_pg "$PGT_BIN/pg_ctl" -D "${PGT_DIR[$1]}/data" status >/dev/null 2>&1; }

# pgt_start I: server I in the pg namespace, on its address and its socket.
pgt_start() {
	local d=${PGT_DIR[$1]}
	ip netns exec "$PGT_NS" runuser -u postgres -- "$PGT_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" -w -t 30 \
		-o "-c listen_addresses='${PGT_ADDR[$1]}' -c port=$PGT_PORT -c unix_socket_directories='$d' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100" \
		start >/dev/null || { tail -n 20 "$d/server.log" >&2; fail "PostgreSQL $1 did not start"; }
}
pgt_stop_immediate() {
	pgt_as_pg "$PGT_BIN/pg_ctl" -D "${PGT_DIR[$1]}/data" -m immediate -w -t 30 stop >/dev/null ||
		fail "pg_ctl -m immediate stop of server $1"
}
pgt_promote() { pgt_as_pg "$PGT_BIN/pg_ctl" -D "${PGT_DIR[$1]}/data" -w -t 30 promote >/dev/null || fail "pg_ctl promote of server $1"; }

pgt_cleanup() {
	local i
	for i in "${!PGT_DIR[@]}"; do
		pgt_alive "$i" && pgt_as_pg "$PGT_BIN/pg_ctl" -D "${PGT_DIR[$i]}/data" -m immediate -w -t 30 stop >/dev/null 2>&1
		rm -rf "${PGT_DIR[$i]}"
	done
	[ -n "$PGT_NS" ] && ip netns del "$PGT_NS" 2>/dev/null
	PGT_NS=""
}
gw_node_args() { echo "--store $PGT_URL"; }
# pgt_before_gateways: a case's hook, run once the servers are up and
# PGT_URL is set, before the first gateway starts (f_4: its proxy).
pgt_before_gateways() { :; }

# pgt_primary: initdb (trust: a throwaway server; TCP only from the test's
# 198.18.25.0/24, replication too), then start.
pgt_primary() {
	local d=${PGT_DIR[1]}
	pgt_as_pg "$PGT_BIN/initdb" -D "$d/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
		>"$d/initdb.log" 2>&1 || { cat "$d/initdb.log" >&2; fail "initdb"; }
	printf 'host all all 198.18.25.0/24 trust\nhost replication all 198.18.25.0/24 trust\n' >>"$d/data/pg_hba.conf"
	pgt_start 1
	pgt_sql 1 "CREATE ROLE \"$(id -un)\" SUPERUSER LOGIN" >/dev/null || fail "create role"
	PGT_DB="rs_$$_$RANDOM"
	pgt_sql 1 "CREATE DATABASE $PGT_DB OWNER \"$(id -un)\"" >/dev/null || fail "create database"
}

# pgt_standby: server 2, a copy of server 1 streaming from it over the veth.
pgt_standby() {
	local d=${PGT_DIR[2]}
	ip netns exec "$PGT_NS" runuser -u postgres -- "$PGT_BIN/pg_basebackup" -h "${PGT_ADDR[1]}" -p "$PGT_PORT" \
		-U postgres -D "$d/data" -R -X stream -c fast >"$d/basebackup.log" 2>&1 ||
		{ cat "$d/basebackup.log" >&2; fail "pg_basebackup"; }
	pgt_start 2
	await "the standby streaming from the primary" 20 \
		eval "[ \"\$(pgt_sql 1 'SELECT count(*) FROM pg_stat_replication WHERE state = '\''streaming'\''')\" = 1 ]"
}

pgt_faults_up() {
	local g=$1 n=$2 servers=${3:-1} i
	[ -n "$PGT_BIN" ] || { echo "skip: no PostgreSQL server binaries"; exit 77; }
	id postgres >/dev/null 2>&1 || { echo "skip: no postgres system user"; exit 77; }
	FAULTS_G=$g FAULTS_N=$n
	cluster_up --gateways 0
	trap 'rc=$?; cluster_down; pgt_cleanup; exit $rc' EXIT
	PGT_NS="${RS_NS_PREFIX:-rs-$$}-pg"
	ip netns add "$PGT_NS" || fail "ip netns add $PGT_NS"
	ip -n "$PGT_NS" link set lo up
	ip -n "$RS_NS" link add pgt0 type veth peer name pgt1 netns "$PGT_NS" || fail "veth"
	ip -n "$RS_NS" addr add "$PGT_CLUSTER_ADDR/24" dev pgt0
	ip -n "$RS_NS" link set pgt0 up
	for i in $(seq 1 "$servers"); do ip -n "$PGT_NS" addr add "${PGT_ADDR[$i]}/24" dev pgt1; done
	ip -n "$PGT_NS" link set pgt1 up
	for i in $(seq 1 "$servers"); do
		# Short: the socket path DIR/.s.PGSQL.5432 must fit in sun_path.
		PGT_DIR[$i]=$(mktemp -d /tmp/rs-pgt-XXXXXX)
		chown postgres: "${PGT_DIR[$i]}"
		chmod 0755 "${PGT_DIR[$i]}"
	done
	pgt_primary
	[ "$servers" -lt 2 ] || pgt_standby
	RS_STORE="postgres:///$PGT_DB?host=${PGT_DIR[1]}"
	PGT_URL="postgres://${PGT_ADDR[1]}:$PGT_PORT/$PGT_DB"
	[ "$servers" -lt 2 ] || PGT_URL="postgres://${PGT_ADDR[1]}:$PGT_PORT,${PGT_ADDR[2]}:$PGT_PORT/$PGT_DB"
	pgt_before_gateways
	rs_log "PostgreSQL in $PGT_NS: gateways use $PGT_URL, the test reads $RS_STORE"
	for i in $(seq 1 "$g"); do gw_start "$i"; done
	sups_start $(seq 1 "$n")
	await "$n supervisors attached" 30 all_attached $(seq 1 "$n")
}

# pgt_sum NAME [LABELMATCH]: a metric summed over the gateways.
pgt_sum() {
	local n s=0 v
	for n in $(seq 1 "$FAULTS_G"); do v=$(metric "$n" "$1" "${2:-}") || return 1; s=$((s + ${v%.*})); done
	echo "$s"
}
pgt_counts() { # what each gateway counted, one line
	local n out=""
	for n in $(seq 1 "$FAULTS_G"); do
		out+="gw-$n: degraded_accepts $(metric "$n" ringsteer_gateway_degraded_accepts_total) claims $(metric "$n" ringsteer_gateway_store_claims_total) store_errors $(metric "$n" ringsteer_gateway_store_errors_total) (unavailable $(metric "$n" ringsteer_gateway_store_errors_total 'kind="unavailable"')) store_up $(metric "$n" ringsteer_gateway_store_up); "
	done
	echo "$out"
}
pgt_store_down_somewhere() {
	local n
	for n in $(seq 1 "$FAULTS_G"); do [ "$(metric "$n" ringsteer_gateway_store_up)" = 0 ] && return 0; done
	return 1
}
pgt_store_up_everywhere() {
	local n
	for n in $(seq 1 "$FAULTS_G"); do [ "$(metric "$n" ringsteer_gateway_store_up)" = 1 ] || return 1; done
}
# pgt_recorded M...: every supervisor 1..FAULTS_N attached as the ledger
# says, and the gauges equal the ledger (nothing unrecorded).
pgt_recorded() { all_attached $(seq 1 "$FAULTS_N") && gauges_match_ledger; }
# pgt_untouched: supervisors 1..K where faults_mark saw them.
pgt_untouched() {
	local m now
	for m in $(seq 1 "$1"); do
		now="$(where "$m") $(session "$m" epoch)"
		[ "$now" = "${FAULTS_MARK[$m]}" ] || fail "sup-$m moved or lost: before [${FAULTS_MARK[$m]}] now [$now]"
	done
}
