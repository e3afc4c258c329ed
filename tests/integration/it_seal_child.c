/*
 * The hatch's sealer: one helper the hatch forks before it confines
 * itself, which keeps only what a seal needs, and a worker it forks for
 * each seal. The real hatch on loopback, its jobs made at a real broker.
 * What each side must see: in /proc, the helper with Seccomp 2,
 * NoNewPrivs 1, no root uid and CapEff, CapPrm and CapBnd of
 * CAP_DAC_READ_SEARCH, CAP_SYS_CHROOT and CAP_SYS_ADMIN alone, and the
 * hatch itself with CAP_DAC_OVERRIDE, CAP_KILL and CAP_SYS_ADMIN alone;
 * the worker that sealed without CAP_SYS_CHROOT, and refusing a socket. A worker
 * killed mid-seal, or hung past the seal deadline, fails that seal
 * closed with the reason (503, nothing sealed), the workspace lock is
 * released and the next seal works; a helper killed, or hung past the
 * deadline and its grace (then killed), makes the seal in flight and
 * every later one answer 503 with the reason, and `cordon
 * run` then says the seal failed and claims no patch. Workers are
 * held mid-seal with a fanotify permission mark on the workspace's
 * meta.json (the worker's first open), not with timing.
 */
#include "harness.h"
#include "hatchjob.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY "crk_hatch-test-key-0123456789abcdefghijkl"

/* CAP_DAC_OVERRIDE 1, CAP_DAC_READ_SEARCH 2, CAP_KILL 5, CAP_SYS_CHROOT 18,
 * CAP_SYS_ADMIN 21 */
#define SEALER_CAPS ((1L << 2) | (1L << 18) | (1L << 21))
#define WORKER_CAPS ((1L << 2) | (1L << 21))
#define HATCH_CAPS ((1L << 1) | (1L << 5) | (1L << 21))

static struct daemon hatch;
static struct hatchjob hj;
static char roots[300], repo[400];

static void
write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The broker, a repository under the roots, and a hatch with extra
 * configuration lines (each ending in ", ") before its own. */
static void
start_with(const char *extra)
{
	char cfg[2048], keyfile[400], dir[300], p[500];

	hatchjob_start(&hj);
	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(keyfile, sizeof(keyfile), "%s/launcher.key", dir);
	write_file(keyfile, KEY "\n", 0600);
	snprintf(repo, sizeof(repo), "%s/repo", roots);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	write_file(p, "hello\n", 0644);
	snprintf(cfg, sizeof(cfg),
	    "{%s\"input_roots\": [\"%s\"], \"launcher_key_file\": \"%s\", "
	    "%s}",
	    extra, roots, keyfile, hj.hatch_config);
	ck_assert_int_eq(daemon_start(&hatch, "hatch", cfg), 0);
}

static void
start(void)
{
	start_with("");
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	hatchjob_stop(&hj);
}

