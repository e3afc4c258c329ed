/*
 * Faults: kill -9 of each process at a chosen point of a job and at
 * random points, then a restart (for the launcher, `cordon recover`), and
 * a full disk under the broker's database. What is checked is what an
 * operator relies on afterwards: the job ends revoked, no token comes back
 * to life, the proxy lets nothing through that it cannot judge, what the
 * job wrote comes back as its patch, nothing stays mounted, and the broker
 * grants nothing it could not record.
 *
 * The real broker, proxy and hatch, an upstream on 127.0.0.1, and `cordon
 * run` making real namespaces (as root). Every wait has a deadline.
 */
#include "harness.h"
#include "upstream.h"
#include "util.h"

#include "digest.h"
#include "http_client.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The uids this file's jobs run as (outside their user namespace): a
 * range no other test file uses. */
#define UID_BASE 340000
#define UID_COUNT 1000

static struct daemon *broker, *proxy, *hatch;
static struct upstream *plain;
static char admin[128], launcher[128], verifier[128];
static char cfgpath[400], inputs[300], launcher_run[400], launcher_state[400];
static char tmpfs_dir[400]; /* the full-disk test's tmpfs, "" when none */

static bool file_holds(const char *path, const char *want);

static void
put_manifest(const char *name)
{
	json_t *m = json_pack("{s:s, s:[s], s:{s:s}, "
			      "s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}], "
			      "s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s}], "
			      "s:{s:i, s:i, s:i, s:i}, s:{s:[s]}}",
	    "name", name, "command", "/bin/true", "env", "LANG", "C.UTF-8",
	    "capabilities", "name", "x.read", "audience", "api", "params", "t",
	    "1", "ttl_seconds", 900, "reason", "read x", "egress", "host",
	    "api.test", "port", upstream_port(plain), "methods", "GET", "paths",
	    "/ok/", "reason", "the api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api", "limits", "wall_seconds", 60, "memory_mb", 512,
	    "pids", 64, "output_kb", 1024, "return", "protected", ".github/**");
	char path[128];

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(harness_expect(broker, 200, "PUT", path, admin, NULL, m));
}

/*
 * The three services and the launcher's configuration; the broker's
 * lease is lease_seconds (the launcher renews it every third of that).
 */
static void
services(int lease_seconds)
{
	static struct stack st;
	struct stack_options o = { .uid_base = UID_BASE,
		.hosts = "127.0.0.1 api.test\n" };
	char cfg[64], path[400];

	snprintf(cfg, sizeof(cfg), "{\"lease_seconds\": %d}", lease_seconds);
	o.broker_config = cfg;
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	stack_start(&st, &o);
	/* The tests restart and kill them by these names. */
	broker = &st.broker;
	proxy = &st.proxy;
	hatch = &st.hatch;
	memcpy(admin, st.admin, sizeof(admin));
	memcpy(launcher, st.launcher, sizeof(launcher));
	memcpy(verifier, st.verifier, sizeof(verifier));
	snprintf(cfgpath, sizeof(cfgpath), "%s", st.launcher_cfg);
	snprintf(inputs, sizeof(inputs), "%s", st.inputs);
	snprintf(launcher_run, sizeof(launcher_run), "%s/run", st.launcher_dir);
	snprintf(launcher_state, sizeof(launcher_state), "%s/state",
	    st.launcher_dir);

	snprintf(path, sizeof(path), "%s/repo", inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", inputs);
	harness_write_file(path, "hello\n");
	put_manifest("fault-job");
}

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
}

static void
teardown(void)
{
	struct daemon *ds[] = { hatch, proxy, broker };

	upstream_stop(plain);
	plain = NULL;
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		if (ds[i] != NULL && ds[i]->pid > 0)
			daemon_stop(ds[i]);
	hatch = proxy = broker = NULL;
	if (tmpfs_dir[0] != '\0')
		umount2(tmpfs_dir, MNT_DETACH);
}

/* --- a job in the background ------------------------------------------- */

/* `cordon run` of fault-job with a script, its stdout and stderr read as
 * they come. */
struct bgjob {
	pid_t pid;
	int fd;
	bool eof;
	size_t n;
	char out[1 << 18];
};

static void
bg_start(struct bgjob *b, const char *script)
{
	char input[400];
	int p[2];

	snprintf(input, sizeof(input), "%s/repo:repo", inputs);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	memset(b, 0, sizeof(*b));
	fflush(NULL);
	b->pid = fork();
	ck_assert_int_ge(b->pid, 0);
	if (b->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(p[1], STDOUT_FILENO) < 0 ||
		    dup2(p[1], STDERR_FILENO) < 0)
			_exit(127);
		execl(harness_bin("cordon"), "cordon", "run", "--config",
		    cfgpath, "--manifest", "fault-job", "--input", input, "--",
		    "/bin/sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	b->fd = p[0];
}

/* Reads what has come, waiting at most ms for the first of it. */
static void
bg_pump(struct bgjob *b, int ms)
{
	struct pollfd p = { .fd = b->fd, .events = POLLIN };
	ssize_t k;

	if (b->eof || poll(&p, 1, ms) != 1)
		return;
	k = read(b->fd, b->out + b->n, sizeof(b->out) - 1 - b->n);
	if (k <= 0)
		b->eof = true; /* the end, or a full buffer: no more */
	else
		b->n += (size_t)k;
	b->out[b->n] = '\0';
}

/* Waits up to ms until want appears at or after offset from: where. */
static const char *
bg_expect(struct bgjob *b, size_t from, const char *want, int ms)
{
	double end = (double)monotonic_ms() + ms;
	const char *hit;

	while ((hit = strstr(b->out + from, want)) == NULL) {
		double left = end - (double)monotonic_ms();
		ck_assert_msg(left > 0 && !b->eof,
		    "the job did not print \"%s\" (within %d ms): %s", want, ms,
		    b->out);
		bg_pump(b, (int)left);
	}
	return hit;
}

/* How many times s appears at or after offset from. */
static int
bg_count(const struct bgjob *b, size_t from, const char *s)
{
	int n = 0;

	for (const char *p = strstr(b->out + from, s); p != NULL;
	     p = strstr(p + 1, s))
		n++;
	return n;
}

/* Waits up to ms for `cordon run` to end (and its output): its exit
 * status. */
static int
bg_wait(struct bgjob *b, int ms)
{
	double end = (double)monotonic_ms() + ms;
	int st;

	for (;;) {
		pid_t r = waitpid(b->pid, &st, WNOHANG);
		if (r == b->pid)
			break;
		if ((double)monotonic_ms() > end) {
			kill(b->pid, SIGKILL);
			waitpid(b->pid, NULL, 0);
			ck_abort_msg("cordon run did not end within %d ms: %s",
			    ms, b->out);
		}
		bg_pump(b, 50);
	}
	/* What is still in the pipe; whatever else holds it open (nothing
	 * should) does not hold the test. */
	while (!b->eof && (double)monotonic_ms() < end)
		bg_pump(b, 100);
	close(b->fd);
	b->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The value the job printed as NAME=value, up to a space or newline. */
static char *
printed(const struct bgjob *b, const char *name)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "%s=", name);
	p = strstr(b->out, key);
	ck_assert_msg(p != NULL, "the job printed no %s: %s", key, b->out);
	p += strlen(key);
	return strndup(p, strcspn(p, " \r\n"));
}

