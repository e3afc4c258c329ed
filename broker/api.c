/*
 * The broker's HTTP API (docs/api.md, cordon-broker): manifests, jobs, tokens,
 * introspection, revocation and its feed, audit. Handlers check their
 * input fully, call the store, and answer; when a check cannot be made
 * (the store fails), the answer is a refusal, never a grant.
 */
#include "broker.h"

#include "bindings.h"
#include "bodies.h"
#include "feed_page.h"
#include "issuers.h"
#include "log.h"
#include "manifest.h"
#include "metrics.h"
#include "problems.h"
#include "reflections.h"
#include "secrets.h"
#include "token.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define JOB_ID_RANDOM 20

/* --- small helpers -------------------------------------------------------- */

static const char *
actor_of(const struct http_request *req)
{
	unsigned roles = http_request_roles(req);

	if (roles & ROLE_ADMIN)
		return "admin";
	if (roles & ROLE_LAUNCHER)
		return "launcher";
	if (roles & ROLE_VERIFIER)
		return "verifier";
	if (roles & ROLE_HATCH)
		return "hatch";
	return "anonymous";
}

static void
reply_store_error(struct broker *b, struct http_response *res, int r)
{
	atomic_fetch_add(&b->store_errors, 1);
	log_error("store_failed", "{s:s}", "error", strerror(-r));
	http_reply_error(res, 503, "store_unavailable",
	    "the broker's database failed (%s); nothing was granted",
	    strerror(-r));
}

/* For a store call about one job: 404 when there is none, else 503. */
static void
reply_job_error(struct broker *b, struct http_response *res, int r)
{
	if (r == -ENOENT)
		http_reply_error(res, 404, "unknown_job", "no such job");
	else
		reply_store_error(b, res, r);
}

/*
 * Answers a body's refusal (bodies.h): 422 invalid_request with its
 * problems, and false; true when it passed. Steals problems.
 */
static bool
body_passed(int r, json_t *problems, struct http_response *res)
{
	if (r == 0) {
		json_decref(problems);
		return true;
	}
	http_reply_problems(res, "invalid_request", NULL, problems);
	return false;
}

