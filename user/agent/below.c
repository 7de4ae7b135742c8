/* SPDX-License-Identifier: Apache-2.0 */
/* below.c - copies of connect4/6 on the cgroups directly below the steered
 * one, so that ringsteer decides before a socket-LB attached to the root.
 *
 * Cilium's kube-proxy replacement (socket-LB), Calico's eBPF data plane and
 * GKE Dataplane V2 attach connect4/6 to the node's cgroup root and rewrite
 * a ClusterIP to a random backend.  Within one cgroup, programs run in the
 * order they were attached, so on such a node the socket-LB (there first)
 * rewrites the Service before ringsteer's program at the root sees it.  A
 * child cgroup's programs run before its ancestors' (BPF_F_ALLOW_MULTI, what
 * a cgroup bpf_link uses), so rs_below_conn4/6 on every direct child
 * (kubepods.slice, system.slice, ...) steer a registered caller first; the
 * socket-LB then sees a gateway's pod IP, not a Service, and leaves it.  An
 * unregistered caller misses and the socket-LB rewrites it as before.
 *
 * Children are found by a scan of the steered directory, at start and at
 * each sync (a new child is followed within --sync-interval; until then the
 * steered cgroup's own copy serves it).  Each child is listed in
 * rs_conn_below only once both its links are up (and pinned), and unlisted
 * before its links go, so the steered cgroup's copy never leaves a caller
 * without one (connect.bpf.c: handled_below).  Pins: PIN_DIR/link_below4_<id>
 * and link_below6_<id>; a restarted agent adopts them (agent_below_adopt),
 * so a child never carries two copies; removing the pin directory detaches
 * them with the rest.
 *
 * Guarantees: a child is attached at most once per agent and per pin; one
 * that cannot be attached (the kernel refuses: another program attached
 * there without BPF_F_ALLOW_MULTI, a cgroup removed during the scan) is
 * logged and counted once, retried after 1, 2, 4 .. 1024 passes (libbpf
 * warns at each attempt), never fatal. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_load.h"
#include "connect.skel.h"
#include "util/logfmt.h"

static const char *const below_prefix[AGENT_BELOW_LINKS] = { AGENT_LINK_BELOW4, AGENT_LINK_BELOW6 };

static struct bpf_program *below_prog(const struct agent_kernel *k, int i)
{
	return i == 0 ? k->connect->progs.rs_below_conn4 : k->connect->progs.rs_below_conn6;
}

static int below_map(const struct agent_kernel *k)
{
	return bpf_map__fd(k->connect->maps.rs_conn_below);
}

static int pin_name(char *out, size_t cap, int i, uint64_t id)
{
	int n = snprintf(out, cap, "%s%" PRIu64, below_prefix[i], id);

	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static int pin_path(char *out, const struct agent_kernel *k, int i, uint64_t id)
{
	char name[64];
	int err = pin_name(name, sizeof(name), i, id), n;

	if (err)
		return err;
	n = snprintf(out, PATH_MAX, "%s/%s", k->pin_dir, name);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static void log_child(const char *level, const char *event, uint64_t id, const char *detail)
{
	char ids[24];

	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	rs_log(stderr, level, "agent", "event", event, "cgroup_id", ids, "detail", detail, NULL);
}

void agent_below_init(struct agent_kernel *k, bool on)
{
	uint32_t level;
	int err;

	k->below_on = false;
	if (!on)
		return;
	err = agent_cgroup_level(k->cgroup, &level);
	if (err) {
		rs_log(stderr, "warn", "agent", "event", "connect_below_off", "cgroup", k->cgroup, "detail",
		       "cannot tell the cgroup's level: connect-time steering on the cgroup alone", "error",
		       strerror(-err), NULL);
		return;
	}
	k->below_level = level + 1;
	k->below_on = true;
}

static struct agent_below *find(struct agent_kernel *k, uint64_t id)
{
	for (size_t i = 0; i < k->n_below; i++)
		if (k->below[i].id == id)
			return &k->below[i];
	return NULL;
}

static struct agent_below *add(struct agent_kernel *k, uint64_t id)
{
	if (k->n_below == k->cap_below) {
		size_t cap = k->cap_below ? 2 * k->cap_below : 16;
		struct agent_below *b = realloc(k->below, cap * sizeof(*b));

		if (!b)
			return NULL;
		k->below = b;
		k->cap_below = cap;
	}
	k->below[k->n_below] = (struct agent_below){ .id = id };
	return &k->below[k->n_below++];
}

/* Unlists b, then closes its links and removes its pins (which detaches
 * them), then drops it from k->below. */
