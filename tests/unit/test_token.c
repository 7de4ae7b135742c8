/* SPDX-License-Identifier: Apache-2.0 */
/* test_token.c - supervisor tokens: fixed known-answer vectors (macs
 * computed outside the code with the openssl CLI), round trips over random
 * members, secrets and expiries, every kind of tampering and malformed text
 * refused with the right error, the expiry boundary, and the secret file's
 * length, trailing-newline and permission rules. */
#include <sys/stat.h>

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

#include "ringsteer/proto.h"
#include "ringsteer/token.h"
#include "testutil.h"

#define MAC_HEX 64

/* A 253-byte member id: labels of 63, 63, 63 and 61 letters. */
static void long_member(char out[RS_ID_MAX + 1])
{
	memset(out, 'a', 63);
	out[63] = '.';
	memset(out + 64, 'b', 63);
	out[127] = '.';
	memset(out + 128, 'c', 63);
	out[191] = '.';
	memset(out + 192, 'd', 61);
	out[253] = '\0';
}

static struct rs_secret secret_of(const void *key, size_t len)
{
	struct rs_secret s = { .len = len };

	assert_true(len <= RS_SECRET_MAX);
	memcpy(s.key, key, len);
	return s;
}

static struct rs_secret cluster_secret(void)
{
	return secret_of("cluster-secret-0123456789", 25);
}

/* Known answers.  Each mac was computed outside this code with
 *   printf '<member>\n<expiry>' | openssl dgst -sha256 -hmac '<key>'
 * (hexkey: ... for the binary key) and cross-checked with Python's hmac. */
static void test_known_answers(void **state)
{
	static const uint8_t binary_key[] = { 0x00, 0x0a, 0x0d, 0x0a, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
					      0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x0a };
	char member253[RS_ID_MAX + 1], expect253[RS_TOKEN_MAX + 1];
	const struct {
		struct rs_secret secret;
		const char *member;
		uint64_t expiry;
		const char *token;
	} cases[] = {
		{ cluster_secret(), "sup-7.pod.ns", 1700000000,
		  "sup-7.pod.ns.1700000000.28823553d0882cd675d037e690ddcce704f4fa1675c4f7c19730e13bbcba0048" },
		{ cluster_secret(), "sup-7.pod.ns", UINT64_MAX,
		  "sup-7.pod.ns.18446744073709551615."
		  "6fb50ad50dd949b9f933f6d3b31b9ce4a3f048fed7dc619fc63cb99c755c22ce" },
		{ secret_of("0123456789abcdef", 16), "a", 0,
		  "a.0.0dcdc0f9b2e336892833fa70d2a114ba7646ca02cff967a3f0a7ab1c4904f30e" },
		{ secret_of(binary_key, sizeof(binary_key)), "gw-b.sup", 1,
		  "gw-b.sup.1.781139b6524b80afc38a341a63b8fe3026d5204d9cc7e06f4928a9649bf3c84c" },
		{ cluster_secret(), member253, 42, expect253 },
	};
	char token[RS_TOKEN_MAX + 1];

	(void)state;
	long_member(member253);
	snprintf(expect253, sizeof(expect253), "%s.42.%s", member253,
		 "a157b82811b39c63590f1b4c151f2b850430a21d39c42794a242cbd1a98cd60d");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t expiry = 7;

		assert_int_equal(rs_token_mint(&cases[i].secret, cases[i].member, cases[i].expiry, token,
					       sizeof(token)),
				 0);
		assert_string_equal(token, cases[i].token);
		assert_int_equal(rs_token_expiry(cases[i].token, &expiry), 0);
		assert_true(expiry == cases[i].expiry);
		expiry = 7;
		if (cases[i].expiry > 0) {
			assert_int_equal(rs_token_verify(&cases[i].secret, cases[i].token, cases[i].member,
							 cases[i].expiry - 1, &expiry),
					 0);
			assert_true(expiry == cases[i].expiry);
		} else {
			assert_int_equal(rs_token_verify(&cases[i].secret, cases[i].token, cases[i].member, 0,
							 &expiry),
					 -EKEYEXPIRED);
			assert_true(expiry == 0);
		}
	}
}

