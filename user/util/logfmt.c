/* SPDX-License-Identifier: Apache-2.0 */
/* logfmt.c - structured log lines (see the header).  A line is built in
 * one buffer and written at once; over-long lines are cut, never split. */
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/logfmt.h"

#define LINE_MAX_BYTES 2048

struct line {
	char buf[LINE_MAX_BYTES];
	size_t len;
};

static void put(struct line *l, const char *s, size_t n)
{
	size_t room = sizeof(l->buf) - 1 - l->len; /* keep one byte for '\n' */

	if (n > room)
		n = room;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static bool needs_quotes(const char *v)
{
	if (!*v)
		return true;
	for (const char *c = v; *c; c++)
		if (*c <= ' ' || *c == '"' || *c == '=' || *c == '\\' || *c == 0x7f)
			return true;
	return false;
}

static void put_value(struct line *l, const char *v)
{
	if (!needs_quotes(v)) {
		put(l, v, strlen(v));
		return;
	}
	put(l, "\"", 1);
	for (const char *c = v; *c; c++) {
		char esc[5];

		if (*c == '"' || *c == '\\') {
			esc[0] = '\\';
			esc[1] = *c;
			put(l, esc, 2);
		} else if ((unsigned char)*c < ' ' || *c == 0x7f) {
			static const char hex[] = "0123456789abcdef";

			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[(unsigned char)*c >> 4];
			esc[3] = hex[*c & 15];
			put(l, esc, 4);
		} else {
			put(l, c, 1);
		}
	}
	put(l, "\"", 1);
}

/* Writes one line: the stamp, level and who, then the pairs next() yields. */
static void write_line(FILE *out, const char *level, const char *who, const char *(*next)(void *), void *it)
{
	struct line l = { .len = 0 };
	struct timespec ts;
	struct tm tm;
	char stamp[48];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	put(&l, "ts=", 3);
	put(&l, stamp, strlen(stamp));
	snprintf(stamp, sizeof(stamp), ".%03ldZ level=", ts.tv_nsec / 1000000);
	put(&l, stamp, strlen(stamp));
	put_value(&l, level);
	put(&l, " ", 1);
	put(&l, who, strlen(who));
	for (;;) {
		const char *key = next(it), *value;

		if (!key)
			break;
		value = next(it);
		put(&l, " ", 1);
		put(&l, key, strlen(key));
		put(&l, "=", 1);
		put_value(&l, value ? value : "");
	}
	l.buf[l.len++] = '\n';
	fflush(out);
	if (write(fileno(out), l.buf, l.len) < 0) {
		/* Nowhere left to report a failed log write. */
	}
}

struct va_iter {
	va_list ap;
};

static const char *va_next(void *it)
{
	return va_arg(((struct va_iter *)it)->ap, const char *);
}

void rs_log(FILE *out, const char *level, const char *who, ...)
{
	struct va_iter it;

	va_start(it.ap, who);
	write_line(out, level, who, va_next, &it);
	va_end(it.ap);
}

static const char *kv_next(void *it)
{
	const char *const **p = it;

	return *(*p)++;
}

void rs_log_kv(FILE *out, const char *level, const char *who, const char *const *kv)
{
	write_line(out, level, who, kv_next, &kv);
}
