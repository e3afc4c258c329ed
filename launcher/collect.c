/*
 * The end of a job at the hatch, shared by `cordon run`'s stop path and by
 * `cordon recover`: the seal, the patch fetched and checked against the
 * seal's digest, written out whole, and only then the workspace removed.
 * When any step fails the workspace stays at the hatch, so nothing the job
 * wrote is lost.
 */
#include "launcher.h"

#include "digest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COLLECT_MS 5000

const char *
launcher_answer_message(const struct httpc_answer *a)
{
	static __thread char line[400];
	const char *m = json_string_value(json_object_get(a->json, "message"));
	json_t *p = json_array_get(json_object_get(a->json, "problems"), 0);

	if (m == NULL)
		return "no JSON answer";
	if (p == NULL)
		return m;
	snprintf(line, sizeof(line), "%s: %s: %s", m,
	    json_string_value(json_object_get(p, "field")) ?: "",
	    json_string_value(json_object_get(p, "problem")) ?: "");
	return line;
}

/* The patch at c->patch: whether all of it is there. A patch cut short is
 * removed, never left looking whole. */
static bool
write_patch(struct collected *c, const void *data, size_t len)
{
	FILE *f = fopen(c->patch, "we");
	bool ok;

	ok = f != NULL && (len == 0 || fwrite(data, 1, len, f) == len);
	if (f != NULL && fclose(f) != 0)
		ok = false;
	if (!ok) {
		snprintf(c->kept, sizeof(c->kept),
		    "the patch could not be written to %.600s: %s", c->patch,
		    strerror(errno));
		if (f != NULL)
			unlink(c->patch);
		c->patch[0] = '\0';
	}
	return ok;
}

void
launcher_collect(const char *hatch, const char *key, const char *job,
    const char *patch_path, struct collected *c)
{
	struct httpc_answer a;
	char path[160], got[SHA256_HEX_LEN + 1];
	bool saved = false;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "/v1/workspaces/%s/seal", job);
	if (httpc_request(hatch, "POST", path, key, NULL, NULL, COLLECT_MS,
		&a) != 0) {
		snprintf(c->kept, sizeof(c->kept),
		    "the hatch did not answer the seal");
		return;
	}
	if (a.status == 404) {
		/* None (yet): closed, so that a create still on its way to
		 * the hatch cannot make one after this. */
		c->none = true;
		httpc_answer_free(&a);
		snprintf(path, sizeof(path), "/v1/workspaces/%s", job);
		if (httpc_request(hatch, "DELETE", path, key, NULL, NULL,
			COLLECT_MS, &a) == 0)
			httpc_answer_free(&a);
		return;
	}
	if (a.status != 200) {
		snprintf(c->kept, sizeof(c->kept), "the seal failed: %ld: %s",
		    a.status, launcher_answer_message(&a));
		httpc_answer_free(&a);
		return;
	}
	snprintf(c->verdict, sizeof(c->verdict), "%s",
	    json_string_value(json_object_get(a.json, "verdict")) ?: "unknown");
	c->report = json_incref(a.json);
	httpc_answer_free(&a);

	/* An empty patch, as the seal says, is not fetched; any other is
	 * checked against the digest the seal gave. */
	json_t *patch = json_object_get(c->report, "patch");
	const char *want =
	    json_string_value(json_object_get(patch, "sha256")) ?: "";
	json_t *bytes = json_object_get(patch, "bytes");
	snprintf(path, sizeof(path), "/v1/workspaces/%s/patch", job);
	if ((size_t)snprintf(c->patch, sizeof(c->patch), "%s", patch_path) >=
	    sizeof(c->patch))
		snprintf(c->kept, sizeof(c->kept),
		    "the patch's path is too long");
	else if (json_is_integer(bytes) && json_integer_value(bytes) == 0)
		saved = write_patch(c, "", 0);
	else if (httpc_request(hatch, "GET", path, key, NULL, NULL, COLLECT_MS,
		     &a) != 0)
		snprintf(c->kept, sizeof(c->kept),
		    "the hatch did not answer for the patch");
	else {
		sha256_hex(a.body.data != NULL ? a.body.data : "", a.body.len,
		    got);
		if (a.status != 200)
			snprintf(c->kept, sizeof(c->kept),
			    "fetching the patch failed: %ld: %s", a.status,
			    launcher_answer_message(&a));
		else if (strcmp(got, want) != 0)
			snprintf(c->kept, sizeof(c->kept),
			    "the patch fetched is not the one sealed "
			    "(sha256 %.12s, the seal said %.12s)",
			    got, want);
		else
			saved = write_patch(c, a.body.data, a.body.len);
		httpc_answer_free(&a);
	}
	if (!saved) {
		c->patch[0] = '\0';
		return;
	}
	snprintf(path, sizeof(path), "/v1/workspaces/%s", job);
	if (httpc_request(hatch, "DELETE", path, key, NULL, NULL, COLLECT_MS,
		&a) != 0)
		snprintf(c->kept, sizeof(c->kept),
		    "the hatch did not answer the removal");
	else {
		if (a.status != 200)
			snprintf(c->kept, sizeof(c->kept),
			    "removing it failed: %ld: %s", a.status,
			    launcher_answer_message(&a));
		httpc_answer_free(&a);
	}
}
