/* SPDX-License-Identifier: Apache-2.0 */
/* table_test.c - the bucket table builder (user/agent/table.c) as a pure
 * function, and the source hash's spread: no kernel needed.
 *
 * Checks: every bucket names a weighted slot (or none when all weights are
 * 0); counts sum to RS_TABLE_SIZE; each slot's count is within one bucket of
 * its exact share; a slot of weight 0 gets nothing; 127.0.2.1..4000 spread
 * over two equal slots within 5% of half each.  Exit status 0 or 1. */
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		failures++;
		fprintf(stderr, "FAIL %s\n", what);
	}
}

static void check_shares(const uint32_t w[RS_SLOTS_MAX], const char *what)
{
	static uint32_t out[RS_TABLE_SIZE];
	uint32_t count[RS_SLOTS_MAX] = { 0 };
	uint64_t sum = 0;
	size_t none = 0, total = 0;

	for (size_t i = 0; i < RS_SLOTS_MAX; i++)
		sum += w[i];
	agent_table_build(w, out);
	for (size_t b = 0; b < RS_TABLE_SIZE; b++) {
		if (out[b] == RS_SLOT_NONE) {
			none++;
			continue;
		}
		if (out[b] >= RS_SLOTS_MAX || w[out[b]] == 0) {
			check(0, what);
			return;
		}
		count[out[b]]++;
	}
	if (sum == 0) {
		check(none == RS_TABLE_SIZE, what);
		return;
	}
	check(none == 0, what);
	for (size_t i = 0; i < RS_SLOTS_MAX; i++) {
		double exact = (double)w[i] * RS_TABLE_SIZE / (double)sum;

		check(fabs((double)count[i] - exact) < 1.0, what);
		total += count[i];
	}
	check(total == RS_TABLE_SIZE, what);
}

int main(void)
{
	uint32_t w[RS_SLOTS_MAX] = { 0 }, out[RS_TABLE_SIZE];
	unsigned seed = 12345;
	size_t hits[2] = { 0, 0 };

	check_shares(w, "all zero: no slot");
	w[0] = 3;
	w[1] = 1;
	check_shares(w, "3:1");
	w[0] = w[1] = 1;
	w[7] = 1;
	check_shares(w, "thirds");
	for (int trial = 0; trial < 300; trial++) {
		memset(w, 0, sizeof(w));
		for (int k = 0, n = 1 + rand_r(&seed) % 40; k < n; k++)
			w[rand_r(&seed) % RS_SLOTS_MAX] = (uint32_t)(rand_r(&seed) % 1000);
		check_shares(w, "random weights");
	}
	memset(w, 0, sizeof(w));
	w[RS_SLOTS_MAX - 1] = 5;
	check_shares(w, "last slot only");

	memset(w, 0, sizeof(w));
	w[0] = w[1] = 1;
	agent_table_build(w, out);
	for (unsigned i = 1; i <= 4000; i++) {
		struct rs_source_key k = { .family = AF_INET };
		uint32_t a = htonl(0x7f000200u + i); /* 127.0.2.0 + i */

		memcpy(&k.addr[0], &a, 4);
		hits[out[rs_source_hash(&k) & RS_TABLE_MASK]]++;
	}
	check(hits[0] > 1900 && hits[1] > 1900, "hash spreads consecutive sources evenly");
	printf("table: %s (spread %zu/%zu)\n", failures ? "FAILED" : "ok", hits[0], hits[1]);
	return failures ? 1 : 0;
}
