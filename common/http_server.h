/*
 * HTTP/JSON server glue over libmicrohttpd, shared by every service.
 *
 * A service gives a table of routes; the glue matches method and path,
 * checks the bearer key against the route's roles, reads the body with a
 * cap and parses it as a JSON object, and only then calls the handler. It
 * answers by itself: 404 for no route, 405 (with Allow) for a known path
 * with another method, 401/403 for a missing, unknown or under-privileged
 * key, 413 for a body over the cap, 400 for a body that is not a JSON
 * object, and GET /healthz and GET /metrics for every service. Every error
 * is {"error": "snake_case", "message": "..."}.
 *
 * Two ways to run: with threads > 0 the glue polls in its own pool of
 * threads;
 * with threads == 0 the caller's event loop watches http_server_fd() and
 * calls http_server_run() (the proxy runs it inside libevent).
 */
#ifndef CORDON_HTTP_SERVER_H
#define CORDON_HTTP_SERVER_H

#include "buf.h"
#include "keys.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_BODY (1024 * 1024)
#define HTTP_MAX_PARAMS 4
#define HTTP_MAX_HEADERS 4

struct http_server;
struct http_request;

struct http_response {
	unsigned status;
	json_t *json; /* the body, when JSON; owned */
	struct buf text; /* the body otherwise */
	const char *content_type; /* for text; static */
	size_t nheaders;
	struct {
		char *name, *value;
	} headers[HTTP_MAX_HEADERS];
};

typedef void (*http_handler)(void *ctx, struct http_request *req,
    struct http_response *res);

enum http_body {
	BODY_NONE, /* any body is read (capped) and ignored */
	BODY_JSON, /* a JSON object is required */
	BODY_JSON_OPTIONAL, /* a JSON object, or no body at all */
};

struct http_route {
	const char *method;
	const char *pattern; /* "/v1/jobs/ * /revoke": '*' is one segment */
	unsigned roles; /* enum role bits that may call; 0 = anyone */
	enum http_body body;
	http_handler handler;
};

struct http_server_config {
	const char *svc;
	int listen_fd; /* bound and listening; the server owns it */
	unsigned threads; /* 0: the caller's loop drives the server */
	const struct http_route *routes;
	size_t nroutes;
	void *ctx; /* passed to handlers and callbacks */
	size_t max_body; /* 0: HTTP_MAX_BODY */
	const struct keyring *keys;
	/* Adds fields to /healthz; a negative return answers 503. */
	int (*health)(void *ctx, json_t *out);
	/* Appends the service's own figures to /metrics. */
	void (*metrics)(void *ctx, struct buf *out);
	/* Called once the server stops accepting, before it waits for the
	 * requests in flight: wake whatever handlers are waiting on. */
	void (*stopping)(void *ctx);
	/* Told of each refused key (the broker audits them). */
	void (*auth_failed)(void *ctx, const char *method, const char *path,
	    const char *reason);
};

/* Starts serving: 0 or -errno (the listen fd is closed on failure too). */
int http_server_start(const struct http_server_config *cfg,
    struct http_server **ret);

/*
 * Stops accepting, lets requests in flight finish for up to grace_ms
 * (answers sent meanwhile say Connection: close), then closes every
 * connection and frees the server. NULL is fine.
 */
void http_server_stop(struct http_server *srv, int grace_ms);

/* With threads == 0: the descriptor to watch for reading, the longest
 * wait before the next http_server_run (-1: none), and one round of work. */
int http_server_fd(struct http_server *srv);
int http_server_timeout_ms(struct http_server *srv);
void http_server_run(struct http_server *srv);

/* With threads == 0: stop accepting; then run until in_flight is 0. */
void http_server_quiesce(struct http_server *srv);
unsigned http_server_in_flight(struct http_server *srv);

/* The i-th '*' segment of the route's pattern. */
const char *http_request_param(const struct http_request *req, size_t i);
/* A query argument, decoded, or NULL. */
const char *http_request_query(const struct http_request *req,
    const char *name);
/* A request header, or NULL. */
const char *http_request_header(const struct http_request *req,
    const char *name);
/* The parsed body (BODY_JSON routes; NULL when optional and absent),
 * borrowed. */
json_t *http_request_body(const struct http_request *req);
/* The role bits the caller's key holds (0 on public routes). */
unsigned http_request_roles(const struct http_request *req);

/*
 * Deferring an answer, for handlers that wait (long polls, followers'
 * acknowledgements, a group commit) without holding a thread.
 *
 * A handler calls http_request_defer and returns without an answer; the
 * connection is suspended. Some other thread later calls
 * http_request_resume, exactly once, and the route's handler is called
 * again for the same request: http_request_state gives back whatever it
 * kept with http_request_set_state (freed with state_free when the
 * request ends). The defer must come before the request is made visible
 * to whoever resumes it. A service that defers must resume every
 * deferred request from its stopping hook.
 */
void http_request_defer(struct http_request *req);
void http_request_resume(struct http_request *req);
void *http_request_state(const struct http_request *req);
void http_request_set_state(struct http_request *req, void *state,
    void (*state_free)(void *));

/* Sets the answer to a JSON document (stolen). */
void http_reply_json(struct http_response *res, unsigned status, json_t *body);
/* Sets the answer to {"error": code, "message": ...}. */
void http_reply_error(struct http_response *res, unsigned status,
    const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets the answer to 422 {"error": code, "message", "problems": problems}
 * (stolen); message NULL says how many problems there are. */
void http_reply_problems(struct http_response *res, const char *code,
    const char *message, json_t *problems);
/* For an endpoint whose body is optional and has no fields: true when the
 * request's body holds any, with the 422 invalid_request answered. */
bool http_refuse_body_fields(struct http_request *req,
    struct http_response *res);
/* Sets the answer to text of a static content type (copied). */
void http_reply_text(struct http_response *res, unsigned status,
    const char *content_type, const char *text, size_t len);
/* Adds a header to the answer (copied); at most HTTP_MAX_HEADERS. */
int http_reply_header(struct http_response *res, const char *name,
    const char *value);

#endif