/* The mint a job makes through broker.cordon, as a shell function. */
#define MINT_FN                                                                \
	"mint() { curl -s -X POST http://broker.cordon/v1/token "              \
	"-d '{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}' | "         \
	"sed -n 's/.*access_token\":\"\\([^\"]*\\)\".*/\\1/p'; }; "

/* A loop of requests to the upstream, each printed as "req N CODE:DENY"
 * (CODE 000 when no answer came, DENY the X-Cordon-Deny reason). */
static void
request_loop(char *out, size_t len)
{
	snprintf(out, len,
	    "i=0; while [ $i -lt 500 ]; do i=$((i+1)); "
	    "echo \"req $i $(curl -s -m 3 -o /dev/null "
	    "-w '%%{http_code}:%%header{x-cordon-deny}' "
	    "http://api.test:%u/ok/x)\"; sleep 0.1; done",
	    upstream_port(plain));
}

/* --- what the services say --------------------------------------------- */

/* Whether the broker says tok is active. */
static bool
introspect_active(const char *tok)
{
	return harness_token_active(broker, verifier, tok);
}

/* The broker's view of the job (json_decref it). */
static json_t *
job_at_broker(const char *job)
{
	char path[160];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	return harness_expect(broker, 200, "GET", path, admin, NULL, NULL);
}

static void
revoke_job(const char *job, const char *reason)
{
	char path[160];

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(harness_expect(broker, 200, "POST", path, admin, NULL,
	    json_pack("{s:s}", "reason", reason)));
}

static void
audit_holds(void)
{
	json_t *v = harness_expect(broker, 200, "GET", "/v1/audit?verify=1",
	    admin, NULL, NULL);

	ck_assert_msg(json_is_true(json_object_get(v, "ok")),
	    "the audit chain does not hold: %s", json_dumps(v, JSON_COMPACT));
	json_decref(v);
}

/* The hatch's directory of job's workspace, resolved as the kernel
 * shows mount points. */
static void
workspace_dir(const char *job, char *out, size_t len)
{
	char real[PATH_MAX];

	ck_assert_ptr_nonnull(realpath(hatch->dir, real));
	snprintf(out, len, "%s/var/hatch/workspaces/%s", real, job);
}

/* Mounts at or under root, as this (the host's) mount namespace sees. */
static int
mounts_under(const char *root)
{
	char *mounts[256];
	size_t n = harness_mounts_under(root, mounts, 256);

	for (size_t i = 0; i < n; i++)
		free(mounts[i]);
	return (int)n;
}

/* The uid job runs as, from the lock file the launcher holds for it
 * (<runtime_dir>/uids/<uid>: "<pid> <job>"). */
static unsigned
job_uid(const char *job)
{
	char dir[500], path[800], line[256];
	unsigned uid = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/uids", launcher_run);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' &&
		    harness_read_line(path, line, sizeof(line)) == 0 &&
		    strstr(line, job) != NULL)
			uid = (unsigned)strtoul(e->d_name, NULL, 10);
	}
	closedir(d);
	ck_assert_msg(uid >= UID_BASE && uid < UID_BASE + UID_COUNT,
	    "no uid of the launcher's for %s", job);
	return uid;
}

/* Live processes running as a uid in [lo, hi) (zombies hold nothing and
 * are not counted). */
static int
processes_in(unsigned lo, unsigned hi)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], line[256], state = '?';
		unsigned uid = 0;
		FILE *st;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		st = fopen(path, "r");
		if (st == NULL)
			continue;
		while (fgets(line, sizeof(line), st) != NULL) {
			if (sscanf(line, "State: %c", &state) == 1)
				continue;
			if (sscanf(line, "Uid: %u", &uid) == 1)
				break;
		}
		fclose(st);
		n += uid >= lo && uid < hi && state != 'Z';
	}
	closedir(d);
	return n;
}

static int
processes_of(unsigned uid)
{
	return processes_in(uid, uid + 1);
}

/* Seals job's workspace at the hatch and checks that the patch it serves
 * is the one the report describes: the report. */
static json_t *
seal_and_check(const char *job)
{
	char path[160], sha[SHA256_HEX_LEN + 1];
	struct httpc_answer a;
	json_t *rep;

	snprintf(path, sizeof(path), "/v1/workspaces/%s/seal", job);
	rep = harness_expect(hatch, 200, "POST", path, launcher, NULL, NULL);
	ck_assert(json_is_true(
	    json_object_get(json_object_get(rep, "patch"), "complete")));
	snprintf(path, sizeof(path), "/v1/workspaces/%s/patch", job);
	ck_assert_int_eq(httpc_request(hatch->base, "GET", path, launcher, NULL,
			     NULL, 10000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	sha256_hex(a.body.data != NULL ? a.body.data : "", a.body.len, sha);
	ck_assert_str_eq(sha,
	    json_string_value(
		json_object_get(json_object_get(rep, "patch"), "sha256")));
	httpc_answer_free(&a);
	return rep;
}

/* Whether the report lists a change of path. */
static bool
report_changes(const json_t *rep, const char *path)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(rep, "changes"), i, c)
	{
		const char *p = json_string_value(json_object_get(c, "path"));
		if (p != NULL && strcmp(p, path) == 0)
			return true;
	}
	return false;
}

