/*
 * A fleet on one machine: a private PostgreSQL (pg.c, started once for
 * the program), two cordon-brokers on one database of it with shared
 * keys and pepper, and a proxy following each ("host-a" follows broker
 * A, "host-b" broker B). What it shows: a revoke at either broker
 * returns only once the followers of both have acknowledged it
 * (propagated lists them all), and the token then fails introspection
 * at both, and so does a token's revoke alone (the job going on); a job's connection through host A's proxy is closed when a
 * revoke at broker B returns; concurrent mints at both brokers keep one audit chain that
 * verifies at both; kill -9 of a broker in the middle of mints loses no
 * token it answered and records every one granted, and in the middle of
 * a revoke leaves the job revoked once or revocable at the other; a
 * PostgreSQL restart makes the brokers answer 503 while it is down
 * (introspection fails closed) and recover by themselves, revocation
 * feed and shared acknowledgements included.
 *
 * Without PostgreSQL it fails and says so, unless CORDON_TEST_NO_PG=1.
 */
#include "harness.h"
#include "pg.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static struct pg_server pg;

struct fleet {
	char url[400];
	char dir[300];
	struct daemon a, b, proxy_a, proxy_b;
	char admin[128], launcher[128], verifier[128];
};

static struct fleet F;

static void
read_key(const char *role, char *out, size_t len)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/keys/%s.key", F.dir, role);
	ck_assert_int_eq(harness_read_line(path, out, len), 0);
}

static void
broker_config(char *out, size_t len)
{
	snprintf(out, len,
	    "{\"store\": \"%s\", \"keys_dir\": \"%s/keys\", \"pepper\": "
	    "\"%s/pepper\", \"lease_seconds\": 3600, \"log_level\": \"info\"}",
	    F.url, F.dir, F.dir);
}

/* The fleet's launcher key by its hash, as its proxies know it. */
static const char *
fleet_launcher_sha256(void)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/keys/launcher.key", F.dir);
	return harness_key_sha256(path);
}

/* A proxy named name whose "broker" setting is the JSON value brokers. */
static void
proxy_start_with(struct daemon *p, const char *brokers, const char *name)
{
	char cfg[1500], hosts[400], vkey[400];

	snprintf(hosts, sizeof(hosts), "%s/hosts-%s", F.dir, name);
	harness_write_file(hosts, "");
	snprintf(vkey, sizeof(vkey), "%s/keys/verifier.key", F.dir);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": %s, \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": "
	    "\"%s\", \"follower\": \"%s\"}",
	    brokers, vkey, fleet_launcher_sha256(), hosts, name);
	ck_assert_int_eq(daemon_start(p, "proxy", cfg), 0);
}

static void
proxy_start(struct daemon *p, const struct daemon *broker, const char *name)
{
	char one[200];

	snprintf(one, sizeof(one), "\"%s\"", broker->base);
	proxy_start_with(p, one, name);
}

/* feed_followers in d's /healthz. */
static long
followers_of(const struct daemon *d)
{
	long status;
	json_t *h = harness_get_json(d, "/healthz", &status);
	long n = json_integer_value(json_object_get(h, "feed_followers"));

	json_decref(h);
	return status == 200 ? n : -1;
}

/* Waits (up to 30 s) until both brokers count n followers. */
static void
wait_n_followers(long n)
{
	for (int i = 0; i < 300; i++) {
		if (followers_of(&F.a) >= n && followers_of(&F.b) >= n)
			return;
		usleep(100000);
	}
	ck_abort_msg("the brokers never saw %ld followers: A %ld, B %ld", n,
	    followers_of(&F.a), followers_of(&F.b));
}

static void
wait_followers(void)
{
	wait_n_followers(2);
}

static void
fleet_up(void)
{
	char name[64], cfg[1500];
	static int n;

	snprintf(name, sizeof(name), "it%d_%d", (int)getpid(), n++);
	ck_assert_int_eq(pg_create_db(&pg, name, F.url, sizeof(F.url)), 0);
	snprintf(F.dir, sizeof(F.dir), "%s", harness_tmpdir());
	broker_config(cfg, sizeof(cfg));
	ck_assert_int_eq(daemon_start(&F.a, "broker", cfg), 0);
	ck_assert_int_eq(daemon_start(&F.b, "broker", cfg), 0);
	read_key("admin", F.admin, sizeof(F.admin));
	read_key("launcher", F.launcher, sizeof(F.launcher));
	read_key("verifier", F.verifier, sizeof(F.verifier));
	proxy_start(&F.proxy_a, &F.a, "host-a");
	proxy_start(&F.proxy_b, &F.b, "host-b");
	wait_followers();
}

