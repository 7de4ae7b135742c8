/* bench_store.c - placements per second through each store backend: the
 * placement transaction (rs_store_admit) for fresh members arriving at 4
 * registered gateways, with 1, 4 and 16 arrivals at once (threads, each
 * with its own handle, as gateways are separate processes).  SQLite: a file
 * in a temporary directory; PostgreSQL: RS_BENCH_PG_URL (a base URL as
 * tests/pg/pg_server.sh start prints; skipped, saying so, when unset), in a
 * database of its own.  Each cell runs RS_BENCH_SECONDS (default 3).
 *
 * Arrivals never follow their redirects: each admission is one placement
 * (a redirect writes a reservation, an accept an active row), and the rows
 * pile up as in a busy fleet, so later cells see more rows than earlier. */
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

static const char *const gateway_ids[GATEWAYS] = { "gw-0", "gw-1", "gw-2", "gw-3" };
static const unsigned concurrency[] = { 1, 4, 16 };
#define CELLS (sizeof(concurrency) / sizeof(concurrency[0]))

struct worker {
	const char *url;
	const char *backend;
	unsigned id, cell;
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
	double end;

	w->err = rs_store_open(w->url, &opt, &st);
	pthread_barrier_wait(w->barrier);
	end = now_s() + w->seconds;
	while (!w->err && now_s() < end) {
		char member[64];
		struct rs_admit a = {
			.gateway_id = gateway_ids[(w->id + w->done) % GATEWAYS],
			.member_id = member,
			.instance_id = "bench",
			.epoch = 1,
			.sandboxes = 1,
			.source = "",
			.now_ms = wall_ms(),
		};

		snprintf(member, sizeof(member), "%s-c%u-t%u-%llu", w->backend, w->cell, w->id,
			 (unsigned long long)w->done);
		w->err = rs_store_admit(st, &a);
		if (!w->err)
			w->done++;
	}
	rs_store_close(st);
	return NULL;
}

/* Runs one cell; returns placements per second, or a negative errno. */
static double run_cell(const char *url, const char *backend, unsigned cell, unsigned threads, double seconds)
{
	struct worker workers[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	pthread_barrier_t barrier;
	uint64_t total = 0;
	double start, elapsed;
	int err = 0;

	pthread_barrier_init(&barrier, NULL, threads + 1);
	for (unsigned i = 0; i < threads; i++) {
		workers[i] = (struct worker){ .url = url, .backend = backend, .id = i, .cell = cell,
					      .seconds = seconds, .barrier = &barrier };
		if (pthread_create(&tids[i], NULL, work, &workers[i]) != 0) {
			fprintf(stderr, "bench_store: cannot start a thread\n");
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
		fprintf(stderr, "bench_store: %s: rs_store_admit: %s\n", backend, strerror(-err));
		return err;
	}
	return (double)total / elapsed;
}

/* Registers the gateways, then measures every cell into rates[]. */
static int run_backend(const char *url, const char *backend, double seconds, double *rates)
{
	struct rs_store *st = NULL;
	int err = rs_store_open(url, NULL, &st);

	for (size_t g = 0; !err && g < GATEWAYS; g++) {
		char peer[32];

		snprintf(peer, sizeof(peer), "10.0.0.%zu:7443", g + 1);
		err = rs_store_gateway_register(st, gateway_ids[g], peer, RS_GATEWAY_SERVING, wall_ms() + 600000);
	}
	rs_store_close(st);
	if (err) {
		fprintf(stderr, "bench_store: %s: cannot open or fill %s: %s\n", backend, url, strerror(-err));
		return err;
	}
	for (size_t c = 0; c < CELLS; c++) {
		rates[c] = run_cell(url, backend, (unsigned)c, concurrency[c], seconds);
		if (rates[c] < 0)
			return (int)rates[c];
	}
	return 0;
}

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Runs sql on the server at base; returns 0 or -1 (said). */
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
		fprintf(stderr, "bench_store: %s: %s: %s", base, sql, PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
	return ok ? 0 : -1;
}

int main(void)
{
	const char *pg_base = getenv("RS_BENCH_PG_URL");
	const char *secs = getenv("RS_BENCH_SECONDS");
	double seconds = secs ? atof(secs) : 3.0;
	double sqlite_rates[CELLS], pg_rates[CELLS];
	char dir[] = "/tmp/rs-bench-store-XXXXXX", url[600], sql[96];
	bool have_pg = pg_base && pg_base[0];
	int err;

	if (seconds <= 0 || seconds > 600)
		seconds = 3.0;
	if (!mkdtemp(dir)) {
		perror("bench_store: mkdtemp");
		return 1;
	}
	snprintf(url, sizeof(url), "sqlite:%s/ringsteer.db", dir);
	err = run_backend(url, "sqlite", seconds, sqlite_rates);
	snprintf(sql, sizeof(sql), "rm -rf '%s'", dir);
	if (system(sql) != 0)
		fprintf(stderr, "bench_store: could not remove %s\n", dir);
	if (err)
		return 1;

	if (have_pg) {
		snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_bench_%ld", (long)getpid());
		if (pg_admin(pg_base, sql) != 0)
			return 1;
		snprintf(sql, sizeof(sql), "CREATE DATABASE rs_bench_%ld", (long)getpid());
		if (pg_admin(pg_base, sql) != 0)
			return 1;
		snprintf(url, sizeof(url), "%s%sdbname=rs_bench_%ld", pg_base, strchr(pg_base, '?') ? "&" : "?",
			 (long)getpid());
		err = run_backend(url, "postgres", seconds, pg_rates);
		snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_bench_%ld WITH (FORCE)", (long)getpid());
		pg_admin(pg_base, sql);
		if (err)
			return 1;
	}

	printf("store placements per second (rs_store_admit, %d gateways, %.1f s per cell)\n", GATEWAYS, seconds);
	printf("%-12s %12s %12s %10s\n", "concurrent", "sqlite", "postgres", "pg/sqlite");
	for (size_t c = 0; c < CELLS; c++) {
		if (have_pg)
			printf("%-12u %12.0f %12.0f %10.2f\n", concurrency[c], sqlite_rates[c], pg_rates[c],
			       pg_rates[c] / sqlite_rates[c]);
		else
			printf("%-12u %12.0f %12s %10s\n", concurrency[c], sqlite_rates[c], "-", "-");
	}
	if (!have_pg)
		printf("postgres: SKIPPED, RS_BENCH_PG_URL is not set (tests/pg/pg_server.sh start DIR prints one)\n");
	return 0;
}
