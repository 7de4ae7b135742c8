/* SPDX-License-Identifier: Apache-2.0 */
/* register.c - where a checked gateway socket enters the maps.  The
 * registration server (registration_server.c) has verified the caller and
 * the socket (TCP, LISTEN, AF_INET/AF_INET6, this netns); here its local
 * address is checked against the gateway's advertised endpoint when the
 * store names it (endpoint_check), then the socket gets its gateway's slot (agent_slot_pick: the slot it already holds, else
 * a free one) and is installed (agent_slot_install: rs_slots, rs_conns,
 * rs_owner, then rs_sockets for the listener).  A listener changes what the
 * table can name, so the table is rebuilt at once rather than at the next
 * sync: a gateway that starts is steered to within its registration. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent_run.h"
#include "util/endpoint.h"
#include "util/logfmt.h"

static bool wildcard(const struct rs_endpoint_key *k)
{
	return !k->addr[0] && !k->addr[1] && !k->addr[2] && !k->addr[3];
}

/* Whether local is where gateway_id says it is: its advertised peer
 * endpoint in the store (the last sync's live rows).  A peer socket must be
 * bound to that endpoint (or to its port on a wildcard address: the
 * advertised address may be the pod's, the bind 0.0.0.0); a listener, whose
 * port the store does not say, to that address or a wildcard one.  A
 * gateway the agent does not know (no store, not synced yet, not live), or
 * one whose advertised peer is a name rather than ADDR:PORT, gives nothing
 * to compare with and is taken on the caller's uid, as before the store
 * says where it is.  Returns 0 or -EADDRNOTAVAIL. */
static int endpoint_check(const struct agent *a, const char *gateway_id, enum rs_agent_role role,
			  const struct sockaddr_storage *local)
{
	const struct rs_gateway_row *row = a->snap.valid ? agent_snapshot_gateway(&a->snap, gateway_id) : NULL;
	struct rs_endpoint_key have, want;
	struct sockaddr_storage ss;
	socklen_t len;

	if (!row || rs_endpoint_parse(row->peer, &ss, &len) || agent_endpoint_key((const struct sockaddr *)&ss, &want))
		return 0; /* nothing numeric to compare with (a name is not resolved here) */
	if (agent_endpoint_key((const struct sockaddr *)local, &have))
		return -EADDRNOTAVAIL;
	if (!wildcard(&have) && (have.family != want.family || memcmp(have.addr, want.addr, sizeof(have.addr)) != 0))
		return -EADDRNOTAVAIL;
	if (role == RS_AGENT_ROLE_PEER && have.port != want.port)
		return -EADDRNOTAVAIL;
	return 0;
}

int agent_on_register(void *ctx, const char *gateway_id, enum rs_agent_role role, int fd,
		      const struct sockaddr_storage *local, uint32_t *slot_out)
{
	struct agent *a = ctx;
	bool listener = role == RS_AGENT_ROLE_LISTEN;
	int slot, err;

	err = endpoint_check(a, gateway_id, role, local);
	if (err) {
		a->counters.register_failures++;
		return err; /* answered RS_AGENT_REG_ENDPOINT */
	}
	slot = agent_slot_pick(&a->k.maps, gateway_id);
	if (slot < 0) {
		a->counters.register_failures++;
		return slot; /* -ENOSPC: every slot is held by a live gateway */
	}
	err = agent_slot_install(&a->k.maps, (uint32_t)slot, gateway_id, fd, listener);
	if (err) {
		a->counters.register_failures++;
		return err;
	}
	if (listener) {
		err = agent_sync_table(a);
		if (err) {
			char text[64];

			snprintf(text, sizeof(text), "%s", strerror(-err));
			rs_log(stderr, "warn", "agent", "event", "table_failed", "gateway", gateway_id, "error", text,
			       NULL);
		}
	}
	*slot_out = (uint32_t)slot;
	return 0; /* the server closes fd; the sockmap holds the listener */
}
