/* SPDX-License-Identifier: Apache-2.0 */
/* test_agent_reg.c - gateway socket registration: the codec, the agent's
 * server and the gateway's client, end to end in one process tree.
 *
 * The whole suite runs in a forked child that made its own network
 * namespace (unshare(CLONE_NEWNET), lo brought up by ioctl), so the
 * loopback listeners it registers never touch the machine's namespace.
 * The server runs on a libevent loop in the test process, driven until a
 * forked client reports its outcome over a pipe; a client that must not
 * share the test's uid (setuid(65534)) or netns is a fork anyway.  Every
 * scenario checks that the server answered with the expected reason,
 * counted it once, and holds no fd afterwards (received fds included). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <event2/event.h>

#include "registration/agent_reg.h"

#define NOBODY 65534
#define SLOT_BASE 40
#define DRIVE_LIMIT_S 10

/* What the agent core saw through on_register. */
struct core {
	int calls;
	int fail;      /* negative errno to return, 0 to accept */
	char id[RS_ID_MAX + 1];
	enum rs_agent_role role;
	struct sockaddr_storage local;
	bool fd_listening; /* the fd it got was a listening socket at call time */
	bool local_matches; /* local equals getsockname() of that fd */
};

struct fx {
	char dir[64];
	char path[128];
	struct event_base *base;
	struct rs_agent_reg_server *srv;
	struct core core;
	int fds_before;
};

/* How a forked client behaves. */
struct client {
	bool raw;             /* send bytes and fds as given, instead of rs_agent_register */
	bool drop_privileges; /* setuid(NOBODY) before connecting */
	const char *path;     /* NULL: the fixture's */
	/* API client */
	const char *id;
	enum rs_agent_role role;
	int fd;
	/* raw client */
	const uint8_t *bytes;
	size_t len;
	const int *fds;
	size_t n_fds;
	bool shut_wr;         /* shutdown(SHUT_WR) after sending */
};

struct outcome {
	int rc;
	struct rs_agent_reg_reply reply;
};

/* --- helpers ------------------------------------------------------------ */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static int on_register(void *ctx, const char *gateway_id, enum rs_agent_role role, int fd,
		       const struct sockaddr_storage *local, uint32_t *slot_out)
{
	struct core *c = ctx;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int listening = 0;
	socklen_t ilen = sizeof(listening);

	/* Record only: an assert here would longjmp out of the event loop. */
	c->calls++;
	snprintf(c->id, sizeof(c->id), "%s", gateway_id);
	c->role = role;
	c->local = *local;
	c->fd_listening = getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) == 0 && listening == 1;
	memset(&ss, 0, sizeof(ss));
	c->local_matches = getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && memcmp(&ss, local, len) == 0;
	if (c->fail)
		return c->fail;
	*slot_out = SLOT_BASE + (uint32_t)c->calls;
	return 0;
}

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/rs-agent-reg-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/agent.sock", fx->dir);
	fx->base = event_base_new();
	assert_non_null(fx->base);
	*state = fx;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	rs_agent_reg_server_free(fx->srv);
	event_base_free(fx->base);
	nftw(fx->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

static void fx_start(struct fx *fx, unsigned max_conns, unsigned deadline_ms)
{
	struct rs_agent_reg_config cfg = {
		.socket_path = fx->path,
		.max_conns = max_conns,
		.deadline_ms = deadline_ms,
		.on_register = on_register,
		.ctx = &fx->core,
		.log = getenv("RS_TEST_VERBOSE") ? stderr : NULL,
	};

	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &fx->srv), 0);
	fx->fds_before = count_fds();
}