/* Parses a query argument as an integer in [min, max]; absent = dflt. */
static bool
query_int(const struct http_request *req, const char *name, long long min,
    long long max, long long dflt, long long *ret, struct http_response *res)
{
	const char *s = http_request_query(req, name);
	char *end;
	long long v;

	if (s == NULL) {
		*ret = dflt;
		return true;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (s[0] == '\0' || *end != '\0' || errno != 0 || v < min || v > max ||
	    !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) {
		http_reply_error(res, 400, "malformed",
		    "query argument %s must be an integer from %lld to %lld",
		    name, min, max);
		return false;
	}
	*ret = v;
	return true;
}

static json_t *
token_row_json(const struct token_row *t)
{
	json_t *params = json_loads(t->params, 0, NULL);

	return json_pack("{s:s, s:s, s:o, s:s, s:I, s:I}", "id", t->id,
	    "capability", t->capability, "params",
	    params != NULL ? params : json_object(), "aud", t->audience, "iat",
	    (json_int_t)t->iat, "exp", (json_int_t)t->exp);
}

/*
 * Reads job id and the manifest version it runs: 0, or -1 after answering
 * (404 unknown_job, or 503 for the store).
 */
static int
job_and_manifest(struct broker *b, const char *id, struct job *j,
    struct manifest_version *m, struct http_response *res)
{
	int r = store_job_get(b->store, id, j, NULL);

	if (r == 0)
		r = store_manifest_get(b->store, j->manifest,
		    j->manifest_version, m);
	if (r < 0) {
		reply_job_error(b, res, r);
		return -1;
	}
	return 0;
}

/* --- manifests ------------------------------------------------------------ */

static void
put_manifest(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *name = http_request_param(req, 0);
	json_t *body = http_request_body(req);
	json_t *problems = json_array(), *warnings = json_array(), *prev;
	char sha[65];
	int64_t version;
	bool added;
	int r;

	if (!manifest_name_ok(name))
		problems_add(problems, "name",
		    "the path's name must be [a-z0-9][a-z0-9._-]{0,63}");
	if (manifest_validate(body, name, problems, warnings)) {
		secrets_check_manifest(b, body, problems);
		bindings_check_manifest(b, body, problems);
	}
	if (json_array_size(problems) > 0) {
		json_t *err = json_pack("{s:s, s:s, s:o, s:o}", "error",
		    "invalid_manifest", "message", "the manifest is refused",
		    "problems", problems, "warnings", warnings);
		char msg[64];
		snprintf(msg, sizeof(msg), "%zu problem%s",
		    json_array_size(problems),
		    json_array_size(problems) == 1 ? "" : "s");
		json_object_set_new(err, "message", json_string(msg));
		http_reply_json(res, 422, err);
		log_info("manifest_refused", "{s:s, s:I}", "manifest", name,
		    "problems", (json_int_t)json_array_size(problems));
		return;
	}
	json_decref(problems);
	char *text = manifest_canonical(body, sha);
	if (text == NULL) {
		json_decref(warnings);
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	/* Its injecting rules keep the bindings within what every proxy
	 * reads (redteam3 #9): counted in the put's own write, which says
	 * which cap it would pass. */
	struct store_bind_over over = { NULL, 0 };
	r = store_manifest_put_over(b->store, name, text, sha, actor_of(req),
	    &version, &prev, &added, &over);
	free(text);
	if (r < 0) {
		json_decref(warnings);
		if (r == -EDQUOT)
			bindings_reply_cap(res, &over, NULL);
		else
			reply_store_error(b, res, r);
		return;
	}
	json_t *planes = added ? manifest_planes(prev, body) : json_array();
	json_decref(prev);
	log_info("manifest_put", "{s:s, s:I, s:s, s:b, s:O}", "manifest", name,
	    "version", (json_int_t)version, "sha256", sha, "new", added,
	    "planes", planes);
	http_reply_json(res, 200,
	    json_pack("{s:s, s:I, s:s, s:o, s:o, s:b}", "name", name, "version",
		(json_int_t)version, "sha256", sha, "planes", planes,
		"warnings", warnings, "new_version", added));
}

static void
get_manifest(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *name = http_request_param(req, 0);
	struct manifest_version m;
	long long version;
	int r;

	if (!query_int(req, "version", 1, INT64_MAX, 0, &version, res))
		return;
	r = store_manifest_get(b->store, name, version, &m);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_manifest",
		    "no manifest %s%s", name,
		    version > 0 ? " at that version" : "");
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	http_reply_json(res, 200,
	    json_pack("{s:s, s:I, s:s, s:I, s:o}", "name", name, "version",
		(json_int_t)m.version, "sha256", m.sha256, "created",
		(json_int_t)m.created, "manifest", m.body));
}

/*
 * GET /v1/manifests?limit=&after=: the manifests by name, a page at a
 * time; next (the page's last name, for after=) only when more follow.
 */
static void
list_manifests(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *after = http_request_query(req, "after");
	long long limit;
	json_t *list;
	int r;

	if (!query_int(req, "limit", 1, 1000, 100, &limit, res))
		return;
	if (after != NULL && !manifest_name_ok(after)) {
		http_reply_error(res, 400, "malformed",
		    "query argument after must be a manifest's name");
		return;
	}
	/* One more than asked: whether another page follows. */
	r = store_manifest_list(b->store, after, (size_t)limit + 1, &list);
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	json_t *last = NULL;
	if (json_array_size(list) > (size_t)limit) {
		json_array_remove(list, (size_t)limit);
		last = json_object_get(json_array_get(list, (size_t)limit - 1),
		    "name");
	}
	http_reply_json(res, 200,
	    json_pack("{s:O, s:s?}", "manifests", list, "next",
		json_string_value(last)));
	json_decref(list);
}

/* --- jobs ----------------------------------------------------------------- */

/* Mints the capabilities marked mint_at_start: arrays of rows and values. */
static int
mint_at_start(struct broker *b, const char *job, int64_t deadline,
    const json_t *manifest, struct token_row *rows,
    char (*values)[TOKEN_VALUE_MAX], size_t max, size_t *ret_n)
{
	json_t *caps = json_object_get(manifest, "capabilities"), *c;
	size_t i, n = 0;

	json_array_foreach(caps, i, c)
	{
		if (!json_is_true(json_object_get(c, "mint_at_start")))
			continue;
		if (n == max)
			return -E2BIG;
		/* Validation made each parameter single-valued. */
		json_t *params = json_object(), *allow;
		const char *key;
		json_object_foreach(json_object_get(c, "params"), key, allow)
		    json_object_set(params, key, json_array_get(allow, 0));
		json_t *ttl = json_object_get(c, "ttl_seconds");
		int r = capability_mint(b->pepper, job, deadline, c, params,
		    ttl != NULL ? json_integer_value(ttl) : MANIFEST_MAX_TTL,
		    values[n], &rows[n]);
		json_decref(params);
		if (r < 0)
			return r;
		n++;
	}
	*ret_n = n;
	return 0;
}

static void
create_job(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	json_t *problems = json_array();
	struct manifest_version m;
	struct token_row rows[32 + CANARIES_MAX];
	char values[32 + CANARIES_MAX][TOKEN_VALUE_MAX], rnd[JOB_ID_RANDOM + 1];
	struct job j = { 0 };
	size_t n = 0, ncanaries = 0;
	json_int_t want_canaries = -1;
	const char *name;
	int r;

	r = body_create_job(http_request_body(req), &name, &want_canaries,
	    problems);
	if (r == -ERANGE) {
		json_decref(problems);
		http_reply_error(res, 422, "invalid_canaries",
		    "canaries is a count from 0 to %d", CANARIES_MAX);
		return;
	}
	if (!body_passed(r, problems, res))
		return;
	r = store_manifest_get(b->store, name, 0, &m);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_manifest",
		    "no manifest named %.64s", name);
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	json_t *limits = manifest_limits(m.body);
	if (token_random(rnd, JOB_ID_RANDOM) < 0) {
		json_decref(limits);
		manifest_version_free(&m);
		http_reply_error(res, 503, "no_randomness",
		    "the random number generator failed");
		return;
	}
	snprintf(j.id, sizeof(j.id), "job_%s", rnd);
	snprintf(j.manifest, sizeof(j.manifest), "%s", name);
	j.manifest_version = m.version;
	j.created = (int64_t)time(NULL);
	j.deadline = j.created +
	    json_integer_value(json_object_get(limits, "wall_seconds"));
	j.lease_expires = j.created + b->cfg.lease_seconds < j.deadline
	    ? j.created + b->cfg.lease_seconds
	    : j.deadline;

	r = mint_at_start(b, j.id, j.deadline, m.body, rows, values, 32, &n);
	/* Canaries: tokens of a capability no job has, planted where a
	 * hostile job would look; any use of one is a tripwire. */
	if (want_canaries < 0)
		want_canaries =
		    json_is_true(json_object_get(m.body, "canaries"))
		    ? CANARIES_DEFAULT
		    : 0;
	for (; r == 0 && ncanaries < (size_t)want_canaries; ncanaries++) {
		json_t *cap = json_pack("{s:s, s:s}", "name", CANARY_CAPABILITY,
		    "audience", CANARY_CAPABILITY);
		json_t *none = json_object();
		r = capability_mint(b->pepper, j.id, j.deadline, cap, none,
		    MANIFEST_MAX_TTL, values[n + ncanaries],
		    &rows[n + ncanaries]);
		json_decref(cap);
		json_decref(none);
	}
	if (r == 0)
		r = store_job_create(b->store, &j, rows, n + ncanaries,
		    actor_of(req));
	if (r < 0) {
		for (size_t i = 0; i < n + ncanaries; i++) {
			OPENSSL_cleanse(values[i], sizeof(values[i]));
			free(rows[i].params);
		}
		json_decref(limits);
		manifest_version_free(&m);
		reply_store_error(b, res, r);
		return;
	}

	json_t *tokens = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *t = token_row_json(&rows[i]);
		json_object_set_new(t, "access_token", json_string(values[i]));
		json_object_set_new(t, "token_type", json_string("Bearer"));
		json_array_append_new(tokens, t);
		OPENSSL_cleanse(values[i], sizeof(values[i]));
		free(rows[i].params);
	}
	atomic_fetch_add(&b->minted, n);
	json_t *canaries = json_array();
	for (size_t i = n; i < n + ncanaries; i++) {
		json_array_append_new(canaries, json_string(values[i]));
		OPENSSL_cleanse(values[i], sizeof(values[i]));
		free(rows[i].params);
	}
	json_t *env = json_object_get(m.body, "env");
	json_t *command = json_object_get(m.body, "command");
	log_info("job_created", "{s:s, s:s, s:I, s:I}", "job", j.id, "manifest",
	    name, "manifest_version", (json_int_t)m.version, "tokens_minted",
	    (json_int_t)n);
	/* What the launcher needs, no more: the proxy reads the egress rules
	 * and the hatch the return policy from here themselves. */
	http_reply_json(res, 201,
	    json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:O, s:o, s:o, "
		      "s:o, s:o}",
		"job", j.id, "manifest", name, "manifest_version",
		(json_int_t)m.version, "manifest_sha256", m.sha256,
		"lease_seconds", (json_int_t)b->cfg.lease_seconds, "created",
		(json_int_t)j.created, "deadline", (json_int_t)j.deadline,
		"command", command != NULL ? command : json_null(), "env",
		env != NULL ? json_deep_copy(env) : json_object(), "limits",
		limits, "tokens", tokens, "canaries", canaries));
	manifest_version_free(&m);
}

