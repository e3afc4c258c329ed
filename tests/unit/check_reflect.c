/*
 * Every value released to a job and the chain that scans an answer for
 * all of them (proxy/reflect.c), and the method override readers
 * (proxy/override.c): a set keeps each distinct value once, refuses past
 * its cap unless a value is dead at its issuer; a chain redacts each of
 * its values, the same however the answer is cut, also one added in the
 * answer's middle; a form, multipart or JSON body's _method (and PHP's
 * spellings of it) is found, and nothing else is; a manifest that
 * injects and has a rule the proxy cannot read (passthrough, an upgrade)
 * is warned about.
 */
#include "manifest.h"
#include "override.h"
#include "reflect.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char v1[] = "sk_live_first_0123456789abcdef";
static const char v2[] = "sk_live_second_zyxwvutsrqponm";

START_TEST(a_set_keeps_each_value_once_up_to_its_cap)
{
	struct reflect_set s = { 0 };
	char v[32];

	ck_assert_int_eq(reflect_set_put(&s, "a", 1, v1, strlen(v1), 0, 0), 1);
	ck_assert_int_eq(reflect_set_put(&s, "a", 1, v1, strlen(v1), 0, 0), 0);
	ck_assert_int_eq(reflect_set_put(&s, "a", 2, v2, strlen(v2), 0, 0), 1);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(reflect_set_put(&s, "", 1, v1, strlen(v1), 0, 0),
	    -EINVAL);
	ck_assert_int_eq(reflect_set_put(&s, "a", 1, v1, 0, 0, 0), -EINVAL);
	/* One dead at its issuer at 100, the rest alive. */
	for (size_t i = 2; i < REFLECT_VALUES_MAX; i++) {
		snprintf(v, sizeof(v), "value-%zu", i);
		ck_assert_int_eq(reflect_set_put(&s, "b", (int64_t)i, v,
				     strlen(v), 0, i == 5 ? 100 : 0),
		    1);
	}
	ck_assert_int_eq(reflect_set_put(&s, "c", 1, "late", 4, 50, 0),
	    -ENOSPC);
	ck_assert_int_eq(reflect_set_put(&s, "c", 1, "late", 4, 101, 0), 1);
	ck_assert_int_eq(reflect_set_put(&s, "c", 2, "later", 5, 101, 0),
	    -ENOSPC);
	ck_assert_uint_eq(s.n, REFLECT_VALUES_MAX);
	reflect_set_clear(&s);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

/* Whether n bytes at p are all zero. */
static bool
zeroed(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != 0)
			return false;
	return true;
}

/* A connection's next answer (reflect_scan_reset) finds nothing of the
 * last one: the bytes a stage held when it ended (a value's first bytes,
 * unflushed) are wiped with it, a value added midway is gone, the counts
 * start over; the arrays are kept, holding no stage. */
