/*
 * The job's own cgroups, so that memory, pids and CPU bind every process
 * of the sandbox together. On cgroup v2 where the unified hierarchy offers
 * the memory and pids controllers: one directory, memory.max (and
 * memory.swap.max 0), pids.max, cpu.max when it offers cpu, cgroup.kill at
 * the end. On a hybrid host whose controllers sit in v1 (Debian 12 with
 * systemd's hybrid layout): one directory in each v1 controller, memory
 * (limit_in_bytes, memsw equal to it), pids (pids.max), cpu (the CFS
 * quota), cpuacct (the usage) and freezer (for a kill no fork can race).
 * Where neither can be had, the launcher says why and falls back to
 * rlimits of the command. At the end, what the cgroups counted (OOM kills,
 * refused forks, throttled periods) says which limit the job hit.
 */
#include "cgroup.h"

#include "path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Each v1 controller: its mount's name under v1_root, and a file only its
 * hierarchy has ("tasks" is every v1 hierarchy's, none of v2's). */
static const struct {
	const char *name, *marker;
} v1_ctl[CG_N] = {
	[CG_MEMORY] = { "memory", "memory.limit_in_bytes" },
	[CG_PIDS] = { "pids", "tasks" },
	[CG_CPU] = { "cpu", "cpu.cfs_quota_us" },
	[CG_CPUACCT] = { "cpuacct", "cpuacct.usage" },
	[CG_FREEZER] = { "freezer", "tasks" },
};

/* A reason, cut to fit. */
static void __attribute__((format(printf, 3, 4)))
say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

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

static bool
exists(const char *dir, const char *file)
{
	char path[CGROUP_PATH + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return stat(path, &st) == 0;
}

/* The value after "key " on a line of dir/file, or -1. */
static long long
read_key(const char *dir, const char *file, const char *key)
{
	char path[CGROUP_PATH + 64], line[256];
	size_t n = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ' ') {
			char *end;
			errno = 0;
			v = strtoll(line + n + 1, &end, 10);
			if (errno != 0 || end == line + n + 1)
				v = -1;
			break;
		}
	fclose(f);
	return v;
}

