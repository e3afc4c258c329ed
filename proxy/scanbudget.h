/*
 * A job's budget of reflection-scan steps (redteam4 hole 1, performance.md
 * "The scan's budget"): the scanner (inject.h) counts the units it reads
 * (its steps), and a crafted answer may cost up to INJECT_STEPS_BYTE of
 * them a byte without being refused, which on the proxy's one loop is
 * every other job's time. Each job has a token bucket of steps: it fills
 * at rate steps a second up to burst; every step a scan of the job's
 * answers took is taken from it (it may go below zero by the last feed's
 * cost); while it is empty the job's scanned connections read nothing
 * more from their upstreams (conn.c) until it has steps again. Nothing
 * is dropped or passed unscanned: the job only waits. Pure: times are
 * given, in microseconds of the monotonic clock.
 */
#ifndef CORDON_PROXY_SCANBUDGET_H
#define CORDON_PROXY_SCANBUDGET_H

#include <stdbool.h>
#include <stdint.h>

/* The defaults of the proxy's scan_steps_per_s and scan_steps_burst
 * (operations.md): a release build reads 5 to 10 million steps a second
 * on one core, an honest answer (JSON, HTML) costs under half a step a
 * byte, a crafted one 9 (UTF-16 of a key's prefix, repeated). */
#define SCANBUDGET_RATE 2000000
#define SCANBUDGET_BURST 250000
/* A job's scan_throttled line is written once per this long at most. */
#define SCANBUDGET_LOG_US (10 * 1000 * 1000)

struct scanbudget {
	double tokens; /* steps that may be spent now; below 0: owed */
	int64_t at; /* when tokens was last filled, us */
	bool started;
	uint64_t spent; /* steps taken, all told */
	uint64_t held; /* times a connection of the job was held */
	/* Since the last scan_throttled line: steps taken and holds. */
	uint64_t period_spent, period_held;
	int64_t logged; /* when that line was written, us; 0: never */
};

/* Fills b for the time up to now (rate steps a second, at most burst
 * held); a new b starts full. rate 0 means no budget. */
void scanbudget_fill(struct scanbudget *b, long long rate, long long burst,
    int64_t now);

/* Takes steps from b (it may go below zero). */
void scanbudget_spend(struct scanbudget *b, uint64_t steps);

/*
 * Whether b, filled up to now, has steps to spend (always, when rate is
 * 0). When it has none, the hold is counted and *ret_wait_us (may be
 * NULL) gets how long until it has, at least 1 ms.
 */
bool scanbudget_ok(struct scanbudget *b, long long rate, long long burst,
    int64_t now, int64_t *ret_wait_us);

/* How long until b (empty) has steps again at rate: at least 1 ms, at
 * most 10 s. */
int64_t scanbudget_wait_us(const struct scanbudget *b, long long rate);

/*
 * Whether a scan_throttled line is due at now (the first hold, then once
 * per SCANBUDGET_LOG_US while holds go on): when true, *ret_steps and
 * *ret_held get the period's steps and holds, which start again from 0.
 */
bool scanbudget_log_due(struct scanbudget *b, int64_t now, uint64_t *ret_steps,
    uint64_t *ret_held);

#endif
