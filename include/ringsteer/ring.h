/* SPDX-License-Identifier: Apache-2.0 */
/* ring.h - the consistent-hash ring of gateways, compatible with OpenShell's
 * gateway ring: 128 points per gateway id, point = first 8 bytes of
 * SHA-256("<id>#<n>") read big-endian, sorted by (point, id).
 *
 * Gateway indices (0 .. rs_ring_gateway_count()-1) follow the ids' byte order,
 * so two rings built from the same ids agree on them.  Adding or removing an id
 * renumbers the gateways after it.  A ring is not thread-safe for writers; any
 * number of readers may share a ring that nobody modifies. */
#ifndef RINGSTEER_RING_H
#define RINGSTEER_RING_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_RING_VNODES 128
/* Longest gateway or member id accepted, in bytes (a DNS name). */
#define RS_ID_MAX 253

struct rs_ring;

/* Stores key's ring point, the first 8 bytes of SHA-256(key) big-endian, in
 * *point.  Returns 0, or -EIO if OpenSSL fails (out of memory inside it). */
RS_EXPORT int rs_ring_point(const char *key, size_t len, uint64_t *point);

/* Builds a ring from n ids in any order; empty ids are ignored, repeated ids
 * count once.  Returns 0 and *out, -EINVAL for an id longer than RS_ID_MAX,
 * -ENOMEM. */
RS_EXPORT int rs_ring_new(const char *const *ids, size_t n, struct rs_ring **out);

/* Frees ring; NULL is allowed. */
RS_EXPORT void rs_ring_free(struct rs_ring *ring);

/* Returns a new ring equal to ring without id (a copy if id is absent). */
RS_EXPORT int rs_ring_without(const struct rs_ring *ring, const char *id, struct rs_ring **out);

/* Adds id's 128 points in O(points) without rehashing the others.
 * Returns 0, -EEXIST if id is already present, -EINVAL for an empty or
 * too long id, -ENOMEM (the ring is then unchanged). */
RS_EXPORT int rs_ring_add(struct rs_ring *ring, const char *id);

/* Removes id's points in O(points).  Returns 0 or -ENOENT. */
RS_EXPORT int rs_ring_remove(struct rs_ring *ring, const char *id);

/* Returns the number of distinct gateways on the ring. */
RS_EXPORT size_t rs_ring_gateway_count(const struct rs_ring *ring);

/* Returns gateway gw's id, valid until the ring is next modified or freed. */
RS_EXPORT const char *rs_ring_gateway_id(const struct rs_ring *ring, size_t gw);

/* Returns the index of gateway id, or -ENOENT. */
RS_EXPORT int rs_ring_find(const struct rs_ring *ring, const char *id);

/* Returns the number of points on the ring. */
RS_EXPORT size_t rs_ring_point_count(const struct rs_ring *ring);

/* Returns the gateway index owning the point at position pos (< point count). */
RS_EXPORT uint32_t rs_ring_point_gateway(const struct rs_ring *ring, size_t pos);

/* Returns the point value at position pos (< point count). */
RS_EXPORT uint64_t rs_ring_point_value(const struct rs_ring *ring, size_t pos);

/* Returns the position of the first point >= point, wrapping to 0; the ring
 * must not be empty.  O(log points). */
RS_EXPORT size_t rs_ring_successor(const struct rs_ring *ring, uint64_t point);

/* Returns the gateway index owning key, -ENOENT on an empty ring, -EIO. */
RS_EXPORT int rs_ring_owner(const struct rs_ring *ring, const char *key);

/* Writes the distinct gateway indices met clockwise from key's point, in
 * order, into out (room for max).  Returns how many were written (every
 * gateway when max allows), -ENOMEM or -EIO. */
RS_EXPORT int rs_ring_walk(const struct rs_ring *ring, const char *key, uint32_t *out, size_t max);

#ifdef __cplusplus
}
#endif

#endif
