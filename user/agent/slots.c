/* SPDX-License-Identifier: Apache-2.0 */
/* slots.c - local gateway sockets in numbered slots: rs_slots says who holds
 * each slot (and survives the agent, so a restarted agent knows), rs_sockets
 * holds the listening socket sk_lookup assigns, rs_owner tags the socket so
 * sockops can count its connections, rs_conns holds the counts.
 *
 * The kernel removes a socket from rs_sockets when it closes, so "the slot's
 * socket is gone" is read from the map, never remembered.  The reads are
 * the shared reader's (user/maps/map_read.c); here, the writes. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent.h"

int agent_slot_pick(const struct agent_maps *m, const char *gateway_id)
{
	int free_slot = -1, orphan = -1;

	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		struct rs_slot s;

		if (rs_map_slot(m->slots, i, &s))
			continue;
		if (s.state == RS_SLOT_REGISTERED && strcmp(s.gateway, gateway_id) == 0)
			return (int)i;
		if (s.state != RS_SLOT_REGISTERED && free_slot < 0)
			free_slot = (int)i;
		else if (s.state == RS_SLOT_REGISTERED && orphan < 0 && rs_map_slot_socket(m->sockets, i, NULL) == 0)
			orphan = (int)i;
	}
	if (free_slot >= 0)
		return free_slot;
	return orphan >= 0 ? orphan : -ENOSPC;
}

/* Writes zeros to every CPU's counts of slot. */
static int zero_counts(const struct agent_maps *m, uint32_t slot)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	struct rs_conn_counts *zeros;

	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	zeros = calloc((size_t)ncpu, sizeof(*zeros));
	if (!zeros)
		return -ENOMEM;
	if (bpf_map_update_elem(m->conns, &slot, zeros, BPF_ANY) < 0)
		err = -errno;
	free(zeros);
	return err;
}

int agent_slot_install(const struct agent_maps *m, uint32_t slot, const char *gateway_id, int fd, bool listener)
{
	struct rs_slot cur, next;
	struct rs_sock_owner tag = { 0 };
	size_t id_len = strlen(gateway_id);
	uint64_t cookie = 0, in_map = 0, sock_fd = (uint64_t)fd;
	socklen_t len = sizeof(cookie);
	int err;

	if (id_len == 0 || id_len >= RS_GATEWAY_ID_SIZE)
		return -EINVAL;
	err = rs_map_slot(m->slots, slot, &cur);
	if (err)
		return err;
	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) < 0)
		return -errno;
	next = cur;
	if (cur.state != RS_SLOT_REGISTERED || strcmp(cur.gateway, gateway_id) != 0) {
		/* A new holder: a new generation and zeroed counts, written
		 * before any socket carries the new generation's tag, so the old
		 * holder's connections (old tag) are never counted against it. */
		memset(&next, 0, sizeof(next));
		next.gen = cur.gen + 1;
		next.state = RS_SLOT_REGISTERED;
		memcpy(next.gateway, gateway_id, id_len + 1);
		if (bpf_map_update_elem(m->slots, &slot, &next, BPF_ANY) < 0)
			return -errno;
		err = zero_counts(m, slot);
		if (err)
			return err;
	} else if (listener && cur.cookie == cookie && rs_map_slot_socket(m->sockets, slot, &in_map) == 1 && in_map == cookie) {
		return 0; /* the same listener again (agent or gateway reconnect) */
	}
	tag.slot = slot;
	tag.gen = next.gen;
	tag.state = RS_OWNER_TAGGED;
	if (bpf_map_update_elem(m->owner, &fd, &tag, BPF_ANY) < 0)
		return -errno;
	if (!listener)
		return 0;
	next.cookie = cookie;
	if (bpf_map_update_elem(m->slots, &slot, &next, BPF_ANY) < 0)
		return -errno;
	if (bpf_map_update_elem(m->sockets, &slot, &sock_fd, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int agent_slot_release(const struct agent_maps *m, uint32_t slot)
{
	struct rs_slot s;
	int err = rs_map_slot(m->slots, slot, &s);

	if (err)
		return err;
	/* The kernel drops a closed listener from the sockmap by itself, and
	 * deleting an empty sockmap slot fails with EINVAL (not ENOENT): both
	 * mean the slot is already empty, which is what we want. */
	if (bpf_map_delete_elem(m->sockets, &slot) < 0 && errno != ENOENT && errno != EINVAL)
		return -errno;
	s.state = RS_SLOT_FREE;
	s.cookie = 0;
	if (bpf_map_update_elem(m->slots, &slot, &s, BPF_ANY) < 0)
		return -errno;
	return 0;
}
