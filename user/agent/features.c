/* SPDX-License-Identifier: Apache-2.0 */
/* features.c - probing the kernel features of agent_features.h.  Each probe
 * asks the kernel the way the agent will use the feature (the getsockopt
 * itself, libbpf's helper probe for the program type that calls it), so a
 * backported feature counts as present and a version number is never read. */
#include "agent_features.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14; older libc headers lack it */
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

static const char *const names[AGENT_FEATS] = {
	[AGENT_FEAT_SK_LOOKUP] = "sk_lookup",
	[AGENT_FEAT_SO_NETNS_COOKIE] = "so_netns_cookie",
	[AGENT_FEAT_SOCKOPS_NETNS_COOKIE] = "sockops_netns_cookie",
	[AGENT_FEAT_PEERPIDFD] = "so_peerpidfd",
};

const char *agent_feature_name(enum agent_feature f)
{
	return (unsigned)f < AGENT_FEATS ? names[f] : "unknown";
}

const char *agent_feature_instead(enum agent_feature f)
{
	switch (f) {
	case AGENT_FEAT_SK_LOOKUP: return "no steering: the agent does not start";
	case AGENT_FEAT_SO_NETNS_COOKIE: return "pod supervisors keyed by their cgroup id";
	case AGENT_FEAT_SOCKOPS_NETNS_COOKIE:
		return "connections counted only on registered listeners (rs_sockops_own)";
	case AGENT_FEAT_PEERPIDFD: return "pidfd_open of the SO_PEERCRED pid, checked alive after the read";
	default: return "unknown";
	}
}

int agent_feature_parse(const char *name)
{
	for (int i = 0; i < AGENT_FEATS; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

/* An unknown option is ENOPROTOOPT; anything else (even another error)
 * means the kernel knows it. */
static bool sockopt_known(int family, int type, int opt)
{
	uint64_t v = 0;
	socklen_t len = sizeof(v);
	int fd = socket(family, type | SOCK_CLOEXEC, 0);
	bool known;

	if (fd < 0)
		return false;
	known = getsockopt(fd, SOL_SOCKET, opt, &v, &len) == 0 || errno != ENOPROTOOPT;
	close(fd);
	return known;
}

/* Loads the smallest sock_ops program that calls helper on its context:
 * the verifier refuses a helper the program type does not have.  Not
 * libbpf_probe_bpf_helper: it reads the verifier's log back, which
 * valgrind cannot see the kernel write (every agent start under memcheck
 * reported it), and the caller already knows it may load programs. */
static bool sockops_helper_known(int helper)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_JMP | BPF_CALL, .imm = helper }, /* r1 is the context */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCK_OPS, "rs_probe", "GPL", insns, 3, NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

void agent_features_probe(unsigned missing_mask, struct agent_features *out)
{
	bool sk_lookup = out->has[AGENT_FEAT_SK_LOOKUP];

	memset(out, 0, sizeof(*out));
	out->has[AGENT_FEAT_SK_LOOKUP] = sk_lookup;
	out->has[AGENT_FEAT_SO_NETNS_COOKIE] = sockopt_known(AF_INET, SOCK_DGRAM, SO_NETNS_COOKIE);
	out->has[AGENT_FEAT_SOCKOPS_NETNS_COOKIE] = sockops_helper_known(BPF_FUNC_get_netns_cookie);
	/* An unconnected UNIX stream socket: a kernel with the option answers
	 * it (ENODATA or ENOTCONN), one without it ENOPROTOOPT. */
	out->has[AGENT_FEAT_PEERPIDFD] = sockopt_known(AF_UNIX, SOCK_STREAM, SO_PEERPIDFD);
	for (int i = 0; i < AGENT_FEATS; i++)
		if (missing_mask & (1u << i))
			out->has[i] = false;
}
