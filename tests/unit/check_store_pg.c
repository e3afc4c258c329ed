/*
 * The broker's store on PostgreSQL (broker/store_pg.c, through store.h),
 * on a private server this program starts (tests/integration/pg.c) with
 * a fresh database for each test: the same guarantees as the sqlite
 * store's (manifests, jobs, a revoke with its tokens, sequence number
 * and audit record, the same answer twice, mints refused for a revoked
 * job and past the ceiling, tokens by HMAC, a token revoked alone with a
 * revocation of its own on the feed, the feed, the audit chain
 * verified, append-only), and what a fleet adds: two stores ("brokers")
 * on one database revoking and minting at once keep one gap-free chain
 * and one gap-free revocation sequence and never pass a ceiling; one
 * store hears the other's revocations (a job's and a token's); a
 * database of schema 4 gains the token column; a schema newer than this
 * build is
 * refused and two stores migrating a fresh database at once both open;
 * a server restart fails calls while it is down and they recover alone.
 *
 * Without PostgreSQL the program fails and says so, unless
 * CORDON_TEST_NO_PG=1.
 */
#include "pg.h"
#include "store.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The schema this build writes (store_pg.h's, which only store.c may
 * include): the first, the secrets, the fleet's mint buckets, the
 * upstream credentials held, the token column of the revocations, the
 * secrets' bindings (check_bindings). */
#define STORE_PG_SCHEMA_VERSION_WANT 6

static struct pg_server pg;
static char url[400];
static struct store *st;

static void
open_fresh(void)
{
	char name[64];
	static int n;

	snprintf(name, sizeof(name), "t%d_%d", (int)getpid(), n++);
	ck_assert_msg(pg_create_db(&pg, name, url, sizeof(url)) == 0,
	    "create database %s", name);
	ck_assert_int_eq(store_open(url, &st), 0);
}

static void
close_store(void)
{
	store_close(st);
	st = NULL;
}

static void
sql(const char *text)
{
	ck_assert_msg(pg_sql(url, text, NULL, 0) == 0, "%s", text);
}

static int64_t
sql_int(const char *text)
{
	char out[64];

	ck_assert_msg(pg_sql(url, text, out, sizeof(out)) == 0, "%s", text);
	return strtoll(out, NULL, 10);
}

static struct job
job_of(const char *id)
{
	struct job j = { 0 };
	int64_t now = (int64_t)time(NULL);

	snprintf(j.id, sizeof(j.id), "%s", id);
	snprintf(j.manifest, sizeof(j.manifest), "m");
	j.manifest_version = 1;
	j.created = now;
	j.deadline = now + 600;
	j.lease_expires = now + 30;
	return j;
}

static struct token_row
token_of(const char *job, const char *capability, unsigned n)
{
	struct token_row t = { 0 };

	memset(t.hash, 0, sizeof(t.hash));
	memcpy(t.hash, &n, sizeof(n));
	memcpy(t.hash + sizeof(n), job, strnlen(job, 20));
	snprintf(t.id, sizeof(t.id), "tok_%s_%u", job, n);
	snprintf(t.job, sizeof(t.job), "%s", job);
	snprintf(t.capability, sizeof(t.capability), "%s", capability);
	t.params = "{\"tenant\":\"4182\"}";
	snprintf(t.audience, sizeof(t.audience), "invoices-api");
	t.iat = (int64_t)time(NULL);
	t.exp = t.iat + 900;
	return t;
}

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool done;
	int result;
};

static void
insert_done(void *arg, int result)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	w->result = result;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
}

static int
insert_on(struct store *s, const struct token_row *t, int64_t max_tokens)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
		false, 0 };
	int r = store_token_insert_async(s, t, max_tokens, "verifier",
	    insert_done, &w);

	if (r < 0)
		return r;
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.mu);
	pthread_mutex_unlock(&w.mu);
	return w.result;
}

