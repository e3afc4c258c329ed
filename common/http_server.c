/*
 * libmicrohttpd glue: route matching, the bearer-key check, capped JSON
 * bodies, JSON errors, /healthz and /metrics, and a stop that lets requests
 * in flight finish. Handlers see only parsed, size-checked input.
 */
#include "http_server.h"

#include "log.h"
#include "metrics.h"
#include "problems.h"
#include "util.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define PARAM_MAX 128

/* The statuses we count one by one; anything else counts as "other". */
static const unsigned counted_codes[] = { 200, 201, 202, 204, 400, 401, 403,
	404, 405, 409, 413, 415, 422, 429, 431, 500, 503 };
#define NCODES (ARRAY_SIZE(counted_codes) + 1)

struct http_server {
	struct MHD_Daemon *mhd;
	struct http_server_config cfg;
	struct http_route builtin[2];
	atomic_uint in_flight;
	atomic_uint suspended;
	atomic_bool stopping;
	atomic_uint_fast64_t answered[NCODES];
	atomic_uint_fast64_t auth_failures;
	time_t started;
};

struct http_request {
	struct http_server *srv;
	struct MHD_Connection *conn;
	const struct http_route *route;
	const char *method;
	char path[256];
	char params[HTTP_MAX_PARAMS][PARAM_MAX + 1];
	size_t nparams;
	unsigned roles;
	struct buf raw;
	json_t *body;
	bool too_large;
	uint64_t dropped; /* body bytes nobody will read */
	bool answered;
	bool parsed; /* body checked: a resumed request skips it */
	bool deferred; /* the handler deferred during this call */
	void *state; /* the handler's, across a deferral */
	void (*state_free)(void *);
	struct timespec t0;
};

/* --- answers ----------------------------------------------------------- */

void
http_reply_json(struct http_response *res, unsigned status, json_t *body)
{
	json_decref(res->json);
	res->json = body;
	res->status = status;
}

void
http_reply_problems(struct http_response *res, const char *code,
    const char *message, json_t *problems)
{
	char count[64];

	if (message == NULL) {
		snprintf(count, sizeof(count), "%zu problem%s",
		    json_array_size(problems),
		    json_array_size(problems) == 1 ? "" : "s");
		message = count;
	}
	http_reply_json(res, 422,
	    json_pack("{s:s, s:s, s:o}", "error", code, "message", message,
		"problems", problems));
}

bool
http_refuse_body_fields(struct http_request *req, struct http_response *res)
{
	json_t *problems = json_array();

	problems_unknown_keys(http_request_body(req), "", NULL, 0, problems);
	if (json_array_size(problems) == 0) {
		json_decref(problems);
		return false;
	}
	http_reply_problems(res, "invalid_request", "the body has no fields",
	    problems);
	return true;
}

void
http_reply_error(struct http_response *res, unsigned status, const char *code,
    const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *body;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	body = json_pack("{s:s, s:s}", "error", code, "message", msg);
	if (body == NULL) {
		/* Not UTF-8 (a method of raw bytes, or a character cut by
		 * the cap): the answer must still be an error, never none. */
		for (char *c = msg; *c != '\0'; c++)
			if ((unsigned char)*c >= 0x80)
				*c = '?';
		body = json_pack("{s:s, s:s}", "error", code, "message", msg);
	}
	http_reply_json(res, status, body);
}

void
http_reply_text(struct http_response *res, unsigned status,
    const char *content_type, const char *text, size_t len)
{
	json_decref(res->json);
	res->json = NULL;
	/* The text is the handler's, already bounded: room for all of it. */
	buf_free(&res->text);
	buf_init(&res->text, len);
	if (buf_append(&res->text, text, len) < 0) {
		http_reply_error(res, 500, "internal",
		    "the answer does not fit in memory");
		return;
	}
	res->content_type = content_type;
	res->status = status;
}