/* Removes job's workspace at the hatch: nothing of it stays, mounted or
 * on disk. */
static void
delete_workspace(const char *job)
{
	char path[160], ws[PATH_MAX];
	struct stat st;

	workspace_dir(job, ws, sizeof(ws));
	snprintf(path, sizeof(path), "/v1/workspaces/%s", job);
	json_decref(
	    harness_expect(hatch, 200, "DELETE", path, launcher, NULL, NULL));
	ck_assert_int_eq(mounts_under(ws), 0);
	ck_assert_msg(lstat(ws, &st) < 0 && errno == ENOENT,
	    "the workspace %s is still on disk", ws);
}

/* `cordon recover --json`: its answer (json_decref it), its exit status
 * in *status. */
static json_t *
recover(int *status)
{
	static char out[1 << 16], err[1 << 14];
	char *argv[] = { (char *)harness_bin("cordon"), "recover", "--json",
		"--config", cfgpath, NULL };
	json_t *j;

	*status = harness_run(argv, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "cordon recover said: %s %s", out, err);
	return j;
}

/* The record of job at the launcher (recover.c): whether it is there. */
static bool
record_exists(const char *job)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/running/%s", launcher_state, job);
	return access(path, F_OK) == 0;
}

/* --- 1: the launcher dies ----------------------------------------------- */

/*
 * kill -9 of `cordon run` in the middle of its job. Its sandbox dies with
 * it (the sandbox's init has PDEATHSIG); the broker's dead man's switch
 * revokes the job once its lease lapses, and with it the token the job
 * held; the proxy closes the channel on that revocation. The launcher
 * never reached its stop path, so the workspace is still there, and the
 * job's record with it: `cordon recover` (what a restarted launcher runs)
 * finishes the job, and saves the patch with what the job wrote; then
 * nothing of it is mounted. While the launcher lived, recover left its
 * job alone.
 */
START_TEST(a_dead_launchers_job_is_revoked_by_its_lease)
{
	struct bgjob *b = malloc(sizeof(*b));
	char ws[PATH_MAX], path[160], *job, *tok;
	const char *state = NULL;
	json_t *j = NULL, *rep;
	unsigned uid;
	double end;
	int i;

	ck_assert_ptr_nonnull(b);
	services(2);
	bg_start(b,
	    MINT_FN "T=$(mint); echo partial > repo/PARTIAL; "
		    "echo JOB=$CORDON_JOB TOKEN=$T; sleep 60");
	bg_expect(b, 0, "TOKEN=", 20000);
	job = printed(b, "JOB");
	tok = printed(b, "TOKEN");
	ck_assert_msg(strncmp(tok, "crd_", 4) == 0, "%s", b->out);
	ck_assert(introspect_active(tok));
	uid = job_uid(job);
	ck_assert_int_gt(processes_of(uid), 0);

	/* A live launcher's job is not recover's. */
	ck_assert(record_exists(job));
	j = recover(&i);
	ck_assert_int_eq(i, 0);
	ck_assert_int_eq(json_array_size(json_object_get(j, "jobs")), 0);
	json_decref(j);
	j = NULL;
	ck_assert(introspect_active(tok));

	kill(b->pid, SIGKILL);
	ck_assert_int_eq(bg_wait(b, 10000), 128 + SIGKILL);

	/* The sandbox went with its launcher: none of its processes. */
	for (i = 0; i < 100 && processes_of(uid) > 0; i++)
		usleep(100000);
	ck_assert_msg(processes_of(uid) == 0,
	    "a process of the job (uid %u) outlived its launcher", uid);

	/* The lease (2 s) lapses: the broker revokes the job by itself. */
	end = (double)monotonic_ms() + 15000;
	while ((double)monotonic_ms() < end) {
		json_decref(j);
		j = job_at_broker(job);
		state = json_string_value(json_object_get(j, "state"));
		if (state != NULL && strcmp(state, "revoked") == 0)
			break;
		usleep(200000);
	}
	ck_assert_msg(state != NULL && strcmp(state, "revoked") == 0,
	    "the job was not revoked when its lease lapsed: %s",
	    json_dumps(j, JSON_COMPACT));
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "lease_expired");
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(json_object_get(j,
								"tokens"),
						 0),
				 "state")),
	    "revoked");
	json_decref(j);
	ck_assert(!introspect_active(tok));

	/* The proxy heard it on the feed and closed the channel itself. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	end = (double)monotonic_ms() + 10000;
	for (;;) {
		j = harness_expect(proxy, 200, "GET", path, launcher, NULL,
		    NULL);
		state = json_string_value(json_object_get(j, "state"));
		bool closed = state != NULL && strcmp(state, "open") != 0;
		json_decref(j);
		if (closed)
			break;
		ck_assert_msg((double)monotonic_ms() < end,
		    "the proxy kept the dead launcher's channel open");
		usleep(100000);
	}

	/* The workspace is left as the job left it: still mounted, not
	 * sealed, and the record says so. */
	workspace_dir(job, ws, sizeof(ws));
	ck_assert_int_eq(mounts_under(ws), 2); /* rw/ and lower/ */
	snprintf(path, sizeof(path), "/v1/workspaces/%s/report", job);
	json_decref(
	    harness_expect(hatch, 409, "GET", path, launcher, NULL, NULL));
	ck_assert(record_exists(job));

	/* recover finishes it: sealed, the patch out, the workspace gone. */
	j = recover(&i);
	ck_assert_int_eq(i, 0);
	rep = json_array_get(json_object_get(j, "jobs"), 0);
	ck_assert_msg(rep != NULL &&
		strcmp(json_string_value(json_object_get(rep, "job")), job) ==
		    0,
	    "%s", json_dumps(j, JSON_COMPACT));
	ck_assert_str_eq(json_string_value(json_object_get(rep, "revoked")),
	    "revoked");
	const char *patch = json_string_value(
	    json_object_get(json_object_get(rep, "workspace"), "patch"));
	ck_assert_ptr_nonnull(patch);
	ck_assert_msg(file_holds(patch, "+partial"), "%s holds no write",
	    patch);
	json_decref(j);
	ck_assert_int_eq(mounts_under(ws), 0);
	ck_assert_int_eq(access(ws, F_OK), -1);
	ck_assert(!record_exists(job));
	/* And once is enough. */
	j = recover(&i);
	ck_assert_int_eq(i, 0);
	ck_assert_int_eq(json_array_size(json_object_get(j, "jobs")), 0);
	json_decref(j);
	audit_holds();
	free(job);
	free(tok);
	free(b);
}
END_TEST

