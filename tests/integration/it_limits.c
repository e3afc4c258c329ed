/*
 * Per-job limits on the real kernel of this host (a hybrid one: memory,
 * pids, cpu, cpuacct and freezer in v1, an empty v2): memory, pids and CPU
 * bind the job as a whole, not each process; node starts under a small
 * memory_mb (no RLIMIT_AS); the job's tmpfs mounts stop an inode flood at
 * their cap; the result (limit_hit) and the one-line summary say which
 * limit the job hit; and `cordon recover` removes the cgroups a killed
 * launcher left. Each test runs a script under /bin/sh -c in a real
 * sandbox and reads what it printed from the run's result.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct stack st;

static void
put_manifest(const char *name, const char *limits)
{
	char text[1024], path[128];
	json_t *m;

	snprintf(text, sizeof(text),
	    "{\"name\": \"%s\", \"command\": [\"/bin/true\"], "
	    "\"limits\": %s}",
	    name, limits);
	m = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(m);
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", path, st.admin, NULL, m));
}

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 370000 };

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	put_manifest("mem",
	    "{\"wall_seconds\": 30, \"memory_mb\": 256, \"pids\": 64}");
	put_manifest("forks", "{\"wall_seconds\": 30, \"pids\": 32}");
	put_manifest("tenth", "{\"wall_seconds\": 30, \"cpus\": 0.1}");
	put_manifest("flood",
	    "{\"wall_seconds\": 30, \"disk_mb\": 16, \"memory_mb\": 512}");
}

static void
teardown(void)
{
	stack_stop(&st);
}

/* Runs `cordon run` of manifest with script under /bin/sh -c, --json or
 * not: the exit status; its stdout and stderr in out and err. */
static int
run(const char *manifest, const char *script, bool json, char *out,
    size_t outlen, char *err, size_t errlen)
{
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--config",
		st.launcher_cfg, "--manifest", (char *)manifest, "--",
		"/bin/sh", "-c", (char *)script, NULL, NULL };

	if (json) {
		memmove(argv + 3, argv + 2, sizeof(argv) - 3 * sizeof(char *));
		argv[2] = "--json";
	}
	return harness_run(argv, out, outlen, err, errlen);
}

/* The job's cgroups are gone from every controller once it stopped. */
static void
assert_no_cgroup_left(const char *job)
{
	static const char *const ctl[] = { "memory", "pids", "cpu", "cpuacct",
		"freezer", "unified" };
	char path[300];
	struct stat sb;

	for (size_t i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cordon/%s",
		    ctl[i], job);
		ck_assert_msg(stat(path, &sb) < 0 && errno == ENOENT,
		    "%s is left", path);
	}
}

static json_t *
run_json(const char *manifest, const char *script, int *ret_status)
{
	static char out[1 << 22], err[1 << 16];
	json_t *j;

	*ret_status =
	    run(manifest, script, true, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL,
	    "no JSON from cordon run (status %d): %.300s\n%.300s", *ret_status,
	    out, err);
	assert_no_cgroup_left(
	    json_string_value(json_object_get(j, "job")) ?: "?");
	return j;
}

static const char *
job_stdout(const json_t *j)
{
	return json_string_value(
		   json_object_get(json_object_get(json_object_get(j, "output"),
				       "stdout"),
		       "text"))
	    ?: "";
}

static const char *
limit_of(const json_t *j, const char *name)
{
	return json_string_value(
		   json_object_get(json_object_get(j, "limits"), name))
	    ?: "(absent)";
}

static const char *
limit_hit(const json_t *j)
{
	json_t *v = json_object_get(j, "limit_hit");

	return json_is_null(v) ? "null" : json_string_value(v) ?: "(absent)";
}

/* The number after "name=" in text, or -1. */
static long
number_after(const char *text, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "%s=", name);
	p = strstr(text, key);
	return p != NULL ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* Ten processes each touching 64 MiB under memory_mb 256: with a limit
 * per process (RLIMIT_AS) all ten held 640 MiB at once; for the job as a
 * whole at most three fit, the kernel kills the rest, and the result says
 * the memory limit was hit. */
