/*
 * The proxy's cache of the broker's good answers on a job's tokens
 * (proxy/tokcache.c, egress.md "Tokens"), with a real broker, a real
 * proxy and an upstream on 127.0.0.1: many requests on one kept-alive
 * connection cost the broker one introspection; and the cache never
 * outlives the token's right: a job revoked at the broker is cut before
 * the revoke returns, and so is a token revoked alone (the feed's
 * token entry drops it from the job's cache before the proxy
 * acknowledges; the job and its other tokens go on), a token past its
 * exp is refused at once; in none of these does a request reach the upstream.
 * A feed lost and back empties the cache: the token is asked again.
 */
#include "buf.h"
#include "harness.h"
#include "http_client.h"
#include "upstream.h"

#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct daemon broker, proxy;
static struct upstream *up;
static char admin[128], launcher[128], verifier[128];
static char job[64], channel[300];

/* Starts the broker, an upstream and a proxy whose cache keeps an answer
 * cache_s seconds (-1: the proxy's default); puts the manifest and opens
 * a job's channel. */
static void
start(int cache_s)
{
	char cfg[2048], dir[300], path[400], hostsf[400], cache[64] = "";
	json_t *m, *j;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	up = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(up);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", dir);
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	harness_write_file(path, verifier);
	if (cache_s >= 0)
		snprintf(cache, sizeof(cache), ", \"token_cache_seconds\": %d",
		    cache_s);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_file\": \"%s/var/broker/keys/launcher.key\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"tokcache-test\"%s}",
	    broker.base, path, broker.dir, hostsf, cache);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);

	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}], "
		      "s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s}]}",
	    "name", "tokcache-test", "command", "/bin/true", "capabilities",
	    "name", "x.read", "audience", "api", "params", "t", "1",
	    "ttl_seconds", 600, "reason", "read x", "egress", "host",
	    "api.test", "port", upstream_port(up), "methods", "GET", "paths",
	    "/ok/", "reason", "the api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api");
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&broker, 200, "PUT",
	    "/v1/manifests/tokcache-test", admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "tokcache-test"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
}

static void
teardown(void)
{
	upstream_stop(up);
	daemon_stop(&proxy);
	daemon_stop(&broker);
}

/* Mints x.read through the channel's broker.cordon (ttl 0: the
 * manifest's): the token, malloc'd. */
static char *
mint(int ttl)
{
	char body[128], req[512], *resp, *tok, *end;
	int fd = unix_connect(channel);

	ck_assert_int_ge(fd, 0);
	if (ttl > 0)
		snprintf(body, sizeof(body),
		    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"},"
		    "\"ttl_seconds\":%d}",
		    ttl);
	else
		snprintf(body, sizeof(body),
		    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}");
	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	resp = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	ck_assert_msg(http_status(resp) == 200, "mint: %.400s", resp);
	tok = strstr(resp, "crd_");
	ck_assert_ptr_nonnull(tok);
	end = strchr(tok, '"');
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	tok = strdup(tok);
	free(resp);
	return tok;
}

/* One request with tok on fd, a kept-alive connection: the answer. */
static char *
use(int fd, const char *tok)
{
	char req[512];

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/x HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\n\r\n",
	    upstream_port(up), upstream_port(up), tok);
	char *resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_ptr_nonnull(resp);
	return resp;
}

