/*
 * Kept-alive TLS upstreams through terminated rules, injected or not: a
 * job's curls, one after another (each its own CONNECT, so the second
 * takes the first's upstream from the job's pool), several URLs in one
 * curl (one tunnel, its upstream kept) and three at once, to the
 * quickstart's tickets API (deploy/examples/upstream.py, HTTP/1.1
 * persistent, the handshake in each connection's thread) and to the C
 * upstream's /records (upstream.c: the head and the body in two TLS
 * records sent in one TCP segment, as http.server answers, so that one
 * read takes both). Both upstreams keep an idle connection for 10
 * minutes, so an answer the proxy held until the upstream closed never
 * comes: each curl's --max-time of 15 s is only a hang guard. Every answer
 * must arrive whole, and the upstream must have seen fewer connections
 * than requests (a reused connection answered). The times are printed,
 * not asserted. (With read-ahead on the proxy's upstream TLS every
 * /records answer had its head and no body after 15 s.)
 */
#include "harness.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY "tk_keepalive_0123456789abcdef"

static struct stack st;
static struct upstream *echo;
static pid_t py = -1;
static unsigned py_tls;
static char py_log[400];

/* A port free on 127.0.0.1 now (the kernel's pick, then closed). */
static unsigned
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* Starts deploy/examples/upstream.py with the tickets API's key, a 600 s
 * idle timeout and its log in py_log; waits until its TLS port accepts. */
