/*
 * Manifest validation. Every rule is checked and every problem reported,
 * so a reviewer fixes a manifest in one round. A rule that cannot be
 * checked (a value of the wrong type) is itself a problem: nothing is
 * assumed allowed.
 */
#include "manifest.h"

#include "cidr.h"
#include "egress_path.h"
#include "path_template.h"
#include "problems.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names that mean "a secret" (docs/manifest.md, env), case-insensitive. */
static const char secret_name_re[] =
    "SECRET|TOKEN|PASSW|PWD|API_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|SESSION|"
    "_KEY$|^AWS_|^GCP_|^AZURE_|DSN$|DATABASE_URL";

/* Prefixes of well-known credentials. */
static const char *const secret_prefixes[] = { "crd_", "crk_", "ghp_", "gho_",
	"ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-",
	"xoxa-", "xoxs-", "xapp-", "sk_live_", "sk_test_", "rk_live_",
	"pk_live_", "AKIA", "ASIA", "AIza", "ya29.", "sk-", "npm_", "pypi-",
	"hf_", "-----BEGIN", "eyJ", "SG.", "dop_v1_", "shpat_", "glrt-" };

const char *const manifest_launcher_env[] = {
	"HTTP_PROXY=http://127.0.0.1:3128",
	"HTTPS_PROXY=http://127.0.0.1:3128",
	"http_proxy=http://127.0.0.1:3128",
	"https_proxy=http://127.0.0.1:3128",
	"NO_PROXY=",
	"no_proxy=",
	"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
	/* The common runtimes, at the same bundle (it holds the job's CA);
	 * Node at the proxy too (docs/launcher.md). */
	"SSL_CERT_DIR=/etc/ssl/certs",
	"NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt",
	"NODE_USE_ENV_PROXY=1",
	"REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt",
	"CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt",
	"GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt",
	"PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
	"npm_config_cafile=/etc/ssl/certs/ca-certificates.crt",
	/* The AWS SDKs and CLI: a bundle's path, no credential (the
	 * manifest's ^AWS_ rule still refuses every AWS_ name). */
	"AWS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt",
	"HOME=/tmp/home",
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"TERM=dumb",
	NULL,
};

/* True for a variable the launcher sets itself, which a manifest may
 * not. */
static bool
launcher_sets(const char *name)
{
	size_t n = strlen(name);

	if (strcmp(name, "CORDON_JOB") == 0)
		return true;
	for (const char *const *e = manifest_launcher_env; *e != NULL; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return true;
	return false;
}

/* Package registries: on an allowlist only on purpose. */
static const char *const registries[] = { "registry.npmjs.org",
	"registry.yarnpkg.com", "pypi.org", "pypi.python.org",
	"files.pythonhosted.org", "upload.pypi.org", "crates.io",
	"static.crates.io", "index.crates.io", "proxy.golang.org",
	"sum.golang.org", "rubygems.org", "index.rubygems.org",
	"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org",
	"api.nuget.org", "registry-1.docker.io", "index.docker.io",
	"auth.docker.io", "ghcr.io", "quay.io", "gcr.io", "deb.debian.org",
	"security.debian.org", "archive.ubuntu.com", "dl-cdn.alpinelinux.org",
	"packagist.org", "repo.packagist.org", "hex.pm", "repo.hex.pm",
	"cdn.jsdelivr.net", "unpkg.com", "registry.terraform.io", "cpan.org",
	"www.cpan.org", "conda.anaconda.org", "repo.anaconda.com" };

/*
 * Public suffixes under which a wildcard would cover other people's hosts:
 * the ones an allowlist meets in practice (a full list would be the
 * Public Suffix List; this one errs on refusing).
 */
static const char *const public_suffixes[] = { "com", "net", "org", "io", "dev",
	"app", "co", "ai", "cloud", "info", "biz", "me", "xyz", "edu", "gov",
	"mil", "int", "eu", "uk", "de", "fr", "nl", "us", "ca", "au", "jp",
	"cn", "in", "br", "ru", "ch", "se", "no", "es", "it", "pl", "co.uk",
	"org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.jp",
	"co.nz", "com.br", "com.cn", "co.in", "github.io",
	"githubusercontent.com", "herokuapp.com", "appspot.com",
	"cloudfront.net", "amazonaws.com", "s3.amazonaws.com",
	"azurewebsites.net", "blob.core.windows.net", "vercel.app",
	"netlify.app", "pages.dev", "workers.dev", "web.app", "firebaseapp.com",
	"fly.dev", "onrender.com", "ngrok.io", "ngrok-free.app" };

static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH",
	"DELETE", "OPTIONS" };

static bool
in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

bool
manifest_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 ||
	    !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) ||
			isdigit((unsigned char)s[i]) || s[i] == '.' ||
			s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* A non-empty string without control characters, at most max bytes. */
static bool
text_ok(const json_t *v, size_t max)
{
	const char *s;
	size_t n;

	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 0 || n > max || strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static double
entropy_bits(const char *s, size_t n)
{
	unsigned counts[256] = { 0 };
	double h = 0;

	for (size_t i = 0; i < n; i++)
		counts[(unsigned char)s[i]]++;
	for (size_t i = 0; i < 256; i++) {
		if (counts[i] == 0)
			continue;
		double p = (double)counts[i] / (double)n;
		h -= p * log2(p);
	}
	return h;
}

/* Why value looks like a secret, or NULL when it does not. */
static const char *
secret_value(const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < ARRAY_SIZE(secret_prefixes); i++)
		if (strncmp(s, secret_prefixes[i],
			strlen(secret_prefixes[i])) == 0)
			return "starts like a known credential";
	if (strstr(s, "://") != NULL) {
		const char *auth = strstr(s, "://") + 3;
		const char *at = strchr(auth, '@');
		const char *slash = strchr(auth, '/');
		if (at != NULL && (slash == NULL || at < slash) &&
		    memchr(auth, ':', (size_t)(at - auth)) != NULL)
			return "is a URL with a password in it";
		/* A URL without credentials is an address, not a key. */
		return NULL;
	}
	/* Hex carries 4 bits a character at most: judge it by length. */
	if (n >= 32 && strspn(s, "0123456789abcdefABCDEF") == n &&
	    entropy_bits(s, n) >= 3.0)
		return "looks like a hex key (32 or more hex digits)";
	/* A long run with no spaces and a random-looking alphabet. */
	if (n >= 20 && strpbrk(s, " \t") == NULL && entropy_bits(s, n) >= 4.0)
		return "looks like a random key (long, no spaces, high "
		       "entropy)";
	return NULL;
}