/* The number a one-value file holds, or -1. */
static long long
read_number(const char *dir, const char *file)
{
	char path[CGROUP_PATH + 64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Empty once its processes are gone (which may take a moment after the
 * kill): a few tries. */
static void
remove_dir(const char *dir)
{
	for (int i = 0; i < 50 && rmdir(dir) < 0 && errno == EBUSY; i++)
		usleep(20 * 1000);
}

static void
reset(struct cgroup_job *cg)
{
	char why[sizeof(cg->why)];

	snprintf(why, sizeof(why), "%s", cg->why);
	memset(cg, 0, sizeof(*cg));
	say(cg->why, sizeof(cg->why), "%s", why);
	cg->stat.memory_peak = -1;
}

/* Undoes a half-made job: its directories, last made first. */
static void
unmake(struct cgroup_job *cg)
{
	for (int i = CG_N - 1; i >= 0; i--)
		if (cg->own[i])
			(void)rmdir(cg->dir[i]);
	reset(cg);
}

static void
make_list(struct cgroup_job *cg)
{
	size_t used = 0;

	cg->list[0] = '\0';
	for (int i = 0; i < CG_N; i++)
		if (cg->own[i])
			used += (size_t)snprintf(cg->list + used,
			    sizeof(cg->list) - used, "%s%s",
			    used > 0 ? "\n" : "", cg->dir[i]);
}

/* <hierarchy>/cordon/<job>, made: 0 or -errno with why. */
static int
make_dir(const char *hierarchy, const char *job, char *ret_dir, char *why,
    size_t whylen)
{
	char parent[CGROUP_PATH];
	int r;

	if ((size_t)snprintf(parent, sizeof(parent), "%s/cordon", hierarchy) >=
	    sizeof(parent)) {
		say(why, whylen, "%s: path too long", hierarchy);
		return -ENAMETOOLONG;
	}
	if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		say(why, whylen, "mkdir %s: %s", parent, strerror(-r));
		return r;
	}
	if ((size_t)snprintf(ret_dir, CGROUP_PATH, "%s/%s", parent, job) >=
	    CGROUP_PATH) {
		say(why, whylen, "%s: path too long", parent);
		return -ENAMETOOLONG;
	}
	if (mkdir(ret_dir, 0755) < 0) {
		r = -errno;
		say(why, whylen, "mkdir %s: %s", ret_dir, strerror(-r));
		return r;
	}
	return 0;
}

static int
write_value(const char *dir, const char *file, long long value, char *why,
    size_t whylen)
{
	char text[32];
	int r;

	snprintf(text, sizeof(text), "%lld", value);
	if ((r = path_write_text(dir, file, text)) < 0)
		say(why, whylen, "%s/%s: %s", dir, file, strerror(-r));
	return r;
}

static long long
limit_int(const json_t *limits, const char *key)
{
	json_t *v = json_object_get(limits, key);

	return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* The CFS quota for cpus, in microseconds per period; 0: none. */
static long long
quota_us(const json_t *limits)
{
	json_t *v = json_object_get(limits, "cpus");
	double cpus = json_is_number(v) ? json_number_value(v) : 0;

	if (!(cpus > 0))
		return 0;
	long long q = llround(cpus * CGROUP_CFS_PERIOD_US);
	return q < 1000 ? 1000 : q; /* the kernel's floor: 1 ms */
}

/* --- v2 ------------------------------------------------------------------ */

/* The unified hierarchy and its controllers: 0, or -errno with why. */
static int
v2_probe(const char *root, char *ret_root, char *list, size_t listlen,
    char *why, size_t whylen)
{
	static const char *const guesses[] = { "/sys/fs/cgroup",
		"/sys/fs/cgroup/unified" };
	char path[CGROUP_PATH + 32];

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
		size_t n = fread(list, 1, listlen - 1, f);
		fclose(f);
		list[n] = '\0';
		snprintf(ret_root, CGROUP_PATH, "%s", r);
		return 0;
	}
	say(why, whylen, "no cgroup v2 hierarchy");
	return -ENOENT;
}

static int
v2_create(struct cgroup_job *cg, const char *root, const char *job,
    const json_t *limits)
{
	char hier[CGROUP_PATH], list[512], parent[CGROUP_PATH + 8], text[64];
	char *why = cg->why, *d = cg->dir[0];
	size_t whylen = sizeof(cg->why);
	long long mem = limit_int(limits, "memory_mb");
	long long pids = limit_int(limits, "pids"), quota = quota_us(limits);
	int r;

	if ((r = v2_probe(root, hier, list, sizeof(list), why, whylen)) < 0)
		return r;
	if (!has_word(list, "memory") || !has_word(list, "pids")) {
		say(why, whylen,
		    "the cgroup v2 hierarchy at %s offers no memory or pids "
		    "controller",
		    hier);
		return -ENOTSUP;
	}
	snprintf(parent, sizeof(parent), "%s/cordon", hier);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		say(why, whylen, "mkdir %s: %s", parent, strerror(-r));
		return r;
	}
	/* Controllers pass down one level at a time. cpu alone, first: a
	 * host may refuse it (a realtime task in a child cgroup) and that
	 * must not cost memory and pids. */
	bool cpu = quota > 0 && has_word(list, "cpu") &&
	    path_write_text(hier, "cgroup.subtree_control", "+cpu") == 0 &&
	    path_write_text(parent, "cgroup.subtree_control", "+cpu") == 0;
	if ((r = path_write_text(hier, "cgroup.subtree_control",
		 "+memory +pids")) < 0 ||
	    (r = path_write_text(parent, "cgroup.subtree_control",
		 "+memory +pids")) < 0) {
		say(why, whylen, "enabling memory and pids: %s", strerror(-r));
		return r;
	}
	if ((r = make_dir(hier, job, d, why, whylen)) < 0)
		return r;
	cg->own[0] = true;
	cg->version = 2;
	if (mem > 0) {
		if ((r = write_value(d, "memory.max", mem * 1024 * 1024, why,
			 whylen)) < 0)
			goto fail;
		/* No way around the cap through swap; absent without it. */
		(void)path_write_text(d, "memory.swap.max", "0");
	}
	if (pids > 0 && (r = write_value(d, "pids.max", pids, why, whylen)) < 0)
		goto fail;
	if (quota > 0 && cpu) {
		snprintf(text, sizeof(text), "%lld %d", quota,
		    CGROUP_CFS_PERIOD_US);
		cpu = path_write_text(d, "cpu.max", text) == 0;
	}
	cg->cpu = quota > 0 && cpu;
	if (quota > 0 && !cpu)
		say(cg->cpu_why, sizeof(cg->cpu_why),
		    "none: the cgroup v2 hierarchy at %s gives no cpu "
		    "controller (or refused it)",
		    hier);
	return 0;
fail:
	unmake(cg);
	return r;
}

