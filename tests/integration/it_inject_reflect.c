/*
 * An upstream that reflects the injected credential escaped, as real
 * services quote what they were sent, never hands it back to the job
 * (issue 18, credentials.md "No reflection back in"). The upstream
 * (jobs/inject/reflect.py) quotes the X-Api-Key header in an error
 * message: as PHP's json_encode writes it ("\/"), as \u escapes, as
 * numeric and named HTML entities, as UTF-16 LE and BE, in upper case,
 * as quoted-printable with a soft line break inside it, with every
 * escaping mixed, as base64 with JSON's "\/", in 3-byte chunks, and cut
 * across writes. Each answer says where the escaped value is in its
 * body: the job must get every one of those bytes overwritten with one
 * filler byte, the rest of the answer as sent, each answer counted in
 * /metrics, logged secret_reflected and given a decision line with
 * "reflected" (a line break inside, quoted-printable's soft one, is
 * kept). The value less its last byte, reflected the same way, is a
 * slice of it and redacted too. A second rule's secret is made of the
 * tokens "61" and "a" and its upstream sends 256 KiB of "6161...",
 * which reads as either at each pair, so many ways at once: the scan's
 * budget of steps ends that answer (the job gets less than all of it,
 * the decision says scan_too_costly) and the proxy goes on.
 * The value is in neither of the proxy's logs.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct injectkit kit;

/* '/' for JSON's "\/", '+', '=', '?', '~' for the entities, and a base64
 * that holds '/' wherever the value starts; no public type prefix
 * (keyshape.h: "sk_live_" would be kept but for its last 7 bytes), so
 * that every byte of each form is redacted. */
static const char value[] = "sk_Live_Re/fl+ect=???~~~_0123456789";

/* The job's request for case at host, with tok, on a connection the
 * answer closes: all of the answer (NULs and all) and its length. */
