/*
 * cordon serve's API for orchestrators, against the real services: the
 * list of jobs (newest first, filtered, paged), the patch and the report
 * over HTTP, a refused job that says why, Idempotency-Key, the signed
 * callback, the job counts in /metrics, serve's command cap, and serve's
 * log, every line of it JSON.
 */
#include "harness.h"

#include "http_client.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define CALLBACK_KEY "callback-key-for-the-tests-0123456789abcdef"

static struct stack st;
static struct daemon serve;
static char inputs[300];

static void
put_manifest_output(const char *name, int output_kb)
{
	json_t *m = json_pack("{s:s, s:[s], s:{s:s}, "
			      "s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s]}], "
			      "s:{s:i, s:i, s:i, s:i}, s:{s:[s]}}",
	    "name", name, "command", "/bin/true", "env", "LANG", "C.UTF-8",
	    "egress", "host", "api.test", "port", 9, "methods", "GET", "paths",
	    "/ok/", "reason", "the api", "allow_cidrs", "127.0.0.0/8", "limits",
	    "wall_seconds", 60, "memory_mb", 512, "pids", 64, "output_kb",
	    output_kb, "return", "protected", ".github/**");
	char path[128];

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", path, st.admin, NULL, m));
}

static void
put_manifest(const char *name)
{
	put_manifest_output(name, 256);
}

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 440000 };
	static char cfg[8192];
	char path[400];
	FILE *f;
	size_t n;

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(inputs, sizeof(inputs), "%s", st.inputs);
	snprintf(path, sizeof(path), "%s/repo", inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", inputs);
	harness_write_file(path, "hello\n");
	put_manifest("api-job");
	put_manifest("other-job");
	put_manifest_output("wide-job", 4096);

	/* serve: the stack's launcher configuration and a callback key. */
	snprintf(path, sizeof(path), "%s/callback.key", st.launcher_dir);
	harness_write_file(path, CALLBACK_KEY "\n");
	f = fopen(st.launcher_cfg, "re");
	ck_assert_ptr_nonnull(f);
	n = fread(cfg, 1, sizeof(cfg) - 1, f);
	fclose(f);
	while (n > 0 && cfg[n - 1] != '}')
		n--;
	ck_assert_int_gt(n, 0);
	/* Callbacks to 127.0.0.1 on any port; 2852039166 is a name the
	 * resolver turns into 169.254.169.254, as a DNS answer could. */
	snprintf(cfg + n - 1, sizeof(cfg) - n + 1,
	    ", \"callback_key_file\": \"%s\", "
	    "\"callback_allow\": [\"127.0.0.1\", \"2852039166\", "
	    "\"http://127.0.0.9:8080/hooks/\"]}",
	    path);
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);
}

static void
teardown(void)
{
	daemon_stop(&serve);
	stack_stop(&st);
}

/* POSTs a job of manifest running script under /bin/sh -c, with the
 * repository as input: the answer (json_decref it). */
static json_t *
post_job(long want, const char *header, const char *manifest,
    const char *script)
{
	char src[400];

	snprintf(src, sizeof(src), "%s/repo", inputs);
	return harness_expect(&serve, want, "POST", "/v1/jobs", st.launcher,
	    header,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s]}", "manifest", manifest,
		"inputs", "src", src, "dst", "repo", "command", "/bin/sh", "-c",
		script));
}

/* Waits until serve says job is done (20 s at most): its object. */
static json_t *
wait_done(const char *job)
{
	char path[160];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	for (int i = 0; i < 400; i++) {
		json_t *j = harness_expect(&serve, 200, "GET", path,
		    st.launcher, NULL, NULL);
		const char *s = json_string_value(json_object_get(j, "state"));
		if (s != NULL && strcmp(s, "done") == 0)
			return j;
		json_decref(j);
		usleep(50000);
	}
	ck_abort_msg("job %s did not end", job);
	return NULL;
}

