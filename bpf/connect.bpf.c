/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* connect.bpf.c - connect-time steering on the supervisor's node: a TCP
 * connect() to a configured Service address, from a caller the agent knows,
 * is rewritten to the gateway endpoint the agent chose for it, before any
 * packet exists, so kube-proxy's DNAT never sees it.  getpeername() on such a
 * socket answers with the Service address the caller dialed.
 *
 * Who is calling: the caller's netns cookie (a pod), then its cgroup v2 id
 * (a hostNetwork process).  The agent writes rs_clients when a supervisor
 * registers and refreshes each entry at every sync; an entry past its expiry
 * is ignored, so a dead agent degrades to kube-proxy, never to stale targets.
 * The target is read through its slot: a gateway that dies, drains or leaves
 * is one write (ready = 0), and an entry naming a slot since given to another
 * gateway (gen differs) is ignored.
 *
 * Guarantees: constant time (a fixed number of map reads, no loops); every
 * map value is bounds-checked before use; every connect to a Service address
 * is counted once in LOOKUPS and once in exactly one outcome (see
 * ringsteer_maps.h); the program always allows the connect (returns 1): a
 * miss of any kind leaves the destination untouched, so kube-proxy and the
 * gateway's in-protocol placement decide, exactly as without an agent.
 *
 * Two copies of connect4/6: rs_connect4/6 on the steered cgroup (--cgroup,
 * the node's root as deployed), and rs_below_conn4/6 on each cgroup
 * directly below it (below.c).  A socket-LB (Cilium, Calico eBPF, GKE
 * Dataplane V2) attached to the root before the agent runs before
 * rs_connect4 there (FIFO within a cgroup) and would rewrite the Service
 * first; a child's programs run before its ancestors', so the child copy
 * decides first for everything below the root, and the socket-LB then sees
 * a gateway's pod IP, not a Service, and leaves it.  The root copy still
 * serves callers directly in the root, and callers below a child that has
 * no copy (rs_conn_below); it leaves the others to their child's copy, so
 * a connect is looked up and counted once.  getpeername4/6 run on the
 * steered cgroup only: the saved destination is per socket, and the
 * programs of the steered cgroup run for its whole subtree. */
#include "kernel_uapi.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "ringsteer_maps.h"

#define ALLOW 1

char LICENSE[] SEC("license") = "Dual BSD/GPL"; /* GPL-compatible, as the GPL-only helpers it calls require */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_SERVICES_MAX);
	__type(key, struct rs_endpoint_key);
	__type(value, struct rs_service);
} rs_conn_svcs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_CLIENTS_MAX);
	__type(key, struct rs_client_key);
	__type(value, struct rs_client);
} rs_clients SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_TARGETS_MAX);
	__type(key, __u32);
	__type(value, struct rs_target);
} rs_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_CSTAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} rs_conn_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rs_orig_dst);
} rs_orig_dst SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_BELOW_MAX + 1);
	__type(key, __u64);
	__type(value, __u32);
} rs_conn_below SEC(".maps");

static __always_inline void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&rs_conn_stats, &stat);

	if (v)
		*v += 1; /* per CPU: no atomics needed */
}

/* The target for this caller, or NULL with *outcome set to why not. */
static __always_inline struct rs_target *target_of(struct bpf_sock_addr *ctx, __u32 *outcome)
{
	struct rs_client_key key = {};
	struct rs_client *c;
	struct rs_target *t;
	__u32 slot;

	key.kind = RS_CLIENT_NETNS;
	key.id = bpf_get_netns_cookie(ctx);
	*outcome = RS_CSTAT_STEERED_NETNS;
	c = bpf_map_lookup_elem(&rs_clients, &key);
	if (!c) {
		key.kind = RS_CLIENT_CGROUP;
		key.id = bpf_get_current_cgroup_id();
		*outcome = RS_CSTAT_STEERED_CGROUP;
		c = bpf_map_lookup_elem(&rs_clients, &key);
	}
	if (!c) {
		*outcome = RS_CSTAT_MISS;
		return NULL;
	}
	if (c->expires_ns < bpf_ktime_get_ns()) {
		*outcome = RS_CSTAT_EXPIRED;
		return NULL;
	}
	slot = c->slot;
	if (slot >= RS_TARGETS_MAX) {
		*outcome = RS_CSTAT_TARGET_DOWN;
		return NULL;
	}
	t = bpf_map_lookup_elem(&rs_targets, &slot);
	if (!t || !t->ready || t->gen != c->gen || t->port == 0 || t->port > 0xffff) {
		*outcome = RS_CSTAT_TARGET_DOWN;
		return NULL;
	}
	return t;
}