static regex_t secret_re;
static bool secret_re_ok;
static pthread_once_t secret_re_once = PTHREAD_ONCE_INIT;

static void
secret_re_compile(void)
{
	secret_re_ok = regcomp(&secret_re, secret_name_re,
			   REG_EXTENDED | REG_ICASE | REG_NOSUB) == 0;
}

static void
check_env(const json_t *env, json_t *problems)
{
	const char *name;
	json_t *v;
	char field[128];

	if (!json_is_object(env)) {
		problems_add(problems, "env", "must be an object of strings");
		return;
	}
	/* Compiled once; regexec on a compiled pattern is thread-safe. */
	pthread_once(&secret_re_once, secret_re_compile);
	if (!secret_re_ok) {
		problems_add(problems, "env",
		    "cannot check names: the secret pattern did not compile");
		return;
	}
	if (json_object_size(env) > 64)
		problems_add(problems, "env", "more than 64 variables");
	json_object_foreach((json_t *)env, name, v)
	{
		bool name_ok = name[0] != '\0' && strlen(name) <= 128 &&
		    (isalpha((unsigned char)name[0]) || name[0] == '_');
		for (const char *c = name; name_ok && *c; c++)
			name_ok = isalnum((unsigned char)*c) || *c == '_';
		snprintf(field, sizeof(field), "env.%.64s", name);
		if (!name_ok) {
			problems_add(problems, field, "not a variable name");
			continue;
		}
		if (regexec(&secret_re, name, 0, NULL, 0) == 0)
			problems_add(problems, field,
			    "the name says secret; secrets never enter a "
			    "sandbox (ask the broker for a capability)");
		if (launcher_sets(name))
			problems_add(problems, field,
			    "set by the launcher itself");
		if (!json_is_string(v) || json_string_length(v) > 4096 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			problems_add(problems, field,
			    "must be a string of at most 4096 bytes, no NUL");
			continue;
		}
		const char *why = secret_value(json_string_value(v));
		if (why != NULL)
			problems_add(problems, field, "the value %s", why);
	}
}

static bool
param_value_ok(const json_t *v)
{
	return (json_is_string(v) && text_ok(v, 256)) || json_is_integer(v);
}

static void
check_capabilities(const json_t *caps, json_t *problems)
{
	static const char *const keys[] = { "name", "audience", "params",
		"ttl_seconds", "reason", "mint_at_start" };
	size_t i, j;
	json_t *c;
	char where[64], field[160];

	if (!json_is_array(caps)) {
		problems_add(problems, "capabilities", "must be an array");
		return;
	}
	if (json_array_size(caps) > 32)
		problems_add(problems, "capabilities",
		    "more than 32 capabilities");
	json_array_foreach(caps, i, c)
	{
		snprintf(where, sizeof(where), "capabilities[%zu]", i);
		if (!json_is_object(c)) {
			problems_add(problems, where, "must be an object");
			continue;
		}
		problems_unknown_keys(c, where, keys, ARRAY_SIZE(keys),
		    problems);
		json_t *name = json_object_get(c, "name");
		snprintf(field, sizeof(field), "%s.name", where);
		if (!json_is_string(name) ||
		    !manifest_name_ok(json_string_value(name)))
			problems_add(problems, field,
			    "required: [a-z0-9][a-z0-9._-]{0,63}");
		else
			for (j = 0; j < i; j++) {
				json_t *o =
				    json_object_get(json_array_get(caps, j),
					"name");
				if (json_equal(o, name))
					problems_add(problems, field,
					    "duplicate capability name");
			}
		snprintf(field, sizeof(field), "%s.audience", where);
		if (!text_ok(json_object_get(c, "audience"), 128))
			problems_add(problems, field,
			    "required: the resource server that accepts it");
		snprintf(field, sizeof(field), "%s.reason", where);
		if (!text_ok(json_object_get(c, "reason"), 500))
			problems_add(problems, field,
			    "required: why the job needs it");

		json_t *ttl = json_object_get(c, "ttl_seconds");
		snprintf(field, sizeof(field), "%s.ttl_seconds", where);
		if (ttl != NULL &&
		    (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
			json_integer_value(ttl) > MANIFEST_MAX_TTL))
			problems_add(problems, field,
			    "must be 1 to %d seconds: no token lives longer "
			    "than 15 minutes",
			    MANIFEST_MAX_TTL);
		json_t *mint = json_object_get(c, "mint_at_start");
		snprintf(field, sizeof(field), "%s.mint_at_start", where);
		if (mint != NULL && !json_is_boolean(mint))
			problems_add(problems, field, "must be true or false");
		bool at_start = json_is_true(mint);

		json_t *params = json_object_get(c, "params");
		const char *pk;
		json_t *pv;
		snprintf(field, sizeof(field), "%s.params", where);
		if (!json_is_object(params) || json_object_size(params) == 0) {
			problems_add(problems, field,
			    "required: the ceiling, each parameter with the "
			    "values it may take ({\"tenant\": [\"4182\"]})");
			continue;
		}
		json_object_foreach(params, pk, pv)
		{
			snprintf(field, sizeof(field), "%s.params.%.64s", where,
			    pk);
			if (!json_is_array(pv) || json_array_size(pv) == 0 ||
			    json_array_size(pv) > 64) {
				problems_add(problems, field,
				    "must list 1 to 64 allowed values");
				continue;
			}
			if (at_start && json_array_size(pv) != 1)
				problems_add(problems, field,
				    "minted at start, so exactly one value: "
				    "the "
				    "launcher cannot choose for the job");
			for (j = 0; j < json_array_size(pv); j++) {
				json_t *e = json_array_get(pv, j);
				if (!param_value_ok(e))
					problems_add(problems, field,
					    "values must be strings or "
					    "integers");
				else if (json_is_string(e) &&
				    strchr(json_string_value(e), '*') != NULL)
					problems_add(problems, field,
					    "no wildcards in a ceiling");
			}
		}
	}
}