/* A job's id, copied. */
static char *
job_id(const json_t *j)
{
	const char *id = json_string_value(json_object_get(j, "job"));

	ck_assert_ptr_nonnull(id);
	return strdup(id);
}

/* GET path on serve as raw text: the body (free it), its status and its
 * Content-Type's first bytes in type. */
static char *
get_raw(const char *path, long *ret_status)
{
	struct httpc_answer a;
	char *body;

	ck_assert_int_eq(httpc_request(serve.base, "GET", path, st.launcher,
			     NULL, NULL, 10000, &a),
	    0);
	*ret_status = a.status;
	body = strndup(a.body.data != NULL ? a.body.data : "", a.body.len);
	httpc_answer_free(&a);
	return body;
}

static size_t
count_jobs(const char *query)
{
	char path[300];
	json_t *j;
	size_t n;

	snprintf(path, sizeof(path), "/v1/jobs%s", query);
	j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	n = json_array_size(json_object_get(j, "jobs"));
	json_decref(j);
	return n;
}

START_TEST(jobs_are_listed_newest_first_filtered_and_paged)
{
	char *ids[4], path[300];
	json_t *j, *list, *e;
	long status;
	size_t i;

	for (i = 0; i < 3; i++) {
		j = post_job(201, NULL, i == 1 ? "other-job" : "api-job",
		    "echo done");
		ids[i] = job_id(j);
		json_decref(j);
		json_decref(wait_done(ids[i]));
	}
	j = post_job(201, NULL, "api-job", "sleep 60");
	ids[3] = job_id(j);
	json_decref(j);

	j = harness_expect(&serve, 200, "GET", "/v1/jobs", st.launcher, NULL,
	    NULL);
	list = json_object_get(j, "jobs");
	ck_assert_int_eq(json_array_size(list), 4);
	json_array_foreach(list, i, e)
	{
		ck_assert_str_eq(json_string_value(json_object_get(e, "job")),
		    ids[3 - i]);
		ck_assert_ptr_nonnull(json_object_get(e, "started"));
	}
	e = json_array_get(list, 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "state")),
	    "running");
	ck_assert_str_eq(json_string_value(json_object_get(e, "manifest")),
	    "api-job");
	ck_assert(json_is_null(json_object_get(e, "ended")));
	e = json_array_get(list, 1);
	ck_assert_str_eq(json_string_value(json_object_get(e, "state")),
	    "done");
	ck_assert_str_eq(json_string_value(json_object_get(e, "stop_reason")),
	    "exit");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "exit_code")),
	    0);
	ck_assert_ptr_nonnull(json_string_value(json_object_get(e, "verdict")));
	ck_assert(json_is_integer(json_object_get(e, "ended")));
	json_decref(j);

	ck_assert_int_eq(count_jobs("?state=running"), 1);
	ck_assert_int_eq(count_jobs("?state=done"), 3);
	ck_assert_int_eq(count_jobs("?manifest=other-job"), 1);
	ck_assert_int_eq(count_jobs("?manifest=api-job&state=done"), 2);
	ck_assert_int_eq(count_jobs("?manifest=nothing"), 0);

	/* Pages: two, then the two after the second. */
	j = harness_expect(&serve, 200, "GET", "/v1/jobs?limit=2", st.launcher,
	    NULL, NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "jobs")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(j, "next")), ids[2]);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs?limit=2&after=%s", ids[2]);
	j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	list = json_object_get(j, "jobs");
	ck_assert_int_eq(json_array_size(list), 2);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "job")),
	    ids[1]);
	ck_assert(json_is_null(json_object_get(j, "next")));
	json_decref(j);
	json_decref(harness_expect(&serve, 422, "GET", "/v1/jobs?state=odd",
	    st.launcher, NULL, NULL));
	json_decref(harness_expect(&serve, 422, "GET", "/v1/jobs?limit=0",
	    st.launcher, NULL, NULL));
	json_decref(harness_expect(&serve, 422, "GET",
	    "/v1/jobs?after=job_gone", st.launcher, NULL, NULL));
	json_decref(harness_expect(&serve, 401, "GET", "/v1/jobs", st.admin,
	    NULL, NULL));

	/* The counts in /metrics. */
	char *m = get_raw("/metrics", &status);
	ck_assert_int_eq(status, 200);
	ck_assert_msg(strstr(m, "cordon_serve_jobs_started_total 4\n") != NULL,
	    "%s", m);
	ck_assert_ptr_nonnull(
	    strstr(m, "cordon_serve_jobs{state=\"running\"} 1\n"));
	ck_assert_ptr_nonnull(
	    strstr(m, "cordon_serve_jobs{state=\"done\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(m,
	    "cordon_serve_jobs_ended_total{stop_reason=\"exit\"} 3\n"));
	ck_assert_ptr_nonnull(
	    strstr(m, "cordon_serve_job_duration_seconds_count 3\n"));
	free(m);

	snprintf(path, sizeof(path), "/v1/jobs/%s/stop", ids[3]);
	json_decref(
	    harness_expect(&serve, 200, "POST", path, st.launcher, NULL, NULL));
	for (i = 0; i < 4; i++)
		free(ids[i]);
}
END_TEST

