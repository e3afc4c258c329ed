/*
 * The control API, for the launcher: open a job's channel (after reading
 * its rules from the broker), close it, read its decisions. Opening waits
 * for the broker without holding the loop: the request is deferred and
 * resumed from the broker call's answer.
 */
#include "proxy.h"

#include "log.h"
#include "metrics.h"
#include "problems.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

struct control_open {
	TAILQ_ENTRY(control_open) link;
	struct proxy *p;
	struct http_request *req;
	struct brokerclient_call *call;
	bool answered; /* the broker answered, or the proxy is stopping */
	bool stopping;
	int status; /* the broker's, 0 for none */
	json_t *body; /* the broker's answer */
	uint64_t asked; /* proxy_bindings_asking's, for its bindings */
};

static void
open_free(void *arg)
{
	struct control_open *o = arg;

	if (!o->answered) {
		brokerclient_cancel(o->call);
		TAILQ_REMOVE(&o->p->opens, o, link);
	}
	json_decref(o->body);
	free(o);
}

static void
open_answered(void *arg, int status, json_t *body)
{
	struct control_open *o = arg;

	o->answered = true;
	o->status = status;
	o->body = json_incref(body);
	TAILQ_REMOVE(&o->p->opens, o, link);
	http_request_resume(o->req);
	proxy_kick(o->p);
}

static void
open_reply(struct proxy *p, struct control_open *o, const char *id,
    struct http_response *res)
{
	const char *state =
	    json_string_value(json_object_get(o->body, "state"));
	struct pjob *j;
	char err[256] = "";
	int r;

	if (o->status == 0) {
		http_reply_error(res, 503, "broker_unavailable",
		    "the broker did not answer: no channel without the "
		    "job's rules");
		return;
	}
	if (o->status == 404) {
		http_reply_error(res, 404, "unknown_job",
		    "the broker knows no job %s", id);
		return;
	}
	if (o->status != 200 || state == NULL) {
		http_reply_error(res, 503, "broker_error",
		    "the broker answered %d for the job's rules", o->status);
		return;
	}
	if (strcmp(state, "running") != 0 ||
	    brokerclient_recently_revoked(p->bclient, id)) {
		http_reply_error(res, 409, "job_not_running",
		    "the job is %s: it gets no channel",
		    strcmp(state, "running") != 0 ? state : "revoked");
		return;
	}
	/* A new channel starts with the broker's latest bindings (guard). */
	if (json_is_array(json_object_get(o->body, "bindings")))
		proxy_bindings(p, json_object_get(o->body, "bindings"),
		    json_object_get(o->body, "bindings_epoch"), o->asked);
	r = job_open(p, id, o->body, &j, err, sizeof(err));
	if (r == -EEXIST) {
		http_reply_error(res, 409, "exists",
		    "the job already has a channel");
		return;
	}
	if (r == -EINVAL) {
		http_reply_error(res, 502, "bad_rules",
		    "the broker's rules for the job were refused: %s", err);
		return;
	}
	if (r < 0) {
		log_error("channel_failed", "{s:s, s:s}", "job", id, "error",
		    err[0] != '\0' ? err : strerror(-r));
		http_reply_error(res, 500, "channel_failed",
		    "could not open the job's channel");
		return;
	}
	log_info("job_opened", "{s:s, s:s, s:i}", "job", id, "channel",
	    j->channel, "rules", (int)j->rules.n);
	http_reply_json(res, 201,
	    json_pack("{s:s, s:s, s:s}", "job", j->id, "channel", j->channel,
		"ca_pem", ca_pem(j->ca)));
}

