/*
 * The hatch's HTTP API (docs/api.md, "cordon-hatch"). Every call needs the
 * launcher's key. Inputs are checked whole before anything is copied, and
 * a workspace that cannot be made whole is not made at all. A job's return
 * policy and disk cap are read from the broker (GET /v1/jobs/{job}/return)
 * when its workspace is made; without them there is no workspace.
 */
#include "hatch.h"

#include "http_client.h"
#include "log.h"
#include "manifest.h"
#include "path.h"
#include "problems.h"
#include "seal.h"
#include "util.h"
#include "workspace.h"

#include <errno.h>
#include <string.h>

/* True when one of a and b is the other or lies beneath it. */
static bool
paths_overlap(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;

	return strncmp(a, b, n) == 0 &&
	    (na == nb || (na < nb ? b[n] : a[n]) == '/');
}

#define BROKER_TIMEOUT_MS 5000

void
hatch_broker_key_check(struct hatch *h, long timeout_ms)
{
	struct httpc_answer a = { 0 };
	json_t *roles, *v;
	bool broad = false;
	size_t i;

	if (h->cfg.broker == NULL || h->broker_key == NULL ||
	    atomic_load(&h->key_checked))
		return;
	if (httpc_request(h->cfg.broker, "GET", "/v1/whoami", h->broker_key,
		NULL, NULL, timeout_ms, &a) < 0)
		return; /* asked again before the next policy read */
	if (a.status >= 500) {
		httpc_answer_free(&a);
		return;
	}
	atomic_store(&h->key_checked, true);
	roles = json_object_get(a.json, "roles");
	if (a.status != 200 || !json_is_array(roles)) {
		/* A broker from before the route, or a key it refuses: the
		 * policy reads say the rest. */
		log_info("broker_key_unchecked", "{s:I, s:s}", "status",
		    (json_int_t)a.status, "reason",
		    "the broker did not say what broker_key_file grants");
		httpc_answer_free(&a);
		return;
	}
	json_array_foreach(roles, i, v) broad = broad || !json_is_string(v) ||
	    strcmp(json_string_value(v), role_name(ROLE_HATCH)) != 0;
	if (broad && !atomic_exchange(&h->key_warned, true))
		log_warn("broker_key_broad", "{s:O, s:s, s:s, s:s}", "roles",
		    roles, "path", h->cfg.broker_key_file, "effect",
		    "the key grants more at the broker than reading return "
		    "policies: whoever took over the hatch could use it there",
		    "fix",
		    "set broker_key_file to the broker's keys/hatch.key");
	else if (!broad)
		log_info("broker_key_checked", "{s:O}", "roles", roles);
	httpc_answer_free(&a);
}

/*
 * Reads job's return policy and disk cap from the broker into *ret_policy
 * (new) and *ret_disk_mb. 0, or an HTTP status with its error code and
 * message written (the workspace is refused: fail closed).
 */
