/*
 * The proxy's unavailable answers say so and when to retry, and an
 * exchange the job gave up is let go (docs/egress.md, credentials.md).
 *
 * A release that gets no answer from the broker (its call's 5 s timeout,
 * the broker stopped; or the broker's connection dropped, the broker
 * killed while the release waits for a hung issuer) is 503 with the
 * detail release_timeout, not 403 secret_unavailable as if the broker
 * had refused. Every 503 the proxy writes to a job carries Retry-After:
 * the broker's own for its 503s (issuer_unavailable 2, broker_stopping
 * 1), a few seconds for the rest (release_timeout, feed_unavailable).
 *
 * A job's connection whose client closed while the proxy waited (for the
 * upstream's answer, for a release) is closed at once with a decision
 * line whose detail is client_gone: its slot (max_conns_per_job 1 here)
 * and the upstream connection are free again long before the idle
 * timeout (set to 120 s, so that a pass cannot be the timeout). A
 * half-close after a whole request still gets its answer.
 *
 * The hung issuer (hungissuer.c) is both the OAuth issuer that never
 * answers and an upstream that never answers (hang.test). No job is
 * spawned (no uid range used).
 */
#include "harness.h"
#include "hungissuer.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct injectkit k;
static struct hung_issuer hung = { .lfd = -1 };
static struct upstream *up;

/* The job's rules: 0 api.test's /case/ injects the static up-key; 1
 * slow.test's /case/ injects slow-api, an OAuth secret whose issuer never
 * answers; 2 hang.test, on the hung listener, and 3 wait.test's /slow
 * (answered after 3 s) inject nothing. */
static void
setup(void)
{
	char url[128];
	json_t *slow, *egress;

	hung_issuer_start(&hung);
	up = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(up);
	k.up_pid = -1;
	k.up_port = upstream_port(up);
	injectkit_stack_start(&k,
	    "127.0.0.1 api.test\n127.0.0.1 slow.test\n127.0.0.1 hang.test\n"
	    "127.0.0.1 wait.test\n",
	    "proxy-503",
	    "\"inject_cache_seconds\": 0, \"token_cache_seconds\": 60, "
	    "\"idle_timeout_ms\": 120000, \"max_conns_per_job\": 1");
	injectkit_secret(&k, "up-key", "static-key-0123456789abcdef");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/oauth/token",
	    hung.port);
	json_decref(harness_expect(&k.broker, 200, "PUT",
	    "/v1/secrets/slow-api", k.admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", url, "client_id",
		"cordon-test", "client_secret", "s3cret-client")));
	slow = injectkit_inject_rule(&k, false, NULL, NULL);
	ck_assert_ptr_nonnull(slow);
	json_object_set_new(slow, "host", json_string("slow.test"));
	json_object_set_new(json_object_get(slow, "inject"), "secret",
	    json_string("slow-api"));
	egress = json_pack("[o, o, {s:s, s:i, s:[s], s:s, s:[s]},"
			   " {s:s, s:i, s:[s], s:[s], s:s, s:[s]}]",
	    injectkit_inject_rule(&k, false, NULL, NULL), slow, "host",
	    "hang.test", "port", hung.port, "methods", "GET", "reason",
	    "an upstream that never answers", "allow_cidrs", "127.0.0.0/8",
	    "host", "wait.test", "port", k.up_port, "methods", "GET", "paths",
	    "/slow", "reason", "a slow answer", "allow_cidrs", "127.0.0.0/8");
	injectkit_job_start(&k, "p503", injectkit_manifest("p503", egress));
}

static void
teardown(void)
{
	if (k.broker.pid > 1)
		kill(k.broker.pid, SIGCONT);
	ck_assert_int_eq(daemon_stop(&k.proxy), 0);
	if (k.broker.pid > 0)
		daemon_stop(&k.broker);
	upstream_stop(up);
	hung_issuer_stop(&hung);
}

/* Waits (up to 10 s) until the proxy holds no connection: the job has
 * one (max_conns_per_job 1), and the proxy closes the last one a turn
 * after the client did. */
static void
wait_no_conns(void)
{
	for (int i = 0; i < 200; i++) {
		if (injectkit_metric(&k.proxy, "cordon_proxy_connections") == 0)
			return;
		usleep(50000);
	}
	ck_abort_msg("the job's connection is still open after 10 s");
}

