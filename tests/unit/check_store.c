/*
 * The broker's store (broker/store.c) on a fresh sqlite database in a
 * directory of its own for each test: manifests and their versions, jobs
 * with the tokens minted at their start, leases, the revocation of a job
 * with its sequence number and audit record (and the same answer when
 * revoked again), lapsed jobs, tokens inserted through the writer thread
 * (refused for a revoked job or past the job's ceiling), looked up and
 * revoked by HMAC (with a revocation of its own on the feed, the job
 * going on), the revocation feed's two kinds of entry, the audit chain
 * listed and verified (a changed record, a removed one, a cut tail), the
 * schema's version (1 and 2 migrated, a newer one refused). Every failure is a return
 * value: nothing here expects a log line.
 */
#include "store.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char db_path[PATH_MAX];
static struct store *st;

static void
open_fresh(void)
{
	testutil_dir_setup();
	testutil_at(db_path, "broker.db");
	ck_assert_int_eq(store_open(db_path, &st), 0);
}

static void
close_store(void)
{
	store_close(st);
	st = NULL;
	testutil_dir_teardown();
}

/* Runs sql on its own connection to the database (beside the store). */
static void
sql(const char *text)
{
	sqlite3 *db;
	char *err = NULL;

	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	ck_assert_msg(sqlite3_exec(db, text, NULL, NULL, &err) == SQLITE_OK,
	    "%s: %s", text, err != NULL ? err : "?");
	sqlite3_close(db);
}

/* A running job id, created now, with a deadline in wall seconds. */
static struct job
job_of(const char *id, int64_t wall)
{
	struct job j = { 0 };
	int64_t now = (int64_t)time(NULL);

	snprintf(j.id, sizeof(j.id), "%s", id);
	snprintf(j.manifest, sizeof(j.manifest), "m");
	j.manifest_version = 1;
	j.created = now;
	j.deadline = now + wall;
	j.lease_expires = now + 30;
	return j;
}

/* A token row of job for capability; its hash is n in every byte. */
static struct token_row
token_of(const char *job, const char *capability, unsigned char n)
{
	struct token_row t = { 0 };

	memset(t.hash, n, sizeof(t.hash));
	snprintf(t.id, sizeof(t.id), "tok_%u", n);
	snprintf(t.job, sizeof(t.job), "%s", job);
	snprintf(t.capability, sizeof(t.capability), "%s", capability);
	t.params = "{\"tenant\":\"4182\"}";
	snprintf(t.audience, sizeof(t.audience), "invoices-api");
	t.iat = (int64_t)time(NULL);
	t.exp = t.iat + 900;
	return t;
}

/* store_token_insert_async, waited for: the result its callback got. */
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
insert(const struct token_row *t, int64_t max_tokens)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
		false, 0 };
	int r = store_token_insert_async(st, t, max_tokens, "verifier",
	    insert_done, &w);

	if (r < 0)
		return r;
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.mu);
	pthread_mutex_unlock(&w.mu);
	return w.result;
}

/* The audit records (of job, when not NULL) with event. */
static size_t
audit_count(const char *job, const char *event)
{
	json_t *list, *r;
	size_t i, n = 0;

	ck_assert_int_eq(store_audit_list(st, job, 0, 10000, &list), 0);
	json_array_foreach(list, i, r)
	{
		n += strcmp(json_string_value(json_object_get(r, "event")),
			 event) == 0;
	}
	json_decref(list);
	return n;
}

static void
assert_chain(bool want_ok, int64_t want_bad)
{
	bool ok;
	int64_t bad, records;

	ck_assert_int_eq(store_audit_verify(st, &ok, &bad, &records), 0);
	ck_assert_msg(ok == want_ok, "verify said %d (first bad %lld)", ok,
	    (long long)bad);
	if (!want_ok)
		ck_assert_int_eq(bad, want_bad);
}

/* --- manifests ------------------------------------------------------ */

