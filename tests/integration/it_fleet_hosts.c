/*
 * A fleet on two hosts, for real: one private PostgreSQL (pg.c, on its
 * unix socket, which every network namespace reaches), and two "hosts",
 * network namespaces this test makes (ip netns) joined by a bridge in a
 * third, the test's own: host A at 10.77.0.1, host B at 10.77.0.2, the
 * test at 10.77.0.254. Each host runs its broker, its proxy, its hatch
 * and `cordon run`, the real programs; every client names both brokers,
 * its own first ("broker": [own, other]).
 *
 * What it shows that it_fleet (one namespace, channels opened by hand)
 * does not: a job that `cordon run` started on host A, revoked at host B's
 * broker, is cut on host A before the revoke returns, and its token is
 * dead at both brokers; host A's proxy stopped across such a revoke is
 * named gone in its answer, and acknowledges once it goes on (the revoke
 * asked again says so; a revoke that names a host gone, a stall past the
 * broker's 2 s on a loaded machine, is asked again that way in every case,
 * and one that leaves a host out fails); host A's broker killed with -9
 * while the job mints through it, the job goes on minting through B (the
 * proxy and the launcher's watch turned to it), a revoke at B still cuts
 * it and stops it as revoked, every token in the database has its audit
 * record, and a new job on host A is made, given its workspace and sealed
 * through B; a PostgreSQL restart under a job on host B is survived (503
 * while it is down, minting again after, a revoke at A stops it).
 *
 * Needs root (namespaces) and PostgreSQL; without PostgreSQL it fails and
 * says so, unless CORDON_TEST_NO_PG=1.
 */
#include "harness.h"
#include "pg.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct pg_server pg;

struct host {
	const char *name; /* "host-a": the proxy's follower name too */
	char ns[64];
	char ip[16];
	int nsfd;
	int uid_base;
	struct daemon broker, proxy, hatch;
	char inputs[300];
	char launcher_cfg[400];
};

static struct {
	char tns[64]; /* the test's namespace, with the bridge */
	int tfd;
	char url[400];
	char dir[300]; /* the brokers' shared keys and pepper */
	char admin[128], launcher[128], verifier[128];
	struct host a, b;
} F;

/* Runs a shell command line (formatted), asserting it exits 0. */
static void
sh(const char *fmt, ...)
{
	char cmd[1024], out[2048], err[2048];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = harness_run(argv, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 0, "%s: %d: %s%s", cmd, rc, out, err);
}

static void
enter(int fd)
{
	ck_assert_int_eq(setns(fd, CLONE_NEWNET), 0);
}

static int
ns_open(const char *name)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	return fd;
}

/* The namespaces and the bridge; the test thread then lives in its own. */
static void
network_up(void)
{
	int id = (int)getpid();

	snprintf(F.tns, sizeof(F.tns), "cfh%d-t", id);
	snprintf(F.a.ns, sizeof(F.a.ns), "cfh%d-a", id);
	snprintf(F.b.ns, sizeof(F.b.ns), "cfh%d-b", id);
	sh("ip netns add %s && ip netns add %s && ip netns add %s", F.tns,
	    F.a.ns, F.b.ns);
	sh("ip -n %s link set lo up && ip -n %s link add br0 type bridge && "
	   "ip -n %s addr add 10.77.0.254/24 dev br0 && "
	   "ip -n %s link set br0 up",
	    F.tns, F.tns, F.tns, F.tns);
	struct host *hs[] = { &F.a, &F.b };
	for (int i = 0; i < 2; i++) {
		struct host *h = hs[i];
		char v[16];

		snprintf(v, sizeof(v), "cfh%d%c", id, 'a' + i);
		sh("ip -n %s link add %s type veth peer name eth0 netns %s && "
		   "ip -n %s link set %s master br0 up && "
		   "ip -n %s addr add %s/24 dev eth0 && "
		   "ip -n %s link set eth0 up && ip -n %s link set lo up",
		    F.tns, v, h->ns, F.tns, v, h->ns, h->ip, h->ns, h->ns);
		h->nsfd = ns_open(h->ns);
	}
	F.tfd = ns_open(F.tns);
	enter(F.tfd);
}

