/*
 * The proxy, end to end: a real broker, a real proxy, real upstreams on
 * 127.0.0.1 (plain and TLS, with a CA this test makes), and requests sent
 * as raw bytes on the job's channel, the way a sandbox's relay sends them.
 * Every refusal is checked twice: the 403 and its X-Cordon-Deny, and the
 * line in the job's decision log.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct daemon broker, proxy;
static struct upstream *plain, *tls_up, *pass_up;
static char admin[128], launcher[128], verifier[128];
static char A[160], L[160];
static char cadir[300];
static char job[64], channel[300], job_ca[4096];

static uint16_t
port_of(const struct daemon *d)
{
	return (uint16_t)atoi(strrchr(d->addr, ':') + 1);
}

/* Creates a job of the manifest at the broker and opens its channel:
 * fills id, chan and ca. */
static void
open_job(char *id, size_t idlen, char *chan, size_t chanlen, char *ca,
    size_t calen)
{
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", L, NULL,
	    json_pack("{s:s}", "manifest", "proxy-test"));
	char path[128];

	snprintf(id, idlen, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	j = harness_expect(&proxy, 201, "POST", path, L, NULL, NULL);
	snprintf(chan, chanlen, "%s",
	    json_string_value(json_object_get(j, "channel")));
	snprintf(ca, calen, "%s",
	    json_string_value(json_object_get(j, "ca_pem")));
	json_decref(j);
}

static void
setup(void)
{
	const char *hosts[] = { "tls.test", "pass.test", NULL };
	char cfg[2048], path[400], cert[400], key[400], hostsf[400];
	json_t *m;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	snprintf(A, sizeof(A), "%s", admin);
	snprintf(L, sizeof(L), "%s", launcher);

	snprintf(cadir, sizeof(cadir), "%s", harness_tmpdir());
	ck_assert_int_eq(test_ca_make(cadir, hosts), 0);
	plain = upstream_start(NULL, NULL);
	snprintf(cert, sizeof(cert), "%s/tls.test.pem", cadir);
	snprintf(key, sizeof(key), "%s/tls.test.key", cadir);
	tls_up = upstream_start(cert, key);
	snprintf(cert, sizeof(cert), "%s/pass.test.pem", cadir);
	snprintf(key, sizeof(key), "%s/pass.test.key", cadir);
	pass_up = upstream_start(cert, key);
	ck_assert_ptr_nonnull(plain);
	ck_assert_ptr_nonnull(tls_up);
	ck_assert_ptr_nonnull(pass_up);

	/* Every test name resolves to loopback, through the proxy's own
	 * resolver: the rules decide which may be reached. */
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", cadir);
	harness_write_file(hostsf,
	    "127.0.0.1 api.test tls.test pass.test wrong.test private.test "
	    "brokerport.test self.test other.test noaud.test ws.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", cadir);
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"upstream_ca_file\": \"%s/ca.pem\", "
	    "\"follower\": \"proxy-test\", \"head_timeout_ms\": 2000, "
	    "\"max_conns_per_job\": 16, \"closed_job_linger_seconds\": 5}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf, cadir);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);

	const char *lo = "127.0.0.0/8";
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}], "
		      "s:[{s:s, s:i, s:[s,s,s], s:[s,s], s:s, s:[s], s:s},"
		      " {s:s, s:i, s:s, s:[s], s:[s], s:s, s:[s]},"
		      " {s:s, s:i, s:s, s:[s], s:s, s:[s]},"
		      " {s:s, s:i, s:s, s:[s], s:s, s:[s]},"
		      " {s:s, s:i, s:[s], s:s},"
		      " {s:s, s:i, s:s, s:[s], s:s, s:[s]},"
		      " {s:s, s:i, s:s, s:[s], s:s, s:[s]},"
		      " {s:s, s:i, s:[s], s:s, s:[s]},"
		      " {s:s, s:i, s:[s], s:s, s:[s], s:b}],"
		      " s:{s:i}}",
	    "name", "proxy-test", "command", "/bin/true", "capabilities",
	    "name", "x.read", "audience", "api", "params", "t", "1",
	    "ttl_seconds", 600, "reason", "read x", "egress",
	    /* 0: plain HTTP, with tokens for "api" */
	    "host", "api.test", "port", upstream_port(plain), "methods", "GET",
	    "HEAD", "POST", "paths", "/ok/", "/echo", "reason", "the api",
	    "allow_cidrs", lo, "audience", "api",
	    /* 1: terminated TLS */
	    "host", "tls.test", "port", upstream_port(tls_up), "tls",
	    "terminate", "methods", "GET", "paths", "/ok/", "reason", "tls",
	    "allow_cidrs", lo,
	    /* 2: passthrough */
	    "host", "pass.test", "port", upstream_port(pass_up), "tls",
	    "passthrough", "methods", "GET", "reason", "pinned", "allow_cidrs",
	    lo,
	    /* 3: a name whose certificate the upstream does not have */
	    "host", "wrong.test", "port", upstream_port(tls_up), "tls",
	    "terminate", "methods", "GET", "reason", "bad cert", "allow_cidrs",
	    lo,
	    /* 4: loopback without allow_cidrs */
	    "host", "private.test", "port", upstream_port(plain), "methods",
	    "GET", "reason", "private",
	    /* 5, 6: the broker's port and the proxy's own */
	    "host", "brokerport.test", "port", port_of(&broker), "tls",
	    "terminate", "methods", "GET", "reason", "broker", "allow_cidrs",
	    lo, "host", "self.test", "port", port_of(&proxy), "tls",
	    "terminate", "methods", "GET", "reason", "self", "allow_cidrs", lo,
	    /* 7: plain HTTP, no audience: no token may go there */
	    "host", "noaud.test", "port", upstream_port(plain), "methods",
	    "GET", "reason", "no tokens here", "allow_cidrs", lo,
	    /* 8: websockets allowed */
	    "host", "ws.test", "port", upstream_port(plain), "methods", "GET",
	    "reason", "a websocket", "allow_cidrs", lo, "upgrade", 1, "limits",
	    "wall_seconds", 600);
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&broker, 200, "PUT",
	    "/v1/manifests/proxy-test", A, NULL, m));
	open_job(job, sizeof(job), channel, sizeof(channel), job_ca,
	    sizeof(job_ca));
}

