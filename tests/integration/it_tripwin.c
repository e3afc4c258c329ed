/*
 * A guard trip needs bytes of the secret the job could not have made up
 * (hostile review redteam5 row 6, issue 18). A guarded job's answers are
 * scanned for the keys bound where it goes, and a match trips it: the
 * job is closed and the broker burns the version at once, for the whole
 * fleet. The scan part of a typed key kept the public part's last 7
 * bytes as context, so an 8-byte window was those 7 and ONE secret byte:
 * a job never given the key sent one request whose echo held "k_live_"
 * and each of the 62 letters and digits, and burned the key (a JWT with
 * known claims the same, 64 guesses of its signature's first byte). Now a
 * value scanned for the scan only is scanned from its secret part: such
 * an echo trips nothing, burns nothing, and job A's next injected
 * request still goes out; an echo of 8 of the key's real secret bytes
 * still trips and burns. No job is spawned (uid base 1510000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n";
/* A typed key, as redteam5's: "sk_live_" and 24 random bytes. */
static const char typed[] = "sk_live_R5t9Lm2Qx8Vb4Nw7Zc3Kp6Hd";
/* A Supabase-style service-role JWT: header and claims public. */
static const char jwt[] =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJpc3MiOiJzdXBhYmFzZSIsInJvbGUiOiJzZXJ2aWNlX3JvbGUifQ"
    ".EU9SOmyPBT0Qn3WbtXi03E338zJCHvT9-6o4k9NKPkI";
static const char alnum[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

static long long
num(const json_t *j, const char *key)
{
	return (long long)json_integer_value(json_object_get(j, key));
}

static json_t *
get_key(const struct injectkit *k)
{
	return harness_expect(&k->broker, 200, "GET", "/v1/secrets/up-key",
	    k->admin, NULL, NULL);
}

/* Waits (15 s at most) until up-key is burned at the broker; the last
 * GET's answer. */
static json_t *
wait_burned(const struct injectkit *k)
{
	json_t *s = NULL;

	for (int i = 0; i < 300; i++) {
		json_decref(s);
		s = get_key(k);
		if (json_is_true(json_object_get(s, "burned")))
			break;
		usleep(50 * 1000);
	}
	return s;
}

/* How many lines of event the proxy logged for job. */
static int
logged_for(const struct injectkit *k, const char *event, const char *job)
{
	json_t *lines = daemon_log_lines(&k->proxy), *v;
	size_t i;
	int n = 0;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		const char *jb = json_string_value(json_object_get(v, "job"));
		if (ev != NULL && strcmp(ev, event) == 0 && jb != NULL &&
		    strcmp(jb, job) == 0)
			n++;
	}
	json_decref(lines);
	return n;
}

/* GET http://www.api.test/open/<tail> on chan, "Connection: close". */
static char *
open_get(const struct injectkit *k, const char *chan, const char *tail)
{
	char path[2048], req[4096];

	snprintf(path, sizeof(path), "/open/%s", tail);
	injectkit_request_to(k, req, sizeof(req), "www.api.test", "GET", path,
	    false, "close");
	return injectkit_send_on(chan, req);
}

/*
 * The stack with up-key := value, job A (the writer, k's own job)
 * injecting it once at api.test, and job B (the reader: www.api.test,
 * the same address, injecting nothing) guarded there: its job id into
 * job_b, its channel into chan_b.
 */
static void
stack(struct injectkit *k, struct upstream *u, const char *value,
    char job_b[64], char chan_b[300])
{
	injectkit_stack_start(k, hosts, "proxy-tripwin", NULL);
	k->up_port = upstream_port(u);
	json_decref(harness_expect(&k->broker, 200, "PUT", "/v1/secrets/up-key",
	    k->admin, NULL,
	    json_pack("{s:s, s:i}", "value", value, "reflect_budget", 100)));
	injectkit_job_start(k, "writer", injectkit_writer_manifest(k));
	char *resp = injectkit_ask(k, "GET", "/case/first", true);
	ck_assert_msg(http_status(resp) == 200, "A's injection: %.400s", resp);
	free(resp);
	injectkit_job_open(k, "reader",
	    injectkit_manifest("reader",
		json_pack("[o]", injectkit_open_rule(k, "www.api.test"))),
	    job_b, chan_b, NULL);
	resp = open_get(k, chan_b, "hello");
	ck_assert_msg(http_status(resp) == 200, "B's first: %.400s", resp);
	free(resp);
	ck_assert_msg(injectkit_decisions_hold(&k->proxy,
			  "\"guard\":[\"up-key\"]"),
	    "job B is not guarded at up-key's address");
}

/*
 * Job B sends one request whose echo holds pre (the public part's last 7
 * bytes) followed by each byte of cands, '.' between: B's channel stays
 * open, nothing was reflected or tripped, the key is not burned, and job
 * A's next injected request goes out with it.
 */
