/*
 * The HTTP glue and the HTTP client, against each other on loopback: the
 * statuses and JSON errors every service relies on, the key check, the
 * body cap, and a stop that lets a request in flight finish.
 */
#include "http_client.h"
#include "http_server.h"
#include "keys.h"
#include "service.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define ADMIN_KEY "crk_admin-key-for-tests-0123456789abcdef"
#define VERIFIER_KEY "crk_verifier-key-for-tests-0123456789abcd"

static struct http_server *srv;
static struct keyring ring;
static char base[96];
static char addr[64];

static void
handle_thing(void *ctx, struct http_request *req, struct http_response *res)
{
	(void)ctx;
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s?}", "thing", http_request_param(req, 0), "q",
		http_request_query(req, "q")));
}

static void
handle_echo(void *ctx, struct http_request *req, struct http_response *res)
{
	(void)ctx;
	http_reply_json(res, 200, json_incref(http_request_body(req)));
}

static void
handle_big(void *ctx, struct http_request *req, struct http_response *res)
{
	static char block[1024 * 1024];

	(void)ctx;
	(void)req;
	memset(block, 'x', sizeof(block));
	buf_init(&res->text, 16 * 1024 * 1024);
	for (int i = 0; i < 9; i++)
		buf_append(&res->text, block, sizeof(block));
	res->status = 200;
	res->content_type = "text/plain";
}

static const struct http_route routes[] = {
	{ "GET", "/v1/things/*", 0, BODY_NONE, handle_thing },
	{ "POST", "/v1/things/*", ROLE_ADMIN, BODY_NONE, handle_thing },
	{ "POST", "/v1/echo", ROLE_ADMIN, BODY_JSON, handle_echo },
	{ "GET", "/v1/big", 0, BODY_NONE, handle_big },
};

static void
start(void)
{
	int fd = service_listen("127.0.0.1:0");

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(service_sockname(fd, addr, sizeof(addr)), 0);
	snprintf(base, sizeof(base), "http://%s", addr);
	memset(&ring, 0, sizeof(ring));
	ck_assert_int_eq(keyring_add(&ring, ADMIN_KEY, strlen(ADMIN_KEY),
			     ROLE_ADMIN),
	    0);
	ck_assert_int_eq(keyring_add(&ring, VERIFIER_KEY, strlen(VERIFIER_KEY),
			     ROLE_VERIFIER),
	    0);
	struct http_server_config cfg = {
		.svc = "test",
		.listen_fd = fd,
		.threads = 2,
		.routes = routes,
		.nroutes = sizeof(routes) / sizeof(routes[0]),
		.keys = &ring,
	};
	ck_assert_int_eq(http_server_start(&cfg, &srv), 0);
}

static void
stop(void)
{
	http_server_stop(srv, 1000);
	srv = NULL;
}

/* One call; asserts an answer came and returns it. */
static struct httpc_answer
call(const char *method, const char *path, const char *key, json_t *body)
{
	struct httpc_answer a;

	ck_assert_int_eq(httpc_request(base, method, path, key, NULL, body,
			     5000, &a),
	    0);
	return a;
}

static void
assert_error(struct httpc_answer *a, long status, const char *code)
{
	ck_assert_int_eq(a->status, status);
	ck_assert_ptr_nonnull(a->json);
	ck_assert_str_eq(json_string_value(json_object_get(a->json, "error")),
	    code);
	ck_assert(json_is_string(json_object_get(a->json, "message")));
	httpc_answer_free(a);
}

