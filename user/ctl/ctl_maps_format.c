/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_maps_format.c - how `ringsteerctl maps` shows what it read from the
 * agent's maps, for both its sections (ctl_maps.h): addresses and
 * endpoints as text, ids only when well-formed (a map is not trusted to
 * hold text), counters as one JSON object. */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>

#include "ctl_maps.h"
#include "ringsteer/proto.h"

void ctl_maps_format_addr(uint32_t family, const uint32_t addr[4], char *out, size_t cap)
{
	if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, addr, out, (socklen_t)cap))
		snprintf(out, cap, "?");
}

void ctl_maps_format_endpoint(const struct rs_endpoint_key *k, char *out, size_t cap)
{
	char a[INET6_ADDRSTRLEN];

	ctl_maps_format_addr(k->family, k->addr, a, sizeof(a));
	snprintf(out, cap, k->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, k->port);
}

const char *ctl_maps_safe_id(const char *id)
{
	return id[0] == '\0' || rs_proto_member_id_ok(id) ? id : "?";
}

json_t *ctl_maps_counters(const char *const *names, const uint64_t *counters, int n)
{
	json_t *o = json_object();

	for (int i = 0; o && i < n; i++)
		json_object_set_new(o, names[i], json_integer((json_int_t)counters[i]));
	return o;
}