/* Sends req on a new connection of the job's channel without waiting
 * for the answer: the socket. */
static int
send_only(const char *req)
{
	wait_no_conns();
	int fd = unix_connect(k.channel);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	return fd;
}

/* An injected GET of host's /case/x with the job's token. */
static void
injected_get(char *req, size_t cap, const char *host, const char *conn)
{
	injectkit_request_to(&k, req, cap, host, "GET", "/case/x", true, conn);
}

/* The answer's Retry-After in seconds, -1 when it has none. */
static long
retry_after(const char *resp)
{
	const char *end = strstr(resp, "\r\n\r\n");

	for (const char *l = strstr(resp, "\r\n"); l != NULL && l < end;
	     l = strstr(l + 2, "\r\n"))
		if (strncasecmp(l + 2, "Retry-After:", 12) == 0)
			return strtol(l + 14, NULL, 10);
	return -1;
}

/* resp is 503 with detail in it and a Retry-After of 1 to 10 s (want:
 * exactly that, when not 0). */
static void
assert_unavailable(const char *resp, const char *detail, long want)
{
	long ra = retry_after(resp);

	ck_assert_msg(http_status(resp) == 503 && strstr(resp, detail) != NULL,
	    "want 503 %s, got: %.500s", detail, resp);
	ck_assert_msg(ra >= 1 && ra <= 10 && (want == 0 || ra == want),
	    "want Retry-After %ld (1..10), got %ld: %.500s", want, ra, resp);
}

/* Waits (up to 15 s) until a release waits at the broker for the hung
 * issuer. */
static void
wait_release_at_broker(void)
{
	long n = 0;

	for (int i = 0; i < 300; i++) {
		char line[200], cmd[200];
		FILE *f;

		snprintf(cmd, sizeof(cmd), "curl -s %s/metrics", k.broker.base);
		f = popen(cmd, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line,
				"cordon_broker_issuer_releases_waiting ",
				38) == 0)
				n = strtol(line + 38, NULL, 10);
		pclose(f);
		if (n >= 1)
			return;
		usleep(50000);
	}
	ck_abort_msg("no release waits at the broker");
}

static void
broker_stop_signal(void)
{
	ck_assert_int_gt(k.broker.pid, 1);
	ck_assert_int_eq(kill(k.broker.pid, SIGSTOP), 0);
	ck_assert_msg(harness_all_stopped(k.broker.pid),
	    "the broker did not stop");
}

static void
broker_continue(void)
{
	ck_assert_int_gt(k.broker.pid, 1);
	ck_assert_int_eq(kill(k.broker.pid, SIGCONT), 0);
	/* The feed answers again. */
	for (int i = 0; i < 200; i++) {
		if (injectkit_metric(&k.proxy, "cordon_proxy_feed_ok") == 1)
			return;
		usleep(50000);
	}
	ck_abort_msg("the proxy does not hear the feed again");
}

