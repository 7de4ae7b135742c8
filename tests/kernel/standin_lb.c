/* SPDX-License-Identifier: Apache-2.0 */
/* standin_lb.c - loads the stand-in socket-LB (standin_lb.bpf.c) for
 * t_agent_coexist.sh.
 *
 *   standin_lb run CGROUP PIN_DIR SVC BACKEND...
 *       attaches the stand-in's connect4 to the cgroup v2 directory CGROUP
 *       with a bpf_link (BPF_F_ALLOW_MULTI, as Cilium's and Calico's
 *       loaders attach theirs), rewriting connects to SVC (ADDR:PORT, IPv4)
 *       to one of the BACKENDs at random; pins its counters at
 *       PIN_DIR/lb_stats (PIN_DIR: a bpffs directory the caller made);
 *       prints "ready" and holds the link until SIGTERM or SIGINT.
 *   standin_lb block CGROUP
 *       attaches it to CGROUP the legacy way without BPF_F_ALLOW_MULTI
 *       (flags 0: no other connect4 program may join it there), prints
 *       "ready", and detaches at SIGTERM or SIGINT: a cgroup the agent
 *       cannot attach to.
 *   standin_lb count PIN_DIR
 *       prints "total N" and then "backend I N" per backend (I from 0).
 *   standin_lb progs CGROUP connect4|connect6
 *       prints the name of each program of that type attached to CGROUP
 *       itself (not inherited), one a line, in the order they run.
 *
 * Exit status 0, 1 on any failure (with a line on stderr). */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "standin_lb.skel.h"
#include "standin_lb.h"

static int parse_v4(const char *s, __u32 *addr, __u32 *port)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	unsigned long p;
	char *end;
	struct in_addr in;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	p = strtoul(colon + 1, &end, 10);
	if (*end || p == 0 || p > 65535 || inet_pton(AF_INET, host, &in) != 1)
		return -EINVAL;
	*addr = in.s_addr;
	*port = htons((uint16_t)p);
	return 0;
}

/* Blocks until SIGTERM or SIGINT. */
static void wait_stop(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigwait(&set, &sig);
}

static void block_stop_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

static int fill(struct standin_lb *skel, const char *svc_s, char **backends, int n)
{
	struct lb_svc svc = { .n = (__u32)n };
	__u32 zero = 0;

	if (n < 1 || n > LB_BACKENDS_MAX || parse_v4(svc_s, &svc.addr, &svc.port)) {
		fprintf(stderr, "standin_lb: bad SVC or BACKEND list\n");
		return -EINVAL;
	}
	for (__u32 i = 0; i < (__u32)n; i++) {
		struct lb_backend be;

		if (parse_v4(backends[i], &be.addr, &be.port)) {
			fprintf(stderr, "standin_lb: bad BACKEND %s\n", backends[i]);
			return -EINVAL;
		}
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.lb_backends), &i, &be, BPF_ANY))
			return -errno;
	}
	return bpf_map_update_elem(bpf_map__fd(skel->maps.lb_svc), &zero, &svc, BPF_ANY) ? -errno : 0;
}

static int run(const char *cgroup, const char *pin_dir, const char *svc, char **backends, int n)
{
	struct standin_lb *skel = standin_lb__open_and_load();
	struct bpf_link *link = NULL;
	char path[4096];
	int cg = -1, err;

	if (!skel) {
		fprintf(stderr, "standin_lb: cannot load: %s\n", strerror(errno));
		return 1;
	}
	err = fill(skel, svc, backends, n);
	if (err)
		goto cleanup;
	snprintf(path, sizeof(path), "%s/lb_stats", pin_dir);
	err = bpf_map__pin(skel->maps.lb_stats, path);
	if (err) {
		fprintf(stderr, "standin_lb: cannot pin %s: %s\n", path, strerror(-err));
		goto cleanup;
	}
	cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	link = cg < 0 ? NULL : bpf_program__attach_cgroup(skel->progs.standin_lb4, cg);
	if (!link) {
		err = -errno;
		fprintf(stderr, "standin_lb: cannot attach to %s: %s\n", cgroup, strerror(-err));
		goto cleanup;
	}
	printf("ready\n");
	fflush(stdout);
	wait_stop();
cleanup:
	bpf_link__destroy(link);
	if (cg >= 0)
		close(cg);
	standin_lb__destroy(skel);
	return err ? 1 : 0;
}

static int block(const char *cgroup)
{
	struct standin_lb *skel = standin_lb__open_and_load();
	int cg = -1, err = 0;

	if (!skel) {
		fprintf(stderr, "standin_lb: cannot load: %s\n", strerror(errno));
		return 1;
	}
	cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0 || bpf_prog_attach(bpf_program__fd(skel->progs.standin_lb4), cg, BPF_CGROUP_INET4_CONNECT, 0)) {
		err = -errno;
		fprintf(stderr, "standin_lb: cannot attach (flags 0) to %s: %s\n", cgroup, strerror(-err));
		goto cleanup;
	}
	printf("ready\n");
	fflush(stdout);
	wait_stop();
	bpf_prog_detach2(bpf_program__fd(skel->progs.standin_lb4), cg, BPF_CGROUP_INET4_CONNECT);
cleanup:
	if (cg >= 0)
		close(cg);
	standin_lb__destroy(skel);
	return err ? 1 : 0;
}

static int count(const char *pin_dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/lb_stats", pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fprintf(stderr, "standin_lb: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (__u32 i = 0; i < 1 + LB_BACKENDS_MAX; i++) {
		__u64 v = 0;

		if (bpf_map_lookup_elem(fd, &i, &v)) {
			close(fd);
			return 1;
		}
		if (i == 0)
			printf("total %llu\n", (unsigned long long)v);
		else
			printf("backend %u %llu\n", i - 1, (unsigned long long)v);
	}
	close(fd);
	return 0;
}

static int progs(const char *cgroup, const char *type_s)
{
	enum bpf_attach_type type = strcmp(type_s, "connect6") == 0 ? BPF_CGROUP_INET6_CONNECT : BPF_CGROUP_INET4_CONNECT;
	__u32 ids[64], n = 64, flags = 0;
	int cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (cg < 0 || bpf_prog_query(cg, type, 0, &flags, ids, &n)) {
		fprintf(stderr, "standin_lb: cannot query %s: %s\n", cgroup, strerror(errno));
		if (cg >= 0)
			close(cg);
		return 1;
	}
	close(cg);
	for (__u32 i = 0; i < n; i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(ids[i]);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
			if (fd >= 0)
				close(fd);
			continue; /* detached since the query */
		}
		printf("%s\n", info.name);
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	block_stop_signals(); /* before any thread: sigwait takes them */
	if (argc >= 6 && strcmp(argv[1], "run") == 0)
		return run(argv[2], argv[3], argv[4], argv + 5, argc - 5);
	if (argc == 3 && strcmp(argv[1], "block") == 0)
		return block(argv[2]);
	if (argc == 3 && strcmp(argv[1], "count") == 0)
		return count(argv[2]);
	if (argc == 4 && strcmp(argv[1], "progs") == 0)
		return progs(argv[2], argv[3]);
	fprintf(stderr, "usage: standin_lb run CGROUP PIN_DIR SVC BACKEND... | block CGROUP | count PIN_DIR | progs CGROUP TYPE\n");
	return 1;
}
