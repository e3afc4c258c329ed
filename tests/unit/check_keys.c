/*
 * Bearer keys: keys_ensure writes a fresh crk_ key to a 0600 file once and
 * afterwards only finds it; a keyring built from such files grants each
 * key its roles and nothing to a key that is wrong, one character off or
 * too short.
 */
#include "keys.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The whole file, which must exist. */
static char *
slurp(const char *path, size_t *ret_len)
{
	char *text = calloc(4097, 1);

	ck_assert_ptr_nonnull(text);
	*ret_len = testutil_read_file(path, text, 4096);
	return text;
}

/* Ensures <dir>/<name>.key, which must be new, and returns its key
 * without the newline. */
static char *
new_key(const char *name, char **ret_path)
{
	char *path = NULL, *text;
	bool created = false;
	size_t len;

	ck_assert_int_eq(keys_ensure(testutil_dir, name, &path, &created), 0);
	ck_assert(created);
	text = slurp(path, &len);
	ck_assert_uint_eq(len, 43);
	ck_assert_int_eq(text[42], '\n');
	text[42] = '\0';
	if (ret_path != NULL)
		*ret_path = path;
	else
		free(path);
	return text;
}

/* --- keys_ensure ----------------------------------------------------- */

START_TEST(test_ensure_writes_key)
{
	char want[PATH_MAX + 32];
	char *path = NULL, *text;
	bool created = false;
	struct stat st;
	regex_t re;
	size_t len;

	ck_assert_int_eq(keys_ensure(testutil_dir, "broker", &path, &created),
	    0);
	ck_assert(created);
	snprintf(want, sizeof(want), "%s/broker.key", testutil_dir);
	ck_assert_str_eq(path, want);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);

	text = slurp(path, &len);
	ck_assert_int_eq(strncmp(text, KEY_PREFIX, 4), 0);
	ck_assert_int_eq(regcomp(&re, "^crk_[0-9A-Za-z]{38}\n$",
			     REG_EXTENDED | REG_NOSUB),
	    0);
	ck_assert_msg(regexec(&re, text, 0, NULL, 0) == 0,
	    "key file holds \"%s\"", text);
	ck_assert_uint_eq(len, strlen(text));
	regfree(&re);
	free(text);
	free(path);
}
END_TEST