START_TEST(healthz_and_metrics)
{
	struct httpc_answer a = call("GET", "/healthz", NULL, NULL);

	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(json_string_value(json_object_get(a.json, "status")),
	    "ok");
	ck_assert_str_eq(json_string_value(json_object_get(a.json, "svc")),
	    "test");
	httpc_answer_free(&a);
	a = call("GET", "/nowhere", NULL, NULL);
	assert_error(&a, 404, "not_found");

	a = call("GET", "/metrics", NULL, NULL);
	ck_assert_int_eq(a.status, 200);
	ck_assert_ptr_null(a.json);
	ck_assert_ptr_nonnull(strstr(buf_str(&a.body),
	    "cordon_http_responses_total{code=\"200\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(buf_str(&a.body),
	    "cordon_http_responses_total{code=\"404\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(buf_str(&a.body),
	    "# TYPE cordon_http_responses_total counter\n"));
	httpc_answer_free(&a);
}
END_TEST

START_TEST(routing)
{
	struct httpc_answer a =
	    call("GET", "/v1/things/abc-1.2_x?q=hello%20there", NULL, NULL);

	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(json_string_value(json_object_get(a.json, "thing")),
	    "abc-1.2_x");
	ck_assert_str_eq(json_string_value(json_object_get(a.json, "q")),
	    "hello there");
	httpc_answer_free(&a);

	/* A segment outside the safe alphabet, an extra segment, a dot
	 * segment, a doubled slash: no route. */
	static const char *const bad[] = { "/v1/things/a%2Fb", "/v1/things/a/b",
		"/v1/things/..", "/v1/things/.hidden", "/v1//things/a",
		"/v1/things/", "/v1/things/a%00b", "/v1/things/a%20b" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = call("GET", bad[i], NULL, NULL);
		ck_assert_msg(a.status == 404, "%s: %ld", bad[i], a.status);
		assert_error(&a, 404, "not_found");
	}

	a = call("DELETE", "/v1/things/abc", NULL, NULL);
	ck_assert_int_eq(a.status, 405);
	ck_assert_str_eq(json_string_value(json_object_get(a.json, "error")),
	    "method_not_allowed");
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(a.json, "message")),
		"GET, POST"));
	httpc_answer_free(&a);
}
END_TEST

START_TEST(keys_and_roles)
{
	json_t *body = json_pack("{s:i}", "n", 1);
	struct httpc_answer a;

	a = call("POST", "/v1/echo", NULL, body);
	assert_error(&a, 401, "unauthorized");
	a = call("POST", "/v1/echo", "crk_not-a-key-we-know-0123456789abcdef",
	    body);
	assert_error(&a, 401, "unauthorized");
	a = call("POST", "/v1/echo", ADMIN_KEY "x", body);
	assert_error(&a, 401, "unauthorized");
	a = call("POST", "/v1/echo", VERIFIER_KEY, body);
	assert_error(&a, 403, "forbidden");
	a = call("POST", "/v1/echo", ADMIN_KEY, body);
	ck_assert_int_eq(a.status, 200);
	ck_assert(json_equal(a.json, body));
	httpc_answer_free(&a);
	json_decref(body);

	a = call("GET", "/metrics", NULL, NULL);
	ck_assert_ptr_nonnull(
	    strstr(buf_str(&a.body), "cordon_http_auth_failures_total 4\n"));
	httpc_answer_free(&a);
}
END_TEST

/* Sends raw bytes on a fresh connection and returns what came back. */
static char *
raw_exchange(const char *req, size_t len)
{
	struct sockaddr_storage sa;
	socklen_t salen;
	static char out[65536];
	size_t got = 0;
	int fd;

	ck_assert_int_eq(service_parse_addr(addr, &sa, &salen), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, salen), 0);
	ck_assert_int_eq(write(fd, req, len), (ssize_t)len);
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n = read(fd, out + got, sizeof(out) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(fd);
	return out;
}

static void
post_raw(const char *body, long status, const char *code)
{
	json_error_t err;
	char req[4096];
	int n = snprintf(req, sizeof(req),
	    "POST /v1/echo HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer " ADMIN_KEY "\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	char *out = raw_exchange(req, (size_t)n);
	char line[32];

	snprintf(line, sizeof(line), "HTTP/1.1 %ld ", status);
	ck_assert_msg(strncmp(out, line, strlen(line)) == 0,
	    "for body %s: %.80s", body, out);
	char *json = strstr(out, "\r\n\r\n");
	ck_assert_ptr_nonnull(json);
	json_t *v = json_loads(json + 4, 0, &err);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "error")), code);
	json_decref(v);
}

