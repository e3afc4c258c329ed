/*
 * Fuzzes the broker's JSON request bodies as its handlers check them
 * (bodies.h), then a token request's parameters against a capability's
 * ceiling and the mint. Input: one byte naming the route, then the body,
 * read as the HTTP glue reads it (an object, duplicates refused; the
 * revoke's may be empty). Properties:
 *  - a body is accepted exactly when an independent reading of the
 *    route's contract accepts it: no unknown field, the required string
 *    non-empty and without a NUL, canaries a count from 0 to
 *    CANARIES_MAX, a reason a string of at most BODY_REASON_MAX bytes;
 *  - a refusal carries problems, each exactly {field, problem} strings,
 *    and one with an unknown field names each unknown key and nothing
 *    else; an acceptance carries none, and hands back the body's own
 *    strings;
 *  - a token request within the ceiling names every parameter of the
 *    capability with an allowed value and nothing else, for a ttl from 1
 *    to the capability's; refused, it says why; and the token minted for
 *    it parses, is bound to the capability, and expires no later than
 *    asked nor than the job.
 */
#include "bodies.h"
#include "broker.h"
#include "capability.h"
#include "fuzz.h"
#include "manifest.h"
#include "token.h"

#include <errno.h>
#include <string.h>
#include <time.h>

enum route { CREATE_JOB, REVOKE_JOB, MINT, INTROSPECT, REVOKE_TOKEN, NROUTES };

static const char *const allowed_create[] = { "manifest", "canaries" };
static const char *const allowed_revoke_job[] = { "reason" };
static const char *const allowed_mint[] = { "capability", "params",
	"ttl_seconds" };
static const char *const allowed_introspect[] = { "token" };
static const char *const allowed_revoke_token[] = { "token",
	"token_type_hint" };

static const struct {
	const char *const *allowed;
	size_t n;
	const char *required; /* the non-empty string it must have */
} routes[NROUTES] = {
	[CREATE_JOB] = { allowed_create, 2, "manifest" },
	[REVOKE_JOB] = { allowed_revoke_job, 1, NULL },
	[MINT] = { allowed_mint, 3, "capability" },
	[INTROSPECT] = { allowed_introspect, 1, "token" },
	[REVOKE_TOKEN] = { allowed_revoke_token, 2, "token" },
};

/* A manifest whose capabilities the token requests are judged by. */
static const char manifest_text[] =
    "{\"name\": \"fuzz\", \"command\": [\"/bin/true\"],"
    " \"capabilities\": ["
    "  {\"name\": \"invoices.read\", \"audience\": \"invoices-api\","
    "   \"params\": {\"tenant\": [\"4182\", 7]}, \"ttl_seconds\": 600,"
    "   \"reason\": \"r\"},"
    "  {\"name\": \"repo.write\", \"audience\": \"git\","
    "   \"params\": {\"repo\": [\"acme/x\"], \"branch\": [\"main\", \"dev\"]},"
    "   \"reason\": \"r\"},"
    "  {\"name\": \"ping\", \"audience\": \"p\", \"params\": {\"n\": [1]},"
    "   \"ttl_seconds\": 1, \"reason\": \"r\"}"
    " ]}";

static json_t *manifest;
static unsigned char pepper[PEPPER_LEN];

static void
load(void)
{
	json_t *problems = json_array(), *warnings = json_array();

	manifest = json_loads(manifest_text, 0, NULL);
	FUZZ_ASSERT(manifest != NULL);
	FUZZ_ASSERT(manifest_validate(manifest, NULL, problems, warnings));
	json_decref(problems);
	json_decref(warnings);
	memset(pepper, 0x5a, sizeof(pepper));
}

static bool
is_allowed(const char *key, const char *const *allowed, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(key, allowed[i]) == 0)
			return true;
	return false;
}

