/*
 * The bad-input catalogue (issue 9): every HTTP endpoint of every service
 * (the broker, the proxy's control API, the hatch, cordon serve) is sent
 * what a confused or hostile client sends: JSON that is broken, mistyped,
 * over the cap, nested 10,000 deep, badly encoded or holding NULs; heads
 * that are oversize or broken; path tricks and CRLF injection; slow and
 * half-closed connections. Each gets the status docs/api.md gives it with
 * a JSON error, never a 5xx, a hang or a crash; each service keeps
 * serving (/healthz and a real request of its own afterwards); /metrics
 * counts every refusal; and each daemon stops cleanly (so ASan and LSan
 * found nothing in it).
 *
 * Requests go as raw bytes over TCP, so that no client library tidies
 * them. Failures are collected rather than stopping the test, so that a
 * run lists every case that went wrong, by service, endpoint and case.
 *
 * What the HTTP library (libmicrohttpd) answers by itself, before cordon's
 * code sees the request (a head it cannot parse, or one over the 16 KiB a
 * connection may hold: 400, 414, 431), carries the library's HTML body:
 * those cases (LIB below) check the status, and the count in /metrics,
 * but not the body.
 */
#include "buf.h"
#include "harness.h"
#include "http_client.h"
#include "service.h"
#include "upstream.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
/* Generous: only there so that a hang fails instead of waiting forever. */
#define DEADLINE_MS 15000
#define CAP (1024 * 1024) /* HTTP_MAX_BODY */

enum svc { BROKER, PROXY, HATCH, SERVE, NSVC };
static const char *const svc_names[NSVC] = { "broker", "proxy", "hatch",
	"launcher" };
static struct daemon daemons[NSVC];

enum key { ANYONE, ADMIN, LAUNCHER, VERIFIER, NKEYS };
static char keys[NKEYS][128];
static char roots[300];

/* --- failures, collected ------------------------------------------------- */

/* ck_assert records every check it passes, and the parent reads them all
 * back: on the paths taken for every request, only a failure is told. */
#define MUST(cond)                                                             \
	do {                                                                   \
		if (!(cond))                                                   \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond);  \
	} while (0)

static struct buf failures;
static unsigned nfailed;

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
bad(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "it_badinput: FAILED %s\n", line);
	if (nfailed++ < 30)
		(void)buf_printf(&failures, "%s\n", line);
}

static void
assert_no_failures(void)
{
	ck_assert_msg(nfailed == 0, "%u case(s) failed (all on stderr):\n%s",
	    nfailed, buf_str(&failures));
}

/* --- what /metrics should have counted ----------------------------------- */

/* The statuses cordon_http_responses_total counts one by one
 * (common/http_server.c); the rest count as "other". */
static const int counted[] = { 200, 201, 202, 204, 400, 401, 403, 404, 405, 409,
	413, 415, 422, 429, 431, 500, 503 };
#define NLABELS (NELEM(counted) + 1)
/* The refusals each service sent this test, by label. */
static unsigned long long seen[NSVC][NLABELS];
static unsigned long long seen_401[NSVC];

static size_t
label_of(int status)
{
	size_t i;

	for (i = 0; i < NELEM(counted); i++)
		if (counted[i] == status)
			break;
	return i;
}

struct figures {
	unsigned long long by_label[NLABELS];
	unsigned long long auth_failures;
};

static void
metrics_read(enum svc s, struct figures *f)
{
	struct httpc_answer a;
	const char *p;

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(httpc_request(daemons[s].base, "GET", "/metrics", NULL,
			     NULL, NULL, DEADLINE_MS, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	for (p = buf_str(&a.body); p != NULL && *p != '\0';) {
		char label[16];
		unsigned long long n;

		if (sscanf(p,
			"cordon_http_responses_total{code=\"%15[^\"]\"} %llu",
			label, &n) == 2) {
			if (strcmp(label, "other") == 0)
				f->by_label[NELEM(counted)] = n;
			else
				f->by_label[label_of(atoi(label))] = n;
		} else
			sscanf(p, "cordon_http_auth_failures_total %llu",
			    &f->auth_failures);
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	httpc_answer_free(&a);
}

/*
 * Every refusal this test saw is in /metrics: at least as many (the
 * broker also answers the proxy's questions), and no 5xx at all.
 */
static void
metrics_check(enum svc s, const struct figures *before)
{
	struct figures after;
	unsigned long long refusals = 0;

	metrics_read(s, &after);
	for (size_t i = 0; i < NLABELS; i++) {
		unsigned long long d = after.by_label[i] - before->by_label[i];
		char label[16];

		if (i < NELEM(counted))
			snprintf(label, sizeof(label), "%d", counted[i]);
		else
			snprintf(label, sizeof(label), "other");
		if (i < NELEM(counted) && counted[i] < 400)
			continue;
		if (i < NELEM(counted) && counted[i] >= 500 && d > 0)
			bad("%s /metrics: %llu answers of %s", svc_names[s], d,
			    label);
		if (d < seen[s][i])
			bad("%s /metrics: %llu answers of %s counted, %llu "
			    "sent",
			    svc_names[s], d, label, seen[s][i]);
		refusals += seen[s][i];
	}
	if (after.auth_failures - before->auth_failures < seen_401[s])
		bad("%s /metrics: %llu auth failures counted, %llu sent",
		    svc_names[s], after.auth_failures - before->auth_failures,
		    seen_401[s]);
	/* The catalogue did refuse things: the check above is not idle. */
	if (refusals == 0)
		bad("%s: no refusal seen at all", svc_names[s]);
}

/* --- raw exchanges -------------------------------------------------------- */

static int
dial(enum svc s)
{
	struct sockaddr_storage sa;
	socklen_t len;
	int fd;

	MUST(service_parse_addr(daemons[s].addr, &sa, &len) == 0);
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	MUST(fd >= 0);
	MUST(connect(fd, (struct sockaddr *)&sa, len) == 0);
	return fd;
}

static void
send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return; /* the peer may have answered and closed */
		p += k;
		n -= (size_t)k;
	}
}

/* Sends req on a new connection (half-closed after it when asked) and
 * reads the answer: malloc'd, "" when none came. */
static char *
exchange(enum svc s, const char *req, size_t n, bool half_close)
{
	int fd = dial(s);
	char *out;

	if (half_close) {
		send_all(fd, req, n);
		MUST(shutdown(fd, SHUT_WR) == 0);
		out = http_exchange(fd, "", 0, DEADLINE_MS);
	} else
		out = http_exchange(fd, req, n, DEADLINE_MS);
	close(fd);
	MUST(out != NULL);
	return out;
}

/* Reads fd until the peer closes (true) or ms pass (false). */
static bool
closed_within(int fd, int ms, char *got, size_t len)
{
	size_t used = 0;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	got[0] = '\0';
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		char junk[4096];
		ssize_t n;
		long left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms -
		    ((t.tv_sec - t0.tv_sec) * 1000 +
			(t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return false;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = recv(fd, junk, sizeof(junk), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n < 0)
			continue;
		if (used + 1 < len) {
			size_t k = (size_t)n < len - 1 - used ? (size_t)n
							      : len - 1 - used;
			memcpy(got + used, junk, k);
			used += k;
			got[used] = '\0';
		}
	}
}

static int
status_of(const char *raw)
{
	int st = 0;

	if (sscanf(raw, "HTTP/1.%*d %d", &st) != 1)
		return 0;
	return st;
}

/* Whether the answer's head has a header called name. */
static bool
has_header(const char *raw, const char *name)
{
	const char *end = strstr(raw, "\r\n\r\n");
	size_t n = strlen(name);

	for (const char *p = strstr(raw, "\r\n"); p != NULL && p < end;
	     p = strstr(p + 2, "\r\n"))
		if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':')
			return true;
	return false;
}

static json_t *
json_of(const char *raw)
{
	const char *b = strstr(raw, "\r\n\r\n");

	return b != NULL ? json_loads(b + 4, 0, NULL) : NULL;
}

/* Whether a 422's problems name field. */
static bool
names_field(const json_t *v, const char *field)
{
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(v, "problems"), i, p)
	{
		const char *f = json_string_value(json_object_get(p, "field"));
		if (f != NULL && strcmp(f, field) == 0)
			return true;
	}
	return false;
}