static void random_member(struct test_rng *r, char out[RS_ID_MAX + 1])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789.-";
	size_t len = 1 + (size_t)test_rng_below(r, RS_ID_MAX);

	for (size_t i = 0; i < len; i++)
		out[i] = alphabet[test_rng_below(r, sizeof(alphabet) - 1)];
	out[len] = '\0';
}

static struct rs_secret random_secret(struct test_rng *r)
{
	struct rs_secret s = { .len = RS_SECRET_MIN + (size_t)test_rng_below(r, 64) };

	for (size_t i = 0; i < s.len; i++)
		s.key[i] = (uint8_t)test_rng_next(r);
	return s;
}

static uint64_t random_expiry(struct test_rng *r)
{
	switch (test_rng_below(r, 4)) {
	case 0:
		return 1 + test_rng_below(r, 10);
	case 1:
		return UINT64_MAX - test_rng_below(r, 10);
	default:
		return 1 + test_rng_below(r, UINT64_MAX - 1);
	}
}

static void test_round_trip(void **state)
{
	struct test_rng r;
	char member[RS_ID_MAX + 1], token[RS_TOKEN_MAX + 1];

	(void)state;
	test_rng_seed(&r, "token", 0x70c3e5);
	for (int i = 0; i < 2000; i++) {
		struct rs_secret s = random_secret(&r);
		uint64_t expiry = random_expiry(&r), got = 0;

		random_member(&r, member);
		assert_true(rs_proto_member_id_ok(member));
		assert_int_equal(rs_token_mint(&s, member, expiry, token, sizeof(token)), 0);
		assert_true(strlen(token) <= RS_TOKEN_MAX);
		assert_int_equal(rs_token_verify(&s, token, member, expiry - 1, &got), 0);
		assert_true(got == expiry);
		assert_int_equal(rs_token_verify(&s, token, member, expiry, &got), -EKEYEXPIRED);
		assert_int_equal(rs_token_expiry(token, &got), 0);
		assert_true(got == expiry);
		/* The same input always gives the same text. */
		{
			char again[RS_TOKEN_MAX + 1];

			assert_int_equal(rs_token_mint(&s, member, expiry, again, sizeof(again)), 0);
			assert_string_equal(token, again);
		}
	}
}

/* Mints "sup-7.pod.ns" expiring at 1700000000 with the cluster secret. */
static void base_token(char out[RS_TOKEN_MAX + 1])
{
	struct rs_secret s = cluster_secret();

	assert_int_equal(rs_token_mint(&s, "sup-7.pod.ns", 1700000000, out, RS_TOKEN_MAX + 1), 0);
}

static int verify_base(const char *token)
{
	struct rs_secret s = cluster_secret();
	uint64_t expiry = 0;

	return rs_token_verify(&s, token, "sup-7.pod.ns", 1600000000, &expiry);
}

static void test_tamper_mac(void **state)
{
	char token[RS_TOKEN_MAX + 1];
	size_t len, mac_at;

	(void)state;
	base_token(token);
	assert_int_equal(verify_base(token), 0);
	len = strlen(token);
	mac_at = len - MAC_HEX;
	for (size_t i = mac_at; i < len; i++) {
		char saved = token[i];

		/* Every other lower-case hex digit: well-formed, wrong mac. */
		for (const char *d = "0123456789abcdef"; *d; d++) {
			if (*d == saved)
				continue;
			token[i] = *d;
			assert_int_equal(verify_base(token), -EACCES);
		}
		/* One bit flipped in the character: never a valid token. */
		for (int bit = 0; bit < 7; bit++) {
			token[i] = (char)(saved ^ (1 << bit));
			assert_int_not_equal(verify_base(token), 0);
		}
		/* Upper case (where the digit is a letter) is malformed. */
		if (saved >= 'a' && saved <= 'f') {
			token[i] = (char)(saved - 'a' + 'A');
			assert_int_equal(verify_base(token), -EINVAL);
		}
		token[i] = 'g';
		assert_int_equal(verify_base(token), -EINVAL);
		token[i] = saved;
	}
	assert_int_equal(verify_base(token), 0);
}

/* Checks "<text>.<mac>" (the text changed, the mac kept) for member at
 * time 1 with the cluster secret. */
static int verify_forged(const char *text, const char *mac, const char *member, uint64_t *expiry)
{
	struct rs_secret s = cluster_secret();
	char forged[RS_TOKEN_MAX + 2];

	snprintf(forged, sizeof(forged), "%s.%s", text, mac);
	return rs_token_verify(&s, forged, member, 1, expiry);
}

