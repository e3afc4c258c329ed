/*
 * The integration harness: real daemons on loopback, each in its own
 * temporary directory, always stopped, their logs shown on failure.
 */
#include "harness.h"
#include "util.h"

#include "digest.h"
#include "http_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#define MAX_DAEMONS 16

static struct daemon *running[MAX_DAEMONS];
static char testdir[300]; /* <root>/<pid of the test process> */
static pid_t testdir_owner;

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	/* Best effort: a busy mount point must not fail the whole run. */
	remove(path);
	return 0;
}

static void
rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A test process that exits normally has passed (Check's forked tests
 * _exit on a failure, skipping this): stop what it left running and drop
 * its directory. A failed test's directory stays for harness_main.
 */
static void
at_exit(void)
{
	for (size_t i = 0; i < MAX_DAEMONS; i++) {
		struct daemon *d = running[i];
		/* pid 0 would be our own process group. */
		if (d == NULL || d->pid <= 0)
			continue;
		fprintf(stderr, "harness: %s (pid %d) still running at exit\n",
		    d->name, (int)d->pid);
		daemon_dump_log(d);
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		running[i] = NULL;
	}
	if (testdir[0] != '\0' && testdir_owner == getpid())
		rm_tree(testdir);
}

static int
print_log(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t n = strlen(path);
	char line[4096];
	FILE *f;

	(void)st;
	(void)ftw;
	if (flag != FTW_F || n < 4 || strcmp(path + n - 4, ".log") != 0)
		return 0;
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	fprintf(stderr, "----- %s -----\n", path);
	while (fgets(line, sizeof(line), f) != NULL)
		fputs(line, stderr);
	fclose(f);
	return 0;
}

size_t
harness_mounts_under(const char *root, char **out, size_t max)
{
	char line[8192];
	size_t n = 0, len = strlen(root);
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (f == NULL)
		return 0;
	while (n < max && fgets(line, sizeof(line), f) != NULL) {
		/* The fifth field is the mount point. */
		char *p = line;
		for (int i = 0; i < 4 && p != NULL; i++) {
			p = strchr(p, ' ');
			if (p != NULL)
				p++;
		}
		if (p == NULL)
			continue;
		p[strcspn(p, " ")] = '\0';
		if (strncmp(p, root, len) == 0 &&
		    (p[len] == '/' || p[len] == '\0') &&
		    (out[n] = strdup(p)) != NULL)
			n++;
	}
	fclose(f);
	return n;
}

/*
 * Unmounts whatever a test left mounted under root (a failed test's hatch
 * workspaces, its overlays), deepest first, so that removal can proceed.
 */
static void
unmount_under(const char *root)
{
	char *mounts[256];
	size_t n = harness_mounts_under(root, mounts, 256);

	while (n > 0) {
		umount2(mounts[--n], MNT_DETACH);
		free(mounts[n]);
	}
}

int
harness_main(Suite *suite)
{
	char root[200];
	const char *tmp = getenv("TMPDIR");
	SRunner *sr;
	int failed;

	snprintf(root, sizeof(root), "%s/cordon-it-XXXXXX",
	    tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(root) == NULL) {
		perror("harness: mkdtemp");
		return 1;
	}
	setenv("CORDON_IT_ROOT", root, 1);
	sr = srunner_create(suite);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed > 0) {
		fprintf(stderr,
		    "harness: logs of the daemons of failed tests "
		    "follow\n");
		nftw(root, print_log, 16, FTW_PHYS);
	}
	if (getenv("CORDON_KEEP_TMP") == NULL) {
		unmount_under(root);
		rm_tree(root);
	} else
		fprintf(stderr, "harness: kept %s (mounts too)\n", root);
	return failed == 0 ? 0 : 1;
}

const char *
harness_bin(const char *prog)
{
	/* One slot a path, never written again: a caller's pointer stays
	 * its program's whatever is asked after (daemon_spawn asks too). */
	static char paths[32][512];
	static size_t used;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const char *dir = getenv("CORDON_BIN_DIR");
	char path[512];
	const char *found = NULL;

	snprintf(path, sizeof(path), "%s/%s",
	    dir != NULL ? dir : CORDON_BIN_DIR, prog);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < used && found == NULL; i++)
		if (strcmp(paths[i], path) == 0)
			found = paths[i];
	if (found == NULL && used < sizeof(paths) / sizeof(paths[0])) {
		memcpy(paths[used], path, sizeof(path));
		found = paths[used++];
	}
	pthread_mutex_unlock(&lock);
	if (found == NULL) {
		fprintf(stderr, "harness: more than 32 programs asked for\n");
		abort();
	}
	return found;
}