static void loop_break(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

static void guard_expired(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(bool *)arg = true;
}

/* Runs the server's loop until rfd is readable (bounded). */
static void drive_until(struct fx *fx, int rfd)
{
	struct timeval limit = { .tv_sec = DRIVE_LIMIT_S };
	bool expired = false;
	struct event *done = event_new(fx->base, rfd, EV_READ, loop_break, fx->base);
	struct event *guard = evtimer_new(fx->base, guard_expired, &expired);

	assert_non_null(done);
	assert_non_null(guard);
	assert_int_equal(event_add(done, NULL), 0);
	assert_int_equal(evtimer_add(guard, &limit), 0);
	while (!expired && event_pending(done, EV_READ, NULL))
		assert_true(event_base_loop(fx->base, EVLOOP_ONCE) >= 0);
	event_free(done);
	event_free(guard);
	assert_false(expired);
}

/* Runs the server's loop for about ms milliseconds. */
static void drive_for(struct fx *fx, int ms)
{
	struct timeval t = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	assert_int_equal(event_base_loopexit(fx->base, &t), 0);
	assert_true(event_base_dispatch(fx->base) >= 0);
}

static void sun_of(struct sockaddr_un *sun, const char *path)
{
	size_t n = strlen(path);

	assert_true(n < sizeof(sun->sun_path));
	memcpy(sun->sun_path, path, n + 1);
}

static void drop_privileges(void)
{
	if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
		_exit(3);
}

static int send_with_fds(int s, const uint8_t *bytes, size_t len, const int *fds, size_t n_fds)
{
	char control[CMSG_SPACE(sizeof(int) * 16)];
	struct iovec iov = { .iov_base = (void *)bytes, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds > 16)
		return -1;
	memset(control, 0, sizeof(control));
	if (n_fds) {
		struct cmsghdr *cm;

		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	}
	return sendmsg(s, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* The raw client: sends exactly what it is told, then reads one reply. */
static int raw_client(const char *path, const struct client *cl, struct rs_agent_reg_reply *reply)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = 0;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	sun_of(&sun, path);
	if (s < 0 || connect(s, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return -errno;
	if (cl->len && send_with_fds(s, cl->bytes, cl->len, cl->fds, cl->n_fds) < 0)
		return -errno;
	if (cl->shut_wr)
		shutdown(s, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		size_t need;
		ssize_t n;
		int rc = rs_agent_reg_decode_reply(buf, len, reply, &need);

		if (rc != -EAGAIN)
			return rc;
		if (poll(&p, 1, DRIVE_LIMIT_S * 1000) != 1)
			return -ETIMEDOUT;
		n = recv(s, buf + len, need - len, 0);
		if (n <= 0)
			return -EPROTO;
		len += (size_t)n;
	}
}

/* Forks the client, drives the server until it reports, and returns its
 * outcome.  The client's result travels over a pipe. */
static void run_client(struct fx *fx, const struct client *cl, struct outcome *out)
{
	const char *path = cl->path ? cl->path : fx->path;
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct outcome o;

		memset(&o, 0, sizeof(o));
		close(p[0]);
		if (cl->drop_privileges)
			drop_privileges();
		if (cl->raw)
			o.rc = raw_client(path, cl, &o.reply);
		else
			o.rc = rs_agent_register_timeout(path, cl->id, cl->role, cl->fd, 5000, &o.reply);
		_exit(write(p[1], &o, sizeof(o)) == (ssize_t)sizeof(o) ? 0 : 4);
	}
	close(p[1]);
	drive_until(fx, p[0]);
	assert_int_equal(read(p[0], out, sizeof(*out)), (ssize_t)sizeof(*out));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static uint64_t refused_total(const struct rs_agent_reg_stats *st)
{
	uint64_t n = 0;

	for (int r = 0; r < RS_AGENT_REG_REASON_COUNT; r++)
		n += st->refused[r];
	return n;
}

/* The server refused exactly once, for why, and holds no fd. */
static void assert_refused(struct fx *fx, const struct outcome *o, enum rs_agent_reg_reason why)
{
	struct rs_agent_reg_stats st;

	if (o->rc != 0 && o->rc != -EACCES)
		fail_msg("client rc %d (%s)", o->rc, strerror(-o->rc));
	assert_int_equal(o->reply.status, RS_AGENT_REG_STATUS_REFUSED);
	if (o->reply.reason != why)
		fail_msg("reason %s (%s), expected %s", rs_agent_reg_reason_name(o->reply.reason), o->reply.text,
			 rs_agent_reg_reason_name(why));
	assert_int_equal(o->reply.slot, 0);
	assert_true(strlen(o->reply.text) > 0);
	rs_agent_reg_server_stats(fx->srv, &st);
	assert_int_equal(st.refused[why], 1);
	assert_int_equal(refused_total(&st), 1);
	assert_int_equal(st.registered, 0);
	assert_int_equal(st.in_progress, 0);
	assert_int_equal(fx->core.calls, why == RS_AGENT_REG_STORE ? 1 : 0);
	assert_int_equal(count_fds(), fx->fds_before);
}

static void lo_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	assert_int_equal(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	assert_int_equal(ioctl(s, SIOCSIFFLAGS, &ifr), 0);
	close(s);
}

/* A socket on the loopback address of family, port 0, listening or not. */
static int inet_socket(int family, int type, bool listening)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int s = socket(family, type | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		len = sizeof(*in6);
	}
	assert_int_equal(bind(s, (struct sockaddr *)&ss, len), 0);
	if (listening)
		assert_int_equal(listen(s, 8), 0);
	return s;
}

static void send_fd(int over, int fd)
{
	uint8_t byte = 0;

	if (send_with_fds(over, &byte, 1, &fd, 1) < 0)
		_exit(5);
}

static int recv_fd(int over)
{
	char control[CMSG_SPACE(sizeof(int))];
	uint8_t byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *cm;
	int fd;

	assert_int_equal(recvmsg(over, &msg, MSG_CMSG_CLOEXEC), 1);
	cm = CMSG_FIRSTHDR(&msg);
	assert_non_null(cm);
	assert_int_equal(cm->cmsg_type, SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

/* A listening TCP socket made in a network namespace of its own. */
static int listener_in_other_netns(void)
{
	int sp[2], fd, status;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int s;

		close(sp[0]);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(2);
		lo_up();
		s = inet_socket(AF_INET, SOCK_STREAM, true);
		send_fd(sp[1], s);
		_exit(0);
	}
	close(sp[1]);
	fd = recv_fd(sp[0]);
	close(sp[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return fd;
}

static size_t request_bytes(const char *id, uint8_t role, uint8_t *buf, size_t cap)
{
	struct rs_agent_reg_request req = { .version = RS_AGENT_REG_VERSION, .role = role };
	size_t len;

	snprintf(req.gateway_id, sizeof(req.gateway_id), "%s", id);
	assert_int_equal(rs_agent_reg_encode_request(&req, buf, cap, &len), 0);
	return len;
}

/* Registers fd through the API client and expects a refusal for why. */
static void expect_api_refusal(struct fx *fx, int fd, enum rs_agent_reg_reason why)
{
	struct client cl = { .id = "gw-1", .role = RS_AGENT_ROLE_LISTEN, .fd = fd };
	struct outcome o;

	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, -EACCES);
	assert_refused(fx, &o, why);
}

/* Sends raw bytes (with fds) and expects a refusal for why. */
static void expect_raw_refusal(struct fx *fx, const uint8_t *bytes, size_t len, const int *fds, size_t n_fds,
			       bool shut_wr, enum rs_agent_reg_reason why)
{
	struct client cl = { .raw = true, .bytes = bytes, .len = len, .fds = fds, .n_fds = n_fds,
			     .shut_wr = shut_wr };
	struct outcome o;

	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, 0);
	assert_refused(fx, &o, why);
}

/* --- the codec ------------------------------------------------------------ */

static void test_codec_round_trip(void **state)
{
	struct rs_agent_reg_request req = { .version = RS_AGENT_REG_VERSION, .role = RS_AGENT_ROLE_PEER }, back;
	struct rs_agent_reg_reply rep = { .status = RS_AGENT_REG_STATUS_REFUSED, .reason = RS_AGENT_REG_NETNS },
				  rback;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len, size;
	char longest[RS_ID_MAX + 1];

	(void)state;
	memset(longest, 'a', RS_ID_MAX);
	longest[RS_ID_MAX] = '\0';
	snprintf(req.gateway_id, sizeof(req.gateway_id), "%s", longest);
	assert_int_equal(rs_agent_reg_encode_request(&req, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 10 + RS_ID_MAX);
	assert_int_equal(buf[4], RS_AGENT_REG_VERSION);
	/* Every prefix is incomplete and asks for more than it has, never more
	 * than the record. */
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(rs_agent_reg_decode_request(buf, i, &back, &size), -EAGAIN);
		assert_true(size > i && size <= len);
	}
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), 0);
	assert_int_equal(size, len);
	assert_string_equal(back.gateway_id, longest);
	assert_int_equal(back.role, RS_AGENT_ROLE_PEER);

	snprintf(rep.text, sizeof(rep.text), "%s", rs_agent_reg_reason_text(RS_AGENT_REG_NETNS));
	assert_int_equal(rs_agent_reg_encode_reply(&rep, buf, sizeof(buf), &len), 0);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(rs_agent_reg_decode_reply(buf, i, &rback, &size), -EAGAIN);
	assert_int_equal(rs_agent_reg_decode_reply(buf, len, &rback, &size), 0);
	assert_int_equal(rback.reason, RS_AGENT_REG_NETNS);
	assert_string_equal(rback.text, rep.text);

	/* Refused with no reason, ok with one, or control bytes: not encodable. */
	rep.reason = RS_AGENT_REG_OK;
	assert_int_equal(rs_agent_reg_encode_reply(&rep, buf, sizeof(buf), &len), -EINVAL);
	rep.status = RS_AGENT_REG_STATUS_OK;
	rep.reason = RS_AGENT_REG_UID;
	assert_int_equal(rs_agent_reg_encode_reply(&rep, buf, sizeof(buf), &len), -EINVAL);
	rep.reason = RS_AGENT_REG_OK;
	snprintf(rep.text, sizeof(rep.text), "line\nforged=1");
	assert_int_equal(rs_agent_reg_encode_reply(&rep, buf, sizeof(buf), &len), -EINVAL);
	/* Bad ids and roles are not encodable either. */
	snprintf(req.gateway_id, sizeof(req.gateway_id), "GW_1");
	assert_int_equal(rs_agent_reg_encode_request(&req, buf, sizeof(buf), &len), -EINVAL);
	snprintf(req.gateway_id, sizeof(req.gateway_id), "gw-1");
	req.role = 9;
	assert_int_equal(rs_agent_reg_encode_request(&req, buf, sizeof(buf), &len), -EINVAL);
	req.role = RS_AGENT_ROLE_LISTEN;
	assert_int_equal(rs_agent_reg_encode_request(&req, buf, 8, &len), -ENOSPC);
}

static void test_codec_rejects(void **state)
{
	struct rs_agent_reg_request back;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len, size;

	(void)state;
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[4] = 2; /* another version: judged before the length */
	buf[0] = 0xff;
	assert_int_equal(rs_agent_reg_decode_request(buf, 5, &back, &size), -EPROTONOSUPPORT);
	assert_int_equal(back.version, 2);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[2] = 0x01; /* length 0x1fc = 508: the largest allowed */
	buf[3] = 0xfc;
	assert_int_equal(rs_agent_reg_decode_request(buf, 5, &back, &size), -EAGAIN);
	assert_int_equal(size, RS_AGENT_REG_MSG_MAX);
	buf[3] = 0xfd; /* one above the bound */
	assert_int_equal(rs_agent_reg_decode_request(buf, 5, &back, &size), -EMSGSIZE);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[3] = 3; /* length below the fixed part */
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), -EMSGSIZE);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[5] = 2; /* a reply's type */
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), -EPROTO);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[7] = 1; /* reserved flags */
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), -EPROTO);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[9] = 3; /* id length disagrees with the record length */
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), -EPROTO);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[11] = '\0'; /* NUL inside the id */
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), -EINVAL);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[10] = 'G';
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), -EINVAL);
	len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	buf[6] = 0;
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &back, &size), -ERANGE);
	assert_string_equal(rs_agent_reg_reason_name(RS_AGENT_REG_NOT_LISTENING), "not_listening");
	assert_string_equal(rs_agent_reg_reason_name(999), "unknown");
	assert_string_equal(rs_agent_role_name(RS_AGENT_ROLE_LISTEN), "listen");
	for (unsigned r = 0; r < RS_AGENT_REG_REASON_COUNT; r++) {
		assert_string_not_equal(rs_agent_reg_reason_name(r), "unknown");
		assert_true(strlen(rs_agent_reg_reason_text(r)) <= RS_AGENT_REG_TEXT_MAX);
	}
}

