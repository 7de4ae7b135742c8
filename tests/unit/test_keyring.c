/* SPDX-License-Identifier: Apache-2.0 */
/* test_keyring.c - key rotation: a keyring verifies a token with the key
 * its key id names (a token without one with the first, legacy key), signs
 * with the newest key whose time has come, and refuses a token of a key
 * that was removed.  Known answers were computed outside this code with
 *   printf '<kid>:<member>\n<expiry>' | openssl dgst -sha256 -hmac '<key>'
 * The file format's errors carry their line; the file loader refuses a
 * file its group or others may access. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ringsteer/keyring.h"
#include "ringsteer/proto.h"
#include "ringsteer/token.h"

#define MEMBER "sup-7.pod.ns"
#define EXP 1700000000ULL
#define NOW 1600000000ULL
#define LEGACY_TOKEN MEMBER ".1700000000.28823553d0882cd675d037e690ddcce704f4fa1675c4f7c19730e13bbcba0048"
#define K1_TOKEN "k1:" MEMBER ".1700000000.5145d1fb96c004671fa493c794b23928e8e810e381f8810dcde6267aca399cfa"
#define K2_TOKEN "k2:" MEMBER ".1700000000.c79be505573adc3527951b5687bd9f6abc49b73321194f26826e1aa6d72a8c87"

static struct rs_keyring kr; /* 33 KiB: off the stack */

static int parse(const char *text, size_t *line)
{
	return rs_keyring_parse(text, strlen(text), &kr, line);
}

static int verify(const char *token)
{
	uint64_t expiry = 0;

	return rs_keyring_verify(&kr, token, MEMBER, NOW, &expiry);
}

static void mint(uint64_t now, char out[RS_TOKEN_MAX + 1])
{
	assert_int_equal(rs_keyring_mint(&kr, now, MEMBER, EXP, out, RS_TOKEN_MAX + 1), 0);
}

/* A file without the keyring header is one legacy secret (the old rules):
 * it mints and verifies exactly the old tokens, without a key id. */
static void test_legacy_file(void **state)
{
	char token[RS_TOKEN_MAX + 1];
	size_t line = 9;

	(void)state;
	assert_int_equal(parse("cluster-secret-0123456789\n", &line), 0);
	assert_int_equal(kr.n, 1);
	assert_string_equal(kr.keys[0].id, "");
	mint(NOW, token);
	assert_string_equal(token, LEGACY_TOKEN);
	assert_int_equal(verify(LEGACY_TOKEN), 0);
	/* A token with a key id names a key this keyring has not. */
	assert_int_equal(verify(K1_TOKEN), -EACCES);
	/* The old size rules hold. */
	assert_int_equal(parse("0123456789abcde\n", &line), -EINVAL);
	assert_int_equal(kr.n, 0);
}

/* The three steps of a rotation: the legacy key and a new one (old tokens
 * still verify, new ones carry the new id), then the old key removed (its
 * tokens, with or without an id, are refused). */