const char *
harness_tmpdir(void)
{
	static char dir[400];
	static unsigned n;
	const char *root = getenv("CORDON_IT_ROOT");

	if (testdir_owner != getpid()) {
		snprintf(testdir, sizeof(testdir), "%s/%d",
		    root != NULL ? root : "/tmp", (int)getpid());
		if (mkdir(testdir, 0700) < 0 && errno != EEXIST) {
			perror("harness: mkdir");
			abort();
		}
		testdir_owner = getpid();
		n = 0;
		atexit(at_exit);
	}
	snprintf(dir, sizeof(dir), "%s/%u", testdir, n++);
	if (mkdir(dir, 0700) < 0) {
		perror("harness: mkdir");
		abort();
	}
	return dir;
}

void
daemon_dump_log(const struct daemon *d)
{
	char line[4096];
	FILE *f = fopen(d->log, "r");

	fprintf(stderr, "----- %s log (%s) -----\n", d->name, d->log);
	if (f == NULL) {
		fprintf(stderr, "(no log: %s)\n", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL)
		fputs(line, stderr);
	fclose(f);
	fprintf(stderr, "----- end of %s log -----\n", d->name);
}

json_t *
daemon_log_lines(const struct daemon *d)
{
	json_t *lines = json_array();
	char line[8192];
	FILE *f = fopen(d->log, "r");

	if (f == NULL)
		return lines;
	while (fgets(line, sizeof(line), f) != NULL) {
		json_t *v = json_loads(line, JSON_DECODE_ANY, NULL);
		json_array_append_new(lines, v != NULL ? v : json_string(line));
	}
	fclose(f);
	return lines;
}

/* How many "listening" lines the log holds (one per start). */
static size_t
count_listening(const struct daemon *d)
{
	json_t *lines = daemon_log_lines(d), *v;
	size_t i, n = 0;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		n += ev != NULL && strcmp(ev, "listening") == 0;
	}
	json_decref(lines);
	return n;
}

/* The address in this start's "listening" line, once it is there. */
static bool
find_listening(struct daemon *d)
{
	json_t *lines = daemon_log_lines(d), *v;
	size_t i, n = 0;
	bool found = false;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		const char *addr =
		    json_string_value(json_object_get(v, "addr"));
		if (ev != NULL && addr != NULL &&
		    strcmp(ev, "listening") == 0 && n++ >= d->listening_seen) {
			snprintf(d->addr, sizeof(d->addr), "%s", addr);
			snprintf(d->base, sizeof(d->base), "http://%s", addr);
			found = true;
		}
	}
	json_decref(lines);
	return found;
}

static void
forget(struct daemon *d)
{
	for (size_t i = 0; i < MAX_DAEMONS; i++)
		if (running[i] == d)
			running[i] = NULL;
}