/* Removes the namespaces of test processes that ended without their
 * teardown (a failed test's process exits at the failed assertion). */
static void
sweep_stale(void)
{
	DIR *d = opendir("/run/netns");
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char cmd[300], out[64], err[64];
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		char *end;
		long pid;

		if (strncmp(e->d_name, "cfh", 3) != 0)
			continue;
		pid = strtol(e->d_name + 3, &end, 10);
		if (end == e->d_name + 3 || *end != '-' || pid <= 0 ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(cmd, sizeof(cmd), "ip netns del '%s'", e->d_name);
		(void)harness_run(argv, out, sizeof(out), err, sizeof(err));
	}
	if (d != NULL)
		closedir(d);
}

static void
network_down(void)
{
	char cmd[400];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	char out[256], err[256];

	snprintf(cmd, sizeof(cmd),
	    "ip netns del %s; ip netns del %s; ip netns del %s", F.a.ns, F.b.ns,
	    F.tns);
	(void)harness_run(argv, out, sizeof(out), err, sizeof(err));
}

/* Starts d (name, config) inside host h, listening on h's address. */
static void
host_daemon(struct host *h, struct daemon *d, const char *name,
    const char *config)
{
	char path[400];

	memset(d, 0, sizeof(*d));
	d->name = name;
	snprintf(d->dir, sizeof(d->dir), "%s", harness_tmpdir());
	snprintf(d->log, sizeof(d->log), "%s/%s.log", d->dir, name);
	snprintf(path, sizeof(path), "%s/config.json", d->dir);
	harness_write_file(path, config);
	d->has_config = true;
	/* A restart comes back on d->addr: the first start picks a port. */
	snprintf(d->addr, sizeof(d->addr), "%s:0", h->ip);
	enter(h->nsfd);
	int r = daemon_restart(d);
	enter(F.tfd);
	ck_assert_msg(r == 0, "%s on %s did not start", name, h->name);
}

/* Restarts d inside h, on its address. */
static void
host_restart(struct host *h, struct daemon *d)
{
	enter(h->nsfd);
	int r = daemon_restart(d);
	enter(F.tfd);
	ck_assert_int_eq(r, 0);
}

static void
read_key(const char *role, char *out, size_t len)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/keys/%s.key", F.dir, role);
	ck_assert_int_eq(harness_read_line(path, out, len), 0);
}

/* Copies jobs/<dir>/<name> into path. */
static void
copy_script(const char *rel, const char *path)
{
	char src[512], text[8192];
	FILE *f;
	size_t n;

	snprintf(src, sizeof(src), CORDON_SOURCE_DIR "/tests/integration/%s",
	    rel);
	f = fopen(src, "re");
	ck_assert_msg(f != NULL, "%s", src);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	harness_write_file(path, text);
}

/* h's broker, on the fleet's database, keys and pepper. */
static void
host_broker(struct host *h)
{
	char cfg[2048];

	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"keys_dir\": \"%s/keys\", \"pepper\": "
	    "\"%s/pepper\", \"lease_seconds\": 3600}",
	    F.url, F.dir, F.dir);
	host_daemon(h, &h->broker, "broker", cfg);
}

/* The fleet's launcher key by its hash, as its proxies know it. */
static const char *
fleet_launcher_sha256(void)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/keys/launcher.key", F.dir);
	return harness_key_sha256(path);
}

/* The proxy, hatch and launcher configuration of h, once both brokers
 * run: each names its own broker first. */
