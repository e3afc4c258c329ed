/*
 * The data plane: one connection on a job's channel, request by request.
 *
 *   HEAD ─► (TOKEN) ─► DNS ─► CONNECT ─► EXCHANGE ─► HEAD (keep-alive)
 *     │                                    │
 *     └─ CONNECT host:port ─► HANDSHAKE (terminate) ─► HEAD, inner requests
 *                          └► SNI (passthrough) ─► DNS ─► CONNECT ─► TUNNEL
 *
 * Every request is judged in docs/egress.md's order before a byte leaves: the
 * feed must be answering and the job open, the rules must match (before
 * any DNS lookup), a cordon token in it must be this job's and for this
 * host, and the address the name resolved to must be one the rule may
 * reach; the proxy then connects to that very address. Requests are
 * re-serialised, bodies re-framed; responses are relayed as they come,
 * their framing read only to know where each ends. A denial answers 403
 * with X-Cordon-Deny and closes the connection. Each decision is one line
 * of the job's log, written when its outcome is known.
 */
#include "proxy.h"

#include "forward.h"
#include "guard.h"
#include "http1.h"
#include "inject.h"
#include "keyshape.h"
#include "log.h"
#include "override.h"
#include "response.h"
#include "scratch.h"
#include "sni.h"
#include "tls.h"
#include "tokens.h"
#include "util.h"
#include "verdict.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Output a side may hold before the other side stops being read. */
#define FLOW_HIGH (1024 * 1024)
/* Input a side may hold unread (a head, a pipelined request). */
#define READ_HIGH (HTTP1_HEAD_MAX + 64 * 1024)
#define CLOSE_FLUSH_MS 5000
/* How often a half-closed client is looked at for a close (client_watch). */
#define CLIENT_GONE_MS 1000
#define DNS_TIMEOUT_MS 5000

enum cstate {
	CS_HEAD, /* waiting for a request head */
	CS_TOKEN, /* introspecting the request's token */
	CS_DNS,
	CS_CONNECT, /* to the upstream, with its TLS handshake */
	CS_EXCHANGE, /* request body up, response down */
	CS_HANDSHAKE, /* TLS with the client, in a terminated tunnel */
	CS_SNI, /* reading the ClientHello of a passthrough tunnel */
	CS_TUNNEL, /* bytes both ways: passthrough, or an upgrade */
	CS_CLOSING, /* flushing the last answer */
};

struct pconn {
	TAILQ_ENTRY(pconn) link;
	struct pjob *job;
	struct proxy *p;
	uint64_t id, nreq;
	enum cstate state;
	struct bufferevent *cl; /* the client: plain, or TLS over plain */
	struct bufferevent *up;
	struct event *timer;
	struct timespec closing_since;

	/* The launcher's first line (http1.h): which way the connection
	 * came, read before anything of the job's. */
	bool origin_read;
	enum http1_origin origin;

	/* After a CONNECT: the tunnel's target, and how it is carried (a
	 * captured plain-HTTP connection is one too: tunnel_tls none). */
	bool tunnel;
	enum egress_tls tunnel_tls;
	int tunnel_rule;
	char thost[EGRESS_HOST_MAX + 1];
	uint16_t tport;
	struct tls_sni sni; /* the ClientHello's name (tls.c, or try_sni) */

	/* The upstream connected to, reused while the next request goes to
	 * the same host, port and scheme. */
	char up_key[POOL_KEY_MAX];
	bool up_tls, up_idle;
	char addr[INET6_ADDRSTRLEN + 8];

	/* The request being judged or carried. */
	struct http1_parser parser;
	char *head;
	size_t head_len;
	bool head_started;
	struct decision d;
	bool d_open; /* d is waiting to be logged */
	char method[32];
	char host[EGRESS_HOST_MAX + 1];
	char *path;
	struct timespec t0;
	int rule;
	bool broker_route, upgrade_ok, keep_alive;
	bool client_eof; /* the client sends no more; it may still read */
	/* After client_eof: looks, each CLIENT_GONE_MS, whether the client
	 * closed for good (NULL until then; client_watch). */
	struct event *gone;
	bool up_close; /* Connection: close went up (http1_close_after_body) */
	/* Every distinct token shape of the request, head and body, with
	 * the broker's verdict once it came (tokens.c). */
	struct token_set tokens;
	bool body_hold; /* forwarding the body waits on an introspection */
	/* The last introspection got no answer or the broker's 503: its
	 * introspection_failed is unavailability (503), not a refusal. */
	bool introspect_down;
	bool up_eof_held; /* the upstream closed while the body was held */
	/* The upstream closed during request up_closed_req (clean: an EOF,
	 * and a TLS upstream's close_notify came); a TLS close is acted on
	 * from up_closed_ev, on the loop's next turn (on_up_closed). */
	bool up_closed, up_closed_clean;
	uint64_t up_closed_req;
	struct event *up_closed_ev;
	/* A TLS upstream's read-to-close answer goes to the job's HTTP/1.1
	 * request chunked, its last chunk only after the close_notify. */
	bool reframe;
	uint64_t body_left;
	struct http1_chunked chunk;
	bool body_done;
	bool resp_head, resp_done, head_req;
	struct http1_response resp;
	uint64_t resp_left;
	struct http1_chunked rchunk;
	struct evdns_getaddrinfo_request *dns;
	struct evutil_addrinfo *ai; /* the answer, taken on the next turn */
	int ai_err;
	bool ai_ready;
	struct brokerclient_call *call;
	/* The job's release this request waits for (NULL: none), and its
	 * place among that release's waiters. */
	struct release_flight *flight;
	LIST_ENTRY(pconn) flight_link;
	/* The report of its address this injected request waits for before
	 * a byte goes (NULL: none), and its place among its waiters. */
	struct guard_tell *tell;
	LIST_ENTRY(pconn) tell_link;
	/* A rule's injected credential (credentials.md), for this request
	 * only: the header value, in scratch[SCRATCH_INJECT] (its memory
	 * kept). Wiped at the request's end. */
	char *inject_value;
	size_t inject_cap;
	/* Once anything was released to the job, every answer it reads
	 * goes through the scanners of all its values (reflect.h). */
	struct reflect_scan scan;
	bool scanning;
	/* Its job's scan budget is spent: c reads nothing more from its
	 * upstream until the job's refill (scan_held); the steps of request
	 * charged_req's scan already charged to the job. */
	bool throttled;
	uint64_t charged_req;
	size_t charged;
	/* The answer showed what the job must not read (trip): nothing
	 * more goes down; the job's close (on_trip) ends c. */
	bool tripped;
	/* The params of the good token of the rule's inject capability:
	 * what a templated path binds (verdict_params). */
	json_t *inject_params;
	/* An injected request's form body is being read whole, to be
	 * judged before the release (form_body_judge). */
	bool form_wait;
	/* The secrets whose bindings the request reaches (guard.h), as its
	 * decision line names them: "a,b" (names of [A-Za-z0-9._-]). */
	char guard[256];
	/* One exchange's bytes on their way (scratch.h): the heads, what
	 * the scan lets down and the injected value, kept between
	 * exchanges, wiped after each use (a request's head holds an
	 * injected key). */
	struct buf scratch[3];
};

static void on_cl_read(struct bufferevent *bev, void *arg);
static void on_cl_write(struct bufferevent *bev, void *arg);
static void on_cl_event(struct bufferevent *bev, short what, void *arg);
static void on_up_read(struct bufferevent *bev, void *arg);
static void on_up_write(struct bufferevent *bev, void *arg);
static void on_up_event(struct bufferevent *bev, short what, void *arg);
static void try_head(struct pconn *c);
static void go_upstream(struct pconn *c);

static void
arm(struct pconn *c, long long ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000 };

	evtimer_add(c->timer, &tv);
}

/* The scratch buffers of pconn (scratch.h): the head going up or down,
 * what the scan lets down (both at once in down_head), the injected
 * header's value (the request's whole life). */
enum { SCRATCH_HEAD, SCRATCH_SCAN, SCRATCH_INJECT };

static struct buf *
scratch(struct pconn *c, int i, size_t max)
{
	return scratch_take(&c->scratch[i], max);
}

/* --- decisions ------------------------------------------------------------ */

static void
decision_log(struct pconn *c)
{
	if (!c->d_open)
		return;
	c->d_open = false;
	c->d.ms = elapsed_ms(&c->t0);
	c->d.addr = c->addr;
	job_log(c->job, &c->d);
}

/* A new decision for what just arrived. */
static void
decision_begin(struct pconn *c, const char *kind)
{
	decision_log(c);
	c->nreq++;
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	memset(&c->d, 0, sizeof(c->d));
	c->d.job = c->job->id;
	c->d.conn = c->id;
	c->d.req = c->nreq;
	c->d.kind = kind;
	c->d.rule = -1;
	c->d.allow = true;
	c->d.sni = c->tunnel && c->sni.got[0] != '\0' ? c->sni.got : NULL;
	c->d_open = true;
}

/* --- closing -------------------------------------------------------------- */

static void
up_drop(struct pconn *c)
{
	if (c->up != NULL)
		bufferevent_free(c->up);
	c->up = NULL;
	c->up_key[0] = '\0';
	c->up_idle = false;
}

/* Hands an idle upstream to the job's pool; drops any other. */
static void
up_release(struct pconn *c)
{
	if (c->up != NULL && c->up_idle && !c->broker_route &&
	    !c->job->closed) {
		pool_put(&c->job->pool, c->up, c->up_key, c->addr);
		c->up = NULL;
	}
	up_drop(c);
}

static void release_leave(struct pconn *c);

static void
request_reset(struct pconn *c)
{
	free(c->head);
	c->head = NULL;
	free(c->path);
	c->path = NULL;
	c->head_started = false;
	tokens_reset(&c->tokens);
	if (c->inject_value != NULL) {
		/* All inject_cap bytes wiped, the memory kept. */
		scratch_done(&c->scratch[SCRATCH_INJECT]);
		c->inject_value = NULL;
	}
	reflect_scan_end(&c->scan); /* its arrays kept for the next */
	c->scanning = false;
	json_decref(c->inject_params);
	c->inject_params = NULL;
	c->form_wait = false;
	release_leave(c);
}

void
conn_close(struct pconn *c)
{
	decision_log(c);
	if (c->call != NULL)
		brokerclient_cancel(c->call);
	release_leave(c);
	if (c->dns != NULL)
		evdns_getaddrinfo_cancel(c->dns);
	if (c->ai != NULL)
		evutil_freeaddrinfo(c->ai);
	up_release(c);
	if (c->cl != NULL)
		bufferevent_free(c->cl);
	event_free(c->timer);
	if (c->gone != NULL)
		event_free(c->gone);
	if (c->up_closed_ev != NULL)
		event_free(c->up_closed_ev);
	request_reset(c);
	reflect_scan_free(&c->scan);
	for (size_t i = 0; i < sizeof(c->scratch) / sizeof(c->scratch[0]); i++)
		scratch_free(&c->scratch[i]);
	TAILQ_REMOVE(&c->job->conns, c, link);
	c->job->nconns--;
	c->p->conns_open--;
	free(c);
}

static bool
flushed(struct pconn *c)
{
	struct bufferevent *under = bufferevent_get_underlying(c->cl);

	return evbuffer_get_length(bufferevent_get_output(c->cl)) == 0 &&
	    (under == NULL ||
		evbuffer_get_length(bufferevent_get_output(under)) == 0);
}

/* Closes once what was written to the client has gone out. */
static void
conn_finish(struct pconn *c)
{
	decision_log(c);
	release_leave(c);
	up_release(c);
	c->state = CS_CLOSING;
	bufferevent_disable(c->cl, EV_READ);
	clock_gettime(CLOCK_MONOTONIC, &c->closing_since);
	if (flushed(c)) {
		conn_close(c);
		return;
	}
	arm(c, 20);
}

/* Answers the client with status and a one-line JSON body, then closes.
 * deny_reason set: a denial (X-Cordon-Deny); otherwise an upstream
 * failure (X-Cordon-Error). retry_s not 0: with Retry-After (a 503). */
static void
answer_retry(struct pconn *c, unsigned status, const char *deny_reason,
    const char *error, const char *message, unsigned retry_s)
{
	struct buf out;

	buf_init(&out, 4096);
	if (verdict_refusal_retry(&out, status, deny_reason, error, message,
		retry_s) == 0)
		evbuffer_add(bufferevent_get_output(c->cl), out.data, out.len);
	buf_free(&out);
	c->d.status = (int)status;
	conn_finish(c);
}

static void
answer(struct pconn *c, unsigned status, const char *deny_reason,
    const char *error, const char *message)
{
	answer_retry(c, status, deny_reason, error, message, 0);
}

/* A 503 that a client may try again after retry_s: the busy caps' 1 s,
 * the broker's own Retry-After, a few seconds while something cordon
 * needs does not answer (docs/egress.md, Unavailable). */
#define RETRY_BUSY_S 1
#define RETRY_UNAVAILABLE_S 2

static void deny_unavailable(struct pconn *c, const char *reason,
    const char *detail, unsigned retry_s);

static void
deny(struct pconn *c, const char *reason, const char *detail)
{
	char msg[160];

	/* Nothing can be judged while the feed is silent: refused, but
	 * as unavailable, since it is answered again within seconds. */
	if (strcmp(reason, "feed_unavailable") == 0) {
		deny_unavailable(c, reason, detail, RETRY_UNAVAILABLE_S);
		return;
	}
	c->d.allow = false;
	c->d.reason = reason;
	c->d.detail = detail;
	/* Inside a passthrough tunnel, before a byte went upstream, there is
	 * no HTTP to answer in: the close is the answer. */
	if (c->state == CS_SNI || c->state == CS_HANDSHAKE ||
	    c->state == CS_TUNNEL) {
		conn_finish(c);
		return;
	}
	snprintf(msg, sizeof(msg), "cordon-proxy refused this request: %s%s%s",
	    reason, detail != NULL ? ": " : "", detail != NULL ? detail : "");
	answer(c, 403, reason, "denied", msg);
}

/*
 * A refusal (reason, detail) that is cordon's unavailability, not the
 * rules' word: answered 503 with X-Cordon-Deny and Retry-After: retry_s,
 * logged as a denial. For what cordon cannot check now (the feed, a
 * guard whose state it cannot read): nothing goes upstream.
 */
static void
deny_unavailable(struct pconn *c, const char *reason, const char *detail,
    unsigned retry_s)
{
	char msg[160];

	c->d.allow = false;
	c->d.reason = reason;
	c->d.detail = detail;
	if (c->state == CS_SNI || c->state == CS_HANDSHAKE ||
	    c->state == CS_TUNNEL) {
		conn_finish(c);
		return;
	}
	snprintf(msg, sizeof(msg),
	    "cordon-proxy cannot judge this request now: %s%s%s; try again",
	    reason, detail != NULL ? ": " : "", detail != NULL ? detail : "");
	answer_retry(c, 503, reason, "unavailable", msg, retry_s);
}

static void fail_retry(struct pconn *c, unsigned status, const char *detail,
    unsigned retry_s);

static void
fail(struct pconn *c, unsigned status, const char *detail)
{
	fail_retry(c, status, detail, 0);
}

/* An upstream failure (status 502, 503, 504) with its detail; a 503
 * with Retry-After: retry_s (not 0). */
static void
fail_retry(struct pconn *c, unsigned status, const char *detail,
    unsigned retry_s)
{
	char msg[160];

	c->d.error = true;
	c->d.detail = detail;
	snprintf(msg, sizeof(msg), "the upstream could not be reached: %s",
	    detail);
	if (c->state == CS_TUNNEL || c->state == CS_SNI ||
	    (c->tunnel && c->tunnel_tls == EGRESS_TLS_PASSTHROUGH)) {
		c->d.status = (int)status;
		conn_finish(c);
		return;
	}
	answer_retry(c, status, NULL, "upstream", msg, retry_s);
}

/* --- flow ----------------------------------------------------------------- */

/* Reads a side only while the other side's output is below FLOW_HIGH. */
static void
flow(struct pconn *c)
{
	bool cl_read, up_read;

	if (c->state == CS_CLOSING)
		return;
	cl_read = !c->client_eof &&
	    (c->up == NULL ||
		evbuffer_get_length(bufferevent_get_output(c->up)) < FLOW_HIGH);
	up_read = !c->throttled &&
	    evbuffer_get_length(bufferevent_get_output(c->cl)) < FLOW_HIGH;
	if (cl_read)
		bufferevent_enable(c->cl, EV_READ);
	else
		bufferevent_disable(c->cl, EV_READ);
	if (c->up != NULL &&
	    (c->state == CS_EXCHANGE || c->state == CS_TUNNEL)) {
		if (up_read)
			bufferevent_enable(c->up, EV_READ);
		else
			bufferevent_disable(c->up, EV_READ);
	}
}

