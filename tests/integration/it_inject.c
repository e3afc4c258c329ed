/*
 * Credentials injected at the proxy (issue 18), the broker's half, on the
 * real daemon: a secret PUT is sealed (the value is in no answer, no log
 * and not in the database in clear), listed and read as metadata only,
 * rotated by a new PUT (the next version), deleted; a manifest whose
 * egress injects a secret the broker lacks is refused; a verifier
 * releases the current version for a running job whose manifest names
 * it (audited: name, version, job), and nothing for a stopped job, a
 * secret the manifest does not name, or another role. Then the proxy's
 * half: a job's request with its token for the rule's capability goes
 * upstream with the credential instead (the token dropped), one without
 * is refused, an upstream that echoes the request's headers has the
 * value redacted before the job reads it (secret_reflected), and after
 * the job is revoked the old token gets nothing.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

static const char value1[] = "sk_live_upstream_0123456789abcdef";
static const char value2[] = "sk_live_rotated_fedcba9876543210";

static const char manifest[] =
    "{\"name\": \"gh-reader\", \"command\": [\"/bin/true\"],"
    " \"capabilities\": [{\"name\": \"repo.read\", \"audience\": \"github\","
    "   \"params\": {\"repo\": [\"widgets\"]}, \"ttl_seconds\": 300,"
    "   \"reason\": \"read a repository\"}],"
    " \"egress\": [{\"host\": \"api.github.com\", \"methods\": [\"GET\"],"
    "   \"paths\": [\"/repos/acme/\"], \"tls\": \"terminate\","
    "   \"audience\": \"github\", \"reason\": \"read the repository\","
    "   \"inject\": {\"secret\": \"github-ro\", \"header\": "
    "\"Authorization\","
    "    \"format\": \"Bearer {secret}\", \"capability\": \"repo.read\"}}]}";

static void
start(void)
{
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&broker), 0);
}

/* Whether file path holds needle anywhere. */
static bool
file_holds(const char *path, const char *needle)
{
	FILE *f = fopen(path, "rbe");
	static char data[8 << 20];
	size_t n;

	if (f == NULL)
		return false;
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	return memmem(data, n, needle, strlen(needle)) != NULL;
}

static json_t *
put_secret(const char *name, const char *value, long want)
{
	return harness_expect(&broker, want, "PUT", name, admin, NULL,
	    json_pack("{s:s}", "value", value));
}

START_TEST(secrets_are_sealed_metadata_only_and_rotate)
{
	json_t *j;
	char *text;

	j = put_secret("/v1/secrets/github-ro", value1, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 1);
	ck_assert_ptr_null(json_object_get(j, "value"));
	json_decref(j);
	j = put_secret("/v1/secrets/github-ro", value2, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 2);
	json_decref(j);

	j = harness_expect(&broker, 200, "GET", "/v1/secrets/github-ro", admin,
	    NULL, NULL);
	text = json_dumps(j, 0);
	ck_assert_ptr_null(strstr(text, value1));
	ck_assert_ptr_null(strstr(text, value2));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "last_used")),
	    0);
	free(text);
	json_decref(j);
	j = harness_expect(&broker, 200, "GET", "/v1/secrets", admin, NULL,
	    NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "secrets")), 1);
	text = json_dumps(j, 0);
	ck_assert_ptr_null(strstr(text, value2));
	free(text);
	json_decref(j);

	/* Only the admin, and only values fit for a header. */
	json_decref(harness_expect(&broker, 403, "GET", "/v1/secrets", verifier,
	    NULL, NULL));
	json_decref(harness_expect(&broker, 403, "PUT", "/v1/secrets/x",
	    launcher, NULL, json_pack("{s:s}", "value", value1)));
	json_decref(put_secret("/v1/secrets/x", "two\r\nlines", 422));
	json_decref(put_secret("/v1/secrets/Bad_Name", value1, 422));
	json_decref(harness_expect(&broker, 422, "PUT", "/v1/secrets/x", admin,
	    NULL, json_pack("{s:s, s:s}", "value", value1, "extra", "no")));

	json_decref(harness_expect(&broker, 200, "DELETE",
	    "/v1/secrets/github-ro", admin, NULL, NULL));
	json_decref(harness_expect(&broker, 404, "GET", "/v1/secrets/github-ro",
	    admin, NULL, NULL));
	json_decref(harness_expect(&broker, 404, "DELETE",
	    "/v1/secrets/github-ro", admin, NULL, NULL));

	/* Neither the log nor the database holds a value in clear. */
	char path[400];
	ck_assert(!file_holds(broker.log, value1));
	ck_assert(!file_holds(broker.log, value2));
	snprintf(path, sizeof(path), "%s/var/broker/broker.db", broker.dir);
	ck_assert(!file_holds(path, value1));
	snprintf(path, sizeof(path), "%s/var/broker/broker.db-wal", broker.dir);
	ck_assert(!file_holds(path, value1));
}
END_TEST

