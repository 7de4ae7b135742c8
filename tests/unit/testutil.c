/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.c - seeded randomness and vector loading for the unit tests. */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

void test_rng_seed(struct test_rng *r, const char *suite, uint64_t fallback)
{
	const char *env = getenv("RS_TEST_SEED");

	r->state = env ? strtoull(env, NULL, 0) : fallback;
	printf("# %s: seed %llu (RS_TEST_SEED replays)\n", suite, (unsigned long long)r->state);
}

uint64_t test_rng_next(struct test_rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t test_rng_below(struct test_rng *r, uint64_t bound)
{
	/* Rejection keeps it unbiased; bound is small in every test. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
	uint64_t x;

	do
		x = test_rng_next(r);
	while (x >= limit);
	return x % bound;
}

void test_shuffle(struct test_rng *r, void **items, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)test_rng_below(r, i);
		void *t = items[i - 1];

		items[i - 1] = items[j];
		items[j] = t;
	}
}

/* jansson holds integers as signed 64-bit and refuses the larger ring
 * points, so integer literals of 19 or more digits are quoted before
 * parsing and read back with strtoull by the tests. */
static char *quote_big_integers(const char *text, size_t len)
{
	char *out = malloc(len * 2 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		bool in_token = i > 0 && (text[i - 1] == '"' || (text[i - 1] >= '0' && text[i - 1] <= '9') ||
					  text[i - 1] == '-' || text[i - 1] == '.');

		while (j < len && text[j] >= '0' && text[j] <= '9')
			j++;
		if (!in_token && j - i >= 19 && (j == len || text[j] != '"')) {
			*o++ = '"';
			memcpy(o, text + i, j - i);
			o += j - i;
			*o++ = '"';
			i = j;
		} else if (j > i) {
			memcpy(o, text + i, j - i);
			o += j - i;
			i = j;
		} else {
			*o++ = text[i++];
		}
	}
	*o = '\0';
	return out;
}

json_t *test_load_vectors(const char *name)
{
	const char *dir = getenv("RS_TEST_DATA");
	char path[4096], *text = NULL, *quoted = NULL;
	size_t len = 0;
	json_error_t error;
	json_t *root;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/data", name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	text = malloc(1 << 22);
	assert_non_null(text);
	len = fread(text, 1, (1 << 22) - 1, f);
	fclose(f);
	quoted = quote_big_integers(text, len);
	assert_non_null(quoted);
	root = json_loads(quoted, 0, &error);
	if (!root)
		fail_msg("cannot parse %s: %s (line %d)", path, error.text, error.line);
	free(quoted);
	free(text);
	return root;
}

uint64_t test_json_u64(const json_t *v)
{
	if (json_is_integer(v))
		return (uint64_t)json_integer_value(v);
	assert_true(json_is_string(v));
	return strtoull(json_string_value(v), NULL, 10);
}
