/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* standin_lb.bpf.c - a stand-in for a node's socket-level load balancer
 * (Cilium's kube-proxy replacement, Calico's eBPF data plane, GKE Dataplane
 * V2), for t_agent_coexist.sh: a cgroup connect4 program that rewrites a
 * connect to the Service address to a backend picked at random with
 * bpf_get_prandom_u32, as Cilium's sock4_connect does, and counts what it
 * rewrote, per backend.  Anything else passes untouched.
 *
 *   lb_svc      ARRAY [1]  {addr, port (network order), n backends}
 *   lb_backends ARRAY [LB_BACKENDS_MAX] {addr, port (network order)}
 *   lb_stats    ARRAY [1 + LB_BACKENDS_MAX] __u64: [0] rewrites, [1 + i]
 *               rewrites to backend i */
#include "kernel_uapi.h"
#include <bpf/bpf_helpers.h>

#include "standin_lb.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_svc);
} lb_svc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, struct lb_backend);
} lb_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 + LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} lb_stats SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&lb_stats, &i);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("cgroup/connect4")
int standin_lb4(struct bpf_sock_addr *ctx)
{
	__u32 zero = 0, pick;
	struct lb_svc *svc = bpf_map_lookup_elem(&lb_svc, &zero);
	struct lb_backend *be;

	if (!svc || svc->n == 0 || svc->n > LB_BACKENDS_MAX || ctx->user_ip4 != svc->addr ||
	    ctx->user_port != svc->port)
		return 1;
	pick = bpf_get_prandom_u32() % svc->n;
	be = bpf_map_lookup_elem(&lb_backends, &pick);
	if (!be)
		return 1;
	ctx->user_ip4 = be->addr;
	ctx->user_port = be->port;
	count(0);
	count(1 + pick);
	return 1;
}