/*
 * The same death under cordon serve: serve sees its child killed and runs
 * `cordon recover` itself. The job is revoked by recover (launcher_lost)
 * long before its 30 s lease would lapse, the patch holds what the job
 * wrote, and neither workspace nor record is left.
 */
START_TEST(serve_finishes_the_job_of_a_killed_child)
{
	static char cfg[8192];
	struct daemon serve;
	char path[600], ws[PATH_MAX], *job;
	json_t *j, *rec;
	pid_t child;
	double end;
	FILE *f;
	size_t n;

	services(30);
	f = fopen(cfgpath, "re");
	ck_assert_ptr_nonnull(f);
	n = fread(cfg, 1, sizeof(cfg) - 1, f);
	fclose(f);
	cfg[n] = '\0';
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);

	snprintf(path, sizeof(path), "%s/repo", inputs);
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s]}", "manifest",
		"fault-job", "inputs", "src", path, "dst", "repo", "command",
		"/bin/sh", "-c", "echo partial > repo/PARTIAL.md; sleep 60"));
	job = strdup(json_string_value(json_object_get(j, "job")));
	json_decref(j);
	workspace_dir(job, ws, sizeof(ws));
	snprintf(path, sizeof(path), "%s/rw/upper/repo/PARTIAL.md", ws);
	for (end = (double)monotonic_ms() + 15000;
	     access(path, F_OK) != 0 && (double)monotonic_ms() < end;)
		usleep(50000);
	ck_assert_msg(access(path, F_OK) == 0, "the job wrote nothing");

	/* Its cordon run, by the pid its record names. */
	snprintf(path, sizeof(path), "%s/running/%s", launcher_state, job);
	rec = json_load_file(path, 0, NULL);
	child = (pid_t)json_integer_value(json_object_get(rec, "pid"));
	json_decref(rec);
	ck_assert_int_gt(child, 0);
	ck_assert_int_eq(kill(child, SIGKILL), 0);

	for (end = (double)monotonic_ms() + 20000;
	     (record_exists(job) || access(ws, F_OK) == 0) &&
	     (double)monotonic_ms() < end;)
		usleep(100000);
	ck_assert_msg(!record_exists(job), "serve left the record");
	ck_assert_msg(access(ws, F_OK) != 0, "serve left the workspace");
	ck_assert_int_eq(mounts_under(ws), 0);
	snprintf(path, sizeof(path), "%s/%s.patch", launcher_state, job);
	ck_assert_msg(file_holds(path, "+partial"), "%s", path);
	j = job_at_broker(job);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "revoked");
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "launcher_lost");
	json_decref(j);
	/* serve's log says so, in its own JSON lines. */
	json_t *lines = daemon_log_lines(&serve), *line;
	bool logged = false;
	size_t k;
	json_array_foreach(lines, k, line)
	{
		const char *ev =
		    json_string_value(json_object_get(line, "event"));
		const char *lj =
		    json_string_value(json_object_get(line, "job"));
		logged |= ev != NULL && strcmp(ev, "job_recovered") == 0 &&
		    lj != NULL && strcmp(lj, job) == 0;
	}
	json_decref(lines);
	ck_assert_msg(logged, "serve's log has no job_recovered for %s", job);
	ck_assert_int_eq(daemon_stop(&serve), 0);
	free(job);
}
END_TEST

/* --- 2: the broker dies -------------------------------------------------- */

/*
 * kill -9 of the broker while a job runs, right after a revoke it
 * answered. While it is down, every request of the running job is
 * refused (feed_unavailable) and none reaches the upstream; once it is
 * back on the same address, what was revoked is still revoked, what was
 * not still works, the job's requests pass again, and the audit holds.
 */
START_TEST(a_broker_crash_revives_no_token)
{
	struct bgjob *b = malloc(sizeof(*b));
	char script[2048], loop[1024], path[160], other[64], *job, *t1, *t2;
	json_t *j;
	const char *hit, *other_tok;
	unsigned passed;
	size_t off;

	ck_assert_ptr_nonnull(b);
	services(30);
	request_loop(loop, sizeof(loop));
	snprintf(script, sizeof(script),
	    MINT_FN "echo JOB=$CORDON_JOB T1=$(mint) T2=$(mint) ; %s", loop);
	bg_start(b, script);
	bg_expect(b, 0, "req 1 200:", 20000);
	job = printed(b, "JOB");
	t1 = printed(b, "T1");
	t2 = printed(b, "T2");
	ck_assert(introspect_active(t1));
	ck_assert(introspect_active(t2));

	/* One of the job's tokens revoked alone (RFC 7009), and another
	 * job revoked whole, the instant before the crash. */
	j = harness_expect(broker, 200, "POST", "/v1/revoke", admin, NULL,
	    json_pack("{s:s}", "token", t1));
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	json_decref(j);
	j = harness_expect(broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "fault-job"));
	snprintf(other, sizeof(other), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	j = harness_expect(broker, 200, "POST", "/v1/token", verifier,
	    (snprintf(path, sizeof(path), "X-Cordon-Job: %s", other), path),
	    json_pack("{s:s, s:{s:s}}", "capability", "x.read", "params", "t",
		"1"));
	other_tok = json_string_value(json_object_get(j, "access_token"));
	ck_assert_ptr_nonnull(other_tok);
	char *tb = strdup(other_tok);
	json_decref(j);
	revoke_job(other, "before the crash");
	daemon_kill(broker);

	/* Down: the job's requests are refused, none passes. */
	off = b->n;
	hit = bg_expect(b, off, ":feed_unavailable", 15000);
	ck_assert_msg(strncmp(hit - 4, " 503", 4) == 0, "%s", hit - 4);
	passed = upstream_requests(plain);
	off = (size_t)(hit - b->out);
	/* A few more tries while it is down, all refused. */
	for (int k = 0; bg_count(b, off, "req ") < 4; k++) {
		ck_assert_msg(k < 100, "the job stopped asking: %s",
		    b->out + off);
		bg_pump(b, 100);
	}
	ck_assert_int_eq(bg_count(b, off, " 200:"), 0);
	ck_assert_uint_eq(upstream_requests(plain), passed);

	ck_assert_int_eq(daemon_restart(broker), 0);
	/* Back: nothing revoked came back to life. */
	ck_assert(!introspect_active(t1));
	ck_assert(!introspect_active(tb));
	j = job_at_broker(other);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "revoked");
	json_decref(j);
	/* What was not revoked survived, and the job still runs. */
	ck_assert(introspect_active(t2));
	j = job_at_broker(job);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "running");
	json_decref(j);
	audit_holds();
	/* The proxy hears the feed again: the job's requests pass. */
	bg_expect(b, b->n, " 200:", 20000);
	ck_assert_uint_gt(upstream_requests(plain), passed);

	revoke_job(job, "done");
	bg_wait(b, 15000);
	ck_assert(!introspect_active(t2));
	free(tb);
	free(job);
	free(t1);
	free(t2);
	free(b);
}
END_TEST

