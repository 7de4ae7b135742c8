#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pg_server.sh - a throwaway PostgreSQL server for the store's tests and
# benchmarks: one cluster in DIR/data, run by the unprivileged `postgres`
# system user, reachable only on a UNIX socket in DIR (no TCP port, so two
# runs never collide), fsync off (the data is thrown away).
#
# Clients connect as a superuser role named after the user who started the
# server (root in the tests), so the URLs printed need no user= and libpq's
# default (the OS user name) just works; the role may drop and create
# databases and schemas, which the tests do to isolate themselves.
#
# usage: pg_server.sh start DIR      -> initdb, start, create database
#                                       `ringsteer`; prints its URL
#        pg_server.sh newdb DIR NAME -> creates database NAME; prints its URL
#        pg_server.sh stop DIR       -> stops the server, removes DIR
#        pg_server.sh template FILE  -> a tar of a new cluster (for
#                                       RS_PG_TEMPLATE)
# URLs look like postgres:///ringsteer?host=DIR (libpq URI, socket dir).
# RS_PG_TEMPLATE=FILE: `start` unpacks that cluster instead of running
# initdb: inside a qemu guest under software emulation initdb takes about
# 20 s, a copy of the cluster's thousand files over 9p 8 s, one tar 1.3 s
# (its WAL segments are 1 MiB, not 16).
set -euo pipefail

die() { echo "pg_server.sh: $*" >&2; exit 1; }

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
	for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && bindir=$d; done
fi
[ -n "$bindir" ] && [ -x "$bindir/pg_ctl" ] || die "no PostgreSQL server binaries (apt-get install postgresql)"
pg_user=${PG_SYSTEM_USER:-postgres}
id "$pg_user" >/dev/null 2>&1 || die "no system user $pg_user (installed with the postgresql package)"
role=$(id -un)

# Runs a command as the server's user (root drops to it; that user runs it as is).
as_pg() {
	if [ "$(id -un)" = "$pg_user" ]; then "$@"; else runuser -u "$pg_user" -- "$@"; fi
}

psql_pg() { # sql...: as the server's superuser, on its socket
	as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -d postgres -c "$1" >/dev/null
}

# initdb into $1 (owned by the server's user), its output to $2, further
# initdb flags after them, as every cluster here is made.
make_cluster() {
	local data=$1 log=$2
	shift 2
	as_pg "$bindir/initdb" -D "$data" -U "$pg_user" -A trust -E UTF8 --locale=C.UTF-8 \
		--no-sync "$@" >"$log" 2>&1 || { cat "$log" >&2; die "initdb failed"; }
}

valid_name() { [[ $1 =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || die "bad database name '$1' (lowercase, digits, _)"; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: pg_server.sh start|newdb|stop DIR [NAME]"
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac
# A UNIX socket path (DIR/.s.PGSQL.5432) must fit in sun_path (107 bytes);
# a template is a file, never a server's directory.
[ "$cmd" = template ] || [ ${#dir} -le 80 ] || die "DIR too long for a socket path: $dir"

case $cmd in
start)
	if [ -f "$dir/data/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
		echo "postgres:///ringsteer?host=$dir"
		exit 0 # already running: idempotent
	fi
	mkdir -p "$dir"
	# The server's user owns DIR (its data and its socket live there); others
	# may traverse it to reach the socket.
	chown "$pg_user": "$dir"
	chmod 0755 "$dir"
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		if [ -n "${RS_PG_TEMPLATE:-}" ] && [ -f "$RS_PG_TEMPLATE" ]; then
			tar -C "$dir" -xf "$RS_PG_TEMPLATE" && chown -R "$pg_user": "$dir/data" ||
				die "cannot unpack the template cluster $RS_PG_TEMPLATE"
		else
			make_cluster "$dir/data" "$dir/initdb.log"
		fi
	fi
	as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
		-o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start >/dev/null || { tail -n 20 "$dir/server.log" >&2; die "server did not start"; }
	psql_pg "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN CREATE ROLE \"$role\" SUPERUSER LOGIN; END IF; END\$\$"
	if ! as_pg "$bindir/psql" -X -tA -h "$dir" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'ringsteer'" | grep -q 1; then
		psql_pg "CREATE DATABASE ringsteer OWNER \"$role\""
	fi
	echo "postgres:///ringsteer?host=$dir"
	;;
newdb)
	name=${3:-}
	[ -n "$name" ] || die "usage: pg_server.sh newdb DIR NAME"
	valid_name "$name"
	as_pg "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 || die "no server running in $dir"
	psql_pg "CREATE DATABASE \"$name\" OWNER \"$role\""
	echo "postgres:///$name?host=$dir"
	;;
stop)
	[ -d "$dir" ] || exit 0
	if [ -f "$dir/data/postmaster.pid" ]; then
		as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null ||
			die "server in $dir did not stop (see $dir/server.log)"
	fi
	rm -rf "$dir"
	;;
template)
	tmp=$(mktemp -d)
	chown "$pg_user": "$tmp"
	make_cluster "$tmp/data" "$tmp/initdb.log" --wal-segsize=1
	tar -C "$tmp" -cf "$dir.tmp" data && mv "$dir.tmp" "$dir" || { rm -rf "$tmp" "$dir.tmp"; die "cannot write $dir"; }
	rm -rf "$tmp"
	;;
*)
	die "unknown command '$cmd' (start, newdb, stop, template)"
	;;
esac