/* Every problem is {field, problem}, two strings and nothing else. */
static void
check_problems(const json_t *problems)
{
	size_t i;
	json_t *p;

	json_array_foreach(problems, i, p)
	{
		FUZZ_ASSERT(json_is_object(p) && json_object_size(p) == 2);
		FUZZ_ASSERT(json_is_string(json_object_get(p, "field")));
		FUZZ_ASSERT(json_is_string(json_object_get(p, "problem")));
	}
}

/* A non-empty string without a NUL. */
static bool
good_string(const json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0 &&
	    strlen(json_string_value(v)) == json_string_length(v);
}

/* The problem for an unknown field names one of the unknown keys: the
 * key, cut at 64 bytes and back to whole UTF-8 characters. */
static bool
names_unknown_key(const json_t *body, const char *field,
    const char *const *allowed, size_t n)
{
	const char *key;
	json_t *v;
	size_t fl = strlen(field);

	json_object_foreach((json_t *)body, key, v)
	{
		if (!is_allowed(key, allowed, n) && fl <= 64 &&
		    strncmp(key, field, fl) == 0 &&
		    (key[fl] == '\0' || fl > 60))
			return true;
	}
	return false;
}

/* A token request judged by the ceiling, and what is minted for it. */
static void
check_mint(const json_t *body, const char *name)
{
	json_t *cap = manifest_capability(manifest, name);
	json_t *params = json_object_get(body, "params");
	json_t *ttl = json_object_get(body, "ttl_seconds");
	json_t *problems = json_array(), *ceiling, *ct;
	int64_t granted = -1, max_ttl;
	bool within, want = true;
	const char *key;
	json_t *v;

	if (cap == NULL)
		goto out; /* not in the manifest: refused before this */
	ceiling = json_object_get(cap, "params");
	ct = json_object_get(cap, "ttl_seconds");
	max_ttl = ct != NULL ? json_integer_value(ct) : MANIFEST_MAX_TTL;
	within = capability_within(cap, params, ttl, problems, &granted);
	check_problems(problems);
	FUZZ_ASSERT(within == (json_array_size(problems) == 0));

	/* The ceiling, read independently. */
	if (!json_is_object(params))
		want = false;
	else {
		json_object_foreach(params, key, v)
		{
			json_t *allow = json_object_get(ceiling, key), *a;
			bool one = false;
			size_t i;

			json_array_foreach(allow, i, a) one =
			    one || json_equal(a, v);
			want = want && one;
		}
		json_object_foreach(ceiling, key, v) want =
		    want && json_object_get(params, key) != NULL;
	}
	if (ttl != NULL &&
	    (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
		json_integer_value(ttl) > max_ttl))
		want = false;
	FUZZ_ASSERT(within == want);
	if (!within)
		goto out;
	FUZZ_ASSERT(granted >= 1 && granted <= max_ttl);
	FUZZ_ASSERT(ttl == NULL || granted == json_integer_value(ttl));
	FUZZ_ASSERT(json_object_size(params) == json_object_size(ceiling));

	/* The mint, for a job that ends in a minute. */
	char value[TOKEN_VALUE_MAX];
	struct token_row row;
	int64_t now = (int64_t)time(NULL), deadline = now + 60;
	unsigned char hash[STORE_HASH_LEN];

	FUZZ_ASSERT(capability_mint(pepper, "job_fuzz", deadline, cap, params,
			granted, value, &row) == 0);
	FUZZ_ASSERT(token_parse(value, strlen(value)) == 0);
	FUZZ_ASSERT(capability_hash(pepper, value, TOKEN_LEN, hash) == 0);
	FUZZ_ASSERT(memcmp(hash, row.hash, sizeof(hash)) == 0);
	FUZZ_ASSERT(strcmp(row.capability, name) == 0);
	FUZZ_ASSERT(strcmp(row.job, "job_fuzz") == 0);
	FUZZ_ASSERT(strcmp(row.state, "active") == 0);
	FUZZ_ASSERT(row.exp <= deadline && row.exp <= row.iat + granted &&
	    row.exp > row.iat - 2);
	json_t *back = json_loads(row.params, 0, NULL);
	FUZZ_ASSERT(back != NULL && json_equal(back, params));
	json_decref(back);
	free(row.params);
out:
	json_decref(problems);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = NULL, *problems;
	const char *s = NULL, *key;
	json_int_t canaries = -2;
	bool unknown = false, want;
	enum route route;
	size_t nunknown = 0, i;
	json_t *v;
	int r = 0;

	if (manifest == NULL)
		load();
	if (size == 0)
		return 0;
	route = (enum route)(data[0] % NROUTES);
	data++;
	size--;
	/* As the HTTP glue reads a body. */
	if (!(route == REVOKE_JOB && size == 0)) {
		body = json_loadb((const char *)data, size,
		    JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(body)) {
			json_decref(body);
			return 0;
		}
	}
	problems = json_array();

	switch (route) {
	case CREATE_JOB:
		r = body_create_job(body, &s, &canaries, problems);
		break;
	case REVOKE_JOB:
		r = body_revoke_job(body, &s, problems);
		break;
	case MINT:
		r = body_mint(body, &s, problems);
		break;
	case INTROSPECT:
		r = body_introspect(body, &s, problems);
		break;
	default:
		r = body_revoke_token(body, &s, problems);
		break;
	}
	check_problems(problems);

	/* The contract, read independently. */
	json_object_foreach(body, key, v)
	{
		if (!is_allowed(key, routes[route].allowed, routes[route].n)) {
			unknown = true;
			nunknown++;
		}
	}
	if (unknown) {
		FUZZ_ASSERT(r == -EINVAL);
		FUZZ_ASSERT(json_array_size(problems) == nunknown);
		json_array_foreach(problems, i, v)
		{
			const char *field =
			    json_string_value(json_object_get(v, "field"));
			FUZZ_ASSERT(strcmp(json_string_value(
					       json_object_get(v, "problem")),
					"unknown field") == 0);
			FUZZ_ASSERT(names_unknown_key(body, field,
			    routes[route].allowed, routes[route].n));
		}
		goto out;
	}
	want = routes[route].required == NULL ||
	    good_string(json_object_get(body, routes[route].required));
	if (!want) {
		FUZZ_ASSERT(r == -EINVAL && json_array_size(problems) == 1);
		FUZZ_ASSERT(
		    strcmp(json_string_value(
			       json_object_get(json_array_get(problems, 0),
				   "field")),
			routes[route].required) == 0);
		goto out;
	}
	if (route == REVOKE_JOB) {
		json_t *reason = json_object_get(body, "reason");
		want = reason == NULL ||
		    (json_is_string(reason) &&
			json_string_length(reason) <= BODY_REASON_MAX &&
			strlen(json_string_value(reason)) ==
			    json_string_length(reason));
		FUZZ_ASSERT(r == (want ? 0 : -EINVAL));
		FUZZ_ASSERT(json_array_size(problems) == (want ? 0 : 1));
		if (want)
			FUZZ_ASSERT(reason == NULL
				? s == NULL
				: s == json_string_value(reason));
		goto out;
	}
	if (route == CREATE_JOB) {
		json_t *c = json_object_get(body, "canaries");
		want = c == NULL ||
		    (json_is_integer(c) && json_integer_value(c) >= 0 &&
			json_integer_value(c) <= CANARIES_MAX);
		FUZZ_ASSERT(json_array_size(problems) == 0);
		FUZZ_ASSERT(r == (want ? 0 : -ERANGE));
		if (want)
			FUZZ_ASSERT(canaries ==
			    (c == NULL ? -1 : json_integer_value(c)));
		if (!want)
			goto out;
	}
	FUZZ_ASSERT(r == 0 && json_array_size(problems) == 0);
	FUZZ_ASSERT(s ==
	    json_string_value(json_object_get(body, routes[route].required)));
	if (route == MINT)
		check_mint(body, s);
out:
	json_decref(problems);
	json_decref(body);
	return 0;
}