/* --- 3: the proxy dies --------------------------------------------------- */

/*
 * kill -9 of the proxy while a job is sending requests, then a restart:
 * the job's channel went with the proxy and does not come back, so from
 * the kill on none of the job's requests reaches the upstream, before or
 * after the restart; a new job gets a channel and works.
 */
START_TEST(a_proxy_crash_closes_the_channel_for_good)
{
	struct bgjob *b = malloc(sizeof(*b));
	char loop[1024], script[1200], chan[PATH_MAX], real[PATH_MAX];
	char out[1 << 16], err[1 << 14], input[400], *job;
	const char *hit;
	unsigned passed;
	size_t off, restarted;
	json_t *r;
	int k;

	ck_assert_ptr_nonnull(b);
	services(30);
	request_loop(loop, sizeof(loop));
	snprintf(script, sizeof(script), "echo JOB=$CORDON_JOB; %s", loop);
	bg_start(b, script);
	bg_expect(b, 0, "req 1 200:", 20000);
	job = printed(b, "JOB");

	daemon_kill(proxy);
	passed = upstream_requests(plain);
	/* The first failure: every request after it was sent after the
	 * kill. */
	hit = bg_expect(b, b->n, " 000:", 15000);
	off = (size_t)(hit - b->out);

	ck_assert_int_eq(daemon_restart(proxy), 0);
	/* The job goes on asking after the restart: nothing passes. */
	restarted = b->n;
	for (k = 0; bg_count(b, restarted, "req ") < 5; k++) {
		ck_assert_msg(k < 200, "the job stopped asking: %s",
		    b->out + restarted);
		bg_pump(b, 100);
	}
	ck_assert_msg(bg_count(b, off, " 200:") == 0,
	    "a request passed after the proxy died: %s", b->out + off);
	ck_assert_uint_eq(upstream_requests(plain), passed);
	/* The old channel's socket takes no connection. */
	ck_assert_ptr_nonnull(realpath(proxy->dir, real));
	snprintf(chan, sizeof(chan), "%s/var/proxy/run/channels/%s.sock", real,
	    job);
	ck_assert_int_lt(unix_connect(chan), 0);

	/* A new job gets a channel, and its request passes. */
	snprintf(input, sizeof(input), "%s/repo:repo", inputs);
	snprintf(script, sizeof(script),
	    "echo code=$(curl -s -m 5 -o /dev/null -w '%%{http_code}' "
	    "http://api.test:%u/ok/new)",
	    upstream_port(plain));
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", cfgpath, "--manifest", "fault-job", "--input",
		input, "--", "/bin/sh", "-c", script, NULL };
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    0);
	r = json_loads(out, 0, NULL);
	ck_assert_msg(r != NULL, "%s %s", out, err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(r, "output"),
				"stdout"),
		"text"));
	ck_assert_msg(text != NULL && strstr(text, "code=200") != NULL, "%s",
	    out);
	json_decref(r);
	ck_assert_uint_eq(upstream_requests(plain), passed + 1);

	/* The old job, cut off all along, is revoked by an operator. */
	revoke_job(job, "cut off");
	bg_wait(b, 15000);
	ck_assert_int_eq(bg_count(b, off, " 200:"), 0);
	ck_assert_uint_eq(upstream_requests(plain), passed + 1);
	free(job);
	free(b);
}
END_TEST

/* --- 4: the hatch dies --------------------------------------------------- */

struct seal_call {
	pthread_t thread;
	char base[96], path[160], key[128];
	int rc;
	long status;
};

static void *
seal_thread(void *arg)
{
	struct seal_call *c = arg;
	struct httpc_answer a;

	c->rc = httpc_request(c->base, "POST", c->path, c->key, NULL, NULL,
	    30000, &a);
	if (c->rc == 0) {
		c->status = a.status;
		httpc_answer_free(&a);
	}
	return NULL;
}

/*
 * kill -9 of the hatch right before a job's seal, and again in the middle
 * of sealing it. The launcher's stop path finds no hatch and says so (no
 * verdict); the workspace stays mounted and unsealed. After each restart
 * the seal can be asked again; it ends whole (the patch served is the one
 * the report describes), the job's writes are in it, and deleting the
 * workspace leaves nothing mounted.
 */
