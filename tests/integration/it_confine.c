/*
 * Each daemon sandboxes itself once it is up (common/confine.c): the
 * broker, the proxy, the hatch and cordon serve, started as the other
 * tests start them, must each show "Seccomp: 2" (a filter) and
 * "NoNewPrivs: 1" in /proc/PID/status while they serve, still answer,
 * and stop cleanly (status 0: the sanitizers' exit checks ran). cordon
 * serve is two processes: its HTTP part (the pid started) runs as no
 * root, with no capability, and its one child, the root spawner that
 * forks the jobs, is filtered too.
 */
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of field ("Seccomp") in /proc/pid/status, read in base, or
 * -1. */
static long
status_base(pid_t pid, const char *field, int base)
{
	char path[64], line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	/* A process scanned for may be gone by now: -1. */
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			v = strtol(line + len + 1, NULL, base);
			break;
		}
	fclose(f);
	return v;
}

static long
status_field(pid_t pid, const char *field)
{
	return status_base(pid, field, 10);
}

/* The one process whose parent is pid, or -1 (none, or more than one). */
static pid_t
only_child(pid_t pid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = -1;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end != '\0' || p <= 0)
			continue;
		if (status_field((pid_t)p, "PPid") == pid) {
			found = (pid_t)p;
			n++;
		}
	}
	closedir(d);
	return n == 1 ? found : -1;
}

static void
expect_confined(const struct daemon *d)
{
	long status = 0;
	json_t *h = harness_get_json(d, "/healthz", &status);

	ck_assert_msg(status == 200, "%s: /healthz %ld", d->name, status);
	json_decref(h);
	ck_assert_msg(status_field(d->pid, "Seccomp") == 2,
	    "%s (pid %d): Seccomp %ld, not 2 (filtered)", d->name, (int)d->pid,
	    status_field(d->pid, "Seccomp"));
	ck_assert_msg(status_field(d->pid, "NoNewPrivs") == 1,
	    "%s (pid %d): NoNewPrivs %ld, not 1", d->name, (int)d->pid,
	    status_field(d->pid, "NoNewPrivs"));
}

START_TEST(every_daemon_runs_filtered)
{
	struct stack st;
	struct stack_options o = { .uid_base = 640000 };
	struct daemon serve;
	char cfg[8192];
	size_t n;
	FILE *f;

	stack_start(&st, &o);
	/* serve with the stack's launcher configuration, as it_serve_api. */
	f = fopen(st.launcher_cfg, "re");
	ck_assert_ptr_nonnull(f);
	n = fread(cfg, 1, sizeof(cfg) - 1, f);
	fclose(f);
	cfg[n] = '\0';
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);
	expect_confined(&st.broker);
	expect_confined(&st.proxy);
	expect_confined(&st.hatch);
	expect_confined(&serve);
	/* The HTTP part: no root, no capability; its spawner filtered. */
	ck_assert_msg(status_field(serve.pid, "Uid") > 0,
	    "serve's HTTP part runs as uid %ld",
	    status_field(serve.pid, "Uid"));
	ck_assert_msg(status_base(serve.pid, "CapEff", 16) == 0,
	    "serve's HTTP part: CapEff %lx",
	    status_base(serve.pid, "CapEff", 16));
	ck_assert_msg(status_base(serve.pid, "CapPrm", 16) == 0,
	    "serve's HTTP part: CapPrm %lx",
	    status_base(serve.pid, "CapPrm", 16));
	pid_t spawner = only_child(serve.pid);
	ck_assert_msg(spawner > 0, "serve has no one child (its spawner)");
	ck_assert_msg(status_field(spawner, "Seccomp") == 2,
	    "serve's spawner (pid %d): Seccomp %ld", (int)spawner,
	    status_field(spawner, "Seccomp"));
	ck_assert_msg(status_field(spawner, "NoNewPrivs") == 1,
	    "serve's spawner (pid %d): NoNewPrivs %ld", (int)spawner,
	    status_field(spawner, "NoNewPrivs"));
	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_int_eq(daemon_stop(&st.hatch), 0);
	ck_assert_int_eq(daemon_stop(&st.proxy), 0);
	ck_assert_int_eq(daemon_stop(&st.broker), 0);
}
END_TEST

/* A daemon started with its defaults alone (no configuration file) is
 * confined too: the filter does not wait for a setting. */
START_TEST(a_daemon_with_defaults_is_filtered)
{
	static const char *const names[] = { "broker", "proxy", "hatch" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct daemon d;

		ck_assert_int_eq(daemon_start(&d, names[i], NULL), 0);
		expect_confined(&d);
		ck_assert_int_eq(daemon_stop(&d), 0);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("confine");
	TCase *tc = tcase_create("confine");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_daemon_runs_filtered);
	tcase_add_test(tc, a_daemon_with_defaults_is_filtered);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
