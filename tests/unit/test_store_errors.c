/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_errors.c - a store that cannot take a write says why (issue
 * 25): a full disk is -ENOSPC, a read-only store -EROFS, a damaged file or
 * page -EUCLEAN, each distinct from -EIO (no answer), so a gateway counts
 * them by kind and an operator is alerted to the one that needs a person.
 *
 * SQLite: a full store is made with PRAGMA max_page_count set on every
 * connection the process opens (an auto-extension: the store's handle is
 * opaque), at the file's size, so the first write needing a page fails as
 * a full disk does; read-only is the store opened read_only (the file
 * opened O_RDONLY: as root, permissions would not refuse a write); damage
 * is the header overwritten (not a database) or every page after the first
 * (corrupt).  PostgreSQL (RS_TEST_PG_URL): a trigger raises disk_full
 * (53100) and data_corrupted / index_corrupted (XX001, XX002); a read-only
 * session answers read_only_sql_transaction (25006).
 *
 * Each failure also carries the backend's own reason
 * (rs_store_last_error, rs_store_open_why): SQLite's message, libpq's or
 * the server's, on one line; a call that succeeds clears it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "ringsteer/store.h"
#include "store/backend.h"
#include "store_fixture.h"

#define T0 1700000000000LL

/* Set by the test that wants its store full; read by every connection the
 * process opens afterwards (the extension has no other way to be told). */
static volatile int limit_pages;

static int limit_extension(sqlite3 *db, char **errmsg, const struct sqlite3_api_routines *api)
{
	(void)errmsg;
	(void)api;
	/* max_page_count never goes below the file's size: 1 means "as it is". */
	if (limit_pages)
		sqlite3_exec(db, "PRAGMA max_page_count=1", NULL, NULL, NULL);
	return SQLITE_OK;
}

static struct rs_admit arrival(const char *member)
{
	return (struct rs_admit){ .gateway_id = "gw-a", .member_id = member, .instance_id = "i-1", .epoch = 1,
				  .stay = true, .sandboxes = 1, .source = "10.1.0.9:40000", .now_ms = T0 };
}

/* Admits members until one fails; returns that error (0: none did). */
static int admit_until_error(struct rs_store *st, int max)
{
	char member[48];

	for (int i = 0; i < max; i++) {
		struct rs_admit a;
		int err;

		snprintf(member, sizeof(member), "member-with-a-long-name-%06d", i);
		a = arrival(member);
		err = rs_store_admit(st, &a);
		if (err)
			return err;
	}
	return 0;
}

static void make_store(const struct store_fixture *f)
{
	const char *const ids[] = { "gw-a" };
	struct rs_store *st;

	limit_pages = 0; /* a failed test before may have left it set */
	st = store_fixture_open(f, NULL, ids, 1, T0);
	rs_store_close(st);
}

static void test_sqlite_full(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = NULL;

	make_store(f);
	limit_pages = 1;
	assert_int_equal(rs_store_open(f->url, NULL, &st), 0);
	assert_int_equal(admit_until_error(st, 5000), -ENOSPC);
	assert_string_equal(rs_store_last_error(st), "database or disk is full");
	/* Reads still answer: only growth is refused. */
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0).state, RS_GATEWAY_SERVING);
	assert_string_equal(rs_store_last_error(st), "");
	rs_store_close(st);
	limit_pages = 0;
}

static void test_sqlite_read_only(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *ro = NULL;
	struct rs_admit a = arrival("m-1");

	make_store(f);
	assert_int_equal(rs_store_open(f->url, &(struct rs_store_options){ .read_only = true }, &ro), 0);
	assert_int_equal(rs_store_gateway_register(ro, "gw-b", "10.0.0.2:7001", RS_GATEWAY_SERVING, T0), -EROFS);
	assert_int_equal(rs_store_admit(ro, &a), -EROFS);
	assert_int_equal(rs_store_heartbeat(ro, "gw-a", T0), -EROFS);
	assert_string_equal(rs_store_last_error(ro), "attempt to write a readonly database");
	rs_store_close(ro);
}

/* Overwrites len bytes of f's file at off with 0xA5 (len 0: to its end). */
static void damage(const struct store_fixture *f, off_t off, size_t len)
{
	char junk[4096];
	int fd = open(f->path, O_WRONLY);
	off_t end;

	assert_true(fd >= 0);
	end = lseek(fd, 0, SEEK_END);
	assert_true(end > off);
	if (len == 0)
		len = (size_t)(end - off);
	memset(junk, 0xA5, sizeof(junk));
	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof(junk) ? len - done : sizeof(junk);

		assert_int_equal(pwrite(fd, junk, n, off + (off_t)done), (ssize_t)n);
		done += n;
	}
	assert_int_equal(close(fd), 0);
}

