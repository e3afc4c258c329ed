/*
 * cordon-broker, the real daemon on loopback: manifests and their
 * validation, tokens within a 15-minute ceiling and the manifest's params,
 * introspection across every way a token dies (and across a restart), the
 * revocation feed and its acknowledgements, the audit chain, a crash in
 * the middle of work, bad input of every kind, and the mint ceiling and
 * rate: a job's N+1th token, a burst, and parallel mints racing the count,
 * each refused with 429 and audited once.
 */
#include "harness.h"
#include "http_client.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

static const char manifest[] =
    "{\"name\": \"support-triage\", \"description\": \"reads support logs\","
    " \"command\": [\"/usr/bin/python3\", \"triage.py\"],"
    " \"env\": {\"LANG\": \"C.UTF-8\"},"
    " \"capabilities\": ["
    "  {\"name\": \"invoices.read\", \"audience\": \"invoices-api\","
    "   \"params\": {\"tenant\": [\"4182\", \"4183\"]}, \"ttl_seconds\": 900,"
    "   \"reason\": \"look up the customer's last invoice\"},"
    "  {\"name\": \"tickets.read\", \"audience\": \"tickets-api\","
    "   \"params\": {\"queue\": [\"support\"]}, \"ttl_seconds\": 300,"
    "   \"reason\": \"read the ticket\", \"mint_at_start\": true},"
    "  {\"name\": \"blink\", \"audience\": \"blink-api\","
    "   \"params\": {\"n\": [1]}, \"ttl_seconds\": 1, \"reason\": \"short\"}],"
    " \"egress\": [{\"host\": \"api.github.com\", \"port\": 443,"
    "   \"methods\": [\"GET\"], \"paths\": [\"/repos/acme/\"],"
    "   \"tls\": \"terminate\", \"reason\": \"read the issue\"}],"
    " \"limits\": {\"wall_seconds\": 600},"
    " \"return\": {\"protected\": [\".github/**\"]}}";

static void
read_keys(const struct daemon *d)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/var/broker/keys/admin.key", d->dir);
	ck_assert_int_eq(harness_read_line(path, admin, sizeof(admin)), 0);
	snprintf(path, sizeof(path), "%s/var/broker/keys/launcher.key", d->dir);
	ck_assert_int_eq(harness_read_line(path, launcher, sizeof(launcher)),
	    0);
	snprintf(path, sizeof(path), "%s/var/broker/keys/verifier.key", d->dir);
	ck_assert_int_eq(harness_read_line(path, verifier, sizeof(verifier)),
	    0);
}

static void
start(void)
{
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"lease_seconds\": 3, \"log_level\": \"info\"}"),
	    0);
	read_keys(&broker);
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&broker), 0);
}

/* Compares a with b, which it frees: for expected values built inline. */
static bool
same(const json_t *a, json_t *b)
{
	bool eq = json_equal(a, b);

	json_decref(b);
	return eq;
}

/* Calls the broker with body (stolen) and asserts the status; returns the
 * JSON answer. */
static json_t *
expect(long want, const char *method, const char *path, const char *key,
    const char *header, json_t *body)
{
	return harness_expect(&broker, want, method, path, key, header, body);
}

static void
put_manifest(const char *text)
{
	json_t *m = json_loads(text, 0, NULL);

	ck_assert_ptr_nonnull(m);
	json_decref(
	    expect(200, "PUT", "/v1/manifests/support-triage", admin, NULL, m));
}

static char *
new_job(void)
{
	json_t *body = json_pack("{s:s}", "manifest", "support-triage");
	json_t *j = expect(201, "POST", "/v1/jobs", launcher, NULL, body);
	char *id = strdup(json_string_value(json_object_get(j, "job")));

	json_decref(j);
	return id;
}

/* A token for job through the channel's identity (as the proxy asks). */
static char *
mint(const char *job, const char *cap, json_t *params, json_int_t *ret_exp)
{
	char hdr[128];
	json_t *body =
	    json_pack("{s:s, s:o}", "capability", cap, "params", params);
	json_t *t;
	char *value;

	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);
	t = expect(200, "POST", "/v1/token", verifier, hdr, body);
	value = strdup(json_string_value(json_object_get(t, "access_token")));
	if (ret_exp != NULL) {
		json_t *j = expect(200, "POST", "/v1/introspect", verifier,
		    NULL, json_pack("{s:s}", "token", value));
		*ret_exp = json_integer_value(json_object_get(j, "exp"));
		json_decref(j);
	}
	json_decref(t);
	return value;
}

static bool
active(const char *token)
{
	json_t *body = json_pack("{s:s}", "token", token);
	json_t *v = expect(200, "POST", "/v1/introspect", verifier, NULL, body);
	bool a = json_is_true(json_object_get(v, "active"));

	json_decref(v);
	return a;
}

static void
revoke_job(const char *job, const char *reason)
{
	char path[128];
	json_t *body = json_pack("{s:s}", "reason", reason);

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(expect(200, "POST", path, admin, NULL, body));
}

/* --- manifests ------------------------------------------------------------ */

START_TEST(manifest_versions_and_planes)
{
	json_t *m = json_loads(manifest, 0, NULL), *v;

	v = expect(200, "PUT", "/v1/manifests/support-triage", admin, NULL,
	    json_incref(m));
	ck_assert_int_eq(json_integer_value(json_object_get(v, "version")), 1);
	ck_assert_int_eq(json_array_size(json_object_get(v, "planes")), 3);
	ck_assert_uint_eq(strlen(
			      json_string_value(json_object_get(v, "sha256"))),
	    64);
	json_decref(v);

	/* The same document again is the same version. */
	v = expect(200, "PUT", "/v1/manifests/support-triage", admin, NULL,
	    json_incref(m));
	ck_assert_int_eq(json_integer_value(json_object_get(v, "version")), 1);
	ck_assert_int_eq(json_array_size(json_object_get(v, "planes")), 0);
	json_decref(v);

	/* An egress change touches reachability alone. */
	json_object_set_new(json_array_get(json_object_get(m, "egress"), 0),
	    "paths", json_pack("[s]", "/repos/acme/widgets/"));
	v = expect(200, "PUT", "/v1/manifests/support-triage", admin, NULL,
	    json_incref(m));
	ck_assert_int_eq(json_integer_value(json_object_get(v, "version")), 2);
	ck_assert(same(json_object_get(v, "planes"),
	    json_pack("[s]", "reachability")));
	json_decref(v);

	/* An env change touches identity; a disk limit, the return path. */
	json_object_set_new(json_object_get(m, "env"), "TZ",
	    json_string("UTC"));
	json_object_set_new(json_object_get(m, "limits"), "disk_mb",
	    json_integer(64));
	v = expect(200, "PUT", "/v1/manifests/support-triage", admin, NULL,
	    json_incref(m));
	ck_assert(same(json_object_get(v, "planes"),
	    json_pack("[s, s]", "identity", "return")));
	json_decref(v);

	v = expect(200, "GET", "/v1/manifests/support-triage?version=1",
	    launcher, NULL, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "version")), 1);
	ck_assert_ptr_null(
	    json_object_get(json_object_get(json_object_get(v, "manifest"),
				"env"),
		"TZ"));
	json_decref(v);
	v = expect(200, "GET", "/v1/manifests/support-triage", admin, NULL,
	    NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "version")), 3);
	json_decref(v);
	json_decref(
	    expect(404, "GET", "/v1/manifests/nothing", admin, NULL, NULL));
	json_decref(expect(403, "GET", "/v1/manifests/support-triage", verifier,
	    NULL, NULL));
	json_decref(m);
}
END_TEST

