/* SPDX-License-Identifier: Apache-2.0 */
/* ring.c - the consistent-hash ring: gateway ids in byte order, their points
 * sorted by (point, gateway index).  Because indices follow id byte order,
 * sorting by (point, index) is sorting by (point, id), the order OpenShell's
 * ring uses, and two rings from the same ids are identical.
 *
 * Invariants: ids[] strictly increasing, none empty; points[] strictly
 * increasing by (value, gw); every gw < n_ids; bucket[k] is the first
 * position whose value's top bucket_bits bits are >= k (k <= 2^bucket_bits),
 * so a successor search touches one bucket of about one point instead of
 * binary-searching a 20 MB array at G = 10,000. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "point_hash.h"
#include "ringsteer/ring.h"

struct rs_point {
	uint64_t value;
	uint32_t gw;
};

struct rs_ring {
	char **ids;
	size_t n_ids;
	struct rs_point *points;
	size_t n_points;
	uint32_t *bucket;
	unsigned bucket_bits;
	size_t bucket_room; /* entries allocated */
};

static unsigned bucket_bits_for(size_t n_points)
{
	unsigned bits = 1;

	while (bits < 24 && ((size_t)1 << (bits + 1)) <= n_points)
		bits++;
	return bits;
}

/* Recomputes the bucket table.  Needs room for 2^bucket_bits_for(n) + 1
 * entries: callers allocate first, so a ring never fails half-updated. */
static void index_points(struct rs_ring *ring)
{
	unsigned bits = bucket_bits_for(ring->n_points);
	size_t n_buckets = (size_t)1 << bits, pos = 0;

	ring->bucket_bits = bits;
	for (size_t k = 0; k <= n_buckets; k++) {
		while (pos < ring->n_points && (ring->points[pos].value >> (64 - bits)) < k)
			pos++;
		ring->bucket[k] = (uint32_t)pos;
	}
}

/* Makes room for the bucket table of a ring of n_points. */
static int reserve_buckets(struct rs_ring *ring, size_t n_points)
{
	size_t need = ((size_t)1 << bucket_bits_for(n_points)) + 1;
	uint32_t *bucket;

	if (need <= ring->bucket_room)
		return 0;
	bucket = realloc(ring->bucket, need * sizeof(*bucket));
	if (!bucket)
		return -ENOMEM;
	ring->bucket = bucket;
	ring->bucket_room = need;
	return 0;
}

static int point_cmp(const void *a, const void *b)
{
	const struct rs_point *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return (x->gw > y->gw) - (x->gw < y->gw);
}

static int id_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Writes gateway gw's 128 points, unsorted, into out.  Returns 0 or a
 * negative errno. */
static int gateway_points(struct rs_point_hasher *h, const char *id, uint32_t gw, struct rs_point *out)
{
	char label[RS_ID_MAX + 8];
	size_t id_len = strlen(id);

	memcpy(label, id, id_len);
	label[id_len] = '#';
	for (int v = 0; v < RS_RING_VNODES; v++) {
		/* "<id>#<v>" by hand: snprintf cost as much as the hash. */
		_Static_assert(RS_RING_VNODES <= 1000, "vnode numbers have at most 3 digits");
		size_t len = id_len + 1;
		int err;

		if (v >= 100)
			label[len++] = (char)('0' + v / 100);
		if (v >= 10)
			label[len++] = (char)('0' + v / 10 % 10);
		label[len++] = (char)('0' + v % 10);
		err = rs_point_hasher_point(h, label, len, &out[v].value);
		if (err)
			return err;
		out[v].gw = gw;
	}
	return 0;
}

/* Drops exact duplicates from sorted points; returns the new length. */
static size_t drop_duplicates(struct rs_point *pts, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (kept == 0 || point_cmp(&pts[kept - 1], &pts[i]) != 0)
			pts[kept++] = pts[i];
	return kept;
}

/* Sorts n points by (value, gw) in O(n): SHA-256 values are uniform, so a
 * counting pass on the top bits (in count, 2^bits + 1 entries) leaves about
 * one point per bucket, and the insertion sort that finishes the job moves
 * each point a step or two.  tmp has room for n. */
static void sort_points(struct rs_point *pts, size_t n, struct rs_point *tmp, uint32_t *count, unsigned bits)
{
	size_t n_buckets = (size_t)1 << bits;

	memset(count, 0, (n_buckets + 1) * sizeof(*count));
	for (size_t i = 0; i < n; i++)
		count[(pts[i].value >> (64 - bits)) + 1]++;
	for (size_t k = 0; k < n_buckets; k++)
		count[k + 1] += count[k];
	for (size_t i = 0; i < n; i++)
		tmp[count[pts[i].value >> (64 - bits)]++] = pts[i];
	for (size_t i = 1; i < n; i++) {
		struct rs_point p = tmp[i];
		size_t j = i;

		for (; j > 0 && point_cmp(&tmp[j - 1], &p) > 0; j--)
			tmp[j] = tmp[j - 1];
		tmp[j] = p;
	}
	memcpy(pts, tmp, n * sizeof(*pts));
}