START_TEST(release_to_a_running_job_only)
{
	json_t *m = json_loads(manifest, 0, NULL), *j, *list, *r;
	char path[256], *job;
	size_t i;
	bool audited = false;

	ck_assert_ptr_nonnull(m);
	/* Refused until the secret exists. */
	j = harness_expect(&broker, 422, "PUT", "/v1/manifests/gh-reader",
	    admin, NULL, json_incref(m));
	char *probs = json_dumps(json_object_get(j, "problems"), 0);
	ck_assert_ptr_nonnull(strstr(probs, "egress[0].inject.secret"));
	free(probs);
	json_decref(j);
	json_decref(put_secret("/v1/secrets/github-ro", value1, 200));
	json_decref(put_secret("/v1/secrets/other", value2, 200));
	json_decref(harness_expect(&broker, 200, "PUT",
	    "/v1/manifests/gh-reader", admin, NULL, m));
	/* Which manifests name each secret. */
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/github-ro", admin,
	    NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "manifests")), 1);
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(j, "manifests"),
				 0)),
	    "gh-reader");
	json_decref(j);
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/other", admin,
	    NULL, NULL);
	ck_assert(json_is_array(json_object_get(j, "manifests")));
	ck_assert_uint_eq(json_array_size(json_object_get(j, "manifests")), 0);
	json_decref(j);
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "gh-reader"));
	job = strdup(json_string_value(json_object_get(j, "job")));
	json_decref(j);

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/github-ro/release",
	    job);
	json_decref(
	    harness_expect(&broker, 403, "POST", path, launcher, NULL, NULL));
	json_decref(
	    harness_expect(&broker, 403, "POST", path, admin, NULL, NULL));
	j = harness_expect(&broker, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    value1);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(j, "source")),
	    "static");
	json_decref(j);
	/* Rotation: the next release is the new version. */
	json_decref(put_secret("/v1/secrets/github-ro", value2, 200));
	j = harness_expect(&broker, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    value2);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 2);
	json_decref(j);
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/github-ro", admin,
	    NULL, NULL);
	ck_assert_int_gt(json_integer_value(json_object_get(j, "last_used")),
	    0);
	json_decref(j);

	/* A secret the manifest does not name: nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/other/release", job);
	json_decref(
	    harness_expect(&broker, 403, "POST", path, verifier, NULL, NULL));

	/* Audited with name, version and job; never the value. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s", job);
	list = harness_expect(&broker, 200, "GET", path, admin, NULL, NULL);
	char *text = json_dumps(list, 0);
	ck_assert_ptr_null(strstr(text, value1));
	ck_assert_ptr_null(strstr(text, value2));
	free(text);
	json_array_foreach(json_object_get(list, "records"), i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "event")),
			"secret_released") == 0 &&
		    json_integer_value(
			json_object_get(json_object_get(r, "detail"),
			    "version")) == 2)
			audited = true;
	}
	json_decref(list);
	ck_assert(audited);

	/* A stopped job: nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(harness_expect(&broker, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "done")));
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/github-ro/release",
	    job);
	json_decref(
	    harness_expect(&broker, 409, "POST", path, verifier, NULL, NULL));
	ck_assert(!file_holds(broker.log, value1));
	ck_assert(!file_holds(broker.log, value2));
	free(job);
}
END_TEST

/* --- the proxy's half ------------------------------------------------------ */

static struct daemon proxy;
static struct upstream *plain;
static char channel[300];

