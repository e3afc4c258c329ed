/*
 * Secrets at the broker (secrets.h): the sealing (AES-256-GCM through
 * OpenSSL's EVP, a fresh nonce per seal, "cordon-secret\n<name>\n<version>"
 * as associated data) and the handlers of /v1/secrets and of a job's
 * release. A value is checked once, at PUT (printable ASCII, so that it
 * fits in a header), kept sealed in the store, and opened only to
 * answer a release, which is audited before the answer goes.
 */
#include "secrets.h"

#include "broker.h"
#include "log.h"
#include "manifest.h"
#include "path.h"
#include "problems.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

/* A PUT that keeps losing the race for the next version gives up. */
#define PUT_TRIES 4

int
secrets_key_load(const char *path, unsigned char key[SECRETS_KEY_LEN],
    bool *ret_created)
{
	char *data = NULL;
	unsigned char fresh[SECRETS_KEY_LEN];
	size_t len;
	int r = path_read_file(path, SECRETS_KEY_LEN, &data, &len);

	if (r == 0) {
		if (len == SECRETS_KEY_LEN)
			memcpy(key, data, SECRETS_KEY_LEN);
		OPENSSL_cleanse(data, len);
		free(data);
		if (len != SECRETS_KEY_LEN)
			return -EINVAL;
		*ret_created = false;
		return 0;
	}
	if (r == -EFBIG)
		return -EINVAL;
	if (r != -ENOENT)
		return r;
	if (RAND_bytes(fresh, sizeof(fresh)) != 1)
		return -EIO;
	r = path_write_secret(path, fresh, sizeof(fresh));
	if (r == 0) {
		memcpy(key, fresh, SECRETS_KEY_LEN);
		*ret_created = true;
	}
	OPENSSL_cleanse(fresh, sizeof(fresh));
	return r;
}

static int
aad_of(const char *name, int64_t version, char *out, size_t cap)
{
	int n = snprintf(out, cap, "cordon-secret\n%s\n%lld", name,
	    (long long)version);

	return n < 0 || (size_t)n >= cap ? -EINVAL : n;
}

int
secrets_seal(const unsigned char key[SECRETS_KEY_LEN], const char *name,
    int64_t version, const void *plain, size_t len, unsigned char *out,
    size_t cap, size_t *ret_len)
{
	char aad[128];
	int aadlen = aad_of(name, version, aad, sizeof(aad));
	EVP_CIPHER_CTX *c;
	int n = 0, fin = 0, ok;

	if (aadlen < 0)
		return aadlen;
	if (len > SECRETS_VALUE_MAX ||
	    cap < len + SECRETS_NONCE_LEN + SECRETS_TAG_LEN)
		return -EMSGSIZE;
	if (RAND_bytes(out, SECRETS_NONCE_LEN) != 1)
		return -EIO;
	if ((c = EVP_CIPHER_CTX_new()) == NULL)
		return -ENOMEM;
	ok = EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, out) == 1 &&
	    EVP_EncryptUpdate(c, NULL, &n, (const unsigned char *)aad,
		aadlen) == 1 &&
	    EVP_EncryptUpdate(c, out + SECRETS_NONCE_LEN, &n, plain,
		(int)len) == 1 &&
	    EVP_EncryptFinal_ex(c, out + SECRETS_NONCE_LEN + n, &fin) == 1 &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SECRETS_TAG_LEN,
		out + SECRETS_NONCE_LEN + n + fin) == 1;
	EVP_CIPHER_CTX_free(c);
	if (!ok) {
		OPENSSL_cleanse(out, cap);
		return -EIO;
	}
	*ret_len =
	    SECRETS_NONCE_LEN + (size_t)n + (size_t)fin + SECRETS_TAG_LEN;
	return 0;
}

int
secrets_unseal(const unsigned char key[SECRETS_KEY_LEN], const char *name,
    int64_t version, const unsigned char *sealed, size_t len, char *out,
    size_t cap, size_t *ret_len)
{
	char aad[128];
	int aadlen = aad_of(name, version, aad, sizeof(aad));
	unsigned char tag[SECRETS_TAG_LEN];
	EVP_CIPHER_CTX *c;
	size_t clen;
	int n = 0, fin = 0, ok;

	if (aadlen < 0)
		return aadlen;
	if (len < SECRETS_NONCE_LEN + SECRETS_TAG_LEN)
		return -EBADMSG;
	clen = len - SECRETS_NONCE_LEN - SECRETS_TAG_LEN;
	if (clen > SECRETS_VALUE_MAX)
		return -EBADMSG;
	if (cap < clen + 1)
		return -EMSGSIZE;
	memcpy(tag, sealed + len - SECRETS_TAG_LEN, sizeof(tag));
	if ((c = EVP_CIPHER_CTX_new()) == NULL)
		return -ENOMEM;
	ok = EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, sealed) == 1 &&
	    EVP_DecryptUpdate(c, NULL, &n, (const unsigned char *)aad,
		aadlen) == 1 &&
	    EVP_DecryptUpdate(c, (unsigned char *)out, &n,
		sealed + SECRETS_NONCE_LEN, (int)clen) == 1 &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SECRETS_TAG_LEN,
		tag) == 1 &&
	    EVP_DecryptFinal_ex(c, (unsigned char *)out + n, &fin) == 1;
	EVP_CIPHER_CTX_free(c);
	if (!ok) {
		OPENSSL_cleanse(out, cap);
		return -EBADMSG;
	}
	out[n + fin] = '\0';
	*ret_len = (size_t)n + (size_t)fin;
	return 0;
}