static void test_tamper_member_and_expiry(void **state)
{
	struct rs_secret s = cluster_secret();
	char token[RS_TOKEN_MAX + 1];
	const char *mac;
	uint64_t expiry = 0;

	(void)state;
	base_token(token);
	mac = strrchr(token, '.') + 1;
	/* Presented for another member. */
	assert_int_equal(rs_token_verify(&s, token, "sup-8.pod.ns", 1, &expiry), -EACCES);
	assert_int_equal(rs_token_verify(&s, token, "sup-7.pod", 1, &expiry), -EACCES);
	assert_int_equal(rs_token_verify(&s, token, "pod.ns", 1, &expiry), -EACCES);
	/* Member changed in the text, presented for the new member. */
	assert_int_equal(verify_forged("sup-8.pod.ns.1700000000", mac, "sup-8.pod.ns", &expiry), -EACCES);
	assert_int_equal(verify_forged("sup-7.pod.n.1700000000", mac, "sup-7.pod.n", &expiry), -EACCES);
	/* Expiry changed: later, earlier, one digit more. */
	assert_int_equal(verify_forged("sup-7.pod.ns.1700000001", mac, "sup-7.pod.ns", &expiry), -EACCES);
	assert_int_equal(verify_forged("sup-7.pod.ns.9700000000", mac, "sup-7.pod.ns", &expiry), -EACCES);
	assert_int_equal(verify_forged("sup-7.pod.ns.17000000000", mac, "sup-7.pod.ns", &expiry), -EACCES);
	/* Moving the member/expiry boundary: "sup-7.pod" with expiry "ns..." is
	 * malformed, and the member must match the text exactly. */
	assert_int_equal(verify_forged("sup-7.pod.ns1700000000", mac, "sup-7.pod", &expiry), -EINVAL);
	/* A failed check leaves *expiry alone. */
	expiry = 99;
	assert_int_equal(verify_forged("sup-7.pod.ns.1700000001", mac, "sup-7.pod.ns", &expiry), -EACCES);
	assert_true(expiry == 99);
}

static void test_truncated(void **state)
{
	char token[RS_TOKEN_MAX + 1];
	size_t len;

	(void)state;
	base_token(token);
	len = strlen(token);
	for (size_t cut = 0; cut < len; cut++) {
		char prefix[RS_TOKEN_MAX + 1];
		uint64_t expiry;

		memcpy(prefix, token, cut);
		prefix[cut] = '\0';
		assert_int_equal(verify_base(prefix), -EINVAL);
		assert_int_equal(rs_token_expiry(prefix, &expiry), -EINVAL);
	}
	/* Dropping the front keeps the form but not the member or the mac. */
	assert_int_equal(verify_base(token + 1), -EACCES);
}