static void
teardown(void)
{
	upstream_stop(plain);
	upstream_stop(tls_up);
	upstream_stop(pass_up);
	daemon_stop(&proxy);
	daemon_stop(&broker);
}

/* --- talking on the channel ----------------------------------------------- */

/* One exchange on a new connection to chan. */
static char *
send_on(const char *chan, const char *req)
{
	int fd = unix_connect(chan);
	char *out;

	ck_assert_int_ge(fd, 0);
	out = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	ck_assert_ptr_nonnull(out);
	return out;
}

static char *
send_req(const char *req)
{
	return send_on(channel, req);
}

static void
assert_denied(const char *resp, const char *reason)
{
	char want[128];

	ck_assert_msg(http_status(resp) == 403, "want 403 %s, got: %.300s",
	    reason, resp);
	snprintf(want, sizeof(want), "X-Cordon-Deny: %s\r\n", reason);
	ck_assert_msg(strstr(resp, want) != NULL, "want %s, got: %.300s",
	    reason, resp);
	ck_assert_msg(strstr(resp, "{\"error\":\"denied\"") != NULL,
	    "no JSON body: %.300s", resp);
}

/* The job's decision log. */
static json_t *
decisions(const char *id)
{
	char path[128];
	json_t *j, *d;

	snprintf(path, sizeof(path), "/v1/jobs/%s/log", id);
	j = harness_expect(&proxy, 200, "GET", path, L, NULL, NULL);
	d = json_incref(json_object_get(j, "decisions"));
	json_decref(j);
	ck_assert_ptr_nonnull(d);
	return d;
}

/* How many lines of the job's log have this decision and reason (reason
 * NULL: any) and, if detail is not NULL, this detail. */
static int
count_lines(const char *id, const char *decision, const char *reason,
    const char *detail)
{
	json_t *d = decisions(id), *v;
	size_t i;
	int n = 0;

	json_array_foreach(d, i, v)
	{
		const char *dec =
		    json_string_value(json_object_get(v, "decision"));
		const char *rea =
		    json_string_value(json_object_get(v, "reason"));
		const char *det =
		    json_string_value(json_object_get(v, "detail"));
		if (strcmp(dec, decision) != 0)
			continue;
		if (reason != NULL && (rea == NULL || strcmp(rea, reason) != 0))
			continue;
		if (detail != NULL && (det == NULL || strcmp(det, detail) != 0))
			continue;
		n++;
	}
	json_decref(d);
	return n;
}

/* --- plain HTTP ------------------------------------------------------------ */

START_TEST(allowed_http_passes_and_is_logged)
{
	char req[512];
	char *resp, *head;

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/report?secret=hunter2 HTTP/1.1\r\n"
	    "Host: api.test:%u\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n"
	    "Proxy-Connection: keep-alive\r\nX-Trace: 1\r\nConnection: close"
	    "\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	resp = send_req(req);
	ck_assert_msg(http_status(resp) == 200, "got: %.300s", resp);
	ck_assert_ptr_nonnull(strstr(resp, "\"target\":\"/ok/report?secret"));
	/* It asked to close: it is told so, whatever the upstream said. */
	ck_assert_ptr_nonnull(strstr(resp, "Connection: close\r\n"));
	ck_assert_ptr_null(strcasestr(resp, "keep-alive"));
	free(resp);

	/* What reached the upstream: origin-form, Host as checked, the
	 * job's own headers, no Proxy-* field. */
	head = upstream_last_head(plain);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strncmp(head, "GET /ok/report?secret=hunter2 HTTP/1.1",
			  38) == 0,
	    "%s", head);
	ck_assert_ptr_nonnull(strstr(head, "X-Trace: 1\r\n"));
	ck_assert_ptr_null(strcasestr(head, "Proxy-"));
	free(head);

	/* One line, allowed, with no query string anywhere in it. */
	json_t *d = decisions(job), *line;
	ck_assert_int_eq(json_array_size(d), 1);
	line = json_array_get(d, 0);
	ck_assert_str_eq(json_string_value(json_object_get(line, "decision")),
	    "allow");
	ck_assert_str_eq(json_string_value(json_object_get(line, "path")),
	    "/ok/report");
	ck_assert_int_eq(json_integer_value(json_object_get(line, "status")),
	    200);
	ck_assert_int_eq(json_integer_value(json_object_get(line, "rule")), 0);
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(line, "addr")),
		"127.0.0.1:"));
	char *text = json_dumps(d, 0);
	ck_assert_ptr_null(strstr(text, "hunter2"));
	ck_assert_ptr_null(strstr(text, "Zm9v"));
	free(text);
	json_decref(d);
}
END_TEST

START_TEST(keep_alive_reuses_both_connections)
{
	char req[1024];
	char *resp;
	int fd = unix_connect(channel);
	unsigned before = upstream_connections(plain);

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 3; i++) {
		snprintf(req, sizeof(req),
		    "GET http://api.test:%u/ok/%d HTTP/1.1\r\nHost: "
		    "api.test:%u\r\n\r\n",
		    upstream_port(plain), i, upstream_port(plain));
		resp = http_exchange(fd, req, strlen(req), 5000);
		ck_assert_msg(http_status(resp) == 200, "request %d: %.300s", i,
		    resp);
		free(resp);
	}
	/* A chunked body is re-framed, not forwarded raw. */
	snprintf(req, sizeof(req),
	    "POST http://api.test:%u/echo HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n"
	    "0\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	ck_assert_ptr_nonnull(strstr(resp, "\"body\":\"abcde\""));
	free(resp);
	close(fd);
	ck_assert_uint_eq(upstream_connections(plain) - before, 1);
	ck_assert_int_eq(count_lines(job, "allow", NULL, NULL), 4);
}
END_TEST

/* A client that sends its request and shuts down its writing still gets
 * the whole answer. */
