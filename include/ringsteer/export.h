/* SPDX-License-Identifier: Apache-2.0 */
/* export.h - what libringsteer.so exports.  The library is compiled with
 * -fvisibility=hidden, so only functions declared with RS_EXPORT in a
 * public header (include/ringsteer/) are in its dynamic symbol table: the
 * internal ones stay free to change, and the programs, which link
 * libringsteer.a statically, still reach them. */
#ifndef RINGSTEER_EXPORT_H
#define RINGSTEER_EXPORT_H

#define RS_EXPORT __attribute__((visibility("default")))

#endif