static bool id_ok(const char *id)
{
	return id && id[0] && strlen(id) <= RS_ID_MAX;
}

void rs_ring_free(struct rs_ring *ring)
{
	if (!ring)
		return;
	for (size_t i = 0; i < ring->n_ids; i++)
		free(ring->ids[i]);
	free(ring->ids);
	free(ring->points);
	free(ring->bucket);
	free(ring);
}

/* Merges two sorted point runs a[0..na) and b[0..nb) into out, dropping
 * exact duplicates; returns the merged length. */
static size_t merge_points(const struct rs_point *a, size_t na, const struct rs_point *b, size_t nb,
			   struct rs_point *out)
{
	size_t i = 0, j = 0, k = 0;

	while (i < na || j < nb) {
		const struct rs_point *next;

		if (j == nb || (i < na && point_cmp(&a[i], &b[j]) <= 0))
			next = &a[i++];
		else
			next = &b[j++];
		if (k == 0 || point_cmp(&out[k - 1], next) != 0)
			out[k++] = *next;
	}
	return k;
}

int rs_ring_new(const char *const *ids, size_t n, struct rs_ring **out)
{
	struct rs_point_hasher h;
	struct rs_ring *ring = NULL;
	char **sorted = NULL;
	struct rs_point *scratch = NULL;
	size_t n_sorted = 0;
	int err;

	err = rs_point_hasher_init(&h);
	if (err)
		return err;
	err = -ENOMEM;
	ring = calloc(1, sizeof(*ring));
	sorted = calloc(n ? n : 1, sizeof(*sorted));
	if (!ring || !sorted)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] && ids[i][0] == '\0')
			continue; /* empty ids are ignored, as OpenShell does */
		if (!id_ok(ids[i])) {
			err = -EINVAL;
			goto cleanup;
		}
		sorted[n_sorted++] = (char *)ids[i];
	}
	qsort(sorted, n_sorted, sizeof(*sorted), id_cmp);

	ring->ids = calloc(n_sorted ? n_sorted : 1, sizeof(*ring->ids));
	ring->points = malloc((n_sorted ? n_sorted : 1) * RS_RING_VNODES * sizeof(*ring->points));
	if (!ring->ids || !ring->points)
		goto cleanup;
	for (size_t i = 0; i < n_sorted; i++) {
		if (ring->n_ids && strcmp(ring->ids[ring->n_ids - 1], sorted[i]) == 0)
			continue;
		ring->ids[ring->n_ids] = strdup(sorted[i]);
		if (!ring->ids[ring->n_ids])
			goto cleanup;
		ring->n_ids++;
	}

	scratch = malloc((ring->n_ids ? ring->n_ids : 1) * RS_RING_VNODES * sizeof(*scratch));
	if (!scratch || reserve_buckets(ring, ring->n_ids * RS_RING_VNODES))
		goto cleanup;
	for (size_t g = 0; g < ring->n_ids; g++) {
		err = gateway_points(&h, ring->ids[g], (uint32_t)g, ring->points + g * RS_RING_VNODES);
		if (err)
			goto cleanup;
	}
	ring->n_points = ring->n_ids * RS_RING_VNODES;
	/* The bucket table doubles as the counting sort's counters; it is
	 * rebuilt from the sorted points just below. */
	sort_points(ring->points, ring->n_points, scratch, ring->bucket, bucket_bits_for(ring->n_points));
	ring->n_points = drop_duplicates(ring->points, ring->n_points);
	index_points(ring);
	*out = ring;
	ring = NULL;
	err = 0;
cleanup:
	free(scratch);
	free(sorted);
	rs_ring_free(ring);
	rs_point_hasher_fini(&h);
	return err;
}

int rs_ring_find(const struct rs_ring *ring, const char *id)
{
	size_t lo = 0, hi = ring->n_ids;

	if (!id)
		return -ENOENT;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ring->ids[mid], id);

		if (c == 0)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

