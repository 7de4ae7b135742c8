/* SPDX-License-Identifier: Apache-2.0 */
/* store_fixture.h - what the store's unit tests share: a scratch store
 * (SQLite in a fresh temporary directory, or a PostgreSQL database emptied
 * for the test), raw SQL on PostgreSQL, and reading one row back. */
#ifndef RS_STORE_FIXTURE_H
#define RS_STORE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/store.h"

struct store_fixture {
	char dir[64];   /* the temporary directory (SQLite's file, scratch files) */
	char path[128]; /* SQLite: the database file */
	char url[760];  /* the store's URL */
};

/* Makes a fresh temporary directory /tmp/rs-NAME-XXXXXX and points url at a
 * SQLite file in it, or, with pg_url not NULL and not empty, at pg_url's
 * database with its public schema dropped and made again.  Returns 0 or -1
 * (nothing left behind). */
int store_fixture_make(struct store_fixture *f, const char *name, const char *pg_url);

/* Removes the temporary directory and all in it.  Returns 0 or -1. */
int store_fixture_remove(struct store_fixture *f);

/* cmocka setup and teardown around store_fixture_make/_remove: the
 * prestate, when given, is the PostgreSQL base URL (a char array; empty or
 * NULL: SQLite); *state becomes the struct store_fixture. */
int store_fixture_setup(void **state);
int store_fixture_teardown(void **state);

/* Opens f's store with opt and registers gateways ids[0..n), serving, at
 * now, peers 10.0.0.(i+1):7001 (the test fails otherwise). */
struct rs_store *store_fixture_open(const struct store_fixture *f, const struct rs_store_options *opt,
				    const char *const *ids, size_t n, int64_t now);

/* Runs sql on the PostgreSQL database at url, notices silenced.  Returns 0,
 * or -1 (the error printed) when it did not succeed. */
int store_fixture_pg_exec(const char *url, const char *sql);

/* Reads member's row (live or not) at now; false when it has none. */
bool store_fixture_row(struct rs_store *st, const char *member, int64_t now, struct rs_session_row *out);

/* Reads gateway id's row at now (the test fails when it has none). */
struct rs_gateway_row store_fixture_gateway(struct rs_store *st, const char *id, int64_t now);

/* Writes into out (cap bytes) the first member id "prefix-N" whose ring
 * owner among ids[0..n) is owner. */
void store_fixture_member_owned_by(const char *const *ids, size_t n, const char *owner, const char *prefix,
				   char *out, size_t cap);

#endif
