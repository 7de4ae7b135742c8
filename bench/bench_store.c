/* SPDX-License-Identifier: Apache-2.0 */
/* bench_store.c - placements per second through the store with 0 and
 * with 40,000 session rows already there (issue 15: store work must not
 * grow with the sessions): 1, 4 and 16 concurrent arrivals (threads, each
 * with its own handle, as gateways are processes), and one handle
 * admitting batches of 1, 4, 16, 64 and 256 (rs_store_admit_batch: on
 * PostgreSQL a batch costs a fixed number of round trips whatever its
 * size, so the large ones show what that buys), and one handle
 * steering a node agent's registrations in batches of 1, 4 and 16
 * (rs_store_steer_batch: the agent's storm of registrations).  SQLite: a file
 * in a temporary directory; PostgreSQL too when RS_BENCH_PG_URL is a base
 * URL (tests/pg/pg_server.sh start prints one), in a database of its own.
 * Each cell runs RS_BENCH_SECONDS (default 2) on a fresh store.  Goal: the
 * two row counts within 20% of each other in every cell.
 * RS_BENCH_ONLY=pg-batch runs the PostgreSQL batched cells alone (what
 * bench/store_pgbench.sh compares with pgbench's TPC-B).
 *
 * The rows are what a busy fleet holds: active sessions spread over the 4
 * gateways (each gateway's attached count), every tenth a reservation
 * already lapsed (the pending index skips it).  Arrivals are fresh members
 * that never follow their redirects. */
#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringsteer/store.h"

#define GATEWAYS 4
#define MAX_THREADS 16
#define MAX_BATCH 256

static const char *const gateway_ids[GATEWAYS] = { "gw-0", "gw-1", "gw-2", "gw-3" };
/* Threads (mode 0) or batch sizes (modes 1 and 2): every mode has the
 * first three; batched admission (mode 1) all of them. */
static const unsigned widths[] = { 1, 4, 16, 64, 256 };
#define WIDTHS (sizeof(widths) / sizeof(widths[0]))
#define COMMON_WIDTHS 3
static size_t mode_widths(int mode)
{
	return mode == 1 ? WIDTHS : COMMON_WIDTHS;
}
static const unsigned preloads[] = { 0, 40000 };
#define PRELOADS (sizeof(preloads) / sizeof(preloads[0]))

struct worker {
	const char *url;
	unsigned id, batch; /* batch 0: single admissions */
	bool steer;         /* rs_store_steer_batch of `batch` members instead */
	double seconds;
	pthread_barrier_t *barrier;
	uint64_t done;
	int err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct rs_store_options opt = { .busy_timeout_ms = 30000 };
	struct rs_store *st = NULL;
	struct rs_admit a[MAX_BATCH];
	char members[MAX_BATCH][48];
	int errs[MAX_BATCH];
	unsigned n = w->batch ? w->batch : 1;
	double end;

	if (n > MAX_BATCH) {
		w->err = -EINVAL;
		return NULL;
	}
	w->err = rs_store_open(w->url, &opt, &st);
	pthread_barrier_wait(w->barrier);
	end = now_s() + w->seconds;
	while (!w->err && now_s() < end) {
		int64_t now = wall_ms();
		const char *gw = gateway_ids[(w->id + w->done) % GATEWAYS];

		for (unsigned i = 0; i < n; i++) {
			snprintf(members[i], sizeof(members[i]), "t%u-%llu", w->id, (unsigned long long)(w->done + i));
			a[i] = (struct rs_admit){ .gateway_id = gw, .member_id = members[i], .instance_id = "bench",
						  .epoch = 1, .sandboxes = 1, .source = "", .now_ms = now };
		}
		if (w->steer) {
			const char *ids[MAX_BATCH];
			struct rs_store_steer outs[MAX_BATCH];

			for (unsigned i = 0; i < n; i++)
				ids[i] = members[i];
			w->err = rs_store_steer_batch(st, ids, n, now, outs, errs);
		} else {
			w->err = w->batch ? rs_store_admit_batch(st, a, n, errs) : rs_store_admit(st, &a[0]);
		}
		if (!w->err)
			w->done += n;
	}
	rs_store_close(st);
	return NULL;
}

/* A fresh store at url with the gateways and `rows` session rows. */
static int fill(const char *url, unsigned rows)
{
	struct rs_store *st = NULL;
	int64_t now = wall_ms();
	int err = rs_store_open(url, NULL, &st);

	for (size_t g = 0; !err && g < GATEWAYS; g++) {
		char peer[32];

		snprintf(peer, sizeof(peer), "10.0.0.%zu:7443", g + 1);
		err = rs_store_gateway_start(st, gateway_ids[g], peer, RS_GATEWAY_SERVING, now + 600000);
	}
	for (unsigned i = 0; !err && i < rows; i++) {
		char member[32];

		snprintf(member, sizeof(member), "old-%u", i);
		if (i % 10 == 9) { /* a reservation that lapsed long ago */
			struct rs_admit a = { .gateway_id = gateway_ids[i % GATEWAYS], .member_id = member,
					      .epoch = 1, .now_ms = now - 3600000 };
			err = rs_store_admit(st, &a);
		} else {
			struct rs_session_claim c = { .gateway_id = gateway_ids[i % GATEWAYS], .member_id = member,
						      .epoch = 1, .sandboxes = 1, .now_ms = now };
			err = rs_store_session_claim(st, &c);
		}
	}
	/* The claims and admissions moved the heartbeats: far ahead again. */
	for (size_t g = 0; !err && g < GATEWAYS; g++)
		err = rs_store_heartbeat(st, gateway_ids[g], now + 600000);
	rs_store_close(st);
	return err;
}

