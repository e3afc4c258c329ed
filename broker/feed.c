/*
 * Followers of the revocation feed, in memory: who is connected, what each
 * has acknowledged, and the deferred requests waiting on them. A follower
 * is connected while it polls or has polled within FEED_ACK_WAIT_MS; one
 * that misses an acknowledgement deadline is gone until it polls again.
 *
 * Every resume happens under the feed's lock, and every defer happens
 * under it before the waiter is listed, so no request is resumed before
 * it was suspended, nor twice.
 */
#include "feed.h"

#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct follower {
	char name[64];
	int64_t acked;
	int64_t last_seen_ms;
	unsigned polling; /* polls under way */
	bool remote_polling; /* polling at another broker of the fleet */
	bool gone;
};

/* WAIT_WATCH: a poll by a watcher (a launcher), who follows the feed but
 * acknowledges nothing, so that no revoke ever waits for it. */
enum waiter_kind { WAIT_POLL, WAIT_WATCH, WAIT_ACKS };

struct waiter {
	enum waiter_kind kind;
	int64_t seq; /* POLL: the after it waits past; ACKS: the seq */
	int64_t deadline_ms;
	struct http_request *req;
	struct waiter *next;
};

struct feed {
	pthread_mutex_t mu;
	pthread_cond_t timer; /* a waiter was added, or stopping */
	pthread_t thread;
	int64_t head;
	bool stopping;
	struct follower f[FEED_FOLLOWERS_MAX];
	size_t n;
	struct waiter *waiters;
	feed_share_fn share; /* a fleet's: tells the other brokers */
	void *share_arg;
};

static bool
connected(const struct follower *fl, int64_t now)
{
	/* Polling at another broker: only while such a poll could still be
	 * running (that broker may have died and will never say it ended). */
	bool remote = fl->remote_polling &&
	    now - fl->last_seen_ms <=
		(int64_t)FEED_MAX_WAIT_S * 1000 + FEED_ACK_WAIT_MS;

	return !fl->gone &&
	    (fl->polling > 0 || remote ||
		now - fl->last_seen_ms <= FEED_ACK_WAIT_MS);
}

/* True when every connected follower has acknowledged seq. */
static bool
all_acked(struct feed *f, int64_t seq, int64_t now)
{
	for (size_t i = 0; i < f->n; i++)
		if (connected(&f->f[i], now) && f->f[i].acked < seq)
			return false;
	return true;
}

/* Resumes and unlists the waiters for which done() holds. Locked. */
static void
wake(struct feed *f, bool (*done)(struct feed *, struct waiter *, int64_t))
{
	int64_t now = monotonic_ms();

	for (struct waiter **p = &f->waiters; *p != NULL;) {
		struct waiter *w = *p;

		if (f->stopping || done(f, w, now)) {
			*p = w->next;
			http_request_resume(w->req);
			free(w);
		} else
			p = &w->next;
	}
}

static bool
past_deadline(struct feed *f, struct waiter *w, int64_t now)
{
	(void)f;
	return now >= w->deadline_ms;
}

static bool
poll_ready(struct feed *f, struct waiter *w, int64_t now)
{
	return now >= w->deadline_ms ||
	    ((w->kind == WAIT_POLL || w->kind == WAIT_WATCH) &&
		f->head > w->seq);
}

static bool
acks_ready(struct feed *f, struct waiter *w, int64_t now)
{
	return now >= w->deadline_ms ||
	    (w->kind == WAIT_ACKS && all_acked(f, w->seq, now));
}