/* A counter of d's /metrics (0 when absent). */
static unsigned long long
metric(const struct daemon *d, const char *name)
{
	struct httpc_answer a;
	unsigned long long v = 0;
	size_t n = strlen(name);

	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(httpc_request(d->base, "GET", "/metrics", NULL, NULL,
			     NULL, 5000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	const char *p = buf_str(&a.body);
	while (p != NULL && *p != '\0') {
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			v = strtoull(p + n + 1, NULL, 10);
		p = strchr(p, '\n');
		p = p != NULL ? p + 1 : NULL;
	}
	httpc_answer_free(&a);
	return v;
}

static unsigned long long
introspections(void)
{
	return metric(&broker, "cordon_broker_introspections_total");
}

/* Whether the peer closed fd (or reset it). */
static bool
closed_now(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char c;

	if (poll(&p, 1, 2000) <= 0)
		return false;
	return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* Asserts resp is the proxy's refusal of a token, and that the job's
 * decision log has a token denial with this detail. */
static void
assert_refused(const char *resp, const char *detail)
{
	char path[128];
	json_t *j, *v;
	size_t i;
	int n = 0;

	ck_assert_msg(http_status(resp) == 403, "want 403, got: %.300s", resp);
	ck_assert_msg(strstr(resp, "X-Cordon-Deny: token\r\n") != NULL,
	    "not a token refusal: %.300s", resp);
	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	j = harness_expect(&proxy, 200, "GET", path, launcher, NULL, NULL);
	json_array_foreach(json_object_get(j, "decisions"), i, v)
	{
		const char *det =
		    json_string_value(json_object_get(v, "detail"));
		n += det != NULL && strcmp(det, detail) == 0;
	}
	json_decref(j);
	ck_assert_msg(n == 1, "%d token denials with detail %s", n, detail);
}

START_TEST(many_requests_on_one_connection_introspect_once)
{
	enum { N = 20 };
	char *tok, *resp;
	int fd;

	start(60);
	tok = mint(0);
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	unsigned long long before = introspections();
	for (int i = 0; i < N; i++) {
		resp = use(fd, tok);
		ck_assert_msg(http_status(resp) == 200, "request %d: %.300s", i,
		    resp);
		free(resp);
	}
	unsigned long long asked = introspections() - before;
	ck_assert_msg(asked == 1, "%d requests made %llu introspections", N,
	    asked);
	ck_assert_uint_eq(upstream_requests(up), N);
	ck_assert_uint_eq(metric(&proxy, "cordon_proxy_token_cache_hits_total"),
	    N - 1);
	/* Another connection of the job shares the job's cache. */
	close(fd);
	fd = unix_connect(channel);
	resp = use(fd, tok);
	ck_assert_int_eq(http_status(resp), 200);
	free(resp);
	ck_assert_uint_eq(introspections() - before, 1);
	close(fd);
	free(tok);
	teardown();
}
END_TEST

START_TEST(the_cache_is_on_by_default)
{
	char *tok, *resp;
	int fd;

	start(-1);
	tok = mint(0);
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	/* A request right after another is judged from the cache (5 s by
	 * default): with it off, none ever is. */
	for (int i = 0; i < 10 &&
	     metric(&proxy, "cordon_proxy_token_cache_hits_total") == 0;
	     i++) {
		resp = use(fd, tok);
		ck_assert_msg(http_status(resp) == 200, "request %d: %.300s", i,
		    resp);
		free(resp);
	}
	ck_assert_msg(metric(&proxy, "cordon_proxy_token_cache_hits_total") > 0,
	    "10 requests, none judged from the cache: it is off by default");
	close(fd);
	free(tok);
	teardown();
}
END_TEST

START_TEST(a_job_revoked_at_the_broker_is_cut_before_it_returns)
{
	char path[128], *tok, *resp;
	int fd;
	json_t *j;

	start(60);
	tok = mint(0);
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 3; i++) {
		resp = use(fd, tok);
		ck_assert_int_eq(http_status(resp), 200);
		free(resp);
	}
	unsigned served = upstream_requests(up);
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	j = harness_expect(&broker, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "test"));
	json_decref(j);
	/* The revoke returned: the proxy dropped the job's answers with its
	 * channel and connections before acknowledging. */
	resp = use(fd, tok);
	ck_assert_msg(http_status(resp) != 200,
	    "served after the revoke: %.300s", resp);
	free(resp);
	ck_assert(closed_now(fd));
	close(fd);
	ck_assert_int_lt(unix_connect(channel), 0);
	ck_assert_uint_eq(upstream_requests(up), served);
	ck_assert(!harness_token_active(&broker, verifier, tok));
	free(tok);
	teardown();
}
END_TEST

/* The job's state at the broker: "running" or "revoked". */
static void
assert_job_state(const char *want)
{
	char path[128];
	json_t *j;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&broker, 200, "GET", path, admin, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")), want);
	json_decref(j);
}

START_TEST(a_token_revoked_alone_is_refused_before_the_revoke_returns)
{
	char *tok, *other, *resp;
	json_t *j, *acked;
	int fd;

	/* A minute's window: only the feed can have dropped the answer. */
	start(60);
	tok = mint(0);
	other = mint(0);
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2; i++) {
		resp = use(fd, tok);
		ck_assert_int_eq(http_status(resp), 200);
		free(resp);
	}
	resp = use(fd, other);
	ck_assert_int_eq(http_status(resp), 200);
	free(resp);
	ck_assert_uint_eq(metric(&proxy, "cordon_proxy_token_cache_hits_total"),
	    1);
	unsigned served = upstream_requests(up);
	j = harness_expect(&broker, 200, "POST", "/v1/revoke", admin, NULL,
	    json_pack("{s:s}", "token", tok));
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "job")), job);
	ck_assert_int_gt(json_integer_value(json_object_get(j, "seq")), 0);
	/* It answered once the proxy acknowledged the revocation. */
	acked =
	    json_object_get(json_object_get(j, "propagated"), "acknowledged");
	ck_assert_msg(json_array_size(acked) == 1 &&
		strcmp(json_string_value(json_array_get(acked, 0)),
		    "tokcache-test") == 0,
	    "not acknowledged by the proxy: %s",
	    json_dumps(json_object_get(j, "propagated"), JSON_COMPACT));
	json_decref(j);
	/* The same request, at once, on the same connection. */
	resp = use(fd, tok);
	assert_refused(resp, "inactive");
	free(resp);
	ck_assert_uint_eq(upstream_requests(up), served);
	/* The job's other token is untouched (on a new connection: a
	 * refusal closes its own), and the job goes on. */
	close(fd);
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	resp = use(fd, other);
	ck_assert_int_eq(http_status(resp), 200);
	free(resp);
	close(fd);
	assert_job_state("running");
	/* Revoked again: nothing was, and nothing waits. */
	j = harness_expect(&broker, 200, "POST", "/v1/revoke", admin, NULL,
	    json_pack("{s:s}", "token", tok));
	ck_assert(json_is_false(json_object_get(j, "revoked")));
	json_decref(j);
	free(tok);
	free(other);
	teardown();
}
END_TEST

