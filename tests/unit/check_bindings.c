/*
 * The secrets' bindings in the broker's store (store.h, "secret
 * bindings"), on both engines: sqlite in a directory of its own for each
 * test, and PostgreSQL on a private server this program starts
 * (tests/integration/pg.c) with a fresh database for each test. A
 * manifest version's injecting rules bind their hosts in its put (kept
 * by a later version that drops them); a PUT's guard_hosts replace the
 * declared hosts, a put without them keeps them; an address a proxy saw
 * is added once, audited once; a secret's deletion removes its bindings
 * and its creation again brings back the rules' only; a scan release is
 * audited with its purpose and leaves last_used alone; the epoch moves
 * with every change; a database of the schema before the bindings is
 * backfilled from every manifest version at open.
 *
 * Without PostgreSQL the pg cases fail and say so, unless
 * CORDON_TEST_NO_PG=1 (then they are skipped).
 */
#include "pg.h"
#include "store.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The schema versions before the bindings (store.h, store_pg.h). */
#define SQLITE_SCHEMA_BEFORE 3
#define PG_SCHEMA_BEFORE 5

static struct pg_server pg;
static bool on_pg;
static char addr[PATH_MAX + 400];
static struct store *st;

static void
open_sqlite(void)
{
	on_pg = false;
	testutil_dir_setup();
	testutil_at(addr, "broker.db");
	ck_assert_int_eq(store_open(addr, &st), 0);
}

static void
open_pg(void)
{
	char name[64];
	static int n;

	on_pg = true;
	snprintf(name, sizeof(name), "b%d_%d", (int)getpid(), n++);
	ck_assert_msg(pg_create_db(&pg, name, addr, sizeof(addr)) == 0,
	    "create database %s", name);
	ck_assert_int_eq(store_open(addr, &st), 0);
}

static void
close_store(void)
{
	store_close(st);
	st = NULL;
	if (!on_pg)
		testutil_dir_teardown();
}

/* Runs sql on a connection of its own (beside the store). */
static void
sql(const char *text)
{
	if (on_pg) {
		ck_assert_msg(pg_sql(addr, text, NULL, 0) == 0, "%s", text);
		return;
	}
	sqlite3 *db;
	char *err = NULL;

	ck_assert_int_eq(sqlite3_open(addr, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	ck_assert_msg(sqlite3_exec(db, text, NULL, NULL, &err) == SQLITE_OK,
	    "%s: %s", text, err != NULL ? err : "?");
	sqlite3_close(db);
}

static void
secret_put(const char *name, int64_t version, const char *hosts)
{
	json_t *h = hosts != NULL ? testutil_json(hosts, 0) : NULL;

	ck_assert_int_eq(store_secret_put_bound(st, name, version,
			     (const unsigned char *)"sealed", 6, h, "admin"),
	    0);
	json_decref(h);
}

static bool
manifest_put(const char *name, const char *text, const char *sha)
{
	int64_t v;
	json_t *prev;
	bool added;

	ck_assert_int_eq(store_manifest_put(st, name, text, sha, "admin", &v,
			     &prev, &added),
	    0);
	json_decref(prev);
	return added;
}

/* The list as "secret kind value origin" lines, and its epoch. */
static const char *
listed(int64_t *ret_epoch)
{
	static char out[2048];
	json_t *list, *b;
	size_t i, n = 0;
	int64_t epoch = -1;

	ck_assert_int_eq(store_bindings_list(st, &list, &epoch), 0);
	out[0] = '\0';
	json_array_foreach(list, i, b)
	{
		int w = snprintf(out + n, sizeof(out) - n, "%s%s %s %s %s",
		    n > 0 ? "; " : "",
		    json_string_value(json_object_get(b, "secret")),
		    json_string_value(json_object_get(b, "kind")),
		    json_string_value(json_object_get(b, "value")),
		    json_string_value(json_object_get(b, "origin")));
		ck_assert(w > 0 && (size_t)w < sizeof(out) - n);
		n += (size_t)w;
	}
	json_decref(list);
	if (ret_epoch != NULL)
		*ret_epoch = epoch;
	return out;
}

static int64_t
audit_events(const char *event)
{
	json_t *list, *r;
	size_t i;
	int64_t n = 0;

	ck_assert_int_eq(store_audit_list(st, NULL, 0, 1000, &list), 0);
	json_array_foreach(list, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "event")),
			event) == 0)
			n++;
	}
	json_decref(list);
	return n;
}

