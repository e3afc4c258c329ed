/*
 * The broker client of brokerclient.h, over libevent's HTTP client so
 * that no call blocks the loop.
 *
 * The feed is polled with a short wait (1 s), so that an answer comes at
 * least every second while the broker is alive: an answer missing for
 * FEED_FAIL_CLOSED_MS means the feed is unreachable, whatever state the
 * TCP connection claims, and the proxy refuses everything until a poll
 * answers again. That silence is counted on a loop on time: a check the
 * proxy's own busy loop made late counts FEED_CHECK_MS (feed_silence),
 * so that the proxy's load never reads as the broker's silence and fails
 * every job closed (redteam4 hole 1). Each answer's revocations are
 * applied (a job's connections closed, by the revoked hook; a token
 * revoked alone dropped from its job's cache, by the token_revoked
 * hook) before the next poll goes out, and the next poll with after >=
 * seq is what tells the broker the revocation took effect.
 *
 * A call's answer (a released secret's among them) is copied out of
 * libevent's input buffer, whose chains are then wiped in place and
 * drained, and the copy is wiped once the callback returned.
 *
 * A call goes on the connection with the fewest calls in flight (libevent
 * sends one request at a time on each, queueing the rest): introspections
 * and a job's rules over CALL_CONNS, secrets' releases over RELEASE_CONNS
 * of their own (a mint on broker.cordon is no call of this client's). A release may wait at the broker for an
 * issuer (4 s: the broker's issuers.c), so a job whose issuer hangs,
 * asking in a loop, would otherwise hold every connection and every other
 * job's introspections behind it; with its own connections and at most
 * BROKERCLIENT_JOB_RELEASES of a job in flight it holds none, and another
 * job's release waits behind it only once four such jobs hold every
 * release connection. A job's releases past its cap wait their turn here
 * (BROKERCLIENT_JOB_WAITING of them, on no connection: a burst of a job's
 * requests on a cold cache is served in turn), and past that, or
 * BROKERCLIENT_RELEASES in flight in all, are refused at once.
 *
 * With a list of brokers (a fleet on one database), everything goes to
 * the current one; a call that gets a 503 (but an issuer's:
 * issuer_unavailable, issuer_busy, the job's answer), or no connection,
 * or (when httpc_repeatable) no answer is sent again to the next (a
 * secret's release that went out is never sent twice), and a feed poll
 * that fails makes the next one current at once and follows it from the
 * sequence number applied (the fleet's feed
 * is one, on the database: nothing is skipped). The feed's poll waits
 * 1.5 s, not 3, when there is another broker to turn to, so that the
 * turn comes before the 2 s after which everything is refused. When none
 * answers, the proxy fails closed as with one.
 */
#include "brokerclient.h"

#include "feed_page.h"
#include "http_client.h"
#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#define FEED_WAIT_S 1
#define FEED_RETRY_MS 250
/* The feed's silence is checked this often; a check this much past its
 * due time saw the proxy's loop late, not the broker (feed_silence). */
#define FEED_CHECK_MS 100
#define FEED_LATE_MS 250
#define CALL_TIMEOUT_S 5
#define CALL_CONNS 4
#define RELEASE_CONNS 16
#define NCONNS (CALL_CONNS + RELEASE_CONNS)
/* A broker's connections: the calls', the releases' and the feed's. */
#define BROKER_CONNS (NCONNS + 1)
#define RECENT_MAX 1024
/* A reflection report not counted is told again this often, this many
 * times at most. */
#define REFLECTION_RETRY_S 1
#define REFLECTION_TRIES 60

struct brokerclient_call {
	TAILQ_ENTRY(brokerclient_call) link;
	struct brokerclient *b;
	struct evhttp_request *req; /* NULL once answered */
	brokerclient_cb cb;
	void *arg;
	/* What to send again at another broker. */
	enum evhttp_cmd_type cmd;
	char *path, *body;
	size_t at; /* the broker it went to */
	size_t tries; /* brokers asked so far */
	bool repeatable; /* httpc_repeatable: may be sent twice */
	bool went_out; /* it may have reached the broker that failed it */
	bool release; /* on the release connections, counted for job */
	/* Inside call_send's evhttp_make_request, and whether call_done
	 * ran there (a connect that failed at once): then it was not sent. */
	bool sending, failed_at_once;
	size_t conn; /* its connection at broker at, while in flight */
	char job[BROKERCLIENT_JOB_MAX + 1];
};

/* One broker of the list and the connections to it. */
struct broker_link {
	char name[80]; /* "host:port", for the log and /healthz */
	char host[64];
	uint16_t port;
	struct sockaddr_in addr;
	/* [0, CALL_CONNS): calls; the rest: releases (brokerclient_release) */
	struct evhttp_connection *calls[NCONNS];
	unsigned load[NCONNS]; /* calls in flight on each */
	struct evhttp_connection *feed_conn;
};