START_TEST(the_patch_and_the_report_over_http)
{
	char path[300], *id, *patch, *file;
	const char *at;
	json_t *j, *r;
	long status;
	size_t len;

	j = post_job(201, NULL, "api-job", "sleep 60");
	id = job_id(j);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", id);
	json_decref(
	    harness_expect(&serve, 409, "GET", path, st.launcher, NULL, NULL));
	snprintf(path, sizeof(path), "/v1/jobs/%s/stop", id);
	json_decref(
	    harness_expect(&serve, 200, "POST", path, st.launcher, NULL, NULL));
	free(id);

	j = post_job(201, NULL, "api-job",
	    "echo new > repo/NEW.md; echo more >> repo/README.md");
	id = job_id(j);
	json_decref(j);
	j = wait_done(id);
	at = json_string_value(
	    json_object_get(json_object_get(j, "result"), "patch"));
	ck_assert_ptr_nonnull(at);

	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", id);
	patch = get_raw(path, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_msg(strstr(patch, "+new") != NULL, "%s", patch);
	ck_assert_ptr_nonnull(strstr(patch, "+more"));
	/* The same bytes as the file cordon run wrote. */
	FILE *f = fopen(at, "re");
	ck_assert_ptr_nonnull(f);
	file = calloc(1, 1 << 16);
	len = fread(file, 1, (1 << 16) - 1, f);
	fclose(f);
	ck_assert_uint_eq(len, strlen(patch));
	ck_assert_str_eq(file, patch);
	free(file);
	free(patch);

	snprintf(path, sizeof(path), "/v1/jobs/%s/report", id);
	r = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(r, "job")), id);
	ck_assert_str_eq(json_string_value(json_object_get(r, "verdict")),
	    json_string_value(
		json_object_get(json_object_get(j, "result"), "verdict")));
	ck_assert_int_eq(json_array_size(json_object_get(r, "changes")), 2);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(r, "patch"),
				 "bytes")),
	    (json_int_t)len);
	ck_assert_int_eq(strlen(json_string_value(
			     json_object_get(json_object_get(r, "patch"),
				 "sha256"))),
	    64);
	json_decref(r);
	json_decref(j);
	json_decref(harness_expect(&serve, 404, "GET",
	    "/v1/jobs/job_nope/patch", st.launcher, NULL, NULL));
	json_decref(harness_expect(&serve, 404, "GET",
	    "/v1/jobs/job_nope/report", st.launcher, NULL, NULL));
	free(id);
}
END_TEST

