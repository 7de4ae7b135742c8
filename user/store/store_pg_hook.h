/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_hook.h - the PostgreSQL backend's test seam: a callback run
 * between sending a COMMIT and reading its answer, so that a test can break
 * the connection exactly there (the answer lost, the server's outcome
 * unknown to the client) and check how the store resolves it.  Not part of
 * the public API; nothing but tests sets it. */
#ifndef RS_STORE_PG_HOOK_H
#define RS_STORE_PG_HOOK_H

#include "ringsteer/store.h"

/* Called with the connection's socket once the COMMIT is flushed to it,
 * before its answer is read. */
typedef void (*rs_pg_commit_sent_fn)(void *ctx, int fd);

/* Sets st's hook (fn NULL: none).  Returns 0, or -EINVAL when st is not a
 * PostgreSQL store. */
int rs_store_pg_set_commit_hook(struct rs_store *st, rs_pg_commit_sent_fn fn, void *ctx);

#endif
