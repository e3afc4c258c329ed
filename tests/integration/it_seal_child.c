/*
 * The hatch's sealer: one helper the hatch forks before it confines
 * itself, which keeps only what a seal needs, and a worker it forks for
 * each seal. The real hatch on loopback, its jobs made at a real broker.
 * What each side must see: in /proc, the helper with Seccomp 2,
 * NoNewPrivs 1, no root uid and CapEff, CapPrm and CapBnd of
 * CAP_DAC_READ_SEARCH, CAP_SYS_CHROOT and CAP_SYS_ADMIN alone, and the
 * hatch itself with CAP_DAC_OVERRIDE, CAP_KILL and CAP_SYS_ADMIN alone;
 * the worker that sealed with CAP_DAC_READ_SEARCH alone, refusing a
 * socket, and an opaque directory still sealed as the overlay shows it
 * (the worker reads the marks before it gives CAP_SYS_ADMIN up). A
 * worker killed mid-seal, or hung past the seal deadline, fails that seal
 * closed with the reason (503, nothing sealed), the workspace lock is
 * released and the next seal works; a helper killed (mid-seal or idle),
 * or hung past the deadline and its grace (then killed), fails the seal
 * in flight with 503 sealer_unavailable, and the hatch, which cannot fork
 * another, exits 71 with sealer_lost; started again (as systemd's
 * Restart=on-failure does) it has a new sealer, seals the same workspace,
 * and `cordon run` gets its patch. Workers are held mid-seal with a
 * fanotify permission mark on the workspace's meta.json (the worker's
 * first open), not with timing. What the confined processes cannot call
 * is tests/unit/check_sealer.c's.
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
#include <sys/xattr.h>
#include <unistd.h>

#define KEY "crk_hatch-test-key-0123456789abcdefghijkl"

/* CAP_DAC_OVERRIDE 1, CAP_DAC_READ_SEARCH 2, CAP_KILL 5, CAP_SYS_CHROOT 18,
 * CAP_SYS_ADMIN 21 */
#define SEALER_CAPS ((1L << 2) | (1L << 18) | (1L << 21))
/* The worker seals with CAP_DAC_READ_SEARCH alone: CAP_SYS_ADMIN goes
 * once it has read the opaque marks. */
#define WORKER_CAPS (1L << 2)
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

/* Waits (up to 30 s) for pid, a child of the test's, to have exited:
 * whether it did. It is left to daemon_stop to reap. */
static bool
exited(pid_t pid)
{
	char path[64], line[512];

	ck_assert_int_gt(pid, 1);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 600; i++) {
		FILE *f = fopen(path, "re");
		char *end;

		if (f == NULL)
			return true;
		end = fgets(line, sizeof(line), f) != NULL ? strrchr(line, ')')
							   : NULL;
		fclose(f);
		if (end != NULL && end[1] == ' ' && end[2] == 'Z')
			return true;
		usleep(50 * 1000);
	}
	return false;
}

/* The hatch stopped on its own once its sealer was gone: exit 71 and a
 * sealer_lost line whose reason holds want. Then it is started again, as
 * its supervisor would, with a new sealer. */
static void
hatch_stopped_for_a_new_sealer(struct daemon *d, pid_t old_helper,
    const char *want)
{
	json_t *lines, *l;
	const char *reason = NULL;
	size_t i;

	ck_assert_msg(exited(d->pid),
	    "the hatch (pid %d) still runs without its sealer", (int)d->pid);
	lines = daemon_log_lines(d);
	json_array_foreach(lines, i, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		if (ev != NULL && strcmp(ev, "sealer_lost") == 0)
			reason =
			    json_string_value(json_object_get(l, "reason"));
	}
	ck_assert_msg(reason != NULL && strstr(reason, want) != NULL,
	    "sealer_lost's reason: %s (want \"%s\")",
	    reason != NULL ? reason : "(no sealer_lost line)", want);
	json_decref(lines);
	ck_assert_int_eq(daemon_stop(d), 71);
	ck_assert_int_eq(daemon_restart(d), 0);
	pid_t helper = only_child(d->pid);
	ck_assert_msg(helper > 1 && helper != old_helper,
	    "the restarted hatch has no new sealer (%d, was %d)", (int)helper,
	    (int)old_helper);
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

START_TEST(a_helper_killed_stops_the_hatch_for_a_new_one)
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
	/* It cannot fork a sealer again (it dropped what that takes): it
	 * stops, to be started again; then the same workspace seals. */
	hatch_stopped_for_a_new_sealer(&hatch, helper, "the sealer died");
	json_t *r = seal(id, 200);
	ck_assert_str_eq(json_string_value(json_object_get(r, "verdict")),
	    "clean");
	json_decref(r);
}
END_TEST

/* A helper that dies while no seal is asked of it: the hatch sees it
 * within its tick and stops as well. */
START_TEST(a_helper_dead_while_idle_stops_the_hatch)
{
	pid_t helper = only_child(hatch.pid);

	ck_assert_msg(helper > 1, "the hatch has no one child (its sealer)");
	kill_one(helper);
	hatch_stopped_for_a_new_sealer(&hatch, helper,
	    "died while no seal was asked");
	json_decref(seal(workspace(), 200));
}
END_TEST

