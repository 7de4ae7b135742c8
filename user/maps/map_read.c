/* SPDX-License-Identifier: Apache-2.0 */
/* map_read.c - the agent's maps read by fd (map_read.h), for the agent
 * itself and for `ringsteerctl maps`.
 *
 * Guarantees: nothing here writes a map; an fd out-parameter is always set;
 * a slot is checked against RS_SLOTS_MAX before any lookup; per-CPU values
 * are summed into caller memory, all or none; every walk of a map is
 * bounded by the caller's max. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maps/map_read.h"

int rs_map_open_pin(const char *dir, const char *name, int *fd)
{
	char path[4096];
	int fd_or_err;

	*fd = -1;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd_or_err = bpf_obj_get(path); /* libbpf: -errno on failure, errno set too */
	if (fd_or_err < 0)
		return -errno;
	*fd = fd_or_err;
	return 0;
}

int rs_map_slot(int slots_fd, uint32_t slot, struct rs_slot *out)
{
	if (slot >= RS_SLOTS_MAX)
		return -ERANGE;
	if (bpf_map_lookup_elem(slots_fd, &slot, out) < 0)
		return -errno;
	out->gateway[RS_GATEWAY_ID_SIZE - 1] = '\0'; /* never trust a map's string */
	return 0;
}

int rs_map_slot_socket(int sockets_fd, uint32_t slot, uint64_t *cookie)
{
	uint64_t c;

	if (slot >= RS_SLOTS_MAX)
		return -ERANGE;
	if (bpf_map_lookup_elem(sockets_fd, &slot, &c) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (cookie)
		*cookie = c;
	return 1;
}

int rs_map_slot_counts(int conns_fd, uint32_t slot, struct rs_conn_counts *out)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	struct rs_conn_counts *per;

	memset(out, 0, sizeof(*out));
	if (slot >= RS_SLOTS_MAX)
		return -ERANGE;
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	if (bpf_map_lookup_elem(conns_fd, &slot, per) < 0) {
		err = -errno;
		goto cleanup;
	}
	for (int c = 0; c < ncpu; c++) {
		out->established += per[c].established;
		out->closed += per[c].closed;
	}
cleanup:
	free(per);
	return err;
}

int rs_map_percpu_sum(int fd, uint32_t n, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	uint64_t *per;

	memset(out, 0, sizeof(uint64_t) * n);
	if (fd < 0)
		return -EBADF;
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	for (uint32_t s = 0; s < n; s++) {
		if (bpf_map_lookup_elem(fd, &s, per) < 0) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			out[s] += per[c];
	}
	free(per);
	if (err) /* never half a set of counters: they are read as one */
		memset(out, 0, sizeof(uint64_t) * n);
	return err;
}

int rs_map_table(int table_fd, uint32_t buckets[RS_TABLE_SIZE])
{
	uint32_t zero = 0, id, keys[RS_TABLE_SIZE], count = RS_TABLE_SIZE;
	LIBBPF_OPTS(bpf_map_batch_opts, batch);
	__u32 out_batch;
	int inner, err = 0;

	if (bpf_map_lookup_elem(table_fd, &zero, &id) < 0)
		return -errno; /* -ENOENT: never swapped in */
	inner = bpf_map_get_fd_by_id(id);
	if (inner < 0)
		return -errno;
	/* An array's batch read ends with -ENOENT once it has every entry. */
	if ((bpf_map_lookup_batch(inner, NULL, &out_batch, keys, buckets, &count, &batch) < 0 && errno != ENOENT) ||
	    count != RS_TABLE_SIZE) {
		for (uint32_t b = 0; b < RS_TABLE_SIZE; b++)
			if (bpf_map_lookup_elem(inner, &b, &buckets[b]) < 0) {
				err = -errno;
				break;
			}
	}
	close(inner);
	return err;
}

long rs_map_count(int fd, size_t key_size, long max)
{
	unsigned char key[64], next[64];
	long n = 0;
	void *prev = NULL;

	if (key_size > sizeof(key))
		return -EINVAL;
	while (n < max && bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}