START_TEST(a_hatch_crash_during_the_seal_can_seal_again)
{
	struct bgjob *b = malloc(sizeof(*b));
	struct seal_call c;
	char ws[PATH_MAX], path[160], *job;
	json_t *rep;

	ck_assert_ptr_nonnull(b);
	services(30);
	/* Enough files that sealing them takes a while. */
	bg_start(b,
	    "python3 -c 'import os\n"
	    "os.makedirs(\"repo/gen\")\n"
	    "for i in range(2000):\n"
	    "    open(\"repo/gen/f%d.txt\" % i, \"w\").write(\"line\\n\" * 80)'"
	    "; echo fixed > repo/README.md; echo JOB=$CORDON_JOB WROTE; "
	    "sleep 60");
	bg_expect(b, 0, "WROTE", 30000);
	job = printed(b, "JOB");
	workspace_dir(job, ws, sizeof(ws));

	/* Right before the seal: the hatch dies, then the job is stopped. */
	daemon_kill(hatch);
	revoke_job(job, "stop it");
	ck_assert_int_eq(bg_wait(b, 15000), 4);
	ck_assert_msg(strstr(b->out, "(no verdict)") != NULL &&
		strstr(b->out,
		    "is kept at the hatch: the hatch did not "
		    "answer the seal") != NULL,
	    "the launcher did not say the seal failed: %s", b->out);
	ck_assert_int_eq(mounts_under(ws), 2); /* rw/ and lower/ */

	ck_assert_int_eq(daemon_restart(hatch), 0);
	snprintf(path, sizeof(path), "/v1/workspaces/%s/report", job);
	json_decref(
	    harness_expect(hatch, 409, "GET", path, launcher, NULL, NULL));

	/* During the seal (best effort: the kill may land before it or
	 * after it; each must end the same). */
	memset(&c, 0, sizeof(c));
	snprintf(c.base, sizeof(c.base), "%s", hatch->base);
	snprintf(c.path, sizeof(c.path), "/v1/workspaces/%s/seal", job);
	snprintf(c.key, sizeof(c.key), "%s", launcher);
	ck_assert_int_eq(pthread_create(&c.thread, NULL, seal_thread, &c), 0);
	usleep(20000);
	daemon_kill(hatch);
	pthread_join(c.thread, NULL);
	ck_assert_msg(c.rc < 0 || c.status == 200, "the seal answered %ld",
	    c.status);
	ck_assert_int_eq(mounts_under(ws), 2);

	ck_assert_int_eq(daemon_restart(hatch), 0);
	rep = seal_and_check(job);
	ck_assert(report_changes(rep, "repo/README.md"));
	ck_assert(report_changes(rep, "repo/gen/f1999.txt"));
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(rep, "stats"),
				 "added")),
	    2000);
	json_decref(rep);
	delete_workspace(job);
	free(job);
	free(b);
}
END_TEST

/* --- 5: a full disk under the broker's database -------------------------- */

/* Fills the file system of dir: the filler's path, to unlink. */
static void
fill(const char *dir, char *filler, size_t len)
{
	static char chunk[1 << 16];
	int fd;

	snprintf(filler, len, "%s/filler", dir);
	fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(chunk, 'x', sizeof(chunk));
	for (;;) {
		ssize_t n = write(fd, chunk, sizeof(chunk));
		if (n < 0) {
			ck_assert_int_eq(errno, ENOSPC);
			break;
		}
	}
	close(fd);
}

/* A mint as the proxy asks for one, on job's behalf. */
static json_t *
mint_for(const char *job, long want)
{
	char header[160];

	snprintf(header, sizeof(header), "X-Cordon-Job: %s", job);
	return harness_expect(broker, want, "POST", "/v1/token", verifier,
	    header,
	    json_pack("{s:s, s:{s:s}}", "capability", "x.read", "params", "t",
		"1"));
}

static size_t
tokens_of(const char *job)
{
	json_t *j = job_at_broker(job);
	size_t n = json_array_size(json_object_get(j, "tokens"));

	json_decref(j);
	return n;
}