START_TEST(a_job_that_cannot_start_says_why)
{
	const char *m;
	json_t *j, *lines, *line;
	char *id;
	size_t i;

	j = post_job(502, NULL, "no-such-manifest", "true");
	ck_assert_str_eq(json_string_value(json_object_get(j, "error")),
	    "job_not_started");
	m = json_string_value(json_object_get(j, "message"));
	ck_assert_msg(m != NULL && strstr(m, "manifest") != NULL, "%s",
	    m != NULL ? m : "(no message)");
	json_decref(j);

	/* The broker made the job; the hatch refused its input. */
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", st.launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}]}", "manifest", "api-job", "inputs",
		"src", "/etc", "dst", "etc"));
	id = job_id(j);
	json_decref(j);
	j = wait_done(id);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_object_get(j, "result"),
				 "stop_reason")),
	    "launcher_error");
	m = json_string_value(json_object_get(j, "error"));
	ck_assert_msg(m != NULL && strstr(m, "hatch") != NULL, "%s",
	    m != NULL ? m : "(no error)");
	json_decref(j);
	free(id);

	/* Every line serve logged is JSON, its children's included. */
	lines = daemon_log_lines(&serve);
	ck_assert_int_gt(json_array_size(lines), 0);
	json_array_foreach(lines, i, line) ck_assert_msg(json_is_object(line),
	    "not JSON: %s", json_string_value(line));
	json_decref(lines);
}
END_TEST

START_TEST(an_idempotency_key_gives_the_same_job)
{
	json_t *a, *b;
	char *id;

	a = post_job(201, "Idempotency-Key: order-7", "api-job", "sleep 60");
	id = job_id(a);
	b = post_job(200, "Idempotency-Key: order-7", "api-job", "sleep 60");
	ck_assert_str_eq(json_string_value(json_object_get(b, "job")), id);
	json_decref(b);
	/* The same key with another body is a mistake, not a new job. */
	b = post_job(422, "Idempotency-Key: order-7", "api-job", "sleep 61");
	ck_assert_str_eq(json_string_value(json_object_get(b, "error")),
	    "idempotency_key_reused");
	json_decref(b);
	json_decref(
	    post_job(422, "Idempotency-Key: two words", "api-job", "true"));
	ck_assert_int_eq(count_jobs(""), 1);
	char path[160];
	snprintf(path, sizeof(path), "/v1/jobs/%s/stop", id);
	json_decref(
	    harness_expect(&serve, 200, "POST", path, st.launcher, NULL, NULL));
	json_decref(a);
	free(id);
}
END_TEST

/* A one-shot HTTP receiver for the callback: the request it got. */
struct receiver {
	int fd;
	uint16_t port;
	pthread_t thread;
	char req[16384];
	size_t len;
	const char *answer; /* NULL: 200 OK */
};

static void *
receive(void *arg)
{
	struct receiver *r = arg;
	int c = accept(r->fd, NULL, NULL);
	const char ok[] =
	    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

	if (c < 0)
		return NULL;
	for (;;) {
		ssize_t n =
		    read(c, r->req + r->len, sizeof(r->req) - 1 - r->len);
		if (n <= 0)
			break;
		r->len += (size_t)n;
		r->req[r->len] = '\0';
		char *body = strstr(r->req, "\r\n\r\n");
		char *cl = strcasestr(r->req, "content-length:");
		if (body != NULL && cl != NULL &&
		    r->len - (size_t)(body + 4 - r->req) >=
			strtoul(cl + 15, NULL, 10))
			break;
	}
	const char *say = r->answer != NULL ? r->answer : ok;
	if (write(c, say, strlen(say)) < 0) {
		/* serve's problem, seen by the test below */
	}
	close(c);
	return NULL;
}