/* True when problems name field with a problem containing says. */
static bool
has_problem(const json_t *problems, const char *field, const char *says)
{
	size_t i;
	json_t *p;

	json_array_foreach(problems, i, p)
	{
		if (strcmp(json_string_value(json_object_get(p, "field")),
			field) == 0 &&
		    strstr(json_string_value(json_object_get(p, "problem")),
			says) != NULL)
			return true;
	}
	return false;
}

START_TEST(manifest_validation_lists_every_problem)
{
	json_t *egress = json_array();

	for (int i = 0; i < 13; i++)
		json_array_append_new(egress,
		    json_pack("{s:s, s:[s], s:s}", "host",
			i == 0       ? "*"
			    : i == 1 ? "*.co.uk"
			    : i == 2 ? "registry.npmjs.org"
				     : "api.example.org",
			"methods", "GET", "reason", "because"));
	/* Distinct ports, so that only the listed problems apply. */
	for (int i = 3; i < 13; i++)
		json_object_set_new(json_array_get(egress, i), "port",
		    json_integer(8000 + i));
	json_object_del(json_array_get(egress, 12), "reason");
	json_t *m = json_pack("{s:s, s:{s:s, s:s, s:s, s:s}, s:o, "
			      "s:[{s:s, s:s, s:s, s:i, s:{s:[s]}}, "
			      "{s:s, s:s, s:s}], s:s}",
	    "name", "support-triage", "env", "GITHUB_TOKEN", "x", "Api_Key",
	    "y", "NOTE", "ghp_0123456789abcdef0123456789abcdef0123", "SEED",
	    "q8Zr2LmX9vTy4KpW7sNd3FhJ6gBc", "egress", egress, "capabilities",
	    "name", "long", "audience", "a", "reason", "r", "ttl_seconds", 901,
	    "params", "t", "1", "name", "open", "audience", "a", "reason", "r",
	    "surprise", "field");
	json_t *v = expect(422, "PUT", "/v1/manifests/support-triage", admin,
	    NULL, json_incref(m));
	json_t *p = json_object_get(v, "problems");

	ck_assert_str_eq(json_string_value(json_object_get(v, "error")),
	    "invalid_manifest");
	ck_assert(has_problem(p, "env.GITHUB_TOKEN", "secret"));
	ck_assert(has_problem(p, "env.Api_Key", "secret"));
	ck_assert(has_problem(p, "env.NOTE", "known credential"));
	ck_assert(has_problem(p, "env.SEED", "random key"));
	ck_assert(has_problem(p, "egress", "more than 12"));
	ck_assert(has_problem(p, "egress[0].host", "wildcard"));
	ck_assert(has_problem(p, "egress[1].host", "public suffix"));
	ck_assert(has_problem(p, "egress[2].host", "package registry"));
	ck_assert(has_problem(p, "egress[12].reason", "required"));
	ck_assert(has_problem(p, "capabilities[0].ttl_seconds", "15 minutes"));
	ck_assert(has_problem(p, "capabilities[1].params", "ceiling"));
	ck_assert(has_problem(p, "surprise", "unknown field"));
	ck_assert_int_eq(json_array_size(p), 12);
	json_decref(v);
	json_decref(m);

	/* Nothing was stored. */
	json_decref(expect(404, "GET", "/v1/manifests/support-triage", admin,
	    NULL, NULL));

	/* A registry on purpose, with a reason, and seven entries: stored,
	 * with a warning. */
	m = json_loads(manifest, 0, NULL);
	egress = json_object_get(m, "egress");
	json_array_append_new(egress,
	    json_pack("{s:s, s:[s], s:b, s:s}", "host", "registry.npmjs.org",
		"methods", "GET", "registry", 1, "reason", "vendored build"));
	for (int i = 0; i < 5; i++)
		json_array_append_new(egress,
		    json_pack("{s:s, s:i, s:[s], s:s}", "host", "example.org",
			"port", 9000 + i, "methods", "GET", "reason", "r"));
	v = expect(200, "PUT", "/v1/manifests/support-triage", admin, NULL,
	    json_incref(m));
	ck_assert(
	    has_problem(json_object_get(v, "warnings"), "egress", "over 6"));
	json_decref(v);
	json_decref(m);
}
END_TEST

/* --- tokens --------------------------------------------------------------- */

