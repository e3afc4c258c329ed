/*
 * The proxy's client of cordon-broker (not the broker itself): every call
 * the proxy makes to it, a job's rules, token introspection, the address
 * broker.cordon requests go to, and the revocation feed. It knows no job:
 * what a revocation or a silent feed means for the jobs is the proxy's,
 * told through the hooks proxy.c gives it.
 */
#ifndef CORDON_PROXY_BROKERCLIENT_H
#define CORDON_PROXY_BROKERCLIENT_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Without an answer from the revocation feed for this long, every request
 * is refused until it answers again (docs/egress.md: 2 s). */
#define FEED_FAIL_CLOSED_MS 2000
/* The longest job id the feed's ring of recent revocations keeps. */
#define BROKERCLIENT_JOB_MAX 63
/* A job's secret releases in flight at once (each may wait at the broker
 * for an issuer, up to 4 s), more of the job's waiting their turn at the
 * proxy, and all jobs' in flight: past them, refused at once. */
#define BROKERCLIENT_JOB_RELEASES 4
#define BROKERCLIENT_JOB_WAITING 16
#define BROKERCLIENT_RELEASES 64

/* What the feed tells the proxy, called from the event loop. */
struct brokerclient_hooks {
	/* The feed revoked job; seq is the feed's sequence number then. */
	void (*revoked)(void *ctx, const char *job, int64_t seq);
	/* The feed revoked one token of job alone, by its id: the job goes
	 * on. NULL: such an entry is taken for the job's revoke. */
	void (*token_revoked)(void *ctx, const char *job, const char *token_id,
	    int64_t seq);
	/* The feed has been silent for FEED_FAIL_CLOSED_MS: from now on
	 * brokerclient_feed_ok says no until it answers. */
	void (*feed_lost)(void *ctx);
	/* GET /v1/bindings answered 200: its JSON body (borrowed), the
	 * secrets' bindings (guard.h), and what bindings_asking gave when
	 * it was asked (0 without that hook). NULL: the list is not read. */
	void (*bindings)(void *ctx, const json_t *body, uint64_t asked);
	/* Called as each GET /v1/bindings goes out: a number given back
	 * with its answer, so that the proxy can tell the order the lists
	 * were asked in from the order they came in. NULL: 0. */
	uint64_t (*bindings_asking)(void *ctx);
	void *ctx;
};

struct brokerclient_options {
	/* "http://127.0.0.1:7701": an IPv4 literal and a port; or several
	 * joined by commas, a fleet's brokers, failed over in turn */
	const char *base;
	/* The verifier key (copied); NULL: no call can be made, and the
	 * feed is not polled. */
	const char *verifier_key;
	const char *follower; /* the name the feed knows this proxy by */
	/* GET /v1/bindings at the start and every this many seconds (0:
	 * never), its answer to the bindings hook. */
	long long bindings_refresh_s;
	struct brokerclient_hooks hooks;
};

struct brokerclient;

/* Starts polling the feed: 0, -EINVAL (a bad base or list), or -ENOMEM. */
int brokerclient_new(struct event_base *base,
    const struct brokerclient_options *o, struct brokerclient **ret);
/* Frees b and every call in flight, without calling their callbacks. */
void brokerclient_free(struct brokerclient *b);

/* True while the revocation feed answers: when false, refuse everything. */
bool brokerclient_feed_ok(const struct brokerclient *b);
/* For /healthz and /metrics: the last sequence number seen. */
int64_t brokerclient_feed_seq(const struct brokerclient *b);
/* True when the feed revoked job since the proxy started. */
bool brokerclient_recently_revoked(const struct brokerclient *b,
    const char *job);

/* A call to the broker in flight; cancel it before freeing its owner. */
struct brokerclient_call;
typedef void (*brokerclient_cb)(void *arg, int status, json_t *body);
/* GET path or POST json to path (json borrowed), with the verifier key,
 * at the current broker, then at each other one while the answer is none
 * or 503. cb gets the last status (0: no answer) and the JSON body
 * (borrowed, may be NULL). NULL when it could not start: then cb is never
 * called. */