/* Forks and execs d's program in d->dir, and waits until it answers. */
static int
daemon_spawn(struct daemon *d)
{
	char cfgpath[320], prog[512], listen[64];
	const char *argv[32];
	size_t argc = 0;
	double t0;
	int fd;

	for (size_t i = 0; d->wrap != NULL && d->wrap[i] != NULL && i < 8; i++)
		argv[argc++] = d->wrap[i];
	if (strcmp(d->name, "launcher") == 0) {
		snprintf(prog, sizeof(prog), "%s", harness_bin("cordon"));
		argv[argc++] = prog;
		argv[argc++] = "serve";
	} else {
		char bin[64];
		snprintf(bin, sizeof(bin), "cordon-%s", d->name);
		snprintf(prog, sizeof(prog), "%s", harness_bin(bin));
		argv[argc++] = prog;
	}
	/* A restart comes back on the same address, as a restarted service
	 * does: its clients must find it again. */
	snprintf(listen, sizeof(listen), "%s",
	    d->addr[0] != '\0' ? d->addr : "127.0.0.1:0");
	argv[argc++] = "--listen";
	argv[argc++] = listen;
	if (d->has_config) {
		snprintf(cfgpath, sizeof(cfgpath), "%s/config.json", d->dir);
		argv[argc++] = "--config";
		argv[argc++] = cfgpath;
	}
	argv[argc] = NULL;

	/* Appended to, so that a restart keeps the earlier lines. */
	fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	d->addr[0] = '\0';
	d->listening_seen = count_listening(d);
	fflush(NULL);
	d->pid = fork();
	if (d->pid < 0)
		return -1;
	if (d->pid == 0) {
		/* Die with the test, whatever way it ends; and with SIGPIPE
		 * as any shell leaves it, whatever the test ignores. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(fd, STDOUT_FILENO) < 0 ||
		    dup2(fd, STDERR_FILENO) < 0 || chdir(d->dir) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "harness: exec %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	close(fd);
	for (size_t i = 0; i < MAX_DAEMONS; i++)
		if (running[i] == NULL) {
			running[i] = d;
			break;
		}

	t0 = (double)monotonic_ms();
	while ((double)monotonic_ms() - t0 < 10000) {
		long status = 0;
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
			fprintf(stderr, "harness: %s exited during start\n",
			    d->name);
			forget(d);
			d->pid = 0;
			daemon_dump_log(d);
			return -1;
		}
		if (d->addr[0] != '\0' || find_listening(d)) {
			json_t *h = harness_get_json(d, "/healthz", &status);
			const char *feed =
			    json_string_value(json_object_get(h, "feed"));
			/* A proxy refuses every channel until its first poll
			 * of the feed is answered: started is when it is (a
			 * test whose broker is down on purpose waits 3 s). */
			bool waiting = feed != NULL &&
			    strcmp(feed, "unavailable") == 0 &&
			    (double)monotonic_ms() - t0 < 3000;
			json_decref(h);
			if (status == 200 && !waiting)
				return 0;
		}
		usleep(10 * 1000);
	}
	fprintf(stderr, "harness: %s did not answer /healthz within 10 s\n",
	    d->name);
	daemon_dump_log(d);
	return -1;
}

int
daemon_start(struct daemon *d, const char *name, const char *config)
{
	return daemon_start_wrapped(d, name, config, NULL);
}

int
daemon_start_wrapped(struct daemon *d, const char *name, const char *config,
    const char *const *wrap)
{
	memset(d, 0, sizeof(*d));
	d->name = name;
	d->wrap = wrap;
	snprintf(d->dir, sizeof(d->dir), "%s", harness_tmpdir());
	snprintf(d->log, sizeof(d->log), "%s/%s.log", d->dir, name);
	if (config != NULL) {
		char path[320];
		snprintf(path, sizeof(path), "%s/config.json", d->dir);
		FILE *f = fopen(path, "w");
		if (f == NULL || fputs(config, f) < 0 || fclose(f) != 0)
			return -1;
		d->has_config = true;
	}
	return daemon_spawn(d);
}

int
daemon_restart(struct daemon *d)
{
	return daemon_spawn(d);
}

void
daemon_kill(struct daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	forget(d);
	d->pid = 0;
}

int
daemon_stop(struct daemon *d)
{
	double t0 = (double)monotonic_ms();
	int status;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, SIGTERM);
	while ((double)monotonic_ms() - t0 < 10000) {
		pid_t r = waitpid(d->pid, &status, WNOHANG);
		if (r == d->pid) {
			int code = WIFEXITED(status) ? WEXITSTATUS(status)
						     : 128 + WTERMSIG(status);
			forget(d);
			d->pid = 0;
			if (code != 0) {
				fprintf(stderr, "harness: %s exited with %d\n",
				    d->name, code);
				daemon_dump_log(d);
			}
			return code;
		}
		usleep(5 * 1000);
	}
	fprintf(stderr, "harness: %s ignored SIGTERM for 10 s\n", d->name);
	daemon_dump_log(d);
	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	forget(d);
	d->pid = 0;
	return -1;
}

/* Reads fd into buf until EOF or full, polling until deadline. */
static void
drain(int fd, char *buf, size_t len, size_t *got)
{
	char scratch[4096];
	ssize_t n;

	while (*got + 1 < len && (n = read(fd, buf + *got, len - 1 - *got)) > 0)
		*got += (size_t)n;
	buf[*got] = '\0';
	/* Past the buffer, read and dropped: the writer never blocks. */
	while (*got + 1 >= len && read(fd, scratch, sizeof(scratch)) > 0)
		;
}

int
harness_run(char *const argv[], char *out, size_t outlen, char *err,
    size_t errlen)
{
	return harness_run_for(argv, 10000, out, outlen, err, errlen);
}

