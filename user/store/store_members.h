/* SPDX-License-Identifier: Apache-2.0 */
/* store_members.h - a batch's member rows in memory (store_members.c): read
 * in one go before the batch decides, consulted and updated as each item
 * is decided, and written in one go at its end, so that on a server a
 * batch costs the same round trips whatever its size.
 *
 * Guarantees: a slot's row is what re-reading the member's row would give
 * after the items decided so far (an item sees the rows of the items
 * before it); the write leaves the sessions and the gateways' attached
 * counts exactly as writing each item's row in turn would
 * (rs_store_member_write): each member's last row, the counts moved from
 * its row before the batch to that last row. */
#ifndef RS_STORE_MEMBERS_H
#define RS_STORE_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_internal.h"
#include "store_snapshot.h"

/* One member of the batch. */
struct rs_member_slot {
	char member_id[RS_ID_MAX + 1];
	struct rs_member_row before; /* as read at the batch's start */
	struct rs_member_row row;    /* as the batch has left it so far */
	bool written;                /* row is to be written */
};

/* The batch's distinct members, sorted by id (byte order). */
struct rs_member_table {
	struct rs_member_slot *slots;
	size_t n;
};

/* Fills t with the distinct members of ids[0..n-1] (each a valid id:
 * rs_store_id_ok) and their rows, read in one statement where the backend
 * can (backend.h, read_sessions), inside the caller's transaction.  t is
 * emptied first.  Returns 0, -ENOMEM, or the backend's error (-EIO for a
 * corrupt or repeated row). */
int rs_member_table_read(struct rs_store *st, struct rs_member_table *t, const char *const *ids, size_t n);

/* The slot of member_id, or NULL when it is not in t. */
struct rs_member_slot *rs_member_table_find(const struct rs_member_table *t, const char *member_id);

/* Records r as the slot's row, written at now_ms (its heartbeat), to be
 * written by rs_member_table_write(). */
void rs_member_table_set(struct rs_member_slot *slot, const struct rs_session_row *r, int64_t now_ms);

/* Writes every slot's row set since the read, with heartbeat now_ms, and
 * moves the gateways' attached counts, in one statement where the backend
 * can (backend.h, write_sessions).  Returns 0, -ENOMEM or the backend's
 * error. */
int rs_member_table_write(struct rs_store *st, const struct rs_member_table *t, int64_t now_ms);

void rs_member_table_free(struct rs_member_table *t);

#endif
