/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sockops.bpf.c - counts, per local gateway slot, the connections that gateway
 * accepted (established) and those that have closed since, for the agent's
 * per-gateway connection gauge (established - closed).
 *
 * How a connection is attributed to a slot: the agent tags each registered
 * listening socket in rs_owner (an SK_STORAGE created with BPF_F_CLONE), and
 * the kernel copies the tag into every child the listener accepts, steered by
 * sk_lookup or not.  Connections to a gateway's other local endpoints (its
 * peer endpoint, where redirected supervisors arrive) are found in
 * rs_endpoints and tagged here, if they belong to the agent's netns (a
 * cgroup program sees every netns; a tag only ever exists on the agent's
 * own registered sockets and their children) -- by rs_sockops only, as
 * telling the netns needs a helper older kernels lack (rs_sockops_own).  A counted socket asks for STATE_CB, so its
 * close is counted once, when it reaches TCP_CLOSE.
 *
 * Guarantees: each socket is counted established at most once and closed at
 * most once, and a close is counted only if established was; a tag whose gen
 * no longer matches rs_slots (the slot went to another gateway, whose counters
 * the agent reset) counts nothing.  Always returns 1 (never affects the
 * connection). */
#include "kernel_uapi.h"
#include <bpf/bpf_helpers.h>

#include "ringsteer_maps.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL"; /* GPL-compatible, as the GPL-only helpers it calls require */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_SLOTS_MAX);
	__type(key, __u32);
	__type(value, struct rs_slot);
} rs_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_SLOTS_MAX);
	__type(key, __u32);
	__type(value, struct rs_conn_counts);
} rs_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_ENDPOINTS_MAX);
	__type(key, struct rs_endpoint_key);
	__type(value, struct rs_endpoint_slot);
} rs_endpoints SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_config);
} rs_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC | BPF_F_CLONE);
	__type(key, int);
	__type(value, struct rs_sock_owner);
} rs_owner SEC(".maps");

/* True when the tag still names the socket generation now in its slot. */
static __always_inline bool tag_current(const struct rs_sock_owner *o)
{
	__u32 slot = o->slot;
	struct rs_slot *s;

	if (slot >= RS_SLOTS_MAX)
		return false;
	s = bpf_map_lookup_elem(&rs_slots, &slot);
	return s && s->state == RS_SLOT_REGISTERED && s->gen == o->gen;
}

static __always_inline struct rs_conn_counts *counts_of(__u32 slot)
{
	if (slot >= RS_SLOTS_MAX)
		return NULL;
	return bpf_map_lookup_elem(&rs_conns, &slot);
}

/* True for a socket of the agent's netns (the program sees every netns:
 * the same loopback endpoint in another netns is not ours). */
static __always_inline bool our_netns(struct bpf_sock_ops *skops)
{
	__u32 zero = 0;
	struct rs_config *cfg = bpf_map_lookup_elem(&rs_config, &zero);

	return cfg && cfg->netns_cookie && bpf_get_netns_cookie(skops) == cfg->netns_cookie;
}

/* A connection to one of rs_endpoints, accepted by a listener the agent did
 * not tag: tag it now.  NULL when its local endpoint is not a gateway's of
 * this netns. */
static __always_inline struct rs_sock_owner *tag_by_endpoint(struct bpf_sock_ops *skops, struct bpf_sock *sk)
{
	struct rs_endpoint_key k = {};
	struct rs_endpoint_slot *e;
	struct rs_sock_owner init = {};
	struct rs_slot *s;
	__u32 slot;

	k.family = skops->family;
	k.port = skops->local_port;
	if (skops->family == AF_INET) {
		k.addr[0] = skops->local_ip4;
	} else if (skops->family == AF_INET6) {
		k.addr[0] = skops->local_ip6[0];
		k.addr[1] = skops->local_ip6[1];
		k.addr[2] = skops->local_ip6[2];
		k.addr[3] = skops->local_ip6[3];
	} else {
		return NULL;
	}
	e = bpf_map_lookup_elem(&rs_endpoints, &k);
	if (!e || !our_netns(skops))
		return NULL;
	slot = e->slot;
	if (slot >= RS_SLOTS_MAX)
		return NULL;
	s = bpf_map_lookup_elem(&rs_slots, &slot);
	if (!s || s->state != RS_SLOT_REGISTERED)
		return NULL;
	init.slot = slot;
	init.gen = s->gen;
	init.state = RS_OWNER_TAGGED;
	return bpf_sk_storage_get(&rs_owner, sk, &init, BPF_SK_STORAGE_GET_F_CREATE);
}

/* by_endpoint: also tag connections to rs_endpoints (needs
 * bpf_get_netns_cookie here, Linux 5.15). */
static __always_inline void on_established(struct bpf_sock_ops *skops, bool by_endpoint)
{
	struct bpf_sock *sk = skops->sk;
	struct rs_sock_owner *o;
	struct rs_conn_counts *c;

	if (!sk)
		return;
	o = bpf_sk_storage_get(&rs_owner, sk, NULL, 0);
	if (!o && by_endpoint)
		o = tag_by_endpoint(skops, sk);
	if (!o || o->state != RS_OWNER_TAGGED || !tag_current(o))
		return;
	c = counts_of(o->slot);
	if (!c)
		return;
	c->established += 1;
	o->state = RS_OWNER_COUNTED;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_STATE_CB_FLAG);
}

static __always_inline void on_state(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct rs_sock_owner *o;
	struct rs_conn_counts *c;

	if (skops->args[1] != BPF_TCP_CLOSE || !sk)
		return;
	o = bpf_sk_storage_get(&rs_owner, sk, NULL, 0);
	if (!o || o->state != RS_OWNER_COUNTED)
		return;
	o->state = RS_OWNER_CLOSED;
	if (!tag_current(o))
		return; /* counters were reset for a new socket in this slot */
	c = counts_of(o->slot);
	if (c)
		c->closed += 1;
}

static __always_inline int sockops(struct bpf_sock_ops *skops, bool by_endpoint)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_established(skops, by_endpoint);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		on_state(skops);
		break;
	default:
		break;
	}
	return 1;
}

/* The agent loads one of the two (loader.c, sockops_choose). */
SEC("sockops")
int rs_sockops(struct bpf_sock_ops *skops)
{
	return sockops(skops, true);
}

/* For kernels without bpf_get_netns_cookie in sock_ops (< 5.15): only the
 * children of listeners the agent tagged (registered gateways' listen and
 * peer sockets) are counted; a connection to a peer endpoint whose listener
 * was never registered is not. */
SEC("sockops")
int rs_sockops_own(struct bpf_sock_ops *skops)
{
	return sockops(skops, false);
}
