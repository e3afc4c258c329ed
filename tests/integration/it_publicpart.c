/*
 * A key's public part is not the key (redteam4 hole 2, issue 18): the
 * reflection scanner matched any 8 bytes of a value, so the type prefix
 * every key of its kind carries (`sk_live_`) or a JWT's header (every
 * HS256 token's) in an answer that holds nothing of the key tripped a
 * guarded job at once (guard_tripped, a false secret_reflected) and
 * closed an injecting job's channel at the 4th such answer, the text
 * overwritten. Now the format's public part is left out of the scan but
 * for its last 7 bytes (proxy/keyshape.c): such answers come back whole
 * and count for nothing, while the key itself reflected is redacted (all
 * but the public part's first bytes) and trips or counts as before. No job is spawned (uid
 * base 1490000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char key[] = "sk_live_redteam4_0123456789abcdef";
/* Only the public part: a page naming the format, Stripe's own 401. */
static const char *const public_texts[] = {
	"/set-STRIPE_KEY=sk_live_XXXXXXXXXXXXXXXX",
	"/Invalid-API-Key-provided:sk_live_**************1234",
	"/sk_live_test_AbCdEfGhIjKlMnOp",
	"/sk_live_abcdefgh",
};

#define JWT_HEAD "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
static const char jwt[] =
    JWT_HEAD ".eyJpc3MiOiJzdXBhYmFzZSIsInJvbGUiOiJzZXJ2aWNlX3JvbGUifQ"
	     ".EU9SOmyPBT0Qn3WbtXi03E338zJCHvT9-6o4k9NKPkI";
/* Other users' tokens, as an auth API gives them back: the same header;
 * one with the very claims of the key. */
static const char *const other_jwts[] = {
	"/" JWT_HEAD ".eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImF1dGhlbnRpY2F0ZWQifQ"
	".6FaU8zDzRpinB7Pki3QlOGD9KdNMFQ-gTHMrhJoEw1c",
	"/" JWT_HEAD ".eyJpc3MiOiJzdXBhYmFzZSIsInJvbGUiOiJzZXJ2aWNlX3JvbGUifQ"
	".6FaU8zDzRpinB7Pki3QlOGD9KdNMFQ-gTHMrhJoEw1c",
};

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n";

/* A plain rule: host on k's upstream port, GET, /open/. */
static json_t *
plain_rule(const struct injectkit *k, const char *host)
{
	return json_pack("{s:s, s:i, s:[s], s:[s], s:s, s:[s]}", "host", host,
	    "port", k->up_port, "methods", "GET", "paths", "/open/", "reason",
	    "the public part", "allow_cidrs", "127.0.0.0/8");
}

/* Whether the proxy's log has event (for job, when not NULL). */
static bool
logged(const struct injectkit *k, const char *event, const char *job)
{
	json_t *lines = daemon_log_lines(&k->proxy), *v;
	size_t i;
	bool found = false;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		const char *jb = json_string_value(json_object_get(v, "job"));
		if (ev != NULL && strcmp(ev, event) == 0 &&
		    (job == NULL || (jb != NULL && strcmp(jb, job) == 0)))
			found = true;
	}
	json_decref(lines);
	return found;
}

/* GET http://host/open<tail> on chan (k's token when with_token): the
 * answer (the upstream echoes the target). */
static char *
get(const struct injectkit *k, const char *chan, const char *host,
    const char *dir, const char *tail, bool with_token)
{
	char path[1024], req[2048];

	snprintf(path, sizeof(path), "%s%s", dir, tail);
	injectkit_request_to(k, req, sizeof(req), host, "GET", path, with_token,
	    "close");
	return injectkit_send_on(chan, req);
}

/* The public texts of n, each asked twice: every one comes back whole,
 * nothing logged as reflected. */
static void
expect_untouched(const struct injectkit *k, const char *chan, const char *host,
    const char *const *texts, size_t n)
{
	for (size_t round = 0; round < 2; round++)
		for (size_t i = 0; i < n; i++) {
			char *resp =
			    get(k, chan, host, "/open", texts[i], false);
			ck_assert_msg(http_status(resp) == 200 &&
				strstr(resp, texts[i] + 1) != NULL,
			    "the public part %s came back: %.600s",
			    texts[i] + 1, resp);
			free(resp);
		}
	ck_assert_msg(!logged(k, "secret_reflected", NULL),
	    "secret_reflected logged for answers that held no secret byte");
}

