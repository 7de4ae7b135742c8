/* SPDX-License-Identifier: Apache-2.0 */
/* loader.c - brings the kernel side up, or adopts what a previous agent left
 * pinned, so that steering never stops across an agent restart.
 *
 * Fresh start: load the programs, attach sk_lookup to this netns, sockops to
 * the cgroup2 root and the connect-time programs (connect4/6,
 * getpeername4/6) to the cgroup they steer (--cgroup, else the root) with
 * bpf_links, pin maps and links in a temp directory and rename it into place
 * (readers see all or nothing).
 *
 * Restart: every map is reused from its pin (checked against this binary's
 * definition first: type, sizes, flags and the BTF field layout
 * (map_layout.c); a schema change is refused rather than silently mixing
 * layouts), the programs are loaded against those maps, and the pinned links
 * are kept.  A link whose program's tag differs from the one just loaded is
 * updated in place (BPF_LINK_UPDATE, no gap) only when replace is set, else
 * the agent refuses to run: an old binary must not quietly downgrade a newer
 * datapath.  A pinned counters-only map (rs_stats, rs_conn_stats) of
 * another layout, from a version with fewer counters, is the one map not
 * refused: with replace, a fresh one takes its pin once every link runs this
 * agent's programs (its counts start over); without, the agent refuses.
 * A map whose layout changed is renamed with a version (rs_x_v2,
 * map_layout.c): a pin of the new name missing, the map is made afresh the
 * same way (with replace, once the links run this agent's programs), and
 * the older versions' pins are removed.  A pin directory whose link points
 * at another netns (the inode was reused after the old netns died) is stale
 * and replaced.  A pin
 * directory from an agent without connect-time steering gets its maps and
 * links added; pinned connect links on another cgroup than the one asked
 * for are replaced (the operator moved --cgroup).  The copies of connect4/6
 * on the steered cgroup's children are below.c's, pinned beside the others
 * and adopted the same way.
 *
 * A program the kernel refuses after the privilege probe passed is a
 * verifier rejection (-ENOEXEC), never "no privileges": the verifier's log
 * goes to libbpf's print callback, which the agent logs. *
 * Guarantees: on failure nothing new is left pinned (a fresh start leaves at
 * most a temp directory, removed here), and what was pinned before is left
 * as it was. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#include "agent_load.h"
#include "connect.skel.h"
#include "sockops.skel.h"
#include "steer.skel.h"

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

const char *agent_load_mode_name(enum agent_load_mode mode)
{
	switch (mode) {
	case AGENT_LOAD_CREATED: return "created";
	case AGENT_LOAD_ADOPTED: return "adopted";
	case AGENT_LOAD_UPGRADED: return "upgraded";
	case AGENT_LOAD_UNPINNED: return "unpinned";
	}
	return "unknown";
}

/* Loads the smallest sk_lookup program ("return SK_PASS"): EPERM/EACCES
 * means no privileges, EINVAL (unknown type) an old kernel.  missing names
 * a feature to report absent without asking the kernel (tests of the
 * fallback on kernels that have it). */
static int probe(unsigned missing, char *why, size_t len)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_SK_LOOKUP);
	int fd, err;

	if (missing & (1u << AGENT_FEAT_SK_LOOKUP)) {
		say(why, len, "the kernel has no sk_lookup programs (needs Linux >= 5.9; feature probe overridden)");
		return -EOPNOTSUPP;
	}
	fd = bpf_prog_load(BPF_PROG_TYPE_SK_LOOKUP, "rs_probe", "GPL", insns, 2, &opts);
	err = fd < 0 ? -errno : 0;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (err == -EPERM || err == -EACCES) {
		say(why, len, "not privileged to load BPF (needs root, or CAP_BPF with CAP_NET_ADMIN)");
		return -EPERM;
	}
	if (err == -EINVAL || err == -ENOSYS || err == -E2BIG) {
		say(why, len, "the kernel has no sk_lookup programs (needs Linux >= 5.9)");
		return -EOPNOTSUPP;
	}
	say(why, len, "cannot probe sk_lookup: %s", strerror(-err));
	return err;
}