static void
host_clients(struct host *h, const struct host *other)
{
	char cfg[2048], brokers[300], path[400], hosts[400];

	snprintf(brokers, sizeof(brokers), "[\"%s\", \"%s\"]", h->broker.base,
	    other->broker.base);
	snprintf(hosts, sizeof(hosts), "%s/hosts", harness_tmpdir());
	harness_write_file(hosts, "");
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": %s, \"broker_key_file\": \"%s/keys/verifier.key\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": "
	    "\"%s\", \"follower\": \"%s\"}",
	    brokers, F.dir, fleet_launcher_sha256(), hosts, h->name);
	host_daemon(h, &h->proxy, "proxy", cfg);

	snprintf(h->inputs, sizeof(h->inputs), "%s", harness_tmpdir());
	snprintf(path, sizeof(path), "%s/repo", h->inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/mint_loop.sh", h->inputs);
	copy_script("jobs/fleet/mint_loop.sh", path);
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_file\": "
	    "\"%s/keys/launcher.key\", \"broker\": %s, \"broker_key_file\": "
	    "\"%s/keys/launcher.key\"}",
	    h->inputs, F.dir, brokers, F.dir);
	host_daemon(h, &h->hatch, "hatch", cfg);

	const char *ldir = harness_tmpdir();
	snprintf(h->launcher_cfg, sizeof(h->launcher_cfg), "%s/launcher.json",
	    ldir);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": %s, \"proxy\": \"%s\", \"hatch\": \"%s\", "
	    "\"launcher_key_file\": \"%s/keys/launcher.key\", \"state_dir\": "
	    "\"%s/state\", \"runtime_dir\": \"%s/run\", \"uid_base\": %d, "
	    "\"uid_count\": 1000}",
	    brokers, h->proxy.base, h->hatch.base, F.dir, ldir, ldir,
	    h->uid_base);
	harness_write_file(h->launcher_cfg, cfg);
}

/* feed_followers in d's /healthz, -1 without an answer. */
static long
followers_of(const struct daemon *d)
{
	long status;
	json_t *h = harness_get_json(d, "/healthz", &status);
	long n = json_integer_value(json_object_get(h, "feed_followers"));

	json_decref(h);
	return status == 200 ? n : -1;
}

static void
wait_followers(void)
{
	for (int i = 0; i < 300; i++) {
		if (followers_of(&F.a.broker) >= 2 &&
		    followers_of(&F.b.broker) >= 2)
			return;
		usleep(100000);
	}
	ck_abort_msg("the brokers never saw both proxies: A %ld, B %ld",
	    followers_of(&F.a.broker), followers_of(&F.b.broker));
}

static void
put_manifest(void)
{
	const char *text =
	    "{\"name\": \"hosts\", \"command\": [\"/bin/true\"],"
	    " \"capabilities\": [{\"name\": \"x.read\", \"audience\": \"api\","
	    "  \"params\": {\"t\": [\"1\"]}, \"ttl_seconds\": 900,"
	    "  \"reason\": \"read x\"}],"
	    " \"mint\": {\"max_tokens\": 100000, \"per_minute\": 100000,"
	    "  \"burst\": 100000},"
	    " \"limits\": {\"wall_seconds\": 120, \"memory_mb\": 512,"
	    "  \"pids\": 64, \"output_kb\": 1024}}";

	json_decref(harness_expect(&F.a.broker, 200, "PUT",
	    "/v1/manifests/hosts", F.admin, NULL, json_loads(text, 0, NULL)));
}

static void
fleet_up(void)
{
	char name[64];
	static int n;

	signal(SIGPIPE, SIG_IGN);
	F.a = (struct host){ .name = "host-a",
		.ip = "10.77.0.1",
		.uid_base = 700000 };
	F.b = (struct host){ .name = "host-b",
		.ip = "10.77.0.2",
		.uid_base = 710000 };
	network_up();
	snprintf(name, sizeof(name), "hosts%d_%d", (int)getpid(), n++);
	ck_assert_int_eq(pg_create_db(&pg, name, F.url, sizeof(F.url)), 0);
	snprintf(F.dir, sizeof(F.dir), "%s", harness_tmpdir());
	host_broker(&F.a);
	host_broker(&F.b);
	read_key("admin", F.admin, sizeof(F.admin));
	read_key("launcher", F.launcher, sizeof(F.launcher));
	read_key("verifier", F.verifier, sizeof(F.verifier));
	host_clients(&F.a, &F.b);
	host_clients(&F.b, &F.a);
	wait_followers();
	put_manifest();
}