static json_t *
job_json(const struct job *j)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:s?}",
	    "job", j->id, "manifest", j->manifest, "manifest_version",
	    (json_int_t)j->manifest_version, "state", j->state, "created",
	    (json_int_t)j->created, "deadline", (json_int_t)j->deadline,
	    "lease_expires", (json_int_t)j->lease_expires, "tokens_minted",
	    (json_int_t)j->tokens_minted, "stop_reason",
	    j->stop_reason[0] != '\0' ? j->stop_reason : NULL);
}

static void
get_job(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct job j;
	json_t *tokens;
	int r =
	    store_job_get(b->store, http_request_param(req, 0), &j, &tokens);

	if (r < 0) {
		reply_job_error(b, res, r);
		return;
	}
	json_t *out = job_json(&j);
	json_object_set_new(out, "tokens", tokens);
	http_reply_json(res, 200, out);
}

static void
heartbeat(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct job j;
	int r = store_job_heartbeat(b->store, http_request_param(req, 0),
	    b->cfg.lease_seconds, &j);

	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_job", "no such job");
		return;
	}
	if (r == -ESTALE) {
		http_reply_json(res, 409,
		    json_pack("{s:s, s:s, s:s, s:s}", "error", "job_revoked",
			"message", "the job is revoked; stop it", "job", j.id,
			"stop_reason", j.stop_reason));
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	http_reply_json(res, 200, job_json(&j));
}

/* Revokes job in the store and wakes the followers: 0 or -errno. */
static int
revoke_tokens(struct broker *b, const char *job, const char *reason,
    const char *actor, struct revoke_result *rr)
{
	int r = store_job_revoke(b->store, job, reason, actor, rr);

	if (r < 0)
		return r;
	if (!rr->already) {
		atomic_fetch_add(&b->revoked_jobs, 1);
		feed_publish(b->feed, rr->seq);
		log_info("job_revoked", "{s:s, s:s, s:s, s:I, s:I}", "job", job,
		    "reason", reason, "by", actor, "tokens_revoked",
		    (json_int_t)rr->tokens_revoked, "seq", (json_int_t)rr->seq);
	}
	return 0;
}

/* revoke_tokens, then its upstream credentials handed to the background
 * revocations: without a caller to tell (the sweep, a tripwire), nothing
 * waits for an issuer. 0 or -errno. */
static int
revoke_job(struct broker *b, const char *job, const char *reason,
    const char *actor, struct revoke_result *rr)
{
	int r = revoke_tokens(b, job, reason, actor, rr);

	if (r == 0)
		json_decref(secrets_revoke_upstream(b, job, actor, true));
	return r;
}

static void
revoke_answer(struct broker *b, const char *job, const struct revoke_result *rr,
    json_t *upstream, struct http_response *res)
{
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:O}", "job", job,
		"state", "revoked", "reason", rr->reason, "tokens_revoked",
		(json_int_t)rr->tokens_revoked, "seq", (json_int_t)rr->seq,
		"propagated", feed_acks_result(b->feed, rr->seq), "upstream",
		upstream != NULL ? upstream : json_array()));
}

/* A revoke request's state while it waits for its upstream
 * revocations, then for the acknowledgements. */
struct revoke_state {
	struct issuers_revoke w;
	struct http_request *req;
	struct revoke_result rr;
	json_t *upstream;
	bool acks; /* the upstream list in: waiting for the followers */
};

static void
revoke_state_free(void *p)
{
	struct revoke_state *st = p;

	json_decref(st->upstream);
	json_decref(st->w.list);
	free(st);
}

/* The issuers' revoke worker is done with the job's credentials. */
static void
revoke_upstream_done(struct issuers_revoke *w)
{
	struct revoke_state *st = w->arg;

	http_request_resume(st->req);
}

/*
 * Revoke (the job's tokens at once), then its upstream credentials at
 * their issuers on the issuers' revoke workers (no HTTP thread waits on
 * an issuer), then answer once the followers acknowledged (or were
 * declared gone): the request is deferred meanwhile, its revoke kept as
 * its state.
 */