/* --- v1 ------------------------------------------------------------------ */

static int
v1_create(struct cgroup_job *cg, const char *v1_root, const char *job,
    const json_t *limits)
{
	char hier[CG_N][CGROUP_PATH];
	struct stat st[CG_N];
	bool have[CG_N] = { false };
	char *why = cg->why;
	size_t whylen = sizeof(cg->why);
	long long mem = limit_int(limits, "memory_mb");
	long long pids = limit_int(limits, "pids"), quota = quota_us(limits);
	int r;

	for (int i = 0; i < CG_N; i++) {
		snprintf(hier[i], sizeof(hier[i]), "%s/%s", v1_root,
		    v1_ctl[i].name);
		have[i] = exists(hier[i], v1_ctl[i].marker) &&
		    stat(hier[i], &st[i]) == 0;
	}
	if (!have[CG_MEMORY] || !have[CG_PIDS]) {
		say(why, whylen, "no cgroup v1 %s controller under %s",
		    !have[CG_MEMORY] ? "memory" : "pids", v1_root);
		return -ENOTSUP;
	}
	cg->version = 1;
	for (int i = 0; i < CG_N; i++) {
		if (!have[i])
			continue;
		/* cpu and cpuacct mounted together: one directory. */
		int same = -1;
		for (int k = 0; k < i; k++)
			if (have[k] && st[k].st_dev == st[i].st_dev &&
			    st[k].st_ino == st[i].st_ino)
				same = k;
		if (same >= 0) {
			memcpy(cg->dir[i], cg->dir[same], CGROUP_PATH);
			continue;
		}
		if ((r = make_dir(hier[i], job, cg->dir[i], why, whylen)) < 0)
			goto fail;
		cg->own[i] = true;
	}
	if (mem > 0) {
		const char *d = cg->dir[CG_MEMORY];
		if ((r = write_value(d, "memory.limit_in_bytes",
			 mem * 1024 * 1024, why, whylen)) < 0)
			goto fail;
		/* Memory and swap together at the same cap: no way around it
		 * through swap. Absent (at the root too) without swap
		 * accounting. */
		if (exists(hier[CG_MEMORY], "memory.memsw.limit_in_bytes") &&
		    (r = write_value(d, "memory.memsw.limit_in_bytes",
			 mem * 1024 * 1024, why, whylen)) < 0)
			goto fail;
	}
	if (pids > 0 &&
	    (r = write_value(cg->dir[CG_PIDS], "pids.max", pids, why, whylen)) <
		0)
		goto fail;
	if (quota > 0 && have[CG_CPU]) {
		const char *d = cg->dir[CG_CPU];
		cg->cpu =
		    write_value(d, "cpu.cfs_period_us", CGROUP_CFS_PERIOD_US,
			cg->cpu_why, sizeof(cg->cpu_why)) == 0 &&
		    write_value(d, "cpu.cfs_quota_us", quota, cg->cpu_why,
			sizeof(cg->cpu_why)) == 0;
		if (!cg->cpu) {
			char w[sizeof(cg->cpu_why)];
			say(w, sizeof(w), "%s", cg->cpu_why);
			say(cg->cpu_why, sizeof(cg->cpu_why), "none: %s", w);
		}
	} else if (quota > 0)
		say(cg->cpu_why, sizeof(cg->cpu_why),
		    "none: no cgroup v1 cpu controller under %s", v1_root);
	return 0;
fail:
	unmake(cg);
	return r;
}

/* --- the job's cgroups --------------------------------------------------- */

static bool
job_name_ok(const char *job)
{
	return job != NULL && job[0] != '\0' && strchr(job, '/') == NULL &&
	    strchr(job, '\n') == NULL && strcmp(job, ".") != 0 &&
	    strcmp(job, "..") != 0;
}

