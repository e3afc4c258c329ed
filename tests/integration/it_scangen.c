/*
 * An issuer secret's scan set asked only when it changed (issue 18): a
 * job guarded at an issuer secret's bindings asked the broker for the
 * secret's whole scan set (every live credential of any job) at its
 * first guarded request after every list read, every 5 s: one broker
 * call and one audit record each, an audit that grew with time and the
 * number of guarded jobs. The bindings list now gives each issuer
 * secret a "scan_gen", a hash of its live credentials that moves when
 * one is obtained, revoked or expires (computed from the issuers' store,
 * so on PostgreSQL every broker of a fleet gives the same), and the
 * scan release answers the same number for the set it gave; the proxy
 * asks again only when the list's number moved.
 *
 * Cases, on sqlite and on PostgreSQL (the new credential obtained at
 * another broker of the fleet): list reads with no change add no scan
 * release of the guarded job's (before: one a read), one new credential
 * adds exactly one. No job is spawned (uid base 1507000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "issuerkit.h"
#include "pg.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char hosts[] = "127.0.0.1 api.test\n";

static struct pg_server pg;
static bool have_pg;

/* The stack: broker k->broker (and, with url, a second broker of the
 * same database in other: the fleet), the issuer's CA in dir, a proxy
 * reading the list every second. */
static void
stack(struct injectkit *k, struct daemon *other, const char *dir,
    const char *url)
{
	char cfg[2048], path[400], hostsf[400], store[500] = "";
	const char *roles[] = { "admin", "launcher", "verifier" };
	char *keys[] = { k->admin, k->launcher, k->verifier };

	k->up_pid = -1;
	signal(SIGPIPE, SIG_IGN);
	if (url != NULL)
		snprintf(store, sizeof(store), "\"store\": \"%s\", ", url);
	/* One keys directory: the fleet's brokers share it. */
	snprintf(cfg, sizeof(cfg),
	    "{%s\"keys_dir\": \"%s/keys\", \"pepper\": \"%s/pepper\", "
	    "\"log_level\": \"info\", \"issuer_ca_file\": \"%s/ca.pem\"}",
	    store, dir, dir, dir);
	ck_assert_int_eq(daemon_start(&k->broker, "broker", cfg), 0);
	if (url != NULL)
		ck_assert_int_eq(daemon_start(other, "broker", cfg), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/keys/%s.key", dir, roles[i]);
		ck_assert_int_eq(harness_read_line(path, keys[i], 128), 0);
	}
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", dir);
	harness_write_file(hostsf, hosts);
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	harness_write_file(path, k->verifier);
	char launcher_sha[80];
	snprintf(path, sizeof(path), "%s/keys/launcher.key", dir);
	snprintf(launcher_sha, sizeof(launcher_sha), "%s",
	    harness_key_sha256(path));
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "\"follower\": \"proxy-scangen\", \"bindings_refresh_seconds\": "
	    "1}",
	    k->broker.base, path, launcher_sha, hostsf);
	ck_assert_int_eq(daemon_start(&k->proxy, "proxy", cfg), 0);
}

/* A writer job's credential of up-key obtained at broker (a release as
 * its proxy would ask it). */
static void
credential(const struct injectkit *k, const struct daemon *broker)
{
	char path[300];
	json_t *j = harness_expect(broker, 201, "POST", "/v1/jobs", k->launcher,
	    NULL, json_pack("{s:s}", "manifest", "writer"));

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/up-key/release",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	json_decref(
	    harness_expect(broker, 200, "POST", path, k->verifier, NULL, NULL));
}

/* The job's scan releases in the audit (secret_released records of a
 * job that injects nothing). */
static int
scan_asks(const struct injectkit *k, const char *job)
{
	char path[200];
	json_t *a, *r;
	size_t i;
	int n = 0;

	snprintf(path, sizeof(path), "/v1/audit?job=%s&limit=1000", job);
	a = harness_expect(&k->broker, 200, "GET", path, k->admin, NULL, NULL);
	json_array_foreach(json_object_get(a, "records"), i, r)
	{
		const char *ev = json_string_value(json_object_get(r, "event"));
		const char *j = json_string_value(json_object_get(r, "job"));
		if (ev != NULL && strcmp(ev, "secret_released") == 0 &&
		    j != NULL && strcmp(j, job) == 0)
			n++;
	}
	json_decref(a);
	return n;
}

/* up-key's scan_gen in broker's list, 0 when none. */
static long long
scan_gen(const struct injectkit *k, const struct daemon *broker)
{
	json_t *l = harness_expect(broker, 200, "GET", "/v1/bindings",
		   k->verifier, NULL, NULL),
	       *b;
	long long gen = 0;
	size_t i;

	json_array_foreach(json_object_get(l, "bindings"), i, b)
	{
		if (strcmp(json_string_value(json_object_get(b, "secret")),
			"up-key") == 0)
			gen = (long long)json_integer_value(
			    json_object_get(b, "scan_gen"));
	}
	json_decref(l);
	return gen;
}