static void
revoke_handler(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct revoke_state *st = http_request_state(req);
	const char *job = http_request_param(req, 0);
	const char *reason = NULL;
	json_t *problems;
	int r;

	if (st != NULL && st->acks) { /* the followers had their chance */
		revoke_answer(b, job, &st->rr, st->upstream, res);
		return;
	}
	if (st != NULL) { /* the upstream revocations' list */
		st->upstream = st->w.list;
		st->w.list = NULL;
		secrets_revoke_told(b, job, actor_of(req), st->upstream);
		st->acks = true;
		if (feed_wait_acks(b->feed, st->rr.seq, req) == 1)
			revoke_answer(b, job, &st->rr, st->upstream, res);
		return;
	}
	problems = json_array();
	r = body_revoke_job(http_request_body(req), &reason, problems);
	if (!body_passed(r, problems, res))
		return;
	if (reason == NULL || reason[0] == '\0')
		reason = (http_request_roles(req) & ROLE_ADMIN) ? "operator"
								: "stopped";
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	http_request_set_state(req, st, revoke_state_free);
	r = revoke_tokens(b, job, reason, actor_of(req), &st->rr);
	if (r < 0) {
		reply_job_error(b, res, r);
		return;
	}
	/* After the job's own tokens died: deferred before a worker may
	 * resume it; a list made now (none held) resumes it at once. */
	st->req = req;
	st->w.done = revoke_upstream_done;
	st->w.arg = st;
	http_request_defer(req);
	if (issuers_revoke_queue(b->issuers, job, &st->w) != 0)
		http_request_resume(req);
}

static void
job_egress(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct manifest_version m;
	struct job j;

	json_t *bindings;
	int64_t epoch;
	int r;

	if (job_and_manifest(b, http_request_param(req, 0), &j, &m, res) < 0)
		return;
	/* The secrets' bindings too: a channel opens with a fresh list. */
	if ((r = bindings_answer(b, &bindings, &epoch)) < 0) {
		manifest_version_free(&m);
		reply_store_error(b, res, r);
		return;
	}
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s, s:I, s:o, s:o, s:I}", "job", j.id, "state",
		j.state, "deadline", (json_int_t)j.deadline, "egress",
		manifest_egress(m.body), "bindings", bindings, "bindings_epoch",
		(json_int_t)epoch));
	manifest_version_free(&m);
}

/* The job's return policy and disk cap, for the hatch: the launcher holds
 * no policy. */
static void
job_return(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct manifest_version m;
	struct job j;

	if (job_and_manifest(b, http_request_param(req, 0), &j, &m, res) < 0)
		return;
	json_t *ret = json_object_get(m.body, "return");
	json_t *limits = manifest_limits(m.body);
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s, s:I, s:o, s:O}", "job", j.id, "state",
		j.state, "deadline", (json_int_t)j.deadline, "return",
		ret != NULL ? json_deep_copy(ret) : json_object(), "disk_mb",
		json_object_get(limits, "disk_mb")));
	json_decref(limits);
	manifest_version_free(&m);
}

/* --- tokens --------------------------------------------------------------- */

/* A mint between its request and its commit. */
struct mint_state {
	struct http_request *req;
	struct token_row row;
	char value[TOKEN_VALUE_MAX];
	int64_t max_tokens;
	atomic_int result;
};

/* Seconds on the monotonic clock, for the mint buckets. */
static double
now_s(void)
{
	return (double)monotonic_ms() / 1000.0;
}

/*
 * 429 token_ceiling: job holds all the tokens its manifest allows. The
 * first refusal (of this broker's run) is audited, the others counted.
 */
static void
refuse_ceiling(struct broker *b, const char *job, int64_t max_tokens,
    struct http_response *res)
{
	atomic_fetch_add(&b->refused_mints, 1);
	atomic_fetch_add(&b->ceiling_mints, 1);
	if (throttle_ceiling_reached(b->throttle, job, now_s())) {
		log_warn("token_ceiling", "{s:s, s:I}", "job", job,
		    "max_tokens", (json_int_t)max_tokens);
		if (store_audit_async(b->store, "token_ceiling",
			json_pack("{s:s, s:s, s:I}", "job", job, "actor",
			    "broker", "max_tokens", (json_int_t)max_tokens)) <
		    0)
			log_error("audit_failed", "{s:s}", "event",
			    "token_ceiling");
	}
	http_reply_json(res, 429,
	    json_pack("{s:s, s:s, s:I}", "error", "token_ceiling", "message",
		"the job has minted every token its manifest allows "
		"(mint.max_tokens); nothing was granted",
		"max_tokens", (json_int_t)max_tokens));
}

/*
 * Takes one mint from the job's bucket: the database's on PostgreSQL (one
 * for the fleet), else this broker's. True when within the rate, else
 * false after answering 429 mint_rate_limited with Retry-After (or 503
 * when the database cannot tell). The first refusal of a run is
 * audited, the others counted.
 */
static bool
mint_rate_ok(struct broker *b, const char *job, const struct manifest_mint *lim,
    struct http_response *res)
{
	int64_t retry = 1;
	char secs[24];
	bool first = false;
	enum throttle_verdict v;
	int r = store_mint_take(b->store, job, lim->per_minute, lim->burst,
	    &first, &retry);

	if (r == -ENOTSUP)
		v = throttle_take(b->throttle, job, lim->per_minute, lim->burst,
		    now_s(), &retry);
	else if (r == 0)
		v = THROTTLE_PASS;
	else if (r == -EAGAIN)
		v = first ? THROTTLE_LIMITED_FIRST : THROTTLE_LIMITED;
	else {
		reply_store_error(b, res, r);
		return false;
	}
	if (v == THROTTLE_PASS)
		return true;
	atomic_fetch_add(&b->refused_mints, 1);
	atomic_fetch_add(&b->rate_limited_mints, 1);
	if (v == THROTTLE_LIMITED_FIRST) {
		log_warn("mint_rate_limited", "{s:s, s:I, s:I}", "job", job,
		    "per_minute", (json_int_t)lim->per_minute, "burst",
		    (json_int_t)lim->burst);
		if (store_audit_async(b->store, "mint_rate_limited",
			json_pack("{s:s, s:s, s:I, s:I}", "job", job, "actor",
			    "broker", "per_minute", (json_int_t)lim->per_minute,
			    "burst", (json_int_t)lim->burst)) < 0)
			log_error("audit_failed", "{s:s}", "event",
			    "mint_rate_limited");
	}
	http_reply_json(res, 429,
	    json_pack("{s:s, s:s, s:I}", "error", "mint_rate_limited",
		"message",
		"the job asks for tokens faster than its manifest allows "
		"(mint.per_minute, mint.burst); retry later",
		"retry_after", (json_int_t)retry));
	snprintf(secs, sizeof(secs), "%lld", (long long)retry);
	http_reply_header(res, "Retry-After", secs);
	return false;
}

