/* SPDX-License-Identifier: Apache-2.0 */
/* member_key.c - who a registering supervisor is, as the kernel programs will
 * see it: its netns cookie when it lives in a netns of its own (a pod), else
 * its cgroup v2 id (a hostNetwork process).  Derived from the caller's pid
 * (SO_PEERCRED, set by the kernel), never from what it sent, so a caller can
 * only ever key its own connects.
 *
 * Pid reuse: the caller is held by a pidfd from the moment it is accepted
 * (SO_PEERPIDFD where the kernel has it, Linux >= 6.5, which names the very
 * process that connected; else pidfd_open of the SO_PEERCRED pid, which can
 * only be fooled if the caller exited and its pid was reused between its
 * connect and the agent's accept).  After /proc/PID is read, the pidfd must
 * still name a live process, or the key might be a stranger's.
 *
 * The netns cookie needs a socket in the caller's netns: a short-lived
 * thread enters it (setns affects only that thread) and asks
 * SO_NETNS_COOKIE, so the agent's own thread never leaves its netns.  A
 * kernel without SO_NETNS_COOKIE (< 5.14; connect4/6 have
 * bpf_get_netns_cookie from 5.7 but nothing tells the agent the number)
 * keys a pod's supervisor by its cgroup id instead, as a hostNetwork one:
 * every Kubernetes container has a cgroup of its own. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_run.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14 */
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