static void
fleet_down(void)
{
	daemon_stop(&F.proxy_a);
	daemon_stop(&F.proxy_b);
	ck_assert_int_eq(daemon_stop(&F.a), 0);
	ck_assert_int_eq(daemon_stop(&F.b), 0);
}

static void
put_manifest(const struct daemon *d)
{
	const char *text =
	    "{\"name\": \"fleet\", \"capabilities\": ["
	    " {\"name\": \"invoices.read\", \"audience\": \"invoices-api\","
	    "  \"params\": {\"tenant\": [\"4182\"]}, \"reason\": \"r\"}],"
	    " \"mint\": {\"max_tokens\": 100000, \"per_minute\": 10000000,"
	    "  \"burst\": 1000000}}";

	json_decref(harness_expect(d, 200, "PUT", "/v1/manifests/fleet",
	    F.admin, NULL, json_loads(text, 0, NULL)));
}

static char *
new_job(const struct daemon *d)
{
	json_t *j = harness_expect(d, 201, "POST", "/v1/jobs", F.launcher, NULL,
	    json_pack("{s:s, s:i}", "manifest", "fleet", "canaries", 0));
	char *id = strdup(json_string_value(json_object_get(j, "job")));

	json_decref(j);
	return id;
}

/* A token for job at d: its value (free it), or NULL with *ret_status. */
static char *
try_mint(const struct daemon *d, const char *job, long *ret_status)
{
	char hdr[128];
	json_t *body = json_pack("{s:s, s:{s:s}}", "capability",
	    "invoices.read", "params", "tenant", "4182");
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

/* Introspection at d: 1 active, 0 not, or -status when it failed. */
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

static json_t *
revoke_at(const struct daemon *d, const char *job)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	return harness_expect(d, 200, "POST", path, F.admin, NULL,
	    json_pack("{s:s}", "reason", "stopped"));
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

/* The propagation of a revoke: both hosts acknowledged, none gone. */
static void
assert_propagated(const json_t *answer)
{
	json_t *p = json_object_get(answer, "propagated");
	char *text = json_dumps(p, JSON_COMPACT);

	ck_assert_msg(lists(json_object_get(p, "acknowledged"), "host-a") &&
		lists(json_object_get(p, "acknowledged"), "host-b") &&
		json_array_size(json_object_get(p, "gone")) == 0,
	    "propagated: %s", text);
	free(text);
}

static void
assert_chain(const struct daemon *d, json_int_t *ret_records)
{
	json_t *v = harness_expect(d, 200, "GET", "/v1/audit?verify=1", F.admin,
	    NULL, NULL);
	char *text = json_dumps(v, JSON_COMPACT);

	ck_assert_msg(json_is_true(json_object_get(v, "ok")), "verify: %s",
	    text);
	if (ret_records != NULL)
		*ret_records =
		    json_integer_value(json_object_get(v, "records"));
	free(text);
	json_decref(v);
}

/* --- a revoke at either broker ---------------------------------------- */

START_TEST(revoke_reaches_every_follower)
{
	char *job, *tok;
	long status;
	json_t *r;

	put_manifest(&F.a);
	job = new_job(&F.a);
	tok = try_mint(&F.b, job, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_int_eq(active_at(&F.a, tok), 1);

	/* Revoked at A: host-b, which follows B, acknowledged before the
	 * answer; a replay fails at both brokers. */
	r = revoke_at(&F.a, job);
	assert_propagated(r);
	json_decref(r);
	ck_assert_int_eq(active_at(&F.a, tok), 0);
	ck_assert_int_eq(active_at(&F.b, tok), 0);
	free(try_mint(&F.b, job, &status));
	ck_assert_int_eq(status, 403);
	free(tok);
	free(job);

	/* And the other way round. */
	job = new_job(&F.b);
	tok = try_mint(&F.a, job, &status);
	ck_assert_int_eq(status, 200);
	r = revoke_at(&F.b, job);
	assert_propagated(r);
	json_decref(r);
	ck_assert_int_eq(active_at(&F.a, tok), 0);
	ck_assert_int_eq(active_at(&F.b, tok), 0);
	free(tok);
	free(job);
}
END_TEST

/* One token revoked alone at A (POST /v1/revoke): its own entry on the
 * feed, heard at B through the database, acknowledged by both hosts'
 * proxies before the answer; the job goes on at both brokers. */
START_TEST(a_token_revoked_alone_reaches_every_follower)
{
	char *job, *tok, *other;
	long status;
	json_t *r;

	put_manifest(&F.a);
	job = new_job(&F.a);
	tok = try_mint(&F.b, job, &status);
	ck_assert_int_eq(status, 200);
	other = try_mint(&F.b, job, &status);
	ck_assert_int_eq(status, 200);
	r = harness_expect(&F.a, 200, "POST", "/v1/revoke", F.admin, NULL,
	    json_pack("{s:s}", "token", tok));
	ck_assert(json_is_true(json_object_get(r, "revoked")));
	ck_assert_str_eq(json_string_value(json_object_get(r, "job")), job);
	assert_propagated(r);
	json_decref(r);
	ck_assert_int_eq(active_at(&F.a, tok), 0);
	ck_assert_int_eq(active_at(&F.b, tok), 0);
	ck_assert_int_eq(active_at(&F.b, other), 1);
	free(try_mint(&F.b, job, &status));
	ck_assert_int_eq(status, 200);
	free(other);
	free(tok);
	free(job);
}
END_TEST

/* True once fd's peer has closed (poll says so without waiting). */
static bool
closed_now(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, 0) != 1)
		return false;
	return recv(fd, &c, 1, MSG_DONTWAIT) == 0 ||
	    (p.revents & (POLLHUP | POLLERR)) != 0;
}