static long
policy_from_broker(struct hatch *h, const char *job, json_t **ret_policy,
    long *ret_disk_mb, const char **ret_code, char *msg, size_t msglen)
{
	struct httpc_answer a = { 0 };
	char path[200];
	json_t *problems, *ret, *disk;
	const char *state;
	long status = 503;
	int rc;

	*ret_code = "policy_unavailable";
	if (h->cfg.broker == NULL || h->broker_key == NULL) {
		snprintf(msg, msglen,
		    "the hatch has no broker to read job %s's return policy "
		    "from (broker, broker_key_file); no workspace is made",
		    job);
		return status;
	}
	hatch_broker_key_check(h, BROKER_TIMEOUT_MS);
	snprintf(path, sizeof(path), "/v1/jobs/%s/return", job);
	rc = httpc_request(h->cfg.broker, "GET", path, h->broker_key, NULL,
	    NULL, BROKER_TIMEOUT_MS, &a);
	if (rc < 0) {
		snprintf(msg, msglen,
		    "the broker did not answer for job %s's return policy "
		    "(%s); no workspace is made",
		    job, strerror(-rc));
		return status;
	}
	ret = json_object_get(a.json, "return");
	disk = json_object_get(a.json, "disk_mb");
	state = json_string_value(json_object_get(a.json, "state"));
	problems = json_array();
	if (ret != NULL)
		manifest_check_return(ret, problems);
	if (a.status == 404) {
		status = 404;
		*ret_code = "unknown_job";
		snprintf(msg, msglen, "the broker knows no job %s", job);
	} else if (a.status != 200) {
		snprintf(msg, msglen,
		    "the broker answered %ld for job %s's return policy; no "
		    "workspace is made",
		    a.status, job);
	} else if (state == NULL || strcmp(state, "running") != 0) {
		status = 409;
		*ret_code = "job_not_running";
		snprintf(msg, msglen, "job %s is %s at the broker", job,
		    state != NULL ? state : "in no state");
	} else if (!json_is_object(ret) || json_array_size(problems) > 0 ||
	    !json_is_integer(disk) || json_integer_value(disk) < 1 ||
	    json_integer_value(disk) > WORKSPACE_MAX_DISK_MB) {
		snprintf(msg, msglen,
		    "the broker's return policy for job %s is not one the "
		    "hatch can apply; no workspace is made",
		    job);
	} else {
		status = 0;
		*ret_policy = json_deep_copy(ret);
		*ret_disk_mb = (long)json_integer_value(disk);
	}
	json_decref(problems);
	httpc_answer_free(&a);
	return status;
}

static void
create_workspace(void *ctx, struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = { "job", "inputs" };
	struct hatch *h = ctx;
	json_t *body = http_request_body(req), *v, *in;
	json_t *problems = json_array(), *out = NULL;
	struct workspace_input inputs[WORKSPACE_MAX_INPUTS];
	char *resolved[WORKSPACE_MAX_INPUTS] = { 0 };
	const char *job;
	long disk_mb = WORKSPACE_DEFAULT_DISK_MB;
	size_t i, n = 0;
	int r;

	/* From the broker, not from the launcher that asks: return and
	 * disk_mb in the request are unknown keys. */
	problems_unknown_keys(body, "", fields, ARRAY_SIZE(fields), problems);
	job = json_string_value(json_object_get(body, "job"));
	if (job == NULL || !workspace_job_ok(job))
		problems_add(problems, "job",
		    "required: [A-Za-z0-9._-]{1,128}, not starting with "
		    "'.'");
	v = json_object_get(body, "inputs");
	if (v != NULL &&
	    (!json_is_array(v) || json_array_size(v) > WORKSPACE_MAX_INPUTS))
		problems_add(problems, "inputs",
		    "a list of at most 64 {src, dst}");
	else
		json_array_foreach(v, i, in)
		{
			const char *src =
			    json_string_value(json_object_get(in, "src"));
			const char *dst =
			    json_string_value(json_object_get(in, "dst"));
			if (!json_is_object(in) || json_object_size(in) != 2)
				problems_add(problems, "inputs",
				    "each input is exactly {src, dst}");
			resolved[n] = workspace_check_input(&h->cfg.input_roots,
			    i, src, dst, problems);
			if (resolved[n] == NULL)
				continue;
			for (size_t k = 0; k < n; k++)
				if (paths_overlap(inputs[k].dst, dst))
					problems_add(problems, "inputs",
					    "two inputs overlap at their "
					    "destinations");
			inputs[n].src = resolved[n];
			inputs[n].dst = dst;
			n++;
		}
	if (json_array_size(problems) > 0) {
		http_reply_problems(res, "invalid_workspace", NULL, problems);
		goto out;
	}

	json_t *policy = NULL;
	const char *code;
	char msg[300];
	long status = policy_from_broker(h, job, &policy, &disk_mb, &code, msg,
	    sizeof(msg));

	if (status != 0) {
		log_warn("workspace_refused", "{s:s, s:s}", "job", job,
		    "reason", msg);
		json_decref(problems);
		http_reply_error(res, (unsigned)status, code, "%s", msg);
		goto out;
	}
	pthread_mutex_lock(&h->mu);
	r = workspace_create(h->workspaces, job, inputs, n, disk_mb,
	    (long)h->cfg.lower_tmpfs_mb, policy, problems, &out);
	pthread_mutex_unlock(&h->mu);
	json_decref(policy);
	if (r == 0) {
		log_info("workspace_created", "{s:s, s:I, s:i}", "job", job,
		    "inputs", (json_int_t)n, "disk_mb", (int)disk_mb);
		http_reply_json(res, 201, out);
		json_decref(problems);
	} else if (r == -EEXIST) {
		json_decref(problems);
		http_reply_error(res, 409, "workspace_exists",
		    "job %s already has a workspace", job);
	} else if (r == -ESTALE) {
		json_decref(problems);
		http_reply_error(res, 409, "workspace_closed",
		    "job %s had its workspace removed; a job gets one", job);
	} else if (r == -EINVAL) {
		log_info("workspace_refused", "{s:s, s:I}", "job", job,
		    "problems", (json_int_t)json_array_size(problems));
		http_reply_problems(res, "invalid_workspace", NULL, problems);
	} else {
		json_decref(problems);
		log_error("workspace_failed", "{s:s, s:s}", "job", job, "error",
		    strerror(-r));
		http_reply_error(res, r == -ENOSPC ? 507 : 503,
		    r == -ENOSPC ? "no_space" : "workspace_failed",
		    "the workspace could not be made (%s); nothing is left of "
		    "it",
		    strerror(-r));
	}
out:
	for (i = 0; i < n; i++)
		free(resolved[i]);
}

