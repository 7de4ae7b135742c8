/* SPDX-License-Identifier: Apache-2.0 */
/* register.c - where a checked gateway socket enters the maps.  The
 * registration server (registration_server.c) has verified the caller and
 * the socket (TCP, LISTEN, AF_INET/AF_INET6, this netns); here the socket
 * gets its gateway's slot (agent_slot_pick: the slot it already holds, else
 * a free one) and is installed (agent_slot_install: rs_slots, rs_conns,
 * rs_owner, then rs_sockets for the listener).  A listener changes what the
 * table can name, so the table is rebuilt at once rather than at the next
 * sync: a gateway that starts is steered to within its registration. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent_run.h"
#include "util/logfmt.h"

int agent_on_register(void *ctx, const char *gateway_id, enum rs_agent_role role, int fd,
		      const struct sockaddr_storage *local, uint32_t *slot_out)
{
	struct agent *a = ctx;
	bool listener = role == RS_AGENT_ROLE_LISTEN;
	int slot, err;

	(void)local;
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