/* Remembers what the caller dialed, for getpeername.  A failure only costs
 * getpeername the Service address; the steering itself goes on.  One
 * function per family: the verifier refuses a context field read through a
 * pointer the compiler computed from a family test. */
static __always_inline struct rs_orig_dst *orig_new(struct bpf_sock_addr *ctx)
{
	if (!ctx->sk)
		return NULL;
	return bpf_sk_storage_get(&rs_orig_dst, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

static __always_inline void remember4(struct bpf_sock_addr *ctx)
{
	struct rs_orig_dst *o = orig_new(ctx);

	if (!o)
		return;
	o->family = AF_INET;
	o->port = ctx->user_port;
	o->addr[0] = ctx->user_ip4;
}

static __always_inline void remember6(struct bpf_sock_addr *ctx)
{
	struct rs_orig_dst *o = orig_new(ctx);

	if (!o)
		return;
	o->family = AF_INET6;
	o->port = ctx->user_port;
	o->addr[0] = ctx->user_ip6[0];
	o->addr[1] = ctx->user_ip6[1];
	o->addr[2] = ctx->user_ip6[2];
	o->addr[3] = ctx->user_ip6[3];
}

/* True when the caller sits below a child cgroup with its own copy of
 * these programs, which ran before this one (the steered cgroup's copy
 * then leaves the connect alone).  The ancestor id is 0 for a caller
 * directly in the steered cgroup (it has no ancestor that deep), never
 * looked up: key 0 holds the level. */
static __always_inline bool handled_below(void)
{
	__u64 key = RS_BELOW_LEVEL_KEY, id;
	__u32 *level = bpf_map_lookup_elem(&rs_conn_below, &key);

	if (!level)
		return false;
	id = bpf_get_current_ancestor_cgroup_id((int)*level);
	return id != RS_BELOW_LEVEL_KEY && bpf_map_lookup_elem(&rs_conn_below, &id) != NULL;
}

/* Looks the Service up and picks the target; NULL (counted) when the
 * connect goes on untouched.  family is the socket's; mapped says its
 * address is v4-mapped IPv6 (svc is then the IPv4 key); top says this is
 * the steered cgroup's copy (see handled_below; NULL, uncounted, there). */
static __always_inline struct rs_target *choose(struct bpf_sock_addr *ctx, struct rs_endpoint_key *svc,
						__u32 family, bool mapped, bool top, __u32 *outcome)
{
	struct rs_target *t;

	if (!bpf_map_lookup_elem(&rs_conn_svcs, svc))
		return NULL;
	if (top && handled_below())
		return NULL;
	count(RS_CSTAT_LOOKUPS);
	t = target_of(ctx, outcome);
	/* An AF_INET socket reaches only IPv4 targets; an AF_INET6 one an IPv6
	 * target, or an IPv4 target through its mapped form. */
	if (t && family == AF_INET && t->family != AF_INET)
		t = NULL;
	if (t && family == AF_INET6 && !(t->family == AF_INET6 || (t->family == AF_INET && mapped)))
		t = NULL;
	if (!t && (*outcome == RS_CSTAT_STEERED_NETNS || *outcome == RS_CSTAT_STEERED_CGROUP))
		*outcome = RS_CSTAT_TARGET_DOWN;
	count(*outcome);
	return t;
}

static __always_inline bool is_tcp(const struct bpf_sock_addr *ctx)
{
	return ctx->type == SOCK_STREAM && (ctx->protocol == IPPROTO_TCP || ctx->protocol == 0);
}

static __always_inline int connect4(struct bpf_sock_addr *ctx, bool top)
{
	struct rs_endpoint_key svc = {};
	struct rs_target *t;
	__u32 outcome;

	if (!is_tcp(ctx))
		return ALLOW;
	svc.family = AF_INET; /* not in the initializer: clang would make it a .rodata copy */
	svc.port = bpf_ntohs((__u16)ctx->user_port);
	svc.addr[0] = ctx->user_ip4;
	t = choose(ctx, &svc, AF_INET, false, top, &outcome);
	if (!t)
		return ALLOW;
	remember4(ctx);
	ctx->user_ip4 = t->addr[0];
	ctx->user_port = bpf_htons((__u16)t->port);
	return ALLOW;
}

static __always_inline int connect6(struct bpf_sock_addr *ctx, bool top)
{
	struct rs_endpoint_key svc = {};
	struct rs_target *t;
	__u32 outcome;
	bool mapped;

	if (!is_tcp(ctx))
		return ALLOW;
	svc.port = bpf_ntohs((__u16)ctx->user_port);
	mapped = ctx->user_ip6[0] == 0 && ctx->user_ip6[1] == 0 && ctx->user_ip6[2] == bpf_htonl(0xffff);
	if (mapped) {
		svc.family = AF_INET;
		svc.addr[0] = ctx->user_ip6[3];
	} else {
		svc.family = AF_INET6;
		svc.addr[0] = ctx->user_ip6[0];
		svc.addr[1] = ctx->user_ip6[1];
		svc.addr[2] = ctx->user_ip6[2];
		svc.addr[3] = ctx->user_ip6[3];
	}
	t = choose(ctx, &svc, AF_INET6, mapped, top, &outcome);
	if (!t)
		return ALLOW;
	remember6(ctx);
	if (t->family == AF_INET) {
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0xffff);
		ctx->user_ip6[3] = t->addr[0];
	} else {
		ctx->user_ip6[0] = t->addr[0];
		ctx->user_ip6[1] = t->addr[1];
		ctx->user_ip6[2] = t->addr[2];
		ctx->user_ip6[3] = t->addr[3];
	}
	ctx->user_port = bpf_htons((__u16)t->port);
	return ALLOW;
}

SEC("cgroup/connect4")
int rs_connect4(struct bpf_sock_addr *ctx)
{
	return connect4(ctx, true);
}

SEC("cgroup/connect6")
int rs_connect6(struct bpf_sock_addr *ctx)
{
	return connect6(ctx, true);
}

/* The copies on the cgroups directly below the steered one. */
SEC("cgroup/connect4")
int rs_below_conn4(struct bpf_sock_addr *ctx)
{
	return connect4(ctx, false);
}

SEC("cgroup/connect6")
int rs_below_conn6(struct bpf_sock_addr *ctx)
{
	return connect6(ctx, false);
}

/* The steered socket's peer is the gateway; the caller dialed the Service
 * and is told so, as kube-proxy's DNAT would leave it. */
static __always_inline struct rs_orig_dst *orig_of(struct bpf_sock_addr *ctx, __u32 family)
{
	struct rs_orig_dst *o;

	if (!ctx->sk || !is_tcp(ctx))
		return NULL;
	o = bpf_sk_storage_get(&rs_orig_dst, ctx->sk, 0, 0);
	if (!o || o->family != family)
		return NULL;
	count(RS_CSTAT_PEERNAME);
	return o;
}

SEC("cgroup/getpeername4")
int rs_getpeername4(struct bpf_sock_addr *ctx)
{
	struct rs_orig_dst *o = orig_of(ctx, AF_INET);

	if (o) {
		ctx->user_ip4 = o->addr[0];
		ctx->user_port = o->port;
	}
	return ALLOW;
}

SEC("cgroup/getpeername6")
int rs_getpeername6(struct bpf_sock_addr *ctx)
{
	struct rs_orig_dst *o = orig_of(ctx, AF_INET6);

	if (o) {
		ctx->user_ip6[0] = o->addr[0];
		ctx->user_ip6[1] = o->addr[1];
		ctx->user_ip6[2] = o->addr[2];
		ctx->user_ip6[3] = o->addr[3];
		ctx->user_port = o->port;
	}
	return ALLOW;
}
