/*
 * The broker while a job runs: its lease renewed (POST
 * /v1/jobs/{job}/heartbeat every third of it; a 409 is a job that no
 * longer runs), and its revocation learnt from the broker's revocation
 * feed (GET /v1/revocations, long-polled, as a watcher that acknowledges
 * nothing): when the feed names the job, its state (GET /v1/jobs/{job})
 * says why (an operator's revoke, the broker's deadline, a canary used).
 * The state is also asked once the feed's head is known (a revoke before
 * it), after a failed poll (one missed meanwhile), and every WATCH_MS
 * when the broker refuses the feed to the launcher's key (an older
 * broker). Every call is made on the launcher's own loop by libevent's
 * HTTP client, one connection per purpose, one call in flight on each,
 * each with a deadline: nothing here waits for the broker, so a slow
 * broker never freezes the job's traffic or output.
 */
#include "watch.h"

#include "feed_page.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANSWER_MAX (64 * 1024)
#define FEED_WAIT_S 25
#define FEED_RETRY_MS 1000

struct watch {
	struct event_base *base;
	char host[256];
	char key[128];
	char job[64];
	char beat_path[128], job_path[128];
	struct evhttp_connection *beat_conn, *watch_conn, *feed_conn;
	struct event *beat_timer, *watch_timer, *feed_timer;
	bool beat_busy, watch_busy, feed_busy;
	bool polling; /* the feed is refused: the state every WATCH_MS */
	bool feed_started; /* its head is known: after is the next poll's */
	long long after;
	bool seen; /* the feed named the job: stopped, whatever GET says */
	bool stopped; /* the stop was told: nothing more is asked */
	watch_stop_fn stop;
	void *arg;
};

static void
tell_stop(struct watch *w, const char *reason)
{
	if (w->stopped)
		return;
	w->stopped = true;
	w->stop(w->arg, reason);
}

/* A request on conn for path, answered to done: 0 or -ENOMEM. */
static int
ask(struct watch *w, struct evhttp_connection *conn, enum evhttp_cmd_type cmd,
    const char *path, void (*done)(struct evhttp_request *, void *))
{
	struct evhttp_request *req = evhttp_request_new(done, w);
	struct evkeyvalq *h;
	char auth[160];

	if (req == NULL)
		return -ENOMEM;
	h = evhttp_request_get_output_headers(req);
	snprintf(auth, sizeof(auth), "Bearer %s", w->key);
	if (evhttp_add_header(h, "Host", w->host) < 0 ||
	    evhttp_add_header(h, "Authorization", auth) < 0 ||
	    (cmd == EVHTTP_REQ_POST &&
		evhttp_add_header(h, "Content-Length", "0") < 0)) {
		evhttp_request_free(req);
		return -ENOMEM;
	}
	/* On failure evhttp_make_request frees req itself. */
	if (evhttp_make_request(conn, req, cmd, path) != 0)
		return -ENOMEM;
	/* libevent's HTTP client makes its socket (here, at the first
	 * request and after a reconnect) without O_CLOEXEC. */
	(void)evutil_make_socket_closeonexec(
	    bufferevent_getfd(evhttp_connection_get_bufferevent(conn)));
	return 0;
}

static void
beat_done(struct evhttp_request *req, void *arg)
{
	struct watch *w = arg;

	w->beat_busy = false;
	if (req != NULL && evhttp_request_get_response_code(req) == 409)
		tell_stop(w, "revoked");
}

static void
on_beat(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;

	(void)fd;
	(void)what;
	if (w->beat_busy || w->stopped)
		return;
	if (ask(w, w->beat_conn, EVHTTP_REQ_POST, w->beat_path, beat_done) == 0)
		w->beat_busy = true;
}

const char *
watch_reason(const json_t *job)
{
	const char *why =
	    json_string_value(json_object_get(job, "stop_reason"));

	/* The broker's own sweep may have reached the deadline a moment
	 * before the launcher's timer did: the same stop. */
	if (why != NULL && strcmp(why, "deadline") == 0)
		return "wall_clock";
	if (why != NULL && strcmp(why, "tripwire") == 0)
		return "tripwire";
	return "revoked";
}