START_TEST(a_job_on_host_a_revoked_at_b_is_cut_first)
{
	char path[128];
	char *job;
	json_t *j;
	int fd;

	put_manifest(&F.a);
	job = new_job(&F.a);
	/* The job's channel on host A's proxy, which follows broker A. */
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&F.proxy_a, 201, "POST", path, F.launcher, NULL,
	    NULL);
	fd = unix_connect(json_string_value(json_object_get(j, "channel")));
	json_decref(j);
	ck_assert_int_ge(fd, 0);
	ck_assert(!closed_now(fd));

	/* Revoked at broker B: when the answer comes, A's proxy has cut
	 * the job's connection and said so. */
	j = revoke_at(&F.b, job);
	ck_assert_msg(closed_now(fd), "the job's connection is still open");
	assert_propagated(j);
	json_decref(j);
	close(fd);
	free(job);
}
END_TEST

/* --- concurrent appends ---------------------------------------------- */

#define MINTERS 4
#define MINTS 40

struct minter {
	const struct daemon *d;
	const char *job;
	char *tokens[MINTS];
	atomic_int *granted;
	int n;
};

static void *
minter_main(void *arg)
{
	struct minter *m = arg;

	for (int i = 0; i < MINTS; i++) {
		long status;
		char *t = try_mint(m->d, m->job, &status);

		if (t == NULL)
			break; /* the broker is gone (or said no) */
		m->tokens[m->n++] = t;
		atomic_fetch_add(m->granted, 1);
	}
	return NULL;
}

START_TEST(one_chain_from_two_brokers)
{
	struct minter m[MINTERS];
	pthread_t th[MINTERS];
	atomic_int granted = 0;
	json_int_t ra, rb;
	char *job;

	put_manifest(&F.b);
	job = new_job(&F.a);
	for (int i = 0; i < MINTERS; i++) {
		m[i] = (struct minter){ i % 2 ? &F.b : &F.a, job, { 0 },
			&granted, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, minter_main,
				     &m[i]),
		    0);
	}
	for (int i = 0; i < MINTERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(atomic_load(&granted), MINTERS * MINTS);
	assert_chain(&F.a, &ra);
	assert_chain(&F.b, &rb);
	ck_assert_int_eq(ra, rb);
	/* manifest, job, the mints */
	ck_assert_int_eq(ra, 2 + MINTERS * MINTS);
	for (int i = 0; i < MINTERS; i++)
		for (int k = 0; k < m[i].n; k++)
			free(m[i].tokens[k]);
	free(job);
}
END_TEST

/* --- kill -9 of a broker ---------------------------------------------- */

/* The job's tokens and its token_minted records, as B reads them. */
static void
assert_all_recorded(const char *job, struct minter *m, size_t nm)
{
	char path[200];
	json_t *j, *a, *r;
	size_t i, minted = 0, answered = 0;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&F.b, 200, "GET", path, F.admin, NULL, NULL);
	snprintf(path, sizeof(path), "/v1/audit?job=%s&limit=10000", job);
	a = harness_expect(&F.b, 200, "GET", path, F.admin, NULL, NULL);
	json_array_foreach(json_object_get(a, "records"), i, r)
	{
		minted += strcmp(json_string_value(json_object_get(r, "event")),
			      "token_minted") == 0;
	}
	/* Every grant is a row and a record: nothing unrecorded. */
	ck_assert_uint_eq(json_array_size(json_object_get(j, "tokens")),
	    minted);
	/* Every token answered is known at the other broker. */
	for (size_t k = 0; k < nm; k++)
		for (int t = 0; t < m[k].n; t++) {
			ck_assert_int_eq(active_at(&F.b, m[k].tokens[t]), 1);
			answered++;
		}
	ck_assert_uint_le(answered, minted);
	json_decref(j);
	json_decref(a);
}