int
http_reply_header(struct http_response *res, const char *name,
    const char *value)
{
	char *n, *v;

	if (res->nheaders >= HTTP_MAX_HEADERS)
		return -E2BIG;
	n = strdup(name);
	v = strdup(value);
	if (n == NULL || v == NULL) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	res->headers[res->nheaders].name = n;
	res->headers[res->nheaders++].value = v;
	return 0;
}

static void
response_free(struct http_response *res)
{
	json_decref(res->json);
	buf_free(&res->text);
	for (size_t i = 0; i < res->nheaders; i++) {
		free(res->headers[i].name);
		free(res->headers[i].value);
	}
}

static void
count_status(struct http_server *srv, unsigned status)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(counted_codes); i++)
		if (counted_codes[i] == status)
			break;
	atomic_fetch_add(&srv->answered[i], 1);
}

/* Sends res on req's connection; consumes res. */
static enum MHD_Result
send_response(struct http_request *req, struct http_response *res)
{
	struct http_server *srv = req->srv;
	struct MHD_Response *r;
	const char *type = "application/json";
	enum MHD_Result ok;
	char *body;
	size_t len;

	if (res->json == NULL && res->content_type == NULL)
		http_reply_error(res, 500, "internal",
		    "the handler gave no answer");
	if (res->json != NULL) {
		body =
		    json_dumps(res->json, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (body == NULL) {
			response_free(res);
			return MHD_NO;
		}
		len = strlen(body);
		/* A newline makes curl output readable; JSON ignores it. */
		char *nl = realloc(body, len + 2);
		if (nl == NULL) {
			free(body);
			response_free(res);
			return MHD_NO;
		}
		body = nl;
		body[len++] = '\n';
		body[len] = '\0';
	} else {
		type = res->content_type;
		body = buf_steal(&res->text, &len);
		if (body == NULL) {
			response_free(res);
			return MHD_NO;
		}
	}
	r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	if (r == NULL) {
		free(body);
		response_free(res);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	for (size_t i = 0; i < res->nheaders; i++)
		MHD_add_response_header(r, res->headers[i].name,
		    res->headers[i].value);
	if (atomic_load(&srv->stopping))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ok = MHD_queue_response(req->conn, res->status, r);
	MHD_destroy_response(r);
	count_status(srv, res->status);
	req->answered = true;
	log_event(res->status >= 500 ? LEVEL_WARN : LEVEL_DEBUG, "http",
	    "{s:s, s:s, s:i, s:f}", "method", req->method, "path", req->path,
	    "status", (int)res->status, "ms", elapsed_ms(&req->t0));
	response_free(res);
	return ok;
}

static enum MHD_Result
send_error(struct http_request *req, unsigned status, const char *code,
    const char *msg)
{
	struct http_response res = { .text = BUF_INIT(0) };

	http_reply_error(&res, status, code, "%s", msg);
	if (status == 401)
		http_reply_header(&res, "WWW-Authenticate", "Bearer");
	return send_response(req, &res);
}

/* --- routing ----------------------------------------------------------- */

static bool
param_ok(const char *s, size_t n)
{
	if (n == 0 || n > PARAM_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '-' || c == '_' ||
			c == '.'))
			return false;
	}
	return true;
}

/* Matches path against pattern, filling req's params: true on a match. */
static bool
route_match(const char *pattern, const char *path, struct http_request *req)
{
	const char *p = pattern, *s = path;
	size_t nparams = 0;

	for (;;) {
		if (*p == '*') {
			size_t n = strcspn(s, "/");
			if (!param_ok(s, n) || nparams >= HTTP_MAX_PARAMS)
				return false;
			if (req != NULL) {
				memcpy(req->params[nparams], s, n);
				req->params[nparams][n] = '\0';
			}
			nparams++;
			p++;
			s += n;
			continue;
		}
		if (*p != *s)
			return false;
		if (*p == '\0')
			break;
		p++;
		s++;
	}
	if (req != NULL)
		req->nparams = nparams;
	return true;
}