/* --- registrations that pass ------------------------------------------- */

static void expect_ok(struct fx *fx, int family, enum rs_agent_role role)
{
	int lst = inet_socket(family, SOCK_STREAM, true);
	struct client cl = { .id = "gw-0.ringsteer", .role = role, .fd = lst };
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	struct rs_agent_reg_stats st;
	struct outcome o;

	fx_start(fx, 0, 0);
	fx->fds_before = count_fds();
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.reply.status, RS_AGENT_REG_STATUS_OK);
	assert_int_equal(o.reply.reason, RS_AGENT_REG_OK);
	assert_int_equal(o.reply.slot, SLOT_BASE + 1);
	assert_int_equal(fx->core.calls, 1);
	assert_string_equal(fx->core.id, "gw-0.ringsteer");
	assert_int_equal(fx->core.role, role);
	assert_true(fx->core.fd_listening);
	assert_true(fx->core.local_matches);
	memset(&bound, 0, sizeof(bound));
	assert_int_equal(getsockname(lst, (struct sockaddr *)&bound, &blen), 0);
	assert_int_equal(memcmp(&bound, &fx->core.local, blen), 0);
	rs_agent_reg_server_stats(fx->srv, &st);
	assert_int_equal(st.registered, 1);
	assert_int_equal(refused_total(&st), 0);
	/* The server closed the fd it received; the caller's stays open. */
	assert_int_equal(count_fds(), fx->fds_before);
	assert_int_equal(fcntl(lst, F_GETFD), FD_CLOEXEC);
	close(lst);
}

