/* SPDX-License-Identifier: Apache-2.0 */
/* services.c - the Service addresses the agent steers (rs_services for
 * sk_lookup, rs_conn_svcs for connect-time steering): each map is made to
 * hold exactly the set it is given, so a Service removed from the agent's
 * flags stops being steered at its next start, and an address a Service's
 * name no longer resolves to stops being steered at once
 * (service_names.c).  Entries are written before the others are dropped,
 * so an address in both the old set and the new is steered throughout. */
#include <bpf/bpf.h>
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "util/endpoint.h"

static int services_set(int map, const struct agent_service_addr *want, size_t n, bool prune)
{
	struct rs_endpoint_key key, next;
	bool have_key = false;

	if (n > RS_SERVICES_MAX)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		struct rs_service v = { .index = want[i].index };

		if (bpf_map_update_elem(map, &want[i].key, &v, BPF_ANY) < 0)
			return -errno;
	}
	if (!prune)
		return 0;
	/* Then drop the others (bounded by the map's size). */
	for (int guard = 0; guard < RS_SERVICES_MAX * 2; guard++) {
		bool keep = false;

		if (bpf_map_get_next_key(map, have_key ? &key : NULL, &next) < 0)
			break;
		for (size_t i = 0; i < n && !keep; i++)
			keep = memcmp(&want[i].key, &next, sizeof(next)) == 0;
		if (!keep) {
			if (bpf_map_delete_elem(map, &next) < 0 && errno != ENOENT)
				return -errno;
			have_key = false; /* restart: deleting may reorder the iteration */
			continue;
		}
		key = next;
		have_key = true;
	}
	return 0;
}

int agent_services_set_addrs(const struct agent_maps *m, const struct agent_service_addr *want, size_t n, bool prune)
{
	int err = services_set(m->services, want, n, prune);

	if (!err && m->conn_svcs >= 0)
		err = services_set(m->conn_svcs, want, n, prune);
	return err;
}

int agent_services_set(const struct agent_maps *m, const char *const *endpoints, size_t n)
{
	struct agent_service_addr want[RS_SERVICES_MAX];

	if (n > RS_SERVICES_MAX)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t len;

		want[i].index = (uint32_t)i;
		if (rs_endpoint_parse(endpoints[i], &ss, &len) || agent_endpoint_key((struct sockaddr *)&ss, &want[i].key))
			return -EINVAL;
	}
	return agent_services_set_addrs(m, want, n, true);
}
