/*
 * Capabilities, not credentials: a request is granted only within the
 * manifest's ceiling (every parameter named, each with an allowed value,
 * nothing else, no longer than the capability's TTL), broader is refused
 * and never narrowed; a minted token is a well-formed crd_ value that the
 * store knows only by its HMAC under the pepper, expiring at
 * min(now + ttl, job deadline); the pepper is 32 bytes in a 0600 file of
 * its own. Files live in a directory made with mkdtemp under /tmp.
 */
#include "capability.h"

#include "testutil.h"
#include "token.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Test JSON: any value. */
static json_t *
parse(const char *text)
{
	return testutil_json(text, JSON_DECODE_ANY);
}

/* --- capability_within ----------------------------------------------- */

/* A manifest's capability: two parameters, a 600 s ceiling. */
static json_t *
invoices(void)
{
	return parse(
	    "{\"name\": \"invoices.read\", \"audience\": "
	    "\"invoices-api\", \"reason\": \"r\", \"ttl_seconds\": 600,"
	    " \"params\": {\"tenant\": [\"4182\", \"17\"],"
	    " \"region\": [\"eu\"]}}");
}

/* Asks cap for params (JSON text, or NULL for none) and ttl (JSON text or
 * NULL); true when granted, with *ret_ttl set. Problems go into
 * problems. */
static bool
ask(const json_t *cap, const char *params, const char *ttl, json_t *problems,
    int64_t *ret_ttl)
{
	json_t *p = params != NULL ? parse(params) : NULL;
	json_t *t = ttl != NULL ? parse(ttl) : NULL;
	bool ok = capability_within(cap, p, t, problems, ret_ttl);

	json_decref(p);
	json_decref(t);
	return ok;
}

/* Refused, with a problem at field (and no grant to speak of). */
static void
assert_refused(const json_t *cap, const char *params, const char *ttl,
    const char *field)
{
	json_t *problems = json_array();
	int64_t granted = -7;
	char *text;

	ck_assert_msg(!ask(cap, params, ttl, problems, &granted),
	    "params %s, ttl %s granted (%lld s)",
	    params != NULL ? params : "none", ttl != NULL ? ttl : "none",
	    (long long)granted);
	text = json_dumps(problems, JSON_COMPACT);
	ck_assert_msg(testutil_count_field(problems, field) >= 1,
	    "params %s, ttl %s: no problem at %s in %s",
	    params != NULL ? params : "none", ttl != NULL ? ttl : "none", field,
	    text);
	free(text);
	json_decref(problems);
}

START_TEST(test_within_exact)
{
	json_t *cap = invoices(), *problems = json_array();
	int64_t ttl = -1;

	ck_assert(ask(cap, "{\"tenant\": \"4182\", \"region\": \"eu\"}", NULL,
	    problems, &ttl));
	ck_assert_uint_eq(json_array_size(problems), 0);
	/* No ttl asked: the capability's own. */
	ck_assert_int_eq(ttl, 600);
	/* Any of the allowed values, and a shorter ttl. */
	ck_assert(ask(cap, "{\"region\": \"eu\", \"tenant\": \"17\"}", "60",
	    problems, &ttl));
	ck_assert_int_eq(ttl, 60);
	ck_assert(ask(cap, "{\"region\": \"eu\", \"tenant\": \"17\"}", "600",
	    problems, &ttl));
	ck_assert_int_eq(ttl, 600);
	ck_assert(ask(cap, "{\"region\": \"eu\", \"tenant\": \"17\"}", "1",
	    problems, &ttl));
	ck_assert_int_eq(ttl, 1);
	ck_assert_uint_eq(json_array_size(problems), 0);
	json_decref(problems);
	json_decref(cap);
}
END_TEST