/* --- the API -------------------------------------------------------------- */

static json_t *rule_injecting(const json_t *m, const char *name);

static const char *
actor_of(const struct http_request *req)
{
	unsigned roles = http_request_roles(req);

	if (roles & ROLE_ADMIN)
		return "admin";
	if (roles & ROLE_VERIFIER)
		return "verifier";
	return "anonymous";
}

static void
reply_store_error(struct broker *b, struct http_response *res, int r)
{
	atomic_fetch_add(&b->store_errors, 1);
	log_error("store_failed", "{s:s}", "error", strerror(-r));
	if (r == -ENOTSUP) {
		http_reply_error(res, 501, "not_implemented",
		    "secrets are not kept in this store (PostgreSQL) yet");
		return;
	}
	http_reply_error(res, 503, "store_unavailable",
	    "the broker's database failed (%s); nothing was released",
	    strerror(-r));
}

/* A value fit for a header: 1 to SECRETS_VALUE_MAX printable ASCII bytes. */
static bool
value_ok(const char *v, size_t len)
{
	if (len == 0 || len > SECRETS_VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
			return false;
	return true;
}

static json_t *
meta_json(const struct secret_meta *m)
{
	return json_pack("{s:s, s:I, s:I, s:I}", "name", m->name, "version",
	    (json_int_t)m->version, "created", (json_int_t)m->created,
	    "last_used", (json_int_t)m->last_used);
}

void
secrets_put(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *name = http_request_param(req, 0);
	json_t *body = http_request_body(req),
	       *v = json_object_get(body, "value");
	unsigned char sealed[SECRETS_SEALED_MAX];
	struct secret_meta m;
	size_t len = 0;
	int r = -EEXIST;

	if (!manifest_name_ok(name)) {
		http_reply_error(res, 422, "invalid_request",
		    "a secret's name must be [a-z0-9][a-z0-9._-]{0,63}");
		return;
	}
	if (!json_is_object(body) || json_object_size(body) != 1 ||
	    !json_is_string(v) ||
	    !value_ok(json_string_value(v), json_string_length(v))) {
		http_reply_error(res, 422, "invalid_request",
		    "the body must be {\"value\": ...}: 1 to %d printable "
		    "ASCII bytes, nothing else",
		    SECRETS_VALUE_MAX);
		return;
	}
	for (int i = 0; i < PUT_TRIES && r == -EEXIST; i++) {
		int64_t next = 1;
		r = store_secret_get(b->store, name, &m, NULL, NULL);
		if (r == 0)
			next = m.version + 1;
		else if (r != -ENOENT)
			break;
		r = secrets_seal(b->secrets_key, name, next,
		    json_string_value(v), json_string_length(v), sealed,
		    sizeof(sealed), &len);
		if (r == 0)
			r = store_secret_put(b->store, name, next, sealed, len,
			    actor_of(req));
	}
	OPENSSL_cleanse(sealed, sizeof(sealed));
	if (r == 0)
		r = store_secret_get(b->store, name, &m, NULL, NULL);
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	log_info("secret_put", "{s:s, s:I}", "secret", name, "version",
	    (json_int_t)m.version);
	http_reply_json(res, 200, meta_json(&m));
}

void
secrets_get(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct secret_meta m;
	int r = store_secret_get(b->store, http_request_param(req, 0), &m, NULL,
	    NULL);

	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_secret", "no such secret");
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	json_t *out = meta_json(&m), *cands = NULL, *names = json_array(), *c;
	size_t i;
	r = store_secret_manifests(b->store, m.name, &cands);
	if (r < 0) {
		json_decref(out);
		json_decref(names);
		reply_store_error(b, res, r);
		return;
	}
	json_array_foreach(cands, i, c)
	{
		if (rule_injecting(json_object_get(c, "body"), m.name) != NULL)
			json_array_append(names, json_object_get(c, "name"));
	}
	json_decref(cands);
	json_object_set_new(out, "manifests", names);
	http_reply_json(res, 200, out);
}

void
secrets_list(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	json_t *list;
	int r = store_secret_list(b->store, &list);

	(void)req;
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:o}", "secrets", list));
}