enum {
	LIB = 1, /* answered by the HTTP library: the status alone */
	NO_INJECT = 2, /* and no header smuggled into the answer */
	NAMES_ZZZ = 4, /* a 422 that names the field "zzz" */
};

/*
 * Checks an answer: the status wanted, and for an error a JSON body with
 * "error" (equal to error, when given) and "message". Counts it for the
 * /metrics check.
 */
static void
check_answer(enum svc s, const char *what, const char *raw, int want,
    const char *error, unsigned flags)
{
	int st = status_of(raw);
	json_t *v;

	if (st > 0) {
		seen[s][label_of(st)]++;
		if (st == 401 && !(flags & LIB))
			seen_401[s]++;
	}
	if (st != want) {
		bad("%s %s: %d, not %d: %.160s", svc_names[s], what, st, want,
		    raw);
		return;
	}
	if ((flags & NO_INJECT) &&
	    (has_header(raw, "X-Injected") || has_header(raw, "Set-Cookie")))
		bad("%s %s: a header was injected into the answer: %.300s",
		    svc_names[s], what, raw);
	if ((flags & LIB) || st < 400)
		return;
	v = json_of(raw);
	if (!json_is_string(json_object_get(v, "error")) ||
	    !json_is_string(json_object_get(v, "message")))
		bad("%s %s: %d without a JSON error: %.200s", svc_names[s],
		    what, st, raw);
	else if (error != NULL &&
	    strcmp(json_string_value(json_object_get(v, "error")), error) != 0)
		bad("%s %s: error %s, not %s", svc_names[s], what,
		    json_string_value(json_object_get(v, "error")), error);
	else if ((flags & NAMES_ZZZ) && st == 422 && !names_field(v, "zzz"))
		bad("%s %s: the 422 does not name the field zzz: %.200s",
		    svc_names[s], what, raw);
	if (st == 401 && !has_header(raw, "WWW-Authenticate"))
		bad("%s %s: a 401 without WWW-Authenticate", svc_names[s],
		    what);
	json_decref(v);
}

/* --- requests ------------------------------------------------------------- */

enum framing {
	NOBODY,
	LENGTH, /* Content-Length and the body */
	CHUNKED, /* the body in chunks of 64 KiB */
	DECLARED, /* Content-Length: len, and no body sent */
};

/* Not ck_assert: Check records each one it passes, and these are many. */
static void
append(struct buf *b, const char *p, size_t n)
{
	if (buf_append(b, p, n) < 0) {
		fprintf(stderr, "it_badinput: out of buffer\n");
		abort();
	}
}

/* n copies of the byte c. */
static void
append_n(struct buf *b, char c, size_t n)
{
	char chunk[4096];

	memset(chunk, c, sizeof(chunk));
	for (; n > 0; n -= n < sizeof(chunk) ? n : sizeof(chunk))
		append(b, chunk, n < sizeof(chunk) ? n : sizeof(chunk));
}

static void
appends(struct buf *b, const char *s)
{
	append(b, s, strlen(s));
}

/* The request's bytes into b (buf_free it). headers: lines ending CRLF. */
static void
build(struct buf *b, const char *method, const char *target, enum key role,
    const char *headers, const char *body, size_t blen, enum framing f)
{
	char line[256];

	buf_init(b, 16 * 1024 * 1024);
	appends(b, method);
	appends(b, " ");
	appends(b, target);
	appends(b, " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
	if (role != ANYONE) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s\r\n",
		    keys[role]);
		appends(b, line);
	}
	if (headers != NULL)
		appends(b, headers);
	switch (f) {
	case NOBODY:
		appends(b, "\r\n");
		break;
	case LENGTH:
	case DECLARED:
		snprintf(line, sizeof(line),
		    "Content-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n",
		    blen);
		appends(b, line);
		if (f == LENGTH)
			append(b, body, blen);
		break;
	case CHUNKED:
		appends(b,
		    "Content-Type: application/json\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n");
		for (size_t off = 0; off < blen; off += 65536) {
			size_t n = blen - off < 65536 ? blen - off : 65536;
			snprintf(line, sizeof(line), "%zx\r\n", n);
			appends(b, line);
			append(b, body + off, n);
			appends(b, "\r\n");
		}
		appends(b, "0\r\n\r\n");
		break;
	}
}

/* Builds, sends and checks one request. */
static void
try_one(enum svc s, const char *what, const char *method, const char *target,
    enum key role, const char *headers, const char *body, size_t blen,
    enum framing f, bool half_close, int want, const char *error,
    unsigned flags)
{
	struct buf b;
	char *out;

	build(&b, method, target, role, headers, body, blen, f);
	out = exchange(s, b.data, b.len, half_close);
	check_answer(s, what, out, want, error, flags);
	free(out);
	buf_free(&b);
}

/* --- the endpoints -------------------------------------------------------- */

enum body { B_NONE, B_JSON, B_OPTIONAL };