static void
mint_state_free(void *p)
{
	struct mint_state *st = p;

	OPENSSL_cleanse(st->value, sizeof(st->value));
	free(st->row.params);
	free(st);
}

/* In the store's writer thread, after the commit. */
static void
mint_committed(void *arg, int result)
{
	struct mint_state *st = arg;

	atomic_store(&st->result, result);
	http_request_resume(st->req);
}

/* Checks a token request and queues its mint. */
static void
mint_request(void *ctx, struct http_request *req, struct http_response *res)
{
	struct mint_state *st;
	struct broker *b = ctx;
	json_t *body = http_request_body(req), *cap, *problems;
	const char *job = NULL, *name;
	struct manifest_version m;
	struct manifest_mint lim;
	struct job j;
	int64_t ttl;
	int r;

	/* The job is who the channel says, and only a verifier (the proxy)
	 * speaks for the channel; from anyone else the header is ignored. */
	if (http_request_roles(req) & ROLE_VERIFIER)
		job = http_request_header(req, "X-Cordon-Job");
	if (job == NULL) {
		atomic_fetch_add(&b->refused_mints, 1);
		http_reply_error(res, 403, "no_job_identity",
		    "tokens are minted for a job, asked through its proxy "
		    "channel");
		return;
	}
	problems = json_array();
	r = body_mint(body, &name, problems);
	if (!body_passed(r, problems, res))
		return;
	if (job_and_manifest(b, job, &j, &m, res) < 0)
		return;
	if (strcmp(j.state, "running") != 0) {
		atomic_fetch_add(&b->refused_mints, 1);
		manifest_version_free(&m);
		http_reply_error(res, 403, "job_revoked",
		    "the job is revoked (%s)", j.stop_reason);
		return;
	}
	/* Every request of the job counts toward its rate, refused or not;
	 * one at its ceiling is refused before any write. */
	manifest_mint(m.body, &lim);
	if (!mint_rate_ok(b, j.id, &lim, res)) {
		manifest_version_free(&m);
		return;
	}
	if (j.tokens_minted >= lim.max_tokens) {
		manifest_version_free(&m);
		refuse_ceiling(b, j.id, lim.max_tokens, res);
		return;
	}
	cap = manifest_capability(m.body, name);
	if (cap == NULL) {
		atomic_fetch_add(&b->refused_mints, 1);
		manifest_version_free(&m);
		http_reply_error(res, 403, "not_in_manifest",
		    "the job's manifest has no capability %.64s", name);
		return;
	}
	problems = json_array();
	if (!capability_within(cap, json_object_get(body, "params"),
		json_object_get(body, "ttl_seconds"), problems, &ttl)) {
		atomic_fetch_add(&b->refused_mints, 1);
		manifest_version_free(&m);
		log_info("mint_refused", "{s:s, s:s}", "job", job, "capability",
		    name);
		http_reply_json(res, 403,
		    json_pack("{s:s, s:s, s:o}", "error", "beyond_ceiling",
			"message",
			"the request is broader or longer than the manifest "
			"allows; nothing was granted",
			"problems", problems));
		return;
	}
	json_decref(problems);
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		manifest_version_free(&m);
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	http_request_set_state(req, st, mint_state_free);
	st->req = req;
	st->max_tokens = lim.max_tokens;
	r = capability_mint(b->pepper, j.id, j.deadline, cap,
	    json_object_get(body, "params"), ttl, st->value, &st->row);
	manifest_version_free(&m);
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	/* Answered once durable: the request waits, its thread does not. */
	http_request_defer(req);
	r = store_token_insert_async(b->store, &st->row, lim.max_tokens,
	    "verifier", mint_committed, st);
	if (r < 0) {
		atomic_store(&st->result, r);
		http_request_resume(req);
	}
}

static void
mint_answer(struct broker *b, struct http_request *req, struct mint_state *st,
    struct http_response *res)
{
	int r = atomic_load(&st->result);

	if (r == -ESTALE) {
		atomic_fetch_add(&b->refused_mints, 1);
		http_reply_error(res, 403, "job_revoked",
		    "the job was revoked meanwhile; nothing was granted");
		return;
	}
	if (r == -EDQUOT) { /* a parallel mint took the last one */
		refuse_ceiling(b, st->row.job, st->max_tokens, res);
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	atomic_fetch_add(&b->minted, 1);
	log_info("token_minted", "{s:s, s:s, s:s, s:I}", "job", st->row.job,
	    "token", st->row.id, "capability", st->row.capability, "exp",
	    (json_int_t)st->row.exp);
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s, s:I, s:s, s:O, s:s, s:s}", "access_token",
		st->value, "token_type", "Bearer", "expires_in",
		(json_int_t)(st->row.exp - (int64_t)time(NULL)), "capability",
		st->row.capability, "params",
		json_object_get(http_request_body(req), "params"), "aud",
		st->row.audience, "token_id", st->row.id));
	OPENSSL_cleanse(st->value, sizeof(st->value));
}

/* POST /v1/token: checked, minted, committed (deferred), answered. */
static void
mint(void *ctx, struct http_request *req, struct http_response *res)
{
	struct mint_state *st = http_request_state(req);

	if (st != NULL) { /* resumed after the commit */
		mint_answer(ctx, req, st, res);
		return;
	}
	mint_request(ctx, req, res);
}