/* --- accepting ------------------------------------------------------------ */

static void on_timer(evutil_socket_t fd, short what, void *arg);

void
conn_accept(struct pjob *j, int fd)
{
	struct proxy *p = j->p;
	struct pconn *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		close(fd);
		return;
	}
	c->job = j;
	c->p = p;
	c->id = ++j->next_conn;
	c->timer = evtimer_new(p->base, on_timer, c);
	c->cl = bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->timer == NULL || c->cl == NULL) {
		if (c->timer != NULL)
			event_free(c->timer);
		if (c->cl != NULL)
			bufferevent_free(c->cl);
		else
			close(fd);
		free(c);
		return;
	}
	TAILQ_INSERT_TAIL(&j->conns, c, link);
	j->nconns++;
	p->conns_open++;
	http1_parser_init(&c->parser, HTTP1_MODE_PROXY);
	bufferevent_setcb(c->cl, on_cl_read, on_cl_write, on_cl_event, c);
	bufferevent_setwatermark(c->cl, EV_READ, 0, READ_HIGH);
	bufferevent_setwatermark(c->cl, EV_WRITE, FLOW_HIGH / 2, 0);
	bufferevent_enable(c->cl, EV_READ | EV_WRITE);
	c->state = CS_HEAD;
	arm(c, p->cfg.idle_timeout_ms);
}

/* --- judging a request ---------------------------------------------------- */

/* What the broker's answer on a token means for this request. */
static const char *
token_verdict(struct pconn *c, int status, json_t *body)
{
	return verdict_token(status, body, c->job->id,
	    c->rule >= 0 ? &c->job->rules.rule[c->rule] : NULL);
}

static void
on_ignored(void *arg, int status, json_t *body)
{
	(void)arg;
	(void)status;
	(void)body;
}

/* Sends the tokens not yet judged to the broker without waiting: the
 * request is refused anyway, but a canary among them must trip. */
static void
tokens_tell_rest(struct pconn *c)
{
	for (size_t i = 0; i < c->tokens.n; i++) {
		if (c->tokens.t[i].done)
			continue;
		json_t *q = json_pack("{s:s}", "token", c->tokens.t[i].tok);
		if (q != NULL)
			(void)brokerclient_call(c->p->bclient, "POST",
			    "/v1/introspect", q, on_ignored, NULL);
		json_decref(q);
		tokens_judged(&c->tokens, i, "not_judged");
	}
}

/* Token i of the request is good here (the broker said so, now or in
 * the job's cache): its capability, and the params an injecting rule's
 * templated path binds. */
static void
token_good(struct pconn *c, size_t i, const char *cap, json_t *params)
{
	tokens_judged(&c->tokens, i, NULL);
	snprintf(c->tokens.t[i].capability, sizeof(c->tokens.t[0].capability),
	    "%s", cap != NULL ? cap : "");
	if (c->rule >= 0 && cap != NULL &&
	    strcmp(cap, c->job->rules.rule[c->rule].inject.capability) == 0) {
		json_decref(c->inject_params);
		c->inject_params = json_incref(params);
	}
}

/* Monotonic seconds: the clock of the token cache and of the released
 * values' cache. */
static int64_t
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

/* Whether the job's cache (tokcache.h) holds a good answer on token i
 * for the rule's audience, the feed current: then it is judged good
 * without a broker call. */
static bool
token_cached(struct pconn *c, size_t i)
{
	const struct egress_rule *rule =
	    c->rule >= 0 ? &c->job->rules.rule[c->rule] : NULL;
	const struct tokcache_entry *e;

	if (rule == NULL || rule->audience[0] == '\0' ||
	    !brokerclient_feed_ok(c->p->bclient))
		return false;
	e = tokcache_get(&c->job->tokcache, c->tokens.t[i].tok, rule->audience,
	    (int64_t)time(NULL), mono_s(), c->p->cfg.token_cache_s);
	if (e == NULL)
		return false;
	token_good(c, i, e->capability, e->params);
	c->p->token_cache_hits++;
	return true;
}

/* Keeps the broker's good answer on token i in the job's cache. */
static void
token_keep(struct pconn *c, size_t i, json_t *body)
{
	const char *aud = json_string_value(json_object_get(body, "aud"));
	const char *cap =
	    json_string_value(json_object_get(body, "capability"));
	json_t *exp = json_object_get(body, "exp");

	if (c->p->cfg.token_cache_s > 0 && aud != NULL && cap != NULL &&
	    json_is_integer(exp))
		(void)tokcache_put(&c->job->tokcache, c->tokens.t[i].tok,
		    json_string_value(json_object_get(body, "token_id")), aud,
		    cap, json_object_get(body, "params"),
		    (int64_t)json_integer_value(exp), (int64_t)time(NULL),
		    mono_s());
}

/*
 * Asks the broker about the next token not yet judged and not in the
 * job's cache, with cb for its answer: true when a call is in flight;
 * false when none is left to ask. A call that cannot start judges its
 * token "introspection_failed".
 */
static bool
tokens_ask_next(struct pconn *c, brokerclient_cb cb)
{
	int i;

	while ((i = tokens_next(&c->tokens)) >= 0) {
		if (token_cached(c, (size_t)i))
			continue;
		json_t *q = json_pack("{s:s}", "token", c->tokens.t[i].tok);
		c->call = q != NULL ? brokerclient_call(c->p->bclient, "POST",
					  "/v1/introspect", q, cb, c)
				    : NULL;
		json_decref(q);
		if (c->call != NULL)
			return true;
		tokens_judged(&c->tokens, (size_t)i, "introspection_failed");
	}
	return false;
}

static void judge_tokens_next(struct pconn *c);

/* The part of value[0..*len) the scan looks for, its length into *len:
 * the value but the public part of its format, its last 7 bytes kept
 * (keyshape.h), so that a key's type prefix or a JWT's header in an
 * answer is not the key. */
static const char *
scan_part(const char *value, size_t *len)
{
	size_t off;

	*len = keyshape_scan_part(value, *len, &off);
	return off == 0 ? value : value + off;
}

/* The part of value[0..*len) a job released it for the scan only (a scan
 * release, another job's issuer credential) is scanned for: its secret
 * part, without scan_part's 7 bytes of context, so that its trip takes 8
 * of the secret's bytes, never the public part's last 7 and one guessed
 * byte (redteam5 #6). reflect.c holds it and the job's own cut as one. */
static const char *
secret_part(const char *value, size_t *len)
{
	size_t pub = keyshape_public_len(value, *len);

	*len -= pub;
	return value + pub;
}

/*
 * A value newly released to c's job: every other answer of the job being
 * read is scanned for it from now on (the service may put what it is
 * sent into any of them). One that cannot be (a coded answer read as it
 * was, or no memory) ends. The value goes upstream only after this.
 */
static void
released_to_job(struct pjob *j, const struct pconn *c, const char *secret,
    const char *value, size_t len, bool scan_only)
{
	struct pconn *x, *next;

	for (x = TAILQ_FIRST(&j->conns); x != NULL; x = next) {
		next = TAILQ_NEXT(x, link);
		if (x == c || x->state != CS_EXCHANGE || x->broker_route)
			continue;
		if (!x->scanning && x->resp_head && x->resp.coded) {
			x->d.detail = "released_midway";
			conn_finish(x);
			continue;
		}
		int r = scan_only
		    ? reflect_scan_add_trip(&x->scan, secret, value, len)
		    : reflect_scan_add(&x->scan, secret, value, len);
		if (r < 0) {
			x->d.detail = "out_of_memory";
			conn_finish(x);
			continue;
		}
		x->scanning = true;
	}
}

static void
released_to_all(struct pconn *c, const char *secret, const char *value,
    size_t len, bool scan_only)
{
	released_to_job(c->job, c, secret, value, len, scan_only);
}

/*
 * An issuer's credential released to c's job (value, secret's, dead at
 * expires, monotonic seconds): kept proxy-wide for the scan (guard.h),
 * and put at once in every other open job's set that scans for that
 * secret already (guarded at its bindings, or injecting it), with its
 * answers being read; a job without room for it has its connections
 * ended rather than read unscanned.
 */
static int
issued_share(struct pconn *c, const char *secret, const char *value, size_t len,
    int64_t expires)
{
	struct pjob *j;
	int64_t now = mono_s();
	/* Kept for the scan only: its secret part. */
	value = secret_part(value, &len);
	int kept =
	    guard_issued_put(&c->p->guard, secret, value, len, expires, now);

	/* Not kept (the list full of live ones): not injected either, or
	 * another job would read it unscanned (redteam3 #3). */
	if (kept <= 0)
		return kept;
	TAILQ_FOREACH(j, &c->p->jobs, link)
	{
		size_t i;
		if (j == c->job || j->closed)
			continue;
		for (i = 0; i < j->released.n; i++)
			if (strcmp(j->released.v[i].secret, secret) == 0)
				break;
		if (i == j->released.n)
			continue;
		int r = reflect_set_put_borrowed(&j->released, secret, 0, value,
		    len, now, expires);
		if (r > 0) {
			released_to_job(j, NULL, secret, value, len, true);
			continue;
		}
		if (r == 0)
			continue;
		/* No room: its answers being read end, not read unscanned;
		 * its next request there is refused at the cap. */
		struct pconn *x, *next;
		for (x = TAILQ_FIRST(&j->conns); x != NULL; x = next) {
			next = TAILQ_NEXT(x, link);
			if (x->state == CS_EXCHANGE && !x->broker_route) {
				x->d.detail = "released_values_cap";
				conn_finish(x);
			}
		}
	}
	return 0;
}

/* The credential for this request, from value[0..len) of version (the
 * broker's release, or the job's cache of it); expires (monotonic
 * seconds, 0: none) when it is dead at its issuer. */
static void
inject_use(struct pconn *c, const char *value, size_t len, int64_t version,
    int64_t expires, bool cached)
{
	const struct egress_rule *rule = &c->job->rules.rule[c->rule];

	/* Kept for the scan of every answer the job reads from now on
	 * (its scan part), for its life; past the cap, not released at
	 * all. */
	size_t slen = len;
	const char *sv = scan_part(value, &slen);
	int added = reflect_set_put(&c->job->released, rule->inject.secret,
	    version, sv, slen, mono_s(), expires);
	if (added == -ENOSPC) {
		deny(c, "inject", "released_values_cap");
		return;
	}
	if (added < 0) {
		deny(c, "inject", "secret_unusable");
		return;
	}
	if (added > 0)
		released_to_all(c, rule->inject.secret, sv, slen, false);
	c->inject_cap = strlen(rule->inject.format) + len + 1;
	c->inject_value =
	    scratch_room(&c->scratch[SCRATCH_INJECT], c->inject_cap);
	if (c->inject_value == NULL ||
	    inject_format(rule->inject.format, value, len, c->inject_value,
		c->inject_cap) < 0) {
		deny(c, "inject", "secret_unusable");
		return;
	}
	c->p->injected++;
	c->d.secret = rule->inject.secret;
	c->d.secret_version = version;
	/* At info for a release; a use the job's cache served is the
	 * request's decision line (secret, version) and a debug line: no
	 * JSON line and write of the log per injected request. */
	log_event(cached ? LEVEL_DEBUG : LEVEL_INFO, "secret_injected",
	    "{s:s, s:s, s:s, s:I, s:b}", "job", c->job->id, "host", c->host,
	    "secret", rule->inject.secret, "version", (json_int_t)version,
	    "cached", cached);
	go_upstream(c);
}

/*
 * A release of the rule's secret that cannot be had now (the broker's
 * 503, no answer, the proxy's caps on releases): 503 with the detail and
 * Retry-After: retry_s, error "unavailable", logged as an error decision
 * with that detail; nothing goes upstream (credentials.md).
 */
static void
release_fail(struct pconn *c, const char *detail, unsigned retry_s)
{
	char msg[160];

	c->d.error = true;
	c->d.detail = detail;
	snprintf(msg, sizeof(msg),
	    "the credential could not be released now: %s; try again in %u s",
	    detail, retry_s);
	answer_retry(c, 503, NULL, "unavailable", msg, retry_s);
}

/* The detail of a release the broker answered 503 with error err: the
 * broker's own reasons (credentials.md), any other broker_unavailable. */
static const char *
release_unavailable(const char *err)
{
	static const char *const known[] = { "issuer_unavailable",
		"issuer_busy", "broker_stopping" };

	for (size_t i = 0; err != NULL && i < sizeof(known) / sizeof(known[0]);
	     i++)
		if (strcmp(err, known[i]) == 0)
			return known[i];
	return "broker_unavailable";
}

/*
 * A release of one secret for a job at the broker in flight, and every
 * request of the job that waits for its answer: a request that finds one
 * for its secret waits on it, not asking again (one release a job and
 * secret in flight), and each is answered with its value or the same
 * refusal. A waiter that ends leaves; when the last one leaves the call
 * is cancelled: nothing released is handed to a closed job (its revoke
 * or channel close ends every connection first).
 */
struct release_flight {
	struct release_flight *next; /* the job's list */
	struct pjob *job;
	char secret[65]; /* egress_rule's inject.secret */
	struct brokerclient_call *call;
	LIST_HEAD(, pconn) waiters;
	unsigned nwaiters;
	bool answering; /* its answer being handed out: freed after */
	/* A scan release (the guard's): the value for the job's scan,
	 * never injected; apart from the secret's release to inject. */
	bool scan;
	int64_t read_ms; /* the list read it was asked after (guard.h) */
};