static void forget(struct agent_kernel *k, struct agent_below *b)
{
	char path[PATH_MAX];

	bpf_map_delete_elem(below_map(k), &b->id);
	for (int i = 0; i < AGENT_BELOW_LINKS; i++) {
		if (b->link[i])
			bpf_link__destroy(b->link[i]);
		if (k->pin_dir[0] && pin_path(path, k, i, b->id) == 0)
			unlink(path);
	}
	*b = k->below[--k->n_below];
}

/* Attaches both copies to the child dir/name (id) and pins them; then
 * lists it.  Returns 0 or -errno, with *what naming the step that failed. */
static int attach(struct agent_kernel *k, struct agent_below *b, int dirfd, const char *name, const char **what)
{
	__u32 one = 1;
	int cg = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	*what = "open";
	if (cg < 0)
		return -errno;
	for (int i = 0; !err && i < AGENT_BELOW_LINKS; i++) {
		char pin[64];

		if (b->link[i])
			continue;
		*what = i == 0 ? "attach connect4" : "attach connect6";
		b->link[i] = bpf_program__attach_cgroup(below_prog(k, i), cg);
		if (!b->link[i]) {
			err = -errno;
			break;
		}
		*what = "pin";
		if (k->pin_dir[0]) {
			err = pin_name(pin, sizeof(pin), i, b->id);
			if (!err)
				err = agent_link_pin(k->pin_dir, pin, b->link[i]);
		}
	}
	close(cg);
	if (!err) {
		*what = "rs_conn_below";
		err = bpf_map_update_elem(below_map(k), &b->id, &one, BPF_ANY) < 0 ? -errno : 0;
	}
	if (err) {
		char path[PATH_MAX];

		for (int i = 0; i < AGENT_BELOW_LINKS; i++) {
			if (b->link[i])
				bpf_link__destroy(b->link[i]);
			b->link[i] = NULL;
			if (k->pin_dir[0] && pin_path(path, k, i, b->id) == 0)
				unlink(path);
		}
		return err;
	}
	b->attached = true;
	return 0;
}

static int write_level(struct agent_kernel *k)
{
	__u64 key = RS_BELOW_LEVEL_KEY;

	if (!k->below_on)
		return bpf_map_delete_elem(below_map(k), &key) < 0 && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(below_map(k), &key, &k->below_level, BPF_ANY) < 0 ? -errno : 0;
}

int agent_below_sync(struct agent_kernel *k)
{
	DIR *d;
	struct dirent *e;
	int err;

	if (!k->connect || !k->below_on)
		return 0;
	err = write_level(k);
	if (err)
		return err;
	d = opendir(k->cgroup);
	if (!d)
		return -errno;
	for (size_t i = 0; i < k->n_below; i++)
		k->below[i].seen = false;
	while ((e = readdir(d)) != NULL) {
		struct agent_below *b;
		const char *what;
		uint64_t id;
		char path[PATH_MAX];

		if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", k->cgroup, e->d_name) >= (int)sizeof(path) ||
		    agent_cgroup_id(path, &id))
			continue; /* gone since readdir, or too long a name: nothing to steer */
		b = find(k, id);
		if (!b && k->n_below < RS_BELOW_MAX)
			b = add(k, id);
		if (!b) { /* counted and logged once per agent */
			if (!k->below_full) {
				k->below_full = true;
				k->below_failures++;
				log_child("warn", "connect_below_failed", id,
					  "too many child cgroups: this one and later ones left to the steered cgroup's programs");
			}
			continue;
		}
		b->seen = true;
		if (b->attached)
			continue;
		if (b->wait) { /* failed before: retried after 1, 2, 4 .. 1024 passes */
			b->wait--;
			continue;
		}
		err = attach(k, b, dirfd(d), e->d_name, &what);
		if (err) {
			b->backoff = b->backoff ? (b->backoff < 1024 ? 2 * b->backoff : 1024) : 1;
			b->wait = b->backoff;
		}
		if (err && !b->failed) {
			char detail[PATH_MAX + 64];

			b->failed = true;
			k->below_failures++;
			snprintf(detail, sizeof(detail), "%s %s: %s (left to the steered cgroup's programs)", what, path,
				 strerror(-err));
			log_child("warn", "connect_below_failed", id, detail);
		} else if (!err) {
			log_child("info", "connect_below_attached", id, path);
		}
	}
	closedir(d);
	for (size_t i = 0; i < k->n_below;) {
		if (k->below[i].seen) {
			i++;
			continue;
		}
		forget(k, &k->below[i]); /* moves the last one here */
	}
	return (int)agent_below_attached(k);
}