static char *
mint_body(const char *chan, const char *body)
{
	char req[512], *resp, *tok, *end;

	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	tok = strstr(resp, "crd_");
	ck_assert_ptr_nonnull(tok);
	end = strchr(tok, '"');
	*end = '\0';
	tok = strdup(tok);
	free(resp);
	return tok;
}

static char *
mint_via(const char *chan)
{
	return mint_body(chan,
	    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}");
}

static char *
get_with(const char *tok)
{
	char req[512], auth[128] = "";

	if (tok != NULL)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    tok);
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/echo HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "%sX-Api-Key: job-chosen\r\nConnection: close\r\n\r\n",
	    upstream_port(plain), upstream_port(plain), auth);
	return injectkit_send_on(channel, req);
}

START_TEST(the_proxy_swaps_the_token_and_redacts_the_echo)
{
	char cfg[2048], path[400], hostsf[400];
	json_t *m, *j;
	char *tok, *resp, *head, job[64];

	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-inject\"}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);

	json_decref(put_secret("/v1/secrets/up-key", value1, 200));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
	    "name", "inject-test", "command", "/bin/true", "capabilities",
	    "name", "x.read", "audience", "api", "params", "t", "1",
	    "ttl_seconds", 600, "reason", "read x", "egress", "host",
	    "api.test", "port", upstream_port(plain), "methods", "GET",
	    "reason", "the api", "allow_cidrs", "127.0.0.0/8", "audience",
	    "api", "inject", "secret", "up-key", "header", "X-Api-Key",
	    "format", "Key {secret}", "capability", "x.read");
	json_decref(harness_expect(&broker, 200, "PUT",
	    "/v1/manifests/inject-test", admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "inject-test"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);

	/* No token of the capability: refused, nothing went upstream. */
	resp = get_with(NULL);
	ck_assert_msg(http_status(resp) == 403, "%.300s", resp);
	ck_assert_ptr_nonnull(strstr(resp, "inject_needs_token"));
	ck_assert_ptr_null(upstream_last_head(plain));
	free(resp);

	tok = mint_via(channel);
	resp = get_with(tok);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	head = upstream_last_head(plain);
	ck_assert_ptr_nonnull(head);
	char want[128];
	snprintf(want, sizeof(want), "X-Api-Key: Key %s\r\n", value1);
	ck_assert_msg(strstr(head, want) != NULL, "%s", head);
	ck_assert_ptr_null(strstr(head, "crd_"));
	ck_assert_ptr_null(strstr(head, "job-chosen"));
	free(head);
	/* The upstream echoed the headers: the job reads them redacted. */
	ck_assert_ptr_nonnull(strstr(resp, "X-Api-Key"));
	ck_assert_msg(strstr(resp, value1) == NULL, "%s", resp);
	free(resp);
	ck_assert(file_holds(proxy.log, "secret_reflected"));
	{
		char cmd[256], line[256];
		long st = 0;
		bool inj = false, refl = false;
		snprintf(cmd, sizeof(cmd), "curl -s %s/metrics", proxy.base);
		FILE *f = popen(cmd, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f) != NULL) {
			inj |= strcmp(line,
				   "cordon_proxy_injections_total 1\n") == 0;
			refl |= strncmp(line, "cordon_proxy_reflections_total ",
				    31) == 0 &&
			    line[31] != '0';
		}
		st = pclose(f);
		ck_assert_int_eq(st, 0);
		ck_assert(inj);
		ck_assert(refl);
	}
	ck_assert(!file_holds(proxy.log, value1));

	/* Echoed in 5-byte chunks: the value split by the framing is
	 * redacted all the same, the framing kept. */
	{
		char req[512], data[8192];
		size_t n = 0;
		snprintf(req, sizeof(req),
		    "GET http://api.test:%u/echo-chunked HTTP/1.1\r\n"
		    "Host: api.test:%u\r\nAuthorization: Bearer %s\r\n"
		    "Connection: close\r\n\r\n",
		    upstream_port(plain), upstream_port(plain), tok);
		resp = injectkit_send_on(channel, req);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		const char *p = strstr(resp, "\r\n\r\n");
		ck_assert_ptr_nonnull(p);
		for (p += 4; n < sizeof(data) - 8;) {
			char *end;
			unsigned long size = strtoul(p, &end, 16);
			if (size == 0 || strncmp(end, "\r\n", 2) != 0)
				break;
			memcpy(data + n, end + 2, size);
			n += size;
			p = end + 2 + size + 2;
		}
		data[n] = '\0';
		ck_assert_msg(strstr(data, "X-Api-Key") != NULL, "%s", data);
		ck_assert_msg(strstr(data, value1) == NULL, "%s", data);
		free(resp);
	}

	/* The token in the query, not a header: it goes no further. */
	{
		char req[512];
		snprintf(req, sizeof(req),
		    "GET http://api.test:%u/echo?access_token=%s&page=2 "
		    "HTTP/1.1\r\nHost: api.test:%u\r\nConnection: close"
		    "\r\n\r\n",
		    upstream_port(plain), tok, upstream_port(plain));
		resp = injectkit_send_on(channel, req);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		free(resp);
		head = upstream_last_head(plain);
		static const char line[] = "GET /echo?page=2 HTTP/1.1\r\n";
		ck_assert_msg(strncmp(head, line, strlen(line)) == 0, "%s",
		    head);
		ck_assert_ptr_null(strstr(head, "crd_"));
		free(head);
	}

	/* Revoked: the old token, on the old channel, gets nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(harness_expect(&broker, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "done")));
	unsigned before = upstream_requests(plain);
	resp = get_with(tok);
	ck_assert_int_ne(http_status(resp), 200);
	ck_assert_ptr_null(strstr(resp, value1));
	free(resp);
	ck_assert_uint_eq(upstream_requests(plain), before);
	free(tok);
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	upstream_stop(plain);
}
END_TEST

/* GET path on api.test with tok, on the channel. */
static char *
get_path(const char *path, const char *tok)
{
	char req[768];

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u%s HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    upstream_port(plain), path, upstream_port(plain), tok);
	return injectkit_send_on(channel, req);
}