static const struct http_route *
route_find(struct http_server *srv, struct http_request *req, char *allow,
    size_t allowlen, bool *ret_path_known)
{
	const struct http_route *tables[] = { srv->builtin, srv->cfg.routes };
	const size_t sizes[] = { ARRAY_SIZE(srv->builtin), srv->cfg.nroutes };

	*ret_path_known = false;
	allow[0] = '\0';
	for (size_t t = 0; t < ARRAY_SIZE(tables); t++) {
		for (size_t i = 0; i < sizes[t]; i++) {
			const struct http_route *r = &tables[t][i];
			if (!route_match(r->pattern, req->path, NULL))
				continue;
			*ret_path_known = true;
			if (strcmp(r->method, req->method) == 0) {
				route_match(r->pattern, req->path, req);
				return r;
			}
			size_t used = strlen(allow);
			snprintf(allow + used, allowlen - used, "%s%s",
			    used > 0 ? ", " : "", r->method);
		}
	}
	return NULL;
}

static void
auth_refused(struct http_request *req, const char *reason)
{
	struct http_server *srv = req->srv;

	atomic_fetch_add(&srv->auth_failures, 1);
	log_warn("auth_failed", "{s:s, s:s, s:s}", "method", req->method,
	    "path", req->path, "reason", reason);
	if (srv->cfg.auth_failed != NULL)
		srv->cfg.auth_failed(srv->cfg.ctx, req->method, req->path,
		    reason);
}

/* 0 when the caller may use the route; otherwise the status to answer. */
static unsigned
check_key(struct http_request *req)
{
	const struct keyring *keys = req->srv->cfg.keys;
	const char *h, *key;

	if (req->route->roles == 0)
		return 0;
	h = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	if (h == NULL) {
		auth_refused(req, "no_key");
		return 401;
	}
	if (strncasecmp(h, "Bearer ", 7) != 0) {
		auth_refused(req, "not_bearer");
		return 401;
	}
	key = h + 7;
	while (*key == ' ')
		key++;
	req->roles = keys != NULL ? keyring_roles(keys, key, strlen(key)) : 0;
	if (req->roles == 0) {
		auth_refused(req, "unknown_key");
		return 401;
	}
	if ((req->roles & req->route->roles) == 0) {
		auth_refused(req, "wrong_role");
		return 403;
	}
	return 0;
}

/* First call for a request: route, key, declared size. */
static enum MHD_Result
begin_request(struct http_request *req, const char *url)
{
	char allow[64];
	bool known;
	const char *cl;
	unsigned st;

	if (strlen(url) >= sizeof(req->path))
		return send_error(req, 404, "not_found", "no such path");
	snprintf(req->path, sizeof(req->path), "%s", url);
	req->route = route_find(req->srv, req, allow, sizeof(allow), &known);
	if (req->route == NULL && known) {
		struct http_response res = { .text = BUF_INIT(0) };
		http_reply_error(&res, 405, "method_not_allowed",
		    "%s is not allowed here; allowed: %s", req->method, allow);
		http_reply_header(&res, "Allow", allow);
		return send_response(req, &res);
	}
	if (req->route == NULL)
		return send_error(req, 404, "not_found", "no such path");
	st = check_key(req);
	if (st == 401)
		return send_error(req, 401, "unauthorized",
		    "a valid bearer key is required");
	if (st == 403)
		return send_error(req, 403, "forbidden",
		    "this key's role may not call this endpoint");
	cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl != NULL) {
		char *end;
		unsigned long long n;

		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno == 0 && *end == '\0' && n > req->raw.max)
			return send_error(req, 413, "body_too_large",
			    "the request body is over the limit");
	}
	return MHD_YES;
}