START_TEST(memory_binds_the_job_as_a_whole)
{
	int status;
	json_t *j = run_json("mem",
	    "python3 -c '\n"
	    "import os, time\n"
	    "kids = []\n"
	    "for i in range(10):\n"
	    "    pid = os.fork()\n"
	    "    if pid == 0:\n"
	    "        try:\n"
	    "            open(\"/proc/self/oom_score_adj\", "
	    "\"w\").write(\"1000\")\n"
	    "        except OSError:\n"
	    "            pass\n"
	    "        b = bytearray(64 << 20)\n"
	    "        for k in range(0, len(b), 4096):\n"
	    "            b[k] = 1\n"
	    "        time.sleep(3)\n"
	    "        os._exit(0)\n"
	    "    kids.append(pid)\n"
	    "held = 0\n"
	    "for p in kids:\n"
	    "    _, s = os.waitpid(p, 0)\n"
	    "    held += os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0\n"
	    "print(\"held=%d\" % held)'",
	    &status);
	const char *out = job_stdout(j);

	ck_assert_msg(status == 0, "status %d: %s", status, out);
	long held = number_after(out, "held");
	ck_assert_msg(held >= 0 && held <= 3, "held %ld of 10: %s", held, out);
	ck_assert_msg(strncmp(limit_of(j, "memory"), "cgroup_", 7) == 0, "%s",
	    limit_of(j, "memory"));
	ck_assert_str_eq(limit_hit(j), "memory");
	json_decref(j);
}
END_TEST

/* A fork loop under pids 32: the job as a whole is stopped short of 32,
 * and both the result and the one-line summary name the pids limit. */
START_TEST(a_fork_loop_stops_at_the_pids_limit)
{
	static char out[1 << 16], err[1 << 16];
	static const char script[] = "python3 -c '\n"
				     "import os, signal\n"
				     "kids = []\n"
				     "for i in range(200):\n"
				     "    try:\n"
				     "        pid = os.fork()\n"
				     "    except OSError:\n"
				     "        break\n"
				     "    if pid == 0:\n"
				     "        signal.pause()\n"
				     "        os._exit(0)\n"
				     "    kids.append(pid)\n"
				     "print(\"forked=%d\" % len(kids))\n"
				     "for p in kids:\n"
				     "    os.kill(p, 9)\n"
				     "    os.waitpid(p, 0)'";
	int status;
	json_t *j = run_json("forks", script, &status);
	const char *text = job_stdout(j);

	ck_assert_msg(status == 0, "status %d: %s", status, text);
	long forked = number_after(text, "forked");
	ck_assert_msg(forked > 0 && forked < 32, "%s", text);
	ck_assert_msg(strncmp(limit_of(j, "pids"), "cgroup_", 7) == 0, "%s",
	    limit_of(j, "pids"));
	ck_assert_str_eq(limit_hit(j), "pids");
	json_decref(j);

	status =
	    run("forks", script, false, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(status == 0, "status %d: %s", status, err);
	ck_assert_msg(strstr(err, "limit hit: pids") != NULL, "%s", err);
}
END_TEST

/* Two busy processes under cpus 0.1 (not 0.5: on a loaded shared host
 * two processes may get less than half a core anyway, and never meet the
 * quota; a tenth they exceed): the job's cgroup was throttled (its own
 * cpu.stat, read by the launcher at the stop: no clock is judged here),
 * and the result and the summary say cpu. */
START_TEST(two_busy_processes_are_throttled_under_a_tenth_of_a_core)
{
	static char out[1 << 16], err[1 << 16];
	static const char script[] =
	    "burn() { python3 -c '\n"
	    "import time\n"
	    "while time.process_time() < 0.1:\n"
	    "    pass'; }; burn & burn & wait; echo burnt";
	int status;
	json_t *j = run_json("tenth", script, &status);

	ck_assert_msg(status == 0, "status %d: %s", status, job_stdout(j));
	ck_assert_ptr_nonnull(strstr(job_stdout(j), "burnt"));
	ck_assert_msg(strncmp(limit_of(j, "cpu"), "cgroup_", 7) == 0, "%s",
	    limit_of(j, "cpu"));
	json_t *cs = json_object_get(j, "cgroup_stat");
	ck_assert_msg(json_integer_value(json_object_get(cs, "cpu_throttled")) >
		0,
	    "not throttled");
	/* The job's own usage: at least the 0.2 s of CPU it burnt. */
	ck_assert_int_ge(json_integer_value(json_object_get(cs, "cpu_usec")),
	    200000);
	ck_assert_str_eq(limit_hit(j), "cpu");
	json_decref(j);

	status =
	    run("tenth", script, false, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(status == 0, "status %d: %s", status, err);
	ck_assert_msg(strstr(err, "limit hit: cpu") != NULL, "%s", err);
}
END_TEST

/* V8 reserves far more address space than it uses: under RLIMIT_AS of
 * 256 MiB node died at start; under the job's memory cgroup it runs. */
START_TEST(node_starts_under_256_mb)
{
	int status;
	json_t *j =
	    run_json("mem", "/usr/bin/node -e 'console.log(1+1)'", &status);

	ck_assert_msg(status == 0, "status %d: %s", status, job_stdout(j));
	ck_assert_str_eq(job_stdout(j), "2\n");
	ck_assert_msg(strncmp(limit_of(j, "memory"), "cgroup_", 7) == 0, "%s",
	    limit_of(j, "memory"));
	json_decref(j);
}
END_TEST

/* Empty files cost no blocks, only inodes (kernel memory): a flood in
 * /tmp and in /work stops with ENOSPC at the mounts' caps, far below the
 * 100,000 tried, and the result says the disk was hit. */
START_TEST(an_inode_flood_stops_at_the_cap)
{
	int status;
	json_t *j = run_json("flood",
	    "python3 -c '\n"
	    "import os, errno\n"
	    "def flood(d, name):\n"
	    "    os.makedirs(d, exist_ok=True)\n"
	    "    for i in range(100000):\n"
	    "        try:\n"
	    "            os.close(os.open(\"%s/f%d\" % (d, i), os.O_CREAT | "
	    "os.O_WRONLY, 0o600))\n"
	    "        except OSError as e:\n"
	    "            print(\"%s=%d %s\" % (name, i, "
	    "errno.errorcode[e.errno]))\n"
	    "            return\n"
	    "    print(\"%s=100000 none\" % name)\n"
	    "flood(\"/tmp/flood\", \"tmp\")\n"
	    "flood(\"/work/flood\", \"work\")'",
	    &status);
	const char *out = job_stdout(j);

	ck_assert_msg(status == 0, "status %d: %s", status, out);
	long tmp = number_after(out, "tmp"), work = number_after(out, "work");
	/* /tmp: 64 MiB, one inode per 4 KiB page; /work: disk_mb 16, the
	 * same rule. The result, listing each of those files, is larger
	 * than a pipe: all of it must come. */
	ck_assert_msg(tmp > 1000 && tmp < 16384, "%s", out);
	ck_assert_msg(work > 1000 && work < 4096, "%s", out);
	ck_assert_msg(strstr(out, "ENOSPC") != NULL, "%s", out);
	ck_assert_msg(strstr(strstr(out, "work="), "ENOSPC") != NULL, "%s",
	    out);
	ck_assert_str_eq(limit_hit(j), "disk");
	/* The patch still came back. */
	ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "patch")));
	json_decref(j);
}
END_TEST