/* One cell: threads handles single-admitting, or one handle batching. */
static double run_cell(const char *url, unsigned threads, unsigned batch, bool steer, double seconds)
{
	struct worker workers[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	pthread_barrier_t barrier;
	uint64_t total = 0;
	double start, elapsed;
	int err = 0;

	pthread_barrier_init(&barrier, NULL, threads + 1);
	for (unsigned i = 0; i < threads; i++) {
		workers[i] = (struct worker){ .url = url, .id = i, .batch = batch, .steer = steer, .seconds = seconds,
					      .barrier = &barrier };
		if (pthread_create(&tids[i], NULL, work, &workers[i]) != 0) {
			fprintf(stderr, "bench_store_rows: cannot start a thread\n");
			exit(1);
		}
	}
	pthread_barrier_wait(&barrier);
	start = now_s();
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(tids[i], NULL);
		total += workers[i].done;
		if (workers[i].err && !err)
			err = workers[i].err;
	}
	elapsed = now_s() - start;
	pthread_barrier_destroy(&barrier);
	if (err) {
		fprintf(stderr, "bench_store_rows: %s: %s\n", steer ? "steer" : "admit", strerror(-err));
		return err;
	}
	return (double)total / elapsed;
}

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static int pg_admin(const char *base, const char *sql)
{
	PGconn *c = PQconnectdb(base);
	PGresult *res = NULL;
	int ok = PQstatus(c) == CONNECTION_OK;

	PQsetNoticeProcessor(c, quiet, NULL);
	if (ok) {
		res = PQexec(c, sql);
		ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	}
	if (!ok)
		fprintf(stderr, "bench_store_rows: %s: %s: %s", base, sql, PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
	return ok ? 0 : -1;
}

/* A fresh store for one cell: a new file, or a new database. */
static int fresh(const char *pg_base, const char *dir, unsigned cell, char *url, size_t size)
{
	char sql[128];

	if (!pg_base) {
		snprintf(url, size, "sqlite:%s/cell-%u.db", dir, cell);
		return 0;
	}
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_bench_rows_%ld WITH (FORCE)", (long)getpid());
	if (pg_admin(pg_base, sql) != 0)
		return -EIO;
	snprintf(sql, sizeof(sql), "CREATE DATABASE rs_bench_rows_%ld", (long)getpid());
	if (pg_admin(pg_base, sql) != 0)
		return -EIO;
	snprintf(url, size, "%s%sdbname=rs_bench_rows_%ld", pg_base, strchr(pg_base, '?') ? "&" : "?",
		 (long)getpid());
	return 0;
}

static int run_backend(const char *name, const char *pg_base, const char *dir, double seconds, bool batch_only)
{
	double rates[3][WIDTHS][PRELOADS];
	char url[700];
	unsigned cell = 0;

	for (int mode = 0; mode < 3; mode++)
		for (size_t w = 0; w < mode_widths(mode) && (!batch_only || mode == 1); w++)
			for (size_t p = 0; p < PRELOADS; p++) {
				int err = fresh(pg_base, dir, cell++, url, sizeof(url));

				if (!err)
					err = fill(url, preloads[p]);
				if (err) {
					fprintf(stderr, "bench_store_rows: %s: fill: %s\n", name, strerror(-err));
					return err;
				}
				rates[mode][w][p] = mode == 0 ? run_cell(url, widths[w], 0, false, seconds)
							      : run_cell(url, 1, widths[w], mode == 2, seconds);
				if (rates[mode][w][p] < 0)
					return (int)rates[mode][w][p];
			}
	printf("%s: placements per second (%d gateways, %.1f s per cell, fresh store per cell)\n", name, GATEWAYS,
	       seconds);
	printf("%-28s %12s %12s %10s\n", "arrivals", "0 rows", "40000 rows", "40k/0");
	for (int mode = 0; mode < 3; mode++)
		for (size_t w = 0; w < mode_widths(mode) && (!batch_only || mode == 1); w++) {
			static const char *const fmt[3] = { "%u concurrent (handles)", "batches of %u (1 handle)",
							    "steers, batches of %u" };
			char label[40];

			snprintf(label, sizeof(label), fmt[mode], widths[w]);
			printf("%-28s %12.0f %12.0f %10.2f\n", label, rates[mode][w][0], rates[mode][w][1],
			       rates[mode][w][1] / rates[mode][w][0]);
		}
	return 0;
}

int main(void)
{
	const char *pg_base = getenv("RS_BENCH_PG_URL");
	const char *secs = getenv("RS_BENCH_SECONDS");
	const char *only = getenv("RS_BENCH_ONLY");
	bool pg_batch_only = only && strcmp(only, "pg-batch") == 0;
	double seconds = secs ? atof(secs) : 2.0;
	char dir[] = "/tmp/rs-bench-rows-XXXXXX", cmd[96];
	int err;

	if (seconds <= 0 || seconds > 600)
		seconds = 2.0;
	if (!mkdtemp(dir)) {
		perror("bench_store_rows: mkdtemp");
		return 1;
	}
	err = pg_batch_only ? 0 : run_backend("sqlite", NULL, dir, seconds, false);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_store_rows: could not remove %s\n", dir);
	if (err)
		return 1;
	if (pg_base && pg_base[0]) {
		char sql[128];

		err = run_backend("postgres", pg_base, dir, seconds, pg_batch_only);
		snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_bench_rows_%ld WITH (FORCE)", (long)getpid());
		pg_admin(pg_base, sql);
		if (err)
			return 1;
	} else {
		printf("postgres: SKIPPED, RS_BENCH_PG_URL is not set (tests/pg/pg_server.sh start DIR prints one)\n");
	}
	return 0;
}
