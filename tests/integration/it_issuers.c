/*
 * Short-lived upstream credentials (issue 18), on the real daemons with a
 * real issuer (jobs/issuers/issuer.py: the OAuth token and RFC 7009
 * revocation endpoints, GitHub's installation access_tokens and DELETE
 * /installation/token) on 127.0.0.1 over TLS by a test CA. An OAuth
 * client-credentials secret: a job's request through the proxy goes
 * upstream with the token the issuer gave (obtained once, then held),
 * and the job's revoke revokes it at the issuer and says so. A GitHub
 * App secret: the issuer verifies the broker's JWT with the App's public
 * key (signature, iss, iat, exp) and sees the narrowing; a JWT of another
 * key is refused; the revoke DELETEs the token. The issuer down at the
 * stop: the revoke answers the failure, and the job's own tokens are dead
 * all the same. A token endpoint that refuses: the job's request gets a
 * 502 naming the issuer, and a decision line. A broker killed and
 * restarted still revokes what it obtained; a lapsed lease revokes
 * upstream too. Then `cordon run`: the stop
 * path's result and summary line list the upstream revocations.
 */
#include "harness.h"
#include "injectkit.h"
#include "issuerkit.h"
#include "upstream.h"

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[300], ca[400], events[400];
static pid_t issuer_pid = -1;
static unsigned issuer_port;

static const char client_secret[] = "s3cret-client";

/* Runs a command line of the openssl tool (no shell), asserting it
 * worked. */
static void
openssl_run(char *const argv[])
{
	static char out[4096], err[4096];
	int st = harness_run(argv, out, sizeof(out), err, sizeof(err));

	ck_assert_msg(st == 0, "openssl failed (%d): %s", st, err);
}

/* An RSA key for a GitHub App at dir/name.key, its public half at
 * dir/name.pub. */
static void
app_key(const char *name)
{
	char key[400], pub[400];

	snprintf(key, sizeof(key), "%s/%s.key", dir, name);
	snprintf(pub, sizeof(pub), "%s/%s.pub", dir, name);
	char *gen[] = { "/usr/bin/openssl", "genpkey", "-algorithm", "RSA",
		"-pkeyopt", "rsa_keygen_bits:2048", "-out", key, NULL };
	openssl_run(gen);
	char *pubout[] = { "/usr/bin/openssl", "pkey", "-in", key, "-pubout",
		"-out", pub, NULL };
	openssl_run(pubout);
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rbe");
	static char data[1 << 20];
	size_t n;

	if (f == NULL)
		return strdup("");
	n = fread(data, 1, sizeof(data) - 1, f);
	fclose(f);
	data[n] = '\0';
	return strdup(data);
}

/* Starts the issuer with the App's public key dir/app.pub; with
 * refuse_revoke its revocation endpoints answer 503. */
static void
issuer_start(bool refuse_revoke)
{
	char pub[400];

	snprintf(pub, sizeof(pub), "%s/app.pub", dir);
	const char *args[] = { "--public-key", pub, "--client-secret",
		client_secret, refuse_revoke ? "--refuse-revoke" : NULL, NULL };
	issuer_pid = issuerkit_start(dir, events, args, &issuer_port);
}

static void
issuer_kill(void)
{
	issuerkit_kill(&issuer_pid);
}

/* The issuer's events so far, of kind event (NULL: all): a new array. */
static json_t *
issuer_events(const char *event)
{
	return issuerkit_events(events, event);
}

/* --- the broker and the proxy ------------------------------------------- */

static struct daemon broker, proxy;
static char admin[128], launcher[128], verifier[128];
static struct upstream *api;
static char channel[300];

static void
setup(void)
{
	char cfg[800];

	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	app_key("app");
	issuer_start(false);
	snprintf(cfg, sizeof(cfg),
	    "{\"log_level\": \"info\", \"issuer_ca_file\": \"%s\"}", ca);
	ck_assert_int_eq(daemon_start(&broker, "broker", cfg), 0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
}

static void
teardown(void)
{
	issuer_kill();
}

static json_t *
oauth_secret(const char *secret)
{
	char url[128], rev[128];

	snprintf(url, sizeof(url), "https://127.0.0.1:%u/oauth/token",
	    issuer_port);
	snprintf(rev, sizeof(rev), "https://127.0.0.1:%u/oauth/revoke",
	    issuer_port);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind",
	    "oauth_client_credentials", "token_url", url, "client_id",
	    "cordon-test", "client_secret", secret, "scope", "things:read",
	    "revocation_url", rev);
}