static void
assert_chain_ok(struct store *s, int64_t want_records)
{
	bool ok;
	int64_t bad, records;

	ck_assert_int_eq(store_audit_verify(s, &ok, &bad, &records), 0);
	ck_assert_msg(ok, "the chain broke at %lld", (long long)bad);
	if (want_records >= 0)
		ck_assert_int_eq(records, want_records);
}

/* --- the guarantees of store.h -------------------------------------- */

START_TEST(test_manifests_jobs_tokens)
{
	struct manifest_version m;
	int64_t v;
	json_t *prev, *tokens;
	bool added;
	struct token_revoke_result tr;
	struct job j = job_of("job_a"), got;
	struct token_row start = token_of("job_a", "invoices.read", 1);
	struct token_row canary = token_of("job_a", CANARY_CAPABILITY, 2);
	struct token_row rows[2] = { start, canary };
	struct token_row t = { 0 };
	char state[16];

	ck_assert_int_eq(store_manifest_put(st, "m", "{\"a\":1}", "s1", "admin",
			     &v, &prev, &added),
	    0);
	ck_assert(added && v == 1 && prev == NULL);
	ck_assert_int_eq(store_manifest_put(st, "m", "{\"a\":1}", "s1", "admin",
			     &v, &prev, &added),
	    0);
	ck_assert(!added && v == 1);
	ck_assert_int_eq(store_manifest_put(st, "m", "{\"a\":2}", "s2", "admin",
			     &v, &prev, &added),
	    0);
	ck_assert(added && v == 2 && prev != NULL);
	json_decref(prev);
	ck_assert_int_eq(store_manifest_get(st, "m", 1, &m), 0);
	ck_assert_str_eq(m.sha256, "s1");
	manifest_version_free(&m);
	ck_assert_int_eq(store_manifest_get(st, "m", 0, &m), 0);
	ck_assert_int_eq(m.version, 2);
	manifest_version_free(&m);
	ck_assert_int_eq(store_manifest_get(st, "none", 0, &m), -ENOENT);

	ck_assert_int_eq(store_job_create(st, &j, rows, 2, "launcher"), 0);
	ck_assert_int_eq(store_job_get(st, "job_a", &got, &tokens), 0);
	ck_assert_str_eq(got.state, "running");
	ck_assert_int_eq(got.tokens_minted, 1); /* the canary is not counted */
	ck_assert_int_eq(json_array_size(tokens), 2);
	json_decref(tokens);
	ck_assert_int_eq(store_job_get(st, "none", &got, NULL), -ENOENT);
	ck_assert_int_eq(store_job_heartbeat(st, "job_a", 60, &got), 0);

	ck_assert_int_eq(store_token_lookup(st, start.hash, &t, state), 0);
	ck_assert_str_eq(t.id, start.id);
	ck_assert_str_eq(t.params, start.params);
	ck_assert_str_eq(state, "running");
	free(t.params);
	ck_assert_int_eq(store_token_lookup(st, (unsigned char[32]){ 9 }, &t,
			     state),
	    -ENOENT);

	struct token_row more = token_of("job_a", "invoices.read", 3);
	struct token_row over = token_of("job_a", "invoices.read", 4);
	ck_assert_int_eq(insert_on(st, &more, 2), 0);
	ck_assert_int_eq(insert_on(st, &over, 2), -EDQUOT);
	ck_assert_int_eq(store_token_lookup(st, over.hash, &t, state), -ENOENT);

	ck_assert_int_eq(store_token_revoke(st, more.hash, "verifier", &tr), 0);
	ck_assert(tr.found);
	ck_assert_int_eq(tr.seq, 1);
	ck_assert_str_eq(tr.id, more.id);
	ck_assert_str_eq(tr.job, "job_a");
	ck_assert_int_eq(store_token_revoke(st, more.hash, "verifier", &tr), 0);
	ck_assert(!tr.found);
	ck_assert_int_eq(store_job_get(st, "job_a", &got, NULL), 0);
	ck_assert_str_eq(got.state, "running"); /* the job goes on */

	struct revoke_result rr, again;
	ck_assert_int_eq(store_job_revoke(st, "job_a", "stopped", "admin", &rr),
	    0);
	ck_assert(!rr.already);
	ck_assert_int_eq(rr.seq, 2);
	ck_assert_int_eq(rr.tokens_revoked, 2); /* start and the canary */
	ck_assert_int_eq(store_job_revoke(st, "job_a", "other", "admin",
			     &again),
	    0);
	ck_assert(again.already);
	ck_assert_int_eq(again.seq, 2); /* the job's, not its token's */
	ck_assert_str_eq(again.reason, "stopped");
	ck_assert_int_eq(store_job_revoke(st, "none", "x", "admin", &rr),
	    -ENOENT);
	ck_assert_int_eq(store_job_heartbeat(st, "job_a", 60, &got), -ESTALE);
	struct token_row late = token_of("job_a", "invoices.read", 5);
	ck_assert_int_eq(insert_on(st, &late, 10), -ESTALE);
	ck_assert_int_eq(store_token_lookup(st, start.hash, &t, state), 0);
	ck_assert_str_eq(t.state, "revoked");
	ck_assert_str_eq(state, "revoked");
	free(t.params);

	json_t *list;
	int64_t head;
	ck_assert_int_eq(store_revocations_after(st, 0, 10, &list), 0);
	ck_assert_int_eq(json_array_size(list), 2);
	/* The token's entry names it; the job's is {seq, job} as ever. */
	json_t *e = json_array_get(list, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "seq")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(e, "job")), "job_a");
	ck_assert_str_eq(json_string_value(json_object_get(e, "token")),
	    more.id);
	e = json_array_get(list, 1);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "seq")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(e, "job")), "job_a");
	ck_assert_uint_eq(json_object_size(e), 2);
	json_decref(list);
	ck_assert_int_eq(store_revocation_head(st, &head), 0);
	ck_assert_int_eq(head, 2);

	/* manifest x2, job, 2 tokens, 1 mint, token revoked, job revoked */
	ck_assert_int_eq(store_audit_list(st, "job_a", 0, 100, &list), 0);
	ck_assert_int_eq(json_array_size(list), 6);
	json_decref(list);
	ck_assert_int_eq(store_audit_async(st, "auth_failed",
			     json_pack("{s:s}", "reason", "bad key")),
	    0);
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(store_audit_list(st, NULL, 0, 100, &list), 0);
		size_t n = json_array_size(list);
		json_decref(list);
		if (n == 9)
			break;
		usleep(20000);
	}
	assert_chain_ok(st, 9);
}
END_TEST

