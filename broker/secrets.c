/*
 * Secrets at the broker (secrets.h): the sealing (AES-256-GCM through
 * OpenSSL's EVP, a fresh nonce per seal, "cordon-secret\n<name>\n<version>"
 * as associated data) and the handlers of /v1/secrets and of a job's
 * release. A value is checked once, at PUT (printable ASCII, so that it
 * fits in a header), kept sealed in the store, and opened only to
 * answer a release, which is audited before the answer goes.
 */
#include "secrets.h"

#include "bindings.h"
#include "broker.h"
#include "issuers.h"
#include "log.h"
#include "manifest.h"
#include "path.h"
#include "problems.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
secrets_value_digest(const unsigned char key[SECRETS_KEY_LEN],
    const void *value, size_t len, unsigned char out[SECRETS_DIGEST_LEN])
{
	static const char label[] = "cordon-burned-value";
	unsigned char sub[SECRETS_DIGEST_LEN];
	unsigned int n = 0;
	int r = -EIO;

	if (HMAC(EVP_sha256(), key, SECRETS_KEY_LEN,
		(const unsigned char *)label, sizeof(label) - 1, sub,
		&n) != NULL &&
	    n == sizeof(sub) &&
	    HMAC(EVP_sha256(), sub, sizeof(sub), value, len, out, &n) != NULL &&
	    n == SECRETS_DIGEST_LEN)
		r = 0;
	OPENSSL_cleanse(sub, sizeof(sub));
	return r;
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
static const char *kind_of(const json_t *audit);

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
	/* A space at an end is trimmed by the upstream (a field value's
	 * spaces are not its own): such a value is another spelling of the
	 * one without, past the burned values' digest (redteam6). */
	if (v[0] == ' ' || v[len - 1] == ' ')
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

/* Overwrites every string inside j (an issuer's configuration holds a
 * client secret or a private key) before it is freed. */
static void
wipe_json(json_t *j)
{
	const char *k;
	size_t i;
	json_t *v;

	if (json_is_string(j))
		OPENSSL_cleanse((char *)json_string_value(j),
		    json_string_length(j));
	else if (json_is_object(j))
		json_object_foreach(j, k, v) wipe_json(v);
	else if (json_is_array(j))
		json_array_foreach(j, i, v) wipe_json(v);
}

/*
 * What a PUT body seals: a static value as it is, or an issuer's
 * configuration (issuers.h) as SECRETS_ISSUER_PREFIX and its JSON. 0
 * with a malloc'd plaintext, or -EINVAL with why.
 */
static int
plaintext_of(const json_t *body, char **ret, size_t *ret_len,
    const char **ret_kind, char *why, size_t whylen)
{
	json_t *v = json_object_get(body, "value"), *cfg = NULL;
	char *text, *out;
	size_t n;

	if (json_object_get(body, "kind") == NULL) {
		if (!json_is_object(body) || json_object_size(body) != 1 ||
		    !json_is_string(v) ||
		    !value_ok(json_string_value(v), json_string_length(v))) {
			snprintf(why, whylen,
			    "the body must be {\"value\": ...}: 1 to %d "
			    "printable ASCII bytes, no space at either end, "
			    "nothing else; or an issuer's {\"kind\": ...}",
			    SECRETS_VALUE_MAX);
			return -EINVAL;
		}
		if ((*ret = strdup(json_string_value(v))) == NULL)
			return -ENOMEM;
		*ret_len = json_string_length(v);
		*ret_kind = "static";
		return 0;
	}
	if (issuers_config_check(body, &cfg, why, whylen) < 0)
		return -EINVAL;
	text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
	*ret_kind = strcmp(json_string_value(json_object_get(cfg, "kind")),
			ISSUER_OAUTH) == 0
	    ? ISSUER_OAUTH
	    : ISSUER_GITHUB;
	wipe_json(cfg);
	json_decref(cfg);
	if (text == NULL)
		return -ENOMEM;
	n = strlen(SECRETS_ISSUER_PREFIX) + strlen(text);
	out = n <= SECRETS_VALUE_MAX ? malloc(n + 1) : NULL;
	if (out != NULL)
		snprintf(out, n + 1, "%s%s", SECRETS_ISSUER_PREFIX, text);
	OPENSSL_cleanse(text, strlen(text));
	free(text);
	if (out == NULL) {
		snprintf(why, whylen,
		    "the issuer's configuration is over %d bytes",
		    SECRETS_VALUE_MAX);
		return -EINVAL;
	}
	*ret = out;
	*ret_len = n;
	return 0;
}

/* An issuer's configuration from an opened secret, or NULL for a static
 * value (or a configuration that no longer parses). */
static json_t *
issuer_config(const char *value, size_t len)
{
	size_t pl = strlen(SECRETS_ISSUER_PREFIX);

	if (len <= pl || memcmp(value, SECRETS_ISSUER_PREFIX, pl) != 0)
		return NULL;
	return json_loadb(value + pl, len - pl, 0, NULL);
}

static bool
is_issuer(const char *value, size_t len)
{
	size_t pl = strlen(SECRETS_ISSUER_PREFIX);

	return len > pl && memcmp(value, SECRETS_ISSUER_PREFIX, pl) == 0;
}

/*
 * A PUT body's "guard_hosts" (bindings.h: the service's other names):
 * *ret_hosts a new array of them in canonical form, or NULL when the body
 * has none (the declared hosts kept), and *ret_rest the body without
 * them, to seal. false after answering 422 with a problem at each
 * guard_hosts[i] that is not a host.
 */
static bool
guard_hosts_of(json_t *body, json_t **ret_rest, json_t **ret_hosts,
    struct http_response *res)
{
	json_t *g = json_object_get(body, "guard_hosts"), *h;
	json_t *problems, *hosts;
	char field[48], host[256];
	size_t i;

	*ret_hosts = NULL;
	if (g == NULL) {
		*ret_rest = json_incref(body);
		return true;
	}
	problems = json_array();
	hosts = json_array();
	if (!json_is_array(g) ||
	    json_array_size(g) > STORE_BINDINGS_DECLARED_MAX)
		problems_add(problems, "guard_hosts",
		    "a list of at most %d hosts: the service's other names "
		    "(host names or IP literals, lowercase, no port, no "
		    "wildcard)",
		    STORE_BINDINGS_DECLARED_MAX);
	else
		json_array_foreach(g, i, h)
		{
			snprintf(field, sizeof(field), "guard_hosts[%zu]", i);
			if (!json_is_string(h) ||
			    !bindings_host_ok(json_string_value(h), host,
				sizeof(host)))
				problems_add(problems, field,
				    "not a host: a lowercase host name or an "
				    "IPv4 or IPv6 literal, no port, no "
				    "wildcard");
			else
				json_array_append_new(hosts, json_string(host));
		}
	if (json_array_size(problems) > 0) {
		json_decref(hosts);
		http_reply_problems(res, "invalid_request", NULL, problems);
		return false;
	}
	json_decref(problems);
	*ret_rest = json_copy(body);
	json_object_del(*ret_rest, "guard_hosts");
	*ret_hosts = hosts;
	return true;
}

/*
 * A PUT body's "reflect_budget" (store.h: the reflected answers the new
 * version may have fleet-wide before it is burned) into *ret (0 when
 * none: the version before's), taken out of *rest (replaced by a copy
 * without it); a static secret's only. false after answering 422.
 */
static bool
reflect_budget_of(json_t **rest, int64_t *ret, struct http_response *res)
{
	json_t *v = json_object_get(*rest, "reflect_budget"), *copy;

	*ret = 0;
	if (v == NULL)
		return true;
	/* An issuer's credentials are each job's own and short-lived: not
	 * counted (reflections.h), so a budget would do nothing. */
	if (json_object_get(*rest, "kind") != NULL) {
		http_reply_problems(res, "invalid_request", NULL,
		    json_pack("[{s:s, s:s}]", "field", "reflect_budget",
			"problem",
			"applies to static secrets only: an issuer's "
			"credentials are each job's own and short-lived, and "
			"their reflections are not counted"));
		return false;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > STORE_REFLECT_BUDGET_MAX) {
		http_reply_problems(res, "invalid_request", NULL,
		    json_pack("[{s:s, s:s}]", "field", "reflect_budget",
			"problem",
			"the answers reflecting the value a version may have "
			"fleet-wide before it is burned: an integer from 1 to "
			"1000000"));
		return false;
	}
	*ret = json_integer_value(v);
	if ((copy = json_copy(*rest)) == NULL)
		return false;
	json_object_del(copy, "reflect_budget");
	json_decref(*rest);
	*rest = copy;
	return true;
}

/*
 * redteam5 #5: a value burned (under any name) PUT again would start a
 * fresh count. false after answering 409 value_burned (audited
 * secret_put_refused) or 503.
 */
static bool
value_unburned(struct broker *b, struct http_request *req,
    struct http_response *res, const char *name, const char *plain, size_t plen)
{
	unsigned char d[SECRETS_DIGEST_LEN];
	char burned[72], date[32];
	int64_t version = 0, at = 0;
	struct tm tm;
	time_t t;
	int r = secrets_value_digest(b->secrets_key, plain, plen, d);

	if (r == 0)
		r = store_burned_value_find(b->store, d, burned, sizeof(burned),
		    &version, &at);
	OPENSSL_cleanse(d, sizeof(d));
	if (r == -ENOENT)
		return true;
	if (r < 0) {
		reply_store_error(b, res, r);
		return false;
	}
	t = (time_t)at;
	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(date, sizeof(date), "%lld", (long long)at);
	store_audit_async(b->store, "secret_put_refused",
	    json_pack("{s:s, s:s, s:s, s:I, s:s}", "secret", name, "reason",
		"value_burned", "burned_secret", burned, "burned_version",
		(json_int_t)version, "actor", actor_of(req)));
	http_reply_error(res, 409, "value_burned",
	    "this value was burned on %s after reflections (secret %s, "
	    "version %lld): put a new key from the issuer; nothing stored",
	    date, burned, (long long)version);
	return false;
}

void
secrets_put(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *name = http_request_param(req, 0), *kind = "static";
	json_t *body = http_request_body(req), *rest = NULL, *hosts = NULL;
	unsigned char sealed[SECRETS_SEALED_MAX];
	struct secret_meta m;
	char why[200], *plain = NULL;
	size_t len = 0, plen = 0;
	int r = -EEXIST;

	if (!manifest_name_ok(name)) {
		http_reply_error(res, 422, "invalid_request",
		    "a secret's name must be [a-z0-9][a-z0-9._-]{0,63}");
		return;
	}
	if (!guard_hosts_of(body, &rest, &hosts, res))
		return;
	int64_t budget = 0;
	if (!reflect_budget_of(&rest, &budget, res)) {
		json_decref(rest);
		json_decref(hosts);
		return;
	}
	r = plaintext_of(rest, &plain, &plen, &kind, why, sizeof(why));
	/* The copy shares the values (an issuer's secret strings): freed,
	 * not wiped; the body itself is wiped by its owner. */
	json_decref(rest);
	if (r < 0)
		json_decref(hosts);
	if (r == -EINVAL) {
		http_reply_error(res, 422, "invalid_request", "%s", why);
		return;
	}
	if (r < 0) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	if (strcmp(kind, "static") == 0 &&
	    !value_unburned(b, req, res, name, plain, plen)) {
		OPENSSL_cleanse(plain, plen);
		free(plain);
		json_decref(hosts);
		return;
	}
	/* The list stays within what every proxy reads (redteam3 #9): the
	 * store counts what the put lists in its own write (-EDQUOT below);
	 * a count here first read the whole list as JSON each put. */
	r = -EEXIST;
	for (int i = 0; i < PUT_TRIES && r == -EEXIST; i++) {
		int64_t next = 1;
		r = store_secret_get(b->store, name, &m, NULL, NULL);
		if (r == 0)
			next = m.version + 1;
		else if (r != -ENOENT)
			break;
		r = secrets_seal(b->secrets_key, name, next, plain, plen,
		    sealed, sizeof(sealed), &len);
		if (r == 0)
			r = store_secret_put_budget(b->store, name, next,
			    sealed, len, hosts, budget, actor_of(req));
	}
	OPENSSL_cleanse(sealed, sizeof(sealed));
	OPENSSL_cleanse(plain, plen);
	free(plain);
	if (r == 0)
		r = store_secret_get(b->store, name, &m, NULL, NULL);
	if (r < 0) {
		json_decref(hosts);
		if (r == -EDQUOT) /* what it lists, counted in the write */
			bindings_reply_cap(res, NULL, name);
		else
			reply_store_error(b, res, r);
		return;
	}
	log_info("secret_put", "{s:s, s:I, s:s}", "secret", name, "version",
	    (json_int_t)m.version, "kind", kind);
	json_t *out = meta_json(&m);
	json_object_set_new(out, "kind", json_string(kind));
	if (hosts != NULL)
		json_object_set_new(out, "guard_hosts", hosts);
	struct secret_reflections rf;
	if (store_secret_reflections(b->store, name, m.version, &rf) == 0)
		json_object_set_new(out, "reflect_budget",
		    json_integer(rf.budget));
	http_reply_json(res, 200, out);
}

void
secrets_get(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	struct secret_meta m;
	unsigned char *sealed = NULL;
	char value[SECRETS_VALUE_MAX + 1];
	size_t slen = 0, vlen = 0;
	int r = store_secret_get(b->store, http_request_param(req, 0), &m,
	    &sealed, &slen);

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

	/* The kind, and what of an issuer's configuration may be shown. */
	r = secrets_unseal(b->secrets_key, m.name, m.version, sealed, slen,
	    value, sizeof(value), &vlen);
	free(sealed);
	if (r < 0) {
		json_object_set_new(out, "kind", json_string("unsealable"));
	} else if (is_issuer(value, vlen)) {
		json_t *cfg = issuer_config(value, vlen);
		json_t *pub = issuers_public(cfg);
		json_object_update(out, pub);
		json_decref(pub);
		wipe_json(cfg);
		json_decref(cfg);
	} else {
		json_object_set_new(out, "kind", json_string("static"));
	}
	OPENSSL_cleanse(value, sizeof(value));
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
	json_t *hosts, *declared, *addrs;
	r = bindings_of(b, m.name, &hosts, &declared, &addrs);
	if (r < 0) {
		json_decref(out);
		reply_store_error(b, res, r);
		return;
	}
	json_object_set_new(out, "hosts", hosts);
	json_object_set_new(out, "addrs", addrs);
	json_object_set_new(out, "guard_hosts", declared);
	/* The current version's reflections (reflections.h). */
	struct secret_reflections rf;
	r = store_secret_reflections(b->store, m.name, m.version, &rf);
	if (r < 0) {
		json_decref(out);
		reply_store_error(b, res, r);
		return;
	}
	json_object_set_new(out, "reflect_budget", json_integer(rf.budget));
	json_object_set_new(out, "reflections", json_integer(rf.reflections));
	json_object_set_new(out, "burned", json_boolean(rf.burned_at != 0));
	if (rf.burned_at != 0) {
		json_object_set_new(out, "burned_at",
		    json_integer(rf.burned_at));
		json_object_set_new(out, "burned_reason",
		    json_string(rf.burned_reason));
		json_object_set_new(out, "burned_job",
		    json_string(rf.burned_job));
	}
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

json_t *
secrets_rule_injecting(const json_t *m, const char *name)
{
	return rule_injecting(m, name);
}

int
secrets_kind(struct broker *b, const char *name, struct secret_meta *ret_meta,
    const char **ret_kind)
{
	char value[SECRETS_VALUE_MAX + 1];
	unsigned char *sealed = NULL;
	size_t slen = 0, vlen = 0;
	int r = store_secret_get(b->store, name, ret_meta, &sealed, &slen);

	if (r < 0)
		return r;
	r = secrets_unseal(b->secrets_key, ret_meta->name, ret_meta->version,
	    sealed, slen, value, sizeof(value), &vlen);
	free(sealed);
	if (r < 0)
		*ret_kind = "unsealable";
	else if (!is_issuer(value, vlen))
		*ret_kind = "static";
	else {
		json_t *cfg = issuer_config(value, vlen);
		*ret_kind = kind_of(cfg);
		wipe_json(cfg);
		json_decref(cfg);
	}
	OPENSSL_cleanse(value, sizeof(value));
	return 0;
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

/* Answers the value released for job (audited first, never a value):
 * source "static" or the issuer's kind, expires 0 when none. */
static void
reply_value(struct broker *b, struct http_request *req,
    struct http_response *res, const char *job, const char *name,
    int64_t version, const char *value, size_t vlen, const char *source,
    int64_t expires)
{
	int r =
	    store_secret_released(b->store, name, version, job, actor_of(req));

	/* Burned past its reflection budget (reflections.h): refused in
	 * the release's own write, so no report comes between. */
	if (r == -EKEYREVOKED) {
		atomic_fetch_add(&b->releases_burned, 1);
		log_warn("release_refused", "{s:s, s:s, s:I, s:s}", "job", job,
		    "secret", name, "version", (json_int_t)version, "reason",
		    "secret_burned");
		http_reply_error(res, 403, "secret_burned",
		    "version %lld of secret %s is burned: its answers "
		    "reflected it past its reflect_budget across the fleet "
		    "(GET /v1/secrets/%s says when and why); rotate it at "
		    "its service and PUT the new value",
		    (long long)version, name, name);
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	atomic_fetch_add(&b->secrets_released, 1);
	log_info("secret_released", "{s:s, s:s, s:I}", "job", job, "secret",
	    name, "version", (json_int_t)version);
	json_t *out = json_pack("{s:s, s:s, s:I, s:s%, s:s}", "job", job,
	    "secret", name, "version", (json_int_t)version, "value", value,
	    vlen, "source", source);
	if (out != NULL && expires != 0)
		json_object_set_new(out, "expires", json_integer(expires));
	http_reply_json(res, 200, out);
}

/* The issuer's kind as the audit and the answer's source say it. */
static const char *
kind_of(const json_t *audit)
{
	const char *k = json_string_value(json_object_get(audit, "kind"));

	return k != NULL && strcmp(k, ISSUER_OAUTH) == 0 ? ISSUER_OAUTH
							 : ISSUER_GITHUB;
}

/* Answers the credential an issuer gave (a new one audited as
 * upstream_issued); takes audit. */
static void
reply_issued(struct broker *b, struct http_request *req,
    struct http_response *res, json_t *audit, const struct issued *got,
    int64_t version)
{
	const char *job = http_request_param(req, 0);
	const char *name = http_request_param(req, 1);
	const char *kind = kind_of(audit);

	if (got->fresh && audit != NULL) {
		if (got->expires != 0)
			json_object_set_new(audit, "expires",
			    json_integer(got->expires));
		log_info("upstream_issued", "{s:s, s:s, s:I, s:s}", "job", job,
		    "secret", name, "version", (json_int_t)version, "kind",
		    kind);
		store_audit_async(b->store, "upstream_issued", audit);
		audit = NULL;
	}
	reply_value(b, req, res, job, name, version, got->value, got->len, kind,
	    got->expires);
	json_decref(audit);
}

/* Answers a release an issuer's credential was not given to (r as
 * issuers_release says it), audited but for a full queue or a stop;
 * takes audit. */
static void
reply_not_issued(struct broker *b, struct http_request *req,
    struct http_response *res, json_t *audit, int r, long status,
    const char *why)
{
	const char *job = http_request_param(req, 0);
	const char *name = http_request_param(req, 1);

	/* Refused before any issuer was asked: counted, not audited (a
	 * job in a loop would fill the audit). */
	if (r == -EBUSY || r == -ESHUTDOWN) {
		json_decref(audit);
		if (r == -EBUSY)
			http_reply_error(res, 503, "issuer_busy",
			    "secret %s not released: %s", name, why);
		else
			http_reply_error(res, 503, "broker_stopping",
			    "the broker is stopping: secret %s not released; "
			    "ask another broker or again",
			    name);
		http_reply_header(res, "Retry-After", "1");
		return;
	}
	if (audit != NULL) {
		json_object_set_new(audit, "error", json_string(why));
		if (status != 0)
			json_object_set_new(audit, "status",
			    json_integer(status));
		store_audit_async(b->store, "upstream_issue_failed", audit);
	}
	log_warn("upstream_issue_failed", "{s:s, s:s, s:s, s:s}", "job", job,
	    "secret", name, "kind", kind_of(audit), "error", why);
	if (r == -ESTALE)
		http_reply_error(res, 409, "job_not_running",
		    "job %s was revoked meanwhile: nothing released", job);
	else if (r == -EPROTO)
		http_reply_error(res, 502, "issuer_refused",
		    "the issuer of secret %s refused: %s", name, why);
	else if (r == -EIO)
		http_reply_error(res, 502, "issuer_failed",
		    "the issuer of secret %s failed: %s", name, why);
	else if (r == -ECONNREFUSED || r == -ETIMEDOUT || r == -ENOSPC) {
		http_reply_error(res, 503, "issuer_unavailable",
		    "the issuer of secret %s is not reachable: %s", name, why);
		http_reply_header(res, "Retry-After", "2");
	} else
		http_reply_error(res, 500, "secret_unusable", "secret %s: %s",
		    name, why[0] != '\0' ? why : strerror(-r));
}

/* A release waiting for its issuer (deferred): its waiter and what its
 * answer needs. */
struct release_state {
	struct issuers_wait w;
	struct http_request *req;
	int64_t version;
	json_t *audit;
};

static void
release_state_free(void *p)
{
	struct release_state *st = p;

	OPENSSL_cleanse(&st->w.got, sizeof(st->w.got));
	json_decref(st->audit);
	free(st);
}

/* The issuers' answer (a worker's thread, or the deadlines'): the
 * request is handled again. */
static void
release_resumed(struct issuers_wait *w)
{
	struct release_state *st = w->arg;

	http_request_resume(st->req);
}

/*
 * The credential of an issuer's secret (configuration in value, vlen
 * bytes of cap, wiped here) for the request's job: answered now when one
 * is held or none may be had, otherwise the request is deferred while a
 * worker of issuers.c asks the issuer (no HTTP thread waits) and
 * answered when it is resumed. Each credential obtained, and each
 * attempt that failed, is audited (name, version, job, kind, issuer;
 * never a value).
 */
static void
release_issued(struct broker *b, struct http_request *req,
    struct http_response *res, int64_t version, char *value, size_t vlen,
    size_t cap)
{
	const char *job = http_request_param(req, 0);
	const char *name = http_request_param(req, 1);
	json_t *cfg = issuer_config(value, vlen);
	struct release_state *st = calloc(1, sizeof(*st));
	char why[ISSUER_WHY_MAX];
	json_t *audit;
	int r;

	OPENSSL_cleanse(value, cap);
	if (cfg == NULL || st == NULL) {
		json_decref(cfg);
		free(st);
		http_reply_error(res, 500, "secret_unusable",
		    "secret %s holds no issuer configuration this broker "
		    "reads: PUT it again",
		    name);
		return;
	}
	audit = json_pack("{s:s, s:s, s:I, s:s, s:s}", "job", job, "secret",
	    name, "version", (json_int_t)version, "kind",
	    strcmp(json_string_value(json_object_get(cfg, "kind")) ?: "",
		ISSUER_OAUTH) == 0
		? ISSUER_OAUTH
		: ISSUER_GITHUB,
	    "issuer", issuers_issuer(cfg) ?: "");
	r = issuers_release_held(b->issuers, job, name, version, cfg,
	    &st->w.got, why, sizeof(why));
	if (r == -EAGAIN) {
		st->req = req;
		st->version = version;
		st->audit = audit;
		st->w.done = release_resumed;
		st->w.arg = st;
		/* The request's now; deferred before any worker may resume
		 * it, and not touched here after it is queued. */
		http_request_set_state(req, st, release_state_free);
		http_request_defer(req);
		r = issuers_release_queue(b->issuers, job, name, version, cfg,
		    &st->w);
		if (r < 0) {
			st->w.result = r;
			http_request_resume(req);
		}
	} else {
		if (r == 0)
			reply_issued(b, req, res, audit, &st->w.got, version);
		else
			reply_not_issued(b, req, res, audit, r, 0, why);
		OPENSSL_cleanse(&st->w.got, sizeof(st->w.got));
		free(st);
	}
	wipe_json(cfg);
	json_decref(cfg);
}

/*
 * A static secret's scan set into values ({version, value}, newest
 * first) and audit ({version}): the current version and the earlier ones
 * kept, SECRETS_SCAN_VERSIONS at most (an issuer's configuration stored
 * as an earlier version is none). 0 or -errno.
 */
static int
scan_set_static(struct broker *b, const char *name, json_t *values,
    json_t *audit)
{
	struct secret_sealed *v = NULL;
	char value[SECRETS_VALUE_MAX + 1];
	size_t n = 0, vlen;
	int r = store_secret_versions(b->store, name, SECRETS_SCAN_VERSIONS, &v,
	    &n);

	for (size_t i = 0; r == 0 && i < n; i++) {
		r = secrets_unseal(b->secrets_key, name, v[i].version,
		    v[i].sealed, v[i].len, value, sizeof(value), &vlen);
		if (r < 0) {
			log_error("secret_unseal_failed", "{s:s, s:I}",
			    "secret", name, "version",
			    (json_int_t)v[i].version);
			r = -EBADMSG;
			break;
		}
		if (!is_issuer(value, vlen) &&
		    (json_array_append_new(values,
			 json_pack("{s:I, s:s%}", "version",
			     (json_int_t)v[i].version, "value", value, vlen)) <
			    0 ||
			json_array_append_new(audit,
			    json_pack("{s:I}", "version",
				(json_int_t)v[i].version)) < 0))
			r = -ENOMEM;
		OPENSSL_cleanse(value, sizeof(value));
	}
	secret_sealed_free(v, n);
	return r;
}

/*
 * An issuer secret's scan set into values ({version, value, expires})
 * and audit ({version, job, expires}): every credential held for it,
 * for any job, not revoked at its issuer nor expired, from the issuers'
 * store (every broker's on PostgreSQL); past SECRETS_SCAN_ISSUED_MAX
 * -E2BIG, none given. *ret_gen: the set's generation (the bindings
 * list's scan_gen for the same set). 0 or -errno.
 */
static int
scan_set_issued(struct broker *b, const char *name, json_t *values,
    json_t *audit, int64_t *ret_gen)
{
	struct issued_live *v = NULL;
	size_t n = 0;
	int r = issuers_scan_set(b->issuers, name, (int64_t)time(NULL),
	    SECRETS_SCAN_ISSUED_MAX, &v, &n, ret_gen);

	for (size_t i = 0; r == 0 && i < n; i++) {
		json_t *e = json_pack("{s:I, s:s%}", "version",
		    (json_int_t)v[i].version, "value", v[i].value, v[i].len);
		if (e != NULL && v[i].expires != 0)
			json_object_set_new(e, "expires",
			    json_integer(v[i].expires));
		if (json_array_append_new(values, e) < 0 ||
		    json_array_append_new(audit,
			json_pack("{s:I, s:s, s:I}", "version",
			    (json_int_t)v[i].version, "job", v[i].job,
			    "expires", (json_int_t)v[i].expires)) < 0)
			r = -ENOMEM;
	}
	issued_live_free(v, n);
	return r;
}

/* A scan set that could not be made (r): refused whole, with why. */
static void
scan_set_refused(struct broker *b, struct http_response *res, const char *name,
    int r)
{
	if (r == -E2BIG)
		http_reply_error(res, 409, "scan_set_cap",
		    "secret %s has more than %d live credentials: nothing "
		    "released to scan for (a part would let a job read the "
		    "rest in clear); revoke jobs or shorten the issuer's TTL",
		    name, SECRETS_SCAN_ISSUED_MAX);
	else if (r == -EBADMSG)
		http_reply_error(res, 500, "secret_unsealable",
		    "a value of secret %s does not open with this broker's "
		    "key (%s): nothing released",
		    name, SECRETS_KEY_FILE);
	else
		reply_store_error(b, res, r);
}

/*
 * A scan release (?purpose=scan&host=H[&addr=A]): a bound secret's scan
 * set, for the proxy to scan job's answers from H (and A) for, never to
 * inject: every value a service there may hold (a static secret's
 * current and earlier versions kept, an issuer's every live credential,
 * any job's); audited as one secret_released with the purpose, the host,
 * the addr and each value's version (and job), counted apart, last_used
 * left as it is. A set that cannot be whole is refused.
 */
static void
release_scan(struct broker *b, struct http_request *req,
    struct http_response *res)
{
	const char *id = http_request_param(req, 0);
	const char *name = http_request_param(req, 1);
	const char *qhost = http_request_query(req, "host");
	const char *qaddr = http_request_query(req, "addr");
	char host[256], addr[BINDINGS_ADDR_MAX], value[SECRETS_VALUE_MAX + 1];
	struct manifest_version mv = { .body = NULL };
	char why[512];
	unsigned char *sealed = NULL;
	size_t slen = 0, vlen = 0;
	struct secret_meta m;
	struct job j;
	int r;

	if (qhost == NULL || !bindings_host_ok(qhost, host, sizeof(host)) ||
	    (qaddr != NULL &&
		bindings_addr_parse(qaddr, addr, sizeof(addr)) < 0)) {
		json_t *problems = json_array();
		if (qhost == NULL ||
		    !bindings_host_ok(qhost, host, sizeof(host)))
			problems_add(problems, "host",
			    "required: the host the job's request is for "
			    "(lowercase, no port)");
		if (qaddr != NULL &&
		    bindings_addr_parse(qaddr, addr, sizeof(addr)) < 0)
			problems_add(problems, "addr",
			    "the upstream address: \"a.b.c.d:port\" or "
			    "\"[v6]:port\"");
		http_reply_problems(res, "invalid_request", NULL, problems);
		return;
	}
	r = store_job_get(b->store, id, &j, NULL);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_job", "no such job");
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	if (strcmp(j.state, "running") != 0) {
		http_reply_error(res, 409, "job_not_running",
		    "job %s is %s: nothing is released for it", j.id, j.state);
		return;
	}
	r = store_secret_get(b->store, name, &m, &sealed, &slen);
	if (r == 0 && (r = bindings_bound(b, name)) == 0) {
		free(sealed);
		http_reply_error(res, 403, "not_bound",
		    "secret %s is bound to no host or address: there is "
		    "nothing to scan for",
		    name);
		return;
	}
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_secret", "no such secret");
		return;
	}
	if (r < 0) {
		free(sealed);
		reply_store_error(b, res, r);
		return;
	}
	/* Fail closed: the job's manifest must reach the place, and the
	 * place must be the secret's (redteam3 #7: the verifier key alone
	 * released every bound secret for any running job). */
	r = store_manifest_get(b->store, j.manifest, j.manifest_version, &mv);
	if (r == 0)
		r = bindings_scan_reach(b, name, mv.body, host,
		    qaddr != NULL ? addr : NULL,
		    m.last_used != 0 &&
			(int64_t)time(NULL) - m.last_used <=
			    BINDINGS_TELL_WINDOW_S,
		    why, sizeof(why));
	manifest_version_free(&mv);
	if (r <= 0) {
		free(sealed);
		if (r == 0)
			http_reply_error(res, 403, "not_bound_here",
			    "nothing released to scan for: %s", why);
		else
			reply_store_error(b, res, r);
		return;
	}
	r = secrets_unseal(b->secrets_key, name, m.version, sealed, slen, value,
	    sizeof(value), &vlen);
	free(sealed);
	if (r < 0) {
		log_error("secret_unseal_failed", "{s:s, s:I}", "secret", name,
		    "version", (json_int_t)m.version);
		http_reply_error(res, 500, "secret_unsealable",
		    "secret %s does not open with this broker's key (%s): "
		    "nothing released",
		    name, SECRETS_KEY_FILE);
		return;
	}
	json_t *cfg =
	    is_issuer(value, vlen) ? issuer_config(value, vlen) : NULL;
	const char *source = "static";
	json_t *values = json_array(), *audit = json_array();
	int64_t gen = 0;

	if (cfg != NULL)
		source = strcmp(json_string_value(json_object_get(cfg, "kind"))
				 ?: "",
			     ISSUER_OAUTH) == 0
		    ? ISSUER_OAUTH
		    : ISSUER_GITHUB;
	if (values == NULL || audit == NULL)
		r = -ENOMEM;
	else if (is_issuer(value, vlen))
		r = cfg == NULL ? -EBADMSG
				: scan_set_issued(b, name, values, audit, &gen);
	else
		r = scan_set_static(b, name, values, audit);
	wipe_json(cfg);
	json_decref(cfg);
	if (r < 0) {
		OPENSSL_cleanse(value, sizeof(value));
		wipe_json(values);
		json_decref(values);
		json_decref(audit);
		scan_set_refused(b, res, name, r);
		return;
	}
	r = store_secret_scanned_set(b->store, name, m.version, j.id, host,
	    qaddr != NULL ? addr : NULL, audit, actor_of(req));
	if (r < 0) {
		OPENSSL_cleanse(value, sizeof(value));
		wipe_json(values);
		json_decref(values);
		json_decref(audit);
		reply_store_error(b, res, r);
		return;
	}
	atomic_fetch_add(&b->scan_releases, 1);
	json_t *e;
	size_t i;
	json_array_foreach(audit, i, e)
	{
		log_info("secret_scan_released",
		    "{s:s, s:s, s:O, s:s, s:s, s:s?, s:O?}", "job", j.id,
		    "secret", name, "version", json_object_get(e, "version"),
		    "purpose", "scan", "host", host, "addr",
		    qaddr != NULL ? addr : NULL, "of_job",
		    json_object_get(e, "job"));
	}
	json_decref(audit);
	json_t *out = json_pack("{s:s, s:s, s:I, s:s, s:s, s:o}", "job", j.id,
	    "secret", name, "version", (json_int_t)m.version, "source", source,
	    "purpose", "scan", "values", values);
	/* The current version's value where the old proxies read it. */
	if (out != NULL && !is_issuer(value, vlen))
		json_object_set_new(out, "value", json_stringn(value, vlen));
	/* An issuer's set's generation: the proxy asks again once the
	 * list's scan_gen is another. */
	if (out != NULL && gen != 0)
		json_object_set_new(out, "scan_gen", json_integer(gen));
	OPENSSL_cleanse(value, sizeof(value));
	http_reply_json(res, 200, out);
}

void
secrets_release(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	const char *id = http_request_param(req, 0);
	const char *name = http_request_param(req, 1);
	struct release_state *st = http_request_state(req);
	struct manifest_version mv = { .body = NULL };
	struct secret_meta m;
	unsigned char *sealed = NULL;
	char value[SECRETS_VALUE_MAX + 1];
	size_t slen = 0, vlen = 0;
	struct job j;
	int r;

	const char *purpose = http_request_query(req, "purpose");

	if (st == NULL && purpose != NULL) {
		if (strcmp(purpose, "scan") == 0)
			release_scan(b, req, res);
		else
			http_reply_problems(res, "invalid_request", NULL,
			    json_pack("[{s:s, s:s}]", "field", "purpose",
				"problem",
				"\"scan\", or none for an injection"));
		return;
	}
	if (st != NULL) { /* resumed: the issuers' answer */
		json_t *audit = st->audit;

		st->audit = NULL;
		if (st->w.result == 0)
			reply_issued(b, req, res, audit, &st->w.got,
			    st->version);
		else
			reply_not_issued(b, req, res, audit, st->w.result,
			    st->w.status, st->w.why);
		OPENSSL_cleanse(&st->w.got, sizeof(st->w.got));
		return;
	}
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
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	r = secrets_unseal(b->secrets_key, name, m.version, sealed, slen, value,
	    sizeof(value), &vlen);
	free(sealed);
	if (r < 0) {
		log_error("secret_unseal_failed", "{s:s, s:I}", "secret", name,
		    "version", (json_int_t)m.version);
		http_reply_error(res, 500, "secret_unsealable",
		    "secret %s does not open with this broker's key (%s): "
		    "nothing released",
		    name, SECRETS_KEY_FILE);
		return;
	}
	/* An issuer's secret: its credential for this job is what is
	 * released, never the configuration. */
	if (is_issuer(value, vlen))
		release_issued(b, req, res, m.version, value, vlen,
		    sizeof(value));
	else
		reply_value(b, req, res, j.id, name, m.version, value, vlen,
		    "static", 0);
	OPENSSL_cleanse(value, sizeof(value));
}

json_t *
secrets_revoke_upstream(struct broker *b, const char *job, const char *actor,
    bool later)
{
	json_t *list;

	if (later) {
		(void)issuers_revoke_job(b->issuers, job, true);
		return NULL;
	}
	list = issuers_revoke_job(b->issuers, job, false);
	secrets_revoke_told(b, job, actor, list);
	return list;
}

void
secrets_revoke_told(struct broker *b, const char *job, const char *actor,
    const json_t *list)
{
	json_t *e;
	size_t i;

	json_array_foreach(list, i, e)
	{
		bool ok = json_is_true(json_object_get(e, "ok"));
		json_t *d = json_deep_copy(e);

		if (d != NULL) {
			json_object_set_new(d, "job", json_string(job));
			json_object_set_new(d, "actor", json_string(actor));
			store_audit_async(b->store,
			    json_is_true(json_object_get(e, "expired"))
				? "upstream_expired"
				: ok ? "upstream_revoked"
				     : "upstream_revoke_failed",
			    d);
		}
		if (ok)
			log_info("upstream_revoked", "{s:s, s:O, s:O}", "job",
			    job, "secret", json_object_get(e, "secret"), "kind",
			    json_object_get(e, "kind"));
		else
			log_warn("upstream_revoke_failed",
			    "{s:s, s:O, s:O, s:O}", "job", job, "secret",
			    json_object_get(e, "secret"), "kind",
			    json_object_get(e, "kind"), "error",
			    json_object_get(e, "error"));
	}
}

/* The background revocations' outcomes, audited and logged. */
static void
issuers_audited(void *arg, const char *event, json_t *detail)
{
	struct broker *b = arg;

	if (strcmp(event, "upstream_revoke_failed") == 0)
		log_warn(event, "{s:O, s:O, s:O, s:O}", "job",
		    json_object_get(detail, "job"), "secret",
		    json_object_get(detail, "secret"), "attempt",
		    json_object_get(detail, "attempt"), "error",
		    json_object_get(detail, "error"));
	else
		log_info(event, "{s:O, s:O, s:O?}", "job",
		    json_object_get(detail, "job"), "secret",
		    json_object_get(detail, "secret"), "attempt",
		    json_object_get(detail, "attempt"));
	store_audit_async(b->store, event, detail);
}

static int
db_put(void *arg, const struct issued_row *row, int64_t *ret_id)
{
	return store_upstream_put(arg, row, ret_id);
}

static int
db_find(void *arg, const char *job, const char *secret, int64_t version,
    int64_t now, struct issued_row *ret)
{
	return store_upstream_find(arg, job, secret, version, now, ret);
}

static int
db_claim(void *arg, const char *job, int64_t lease_s, size_t max,
    struct issued_row **ret, size_t *n)
{
	return store_upstream_claim(arg, job, lease_s, max, ret, n);
}

static int
db_done(void *arg, int64_t id)
{
	return store_upstream_done(arg, id);
}

static int
db_retry(void *arg, int64_t id, int64_t delay_s, int attempts)
{
	return store_upstream_retry(arg, id, delay_s, attempts);
}

static int
db_pending(void *arg, int64_t *ret)
{
	return store_upstream_pending(arg, ret);
}

static int
db_live(void *arg, const char *secret, int64_t now, size_t max,
    struct issued_row **ret, size_t *n)
{
	return store_upstream_live(arg, secret, now, max, ret, n);
}

int
secrets_issuers_open(struct broker *b, const char *ca_file,
    const char *state_path, bool on_database)
{
	const struct issuers_store db = { .arg = b->store,
		.put = db_put,
		.find = db_find,
		.claim = db_claim,
		.done = db_done,
		.retry = db_retry,
		.pending = db_pending,
		.live = db_live };

	return issuers_open(ca_file, on_database ? NULL : state_path,
	    b->secrets_key, on_database ? &db : NULL, issuers_audited, b,
	    &b->issuers);
}
