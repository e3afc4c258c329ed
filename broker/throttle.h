/*
 * The mint rate of each job: a token bucket per job (burst mints, given
 * back at per_minute a minute), kept in memory, and the flags that let a
 * run of refusals be audited once rather than once per request. The
 * table has a fixed number of slots; when a job's neighbourhood is full,
 * the entry used longest ago is forgotten (its job starts again with a
 * full bucket, which the durable ceiling in the store still bounds).
 * Thread-safe; nothing here logs or writes.
 */
#ifndef CORDON_BROKER_THROTTLE_H
#define CORDON_BROKER_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#define THROTTLE_SLOTS 4096

struct throttle;

/* A new, empty table, or NULL when out of memory. */
struct throttle *throttle_new(void);
/* NULL is fine. */
void throttle_free(struct throttle *t);

enum throttle_verdict {
	THROTTLE_PASS, /* within the rate: one mint taken from the bucket */
	THROTTLE_LIMITED, /* refused; this run of refusals is audited already */
	THROTTLE_LIMITED_FIRST, /* refused, and a run begins: audit it */
};

/*
 * Takes one mint from job's bucket at now (seconds on a monotonic clock;
 * per_minute and burst at least 1). A run of refusals ends when the
 * bucket has filled up again. On a refusal *ret_retry_after gets the
 * whole seconds until a mint is back, at least 1.
 */
enum throttle_verdict throttle_take(struct throttle *t, const char *job,
    int64_t per_minute, int64_t burst, double now, int64_t *ret_retry_after);

/*
 * Notes that job reached its ceiling: true the first time (the caller
 * audits it then), false after, as long as the table remembers the job.
 */
bool throttle_ceiling_reached(struct throttle *t, const char *job, double now);

#endif