/* The job's decision lines at the proxy, as text. */
static char *
job_log(void)
{
	char path[200];
	json_t *j;
	char *s;

	snprintf(path, sizeof(path), "/v1/jobs/%s/log", k.job);
	j = harness_expect(&k.proxy, 200, "GET", path, k.launcher, NULL, NULL);
	s = json_dumps(json_object_get(j, "decisions"), JSON_COMPACT);
	json_decref(j);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* Waits (up to 15 s: the idle timeout is 120 s, and the job's lease at
 * the broker, which nobody renews here, ends it after 30 s) until the
 * proxy holds no connection of any job and the hung listener none from
 * the proxy. */
static void
wait_let_go(const char *what)
{
	long conns = -1;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 150; i++) {
		conns = injectkit_metric(&k.proxy, "cordon_proxy_connections");
		if (conns == 0 && atomic_load(&hung.open) == 0) {
			/* Printed, not asserted: the machine is shared. */
			clock_gettime(CLOCK_MONOTONIC, &t1);
			printf("%s: let go within %.0f ms\n", what,
			    (double)(t1.tv_sec - t0.tv_sec) * 1000.0 +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
			fflush(stdout);
			return;
		}
		usleep(100000);
	}
	ck_abort_msg("%s: after 15 s the proxy holds %ld connections, the "
		     "hung upstream %u (idle timeout 120 s)",
	    what, conns, atomic_load(&hung.open));
}

/* --- releases that got no answer ------------------------------------- */

START_TEST(a_release_whose_broker_connection_dropped_is_503)
{
	char req[1024];
	int fd;

	injected_get(req, sizeof(req), "slow.test", "close");
	fd = send_only(req);
	wait_release_at_broker();
	daemon_kill(&k.broker);
	char *resp = http_exchange(fd, "", 0, 10000);
	close(fd);
	ck_assert_ptr_nonnull(resp);
	printf("a release whose broker went: %.300s\n", resp);
	fflush(stdout);
	assert_unavailable(resp, "release_timeout", 0);
	ck_assert_ptr_null(strstr(resp, "secret_unavailable"));
	free(resp);
}
END_TEST

START_TEST(a_release_with_no_answer_is_503_release_timeout)
{
	char req[1024], *resp = NULL;

	injected_get(req, sizeof(req), "api.test", "close");
	/* The token's answer cached; the release is asked every time. */
	wait_no_conns();
	resp = injectkit_send(&k, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	/* The broker stopped: the request must reach its release before the
	 * feed is missed (2 s), else it is feed_unavailable: tried again. */
	for (int tries = 0; tries < 5; tries++) {
		broker_stop_signal();
		int fd = send_only(req);
		resp = http_exchange(fd, "", 0, 15000);
		close(fd);
		ck_assert_ptr_nonnull(resp);
		broker_continue();
		if (strstr(resp, "feed_unavailable") == NULL)
			break;
		free(resp);
		resp = NULL;
	}
	ck_assert_ptr_nonnull(resp);
	printf("a release with no answer: %.300s\n", resp);
	fflush(stdout);
	assert_unavailable(resp, "release_timeout", 0);
	ck_assert_ptr_null(strstr(resp, "secret_unavailable"));
	free(resp);
}
END_TEST

START_TEST(an_introspection_with_no_answer_is_503)
{
	char req[1024], *resp = NULL;

	/* The job's token never used yet: its request is introspected, and
	 * the broker is stopped (as above, tried again if the feed was
	 * missed first). */
	injected_get(req, sizeof(req), "api.test", "close");
	for (int tries = 0; tries < 5; tries++) {
		wait_no_conns();
		broker_stop_signal();
		int fd = unix_connect(k.channel);
		ck_assert_int_ge(fd, 0);
		resp = http_exchange(fd, req, strlen(req), 15000);
		close(fd);
		ck_assert_ptr_nonnull(resp);
		broker_continue();
		if (strstr(resp, "feed_unavailable") == NULL)
			break;
		free(resp);
		resp = NULL;
	}
	ck_assert_ptr_nonnull(resp);
	printf("an introspection with no answer: %.300s\n", resp);
	fflush(stdout);
	assert_unavailable(resp, "introspection_failed", 2);
	ck_assert_msg(strstr(resp, "X-Cordon-Deny: token\r\n") != NULL,
	    "%.400s", resp);
	free(resp);
}
END_TEST

/* --- Retry-After on the other 503s ------------------------------------ */

START_TEST(the_brokers_503s_carry_its_retry_after)
{
	char req[1024];
	int fd;

	/* The issuer never answers: the broker's 503 after its 4 s. */
	injected_get(req, sizeof(req), "slow.test", "close");
	fd = send_only(req);
	char *resp = http_exchange(fd, "", 0, 15000);
	close(fd);
	ck_assert_ptr_nonnull(resp);
	assert_unavailable(resp, "issuer_unavailable", 2);
	free(resp);

	/* A broker stopping with the release waiting: its 503 and 1 s. */
	fd = send_only(req);
	wait_release_at_broker();
	ck_assert_int_eq(daemon_stop(&k.broker), 0);
	resp = http_exchange(fd, "", 0, 10000);
	close(fd);
	ck_assert_ptr_nonnull(resp);
	assert_unavailable(resp, "broker_stopping", 1);
	free(resp);
}
END_TEST

START_TEST(feed_unavailable_is_503_with_retry_after)
{
	char req[1024], *resp = NULL;

	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET", "/open/x",
	    false, "close");
	broker_stop_signal();
	for (int i = 0; i < 100; i++) {
		wait_no_conns();
		resp = injectkit_send(&k, req);
		if (strstr(resp, "feed_unavailable") != NULL)
			break;
		free(resp);
		resp = NULL;
		usleep(100000);
	}
	broker_continue();
	ck_assert_ptr_nonnull(resp);
	printf("the feed missed: %.300s\n", resp);
	fflush(stdout);
	assert_unavailable(resp, "X-Cordon-Deny: feed_unavailable", 0);
	free(resp);
}
END_TEST

/* --- an exchange the job gave up --------------------------------------- */

START_TEST(a_client_gone_while_the_upstream_thinks_is_let_go)
{
	char req[512];
	int fd;

	snprintf(req, sizeof(req),
	    "GET http://hang.test:%u/think HTTP/1.1\r\nHost: hang.test:%u\r\n"
	    "\r\n",
	    hung.port, hung.port);
	fd = send_only(req);
	hung_issuer_wait_open(&hung, 1);
	close(fd);
	wait_let_go("closed while the upstream thinks");
	/* The job's one connection is free: the next is admitted. */
	char req2[1024];
	injected_get(req2, sizeof(req2), "api.test", "close");
	char *resp = injectkit_send(&k, req2);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	char *log = job_log();
	ck_assert_msg(strstr(log, "\"detail\":\"client_gone\"") != NULL,
	    "no client_gone line: %.2000s", log);
	free(log);
}
END_TEST

START_TEST(a_half_close_then_a_close_is_let_go)
{
	char req[512];
	int fd;

	snprintf(req, sizeof(req),
	    "GET http://hang.test:%u/think HTTP/1.1\r\nHost: hang.test:%u\r\n"
	    "\r\n",
	    hung.port, hung.port);
	fd = send_only(req);
	hung_issuer_wait_open(&hung, 1);
	/* Done sending (legal: the answer is still wanted), then gone. */
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	usleep(500000);
	ck_assert_int_eq(injectkit_metric(&k.proxy, "cordon_proxy_connections"),
	    1);
	close(fd);
	wait_let_go("half-closed, then closed");
}
END_TEST

START_TEST(a_half_close_still_gets_its_answer)
{
	char req[512];
	int fd;

	/* The upstream answers /slow after 3 s; the client half-closed. */
	snprintf(req, sizeof(req),
	    "GET http://wait.test:%u/slow HTTP/1.1\r\nHost: wait.test:%u\r\n"
	    "\r\n",
	    k.up_port, k.up_port);
	fd = send_only(req);
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	char *resp = http_exchange(fd, "", 0, 15000);
	close(fd);
	ck_assert_msg(http_status(resp) == 200 && strstr(resp, "/slow") != NULL,
	    "%.400s", resp);
	free(resp);
}
END_TEST

START_TEST(a_client_gone_while_its_release_waits_is_let_go)
{
	char req[1024];
	int fd;

	injected_get(req, sizeof(req), "slow.test", "close");
	fd = send_only(req);
	wait_release_at_broker();
	close(fd);
	/* Let go at once, not answered 503 into a closed socket after the
	 * broker's 4 s. */
	wait_let_go("closed while its release waits");
	char *log = job_log();
	ck_assert_msg(strstr(log, "\"detail\":\"client_gone\"") != NULL,
	    "no client_gone line: %.2000s", log);
	ck_assert_msg(strstr(log, "issuer_unavailable") == NULL,
	    "the gone client's request was answered: %.2000s", log);
	free(log);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("proxy503");
	TCase *tc = tcase_create("proxy503");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_release_whose_broker_connection_dropped_is_503);
	tcase_add_test(tc, a_release_with_no_answer_is_503_release_timeout);
	tcase_add_test(tc, an_introspection_with_no_answer_is_503);
	tcase_add_test(tc, the_brokers_503s_carry_its_retry_after);
	tcase_add_test(tc, feed_unavailable_is_503_with_retry_after);
	tcase_add_test(tc, a_client_gone_while_the_upstream_thinks_is_let_go);
	tcase_add_test(tc, a_half_close_then_a_close_is_let_go);
	tcase_add_test(tc, a_half_close_still_gets_its_answer);
	tcase_add_test(tc, a_client_gone_while_its_release_waits_is_let_go);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
