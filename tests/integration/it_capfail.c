/*
 * An injected request goes only to a place the broker knows (issue 18,
 * capfail). The first injected request of a secret to an upstream
 * address the broker's list does not hold waits for the broker's 200 to
 * the proxy's POST /v1/bindings before any byte goes up; requests that
 * come while that report is in flight wait on the same one. The broker's
 * 409 bindings_cap refuses the request 403 bindings_cap, nothing sent,
 * and the refusal is remembered until the list moves (not told again on
 * every request); a broker that does not answer is 503 with Retry-After,
 * nothing sent. Before: the request went up at once, its address told
 * after, and a 409 only logged (binding_unreported) and told again at
 * every later request. Also: a manifest rule whose host is an IP literal
 * (the proxy refuses such rules at channel open) is refused at the PUT
 * and by cordon lint (it_capfail_race: the caps under reports at once).
 * No job is spawned (uid base 1420000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char value[] = "sk_live_capfail_0123456789abcdef";

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 api2.test\n";

/* The proxy's config beyond the kit's: tokens judged from the cache
 * while the broker is stopped. */
static const char extra[] = "\"token_cache_seconds\": 60";

/* The stack: broker, proxy, up-key; job A's manifest "writer" injects
 * up-key at api.test on port and, when port2 is not 0, at api2.test on
 * port2. */
static void
stack(struct injectkit *k, unsigned port, unsigned port2)
{
	json_t *egress = json_array();

	k->up_pid = -1;
	injectkit_stack_start(k, hosts, "proxy-capfail", extra);
	injectkit_secret(k, "up-key", value);
	k->up_port = port;
	ck_assert_int_eq(json_array_append_new(egress,
			     injectkit_inject_rule(k, false, NULL, NULL)),
	    0);
	if (port2 != 0) {
		json_t *r = injectkit_inject_rule(k, false, NULL, NULL);
		json_object_set_new(r, "host", json_string("api2.test"));
		json_object_set_new(r, "port", json_integer(port2));
		ck_assert_int_eq(json_array_append_new(egress, r), 0);
	}
	injectkit_job_start(k, "writer", injectkit_manifest("writer", egress));
}

/* Job A's injected GET /case/x to host:port, Connection: close. */
static void
request_at(const struct injectkit *k, const char *host, unsigned port,
    char *out, size_t cap)
{
	snprintf(out, cap,
	    "GET http://%s:%u/case/x HTTP/1.1\r\nHost: %s:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    host, port, host, port, k->tok);
}

/* The broker's POST /v1/bindings of addr for up-key and job: status. */
static long
tell(const struct injectkit *k, const char *job, const char *addr)
{
	long st;
	json_t *q = json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", job,
	    "addr", addr);
	json_t *r = harness_call(&k->broker, "POST", "/v1/bindings",
	    k->verifier, NULL, q, &st);

	json_decref(r);
	json_decref(q);
	return st;
}

/* Lines of d's log whose event is ev. */
static int
events(const struct daemon *d, const char *ev)
{
	json_t *lines = daemon_log_lines(d), *v;
	size_t i;
	int n = 0;

	json_array_foreach(lines, i, v)
	{
		const char *e = json_string_value(json_object_get(v, "event"));
		if (e != NULL && strcmp(e, ev) == 0)
			n++;
	}
	json_decref(lines);
	return n;
}

/*
 * up-key seen at 64 addresses already (the most the broker keeps a
 * secret): job A's injected request to a 65th is 403 bindings_cap with
 * nothing sent (before: 200, the key at the upstream); the next ones are
 * refused the same without asking the broker again, until the list
 * moves (a secret's PUT, read with a new channel's rules).
 */
