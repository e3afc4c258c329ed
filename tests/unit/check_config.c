/*
 * Configuration files: a good file sets every kind of option and leaves
 * the rest alone; anything wrong (an unknown key, a wrong type, a value out
 * of range, bad JSON, a duplicate key, a root that is not an object, a file
 * missing or over 1 MiB) is refused with one line that says where and
 * which key. Then the directory defaults, from systemd's variables or
 * ./var/<svc>, and their creation as absolute paths.
 */
#include "config.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A program's configuration as the services lay theirs out. */
struct test_config {
	struct config_common common;
	long long workers;
	bool verbose;
	struct config_strings hosts;
	char *name;
	struct config_strings roots;
};

static const struct config_option test_options[] = {
	CONFIG_COMMON_OPTIONS(offsetof(struct test_config, common)),
	{ "workers", CONFIG_INT, offsetof(struct test_config, workers), 1, 64 },
	{ "verbose", CONFIG_BOOL, offsetof(struct test_config, verbose), 0, 0 },
	{ "hosts", CONFIG_STRINGS, offsetof(struct test_config, hosts), 0, 0 },
	{ "name", CONFIG_STRING, offsetof(struct test_config, name), 0, 0 },
	{ "roots", CONFIG_PATHS, offsetof(struct test_config, roots), 0, 0 },
};

#define NOPTS (sizeof(test_options) / sizeof(test_options[0]))

static char cfgpath[PATH_MAX + 32];
static struct test_config cfg;
static char err[512];

/* Per test: a fresh directory, defaults in cfg, no systemd variables. */
static void
test_setup(void)
{
	testutil_dir_setup();
	snprintf(cfgpath, sizeof(cfgpath), "%s/test.json", testutil_dir);
	cfg = (struct test_config){ 0 };
	cfg.workers = 4;
	cfg.common.log_level = LEVEL_INFO;
	ck_assert_int_eq(config_set_string(&cfg.name, "default-name"), 0);
	memset(err, 0, sizeof(err));
	unsetenv("STATE_DIRECTORY");
	unsetenv("RUNTIME_DIRECTORY");
	unsetenv("LOGS_DIRECTORY");
}

static void
test_teardown(void)
{
	config_common_free(&cfg.common);
	config_strings_free(&cfg.hosts);
	config_strings_free(&cfg.roots);
	free(cfg.name);
	cfg.name = NULL;
}

static int
load(const char *text)
{
	testutil_write_text(cfgpath, text);
	return config_load(cfgpath, test_options, NOPTS, &cfg, err,
	    sizeof(err));
}

/* err is one line naming the file and containing each of the words. */
static void
assert_err_has(const char *w1, const char *w2)
{
	ck_assert_msg(strstr(err, cfgpath) != NULL, "error \"%s\" lacks %s",
	    err, cfgpath);
	ck_assert_msg(strchr(err, '\n') == NULL, "error \"%s\" is not one line",
	    err);
	ck_assert_msg(strstr(err, w1) != NULL, "error \"%s\" lacks %s", err,
	    w1);
	if (w2 != NULL)
		ck_assert_msg(strstr(err, w2) != NULL, "error \"%s\" lacks %s",
		    err, w2);
}

/* --- loading --------------------------------------------------------- */

START_TEST(test_good_file)
{
	ck_assert_int_eq(load("{\n"
			      "  \"listen\": \"127.0.0.1:9000\",\n"
			      "  \"state_dir\": \"/srv/state\",\n"
			      "  \"runtime_dir\": \"/run/x\",\n"
			      "  \"logs_dir\": \"/var/log/x\",\n"
			      "  \"log_level\": \"debug\",\n"
			      "  \"workers\": 16,\n"
			      "  \"verbose\": true,\n"
			      "  \"hosts\": [\"a.example\", \"b.example\"],\n"
			      "  \"name\": \"broker-1\"\n"
			      "}\n"),
	    0);
	ck_assert_str_eq(cfg.common.listen, "127.0.0.1:9000");
	ck_assert_str_eq(cfg.common.state_dir, "/srv/state");
	ck_assert_str_eq(cfg.common.runtime_dir, "/run/x");
	ck_assert_str_eq(cfg.common.logs_dir, "/var/log/x");
	ck_assert_int_eq(cfg.common.log_level, LEVEL_DEBUG);
	ck_assert_int_eq(cfg.workers, 16);
	ck_assert(cfg.verbose);
	ck_assert_uint_eq(cfg.hosts.n, 2);
	ck_assert_str_eq(cfg.hosts.v[0], "a.example");
	ck_assert_str_eq(cfg.hosts.v[1], "b.example");
	ck_assert_str_eq(cfg.name, "broker-1");
}
END_TEST