static const char m1[] =
    "{\"egress\":[{\"host\":\"api.test\",\"inject\":{\"header\":"
    "\"Authorization\",\"secret\":\"gh\"}},{\"host\":\"other.test\"},"
    "{\"host\":\"up.test\",\"inject\":{\"header\":\"X-Key\",\"secret\":"
    "\"up\"}}]}";
static const char m2[] = "{\"egress\":[{\"host\":\"other.test\"}]}";

START_TEST(test_rules_bound_by_the_manifest_put)
{
	int64_t e0, e1, e2;

	secret_put("gh", 1, NULL);
	secret_put("up", 1, NULL);
	ck_assert_str_eq(listed(&e0), "");
	ck_assert(manifest_put("m", m1, "s1"));
	ck_assert_str_eq(listed(&e1),
	    "gh host api.test rule; up host up.test rule");
	ck_assert_int_gt(e1, e0);
	/* The same version again changes nothing; a version without the
	 * rules keeps their bindings (the service may hold the key). */
	ck_assert(!manifest_put("m", m1, "s1"));
	ck_assert_str_eq(listed(&e2),
	    "gh host api.test rule; up host up.test rule");
	ck_assert_int_eq(e2, e1);
	ck_assert(manifest_put("m", m2, "s2"));
	ck_assert_str_eq(listed(NULL),
	    "gh host api.test rule; up host up.test rule");
	/* Another manifest injecting at the same host: one binding. */
	ck_assert(manifest_put("n", m1, "s1"));
	ck_assert_str_eq(listed(NULL),
	    "gh host api.test rule; up host up.test rule");
}
END_TEST

START_TEST(test_declared_hosts_replaced)
{
	int64_t e1, e2, e3;

	secret_put("gh", 1, "[\"www.api.test\", \"10.0.0.1\"]");
	ck_assert_str_eq(listed(&e1),
	    "gh host 10.0.0.1 declared; gh host www.api.test declared");
	secret_put("gh", 2, "[\"b.test\"]");
	ck_assert_str_eq(listed(&e2), "gh host b.test declared");
	ck_assert_int_gt(e2, e1);
	/* A put without guard_hosts keeps them. */
	secret_put("gh", 3, NULL);
	ck_assert_str_eq(listed(&e3), "gh host b.test declared");
	ck_assert_int_gt(e3, e2);
	secret_put("gh", 4, "[]");
	ck_assert_str_eq(listed(NULL), "");
	/* More than the cap is refused, nothing stored. */
	json_t *many = json_array();
	for (int i = 0; i <= STORE_BINDINGS_DECLARED_MAX; i++)
		json_array_append_new(many, json_string("a.test"));
	ck_assert_int_eq(store_secret_put_bound(st, "gh", 5,
			     (const unsigned char *)"x", 1, many, "admin"),
	    -EINVAL);
	json_decref(many);
	struct secret_meta meta;
	ck_assert_int_eq(store_secret_get(st, "gh", &meta, NULL, NULL), 0);
	ck_assert_int_eq(meta.version, 4);
}
END_TEST