/*
 * The mint limits: how many tokens a job may ever hold (those minted at
 * start count, canaries do not) and how fast it may ask for them (a
 * bucket of burst, refilled per_minute a minute). Defaults for a job that
 * needs a handful of tokens; a manifest that needs more says so, and the
 * change is reviewed like any other of the identity plane.
 */
static const struct mint_limit {
	const char *key;
	long long min, max, dflt;
} mint_limits[] = {
	{ "max_tokens", 1, 10000000, MANIFEST_MINT_MAX_TOKENS },
	{ "per_minute", 1, 10000000, MANIFEST_MINT_PER_MINUTE },
	{ "burst", 1, 1000000, MANIFEST_MINT_BURST },
};

static void
check_mint(const json_t *mint, const json_t *caps, json_t *problems)
{
	static const char *const keys[] = { "max_tokens", "per_minute",
		"burst" };
	size_t i, at_start = 0;
	json_t *c;
	char field[64];

	if (!json_is_object(mint)) {
		problems_add(problems, "mint", "must be an object");
		return;
	}
	problems_unknown_keys(mint, "mint", keys, ARRAY_SIZE(keys), problems);
	for (i = 0; i < ARRAY_SIZE(mint_limits); i++) {
		json_t *v = json_object_get(mint, mint_limits[i].key);
		snprintf(field, sizeof(field), "mint.%s", mint_limits[i].key);
		if (v != NULL &&
		    (!json_is_integer(v) ||
			json_integer_value(v) < mint_limits[i].min ||
			json_integer_value(v) > mint_limits[i].max))
			problems_add(problems, field,
			    "must be an integer, %lld to %lld",
			    mint_limits[i].min, mint_limits[i].max);
	}
	json_array_foreach(caps, i, c)
	{
		at_start += json_is_true(json_object_get(c, "mint_at_start"));
	}
	json_t *max = json_object_get(mint, "max_tokens");
	if (json_is_integer(max) && json_integer_value(max) >= 1 &&
	    (size_t)json_integer_value(max) < at_start)
		problems_add(problems, "mint.max_tokens",
		    "below the %zu capabilities minted at start, which count",
		    at_start);
}

