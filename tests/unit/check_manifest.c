/*
 * Manifest validation as a reviewer meets it: every rule of docs/manifest.md
 * accepts a manifest at its boundary and refuses one just past it, naming
 * the field; every problem comes back at once; a version's planes answer
 * "which of identity, reachability and return does this touch?"; the
 * canonical text and its sha256 do not depend on key order; egress rules
 * come out with their defaults filled in.
 */
#include "manifest.h"

#include "testutil.h"

#include <check.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- helpers --------------------------------------------------------- */

/* Test JSON: any value, and \u0000 allowed in strings. */
static json_t *
parse(const char *text)
{
	return testutil_json(text, JSON_DECODE_ANY | JSON_ALLOW_NUL);
}

/* docs/manifest.md's example: valid as it stands. */
static json_t *
example(void)
{
	return parse(
	    "{\"name\": \"support-triage\","
	    " \"description\": \"reads support logs, drafts a reply\","
	    " \"command\": [\"/usr/bin/python3\", \"triage.py\"],"
	    " \"env\": {\"LANG\": \"C.UTF-8\"},"
	    " \"capabilities\": [{\"name\": \"invoices.read\","
	    "   \"audience\": \"invoices-api\","
	    "   \"params\": {\"tenant\": [\"4182\"]},"
	    "   \"ttl_seconds\": 900,"
	    "   \"reason\": \"look up the customer's last invoice\"}],"
	    " \"egress\": [{\"host\": \"api.github.com\", \"port\": 443,"
	    "   \"methods\": [\"GET\"], \"paths\": [\"/repos/acme/\"],"
	    "   \"tls\": \"terminate\","
	    "   \"reason\": \"read the issue being triaged\"}],"
	    " \"limits\": {\"wall_seconds\": 900, \"memory_mb\": 512,"
	    "   \"pids\": 128, \"disk_mb\": 256, \"output_kb\": 1024},"
	    " \"return\": {\"protected\": [\".github/**\", \".ci/**\"],"
	    "   \"max_patch_kb\": 4096}}");
}

/* A manifest holding only a name and the one top-level field given. */
static json_t *
with(const char *key, const char *json_text)
{
	json_t *m = parse("{\"name\": \"t\"}");

	json_object_set_new(m, key, parse(json_text));
	return m;
}

/* A one-rule manifest for host, with the extra fields given. */
static json_t *
rule_for(const char *host, const char *extra)
{
	char text[1024];
	int n = snprintf(text, sizeof(text),
	    "[{\"host\": \"%s\", \"methods\": [\"GET\"],"
	    " \"reason\": \"why\"%s%s}]",
	    host, extra[0] != '\0' ? ", " : "", extra);

	ck_assert(n > 0 && (size_t)n < sizeof(text));
	return with("egress", text);
}

/* A manifest with one capability with the fields given. */
static json_t *
with_cap(const char *cap_fields)
{
	char text[2048];
	int n = snprintf(text, sizeof(text), "[{%s}]", cap_fields);

	ck_assert(n > 0 && (size_t)n < sizeof(text));
	return with("capabilities", text);
}

/* A capability's name, audience and reason, then the fields given. */
#define CAP(extra)                                                             \
	"\"name\": \"invoices.read\", \"audience\": \"invoices-api\", "        \
	"\"reason\": \"the invoice\", " extra

struct verdict {
	bool ok;
	json_t *problems, *warnings;
	char *text; /* the problems, for messages */
};

static struct verdict
judge(const json_t *m, const char *name)
{
	struct verdict v = { .problems = json_array(),
		.warnings = json_array() };

	v.ok = manifest_validate(m, name, v.problems, v.warnings);
	v.text = json_dumps(v.problems, JSON_COMPACT);
	/* The answer and the list agree, always. */
	ck_assert_msg(v.ok == (json_array_size(v.problems) == 0),
	    "validate said %d with problems %s", v.ok, v.text);
	return v;
}

static void
verdict_free(struct verdict *v)
{
	json_decref(v->problems);
	json_decref(v->warnings);
	free(v->text);
}

/* Takes m. */
static void
assert_valid(json_t *m, const char *what)
{
	struct verdict v = judge(m, NULL);

	ck_assert_msg(v.ok, "%s refused: %s", what, v.text);
	verdict_free(&v);
	json_decref(m);
}

/* Takes m: refused, with a problem at exactly field. */
static void
assert_refused(json_t *m, const char *field, const char *what)
{
	struct verdict v = judge(m, NULL);

	ck_assert_msg(!v.ok, "%s accepted", what);
	ck_assert_msg(testutil_count_field(v.problems, field) >= 1,
	    "%s: no problem at \"%s\" in %s", what, field, v.text);
	verdict_free(&v);
	json_decref(m);
}

static json_t *
env_of(const char *name, const char *value)
{
	json_t *m = parse("{\"name\": \"t\", \"env\": {}}");

	json_object_set_new(json_object_get(m, "env"), name,
	    json_string(value));
	return m;
}

/* --- the whole manifest ---------------------------------------------- */

START_TEST(test_design_example_valid)
{
	json_t *m = example();
	struct verdict v = judge(m, "support-triage");

	ck_assert_msg(v.ok, "docs/manifest.md's example refused: %s", v.text);
	ck_assert_uint_eq(json_array_size(v.warnings), 0);
	verdict_free(&v);
	json_decref(m);
	/* The least a manifest can be: a name. */
	assert_valid(parse("{\"name\": \"t\"}"), "a bare name");
}
END_TEST

START_TEST(test_name)
{
	json_t *m = example();
	struct verdict v;

	/* The name in the path and the name inside must agree. */
	v = judge(m, "other-job");
	ck_assert(!v.ok);
	ck_assert_uint_eq(testutil_count_field(v.problems, "name"), 1);
	ck_assert_uint_eq(json_array_size(v.problems), 1);
	verdict_free(&v);
	json_decref(m);

	assert_refused(parse("{\"description\": \"no name\"}"), "name",
	    "a manifest without a name");
	assert_refused(parse("{\"name\": \"Support\"}"), "name",
	    "an uppercase name");
	assert_refused(parse("{\"name\": 7}"), "name", "a numeric name");
	assert_refused(parse("[]"), "", "an array");
}
END_TEST

START_TEST(test_name_ok)
{
	char n64[66], n65[66];

	memset(n64, 'a', 64);
	n64[64] = '\0';
	memset(n65, 'a', 65);
	n65[65] = '\0';
	ck_assert(manifest_name_ok(n64));
	ck_assert(!manifest_name_ok(n65));
	ck_assert(manifest_name_ok("a"));
	ck_assert(manifest_name_ok("0"));
	ck_assert(manifest_name_ok("support-triage.v2_x"));
	ck_assert(!manifest_name_ok(""));
	ck_assert(!manifest_name_ok("-a"));
	ck_assert(!manifest_name_ok(".a"));
	ck_assert(!manifest_name_ok("_a"));
	ck_assert(!manifest_name_ok("a/b"));
	ck_assert(!manifest_name_ok("a b"));
	ck_assert(!manifest_name_ok("aB"));
	ck_assert(!manifest_name_ok("../x"));
}
END_TEST

START_TEST(test_unknown_top_level_field)
{
	json_t *m = example();

	json_object_set_new(m, "secrets", json_string("please"));
	assert_refused(m, "secrets", "an unknown top-level field");
}
END_TEST