START_TEST(tokens_within_the_ceiling)
{
	char hdr[128];
	json_t *v, *body;
	json_int_t exp;

	put_manifest(manifest);
	char *job = new_job();
	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);

	/* Exactly what the manifest allows. */
	char *tok = mint(job, "invoices.read",
	    json_pack("{s:s}", "tenant", "4182"), &exp);
	ck_assert(active(tok));
	ck_assert_int_eq(strncmp(tok, "crd_", 4), 0);
	ck_assert_uint_eq(strlen(tok), 42);

	/* Broader, longer, other, or unnamed: refused, never narrowed. */
	static const char *const refused[] = {
		"{\"capability\": \"invoices.read\", \"params\": {\"tenant\": "
		"\"9999\"}}",
		"{\"capability\": \"invoices.read\", \"params\": {}}",
		"{\"capability\": \"invoices.read\", \"params\": {\"tenant\": "
		"\"4182\", \"region\": \"eu\"}}",
		"{\"capability\": \"invoices.read\", \"params\": {\"tenant\": "
		"\"4182\"}, \"ttl_seconds\": 901}",
		"{\"capability\": \"invoices.read\", \"params\": {\"tenant\": "
		"[\"4182\", \"4183\"]}}",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		body = json_loads(refused[i], 0, NULL);
		v = expect(403, "POST", "/v1/token", verifier, hdr, body);
		ck_assert_str_eq(json_string_value(json_object_get(v, "error")),
		    "beyond_ceiling");
		ck_assert_ptr_null(json_object_get(v, "access_token"));
		json_decref(v);
	}
	body =
	    json_pack("{s:s, s:{}}", "capability", "payroll.write", "params");
	json_decref(expect(403, "POST", "/v1/token", verifier, hdr, body));
	/* Only the proxy (a verifier) speaks for a channel. */
	json_decref(expect(403, "POST", "/v1/token", launcher, hdr,
	    json_pack("{s:s, s:{s:s}}", "capability", "invoices.read", "params",
		"tenant", "4182")));
	json_decref(expect(403, "POST", "/v1/token", verifier, NULL,
	    json_pack("{s:s, s:{s:s}}", "capability", "invoices.read", "params",
		"tenant", "4182")));

	/* A typo in a token fails its checksum: inactive, not an error. */
	char typo[64];
	snprintf(typo, sizeof(typo), "%s", tok);
	typo[10] = typo[10] == 'a' ? 'b' : 'a';
	ck_assert(!active(typo));
	ck_assert(!active("crd_short"));
	free(tok);
	free(job);
}
END_TEST

START_TEST(no_token_outlives_its_ceiling_or_its_job)
{
	char path[128];
	json_t *v, *t;
	size_t i;

	put_manifest(manifest);
	char *job = new_job();
	char *tok = mint(job, "invoices.read",
	    json_pack("{s:s}", "tenant", "4183"), NULL);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	v = expect(200, "GET", path, launcher, NULL, NULL);
	json_int_t deadline =
	    json_integer_value(json_object_get(v, "deadline"));
	ck_assert_uint_eq(json_array_size(json_object_get(v, "tokens")), 2);
	json_array_foreach(json_object_get(v, "tokens"), i, t)
	{
		json_int_t iat = json_integer_value(json_object_get(t, "iat"));
		json_int_t exp = json_integer_value(json_object_get(t, "exp"));
		ck_assert_int_le(exp - iat, 900);
		ck_assert_int_le(exp, deadline);
		/* Ids only: a value never comes back. */
		ck_assert_ptr_null(json_object_get(t, "access_token"));
	}
	/* The job's wall clock (600 s) is shorter than 900 s: it wins. */
	json_t *body = json_pack("{s:s}", "token", tok);
	json_t *in =
	    expect(200, "POST", "/v1/introspect", verifier, NULL, body);
	body = NULL;
	ck_assert_int_eq(json_integer_value(json_object_get(in, "exp")),
	    deadline);
	ck_assert_str_eq(json_string_value(json_object_get(in, "job")), job);
	ck_assert_str_eq(json_string_value(json_object_get(in, "aud")),
	    "invoices-api");
	json_decref(in);
	json_decref(v);
	free(tok);
	free(job);
}
END_TEST

/* Polls until the job's state is revoked: its stop_reason, or NULL. */
static char *
wait_revoked(const char *job, int seconds)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	for (int i = 0; i < seconds * 10; i++) {
		json_t *v = expect(200, "GET", path, admin, NULL, NULL);
		if (strcmp(json_string_value(json_object_get(v, "state")),
			"revoked") == 0) {
			char *r = strdup(json_string_value(
			    json_object_get(v, "stop_reason")));
			json_decref(v);
			return r;
		}
		json_decref(v);
		usleep(100 * 1000);
	}
	return NULL;
}

static bool
file_contains(const char *path, const char *needle)
{
	FILE *f = fopen(path, "rb");
	size_t n = strlen(needle), got;
	static char buf[1 << 22];

	if (f == NULL)
		return false;
	got = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (size_t i = 0; i + n <= got; i++)
		if (memcmp(buf + i, needle, n) == 0)
			return true;
	return false;
}

/* The broker restarted on its own directory with a lease of seconds
 * (it applies to jobs made, and heartbeats taken, from then on). */
static void
lease_broker(int seconds)
{
	char cfg[128], path[400];

	snprintf(cfg, sizeof(cfg),
	    "{\"lease_seconds\": %d, \"log_level\": \"info\"}", seconds);
	snprintf(path, sizeof(path), "%s/config.json", broker.dir);
	ck_assert_int_eq(daemon_stop(&broker), 0);
	harness_write_file(path, cfg);
	ck_assert_int_eq(daemon_restart(&broker), 0);
}