struct brokerclient {
	struct event_base *base;
	struct brokerclient_hooks hooks;
	char *verifier_key; /* NULL: no calls */
	char follower[128];
	char auth[256];
	struct broker_link brokers[HTTPC_BASES_MAX];
	size_t nbrokers;
	size_t cur; /* the broker followed and asked first */
	size_t feed_at; /* the broker of the poll in flight */
	size_t feed_turns; /* brokers turned to since the last answer */
	unsigned next_call;
	TAILQ_HEAD(, brokerclient_call) pending;
	/* Releases past their job's cap, oldest first: not sent yet. */
	TAILQ_HEAD(, brokerclient_call) waiting;
	uint64_t releases; /* in flight, cancelled ones too */
	uint64_t nwaiting;
	uint64_t releases_refused; /* past the caps */
	struct evhttp_request *feed_req;
	struct event *feed_retry;
	struct event *feed_check;
	int64_t after; /* the last sequence number applied */
	bool started; /* the first answer came (the head is known) */
	bool ok;
	bool failing; /* the last poll failed */
	struct timespec last_answer;
	/* The feed's silence as the checks counted it since the last
	 * answer (feed_silence), and when the last check ran. */
	double silent_ms;
	struct timespec last_check;
	/* The bindings' list: read every bindings_refresh_s, one at a time. */
	struct event *bindings_tick;
	struct brokerclient_call *bindings_call;
	uint64_t bindings_asked; /* bindings_asking's, for the call's answer */
	struct timeval bindings_every;
	char recent[RECENT_MAX][BROKERCLIENT_JOB_MAX + 1]; /* revoked, a ring */
	unsigned nrecent;
	/* Reflection reports being told (brokerclient_reflection). */
	struct reflection_tell {
		struct brokerclient *b;
		bool used;
		char job[BROKERCLIENT_JOB_MAX + 1], secret[65];
		int64_t version;
		const char *event; /* a static string */
		int count, tries;
		int more; /* come while count was in flight: told next */
		struct brokerclient_call *call; /* NULL: to tell again */
	} tells[BROKERCLIENT_REFLECTIONS_KEPT];
	struct event *tells_tick;
	uint64_t reflections_told, reflections_lost;
};

/*
 * The feed's silence now, in ms: what the checks counted since the last
 * answer, and the time since the last check. A check that runs more than
 * FEED_LATE_MS past its due time found the proxy's own loop late (a long
 * callback: the broker's answer may be waiting in the socket, unread),
 * which is not the broker's silence: it counts FEED_CHECK_MS only. A
 * broker truly silent fails the feed closed after FEED_FAIL_CLOSED_MS of
 * a loop on time, later on a loop that runs late.
 */
static double
feed_silence(const struct brokerclient *b)
{
	double since = elapsed_ms(&b->last_check);

	if (since > FEED_CHECK_MS + FEED_LATE_MS)
		since = FEED_CHECK_MS;
	return b->silent_ms + since;
}

bool
brokerclient_feed_ok(const struct brokerclient *b)
{
	return b->ok && feed_silence(b) <= FEED_FAIL_CLOSED_MS;
}

int64_t
brokerclient_feed_seq(const struct brokerclient *b)
{
	return b->after;
}

bool
brokerclient_recently_revoked(const struct brokerclient *b, const char *job)
{
	unsigned n = b->nrecent < RECENT_MAX ? b->nrecent : RECENT_MAX;

	for (unsigned i = 0; i < n; i++)
		if (strcmp(b->recent[i], job) == 0)
			return true;
	return false;
}

size_t
brokerclient_descriptors(const struct brokerclient *b)
{
	return b->nbrokers * BROKER_CONNS;
}

const struct sockaddr *
brokerclient_addr(const struct brokerclient *b, socklen_t *ret_len)
{
	*ret_len = sizeof(b->brokers[b->cur].addr);
	return (const struct sockaddr *)&b->brokers[b->cur].addr;
}

const char *
brokerclient_current(const struct brokerclient *b)
{
	return b->brokers[b->cur].name;
}

/* The broker after at becomes current, unless another failure moved it
 * already. */
static void
turn_from(struct brokerclient *b, size_t at, const char *why)
{
	if (b->nbrokers < 2 || at != b->cur)
		return;
	b->cur = (at + 1) % b->nbrokers;
	/* Once none answers, the feed's failure is logged, not each turn. */
	if (!b->failing)
		log_warn("broker_failover", "{s:s, s:s, s:s}", "from",
		    b->brokers[at].name, "to", b->brokers[b->cur].name, "error",
		    why);
}

/* "http://127.0.0.1:7701" (an IPv4 literal and a port: the broker is
 * local, and a name here would be one more thing to resolve and trust). */
