/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - the core's log lines go to the caller's log callback as
 * key/value pairs: the core writes no file itself.  The lowest file of the
 * core: every other one logs through it. */
#include <stdarg.h>

#include "gwcore.h"

void gwc_log(struct rs_gw_core *core, const char *level, ...)
{
	const char *kv[34];
	size_t n = 0;
	va_list ap;

	if (!core->cb.log)
		return;
	va_start(ap, level);
	for (const char *s; n + 2 < sizeof(kv) / sizeof(kv[0]) && (s = va_arg(ap, const char *));) {
		kv[n++] = s;
		kv[n++] = va_arg(ap, const char *);
	}
	va_end(ap);
	kv[n] = NULL;
	core->cb.log(core->user, level, kv);
}