START_TEST(the_callback_is_signed)
{
	struct receiver r = { 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char url[128], *id, hex[65];
	unsigned char mac[32];
	unsigned maclen = sizeof(mac);
	json_t *j, *body;
	char src[400];

	r.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(r.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(r.fd, 4), 0);
	ck_assert_int_eq(getsockname(r.fd, (struct sockaddr *)&sa, &sl), 0);
	r.port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&r.thread, NULL, receive, &r), 0);

	/* Not a URL serve can call: refused before anything runs. */
	snprintf(src, sizeof(src), "%s/repo", inputs);
	json_decref(
	    harness_expect(&serve, 422, "POST", "/v1/jobs", st.launcher, NULL,
		json_pack("{s:s, s:s}", "manifest", "api-job", "callback",
		    "ftp://x/")));

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook/x", r.port);
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", st.launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s], s:s}", "manifest",
		"api-job", "inputs", "src", src, "dst", "repo", "command",
		"/bin/sh", "-c", "exit 3", "callback", url));
	id = job_id(j);
	json_decref(j);
	json_decref(wait_done(id));
	pthread_join(r.thread, NULL);
	close(r.fd);

	ck_assert_msg(strncmp(r.req, "POST /hook/x HTTP/1.1\r\n", 23) == 0,
	    "%s", r.req);
	char *b = strstr(r.req, "\r\n\r\n");
	ck_assert_ptr_nonnull(b);
	b += 4;
	body = json_loads(b, 0, NULL);
	ck_assert_msg(body != NULL, "%s", r.req);
	ck_assert_str_eq(json_string_value(json_object_get(body, "job")), id);
	ck_assert_str_eq(json_string_value(json_object_get(body, "state")),
	    "done");
	ck_assert_int_eq(json_integer_value(json_object_get(body, "exit_code")),
	    3);
	json_decref(body);
	HMAC(EVP_sha256(), CALLBACK_KEY, strlen(CALLBACK_KEY),
	    (unsigned char *)b, strlen(b), mac, &maclen);
	for (size_t i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	char want[100];
	snprintf(want, sizeof(want), "X-Cordon-Signature: sha256=%s\r\n", hex);
	ck_assert_msg(strcasestr(r.req, want) != NULL, "want %s in %s", want,
	    r.req);
	free(id);
}
END_TEST

/* The callback's problem in a 422 answer: its text. */
static const char *
callback_problem(json_t *j)
{
	json_t *p;
	size_t i;

	json_array_foreach(json_object_get(j, "problems"), i, p)
	{
		const char *f = json_string_value(json_object_get(p, "field"));
		if (f != NULL && strcmp(f, "callback") == 0)
			return json_string_value(json_object_get(p, "problem"));
	}
	return "";
}

static json_t *
post_callback(long want, const char *url)
{
	return harness_expect(&serve, want, "POST", "/v1/jobs", st.launcher,
	    NULL,
	    json_pack("{s:s, s:[s], s:s}", "manifest", "api-job", "command",
		"/bin/true", "callback", url));
}

/* A callback goes only where callback_allow says, never to a link-local
 * or metadata address it does not name itself, and never follows a
 * redirect. */