static void test_malformed(void **state)
{
	struct rs_secret s = cluster_secret();
	char token[RS_TOKEN_MAX + 1], bad[2 * RS_TOKEN_MAX];
	const char *mac;
	uint64_t expiry;

	(void)state;
	base_token(token);
	mac = strrchr(token, '.') + 1;
	const char *const forms[] = {
		"%s.1700000000.%s.",         /* extra dot at the end */
		".%s.1700000000.%s",         /* empty label first: member refused or moved */
		"sup-7.pod.ns.1700000000..%s", /* extra dot before the mac */
		"sup-7.pod.ns.01700000000.%s", /* leading zero */
		"sup-7.pod.ns.00.%s",          /* zeros */
		"sup-7.pod.ns.+1700000000.%s", /* sign */
		"sup-7.pod.ns.-1.%s",          /* sign */
		"sup-7.pod.ns. 1700000000.%s", /* space */
		"sup-7.pod.ns.1700000000 .%s", /* space */
		"sup-7.pod.ns.0x10.%s",        /* hex */
		"sup-7.pod.ns..%s",            /* empty expiry */
		"sup-7.pod.ns.18446744073709551616.%s", /* UINT64_MAX + 1 */
		"sup-7.pod.ns.99999999999999999999.%s", /* 20 digits, too big */
		"sup-7.pod.ns.100000000000000000000.%s", /* 21 digits */
		"Sup-7.pod.ns.1700000000.%s",  /* upper-case member */
		"sup_7.pod.ns.1700000000.%s",  /* '_' in member */
		"sup-7.pod.ns.1700000000.%s0", /* 65 hex digits */
		"sup-7.pod.ns.1700000000.%s\n", /* trailing newline */
		"sup-7.pod.ns.1700000000.%s ", /* trailing space */
		"sup-7.pod.ns.1700000000.0x%s", /* prefix */
		"sup-7.pod.ns.1700000000%s",   /* one dot fewer */
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (i < 2) /* these two name the member twice */
			snprintf(bad, sizeof(bad), forms[i], "sup-7.pod.ns", mac);
		else
			snprintf(bad, sizeof(bad), forms[i], mac);
		assert_int_not_equal(rs_token_verify(&s, bad, "sup-7.pod.ns", 1, &expiry), 0);
		if (i != 1) /* ".sup-7..." parses (member "sup-7.pod.ns" is not its member) */
			assert_int_equal(rs_token_expiry(bad, &expiry), -EINVAL);
	}
	/* 63 hex digits. */
	snprintf(bad, sizeof(bad), "sup-7.pod.ns.1700000000.%.63s", mac);
	assert_int_equal(rs_token_verify(&s, bad, "sup-7.pod.ns", 1, &expiry), -EINVAL);
	/* Upper-case mac, all of it. */
	snprintf(bad, sizeof(bad), "%s", token);
	for (char *c = strrchr(bad, '.') + 1; *c; c++)
		if (*c >= 'a' && *c <= 'f')
			*c = (char)(*c - 'a' + 'A');
	assert_int_equal(rs_token_verify(&s, bad, "sup-7.pod.ns", 1, &expiry), -EINVAL);
	/* Member id too long (254 bytes). */
	memset(bad, 'a', 254);
	snprintf(bad + 254, sizeof(bad) - 254, ".1.%s", mac);
	assert_int_equal(rs_token_expiry(bad, &expiry), -EINVAL);
	/* Longer than RS_TOKEN_MAX: refused without reading it all. */
	memset(bad, 'a', sizeof(bad) - 1);
	bad[sizeof(bad) - 1] = '\0';
	assert_int_equal(rs_token_expiry(bad, &expiry), -EINVAL);
	assert_int_equal(rs_token_verify(&s, bad, "sup-7.pod.ns", 1, &expiry), -EINVAL);
	/* Nothing, NULL. */
	assert_int_equal(rs_token_expiry("", &expiry), -EINVAL);
	assert_int_equal(rs_token_expiry("..", &expiry), -EINVAL);
	assert_int_equal(rs_token_expiry(NULL, &expiry), -EINVAL);
	assert_int_equal(rs_token_verify(&s, NULL, "sup-7.pod.ns", 1, &expiry), -EINVAL);
	/* The expected member must itself be a member id. */
	assert_int_equal(rs_token_verify(&s, token, "", 1, &expiry), -EINVAL);
	assert_int_equal(rs_token_verify(&s, token, NULL, 1, &expiry), -EINVAL);
	assert_int_equal(rs_token_verify(&s, token, "SUP-7.pod.ns", 1, &expiry), -EINVAL);
}

static void test_expiry_boundary(void **state)
{
	struct rs_secret s = cluster_secret();
	char token[RS_TOKEN_MAX + 1];
	uint64_t expiry = 0;

	(void)state;
	base_token(token);
	assert_int_equal(rs_token_verify(&s, token, "sup-7.pod.ns", 1699999999, &expiry), 0);
	assert_true(expiry == 1700000000);
	expiry = 0;
	assert_int_equal(rs_token_verify(&s, token, "sup-7.pod.ns", 1700000000, &expiry), -EKEYEXPIRED);
	assert_true(expiry == 1700000000);
	assert_int_equal(rs_token_verify(&s, token, "sup-7.pod.ns", 1700000001, &expiry), -EKEYEXPIRED);
	assert_int_equal(rs_token_verify(&s, token, "sup-7.pod.ns", UINT64_MAX, &expiry), -EKEYEXPIRED);
	/* A NULL expiry pointer is allowed. */
	assert_int_equal(rs_token_verify(&s, token, "sup-7.pod.ns", 0, NULL), 0);
	/* UINT64_MAX never expires (now <= UINT64_MAX - 1). */
	assert_int_equal(rs_token_mint(&s, "a", UINT64_MAX, token, sizeof(token)), 0);
	assert_int_equal(rs_token_verify(&s, token, "a", UINT64_MAX - 1, &expiry), 0);
	assert_true(expiry == UINT64_MAX);
	/* Expiry 0 has always passed. */
	assert_int_equal(rs_token_mint(&s, "a", 0, token, sizeof(token)), 0);
	assert_int_equal(rs_token_verify(&s, token, "a", 0, &expiry), -EKEYEXPIRED);
}