START_TEST(test_seen_added_once)
{
	bool added = true;
	int64_t e1, e2;

	secret_put("gh", 1, NULL);
	listed(&e1);
	ck_assert_int_eq(store_binding_seen(st, "gh", "127.0.0.1:8443", "job_a",
			     "verifier", &added, NULL),
	    0);
	ck_assert(added);
	ck_assert_str_eq(listed(&e2), "gh addr 127.0.0.1:8443 seen");
	ck_assert_int_gt(e2, e1);
	ck_assert_int_eq(store_binding_seen(st, "gh", "127.0.0.1:8443", "job_b",
			     "verifier", &added, NULL),
	    0);
	ck_assert(!added);
	ck_assert_int_eq(store_binding_seen(st, "gh", "[::1]:443", "job_b",
			     "verifier", &added, NULL),
	    0);
	ck_assert(added);
	ck_assert_str_eq(listed(&e1),
	    "gh addr 127.0.0.1:8443 seen; gh addr [::1]:443 seen");
	ck_assert_int_eq(audit_events("binding_seen"), 2);
	ck_assert_int_eq(store_binding_seen(st, "nope", "127.0.0.1:1", "job_a",
			     "verifier", &added, NULL),
	    -ENOENT);
	ck_assert_str_eq(listed(&e2),
	    "gh addr 127.0.0.1:8443 seen; gh addr [::1]:443 seen");
	ck_assert_int_eq(e2, e1);
}
END_TEST

/* The 65th address of a secret: -EDQUOT, nothing added, the cap said;
 * one it has already costs nothing. */
START_TEST(test_seen_capped_in_the_write)
{
	struct store_bind_over over = { NULL, 0 };
	char where[32];
	bool added;

	secret_put("gh", 1, NULL);
	for (int i = 1; i <= STORE_BINDINGS_SEEN_MAX; i++) {
		snprintf(where, sizeof(where), "127.0.0.1:%d", i);
		ck_assert_int_eq(store_binding_seen(st, "gh", where, "job_a",
				     "verifier", &added, &over),
		    0);
		ck_assert(added);
	}
	ck_assert_int_eq(store_binding_seen(st, "gh", "127.0.0.2:1", "job_a",
			     "verifier", &added, &over),
	    -EDQUOT);
	ck_assert_str_eq(over.cap, "seen");
	ck_assert_int_eq(over.count, STORE_BINDINGS_SEEN_MAX + 1);
	ck_assert_int_eq(audit_events("binding_seen"), STORE_BINDINGS_SEEN_MAX);
	ck_assert_int_eq(store_binding_seen(st, "gh", "127.0.0.1:7", "job_a",
			     "verifier", &added, &over),
	    0);
	ck_assert(!added);
}
END_TEST

/* A manifest put past the list's caps: -EDQUOT, nothing written, and
 * the cap it would pass with the count (the message the manifest PUT's
 * 409 gives); the list filled by SQL, 999 secrets of one host and one of
 * 15,001. */