/* dir/name into out[PATH_MAX]. */
static int join(char *out, const char *dir, const char *name)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int netns_inode(unsigned long *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st) < 0)
		return -errno;
	*ino = (unsigned long)st.st_ino;
	return 0;
}

static void hex_tag(const unsigned char tag[8], char out[17])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 8; i++) {
		out[2 * i] = digits[tag[i] >> 4];
		out[2 * i + 1] = digits[tag[i] & 15];
	}
	out[16] = '\0';
}

static int prog_tag(int prog_fd, unsigned char tag[8])
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) < 0)
		return -errno;
	memcpy(tag, info.tag, 8);
	return 0;
}

/* The tag of the program a link runs, and (netns links) its netns inode
 * or (cgroup links) its cgroup id. */
static int link_facts(int link_fd, unsigned char tag[8], unsigned long *netns_ino, uint64_t *cgroup_id)
{
	struct bpf_link_info info = { 0 };
	__u32 len = sizeof(info);
	int prog_fd, err;

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len) < 0)
		return -errno;
	if (netns_ino)
		*netns_ino = info.type == BPF_LINK_TYPE_NETNS ? info.netns.netns_ino : 0;
	if (cgroup_id)
		*cgroup_id = info.type == BPF_LINK_TYPE_CGROUP ? info.cgroup.cgroup_id : 0;
	prog_fd = bpf_prog_get_fd_by_id(info.prog_id);
	if (prog_fd < 0)
		return -errno;
	err = prog_tag(prog_fd, tag);
	close(prog_fd);
	return err;
}

/* True when dir's pinned sk_lookup link belongs to another (dead) netns. */
static bool pin_dir_stale(const char *dir, unsigned long ino)
{
	char path[PATH_MAX];
	unsigned char tag[8];
	unsigned long link_ino = 0;
	int fd, err;

	if (join(path, dir, AGENT_LINK_STEER))
		return false;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false; /* no link: adopt the maps and attach a new one */
	err = link_facts(fd, tag, &link_ino, NULL);
	close(fd);
	return err == 0 && link_ino != ino;
}

static bool map_matches(const struct bpf_map *map, int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return false;
	return info.type == (__u32)bpf_map__type(map) && info.key_size == bpf_map__key_size(map) &&
	       info.value_size == bpf_map__value_size(map) && info.max_entries == bpf_map__max_entries(map) &&
	       info.map_flags == bpf_map__map_flags(map);
}

/* A map that holds only counters: a pinned one of another layout (a version
 * that added a counter) is replaced by a fresh one, its counts starting
 * over, instead of refusing the upgrade; no steering state lives in it. */
static bool counters_only(const struct bpf_map *map)
{
	const char *name = bpf_map__name(map);

	return strcmp(name, "rs_stats") == 0 || strcmp(name, "rs_conn_stats") == 0;
}

/* A map a later version added to an object whose other maps are pinned:
 * a pin directory from before it gets it made afresh (with --replace, as a
 * map's new version is).  rs_conn_below: the connect copies below the
 * steered cgroup (below.c). */
static bool added_later(const struct bpf_map *map)
{
	return strcmp(bpf_map__name(map), "rs_conn_below") == 0;
}

/* Reuses every pinned map of obj; a counters-only map of another layout,
 * and a versioned map (rs_x_v2, map_layout.c) with no pin yet, are left for
 * libbpf to create and added to fresh[] (at most FRESH_MAX), to be pinned
 * once the links are settled (the versioned one then replaces its older
 * versions' pins). */
