/* SPDX-License-Identifier: Apache-2.0 */
/* steer_test.c - kernel tests of the steering datapath, driven through the
 * agent's own parts (loader, slots, table, services) with small listeners
 * standing in for gateways.  One test per run, chosen by name, inside a
 * fresh network namespace with lo up (tests/kernel/run.sh makes it): nothing
 * is pinned, so the links die with the process.
 *
 *   steered   (issue test 1) no listener on the Service address: connections
 *             land on the socket the table names; the kernel's bucket for
 *             each source is the one user space computes (same hash)
 *   ipv6      the same over IPv6
 *   pinned    (issue test 2) a pinned source goes to its slot although the
 *             table points elsewhere
 *   miss      (issue test 4) the slot's socket closed: SK_PASS, counted as a
 *             miss (a stale pin falls back to a table naming the same slot);
 *             an empty table is counted as none; a socket the kernel refuses
 *             as an assign error
 *   stalepin  a pin whose slot lost its socket (or names no slot) falls back
 *             to the table and reaches the live gateway: pin_stale and table
 *             counted, no miss; a pin whose socket the kernel refuses does
 *             not fall back (an assign error)
 *   sockops   connections counted per slot: steered, direct, peer socket,
 *             peer endpoint known only from rs_endpoints (and not the same
 *             endpoint in another netns); closes counted once; a slot given
 *             to another gateway starts from zero and its old connections
 *             are not counted (the rs_endpoints part only where the kernel
 *             has bpf_get_netns_cookie in sock_ops, >= 5.15, by uname)
 *   sockops_own  the same with the variant for older kernels forced: the
 *             peer endpoint known only from rs_endpoints is not counted
 *
 * Exit status: 0 passed, 1 failed (a program that does not load or attach
 * is a failure, with libbpf's message and the verifier's log on stderr),
 * 77 skipped (not root: the only reason to skip), 2 usage. */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent.h"
#include "agent_load.h"
#include "util/endpoint.h"

#define SERVICE4 "127.0.0.100:7000"
#define SERVICE6 "[::1]:7100"

struct test {
	struct agent_kernel k;
	const struct agent_maps *m;
	int failures;
};