static void
fleet_down(void)
{
	struct host *hs[] = { &F.a, &F.b };

	for (int i = 0; i < 2; i++) {
		daemon_stop(&hs[i]->hatch);
		daemon_stop(&hs[i]->proxy);
		daemon_stop(&hs[i]->broker);
	}
	network_down();
}

/* --- a job of cordon run on a host -------------------------------------- */

struct run {
	pid_t pid;
	int out, err;
	char text[1 << 16], etext[1 << 15];
	size_t n, en;
};

/* Starts `cordon run` on host h with the shell command script (the mint
 * loop when NULL). */
static void
run_start_sh(struct run *r, struct host *h, const char *script)
{
	int po[2], pe[2];

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(pipe2(po, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(pe, O_CLOEXEC), 0);
	fflush(NULL);
	r->pid = fork();
	ck_assert_int_ge(r->pid, 0);
	if (r->pid == 0) {
		char input[400];
		const char *argv[] = { harness_bin("cordon"), "run", "--config",
			h->launcher_cfg, "--manifest", "hosts", "--input",
			input, "--", "/bin/sh",
			script != NULL ? "-c" : "repo/mint_loop.sh", script,
			NULL };

		snprintf(input, sizeof(input), "%s/repo:repo", h->inputs);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (setns(h->nsfd, CLONE_NEWNET) < 0 ||
		    dup2(po[1], STDOUT_FILENO) < 0 ||
		    dup2(pe[1], STDERR_FILENO) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	r->out = po[0];
	r->err = pe[0];
	fcntl(r->out, F_SETFL, O_NONBLOCK);
	fcntl(r->err, F_SETFL, O_NONBLOCK);
}

static void
run_start(struct run *r, struct host *h)
{
	run_start_sh(r, h, NULL);
}

/* Reads what the job wrote for up to ms: false once both ends closed. */
static bool
run_read(struct run *r, int ms)
{
	struct pollfd p[2] = { { r->out, POLLIN, 0 }, { r->err, POLLIN, 0 } };
	bool open = false;

	(void)poll(p, 2, ms);
	for (int i = 0; i < 2; i++) {
		char *buf = i == 0 ? r->text : r->etext;
		size_t *n = i == 0 ? &r->n : &r->en;
		size_t cap = i == 0 ? sizeof(r->text) : sizeof(r->etext);
		int fd = i == 0 ? r->out : r->err;
		ssize_t k;

		if (fd < 0)
			continue;
		k = read(fd, buf + *n, cap - 1 - *n);
		if (k > 0) {
			*n += (size_t)k;
			buf[*n] = '\0';
		}
		if (k == 0 || (k < 0 && errno != EAGAIN) || *n + 1 >= cap) {
			close(fd);
			if (i == 0)
				r->out = -1;
			else
				r->err = -1;
		} else {
			open = true;
		}
	}
	return open;
}

/* Waits (up to 60 s) for needle in the job's output past offset from:
 * the offset just past it. */
static size_t
run_wait(struct run *r, const char *needle, size_t from)
{
	for (int i = 0; i < 600; i++) {
		const char *at =
		    r->n > from ? strstr(r->text + from, needle) : NULL;
		if (at != NULL)
			return (size_t)(at - r->text) + strlen(needle);
		if (!run_read(r, 100) && r->out < 0)
			break;
	}
	ck_abort_msg("no \"%s\" after byte %zu of the job's output: %s%s",
	    needle, from, r->text, r->etext);
	return 0;
}

/* Reads to the end and reaps: the exit status. */
static int
run_end(struct run *r)
{
	int status;

	for (int i = 0; i < 600 && (r->out >= 0 || r->err >= 0); i++)
		(void)run_read(r, 100);
	ck_assert_int_eq(waitpid(r->pid, &status, 0), r->pid);
	if (r->out >= 0)
		close(r->out);
	if (r->err >= 0)
		close(r->err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The only job of the test, by its job_created record at d. */
static char *
the_job(const struct daemon *d)
{
	json_t *a = harness_expect(d, 200, "GET", "/v1/audit?limit=1000",
	    F.admin, NULL, NULL);
	char *job = NULL;
	json_t *rec;
	size_t i;

	json_array_foreach(json_object_get(a, "records"), i, rec)
	{
		const char *ev =
		    json_string_value(json_object_get(rec, "event"));
		if (ev != NULL && strcmp(ev, "job_created") == 0)
			job = strdup(
			    json_string_value(json_object_get(rec, "job")));
	}
	json_decref(a);
	ck_assert_ptr_nonnull(job);
	return job;
}

/* --- the broker's side ------------------------------------------------- */

/* A token for job at d (the verifier's mint): its value, or NULL. */
static char *
try_mint(const struct daemon *d, const char *job, long *ret_status)
{
	char hdr[128];
	json_t *body = json_pack("{s:s, s:{s:s}}", "capability", "x.read",
	    "params", "t", "1");
	json_t *a;
	char *v = NULL;

	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);
	a = harness_call(d, "POST", "/v1/token", F.verifier, hdr, body,
	    ret_status);
	json_decref(body);
	if (*ret_status == 200)
		v = strdup(
		    json_string_value(json_object_get(a, "access_token")));
	json_decref(a);
	return v;
}

/* 1 active, 0 not, or -status. */
static int
active_at(const struct daemon *d, const char *token)
{
	long status;
	json_t *body = json_pack("{s:s}", "token", token);
	json_t *v = harness_call(d, "POST", "/v1/introspect", F.verifier, NULL,
	    body, &status);
	int r = status == 200 ? json_is_true(json_object_get(v, "active"))
			      : -(int)status;

	json_decref(body);
	json_decref(v);
	return r;
}

/* One revoke of job at d (200 asserted): its answer; how long it took
 * into *ms. */
static json_t *
revoke_once(const struct daemon *d, const char *job, long *ms)
{
	char path[128];
	struct timespec t0, t1;
	json_t *a;

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	a = harness_expect(d, 200, "POST", path, F.admin, NULL,
	    json_pack("{s:s}", "reason", "stopped"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ms = (long)((t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000);
	return a;
}

static bool
lists(const json_t *array, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(array, i, v)
	{
		if (strcmp(json_string_value(v), name) == 0)
			return true;
	}
	return false;
}

/* Whether the answer's propagated.<key> ("acknowledged", "gone") lists
 * name. */
static bool
propagated(const json_t *answer, const char *key, const char *name)
{
	return lists(json_object_get(json_object_get(answer, "propagated"),
			 key),
	    name);
}

static bool
all_acknowledged(const json_t *answer, const char *const names[])
{
	for (int i = 0; names[i] != NULL; i++)
		if (!propagated(answer, "acknowledged", names[i]))
			return false;
	return true;
}

/*
 * The revoke of job at d asked again (it is idempotent: the job's one
 * revocation, and what was acknowledged of it so far) until each host of
 * names (a NULL-terminated list) acknowledged it, 30 s at most; a, the
 * last answer (taken), is the first when it already says so. Returns the
 * last answer.
 */
static json_t *
revoke_until_acknowledged(const struct daemon *d, const char *job,
    const char *const names[], json_t *a)
{
	long ms;

	for (int n = 0; n < 60 && (a == NULL || !all_acknowledged(a, names));
	     n++) {
		if (a != NULL)
			usleep(500 * 1000);
		json_decref(a);
		a = revoke_once(d, job, &ms);
	}
	return a;
}

/*
 * Revokes job at d; returns the answer in which each host of names
 * acknowledged it. A revoke answers once each connected follower
 * acknowledged or was declared gone, at most 2 s (the broker's
 * FEED_ACK_WAIT_MS) after: on a loaded machine a host's proxy, or its
 * acknowledgement's way through its broker and the database to d (a
 * NOTIFY, its commit), can stall past that. Such a host must be named
 * gone in the first answer, never left out (asserted), and is then waited
 * for by revoke_until_acknowledged (said on stderr). Whoever calls checks
 * what that acknowledgement means (the job's connections cut).
 */
static json_t *
revoke_at(const struct daemon *d, const char *job, const char *const names[])
{
	long ms;
	json_t *a = revoke_once(d, job, &ms);
	char *text = json_dumps(a, JSON_COMPACT);

	for (int i = 0; names[i] != NULL; i++)
		ck_assert_msg(propagated(a, "acknowledged", names[i]) ||
			propagated(a, "gone", names[i]),
		    "%s neither acknowledged nor gone (%ld ms): %s", names[i],
		    ms, text);
	if (!all_acknowledged(a, names))
		fprintf(stderr,
		    "it_fleet_hosts: the revoke at %s answered in %ld ms with "
		    "a host gone; asked again: %s\n",
		    d->base, ms, text);
	free(text);
	return revoke_until_acknowledged(d, job, names, a);
}

static void
assert_acknowledged(const json_t *answer, const char *name)
{
	json_t *ack = json_object_get(json_object_get(answer, "propagated"),
	    "acknowledged");
	char *text = json_dumps(answer, JSON_COMPACT);

	ck_assert_msg(lists(ack, name), "%s not acknowledged: %s", name, text);
	free(text);
}

/* The proxy's open connections (its /healthz). */
static long
connections_of(const struct daemon *p)
{
	long status;
	json_t *h = harness_get_json(p, "/healthz", &status);
	long n = json_integer_value(json_object_get(h, "connections"));

	json_decref(h);
	ck_assert_int_eq(status, 200);
	return n;
}

/* Waits (up to 20 s) until proxy p holds a connection of the job. */
static void
wait_connected(const struct daemon *p)
{
	for (int i = 0; i < 200 && connections_of(p) < 1; i++)
		usleep(100000);
	ck_assert_int_ge(connections_of(p), 1);
}

/* Waits (up to 20 s) for a launcher's watch on d's feed: how many. */
static long
watchers_of(const struct daemon *d)
{
	long n = 0;

	for (int i = 0; i < 200 && n < 1; i++) {
		long status;
		json_t *h = harness_get_json(d, "/healthz", &status);

		n = json_integer_value(json_object_get(h, "feed_watchers"));
		json_decref(h);
		if (n < 1)
			usleep(100000);
	}
	return n;
}

static bool
follows(const struct daemon *p, const char *addr)
{
	for (int i = 0; i < 100; i++) {
		long status;
		json_t *h = harness_get_json(p, "/healthz", &status);
		const char *at =
		    json_string_value(json_object_get(h, "feed_broker"));
		bool yes = status == 200 && at != NULL && strcmp(at, addr) == 0;

		json_decref(h);
		if (yes)
			return true;
		usleep(100000);
	}
	return false;
}

static void
assert_chain(const struct daemon *d)
{
	json_t *v = harness_expect(d, 200, "GET", "/v1/audit?verify=1", F.admin,
	    NULL, NULL);
	char *text = json_dumps(v, JSON_COMPACT);

	ck_assert_msg(json_is_true(json_object_get(v, "ok")), "verify: %s",
	    text);
	free(text);
	json_decref(v);
}

/* Every token row has its token_minted record, and no more. */
static void
assert_every_token_recorded(void)
{
	char tokens[64], minted[64];

	ck_assert_int_eq(pg_sql(F.url, "SELECT count(*) FROM tokens", tokens,
			     sizeof(tokens)),
	    0);
	ck_assert_int_eq(pg_sql(F.url,
			     "SELECT count(*) FROM audit WHERE event = "
			     "'token_minted'",
			     minted, sizeof(minted)),
	    0);
	ck_assert_msg(strcmp(tokens, minted) == 0,
	    "%s tokens, %s token_minted records", tokens, minted);
	ck_assert_int_gt(strtol(tokens, NULL, 10), 0);
}

/* The job's result line said it was revoked. */
static void
assert_stopped_revoked(struct run *r)
{
	int status = run_end(r);

	ck_assert_msg(strstr(r->etext, "revoked") != NULL,
	    "status %d, stderr: %s", status, r->etext);
}

/* --- the tests ---------------------------------------------------------- */

/* The mint loop started on host A, minting, its connection held at host
 * A's proxy: its job (free it). */
static char *
minting_on_a(struct run *r)
{
	char *job;

	run_start(r, &F.a);
	(void)run_wait(r, "MINT 200", 0);
	job = the_job(&F.b.broker);
	wait_connected(&F.a.proxy);
	return job;
}

START_TEST(a_job_on_host_a_revoked_at_host_bs_broker)
{
	struct run r;
	char *job, *tok;
	long status;
	json_t *a;

	job = minting_on_a(&r);
	tok = try_mint(&F.a.broker, job, &status);
	ck_assert_int_eq(status, 200);

	/* Revoked at B, the broker host B follows: host A's proxy cut the
	 * job's connection before the answer that has its acknowledgement,
	 * and both proxies said so. */
	a = revoke_at(&F.b.broker, job,
	    (const char *const[]){ "host-a", "host-b", NULL });
	ck_assert_int_eq(connections_of(&F.a.proxy), 0);
	assert_acknowledged(a, "host-a");
	assert_acknowledged(a, "host-b");
	json_decref(a);

	/* Its token is dead at both brokers, and no new one comes. */
	ck_assert_int_eq(active_at(&F.a.broker, tok), 0);
	ck_assert_int_eq(active_at(&F.b.broker, tok), 0);
	free(try_mint(&F.a.broker, job, &status));
	ck_assert_int_eq(status, 403);
	free(try_mint(&F.b.broker, job, &status));
	ck_assert_int_eq(status, 403);
	assert_stopped_revoked(&r);
	assert_chain(&F.a.broker);
	free(tok);
	free(job);
}
END_TEST

/* Host A's proxy stopped across a revoke at B, as a loaded machine may
 * stall it: the answer, at its deadline, names host A gone (host B
 * acknowledged); going on, the proxy cuts the job and acknowledges, and
 * the revoke asked again says so; the job stops as revoked. */
START_TEST(a_stalled_proxy_is_named_gone_and_acknowledges_after)
{
	struct run r;
	char *job, *text;
	long ms;
	json_t *a;

	job = minting_on_a(&r);

	ck_assert_int_gt(F.a.proxy.pid, 1);
	ck_assert_int_eq(kill(F.a.proxy.pid, SIGSTOP), 0);
	ck_assert_msg(harness_all_stopped(F.a.proxy.pid),
	    "host A's proxy (pid %d) did not stop", (int)F.a.proxy.pid);
	a = revoke_once(&F.b.broker, job, &ms);
	ck_assert_int_eq(kill(F.a.proxy.pid, SIGCONT), 0);
	text = json_dumps(a, JSON_COMPACT);
	ck_assert_msg(propagated(a, "gone", "host-a"),
	    "host A's stopped proxy not named gone (%ld ms): %s", ms, text);
	assert_acknowledged(a, "host-b");
	free(text);
	json_decref(a);

	a = revoke_until_acknowledged(&F.b.broker, job,
	    (const char *const[]){ "host-a", "host-b", NULL }, NULL);
	ck_assert_int_eq(connections_of(&F.a.proxy), 0);
	assert_acknowledged(a, "host-a");
	json_decref(a);
	assert_stopped_revoked(&r);
	free(job);
}
END_TEST

START_TEST(host_a_loses_its_broker_mid_mint)
{
	struct run r;
	size_t at;
	char *job;
	json_t *a;

	run_start(&r, &F.a);
	at = run_wait(&r, "MINT 200", 0);
	job = the_job(&F.a.broker);
	wait_connected(&F.a.proxy);
	/* Killed among the job's mints, which go through it. */
	(void)run_wait(&r, "MINT 200", at);
	daemon_kill(&F.a.broker);

	/* Host A turns to B: the job mints on through it. */
	ck_assert_msg(follows(&F.a.proxy, F.b.broker.addr),
	    "host A's proxy never followed B");
	(void)run_wait(&r, "MINT 200", r.n);
	ck_assert_int_ge(connections_of(&F.a.proxy), 1);

	/* Host A's launcher watches the job at B now. */
	ck_assert_msg(watchers_of(&F.b.broker) >= 1,
	    "no launcher watches the feed at B");

	/* A revoke at B still cuts the job on host A, and stops it. */
	a = revoke_at(&F.b.broker, job,
	    (const char *const[]){ "host-a", NULL });
	ck_assert_int_eq(connections_of(&F.a.proxy), 0);
	assert_acknowledged(a, "host-a");
	json_decref(a);
	assert_stopped_revoked(&r);

	/* A new job on host A: made at B, its workspace's policy read at
	 * B by the hatch, run, sealed. */
	run_start_sh(&r, &F.a, "echo second job");
	ck_assert_msg(run_end(&r) == 0, "%s%s", r.text, r.etext);
	ck_assert_msg(strstr(r.text, "second job") != NULL, "%s", r.text);

	/* Nothing granted unrecorded, one chain. */
	assert_every_token_recorded();
	assert_chain(&F.b.broker);
	host_restart(&F.a, &F.a.broker);
	assert_chain(&F.a.broker);
	free(job);
}
END_TEST

START_TEST(a_database_restart_under_a_job)
{
	struct run r;
	size_t at;
	char *job;
	json_t *a;

	run_start(&r, &F.b);
	at = run_wait(&r, "MINT 200", 0);
	job = the_job(&F.a.broker);
	wait_connected(&F.b.proxy);

	/* Down: the job's mints are refused (503 at both brokers). */
	ck_assert_int_eq(pg_stop(&pg, "fast"), 0);
	at = run_wait(&r, "MINT 503", at);
	ck_assert_int_eq(pg_restart(&pg), 0);
	/* Back: both brokers reconnect by themselves, the job mints. */
	(void)run_wait(&r, "MINT 200", at);
	wait_followers();
	a = revoke_at(&F.a.broker, job,
	    (const char *const[]){ "host-b", NULL });
	assert_acknowledged(a, "host-b");
	json_decref(a);
	assert_stopped_revoked(&r);
	assert_every_token_recorded();
	assert_chain(&F.b.broker);
	free(job);
}
END_TEST

static Suite *
hosts_suite(void)
{
	Suite *s = suite_create("fleet_hosts");
	TCase *tc = tcase_create("hosts");

	tcase_add_checked_fixture(tc, fleet_up, fleet_down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_job_on_host_a_revoked_at_host_bs_broker);
	tcase_add_test(tc,
	    a_stalled_proxy_is_named_gone_and_acknowledges_after);
	tcase_add_test(tc, host_a_loses_its_broker_mid_mint);
	tcase_add_test(tc, a_database_restart_under_a_job);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	char err[512];
	int rc;

	if (!pg_wanted()) {
		printf("it_fleet_hosts: CORDON_TEST_NO_PG=1: skipped\n");
		return 0;
	}
	if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_fleet_hosts: %s\n", err);
		return 1;
	}
	sweep_stale();
	rc = harness_main(hosts_suite());
	sweep_stale();
	pg_destroy(&pg);
	return rc;
}
