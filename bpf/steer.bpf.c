/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* steer.bpf.c - the sk_lookup program: a new TCP connection to a configured
 * Service address is handed to one local gateway's listening socket.
 *
 * Order: a pin for the source address (a supervisor's current placement on
 * a local gateway) wins; otherwise the bucket of the source's hash in the
 * room-weighted table.  A pin whose slot has no socket (the gateway closed
 * its listener: the pin is stale) says nothing about where the supervisor
 * goes now, so the table decides, exactly as if there were no pin.
 * Whatever else goes wrong (no slot, no socket behind the table's slot, the
 * kernel refuses the socket) the program answers SK_PASS, so the regular
 * lookup (kube-proxy's path) still runs and the gateway's in-protocol
 * placement corrects the choice.  It never drops.
 *
 * Guarantees: constant time (a fixed number of map reads, no loops: at most
 * two sockmap lookups and one bpf_sk_assign per run); every value read from
 * a map is bounds-checked before use; every outcome is counted once in
 * rs_stats (see ringsteer_maps.h). */
#include "kernel_uapi.h"
#include <bpf/bpf_helpers.h>

#include "ringsteer_maps.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL"; /* GPL-compatible, as the GPL-only helpers it calls require */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_SERVICES_MAX);
	__type(key, struct rs_endpoint_key);
	__type(value, struct rs_service);
} rs_services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, RS_SLOTS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} rs_sockets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_PINS_MAX);
	__type(key, struct rs_source_key);
	__type(value, struct rs_pin);
} rs_pins SEC(".maps");

/* The template of the inner table; the agent creates real ones like it. */
struct rs_table_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_TABLE_SIZE);
	__type(key, __u32);
	__type(value, __u32); /* slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct rs_table_inner);
} rs_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} rs_stats SEC(".maps");

static __always_inline void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&rs_stats, &stat);

	if (v)
		*v += 1; /* per CPU: no atomics needed */
}

/* Fills the Service key from the lookup's destination; false for a family
 * the program does not steer. */
static __always_inline bool service_key(const struct bpf_sk_lookup *ctx, struct rs_endpoint_key *k)
{
	k->family = ctx->family;
	k->port = ctx->local_port;
	if (ctx->family == AF_INET) {
		k->addr[0] = ctx->local_ip4;
		return true;
	}
	if (ctx->family == AF_INET6) {
		k->addr[0] = ctx->local_ip6[0];
		k->addr[1] = ctx->local_ip6[1];
		k->addr[2] = ctx->local_ip6[2];
		k->addr[3] = ctx->local_ip6[3];
		return true;
	}
	return false;
}

static __always_inline void source_key(const struct bpf_sk_lookup *ctx, struct rs_source_key *k)
{
	k->family = ctx->family;
	if (ctx->family == AF_INET) {
		k->addr[0] = ctx->remote_ip4;
	} else {
		k->addr[0] = ctx->remote_ip6[0];
		k->addr[1] = ctx->remote_ip6[1];
		k->addr[2] = ctx->remote_ip6[2];
		k->addr[3] = ctx->remote_ip6[3];
	}
}

/* The slot of the source's bucket, or RS_SLOT_NONE (no table swapped in
 * yet, or the bucket is empty). */
static __always_inline __u32 table_slot(const struct rs_source_key *src)
{
	__u32 zero = 0, bucket = rs_source_hash(src) & RS_TABLE_MASK;
	__u32 *slot;
	void *inner;

	inner = bpf_map_lookup_elem(&rs_table, &zero);
	if (!inner)
		return RS_SLOT_NONE;
	slot = bpf_map_lookup_elem(inner, &bucket);
	if (!slot)
		return RS_SLOT_NONE;
	return *slot;
}

/* The listening socket of slot, a reference the caller must release; NULL
 * when slot names no slot (RS_SLOT_NONE, or a corrupt value) or the slot
 * has no socket (the gateway closed its listener and the kernel dropped it
 * from the sockmap). */
static __always_inline struct bpf_sock *slot_socket(__u32 slot)
{
	if (slot >= RS_SLOTS_MAX)
		return NULL;
	return bpf_map_lookup_elem(&rs_sockets, &slot);
}

/* Assigns sk and releases it; returns the stat to count. */
static __always_inline __u32 assign(struct bpf_sk_lookup *ctx, struct bpf_sock *sk, __u32 success)
{
	long err = bpf_sk_assign(ctx, sk, 0);

	bpf_sk_release(sk);
	return err ? RS_STAT_ASSIGN_ERROR : success;
}

SEC("sk_lookup")
int rs_steer(struct bpf_sk_lookup *ctx)
{
	struct rs_endpoint_key svc = {};
	struct rs_source_key src = {};
	struct bpf_sock *sk;
	struct rs_pin *pin;
	__u32 slot;

	if (ctx->protocol != IPPROTO_TCP || !service_key(ctx, &svc))
		return SK_PASS;
	if (!bpf_map_lookup_elem(&rs_services, &svc))
		return SK_PASS;
	count(RS_STAT_LOOKUPS);

	source_key(ctx, &src);
	pin = bpf_map_lookup_elem(&rs_pins, &src);
	if (pin) {
		sk = slot_socket(pin->slot);
		if (sk) {
			/* No fallback when the kernel refuses the socket: the
			 * pin is not stale (its gateway is alive and is the
			 * supervisor's placement), and the refusal (a family
			 * mismatch, or another program assigned first) must
			 * show as an assign error, not hide behind a table
			 * outcome. */
			count(assign(ctx, sk, RS_STAT_PINNED));
			return SK_PASS;
		}
		count(RS_STAT_PIN_STALE); /* outside the sum: the table's outcome counts too */
	}

	slot = table_slot(&src);
	if (slot >= RS_SLOTS_MAX) {
		count(RS_STAT_NONE); /* RS_SLOT_NONE (no local room), or a corrupt value */
		return SK_PASS;
	}
	sk = slot_socket(slot);
	count(sk ? assign(ctx, sk, RS_STAT_TABLE) : RS_STAT_MISS);
	return SK_PASS; /* with a socket assigned, SK_PASS delivers to it */
}