static void test_members_with_dots(void **state)
{
	struct rs_secret s = cluster_secret();
	const char *const members[] = { "a.b.c", "a.1.2", "1.2.3.4", "x.0", "..", ".a.", "-.-", "0" };
	char token[RS_TOKEN_MAX + 1];
	uint64_t expiry;

	(void)state;
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		if (!rs_proto_member_id_ok(members[i]))
			continue; /* the id rules are proto's; only test what it accepts */
		assert_int_equal(rs_token_mint(&s, members[i], 12345, token, sizeof(token)), 0);
		assert_int_equal(rs_token_verify(&s, token, members[i], 12344, &expiry), 0);
		assert_true(expiry == 12345);
	}
	/* "a.1" expiring at 2 is not "a" expiring at ...: the split is at the last two dots. */
	assert_int_equal(rs_token_mint(&s, "a.1", 2, token, sizeof(token)), 0);
	assert_int_equal(rs_token_verify(&s, token, "a", 0, &expiry), -EACCES);
	assert_int_equal(rs_token_verify(&s, token, "a.1", 0, &expiry), 0);
	assert_true(expiry == 2);
	assert_int_equal(rs_token_mint(&s, "a.b.c", 9, token, sizeof(token)), 0);
	assert_int_equal(strncmp(token, "a.b.c.9.", 8), 0);
	assert_int_equal(rs_token_verify(&s, token, "a.b", 0, &expiry), -EACCES);
	assert_int_equal(rs_token_verify(&s, token, "b.c", 0, &expiry), -EACCES);
}

static void test_wrong_secret(void **state)
{
	struct rs_secret s = cluster_secret(), other;
	char token[RS_TOKEN_MAX + 1];
	uint64_t expiry;

	(void)state;
	base_token(token);
	other = s;
	other.key[other.len - 1] ^= 1; /* last byte differs */
	assert_int_equal(rs_token_verify(&other, token, "sup-7.pod.ns", 1, &expiry), -EACCES);
	other = s;
	other.key[0] ^= 0x80; /* first byte differs */
	assert_int_equal(rs_token_verify(&other, token, "sup-7.pod.ns", 1, &expiry), -EACCES);
	other = s;
	other.len--; /* a prefix of the secret */
	assert_int_equal(rs_token_verify(&other, token, "sup-7.pod.ns", 1, &expiry), -EACCES);
	other = s;
	other.key[other.len++] = 'x'; /* the secret and one more byte */
	assert_int_equal(rs_token_verify(&other, token, "sup-7.pod.ns", 1, &expiry), -EACCES);
	/* HMAC pads a short key with zero bytes, so a secret and the same
	 * secret with trailing NULs are one key.  Pinned here so that nobody
	 * mistakes it for a bug in this code; secret files are text in practice. */
	other = s;
	other.key[other.len++] = 0;
	assert_int_equal(rs_token_verify(&other, token, "sup-7.pod.ns", 1, &expiry), 0);
	/* Secrets outside the limits are refused outright. */
	other = secret_of("0123456789abcde", RS_SECRET_MIN - 1);
	assert_int_equal(rs_token_verify(&other, token, "sup-7.pod.ns", 1, &expiry), -EINVAL);
	assert_int_equal(rs_token_mint(&other, "sup-7.pod.ns", 1, token, sizeof(token)), -EINVAL);
	other.len = RS_SECRET_MAX + 1;
	assert_int_equal(rs_token_mint(&other, "sup-7.pod.ns", 1, token, sizeof(token)), -EINVAL);
	assert_int_equal(rs_token_verify(NULL, token, "sup-7.pod.ns", 1, &expiry), -EINVAL);
}