/* A field of /proc/pid/status in base, or -1. */
static long
status_base(pid_t pid, const char *field, int base)
{
	char path[64], line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
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

/* The one process whose parent is pid, or -1 (none, or more). */
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

/* SIGKILL to pid, which must name one process: never 0 or -1 (a group,
 * or every process there is). */
static void
kill_one(pid_t pid)
{
	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
}

/* A workspace for a new job of the broker's: the job's id (static). */
static const char *
workspace(void)
{
	static char id[128];

	hatchjob_new(&hj, NULL, 8, id, sizeof(id));
	json_decref(
	    harness_expect(&hatch, 201, "POST", "/v1/workspaces", KEY, NULL,
		json_pack("{s:s, s:[{s:s, s:s}]}", "job", id, "inputs", "src",
		    repo, "dst", "repo")));
	return id;
}

/* Seals job, expecting want: the answer. */
static json_t *
seal(const char *job, long want)
{
	char p[200];

	snprintf(p, sizeof(p), "/v1/workspaces/%s/seal", job);
	return harness_expect(&hatch, want, "POST", p, KEY, NULL, NULL);
}

/* The last workspace_sealed line's sealer, or NULL (a new reference). */
static json_t *
last_sealer(void)
{
	json_t *lines = daemon_log_lines(&hatch), *l, *sealer = NULL;
	size_t i;

	json_array_foreach(lines, i, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		if (ev != NULL && strcmp(ev, "workspace_sealed") == 0)
			sealer = json_object_get(l, "sealer");
	}
	json_incref(sealer);
	json_decref(lines);
	return sealer;
}

START_TEST(the_sealer_keeps_only_what_a_seal_needs)
{
	pid_t helper = only_child(hatch.pid);

	ck_assert_msg(helper > 0, "the hatch has no one child (its sealer)");
	ck_assert_msg(status_field(helper, "Seccomp") == 2,
	    "the sealer (pid %d): Seccomp %ld", (int)helper,
	    status_field(helper, "Seccomp"));
	ck_assert_int_eq(status_field(helper, "NoNewPrivs"), 1);
	ck_assert_msg(status_field(helper, "Uid") > 0,
	    "the sealer runs as uid %ld", status_field(helper, "Uid"));
	ck_assert_msg(status_base(helper, "CapEff", 16) == SEALER_CAPS,
	    "the sealer's CapEff %lx", status_base(helper, "CapEff", 16));
	ck_assert_msg(status_base(helper, "CapPrm", 16) == SEALER_CAPS,
	    "the sealer's CapPrm %lx", status_base(helper, "CapPrm", 16));
	ck_assert_msg(status_base(helper, "CapBnd", 16) == SEALER_CAPS,
	    "the sealer's CapBnd %lx", status_base(helper, "CapBnd", 16));
	ck_assert_int_eq(status_base(helper, "CapInh", 16), 0);
	ck_assert_int_eq(status_base(helper, "CapAmb", 16), 0);
	/* The hatch itself keeps its mounts, removals and the kill of a
	 * hung sealer, nothing else. */
	ck_assert_msg(status_base(hatch.pid, "CapEff", 16) == HATCH_CAPS,
	    "the hatch's CapEff %lx", status_base(hatch.pid, "CapEff", 16));
	ck_assert_msg(status_base(hatch.pid, "CapBnd", 16) == HATCH_CAPS,
	    "the hatch's CapBnd %lx", status_base(hatch.pid, "CapBnd", 16));
	ck_assert_int_eq(status_field(hatch.pid, "Seccomp"), 2);

	/* A seal, by a worker of the helper's, as confined. */
	const char *job = workspace();
	json_t *r = seal(job, 200), *sealer;
	ck_assert_str_eq(json_string_value(json_object_get(r, "verdict")),
	    "clean");
	json_decref(r);
	sealer = last_sealer();
	ck_assert_msg(sealer != NULL, "no sealer in workspace_sealed");
	long pid = (long)json_integer_value(json_object_get(sealer, "pid"));
	ck_assert_int_gt(pid, 0);
	ck_assert_int_ne(pid, hatch.pid);
	ck_assert_int_ne(pid, helper);
	ck_assert_int_eq(json_integer_value(json_object_get(sealer, "seccomp")),
	    2);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(sealer, "no_new_privs")),
	    1);
	ck_assert_int_eq(json_integer_value(json_object_get(sealer, "cap_eff")),
	    WORKER_CAPS);
	ck_assert_int_gt(json_integer_value(json_object_get(sealer, "uid")), 0);
	/* It tried to make a socket once confined, and could not. */
	ck_assert_msg(json_is_true(json_object_get(sealer, "socket_refused")),
	    "the sealer could make a socket");
	json_decref(sealer);
	/* Still the same helper: one for every seal. */
	ck_assert_int_eq(only_child(hatch.pid), helper);
}
END_TEST

/* A seal on a thread of its own, so that the test can act meanwhile. */
struct pending {
	pthread_t thread;
	char path[200];
	long status;
	json_t *answer;
};

static void *
pending_run(void *arg)
{
	struct pending *p = arg;

	p->answer =
	    harness_call(&hatch, "POST", p->path, KEY, NULL, NULL, &p->status);
	return NULL;
}

static void
pending_start(struct pending *p, const char *job)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->path, sizeof(p->path), "/v1/workspaces/%s/seal", job);
	ck_assert_int_eq(pthread_create(&p->thread, NULL, pending_run, p), 0);
}

/* Joins p and asserts a 503 whose message holds want. */
static void
pending_expect_503(struct pending *p, const char *want)
{
	ck_assert_int_eq(pthread_join(p->thread, NULL), 0);
	ck_assert_int_eq(p->status, 503);
	const char *msg =
	    json_string_value(json_object_get(p->answer, "message"));
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, want) != NULL, "message \"%s\" lacks \"%s\"",
	    msg, want);
	json_decref(p->answer);
}