static void
introspect(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	json_t *problems = json_array();
	unsigned char hash[STORE_HASH_LEN];
	char job_state[16];
	struct token_row t;
	const char *token;
	int r;

	r = body_introspect(http_request_body(req), &token, problems);
	if (!body_passed(r, problems, res))
		return;
	atomic_fetch_add(&b->introspected, 1);
	/* A typo or a made-up token: refused before any database read. */
	if (token_parse(token, strlen(token)) < 0 ||
	    capability_hash(b->pepper, token, TOKEN_LEN, hash) < 0) {
		http_reply_json(res, 200, json_pack("{s:b}", "active", 0));
		return;
	}
	r = store_token_lookup(b->store, hash, &t, job_state);
	if (r == -ENOENT) {
		http_reply_json(res, 200, json_pack("{s:b}", "active", 0));
		return;
	}
	if (r < 0) {
		/* Cannot check: inactive, and the caller is told why. */
		atomic_fetch_add(&b->store_errors, 1);
		http_reply_error(res, 503, "store_unavailable",
		    "cannot check the token now; treat it as inactive");
		return;
	}
	if (strcmp(t.capability, CANARY_CAPABILITY) == 0) {
		/* A canary was used: whoever holds it read what the job was
		 * never meant to use. The job is revoked now. */
		struct revoke_result rr;
		store_audit_async(b->store, "tripwire",
		    json_pack("{s:s, s:s, s:s, s:s}", "job", t.job, "actor",
			"broker", "token_id", t.id, "seen_by",
			"introspection"));
		log_warn("tripwire", "{s:s, s:s}", "job", t.job, "token_id",
		    t.id);
		if (revoke_job(b, t.job, "tripwire", "broker", &rr) < 0)
			atomic_fetch_add(&b->store_errors, 1);
		free(t.params);
		http_reply_json(res, 200, json_pack("{s:b}", "active", 0));
		return;
	}
	if (strcmp(t.state, "active") != 0 ||
	    strcmp(job_state, "running") != 0 || t.exp <= (int64_t)time(NULL)) {
		free(t.params);
		http_reply_json(res, 200, json_pack("{s:b}", "active", 0));
		return;
	}
	atomic_fetch_add(&b->active, 1);
	json_t *params = json_loads(t.params, 0, NULL);
	free(t.params);
	http_reply_json(res, 200,
	    json_pack("{s:b, s:s, s:s, s:o, s:s, s:I, s:I, s:s}", "active", 1,
		"job", t.job, "capability", t.capability, "params",
		params != NULL ? params : json_object(), "aud", t.audience,
		"iat", (json_int_t)t.iat, "exp", (json_int_t)t.exp, "token_id",
		t.id));
}

/* {"revoked": false}, or what was revoked and who acknowledged it. */
static void
revoke_token_answer(struct broker *b, const struct token_revoke_result *tr,
    struct http_response *res)
{
	if (!tr->found) {
		http_reply_json(res, 200, json_pack("{s:b}", "revoked", 0));
		return;
	}
	http_reply_json(res, 200,
	    json_pack("{s:b, s:s, s:s, s:I, s:o}", "revoked", 1, "job", tr->job,
		"token_id", tr->id, "seq", (json_int_t)tr->seq, "propagated",
		feed_acks_result(b->feed, tr->seq)));
}

/*
 * One token revoked (RFC 7009), its job going on. Its revocation is on
 * the feed, and the answer waits, as a job's revoke does, until every
 * connected follower acknowledged it (a proxy dropped the token from
 * its cache) or was declared gone: deferred meanwhile, the result kept
 * as the request's state.
 */
static void
revoke_token(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct token_revoke_result *st = http_request_state(req);
	json_t *problems;
	unsigned char hash[STORE_HASH_LEN];
	const char *token;
	int r;

	if (st != NULL) { /* resumed: the followers had their chance */
		revoke_token_answer(b, st, res);
		return;
	}
	problems = json_array();
	r = body_revoke_token(http_request_body(req), &token, problems);
	if (!body_passed(r, problems, res))
		return;
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	http_request_set_state(req, st, free);
	/* RFC 7009: an unknown token is answered like a revoked one. */
	if (token_parse(token, strlen(token)) == 0 &&
	    capability_hash(b->pepper, token, TOKEN_LEN, hash) == 0) {
		r = store_token_revoke(b->store, hash, actor_of(req), st);
		if (r < 0) {
			reply_store_error(b, res, r);
			return;
		}
	}
	if (!st->found) {
		revoke_token_answer(b, st, res);
		return;
	}
	feed_publish(b->feed, st->seq);
	log_info("token_revoked", "{s:s, s:s, s:s, s:I}", "job", st->job,
	    "token_id", st->id, "by", actor_of(req), "seq",
	    (json_int_t)st->seq);
	if (feed_wait_acks(b->feed, st->seq, req) == 1)
		revoke_token_answer(b, st, res);
}

/* --- the revocation feed -------------------------------------------------- */

struct poll_state {
	char follower[64];
	int64_t after;
};

static void
revocations_answer(struct broker *b, struct poll_state *st,
    struct http_response *res)
{
	/* A watcher (follower "") acknowledges nothing. */
	int64_t head = st->follower[0] != '\0'
	    ? feed_poll_done(b->feed, st->follower)
	    : feed_head(b->feed);
	json_t *list;
	int r =
	    store_revocations_after(b->store, st->after, FEED_PAGE_MAX, &list);

	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	/* A head below after tells a follower from an older broker state
	 * to resync: it is never raised to please it. */
	if (json_array_size(list) > 0)
		head = json_integer_value(
		    json_object_get(json_array_get(list,
					json_array_size(list) - 1),
			"seq"));
	http_reply_json(res, 200,
	    json_pack("{s:I, s:o}", "head", (json_int_t)head, "revocations",
		list));
}

/* A long poll: deferred until a revocation past after, or wait seconds. */
static void
revocations(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct poll_state *st = http_request_state(req);
	const char *follower = http_request_query(req, "follower");
	long long after, wait;
	int r;

	if (st != NULL) { /* resumed */
		revocations_answer(b, st, res);
		return;
	}
	if (!query_int(req, "after", 0, INT64_MAX, 0, &after, res) ||
	    !query_int(req, "wait", 0, FEED_MAX_WAIT_S, 0, &wait, res))
		return;
	if (follower == NULL)
		follower = "default";
	if (!name_ok(follower, 63, "._-")) {
		http_reply_error(res, 400, "malformed",
		    "follower must be 1 to 63 of [A-Za-z0-9._-]");
		return;
	}
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	st->after = after;
	http_request_set_state(req, st, free);
	/* A launcher watches its job's revocation: it is no follower, and
	 * no revoke waits for its acknowledgement. */
	if (!(http_request_roles(req) & ROLE_VERIFIER)) {
		if (feed_watch(b->feed, after, (int)wait, req) == 1)
			revocations_answer(b, st, res);
		return;
	}
	snprintf(st->follower, sizeof(st->follower), "%s", follower);
	r = feed_poll(b->feed, follower, after, (int)wait, req);
	if (r < 0)
		http_reply_error(res, 503, "too_many_followers",
		    "the feed has no room for another follower");
	else if (r == 1)
		revocations_answer(b, st, res);
}

