/* SPDX-License-Identifier: Apache-2.0 */
/* keyed_hash.h - a hash of bytes under a secret key (SipHash-2-4), for the
 * hash tables whose keys a peer chooses (source addresses, member ids):
 * without the key a peer cannot pick keys that land in one bucket and turn
 * every lookup into a walk of one long chain.  Each table draws a key of
 * its own at init (rs_hash_key_random) and hands it to uthash through
 * HASH_FUNCTION; the key lives in the table, so there is no global state. */
#ifndef RS_UTIL_KEYED_HASH_H
#define RS_UTIL_KEYED_HASH_H

#include <stddef.h>
#include <stdint.h>

struct rs_hash_key {
	uint8_t b[16]; /* SipHash's 128-bit key, as its bytes */
};

/* SipHash-2-4 of data[0..len) under key: the reference function (its
 * published vectors, and OpenSSL's "SIPHASH" MAC with an 8-byte output read
 * little-endian, give the same numbers). */
uint64_t rs_keyed_hash(const struct rs_hash_key *key, const void *data, size_t len);

/* Fills key from the kernel's random source (getrandom).  When that has
 * nothing to give (early boot, no getrandom) the key is made from clocks
 * and the process id instead: then merely hard to guess, which is no
 * reason to refuse to start. */
void rs_hash_key_random(struct rs_hash_key *key);

#endif