/* The list: the current version of each, bytewise by name ("Zed" before
 * "alpha", whatever the collation), a page after a name. */
START_TEST(test_manifest_list)
{
	const char *const puts[][2] = { { "beta", "b1" }, { "alpha", "a1" },
		{ "alpha", "a2" }, { "Zed", "z1" } };
	int64_t v;
	json_t *prev, *list, *e;
	bool added;

	ck_assert_int_eq(store_manifest_list(st, NULL, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);
	for (size_t i = 0; i < sizeof(puts) / sizeof(puts[0]); i++) {
		char text[32];
		snprintf(text, sizeof(text), "{\"v\":\"%s\"}", puts[i][1]);
		ck_assert_int_eq(store_manifest_put(st, puts[i][0], text,
				     puts[i][1], "admin", &v, &prev, &added),
		    0);
		json_decref(prev);
	}
	ck_assert_int_eq(store_manifest_list(st, NULL, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 3);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "name")),
	    "Zed");
	e = json_array_get(list, 1);
	ck_assert_str_eq(json_string_value(json_object_get(e, "name")),
	    "alpha");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "version")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(e, "sha256")), "a2");
	ck_assert_int_gt(json_integer_value(json_object_get(e, "created")), 0);
	ck_assert_int_le(json_integer_value(json_object_get(e, "created")),
	    json_integer_value(json_object_get(e, "updated")));
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 2), "name")),
	    "beta");
	json_decref(list);
	ck_assert_int_eq(store_manifest_list(st, "Zed", 1, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "name")),
	    "alpha");
	json_decref(list);
	ck_assert_int_eq(store_manifest_list(st, "alpha", 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	json_decref(list);
	ck_assert_int_eq(store_manifest_list(st, "beta", 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);
}
END_TEST

/* Secrets (credentials.md): sealed bytes kept as given, versions one
 * after the other, metadata without the value, the manifests naming one,
 * a release stamped and audited, a delete audited; one database, so the
 * other broker sees the same. */
START_TEST(test_secrets)
{
	static const unsigned char sealed1[] = { 0x00, 0x01, 0xfe, 'a', 0x00,
		'z' };
	static const unsigned char sealed2[] = { 0x42, 0x00, 0x43 };
	struct secret_meta m;
	unsigned char *got = NULL;
	size_t len = 0;
	int64_t v;
	bool added, found;
	json_t *prev, *list;
	struct store *b;

	ck_assert_int_eq(store_secret_get(st, "gh", &m, NULL, NULL), -ENOENT);
	ck_assert_int_eq(store_secret_put(st, "gh", 2, sealed1, sizeof(sealed1),
			     "admin"),
	    -EEXIST);
	ck_assert_int_eq(store_secret_put(st, "gh", 1, sealed1, sizeof(sealed1),
			     "admin"),
	    0);
	ck_assert_int_eq(store_secret_put(st, "gh", 1, sealed2, sizeof(sealed2),
			     "admin"),
	    -EEXIST);
	ck_assert_int_eq(store_secret_get(st, "gh", &m, &got, &len), 0);
	ck_assert_str_eq(m.name, "gh");
	ck_assert_int_eq(m.version, 1);
	ck_assert_int_gt(m.created, 0);
	ck_assert_int_eq(m.last_used, 0);
	ck_assert_uint_eq(len, sizeof(sealed1));
	ck_assert_mem_eq(got, sealed1, len);
	free(got);
	ck_assert_int_eq(store_secret_put(st, "gh", 2, sealed2, sizeof(sealed2),
			     "admin"),
	    0);
	ck_assert_int_eq(store_secret_put(st, "other", 1, sealed2,
			     sizeof(sealed2), "admin"),
	    0);

	/* The other broker: the current version, its bytes. */
	ck_assert_int_eq(store_open(url, &b), 0);
	ck_assert_int_eq(store_secret_get(b, "gh", &m, &got, &len), 0);
	ck_assert_int_eq(m.version, 2);
	ck_assert_uint_eq(len, sizeof(sealed2));
	ck_assert_mem_eq(got, sealed2, len);
	free(got);
	ck_assert_int_eq(store_secret_released(b, "gh", 2, "job_s", "verifier"),
	    0);
	ck_assert_int_eq(store_secret_released(b, "gh", 7, "job_s", "verifier"),
	    -ENOENT);
	store_close(b);

	ck_assert_int_eq(store_secret_list(st, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 2);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "name")),
	    "gh");
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(list, 0),
				 "version")),
	    2);
	ck_assert_int_gt(json_integer_value(
			     json_object_get(json_array_get(list, 0),
				 "last_used")),
	    0);
	ck_assert_ptr_null(json_object_get(json_array_get(list, 0), "value"));
	json_decref(list);

	/* The manifests whose current version names it. */
	ck_assert_int_eq(store_manifest_put(st, "inj",
			     "{\"egress\":[{\"inject\":{\"secret\":\"gh\"}}]}",
			     "s1", "admin", &v, &prev, &added),
	    0);
	json_decref(prev);
	ck_assert_int_eq(store_manifest_put(st, "plain", "{\"egress\":[]}",
			     "s2", "admin", &v, &prev, &added),
	    0);
	json_decref(prev);
	ck_assert_int_eq(store_secret_manifests(st, "gh", &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "name")),
	    "inj");
	ck_assert(
	    json_is_object(json_object_get(json_array_get(list, 0), "body")));
	json_decref(list);
	ck_assert_int_eq(store_secret_manifests(st, "other", &list), 0);
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);

	ck_assert_int_eq(store_secret_delete(st, "gh", "admin", &found), 0);
	ck_assert(found);
	ck_assert_int_eq(store_secret_delete(st, "gh", "admin", &found), 0);
	ck_assert(!found);
	ck_assert_int_eq(store_secret_get(st, "gh", &m, NULL, NULL), -ENOENT);
	/* Audited, in the one chain: three puts, a release, a delete. */
	ck_assert_int_eq(sql_int("SELECT count(*) FROM audit WHERE event = "
				 "'secret_put'"),
	    3);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM audit WHERE event = "
				 "'secret_released' AND job = 'job_s'"),
	    1);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM audit WHERE event = "
				 "'secret_deleted'"),
	    1);
	assert_chain_ok(st, -1);
}
END_TEST