static int
parse_base(struct broker_link *b, const char *base)
{
	const char *hp, *colon;
	char *end;
	unsigned long port;

	if (strncmp(base, "http://", 7) != 0)
		return -EINVAL;
	hp = base + 7;
	colon = strrchr(hp, ':');
	if (colon == NULL || (size_t)(colon - hp) >= sizeof(b->host))
		return -EINVAL;
	memcpy(b->host, hp, (size_t)(colon - hp));
	b->host[colon - hp] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || port == 0 || port > 65535 ||
	    (*end != '\0' && strcmp(end, "/") != 0))
		return -EINVAL;
	b->port = (uint16_t)port;
	b->addr.sin_family = AF_INET;
	b->addr.sin_port = htons(b->port);
	if (inet_pton(AF_INET, b->host, &b->addr.sin_addr) != 1)
		return -EINVAL;
	snprintf(b->name, sizeof(b->name), "%.*s", (int)(end - hp), hp);
	return 0;
}

static int call_send(struct brokerclient_call *c);

void
brokerclient_evbuffer_wipe(struct evbuffer *b)
{
	struct evbuffer_ptr at;

	if (evbuffer_ptr_set(b, &at, 0, EVBUFFER_PTR_SET) < 0)
		return;
	for (;;) {
		struct evbuffer_iovec v[8];
		int n = evbuffer_peek(b, -1, &at, v, 8);
		size_t done = 0;

		if (n <= 0)
			return;
		for (int i = 0; i < n && i < 8; i++) {
			OPENSSL_cleanse(v[i].iov_base, v[i].iov_len);
			done += v[i].iov_len;
		}
		/* Every vector filled (a peek of "all" stops there): maybe
		 * more chains, on from the next one. */
		if (n < 8 ||
		    evbuffer_ptr_set(b, &at, done, EVBUFFER_PTR_ADD) < 0)
			return;
	}
}

static void
call_free(struct brokerclient_call *c)
{
	free(c->path);
	free(c->body);
	free(c);
}

/* A release of job's that waited its turn goes out (one left the
 * broker's connections); a cancelled one is dropped. */
static void
release_next(struct brokerclient *b, const char *job)
{
	struct brokerclient_call *w, *next;

	for (w = TAILQ_FIRST(&b->waiting); w != NULL; w = next) {
		next = TAILQ_NEXT(w, link);
		if (strcmp(w->job, job) != 0)
			continue;
		TAILQ_REMOVE(&b->waiting, w, link);
		b->nwaiting--;
		if (w->cb != NULL && call_send(w) == 0) {
			b->releases++;
			return;
		}
		/* Cancelled, or it could not be sent: then the job is told. */
		if (w->cb != NULL)
			w->cb(w->arg, 0, NULL);
		call_free(w);
	}
}

/* The broker's Retry-After (whole seconds, 1 to 3600) as the JSON
 * body's "retry_after" when it has none: what the proxy tells a job's
 * client of the broker's 503 (conn.c). */
static void
retry_after_into(struct evhttp_request *req, json_t *body)
{
	const char *v =
	    evhttp_find_header(evhttp_request_get_input_headers(req),
		"Retry-After");
	char *end;
	long n;

	if (v == NULL || !json_is_object(body) ||
	    json_object_get(body, "retry_after") != NULL)
		return;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno == 0 && end != v && *end == '\0' && n >= 1 && n <= 3600)
		json_object_set_new(body, "retry_after", json_integer(n));
}

/* Whether a 503 is a live broker's answer about an issuer (its error
 * issuer_unavailable or issuer_busy): the job's to hear, no reason to
 * turn to another broker (which would ask the same issuer). The body is
 * read, not drained. */
static bool
issuers_503(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	char data[2048];
	ev_ssize_t n = evbuffer_copyout(in, data, sizeof(data));
	json_t *j = n > 0 ? json_loadb(data, (size_t)n, 0, NULL) : NULL;
	const char *e = json_string_value(json_object_get(j, "error"));
	bool yes = e != NULL &&
	    (strcmp(e, "issuer_unavailable") == 0 ||
		strcmp(e, "issuer_busy") == 0);

	json_decref(j);
	OPENSSL_cleanse(data, sizeof(data));
	return yes;
}

