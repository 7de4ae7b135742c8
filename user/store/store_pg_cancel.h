/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_cancel.h - asking a PostgreSQL server to cancel what a
 * connection the store is abandoning runs, without ever waiting for it. */
#ifndef RS_STORE_PG_CANCEL_H
#define RS_STORE_PG_CANCEL_H

#include <libpq-fe.h>

/* Sends conn's server a cancel request for its running statement, best
 * effort, from a detached thread of its own: libpq's PQcancel() (before
 * PostgreSQL 17's non-blocking cancel API) waits for the server to close
 * the cancel connection, which a stopped server never does, and the caller
 * is giving up precisely because the server does not answer.  The thread
 * owns everything it uses and ends when the server answers or dies.  conn
 * may be closed as soon as this returns.  Nothing is reported: the
 * connection is dropped anyway, and the server's statement_timeout and
 * client_connection_check_interval end the statement if the cancel is
 * lost. */
void rs_pg_cancel_detached(PGconn *conn);

#endif