static enum MHD_Result
finish_request(struct http_request *req)
{
	struct http_server *srv = req->srv;
	struct http_response res = { .text = BUF_INIT(0) };
	char msg[320];

	if (req->too_large)
		return send_error(req, 413, "body_too_large",
		    "the request body is over the limit");
	if (!req->parsed && req->route->body != BODY_NONE &&
	    !(req->route->body == BODY_JSON_OPTIONAL && req->raw.len == 0)) {
		json_error_t err;

		if (req->raw.len == 0)
			return send_error(req, 400, "malformed",
			    "a JSON object body is required");
		req->body = json_loadb(req->raw.data, req->raw.len,
		    JSON_REJECT_DUPLICATES, &err);
		if (req->body == NULL) {
			snprintf(msg, sizeof(msg),
			    "the body is not valid JSON: line %d column %d: %s",
			    err.line, err.column, err.text);
			return send_error(req, 400, "malformed", msg);
		}
		if (!json_is_object(req->body))
			return send_error(req, 400, "malformed",
			    "the body must be a JSON object");
	}
	req->parsed = true;
	req->deferred = false;
	req->route->handler(srv->cfg.ctx, req, &res);
	if (req->deferred) {
		/* Suspended: the handler runs again once resumed. */
		response_free(&res);
		return MHD_YES;
	}
	return send_response(req, &res);
}

void
http_request_defer(struct http_request *req)
{
	req->deferred = true;
	atomic_fetch_add(&req->srv->suspended, 1);
	MHD_suspend_connection(req->conn);
}

void
http_request_resume(struct http_request *req)
{
	atomic_fetch_sub(&req->srv->suspended, 1);
	MHD_resume_connection(req->conn);
}

void *
http_request_state(const struct http_request *req)
{
	return req->state;
}

void
http_request_set_state(struct http_request *req, void *state,
    void (*state_free)(void *))
{
	if (req->state_free != NULL && req->state != state)
		req->state_free(req->state);
	req->state = state;
	req->state_free = state_free;
}

static enum MHD_Result
on_access(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_server *srv = cls;
	struct http_request *req = *con_cls;

	(void)version;
	if (req == NULL) {
		req = calloc(1, sizeof(*req));
		if (req == NULL)
			return MHD_NO;
		req->srv = srv;
		req->conn = conn;
		req->method = method;
		clock_gettime(CLOCK_MONOTONIC, &req->t0);
		buf_init(&req->raw, srv->cfg.max_body);
		*con_cls = req;
		atomic_fetch_add(&srv->in_flight, 1);
		return begin_request(req, url);
	}
	if (*upload_data_size > 0) {
		if (!req->answered && !req->too_large &&
		    buf_append(&req->raw, upload_data, *upload_data_size) < 0) {
			req->too_large = true;
			buf_free(&req->raw);
		}
		/* A body answered early (404, 413, ...) or over the cap is
		 * dropped as it comes; one that runs on past twice the cap
		 * (a chunked upload need not end) closes the connection. */
		if (req->answered || req->too_large)
			req->dropped += *upload_data_size;
		*upload_data_size = 0;
		return req->dropped > 2 * (uint64_t)srv->cfg.max_body ? MHD_NO
								      : MHD_YES;
	}
	if (req->answered)
		return MHD_YES;
	return finish_request(req);
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct http_request *req = *con_cls;

	(void)conn;
	(void)toe;
	if (req == NULL)
		return;
	buf_free(&req->raw);
	json_decref(req->body);
	if (req->state_free != NULL)
		req->state_free(req->state);
	free(req);
	*con_cls = NULL;
	atomic_fetch_sub(&srv->in_flight, 1);
}

/* --- built-in routes --------------------------------------------------- */