/* A database of the first schema (no secrets) is brought to the
 * second at open, its records kept. */
START_TEST(test_schema_1_migrates)
{
	struct secret_meta m;

	store_close(st);
	st = NULL;
	sql("DROP TABLE secrets");
	sql("UPDATE meta SET value = '1' WHERE key = 'schema_version'");
	ck_assert_int_eq(store_open(url, &st), 0);
	ck_assert_int_eq(sql_int("SELECT value FROM meta WHERE key = "
				 "'schema_version'"),
	    STORE_PG_SCHEMA_VERSION_WANT);
	ck_assert_int_eq(store_secret_put(st, "gh", 1,
			     (const unsigned char *)"x", 1, "admin"),
	    0);
	ck_assert_int_eq(store_secret_get(st, "gh", &m, NULL, NULL), 0);
	assert_chain_ok(st, -1);
}
END_TEST

/* A database of schema 4 (no token column) gains it at open: its
 * revocations kept as they were, a token's revoke after them. */
START_TEST(test_schema_4_migrates)
{
	struct job j = job_of("job_m");
	struct token_row t = token_of("job_m", "invoices.read", 1);
	struct token_revoke_result tr;
	struct revoke_result rr;
	json_t *list;

	ck_assert_int_eq(store_job_create(st, &j, &t, 1, "launcher"), 0);
	store_close(st);
	st = NULL;
	sql("ALTER TABLE revocations DROP COLUMN token");
	sql("INSERT INTO revocations (seq, job, at) VALUES (1, 'job_old', 1)");
	sql("UPDATE meta SET value = '4' WHERE key = 'schema_version'");
	ck_assert_int_eq(store_open(url, &st), 0);
	ck_assert_int_eq(sql_int("SELECT value FROM meta WHERE key = "
				 "'schema_version'"),
	    STORE_PG_SCHEMA_VERSION_WANT);
	ck_assert_int_eq(store_token_revoke(st, t.hash, "admin", &tr), 0);
	ck_assert(tr.found);
	ck_assert_int_eq(tr.seq, 2);
	ck_assert_int_eq(store_job_revoke(st, "job_m", "x", "admin", &rr), 0);
	ck_assert_int_eq(rr.seq, 3);
	ck_assert_int_eq(store_revocations_after(st, 0, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 3);
	ck_assert_uint_eq(json_object_size(json_array_get(list, 0)), 2);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 1), "token")),
	    t.id);
	ck_assert_uint_eq(json_object_size(json_array_get(list, 2)), 2);
	json_decref(list);
	assert_chain_ok(st, -1);
}
END_TEST