/* A long key is named cut at 64 bytes, never inside a UTF-8 character. */
START_TEST(test_unknown_field_long_utf8_key)
{
	char key[80], field[64];
	json_t *m = example();

	memset(field, 'a', 63);
	field[63] = '\0';
	/* 63 bytes, then a two-byte character across the 64-byte cut. */
	snprintf(key, sizeof(key), "%s\xc3\xa9zz", field);
	json_object_set_new(m, key, json_string("please"));
	assert_refused(m, field, "an unknown field with a long UTF-8 key");
}
END_TEST

START_TEST(test_every_problem_at_once)
{
	json_t *m = example();
	struct verdict v;

	/* Five mistakes in five places: five problems, one each. */
	json_object_set_new(json_object_get(m, "env"), "MY_KEY",
	    json_string("x"));
	json_object_del(json_array_get(json_object_get(m, "egress"), 0),
	    "reason");
	json_object_set_new(json_array_get(json_object_get(m, "capabilities"),
				0),
	    "ttl_seconds", json_integer(901));
	json_object_set_new(json_object_get(m, "limits"), "pids",
	    json_integer(0));
	json_object_set_new(m, "extra", json_true());
	v = judge(m, "support-triage");
	ck_assert(!v.ok);
	ck_assert_msg(json_array_size(v.problems) == 5, "problems: %s", v.text);
	ck_assert_uint_eq(testutil_count_field(v.problems, "env.MY_KEY"), 1);
	ck_assert_uint_eq(testutil_count_field(v.problems, "egress[0].reason"),
	    1);
	ck_assert_uint_eq(testutil_count_field(v.problems,
			      "capabilities[0].ttl_seconds"),
	    1);
	ck_assert_uint_eq(testutil_count_field(v.problems, "limits.pids"), 1);
	ck_assert_uint_eq(testutil_count_field(v.problems, "extra"), 1);
	verdict_free(&v);
	json_decref(m);

	/* Two problems with one variable are both listed. */
	m = env_of("HTTP_PROXY", "http://user:hunter2@proxy.example/");
	v = judge(m, NULL);
	ck_assert_msg(testutil_count_field(v.problems, "env.HTTP_PROXY") == 2,
	    "problems: %s", v.text);
	verdict_free(&v);
	json_decref(m);
}
END_TEST

/* --- env ------------------------------------------------------------- */

START_TEST(test_env_secret_names)
{
	/* One or more for each alternative of the convention, any case. */
	static const char *const refused[] = { "SECRET", "client_secret",
		"GITHUB_TOKEN", "token", "PASSWORD", "db_passwd", "PWD",
		"API_KEY", "APIKEY", "openai_api_key", "PRIVATE_PEM",
		"GOOGLE_CREDENTIALS", "AUTH", "OAUTH_CLIENT", "COOKIE_JAR",
		"SESSION_ID", "MY_KEY", "my_key", "_KEY", "AWS_REGION",
		"aws_region", "GCP_PROJECT", "AZURE_TENANT", "SENTRY_DSN",
		"DSN", "DATABASE_URL", "database_url" };
	/* Near misses: the anchors hold. */
	static const char *const allowed[] = { "KEYBOARD", "LANG", "LC_ALL",
		"KEY", "KEYS", "MONKEY", "KEY_ID", "MY_KEYS", "DSN_HOST",
		"MY_AWS_REGION", "AWS", "GCP", "XGCP_PROJECT", "AZURE",
		"DATABASE", "PYTHONUNBUFFERED", "TZ" };
	char field[160];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(field, sizeof(field), "env.%s", refused[i]);
		assert_refused(env_of(refused[i], "x"), field, refused[i]);
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		assert_valid(env_of(allowed[i], "x"), allowed[i]);
}
END_TEST

START_TEST(test_env_launcher_names)
{
	static const char *const reserved[] = { "HTTP_PROXY", "HTTPS_PROXY",
		"http_proxy", "https_proxy", "NO_PROXY", "no_proxy",
		"SSL_CERT_FILE", "CORDON_JOB", "HOME", "PATH", "TERM" };
	static const char *const allowed[] = { "PATHEXT", "HOMEPAGE",
		"TERMINFO_DIRS", "CORDON", "FTP_PROXY_HOST" };
	char field[160];

	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		snprintf(field, sizeof(field), "env.%s", reserved[i]);
		assert_refused(env_of(reserved[i], "x"), field, reserved[i]);
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		assert_valid(env_of(allowed[i], "x"), allowed[i]);
}
END_TEST

START_TEST(test_env_bad_names_and_types)
{
	assert_refused(env_of("1X", "x"), "env.1X", "a leading digit");
	assert_refused(env_of("A-B", "x"), "env.A-B", "a dash");
	assert_refused(env_of("A B", "x"), "env.A B", "a space");
	assert_refused(env_of("", "x"), "env.", "an empty name");
	assert_valid(env_of("_under", "x"), "a leading underscore");
	assert_refused(with("env", "{\"N\": 1}"), "env.N", "a number");
	assert_refused(with("env", "{\"N\": null}"), "env.N", "null");
	assert_refused(with("env", "[\"N=1\"]"), "env", "an array");
}
END_TEST

START_TEST(test_env_secret_values)
{
	static const char *const refused[] = {
		"ghp_0123456789abcdefABCDEF0123456789abcd",
		"github_pat_11ABCDEFG",
		"AKIAIOSFODNN7EXAMPLE",
		"xoxb-1234-5678-abcdef",
		"-----BEGIN OPENSSH PRIVATE KEY-----",
		"crd_abc",
		"crk_abc",
		"sk-proj-abc",
		"glpat-xyz",
		"eyJhbGciOiJIUzI1NiJ9",
		"postgres://app:hunter2@db.internal:5432/app",
		"https://user:pass@example.com/",
		/* 20 characters, no spaces, random-looking. */
		"q8Zr3LmX9vTn2KpW7yBc",
		"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		/* Hex keys: 4 bits a character at most, judged by length. */
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8"
		"55",
	};
	static const char *const allowed[] = {
		"C.UTF-8",
		"en_US.UTF-8",
		"",
		"1",
		/* 19 characters: one short of "long". */
		"q8Zr3LmX9vTn2KpW7yB",
		"the quick brown fox jumps over the lazy dog, twice a day",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"/usr/share/zoneinfo/Europe/Berlin",
		/* A user but no password, and an '@' in the path. */
		"https://user@example.com/",
		"https://example.com/a:b@c",
		"xox-not-a-slack-token",
		/* An address is not a key, however long its path. */
		"https://api.example.com/v1/resources/Xq8Zr3LmX9vTn2KpW7yB",
		/* 31 hex digits: one short. */
		"9f86d081884c7d659a2feaa0c55ad01",
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_refused(env_of("VALUE", refused[i]), "env.VALUE",
		    refused[i]);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		assert_valid(env_of("VALUE", allowed[i]), allowed[i]);
}
END_TEST

START_TEST(test_env_value_size)
{
	char *big = malloc(4098);
	json_t *m;

	ck_assert_ptr_nonnull(big);
	/* Spaces keep it from looking random. */
	for (size_t i = 0; i < 4097; i++)
		big[i] = i % 2 == 0 ? 'a' : ' ';
	big[4096] = '\0';
	assert_valid(env_of("BIG", big), "4096 bytes");
	big[4096] = 'a';
	big[4097] = '\0';
	assert_refused(env_of("BIG", big), "env.BIG", "4097 bytes");
	free(big);

	/* A NUL inside a value is refused, not cut short. */
	m = parse("{\"name\": \"t\", \"env\": {\"N\": \"a\\u0000b\"}}");
	assert_refused(m, "env.N", "a NUL");
}
END_TEST

START_TEST(test_env_count)
{
	json_t *m = parse("{\"name\": \"t\", \"env\": {}}");
	char name[16];

	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		json_object_set_new(json_object_get(m, "env"), name,
		    json_string("x"));
	}
	assert_valid(json_deep_copy(m), "64 variables");
	json_object_set_new(json_object_get(m, "env"), "V64", json_string("x"));
	assert_refused(m, "env", "65 variables");
}
END_TEST