#define FRESH_MAX 8
static int reuse_maps(struct bpf_object *obj, const char *dir, struct bpf_map **fresh, size_t *n_fresh, char *why,
		      size_t why_len)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		char path[PATH_MAX];
		int fd, err;

		if (join(path, dir, bpf_map__name(map)))
			return -ENAMETOOLONG;
		fd = bpf_obj_get(path);
		if (fd < 0 && errno == ENOENT &&
		    (agent_map_name_version(bpf_map__name(map), &(size_t){ 0 }) > 1 || added_later(map)) &&
		    *n_fresh < FRESH_MAX) {
			fresh[(*n_fresh)++] = map; /* a new version of a map: made afresh */
			continue;
		}
		if (fd < 0) {
			err = -errno;
			say(why, why_len, "pinned map %s cannot be opened: %s", path, strerror(-err));
			return err == -ENOENT ? -EPROTO : err;
		}
		/* Sizes first; then the fields (BTF), which can move under
		 * the same sizes. */
		err = map_matches(map, fd) ? agent_map_layout_check(obj, map, fd) : -EPROTO;
		if (err == -EPROTO) {
			close(fd);
			if (counters_only(map) && *n_fresh < FRESH_MAX) {
				fresh[(*n_fresh)++] = map;
				continue;
			}
			say(why, why_len,
			    "pinned map %s does not match this agent's definition (type, sizes, flags or field layout; "
			    "remove %s to start over)",
			    path, dir);
			return -EPROTO;
		}
		if (err) {
			close(fd);
			say(why, why_len, "cannot read the layout of pinned map %s: %s", path, strerror(-err));
			return err;
		}
		err = bpf_map__reuse_fd(map, fd);
		close(fd); /* reuse_fd dups it */
		if (err) {
			say(why, why_len, "cannot reuse pinned map %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

static int pin_one(const char *dir, const char *name, int (*pin)(void *, const char *), void *obj)
{
	char path[PATH_MAX];
	int err;

	err = join(path, dir, name);
	if (!err)
		err = pin(obj, path);
	if (err)
		return err;
	return chmod(path, 0600) < 0 ? -errno : 0;
}

static int pin_map_cb(void *map, const char *path)
{
	return bpf_map__pin(map, path);
}

static int pin_link_cb(void *link, const char *path)
{
	return bpf_link__pin(link, path);
}

static int pin_maps(struct bpf_object *obj, const char *dir)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		int err = pin_one(dir, bpf_map__name(map), pin_map_cb, map);

		if (err)
			return err;
	}
	return 0;
}

static int attach_steer(struct agent_kernel *k, char *why, size_t why_len)
{
	int netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), err = 0;

	if (netns < 0)
		return -errno;
	k->steer_link = bpf_program__attach_netns(k->steer->progs.rs_steer, netns);
	if (!k->steer_link) {
		err = -errno;
		say(why, why_len, "cannot attach sk_lookup to the netns: %s", strerror(-err));
	}
	close(netns);
	return err;
}

static int attach_sockops(struct agent_kernel *k, char *why, size_t why_len)
{
	char path[512];
	int cg, err;

	err = agent_cgroup2_root(path, sizeof(path), AGENT_CGROUP2_PRIVATE);
	if (err) {
		say(why, why_len, "no cgroup2 hierarchy for sockops: %s", strerror(-err));
		return err;
	}
	cg = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0) {
		err = -errno;
		say(why, why_len, "cannot open cgroup %s: %s", path, strerror(-err));
		return err;
	}
	k->sockops_link = bpf_program__attach_cgroup(k->sockops_prog, cg);
	if (!k->sockops_link) {
		err = -errno;
		say(why, why_len, "cannot attach sockops to cgroup %s: %s", path, strerror(-err));
	}
	close(cg);
	return err;
}

int agent_link_pin(const char *dir, const char *name, struct bpf_link *link)
{
	return pin_one(dir, name, pin_link_cb, link);
}

static const char *const connect_link_names[AGENT_CONNECT_LINKS] = {
	AGENT_LINK_CONNECT4, AGENT_LINK_CONNECT6, AGENT_LINK_GETPEER4, AGENT_LINK_GETPEER6,
};

static struct bpf_program *connect_prog(const struct agent_kernel *k, int i)
{
	struct bpf_program *progs[AGENT_CONNECT_LINKS] = {
		k->connect->progs.rs_connect4, k->connect->progs.rs_connect6,
		k->connect->progs.rs_getpeername4, k->connect->progs.rs_getpeername6,
	};

