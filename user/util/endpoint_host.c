/* SPDX-License-Identifier: Apache-2.0 */
/* endpoint_host.c - the address part of an "ADDR:PORT" endpoint, which is
 * what a Service's certificate must name when the operator gave no name. */
#include <stdio.h>
#include <string.h>

#include "util/endpoint.h"

void rs_endpoint_host(const char *endpoint, char *out, size_t cap)
{
	const char *colon = strrchr(endpoint, ':');
	size_t n = colon ? (size_t)(colon - endpoint) : strlen(endpoint);

	if (endpoint[0] == '[' && n >= 2) { /* [v6]:port */
		endpoint++;
		n -= 2;
	}
	snprintf(out, cap, "%.*s", (int)n, endpoint);
}