static void fail(struct test *t, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(struct test *t, int line, const char *fmt, ...)
{
	va_list ap;

	t->failures++;
	fprintf(stderr, "  FAIL line %d: ", line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define EXPECT(t, cond, ...)                                 \
	do {                                                 \
		if (!(cond))                                 \
			fail((t), __LINE__, __VA_ARGS__);    \
	} while (0)

static int listen_on(const char *endpoint, bool v6only)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, v6 = v6only;

	if (rs_endpoint_parse(endpoint, &ss, &len))
		return -EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6, sizeof(v6));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* A blocking connect from source address src (any port) to dst. */
static int connect_from(const char *src, const char *dst)
{
	struct sockaddr_storage from, to;
	socklen_t from_len, to_len;
	int fd;

	if (rs_address_parse(src, &from, &from_len) || rs_endpoint_parse(dst, &to, &to_len))
		return -EINVAL;
	fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&from, from_len) < 0 || connect(fd, (struct sockaddr *)&to, to_len) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Which of the n listeners has the connection just made: its index, the
 * accepted socket in *accepted (or closed when accepted is NULL); -1 when
 * none within a second, -2 when more than one has one. */
static int landed(const int *listeners, size_t n, int *accepted)
{
	struct pollfd p[8];
	int got = -1, ready;

	for (size_t i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = listeners[i], .events = POLLIN };
	ready = poll(p, (nfds_t)n, 1000);
	if (ready <= 0)
		return -1;
	if (ready > 1)
		return -2;
	for (size_t i = 0; i < n; i++)
		if (p[i].revents & POLLIN)
			got = (int)i;
	if (got >= 0) {
		int fd = accept4(listeners[got], NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			return -1;
		if (accepted)
			*accepted = fd;
		else
			close(fd);
	}
	return got;
}

/* Connects src -> dst and returns the index of the listener it reached (or
 * -ECONNREFUSED etc.).  The connection is closed unless keep is given. */
static int dial(const int *listeners, size_t n, const char *src, const char *dst, int keep[2])
{
	int c = connect_from(src, dst), where;

	if (c < 0)
		return c;
	where = landed(listeners, n, keep ? &keep[1] : NULL);
	if (keep)
		keep[0] = c;
	else
		close(c);
	return where;
}

static void stats(struct test *t, uint64_t out[RS_STAT_COUNT])
{
	if (rs_map_percpu_sum(t->m->stats, RS_STAT_COUNT, out))
		fail(t, __LINE__, "cannot read rs_stats");
}

/* Lookups counted once in the sum, whatever the path (pin_stale is not
 * in it). */
static bool counted_once(const uint64_t st[RS_STAT_COUNT])
{
	return st[RS_STAT_LOOKUPS] ==
	       st[RS_STAT_PINNED] + st[RS_STAT_TABLE] + st[RS_STAT_MISS] + st[RS_STAT_ASSIGN_ERROR] + st[RS_STAT_NONE];
}

static int table_all(struct test *t, uint32_t slot)
{
	uint32_t w[RS_SLOTS_MAX] = { 0 }, buckets[RS_TABLE_SIZE];

	if (slot != RS_SLOT_NONE)
		w[slot] = 1;
	agent_table_build(w, buckets);
	return agent_table_swap(t->m, buckets);
}

static int pin(struct test *t, const char *src, uint32_t slot)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct rs_source_key k;
	struct rs_pin p = { .slot = slot };

	if (rs_address_parse(src, &ss, &len) || agent_source_key((struct sockaddr *)&ss, &k))
		return -EINVAL;
	return bpf_map_update_elem(t->m->pins, &k, &p, BPF_ANY) < 0 ? -errno : 0;
}

static void install(struct test *t, uint32_t slot, const char *id, int fd, bool listener)
{
	int err = agent_slot_install(t->m, slot, id, fd, listener);

	EXPECT(t, err == 0, "install %s in slot %u: %s", id, slot, strerror(-err));
}

static void services(struct test *t)
{
	static const char *const svc[] = { SERVICE4, SERVICE6 };
	int err = agent_services_set(t->m, svc, 2);

	EXPECT(t, err == 0, "services: %s", strerror(-err));
}

/* 1: no listener on the Service address; connections land where the table
 * says, bucket by bucket as user space computes it. */
static void test_steered(struct test *t)
{
	int gw[2] = { listen_on("127.0.1.1:7000", false), listen_on("127.0.1.2:7000", false) };
	uint32_t w[RS_SLOTS_MAX] = { 0 }, buckets[RS_TABLE_SIZE];
	uint64_t st[RS_STAT_COUNT];
	int hits[2] = { 0, 0 }, r;
	const int n_sources = 40;

	EXPECT(t, gw[0] >= 0 && gw[1] >= 0, "listeners");
	services(t);
	install(t, 0, "gw-a", gw[0], true);
	install(t, 1, "gw-b", gw[1], true);

	EXPECT(t, table_all(t, 0) == 0, "table swap");
	r = dial(gw, 2, "127.0.2.1", SERVICE4, NULL);
	EXPECT(t, r == 0, "table -> slot 0: landed on %d", r);
	EXPECT(t, table_all(t, 1) == 0, "table swap");
	r = dial(gw, 2, "127.0.2.1", SERVICE4, NULL);
	EXPECT(t, r == 1, "table -> slot 1: landed on %d", r);

	/* Half and half: each source lands on its bucket's slot. */
	w[0] = 1;
	w[1] = 1;
	agent_table_build(w, buckets);
	EXPECT(t, agent_table_swap(t->m, buckets) == 0, "table swap");
	for (int i = 1; i <= n_sources; i++) {
		char src[32];
		struct sockaddr_storage ss;
		socklen_t len;
		struct rs_source_key k;
		uint32_t want;

		snprintf(src, sizeof(src), "127.0.2.%d", i);
		rs_address_parse(src, &ss, &len);
		agent_source_key((struct sockaddr *)&ss, &k);
		want = buckets[rs_source_hash(&k) & RS_TABLE_MASK];
		r = dial(gw, 2, src, SERVICE4, NULL);
		EXPECT(t, r == (int)want, "source %s: landed on %d, its bucket says %u", src, r, want);
		if (r == 0 || r == 1)
			hits[r]++;
	}
	EXPECT(t, hits[0] > 0 && hits[1] > 0, "both gateways get sources (%d, %d)", hits[0], hits[1]);

	/* Not a Service: the program stays out of the way. */
	r = dial(gw, 2, "127.0.2.1", "127.0.1.1:7000", NULL);
	EXPECT(t, r == 0, "direct connection: landed on %d", r);
	r = connect_from("127.0.2.1", "127.0.0.100:7001");
	EXPECT(t, r == -ECONNREFUSED, "other port of the Service address: %d", r);
	if (r >= 0)
		close(r);

	stats(t, st);
	EXPECT(t, st[RS_STAT_LOOKUPS] == (uint64_t)n_sources + 2, "lookups %llu",
	       (unsigned long long)st[RS_STAT_LOOKUPS]);
	EXPECT(t, st[RS_STAT_TABLE] == st[RS_STAT_LOOKUPS], "table %llu", (unsigned long long)st[RS_STAT_TABLE]);
	close(gw[0]);
	close(gw[1]);
}

static void test_ipv6(struct test *t)
{
	/* Binding a specific IPv6 address makes a socket IPv6-only; the
	 * wildcard one is dual-stack. */
	int gw[2] = { listen_on("[::1]:7101", true), listen_on("[::]:7102", false) };
	uint64_t st[RS_STAT_COUNT];
	int r;

	EXPECT(t, gw[0] >= 0 && gw[1] >= 0, "listeners");
	services(t);
	install(t, 0, "gw-a", gw[0], true);
	install(t, 1, "gw-b", gw[1], true);
	EXPECT(t, table_all(t, 1) == 0, "table swap");
	r = dial(gw, 2, "::1", SERVICE6, NULL);
	EXPECT(t, r == 1, "IPv6 table -> slot 1: landed on %d", r);
	EXPECT(t, pin(t, "::1", 0) == 0, "pin");
	r = dial(gw, 2, "::1", SERVICE6, NULL);
	EXPECT(t, r == 0, "IPv6 pin -> slot 0: landed on %d", r);
	/* A dual-stack listener takes IPv4 Service connections. */
	r = dial(gw, 2, "127.0.2.1", SERVICE4, NULL);
	EXPECT(t, r == 1, "IPv4 to a dual-stack IPv6 listener: landed on %d", r);
	stats(t, st);
	EXPECT(t, st[RS_STAT_TABLE] == 2 && st[RS_STAT_PINNED] == 1, "table %llu pinned %llu",
	       (unsigned long long)st[RS_STAT_TABLE], (unsigned long long)st[RS_STAT_PINNED]);
	close(gw[0]);
	close(gw[1]);
}

/* 2: a pin wins over the table. */
static void test_pinned(struct test *t)
{
	int gw[2] = { listen_on("127.0.1.1:7000", false), listen_on("127.0.1.2:7000", false) };
	uint64_t st[RS_STAT_COUNT];
	int r;

	EXPECT(t, gw[0] >= 0 && gw[1] >= 0, "listeners");
	services(t);
	install(t, 0, "gw-a", gw[0], true);
	install(t, 1, "gw-b", gw[1], true);
	EXPECT(t, table_all(t, 0) == 0, "table swap");
	EXPECT(t, pin(t, "127.0.2.7", 1) == 0, "pin");
	for (int i = 0; i < 5; i++) {
		r = dial(gw, 2, "127.0.2.7", SERVICE4, NULL);
		EXPECT(t, r == 1, "pinned source: landed on %d", r);
	}
	r = dial(gw, 2, "127.0.2.8", SERVICE4, NULL);
	EXPECT(t, r == 0, "unpinned source: landed on %d", r);
	stats(t, st);
	EXPECT(t, st[RS_STAT_PINNED] == 5 && st[RS_STAT_TABLE] == 1 && st[RS_STAT_LOOKUPS] == 6,
	       "pinned %llu table %llu lookups %llu", (unsigned long long)st[RS_STAT_PINNED],
	       (unsigned long long)st[RS_STAT_TABLE], (unsigned long long)st[RS_STAT_LOOKUPS]);
	close(gw[0]);
	close(gw[1]);
}

/* 4: the socket behind the slot is gone: SK_PASS (no listener here, so the
 * connection is refused, as kube-proxy would take it elsewhere), a miss. */
static void test_miss(struct test *t)
{
	int gw[2] = { listen_on("127.0.1.1:7000", false), listen_on("[::1]:7101", true) };
	uint64_t st[RS_STAT_COUNT];
	int r;

	EXPECT(t, gw[0] >= 0 && gw[1] >= 0, "listeners");
	services(t);
	install(t, 0, "gw-a", gw[0], true);
	install(t, 1, "gw-v6only", gw[1], true);
	EXPECT(t, table_all(t, 0) == 0, "table swap");
	EXPECT(t, pin(t, "127.0.2.7", 0) == 0, "pin");
	r = dial(gw, 1, "127.0.2.7", SERVICE4, NULL);
	EXPECT(t, r == 0, "before the close: landed on %d", r);

	close(gw[0]); /* the gateway stops */
	EXPECT(t, rs_map_slot_socket(t->m->sockets, 0, NULL) == 0, "the kernel dropped the closed socket from rs_sockets");
	r = connect_from("127.0.2.7", SERVICE4);
	EXPECT(t, r == -ECONNREFUSED, "pinned to a closed socket: %d", r);
	r = connect_from("127.0.2.8", SERVICE4);
	EXPECT(t, r == -ECONNREFUSED, "table to a closed socket: %d", r);
	stats(t, st);
	EXPECT(t, st[RS_STAT_MISS] == 2, "misses %llu", (unsigned long long)st[RS_STAT_MISS]);
	EXPECT(t, st[RS_STAT_PIN_STALE] == 1, "stale pins %llu", (unsigned long long)st[RS_STAT_PIN_STALE]);

	EXPECT(t, table_all(t, RS_SLOT_NONE) == 0, "empty table");
	r = connect_from("127.0.2.9", SERVICE4);
	EXPECT(t, r == -ECONNREFUSED, "empty table: %d", r);
	EXPECT(t, table_all(t, 1) == 0, "table swap");
	r = connect_from("127.0.2.9", SERVICE4); /* IPv4 to an IPv6-only socket */
	EXPECT(t, r == -ECONNREFUSED, "refused by bpf_sk_assign: %d", r);
	stats(t, st);
	EXPECT(t, st[RS_STAT_NONE] == 1, "none %llu", (unsigned long long)st[RS_STAT_NONE]);
	EXPECT(t, st[RS_STAT_ASSIGN_ERROR] == 1, "assign errors %llu", (unsigned long long)st[RS_STAT_ASSIGN_ERROR]);
	EXPECT(t, counted_once(st), "every lookup counted once");
	close(gw[1]);
}

/* A stale pin: its gateway (slot 0) closed its listener before the agent's
 * next sync moved the pin.  The table (everything to slot 1) decides, as if
 * there were no pin, and the connection reaches the live gateway. */
static void test_stalepin(struct test *t)
{
	int gw[3] = { listen_on("127.0.1.1:7000", false), listen_on("127.0.1.2:7000", false),
		      listen_on("[::1]:7101", true) };
	uint64_t before[RS_STAT_COUNT], st[RS_STAT_COUNT];
	int r;

	EXPECT(t, gw[0] >= 0 && gw[1] >= 0 && gw[2] >= 0, "listeners");
	services(t);
	install(t, 0, "gw-a", gw[0], true);
	install(t, 1, "gw-b", gw[1], true);
	install(t, 2, "gw-v6only", gw[2], true);
	EXPECT(t, table_all(t, 1) == 0, "table swap");
	EXPECT(t, pin(t, "127.0.2.7", 0) == 0, "pin");
	r = dial(gw, 2, "127.0.2.7", SERVICE4, NULL);
	EXPECT(t, r == 0, "pinned, before the close: landed on %d", r);

	close(gw[0]); /* gw-a stops; the pin still names its slot */
	gw[0] = -1;
	EXPECT(t, rs_map_slot_socket(t->m->sockets, 0, NULL) == 0, "the kernel dropped the closed socket from rs_sockets");
	stats(t, before);
	r = dial(&gw[1], 1, "127.0.2.7", SERVICE4, NULL);
	EXPECT(t, r == 0, "stale pin: want gw-b's listener, got %d", r);
	stats(t, st);
	EXPECT(t, st[RS_STAT_PIN_STALE] == before[RS_STAT_PIN_STALE] + 1, "stale pins %llu -> %llu",
	       (unsigned long long)before[RS_STAT_PIN_STALE], (unsigned long long)st[RS_STAT_PIN_STALE]);
	EXPECT(t, st[RS_STAT_TABLE] == before[RS_STAT_TABLE] + 1, "table %llu -> %llu",
	       (unsigned long long)before[RS_STAT_TABLE], (unsigned long long)st[RS_STAT_TABLE]);
	EXPECT(t, st[RS_STAT_MISS] == before[RS_STAT_MISS], "misses %llu -> %llu",
	       (unsigned long long)before[RS_STAT_MISS], (unsigned long long)st[RS_STAT_MISS]);
	EXPECT(t, st[RS_STAT_PINNED] == before[RS_STAT_PINNED], "pinned %llu -> %llu",
	       (unsigned long long)before[RS_STAT_PINNED], (unsigned long long)st[RS_STAT_PINNED]);
	EXPECT(t, counted_once(st), "every lookup counted once in the sum");

	/* A pin that names no slot at all (never written by the agent; a
	 * corrupt value) is stale the same way. */
	EXPECT(t, pin(t, "127.0.2.8", RS_SLOTS_MAX + 3) == 0, "pin");
	r = dial(&gw[1], 1, "127.0.2.8", SERVICE4, NULL);
	EXPECT(t, r == 0, "pin out of range: want gw-b's listener, got %d", r);

	/* A live socket the kernel refuses (IPv4 to an IPv6-only listener) is
	 * not a stale pin: no fallback, an assign error, SK_PASS. */
	EXPECT(t, pin(t, "127.0.2.9", 2) == 0, "pin");
	r = connect_from("127.0.2.9", SERVICE4);
	EXPECT(t, r == -ECONNREFUSED, "pin refused by bpf_sk_assign: %d", r);
	if (r >= 0)
		close(r);
	stats(t, st);
	EXPECT(t, st[RS_STAT_PIN_STALE] == before[RS_STAT_PIN_STALE] + 2, "stale pins %llu",
	       (unsigned long long)st[RS_STAT_PIN_STALE]);
	EXPECT(t, st[RS_STAT_TABLE] == before[RS_STAT_TABLE] + 2, "table %llu", (unsigned long long)st[RS_STAT_TABLE]);
	EXPECT(t, st[RS_STAT_ASSIGN_ERROR] == before[RS_STAT_ASSIGN_ERROR] + 1, "assign errors %llu",
	       (unsigned long long)st[RS_STAT_ASSIGN_ERROR]);
	EXPECT(t, st[RS_STAT_MISS] == before[RS_STAT_MISS] && st[RS_STAT_NONE] == before[RS_STAT_NONE],
	       "misses %llu none %llu", (unsigned long long)st[RS_STAT_MISS], (unsigned long long)st[RS_STAT_NONE]);
	EXPECT(t, counted_once(st), "every lookup counted once in the sum");
	close(gw[1]);
	close(gw[2]);
}

static bool await_counts(struct test *t, uint32_t slot, uint64_t est, uint64_t closed)
{
	struct rs_conn_counts c = { 0 };

	for (int i = 0; i < 200; i++) {
		if (rs_map_slot_counts(t->m->conns, slot, &c) == 0 && c.established == est && c.closed == closed)
			return true;
		usleep(10000);
	}
	fail(t, __LINE__, "slot %u: established %llu closed %llu, want %llu %llu", slot,
	     (unsigned long long)c.established, (unsigned long long)c.closed, (unsigned long long)est,
	     (unsigned long long)closed);
	return false;
}

/* In a child in a fresh netns (lo up): listen on endpoint, connect to it,
 * accept, close; returns the child's status (0 when all worked). */
static int connect_elsewhere(const char *endpoint)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct ifreq ifr = { 0 };
		int s, l, c, a;

		if (unshare(CLONE_NEWNET) < 0)
			_exit(10);
		s = socket(AF_INET, SOCK_DGRAM, 0);
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
		if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
			_exit(11);
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			_exit(12);
		l = listen_on(endpoint, false);
		c = l < 0 ? -1 : connect_from("127.0.2.77", endpoint);
		a = c < 0 ? -1 : landed(&l, 1, NULL);
		_exit(a == 0 ? 0 : 13);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Whether the running kernel is at least major.minor (uname: what the
 * kernel says it is, not what the agent probed). */
static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

/* gw-b's peer endpoint, known from the store only (rs_endpoints): counted
 * here when by_endpoint, and never for the same endpoint in another netns
 * (the cgroup program sees every netns).  Without by_endpoint (the sockops
 * variant for kernels without bpf_get_netns_cookie in sock_ops) nothing
 * is counted for it. */
static void endpoint_path(struct test *t, uint64_t b_established, uint64_t b_closed, bool by_endpoint)
{
	uint64_t counted = by_endpoint ? 1 : 0;

	struct sockaddr_storage ss;
	socklen_t len;
	struct rs_endpoint_key k;
	struct rs_endpoint_slot e = { .slot = 1 };
	int peer = listen_on("127.0.1.2:7001", false), conn[2], r;

	rs_endpoint_parse("127.0.1.2:7001", &ss, &len);
	agent_endpoint_key((struct sockaddr *)&ss, &k);
	EXPECT(t, peer >= 0 && bpf_map_update_elem(t->m->endpoints, &k, &e, BPF_ANY) == 0, "endpoint");
	r = dial(&peer, 1, "127.0.2.6", "127.0.1.2:7001", conn);
	EXPECT(t, r == 0, "to gw-b's peer endpoint: %d", r);
	await_counts(t, 1, b_established + counted, b_closed);
	r = connect_elsewhere("127.0.1.2:7001");
	EXPECT(t, r == 0, "connection in another netns: child status %d", r);
	usleep(50000);
	await_counts(t, 1, b_established + counted, b_closed);
	close(conn[0]);
	close(conn[1]);
	await_counts(t, 1, b_established + counted, b_closed + counted);
	close(peer);
}

/* by_endpoint: what endpoint_path expects (see there). */
static void sockops_run(struct test *t, bool by_endpoint)
{
	int gw[3] = { listen_on("127.0.1.1:7000", false), listen_on("127.0.1.2:7000", false),
		      listen_on("127.0.1.1:7001", false) /* gw-a's peer endpoint */ };
	int conn[6][2], r;

	EXPECT(t, gw[0] >= 0 && gw[1] >= 0 && gw[2] >= 0, "listeners");
	if (t->m->conns < 0) {
		fail(t, __LINE__, "sockops not loaded");
		return;
	}
	services(t);
	install(t, 0, "gw-a", gw[0], true);
	install(t, 1, "gw-b", gw[1], true);
	install(t, 0, "gw-a", gw[2], false);
	EXPECT(t, table_all(t, 0) == 0, "table swap");
	EXPECT(t, pin(t, "127.0.2.9", 1) == 0, "pin");

	r = dial(gw, 3, "127.0.2.1", SERVICE4, conn[0]);
	EXPECT(t, r == 0, "steered 1: %d", r);
	r = dial(gw, 3, "127.0.2.2", SERVICE4, conn[1]);
	EXPECT(t, r == 0, "steered 2: %d", r);
	r = dial(gw, 3, "127.0.2.3", SERVICE4, conn[2]);
	EXPECT(t, r == 0, "steered 3: %d", r);
	r = dial(gw, 3, "127.0.2.4", "127.0.1.1:7000", conn[3]);
	EXPECT(t, r == 0, "direct: %d", r);
	r = dial(gw, 3, "127.0.2.5", "127.0.1.1:7001", conn[4]);
	EXPECT(t, r == 2, "peer endpoint: %d", r);
	r = dial(gw, 3, "127.0.2.9", SERVICE4, conn[5]);
	EXPECT(t, r == 1, "pinned to gw-b: %d", r);
	await_counts(t, 0, 5, 0);
	await_counts(t, 1, 1, 0);

	/* Closes are counted once, whichever side closes first. */
	close(conn[0][0]);
	close(conn[0][1]);
	close(conn[1][1]);
	close(conn[1][0]);
	await_counts(t, 0, 5, 2);

	/* Slot 0 goes to another gateway: fresh counts; gw-a's connections
	 * still open are no longer counted when they close. */
	{
		int other = listen_on("127.0.1.3:7000", false);

		install(t, 0, "gw-c", other, true);
		await_counts(t, 0, 0, 0);
		for (int i = 2; i < 5; i++) {
			close(conn[i][0]);
			close(conn[i][1]);
		}
		usleep(50000);
		await_counts(t, 0, 0, 0);
		close(other);
	}
	close(conn[5][0]);
	close(conn[5][1]);
	await_counts(t, 1, 1, 1);
	endpoint_path(t, 1, 1, by_endpoint);
	for (int i = 0; i < 3; i++)
		close(gw[i]);
}

/* The sockops variant this kernel takes: the one that counts unregistered
 * peer endpoints needs bpf_get_netns_cookie in sock_ops (Linux 5.15). */
static void test_sockops(struct test *t)
{
	sockops_run(t, kernel_at_least(5, 15));
}

/* The variant for older kernels, forced (--probe-missing
 * sockops_netns_cookie): registered listeners are counted as before, the
 * unregistered peer endpoint is not. */
static void test_sockops_own(struct test *t)
{
	sockops_run(t, false);
}

/* libbpf's warnings and notes on stderr, whole (they carry their own
 * "libbpf: " prefix): a rejected program's verifier log comes as one WARN
 * message (BEGIN PROG LOAD LOG ... END), and it is what says why a kernel
 * refused the program.  Debug chatter is left out. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(struct test *t);
	} tests[] = {
		{ "steered", test_steered }, { "ipv6", test_ipv6 },       { "pinned", test_pinned },
		{ "miss", test_miss },       { "stalepin", test_stalepin }, { "sockops", test_sockops },
		{ "sockops_own", test_sockops_own },
	};
	struct agent_load_options opt = { .no_pin = true };
	struct test t = { 0 };
	char why[256] = "";
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: steer_test NAME (steered, ipv6, pinned, miss, stalepin, sockops, sockops_own)\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(argv[1], tests[i].name) != 0)
			continue;
		/* Not being root is the one reason to skip.  As root, a kernel
		 * that refuses the programs (the verifier, an older kernel, a
		 * missing feature) is what these tests exist to catch. */
		if (geteuid() != 0) {
			printf("skipped: not root\n");
			return 77;
		}
		libbpf_set_print(libbpf_print);
		if (tests[i].run == test_sockops_own)
			opt.probe_missing = 1u << AGENT_FEAT_SOCKOPS_NETNS_COOKIE;
		err = agent_kernel_open(&opt, &t.k, why, sizeof(why));
		if (err) {
			fprintf(stderr, "steer_test: cannot load or attach the BPF programs: %s (%s)\n", why,
				strerror(-err));
			return 1;
		}
		t.m = &t.k.maps;
		tests[i].run(&t);
		agent_kernel_close(&t.k);
		return t.failures ? 1 : 0;
	}
	fprintf(stderr, "steer_test: no test named %s\n", argv[1]);
	return 2;
}