START_TEST(bodies)
{
	post_raw("{\"a\": ", 400, "malformed");
	post_raw("[1, 2]", 400, "malformed");
	post_raw("", 400, "malformed");
	post_raw("{\"a\": 1, \"a\": 2}", 400, "malformed");
	post_raw("{\"a\": \"\\u0000\"}", 400, "malformed");
	post_raw("{\"a\": \"\xff\xfe\"}", 400, "malformed");

	/* Over the cap by its declared length: refused before it is read. */
	char *out = raw_exchange("POST /v1/echo HTTP/1.1\r\nHost: x\r\n"
				 "Authorization: Bearer " ADMIN_KEY "\r\n"
				 "Content-Length: 1048577\r\n\r\n",
	    0 +
		strlen("POST /v1/echo HTTP/1.1\r\nHost: x\r\n"
		       "Authorization: Bearer " ADMIN_KEY "\r\n"
		       "Content-Length: 1048577\r\n\r\n"));
	ck_assert_msg(strncmp(out, "HTTP/1.1 413 ", 13) == 0, "%.80s", out);
	ck_assert_ptr_nonnull(strstr(out, "body_too_large"));

	/* Over the cap in chunks, with no declared length. */
	json_t *big = json_object();
	char *blob = malloc(1100 * 1024);
	memset(blob, 'a', 1100 * 1024 - 1);
	blob[1100 * 1024 - 1] = '\0';
	json_object_set_new(big, "blob", json_string(blob));
	free(blob);
	struct httpc_answer a;
	ck_assert_int_eq(httpc_request(base, "POST", "/v1/echo", ADMIN_KEY,
			     "Transfer-Encoding: chunked", big, 5000, &a),
	    0);
	assert_error(&a, 413, "body_too_large");
	json_decref(big);

	/* And the server still serves. */
	a = call("GET", "/healthz", NULL, NULL);
	ck_assert_int_eq(a.status, 200);
	httpc_answer_free(&a);
}
END_TEST

START_TEST(client_errors)
{
	struct httpc_answer a;
	int fd;
	char quiet[64], url[96];

	/* Nothing listens: refused. */
	fd = service_listen("127.0.0.1:0");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(service_sockname(fd, quiet, sizeof(quiet)), 0);
	close(fd);
	snprintf(url, sizeof(url), "http://%s", quiet);
	ck_assert_int_eq(httpc_request(url, "GET", "/", NULL, NULL, NULL, 2000,
			     &a),
	    -ECONNREFUSED);

	/* Listens, never answers: a timeout, not a hang. */
	fd = service_listen("127.0.0.1:0");
	ck_assert_int_eq(service_sockname(fd, quiet, sizeof(quiet)), 0);
	snprintf(url, sizeof(url), "http://%s", quiet);
	ck_assert_int_eq(httpc_request(url, "GET", "/", NULL, NULL, NULL, 300,
			     &a),
	    -ETIMEDOUT);
	close(fd);

	/* An answer over the client's cap. */
	ck_assert_int_eq(httpc_request(base, "GET", "/v1/big", NULL, NULL, NULL,
			     5000, &a),
	    -EFBIG);
}
END_TEST

/* A plain HTTP server on a unix socket that answers requests with the
 * answers below, one each, in turn. */