int
harness_run_for(char *const argv[], int limit_ms, char *out, size_t outlen,
    char *err, size_t errlen)
{
	const char *dir = harness_tmpdir();
	int po[2], pe[2], status;
	size_t gout = 0, gerr = 0;
	double t0 = (double)monotonic_ms();
	pid_t pid;

	/* Non-blocking at our end only: the program's stdout and stderr
	 * block as a shell's pipe does (a non-blocking one lost the end of a
	 * result larger than the pipe). */
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 ||
	    fcntl(po[0], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(pe[0], F_SETFL, O_NONBLOCK) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL); /* as a shell runs it */
		if (dup2(po[1], STDOUT_FILENO) < 0 ||
		    dup2(pe[1], STDERR_FILENO) < 0 || chdir(dir) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	for (;;) {
		struct pollfd p[2] = { { po[0], POLLIN, 0 },
			{ pe[0], POLLIN, 0 } };
		poll(p, 2, 50);
		drain(po[0], out, outlen, &gout);
		drain(pe[0], err, errlen, &gerr);
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if ((double)monotonic_ms() - t0 > limit_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			status = -1;
			break;
		}
	}
	drain(po[0], out, outlen, &gout);
	drain(pe[0], err, errlen, &gerr);
	close(po[0]);
	close(pe[0]);
	if (status == -1)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

json_t *
harness_get_json(const struct daemon *d, const char *path, long *ret_status)
{
	struct httpc_answer a;
	json_t *v;

	if (httpc_request(d->base, "GET", path, NULL, NULL, NULL, 5000, &a) <
	    0) {
		*ret_status = 0;
		return NULL;
	}
	*ret_status = a.status;
	v = json_incref(a.json);
	httpc_answer_free(&a);
	return v;
}

json_t *
harness_call(const struct daemon *d, const char *method, const char *path,
    const char *key, const char *header, json_t *body, long *ret_status)
{
	struct httpc_answer a;
	json_t *v;

	if (httpc_request(d->base, method, path, key, header, body, 30000, &a) <
	    0) {
		*ret_status = 0;
		return NULL;
	}
	*ret_status = a.status;
	v = json_incref(a.json);
	httpc_answer_free(&a);
	return v;
}

json_t *
harness_expect(const struct daemon *d, long want, const char *method,
    const char *path, const char *key, const char *header, json_t *body)
{
	long status;
	json_t *v = harness_call(d, method, path, key, header, body, &status);

	json_decref(body);
	ck_assert_msg(status == want, "%s %s: %ld, not %ld: %s", method, path,
	    status, want, v ? json_dumps(v, JSON_COMPACT) : "(not JSON)");
	if (status >= 400) {
		/* Every error is JSON with a code and a message. */
		ck_assert(json_is_string(json_object_get(v, "error")));
		ck_assert(json_is_string(json_object_get(v, "message")));
	}
	return v;
}

int
harness_audit_count(const struct daemon *broker, const char *admin,
    const char *event)
{
	json_t *a = harness_expect(broker, 200, "GET", "/v1/audit?limit=1000",
	    admin, NULL, NULL);
	json_t *r;
	size_t i;
	int n = 0;

	json_array_foreach(json_object_get(a, "records"), i, r)
	{
		const char *ev = json_string_value(json_object_get(r, "event"));
		if (ev != NULL && strcmp(ev, event) == 0)
			n++;
	}
	json_decref(a);
	return n;
}

bool
harness_token_active(const struct daemon *broker, const char *verifier,
    const char *tok)
{
	json_t *r = harness_expect(broker, 200, "POST", "/v1/introspect",
	    verifier, NULL, json_pack("{s:s}", "token", tok));
	bool active = json_is_true(json_object_get(r, "active"));

	json_decref(r);
	return active;
}

int
harness_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (f == NULL)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

void
harness_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

void
harness_broker_key(const struct daemon *broker, const char *role, char *out,
    size_t len)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/var/broker/keys/%s.key", broker->dir,
	    role);
	ck_assert_msg(harness_read_line(path, out, len) == 0, "no key %s",
	    path);
}

const char *
harness_key_sha256(const char *path)
{
	static char sha[SHA256_HEX_LEN + 1];
	char key[256];

	ck_assert_msg(harness_read_line(path, key, sizeof(key)) == 0,
	    "no key %s", path);
	sha256_hex(key, strlen(key), sha);
	return sha;
}