static json_t *
github_secret(const char *keyname)
{
	char path[400], api_url[128];
	char *pem;

	snprintf(path, sizeof(path), "%s/%s.key", dir, keyname);
	pem = slurp(path);
	snprintf(api_url, sizeof(api_url), "https://127.0.0.1:%u/",
	    issuer_port);
	json_t *j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:[s], s:{s:s}}",
	    "kind", "github_app", "app_id", 4242, "installation_id", "99",
	    "private_key", pem, "api", api_url, "repositories", "widgets",
	    "permissions", "contents", "read");
	free(pem);
	return j;
}

/* A manifest "name" whose rule to the echo upstream injects secret, and
 * a job of it: the job's id in job. */
static void
manifest_and_job(const char *name, const char *secret, char *job, size_t len)
{
	char path[200];
	json_t *m =
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
		"name", name, "command", "/bin/true", "capabilities", "name",
		"x.read", "audience", "api", "params", "t", "1", "ttl_seconds",
		600, "reason", "read x", "egress", "host", "api.test", "port",
		api != NULL ? upstream_port(api) : 9, "methods", "GET",
		"reason", "the api", "allow_cidrs", "127.0.0.0/8", "audience",
		"api", "inject", "secret", secret, "header", "Authorization",
		"format", "Bearer {secret}", "capability", "x.read");
	json_t *j;

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(harness_expect(&broker, 200, "PUT", path, admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", name));
	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

static json_t *
release(const char *job, const char *secret, long want)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/%s/release", job,
	    secret);
	return harness_expect(&broker, want, "POST", path, verifier, NULL,
	    NULL);
}

static json_t *
revoke_at_broker(const char *job)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	return harness_expect(&broker, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "done"));
}

static void
proxy_start(void)
{
	char cfg[2048], path[400], hostsf[400];

	snprintf(hostsf, sizeof(hostsf), "%s/hosts", dir);
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-issuers\"}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
}

static void
open_channel(const char *job)
{
	char path[200];
	json_t *j;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
}

static char *
send_on(const char *req)
{
	int fd = unix_connect(channel);
	char *out;

	if (fd < 0)
		return strdup("");
	out = http_exchange(fd, req, strlen(req), 15000);
	close(fd);
	return out != NULL ? out : strdup("");
}

/* The job's x.read token (injectkit_mint_on): free it. */
static char *
mint(void)
{
	char tok[512];

	injectkit_mint_on(channel, tok, sizeof(tok));
	return strdup(tok);
}

static char *
get_with(const char *tok)
{
	char req[512];

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/echo HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    upstream_port(api), upstream_port(api), tok);
	return send_on(req);
}

static bool
audited_now(const char *job, const char *event, const char *not_holding)
{
	char path[200];
	json_t *list, *r;
	size_t i;
	bool seen = false;

	snprintf(path, sizeof(path), "/v1/audit?job=%s", job);
	list = harness_expect(&broker, 200, "GET", path, admin, NULL, NULL);
	char *text = json_dumps(list, 0);
	if (not_holding != NULL)
		ck_assert_msg(strstr(text, not_holding) == NULL,
		    "the audit holds a value: %s", text);
	free(text);
	json_array_foreach(json_object_get(list, "records"), i, r) seen |=
	    strcmp(json_string_value(json_object_get(r, "event")), event) == 0;
	json_decref(list);
	return seen;
}

/* Whether job's audit has event (written without waiting for the
 * commit: looked for up to 10 s), holding no not_holding anywhere. */
static bool
audited(const char *job, const char *event, const char *not_holding)
{
	for (int i = 0; i < 100; i++) {
		if (audited_now(job, event, not_holding))
			return true;
		usleep(100000);
	}
	return false;
}

