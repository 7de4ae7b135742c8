/* SPDX-License-Identifier: Apache-2.0 */
/* agent_load.h - loading, attaching and pinning the kernel side, and adopting
 * what a previous agent pinned (loader.c, pin_dir.c, cgroup.c).
 *
 * Layout on bpffs: PIN_ROOT/<netns inode>/ holds every map by its name
 * (rs_services, ...) and the two links (link_steer: sk_lookup on the netns;
 * link_sockops: sockops on the cgroup2 root), each mode 0600.  It is created
 * whole in PIN_ROOT/tmp-<ino>-<pid> and renamed into place (tubular's
 * habit), so a reader or a restarted agent sees all of it or none.  The
 * agent holds an exclusive flock on the directory while it runs: one writer
 * per netns. */
#ifndef RS_AGENT_LOAD_H
#define RS_AGENT_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"
#include "agent_features.h"

#define AGENT_PIN_ROOT "/sys/fs/bpf/ringsteer"
#define AGENT_CGROUP2_PRIVATE "/run/ringsteer/cgroup2"
#define AGENT_LINK_STEER "link_steer"
#define AGENT_LINK_SOCKOPS "link_sockops"
/* connect-time steering: one link per program, on the cgroup it steers */
#define AGENT_LINK_CONNECT4 "link_connect4"
#define AGENT_LINK_CONNECT6 "link_connect6"
#define AGENT_LINK_GETPEER4 "link_getpeer4"
#define AGENT_LINK_GETPEER6 "link_getpeer6"
#define AGENT_CONNECT_LINKS 4
/* the copies of connect4/6 on each cgroup directly below --cgroup (below.c):
 * PREFIX<cgroup id>, e.g. link_below4_4242 */
#define AGENT_LINK_BELOW4 "link_below4_"
#define AGENT_LINK_BELOW6 "link_below6_"
#define AGENT_BELOW_LINKS 2

struct rs_steer;
struct rs_sockops;
struct rs_connect;
struct bpf_link;

struct agent_load_options {
	const char *pin_root;  /* NULL: AGENT_PIN_ROOT */
	bool replace;          /* a pinned program whose tag differs may be replaced */
	bool no_pin;           /* tests: nothing pinned, links live with the process */
	bool no_sockops;       /* leave sockops out (no cgroup2 available) */
	bool no_connect;       /* leave connect-time steering out */
	const char *cgroup;    /* where connect-time steering attaches; NULL: the cgroup2 root */
	unsigned probe_missing; /* tests: bits 1 << enum agent_feature to report
				 * absent, to prove each fallback */
	bool no_below;         /* connect4/6 on the cgroup alone, not also on its children */
};

/* What agent_kernel_open did, for the log line and the tests. */
enum agent_load_mode {
	AGENT_LOAD_CREATED,   /* fresh maps and links, pinned */
	AGENT_LOAD_ADOPTED,   /* pinned maps and links reused, program unchanged */
	AGENT_LOAD_UPGRADED,  /* pinned maps reused, links updated to this program */
	AGENT_LOAD_UNPINNED,  /* no_pin */
};

/* One cgroup directly below k->cgroup and its copies of connect4/6. */
struct agent_below {
	uint64_t id;                               /* its cgroup id */
	struct bpf_link *link[AGENT_BELOW_LINKS];  /* connect4, connect6; NULL until attached */
	bool attached;                             /* both links up and in rs_conn_below */
	bool failed;                               /* an attach failed (logged and counted once) */
	bool seen;                                 /* in the last scan */
	uint32_t wait, backoff;                    /* after a failure: passes to skip, doubling */
};

struct agent_kernel {
	struct rs_steer *steer;
	struct rs_sockops *sockops;
	struct rs_connect *connect;
	struct bpf_program *sockops_prog; /* the sockops variant this kernel takes */
	struct bpf_link *steer_link, *sockops_link;
	struct bpf_link *connect_links[AGENT_CONNECT_LINKS]; /* connect4, connect6, getpeername4, getpeername6 */
	char cgroup[512];      /* the cgroup connect-time steering is attached to */
	bool below_on;         /* copies on its children (below.c) */
	uint32_t below_level;  /* the children's cgroup level */
	struct agent_below *below; /* children seen, attached or failed */
	size_t n_below, cap_below;
	uint64_t below_failures;   /* children that could not be attached (each once) */
	bool below_full;           /* more children than RS_BELOW_MAX (counted once) */
	struct agent_maps maps;
	unsigned long netns_ino;
	char pin_dir[512];
	int lock_fd;           /* flock on pin_dir, or -1 */
	enum agent_load_mode mode;
	char tag[17];          /* the sk_lookup program's tag in force, hex */
	struct agent_features feat; /* what this kernel has (probed at open) */
};

