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
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
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

static Suite *
suite(void)
{
	Suite *s = suite_create("release_coalesce");
	TCase *tc = tcase_create("coalesce");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, forty_requests_at_once_share_one_release);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