/* A fanotify group holding every open of job's meta.json. */
static int
hold_meta(const char *job)
{
	char p[600];
	int fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC,
	    O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fan, 0);
	snprintf(p, sizeof(p), "%s/var/hatch/workspaces/%s/meta.json",
	    hatch.dir, job);
	ck_assert_int_eq(fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN_PERM,
			     AT_FDCWD, p),
	    0);
	return fan;
}

/* The next open held by fan: the opener's pid; *fd its event's fd. */
static pid_t
held(int fan, int *fd)
{
	struct fanotify_event_metadata ev;

	ck_assert_int_eq(read(fan, &ev, sizeof(ev)), (ssize_t)sizeof(ev));
	ck_assert_int_eq(ev.vers, FANOTIFY_METADATA_VERSION);
	ck_assert(ev.mask & FAN_OPEN_PERM);
	*fd = ev.fd;
	return ev.pid;
}

static void
allow(int fan, int fd)
{
	struct fanotify_response r = { .fd = fd, .response = FAN_ALLOW };

	/* A lost answer leaves the worker held: the test then fails at its
	 * deadline, so say so here instead. */
	ck_assert_int_eq(write(fan, &r, sizeof(r)), (ssize_t)sizeof(r));
	close(fd);
}

/* No temporary patch or report is left in job's workspace. */
static void
nothing_sealed(const char *job)
{
	char p[600];
	static const char *const names[] = { "patch", "report.json",
		".patch.tmp", ".report.json.tmp" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/var/hatch/workspaces/%s/%s",
		    hatch.dir, job, names[i]);
		ck_assert_msg(access(p, F_OK) < 0, "%s is there", p);
	}
}

START_TEST(a_worker_killed_mid_seal_fails_that_seal_closed)
{
	const char *job = workspace();
	char id[128];
	struct pending p;
	int fan = hold_meta(job), fd;
	pid_t helper = only_child(hatch.pid);

	ck_assert_msg(helper > 1, "the hatch has no one child (its sealer)");
	snprintf(id, sizeof(id), "%s", job);
	pending_start(&p, id);
	pid_t worker = held(fan, &fd);
	ck_assert_int_ne(worker, hatch.pid);
	ck_assert_int_ne(worker, helper);
	ck_assert_int_eq(status_field(worker, "PPid"), helper);
	kill_one(worker);
	allow(fan, fd);
	pending_expect_503(&p, "killed by signal 9");
	nothing_sealed(id);
	close(fan);
	/* The lock is released, the helper lives on, the seal runs again. */
	ck_assert_int_eq(only_child(hatch.pid), helper);
	json_t *r = seal(id, 200);
	ck_assert_str_eq(json_string_value(json_object_get(r, "verdict")),
	    "clean");
	json_decref(r);
}
END_TEST

START_TEST(a_hung_worker_is_killed_at_the_seal_deadline)
{
	const char *job = workspace();
	char id[128];
	struct pending p;
	int fan = hold_meta(job), fd;

	snprintf(id, sizeof(id), "%s", job);
	pending_start(&p, id);
	pid_t worker = held(fan, &fd);
	ck_assert_int_gt(worker, 1);
	/* Never answered: the worker hangs in its open until killed. */
	pending_expect_503(&p, "seal_deadline_s");
	ck_assert_msg(kill(worker, 0) < 0 && errno == ESRCH,
	    "the hung worker %d is still there", (int)worker);
	nothing_sealed(id);
	close(fd);
	close(fan);
	/* Another job's seal, and this one's again: the lock is free. */
	json_decref(seal(workspace(), 200));
	json_decref(seal(id, 200));
}
END_TEST

START_TEST(a_helper_killed_fails_every_seal_closed)
{
	const char *job = workspace();
	char id[128];
	struct pending p;
	int fan = hold_meta(job), fd;
	pid_t helper = only_child(hatch.pid);

	ck_assert_msg(helper > 1, "the hatch has no one child (its sealer)");
	snprintf(id, sizeof(id), "%s", job);
	pending_start(&p, id);
	(void)held(fan, &fd);
	kill_one(helper);
	allow(fan, fd);
	pending_expect_503(&p, "sealer");
	nothing_sealed(id);
	close(fan);
	/* No sealer: every seal says so, the rest of the API still works. */
	json_t *r = seal(id, 503);
	ck_assert_str_eq(json_string_value(json_object_get(r, "error")),
	    "sealer_unavailable");
	json_decref(r);
	job = workspace();
	json_decref(seal(job, 503));
}
END_TEST