START_TEST(test_manifest_put_says_which_cap)
{
	struct store_bind_over over = { NULL, 0 };
	int64_t v;
	json_t *prev = NULL;
	bool added;

	secret_put("gh", 1, NULL);
	secret_put("up", 1, NULL);
	sql(on_pg
		? "INSERT INTO secrets SELECT 's' || i, 1, 'x', 0, 0 FROM "
		  "generate_series(1, 999) i; INSERT INTO bindings SELECT "
		  "'s' || i, 'host', 'h.test', 'declared', 0 FROM "
		  "generate_series(1, 999) i; INSERT INTO bindings SELECT "
		  "'gh', 'host', 'h' || i || '.test', 'declared', 0 FROM "
		  "generate_series(1, 15001) i"
		: "INSERT INTO secrets "
		  "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
		  "FROM n WHERE i < 999) SELECT 's' || i, 1, 'x', 0, 0 FROM "
		  "n; INSERT INTO bindings WITH RECURSIVE n(i) AS (SELECT 1 "
		  "UNION ALL SELECT i + 1 FROM n WHERE i < 999) SELECT 's' || "
		  "i, 'host', 'h.test', 'declared', 0 FROM n; INSERT INTO "
		  "bindings WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT "
		  "i + 1 FROM n WHERE i < 15001) SELECT 'gh', 'host', 'h' || "
		  "i || '.test', 'declared', 0 FROM n");
	/* 1,000 secrets and 16,000 places: up's rule would list a 1,001st. */
	ck_assert_int_eq(store_manifest_put_over(st, "m",
			     "{\"egress\":[{\"host\":\"up.test\",\"inject\":"
			     "{\"header\":\"X-Key\",\"secret\":\"up\"}}]}",
			     "s1", "admin", &v, &prev, &added, &over),
	    -EDQUOT);
	ck_assert_ptr_null(prev);
	ck_assert_str_eq(over.cap, "secrets");
	ck_assert_int_eq(over.count, STORE_BINDINGS_SECRETS_MAX + 1);
	/* gh's new host would be the 16,001st. */
	over = (struct store_bind_over){ NULL, 0 };
	ck_assert_int_eq(store_manifest_put_over(st, "m",
			     "{\"egress\":[{\"host\":\"api.test\",\"inject\":"
			     "{\"header\":\"X\",\"secret\":\"gh\"}}]}",
			     "s2", "admin", &v, &prev, &added, &over),
	    -EDQUOT);
	ck_assert_str_eq(over.cap, "keys");
	ck_assert_int_eq(over.count, STORE_BINDINGS_KEYS_MAX + 1);
	/* Nothing written: no manifest m; a place bound already costs
	 * nothing. */
	struct manifest_version mv;
	ck_assert_int_eq(store_manifest_get(st, "m", 0, &mv), -ENOENT);
	ck_assert_int_eq(store_manifest_put_over(st, "m",
			     "{\"egress\":[{\"host\":\"h1.test\",\"inject\":"
			     "{\"header\":\"X\",\"secret\":\"gh\"}}]}",
			     "s3", "admin", &v, &prev, &added, &over),
	    0);
	ck_assert(added);
	json_decref(prev);
}
END_TEST

START_TEST(test_deleted_with_the_secret)
{
	bool added, found;
	int64_t e1, e2;

	secret_put("gh", 1, "[\"www.api.test\"]");
	secret_put("up", 1, NULL);
	ck_assert(manifest_put("m", m1, "s1"));
	ck_assert_int_eq(store_binding_seen(st, "gh", "127.0.0.1:8443", "job_a",
			     "verifier", &added, NULL),
	    0);
	ck_assert_str_eq(listed(&e1),
	    "gh addr 127.0.0.1:8443 seen; gh host api.test rule; gh host "
	    "www.api.test declared; up host up.test rule");
	ck_assert_int_eq(store_secret_delete(st, "gh", "admin", &found), 0);
	ck_assert(found);
	ck_assert_str_eq(listed(&e2), "up host up.test rule");
	ck_assert_int_gt(e2, e1);
	/* Put again: the stored manifests' rules bind it again, and what
	 * was declared and seen of the old one was kept (places, not the
	 * value: redteam3 #8). */
	secret_put("gh", 1, NULL);
	ck_assert_str_eq(listed(NULL),
	    "gh addr 127.0.0.1:8443 seen; gh host api.test rule; gh host "
	    "www.api.test declared; up host up.test rule");
}
END_TEST

