/* SPDX-License-Identifier: Apache-2.0 */
/* store_error.c - the kinds of store errors (rs_store_error_kind): each
 * asks an operator for something different (wait or fix the network, free
 * disk, point at the writable server, restore a backup), so a gateway counts
 * them apart.  And the reasons the backends give for them
 * (rs_store_error_set, rs_store_last_error), which an errno loses: a
 * refused connection and a refused password are both -EIO. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "backend.h"
#include "store_internal.h"

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

void rs_store_error_set(char *error, const char *fmt, ...)
{
	char raw[RS_STORE_ERROR_MAX];
	size_t out = 0;
	bool gap = false, line = false;
	va_list ap;

	if (!error || error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* A run of white space becomes one space, "; " where it ends a line.
	 * One character adds at most three (with the gap before it). */
	for (const unsigned char *p = (const unsigned char *)raw; *p && out + 3 < RS_STORE_ERROR_MAX; p++) {
		if (*p == ' ' || (*p >= '\t' && *p <= '\r')) {
			gap = out > 0;
			line |= *p == '\n';
			continue;
		}
		if (gap && line)
			error[out++] = ';';
		if (gap)
			error[out++] = ' ';
		gap = line = false;
		error[out++] = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
	}
	error[out] = '\0';
}

const char *rs_store_last_error(const struct rs_store *st)
{
	return st ? st->error : "";
}