START_TEST(oauth_token_injected_held_and_revoked_at_stop)
{
	char job[64], *tok, *resp, *head, want[128];
	json_t *j, *evs, *up, *e;
	const char *issued;

	api = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(api);
	proxy_start();
	j = harness_expect(&broker, 200, "PUT", "/v1/secrets/things-api", admin,
	    NULL, oauth_secret(client_secret));
	ck_assert_str_eq(json_string_value(json_object_get(j, "kind")),
	    "oauth_client_credentials");
	json_decref(j);
	/* Its metadata shows the issuer, never the client secret. */
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/things-api", admin,
	    NULL, NULL);
	char *text = json_dumps(j, 0);
	ck_assert_msg(strstr(text, client_secret) == NULL, "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "/oauth/token"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "client_id")),
	    "cordon-test");
	free(text);
	json_decref(j);

	manifest_and_job("things", "things-api", job, sizeof(job));
	open_channel(job);
	tok = mint();
	resp = get_with(tok);
	ck_assert_msg(http_status(resp) == 200, "%.600s", resp);
	free(resp);
	evs = issuer_events("token");
	ck_assert_uint_eq(json_array_size(evs), 1);
	e = json_array_get(evs, 0);
	ck_assert(json_is_true(json_object_get(e, "client_ok")));
	ck_assert(json_is_true(json_object_get(e, "form_ctype")));
	ck_assert_str_eq(json_string_value(json_object_get(e, "auth")),
	    "basic");
	ck_assert_str_eq(json_string_value(json_object_get(e, "grant_type")),
	    "client_credentials");
	ck_assert_str_eq(json_string_value(json_object_get(e, "scope")),
	    "things:read");
	issued = json_string_value(json_object_get(e, "token"));
	head = upstream_last_head(api);
	snprintf(want, sizeof(want), "Authorization: Bearer %s\r\n", issued);
	ck_assert_msg(strstr(head, want) != NULL, "%s", head);
	ck_assert_ptr_null(strstr(head, "crd_"));
	free(head);
	/* Held for the job: the second request asks the issuer nothing. */
	resp = get_with(tok);
	ck_assert_msg(http_status(resp) == 200, "%.600s", resp);
	free(resp);
	json_decref(issuer_events("token"));
	json_t *again = issuer_events("token");
	ck_assert_uint_eq(json_array_size(again), 1);
	json_decref(again);
	ck_assert_int_eq(injectkit_metric(&broker,
			     "cordon_broker_upstream_issued_total"),
	    1);

	/* The revoke: RFC 7009 at the issuer, and the answer lists it. */
	j = revoke_at_broker(job);
	up = json_object_get(j, "upstream");
	ck_assert_uint_eq(json_array_size(up), 1);
	e = json_array_get(up, 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "secret")),
	    "things-api");
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")),
	    "oauth_client_credentials");
	ck_assert(json_is_true(json_object_get(e, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 200);
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(e, "issuer")),
		"/oauth/token"));
	json_decref(j);
	json_t *revs = issuer_events("revoke");
	ck_assert_uint_eq(json_array_size(revs), 1);
	e = json_array_get(revs, 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "token")),
	    issued);
	ck_assert_str_eq(json_string_value(json_object_get(e, "hint")),
	    "access_token");
	ck_assert(json_is_true(json_object_get(e, "client_ok")));
	ck_assert(json_is_true(json_object_get(e, "was_live")));
	json_decref(revs);
	ck_assert_int_eq(injectkit_metric(&broker,
			     "cordon_broker_upstream_revoked_total"),
	    1);
	ck_assert(audited(job, "upstream_issued", issued));
	ck_assert(audited(job, "upstream_revoked", issued));
	/* After the stop the old token reaches nothing. */
	unsigned before = upstream_requests(api);
	resp = get_with(tok);
	ck_assert_int_ne(http_status(resp), 200);
	free(resp);
	ck_assert_uint_eq(upstream_requests(api), before);
	json_decref(evs);
	free(tok);
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	upstream_stop(api);
	api = NULL;
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