START_TEST(introspection_sees_every_death_and_survives_restart)
{
	char path[128];
	json_t *tenant = json_pack("{s:s}", "tenant", "4182");

	/* No job lapses unless the test lets it, however loaded the
	 * machine: an hour's lease until step 5. */
	lease_broker(3600);
	put_manifest(manifest);

	/* 1. Fresh: active. 2. Its job revoked: inactive. */
	char *j1 = new_job();
	char *t1 = mint(j1, "invoices.read", json_incref(tenant), NULL);
	ck_assert(active(t1));
	revoke_job(j1, "test");
	ck_assert(!active(t1));

	/* 3. Revoked by itself (RFC 7009): inactive; the job goes on. */
	char *j2 = new_job();
	char *t2 = mint(j2, "invoices.read", json_incref(tenant), NULL);
	char *t2b = mint(j2, "invoices.read", json_incref(tenant), NULL);
	json_t *body = json_pack("{s:s}", "token", t2);
	json_t *v = expect(200, "POST", "/v1/revoke", admin, NULL, body);
	ck_assert(json_is_true(json_object_get(v, "revoked")));
	json_decref(v);
	ck_assert(!active(t2));
	ck_assert(active(t2b));
	/* Unknown or malformed: still 200, as RFC 7009 says. */
	json_decref(expect(200, "POST", "/v1/revoke", admin, NULL,
	    json_pack("{s:s}", "token", "crd_nothing")));

	/* 4. Expired (a 1-second capability). */
	char *t3 = mint(j2, "blink", json_pack("{s:i}", "n", 1), NULL);
	sleep(2);
	ck_assert(!active(t3));

	/* 5. Its lease lapsed: j4, made with the hour's lease, is given a
	 * 2 s one by a heartbeat at a broker restarted with it, then none;
	 * the broker revokes it. j2 keeps its hour (no heartbeat of it
	 * here). */
	char *j4 = new_job();
	char *t4 = mint(j4, "invoices.read", json_incref(tenant), NULL);
	lease_broker(2);
	snprintf(path, sizeof(path), "/v1/jobs/%s/heartbeat", j4);
	json_decref(expect(200, "POST", path, launcher, NULL, NULL));
	char *why = wait_revoked(j4, 60);
	ck_assert_ptr_nonnull(why);
	ck_assert_str_eq(why, "lease_expired");
	free(why);
	ck_assert(!active(t4));
	ck_assert(active(t2b));
	/* A heartbeat for a revoked job says so. */
	json_decref(expect(409, "POST", path, launcher, NULL, NULL));

	/* The lapse is in the audit, by the broker itself. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s", j4);
	v = expect(200, "GET", path, admin, NULL, NULL);
	json_t *rec;
	size_t i;
	bool seen = false;
	json_array_foreach(json_object_get(v, "records"), i, rec)
	{
		if (strcmp(json_string_value(json_object_get(rec, "event")),
			"job_revoked") == 0 &&
		    strcmp(json_string_value(json_object_get(rec, "actor")),
			"broker") == 0)
			seen = true;
	}
	ck_assert(seen);
	json_decref(v);

	/* The same answers after a restart. */
	ck_assert_int_eq(daemon_stop(&broker), 0);
	ck_assert_int_eq(daemon_restart(&broker), 0);
	ck_assert(!active(t1));
	ck_assert(!active(t2));
	ck_assert(!active(t3));
	ck_assert(!active(t4));
	ck_assert(active(t2b));

	/* No token value is in the database, its WAL or the log. */
	const char *const values[] = { t1, t2, t2b, t3, t4 };
	const char *const files[] = { "broker.db", "broker.db-wal",
		"broker.log" };
	for (size_t f = 0; f < 3; f++) {
		char p[400];
		if (f < 2)
			snprintf(p, sizeof(p), "%s/var/broker/%s", broker.dir,
			    files[f]);
		else
			snprintf(p, sizeof(p), "%s", broker.log);
		for (size_t k = 0; k < 5; k++)
			ck_assert_msg(!file_contains(p, values[k]),
			    "a token value is in %s", p);
	}
	json_decref(tenant);
	free(j1), free(j2), free(j4);
	free(t1), free(t2), free(t2b), free(t3), free(t4);
}
END_TEST

/* --- the revocation feed -------------------------------------------------- */

static atomic_bool follow;
static atomic_llong followed;

/* A proxy following the feed: poll, take what came, poll again (ack). */
static void *
follower(void *arg)
{
	long long after = 0;

	(void)arg;
	while (atomic_load(&follow)) {
		char path[128];
		long status;
		snprintf(path, sizeof(path),
		    "/v1/revocations?after=%lld&wait=1&follower=proxy-a",
		    after);
		json_t *v = harness_call(&broker, "GET", path, verifier, NULL,
		    NULL, &status);
		if (status == 200) {
			after = json_integer_value(json_object_get(v, "head"));
			atomic_store(&followed, after);
		}
		json_decref(v);
	}
	return NULL;
}

START_TEST(revoke_waits_for_the_followers)
{
	char path[128];
	pthread_t t;
	json_t *v;

	put_manifest(manifest);
	char *j1 = new_job(), *j2 = new_job();

	atomic_store(&follow, true);
	pthread_create(&t, NULL, follower, NULL);
	/* Let the follower connect. */
	for (int i = 0; i < 50; i++) {
		v = expect(200, "GET", "/healthz", NULL, NULL, NULL);
		json_int_t n =
		    json_integer_value(json_object_get(v, "feed_followers"));
		json_decref(v);
		if (n == 1)
			break;
		usleep(50 * 1000);
	}
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", j1);
	v = expect(200, "POST", path, launcher, NULL, NULL);
	json_int_t seq = json_integer_value(json_object_get(v, "seq"));
	json_t *prop = json_object_get(v, "propagated");
	ck_assert_int_eq(json_integer_value(json_object_get(prop, "followers")),
	    1);
	ck_assert(same(json_object_get(prop, "acknowledged"),
	    json_pack("[s]", "proxy-a")));
	/* Returned only once the follower had it. */
	ck_assert_int_ge(atomic_load(&followed), seq);
	json_decref(v);

	/* Revoking twice answers the same. */
	v = expect(200, "POST", path, admin, NULL, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "seq")), seq);
	ck_assert_str_eq(json_string_value(json_object_get(v, "reason")),
	    "stopped");
	json_decref(v);

	/* A follower that stops answering is declared gone, within 2 s. */
	atomic_store(&follow, false);
	pthread_join(t, NULL);
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", j2);
	v = expect(200, "POST", path, admin, NULL, NULL);
	prop = json_object_get(v, "propagated");
	ck_assert(
	    same(json_object_get(prop, "gone"), json_pack("[s]", "proxy-a")));
	json_decref(v);

	/* The feed lists both, in order. */
	v = expect(200, "GET", "/v1/revocations?after=0", verifier, NULL, NULL);
	ck_assert_int_eq(json_array_size(json_object_get(v, "revocations")), 2);
	json_decref(v);
	free(j1);
	free(j2);
}
END_TEST

static atomic_long poll_status;

static void *
long_poll(void *arg)
{
	long status;
	json_t *v = harness_call(&broker, "GET",
	    "/v1/revocations?after=0&wait=30&follower=slow", verifier, NULL,
	    NULL, &status);

	(void)arg;
	json_decref(v);
	atomic_store(&poll_status, status);
	return NULL;
}