START_TEST(test_ensure_second_call_loads)
{
	char *path1 = NULL, *path2 = NULL, *text1, *text2;
	bool created = true;
	struct stat st1, st2;
	size_t len1, len2;

	ck_assert_int_eq(keys_ensure(testutil_dir, "proxy", &path1, &created),
	    0);
	ck_assert(created);
	ck_assert_int_eq(stat(path1, &st1), 0);
	text1 = slurp(path1, &len1);

	created = true;
	ck_assert_int_eq(keys_ensure(testutil_dir, "proxy", &path2, &created),
	    0);
	ck_assert(!created);
	ck_assert_str_eq(path1, path2);
	text2 = slurp(path2, &len2);
	ck_assert_uint_eq(len1, len2);
	ck_assert_mem_eq(text1, text2, len1);
	/* Not rewritten: same file, same modification time. */
	ck_assert_int_eq(stat(path2, &st2), 0);
	ck_assert_uint_eq(st1.st_ino, st2.st_ino);
	ck_assert_int_eq(st1.st_mtim.tv_sec, st2.st_mtim.tv_sec);
	ck_assert_int_eq(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
	free(text1);
	free(text2);
	free(path1);
	free(path2);
}
END_TEST

START_TEST(test_ensure_keeps_existing_key)
{
	/* An operator's own key is kept as it is. */
	char p[PATH_MAX + 32];
	const char *mine = "crk_operator-chosen-key-0123456789abcdef\n";
	char *path = NULL, *text;
	bool created = true;
	size_t len;

	snprintf(p, sizeof(p), "%s/admin.key", testutil_dir);
	testutil_write_text(p, mine);
	ck_assert_int_eq(keys_ensure(testutil_dir, "admin", &path, &created),
	    0);
	ck_assert(!created);
	text = slurp(path, &len);
	ck_assert_str_eq(text, mine);
	free(text);
	free(path);
}
END_TEST

START_TEST(test_ensure_makes_dir)
{
	char sub[PATH_MAX + 32];
	char *path = NULL;
	bool created = false;
	struct stat st;

	snprintf(sub, sizeof(sub), "%s/a/b/keys", testutil_dir);
	ck_assert_int_eq(keys_ensure(sub, "hatch", &path, &created), 0);
	ck_assert(created);
	ck_assert_int_eq(stat(sub, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(access(path, R_OK), 0);
	free(path);
}
END_TEST

START_TEST(test_ensure_distinct_keys)
{
	char *a = new_key("one", NULL), *b = new_key("two", NULL);

	ck_assert_str_ne(a, b);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_ensure_refuses_non_file)
{
	char p[PATH_MAX + 32], t[PATH_MAX + 32];
	char *path = (char *)"untouched";
	bool created = false;

	/* A symlink planted where the key goes is not followed. */
	snprintf(t, sizeof(t), "%s/elsewhere", testutil_dir);
	testutil_write_text(t, "crk_planted-key-planted-key-planted-key00\n");
	snprintf(p, sizeof(p), "%s/link.key", testutil_dir);
	ck_assert_int_eq(symlink(t, p), 0);
	ck_assert_int_eq(keys_ensure(testutil_dir, "link", &path, &created),
	    -EINVAL);
	ck_assert_str_eq(path, "untouched");
	ck_assert(!created);
	snprintf(p, sizeof(p), "%s/d.key", testutil_dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	ck_assert_int_eq(keys_ensure(testutil_dir, "d", &path, &created),
	    -EINVAL);
	ck_assert_str_eq(path, "untouched");
}
END_TEST

START_TEST(test_ensure_failure_leaves_created)
{
	/*
	 * ret_created is an out-parameter, written only on success: a caller
	 * that logs "created" from a stale value must not be misled by a
	 * failed call. Preset to true, it must stay true.
	 */
	char p[PATH_MAX + 32];
	char *path = (char *)"untouched";
	bool created = true;

	/* The key's directory is a regular file. */
	snprintf(p, sizeof(p), "%s/plain", testutil_dir);
	testutil_write_text(p, "not a directory\n");
	ck_assert_int_eq(keys_ensure(p, "admin", &path, &created), -ENOTDIR);
	ck_assert(created);
	ck_assert_str_eq(path, "untouched");

	/* The key's path is a directory. */
	snprintf(p, sizeof(p), "%s/verifier.key", testutil_dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	ck_assert_int_eq(keys_ensure(testutil_dir, "verifier", &path, &created),
	    -EINVAL);
	ck_assert(created);
	ck_assert_str_eq(path, "untouched");
}
END_TEST

/* --- keyring --------------------------------------------------------- */

START_TEST(test_keyring_from_file)
{
	struct keyring ring = { 0 };
	char *path = NULL;
	char *key = new_key("broker", &path);
	char bad[64];
	size_t len = strlen(key);

	ck_assert_uint_eq(len, 42);
	/* The file ends in a newline; the key presented does not. */
	ck_assert_int_eq(keyring_add_file(&ring, path, ROLE_LAUNCHER), 0);
	ck_assert_uint_eq(keyring_roles(&ring, key, len), ROLE_LAUNCHER);

	/* One character off anywhere: nothing. */
	for (size_t i = 0; i < len; i++) {
		memcpy(bad, key, len);
		bad[i] = bad[i] == 'a' ? 'b' : 'a';
		ck_assert_msg(keyring_roles(&ring, bad, len) == 0,
		    "key with position %zu changed was accepted", i);
	}
	/* Short keys, including the right key cut short: nothing. */
	ck_assert_uint_eq(keyring_roles(&ring, key, len - 1), 0);
	ck_assert_uint_eq(keyring_roles(&ring, key, 31), 0);
	ck_assert_uint_eq(keyring_roles(&ring, key, 4), 0);
	ck_assert_uint_eq(keyring_roles(&ring, "", 0), 0);
	/* A longer key that starts with the right one: nothing. */
	memcpy(bad, key, len);
	bad[len] = 'x';
	ck_assert_uint_eq(keyring_roles(&ring, bad, len + 1), 0);
	ck_assert_uint_eq(keyring_roles(&ring,
			      "crk_00000000000000000000000000000000000000", 42),
	    0);
	free(key);
	free(path);
}
END_TEST

START_TEST(test_keyring_file_line_endings)
{
	const char *key = "crk_operator-chosen-key-0123456789abcdef";
	struct keyring ring = { 0 };
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/crlf.key", testutil_dir);
	testutil_write_text(p, "crk_operator-chosen-key-0123456789abcdef\r\n");
	ck_assert_int_eq(keyring_add_file(&ring, p, ROLE_ADMIN), 0);
	snprintf(p, sizeof(p), "%s/bare.key", testutil_dir);
	testutil_write_text(p, "crk_verifier-key-without-newline-0123456789");
	ck_assert_int_eq(keyring_add_file(&ring, p, ROLE_VERIFIER), 0);
	ck_assert_uint_eq(keyring_roles(&ring, key, strlen(key)), ROLE_ADMIN);
	key = "crk_verifier-key-without-newline-0123456789";
	ck_assert_uint_eq(keyring_roles(&ring, key, strlen(key)),
	    ROLE_VERIFIER);
}
END_TEST

START_TEST(test_keyring_file_errors)
{
	struct keyring ring = { 0 };
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/missing.key", testutil_dir);
	ck_assert_int_eq(keyring_add_file(&ring, p, ROLE_ADMIN), -ENOENT);
	snprintf(p, sizeof(p), "%s/short.key", testutil_dir);
	testutil_write_text(p, "crk_short\n");
	ck_assert_int_eq(keyring_add_file(&ring, p, ROLE_ADMIN), -EINVAL);
	/* 31 characters and a newline stay too short. */
	snprintf(p, sizeof(p), "%s/thirtyone.key", testutil_dir);
	testutil_write_text(p, "0123456789012345678901234567890\n");
	ck_assert_int_eq(keyring_add_file(&ring, p, ROLE_ADMIN), -EINVAL);
	snprintf(p, sizeof(p), "%s/empty.key", testutil_dir);
	testutil_write_text(p, "");
	ck_assert_int_eq(keyring_add_file(&ring, p, ROLE_ADMIN), -EINVAL);
	ck_assert_uint_eq(ring.n, 0);
}
END_TEST

START_TEST(test_keys_read_one_reader)
{
	char p[4200], key[64], why[8192];

	snprintf(p, sizeof(p), "%s/good.key", testutil_dir);
	testutil_write_text(p, "crk_0123456789abcdef0123456789abcdef\r\n");
	ck_assert_int_eq(keys_read(p, key, sizeof(key)), 0);
	ck_assert_str_eq(key, "crk_0123456789abcdef0123456789abcdef");
	ck_assert_int_eq(keys_check(p), 0);
	/* Larger than the caller's buffer: refused, not cut. */
	ck_assert_int_eq(keys_read(p, key, 20), -EFBIG);
	ck_assert_str_eq(key, "");
	/* Whitespace inside is no key. */
	snprintf(p, sizeof(p), "%s/two.key", testutil_dir);
	testutil_write_text(p, "crk_0123456789abcdef 0123456789abcdef\n");
	ck_assert_int_eq(keys_read(p, key, sizeof(key)), -EINVAL);
	snprintf(p, sizeof(p), "%s/missing.key", testutil_dir);
	ck_assert_int_eq(keys_check(p), -ENOENT);
	keys_explain(why, sizeof(why), "launcher_key_file", p, -ENOENT);
	ck_assert_ptr_nonnull(strstr(why, "launcher_key_file "));
	ck_assert_ptr_nonnull(strstr(why, p));
	ck_assert_ptr_nonnull(
	    strstr(why, ": no such file; start cordon-broker"));
	keys_explain(why, sizeof(why), "k", "rel/x.key", -EACCES);
	ck_assert_ptr_nonnull(strstr(why, "k rel/x.key (relative to /"));
	ck_assert_ptr_nonnull(strstr(why, "this user may not read it"));
	keys_explain(why, sizeof(why), "k", "/x.key", -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "k /x.key: not a key"));
}
END_TEST

START_TEST(test_keyring_two_roles)
{
	struct keyring ring = { 0 };
	char *admin = new_key("admin", NULL);
	char *launcher = new_key("launcher", NULL);

	ck_assert_int_eq(keyring_add(&ring, admin, 42, ROLE_ADMIN), 0);
	ck_assert_int_eq(keyring_add(&ring, launcher, 42, ROLE_LAUNCHER), 0);
	ck_assert_uint_eq(keyring_roles(&ring, admin, 42), ROLE_ADMIN);
	ck_assert_uint_eq(keyring_roles(&ring, launcher, 42), ROLE_LAUNCHER);
	/* Neither key grants the other's role. */
	ck_assert_uint_eq(keyring_roles(&ring, admin, 42) & ROLE_LAUNCHER, 0);
	ck_assert_uint_eq(keyring_roles(&ring, launcher, 42) & ROLE_ADMIN, 0);
	/* One key listed with two roles holds both. */
	ck_assert_int_eq(keyring_add(&ring, launcher, 42, ROLE_VERIFIER), 0);
	ck_assert_uint_eq(keyring_roles(&ring, launcher, 42),
	    ROLE_LAUNCHER | ROLE_VERIFIER);
	ck_assert_uint_eq(keyring_roles(&ring, admin, 42), ROLE_ADMIN);
	free(admin);
	free(launcher);
}
END_TEST

START_TEST(test_keyring_short_never_matches)
{
	/* keyring_add refuses short keys; even a ring that held one (built
	 * by hand here) grants nothing to a key under 32 bytes. */
	struct keyring ring = { 0 };
	const char *shortkey = "crk_short";
	unsigned int len = 32;

	ck_assert_int_eq(EVP_Digest(shortkey, strlen(shortkey),
			     ring.keys[0].hash, &len, EVP_sha256(), NULL),
	    1);
	ring.keys[0].roles = ROLE_ADMIN;
	ring.n = 1;
	ck_assert_uint_eq(keyring_roles(&ring, shortkey, strlen(shortkey)), 0);
}
END_TEST

START_TEST(test_keyring_empty)
{
	struct keyring ring = { 0 };
	const char *key = "crk_operator-chosen-key-0123456789abcdef";

	ck_assert_uint_eq(keyring_roles(&ring, key, strlen(key)), 0);
}
END_TEST

START_TEST(test_keyring_limits)
{
	struct keyring ring = { 0 };
	char key[64];

	ck_assert_int_eq(keyring_add(&ring, "0123456789012345678901234567890",
			     31, ROLE_ADMIN),
	    -EINVAL);
	ck_assert_int_eq(keyring_add(&ring, "01234567890123456789012345678901",
			     32, ROLE_ADMIN),
	    0);
	ck_assert_uint_eq(keyring_roles(&ring,
			      "01234567890123456789012345678901", 32),
	    ROLE_ADMIN);
	for (int i = 1; i < KEYRING_MAX; i++) {
		snprintf(key, sizeof(key),
		    "key-number-%02d-padding-padding-pad", i);
		ck_assert_int_eq(keyring_add(&ring, key, strlen(key),
				     ROLE_VERIFIER),
		    0);
	}
	ck_assert_uint_eq(ring.n, KEYRING_MAX);
	ck_assert_int_eq(keyring_add(&ring, "one-too-many-keys-for-the-keyring",
			     33, ROLE_ADMIN),
	    -E2BIG);
	ck_assert_uint_eq(keyring_roles(&ring,
			      "one-too-many-keys-for-the-keyring", 33),
	    0);
	snprintf(key, sizeof(key), "key-number-%02d-padding-padding-pad",
	    KEYRING_MAX - 1);
	ck_assert_uint_eq(keyring_roles(&ring, key, strlen(key)),
	    ROLE_VERIFIER);
}
END_TEST

/* A key known by its hash alone, as sha256sum prints it. */
START_TEST(test_keyring_by_hash)
{
	static const char key[] = "crk_0123456789abcdefghijABCDEFGHIJklmnopqr";
	static const char hex[] =
	    "2a63d052371e1e0577c3b71d704f2cbd728e26048cb8d5c382362e829cd53381";
	struct keyring ring = { 0 };
	char bad[65];

	ck_assert_int_eq(keyring_add_hash(&ring, hex, ROLE_LAUNCHER), 0);
	ck_assert_uint_eq(keyring_roles(&ring, key, strlen(key)),
	    ROLE_LAUNCHER);
	ck_assert_uint_eq(keyring_roles(&ring, key, strlen(key) - 1), 0);
	/* Only the shape sha256sum prints. */
	snprintf(bad, sizeof(bad), "%s", hex);
	bad[0] = (char)(bad[0] >= 'a' ? bad[0] - 'a' + 'A' : 'G');
	ck_assert_int_eq(keyring_add_hash(&ring, bad, ROLE_ADMIN), -EINVAL);
	snprintf(bad, sizeof(bad), "%.63s", hex);
	ck_assert_int_eq(keyring_add_hash(&ring, bad, ROLE_ADMIN), -EINVAL);
	ck_assert_int_eq(keyring_add_hash(&ring, "", ROLE_ADMIN), -EINVAL);
	ck_assert_int_eq(keyring_add_hash(&ring, NULL, ROLE_ADMIN), -EINVAL);
	ck_assert_uint_eq(ring.n, 1);
}
END_TEST

START_TEST(test_role_name)
{
	ck_assert_str_eq(role_name(ROLE_ADMIN), "admin");
	ck_assert_str_eq(role_name(ROLE_LAUNCHER), "launcher");
	ck_assert_str_eq(role_name(ROLE_VERIFIER), "verifier");
	ck_assert_str_eq(role_name(ROLE_HATCH), "hatch");
	ck_assert_ptr_null(role_name(0));
	ck_assert_ptr_null(role_name(ROLE_ADMIN | ROLE_LAUNCHER));
	ck_assert_ptr_null(role_name(1u << ROLES_COUNT));
	/* ROLES_ALL is ROLES_COUNT bits, each with a name of its own. */
	unsigned n = 0;
	for (unsigned bit = 1; bit != 0; bit <<= 1) {
		if (!(ROLES_ALL & bit)) {
			ck_assert_ptr_null(role_name(bit));
			continue;
		}
		ck_assert_ptr_nonnull(role_name(bit));
		for (unsigned other = 1; other < bit; other <<= 1)
			if (ROLES_ALL & other)
				ck_assert_str_ne(role_name(bit),
				    role_name(other));
		n++;
	}
	ck_assert_uint_eq(n, ROLES_COUNT);
	ck_assert_ptr_null(role_name(~0u));
}
END_TEST

static Suite *
keys_suite(void)
{
	Suite *s = suite_create("keys");
	TCase *tc;

	tc = tcase_create("ensure");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "keys");
	tcase_add_checked_fixture(tc, testutil_dir_setup, NULL);
	tcase_add_test(tc, test_ensure_writes_key);
	tcase_add_test(tc, test_ensure_second_call_loads);
	tcase_add_test(tc, test_ensure_keeps_existing_key);
	tcase_add_test(tc, test_ensure_makes_dir);
	tcase_add_test(tc, test_ensure_distinct_keys);
	tcase_add_test(tc, test_ensure_refuses_non_file);
	tcase_add_test(tc, test_ensure_failure_leaves_created);
	suite_add_tcase(s, tc);

	tc = tcase_create("keyring");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "keys");
	tcase_add_checked_fixture(tc, testutil_dir_setup, NULL);
	tcase_add_test(tc, test_keyring_from_file);
	tcase_add_test(tc, test_keyring_file_line_endings);
	tcase_add_test(tc, test_keyring_file_errors);
	tcase_add_test(tc, test_keyring_two_roles);
	tcase_add_test(tc, test_keys_read_one_reader);
	tcase_add_test(tc, test_keyring_empty);
	tcase_add_test(tc, test_keyring_short_never_matches);
	tcase_add_test(tc, test_keyring_limits);
	tcase_add_test(tc, test_keyring_by_hash);
	tcase_add_test(tc, test_role_name);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(keys_suite());
}