START_TEST(github_app_jwt_verified_narrowed_and_deleted)
{
	char job[64];
	json_t *j, *evs, *e, *up;
	const char *value;

	app_key("other");
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/gh-app",
	    admin, NULL, github_secret("app")));
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/gh-forged",
	    admin, NULL, github_secret("other")));
	/* Not an RSA key of 2048 bits: refused at the PUT. */
	json_t *bad = github_secret("app");
	json_object_set_new(bad, "private_key", json_string("-----BEGIN x"));
	json_decref(harness_expect(&broker, 422, "PUT", "/v1/secrets/gh-bad",
	    admin, NULL, bad));
	/* Plain http to anything but loopback: refused. */
	bad = oauth_secret(client_secret);
	json_object_set_new(bad, "token_url",
	    json_string("http://issuer.example/token"));
	json_decref(harness_expect(&broker, 422, "PUT", "/v1/secrets/o-bad",
	    admin, NULL, bad));

	manifest_and_job("gh", "gh-app", job, sizeof(job));
	j = release(job, "gh-app", 200);
	ck_assert_str_eq(json_string_value(json_object_get(j, "source")),
	    "github_app");
	ck_assert_int_gt(json_integer_value(json_object_get(j, "expires")), 0);
	value = json_string_value(json_object_get(j, "value"));
	ck_assert_ptr_nonnull(value);
	ck_assert_int_eq(strncmp(value, "ghs_", 4), 0);
	evs = issuer_events("gh_token");
	ck_assert_uint_eq(json_array_size(evs), 1);
	e = json_array_get(evs, 0);
	ck_assert_msg(json_is_true(json_object_get(e, "jwt_ok")), "%s",
	    json_string_value(json_object_get(e, "jwt_why")));
	ck_assert_str_eq(json_string_value(json_object_get(e, "iss")), "4242");
	ck_assert_int_le(json_integer_value(json_object_get(e, "span")), 600);
	ck_assert_str_eq(json_string_value(json_object_get(e, "installation")),
	    "99");
	ck_assert_str_eq(json_string_value(json_object_get(e, "token")), value);
	char *body = json_dumps(json_object_get(e, "body"), JSON_SORT_KEYS);
	ck_assert_str_eq(body,
	    "{\"permissions\": {\"contents\": \"read\"}, \"repositories\": "
	    "[\"widgets\"]}");
	free(body);
	json_decref(evs);

	/* A JWT of a key that is not the App's: the issuer refuses it, and
	 * the release says so (502, not a hang, not a value). */
	char job2[64];
	manifest_and_job("gh-forged", "gh-forged", job2, sizeof(job2));
	json_t *f = release(job2, "gh-forged", 502);
	ck_assert_str_eq(json_string_value(json_object_get(f, "error")),
	    "issuer_refused");
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(f, "message")), "401"));
	json_decref(f);
	evs = issuer_events("gh_token");
	ck_assert_uint_eq(json_array_size(evs), 2);
	ck_assert(
	    !json_is_true(json_object_get(json_array_get(evs, 1), "jwt_ok")));
	json_decref(evs);
	ck_assert(audited(job2, "upstream_issue_failed", NULL));

	up = revoke_at_broker(job);
	e = json_array_get(json_object_get(up, "upstream"), 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")),
	    "github_app");
	ck_assert(json_is_true(json_object_get(e, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 204);
	evs = issuer_events("gh_revoke");
	ck_assert_uint_eq(json_array_size(evs), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(evs, 0), "token")),
	    value);
	ck_assert(
	    json_is_true(json_object_get(json_array_get(evs, 0), "was_live")));
	json_decref(evs);
	ck_assert(audited(job, "upstream_revoked", value));
	json_decref(up);
	json_decref(j);
	/* A revoked job's release gets nothing from the issuer. */
	json_decref(release(job, "gh-app", 409));
	evs = issuer_events("gh_token");
	ck_assert_uint_eq(json_array_size(evs), 2);
	json_decref(evs);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

START_TEST(issuer_down_at_stop_is_reported_and_the_job_still_dies)
{
	char job[64], path[200];
	json_t *j, *e, *tok;
	const char *t;

	json_decref(
	    harness_expect(&broker, 200, "PUT", "/v1/secrets/things-api", admin,
		NULL, oauth_secret(client_secret)));
	manifest_and_job("things", "things-api", job, sizeof(job));
	json_decref(release(job, "things-api", 200));
	snprintf(path, sizeof(path), "X-Cordon-Job: %s", job);
	tok = harness_expect(&broker, 200, "POST", "/v1/token", verifier, path,
	    json_pack("{s:s, s:{s:s}}", "capability", "x.read", "params", "t",
		"1"));
	t = json_string_value(json_object_get(tok, "access_token"));
	ck_assert_ptr_nonnull(t);
	ck_assert(harness_token_active(&broker, verifier, t));

	issuer_kill();
	j = revoke_at_broker(job);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "revoked");
	e = json_array_get(json_object_get(j, "upstream"), 0);
	ck_assert_ptr_nonnull(e);
	ck_assert(json_is_false(json_object_get(e, "ok")));
	ck_assert_msg(strstr(json_string_value(json_object_get(e, "error")),
			  "connection refused") != NULL,
	    "%s", json_string_value(json_object_get(e, "error")));
	json_decref(j);
	ck_assert(!harness_token_active(&broker, verifier, t));
	ck_assert_int_eq(injectkit_metric(&broker,
			     "cordon_broker_upstream_revoke_failures_total"),
	    1);
	ck_assert(audited(job, "upstream_revoke_failed", NULL));
	json_decref(tok);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