START_TEST(a_templated_path_binds_the_tokens_param)
{
	char cfg[2048], path[400], hostsf[400], job[64], *tok, *resp;
	static const char rules[] =
	    "{\"name\": \"bound\", \"command\": [\"/bin/true\"],"
	    " \"capabilities\": [{\"name\": \"repo.read\", \"audience\": "
	    "\"api\", \"params\": {\"repo\": [\"widgets\", \"gadgets\"]},"
	    "   \"ttl_seconds\": 600, \"reason\": \"read a repository\"}],"
	    " \"egress\": [{\"host\": \"api.test\", \"port\": %u,"
	    "   \"methods\": [\"GET\"], \"paths\": [\"%s\"],"
	    "   \"allow_cidrs\": [\"127.0.0.0/8\"], \"audience\": \"api\","
	    "   \"reason\": \"the api\", \"inject\": {\"secret\": \"up-key\","
	    "   \"header\": \"X-Api-Key\", \"capability\": \"repo.read\"}}]}";
	char text[1024];
	json_t *j;

	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-bound\"}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(put_secret("/v1/secrets/up-key", value1, 200));

	/* A placeholder the capability lacks: 422, naming it. */
	snprintf(text, sizeof(text), rules, upstream_port(plain),
	    "/repos/{owner}/{repo}/");
	j = harness_expect(&broker, 422, "PUT", "/v1/manifests/bound", admin,
	    NULL, json_loads(text, 0, NULL));
	char *probs = json_dumps(json_object_get(j, "problems"), 0);
	ck_assert_msg(strstr(probs, "egress[0].paths") != NULL &&
		strstr(probs, "{owner}") != NULL &&
		strstr(probs, "{repo}") == NULL,
	    "%s", probs);
	free(probs);
	json_decref(j);

	snprintf(text, sizeof(text), rules, upstream_port(plain),
	    "/repos/acme/{repo}/");
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/bound",
	    admin, NULL, json_loads(text, 0, NULL)));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "bound"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);

	tok = mint_body(channel,
	    "{\"capability\":\"repo.read\",\"params\":{\"repo\":\"widgets\"}}");
	resp = get_path("/repos/acme/widgets/issues", tok);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	unsigned before = upstream_requests(plain);
	/* Beside its repository, in every spelling: 403, nothing upstream. */
	static const char *const beside[] = { "/repos/acme/secrets/",
		"/repos/acme/gadgets/issues", "/repos/acme/widgets-evil/",
		"/repos/acme/WIDGETS/", "/repos/acme/widget%73/",
		"/repos/acme/widgets%2f..%2fsecrets/",
		"/repos/acme/widgets/../secrets/", "/repos/acme/widgets;/" };
	for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
		resp = get_path(beside[i], tok);
		ck_assert_msg(http_status(resp) == 403, "%s: %.400s", beside[i],
		    resp);
		free(resp);
	}
	ck_assert_uint_eq(upstream_requests(plain), before);
	resp = get_path("/repos/acme/secrets/", tok);
	ck_assert_msg(strstr(resp, "param_mismatch") != NULL, "%s", resp);
	free(resp);
	free(tok);
	ck_assert_int_eq(daemon_stop(&proxy), 0);

	/* The decision log: the allowed line names the secret and its
	 * version (never the value), the refusal its reason. */
	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    proxy.dir);
	ck_assert(
	    file_holds(path, "\"secret\":\"up-key\",\"secret_version\":1"));
	ck_assert(file_holds(path,
	    "\"reason\":\"param_mismatch\","
	    "\"detail\":\"param_mismatch\""));
	ck_assert(!file_holds(path, value1));
	upstream_stop(plain);
}
END_TEST