START_TEST(stop_answers_the_long_polls)
{
	pthread_t t;
	json_t *v;

	atomic_store(&poll_status, -1);
	pthread_create(&t, NULL, long_poll, NULL);
	for (int i = 0; i < 100; i++) {
		v = expect(200, "GET", "/healthz", NULL, NULL, NULL);
		json_int_t n =
		    json_integer_value(json_object_get(v, "feed_followers"));
		json_decref(v);
		if (n == 1)
			break;
		usleep(20 * 1000);
	}
	/* A poll waiting 30 s does not hold the stop: it is answered. */
	ck_assert_int_eq(daemon_stop(&broker), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(atomic_load(&poll_status), 200);
	ck_assert_int_eq(daemon_restart(&broker), 0);
}
END_TEST

/* --- audit ---------------------------------------------------------------- */

static int
sql(const char *db, const char *statement)
{
	char *argv[] = { "/usr/bin/sqlite3", (char *)db, (char *)statement,
		NULL };
	static char out[4096], err[4096];
	int st = harness_run(argv, out, sizeof(out), err, sizeof(err));

	if (st != 0)
		fprintf(stderr, "sqlite3: %s\n", err);
	return st;
}

START_TEST(audit_chain_detects_edits_and_gaps)
{
	char db[400];
	json_t *v;

	put_manifest(manifest);
	char *job = new_job();
	revoke_job(job, "audit test");
	/* A refused key is audited too. */
	json_decref(expect(401, "GET", "/v1/audit",
	    "crk_wrong-key-0123456789"
	    "abcdefghijklmnop",
	    NULL, NULL));
	/* It is queued, not awaited: give the writer its moment. */
	json_int_t records = 0;
	for (int i = 0; i < 100 && records < 5; i++) {
		if (i > 0)
			usleep(20 * 1000);
		v = expect(200, "GET", "/v1/audit?verify=1", admin, NULL, NULL);
		ck_assert(json_is_true(json_object_get(v, "ok")));
		records = json_integer_value(json_object_get(v, "records"));
		json_decref(v);
	}
	ck_assert_int_ge(records, 5);
	v = expect(200, "GET", "/v1/audit?after=0", admin, NULL, NULL);
	json_t *last =
	    json_array_get(json_object_get(v, "records"), (size_t)records - 1);
	ck_assert_str_eq(json_string_value(json_object_get(last, "event")),
	    "auth_failed");
	json_decref(v);

	/* The store refuses edits... */
	snprintf(db, sizeof(db), "%s/var/broker/broker.db", broker.dir);
	ck_assert_int_ne(sql(db,
			     "UPDATE audit SET detail = '{}' WHERE seq = 2"),
	    0);
	/* ...and whoever gets past that is caught by the chain. */
	ck_assert_int_eq(sql(db,
			     "DROP TRIGGER audit_no_update; UPDATE audit "
			     "SET detail = '{}' WHERE seq = 2"),
	    0);
	v = expect(200, "GET", "/v1/audit?verify=1", admin, NULL, NULL);
	ck_assert(json_is_false(json_object_get(v, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(v, "first_bad")),
	    2);
	json_decref(v);
	free(job);
}
END_TEST

START_TEST(audit_chain_detects_a_missing_record)
{
	char db[400];
	json_t *v;

	put_manifest(manifest);
	char *job = new_job();
	revoke_job(job, "audit test");
	snprintf(db, sizeof(db), "%s/var/broker/broker.db", broker.dir);
	ck_assert_int_eq(sql(db,
			     "DROP TRIGGER audit_no_delete; DELETE FROM "
			     "audit WHERE seq = 2"),
	    0);
	v = expect(200, "GET", "/v1/audit?verify=1", admin, NULL, NULL);
	ck_assert(json_is_false(json_object_get(v, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(v, "first_bad")),
	    2);
	json_decref(v);

	/* Cutting the tail is seen as well. */
	ck_assert_int_eq(sql(db, "DELETE FROM audit WHERE seq >= 2"), 0);
	v = expect(200, "GET", "/v1/audit?verify=1", admin, NULL, NULL);
	ck_assert(json_is_false(json_object_get(v, "ok")));
	json_decref(v);
	free(job);
}
END_TEST

/* --- a crash in the middle of work ---------------------------------------- */

#define WORKERS 4
#define MAX_RECORDS 4096

struct record {
	char job[40];
	char token[48];
	char token_id[40];
	bool told_revoked;
};

static struct record records[WORKERS][MAX_RECORDS];
static atomic_int nrecords[WORKERS];

static void *
worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	char hdr[128], path[128];

	for (;;) {
		long status;
		json_t *body = json_pack("{s:s}", "manifest", "support-triage");
		json_t *j = harness_call(&broker, "POST", "/v1/jobs", launcher,
		    NULL, body, &status);
		json_decref(body);
		if (status != 201) {
			json_decref(j);
			return NULL; /* the broker is gone */
		}
		int n = atomic_load(&nrecords[w]);
		if (n == MAX_RECORDS)
			return NULL;
		struct record *r = &records[w][n];
		snprintf(r->job, sizeof(r->job), "%s",
		    json_string_value(json_object_get(j, "job")));
		json_decref(j);
		snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", r->job);
		body = json_pack("{s:s, s:{s:s}}", "capability",
		    "invoices.read", "params", "tenant", "4182");
		json_t *t = harness_call(&broker, "POST", "/v1/token", verifier,
		    hdr, body, &status);
		json_decref(body);
		if (status != 200) {
			json_decref(t);
			return NULL;
		}
		snprintf(r->token, sizeof(r->token), "%s",
		    json_string_value(json_object_get(t, "access_token")));
		snprintf(r->token_id, sizeof(r->token_id), "%s",
		    json_string_value(json_object_get(t, "token_id")));
		json_decref(t);
		atomic_store(&nrecords[w], n + 1);
		if (n % 2 == 0) {
			snprintf(path, sizeof(path), "/v1/jobs/%s/revoke",
			    r->job);
			json_t *v = harness_call(&broker, "POST", path, admin,
			    NULL, NULL, &status);
			json_decref(v);
			if (status != 200)
				return NULL;
			r->told_revoked = true;
		}
	}
}

START_TEST(kill_9_loses_no_grant_and_no_revocation)
{
	pthread_t t[WORKERS];
	int total = 0;

	put_manifest(manifest);
	for (int w = 0; w < WORKERS; w++) {
		atomic_store(&nrecords[w], 0);
		pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w);
	}
	/* Let work pile up, then crash the broker in the middle of it. */
	while (atomic_load(&nrecords[0]) < 40)
		usleep(10 * 1000);
	daemon_kill(&broker);
	for (int w = 0; w < WORKERS; w++)
		pthread_join(t[w], NULL);
	ck_assert_int_eq(daemon_restart(&broker), 0);

	for (int w = 0; w < WORKERS; w++)
		for (int i = 0; i < atomic_load(&nrecords[w]); i++) {
			struct record *r = &records[w][i];
			char path[128];
			json_t *v, *tok;
			size_t k;
			bool found = false;

			total++;
			/* Told revoked: never active again. */
			if (r->told_revoked)
				ck_assert_msg(!active(r->token),
				    "%s was revoked but is active", r->job);
			/* Told minted: still there. */
			snprintf(path, sizeof(path), "/v1/jobs/%s", r->job);
			v = expect(200, "GET", path, admin, NULL, NULL);
			json_array_foreach(json_object_get(v, "tokens"), k, tok)
			{
				found |= strcmp(json_string_value(
						    json_object_get(tok, "id")),
					     r->token_id) == 0;
			}
			ck_assert_msg(found, "minted token %s is missing",
			    r->token_id);
			json_decref(v);
		}
	ck_assert_int_ge(total, 40);
	json_t *v = expect(200, "GET", "/v1/audit?verify=1", admin, NULL, NULL);
	ck_assert(json_is_true(json_object_get(v, "ok")));
	json_decref(v);
}
END_TEST

/* --- bad input ------------------------------------------------------------ */

/* --- canaries ------------------------------------------------------------- */

START_TEST(a_canary_used_is_a_tripwire)
{
	char path[160];
	json_t *j, *c;

	put_manifest(manifest);
	j = expect(201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:i}", "manifest", "support-triage", "canaries",
		2));
	c = json_object_get(j, "canaries");
	ck_assert_int_eq(json_array_size(c), 2);
	const char *canary = json_string_value(json_array_get(c, 0));
	char *job = strdup(json_string_value(json_object_get(j, "job")));
	/* Shaped like any token: a scanner cannot tell it apart. */
	ck_assert_int_eq(strncmp(canary, "crd_", 4), 0);
	ck_assert_uint_eq(strlen(canary), 42);
	char *honest = mint(job, "invoices.read",
	    json_pack("{s:s}", "tenant", "4182"), NULL);
	ck_assert(active(honest));

	/* Used once: inactive, and the job with every token is revoked. */
	ck_assert(!active(canary));
	ck_assert(!active(honest));
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	json_t *st = expect(200, "GET", path, launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(st, "state")),
	    "revoked");
	ck_assert_str_eq(json_string_value(json_object_get(st, "stop_reason")),
	    "tripwire");
	json_decref(st);
	/* Audited as a tripwire, with the canary's id, never its value. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s", job);
	json_t *a = expect(200, "GET", path, admin, NULL, NULL);
	char *text = json_dumps(a, JSON_COMPACT);
	ck_assert_ptr_nonnull(strstr(text, "\"event\":\"tripwire\""));
	ck_assert_ptr_null(strstr(text, canary + 4));
	free(text);
	json_decref(a);
	json_decref(j);
	free(honest);
	free(job);

	/* A manifest can ask for them in every run; a bad count is refused. */
	json_decref(expect(422, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:i}", "manifest", "support-triage", "canaries",
		99)));
	j = expect(201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "support-triage"));
	ck_assert_int_eq(json_array_size(json_object_get(j, "canaries")), 0);
	json_decref(j);
}
END_TEST

