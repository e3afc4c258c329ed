/*
 * A cgroup v2 of the job's own, where the host offers one: memory.max and
 * pids.max bind every process of the sandbox together, and cgroup.kill
 * ends them all at once. Where the unified hierarchy has no memory or
 * pids controller (a hybrid host whose controllers sit in v1), or cannot
 * be written, the launcher says why and falls back to rlimits.
 */
#include "cgroup.h"

#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool
has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

int
cgroup_probe(const char *root, char *ret_root, size_t len, char *why,
    size_t whylen)
{
	static const char *const guesses[] = { "/sys/fs/cgroup",
		"/sys/fs/cgroup/unified" };
	char path[600], list[512];
	const char *found = NULL;

	for (size_t i = 0; i < 2; i++) {
		const char *r = root != NULL ? root : guesses[i];
		FILE *f;
		snprintf(path, sizeof(path), "%s/cgroup.controllers", r);
		f = fopen(path, "re");
		if (f == NULL) {
			if (root != NULL)
				break;
			continue;
		}
		size_t n = fread(list, 1, sizeof(list) - 1, f);
		fclose(f);
		list[n] = '\0';
		found = r;
		break;
	}
	if (found == NULL) {
		snprintf(why, whylen, "no cgroup v2 hierarchy");
		return -ENOENT;
	}
	if (!has_word(list, "memory") || !has_word(list, "pids")) {
		snprintf(why, whylen,
		    "the cgroup v2 hierarchy at %s offers no memory or pids "
		    "controller",
		    found);
		return -ENOTSUP;
	}
	snprintf(ret_root, len, "%s", found);
	return 0;
}

int
cgroup_create(const char *root, const char *job, long long memory_mb,
    long long pids, char *ret_dir, size_t len, char *why, size_t whylen)
{
	char parent[600], value[64];
	int r;

	snprintf(parent, sizeof(parent), "%s/cordon", root);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(why, whylen, "mkdir %s: %s", parent, strerror(-r));
		return r;
	}
	/* Controllers pass down one level at a time. */
	if ((r = path_write_text(root, "cgroup.subtree_control",
		 "+memory +pids")) < 0 ||
	    (r = path_write_text(parent, "cgroup.subtree_control",
		 "+memory +pids")) < 0) {
		snprintf(why, whylen, "enabling memory and pids: %s",
		    strerror(-r));
		return r;
	}
	snprintf(ret_dir, len, "%s/%s", parent, job);
	if (mkdir(ret_dir, 0755) < 0) {
		r = -errno;
		snprintf(why, whylen, "mkdir %s: %s", ret_dir, strerror(-r));
		return r;
	}
	if (memory_mb > 0) {
		snprintf(value, sizeof(value), "%lld", memory_mb * 1024 * 1024);
		if ((r = path_write_text(ret_dir, "memory.max", value)) < 0) {
			snprintf(why, whylen, "memory.max: %s", strerror(-r));
			goto fail;
		}
		/* No way around the cap through swap; absent without it. */
		(void)path_write_text(ret_dir, "memory.swap.max", "0");
	}
	if (pids > 0) {
		snprintf(value, sizeof(value), "%lld", pids);
		if ((r = path_write_text(ret_dir, "pids.max", value)) < 0) {
			snprintf(why, whylen, "pids.max: %s", strerror(-r));
			goto fail;
		}
	}
	return 0;
fail:
	(void)rmdir(ret_dir);
	return r;
}

int
cgroup_add(const char *dir, pid_t pid)
{
	char value[32];

	snprintf(value, sizeof(value), "%d", (int)pid);
	return path_write_text(dir, "cgroup.procs", value);
}

void
cgroup_kill(const char *dir)
{
	char path[600];
	FILE *f;
	int pid;

	/* cgroup.kill (5.14) ends every process at once; before it, each
	 * listed one (the pid namespace's end takes the rest). */
	if (path_write_text(dir, "cgroup.kill", "1") == 0)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fscanf(f, "%d", &pid) == 1)
		if (pid > 0)
			(void)kill(pid, SIGKILL);
	fclose(f);
}

void
cgroup_remove(const char *dir)
{
	/* Empty once its processes are reaped: a few tries. */
	for (int i = 0; i < 50 && rmdir(dir) < 0 && errno == EBUSY; i++)
		usleep(20 * 1000);
}