static void
handle_healthz(void *ctx, struct http_request *req, struct http_response *res)
{
	struct http_server *srv = req->srv;
	json_t *out = json_pack("{s:s, s:s, s:s, s:I}", "status", "ok", "svc",
	    srv->cfg.svc, "version", CORDON_VERSION, "uptime_seconds",
	    (json_int_t)(time(NULL) - srv->started));
	unsigned status = 200;

	if (out == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	if (srv->cfg.health != NULL && srv->cfg.health(ctx, out) < 0) {
		json_object_set_new(out, "status", json_string("unavailable"));
		status = 503;
	}
	if (atomic_load(&srv->stopping)) {
		json_object_set_new(out, "status", json_string("stopping"));
		status = 503;
	}
	http_reply_json(res, status, out);
}

static void
handle_metrics(void *ctx, struct http_request *req, struct http_response *res)
{
	struct http_server *srv = req->srv;
	struct buf *b = &res->text;
	char labels[96];

	buf_init(b, 1024 * 1024);
	metrics_header(b, "cordon_build_info", "gauge",
	    "Always 1; the labels say which build answers.");
	snprintf(labels, sizeof(labels), "svc=\"%s\",version=\"%s\"",
	    srv->cfg.svc, CORDON_VERSION);
	metrics_sample(b, "cordon_build_info", labels, 1);
	metrics_one(b, "cordon_start_time_seconds", "gauge",
	    "When the service started, in seconds since the epoch.",
	    (uint64_t)srv->started);
	metrics_one(b, "cordon_http_requests_in_flight", "gauge",
	    "Requests being read, handled or answered.",
	    atomic_load(&srv->in_flight));
	metrics_header(b, "cordon_http_responses_total", "counter",
	    "Answers sent, by status code.");
	for (size_t i = 0; i < NCODES; i++) {
		uint64_t n = atomic_load(&srv->answered[i]);
		if (i < ARRAY_SIZE(counted_codes))
			snprintf(labels, sizeof(labels), "code=\"%u\"",
			    counted_codes[i]);
		else
			snprintf(labels, sizeof(labels), "code=\"other\"");
		metrics_sample(b, "cordon_http_responses_total", labels, n);
	}
	metrics_one(b, "cordon_http_auth_failures_total", "counter",
	    "Requests refused for a missing, unknown or under-privileged key.",
	    atomic_load(&srv->auth_failures));
	if (srv->cfg.metrics != NULL)
		srv->cfg.metrics(ctx, b);
	res->status = 200;
	res->content_type = "text/plain; version=0.0.4";
}

/* --- lifecycle --------------------------------------------------------- */

/*
 * Decodes %XX in the path and in query arguments, in place, except %00
 * and %2F: a decoded NUL would cut "/v1/jobs/a%00/x" short, and a decoded
 * slash would make "/v1/jobs/a%2Fheartbeat" another route. Left as they
 * are, they fail every check that follows (a segment is [A-Za-z0-9._-]).
 */
static size_t
unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	char *w = s;
	const char *r = s;

	(void)cls;
	(void)conn;
	while (*r != '\0') {
		int hi, lo;

		if (r[0] == '%' && (hi = hex_digit((unsigned char)r[1])) >= 0 &&
		    (lo = hex_digit((unsigned char)r[2])) >= 0 &&
		    (hi | lo) != 0 && hi * 16 + lo != '/') {
			*w++ = (char)(hi * 16 + lo);
			r += 3;
		} else
			*w++ = *r++;
	}
	*w = '\0';
	return (size_t)(w - s);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	static const char answered[] =
	    "Error processing request (HTTP response code is ";
	struct http_server *srv = cls;
	char msg[512];
	unsigned code;
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	/* The library answers a head it cannot take (a malformed request
	 * line, an oversize head: 400, 414, 431, 505) by itself, and says
	 * so only here: count the answer with the others. */
	if (srv != NULL && strncmp(msg, answered, sizeof(answered) - 1) == 0 &&
	    sscanf(msg + sizeof(answered) - 1, "%u", &code) == 1)
		count_status(srv, code);
	/* A peer can make the library say the same thing at will (a bad
	 * head, an accept that fails): one line per burst. */
	log_burst(LEVEL_WARN, "http_library", "{s:s}", "message", msg);
}

int
http_server_start(const struct http_server_config *cfg,
    struct http_server **ret)
{
	struct http_server *srv;
	unsigned flags =
	    MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;