static void test_ok_ipv4(void **state)
{
	expect_ok(*state, AF_INET, RS_AGENT_ROLE_LISTEN);
}

static void test_ok_ipv6(void **state)
{
	expect_ok(*state, AF_INET6, RS_AGENT_ROLE_PEER);
}

static void test_client_wrapper(void **state)
{
	struct fx *fx = *state;
	int lst = inet_socket(AF_INET, SOCK_STREAM, false);
	char reason[256];
	int p[2], status;
	pid_t pid;

	/* rs_agent_register's reason: "<name>: <text>" on a refusal. */
	fx_start(fx, 0, 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint32_t slot = 0;
		int rc = rs_agent_register(fx->path, "gw-1", RS_AGENT_ROLE_LISTEN, lst, &slot, reason,
					   sizeof(reason));

		_exit(rc == -EACCES && write(p[1], reason, sizeof(reason)) == (ssize_t)sizeof(reason) ? 0 : 1);
	}
	close(p[1]);
	drive_until(fx, p[0]);
	assert_int_equal(read(p[0], reason, sizeof(reason)), (ssize_t)sizeof(reason));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_string_equal(reason, "not_listening: socket is not listening");
	close(lst);
}

/* --- refusals for the socket -------------------------------------------- */

static void test_refuse_not_listening(void **state)
{
	struct fx *fx = *state;
	int s = inet_socket(AF_INET, SOCK_STREAM, false);

	fx_start(fx, 0, 0);
	fx->fds_before = count_fds();
	expect_api_refusal(fx, s, RS_AGENT_REG_NOT_LISTENING);
	close(s);
}

static void test_refuse_udp(void **state)
{
	struct fx *fx = *state;
	int s = inet_socket(AF_INET6, SOCK_DGRAM, false);

	fx_start(fx, 0, 0);
	fx->fds_before = count_fds();
	expect_api_refusal(fx, s, RS_AGENT_REG_NOT_TCP);
	close(s);
}

static void test_refuse_other_netns(void **state)
{
	struct fx *fx = *state;
	int s = listener_in_other_netns();

	fx_start(fx, 0, 0);
	fx->fds_before = count_fds();
	expect_api_refusal(fx, s, RS_AGENT_REG_NETNS);
	close(s);
}