static void
delete_workspace(void *ctx, struct http_request *req, struct http_response *res)
{
	struct hatch *h = ctx;
	const char *job = http_request_param(req, 0);
	int r;

	pthread_mutex_lock(&h->mu);
	r = workspace_delete(h->workspaces, job);
	pthread_mutex_unlock(&h->mu);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_workspace",
		    "no workspace for job %s", job);
		return;
	}
	if (r < 0) {
		log_error("workspace_delete_failed", "{s:s, s:s}", "job", job,
		    "error", strerror(-r));
		http_reply_error(res, 503, "workspace_failed",
		    "the workspace could not be removed (%s)", strerror(-r));
		return;
	}
	log_info("workspace_deleted", "{s:s}", "job", job);
	http_reply_json(res, 200,
	    json_pack("{s:s, s:b}", "job", job, "deleted", 1));
}

/* An error for seal_* results: 404, 409 (not sealed), 422 or 503, with
 * the sealer's reason when it gave one. */
static void
reply_seal_error(struct http_response *res, const char *job, int r,
    const char *reason)
{
	if (r == -ENOENT)
		http_reply_error(res, 404, "unknown_workspace",
		    "no workspace for job %s", job);
	else if (r == -EAGAIN)
		http_reply_error(res, 409, "not_sealed",
		    "the workspace of job %s is not sealed yet", job);
	else if (r == -EINVAL)
		http_reply_error(res, 422, "invalid_output",
		    "stdout and stderr must be base64");
	else if (r == -EPIPE)
		http_reply_error(res, 503, "sealer_unavailable",
		    "the workspace of job %s was not sealed: %s", job,
		    reason != NULL && reason[0] != '\0' ? reason : "no sealer");
	else if (reason != NULL && reason[0] != '\0')
		http_reply_error(res, 503, "seal_failed",
		    "the workspace of job %s was not sealed: %s", job, reason);
	else
		http_reply_error(res, 503, "seal_failed",
		    "the workspace could not be sealed (%s)", strerror(-r));
}

