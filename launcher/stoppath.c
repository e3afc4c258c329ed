/*
 * The stop path: revoke at the broker, kill, close the channel at the
 * proxy and seal at the hatch (those two at once: the job is dead, and
 * neither needs the other's answer), the patch checked and written, the
 * record removed. `cordon run` calls it when its job ends, `cordon
 * recover` for each job whose launcher died; `cordon serve` runs jobs as
 * `cordon run`s and reads their statuses with stoppath_left_for_recover.
 * Its calls block, each with a deadline: the job's loop is over by then.
 */
#include "stoppath.h"

#include "http_client.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STOP_CALL_MS 5000

/* The channel's close, on a thread of its own while the caller seals. */
struct close_call {
	const struct stoppath_job *j;
	pthread_t thread;
	bool threaded;
	int rc;
	struct httpc_answer a;
	double ms;
};

static void *
close_run(void *arg)
{
	struct close_call *cc = arg;
	char path[160];
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	snprintf(path, sizeof(path), "/v1/jobs/%s", cc->j->job);
	cc->rc = httpc_request(cc->j->cfg->proxy, "DELETE", path, cc->j->key,
	    NULL, NULL, STOP_CALL_MS, &cc->a);
	cc->ms = elapsed_ms(&t0);
	return NULL;
}

/* The revoke answer's upstream revocations (list, borrowed) into o: a
 * failed one is counted and kept, never dropped. */
static void
upstream_of(const json_t *list, struct stoppath_outcome *o)
{
	size_t i;
	json_t *e;

	json_array_foreach(list, i, e)
	{
		bool ok = json_is_true(json_object_get(e, "ok"));
		o->upstream_total++;
		o->upstream_failed += !ok;
		if (o->n_upstream == STOPPATH_UPSTREAM_MAX)
			continue;
		struct stoppath_upstream *u = &o->upstream[o->n_upstream++];
		snprintf(u->secret, sizeof(u->secret), "%s",
		    json_string_value(json_object_get(e, "secret")) ?: "?");
		snprintf(u->kind, sizeof(u->kind), "%s",
		    json_string_value(json_object_get(e, "kind")) ?: "?");
		u->ok = ok;
		u->status =
		    (long)json_integer_value(json_object_get(e, "status"));
		snprintf(u->error, sizeof(u->error), "%s",
		    ok ? ""
		       : json_string_value(json_object_get(e, "error"))
			?: "the issuer refused");
	}
}

json_t *
stoppath_upstream_json(const struct stoppath_outcome *o)
{
	json_t *out = json_array();

	for (size_t i = 0; i < o->n_upstream; i++) {
		const struct stoppath_upstream *u = &o->upstream[i];
		json_t *e = json_pack("{s:s, s:s, s:b}", "secret", u->secret,
		    "kind", u->kind, "ok", u->ok);
		if (e == NULL)
			continue;
		if (u->status != 0)
			json_object_set_new(e, "status",
			    json_integer(u->status));
		if (!u->ok)
			json_object_set_new(e, "error", json_string(u->error));
		json_array_append_new(out, e);
	}
	return out;
}

static void
revoke_job(const struct stoppath_job *j, struct stoppath_outcome *o)
{
	struct httpc_answer a;
	char path[160];
	json_t *why = json_pack("{s:s}", "reason", j->reason);
	int rc;

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", j->job);
	rc = httpc_request(j->cfg->broker, "POST", path, j->key, NULL, why,
	    STOP_CALL_MS, &a);
	json_decref(why);
	if (rc != 0) {
		snprintf(o->revoke_error, sizeof(o->revoke_error),
		    "the broker did not answer");
		return;
	}
	o->revoke_answered = true;
	o->unknown_job = a.status == 404;
	o->revoke_ok = a.status == 200 || (j->recovering && a.status == 404);
	o->tokens_revoked =
	    json_integer_value(json_object_get(a.json, "tokens_revoked"));
	upstream_of(json_object_get(a.json, "upstream"), o);
	if (!o->revoke_ok)
		snprintf(o->revoke_error, sizeof(o->revoke_error), "%ld: %s",
		    a.status, launcher_answer_message(&a));
	httpc_answer_free(&a);
}

