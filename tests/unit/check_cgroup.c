/*
 * launcher/cgroup.c against hierarchies laid out as directories: what it
 * writes for a job on cgroup v2 and on the v1 controllers of a hybrid host
 * (memory, pids, cpu, cpuacct, freezer), that it falls back with a reason
 * when it cannot have memory and pids, how it reads what the cgroups
 * counted into the limit the job hit, and that its kill reaches a process
 * listed in the job's cgroup. The kernel's enforcement is
 * tests/integration/it_limits.c's.
 */
#include "cgroup.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char v1[PATH_MAX], v2[PATH_MAX];

static void
put(const char *dir, const char *rel, const char *text)
{
	char path[PATH_MAX + 200];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	testutil_write_text(path, text);
}

static void
mkdir_in(const char *dir, const char *rel)
{
	char path[PATH_MAX + 200];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

/* The first line of dir/rel, newline dropped. */
static const char *
line_of(const char *dir, const char *rel)
{
	static char buf[256];
	char path[PATH_MAX + 200];
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	n = testutil_read_file(path, buf, sizeof(buf) - 1);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static bool
there(const char *dir, const char *rel)
{
	char path[PATH_MAX + 200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return stat(path, &st) == 0;
}

/* A hybrid host: v2 empty (no cgroup.controllers at v2), v1 controllers
 * each with the file only its hierarchy has; cpu and cpuacct apart, or
 * mounted together (then cpu and cpuacct are links to "cpu,cpuacct"). */
static void
hybrid(bool together, bool with_pids)
{
	testutil_at(v1, "v1");
	testutil_at(v2, "unified");
	mkdir_in(testutil_dir, "v1");
	mkdir_in(testutil_dir, "unified");
	mkdir_in(v1, "memory");
	put(v1, "memory/memory.limit_in_bytes", "9223372036854771712\n");
	put(v1, "memory/memory.memsw.limit_in_bytes", "9223372036854771712\n");
	if (with_pids) {
		mkdir_in(v1, "pids");
		put(v1, "pids/tasks", "");
	}
	if (together) {
		char a[PATH_MAX + 20], b[PATH_MAX + 20];
		mkdir_in(v1, "cpu,cpuacct");
		put(v1, "cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
		put(v1, "cpu,cpuacct/cpuacct.usage", "0\n");
		snprintf(a, sizeof(a), "%s/cpu", v1);
		snprintf(b, sizeof(b), "%s/cpuacct", v1);
		ck_assert_int_eq(symlink("cpu,cpuacct", a), 0);
		ck_assert_int_eq(symlink("cpu,cpuacct", b), 0);
	} else {
		mkdir_in(v1, "cpu");
		put(v1, "cpu/cpu.cfs_quota_us", "-1\n");
		mkdir_in(v1, "cpuacct");
		put(v1, "cpuacct/cpuacct.usage", "0\n");
	}
	mkdir_in(v1, "freezer");
	put(v1, "freezer/tasks", "");
}

static json_t *
limits(const char *text)
{
	return testutil_json(text, 0);
}

START_TEST(v1_controllers_bind_the_job)
{
	struct cgroup_job cg;
	json_t *l = limits("{\"memory_mb\": 256, \"pids\": 32, \"cpus\": 0.5}");

	hybrid(false, true);
	ck_assert_int_eq(cgroup_job_create(&cg, v2, v1, "j1", l), 0);
	ck_assert_int_eq(cg.version, 1);
	ck_assert(cg.cpu);
	ck_assert_str_eq(line_of(v1, "memory/cordon/j1/memory.limit_in_bytes"),
	    "268435456");
	/* Swap and memory at the one cap: no way around it. */
	ck_assert_str_eq(line_of(v1,
			     "memory/cordon/j1/memory.memsw.limit_in_bytes"),
	    "268435456");
	ck_assert_str_eq(line_of(v1, "pids/cordon/j1/pids.max"), "32");
	ck_assert_str_eq(line_of(v1, "cpu/cordon/j1/cpu.cfs_quota_us"),
	    "50000");
	ck_assert_str_eq(line_of(v1, "cpu/cordon/j1/cpu.cfs_period_us"),
	    "100000");
	ck_assert(there(v1, "cpuacct/cordon/j1"));
	ck_assert(there(v1, "freezer/cordon/j1"));

	/* The sandbox's init goes into each, one directory per line. */
	const char *dirs = cgroup_job_dirs(&cg);
	ck_assert_ptr_nonnull(dirs);
	ck_assert_str_eq(cgroup_kind(dirs), "cgroup_v1");
	size_t lines = 1;
	for (const char *p = dirs; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	ck_assert_uint_eq(lines, 5);
	ck_assert_int_eq(cgroup_add(dirs, 4242), 0);
	ck_assert_str_eq(line_of(v1, "memory/cordon/j1/cgroup.procs"), "4242");
	ck_assert_str_eq(line_of(v1, "pids/cordon/j1/cgroup.procs"), "4242");
	ck_assert_str_eq(line_of(v1, "cpu/cordon/j1/cgroup.procs"), "4242");
	ck_assert_str_eq(line_of(v1, "freezer/cordon/j1/cgroup.procs"), "4242");
	/* A second job of the same name is refused, not shared. */
	struct cgroup_job again;
	ck_assert_int_lt(cgroup_job_create(&again, v2, v1, "j1", l), 0);
	ck_assert_int_eq(again.version, 0);
	json_decref(l);
}
END_TEST

START_TEST(v1_cpu_and_cpuacct_together_make_one_directory)
{
	struct cgroup_job cg;
	json_t *l = limits("{\"memory_mb\": 64, \"pids\": 8, \"cpus\": 2}");

	hybrid(true, true);
	ck_assert_int_eq(cgroup_job_create(&cg, v2, v1, "j2", l), 0);
	ck_assert_int_eq(cg.version, 1);
	ck_assert_str_eq(cg.dir[CG_CPU], cg.dir[CG_CPUACCT]);
	ck_assert(cg.own[CG_CPU]);
	ck_assert(!cg.own[CG_CPUACCT]);
	ck_assert_str_eq(line_of(v1, "cpu,cpuacct/cordon/j2/cpu.cfs_quota_us"),
	    "200000");
	size_t lines = 1;
	for (const char *p = cg.list; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	ck_assert_uint_eq(lines, 4);
	json_decref(l);
}
END_TEST

/* Without a pids controller in v1 (and none in v2) there is no cgroup:
 * the reason names both, and nothing is made. */
START_TEST(without_memory_and_pids_there_is_none_and_why)
{
	struct cgroup_job cg;
	json_t *l = limits("{\"memory_mb\": 64, \"pids\": 8, \"cpus\": 1}");

	hybrid(false, false);
	ck_assert_int_lt(cgroup_job_create(&cg, v2, v1, "j3", l), 0);
	ck_assert_int_eq(cg.version, 0);
	ck_assert_ptr_null(cgroup_job_dirs(&cg));
	ck_assert_msg(strstr(cg.why, "no cgroup v2 hierarchy") != NULL, "%s",
	    cg.why);
	ck_assert_msg(strstr(cg.why, "pids") != NULL, "%s", cg.why);
	ck_assert(!there(v1, "memory/cordon/j3"));
	ck_assert(!cg.cpu);
	/* The report says so. */
	json_t *r = testutil_json("{\"limits\": {}}", 0);
	cgroup_job_end(&cg, NULL);
	cgroup_job_report(&cg, r, "exit", NULL);
	json_t *lim = json_object_get(r, "limits");
	ck_assert_msg(strncmp(json_string_value(json_object_get(lim, "cgroup")),
			  "none: ", 6) == 0,
	    "%s", json_string_value(json_object_get(lim, "cgroup")));
	ck_assert_msg(strncmp(json_string_value(json_object_get(lim, "cpu")),
			  "none: ", 6) == 0,
	    "%s", json_string_value(json_object_get(lim, "cpu")));
	ck_assert(json_is_null(json_object_get(r, "limit_hit")));
	ck_assert_ptr_null(json_object_get(r, "cgroup_stat"));
	json_decref(r);
	json_decref(l);
	/* A name that is not one path component is refused. */
	ck_assert_int_eq(cgroup_job_create(&cg, v2, v1, "../x", NULL), -EINVAL);
}
END_TEST

/* What the v1 cgroups counted: an OOM kill, refused forks, throttled
 * periods; the limit hit is the first in the documented order. */
START_TEST(v1_counters_say_which_limit_was_hit)
{
	struct cgroup_job cg;
	json_t *l = limits("{\"memory_mb\": 256, \"pids\": 32, \"cpus\": 0.5}");

	hybrid(false, true);
	ck_assert_int_eq(cgroup_job_create(&cg, v2, v1, "j4", l), 0);
	put(v1, "memory/cordon/j4/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
	put(v1, "memory/cordon/j4/memory.max_usage_in_bytes", "268435456\n");
	put(v1, "pids/cordon/j4/pids.events", "max 5\n");
	put(v1, "cpu/cordon/j4/cpu.stat",
	    "nr_periods 10\nnr_throttled 7\nthrottled_time 3000000\n");
	put(v1, "cpuacct/cordon/j4/cpuacct.usage", "123456789\n");
	cgroup_job_end(&cg, NULL);
	ck_assert_int_eq(cg.stat.oom_kills, 2);
	ck_assert_int_eq(cg.stat.pids_refused, 5);
	ck_assert_int_eq(cg.stat.throttled, 7);
	ck_assert_int_eq(cg.stat.throttled_usec, 3000);
	ck_assert_int_eq(cg.stat.cpu_usec, 123456);
	ck_assert_int_eq(cg.stat.memory_peak, 268435456);
	ck_assert_str_eq(cgroup_job_hit(&cg, "exit", NULL), "memory");
	ck_assert_str_eq(cgroup_job_hit(&cg, "wall_clock", NULL), "wall_clock");
	ck_assert_str_eq(cgroup_job_hit(&cg, "output_limit", NULL), "output");

	json_t *r = testutil_json("{\"limits\": {\"memory\": \"x\"}}", 0);
	cgroup_job_report(&cg, r, "exit", NULL);
	ck_assert_str_eq(json_string_value(json_object_get(r, "limit_hit")),
	    "memory");
	json_t *all = json_object_get(r, "limits_hit");
	ck_assert_uint_eq(json_array_size(all), 3);
	ck_assert_str_eq(json_string_value(json_array_get(all, 1)), "pids");
	ck_assert_str_eq(json_string_value(json_array_get(all, 2)), "cpu");
	json_t *lim = json_object_get(r, "limits");
	ck_assert_str_eq(json_string_value(json_object_get(lim, "cpu")),
	    "cgroup_v1");
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(lim, "cgroup")),
		"/memory/cordon/j4 "));
	json_t *cs = json_object_get(r, "cgroup_stat");
	ck_assert_int_eq(json_integer_value(
			     json_object_get(cs, "cpu_throttled")),
	    7);
	json_decref(r);

	/* Only throttled: cpu, and only that. */
	put(v1, "memory/cordon/j4/memory.oom_control", "oom_kill 0\n");
	put(v1, "pids/cordon/j4/pids.events", "max 0\n");
	cg.ended = false;
	cgroup_job_end(&cg, NULL);
	ck_assert_str_eq(cgroup_job_hit(&cg, "exit", NULL), "cpu");
	/* A full disk, as the seal saw it, comes before. */
	json_t *seal = testutil_json("{\"disk_full\": true}", 0);
	ck_assert_str_eq(cgroup_job_hit(&cg, "exit", seal), "disk");
	json_decref(seal);
	json_decref(l);
}
END_TEST

/* cgroup v2 with cpu: memory.max, swap 0, pids.max, cpu.max; and what
 * memory.events and pids.events count. */
START_TEST(v2_with_cpu)
{
	struct cgroup_job cg;
	json_t *l =
	    limits("{\"memory_mb\": 512, \"pids\": 64, \"cpus\": 0.25}");

	testutil_at(v2, "v2");
	mkdir_in(testutil_dir, "v2");
	put(v2, "cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
	ck_assert_int_eq(cgroup_job_create(&cg, v2, "/nonexistent", "j5", l),
	    0);
	ck_assert_int_eq(cg.version, 2);
	ck_assert(cg.cpu);
	ck_assert_str_eq(line_of(v2, "cordon/j5/memory.max"), "536870912");
	ck_assert_str_eq(line_of(v2, "cordon/j5/memory.swap.max"), "0");
	ck_assert_str_eq(line_of(v2, "cordon/j5/pids.max"), "64");
	ck_assert_str_eq(line_of(v2, "cordon/j5/cpu.max"), "25000 100000");
	/* cpu asked for alone, then memory and pids. */
	ck_assert_str_eq(line_of(v2, "cgroup.subtree_control"),
	    "+memory +pids");
	ck_assert_str_eq(cgroup_kind(cgroup_job_dirs(&cg)), "cgroup_v2");
	ck_assert_ptr_null(strchr(cgroup_job_dirs(&cg), '\n'));
	put(v2, "cordon/j5/memory.events",
	    "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n");
	put(v2, "cordon/j5/pids.events", "max 0\n");
	put(v2, "cordon/j5/cpu.stat",
	    "usage_usec 700\nuser_usec 600\nsystem_usec 100\n"
	    "nr_periods 3\nnr_throttled 0\nthrottled_usec 0\n");
	cgroup_job_end(&cg, NULL);
	ck_assert_int_eq(cg.stat.oom_kills, 1);
	ck_assert_int_eq(cg.stat.cpu_usec, 700);
	ck_assert_int_eq(cg.stat.memory_peak, -1);
	ck_assert_str_eq(cgroup_job_hit(&cg, "exit", NULL), "memory");
	json_decref(l);
}
END_TEST

/* v2 without a cpu controller: memory and pids still, CPU not, and why. */
START_TEST(v2_without_cpu_says_so)
{
	struct cgroup_job cg;
	json_t *l = limits("{\"memory_mb\": 64, \"pids\": 8, \"cpus\": 1}");

	testutil_at(v2, "v2");
	mkdir_in(testutil_dir, "v2");
	put(v2, "cgroup.controllers", "memory pids\n");
	ck_assert_int_eq(cgroup_job_create(&cg, v2, "/nonexistent", "j6", l),
	    0);
	ck_assert_int_eq(cg.version, 2);
	ck_assert(!cg.cpu);
	ck_assert(!there(v2, "cordon/j6/cpu.max"));
	ck_assert_msg(strstr(cg.cpu_why, "cpu") != NULL, "%s", cg.cpu_why);
	json_decref(l);
	/* No cpus in the limits: none asked for. */
	l = limits("{\"memory_mb\": 64, \"pids\": 8}");
	put(v2, "cgroup.controllers", "cpu memory pids\n");
	ck_assert_int_eq(cgroup_job_create(&cg, v2, "/nonexistent", "j7", l),
	    0);
	ck_assert(!cg.cpu);
	ck_assert(!there(v2, "cordon/j7/cpu.max"));
	ck_assert_str_eq(cg.cpu_why, "none: the manifest sets no cpus");
	json_decref(l);
}
END_TEST

/* The kill reaches a process listed in the job's cgroup (here through
 * the v1 freezer's list), and the sweep of a dead launcher's job finds
 * its directories. */
START_TEST(the_kill_and_the_sweep_reach_the_job)
{
	struct cgroup_job cg;
	json_t *l = limits("{\"memory_mb\": 64, \"pids\": 8}");
	int st;

	hybrid(false, true);
	ck_assert_int_eq(cgroup_job_create(&cg, v2, v1, "j8", l), 0);
	pid_t kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_eq(cgroup_add(cgroup_job_dirs(&cg), kid), 0);
	cgroup_job_kill(&cg);
	ck_assert_int_eq(waitpid(kid, &st, 0), kid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* The freezer was thawed after. */
	ck_assert_str_eq(line_of(v1, "freezer/cordon/j8/freezer.state"),
	    "THAWED");
	/* Its pid is dead and reaped: the sweep kills nothing else. */
	put(v1, "memory/cordon/j8/cgroup.procs", "");
	put(v1, "freezer/cordon/j8/cgroup.procs", "");
	ck_assert_int_eq(cgroup_job_sweep(v2, v1, "j8"), 1);
	ck_assert_int_eq(cgroup_job_sweep(v2, v1, "no-such-job"), 0);
	json_decref(l);
}
END_TEST

/* How memory and pids are enforced, from the sandbox's list alone: v1
 * also when every controller is mounted in one hierarchy (one directory,
 * with the "tasks" that only v1 has). */
START_TEST(the_kind_of_a_list)
{
	char one[PATH_MAX];

	testutil_at(one, "one");
	mkdir_in(testutil_dir, "one");
	ck_assert_str_eq(cgroup_kind(one), "cgroup_v2");
	put(one, "tasks", "");
	ck_assert_str_eq(cgroup_kind(one), "cgroup_v1");
	ck_assert_str_eq(cgroup_kind("/a/memory/cordon/j\n/a/pids/cordon/j"),
	    "cgroup_v1");
	ck_assert_str_eq(cgroup_kind(NULL), "none");
}
END_TEST

/* The directories a launcher that died left without a record: the empty
 * ones a minute old go, a young one stays (it may be a job starting). */
START_TEST(stale_empty_directories_are_swept)
{
	char old[PATH_MAX + 64], young[PATH_MAX + 64];
	struct timespec t[2] = { { .tv_sec = time(NULL) - 7200 },
		{ .tv_sec = time(NULL) - 7200 } };

	hybrid(false, true);
	mkdir_in(v1, "memory/cordon");
	mkdir_in(v1, "memory/cordon/job_old");
	mkdir_in(v1, "memory/cordon/job_young");
	mkdir_in(v1, "pids/cordon");
	mkdir_in(v1, "pids/cordon/job_old");
	snprintf(old, sizeof(old), "%s/memory/cordon/job_old", v1);
	snprintf(young, sizeof(young), "%s/memory/cordon/job_young", v1);
	ck_assert_int_eq(utimensat(AT_FDCWD, old, t, 0), 0);
	snprintf(old, sizeof(old), "%s/pids/cordon/job_old", v1);
	ck_assert_int_eq(utimensat(AT_FDCWD, old, t, 0), 0);
	ck_assert_int_eq(cgroup_sweep_stale(v2, v1, 60), 2);
	ck_assert(!there(v1, "memory/cordon/job_old"));
	ck_assert(!there(v1, "pids/cordon/job_old"));
	ck_assert(there(v1, "memory/cordon/job_young"));
	ck_assert_int_eq(cgroup_sweep_stale(v2, v1, 60), 0);
}
END_TEST

static Suite *
cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("cgroup");

	testutil_tmp_fixture(tc, "cgroup");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, v1_controllers_bind_the_job);
	tcase_add_test(tc, v1_cpu_and_cpuacct_together_make_one_directory);
	tcase_add_test(tc, without_memory_and_pids_there_is_none_and_why);
	tcase_add_test(tc, v1_counters_say_which_limit_was_hit);
	tcase_add_test(tc, v2_with_cpu);
	tcase_add_test(tc, v2_without_cpu_says_so);
	tcase_add_test(tc, the_kill_and_the_sweep_reach_the_job);
	tcase_add_test(tc, the_kind_of_a_list);
	tcase_add_test(tc, stale_empty_directories_are_swept);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(cgroup_suite());
}