	return progs[i];
}

/* Attaches connect-time program i to k->cgroup. */
static int attach_connect_one(struct agent_kernel *k, int i, char *why, size_t why_len)
{
	int cg = open(k->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (cg < 0) {
		err = -errno;
		say(why, why_len, "cannot open cgroup %s: %s", k->cgroup, strerror(-err));
		return err;
	}
	k->connect_links[i] = bpf_program__attach_cgroup(connect_prog(k, i), cg);
	if (!k->connect_links[i]) {
		err = -errno;
		say(why, why_len, "cannot attach %s to cgroup %s: %s", connect_link_names[i], k->cgroup,
		    strerror(-err));
	}
	close(cg);
	return err;
}

static int attach_connect(struct agent_kernel *k, char *why, size_t why_len)
{
	for (int i = 0; i < AGENT_CONNECT_LINKS; i++) {
		int err = attach_connect_one(k, i, why, why_len);

		if (err)
			return err;
	}
	return 0;
}

int agent_link_adopt(const char *dir, const char *name, struct bpf_program *prog, bool replace, bool force,
		     struct bpf_link **out, bool *upgraded, char *why, size_t why_len)
{
	unsigned char old_tag[8], new_tag[8];
	char path[PATH_MAX], old_hex[17], new_hex[17];
	struct bpf_link *link;
	int err;

	err = join(path, dir, name);
	if (err)
		return err;
	link = bpf_link__open(path);
	if (!link)
		return -errno;
	err = link_facts(bpf_link__fd(link), old_tag, NULL, NULL);
	if (!err)
		err = prog_tag(bpf_program__fd(prog), new_tag);
	if (err) {
		say(why, why_len, "cannot read pinned link %s: %s", path, strerror(-err));
		goto fail;
	}
	/* force: a counters map or a map's new version is new (reuse_maps),
	 * and only this agent's programs use it, whatever their tags say. */
	if (force || memcmp(old_tag, new_tag, 8) != 0) {
		hex_tag(old_tag, old_hex);
		hex_tag(new_tag, new_hex);
		if (!replace) {
			say(why, why_len,
			    "pinned program %s has tag %s, this agent's is %s%s; run with --replace to upgrade", name,
			    old_hex, new_hex,
			    force ? " (and a counters map of another layout, a map's new version, or a map this version added)" : "");
			err = -ESTALE;
			goto fail;
		}
		err = bpf_link__update_program(link, prog);
		if (err) {
			say(why, why_len, "cannot update pinned link %s: %s", path, strerror(-err));
			goto fail;
		}
		*upgraded = true;
	}
	*out = link;
	return 0;
fail:
	bpf_link__disconnect(link); /* pinned: closing our fd must not detach */
	bpf_link__destroy(link);
	return err;
}

static void fill_maps(struct agent_kernel *k)
{
	struct agent_maps *m = &k->maps;

	m->services = bpf_map__fd(k->steer->maps.rs_services);
	m->sockets = bpf_map__fd(k->steer->maps.rs_sockets);
	m->pins = bpf_map__fd(k->steer->maps.rs_pins);
	m->table = bpf_map__fd(k->steer->maps.rs_table);
	m->stats = bpf_map__fd(k->steer->maps.rs_stats);
	if (k->sockops) {
		m->slots = bpf_map__fd(k->sockops->maps.rs_slots);
		m->conns = bpf_map__fd(k->sockops->maps.rs_conns);
		m->endpoints = bpf_map__fd(k->sockops->maps.rs_endpoints);
		m->owner = bpf_map__fd(k->sockops->maps.rs_owner);
		m->config = bpf_map__fd(k->sockops->maps.rs_config);
	}
	if (k->connect) {
		m->conn_svcs = bpf_map__fd(k->connect->maps.rs_conn_svcs);
		m->clients = bpf_map__fd(k->connect->maps.rs_clients);
		m->targets = bpf_map__fd(k->connect->maps.rs_targets);
		m->conn_stats = bpf_map__fd(k->connect->maps.rs_conn_stats);
	}
}

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14; older libc headers lack it */
#endif

/* Tells sockops which netns is ours (written at every start: a pinned map
 * adopted from another agent gets the same value). */
static int write_config(struct agent_kernel *k, char *why, size_t why_len)
{
	struct rs_config cfg = { 0 };
	socklen_t len = sizeof(cfg.netns_cookie);
	__u32 zero = 0;
	int fd, err = 0;

	if (k->maps.config < 0)
		return 0;
	/* Without the sockopt (< 5.14) the sockops variant loaded never asks
	 * for the netns (< 5.15 it cannot): the cookie stays 0, "unset". */
	if (!k->feat.has[AGENT_FEAT_SO_NETNS_COOKIE]) {
		if (bpf_map_update_elem(k->maps.config, &zero, &cfg, BPF_ANY) < 0) {
			err = -errno;
			say(why, why_len, "cannot clear sockops' netns cookie: %s", strerror(-err));
		}
		return err;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cfg.netns_cookie, &len) < 0 ||
	    bpf_map_update_elem(k->maps.config, &zero, &cfg, BPF_ANY) < 0) {
		err = -errno;
		say(why, why_len, "cannot record the netns cookie for sockops: %s", strerror(-err));
	}
	if (fd >= 0)
		close(fd);
	return err;
}

