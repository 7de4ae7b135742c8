/* SPDX-License-Identifier: Apache-2.0 */
/* agent.h - the node agent's parts, shared by its files and by the kernel
 * tests: map keys from socket addresses (keys.c), the room-weighted bucket
 * table (table.c), gateway slots (slots.c; reading them: maps/map_read.h), loading/attaching/pinning and
 * adoption (loader.c, pin_dir.c), the store sync (sync.c), /metrics
 * (metrics.c).  Everything hangs off structs the caller owns; no globals.
 *
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure. */
#ifndef RS_AGENT_H
#define RS_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "maps/map_read.h" /* the reads: shared with ringsteerctl maps */
#include "ringsteer_maps.h"

/* File descriptors of every map, owned by whoever filled it (the loader's
 * skeletons, or a test).  -1 where absent. */
struct agent_maps {
	int services, sockets, pins, table, stats;  /* steer.bpf.c */
	int slots, conns, endpoints, owner, config; /* sockops.bpf.c */
	int conn_svcs, clients, targets, conn_stats; /* connect.bpf.c */
};

#define AGENT_MAPS_NONE \
	{ -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 }

/* ---- keys.c ------------------------------------------------------------ */

/* A local ADDR:PORT as an rs_services / rs_endpoints key.  An IPv4-mapped
 * IPv6 address becomes the IPv4 key (the kernel sees an IPv4 packet).
 * Returns 0 or -EAFNOSUPPORT. */
int agent_endpoint_key(const struct sockaddr *sa, struct rs_endpoint_key *k);

/* A source address (port ignored) as an rs_pins key, mapped IPv4 as IPv4.
 * Returns 0 or -EAFNOSUPPORT. */
int agent_source_key(const struct sockaddr *sa, struct rs_source_key *k);

/* "ADDR:PORT" text (the store's session source) to a source key.  Returns 0
 * or -EINVAL. */
int agent_source_key_text(const char *endpoint, struct rs_source_key *k);

/* ---- services.c -------------------------------------------------------- */

/* A Service address to steer, and the position of its --service flag. */
struct agent_service_addr {
	struct rs_endpoint_key key;
	uint32_t index;
};

/* Makes rs_services (and rs_conn_svcs) hold want[0..n), each with its
 * index, then, when prune, nothing else.  Returns 0, -E2BIG (more than
 * RS_SERVICES_MAX), -errno. */
int agent_services_set_addrs(const struct agent_maps *m, const struct agent_service_addr *want, size_t n, bool prune);

/* Makes rs_services hold exactly endpoints[0..n) ("ADDR:PORT"), each with
 * its index.  Returns 0, -E2BIG (more than RS_SERVICES_MAX), -EINVAL (an
 * endpoint is not numeric ADDR:PORT), -errno. */
int agent_services_set(const struct agent_maps *m, const char *const *endpoints, size_t n);

/* ---- table.c ----------------------------------------------------------- */

/* Fills out[RS_TABLE_SIZE] from weights[RS_SLOTS_MAX] (0: not in the table):
 * slot i gets round(weights[i] * RS_TABLE_SIZE / sum) buckets by largest
 * remainder, so the counts sum to RS_TABLE_SIZE exactly and each differs
 * from the exact share by less than one; buckets are laid out in slot order
 * (the source hash spreads sources uniformly over them).  All weights 0:
 * every bucket RS_SLOT_NONE.  Pure. */
void agent_table_build(const uint32_t weights[RS_SLOTS_MAX], uint32_t out[RS_TABLE_SIZE]);

/* Creates a fresh inner map, fills it with buckets[RS_TABLE_SIZE], and swaps
 * it into rs_table with one update, so a lookup sees the old table or the
 * new one, never a mix.  Returns 0 or -errno. */
int agent_table_swap(const struct agent_maps *m, const uint32_t buckets[RS_TABLE_SIZE]);

/* ---- slots.c ----------------------------------------------------------- */

/* The slot for gateway_id: the one it holds, else a free one, else one
 * whose socket is gone.  Returns the slot or -ENOSPC. */
int agent_slot_pick(const struct agent_maps *m, const char *gateway_id);

/* Registers a socket of gateway_id in slot.  A slot that changes holder
 * gets, in this order, a new generation and zeroed counts before any socket
 * is tagged with it, so sockops never counts the old holder's connections
 * against the new one; the same gateway re-registering (after its restart,
 * or the agent's) keeps its generation and counts, whose closes keep being
 * counted.  Every socket is tagged in rs_owner (its accepted connections are
 * counted); a listener (the socket the Service delivers to) then enters
 * rs_sockets, after its slot row, so the datapath never sees a socket whose
 * slot is not written.  The same listener again changes nothing.  The
 * caller keeps fd and may close it: the sockmap holds the socket and drops
 * it when the gateway closes it.  Returns 0, -EINVAL (gateway_id empty or
 * too long), -ERANGE, -errno. */
int agent_slot_install(const struct agent_maps *m, uint32_t slot, const char *gateway_id, int fd, bool listener);

/* Frees slot: its socket out of rs_sockets, its row FREE (generation kept,
 * so its old connections are no longer counted).  Returns 0 or -errno. */
int agent_slot_release(const struct agent_maps *m, uint32_t slot);

#endif