START_TEST(test_manifest_versions)
{
	struct manifest_version m;
	json_t *prev = (json_t *)1;
	int64_t version;
	bool added;

	ck_assert_int_eq(store_manifest_put(st, "m", "{\"name\":\"m\"}", "aa",
			     "admin", &version, &prev, &added),
	    0);
	ck_assert_int_eq(version, 1);
	ck_assert(added);
	ck_assert_ptr_null(prev);
	/* The same sha256 again: nothing added. */
	ck_assert_int_eq(store_manifest_put(st, "m", "{\"name\":\"m\"}", "aa",
			     "admin", &version, &prev, &added),
	    0);
	ck_assert_int_eq(version, 1);
	ck_assert(!added);
	ck_assert_int_eq(store_manifest_put(st, "m",
			     "{\"name\":\"m\",\"canaries\":true}", "bb",
			     "admin", &version, &prev, &added),
	    0);
	ck_assert_int_eq(version, 2);
	ck_assert(added);
	ck_assert_str_eq(json_string_value(json_object_get(prev, "name")), "m");
	ck_assert_ptr_null(json_object_get(prev, "canaries"));
	json_decref(prev);

	ck_assert_int_eq(store_manifest_get(st, "m", 0, &m), 0);
	ck_assert_int_eq(m.version, 2);
	ck_assert_str_eq(m.sha256, "bb");
	ck_assert(json_is_true(json_object_get(m.body, "canaries")));
	manifest_version_free(&m);
	ck_assert_int_eq(store_manifest_get(st, "m", 1, &m), 0);
	ck_assert_str_eq(m.sha256, "aa");
	manifest_version_free(&m);
	manifest_version_free(&m); /* twice is fine */
	ck_assert_int_eq(store_manifest_get(st, "m", 3, &m), -ENOENT);
	ck_assert_int_eq(store_manifest_get(st, "other", 0, &m), -ENOENT);
	/* Two versions stored, two records; nothing for the repeat. */
	ck_assert_uint_eq(audit_count(NULL, "manifest_put"), 2);
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

/* --- jobs ----------------------------------------------------------- */

START_TEST(test_job_create_and_get)
{
	struct job j = job_of("job_a", 600), got;
	struct token_row t[2] = { token_of("job_a", "invoices.read", 1),
		token_of("job_a", CANARY_CAPABILITY, 2) };
	json_t *tokens;

	ck_assert_int_eq(store_job_create(st, &j, t, 2, "launcher"), 0);
	ck_assert_int_eq(store_job_get(st, "job_a", &got, &tokens), 0);
	ck_assert_str_eq(got.state, "running");
	ck_assert_str_eq(got.manifest, "m");
	ck_assert_int_eq(got.deadline, j.deadline);
	ck_assert_str_eq(got.stop_reason, "");
	/* Both stored, the canary not counted toward the ceiling. */
	ck_assert_uint_eq(json_array_size(tokens), 2);
	ck_assert_int_eq(got.tokens_minted, 1);
	json_t *first = json_array_get(tokens, 0);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_object_get(first, "params"),
				 "tenant")),
	    "4182");
	ck_assert_str_eq(json_string_value(json_object_get(first, "state")),
	    "active");
	json_decref(tokens);
	/* Without asking for the tokens. */
	ck_assert_int_eq(store_job_get(st, "job_a", &got, NULL), 0);

	/* The same id again is refused, and nothing of it is kept. */
	struct token_row t3 = token_of("job_a", "invoices.read", 3);
	ck_assert_int_eq(store_job_create(st, &j, &t3, 1, "launcher"), -EEXIST);
	ck_assert_int_eq(store_job_get(st, "job_a", &got, &tokens), 0);
	ck_assert_uint_eq(json_array_size(tokens), 2);
	json_decref(tokens);
	ck_assert_int_eq(store_job_get(st, "job_none", &got, NULL), -ENOENT);
	/* Created and each token minted: audited. */
	ck_assert_uint_eq(audit_count("job_a", "job_created"), 1);
	ck_assert_uint_eq(audit_count("job_a", "token_minted"), 2);
	assert_chain(true, 0);
}
END_TEST

