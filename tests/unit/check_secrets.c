/*
 * Secrets at the broker (broker/secrets.c, broker/store.c): the sealing
 * (a value opens only with the same key, name and version; an altered
 * byte, a short or long buffer are refused; two seals of one value
 * differ), the key file made at first use and read back after, and the
 * store's secrets table on a fresh sqlite database: versions in order,
 * a lost race refused, metadata without the value, the release and the
 * delete audited, and the database never holding the value in clear.
 */
#include "secrets.h"
#include "store.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const unsigned char key[SECRETS_KEY_LEN] =
    "0123456789abcdef0123456789abcde";
static const char value[] = "ghp_live_upstream_key_0123456789";

START_TEST(test_seal_roundtrip)
{
	unsigned char sealed[SECRETS_SEALED_MAX], again[SECRETS_SEALED_MAX];
	char out[SECRETS_VALUE_MAX + 1];
	size_t len, len2, olen;

	ck_assert_int_eq(secrets_seal(key, "github-ro", 3, value, strlen(value),
			     sealed, sizeof(sealed), &len),
	    0);
	ck_assert_uint_eq(len,
	    strlen(value) + SECRETS_NONCE_LEN + SECRETS_TAG_LEN);
	ck_assert_ptr_null(memmem(sealed, len, value, strlen(value)));
	ck_assert_int_eq(secrets_unseal(key, "github-ro", 3, sealed, len, out,
			     sizeof(out), &olen),
	    0);
	ck_assert_uint_eq(olen, strlen(value));
	ck_assert_str_eq(out, value);
	/* A fresh nonce each time. */
	ck_assert_int_eq(secrets_seal(key, "github-ro", 3, value, strlen(value),
			     again, sizeof(again), &len2),
	    0);
	ck_assert_int_ne(memcmp(sealed, again, len), 0);
}
END_TEST

START_TEST(test_unseal_refuses)
{
	unsigned char sealed[SECRETS_SEALED_MAX];
	unsigned char other[SECRETS_KEY_LEN];
	char out[SECRETS_VALUE_MAX + 1];
	size_t len, olen;

	ck_assert_int_eq(secrets_seal(key, "github-ro", 3, value, strlen(value),
			     sealed, sizeof(sealed), &len),
	    0);
	/* Another version, another name: moved ciphertext does not open. */
	ck_assert_int_eq(secrets_unseal(key, "github-ro", 2, sealed, len, out,
			     sizeof(out), &olen),
	    -EBADMSG);
	ck_assert_int_eq(secrets_unseal(key, "github-rw", 3, sealed, len, out,
			     sizeof(out), &olen),
	    -EBADMSG);
	memcpy(other, key, sizeof(other));
	other[0] ^= 1;
	ck_assert_int_eq(secrets_unseal(other, "github-ro", 3, sealed, len, out,
			     sizeof(out), &olen),
	    -EBADMSG);
	for (size_t i = 0; i < len; i++) {
		sealed[i] ^= 0x40;
		ck_assert_int_eq(secrets_unseal(key, "github-ro", 3, sealed,
				     len, out, sizeof(out), &olen),
		    -EBADMSG);
		sealed[i] ^= 0x40;
	}
	ck_assert_int_eq(secrets_unseal(key, "github-ro", 3, sealed, 27, out,
			     sizeof(out), &olen),
	    -EBADMSG);
	ck_assert_int_eq(secrets_unseal(key, "github-ro", 3, sealed, len, out,
			     strlen(value), &olen),
	    -EMSGSIZE);
}
END_TEST

START_TEST(test_seal_caps)
{
	static char big[SECRETS_VALUE_MAX + 1];
	unsigned char sealed[SECRETS_SEALED_MAX + 16];
	size_t len;

	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(secrets_seal(key, "n", 1, big, sizeof(big), sealed,
			     sizeof(sealed), &len),
	    -EMSGSIZE);
	ck_assert_int_eq(secrets_seal(key, "n", 1, big, 10, sealed, 10 + 27,
			     &len),
	    -EMSGSIZE);
	ck_assert_int_eq(secrets_seal(key, "n", 1, big, SECRETS_VALUE_MAX,
			     sealed, sizeof(sealed), &len),
	    0);
}
END_TEST

START_TEST(test_key_file)
{
	char path[PATH_MAX];
	unsigned char k1[SECRETS_KEY_LEN], k2[SECRETS_KEY_LEN];
	struct stat sb;
	bool created;

	testutil_at(path, SECRETS_KEY_FILE);
	ck_assert_int_eq(secrets_key_load(path, k1, &created), 0);
	ck_assert(created);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	ck_assert_int_eq(secrets_key_load(path, k2, &created), 0);
	ck_assert(!created);
	ck_assert_int_eq(memcmp(k1, k2, sizeof(k1)), 0);
	testutil_write_text(path, "short");
	ck_assert_int_eq(secrets_key_load(path, k2, &created), -EINVAL);
	testutil_write_text(path, "0123456789abcdef0123456789abcdef0");
	ck_assert_int_eq(secrets_key_load(path, k2, &created), -EINVAL);
}
END_TEST