/* Takes f off its job's list (if on it). */
static void
release_flight_unlink(struct release_flight *f)
{
	struct release_flight **pp;

	for (pp = &f->job->flights; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
}

/* Unlinks f from its job's list and frees it (its call answered or
 * cancelled already). */
static void
release_flight_free(struct release_flight *f)
{
	release_flight_unlink(f);
	free(f);
}

/* c waits for no release from now on: the last waiter to leave cancels
 * the release. */
static void
release_leave(struct pconn *c)
{
	struct release_flight *f = c->flight;

	/* The address's report too: it goes on for the others (the
	 * broker's answer is the proxy's either way). */
	if (c->tell != NULL) {
		LIST_REMOVE(c, tell_link);
		c->tell = NULL;
	}
	if (f == NULL)
		return;
	LIST_REMOVE(c, flight_link);
	c->flight = NULL;
	f->nwaiters--;
	if (f->nwaiters == 0 && !f->answering) {
		if (f->call != NULL)
			brokerclient_cancel(f->call);
		release_flight_free(f);
	}
}

/* The broker's release of the rule's secret: the credential for this
 * request, kept in the job's cache (once a release: cache true for the
 * waiters after the first), or a refusal (fail closed). */
static void
release_answer(struct pconn *c, int status, json_t *body, bool kept)
{
	const struct egress_rule *rule = &c->job->rules.rule[c->rule];
	const json_t *v = json_object_get(body, "value");
	size_t len = json_string_length(v);
	const char *err = json_string_value(json_object_get(body, "error"));

	/* The credential's issuer refused or is away (the broker's
	 * issuers.c): the upstream side failed, and the answer says so. */
	if (status == 502 && err != NULL && strncmp(err, "issuer_", 7) == 0) {
		fail(c, 502, "issuer_refused");
		return;
	}
	/* The broker could not release it now (its issuer slow, busy, or
	 * the broker stopping; a fleet's next broker was asked already):
	 * 503 with the reason and the broker's Retry-After, not a refusal
	 * of the secret. */
	if (status == 503) {
		json_int_t ra =
		    json_integer_value(json_object_get(body, "retry_after"));
		release_fail(c, release_unavailable(err),
		    ra >= 1 && ra <= 3600 ? (unsigned)ra : RETRY_UNAVAILABLE_S);
		return;
	}
	/* No answer in the call's 5 s, or the broker's connection dropped:
	 * unavailable too, not refused (fail closed all the same). */
	if (status == 0) {
		release_fail(c, "release_timeout", RETRY_UNAVAILABLE_S);
		return;
	}
	/* Burned: its answers reflected it past its budget across the
	 * fleet (the broker's reflections.h); rotated, it is released. */
	if (status == 403 && err != NULL && strcmp(err, "secret_burned") == 0) {
		deny(c, "inject", "secret_burned");
		return;
	}
	if (status != 200 || !json_is_string(v) || len == 0 ||
	    len > INJECT_VALUE_MAX) {
		deny(c, "inject", "secret_unavailable");
		return;
	}
	int64_t version = json_integer_value(json_object_get(body, "version"));
	/* An issuer's credential ends at its expiry (wall-clock seconds),
	 * and is not kept once that is near. */
	json_int_t exp = json_integer_value(json_object_get(body, "expires"));
	int64_t now = mono_s(), until = 0;
	if (exp != 0)
		until = now + ((int64_t)exp - (int64_t)time(NULL)) - 5;
	/* An issuer's credential: every job guarded at its bindings scans
	 * for it too (guard.h), until its expiry; one that cannot be kept
	 * for that is not injected (503 guard_unavailable). */
	const char *source = json_string_value(json_object_get(body, "source"));
	if (source != NULL && strcmp(source, "static") != 0) {
		int r = issued_share(c, rule->inject.secret,
		    json_string_value(v), len, exp != 0 ? until + 5 + 60 : 0);
		if (r < 0) {
			deny_unavailable(c, "guard_unavailable",
			    r == -ENOSPC ? "issued_cap" : "issued_unkept", 2);
			return;
		}
	}
	if (!kept && (exp == 0 || until > now))
		(void)inject_cache_put(&c->job->secrets, rule->inject.secret,
		    version, json_string_value(v), len, now, until);
	/* Dead at its issuer a minute past its expiry (clocks differ). */
	/* At info once a release: the waiters after the first are logged
	 * as the cache's uses are. */
	inject_use(c, json_string_value(v), len, version,
	    exp != 0 ? until + 5 + 60 : 0, kept);
}

static void scan_answer(struct pconn *c, const char *secret, int64_t asked_ms,
    int status, json_t *body);

/* The broker's answer to the job's release f: every waiter answered
 * with it; the value in the json wiped after. */
static void
on_release(void *arg, int status, json_t *body)
{
	struct release_flight *f = arg;
	struct pconn *c;
	bool kept = false;

	f->call = NULL;
	f->answering = true;
	/* Off the job's list first: a request that reaches its release
	 * while these are answered (one pipelined behind a waiter) does
	 * not join an entry that is done. */
	release_flight_unlink(f);
	while ((c = LIST_FIRST(&f->waiters)) != NULL) {
		LIST_REMOVE(c, flight_link);
		c->flight = NULL;
		f->nwaiters--;
		if (f->scan)
			scan_answer(c, f->secret, f->read_ms, status, body);
		else
			release_answer(c, status, body, kept);
		kept = true;
	}
	/* The json's copy is freed by the broker client: wiped first. */
	const json_t *v = json_object_get(body, "value"), *e;
	if (json_is_string(v))
		explicit_bzero((char *)json_string_value(v),
		    json_string_length(v));
	size_t i;
	json_array_foreach(json_object_get(body, "values"), i, e)
	{
		if (json_is_string(v = json_object_get(e, "value")))
			explicit_bzero((char *)json_string_value(v),
			    json_string_length(v));
	}
	release_flight_free(f);
}

/*
 * A body a framework may read a method override from (override.h), on an
 * injected request: judged whole before anything of the request goes
 * upstream. 1 when it may go (no such body, or none found), 0 when it
 * must wait for more of the body (c->form_wait), -1 when refused (c
 * answered).
 */
static int
form_body_judge(struct pconn *c)
{
	const struct http1_request *r = &c->parser.req;
	const char *ctype = NULL;
	size_t ctlen = 0;

	if (r->body == HTTP1_BODY_NONE ||
	    (r->body == HTTP1_BODY_LENGTH && r->content_length == 0))
		return 1;
	bool coded = false;
	for (size_t i = 0; i < r->nheaders; i++) {
		const struct http1_header *h = &r->headers[i];
		if (h->name.len == 12 &&
		    strncasecmp(c->head + h->name.off, "Content-Type", 12) ==
			0) {
			ctype = c->head + h->value.off;
			ctlen = h->value.len;
		}
		/* body-parser inflates a gzip or deflate body before the
		 * framework reads it: the judge cannot (redteam2). */
		if (h->name.len == 16 &&
		    strncasecmp(c->head + h->name.off, "Content-Encoding",
			16) == 0 &&
		    !(h->value.len == 8 &&
			strncasecmp(c->head + h->value.off, "identity", 8) ==
			    0))
			coded = true;
	}
	enum override_kind kind = override_kind_of(ctype, ctlen);
	if (kind == OVERRIDE_NONE)
		return 1;
	if (r->body != HTTP1_BODY_LENGTH ||
	    r->content_length > OVERRIDE_BODY_MAX || coded) {
		deny(c, "inject", "form_unjudged");
		return -1;
	}
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t n = (size_t)r->content_length;
	if (evbuffer_get_length(in) < n) {
		if (c->client_eof) {
			c->d.detail = "client_closed";
			conn_finish(c);
			return -1;
		}
		if (!c->form_wait)
			arm(c, c->p->cfg.head_timeout_ms);
		c->form_wait = true;
		return 0;
	}
	c->form_wait = false;
	if (override_in_body(kind,
		(const char *)evbuffer_pullup(in, (ssize_t)n), n)) {
		deny(c, "inject", "method_override");
		return -1;
	}
	return 1;
}

static void inject_release(struct pconn *c);

/*
 * A rule that injects: the request must carry a good token of the rule's
 * capability (judged already); the secret is released for this request
 * and swapped in by forward_head. Other requests go on as they are.
 */
static void
inject_then_upstream(struct pconn *c)
{
	const struct egress_rule *rule =
	    c->rule >= 0 ? &c->job->rules.rule[c->rule] : NULL;
	bool have = false;

	if (rule == NULL || rule->inject.secret[0] == '\0' || c->broker_route ||
	    c->parser.req.connect) {
		go_upstream(c);
		return;
	}
	for (size_t i = 0; i < c->tokens.n; i++)
		have |= c->tokens.t[i].done && c->tokens.t[i].why == NULL &&
		    strcmp(c->tokens.t[i].capability,
			rule->inject.capability) == 0;
	if (!have) {
		deny(c, "token", "inject_needs_token");
		return;
	}
	const char *why = verdict_params(rule, c->d.path, c->inject_params);
	const struct http1_request *r = &c->parser.req;
	if (why == NULL &&
	    !path_template_query_match(rule->query, rule->nquery,
		r->has_query ? c->head + r->query.off : "",
		r->has_query ? r->query.len : 0, c->inject_params, &why)) {
		deny(c, "param_mismatch", why);
		return;
	}
	if (why != NULL) {
		deny(c, "param_mismatch", why);
		return;
	}
	/* The method the rule judged is the one the credential goes with
	 * (the override fields are dropped by forward_head). */
	if (r->has_query &&
	    override_in_form(c->head + r->query.off, r->query.len)) {
		deny(c, "inject", "method_override");
		return;
	}
	inject_release(c);
}

/* The injected request's body judged (form_body_judge), the secret is
 * released for it: from the job's cache, or by the broker. */
static void
inject_release(struct pconn *c)
{
	const struct egress_rule *rule = &c->job->rules.rule[c->rule];
	char path[256];

	if (form_body_judge(c) <= 0)
		return;
	/* Released for this job already, within the window. */
	const struct inject_cached *e = inject_cache_get(&c->job->secrets,
	    rule->inject.secret, mono_s(), c->p->cfg.inject_cache_s);
	/* A version the list says is burned is asked of the broker again
	 * (it refuses it, or gives the version after). */
	if (e != NULL &&
	    guard_burned(&c->p->guard, rule->inject.secret, e->version)) {
		(void)inject_cache_forget(&c->job->secrets, rule->inject.secret,
		    e->version);
		e = NULL;
	}
	if (e != NULL) {
		inject_use(c, e->value, e->len, e->version,
		    e->expires != 0 ? e->expires + 5 + 60 : 0, true);
		return;
	}
	/* The job's release of this secret in flight already: this
	 * request waits for its answer, as many as the job's connections. */
	struct release_flight *f;
	for (f = c->job->flights; f != NULL; f = f->next)
		if (!f->scan && strcmp(f->secret, rule->inject.secret) == 0)
			break;
	if (f != NULL) {
		if ((long long)f->nwaiters >= c->p->cfg.max_conns_per_job) {
			release_fail(c, "release_waiters_cap", RETRY_BUSY_S);
			return;
		}
		LIST_INSERT_HEAD(&f->waiters, c, flight_link);
		c->flight = f;
		f->nwaiters++;
		return;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		deny(c, "inject", "secret_unavailable");
		return;
	}
	f->job = c->job;
	snprintf(f->secret, sizeof(f->secret), "%s", rule->inject.secret);
	LIST_INIT(&f->waiters);
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/%s/release",
	    c->job->id, rule->inject.secret);
	/* On the releases' own connections, a few of the job's at once
	 * and more in turn; past them the job is told at once. */
	int r = brokerclient_release(c->p->bclient, c->job->id, path,
	    on_release, f, &f->call);
	if (r < 0) {
		free(f);
		if (r == -EBUSY)
			release_fail(c, "releases_busy", RETRY_BUSY_S);
		else
			deny(c, "inject", "secret_unavailable");
		return;
	}
	f->next = c->job->flights;
	c->job->flights = f;
	LIST_INSERT_HEAD(&f->waiters, c, flight_link);
	c->flight = f;
	f->nwaiters = 1;
}

/* --- the guard (guard.h) --------------------------------------------------- */

static void send_request(struct pconn *c);

/* Whether the job scans for secret at version or a later one already. */
static bool
scans_for(const struct pjob *j, const char *secret, int64_t version)
{
	for (size_t i = 0; i < j->released.n; i++)
		if (j->released.v[i].version >= version &&
		    strcmp(j->released.v[i].secret, secret) == 0)
			return true;
	return false;
}

/* Appends s to out (cap bytes) percent-encoded but for unreserved
 * bytes: a query argument's value. */
static void
query_value(char *out, size_t cap, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(out);

	for (; *s != '\0' && n + 4 < cap; s++) {
		unsigned char ch = (unsigned char)*s;
		if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' ||
		    ch == '~') {
			out[n++] = (char)ch;
			continue;
		}
		out[n++] = '%';
		out[n++] = hex[ch >> 4];
		out[n++] = hex[ch & 15];
	}
	out[n] = '\0';
}

/* The detail of a scan release the broker did not answer with a value:
 * its own reason when known, else by status (constant strings). */
static const char *
scan_refusal(int status, const char *err)
{
	static const char *const known[] = { "job_not_running", "not_bound",
		"unknown_secret", "issuer_scan", "broker_stopping",
		"secret_unavailable", "unknown_job", "scan_set_cap",
		"secret_unsealable" };

	for (size_t i = 0; err != NULL && i < sizeof(known) / sizeof(known[0]);
	     i++)
		if (strcmp(err, known[i]) == 0)
			return known[i];
	return status == 0  ? "no_answer"
	    : status == 503 ? "broker_unavailable"
	    : status == 200 ? "no_value"
			    : "broker_refused";
}

static int issued_to(struct pconn *c, const char *secret);

/* Whether e is a value of a scan set: {"value": 1 to INJECT_VALUE_MAX
 * bytes, "version": an integer[, "expires": unix seconds]}. */
static bool
scan_value_ok(const json_t *e)
{
	const json_t *v = json_object_get(e, "value");
	const json_t *x = json_object_get(e, "expires");

	return json_is_string(v) && json_string_length(v) > 0 &&
	    json_string_length(v) <= INJECT_VALUE_MAX &&
	    json_is_integer(json_object_get(e, "version")) &&
	    (x == NULL || json_is_integer(x));
}

/* One value of secret's scan set into c's job's set, scan-only: the
 * current version of a static secret among its own values (as before
 * the sets), an earlier one borrowed; an issuer's credential kept
 * proxy-wide for the scan (issued_share: every job guarded there scans
 * for it) and borrowed by c's job at the end (issued_to). 0, or -1 when
 * refused (c answered). */
static int
scan_value_put(struct pconn *c, const char *secret, int64_t current,
    bool issued, const json_t *e)
{
	const char *v = json_string_value(json_object_get(e, "value"));
	size_t len = json_string_length(json_object_get(e, "value"));
	int64_t version = json_integer_value(json_object_get(e, "version"));
	int64_t now = mono_s(), added;

	if (issued) {
		int64_t exp = json_integer_value(json_object_get(e, "expires"));
		int64_t left = exp - (int64_t)time(NULL);
		if (exp != 0 && left <= 0)
			return 0; /* dead at its issuer already */
		if (issued_share(c, secret, v, len, exp != 0 ? now + left : 0) <
		    0) {
			deny_unavailable(c, "guard_unavailable", "issued_cap",
			    2);
			return -1;
		}
		return 0;
	}
	v = secret_part(v, &len);
	if (version == current)
		added = reflect_set_put_scan(&c->job->released, secret, version,
		    v, len, now, 0);
	else
		added = reflect_set_put_borrowed(&c->job->released, secret,
		    version, v, len, now, 0);
	if (added == -ENOSPC) {
		deny(c, "inject", "released_values_cap");
		return -1;
	}
	if (added < 0) {
		deny_unavailable(c, "guard_unavailable", "out_of_memory", 2);
		return -1;
	}
	if (added > 0)
		released_to_all(c, secret, v, len, true);
	return 0;
}

/* The broker's answer to a scan release of secret for c's request: its
 * scan set ("values": a static secret's current and earlier versions,
 * an issuer's every live credential; an older broker's "value" alone)
 * joins the job's set, scan-only (never the injection cache, never a
 * header), every answer of the job being read scans for it, and the
 * request goes on to the guard again; anything else, or a set not whole,
 * refuses it, nothing sent. */
static void
scan_answer(struct pconn *c, const char *secret, int64_t asked_ms, int status,
    json_t *body)
{
	const json_t *values = json_object_get(body, "values");
	const json_t *v = json_object_get(body, "value"), *e;
	const char *source = json_string_value(json_object_get(body, "source"));
	bool issued = source != NULL && strcmp(source, "static") != 0;
	json_t *one = NULL;
	size_t i;

	if (status == 200 && !json_is_array(values) && !issued)
		values = one = json_pack("[{s:O, s:O}]", "value", v, "version",
		    json_object_get(body, "version"));
	bool whole = status == 200 && json_is_array(values);
	json_array_foreach(values, i, e) whole = whole && scan_value_ok(e);
	if (!whole) {
		json_decref(one);
		deny_unavailable(c, "guard_unavailable",
		    scan_refusal(status,
			json_string_value(json_object_get(body, "error"))),
		    2);
		return;
	}
	int64_t version = json_integer_value(json_object_get(body, "version"));
	json_array_foreach(values, i, e)
	{
		if (scan_value_put(c, secret, version, issued, e) < 0) {
			json_decref(one);
			return;
		}
	}
	if (issued && issued_to(c, secret) < 0) {
		json_decref(one);
		return;
	}
	/* A broker behind the list (a secret deleted and PUT again starts
	 * over at 1) would be asked again at once, and again, until the
	 * next list read: refused once instead. */
	const struct guard_binding *b = guard_binding_of(&c->p->guard, secret);
	if (!issued && b != NULL && version < b->version) {
		json_decref(one);
		deny_unavailable(c, "guard_unavailable", "version_behind", 1);
		return;
	}
	/* An issuer's set is kept with the list read it was asked after
	 * and its own generation (the list's scan_gen for this very set). */
	const json_t *gen = json_object_get(body, "scan_gen");
	if (issued)
		guard_asked_put(&c->job->asked, secret, asked_ms,
		    json_is_integer(gen), json_integer_value(gen));
	else
		guard_asked_set(&c->job->asked_versions, secret, version);
	c->p->scan_releases++;
	log_info("secret_scan_released", "{s:s, s:s, s:s, s:I, s:I}", "job",
	    c->job->id, "host", c->host, "secret", secret, "version",
	    (json_int_t)version, "values", (json_int_t)json_array_size(values));
	json_decref(one);
	if (c->up == NULL) {
		fail(c, 502, "upstream_closed"); /* gone while it waited */
		return;
	}
	send_request(c);
}

/* A scan release of b's secret for c's job, c waiting on it (one in
 * flight a job and secret, as releases are): 1 while it waits, -1 when
 * refused (c answered). */
