/*
 * The redaction was an oracle (redteam3's #1, issue 18): the scanner
 * overwrote, in place, every run of 8 bytes of a value the job's answers
 * are scanned for, so a job that makes an upstream echo its guesses
 * learned which guess was 8 bytes of the key, one byte a request from a
 * known prefix ("sk_live_"). Now a match of a value the job was released
 * for the scan only (the guard's) ends the answer before its bytes and
 * closes the job's channel at once (guard_tripped, secret_reflected);
 * the job's own key, past reflect_limit (3) reflected answers, the same
 * (reflect_limit). Each case slides through the key as redteam3's repro
 * did and asserts how little it got. No job is spawned (uid base
 * 1390000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_SECRET_PART "0123456789abcdef"
static const char value[] = "sk_live_guard_" KEY_SECRET_PART;
static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789_";

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n";

/* B's rule: host on k's upstream port, GET, /open/, no inject. */
static json_t *
rule_b(const struct injectkit *k, const char *host)
{
	return json_pack("{s:s, s:i, s:[s], s:[s], s:s, s:[s]}", "host", host,
	    "port", k->up_port, "methods", "GET", "paths", "/open/", "reason",
	    "the public part", "allow_cidrs", "127.0.0.0/8");
}

/*
 * Reads the key back through the echo at host (the C upstream echoes the
 * target) on chan, under path prefix dir ("/open/"), with k's token when
 * with_token: from the 8 bytes "sk_live_", each next byte is the one
 * candidate "-<last 7><c>-" that did not come back as sent. Into out
 * (cap bytes); the requests it took in *ret_n.
 */
static void
recover(const struct injectkit *k, const char *chan, const char *host,
    const char *dir, bool with_token, char *out, size_t cap, int *ret_n)
{
	size_t n = 8, alen = strlen(alphabet);

	snprintf(out, cap, "%.8s", value);
	*ret_n = 0;
	while (n + 1 < cap && n < 64) {
		char path[1024], req[2048], cand[16];
		int at = -1, missing = 0;

		snprintf(path, sizeof(path), "%s", dir);
		for (size_t i = 0; i < alen; i++)
			snprintf(path + strlen(path),
			    sizeof(path) - strlen(path), "-%.7s%c", out + n - 7,
			    alphabet[i]);
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "-");
		injectkit_request_to(k, req, sizeof(req), host, "GET", path,
		    with_token, "close");
		char *resp = injectkit_send_on(chan, req);
		(*ret_n)++;
		if (http_status(resp) != 200) {
			free(resp); /* cut, or the channel is gone */
			break;
		}
		for (size_t i = 0; i < alen; i++) {
			snprintf(cand, sizeof(cand), "-%.7s%c-", out + n - 7,
			    alphabet[i]);
			if (strstr(resp, cand) == NULL) {
				at = (int)i;
				missing++;
			}
		}
		free(resp);
		if (missing != 1)
			break; /* the end of the key (or no oracle) */
		out[n++] = alphabet[at];
		out[n] = '\0';
	}
}

/* Job B, never released the key for its own use, reads it whole. */
/* Whether the proxy's log has event for job. */
static bool
logged_for(const struct injectkit *k, const char *event, const char *job)
{
	json_t *lines = daemon_log_lines(&k->proxy), *v;
	size_t i;
	bool found = false;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		const char *jb = json_string_value(json_object_get(v, "job"));
		if (ev != NULL && strcmp(ev, event) == 0 && jb != NULL &&
		    strcmp(jb, job) == 0)
			found = true;
	}
	json_decref(lines);
	return found;
}

/* The job of the proxy's last log line of event, into out ("" for
 * none). */
static void
job_of_log(const struct injectkit *k, const char *event, char out[64])
{
	json_t *lines = daemon_log_lines(&k->proxy), *v;
	size_t i;

	out[0] = '\0';
	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		const char *jb = json_string_value(json_object_get(v, "job"));
		if (ev != NULL && strcmp(ev, event) == 0 && jb != NULL)
			snprintf(out, 64, "%s", jb);
	}
	json_decref(lines);
}

START_TEST(a_reader_job_tripping_on_a_bound_key_is_closed)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char chan[300], got[128], *resp, req[1024];
	int n;

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k, hosts, "proxy-guardfix", NULL);
	injectkit_secret(&k, "up-key", value);
	k.up_port = upstream_port(u);
	/* A's manifest binds api.test; no job of it ever runs. */
	json_decref(harness_expect(&k.broker, 200, "PUT",
	    "/v1/manifests/writer", k.admin, NULL,
	    injectkit_manifest("writer",
		json_pack("[o]",
		    injectkit_inject_rule(&k, false, NULL, NULL)))));
	injectkit_job_open(&k, "reader",
	    injectkit_manifest("reader",
		json_pack("[o]", rule_b(&k, "api.test"))),
	    NULL, chan, NULL);
	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET", "/open/x",
	    false, "close");
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));
	recover(&k, chan, "api.test", "/open/", false, got, sizeof(got), &n);
	ck_assert_msg(strlen(got) == 8,
	    "job B read %zu bytes of the key through the redaction in %d "
	    "requests: %s",
	    strlen(got), n, got);
	ck_assert_int_eq(n, 1);
	/* A type prefix's last 7 bytes and a guess are none of the key for
	 * a job never given it (redteam5 #6, it_tripwin): nothing redacted,
	 * nothing learned (a value scanned whole trips at the guess). The
	 * key's secret bytes trip it. */
	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET",
	    "/open/k-" KEY_SECRET_PART, false, "close");
	free(injectkit_send_on(chan, req));
	char job[64];
	job_of_log(&k, "guard_tripped", job);
	ck_assert_msg(job[0] != '\0', "no guard_tripped line");
	ck_assert(logged_for(&k, "job_closed", job));
	/* The job has no network now: its channel is gone. */
	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET",
	    "/open/after", false, "close");
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(resp[0] == '\0', "after the trip: %.300s", resp);
	free(resp);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/* The injecting job itself, on its own rule: a key it may use, never
 * read (the injection's promise), read whole. */
START_TEST(the_injecting_job_is_closed_past_reflect_limit)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char got[128];
	int n;

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k, hosts, "proxy-guardfix", NULL);
	injectkit_secret(&k, "up-key", value);
	k.up_port = upstream_port(u);
	injectkit_job_start(&k, "writer",
	    injectkit_manifest("writer",
		json_pack("[o]",
		    injectkit_inject_rule(&k, false, NULL, NULL))));
	recover(&k, k.channel, "api.test", "/case/", true, got, sizeof(got),
	    &n);
	/* Three reflected answers (the limit), three bytes; the fourth
	 * answer ends and the channel closes. */
	ck_assert_msg(strlen(got) <= 8 + 3,
	    "job A read %zu bytes of its key through the redaction in %d "
	    "requests: %s",
	    strlen(got), n, got);
	ck_assert(logged_for(&k, "reflect_limit", k.job));
	ck_assert(logged_for(&k, "job_closed", k.job));
	char *resp = injectkit_ask(&k, "GET", "/case/after", true);
	ck_assert_msg(resp[0] == '\0', "after the limit: %.300s", resp);
	free(resp);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("guardfix_oracle");
	TCase *tc = tcase_create("oracle");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_reader_job_tripping_on_a_bound_key_is_closed);
	tcase_add_test(tc, the_injecting_job_is_closed_past_reflect_limit);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