/* Lowercase letters, digits, '-' and '.'; labels 1..63; total <= 253. */
static bool
hostname_ok(const char *h)
{
	size_t n = strlen(h), label = 0;

	if (n == 0 || n > 253 || h[0] == '.' || h[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (c == '.') {
			if (label == 0 || h[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
			c == '-'))
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > 63)
			return false;
	}
	return h[n - 1] != '-';
}

/* Whether h reads as an IPv4 address to inet_aton (its legacy forms
 * too: 2130706433, 0x7f.1, 10.1): the proxy refuses a rule to one
 * (egress_is_ip_literal), dialling names only. An IPv6 literal is no
 * host name already (':'). */
static bool
ip_literal(const char *h)
{
	struct in_addr a4;

	return inet_aton(h, &a4) != 0;
}

/* True when host is a registry or a wildcard suffix covers one. */
static bool
registry_host(const char *host)
{
	const char *suffix = strncmp(host, "*.", 2) == 0 ? host + 1 : NULL;

	for (size_t i = 0; i < ARRAY_SIZE(registries); i++) {
		const char *r = registries[i];
		size_t rn = strlen(r), sn;

		if (strcmp(host, r) == 0)
			return true;
		if (suffix == NULL)
			continue;
		sn = strlen(suffix); /* ".example.com" */
		if (rn > sn && strcmp(r + rn - sn, suffix) == 0)
			return true;
	}
	return false;
}

bool
manifest_registry_host(const char *host)
{
	return registry_host(host);
}

/*
 * A path prefix: one the proxy loads (egress_path_problem: one reading,
 * else *ret_problem says which spelling), and no '%', '?', '#' or '*':
 * what the proxy compares against must have one spelling.
 */
static bool
path_prefix_ok(const char *s, const char **ret_problem)
{
	/* The proxy's own check (one reading), and no escapes or pattern
	 * characters: a prefix is matched as text. */
	*ret_problem = egress_path_problem(s, strlen(s));
	return *ret_problem == NULL && strpbrk(s, "%?#*") == NULL;
}

static bool
cidr_ok(const char *s)
{
	struct cidr c;

	return cidr_parse(s, &c) == 0;
}

static void
check_rule(const json_t *r, const char *where, json_t *problems)
{
	static const char *const keys[] = { "host", "port", "methods", "paths",
		"query", "tls", "reason", "registry", "allow_cidrs", "upgrade",
		"audience", "inject" };
	json_t *v;
	size_t j;
	char field[160];
	const char *host = NULL;

	problems_unknown_keys(r, where, keys, ARRAY_SIZE(keys), problems);

	v = json_object_get(r, "host");
	snprintf(field, sizeof(field), "%s.host", where);
	if (!json_is_string(v)) {
		problems_add(problems, field, "required: a host name");
	} else {
		host = json_string_value(v);
		const char *bare =
		    strncmp(host, "*.", 2) == 0 ? host + 2 : host;
		if (strcmp(host, "*") == 0 || strchr(bare, '*') != NULL)
			problems_add(problems, field,
			    "a wildcard may only be a leading \"*.\" label");
		else if (!hostname_ok(bare))
			problems_add(problems, field,
			    "not a lowercase host name (IDNA names in their "
			    "xn-- form)");
		else if (ip_literal(bare))
			problems_add(problems, field,
			    "an IP address where a host name belongs: the "
			    "proxy dials names only (give the address a name "
			    "in the proxy's hosts_file)");
		else if (bare != host &&
		    (strchr(bare, '.') == NULL ||
			in_list(bare, public_suffixes,
			    ARRAY_SIZE(public_suffixes))))
			problems_add(problems, field,
			    "a wildcard on a public suffix covers other "
			    "people's hosts");
		json_t *reg = json_object_get(r, "registry");
		if (reg != NULL && !json_is_boolean(reg))
			problems_add(problems, where,
			    "\"registry\" must be a boolean");
		else if (registry_host(host) && !json_is_true(reg))
			problems_add(problems, field,
			    "a package registry: dependencies resolve outside "
			    "the boundary; say \"registry\": true with a "
			    "reason "
			    "if this is on purpose");
	}

	v = json_object_get(r, "port");
	snprintf(field, sizeof(field), "%s.port", where);
	if (v != NULL &&
	    (!json_is_integer(v) || json_integer_value(v) < 1 ||
		json_integer_value(v) > 65535))
		problems_add(problems, field, "must be 1 to 65535");

	v = json_object_get(r, "methods");
	snprintf(field, sizeof(field), "%s.methods", where);
	if (!json_is_array(v) || json_array_size(v) == 0)
		problems_add(problems, field,
		    "required: a non-empty list of methods");
	else
		for (j = 0; j < json_array_size(v); j++) {
			json_t *m = json_array_get(v, j);
			if (!json_is_string(m) ||
			    !in_list(json_string_value(m), methods,
				ARRAY_SIZE(methods)))
				problems_add(problems, field,
				    "unknown method (GET, HEAD, POST, PUT, "
				    "PATCH, DELETE, OPTIONS)");
		}

	v = json_object_get(r, "paths");
	snprintf(field, sizeof(field), "%s.paths", where);
	if (v != NULL && (!json_is_array(v) || json_array_size(v) == 0))
		problems_add(problems, field,
		    "must be a non-empty list of prefixes");
	else if (v != NULL)
		for (j = 0; j < json_array_size(v); j++) {
			json_t *p = json_array_get(v, j);
			const char *s = json_string_value(p);
			const char *why = NULL;
			if (!text_ok(p, 1024) || !path_prefix_ok(s, &why))
				problems_add(problems, field,
				    "a path prefix starts with '/', with one "
				    "reading, without escapes, '?', '#' or "
				    "'*'%s%s",
				    why != NULL ? ": " : "",
				    why != NULL ? why : "");
		}

	v = json_object_get(r, "tls");
	snprintf(field, sizeof(field), "%s.tls", where);
	if (v != NULL &&
	    (!json_is_string(v) ||
		(strcmp(json_string_value(v), "terminate") != 0 &&
		    strcmp(json_string_value(v), "passthrough") != 0)))
		problems_add(problems, field,
		    "must be \"terminate\" or \"passthrough\"");
	else if (v != NULL &&
	    strcmp(json_string_value(v), "passthrough") == 0 &&
	    (json_object_get(r, "paths") != NULL))
		problems_add(problems, field,
		    "passthrough cannot see paths: remove \"paths\" or "
		    "terminate");

	v = json_object_get(r, "reason");
	snprintf(field, sizeof(field), "%s.reason", where);
	if (!text_ok(v, 500))
		problems_add(problems, field,
		    "required: why the job must reach this host");

	v = json_object_get(r, "allow_cidrs");
	snprintf(field, sizeof(field), "%s.allow_cidrs", where);
	if (v != NULL && !json_is_array(v))
		problems_add(problems, field, "must be a list of CIDRs");
	else if (v != NULL)
		for (j = 0; j < json_array_size(v); j++)
			if (!json_is_string(json_array_get(v, j)) ||
			    !cidr_ok(json_string_value(json_array_get(v, j))))
				problems_add(problems, field,
				    "not a CIDR (\"10.1.2.0/24\")");

	v = json_object_get(r, "upgrade");
	snprintf(field, sizeof(field), "%s.upgrade", where);
	if (v != NULL && !json_is_boolean(v))
		problems_add(problems, field, "must be true or false");

	v = json_object_get(r, "audience");
	snprintf(field, sizeof(field), "%s.audience", where);
	if (v != NULL && !text_ok(v, 128))
		problems_add(problems, field,
		    "the audience of the tokens this host accepts: a "
		    "string of 1 to 128 characters");
}

static int
rule_port(const json_t *r)
{
	json_t *p = json_object_get(r, "port");

	return json_is_integer(p) ? (int)json_integer_value(p) : 443;
}

/* Headers an injection may not set: the framing, the hop, the proxy's. */
static const char *const inject_refused_headers[] = { "host", "content-length",
	"transfer-encoding", "connection", "upgrade", "te", "trailer",
	"keep-alive", "expect", "proxy-authorization", "proxy-connection" };

bool
manifest_inject_header_ok(const char *h)
{
	char lower[65];
	size_t n = h != NULL ? strlen(h) : 0;

	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '-'))
			return false;
		lower[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	lower[n] = '\0';
	if (strncmp(lower, "x-cordon-", 9) == 0)
		return false;
	return !in_list(lower, inject_refused_headers,
	    ARRAY_SIZE(inject_refused_headers));
}

bool
manifest_inject_format_ok(const char *f)
{
	size_t n = f != NULL ? strlen(f) : 0, holes = 0;

	if (n == 0 || n > MANIFEST_INJECT_FORMAT_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)f[i] < 0x20 || (unsigned char)f[i] > 0x7e ||
		    f[i] == '}')
			return false;
		if (f[i] == '{') {
			if (strncmp(f + i, "{secret}", 8) != 0)
				return false;
			holes++;
			i += 7;
		}
	}
	return holes == 1;
}