static int
scan_release(struct pconn *c, const struct guard_binding *b)
{
	struct release_flight *f;
	char path[768];

	c->state = CS_TOKEN; /* waits on the broker, as a release does */
	for (f = c->job->flights; f != NULL; f = f->next)
		if (f->scan && strcmp(f->secret, b->secret) == 0)
			break;
	if (f != NULL) {
		if ((long long)f->nwaiters >= c->p->cfg.max_conns_per_job) {
			deny_unavailable(c, "guard_unavailable",
			    "release_waiters_cap", 1);
			return -1;
		}
		LIST_INSERT_HEAD(&f->waiters, c, flight_link);
		c->flight = f;
		f->nwaiters++;
		return 1;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		deny_unavailable(c, "guard_unavailable", "out_of_memory", 2);
		return -1;
	}
	f->job = c->job;
	f->scan = true;
	f->read_ms = c->p->guard.read_ms;
	snprintf(f->secret, sizeof(f->secret), "%s", b->secret);
	LIST_INIT(&f->waiters);
	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/%s/release?purpose=scan&host=", c->job->id,
	    b->secret);
	query_value(path, sizeof(path), c->host);
	if (c->addr[0] != '\0') {
		snprintf(path + strlen(path), sizeof(path) - strlen(path),
		    "&addr=");
		query_value(path, sizeof(path), c->addr);
	}
	int r = brokerclient_release(c->p->bclient, c->job->id, path,
	    on_release, f, &f->call);
	if (r < 0) {
		free(f);
		deny_unavailable(c, "guard_unavailable",
		    r == -EBUSY ? "releases_busy" : "broker_unavailable", 1);
		return -1;
	}
	f->next = c->job->flights;
	c->job->flights = f;
	LIST_INSERT_HEAD(&f->waiters, c, flight_link);
	c->flight = f;
	f->nwaiters = 1;
	return 1;
}

/* A job's set borrows every credential kept here (redteam3 #4: in the
 * job's own 32 places, the 33rd job of one issuer secret was refused). */
_Static_assert(REFLECT_BORROWED_MAX >= GUARD_ISSUED_MAX,
    "a job's set holds every issuer credential kept for the scan");

/* Every issuer credential of secret the proxy released, for any job,
 * into c's job's set, borrowed (not counted among its own values): 0,
 * or -1 when refused (c answered). */
static int
issued_to(struct pconn *c, const char *secret)
{
	struct guard *g = &c->p->guard;
	int64_t now = mono_s();

	guard_issued_expire(g, now);
	for (size_t i = 0; i < g->nissued; i++) {
		const struct guard_issued *v = &g->issued[i];
		if (strcmp(v->secret, secret) != 0)
			continue;
		int r = reflect_set_put_borrowed(&c->job->released, secret, 0,
		    v->value, v->len, now, v->expires);
		if (r == -ENOSPC) {
			deny(c, "inject", "released_values_cap");
			return -1;
		}
		if (r < 0) {
			deny_unavailable(c, "guard_unavailable",
			    "out_of_memory", 2);
			return -1;
		}
		if (r > 0)
			released_to_all(c, secret, v->value, v->len, true);
	}
	return 0;
}

/* The detail of a report the broker refused otherwise than 409
 * bindings_cap (constant strings). */
static const char *
tell_refusal(const char *err)
{
	static const char *const known[] = { "job_not_running", "not_injected",
		"unknown_secret", "unknown_job", "invalid_request" };

	for (size_t i = 0; err != NULL && i < sizeof(known) / sizeof(known[0]);
	     i++)
		if (strcmp(err, known[i]) == 0)
			return known[i];
	return "broker_refused";
}

/* Refuses c's injected request of secret: the broker keeps no more
 * places of it (detail "refused": its 409 now; "refused_lately": one
 * remembered). Nothing was sent. */
static void
bindings_cap_refuse(struct pconn *c, const char *secret, const char *detail)
{
	char msg[320];

	c->d.allow = false;
	c->d.reason = "bindings_cap";
	c->d.detail = detail;
	snprintf(msg, sizeof(msg),
	    "cordon-proxy refused this request: bindings_cap: the broker "
	    "binds no more places of secret %s (its caps), so nothing was "
	    "sent there; an operator must make room (docs/credentials.md, "
	    "Bindings)",
	    secret);
	answer(c, 403, "bindings_cap", "denied", msg);
}

/* One waiter of a report, c, with the broker's answer (status, err). */
static void
tell_answer(struct pconn *c, const char *secret, int status, const char *err)
{
	if (status == 200) {
		if (c->up == NULL) {
			fail(c, 502, "upstream_closed"); /* gone meanwhile */
			return;
		}
		send_request(c);
		return;
	}
	if (status == 409 && err != NULL && strcmp(err, "bindings_cap") == 0) {
		bindings_cap_refuse(c, secret, "refused");
		return;
	}
	if (status == 0 || status >= 500) {
		deny_unavailable(c, "binding_unreported",
		    status == 0 ? "no_answer" : "broker_unavailable",
		    RETRY_UNAVAILABLE_S);
		return;
	}
	deny(c, "binding_unreported", tell_refusal(err));
}

/* The broker's answer to the report t: the address is the guard's at a
 * 200 (every open connection there not scanning for it ended), a 409
 * bindings_cap remembered (guard_refused_put), then every waiter goes on
 * or is refused with it. */
static void
on_bind_told(void *arg, int status, json_t *body)
{
	struct guard_tell *t = arg;
	struct proxy *p = t->p;
	struct guard_local *l;
	struct pconn *c;
	const char *err = json_string_value(json_object_get(body, "error"));
	char secret[sizeof(t->secret)];

	t->used = false;
	memcpy(secret, t->secret, sizeof(secret));
	if (status == 200) {
		if (guard_local_add(&p->guard, t->secret, t->job, t->addr,
			&l) == 1)
			conn_guard_sweep(p);
	} else if (status == 409 && err != NULL &&
	    strcmp(err, "bindings_cap") == 0) {
		(void)guard_refused_put(&p->guard, t->secret, t->addr,
		    monotonic_ms());
		log_warn("binding_refused", "{s:s, s:s, s:s, s:s, s:i}",
		    "secret", t->secret, "addr", t->addr, "job", t->job,
		    "error", "bindings_cap", "refused_for_s",
		    GUARD_REFUSED_MS / 1000);
	} else {
		log_warn("binding_unreported", "{s:s, s:s, s:i, s:s, s:s}",
		    "secret", t->secret, "addr", t->addr, "status", status,
		    "error", err != NULL ? err : "(none)", "effect",
		    "its injected requests were refused, nothing sent");
	}
	while ((c = LIST_FIRST(&t->waiters)) != NULL) {
		LIST_REMOVE(c, tell_link);
		c->tell = NULL;
		tell_answer(c, secret, status, err);
	}
}

/* Tells the broker that job's injected request of secret is to go to
 * addr (normalised): the report's slot, its call started, or NULL when
 * none is free or the call could not start. */
static struct guard_tell *
bind_tell(struct proxy *p, const char *secret, const char *job,
    const char *addr)
{
	struct guard_tell *t = NULL;
	json_t *q;

	for (size_t i = 0; i < GUARD_TELLS && t == NULL; i++)
		if (!p->tells[i].used)
			t = &p->tells[i];
	if (t == NULL)
		return NULL;
	q = json_pack("{s:s, s:s, s:s}", "secret", secret, "job", job, "addr",
	    addr);
	t->p = p;
	snprintf(t->secret, sizeof(t->secret), "%s", secret);
	snprintf(t->job, sizeof(t->job), "%s", job);
	snprintf(t->addr, sizeof(t->addr), "%s", addr);
	LIST_INIT(&t->waiters);
	if (q == NULL ||
	    brokerclient_call(p->bclient, "POST", "/v1/bindings", q,
		on_bind_told, t) == NULL) {
		json_decref(q);
		return NULL;
	}
	json_decref(q);
	t->used = true;
	p->bindings_told++;
	return t;
}

/* Whether j's set misses b's secret: a static one at b's version, or a
 * credential of an issuer's kept here for the scan. */
static bool
guard_misses(const struct proxy *p, const struct pjob *j,
    const struct guard_binding *b)
{
	if (b->is_static)
		return !scans_for(j, b->secret, b->version);
	for (size_t i = 0; i < p->guard.nissued; i++) {
		const struct guard_issued *v = &p->guard.issued[i];
		size_t k;
		if (strcmp(v->secret, b->secret) != 0)
			continue;
		for (k = 0; k < j->released.n; k++)
			if (j->released.v[k].len == v->len &&
			    memcmp(j->released.v[k].value, v->value, v->len) ==
				0)
				break;
		if (k == j->released.n)
			return true;
	}
	return false;
}

void
conn_guard_sweep(struct proxy *p)
{
	const struct guard_binding *m[GUARD_MATCH_MAX];
	struct pjob *j;
	struct pconn *x, *next;

	TAILQ_FOREACH(j, &p->jobs, link)
	{
		for (x = TAILQ_FIRST(&j->conns); x != NULL; x = next) {
			next = TAILQ_NEXT(x, link);
			if (x->broker_route || x->addr[0] == '\0' ||
			    (x->state != CS_EXCHANGE && x->state != CS_TUNNEL))
				continue;
			const char *host =
			    x->state == CS_TUNNEL && x->thost[0] != '\0'
			    ? x->thost
			    : x->host;
			size_t n = guard_match(&p->guard, host, x->addr, m), i;
			for (i = 0; i < n; i++)
				if (x->state == CS_TUNNEL ||
				    guard_misses(p, j, m[i]))
					break;
			if (i == n)
				continue;
			/* Bytes there went unscanned or unread so far: ended
			 * (a passthrough or an upgrade, or an exchange that
			 * went up before the binding). */
			snprintf(x->guard, sizeof(x->guard), "%s",
			    m[i]->secret);
			x->d.guard = x->guard;
			x->d.detail = "bound_midway";
			up_drop(x);
			conn_finish(x);
		}
	}
}

/*
 * c's injected request of secret is to go to c->addr: an address the
 * list (or the broker's 200 since) holds for it goes at once (0); any
 * other is told to the broker first and c waits for its answer (1), on
 * the report in flight for the same secret and address if there is one;
 * one the broker refused lately is refused again without asking, and a
 * report that cannot start is 503 (-1, c answered).
 */
static int
guard_report(struct pconn *c, const char *secret)
{
	struct guard *g = &c->p->guard;
	char addr[GUARD_ADDR_MAX];
	struct guard_tell *t = NULL;
	int r = guard_addr_known(g, secret, c->addr);

	if (r == 1)
		return 0;
	if (r < 0 || guard_addr_normalise(c->addr, addr) < 0) {
		deny_unavailable(c, "binding_unreported", "bad_addr",
		    RETRY_UNAVAILABLE_S);
		return -1;
	}
	if (guard_refused_has(g, secret, addr, monotonic_ms())) {
		bindings_cap_refuse(c, secret, "refused_lately");
		return -1;
	}
	for (size_t i = 0; i < GUARD_TELLS && t == NULL; i++)
		if (c->p->tells[i].used &&
		    strcmp(c->p->tells[i].secret, secret) == 0 &&
		    strcmp(c->p->tells[i].addr, addr) == 0)
			t = &c->p->tells[i];
	if (t == NULL &&
	    (t = bind_tell(c->p, secret, c->job->id, addr)) == NULL) {
		deny_unavailable(c, "binding_unreported", "tells_busy",
		    RETRY_BUSY_S);
		return -1;
	}
	c->state = CS_TOKEN; /* waits on the broker, as a release does */
	LIST_INSERT_HEAD(&t->waiters, c, tell_link);
	c->tell = t;
	return 1;
}

/* Refuses c at a bound place it cannot read (detail "passthrough",
 * "upgrade"), b's secret named in the message. */
static void
guard_refuse(struct pconn *c, const struct guard_binding *b, const char *detail)
{
	char msg[256];

	c->d.allow = false;
	c->d.reason = "guarded";
	c->d.detail = detail;
	snprintf(c->guard, sizeof(c->guard), "%s", b->secret);
	c->d.guard = c->guard;
	/* A passthrough tunnel answered 200 already: the close is the
	 * answer. */
	if (c->state == CS_SNI || c->state == CS_HANDSHAKE ||
	    c->state == CS_TUNNEL ||
	    (c->tunnel && c->tunnel_tls == EGRESS_TLS_PASSTHROUGH)) {
		up_drop(c);
		conn_finish(c);
		return;
	}
	snprintf(msg, sizeof(msg),
	    "cordon-proxy refused this request: guarded: %s: secret %s is "
	    "injected at this host: its answers must be read",
	    detail, b->secret);
	answer(c, 403, "guarded", "denied", msg);
}

/* Whether the bindings' list is recent enough to judge by: else c is
 * refused 503 bindings_unavailable (false). */
static bool
guard_list_ok(struct pconn *c)
{
	if (guard_fresh(&c->p->guard, monotonic_ms(),
		3000 * c->p->cfg.bindings_refresh_s))
		return true;
	deny_unavailable(c, "bindings_unavailable", NULL, 2);
	return false;
}

/*
 * Before any byte of c's request goes upstream (at c->addr): when its
 * host or that address is at a secret's binding, the job must scan its
 * answers for the secret first, at its current version (a scan release,
 * or the issuer credentials kept here); an upgrade there is refused.
 * 0 to go on, 1 while a scan release is waited for (send_request is
 * called again with its answer), -1 when refused (c answered).
 */
static int
guard_gate(struct pconn *c)
{
	const struct guard_binding *m[GUARD_MATCH_MAX];
	size_t n;

	if (!guard_list_ok(c))
		return -1;
	n = guard_match(&c->p->guard, c->host, c->addr, m);
	if (n == 0)
		return 0;
	if (c->parser.req.upgrade && c->upgrade_ok) {
		guard_refuse(c, m[0], "upgrade");
		return -1;
	}
	c->guard[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!m[i]->is_static) {
			/* Every live credential at the broker, asked again
			 * once the list's scan_gen for it moved (an older
			 * broker's list: once a newer one was read). */
			if (guard_asked_stale(&c->job->asked, &c->p->guard,
				m[i]))
				return scan_release(c, m[i]);
			if (issued_to(c, m[i]->secret) < 0)
				return -1;
		} else if (!scans_for(c->job, m[i]->secret, m[i]->version) ||
		    guard_asked_due(&c->job->asked_versions, m[i]->secret,
			m[i]->version))
			return scan_release(c, m[i]);
		size_t at = strlen(c->guard);
		snprintf(c->guard + at, sizeof(c->guard) - at, "%s%s",
		    at > 0 ? "," : "", m[i]->secret);
	}
	c->d.guard = c->guard;
	c->p->guarded++;
	return 0;
}

/* A tunnel the proxy will not read (passthrough) to host, at addr when
 * known: refused when either is at a binding (true: c answered). */
static bool
guard_opaque(struct pconn *c, const char *host, const char *addr)
{
	const struct guard_binding *m[GUARD_MATCH_MAX];

	if (!guard_list_ok(c))
		return true;
	if (guard_match(&c->p->guard, host, addr, m) == 0)
		return false;
	guard_refuse(c, m[0], "passthrough");
	return true;
}

static void
on_introspect(void *arg, int status, json_t *body)
{
	struct pconn *c = arg;

	c->call = NULL;
	c->introspect_down = status == 0 || status == 503;
	const char *why = token_verdict(c, status, body);
	tokens_judged(&c->tokens, c->tokens.judging, why);
	if (why == NULL) {
		token_good(c, c->tokens.judging,
		    json_string_value(json_object_get(body, "capability")),
		    json_object_get(body, "params"));
		token_keep(c, c->tokens.judging, body);
	}
	judge_tokens_next(c);
}

/* A token refused (why): 403 token, but 503 with Retry-After when the
 * broker could not be asked (no answer, its 503): the request may pass
 * once it answers; it is refused all the same (fail closed). */
static void
token_deny(struct pconn *c, const char *why)
{
	if (c->introspect_down && strcmp(why, "introspection_failed") == 0)
		deny_unavailable(c, "token", why, RETRY_UNAVAILABLE_S);
	else
		deny(c, "token", why);
}

/* The head's tokens, one broker call at a time; on the first refusal the
 * rest are told to the broker (for the canaries) and the request
 * refused. */
static void
judge_tokens_next(struct pconn *c)
{
	const char *why = tokens_refusal(&c->tokens);

	if (why == NULL && tokens_ask_next(c, on_introspect))
		return;
	why = tokens_refusal(&c->tokens);
	if (why != NULL) {
		tokens_tell_rest(c);
		token_deny(c, why);
		return;
	}
	inject_then_upstream(c);
}