static void
call_done(struct evhttp_request *req, void *arg)
{
	struct brokerclient_call *c = arg;
	struct brokerclient *b = c->b;
	int status = req != NULL ? evhttp_request_get_response_code(req) : 0;
	json_t *body = NULL;

	c->req = NULL;
	TAILQ_REMOVE(&b->pending, c, link);
	b->brokers[c->at].load[c->conn]--;
	/* Told inside call_send: it says so to its caller, which answers or
	 * frees c. */
	if (c->sending) {
		c->failed_at_once = true;
		return;
	}
	/* A broker without its database, stopping, or no answer: the next
	 * one (an issuer's 503 is the job's). A mint or a release that went
	 * out and got no answer may have been carried out: not twice. */
	if (((status == 503 && !issuers_503(req)) ||
		(status == 0 && (c->repeatable || !c->went_out))) &&
	    c->tries < b->nbrokers) {
		turn_from(b, c->at, status == 0 ? "no answer" : "status 503");
		if (c->cb == NULL)
			status = 0; /* cancelled: nobody waits for it */
		else if (call_send(c) == 0)
			return;
	}
	char *data = NULL;
	size_t n = 0;
	if (status > 0) {
		/* Copied out, not pulled up: a pullup would free the chains
		 * it joins unwiped. */
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		n = evbuffer_get_length(in);
		data = malloc(n + 1);
		if (data != NULL &&
		    evbuffer_copyout(in, data, n) == (ev_ssize_t)n)
			body = json_loadb(data, n, 0, NULL);
		retry_after_into(req, body);
		brokerclient_evbuffer_wipe(in);
		evbuffer_drain(in, n);
	}
	if (c->release) {
		b->releases--;
		release_next(b, c->job);
	}
	if (c->cb != NULL)
		c->cb(c->arg, status, body);
	json_decref(body);
	if (data != NULL) {
		OPENSSL_cleanse(data, n);
		free(data);
	}
	call_free(c);
}

/* libevent tells an error here only once the connection was made and
 * the request written (a refused or timed-out connect calls call_done
 * alone): the request may have been carried out. */
static void
call_error(enum evhttp_request_error e, void *arg)
{
	struct brokerclient_call *c = arg;

	(void)e;
	c->went_out = true;
}

/* The connection of l's calls (or releases) with the fewest in flight,
 * the first of them from a turning start: one slow answer queues no call
 * while another connection is free. */
static size_t
pick_conn(struct brokerclient *b, const struct broker_link *l, bool release)
{
	size_t from = release ? CALL_CONNS : 0;
	size_t n = release ? RELEASE_CONNS : CALL_CONNS;
	size_t start = b->next_call++ % n, best = from + start;

	for (size_t k = 1; k < n && l->load[best] > 0; k++) {
		size_t i = from + (start + k) % n;
		if (l->load[i] < l->load[best])
			best = i;
	}
	return best;
}

/* Sends c to the current broker: 0, or -1 (nothing was sent). */
static int
call_send(struct brokerclient_call *c)
{
	struct brokerclient *b = c->b;
	struct broker_link *l = &b->brokers[b->cur];
	struct evkeyvalq *h;
	struct evhttp_connection *conn;

	c->req = evhttp_request_new(call_done, c);
	if (c->req == NULL)
		return -1;
	c->went_out = false;
	evhttp_request_set_error_cb(c->req, call_error);
	h = evhttp_request_get_output_headers(c->req);
	evhttp_add_header(h, "Host", l->host);
	evhttp_add_header(h, "Authorization", b->auth);
	if (c->body != NULL) {
		if (evbuffer_add(evhttp_request_get_output_buffer(c->req),
			c->body, strlen(c->body)) < 0) {
			evhttp_request_free(c->req);
			c->req = NULL;
			return -1;
		}
		evhttp_add_header(h, "Content-Type", "application/json");
	}
	c->conn = pick_conn(b, l, c->release);
	conn = l->calls[c->conn];
	c->at = b->cur;
	c->tries++;
	/* In flight before it is made: a connect that fails at once runs
	 * call_done inside evhttp_make_request (libevent's cleanup). */
	l->load[c->conn]++;
	TAILQ_INSERT_TAIL(&b->pending, c, link);
	c->sending = true;
	c->failed_at_once = false;
	int r = evhttp_make_request(conn, c->req, c->cmd, c->path);
	c->sending = false;
	if (c->failed_at_once)
		return -1; /* call_done took it out of flight */
	if (r < 0) {
		/* evhttp_make_request freed the request. */
		c->req = NULL;
		TAILQ_REMOVE(&b->pending, c, link);
		l->load[c->conn]--;
		return -1;
	}
	return 0;
}

/* A new call of method path with json's text, not sent yet: NULL when
 * out of memory. */
static struct brokerclient_call *
call_new(struct brokerclient *b, const char *method, const char *path,
    const json_t *json, brokerclient_cb cb, void *arg)
{
	struct brokerclient_call *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->b = b;
	c->cb = cb;
	c->arg = arg;
	c->cmd = strcmp(method, "POST") == 0 ? EVHTTP_REQ_POST : EVHTTP_REQ_GET;
	c->repeatable = httpc_repeatable(method, path);
	c->path = strdup(path);
	c->body = json != NULL ? json_dumps(json, JSON_COMPACT) : NULL;
	if (c->path == NULL || (json != NULL && c->body == NULL)) {
		call_free(c);
		return NULL;
	}
	return c;
}

struct brokerclient_call *
brokerclient_call(struct brokerclient *b, const char *method, const char *path,
    const json_t *json, brokerclient_cb cb, void *arg)
{
	struct brokerclient_call *c;

	if (b->verifier_key == NULL)
		return NULL;
	c = call_new(b, method, path, json, cb, arg);
	if (c != NULL && call_send(c) < 0) {
		call_free(c);
		return NULL;
	}
	return c;
}

