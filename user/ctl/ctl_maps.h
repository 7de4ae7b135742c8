/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_maps.h - what `ringsteerctl maps` shares between its steering
 * section (ctl_maps.c, the command) and its connect-time section
 * (ctl_maps_connect.c): the pinned maps' fds, and how both show what they
 * read (ctl_maps_format.c). */
#ifndef RS_CTL_MAPS_H
#define RS_CTL_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ringsteer_maps.h"

/* The fds of the agent's pins, owned by ctl_maps. */
struct ctl_maps {
	int services, sockets, pins, table, stats, slots, conns, endpoints;
	int conn_stats, clients, targets; /* connect-time steering; < 0: not pinned */
};

/* An address of family (AF_INET6, else AF_INET) as text into out[cap];
 * "?" when it cannot be shown. */
void ctl_maps_format_addr(uint32_t family, const uint32_t addr[4], char *out, size_t cap);

/* k as ADDR:PORT ([ADDR]:PORT for IPv6) into out[cap]. */
void ctl_maps_format_endpoint(const struct rs_endpoint_key *k, char *out, size_t cap);

/* id, or "?" when it is not a well-formed id (a map is not trusted to hold
 * text). */
const char *ctl_maps_safe_id(const char *id);

/* {names[i]: counters[i]} for i < n; NULL when out of memory. */
json_t *ctl_maps_counters(const char *const *names, const uint64_t *counters, int n);

/* Prints the connect-time section: into doc (its keys connects, clients,
 * targets; null when not pinned), or as text when doc is NULL.  Returns 0
 * or -ENOMEM. */
int ctl_maps_print_connect(const struct ctl_maps *m, json_t *doc);

#endif
