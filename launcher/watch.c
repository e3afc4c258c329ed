/*
 * The broker while a job runs: its lease renewed (POST
 * /v1/jobs/{job}/heartbeat every third of it; a 409 is a job that no
 * longer runs), and its revocation learnt from the broker's revocation
 * feed (GET /v1/revocations, long-polled, as a watcher that acknowledges
 * nothing): when the feed names the job (not one token of it alone), its
 * state (GET /v1/jobs/{job}) says why (an operator's revoke, the broker's deadline, a canary used).
 * The state is also asked once the feed's head is known (a revoke before
 * it), after a failed poll (one missed meanwhile), and every WATCH_MS
 * when the broker refuses the feed to the launcher's key (an older
 * broker). Every call is made on the launcher's own loop by libevent's
 * HTTP client, one connection per purpose, one call in flight on each,
 * each with a deadline: nothing here waits for the broker, so a slow
 * broker never freezes the job's traffic or output.
 *
 * With a list of brokers (a fleet on one database), each purpose has a
 * connection to each broker and every call goes to the current one; a
 * call that gets no answer or a 503 makes the next broker current, the
 * feed follows it from the sequence number it had (one feed, on the
 * database), and the job's state is asked there at once (a revoke may
 * have come meanwhile).
 */
#include "watch.h"

#include "feed_page.h"
#include "http_client.h"

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

/* One broker of the list, a connection to it for each purpose. */
struct watch_broker {
	char host[256]; /* the Host field, "host:port" */
	struct evhttp_connection *beat_conn, *watch_conn, *feed_conn;
};