/* Every token shape in the head, request line and every field, is
 * judged (a CONNECT's too); then the request goes on, or is refused. */
static void
judge_head_tokens(struct pconn *c)
{
	if (tokens_collect(&c->tokens, c->head, c->head_len) < 0) {
		tokens_tell_rest(c);
		deny(c, "token", "too_many_tokens");
		return;
	}
	c->tokens.judging = 0;
	c->introspect_down = false;
	c->state = CS_TOKEN;
	judge_tokens_next(c);
}

/* A decision's kind: how the request came (docs/egress.md, The decision
 * log). The launcher's first line says it for the capture's, the
 * resolver's and the namespace's connections; nothing the job sends can
 * (its bytes only ever follow the relay's line). */
static const char *
request_kind(const struct pconn *c, bool connect)
{
	switch (c->origin) {
	case HTTP1_ORIGIN_CAPTURE_HTTP:
		return "capture";
	case HTTP1_ORIGIN_CAPTURE:
		return c->tunnel ? "mitm" : "capture";
	case HTTP1_ORIGIN_DNS:
		return "dns";
	case HTTP1_ORIGIN_DIRECT_TCP:
	case HTTP1_ORIGIN_DIRECT_UDP:
		return "direct";
	case HTTP1_ORIGIN_RELAY:
		break;
	}
	return c->tunnel ? "mitm" : connect ? "connect" : "http";
}

/* A request for cordon.local, the proxy itself (denials.h): answered
 * here from the job's own ring, never judged as egress nor forwarded,
 * and no decision line of its own. */
static void
answer_local(struct pconn *c)
{
	const struct http1_request *r = &c->parser.req;
	char method[32], path[64] = "";
	struct buf out = BUF_INIT(1 << 20);

	snprintf(method, sizeof(method), "%.*s", (int)r->method.len,
	    c->head + r->method.off);
	if (!r->connect)
		snprintf(path, sizeof(path), "%.*s", (int)r->path.len,
		    c->head + r->path.off);
	if (denials_answer(&c->job->denials, c->job->id, method, path,
		r->connect, &out) == 0)
		evbuffer_add(bufferevent_get_output(c->cl), out.data, out.len);
	buf_free(&out);
	conn_finish(c);
}

/* Judges a request head (verdict.c) and carries the verdict out: a
 * refusal, or the request's tokens next. */
static void
judge(struct pconn *c)
{
	const struct http1_request *r = &c->parser.req;
	char raw[EGRESS_HOST_MAX + 3];
	struct verdict v;

	if ((!c->tunnel || c->origin == HTTP1_ORIGIN_CAPTURE_HTTP) &&
	    denials_is_local(c->head + r->host.off, r->host.len)) {
		answer_local(c);
		return;
	}
	decision_begin(c, request_kind(c, r->connect));
	c->rule = -1;
	if (r->method.len >= sizeof(c->method) || r->host.len >= sizeof(raw)) {
		deny(c, "malformed", "too_long");
		return;
	}
	memcpy(c->method, c->head + r->method.off, r->method.len);
	c->method[r->method.len] = '\0';
	c->d.method = c->method;
	memcpy(raw, c->head + r->host.off, r->host.len);
	raw[r->host.len] = '\0';
	c->d.host = raw; /* until normalised: a deny logs it as sent */
	c->d.port = r->port;
	if (!r->connect) {
		/* The head is not a string: copy the span, then end it. */
		c->path = malloc(r->path.len + 1);
		if (c->path != NULL) {
			memcpy(c->path, c->head + r->path.off, r->path.len);
			c->path[r->path.len] = '\0';
		}
		if (c->path == NULL) {
			deny(c, "malformed", "out_of_memory");
			return;
		}
		c->d.path = c->path[0] != '\0' ? c->path : "/";
	}
	c->head_req = strcmp(c->method, "HEAD") == 0;
	c->keep_alive = r->keep_alive;

	struct verdict_request rq = { .method = c->method,
		.host = raw,
		.port = r->port,
		.path = r->connect ? NULL : c->d.path,
		.has_query = r->has_query,
		.connect = r->connect,
		.upgrade = r->upgrade,
		.upgrade_websocket = r->upgrade_websocket,
		.tunnel_host = c->tunnel ? c->thost : NULL,
		.tunnel_port = c->tport };
	struct verdict_state st = { .feed_ok =
					brokerclient_feed_ok(c->p->bclient),
		.job_closed = c->job->closed };
	verdict_head(&rq, &c->job->rules, &st, &v);
	if (v.host[0] != '\0') {
		snprintf(c->host, sizeof(c->host), "%s", v.host);
		c->d.host = c->host;
	}
	c->rule = v.rule;
	c->d.rule = v.rule;
	c->broker_route = v.broker_route;
	c->upgrade_ok = v.upgrade_ok;
	if (c->origin == HTTP1_ORIGIN_DIRECT_TCP ||
	    c->origin == HTTP1_ORIGIN_DIRECT_UDP ||
	    c->origin == HTTP1_ORIGIN_DNS) {
		/* Refused already, by the job's resolver or by its namespace
		 * (nothing listens there): logged with the rules' reason,
		 * never carried. */
		const char *proto = c->origin == HTTP1_ORIGIN_DIRECT_UDP ? "udp"
		    : c->origin == HTTP1_ORIGIN_DIRECT_TCP               ? "tcp"
									 : NULL;
		/* Past the launcher's 16 at once, the refusals it could not
		 * tell one by one come as one line: the last of them, with
		 * how many (these connections carry no byte of the job's). */
		const struct http1_header *rep =
		    http1_find_header(&c->parser.req, c->head, "Cordon-Repeat");
		uint64_t n = 0;
		for (size_t i = 0; rep != NULL && i < rep->value.len && i < 9 &&
		     c->head[rep->value.off + i] >= '0' &&
		     c->head[rep->value.off + i] <= '9';
		     i++)
			n = n * 10 +
			    (uint64_t)(c->head[rep->value.off + i] - '0');
		if (n > 1)
			c->d.count = n;
		deny(c, v.reason != NULL ? v.reason : "no_rule",
		    v.reason != NULL && v.detail != NULL ? v.detail : proto);
		return;
	}
	if (v.reason != NULL) {
		deny(c, v.reason, v.detail);
		return;
	}
	if (c->origin == HTTP1_ORIGIN_CAPTURE_HTTP &&
	    c->job->rules.rule[c->rule].tls != EGRESS_TLS_NONE) {
		deny(c, "tls", "rule_wants_tls"); /* plain HTTP to a TLS rule */
		return;
	}
	c->tokens.no_audience =
	    c->rule >= 0 && c->job->rules.rule[c->rule].audience[0] == '\0';
	judge_head_tokens(c);
}

/* --- the CONNECT answer and the tunnels ----------------------------------- */

/* Terminates the client's TLS with the job CA's leaf for the host. */
static void
start_mitm(struct pconn *c)
{
	const char *why = NULL;
	struct bufferevent *f;

	c->sni.want = c->thost;
	f = tls_mitm(c->p, c->cl, c->job->ca, c->thost, &c->sni, &why);
	if (f == NULL) {
		c->state = CS_HANDSHAKE;
		deny(c, "tls", why);
		return;
	}
	c->cl = f;
	bufferevent_setcb(c->cl, on_cl_read, on_cl_write, on_cl_event, c);
	bufferevent_setwatermark(c->cl, EV_READ, 0, READ_HIGH);
	bufferevent_setwatermark(c->cl, EV_WRITE, FLOW_HIGH / 2, 0);
	bufferevent_enable(c->cl, EV_READ | EV_WRITE);
	c->state = CS_HANDSHAKE;
	arm(c, c->p->cfg.head_timeout_ms);
}

static void
answer_connect(struct pconn *c)
{
	evbuffer_add_printf(bufferevent_get_output(c->cl),
	    "HTTP/1.1 200 Connection Established\r\n\r\n");
	c->tunnel = true;
	c->d.status = 200;
	request_reset(c);
	if (c->tunnel_tls == EGRESS_TLS_TERMINATE) {
		decision_log(c);
		http1_parser_init(&c->parser, HTTP1_MODE_ORIGIN);
		start_mitm(c);
		return;
	}
	/* Passthrough: the decision is logged when the tunnel ends, with its
	 * bytes; the ClientHello decides whether it starts. */
	c->state = CS_SNI;
	arm(c, c->p->cfg.head_timeout_ms);
	if (evbuffer_get_length(bufferevent_get_input(c->cl)) > 0)
		on_cl_read(c->cl, c);
}

static void
try_sni(struct pconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t n = evbuffer_get_length(in);
	char sni[SNI_MAX + 1], norm[EGRESS_HOST_MAX + 1];
	int r;

	if (n > SNI_READ_MAX)
		n = SNI_READ_MAX;
	r = sni_parse(evbuffer_pullup(in, (ssize_t)n), n, sni);
	if (r == -EAGAIN && n < SNI_READ_MAX)
		return;
	c->d.detail = "opaque";
	if (r == 0) {
		snprintf(c->sni.got, sizeof(c->sni.got), "%s", sni);
		c->d.sni = c->sni.got;
	}
	if (r == -EAGAIN || r == -EBADMSG) {
		deny(c, "malformed", "not_a_client_hello");
		return;
	}
	if (r == -ENOENT) {
		deny(c, "sni_mismatch", "no_sni");
		return;
	}
	if (egress_host_normalise(sni, strlen(sni), norm) < 0 ||
	    strcmp(norm, c->thost) != 0) {
		deny(c, "sni_mismatch", NULL);
		return;
	}
	snprintf(c->host, sizeof(c->host), "%s", c->thost);
	c->rule = c->tunnel_rule;
	go_upstream(c);
}

/* --- the upstream --------------------------------------------------------- */

static void
on_dns(int err, struct evutil_addrinfo *ai, void *arg)
{
	struct pconn *c = arg;

	if (err == EVUTIL_EAI_CANCEL) {
		if (ai != NULL)
			evutil_freeaddrinfo(ai);
		return;
	}
	/* The answer may come before evdns_getaddrinfo returned: take it on
	 * the next turn of the loop, where c may be closed safely. */
	c->dns = NULL;
	c->ai = ai;
	c->ai_err = err;
	c->ai_ready = true;
	evtimer_del(c->timer);
	arm(c, 0);
}

static void
up_callbacks(struct pconn *c)
{
	bufferevent_setcb(c->up, on_up_read, on_up_write, on_up_event, c);
	bufferevent_setwatermark(c->up, EV_READ, 0, READ_HIGH);
	bufferevent_setwatermark(c->up, EV_WRITE, FLOW_HIGH / 2, 0);
}

/* sa as the decision line's addr ("a.b.c.d:port", "[v6]:port"). */
static void
addr_text(struct pconn *c, const struct sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(c->addr, sizeof(c->addr), "[%s]:%u", ip,
		    ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const void *)sa;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(c->addr, sizeof(c->addr), "%s:%u", ip,
		    ntohs(a->sin_port));
	}
}

/*
 * Starts c's upstream connection to sa: 0 when it is under way (how it
 * ends is told to on_up_event) or answered here (no TLS object, no
 * memory): c may be gone then. -errno when the connect failed at once
 * (out of descriptors, no route, refused by the kernel): libevent then
 * started nothing and will call nothing, the upstream is freed here,
 * once, nothing is answered and c is as it was.
 */
static int
connect_to(struct pconn *c, const struct sockaddr *sa, socklen_t len)
{
	struct bufferevent *up;
	int err;

	addr_text(c, sa);
	if (c->up_tls) {
		up = tls_upstream(c->p, c->host);
		if (up == NULL) {
			fail(c, 502, "ssl_failed");
			return 0;
		}
	} else {
		up = bufferevent_socket_new(c->p->base, -1,
		    BEV_OPT_CLOSE_ON_FREE);
	}
	if (up == NULL) {
		fail(c, 502, "out_of_memory");
		return 0;
	}
	c->up = up;
	up_callbacks(c);
	c->state = CS_CONNECT;
	arm(c, c->p->cfg.connect_timeout_ms);
	errno = 0;
	if (bufferevent_socket_connect(up, sa, (int)len) == 0)
		return 0;
	err = errno != 0 ? errno : EIO;
	up_drop(c);
	return -err;
}

/* A connect's errno as its name, for the answer and the log. */
static const char *
connect_errno_name(int err)
{
	static const struct {
		int err;
		const char *name;
	} names[] = { { EMFILE, "EMFILE" }, { ENFILE, "ENFILE" },
		{ ENOBUFS, "ENOBUFS" }, { ENOMEM, "ENOMEM" },
		{ ENETUNREACH, "ENETUNREACH" },
		{ EHOSTUNREACH, "EHOSTUNREACH" },
		{ EADDRNOTAVAIL, "EADDRNOTAVAIL" },
		{ EAFNOSUPPORT, "EAFNOSUPPORT" }, { EACCES, "EACCES" },
		{ EPERM, "EPERM" }, { EINVAL, "EINVAL" },
		{ ECONNREFUSED, "ECONNREFUSED" } };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].name;
	return "EIO";
}

/* The proxy's own want (descriptors, buffers), not the upstream's: no
 * other address would do better, and a retry soon may pass. */
static bool
connect_starved(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	    err == ENOMEM;
}

/*
 * A connect that failed at once with err, told now rather than at
 * connect_timeout_ms (docs/egress.md): the proxy out of descriptors or
 * buffers is 503 out_of_descriptors with Retry-After (1 s), anything
 * else 502 connect_failed; the message names the errno, and so does a
 * warn line (one per burst).
 */
static void
connect_failed(struct pconn *c, int err)
{
	bool starved = connect_starved(err);
	char msg[160];

	log_burst(LEVEL_WARN, "connect_failed", "{s:s, s:s, s:s}", "job",
	    c->job->id, "addr", c->addr, "error", connect_errno_name(err));
	c->d.error = true;
	c->d.detail = starved ? "out_of_descriptors" : "connect_failed";
	snprintf(msg, sizeof(msg), "the upstream could not be reached: %s (%s)",
	    c->d.detail, connect_errno_name(err));
	if (c->state == CS_TUNNEL || c->state == CS_SNI ||
	    (c->tunnel && c->tunnel_tls == EGRESS_TLS_PASSTHROUGH)) {
		c->d.status = starved ? 503 : 502;
		conn_finish(c);
		return;
	}
	answer_retry(c, starved ? 503 : 502, NULL, "upstream", msg,
	    starved ? RETRY_BUSY_S : 0);
}

/* The address after a (of the list a was in) the rule may reach and no
 * protected endpoint is, or NULL. */
static const struct evutil_addrinfo *
next_address(struct pconn *c, const struct evutil_addrinfo *a,
    const struct egress_rule *rule)
{
	socklen_t blen;
	const char *reason, *detail;

	for (a = a->ai_next; a != NULL; a = a->ai_next) {
		a = verdict_address(a, rule,
		    (const struct sockaddr *)&c->p->self_addr,
		    brokerclient_addr(c->p->bclient, &blen), &reason, &detail);
		if (a == NULL ||
		    !egress_protected_has(&c->p->protected, a->ai_addr))
			return a;
	}
	return NULL;
}