START_TEST(a_half_closed_client_gets_its_answer)
{
	char req[512], buf[8192];
	size_t n = 0;
	ssize_t k;
	int fd = unix_connect(channel);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/half HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Connection: close\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (n < sizeof(buf) - 1 && poll(&p, 1, 5000) == 1 &&
	    (k = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(fd);
	ck_assert_msg(http_status(buf) == 200, "%.300s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "/ok/half"));
}
END_TEST

START_TEST(upgrade_when_the_rule_allows_it)
{
	char req[512], buf[16];
	char *resp;
	int fd = unix_connect(channel);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "GET http://ws.test:%u/upgrade HTTP/1.1\r\nHost: ws.test:%u\r\n"
	    "Connection: Upgrade\r\nUpgrade: websocket\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_msg(http_status(resp) == 101, "%.300s", resp);
	free(resp);
	/* From here on, bytes both ways. */
	ck_assert_int_eq(write(fd, "hello", 5), 5);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 5);
	ck_assert(memcmp(buf, "hello", 5) == 0);
	close(fd);
	ck_assert_int_eq(count_lines(job, "allow", NULL, NULL), 1);
}
END_TEST

/* A rule's "upgrade" allows websockets: another protocol asked under its
 * name (h2c, whose later streams would be requests no rule judged) is
 * refused before the upstream hears of it, and a 101 to another protocol
 * than the one asked is not relayed (the bytes after it would be judged
 * by nothing). */
START_TEST(upgrade_to_another_protocol_is_refused)
{
	char req[512];
	char *resp;
	int fd;

	snprintf(req, sizeof(req),
	    "GET http://ws.test:%u/upgrade-any HTTP/1.1\r\nHost: ws.test:%u\r\n"
	    "Connection: Upgrade\r\nUpgrade: h2c\r\n"
	    "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	resp = send_req(req);
	ck_assert_msg(http_status(resp) == 403, "%.300s", resp);
	free(resp);
	ck_assert_int_eq(count_lines(job, "deny", "upgrade", "protocol"), 1);
	ck_assert_uint_eq(upstream_requests(plain), 0);

	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "GET http://ws.test:%u/upgrade-h2c HTTP/1.1\r\nHost: ws.test:%u\r\n"
	    "Connection: Upgrade\r\nUpgrade: websocket\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(http_status(resp) == 502, "%.300s", resp);
	free(resp);
	close(fd);
	ck_assert_int_eq(count_lines(job, "error", "upstream_error",
			     "unasked_upgrade"),
	    1);
}
END_TEST

START_TEST(redirects_are_passed_back_not_followed)
{
	char req[512];
	char *resp;

	snprintf(req, sizeof(req),
	    "GET http://noaud.test:%u/redirect HTTP/1.1\r\nHost: "
	    "noaud.test:%u\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	resp = send_req(req);
	ck_assert_msg(http_status(resp) == 302, "%.300s", resp);
	ck_assert_ptr_nonnull(strstr(resp, "Location: http://elsewhere.test/"));
	free(resp);
	ck_assert_uint_eq(upstream_requests(plain), 1);
	ck_assert_int_eq(count_lines(job, "allow", NULL, NULL), 1);
}
END_TEST

START_TEST(a_large_answer_flows_whole)
{
	char req[512];
	char *resp, *body;

	snprintf(req, sizeof(req),
	    "GET http://noaud.test:%u/bytes/8000000 HTTP/1.1\r\nHost: "
	    "noaud.test:%u\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	resp = send_req(req);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	body = strstr(resp, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	ck_assert_uint_eq(strlen(body + 4), 8000000);
	free(resp);
	json_t *d = decisions(job);
	ck_assert_int_ge(json_integer_value(
			     json_object_get(json_array_get(d, 0),
				 "bytes_down")),
	    8000000);
	json_decref(d);
}
END_TEST

START_TEST(a_slow_head_times_out)
{
	static const char part[] = "GET http://api.test/ok/ HTTP/1.1\r\nHo";
	int fd = unix_connect(channel);
	char *resp;

	ck_assert_int_ge(fd, 0);
	/* head_timeout_ms is 2000 in this test's configuration. */
	resp = http_exchange(fd, part, strlen(part), 8000);
	close(fd);
	ck_assert_msg(http_status(resp) == 408, "%.300s", resp);
	ck_assert_ptr_nonnull(strstr(resp, "X-Cordon-Deny: timeout\r\n"));
	free(resp);
	ck_assert_int_eq(count_lines(job, "deny", "timeout", "head"), 1);
}
END_TEST

START_TEST(connections_per_job_are_capped)
{
	int fds[16], extra;
	char c;

	/* max_conns_per_job is 16 in this test's configuration. */
	for (int i = 0; i < 16; i++) {
		fds[i] = unix_connect(channel);
		ck_assert_int_ge(fds[i], 0);
	}
	/* Every one of them is accepted before the next is tried. */
	for (int i = 0; i < 100; i++) {
		json_t *h;
		long st;
		h = harness_get_json(&proxy, "/healthz", &st);
		int n =
		    (int)json_integer_value(json_object_get(h, "connections"));
		json_decref(h);
		if (n == 16)
			break;
		usleep(50000);
	}
	extra = unix_connect(channel);
	ck_assert_int_ge(extra, 0);
	struct pollfd pfd = { .fd = extra, .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	ck_assert_int_eq(read(extra, &c, 1), 0); /* closed at once */
	close(extra);
	for (int i = 0; i < 16; i++)
		close(fds[i]);
	ck_assert_int_eq(count_lines(job, "deny", "too_many_connections", NULL),
	    1);
}
END_TEST

struct refusal {
	const char *name;
	const char *req; /* {P}: the plain upstream's port */
	const char *reason;
	const char *detail; /* NULL: not checked */
};

static const struct refusal refusals[] = {
	{ "another host",
	    "GET http://other.test:{P}/ok/ HTTP/1.1\r\nHost: "
	    "other.test:{P}\r\n\r\n",
	    "no_rule", NULL },
	{ "another method",
	    "DELETE http://api.test:{P}/ok/ HTTP/1.1\r\nHost: "
	    "api.test:{P}\r\n\r\n",
	    "method", NULL },
	{ "another path",
	    "GET http://api.test:{P}/admin HTTP/1.1\r\nHost: "
	    "api.test:{P}\r\n\r\n",
	    "path", NULL },
	{ "a dot segment",
	    "GET http://api.test:{P}/ok/../admin HTTP/1.1\r\nHost: "
	    "api.test:{P}\r\n\r\n",
	    "path", NULL },
	{ "an encoded dot",
	    "GET http://api.test:{P}/ok/%2e%2e/admin HTTP/1.1\r\nHost: "
	    "api.test:{P}\r\n\r\n",
	    "path", NULL },
	{ "a private address",
	    "GET http://private.test:{P}/ HTTP/1.1\r\nHost: "
	    "private.test:{P}\r\n\r\n",
	    "private_addr", "loopback" },
	{ "a decimal address",
	    "GET http://2130706433:{P}/ok/ HTTP/1.1\r\nHost: "
	    "2130706433:{P}\r\n\r\n",
	    "ip_literal", NULL },
	{ "a hex address",
	    "GET http://0x7f.1:{P}/ok/ HTTP/1.1\r\nHost: 0x7f.1:{P}\r\n\r\n",
	    "ip_literal", NULL },
	{ "userinfo",
	    "GET http://user:pw@api.test:{P}/ok/ HTTP/1.1\r\nHost: "
	    "api.test:{P}\r\n\r\n",
	    "malformed", "userinfo" },
	{ "CL and TE",
	    "POST http://api.test:{P}/echo HTTP/1.1\r\nHost: api.test:{P}\r\n"
	    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	    "malformed", "cl_and_te" },
	{ "two CLs",
	    "POST http://api.test:{P}/echo HTTP/1.1\r\nHost: api.test:{P}\r\n"
	    "Content-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	    "malformed", "duplicate_cl" },
	{ "an unknown TE",
	    "POST http://api.test:{P}/echo HTTP/1.1\r\nHost: api.test:{P}\r\n"
	    "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	    "malformed", "unknown_te" },
	{ "space before colon",
	    "GET http://api.test:{P}/ok/ HTTP/1.1\r\nHost: api.test:{P}\r\n"
	    "Content-Length : 0\r\n\r\n",
	    "malformed", "space_before_colon" },
	{ "obs-fold",
	    "GET http://api.test:{P}/ok/ HTTP/1.1\r\nHost: api.test:{P}\r\n"
	    "X-A: 1\r\n  folded\r\n\r\n",
	    "malformed", "obs_fold" },
	{ "a bare LF",
	    "GET http://api.test:{P}/ok/ HTTP/1.1\nHost: api.test:{P}\r\n\r\n",
	    "malformed", "bare_lf" },
	{ "Host differs from the target",
	    "GET http://api.test:{P}/ok/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
	    "malformed", "host_mismatch" },
	{ "an Upgrade not allowed",
	    "GET http://api.test:{P}/ok/ HTTP/1.1\r\nHost: api.test:{P}\r\n"
	    "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n",
	    "upgrade", NULL },
	{ "CONNECT to a plain-HTTP rule",
	    "CONNECT api.test:{P} HTTP/1.1\r\nHost: api.test:{P}\r\n\r\n",
	    "tls", NULL },
	{ "broker.cordon beyond /v1/token",
	    "GET http://broker.cordon/v1/jobs HTTP/1.1\r\nHost: "
	    "broker.cordon\r\n\r\n",
	    "broker_path", NULL },
	{ "a token to a host without an audience",
	    "GET http://noaud.test:{P}/ HTTP/1.1\r\nHost: noaud.test:{P}\r\n"
	    "Authorization: Bearer crd_00000000000000000000000000000000000000"
	    "\r\n\r\n",
	    "token", "no_audience" },
};

/* tmpl with each {P} replaced by port. */
static void
fill(char *out, size_t len, const char *tmpl, unsigned port)
{
	size_t n = 0;

	for (const char *t = tmpl; *t != '\0' && n + 8 < len;) {
		if (strncmp(t, "{P}", 3) == 0) {
			n += (size_t)snprintf(out + n, len - n, "%u", port);
			t += 3;
		} else {
			out[n++] = *t++;
		}
	}
	out[n] = '\0';
}

START_TEST(each_refusal_has_its_reason_and_line)
{
	const struct refusal *r = &refusals[_i];
	char req[1024];
	char *resp;

	fill(req, sizeof(req), r->req, upstream_port(plain));
	resp = send_req(req);
	assert_denied(resp, r->reason);
	free(resp);
	ck_assert_msg(count_lines(job, "deny", r->reason, r->detail) == 1,
	    "%s: no log line for %s/%s", r->name, r->reason,
	    r->detail ? r->detail : "-");
	/* Nothing reached the upstream. */
	ck_assert_uint_eq(upstream_requests(plain), 0);
}
END_TEST

START_TEST(oversize_and_nul_are_refused)
{
	size_t n = 9000;
	char *req = malloc(n + 200);
	char *resp;

	ck_assert_ptr_nonnull(req);
	int k = snprintf(req, 200, "GET http://api.test:%u/ok/",
	    upstream_port(plain));
	memset(req + k, 'a', n);
	strcpy(req + k + n, " HTTP/1.1\r\nHost: api.test\r\n\r\n");
	resp = send_req(req);
	assert_denied(resp, "malformed");
	free(resp);
	free(req);

	int fd = unix_connect(channel);
	static const char nul[] = "GET http://api.test/ok/ HTTP/1.1\r\nX: a\0b"
				  "\r\nHost: api.test\r\n\r\n";
	resp = http_exchange(fd, nul, sizeof(nul) - 1, 5000);
	close(fd);
	assert_denied(resp, "malformed");
	free(resp);
	ck_assert_int_eq(count_lines(job, "deny", "malformed", "line_too_long"),
	    1);
	ck_assert_int_eq(count_lines(job, "deny", "malformed", "nul"), 1);
}
END_TEST

/* --- TLS ------------------------------------------------------------------- */

/* CONNECT host:port on a new channel connection: the fd after a 200,
 * or -1 with the answer in resp (free it). */
static int
connect_tunnel(const char *chan, const char *host, unsigned port,
    char **ret_resp)
{
	char req[256];
	int fd = unix_connect(chan);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", host, port, host,
	    port);
	*ret_resp = http_exchange(fd, req, strlen(req), 5000);
	if (http_status(*ret_resp) != 200) {
		close(fd);
		return -1;
	}
	return fd;
}

/* TLS over fd, trusting only ca_pem (a PEM string) or ca_file, with sni:
 * the SSL, or NULL when the handshake failed. */
static SSL *
tls_client(int fd, const char *ca_pem, const char *ca_file, const char *sni)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;

	ck_assert_ptr_nonnull(ctx);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (ca_pem != NULL) {
		BIO *bio = BIO_new_mem_buf(ca_pem, -1);
		X509 *ca = PEM_read_bio_X509(bio, NULL, NULL, NULL);
		ck_assert_ptr_nonnull(ca);
		X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
		X509_free(ca);
		BIO_free(bio);
	} else {
		ck_assert_int_eq(SSL_CTX_load_verify_locations(ctx, ca_file,
				     NULL),
		    1);
	}
	ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	if (sni != NULL) {
		SSL_set_tlsext_host_name(ssl, sni);
		SSL_set1_host(ssl, sni);
	}
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* Sends req over ssl and reads one response (Content-Length framed). */
static char *
tls_exchange(SSL *ssl, const char *req)
{
	static char buf[65536];
	size_t n = 0;

	ck_assert_int_eq(SSL_write(ssl, req, (int)strlen(req)),
	    (int)strlen(req));
	for (;;) {
		int r = SSL_read(ssl, buf + n, (int)(sizeof(buf) - 1 - n));
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		const char *cl = strcasestr(buf, "Content-Length:");
		if (end != NULL && cl != NULL && cl < end &&
		    n >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10))
			break;
	}
	buf[n] = '\0';
	return strdup(buf);
}

/* Waits (5 s at most) until the proxy holds n idle upstreams. */
static void
wait_pooled(int n)
{
	long st;
	int got = -1;

	for (int i = 0; i < 100 && got != n; i++) {
		json_t *h = harness_get_json(&proxy, "/healthz", &st);
		got = (int)json_integer_value(json_object_get(h, "pooled"));
		json_decref(h);
		if (got != n)
			usleep(50000);
	}
	ck_assert_int_eq(got, n);
}

START_TEST(upstreams_are_pooled_across_connections)
{
	char req[512], *resp;
	unsigned before = upstream_connections(plain);
	unsigned tls_before = upstream_connections(tls_up);

	/* Each job connection closes after one request; the upstream
	 * connection behind it waits in the job's pool for the next. */
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/ HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Connection: close\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	for (int i = 0; i < 3; i++) {
		resp = send_req(req);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		free(resp);
		wait_pooled(1);
	}
	ck_assert_uint_eq(upstream_connections(plain) - before, 1);

	snprintf(req, sizeof(req),
	    "GET /ok/ HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n",
	    upstream_port(tls_up));
	for (int i = 0; i < 3; i++) {
		int fd = connect_tunnel(channel, "tls.test",
		    upstream_port(tls_up), &resp);
		ck_assert_int_ge(fd, 0);
		free(resp);
		SSL *ssl = tls_client(fd, job_ca, NULL, "tls.test");
		ck_assert_ptr_nonnull(ssl);
		resp = tls_exchange(ssl, req);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		free(resp);
		SSL_free(ssl);
		close(fd);
		wait_pooled(2); /* the plain one above, and this one */
	}
	ck_assert_uint_eq(upstream_connections(tls_up) - tls_before, 1);
}
END_TEST

START_TEST(terminated_tls_checks_every_inner_request)
{
	char req[512], *resp;
	int fd =
	    connect_tunnel(channel, "tls.test", upstream_port(tls_up), &resp);
	SSL *ssl;

	ck_assert_msg(fd >= 0, "CONNECT refused: %.300s", resp);
	free(resp);
	/* The client trusts only the job's CA. */
	ssl = tls_client(fd, job_ca, NULL, "tls.test");
	ck_assert_msg(ssl != NULL, "handshake with the job CA failed");
	snprintf(req, sizeof(req),
	    "GET /ok/inner HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n",
	    upstream_port(tls_up));
	resp = tls_exchange(ssl, req);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	/* The same tunnel, kept alive: another allowed request, then one
	 * off the path list, then one for another Host. */
	resp = tls_exchange(ssl, req);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	snprintf(req, sizeof(req),
	    "GET /admin HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n",
	    upstream_port(tls_up));
	resp = tls_exchange(ssl, req);
	assert_denied(resp, "path");
	free(resp);
	SSL_free(ssl);
	close(fd);

	fd = connect_tunnel(channel, "tls.test", upstream_port(tls_up), &resp);
	free(resp);
	ssl = tls_client(fd, job_ca, NULL, "tls.test");
	ck_assert_ptr_nonnull(ssl);
	snprintf(req, sizeof(req),
	    "GET /ok/ HTTP/1.1\r\nHost: api.test:%u\r\n\r\n",
	    upstream_port(tls_up));
	resp = tls_exchange(ssl, req);
	assert_denied(resp, "host_mismatch");
	free(resp);
	SSL_free(ssl);
	close(fd);

	ck_assert_int_eq(upstream_requests(tls_up), 2);
	ck_assert_int_eq(count_lines(job, "allow", NULL, NULL), 2 + 2);
	ck_assert_int_eq(count_lines(job, "deny", "path", NULL), 1);
	ck_assert_int_eq(count_lines(job, "deny", "host_mismatch", NULL), 1);
}
END_TEST

START_TEST(sni_must_equal_the_connect_target)
{
	char *resp;
	int fd =
	    connect_tunnel(channel, "tls.test", upstream_port(tls_up), &resp);
	SSL *ssl;

	ck_assert_int_ge(fd, 0);
	free(resp);
	ssl = tls_client(fd, job_ca, NULL, "other.test");
	ck_assert_ptr_null(ssl);
	close(fd);
	fd = connect_tunnel(channel, "tls.test", upstream_port(tls_up), &resp);
	free(resp);
	ssl = tls_client(fd, job_ca, NULL, NULL);
	ck_assert_ptr_null(ssl);
	close(fd);
	ck_assert_int_eq(count_lines(job, "deny", "sni_mismatch",
			     "sni_differs"),
	    1);
	ck_assert_int_eq(count_lines(job, "deny", "sni_mismatch", "no_sni"), 1);
	ck_assert_uint_eq(upstream_requests(tls_up), 0);
}
END_TEST

START_TEST(upstream_certificate_is_verified)
{
	char *resp;
	/* wrong.test resolves to an upstream whose certificate is for
	 * tls.test: the CONNECT fails before any byte of the job's. */
	int fd =
	    connect_tunnel(channel, "wrong.test", upstream_port(tls_up), &resp);

	ck_assert_int_lt(fd, 0);
	ck_assert_msg(http_status(resp) == 502, "%.300s", resp);
	ck_assert_ptr_nonnull(strstr(resp, "upstream_certificate"));
	free(resp);
}
END_TEST

START_TEST(connect_to_our_own_ports_is_refused)
{
	char *resp;
	int fd =
	    connect_tunnel(channel, "brokerport.test", port_of(&broker), &resp);

	ck_assert_int_lt(fd, 0);
	assert_denied(resp, "own_port");
	free(resp);
	fd = connect_tunnel(channel, "self.test", port_of(&proxy), &resp);
	ck_assert_int_lt(fd, 0);
	assert_denied(resp, "own_port");
	free(resp);
	fd = connect_tunnel(channel, "127.0.0.1", port_of(&broker), &resp);
	ck_assert_int_lt(fd, 0);
	assert_denied(resp, "ip_literal");
	free(resp);
	fd = connect_tunnel(channel, "localhost", port_of(&proxy), &resp);
	ck_assert_int_lt(fd, 0);
	assert_denied(resp, "no_rule");
	free(resp);
}
END_TEST

START_TEST(passthrough_checks_sni_only)
{
	char ca[400], req[256], *resp;
	int fd =
	    connect_tunnel(channel, "pass.test", upstream_port(pass_up), &resp);
	SSL *ssl;

	snprintf(ca, sizeof(ca), "%s/ca.pem", cadir);
	ck_assert_int_ge(fd, 0);
	free(resp);
	/* Not terminated: the client sees the upstream's own certificate. */
	ssl = tls_client(fd, NULL, ca, "pass.test");
	ck_assert_ptr_nonnull(ssl);
	snprintf(req, sizeof(req),
	    "GET /anything HTTP/1.1\r\nHost: pass.test\r\nConnection: close"
	    "\r\n\r\n");
	resp = tls_exchange(ssl, req);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	SSL_free(ssl);
	close(fd);

	fd =
	    connect_tunnel(channel, "pass.test", upstream_port(pass_up), &resp);
	free(resp);
	ssl = tls_client(fd, NULL, ca, "other.test");
	ck_assert_ptr_null(ssl);
	close(fd);
	ck_assert_uint_eq(upstream_requests(pass_up), 1);
	/* Logged when the tunnel ended: allowed, opaque, with its bytes. */
	for (int i = 0;
	     i < 50 && count_lines(job, "allow", NULL, "opaque") == 0; i++)
		usleep(20000);
	ck_assert_int_eq(count_lines(job, "allow", NULL, "opaque"), 1);
	ck_assert_int_eq(count_lines(job, "deny", "sni_mismatch", NULL), 1);
}
END_TEST

/* --- identity --------------------------------------------------------------- */

/* Mints through chan's broker.cordon, claiming to be claimed: the token. */
static char *
mint_via(const char *chan, const char *claimed)
{
	static const char body[] =
	    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}";
	char req[512], *resp, *tok, *end;

	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nX-Cordon-Job: %s\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    claimed, strlen(body), body);
	resp = send_on(chan, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	tok = strstr(resp, "crd_");
	ck_assert_ptr_nonnull(tok);
	end = strchr(tok, '"');
	*end = '\0';
	tok = strdup(tok);
	free(resp);
	return tok;
}

static const char *
token_job(const char *tok)
{
	static char out[64];
	json_t *j = harness_expect(&broker, 200, "POST", "/v1/introspect",
	    verifier, NULL, json_pack("{s:s}", "token", tok));

	snprintf(out, sizeof(out), "%s",
	    json_is_true(json_object_get(j, "active"))
		? json_string_value(json_object_get(j, "job"))
		: "inactive");
	json_decref(j);
	return out;
}

static char *
use_token(const char *chan, const char *tok)
{
	char req[512];

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/x HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    upstream_port(plain), upstream_port(plain), tok);
	return send_on(chan, req);
}

START_TEST(one_job_cannot_use_anothers_identity)
{
	char job2[64], chan2[300], ca2[4096];
	char *mine, *theirs, *resp;

	open_job(job2, sizeof(job2), chan2, sizeof(chan2), ca2, sizeof(ca2));
	/* The job is the channel's, whatever the request claims. */
	mine = mint_via(channel, job2);
	ck_assert_str_eq(token_job(mine), job);
	theirs = mint_via(chan2, job);
	ck_assert_str_eq(token_job(theirs), job2);

	resp = use_token(channel, mine);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	resp = use_token(channel, theirs);
	assert_denied(resp, "token");
	free(resp);
	ck_assert_int_eq(count_lines(job, "deny", "token", "other_job"), 1);

	/* Revoked at the broker (one token): inactive from then on. */
	json_decref(harness_expect(&broker, 200, "POST", "/v1/revoke", A, NULL,
	    json_pack("{s:s}", "token", mine)));
	resp = use_token(channel, mine);
	assert_denied(resp, "token");
	free(resp);
	ck_assert_int_eq(count_lines(job, "deny", "token", "inactive"), 1);
	/* No token value in any log line. */
	json_t *d = decisions(job);
	char *text = json_dumps(d, 0);
	ck_assert_ptr_null(strstr(text, mine + 4));
	ck_assert_ptr_null(strstr(text, theirs + 4));
	free(text);
	json_decref(d);
	free(mine);
	free(theirs);
}
END_TEST

/* A job with one canary, and its channel: the broker's answer (the job
 * and the canary in it; json_decref it) and the channel's path. */
static json_t *
canary_job(char *chan, size_t len)
{
	char path[160];
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", L, NULL,
	    json_pack("{s:s, s:i}", "manifest", "proxy-test", "canaries", 1));
	json_t *o;

	snprintf(path, sizeof(path), "/v1/jobs/%s",
	    json_string_value(json_object_get(j, "job")));
	o = harness_expect(&proxy, 201, "POST", path, L, NULL, NULL);
	snprintf(chan, len, "%s",
	    json_string_value(json_object_get(o, "channel")));
	json_decref(o);
	return j;
}

/* Asserts the broker stopped job by a tripwire. */
static void
assert_tripped(const char *id)
{
	char path[160];
	json_t *o;

	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	o = harness_expect(&broker, 200, "GET", path, L, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(o, "stop_reason")),
	    "tripwire");
	json_decref(o);
}

/* A canary anywhere in a request, not only as a bearer token, trips the
 * wire: the request is refused and the job revoked at the broker. */
START_TEST(a_canary_in_any_header_revokes_the_job)
{
	char chan[300], req[512], *resp;
	json_t *j = canary_job(chan, sizeof(chan));
	const char *id = json_string_value(json_object_get(j, "job"));
	const char *canary = json_string_value(
	    json_array_get(json_object_get(j, "canaries"), 0));

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/x HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "X-Api-Key: %s\r\n\r\n",
	    upstream_port(plain), upstream_port(plain), canary);
	resp = send_on(chan, req);
	/* Refused, or cut: the revoke may reach the proxy through the feed
	 * before the introspection's answer does. Never passed. */
	if (resp[0] != '\0')
		assert_denied(resp, "token");
	free(resp);
	ck_assert_uint_eq(upstream_requests(plain), 0);
	assert_tripped(id);
	/* And the proxy, told by the feed, closed the job's channel. */
	int fd;
	for (int i = 0; i < 50 && (fd = unix_connect(chan)) >= 0; i++) {
		close(fd);
		usleep(100000);
	}
	fd = unix_connect(chan);
	ck_assert_int_lt(fd, 0);
	json_decref(j);
}
END_TEST

/* A token in a request body is checked like one in a header: the job's
 * own, for the rule's audience, passes; a canary in an upload to an
 * allowed host is stopped before it leaves, and trips the wire. */
START_TEST(tokens_in_a_body_are_checked)
{
	char req[1024], body[256], chan[300], *resp, *tok;
	json_t *j = canary_job(chan, sizeof(chan));
	const char *id = json_string_value(json_object_get(j, "job"));
	const char *canary = json_string_value(
	    json_array_get(json_object_get(j, "canaries"), 0));

	tok = mint_via(chan, id);

	/* Its own token, in a body, to a host of its audience: passes. */
	snprintf(body, sizeof(body), "{\"token\": \"%s\"}", tok);
	snprintf(req, sizeof(req),
	    "POST http://api.test:%u/echo HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    upstream_port(plain), upstream_port(plain), strlen(body), body);
	resp = send_on(chan, req);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(plain), 1);

	/* The canary, chunked and split across two chunks: never out. */
	size_t half = 20;
	snprintf(req, sizeof(req),
	    "POST http://api.test:%u/echo HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n%zx\r\nleak=%.*s\r\n"
	    "%zx\r\n%s\r\n0\r\n\r\n",
	    upstream_port(plain), upstream_port(plain), half + 5, (int)half,
	    canary, strlen(canary) - half, canary + half);
	resp = send_on(chan, req);
	if (resp[0] != '\0')
		assert_denied(resp, "token");
	free(resp);
	ck_assert_uint_eq(upstream_requests(plain), 1);
	assert_tripped(id);
	free(tok);
	json_decref(j);
}
END_TEST

/* True once fd's peer has closed (poll says so without waiting). */
static bool
closed_now(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, 0) != 1)
		return false;
	return recv(fd, &c, 1, MSG_DONTWAIT) == 0 ||
	    (p.revents & (POLLHUP | POLLERR)) != 0;
}

