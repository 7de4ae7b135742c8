/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_batch.h - the PostgreSQL backend's batch hooks (backend.h,
 * read_sessions and write_sessions), in store_pg_batch.c. */
#ifndef RS_STORE_PG_BATCH_H
#define RS_STORE_PG_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

int rs_pg_read_sessions(struct rs_db *db, const char *const *ids, size_t n, rs_db_row_fn on_row, void *ctx);
int rs_pg_write_sessions(struct rs_db *db, const struct rs_session_row *rows, size_t n, int64_t now_ms,
			 const struct rs_attached_delta *deltas, size_t n_deltas);

#endif
