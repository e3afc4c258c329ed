/*
 * Minting and hashing tokens. The value exists in memory only between
 * minting and the answer that carries it; the store sees its HMAC.
 */
#include "capability.h"

#include "path.h"
#include "problems.h"
#include "token.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int
capability_pepper(const char *path, unsigned char pepper[PEPPER_LEN],
    bool *ret_created)
{
	_cleanup_free_ char *data = NULL;
	unsigned char fresh[PEPPER_LEN];
	size_t len;
	int r;

	r = path_read_file(path, PEPPER_LEN, &data, &len);
	if (r == 0) {
		if (len != PEPPER_LEN) {
			OPENSSL_cleanse(data, len);
			return -EINVAL;
		}
		memcpy(pepper, data, PEPPER_LEN);
		OPENSSL_cleanse(data, len);
		*ret_created = false;
		return 0;
	}
	if (r == -EFBIG) /* longer than a pepper: not one */
		return -EINVAL;
	if (r != -ENOENT)
		return r;
	if (RAND_bytes(fresh, sizeof(fresh)) != 1)
		return -EIO;
	r = path_write_secret(path, fresh, sizeof(fresh));
	if (r == 0) {
		memcpy(pepper, fresh, PEPPER_LEN);
		*ret_created = true;
	}
	OPENSSL_cleanse(fresh, sizeof(fresh));
	return r;
}

int
capability_hash(const unsigned char pepper[PEPPER_LEN], const char *token,
    size_t len, unsigned char out[STORE_HASH_LEN])
{
	unsigned int n = STORE_HASH_LEN;

	return HMAC(EVP_sha256(), pepper, PEPPER_LEN,
		   (const unsigned char *)token, len, out, &n) != NULL &&
		n == STORE_HASH_LEN
	    ? 0
	    : -EIO;
}

/* True when v equals one of the allowed values (strings or integers). */
static bool
allowed(const json_t *allow, const json_t *v)
{
	size_t i;
	json_t *a;

	json_array_foreach(allow, i, a)
	{
		if (json_equal(a, v))
			return true;
	}
	return false;
}

bool
capability_within(const json_t *cap, const json_t *params, const json_t *ttl,
    json_t *problems, int64_t *ret_ttl)
{
	const json_t *ceiling = json_object_get(cap, "params");
	json_t *ct = json_object_get(cap, "ttl_seconds");
	int64_t max_ttl = ct != NULL ? json_integer_value(ct) : 900;
	const char *key;
	json_t *v;
	char field[96];
	size_t before = json_array_size(problems), unlisted = 0;

	if (!json_is_object(params)) {
		problems_add(problems, "params",
		    "required: an object with a value for each parameter "
		    "of the capability");
		return false;
	}
	json_object_foreach((json_t *)params, key, v)
	{
		json_t *allow = json_object_get(ceiling, key);

		snprintf(field, sizeof(field), "params.%.64s", key);
		if (allow != NULL && allowed(allow, v))
			continue;
		if (json_array_size(problems) - before >=
		    CAPABILITY_MAX_PROBLEMS)
			unlisted++;
		else if (allow == NULL)
			problems_add(problems, field,
			    "not a parameter of this capability");
		else
			problems_add(problems, field,
			    "outside the manifest's ceiling");
	}
	json_object_foreach((json_t *)ceiling, key, v)
	{
		snprintf(field, sizeof(field), "params.%.64s", key);
		if (json_object_get(params, key) != NULL)
			continue;
		if (json_array_size(problems) - before >=
		    CAPABILITY_MAX_PROBLEMS)
			unlisted++;
		else
			problems_add(problems, field,
			    "missing: leaving it out would ask for every "
			    "value");
	}
	/* A body of made-up keys is not answered key by key. */
	if (unlisted > 0)
		problems_add(problems, "params",
		    "%zu more problems, not listed", unlisted);
	*ret_ttl = max_ttl;
	if (ttl != NULL) {
		if (!json_is_integer(ttl) || json_integer_value(ttl) < 1)
			problems_add(problems, "ttl_seconds",
			    "must be a positive integer");
		else if (json_integer_value(ttl) > max_ttl)
			problems_add(problems, "ttl_seconds",
			    "longer than the capability allows");
		else
			*ret_ttl = json_integer_value(ttl);
	}
	return json_array_size(problems) == before;
}

int
capability_mint(const unsigned char pepper[PEPPER_LEN], const char *job,
    int64_t deadline, const json_t *cap, const json_t *params, int64_t ttl,
    char value[TOKEN_VALUE_MAX], struct token_row *row)
{
	int64_t now = (int64_t)time(NULL);
	char rnd[24];
	int r;

	memset(row, 0, sizeof(*row));
	r = token_generate(value);
	if (r == 0)
		r = capability_hash(pepper, value, TOKEN_LEN, row->hash);
	if (r == 0)
		r = token_random(rnd, 20);
	if (r < 0) {
		OPENSSL_cleanse(value, TOKEN_VALUE_MAX);
		return r;
	}
	snprintf(row->id, sizeof(row->id), "tok_%s", rnd);
	snprintf(row->job, sizeof(row->job), "%s", job);
	snprintf(row->capability, sizeof(row->capability), "%s",
	    json_string_value(json_object_get(cap, "name")));
	snprintf(row->audience, sizeof(row->audience), "%s",
	    json_string_value(json_object_get(cap, "audience")));
	row->iat = now;
	row->exp = now + ttl < deadline ? now + ttl : deadline;
	snprintf(row->state, sizeof(row->state), "active");
	row->params = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS);
	if (row->params == NULL) {
		OPENSSL_cleanse(value, TOKEN_VALUE_MAX);
		return -ENOMEM;
	}
	return 0;
}