START_TEST(test_jobs_lapsed)
{
	struct job j = job_of("job_l");
	json_t *ids;

	j.lease_expires = (int64_t)time(NULL) - 1;
	ck_assert_int_eq(store_job_create(st, &j, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_jobs_lapsed(st, (int64_t)time(NULL), 10, &ids),
	    0);
	ck_assert_int_eq(json_array_size(ids), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(ids, 0), "reason")),
	    "lease_expired");
	json_decref(ids);
}
END_TEST

START_TEST(test_audit_tampering_seen)
{
	struct job j = job_of("job_t");
	bool ok;
	int64_t bad, records;

	ck_assert_int_eq(store_job_create(st, &j, NULL, 0, "launcher"), 0);
	for (int i = 0; i < 3; i++) {
		struct token_row t = token_of("job_t", "x.read", (unsigned)i);
		ck_assert_int_eq(insert_on(st, &t, 10), 0);
	}
	assert_chain_ok(st, 4);
	/* Append-only, as the database enforces it. */
	ck_assert(pg_sql(url, "UPDATE audit SET actor = 'x' WHERE seq = 2",
		      NULL, 0) < 0);
	ck_assert(pg_sql(url, "DELETE FROM audit WHERE seq = 4", NULL, 0) < 0);
	/* A superuser can go round it: the chain tells. */
	sql("ALTER TABLE audit DISABLE TRIGGER USER;"
	    "UPDATE audit SET actor = 'x' WHERE seq = 2");
	ck_assert_int_eq(store_audit_verify(st, &ok, &bad, &records), 0);
	ck_assert(!ok);
	ck_assert_int_eq(bad, 2);
	/* A cut tail too, by the head kept beside the chain. */
	sql("UPDATE audit SET actor = 'verifier' WHERE seq = 2;"
	    "DELETE FROM audit WHERE seq = 4");
	ck_assert_int_eq(store_audit_verify(st, &ok, &bad, &records), 0);
	ck_assert(!ok);
	ck_assert_int_eq(bad, 4);
}
END_TEST

