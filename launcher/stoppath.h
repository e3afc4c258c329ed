/*
 * The stop path, the one order that makes stopping a job safe, for every
 * command that stops one: `cordon run` at its job's end (and so `cordon
 * serve`, whose jobs are `cordon run`s), and `cordon recover` for a job
 * whose launcher died. It owns the exit statuses that say a job was not
 * stopped cleanly (3, 4, 125), and serve reads them through
 * stoppath_left_for_recover.
 */
#ifndef CORDON_LAUNCHER_STOPPATH_H
#define CORDON_LAUNCHER_STOPPATH_H

#include "launcher.h"

#include <jansson.h>

#include <stdbool.h>
#include <sys/wait.h>

#define STOPPATH_EXIT_REVOKE_FAILED 3 /* the job was killed all the same */
#define STOPPATH_EXIT_PATCH_KEPT 4 /* the workspace is kept at the hatch */
#define STOPPATH_EXIT_LAUNCHER 125 /* a service refused, no sandbox, ... */

/* What the stop path is to stop. */
struct stoppath_job {
	const struct launcher_config *cfg;
	const char *key; /* the launcher's */
	const char *job;
	const char *reason; /* the revoke's reason at the broker */
	const char *patch; /* where the patch goes */
	bool channel; /* the proxy may have a channel for the job */
	bool workspace; /* the hatch may have a workspace for it */
	/* Nothing of the job ran (cordon run failed before its sandbox was
	 * told to go): its workspace is released at the hatch, never
	 * sealed, and no patch or verdict is claimed for it. */
	bool never_ran;
	/* recover: a job the broker does not know has no tokens (done), and
	 * a failed revoke leaves the rest for the next try. */
	bool recovering;
	/* 2., every process of the job; NULL when none can be left. */
	void (*kill)(void *arg);
	void *kill_arg;
	/* The record's lock (launcher_record_open), closed at the end and
	 * the record removed when the job is finished; -1 for none. */
	int record_fd;
};

/* The broker's revoke revokes the job's upstream credentials at their
 * issuers (docs/credentials.md): one of its answer's "upstream" list. */
#define STOPPATH_UPSTREAM_MAX 16
struct stoppath_upstream {
	char secret[72], kind[32];
	bool ok;
	long status; /* the issuer's HTTP status; 0 when none came */
	char error[200]; /* "" when ok */
};

struct stoppath_outcome {
	bool revoke_ok; /* revoked, or (recovering) unknown to the broker */
	bool revoke_answered; /* the broker answered, whatever it said */
	bool unknown_job; /* the broker did not know the job */
	long long tokens_revoked;
	char revoke_error[200]; /* "" when revoke_ok */
	/* The upstream revocations the broker reported (the first
	 * STOPPATH_UPSTREAM_MAX; the counts are of all of them). */
	struct stoppath_upstream upstream[STOPPATH_UPSTREAM_MAX];
	size_t n_upstream, upstream_total, upstream_failed;
	/* The proxy's counts, from the channel's close; when the close
	 * failed close_error says why, and no figure is given. */
	bool egress_known;
	long long allowed, denied, upstream_errors;
	char close_error[200];
	bool closed; /* the close was asked (not when recovering failed) */
	struct collected c; /* the seal, the patch, the workspace */
	bool sealed; /* launcher_collect ran: c is its */
	bool released; /* never_ran: the hatch removed (or had no) workspace */
	bool finished; /* revoked and the patch out: the record is gone */
	double ms_revoke, ms_kill, ms_close, ms_seal;
};

/*
 * Stops j, always in this order: 1. the revoke at the broker (its tokens
 * die first); 2. j->kill; 3. the channel closed at the proxy, and 4. at
 * once, the seal at the hatch, the patch fetched, checked against the
 * seal's digest and written to j->patch, and only then the workspace
 * removed (a job that never ran: the workspace released instead, no seal,
 * no patch); 5. the record removed when all of that is done, its lock
 * released in any case. A failed revoke still kills, closes and seals,
 * except when recovering (the next try does it). json_decref(o->c.report)
 * after.
 */
void stoppath_run(const struct stoppath_job *j, struct stoppath_outcome *o);

/* The upstream revocations of o as the result lists them: a new array
 * of {secret, kind, ok, status | error}. */
json_t *stoppath_upstream_json(const struct stoppath_outcome *o);

/* The exit status of `cordon run`: 3 when the revoke failed, else 125 for
 * a launcher error, else 4 when the patch is not out, else job_status
 * (the job's own). */
int stoppath_exit_status(const struct stoppath_outcome *o, bool launcher_error,
    int job_status);

/* Whether a `cordon run` that ended with wait_status (as waitpid gives
 * it) left its job for `cordon recover`: killed, or 3, 4 or 125. Inline:
 * cordon-serve, which reads it, links none of the stop path. */
static inline bool
stoppath_left_for_recover(int wait_status)
{
	if (!WIFEXITED(wait_status))
		return true;
	return WEXITSTATUS(wait_status) == STOPPATH_EXIT_REVOKE_FAILED ||
	    WEXITSTATUS(wait_status) == STOPPATH_EXIT_PATCH_KEPT ||
	    WEXITSTATUS(wait_status) == STOPPATH_EXIT_LAUNCHER;
}

#endif