START_TEST(test_absent_keys_keep_defaults)
{
	ck_assert_int_eq(load("{\"verbose\": false}"), 0);
	ck_assert(!cfg.verbose);
	ck_assert_int_eq(cfg.workers, 4);
	ck_assert_str_eq(cfg.name, "default-name");
	ck_assert_ptr_null(cfg.common.listen);
	ck_assert_uint_eq(cfg.hosts.n, 0);
	ck_assert_int_eq(cfg.common.log_level, LEVEL_INFO);
	/* An empty object changes nothing. */
	ck_assert_int_eq(load("{}"), 0);
	ck_assert_int_eq(cfg.workers, 4);
}
END_TEST

START_TEST(test_second_load_replaces)
{
	ck_assert_int_eq(load("{\"hosts\": [\"a\", \"b\", \"c\"], "
			      "\"name\": \"one\"}"),
	    0);
	ck_assert_int_eq(load("{\"hosts\": [], \"name\": \"two\"}"), 0);
	ck_assert_uint_eq(cfg.hosts.n, 0);
	ck_assert_str_eq(cfg.name, "two");
	ck_assert_int_eq(load("{\"hosts\": [\"z\"]}"), 0);
	ck_assert_uint_eq(cfg.hosts.n, 1);
	ck_assert_str_eq(cfg.hosts.v[0], "z");
}
END_TEST

START_TEST(test_int_bounds_inclusive)
{
	ck_assert_int_eq(load("{\"workers\": 1}"), 0);
	ck_assert_int_eq(cfg.workers, 1);
	ck_assert_int_eq(load("{\"workers\": 64}"), 0);
	ck_assert_int_eq(cfg.workers, 64);
}
END_TEST

START_TEST(test_every_level)
{
	static const struct {
		const char *name;
		enum log_level level;
	} rows[] = { { "debug", LEVEL_DEBUG }, { "info", LEVEL_INFO },
		{ "warn", LEVEL_WARN }, { "error", LEVEL_ERROR } };
	char text[64];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(text, sizeof(text), "{\"log_level\": \"%s\"}",
		    rows[i].name);
		ck_assert_int_eq(load(text), 0);
		ck_assert_int_eq(cfg.common.log_level, rows[i].level);
	}
}
END_TEST

/* --- refusals -------------------------------------------------------- */

START_TEST(test_unknown_key)
{
	ck_assert_int_eq(load("{\"workers\": 2, \"wrokers\": 3}"), -EINVAL);
	assert_err_has("\"wrokers\"", "unknown");
	ck_assert_int_eq(load("{\"Listen\": \"127.0.0.1:1\"}"), -EINVAL);
	assert_err_has("\"Listen\"", "unknown");
}
END_TEST