static const struct endpoint {
	enum svc svc;
	const char *method, *path;
	enum key role; /* a key that may call it */
	enum key wrong; /* one that may not (ANYONE: none to try) */
	const char *header; /* one more header line, or NULL */
	enum body body;
	int plain; /* the answer without a body (any body, for B_NONE) */
	const char *types; /* the right fields, of the wrong types */
	const char *unknown; /* a body with a field too many: "zzz" */
} endpoints[] = {
	{ BROKER, "GET", "/healthz", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ BROKER, "GET", "/metrics", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ BROKER, "PUT", "/v1/manifests/bi-x", ADMIN, LAUNCHER, NULL, B_JSON,
	    400, "{\"name\": 5, \"command\": \"x\", \"limits\": []}",
	    "{\"name\": \"bi-x\", \"command\": [\"/bin/true\"], \"zzz\": 1}" },
	{ BROKER, "GET", "/v1/manifests/bi-nope", ADMIN, VERIFIER, NULL, B_NONE,
	    404, NULL, NULL },
	{ BROKER, "POST", "/v1/jobs", LAUNCHER, ADMIN, NULL, B_JSON, 400,
	    "{\"manifest\": 5}", "{\"manifest\": \"bi-job\", \"zzz\": 1}" },
	{ BROKER, "GET", "/v1/jobs/job_nope", ADMIN, VERIFIER, NULL, B_NONE,
	    404, NULL, NULL },
	{ BROKER, "POST", "/v1/jobs/job_nope/heartbeat", LAUNCHER, ADMIN, NULL,
	    B_NONE, 404, NULL, NULL },
	{ BROKER, "POST", "/v1/jobs/job_nope/revoke", ADMIN, VERIFIER, NULL,
	    B_OPTIONAL, 404, "{\"reason\": 7}",
	    "{\"reason\": \"x\", \"zzz\": 1}" },
	{ BROKER, "GET", "/v1/jobs/job_nope/egress", VERIFIER, ADMIN, NULL,
	    B_NONE, 404, NULL, NULL },
	{ BROKER, "POST", "/v1/token", VERIFIER, ANYONE,
	    "X-Cordon-Job: job_nope\r\n", B_JSON, 400,
	    "{\"capability\": 5, \"params\": []}",
	    "{\"capability\": \"x.read\", \"params\": {}, \"zzz\": 1}" },
	{ BROKER, "POST", "/v1/introspect", VERIFIER, ADMIN, NULL, B_JSON, 400,
	    "{\"token\": 5}", "{\"token\": \"crd_x\", \"zzz\": 1}" },
	{ BROKER, "POST", "/v1/revoke", ADMIN, VERIFIER, NULL, B_JSON, 400,
	    "{\"token\": []}", "{\"token\": \"crd_x\", \"zzz\": 1}" },
	{ BROKER, "GET", "/v1/revocations?wait=0", VERIFIER, ADMIN, NULL,
	    B_NONE, 200, NULL, NULL },
	{ BROKER, "GET", "/v1/audit?limit=1", ADMIN, LAUNCHER, NULL, B_NONE,
	    200, NULL, NULL },

	{ PROXY, "GET", "/healthz", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ PROXY, "GET", "/metrics", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ PROXY, "POST", "/v1/jobs/job_nope", LAUNCHER, ADMIN, NULL, B_OPTIONAL,
	    404, "{\"job\": 5}", "{\"zzz\": 1}" },
	{ PROXY, "DELETE", "/v1/jobs/job_nope", LAUNCHER, ADMIN, NULL, B_NONE,
	    404, NULL, NULL },
	{ PROXY, "GET", "/v1/jobs/job_nope/log", LAUNCHER, ADMIN, NULL, B_NONE,
	    404, NULL, NULL },

	{ HATCH, "GET", "/healthz", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ HATCH, "GET", "/metrics", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ HATCH, "POST", "/v1/workspaces", LAUNCHER, ADMIN, NULL, B_JSON, 400,
	    "{\"job\": 5, \"inputs\": \"all\", \"disk_mb\": \"8\", "
	    "\"return\": []}",
	    "{\"job\": \"job_bi\", \"inputs\": [], \"zzz\": 1}" },
	{ HATCH, "POST", "/v1/workspaces/job_nope/seal", LAUNCHER, ADMIN, NULL,
	    B_OPTIONAL, 404, "{\"stdout\": 5, \"output_kb\": \"1\"}",
	    "{\"zzz\": 1}" },
	{ HATCH, "GET", "/v1/workspaces/job_nope/patch", LAUNCHER, ADMIN, NULL,
	    B_NONE, 404, NULL, NULL },
	{ HATCH, "GET", "/v1/workspaces/job_nope/report", LAUNCHER, ADMIN, NULL,
	    B_NONE, 404, NULL, NULL },
	{ HATCH, "DELETE", "/v1/workspaces/job_nope", LAUNCHER, ADMIN, NULL,
	    B_NONE, 404, NULL, NULL },

	{ SERVE, "GET", "/healthz", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ SERVE, "GET", "/metrics", ANYONE, ANYONE, NULL, B_NONE, 200, NULL,
	    NULL },
	{ SERVE, "POST", "/v1/jobs", LAUNCHER, ADMIN, NULL, B_JSON, 400,
	    "{\"manifest\": 5, \"inputs\": {}, \"command\": \"x\"}",
	    "{\"manifest\": \"bi-job\", \"zzz\": 1}" },
	{ SERVE, "GET", "/v1/jobs/job_nope", LAUNCHER, ADMIN, NULL, B_NONE, 404,
	    NULL, NULL },
	{ SERVE, "POST", "/v1/jobs/job_nope/stop", LAUNCHER, ADMIN, NULL,
	    B_OPTIONAL, 404, "{\"job\": 5}", "{\"zzz\": 1}" },
	{ SERVE, "GET", "/v1/jobs/job_nope/output", LAUNCHER, ADMIN, NULL,
	    B_NONE, 404, NULL, NULL },
};

/* --- bodies --------------------------------------------------------------- */

enum want {
	W_BAD, /* 400 malformed where a JSON body is read */
	W_TYPES, /* 422 where a JSON body is read */
	W_UNKNOWN, /* 422 naming "zzz" where a JSON body is read */
	W_EMPTY, /* no body: 400 where one is required */
	W_EMPTY_OBJECT, /* {}: 422 where fields are required */
	W_TOO_LARGE, /* 413 everywhere, before any handler */
};

struct bodycase {
	const char *name;
	char *body; /* malloc'd; NULL: the endpoint's own (types, unknown) */
	size_t len;
	enum framing framing;
	enum want want;
	const char *headers;
};

static struct bodycase cases[48];
static size_t ncases;

static void
add_case(const char *name, const char *body, size_t len, enum framing f,
    enum want w)
{
	struct bodycase *c;

	MUST(ncases < NELEM(cases));
	c = &cases[ncases++];
	c->name = name;
	c->body = NULL;
	if (body != NULL) {
		c->body = malloc(len + 1);
		MUST(c->body != NULL);
		memcpy(c->body, body, len);
		c->body[len] = '\0';
	}
	c->len = len;
	c->framing = f;
	c->want = w;
	c->headers = NULL;
}

#define LIT(s) s, sizeof(s) - 1

/* s repeated n times, then tail (malloc'd into the case). */
static void
add_repeated(const char *name, const char *head, const char *s, size_t n,
    const char *tail, enum framing f, enum want w)
{
	struct buf b;

	buf_init(&b, 4 * CAP);
	appends(&b, head);
	for (size_t i = 0; i < n; i++)
		appends(&b, s);
	appends(&b, tail);
	add_case(name, b.data, b.len, f, w);
	buf_free(&b);
}