START_TEST(an_address_past_the_cap_is_refused_with_nothing_sent)
{
	struct injectkit k;
	char addr[64], req[1024], chan[300], *resp;
	struct upstream *u = upstream_start(NULL, NULL);

	ck_assert_ptr_nonnull(u);
	ck_assert_int_gt(upstream_port(u), 64);
	stack(&k, upstream_port(u), 0);
	for (int i = 1; i <= 64; i++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", i);
		ck_assert_int_eq(tell(&k, k.job, addr), 200);
	}
	request_at(&k, "api.test", k.up_port, req, sizeof(req));
	resp = injectkit_send(&k, req);
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "X-Cordon-Deny: bindings_cap") != NULL,
	    "an injected request to an address past the cap: %.400s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(u), 0);
	ck_assert_int_eq(events(&k.broker, "bindings_cap"), 1);

	/* Refused again, the broker not asked again, one warn line. */
	for (int i = 0; i < 3; i++) {
		resp = injectkit_send(&k, req);
		ck_assert_msg(http_status(resp) == 403 &&
			strstr(resp, "bindings_cap") != NULL,
		    "request %d after the refusal: %.400s", i, resp);
		free(resp);
	}
	ck_assert_uint_eq(upstream_requests(u), 0);
	ck_assert_msg(events(&k.broker, "bindings_cap") == 1,
	    "the broker was told %d times", events(&k.broker, "bindings_cap"));
	ck_assert_int_eq(events(&k.proxy, "binding_refused"), 1);
	ck_assert(injectkit_decisions_hold(&k.proxy,
	    "\"reason\":\"bindings_cap\",\"detail\":\"refused_lately\""));

	/* The list moves (another secret's PUT); a new channel's rules carry
	 * its epoch: the next request asks again, and is refused again. */
	injectkit_secret(&k, "other", "sk_other_0123456789abcdef");
	json_t *j = harness_expect(&k.broker, 201, "POST", "/v1/jobs",
	    k.launcher, NULL, json_pack("{s:s}", "manifest", "writer"));
	snprintf(chan, sizeof(chan), "/v1/jobs/%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	json_decref(harness_expect(&k.proxy, 201, "POST", chan, k.launcher,
	    NULL, NULL));
	resp = injectkit_send(&k, req);
	ck_assert_msg(http_status(resp) == 403, "%.400s", resp);
	free(resp);
	ck_assert_int_eq(events(&k.broker, "bindings_cap"), 2);
	ck_assert_uint_eq(upstream_requests(u), 0);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/* A request sent on the channel and its answer (a thread). */
struct sent {
	const char *channel, *req;
	char *resp;
	pthread_t t;
};