const char *
harness_launcher_sha256(const struct daemon *broker)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/var/broker/keys/launcher.key",
	    broker->dir);
	return harness_key_sha256(path);
}

void
stack_start(struct stack *s, const struct stack_options *o)
{
	char cfg[2048], hostsf[400], keyfile[400], sha[SHA256_HEX_LEN + 1];
	const char *dir;

	ck_assert_int_eq(daemon_start(&s->broker, "broker", o->broker_config),
	    0);
	harness_broker_key(&s->broker, "admin", s->admin, sizeof(s->admin));
	harness_broker_key(&s->broker, "launcher", s->launcher,
	    sizeof(s->launcher));
	harness_broker_key(&s->broker, "verifier", s->verifier,
	    sizeof(s->verifier));
	snprintf(keyfile, sizeof(keyfile), "%s/var/broker/keys/launcher.key",
	    s->broker.dir);

	dir = harness_tmpdir();
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", dir);
	harness_write_file(hostsf, o->hosts != NULL ? o->hosts : "");
	snprintf(s->verifier_file, sizeof(s->verifier_file), "%s/verifier.key",
	    dir);
	harness_write_file(s->verifier_file, s->verifier);
	/* The proxy knows the launcher's key by its hash alone, as the
	 * quickstart's does. */
	sha256_hex(s->launcher, strlen(s->launcher), sha);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "%s%s%s\"follower\": \"proxy-test\"}",
	    s->broker.base, s->verifier_file, sha, hostsf,
	    o->upstream_ca_file != NULL ? "\"upstream_ca_file\": \"" : "",
	    o->upstream_ca_file != NULL ? o->upstream_ca_file : "",
	    o->upstream_ca_file != NULL ? "\", " : "");
	ck_assert_int_eq(daemon_start(&s->proxy, "proxy", cfg), 0);

	snprintf(s->inputs, sizeof(s->inputs), "%s", harness_tmpdir());
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_file\": \"%s\", "
	    "\"broker\": \"%s\", \"broker_key_file\": "
	    "\"%s/var/broker/keys/hatch.key\"}",
	    s->inputs, keyfile, s->broker.base, s->broker.dir);
	ck_assert_int_eq(daemon_start_wrapped(&s->hatch, "hatch", cfg,
			     o->hatch_wrap),
	    0);

	snprintf(s->launcher_dir, sizeof(s->launcher_dir), "%s",
	    harness_tmpdir());
	snprintf(s->launcher_cfg, sizeof(s->launcher_cfg), "%s/launcher.json",
	    s->launcher_dir);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"proxy\": \"%s\", \"hatch\": \"%s\", "
	    "\"launcher_key_file\": \"%s\", \"state_dir\": \"%s/state\", "
	    "\"runtime_dir\": \"%s/run\", \"uid_base\": %d, "
	    "\"uid_count\": 1000",
	    s->broker.base, s->proxy.base, s->hatch.base, keyfile,
	    s->launcher_dir, s->launcher_dir, o->uid_base);
	if (o->drill)
		snprintf(cfg + strlen(cfg), sizeof(cfg) - strlen(cfg),
		    ", \"verifier_key_file\": \"%s\", "
		    "\"drill_dir\": \"%s/drill\"",
		    s->verifier_file, s->inputs);
	snprintf(cfg + strlen(cfg), sizeof(cfg) - strlen(cfg), "}");
	harness_write_file(s->launcher_cfg, cfg);
}

void
stack_stop(struct stack *s)
{
	daemon_stop(&s->hatch);
	daemon_stop(&s->proxy);
	daemon_stop(&s->broker);
}

bool
harness_all_stopped(pid_t pid)
{
	char dir[64], path[64 + 256 + 8], st[512];

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	for (int t = 0; t < 250; t++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		bool stopped = d != NULL;

		while (stopped && (e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/stat", dir,
			    e->d_name);
			FILE *f = fopen(path, "re");
			size_t n =
			    f != NULL ? fread(st, 1, sizeof(st) - 1, f) : 0;
			if (f != NULL)
				fclose(f);
			st[n] = '\0';
			const char *rp = strrchr(st, ')');
			stopped = rp != NULL && rp[1] == ' ' && rp[2] == 'T';
		}
		if (d != NULL)
			closedir(d);
		if (stopped)
			return true;
		usleep(20000);
	}
	return false;
}