START_TEST(test_job_heartbeat)
{
	struct job j = job_of("job_a", 100), got;
	struct revoke_result rr;

	ck_assert_int_eq(store_job_create(st, &j, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_job_heartbeat(st, "job_a", 50, &got), 0);
	ck_assert_int_ge(got.lease_expires, j.created + 50);
	/* Never past the deadline. */
	ck_assert_int_eq(store_job_heartbeat(st, "job_a", 100000, &got), 0);
	ck_assert_int_eq(got.lease_expires, j.deadline);
	ck_assert_int_eq(store_job_heartbeat(st, "job_none", 50, &got),
	    -ENOENT);
	ck_assert_int_eq(store_job_revoke(st, "job_a", "stop", "admin", &rr),
	    0);
	ck_assert_int_eq(store_job_heartbeat(st, "job_a", 50, &got), -ESTALE);
	ck_assert_str_eq(got.stop_reason, "stop");
}
END_TEST

START_TEST(test_job_revoke)
{
	struct job j = job_of("job_a", 600), k = job_of("job_b", 600), got;
	struct token_row t[2] = { token_of("job_a", "invoices.read", 1),
		token_of("job_a", "tickets.read", 2) };
	struct revoke_result rr, again;
	char state[16];
	struct token_row row;
	json_t *list;
	int64_t head;

	ck_assert_int_eq(store_job_create(st, &j, t, 2, "launcher"), 0);
	ck_assert_int_eq(store_job_create(st, &k, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_revocation_head(st, &head), 0);
	ck_assert_int_eq(head, 0);

	ck_assert_int_eq(store_job_revoke(st, "job_a", "done", "admin", &rr),
	    0);
	ck_assert(!rr.already);
	ck_assert_int_eq(rr.tokens_revoked, 2);
	ck_assert_int_eq(rr.seq, 1);
	ck_assert_str_eq(rr.reason, "done");
	ck_assert_int_eq(store_job_get(st, "job_a", &got, NULL), 0);
	ck_assert_str_eq(got.state, "revoked");
	ck_assert_str_eq(got.stop_reason, "done");
	ck_assert_int_eq(got.tokens_revoked, 2);
	/* Every token with it, in the same transaction. */
	ck_assert_int_eq(store_token_lookup(st, t[0].hash, &row, state), 0);
	ck_assert_str_eq(row.state, "revoked");
	ck_assert_str_eq(state, "revoked");
	free(row.params);

	/* Again: nothing changes, and the answer is the first one's. */
	ck_assert_int_eq(store_job_revoke(st, "job_a", "other", "launcher",
			     &again),
	    0);
	ck_assert(again.already);
	ck_assert_int_eq(again.seq, 1);
	ck_assert_int_eq(again.tokens_revoked, 2);
	ck_assert_str_eq(again.reason, "done");
	ck_assert_uint_eq(audit_count("job_a", "job_revoked"), 1);

	/* The next job's revocation is the next sequence number. */
	ck_assert_int_eq(store_job_revoke(st, "job_b", "done", "admin", &rr),
	    0);
	ck_assert_int_eq(rr.seq, 2);
	ck_assert_int_eq(rr.tokens_revoked, 0);
	ck_assert_int_eq(store_revocation_head(st, &head), 0);
	ck_assert_int_eq(head, 2);
	ck_assert_int_eq(store_revocations_after(st, 0, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 2);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "job")),
	    "job_a");
	json_decref(list);
	ck_assert_int_eq(store_revocations_after(st, 1, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(list, 0), "seq")),
	    2);
	json_decref(list);
	ck_assert_int_eq(store_revocations_after(st, 0, 1, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	json_decref(list);

	/* The record says why, how many, which sequence number. */
	ck_assert_int_eq(store_audit_list(st, "job_a", 0, 100, &list), 0);
	json_t *r, *rec = NULL;
	size_t i;
	json_array_foreach(list, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "event")),
			"job_revoked") == 0)
			rec = r;
	}
	ck_assert_ptr_nonnull(rec);
	json_t *d = json_object_get(rec, "detail");
	ck_assert_str_eq(json_string_value(json_object_get(d, "reason")),
	    "done");
	ck_assert_int_eq(json_integer_value(json_object_get(d, "seq")), 1);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(d, "tokens_revoked")),
	    2);
	ck_assert_str_eq(json_string_value(json_object_get(rec, "actor")),
	    "admin");
	json_decref(list);

	ck_assert_int_eq(store_job_revoke(st, "job_none", "x", "admin", &rr),
	    -ENOENT);
	assert_chain(true, 0);
}
END_TEST