/* A helper that hangs (stopped) is killed once the deadline and its
 * grace have passed: that seal and every later one answer 503, and the
 * lock is released for the rest of the API. */
START_TEST(a_hung_helper_is_killed_and_every_seal_refused)
{
	char id[128];
	pid_t helper = only_child(hatch.pid);
	json_t *r;

	ck_assert_msg(helper > 1, "the hatch has no one child (its sealer)");
	snprintf(id, sizeof(id), "%s", workspace());
	ck_assert_int_eq(kill(helper, SIGSTOP), 0);
	r = seal(id, 503);
	ck_assert_str_eq(json_string_value(json_object_get(r, "error")),
	    "sealer_unavailable");
	ck_assert_msg(strstr(json_string_value(json_object_get(r, "message")),
			  "did not answer") != NULL,
	    "%s", json_string_value(json_object_get(r, "message")));
	json_decref(r);
	ck_assert_msg(kill(helper, 0) < 0 && errno == ESRCH,
	    "the hung sealer %d is still there", (int)helper);
	json_decref(seal(id, 503));
	json_decref(seal(workspace(), 503));
}
END_TEST

/* --- end to end: `cordon run` ------------------------------------------- */

static struct stack st;

static void
stack_setup(void)
{
	static const struct stack_options o = { .uid_base = 742000 };
	char path[400];

	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/sealer-run", st.admin, NULL,
	    json_pack("{s:s, s:[s], s:{s:i}}", "name", "sealer-run", "command",
		"/bin/true", "limits", "wall_seconds", 60)));
}

static void
stack_teardown(void)
{
	stack_stop(&st);
}

/* A job whose hatch has lost its sealer: the run stops as usual, keeps
 * the workspace, says why and claims no patch, clean or other. */
START_TEST(cordon_run_says_the_seal_failed)
{
	static char out[1 << 18], err[1 << 14];
	char input[400], path[300];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "sealer-run",
		"--input", input, "--", "/bin/sh", "-c",
		"echo new > repo/NEW.md", NULL };
	pid_t helper = only_child(st.hatch.pid);
	json_t *j;

	ck_assert_msg(helper > 1, "the hatch has no one child (its sealer)");
	kill_one(helper);
	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	int status = harness_run(argv, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	ck_assert_msg(status == 4, "cordon run exited %d: %s\n%s", status, out,
	    err);
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	const char *kept =
	    json_string_value(json_object_get(j, "workspace_kept"));
	ck_assert_msg(kept != NULL && strstr(kept, "the seal failed: 503") &&
		strstr(kept, "sealer"),
	    "workspace_kept: %s", kept != NULL ? kept : "(none)");
	ck_assert_ptr_null(json_string_value(json_object_get(j, "verdict")));
	ck_assert_ptr_null(json_string_value(json_object_get(j, "patch")));
	/* Kept at the hatch, not sealed. */
	snprintf(path, sizeof(path), "/v1/workspaces/%s/report",
	    json_string_value(json_object_get(j, "job")));
	json_decref(harness_expect(&st.hatch, 409, "GET", path, st.launcher,
	    NULL, NULL));
	json_decref(j);
}
END_TEST

static void
start_deadline(void)
{
	start_with("\"seal_deadline_s\": 2, ");
}

static Suite *
seal_child_suite(void)
{
	Suite *s = suite_create("seal_child");
	TCase *tc = tcase_create("seal");
	TCase *dl = tcase_create("deadline");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_sealer_keeps_only_what_a_seal_needs);
	tcase_add_test(tc, a_worker_killed_mid_seal_fails_that_seal_closed);
	tcase_add_test(tc, a_helper_killed_fails_every_seal_closed);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(dl, start_deadline, stop);
	tcase_add_test(dl, a_hung_worker_is_killed_at_the_seal_deadline);
	tcase_add_test(dl, a_hung_helper_is_killed_and_every_seal_refused);
	tcase_set_timeout(dl, 60);
	suite_add_tcase(s, dl);
	TCase *run = tcase_create("run");
	tcase_add_checked_fixture(run, stack_setup, stack_teardown);
	tcase_set_timeout(run, 60);
	tcase_add_test(run, cordon_run_says_the_seal_failed);
	suite_add_tcase(s, run);
	return s;
}

int
main(void)
{
	return harness_main(seal_child_suite());
}