/* The probe already loaded a program, so privileges are there: a refusal
 * now is the verifier's (EACCES, EINVAL, E2BIG...), except a plain EPERM
 * (a capability this program type needs beyond the probe's). */
static int load_one(const char *what, int err, char *why, size_t why_len)
{
	if (!err)
		return 0;
	if (err == -EPERM) {
		say(why, why_len, "not privileged to load the %s program: %s", what, strerror(-err));
		return -EPERM;
	}
	say(why, why_len, "the kernel's verifier rejected the %s program (%s); its log is above", what,
	    strerror(-err));
	return -ENOEXEC;
}

/* The sockops variant this kernel takes: the one that tags connections to
 * unregistered peer endpoints needs bpf_get_netns_cookie in sock_ops
 * (5.15) and the netns cookie (SO_NETNS_COOKIE, 5.14); without them the one
 * that counts only registered listeners' children.  The other is never
 * loaded (the verifier would refuse the helper). */
static void sockops_choose(struct agent_kernel *k)
{
	bool full = k->feat.has[AGENT_FEAT_SOCKOPS_NETNS_COOKIE] && k->feat.has[AGENT_FEAT_SO_NETNS_COOKIE];

	k->sockops_prog = full ? k->sockops->progs.rs_sockops : k->sockops->progs.rs_sockops_own;
	bpf_program__set_autoload(full ? k->sockops->progs.rs_sockops_own : k->sockops->progs.rs_sockops, false);
}

static int load(struct agent_kernel *k, char *why, size_t why_len)
{
	int err = load_one("sk_lookup", rs_steer__load(k->steer), why, why_len);

	if (!err && k->sockops)
		err = load_one("sockops", rs_sockops__load(k->sockops), why, why_len);
	if (!err && k->connect)
		err = load_one("connect-time", rs_connect__load(k->connect), why, why_len);
	return err;
}

