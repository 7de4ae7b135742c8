/* SPDX-License-Identifier: Apache-2.0 */
/* succ_bitset.c - hierarchical bitset for successor queries (see the header).
 * Invariant: bit j of level k+1 is set iff word j of level k is non-zero. */
#include "succ_bitset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rs_succ_bitset_init(struct rs_succ_bitset *s, size_t n)
{
	size_t bits = n ? n : 1;

	memset(s, 0, sizeof(*s));
	s->n = n;
	do {
		size_t words = (bits + 63) / 64;

		if (s->levels == RS_SUCC_LEVELS_MAX) {
			rs_succ_bitset_fini(s);
			return -E2BIG;
		}
		s->word[s->levels] = calloc(words, sizeof(uint64_t));
		if (!s->word[s->levels]) {
			rs_succ_bitset_fini(s);
			return -ENOMEM;
		}
		s->n_words[s->levels++] = words;
		bits = words;
	} while (bits > 1);
	return 0;
}

void rs_succ_bitset_fini(struct rs_succ_bitset *s)
{
	for (unsigned l = 0; l < RS_SUCC_LEVELS_MAX; l++)
		free(s->word[l]);
	memset(s, 0, sizeof(*s));
}

size_t rs_succ_bitset_next(const struct rs_succ_bitset *s, size_t from)
{
	size_t i = from;
	unsigned l = 0;

	if (from >= s->n)
		return RS_SUCC_NONE;
	/* Climb until some word has a member at or after i. */
	for (;;) {
		size_t w = i / 64;
		uint64_t bits;

		if (w >= s->n_words[l])
			return RS_SUCC_NONE;
		bits = s->word[l][w] & (~0ULL << (i % 64));
		if (bits) {
			i = w * 64 + (size_t)__builtin_ctzll(bits);
			break;
		}
		if (l + 1 == s->levels)
			return RS_SUCC_NONE;
		i = w + 1;
		l++;
	}
	/* Descend through the first member of each non-empty word. */
	while (l > 0) {
		l--;
		i = i * 64 + (size_t)__builtin_ctzll(s->word[l][i]);
	}
	return i;
}

size_t rs_succ_bitset_next_wrap(const struct rs_succ_bitset *s, size_t from)
{
	size_t i = rs_succ_bitset_next(s, from);

	return i != RS_SUCC_NONE || from == 0 ? i : rs_succ_bitset_next(s, 0);
}
