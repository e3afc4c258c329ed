/*
 * The job's own cgroup v2, where the host's unified hierarchy offers the
 * memory and pids controllers and may be written; otherwise the launcher
 * falls back to rlimits and says why.
 */
#ifndef CORDON_LAUNCHER_CGROUP_H
#define CORDON_LAUNCHER_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Finds the hierarchy: root if given (the launcher's cgroup_root), else
 * /sys/fs/cgroup or, on a hybrid host, /sys/fs/cgroup/unified. 0 with its
 * path in ret_root when it offers memory and pids; -ENOENT or -ENOTSUP
 * with the reason in why.
 */
int cgroup_probe(const char *root, char *ret_root, size_t len, char *why,
    size_t whylen);

/* Makes <root>/cordon/<job> with memory.max (and memory.swap.max 0) and
 * pids.max (0: no limit): its path in ret_dir; 0 or -errno with why. */
int cgroup_create(const char *root, const char *job, long long memory_mb,
    long long pids, char *ret_dir, size_t len, char *why, size_t whylen);

/* Moves pid into the cgroup: 0 or -errno. */
int cgroup_add(const char *dir, pid_t pid);

/* Kills every process in it. */
void cgroup_kill(const char *dir);

/* Removes it, once empty. */
void cgroup_remove(const char *dir);

#endif
