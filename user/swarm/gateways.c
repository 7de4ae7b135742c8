/* SPDX-License-Identifier: Apache-2.0 */
/* gateways.c - the gateways the swarm has heard of, each (id, peer
 * endpoint) once: members keep a 2-byte index instead of 320 bytes of
 * strings, and /metrics counts members per gateway from it.  Bounded
 * (SWARM_GATEWAYS_MAX): a gateway that names ever new peers cannot grow
 * it without end; a full table makes the target undialable, which the
 * member treats as a refused target. */
#include <stdio.h>
#include <string.h>

#include "swarm.h"

uint16_t swarm_gateway_intern(struct swarm *sw, const char *id, const char *peer)
{
	struct swarm_gateway *g;

	for (uint16_t i = 0; i < sw->n_gateways; i++) {
		g = &sw->gateways[i];
		if (strcmp(g->id, id) == 0 && strcmp(g->peer, peer) == 0)
			return i;
	}
	if (sw->n_gateways == SWARM_GATEWAYS_MAX)
		return SWARM_NO_GW;
	g = &sw->gateways[sw->n_gateways];
	snprintf(g->id, sizeof(g->id), "%s", id);
	snprintf(g->peer, sizeof(g->peer), "%s", peer);
	g->attached = 0;
	return sw->n_gateways++;
}