START_TEST(bad_input_gets_the_right_status)
{
	long status;
	json_t *v;

	put_manifest(manifest);
	char *job = new_job();
	char path[128];

	/* Wrong types and unknown fields: 422, each problem named. */
	v = expect(422, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:i}", "manifest", 5));
	json_decref(v);
	v = expect(422, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:b}", "manifest", "support-triage", "extra", 1));
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(json_object_get(v,
								"problems"),
						 0),
				 "field")),
	    "extra");
	json_decref(v);
	/* A long unknown key is refused too when the 64-byte cut that names
	 * it falls inside a UTF-8 character. */
	char longkey[80], cut[64];
	memset(cut, 'a', 63);
	cut[63] = '\0';
	snprintf(longkey, sizeof(longkey), "%s\xc3\xa9", cut);
	v = expect(422, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:b}", "manifest", "support-triage", longkey, 1));
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(json_object_get(v,
								"problems"),
						 0),
				 "field")),
	    cut);
	json_decref(v);
	v = expect(422, "POST", "/v1/introspect", verifier, NULL,
	    json_pack("{s:s, s:s}", "token", "crd_x", "hint", "y"));
	json_decref(v);
	v = expect(404, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "nope"));
	json_decref(v);
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	v = expect(422, "POST", path, admin, NULL,
	    json_pack("{s:i}", "reason", 7));
	json_decref(v);
	json_decref(expect(400, "GET", "/v1/revocations?after=-1", verifier,
	    NULL, NULL));
	json_decref(expect(400, "GET", "/v1/revocations?wait=31", verifier,
	    NULL, NULL));
	json_decref(expect(400, "GET", "/v1/revocations?follower=a%20b",
	    verifier, NULL, NULL));

	/* Keys and roles. */
	json_decref(expect(401, "POST", "/v1/jobs", NULL, NULL,
	    json_pack("{s:s}", "manifest", "support-triage")));
	json_decref(expect(401, "POST", "/v1/jobs",
	    "crk_not-a-key-at-all-"
	    "0123456789abcdef",
	    NULL, json_pack("{s:s}", "manifest", "support-triage")));
	json_decref(expect(403, "POST", "/v1/jobs", verifier, NULL,
	    json_pack("{s:s}", "manifest", "support-triage")));
	json_decref(expect(403, "PUT", "/v1/manifests/support-triage", launcher,
	    NULL, json_pack("{}")));
	json_decref(expect(403, "POST", "/v1/introspect", launcher, NULL,
	    json_pack("{s:s}", "token", "crd_x")));
	json_decref(expect(403, "GET", "/v1/audit", launcher, NULL, NULL));
	json_decref(expect(404, "GET", "/v1/nothing", admin, NULL, NULL));
	json_decref(expect(405, "DELETE", "/v1/jobs", admin, NULL, NULL));

	/* Malformed JSON and a body over 1 MiB, by hand. */
	struct httpc_answer a;
	ck_assert_int_eq(httpc_request(broker.base, "PUT",
			     "/v1/manifests/support-triage", admin,
			     "Content-Type: application/json", NULL, 5000, &a),
	    0);
	ck_assert_int_eq(a.status, 400);
	httpc_answer_free(&a);
	json_t *big = json_object();
	char *blob = malloc(1100 * 1024);
	memset(blob, 'a', 1100 * 1024 - 1);
	blob[1100 * 1024 - 1] = '\0';
	json_object_set_new(big, "description", json_string(blob));
	free(blob);
	v = harness_call(&broker, "PUT", "/v1/manifests/support-triage", admin,
	    NULL, big, &status);
	ck_assert_int_eq(status, 413);
	json_decref(v);
	json_decref(big);

	/* And the broker keeps serving. */
	v = expect(200, "GET", "/healthz", NULL, NULL, NULL);
	json_decref(v);
	free(job);
}
END_TEST

/* --- the mint ceiling and rate ---------------------------------------------- */

/* A broker whose jobs never lapse during a test: the fixture's 3 s lease
 * would revoke a job while a test waits on the broker. */
static void
long_lease(void)
{
	ck_assert_int_eq(daemon_stop(&broker), 0);
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"lease_seconds\": 3600, \"log_level\": "
			     "\"info\"}"),
	    0);
	read_keys(&broker);
}

