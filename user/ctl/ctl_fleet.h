/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_fleet.h - the fleet as `ringsteerctl status` shows it: every live
 * gateway with its supervisors and sandboxes, and the balance figures of
 * the placement rule (S, G, cap, max - min over serving gateways), read
 * from the store at one wall-clock instant. */
#ifndef RS_CTL_FLEET_H
#define RS_CTL_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/store.h"

struct ctl_fleet_gateway {
	char id[RS_ID_MAX + 1];
	bool draining;
	uint32_t supervisors;  /* live sessions on it, reservations included */
	uint64_t sandboxes;    /* their sandboxes, summed */
	uint32_t busiest;      /* the most sandboxes on one of them */
};

struct ctl_fleet {
	struct ctl_fleet_gateway *gws; /* live gateways, sorted by id */
	size_t n;
	uint64_t supervisors;  /* S: live sessions, on draining gateways too (the rule's N) */
	uint32_t serving;      /* G: live gateways not draining */
	uint32_t cap;          /* ceil(S / G), 0 when G = 0 */
	uint32_t max, min;     /* supervisors over serving gateways (0 when G = 0) */
	uint32_t largest;      /* supervisors on the fullest gateway, draining included */
};

/* Reads the live gateways and the live sessions as of now_ms into *f
 * (freed with ctl_fleet_free; zeroed on error).  The supervisor counts come
 * from the session listing, so a row and its sandboxes always agree.
 * Returns 0, -ENOMEM, or the store's error. */
int ctl_fleet_read(struct rs_store *st, int64_t now_ms, struct ctl_fleet *f);

/* Frees what ctl_fleet_read() allocated; a zeroed fleet is fine. */
void ctl_fleet_free(struct ctl_fleet *f);

/* Returns "even" (max - min <= 1), "uneven", or "none" (no serving gateway). */
const char *ctl_fleet_verdict(const struct ctl_fleet *f);

#endif