static void
make_cases(void)
{
	char *big;
	struct buf b;

	ncases = 0;
	add_case("malformed JSON", LIT("{\"zzz\": "), LENGTH, W_BAD);
	add_case("an unterminated string", LIT("{\"zzz\": \"abc"), LENGTH,
	    W_BAD);
	add_case("trailing garbage", LIT("{} x"), LENGTH, W_BAD);
	add_case("two documents", LIT("{}{}"), LENGTH, W_BAD);
	add_case("an array, not an object", LIT("[1, 2]"), LENGTH, W_BAD);
	add_case("a string, not an object", LIT("\"x\""), LENGTH, W_BAD);
	add_case("a number, not an object", LIT("5"), LENGTH, W_BAD);
	add_case("null, not an object", LIT("null"), LENGTH, W_BAD);
	add_case("whitespace alone", LIT("  \r\n"), LENGTH, W_BAD);
	add_case("a duplicate key", LIT("{\"zzz\": 1, \"zzz\": 2}"), LENGTH,
	    W_BAD);
	add_case("NaN", LIT("{\"zzz\": NaN}"), LENGTH, W_BAD);
	add_repeated("an integer of 400 digits", "{\"zzz\": 1", "0", 400, "}",
	    LENGTH, W_BAD);
	add_case("a UTF-8 byte order mark", LIT("\xef\xbb\xbf{}"), LENGTH,
	    W_BAD);
	add_case("invalid UTF-8 (0xff)", LIT("{\"zzz\": \"\xff\xfe\"}"), LENGTH,
	    W_BAD);
	add_case("overlong UTF-8 (0xc0 0xaf)", LIT("{\"zzz\": \"\xc0\xaf\"}"),
	    LENGTH, W_BAD);
	add_case("a UTF-8 surrogate (0xed 0xa0 0x80)",
	    LIT("{\"zzz\": \"\xed\xa0\x80\"}"), LENGTH, W_BAD);
	add_case("invalid UTF-8 in a key", LIT("{\"z\xff\": 1}"), LENGTH,
	    W_BAD);
	add_case("a lone surrogate escape", LIT("{\"zzz\": \"\\ud800\"}"),
	    LENGTH, W_BAD);
	add_case("a \\u0000 escape", LIT("{\"zzz\": \"a\\u0000b\"}"), LENGTH,
	    W_BAD);
	add_case("a NUL byte in a string", LIT("{\"zzz\": \"a\0b\"}"), LENGTH,
	    W_BAD);
	add_case("a NUL byte in a key", LIT("{\"z\0z\": 1}"), LENGTH, W_BAD);
	add_case("a NUL byte after the document", LIT("{}\0"), LENGTH, W_BAD);
	add_repeated("10,000 levels of [", "", "[", 10000, "", LENGTH, W_BAD);
	add_repeated("10,000 levels of [ in an object", "{\"zzz\": ", "[",
	    10000, "", LENGTH, W_BAD);
	/* The tail closes what the head opened: well-formed, too deep. */
	buf_init(&b, CAP);
	appends(&b, "{\"zzz\": ");
	append_n(&b, '[', 10000);
	append_n(&b, ']', 10000);
	appends(&b, "}");
	add_case("10,000 levels of [], well-formed", b.data, b.len, LENGTH,
	    W_BAD);
	buf_free(&b);
	add_repeated("10,000 levels of {", "", "{\"a\": ", 10000, "1", LENGTH,
	    W_BAD);
	add_case("wrong types", NULL, 0, LENGTH, W_TYPES);
	add_case("an unknown field", NULL, 0, LENGTH, W_UNKNOWN);
	add_case("an unknown field, chunked", NULL, 0, CHUNKED, W_UNKNOWN);
	add_case("no body", NULL, 0, NOBODY, W_EMPTY);
	add_case("an empty object", LIT("{}"), LENGTH, W_EMPTY_OBJECT);
	/* Big but under the cap: read whole, then refused for what it is. */
	buf_init(&b, CAP);
	appends(&b, "{\"zzz\": 0");
	for (int i = 1; i < 5000; i++) {
		char k[32];
		snprintf(k, sizeof(k), ", \"zzz%d\": 0", i);
		appends(&b, k);
	}
	appends(&b, "}");
	add_case("5,000 unknown fields", b.data, b.len, LENGTH, W_UNKNOWN);
	buf_free(&b);
	big = malloc(CAP + 64);
	MUST(big != NULL);
	memcpy(big, "{\"zzz\": \"", 9);
	memset(big + 9, 'a', CAP - 9 - 100);
	memcpy(big + CAP - 100, "\"}", 3);
	add_case("a document of 1 MiB less 98 bytes", big, strlen(big), LENGTH,
	    W_UNKNOWN);
	free(big);
	/* Over the cap: refused before anything else reads it. */
	big = malloc(CAP + 64 * 1024 + 1);
	MUST(big != NULL);
	memcpy(big, "{\"zzz\": \"", 9);
	memset(big + 9, 'a', CAP + 64 * 1024 - 11);
	memcpy(big + CAP + 64 * 1024 - 2, "\"}", 3);
	add_case("a document of 1 MiB + 64 KiB", big, CAP + 64 * 1024, LENGTH,
	    W_TOO_LARGE);
	add_case("a document of 1 MiB + 64 KiB, chunked", big, CAP + 64 * 1024,
	    CHUNKED, W_TOO_LARGE);
	free(big);
	add_case("a declared length of 1 MiB + 1, no body", NULL, CAP + 1,
	    DECLARED, W_TOO_LARGE);
	add_case("a declared length of 99999999999, no body", NULL,
	    99999999999ULL, DECLARED, W_TOO_LARGE);
	add_case("a declared length over the cap with Expect: 100-continue",
	    NULL, 2 * CAP, DECLARED, W_TOO_LARGE);
	cases[ncases - 1].headers = "Expect: 100-continue\r\n";
}

static void
free_cases(void)
{
	for (size_t i = 0; i < ncases; i++)
		free(cases[i].body);
	ncases = 0;
}

/* What e answers to c, and the error code when the glue gives it. */
static int
expected(const struct endpoint *e, enum want w, const char **error,
    unsigned *flags)
{
	*error = NULL;
	*flags = 0;
	switch (w) {
	case W_TOO_LARGE:
		*error = "body_too_large";
		return 413;
	case W_BAD:
		if (e->body == B_NONE)
			return e->plain;
		*error = "malformed";
		return 400;
	case W_TYPES:
		return e->body == B_NONE ? e->plain : 422;
	case W_UNKNOWN:
		*flags = NAMES_ZZZ;
		return e->body == B_NONE ? e->plain : 422;
	case W_EMPTY:
		if (e->body != B_JSON)
			return e->plain;
		*error = "malformed";
		return 400;
	case W_EMPTY_OBJECT:
		return e->body == B_JSON ? 422 : e->plain;
	}
	return 0;
}

static void
body_cases(const struct endpoint *e)
{
	for (size_t i = 0; i < ncases; i++) {
		const struct bodycase *c = &cases[i];
		const char *body = c->body, *error;
		size_t len = c->len;
		char what[256], headers[256];
		unsigned flags;
		int want = expected(e, c->want, &error, &flags);

		if (c->want == W_TYPES || c->want == W_UNKNOWN) {
			if (body == NULL) {
				body =
				    c->want == W_TYPES ? e->types : e->unknown;
				if (body == NULL) /* B_NONE: any body will do */
					body = "{\"zzz\": 1}";
				len = strlen(body);
			}
		}
		snprintf(headers, sizeof(headers), "%s%s",
		    e->header != NULL ? e->header : "",
		    c->headers != NULL ? c->headers : "");
		snprintf(what, sizeof(what), "%s %s, %s", e->method, e->path,
		    c->name);
		try_one(e->svc, what, e->method, e->path, e->role, headers,
		    body, len, c->framing, false, want, error, flags);
	}
}

/* --- keys ----------------------------------------------------------------- */

static void
key_cases(const struct endpoint *e)
{
	static const struct {
		const char *name, *auth;
	} bad[] = {
		{ "no key", NULL },
		{ "an unknown key",
		    "Authorization: Bearer "
		    "crk_0123456789abcdefghijklmnopqrstuvwxyzAB\r\n" },
		{ "a key of 4 KiB", NULL },
		{ "Basic, not Bearer", "Authorization: Basic YTpi\r\n" },
		{ "Bearer and no key", "Authorization: Bearer\r\n" },
		{ "a key of invalid UTF-8",
		    "Authorization: Bearer \xff\xfe\r\n" },
	};
	char what[256], headers[8192];

	if (e->role == ANYONE)
		return;
	for (size_t i = 0; i < NELEM(bad); i++) {
		if (i == 2) {
			char k[4097];
			memset(k, 'k', sizeof(k) - 1);
			k[sizeof(k) - 1] = '\0';
			snprintf(headers, sizeof(headers),
			    "%sAuthorization: Bearer crk_%s\r\n",
			    e->header != NULL ? e->header : "", k);
		} else
			snprintf(headers, sizeof(headers), "%s%s",
			    e->header != NULL ? e->header : "",
			    bad[i].auth != NULL ? bad[i].auth : "");
		snprintf(what, sizeof(what), "%s %s, %s", e->method, e->path,
		    bad[i].name);
		try_one(e->svc, what, e->method, e->path, ANYONE, headers, NULL,
		    0, NOBODY, false, 401, "unauthorized", 0);
	}
	if (e->wrong != ANYONE) {
		/* The proxy, the hatch and serve know the launcher's key
		 * alone: another is unknown there (401); the broker knows
		 * every role's and refuses the wrong one (403). */
		bool broker = e->svc == BROKER;
		snprintf(what, sizeof(what), "%s %s, another role's key",
		    e->method, e->path);
		try_one(e->svc, what, e->method, e->path, e->wrong, e->header,
		    NULL, 0, NOBODY, false, broker ? 403 : 401,
		    broker ? "forbidden" : "unauthorized", 0);
	}
}

/* --- paths ---------------------------------------------------------------- */

/* path with its query split off into query ("" when none). */
static void
split(const char *target, char *path, size_t plen, char *query, size_t qlen)
{
	const char *q = strchr(target, '?');
	size_t n = q != NULL ? (size_t)(q - target) : strlen(target);

	snprintf(path, plen, "%.*s", (int)n, target);
	snprintf(query, qlen, "%s", q != NULL ? q : "");
}