START_TEST(test_within_broader_refused)
{
	json_t *cap = invoices();

	/* A value the manifest does not allow. */
	assert_refused(cap, "{\"tenant\": \"9999\", \"region\": \"eu\"}", NULL,
	    "params.tenant");
	assert_refused(cap, "{\"tenant\": \"4182\", \"region\": \"us\"}", NULL,
	    "params.region");
	/* Case and type matter: "EU" is not "eu", 4182 is not "4182". */
	assert_refused(cap, "{\"tenant\": \"4182\", \"region\": \"EU\"}", NULL,
	    "params.region");
	assert_refused(cap, "{\"tenant\": 4182, \"region\": \"eu\"}", NULL,
	    "params.tenant");
	/* A list is several values at once, not one of the allowed. */
	assert_refused(cap,
	    "{\"tenant\": [\"4182\", \"17\"], \"region\": \"eu\"}", NULL,
	    "params.tenant");
	assert_refused(cap, "{\"tenant\": \"*\", \"region\": \"eu\"}", NULL,
	    "params.tenant");
	/* Leaving a parameter out would ask for every value. */
	assert_refused(cap, "{\"tenant\": \"4182\"}", NULL, "params.region");
	assert_refused(cap, "{}", NULL, "params.tenant");
	/* A parameter the capability does not have. */
	assert_refused(cap,
	    "{\"tenant\": \"4182\", \"region\": \"eu\", \"admin\": true}", NULL,
	    "params.admin");
	/* No object at all. */
	assert_refused(cap, NULL, NULL, "params");
	assert_refused(cap, "[\"4182\", \"eu\"]", NULL, "params");
	assert_refused(cap, "\"tenant=4182\"", NULL, "params");
	json_decref(cap);
}
END_TEST

START_TEST(test_within_ttl)
{
	static const char *const refused[] = { "601", "0", "-1", "60.5",
		"\"60\"", "null", "true", "9223372036854775807" };
	const char *params = "{\"tenant\": \"4182\", \"region\": \"eu\"}";
	json_t *cap = invoices(), *plain, *problems = json_array();
	int64_t ttl = -1;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_refused(cap, params, refused[i], "ttl_seconds");
	/* Without a ttl_seconds of its own, a capability allows 900. */
	plain = parse("{\"name\": \"x\", \"audience\": \"a\", "
		      "\"params\": {\"t\": [1]}}");
	ck_assert(ask(plain, "{\"t\": 1}", "900", problems, &ttl));
	ck_assert_int_eq(ttl, 900);
	ck_assert(ask(plain, "{\"t\": 1}", NULL, problems, &ttl));
	ck_assert_int_eq(ttl, 900);
	ck_assert_uint_eq(json_array_size(problems), 0);
	assert_refused(plain, "{\"t\": 1}", "901", "ttl_seconds");
	json_decref(plain);
	json_decref(problems);
	json_decref(cap);
}
END_TEST

START_TEST(test_within_integer_params)
{
	json_t *cap = parse("{\"name\": \"x\", \"audience\": \"a\", "
			    "\"params\": {\"tenant\": [4182, 17]}}");
	json_t *problems = json_array();
	int64_t ttl;

	ck_assert(ask(cap, "{\"tenant\": 4182}", NULL, problems, &ttl));
	ck_assert(ask(cap, "{\"tenant\": 17}", NULL, problems, &ttl));
	ck_assert_uint_eq(json_array_size(problems), 0);
	assert_refused(cap, "{\"tenant\": \"4182\"}", NULL, "params.tenant");
	assert_refused(cap, "{\"tenant\": 4182.0}", NULL, "params.tenant");
	assert_refused(cap, "{\"tenant\": 4183}", NULL, "params.tenant");
	json_decref(problems);
	json_decref(cap);
}
END_TEST

START_TEST(test_within_lists_everything)
{
	json_t *cap = invoices();
	json_t *problems = parse("[{\"field\": \"earlier\", "
				 "\"problem\": \"from the caller\"}]");
	int64_t ttl;

	/* Problems already in the list are not this request's. */
	ck_assert(ask(cap, "{\"tenant\": \"4182\", \"region\": \"eu\"}", NULL,
	    problems, &ttl));
	ck_assert_uint_eq(json_array_size(problems), 1);
	/* Outside, missing, extra and too long: four problems, one call. */
	ck_assert(!ask(cap, "{\"tenant\": \"1\", \"x\": \"y\"}", "3600",
	    problems, &ttl));
	ck_assert_uint_eq(json_array_size(problems), 5);
	ck_assert_uint_eq(testutil_count_field(problems, "params.tenant"), 1);
	ck_assert_uint_eq(testutil_count_field(problems, "params.region"), 1);
	ck_assert_uint_eq(testutil_count_field(problems, "params.x"), 1);
	ck_assert_uint_eq(testutil_count_field(problems, "ttl_seconds"), 1);
	json_decref(problems);
	json_decref(cap);
}
END_TEST