static void *
send_main(void *arg)
{
	struct sent *s = arg;
	int fd = unix_connect(s->channel);

	s->resp =
	    fd >= 0 ? http_exchange(fd, s->req, strlen(s->req), 20000) : NULL;
	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * Job A's first injected request at api.test is released and told (200);
 * the broker stopped, three at once to api2.test (a new address, the
 * credential and the token cached) wait on one report, which gets no
 * answer: each is 503 with Retry-After, and api2.test's upstream got
 * nothing (before: 200 from it, the key sent, the address told after).
 * The broker back, the next one goes.
 */
START_TEST(a_report_without_an_answer_is_503_with_nothing_sent)
{
	struct injectkit k;
	char req[1024], *resp;
	struct upstream *u = upstream_start(NULL, NULL);
	struct upstream *u2 = upstream_start(NULL, NULL);
	struct sent s[3];

	ck_assert_ptr_nonnull(u);
	ck_assert_ptr_nonnull(u2);
	stack(&k, upstream_port(u), upstream_port(u2));
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);

	request_at(&k, "api2.test", upstream_port(u2), req, sizeof(req));
	ck_assert_int_gt(k.broker.pid, 1);
	ck_assert_int_eq(kill(k.broker.pid, SIGSTOP), 0);
	ck_assert_msg(harness_all_stopped(k.broker.pid),
	    "the broker (pid %d) did not stop", (int)k.broker.pid);
	for (int i = 0; i < 3; i++) {
		s[i] = (struct sent){ .channel = k.channel, .req = req };
		ck_assert_int_eq(pthread_create(&s[i].t, NULL, send_main,
				     &s[i]),
		    0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(s[i].t, NULL);
	ck_assert_int_eq(kill(k.broker.pid, SIGCONT), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_nonnull(s[i].resp);
		ck_assert_msg(http_status(s[i].resp) == 503 &&
			strstr(s[i].resp, "Retry-After: ") != NULL &&
			strstr(s[i].resp, "binding_unreported") != NULL,
		    "request %d with the broker stopped: %.400s", i, s[i].resp);
		free(s[i].resp);
	}
	ck_assert_uint_eq(upstream_requests(u2), 0);
	ck_assert_int_eq(injectkit_metric(&k.proxy,
			     "cordon_proxy_bindings_told_total"),
	    2);

	/* Not remembered as a refusal: the next one tells and goes (once
	 * the feed, silent while the broker was stopped, answers again). */
	for (int i = 0;
	     i < 100 && injectkit_metric(&k.proxy, "cordon_proxy_feed_ok") != 1;
	     i++)
		usleep(100 * 1000);
	resp = injectkit_send(&k, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(u2), 1);
	injectkit_stop(&k);
	upstream_stop(u);
	upstream_stop(u2);
}
END_TEST

/* Whether problems (an array of {field, message}) has one at field. */
static bool
problem_at(const json_t *problems, const char *field)
{
	const json_t *v;
	size_t i;

	json_array_foreach(problems, i, v)
	{
		const char *f = json_string_value(json_object_get(v, "field"));
		if (f != NULL && strcmp(f, field) == 0)
			return true;
	}
	return false;
}

/*
 * A rule whose host is an IP literal, in any spelling the proxy's
 * inet_aton reads (the proxy refuses such a rule at channel open: 502
 * bad_rules, a job that cannot run): refused at the manifest's PUT, 422
 * at egress[0].host, and by cordon lint (before: 200 and "ok").
 */
START_TEST(an_ip_literal_rule_host_is_refused_at_the_put_and_by_lint)
{
	static const char *const literals[] = { "127.0.0.1", "2130706433",
		"0x7f.1", "10.1", "*.0.0.1" };
	struct injectkit k;
	char path[400], out[4096], errb[1024];

	injectkit_stack_start(&k, hosts, "proxy-capfail", NULL);
	k.up_pid = -1;
	k.up_port = 8443;
	for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
		json_t *r = injectkit_inject_rule(&k, false, NULL, NULL);
		json_object_del(r, "inject");
		json_object_set_new(r, "host", json_string(literals[i]));
		json_t *m = injectkit_manifest("literal", json_pack("[o]", r));
		long st;
		json_t *a = harness_call(&k.broker, "PUT",
		    "/v1/manifests/literal", k.admin, NULL, m, &st);
		ck_assert_msg(st == 422 &&
			problem_at(json_object_get(a, "problems"),
			    "egress[0].host"),
		    "PUT of a rule to %s: %ld", literals[i], st);
		json_decref(a);

		snprintf(path, sizeof(path), "%s/literal.json",
		    harness_tmpdir());
		char *text = json_dumps(m, 0);
		ck_assert_ptr_nonnull(text);
		harness_write_file(path, text);
		free(text);
		json_decref(m);
		char *argv[] = { (char *)harness_bin("cordon"), "lint", path,
			NULL };
		int rc =
		    harness_run(argv, out, sizeof(out), errb, sizeof(errb));
		ck_assert_msg(rc == 1 && strstr(out, "egress[0].host") != NULL,
		    "cordon lint of a rule to %s: %d: %s", literals[i], rc,
		    out);
	}
	/* A name made of digits and letters is still a name. */
	json_t *r = injectkit_inject_rule(&k, false, NULL, NULL);
	json_object_del(r, "inject");
	json_object_set_new(r, "host", json_string("1.2.3.example"));
	json_decref(harness_expect(&k.broker, 200, "PUT", "/v1/manifests/named",
	    k.admin, NULL, injectkit_manifest("named", json_pack("[o]", r))));
	injectkit_stop(&k);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("capfail");
	TCase *tc = tcase_create("capfail");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc,
	    an_address_past_the_cap_is_refused_with_nothing_sent);
	tcase_add_test(tc, a_report_without_an_answer_is_503_with_nothing_sent);
	tcase_add_test(tc,
	    an_ip_literal_rule_host_is_refused_at_the_put_and_by_lint);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