/* One capability asked for, one minted at start; mint limits as given. */
static void
put_limited(const char *name, const char *mint_limits)
{
	char text[1024], path[128];
	int n = snprintf(text, sizeof(text),
	    "{\"name\": \"%s\", \"capabilities\": ["
	    " {\"name\": \"invoices.read\", \"audience\": \"invoices-api\","
	    "  \"params\": {\"tenant\": [\"4182\"]}, \"reason\": \"r\"},"
	    " {\"name\": \"tickets.read\", \"audience\": \"tickets-api\","
	    "  \"params\": {\"queue\": [\"support\"]}, \"reason\": \"r\","
	    "  \"mint_at_start\": true}]%s%s}",
	    name, mint_limits != NULL ? ", \"mint\": " : "",
	    mint_limits != NULL ? mint_limits : "");
	ck_assert(n > 0 && (size_t)n < sizeof(text));
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    expect(200, "PUT", path, admin, NULL, json_loads(text, 0, NULL)));
}

static char *
new_job_of(const char *manifest_name, int canaries)
{
	json_t *j = expect(201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:i}", "manifest", manifest_name, "canaries",
		canaries));
	char *id = strdup(json_string_value(json_object_get(j, "job")));

	json_decref(j);
	return id;
}

/* One mint of invoices.read for job: the status, and the error in
 * ret_error (when not NULL, "" for a grant). */
static long
try_mint(const struct daemon *d, const char *key, const char *job,
    char *ret_error, size_t len)
{
	char hdr[128];
	long status;
	json_t *body = json_pack("{s:s, s:{s:s}}", "capability",
	    "invoices.read", "params", "tenant", "4182");
	json_t *a;

	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);
	a = harness_call(d, "POST", "/v1/token", key, hdr, body, &status);
	json_decref(body);
	if (ret_error != NULL) {
		const char *e = json_string_value(json_object_get(a, "error"));
		snprintf(ret_error, len, "%s",
		    status == 200 ? "" : (e != NULL ? e : "(no error)"));
	}
	json_decref(a);
	return status;
}

/* How many audit records of job there are, counting event only when not
 * NULL. A heartbeat first: it is written after every record queued
 * before it, so the count is of committed records. */
static size_t
audit_count(const char *job, const char *event)
{
	char path[160];
	json_t *a, *r;
	size_t i, n = 0;

	snprintf(path, sizeof(path), "/v1/jobs/%s/heartbeat", job);
	json_decref(harness_call(&broker, "POST", path, launcher, NULL, NULL,
	    &(long){ 0 }));
	snprintf(path, sizeof(path), "/v1/audit?job=%s&limit=10000", job);
	a = expect(200, "GET", path, admin, NULL, NULL);
	json_array_foreach(json_object_get(a, "records"), i, r)
	{
		const char *e = json_string_value(json_object_get(r, "event"));
		n += event == NULL || (e != NULL && strcmp(e, event) == 0);
	}
	json_decref(a);
	return n;
}

/* How many tokens GET /v1/jobs/{job} lists. */
static size_t
tokens_of(const char *job)
{
	char path[128];
	json_t *j;
	size_t n;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = expect(200, "GET", path, admin, NULL, NULL);
	n = json_array_size(json_object_get(j, "tokens"));
	json_decref(j);
	return n;
}

START_TEST(a_job_mints_no_more_than_its_ceiling)
{
	char err[64];
	json_t *a;

	long_lease();
	/* Four in all: the one minted at start counts, canaries do not. */
	put_limited("capped",
	    "{\"max_tokens\": 4, \"per_minute\": 60000, \"burst\": 1000}");
	char *job = new_job_of("capped", 2);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(try_mint(&broker, verifier, job, err,
				     sizeof(err)),
		    200);
	size_t before = audit_count(job, NULL);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(try_mint(&broker, verifier, job, err,
				     sizeof(err)),
		    429);
		ck_assert_str_eq(err, "token_ceiling");
	}
	/* Five refusals, one record. */
	ck_assert_uint_eq(audit_count(job, NULL), before + 1);
	ck_assert_uint_eq(audit_count(job, "token_ceiling"), 1);
	ck_assert_uint_eq(tokens_of(job), 4 + 2);

	/* The answer says what the ceiling is. */
	char hdr[128];
	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);
	a = expect(429, "POST", "/v1/token", verifier, hdr,
	    json_pack("{s:s, s:{s:s}}", "capability", "invoices.read", "params",
		"tenant", "4182"));
	ck_assert_int_eq(json_integer_value(json_object_get(a, "max_tokens")),
	    4);
	json_decref(a);

	/* Per job: another job of the same manifest mints. */
	char *other = new_job_of("capped", 0);
	ck_assert_int_eq(try_mint(&broker, verifier, other, err, sizeof(err)),
	    200);

	/* The count is durable: a restarted broker refuses too. */
	ck_assert_int_eq(daemon_stop(&broker), 0);
	ck_assert_int_eq(daemon_restart(&broker), 0);
	ck_assert_int_eq(try_mint(&broker, verifier, job, err, sizeof(err)),
	    429);
	ck_assert_str_eq(err, "token_ceiling");
	ck_assert_uint_eq(tokens_of(job), 4 + 2);
	free(other);
	free(job);
}
END_TEST

/* The seconds since t0 (CLOCK_MONOTONIC). */
static double
since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	    (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Fires n mints at job one after the other: how many were granted; each
 * refusal must be 429 mint_rate_limited. *ret_secs gets how long it took. */
static int
mint_burst(const char *job, int n, double *ret_secs)
{
	struct timespec t0;
	char err[64];
	int granted = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		long st = try_mint(&broker, verifier, job, err, sizeof(err));
		if (st == 200) {
			granted++;
			continue;
		}
		ck_assert_msg(st == 429 &&
			strcmp(err, "mint_rate_limited") == 0,
		    "mint %d: %ld %s", i, st, err);
	}
	*ret_secs = since(&t0);
	return granted;
}