static char *
ask_at(const char *host, const char *name, const char *tok, size_t *ret_len)
{
	char req[768], *out = NULL;
	size_t len = 0, cap = 0;
	int fd = unix_connect(kit.channel), n;

	ck_assert_int_ge(fd, 0);
	n = snprintf(req, sizeof(req),
	    "GET http://%s:%u/case/%s HTTP/1.1\r\nHost: %s:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    host, kit.up_port, name, host, kit.up_port, tok);
	ck_assert(n > 0 && (size_t)n < sizeof(req));
	ck_assert_int_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t got;
		ck_assert_msg(poll(&p, 1, 10000) == 1, "%s: no answer", name);
		if (len + 4096 + 1 > cap) {
			cap = 2 * cap + 8192;
			out = realloc(out, cap);
			ck_assert_ptr_nonnull(out);
		}
		got = read(fd, out + len, 4096);
		ck_assert_int_ge(got, 0);
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	out[len] = '\0';
	*ret_len = len;
	return out;
}

static char *
ask(const char *name, const char *tok, size_t *ret_len)
{
	return ask_at("api.test", name, tok, ret_len);
}

/* How often needle is in path. */
static size_t
file_count(const char *path, const char *needle)
{
	static char data[4 << 20];
	FILE *f = fopen(path, "rbe");
	size_t n, count = 0, nl = strlen(needle);
	const char *p;

	if (f == NULL)
		return 0;
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	for (p = data; (p = memmem(p, (size_t)(data + n - p), needle, nl));
	     p += nl)
		count++;
	return count;
}

/* Whether value is in text[0..n) in any case. */
static bool
holds_nocase(const char *text, size_t n, const char *v)
{
	size_t vl = strlen(v);

	for (size_t i = 0; i + vl <= n; i++)
		if (strncasecmp(text + i, v, vl) == 0)
			return true;
	return false;
}

/* The number in the answer's head field name, or -1. */
static long
field(const char *resp, const char *name)
{
	char want[64];
	const char *p, *end = strstr(resp, "\r\n\r\n");

	snprintf(want, sizeof(want), "\r\n%s: ", name);
	p = strstr(resp, want);
	if (p == NULL || end == NULL || p > end)
		return -1;
	return strtol(p + strlen(want), NULL, 10);
}

/* The body of the answer resp[0..len), chunk framing taken off: into
 * body (len bytes of room), its length. */
static size_t
body_of(const char *resp, size_t len, char *body)
{
	const char *end = strstr(resp, "\r\n\r\n"), *p, *stop = resp + len;
	size_t n = 0;

	ck_assert_ptr_nonnull(end);
	p = end + 4;
	if (strstr(resp, "Transfer-Encoding: chunked") == NULL ||
	    strstr(resp, "Transfer-Encoding: chunked") > end) {
		memcpy(body, p, (size_t)(stop - p));
		return (size_t)(stop - p);
	}
	while (p < stop) {
		char *eol;
		size_t size = strtoul(p, &eol, 16);
		const char *line_end = memmem(p, (size_t)(stop - p), "\r\n", 2);
		ck_assert_ptr_nonnull(line_end);
		p = line_end + 2;
		if (size == 0)
			break;
		ck_assert(p + size + 2 <= stop);
		memcpy(body + n, p, size);
		n += size;
		p += size + 2;
	}
	return n;
}

static bool
alnum(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z');
}

START_TEST(a_reflected_escaped_credential_never_reaches_the_job)
{
	static const char *const cases[] = { "json_slash", "json_u", "html",
		"html_named", "utf16le", "utf16be", "upper", "qp", "mixed",
		"base64_json", "json_slash_chunked", "utf16le_chunked",
		"qp_chunked", "html_split", "mixed_split", "utf16be_split" };
	const size_t ncases = sizeof(cases) / sizeof(cases[0]);
	char path[400], *tok, *resp;
	static char costly[201];
	size_t len;
	long before;
	json_t *m;

	injectkit_stack_start(&kit, "127.0.0.1 api.test costly.test\n",
	    "proxy-reflect", "\"reflect_limit\": 1000000");
	kit.up_pid = injectkit_upstream_start(CORDON_SOURCE_DIR
	    "/tests/integration/jobs/inject/reflect.py",
	    "reflect.port", NULL, &kit.up_port);

	injectkit_secret(&kit, "up-key", value);
	for (size_t k = 0, seed = 7; k + 2 < sizeof(costly);) {
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) & 1) {
			costly[k++] = '6';
			costly[k++] = '1';
		} else
			costly[k++] = 'a';
	}
	json_decref(
	    harness_expect(&kit.broker, 200, "PUT", "/v1/secrets/costly-key",
		kit.admin, NULL, json_pack("{s:s}", "value", costly)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}},"
		      "  {s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
	    "name", "reflect", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", "host", "api.test", "port",
	    kit.up_port, "methods", "GET", "reason", "the api", "allow_cidrs",
	    "127.0.0.0/8", "audience", "api", "inject", "secret", "up-key",
	    "header", "X-Api-Key", "format", "Key {secret}", "capability",
	    "x.read", "host", "costly.test", "port", kit.up_port, "methods",
	    "GET", "reason", "the costly api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api", "inject", "secret", "costly-key", "header",
	    "X-Api-Key", "format", "Key {secret}", "capability", "x.read");
	injectkit_job_start(&kit, "reflect", m);
	tok = strdup(kit.tok);
	ck_assert_ptr_nonnull(tok);

	before = injectkit_metric(&kit.proxy, "cordon_proxy_reflections_total");
	ck_assert_int_ge(before, 0);
	for (size_t i = 0; i < ncases; i++) {
		long at, n, now;
		char *body;
		size_t blen;

		resp = ask(cases[i], tok, &len);
		ck_assert_msg(http_status(resp) == 200, "%s: %.400s", cases[i],
		    resp);
		ck_assert_msg(!holds_nocase(resp, len, value), "%s: %.600s",
		    cases[i], resp);
		at = field(resp, "X-Form-At");
		n = field(resp, "X-Form-Length");
		ck_assert_msg(at > 0 && n > 0, "%s: %.400s", cases[i], resp);
		body = malloc(len + 1);
		ck_assert_ptr_nonnull(body);
		blen = body_of(resp, len, body);
		ck_assert_msg((size_t)(at + n) < blen, "%s: body of %zu",
		    cases[i], blen);
		if (strcmp(cases[i], "base64_json") == 0) {
			/* The value's own base64 characters are gone: a run
			 * of filler of most of their length. */
			long run = 0, best = 0;
			for (long k = at + 1; k < at + n; k++) {
				run = body[k] == body[k - 1] &&
					!alnum((unsigned char)body[k])
				    ? run + 1
				    : 0;
				if (run > best)
					best = run;
			}
			ck_assert_msg(best >= 40, "%s: %.*s", cases[i], (int)n,
			    body + at);
		} else {
			unsigned char f = (unsigned char)body[at];
			ck_assert_msg(!alnum(f) && f != '\0' && f != '\\' &&
				f != '&' && f != '%' && f != '=',
			    "%s: the form starts %.*s", cases[i], (int)n,
			    body + at);
			for (long k = 0; k < n; k++)
				ck_assert_msg((unsigned char)body[at + k] ==
					    f ||
					body[at + k] == '\r' ||
					body[at + k] == '\n',
				    "%s: byte %ld of the form kept: %.*s",
				    cases[i], k, (int)n, body + at);
		}
		free(body);
		free(resp);
		now = injectkit_metric(&kit.proxy,
		    "cordon_proxy_reflections_total");
		ck_assert_msg(now > before, "%s: not counted (%ld)", cases[i],
		    now);
		before = now;
	}

	/* The value less its last byte, escaped the same way: a slice of
	 * INJECT_WINDOW bytes or more, redacted. */
	{
		char want[128];
		size_t w = 0;
		for (size_t k = 0; k + 1 < sizeof(value) - 1; k++) {
			if (value[k] == '/')
				want[w++] = '\\';
			want[w++] = value[k];
		}
		resp = ask("near", tok, &len);
		ck_assert_msg(http_status(resp) == 200, "near: %.400s", resp);
		ck_assert_msg(memmem(resp, len, want, w) == NULL, "near: %s",
		    resp);
		ck_assert_msg(memmem(resp, len, want, 8) == NULL, "near: %s",
		    resp);
		free(resp);
		ck_assert_int_gt(injectkit_metric(&kit.proxy,
				     "cordon_proxy_reflections_total"),
		    before);
	}

	/* Past the budget of steps: the answer ends short, the proxy goes
	 * on (the next request is answered whole). */
	resp = ask_at("costly.test", "costly", tok, &len);
	ck_assert_msg(http_status(resp) == 200, "costly: %.400s", resp);
	ck_assert_msg(len < 256 * 1024, "costly: all %zu bytes came", len);
	free(resp);
	/* The same with its head sent first: nothing is left for the
	 * client when the scan gives up (the proxy used its connection
	 * after freeing it: ASan's heap-use-after-free). */
	resp = ask_at("costly.test", "costly_late", tok, &len);
	ck_assert_msg(http_status(resp) == 200, "costly_late: %.400s", resp);
	ck_assert_msg(len < 256 * 1024, "costly_late: all %zu bytes came", len);
	free(resp);
	resp = ask("json_slash", tok, &len);
	ck_assert_msg(http_status(resp) == 200, "after: %.400s", resp);
	ck_assert(!holds_nocase(resp, len, value));
	free(resp);
	free(tok);
	ck_assert_uint_ge(file_count(kit.proxy.log, "secret_reflected"),
	    ncases);
	ck_assert_int_eq(daemon_stop(&kit.proxy), 0);

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    kit.proxy.dir);
	ck_assert_uint_ge(file_count(path, "\"reflected\":") -
		file_count(path, "\"reflected\":0"),
	    ncases);
	ck_assert_uint_eq(file_count(path, value), 0);
	ck_assert_uint_eq(file_count(path, "\"detail\":\"scan_too_costly\""),
	    2);
	ck_assert_uint_eq(file_count(kit.proxy.log, value), 0);
	injectkit_upstream_stop(&kit.up_pid);
	ck_assert_int_eq(daemon_stop(&kit.broker), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_reflect");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    a_reflected_escaped_credential_never_reaches_the_job);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
