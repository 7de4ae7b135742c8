/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ringsteer_maps.h - the one description of the kernel side's maps: their
 * keys, values and sizes, and the constants beside them (Katran's
 * balancer_maps.h + balancer_consts.h in one file).  Included by the BPF
 * programs (after kernel_uapi.h) and by user code (agent, ringsteerctl, tests),
 * so both sides agree on every byte.
 *
 * Guarantees: every key and value is made of __u32/__u64 fields only, with no
 * implicit padding, so a key built by user code with memset + fields matches
 * the one the program builds, and `bpftool map dump` prints named fields
 * (the maps are BTF-typed from these structs).
 *
 * Byte order: addresses are kept in network byte order, exactly as the
 * kernel hands them to sk_lookup and sockops (an IPv4 address is addr[0],
 * addr[1..3] are 0); ports in host byte order (ctx->local_port).
 *
 * Maps (pinned under /sys/fs/bpf/ringsteer/<netns inode>/ by the agent):
 *
 *   rs_services  HASH   rs_endpoint_key -> rs_service    Service addresses to steer
 *   rs_sockets   SOCKMAP slot -> listening socket          one per local gateway
 *   rs_pins      HASH   rs_source_key -> rs_pin           source address -> slot
 *   rs_table     ARRAY_OF_MAPS [1] -> ARRAY[RS_TABLE_SIZE] of __u32 slot
 *                                                         room-weighted buckets
 *   rs_stats     PERCPU_ARRAY [RS_STAT_COUNT] of __u64    steering counters
 *   rs_slots     ARRAY  slot -> rs_slot                   who holds each slot
 *   rs_conns     PERCPU_ARRAY slot -> rs_conn_counts      sockops counts
 *   rs_endpoints HASH   rs_endpoint_key -> rs_endpoint_slot  a gateway's other
 *                                                         local endpoints (peer)
 *   rs_owner     SK_STORAGE (BPF_F_CLONE) rs_sock_owner   which slot a socket
 *                                                         belongs to
 *   rs_config    ARRAY [1] of rs_config                  the agent's netns
 *
 * Connect-time steering (connect.bpf.c: cgroup connect4/6, getpeername4/6),
 * attached to the cgroup v2 root or --cgroup, for supervisors on this node:
 *
 *   rs_conn_svcs  HASH  rs_endpoint_key -> rs_service     Service addresses (as rs_services)
 *   rs_clients    HASH  rs_client_key -> rs_client         a registered caller -> target slot
 *   rs_targets    ARRAY slot -> rs_target                  a gateway's endpoint
 *   rs_conn_stats PERCPU_ARRAY [RS_CSTAT_COUNT] of __u64   connect counters
 *   rs_orig_dst   SK_STORAGE rs_orig_dst                   the Service a steered
 *                                                         socket dialed (getpeername)
 *   rs_conn_below HASH  __u64 cgroup id -> __u32          child cgroups with their own
 *                                                         connect4/6 copies (below)
 *
 * Layout changes: a map whose key or value layout changes (a field added,
 * moved or resized) takes a new name with a version suffix, rs_slots ->
 * rs_slots_v2 (Cilium's habit), so an upgraded agent makes the new map
 * beside the old pin instead of adopting it; the agent also compares the
 * pinned map's BTF layout with its own and refuses a pin whose fields
 * moved (user/agent/map_layout.c).
 *
 * Writers (the agent) order their updates so the datapath never sees a
 * half-made state: a slot's rs_slots row and zeroed rs_conns before its
 * listener is tagged (rs_owner) and before the socket enters rs_sockets; a
 * new bucket table is filled completely in a fresh inner map and swapped in
 * with one rs_table update. */
#ifndef RINGSTEER_MAPS_H
#define RINGSTEER_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ---- sizes ---------------------------------------------------------- */

#define RS_SLOTS_MAX 256        /* local gateway sockets per netns */
#define RS_TABLE_SIZE 4096      /* buckets; a power of two (index = hash & mask) */
#define RS_TABLE_MASK (RS_TABLE_SIZE - 1)
#define RS_PINS_MAX 65536       /* pinned source addresses */
#define RS_SERVICES_MAX 64      /* Service ADDR:PORTs */
#define RS_ENDPOINTS_MAX 1024   /* extra local endpoints attributed to a slot */
#define RS_GATEWAY_ID_SIZE 256  /* a gateway id (at most 253 bytes) + NUL, padded */

#define RS_SLOT_NONE 0xffffffffu /* a bucket or pin that names no slot */

/* ---- steering counters (rs_stats index) -----------------------------
 * Every run on a Service address counts once in LOOKUPS and once in exactly
 * one of the next five: lookups = pinned + table + miss + assign_error + none.
 * A pin whose slot has no socket (stale: the gateway closed its listener)
 * falls back to the table: counted in PIN_STALE, outside the sum, and its
 * final outcome (table, miss, assign_error or none) in the sum. */
enum rs_stat {
	RS_STAT_LOOKUPS = 0,      /* runs on a configured Service address */
	RS_STAT_PINNED = 1,       /* assigned to the slot of the source's pin */
	RS_STAT_TABLE = 2,        /* assigned to the slot of the source's bucket */
	RS_STAT_MISS = 3,         /* the bucket's slot has no socket: SK_PASS */
	RS_STAT_ASSIGN_ERROR = 4, /* bpf_sk_assign refused the socket (pin's or bucket's): SK_PASS */
	RS_STAT_NONE = 5,         /* an empty bucket (no local room), no usable pin: SK_PASS */
	RS_STAT_PIN_STALE = 6,    /* a pin named no socket and fell back to the table */
	RS_STAT_COUNT = 7,
};

/* ---- connect-time counters (rs_conn_stats index) -----------------------
 * Every connect() to a configured Service address counts once in LOOKUPS and
 * once in exactly one of the next five:
 * lookups = steered_netns + steered_cgroup + miss + expired + target_down.
 * PEERNAME counts getpeername() calls answered with the Service address. */
enum rs_conn_stat {
	RS_CSTAT_LOOKUPS = 0,        /* connects to a configured Service address */
	RS_CSTAT_STEERED_NETNS = 1,  /* rewritten: the caller's netns is registered */
	RS_CSTAT_STEERED_CGROUP = 2, /* rewritten: the caller's cgroup is registered */
	RS_CSTAT_MISS = 3,           /* no registration for the caller: untouched */
	RS_CSTAT_EXPIRED = 4,        /* its entry was not refreshed in time: untouched */
	RS_CSTAT_TARGET_DOWN = 5,    /* target slot not ready, reused or of another family */
	RS_CSTAT_PEERNAME = 6,       /* getpeername answered with the Service address */
	RS_CSTAT_COUNT = 7,
};

#define RS_CLIENTS_MAX 65536    /* registered callers (netns or cgroup) per node */
#define RS_TARGETS_MAX 256      /* gateway endpoints a node's callers are sent to */

/* rs_conn_below HASH: the cgroups directly below the steered one (--cgroup)
 * that carry copies of connect4/6 of their own (rs_below_conn4/6, run
 * before any program of the steered cgroup: a socket-LB attached there
 * first cannot rewrite a registered caller's connect before ringsteer).
 * Key: a child's cgroup id, value 1; key RS_BELOW_LEVEL_KEY (0, never a
 * cgroup id): the children's cgroup level.  The steered cgroup's own copy
 * leaves a caller whose ancestor at that level is listed alone (its
 * child's copy already ran), so every connect is counted once. */
#define RS_BELOW_MAX 1024       /* child cgroups with their own connect programs */
#define RS_BELOW_LEVEL_KEY 0ULL

/* ---- keys and values -------------------------------------------------- */

/* rs_services and rs_endpoints key: one local ADDR:PORT (TCP). */
struct rs_endpoint_key {
	__u32 family;   /* AF_INET (2) or AF_INET6 (10) */
	__u32 port;     /* host byte order */
	__u32 addr[4];  /* network byte order; IPv4 in addr[0] */
};

/* rs_services value. */
struct rs_service {
	__u32 index;    /* position of the --service flag, for operators */
};

/* rs_pins key: a source address (no port: a supervisor redials from a new
 * ephemeral port). */
struct rs_source_key {
	__u32 family;
	__u32 addr[4];
};

/* rs_pins value. */
struct rs_pin {
	__u32 slot;     /* < RS_SLOTS_MAX */
};

/* rs_table's inner map value is a bare __u32 slot (< RS_SLOTS_MAX, or
 * RS_SLOT_NONE): clang emits only a forward declaration for a struct that
 * is reached through an inner-map template, and libbpf cannot size it. */

enum rs_slot_state {
	RS_SLOT_FREE = 0,
	RS_SLOT_REGISTERED = 1,
};

/* rs_slots value: written by the agent only; the gateway id lets a
 * restarted agent (and ringsteerctl maps) know who holds the slot. */
struct rs_slot {
	__u64 cookie;   /* SO_COOKIE of the registered listening socket */
	__u32 gen;      /* bumped whenever the slot gets a new holder (gateway id) */
	__u32 state;    /* enum rs_slot_state */
	char gateway[RS_GATEWAY_ID_SIZE];
};

/* rs_conns value (per CPU; summed at read time). */
struct rs_conn_counts {
	__u64 established;
	__u64 closed;
};

/* rs_endpoints value. */
struct rs_endpoint_slot {
	__u32 slot;
};

/* rs_config value.  sockops is attached to a cgroup, so it runs for the
 * connections of every netns on the host; endpoint lookups (rs_endpoints)
 * apply only to sockets of the agent's own netns, told by its cookie. */
struct rs_config {
	__u64 netns_cookie; /* SO_NETNS_COOKIE of the agent's netns; 0: unset */
};

enum rs_owner_state {
	RS_OWNER_TAGGED = 0,      /* a registered listener, or its fresh child */
	RS_OWNER_COUNTED = 1,     /* established, counted in rs_conns */
	RS_OWNER_CLOSED = 2,      /* closed, counted */
};

/* rs_owner value: the agent tags each registered listener; the kernel
 * clones the tag to every child (BPF_F_CLONE), so sockops knows the slot of
 * an accepted connection, steered or not.  gen guards against a slot that
 * was given to another socket since. */
struct rs_sock_owner {
	__u32 slot;
	__u32 gen;
	__u32 state;    /* enum rs_owner_state */
	__u32 reserved;
};

/* rs_clients key: who is calling.  A pod's supervisor is told by its netns
 * cookie (bpf_get_netns_cookie, SO_NETNS_COOKIE); a hostNetwork one, which
 * shares the node's netns, by its cgroup v2 id (bpf_get_current_cgroup_id,
 * the cgroup directory's inode).  The netns key is tried first. */
enum rs_client_kind {
	RS_CLIENT_NETNS = 1,
	RS_CLIENT_CGROUP = 2,
};

struct rs_client_key {
	__u32 kind;     /* enum rs_client_kind */
	__u32 reserved; /* 0 */
	__u64 id;       /* netns cookie or cgroup id */
};

/* rs_clients value: written by the agent when the caller registers and at
 * every sync; past expires_ns (bpf_ktime_get_ns, CLOCK_MONOTONIC) it is
 * ignored, so a dead agent degrades to kube-proxy, never to stale targets. */
struct rs_client {
	__u32 slot;       /* rs_targets index, < RS_TARGETS_MAX */
	__u32 gen;        /* must equal the target's gen */
	__u64 expires_ns;
};

/* rs_targets value: a gateway's advertised peer endpoint.  A gateway that
 * dies, drains or leaves is one write (ready = 0); a slot given to another
 * gateway gets a new gen, so entries naming the old one miss. */
struct rs_target {
	__u32 family;   /* AF_INET or AF_INET6 */
	__u32 port;     /* host byte order */
	__u32 addr[4];  /* network byte order; IPv4 in addr[0] */
	__u32 gen;
	__u32 ready;    /* 1: steer to it */
	char gateway[RS_GATEWAY_ID_SIZE]; /* whose endpoint: for a restarted agent and operators */
};

/* rs_orig_dst value: the address a steered socket's connect() named, as the
 * caller gave it (an AF_INET6 socket's v4-mapped address stays mapped), for
 * getpeername. */
struct rs_orig_dst {
	__u32 family;   /* the socket's family */
	__u32 port;     /* network byte order, as in bpf_sock_addr.user_port */
	__u32 addr[4];  /* network byte order, as in user_ip4 / user_ip6 */
};

/* ---- the source hash (both sides) -------------------------------------
 * murmur3's finalizer over the family and the four address words: constant
 * time, and the same value in user space (ringsteerctl maps explains which
 * bucket a source hits) as in the kernel. */
#define RS_HASH_SEED 0x9e3779b9u

static inline __u32 rs_mix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static inline __u32 rs_source_hash(const struct rs_source_key *k)
{
	__u32 h = rs_mix32(RS_HASH_SEED ^ k->family);

	h = rs_mix32(h ^ k->addr[0]);
	h = rs_mix32(h ^ k->addr[1]);
	h = rs_mix32(h ^ k->addr[2]);
	h = rs_mix32(h ^ k->addr[3]);
	return h;
}

#endif
