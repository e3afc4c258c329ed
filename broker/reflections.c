/*
 * The proxies' reports of reflections at the broker (reflections.h):
 * checked, counted in the store for the fleet, and the burn of a version
 * logged, audited and counted for /metrics. The refusal of a burned
 * version's release is the store's (store_secret_released) and its
 * answer secrets.c's.
 */
#include "reflections.h"

#include "bindings.h"
#include "broker.h"
#include "log.h"
#include "problems.h"
#include "secrets.h"
#include "store.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <string.h>
#include <time.h>

static const char *const events[] = { "reflected", "reflect_limit",
	"guard_tripped" };

/* The body's event, one of events (a static string), or NULL. */
static const char *
event_of(const json_t *body)
{
	const char *e = json_string_value(json_object_get(body, "event"));

	for (size_t i = 0; e != NULL && i < sizeof(events) / sizeof(events[0]);
	     i++)
		if (strcmp(e, events[i]) == 0)
			return events[i];
	return NULL;
}

static void
store_failed(struct broker *b, struct http_response *res, const char *job,
    const char *name, int r)
{
	atomic_fetch_add(&b->store_errors, 1);
	atomic_fetch_add(&b->reflections_unrecorded, 1);
	log_error("reflection_unrecorded", "{s:s, s:s, s:s, s:s}", "job", job,
	    "secret", name, "error", strerror(-r), "effect",
	    "not counted: the proxy tells it again");
	http_reply_error(res, 503, "store_unavailable",
	    "the broker's database failed (%s); the reflection was not "
	    "counted: tell it again",
	    strerror(-r));
	http_reply_header(res, "Retry-After", "1");
}

/*
 * Fail closed (the verifier's key alone burned any version for the
 * fleet, a trip at once): a report counts for a job running or ended
 * within REFLECTIONS_ENDED_WINDOW_S whose manifest version injects name
 * (any event) or, for a trip, reaches a place name is bound to (a job
 * released it to scan for). false after answering 409 (or 503).
 */
static bool
held(struct broker *b, struct http_response *res, const struct job *j,
    const char *name, const char *event)
{
	struct manifest_version mv = { .body = NULL };
	int r;

	if (strcmp(j->state, "running") != 0 &&
	    (j->revoked_at == 0 ||
		(int64_t)time(NULL) - j->revoked_at >
		    REFLECTIONS_ENDED_WINDOW_S)) {
		http_reply_error(res, 409, "job_not_running",
		    "job %s is %s, and ended more than %d s ago: nothing of "
		    "its is counted",
		    j->id, j->state, REFLECTIONS_ENDED_WINDOW_S);
		return false;
	}
	r = store_manifest_get(b->store, j->manifest, j->manifest_version, &mv);
	if (r == 0 && secrets_rule_injecting(mv.body, name) != NULL)
		r = 1;
	else if (r == 0 && strcmp(event, "guard_tripped") == 0)
		r = bindings_guarded(b, name, mv.body);
	manifest_version_free(&mv);
	if (r < 0) {
		store_failed(b, res, j->id, name, r);
		return false;
	}
	if (r == 1)
		return true;
	if (strcmp(event, "guard_tripped") != 0)
		http_reply_error(res, 409, "not_injected",
		    "no egress rule of manifest %s (version %lld) injects "
		    "secret %s: job %s was never released it to inject; not "
		    "counted",
		    j->manifest, (long long)j->manifest_version, name, j->id);
	else
		http_reply_error(res, 409, "not_guarded",
		    "no egress rule of manifest %s (version %lld) injects "
		    "secret %s or reaches a place it is bound to: job %s was "
		    "never released it; not counted",
		    j->manifest, (long long)j->manifest_version, name, j->id);
	return false;
}

/*
 * redteam5 #5: the burned version's value, by its keyed digest, so that
 * a PUT of it again (under any name) is refused (secrets.c). A version no
 * longer among the SECRETS_SCAN_VERSIONS kept has no value to digest: it
 * is skipped. The burn stands if this fails: logged, not answered.
 */
static void
burned_value_record(struct broker *b, const char *name, int64_t version,
    int64_t burned_at)
{
	struct secret_sealed *v = NULL;
	char value[SECRETS_VALUE_MAX + 1];
	unsigned char d[SECRETS_DIGEST_LEN];
	size_t n = 0, vlen = 0;
	int r = store_secret_versions(b->store, name, SECRETS_SCAN_VERSIONS, &v,
		&n),
	    found = 0;

	for (size_t i = 0; r == 0 && i < n; i++) {
		if (v[i].version != version)
			continue;
		found = 1;
		r = secrets_unseal(b->secrets_key, name, version, v[i].sealed,
		    v[i].len, value, sizeof(value), &vlen);
		if (r == 0)
			r = secrets_value_digest(b->secrets_key, value, vlen,
			    d);
		OPENSSL_cleanse(value, sizeof(value));
		if (r == 0)
			r = store_burned_value_add(b->store, d, name, version,
			    burned_at);
		OPENSSL_cleanse(d, sizeof(d));
	}
	secret_sealed_free(v, n);
	if (r < 0 || !found)
		log_error("burned_value_unrecorded", "{s:s, s:I, s:s, s:s}",
		    "secret", name, "version", (json_int_t)version, "error",
		    r < 0 ? strerror(-r) : "the version's value is gone",
		    "effect",
		    "a PUT of the same value again is not refused: put a "
		    "new key");
}