struct watch {
	struct event_base *base;
	struct watch_broker brokers[HTTPC_BASES_MAX];
	size_t nbrokers, cur; /* the broker every call goes to */
	size_t beat_at, watch_at, feed_at; /* where each call in flight went */
	char key[128];
	char job[64];
	char beat_path[128], job_path[128];
	struct event *beat_timer, *watch_timer, *feed_timer;
	bool beat_busy, watch_busy, feed_busy;
	size_t feed_turns, watch_turns; /* brokers turned to, no answer yet */
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

/* A call that got no answer, or a 503 (a broker without its database),
 * at broker at: the next one is current, unless another call moved it. */
static bool
failed_at(struct watch *w, size_t at, int code)
{
	if (code != 0 && code != 503)
		return false;
	if (w->nbrokers > 1 && at == w->cur)
		w->cur = (at + 1) % w->nbrokers;
	return true;
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
	if (evhttp_add_header(h, "Host", w->brokers[w->cur].host) < 0 ||
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

	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;

	w->beat_busy = false;
	if (code == 409)
		tell_stop(w, "revoked");
	(void)failed_at(w, w->beat_at, code);
}

static void
on_beat(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;

	(void)fd;
	(void)what;
	if (w->beat_busy || w->stopped)
		return;
	w->beat_at = w->cur;
	if (ask(w, w->brokers[w->cur].beat_conn, EVHTTP_REQ_POST, w->beat_path,
		beat_done) == 0)
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

	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;

	w->watch_busy = false;
	if (!failed_at(w, w->watch_at, code))
		w->watch_turns = 0;
	else if (w->nbrokers > 1 && ++w->watch_turns < w->nbrokers &&
	    !w->seen && !w->stopped) {
		/* Asked again at the next broker now, not WATCH_MS later. */
		next = (struct timeval){ 0, 0 };
		evtimer_add(w->watch_timer, &next);
		return;
	}
	if (code == 200) {
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
	w->watch_at = w->cur;
	if (ask(w, w->brokers[w->cur].watch_conn, EVHTTP_REQ_GET, w->job_path,
		watch_done) == 0)
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

/* An answer of the feed: {"head", "revocations": [{"seq", "job"}, ...]};
 * an entry with a "token" is one token of the job revoked alone (an
 * operator's POST /v1/revoke), which the job outlives. */
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
		struct feed_entry e;
		if (feed_entry_parse(v, &e) == 0 && e.token == NULL &&
		    strcmp(e.job, w->job) == 0)
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
	/* At another broker, at once: it follows from w->after (each
	 * broker once, then the wait of one). */
	if (!failed_at(w, w->feed_at, code))
		w->feed_turns = 0;
	else if (w->nbrokers > 1 && ++w->feed_turns < w->nbrokers) {
		check_now(w);
		feed_again(w, 0);
		return;
	} else
		w->feed_turns = 0;
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
	w->feed_at = w->cur;
	if (ask(w, w->brokers[w->cur].feed_conn, EVHTTP_REQ_GET, path,
		feed_done) == 0)
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

/* brokers[at] for base ("http://host[:port]"): 0 or -EINVAL. */
static int
broker_open(struct watch *w, size_t at, const char *base)
{
	struct watch_broker *b = &w->brokers[at];
	struct evhttp_uri *uri = evhttp_uri_parse(base);
	const char *host = uri != NULL ? evhttp_uri_get_host(uri) : NULL;
	const char *scheme = uri != NULL ? evhttp_uri_get_scheme(uri) : NULL;
	int port = uri != NULL ? evhttp_uri_get_port(uri) : -1;

	if (host == NULL || scheme == NULL || strcmp(scheme, "http") != 0) {
		if (uri != NULL)
			evhttp_uri_free(uri);
		return -EINVAL;
	}
	if (port < 0)
		port = 80;
	snprintf(b->host, sizeof(b->host), "%s:%d", host, port);
	b->beat_conn = connection(w, host, port, WATCH_CALL_S, ANSWER_MAX);
	b->watch_conn = connection(w, host, port, WATCH_CALL_S, ANSWER_MAX);
	b->feed_conn = connection(w, host, port, FEED_WAIT_S + WATCH_CALL_S,
	    FEED_ANSWER_MAX);
	evhttp_uri_free(uri);
	return b->beat_conn == NULL || b->watch_conn == NULL ||
		b->feed_conn == NULL
	    ? -ENOMEM
	    : 0;
}

int
watch_start(struct event_base *base, const char *broker, const char *key,
    const char *job, long long lease_ms, watch_stop_fn stop, void *arg,
    struct watch **ret)
{
	char bases[HTTPC_BASES_MAX][HTTPC_BASE_MAX];
	int n = httpc_bases(broker, bases, HTTPC_BASES_MAX);
	struct timeval beat = { (time_t)(lease_ms / 3000),
		(long)(lease_ms / 3 % 1000) * 1000 };
	struct timeval now = { 0, 0 };
	struct watch *w;
	int r;

	if (n < 0 || strlen(key) >= sizeof(((struct watch *)0)->key) ||
	    strlen(job) >= sizeof(((struct watch *)0)->job))
		return -EINVAL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	w->base = base;
	w->stop = stop;
	w->arg = arg;
	snprintf(w->key, sizeof(w->key), "%s", key);
	snprintf(w->job, sizeof(w->job), "%s", job);
	snprintf(w->beat_path, sizeof(w->beat_path), "/v1/jobs/%s/heartbeat",
	    job);
	snprintf(w->job_path, sizeof(w->job_path), "/v1/jobs/%s", job);
	w->nbrokers = (size_t)n;
	for (size_t i = 0; i < w->nbrokers; i++)
		if ((r = broker_open(w, i, bases[i])) < 0) {
			watch_free(w);
			return r;
		}
	w->beat_timer = event_new(base, -1, EV_PERSIST, on_beat, w);
	w->watch_timer = evtimer_new(base, on_watch, w);
	w->feed_timer = evtimer_new(base, on_feed, w);
	if (w->beat_timer == NULL || w->watch_timer == NULL ||
	    w->feed_timer == NULL) {
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
	for (size_t i = 0; i < w->nbrokers; i++) {
		struct watch_broker *b = &w->brokers[i];

		if (b->beat_conn != NULL)
			evhttp_connection_free(b->beat_conn);
		if (b->watch_conn != NULL)
			evhttp_connection_free(b->watch_conn);
		if (b->feed_conn != NULL)
			evhttp_connection_free(b->feed_conn);
	}
	if (w->beat_timer != NULL)
		event_free(w->beat_timer);
	if (w->watch_timer != NULL)
		event_free(w->watch_timer);
	if (w->feed_timer != NULL)
		event_free(w->feed_timer);
	explicit_bzero(w->key, sizeof(w->key));
	free(w);
}
