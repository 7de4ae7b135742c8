/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup.c - where sockops attaches: the root of the cgroup v2 hierarchy, so
 * that the connections of every process (gateways included, whatever cgroup
 * they run in) are seen.  On a host without a cgroup2 mount (pure v1) one is
 * mounted at a private path; on a hybrid host (v1 controllers plus
 * /sys/fs/cgroup/unified) the existing v2 mount is used. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "agent.h"
#include "agent_load.h"

int agent_cgroup2_root(char *out, size_t cap, const char *private_path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int err = -ENOENT;

	if (!f)
		return -errno;
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPER" */
	while (fgets(line, sizeof(line), f)) {
		char root[1024], point[1024], *dash = strstr(line, " - ");
		char fstype[64];

		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s", fstype) != 1)
			continue;
		/* The hierarchy's root only: a mount of a sub-cgroup (ROOT not
		 * "/", e.g. inside a container) would miss the others. */
		if (strcmp(fstype, "cgroup2") != 0 || strcmp(root, "/") != 0)
			continue;
		err = snprintf(out, cap, "%s", point) < (int)cap ? 0 : -ENAMETOOLONG;
		break;
	}
	fclose(f);
	if (err != -ENOENT || !private_path)
		return err;
	err = agent_mkdir_p(private_path, 0700);
	if (err)
		return err;
	if (mount("cgroup2", private_path, "cgroup2", 0, NULL) < 0 && errno != EBUSY)
		return -errno;
	return snprintf(out, cap, "%s", private_path) < (int)cap ? 0 : -ENAMETOOLONG;
}

int agent_cgroup_id(const char *path, uint64_t *id)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = (uint64_t)st.st_ino; /* kernfs node id == inode on 64-bit hosts */
	return 0;
}

int agent_cgroup_level(const char *path, uint32_t *level)
{
	char mnt[512], real_mnt[PATH_MAX], real[PATH_MAX];
	size_t len;
	uint32_t n = 0;
	int err = agent_cgroup2_root(mnt, sizeof(mnt), NULL);

	if (err)
		return err;
	if (!realpath(mnt, real_mnt) || !realpath(path, real))
		return -errno;
	len = strlen(real_mnt);
	if (strcmp(real_mnt, "/") == 0)
		len = 0;
	if (strncmp(real, real_mnt, len) != 0 || (real[len] != '\0' && real[len] != '/'))
		return -ENOENT;
	for (const char *p = real + len; *p; p++)
		if (*p == '/' && p[1] != '\0' && p[1] != '/')
			n++;
	*level = n;
	return 0;
}