START_TEST(test_wrong_types_name_key)
{
	static const struct {
		const char *text, *key;
	} rows[] = {
		{ "{\"workers\": \"2\"}", "\"workers\"" },
		{ "{\"workers\": 2.5}", "\"workers\"" },
		{ "{\"workers\": true}", "\"workers\"" },
		{ "{\"workers\": null}", "\"workers\"" },
		{ "{\"verbose\": 1}", "\"verbose\"" },
		{ "{\"verbose\": \"true\"}", "\"verbose\"" },
		{ "{\"hosts\": \"a\"}", "\"hosts\"" },
		{ "{\"hosts\": [\"a\", 1]}", "\"hosts\"" },
		{ "{\"hosts\": [\"\"]}", "\"hosts\"" },
		{ "{\"name\": 5}", "\"name\"" },
		{ "{\"name\": \"\"}", "\"name\"" },
		{ "{\"name\": [\"x\"]}", "\"name\"" },
		{ "{\"listen\": {}}", "\"listen\"" },
		{ "{\"log_level\": \"loud\"}", "\"log_level\"" },
		{ "{\"log_level\": 1}", "\"log_level\"" },
		{ "{\"log_level\": \"INFO\"}", "\"log_level\"" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int r = load(rows[i].text);

		ck_assert_msg(r == -EINVAL, "%s gave %d", rows[i].text, r);
		assert_err_has(rows[i].key, NULL);
	}
	/* A NUL inside a string is refused too (by the parser, at its
	 * position), so no C string is silently cut short. */
	ck_assert_int_eq(load("{\"name\": \"a\\u0000b\"}"), -EINVAL);
	assert_err_has("column", NULL);
	ck_assert_int_eq(load("{\"hosts\": [\"a\\u0000b\"]}"), -EINVAL);
	assert_err_has("column", NULL);
	/* Nothing took effect. */
	ck_assert_int_eq(cfg.workers, 4);
	ck_assert(!cfg.verbose);
	ck_assert_uint_eq(cfg.hosts.n, 0);
	ck_assert_str_eq(cfg.name, "default-name");
	ck_assert_int_eq(cfg.common.log_level, LEVEL_INFO);
}
END_TEST

START_TEST(test_int_out_of_range)
{
	ck_assert_int_eq(load("{\"workers\": 0}"), -EINVAL);
	assert_err_has("\"workers\"", "0");
	ck_assert_int_eq(load("{\"workers\": 65}"), -EINVAL);
	assert_err_has("\"workers\"", "65");
	ck_assert_int_eq(load("{\"workers\": -1}"), -EINVAL);
	assert_err_has("\"workers\"", "1..64");
	ck_assert_int_eq(load("{\"workers\": 9223372036854775807}"), -EINVAL);
	assert_err_has("\"workers\"", NULL);
	ck_assert_int_eq(cfg.workers, 4);
	/* Too big for any integer: refused by the parser. */
	ck_assert_int_eq(load("{\"workers\": 99999999999999999999}"), -EINVAL);
	ck_assert_int_eq(cfg.workers, 4);
}
END_TEST

START_TEST(test_syntax_error_position)
{
	ck_assert_int_eq(load("{\n"
			      "  \"workers\": 2,\n"
			      "  \"verbose\": tru\n"
			      "}\n"),
	    -EINVAL);
	assert_err_has("line 3", "column");
	ck_assert_int_eq(cfg.workers, 4);

	ck_assert_int_eq(load("{\"workers\": 2,}"), -EINVAL);
	assert_err_has("line 1", "column");
	ck_assert_int_eq(load(""), -EINVAL);
	assert_err_has("line", NULL);
	ck_assert_int_eq(load("{\"workers\": 2} {}"), -EINVAL);
	assert_err_has("line 1", "column");
}
END_TEST

START_TEST(test_duplicate_key)
{
	ck_assert_int_eq(load("{\"workers\": 2, \"workers\": 3}"), -EINVAL);
	assert_err_has("duplicate", "workers");
	ck_assert_int_eq(cfg.workers, 4);
}
END_TEST

START_TEST(test_root_not_object)
{
	static const char *const roots[] = { "[]", "[{\"workers\": 2}]", "42",
		"\"x\"", "null", "true" };

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		int r = load(roots[i]);

		ck_assert_msg(r == -EINVAL, "%s gave %d", roots[i], r);
		assert_err_has("", NULL);
	}
	ck_assert_int_eq(load("[1]"), -EINVAL);
	assert_err_has("object", NULL);
}
END_TEST

START_TEST(test_missing_file)
{
	ck_assert_int_eq(config_load(cfgpath, test_options, NOPTS, &cfg, err,
			     sizeof(err)),
	    -ENOENT);
	assert_err_has("No such file", NULL);
}
END_TEST

START_TEST(test_directory_refused)
{
	ck_assert_int_eq(config_load(testutil_dir, test_options, NOPTS, &cfg,
			     err, sizeof(err)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, testutil_dir));
}
END_TEST

/* A valid file of exactly size bytes: {"name":"xxx...x"} padded. */
static char *
sized_config(size_t size)
{
	static const char head[] = "{\"name\":\"";
	static const char tail[] = "\"}";
	char *text = malloc(size + 1);

	ck_assert_ptr_nonnull(text);
	memcpy(text, head, strlen(head));
	memset(text + strlen(head), 'x', size - strlen(head) - strlen(tail));
	memcpy(text + size - strlen(tail), tail, strlen(tail));
	text[size] = '\0';
	return text;
}

