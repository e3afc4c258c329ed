/*
 * A job's revoke holds no broker HTTP thread on an issuer (issue 18).
 * Jobs each hold a credential of an issuer whose revocation endpoint
 * accepts and never answers (hungissuer.c: tokens at once). Their
 * revokes, all at once and more than the broker's HTTP threads, each wait
 * for their revocation at the issuer (tried by the issuers' own workers,
 * never "not tried here"), while another client's cheap requests (GET
 * /healthz, an introspection of a live job's token) are answered before
 * any revoke is; then every revoke answers 200, its credential listed
 * ok false and pending (retried in the background), the issuer having
 * been asked once for each. Orders and answers are asserted, never
 * timings (printed). A revoke at a hung revocation endpoint with a
 * follower told of it that never acknowledges lists the credential
 * pending and the follower gone. A broker stopped with revokes waiting
 * answers each and exits 0. No jobs are spawned: no uid range is used.
 */
#include "harness.h"
#include "hungissuer.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The broker's HTTP threads (broker/broker.h's BROKER_THREADS). */
#define HTTP_THREADS 4
/* Revokes at once: more than the HTTP threads, at most twice the
 * issuers' revoke workers (4), so that each is tried within its 3 s. */
#define NREV (HTTP_THREADS + 2)
#define NALL (NREV + 2)

static struct hung_issuer hung = { .lfd = -1 };
static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	hung_issuer_start(&hung);
	hung_broker_start(&broker, admin, launcher, verifier, sizeof(admin));
	/* Tokens at once, revocations never answered. */
	hung_issuer_secret(&hung, &broker, admin, "slow-rev", "fast/token",
	    true);
	hung_manifest(&broker, admin, "slowrev", "slow-rev", 443);
}

static void
teardown(void)
{
	if (broker.pid > 0)
		ck_assert_int_eq(daemon_stop(&broker), 0);
	hung_issuer_stop(&hung);
}

/* A new job holding the issuer's credential (released once): its id. */
static void
job_holding(char *job, size_t len)
{
	char path[200];
	json_t *j;

	hung_new_job(&broker, launcher, "slowrev", job, len);
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/slow-rev/release",
	    job);
	j = harness_expect(&broker, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    "tok-fast-0123456789");
	json_decref(j);
}

/* Asserts a revoke's answer: 200, its one credential listed, tried at
 * the issuer (never "not tried") and pending, not ok. */
static void
assert_tried_pending(const char *resp)
{
	json_t *j, *up, *e;
	const char *err;

	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	j = hung_body_of(resp);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "revoked");
	up = json_object_get(j, "upstream");
	ck_assert_msg(json_array_size(up) == 1, "%.400s", resp);
	e = json_array_get(up, 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "secret")),
	    "slow-rev");
	ck_assert(json_is_false(json_object_get(e, "ok")));
	ck_assert_msg(json_is_true(json_object_get(e, "pending")), "%.400s",
	    resp);
	err = json_string_value(json_object_get(e, "error"));
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strncmp(err, "not tried", 9) != 0,
	    "the revocation was not tried at the issuer: %.400s", resp);
	json_decref(j);
}

START_TEST(revokes_wait_for_issuers_on_no_http_thread)
{
	char rj[NREV][64], live[64], body[600];
	struct hung_pending p[NALL];
	json_t *j;
	char *tok;
	size_t i;

	for (i = 0; i < NREV; i++)
		job_holding(rj[i], sizeof(rj[i]));
	/* A live job and its token, for the introspection. */
	hung_new_job(&broker, launcher, "slowrev", live, sizeof(live));
	tok = hung_mint(&broker, verifier, live);

	/* Every revoke at once. */
	for (i = 0; i < NREV; i++) {
		hung_pending_init(&p[i],
		    hung_send_revoke(&broker, launcher, rj[i]), 0);
	}
	/* The issuer holds the revocations the broker makes at once (at
	 * least 2: as many as the tree before this made on its threads). */
	for (int t = 0; t < 400 && atomic_load(&hung.revokes) < 2; t++)
		usleep(10 * 1000);
	ck_assert_uint_ge(atomic_load(&hung.revokes), 2);
	/* Another client's cheap requests. */
	hung_pending_init(&p[NREV],
	    hung_send(&broker, "GET", "/healthz", NULL, NULL, NULL), 0);
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", tok);
	hung_pending_init(&p[NREV + 1],
	    hung_send(&broker, "POST", "/v1/introspect", verifier, NULL, body),
	    0);
	ck_assert_uint_eq(hung_collect(p, NALL, 30000, NULL), NALL);
	printf("healthz %.1f ms, introspection %.1f ms; revokes answered "
	       "after",
	    p[NREV].answered_ms, p[NREV + 1].answered_ms);
	for (i = 0; i < NREV; i++)
		printf(" %.0f", p[i].answered_ms);
	printf(" ms; %u revocation calls\n", atomic_load(&hung.revokes));
	for (i = 0; i < NREV; i++)
		ck_assert_msg(p[i].order > p[NREV].order &&
			p[i].order > p[NREV + 1].order,
		    "revoke %zu answered (#%d) before the healthz (#%d) or the "
		    "introspection (#%d): %.400s",
		    i, p[i].order, p[NREV].order, p[NREV + 1].order,
		    strstr(p[i].resp, "\r\n\r\n") ?: p[i].resp);
	ck_assert_msg(http_status(p[NREV].resp) == 200, "%.300s", p[NREV].resp);
	ck_assert_msg(http_status(p[NREV + 1].resp) == 200, "%.300s",
	    p[NREV + 1].resp);
	j = hung_body_of(p[NREV + 1].resp);
	ck_assert(json_is_true(json_object_get(j, "active")));
	json_decref(j);
	for (i = 0; i < NREV; i++)
		assert_tried_pending(p[i].resp);
	/* Each revoke asked the issuer itself (retries may add more). */
	ck_assert_uint_ge(atomic_load(&hung.revokes), NREV);
	hung_pending_free(p, NALL);
	free(tok);
}
END_TEST