void
secrets_delete(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *name = http_request_param(req, 0);
	bool found = false;
	int r = store_secret_delete(b->store, name, actor_of(req), &found);

	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	if (!found) {
		http_reply_error(res, 404, "unknown_secret", "no such secret");
		return;
	}
	log_info("secret_deleted", "{s:s}", "secret", name);
	http_reply_json(res, 200,
	    json_pack("{s:s, s:b}", "name", name, "deleted", true));
}

/* The rule of m's egress that injects secret name, borrowed, or NULL. */
static json_t *
rule_injecting(const json_t *m, const char *name)
{
	size_t i;
	json_t *r;

	json_array_foreach(json_object_get(m, "egress"), i, r)
	{
		const char *s = json_string_value(
		    json_object_get(json_object_get(r, "inject"), "secret"));
		if (s != NULL && strcmp(s, name) == 0)
			return r;
	}
	return NULL;
}

void
secrets_check_manifest(struct broker *b, const json_t *m, json_t *problems)
{
	size_t i;
	json_t *r;

	json_array_foreach(json_object_get(m, "egress"), i, r)
	{
		const char *name = json_string_value(
		    json_object_get(json_object_get(r, "inject"), "secret"));
		struct secret_meta meta;
		char field[64];
		int e;

		if (name == NULL)
			continue;
		snprintf(field, sizeof(field), "egress[%zu].inject.secret", i);
		e = store_secret_get(b->store, name, &meta, NULL, NULL);
		if (e == -ENOENT)
			problems_add(problems, field,
			    "no secret %s at the broker: PUT "
			    "/v1/secrets/%s first",
			    name, name);
		else if (e < 0)
			problems_add(problems, field,
			    "the broker could not look secret %s up (%s)", name,
			    strerror(-e));
	}
}

void
secrets_release(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *id = http_request_param(req, 0);
	const char *name = http_request_param(req, 1);
	struct manifest_version mv = { .body = NULL };
	struct secret_meta m;
	unsigned char *sealed = NULL;
	char value[SECRETS_VALUE_MAX + 1];
	size_t slen = 0, vlen = 0;
	struct job j;
	int r;

	if ((r = store_job_get(b->store, id, &j, NULL)) == 0)
		r = store_manifest_get(b->store, j.manifest, j.manifest_version,
		    &mv);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_job", "no such job");
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	/* Fail closed: a stopped job, or a secret its manifest does not
	 * name, gets nothing. */
	if (strcmp(j.state, "running") != 0) {
		manifest_version_free(&mv);
		http_reply_error(res, 409, "job_not_running",
		    "job %s is %s: its secrets are not released", j.id,
		    j.state);
		return;
	}
	if (rule_injecting(mv.body, name) == NULL) {
		manifest_version_free(&mv);
		http_reply_error(res, 403, "not_injected",
		    "no egress rule of manifest %s injects secret %s",
		    j.manifest, name);
		return;
	}
	manifest_version_free(&mv);
	r = store_secret_get(b->store, name, &m, &sealed, &slen);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_secret", "no such secret");
		return;
	}
	if (r == 0) {
		r = secrets_unseal(b->secrets_key, name, m.version, sealed,
		    slen, value, sizeof(value), &vlen);
		free(sealed);
		if (r < 0) {
			log_error("secret_unseal_failed", "{s:s, s:I}",
			    "secret", name, "version", (json_int_t)m.version);
			http_reply_error(res, 500, "secret_unsealable",
			    "secret %s does not open with this broker's key "
			    "(%s): nothing released",
			    name, SECRETS_KEY_FILE);
			return;
		}
		/* Audited before a byte of the value leaves. */
		r = store_secret_released(b->store, name, m.version, j.id,
		    actor_of(req));
	}
	if (r < 0) {
		OPENSSL_cleanse(value, sizeof(value));
		reply_store_error(b, res, r);
		return;
	}
	log_info("secret_released", "{s:s, s:s, s:I}", "job", j.id, "secret",
	    name, "version", (json_int_t)m.version);
	http_reply_json(res, 200,
	    json_pack("{s:s, s:s, s:I, s:s%, s:s}", "job", j.id, "secret", name,
		"version", (json_int_t)m.version, "value", value, vlen,
		"source", "static"));
	OPENSSL_cleanse(value, sizeof(value));
}