START_TEST(test_size_cap)
{
	char *text = sized_config(CONFIG_MAX_BYTES);

	ck_assert_int_eq(load(text), 0);
	ck_assert_uint_eq(strlen(cfg.name), CONFIG_MAX_BYTES - 11);
	free(text);

	text = sized_config(CONFIG_MAX_BYTES + 1);
	ck_assert_int_lt(load(text), 0);
	ck_assert_int_eq(load(text), -EFBIG);
	assert_err_has("1 MiB", NULL);
	ck_assert_uint_eq(strlen(cfg.name), CONFIG_MAX_BYTES - 11);
	free(text);
}
END_TEST

START_TEST(test_small_error_buffer)
{
	char small[16];

	testutil_write_text(cfgpath, "{\"a_rather_long_unknown_key_name\": 1}");
	memset(small, 'Z', sizeof(small));
	ck_assert_int_eq(config_load(cfgpath, test_options, NOPTS, &cfg, small,
			     sizeof(small)),
	    -EINVAL);
	ck_assert_ptr_nonnull(memchr(small, '\0', sizeof(small)));
}
END_TEST

START_TEST(test_set_string)
{
	char *s = NULL;
	const char *src = "value";

	ck_assert_int_eq(config_set_string(&s, src), 0);
	ck_assert_str_eq(s, "value");
	ck_assert_ptr_ne(s, src);
	ck_assert_int_eq(config_set_string(&s, "other"), 0);
	ck_assert_str_eq(s, "other");
	ck_assert_int_eq(config_set_string(&s, NULL), 0);
	ck_assert_ptr_null(s);
}
END_TEST

/* --- paths relative to the file ------------------------------------ */

/* A relative path in a file is the file's directory's, whatever the
 * current directory: loaded from / and from /tmp, the same paths. */
START_TEST(test_relative_paths_are_the_files)
{
	char dir[PATH_MAX], want[PATH_MAX + 64], cwd[PATH_MAX];
	const char *from[] = { "/", "/tmp" };

	ck_assert_ptr_nonnull(realpath(testutil_dir, dir));
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	for (size_t i = 0; i < 2; i++) {
		ck_assert_int_eq(chdir(from[i]), 0);
		ck_assert_int_eq(load("{\"state_dir\": \"st\", "
				      "\"runtime_dir\": \"./run/x\", "
				      "\"logs_dir\": \"/abs/log\", "
				      "\"hosts\": [\"a.example\"], "
				      "\"roots\": [\"in\", \"/abs\", \".\"], "
				      "\"name\": \"rel\"}"),
		    0);
		snprintf(want, sizeof(want), "%s/st", dir);
		ck_assert_str_eq(cfg.common.state_dir, want);
		snprintf(want, sizeof(want), "%s/run/x", dir);
		ck_assert_str_eq(cfg.common.runtime_dir, want);
		ck_assert_str_eq(cfg.common.logs_dir, "/abs/log");
		snprintf(want, sizeof(want), "%s/in", dir);
		ck_assert_uint_eq(cfg.roots.n, 3);
		ck_assert_str_eq(cfg.roots.v[0], want);
		ck_assert_str_eq(cfg.roots.v[1], "/abs");
		ck_assert_str_eq(cfg.roots.v[2], dir);
		/* Strings that are not paths stay as written. */
		ck_assert_str_eq(cfg.hosts.v[0], "a.example");
		ck_assert_str_eq(cfg.name, "rel");
	}
	/* The file named relatively: its directory as it was then. */
	ck_assert_int_eq(chdir(testutil_dir), 0);
	ck_assert_int_eq(config_load("test.json", test_options, NOPTS, &cfg,
			     err, sizeof(err)),
	    0);
	ck_assert_int_eq(chdir("/"), 0);
	snprintf(want, sizeof(want), "%s/st", dir);
	ck_assert_str_eq(cfg.common.state_dir, want);
	ck_assert_int_eq(chdir(cwd), 0);
}
END_TEST

/* --- directories ----------------------------------------------------- */