START_TEST(revoke_closes_the_jobs_tunnels_before_it_returns)
{
	char req[512], path[128], *resp;
	int tunnel =
	    connect_tunnel(channel, "tls.test", upstream_port(tls_up), &resp);
	int idle = unix_connect(channel);
	SSL *ssl;
	json_t *j;

	ck_assert_int_ge(tunnel, 0);
	free(resp);
	ssl = tls_client(tunnel, job_ca, NULL, "tls.test");
	ck_assert_ptr_nonnull(ssl);
	snprintf(req, sizeof(req),
	    "GET /ok/ HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n",
	    upstream_port(tls_up));
	resp = tls_exchange(ssl, req);
	ck_assert_int_eq(http_status(resp), 200);
	free(resp);
	ck_assert(!closed_now(tunnel));
	ck_assert(!closed_now(idle));

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	j = harness_expect(&broker, 200, "POST", path, L, NULL,
	    json_pack("{s:s}", "reason", "test"));
	/* The revoke has returned: the proxy acknowledged, after closing. */
	ck_assert_msg(closed_now(tunnel), "the open tunnel is still open");
	ck_assert_msg(closed_now(idle), "an idle connection is still open");
	char *text = json_dumps(json_object_get(j, "propagated"), 0);
	ck_assert_msg(strstr(text, "proxy-test") != NULL, "%s", text);
	free(text);
	json_decref(j);
	SSL_free(ssl);
	close(tunnel);
	close(idle);

	/* And the channel takes nothing more. */
	ck_assert_int_lt(unix_connect(channel), 0);
	j = harness_expect(&proxy, 200, "GET",
	    (snprintf(path, sizeof(path), "/v1/jobs/%s/log", job), path), L,
	    NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "revoked");
	json_decref(j);
	/* A revoked job gets no new channel either. */
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	json_decref(harness_expect(&proxy, 409, "POST", path, L, NULL, NULL));
}
END_TEST