static void test_mint_errors(void **state)
{
	struct rs_secret s = cluster_secret();
	char token[RS_TOKEN_MAX + 1], too_long[RS_ID_MAX + 2];
	size_t need;

	(void)state;
	memset(too_long, 'a', RS_ID_MAX + 1);
	too_long[RS_ID_MAX + 1] = '\0';
	assert_int_equal(rs_token_mint(&s, "", 1, token, sizeof(token)), -EINVAL);
	assert_int_equal(rs_token_mint(&s, NULL, 1, token, sizeof(token)), -EINVAL);
	assert_int_equal(rs_token_mint(&s, "Sup", 1, token, sizeof(token)), -EINVAL);
	assert_int_equal(rs_token_mint(&s, "a_b", 1, token, sizeof(token)), -EINVAL);
	assert_int_equal(rs_token_mint(&s, "a b", 1, token, sizeof(token)), -EINVAL);
	assert_int_equal(rs_token_mint(&s, too_long, 1, token, sizeof(token)), -EINVAL);
	assert_string_equal(token, ""); /* a failed mint leaves an empty string */
	/* Room: the exact size works, one byte less does not. */
	base_token(token);
	need = strlen(token) + 1;
	{
		char exact[RS_TOKEN_MAX + 1];

		assert_int_equal(rs_token_mint(&s, "sup-7.pod.ns", 1700000000, exact, need), 0);
		assert_string_equal(exact, token);
		assert_int_equal(rs_token_mint(&s, "sup-7.pod.ns", 1700000000, exact, need - 1), -ENOSPC);
		assert_string_equal(exact, "");
		assert_int_equal(rs_token_mint(&s, "sup-7.pod.ns", 1700000000, exact, 0), -ENOSPC);
	}
}

/* Secret files. */

struct tmpdir {
	char path[64];
};

