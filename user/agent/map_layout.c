/* SPDX-License-Identifier: Apache-2.0 */
/* map_layout.c - whether a pinned map's key and value have the layout this
 * agent's programs were compiled with, told by the BTF both carry.
 *
 * Type, sizes and flags can match while the fields moved (two __u32 swapped,
 * a field renamed into another's place): adopting such a map would have the
 * new programs read the old bytes under the wrong names.  So the layouts are
 * compared member by member: names, bit offsets, bitfield sizes, and the
 * member types likewise down to integers (size and encoding), enums (names
 * and values) and arrays (length and element).  Typedefs and qualifiers are
 * looked through: __u32 and "unsigned int" are one layout.  Type names are
 * not compared (renaming a struct moves no byte).
 *
 * A map whose layout changes is renamed with a version (rs_slots becomes
 * rs_slots_v2, Cilium's habit): the new agent then finds no pin of the new
 * name and makes the map afresh beside the old one, instead of refusing;
 * agent_map_name_version() reads the version off a name. */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>

#include "agent_load.h"

/* Nesting deeper than this is not in ringsteer_maps.h: refusing is safe. */
#define LAYOUT_DEPTH_MAX 16

static const struct btf_type *skip_alias(const struct btf *btf, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	for (int i = 0; t && i < LAYOUT_DEPTH_MAX; i++) {
		if (!btf_is_typedef(t) && !btf_is_mod(t))
			return t;
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return NULL;
}

static bool same_name(const struct btf *a, __u32 a_off, const struct btf *b, __u32 b_off)
{
	const char *na = btf__name_by_offset(a, a_off), *nb = btf__name_by_offset(b, b_off);

	return na && nb && strcmp(na, nb) == 0;
}

static bool same_layout(const struct btf *a, __u32 a_id, const struct btf *b, __u32 b_id, int depth)
{
	const struct btf_type *ta, *tb;

	if (depth > LAYOUT_DEPTH_MAX)
		return false;
	ta = skip_alias(a, &a_id);
	tb = skip_alias(b, &b_id);
	if (!ta || !tb || btf_kind(ta) != btf_kind(tb) || btf_vlen(ta) != btf_vlen(tb))
		return false;
	switch (btf_kind(ta)) {
	case BTF_KIND_INT:
		return ta->size == tb->size && btf_int_encoding(ta) == btf_int_encoding(tb) &&
		       btf_int_offset(ta) == btf_int_offset(tb) && btf_int_bits(ta) == btf_int_bits(tb);
	case BTF_KIND_FLOAT:
	case BTF_KIND_PTR:
		return ta->size == tb->size;
	case BTF_KIND_ARRAY:
		return btf_array(ta)->nelems == btf_array(tb)->nelems &&
		       same_layout(a, btf_array(ta)->type, b, btf_array(tb)->type, depth + 1);
	case BTF_KIND_ENUM:
		if (ta->size != tb->size)
			return false;
		for (__u16 i = 0; i < btf_vlen(ta); i++)
			if (btf_enum(ta)[i].val != btf_enum(tb)[i].val ||
			    !same_name(a, btf_enum(ta)[i].name_off, b, btf_enum(tb)[i].name_off))
				return false;
		return true;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		if (ta->size != tb->size)
			return false;
		for (__u16 i = 0; i < btf_vlen(ta); i++) {
			const struct btf_member *ma = btf_members(ta) + i, *mb = btf_members(tb) + i;

			if (btf_member_bit_offset(ta, i) != btf_member_bit_offset(tb, i) ||
			    btf_member_bitfield_size(ta, i) != btf_member_bitfield_size(tb, i) ||
			    !same_name(a, ma->name_off, b, mb->name_off) ||
			    !same_layout(a, ma->type, b, mb->type, depth + 1))
				return false;
		}
		return true;
	default: /* nothing else belongs in a map key or value */
		return false;
	}
}

unsigned agent_map_name_version(const char *name, size_t *base_len)
{
	size_t len = strlen(name), i = len;
	unsigned v = 0;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	/* "_v" then 1 to 4 digits, no leading zero, 2 or more */
	if (i >= 3 && i < len && len - i <= 4 && name[i - 1] == 'v' && name[i - 2] == '_' && name[i] != '0') {
		for (size_t j = i; j < len; j++)
			v = v * 10 + (unsigned)(name[j] - '0');
		if (v >= 2) {
			*base_len = i - 2;
			return v;
		}
	}
	*base_len = len;
	return 1;
}

int agent_map_layout_check(const struct bpf_object *obj, const struct bpf_map *map, int fd)
{
	const struct btf *ours = bpf_object__btf(obj);
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	struct btf *theirs;
	bool same;

	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	/* No BTF on one side leaves nothing to compare (libbpf creates some
	 * map types without it); type and sizes were checked by the caller. */
	if (!ours || info.btf_id == 0 || info.btf_value_type_id == 0 || bpf_map__btf_value_type_id(map) == 0)
		return 0;
	theirs = btf__load_from_kernel_by_id(info.btf_id);
	if (!theirs)
		return -errno;
	same = same_layout(ours, bpf_map__btf_value_type_id(map), theirs, info.btf_value_type_id, 0) &&
	       (info.btf_key_type_id == 0 || bpf_map__btf_key_type_id(map) == 0 ||
		same_layout(ours, bpf_map__btf_key_type_id(map), theirs, info.btf_key_type_id, 0));
	btf__free(theirs);
	return same ? 0 : -EPROTO;
}