/* path with its last '/' replaced by with (or with appended when the only
 * slash is the first byte). */
static void
replace_last_slash(const char *path, const char *with, char *out, size_t len)
{
	const char *s = strrchr(path, '/');

	if (s == NULL || s == path)
		snprintf(out, len, "%s%sx", path, with);
	else
		snprintf(out, len, "%.*s%s%s", (int)(s - path), path, with,
		    s + 1);
}

static void
path_cases(const struct endpoint *e)
{
	enum {
		DOTDOT,
		DOTDOT_ENCODED,
		DOTDOT_SLASH_ENCODED,
		DOUBLE_SLASH_FIRST,
		DOUBLE_SLASH_LAST,
		TRAILING_SLASH,
		SLASH_ENCODED,
		SLASH_ENCODED_LOWER,
		BACKSLASH,
		NUL_ENCODED,
		CRLF_ENCODED,
		DOT_SEGMENT,
		DOT_SEGMENT_ENCODED,
		LONG_SEGMENT,
		LONG_PATH,
		RAW_UTF8,
		ENCODED_FF,
		CONTROL_BYTE,
		SEMICOLON,
		FRAGMENT,
		NTRICKS
	};
	static const char *const names[NTRICKS] = {
		"a .. segment",
		"a %2e%2e segment",
		"%2e%2e%2f",
		"// first",
		"// before the last segment",
		"a trailing /",
		"the last / as %2F",
		"the last / as %2f",
		"the last / as \\",
		"%00 in the last segment",
		"%0d%0a and a header in the path",
		"a segment starting with .",
		"a segment of %2e",
		"a segment of 200 bytes",
		"a path of 300 bytes",
		"raw UTF-8 in a segment",
		"%ff in a segment",
		"a control byte in a segment",
		";params",
		"a #fragment",
	};
	char path[256], query[64], p[512], target[600], what[300];

	split(e->path, path, sizeof(path), query, sizeof(query));
	for (int t = 0; t < NTRICKS; t++) {
		char a[256];

		memset(a, 'a', 200);
		a[200] = '\0';
		switch (t) {
		case DOTDOT:
			snprintf(p, sizeof(p), "/v1/..%s", path);
			break;
		case DOTDOT_ENCODED:
			snprintf(p, sizeof(p), "/v1/%%2e%%2e%s", path);
			break;
		case DOTDOT_SLASH_ENCODED:
			snprintf(p, sizeof(p), "/%%2e%%2e%%2f%s", path + 1);
			break;
		case DOUBLE_SLASH_FIRST:
			snprintf(p, sizeof(p), "/%s", path);
			break;
		case DOUBLE_SLASH_LAST:
			replace_last_slash(path, "//", p, sizeof(p));
			break;
		case TRAILING_SLASH:
			snprintf(p, sizeof(p), "%s/", path);
			break;
		case SLASH_ENCODED:
			replace_last_slash(path, "%2F", p, sizeof(p));
			break;
		case SLASH_ENCODED_LOWER:
			replace_last_slash(path, "%2f", p, sizeof(p));
			break;
		case BACKSLASH:
			replace_last_slash(path, "\\", p, sizeof(p));
			break;
		case NUL_ENCODED:
			snprintf(p, sizeof(p), "%s%%00", path);
			break;
		case CRLF_ENCODED:
			snprintf(p, sizeof(p),
			    "%s%%0d%%0aX-Injected:%%201%%0d%%0a", path);
			break;
		case DOT_SEGMENT:
			snprintf(p, sizeof(p), "%s/.x", path);
			break;
		case DOT_SEGMENT_ENCODED:
			snprintf(p, sizeof(p), "%s/%%2e", path);
			break;
		case LONG_SEGMENT:
			snprintf(p, sizeof(p), "%s/%s", path, a);
			break;
		case LONG_PATH:
			snprintf(p, sizeof(p), "%s/%s/%.100s", path, a, a);
			break;
		case RAW_UTF8:
			snprintf(p, sizeof(p), "%s\xc3\xa9", path);
			break;
		case ENCODED_FF:
			snprintf(p, sizeof(p), "%s%%ff", path);
			break;
		case CONTROL_BYTE:
			snprintf(p, sizeof(p), "%s\x01", path);
			break;
		case SEMICOLON:
			snprintf(p, sizeof(p), "%s;x=1", path);
			break;
		case FRAGMENT:
			snprintf(p, sizeof(p), "%s#x", path);
			break;
		}
		snprintf(target, sizeof(target), "%s%s", p, query);
		snprintf(what, sizeof(what), "%s %s, %s", e->method, e->path,
		    names[t]);
		/* No route matches, whoever asks: 404 before the key. */
		try_one(e->svc, what, e->method, target, e->role, e->header,
		    NULL, 0, NOBODY, false, 404, "not_found", NO_INJECT);
	}
}

/* --- heads ---------------------------------------------------------------- */

static void
head_cases(const struct endpoint *e)
{
	char what[300], target[400], headers[512], auth[200], req[1024];
	const char *h = e->header != NULL ? e->header : "";
	const char *sep = strchr(e->path, '?') != NULL ? "&" : "?";
	struct buf b;
	char *out;

	auth[0] = '\0';
	if (e->role != ANYONE)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    keys[e->role]);