	srv = calloc(1, sizeof(*srv));
	if (srv == NULL) {
		close(cfg->listen_fd);
		return -ENOMEM;
	}
	srv->cfg = *cfg;
	if (srv->cfg.max_body == 0)
		srv->cfg.max_body = HTTP_MAX_BODY;
	srv->builtin[0] = (struct http_route){ "GET", "/healthz", 0, BODY_NONE,
		handle_healthz };
	srv->builtin[1] = (struct http_route){ "GET", "/metrics", 0, BODY_NONE,
		handle_metrics };
	srv->started = time(NULL);
	if (cfg->threads > 0)
		flags |= MHD_USE_INTERNAL_POLLING_THREAD;
	struct MHD_OptionItem opts[] = {
		/* First, so that MHD's own complaints come out as JSON too. */
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, srv },
		{ MHD_OPTION_LISTEN_SOCKET, cfg->listen_fd, NULL },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, srv },
		{ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, 30, NULL },
		{ MHD_OPTION_CONNECTION_LIMIT, 1000, NULL },
		/* Per connection: request line, headers, MHD's own state. */
		{ MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16384, NULL },
		{ MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL },
		{ cfg->threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE
				   : MHD_OPTION_END,
		    cfg->threads, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	srv->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_access, srv,
	    MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (srv->mhd == NULL) {
		close(cfg->listen_fd);
		free(srv);
		return -EIO;
	}
	*ret = srv;
	return 0;
}

int
http_server_fd(struct http_server *srv)
{
	const union MHD_DaemonInfo *info =
	    MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);

	return info != NULL ? info->epoll_fd : -1;
}

int
http_server_timeout_ms(struct http_server *srv)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (MHD_get_timeout(srv->mhd, &t) != MHD_YES)
		return -1;
	return t > 60000 ? 60000 : (int)t;
}

void
http_server_run(struct http_server *srv)
{
	MHD_run(srv->mhd);
}

void
http_server_quiesce(struct http_server *srv)
{
	int fd;

	if (atomic_exchange(&srv->stopping, true))
		return;
	fd = MHD_quiesce_daemon(srv->mhd);
	if (fd >= 0)
		close(fd);
}

unsigned
http_server_in_flight(struct http_server *srv)
{
	return atomic_load(&srv->in_flight);
}

void
http_server_stop(struct http_server *srv, int grace_ms)
{
	struct timespec t0;

	if (srv == NULL)
		return;
	http_server_quiesce(srv);
	if (srv->cfg.stopping != NULL)
		srv->cfg.stopping(srv->cfg.ctx);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(&srv->in_flight) > 0 && elapsed_ms(&t0) < grace_ms) {
		if (srv->cfg.threads == 0)
			MHD_run(srv->mhd);
		struct timespec nap = { 0, 5 * 1000 * 1000 };
		nanosleep(&nap, NULL);
	}
	if (atomic_load(&srv->in_flight) > 0)
		log_warn("stop_grace_expired", "{s:i}", "in_flight",
		    (int)atomic_load(&srv->in_flight));
	if (atomic_load(&srv->suspended) > 0) {
		/* Stopping MHD with suspended connections is undefined; the
		 * process is exiting, so leave it to the kernel. */
		log_error("stop_with_suspended", "{s:i}", "suspended",
		    (int)atomic_load(&srv->suspended));
		return;
	}
	MHD_stop_daemon(srv->mhd);
	free(srv);
}

/* --- request accessors ------------------------------------------------- */

const char *
http_request_param(const struct http_request *req, size_t i)
{
	return i < req->nparams ? req->params[i] : NULL;
}

const char *
http_request_query(const struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND,
	    name);
}

const char *
http_request_header(const struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

json_t *
http_request_body(const struct http_request *req)
{
	return req->body;
}

unsigned
http_request_roles(const struct http_request *req)
{
	return req->roles;
}
