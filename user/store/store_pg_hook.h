/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_hook.h - the PostgreSQL backend's test seams: a callback run
 * between sending a COMMIT and reading its answer, so that a test can break
 * the connection exactly there (the answer lost, the server's outcome
 * unknown to the client) and check how the store resolves it; and the
 * local wall clock the server's is compared with, so that a test can step
 * it.  Not part of the public API; nothing but tests sets them. */
#ifndef RS_STORE_PG_HOOK_H
#define RS_STORE_PG_HOOK_H

#include <stdint.h>

#include "ringsteer/store.h"

/* Called with the connection's socket once the COMMIT is flushed to it,
 * before its answer is read. */
typedef void (*rs_pg_commit_sent_fn)(void *ctx, int fd);

/* Sets st's hook (fn NULL: none).  Returns 0, or -EINVAL when st is not a
 * PostgreSQL store. */
int rs_store_pg_set_commit_hook(struct rs_store *st, rs_pg_commit_sent_fn fn, void *ctx);

/* This process's wall clock as the backend reads it against the server's
 * (ms since the epoch), so that a test can step it as libfaketime would. */
typedef int64_t (*rs_pg_wall_clock_fn)(void *ctx);

/* Sets st's wall clock (fn NULL: CLOCK_REALTIME).  Returns 0 or -EINVAL as
 * rs_store_pg_set_commit_hook(). */
int rs_store_pg_set_wall_clock(struct rs_store *st, rs_pg_wall_clock_fn fn, void *ctx);

#endif