/* --- egress ---------------------------------------------------------- */

/* n distinct, valid rules. */
static json_t *
with_rules(size_t n)
{
	json_t *m = parse("{\"name\": \"t\", \"egress\": []}");
	char host[64];

	for (size_t i = 0; i < n; i++) {
		snprintf(host, sizeof(host), "h%zu.example.com", i);
		json_array_append_new(json_object_get(m, "egress"),
		    json_pack("{s:s, s:[s], s:s}", "host", host, "methods",
			"GET", "reason", "a host"));
	}
	return m;
}

START_TEST(test_egress_count)
{
	json_t *m;
	struct verdict v;

	/* Up to 6: nothing to say. */
	m = with_rules(6);
	v = judge(m, NULL);
	ck_assert_msg(v.ok, "%s", v.text);
	ck_assert_uint_eq(json_array_size(v.warnings), 0);
	verdict_free(&v);
	json_decref(m);

	/* 7 to 12: accepted, with a warning. */
	m = with_rules(7);
	v = judge(m, NULL);
	ck_assert_msg(v.ok, "%s", v.text);
	ck_assert_uint_eq(json_array_size(v.warnings), 1);
	ck_assert_uint_eq(testutil_count_field(v.warnings, "egress"), 1);
	verdict_free(&v);
	json_decref(m);

	m = with_rules(12);
	v = judge(m, NULL);
	ck_assert_msg(v.ok, "12 rules refused: %s", v.text);
	ck_assert_uint_eq(testutil_count_field(v.warnings, "egress"), 1);
	verdict_free(&v);
	json_decref(m);

	/* 13: not a policy. */
	m = with_rules(13);
	v = judge(m, NULL);
	ck_assert(!v.ok);
	ck_assert_uint_eq(json_array_size(v.problems), 1);
	ck_assert_uint_eq(testutil_count_field(v.problems, "egress"), 1);
	verdict_free(&v);
	json_decref(m);

	assert_refused(with("egress", "{}"), "egress", "an object");
	assert_refused(with("egress", "[\"api.example.com\"]"), "egress[0]",
	    "a bare string");
}
END_TEST

START_TEST(test_egress_reason)
{
	assert_refused(with("egress",
			   "[{\"host\": \"api.example.com\", "
			   "\"methods\": [\"GET\"]}]"),
	    "egress[0].reason", "no reason");
	assert_refused(with("egress",
			   "[{\"host\": \"api.example.com\", "
			   "\"methods\": [\"GET\"], \"reason\": \"\"}]"),
	    "egress[0].reason", "an empty reason");
	assert_refused(with("egress",
			   "[{\"host\": \"api.example.com\", "
			   "\"methods\": [\"GET\"], "
			   "\"reason\": \"two\\nlines\"}]"),
	    "egress[0].reason", "a reason with a newline");
}
END_TEST

START_TEST(test_egress_wildcards)
{
	static const char *const refused[] = { "*", "*.com", "*.io", "*.co.uk",
		"*.github.io", "*.amazonaws.com", "*.localhost", "a.*.com",
		"*example.com", "api.*", "**.example.com" };
	static const char *const allowed[] = { "*.example.com",
		"*.example.co.uk", "*.acme.github.io" };

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_refused(rule_for(refused[i], ""), "egress[0].host",
		    refused[i]);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		assert_valid(rule_for(allowed[i], ""), allowed[i]);
}
END_TEST

START_TEST(test_egress_host_names)
{
	static const char *const refused[] = { "Example.com", "API.GITHUB.COM",
		"example.com.", ".example.com", "exa mple.com", "a..b.com",
		"-a.example.com", "a-.example.com", "ex_ample.com", "",
		"b\xc3\xbc"
		"cher.example",
		"example.com:443", "user@example.com" };

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_refused(rule_for(refused[i], ""), "egress[0].host",
		    refused[i]);
	assert_valid(rule_for("xn--bcher-kva.example", ""), "an IDNA name");
	assert_valid(rule_for("a-b.example.com", ""), "a dash inside");
	assert_refused(with("egress",
			   "[{\"methods\": [\"GET\"], \"reason\": \"r\"}]"),
	    "egress[0].host", "no host");
}
END_TEST

START_TEST(test_egress_registries)
{
	assert_refused(rule_for("registry.npmjs.org", ""), "egress[0].host",
	    "npm without registry: true");
	assert_refused(rule_for("pypi.org", ""), "egress[0].host", "pypi");
	assert_refused(rule_for("files.pythonhosted.org", ""), "egress[0].host",
	    "pythonhosted");
	assert_refused(rule_for("proxy.golang.org", "\"registry\": false"),
	    "egress[0].host", "registry: false");
	assert_valid(rule_for("registry.npmjs.org", "\"registry\": true"),
	    "npm with registry: true");
	assert_valid(rule_for("pypi.org", "\"registry\": true"),
	    "pypi with registry: true");
	/* A wildcard that covers a registry is a registry entry too. */
	assert_refused(rule_for("*.npmjs.org", ""), "egress[0].host",
	    "*.npmjs.org");
	assert_refused(rule_for("*.pythonhosted.org", ""), "egress[0].host",
	    "*.pythonhosted.org");
	assert_valid(rule_for("*.npmjs.org", "\"registry\": true"),
	    "*.npmjs.org with registry: true");
	/* Saying so needs a boolean, and still a reason. */
	assert_refused(rule_for("pypi.org", "\"registry\": \"yes\""),
	    "egress[0]", "registry: \"yes\"");
	assert_refused(with("egress",
			   "[{\"host\": \"pypi.org\", \"registry\": true,"
			   " \"methods\": [\"GET\"]}]"),
	    "egress[0].reason", "a registry without a reason");
}
END_TEST

START_TEST(test_egress_duplicates)
{
	struct verdict v;
	json_t *m;

	m = with("egress",
	    "[{\"host\": \"a.example.com\", \"methods\": [\"GET\"],"
	    "  \"reason\": \"r\"},"
	    " {\"host\": \"a.example.com\", \"port\": 443,"
	    "  \"methods\": [\"POST\"], \"reason\": \"r\"}]");
	/* 443 is the default: the same host and port twice. */
	v = judge(m, NULL);
	ck_assert(!v.ok);
	ck_assert_msg(testutil_count_field(v.problems, "egress[1]") == 1, "%s",
	    v.text);
	ck_assert_uint_eq(testutil_count_field(v.problems, "egress[0]"), 0);
	verdict_free(&v);
	json_decref(m);

	assert_valid(with("egress",
			 "[{\"host\": \"a.example.com\", \"methods\": "
			 "[\"GET\"], \"reason\": \"r\"},"
			 " {\"host\": \"a.example.com\", \"port\": 8443,"
			 "  \"methods\": [\"GET\"], \"reason\": \"r\"},"
			 " {\"host\": \"b.example.com\", \"methods\": "
			 "[\"GET\"], \"reason\": \"r\"}]"),
	    "same host on another port, another host");
}
END_TEST

