/* SPDX-License-Identifier: Apache-2.0 */
/* table.c - the room-weighted bucket table: built as a pure function of the
 * slots' weights, then written whole into a fresh inner map and swapped into
 * rs_table with a single update (Cilium's Maglev habit), so the sk_lookup
 * program never indexes a half-written table. */
#include <bpf/bpf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

void agent_table_build(const uint32_t weights[RS_SLOTS_MAX], uint32_t out[RS_TABLE_SIZE])
{
	uint64_t sum = 0, rem[RS_SLOTS_MAX];
	uint32_t share[RS_SLOTS_MAX];
	size_t given = 0, pos = 0;

	for (size_t i = 0; i < RS_SLOTS_MAX; i++)
		sum += weights[i];
	if (sum == 0) {
		for (size_t b = 0; b < RS_TABLE_SIZE; b++)
			out[b] = RS_SLOT_NONE;
		return;
	}
	/* Largest remainder: floors first, then one more bucket to the slots
	 * with the largest remainders (lowest slot first on ties) until all
	 * RS_TABLE_SIZE are given. */
	for (size_t i = 0; i < RS_SLOTS_MAX; i++) {
		uint64_t exact = (uint64_t)weights[i] * RS_TABLE_SIZE;

		share[i] = (uint32_t)(exact / sum);
		rem[i] = exact % sum;
		given += share[i];
	}
	while (given < RS_TABLE_SIZE) {
		size_t best = RS_SLOTS_MAX;

		for (size_t i = 0; i < RS_SLOTS_MAX; i++)
			if (weights[i] && (best == RS_SLOTS_MAX || rem[i] > rem[best]))
				best = i;
		share[best]++;
		rem[best] = 0; /* at most one extra bucket per slot */
		given++;
	}
	for (size_t i = 0; i < RS_SLOTS_MAX; i++)
		for (uint32_t n = 0; n < share[i]; n++)
			out[pos++] = (uint32_t)i;
}

int agent_table_swap(const struct agent_maps *m, const uint32_t buckets[RS_TABLE_SIZE])
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	LIBBPF_OPTS(bpf_map_batch_opts, batch);
	uint32_t keys[RS_TABLE_SIZE], count = RS_TABLE_SIZE, zero = 0;
	int inner, err = 0;

	inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rs_table_inner", sizeof(uint32_t), sizeof(uint32_t),
			       RS_TABLE_SIZE, &opts);
	if (inner < 0)
		return -errno;
	for (uint32_t b = 0; b < RS_TABLE_SIZE; b++)
		keys[b] = b;
	if (bpf_map_update_batch(inner, keys, buckets, &count, &batch) < 0 || count != RS_TABLE_SIZE) {
		/* Kernels without batch ops for arrays: one at a time (the map is
		 * not visible to the datapath yet, so this is just slower). */
		for (uint32_t b = 0; b < RS_TABLE_SIZE; b++)
			if (bpf_map_update_elem(inner, &b, &buckets[b], BPF_ANY) < 0) {
				err = -errno;
				goto cleanup;
			}
	}
	if (bpf_map_update_elem(m->table, &zero, &inner, BPF_ANY) < 0)
		err = -errno;
cleanup:
	close(inner); /* the outer map holds the inner one now */
	return err;
}