/* cordon_broker_store_errors_total, from /metrics. */
static long
store_errors(void)
{
	static const char name[] = "\ncordon_broker_store_errors_total ";
	struct httpc_answer a;
	const char *p;
	long n;

	ck_assert_int_eq(httpc_request(broker->base, "GET", "/metrics", NULL,
			     NULL, NULL, 10000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	ck_assert_ptr_nonnull(a.body.data);
	p = strstr(a.body.data, name);
	ck_assert_msg(p != NULL, "no store errors metric");
	n = strtol(p + strlen(name), NULL, 10);
	httpc_answer_free(&a);
	return n;
}

/* A store failure: 503 store_unavailable, and no token in the answer. */
static void
assert_store_refused(json_t *v)
{
	ck_assert_str_eq(json_string_value(json_object_get(v, "error")),
	    "store_unavailable");
	ck_assert_ptr_null(json_object_get(v, "access_token"));
	json_decref(v);
}

/*
 * The broker's state on a tiny tmpfs, filled up: every write that would
 * grant or revoke is refused (503 store_unavailable), nothing is granted
 * without its record (the job lists no token it was not given, and no job
 * appears), reads still answer, and once space is freed the broker works
 * again with its audit chain whole.
 */
START_TEST(a_full_disk_refuses_mints_and_grants_nothing)
{
	static struct daemon own_broker;
	char cfg[600], path[600], filler[500], job[64];
	json_t *j;
	const char *tok;
	char *t0;

	snprintf(tmpfs_dir, sizeof(tmpfs_dir), "%s/db", harness_tmpdir());
	ck_assert_int_eq(mkdir(tmpfs_dir, 0700), 0);
	ck_assert_int_eq(mount("cordon-faults", tmpfs_dir, "tmpfs",
			     MS_NOSUID | MS_NODEV, "size=4m,mode=0700"),
	    0);
	snprintf(cfg, sizeof(cfg), "{\"state_dir\": \"%s\"}", tmpfs_dir);
	broker = &own_broker;
	ck_assert_int_eq(daemon_start(broker, "broker", cfg), 0);
	snprintf(path, sizeof(path), "%s/keys/admin.key", tmpfs_dir);
	ck_assert_int_eq(harness_read_line(path, admin, sizeof(admin)), 0);
	snprintf(path, sizeof(path), "%s/keys/launcher.key", tmpfs_dir);
	ck_assert_int_eq(harness_read_line(path, launcher, sizeof(launcher)),
	    0);
	snprintf(path, sizeof(path), "%s/keys/verifier.key", tmpfs_dir);
	ck_assert_int_eq(harness_read_line(path, verifier, sizeof(verifier)),
	    0);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	put_manifest("fault-job");
	j = harness_expect(broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "fault-job"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	j = mint_for(job, 200);
	t0 = strdup(json_string_value(json_object_get(j, "access_token")));
	json_decref(j);

	fill(tmpfs_dir, filler, sizeof(filler));
	/* Mints, jobs, manifests and revokes: refused, not pretended. */
	for (int i = 0; i < 3; i++)
		assert_store_refused(mint_for(job, 503));
	assert_store_refused(harness_expect(broker, 503, "POST", "/v1/jobs",
	    launcher, NULL, json_pack("{s:s}", "manifest", "fault-job")));
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	assert_store_refused(harness_expect(broker, 503, "POST", path, admin,
	    NULL, json_pack("{s:s}", "reason", "disk full")));
	/* Reads still answer: nothing was granted, nothing claimed. */
	ck_assert_uint_eq(tokens_of(job), 1);
	j = job_at_broker(job);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "running");
	json_decref(j);
	ck_assert(introspect_active(t0));
	/* And the operator is told. */
	ck_assert_int_ge(store_errors(), 5);

	/* Space again: the broker works, and its audit chain holds. */
	ck_assert_int_eq(unlink(filler), 0);
	j = mint_for(job, 200);
	tok = json_string_value(json_object_get(j, "access_token"));
	ck_assert_ptr_nonnull(tok);
	ck_assert(introspect_active(tok));
	json_decref(j);
	ck_assert_uint_eq(tokens_of(job), 2);
	revoke_job(job, "done");
	ck_assert(!introspect_active(t0));
	json_decref(harness_expect(broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", "fault-job")));
	audit_holds();
	free(t0);
	ck_assert_int_eq(daemon_stop(broker), 0);
	ck_assert_int_eq(umount2(tmpfs_dir, 0), 0);
	tmpfs_dir[0] = '\0';
}
END_TEST

/* --- 6: kill -9 at a random point ------------------------------------- */

/*
 * The tests above kill at chosen points. These rounds kill one of the four
 * at a random moment of a whole job (make the job, copy in, open the
 * channel, mint, send requests, write, revoke, close, seal, fetch, remove),
 * restart it, and check what must hold wherever the kill landed:
 *
 *   - every job the broker made ends revoked, every token of it revoked,
 *     and the token the job printed is dead at introspection;
 *   - the proxy holds no open channel for it;
 *   - no process of the job's uid range is left;
 *   - once `cordon recover` has run (as a restarted launcher does), what
 *     the job wrote is in its patch, whether the launcher or recover saved
 *     it, no workspace and no record of it are left, nothing is mounted
 *     under the hatch's workspaces, and the audit chain holds.
 *
 * The seed is printed; CORDON_FAULT_SEED=N replays the same victims and
 * points.
 */
#define JOB_SCRIPT                                                             \
	MINT_FN                                                                \
	"echo JOB=$CORDON_JOB; T=$(mint); echo TOKEN=$T; "                     \
	"echo early > repo/EARLY.md && echo WROTE; i=0; "                      \
	"while [ $i -lt 4 ]; do i=$((i+1)); curl -s -m 1 -o /dev/null "        \
	"http://api.test:%u/ok/r; done; mkdir repo/gen; j=0; "                 \
	"while [ $j -lt 150 ]; do j=$((j+1)); echo l > repo/gen/f$j; "         \
	"done; echo DONE"

#define ROUNDS 16

/* The audit's length: what a round's new records come after. */
static long
audit_length(void)
{
	json_t *v = harness_expect(broker, 200, "GET", "/v1/audit?verify=1",
	    admin, NULL, NULL);
	long n = (long)json_integer_value(json_object_get(v, "records"));

	json_decref(v);
	return n;
}

/* The jobs the broker made after the audit's record `after`. */
static json_t *
jobs_made_after(long after)
{
	char path[96];
	json_t *v, *rec, *jobs = json_array();
	size_t i;

	snprintf(path, sizeof(path), "/v1/audit?after=%ld&limit=10000", after);
	v = harness_expect(broker, 200, "GET", path, admin, NULL, NULL);
	json_array_foreach(json_object_get(v, "records"), i, rec)
	{
		const char *ev =
		    json_string_value(json_object_get(rec, "event"));
		if (ev != NULL && strcmp(ev, "job_created") == 0)
			json_array_append(jobs, json_object_get(rec, "job"));
	}
	json_decref(v);
	return jobs;
}

/* Live processes in this file's uid range. */
static int
processes_in_range(void)
{
	return processes_in(UID_BASE, UID_BASE + UID_COUNT);
}

/* Whether the file at path holds want. */
static bool
file_holds(const char *path, const char *want)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, want) != NULL;
}

/* What the job with id job printed as NAME=, or NULL (free it). */
static char *
printed_by(const struct bgjob *b, const char *job, const char *name)
{
	char *j = strstr(b->out, "JOB=") ? printed(b, "JOB") : NULL;
	char *v = NULL;

	char key[32];

	snprintf(key, sizeof(key), "%s=", name);
	if (j != NULL && strcmp(j, job) == 0 && strstr(b->out, key) != NULL)
		v = printed(b, name);
	free(j);
	return v;
}

/* Everything that must hold for job once the round's kill is over. */
static void
job_ended_clean(const struct bgjob *b, const char *job, const char *round)
{
	char path[PATH_MAX], ws[PATH_MAX], *tok;
	const char *state = NULL;
	bool wrote, open = true;
	json_t *j = NULL, *t;
	struct stat st;
	double end;
	size_t i;
	long code;

	/* Revoked, by its launcher or by its lease. */
	end = (double)monotonic_ms() + 15000;
	for (;;) {
		json_decref(j);
		j = job_at_broker(job);
		state = json_string_value(json_object_get(j, "state"));
		if ((state != NULL && strcmp(state, "revoked") == 0) ||
		    (double)monotonic_ms() > end)
			break;
		usleep(200000);
	}
	ck_assert_msg(state != NULL && strcmp(state, "revoked") == 0,
	    "%s: job %s is not revoked: %s", round, job,
	    json_dumps(j, JSON_COMPACT));
	fprintf(stderr, "it_faults:   %s revoked (%s) after %.0f ms\n", job,
	    json_string_value(json_object_get(j, "stop_reason")),
	    (double)monotonic_ms() - end + 15000);
	json_array_foreach(json_object_get(j, "tokens"), i, t)
	    ck_assert_msg(strcmp(json_string_value(json_object_get(t, "state"))
				  ?: "",
			      "revoked") == 0,
		"%s: a token of %s is not revoked: %s", round, job,
		json_dumps(j, JSON_COMPACT));
	json_decref(j);
	tok = printed_by(b, job, "TOKEN");
	if (tok != NULL && strncmp(tok, "crd_", 4) == 0)
		ck_assert_msg(!introspect_active(tok),
		    "%s: the job's token is alive", round);
	free(tok);

	/* No open channel at the proxy (a restarted proxy knows none). */
	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	for (end = (double)monotonic_ms() + 10000;
	     open && (double)monotonic_ms() < end;) {
		j = harness_call(proxy, "GET", path, launcher, NULL, NULL,
		    &code);
		state = json_string_value(json_object_get(j, "state"));
		open = code == 200 &&
		    (state == NULL || strcmp(state, "open") == 0);
		json_decref(j);
		if (open)
			usleep(100000);
	}
	ck_assert_msg(!open, "%s: the proxy keeps %s's channel open", round,
	    job);

	/* recover ran: the workspace is gone, and what the job wrote is in
	 * the patch, whoever saved it (the launcher or recover). */
	wrote = strstr(b->out, "WROTE") != NULL;
	workspace_dir(job, ws, sizeof(ws));
	ck_assert_msg(lstat(ws, &st) < 0 && errno == ENOENT,
	    "%s: the workspace of %s is still at the hatch", round, job);
	ck_assert_msg(!record_exists(job), "%s: the record of %s is left",
	    round, job);
	snprintf(path, sizeof(path), "%s/%s.patch", launcher_state, job);
	ck_assert_msg(!wrote || file_holds(path, "+early"),
	    "%s: the job wrote, and %s does not hold the write", round, path);
}

START_TEST(a_kill_at_a_random_point_loses_nothing)
{
	static const char *const victims[] = { "launcher", "broker", "proxy",
		"hatch" };
	struct bgjob *b = malloc(sizeof(*b));
	char script[2048], round[160], ws_root[PATH_MAX];
	const char *env = getenv("CORDON_FAULT_SEED");
	unsigned seed = env != NULL ? (unsigned)strtoul(env, NULL, 10)
				    : (unsigned)time(NULL) ^ (unsigned)getpid();
	double t0, span;
	int order[ROUNDS];

	ck_assert_ptr_nonnull(b);
	fprintf(stderr, "it_faults: random kills with CORDON_FAULT_SEED=%u\n",
	    seed);
	services(2);
	snprintf(script, sizeof(script), JOB_SCRIPT, upstream_port(plain));
	workspace_dir("", ws_root, sizeof(ws_root));

	/* An unharmed job first: how long one takes, end to end. */
	t0 = (double)monotonic_ms();
	bg_start(b, script);
	ck_assert_int_eq(bg_wait(b, 60000), 0);
	ck_assert_ptr_nonnull(strstr(b->out, "DONE"));
	span = (double)monotonic_ms() - t0;

	/* Each of the four as often, in an order of the seed's. */
	for (int i = 0; i < ROUNDS; i++)
		order[i] = i % 4;
	for (int i = ROUNDS - 1; i > 0; i--) {
		int k = (int)(rand_r(&seed) % (unsigned)(i + 1)), x = order[i];
		order[i] = order[k];
		order[k] = x;
	}
	for (int i = 0; i < ROUNDS; i++) {
		const char *who = victims[order[i]];
		/* Anywhere in the job, and a little past its end; every
		 * other round in its last 40% and past it, where the stop
		 * path (revoke, close, seal, fetch, removal) is. */
		int at = i % 2 == 0
		    ? (int)(rand_r(&seed) % (unsigned)(span * 1.1 + 1))
		    : (int)(span * 0.6) +
			(int)(rand_r(&seed) % (unsigned)(span * 0.5 + 1));
		long after = audit_length();
		struct daemon *d = order[i] == 1 ? broker
		    : order[i] == 2              ? proxy
		    : order[i] == 3              ? hatch
						 : NULL;
		json_t *jobs, *v;
		size_t k;
		int status;

		t0 = (double)monotonic_ms();
		bg_start(b, script);
		while ((double)monotonic_ms() - t0 < at)
			bg_pump(b,
			    (int)(at - ((double)monotonic_ms() - t0)) + 1);
		if (d == NULL)
			kill(b->pid, SIGKILL);
		else {
			daemon_kill(d);
			ck_assert_int_eq(daemon_restart(d), 0);
		}
		status = bg_wait(b, 60000);
		/* The sandbox goes with its launcher. */
		for (int w = 0; w < 100 && processes_in_range() > 0; w++)
			usleep(100000);
		/* What a restarted launcher does first. */
		int rst;
		json_decref(recover(&rst));
		ck_assert_int_eq(rst, 0);
		snprintf(round, sizeof(round),
		    "round %d (kill -9 %s at %d ms of %.0f, exit %d)", i + 1,
		    who, at, span, status);
		jobs = jobs_made_after(after);
		fprintf(stderr, "it_faults: %s: %zu job(s) to check\n", round,
		    json_array_size(jobs));
		ck_assert_msg(json_array_size(jobs) <= 1, "%s: %zu jobs", round,
		    json_array_size(jobs));
		json_array_foreach(jobs, k, v)
		    job_ended_clean(b, json_string_value(v), round);
		json_decref(jobs);

		/* Nothing left behind, whatever the round did. */
		ck_assert_msg(mounts_under(ws_root) == 0,
		    "%s: a mount is left under %s", round, ws_root);
		ck_assert_msg(processes_in_range() == 0,
		    "%s: a process of a job is left", round);
		audit_holds();
	}
	free(b);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_dead_launchers_job_is_revoked_by_its_lease);
	tcase_add_test(tc, serve_finishes_the_job_of_a_killed_child);
	tcase_add_test(tc, a_broker_crash_revives_no_token);
	tcase_add_test(tc, a_proxy_crash_closes_the_channel_for_good);
	tcase_add_test(tc, a_hatch_crash_during_the_seal_can_seal_again);
	tcase_add_test(tc, a_full_disk_refuses_mints_and_grants_nothing);
	suite_add_tcase(s, tc);
	tc = tcase_create("random");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, a_kill_at_a_random_point_loses_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