START_TEST(kill_a_broker_mid_mint)
{
	struct minter m[MINTERS];
	pthread_t th[MINTERS];
	atomic_int granted = 0;
	char *job;
	long status;

	put_manifest(&F.a);
	job = new_job(&F.b);
	for (int i = 0; i < MINTERS; i++) {
		m[i] = (struct minter){ &F.a, job, { 0 }, &granted, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, minter_main,
				     &m[i]),
		    0);
	}
	/* Mints under way: the broker dies among them. */
	while (atomic_load(&granted) < MINTERS * 4)
		usleep(1000);
	daemon_kill(&F.a);
	for (int i = 0; i < MINTERS; i++)
		pthread_join(th[i], NULL);
	assert_all_recorded(job, m, MINTERS);
	assert_chain(&F.b, NULL);

	/* The job is still whole at B: revoked there, every token dies. */
	json_t *r = revoke_at(&F.b, job);
	json_decref(r);
	for (int i = 0; i < MINTERS; i++)
		for (int k = 0; k < m[i].n; k++) {
			ck_assert_int_eq(active_at(&F.b, m[i].tokens[k]), 0);
			free(m[i].tokens[k]);
		}
	ck_assert_int_eq(daemon_restart(&F.a), 0);
	free(try_mint(&F.a, job, &status));
	ck_assert_int_eq(status, 403);
	free(job);
}
END_TEST

struct revoker {
	const struct daemon *d;
	const char *job;
	long status;
};

static void *
revoker_main(void *arg)
{
	struct revoker *r = arg;
	char path[128];
	json_t *body = json_pack("{s:s}", "reason", "stopped");

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", r->job);
	json_decref(
	    harness_call(r->d, "POST", path, F.admin, NULL, body, &r->status));
	json_decref(body);
	return NULL;
}

START_TEST(kill_a_broker_mid_revoke)
{
	char *job, *tok[8];
	long status;
	pthread_t th;
	char path[200];
	size_t i, revoked = 0;
	json_t *a, *rec;

	put_manifest(&F.a);
	job = new_job(&F.a);
	for (int k = 0; k < 8; k++) {
		tok[k] = try_mint(&F.a, job, &status);
		ck_assert_int_eq(status, 200);
	}
	/* host-a's proxy goes: the revoke at A waits for it, and A dies
	 * while it waits (or before it committed: both must hold). */
	daemon_kill(&F.proxy_a);
	struct revoker r = { &F.a, job, 0 };
	ck_assert_int_eq(pthread_create(&th, NULL, revoker_main, &r), 0);
	usleep(200000);
	daemon_kill(&F.a);
	pthread_join(th, NULL);

	/* At B: revoked once, whatever A got done; every token dead. */
	json_t *again = revoke_at(&F.b, job);
	json_decref(again);
	for (int k = 0; k < 8; k++) {
		ck_assert_int_eq(active_at(&F.b, tok[k]), 0);
		free(tok[k]);
	}
	snprintf(path, sizeof(path), "/v1/audit?job=%s&limit=1000", job);
	a = harness_expect(&F.b, 200, "GET", path, F.admin, NULL, NULL);
	json_array_foreach(json_object_get(a, "records"), i, rec)
	{
		revoked +=
		    strcmp(json_string_value(json_object_get(rec, "event")),
			"job_revoked") == 0;
	}
	ck_assert_uint_eq(revoked, 1);
	json_decref(a);
	assert_chain(&F.b, NULL);
	ck_assert_int_eq(daemon_restart(&F.a), 0);
	ck_assert_int_eq(daemon_restart(&F.proxy_a), 0);
	free(job);
}
END_TEST

/* --- PostgreSQL restarts ---------------------------------------------- */