static void
job_post(void *ctx, struct http_request *req, struct http_response *res)
{
	struct proxy *p = ctx;
	struct control_open *o = http_request_state(req);
	const char *id = http_request_param(req, 0);
	char path[128];

	if (o != NULL) { /* resumed */
		if (o->stopping)
			http_reply_error(res, 503, "stopping",
			    "the proxy is stopping");
		else
			open_reply(p, o, id, res);
		return;
	}
	if (!name_ok(id, JOB_ID_MAX, "_-")) {
		http_reply_error(res, 400, "malformed",
		    "a job id is 1 to %d of [A-Za-z0-9_-]", JOB_ID_MAX);
		return;
	}
	/* Whatever the body holds is a mistake, refused before the broker
	 * is asked. */
	if (http_refuse_body_fields(req, res))
		return;
	if (job_find(p, id) != NULL) {
		http_reply_error(res, 409, "exists",
		    "the job already has a channel");
		return;
	}
	if (p->verifier_key == NULL) {
		http_reply_error(res, 503, "no_broker_key",
		    "broker_key_file is not configured: the proxy cannot "
		    "read rules");
		return;
	}
	if (!brokerclient_feed_ok(p->bclient)) {
		http_reply_error(res, 503, "feed_unavailable",
		    "the broker's revocation feed is not answering: no new "
		    "channel until it does");
		return;
	}
	o = calloc(1, sizeof(*o));
	if (o == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	o->p = p;
	o->req = req;
	http_request_set_state(req, o, open_free);
	snprintf(path, sizeof(path), "/v1/jobs/%s/egress", id);
	http_request_defer(req);
	TAILQ_INSERT_TAIL(&p->opens, o, link);
	o->asked = proxy_bindings_asking(p);
	o->call =
	    brokerclient_call(p->bclient, "GET", path, NULL, open_answered, o);
	if (o->call == NULL) {
		o->answered = true;
		TAILQ_REMOVE(&p->opens, o, link);
		http_request_resume(req);
		proxy_kick(p);
	}
}

static void
job_delete(void *ctx, struct http_request *req, struct http_response *res)
{
	struct proxy *p = ctx;
	struct pjob *j = job_find(p, http_request_param(req, 0));
	unsigned n;

	if (j == NULL) {
		http_reply_error(res, 404, "unknown_job",
		    "the proxy has no channel for this job");
		return;
	}
	n = job_close(j, "deleted");
	log_info("job_closed", "{s:s, s:i}", "job", j->id, "connections_closed",
	    (int)n);
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s, s:i, s:I, s:I, s:I}", "job", j->id, "state",
		j->closed_why, "connections_closed", (int)n, "allowed",
		(json_int_t)j->allowed, "denied", (json_int_t)j->denied,
		"upstream_errors", (json_int_t)j->upstream_errors));
}

static void
job_get_log(void *ctx, struct http_request *req, struct http_response *res)
{
	struct proxy *p = ctx;
	struct pjob *j = job_find(p, http_request_param(req, 0));
	json_t *lines;
	const char *s, *nl;

	if (j == NULL) {
		http_reply_error(res, 404, "unknown_job",
		    "the proxy has no log for this job");
		return;
	}
	lines = json_array();
	s = buf_str(&j->log);
	for (; s != NULL && *s != '\0'; s = nl + 1) {
		nl = strchr(s, '\n');
		if (nl == NULL)
			break;
		json_t *v = json_loadb(s, (size_t)(nl - s), 0, NULL);
		if (v != NULL)
			json_array_append_new(lines, v);
	}
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:o}", "job", j->id,
		"state", j->closed ? j->closed_why : "open", "allowed",
		(json_int_t)j->allowed, "denied", (json_int_t)j->denied,
		"upstream_errors", (json_int_t)j->upstream_errors, "dropped",
		(json_int_t)j->log_dropped, "decisions", lines));
}

const struct http_route control_routes[] = {
	{ "POST", "/v1/jobs/*", ROLE_LAUNCHER, BODY_JSON_OPTIONAL, job_post },
	{ "DELETE", "/v1/jobs/*", ROLE_LAUNCHER, BODY_NONE, job_delete },
	{ "GET", "/v1/jobs/*/log", ROLE_LAUNCHER, BODY_NONE, job_get_log },
	{ "GET", "/v1/decisions", ROLE_ADMIN, BODY_NONE, decisions_get },
};
const size_t control_nroutes = ARRAY_SIZE(control_routes);

void
control_stopping(void *ctx)
{
	struct proxy *p = ctx;

	while (!TAILQ_EMPTY(&p->opens)) {
		struct control_open *o = TAILQ_FIRST(&p->opens);
		TAILQ_REMOVE(&p->opens, o, link);
		brokerclient_cancel(o->call);
		o->call = NULL;
		o->answered = true;
		o->stopping = true;
		http_request_resume(o->req);
	}
	proxy_kick(p);
}

struct job_counts {
	unsigned open; /* jobs with an open channel */
	unsigned closed; /* closed, their log kept for the linger */
	unsigned pooled; /* idle upstream connections kept for them */
};

static struct job_counts
count_jobs(const struct proxy *p)
{
	struct job_counts n = { 0 };
	const struct pjob *j;

	TAILQ_FOREACH(j, &p->jobs, link)
	{
		if (j->closed)
			n.closed++;
		else
			n.open++;
		n.pooled += j->pool.n;
	}
	return n;
}

int
control_health(void *ctx, json_t *out)
{
	struct proxy *p = ctx;
	struct job_counts n = count_jobs(p);

	json_object_set_new(out, "pooled", json_integer(n.pooled));
	json_object_set_new(out, "feed",
	    json_string(
		brokerclient_feed_ok(p->bclient) ? "ok" : "unavailable"));
	json_object_set_new(out, "failing_closed",
	    json_boolean(!brokerclient_feed_ok(p->bclient)));
	json_object_set_new(out, "feed_broker",
	    json_string(brokerclient_current(p->bclient)));
	json_object_set_new(out, "jobs", json_integer(n.open));
	json_object_set_new(out, "jobs_closed", json_integer(n.closed));
	json_object_set_new(out, "connections",
	    json_integer((json_int_t)p->conns_open));
	return 0;
}

