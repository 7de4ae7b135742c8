/* ctl_args.c - list and number parsing for ringsteerctl, strict so that a
 * typo is an error rather than a silently different ring. */
#include "ctl_args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/ring.h"

int ctl_split_list(char *s, struct ctl_list *out)
{
	size_t n = 1;

	out->items = NULL;
	out->n = 0;
	if (!s || !*s)
		return -EINVAL;
	for (const char *c = s; *c; c++)
		n += *c == ',';
	out->items = calloc(n, sizeof(*out->items));
	if (!out->items)
		return -ENOMEM;
	for (char *item = s;; item++) {
		char *comma = strchr(item, ',');

		if (comma)
			*comma = '\0';
		if (!*item) {
			ctl_list_free(out);
			return -EINVAL;
		}
		out->items[out->n++] = item;
		if (!comma)
			break;
		item = comma;
	}
	return 0;
}

void ctl_list_free(struct ctl_list *l)
{
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

int ctl_parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int ctl_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;

	if (ctl_parse_u64(s, &v) != 0 || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int ctl_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ringsteerctl %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

int ctl_check_member(const char *cmd, const char *member)
{
	if (!*member || strlen(member) > RS_ID_MAX)
		return ctl_usage_error(cmd, "member id must be 1 to %d bytes", RS_ID_MAX);
	return 0;
}

int ctl_ring_from_ids(const char *cmd, const struct ctl_list *ids, struct rs_ring **ring)
{
	int err = rs_ring_new((const char *const *)ids->items, ids->n, ring);

	if (err == -EINVAL)
		return ctl_usage_error(cmd, "--gateways: ids must be at most %d bytes", RS_ID_MAX);
	if (err) {
		fprintf(stderr, "ringsteerctl %s: %s\n", cmd, strerror(-err));
		return 1;
	}
	return 0;
}

int ctl_flush_output(const char *cmd)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringsteerctl %s: cannot write output: %s\n", cmd, strerror(errno));
		return 1;
	}
	return 0;
}