/* Whether every range of rule r's allow_cidrs is inside 127.0.0.0/8 (and
 * it has at least one): where plain HTTP may carry an injected value. */
static bool
loopback_only(const json_t *r)
{
	json_t *a = json_object_get(r, "allow_cidrs"), *v;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) == 0)
		return false;
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);
		struct cidr c;
		if (s == NULL || cidr_parse(s, &c) != 0 ||
		    strncmp(s, "127.", 4) != 0 || strchr(s, ':') != NULL)
			return false;
		const char *slash = strchr(s, '/');
		if (slash != NULL && strtol(slash + 1, NULL, 10) < 8)
			return false;
	}
	return true;
}

/*
 * The rule's "inject" (credentials.md): a secret the proxy adds upstream
 * in place of the job's token for capability. Only where the proxy reads
 * the request (tls terminate) or on plain HTTP to loopback ranges.
 */
static void
check_inject(const json_t *m, const json_t *r, const char *where,
    json_t *problems)
{
	static const char *const keys[] = { "secret", "header", "format",
		"capability", "cookies" };
	json_t *in = json_object_get(r, "inject"), *v;
	char field[160];

	if (in == NULL)
		return;
	snprintf(field, sizeof(field), "%s.inject", where);
	if (!json_is_object(in)) {
		problems_add(problems, field,
		    "must be {\"secret\", \"header\", \"format\", "
		    "\"capability\"}");
		return;
	}
	problems_unknown_keys(in, field, keys, ARRAY_SIZE(keys), problems);
	const char *tls = json_string_value(json_object_get(r, "tls"));
	if (tls == NULL)
		tls = rule_port(r) == 443 ? "terminate" : "none";
	if (strcmp(tls, "passthrough") == 0)
		problems_add(problems, field,
		    "passthrough cannot carry an injected credential: the "
		    "proxy does not read the request; use \"tls\": "
		    "\"terminate\"");
	else if (strcmp(tls, "none") == 0 && !loopback_only(r))
		problems_add(problems, field,
		    "plain HTTP would carry the credential in clear: inject "
		    "only on tls terminate, or with allow_cidrs all in "
		    "127.0.0.0/8");
	/* A wildcard sends the credential to every name under it. */
	v = json_object_get(r, "host");
	if (json_is_string(v) && strncmp(json_string_value(v), "*.", 2) == 0)
		problems_add(problems, field,
		    "a wildcard host would send the credential to every name "
		    "under it: inject only on a host named in full");

	v = json_object_get(in, "secret");
	snprintf(field, sizeof(field), "%s.inject.secret", where);
	if (!json_is_string(v) || !manifest_name_ok(json_string_value(v)))
		problems_add(problems, field,
		    "required: the name of a secret at the broker, "
		    "[a-z0-9][a-z0-9._-]{0,63}");

	v = json_object_get(in, "header");
	snprintf(field, sizeof(field), "%s.inject.header", where);
	if (!json_is_string(v) ||
	    !manifest_inject_header_ok(json_string_value(v)))
		problems_add(problems, field,
		    "required: a header name (letters, digits, '-'; at most "
		    "64), not Host, a framing or hop header, nor X-Cordon-*");

	v = json_object_get(in, "format");
	snprintf(field, sizeof(field), "%s.inject.format", where);
	if (v != NULL &&
	    (!json_is_string(v) ||
		!manifest_inject_format_ok(json_string_value(v))))
		problems_add(problems, field,
		    "printable ASCII with exactly one {secret} and no other "
		    "braces (\"Bearer {secret}\"), at most %d bytes",
		    MANIFEST_INJECT_FORMAT_MAX);

	v = json_object_get(in, "cookies");
	snprintf(field, sizeof(field), "%s.inject.cookies", where);
	if (v != NULL && !json_is_boolean(v))
		problems_add(problems, field,
		    "true or false: whether the job gets the Set-Cookie of an "
		    "injected answer (a session the key bought)");

	v = json_object_get(in, "capability");
	snprintf(field, sizeof(field), "%s.inject.capability", where);
	const json_t *cap = json_is_string(v)
	    ? manifest_capability(m, json_string_value(v))
	    : NULL;
	if (!json_is_string(v))
		problems_add(problems, field,
		    "required: the capability whose token the job presents "
		    "for the credential to be added");
	else if (cap == NULL)
		problems_add(problems, field,
		    "no capability of this manifest has that name");
	else {
		const char *aud =
		    json_string_value(json_object_get(r, "audience"));
		const char *caud =
		    json_string_value(json_object_get(cap, "audience"));
		if (aud != NULL && caud != NULL && strcmp(aud, caud) != 0)
			problems_add(problems, field,
			    "the capability's audience (%.128s) is not this "
			    "rule's (%.128s)",
			    caud, aud);
	}
}

/*
 * A rule's templated paths (credentials.md, "Param binding"): each
 * placeholder a whole segment naming a parameter of the rule's inject
 * capability, whose every allowed value is one plain segment, so that no
 * token the broker mints can name another path. Only on a rule that
 * injects: that capability's token is the one the proxy binds.
 */