START_TEST(a_reset_scan_carries_nothing_of_the_last_answer)
{
	static const char va[] = "3f9a1c07b2e4d8650a7f3c1e9b2d4a6081c5e7f3";
	static const char vb[] = "Zq81mmXk0p4LrT9wYc2VbN6sJd7hGf3a";
	struct reflect_set s = { 0 };
	struct reflect_scan r;
	struct buf out = BUF_INIT(1 << 16);
	const char *name;
	size_t f, half = 7; /* one byte short of a match */
	char text[128];

	ck_assert_int_eq(reflect_set_put(&s, "a", 1, va, strlen(va), 0, 0), 1);
	ck_assert_int_eq(reflect_scan_init(&r, &s), 0);
	ck_assert_int_eq(reflect_scan_add(&r, "b", vb, strlen(vb)), 0);
	ck_assert_uint_eq(reflect_scan_stages(&r), 2);
	snprintf(text, sizeof(text), "a %s b %.*s", vb, (int)half, va);
	ck_assert_int_eq(reflect_scan_feed(&r, text, strlen(text), &out, &f),
	    0);
	ck_assert_uint_eq(f, 1); /* vb, redacted; va's 7 bytes held */
	ck_assert_ptr_null(strstr(buf_str(&out), vb));
	ck_assert_ptr_null(strstr(buf_str(&out), "3f9a"));
	struct inject_scanner *stages = r.s;
	size_t used = reflect_scan_stages(&r);
	reflect_scan_end(&r);
	ck_assert_uint_eq(reflect_scan_stages(&r), 0);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_uint_eq(r.unread, 0);
	ck_assert_ptr_eq(r.s, stages); /* kept */
	ck_assert(zeroed(r.s, used * sizeof(*r.s)));

	for (int round = 0; round < 3; round++) {
		buf_reset(&out);
		ck_assert_int_eq(reflect_scan_reset(&r, &s), 0);
		ck_assert_ptr_eq(r.s, stages); /* no malloc */
		ck_assert_uint_eq(reflect_scan_stages(&r), 1);
		ck_assert_uint_eq(r.n, 1);
		/* The byte after va's first 7 is text: they were not
		 * carried (nor given out here). */
		snprintf(text, sizeof(text), "%.1s then text", va + half);
		ck_assert_int_eq(reflect_scan_feed(&r, text, strlen(text), &out,
				     &f),
		    0);
		ck_assert_int_eq(reflect_scan_flush(&r, &out), 0);
		ck_assert_str_eq(buf_str(&out), text);
		ck_assert_uint_eq(reflect_scan_news(&r, 0, &name), 0);
		ck_assert_str_eq(name, "a");
		/* va whole is found, and told once. */
		buf_reset(&out);
		ck_assert_int_eq(reflect_scan_reset(&r, &s), 0);
		ck_assert_int_eq(reflect_scan_feed(&r, va, strlen(va), &out,
				     NULL),
		    0);
		ck_assert_int_eq(reflect_scan_flush(&r, &out), 0);
		ck_assert_ptr_null(strstr(buf_str(&out), "3f9a"));
		ck_assert_uint_eq(reflect_scan_news(&r, 0, &name), 1);
		/* Ended with va's 7 bytes held again: by reflect_scan_end,
		 * then by the next reset alone. */
		ck_assert_int_eq(reflect_scan_reset(&r, &s), 0);
		ck_assert_int_eq(reflect_scan_feed(&r, va, half, &out, NULL),
		    0);
		if (round == 0) {
			reflect_scan_end(&r);
			ck_assert(zeroed(r.s, sizeof(*r.s)));
		}
	}
	reflect_scan_free(&r);
	ck_assert_ptr_null(r.s);
	reflect_set_clear(&s);
	buf_free(&out);
}
END_TEST

/* text through a chain of v1 and v2, cut every `step` bytes. */
static char *
scanned(const char *text, size_t step, size_t *found)
{
	struct reflect_set s = { 0 };
	struct reflect_scan r;
	struct buf out = BUF_INIT(1 << 20);
	size_t n = strlen(text), f;

	ck_assert_int_eq(reflect_set_put(&s, "a", 1, v1, strlen(v1), 0, 0), 1);
	ck_assert_int_eq(reflect_set_put(&s, "b", 1, v2, strlen(v2), 0, 0), 1);
	ck_assert_int_eq(reflect_scan_init(&r, &s), 0);
	reflect_set_clear(&s);
	*found = 0;
	for (size_t at = 0; at < n; at += step) {
		size_t k = n - at < step ? n - at : step;
		ck_assert_int_eq(reflect_scan_feed(&r, text + at, k, &out, &f),
		    0);
		*found += f;
	}
	ck_assert_int_eq(reflect_scan_flush(&r, &out), 0);
	const char *name;
	size_t total = reflect_scan_news(&r, 0, &name);
	ck_assert_str_eq(name, "a");
	total += reflect_scan_news(&r, 1, &name);
	ck_assert_str_eq(name, "b");
	ck_assert_uint_ge(total, *found);
	*found = total;
	reflect_scan_free(&r);
	char *copy = strdup(buf_str(&out));
	buf_free(&out);
	return copy;
}