static void
seal(void *ctx, struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = { "stdout", "stderr", "output_kb" };
	struct hatch *h = ctx;
	const char *job = http_request_param(req, 0);
	json_t *body = http_request_body(req), *report, *v;
	json_t *problems = json_array();
	long output_kb = SEAL_DEFAULT_OUTPUT_KB;
	int r;

	problems_unknown_keys(body, "", fields, ARRAY_SIZE(fields), problems);
	for (size_t k = 0; k < 2; k++) { /* stdout, stderr */
		v = json_object_get(body, fields[k]);
		if (v != NULL && !json_is_string(v))
			problems_add(problems, fields[k], "a base64 string");
	}
	v = json_object_get(body, "output_kb");
	if (v != NULL &&
	    (!json_is_integer(v) || json_integer_value(v) < 1 ||
		json_integer_value(v) > SEAL_MAX_OUTPUT_KB))
		problems_add(problems, "output_kb",
		    "an integer from 1 to 65536");
	else if (v != NULL)
		output_kb = (long)json_integer_value(v);
	if (json_array_size(problems) > 0) {
		http_reply_problems(res, "invalid_workspace", NULL, problems);
		return;
	}
	json_decref(problems);
	pthread_mutex_lock(&h->mu);
	struct seal_child child;
	r = seal_workspace(&h->sealer, h->workspaces, job, body, output_kb,
	    &report, &child);
	pthread_mutex_unlock(&h->mu);
	if (r < 0) {
		if (r != -ENOENT && r != -EINVAL)
			log_error("seal_failed", "{s:s, s:s, s:s}", "job", job,
			    "error", strerror(-r), "reason", child.reason);
		reply_seal_error(res, job, r, child.reason);
		return;
	}
	/* sealer: the worker that sealed (pid 0: sealed before). */
	log_info("workspace_sealed",
	    "{s:s, s:O, s:O, s:{s:I, s:I, s:I, s:I, s:I, s:b}}", "job", job,
	    "verdict", json_object_get(report, "verdict"), "patch",
	    json_object_get(report, "patch"), "sealer", "pid",
	    (json_int_t)child.pid, "uid", (json_int_t)child.uid, "seccomp",
	    (json_int_t)child.seccomp, "no_new_privs",
	    (json_int_t)child.no_new_privs, "cap_eff",
	    (json_int_t)child.cap_eff, "socket_refused", child.socket_refused);
	http_reply_json(res, 200, report);
}

static void
get_patch(void *ctx, struct http_request *req, struct http_response *res)
{
	struct hatch *h = ctx;
	const char *job = http_request_param(req, 0);
	char *patch;
	size_t len;
	int r = seal_patch(h->workspaces, job, &patch, &len);

	if (r < 0) {
		reply_seal_error(res, job, r, NULL);
		return;
	}
	http_reply_text(res, 200, "text/x-diff", patch, len);
	free(patch);
}

static void
get_report(void *ctx, struct http_request *req, struct http_response *res)
{
	struct hatch *h = ctx;
	const char *job = http_request_param(req, 0);
	json_t *report;
	int r = seal_report(h->workspaces, job, &report);

	if (r < 0) {
		reply_seal_error(res, job, r, NULL);
		return;
	}
	http_reply_json(res, 200, report);
}

const struct http_route hatch_routes[] = {
	{ "POST", "/v1/workspaces", ROLE_LAUNCHER, BODY_JSON,
	    create_workspace },
	{ "POST", "/v1/workspaces/*/seal", ROLE_LAUNCHER, BODY_JSON_OPTIONAL,
	    seal },
	{ "GET", "/v1/workspaces/*/patch", ROLE_LAUNCHER, BODY_NONE,
	    get_patch },
	{ "GET", "/v1/workspaces/*/report", ROLE_LAUNCHER, BODY_NONE,
	    get_report },
	{ "DELETE", "/v1/workspaces/*", ROLE_LAUNCHER, BODY_NONE,
	    delete_workspace },
};
const size_t hatch_nroutes = ARRAY_SIZE(hatch_routes);