/* --- a fleet: two stores on one database ------------------------------ */

struct worker {
	struct store *s;
	int id;
	int64_t max_tokens;
	atomic_int *granted;
	int revoked;
};

#define FLEET_JOBS 12
#define FLEET_MINTS 8

static void *
fleet_worker(void *arg)
{
	struct worker *w = arg;

	for (int k = 0; k < FLEET_MINTS; k++) {
		for (int jn = 0; jn < FLEET_JOBS; jn++) {
			char id[40];
			struct token_row t;

			snprintf(id, sizeof(id), "job_%d", jn);
			t = token_of(id, "x.read",
			    (unsigned)(w->id * 1000 + k));
			if (insert_on(w->s, &t, w->max_tokens) == 0)
				atomic_fetch_add(&w->granted[jn], 1);
		}
		/* Each worker revokes some jobs halfway: mints race them. */
		if (k == FLEET_MINTS / 2)
			for (int jn = w->id; jn < FLEET_JOBS; jn += 4) {
				char id[40];
				struct revoke_result rr;

				snprintf(id, sizeof(id), "job_%d", jn);
				if (store_job_revoke(w->s, id, "stop", "admin",
					&rr) == 0 &&
				    !rr.already)
					w->revoked++;
			}
	}
	return NULL;
}