static bool
audited(struct store *st, const char *event, const char *job)
{
	json_t *list, *r;
	size_t i;
	bool seen = false;

	ck_assert_int_eq(store_audit_list(st, job, 0, 1000, &list), 0);
	json_array_foreach(list, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "event")),
			event) == 0)
			seen = true;
	}
	json_decref(list);
	return seen;
}

START_TEST(test_store_secrets)
{
	char path[PATH_MAX];
	struct store *st;
	struct secret_meta m;
	unsigned char sealed[SECRETS_SEALED_MAX], *got;
	size_t len, glen;
	bool found;
	json_t *list;

	testutil_at(path, "broker.db");
	ck_assert_int_eq(store_open(path, &st), 0);
	ck_assert_int_eq(store_secret_get(st, "gh", &m, NULL, NULL), -ENOENT);
	ck_assert_int_eq(secrets_seal(key, "gh", 1, value, strlen(value),
			     sealed, sizeof(sealed), &len),
	    0);
	/* Version 2 before 1: a race lost. */
	ck_assert_int_eq(store_secret_put(st, "gh", 2, sealed, len, "admin"),
	    -EEXIST);
	ck_assert_int_eq(store_secret_put(st, "gh", 1, sealed, len, "admin"),
	    0);
	ck_assert_int_eq(store_secret_put(st, "gh", 1, sealed, len, "admin"),
	    -EEXIST);
	ck_assert_int_eq(store_secret_put(st, "gh", 2, sealed, len, "admin"),
	    0);
	ck_assert_int_eq(store_secret_get(st, "gh", &m, &got, &glen), 0);
	ck_assert_str_eq(m.name, "gh");
	ck_assert_int_eq(m.version, 2);
	ck_assert_int_eq(m.last_used, 0);
	ck_assert_uint_eq(glen, len);
	ck_assert_int_eq(memcmp(got, sealed, len), 0);
	free(got);
	ck_assert_int_eq(store_secret_list(st, &list), 0);
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(list, 0),
				 "version")),
	    2);
	ck_assert_ptr_null(json_object_get(json_array_get(list, 0), "value"));
	json_decref(list);
	ck_assert(audited(st, "secret_put", NULL));

	ck_assert_int_eq(store_secret_released(st, "gh", 2, "job_x",
			     "verifier"),
	    0);
	ck_assert_int_eq(store_secret_get(st, "gh", &m, NULL, NULL), 0);
	ck_assert_int_gt(m.last_used, 0);
	ck_assert(audited(st, "secret_released", "job_x"));
	ck_assert_int_eq(store_secret_released(st, "nope", 1, "job_x",
			     "verifier"),
	    -ENOENT);

	ck_assert_int_eq(store_secret_delete(st, "gh", "admin", &found), 0);
	ck_assert(found);
	ck_assert(audited(st, "secret_deleted", NULL));
	ck_assert_int_eq(store_secret_delete(st, "gh", "admin", &found), 0);
	ck_assert(!found);
	ck_assert_int_eq(store_secret_get(st, "gh", &m, NULL, NULL), -ENOENT);
	store_close(st);

	/* The database file never held the value in clear. */
	static char db[1 << 20];
	size_t n = testutil_read_file(path, db, sizeof(db));
	ck_assert_ptr_null(memmem(db, n, value, strlen(value)));
}
END_TEST

/* A burned value's digest is keyed: the same value under another key,
 * or another value under the same key, digests otherwise; and it is
 * neither the value nor its plain SHA-256. */
START_TEST(test_value_digest_is_keyed)
{
	static const unsigned char other[SECRETS_KEY_LEN] =
	    "0123456789abcdef0123456789abcdX";
	unsigned char d1[SECRETS_DIGEST_LEN], d2[SECRETS_DIGEST_LEN],
	    d3[SECRETS_DIGEST_LEN], d4[SECRETS_DIGEST_LEN],
	    plain[SHA256_DIGEST_LENGTH];

	ck_assert_int_eq(secrets_value_digest(key, value, strlen(value), d1),
	    0);
	ck_assert_int_eq(secrets_value_digest(key, value, strlen(value), d2),
	    0);
	ck_assert_int_eq(memcmp(d1, d2, sizeof(d1)), 0);
	ck_assert_int_eq(secrets_value_digest(other, value, strlen(value), d3),
	    0);
	ck_assert_int_ne(memcmp(d1, d3, sizeof(d1)), 0);
	ck_assert_int_eq(secrets_value_digest(key, value, strlen(value) - 1,
			     d4),
	    0);
	ck_assert_int_ne(memcmp(d1, d4, sizeof(d1)), 0);
	SHA256((const unsigned char *)value, strlen(value), plain);
	ck_assert_int_ne(memcmp(d1, plain, sizeof(d1)), 0);
}
END_TEST

static Suite *
secrets_suite(void)
{
	Suite *s = suite_create("secrets");
	TCase *tc = tcase_create("secrets");

	testutil_tmp_fixture(tc, "secrets");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, test_seal_roundtrip);
	tcase_add_test(tc, test_unseal_refuses);
	tcase_add_test(tc, test_seal_caps);
	tcase_add_test(tc, test_key_file);
	tcase_add_test(tc, test_store_secrets);
	tcase_add_test(tc, test_value_digest_is_keyed);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(secrets_suite());
}
