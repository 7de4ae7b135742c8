/* SPDX-License-Identifier: Apache-2.0 */
/* version.h - which libringsteer this is.  The one source of the version:
 * the Makefile reads these three numbers for the shared library's file
 * name, its SONAME (the major) and ringsteer.pc, so they cannot disagree.
 * The minor follows the issue that last changed the API. */
#ifndef RINGSTEER_VERSION_H
#define RINGSTEER_VERSION_H

#include "ringsteer/export.h"

#define RINGSTEER_VERSION_MAJOR 0
#define RINGSTEER_VERSION_MINOR 29
#define RINGSTEER_VERSION_PATCH 0

#define RS_VERSION_STR_(x) #x
#define RS_VERSION_STR(x) RS_VERSION_STR_(x)
#define RINGSTEER_VERSION_STRING                                                                   \
	RS_VERSION_STR(RINGSTEER_VERSION_MAJOR)                                                    \
	"." RS_VERSION_STR(RINGSTEER_VERSION_MINOR) "." RS_VERSION_STR(RINGSTEER_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the version of the library actually linked ("0.29.0"), which may
 * differ from the RINGSTEER_VERSION_STRING a caller was compiled against. */
RS_EXPORT const char *rs_version(void);

/* Returns the source commit the linked library was built from (git's
 * abbreviated hash, "-dirty" when the tree had changes), or "unknown" when
 * it was built outside a git checkout without RS_COMMIT. */
RS_EXPORT const char *rs_build_commit(void);

#ifdef __cplusplus
}
#endif

#endif