START_TEST(callbacks_go_only_where_allowed)
{
	static const char *const refused[] = { "http://127.0.0.2:9/x",
		"http://169.254.169.254/latest/meta-data/", "http://localhost/",
		"http://127.0.0.9:8080/hooksmith",
		"http://127.0.0.9:8081/hooks/x", "http://user@127.0.0.1/" };
	struct receiver r = { .answer = "HTTP/1.1 302 Found\r\nLocation: "
					"http://169.254.169.254/\r\n"
					"Content-Length: 0\r\n\r\n" };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char url[128], *id;
	json_t *j;

	for (size_t i = 0; i < ARRAY_LEN(refused); i++) {
		j = post_callback(422, refused[i]);
		ck_assert_msg(strstr(callback_problem(j), "callback_allow") !=
			    NULL ||
			(i == 5 && strstr(callback_problem(j), "URL") != NULL),
		    "%s: %s", refused[i], callback_problem(j));
		json_decref(j);
	}
	/* Listed, but as a name that leads to the metadata address. */
	j = post_callback(422, "http://2852039166/");
	ck_assert_msg(strstr(callback_problem(j),
			  "169.254.169.254, a link-local or metadata "
			  "address") != NULL,
	    "%s", callback_problem(j));
	json_decref(j);
	ck_assert_int_eq(count_jobs(""), 0);

	/* An allowed receiver that answers with a redirect: not followed,
	 * and not tried again. */
	r.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(r.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(r.fd, 4), 0);
	ck_assert_int_eq(getsockname(r.fd, (struct sockaddr *)&sa, &sl), 0);
	r.port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&r.thread, NULL, receive, &r), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", r.port);
	j = post_callback(201, url);
	id = job_id(j);
	json_decref(j);
	json_decref(wait_done(id));
	pthread_join(r.thread, NULL);
	close(r.fd);
	ck_assert_msg(strncmp(r.req, "POST /hook HTTP/1.1\r\n", 21) == 0, "%s",
	    r.req);
	json_t *line = NULL;
	for (int i = 0; i < 200 && line == NULL; i++) {
		json_t *lines = daemon_log_lines(&serve), *l;
		size_t k;
		json_array_foreach(lines, k, l)
		{
			const char *ev =
			    json_string_value(json_object_get(l, "event"));
			const char *job =
			    json_string_value(json_object_get(l, "job"));
			if (ev != NULL && job != NULL &&
			    strncmp(ev, "callback_", 9) == 0 &&
			    strcmp(job, id) == 0)
				line = json_incref(l);
		}
		json_decref(lines);
		if (line == NULL)
			usleep(50000);
	}
	ck_assert_msg(line != NULL, "no callback line for %s", id);
	const char *e = json_string_value(json_object_get(line, "error"));
	ck_assert_msg(e != NULL &&
		strstr(e, "redirect: not followed") != NULL &&
		json_integer_value(json_object_get(line, "tries")) == 1,
	    "%s after %lld tries",
	    e != NULL ? e : json_string_value(json_object_get(line, "event")),
	    (long long)json_integer_value(json_object_get(line, "tries")));
	json_decref(line);
	free(id);
}
END_TEST

START_TEST(the_command_cap_is_the_manifests)
{
	json_t *cmd = json_array(), *j;
	char src[400];
	char *id;

	snprintf(src, sizeof(src), "%s/repo", inputs);
	json_array_append_new(cmd, json_string("/bin/true"));
	while (json_array_size(cmd) < 256)
		json_array_append_new(cmd, json_string("x"));
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", st.launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:O}", "manifest", "api-job",
		"inputs", "src", src, "dst", "repo", "command", cmd));
	id = job_id(j);
	json_decref(j);
	j = wait_done(id);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(j, "result"),
				 "exit_code")),
	    0);
	json_decref(j);
	free(id);
	json_array_append_new(cmd, json_string("x"));
	json_decref(harness_expect(&serve, 422, "POST", "/v1/jobs", st.launcher,
	    NULL,
	    json_pack("{s:s, s:o}", "manifest", "api-job", "command", cmd)));
}
END_TEST

/* ?follow=1: what the job writes, cleaned, while it runs; then the
 * envelope once it stopped. The job waits until it is stopped, so what
 * is seen before is seen while it runs. */
START_TEST(the_output_is_followed_while_the_job_runs)
{
	char path[300], *id;
	json_t *j, *chunk;
	const char *text = NULL;
	long next = 0;

	j = post_job(201, NULL, "api-job",
	    "printf 'first \\033[31mred\\033[0m\\n'; echo oops >&2; "
	    "sleep 60");
	id = job_id(j);
	json_decref(j);
	/* Until both lines came, page after page, each while it runs. */
	bool out = false, err = false;
	for (int i = 0; i < 10 && !(out && err); i++) {
		snprintf(path, sizeof(path),
		    "/v1/jobs/%s/output?follow=1&offset=%ld&wait=5", id, next);
		j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL,
		    NULL);
		ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
		    "running");
		ck_assert(json_is_null(json_object_get(j, "envelope")));
		next = (long)json_integer_value(json_object_get(j, "next"));
		size_t k;
		json_array_foreach(json_object_get(j, "chunks"), k, chunk)
		{
			const char *stream =
			    json_string_value(json_object_get(chunk, "stream"));
			text =
			    json_string_value(json_object_get(chunk, "text"));
			if (strcmp(stream, "stdout") == 0) {
				/* The escape sequences are gone. */
				ck_assert_str_eq(text, "first red\n");
				out = true;
			} else if (strcmp(stream, "stderr") == 0) {
				ck_assert_str_eq(text, "oops\n");
				err = true;
			}
		}
		json_decref(j);
	}
	ck_assert_msg(out && err, "the output did not come while it ran");

	snprintf(path, sizeof(path), "/v1/jobs/%s/stop", id);
	json_decref(
	    harness_expect(&serve, 200, "POST", path, st.launcher, NULL, NULL));
	snprintf(path, sizeof(path), "/v1/jobs/%s/output?follow=1&offset=%ld",
	    id, next);
	j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "done");
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_object_get(json_object_get(j,
								 "envelope"),
						 "stdout"),
				 "text")),
	    "first red\n");
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s/output?follow=1&wait=99", id);
	json_decref(
	    harness_expect(&serve, 422, "GET", path, st.launcher, NULL, NULL));
	free(id);
}
END_TEST

