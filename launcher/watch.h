/*
 * The broker, watched while a job runs, without ever blocking the loop
 * that relays the job's traffic and output: the lease renewed every third
 * of it, the job's revocation learnt from the broker's revocation feed
 * (or, from a broker that refuses it to the launcher, the job's state
 * asked every WATCH_MS), each call asynchronous on the loop (libevent's
 * HTTP client) with one in flight at a time and a deadline. A broker that
 * is slow or stopped delays only its own answers: the job's network and
 * output go on.
 */
#ifndef CORDON_LAUNCHER_WATCH_H
#define CORDON_LAUNCHER_WATCH_H

#include <event2/event.h>
#include <jansson.h>

#define WATCH_MS 500 /* how often the broker is asked whether the job lives */
#define WATCH_CALL_S 5 /* the deadline of each call */

struct watch;

/* Called once the broker says the job no longer runs, with the stop
 * reason the launcher reports: "revoked", "wall_clock" (the broker's
 * deadline) or "tripwire". */
typedef void (*watch_stop_fn)(void *arg, const char *reason);

/*
 * Watches job at broker ("http://host:port", or several joined by commas,
 * failed over in turn), with the launcher's key (copied), renewing its
 * lease every lease_ms / 3, on base. 0 and *ret, or -errno (-EINVAL for
 * a broker address that is not http://host:port).
 */
int watch_start(struct event_base *base, const char *broker, const char *key,
    const char *job, long long lease_ms, watch_stop_fn stop, void *arg,
    struct watch **ret);

/* The launcher's stop reason for job, the broker's GET /v1/jobs/{job}
 * answer for a job that no longer runs: "wall_clock" for its deadline,
 * "tripwire", else "revoked". */
const char *watch_reason(const json_t *job);

/* Stops watching: calls still in flight are dropped, unanswered. NULL is
 * fine. */
void watch_free(struct watch *w);

#endif
