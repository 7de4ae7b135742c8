/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_cancel.c - a best-effort cancel that never blocks its caller
 * (store_pg_cancel.h).  One detached thread per abandoned connection: the
 * store abandons a connection only after a round trip timed out, and
 * reconnecting to a server that does not answer fails within
 * connect_timeout without a statement to cancel, so these threads are as
 * few as the connections a stalled server ever accepted. */
#include <pthread.h>
#include <signal.h>

#include "store_pg_cancel.h"

static void *cancel_run(void *arg)
{
	PGcancel *cancel = arg;
	char errbuf[256];

	/* Whatever it says, there is nobody left to tell. */
	(void)PQcancel(cancel, errbuf, sizeof(errbuf));
	PQfreeCancel(cancel);
	return NULL;
}

void rs_pg_cancel_detached(PGconn *conn)
{
	PGcancel *cancel = PQgetCancel(conn);
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;
	int rc;

	if (!cancel)
		return;
	if (pthread_attr_init(&attr) != 0) {
		PQfreeCancel(cancel);
		return;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The thread takes no signal meant for the caller's process. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&tid, &attr, cancel_run, cancel);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		PQfreeCancel(cancel);
}
