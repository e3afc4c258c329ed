/*
 * The decision log as an auditor reads it: one JSON line per decision
 * with exactly docs/egress.md's fields in their order, and never a token, a
 * query string, or a second line, whatever the job put in its request.
 */
#include "decision.h"
#include "testutil.h"

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fields[] = { "ts", "job", "conn", "req", "kind",
	"method", "host", "port", "path", "sni", "addr", "rule", "decision",
	"reason", "detail", "status", "bytes_up", "bytes_down", "ms" };

static json_t *
parse_line(const char *line)
{
	size_t n = strlen(line);
	json_t *v;

	/* One line: a newline at the end and nowhere else. */
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(line[n - 1], '\n');
	ck_assert_ptr_null(memchr(line, '\n', n - 1));
	v = json_loads(line, 0, NULL);
	ck_assert_ptr_nonnull(v);
	return v;
}

START_TEST(fields_in_order)
{
	struct decision d = { .job = "job_abc",
		.conn = 7,
		.req = 2,
		.kind = "mitm",
		.method = "GET",
		.host = "api.github.com",
		.port = 443,
		.path = "/repos/acme/issues?access_token=secret#frag",
		.sni = "api.github.com",
		.addr = "140.82.112.3:443",
		.rule = 0,
		.allow = true,
		.status = 200,
		.bytes_up = 120,
		.bytes_down = 4096,
		.ms = 12.5 };
	char *line = decision_format(&d);
	json_t *v = parse_line(line);
	const char *key;
	json_t *val;
	size_t i = 0;

	json_object_foreach(v, key, val)
	{
		ck_assert_msg(i < sizeof(fields) / sizeof(fields[0]),
		    "extra field %s", key);
		ck_assert_str_eq(key, fields[i]);
		i++;
	}
	ck_assert_uint_eq(i, sizeof(fields) / sizeof(fields[0]));
	/* The path without its query or fragment. */
	ck_assert_str_eq(json_string_value(json_object_get(v, "path")),
	    "/repos/acme/issues");
	ck_assert_ptr_null(strstr(line, "secret"));
	ck_assert_str_eq(json_string_value(json_object_get(v, "decision")),
	    "allow");
	ck_assert(json_is_null(json_object_get(v, "reason")));
	ck_assert_int_eq(json_integer_value(json_object_get(v, "rule")), 0);
	json_decref(v);
	free(line);
}
END_TEST

/* An injected credential: its secret's name, the version released and
 * the reflections redacted, after the common fields; never the value. */
START_TEST(an_injection_names_its_secret_and_version)
{
	struct decision d = { .job = "job_abc",
		.kind = "mitm",
		.method = "GET",
		.host = "api.github.com",
		.port = 443,
		.path = "/repos/acme/widgets/",
		.rule = 0,
		.allow = true,
		.status = 200,
		.secret = "github-ro",
		.secret_version = 3,
		.reflected = 2 };
	char *line = decision_format(&d);
	json_t *v = parse_line(line);

	ck_assert_str_eq(json_string_value(json_object_get(v, "secret")),
	    "github-ro");
	ck_assert_int_eq(json_integer_value(
			     json_object_get(v, "secret_version")),
	    3);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "reflected")),
	    2);
	json_decref(v);
	free(line);
	/* Without one, no such field. */
	d.secret = NULL;
	line = decision_format(&d);
	ck_assert_ptr_null(strstr(line, "secret"));
	free(line);
}
END_TEST

/* A line that stands for a burst of denials has one more field, last:
 * how many it counts. */
START_TEST(a_burst_line_has_its_count)
{
	struct decision d = { .job = "job_abc",
		.conn = 9,
		.kind = "connect",
		.addr = "",
		.rule = -1,
		.reason = "too_many_connections",
		.detail = "job_share",
		.count = 1469 };
	char *line = decision_format(&d);
	json_t *v = parse_line(line);

	ck_assert_int_eq(json_integer_value(json_object_get(v, "count")), 1469);
	ck_assert_uint_eq(json_object_size(v),
	    sizeof(fields) / sizeof(fields[0]) + 1);
	ck_assert_ptr_nonnull(strstr(line, ",\"count\":1469}\n"));
	json_decref(v);
	free(line);
}
END_TEST

START_TEST(denials_and_nulls)
{
	struct decision d = { .job = "job_abc",
		.kind = "connect",
		.method = "CONNECT",
		.host = "evil.com",
		.port = 443,
		.rule = -1,
		.allow = false,
		.reason = "no_rule",
		.status = 403 };
	char *line = decision_format(&d);
	json_t *v = parse_line(line);

	ck_assert_str_eq(json_string_value(json_object_get(v, "decision")),
	    "deny");
	ck_assert_str_eq(json_string_value(json_object_get(v, "reason")),
	    "no_rule");
	ck_assert(json_is_null(json_object_get(v, "rule")));
	ck_assert(json_is_null(json_object_get(v, "path")));
	ck_assert(json_is_null(json_object_get(v, "sni")));
	json_decref(v);
	free(line);
}
END_TEST

