/* SPDX-License-Identifier: Apache-2.0 */
/* pin_test.c - kernel tests of the loader's pin adoption, each with a pin
 * root of its own under /sys/fs/bpf (removed at the end), connect-time
 * steering left out (it would attach to the cgroup2 root).
 *
 *   configfail  (issue 17, defect 2) the adopted rs_config map is frozen, so
 *               recording the netns cookie fails: agent_kernel_open fails
 *               and closes every descriptor it opened exactly once (the
 *               test links with --wrap=close and counts closes of a
 *               descriptor that was not open)
 *   adopt       a second start adopts every map the first one pinned (the
 *               layout check refuses none of this agent's own)
 *   layout      (issue 17, defect 4) the pinned rs_slots is replaced by a
 *               map of the same type, sizes and flags whose BTF says gen
 *               and state swapped places: the start is refused (-EPROTO);
 *               the same fields in their own places are adopted
 *   names       the version a map's name carries (rs_slots_v2: 2), which
 *               makes a pin of that name missing a new map, not a refusal
 *
 * Exit status: 0 passed, 1 failed, 77 skipped (not root), 2 usage. */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <dirent.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent_load.h"
#include "ringsteer_maps.h"

/* Closes of a descriptor that was not open, seen by __wrap_close.  A test
 * program's own state: it is one process running one test. */
static int bad_closes;

int __real_close(int fd);
int __wrap_close(int fd);

int __wrap_close(int fd)
{
	int rc = __real_close(fd);

	if (rc < 0 && errno == EBADF)
		bad_closes++;
	return rc;
}

static int failures;

#define EXPECT(cond, ...)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			failures++;                                        \
			fprintf(stderr, "  FAIL line %d: ", __LINE__);     \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
		}                                                          \
	} while (0)

static int open_kernel(const char *root, struct agent_kernel *k, char *why, size_t len)
{
	struct agent_load_options opt = { .pin_root = root, .no_connect = true };

	return agent_kernel_open(&opt, k, why, len);
}

/* Freezes the pinned map name of dir: user space can no longer write it. */
static int freeze_pinned(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	err = bpf_map_freeze(fd) < 0 ? -errno : 0;
	close(fd);
	return err;
}

static void test_configfail(const char *root)
{
	struct agent_kernel k;
	char why[256] = "", dir[sizeof(k.pin_dir)];
	int err;

	err = open_kernel(root, &k, why, sizeof(why));
	EXPECT(err == 0, "first start: %s (%s)", why, strerror(-err));
	if (err)
		return;
	snprintf(dir, sizeof(dir), "%s", k.pin_dir);
	agent_kernel_close(&k);
	err = freeze_pinned(dir, "rs_config");
	EXPECT(err == 0, "freeze rs_config: %s", strerror(-err));

	bad_closes = 0;
	err = open_kernel(root, &k, why, sizeof(why));
	EXPECT(err != 0, "adopting a frozen rs_config must fail");
	EXPECT(strstr(why, "netns cookie") != NULL, "why: %s", why);
	EXPECT(bad_closes == 0, "%d close(s) of a descriptor not open", bad_closes);
	if (err == 0)
		agent_kernel_close(&k);
}

/* Removes the pin directories under root (links unpinned detach), then root. */
static void remove_root(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *e;
	char dir[PATH_MAX];

	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
		agent_pin_dir_remove(dir);
	}
	if (d)
		closedir(d);
	rmdir(root);
}

static void test_adopt(const char *root)
{
	struct agent_kernel k;
	char why[256] = "";
	int err;

	err = open_kernel(root, &k, why, sizeof(why));
	EXPECT(err == 0 && k.mode == AGENT_LOAD_CREATED, "first start: %s (%s)", why, strerror(-err));
	if (err)
		return;
	agent_kernel_close(&k);
	err = open_kernel(root, &k, why, sizeof(why));
	EXPECT(err == 0 && k.mode == AGENT_LOAD_ADOPTED, "second start: %s (%s)", why, strerror(-err));
	if (err == 0)
		agent_kernel_close(&k);
}

/* Pins at dir/rs_slots, in place of the agent's, an ARRAY of struct rs_slot
 * whose BTF puts state before gen when swapped (same sizes: only the names
 * at the offsets differ). */
