/*
 * The token bucket of scanbudget.h. Steps are counted in a double: a
 * bucket's fill over a long idle time is capped at burst, its debt at
 * what one feed cost, so it stays exact far past any real count.
 */
#include "scanbudget.h"

#include <stddef.h>

void
scanbudget_fill(struct scanbudget *b, long long rate, long long burst,
    int64_t now)
{
	if (!b->started) {
		b->started = true;
		b->tokens = (double)burst;
		b->at = now;
		return;
	}
	if (now > b->at && rate > 0) {
		b->tokens += (double)(now - b->at) * (double)rate / 1e6;
		if (b->tokens > (double)burst)
			b->tokens = (double)burst;
	}
	if (now > b->at)
		b->at = now;
}

void
scanbudget_spend(struct scanbudget *b, uint64_t steps)
{
	b->tokens -= (double)steps;
	b->spent += steps;
	b->period_spent += steps;
}

bool
scanbudget_ok(struct scanbudget *b, long long rate, long long burst,
    int64_t now, int64_t *ret_wait_us)
{
	if (rate <= 0)
		return true;
	scanbudget_fill(b, rate, burst, now);
	if (b->tokens > 0)
		return true;
	b->held++;
	b->period_held++;
	if (ret_wait_us != NULL)
		*ret_wait_us = scanbudget_wait_us(b, rate);
	return false;
}

int64_t
scanbudget_wait_us(const struct scanbudget *b, long long rate)
{
	double us = rate > 0 ? (1.0 - b->tokens) * 1e6 / (double)rate : 0;

	if (us < 1000)
		return 1000;
	return us > 1e7 ? 10000000 : (int64_t)us;
}

bool
scanbudget_log_due(struct scanbudget *b, int64_t now, uint64_t *ret_steps,
    uint64_t *ret_held)
{
	if (b->period_held == 0 ||
	    (b->logged != 0 && now - b->logged < SCANBUDGET_LOG_US))
		return false;
	*ret_steps = b->period_spent;
	*ret_held = b->period_held;
	b->period_spent = b->period_held = 0;
	b->logged = now;
	return true;
}