START_TEST(a_templated_query_binds_the_tokens_param)
{
	char cfg[2048], path[400], hostsf[400], job[64], *tok, *resp;
	static const char rules[] =
	    "{\"name\": \"qbound\", \"command\": [\"/bin/true\"],"
	    " \"capabilities\": [{\"name\": \"repo.read\", \"audience\": "
	    "\"api\", \"params\": {\"repo\": [\"widgets\", \"gadgets\"]},"
	    "   \"ttl_seconds\": 600, \"reason\": \"read a repository\"}],"
	    " \"egress\": [{\"host\": \"api.test\", \"port\": %u,"
	    "   \"methods\": [\"GET\"], \"paths\": [\"/search\"],"
	    "   \"query\": %s,"
	    "   \"allow_cidrs\": [\"127.0.0.0/8\"], \"audience\": \"api\","
	    "   \"reason\": \"the api\", \"inject\": {\"secret\": \"up-key\","
	    "   \"header\": \"X-Api-Key\", \"capability\": \"repo.read\"}}]}";
	char text[1024];
	json_t *j;

	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-qbound\"}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(put_secret("/v1/secrets/up-key", value1, 200));

	/* A placeholder the capability lacks, a name that is not plain: 422
	 * at egress[0].query. */
	static const char *const refused[] = { "{\"owner\": \"{owner}\"}",
		"{\"%72epo\": \"{repo}\"}", "{\"repo\": \"widgets\"}" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char q[64];
		snprintf(q, sizeof(q), "%s", refused[i]);
		snprintf(text, sizeof(text), rules, upstream_port(plain), q);
		j = harness_expect(&broker, 422, "PUT", "/v1/manifests/qbound",
		    admin, NULL, json_loads(text, 0, NULL));
		char *probs = json_dumps(json_object_get(j, "problems"), 0);
		ck_assert_msg(strstr(probs, "egress[0].query") != NULL,
		    "%s: %s", q, probs);
		free(probs);
		json_decref(j);
	}

	snprintf(text, sizeof(text), rules, upstream_port(plain),
	    "{\"repo\": \"{repo}\"}");
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/qbound",
	    admin, NULL, json_loads(text, 0, NULL)));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "qbound"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	ck_assert_ptr_nonnull(json_object_get(j, "channel"));
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);

	tok = mint_body(channel,
	    "{\"capability\":\"repo.read\",\"params\":{\"repo\":\"widgets\"}}");
	resp = get_path("/search?q=x&repo=widgets&page=2", tok);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	unsigned before = upstream_requests(plain);
	/* Another repository, in every spelling a server could read as
	 * one: 403, nothing upstream. */
	static const char *const beside[] = { "/search?repo=secrets",
		"/search?q=x", "/search", "/search?repo=widgets&repo=secrets",
		"/search?repo=secrets&repo=widgets",
		"/search?repo=widgets&%72epo=secrets",
		"/search?repo=widgets&repo%5B%5D=secrets",
		"/search?repo=widgets;repo=secrets",
		"/search?repo=widgets&REPO=secrets", "/search?repo=gadgets",
		"/search?repo=widget%73" };
	for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
		resp = get_path(beside[i], tok);
		ck_assert_msg(http_status(resp) == 403, "%s: %.400s", beside[i],
		    resp);
		free(resp);
	}
	ck_assert_uint_eq(upstream_requests(plain), before);
	resp = get_path("/search?repo=widgets&repo=secrets", tok);
	ck_assert_msg(strstr(resp, "query_duplicate") != NULL, "%s", resp);
	free(resp);
	free(tok);
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	upstream_stop(plain);
}
END_TEST