static const char *const unix_answers[] = {
	"HTTP/1.1 200 OK\r\n"
	"Content-Type: application/json\r\n"
	"Content-Length: 12\r\n"
	"Connection: close\r\n\r\n"
	"{\"via\":\"un\"}",
	/* Chunked, split in the middle of the JSON. */
	"HTTP/1.1 201 Created\r\n"
	"Content-Type: application/json; charset=utf-8\r\n"
	"Transfer-Encoding: chunked\r\n\r\n"
	"7\r\n{\"via\":\r\n6;x=1\r\n\"ch\"}\n\r\n0\r\n\r\n",
	/* A Content-Length the answer does not keep: cut short. */
	"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
	/* No length: to the close; not JSON. */
	"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\nno",
};

static void *
unix_server(void *arg)
{
	int lfd = *(int *)arg, c;
	char req[4096];

	for (size_t i = 0; i < sizeof(unix_answers) / sizeof(unix_answers[0]);
	     i++) {
		c = accept(lfd, NULL, NULL);
		if (c < 0)
			return NULL;
		(void)!read(c, req, sizeof(req));
		(void)!write(c, unix_answers[i], strlen(unix_answers[i]));
		close(c);
	}
	return NULL;
}

START_TEST(client_unix_socket)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/cordon-httpc-XXXXXX", target[160];
	struct httpc_answer a;
	pthread_t t;
	int lfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/s.sock", dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	pthread_create(&t, NULL, unix_server, &lfd);
	snprintf(target, sizeof(target), "unix:%s", sun.sun_path);
	ck_assert_int_eq(httpc_request(target, "GET", "/x", NULL, NULL, NULL,
			     2000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(json_string_value(json_object_get(a.json, "via")),
	    "un");
	httpc_answer_free(&a);
	ck_assert_int_eq(httpc_request(target, "POST", "/x", NULL, NULL, NULL,
			     2000, &a),
	    0);
	ck_assert_int_eq(a.status, 201);
	ck_assert_str_eq(json_string_value(json_object_get(a.json, "via")),
	    "ch");
	httpc_answer_free(&a);
	ck_assert_int_eq(httpc_request(target, "GET", "/x", NULL, NULL, NULL,
			     2000, &a),
	    -EIO);
	ck_assert_int_eq(httpc_request(target, "GET", "/x", NULL, NULL, NULL,
			     2000, &a),
	    0);
	ck_assert_int_eq(a.status, 404);
	ck_assert_ptr_null(a.json);
	ck_assert_str_eq(buf_str(&a.body), "no");
	httpc_answer_free(&a);
	pthread_join(t, NULL);
	close(lfd);
	unlink(sun.sun_path);
	rmdir(dir);
}
END_TEST

static void *
stopper(void *arg)
{
	(void)arg;
	http_server_stop(srv, 5000);
	return NULL;
}

START_TEST(stop_lets_request_in_flight_finish)
{
	static const char head[] = "POST /v1/echo HTTP/1.1\r\nHost: x\r\n"
				   "Authorization: Bearer " ADMIN_KEY "\r\n"
				   "Content-Length: 9\r\n\r\n{\"a\":";
	struct sockaddr_storage sa;
	socklen_t salen;
	char out[4096];
	size_t got = 0;
	pthread_t t;
	int fd;

	ck_assert_int_eq(service_parse_addr(addr, &sa, &salen), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, salen), 0);
	ck_assert_int_eq(write(fd, head, sizeof(head) - 1),
	    (ssize_t)sizeof(head) - 1);
	/* Wait until the server has the request in hand. */
	for (int i = 0; i < 500 && http_server_in_flight(srv) == 0; i++)
		usleep(2000);
	ck_assert_uint_eq(http_server_in_flight(srv), 1);

	pthread_create(&t, NULL, stopper, NULL);
	usleep(100 * 1000);
	/* Stopping: no new connection is accepted... */
	struct httpc_answer a;
	ck_assert_int_ne(httpc_request(base, "GET", "/healthz", NULL, NULL,
			     NULL, 300, &a),
	    0);
	/* ...but the one in flight gets its answer. */
	ck_assert_int_eq(write(fd, "\"b\"}", 4), 4);
	for (;;) {
		ssize_t n = read(fd, out + got, sizeof(out) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(fd);
	pthread_join(t, NULL);
	srv = NULL;
	ck_assert_msg(strncmp(out, "HTTP/1.1 200 ", 13) == 0, "%.80s", out);
	ck_assert_ptr_nonnull(strstr(out, "Connection: close"));
	ck_assert_ptr_nonnull(strstr(out, "{\"a\":\"b\"}"));
}
END_TEST

/* The caller's loop, as the proxy runs it: poll the fd, run, repeat. */
static atomic_bool loop_done;

static void *
external_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&loop_done)) {
		struct pollfd p = { http_server_fd(srv), POLLIN, 0 };
		int ms = http_server_timeout_ms(srv);
		poll(&p, 1, ms < 0 || ms > 20 ? 20 : ms);
		http_server_run(srv);
	}
	return NULL;
}