START_TEST(test_jobs_lapsed)
{
	struct job a = job_of("job_a", 600), b = job_of("job_b", 600),
		   c = job_of("job_c", 600), d = job_of("job_d", 600);
	struct revoke_result rr;
	int64_t now = (int64_t)time(NULL);
	json_t *ids, *e;
	size_t i;
	int seen = 0;

	a.lease_expires = now - 1; /* its lease ran out */
	b.deadline = now - 1; /* its deadline passed */
	b.lease_expires = now - 1;
	d.lease_expires = now - 1; /* lapsed, but revoked already */
	ck_assert_int_eq(store_job_create(st, &a, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_job_create(st, &b, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_job_create(st, &c, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_job_create(st, &d, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_job_revoke(st, "job_d", "done", "admin", &rr),
	    0);
	ck_assert_int_eq(store_jobs_lapsed(st, now, 10, &ids), 0);
	ck_assert_uint_eq(json_array_size(ids), 2);
	json_array_foreach(ids, i, e)
	{
		const char *job = json_string_value(json_object_get(e, "job"));
		const char *why =
		    json_string_value(json_object_get(e, "reason"));
		if (strcmp(job, "job_a") == 0) {
			ck_assert_str_eq(why, "lease_expired");
			seen |= 1;
		} else if (strcmp(job, "job_b") == 0) {
			ck_assert_str_eq(why, "deadline");
			seen |= 2;
		}
	}
	ck_assert_int_eq(seen, 3);
	json_decref(ids);
	ck_assert_int_eq(store_jobs_lapsed(st, now, 1, &ids), 0);
	ck_assert_uint_eq(json_array_size(ids), 1);
	json_decref(ids);
}
END_TEST

/* --- tokens --------------------------------------------------------- */

START_TEST(test_token_insert_lookup_revoke)
{
	struct job j = job_of("job_a", 600);
	struct token_row t = token_of("job_a", "invoices.read", 7), row;
	unsigned char unknown[STORE_HASH_LEN];
	char state[16];
	struct token_revoke_result tr;

	ck_assert_int_eq(store_job_create(st, &j, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(insert(&t, 10), 0);
	ck_assert_int_eq(store_token_lookup(st, t.hash, &row, state), 0);
	ck_assert_str_eq(row.id, "tok_7");
	ck_assert_str_eq(row.job, "job_a");
	ck_assert_str_eq(row.capability, "invoices.read");
	ck_assert_str_eq(row.params, "{\"tenant\":\"4182\"}");
	ck_assert_str_eq(row.audience, "invoices-api");
	ck_assert_int_eq(row.exp, t.exp);
	ck_assert_str_eq(row.state, "active");
	ck_assert_str_eq(state, "running");
	free(row.params);
	memset(unknown, 0xee, sizeof(unknown));
	ck_assert_int_eq(store_token_lookup(st, unknown, &row, state), -ENOENT);
	/* The same hash twice is refused. */
	ck_assert_int_eq(insert(&t, 10), -EEXIST);

	ck_assert_int_eq(store_token_revoke(st, t.hash, "admin", &tr), 0);
	ck_assert(tr.found);
	ck_assert_str_eq(tr.id, "tok_7");
	ck_assert_str_eq(tr.job, "job_a");
	ck_assert_int_eq(tr.seq, 1);
	ck_assert_int_eq(store_token_lookup(st, t.hash, &row, state), 0);
	ck_assert_str_eq(row.state, "revoked");
	ck_assert_str_eq(state, "running"); /* the job goes on */
	free(row.params);
	/* Revoked again, or never known: not found, not an error, and
	 * nothing on the feed. */
	ck_assert_int_eq(store_token_revoke(st, t.hash, "admin", &tr), 0);
	ck_assert(!tr.found);
	ck_assert_int_eq(store_token_revoke(st, unknown, "admin", &tr), 0);
	ck_assert(!tr.found);
	int64_t head;
	ck_assert_int_eq(store_revocation_head(st, &head), 0);
	ck_assert_int_eq(head, 1);
	ck_assert_uint_eq(audit_count("job_a", "token_minted"), 1);
	ck_assert_uint_eq(audit_count("job_a", "token_revoked"), 1);
	assert_chain(true, 0);
}
END_TEST

/* The feed entry at index i of list: its seq, job and token ("" none). */
static void
assert_entry(json_t *list, size_t i, int64_t seq, const char *job,
    const char *token)
{
	json_t *e = json_array_get(list, i);
	const char *tok = json_string_value(json_object_get(e, "token"));

	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "seq")), seq);
	ck_assert_str_eq(json_string_value(json_object_get(e, "job")), job);
	if (token[0] == '\0') {
		/* A job's entry is as it always was: {seq, job} alone. */
		ck_assert_ptr_null(json_object_get(e, "token"));
		ck_assert_uint_eq(json_object_size(e), 2);
	} else {
		ck_assert_ptr_nonnull(tok);
		ck_assert_str_eq(tok, token);
	}
}

START_TEST(test_token_revocations_on_the_feed)
{
	struct job j = job_of("job_a", 600), got;
	struct token_row t[2] = { token_of("job_a", "invoices.read", 1),
		token_of("job_a", "invoices.read", 2) };
	struct token_revoke_result tr;
	struct revoke_result rr;
	json_t *list, *r, *rec = NULL;
	int64_t head;
	size_t i;

	ck_assert_int_eq(store_job_create(st, &j, t, 2, "launcher"), 0);
	ck_assert_int_eq(store_token_revoke(st, t[0].hash, "admin", &tr), 0);
	ck_assert(tr.found);
	ck_assert_int_eq(tr.seq, 1);
	ck_assert_int_eq(store_job_get(st, "job_a", &got, NULL), 0);
	ck_assert_str_eq(got.state, "running");
	/* Then the job: its own entry, the next number, its one token left. */
	ck_assert_int_eq(store_job_revoke(st, "job_a", "done", "admin", &rr),
	    0);
	ck_assert_int_eq(rr.seq, 2);
	ck_assert_int_eq(rr.tokens_revoked, 1);
	/* Again: the job's number, not its token's. */
	ck_assert_int_eq(store_job_revoke(st, "job_a", "done", "admin", &rr),
	    0);
	ck_assert(rr.already);
	ck_assert_int_eq(rr.seq, 2);
	/* A token of a revoked job is revoked already: no entry. */
	ck_assert_int_eq(store_token_revoke(st, t[1].hash, "admin", &tr), 0);
	ck_assert(!tr.found);
	ck_assert_int_eq(store_revocation_head(st, &head), 0);
	ck_assert_int_eq(head, 2);

	ck_assert_int_eq(store_revocations_after(st, 0, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 2);
	assert_entry(list, 0, 1, "job_a", "tok_1");
	assert_entry(list, 1, 2, "job_a", "");
	json_decref(list);
	ck_assert_int_eq(store_revocations_after(st, 1, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	assert_entry(list, 0, 2, "job_a", "");
	json_decref(list);

	/* The token's record names its revocation's number. */
	ck_assert_int_eq(store_audit_list(st, "job_a", 0, 100, &list), 0);
	json_array_foreach(list, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "event")),
			"token_revoked") == 0)
			rec = r;
	}
	ck_assert_ptr_nonnull(rec);
	json_t *d = json_object_get(rec, "detail");
	ck_assert_str_eq(json_string_value(json_object_get(d, "token")),
	    "tok_1");
	ck_assert_int_eq(json_integer_value(json_object_get(d, "seq")), 1);
	json_decref(list);
	assert_chain(true, 0);
}
END_TEST

START_TEST(test_token_insert_refused)
{
	struct job j = job_of("job_a", 600), got;
	struct token_row start = token_of("job_a", "tickets.read", 1);
	struct token_row canary = token_of("job_a", CANARY_CAPABILITY, 2);
	struct token_row t[4] = { token_of("job_a", "invoices.read", 3),
		token_of("job_a", "invoices.read", 4),
		token_of("job_a", "invoices.read", 5),
		token_of("job_a", CANARY_CAPABILITY, 6) };
	struct token_row mints_at_start[2] = { start, canary };
	struct revoke_result rr;
	char state[16];
	struct token_row row;

	/* A ceiling of 3: the one minted at start counts, canaries not. */
	ck_assert_int_eq(store_job_create(st, &j, mints_at_start, 2,
			     "launcher"),
	    0);
	ck_assert_int_eq(insert(&t[0], 3), 0);
	ck_assert_int_eq(insert(&t[1], 3), 0);
	ck_assert_int_eq(insert(&t[2], 3), -EDQUOT);
	ck_assert_int_eq(store_token_lookup(st, t[2].hash, &row, state),
	    -ENOENT);
	ck_assert_int_eq(store_job_get(st, "job_a", &got, NULL), 0);
	ck_assert_int_eq(got.tokens_minted, 3);
	/* Refused, so not audited as minted. */
	ck_assert_uint_eq(audit_count("job_a", "token_minted"), 4);

	/* A revoked job gets nothing, whatever its count. */
	ck_assert_int_eq(store_job_revoke(st, "job_a", "done", "admin", &rr),
	    0);
	ck_assert_int_eq(insert(&t[3], 100), -ESTALE);
	ck_assert_int_eq(store_token_lookup(st, t[3].hash, &row, state),
	    -ENOENT);
	/* A job that does not exist either. */
	struct token_row orphan = token_of("job_none", "invoices.read", 9);
	ck_assert_int_eq(insert(&orphan, 100), -ENOENT);
	assert_chain(true, 0);
}
END_TEST

/* --- audit ---------------------------------------------------------- */

START_TEST(test_audit_async_and_list)
{
	struct job j = job_of("job_a", 600), k = job_of("job_b", 600);
	json_t *list;

	ck_assert_int_eq(store_audit_async(st, "auth_failed",
			     json_pack("{s:s}", "reason", "no_key")),
	    0);
	ck_assert_int_eq(store_audit_async(st, "tripwire",
			     json_pack("{s:s, s:s}", "job", "job_a", "actor",
				 "broker")),
	    0);
	/* A synchronous write after them: they are committed before it. */
	ck_assert_int_eq(store_job_create(st, &j, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_job_create(st, &k, NULL, 0, "launcher"), 0);

	ck_assert_int_eq(store_audit_list(st, NULL, 0, 100, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 4);
	json_t *first = json_array_get(list, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(first, "seq")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(first, "event")),
	    "auth_failed");
	ck_assert(json_is_null(json_object_get(first, "job")));
	ck_assert_str_eq(json_string_value(json_object_get(first, "prev")),
	    "0000000000000000000000000000000000000000000000000000000000000000");
	/* Each record holds its predecessor's hash. */
	for (size_t i = 1; i < json_array_size(list); i++)
		ck_assert_str_eq(json_string_value(
				     json_object_get(json_array_get(list, i),
					 "prev")),
		    json_string_value(
			json_object_get(json_array_get(list, i - 1), "hash")));
	/* The job and actor of an async record come from its detail. */
	json_t *second = json_array_get(list, 1);
	ck_assert_str_eq(json_string_value(json_object_get(second, "job")),
	    "job_a");
	ck_assert_str_eq(json_string_value(json_object_get(second, "actor")),
	    "broker");
	json_decref(list);

	/* Filtered by job, paged by seq, capped by max. */
	ck_assert_int_eq(store_audit_list(st, "job_a", 0, 100, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 2);
	json_decref(list);
	ck_assert_int_eq(store_audit_list(st, NULL, 2, 100, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 2);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(list, 0), "seq")),
	    3);
	json_decref(list);
	ck_assert_int_eq(store_audit_list(st, NULL, 0, 1, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	json_decref(list);
	ck_assert_int_eq(store_audit_list(st, "job_none", 0, 100, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);
}
END_TEST

/* Three records: a manifest put and two jobs made. */
static void
three_records(void)
{
	struct job j = job_of("job_a", 600), k = job_of("job_b", 600);
	json_t *prev;
	int64_t version;
	bool added, ok;
	int64_t bad, records;

	ck_assert_int_eq(store_manifest_put(st, "m", "{}", "aa", "admin",
			     &version, &prev, &added),
	    0);
	ck_assert_int_eq(store_job_create(st, &j, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_job_create(st, &k, NULL, 0, "launcher"), 0);
	ck_assert_int_eq(store_audit_verify(st, &ok, &bad, &records), 0);
	ck_assert(ok);
	ck_assert_int_eq(records, 3);
}

START_TEST(test_audit_verify_changed_record)
{
	three_records();
	sql("DROP TRIGGER audit_no_update;"
	    "UPDATE audit SET detail = '{\"manifest\":\"x\"}' WHERE seq = 2;");
	assert_chain(false, 2);
}
END_TEST

START_TEST(test_audit_verify_removed_record)
{
	three_records();
	sql("DROP TRIGGER audit_no_delete; DELETE FROM audit WHERE seq = 2;");
	assert_chain(false, 2);
}
END_TEST

START_TEST(test_audit_verify_cut_tail)
{
	three_records();
	/* The last record gone: every hash still holds, the length not. */
	sql("DROP TRIGGER audit_no_delete; DELETE FROM audit WHERE seq = 3;");
	assert_chain(false, 3);
}
END_TEST

START_TEST(test_audit_is_append_only)
{
	sqlite3 *db;

	three_records();
	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	ck_assert_int_ne(sqlite3_exec(db, "UPDATE audit SET event = 'x'", NULL,
			     NULL, NULL),
	    SQLITE_OK);
	ck_assert_int_ne(sqlite3_exec(db, "DELETE FROM audit", NULL, NULL,
			     NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	assert_chain(true, 0);
}
END_TEST

/* --- open, reopen, schema ------------------------------------------- */

START_TEST(test_reopen_keeps_everything)
{
	struct job j = job_of("job_a", 600), got;
	struct token_row t = token_of("job_a", "invoices.read", 1);
	struct revoke_result rr;
	int64_t head;

	ck_assert_int_eq(store_job_create(st, &j, &t, 1, "launcher"), 0);
	ck_assert_int_eq(store_job_revoke(st, "job_a", "done", "admin", &rr),
	    0);
	store_close(st);
	ck_assert_int_eq(store_open(db_path, &st), 0);
	ck_assert_int_eq(store_job_get(st, "job_a", &got, NULL), 0);
	ck_assert_str_eq(got.state, "revoked");
	ck_assert_int_eq(got.tokens_minted, 1);
	ck_assert_int_eq(store_revocation_head(st, &head), 0);
	ck_assert_int_eq(head, 1);
	/* The chain goes on from where it was. */
	struct job k = job_of("job_b", 600);
	ck_assert_int_eq(store_job_create(st, &k, NULL, 0, "launcher"), 0);
	assert_chain(true, 0);
	ck_assert_uint_eq(audit_count(NULL, "job_created"), 2);
}
END_TEST

START_TEST(test_open_failures)
{
	char path[PATH_MAX];
	struct store *s = (struct store *)1;

	store_close(NULL);
	/* A directory that is not there: an error, nothing made. */
	ck_assert_int_lt(store_open(testutil_at(path, "none/broker.db"), &s),
	    0);
	ck_assert_ptr_eq(s, (struct store *)1);
	/* A file that is not a database. */
	testutil_write_text(testutil_at(path, "junk.db"),
	    "this is not an sqlite database, not at all, not even close");
	ck_assert_int_lt(store_open(path, &s), 0);
	ck_assert_ptr_eq(s, (struct store *)1);
}
END_TEST

START_TEST(test_schema_newer_refused)
{
	store_close(st);
	st = NULL;
	sql("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
	ck_assert_int_eq(store_open(db_path, &st), -EPROTONOSUPPORT);
	ck_assert_ptr_null(st);
	/* Left as it was. */
	char text[128];
	snprintf(text, sizeof(text),
	    "UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
	    STORE_SCHEMA_VERSION);
	sql(text);
	ck_assert_int_eq(store_open(db_path, &st), 0);
}
END_TEST

/* A database as a broker of schema 1 left it: no version, no count. */
static const char schema_1[] =
    "CREATE TABLE jobs (id TEXT PRIMARY KEY, manifest TEXT NOT NULL,"
    " manifest_version INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('running', 'revoked')),"
    " created INTEGER NOT NULL, deadline INTEGER NOT NULL,"
    " lease_expires INTEGER NOT NULL, stop_reason TEXT NOT NULL DEFAULT '',"
    " tokens_revoked INTEGER NOT NULL DEFAULT 0, revoked_at INTEGER)"
    " WITHOUT ROWID;"
    "CREATE TABLE tokens (hash BLOB PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
    " job TEXT NOT NULL REFERENCES jobs (id), capability TEXT NOT NULL,"
    " params TEXT NOT NULL, aud TEXT NOT NULL, iat INTEGER NOT NULL,"
    " exp INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('active', 'revoked')))"
    " WITHOUT ROWID;"
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
    "INSERT INTO jobs (id, manifest, manifest_version, state, created,"
    " deadline, lease_expires) VALUES ('job_old', 'm', 1, 'running', 1,"
    " 99999999999, 99999999999);"
    "INSERT INTO tokens VALUES (x'01', 'tok_1', 'job_old', 'a', '{}', 'a',"
    " 1, 2, 'active'), (x'02', 'tok_2', 'job_old', 'a', '{}', 'a', 1, 2,"
    " 'revoked'), (x'03', 'tok_3', 'job_old', 'cordon.canary', '{}', 'c',"
    " 1, 2, 'active');";

START_TEST(test_schema_1_migrated)
{
	struct job got;

	/* This test makes its own database: the fixture's is not used. */
	store_close(st);
	st = NULL;
	testutil_at(db_path, "old.db");
	sql(schema_1);
	ck_assert_int_eq(store_open(db_path, &st), 0);
	ck_assert_int_eq(store_job_get(st, "job_old", &got, NULL), 0);
	/* Counted from the tokens it holds, canaries left out. */
	ck_assert_int_eq(got.tokens_minted, 2);
	struct token_row t = token_of("job_old", "a", 9);
	ck_assert_int_eq(insert(&t, 2), -EDQUOT);
	ck_assert_int_eq(insert(&t, 3), 0);
	/* Migrated once: a reopen finds the version and changes nothing. */
	store_close(st);
	ck_assert_int_eq(store_open(db_path, &st), 0);
	ck_assert_int_eq(store_job_get(st, "job_old", &got, NULL), 0);
	ck_assert_int_eq(got.tokens_minted, 3);
}
END_TEST

/* A database as a broker of schema 2 left it: revocations of jobs only,
 * without the token column. */
START_TEST(test_schema_2_migrated)
{
	struct job j = job_of("job_new", 600);
	struct token_row t = token_of("job_new", "invoices.read", 4);
	struct token_revoke_result tr;
	json_t *list;

	ck_assert_int_eq(store_job_create(st, &j, &t, 1, "launcher"), 0);
	store_close(st);
	st = NULL;
	sql("ALTER TABLE revocations DROP COLUMN token;"
	    "INSERT INTO jobs (id, manifest, manifest_version, state, created,"
	    " deadline, lease_expires) VALUES ('job_old', 'm', 1, 'revoked', 1,"
	    " 2, 2);"
	    "INSERT INTO revocations (job, at) VALUES ('job_old', 1);"
	    "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
	ck_assert_int_eq(store_open(db_path, &st), 0);
	/* The old revocation reads as it did; a token's comes after it. */
	ck_assert_int_eq(store_token_revoke(st, t.hash, "admin", &tr), 0);
	ck_assert(tr.found);
	ck_assert_int_eq(tr.seq, 2);
	ck_assert_int_eq(store_revocations_after(st, 0, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 2);
	assert_entry(list, 0, 1, "job_old", "");
	assert_entry(list, 1, 2, "job_new", "tok_4");
	json_decref(list);
	/* Migrated once: a reopen finds the version and keeps the entries. */
	store_close(st);
	ck_assert_int_eq(store_open(db_path, &st), 0);
	ck_assert_int_eq(store_revocations_after(st, 1, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	assert_entry(list, 0, 2, "job_new", "tok_4");
	json_decref(list);
	store_close(st);
	st = NULL;
	sqlite3 *db;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db,
			     "SELECT value FROM meta WHERE key = "
			     "'schema_version'",
			     -1, &q, NULL),
	    SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(q, 0), STORE_SCHEMA_VERSION);
	sqlite3_finalize(q);
	sqlite3_close(db);
	ck_assert_int_eq(store_open(db_path, &st), 0);
}
END_TEST

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");

	testutil_tmp_fixture(tc, "store");
	tcase_add_checked_fixture(tc, open_fresh, close_store);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_manifest_versions);
	tcase_add_test(tc, test_manifest_list);
	tcase_add_test(tc, test_job_create_and_get);
	tcase_add_test(tc, test_job_heartbeat);
	tcase_add_test(tc, test_job_revoke);
	tcase_add_test(tc, test_jobs_lapsed);
	tcase_add_test(tc, test_token_insert_lookup_revoke);
	tcase_add_test(tc, test_token_revocations_on_the_feed);
	tcase_add_test(tc, test_token_insert_refused);
	tcase_add_test(tc, test_audit_async_and_list);
	tcase_add_test(tc, test_audit_verify_changed_record);
	tcase_add_test(tc, test_audit_verify_removed_record);
	tcase_add_test(tc, test_audit_verify_cut_tail);
	tcase_add_test(tc, test_audit_is_append_only);
	tcase_add_test(tc, test_reopen_keeps_everything);
	tcase_add_test(tc, test_open_failures);
	tcase_add_test(tc, test_schema_newer_refused);
	tcase_add_test(tc, test_schema_1_migrated);
	tcase_add_test(tc, test_schema_2_migrated);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(store_suite());
}