static void
dns_done(struct pconn *c)
{
	struct evutil_addrinfo *ai = c->ai;
	const struct egress_rule *rule = &c->job->rules.rule[c->rule];

	c->ai = NULL;
	c->ai_ready = false;
	if (c->ai_err != 0 || ai == NULL) {
		if (ai != NULL)
			evutil_freeaddrinfo(ai);
		fail(c, 502, "dns_failed");
		return;
	}
	/* The first address the rule may reach; the connection goes to it
	 * and to nothing resolved again. */
	socklen_t blen;
	const char *reason, *detail;
	const struct evutil_addrinfo *a =
	    verdict_address(ai, rule, (const struct sockaddr *)&c->p->self_addr,
		brokerclient_addr(c->p->bclient, &blen), &reason, &detail);
	if (a == NULL) {
		/* The address refused is the line's addr, so that the rule
		 * offered for it can name it (allow_cidrs, denials.h). */
		for (a = ai; strcmp(reason, "private_addr") == 0 && a != NULL;
		     a = a->ai_next)
			if (a->ai_family == AF_INET ||
			    a->ai_family == AF_INET6) {
				addr_text(c, a->ai_addr);
				break;
			}
		evutil_freeaddrinfo(ai);
		deny(c, reason, detail);
		return;
	}
	/* A fleet's broker, the hatch, serve, PostgreSQL: never, whatever
	 * allow_cidrs says (operations.md). */
	if (egress_protected_has(&c->p->protected, a->ai_addr)) {
		addr_text(c, a->ai_addr);
		evutil_freeaddrinfo(ai);
		deny(c, "protected_endpoint", NULL);
		return;
	}
	/* One that fails at once (no route to it, its family not set up
	 * here) gives way to the next, as a resolver's client would; out of
	 * descriptors, none would do better. */
	int r = connect_to(c, a->ai_addr, (socklen_t)a->ai_addrlen);
	while (r < 0 && !connect_starved(-r) &&
	    (a = next_address(c, a, rule)) != NULL)
		r = connect_to(c, a->ai_addr, (socklen_t)a->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (r < 0)
		connect_failed(c, -r);
}

static void send_request(struct pconn *c);

static void
go_upstream(struct pconn *c)
{
	const struct http1_request *r = &c->parser.req;
	bool opening = !c->tunnel && r->connect;
	char key[sizeof(c->up_key)], port[8];
	uint16_t pnum;

	if (opening) {
		const struct egress_rule *rule = &c->job->rules.rule[c->rule];
		c->tunnel_rule = c->rule;
		c->tunnel_tls = rule->tls;
		snprintf(c->thost, sizeof(c->thost), "%s", c->host);
		c->tport = r->port;
		/* Passthrough: the ClientHello, after the 200, says whether
		 * the tunnel may start; only then is the name resolved. */
		if (c->tunnel_tls == EGRESS_TLS_PASSTHROUGH) {
			/* Unread: never to a place a secret is bound to. */
			if (!guard_opaque(c, c->host, NULL))
				answer_connect(c);
			return;
		}
	}
	/* A terminated tunnel's upstream is connected, its certificate
	 * checked, before the CONNECT is answered. */
	pnum = c->tunnel || opening ? c->tport : r->port;
	c->up_tls =
	    (c->tunnel || opening) && c->tunnel_tls == EGRESS_TLS_TERMINATE;
	snprintf(key, sizeof(key), "%s:%u:%d", c->host, pnum, c->up_tls);
	if (c->up != NULL && c->up_idle && strcmp(key, c->up_key) == 0) {
		send_request(c);
		return;
	}
	up_release(c);
	snprintf(c->up_key, sizeof(c->up_key), "%s", key);
	if (!c->broker_route &&
	    (c->up = pool_take(&c->job->pool, key, c->addr, sizeof(c->addr))) !=
		NULL) {
		up_callbacks(c);
		c->up_idle = true;
		if (opening)
			answer_connect(c);
		else
			send_request(c);
		return;
	}
	if (c->broker_route) {
		socklen_t len;
		const struct sockaddr *sa =
		    brokerclient_addr(c->p->bclient, &len);
		int rc = connect_to(c, sa, len);
		if (rc < 0)
			connect_failed(c, -rc);
		return;
	}
	struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP };
	snprintf(port, sizeof(port), "%u", pnum);
	c->state = CS_DNS;
	c->ai_ready = false;
	arm(c, DNS_TIMEOUT_MS);
	struct evdns_getaddrinfo_request *q =
	    evdns_getaddrinfo(c->p->dns, c->host, port, &hints, on_dns, c);
	if (!c->ai_ready)
		c->dns = q;
}

static void pump_body(struct pconn *c);
static void pump_response(struct pconn *c);

/* libevent's cleanup of a copy it held by reference (up_add_wiped): the
 * bytes are wiped before they are freed. */
static void
wipe_ref(const void *data, size_t len, void *extra)
{
	(void)extra;
	explicit_bzero((void *)(uintptr_t)data, len);
	free((void *)(uintptr_t)data);
}

/* Appends p[0..n) to the upstream's output as a copy libevent holds by
 * reference and wipe_ref wipes once it is written or dropped (the copy
 * evbuffer_add makes is freed unwiped). 0 or -ENOMEM. */
static int
up_add_wiped(struct pconn *c, const char *p, size_t n)
{
	char *copy = malloc(n);

	if (copy == NULL)
		return -ENOMEM;
	memcpy(copy, p, n);
	if (evbuffer_add_reference(bufferevent_get_output(c->up), copy, n,
		wipe_ref, NULL) < 0) {
		explicit_bzero(copy, n);
		free(copy);
		return -ENOMEM;
	}
	return 0;
}

static void
send_request(struct pconn *c)
{
	const struct http1_request *r = &c->parser.req;
	socklen_t blen;
	struct forward_target t = { .host = c->host,
		.port = c->tunnel ? c->tport : r->port,
		.tunnel = c->tunnel && c->tunnel_tls != EGRESS_TLS_NONE,
		.upgrade_ok = c->upgrade_ok };
	struct buf *out;

	/* An injected request's address is at the broker before the
	 * credential goes (waited for once, guard_report); every request is
	 * guarded (guard.h). */
	if (!c->broker_route) {
		if (c->inject_value != NULL &&
		    guard_report(c,
			c->job->rules.rule[c->rule].inject.secret) != 0)
			return;
		if (guard_gate(c) != 0)
			return;
	}
	if (c->broker_route) {
		t.broker =
		    (const void *)brokerclient_addr(c->p->bclient, &blen);
		t.verifier_key = c->p->verifier_key;
		t.job = c->job->id;
	}
	if (c->inject_value != NULL) {
		t.inject_header = c->job->rules.rule[c->rule].inject.header;
		t.inject_value = c->inject_value;
	}
	/* Something was released to the job: this answer, on whatever
	 * rule, is scanned for all of it, and asked for whole and plain. */
	reflect_scan_end(&c->scan);
	c->scanning = false;
	if (!c->broker_route && c->job->released.n > 0) {
		if (reflect_scan_reset(&c->scan, &c->job->released) < 0) {
			up_drop(c);
			fail(c, 502, "out_of_memory");
			return;
		}
		c->scanning = true;
		t.scanned = true;
	}
	out = scratch(c, SCRATCH_HEAD, HTTP1_HEAD_MAX + 1024);
	c->up_close = http1_close_after_body(r, c->head);
	if (forward_head(r, c->head, &t, out) < 0) {
		scratch_done(out);
		deny(c, "malformed", "serialize");
		return;
	}
	if (c->inject_value == NULL)
		evbuffer_add(bufferevent_get_output(c->up), out->data,
		    out->len);
	else if (up_add_wiped(c, out->data, out->len) < 0) {
		scratch_done(out);
		up_drop(c);
		fail(c, 502, "out_of_memory");
		return;
	}
	scratch_done(out); /* it held the injected key */

	c->up_idle = false;
	tokens_body_start(&c->tokens);
	c->body_hold = false;
	c->up_eof_held = false;
	c->up_closed = false;
	c->reframe = false;
	c->body_done = r->body == HTTP1_BODY_NONE ||
	    (r->body == HTTP1_BODY_LENGTH && r->content_length == 0);
	c->body_left = r->body == HTTP1_BODY_LENGTH ? r->content_length : 0;
	if (r->body == HTTP1_BODY_CHUNKED)
		http1_chunked_init(&c->chunk, HTTP1_CL_MAX);
	c->resp_head = false;
	c->resp_done = false;
	c->state = CS_EXCHANGE;
	arm(c, c->p->cfg.idle_timeout_ms);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	pump_body(c);
}

/* --- the exchange --------------------------------------------------------- */

static void
exchange_done(struct pconn *c)
{
	/* Bytes past the answer (a 204 and more in one write) would be the
	 * next request's answer: such an upstream is never used again. */
	bool reuse = c->resp.keep_alive && c->resp.body != HTTP1_RESP_CLOSE &&
	    c->body_done && !c->broker_route && !c->up_close && c->up != NULL &&
	    !c->up_closed &&
	    evbuffer_get_length(bufferevent_get_input(c->up)) == 0;

	decision_log(c);
	/* An upstream that can take another request waits for one: this
	 * connection's next, or the job's pool. */
	c->up_idle = reuse;
	if (!reuse)
		up_drop(c);
	/* A client that half-closed after pipelining still gets an answer
	 * to each request it sent (RFC 9112 section 9.3), then the close.
	 * An upstream that closes after a framed answer (its Connection:
	 * close, HTTP/1.0, or ours after a DELETE's body) closes only
	 * itself: the client's next request gets a new upstream. */
	if (!c->keep_alive || c->resp.body == HTTP1_RESP_CLOSE ||
	    !c->body_done ||
	    (c->client_eof &&
		evbuffer_get_length(bufferevent_get_input(c->cl)) == 0)) {
		conn_finish(c);
		return;
	}
	request_reset(c);
	http1_parser_init(&c->parser,
	    !c->tunnel                             ? HTTP1_MODE_PROXY
		: c->tunnel_tls == EGRESS_TLS_NONE ? HTTP1_MODE_ORIGIN_PLAIN
						   : HTTP1_MODE_ORIGIN);
	c->state = CS_HEAD;
	arm(c, c->p->cfg.idle_timeout_ms);
	flow(c);
	if (evbuffer_get_length(bufferevent_get_input(c->cl)) > 0)
		try_head(c);
}

static void pump_body(struct pconn *c);

static void
on_body_introspect(void *arg, int status, json_t *body)
{
	struct pconn *c = arg;
	const char *why = token_verdict(c, status, body);

	c->call = NULL;
	c->introspect_down = status == 0 || status == 503;
	tokens_judged(&c->tokens, c->tokens.judging, why);
	if (why == NULL)
		token_keep(c, c->tokens.judging, body);
	if (why != NULL) {
		/* Part of the request went up: that connection is done. */
		up_drop(c);
		token_deny(c, why);
		return;
	}
	if (c->up_eof_held) {
		/* Cleared, but the upstream is gone before the body went. */
		up_drop(c);
		fail(c, 502, "upstream_closed");
		return;
	}
	c->body_hold = false;
	pump_body(c);
}

/*
 * Looks for cordon tokens in the next body bytes p[0..n) (tokens.c keeps
 * the end of what went before: a token may span two reads). Each one this
 * request has not yet found good holds the body until the broker says
 * whose it is: 0 to go on, -1 when held (or c closed).
 */
static int
body_token_check(struct pconn *c, const char *p, size_t n)
{
	int i = 0;

	if (!tokens_body_scan(&c->tokens, p, n, &i))
		return 0;
	if (i < 0) {
		up_drop(c);
		deny(c, "token", "too_many_tokens");
		return -1;
	}
	if (c->tokens.t[i].done) {
		/* Refused already (a bad checksum): no call to make. */
		up_drop(c);
		deny(c, "token", c->tokens.t[i].why);
		return -1;
	}
	c->tokens.judging = (size_t)i;
	if (token_cached(c, (size_t)i))
		return body_token_check(c, p, n); /* the same bytes again */
	c->body_hold = true;
	json_t *q = json_pack("{s:s}", "token", c->tokens.t[i].tok);
	c->call = q != NULL ? brokerclient_call(c->p->bclient, "POST",
				  "/v1/introspect", q, on_body_introspect, c)
			    : NULL;
	json_decref(q);
	if (c->call == NULL) {
		up_drop(c);
		deny(c, "token", "introspection_failed");
	}
	return -1;
}

static void
pump_body(struct pconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	struct evbuffer *out = bufferevent_get_output(c->up);

	while (!c->body_done && !c->body_hold && evbuffer_get_length(in) > 0) {
		size_t n = evbuffer_get_length(in);
		if (c->parser.req.body == HTTP1_BODY_LENGTH) {
			if (n > c->body_left)
				n = (size_t)c->body_left;
			if (n > 65536)
				n = 65536;
			if (body_token_check(c,
				(const char *)evbuffer_pullup(in, (ssize_t)n),
				n) < 0)
				return;
			evbuffer_remove_buffer(in, out, n);
			c->body_left -= n;
			c->d.bytes_up += n;
			c->body_done = c->body_left == 0;
			continue;
		}
		size_t used, off, len;
		if (n > 65536)
			n = 65536;
		const char *data =
		    (const char *)evbuffer_pullup(in, (ssize_t)n);
		int r =
		    http1_chunked_decode(&c->chunk, data, n, &used, &off, &len);
		if (r == -EBADMSG) {
			/* Half a request went up: that connection is done. */
			up_drop(c);
			deny(c, "malformed", c->chunk.reason);
			return;
		}
		if (len > 0 && body_token_check(c, data + off, len) < 0)
			return;
		if (len > 0) {
			evbuffer_add_printf(out, "%zx\r\n", len);
			evbuffer_add(out, data + off, len);
			evbuffer_add(out, "\r\n", 2);
			c->d.bytes_up += len;
		}
		evbuffer_drain(in, used);
		if (r == 0) {
			evbuffer_add(out, "0\r\n\r\n", 5);
			c->body_done = true;
		}
	}
	if (!c->body_done && !c->body_hold && c->client_eof &&
	    evbuffer_get_length(in) == 0) {
		/* A pipelined request's body cut by the client's close. */
		up_drop(c);
		c->d.detail = "client_closed";
		conn_finish(c);
		return;
	}
	flow(c);
	if (c->body_done && c->resp_done)
		exchange_done(c);
	else if (!c->resp_done && c->up != NULL &&
	    evbuffer_get_length(bufferevent_get_input(c->up)) > 0)
		pump_response(c); /* an answer that waited for the body */
}

/* A tripped job's close, on the loop's next turn (never under a
 * connection's own callback): its channel and every connection. */
static void
on_trip(evutil_socket_t fd, short what, void *arg)
{
	struct pjob *j = arg;

	(void)fd;
	(void)what;
	event_free(j->trip);
	j->trip = NULL;
	unsigned n = job_close(j, "secret_reflected");
	log_info("job_closed", "{s:s, s:s, s:i}", "job", j->id, "reason",
	    "secret_reflected", "connections_closed", (int)n);
}

/*
 * c's answer showed what its job must not read: a value it was released
 * for the scan only (event "guard_tripped": it never had the key, so it
 * has no reason to read it), or its own past reflect_limit answers
 * ("reflect_limit"). Redacting in place would tell the job which of its
 * guesses were the key (the oracle, credentials.md): instead nothing
 * more of the answer goes down, and the job is closed at once, as a
 * revoke closes it (secret_reflected): its requests in flight get
 * nothing more, its channel is gone at the next turn.
 */
static void
trip(struct pconn *c, const char *secret, const char *event)
{
	struct pjob *j = c->job;

	log_warn(event, "{s:s, s:s, s:s, s:s}", "job", j->id, "secret", secret,
	    "host", c->host, "effect",
	    "the answer ended there and the job's channel closed "
	    "(secret_reflected)");
	c->tripped = true;
	c->d.detail = "secret_reflected";
	if (c->up != NULL)
		bufferevent_disable(c->up, EV_READ);
	bufferevent_disable(c->cl, EV_READ);
	if (!j->closed) {
		j->closed = true;
		j->closed_why = "secret_reflected";
		j->closed_at = time(NULL);
	}
	if (j->trip == NULL &&
	    (j->trip = evtimer_new(c->p->base, on_trip, j)) != NULL) {
		struct timeval now = { 0, 0 };
		evtimer_add(j->trip, &now);
	}
}

/* Tells the broker of an answer of c's job that reflected v[0..vlen) of
 * secret (event as brokerclient_reflection's), at the version the job's
 * set has it: the fleet's budget of that version. Not another job's
 * borrowed issuer credential: each job's own, dead at its end. False
 * when the report could not even be kept (the caller trips c). */
static bool
reflection_tell(struct pconn *c, const char *secret, const char *v, size_t vlen,
    const char *event)
{
	const struct reflect_set *s = &c->job->released;

	for (size_t i = 0; v != NULL && i < s->n; i++)
		if (s->v[i].len == vlen &&
		    memcmp(s->v[i].value, v, vlen) == 0) {
			if (!s->v[i].borrowed &&
			    brokerclient_reflection(c->p->bclient, c->job->id,
				secret, s->v[i].version, event) == -ENOSPC)
				return false;
			return true;
		}
	return true;
}

/* The matches the scan found since the last call: counted, and told
 * with the secret each was of; a scan-only value's, or one of the job's
 * own past reflect_limit answers of that value, trips c (true). */