static void test_rotation(void **state)
{
	char token[RS_TOKEN_MAX + 1];
	uint64_t expiry = 0;
	size_t line = 9;

	(void)state;
	assert_int_equal(parse("ringsteer-keyring v1\n"
			       "# the old cluster secret: tokens without a key id are its\n"
			       "k1 cluster-secret-0123456789\n"
			       "\n"
			       "k2\tanother-secret-abcdefgh   # added for the rotation\n",
			       &line),
			 0);
	assert_int_equal(kr.n, 2);
	assert_string_equal(kr.keys[0].id, "k1");
	assert_string_equal(kr.keys[1].id, "k2");
	mint(NOW, token);
	assert_string_equal(token, K2_TOKEN);
	assert_int_equal(rs_keyring_verify(&kr, K2_TOKEN, MEMBER, NOW, &expiry), 0);
	assert_true(expiry == EXP);
	assert_int_equal(verify(K1_TOKEN), 0);
	assert_int_equal(verify(LEGACY_TOKEN), 0);
	assert_int_equal(rs_token_expiry(K2_TOKEN, &expiry), 0);
	assert_true(expiry == EXP);
	/* Expired is still expired, and reported only for an authentic mac. */
	assert_int_equal(rs_keyring_verify(&kr, K2_TOKEN, MEMBER, EXP, &expiry), -EKEYEXPIRED);
	/* A key id moved onto another key's mac, an unknown id, a malformed id. */
	assert_int_equal(verify("k1:" MEMBER ".1700000000.c79be505573adc3527951b5687bd9f6abc49b73321194f26826e1aa6d72a8c87"),
			 -EACCES);
	assert_int_equal(verify("k3:" MEMBER ".1700000000.c79be505573adc3527951b5687bd9f6abc49b73321194f26826e1aa6d72a8c87"),
			 -EACCES);
	assert_int_equal(verify("K2:" MEMBER ".1700000000.c79be505573adc3527951b5687bd9f6abc49b73321194f26826e1aa6d72a8c87"),
			 -EINVAL);
	assert_int_equal(verify(":" MEMBER ".1700000000.c79be505573adc3527951b5687bd9f6abc49b73321194f26826e1aa6d72a8c87"),
			 -EINVAL);
	assert_int_equal(verify("k2:k2:" MEMBER ".1700000000.c79be505573adc3527951b5687bd9f6abc49b73321194f26826e1aa6d72a8c87"),
			 -EINVAL);
	/* Another member's token, keyed. */
	assert_int_equal(rs_keyring_verify(&kr, K2_TOKEN, "sup-8.pod.ns", NOW, &expiry), -EACCES);

	/* The old key removed. */
	assert_int_equal(parse("ringsteer-keyring v1\nk2 another-secret-abcdefgh\n", &line), 0);
	assert_int_equal(kr.n, 1);
	assert_int_equal(verify(K2_TOKEN), 0);
	assert_int_equal(verify(K1_TOKEN), -EACCES);
	assert_int_equal(verify(LEGACY_TOKEN), -EACCES);
	mint(NOW, token);
	assert_string_equal(token, K2_TOKEN);
}

/* A key with a start time verifies at once but signs only from then on:
 * every gateway learns it before any signs with it. */
static void test_since(void **state)
{
	char token[RS_TOKEN_MAX + 1];
	size_t line = 9;

	(void)state;
	assert_int_equal(parse("ringsteer-keyring v1\n"
			       "k1 cluster-secret-0123456789\n"
			       "k2 another-secret-abcdefgh 1650000000\n",
			       &line),
			 0);
	assert_true(kr.keys[1].since == 1650000000);
	mint(1649999999, token);
	assert_string_equal(token, K1_TOKEN);
	assert_int_equal(verify(K2_TOKEN), 0); /* NOW is before k2's start: it verifies anyway */
	mint(1650000000, token);
	assert_string_equal(token, K2_TOKEN);
	/* No key whose time has come: nothing signs. */
	assert_int_equal(parse("ringsteer-keyring v1\nk1 cluster-secret-0123456789 1650000000\n", &line), 0);
	assert_int_equal(rs_keyring_mint(&kr, 1, MEMBER, EXP, token, sizeof(token)), -ENOKEY);
	assert_string_equal(token, "");
}

/* hex: secrets (binary keys) decode; the mac is over the decoded bytes. */
static void test_hex_secret(void **state)
{
	char token[RS_TOKEN_MAX + 1];
	size_t line = 9;

	(void)state;
	assert_int_equal(parse("ringsteer-keyring v1\nk-bin hex:000a0d0aff00112233445566778899aa\n", &line), 0);
	assert_int_equal(kr.keys[0].secret.len, 16);
	assert_int_equal(rs_keyring_mint(&kr, 0, "a", 5, token, sizeof(token)), 0);
	assert_string_equal(token, "k-bin:a.5.84df9b697b5dc70df6ec78c97378161a29cb8d20cf9b2f53c3790d204ac9a297");
}

static void expect_bad(const char *text, size_t want_line)
{
	size_t line = 99;

	kr.n = 5;
	assert_int_equal(parse(text, &line), -EINVAL);
	assert_int_equal(line, want_line);
	assert_int_equal(kr.n, 0);
}