/* A params object of made-up keys is refused with the first
 * CAPABILITY_MAX_PROBLEMS problems and one that counts the rest: a 1 MiB
 * body must not come back as a refusal many times its size. */
START_TEST(test_within_huge_params_one_problem)
{
	json_t *cap = invoices();
	json_t *params = json_object(), *problems = json_array();
	char key[32];
	int64_t ttl;

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		json_object_set_new(params, key, json_string("v"));
	}
	ck_assert(!capability_within(cap, params, NULL, problems, &ttl));
	ck_assert_uint_eq(json_array_size(problems),
	    CAPABILITY_MAX_PROBLEMS + 1);
	ck_assert_uint_eq(testutil_count_field(problems, "params"), 1);
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(
		       json_object_get(json_array_get(problems,
					   CAPABILITY_MAX_PROBLEMS),
			   "problem")),
		"4986 more"));
	json_decref(problems);
	json_decref(params);
	json_decref(cap);
}
END_TEST

/* --- capability_mint ------------------------------------------------- */

static void
pepper_fill(unsigned char pepper[PEPPER_LEN], unsigned char start)
{
	for (size_t i = 0; i < PEPPER_LEN; i++)
		pepper[i] = (unsigned char)(start + i);
}

/* HMAC-SHA256 computed here, independently of capability_hash. */
static void
hmac_of(const unsigned char pepper[PEPPER_LEN], const char *value,
    unsigned char out[STORE_HASH_LEN])
{
	unsigned int n = STORE_HASH_LEN;

	ck_assert_ptr_nonnull(HMAC(EVP_sha256(), pepper, PEPPER_LEN,
	    (const unsigned char *)value, strlen(value), out, &n));
	ck_assert_uint_eq(n, STORE_HASH_LEN);
}

struct minted {
	char value[TOKEN_VALUE_MAX];
	struct token_row row;
	int64_t before, after; /* time() around the call */
};

static void
mint(const unsigned char pepper[PEPPER_LEN], int64_t deadline, int64_t ttl,
    struct minted *m)
{
	json_t *cap = invoices();
	json_t *params = parse("{\"tenant\": \"4182\", \"region\": \"eu\"}");
	int r;

	memset(m->value, 'x', sizeof(m->value));
	m->before = (int64_t)time(NULL);
	r = capability_mint(pepper, "job_4Fq9", deadline, cap, params, ttl,
	    m->value, &m->row);
	m->after = (int64_t)time(NULL);
	ck_assert_msg(r == 0, "mint: %s", strerror(-r));
	json_decref(params);
	json_decref(cap);
}

START_TEST(test_mint_token_shape)
{
	unsigned char pepper[PEPPER_LEN];
	struct minted m;

	pepper_fill(pepper, 1);
	mint(pepper, (int64_t)time(NULL) + 3600, 600, &m);
	/* A crd_ token any secret scanner can match, checksum and all. */
	ck_assert_uint_eq(strlen(m.value), TOKEN_LEN);
	ck_assert_int_eq(strncmp(m.value, "crd_", 4), 0);
	ck_assert_int_eq(token_parse(m.value, strlen(m.value)), 0);
	/* The row says what it is for and never holds the value. */
	ck_assert_str_eq(m.row.job, "job_4Fq9");
	ck_assert_str_eq(m.row.capability, "invoices.read");
	ck_assert_str_eq(m.row.audience, "invoices-api");
	ck_assert_str_eq(m.row.state, "active");
	/* An id to show in logs and audit: long enough not to collide. */
	ck_assert_int_eq(strncmp(m.row.id, "tok_", 4), 0);
	ck_assert_uint_ge(strlen(m.row.id), 4 + 16);
	ck_assert_ptr_nonnull(m.row.params);
	ck_assert_str_eq(m.row.params,
	    "{\"region\":\"eu\",\"tenant\":\"4182\"}");
	ck_assert_ptr_null(strstr(m.row.id, m.value + 4));
	ck_assert_ptr_null(strstr(m.row.params, m.value + 4));
	free(m.row.params);
}
END_TEST