/* A workspace of a job that never ran: removed at the hatch (and closed,
 * so that a create still on its way cannot make one), never sealed: there
 * is nothing of the job's in it, and a seal would call its emptiness a
 * clean patch. Failing, it is kept (c.kept says why). */
static void
release_workspace(const struct stoppath_job *j, struct stoppath_outcome *o)
{
	struct httpc_answer a;
	char path[160];

	snprintf(path, sizeof(path), "/v1/workspaces/%s", j->job);
	if (httpc_request(j->cfg->hatch, "DELETE", path, j->key, NULL, NULL,
		STOP_CALL_MS, &a) != 0) {
		snprintf(o->c.kept, sizeof(o->c.kept),
		    "the hatch did not answer the release of the workspace of "
		    "a job that never ran");
		return;
	}
	o->c.none = a.status == 404;
	o->released = a.status == 200 || a.status == 404;
	if (!o->released)
		snprintf(o->c.kept, sizeof(o->c.kept),
		    "releasing the workspace of a job that never ran failed: "
		    "%ld: %s",
		    a.status, launcher_answer_message(&a));
	httpc_answer_free(&a);
}

void
stoppath_run(const struct stoppath_job *j, struct stoppath_outcome *o)
{
	struct close_call cc = { .j = j, .rc = -1 };
	struct timespec t0;

	memset(o, 0, sizeof(*o));
	/* 1. Tokens die first. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	revoke_job(j, o);
	o->ms_revoke = elapsed_ms(&t0);
	/* 2. Then every process of the job. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (j->kill != NULL)
		j->kill(j->kill_arg);
	o->ms_kill = elapsed_ms(&t0);
	if (j->recovering && !o->revoke_ok)
		goto record; /* left for the next try, as it was */
	/* 3. The channel, and every connection on it; and 4. the seal. */
	if (j->channel) {
		o->closed = true;
		cc.threaded =
		    pthread_create(&cc.thread, NULL, close_run, &cc) == 0;
		if (!cc.threaded)
			close_run(&cc);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (j->workspace && j->never_ran)
		release_workspace(j, o);
	else if (j->workspace) {
		launcher_collect(j->cfg->hatch, j->key, j->job, j->patch,
		    &o->c);
		o->sealed = true;
	}
	o->ms_seal = elapsed_ms(&t0);
	if (cc.threaded)
		pthread_join(cc.thread, NULL);
	o->ms_close = cc.ms;
	if (!j->channel)
		snprintf(o->close_error, sizeof(o->close_error),
		    "there was no channel");
	else if (cc.rc != 0)
		snprintf(o->close_error, sizeof(o->close_error),
		    "the proxy did not answer the close");
	else {
		o->egress_known = cc.a.status == 200;
		o->allowed =
		    json_integer_value(json_object_get(cc.a.json, "allowed"));
		o->denied =
		    json_integer_value(json_object_get(cc.a.json, "denied"));
		o->upstream_errors = json_integer_value(
		    json_object_get(cc.a.json, "upstream_errors"));
		if (!o->egress_known)
			snprintf(o->close_error, sizeof(o->close_error),
			    "%ld: %s", cc.a.status,
			    launcher_answer_message(&cc.a));
		httpc_answer_free(&cc.a);
	}
record:
	/* 5. The record goes only when all of that is done. */
	o->finished = o->revoke_ok && o->c.kept[0] == '\0' &&
	    !(j->recovering && !o->sealed && !o->released);
	launcher_record_close(j->cfg->common.state_dir, j->job, j->record_fd,
	    o->finished);
}

int
stoppath_exit_status(const struct stoppath_outcome *o, bool launcher_error,
    int job_status)
{
	if (!o->revoke_ok)
		return STOPPATH_EXIT_REVOKE_FAILED;
	if (launcher_error)
		return STOPPATH_EXIT_LAUNCHER;
	if (o->c.kept[0] != '\0')
		return STOPPATH_EXIT_PATCH_KEPT;
	return job_status;
}
