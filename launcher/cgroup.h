/*
 * The job's own cgroups: memory, pids and CPU bound for the job as a
 * whole. On cgroup v2 where the unified hierarchy offers the memory and
 * pids controllers (and cpu, when it offers that too); else on the v1
 * controllers of a hybrid host (memory, pids, cpu, cpuacct and freezer,
 * each under /sys/fs/cgroup/<controller>); else none, and the launcher
 * falls back to rlimits of the command and says why.
 */
#ifndef CORDON_LAUNCHER_CGROUP_H
#define CORDON_LAUNCHER_CGROUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CGROUP_CFS_PERIOD_US 100000
#define CGROUP_PATH 400

/* The v1 controllers a job may get a directory in, in this order. */
enum cgroup_ctl { CG_MEMORY, CG_PIDS, CG_CPU, CG_CPUACCT, CG_FREEZER, CG_N };

/* What the job's cgroups counted, read once at its end. */
struct cgroup_stat {
	long long oom_kills; /* processes the kernel killed at memory_mb */
	long long pids_refused; /* forks refused at pids */
	long long throttled; /* CFS periods the job was held back in */
	long long throttled_usec; /* how long, in all */
	long long cpu_usec; /* CPU time the job used */
	long long memory_peak; /* bytes at most, -1 unknown */
};

struct cgroup_job {
	int version; /* 2 or 1; 0: none (why says why) */
	/* v2: dir[0] alone; v1: each controller's, "" for none (or when
	 * its hierarchy is another's, cpu and cpuacct mounted together). */
	char dir[CG_N][CGROUP_PATH];
	bool own[CG_N]; /* dir[i] is a directory of its own to remove */
	char list[CG_N * CGROUP_PATH]; /* the directories, one per line */
	char why[300];
	bool cpu; /* limits.cpus is enforced */
	char cpu_why[200]; /* when not, why */
	bool ended; /* the stat below was read, the directories removed */
	bool disk_full; /* the hatch's tmpfs had no block or inode left */
	struct cgroup_stat stat;
};

/*
 * Makes the job's cgroups, <hierarchy>/cordon/<job>, with limits' memory_mb
 * (memory.swap.max 0, or memsw equal to it: no way around through swap),
 * pids and cpus (a CFS quota of cpus times the 100 ms period). root is the
 * v2 hierarchy (NULL: /sys/fs/cgroup, else /sys/fs/cgroup/unified), v1_root
 * where the v1 controllers are mounted (NULL: /sys/fs/cgroup). Memory and
 * pids are required of either; CPU is limited where a cpu controller is
 * (cg->cpu, else cg->cpu_why). 0 with cg filled, or -errno with cg->version
 * 0 and the reason in cg->why (nothing is left behind).
 */
int cgroup_job_create(struct cgroup_job *cg, const char *root,
    const char *v1_root, const char *job, const json_t *limits);

/*
 * What the sandbox is given (its spec's cgroup_dir): the job's directories
 * one per line, or NULL when it has none (then memory and pids are rlimits
 * of the command).
 */
const char *cgroup_job_dirs(const struct cgroup_job *cg);

/* "cgroup_v2" or "cgroup_v1" for a cgroup_job_dirs() list ("none" for
 * NULL): how memory and pids are enforced. */
const char *cgroup_kind(const char *dirs);

/* Moves pid into every directory of dirs (a cgroup_job_dirs() list, or
 * one directory): 0 or -errno. */
int cgroup_add(const char *dirs, pid_t pid);

/* Kills every process in the job's cgroups: through cgroup.kill on v2,
 * the freezer on v1 (frozen, each killed, thawed), else one by one. */
void cgroup_job_kill(struct cgroup_job *cg);

/*
 * Once every process of the job is dead: reads what its cgroups counted
 * into cg->stat, whether upper (the hatch's tmpfs, or NULL) is full of
 * blocks or inodes, then removes the directories. Idempotent.
 */
void cgroup_job_end(struct cgroup_job *cg, const char *upper);

/*
 * The limit the job hit, in this order: "wall_clock" or "output" (they
 * stopped it: stop_reason), "memory" (an OOM kill), "pids" (a fork
 * refused), "disk" (its tmpfs full: cg->disk_full or the seal's
 * disk_full), "cpu" (throttled at least once: slowed, not stopped); or
 * NULL. seal may be NULL.
 */
const char *cgroup_job_hit(const struct cgroup_job *cg, const char *stop_reason,
    const json_t *seal);

/*
 * Adds to a run's result: limits.cpu and limits.cgroup (how and where),
 * limit_hit (cgroup_job_hit, or null), limits_hit (every one), and
 * cgroup_stat (what the cgroups counted, when the job had any).
 */
void cgroup_job_report(const struct cgroup_job *cg, json_t *result,
    const char *stop_reason, const json_t *seal);

/*
 * Kills and removes whatever is left of job's cgroups (a launcher that
 * died): in root's and v1_root's hierarchies as cgroup_job_create finds
 * them. 1 when some were found, 0 when none.
 */
int cgroup_job_sweep(const char *root, const char *v1_root, const char *job);

/*
 * Removes every job directory under <hierarchy>/cordon that holds no
 * process and is at least min_age seconds old, whoever's job it was (a
 * launcher that died before its record was made, or whose record went):
 * a running job's always holds its sandbox's init, and a stopped one's is
 * removed by its stop path within moments. How many went.
 */
int cgroup_sweep_stale(const char *root, const char *v1_root, int min_age);

#endif
