/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_error.h - what a PostgreSQL error's SQLSTATE means to the store:
 * the negative errno its callers see, and whether the connection that
 * answered it is to be dropped rather than kept. */
#ifndef RS_STORE_PG_ERROR_H
#define RS_STORE_PG_ERROR_H

#include <stdbool.h>

/* The errno for a statement that failed with SQLSTATE state (NULL: none
 * came): -EBUSY (lock_not_available, serialization or deadlock: retry),
 * -ENOMEM (out_of_memory), -ENOSPC (disk_full), -EROFS
 * (read_only_sql_transaction, cannot_connect_now: a standby or a server in
 * recovery), -EUCLEAN (data_corrupted, index_corrupted), else -EIO. */
int rs_pg_sqlstate_error(const char *state);

/* Whether a connection that answered state is to be dropped: the server
 * behind it is read-only or in recovery (a standby, or a primary being
 * demoted), and a connection kept there would fail every write for good;
 * a new one may land on the writable host (target_session_attrs). */
bool rs_pg_sqlstate_drops(const char *state);

#endif
