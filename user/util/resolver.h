/* SPDX-License-Identifier: Apache-2.0 */
/* resolver.h - name lookups off the event loop: one thread that runs
 * getaddrinfo (rs_resolve_now) for the requests it is given and posts the
 * answers back to the loop through an eventfd, where each request's
 * callback runs.  The loop never waits on DNS.
 *
 * Requests queued while the thread is busy are answered together when it
 * takes them: consecutive ones for the same endpoint by one lookup, begun
 * after each of them was asked (a swarm of members dialing the one
 * Service costs one lookup per turn, not one per member), so an answer is
 * never older than its request. */
#ifndef RS_RESOLVER_H
#define RS_RESOLVER_H

#include <event2/event.h>

#include "util/resolve.h"

struct rs_resolver;
struct rs_resolve_req;

/* Called on the loop with a lookup's outcome: err 0 and r's answers, or a
 * negative errno (rs_resolve_now's) and why in words.  The request is gone
 * once it returns. */
typedef void (*rs_resolve_cb)(void *arg, int err, const char *why, const struct rs_resolved *r);

/* Starts the thread and its event on base.  Returns 0 or -errno. */
int rs_resolver_new(struct event_base *base, struct rs_resolver **out);

/* Cancels every request (no callback runs) and stops the thread: joined
 * when it is idle; when it is inside a lookup it finishes alone and frees
 * what is left (a DNS timeout does not hold up an exit).  Not from inside
 * a callback.  NULL: nothing. */
void rs_resolver_free(struct rs_resolver *r);

/* Asks for endpoint's addresses; cb(arg, ...) runs on the loop when they
 * are known.  *out (may be NULL) names the request for rs_resolve_cancel.
 * Returns 0, -EINVAL (endpoint too long), -ENOMEM. */
int rs_resolve_start(struct rs_resolver *r, const char *endpoint, rs_resolve_cb cb, void *arg,
		     struct rs_resolve_req **out);

/* Its callback will not run (the lookup may still finish unseen).  Only
 * for a request whose callback has not run yet. */
void rs_resolve_cancel(struct rs_resolve_req *q);

#endif