int
cgroup_job_create(struct cgroup_job *cg, const char *root, const char *v1_root,
    const char *job, const json_t *limits)
{
	char v2_why[sizeof(cg->why)];
	int r;

	memset(cg, 0, sizeof(*cg));
	reset(cg);
	if (!job_name_ok(job)) {
		say(cg->why, sizeof(cg->why), "a job name unfit for a path");
		return -EINVAL;
	}
	if ((r = v2_create(cg, root, job, limits)) == 0)
		goto made;
	say(v2_why, sizeof(v2_why), "%s", cg->why);
	reset(cg);
	if ((r = v1_create(cg, v1_root != NULL ? v1_root : "/sys/fs/cgroup",
		 job, limits)) == 0)
		goto made;
	char v1_why[sizeof(cg->why)];
	say(v1_why, sizeof(v1_why), "%s", cg->why);
	say(cg->why, sizeof(cg->why), "%s; %s", v2_why, v1_why);
	if (cg->cpu_why[0] == '\0')
		say(cg->cpu_why, sizeof(cg->cpu_why),
		    "none: the job has no cgroup");
	return r;
made:
	if (quota_us(limits) == 0)
		say(cg->cpu_why, sizeof(cg->cpu_why),
		    "none: the manifest sets no cpus");
	make_list(cg);
	return 0;
}

const char *
cgroup_job_dirs(const struct cgroup_job *cg)
{
	return cg->version != 0 && cg->list[0] != '\0' ? cg->list : NULL;
}

const char *
cgroup_kind(const char *dirs)
{
	char dir[CGROUP_PATH];
	size_t n = dirs != NULL ? strcspn(dirs, "\n") : 0;

	if (dirs == NULL)
		return "none";
	/* v1: a directory for memory and one for pids at least, unless they
	 * are mounted together; then its "tasks", which v2 has not. */
	if (dirs[n] == '\n')
		return "cgroup_v1";
	snprintf(dir, sizeof(dir), "%.*s", (int)n, dirs);
	return exists(dir, "tasks") ? "cgroup_v1" : "cgroup_v2";
}

int
cgroup_add(const char *dirs, pid_t pid)
{
	char value[32], dir[CGROUP_PATH];
	int r;

	snprintf(value, sizeof(value), "%d", (int)pid);
	for (const char *p = dirs; *p != '\0';) {
		size_t n = strcspn(p, "\n");
		if (n >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, p, n);
		dir[n] = '\0';
		if ((r = path_write_text(dir, "cgroup.procs", value)) < 0)
			return r;
		p += n;
		p += *p == '\n';
	}
	return 0;
}

/* SIGKILL to every pid in dir/cgroup.procs: how many were listed. */
static int
kill_listed(const char *dir)
{
	char path[CGROUP_PATH + 32];
	int pid, n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fscanf(f, "%d", &pid) == 1)
		if (pid > 0 && kill(pid, SIGKILL) == 0)
			n++;
	fclose(f);
	return n;
}

void
cgroup_job_kill(struct cgroup_job *cg)
{
	if (cg->version == 2) {
		/* cgroup.kill (5.14) ends every process at once; before it,
		 * each listed one (the pid namespace's end takes the rest). */
		if (path_write_text(cg->dir[0], "cgroup.kill", "1") != 0)
			(void)kill_listed(cg->dir[0]);
		return;
	}
	if (cg->version != 1)
		return;
	/* Frozen, no process forks while the list is walked. */
	const char *fz = cg->own[CG_FREEZER] ? cg->dir[CG_FREEZER] : NULL;
	if (fz != NULL && path_write_text(fz, "freezer.state", "FROZEN") == 0) {
		(void)kill_listed(fz);
		(void)path_write_text(fz, "freezer.state", "THAWED");
	}
	for (int i = 0; i < 10 && kill_listed(cg->dir[CG_MEMORY]) > 0; i++)
		usleep(10 * 1000);
}

static void
read_stat(struct cgroup_job *cg)
{
	struct cgroup_stat *s = &cg->stat;

	if (cg->version == 2) {
		const char *d = cg->dir[0];
		long long oom = read_key(d, "memory.events", "oom");
		long long kills = read_key(d, "memory.events", "oom_kill");
		s->oom_kills = kills > oom ? kills : oom;
		s->pids_refused = read_key(d, "pids.events", "max");
		s->throttled = read_key(d, "cpu.stat", "nr_throttled");
		s->throttled_usec = read_key(d, "cpu.stat", "throttled_usec");
		s->cpu_usec = read_key(d, "cpu.stat", "usage_usec");
		s->memory_peak = read_number(d, "memory.peak");
	} else if (cg->version == 1) {
		s->oom_kills = read_key(cg->dir[CG_MEMORY],
		    "memory.oom_control", "oom_kill");
		s->memory_peak = read_number(cg->dir[CG_MEMORY],
		    "memory.max_usage_in_bytes");
		s->pids_refused =
		    read_key(cg->dir[CG_PIDS], "pids.events", "max");
		if (cg->dir[CG_CPU][0] != '\0') {
			s->throttled = read_key(cg->dir[CG_CPU], "cpu.stat",
			    "nr_throttled");
			long long ns = read_key(cg->dir[CG_CPU], "cpu.stat",
			    "throttled_time");
			s->throttled_usec = ns >= 0 ? ns / 1000 : -1;
		}
		if (cg->dir[CG_CPUACCT][0] != '\0') {
			long long ns =
			    read_number(cg->dir[CG_CPUACCT], "cpuacct.usage");
			s->cpu_usec = ns >= 0 ? ns / 1000 : -1;
		}
	}
}