int
brokerclient_release(struct brokerclient *b, const char *job, const char *path,
    brokerclient_cb cb, void *arg, struct brokerclient_call **ret_call)
{
	struct brokerclient_call *c;
	unsigned mine = 0, queued = 0;

	if (b->verifier_key == NULL || strlen(job) > BROKERCLIENT_JOB_MAX)
		return -EINVAL;
	TAILQ_FOREACH(c, &b->pending, link)
	{
		mine += c->release && strcmp(c->job, job) == 0;
	}
	TAILQ_FOREACH(c, &b->waiting, link)
	{
		queued += strcmp(c->job, job) == 0;
	}
	bool wait = mine >= BROKERCLIENT_JOB_RELEASES;
	if ((wait && queued >= BROKERCLIENT_JOB_WAITING) ||
	    (!wait && b->releases >= BROKERCLIENT_RELEASES)) {
		b->releases_refused++;
		return -EBUSY;
	}
	c = call_new(b, "POST", path, NULL, cb, arg);
	if (c == NULL)
		return -ENOMEM;
	c->release = true;
	snprintf(c->job, sizeof(c->job), "%s", job);
	if (wait) {
		TAILQ_INSERT_TAIL(&b->waiting, c, link);
		b->nwaiting++;
		*ret_call = c;
		return 0;
	}
	if (call_send(c) < 0) {
		call_free(c);
		return -ENOMEM;
	}
	b->releases++;
	*ret_call = c;
	return 0;
}

void
brokerclient_release_counts(const struct brokerclient *b,
    uint64_t *ret_in_flight, uint64_t *ret_waiting, uint64_t *ret_refused)
{
	*ret_in_flight = b->releases;
	*ret_waiting = b->nwaiting;
	*ret_refused = b->releases_refused;
}

void
brokerclient_cancel(struct brokerclient_call *c)
{
	if (c == NULL)
		return;
	/* Answered already is impossible here: call_done frees c. */
	c->cb = NULL;
}

/* --- the revocation feed -------------------------------------------------- */

static void feed_poll(struct brokerclient *b);

static void
feed_revoke(struct brokerclient *b, const char *job)
{
	snprintf(b->recent[b->nrecent++ % RECENT_MAX], BROKERCLIENT_JOB_MAX + 1,
	    "%s", job);
	if (b->hooks.revoked != NULL)
		b->hooks.revoked(b->hooks.ctx, job, b->after);
}

static void
feed_failed(struct brokerclient *b, const char *why)
{
	static const struct timeval retry = { 0, FEED_RETRY_MS * 1000 };
	static const struct timeval now = { 0, 0 };

	/* Another broker to turn to: at once, following it from after. */
	if (b->nbrokers > 1 && b->feed_turns + 1 < b->nbrokers) {
		turn_from(b, b->feed_at, why);
		b->feed_turns++;
		evtimer_add(b->feed_retry, &now);
		return;
	}
	b->feed_turns = 0;
	turn_from(b, b->feed_at, why);
	/* Refusing starts 2 s after the last answer (on_feed_check), not
	 * at the first failed poll: a broker restarting revokes nothing. */
	if (!b->failing)
		log_warn("feed_unreachable", "{s:s, s:s}", "error", why,
		    "effect",
		    "every request is refused 2 s after the last answer, "
		    "until the feed answers again");
	b->failing = true;
	evtimer_add(b->feed_retry, &retry);
}

static void
feed_answer(struct evhttp_request *req, void *arg)
{
	struct brokerclient *b = arg;
	int status = req != NULL ? evhttp_request_get_response_code(req) : 0;
	json_t *body = NULL, *list, *head, *v;
	size_t i, n = 0;

	b->feed_req = NULL;
	if (status != 200) {
		char why[32];
		snprintf(why, sizeof(why),
		    status == 0 ? "no answer" : "status %d", status);
		feed_failed(b, why);
		return;
	}
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *data = (const char *)evbuffer_pullup(in, -1);
	if (data != NULL)
		body = json_loadb(data, len, 0, NULL);
	list = json_object_get(body, "revocations");
	head = json_object_get(body, "head");
	if (!json_is_array(list) || !json_is_integer(head)) {
		json_decref(body);
		feed_failed(b, "not a feed answer");
		return;
	}
	json_array_foreach(list, i, v)
	{
		struct feed_entry e;
		if (feed_entry_parse(v, &e) < 0)
			continue;
		if (e.seq > b->after)
			b->after = e.seq;
		if (e.token != NULL && b->hooks.token_revoked != NULL)
			b->hooks.token_revoked(b->hooks.ctx, e.job, e.token,
			    b->after);
		else
			feed_revoke(b, e.job);
		n++;
	}
	/* A head below what was applied: the broker's database went back
	 * (restored from a backup). Follow it from there. */
	if (!b->started || json_integer_value(head) < b->after) {
		if (b->started)
			log_warn("feed_went_back", "{s:I, s:I}", "from",
			    (json_int_t)b->after, "to",
			    (json_int_t)json_integer_value(head));
		b->after = json_integer_value(head);
	}
	json_decref(body);
	clock_gettime(CLOCK_MONOTONIC, &b->last_answer);
	b->last_check = b->last_answer;
	b->silent_ms = 0;
	b->failing = false;
	b->feed_turns = 0;
	/* A full page means more: resync before traffic flows again. */
	if (n < FEED_PAGE_MAX) {
		if (!b->ok)
			log_info("feed_ok", "{s:I}", "seq",
			    (json_int_t)b->after);
		b->ok = true;
	}
	b->started = true;
	feed_poll(b);
}

