/*
 * One release a job and secret in flight at the proxy (issue 18, found by
 * injperf): when a job's cache of a released value is empty or expired,
 * every request of the job that arrives before the broker answers waits
 * for the one release already asked, and is answered with its value, not
 * asked again. Before, each asked the broker itself and past
 * BROKERCLIENT_JOB_RELEASES in flight and BROKERCLIENT_JOB_WAITING waiting
 * got 503 releases_busy: a busy job saw 503s each time its cache expired.
 * Here 40 requests of one job are written at once with an empty cache:
 * all 40 are 200 with the credential, and the broker logged one release.
 * And with the release held (the broker stopped), waiters that close
 * leave it, and the job's close ends the rest with nothing handed.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct injectkit kit;

static const char value[] = "sk_live_coalesce_0123456789abcdef";

static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/reflect.py",
	.port_file = "reflect.port",
	.follower = "proxy-coalesce",
	.proxy_extra = "\"inject_cache_seconds\": 600, "
		       "\"token_cache_seconds\": 60",
	.value = value,
};

INJECTKIT_FIXTURE(kit, opts)

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

#define N 40

START_TEST(forty_requests_at_once_share_one_release)
{
	char req[1024], jobq[80];
	int fd[N];
	unsigned ok = 0, busy = 0;

	injectkit_request_to(&kit, req, sizeof(req), "api.test", "GET",
	    "/case/x", true, "close");
	for (int i = 0; i < N; i++) {
		fd[i] = unix_connect(kit.channel);
		ck_assert_int_ge(fd[i], 0);
		ck_assert_int_eq(write(fd[i], req, strlen(req)),
		    (ssize_t)strlen(req));
	}
	for (int i = 0; i < N; i++) {
		char *r = http_exchange(fd[i], "", 0, 15000);
		ck_assert_ptr_nonnull(r);
		if (http_status(r) == 200)
			ok++;
		else if (strstr(r, "releases_busy") != NULL)
			busy++;
		if (http_status(r) != 200)
			fprintf(stderr, "request %d: %.200s\n", i, r);
		/* The echo of the credential is redacted as before. */
		ck_assert_ptr_null(strstr(r, value));
		free(r);
		close(fd[i]);
	}
	snprintf(jobq, sizeof(jobq), "\"%s\"", kit.job);
	unsigned released =
	    lines_with(kit.broker.log, "\"secret_released\"", jobq);
	ck_assert_msg(ok == N && released == 1,
	    "%u of %d answered 200, %u releases_busy; the broker released "
	    "%u times",
	    ok, N, busy, released);
}
END_TEST

/* The kit with no cache of released values: each request asks, and
 * those at once share the release in flight. */
static const struct injectkit_opts opts_nocache = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/reflect.py",
	.port_file = "reflect.port",
	.follower = "proxy-coalesce",
	.proxy_extra = "\"inject_cache_seconds\": 0, "
		       "\"token_cache_seconds\": 60",
	.value = value,
};

#define W 10

/*
 * With the broker stopped (SIGSTOP) the job's release stays in flight:
 * 10 requests wait on one release, 3 of them close, then the job is
 * deleted at the proxy. The others get nothing (closed, no credential),
 * and the proxy (under ASan) lives on when the broker answers the
 * cancelled release.
 */
START_TEST(waiters_that_leave_or_whose_job_closes_get_nothing)
{
	struct injectkit k;
	char req[1024], path[128];
	int fd[W];

	injectkit_start(&k, &opts_nocache);
	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET", "/case/x",
	    true, "close");
	/* The token's answer cached, a release made and not kept. */
	char *resp = injectkit_send(&k, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);

	ck_assert_int_gt(k.broker.pid, 1);
	ck_assert_int_eq(kill(k.broker.pid, SIGSTOP), 0);
	/* kill() only queues the stop: every thread of the broker seen
	 * stopped before a request is written. */
	ck_assert_msg(harness_all_stopped(k.broker.pid),
	    "the broker (pid %d) did not stop", (int)k.broker.pid);
	for (int i = 0; i < W; i++) {
		fd[i] = unix_connect(k.channel);
		ck_assert_int_ge(fd[i], 0);
		ck_assert_int_eq(write(fd[i], req, strlen(req)),
		    (ssize_t)strlen(req));
	}
	/* Every one's head read and its release asked (or joined). */
	long n = 0;
	for (int i = 0; i < 100; i++) {
		n = injectkit_metric(&k.proxy,
		    "cordon_proxy_releases_in_flight");
		if (n >= 1)
			break;
		usleep(20000);
	}
	usleep(300000);
	n = injectkit_metric(&k.proxy, "cordon_proxy_releases_in_flight");
	long waiting =
	    injectkit_metric(&k.proxy, "cordon_proxy_releases_waiting");
	/* Three waiters leave. */
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	snprintf(path, sizeof(path), "/v1/jobs/%s", k.job);
	json_decref(harness_expect(&k.proxy, 200, "DELETE", path, k.launcher,
	    NULL, NULL));
	unsigned got = 0;
	for (int i = 3; i < W; i++) {
		char *r = http_exchange(fd[i], "", 0, 5000);
		ck_assert_ptr_nonnull(r);
		got += http_status(r) == 200;
		ck_assert_ptr_null(strstr(r, value));
		free(r);
		close(fd[i]);
	}
	ck_assert_int_eq(kill(k.broker.pid, SIGCONT), 0);
	ck_assert_msg(n == 1 && waiting == 0 && got == 0,
	    "%ld releases in flight and %ld waiting for %d requests; %u "
	    "answered 200 after the job's close",
	    n, waiting, W, got);
	/* The broker answers the cancelled release: the proxy lives on. */
	for (int i = 0; i < 100; i++) {
		if (injectkit_metric(&k.proxy,
			"cordon_proxy_releases_in_flight") == 0)
			break;
		usleep(50000);
	}
	ck_assert_int_eq(injectkit_metric(&k.proxy,
			     "cordon_proxy_releases_in_flight"),
	    0);
	injectkit_stop(&k);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("release_coalesce");
	TCase *tc = tcase_create("coalesce");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, forty_requests_at_once_share_one_release);
	suite_add_tcase(s, tc);
	tc = tcase_create("close");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, waiters_that_leave_or_whose_job_closes_get_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