static bool
reflected(struct pconn *c)
{
	for (size_t i = 0; c->scan.unread > 0 && i < c->scan.n; i++) {
		const char *secret;
		bool first = c->scan.told[i] == 0; /* in this answer */
		size_t vlen;
		const char *v = reflect_scan_value(&c->scan, i, &vlen);
		size_t found = reflect_scan_news(&c->scan, i, &secret);
		if (found == 0)
			continue;
		c->p->reflected += found;
		c->d.reflected += found;
		log_warn("secret_reflected", "{s:s, s:s, s:s, s:I}", "job",
		    c->job->id, "host", c->host, "secret", secret, "count",
		    (json_int_t)found);
		if (reflect_scan_trips(&c->scan, i)) {
			reflection_tell(c, secret, v, vlen, "guard_tripped");
			trip(c, secret, "guard_tripped");
			return true;
		}
		if (!first)
			continue;
		/* Each answer that reflected a value, at the broker. */
		bool past = reflect_set_reflected(&c->job->released, v, vlen) >
		    (size_t)c->p->cfg.reflect_limit;
		bool kept = reflection_tell(c, secret, v, vlen,
		    past ? "reflect_limit" : "reflected");
		if (past || !kept) {
			/* A report the fleet's budget would miss: closed. */
			trip(c, secret,
			    past ? "reflect_limit" : "reflection_unkept");
			return true;
		}
	}
	return false;
}

/* Sends the client p[0..n), or with p NULL the next n bytes of the
 * upstream's input; as one chunk when the answer is reframed. */
static void
down_send(struct pconn *c, const char *p, size_t n)
{
	struct evbuffer *out = bufferevent_get_output(c->cl);
	char size[24];

	if (n == 0)
		return;
	if (c->reframe)
		evbuffer_add(out, size,
		    (size_t)snprintf(size, sizeof(size), "%zx\r\n", n));
	if (p != NULL)
		evbuffer_add(out, p, n);
	else
		evbuffer_remove_buffer(bufferevent_get_input(c->up), out, n);
	if (c->reframe)
		evbuffer_add(out, "\r\n", 2);
}

/* Moves n bytes of the upstream's answer to the client; once anything
 * was released to the job, through the scan (the last bytes held until
 * the answer ends). 0, or -1 when the scan gave up and c was finished
 * (it may be freed: the caller returns at once). */
static int
down(struct pconn *c, size_t n)
{
	struct evbuffer *in = bufferevent_get_input(c->up);

	if (c->tripped || c->job->closed) {
		evbuffer_drain(in, n); /* nothing more goes down */
		return 0;
	}
	c->d.bytes_down += n;
	if (!c->scanning) {
		down_send(c, NULL, n);
		return 0;
	}
	struct buf *out =
	    scratch(c, SCRATCH_SCAN, reflect_scan_out_max(&c->scan, n));
	int r = reflect_scan_feed(&c->scan,
	    (const char *)evbuffer_pullup(in, (ssize_t)n), n, out, NULL);
	if (r == -EPERM || (r == 0 && reflected(c))) {
		scratch_done(out);
		if (!c->tripped && !reflected(c))
			trip(c, "", "guard_tripped");
		evbuffer_drain(in, n);
		return 0;
	}
	if (r < 0) {
		scratch_done(out);
		evbuffer_drain(in, n);
		c->scanning = false; /* nothing more goes down */
		/* -E2BIG: past the scan's budget of steps (inject.h). */
		c->d.detail = r == -E2BIG ? "scan_too_costly" : "out_of_memory";
		conn_finish(c);
		return -1;
	}
	evbuffer_drain(in, n);
	down_send(c, out->data, out->len);
	scratch_done(out);
	return 0;
}

/* The answer ended: what the scanner held goes down. */
static void
down_flush(struct pconn *c)
{
	if (!c->scanning || c->tripped)
		return;
	struct buf *out =
	    scratch(c, SCRATCH_SCAN, reflect_scan_out_max(&c->scan, 0));
	int r = reflect_scan_flush(&c->scan, out);
	if (!reflected(c) && r == 0)
		down_send(c, out->data, out->len);
	scratch_done(out);
}

/* head (a rewritten response head) for a reframed answer: HTTP/1.1 (a
 * proxy sends its own version), chunked. 0, or -E2BIG / -ENOMEM. */
static int
reframe_head(struct buf *head)
{
	static const char te[] = "Transfer-Encoding: chunked\r\n\r\n";

	if (head->len < 12)
		return -EINVAL;
	if (memcmp(head->data, "HTTP/1.0", 8) == 0)
		head->data[7] = '1';
	head->len -= 2; /* the empty line, written again after the field */
	return buf_append(head, te, sizeof(te) - 1);
}

/* The response head, as the client gets it: without the upstream's
 * hop-by-hop fields, saying whether the connection stays. 0, or -1 when
 * c was closed. */
static int
down_head(struct pconn *c, bool upgrade, bool close)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	size_t n = c->resp.head_len;
	struct buf *head, *sent;
	/* An injected answer's cookies are a session the key bought. */
	unsigned flags = c->inject_value != NULL &&
		!c->job->rules.rule[c->rule].inject.cookies
	    ? HTTP1_RESP_DROP_COOKIES
	    : 0;
	size_t dropped = 0;

	head = sent = scratch(c, SCRATCH_HEAD, HTTP1_HEAD_MAX + 64);
	if (http1_response_rewrite_fields((const char *)evbuffer_pullup(in,
					      (ssize_t)n),
		n, upgrade, close, flags, &dropped, head) < 0 ||
	    (c->reframe && reframe_head(head) < 0)) {
		scratch_done(head);
		up_drop(c);
		fail(c, 502, "bad_upstream_response");
		return -1;
	}
	c->d.cookies_dropped += dropped;
	evbuffer_drain(in, n);
	if (c->scanning) {
		/* The head is whole: scanned and flushed at once. */
		struct buf *clean = scratch(c, SCRATCH_SCAN,
		    reflect_scan_out_max(&c->scan, head->len));
		int r = reflect_scan_feed(&c->scan, head->data, head->len,
		    clean, NULL);
		if (r == 0)
			r = reflect_scan_flush(&c->scan, clean);
		scratch_done(head);
		if (reflected(c) || r == -EPERM) {
			/* Tripped: not a byte of the head goes. */
			scratch_done(clean);
			if (!c->tripped)
				trip(c, "", "guard_tripped");
			return -1;
		}
		if (r < 0) {
			scratch_done(clean);
			up_drop(c);
			fail(c, 502, "out_of_memory");
			return -1;
		}
		sent = clean;
	}
	evbuffer_add(bufferevent_get_output(c->cl), sent->data, sent->len);
	c->d.bytes_down += sent->len;
	scratch_done(sent);
	return 0;
}

static void
start_tunnel(struct pconn *c)
{
	c->state = CS_TUNNEL;
	c->up_closed = false; /* an exchange's before it, on another upstream */
	arm(c, c->p->cfg.idle_timeout_ms);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	evbuffer_add_buffer(bufferevent_get_output(c->up),
	    bufferevent_get_input(c->cl));
	evbuffer_add_buffer(bufferevent_get_output(c->cl),
	    bufferevent_get_input(c->up));
	flow(c);
}

/* Whether an answer's head (len bytes) names multipart/byteranges. */
static bool
head_names_byteranges(const char *head, size_t len)
{
	static const char m[] = "multipart/byteranges";

	for (size_t i = 0; i + sizeof(m) - 1 <= len; i++)
		if ((head[i] | 0x20) == 'm' &&
		    strncasecmp(head + i, m, sizeof(m) - 1) == 0)
			return true;
	return false;
}

/* --- the scan's budget ---------------------------------------------------- */

/* Answer bytes scanned at once: the job's budget is looked at between. */
#define SCAN_SLICE 4096

/* The scan budget's clock: CLOCK_MONOTONIC_COARSE (the last tick, 1 to
 * 4 ms behind; 6 ns a call here against 91 for CLOCK_MONOTONIC, and a
 * call a 4 KiB slice). The bucket reads only differences of it, so a
 * tick's lag shifts a fill, never adds or loses one; a refill timer that
 * fires before the tick finds the bucket empty and waits again. Not
 * libevent's cached time: that is the wall clock's, which may step
 * back. */
static int64_t
monotonic_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Charges c's job the steps (inject.h) its answer's scan took since the
 * last charge, every stage's. */
static void
scan_charge(struct pconn *c)
{
	size_t s = 0;

	if (!c->scanning)
		return;
	if (c->charged_req != c->nreq) {
		c->charged_req = c->nreq;
		c->charged = 0;
	}
	for (size_t i = 0; i < c->scan.nstages; i++)
		s += c->scan.s[i].steps;
	if (s > c->charged)
		scanbudget_spend(&c->job->scan_budget, s - c->charged);
	c->charged = s;
}

static void on_scan_refill(evutil_socket_t fd, short what, void *arg);

/*
 * Charges c's scan, and when its job's budget (scanbudget.h) is spent
 * holds c: it reads nothing more from its upstream, and what it has read
 * waits, unscanned and unsent, until the job's refill lets it go on
 * (on_scan_refill). A job whose answers are costly to scan slows only
 * itself. true when held (the caller returns).
 */
static bool
scan_held(struct pconn *c)
{
	struct pjob *j = c->job;
	struct proxy *p = c->p;
	int64_t wait_us = 0, now;
	uint64_t steps, held;

	if (!c->scanning)
		return false;
	now = monotonic_us();
	scan_charge(c);
	if (scanbudget_ok(&j->scan_budget, p->cfg.scan_steps_per_s,
		p->cfg.scan_steps_burst, now, &wait_us))
		return false;
	c->throttled = true;
	p->scan_throttled++;
	if (c->up != NULL)
		bufferevent_disable(c->up, EV_READ);
	if (scanbudget_log_due(&j->scan_budget, now, &steps, &held))
		log_warn("scan_throttled", "{s:s, s:I, s:I, s:I, s:s}", "job",
		    j->id, "steps", (json_int_t)steps, "held", (json_int_t)held,
		    "steps_per_second", (json_int_t)p->cfg.scan_steps_per_s,
		    "effect",
		    "the job's answers wait for its scan budget "
		    "(scan_steps_per_second)");
	if (j->scan_refill == NULL)
		j->scan_refill = evtimer_new(p->base, on_scan_refill, j);
	if (j->scan_refill != NULL && !evtimer_pending(j->scan_refill, NULL)) {
		struct timeval tv = { (time_t)(wait_us / 1000000),
			(suseconds_t)(wait_us % 1000000) };
		evtimer_add(j->scan_refill, &tv);
	}
	return true;
}

/* The job's budget has steps again: its held connections read on, the
 * one after the last served first, so that each gets its turn; those
 * the steps do not reach wait for the next refill, not idle. */
static void
on_scan_refill(evutil_socket_t fd, short what, void *arg)
{
	struct pjob *j = arg;
	struct proxy *p = j->p;
	struct pconn *c, *next;
	uint64_t first = j->scan_first;
	bool waiting = false;

	(void)fd;
	(void)what;
	for (int pass = 0; pass < 2; pass++)
		for (c = TAILQ_FIRST(&j->conns); c != NULL; c = next) {
			next = TAILQ_NEXT(c, link);
			if (!c->throttled || (pass == 0) != (c->id > first))
				continue;
			scanbudget_fill(&j->scan_budget,
			    p->cfg.scan_steps_per_s, p->cfg.scan_steps_burst,
			    monotonic_us());
			if (j->scan_budget.tokens <= 0) {
				arm(c, p->cfg.idle_timeout_ms);
				waiting = true;
				continue;
			}
			j->scan_first = c->id;
			c->throttled = false;
			arm(c, p->cfg.idle_timeout_ms);
			if (c->state != CS_EXCHANGE || c->up == NULL)
				continue;
			flow(c);
			pump_response(c); /* may end c */
		}
	if (waiting && !evtimer_pending(j->scan_refill, NULL)) {
		int64_t us = scanbudget_wait_us(&j->scan_budget,
		    p->cfg.scan_steps_per_s);
		struct timeval tv = { (time_t)(us / 1000000),
			(suseconds_t)(us % 1000000) };
		evtimer_add(j->scan_refill, &tv);
	}
}

static void
pump_response(struct pconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);

	/* No answer while the body is held at a token: an upstream that
	 * answers early does not get a request past the broker's check. */
	if (c->body_hold)
		return;
	for (;;) {
		size_t n = evbuffer_get_length(in);
		if (c->tripped)
			return; /* its job's close ends it */
		if (c->resp_done || n == 0)
			break;
		if (scan_held(c))
			return; /* on_scan_refill goes on */
		if (c->scanning && c->resp_head && n > SCAN_SLICE)
			n = SCAN_SLICE;
		if (!c->resp_head) {
			const char *reason;
			if (n > HTTP1_HEAD_MAX)
				n = HTTP1_HEAD_MAX;
			int r = http1_response_parse((const char *)
							 evbuffer_pullup(in,
							     (ssize_t)n),
			    n, c->head_req, &c->resp, &reason);
			if (r == -EAGAIN && n < HTTP1_HEAD_MAX)
				break; /* more to come, or the close */
			if (r < 0) {
				up_drop(c);
				fail(c, 502, "bad_upstream_response");
				return;
			}
			if (c->resp.status == 101) {
				if (!c->upgrade_ok || c->inject_value != NULL ||
				    !c->resp.upgrade_websocket) {
					up_drop(c);
					fail(c, 502, "unasked_upgrade");
					return;
				}
				c->d.status = 101;
				if (down_head(c, true, false) < 0)
					return;
				decision_log(c);
				start_tunnel(c);
				return;
			}
			if (c->resp.status < 200) {
				/* 100 Continue: the real one follows. An
				 * injected answer's interim head is rewritten
				 * like its final one: a 103's Set-Cookie is a
				 * session the key bought too. */
				bool rewrite = c->inject_value != NULL &&
				    !c->tripped && !c->job->closed;
				if ((rewrite ? down_head(c, false, false)
					     : down(c, c->resp.head_len)) < 0)
					return;
				continue;
			}
			/* An injected request's body in a coding the scanner
			 * cannot read goes nowhere (credentials.md). */
			if (c->scanning && c->resp.coded &&
			    c->resp.body != HTTP1_RESP_NONE) {
				up_drop(c);
				c->p->encoded_refused++;
				fail(c, 502, "encoded_answer");
				return;
			}
			/* Nor a part of one: a range of the answer holds a
			 * piece of a reflected credential, never the whole
			 * the scanner looks for. */
			if (c->scanning &&
			    (c->resp.status == 206 ||
				head_names_byteranges((const char *)
							  evbuffer_pullup(in,
							      (ssize_t)c->resp
								  .head_len),
				    c->resp.head_len))) {
				up_drop(c);
				c->p->partial_refused++;
				fail(c, 502, "partial_answer");
				return;
			}
			/* Read to a TLS upstream's close: chunked to the job,
			 * so that a close without close_notify (a TCP FIN
			 * anyone on the path can send) is no whole answer. */
			c->reframe = c->up_tls &&
			    c->resp.body == HTTP1_RESP_CLOSE &&
			    c->parser.req.minor_version == 1;
			if (down_head(c, false,
				!c->keep_alive ||
				    c->resp.body == HTTP1_RESP_CLOSE ||
				    (c->client_eof &&
					evbuffer_get_length(
					    bufferevent_get_input(c->cl)) ==
					    0)) < 0)
				return;
			c->resp_head = true;
			c->d.status = (int)c->resp.status;
			c->resp_left = c->resp.content_length;
			if (c->resp.body == HTTP1_RESP_CHUNKED)
				http1_chunked_init_response(&c->rchunk,
				    HTTP1_CL_MAX);
			if (c->resp.body == HTTP1_RESP_CHUNKED && c->scanning)
				reflect_scan_chunked(&c->scan);
			c->resp_done = c->resp.body == HTTP1_RESP_NONE ||
			    (c->resp.body == HTTP1_RESP_LENGTH &&
				c->resp_left == 0);
			continue;
		}
		if (c->resp.body == HTTP1_RESP_CLOSE) {
			if (down(c, n) < 0)
				return;
			continue;
		}
		if (c->resp.body == HTTP1_RESP_LENGTH) {
			if (n > c->resp_left)
				n = (size_t)c->resp_left;
			if (down(c, n) < 0)
				return;
			c->resp_left -= n;
			c->resp_done = c->resp_left == 0;
			continue;
		}
		size_t used, off, len;
		if (n > 65536)
			n = 65536;
		int r = http1_chunked_decode(&c->rchunk,
		    (const char *)evbuffer_pullup(in, (ssize_t)n), n, &used,
		    &off, &len);
		if (r == -EBADMSG) {
			c->d.detail = "bad_upstream_chunk";
			conn_finish(c);
			return;
		}
		/* A scanned answer's trailer fields are left out: the scanner
		 * reads them as framing, not as fields. */
		if (c->rchunk.trailer_part && c->scanning)
			evbuffer_drain(in, used);
		else if (down(c, used) < 0)
			return;
		c->resp_done = r == 0;
	}
	scan_charge(c);
	if (c->up_closed && !c->resp_done &&
	    (evbuffer_get_length(in) == 0 || !c->resp_head)) {
		/* The upstream closed, and all it sent was read. */
		if (c->resp_head && c->resp.body == HTTP1_RESP_CLOSE &&
		    c->up_closed_clean) {
			c->resp_done = true;
			c->keep_alive = false;
		} else if (!c->resp_head && c->d.bytes_down == 0) {
			up_drop(c);
			fail(c, 502, "upstream_closed");
			return;
		} else {
			/* Cut: the job's answer ends short of its framing
			 * (a reframed one without its last chunk). */
			c->d.detail =
			    c->resp_head && c->resp.body == HTTP1_RESP_CLOSE
			    ? "upstream_truncated"
			    : "upstream_closed";
			conn_finish(c);
			return;
		}
	}
	if (c->resp_done)
		down_flush(c);
	if (c->tripped)
		return;
	if (c->resp_done && c->reframe)
		evbuffer_add(bufferevent_get_output(c->cl), "0\r\n\r\n", 5);
	flow(c);
	if (c->resp_done && c->body_done)
		exchange_done(c);
	else if (c->resp_done) {
		/* The answer came before the whole body: no keeping alive. */
		c->body_done = false;
		exchange_done(c);
	}
}