/* Loads both programs, reuses or creates the maps, attaches or adopts the
 * links, pins (unless no_pin).  On failure *why holds one sentence for the
 * log.  Returns 0 or:
 *   -EOPNOTSUPP  the kernel has no sk_lookup (or no BPF at all)
 *   -EPERM       not privileged enough to load BPF
 *   -ENOEXEC     the kernel's verifier rejected a program (its log went
 *                to libbpf's print callback)
 *   -ESTALE      the pinned program's tag differs and replace is off
 *   -EBUSY       another agent holds this netns's pin directory
 *   -EPROTO      the pinned maps do not match this binary's (schema change)
 *   other -errno */
int agent_kernel_open(const struct agent_load_options *opt, struct agent_kernel *k, char *why, size_t why_len);

/* Closes everything the process holds; the pins (and so the steering) stay. */
void agent_kernel_close(struct agent_kernel *k);

/* Lowercase name of a load mode ("created", "adopted", ...). */
const char *agent_load_mode_name(enum agent_load_mode mode);

/* ---- loader.c, for below.c ------------------------------------------------ */

struct bpf_program;

/* Reopens the pinned link dir/name for prog, updating it to prog when its
 * program's tag differs (or force) and replace allows, else -ESTALE.
 * -ENOENT: no such pin. */
int agent_link_adopt(const char *dir, const char *name, struct bpf_program *prog, bool replace, bool force,
		     struct bpf_link **out, bool *upgraded, char *why, size_t why_len);

/* Pins link at dir/name, mode 0600.  Returns 0 or -errno. */
int agent_link_pin(const char *dir, const char *name, struct bpf_link *link);

/* ---- below.c ---------------------------------------------------------------- */

/* Sets k->below_on (when on and k->cgroup's level is known: its children's
 * level into k->below_level; else logged, off). */
void agent_below_init(struct agent_kernel *k, bool on);

/* At a restart: keeps each pinned below link whose cgroup is still a
 * direct child of k->cgroup (updated as agent_link_adopt does; -ESTALE
 * refuses the start), unpins (detaches) the others and all of them when
 * below_on is off, and leaves in rs_conn_below only the children kept.
 * Returns 0 or -errno. */
int agent_below_adopt(struct agent_kernel *k, bool replace, bool force, bool *upgraded, char *why,
		      size_t why_len);

/* Follows k->cgroup's direct children: attaches (and pins, with a pin
 * directory) connect4/6 copies on each new one and lists it in
 * rs_conn_below after both links are up; forgets a removed one (entry
 * first, then its links and pins).  A child that cannot be attached is
 * logged and counted once (below_failures), retried after 1, 2, 4 .. 1024
 * passes, and left meanwhile to the steered cgroup's own programs.
 * Idempotent: a child is never attached twice.  Returns the children attached now, or -errno
 * (the directory could not be read). */
int agent_below_sync(struct agent_kernel *k);

/* Closes the links this process holds (pinned ones stay attached). */
void agent_below_close(struct agent_kernel *k);

/* Children attached now. */
size_t agent_below_attached(const struct agent_kernel *k);

/* ---- map_layout.c ------------------------------------------------------- */

struct bpf_map;
struct bpf_object;

/* Whether the map behind fd (a pin) has the BTF key and value layout of map
 * (this agent's definition, of obj): same member names at the same offsets, of the
 * same sizes and encodings, recursively.  Returns 0 (same, or a side has no
 * BTF to compare), -EPROTO (the layout differs), or -errno. */
int agent_map_layout_check(const struct bpf_object *obj, const struct bpf_map *map, int fd);

/* The version a map's name carries: N for a name ending in "_vN" (N from 2
 * to 9999, no leading zero), else 1; *base_len is the length of the name
 * without the suffix ("rs_slots_v3": 3, base "rs_slots"). */
unsigned agent_map_name_version(const char *name, size_t *base_len);

/* ---- pin_dir.c ---------------------------------------------------------- */

/* Makes sure bpffs is mounted at /sys/fs/bpf when root lies under it, then
 * creates root (mode 0700) and its parents.  Returns 0 or -errno
 * (-ENOTSUP: root is not on bpffs). */
int agent_pin_root_ensure(const char *root);

/* mkdir -p with mode for every level it creates.  Returns 0 or -errno. */
int agent_mkdir_p(const char *dir, mode_t mode);

/* Removes dir and the pins in it (one level).  Returns 0 or -errno. */
int agent_pin_dir_remove(const char *dir);

/* ---- cgroup.c ----------------------------------------------------------- */

/* The mount point of the cgroup v2 hierarchy's root into out; when none is
 * mounted and private_path is not NULL, mounts one there.  Returns 0,
 * -ENOENT, -errno. */
int agent_cgroup2_root(char *out, size_t cap, const char *private_path);

/* The cgroup v2 id of the directory path (its inode: what
 * bpf_get_current_cgroup_id returns).  Returns 0 or -errno. */
int agent_cgroup_id(const char *path, uint64_t *id);

/* The cgroup level of the directory path (0: the hierarchy's root; what
 * bpf_get_current_ancestor_cgroup_id counts): its depth below the cgroup2
 * root mount.  -ENOENT: path is not below that mount. */
int agent_cgroup_level(const char *path, uint32_t *level);

#endif