START_TEST(a_chain_redacts_every_value_however_cut)
{
	char text[512];

	snprintf(text, sizeof(text),
	    "log: X-Key: %s\r\nlater: %s and %%73k_live_first_0123456789abcdef"
	    " end",
	    v2, v1);
	for (size_t step = 1; step <= strlen(text); step += 7) {
		size_t found;
		char *out = scanned(text, step, &found);
		ck_assert_uint_eq(strlen(out), strlen(text));
		ck_assert_ptr_null(strstr(out, "first_0123"));
		ck_assert_ptr_null(strstr(out, "second_zyx"));
		ck_assert_ptr_nonnull(strstr(out, "log: X-Key: "));
		ck_assert_ptr_nonnull(strstr(out, " end"));
		/* v2's occurrence starts with v1's first 8 bytes
		 * ("sk_live_"), a run of v1 too: found by both. */
		ck_assert_uint_eq(found, 4);
		free(out);
	}
}
END_TEST

START_TEST(a_value_added_midway_is_redacted_in_the_rest)
{
	struct reflect_set s = { 0 };
	struct reflect_scan r;
	struct buf out = BUF_INIT(1 << 20);

	ck_assert_int_eq(reflect_scan_init(&r, &s), 0);
	ck_assert_int_eq(reflect_scan_feed(&r, "before ", 7, &out, NULL), 0);
	ck_assert_str_eq(buf_str(&out), "before ");
	ck_assert(!reflect_scan_has(&r, v1, strlen(v1)));
	ck_assert_int_eq(reflect_scan_add(&r, "a", v1, strlen(v1)), 0);
	ck_assert(reflect_scan_has(&r, v1, strlen(v1)));
	ck_assert_int_eq(reflect_scan_feed(&r, v1, 10, &out, NULL), 0);
	ck_assert_int_eq(reflect_scan_feed(&r, v1 + 10, strlen(v1) - 10, &out,
			     NULL),
	    0);
	ck_assert_int_eq(reflect_scan_flush(&r, &out), 0);
	ck_assert_ptr_null(strstr(buf_str(&out), "first"));
	ck_assert_uint_eq(out.len, 7 + strlen(v1));
	reflect_scan_free(&r);
	buf_free(&out);
}
END_TEST

/* A value released for the scan only: its match ends the scan (-EPERM,
 * nothing of that feed out), not redacted in place; the same value put
 * for use after is the job's own, redacted as before (guardfix). */