static void
start_python(const char *dir, const char *cert, const char *key)
{
	char keyfile[400], plain[16], tls[16];

	snprintf(keyfile, sizeof(keyfile), "%s/tickets-key", dir);
	harness_write_file(keyfile, KEY "\n");
	snprintf(py_log, sizeof(py_log), "%s/upstream.log", dir);
	snprintf(plain, sizeof(plain), "%u", free_port());
	py_tls = free_port();
	snprintf(tls, sizeof(tls), "%u", py_tls);
	py = fork();
	ck_assert_int_ge(py, 0);
	if (py == 0) {
		int log = open(py_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (log >= 0) {
			dup2(log, STDOUT_FILENO);
			dup2(log, STDERR_FILENO);
		}
		execl("/usr/bin/python3", "python3", "-u",
		    CORDON_SOURCE_DIR "/deploy/examples/upstream.py", "--bind",
		    "127.0.0.1", "--plain", plain, "--root",
		    CORDON_SOURCE_DIR "/deploy/examples", "--tls", tls,
		    "--cert", cert, "--key", key, "--api-key-file", keyfile,
		    "--idle-timeout", "600", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
			.sin_port = htons((uint16_t)py_tls),
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int ok = connect(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (ok == 0)
			return;
		usleep(100000);
	}
	ck_abort_msg("upstream.py did not listen on %u", py_tls);
}

/* The distinct client ports of upstream.py's log lines that say
 * "GET path": the connections its answers went on; *requests counts them. */
static unsigned
python_connections(const char *path, unsigned *requests)
{
	static char text[1 << 20];
	char want[128], seen[64][16];
	unsigned n = 0;
	FILE *f = fopen(py_log, "re");
	size_t len;

	*requests = 0;
	ck_assert_ptr_nonnull(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	snprintf(want, sizeof(want), "\"GET %s", path);
	for (char *line = text, *end; *line != '\0'; line = end) {
		char port[16];
		const char *colon, *sp;
		end = strchr(line, '\n');
		end = end != NULL ? end + 1 : line + strlen(line);
		if (strstr(line, want) == NULL || strstr(line, want) > end)
			continue;
		/* "TIME tickets 127.0.0.1:PORT ..." */
		colon = strstr(line, "127.0.0.1:");
		if (colon == NULL || colon > end)
			continue;
		colon += strlen("127.0.0.1:");
		sp = strchr(colon, ' ');
		if (sp == NULL || sp - colon >= (long)sizeof(port))
			continue;
		snprintf(port, sizeof(port), "%.*s", (int)(sp - colon), colon);
		(*requests)++;
		unsigned i;
		for (i = 0; i < n; i++)
			if (strcmp(seen[i], port) == 0)
				break;
		if (i == n && n < 64)
			snprintf(seen[n++], sizeof(seen[0]), "%s", port);
	}
	return n;
}

static void
setup(void)
{
	const char *hosts[] = { "tickets.test", "echo.test", NULL };
	const char *dir = harness_tmpdir();
	char cert[400], key[400], ca[400];
	struct stack_options o = { .uid_base = 980000,
		.hosts = "127.0.0.1 tickets.test echo.test\n",
		.upstream_ca_file = ca };

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/tickets.test.pem", dir);
	snprintf(key, sizeof(key), "%s/tickets.test.key", dir);
	start_python(dir, cert, key);
	snprintf(cert, sizeof(cert), "%s/echo.test.pem", dir);
	snprintf(key, sizeof(key), "%s/echo.test.key", dir);
	echo = upstream_start(cert, key);
	ck_assert_ptr_nonnull(echo);
	stack_start(&st, &o);

	json_decref(
	    harness_expect(&st.broker, 200, "PUT", "/v1/secrets/tickets-key",
		st.admin, NULL, json_pack("{s:s}", "value", KEY)));
	/* The injecting rules, as the quickstart's tickets rule. */
	json_t *inj = json_pack("{s:s, s:s, s:s, s:s}", "secret", "tickets-key",
	    "header", "X-Api-Key", "format", "Key {secret}", "capability",
	    "tickets.read");
	json_t *m =
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, "
		      "s:s}], s:[{s:s, s:i, s:[s], s:[s], s:s, s:s, "
		      "s:[s], s:s, s:O}, {s:s, s:i, s:[s], s:[s, s], s:s, "
		      "s:s, s:[s], s:s, s:O}], s:{s:i}}",
		"name", "ka-inject", "command", "/bin/true", "capabilities",
		"name", "tickets.read", "audience", "tickets-api", "params",
		"queue", "support", "ttl_seconds", 600, "reason",
		"read tickets", "egress", "host", "tickets.test", "port",
		(int)py_tls, "methods", "GET", "paths", "/tickets/", "tls",
		"terminate", "audience", "tickets-api", "allow_cidrs",
		"127.0.0.0/8", "reason", "python", "inject", inj, "host",
		"echo.test", "port", (int)upstream_port(echo), "methods", "GET",
		"paths", "/v1/", "/records", "tls", "terminate", "audience",
		"tickets-api", "allow_cidrs", "127.0.0.0/8", "reason", "C",
		"inject", inj, "limits", "wall_seconds", 140);
	json_decref(inj);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/ka-inject", st.admin, NULL, m));
	/* The same upstreams terminated, nothing injected nor released. */
	m = json_pack("{s:s, s:[s], s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s], "
		      "s:s}, {s:s, s:i, s:[s], s:[s, s], s:s, s:[s], s:s}], "
		      "s:{s:i}}",
	    "name", "ka-plain", "command", "/bin/true", "egress", "host",
	    "tickets.test", "port", (int)py_tls, "methods", "GET", "paths",
	    "/tickets/", "tls", "terminate", "allow_cidrs", "127.0.0.0/8",
	    "reason", "python", "host", "echo.test", "port",
	    (int)upstream_port(echo), "methods", "GET", "paths", "/v1/",
	    "/records", "tls", "terminate", "allow_cidrs", "127.0.0.0/8",
	    "reason", "C", "limits", "wall_seconds", 140);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/ka-plain", st.admin, NULL, m));
}

static void
teardown(void)
{
	if (py > 1) {
		kill(py, SIGTERM);
		waitpid(py, NULL, 0);
		py = -1;
	}
	upstream_stop(echo);
	stack_stop(&st);
}

/*
 * The job's script: with a token when inject, then for url 4 curls one
 * after another, one curl of 3 URLs, and 3 curls at once, each line
 * "<label> <status> <body bytes> <seconds>".
 */
static void
script_for(char *out, size_t len, bool inject, const char *url)
{
	static const char mint[] =
	    "t=$(curl -s -X POST http://broker.cordon/v1/token -d "
	    "'{\"capability\": \"tickets.read\", \"params\": {\"queue\": "
	    "\"support\"}}' | sed -n "
	    "'s/.*\"access_token\":\"\\([^\"]*\\)\".*/\\1/p')\n";
	snprintf(out, len,
	    "%s"
	    "h=\"Authorization: Bearer $t\"; [ -n \"$t\" ] || h=\"X-No-Token: "
	    "1\"\n"
	    "c() { curl -s -o /dev/null -m 15 -H \"$h\" "
	    "-w \"$1 %%{http_code} %%{size_download} %%{time_total}\\n\" "
	    "\"$2\"; }\n"
	    "for i in 1 2 3 4; do c seq$i %s; done\n"
	    "curl -s -o /dev/null -m 15 -H \"$h\" "
	    "-o /dev/null -o /dev/null "
	    "-w 'one %%{http_code} %%{size_download} %%{time_total}\\n' %s %s "
	    "%s\n"
	    "for i in 1 2 3; do c par$i %s & done\n"
	    "wait\n",
	    inject ? mint : "t=\n", url, url, url, url, url);
}

/* Runs the script of manifest in a job: its stdout (free it). */
static char *
run(const char *manifest, const char *script)
{
	static char out[1 << 20], err[1 << 16];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", (char *)manifest,
		"--", "/bin/sh", "-c", (char *)script, NULL };
	int status =
	    harness_run_for(argv, 150000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	char *copy = strdup(text != NULL ? text : "");
	json_decref(j);
	ck_assert_msg(status == 0, "cordon run: %d\n%s\n%s", status, copy, err);
	return copy;
}

/* Asserts that out has 10 lines (seq1..4, one three times, par1..3),
 * each of status want and of the same body, not empty (an answer whose
 * body was held shows its head's status and 0 bytes after curl's
 * --max-time), printing them under title. */
static void
expect_all(const char *title, const char *out, int want)
{
	unsigned lines = 0, good = 0;
	long size = -1;

	printf("%s (label, status, body bytes, seconds):\n%s", title, out);
	fflush(stdout);
	for (const char *l = out; *l != '\0';) {
		const char *sp = strchr(l, ' ');
		const char *nl = strchr(l, '\n');
		if (nl == NULL)
			nl = l + strlen(l);
		if (sp != NULL && sp < nl) {
			char *end;
			long code = strtol(sp + 1, &end, 10);
			long got = strtol(end, NULL, 10);
			if (size < 0)
				size = got;
			lines++;
			good += code == want && got > 0 && got == size;
		}
		l = *nl == '\0' ? nl : nl + 1;
	}
	ck_assert_msg(lines == 10 && good == 10,
	    "%s: %u of %u answers were %d with their whole body (want 10 of "
	    "10):\n%s",
	    title, good, lines, want, out);
}

/* Asserts that the C upstream answered 10 more requests than r0 on fewer
 * than 10 connections more than c0, printing them. */
static void
expect_reused(unsigned c0, unsigned r0)
{
	unsigned reqs = upstream_requests(echo) - r0;
	unsigned conns = upstream_connections(echo) - c0;

	printf("C: %u requests on %u connections\n", reqs, conns);
	ck_assert_uint_eq(reqs, 10);
	ck_assert_uint_lt(conns, reqs);
}

/* The same for upstream.py's answers to path. */
static void
expect_python_reused(const char *path)
{
	unsigned reqs, conns = python_connections(path, &reqs);

	printf("python: %u requests on %u connections\n", reqs, conns);
	ck_assert_uint_eq(reqs, 10);
	ck_assert_uint_lt(conns, reqs);
}

START_TEST(kept_alive_answers_all_arrive_on_a_reused_tls_upstream)
{
	char script[4096], url[128];
	unsigned c0, r0;
	char *out;

	/* An answer in two TLS records, nothing released: 200. */
	snprintf(url, sizeof(url), "https://echo.test:%u/records",
	    upstream_port(echo));
	c0 = upstream_connections(echo);
	r0 = upstream_requests(echo);
	script_for(script, sizeof(script), false, url);
	out = run("ka-plain", script);
	expect_all("terminated, not injected, C /records", out, 200);
	free(out);
	expect_reused(c0, r0);

	/* The tickets API without its key: 401, kept alive. */
	snprintf(url, sizeof(url),
	    "https://tickets.test:%u/tickets/T-1042.json", py_tls);
	script_for(script, sizeof(script), false, url);
	out = run("ka-plain", script);
	expect_all("terminated, not injected, upstream.py", out, 401);
	free(out);
	expect_python_reused("/tickets/T-1042.json");

	/* Injected: the key makes the tickets API answer 200. */
	snprintf(url, sizeof(url),
	    "https://tickets.test:%u/tickets/T-1043.json", py_tls);
	script_for(script, sizeof(script), true, url);
	out = run("ka-inject", script);
	expect_all("terminated, injected, upstream.py", out, 200);
	free(out);
	expect_python_reused("/tickets/T-1043.json");

	snprintf(url, sizeof(url), "https://echo.test:%u/records",
	    upstream_port(echo));
	c0 = upstream_connections(echo);
	r0 = upstream_requests(echo);
	script_for(script, sizeof(script), true, url);
	out = run("ka-inject", script);
	expect_all("terminated, injected, C /records", out, 200);
	free(out);
	expect_reused(c0, r0);
}
END_TEST

static Suite *
keepalive_suite(void)
{
	Suite *s = suite_create("keepalive");
	TCase *tc = tcase_create("jobs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc,
	    kept_alive_answers_all_arrive_on_a_reused_tls_upstream);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(keepalive_suite());
}