START_TEST(test_default_dirs_fallback)
{
	struct config_common *c = &cfg.common;

	ck_assert_int_eq(config_default_dirs(c, "broker"), 0);
	ck_assert_str_eq(c->state_dir, "./var/broker");
	ck_assert_str_eq(c->runtime_dir, "./var/broker/run");
	ck_assert_str_eq(c->logs_dir, "./var/broker/log");
}
END_TEST

START_TEST(test_default_dirs_systemd)
{
	struct config_common *c = &cfg.common;

	setenv("STATE_DIRECTORY", "/var/lib/cordon-broker:/var/lib/other", 1);
	setenv("RUNTIME_DIRECTORY", "/run/cordon-broker", 1);
	setenv("LOGS_DIRECTORY", "/var/log/cordon-broker:/var/log/b", 1);
	ck_assert_int_eq(config_default_dirs(c, "broker"), 0);
	ck_assert_str_eq(c->state_dir, "/var/lib/cordon-broker");
	ck_assert_str_eq(c->runtime_dir, "/run/cordon-broker");
	ck_assert_str_eq(c->logs_dir, "/var/log/cordon-broker");
}
END_TEST

START_TEST(test_default_dirs_state_only)
{
	struct config_common *c = &cfg.common;

	setenv("STATE_DIRECTORY", "/var/lib/cordon-proxy", 1);
	ck_assert_int_eq(config_default_dirs(c, "proxy"), 0);
	ck_assert_str_eq(c->state_dir, "/var/lib/cordon-proxy");
	ck_assert_str_eq(c->runtime_dir, "/var/lib/cordon-proxy/run");
	ck_assert_str_eq(c->logs_dir, "/var/lib/cordon-proxy/log");
}
END_TEST

START_TEST(test_default_dirs_runtime_logs_only)
{
	struct config_common *c = &cfg.common;

	setenv("RUNTIME_DIRECTORY", "/run/h:/run/h2", 1);
	setenv("LOGS_DIRECTORY", "/var/log/h", 1);
	ck_assert_int_eq(config_default_dirs(c, "hatch"), 0);
	ck_assert_str_eq(c->state_dir, "./var/hatch");
	ck_assert_str_eq(c->runtime_dir, "/run/h");
	ck_assert_str_eq(c->logs_dir, "/var/log/h");
}
END_TEST

START_TEST(test_default_dirs_empty_env_ignored)
{
	struct config_common *c = &cfg.common;

	setenv("STATE_DIRECTORY", "", 1);
	ck_assert_int_eq(config_default_dirs(c, "broker"), 0);
	ck_assert_str_eq(c->state_dir, "./var/broker");
	ck_assert_str_eq(c->runtime_dir, "./var/broker/run");
}
END_TEST

START_TEST(test_default_dirs_empty_first_entry)
{
	struct config_common *c = &cfg.common;

	/*
	 * ":/x" names no directory first: the defaults apply, rather than
	 * an empty path that would put state in the working directory.
	 */
	setenv("STATE_DIRECTORY", ":/x", 1);
	setenv("LOGS_DIRECTORY", ":/y", 1);
	ck_assert_int_eq(config_default_dirs(c, "broker"), 0);
	ck_assert_str_eq(c->state_dir, "./var/broker");
	ck_assert_str_eq(c->runtime_dir, "./var/broker/run");
	ck_assert_str_eq(c->logs_dir, "./var/broker/log");
}
END_TEST

START_TEST(test_default_dirs_file_wins)
{
	struct config_common *c = &cfg.common;

	setenv("STATE_DIRECTORY", "/from/env", 1);
	setenv("LOGS_DIRECTORY", "/logs/env", 1);
	ck_assert_int_eq(load("{\"state_dir\": \"/from/file\", "
			      "\"logs_dir\": \"/logs/file\"}"),
	    0);
	ck_assert_int_eq(config_default_dirs(c, "broker"), 0);
	ck_assert_str_eq(c->state_dir, "/from/file");
	ck_assert_str_eq(c->runtime_dir, "/from/file/run");
	ck_assert_str_eq(c->logs_dir, "/logs/file");
}
END_TEST