void
cgroup_job_end(struct cgroup_job *cg, const char *upper)
{
	struct statvfs vfs;

	if (cg->ended)
		return;
	cg->ended = true;
	/* Blocks or inodes: an empty file costs no block, but an inode. */
	if (upper != NULL && statvfs(upper, &vfs) == 0)
		cg->disk_full =
		    vfs.f_bavail == 0 || (vfs.f_files > 0 && vfs.f_favail == 0);
	if (cg->version == 0)
		return;
	read_stat(cg);
	for (int i = CG_N - 1; i >= 0; i--)
		if (cg->own[i])
			remove_dir(cg->dir[i]);
}

/* Every limit the job hit, in cgroup_job_hit's order: how many. */
static size_t
hits(const struct cgroup_job *cg, const char *stop_reason, const json_t *seal,
    const char *out[6])
{
	size_t n = 0;

	if (stop_reason != NULL && strcmp(stop_reason, "wall_clock") == 0)
		out[n++] = "wall_clock";
	if (stop_reason != NULL && strcmp(stop_reason, "output_limit") == 0)
		out[n++] = "output";
	if (cg->stat.oom_kills > 0)
		out[n++] = "memory";
	if (cg->stat.pids_refused > 0)
		out[n++] = "pids";
	if (cg->disk_full || json_is_true(json_object_get(seal, "disk_full")))
		out[n++] = "disk";
	if (cg->stat.throttled > 0)
		out[n++] = "cpu";
	return n;
}

const char *
cgroup_job_hit(const struct cgroup_job *cg, const char *stop_reason,
    const json_t *seal)
{
	const char *out[6];

	return hits(cg, stop_reason, seal, out) > 0 ? out[0] : NULL;
}

void
cgroup_job_report(const struct cgroup_job *cg, json_t *result,
    const char *stop_reason, const json_t *seal)
{
	json_t *limits = json_object_get(result, "limits");
	const char *out[6];
	size_t n = hits(cg, stop_reason, seal, out);
	json_t *all = json_array();
	char where[CG_N * CGROUP_PATH + 8];

	for (size_t i = 0; i < n; i++)
		json_array_append_new(all, json_string(out[i]));
	json_object_set_new(result, "limit_hit",
	    n > 0 ? json_string(out[0]) : json_null());
	json_object_set_new(result, "limits_hit", all);
	if (!json_is_object(limits))
		return;
	if (cg->version != 0 && cg->cpu)
		json_object_set_new(limits, "cpu",
		    json_string(cg->version == 2 ? "cgroup_v2" : "cgroup_v1"));
	else
		json_object_set_new(limits, "cpu",
		    json_string(cg->cpu_why[0] != '\0' ? cg->cpu_why : "none"));
	if (cg->version == 0) {
		snprintf(where, sizeof(where), "none: %s",
		    cg->why[0] != '\0' ? cg->why : "not tried");
	} else {
		/* The directories, separated by spaces. */
		snprintf(where, sizeof(where), "%s", cg->list);
		for (char *p = where; (p = strchr(p, '\n')) != NULL;)
			*p = ' ';
	}
	json_object_set_new(limits, "cgroup", json_string(where));
	if (cg->version != 0 && cg->ended)
		json_object_set_new(result, "cgroup_stat",
		    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "oom_kills",
			(json_int_t)cg->stat.oom_kills, "pids_refused",
			(json_int_t)cg->stat.pids_refused, "cpu_throttled",
			(json_int_t)cg->stat.throttled, "cpu_throttled_usec",
			(json_int_t)cg->stat.throttled_usec, "cpu_usec",
			(json_int_t)cg->stat.cpu_usec, "memory_peak_bytes",
			(json_int_t)cg->stat.memory_peak));
}