START_TEST(test_egress_ports)
{
	assert_valid(rule_for("a.example.com", "\"port\": 1"), "port 1");
	assert_valid(rule_for("a.example.com", "\"port\": 65535"),
	    "port 65535");
	assert_refused(rule_for("a.example.com", "\"port\": 0"),
	    "egress[0].port", "port 0");
	assert_refused(rule_for("a.example.com", "\"port\": 65536"),
	    "egress[0].port", "port 65536");
	assert_refused(rule_for("a.example.com", "\"port\": -443"),
	    "egress[0].port", "port -443");
	assert_refused(rule_for("a.example.com", "\"port\": \"443\""),
	    "egress[0].port", "port \"443\"");
	assert_refused(rule_for("a.example.com", "\"port\": 443.5"),
	    "egress[0].port", "port 443.5");
}
END_TEST

START_TEST(test_egress_methods)
{
	static const char *const refused[] = { "get", "CONNECT", "TRACE", "",
		"GET ", "PROPFIND" };
	char text[256];

	assert_valid(with("egress",
			 "[{\"host\": \"a.example.com\", \"methods\": "
			 "[\"GET\", \"HEAD\", \"POST\", \"PUT\", \"PATCH\","
			 " \"DELETE\", \"OPTIONS\"], \"reason\": \"r\"}]"),
	    "every known method");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(text, sizeof(text),
		    "[{\"host\": \"a.example.com\", \"methods\": [\"GET\", "
		    "\"%s\"], \"reason\": \"r\"}]",
		    refused[i]);
		assert_refused(with("egress", text), "egress[0].methods",
		    refused[i]);
	}
	assert_refused(with("egress",
			   "[{\"host\": \"a.example.com\", \"methods\": [],"
			   " \"reason\": \"r\"}]"),
	    "egress[0].methods", "no methods");
	assert_refused(with("egress",
			   "[{\"host\": \"a.example.com\", \"reason\": "
			   "\"r\"}]"),
	    "egress[0].methods", "methods left out");
}
END_TEST

START_TEST(test_egress_paths)
{
	static const char *const refused[] = { "/a/../b", "/../etc", "/a/./b",
		"/repos%2Facme", "/a%2e%2e/b", "/search?q=x", "/a#frag", "/a/*",
		"repos/acme", "", "/a/..", "/..", "/a/.", "/.", "//a",
		"/a//b" };
	static const char *const allowed[] = { "/", "/repos/acme/",
		"/v1/invoices", "/a..b/", "/.well-known/x" };
	char extra[256];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(extra, sizeof(extra), "\"paths\": [\"/ok/\", \"%s\"]",
		    refused[i]);
		assert_refused(rule_for("a.example.com", extra),
		    "egress[0].paths", refused[i]);
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		snprintf(extra, sizeof(extra), "\"paths\": [\"%s\"]",
		    allowed[i]);
		assert_valid(rule_for("a.example.com", extra), allowed[i]);
	}
	assert_refused(rule_for("a.example.com", "\"paths\": []"),
	    "egress[0].paths", "an empty list");
	assert_refused(rule_for("a.example.com", "\"paths\": \"/\""),
	    "egress[0].paths", "a string");
}
END_TEST

/* A manifest whose rule injects for repo.read (its params as given) with
 * the paths given (JSON list text). */
static json_t *
templated(const char *params, const char *paths)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
	    "{\"name\": \"t\", \"capabilities\": [{\"name\": \"repo.read\","
	    "  \"audience\": \"github\", \"params\": %s,"
	    "  \"reason\": \"read\"}],"
	    " \"egress\": [{\"host\": \"api.github.com\", \"methods\": "
	    "[\"GET\"], \"paths\": %s, \"audience\": \"github\","
	    "  \"reason\": \"read\", \"inject\": {\"secret\": \"gh\","
	    "  \"header\": \"Authorization\", \"format\": \"Bearer {secret}\","
	    "  \"capability\": \"repo.read\"}}]}",
	    params, paths);

	ck_assert(n > 0 && (size_t)n < sizeof(text));
	return parse(text);
}

START_TEST(test_egress_templated_paths)
{
	static const char *const bad_values[] = { "\"a/b\"", "\"..\"", "\".\"",
		"\"\"", "\"a%2fb\"", "\"a;b\"", "\"a\\u0000b\"", "\"x.\"",
		"\"a b\"" };
	char params[128];
	struct verdict v;

	assert_valid(templated("{\"repo\": [\"widgets\", \"gadgets\"]}",
			 "[\"/repos/acme/{repo}/\", \"/meta\"]"),
	    "a templated path");
	assert_valid(templated("{\"repo\": [4182]}", "[\"/repos/{repo}\"]"),
	    "an integer value");
	/* A placeholder the capability lacks: named in the problem. */
	json_t *m = templated("{\"repo\": [\"widgets\"]}",
	    "[\"/repos/{owner}/{repo}/{ref}/\"]");
	v = judge(m, NULL);
	ck_assert(!v.ok);
	ck_assert_int_ge(testutil_count_field(v.problems, "egress[0].paths"),
	    1);
	ck_assert_msg(strstr(v.text, "{owner}, {ref}") != NULL, "%s", v.text);
	ck_assert_msg(strstr(v.text, "{repo}") == NULL, "%s", v.text);
	verdict_free(&v);
	json_decref(m);
	/* A value the broker could mint that is not one segment. */
	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]);
	     i++) {
		snprintf(params, sizeof(params),
		    "{\"repo\": [\"widgets\", %s]}", bad_values[i]);
		assert_refused(templated(params, "[\"/repos/acme/{repo}/\"]"),
		    "egress[0].paths", bad_values[i]);
	}
	/* Not a segment, unclosed, stray, empty, upper case. */
	assert_refused(templated("{\"repo\": [\"w\"]}", "[\"/r/x{repo}/\"]"),
	    "egress[0].paths", "inside a segment");
	assert_refused(templated("{\"repo\": [\"w\"]}", "[\"/r/{repo}x\"]"),
	    "egress[0].paths", "glued after");
	assert_refused(templated("{\"repo\": [\"w\"]}", "[\"/r/{repo\"]"),
	    "egress[0].paths", "unclosed");
	assert_refused(templated("{\"repo\": [\"w\"]}", "[\"/r/repo}/\"]"),
	    "egress[0].paths", "stray");
	assert_refused(templated("{\"repo\": [\"w\"]}", "[\"/r/{}/\"]"),
	    "egress[0].paths", "empty");
	assert_refused(templated("{\"repo\": [\"w\"]}", "[\"/r/{Repo}/\"]"),
	    "egress[0].paths", "upper case");
	/* Without inject, nothing binds it. */
	assert_refused(rule_for("api.github.com",
			   "\"paths\": [\"/repos/acme/{repo}/\"]"),
	    "egress[0].paths", "no inject");
}
END_TEST

START_TEST(test_egress_tls)
{
	assert_valid(rule_for("a.example.com", "\"tls\": \"terminate\""),
	    "terminate");
	assert_valid(rule_for("a.example.com", "\"tls\": \"passthrough\""),
	    "passthrough without paths");
	assert_refused(rule_for("a.example.com",
			   "\"tls\": \"passthrough\", \"paths\": [\"/\"]"),
	    "egress[0].tls", "passthrough with paths");
	assert_refused(rule_for("a.example.com", "\"tls\": \"none\""),
	    "egress[0].tls", "tls none");
	assert_refused(rule_for("a.example.com", "\"tls\": \"TERMINATE\""),
	    "egress[0].tls", "tls TERMINATE");
	assert_refused(rule_for("a.example.com", "\"tls\": true"),
	    "egress[0].tls", "tls true");
}
END_TEST