static void
watch_done(struct evhttp_request *req, void *arg)
{
	struct watch *w = arg;
	struct timeval next = { 0, WATCH_MS * 1000 };

	w->watch_busy = false;
	if (req != NULL && evhttp_request_get_response_code(req) == 200) {
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		size_t n = evbuffer_get_length(in);
		const char *body = (const char *)evbuffer_pullup(in, -1);
		json_t *job = body != NULL && n <= ANSWER_MAX
		    ? json_loadb(body, n, 0, NULL)
		    : NULL;
		const char *state =
		    json_string_value(json_object_get(job, "state"));
		if (state != NULL && strcmp(state, "running") != 0)
			tell_stop(w, watch_reason(job));
		json_decref(job);
	}
	if (w->seen)
		tell_stop(w, "revoked");
	/* Polling: the next question a while after this answer, never two
	 * at once, and no burst after a slow one. */
	if (!w->stopped && w->polling)
		evtimer_add(w->watch_timer, &next);
}

static void
on_watch(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;
	struct timeval next = { 0, WATCH_MS * 1000 };

	(void)fd;
	(void)what;
	if (w->watch_busy || w->stopped)
		return;
	if (ask(w, w->watch_conn, EVHTTP_REQ_GET, w->job_path, watch_done) == 0)
		w->watch_busy = true;
	else
		evtimer_add(w->watch_timer, &next);
}

/* The job's state, asked now (unless a question is on its way). */
static void
check_now(struct watch *w)
{
	struct timeval now = { 0, 0 };

	evtimer_add(w->watch_timer, &now);
}

static void
feed_again(struct watch *w, int ms)
{
	struct timeval tv = { ms / 1000, (long)(ms % 1000) * 1000 };

	if (!w->stopped)
		evtimer_add(w->feed_timer, &tv);
}

/* An answer of the feed: {"head", "revocations": [{"seq", "job"}]}. */
static void
feed_answer(struct watch *w, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t n = evbuffer_get_length(in);
	const char *body = (const char *)evbuffer_pullup(in, -1);
	json_t *a = body != NULL ? json_loadb(body, n, 0, NULL) : NULL;
	json_t *head = json_object_get(a, "head"), *v;
	size_t i;

	if (!json_is_integer(head)) {
		json_decref(a);
		check_now(w);
		feed_again(w, FEED_RETRY_MS);
		return;
	}
	json_array_foreach(json_object_get(a, "revocations"), i, v)
	{
		const char *job = json_string_value(json_object_get(v, "job"));
		if (job != NULL && strcmp(job, w->job) == 0)
			w->seen = true;
	}
	/* From the head on; a head below after is a broker restored from
	 * an older state, followed from its head. */
	w->after = json_integer_value(head);
	json_decref(a);
	if (!w->feed_started || w->seen)
		check_now(w);
	w->feed_started = true;
	feed_again(w, 0);
}

static void
feed_done(struct evhttp_request *req, void *arg)
{
	struct watch *w = arg;
	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;

	w->feed_busy = false;
	if (w->stopped)
		return;
	if (code == 200)
		feed_answer(w, req);
	else if (code == 401 || code == 403 || code == 404) {
		/* No feed for this key: the state, asked every WATCH_MS. */
		w->polling = true;
		check_now(w);
	} else {
		/* A revoke may have come and gone meanwhile. */
		check_now(w);
		feed_again(w, FEED_RETRY_MS);
	}
}

static void
on_feed(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;
	char path[160];

	(void)fd;
	(void)what;
	if (w->feed_busy || w->stopped || w->polling)
		return;
	/* First past any sequence number: answered at once with the head. */
	if (!w->feed_started)
		snprintf(path, sizeof(path),
		    "/v1/revocations?after=9223372036854775807&wait=0");
	else
		snprintf(path, sizeof(path),
		    "/v1/revocations?after=%lld&wait=%d", w->after,
		    FEED_WAIT_S);
	if (ask(w, w->feed_conn, EVHTTP_REQ_GET, path, feed_done) == 0)
		w->feed_busy = true;
	else
		feed_again(w, FEED_RETRY_MS);
}