/* Returns where id would be inserted among ring->ids. */
static size_t id_insert_pos(const struct rs_ring *ring, const char *id)
{
	size_t lo = 0, hi = ring->n_ids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ring->ids[mid], id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rs_ring_add(struct rs_ring *ring, const char *id)
{
	struct rs_point fresh[RS_RING_VNODES];
	struct rs_point_hasher h;
	struct rs_point *merged = NULL;
	char **ids = NULL;
	char *copy = NULL;
	size_t pos, got;
	int err;

	if (!id_ok(id))
		return -EINVAL;
	if (rs_ring_find(ring, id) >= 0)
		return -EEXIST;
	pos = id_insert_pos(ring, id);
	err = rs_point_hasher_init(&h);
	if (err)
		return err;
	err = gateway_points(&h, id, (uint32_t)pos, fresh);
	rs_point_hasher_fini(&h);
	if (err)
		return err;
	qsort(fresh, RS_RING_VNODES, sizeof(*fresh), point_cmp);
	got = drop_duplicates(fresh, RS_RING_VNODES);

	err = -ENOMEM;
	copy = strdup(id);
	ids = malloc((ring->n_ids + 1) * sizeof(*ids));
	merged = malloc((ring->n_points + got) * sizeof(*merged));
	if (!copy || !ids || !merged || reserve_buckets(ring, ring->n_points + got))
		goto cleanup;
	memcpy(ids, ring->ids, pos * sizeof(*ids));
	ids[pos] = copy;
	memcpy(ids + pos + 1, ring->ids + pos, (ring->n_ids - pos) * sizeof(*ids));
	/* Renumbering keeps (value, gw) order: gateways after pos all shift. */
	for (size_t i = 0; i < ring->n_points; i++)
		if (ring->points[i].gw >= pos)
			ring->points[i].gw++;
	ring->n_points = merge_points(ring->points, ring->n_points, fresh, got, merged);
	free(ring->points);
	free(ring->ids);
	ring->points = merged;
	ring->ids = ids;
	ring->n_ids++;
	index_points(ring);
	return 0;
cleanup:
	free(copy);
	free(ids);
	free(merged);
	return err;
}

int rs_ring_remove(struct rs_ring *ring, const char *id)
{
	int found = rs_ring_find(ring, id);
	size_t gw, kept = 0;

	if (found < 0)
		return found;
	gw = (size_t)found;
	for (size_t i = 0; i < ring->n_points; i++) {
		struct rs_point p = ring->points[i];

		if (p.gw == gw)
			continue;
		if (p.gw > gw)
			p.gw--;
		ring->points[kept++] = p;
	}
	ring->n_points = kept;
	free(ring->ids[gw]);
	memmove(ring->ids + gw, ring->ids + gw + 1, (ring->n_ids - gw - 1) * sizeof(*ring->ids));
	ring->n_ids--;
	index_points(ring); /* fewer points: the table only shrinks, no allocation */
	return 0;
}

int rs_ring_without(const struct rs_ring *ring, const char *id, struct rs_ring **out)
{
	struct rs_ring *copy = calloc(1, sizeof(*copy));
	int err = -ENOMEM;

	if (!copy)
		return -ENOMEM;
	copy->ids = calloc(ring->n_ids ? ring->n_ids : 1, sizeof(*copy->ids));
	copy->points = malloc((ring->n_points ? ring->n_points : 1) * sizeof(*copy->points));
	if (!copy->ids || !copy->points)
		goto cleanup;
	for (size_t i = 0; i < ring->n_ids; i++) {
		copy->ids[i] = strdup(ring->ids[i]);
		if (!copy->ids[i])
			goto cleanup;
		copy->n_ids++;
	}
	memcpy(copy->points, ring->points, ring->n_points * sizeof(*copy->points));
	copy->n_points = ring->n_points;
	err = reserve_buckets(copy, copy->n_points);
	if (err)
		goto cleanup;
	index_points(copy);
	err = rs_ring_remove(copy, id);
	if (err == -ENOENT)
		err = 0;
	if (err)
		goto cleanup;
	*out = copy;
	return 0;
cleanup:
	rs_ring_free(copy);
	return err;
}

size_t rs_ring_gateway_count(const struct rs_ring *ring)
{
	return ring->n_ids;
}

const char *rs_ring_gateway_id(const struct rs_ring *ring, size_t gw)
{
	return gw < ring->n_ids ? ring->ids[gw] : NULL;
}

size_t rs_ring_point_count(const struct rs_ring *ring)
{
	return ring->n_points;
}

uint32_t rs_ring_point_gateway(const struct rs_ring *ring, size_t pos)
{
	return ring->points[pos].gw;
}

uint64_t rs_ring_point_value(const struct rs_ring *ring, size_t pos)
{
	return ring->points[pos].value;
}

size_t rs_ring_successor(const struct rs_ring *ring, uint64_t point)
{
	size_t k = (size_t)(point >> (64 - ring->bucket_bits));
	size_t lo = ring->bucket[k], hi = ring->bucket[k + 1];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ring->points[mid].value < point)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == ring->n_points ? 0 : lo;
}

int rs_ring_owner(const struct rs_ring *ring, const char *key)
{
	uint64_t point;
	int err;

	if (ring->n_points == 0)
		return -ENOENT;
	err = rs_ring_point(key, strlen(key), &point);
	if (err)
		return err;
	return (int)ring->points[rs_ring_successor(ring, point)].gw;
}

int rs_ring_walk(const struct rs_ring *ring, const char *key, uint32_t *out, size_t max)
{
	uint64_t point;
	bool *seen;
	size_t start, found = 0;
	int err;

	if (ring->n_points == 0 || max == 0)
		return 0;
	err = rs_ring_point(key, strlen(key), &point);
	if (err)
		return err;
	seen = calloc(ring->n_ids, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	start = rs_ring_successor(ring, point);
	for (size_t i = 0; i < ring->n_points && found < max && found < ring->n_ids; i++) {
		uint32_t gw = ring->points[(start + i) % ring->n_points].gw;

		if (!seen[gw]) {
			seen[gw] = true;
			out[found++] = gw;
		}
	}
	free(seen);
	return (int)found;
}