static void test_parse_errors(void **state)
{
	static char many[4096];
	size_t at;

	(void)state;
	expect_bad("ringsteer-keyring v1\n", 0);                /* no key */
	expect_bad("ringsteer-keyring v1\n# only a comment\n", 0);
	expect_bad("ringsteer-keyring v1\nk1\n", 2);            /* no secret */
	expect_bad("ringsteer-keyring v1\nk1 short\n", 2);      /* under RS_SECRET_MIN */
	expect_bad("ringsteer-keyring v1\nK1 cluster-secret-0123456789\n", 2);
	expect_bad("ringsteer-keyring v1\nk_1 cluster-secret-0123456789\n", 2);
	expect_bad("ringsteer-keyring v1\n0123456789012345678901234567890123 cluster-secret-0123456789\n", 2);
	expect_bad("ringsteer-keyring v1\nk1 cluster-secret-0123456789\n\nk1 another-secret-abcdefgh\n", 4);
	expect_bad("ringsteer-keyring v1\nk1 cluster-secret-0123456789 12 extra\n", 2);
	expect_bad("ringsteer-keyring v1\nk1 cluster-secret-0123456789 012\n", 2);
	expect_bad("ringsteer-keyring v1\nk1 cluster-secret-0123456789 -1\n", 2);
	expect_bad("ringsteer-keyring v1\nk1 hex:000a0d0aff00112233445566778899a\n", 2);  /* odd */
	expect_bad("ringsteer-keyring v1\nk1 hex:000a0d0aff00112233445566778899ag\n", 2); /* not hex */
	expect_bad("ringsteer-keyring v1\nk1 hex:000a0d0aff001122334455667788\n", 2);     /* 15 bytes */
	{
		static const char nul[] = "ringsteer-keyring v1\nk1 cluster-secret\0-0123456789\n";
		size_t line = 0;

		assert_int_equal(rs_keyring_parse(nul, sizeof(nul) - 1, &kr, &line), -EINVAL);
		assert_int_equal(line, 2);
	}
	/* RS_KEYRING_MAX keys fit, one more does not. */
	at = (size_t)snprintf(many, sizeof(many), "ringsteer-keyring v1\n");
	for (int i = 0; i < RS_KEYRING_MAX; i++)
		at += (size_t)snprintf(many + at, sizeof(many) - at, "k%d cluster-secret-0123456789\n", i);
	{
		size_t line = 9;

		assert_int_equal(parse(many, &line), 0);
		assert_int_equal(kr.n, RS_KEYRING_MAX);
	}
	snprintf(many + at, sizeof(many) - at, "k%d cluster-secret-0123456789\n", RS_KEYRING_MAX);
	expect_bad(many, RS_KEYRING_MAX + 2);
	/* "\r\n" line ends are fine. */
	{
		size_t line = 9;

		assert_int_equal(parse("ringsteer-keyring v1\r\nk1 cluster-secret-0123456789\r\n", &line), 0);
		assert_int_equal(kr.keys[0].secret.len, 25);
	}
}

/* The loader: the parse rules, and the file's mode. */
static void test_load(void **state)
{
	char dir[] = "/tmp/rs-keyring-XXXXXX", path[64];
	static const char text[] = "ringsteer-keyring v1\nk1 cluster-secret-0123456789\nk2 another-secret-abcdefgh\n";
	size_t line = 9;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keys", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	assert_int_equal(close(fd), 0);
	assert_int_equal(rs_keyring_load(path, &kr, &line), 0);
	assert_int_equal(kr.n, 2);
	assert_int_equal(verify(K1_TOKEN), 0);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(rs_keyring_load(path, &kr, &line), -EPERM);
	assert_int_equal(kr.n, 0);
	assert_int_equal(chmod(path, 0604), 0);
	assert_int_equal(rs_keyring_load(path, &kr, &line), -EPERM);
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(rs_keyring_load(path, &kr, &line), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rs_keyring_load(path, &kr, &line), -ENOENT);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_legacy_file), cmocka_unit_test(test_rotation), cmocka_unit_test(test_since),
		cmocka_unit_test(test_hex_secret),  cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests_name("keyring", tests, NULL, NULL);
}