START_TEST(test_make_dirs)
{
	struct config_common *c = &cfg.common;
	const char *failed = NULL;
	char real[PATH_MAX], want[PATH_MAX + 32];
	struct stat st;
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(cwd, 0);
	ck_assert_ptr_nonnull(realpath(testutil_dir, real));
	ck_assert_int_eq(chdir(testutil_dir), 0);
	ck_assert_int_eq(config_default_dirs(c, "svc"), 0);
	ck_assert_int_eq(config_make_dirs(c, &failed), 0);
	ck_assert_int_eq(fchdir(cwd), 0);
	close(cwd);
	ck_assert_ptr_null(failed);

	snprintf(want, sizeof(want), "%s/var/svc", real);
	ck_assert_str_eq(c->state_dir, want);
	snprintf(want, sizeof(want), "%s/var/svc/run", real);
	ck_assert_str_eq(c->runtime_dir, want);
	snprintf(want, sizeof(want), "%s/var/svc/log", real);
	ck_assert_str_eq(c->logs_dir, want);
	const char *const dirs[] = { c->state_dir, c->runtime_dir,
		c->logs_dir };
	for (size_t i = 0; i < 3; i++) {
		ck_assert_int_eq(stat(dirs[i], &st), 0);
		ck_assert(S_ISDIR(st.st_mode));
		ck_assert_uint_eq(st.st_mode & 07777, 0700);
	}
	/* Again, on existing directories. */
	ck_assert_int_eq(config_make_dirs(c, &failed), 0);
}
END_TEST

START_TEST(test_make_dirs_failure_names_path)
{
	struct config_common *c = &cfg.common;
	char p[PATH_MAX + 32];
	const char *failed = NULL;
	FILE *f;

	snprintf(p, sizeof(p), "%s/file", testutil_dir);
	f = fopen(p, "we");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/state", testutil_dir);
	ck_assert_int_eq(config_set_string(&c->state_dir, p), 0);
	snprintf(p, sizeof(p), "%s/file/run", testutil_dir);
	ck_assert_int_eq(config_set_string(&c->runtime_dir, p), 0);
	snprintf(p, sizeof(p), "%s/logs", testutil_dir);
	ck_assert_int_eq(config_set_string(&c->logs_dir, p), 0);
	ck_assert_int_eq(config_make_dirs(c, &failed), -ENOTDIR);
	ck_assert_ptr_nonnull(failed);
	snprintf(p, sizeof(p), "%s/file/run", testutil_dir);
	ck_assert_str_eq(failed, p);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("load");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "config");
	tcase_add_checked_fixture(tc, test_setup, test_teardown);
	tcase_add_test(tc, test_good_file);
	tcase_add_test(tc, test_absent_keys_keep_defaults);
	tcase_add_test(tc, test_second_load_replaces);
	tcase_add_test(tc, test_int_bounds_inclusive);
	tcase_add_test(tc, test_every_level);
	tcase_add_test(tc, test_set_string);
	tcase_add_test(tc, test_relative_paths_are_the_files);
	suite_add_tcase(s, tc);

	tc = tcase_create("refuse");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "config");
	tcase_add_checked_fixture(tc, test_setup, test_teardown);
	tcase_add_test(tc, test_unknown_key);
	tcase_add_test(tc, test_wrong_types_name_key);
	tcase_add_test(tc, test_int_out_of_range);
	tcase_add_test(tc, test_syntax_error_position);
	tcase_add_test(tc, test_duplicate_key);
	tcase_add_test(tc, test_root_not_object);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_directory_refused);
	tcase_add_test(tc, test_size_cap);
	tcase_add_test(tc, test_small_error_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("dirs");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "config");
	tcase_add_checked_fixture(tc, test_setup, test_teardown);
	tcase_add_test(tc, test_default_dirs_fallback);
	tcase_add_test(tc, test_default_dirs_systemd);
	tcase_add_test(tc, test_default_dirs_state_only);
	tcase_add_test(tc, test_default_dirs_runtime_logs_only);
	tcase_add_test(tc, test_default_dirs_empty_env_ignored);
	tcase_add_test(tc, test_default_dirs_empty_first_entry);
	tcase_add_test(tc, test_default_dirs_file_wins);
	tcase_add_test(tc, test_make_dirs);
	tcase_add_test(tc, test_make_dirs_failure_names_path);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(config_suite());
}