static void
check_templates(const json_t *m, const json_t *r, const char *where,
    json_t *problems)
{
	const json_t *paths = json_object_get(r, "paths"), *p;
	const json_t *cap = NULL, *ceiling = NULL;
	const char *capname = json_string_value(
	    json_object_get(json_object_get(r, "inject"), "capability"));
	char field[160];
	size_t i;

	if (capname != NULL)
		cap = manifest_capability(m, capname);
	ceiling = json_object_get(cap, "params");
	snprintf(field, sizeof(field), "%s.paths", where);
	json_array_foreach(paths, i, p)
	{
		char names[PATH_TEMPLATE_MAX][PATH_TEMPLATE_NAME_MAX + 1];
		char unknown[512] = "";
		const char *s = json_string_value(p), *why = NULL;
		size_t n = 0, used = 0;

		if (s == NULL || !path_template_is(s))
			continue;
		if (path_template_parse(s, names, &n, &why) < 0) {
			problems_add(problems, field,
			    "a placeholder is {name} (a-z, 0-9, '_', '.', "
			    "'-'), a whole segment, at most %d a path: %s",
			    PATH_TEMPLATE_MAX, why);
			continue;
		}
		if (json_object_get(r, "inject") == NULL) {
			problems_add(problems, field,
			    "a templated path binds the token of the rule's "
			    "inject.capability: this rule injects nothing");
			continue;
		}
		if (cap == NULL)
			continue; /* check_inject says why */
		for (size_t k = 0; k < n; k++) {
			const json_t *allow =
			    json_object_get(ceiling, names[k]);
			const json_t *e;
			size_t j;

			if (allow == NULL) {
				int w = snprintf(unknown + used,
				    sizeof(unknown) - used, "%s{%s}",
				    used > 0 ? ", " : "", names[k]);
				if (w > 0 && (size_t)w < sizeof(unknown) - used)
					used += (size_t)w;
				continue;
			}
			json_array_foreach(allow, j, e)
			{
				if (path_template_value_ok(e, NULL))
					continue;
				problems_add(problems, field,
				    "{%s}: every value capability %.64s may "
				    "take must be one path segment ([A-Za-z0-9."
				    "_~-], not '.', '..' nor ending in '.'); "
				    "value %zu is not",
				    names[k], capname, j);
				break;
			}
		}
		if (used > 0)
			problems_add(problems, field,
			    "not parameters of capability %.64s: %s", capname,
			    unknown);
	}
}

/*
 * A rule's query bindings (credentials.md, "Param binding"):
 * {"repo": "{repo}"}, each a plain parameter name bound to a parameter of
 * the rule's inject capability whose every allowed value is plain (as a
 * path segment's), so that the proxy can match it byte for byte.
 */
static void
check_query(const json_t *m, const json_t *r, const char *where,
    json_t *problems)
{
	const json_t *q = json_object_get(r, "query"), *cap, *ceiling;
	const char *capname = json_string_value(
	    json_object_get(json_object_get(r, "inject"), "capability"));
	struct path_template_query b[PATH_TEMPLATE_MAX];
	const char *why = NULL;
	char field[160];
	size_t n = 0;

	if (q == NULL)
		return;
	snprintf(field, sizeof(field), "%s.query", where);
	if (path_template_query_parse(q, b, &n, &why) < 0) {
		problems_add(problems, field,
		    "{\"name\": \"{param}\"}: names of [A-Za-z0-9_.-] (no two "
		    "alike in case or '.', '-', '_'), each bound to one "
		    "{param}, at most %d: %s",
		    PATH_TEMPLATE_MAX, why);
		return;
	}
	if (json_object_get(r, "inject") == NULL) {
		problems_add(problems, field,
		    "a query binding binds the token of the rule's "
		    "inject.capability: this rule injects nothing");
		return;
	}
	if (capname == NULL || (cap = manifest_capability(m, capname)) == NULL)
		return; /* check_inject says why */
	ceiling = json_object_get(cap, "params");
	for (size_t k = 0; k < n; k++) {
		const json_t *allow = json_object_get(ceiling, b[k].param), *e;
		size_t j;

		if (allow == NULL) {
			problems_add(problems, field,
			    "%s: {%s} is not a parameter of capability %.64s",
			    b[k].name, b[k].param, capname);
			continue;
		}
		json_array_foreach(allow, j, e)
		{
			if (path_template_value_ok(e, NULL))
				continue;
			problems_add(problems, field,
			    "{%s}: every value capability %.64s may take must "
			    "be plain ([A-Za-z0-9._~-], not '.', '..' nor "
			    "ending in '.'); value %zu is not",
			    b[k].param, capname, j);
			break;
		}
	}
}

static void
check_egress(const json_t *m, const json_t *egress, json_t *problems,
    json_t *warnings)
{
	size_t i, j, n;
	json_t *r;
	char where[64];

	if (!json_is_array(egress)) {
		problems_add(problems, "egress", "must be an array");
		return;
	}
	n = json_array_size(egress);
	if (n > MANIFEST_MAX_EGRESS)
		problems_add(problems, "egress",
		    "%zu entries: more than %d is not a policy, it is a "
		    "changelog",
		    n, MANIFEST_MAX_EGRESS);
	else if (n > MANIFEST_WARN_EGRESS)
		problems_add(warnings, "egress",
		    "%zu entries: over %d, is each one still needed?", n,
		    MANIFEST_WARN_EGRESS);
	json_array_foreach(egress, i, r)
	{
		snprintf(where, sizeof(where), "egress[%zu]", i);
		if (!json_is_object(r)) {
			problems_add(problems, where, "must be an object");
			continue;
		}
		check_rule(r, where, problems);
		check_inject(m, r, where, problems);
		check_templates(m, r, where, problems);
		check_query(m, r, where, problems);
		for (j = 0; j < i; j++) {
			json_t *o = json_array_get(egress, j);
			if (json_is_object(o) &&
			    json_equal(json_object_get(o, "host"),
				json_object_get(r, "host")) &&
			    rule_port(o) == rule_port(r))
				problems_add(problems, where,
				    "same host and port as egress[%zu]: merge "
				    "them",
				    j);
		}
	}
	/* What the proxy cannot read it cannot scan for an injected value
	 * (credentials.md, "What is scanned"): said, not refused. */
	int injects = -1;
	json_array_foreach(egress, i, r)
	{
		if (injects < 0 && json_is_object(r) &&
		    json_object_get(r, "inject") != NULL)
			injects = (int)i;
	}
	json_array_foreach(egress, i, r)
	{
		const char *tls = json_string_value(json_object_get(r, "tls"));
		bool pass = tls != NULL && strcmp(tls, "passthrough") == 0;
		if (injects < 0 || !json_is_object(r) ||
		    json_object_get(r, "inject") != NULL ||
		    (!pass && !json_is_true(json_object_get(r, "upgrade"))))
			continue;
		snprintf(where, sizeof(where), "egress[%zu]", i);
		problems_add(warnings, where,
		    "%s: the proxy cannot read it, so a value egress[%d] "
		    "injects that a service keeps and shows here reaches the "
		    "job unscanned",
		    pass ? "passthrough" : "an upgrade", injects);
	}
}