static struct evhttp_connection *
connection(struct watch *w, const char *host, int port, int timeout_s,
    size_t max_body)
{
	struct evhttp_connection *c =
	    evhttp_connection_base_new(w->base, NULL, host, (uint16_t)port);

	if (c == NULL)
		return NULL;
	evhttp_connection_set_timeout(c, timeout_s);
	evhttp_connection_set_retries(c, 0);
	evhttp_connection_set_max_body_size(c, (ev_ssize_t)max_body);
	evhttp_connection_set_max_headers_size(c, ANSWER_MAX);
	return c;
}

int
watch_start(struct event_base *base, const char *broker, const char *key,
    const char *job, long long lease_ms, watch_stop_fn stop, void *arg,
    struct watch **ret)
{
	struct evhttp_uri *uri = evhttp_uri_parse(broker);
	const char *host = uri != NULL ? evhttp_uri_get_host(uri) : NULL;
	const char *scheme = uri != NULL ? evhttp_uri_get_scheme(uri) : NULL;
	int port = uri != NULL ? evhttp_uri_get_port(uri) : -1;
	struct timeval beat = { (time_t)(lease_ms / 3000),
		(long)(lease_ms / 3 % 1000) * 1000 };
	struct timeval now = { 0, 0 };
	struct watch *w;

	if (host == NULL || scheme == NULL || strcmp(scheme, "http") != 0 ||
	    strlen(key) >= sizeof(((struct watch *)0)->key) ||
	    strlen(job) >= sizeof(((struct watch *)0)->job)) {
		if (uri != NULL)
			evhttp_uri_free(uri);
		return -EINVAL;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		evhttp_uri_free(uri);
		return -ENOMEM;
	}
	w->base = base;
	w->stop = stop;
	w->arg = arg;
	snprintf(w->key, sizeof(w->key), "%s", key);
	snprintf(w->job, sizeof(w->job), "%s", job);
	if (port < 0)
		port = 80;
	snprintf(w->host, sizeof(w->host), "%s:%d", host, port);
	snprintf(w->beat_path, sizeof(w->beat_path), "/v1/jobs/%s/heartbeat",
	    job);
	snprintf(w->job_path, sizeof(w->job_path), "/v1/jobs/%s", job);
	w->beat_conn = connection(w, host, port, WATCH_CALL_S, ANSWER_MAX);
	w->watch_conn = connection(w, host, port, WATCH_CALL_S, ANSWER_MAX);
	w->feed_conn = connection(w, host, port, FEED_WAIT_S + WATCH_CALL_S,
	    FEED_ANSWER_MAX);
	evhttp_uri_free(uri);
	w->beat_timer = event_new(base, -1, EV_PERSIST, on_beat, w);
	w->watch_timer = evtimer_new(base, on_watch, w);
	w->feed_timer = evtimer_new(base, on_feed, w);
	if (w->beat_conn == NULL || w->watch_conn == NULL ||
	    w->feed_conn == NULL || w->beat_timer == NULL ||
	    w->watch_timer == NULL || w->feed_timer == NULL) {
		watch_free(w);
		return -ENOMEM;
	}
	event_add(w->beat_timer, &beat);
	evtimer_add(w->feed_timer, &now);
	*ret = w;
	return 0;
}

void
watch_free(struct watch *w)
{
	if (w == NULL)
		return;
	if (w->beat_conn != NULL)
		evhttp_connection_free(w->beat_conn);
	if (w->watch_conn != NULL)
		evhttp_connection_free(w->watch_conn);
	if (w->feed_conn != NULL)
		evhttp_connection_free(w->feed_conn);
	if (w->beat_timer != NULL)
		event_free(w->beat_timer);
	if (w->watch_timer != NULL)
		event_free(w->watch_timer);
	if (w->feed_timer != NULL)
		event_free(w->feed_timer);
	explicit_bzero(w->key, sizeof(w->key));
	free(w);
}