/* Keeps the deadlines: wakes each waiter when its time has come. */
static void *
timer_main(void *arg)
{
	struct feed *f = arg;

	pthread_mutex_lock(&f->mu);
	while (!f->stopping) {
		int64_t next = monotonic_ms() + 1000;
		struct timespec ts;

		for (struct waiter *w = f->waiters; w != NULL; w = w->next)
			if (w->deadline_ms < next)
				next = w->deadline_ms;
		ts.tv_sec = next / 1000;
		ts.tv_nsec = (next % 1000) * 1000000;
		pthread_cond_timedwait(&f->timer, &f->mu, &ts);
		wake(f, past_deadline);
	}
	wake(f, past_deadline); /* stopping: all of them */
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

struct feed *
feed_new(int64_t head)
{
	struct feed *f = calloc(1, sizeof(*f));
	pthread_condattr_t attr;

	if (f == NULL)
		return NULL;
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&f->timer, &attr);
	pthread_condattr_destroy(&attr);
	f->head = head;
	if (pthread_create(&f->thread, NULL, timer_main, f) != 0) {
		pthread_mutex_destroy(&f->mu);
		pthread_cond_destroy(&f->timer);
		free(f);
		return NULL;
	}
	return f;
}

void
feed_stop(struct feed *f)
{
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	wake(f, past_deadline);
	pthread_cond_signal(&f->timer);
	pthread_mutex_unlock(&f->mu);
}

void
feed_free(struct feed *f)
{
	if (f == NULL)
		return;
	feed_stop(f);
	pthread_join(f->thread, NULL);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->timer);
	free(f);
}

static struct follower *
find(struct feed *f, const char *name, int64_t now)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->f[i].name, name) == 0)
			return &f->f[i];
	/* Reuse the slot of one long gone before growing. */
	for (size_t i = 0; i < f->n; i++)
		if (!connected(&f->f[i], now) && f->f[i].polling == 0) {
			memset(&f->f[i], 0, sizeof(f->f[i]));
			snprintf(f->f[i].name, sizeof(f->f[i].name), "%s",
			    name);
			return &f->f[i];
		}
	if (f->n == FEED_FOLLOWERS_MAX)
		return NULL;
	memset(&f->f[f->n], 0, sizeof(f->f[f->n]));
	snprintf(f->f[f->n].name, sizeof(f->f[f->n].name), "%s", name);
	return &f->f[f->n++];
}

/* Lists a deferred request. Locked; req already deferred. */
static int
add_waiter(struct feed *f, enum waiter_kind kind, int64_t seq,
    int64_t deadline_ms, struct http_request *req)
{
	struct waiter *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -ENOMEM;
	w->kind = kind;
	w->seq = seq;
	w->deadline_ms = deadline_ms;
	w->req = req;
	w->next = f->waiters;
	f->waiters = w;
	pthread_cond_signal(&f->timer);
	return 0;
}

int
feed_poll(struct feed *f, const char *name, int64_t after, int wait_s,
    struct http_request *req)
{
	struct follower *fl;
	int64_t now = monotonic_ms();
	int r = 1;

	pthread_mutex_lock(&f->mu);
	fl = find(f, name, now);
	if (fl == NULL) {
		pthread_mutex_unlock(&f->mu);
		return -1;
	}
	/* Nobody acknowledges what was never published: a follower ahead
	 * of the head (a broker restored from an older backup) is answered
	 * at once with the real head, and must resync from it. */
	int64_t ack = after < f->head ? after : f->head;
	if (ack > fl->acked || fl->gone)
		fl->acked = ack;
	fl->gone = false;
	fl->polling++;
	fl->remote_polling = false; /* it follows this broker now */
	fl->last_seen_ms = now;
	ack = fl->acked;
	/* An acknowledgement: some revoke may be waiting for it. */
	wake(f, acks_ready);
	if (f->head == after && wait_s > 0 && !f->stopping) {
		http_request_defer(req);
		if (add_waiter(f, WAIT_POLL, after,
			now + (int64_t)wait_s * 1000, req) == 0)
			r = 0;
		else
			http_request_resume(req);
	}
	pthread_mutex_unlock(&f->mu);
	if (f->share != NULL)
		f->share(f->share_arg, name, ack, true);
	return r;
}

int
feed_watch(struct feed *f, int64_t after, int wait_s, struct http_request *req)
{
	int r = 1;

	pthread_mutex_lock(&f->mu);
	if (f->head == after && wait_s > 0 && !f->stopping) {
		http_request_defer(req);
		if (add_waiter(f, WAIT_WATCH, after,
			monotonic_ms() + (int64_t)wait_s * 1000, req) == 0)
			r = 0;
		else
			http_request_resume(req);
	}
	pthread_mutex_unlock(&f->mu);
	return r;
}

