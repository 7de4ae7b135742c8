/* SPDX-License-Identifier: Apache-2.0 */
/* version.c - the linked library's version, so a caller can tell it from
 * the headers it was compiled against. */
#include "ringsteer/version.h"

const char *rs_version(void)
{
	return RINGSTEER_VERSION_STRING;
}