/* --- the caller's key ----------------------------------------------------- */

/* GET /v1/whoami: the roles the caller's key grants, so that a process
 * can tell it was given more than it needs (the hatch warns). */
static void
whoami(void *ctx, struct http_request *req, struct http_response *res)
{
	unsigned roles = http_request_roles(req);
	json_t *list = json_array();

	(void)ctx;
	for (unsigned bit = 1; bit != 0 && bit <= ROLES_ALL; bit <<= 1)
		if ((roles & bit) && role_name(bit) != NULL)
			json_array_append_new(list,
			    json_string(role_name(bit)));
	http_reply_json(res, 200, json_pack("{s:o}", "roles", list));
}

/* --- audit ---------------------------------------------------------------- */

static void
audit(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *job = http_request_query(req, "job");
	const char *verify = http_request_query(req, "verify");
	long long after, limit;
	json_t *list;
	int r;

	if (verify != NULL && strcmp(verify, "1") == 0) {
		bool ok;
		int64_t bad, records;

		r = store_audit_verify(b->store, &ok, &bad, &records);
		if (r < 0) {
			reply_store_error(b, res, r);
			return;
		}
		json_t *out = json_pack("{s:b, s:I}", "ok", ok, "records",
		    (json_int_t)records);
		if (!ok) {
			log_error("audit_broken", "{s:I}", "first_bad",
			    (json_int_t)bad);
			json_object_set_new(out, "first_bad",
			    json_integer(bad));
		}
		http_reply_json(res, 200, out);
		return;
	}
	if (!query_int(req, "after", 0, INT64_MAX, 0, &after, res) ||
	    !query_int(req, "limit", 1, 10000, 1000, &limit, res))
		return;
	r = store_audit_list(b->store, job, after, (size_t)limit, &list);
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:o}", "records", list));
}

/* --- the glue's callbacks ------------------------------------------------- */

void
broker_sweep(void *ctx)
{
	struct broker *b = ctx;
	json_t *lapsed, *e;
	size_t i;

	if (store_jobs_lapsed(b->store, (int64_t)time(NULL), 100, &lapsed) < 0)
		return;
	json_array_foreach(lapsed, i, e)
	{
		const char *job = json_string_value(json_object_get(e, "job"));
		const char *why =
		    json_string_value(json_object_get(e, "reason"));

		struct revoke_result rr;

		if (revoke_job(b, job, why, "broker", &rr) == 0) {
			atomic_fetch_add(&b->lapsed, 1);
			log_warn("job_lapsed", "{s:s, s:s}", "job", job,
			    "reason", why);
		}
	}
	json_decref(lapsed);
}

void
broker_metrics(void *ctx, struct buf *out)
{
	struct broker *b = ctx;

	metrics_one(out, "cordon_broker_tokens_minted_total", "counter",
	    "Tokens minted, at job start or on request.",
	    atomic_load(&b->minted));
	metrics_one(out, "cordon_broker_mints_refused_total", "counter",
	    "Token requests refused (no job, revoked, beyond the ceiling).",
	    atomic_load(&b->refused_mints));
	metrics_one(out, "cordon_broker_mints_rate_limited_total", "counter",
	    "Token requests refused 429 for the job's mint rate.",
	    atomic_load(&b->rate_limited_mints));
	metrics_one(out, "cordon_broker_mints_at_ceiling_total", "counter",
	    "Token requests refused 429 at the job's mint.max_tokens.",
	    atomic_load(&b->ceiling_mints));
	metrics_one(out, "cordon_broker_introspections_total", "counter",
	    "Introspection requests.", atomic_load(&b->introspected));
	metrics_one(out, "cordon_broker_introspections_active_total", "counter",
	    "Introspections that answered active.", atomic_load(&b->active));
	metrics_one(out, "cordon_broker_jobs_revoked_total", "counter",
	    "Jobs revoked (by anyone, including the broker).",
	    atomic_load(&b->revoked_jobs));
	metrics_one(out, "cordon_broker_jobs_lapsed_total", "counter",
	    "Jobs revoked by the dead man's switch (lease or deadline).",
	    atomic_load(&b->lapsed));
	metrics_one(out, "cordon_broker_secrets_released_total", "counter",
	    "secrets released to a proxy to inject",
	    atomic_load(&b->secrets_released));
	metrics_one(out, "cordon_broker_secrets_scan_released_total", "counter",
	    "static secrets released to a proxy only to scan answers for",
	    atomic_load(&b->scan_releases));
	metrics_one(out, "cordon_broker_reflections_total", "counter",
	    "answers that reflected a job's own static secret, and trips of "
	    "a scan-only one, the proxies told (reflections.h)",
	    atomic_load(&b->reflections_reported));
	metrics_one(out, "cordon_broker_reflections_unrecorded_total",
	    "counter",
	    "reflection reports the database failed to count (answered 503)",
	    atomic_load(&b->reflections_unrecorded));
	metrics_one(out, "cordon_broker_secrets_burned_total", "counter",
	    "secret versions this broker burned past their reflect_budget or "
	    "at a trip: rotate them",
	    atomic_load(&b->secrets_burned));
	metrics_one(out, "cordon_broker_releases_burned_total", "counter",
	    "releases to inject refused 403 secret_burned",
	    atomic_load(&b->releases_burned));
	metrics_one(out, "cordon_broker_store_errors_total", "counter",
	    "Database failures (each answered with a refusal).",
	    atomic_load(&b->store_errors));
	struct issuers_counts ic;
	issuers_counts(b->issuers, &ic);
	metrics_one(out, "cordon_broker_upstream_issued_total", "counter",
	    "Short-lived upstream credentials obtained from their issuers.",
	    ic.issued);
	metrics_one(out, "cordon_broker_upstream_issue_failures_total",
	    "counter",
	    "Upstream credentials an issuer refused or failed to give.",
	    ic.issue_failed);
	metrics_one(out, "cordon_broker_upstream_revoked_total", "counter",
	    "Upstream credentials revoked at their issuer at a job's revoke.",
	    ic.revoked);
	metrics_one(out, "cordon_broker_upstream_revoke_failures_total",
	    "counter",
	    "Upstream credentials whose revocation at the issuer failed.",
	    ic.revoke_failed);
	int64_t pending = issuers_pending(b->issuers);
	metrics_one(out, "cordon_broker_upstream_revocations_pending", "gauge",
	    "Upstream revocations that failed and are retried (fleet-wide "
	    "on PostgreSQL).",
	    (uint64_t)(pending > 0 ? pending : 0));
	metrics_one(out, "cordon_broker_issuer_releases_waiting", "gauge",
	    "Releases waiting, without a thread, for an issuer's credential.",
	    ic.releases_waiting);
	metrics_one(out, "cordon_broker_issuer_calls_in_flight", "gauge",
	    "Calls to issuers being made now.", ic.calls_in_flight);
	metrics_one(out, "cordon_broker_issuer_revokes_waiting", "gauge",
	    "Job revokes waiting for their revocations at issuers now.",
	    ic.revokes_waiting);
	metrics_one(out, "cordon_broker_issuer_releases_refused_total",
	    "counter",
	    "Releases answered 503 issuer_busy: too many waited already.",
	    ic.releases_refused);
	metrics_one(out, "cordon_broker_issuer_releases_timed_out_total",
	    "counter",
	    "Releases answered 503 issuer_unavailable at their deadline.",
	    ic.releases_timed_out);
	metrics_one(out, "cordon_broker_feed_followers", "gauge",
	    "Followers of the revocation feed connected now.",
	    feed_followers(b->feed));
}

