/*
 * Checking the broker's request bodies. Nothing here answers, logs or
 * reads the store: the handlers in api.c do, with what these return.
 */
#include "bodies.h"

#include "broker.h"
#include "problems.h"
#include "util.h"

#include <errno.h>
#include <string.h>

/* Unknown fields: all of them in problems, and false. */
static bool
fields_ok(const json_t *body, const char *const *allowed, size_t n,
    json_t *problems)
{
	size_t before = json_array_size(problems);

	problems_unknown_keys(body, "", allowed, n, problems);
	return json_array_size(problems) == before;
}

/* A required string field: non-empty, without a NUL; else NULL and a
 * problem. */
static const char *
string_field(const json_t *body, const char *name, json_t *problems)
{
	json_t *v = json_object_get(body, name);

	if (json_is_string(v) &&
	    strlen(json_string_value(v)) == json_string_length(v) &&
	    json_string_length(v) > 0)
		return json_string_value(v);
	problems_add(problems, name, "required: a non-empty string");
	return NULL;
}

int
body_create_job(const json_t *body, const char **ret_manifest,
    json_int_t *ret_canaries, json_t *problems)
{
	static const char *const fields[] = { "manifest", "canaries" };
	json_t *cv;

	if (!fields_ok(body, fields, ARRAY_SIZE(fields), problems) ||
	    (*ret_manifest = string_field(body, "manifest", problems)) == NULL)
		return -EINVAL;
	*ret_canaries = -1;
	cv = json_object_get(body, "canaries");
	if (cv != NULL) {
		if (!json_is_integer(cv) || json_integer_value(cv) < 0 ||
		    json_integer_value(cv) > CANARIES_MAX)
			return -ERANGE;
		*ret_canaries = json_integer_value(cv);
	}
	return 0;
}

int
body_revoke_job(const json_t *body, const char **ret_reason, json_t *problems)
{
	static const char *const fields[] = { "reason" };
	json_t *v = json_object_get(body, "reason");

	*ret_reason = NULL;
	if (!fields_ok(body, fields, ARRAY_SIZE(fields), problems))
		return -EINVAL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v) || json_string_length(v) > BODY_REASON_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		problems_add(problems, "reason", "a string of at most %d bytes",
		    BODY_REASON_MAX);
		return -EINVAL;
	}
	*ret_reason = json_string_value(v);
	return 0;
}

int
body_mint(const json_t *body, const char **ret_capability, json_t *problems)
{
	static const char *const fields[] = { "capability", "params",
		"ttl_seconds" };

	if (!fields_ok(body, fields, ARRAY_SIZE(fields), problems) ||
	    (*ret_capability = string_field(body, "capability", problems)) ==
		NULL)
		return -EINVAL;
	return 0;
}

int
body_introspect(const json_t *body, const char **ret_token, json_t *problems)
{
	static const char *const fields[] = { "token" };

	if (!fields_ok(body, fields, ARRAY_SIZE(fields), problems) ||
	    (*ret_token = string_field(body, "token", problems)) == NULL)
		return -EINVAL;
	return 0;
}

int
body_revoke_token(const json_t *body, const char **ret_token, json_t *problems)
{
	static const char *const fields[] = { "token", "token_type_hint" };

	if (!fields_ok(body, fields, ARRAY_SIZE(fields), problems) ||
	    (*ret_token = string_field(body, "token", problems)) == NULL)
		return -EINVAL;
	return 0;
}