#define WHAT(s) snprintf(what, sizeof(what), "%s %s, %s", e->method, e->path, s)
	/* A header of 20 KiB, and 2,000 small ones: over the 16 KiB a
	 * connection holds. */
	buf_init(&b, CAP);
	appends(&b, h);
	appends(&b, "X-Big: ");
	append_n(&b, 'a', 20 * 1024);
	appends(&b, "\r\n");
	WHAT("a header of 20 KiB");
	try_one(e->svc, what, e->method, e->path, e->role, b.data, NULL, 0,
	    NOBODY, false, 431, NULL, LIB);
	buf_reset(&b);
	appends(&b, h);
	for (int i = 0; i < 2000; i++) {
		char line[32];
		snprintf(line, sizeof(line), "X-H%d: y\r\n", i);
		appends(&b, line);
	}
	WHAT("2,000 headers");
	try_one(e->svc, what, e->method, e->path, e->role, b.data, NULL, 0,
	    NOBODY, false, 431, NULL, LIB);
	buf_reset(&b);
	appends(&b, e->path);
	appends(&b, sep);
	appends(&b, "pad=");
	append_n(&b, 'a', 20 * 1024);
	WHAT("a target of 20 KiB");
	try_one(e->svc, what, e->method, b.data, e->role, e->header, NULL, 0,
	    NOBODY, false, 414, NULL, LIB);
	buf_free(&b);

	/* CRLF injection: raw in the request line (a broken request), raw
	 * CR in a header value, encoded in the query: nothing of it may
	 * come back as a header. */
	snprintf(target, sizeof(target), "%s\r\nX-Injected: 1\r\nX-A: b",
	    e->path);
	WHAT("CRLF and a header in the request line");
	try_one(e->svc, what, e->method, target, e->role, e->header, NULL, 0,
	    NOBODY, false, 400, NULL, LIB | NO_INJECT);
	snprintf(headers, sizeof(headers), "%sX-Note: a\rX-Injected: 1\r\n", h);
	WHAT("a bare CR and a header in a header value");
	try_one(e->svc, what, e->method, e->path, e->role, headers, NULL, 0,
	    NOBODY, false, e->body == B_JSON ? 400 : e->plain, NULL, NO_INJECT);
	snprintf(target, sizeof(target),
	    "%s%sx=%%0d%%0aX-Injected:%%201%%0d%%0aSet-Cookie:%%20a=b", e->path,
	    sep);
	WHAT("CRLF and headers encoded in the query");
	try_one(e->svc, what, e->method, target, e->role, e->header, NULL, 0,
	    NOBODY, false, e->body == B_JSON ? 400 : e->plain, NULL, NO_INJECT);

	/* Heads the library cannot take. */
	snprintf(headers, sizeof(headers), "%sNoColonHere\r\n", h);
	WHAT("a header line without a colon");
	try_one(e->svc, what, e->method, e->path, e->role, headers, NULL, 0,
	    NOBODY, false, 400, NULL, LIB);
	snprintf(headers, sizeof(headers), "%sContent-Length: abc\r\n", h);
	WHAT("Content-Length: abc");
	try_one(e->svc, what, e->method, e->path, e->role, headers, NULL, 0,
	    NOBODY, false, 400, NULL, LIB);
	snprintf(headers, sizeof(headers), "%sContent-Length: -1\r\n", h);
	WHAT("Content-Length: -1");
	try_one(e->svc, what, e->method, e->path, e->role, headers, NULL, 0,
	    NOBODY, false, 400, NULL, LIB);
	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\n%s%s\r\n", e->method,
	    e->path, auth, h);
	out = exchange(e->svc, req, strlen(req), false);
	WHAT("HTTP/1.1 without Host");
	check_answer(e->svc, what, out, 400, NULL, LIB);
	free(out);

	/* Methods: unknown, lower-case, raw bytes: 405 with Allow. */
	char long_method[568];
	memset(long_method, 'A', sizeof(long_method) - 1);
	long_method[sizeof(long_method) - 1] = '\0';
	const char *const methods[] = { "BREW", "get", "\xff\xfe",
		long_method };
	static const char *const method_names[] = { "the method BREW",
		"a lower-case method", "a method of raw bytes",
		"a method of 567 bytes" };
	for (size_t i = 0; i < NELEM(methods); i++) {
		struct buf r;
		WHAT(method_names[i]);
		build(&r, methods[i], e->path, e->role, e->header, NULL, 0,
		    NOBODY);
		out = exchange(e->svc, r.data, r.len, false);
		check_answer(e->svc, what, out, 405, "method_not_allowed", 0);
		if (status_of(out) == 405 && !has_header(out, "Allow"))
			bad("%s %s: a 405 without Allow", svc_names[e->svc],
			    what);
		free(out);
		buf_free(&r);
	}

	/* HTTP/1.0 is still HTTP. */
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\n%s%s\r\n", e->method,
	    e->path, auth, h);
	out = exchange(e->svc, req, strlen(req), false);
	WHAT("HTTP/1.0");
	check_answer(e->svc, what, out, e->body == B_JSON ? 400 : e->plain,
	    NULL, 0);
	free(out);
#undef WHAT
}

/* Bytes that are no HTTP at all: closed (at most a 4xx first), not held. */
static void
garbage_cases(enum svc s)
{
	static const struct {
		const char *name, *bytes;
		size_t len;
	} junk[] = {
		{ "a line of garbage", LIT("GARBAGE\r\n\r\n") },
		{ "a space in the target",
		    LIT("GET /heal thz HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ "a TLS ClientHello",
		    LIT("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"
			"0123456789abcdef0123456789abcdef\r\n\r\n") },
	};

	for (size_t i = 0; i < NELEM(junk); i++) {
		char got[512];
		int fd = dial(s), st;

		send_all(fd, junk[i].bytes, junk[i].len);
		if (!closed_within(fd, DEADLINE_MS, got, sizeof(got)))
			bad("%s %s: still open after %d ms", svc_names[s],
			    junk[i].name, DEADLINE_MS);
		close(fd);
		st = status_of(got);
		if (st > 0)
			seen[s][label_of(st)]++;
		if (got[0] != '\0' && (st < 400 || st >= 500))
			bad("%s %s: answered %.100s", svc_names[s],
			    junk[i].name, got);
	}
}

/* --- the broker's own: query arguments and X-Cordon-Job -------------------- */

static void
broker_cases(void)
{
	static const char *const queries[] = {
		"/v1/revocations?after=-1",
		"/v1/revocations?after=1e3",
		"/v1/revocations?after=%ff",
		"/v1/revocations?after=99999999999999999999",
		"/v1/revocations?after=",
		"/v1/revocations?wait=31",
		"/v1/revocations?wait=x",
		"/v1/revocations?follower=a%20b",
		"/v1/revocations?follower=..%2fx",
		"/v1/revocations?follower=%ff",
		"/v1/revocations?follower="
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aa",
		"/v1/audit?limit=0",
		"/v1/audit?limit=10001",
		"/v1/audit?after=-5",
		"/v1/audit?limit=%00",
	};
	static const char *const roles_of[] = { "verifier", "admin" };
	static const char *const jobs[] = { "../x", "\xff\xfe",
		"job_nope%0d%0a", "", " job_nope" };
	static const char body[] =
	    "{\"capability\": \"x.read\", \"params\": {}}";
	char what[300], headers[8192];

	for (size_t i = 0; i < NELEM(queries); i++) {
		bool audit = strncmp(queries[i], "/v1/audit", 9) == 0;
		snprintf(what, sizeof(what), "GET %s (%s key)", queries[i],
		    roles_of[audit]);
		try_one(BROKER, what, "GET", queries[i],
		    audit ? ADMIN : VERIFIER, NULL, NULL, 0, NOBODY, false, 400,
		    "malformed", 0);
	}
	snprintf(what, sizeof(what), "GET /v1/manifests/bi-job?version=abc");
	try_one(BROKER, what, "GET", "/v1/manifests/bi-job?version=abc", ADMIN,
	    NULL, NULL, 0, NOBODY, false, 400, "malformed", 0);
	snprintf(what, sizeof(what), "GET /v1/manifests/bi-job?version=0");
	try_one(BROKER, what, "GET", "/v1/manifests/bi-job?version=0", ADMIN,
	    NULL, NULL, 0, NOBODY, false, 400, "malformed", 0);

	/* X-Cordon-Job names a job, nothing else. */
	for (size_t i = 0; i < NELEM(jobs); i++) {
		snprintf(headers, sizeof(headers), "X-Cordon-Job: %s\r\n",
		    jobs[i]);
		snprintf(what, sizeof(what), "POST /v1/token, X-Cordon-Job: %s",
		    jobs[i]);
		try_one(BROKER, what, "POST", "/v1/token", VERIFIER, headers,
		    body, strlen(body), LENGTH, false, 404, "unknown_job", 0);
	}
	{
		char j[4097];
		memset(j, 'j', sizeof(j) - 1);
		j[sizeof(j) - 1] = '\0';
		snprintf(headers, sizeof(headers), "X-Cordon-Job: %s\r\n", j);
		try_one(BROKER, "POST /v1/token, X-Cordon-Job of 4 KiB", "POST",
		    "/v1/token", VERIFIER, headers, body, strlen(body), LENGTH,
		    false, 404, "unknown_job", 0);
	}
	/* From any key but the verifier's, the header is not heard. */
	try_one(BROKER, "POST /v1/token, X-Cordon-Job from the admin key",
	    "POST", "/v1/token", ADMIN, "X-Cordon-Job: job_nope\r\n", body,
	    strlen(body), LENGTH, false, 403, "forbidden", 0);
}

/* --- after the barrage ------------------------------------------------------ */

static unsigned normal_n;

/* A small repository under the hatch's roots: its path (static). */
static const char *
make_repo(void)
{
	static char repo[400];
	char p[500];

	snprintf(repo, sizeof(repo), "%s/repo%u", roots, normal_n);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	harness_write_file(p, "hello\n");
	return repo;
}

static char *
broker_job(void)
{
	json_t *j = harness_expect(&daemons[BROKER], 201, "POST", "/v1/jobs",
	    keys[LAUNCHER], NULL, json_pack("{s:s}", "manifest", "bi-job"));
	char *id = strdup(json_string_value(json_object_get(j, "job")));

	json_decref(j);
	return id;
}

/* A request of the service's own, answered as it should be. */
static void
normal_request(enum svc s)
{
	char path[200];
	json_t *j;
	char *job;

	normal_n++;
	switch (s) {
	case BROKER:
		j = harness_expect(&daemons[BROKER], 200, "PUT",
		    "/v1/manifests/bi-normal", keys[ADMIN], NULL,
		    json_pack("{s:s, s:[s]}", "name", "bi-normal", "command",
			"/bin/true"));
		json_decref(j);
		job = broker_job();
		snprintf(path, sizeof(path), "/v1/jobs/%s", job);
		j = harness_expect(&daemons[BROKER], 200, "GET", path,
		    keys[ADMIN], NULL, NULL);
		ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
		    "running");
		json_decref(j);
		snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
		j = harness_expect(&daemons[BROKER], 200, "POST", path,
		    keys[ADMIN], NULL, NULL);
		ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
		    "revoked");
		json_decref(j);
		free(job);
		break;
	case PROXY:
		job = broker_job();
		snprintf(path, sizeof(path), "/v1/jobs/%s", job);
		j = harness_expect(&daemons[PROXY], 201, "POST", path,
		    keys[LAUNCHER], NULL, NULL);
		ck_assert_ptr_nonnull(
		    strstr(json_string_value(json_object_get(j, "ca_pem")),
			"BEGIN CERTIFICATE"));
		json_decref(j);
		j = harness_expect(&daemons[PROXY], 200, "DELETE", path,
		    keys[LAUNCHER], NULL, NULL);
		ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
		    "deleted");
		json_decref(j);
		free(job);
		break;
	case HATCH: {
		char *id = broker_job();
		j = harness_expect(&daemons[HATCH], 201, "POST",
		    "/v1/workspaces", keys[LAUNCHER], NULL,
		    json_pack("{s:s, s:[{s:s, s:s}]}", "job", id, "inputs",
			"src", make_repo(), "dst", "repo"));
		json_decref(j);
		snprintf(path, sizeof(path), "/v1/workspaces/%s/seal", id);
		j = harness_expect(&daemons[HATCH], 200, "POST", path,
		    keys[LAUNCHER], NULL, NULL);
		ck_assert_str_eq(json_string_value(
				     json_object_get(j, "verdict")),
		    "clean");
		json_decref(j);
		snprintf(path, sizeof(path), "/v1/workspaces/%s", id);
		json_decref(harness_expect(&daemons[HATCH], 200, "DELETE", path,
		    keys[LAUNCHER], NULL, NULL));
		free(id);
		break;
	}
	case SERVE: {
		const char *state = NULL;
		j = harness_expect(&daemons[SERVE], 201, "POST", "/v1/jobs",
		    keys[LAUNCHER], NULL,
		    json_pack("{s:s, s:[s, s, s]}", "manifest", "bi-job",
			"command", "/bin/sh", "-c", "echo ok"));
		snprintf(path, sizeof(path), "/v1/jobs/%s",
		    json_string_value(json_object_get(j, "job")));
		json_decref(j);
		for (int i = 0; i < 300; i++) {
			j = harness_expect(&daemons[SERVE], 200, "GET", path,
			    keys[LAUNCHER], NULL, NULL);
			state = json_string_value(json_object_get(j, "state"));
			if (state != NULL && strcmp(state, "done") == 0)
				break;
			json_decref(j);
			j = NULL;
			usleep(100 * 1000);
		}
		ck_assert_msg(j != NULL, "the job did not end within 30 s");
		ck_assert_int_eq(json_integer_value(
				     json_object_get(json_object_get(j,
							 "result"),
					 "exit_code")),
		    0);
		json_decref(j);
		snprintf(path + strlen(path), sizeof(path) - strlen(path),
		    "/output");
		j = harness_expect(&daemons[SERVE], 200, "GET", path,
		    keys[LAUNCHER], NULL, NULL);
		ck_assert_str_eq(json_string_value(
				     json_object_get(json_object_get(j,
							 "stdout"),
					 "text")),
		    "ok\n");
		json_decref(j);
		break;
	}
	case NSVC:
		break;
	}
}