static void
feed_poll(struct brokerclient *b)
{
	struct evkeyvalq *h;
	char path[256];

	if (b->feed_req != NULL || b->verifier_key == NULL)
		return;
	/* The first poll asks past any head: the broker answers at once
	 * with the real one, and this proxy follows from there (a job it
	 * opens later is checked against the broker's state then). */
	snprintf(path, sizeof(path),
	    "/v1/revocations?after=%" PRId64 "&wait=%d&follower=%s",
	    b->started ? b->after : INT64_MAX, b->started ? FEED_WAIT_S : 0,
	    b->follower);
	b->feed_req = evhttp_request_new(feed_answer, b);
	if (b->feed_req == NULL) {
		feed_failed(b, "out of memory");
		return;
	}
	b->feed_at = b->cur;
	h = evhttp_request_get_output_headers(b->feed_req);
	evhttp_add_header(h, "Host", b->brokers[b->cur].host);
	evhttp_add_header(h, "Authorization", b->auth);
	if (evhttp_make_request(b->brokers[b->cur].feed_conn, b->feed_req,
		EVHTTP_REQ_GET, path) < 0) {
		b->feed_req = NULL;
		feed_failed(b, "could not send");
	}
}

static void
on_feed_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	feed_poll(arg);
}

/* Logs the moment the feed has been silent too long: from then on
 * brokerclient_feed_ok says no. */
static void
on_feed_check(evutil_socket_t fd, short what, void *arg)
{
	struct brokerclient *b = arg;

	(void)fd;
	(void)what;
	b->silent_ms = feed_silence(b);
	clock_gettime(CLOCK_MONOTONIC, &b->last_check);
	if (b->ok && !brokerclient_feed_ok(b)) {
		b->ok = false;
		log_warn("feed_silent", "{s:i, s:i, s:s}", "ms",
		    (int)b->silent_ms, "since_answer_ms",
		    (int)elapsed_ms(&b->last_answer), "effect",
		    "every request is refused until the feed answers");
		/* Requests are refused one by one from now on; what cannot
		 * be judged request by request is the proxy's to close. */
		if (b->hooks.feed_lost != NULL)
			b->hooks.feed_lost(b->hooks.ctx);
	}
}

/* --- the bindings' list --------------------------------------------------- */

static void
on_bindings(void *arg, int status, json_t *body)
{
	struct brokerclient *b = arg;

	b->bindings_call = NULL;
	if (status == 200 && json_is_object(body)) {
		b->hooks.bindings(b->hooks.ctx, body, b->bindings_asked);
		return;
	}
	/* The guard refuses everything once no list was read for three
	 * intervals (conn.c): each failure told, once a burst. */
	log_burst(LEVEL_WARN, "bindings_unreadable", "{s:i}", "status", status);
}

static void
on_bindings_tick(evutil_socket_t fd, short what, void *arg)
{
	struct brokerclient *b = arg;

	(void)fd;
	(void)what;
	if (b->bindings_call == NULL) {
		b->bindings_asked = b->hooks.bindings_asking != NULL
		    ? b->hooks.bindings_asking(b->hooks.ctx)
		    : 0;
		b->bindings_call = brokerclient_call(b, "GET", "/v1/bindings",
		    NULL, on_bindings, b);
	}
}

/* --- reflection reports --------------------------------------------------- */

static void reflection_send(struct reflection_tell *t);

/* Lets t go: its reflections told (counted at the broker) or lost. */
static void
reflection_done(struct reflection_tell *t, bool told)
{
	if (told)
		t->b->reflections_told += (uint64_t)t->count;
	else
		t->b->reflections_lost += (uint64_t)(t->count + t->more);
	t->call = NULL;
	if (told && t->more > 0) {
		/* Those that came while it was in flight: told next. */
		t->count = t->more;
		t->more = 0;
		t->tries = 0;
		reflection_send(t);
		return;
	}
	t->used = false;
	t->more = 0;
}