static void test_refuse_unix_socket(void **state)
{
	struct fx *fx = *state;
	int sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	fx_start(fx, 0, 0);
	fx->fds_before = count_fds();
	expect_api_refusal(fx, sp[0], RS_AGENT_REG_FAMILY);
	close(sp[0]);
	close(sp[1]);
}

static void test_refuse_not_socket(void **state)
{
	struct fx *fx = *state;
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fx_start(fx, 0, 0);
	fx->fds_before = count_fds();
	expect_api_refusal(fx, p[0], RS_AGENT_REG_NOT_SOCKET);
	close(p[0]);
	close(p[1]);
}

static void test_refuse_store(void **state)
{
	struct fx *fx = *state;
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct client cl = { .id = "gw-1", .role = RS_AGENT_ROLE_LISTEN, .fd = s };
	struct outcome o;

	fx->core.fail = -ENOSPC;
	fx_start(fx, 0, 0);
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, -EACCES);
	assert_refused(fx, &o, RS_AGENT_REG_STORE);
	assert_non_null(strstr(o.reply.text, "agent: cannot store the socket"));
	close(s);
}

/* --- refusals for the caller ------------------------------------------- */

static void test_refuse_untrusted_uid(void **state)
{
	struct fx *fx = *state;
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct client cl = { .id = "gw-1", .role = RS_AGENT_ROLE_LISTEN, .fd = s, .drop_privileges = true };
	struct outcome o;

	/* Reachable by anyone, so that only SO_PEERCRED stands in the way. */
	assert_int_equal(chmod(fx->dir, 0777), 0);
	fx_start(fx, 0, 0);
	assert_int_equal(chmod(fx->path, 0666), 0);
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, -EACCES);
	assert_refused(fx, &o, RS_AGENT_REG_UID);
	assert_non_null(strstr(o.reply.text, "65534"));
	close(s);
}

static void test_socket_file_mode_keeps_others_out(void **state)
{
	struct fx *fx = *state;
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct client cl = { .id = "gw-1", .role = RS_AGENT_ROLE_LISTEN, .fd = s, .drop_privileges = true };
	struct rs_agent_reg_stats st;
	struct outcome o;

	/* The directory lets anyone through, the 0660 socket file does not:
	 * the client says -EPERM (not a refusal: the agent never heard it). */
	assert_int_equal(chmod(fx->dir, 0777), 0);
	fx_start(fx, 0, 0);
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, -EPERM);
	rs_agent_reg_server_stats(fx->srv, &st);
	assert_int_equal(refused_total(&st) + st.registered + st.aborted, 0);
	close(s);
}

static void test_allow_list_admits_listed_uid(void **state)
{
	struct fx *fx = *state;
	uid_t allowed[] = { NOBODY };
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct client cl = { .id = "gw-1", .role = RS_AGENT_ROLE_LISTEN, .fd = s, .drop_privileges = true };
	struct rs_agent_reg_config cfg = {
		.socket_path = fx->path, .allow_uids = allowed, .n_allow_uids = 1,
		.on_register = on_register, .ctx = &fx->core,
	};
	struct outcome o;

	assert_int_equal(chmod(fx->dir, 0777), 0);
	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &fx->srv), 0);
	assert_int_equal(chmod(fx->path, 0666), 0);
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(fx->core.calls, 1);
	/* The list replaces the default: the agent's own uid (root here) is
	 * no longer allowed, and root gets no exception. */
	cl.drop_privileges = false;
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, -EACCES);
	assert_int_equal(o.reply.reason, RS_AGENT_REG_UID);
	close(s);
}

/* --- refusals for the message -------------------------------------------- */

static void test_refuse_no_fd(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));

	fx_start(fx, 0, 0);
	expect_raw_refusal(fx, buf, len, NULL, 0, false, RS_AGENT_REG_NO_FD);
}

static void test_refuse_two_fds(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	int fds[2] = { inet_socket(AF_INET, SOCK_STREAM, true), inet_socket(AF_INET, SOCK_STREAM, true) };

	fx_start(fx, 0, 0);
	expect_raw_refusal(fx, buf, len, fds, 2, false, RS_AGENT_REG_TOO_MANY_FDS);
	close(fds[0]);
	close(fds[1]);
}

static void test_refuse_fds_beyond_room(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	int fds[12];

	/* More than the server's control buffer holds: MSG_CTRUNC, and the
	 * kernel closes what did not fit; nothing may stay open. */
	for (size_t i = 0; i < 12; i++)
		fds[i] = inet_socket(AF_INET, SOCK_STREAM, true);
	fx_start(fx, 0, 0);
	expect_raw_refusal(fx, buf, len, fds, 12, false, RS_AGENT_REG_TOO_MANY_FDS);
	for (size_t i = 0; i < 12; i++)
		close(fds[i]);
}