static void
forge(const char *value, const char *pre, const char *cands)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char job_b[64], chan_b[300], tail[2048] = "x?";

	ck_assert_ptr_nonnull(u);
	stack(&k, u, value, job_b, chan_b);
	for (size_t i = 0; cands[i] != '\0'; i++)
		snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail),
		    "%s%s%c", i > 0 ? "." : "", pre, cands[i]);
	char *resp = open_get(&k, chan_b, tail);
	int tripped = logged_for(&k, "guard_tripped", job_b);
	json_t *s = get_key(&k);
	ck_assert_msg(tripped == 0 && http_status(resp) == 200,
	    "job B, never given up-key, tripped on its own guesses (%d "
	    "guard_tripped, status %d); the broker: %s",
	    tripped, http_status(resp), json_dumps(s, JSON_COMPACT));
	free(resp);
	/* Nothing of it is up-key's secret part: it comes back whole. */
	resp = open_get(&k, chan_b, tail);
	ck_assert_msg(strstr(resp, tail) != NULL, "%.300s", resp);
	free(resp);
	ck_assert_int_eq(logged_for(&k, "secret_reflected", job_b), 0);
	ck_assert_int_eq(logged_for(&k, "job_closed", job_b), 0);
	json_decref(s);
	s = get_key(&k);
	ck_assert_msg(json_is_false(json_object_get(s, "burned")), "%s",
	    json_dumps(s, JSON_COMPACT));
	json_decref(s);
	unsigned before = upstream_requests(u);
	resp = injectkit_ask(&k, "GET", "/case/after", true);
	ck_assert_msg(http_status(resp) == 200, "A after B: %.400s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(u), before + 1);
	char *head = upstream_last_head(u), want[512];
	snprintf(want, sizeof(want), "Key %s", value);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strstr(head, want) != NULL, "%s", head);
	free(head);
	injectkit_stop(&k);
	upstream_stop(u);
}

START_TEST(k_live_and_every_letter_burns_nothing)
{
	forge(typed, "k_live_", alnum);
}
END_TEST

START_TEST(a_jwts_claims_and_every_signature_byte_burn_nothing)
{
	/* The 7 bytes before the signature: the claims' last 6 and '.'. */
	const char *sig = strrchr(jwt, '.') + 1;
	char pre[8], cands[80];

	snprintf(pre, sizeof(pre), "%.7s", sig - 7);
	snprintf(cands, sizeof(cands), "%s-_", alnum);
	forge(jwt, pre, cands);
}
END_TEST

/* The guard still works: 8 of the key's real secret bytes (without its
 * prefix) in B's answer trip B and burn the version at once. */
START_TEST(eight_real_secret_bytes_still_trip_and_burn)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char job_b[64], chan_b[300], tail[64];

	ck_assert_ptr_nonnull(u);
	stack(&k, u, typed, job_b, chan_b);
	snprintf(tail, sizeof(tail), "x?%.8s", typed + 8);
	char *resp = open_get(&k, chan_b, tail);
	ck_assert_msg(strstr(resp, typed + 8) == NULL, "%.400s", resp);
	free(resp);
	ck_assert_int_eq(logged_for(&k, "guard_tripped", job_b), 1);
	json_t *s = wait_burned(&k);
	ck_assert_msg(json_is_true(json_object_get(s, "burned")), "%s",
	    json_dumps(s, JSON_COMPACT));
	ck_assert_str_eq(json_string_value(json_object_get(s, "burned_reason")),
	    "guard_tripped");
	ck_assert_str_eq(json_string_value(json_object_get(s, "burned_job")),
	    job_b);
	ck_assert_int_ge(num(s, "reflections"), 1);
	json_decref(s);
	resp = open_get(&k, chan_b, "after");
	ck_assert_msg(resp[0] == '\0', "after the trip: %.300s", resp);
	free(resp);
	/* A new job of A's manifest is refused the burned key. */
	injectkit_job_start(&k, "writer", injectkit_writer_manifest(&k));
	resp = injectkit_ask(&k, "GET", "/case/after", true);
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "secret_burned") != NULL,
	    "%.400s", resp);
	free(resp);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/* A's own echo of its key, after it was guarded there first: redacted
 * and counted as its own, not a trip (the two cuts of one value). */
START_TEST(the_injecting_job_guarded_first_reads_its_own_key_redacted)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char path[128];

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k, hosts, "proxy-tripwin", NULL);
	k.up_port = upstream_port(u);
	/* www.api.test is bound by name (guard_hosts) before any
	 * injection. */
	json_decref(harness_expect(&k.broker, 200, "PUT", "/v1/secrets/up-key",
	    k.admin, NULL,
	    json_pack("{s:s, s:[s]}", "value", typed, "guard_hosts",
		"www.api.test")));
	injectkit_job_start(&k, "writer",
	    injectkit_manifest("writer",
		json_pack("[o,o]", injectkit_inject_rule(&k, false, NULL, NULL),
		    injectkit_open_rule(&k, "www.api.test"))));
	/* Its first request is to a bound host, injecting nothing: a scan
	 * release of up-key before its own. */
	char *resp = open_get(&k, k.channel, "first");
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));
	snprintf(path, sizeof(path), "/case/k-%s", typed);
	resp = injectkit_ask(&k, "GET", path, true);
	ck_assert_msg(http_status(resp) == 200 &&
		!injectkit_holds_piece(typed + 8, resp),
	    "%.600s", resp);
	free(resp);
	ck_assert_int_eq(logged_for(&k, "guard_tripped", k.job), 0);
	ck_assert_int_ge(logged_for(&k, "secret_reflected", k.job), 1);
	resp = injectkit_ask(&k, "GET", "/case/again", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("tripwin");
	TCase *tc = tcase_create("tripwin");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, k_live_and_every_letter_burns_nothing);
	tcase_add_test(tc, a_jwts_claims_and_every_signature_byte_burn_nothing);
	tcase_add_test(tc, eight_real_secret_bytes_still_trip_and_burn);
	tcase_add_test(tc,
	    the_injecting_job_guarded_first_reads_its_own_key_redacted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