START_TEST(a_scan_only_value_trips_and_an_own_one_is_redacted)
{
	struct reflect_set s = { 0 };
	struct reflect_scan r;
	struct buf out = BUF_INIT(1 << 20);
	const char *secret;

	ck_assert_int_eq(reflect_set_put_scan(&s, "a", 1, v1, strlen(v1), 0, 0),
	    1);
	ck_assert(s.v[0].scan_only);
	ck_assert_int_eq(reflect_scan_init(&r, &s), 0);
	ck_assert(reflect_scan_trips(&r, 0));
	ck_assert_int_eq(reflect_scan_feed(&r, "ok ", 3, &out, NULL), 0);
	ck_assert_int_eq(reflect_scan_feed(&r, v1, strlen(v1), &out, NULL),
	    -EPERM);
	ck_assert_uint_ge(reflect_scan_news(&r, 0, &secret), 1);
	ck_assert_str_eq(secret, "a");
	ck_assert_ptr_null(strstr(buf_str(&out), "first"));
	ck_assert_uint_le(out.len, 3);
	reflect_scan_free(&r);
	buf_reset(&out);
	/* Put again for use: the job's own now. */
	ck_assert_int_eq(reflect_set_put(&s, "a", 1, v1, strlen(v1), 0, 0), 0);
	ck_assert(!s.v[0].scan_only);
	ck_assert_int_eq(reflect_set_put_scan(&s, "a", 1, v1, strlen(v1), 0, 0),
	    0);
	ck_assert(!s.v[0].scan_only);
	ck_assert_int_eq(reflect_scan_init(&r, &s), 0);
	ck_assert(!reflect_scan_trips(&r, 0));
	ck_assert_int_eq(reflect_scan_feed(&r, v1, strlen(v1), &out, NULL), 0);
	ck_assert_int_eq(reflect_scan_flush(&r, &out), 0);
	ck_assert_uint_eq(out.len, strlen(v1));
	ck_assert_ptr_null(strstr(buf_str(&out), "first"));
	ck_assert_uint_eq(reflect_set_reflected(&s, v1, strlen(v1)), 1);
	ck_assert_uint_eq(reflect_set_reflected(&s, v1, strlen(v1)), 2);
	ck_assert_uint_eq(reflect_set_reflected(&s, "nope", 4), 0);
	reflect_scan_free(&r);
	reflect_set_clear(&s);
	buf_free(&out);
}
END_TEST

/* Other jobs' issuer credentials borrowed for the scan (redteam3 #4):
 * counted apart from the job's own values, both caps held at once; a
 * dead borrowed value gives its place to a borrowed one only; a
 * borrowed value's match trips; the last value of a set that borrowed
 * every kept credential is still scanned for. */
START_TEST(borrowed_values_do_not_take_the_jobs_own_places)
{
	struct reflect_set s = { 0 };
	struct reflect_scan r;
	struct buf out = BUF_INIT(1 << 20);
	char v[40];

	for (size_t i = 0; i < REFLECT_VALUES_MAX; i++) {
		snprintf(v, sizeof(v), "own-value-%zu", i);
		ck_assert_int_eq(reflect_set_put(&s, "a", 1, v, strlen(v), 0,
				     0),
		    1);
	}
	for (size_t i = 0; i < REFLECT_BORROWED_MAX; i++) {
		snprintf(v, sizeof(v), "oat_borrowed_%zu", i);
		ck_assert_msg(reflect_set_put_borrowed(&s, "iss", 0, v,
				  strlen(v), 0, i == 7 ? 100 : 3600) == 1,
		    "borrowed value %zu not kept", i);
	}
	ck_assert_uint_eq(s.n, REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX);
	ck_assert(s.v[REFLECT_VALUES_MAX].borrowed);
	ck_assert(s.v[REFLECT_VALUES_MAX].scan_only);
	ck_assert(!s.v[0].borrowed);
	/* Both full; at 101 the dead borrowed one is a borrowed place. */
	ck_assert_int_eq(reflect_set_put(&s, "a", 1, "own-late", 8, 101, 0),
	    -ENOSPC);
	ck_assert_int_eq(reflect_set_put_borrowed(&s, "iss", 0, "oat_late", 8,
			     50, 3600),
	    -ENOSPC);
	ck_assert_int_eq(reflect_set_put_borrowed(&s, "iss", 0, "oat_late", 8,
			     101, 3600),
	    1);
	ck_assert_uint_eq(s.n, REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX);
	/* Held already: a borrowed put changes nothing. */
	ck_assert_int_eq(reflect_set_put_borrowed(&s, "a", 1, "own-value-0", 11,
			     0, 0),
	    0);
	ck_assert(!s.v[0].borrowed && !s.v[0].scan_only);
	snprintf(v, sizeof(v), "oat_borrowed_%d", REFLECT_BORROWED_MAX - 1);
	ck_assert_int_eq(reflect_scan_init(&r, &s), 0);
	ck_assert_uint_eq(r.n, REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX);
	ck_assert_int_eq(reflect_scan_feed(&r, "ok ", 3, &out, NULL), 0);
	ck_assert_int_eq(reflect_scan_feed(&r, v, strlen(v), &out, NULL),
	    -EPERM);
	ck_assert_ptr_null(strstr(buf_str(&out), "borrowed"));
	reflect_scan_free(&r);
	reflect_set_clear(&s);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_ptr_null(s.v);
	buf_free(&out);
}
END_TEST