START_TEST(a_restarted_broker_still_revokes_what_it_obtained)
{
	char job[64];
	json_t *j, *e, *revs;
	char *value;

	json_decref(
	    harness_expect(&broker, 200, "PUT", "/v1/secrets/things-api", admin,
		NULL, oauth_secret(client_secret)));
	manifest_and_job("things", "things-api", job, sizeof(job));
	j = release(job, "things-api", 200);
	value = strdup(json_string_value(json_object_get(j, "value")));
	json_decref(j);
	/* Killed, not stopped: what it held must be on disk already, and
	 * never in clear. */
	daemon_kill(&broker);
	char path[400];
	snprintf(path, sizeof(path), "%s/var/broker/issued.sealed", broker.dir);
	char *disk = slurp(path);
	ck_assert_ptr_null(strstr(disk, value));
	ck_assert_ptr_null(strstr(disk, client_secret));
	free(disk);
	ck_assert_int_eq(daemon_restart(&broker), 0);
	/* Held across the restart: the issuer is not asked again. */
	j = release(job, "things-api", 200);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")), value);
	json_decref(j);
	revs = issuer_events("token");
	ck_assert_uint_eq(json_array_size(revs), 1);
	json_decref(revs);
	j = revoke_at_broker(job);
	e = json_array_get(json_object_get(j, "upstream"), 0);
	ck_assert_msg(e != NULL,
	    "the restarted broker revoked nothing upstream");
	ck_assert(json_is_true(json_object_get(e, "ok")));
	json_decref(j);
	revs = issuer_events("revoke");
	ck_assert_uint_eq(json_array_size(revs), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(revs, 0), "token")),
	    value);
	json_decref(revs);
	free(value);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

/* A job whose lease lapses (its launcher gone): the broker's own revoke
 * revokes its upstream credentials too, audited as the broker's. */