static void test_sqlite_corrupt(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = NULL;
	char wal[160], why[RS_STORE_ERROR_MAX];

	make_store(f);
	/* The last close checkpointed and removed the WAL: all is in the file. */
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	assert_int_equal(access(wal, F_OK), -1);
	/* Its pages damaged, the header intact: SQLITE_CORRUPT. */
	damage(f, 4096, 0);
	assert_int_equal(rs_store_open_why(f->url, NULL, &st, why, sizeof(why)), -EUCLEAN);
	assert_null(st);
	assert_string_equal(why, "database disk image is malformed");
	/* Its header damaged: SQLITE_NOTADB, the same kind. */
	damage(f, 0, 100);
	assert_int_equal(rs_store_open_why(f->url, NULL, &st, why, sizeof(why)), -EUCLEAN);
	assert_string_equal(why, "file is not a database");
	assert_int_equal(rs_store_open(f->url, &(struct rs_store_options){ .read_only = true }, &st), -EUCLEAN);
}

/* A store that cannot be opened says why in the backend's words: SQLite
 * with the system's error, libpq with its message's lines joined. */
static void test_open_why(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = NULL;
	char url[sizeof(f->dir) + 32], why[RS_STORE_ERROR_MAX], tiny[8];

	snprintf(url, sizeof(url), "sqlite:%s/missing/ringsteer.db", f->dir);
	assert_int_equal(rs_store_open_why(url, NULL, &st, why, sizeof(why)), -EIO);
	assert_null(st);
	assert_string_equal(why, "unable to open database file (No such file or directory)");
	assert_int_equal(rs_store_open_why(url, &(struct rs_store_options){ .read_only = true }, &st, why, sizeof(why)),
			 -ENOENT);
	assert_string_equal(why, "unable to open database file (No such file or directory)");
	/* Cut to fit the caller's buffer; none given is fine. */
	assert_int_equal(rs_store_open_why(url, NULL, &st, tiny, sizeof(tiny)), -EIO);
	assert_string_equal(tiny, "unable ");
	assert_int_equal(rs_store_open_why(url, NULL, &st, NULL, 0), -EIO);
	/* Port 1: nothing listens there, the connection is refused at once. */
	assert_int_equal(rs_store_open_why("postgres://127.0.0.1:1/x?connect_timeout=2", NULL, &st, why, sizeof(why)),
			 -EIO);
	assert_non_null(strstr(why, "connection to server at \"127.0.0.1\", port 1 failed: Connection refused; "));
	assert_null(strchr(why, '\n'));
	/* A malformed URL: libpq's reason for refusing it. */
	assert_int_equal(rs_store_open_why("postgres://h/db?no_such_option=1", NULL, &st, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "invalid URI query parameter: \"no_such_option\"");
	/* Nothing the backend could say: "". */
	assert_int_equal(rs_store_open_why("redis://h/db", NULL, &st, why, sizeof(why)), -EPROTONOSUPPORT);
	assert_string_equal(why, "");
}

/* One line, white space folded, control characters shown, cut to fit;
 * the first reason stays. */
static void test_error_set(void **state)
{
	char e[RS_STORE_ERROR_MAX] = "", long_text[2 * RS_STORE_ERROR_MAX];

	(void)state;
	rs_store_error_set(e, "%s", "  could not connect\n\tIs it running?\n\n");
	assert_string_equal(e, "could not connect; Is it running?");
	rs_store_error_set(e, "%s", "a later failure");
	assert_string_equal(e, "could not connect; Is it running?");
	e[0] = '\0';
	rs_store_error_set(e, "bell\a %d  spaces", 7);
	assert_string_equal(e, "bell? 7 spaces");
	e[0] = '\0';
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	for (size_t i = 1; i < sizeof(long_text) - 1; i += 2)
		long_text[i] = '\n';
	rs_store_error_set(e, "%s", long_text);
	assert_true(strlen(e) < RS_STORE_ERROR_MAX);
	assert_int_equal(strncmp(e, "x; x; x", 7), 0);
	rs_store_error_set(NULL, "%s", "nowhere to go");
}

/* The kinds a gateway counts store errors by (its metric's label). */
static void test_error_kinds(void **state)
{
	(void)state;
	assert_int_equal(rs_store_error_kind(-ENOSPC), RS_STORE_ERROR_FULL);
	assert_int_equal(rs_store_error_kind(-EROFS), RS_STORE_ERROR_READONLY);
	assert_int_equal(rs_store_error_kind(-EUCLEAN), RS_STORE_ERROR_CORRUPT);
	assert_int_equal(rs_store_error_kind(-EIO), RS_STORE_ERROR_UNAVAILABLE);
	assert_int_equal(rs_store_error_kind(-EBUSY), RS_STORE_ERROR_UNAVAILABLE);
	assert_int_equal(rs_store_error_kind(-ETIMEDOUT), RS_STORE_ERROR_UNAVAILABLE);
	assert_int_equal(rs_store_error_kind(-ENOMEM), RS_STORE_ERROR_OTHER);
	assert_int_equal(rs_store_error_kind(-ENOENT), RS_STORE_ERROR_OTHER);
	assert_string_equal(rs_store_error_kind_label(RS_STORE_ERROR_FULL), "full");
	assert_string_equal(rs_store_error_kind_label(RS_STORE_ERROR_READONLY), "readonly");
	assert_string_equal(rs_store_error_kind_label(RS_STORE_ERROR_CORRUPT), "corrupt");
	assert_string_equal(rs_store_error_kind_label(RS_STORE_ERROR_UNAVAILABLE), "unavailable");
	assert_string_equal(rs_store_error_kind_label(RS_STORE_ERROR_OTHER), "other");
	assert_string_equal(rs_store_error_kind_label(RS_STORE_ERROR_KINDS), "other");
}

/* Makes every insert into sessions fail with SQLSTATE code. */
static void pg_fail_inserts(const struct store_fixture *f, const char *code)
{
	char sql[512];

	snprintf(sql, sizeof(sql),
		 "CREATE OR REPLACE FUNCTION rs_test_fail() RETURNS trigger LANGUAGE plpgsql AS "
		 "$$BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '%s'; END$$;"
		 "DROP TRIGGER IF EXISTS rs_test_fail ON sessions;"
		 "CREATE TRIGGER rs_test_fail BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION rs_test_fail()",
		 code);
	assert_int_equal(store_fixture_pg_exec(f->url, sql), 0);
}

static void test_pg_sqlstates(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a" };
	struct rs_store *st = store_fixture_open(f, NULL, ids, 1, T0), *ro = NULL;
	struct rs_admit a;

	pg_fail_inserts(f, "53100");
	a = arrival("m-1");
	assert_int_equal(rs_store_admit(st, &a), -ENOSPC);
	pg_fail_inserts(f, "XX001");
	a = arrival("m-1");
	assert_int_equal(rs_store_admit(st, &a), -EUCLEAN);
	pg_fail_inserts(f, "XX002");
	a = arrival("m-1");
	assert_int_equal(rs_store_admit(st, &a), -EUCLEAN);
	/* Anything else stays what it was. */
	pg_fail_inserts(f, "P0001");
	a = arrival("m-1");
	assert_int_equal(rs_store_admit(st, &a), -EIO);
	assert_string_equal(rs_store_last_error(st), "injected"); /* the server's primary message */
	assert_int_equal(store_fixture_pg_exec(f->url, "DROP TRIGGER rs_test_fail ON sessions"), 0);
	a = arrival("m-1");
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_string_equal(rs_store_last_error(st), "");
	/* A read-only session (default_transaction_read_only): 25006. */
	assert_int_equal(rs_store_open(f->url, &(struct rs_store_options){ .read_only = true }, &ro), 0);
	assert_int_equal(rs_store_heartbeat(ro, "gw-a", T0), -EROFS);
	assert_int_equal(rs_store_heartbeat(ro, "gw-a", T0), -EROFS);
	rs_store_close(ro);
	rs_store_close(st);
}

int main(void)
{
	const struct CMUnitTest sqlite_tests[] = {
		cmocka_unit_test_setup_teardown(test_sqlite_full, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_read_only, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_corrupt, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_open_why, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test(test_error_set),
		cmocka_unit_test(test_error_kinds),
	};
	const char *base = getenv("RS_TEST_PG_URL");
	char pg_url[600], sql[96];
	const struct CMUnitTest pg_tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_pg_sqlstates, store_fixture_setup, store_fixture_teardown,
							 pg_url),
	};
	int failed;

	sqlite3_auto_extension((void (*)(void))limit_extension);
	failed = cmocka_run_group_tests_name("store_errors (sqlite)", sqlite_tests, NULL, NULL);
	if (!base || !base[0]) {
		printf("# store_errors (postgres): SKIPPED, RS_TEST_PG_URL is not set\n");
		return failed;
	}
	/* A database of its own: the fixture empties the one it is given. */
	snprintf(sql, sizeof(sql), "CREATE DATABASE rs_errors_%ld", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(pg_url, sizeof(pg_url), "%s%sdbname=rs_errors_%ld", base, strchr(base, '?') ? "&" : "?",
		 (long)getpid());
	failed += cmocka_run_group_tests_name("store_errors (postgres)", pg_tests, NULL, NULL);
	snprintf(sql, sizeof(sql), "DROP DATABASE rs_errors_%ld WITH (FORCE)", (long)getpid());
	store_fixture_pg_exec(base, sql);
	return failed;
}
