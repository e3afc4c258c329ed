/*
 * Per-job mint buckets in an open-addressed table: a job hashes to a slot
 * and is looked for in the THROTTLE_PROBE slots from there. One mutex
 * guards the table; each call holds it for a few comparisons.
 */
#include "throttle.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THROTTLE_PROBE 16
#define THROTTLE_JOB_MAX 40

struct bucket {
	char job[THROTTLE_JOB_MAX]; /* "" for a free slot */
	double tokens; /* mints left, up to burst */
	double last; /* when tokens was last brought up to date */
	bool limited; /* in a run of refusals, audited */
	bool at_ceiling; /* its ceiling's refusal audited */
};

struct throttle {
	pthread_mutex_t mu;
	struct bucket slot[THROTTLE_SLOTS];
};

struct throttle *
throttle_new(void)
{
	struct throttle *t = calloc(1, sizeof(*t));

	if (t != NULL)
		pthread_mutex_init(&t->mu, NULL);
	return t;
}

void
throttle_free(struct throttle *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static uint32_t
fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* job's bucket, made (full, burst mints) when it has none: a free slot
 * of its neighbourhood, else the one used longest ago. Under t->mu. */
static struct bucket *
bucket_of(struct throttle *t, const char *job, double burst, double now)
{
	uint32_t h = fnv1a(job);
	struct bucket *free_slot = NULL, *oldest = NULL;

	for (uint32_t i = 0; i < THROTTLE_PROBE; i++) {
		struct bucket *b = &t->slot[(h + i) % THROTTLE_SLOTS];

		if (b->job[0] == '\0') {
			if (free_slot == NULL)
				free_slot = b;
			continue;
		}
		if (strcmp(b->job, job) == 0)
			return b;
		if (oldest == NULL || b->last < oldest->last)
			oldest = b;
	}
	struct bucket *b = free_slot != NULL ? free_slot : oldest;
	memset(b, 0, sizeof(*b));
	snprintf(b->job, sizeof(b->job), "%s", job);
	b->tokens = burst;
	b->last = now;
	return b;
}

enum throttle_verdict
throttle_take(struct throttle *t, const char *job, int64_t per_minute,
    int64_t burst, double now, int64_t *ret_retry_after)
{
	double rate = (double)per_minute / 60.0, cap = (double)burst;
	enum throttle_verdict v;

	pthread_mutex_lock(&t->mu);
	struct bucket *b = bucket_of(t, job, cap, now);
	if (now > b->last)
		b->tokens = fmin(cap, b->tokens + (now - b->last) * rate);
	b->last = fmax(b->last, now);
	if (b->tokens >= cap)
		b->limited = false; /* quiet long enough: the run is over */
	if (b->tokens >= 1.0) {
		b->tokens -= 1.0;
		v = THROTTLE_PASS;
	} else {
		double wait = ceil((1.0 - b->tokens) / rate);
		*ret_retry_after = wait < 1.0 ? 1 : (int64_t)wait;
		v = b->limited ? THROTTLE_LIMITED : THROTTLE_LIMITED_FIRST;
		b->limited = true;
	}
	pthread_mutex_unlock(&t->mu);
	return v;
}

bool
throttle_ceiling_reached(struct throttle *t, const char *job, double now)
{
	bool first;

	pthread_mutex_lock(&t->mu);
	/* A job new to the table starts with an empty bucket: it is
	 * refused anyway, and must not gain a burst from being noted. */
	struct bucket *b = bucket_of(t, job, 0.0, now);
	first = !b->at_ceiling;
	b->at_ceiling = true;
	pthread_mutex_unlock(&t->mu);
	return first;
}