/* Fresh state: load, attach, pin into a temp dir, rename into place. */
static int create(struct agent_kernel *k, const char *root, char *why, size_t why_len)
{
	char tmp[PATH_MAX];
	int err, n;

	err = load(k, why, why_len);
	if (!err)
		err = attach_steer(k, why, why_len);
	if (!err && k->sockops)
		err = attach_sockops(k, why, why_len);
	if (!err && k->connect)
		err = attach_connect(k, why, why_len);
	if (err)
		return err;
	/* bpffs reserves names with dots: "tmp-<ino>-<pid>" (no netns inode
	 * starts with a letter, so it cannot collide with a pin directory). */
	n = snprintf(tmp, sizeof(tmp), "%s/tmp-%lu-%ld", root, k->netns_ino, (long)getpid());
	if (n < 0 || n >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	agent_pin_dir_remove(tmp); /* a crashed namesake's leftovers */
	err = mkdir(tmp, 0700) < 0 ? -errno : 0;
	if (!err)
		err = pin_maps(k->steer->obj, tmp);
	if (!err && k->sockops)
		err = pin_maps(k->sockops->obj, tmp);
	if (!err)
		err = pin_one(tmp, AGENT_LINK_STEER, pin_link_cb, k->steer_link);
	if (!err && k->sockops)
		err = pin_one(tmp, AGENT_LINK_SOCKOPS, pin_link_cb, k->sockops_link);
	if (!err && k->connect)
		err = pin_maps(k->connect->obj, tmp);
	for (int i = 0; !err && k->connect && i < AGENT_CONNECT_LINKS; i++)
		err = pin_one(tmp, connect_link_names[i], pin_link_cb, k->connect_links[i]);
	if (!err && rename(tmp, k->pin_dir) < 0)
		err = -errno;
	if (err) {
		say(why, why_len, "cannot pin under %s: %s", root, strerror(-err));
		agent_pin_dir_remove(tmp);
		return err == -EPERM ? -EACCES : err; /* -EPERM means "cannot load BPF" */
	}
	k->mode = AGENT_LOAD_CREATED;
	return 0;
}

/* True when dir holds none of obj's maps: pinned by an agent that did not
 * have this object. */
static bool maps_absent(struct bpf_object *obj, const char *dir)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		char path[PATH_MAX];

		if (join(path, dir, bpf_map__name(map)) == 0 && access(path, F_OK) == 0)
			return false;
	}
	return true;
}

/* The pinned connect-time link i, kept if it is on k->cgroup (upgraded as
 * adopt_link does), else unpinned (which detaches it) and attached anew. */
static int adopt_connect_link(struct agent_kernel *k, int i, bool replace, bool force, bool *upgraded, char *why,
			      size_t why_len)
{
	char path[PATH_MAX];
	unsigned char tag[8];
	uint64_t want = 0, have = 0;
	int fd, err;

	err = join(path, k->pin_dir, connect_link_names[i]);
	if (!err)
		err = agent_cgroup_id(k->cgroup, &want);
	if (err)
		return err;
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		err = link_facts(fd, tag, NULL, &have);
		close(fd);
		if (err == 0 && have != want && unlink(path) < 0)
			return -errno;
	}
	err = agent_link_adopt(k->pin_dir, connect_link_names[i], connect_prog(k, i), replace, force, &k->connect_links[i],
			 upgraded, why, why_len);
	if (err == -ENOENT) {
		err = attach_connect_one(k, i, why, why_len);
		if (!err)
			err = pin_one(k->pin_dir, connect_link_names[i], pin_link_cb, k->connect_links[i]);
	}
	return err;
}

/* Removes the pins of the versions before name's ("rs_x" and "rs_x_v2" ..
 * for "rs_x_v3"): no program uses them once the links run this agent's. */
