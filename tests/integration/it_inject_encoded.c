/*
 * An injected request's answer that the reflection scanner cannot read
 * never reaches the job (issue 18, credentials.md "Encoded answers"). The
 * proxy asks such an upstream for identity, but an upstream the job
 * partly controls (one that echoes what it was sent, jobs/inject/
 * encoded.py) may compress anyway: its body is the request's own head,
 * the credential in it, gzipped, deflated, reversed as an unknown coding
 * stands for br or zstd, in upper case, stacked behind identity, in two
 * fields, chunked, delimited by the close, after a 103, with the field
 * split across reads, or carried in a Transfer-Encoding other than
 * chunked. Each one is a 502 encoded_answer (or bad_upstream_response for
 * the transfer coding), a decision line, counted in /metrics, and not one
 * byte of its body goes down. An answer without a body (HEAD, 204, 304)
 * has nothing unread and passes; identity passes, scanned.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static struct injectkit kit;

static const char value[] = "sk_live_encoded_0123456789abcdef";

/* The job's request for case on the upstream, with tok: the final
 * answer. An interim one (the 103 of "interim") goes down as it comes,
 * the scanner holding only what it cannot judge yet: read past it, to
 * the close the request asked for. */
static char *
ask(const char *method, const char *name, const char *tok)
{
	char req[768], *out, *more, *rest;
	int fd = unix_connect(kit.channel);

	snprintf(req, sizeof(req),
	    "%s http://api.test:%u/case/%s HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nAccept-Encoding: gzip\r\n"
	    "Connection: close\r\n\r\n",
	    method, kit.up_port, name, kit.up_port, tok);
	if (fd < 0)
		return strdup("");
	out = http_exchange(fd, req, strlen(req), 5000);
	while (out != NULL && http_status(out) / 100 == 1 &&
	    (rest = strstr(out, "\r\n\r\n")) != NULL) {
		more = http_exchange(fd, "", 0, 5000);
		ck_assert_ptr_nonnull(more);
		rest = strdup(rest + 4);
		ck_assert_ptr_nonnull(rest);
		free(out);
		out = malloc(strlen(rest) + strlen(more) + 1);
		ck_assert_ptr_nonnull(out);
		snprintf(out, strlen(rest) + strlen(more) + 1, "%s%s", rest,
		    more);
		free(rest);
		free(more);
	}
	close(fd);
	return out != NULL ? out : strdup("");
}

static bool
file_holds(const char *path, const char *needle)
{
	FILE *f = fopen(path, "rbe");
	static char data[4 << 20];
	size_t n;

	if (f == NULL)
		return false;
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	return memmem(data, n, needle, strlen(needle)) != NULL;
}

START_TEST(an_answer_the_scanner_cannot_read_never_reaches_the_job)
{
	char path[400], *tok, *resp;
	json_t *m;

	injectkit_stack_start(&kit, "127.0.0.1 api.test\n", "proxy-encoded",
	    NULL);
	kit.up_pid = injectkit_upstream_start(CORDON_SOURCE_DIR
	    "/tests/integration/jobs/inject/encoded.py",
	    "encoded.port", NULL, &kit.up_port);

	injectkit_secret(&kit, "up-key", value);
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s,s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
	    "name", "encoded", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", "host", "api.test", "port",
	    kit.up_port, "methods", "GET", "HEAD", "reason", "the api",
	    "allow_cidrs", "127.0.0.0/8", "audience", "api", "inject", "secret",
	    "up-key", "header", "X-Api-Key", "format", "Key {secret}",
	    "capability", "x.read");
	injectkit_job_start(&kit, "encoded", m);
	tok = strdup(kit.tok);
	ck_assert_ptr_nonnull(tok);

	/* Identity and no coding: read, scanned, redacted. */
	static const char *const readable[] = { "identity", "plain" };
	for (size_t i = 0; i < sizeof(readable) / sizeof(readable[0]); i++) {
		resp = ask("GET", readable[i], tok);
		ck_assert_msg(http_status(resp) == 200, "%s: %.400s",
		    readable[i], resp);
		ck_assert_ptr_nonnull(strstr(resp, "X-Api-Key: Key "));
		ck_assert_msg(strstr(resp, value) == NULL, "%s", resp);
		free(resp);
	}

	/* Every coding the scanner cannot read: refused, the body kept
	 * from the job (its head neither: no Content-Encoding comes). */
	static const char *const coded[] = { "gzip", "GZIP", "deflate", "br",
		"zstd", "unknown", "stacked", "two-fields", "empty", "chunked",
		"close", "interim", "split" };
	long before =
	    injectkit_metric(&kit.proxy, "cordon_proxy_encoded_refused_total");
	for (size_t i = 0; i < sizeof(coded) / sizeof(coded[0]); i++) {
		resp = ask("GET", coded[i], tok);
		ck_assert_msg(http_status(resp) == 502, "%s: %.400s", coded[i],
		    resp);
		ck_assert_msg(strstr(resp, "encoded_answer") != NULL, "%s: %s",
		    coded[i], resp);
		ck_assert_msg(strstr(resp, "Content-Encoding") == NULL,
		    "%s: %s", coded[i], resp);
		free(resp);
	}
	ck_assert_int_ge(before, 0);
	ck_assert_int_eq(injectkit_metric(&kit.proxy,
			     "cordon_proxy_encoded_refused_total"),
	    before + (long)(sizeof(coded) / sizeof(coded[0])));

	/* A transfer coding other than chunked: refused as a framing the
	 * proxy does not read. */
	resp = ask("GET", "te", tok);
	ck_assert_msg(http_status(resp) == 502, "te: %.400s", resp);
	ck_assert_ptr_nonnull(strstr(resp, "bad_upstream_response"));
	free(resp);

	/* No body, nothing unread: HEAD, 204 and 304 pass as they are. */
	resp = ask("HEAD", "gzip", tok);
	ck_assert_msg(http_status(resp) == 200, "HEAD: %.400s", resp);
	free(resp);
	resp = ask("GET", "204", tok);
	ck_assert_msg(http_status(resp) == 204, "204: %.400s", resp);
	free(resp);
	resp = ask("GET", "304", tok);
	ck_assert_msg(http_status(resp) == 304, "304: %.400s", resp);
	free(resp);
	free(tok);
	ck_assert_int_eq(daemon_stop(&kit.proxy), 0);

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    kit.proxy.dir);
	ck_assert(file_holds(path, "\"detail\":\"encoded_answer\""));
	ck_assert(!file_holds(path, value));
	ck_assert(!file_holds(kit.proxy.log, value));
	injectkit_upstream_stop(&kit.up_pid);
	ck_assert_int_eq(daemon_stop(&kit.broker), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_encoded");
	TCase *tc = tcase_create("encoded");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    an_answer_the_scanner_cannot_read_never_reaches_the_job);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