START_TEST(a_token_past_its_exp_is_refused_on_the_same_connection)
{
	char *tok, *resp;
	int fd;

	start(60);
	tok = mint(2);
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	resp = use(fd, tok);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	unsigned served = upstream_requests(up);
	/* Past its exp (the broker's, whole seconds): the cache, whose
	 * window is a minute, holds it no longer. */
	sleep(4);
	resp = use(fd, tok);
	assert_refused(resp, "inactive");
	free(resp);
	ck_assert_uint_eq(upstream_requests(up), served);
	close(fd);
	free(tok);
	teardown();
}
END_TEST

/* Waits (10 s at most) for the proxy's cordon_proxy_feed_ok to be want. */
static void
feed_ok_is(unsigned long long want)
{
	for (int i = 0; i < 100; i++) {
		if (metric(&proxy, "cordon_proxy_feed_ok") == want)
			return;
		usleep(100000);
	}
	ck_abort_msg("cordon_proxy_feed_ok never became %llu", want);
}

START_TEST(a_lost_feed_empties_the_cache)
{
	char *tok, *resp;
	int fd;

	start(60);
	tok = mint(0);
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2; i++) {
		resp = use(fd, tok);
		ck_assert_int_eq(http_status(resp), 200);
		free(resp);
	}
	close(fd);
	ck_assert_uint_eq(metric(&proxy, "cordon_proxy_token_cache_hits_total"),
	    1);
	/* The feed lost: a revoke may have been missed while it was. */
	daemon_kill(&broker);
	feed_ok_is(0);
	ck_assert_int_eq(daemon_restart(&broker), 0);
	feed_ok_is(1);
	unsigned long long before = introspections();
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	resp = use(fd, tok);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	close(fd);
	ck_assert_msg(introspections() - before == 1,
	    "the token was not asked again after the feed came back");
	ck_assert_uint_eq(metric(&proxy, "cordon_proxy_token_cache_hits_total"),
	    1);
	free(tok);
	teardown();
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tokcache");
	TCase *tc = tcase_create("tokcache");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, many_requests_on_one_connection_introspect_once);
	tcase_add_test(tc, the_cache_is_on_by_default);
	tcase_add_test(tc,
	    a_job_revoked_at_the_broker_is_cut_before_it_returns);
	tcase_add_test(tc,
	    a_token_revoked_alone_is_refused_before_the_revoke_returns);
	tcase_add_test(tc,
	    a_token_past_its_exp_is_refused_on_the_same_connection);
	tcase_add_test(tc, a_lost_feed_empties_the_cache);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