struct brokerclient_call *brokerclient_call(struct brokerclient *b,
    const char *method, const char *path, const json_t *json,
    brokerclient_cb cb, void *arg);
/*
 * POSTs path, a secret's release for job, as brokerclient_call does, but
 * on connections of their own (16 a broker, each call on the one with
 * the fewest in flight), so that a release waiting at the broker for an
 * issuer holds no introspection or job's rules behind it. Past job's
 * BROKERCLIENT_JOB_RELEASES in flight it waits its turn, on no
 * connection, until one of the job's is answered (a cancelled release
 * counts until then). 0 and *ret_call set; -EBUSY when job has
 * BROKERCLIENT_JOB_WAITING waiting already, or all jobs
 * BROKERCLIENT_RELEASES in flight (counted); -EINVAL (no verifier key, a
 * job id too long) or -ENOMEM: cb is never called then.
 */
int brokerclient_release(struct brokerclient *b, const char *job,
    const char *path, brokerclient_cb cb, void *arg,
    struct brokerclient_call **ret_call);
/* For /metrics: releases in flight, waiting their turn, and refused
 * past the caps. */
void brokerclient_release_counts(const struct brokerclient *b,
    uint64_t *ret_in_flight, uint64_t *ret_waiting, uint64_t *ret_refused);
/*
 * Tells the broker, without waiting, that an answer of job reflected its
 * own value of version of secret (event "reflected", or "reflect_limit"
 * for the one that closed it) or that one tripped on a value the job had
 * for the scan only ("guard_tripped"): POST
 * /v1/jobs/{job}/secrets/{secret}/reflections, the fleet's budget per
 * version (broker/reflections.h). A report the broker did not count (no
 * answer, a 5xx) is kept and told again every second, for a minute at
 * most, added up with the job's later ones of the same kind (those that
 * come while it is in flight are told once it is answered); one that
 * finds no room among BROKERCLIENT_REFLECTIONS_KEPT, or is given up, is
 * counted as unreported and logged (reflection_unreported). Returns 0,
 * -ENOSPC when no room was left to keep it (the caller fails closed:
 * conn.c closes the job), -EINVAL for no verifier key or a name too long.
 */
#define BROKERCLIENT_REFLECTIONS_KEPT 64
int brokerclient_reflection(struct brokerclient *b, const char *job,
    const char *secret, int64_t version, const char *event);
/* For /metrics: reflections the broker counted, kept to tell again, and
 * lost (never counted). */
void brokerclient_reflection_counts(const struct brokerclient *b,
    uint64_t *ret_told, uint64_t *ret_kept, uint64_t *ret_lost);
/* cb will not be called; c is freed when its answer comes. NULL: none. */
void brokerclient_cancel(struct brokerclient_call *c);
/*
 * Zeroes every byte of every chain of b in place (OPENSSL_cleanse over
 * what evbuffer_peek shows), its length unchanged: an answer is copied
 * out, then wiped, then drained, so that a released secret is not left
 * in the chains libevent frees or reuses. For a buffer libevent read
 * into (no read-only chains).
 */
struct evbuffer;
void brokerclient_evbuffer_wipe(struct evbuffer *b);

/* The descriptors b may hold open at once: its connections to each
 * broker of the list (calls, releases and the feed's), whatever is in
 * flight. What the proxy keeps from its jobs counts them (proxy.h). */
size_t brokerclient_descriptors(const struct brokerclient *b);

/* Where to send a job's broker.cordon requests: the current broker. */
const struct sockaddr *brokerclient_addr(const struct brokerclient *b,
    socklen_t *ret_len);
/* The current broker, "host:port": the one followed and asked first. */
const char *brokerclient_current(const struct brokerclient *b);

#endif