START_TEST(a_lapsed_lease_revokes_upstream_too)
{
	char cfg[600], job[64], path[200];
	json_t *revs = NULL, *list, *r;
	size_t i;
	bool by_broker = false;

	ck_assert_int_eq(daemon_stop(&broker), 0);
	snprintf(cfg, sizeof(cfg),
	    "{\"log_level\": \"info\", \"issuer_ca_file\": \"%s\", "
	    "\"lease_seconds\": 2}",
	    ca);
	ck_assert_int_eq(daemon_start(&broker, "broker", cfg), 0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	json_decref(
	    harness_expect(&broker, 200, "PUT", "/v1/secrets/things-api", admin,
		NULL, oauth_secret(client_secret)));
	manifest_and_job("things", "things-api", job, sizeof(job));
	json_decref(release(job, "things-api", 200));
	/* No heartbeat: the sweep revokes the job, then the issuer hears. */
	for (int n = 0; n < 150; n++) {
		json_decref(revs);
		revs = issuer_events("revoke");
		if (json_array_size(revs) > 0)
			break;
		usleep(100000);
	}
	ck_assert_uint_eq(json_array_size(revs), 1);
	ck_assert(
	    json_is_true(json_object_get(json_array_get(revs, 0), "was_live")));
	json_decref(revs);
	ck_assert(audited(job, "upstream_revoked", NULL));
	snprintf(path, sizeof(path), "/v1/audit?job=%s", job);
	list = harness_expect(&broker, 200, "GET", path, admin, NULL, NULL);
	json_array_foreach(json_object_get(list, "records"), i, r) by_broker |=
	    strcmp(json_string_value(json_object_get(r, "event")),
		"upstream_revoked") == 0 &&
	    strcmp(json_string_value(json_object_get(r, "actor")) ?: "",
		"broker") == 0;
	json_decref(list);
	ck_assert(by_broker);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

START_TEST(a_refusing_token_endpoint_is_a_502_with_a_decision_line)
{
	char job[64], *tok, *resp;
	json_t *lines, *l;
	size_t i;
	bool seen = false;

	api = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(api);
	proxy_start();
	json_decref(
	    harness_expect(&broker, 200, "PUT", "/v1/secrets/things-api", admin,
		NULL, oauth_secret("not-the-secret")));
	manifest_and_job("things", "things-api", job, sizeof(job));
	open_channel(job);
	tok = mint();
	resp = get_with(tok);
	ck_assert_msg(http_status(resp) == 502, "%.600s", resp);
	ck_assert_msg(strstr(resp, "issuer_refused") != NULL, "%.600s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(api), 0);
	lines = daemon_log_lines(&proxy);
	json_array_foreach(lines, i, l)
	{
		const char *d =
		    json_string_value(json_object_get(l, "decision"));
		const char *det =
		    json_string_value(json_object_get(l, "detail"));
		seen |= d != NULL && det != NULL && strcmp(d, "error") == 0 &&
		    strcmp(det, "issuer_refused") == 0 &&
		    json_integer_value(json_object_get(l, "status")) == 502;
	}
	json_decref(lines);
	ck_assert_msg(seen, "no decision line for the issuer's refusal");
	ck_assert_int_eq(injectkit_metric(&broker,
			     "cordon_broker_upstream_issue_failures_total"),
	    1);

	/* The issuer away: 503, issuer_unavailable. */
	issuer_kill();
	json_decref(
	    harness_expect(&broker, 200, "PUT", "/v1/secrets/things-api", admin,
		NULL, oauth_secret(client_secret)));
	resp = get_with(tok);
	ck_assert_msg(http_status(resp) == 503, "%.600s", resp);
	ck_assert_msg(strstr(resp, "issuer_unavailable") != NULL, "%.600s",
	    resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(api), 0);
	free(tok);
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	upstream_stop(api);
	api = NULL;
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

/* --- a job of `cordon run` ------------------------------------------------- */

static json_t *
run_job(const struct stack *st, const char *script, bool json, char *err,
    size_t errlen)
{
	static char out[1 << 20];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", (char *)st->launcher_cfg, "--manifest", "iss-job",
		"--", "/bin/sh", "-c", (char *)script, NULL };
	if (!json)
		for (size_t i = 2; argv[i] != NULL; i++)
			argv[i] = argv[i + 1];
	int status =
	    harness_run_for(argv, 50000, out, sizeof(out), err, errlen);
	if (!json)
		return NULL;
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	return j;
}

/* A job of script whose cordon run is killed once the job printed its
 * id, then cordon recover: it lists the upstream revocation. */
static void
recover_lists_upstream(const struct stack *st, const char *script)
{
	static char out[1 << 16], err[1 << 16];
	char line[512] = "", full[2300],
	     *argv[] = { (char *)harness_bin("cordon"), "recover", "--json",
		     "--config", (char *)st->launcher_cfg, NULL };
	size_t n = 0, i;
	int p[2], status;
	json_t *j, *e, *list = NULL;

	snprintf(full, sizeof(full), "%s; echo JOB=$CORDON_JOB; sleep 60",
	    script);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execl(harness_bin("cordon"), "cordon", "run", "--config",
		    st->launcher_cfg, "--manifest", "iss-job", "--", "/bin/sh",
		    "-c", full, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (strstr(line, "JOB=") == NULL ||
	    strchr(strstr(line, "JOB="), '\n') == NULL) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ck_assert_msg(n < sizeof(line) - 1 && poll(&pf, 1, 30000) == 1,
		    "no JOB= line: %s", line);
		ssize_t k = read(p[0], line + n, sizeof(line) - 1 - n);
		ck_assert_msg(k > 0, "no JOB= line: %s", line);
		n += (size_t)k;
		line[n] = '\0';
	}
	close(p[0]);
	ck_assert_msg(strstr(line, "status=200") != NULL, "%s", line);
	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);

	status =
	    harness_run_for(argv, 30000, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "recover %d: %s %s", status, out, err);
	json_array_foreach(json_object_get(j, "jobs"), i, e) list =
	    json_object_get(e, "upstream_revocations");
	ck_assert_msg(json_array_size(list) == 1, "recover listed: %s", out);
	e = json_array_get(list, 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "secret")),
	    "things-api");
	ck_assert(json_is_true(json_object_get(e, "ok")));
	json_decref(j);
}