START_TEST(test_egress_cidrs)
{
	static const char *const allowed[] = { "10.1.2.0/24", "192.168.0.0/16",
		"127.0.0.1/32", "0.0.0.0/0", "fd00::/8", "::1/128" };
	static const char *const refused[] = { "10.1.2.0", "10.1.2.0/33",
		"256.1.2.0/24", "10.1.2/24", "abc/8", "fd00::/129",
		"10.0.0.0/8x", "10.0.0.0/", "", "/8", "foo:bar/64",
		" 10.0.0.0/8", "10.0.0.0/ 8", "10.0.0.0/+8", "10.0.0.0/-1" };
	char extra[128];

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		snprintf(extra, sizeof(extra), "\"allow_cidrs\": [\"%s\"]",
		    allowed[i]);
		assert_valid(rule_for("a.example.com", extra), allowed[i]);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(extra, sizeof(extra),
		    "\"allow_cidrs\": [\"10.0.0.0/8\", \"%s\"]", refused[i]);
		assert_refused(rule_for("a.example.com", extra),
		    "egress[0].allow_cidrs", refused[i]);
	}
	assert_refused(rule_for("a.example.com", "\"allow_cidrs\": [8]"),
	    "egress[0].allow_cidrs", "a number");
	assert_refused(rule_for("a.example.com",
			   "\"allow_cidrs\": \"10.0.0.0/8\""),
	    "egress[0].allow_cidrs", "a string, not a list");
}
END_TEST

START_TEST(test_egress_other_fields)
{
	assert_valid(rule_for("a.example.com", "\"upgrade\": true"),
	    "upgrade true");
	assert_refused(rule_for("a.example.com", "\"upgrade\": \"websocket\""),
	    "egress[0].upgrade", "upgrade as a string");
	assert_valid(rule_for("a.example.com",
			 "\"audience\": \"invoices-api\""),
	    "an audience");
	assert_refused(rule_for("a.example.com", "\"audience\": \"\""),
	    "egress[0].audience", "an empty audience");
	assert_refused(rule_for("a.example.com", "\"audience\": [\"a\"]"),
	    "egress[0].audience", "an audience list");
	assert_refused(rule_for("a.example.com", "\"follow_redirects\": true"),
	    "egress[0].follow_redirects", "an unknown rule field");
}
END_TEST

/* --- capabilities ---------------------------------------------------- */

START_TEST(test_cap_ttl)
{
	assert_valid(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				  "\"ttl_seconds\": 900")),
	    "ttl 900");
	assert_valid(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				  "\"ttl_seconds\": 1")),
	    "ttl 1");
	assert_valid(with_cap(CAP("\"params\": {\"t\": [\"1\"]}")),
	    "no ttl (the default)");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				    "\"ttl_seconds\": 901")),
	    "capabilities[0].ttl_seconds", "ttl 901");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				    "\"ttl_seconds\": 0")),
	    "capabilities[0].ttl_seconds", "ttl 0");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				    "\"ttl_seconds\": -5")),
	    "capabilities[0].ttl_seconds", "ttl -5");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				    "\"ttl_seconds\": \"900\"")),
	    "capabilities[0].ttl_seconds", "ttl \"900\"");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				    "\"ttl_seconds\": 899.5")),
	    "capabilities[0].ttl_seconds", "ttl 899.5");
}
END_TEST

/* capabilities[0].params of m, borrowed. */
static json_t *
first_cap_params(json_t *m)
{
	json_t *caps = json_object_get(m, "capabilities");

	return json_object_get(json_array_get(caps, 0), "params");
}

START_TEST(test_cap_params)
{
	json_t *m, *vals;

	assert_refused(with_cap(CAP("\"ttl_seconds\": 60")),
	    "capabilities[0].params", "no params ceiling");
	assert_refused(with_cap(CAP("\"params\": {}")),
	    "capabilities[0].params", "an empty ceiling");
	assert_refused(with_cap(CAP("\"params\": [\"tenant\"]")),
	    "capabilities[0].params", "a list for a ceiling");
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": []}")),
	    "capabilities[0].params.tenant", "no allowed value");
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": \"4182\"}")),
	    "capabilities[0].params.tenant", "a value, not a list");
	assert_valid(with_cap(CAP("\"params\": {\"tenant\": [4182, \"x\"]}")),
	    "integers and strings");
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": [1.5]}")),
	    "capabilities[0].params.tenant", "a real number");
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": [null]}")),
	    "capabilities[0].params.tenant", "null");
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": [\"\"]}")),
	    "capabilities[0].params.tenant", "an empty string");
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": [{}]}")),
	    "capabilities[0].params.tenant", "an object");

	/* 64 allowed values at most. */
	m = with_cap(CAP("\"params\": {\"tenant\": []}"));
	vals = json_object_get(first_cap_params(m), "tenant");
	for (int i = 0; i < 64; i++)
		json_array_append_new(vals, json_integer(i));
	assert_valid(json_deep_copy(m), "64 values");
	json_array_append_new(vals, json_integer(64));
	assert_refused(m, "capabilities[0].params.tenant", "65 values");
}
END_TEST

START_TEST(test_cap_wildcards)
{
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": [\"*\"]}")),
	    "capabilities[0].params.tenant", "\"*\"");
	assert_refused(with_cap(CAP("\"params\": {\"tenant\": [\"41*\"]}")),
	    "capabilities[0].params.tenant", "\"41*\"");
	assert_refused(with_cap(
			   CAP("\"params\": {\"tenant\": [\"4182\", \"*\"]}")),
	    "capabilities[0].params.tenant", "\"*\" beside a value");
}
END_TEST

START_TEST(test_cap_names)
{
	struct verdict v;
	json_t *m;

	m = with("capabilities",
	    "[{\"name\": \"a\", \"audience\": \"x\", \"reason\": \"r\","
	    "  \"params\": {\"t\": [\"1\"]}},"
	    " {\"name\": \"b\", \"audience\": \"x\", \"reason\": \"r\","
	    "  \"params\": {\"t\": [\"1\"]}},"
	    " {\"name\": \"a\", \"audience\": \"y\", \"reason\": \"r\","
	    "  \"params\": {\"t\": [\"2\"]}}]");
	v = judge(m, NULL);
	ck_assert(!v.ok);
	ck_assert_msg(testutil_count_field(v.problems,
			  "capabilities[2].name") == 1,
	    "%s", v.text);
	ck_assert_uint_eq(json_array_size(v.problems), 1);
	verdict_free(&v);
	json_decref(m);

	assert_refused(with_cap("\"audience\": \"x\", \"reason\": \"r\", "
				"\"params\": {\"t\": [\"1\"]}"),
	    "capabilities[0].name", "no name");
	assert_refused(with_cap("\"name\": \"Invoices\", \"audience\": \"x\", "
				"\"reason\": \"r\", \"params\": {\"t\": "
				"[\"1\"]}"),
	    "capabilities[0].name", "an uppercase name");
}
END_TEST