void
control_metrics(void *ctx, struct buf *out)
{
	struct proxy *p = ctx;
	struct job_counts n = count_jobs(p);

	metrics_one(out, "cordon_proxy_upstream_pooled", "gauge",
	    "Idle upstream connections kept for the jobs' next requests.",
	    n.pooled);
	metrics_header(out, "cordon_proxy_decisions_total", "counter",
	    "Decisions logged, by outcome.");
	metrics_sample(out, "cordon_proxy_decisions_total",
	    "decision=\"allow\"", p->allowed);
	metrics_sample(out, "cordon_proxy_decisions_total", "decision=\"deny\"",
	    p->denied);
	metrics_sample(out, "cordon_proxy_decisions_total",
	    "decision=\"error\"", p->upstream_errors);
	metrics_one(out, "cordon_proxy_token_cache_hits_total", "counter",
	    "Tokens judged good from the job's cache of the broker's answers, "
	    "without an introspection (egress.md).",
	    p->token_cache_hits);
	metrics_one(out, "cordon_proxy_injections_total", "counter",
	    "Requests sent upstream with an injected credential.", p->injected);
	metrics_one(out, "cordon_proxy_reflections_total", "counter",
	    "Injected values found in an upstream's answer and redacted.",
	    p->reflected);
	metrics_one(out, "cordon_proxy_scan_throttled_total", "counter",
	    "Times a job's connection stopped reading its upstream, its "
	    "scan budget spent (scan_throttled).",
	    p->scan_throttled);
	metrics_one(out, "cordon_proxy_encoded_refused_total", "counter",
	    "Answers to injected requests in a coding the scanner cannot "
	    "read, refused (502 encoded_answer).",
	    p->encoded_refused);
	metrics_one(out, "cordon_proxy_partial_refused_total", "counter",
	    "Answers to injected requests in part (206, multipart/byteranges), "
	    "refused (502 partial_answer).",
	    p->partial_refused);
	metrics_one(out, "cordon_proxy_jobs", "gauge",
	    "Jobs with an open channel.", n.open);
	metrics_one(out, "cordon_proxy_jobs_closed", "gauge",
	    "Closed jobs whose decision log is still kept.", n.closed);
	metrics_one(out, "cordon_proxy_connections", "gauge",
	    "Connections open on every channel.", p->conns_open);
	metrics_one(out, "cordon_proxy_feed_ok", "gauge",
	    "1 while the revocation feed answers; 0: every request refused.",
	    brokerclient_feed_ok(p->bclient) ? 1 : 0);
	metrics_one(out, "cordon_proxy_feed_seq", "gauge",
	    "The last revocation sequence number applied.",
	    (uint64_t)brokerclient_feed_seq(p->bclient));
	metrics_one(out, "cordon_proxy_guarded_requests_total", "counter",
	    "Requests to a place a secret is bound to, their answers scanned "
	    "for it whatever their job (credentials.md).",
	    p->guarded);
	metrics_one(out, "cordon_proxy_guard_scan_releases_total", "counter",
	    "Secrets released to the proxy to scan a job's answers, never "
	    "injected.",
	    p->scan_releases);
	metrics_one(out, "cordon_proxy_bindings_told_total", "counter",
	    "Upstream addresses told the broker (POST /v1/bindings) before "
	    "an injected request went there.",
	    p->bindings_told);
	metrics_one(out, "cordon_proxy_guard_bindings", "gauge",
	    "Secrets' bindings in the list the guard matches requests "
	    "against.",
	    p->guard.nb);
	uint64_t rel, rel_waiting, rel_refused;
	brokerclient_release_counts(p->bclient, &rel, &rel_waiting,
	    &rel_refused);
	metrics_one(out, "cordon_proxy_releases_in_flight", "gauge",
	    "Secrets' releases asked of the broker, not answered yet.", rel);
	metrics_one(out, "cordon_proxy_releases_waiting", "gauge",
	    "Releases past their job's 4 in flight, waiting their turn.",
	    rel_waiting);
	metrics_one(out, "cordon_proxy_releases_refused_total", "counter",
	    "Releases refused at the proxy past a job's 16 waiting or all "
	    "jobs' 64 in flight (503 releases_busy).",
	    rel_refused);
	uint64_t told, kept, lost;
	brokerclient_reflection_counts(p->bclient, &told, &kept, &lost);
	metrics_one(out, "cordon_proxy_reflections_reported_total", "counter",
	    "Reflected answers and trips the broker counted for its budget.",
	    told);
	metrics_one(out, "cordon_proxy_reflections_pending", "gauge",
	    "Reflections not counted by the broker yet, told again.", kept);
	metrics_one(out, "cordon_proxy_reflections_unreported_total", "counter",
	    "Reflections never counted by the broker (no room, or given up).",
	    lost);
}