/* Every service answers /healthz 200. */
static void
all_healthy(void)
{
	for (int s = 0; s < NSVC; s++)
		json_decref(harness_expect(&daemons[s], 200, "GET", "/healthz",
		    NULL, NULL, NULL));
}

/* --- fixture -------------------------------------------------------------- */

static void
setup(void)
{
	char cfg[2048], path[400];
	const char *dir;
	struct daemon *b = &daemons[BROKER];

	signal(SIGPIPE, SIG_IGN);
	buf_init(&failures, 1 << 16);
	nfailed = 0;
	memset(seen, 0, sizeof(seen));
	memset(seen_401, 0, sizeof(seen_401));
	normal_n = 0;

	ck_assert_int_eq(daemon_start(b, "broker", NULL), 0);
	keys[ANYONE][0] = '\0';
	harness_broker_key(b, "admin", keys[ADMIN], sizeof(keys[ADMIN]));
	harness_broker_key(b, "launcher", keys[LAUNCHER],
	    sizeof(keys[LAUNCHER]));
	harness_broker_key(b, "verifier", keys[VERIFIER],
	    sizeof(keys[VERIFIER]));

	dir = harness_tmpdir();
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	harness_write_file(path, keys[VERIFIER]);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"follower\": \"badinput\"}",
	    b->base, path, harness_launcher_sha256(b));
	ck_assert_int_eq(daemon_start(&daemons[PROXY], "proxy", cfg), 0);

	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	/* The hatch reads each job's return policy at the broker. */
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"broker\": \"%s\", "
	    "\"broker_key_file\": \"%s/var/broker/keys/launcher.key\", "
	    "\"launcher_key_file\": \"%s/var/broker/keys/launcher.key\"}",
	    roots, b->base, b->dir, b->dir);
	ck_assert_int_eq(daemon_start(&daemons[HATCH], "hatch", cfg), 0);

	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"proxy\": \"%s\", \"hatch\": \"%s\", "
	    "\"launcher_key_file\": \"%s/var/broker/keys/launcher.key\", "
	    "\"uid_base\": 350000}",
	    b->base, daemons[PROXY].base, daemons[HATCH].base, b->dir);
	ck_assert_int_eq(daemon_start(&daemons[SERVE], "launcher", cfg), 0);

	json_decref(harness_expect(b, 200, "PUT", "/v1/manifests/bi-job",
	    keys[ADMIN], NULL,
	    json_pack("{s:s, s:[s], s:{s:i}}", "name", "bi-job", "command",
		"/bin/true", "limits", "wall_seconds", 60)));
}

static void
teardown(void)
{
	/* A clean stop: no sanitizer report, no leak, in any of them. */
	for (int s = NSVC - 1; s >= 0; s--)
		ck_assert_int_eq(daemon_stop(&daemons[s]), 0);
	buf_free(&failures);
}

/* --- the tests ------------------------------------------------------------ */

/* Every endpoint of one service, every case; then it still serves. */
START_TEST(catalogue)
{
	enum svc s = (enum svc)_i;
	struct figures before;

	make_cases();
	metrics_read(s, &before);
	for (size_t i = 0; i < NELEM(endpoints); i++) {
		const struct endpoint *e = &endpoints[i];
		if (e->svc != s)
			continue;
		body_cases(e);
		key_cases(e);
		path_cases(e);
		head_cases(e);
	}
	if (s == BROKER)
		broker_cases();
	garbage_cases(s);
	free_cases();
	metrics_check(s, &before);
	assert_no_failures();
	all_healthy();
	normal_request(s);
}
END_TEST