START_TEST(test_scan_release_leaves_last_used)
{
	struct secret_meta meta;
	json_t *list, *d;

	secret_put("gh", 1, NULL);
	ck_assert_int_eq(store_secret_scanned(st, "gh", 1, "job_b", "api.test",
			     "127.0.0.1:8443", "verifier"),
	    0);
	ck_assert_int_eq(store_secret_get(st, "gh", &meta, NULL, NULL), 0);
	ck_assert_int_eq(meta.last_used, 0);
	ck_assert_int_eq(store_secret_scanned(st, "gh", 7, "job_b", "api.test",
			     NULL, "verifier"),
	    -ENOENT);
	ck_assert_int_eq(store_audit_list(st, "job_b", 0, 10, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "event")),
	    "secret_released");
	d = json_object_get(json_array_get(list, 0), "detail");
	if (json_is_string(d))
		d = testutil_json(json_string_value(d), 0);
	else
		json_incref(d);
	ck_assert_str_eq(json_string_value(json_object_get(d, "purpose")),
	    "scan");
	ck_assert_str_eq(json_string_value(json_object_get(d, "host")),
	    "api.test");
	ck_assert_str_eq(json_string_value(json_object_get(d, "addr")),
	    "127.0.0.1:8443");
	ck_assert_ptr_null(json_object_get(d, "value"));
	json_decref(d);
	json_decref(list);
	/* An injection's release sets it. */
	ck_assert_int_eq(store_secret_released(st, "gh", 1, "job_a",
			     "verifier"),
	    0);
	ck_assert_int_eq(store_secret_get(st, "gh", &meta, NULL, NULL), 0);
	ck_assert_int_gt(meta.last_used, 0);
}
END_TEST

/* A database as a broker before the bindings left it: no table, no
 * epoch, its schema version the one before; at open every manifest
 * version's injecting rules are bound. */
START_TEST(test_old_schema_backfilled)
{
	char text[160];
	int64_t epoch;

	secret_put("gh", 1, NULL);
	secret_put("up", 1, NULL);
	ck_assert(manifest_put("m", m1, "s1"));
	ck_assert(manifest_put("m", m2, "s2"));
	store_close(st);
	st = NULL;
	sql("DROP TABLE bindings");
	sql("DELETE FROM meta WHERE key = 'bindings_epoch'");
	snprintf(text, sizeof(text),
	    "UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
	    on_pg ? PG_SCHEMA_BEFORE : SQLITE_SCHEMA_BEFORE);
	sql(text);
	ck_assert_int_eq(store_open(addr, &st), 0);
	/* From version 1, which version 2 dropped. */
	ck_assert_str_eq(listed(&epoch),
	    "gh host api.test rule; up host up.test rule");
	ck_assert_int_gt(epoch, 0);
	/* Once: a reopen changes nothing. */
	store_close(st);
	ck_assert_int_eq(store_open(addr, &st), 0);
	ck_assert_str_eq(listed(NULL),
	    "gh host api.test rule; up host up.test rule");
}
END_TEST

static void
add_tests(TCase *tc)
{
	tcase_add_test(tc, test_rules_bound_by_the_manifest_put);
	tcase_add_test(tc, test_declared_hosts_replaced);
	tcase_add_test(tc, test_seen_added_once);
	tcase_add_test(tc, test_seen_capped_in_the_write);
	tcase_add_test(tc, test_manifest_put_says_which_cap);
	tcase_add_test(tc, test_deleted_with_the_secret);
	tcase_add_test(tc, test_scan_release_leaves_last_used);
	tcase_add_test(tc, test_old_schema_backfilled);
}

int
main(void)
{
	char err[512];
	Suite *s = suite_create("bindings");
	TCase *lite = tcase_create("sqlite"), *tpg = NULL;
	bool with_pg = pg_wanted();
	int rc;

	testutil_tmp_fixture(lite, "bindings");
	tcase_add_checked_fixture(lite, open_sqlite, close_store);
	tcase_set_timeout(lite, 60);
	add_tests(lite);
	suite_add_tcase(s, lite);
	if (with_pg) {
		if (pg_start(&pg, err, sizeof(err)) < 0) {
			fprintf(stderr, "check_bindings: %s\n", err);
			return 1;
		}
		tpg = tcase_create("pg");
		tcase_add_checked_fixture(tpg, open_pg, close_store);
		tcase_set_timeout(tpg, 120);
		add_tests(tpg);
		suite_add_tcase(s, tpg);
	} else
		printf("check_bindings: CORDON_TEST_NO_PG=1: PostgreSQL "
		       "skipped\n");
	rc = testutil_run(s);
	if (with_pg)
		pg_destroy(&pg);
	return rc;
}