static int pin_rs_slots(const char *dir, bool swapped)
{
	struct btf *btf = btf__new_empty();
	char path[PATH_MAX];
	int u64, u32, ch, arr, st, fd = -1, err;

	if (!btf)
		return -errno;
	u64 = btf__add_int(btf, "long long unsigned int", 8, 0);
	u32 = btf__add_int(btf, "unsigned int", 4, 0);
	ch = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
	arr = btf__add_array(btf, u32, ch, RS_GATEWAY_ID_SIZE);
	st = btf__add_struct(btf, "rs_slot", sizeof(struct rs_slot));
	err = u64 < 0 || u32 < 0 || ch < 0 || arr < 0 || st < 0 ? -EINVAL : 0;
	if (!err)
		err = btf__add_field(btf, "cookie", u64, 0, 0);
	if (!err)
		err = btf__add_field(btf, swapped ? "state" : "gen", u32, 64, 0);
	if (!err)
		err = btf__add_field(btf, swapped ? "gen" : "state", u32, 96, 0);
	if (!err)
		err = btf__add_field(btf, "gateway", arr, 128, 0);
	if (!err)
		err = btf__load_into_kernel(btf);
	if (err)
		goto cleanup;
	LIBBPF_OPTS(bpf_map_create_opts, opts, .btf_fd = btf__fd(btf), .btf_key_type_id = u32,
		    .btf_value_type_id = st);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rs_slots", sizeof(__u32), sizeof(struct rs_slot), RS_SLOTS_MAX,
			    &opts);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/rs_slots", dir);
	if (unlink(path) < 0 || bpf_obj_pin(fd, path) < 0)
		err = -errno;
cleanup:
	if (fd >= 0)
		close(fd);
	btf__free(btf);
	return err;
}

static void test_layout(const char *root)
{
	struct agent_kernel k;
	char why[256] = "", dir[sizeof(k.pin_dir)];
	int err;

	err = open_kernel(root, &k, why, sizeof(why));
	EXPECT(err == 0, "first start: %s (%s)", why, strerror(-err));
	if (err)
		return;
	snprintf(dir, sizeof(dir), "%s", k.pin_dir);
	agent_kernel_close(&k);

	err = pin_rs_slots(dir, false);
	EXPECT(err == 0, "pin rs_slots (own layout): %s", strerror(-err));
	err = open_kernel(root, &k, why, sizeof(why));
	EXPECT(err == 0, "the same fields in their places are adopted: %s (%s)", why, strerror(-err));
	if (err == 0)
		agent_kernel_close(&k);

	err = pin_rs_slots(dir, true);
	EXPECT(err == 0, "pin rs_slots (gen and state swapped): %s", strerror(-err));
	err = open_kernel(root, &k, why, sizeof(why));
	EXPECT(err == -EPROTO, "moved fields must be refused: got %s (%s)", strerror(-err), why);
	EXPECT(strstr(why, "rs_slots") != NULL, "why names the map: %s", why);
	if (err == 0)
		agent_kernel_close(&k);
}

/* Names and their versions: what makes a map "new" at adoption. */
static void test_names(const char *root)
{
	static const struct {
		const char *name;
		unsigned version;
		size_t base_len;
	} cases[] = {
		{ "rs_slots", 1, 8 },     { "rs_slots_v2", 2, 8 }, { "rs_slots_v13", 13, 8 }, { "rs_slots_v1", 1, 11 },
		{ "rs_slots_v02", 1, 12 }, { "rs_slots_v", 1, 10 }, { "rs_v2x", 1, 6 },        { "_v2", 1, 3 },
		{ "rs_x_v12345", 1, 11 },
	};

	(void)root;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t base_len = 0;
		unsigned v = agent_map_name_version(cases[i].name, &base_len);

		EXPECT(v == cases[i].version && base_len == cases[i].base_len, "%s: version %u base %zu", cases[i].name,
		       v, base_len);
	}
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(const char *root);
	} tests[] = {
		{ "configfail", test_configfail },
		{ "adopt", test_adopt },
		{ "layout", test_layout },
		{ "names", test_names },
	};
	char root[128];

	if (argc != 2) {
		fprintf(stderr, "usage: pin_test NAME (configfail, adopt, layout, names)\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(argv[1], tests[i].name) != 0)
			continue;
		if (geteuid() != 0) {
			printf("skipped: not root\n");
			return 77;
		}
		snprintf(root, sizeof(root), "/sys/fs/bpf/rs-pin-test-%ld", (long)getpid());
		tests[i].run(root);
		remove_root(root);
		return failures ? 1 : 0;
	}
	fprintf(stderr, "pin_test: no test named %s\n", argv[1]);
	return 2;
}