START_TEST(test_two_brokers_one_chain)
{
	struct store *other;
	atomic_int granted[FLEET_JOBS] = { 0 };
	struct worker w[4];
	pthread_t th[4];
	json_t *list, *r;
	size_t i;
	int revoked = 0;

	ck_assert_int_eq(store_open(url, &other), 0);
	for (int jn = 0; jn < FLEET_JOBS; jn++) {
		char id[40];
		struct job j;

		snprintf(id, sizeof(id), "job_%d", jn);
		j = job_of(id);
		ck_assert_int_eq(store_job_create(jn % 2 ? other : st, &j, NULL,
				     0, "launcher"),
		    0);
	}
	for (int k = 0; k < 4; k++) {
		w[k] = (struct worker){ k % 2 ? other : st, k, 5, granted, 0 };
		ck_assert_int_eq(pthread_create(&th[k], NULL, fleet_worker,
				     &w[k]),
		    0);
	}
	for (int k = 0; k < 4; k++) {
		pthread_join(th[k], NULL);
		revoked += w[k].revoked;
	}
	/* Every job revoked once (each by one worker), numbered 1..n. */
	ck_assert_int_eq(revoked, FLEET_JOBS);
	ck_assert_int_eq(store_revocations_after(other, 0, 100, &list), 0);
	ck_assert_int_eq(json_array_size(list), FLEET_JOBS);
	json_array_foreach(list, i, r)
	{
		ck_assert_int_eq(json_integer_value(json_object_get(r, "seq")),
		    (json_int_t)i + 1);
	}
	json_decref(list);
	/* No ceiling passed, whichever broker minted; every grant is in the
	 * table and in the audit. */
	int64_t total = 0;
	for (int jn = 0; jn < FLEET_JOBS; jn++) {
		char id[40];
		struct job j;

		snprintf(id, sizeof(id), "job_%d", jn);
		ck_assert_int_eq(store_job_get(st, id, &j, NULL), 0);
		ck_assert_int_le(j.tokens_minted, 5);
		ck_assert_int_eq(j.tokens_minted, atomic_load(&granted[jn]));
		total += j.tokens_minted;
	}
	ck_assert_int_eq(sql_int("SELECT count(*) FROM tokens"), total);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM audit WHERE event = "
				 "'token_minted'"),
	    total);
	assert_chain_ok(st, FLEET_JOBS + total + FLEET_JOBS);
	assert_chain_ok(other, -1);
	store_close(other);
}
END_TEST

struct heard {
	pthread_mutex_t mu;
	int64_t max;
};

static void
heard_seq(void *arg, int64_t seq)
{
	struct heard *h = arg;

	pthread_mutex_lock(&h->mu);
	if (seq > h->max)
		h->max = seq;
	pthread_mutex_unlock(&h->mu);
}

static int64_t
heard_max(struct heard *h)
{
	int64_t v;

	pthread_mutex_lock(&h->mu);
	v = h->max;
	pthread_mutex_unlock(&h->mu);
	return v;
}

/* Waits (up to 20 s) for h to reach want: what it reached. */
static int64_t
heard_wait(struct heard *h, int64_t want)
{
	for (int i = 0; i < 400 && heard_max(h) < want; i++)
		usleep(50000);
	return heard_max(h);
}

START_TEST(test_revocations_heard_by_the_other)
{
	struct store *other;
	struct heard h = { PTHREAD_MUTEX_INITIALIZER, -1 };
	struct job j = job_of("job_n");
	struct token_row t = token_of("job_n", "invoices.read", 1);
	struct token_revoke_result tr;
	struct revoke_result rr;
	json_t *list;

	ck_assert_int_eq(store_open(url, &other), 0);
	ck_assert_int_eq(store_watch_revocations(other, heard_seq, &h), 0);
	ck_assert_int_eq(heard_wait(&h, 0), 0); /* the head, at connect */
	ck_assert_int_eq(store_job_create(st, &j, &t, 1, "launcher"), 0);
	/* A token revoked alone travels the same way as a job. */
	ck_assert_int_eq(store_token_revoke(st, t.hash, "admin", &tr), 0);
	ck_assert(tr.found);
	ck_assert_int_eq(heard_wait(&h, 1), 1);
	ck_assert_int_eq(store_revocations_after(other, 0, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "token")),
	    t.id);
	json_decref(list);
	ck_assert_int_eq(store_job_revoke(st, "job_n", "stop", "admin", &rr),
	    0);
	ck_assert_int_eq(heard_wait(&h, 2), 2);
	store_close(other);
}
END_TEST

START_TEST(test_sqlite_has_no_fleet)
{
	struct store *s;
	char path[PATH_MAX];

	testutil_dir_setup();
	ck_assert_int_eq(store_open(testutil_at(path, "broker.db"), &s), 0);
	ck_assert_int_eq(store_watch_revocations(s, heard_seq, NULL),
	    -EOPNOTSUPP);
	store_close(s);
	testutil_dir_teardown();
}
END_TEST