static void
on_reflection_told(void *arg, int status, json_t *body)
{
	struct reflection_tell *t = arg;
	static const struct timeval again = { REFLECTION_RETRY_S, 0 };

	t->call = NULL;
	if (status == 200) {
		if (json_is_true(json_object_get(body, "burned")))
			log_warn("secret_burned", "{s:s, s:s, s:I, s:s}", "job",
			    t->job, "secret", t->secret, "version",
			    (json_int_t)t->version, "effect",
			    "the broker refuses its releases to inject "
			    "from now on: rotate it");
		reflection_done(t, true);
		return;
	}
	/* Refused for good (no such job, secret or version; a bad body):
	 * telling it again would not change it. */
	if ((status >= 400 && status < 500 && status != 408 && status != 429) ||
	    ++t->tries >= REFLECTION_TRIES) {
		log_error("reflection_unreported",
		    "{s:s, s:s, s:I, s:s, s:i, "
		    "s:i, s:s}",
		    "job", t->job, "secret", t->secret, "version",
		    (json_int_t)t->version, "event", t->event, "count",
		    t->count, "status", status, "effect",
		    "the fleet's reflection budget of this version misses it");
		reflection_done(t, false);
		return;
	}
	log_burst(LEVEL_WARN, "reflection_retried", "{s:s, s:s, s:i}", "job",
	    t->job, "secret", t->secret, "status", status);
	t->count += t->more; /* told again as one report (1000 at most) */
	t->more = 0;
	if (!evtimer_pending(t->b->tells_tick, NULL))
		evtimer_add(t->b->tells_tick, &again);
}

static void
reflection_send(struct reflection_tell *t)
{
	char path[300];
	json_t *q = json_pack("{s:I, s:s, s:i}", "version",
	    (json_int_t)t->version, "event", t->event, "count", t->count);

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/%s/reflections",
	    t->job, t->secret);
	t->call = q != NULL
	    ? brokerclient_call(t->b, "POST", path, q, on_reflection_told, t)
	    : NULL;
	json_decref(q);
	if (t->call == NULL)
		on_reflection_told(t, 0, NULL);
}

/* The reports waiting to be told again: sent. */
static void
on_tells_tick(evutil_socket_t fd, short what, void *arg)
{
	struct brokerclient *b = arg;

	(void)fd;
	(void)what;
	for (size_t i = 0; i < BROKERCLIENT_REFLECTIONS_KEPT; i++)
		if (b->tells[i].used && b->tells[i].call == NULL)
			reflection_send(&b->tells[i]);
}

int
brokerclient_reflection(struct brokerclient *b, const char *job,
    const char *secret, int64_t version, const char *event)
{
	struct reflection_tell *t = NULL;

	if (b->verifier_key == NULL || strlen(job) > BROKERCLIENT_JOB_MAX ||
	    strlen(secret) >= sizeof(t->secret)) {
		b->reflections_lost++;
		log_error("reflection_unreported", "{s:s, s:s, s:s}", "job",
		    job, "secret", secret, "error",
		    "no verifier key, or a name too long");
		return -EINVAL;
	}
	/* One kept of the same, waiting or in flight: added up (those that
	 * come while it is in flight are told after it). */
	for (size_t i = 0; i < BROKERCLIENT_REFLECTIONS_KEPT; i++) {
		struct reflection_tell *x = &b->tells[i];
		if (x->used && x->version == version &&
		    strcmp(x->event, event) == 0 && strcmp(x->job, job) == 0 &&
		    strcmp(x->secret, secret) == 0 &&
		    x->count + x->more < 1000) {
			if (x->call == NULL)
				x->count++;
			else
				x->more++;
			return 0;
		}
		if (!x->used && t == NULL)
			t = x;
	}
	if (t == NULL) {
		b->reflections_lost++;
		log_error("reflection_unreported", "{s:s, s:s, s:I, s:s, s:s}",
		    "job", job, "secret", secret, "version",
		    (json_int_t)version, "event", event, "error",
		    "every place to keep a report is taken");
		return -ENOSPC;
	}
	*t = (struct reflection_tell){ .b = b,
		.used = true,
		.version = version,
		.event = event,
		.count = 1 };
	snprintf(t->job, sizeof(t->job), "%s", job);
	snprintf(t->secret, sizeof(t->secret), "%s", secret);
	reflection_send(t);
	return 0;
}

void
brokerclient_reflection_counts(const struct brokerclient *b, uint64_t *ret_told,
    uint64_t *ret_kept, uint64_t *ret_lost)
{
	uint64_t kept = 0;

	for (size_t i = 0; i < BROKERCLIENT_REFLECTIONS_KEPT; i++)
		if (b->tells[i].used)
			kept +=
			    (uint64_t)(b->tells[i].count + b->tells[i].more);
	*ret_told = b->reflections_told;
	*ret_kept = kept;
	*ret_lost = b->reflections_lost;
}

