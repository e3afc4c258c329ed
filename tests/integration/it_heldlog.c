/*
 * The held lines of the decision log tell the truth (redteam5 row 4):
 * past a job's allowed-lines budget its requests are counted by host,
 * status and injected secret in ALLOW_HELD_MAX slots. Before, a request
 * that found every slot taken was added to the last one, so 57 requests
 * to other.test were logged as www.api.test status 299; and a held line
 * lost the injected secret's name and version. Here a job past its
 * budget makes requests of 24 statuses at www.api.test, round after
 * round, and injected ones at api.test: every line names a host and
 * status its requests had (or is the overflow line, host null), each
 * kind has a line, the counts add up to what was sent, and the
 * injected requests' lines, held ones among them, name up-key and its
 * version. (No job is launched: no uid range.)
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BURN 10
#define STATUSES 24
#define FIRST_STATUS 230
#define ROUNDS 6
#define INJECTED_AFTER 8

static struct injectkit k;
static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/heldlog/upstream.py",
	.port_file = "heldlog.port",
	.follower = "heldlog",
	.proxy_extra = "\"allow_lines_burst\": 10, "
		       "\"allow_lines_per_second\": 1",
	.value = "sk_live_heldlog_0123456789abcdef",
};
INJECTKIT_FIXTURE(k, opts)

/* What the allowed lines of decisions.log say. */
struct told {
	long www[STATUSES]; /* www.api.test, by status */
	long www_small; /* www.api.test status 200 (the budget's burn) */
	long api; /* api.test status 200, injected */
	long api_held_lines; /* api.test lines with a count */
	long over; /* the overflow line's counts */
	long total;
	char bad[600]; /* the first line that lies, "" for none */
};

static void
read_told(struct told *t)
{
	char path[400], line[8192];
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    k.proxy.dir);
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "no %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		json_t *j = json_loads(line, 0, NULL);
		const char *dec =
		    json_string_value(json_object_get(j, "decision"));
		const char *host =
		    json_string_value(json_object_get(j, "host"));
		const char *detail =
		    json_string_value(json_object_get(j, "detail"));
		const char *secret =
		    json_string_value(json_object_get(j, "secret"));
		json_int_t c = json_integer_value(json_object_get(j, "count"));
		json_int_t st =
		    json_integer_value(json_object_get(j, "status"));
		json_int_t ver =
		    json_integer_value(json_object_get(j, "secret_version"));
		long n = c > 0 ? (long)c : 1;
		const char *lie = NULL;

		/* The token asked at the start: not the test's. */
		if (dec == NULL || strcmp(dec, "allow") != 0 ||
		    (host != NULL && strcmp(host, "broker.cordon") == 0)) {
			json_decref(j);
			continue;
		}
		t->total += n;
		if (host == NULL) {
			if (detail == NULL ||
			    strcmp(detail, "held_overflow") != 0)
				lie = "a line with no host that is not the "
				      "overflow line";
			else
				t->over += n;
		} else if (strcmp(host, "api.test") == 0) {
			if (st != 200)
				lie = "api.test with a status it never had";
			else if (secret == NULL ||
			    strcmp(secret, "up-key") != 0 || ver < 1)
				lie = "an injected request's line without its "
				      "secret and version";
			t->api += n;
			if (c > 0)
				t->api_held_lines++;
		} else if (strcmp(host, "www.api.test") == 0) {
			if (secret != NULL)
				lie = "a plain request's line naming a secret";
			else if (st == 200)
				t->www_small += n;
			else if (st >= FIRST_STATUS &&
			    st < FIRST_STATUS + STATUSES)
				t->www[st - FIRST_STATUS] += n;
			else
				lie = "www.api.test with a status it never had";
		} else {
			lie = "a host no request went to";
		}
		if (lie != NULL && t->bad[0] == '\0')
			snprintf(t->bad, sizeof(t->bad), "%s: %.400s", lie,
			    line);
		json_decref(j);
	}
	fclose(f);
}

static void
get_open(const char *path)
{
	char req[1024];
	char *r;

	injectkit_request_to(&k, req, sizeof(req), "www.api.test", "GET", path,
	    false, "close");
	r = injectkit_send(&k, req);
	ck_assert_msg(http_status(r) >= 200, "%s: %.300s", path, r);
	free(r);
}

static void
get_injected(void)
{
	char *r = injectkit_ask(&k, "GET", "/case/x", true);

	ck_assert_msg(http_status(r) == 200, "injected: %.300s", r);
	free(r);
}

/* Waits (20 s at most) until the lines count want requests. */
static void
wait_told(struct told *t, long want)
{
	for (int i = 0; i < 200; i++) {
		read_told(t);
		if (t->total >= want)
			return;
		usleep(100000);
	}
}

START_TEST(held_lines_name_what_their_requests_were)
{
	struct told t;
	char path[64];
	long sent, named = 0;

	for (int i = 0; i < BURN; i++)
		get_open("/open/small");
	for (int r = 0; r < ROUNDS; r++) {
		for (int s = 0; s < STATUSES; s++) {
			snprintf(path, sizeof(path), "/open/s/%d",
			    FIRST_STATUS + s);
			get_open(path);
		}
		get_injected();
	}
	sent = BURN + ROUNDS * (STATUSES + 1);
	wait_told(&t, sent);
	ck_assert_msg(t.bad[0] == '\0', "%s", t.bad);
	ck_assert_msg(t.total == sent, "the lines count %ld requests of %ld",
	    t.total, sent);
	ck_assert_msg(t.www_small == BURN, "www.api.test 200: %ld of %d",
	    t.www_small, BURN);
	ck_assert_msg(t.api == ROUNDS, "api.test (injected): %ld of %d", t.api,
	    ROUNDS);
	for (int s = 0; s < STATUSES; s++) {
		ck_assert_msg(t.www[s] > 0 && t.www[s] <= ROUNDS,
		    "www.api.test status %d: lines count %ld of %d",
		    FIRST_STATUS + s, t.www[s], ROUNDS);
		named += t.www[s];
	}
	ck_assert_msg(named + t.over == ROUNDS * STATUSES,
	    "www.api.test: %ld named and %ld in the overflow line, of %d",
	    named, t.over, ROUNDS * STATUSES);

	/* Injected requests past the budget, in a held line of their own. */
	for (int i = 0; i < INJECTED_AFTER; i++)
		get_injected();
	sent += INJECTED_AFTER;
	wait_told(&t, sent);
	ck_assert_msg(t.bad[0] == '\0', "%s", t.bad);
	ck_assert_msg(t.total == sent && t.api == ROUNDS + INJECTED_AFTER,
	    "the lines count %ld requests of %ld, api.test %ld of %d", t.total,
	    sent, t.api, ROUNDS + INJECTED_AFTER);
	ck_assert_msg(t.api_held_lines > 0,
	    "no held line of the injected requests");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("heldlog");
	TCase *tc = tcase_create("heldlog");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, held_lines_name_what_their_requests_were);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
