/* SPDX-License-Identifier: Apache-2.0 */
/* rng.h - the simulator's pseudo-random numbers: xoshiro256** seeded by
 * splitmix64, with all state in a struct the caller owns (no global state),
 * and an unbiased bounded draw by Lemire's multiply-and-reject method.
 *
 * Guarantees: the same seed gives the same stream on every platform;
 * sim_rng_below(r, n) is uniform on 0..n-1 for every n >= 1.  Not for
 * cryptography. */
#ifndef RS_SIM_RNG_H
#define RS_SIM_RNG_H

#include <assert.h>
#include <stdint.h>

struct sim_rng {
	uint64_t s[4];
};

/* Advances *x and returns the next splitmix64 output: a good 64-bit mix of
 * any counter, used to seed and to derive independent seeds. */
static inline uint64_t sim_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* Returns a seed derived from seed and a label (trial, policy, ...), so that
 * streams for different labels are unrelated. */
static inline uint64_t sim_seed_mix(uint64_t seed, uint64_t label)
{
	uint64_t x = seed ^ sim_splitmix64(&label);

	return sim_splitmix64(&x);
}

/* Seeds r from seed; the four state words are never all zero. */
static inline void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = sim_splitmix64(&seed);
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
		r->s[0] = 1;
}

static inline uint64_t sim_rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* Returns the next 64 random bits (xoshiro256**). */
static inline uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t result = sim_rotl64(r->s[1] * 5, 7) * 9;
	uint64_t t = r->s[1] << 17;

	r->s[2] ^= r->s[0];
	r->s[3] ^= r->s[1];
	r->s[1] ^= r->s[2];
	r->s[0] ^= r->s[3];
	r->s[2] ^= t;
	r->s[3] = sim_rotl64(r->s[3], 45);
	return result;
}

/* Returns a uniform integer in 0..n-1 (n >= 1), without modulo bias. */
static inline uint32_t sim_rng_below(struct sim_rng *r, uint32_t n)
{
	uint64_t m;
	uint32_t low;

	assert(n > 0);
	m = (sim_rng_next(r) >> 32) * (uint64_t)n;
	low = (uint32_t)m;
	if (low < n) {
		uint32_t threshold = (uint32_t)-n % n;

		while (low < threshold) {
			m = (sim_rng_next(r) >> 32) * (uint64_t)n;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

#endif