START_TEST(test_cap_audience_reason)
{
	assert_refused(with_cap("\"name\": \"a\", \"reason\": \"r\", "
				"\"params\": {\"t\": [\"1\"]}"),
	    "capabilities[0].audience", "no audience");
	assert_refused(with_cap("\"name\": \"a\", \"audience\": \"\", "
				"\"reason\": \"r\", \"params\": {\"t\": "
				"[\"1\"]}"),
	    "capabilities[0].audience", "an empty audience");
	assert_refused(with_cap("\"name\": \"a\", \"audience\": \"x\", "
				"\"params\": {\"t\": [\"1\"]}"),
	    "capabilities[0].reason", "no reason");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				    "\"scope\": \"all\"")),
	    "capabilities[0].scope", "an unknown field");
	assert_refused(with("capabilities", "{}"), "capabilities",
	    "an object, not a list");
}
END_TEST

START_TEST(test_cap_mint_at_start)
{
	assert_valid(with_cap(CAP("\"params\": {\"t\": [\"1\"], \"u\": [2]}, "
				  "\"mint_at_start\": true")),
	    "one value each, minted at start");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\", \"2\"]}, "
				    "\"mint_at_start\": true")),
	    "capabilities[0].params.t", "two values, minted at start");
	assert_valid(with_cap(CAP("\"params\": {\"t\": [\"1\", \"2\"]}, "
				  "\"mint_at_start\": false")),
	    "two values, asked for by the job");
	assert_refused(with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				    "\"mint_at_start\": \"yes\"")),
	    "capabilities[0].mint_at_start", "mint_at_start \"yes\"");
}
END_TEST

/* --- limits and return ----------------------------------------------- */

START_TEST(test_limits_bounds)
{
	static const struct {
		const char *key;
		long long min, max;
	} rows[] = {
		{ "wall_seconds", 1, 86400 },
		{ "memory_mb", 16, 65536 },
		{ "pids", 1, 4096 },
		{ "disk_mb", 1, 65536 },
		{ "output_kb", 1, 65536 },
	};
	char field[64];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const long long ok[] = { rows[i].min, rows[i].max };
		const long long bad[] = { rows[i].min - 1, rows[i].max + 1 };

		snprintf(field, sizeof(field), "limits.%s", rows[i].key);
		for (size_t j = 0; j < 2; j++) {
			json_t *m = with("limits", "{}");
			json_object_set_new(json_object_get(m, "limits"),
			    rows[i].key, json_integer(ok[j]));
			assert_valid(m, field);
			m = with("limits", "{}");
			json_object_set_new(json_object_get(m, "limits"),
			    rows[i].key, json_integer(bad[j]));
			assert_refused(m, field, field);
		}
		json_t *m = with("limits", "{}");
		json_object_set_new(json_object_get(m, "limits"), rows[i].key,
		    json_string("100"));
		assert_refused(m, field, "a string");
	}
	assert_refused(with("limits", "{\"cpu\": 2}"), "limits.cpu",
	    "an unknown limit");
	assert_refused(with("limits", "[]"), "limits", "a list");
}
END_TEST

START_TEST(test_limits_defaults)
{
	json_t *m = parse("{\"name\": \"t\", \"limits\": {\"pids\": 7}}");
	json_t *l = manifest_limits(m);

	ck_assert_int_eq(json_integer_value(json_object_get(l, "pids")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "wall_seconds")),
	    900);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "memory_mb")),
	    512);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "disk_mb")),
	    256);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "output_kb")),
	    1024);
	ck_assert(json_is_real(json_object_get(l, "cpus")));
	ck_assert(json_real_value(json_object_get(l, "cpus")) == 1.0);
	ck_assert_uint_eq(json_object_size(l), 6);
	json_decref(l);
	json_decref(m);
}
END_TEST

/* limits.cpus: a fraction of cores, 0.01 (the kernel's 1 ms of quota in
 * a 100 ms period) to 64; given, it comes back as a real. */
START_TEST(test_limits_cpus)
{
	static const char *const ok[] = { "0.01", "0.5", "1", "2", "64",
		"63.5" };
	static const char *const bad[] = { "0", "-1", "0.009", "64.5", "1e9",
		"\"1\"", "true", "null", "[1]" };
	char text[64];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text), "{\"cpus\": %s}", ok[i]);
		assert_valid(with("limits", text), ok[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "{\"cpus\": %s}", bad[i]);
		assert_refused(with("limits", text), "limits.cpus", bad[i]);
	}
	json_t *m = parse("{\"name\": \"t\", \"limits\": {\"cpus\": 2}}");
	json_t *l = manifest_limits(m);
	ck_assert(json_is_real(json_object_get(l, "cpus")));
	ck_assert(json_real_value(json_object_get(l, "cpus")) == 2.0);
	json_decref(l);
	json_decref(m);
	m = parse("{\"name\": \"t\", \"limits\": {\"cpus\": 0.25}}");
	l = manifest_limits(m);
	ck_assert(json_real_value(json_object_get(l, "cpus")) == 0.25);
	json_decref(l);
	json_decref(m);
}
END_TEST

/* mint: the tokens a job may ever hold and how fast it may ask. */
START_TEST(test_mint_bounds_and_defaults)
{
	static const struct {
		const char *key;
		long long min, max;
	} rows[] = {
		{ "max_tokens", 1, 10000000 },
		{ "per_minute", 1, 10000000 },
		{ "burst", 1, 1000000 },
	};
	struct manifest_mint lim;
	char text[96], field[64];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(field, sizeof(field), "mint.%s", rows[i].key);
		snprintf(text, sizeof(text), "{\"%s\": %lld}", rows[i].key,
		    rows[i].min);
		assert_valid(with("mint", text), field);
		snprintf(text, sizeof(text), "{\"%s\": %lld}", rows[i].key,
		    rows[i].max);
		assert_valid(with("mint", text), field);
		snprintf(text, sizeof(text), "{\"%s\": %lld}", rows[i].key,
		    rows[i].min - 1);
		assert_refused(with("mint", text), field, text);
		snprintf(text, sizeof(text), "{\"%s\": %lld}", rows[i].key,
		    rows[i].max + 1);
		assert_refused(with("mint", text), field, text);
		snprintf(text, sizeof(text), "{\"%s\": \"5\"}", rows[i].key);
		assert_refused(with("mint", text), field, text);
	}
	assert_refused(with("mint", "{\"max\": 5}"), "mint.max",
	    "an unknown key");
	assert_refused(with("mint", "[]"), "mint", "a list");

	/* Tokens minted at start count: a ceiling below them is refused. */
	json_t *m = with_cap(CAP("\"params\": {\"t\": [\"1\"]}, "
				 "\"mint_at_start\": true"));
	json_object_set_new(m, "mint", parse("{\"max_tokens\": 1}"));
	assert_valid(json_deep_copy(m), "one minted at start, a ceiling of 1");
	json_object_set_new(m, "mint", parse("{\"max_tokens\": 0}"));
	assert_refused(m, "mint.max_tokens", "a ceiling of 0");
	m = parse(
	    "{\"name\": \"t\", \"capabilities\": ["
	    "{" CAP(
		"\"params\": {\"t\": [1]}, \"mint_at_start\": true") "},"
								     "{\"name\""
								     ": \"b\", "
								     "\"audienc"
								     "e\": "
								     "\"b\", "
								     "\"reason"
								     "\": "
								     "\"r\","
								     " \"params"
								     "\": "
								     "{\"t\": "
								     "[1]}, "
								     "\"mint_"
								     "at_"
								     "start\": "
								     "true}],"
								     " \"mint\""
								     ": "
								     "{\"max_"
								     "tokens\":"
								     " 1}}");
	assert_refused(m, "mint.max_tokens", "two minted at start, 1 allowed");

	m = parse("{\"name\": \"t\"}");
	manifest_mint(m, &lim);
	ck_assert_int_eq(lim.max_tokens, MANIFEST_MINT_MAX_TOKENS);
	ck_assert_int_eq(lim.per_minute, MANIFEST_MINT_PER_MINUTE);
	ck_assert_int_eq(lim.burst, MANIFEST_MINT_BURST);
	json_decref(m);
	m = parse("{\"name\": \"t\", \"mint\": {\"per_minute\": 7}}");
	manifest_mint(m, &lim);
	ck_assert_int_eq(lim.per_minute, 7);
	ck_assert_int_eq(lim.max_tokens, MANIFEST_MINT_MAX_TOKENS);
	json_decref(m);

	/* A change of the mint limits is a change of the identity plane. */
	json_t *a = parse("{\"name\": \"t\"}");
	json_t *b = parse("{\"name\": \"t\", \"mint\": {\"burst\": 2}}");
	json_t *planes = manifest_planes(a, b);
	ck_assert_uint_eq(json_array_size(planes), 1);
	ck_assert_str_eq(json_string_value(json_array_get(planes, 0)),
	    "identity");
	json_decref(planes);
	json_decref(a);
	json_decref(b);
}
END_TEST

