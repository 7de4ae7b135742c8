/* SPDX-License-Identifier: Apache-2.0 */
/* pin_dir.c - the agent's corner of bpffs: mount bpffs where it is missing,
 * create the pin root, remove a pin directory.  Removing a pin drops the
 * file's reference only: a map or link another process still holds lives
 * on. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "agent_load.h"

#define BPF_FS_MAGIC_NUMBER 0xcafe4a11
#define BPFFS_DEFAULT "/sys/fs/bpf"

static bool on_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && (unsigned long)st.f_type == BPF_FS_MAGIC_NUMBER;
}

int agent_mkdir_p(const char *dir, mode_t mode)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path) || dir[0] != '/')
		return -EINVAL;
	memcpy(path, dir, len + 1);
	for (char *p = path + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char saved = *p;

			*p = '\0';
			if (mkdir(path, mode) < 0 && errno != EEXIST)
				return -errno;
			*p = saved;
			if (saved == '\0')
				break;
		}
	}
	return 0;
}

int agent_pin_root_ensure(const char *root)
{
	int err;

	if (root[0] != '/')
		return -EINVAL;
	/* Not mounted here (a fresh mount namespace, a minimal host): mount
	 * it, so that pins land on bpffs rather than fail. */
	if (strncmp(root, BPFFS_DEFAULT "/", strlen(BPFFS_DEFAULT) + 1) == 0 && !on_bpffs(BPFFS_DEFAULT) &&
	    mount("bpf", BPFFS_DEFAULT, "bpf", 0, "mode=0700") < 0)
		return -errno;
	err = agent_mkdir_p(root, 0700);
	if (err)
		return err;
	return on_bpffs(root) ? 0 : -ENOTSUP;
}

int agent_pin_dir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int err = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			err = -errno;
	}
	closedir(d);
	if (rmdir(dir) < 0 && errno != ENOENT)
		err = err ? err : -errno;
	return err;
}
