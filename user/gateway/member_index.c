/* member_index.c - the gateway's attached connections by member id, so that
 * an arrival finds its member's other connections (supersede, the session
 * limit) in O(1) instead of scanning every connection: a reconnect storm
 * would otherwise cost O(connections) per HELLO.  uthash (Debian's
 * uthash-dev, header only): a well-kept hash table rather than our own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "conn.h"

struct gw_member {
	UT_hash_handle hh;
	struct gw_conn *first; /* its attached connections, through member_next */
	char id[];             /* the key */
};

struct gw_conn *gw_member_first(const struct gateway *gw, const char *member_id)
{
	struct gw_member *m = NULL;

	HASH_FIND_STR(gw->members, member_id, m);
	return m ? m->first : NULL;
}

int gw_member_add(struct gateway *gw, struct gw_conn *c)
{
	struct gw_member *m = NULL;
	size_t len;

	if (c->indexed)
		return 0;
	HASH_FIND_STR(gw->members, c->member_id, m);
	if (!m) {
		len = strlen(c->member_id);
		m = calloc(1, sizeof(*m) + len + 1);
		if (!m)
			return -ENOMEM;
		memcpy(m->id, c->member_id, len + 1);
		HASH_ADD_KEYPTR(hh, gw->members, m->id, len, m);
	}
	c->member_next = m->first;
	m->first = c;
	c->indexed = true;
	return 0;
}

void gw_member_remove(struct gateway *gw, struct gw_conn *c)
{
	struct gw_member *m = NULL;
	struct gw_conn **p;

	if (!c->indexed)
		return;
	c->indexed = false;
	HASH_FIND_STR(gw->members, c->member_id, m);
	if (!m)
		return;
	for (p = &m->first; *p; p = &(*p)->member_next)
		if (*p == c) {
			*p = c->member_next;
			break;
		}
	c->member_next = NULL;
	if (!m->first) {
		HASH_DEL(gw->members, m);
		free(m);
	}
}

void gw_member_index_free(struct gateway *gw)
{
	struct gw_member *m, *tmp;

	HASH_ITER(hh, gw->members, m, tmp) {
		HASH_DEL(gw->members, m);
		free(m);
	}
}
