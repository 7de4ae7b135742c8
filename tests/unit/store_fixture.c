/* SPDX-License-Identifier: Apache-2.0 */
/* store_fixture.c - the store tests' scratch stores (store_fixture.h). */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "ringsteer/ring.h"
#include "store_fixture.h"

static void pg_quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

int store_fixture_pg_exec(const char *url, const char *sql)
{
	PGconn *c = PQconnectdb(url);
	PGresult *res = NULL;
	int ok = PQstatus(c) == CONNECTION_OK;

	PQsetNoticeProcessor(c, pg_quiet, NULL);
	if (ok) {
		res = PQexec(c, sql);
		ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
	}
	if (!ok)
		fprintf(stderr, "store fixture: %s: %s", sql, PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
	return ok ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

int store_fixture_remove(struct store_fixture *f)
{
	return nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int store_fixture_make(struct store_fixture *f, const char *name, const char *pg_url)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/rs-%s-XXXXXX", name);
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/ringsteer.db", f->dir);
	if (!pg_url || !pg_url[0]) {
		snprintf(f->url, sizeof(f->url), "sqlite:%s", f->path);
		return 0;
	}
	snprintf(f->url, sizeof(f->url), "%s", pg_url);
	if (store_fixture_pg_exec(f->url, "DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public") != 0) {
		store_fixture_remove(f);
		return -1;
	}
	return 0;
}

bool store_fixture_row(struct rs_store *st, const char *member, int64_t now, struct rs_session_row *out)
{
	struct rs_session_row *rows = NULL;
	size_t n = 0;
	bool found = false;

	assert_int_equal(rs_store_list_sessions(st, now, true, &rows, &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].member_id, member) == 0) {
			*out = rows[i];
			found = true;
		}
	}
	free(rows);
	return found;
}

struct rs_gateway_row store_fixture_gateway(struct rs_store *st, const char *id, int64_t now)
{
	struct rs_gateway_row row;

	assert_int_equal(rs_store_gateway_get(st, id, now, &row), 0);
	return row;
}

int store_fixture_setup(void **state)
{
	const char *pg_url = *state;
	struct store_fixture *f = calloc(1, sizeof(*f));

	if (!f || store_fixture_make(f, "store", pg_url) != 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

int store_fixture_teardown(void **state)
{
	int rc = store_fixture_remove(*state);

	free(*state);
	return rc;
}

struct rs_store *store_fixture_open(const struct store_fixture *f, const struct rs_store_options *opt,
				    const char *const *ids, size_t n, int64_t now)
{
	struct rs_store *st = NULL;
	char peer[48];

	assert_int_equal(rs_store_open(f->url, opt, &st), 0);
	for (size_t i = 0; i < n; i++) {
		snprintf(peer, sizeof(peer), "10.0.0.%zu:7001", i + 1);
		assert_int_equal(rs_store_gateway_register(st, ids[i], peer, RS_GATEWAY_SERVING, now), 0);
	}
	return st;
}

void store_fixture_member_owned_by(const char *const *ids, size_t n, const char *owner, const char *prefix,
				   char *out, size_t cap)
{
	struct rs_ring *ring;

	assert_int_equal(rs_ring_new(ids, n, &ring), 0);
	for (int i = 0;; i++) {
		int g;

		snprintf(out, cap, "%s-%d", prefix, i);
		g = rs_ring_owner(ring, out);
		assert_true(g >= 0);
		if (strcmp(rs_ring_gateway_id(ring, (size_t)g), owner) == 0)
			break;
	}
	rs_ring_free(ring);
}