/* Lines of file path holding both a and b. */
static unsigned
lines_with(const char *path, const char *a, const char *b)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	unsigned n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, a) != NULL && strstr(line, b) != NULL;
	fclose(f);
	return n;
}

START_TEST(released_values_are_cached_per_job_and_forgotten)
{
	char cfg[2048], path[400], hostsf[400], job[64], want[128];
	char *tok, *resp, *head;
	json_t *m, *j;

	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-cache\", "
	    "\"inject_cache_seconds\": 2, \"reflect_limit\": 1000000}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(put_secret("/v1/secrets/up-key", value1, 200));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
	    "name", "cached", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", "host", "api.test", "port",
	    upstream_port(plain), "methods", "GET", "reason", "the api",
	    "allow_cidrs", "127.0.0.0/8", "audience", "api", "inject", "secret",
	    "up-key", "header", "X-Api-Key", "format", "Key {secret}",
	    "capability", "x.read");
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/cached",
	    admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "cached"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
	tok = mint_via(channel);

	/* Five requests at once, one release: the rest from the cache. */
	snprintf(want, sizeof(want), "X-Api-Key: Key %s\r\n", value1);
	for (int i = 0; i < 5; i++) {
		resp = get_with(tok);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		free(resp);
		head = upstream_last_head(plain);
		ck_assert_msg(strstr(head, want) != NULL, "%s", head);
		free(head);
	}
	ck_assert_uint_eq(lines_with(broker.log, "\"secret_released\"", job),
	    1);

	/* A rotation: a live job has it once the window has passed (2 s
	 * here), asked of the broker again. */
	json_decref(put_secret("/v1/secrets/up-key", value2, 200));
	snprintf(want, sizeof(want), "X-Api-Key: Key %s\r\n", value2);
	bool rotated = false;
	for (int i = 0; i < 100 && !rotated; i++) {
		resp = get_with(tok);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		free(resp);
		head = upstream_last_head(plain);
		rotated = strstr(head, want) != NULL;
		free(head);
		if (!rotated)
			usleep(100000);
	}
	ck_assert(rotated);
	unsigned released = lines_with(broker.log, "\"secret_released\"", job);
	ck_assert_uint_eq(released, 2);

	/* The revoke: the channel closes and the cache with it; nothing is
	 * released or sent upstream again. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(harness_expect(&broker, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "done")));
	unsigned before = upstream_requests(plain);
	resp = get_with(tok);
	ck_assert_int_ne(http_status(resp), 200);
	free(resp);
	ck_assert_uint_eq(upstream_requests(plain), before);
	ck_assert_uint_eq(lines_with(broker.log, "\"secret_released\"", job),
	    released);
	free(tok);
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	ck_assert(!file_holds(proxy.log, value1));
	ck_assert(!file_holds(proxy.log, value2));
	upstream_stop(plain);
}
END_TEST

/* --- a job of `cordon run` ------------------------------------------------- */

/* value1 as a grep -E pattern that does not hold it literally: the
 * job's own command line must not be what matches. */
static const char value1_re[] = "sk_live_upstrea[m]_0123456789abcdef";

static json_t *
run_job(const struct stack *st, const char *script)
{
	static char out[1 << 20], err[1 << 16];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", (char *)st->launcher_cfg, "--manifest",
		"inject-job", "--", "/bin/sh", "-c", (char *)script, NULL };
	int status =
	    harness_run_for(argv, 50000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);

	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	return j;
}

static const char *
stdout_of(const json_t *j)
{
	return json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
}