START_TEST(cordon_run_lists_the_upstream_revocations)
{
	static struct stack st;
	static char err[1 << 16];
	char cfg[600], script[2048];
	struct stack_options o = { .uid_base = 560000,
		.hosts = "127.0.0.1 api.test\n" };
	json_t *m, *j, *list, *e;

	api = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(api);
	/* The fixture's broker is not this stack's. */
	ck_assert_int_eq(daemon_stop(&broker), 0);
	snprintf(cfg, sizeof(cfg), "{\"issuer_ca_file\": \"%s\"}", ca);
	o.broker_config = cfg;
	stack_start(&st, &o);
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", "/v1/secrets/things-api",
		st.admin, NULL, oauth_secret(client_secret)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}], s:{s:i}}",
	    "name", "iss-job", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", "host", "api.test", "port",
	    upstream_port(api), "methods", "GET", "reason", "the api",
	    "allow_cidrs", "127.0.0.0/8", "audience", "api", "inject", "secret",
	    "things-api", "header", "Authorization", "format",
	    "Bearer {secret}", "capability", "x.read", "limits", "wall_seconds",
	    60);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/iss-job", st.admin, NULL, m));
	snprintf(script, sizeof(script),
	    "TOK=$(curl -s -X POST http://broker.cordon/v1/token -d "
	    "'{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}' | "
	    "sed 's/.*\"access_token\":\"\\([^\"]*\\)\".*/\\1/'); "
	    "echo status=$(curl -s -o /dev/null -w '%%{http_code}' -H "
	    "\"Authorization: Bearer $TOK\" http://api.test:%u/echo)",
	    upstream_port(api));

	/* The result lists the revocation at the issuer. */
	j = run_job(&st, script, true, err, sizeof(err));
	const char *out = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_msg(out != NULL && strstr(out, "status=200") != NULL, "%s",
	    out);
	list = json_object_get(j, "upstream_revocations");
	ck_assert_msg(json_array_size(list) == 1, "%s", json_dumps(j, 0));
	e = json_array_get(list, 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "secret")),
	    "things-api");
	ck_assert(json_is_true(json_object_get(e, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 200);
	json_decref(j);
	json_t *revs = issuer_events("revoke");
	ck_assert_uint_eq(json_array_size(revs), 1);
	json_decref(revs);

	/* An issuer that refuses the revocation: the summary line says so,
	 * and which one. */
	issuer_kill();
	issuer_start(true);
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", "/v1/secrets/things-api",
		st.admin, NULL, oauth_secret(client_secret)));
	run_job(&st, script, false, err, sizeof(err));
	ck_assert_msg(strstr(err,
			  "0 upstream credential(s) revoked at their "
			  "issuers, 1 REVOCATION(S) FAILED") != NULL,
	    "%s", err);
	ck_assert_msg(strstr(err,
			  "the upstream credential of secret "
			  "things-api (oauth_client_credentials) was "
			  "not revoked at its issuer: the revocation "
			  "endpoint answered 503: "
			  "temporarily_unavailable") != NULL,
	    "%s", err);

	/* cordon run killed with its job holding a credential: cordon
	 * recover revokes it at the issuer and lists it, as run does. */
	issuer_kill();
	issuer_start(false);
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", "/v1/secrets/things-api",
		st.admin, NULL, oauth_secret(client_secret)));
	recover_lists_upstream(&st, script);
	stack_stop(&st);
	upstream_stop(api);
	api = NULL;
}
END_TEST

static Suite *
issuers_suite(void)
{
	Suite *s = suite_create("issuers");
	TCase *tc = tcase_create("broker");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, oauth_token_injected_held_and_revoked_at_stop);
	tcase_add_test(tc, github_app_jwt_verified_narrowed_and_deleted);
	tcase_add_test(tc,
	    issuer_down_at_stop_is_reported_and_the_job_still_dies);
	tcase_add_test(tc,
	    a_refusing_token_endpoint_is_a_502_with_a_decision_line);
	tcase_add_test(tc, a_restarted_broker_still_revokes_what_it_obtained);
	tcase_add_test(tc, a_lapsed_lease_revokes_upstream_too);
	suite_add_tcase(s, tc);
	tc = tcase_create("job");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, cordon_run_lists_the_upstream_revocations);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(issuers_suite());
}
