/* SPDX-License-Identifier: Apache-2.0 */
/* version.c - the linked library's version and commit, so a caller can tell
 * them from the headers it was compiled against.  The Makefile passes
 * RS_BUILD_COMMIT to this file alone (mk/version.mk). */
#include "ringsteer/version.h"

#ifndef RS_BUILD_COMMIT
#define RS_BUILD_COMMIT "unknown"
#endif

const char *rs_version(void)
{
	return RINGSTEER_VERSION_STRING;
}

const char *rs_build_commit(void)
{
	return RS_BUILD_COMMIT;
}