START_TEST(survives_a_database_restart)
{
	char *job, *tok, *late = NULL;
	long status = 0;
	json_t *r;

	put_manifest(&F.a);
	job = new_job(&F.a);
	tok = try_mint(&F.a, job, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_int_eq(pg_stop(&pg, "fast"), 0);
	/* Down: 503, and introspection fails closed (no answer is yes). */
	free(try_mint(&F.b, job, &status));
	ck_assert_int_eq(status, 503);
	ck_assert_int_eq(active_at(&F.a, tok), -503);
	ck_assert_int_eq(pg_restart(&pg), 0);
	/* Back: each broker reconnects by itself. */
	for (int i = 0; i < 200 && late == NULL; i++) {
		late = try_mint(&F.b, job, &status);
		if (late == NULL)
			usleep(100000);
	}
	ck_assert_msg(late != NULL, "B never recovered: %ld", status);
	/* A reconnects on its own schedule (a thread of its own): 503 until
	 * then, never a wrong answer. */
	int a_active = -503;
	for (int i = 0; i < 200 && a_active == -503; i++) {
		a_active = active_at(&F.a, tok);
		if (a_active == -503)
			usleep(100000);
	}
	ck_assert_int_eq(a_active, 1);
	/* The feed and the shared acknowledgements are back too. */
	wait_followers();
	r = revoke_at(&F.b, job);
	assert_propagated(r);
	json_decref(r);
	ck_assert_int_eq(active_at(&F.a, late), 0);
	assert_chain(&F.a, NULL);
	free(tok);
	free(late);
	free(job);
}
END_TEST

/* --- clients with a list of brokers ----------------------------------- */

/* Waits (up to 10 s) until proxy p follows the broker at addr with its
 * feed answering: false when it never did. */
static bool
follows(const struct daemon *p, const char *addr)
{
	for (int i = 0; i < 100; i++) {
		long status;
		json_t *h = harness_get_json(p, "/healthz", &status);
		const char *at =
		    json_string_value(json_object_get(h, "feed_broker"));
		const char *feed =
		    json_string_value(json_object_get(h, "feed"));
		bool yes = status == 200 && at != NULL && feed != NULL &&
		    strcmp(at, addr) == 0 && strcmp(feed, "ok") == 0;

		json_decref(h);
		if (yes)
			return true;
		usleep(100000);
	}
	return false;
}

/* The job's channel on proxy p: a connection to it (the fd). */
static int
open_channel(const struct daemon *p, const char *job)
{
	char path[128];
	json_t *j;
	int fd;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(p, 201, "POST", path, F.launcher, NULL, NULL);
	fd = unix_connect(json_string_value(json_object_get(j, "channel")));
	json_decref(j);
	ck_assert_int_ge(fd, 0);
	return fd;
}

START_TEST(a_proxy_with_two_brokers_survives_one)
{
	struct daemon pc;
	char list[300], *job, *later, *tok;
	long status;
	json_t *r, *ack;
	int fd;

	snprintf(list, sizeof(list), "[\"%s\", \"%s\"]", F.a.base, F.b.base);
	proxy_start_with(&pc, list, "host-c");
	wait_n_followers(3);
	ck_assert(follows(&pc, F.a.addr));
	put_manifest(&F.a);
	job = new_job(&F.a);
	tok = try_mint(&F.a, job, &status);
	ck_assert_int_eq(status, 200);
	fd = open_channel(&pc, job);

	/* A dies: host-c follows B from the sequence it had, and opens
	 * the channels of new jobs with B's answers. */
	daemon_kill(&F.a);
	ck_assert_msg(follows(&pc, F.b.addr), "host-c never followed B");
	later = new_job(&F.b);
	close(open_channel(&pc, later));

	/* A revoke at the survivor still cuts host-c's connection before
	 * it returns, and host-c is among those that acknowledged. */
	r = revoke_at(&F.b, job);
	ck_assert_msg(closed_now(fd), "the job's connection is still open");
	ack = json_object_get(json_object_get(r, "propagated"), "acknowledged");
	ck_assert_msg(lists(ack, "host-c") && lists(ack, "host-b"),
	    "acknowledged: %s", json_dumps(ack, JSON_COMPACT));
	json_decref(r);
	ck_assert_int_eq(active_at(&F.b, tok), 0);
	close(fd);
	ck_assert_int_eq(daemon_stop(&pc), 0);
	ck_assert_int_eq(daemon_restart(&F.a), 0);
	free(tok);
	free(later);
	free(job);
}
END_TEST

/* A broker that lost its database, as far as its clients can tell: 503
 * store_unavailable to everything, from a thread of the test. */
struct lost_broker {
	int fd;
	atomic_int answered;
	atomic_bool stop;
	pthread_t th;
	char base[64];
};

static void *
lost_main(void *arg)
{
	struct lost_broker *l = arg;
	static const char body[] =
	    "{\"error\":\"store_unavailable\",\"message\":\"the database\"}";
	char answer[300];
	int alen = snprintf(answer, sizeof(answer),
	    "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s",
	    sizeof(body) - 1, body);

	while (!atomic_load(&l->stop)) {
		struct pollfd p = { .fd = l->fd, .events = POLLIN };
		char buf[8192];
		size_t n = 0;
		int c;

		if (poll(&p, 1, 50) != 1 ||
		    (c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		struct timeval tv = { 1, 0 };
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (n < sizeof(buf) - 1) {
			ssize_t k = recv(c, buf + n, sizeof(buf) - 1 - n, 0);
			if (k <= 0)
				break;
			n += (size_t)k;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n") != NULL)
				break;
		}
		(void)send(c, answer, (size_t)alen, MSG_NOSIGNAL);
		atomic_fetch_add(&l->answered, 1);
		close(c);
	}
	return NULL;
}

static void
lost_start(struct lost_broker *l)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	memset(l, 0, sizeof(*l));
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(l->fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l->fd, 64), 0);
	ck_assert_int_eq(getsockname(l->fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(l->base, sizeof(l->base), "http://127.0.0.1:%u",
	    ntohs(sa.sin_port));
	ck_assert_int_eq(pthread_create(&l->th, NULL, lost_main, l), 0);
}

static void
lost_stop(struct lost_broker *l)
{
	atomic_store(&l->stop, true);
	pthread_join(l->th, NULL);
	close(l->fd);
}

/* A port nobody listens on: a broker that is down. */
static void
down_base(char *out, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(out, len, "http://127.0.0.1:%u", ntohs(sa.sin_port));
	close(fd);
}

START_TEST(a_broker_without_its_database_is_passed_over)
{
	struct lost_broker lost;
	struct daemon pd;
	char list[400], down[64], cfg[1200], path[400], out[4096], err[2048];
	char *job;
	json_t *r;
	int fd;

	lost_start(&lost);
	down_base(down, sizeof(down));
	snprintf(list, sizeof(list), "[\"%s\", \"%s\"]", lost.base, F.b.base);
	proxy_start_with(&pd, list, "host-d");
	ck_assert_msg(follows(&pd, F.b.addr), "host-d never followed B");
	ck_assert_int_ge(atomic_load(&lost.answered), 1);
	put_manifest(&F.b);
	job = new_job(&F.b);
	fd = open_channel(&pd, job);
	r = revoke_at(&F.a, job);
	ck_assert_msg(closed_now(fd), "the job's connection is still open");
	ck_assert(lists(json_object_get(json_object_get(r, "propagated"),
			    "acknowledged"),
	    "host-d"));
	json_decref(r);
	close(fd);

	/* The launcher's CLI with a list: a broker without its database,
	 * one that is down, then B. */
	snprintf(path, sizeof(path), "%s/launcher.json", F.dir);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": [\"%s\", \"%s\", \"%s\"], \"admin_key_file\": "
	    "\"%s/keys/admin.key\", \"launcher_key_file\": "
	    "\"%s/keys/launcher.key\", \"state_dir\": \"%s/launcher\"}",
	    lost.base, down, F.b.base, F.dir, F.dir, F.dir);
	harness_write_file(path, cfg);
	char *argv[] = { (char *)harness_bin("cordon"), "manifest", "list",
		"--config", path, NULL };
	ck_assert_msg(harness_run(argv, out, sizeof(out), err, sizeof(err)) ==
		0,
	    "cordon manifest list: %s%s", out, err);
	ck_assert_msg(strstr(out, "fleet") != NULL, "%s", out);
	ck_assert_int_eq(daemon_stop(&pd), 0);
	lost_stop(&lost);
	free(job);
}
END_TEST

/* --- a database that does not answer ---------------------------------- */

/*
 * A TCP relay to the test's PostgreSQL (its unix socket), in a thread:
 * while forwarding it pumps bytes both ways; while silent it stops
 * pumping and accepts new connections without ever answering them, a
 * database host gone quiet. Back to forwarding, it drops every
 * connection of the silence.
 */
#define RELAY_PAIRS 64

struct relay {
	int fd, port;
	char sock[200];
	atomic_bool silent, stop;
	atomic_int accepted;
	pthread_t th;
};

static void *
relay_main(void *arg)
{
	struct relay *r = arg;
	int cl[RELAY_PAIRS], sv[RELAY_PAIRS], n = 0;
	bool was_silent = false;

	while (!atomic_load(&r->stop)) {
		struct pollfd p[1 + 2 * RELAY_PAIRS];
		bool silent = atomic_load(&r->silent);
		int np = 1, c;

		if (was_silent && !silent) {
			for (int i = 0; i < n; i++) {
				close(cl[i]);
				if (sv[i] >= 0)
					close(sv[i]);
			}
			n = 0;
		}
		was_silent = silent;
		p[0] = (struct pollfd){ .fd = r->fd, .events = POLLIN };
		for (int i = 0; i < n && !silent; i++) {
			p[np++] =
			    (struct pollfd){ .fd = cl[i], .events = POLLIN };
			p[np++] =
			    (struct pollfd){ .fd = sv[i], .events = POLLIN };
		}
		if (poll(p, (nfds_t)np, 50) <= 0)
			continue;
		/* Only the pairs polled have revents (a pair accepted below
		 * is polled next time: reading its unset entries made the
		 * relay block in a recv from the server, which waited for the
		 * client's first bytes, and it never answered again); no recv
		 * waits. */
		for (int i = 0, k = 1; 2 * i + 1 < np; i++, k += 2) {
			bool gone = false;

			for (int d = 0; d < 2 && !gone; d++) {
				char buf[16384];
				int from = d == 0 ? cl[i] : sv[i];
				int to = d == 0 ? sv[i] : cl[i];
				ssize_t m;

				if ((p[k + d].revents &
					(POLLIN | POLLHUP | POLLERR)) == 0)
					continue;
				m = recv(from, buf, sizeof(buf), MSG_DONTWAIT);
				if (m < 0 &&
				    (errno == EAGAIN || errno == EINTR))
					continue;
				gone = m <= 0 ||
				    send(to, buf, (size_t)m, MSG_NOSIGNAL) != m;
			}
			if (gone) {
				close(cl[i]);
				close(sv[i]);
				cl[i] = cl[n - 1];
				sv[i] = sv[n - 1];
				n--;
				break; /* the poll set no longer matches */
			}
		}
		if ((p[0].revents & POLLIN) != 0 && n < RELAY_PAIRS &&
		    (c = accept4(r->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
			atomic_fetch_add(&r->accepted, 1);
			cl[n] = c;
			sv[n] = silent ? -1 : unix_connect(r->sock);
			if (!silent && sv[n] < 0)
				close(c);
			else
				n++;
		}
	}
	for (int i = 0; i < n; i++) {
		close(cl[i]);
		if (sv[i] >= 0)
			close(sv[i]);
	}
	return NULL;
}

static void
relay_start(struct relay *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	memset(r, 0, sizeof(*r));
	snprintf(r->sock, sizeof(r->sock), "%s/.s.PGSQL.%d", pg.dir, pg.port);
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(r->fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(r->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(r->fd, 64), 0);
	ck_assert_int_eq(getsockname(r->fd, (struct sockaddr *)&sa, &len), 0);
	r->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&r->th, NULL, relay_main, r), 0);
}

static void
relay_stop(struct relay *r)
{
	atomic_store(&r->stop, true);
	pthread_join(r->th, NULL);
	close(r->fd);
}

#define SILENT_CALLS 10

START_TEST(a_silent_database_is_503_at_once)
{
	struct relay rl;
	struct daemon c;
	char name[64], url[400], cfg[1500], *job, *tok, *late = NULL;
	long status;
	int before, attempts;

	relay_start(&rl);
	snprintf(name, sizeof(name), "silent%d", (int)getpid());
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	snprintf(url, sizeof(url),
	    "postgresql://127.0.0.1:%d/%s?user=cordon&sslmode=disable", rl.port,
	    name);
	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"keys_dir\": \"%s/keys\", \"pepper\": "
	    "\"%s/pepper\", \"lease_seconds\": 3600}",
	    url, F.dir, F.dir);
	ck_assert_int_eq(daemon_start(&c, "broker", cfg), 0);
	put_manifest(&c);
	job = new_job(&c);
	tok = try_mint(&c, job, &status);
	ck_assert_int_eq(status, 200);

	/* The database host goes quiet: one call may wait for its answer,
	 * then every call is 503 without trying to connect, while the
	 * broker reconnects in the background. */
	atomic_store(&rl.silent, true);
	before = atomic_load(&rl.accepted);
	for (int i = 0; i < SILENT_CALLS; i++) {
		free(try_mint(&c, job, &status));
		ck_assert_int_eq(status, 503);
		ck_assert_int_eq(active_at(&c, tok), -503);
	}
	attempts = atomic_load(&rl.accepted) - before;
	ck_assert_msg(attempts < SILENT_CALLS / 2,
	    "%d connection attempts for %d calls", attempts, 2 * SILENT_CALLS);

	/* It answers again: the broker finds out by itself. */
	atomic_store(&rl.silent, false);
	for (int i = 0; i < 200 && late == NULL; i++) {
		late = try_mint(&c, job, &status);
		if (late == NULL)
			usleep(100000);
	}
	ck_assert_msg(late != NULL, "never recovered: %ld", status);
	ck_assert_int_eq(active_at(&c, tok), 1);
	ck_assert_int_eq(daemon_stop(&c), 0);
	relay_stop(&rl);
	free(late);
	free(tok);
	free(job);
}
END_TEST

/* --- the mint rate, fleet-wide ------------------------------------------ */

START_TEST(the_mint_rate_holds_fleet_wide)
{
	const char *text =
	    "{\"name\": \"fleet\", \"capabilities\": ["
	    " {\"name\": \"invoices.read\", \"audience\": \"invoices-api\","
	    "  \"params\": {\"tenant\": [\"4182\"]}, \"reason\": \"r\"}],"
	    " \"mint\": {\"max_tokens\": 1000, \"per_minute\": 1,"
	    "  \"burst\": 5}}";
	int granted = 0, limited = 0;
	char path[200], *job;
	size_t i, audited = 0;
	json_t *a, *rec;

	json_decref(harness_expect(&F.a, 200, "PUT", "/v1/manifests/fleet",
	    F.admin, NULL, json_loads(text, 0, NULL)));
	job = new_job(&F.a);
	/* A burst of 5 for the job, whichever broker it asks: alternating
	 * between A and B does not make it 10. */
	for (int k = 0; k < 12; k++) {
		long status;
		char *t = try_mint(k % 2 ? &F.b : &F.a, job, &status);

		granted += status == 200;
		limited += status == 429;
		free(t);
	}
	ck_assert_int_eq(granted, 5);
	ck_assert_int_eq(limited, 7);
	/* The run of refusals is audited once for the fleet. The record is
	 * written off the request path (store_audit_async: a flood of
	 * refusals does not wait for commits), so it may land after the
	 * 429s: waited for, at most 20 s. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s&limit=1000", job);
	for (int k = 0; k < 200 && audited == 0; k++) {
		if (k > 0)
			usleep(100000);
		a = harness_expect(&F.b, 200, "GET", path, F.admin, NULL, NULL);
		json_array_foreach(json_object_get(a, "records"), i, rec)
		{
			audited += strcmp(json_string_value(
					      json_object_get(rec, "event")),
				       "mint_rate_limited") == 0;
		}
		json_decref(a);
	}
	ck_assert_uint_eq(audited, 1);
	free(job);
}
END_TEST

/* --- configuration ----------------------------------------------------- */

/* cordon-broker -n with a config of store: the exit status, stderr. */
static int
check_store(const char *store, char *err, size_t errlen)
{
	char path[400], cfg[600], out[256];
	char *argv[] = { (char *)harness_bin("cordon-broker"), "-n", "--config",
		path, NULL };

	snprintf(path, sizeof(path), "%s/broker.json", harness_tmpdir());
	snprintf(cfg, sizeof(cfg), "{\"store\": \"%s\"}", store);
	harness_write_file(path, cfg);
	return harness_run(argv, out, sizeof(out), err, errlen);
}

START_TEST(a_bad_store_is_a_config_error)
{
	char err[512];

	ck_assert_int_eq(check_store("mysql://db/cordon", err, sizeof(err)),
	    78);
	ck_assert_msg(strstr(err, "store") != NULL, "%s", err);
	ck_assert_int_eq(check_store("sqlite", err, sizeof(err)), 0);
	ck_assert_int_eq(check_store("postgresql://db/cordon", err,
			     sizeof(err)),
	    0);
}
END_TEST

static Suite *
fleet_suite(void)
{
	Suite *s = suite_create("fleet");
	TCase *tc = tcase_create("fleet");
	TCase *cfg = tcase_create("config");

	tcase_add_test(cfg, a_bad_store_is_a_config_error);
	suite_add_tcase(s, cfg);

	tcase_add_checked_fixture(tc, fleet_up, fleet_down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, revoke_reaches_every_follower);
	tcase_add_test(tc, a_job_on_host_a_revoked_at_b_is_cut_first);
	tcase_add_test(tc, a_token_revoked_alone_reaches_every_follower);
	tcase_add_test(tc, one_chain_from_two_brokers);
	tcase_add_test(tc, kill_a_broker_mid_mint);
	tcase_add_test(tc, kill_a_broker_mid_revoke);
	tcase_add_test(tc, survives_a_database_restart);
	tcase_add_test(tc, a_proxy_with_two_brokers_survives_one);
	tcase_add_test(tc, a_broker_without_its_database_is_passed_over);
	tcase_add_test(tc, a_silent_database_is_503_at_once);
	tcase_add_test(tc, the_mint_rate_holds_fleet_wide);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	char err[512];
	int rc;

	if (!pg_wanted()) {
		printf("it_fleet: CORDON_TEST_NO_PG=1: skipped\n");
		return 0;
	}
	if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_fleet: %s\n", err);
		return 1;
	}
	rc = harness_main(fleet_suite());
	pg_destroy(&pg);
	return rc;
}