START_TEST(a_guarded_job_reads_the_public_part)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char chan[300], path[256];

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k, hosts, "proxy-publicpart", NULL);
	injectkit_secret(&k, "up-key", key);
	k.up_port = upstream_port(u);
	/* The writer's manifest binds api.test; no job of it runs. */
	json_decref(harness_expect(&k.broker, 200, "PUT",
	    "/v1/manifests/writer", k.admin, NULL,
	    injectkit_manifest("writer",
		json_pack("[o]",
		    injectkit_inject_rule(&k, false, NULL, NULL)))));
	injectkit_job_open(&k, "reader",
	    injectkit_manifest("reader",
		json_pack("[o]", plain_rule(&k, "api.test"))),
	    NULL, chan, NULL);
	char *resp = get(&k, chan, "api.test", "/open", "/x", false);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));
	expect_untouched(&k, chan, "api.test", public_texts,
	    sizeof(public_texts) / sizeof(public_texts[0]));
	ck_assert(!logged(&k, "guard_tripped", NULL));
	/* The key itself still trips the job at once. */
	snprintf(path, sizeof(path), "/k-%s", key);
	resp = get(&k, chan, "api.test", "/open", path, false);
	ck_assert_msg(strstr(resp, key + 8) == NULL, "%.600s", resp);
	free(resp);
	ck_assert(logged(&k, "guard_tripped", NULL));
	ck_assert(logged(&k, "job_closed", NULL));
	resp = get(&k, chan, "api.test", "/open", "/after", false);
	ck_assert_msg(resp[0] == '\0', "after the trip: %.300s", resp);
	free(resp);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/*
 * The job injecting value (up-key): one injected request, then the
 * texts on its plain rule (scanned as every answer of its is, from
 * then on), then value itself there until reflect_limit (3) closes it.
 */
static void
injecting(const char *value, const char *const *texts, size_t n,
    size_t public_len)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char path[256];

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k, hosts, "proxy-publicpart", NULL);
	injectkit_secret(&k, "up-key", value);
	k.up_port = upstream_port(u);
	injectkit_job_start(&k, "writer",
	    injectkit_manifest("writer",
		json_pack("[o,o]", injectkit_inject_rule(&k, false, NULL, NULL),
		    plain_rule(&k, "www.api.test"))));
	/* The upstream echoes the injected header: one reflected answer. */
	char *resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200 &&
		strstr(resp, value + public_len) == NULL,
	    "%.600s", resp);
	free(resp);
	ck_assert(logged(&k, "secret_reflected", k.job));
	/* Any number of answers of the public part alone: whole. */
	for (size_t round = 0; round < 3; round++)
		for (size_t i = 0; i < n; i++) {
			resp = get(&k, k.channel, "www.api.test", "/open",
			    texts[i], false);
			ck_assert_msg(http_status(resp) == 200 &&
				strstr(resp, texts[i] + 1) != NULL,
			    "round %zu: the public part %s came back: %.600s",
			    round, texts[i] + 1, resp);
			free(resp);
		}
	ck_assert(!logged(&k, "reflect_limit", k.job));
	/* The key itself: redacted but its public part's first bytes (the
	 * last 7 are the scan's context), the 2nd and 3rd reflected
	 * answers; the 4th closes the channel. */
	snprintf(path, sizeof(path), "/k-%s", value);
	for (int i = 0; i < 2; i++) {
		resp = get(&k, k.channel, "www.api.test", "/open", path, false);
		ck_assert_msg(http_status(resp) == 200, "%.600s", resp);
		ck_assert_msg(!injectkit_holds_piece(value + public_len, resp),
		    "%.600s", resp);
		char pub[128];
		snprintf(pub, sizeof(pub), "/open/k-%.*s",
		    (int)(public_len - 7), value);
		ck_assert_msg(strstr(resp, pub) != NULL, "%.600s", resp);
		free(resp);
	}
	ck_assert(!logged(&k, "reflect_limit", k.job));
	resp = get(&k, k.channel, "www.api.test", "/open", path, false);
	ck_assert_msg(!injectkit_holds_piece(value + public_len, resp),
	    "%.600s", resp);
	free(resp);
	ck_assert(logged(&k, "reflect_limit", k.job));
	ck_assert(logged(&k, "job_closed", k.job));
	resp = injectkit_ask(&k, "GET", "/case/after", true);
	ck_assert_msg(resp[0] == '\0', "after the limit: %.300s", resp);
	free(resp);
	injectkit_stop(&k);
	upstream_stop(u);
}

START_TEST(the_injecting_job_reads_the_public_part)
{
	injecting(key, public_texts,
	    sizeof(public_texts) / sizeof(public_texts[0]), 8);
}
END_TEST

START_TEST(the_injecting_job_reads_other_users_jwts)
{
	injecting(jwt, other_jwts, sizeof(other_jwts) / sizeof(other_jwts[0]),
	    strlen(jwt) - 43);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("publicpart");
	TCase *tc = tcase_create("publicpart");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_guarded_job_reads_the_public_part);
	tcase_add_test(tc, the_injecting_job_reads_the_public_part);
	tcase_add_test(tc, the_injecting_job_reads_other_users_jwts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