START_TEST(test_return_fields)
{
	assert_valid(with("return",
			 "{\"protected\": [\"docs/**\"], "
			 "\"max_patch_kb\": 1}"),
	    "one glob, 1 KiB");
	assert_valid(with("return", "{\"max_patch_kb\": 1048576}"), "1 GiB");
	assert_refused(with("return", "{\"max_patch_kb\": 0}"),
	    "return.max_patch_kb", "0 KiB");
	assert_refused(with("return", "{\"max_patch_kb\": 1048577}"),
	    "return.max_patch_kb", "1 GiB + 1");
	assert_refused(with("return", "{\"protected\": \"docs/**\"}"),
	    "return.protected", "a glob, not a list");
	assert_refused(with("return", "{\"protected\": [\"\"]}"),
	    "return.protected", "an empty glob");
	assert_refused(with("return", "{\"protected\": [7]}"),
	    "return.protected", "a number");
	assert_refused(with("return", "{\"protected\": [\"a\\nb\"]}"),
	    "return.protected", "a newline");
	assert_valid(with("return",
			 "{\"exclude\": [\".cache\", \"node_modules\", "
			 "\"*.pyc\"]}"),
	    "three excludes");
	assert_refused(with("return", "{\"exclude\": \".cache\"}"),
	    "return.exclude", "an exclude, not a list");
	assert_refused(with("return", "{\"exclude\": [\"\"]}"),
	    "return.exclude", "an empty exclude");
	assert_refused(with("return", "{\"exclude\": [\"a\\tb\"]}"),
	    "return.exclude", "a tab");
	{
		char text[2048], *at = text;

		at += snprintf(at, 100, "{\"exclude\": [");
		for (int i = 0; i < 65; i++)
			at += snprintf(at, 100, "%s\"g%d\"", i ? ", " : "", i);
		snprintf(at, 100, "]}");
		assert_refused(with("return", text), "return.exclude",
		    "65 excludes");
		/* The hatch refuses a policy of more: the broker must too,
		 * or every job of the manifest fails at its workspace. */
		at = text + snprintf(text, 100, "{\"protected\": [");
		for (int i = 0; i < 65; i++)
			at += snprintf(at, 100, "%s\"g%d\"", i ? ", " : "", i);
		snprintf(at, 100, "]}");
		assert_refused(with("return", text), "return.protected",
		    "65 protected globs");
	}
	assert_refused(with("return", "{\"verdict\": \"clean\"}"),
	    "return.verdict", "an unknown field");
	assert_refused(with("return", "[]"), "return", "a list");
}
END_TEST

START_TEST(test_other_fields)
{
	assert_refused(with("command", "[]"), "command", "an empty command");
	assert_refused(with("command", "\"python3 x.py\""), "command",
	    "a string command");
	assert_refused(with("command", "[\"python3\", 1]"), "command",
	    "a number argument");
	assert_refused(with("description", "\"two\\nlines\""), "description",
	    "a two-line description");
}
END_TEST

/* --- planes ---------------------------------------------------------- */

/* planes is exactly the n names given, in order; takes planes. */
static void
assert_planes(json_t *planes, const char *const *want, size_t n,
    const char *what)
{
	char *text = json_dumps(planes, JSON_COMPACT);

	ck_assert_msg(json_array_size(planes) == n, "%s: planes %s", what,
	    text);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(strcmp(json_string_value(
					 json_array_get(planes, i)),
				  want[i]) == 0,
		    "%s: planes %s", what, text);
	free(text);
	json_decref(planes);
}

/* The planes touched by changing key (a path "limits.disk_mb" allowed)
 * of the example to value. */
static json_t *
planes_after(const char *key, json_t *value)
{
	json_t *prev = example(), *next = example(), *planes;
	const char *dot = strchr(key, '.');

	if (dot != NULL) {
		char top[32];
		snprintf(top, sizeof(top), "%.*s", (int)(dot - key), key);
		json_object_set_new(json_object_get(next, top), dot + 1, value);
	} else if (value == NULL)
		json_object_del(next, key);
	else
		json_object_set_new(next, key, value);
	planes = manifest_planes(prev, next);
	json_decref(prev);
	json_decref(next);
	return planes;
}

START_TEST(test_planes)
{
	static const char *const all[] = { "identity", "reachability",
		"return" };
	static const char *const identity[] = { "identity" };
	static const char *const reach[] = { "reachability" };
	static const char *const ret[] = { "return" };
	json_t *m = example();

	assert_planes(manifest_planes(NULL, m), all, 3, "a first version");
	assert_planes(manifest_planes(m, m), NULL, 0, "no change");
	json_decref(m);

	assert_planes(planes_after("env", parse("{\"LANG\": \"C\"}")), identity,
	    1, "env");
	assert_planes(planes_after("env", NULL), identity, 1, "env removed");
	assert_planes(planes_after("capabilities", parse("[]")), identity, 1,
	    "capabilities");
	assert_planes(planes_after("egress", parse("[]")), reach, 1, "egress");
	assert_planes(planes_after("return", parse("{}")), ret, 1, "return");
	assert_planes(planes_after("limits.disk_mb", json_integer(1)), ret, 1,
	    "limits.disk_mb");
	assert_planes(planes_after("limits.output_kb", json_integer(1)), ret, 1,
	    "limits.output_kb");
	assert_planes(planes_after("description", json_string("other words")),
	    NULL, 0, "description");
	assert_planes(planes_after("command", parse("[\"/bin/true\"]")), NULL,
	    0, "command");
	assert_planes(planes_after("limits.wall_seconds", json_integer(60)),
	    NULL, 0, "limits.wall_seconds");
}
END_TEST

START_TEST(test_planes_several)
{
	static const char *const two[] = { "identity", "reachability" };
	json_t *prev = example(), *next = example();

	json_object_set_new(json_object_get(next, "env"), "TZ",
	    json_string("UTC"));
	json_array_clear(json_object_get(next, "egress"));
	assert_planes(manifest_planes(prev, next), two, 2, "env and egress");
	json_decref(prev);
	json_decref(next);
}
END_TEST

/* --- canonical form -------------------------------------------------- */