START_TEST(the_key_is_nowhere_in_the_sandbox)
{
	static struct stack st;
	static const struct stack_options o = { .uid_base = 310000,
		.hosts = "127.0.0.1 api.test\n" };
	char script[4096], old[128];
	json_t *m, *j;
	const char *out, *t;

	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	stack_start(&st, &o);
	json_decref(harness_expect(&st.broker, 200, "PUT", "/v1/secrets/up-key",
	    st.admin, NULL, json_pack("{s:s}", "value", value1)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}], s:{s:i}}",
	    "name", "inject-job", "command", "/bin/true", "capabilities",
	    "name", "x.read", "audience", "api", "params", "t", "1",
	    "ttl_seconds", 600, "reason", "read x", "egress", "host",
	    "api.test", "port", upstream_port(plain), "methods", "GET",
	    "reason", "the api", "allow_cidrs", "127.0.0.0/8", "audience",
	    "api", "inject", "secret", "up-key", "header", "X-Api-Key",
	    "format", "Key {secret}", "capability", "x.read", "limits",
	    "wall_seconds", 60);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/inject-job", st.admin, NULL, m));

	snprintf(script, sizeof(script),
	    "TOK=$(curl -s -X POST http://broker.cordon/v1/token -d "
	    "'{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}' | "
	    "sed 's/.*\"access_token\":\"\\([^\"]*\\)\".*/\\1/'); "
	    "echo TOKEN=$TOK; "
	    "curl -s -H \"Authorization: Bearer $TOK\" "
	    "http://api.test:%u/echo; echo; "
	    "echo env_hits=$(env | grep -cE '%s'); "
	    "echo files=$(grep -rlsE --devices=skip '%s' /tmp /work /etc /run "
	    "/var /dev/shm \"$HOME\" /proc/[0-9]*/environ "
	    "/proc/[0-9]*/cmdline 2>/dev/null | grep -v \"^/proc/$$/\" | "
	    "wc -l)",
	    upstream_port(plain), value1_re, value1_re);
	j = run_job(&st, script);
	out = stdout_of(j);
	ck_assert_ptr_nonnull(out);
	/* The credential went upstream, the job read it redacted. */
	ck_assert_msg(strstr(out, "X-Api-Key") != NULL, "%s", out);
	ck_assert_msg(strstr(out, value1) == NULL, "%s", out);
	ck_assert_msg(strstr(out, "env_hits=0") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "files=0") != NULL, "%s", out);
	char *head = upstream_last_head(plain);
	ck_assert_ptr_nonnull(head);
	ck_assert_ptr_nonnull(strstr(head, value1));
	free(head);
	t = strstr(out, "TOKEN=crd_");
	ck_assert_msg(t != NULL, "%s", out);
	snprintf(old, sizeof(old), "%.42s", t + 6);
	json_decref(j);

	/* After the stop, the old token in a new job gets nothing. */
	unsigned before = upstream_requests(plain);
	snprintf(script, sizeof(script),
	    "echo status=$(curl -s -o /dev/null -w '%%{http_code}' -H "
	    "\"Authorization: Bearer %s\" http://api.test:%u/echo)",
	    old, upstream_port(plain));
	j = run_job(&st, script);
	out = stdout_of(j);
	ck_assert_msg(strstr(out, "status=403") != NULL, "%s", out);
	ck_assert_uint_eq(upstream_requests(plain), before);
	json_decref(j);
	stack_stop(&st);
	upstream_stop(plain);
}
END_TEST

static Suite *
inject_suite(void)
{
	Suite *s = suite_create("inject");
	TCase *tc = tcase_create("broker");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, secrets_are_sealed_metadata_only_and_rotate);
	tcase_add_test(tc, release_to_a_running_job_only);
	tcase_add_test(tc, the_proxy_swaps_the_token_and_redacts_the_echo);
	tcase_add_test(tc, a_templated_path_binds_the_tokens_param);
	tcase_add_test(tc, a_templated_query_binds_the_tokens_param);
	tcase_add_test(tc, released_values_are_cached_per_job_and_forgotten);
	suite_add_tcase(s, tc);
	tc = tcase_create("job");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, the_key_is_nowhere_in_the_sandbox);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(inject_suite());
}