/* The envelope serve gives holds what the manifest's output_kb allows,
 * not a buffer's worth of it. */
START_TEST(the_output_is_kept_up_to_output_kb)
{
	char path[300], *id;
	json_t *j, *o;

	j = post_job(201, NULL, "wide-job",
	    "head -c 3000000 /dev/zero | tr '\\0' a");
	id = job_id(j);
	json_decref(j);
	json_decref(wait_done(id));
	snprintf(path, sizeof(path), "/v1/jobs/%s/output", id);
	j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	o = json_object_get(j, "stdout");
	ck_assert_msg(json_integer_value(json_object_get(o, "bytes")) ==
		    3000000 &&
		strlen(json_string_value(json_object_get(o, "text")) ?: "") ==
		    3000000 &&
		json_is_false(json_object_get(o, "truncated")),
	    "%lld bytes seen, %zu kept under output_kb 4096, truncated %s",
	    (long long)json_integer_value(json_object_get(o, "bytes")),
	    strlen(json_string_value(json_object_get(o, "text")) ?: ""),
	    json_is_true(json_object_get(o, "truncated")) ? "true" : "false");
	json_decref(j);
	free(id);
}
END_TEST

/* A stop that comes while the job is still being set up (its workspace,
 * its channel, its sandbox) runs the stop path all the same: the job is
 * revoked and sealed, not killed with its result lost. */
START_TEST(a_job_stopped_as_it_starts_runs_its_stop_path)
{
	char path[160], *id;
	json_t *j, *res;

	j = post_job(201, NULL, "api-job", "sleep 60");
	id = job_id(j);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s/stop", id);
	j = harness_expect(&serve, 200, "POST", path, st.launcher, NULL, NULL);
	res = json_object_get(j, "result");
	ck_assert_msg(json_is_object(res), "no result: %s",
	    json_string_value(json_object_get(j, "error")) ?: "(no error)");
	ck_assert_str_eq(json_string_value(json_object_get(res, "stop_reason")),
	    "stopped");
	ck_assert(json_is_true(json_object_get(res, "revoked")));
	json_decref(j);
	free(id);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("serve_api");
	TCase *tc = tcase_create("serve_api");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, jobs_are_listed_newest_first_filtered_and_paged);
	tcase_add_test(tc, the_patch_and_the_report_over_http);
	tcase_add_test(tc, a_job_that_cannot_start_says_why);
	tcase_add_test(tc, an_idempotency_key_gives_the_same_job);
	tcase_add_test(tc, the_callback_is_signed);
	tcase_add_test(tc, callbacks_go_only_where_allowed);
	tcase_add_test(tc, the_command_cap_is_the_manifests);
	tcase_add_test(tc, the_output_is_followed_while_the_job_runs);
	tcase_add_test(tc, the_output_is_kept_up_to_output_kb);
	tcase_add_test(tc, a_job_stopped_as_it_starts_runs_its_stop_path);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