START_TEST(test_canonical_key_order)
{
	json_t *a = parse("{\"name\": \"t\", \"env\": {\"A\": \"1\", \"B\": "
			  "\"2\"}, \"limits\": {\"pids\": 1, \"disk_mb\": 2}}");
	json_t *b = parse("{\"limits\": {\"disk_mb\": 2, \"pids\": 1}, "
			  "\"env\": {\"B\": \"2\", \"A\": \"1\"}, \"name\": "
			  "\"t\"}");
	json_t *c = parse("{\"name\": \"t\", \"env\": {\"A\": \"1\", \"B\": "
			  "\"3\"}, \"limits\": {\"pids\": 1, \"disk_mb\": 2}}");
	char sa[65], sb[65], sc[65];
	char *ta = manifest_canonical(a, sa), *tb = manifest_canonical(b, sb);
	char *tc = manifest_canonical(c, sc);

	ck_assert_ptr_nonnull(ta);
	ck_assert_ptr_nonnull(tb);
	ck_assert_ptr_nonnull(tc);
	ck_assert_str_eq(ta, tb);
	ck_assert_str_eq(sa, sb);
	ck_assert_str_eq(ta,
	    "{\"env\":{\"A\":\"1\",\"B\":\"2\"},\"limits\":{\"disk_mb\":2,"
	    "\"pids\":1},\"name\":\"t\"}");
	/* One value changed: another digest. */
	ck_assert_str_ne(sa, sc);
	free(ta);
	free(tb);
	free(tc);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}
END_TEST

START_TEST(test_canonical_digest)
{
	json_t *m = example();
	unsigned char md[32];
	unsigned int mdlen = sizeof(md);
	char sha[65], want[65];
	char *text;

	memset(sha, 'x', sizeof(sha));
	text = manifest_canonical(m, sha);
	ck_assert_ptr_nonnull(text);
	/* The sha256 of exactly the canonical text, in lowercase hex. */
	ck_assert_int_eq(EVP_Digest(text, strlen(text), md, &mdlen,
			     EVP_sha256(), NULL),
	    1);
	for (size_t i = 0; i < 32; i++)
		snprintf(want + 2 * i, 3, "%02x", md[i]);
	ck_assert_uint_eq(strlen(sha), 64);
	ck_assert_str_eq(sha, want);
	free(text);
	json_decref(m);
}
END_TEST

/* --- egress defaults ------------------------------------------------- */

START_TEST(test_egress_defaults)
{
	json_t *m = with("egress",
	    "[{\"host\": \"a.example.com\", \"methods\": [\"GET\"],"
	    "  \"reason\": \"r\"},"
	    " {\"host\": \"b.example.com\", \"port\": 8080,"
	    "  \"methods\": [\"GET\"], \"reason\": \"r\"},"
	    " {\"host\": \"c.example.com\", \"tls\": \"passthrough\","
	    "  \"methods\": [\"GET\"], \"reason\": \"r\"},"
	    " {\"host\": \"d.example.com\", \"paths\": [\"/v1/\"],"
	    "  \"methods\": [\"GET\"], \"reason\": \"r\"}]");
	json_t *before = json_deep_copy(m);
	json_t *e = manifest_egress(m), *r;

	ck_assert_uint_eq(json_array_size(e), 4);
	/* Port 443 by default, TLS terminated, every path. */
	r = json_array_get(e, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "port")), 443);
	ck_assert_str_eq(json_string_value(json_object_get(r, "tls")),
	    "terminate");
	ck_assert_uint_eq(json_array_size(json_object_get(r, "paths")), 1);
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(r, "paths"), 0)),
	    "/");
	ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "r");
	/* Another port: plain HTTP, every path. */
	r = json_array_get(e, 1);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "port")), 8080);
	ck_assert_str_eq(json_string_value(json_object_get(r, "tls")), "none");
	ck_assert_uint_eq(json_array_size(json_object_get(r, "paths")), 1);
	/* Passthrough sees no paths: none are made up for it. */
	r = json_array_get(e, 2);
	ck_assert_str_eq(json_string_value(json_object_get(r, "tls")),
	    "passthrough");
	ck_assert_ptr_null(json_object_get(r, "paths"));
	/* Paths given are kept as they are. */
	r = json_array_get(e, 3);
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(r, "paths"), 0)),
	    "/v1/");
	ck_assert_uint_eq(json_array_size(json_object_get(r, "paths")), 1);
	/* The manifest itself is left alone. */
	ck_assert(json_equal(m, before));
	json_decref(e);
	json_decref(before);
	json_decref(m);

	/* No egress at all: an empty list, not NULL. */
	m = parse("{\"name\": \"t\"}");
	e = manifest_egress(m);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(json_array_size(e), 0);
	json_decref(e);
	json_decref(m);
}
END_TEST

START_TEST(test_capability_lookup)
{
	json_t *m = example();

	ck_assert_ptr_eq(manifest_capability(m, "invoices.read"),
	    json_array_get(json_object_get(m, "capabilities"), 0));
	ck_assert_ptr_null(manifest_capability(m, "invoices"));
	ck_assert_ptr_null(manifest_capability(m, "invoices.read.all"));
	json_decref(m);
}
END_TEST

static Suite *
manifest_suite(void)
{
	Suite *s = suite_create("manifest");
	TCase *tc;

	tc = tcase_create("whole");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_design_example_valid);
	tcase_add_test(tc, test_name);
	tcase_add_test(tc, test_name_ok);
	tcase_add_test(tc, test_unknown_top_level_field);
	tcase_add_test(tc, test_unknown_field_long_utf8_key);
	tcase_add_test(tc, test_every_problem_at_once);
	tcase_add_test(tc, test_other_fields);
	suite_add_tcase(s, tc);

	tc = tcase_create("env");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_env_secret_names);
	tcase_add_test(tc, test_env_launcher_names);
	tcase_add_test(tc, test_env_bad_names_and_types);
	tcase_add_test(tc, test_env_secret_values);
	tcase_add_test(tc, test_env_value_size);
	tcase_add_test(tc, test_env_count);
	suite_add_tcase(s, tc);

	tc = tcase_create("egress");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_egress_count);
	tcase_add_test(tc, test_egress_reason);
	tcase_add_test(tc, test_egress_wildcards);
	tcase_add_test(tc, test_egress_host_names);
	tcase_add_test(tc, test_egress_registries);
	tcase_add_test(tc, test_egress_duplicates);
	tcase_add_test(tc, test_egress_ports);
	tcase_add_test(tc, test_egress_methods);
	tcase_add_test(tc, test_egress_paths);
	tcase_add_test(tc, test_egress_templated_paths);
	tcase_add_test(tc, test_egress_tls);
	tcase_add_test(tc, test_egress_cidrs);
	tcase_add_test(tc, test_egress_other_fields);
	tcase_add_test(tc, test_egress_defaults);
	suite_add_tcase(s, tc);

	tc = tcase_create("capabilities");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_cap_ttl);
	tcase_add_test(tc, test_cap_params);
	tcase_add_test(tc, test_cap_wildcards);
	tcase_add_test(tc, test_cap_names);
	tcase_add_test(tc, test_cap_audience_reason);
	tcase_add_test(tc, test_cap_mint_at_start);
	tcase_add_test(tc, test_capability_lookup);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits_return");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_limits_bounds);
	tcase_add_test(tc, test_limits_defaults);
	tcase_add_test(tc, test_limits_cpus);
	tcase_add_test(tc, test_mint_bounds_and_defaults);
	tcase_add_test(tc, test_return_fields);
	suite_add_tcase(s, tc);

	tc = tcase_create("versions");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_planes);
	tcase_add_test(tc, test_planes_several);
	tcase_add_test(tc, test_canonical_key_order);
	tcase_add_test(tc, test_canonical_digest);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(manifest_suite());
}
