/* SPDX-License-Identifier: Apache-2.0 */
/* keyed_hash.c - SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF", 2012) and the random keys for it (keyed_hash.h).
 * Written from the paper's description: two compression rounds per 8-byte
 * word, four finalization rounds, 64-bit output. */
#include <endian.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/random.h>

#include "keyed_hash.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13) ^ s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17) ^ s->v2;
	s->v2 = rotl(s->v2, 32);
}

/* One message word: c = 2 rounds. */
static inline void sip_word(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

uint64_t rs_keyed_hash(const struct rs_hash_key *key, const void *data, size_t len)
{
	const uint64_t k0 = load_le64(key->b), k1 = load_le64(key->b + 8);
	struct sip s = {
		.v0 = k0 ^ 0x736f6d6570736575ULL, /* "somepseudorandomlygeneratedbytes" */
		.v1 = k1 ^ 0x646f72616e646f6dULL,
		.v2 = k0 ^ 0x6c7967656e657261ULL,
		.v3 = k1 ^ 0x7465646279746573ULL,
	};
	const uint8_t *p = data;
	size_t whole = len & ~(size_t)7;
	uint64_t last = (uint64_t)len << 56; /* the length's low byte, in the top byte */

	for (size_t i = 0; i < whole; i += 8)
		sip_word(&s, load_le64(p + i));
	for (size_t i = 0; i < (len & 7); i++)
		last |= (uint64_t)p[whole + i] << (8 * i);
	sip_word(&s, last);
	s.v2 ^= 0xff;
	for (int i = 0; i < 4; i++) /* d = 4 finalization rounds */
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

void rs_hash_key_random(struct rs_hash_key *key)
{
	static const struct rs_hash_key fixed = { { 0x72, 0x69, 0x6e, 0x67, 0x73, 0x74, 0x65, 0x65, 0x72 } };
	struct {
		struct timespec real, mono;
		pid_t pid;
		const void *where; /* ASLR adds a little */
	} weak;
	uint64_t h[2];

	if (getrandom(key->b, sizeof(key->b), GRND_NONBLOCK) == (ssize_t)sizeof(key->b))
		return;
	memset(&weak, 0, sizeof(weak)); /* padding too: it is hashed */
	clock_gettime(CLOCK_REALTIME, &weak.real);
	clock_gettime(CLOCK_MONOTONIC, &weak.mono);
	weak.pid = getpid();
	weak.where = key;
	h[0] = rs_keyed_hash(&fixed, &weak, sizeof(weak));
	weak.where = &h;
	h[1] = rs_keyed_hash(&fixed, &weak, sizeof(weak));
	memcpy(key->b, h, sizeof(key->b));
}