/* The first line of dir/file is empty, or it is not there (the job's
 * cgroup holds no task). */
static bool
no_task_in(const char *dir)
{
	char path[400], line[64];

	snprintf(path, sizeof(path), "%s/tasks", dir);
	return harness_read_line(path, line, sizeof(line)) < 0 ||
	    line[0] == '\0';
}

/* A launcher killed with SIGKILL never reaches its stop path: its job's
 * processes die with the sandbox's init, its cgroups stay; `cordon
 * recover` removes them with the rest of the job. */
START_TEST(recover_removes_a_dead_launchers_cgroups)
{
	char line[256] = "", dir[300], out[1 << 16], err[1 << 16];
	char *argv[] = { (char *)harness_bin("cordon"), "recover", "--json",
		"--config", st.launcher_cfg, NULL };
	size_t n = 0;
	int p[2], status;
	struct stat sb;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execl(harness_bin("cordon"), "cordon", "run", "--config",
		    st.launcher_cfg, "--manifest", "mem", "--", "/bin/sh", "-c",
		    "echo JOB=$CORDON_JOB; sleep 60", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (strchr(line, '\n') == NULL && n < sizeof(line) - 1) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ck_assert_msg(poll(&pf, 1, 20000) == 1, "no JOB= line: %s",
		    line);
		ssize_t k = read(p[0], line + n, sizeof(line) - 1 - n);
		ck_assert_msg(k > 0, "no JOB= line: %s", line);
		n += (size_t)k;
		line[n] = '\0';
	}
	close(p[0]);
	const char *job = strstr(line, "JOB=");
	ck_assert_ptr_nonnull(job);
	job += 4;
	line[strcspn(line, "\n")] = '\0';
	snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory/cordon/%s", job);
	ck_assert_msg(stat(dir, &sb) == 0, "%s", dir);

	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* The job's processes go with its init (a bounded wait). */
	for (int i = 0; i < 200 && !no_task_in(dir); i++)
		usleep(50 * 1000);
	ck_assert_msg(no_task_in(dir), "a process of the job outlived it");
	/* Its cgroups stay: nothing removed them. */
	ck_assert_msg(stat(dir, &sb) == 0, "%s is gone before recover", dir);

	status = harness_run(argv, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(status == 0, "recover %d: %s %s", status, out, err);
	ck_assert_msg(strstr(out, job) != NULL, "%s", out);
	assert_no_cgroup_left(job);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("limits");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, memory_binds_the_job_as_a_whole);
	tcase_add_test(tc, a_fork_loop_stops_at_the_pids_limit);
	tcase_add_test(tc,
	    two_busy_processes_are_throttled_under_a_tenth_of_a_core);
	tcase_add_test(tc, node_starts_under_256_mb);
	tcase_add_test(tc, an_inode_flood_stops_at_the_cap);
	tcase_add_test(tc, recover_removes_a_dead_launchers_cgroups);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