START_TEST(never_a_token_nor_a_second_line)
{
	static const char tok[] = "crd_Kd8s2LqPz0aB7wXy4mNcV1tR9eFgH3jU33UlzJ";
	static const char key[] = "crk_0123456789abcdefghijklmnopqrstuvwxyzAB";
	char path[256], host[128];
	struct decision d = { .job = "job_abc",
		.kind = "http",
		.method = "GET\r\nX-Injected: 1",
		.port = 80,
		.rule = -1,
		.reason = "path",
		.status = 403 };

	snprintf(path, sizeof(path), "/v1/%s/x\n{\"decision\":\"allow\"}", tok);
	snprintf(host, sizeof(host), "%s.example.com", key);
	d.path = path;
	d.host = host;
	d.sni = "\xff\xfe bad utf-8";
	char *line = decision_format(&d);
	json_t *v = parse_line(line);

	ck_assert_ptr_null(strstr(line, tok + 4));
	ck_assert_ptr_null(strstr(line, key + 4));
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(v, "path")), "crd_****"));
	ck_assert_str_eq(json_string_value(json_object_get(v, "decision")),
	    "deny");
	/* Escaped, not cut: the line reads back as what was sent. */
	ck_assert_str_eq(json_string_value(json_object_get(v, "method")),
	    "GET\r\nX-Injected: 1");
	ck_assert_str_eq(json_string_value(json_object_get(v, "sni")),
	    "?? bad utf-8");
	json_decref(v);
	free(line);

	/* The redaction alone: shapes of a token, not words that start so. */
	char s[] = "a crd_short crd_0123456789 b crk_abcdefgh";
	ck_assert_uint_eq(decision_redact(s, strlen(s)), 2);
	ck_assert_str_eq(s, "a crd_short crd_********** b crk_********");
}
END_TEST

/* The numbers, written without printf, read as printf writes them: the
 * extremes of each field's type, and ms to three decimals. */
START_TEST(numbers_as_printf_writes_them)
{
	static const double ms[] = { 0, 0.0004, 0.0006, 0.001, 1.2345678, 12.5,
		999.9996, 1000, 123456.789, 86400000.25 };
	struct decision d = { .job = "job_abc",
		.conn = UINT64_MAX,
		.req = 0,
		.kind = "http",
		.port = 65535,
		.rule = -1,
		.allow = true,
		.status = -1,
		.bytes_up = UINT64_MAX,
		.bytes_down = 10,
		.secret = "k",
		.secret_version = INT64_MIN,
		.reflected = 1234567890123ull,
		.cookies_dropped = 0,
		.count = 18446744073709551ull };
	char want[256];

	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		d.ms = ms[i];
		if (i == 1) {
			/* From here within jansson's integers. */
			d.conn = d.bytes_up = INT64_MAX;
			d.rule = 7;
			d.status = 200;
			d.secret_version = INT64_MAX;
		}
		char *line = decision_format(&d);
		snprintf(want, sizeof(want),
		    "\"conn\":%llu,\"req\":0,\"kind\":\"http\",",
		    (unsigned long long)d.conn);
		ck_assert_ptr_nonnull(strstr(line, want));
		snprintf(want, sizeof(want), "\"port\":65535,\"path\":null,");
		ck_assert_ptr_nonnull(strstr(line, want));
		if (d.rule < 0)
			snprintf(want, sizeof(want), "\"rule\":null,");
		else
			snprintf(want, sizeof(want), "\"rule\":%d,", d.rule);
		ck_assert_ptr_nonnull(strstr(line, want));
		snprintf(want, sizeof(want),
		    ",\"status\":%d,\"bytes_up\":%llu,\"bytes_down\":10,"
		    "\"ms\":%.3f,\"secret\":\"k\",\"secret_version\":%lld,"
		    "\"reflected\":1234567890123,\"cookies_dropped\":0,"
		    "\"count\":18446744073709551}\n",
		    d.status, (unsigned long long)d.bytes_up, d.ms,
		    (long long)d.secret_version);
		ck_assert_msg(strstr(line, want) != NULL, "%s\nwants %s", line,
		    want);
		if (i > 0)
			json_decref(parse_line(line));
		free(line);
	}
}
END_TEST

static Suite *
decision_suite(void)
{
	Suite *s = suite_create("decision");
	TCase *tc = tcase_create("decision");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, fields_in_order);
	tcase_add_test(tc, denials_and_nulls);
	tcase_add_test(tc, a_burst_line_has_its_count);
	tcase_add_test(tc, an_injection_names_its_secret_and_version);
	tcase_add_test(tc, never_a_token_nor_a_second_line);
	tcase_add_test(tc, numbers_as_printf_writes_them);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(decision_suite());
}