/* B's guarded GET of api.test's /open/what on chan: 200 asserted. */
static void
ask_b(const struct injectkit *k, const char *chan, const char *what)
{
	char req[1024], path[128];

	snprintf(path, sizeof(path), "/open/%s", what);
	injectkit_request_to(k, req, sizeof(req), "api.test", "GET", path,
	    false, "close");
	char *resp = injectkit_send_on(chan, req);
	ck_assert_msg(http_status(resp) == 200, "B's %s: %.300s", what, resp);
	free(resp);
}

static void
asked_once_a_change(const char *url)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *echo = upstream_start(NULL, NULL);
	struct daemon other;
	char dir[300], events[400], chan[300], id[64], url_rev[128],
	    url_tok[128];
	unsigned iport;
	pid_t ipid;

	ck_assert_ptr_nonnull(echo);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	ipid = issuerkit_start(dir, events, NULL, &iport);
	ck_assert_int_gt(ipid, 1);
	stack(&k, &other, dir, url);
	/* The fleet's other broker obtains the new credential (sqlite: the
	 * one broker). */
	const struct daemon *elsewhere = url != NULL ? &other : &k.broker;
	k.up_port = upstream_port(echo);
	snprintf(url_tok, sizeof(url_tok), "https://127.0.0.1:%u/oauth/token",
	    iport);
	snprintf(url_rev, sizeof(url_rev), "https://127.0.0.1:%u/oauth/revoke",
	    iport);
	json_decref(harness_expect(&k.broker, 200, "PUT", "/v1/secrets/up-key",
	    k.admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", url_tok, "client_id",
		"cordon-test", "client_secret", "s3cret-client", "scope",
		"things:read", "revocation_url", url_rev)));
	json_decref(harness_expect(&k.broker, 200, "PUT",
	    "/v1/manifests/writer", k.admin, NULL,
	    injectkit_manifest("writer",
		json_pack("[o]",
		    injectkit_inject_rule(&k, false, NULL, NULL)))));
	credential(&k, &k.broker);
	/* B reaches api.test, a rule's binding of up-key, injecting
	 * nothing: guarded, its answers scanned for every credential. */
	injectkit_job_open(&k, "reader",
	    injectkit_manifest("reader",
		json_pack("[{s:s, s:i, s:[s], s:[s], s:s, s:[s]}]", "host",
		    "api.test", "port", k.up_port, "methods", "GET", "paths",
		    "/open/", "reason", "the public part", "allow_cidrs",
		    "127.0.0.0/8")),
	    id, chan, NULL);
	long long gen0 = scan_gen(&k, &k.broker);
	ck_assert_msg(gen0 != 0, "no scan_gen in the list for up-key");
	ask_b(&k, chan, "first");
	ck_assert_int_eq(scan_asks(&k, id), 1);

	/* Five list reads (one a second), nothing issued: no more asks. */
	for (int i = 0; i < 5; i++) {
		usleep(1200 * 1000);
		ask_b(&k, chan, "unchanged");
	}
	ck_assert_msg(scan_asks(&k, id) == 1,
	    "%d scan releases of job B's over five list reads with no new "
	    "credential",
	    scan_asks(&k, id));
	ck_assert_int_eq(scan_gen(&k, &k.broker), gen0);

	/* One new credential: the list's number moves, B asks once. */
	credential(&k, elsewhere);
	long long gen1 = scan_gen(&k, &k.broker);
	ck_assert_msg(gen1 != gen0, "a new credential left scan_gen at %lld",
	    gen1);
	for (int i = 0; i < 50 && scan_asks(&k, id) < 2; i++) {
		usleep(200 * 1000);
		ask_b(&k, chan, "changed");
	}
	ck_assert_int_eq(scan_asks(&k, id), 2);
	for (int i = 0; i < 3; i++) {
		usleep(1200 * 1000);
		ask_b(&k, chan, "unchanged-again");
	}
	ck_assert_msg(scan_asks(&k, id) == 2,
	    "%d scan releases of job B's for two sets", scan_asks(&k, id));
	if (url != NULL)
		ck_assert_int_eq(daemon_stop(&other), 0);
	injectkit_stop(&k);
	upstream_stop(echo);
	issuerkit_kill(&ipid);
}

START_TEST(sqlite_asked_once_a_change)
{
	asked_once_a_change(NULL);
}
END_TEST

START_TEST(pg_asked_once_a_change_of_the_fleet)
{
	char url[400], name[64];

	snprintf(name, sizeof(name), "sg%d", (int)getpid());
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	asked_once_a_change(url);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("scangen");
	TCase *tc = tcase_create("sqlite");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sqlite_asked_once_a_change);
	suite_add_tcase(s, tc);
	if (have_pg) {
		TCase *tp = tcase_create("postgresql");
		tcase_set_timeout(tp, 60);
		tcase_add_test(tp, pg_asked_once_a_change_of_the_fleet);
		suite_add_tcase(s, tp);
	}
	return s;
}

int
main(void)
{
	char err[512];
	int rc;

	if (!pg_wanted()) {
		printf("it_scangen: CORDON_TEST_NO_PG=1: the PostgreSQL case "
		       "skipped\n");
	} else if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_scangen: %s\n", err);
		return 1;
	} else
		have_pg = true;
	rc = harness_main(suite());
	if (have_pg)
		pg_destroy(&pg);
	return rc;
}
