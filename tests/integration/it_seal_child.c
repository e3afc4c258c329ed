/*
 * The hatch seals in a child of its own: the real daemon on loopback
 * seals a workspace and logs who sealed it (workspace_sealed's sealer:
 * the child's pid, its seccomp filters and no_new_privs, read by the
 * child from its own /proc/self/status after it confined itself, and
 * whether a socket(2) it then tried was refused). The sealer is not the
 * hatch, and it runs under more filters than the hatch's own (no exec,
 * mounts, namespaces, id changes or new sockets).
 */
#include "harness.h"
#include "hatchjob.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY "crk_hatch-test-key-0123456789abcdefghijkl"

static struct daemon hatch;
static struct hatchjob hj;
static char roots[300];

static void
write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void
start(void)
{
	char cfg[2048], keyfile[400], dir[300];

	hatchjob_start(&hj);
	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(keyfile, sizeof(keyfile), "%s/launcher.key", dir);
	write_file(keyfile, KEY "\n", 0600);
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_file\": \"%s\", "
	    "%s}",
	    roots, keyfile, hj.hatch_config);
	ck_assert_int_eq(daemon_start(&hatch, "hatch", cfg), 0);
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	hatchjob_stop(&hj);
}

/* The Seccomp_filters field of /proc/pid/status, or -1. */
static long
filters_of(pid_t pid)
{
	char path[64], line[256];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "Seccomp_filters:", 16) == 0)
			n = strtol(line + 16, NULL, 10);
	fclose(f);
	return n;
}

START_TEST(the_seal_runs_in_a_confined_child)
{
	char repo[400], p[500], job[128], path[200];
	json_t *lines, *l, *sealer = NULL;
	size_t i;

	snprintf(repo, sizeof(repo), "%s/repo", roots);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	write_file(p, "hello\n", 0644);
	json_decref(
	    harness_expect(&hatch, 201, "POST", "/v1/workspaces", KEY, NULL,
		json_pack("{s:s, s:[{s:s, s:s}]}", "job",
		    hatchjob_new(&hj, NULL, 8, job, sizeof(job)), "inputs",
		    "src", repo, "dst", "repo")));
	snprintf(path, sizeof(path), "/v1/workspaces/%s/seal", job);
	json_t *r = harness_expect(&hatch, 200, "POST", path, KEY, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(r, "verdict")),
	    "clean");
	json_decref(r);

	lines = daemon_log_lines(&hatch);
	json_array_foreach(lines, i, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		if (ev != NULL && strcmp(ev, "workspace_sealed") == 0)
			sealer = json_object_get(l, "sealer");
	}
	ck_assert_msg(sealer != NULL, "no sealer in workspace_sealed");
	long pid = (long)json_integer_value(json_object_get(sealer, "pid"));
	long hatch_filters = filters_of(hatch.pid);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_ne(pid, hatch.pid);
	ck_assert_int_ge(hatch_filters, 1);
	ck_assert_int_gt(json_integer_value(
			     json_object_get(sealer, "seccomp_filters")),
	    hatch_filters);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(sealer, "no_new_privs")),
	    1);
	/* It tried to make a socket once confined, and could not. */
	ck_assert_msg(json_is_true(json_object_get(sealer, "socket_refused")),
	    "the sealer could make a socket");
	json_decref(lines);
}
END_TEST

static Suite *
seal_child_suite(void)
{
	Suite *s = suite_create("seal_child");
	TCase *tc = tcase_create("seal");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_seal_runs_in_a_confined_child);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(seal_child_suite());
}