static void test_refuse_fds_in_two_sends(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct outcome o;
	int c, status, p[2];
	pid_t pid;

	/* One fd with the first bytes, one with the rest: counted across
	 * reads, two in all. */
	fx_start(fx, 0, 0);
	sun_of(&sun, fx->path);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint8_t rbuf[RS_AGENT_REG_MSG_MAX];
		size_t need, got = 0;

		memset(&o, 0, sizeof(o));
		c = socket(AF_UNIX, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
		    send_with_fds(c, buf, 6, &s, 1) < 0)
			_exit(6);
		usleep(50 * 1000); /* let the server read the first part alone */
		if (send_with_fds(c, buf + 6, len - 6, &s, 1) < 0)
			_exit(7);
		while ((o.rc = rs_agent_reg_decode_reply(rbuf, got, &o.reply, &need)) == -EAGAIN) {
			ssize_t n = recv(c, rbuf + got, need - got, 0);

			if (n <= 0)
				_exit(8);
			got += (size_t)n;
		}
		_exit(write(p[1], &o, sizeof(o)) == (ssize_t)sizeof(o) ? 0 : 9);
	}
	close(p[1]);
	drive_until(fx, p[0]);
	assert_int_equal(read(p[0], &o, sizeof(o)), (ssize_t)sizeof(o));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_refused(fx, &o, RS_AGENT_REG_TOO_MANY_FDS);
	close(s);
}

static void test_refuse_malformed(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	int s = inet_socket(AF_INET, SOCK_STREAM, true);

	buf[5] = 7; /* no such type */
	fx_start(fx, 0, 0);
	expect_raw_refusal(fx, buf, len, &s, 1, false, RS_AGENT_REG_MALFORMED);
	close(s);
}

static void test_refuse_oversized(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[2048];

	/* A length field past the bound is refused from its first five bytes;
	 * the rest is never read. */
	memset(buf, 'a', sizeof(buf));
	buf[0] = 0;
	buf[1] = 0;
	buf[2] = 0x07;
	buf[3] = 0xfc;
	buf[4] = RS_AGENT_REG_VERSION;
	fx_start(fx, 0, 0);
	expect_raw_refusal(fx, buf, sizeof(buf), NULL, 0, false, RS_AGENT_REG_MALFORMED);
}

static void test_refuse_truncated(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	int s = inet_socket(AF_INET, SOCK_STREAM, true);

	fx_start(fx, 0, 0);
	expect_raw_refusal(fx, buf, len - 2, &s, 1, true, RS_AGENT_REG_MALFORMED);
	close(s);
}

static void test_refuse_bad_id(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	int s = inet_socket(AF_INET, SOCK_STREAM, true);

	buf[10] = 'G'; /* "Gw-1": upper case is not in [a-z0-9.-] */
	fx_start(fx, 0, 0);
	expect_raw_refusal(fx, buf, len, &s, 1, false, RS_AGENT_REG_BAD_ID);
	close(s);
}

static void test_refuse_bad_role_and_version(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct client cl = { .raw = true, .bytes = buf, .len = len, .fds = &s, .n_fds = 1 };
	struct rs_agent_reg_stats st;
	struct outcome o;

	fx_start(fx, 0, 0);
	buf[6] = 3;
	run_client(fx, &cl, &o);
	assert_int_equal(o.reply.reason, RS_AGENT_REG_BAD_ROLE);
	buf[6] = RS_AGENT_ROLE_LISTEN;
	buf[4] = 2;
	run_client(fx, &cl, &o);
	assert_int_equal(o.reply.reason, RS_AGENT_REG_BAD_VERSION);
	rs_agent_reg_server_stats(fx->srv, &st);
	assert_int_equal(st.refused[RS_AGENT_REG_BAD_ROLE], 1);
	assert_int_equal(st.refused[RS_AGENT_REG_BAD_VERSION], 1);
	assert_int_equal(count_fds(), fx->fds_before);
	close(s);
}

/* --- bounds: deadline, concurrency -------------------------------------- */

static void test_refuse_after_deadline(void **state)
{
	struct fx *fx = *state;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = request_bytes("gw-1", RS_AGENT_ROLE_LISTEN, buf, sizeof(buf));

	(void)len;
	fx_start(fx, 0, 100);
	expect_raw_refusal(fx, buf, 3, NULL, 0, false, RS_AGENT_REG_TIMEOUT);
}

static void test_refuse_busy_and_abort(void **state)
{
	struct fx *fx = *state;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int held = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct rs_agent_reg_stats st;
	struct client cl = { .id = "gw-1", .role = RS_AGENT_ROLE_LISTEN, .fd = s };
	struct outcome o;

	fx_start(fx, 1, 5000);
	sun_of(&sun, fx->path);
	assert_int_equal(connect(held, (struct sockaddr *)&sun, sizeof(sun)), 0);
	drive_for(fx, 50);
	rs_agent_reg_server_stats(fx->srv, &st);
	assert_int_equal(st.in_progress, 1);
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, -EACCES);
	assert_int_equal(o.reply.reason, RS_AGENT_REG_BUSY);
	/* Hanging up without a byte is an abort, not a refusal. */
	close(held);
	drive_for(fx, 50);
	rs_agent_reg_server_stats(fx->srv, &st);
	assert_int_equal(st.in_progress, 0);
	assert_int_equal(st.aborted, 1);
	assert_int_equal(st.refused[RS_AGENT_REG_BUSY], 1);
	assert_int_equal(refused_total(&st), 1);
	/* With the slot free again, the same caller registers. */
	run_client(fx, &cl, &o);
	assert_int_equal(o.rc, 0);
	close(s);
}

