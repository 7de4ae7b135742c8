/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_error.c - SQLSTATEs to errno (store_pg_error.h).  Only the
 * classes an operator acts on differently get an errno of their own: a full
 * disk, a read-only server, damaged data; the rest is -EIO, "no answer". */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "store_pg_error.h"

static bool is(const char *state, const char *code)
{
	return state && strcmp(state, code) == 0;
}

bool rs_pg_sqlstate_drops(const char *state)
{
	/* 25006 read_only_sql_transaction: a write on a standby or on a server
	 * with default_transaction_read_only; 57P03 cannot_connect_now: "the
	 * database system is in recovery mode" or starting up. */
	return is(state, "25006") || is(state, "57P03");
}

int rs_pg_sqlstate_error(const char *state)
{
	if (is(state, "55P03") || is(state, "40001") || is(state, "40P01"))
		return -EBUSY;
	if (is(state, "53200"))
		return -ENOMEM;
	if (is(state, "53100"))
		return -ENOSPC;
	if (rs_pg_sqlstate_drops(state))
		return -EROFS;
	if (is(state, "XX001") || is(state, "XX002"))
		return -EUCLEAN;
	return -EIO;
}
