/* SPDX-License-Identifier: Apache-2.0 */
/* fd_limit.c - the gateway's descriptor budget.  Every supervisor holds a
 * socket; the soft RLIMIT_NOFILE (often 1024) is raised to the hard one at
 * start, since nothing is gained by running out early, and when
 * --max-sessions is not given it is derived from that limit, so that a
 * full gateway answers REJECT LIMIT with a retry hint instead of failing
 * accepts. */
#include <errno.h>
#include <sys/resource.h>

#include "gateway.h"

/* Descriptors that are not sessions: the store, listeners, the metrics
 * listener's connections (RS_HTTP_MAX_CONNS), the agent, TLS files being
 * reloaded, the logs, the event loop's own. */
#define GW_FD_RESERVE 64

uint64_t gw_fd_limit_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };

		/* An unlimited hard limit may still be refused (fs.nr_open):
		 * then the soft one stays. */
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl.rlim_cur = rl.rlim_max;
	}
	return rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
}

uint32_t gw_fd_default_sessions(uint64_t nofile, uint32_t max_unauth)
{
	uint64_t reserve = GW_FD_RESERVE + (uint64_t)max_unauth;

	if (nofile == 0 || nofile > UINT32_MAX)
		return 0; /* unlimited, or beyond any count: no limit */
	/* The unauthenticated pool may hold its share whatever the sessions
	 * do; when the limit is too small for both, sessions get half. */
	if (nofile >= 2 * reserve)
		return (uint32_t)(nofile - reserve);
	return nofile / 2 > 0 ? (uint32_t)(nofile / 2) : 1;
}