START_TEST(feed_down_fails_closed_until_it_is_back)
{
	char req[512], *resp = NULL;
	int i;

	char ca[400];
	int tunnel =
	    connect_tunnel(channel, "pass.test", upstream_port(pass_up), &resp);
	SSL *ssl;

	ck_assert_int_ge(tunnel, 0);
	free(resp);
	snprintf(ca, sizeof(ca), "%s/ca.pem", cadir);
	ssl = tls_client(tunnel, NULL, ca, "pass.test");
	ck_assert_ptr_nonnull(ssl);
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/ HTTP/1.1\r\nHost: api.test:%u\r\n\r\n",
	    upstream_port(plain), upstream_port(plain));
	daemon_kill(&broker);
	/* Within a few seconds of the broker going, everything is refused:
	 * 503, to be tried again (it_proxy503 checks its Retry-After). */
	for (i = 0; i < 100; i++) {
		resp = send_req(req);
		if (http_status(resp) == 503)
			break;
		free(resp);
		resp = NULL;
		usleep(100000);
	}
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(strstr(resp, "X-Cordon-Deny: feed_unavailable\r\n") !=
		NULL,
	    "want feed_unavailable, got: %.300s", resp);
	free(resp);
	/* A tunnel whose bytes it cannot judge is closed too. */
	for (i = 0; i < 30 && !closed_now(tunnel); i++)
		usleep(100000);
	ck_assert_msg(closed_now(tunnel), "the passthrough tunnel is open");
	SSL_free(ssl);
	close(tunnel);
	ck_assert_int_eq(daemon_restart(&broker), 0);
	for (i = 0; i < 100; i++) {
		resp = send_req(req);
		if (http_status(resp) == 200)
			break;
		free(resp);
		resp = NULL;
		usleep(100000);
	}
	ck_assert_msg(resp != NULL, "the proxy did not recover");
	free(resp);
}
END_TEST