static const struct limit {
	const char *key;
	long long min, max, dflt;
} limits[] = {
	{ "wall_seconds", 1, 86400, 900 },
	{ "memory_mb", 16, 65536, 512 },
	{ "pids", 1, 4096, 128 },
	{ "disk_mb", 1, 65536, 256 },
	{ "output_kb", 1, 65536, 1024 },
};

int
manifest_limit_range(const char *key, long long *ret_min, long long *ret_max,
    long long *ret_default)
{
	for (size_t i = 0; i < ARRAY_SIZE(limits); i++)
		if (strcmp(limits[i].key, key) == 0) {
			*ret_min = limits[i].min;
			*ret_max = limits[i].max;
			*ret_default = limits[i].dflt;
			return 0;
		}
	return -ENOENT;
}

/* limits.cpus, a fraction of cores enforced as a CFS quota of cpus times
 * the 100 ms period: 0.01 is the kernel's smallest quota (1 ms); 64 is
 * more cores than a host that runs these jobs has; 1 by default, so that
 * a job told nothing cannot take every core of a shared host. */
#define CPUS_MIN 0.01
#define CPUS_MAX 64.0
#define CPUS_DEFAULT 1.0

static void
check_limits(const json_t *l, json_t *problems)
{
	static const char *const keys[] = { "wall_seconds", "memory_mb", "pids",
		"disk_mb", "output_kb", "cpus" };
	char field[64];
	json_t *cpus = json_object_get(l, "cpus");

	if (!json_is_object(l)) {
		problems_add(problems, "limits", "must be an object");
		return;
	}
	problems_unknown_keys(l, "limits", keys, ARRAY_SIZE(keys), problems);
	for (size_t i = 0; i < ARRAY_SIZE(limits); i++) {
		json_t *v = json_object_get(l, limits[i].key);
		snprintf(field, sizeof(field), "limits.%s", limits[i].key);
		if (v != NULL &&
		    (!json_is_integer(v) ||
			json_integer_value(v) < limits[i].min ||
			json_integer_value(v) > limits[i].max))
			problems_add(problems, field,
			    "must be an integer, %lld to %lld", limits[i].min,
			    limits[i].max);
	}
	if (cpus != NULL &&
	    (!json_is_number(cpus) || json_number_value(cpus) < CPUS_MIN ||
		json_number_value(cpus) > CPUS_MAX))
		problems_add(problems, "limits.cpus",
		    "must be a number of cores, %g to %g", CPUS_MIN, CPUS_MAX);
}

void
manifest_check_return(const json_t *r, json_t *problems)
{
	static const char *const keys[] = { "protected", "exclude",
		"max_patch_kb" };
	json_t *v;

	if (!json_is_object(r)) {
		problems_add(problems, "return", "must be an object");
		return;
	}
	problems_unknown_keys(r, "return", keys, ARRAY_SIZE(keys), problems);
	v = json_object_get(r, "protected");
	if (v != NULL && (!json_is_array(v) || json_array_size(v) > 64))
		problems_add(problems, "return.protected",
		    "must be a list of at most 64 globs");
	else if (v != NULL)
		for (size_t i = 0; i < json_array_size(v); i++)
			if (!text_ok(json_array_get(v, i), 256))
				problems_add(problems, "return.protected",
				    "each glob is a non-empty string");
	/* Globs of tool caches left out of the patch (counted in the
	 * report); the same matcher as protected, which wins. */
	v = json_object_get(r, "exclude");
	if (v != NULL && (!json_is_array(v) || json_array_size(v) > 64))
		problems_add(problems, "return.exclude",
		    "must be a list of at most 64 globs");
	else if (v != NULL)
		for (size_t i = 0; i < json_array_size(v); i++)
			if (!text_ok(json_array_get(v, i), 256))
				problems_add(problems, "return.exclude",
				    "each glob is a non-empty string of at "
				    "most 256 bytes, no control characters");
	v = json_object_get(r, "max_patch_kb");
	if (v != NULL &&
	    (!json_is_integer(v) || json_integer_value(v) < 1 ||
		json_integer_value(v) > 1048576))
		problems_add(problems, "return.max_patch_kb",
		    "must be an integer, 1 to 1048576");
}