void
reflections_post(void *ctx, struct http_request *req, struct http_response *res)
{
	static const char *const keys[] = { "version", "event", "count" };
	struct broker *b = ctx;
	const char *job = http_request_param(req, 0);
	const char *name = http_request_param(req, 1);
	json_t *body = http_request_body(req), *problems = json_array();
	json_t *jc = json_object_get(body, "count");
	json_int_t version =
	    json_integer_value(json_object_get(body, "version"));
	json_int_t count = jc != NULL ? json_integer_value(jc) : 1;
	const char *event = event_of(body), *kind;
	struct secret_reflections row;
	struct secret_meta meta;
	bool burned_now = false;
	struct job j = { .manifest_version = 0 };
	int r;

	problems_unknown_keys(body, "", keys, 3, problems);
	if (!json_is_integer(json_object_get(body, "version")) || version < 1)
		problems_add(problems, "version",
		    "required: the secret's version the job was released (an "
		    "integer, 1 or more)");
	if (event == NULL)
		problems_add(problems, "event",
		    "required: \"reflected\", \"reflect_limit\" or "
		    "\"guard_tripped\"");
	if (jc != NULL &&
	    (!json_is_integer(jc) || count < 1 ||
		count > REFLECTIONS_REPORT_MAX))
		problems_add(problems, "count",
		    "the answers told: an integer from 1 to %d",
		    REFLECTIONS_REPORT_MAX);
	if (json_array_size(problems) > 0) {
		http_reply_problems(res, "invalid_request", NULL, problems);
		return;
	}
	json_decref(problems);
	/* The job may have ended meanwhile (a trip closes it): it must
	 * exist, not run. */
	r = store_job_get(b->store, job, &j, NULL);
	if (r == 0)
		r = secrets_kind(b, name, &meta, &kind);
	if (r == -ENOENT) {
		http_reply_error(res, 404,
		    j.id[0] == '\0' ? "unknown_job" : "unknown_secret",
		    "no such %s", j.id[0] == '\0' ? "job" : "secret");
		return;
	}
	if (r < 0) {
		store_failed(b, res, job, name, r);
		return;
	}
	if (!held(b, res, &j, name, event))
		return;
	/* An issuer's credentials are each job's own, dead at its end:
	 * what one job learns of its own is nothing another can use. */
	if (strcmp(kind, "static") != 0) {
		http_reply_json(res, 200,
		    json_pack("{s:s, s:I, s:b, s:s}", "secret", name, "version",
			version, "counted", false, "why",
			"an issuer's credentials are per job: not counted"));
		return;
	}
	r = store_secret_reflected(b->store, name, version, j.id, event, count,
	    strcmp(event, "guard_tripped") == 0, "verifier", &row, &burned_now);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_secret",
		    "secret %s has no version %lld", name, (long long)version);
		return;
	}
	if (r < 0) {
		store_failed(b, res, job, name, r);
		return;
	}
	atomic_fetch_add(&b->reflections_reported, (uint64_t)count);
	log_info("secret_reflected", "{s:s, s:s, s:I, s:s, s:I, s:I, s:I}",
	    "job", j.id, "secret", name, "version", version, "told", event,
	    "count", count, "reflections", (json_int_t)row.reflections,
	    "budget", (json_int_t)row.budget);
	if (burned_now) {
		atomic_fetch_add(&b->secrets_burned, 1);
		log_warn("secret_burned", "{s:s, s:I, s:s, s:s, s:I, s:I, s:s}",
		    "secret", name, "version", version, "reason",
		    row.burned_reason, "job", j.id, "reflections",
		    (json_int_t)row.reflections, "budget",
		    (json_int_t)row.budget, "effect",
		    "every release to inject this version is refused "
		    "(secret_burned): rotate it at its service and PUT the "
		    "new value");
		burned_value_record(b, name, version, row.burned_at);
	}
	http_reply_json(res, 200,
	    json_pack("{s:s, s:I, s:b, s:I, s:I, s:b}", "secret", name,
		"version", version, "counted", true, "reflections",
		(json_int_t)row.reflections, "budget", (json_int_t)row.budget,
		"burned", row.burned_at != 0));
}