START_TEST(test_mint_expiry)
{
	unsigned char pepper[PEPPER_LEN];
	struct minted m;
	int64_t deadline;

	pepper_fill(pepper, 1);
	/* The deadline is far: the ttl decides. */
	mint(pepper, (int64_t)time(NULL) + 3600, 600, &m);
	ck_assert_int_ge(m.row.iat, m.before);
	ck_assert_int_le(m.row.iat, m.after);
	ck_assert_int_eq(m.row.exp, m.row.iat + 600);
	free(m.row.params);

	/* The job ends first: the token ends with it, not later. */
	deadline = (int64_t)time(NULL) + 100;
	mint(pepper, deadline, 900, &m);
	ck_assert_int_eq(m.row.exp, deadline);
	ck_assert_int_lt(m.row.exp, m.row.iat + 900);
	free(m.row.params);

	/* Both at the same moment: either way, the same answer. */
	deadline = (int64_t)time(NULL) + 60;
	mint(pepper, deadline, 60, &m);
	ck_assert_int_le(m.row.exp, deadline);
	ck_assert_int_le(m.row.exp, m.row.iat + 60);
	free(m.row.params);
}
END_TEST

START_TEST(test_mint_hash)
{
	unsigned char pepper[PEPPER_LEN], other[PEPPER_LEN];
	unsigned char want[STORE_HASH_LEN], h[STORE_HASH_LEN];
	struct minted a, b;

	pepper_fill(pepper, 1);
	pepper_fill(other, 2);
	mint(pepper, (int64_t)time(NULL) + 3600, 600, &a);
	/* The row holds HMAC-SHA256(pepper, value), nothing less. */
	hmac_of(pepper, a.value, want);
	ck_assert_mem_eq(a.row.hash, want, STORE_HASH_LEN);
	ck_assert_int_eq(capability_hash(pepper, a.value, TOKEN_LEN, h), 0);
	ck_assert_mem_eq(h, want, STORE_HASH_LEN);
	/* Under another pepper the same value hashes otherwise: a copy of
	 * the database alone cannot confirm a guess. */
	ck_assert_int_eq(capability_hash(other, a.value, TOKEN_LEN, h), 0);
	ck_assert_int_ne(memcmp(h, a.row.hash, STORE_HASH_LEN), 0);

	/* Two mints: two values, two ids, two hashes. */
	mint(pepper, (int64_t)time(NULL) + 3600, 600, &b);
	ck_assert_str_ne(a.value, b.value);
	ck_assert_str_ne(a.row.id, b.row.id);
	ck_assert_int_ne(memcmp(a.row.hash, b.row.hash, STORE_HASH_LEN), 0);
	free(a.row.params);
	free(b.row.params);
}
END_TEST

