/* SPDX-License-Identifier: Apache-2.0 */
/* map_read.h - reading the agent's maps by their fds (pinned or the
 * loader's own): the one reader the agent and `ringsteerctl maps` share
 * (map_read.c).  Nothing read is trusted: slots are range-checked and a
 * gateway id is cut at its size.  Read-only: nothing here writes a map.
 *
 * Needs bpf/ringsteer_maps.h (-Ibpf) and links with -lbpf. */
#ifndef RS_MAP_READ_H
#define RS_MAP_READ_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer_maps.h"

/* Opens the pin dir/name into *fd, which is always set (-1 on failure).
 * Returns 0, -ENAMETOOLONG (the path does not fit) or -errno. */
int rs_map_open_pin(const char *dir, const char *name, int *fd);

/* Reads slot's row of rs_slots into *out, its gateway NUL-terminated.
 * Returns 0, -ERANGE (slot out of range) or -errno. */
int rs_map_slot(int slots_fd, uint32_t slot, struct rs_slot *out);

/* 1 when slot's socket is in rs_sockets (its cookie in *cookie if cookie is
 * not NULL), 0 when it is not; -ERANGE or -errno. */
int rs_map_slot_socket(int sockets_fd, uint32_t slot, uint64_t *cookie);

/* Sums slot's connection counts of rs_conns over CPUs into *out (zeroed
 * on failure).  Returns 0, -ERANGE or -errno. */
int rs_map_slot_counts(int conns_fd, uint32_t slot, struct rs_conn_counts *out);

/* Sums entries [0, n) of a per-CPU __u64 array over CPUs into out[n]: all
 * of them or, on failure, none (out zeroed: counters are read as one set).
 * Returns 0, -EBADF (fd < 0) or -errno. */
int rs_map_percpu_sum(int fd, uint32_t n, uint64_t *out);

/* Reads the bucket table in force (rs_table's inner map) into
 * buckets[RS_TABLE_SIZE].  Returns 0, -ENOENT (none swapped in yet) or
 * -errno. */
int rs_map_table(int table_fd, uint32_t buckets[RS_TABLE_SIZE]);

/* Counts a hash map's keys (key_size at most 64 bytes), stopping at max.
 * Returns the count or -EINVAL. */
long rs_map_count(int fd, size_t key_size, long max);

#endif
