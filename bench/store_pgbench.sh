#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/store_pgbench.sh - the store's placements per second on PostgreSQL
# against what the same server does for pgbench's TPC-B, so that the
# figure says how near the database's own limit admissions run (issue 27):
# one throwaway server (tests/pg/pg_server.sh), bench_store's batched
# PostgreSQL cells (RS_BENCH_ONLY=pg-batch: batches of 1..256, 0 and 40,000
# rows), then `pgbench -i -s 10` and `pgbench -T 20 -c 4` in a database of
# their own, and the best batched cell's placements/s over TPC-B's tps.
# A TPC-B transaction is 5 statements on 4 tables; a batch of admissions
# 7 statements however many it places, so the ratio may exceed 1.
#
# usage: bench/store_pgbench.sh BUILD   (exit 77: no server or no pgbench)
# RS_BENCH_SECONDS: seconds per bench_store cell (default 2);
# PGBENCH_SECONDS: pgbench's -T (default 20).
set -euo pipefail

build=${1:?usage: $0 BUILD}
bench=$build/bench/bench_store
[ -x "$bench" ] || { echo "store_pgbench: no $bench (make $bench)" >&2; exit 1; }
pgbench=
for b in /usr/lib/postgresql/*/bin/pgbench; do [ -x "$b" ] && pgbench=$b; done
[ -n "$pgbench" ] || { echo "store_pgbench: no pgbench (apt-get install postgresql-contrib): skipped"; exit 77; }

dir=$(mktemp -d /tmp/rs-pgbench-XXXXXX)
url=$(tests/pg/pg_server.sh start "$dir") || { rm -rf "$dir"; echo "store_pgbench: no PostgreSQL server: skipped"; exit 77; }
trap 'tests/pg/pg_server.sh stop "$dir" >/dev/null 2>&1 || rm -rf "$dir"' EXIT

out=$(RS_BENCH_ONLY=pg-batch RS_BENCH_PG_URL=$url "$bench")
echo "$out"
# The best of the "batches of N" rows, both row counts.
best=$(echo "$out" | awk '/^batches of/ { for (i = 6; i <= 7; i++) if ($i + 0 > b) { b = $i + 0; c = $3 } }
	END { if (b) printf "%d %s\n", b, c }')
[ -n "$best" ] || { echo "store_pgbench: no batched cell in bench_store's output" >&2; exit 1; }
read -r placements batch <<<"$best"

tpcb_url=$(tests/pg/pg_server.sh newdb "$dir" pgbench)
"$pgbench" -q -i -s 10 "$tpcb_url" >/dev/null 2>&1 || { echo "store_pgbench: pgbench -i failed" >&2; exit 1; }
tpcb=$("$pgbench" -T "${PGBENCH_SECONDS:-20}" -c 4 "$tpcb_url" 2>/dev/null)
echo "$tpcb" | grep -E '^(scaling|number of clients|duration|number of transactions actually|latency average|tps)'
tps=$(echo "$tpcb" | awk '/^tps = / { print $3; exit }')
[ -n "$tps" ] || { echo "store_pgbench: no tps in pgbench's output" >&2; exit 1; }
awk -v p="$placements" -v b="$batch" -v t="$tps" 'BEGIN {
	printf "store_pgbench: best batched cell %d placements/s (batches of %s), TPC-B %.0f tps (-s 10 -c 4): ratio %.2f\n",
		p, b, t, p / t }'