START_TEST(a_burst_of_mints_is_limited)
{
	double secs;
	int granted;

	long_lease();
	/* Without a "mint" object, the defaults: a burst of 20, then 60 a
	 * minute. The bounds allow for the tokens that came back while the
	 * burst ran, however slow it was. */
	put_limited("defaults", NULL);
	char *job = new_job_of("defaults", 0);
	granted = mint_burst(job, 40, &secs);
	ck_assert_int_ge(granted, 20);
	ck_assert_int_le(granted, 20 + 1 + (int)secs);
	free(job);

	/* One a minute after a burst of 5. */
	put_limited("throttled",
	    "{\"max_tokens\": 1000, \"per_minute\": 1, \"burst\": 5}");
	job = new_job_of("throttled", 0);
	size_t before = audit_count(job, NULL);
	granted = mint_burst(job, 30, &secs);
	ck_assert_int_ge(granted, 5);
	ck_assert_int_le(granted, 5 + 1 + (int)(secs / 60));

	/* 429 with Retry-After, in whole seconds. */
	char hv[160], hdr[128], out[8192], errout[1024];
	snprintf(hv, sizeof(hv), "Authorization: Bearer %s", verifier);
	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);
	char url[160];
	snprintf(url, sizeof(url), "%s/v1/token", broker.base);
	char *argv[] = { "/usr/bin/curl", "-s", "-i", "-X", "POST", "-H", hv,
		"-H", hdr, "-d",
		"{\"capability\": \"invoices.read\", \"params\": "
		"{\"tenant\": \"4182\"}}",
		url, NULL };
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), errout,
			     sizeof(errout)),
	    0);
	ck_assert_msg(strncmp(out, "HTTP/1.1 429", 12) == 0, "%s", out);
	char *ra = strcasestr(out, "\r\nRetry-After: ");
	ck_assert_msg(ra != NULL, "%s", out);
	long retry = strtol(ra + 15, NULL, 10);
	ck_assert_int_ge(retry, 1);
	ck_assert_int_le(retry, 60);
	ck_assert_ptr_nonnull(strstr(out, "\"error\":\"mint_rate_limited\""));

	/* Every grant audited, the burst of refusals once. */
	ck_assert_uint_eq(audit_count(job, NULL), before + (size_t)granted + 1);
	ck_assert_uint_eq(audit_count(job, "mint_rate_limited"), 1);
	free(job);
}
END_TEST

#define RACERS 8
#define RACER_MINTS 8

static const char *race_job;
static atomic_int race_granted, race_other;

static void *
racer(void *arg)
{
	char err[64];

	(void)arg;
	for (int i = 0; i < RACER_MINTS; i++) {
		long st =
		    try_mint(&broker, verifier, race_job, err, sizeof(err));
		if (st == 200)
			atomic_fetch_add(&race_granted, 1);
		else if (st != 429 || strcmp(err, "token_ceiling") != 0)
			atomic_fetch_add(&race_other, 1);
	}
	return NULL;
}

START_TEST(parallel_mints_never_pass_the_ceiling)
{
	pthread_t t[RACERS];

	long_lease();
	put_limited("raced",
	    "{\"max_tokens\": 10, \"per_minute\": 600000, \"burst\": 10000}");
	char *job = new_job_of("raced", 0);
	race_job = job;
	atomic_store(&race_granted, 0);
	atomic_store(&race_other, 0);
	for (int i = 0; i < RACERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, racer, NULL), 0);
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	/* 64 asked at once: nine granted (one was minted at start). */
	ck_assert_int_eq(atomic_load(&race_granted), 9);
	ck_assert_int_eq(atomic_load(&race_other), 0);
	ck_assert_uint_eq(tokens_of(job), 10);
	ck_assert_uint_eq(audit_count(job, "token_minted"), 10);
	ck_assert_uint_eq(audit_count(job, "token_ceiling"), 1);
	free(job);
}
END_TEST

/* GET /v1/manifests: the current version of each, by name, a page at a
 * time (next only while more follow); admin and launcher, not verifier. */
START_TEST(manifests_listed_by_name_in_pages)
{
	json_t *v, *e;

	v = expect(200, "GET", "/v1/manifests", admin, NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "manifests")), 0);
	ck_assert(json_is_null(json_object_get(v, "next")));
	json_decref(v);
	put_limited("zeta", NULL);
	put_limited("alpha", NULL);
	put_limited("alpha", "{\"max_tokens\": 5}");
	put_limited("mid", NULL);

	v = expect(200, "GET", "/v1/manifests?limit=2", admin, NULL, NULL);
	e = json_array_get(json_object_get(v, "manifests"), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "manifests")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(e, "name")),
	    "alpha");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "version")), 2);
	ck_assert_uint_eq(strlen(
			      json_string_value(json_object_get(e, "sha256"))),
	    64);
	ck_assert_int_le(json_integer_value(json_object_get(e, "created")),
	    json_integer_value(json_object_get(e, "updated")));
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(json_object_get(v,
								"manifests"),
						 1),
				 "name")),
	    "mid");
	ck_assert_str_eq(json_string_value(json_object_get(v, "next")), "mid");
	json_decref(v);

	v = expect(200, "GET", "/v1/manifests?limit=2&after=mid", launcher,
	    NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "manifests")), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(json_object_get(v,
								"manifests"),
						 0),
				 "name")),
	    "zeta");
	ck_assert(json_is_null(json_object_get(v, "next")));
	json_decref(v);

	json_decref(expect(403, "GET", "/v1/manifests", verifier, NULL, NULL));
	json_decref(
	    expect(400, "GET", "/v1/manifests?limit=0", admin, NULL, NULL));
	json_decref(
	    expect(400, "GET", "/v1/manifests?after=A%2F", admin, NULL, NULL));
}
END_TEST

static Suite *
broker_suite(void)
{
	Suite *s = suite_create("broker");
	TCase *tc = tcase_create("broker");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, manifest_versions_and_planes);
	tcase_add_test(tc, manifest_validation_lists_every_problem);
	tcase_add_test(tc, manifests_listed_by_name_in_pages);
	tcase_add_test(tc, tokens_within_the_ceiling);
	tcase_add_test(tc, no_token_outlives_its_ceiling_or_its_job);
	tcase_add_test(tc, introspection_sees_every_death_and_survives_restart);
	tcase_add_test(tc, revoke_waits_for_the_followers);
	tcase_add_test(tc, stop_answers_the_long_polls);
	tcase_add_test(tc, audit_chain_detects_edits_and_gaps);
	tcase_add_test(tc, audit_chain_detects_a_missing_record);
	tcase_add_test(tc, kill_9_loses_no_grant_and_no_revocation);
	tcase_add_test(tc, bad_input_gets_the_right_status);
	tcase_add_test(tc, a_canary_used_is_a_tripwire);
	tcase_add_test(tc, a_job_mints_no_more_than_its_ceiling);
	tcase_add_test(tc, a_burst_of_mints_is_limited);
	tcase_add_test(tc, parallel_mints_never_pass_the_ceiling);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(broker_suite());
}