/* The id in a pin name of below link i ("link_below4_4242": 4242), or 0. */
static uint64_t pinned_id(const char *name, int *which)
{
	for (int i = 0; i < AGENT_BELOW_LINKS; i++) {
		size_t n = strlen(below_prefix[i]);
		char *end;
		unsigned long long v;

		if (strncmp(name, below_prefix[i], n) != 0 || name[n] < '1' || name[n] > '9')
			continue;
		errno = 0;
		v = strtoull(name + n, &end, 10);
		if (errno || *end)
			return 0;
		*which = i;
		return v;
	}
	return 0;
}

/* Whether id is a direct child of k->cgroup now. */
static bool is_child(const struct agent_kernel *k, uint64_t id)
{
	DIR *d = opendir(k->cgroup);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d)) != NULL) {
		char path[PATH_MAX];
		uint64_t cid;

		if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		found = snprintf(path, sizeof(path), "%s/%s", k->cgroup, e->d_name) < (int)sizeof(path) &&
			agent_cgroup_id(path, &cid) == 0 && cid == id;
	}
	closedir(d);
	return found;
}

/* Deletes every rs_conn_below entry but the level and the children kept. */
static int unlist_others(struct agent_kernel *k)
{
	__u64 key, next;
	__u64 *prev = NULL;
	int fd = below_map(k), err = 0;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (key == RS_BELOW_LEVEL_KEY)
			continue;
		if (!k->below_on || !find(k, key) || !find(k, key)->attached) {
			if (bpf_map_delete_elem(fd, &key) < 0 && errno != ENOENT)
				err = -errno;
			prev = NULL; /* restart: the deleted key cannot lead on */
		}
	}
	return err ? err : write_level(k);
}

int agent_below_adopt(struct agent_kernel *k, bool replace, bool force, bool *upgraded, char *why, size_t why_len)
{
	DIR *d = opendir(k->pin_dir);
	struct dirent *e;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (e = readdir(d)) != NULL) {
		struct agent_below *b;
		int i = 0;
		uint64_t id = pinned_id(e->d_name, &i);

		if (!id)
			continue;
		if (!k->below_on || !is_child(k, id)) {
			/* the cgroup is gone, --cgroup moved, or --no-below */
			if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
				err = -errno;
			continue;
		}
		b = find(k, id);
		if (!b && !(b = add(k, id))) {
			err = -ENOMEM;
			break;
		}
		err = agent_link_adopt(k->pin_dir, e->d_name, below_prog(k, i), replace, force, &b->link[i], upgraded,
				       why, why_len);
	}
	closedir(d);
	for (size_t i = 0; !err && i < k->n_below; i++) {
		struct agent_below *b = &k->below[i];

		b->attached = b->link[0] && b->link[1];
	}
	/* A child with one link of two gets the other at the first sync (attach
	 * skips the link it has); until then it is unlisted. */
	if (!err)
		err = unlist_others(k);
	if (err)
		agent_below_close(k);
	return err;
}

size_t agent_below_attached(const struct agent_kernel *k)
{
	size_t n = 0;

	for (size_t i = 0; i < k->n_below; i++)
		n += k->below[i].attached;
	return n;
}

void agent_below_close(struct agent_kernel *k)
{
	for (size_t i = 0; i < k->n_below; i++)
		for (int j = 0; j < AGENT_BELOW_LINKS; j++)
			if (k->below[i].link[j])
				bpf_link__destroy(k->below[i].link[j]);
	free(k->below);
	k->below = NULL;
	k->n_below = k->cap_below = 0;
}