int
broker_health(void *ctx, json_t *out)
{
	struct broker *b = ctx;
	int64_t head;
	int r = store_revocation_head(b->store, &head);

	json_object_set_new(out, "feed_followers",
	    json_integer(feed_followers(b->feed)));
	json_object_set_new(out, "feed_watchers",
	    json_integer(feed_watchers(b->feed)));
	if (r < 0) {
		json_object_set_new(out, "store", json_string(strerror(-r)));
		return -1;
	}
	json_object_set_new(out, "revocation_head", json_integer(head));
	return 0;
}

void
broker_auth_failed(void *ctx, const char *method, const char *path,
    const char *reason)
{
	struct broker *b = ctx;
	json_t *d = json_pack("{s:s, s:s%, s:s}", "method", method, "path",
	    path, strnlen(path, 200), "reason", reason);

	/* Queued, not awaited: a flood of bad keys must not hold threads. */
	if (d == NULL || store_audit_async(b->store, "auth_failed", d) < 0)
		log_error("audit_failed", "{s:s}", "event", "auth_failed");
}

void
broker_stopping(void *ctx)
{
	struct broker *b = ctx;

	feed_stop(b->feed);
	/* The releases waiting for an issuer: 503 broker_stopping; the
	 * revokes waiting: answered, what they hold pending. */
	issuers_stop_releases(b->issuers);
	issuers_stop_revokes(b->issuers);
}

const struct http_route broker_routes[] = {
	{ "GET", "/v1/manifests", ROLE_ADMIN | ROLE_LAUNCHER, BODY_NONE,
	    list_manifests },
	{ "PUT", "/v1/manifests/*", ROLE_ADMIN, BODY_JSON, put_manifest },
	{ "GET", "/v1/manifests/*", ROLE_ADMIN | ROLE_LAUNCHER, BODY_NONE,
	    get_manifest },
	{ "POST", "/v1/jobs", ROLE_LAUNCHER, BODY_JSON, create_job },
	{ "GET", "/v1/jobs/*", ROLE_ADMIN | ROLE_LAUNCHER, BODY_NONE, get_job },
	{ "POST", "/v1/jobs/*/heartbeat", ROLE_LAUNCHER, BODY_NONE, heartbeat },
	{ "POST", "/v1/jobs/*/revoke", ROLE_ADMIN | ROLE_LAUNCHER,
	    BODY_JSON_OPTIONAL, revoke_handler },
	{ "GET", "/v1/jobs/*/egress", ROLE_VERIFIER, BODY_NONE, job_egress },
	/* The hatch's; the launcher's and the verifier's keys too, which
	 * hatches were given before the hatch key (they warn). */
	{ "GET", "/v1/jobs/*/return",
	    ROLE_HATCH | ROLE_LAUNCHER | ROLE_VERIFIER, BODY_NONE, job_return },
	/* The proxy's alone: it speaks for the job's channel. */
	{ "POST", "/v1/token", ROLE_VERIFIER, BODY_JSON, mint },
	{ "POST", "/v1/introspect", ROLE_VERIFIER, BODY_JSON, introspect },
	{ "POST", "/v1/revoke", ROLE_ADMIN, BODY_JSON, revoke_token },
	{ "GET", "/v1/revocations", ROLE_VERIFIER | ROLE_LAUNCHER, BODY_NONE,
	    revocations },
	{ "GET", "/v1/audit", ROLE_ADMIN, BODY_NONE, audit },
	{ "GET", "/v1/whoami", ROLES_ALL, BODY_NONE, whoami },
	{ "PUT", "/v1/secrets/*", ROLE_ADMIN, BODY_JSON, secrets_put },
	{ "GET", "/v1/secrets", ROLE_ADMIN, BODY_NONE, secrets_list },
	{ "GET", "/v1/secrets/*", ROLE_ADMIN, BODY_NONE, secrets_get },
	{ "DELETE", "/v1/secrets/*", ROLE_ADMIN, BODY_NONE, secrets_delete },
	{ "POST", "/v1/jobs/*/secrets/*/release", ROLE_VERIFIER, BODY_NONE,
	    secrets_release },
	{ "GET", "/v1/bindings", ROLE_VERIFIER | ROLE_ADMIN, BODY_NONE,
	    bindings_get },
	{ "POST", "/v1/bindings", ROLE_VERIFIER, BODY_JSON, bindings_post },
	{ "POST", "/v1/jobs/*/secrets/*/reflections", ROLE_VERIFIER, BODY_JSON,
	    reflections_post },
};
const size_t broker_nroutes = ARRAY_SIZE(broker_routes);