START_TEST(external_loop_quiesce_lets_request_finish)
{
	static const char head[] = "POST /v1/echo HTTP/1.1\r\nHost: x\r\n"
				   "Authorization: Bearer " ADMIN_KEY "\r\n"
				   "Content-Length: 9\r\n\r\n{\"a\":";
	struct sockaddr_storage sa;
	socklen_t salen;
	char out[4096];
	size_t got = 0;
	pthread_t t;
	int fd, lfd = service_listen("127.0.0.1:0");

	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(service_sockname(lfd, addr, sizeof(addr)), 0);
	struct http_server_config cfg = {
		.svc = "test",
		.listen_fd = lfd,
		.threads = 0,
		.routes = routes,
		.nroutes = sizeof(routes) / sizeof(routes[0]),
		.keys = &ring,
	};
	memset(&ring, 0, sizeof(ring));
	keyring_add(&ring, ADMIN_KEY, strlen(ADMIN_KEY), ROLE_ADMIN);
	ck_assert_int_eq(http_server_start(&cfg, &srv), 0);
	ck_assert_int_ge(http_server_fd(srv), 0);
	atomic_store(&loop_done, false);
	pthread_create(&t, NULL, external_loop, NULL);

	ck_assert_int_eq(service_parse_addr(addr, &sa, &salen), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, salen), 0);
	ck_assert_int_eq(write(fd, head, sizeof(head) - 1),
	    (ssize_t)sizeof(head) - 1);
	for (int i = 0; i < 500 && http_server_in_flight(srv) == 0; i++)
		usleep(2000);
	ck_assert_uint_eq(http_server_in_flight(srv), 1);

	http_server_quiesce(srv);
	ck_assert_int_eq(write(fd, "\"b\"}", 4), 4);
	for (;;) {
		ssize_t n = read(fd, out + got, sizeof(out) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(fd);
	for (int i = 0; i < 500 && http_server_in_flight(srv) > 0; i++)
		usleep(2000);
	ck_assert_uint_eq(http_server_in_flight(srv), 0);
	atomic_store(&loop_done, true);
	pthread_join(t, NULL);
	http_server_stop(srv, 0);
	srv = NULL;
	ck_assert_msg(strncmp(out, "HTTP/1.1 200 ", 13) == 0, "%.80s", out);
	ck_assert_ptr_nonnull(strstr(out, "{\"a\":\"b\"}"));
}
END_TEST

static Suite *
http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("server_and_client");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, healthz_and_metrics);
	tcase_add_test(tc, routing);
	tcase_add_test(tc, keys_and_roles);
	tcase_add_test(tc, bodies);
	tcase_add_test(tc, client_errors);
	tcase_add_test(tc, client_unix_socket);
	suite_add_tcase(s, tc);

	tc = tcase_create("stop");
	tcase_add_checked_fixture(tc, start, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, stop_lets_request_in_flight_finish);
	suite_add_tcase(s, tc);

	tc = tcase_create("external_loop");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, external_loop_quiesce_lets_request_finish);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(http_suite());
}