START_TEST(stopped_with_revokes_waiting_answers_each)
{
	char rj[NREV][64];
	struct hung_pending p[NREV];
	size_t i;

	for (i = 0; i < NREV; i++)
		job_holding(rj[i], sizeof(rj[i]));
	for (i = 0; i < NREV; i++) {
		hung_pending_init(&p[i],
		    hung_send_revoke(&broker, launcher, rj[i]), 0);
	}
	for (int t = 0; t < 400 && atomic_load(&hung.revokes) < 2; t++)
		usleep(10 * 1000);
	ck_assert_int_eq(daemon_stop(&broker), 0);
	ck_assert_uint_eq(hung_collect(p, NREV, 10000, NULL), NREV);
	/* Each answered, its credential pending: none lost, none said
	 * revoked. A revoke not read yet by a handler when the broker
	 * stopped is closed unanswered (nothing was revoked for it). */
	for (i = 0; i < NREV; i++) {
		json_t *j, *e;

		if (p[i].resp[0] == '\0')
			continue;
		ck_assert_msg(http_status(p[i].resp) == 200, "%.400s",
		    p[i].resp);
		j = hung_body_of(p[i].resp);
		e = json_array_get(json_object_get(j, "upstream"), 0);
		ck_assert_msg(e != NULL, "%.400s", p[i].resp);
		ck_assert(json_is_false(json_object_get(e, "ok")));
		ck_assert(json_is_true(json_object_get(e, "pending")));
		json_decref(j);
	}
	hung_pending_free(p, NREV);
}
END_TEST

START_TEST(a_revoke_waits_for_issuers_and_followers_at_once)
{
	char rj[64], path[200];
	struct hung_pending p[2];
	long status, head;
	json_t *h, *j, *gone;

	job_holding(rj, sizeof(rj));
	h = harness_get_json(&broker, "/healthz", &status);
	ck_assert_int_eq(status, 200);
	head = (long)json_integer_value(json_object_get(h, "revocation_head"));
	json_decref(h);
	/* A follower that polls once, is told of the revoke and never
	 * acknowledges it. */
	snprintf(path, sizeof(path),
	    "/v1/revocations?after=%ld&wait=30&follower=ghost", head);
	hung_pending_init(&p[0],
	    hung_send(&broker, "GET", path, verifier, NULL, NULL), 0);
	for (int t = 0; t < 100; t++) {
		h = harness_get_json(&broker, "/healthz", &status);
		long n = (long)json_integer_value(
		    json_object_get(h, "feed_followers"));
		json_decref(h);
		if (n >= 1)
			break;
		usleep(50 * 1000);
	}
	hung_pending_init(&p[1], hung_send_revoke(&broker, launcher, rj), 0);
	ck_assert_uint_eq(hung_collect(p, 2, 20000, NULL), 2);
	printf("a revoke at a hung revocation endpoint, a follower never "
	       "acknowledging: answered after %.0f ms\n",
	    p[1].answered_ms);
	assert_tried_pending(p[1].resp);
	j = hung_body_of(p[1].resp);
	gone = json_object_get(json_object_get(j, "propagated"), "gone");
	ck_assert_msg(json_array_size(gone) == 1 &&
		strcmp(json_string_value(json_array_get(gone, 0)), "ghost") ==
		    0,
	    "%.500s", p[1].resp);
	json_decref(j);
	hung_pending_free(p, 2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("revoke_async");
	TCase *tc = tcase_create("revoke_async");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, revokes_wait_for_issuers_on_no_http_thread);
	tcase_add_test(tc, a_revoke_waits_for_issuers_and_followers_at_once);
	tcase_add_test(tc, stopped_with_revokes_waiting_answers_each);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
