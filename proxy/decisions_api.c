/*
 * GET /v1/decisions on the control port, for an admin (the proxy's
 * admin_key_file): the decision log read back from the proxy's own files,
 * rotated ones included, oldest first, a page at a time (decisions.h
 * caps what one call reads and keeps, so that the proxy's loop is never
 * held by a week of log). `cordon logs` and `cordon egress-report` read
 * it; they need no file on the proxy's host. docs/api.md has the route.
 */
#include "proxy.h"

#include "decisions.h"
#include "util.h"

#include <fcntl.h>
#include <string.h>

/* A 400 naming the parameter. */
static void
bad_parameter(struct http_response *res, const char *name, const char *what)
{
	char message[300];

	snprintf(message, sizeof(message), "%s: %s", name, what);
	http_reply_json(res, 400,
	    json_pack("{s:s, s:s, s:s}", "error", "malformed", "parameter",
		name, "message", message));
}

static bool
time_parameter(struct http_request *req, struct http_response *res,
    const char *name, int64_t *ret)
{
	const char *s = http_request_query(req, name);

	*ret = DECISIONS_NO_TIME;
	if (s == NULL)
		return true;
	if (decisions_parse_time(s, ret) < 0) {
		bad_parameter(res, name,
		    "an RFC 3339 time (2026-12-01T09:50:00Z) or Unix "
		    "seconds");
		return false;
	}
	return true;
}

void
decisions_get(void *ctx, struct http_request *req, struct http_response *res)
{
	struct proxy *p = ctx;
	const char *job = http_request_query(req, "job");
	const char *verdict = http_request_query(req, "verdict");
	const char *limit = http_request_query(req, "limit");
	const char *cursor = http_request_query(req, "cursor");
	struct decisions_query q = { .job = job,
		.verdict = verdict,
		.cursor = cursor,
		.limit = 100 };
	struct decisions_page page;
	int dirfd, r;

	if (job != NULL && !name_ok(job, JOB_ID_MAX, "_-")) {
		bad_parameter(res, "job", "a job id, 1 to 63 of [A-Za-z0-9_-]");
		return;
	}
	if (verdict != NULL && strcmp(verdict, "allow") != 0 &&
	    strcmp(verdict, "deny") != 0 && strcmp(verdict, "error") != 0) {
		bad_parameter(res, "verdict", "allow, deny or error");
		return;
	}
	if (http_request_query(req, "manifest") != NULL) {
		bad_parameter(res, "manifest",
		    "the proxy does not know a job's manifest: ask the "
		    "broker for its jobs (cordon egress-report does)");
		return;
	}
	if (limit != NULL) {
		char *end;
		errno = 0;
		long long v = strtoll(limit, &end, 10);
		if (limit[0] < '0' || limit[0] > '9' || *end != '\0' ||
		    errno != 0 || v < 1 || v > DECISIONS_LIMIT_MAX) {
			bad_parameter(res, "limit",
			    "an integer from 1 to 1000");
			return;
		}
		q.limit = (size_t)v;
	}
	if (cursor != NULL && !decisions_cursor_ok(cursor)) {
		bad_parameter(res, "cursor",
		    "not a cursor this proxy gave (a page's next)");
		return;
	}
	if (!time_parameter(req, res, "since", &q.since_ms) ||
	    !time_parameter(req, res, "until", &q.until_ms))
		return;
	if (q.since_ms != DECISIONS_NO_TIME &&
	    q.until_ms != DECISIONS_NO_TIME && q.until_ms < q.since_ms) {
		bad_parameter(res, "until", "before since");
		return;
	}
	dirfd =
	    open(p->cfg.common.logs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		http_reply_error(res, 500, "log_unreadable",
		    "the logs directory cannot be opened: %s", strerror(errno));
		return;
	}
	r = decisions_scan(dirfd, "decisions.log", &q, &page);
	close(dirfd);
	if (r == -ENOENT) {
		http_reply_json(res, 200,
		    json_pack("{s:s, s:[], s:i, s:i}", "order", "oldest_first",
			"decisions", "files", 0, "scanned_bytes", 0));
		return;
	}
	if (r < 0) {
		http_reply_error(res, 500, "log_unreadable",
		    "the decision log cannot be read: %s", strerror(-r));
		return;
	}
	json_t *out = json_pack("{s:s, s:o, s:i, s:I}", "order", "oldest_first",
	    "decisions", page.decisions, "files", (int)page.files,
	    "scanned_bytes", (json_int_t)page.scanned);
	if (page.next[0] != '\0')
		json_object_set_new(out, "next", json_string(page.next));
	http_reply_json(res, 200, out);
}
