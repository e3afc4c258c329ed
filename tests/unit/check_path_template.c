/*
 * Query bindings of common/path_template.c (credentials.md, "Param
 * binding"): a rule's "query" {"repo": "{repo}"} read at load, and a
 * request's query matched with the token's params, refusing every
 * spelling a lenient server could read as the bound name (duplicates,
 * percent-encoded or bracketed names, another case, '.' for '_', ';'
 * separators) and every value but the token's own.
 */
#include "path_template.h"

#include "testutil.h"
#include "util.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static int
parse(const char *text, struct path_template_query *b, size_t *n,
    const char **why)
{
	json_t *j = json_loads(text, 0, NULL);
	int r;

	ck_assert_ptr_nonnull(j);
	r = path_template_query_parse(j, b, n, why);
	json_decref(j);
	return r;
}

START_TEST(test_query_parse)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "[\"repo\"]", "not_an_object" },
		{ "{\"repo\": \"widgets\"}", "not_a_placeholder" },
		{ "{\"repo\": \"{repo}x\"}", "not_a_placeholder" },
		{ "{\"repo\": \"{Repo}\"}", "not_a_placeholder" },
		{ "{\"repo\": 1}", "not_a_placeholder" },
		{ "{\"re%70o\": \"{repo}\"}", "bad_name" },
		{ "{\"\": \"{repo}\"}", "bad_name" },
		{ "{\"repo[]\": \"{repo}\"}", "bad_name" },
		{ "{\"my_repo\": \"{a}\", \"My.Repo\": \"{b}\"}", "same_name" },
		{ "{\"a\":\"{a}\",\"b\":\"{a}\",\"c\":\"{a}\",\"d\":\"{a}\","
		  "\"e\":\"{a}\",\"f\":\"{a}\",\"g\":\"{a}\",\"h\":\"{a}\","
		  "\"i\":\"{a}\"}",
		    "too_many" },
	};
	struct path_template_query b[PATH_TEMPLATE_MAX];
	const char *why;
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		why = NULL;
		ck_assert_msg(parse(bad[i].text, b, &n, &why) == -EINVAL, "%s",
		    bad[i].text);
		ck_assert_msg(why != NULL && strcmp(why, bad[i].why) == 0,
		    "%s: %s", bad[i].text, why);
	}
	ck_assert_int_eq(parse("{\"repo\": \"{repo}\", \"owner_id\": "
			       "\"{owner}\"}",
			     b, &n, &why),
	    0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(b[0].name, "repo");
	ck_assert_str_eq(b[0].param, "repo");
	ck_assert_str_eq(b[1].name, "owner_id");
	ck_assert_str_eq(b[1].param, "owner");
}
END_TEST

START_TEST(test_query_match)
{
	static const struct {
		const char *q, *why; /* why NULL: matches */
	} v[] = {
		{ "repo=widgets", NULL },
		{ "page=2&repo=widgets&per_page=10", NULL },
		{ "repo=widgets&q=a%20b+c", NULL },
		{ "", "query_missing" },
		{ "page=2", "query_missing" },
		{ "repo=secrets", "param_mismatch" },
		{ "repo=widgets-evil", "param_mismatch" },
		{ "repo=WIDGETS", "param_mismatch" },
		{ "repo=widget%73", "param_mismatch" },
		{ "repo=", "param_mismatch" },
		{ "repo", "param_mismatch" },
		{ "repo=widgets&repo=secrets", "query_duplicate" },
		{ "repo=secrets&repo=widgets", "query_duplicate" },
		{ "repo=widgets&repo=widgets", "query_duplicate" },
		{ "repo=widgets&%72epo=secrets", "query_name" },
		{ "%72epo=secrets&repo=widgets", "query_name" },
		{ "repo=widgets&repo[]=secrets", "query_name" },
		{ "repo=widgets&re+po=secrets", "query_name" },
		{ "repo=widgets&=secrets", "query_name" },
		{ "repo=widgets;repo=secrets", "query_separator" },
		{ "repo=widgets&q=a;b", "query_separator" },
		{ "repo=widgets&REPO=secrets", "query_spelling" },
		{ "Repo=widgets", "query_spelling" },
	};
	struct path_template_query b[PATH_TEMPLATE_MAX];
	json_t *params = json_pack("{s:s}", "repo", "widgets");
	const char *why;
	size_t n;

	ck_assert_int_eq(parse("{\"repo\": \"{repo}\"}", b, &n, &why), 0);
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		why = NULL;
		bool ok = path_template_query_match(b, n, v[i].q,
		    strlen(v[i].q), params, &why);
		if (v[i].why == NULL)
			ck_assert_msg(ok, "%s: %s", v[i].q, why);
		else
			ck_assert_msg(!ok && why != NULL &&
				strcmp(why, v[i].why) == 0,
			    "%s: %s, not %s", v[i].q, ok ? "matched" : why,
			    v[i].why);
	}
	/* '.' and '-' read as '_' by some servers: my.repo is my_repo. */
	ck_assert_int_eq(parse("{\"my_repo\": \"{repo}\"}", b, &n, &why), 0);
	ck_assert(!path_template_query_match(b, n,
	    "my_repo=widgets&my.repo=secrets", 31, params, &why));
	ck_assert_str_eq(why, "query_spelling");
	ck_assert(!path_template_query_match(b, n, "my-repo=secrets", 15,
	    params, &why));
	ck_assert_str_eq(why, "query_spelling");
	/* The token lacks the param, or has one that is no plain value. */
	ck_assert_int_eq(parse("{\"repo\": \"{other}\"}", b, &n, &why), 0);
	ck_assert(
	    !path_template_query_match(b, n, "repo=widgets", 12, params, &why));
	ck_assert_str_eq(why, "param_missing");
	json_decref(params);
	params = json_pack("{s:s}", "other", "a/b");
	ck_assert(
	    !path_template_query_match(b, n, "repo=a/b", 8, params, &why));
	ck_assert_str_eq(why, "param_value");
	json_decref(params);
	/* No binding: any query. */
	ck_assert(path_template_query_match(b, 0, "a;b", 3, NULL, &why));
}
END_TEST

static Suite *
path_template_suite(void)
{
	Suite *s = suite_create("path_template");
	TCase *tc = tcase_create("query");

	tcase_add_test(tc, test_query_parse);
	tcase_add_test(tc, test_query_match);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(path_template_suite());
}