/* --- the control API -------------------------------------------------------- */

START_TEST(control_api_errors)
{
	char path[128];
	json_t *j;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	json_decref(
	    harness_expect(&proxy, 401, "POST", path, NULL, NULL, NULL));
	/* The proxy knows the launcher's key and no other. */
	json_decref(
	    harness_expect(&proxy, 401, "POST", path, admin, NULL, NULL));
	json_decref(harness_expect(&proxy, 409, "POST", path, L, NULL, NULL));
	json_decref(harness_expect(&proxy, 404, "POST",
	    "/v1/jobs/job_unknownXXXXXXXXXXXXXX", L, NULL, NULL));
	json_decref(
	    harness_expect(&proxy, 400, "POST", "/v1/jobs/a.b", L, NULL, NULL));
	json_decref(harness_expect(&proxy, 404, "DELETE",
	    "/v1/jobs/job_unknownXXXXXXXXXXXXXX", L, NULL, NULL));
	/* The CA is name-constrained to the terminated hosts. */
	ck_assert_ptr_nonnull(strstr(job_ca, "BEGIN CERTIFICATE"));

	/* DELETE closes the channel; the log stays readable. */
	j = harness_expect(&proxy, 200, "DELETE", path, L, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "deleted");
	json_decref(j);
	ck_assert_int_lt(unix_connect(channel), 0);
	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	json_decref(harness_expect(&proxy, 200, "GET", path, L, NULL, NULL));
	j = harness_expect(&proxy, 200, "GET", "/healthz", NULL, NULL, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "jobs")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "jobs_closed")),
	    1);
	json_decref(j);
	/* And then, past closed_job_linger_seconds (5 here), the job is
	 * forgotten: its memory is the proxy's again. */
	long status = 200;
	for (int i = 0; i < 150 && status == 200; i++) {
		json_decref(
		    harness_call(&proxy, "GET", path, L, NULL, NULL, &status));
		if (status == 200)
			usleep(100000);
	}
	json_decref(harness_expect(&proxy, 404, "GET", path, L, NULL, NULL));
	j = harness_expect(&proxy, 200, "GET", "/healthz", NULL, NULL, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "jobs_closed")),
	    0);
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("proxy");
	TCase *tc = tcase_create("proxy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, allowed_http_passes_and_is_logged);
	tcase_add_test(tc, keep_alive_reuses_both_connections);
	tcase_add_test(tc, upstreams_are_pooled_across_connections);
	tcase_add_test(tc, upgrade_when_the_rule_allows_it);
	tcase_add_test(tc, upgrade_to_another_protocol_is_refused);
	tcase_add_test(tc, a_half_closed_client_gets_its_answer);
	tcase_add_test(tc, redirects_are_passed_back_not_followed);
	tcase_add_test(tc, a_large_answer_flows_whole);
	tcase_add_test(tc, a_slow_head_times_out);
	tcase_add_test(tc, connections_per_job_are_capped);
	tcase_add_loop_test(tc, each_refusal_has_its_reason_and_line, 0,
	    (int)(sizeof(refusals) / sizeof(refusals[0])));
	tcase_add_test(tc, oversize_and_nul_are_refused);
	tcase_add_test(tc, terminated_tls_checks_every_inner_request);
	tcase_add_test(tc, sni_must_equal_the_connect_target);
	tcase_add_test(tc, upstream_certificate_is_verified);
	tcase_add_test(tc, connect_to_our_own_ports_is_refused);
	tcase_add_test(tc, passthrough_checks_sni_only);
	tcase_add_test(tc, one_job_cannot_use_anothers_identity);
	tcase_add_test(tc, a_canary_in_any_header_revokes_the_job);
	tcase_add_test(tc, tokens_in_a_body_are_checked);
	tcase_add_test(tc, revoke_closes_the_jobs_tunnels_before_it_returns);
	tcase_add_test(tc, feed_down_fails_closed_until_it_is_back);
	tcase_add_test(tc, control_api_errors);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