int
brokerclient_new(struct event_base *base, const struct brokerclient_options *o,
    struct brokerclient **ret)
{
	static const struct timeval check = { 0, FEED_CHECK_MS * 1000 };
	/* With another broker to turn to, a poll is given up sooner. */
	static const struct timeval feed_one = { FEED_WAIT_S + 2, 0 };
	static const struct timeval feed_many = { FEED_WAIT_S, 500 * 1000 };
	char bases[HTTPC_BASES_MAX][HTTPC_BASE_MAX];
	struct brokerclient *b = calloc(1, sizeof(*b));
	int n;

	if (b == NULL)
		return -ENOMEM;
	b->base = base;
	b->hooks = o->hooks;
	TAILQ_INIT(&b->pending);
	TAILQ_INIT(&b->waiting);
	snprintf(b->follower, sizeof(b->follower), "%s",
	    o->follower != NULL ? o->follower : "");
	n = httpc_bases(o->base, bases, HTTPC_BASES_MAX);
	for (int i = 0; i < n; i++)
		if (parse_base(&b->brokers[i], bases[i]) < 0)
			n = -EINVAL;
	if (n < 0) {
		free(b);
		return -EINVAL;
	}
	b->nbrokers = (size_t)n;
	if (o->verifier_key != NULL) {
		b->verifier_key = strdup(o->verifier_key);
		if (b->verifier_key == NULL)
			goto fail;
		snprintf(b->auth, sizeof(b->auth), "Bearer %s",
		    o->verifier_key);
	}
	for (size_t k = 0; k < b->nbrokers; k++) {
		struct broker_link *l = &b->brokers[k];

		for (size_t i = 0; i < NCONNS; i++) {
			l->calls[i] = evhttp_connection_base_new(base, NULL,
			    l->host, l->port);
			if (l->calls[i] == NULL)
				goto fail;
			evhttp_connection_set_timeout(l->calls[i],
			    CALL_TIMEOUT_S);
			evhttp_connection_set_retries(l->calls[i], 0);
		}
		l->feed_conn =
		    evhttp_connection_base_new(base, NULL, l->host, l->port);
		if (l->feed_conn == NULL)
			goto fail;
		evhttp_connection_set_timeout_tv(l->feed_conn,
		    b->nbrokers > 1 ? &feed_many : &feed_one);
		evhttp_connection_set_retries(l->feed_conn, 0);
	}
	b->feed_retry = evtimer_new(base, on_feed_retry, b);
	b->feed_check = event_new(base, -1, EV_PERSIST, on_feed_check, b);
	clock_gettime(CLOCK_MONOTONIC, &b->last_check);
	b->tells_tick = evtimer_new(base, on_tells_tick, b);
	if (b->feed_retry == NULL || b->feed_check == NULL ||
	    b->tells_tick == NULL || event_add(b->feed_check, &check) < 0)
		goto fail;
	if (o->bindings_refresh_s > 0 && o->hooks.bindings != NULL &&
	    b->verifier_key != NULL) {
		b->bindings_every.tv_sec = (time_t)o->bindings_refresh_s;
		b->bindings_tick =
		    event_new(base, -1, EV_PERSIST, on_bindings_tick, b);
		if (b->bindings_tick == NULL ||
		    event_add(b->bindings_tick, &b->bindings_every) < 0)
			goto fail;
		on_bindings_tick(-1, 0, b);
	}
	feed_poll(b);
	*ret = b;
	return 0;
fail:
	brokerclient_free(b);
	return -ENOMEM;
}

void
brokerclient_free(struct brokerclient *b)
{
	if (b == NULL)
		return;
	/* Freeing a connection frees its requests without a word to their
	 * callbacks: the calls go here. */
	for (size_t k = 0; k < b->nbrokers; k++) {
		struct broker_link *l = &b->brokers[k];

		for (size_t i = 0; i < NCONNS; i++)
			if (l->calls[i] != NULL)
				evhttp_connection_free(l->calls[i]);
		if (l->feed_conn != NULL)
			evhttp_connection_free(l->feed_conn);
	}
	while (!TAILQ_EMPTY(&b->pending)) {
		struct brokerclient_call *c = TAILQ_FIRST(&b->pending);
		TAILQ_REMOVE(&b->pending, c, link);
		call_free(c);
	}
	while (!TAILQ_EMPTY(&b->waiting)) {
		struct brokerclient_call *c = TAILQ_FIRST(&b->waiting);
		TAILQ_REMOVE(&b->waiting, c, link);
		call_free(c);
	}
	if (b->feed_retry != NULL)
		event_free(b->feed_retry);
	if (b->feed_check != NULL)
		event_free(b->feed_check);
	if (b->bindings_tick != NULL)
		event_free(b->bindings_tick);
	if (b->tells_tick != NULL)
		event_free(b->tells_tick);
	if (b->verifier_key != NULL) {
		explicit_bzero(b->verifier_key, strlen(b->verifier_key));
		free(b->verifier_key);
	}
	explicit_bzero(b->auth, sizeof(b->auth));
	free(b);
}