/* --- the socket file and the client without an agent --------------------- */

static void test_server_socket_file(void **state)
{
	struct fx *fx = *state;
	struct rs_agent_reg_config cfg = { .on_register = on_register, .ctx = &fx->core };
	struct rs_agent_reg_server *other = NULL;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char sub[160], path[200];
	struct stat st;
	int fd;

	/* A missing directory is made 0750; the socket file is 0660. */
	snprintf(sub, sizeof(sub), "%s/run", fx->dir);
	snprintf(path, sizeof(path), "%s/agent.sock", sub);
	cfg.socket_path = path;
	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &fx->srv), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	/* A live agent on the path is left alone. */
	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &other), -EADDRINUSE);
	/* Freeing unlinks the file it bound. */
	rs_agent_reg_server_free(fx->srv);
	fx->srv = NULL;
	assert_int_equal(lstat(path, &st), -1);

	/* A stale socket file (nobody listening) is replaced. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sun_of(&sun, path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &fx->srv), 0);
	rs_agent_reg_server_free(fx->srv);
	fx->srv = NULL;

	/* Something else at the path is not ours to remove. */
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &fx->srv), -EEXIST);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));

	/* Bad configuration. */
	cfg.on_register = NULL;
	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &other), -EINVAL);
	cfg.on_register = on_register;
	cfg.n_allow_uids = RS_AGENT_REG_UIDS_MAX + 1;
	assert_int_equal(rs_agent_reg_server_new(fx->base, &cfg, &other), -EINVAL);
}

/* A listener at the socket path run by a uid the gateway does not trust
 * (not 0, not its own, not --agent-uid: a local process that took the
 * path): it is sent no listener, only the gateway's refusal here. */
static pid_t untrusted_agent(const char *dir, const char *path, int *ready)
{
	int p[2];
	pid_t pid;

	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		char buf[64], ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
				      .msg_controllen = sizeof(ctl) };
		int fd, c;
		ssize_t n;

		close(p[0]);
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(2);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sun_of(&sun, path);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || listen(fd, 4))
			_exit(3);
		if (write(p[1], "r", 1) != 1)
			_exit(4);
		c = accept(fd, NULL, NULL);
		if (c < 0)
			_exit(5);
		n = recvmsg(c, &msg, 0); /* the gateway's request, or its close */
		_exit(n > 0 ? 1 : 0);
	}
	close(p[1]);
	*ready = p[0];
	return pid;
}

static void test_client_checks_agent_uid(void **state)
{
	struct fx *fx = *state;
	struct rs_agent_reg_reply reply;
	int s = inet_socket(AF_INET, SOCK_STREAM, true), ready, status;
	char byte;
	pid_t pid = untrusted_agent(fx->dir, fx->path, &ready);

	assert_int_equal(read(ready, &byte, 1), 1);
	close(ready);
	assert_int_equal(rs_agent_register_timeout(fx->path, "gw-1", RS_AGENT_ROLE_LISTEN, s, 2000, &reply), -EPERM);
	assert_non_null(strstr(reply.text, "65534"));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* it received nothing */
	unlink(fx->path);
	/* Named as the agent's uid (--agent-uid): it is sent the request. */
	pid = untrusted_agent(fx->dir, fx->path, &ready);
	assert_int_equal(read(ready, &byte, 1), 1);
	close(ready);
	assert_int_equal(rs_agent_register_as(fx->path, "gw-1", RS_AGENT_ROLE_LISTEN, s, NOBODY, 2000, &reply),
			 -EPROTO); /* it closes without a reply */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	unlink(fx->path);
	close(s);
}

static void test_client_without_agent(void **state)
{
	struct fx *fx = *state;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	char reason[256];
	uint32_t slot = 7;
	int fd;

	/* No socket file. */
	assert_int_equal(rs_agent_register(fx->path, "gw-1", RS_AGENT_ROLE_LISTEN, s, &slot, reason,
					   sizeof(reason)), -ENOENT);
	assert_int_equal(slot, 7);
	assert_non_null(strstr(reason, "no agent on"));
	/* A stale socket file: nobody listening. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sun_of(&sun, fx->path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(rs_agent_register(fx->path, "gw-1", RS_AGENT_ROLE_LISTEN, s, &slot, reason,
					   sizeof(reason)), -ECONNREFUSED);
	unlink(fx->path);
	/* Bad arguments never reach the socket. */
	assert_int_equal(rs_agent_register(fx->path, "Bad_Id", RS_AGENT_ROLE_LISTEN, s, NULL, NULL, 0), -EINVAL);
	assert_int_equal(rs_agent_register(fx->path, "gw-1", (enum rs_agent_role)9, s, NULL, NULL, 0), -EINVAL);
	assert_int_equal(rs_agent_register(fx->path, "gw-1", RS_AGENT_ROLE_LISTEN, -1, NULL, NULL, 0), -EINVAL);
	close(s);
}