/*
 * Slow clients, half-closed ones: while connections that sent part of a
 * head (or of a body) byte by byte and then stopped are held open, every
 * service serves everyone else, a client that half-closes after its
 * request still gets its answer; and in the end the servers time the
 * slow ones out.
 */
START_TEST(slow_and_half_closed_clients)
{
	static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slo";
	static const char *const body_path[NSVC] = { "/v1/introspect",
		"/v1/jobs/job_nope", "/v1/workspaces", "/v1/jobs" };
	enum { SLOW = 6 };
	/* SLOW heads byte by byte, a partial body, a run of NUL bytes. */
	int slow[NSVC][SLOW + 2];
	char req[512], what[300];
	struct figures before[NSVC];

	for (int s = 0; s < NSVC; s++) {
		metrics_read((enum svc)s, &before[s]);
		for (int k = 0; k < SLOW; k++)
			slow[s][k] = dial((enum svc)s);
		/* And one that sends its head whole, then a part of the body
		 * it announced, to an endpoint that reads one. */
		slow[s][SLOW] = dial((enum svc)s);
		snprintf(req, sizeof(req),
		    "POST %s HTTP/1.1\r\nHost: x\r\n"
		    "Authorization: Bearer %s\r\nContent-Length: 100\r\n\r\n"
		    "{\"a",
		    body_path[s], keys[s == BROKER ? VERIFIER : LAUNCHER]);
		send_all(slow[s][SLOW], req, strlen(req));
		slow[s][SLOW + 1] = dial((enum svc)s);
		send_all(slow[s][SLOW + 1], "\0\0\0\0\r\n\r\n", 8);
	}
	/* Byte by byte, every connection in turn. */
	for (size_t i = 0; i < sizeof(head) - 1; i++) {
		for (int s = 0; s < NSVC; s++)
			for (int k = 0; k < SLOW; k++)
				send_all(slow[s][k], head + i, 1);
		usleep(5 * 1000);
	}

	/* Meanwhile, everyone else is served, half-closed or not. */
	all_healthy();
	for (size_t i = 0; i < NELEM(endpoints); i++) {
		const struct endpoint *e = &endpoints[i];
		/*
		 * Left out: an answer that waits (here the proxy's open, which
		 * asks the broker; also a long poll, or a mint until its
		 * commit) is lost when the client half-closes meanwhile:
		 * libmicrohttpd reads the EOF when it resumes the request and
		 * closes the connection (upstream: "TODO: handle remote shut
		 * WR").
		 */
		bool waits = e->svc == PROXY && strcmp(e->method, "POST") == 0;
		snprintf(what, sizeof(what),
		    "%s %s, half-closed after the head", e->method, e->path);
		if (!waits)
			try_one(e->svc, what, e->method, e->path, e->role,
			    e->header, NULL, 0,
			    e->body == B_NONE ? NOBODY : LENGTH, true,
			    e->body == B_JSON ? 400 : e->plain, NULL, 0);
		if (e->body == B_NONE)
			continue;
		snprintf(what, sizeof(what),
		    "%s %s, half-closed after a body with an unknown field",
		    e->method, e->path);
		try_one(e->svc, what, e->method, e->path, e->role, e->header,
		    e->unknown, strlen(e->unknown), LENGTH, true, 422, NULL,
		    NAMES_ZZZ);
	}
	/* Two requests in one write, then the half-close: both answered. */
	{
		static const char two[] =
		    "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
		    "GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n";
		for (int s = 0; s < NSVC; s++) {
			int fd = dial((enum svc)s);
			char got[8192];
			send_all(fd, two, sizeof(two) - 1);
			shutdown(fd, SHUT_WR);
			if (!closed_within(fd, DEADLINE_MS, got, sizeof(got)))
				bad("%s: two pipelined requests, half-closed: "
				    "not closed",
				    svc_names[s]);
			close(fd);
			if (strstr(got, "HTTP/1.1 200 ") == NULL ||
			    strstr(got, "HTTP/1.1 404 ") == NULL)
				bad("%s: two pipelined requests, half-closed: "
				    "%.300s",
				    svc_names[s], got);
			else
				seen[s][label_of(404)]++;
		}
	}
	for (int s = 0; s < NSVC; s++)
		normal_request((enum svc)s);

	/* A chunked upload that never ends: cut once it runs past twice
	 * the cap, not read forever. */
	for (int s = 0; s < NSVC; s++) {
		static char chunk[65536 + 16];
		size_t sent = 0, n;
		int fd = dial((enum svc)s);

		snprintf(req, sizeof(req),
		    "POST %s HTTP/1.1\r\nHost: x\r\n"
		    "Authorization: Bearer %s\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n",
		    body_path[s], keys[s == BROKER ? VERIFIER : LAUNCHER]);
		send_all(fd, req, strlen(req));
		n = (size_t)snprintf(chunk, sizeof(chunk), "10000\r\n");
		memset(chunk + n, ' ', 65536);
		memcpy(chunk + n + 65536, "\r\n", 2);
		n += 65536 + 2;
		while (sent < 16 * CAP) {
			ssize_t k = send(fd, chunk, n, MSG_NOSIGNAL);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			sent += (size_t)k;
		}
		if (sent >= 16 * CAP)
			bad("%s: an endless chunked upload was still read "
			    "after "
			    "%zu bytes",
			    svc_names[s], sent);
		close(fd);
	}

	/* The slow ones are timed out (MHD: 30 s without a byte). The
	 * deadline is only there so that a server that never does fails. */
	for (int s = 0; s < NSVC; s++)
		for (int k = 0; k < SLOW + 2; k++) {
			char got[512];
			if (!closed_within(slow[s][k], 90 * 1000, got,
				sizeof(got)))
				bad("%s: a slow client (%d) still open after "
				    "90 s",
				    svc_names[s], k);
			else if (got[0] != '\0' &&
			    (status_of(got) < 400 || status_of(got) >= 500))
				bad("%s: a slow client (%d) was answered "
				    "%.100s",
				    svc_names[s], k, got);
			close(slow[s][k]);
		}
	for (int s = 0; s < NSVC; s++)
		metrics_check((enum svc)s, &before[s]);
	assert_no_failures();
	all_healthy();
}
END_TEST

/* Lines of d's log that are the event named (as JSON writes it). */
static int
log_events(const struct daemon *d, const char *event)
{
	char want[96], line[4096];
	FILE *f = fopen(d->log, "re");
	int n = 0;

	snprintf(want, sizeof(want), "\"event\":\"%s\"", event);
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, want) != NULL;
	fclose(f);
	return n;
}

/*
 * A head the HTTP library refuses by itself, sent again and again: a few
 * lines of each service's log, never a line per attempt (issue 16, item
 * 3: no log of cordon's grows at a peer's will).
 */
START_TEST(a_repeated_bad_head_is_not_a_line_each)
{
	enum { TIMES = 1000 };
	static const char req[] =
	    "GET /healthz\r\nX-Injected: 1 HTTP/1.1\r\nHost: x\r\n\r\n";

	for (int s = 0; s < NSVC; s++) {
		int before = log_events(&daemons[s], "http_library");
		for (int i = 0; i < TIMES; i++) {
			char *got =
			    exchange((enum svc)s, req, sizeof(req) - 1, false);
			if (i == 0 && status_of(got) != 400)
				bad("%s: a broken request line: %.100s",
				    svc_names[s], got);
			free(got);
		}
		int lines = log_events(&daemons[s], "http_library") - before;
		if (lines < 1 || lines > 40)
			bad("%s: %d http_library lines for %d bad heads",
			    svc_names[s], lines, TIMES);
	}
	assert_no_failures();
	all_healthy();
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("badinput");
	TCase *tc = tcase_create("badinput");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, catalogue, 0, NSVC);
	tcase_add_test(tc, slow_and_half_closed_clients);
	tcase_add_test(tc, a_repeated_bad_head_is_not_a_line_each);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
