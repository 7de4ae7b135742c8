/* SPDX-License-Identifier: Apache-2.0 */
/* succ_bitset.h - a set of positions 0..n-1 answering "first member >= i" in
 * O(log64 n): level 0 holds one bit per position, and each bit of level k+1
 * says whether the matching word of level k has any bit set.  Setting or
 * clearing touches a parent only when a word changes between empty and not.
 * It is the index behind "first eligible point clockwise". */
#ifndef RS_SUCC_BITSET_H
#define RS_SUCC_BITSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 64^6 positions: far beyond any ring (10^4 gateways * 128 points = 2^21). */
#define RS_SUCC_LEVELS_MAX 6
#define RS_SUCC_NONE SIZE_MAX

struct rs_succ_bitset {
	size_t n;
	unsigned levels;
	uint64_t *word[RS_SUCC_LEVELS_MAX];
	size_t n_words[RS_SUCC_LEVELS_MAX];
};

/* Makes an empty set over 0..n-1.  Returns 0, -ENOMEM, -E2BIG. */
int rs_succ_bitset_init(struct rs_succ_bitset *s, size_t n);

/* Frees the set's memory; safe on a zeroed set. */
void rs_succ_bitset_fini(struct rs_succ_bitset *s);

/* Adds position i (< n).  Inline and branch-free: a gateway's eligibility
 * flip sets or clears its 128 positions, and whether a word was empty is a
 * coin toss the branch predictor loses.  Setting a parent bit that is
 * already set is harmless, so every level is written. */
static inline void rs_succ_bitset_set(struct rs_succ_bitset *s, size_t i)
{
	for (unsigned l = 0; l < s->levels; l++, i /= 64)
		s->word[l][i / 64] |= 1ULL << (i % 64);
}

/* Removes position i (< n); a parent bit is cleared only when its word
 * became empty, computed rather than branched on. */
static inline void rs_succ_bitset_clear(struct rs_succ_bitset *s, size_t i)
{
	uint64_t drop = 1;

	for (unsigned l = 0; l < s->levels; l++, i /= 64) {
		uint64_t *w = &s->word[l][i / 64];

		*w &= ~(drop << (i % 64));
		drop = *w == 0;
	}
}

/* Returns the least member >= from, or RS_SUCC_NONE. */
size_t rs_succ_bitset_next(const struct rs_succ_bitset *s, size_t from);

/* Returns the least member >= from, wrapping to the least member overall, or
 * RS_SUCC_NONE when the set is empty. */
size_t rs_succ_bitset_next_wrap(const struct rs_succ_bitset *s, size_t from);

#endif
