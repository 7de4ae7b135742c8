/* SPDX-License-Identifier: Apache-2.0 */
/* keys.c - map keys from socket addresses, in the exact layout the BPF
 * programs build from their contexts (ringsteer_maps.h): addresses in network
 * byte order, ports in host byte order, unused words zero.  An IPv4-mapped
 * IPv6 address is keyed as IPv4, because the kernel hands sk_lookup and
 * sockops the packet's family, not the socket's. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "agent.h"
#include "util/endpoint.h"

/* Fills family and addr from sa; port (host order) in *port.  0 or
 * -EAFNOSUPPORT. */
static int address_of(const struct sockaddr *sa, uint32_t *family, uint32_t addr[4], uint32_t *port)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

		*family = AF_INET;
		memcpy(&addr[0], &in4->sin_addr, 4);
		*port = ntohs(in4->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		*port = ntohs(in6->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			*family = AF_INET;
			memcpy(&addr[0], &in6->sin6_addr.s6_addr[12], 4);
			return 0;
		}
		*family = AF_INET6;
		memcpy(addr, &in6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int agent_endpoint_key(const struct sockaddr *sa, struct rs_endpoint_key *k)
{
	uint32_t port = 0;
	int err;

	memset(k, 0, sizeof(*k));
	err = address_of(sa, &k->family, k->addr, &port);
	k->port = port;
	return err;
}

int agent_source_key(const struct sockaddr *sa, struct rs_source_key *k)
{
	uint32_t port = 0;

	memset(k, 0, sizeof(*k));
	return address_of(sa, &k->family, k->addr, &port);
}

int agent_source_key_text(const char *endpoint, struct rs_source_key *k)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (rs_endpoint_parse(endpoint, &ss, &len))
		return -EINVAL;
	return agent_source_key((const struct sockaddr *)&ss, k) ? -EINVAL : 0;
}
