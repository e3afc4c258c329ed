/*
 * Followers of the revocation feed, in memory: who is connected, what
 * each has acknowledged. A follower is connected while it polls or has
 * polled within FEED_ACK_WAIT_MS; one that misses an acknowledgement
 * deadline is gone until it polls again.
 */
#include "feed.h"

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
	bool gone;
};

struct feed {
	pthread_mutex_t mu;
	pthread_cond_t changed; /* head moved, an ack came, or stopping */
	int64_t head;
	bool stopping;
	struct follower f[FEED_FOLLOWERS_MAX];
	size_t n;
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timespec
deadline_in(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
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
	pthread_cond_init(&f->changed, &attr);
	pthread_condattr_destroy(&attr);
	f->head = head;
	return f;
}

void
feed_free(struct feed *f)
{
	if (f == NULL)
		return;
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->changed);
	free(f);
}

static bool
connected(const struct follower *fl, int64_t now)
{
	return !fl->gone &&
	    (fl->polling > 0 || now - fl->last_seen_ms <= FEED_ACK_WAIT_MS);
}

static struct follower *
find(struct feed *f, const char *name)
{
	int64_t now = now_ms();

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

int64_t
feed_poll(struct feed *f, const char *name, int64_t after, int wait_s)
{
	struct timespec until = deadline_in((int64_t)wait_s * 1000);
	struct follower *fl;
	int64_t head;

	pthread_mutex_lock(&f->mu);
	fl = find(f, name);
	if (fl == NULL) {
		pthread_mutex_unlock(&f->mu);
		return -1;
	}
	if (after > fl->acked || fl->gone)
		fl->acked = after;
	fl->gone = false;
	fl->polling++;
	fl->last_seen_ms = now_ms();
	pthread_cond_broadcast(&f->changed); /* an acknowledgement */
	while (f->head <= after && !f->stopping && wait_s > 0)
		if (pthread_cond_timedwait(&f->changed, &f->mu, &until) ==
		    ETIMEDOUT)
			break;
	head = f->head;
	fl->polling--;
	fl->last_seen_ms = now_ms();
	pthread_mutex_unlock(&f->mu);
	return head;
}

void
feed_publish(struct feed *f, int64_t seq)
{
	pthread_mutex_lock(&f->mu);
	if (seq > f->head)
		f->head = seq;
	pthread_cond_broadcast(&f->changed);
	pthread_mutex_unlock(&f->mu);
}

json_t *
feed_wait_acks(struct feed *f, int64_t seq)
{
	struct timespec until = deadline_in(FEED_ACK_WAIT_MS);
	json_t *acked = json_array(), *gone = json_array();
	size_t followers = 0;
	int64_t now;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		bool waiting = false;

		now = now_ms();
		for (size_t i = 0; i < f->n; i++)
			if (connected(&f->f[i], now) && f->f[i].acked < seq)
				waiting = true;
		if (!waiting || f->stopping)
			break;
		if (pthread_cond_timedwait(&f->changed, &f->mu, &until) ==
		    ETIMEDOUT)
			break;
	}
	now = now_ms();
	for (size_t i = 0; i < f->n; i++) {
		struct follower *fl = &f->f[i];

		if (fl->gone)
			continue;
		if (fl->acked >= seq) {
			followers++;
			json_array_append_new(acked, json_string(fl->name));
		} else if (connected(fl, now) ||
		    now - fl->last_seen_ms <= 2 * FEED_ACK_WAIT_MS) {
			/* Connected and silent: declared gone. */
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
	now = now_ms();
	for (size_t i = 0; i < f->n; i++)
		n += connected(&f->f[i], now);
	pthread_mutex_unlock(&f->mu);
	return n;
}

void
feed_stop(struct feed *f)
{
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	pthread_cond_broadcast(&f->changed);
	pthread_mutex_unlock(&f->mu);
}