/* --- events --------------------------------------------------------------- */

/* The launcher's first line, if the connection starts with one: 0 once
 * read (or there is none), -1 while more is needed or when it was
 * refused (the connection closed). A capture-http line makes the
 * connection a tunnel of origin-form requests to its name and port. */
static int
origin_line(struct pconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t n = evbuffer_get_length(in), used;
	struct http1_origin_line o;
	char norm[EGRESS_HOST_MAX + 1];

	if (n > HTTP1_ORIGIN_MAX)
		n = HTTP1_ORIGIN_MAX;
	int r =
	    http1_origin_parse((const char *)evbuffer_pullup(in, (ssize_t)n), n,
		&o, &used);
	if (r == -EAGAIN)
		return -1;
	c->origin_read = true;
	if (r == -ENOENT)
		return 0;
	if (r == 0 && o.kind == HTTP1_ORIGIN_CAPTURE_HTTP &&
	    egress_host_normalise(o.host, strlen(o.host), norm) < 0)
		r = -EBADMSG;
	if (r < 0) {
		decision_begin(c, "http");
		deny(c, "malformed", "origin_line");
		return -1;
	}
	evbuffer_drain(in, used);
	c->origin = o.kind;
	if (o.kind == HTTP1_ORIGIN_CAPTURE_HTTP) {
		c->tunnel = true;
		c->tunnel_tls = EGRESS_TLS_NONE;
		c->tunnel_rule = -1;
		snprintf(c->thost, sizeof(c->thost), "%s", norm);
		c->tport = o.port;
		http1_parser_init(&c->parser, HTTP1_MODE_ORIGIN_PLAIN);
	}
	return 0;
}

static void
try_head(struct pconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t n = evbuffer_get_length(in), used;
	int r;

	if (n == 0)
		return;
	if (!c->head_started) {
		c->head_started = true;
		arm(c, c->p->cfg.head_timeout_ms);
	}
	if (!c->origin_read && origin_line(c) < 0)
		return;
	if ((n = evbuffer_get_length(in)) == 0)
		return;
	if (n > HTTP1_HEAD_MAX)
		n = HTTP1_HEAD_MAX;
	r = http1_parse(&c->parser,
	    (const char *)evbuffer_pullup(in, (ssize_t)n), n, &used);
	if (r == -EAGAIN && c->client_eof) {
		conn_finish(c); /* half a head, and the client sends no more */
		return;
	}
	if (r == -EAGAIN)
		return;
	if (r < 0) {
		decision_begin(c, request_kind(c, false));
		deny(c, "malformed", c->parser.reason);
		return;
	}
	c->head = malloc(used);
	c->head_len = used;
	if (c->head == NULL) {
		conn_close(c);
		return;
	}
	evbuffer_remove(in, c->head, used);
	judge(c);
}

static void
on_cl_read(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	(void)bev;
	switch (c->state) {
	case CS_HEAD:
		try_head(c);
		break;
	case CS_EXCHANGE:
		arm(c, c->p->cfg.idle_timeout_ms);
		pump_body(c);
		break;
	case CS_SNI:
		try_sni(c);
		break;
	case CS_TOKEN:
		if (c->form_wait)
			inject_release(c); /* more of the body to judge */
		break;
	case CS_TUNNEL:
		arm(c, c->p->cfg.idle_timeout_ms);
		c->d.bytes_up +=
		    evbuffer_get_length(bufferevent_get_input(c->cl));
		evbuffer_add_buffer(bufferevent_get_output(c->up),
		    bufferevent_get_input(c->cl));
		flow(c);
		break;
	default:
		break; /* kept for later, within READ_HIGH */
	}
}

static void
on_up_read(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	(void)bev;
	if (c->state == CS_EXCHANGE) {
		arm(c, c->p->cfg.idle_timeout_ms);
		pump_response(c);
	} else if (c->state == CS_TUNNEL) {
		arm(c, c->p->cfg.idle_timeout_ms);
		c->d.bytes_down +=
		    evbuffer_get_length(bufferevent_get_input(c->up));
		evbuffer_add_buffer(bufferevent_get_output(c->cl),
		    bufferevent_get_input(c->up));
		flow(c);
	} else if (c->up_idle) {
		up_drop(c); /* an idle upstream has nothing to say */
	}
}

static void
on_cl_write(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	(void)bev;
	if (c->state == CS_CLOSING) {
		if (flushed(c))
			conn_close(c);
		return;
	}
	flow(c);
}

static void
on_up_write(struct bufferevent *bev, void *arg)
{
	(void)bev;
	flow(arg);
}

/* Whether the client closed its socket for good, not only its writing:
 * a unix socket whose peer is closed polls POLLHUP, a half-closed one
 * only POLLRDHUP (the launcher's relay half-closes the channel when the
 * job's TCP side sends its FIN, which a close and a shutdown both do). */
static bool
client_gone(struct pconn *c)
{
	struct bufferevent *under = bufferevent_get_underlying(c->cl);
	struct pollfd pf = { .fd = bufferevent_getfd(
				 under != NULL ? under : c->cl),
		.events = POLLIN };

	return pf.fd >= 0 && poll(&pf, 1, 0) == 1 &&
	    (pf.revents & (POLLHUP | POLLERR)) != 0;
}

/*
 * A client that sent its EOF is looked at on the next turn and then each
 * CLIENT_GONE_MS: while its request waits (an introspection, a release,
 * the resolver, the connect, the upstream's answer) a client closed for
 * good ends the connection at once, and the upstream's with it, with the
 * detail client_gone; a half-closed one is answered (RFC 9112 9.6).
 */
static void
on_client_watch(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;
	struct timeval tv = { CLIENT_GONE_MS / 1000,
		(CLIENT_GONE_MS % 1000) * 1000 };

	(void)fd;
	(void)what;
	if (c->state != CS_HEAD && c->state != CS_TOKEN && c->state != CS_DNS &&
	    c->state != CS_CONNECT && c->state != CS_EXCHANGE)
		return; /* closing, or a tunnel: their own ends */
	if (c->state != CS_HEAD && client_gone(c)) {
		if (c->d_open)
			c->d.detail = "client_gone";
		up_drop(c);
		conn_close(c);
		return;
	}
	evtimer_add(c->gone, &tv);
}

static void
client_watch(struct pconn *c)
{
	struct timeval now = { 0, 0 };

	if (c->gone == NULL)
		c->gone = evtimer_new(c->p->base, on_client_watch, c);
	if (c->gone != NULL)
		evtimer_add(c->gone, &now);
}

static void
on_cl_event(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		/* The client's TLS handshake finished. */
		if (c->state == CS_HANDSHAKE) {
			c->state = CS_HEAD;
			/* A close told before this: on_timer ends it once
			 * what came with it is answered. */
			arm(c, c->client_eof ? 0 : c->p->cfg.idle_timeout_ms);
			try_head(c);
		}
		return;
	}
	if (c->state == CS_HANDSHAKE && (what & BEV_EVENT_EOF) &&
	    !(what & BEV_EVENT_ERROR) &&
	    bufferevent_openssl_get_ssl(c->cl) != NULL &&
	    SSL_is_init_finished(bufferevent_openssl_get_ssl(c->cl))) {
		/* The client's Finished, its requests and its close_notify
		 * in one read: libevent tells the close before the
		 * handshake's end, which comes next. */
		c->client_eof = true;
		bufferevent_disable(c->cl, EV_READ);
		return;
	}
	if (c->state == CS_HANDSHAKE) {
		decision_begin(c, "mitm");
		c->d.host = c->thost;
		c->d.port = c->tport;
		c->d.rule = c->tunnel_rule;
		if (c->sni.got[0] != '\0')
			c->d.sni = c->sni.got;
		c->d.allow = false;
		c->d.reason = c->sni.problem != NULL ? "sni_mismatch" : "tls";
		c->d.detail = c->sni.problem != NULL ? c->sni.problem
						     : "client_handshake";
		conn_close(c);
		return;
	}
	/* A client that has sent its whole request, or several, and shut
	 * down its writing still gets every answer; the connection ends
	 * after the last. A TLS client's close_notify may be told before
	 * the requests that came with it are read: they are read now. */
	struct evbuffer *in = bufferevent_get_input(c->cl);
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
	    c->state == CS_HEAD) {
		/* Between requests: the answers written still go out (a
		 * close would drop what the socket has not taken yet), and
		 * what came with the close is read first (libevent's TLS
		 * tells the close before it hands over the bytes read with
		 * it): on_timer decides, on the loop's next turn. */
		c->client_eof = true;
		bufferevent_disable(c->cl, EV_READ);
		arm(c, 0);
		return;
	}
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
	    (c->state == CS_TOKEN || c->state == CS_DNS ||
		c->state == CS_CONNECT || c->state == CS_EXCHANGE ||
		(c->state == CS_HEAD && evbuffer_get_length(in) > 0))) {
		c->client_eof = true;
		bufferevent_disable(c->cl, EV_READ);
		client_watch(c);
		if (c->state == CS_HEAD)
			try_head(c);
		else if (c->state == CS_TOKEN && c->form_wait)
			inject_release(c); /* the body cut: finished */
		else if (c->state == CS_EXCHANGE && !c->body_done)
			pump_body(c);
		return;
	}
	if (c->state == CS_TUNNEL && c->up != NULL) {
		/* Hand what is left to the upstream, then end. */
		evbuffer_add_buffer(bufferevent_get_output(c->up),
		    bufferevent_get_input(c->cl));
	}
	if (c->d_open && c->state != CS_TUNNEL && c->state != CS_HEAD)
		c->d.detail = "client_closed";
	conn_close(c);
}

/* The upstream's close (c->up_closed), acted on: what it sent before it
 * goes down first. */
static void
up_gone(struct pconn *c)
{
	if (c->state == CS_TUNNEL) {
		evbuffer_add_buffer(bufferevent_get_output(c->cl),
		    bufferevent_get_input(c->up));
		conn_finish(c);
		return;
	}
	pump_response(c); /* ends the exchange (its tail) */
}

/* A TLS upstream's close, a turn after libevent told it: it tells it
 * from inside its read, before the bytes of that read are in the input
 * (the read callback takes them after it). Nothing when the request it
 * came in has ended since. */
static void
on_up_closed(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;

	(void)fd;
	(void)what;
	if (c->up != NULL && c->up_closed && c->nreq == c->up_closed_req &&
	    (c->state == CS_EXCHANGE || c->state == CS_TUNNEL))
		up_gone(c);
}

/* Whether the upstream's close (what) ends its answer whole: an EOF, and
 * on TLS after the upstream's close_notify. */
static bool
up_close_clean(struct pconn *c, short what)
{
	SSL *ssl;

	if (what & BEV_EVENT_ERROR)
		return false;
	if (!c->up_tls)
		return true;
	ssl = bufferevent_openssl_get_ssl(c->up);
	return ssl != NULL &&
	    (SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN) != 0;
}

static void
on_up_event(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;

	if (what & BEV_EVENT_CONNECTED) {
		if (c->state != CS_CONNECT)
			return;
		if (!c->tunnel && c->parser.req.connect) {
			c->up_idle = true;
			answer_connect(c);
		} else if (c->tunnel &&
		    c->tunnel_tls == EGRESS_TLS_PASSTHROUGH) {
			if (!guard_opaque(c, c->thost, c->addr))
				start_tunnel(c);
		} else
			send_request(c);
		return;
	}
	switch (c->state) {
	case CS_CONNECT:
		fail(c, 502,
		    c->up_tls && (what & BEV_EVENT_ERROR)
			? tls_upstream_problem(bev)
			: "connect_failed");
		return;
	case CS_EXCHANGE:
		if (c->body_hold) {
			/* The broker's answer on the body decides. */
			c->up_eof_held = true;
			return;
		}
		/* fall through */
	case CS_TUNNEL:
		if (c->up_closed)
			return;
		c->up_closed = true;
		c->up_closed_clean = up_close_clean(c, what);
		c->up_closed_req = c->nreq;
		if (c->up_tls && c->up_closed_ev == NULL)
			c->up_closed_ev =
			    event_new(c->p->base, -1, 0, on_up_closed, c);
		if (c->up_tls && c->up_closed_ev != NULL) {
			event_active(c->up_closed_ev, EV_TIMEOUT, 1);
			return;
		}
		up_gone(c);
		return;
	default:
		up_drop(c); /* idle, and gone */
		return;
	}
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;

	(void)fd;
	(void)what;
	switch (c->state) {
	case CS_HEAD:
		if (c->client_eof) {
			/* The client closed between requests: what it sent
			 * with the close is answered, then the end. */
			if (evbuffer_get_length(bufferevent_get_input(c->cl)) >
			    0)
				try_head(c);
			else
				conn_finish(c);
			return;
		}
		if (c->head_started) {
			decision_begin(c, request_kind(c, false));
			c->d.allow = false;
			c->d.reason = "timeout";
			c->d.detail = "head";
			answer(c, 408, "timeout", "timeout",
			    "the request head did not arrive in time");
		} else {
			conn_close(c); /* idle keep-alive */
		}
		return;
	case CS_DNS:
		if (c->ai_ready)
			dns_done(c);
		else {
			if (c->dns != NULL)
				evdns_getaddrinfo_cancel(c->dns);
			c->dns = NULL;
			fail(c, 504, "dns_timeout");
		}
		return;
	case CS_CONNECT:
		up_drop(c);
		fail(c, 504, "connect_timeout");
		return;
	case CS_EXCHANGE:
		if (!c->resp_head && c->d.bytes_down == 0) {
			up_drop(c);
			fail(c, 504, "upstream_timeout");
		} else {
			c->d.detail = "idle_timeout";
			conn_finish(c);
		}
		return;
	case CS_CLOSING:
		if (flushed(c) ||
		    elapsed_ms(&c->closing_since) > CLOSE_FLUSH_MS)
			conn_close(c);
		else
			arm(c, 20);
		return;
	case CS_HANDSHAKE:
	case CS_SNI:
		if (!c->d_open)
			decision_begin(c, "mitm");
		c->d.allow = false;
		c->d.reason = "timeout";
		c->d.detail = c->state == CS_SNI ? "client_hello" : "handshake";
		conn_close(c);
		return;
	case CS_TUNNEL:
		conn_finish(c);
		return;
	case CS_TOKEN:
		if (c->form_wait) {
			c->d.allow = false;
			c->d.reason = "timeout";
			c->d.detail = "body";
			answer(c, 408, "timeout", "timeout",
			    "the request body to judge did not arrive in time");
		}
		return; /* else the broker call has its own timeout */
	}
}

struct pconn *
conn_next(struct pconn *c)
{
	return TAILQ_NEXT(c, link);
}

void
conn_feed_lost(struct pconn *c)
{
	if (c->state != CS_TUNNEL)
		return;
	c->d.detail = "feed_unavailable";
	conn_close(c);
}