bool
manifest_validate(const json_t *m, const char *name, json_t *problems,
    json_t *warnings)
{
	static const char *const keys[] = { "name", "description", "command",
		"env", "capabilities", "egress", "limits", "return", "canaries",
		"mint" };
	json_t *v;

	if (!json_is_object(m)) {
		problems_add(problems, "", "a manifest is a JSON object");
		return false;
	}
	problems_unknown_keys(m, "", keys, ARRAY_SIZE(keys), problems);
	v = json_object_get(m, "canaries");
	if (v != NULL && !json_is_boolean(v))
		problems_add(problems, "canaries", "must be true or false");

	v = json_object_get(m, "name");
	if (!json_is_string(v) || !manifest_name_ok(json_string_value(v)))
		problems_add(problems, "name",
		    "required: [a-z0-9][a-z0-9._-]{0,63}");
	else if (name != NULL && strcmp(json_string_value(v), name) != 0)
		problems_add(problems, "name",
		    "differs from the name in the path");

	v = json_object_get(m, "description");
	if (v != NULL && !text_ok(v, 1000))
		problems_add(problems, "description",
		    "a single line of at most 1000 bytes");

	v = json_object_get(m, "command");
	if (v != NULL) {
		if (!json_is_array(v) || json_array_size(v) == 0 ||
		    json_array_size(v) > 256)
			problems_add(problems, "command",
			    "a list of 1 to 256 arguments");
		else
			for (size_t i = 0; i < json_array_size(v); i++)
				if (!json_is_string(json_array_get(v, i)) ||
				    strlen(json_string_value(
					json_array_get(v, i))) !=
					json_string_length(
					    json_array_get(v, i)))
					problems_add(problems, "command",
					    "each argument is a string without "
					    "NUL");
		const char *cmd0 = json_string_value(json_array_get(v, 0));
		bool shown = cmd0 != NULL && cmd0[0] != '\0';
		for (const char *c = cmd0; shown && *c != '\0'; c++)
			shown = *c > ' ' && *c < 0x7f && *c != '"';
		if (cmd0 != NULL && strchr(cmd0, '/') == NULL)
			problems_add(problems, "command[0]",
			    "\"%.64s\" is not a path: the sandbox searches no "
			    "PATH; give its absolute path (/usr/bin/%.64s)",
			    shown ? cmd0 : "?", shown ? cmd0 : "NAME");
	}
	if ((v = json_object_get(m, "env")) != NULL)
		check_env(v, problems);
	if ((v = json_object_get(m, "capabilities")) != NULL)
		check_capabilities(v, problems);
	if ((v = json_object_get(m, "mint")) != NULL)
		check_mint(v, json_object_get(m, "capabilities"), problems);
	if ((v = json_object_get(m, "egress")) != NULL)
		check_egress(m, v, problems, warnings);
	if ((v = json_object_get(m, "limits")) != NULL)
		check_limits(v, problems);
	if ((v = json_object_get(m, "return")) != NULL)
		manifest_check_return(v, problems);
	return json_array_size(problems) == 0;
}

/* True when a's and b's values for key differ (absent counts as null). */
static bool
differs(const json_t *a, const json_t *b, const char *key)
{
	json_t *x = a != NULL ? json_object_get(a, key) : NULL;
	json_t *y = b != NULL ? json_object_get(b, key) : NULL;

	if (x == NULL || y == NULL)
		return x != y;
	return !json_equal(x, y);
}

json_t *
manifest_planes(const json_t *prev, const json_t *next)
{
	json_t *planes = json_array();
	json_t *pl = prev != NULL ? json_object_get(prev, "limits") : NULL;
	json_t *nl = json_object_get(next, "limits");

	if (prev == NULL || differs(prev, next, "env") ||
	    differs(prev, next, "capabilities") || differs(prev, next, "mint"))
		json_array_append_new(planes, json_string("identity"));
	if (prev == NULL || differs(prev, next, "egress"))
		json_array_append_new(planes, json_string("reachability"));
	/* What comes back, and how much of it. */
	if (prev == NULL || differs(prev, next, "return") ||
	    differs(pl, nl, "disk_mb") || differs(pl, nl, "output_kb"))
		json_array_append_new(planes, json_string("return"));
	return planes;
}

char *
manifest_canonical(const json_t *m, char ret_sha256[65])
{
	unsigned char md[32];
	unsigned int mdlen = sizeof(md);
	char *text = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);

	if (text == NULL)
		return NULL;
	if (EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL) !=
	    1) {
		free(text);
		return NULL;
	}
	for (size_t i = 0; i < 32; i++)
		snprintf(ret_sha256 + 2 * i, 3, "%02x", md[i]);
	return text;
}

json_t *
manifest_limits(const json_t *m)
{
	json_t *l = json_object_get(m, "limits");
	json_t *out = json_object();

	for (size_t i = 0; i < ARRAY_SIZE(limits); i++) {
		json_t *v =
		    l != NULL ? json_object_get(l, limits[i].key) : NULL;
		json_object_set_new(out, limits[i].key,
		    json_integer(
			v != NULL ? json_integer_value(v) : limits[i].dflt));
	}
	json_t *cpus = l != NULL ? json_object_get(l, "cpus") : NULL;
	json_object_set_new(out, "cpus",
	    json_real(cpus != NULL ? json_number_value(cpus) : CPUS_DEFAULT));
	return out;
}

void
manifest_mint(const json_t *m, struct manifest_mint *ret)
{
	json_t *mint = json_object_get(m, "mint");
	int64_t v[ARRAY_SIZE(mint_limits)];

	for (size_t i = 0; i < ARRAY_SIZE(mint_limits); i++) {
		json_t *x = json_object_get(mint, mint_limits[i].key);
		v[i] = x != NULL ? json_integer_value(x) : mint_limits[i].dflt;
	}
	ret->max_tokens = v[0];
	ret->per_minute = v[1];
	ret->burst = v[2];
}

json_t *
manifest_capability(const json_t *m, const char *name)
{
	json_t *caps = json_object_get(m, "capabilities"), *c;
	size_t i;

	json_array_foreach(caps, i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));
		if (n != NULL && strcmp(n, name) == 0)
			return c;
	}
	return NULL;
}

json_t *
manifest_egress(const json_t *m)
{
	json_t *out = json_array(), *r;
	size_t i;

	json_array_foreach(json_object_get(m, "egress"), i, r)
	{
		json_t *rule = json_deep_copy(r);
		int port = rule_port(r);

		json_object_set_new(rule, "port", json_integer(port));
		if (json_object_get(rule, "tls") == NULL)
			json_object_set_new(rule, "tls",
			    json_string(port == 443 ? "terminate" : "none"));
		if (json_object_get(rule, "paths") == NULL &&
		    strcmp(json_string_value(json_object_get(rule, "tls")),
			"passthrough") != 0)
			json_object_set_new(rule, "paths",
			    json_pack("[s]", "/"));
		json_array_append_new(out, rule);
	}
	return out;
}