static int unpin_older(const char *dir, const char *name)
{
	size_t base_len;
	unsigned v = agent_map_name_version(name, &base_len);
	char older[BPF_OBJ_NAME_LEN + 8], path[PATH_MAX];

	for (unsigned i = 1; i < v; i++) {
		if (i == 1)
			snprintf(older, sizeof(older), "%.*s", (int)base_len, name);
		else
			snprintf(older, sizeof(older), "%.*s_v%u", (int)base_len, name, i);
		if (join(path, dir, older) == 0 && unlink(path) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* Pinned state: reuse maps, load against them, keep (or upgrade) links. */
static int adopt(struct agent_kernel *k, bool replace, char *why, size_t why_len)
{
	bool upgraded = false, connect_fresh = false;
	struct bpf_map *fresh[FRESH_MAX];
	size_t n_fresh = 0;
	int err;

	err = reuse_maps(k->steer->obj, k->pin_dir, fresh, &n_fresh, why, why_len);
	if (!err && k->sockops)
		err = reuse_maps(k->sockops->obj, k->pin_dir, fresh, &n_fresh, why, why_len);
	if (!err && k->connect) {
		connect_fresh = maps_absent(k->connect->obj, k->pin_dir);
		if (!connect_fresh)
			err = reuse_maps(k->connect->obj, k->pin_dir, fresh, &n_fresh, why, why_len);
	}
	if (!err)
		err = load(k, why, why_len);
	if (!err && connect_fresh)
		err = pin_maps(k->connect->obj, k->pin_dir);
	if (err)
		return err;
	err = agent_link_adopt(k->pin_dir, AGENT_LINK_STEER, k->steer->progs.rs_steer, replace, n_fresh > 0, &k->steer_link,
			 &upgraded, why, why_len);
	if (err == -ENOENT) { /* someone removed the link: attach anew */
		err = attach_steer(k, why, why_len);
		if (!err)
			err = pin_one(k->pin_dir, AGENT_LINK_STEER, pin_link_cb, k->steer_link);
	}
	if (err)
		return err;
	if (k->sockops) {
		err = agent_link_adopt(k->pin_dir, AGENT_LINK_SOCKOPS, k->sockops_prog, replace, n_fresh > 0,
				 &k->sockops_link, &upgraded, why, why_len);
		if (err == -ENOENT) {
			err = attach_sockops(k, why, why_len);
			if (!err)
				err = pin_one(k->pin_dir, AGENT_LINK_SOCKOPS, pin_link_cb, k->sockops_link);
		}
		if (err)
			return err;
	}
	for (int i = 0; k->connect && i < AGENT_CONNECT_LINKS; i++) {
		err = adopt_connect_link(k, i, replace, n_fresh > 0, &upgraded, why, why_len);
		if (err)
			return err;
	}
	if (k->connect) {
		err = agent_below_adopt(k, replace, n_fresh > 0, &upgraded, why, why_len);
		if (err)
			return err;
	}
	/* Only now, with the links on this agent's programs (or refused before
	 * anything changed), do fresh counters take their pins. */
	for (size_t i = 0; i < n_fresh; i++) {
		char path[PATH_MAX];

		err = join(path, k->pin_dir, bpf_map__name(fresh[i]));
		if (!err && unlink(path) < 0 && errno != ENOENT)
			err = -errno;
		if (!err)
			err = pin_one(k->pin_dir, bpf_map__name(fresh[i]), pin_map_cb, fresh[i]);
		if (!err)
			err = unpin_older(k->pin_dir, bpf_map__name(fresh[i]));
		if (err) {
			say(why, why_len, "cannot pin the new %s: %s", bpf_map__name(fresh[i]), strerror(-err));
			return err;
		}
	}
	k->mode = upgraded ? AGENT_LOAD_UPGRADED : AGENT_LOAD_ADOPTED;
	return 0;
}

static int lock_dir(struct agent_kernel *k, char *why, size_t why_len)
{
	k->lock_fd = open(k->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (k->lock_fd < 0)
		return -errno;
	if (flock(k->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int err = -errno;

		say(why, why_len, "another agent holds %s", k->pin_dir);
		return err == -EWOULDBLOCK ? -EBUSY : err;
	}
	return 0;
}

int agent_kernel_open(const struct agent_load_options *opt, struct agent_kernel *k, char *why, size_t why_len)
{
	const char *root = opt->pin_root ? opt->pin_root : AGENT_PIN_ROOT;
	unsigned char tag[8];
	int err, root_fd = -1;

	*k = (struct agent_kernel){ .lock_fd = -1, .maps = AGENT_MAPS_NONE };
	err = probe(opt->probe_missing, why, why_len);
	if (!err)
		err = netns_inode(&k->netns_ino);
	if (err)
		return err;
	k->feat.has[AGENT_FEAT_SK_LOOKUP] = true;
	agent_features_probe(opt->probe_missing, &k->feat);
	if (!opt->no_connect) {
		err = opt->cgroup ? (snprintf(k->cgroup, sizeof(k->cgroup), "%s", opt->cgroup) < (int)sizeof(k->cgroup)
					     ? 0
					     : -ENAMETOOLONG)
				  : agent_cgroup2_root(k->cgroup, sizeof(k->cgroup), AGENT_CGROUP2_PRIVATE);
		if (err) {
			say(why, why_len, "no cgroup for connect-time steering: %s", strerror(-err));
			return err;
		}
	}
	if (!opt->no_connect)
		agent_below_init(k, !opt->no_below);
	k->steer = rs_steer__open();
	if (!k->steer || (!opt->no_sockops && !(k->sockops = rs_sockops__open())) ||
	    (!opt->no_connect && !(k->connect = rs_connect__open()))) {
		err = -errno;
		say(why, why_len, "cannot open the embedded BPF objects: %s", strerror(-err));
		goto fail;
	}
	if (k->sockops)
		sockops_choose(k);
	if (opt->no_pin) {
		err = load(k, why, why_len);
		if (!err)
			err = attach_steer(k, why, why_len);
		if (!err && k->sockops)
			err = attach_sockops(k, why, why_len);
		if (!err && k->connect)
			err = attach_connect(k, why, why_len);
		if (err)
			goto fail;
		k->mode = AGENT_LOAD_UNPINNED;
		goto done;
	}

	err = agent_pin_root_ensure(root);
	if (err) {
		say(why, why_len, "cannot prepare %s on bpffs: %s", root, strerror(-err));
		goto fail;
	}
	if ((size_t)snprintf(k->pin_dir, sizeof(k->pin_dir), "%s/%lu", root, k->netns_ino) >= sizeof(k->pin_dir)) {
		err = -ENAMETOOLONG;
		goto fail;
	}
	/* The root's lock orders agents creating, adopting or clearing pin
	 * directories (held for the start only). */
	root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 || flock(root_fd, LOCK_EX) < 0) {
		err = -errno;
		goto fail;
	}
	if (access(k->pin_dir, F_OK) == 0 && pin_dir_stale(k->pin_dir, k->netns_ino)) {
		err = agent_pin_dir_remove(k->pin_dir);
		if (err) {
			say(why, why_len, "cannot remove stale %s: %s", k->pin_dir, strerror(-err));
			goto fail;
		}
	}
	if (access(k->pin_dir, F_OK) == 0) {
		err = lock_dir(k, why, why_len);
		if (!err)
			err = adopt(k, opt->replace, why, why_len);
	} else {
		err = create(k, root, why, why_len);
		if (!err)
			err = lock_dir(k, why, why_len);
	}
	if (err)
		goto fail;
done:
	/* The root's lock is for the start only; fail below must not close
	 * the descriptor again (its number may be another's by then). */
	if (root_fd >= 0)
		close(root_fd);
	root_fd = -1;
	if (k->connect)
		agent_below_sync(k); /* a child it cannot attach is logged and counted, not fatal */
	fill_maps(k);
	err = write_config(k, why, why_len);
	if (err)
		goto fail;
	if (k->steer_link && link_facts(bpf_link__fd(k->steer_link), tag, NULL, NULL) == 0)
		hex_tag(tag, k->tag);
	return 0;
fail:
	if (root_fd >= 0)
		close(root_fd);
	agent_kernel_close(k);
	return err;
}

void agent_kernel_close(struct agent_kernel *k)
{
	/* Pinned links stay attached when our fds close; unpinned ones detach. */
	if (k->steer_link)
		bpf_link__destroy(k->steer_link);
	if (k->sockops_link)
		bpf_link__destroy(k->sockops_link);
	for (int i = 0; i < AGENT_CONNECT_LINKS; i++)
		if (k->connect_links[i])
			bpf_link__destroy(k->connect_links[i]);
	agent_below_close(k);
	rs_steer__destroy(k->steer);
	rs_sockops__destroy(k->sockops);
	rs_connect__destroy(k->connect);
	if (k->lock_fd >= 0)
		close(k->lock_fd);
	*k = (struct agent_kernel){ .lock_fd = -1, .maps = AGENT_MAPS_NONE };
}