int64_t
feed_head(struct feed *f)
{
	int64_t head;

	pthread_mutex_lock(&f->mu);
	head = f->head;
	pthread_mutex_unlock(&f->mu);
	return head;
}

unsigned
feed_watchers(struct feed *f)
{
	unsigned n = 0;

	pthread_mutex_lock(&f->mu);
	for (struct waiter *w = f->waiters; w != NULL; w = w->next)
		n += w->kind == WAIT_WATCH;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int64_t
feed_poll_done(struct feed *f, const char *name)
{
	int64_t now = monotonic_ms(), head;
	struct follower *fl;

	pthread_mutex_lock(&f->mu);
	int64_t acked = -1;

	fl = find(f, name, now);
	if (fl != NULL && fl->polling > 0) {
		fl->polling--;
		fl->last_seen_ms = now;
		acked = fl->polling == 0 ? fl->acked : -1;
	}
	head = f->head;
	pthread_mutex_unlock(&f->mu);
	if (f->share != NULL && acked >= 0)
		f->share(f->share_arg, name, acked, false);
	return head;
}

void
feed_publish(struct feed *f, int64_t seq)
{
	pthread_mutex_lock(&f->mu);
	if (seq > f->head)
		f->head = seq;
	wake(f, poll_ready);
	pthread_mutex_unlock(&f->mu);
}

int
feed_wait_acks(struct feed *f, int64_t seq, struct http_request *req)
{
	int64_t now = monotonic_ms();
	int r = 1;

	pthread_mutex_lock(&f->mu);
	if (!all_acked(f, seq, now) && !f->stopping) {
		http_request_defer(req);
		if (add_waiter(f, WAIT_ACKS, seq, now + FEED_ACK_WAIT_MS,
			req) == 0)
			r = 0;
		else
			http_request_resume(req);
	}
	pthread_mutex_unlock(&f->mu);
	return r;
}

json_t *
feed_acks_result(struct feed *f, int64_t seq)
{
	json_t *acked = json_array(), *gone = json_array();
	size_t followers = 0;
	int64_t now;

	pthread_mutex_lock(&f->mu);
	now = monotonic_ms();
	for (size_t i = 0; i < f->n; i++) {
		struct follower *fl = &f->f[i];

		if (fl->gone)
			continue;
		if (fl->acked >= seq) {
			followers++;
			json_array_append_new(acked, json_string(fl->name));
		} else if (connected(fl, now) ||
		    now - fl->last_seen_ms <= 2 * FEED_ACK_WAIT_MS) {
			/* Connected and silent past the deadline: gone. */
			followers++;
			fl->gone = true;
			json_array_append_new(gone, json_string(fl->name));
		}
	}
	pthread_mutex_unlock(&f->mu);
	return json_pack("{s:I, s:o, s:o}", "followers", (json_int_t)followers,
	    "acknowledged", acked, "gone", gone);
}

unsigned
feed_followers(struct feed *f)
{
	unsigned n = 0;
	int64_t now;

	pthread_mutex_lock(&f->mu);
	now = monotonic_ms();
	for (size_t i = 0; i < f->n; i++)
		n += connected(&f->f[i], now);
	pthread_mutex_unlock(&f->mu);
	return n;
}

void
feed_set_share(struct feed *f, feed_share_fn fn, void *arg)
{
	f->share = fn;
	f->share_arg = arg;
}

void
feed_remote(struct feed *f, const char *name, int64_t acked, bool polling)
{
	struct follower *fl;
	int64_t now = monotonic_ms();

	pthread_mutex_lock(&f->mu);
	fl = find(f, name, now);
	/* One polling here is this broker's: the other's word is older. */
	if (fl != NULL && fl->polling == 0) {
		if (acked > fl->acked || fl->gone)
			fl->acked = acked;
		fl->gone = false;
		fl->remote_polling = polling;
		fl->last_seen_ms = now;
		wake(f, acks_ready);
	}
	pthread_mutex_unlock(&f->mu);
}