static int make_dir(void **state)
{
	struct tmpdir *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	snprintf(d->path, sizeof(d->path), "/tmp/rs-token-XXXXXX");
	if (!mkdtemp(d->path)) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

/* The tests write only dir/secret. */
static int remove_dir(void **state)
{
	struct tmpdir *d = *state;
	char path[128];
	int rc;

	snprintf(path, sizeof(path), "%s/secret", d->path);
	unlink(path);
	rc = rmdir(d->path);
	free(d);
	return rc;
}

/* Writes len bytes of data to dir/name, whose path goes to path[0..cap). */
static void write_file(const struct tmpdir *d, const char *name, const void *data, size_t len, char *path,
		       size_t cap)
{
	int fd;

	snprintf(path, cap, "%s/%s", d->path, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static int load_bytes(const struct tmpdir *d, const void *data, size_t len, struct rs_secret *out)
{
	char path[128];

	write_file(d, "secret", data, len, path, sizeof(path));
	return rs_secret_load(path, out);
}

static void test_secret_file(void **state)
{
	const struct tmpdir *d = *state;
	static struct rs_secret s; /* 4 KiB: kept off the stack */
	static uint8_t big[3 * RS_SECRET_MAX];
	char path[128];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)('a' + i % 26);

	/* Exactly the minimum, with and without a newline. */
	assert_int_equal(load_bytes(d, big, RS_SECRET_MIN, &s), 0);
	assert_int_equal(s.len, RS_SECRET_MIN);
	assert_memory_equal(s.key, big, RS_SECRET_MIN);
	{
		uint8_t buf[RS_SECRET_MIN + 2];

		memcpy(buf, big, RS_SECRET_MIN);
		buf[RS_SECRET_MIN] = '\n';
		assert_int_equal(load_bytes(d, buf, RS_SECRET_MIN + 1, &s), 0);
		assert_int_equal(s.len, RS_SECRET_MIN);
		/* Only one newline is dropped. */
		buf[RS_SECRET_MIN + 1] = '\n';
		assert_int_equal(load_bytes(d, buf, RS_SECRET_MIN + 2, &s), 0);
		assert_int_equal(s.len, RS_SECRET_MIN + 1);
		assert_int_equal(s.key[RS_SECRET_MIN], '\n');
		/* One short, with or without a newline. */
		assert_int_equal(load_bytes(d, buf, RS_SECRET_MIN - 1, &s), -EINVAL);
		assert_int_equal(s.len, 0);
		buf[RS_SECRET_MIN - 1] = '\n';
		assert_int_equal(load_bytes(d, buf, RS_SECRET_MIN, &s), -EINVAL);
		/* "\r\n": only the "\n" goes. */
		memcpy(buf, big, RS_SECRET_MIN);
		buf[RS_SECRET_MIN - 1] = '\r';
		buf[RS_SECRET_MIN] = '\n';
		assert_int_equal(load_bytes(d, buf, RS_SECRET_MIN + 1, &s), 0);
		assert_int_equal(s.len, RS_SECRET_MIN);
		assert_int_equal(s.key[RS_SECRET_MIN - 1], '\r');
	}
	/* Empty, and a lone newline. */
	assert_int_equal(load_bytes(d, "", 0, &s), -EINVAL);
	assert_int_equal(load_bytes(d, "\n", 1, &s), -EINVAL);
	/* Exactly the maximum, with and without a newline. */
	assert_int_equal(load_bytes(d, big, RS_SECRET_MAX, &s), 0);
	assert_int_equal(s.len, RS_SECRET_MAX);
	assert_memory_equal(s.key, big, RS_SECRET_MAX);
	big[RS_SECRET_MAX] = '\n';
	assert_int_equal(load_bytes(d, big, RS_SECRET_MAX + 1, &s), 0);
	assert_int_equal(s.len, RS_SECRET_MAX);
	/* One over, with or without a newline, and much longer. */
	big[RS_SECRET_MAX + 1] = '\n';
	assert_int_equal(load_bytes(d, big, RS_SECRET_MAX + 2, &s), -EINVAL);
	assert_int_equal(s.len, 0);
	big[RS_SECRET_MAX] = 'x';
	assert_int_equal(load_bytes(d, big, RS_SECRET_MAX + 1, &s), -EINVAL);
	assert_int_equal(load_bytes(d, big, sizeof(big), &s), -EINVAL);
	/* Binary bytes, NUL included, are kept. */
	{
		static const uint8_t bin[] = { 0, 1, 2, '\n', 0, 0xff, 0x80, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

		assert_int_equal(load_bytes(d, bin, sizeof(bin), &s), 0);
		assert_int_equal(s.len, sizeof(bin));
		assert_memory_equal(s.key, bin, sizeof(bin));
	}
	/* A loaded secret mints the known answer. */
	{
		char token[RS_TOKEN_MAX + 1];

		assert_int_equal(load_bytes(d, "cluster-secret-0123456789\n", 26, &s), 0);
		assert_int_equal(rs_token_mint(&s, "sup-7.pod.ns", 1700000000, token, sizeof(token)), 0);
		assert_string_equal(token, "sup-7.pod.ns.1700000000."
					   "28823553d0882cd675d037e690ddcce704f4fa1675c4f7c19730e13bbcba0048");
	}
	/* Missing file and a directory: their errno. */
	snprintf(path, sizeof(path), "%s/missing", d->path);
	assert_int_equal(rs_secret_load(path, &s), -ENOENT);
	assert_int_equal(s.len, 0);
	assert_int_equal(rs_secret_load(d->path, &s), -EISDIR);
}

/* A secret file that its group or others may read, write or run is refused
 * (-EPERM) whatever its contents: such a secret may already be known to
 * someone else.  0600 and 0400 are fine. */
static void test_secret_file_mode(void **state)
{
	const struct tmpdir *d = *state;
	static struct rs_secret s;
	static const mode_t refused[] = { 0640, 0604, 0644, 0660, 0606, 0610, 0601, 0620, 0602, 0777, 0440 };
	static const mode_t accepted[] = { 0600, 0400, 0700 };
	char path[128];

	write_file(d, "secret", "cluster-secret-0123456789\n", 26, path, sizeof(path));
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(chmod(path, refused[i]), 0);
		s.len = 99;
		assert_int_equal(rs_secret_load(path, &s), -EPERM);
		assert_int_equal(s.len, 0);
	}
	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		assert_int_equal(chmod(path, accepted[i]), 0);
		assert_int_equal(rs_secret_load(path, &s), 0);
		assert_int_equal(s.len, 25);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_tamper_mac),
		cmocka_unit_test(test_tamper_member_and_expiry),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_expiry_boundary),
		cmocka_unit_test(test_members_with_dots),
		cmocka_unit_test(test_wrong_secret),
		cmocka_unit_test(test_mint_errors),
		cmocka_unit_test_setup_teardown(test_secret_file, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_secret_file_mode, make_dir, remove_dir),
	};

	return cmocka_run_group_tests_name("token", tests, NULL, NULL);
}