int agent_member_pidfd(int conn_fd, pid_t pid, bool peerpidfd)
{
	socklen_t len = sizeof(int);
	int fd = -1;

	if (peerpidfd && getsockopt(conn_fd, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && len == sizeof(int) &&
	    fd >= 0)
		return fd;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	return fd >= 0 ? fd : -errno;
}

struct cookie_job {
	int ns_fd;
	uint64_t cookie;
	int err;
};

static void *cookie_thread(void *arg)
{
	struct cookie_job *j = arg;
	socklen_t len = sizeof(j->cookie);
	int s;

	if (setns(j->ns_fd, CLONE_NEWNET) < 0) {
		j->err = -errno;
		return NULL;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		j->err = -errno;
		return NULL;
	}
	if (getsockopt(s, SOL_SOCKET, SO_NETNS_COOKIE, &j->cookie, &len) < 0)
		j->err = -errno;
	close(s);
	return NULL;
}

/* The cookie of the netns ns_fd names. */
static int netns_cookie(int ns_fd, uint64_t *cookie)
{
	struct cookie_job j = { .ns_fd = ns_fd };
	pthread_t t;
	int rc = pthread_create(&t, NULL, cookie_thread, &j);

	if (rc)
		return -rc;
	pthread_join(t, NULL);
	*cookie = j.cookie;
	return j.err;
}

/* The caller's cgroup v2 path ("/..." below the hierarchy's root). */
static int cgroup_path(pid_t pid, char *out, size_t cap)
{
	char path[64], line[4096];
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (strncmp(line, "0::", 3) != 0)
			continue;
		while (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		err = snprintf(out, cap, "%s", line + 3) < (int)cap ? 0 : -ENAMETOOLONG;
		break;
	}
	fclose(f);
	return err;
}

static bool under(const char *dir, const char *parent)
{
	size_t n = strlen(parent);

	while (n > 1 && parent[n - 1] == '/')
		n--;
	return strncmp(dir, parent, n) == 0 && (dir[n] == '\0' || dir[n] == '/');
}

static enum rs_agent_reg_reason refuse(struct agent_member_verdict *v, enum rs_agent_reg_reason r,
				       const char *what, int err)
{
	v->reason = r;
	if (what)
		snprintf(v->text, sizeof(v->text), "%s: %s: %s", rs_agent_reg_reason_text(r), what, strerror(-err));
	else
		snprintf(v->text, sizeof(v->text), "%s", rs_agent_reg_reason_text(r));
	return r;
}

enum rs_agent_reg_reason agent_member_key(const struct agent_member_scope *scope, pid_t pid, int pidfd,
					  struct rs_client_key *key, struct agent_member_verdict *v)
{
	char path[64], rel[1024], dir[2048];
	struct stat mine, theirs;
	uint64_t id;
	int ns = -1, err;
	enum rs_agent_reg_reason r = RS_AGENT_REG_OK;

	memset(key, 0, sizeof(*key));
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return refuse(v, errno == ENOENT || errno == ESRCH ? RS_AGENT_REG_CALLER_GONE : RS_AGENT_REG_INTERNAL,
			      "netns", -errno);
	if (fstat(ns, &theirs) < 0 || stat("/proc/self/ns/net", &mine) < 0) {
		r = refuse(v, RS_AGENT_REG_INTERNAL, "netns", -errno);
		goto cleanup;
	}
	err = cgroup_path(pid, rel, sizeof(rel));
	if (err) {
		r = refuse(v, err == -ENOENT && kill(pid, 0) < 0 ? RS_AGENT_REG_CALLER_GONE : RS_AGENT_REG_INTERNAL,
			   "cgroup", err);
		goto cleanup;
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", scope->cgroup_root, strcmp(rel, "/") ? rel : "") >=
	    sizeof(dir)) {
		r = refuse(v, RS_AGENT_REG_INTERNAL, "cgroup", -ENAMETOOLONG);
		goto cleanup;
	}
	/* The programs run only below the cgroup they are attached to. */
	if (!under(dir, scope->steered)) {
		r = refuse(v, RS_AGENT_REG_OUTSIDE, NULL, 0);
		goto cleanup;
	}
	if ((theirs.st_dev != mine.st_dev || theirs.st_ino != mine.st_ino) && scope->netns_cookie) {
		key->kind = RS_CLIENT_NETNS;
		err = netns_cookie(ns, &id);
		key->id = id;
	} else {
		/* The agent's netns, or a kernel that cannot name the
		 * caller's netns (< 5.14, no SO_NETNS_COOKIE; the programs
		 * try the cgroup key next): only a cgroup of its own tells
		 * the caller apart; the hierarchy's root or the agent's own
		 * cgroup would steer strangers. */
		key->kind = RS_CLIENT_CGROUP;
		err = agent_cgroup_id(dir, &id);
		key->id = id;
		if (!err && (strcmp(rel, "/") == 0 || id == scope->own_cgroup_id)) {
			r = refuse(v, RS_AGENT_REG_NO_KEY, NULL, 0);
			goto cleanup;
		}
	}
	if (err) {
		r = refuse(v, RS_AGENT_REG_INTERNAL, key->kind == RS_CLIENT_NETNS ? "netns cookie" : "cgroup id", err);
		goto cleanup;
	}
	/* What was read belongs to the caller only if the process the pidfd
	 * holds is still alive now. */
	if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
		r = refuse(v, RS_AGENT_REG_CALLER_GONE, NULL, 0);
		goto cleanup;
	}
cleanup:
	if (ns >= 0)
		close(ns);
	if (r != RS_AGENT_REG_OK)
		memset(key, 0, sizeof(*key));
	return r;
}

int agent_member_scope_init(struct agent *a)
{
	struct agent_member_scope *sc = &a->scope;
	char rel[1024], dir[2048];
	int err;

	err = agent_cgroup2_root(sc->cgroup_root, sizeof(sc->cgroup_root), AGENT_CGROUP2_PRIVATE);
	if (err)
		return err;
	snprintf(sc->steered, sizeof(sc->steered), "%s", a->k.cgroup);
	sc->netns_cookie = a->k.feat.has[AGENT_FEAT_SO_NETNS_COOKIE];
	sc->peerpidfd = a->k.feat.has[AGENT_FEAT_PEERPIDFD];
	err = cgroup_path(getpid(), rel, sizeof(rel));
	if (err)
		return err;
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", sc->cgroup_root, strcmp(rel, "/") ? rel : "") >= sizeof(dir))
		return -ENAMETOOLONG;
	return agent_cgroup_id(dir, &sc->own_cgroup_id);
}