START_TEST(test_hash_known_answer)
{
	/* HMAC-SHA256 with the key 00 01 .. 1f, computed elsewhere. */
	static const char want[] = "4e2d0d141a9b5c4ec07aa2a543d3e16a"
				   "16ef2680353e8025d986949aad74001c";
	const char *token = "crd_0123456789abcdefghijABCDEFGHIJ012345";
	unsigned char pepper[PEPPER_LEN], h[STORE_HASH_LEN];
	char hex[2 * STORE_HASH_LEN + 1];

	pepper_fill(pepper, 0);
	ck_assert_int_eq(capability_hash(pepper, token, strlen(token), h), 0);
	for (size_t i = 0; i < STORE_HASH_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
	ck_assert_str_eq(hex, want);
}
END_TEST

/* --- capability_pepper ----------------------------------------------- */

START_TEST(test_pepper_created_then_loaded)
{
	unsigned char first[PEPPER_LEN], again[PEPPER_LEN], file[64];
	unsigned char zero[PEPPER_LEN] = { 0 };
	char p[PATH_MAX];
	bool created = false;
	struct stat st;

	umask(022);
	ck_assert_int_eq(capability_pepper(testutil_at(p, "pepper"), first,
			     &created),
	    0);
	ck_assert(created);
	/* A file of its own, 0600, exactly the 32 bytes handed back. */
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_uint_eq(testutil_read_file(p, file, sizeof(file)),
	    PEPPER_LEN);
	ck_assert_mem_eq(file, first, PEPPER_LEN);
	ck_assert_int_ne(memcmp(first, zero, PEPPER_LEN), 0);

	/* Next start: the same bytes, nothing written. */
	created = true;
	memset(again, 0, sizeof(again));
	ck_assert_int_eq(capability_pepper(p, again, &created), 0);
	ck_assert(!created);
	ck_assert_mem_eq(again, first, PEPPER_LEN);

	/* Another file, another pepper. */
	ck_assert_int_eq(capability_pepper(testutil_at(p, "pepper2"), again,
			     &created),
	    0);
	ck_assert(created);
	ck_assert_int_ne(memcmp(again, first, PEPPER_LEN), 0);
}
END_TEST

START_TEST(test_pepper_loads_given_bytes)
{
	unsigned char want[PEPPER_LEN], got[PEPPER_LEN];
	char p[PATH_MAX];
	bool created = true;

	/* Any 32 bytes, NULs and newlines included, are the pepper. */
	pepper_fill(want, 250);
	want[3] = '\0';
	want[4] = '\n';
	testutil_write_file(testutil_at(p, "pepper"), want, PEPPER_LEN);
	ck_assert_int_eq(capability_pepper(p, got, &created), 0);
	ck_assert(!created);
	ck_assert_mem_eq(got, want, PEPPER_LEN);
}
END_TEST

/* A pepper file of len bytes is refused and left as it was: the error. */
static int
pepper_refused(size_t len)
{
	unsigned char data[64], got[PEPPER_LEN], file[64], sentinel[PEPPER_LEN];
	char p[PATH_MAX];
	bool created = true;
	int r;

	memset(data, 'k', sizeof(data));
	memset(sentinel, 0xa5, sizeof(sentinel));
	memcpy(got, sentinel, sizeof(got));
	testutil_write_file(testutil_at(p, "pepper"), data, len);
	r = capability_pepper(p, got, &created);
	ck_assert_msg(r < 0, "a pepper of %zu bytes accepted", len);
	/* Nothing handed back, nothing replaced: a new pepper would orphan
	 * every stored token hash. */
	ck_assert_mem_eq(got, sentinel, PEPPER_LEN);
	ck_assert(created);
	ck_assert_uint_eq(testutil_read_file(p, file, sizeof(file)), len);
	ck_assert_mem_eq(file, data, len);
	unlink(p);
	return r;
}

START_TEST(test_pepper_wrong_length)
{
	ck_assert_int_eq(pepper_refused(PEPPER_LEN - 1), -EINVAL);
	ck_assert_int_eq(pepper_refused(1), -EINVAL);
	/* An empty file is a damaged pepper, not a missing one. */
	ck_assert_int_eq(pepper_refused(0), -EINVAL);
	/* Longer: refused the same way, not a guess at which 32 bytes. */
	ck_assert_int_eq(pepper_refused(PEPPER_LEN + 1), -EINVAL);
	ck_assert_int_eq(pepper_refused(64), -EINVAL);
}
END_TEST

START_TEST(test_pepper_errors)
{
	unsigned char got[PEPPER_LEN];
	char p[PATH_MAX];
	bool created = true;

	/* No directory to write into. */
	ck_assert_int_eq(capability_pepper(testutil_at(p, "no/pepper"), got,
			     &created),
	    -ENOENT);
	ck_assert(created);
	/* A directory where the file should be. */
	ck_assert_int_eq(mkdir(testutil_at(p, "d"), 0700), 0);
	ck_assert_int_eq(capability_pepper(p, got, &created), -EINVAL);
	ck_assert(created);
}
END_TEST

static Suite *
capability_suite(void)
{
	Suite *s = suite_create("capability");
	TCase *tc;

	tc = tcase_create("within");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_within_exact);
	tcase_add_test(tc, test_within_broader_refused);
	tcase_add_test(tc, test_within_ttl);
	tcase_add_test(tc, test_within_integer_params);
	tcase_add_test(tc, test_within_lists_everything);
	tcase_add_test(tc, test_within_huge_params_one_problem);
	suite_add_tcase(s, tc);

	tc = tcase_create("mint");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_mint_token_shape);
	tcase_add_test(tc, test_mint_expiry);
	tcase_add_test(tc, test_mint_hash);
	tcase_add_test(tc, test_hash_known_answer);
	suite_add_tcase(s, tc);

	tc = tcase_create("pepper");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "capability");
	tcase_add_checked_fixture(tc, testutil_dir_setup, NULL);
	tcase_add_test(tc, test_pepper_created_then_loaded);
	tcase_add_test(tc, test_pepper_loads_given_bytes);
	tcase_add_test(tc, test_pepper_wrong_length);
	tcase_add_test(tc, test_pepper_errors);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(capability_suite());
}
