/* SPDX-License-Identifier: Apache-2.0 */
/* store_error.c - the kinds of store errors (rs_store_error_kind): each
 * asks an operator for something different (wait or fix the network, free
 * disk, point at the writable server, restore a backup), so a gateway counts
 * them apart. */
#include <errno.h>

#include "ringsteer/store.h"

enum rs_store_error_kind rs_store_error_kind(int err)
{
	switch (err) {
	case -ENOSPC:
		return RS_STORE_ERROR_FULL;
	case -EROFS:
		return RS_STORE_ERROR_READONLY;
	case -EUCLEAN:
		return RS_STORE_ERROR_CORRUPT;
	/* No answer (the connection, a timeout, a lock held too long). */
	case -EIO:
	case -EBUSY:
	case -ETIMEDOUT:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ENOTCONN:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EPIPE:
		return RS_STORE_ERROR_UNAVAILABLE;
	default:
		return RS_STORE_ERROR_OTHER;
	}
}

const char *rs_store_error_kind_label(enum rs_store_error_kind kind)
{
	static const char *const labels[RS_STORE_ERROR_KINDS] = {
		[RS_STORE_ERROR_UNAVAILABLE] = "unavailable",
		[RS_STORE_ERROR_FULL] = "full",
		[RS_STORE_ERROR_READONLY] = "readonly",
		[RS_STORE_ERROR_CORRUPT] = "corrupt",
		[RS_STORE_ERROR_OTHER] = "other",
	};

	return (unsigned)kind < RS_STORE_ERROR_KINDS ? labels[kind] : "other";
}