/* --- the schema ------------------------------------------------------ */

struct opener {
	int r;
};

static void *
open_close(void *arg)
{
	struct opener *o = arg;
	struct store *s;

	o->r = store_open(url, &s);
	if (o->r == 0)
		store_close(s);
	return NULL;
}

START_TEST(test_schema)
{
	struct store *s;
	struct opener o[3];
	pthread_t th[3];
	char name[64];

	/* A fresh database, three brokers starting at once: one migrates. */
	snprintf(name, sizeof(name), "fresh%d", (int)getpid());
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, open_close,
				     &o[i]),
		    0);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(o[i].r, 0);
	}
	ck_assert_int_eq(sql_int("SELECT value FROM meta WHERE key = "
				 "'schema_version'"),
	    STORE_PG_SCHEMA_VERSION_WANT);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM audit_head"), 1);
	/* A newer broker's schema: this one refuses, and changes nothing. */
	sql("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
	ck_assert_int_eq(store_open(url, &s), -EPROTONOSUPPORT);
	ck_assert_int_eq(sql_int("SELECT value FROM meta WHERE key = "
				 "'schema_version'"),
	    99);
}
END_TEST

/* --- the server goes away and comes back ----------------------------- */

START_TEST(test_server_restart)
{
	struct job j = job_of("job_r"), got;
	struct revoke_result rr;
	struct heard h = { PTHREAD_MUTEX_INITIALIZER, -1 };
	int r = 0;

	ck_assert_int_eq(store_watch_revocations(st, heard_seq, &h), 0);
	ck_assert_int_eq(store_job_create(st, &j, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(pg_stop(&pg, "fast"), 0);
	/* Down: every call fails, none hangs, nothing is granted. */
	ck_assert_int_lt(store_job_get(st, "job_r", &got, NULL), 0);
	ck_assert_int_eq(store_job_revoke(st, "job_r", "stop", "admin", &rr),
	    -ENOTCONN);
	ck_assert_int_eq(pg_restart(&pg), 0);
	/* Back: the pool's dead connections are replaced by themselves. */
	for (int i = 0; i < 100; i++) {
		r = store_job_get(st, "job_r", &got, NULL);
		if (r == 0)
			break;
		usleep(100000);
	}
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(got.state, "running");
	ck_assert_int_eq(store_job_revoke(st, "job_r", "stop", "admin", &rr),
	    0);
	ck_assert_int_eq(rr.seq, 1);
	/* The listener reconnected too, and heard it. */
	ck_assert_int_eq(heard_wait(&h, 1), 1);
	assert_chain_ok(st, 2);
}
END_TEST

int
main(void)
{
	char err[512];
	Suite *s = suite_create("store_pg");
	TCase *tc = tcase_create("store_pg");
	int rc;

	if (!pg_wanted()) {
		printf("check_store_pg: CORDON_TEST_NO_PG=1: skipped\n");
		return 0;
	}
	if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "check_store_pg: %s\n", err);
		return 1;
	}
	testutil_tmp_fixture(tc, "store_pg");
	tcase_add_checked_fixture(tc, open_fresh, close_store);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_manifests_jobs_tokens);
	tcase_add_test(tc, test_manifest_list);
	tcase_add_test(tc, test_secrets);
	tcase_add_test(tc, test_schema_1_migrates);
	tcase_add_test(tc, test_schema_4_migrates);
	tcase_add_test(tc, test_jobs_lapsed);
	tcase_add_test(tc, test_audit_tampering_seen);
	tcase_add_test(tc, test_two_brokers_one_chain);
	tcase_add_test(tc, test_revocations_heard_by_the_other);
	tcase_add_test(tc, test_sqlite_has_no_fleet);
	tcase_add_test(tc, test_schema);
	tcase_add_test(tc, test_server_restart);
	suite_add_tcase(s, tc);
	rc = testutil_run(s);
	pg_destroy(&pg);
	return rc;
}