START_TEST(a_form_override_is_found_in_its_spellings)
{
	static const char *const yes[] = { "_method=DELETE", "a=1&_method=PUT",
		"a=1;_method=PUT", "_METHOD=x", "%5fmethod=x", "%5Fmethod=x",
		".method=x", "[method=x", "+_method=x", "%20%20.method=x",
		"a&_method", "_method" };
	static const char *const no[] = { "", "method=x", "x_method=1",
		"_methods=1", "a=_method", "%5Fmethodical=1", "_me%74hod2=1",
		"__method=1", "a=1&b=2" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(override_in_form(yes[i], strlen(yes[i])), "%s",
		    yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ck_assert_msg(!override_in_form(no[i], strlen(no[i])), "%s",
		    no[i]);
}
END_TEST

START_TEST(a_multipart_or_json_override_is_found)
{
	static const char *const mp_yes[] = {
		"--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n",
		"--b\r\nContent-Disposition: form-data;name=_METHOD\r\n",
		"--b\r\nContent-Disposition: form-data; name = \".method\"\r\n",
	};
	static const char *const mp_no[] = {
		"--b\r\nContent-Disposition: form-data; name=\"a\"; "
		"filename=\"_method\"\r\n\r\n_method\r\n",
		"--b\r\nContent-Disposition: form-data; name=\"_methods\"\r\n",
	};
	static const char *const js_yes[] = { "{\"_method\":\"DELETE\"}",
		"{\"a\": {\"b\": 1}, \"_method\" :\n \"PUT\"}",
		"{\"\\u005fmethod\":1}", "{\"_Method\":1}" };
	static const char *const js_no[] = { "{\"a\":\"_method\"}",
		"[\"_method\"]", "{\"x\":\"\\\"_method\\\": 1\"}",
		"{\"_methodx\":1}" };

	for (size_t i = 0; i < sizeof(mp_yes) / sizeof(mp_yes[0]); i++)
		ck_assert_msg(override_in_multipart(mp_yes[i],
				  strlen(mp_yes[i])),
		    "%s", mp_yes[i]);
	for (size_t i = 0; i < sizeof(mp_no) / sizeof(mp_no[0]); i++)
		ck_assert_msg(!override_in_multipart(mp_no[i],
				  strlen(mp_no[i])),
		    "%s", mp_no[i]);
	for (size_t i = 0; i < sizeof(js_yes) / sizeof(js_yes[0]); i++)
		ck_assert_msg(override_in_json(js_yes[i], strlen(js_yes[i])),
		    "%s", js_yes[i]);
	for (size_t i = 0; i < sizeof(js_no) / sizeof(js_no[0]); i++)
		ck_assert_msg(!override_in_json(js_no[i], strlen(js_no[i])),
		    "%s", js_no[i]);
}
END_TEST

START_TEST(a_body_kind_follows_its_type)
{
	static const struct {
		const char *ct;
		enum override_kind kind;
	} cases[] = {
		{ "application/x-www-form-urlencoded", OVERRIDE_FORM },
		{ "Application/X-WWW-Form-Urlencoded; charset=utf-8",
		    OVERRIDE_FORM },
		{ "", OVERRIDE_FORM },
		{ "multipart/form-data; boundary=x", OVERRIDE_MULTIPART },
		{ "application/json", OVERRIDE_JSON },
		{ "application/vnd.api+json", OVERRIDE_JSON },
		{ "text/plain", OVERRIDE_NONE },
		{ "application/octet-stream; x=json", OVERRIDE_NONE },
	};

	ck_assert_int_eq(override_kind_of(NULL, 0), OVERRIDE_FORM);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(override_kind_of(cases[i].ct,
				  strlen(cases[i].ct)) == cases[i].kind,
		    "%s", cases[i].ct);
}
END_TEST

/* The warnings on a manifest whose egress[0] injects and whose egress[1]
 * is rule1 (JSON object text). */
static json_t *
warnings_with(const char *rule1)
{
	char text[2048];
	json_error_t err;
	int n = snprintf(text, sizeof(text),
	    "{\"name\": \"t\", \"command\": [\"/bin/true\"], "
	    "\"capabilities\": [{\"name\": \"x.read\", \"audience\": "
	    "\"api\", \"params\": {\"t\": [\"1\"]}, \"reason\": \"read\"}], "
	    "\"egress\": [{\"host\": "
	    "\"api.test\", \"methods\": [\"GET\"], \"paths\": [\"/\"], "
	    "\"audience\": \"api\", \"reason\": \"the api\", "
	    "\"inject\": {\"secret\": \"k\", \"header\": \"X-Api-Key\", "
	    "\"format\": \"{secret}\", \"capability\": \"x.read\"}}, %s]}",
	    rule1);
	ck_assert(n > 0 && (size_t)n < sizeof(text));
	json_t *m = json_loads(text, 0, &err);
	ck_assert_msg(m != NULL, "%s", err.text);
	json_t *problems = json_array(), *warnings = json_array();
	bool ok = manifest_validate(m, NULL, problems, warnings);
	char *p = json_dumps(problems, 0);
	ck_assert_msg(ok, "%s", p);
	free(p);
	json_decref(problems);
	json_decref(m);
	return warnings;
}

START_TEST(a_rule_the_proxy_cannot_read_is_warned_about)
{
	json_t *w = warnings_with(
	    "{\"host\": \"cdn.api.test\", \"port\": 443, \"tls\": "
	    "\"passthrough\", \"methods\": [\"GET\"], \"reason\": \"files\"}");
	char *text = json_dumps(w, 0);
	ck_assert_msg(strstr(text, "egress[1]") != NULL &&
		strstr(text, "passthrough") != NULL,
	    "%s", text);
	free(text);
	json_decref(w);
	w = warnings_with("{\"host\": \"ws.api.test\", \"methods\": "
			  "[\"GET\"], \"paths\": [\"/ws\"], \"upgrade\": "
			  "true, \"reason\": \"events\"}");
	text = json_dumps(w, 0);
	ck_assert_msg(strstr(text, "an upgrade") != NULL, "%s", text);
	free(text);
	json_decref(w);
	w = warnings_with("{\"host\": \"www.api.test\", \"methods\": "
			  "[\"GET\"], \"paths\": [\"/\"], \"reason\": "
			  "\"pages\"}");
	ck_assert_uint_eq(json_array_size(w), 0);
	json_decref(w);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reflect");
	TCase *tc = tcase_create("reflect");

	tcase_add_test(tc, a_set_keeps_each_value_once_up_to_its_cap);
	tcase_add_test(tc, a_reset_scan_carries_nothing_of_the_last_answer);
	tcase_add_test(tc, a_chain_redacts_every_value_however_cut);
	tcase_add_test(tc, a_value_added_midway_is_redacted_in_the_rest);
	tcase_add_test(tc, a_scan_only_value_trips_and_an_own_one_is_redacted);
	tcase_add_test(tc, borrowed_values_do_not_take_the_jobs_own_places);
	tcase_add_test(tc, a_form_override_is_found_in_its_spellings);
	tcase_add_test(tc, a_multipart_or_json_override_is_found);
	tcase_add_test(tc, a_body_kind_follows_its_type);
	tcase_add_test(tc, a_rule_the_proxy_cannot_read_is_warned_about);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