int
cgroup_job_sweep(const char *root, const char *v1_root, const char *job)
{
	struct cgroup_job cg;
	char hier[CGROUP_PATH], list[512], why[64], path[CGROUP_PATH + 80];
	struct stat st;

	if (!job_name_ok(job))
		return 0;
	memset(&cg, 0, sizeof(cg));
	reset(&cg);
	if (v2_probe(root, hier, list, sizeof(list), why, sizeof(why)) == 0) {
		int n = snprintf(path, sizeof(path), "%s/cordon/%s", hier, job);
		if (n > 0 && n < CGROUP_PATH && stat(path, &st) == 0 &&
		    S_ISDIR(st.st_mode)) {
			memcpy(cg.dir[0], path, (size_t)n + 1);
			cg.own[0] = true;
			cg.version = 2;
		}
	}
	if (cg.version == 0) {
		for (int i = 0; i < CG_N; i++) {
			int n = snprintf(path, sizeof(path), "%s/%s/cordon/%s",
			    v1_root != NULL ? v1_root : "/sys/fs/cgroup",
			    v1_ctl[i].name, job);
			if (n > 0 && n < CGROUP_PATH && stat(path, &st) == 0 &&
			    S_ISDIR(st.st_mode)) {
				memcpy(cg.dir[i], path, (size_t)n + 1);
				cg.own[i] = true;
				cg.version = 1;
			}
		}
		/* Co-mounted controllers show one directory twice. */
		for (int i = 0; i < CG_N; i++)
			for (int k = 0; k < i; k++)
				if (cg.own[i] && cg.own[k] &&
				    stat(cg.dir[i], &st) == 0) {
					struct stat sk;
					if (stat(cg.dir[k], &sk) == 0 &&
					    sk.st_ino == st.st_ino &&
					    sk.st_dev == st.st_dev)
						cg.own[i] = false;
				}
	}
	if (cg.version == 0)
		return 0;
	if (cg.version == 1 && !cg.own[CG_MEMORY])
		for (int i = 0; i < CG_N; i++)
			if (cg.own[i]) {
				/* The kill walks memory's list: any will do. */
				snprintf(cg.dir[CG_MEMORY], CGROUP_PATH, "%s",
				    cg.dir[i]);
				break;
			}
	cgroup_job_kill(&cg);
	cgroup_job_end(&cg, NULL);
	return 1;
}

/* Whether dir lists no process (or has no list: not a cgroup's). */
static bool
no_process(const char *dir)
{
	char path[CGROUP_PATH + 120];
	int pid;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >=
	    sizeof(path))
		return false;
	if ((f = fopen(path, "re")) == NULL)
		return errno == ENOENT;
	bool none = fscanf(f, "%d", &pid) != 1;
	fclose(f);
	return none;
}

/* The empty job directories under hierarchy/cordon older than min_age:
 * how many were removed. */
static int
sweep_stale_in(const char *hierarchy, time_t min_age)
{
	char parent[CGROUP_PATH], dir[CGROUP_PATH + 80];
	time_t now = time(NULL);
	struct dirent *d;
	struct stat st;
	int n = 0;
	DIR *dp;

	if ((size_t)snprintf(parent, sizeof(parent), "%s/cordon", hierarchy) >=
		sizeof(parent) ||
	    (dp = opendir(parent)) == NULL)
		return 0;
	while ((d = readdir(dp)) != NULL) {
		if (!job_name_ok(d->d_name) ||
		    fstatat(dirfd(dp), d->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			0 ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtime < min_age)
			continue;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", parent,
			d->d_name) >= CGROUP_PATH)
			continue;
		if (no_process(dir) && rmdir(dir) == 0)
			n++;
	}
	closedir(dp);
	return n;
}

int
cgroup_sweep_stale(const char *root, const char *v1_root, int min_age)
{
	char hier[CGROUP_PATH], list[512], why[64];
	int n = 0;

	if (v2_probe(root, hier, list, sizeof(list), why, sizeof(why)) == 0)
		n += sweep_stale_in(hier, min_age);
	for (int i = 0; i < CG_N; i++) {
		snprintf(hier, sizeof(hier), "%s/%s",
		    v1_root != NULL ? v1_root : "/sys/fs/cgroup",
		    v1_ctl[i].name);
		n += sweep_stale_in(hier, min_age);
	}
	return n;
}