static void test_client_times_out(void **state)
{
	struct fx *fx = *state;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int mute = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int s = inet_socket(AF_INET, SOCK_STREAM, true);
	struct rs_agent_reg_reply reply;

	/* Something listens but never answers: the client gives up in time. */
	sun_of(&sun, fx->path);
	assert_int_equal(bind(mute, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(mute, 4), 0);
	assert_int_equal(rs_agent_register_timeout(fx->path, "gw-1", RS_AGENT_ROLE_LISTEN, s, 150, &reply),
			 -ETIMEDOUT);
	close(mute);
	close(s);
}

/* The member request: round trip, and every malformed variant refused with
 * its own error; a gateway request is not a member request. */
static void test_member_codec(void **state)
{
	struct rs_agent_member_request req = { .version = RS_AGENT_REG_VERSION }, out;
	struct rs_agent_reg_request greq = { .version = RS_AGENT_REG_VERSION, .role = RS_AGENT_ROLE_LISTEN };
	uint8_t buf[RS_AGENT_REG_MSG_MAX], bad[RS_AGENT_REG_MSG_MAX];
	size_t len, size;

	(void)state;
	snprintf(req.member_id, sizeof(req.member_id), "sup-7.node-2");
	assert_int_equal(rs_agent_member_encode_request(&req, buf, sizeof(buf), &len), 0);
	assert_int_equal(rs_agent_member_decode_request(buf, len, &out, &size), 0);
	assert_int_equal(size, len);
	assert_string_equal(out.member_id, "sup-7.node-2");
	/* every prefix is incomplete, and says how much it needs */
	for (size_t n = 0; n < len; n++) {
		assert_int_equal(rs_agent_member_decode_request(buf, n, &out, &size), -EAGAIN);
		assert_true(size > n && size <= len);
	}
	memcpy(bad, buf, len);
	bad[6] = 1; /* flags */
	assert_int_equal(rs_agent_member_decode_request(bad, len, &out, &size), -EPROTO);
	memcpy(bad, buf, len);
	bad[4] = 9; /* version */
	assert_int_equal(rs_agent_member_decode_request(bad, len, &out, &size), -EPROTONOSUPPORT);
	memcpy(bad, buf, len);
	bad[10] = 'A'; /* not [a-z0-9.-] */
	assert_int_equal(rs_agent_member_decode_request(bad, len, &out, &size), -EINVAL);
	memcpy(bad, buf, len);
	bad[2] = 0x10; /* length beyond the bound (4096 + ...) */
	assert_int_equal(rs_agent_member_decode_request(bad, len, &out, &size), -EMSGSIZE);
	snprintf(req.member_id, sizeof(req.member_id), "Bad Id");
	assert_int_equal(rs_agent_member_encode_request(&req, buf, sizeof(buf), &len), -EINVAL);
	snprintf(greq.gateway_id, sizeof(greq.gateway_id), "gw-1");
	assert_int_equal(rs_agent_reg_encode_request(&greq, buf, sizeof(buf), &len), 0);
	assert_int_equal(rs_agent_member_decode_request(buf, len, &out, &size), -EPROTO);
	assert_int_equal(rs_agent_reg_decode_request(buf, len, &greq, &size), 0);
	assert_string_equal(rs_agent_reg_reason_name(RS_AGENT_REG_KEY_IN_USE), "key_in_use");
}

/* No agent: the member client says so at once, never waiting. */
static void test_member_client_no_agent(void **state)
{
	int link = 7;

	(void)state;
	assert_int_equal(rs_agent_member_register("/nonexistent/ringsteer/member.sock", "sup-1", 1000, &link, NULL),
			 -ENOENT);
	assert_int_equal(link, -1);
	assert_int_equal(rs_agent_member_register("/nonexistent/x.sock", "Bad", 1000, &link, NULL), -EINVAL);
}

static int run_suite(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codec_round_trip),
		cmocka_unit_test(test_codec_rejects),
		cmocka_unit_test(test_member_codec),
		cmocka_unit_test(test_member_client_no_agent),
		cmocka_unit_test_setup_teardown(test_ok_ipv4, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ok_ipv6, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_client_wrapper, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_not_listening, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_udp, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_other_netns, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_unix_socket, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_not_socket, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_store, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_untrusted_uid, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_socket_file_mode_keeps_others_out, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_allow_list_admits_listed_uid, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_no_fd, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_two_fds, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_fds_beyond_room, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_fds_in_two_sends, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_malformed, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_oversized, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_truncated, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_bad_id, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_bad_role_and_version, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_after_deadline, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_refuse_busy_and_abort, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_server_socket_file, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_client_without_agent, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_client_checks_agent_uid, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_client_times_out, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests_name("agent_reg", tests, NULL, NULL);
}

int main(void)
{
	int status;
	pid_t pid;

	/* Network namespaces and setuid need root; elsewhere say so and pass,
	 * as the acceptance tests skip. */
	if (geteuid() != 0) {
		printf("# agent_reg: skipped (needs root for a network namespace)\n");
		return 0;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) < 0) {
			printf("# agent_reg: skipped (unshare(CLONE_NEWNET): %s)\n", strerror(errno));
			_exit(0);
		}
		lo_up();
		exit(run_suite());
	}
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