/* A helper that hangs when the hatch is told to stop does not hold the
 * hatch: it is killed, and the hatch exits 0. */
START_TEST(a_hung_helper_does_not_hold_the_hatch_at_stop)
{
	pid_t helper = only_child(hatch.pid);

	ck_assert_msg(helper > 1, "the hatch has no one child (its sealer)");
	ck_assert_int_eq(kill(helper, SIGSTOP), 0);
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	ck_assert_msg(exited(helper), "the hung sealer %d is still there",
	    (int)helper);
	ck_assert_int_eq(daemon_restart(&hatch), 0);
}
END_TEST

/* An opaque directory (a directory the job removed and made again) is
 * read by the worker before it gives CAP_SYS_ADMIN up: what lower had
 * there comes out deleted. */
START_TEST(an_opaque_directory_seals_as_the_overlay_shows_it)
{
	const char *job = workspace();
	char p[700];
	json_t *r, *changes, *c;
	size_t i;
	bool added = false, deleted = false;

	snprintf(p, sizeof(p), "%s/var/hatch/workspaces/%s/rw/upper/repo",
	    hatch.dir, job);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(setxattr(p, "trusted.overlay.opaque", "y", 1, 0), 0);
	snprintf(p, sizeof(p), "%s/var/hatch/workspaces/%s/rw/upper/repo/NEW",
	    hatch.dir, job);
	write_file(p, "new\n", 0644);
	r = seal(job, 200);
	changes = json_object_get(r, "changes");
	json_array_foreach(changes, i, c)
	{
		const char *path =
		    json_string_value(json_object_get(c, "path"));
		const char *ch =
		    json_string_value(json_object_get(c, "change"));
		if (path != NULL && ch != NULL) {
			added |= strcmp(path, "repo/NEW") == 0 &&
			    strcmp(ch, "added") == 0;
			deleted |= strcmp(path, "repo/README") == 0 &&
			    strcmp(ch, "deleted") == 0;
		}
	}
	char *text = json_dumps(changes, JSON_COMPACT);
	ck_assert_msg(added && deleted,
	    "changes %s: want repo/NEW added and repo/README deleted", text);
	free(text);
	json_decref(r);
}
END_TEST

/* A helper that hangs (stopped) is killed once the deadline and its
 * grace have passed: that seal answers 503, and the hatch stops to be
 * started again with a new one. */
START_TEST(a_hung_helper_is_killed_and_the_hatch_stops)
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
	hatch_stopped_for_a_new_sealer(&hatch, helper, "did not answer");
	json_decref(seal(id, 200));
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

/* A job run after the hatch lost its sealer and was started again (as
 * systemd's Restart=on-failure does): sealed as usual, patch and all. */
START_TEST(cordon_run_seals_after_the_hatch_restarted)
{
	static char out[1 << 18], err[1 << 14];
	char input[400], prog[400];
	/* harness_bin's buffer is its own: daemon_restart uses it too. */
	char *argv[] = { prog, "run", "--json", "--config", st.launcher_cfg,
		"--manifest", "sealer-run", "--input", input, "--", "/bin/sh",
		"-c", "echo new > repo/NEW.md", NULL };
	pid_t helper = only_child(st.hatch.pid);
	json_t *j;

	ck_assert_msg(helper > 1, "the hatch has no one child (its sealer)");
	kill_one(helper);
	hatch_stopped_for_a_new_sealer(&st.hatch, helper,
	    "died while no seal was asked");
	snprintf(prog, sizeof(prog), "%s", harness_bin("cordon"));
	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	int status = harness_run(argv, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	ck_assert_msg(status == 0, "cordon run exited %d: %s\n%s", status, out,
	    err);
	ck_assert_msg(json_string_value(json_object_get(j, "verdict")) !=
		    NULL &&
		json_object_get(j, "workspace_kept") == NULL,
	    "cordon run sealed nothing: %s", out);
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
	tcase_add_test(tc, a_helper_killed_stops_the_hatch_for_a_new_one);
	tcase_add_test(tc, a_helper_dead_while_idle_stops_the_hatch);
	tcase_add_test(tc, an_opaque_directory_seals_as_the_overlay_shows_it);
	tcase_add_test(tc, a_hung_helper_does_not_hold_the_hatch_at_stop);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(dl, start_deadline, stop);
	tcase_add_test(dl, a_hung_worker_is_killed_at_the_seal_deadline);
	tcase_add_test(dl, a_hung_helper_is_killed_and_the_hatch_stops);
	tcase_set_timeout(dl, 60);
	suite_add_tcase(s, dl);
	TCase *run = tcase_create("run");
	tcase_add_checked_fixture(run, stack_setup, stack_teardown);
	tcase_set_timeout(run, 60);
	tcase_add_test(run, cordon_run_seals_after_the_hatch_restarted);
	suite_add_tcase(s, run);
	return s;
}

int
main(void)
{
	return harness_main(seal_child_suite());
}
