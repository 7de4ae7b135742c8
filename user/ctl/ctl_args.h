/* ctl_args.h - argument parsing shared by ringsteerctl's subcommands. */
#ifndef RS_CTL_ARGS_H
#define RS_CTL_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* A comma-separated list split in place: items point into the caller's
 * string (which is modified). */
struct ctl_list {
	char **items;
	size_t n;
};

/* Splits s at commas into *out.  Returns 0, -EINVAL for an empty list or an
 * empty item, -ENOMEM. */
int ctl_split_list(char *s, struct ctl_list *out);

/* Frees the item array (not the strings). */
void ctl_list_free(struct ctl_list *l);

/* Parses a decimal 0..UINT64_MAX (0..UINT32_MAX) with nothing around it:
 * no sign, no space.  Returns 0 or -EINVAL. */
int ctl_parse_u64(const char *s, uint64_t *out);
int ctl_parse_u32(const char *s, uint32_t *out);

struct rs_ring;

/* Checks a MEMBER argument: 0, or 2 after a usage error. */
int ctl_check_member(const char *cmd, const char *member);

/* Builds a ring from the ids of a --gateways list.  Returns 0, 2 after a
 * usage error (an id too long), or 1 after printing the failure. */
int ctl_ring_from_ids(const char *cmd, const struct ctl_list *ids, struct rs_ring **ring);

/* Prints "ringsteerctl <cmd>: <message>" on stderr and returns 2. */
int ctl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Flushes stdout for subcommand cmd: returns 0, or 1 after one line on
 * stderr when the output could not be written (a closed pipe, a full disk). */
int ctl_flush_output(const char *cmd);

#endif
