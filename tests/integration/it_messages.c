/*
 * The messages a new user meets, from the real binaries run as a user
 * runs them: from a directory that is not the source tree, as a user who
 * is not root, with a key file that is missing or is not a key. Each test
 * asserts the one line on stderr (what is wrong, which file or setting,
 * what to do) and the exit status: 78 (EX_CONFIG) for every key file a
 * program cannot use, at start and under -n alike.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char out[1 << 22], err[65536];

static int
run(char *const argv[])
{
	out[0] = err[0] = '\0';
	return harness_run(argv, out, sizeof(out), err, sizeof(err));
}

static void
assert_one_line(void)
{
	char *nl = strchr(err, '\n');

	ck_assert_msg(nl != NULL && nl[1] == '\0', "not one line: %s", err);
}

static const char *
write_config(const char *name, const char *text)
{
	static char path[2][512];
	static int k;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s/%s", harness_tmpdir(), name);
	harness_write_file(path[k], text);
	return path[k];
}

static char *
bin(const char *prog)
{
	static char path[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s", harness_bin(prog));
	return path[k];
}

START_TEST(proxy_check_missing_key)
{
	const char *cfg = write_config("proxy.json",
	    "{\"launcher_key_file\": \"/nonexistent/launcher.key\"}");
	char *argv[] = { bin("cordon-proxy"), "-n", "--config", (char *)cfg,
		NULL };

	ck_assert_int_eq(run(argv), 78);
	ck_assert_ptr_null(strstr(out, "configuration ok"));
	ck_assert_msg(strstr(err,
			  "cordon-proxy: launcher_key_file "
			  "/nonexistent/launcher.key: no such file; start "
			  "cordon-broker first") != NULL,
	    "%s", err);
	assert_one_line();
}
END_TEST

START_TEST(proxy_not_a_key)
{
	char key[512], cfg_text[1024];

	snprintf(key, sizeof(key), "%s/short.key", harness_tmpdir());
	harness_write_file(key, "crk_short\n");
	snprintf(cfg_text, sizeof(cfg_text), "{\"broker_key_file\": \"%s\"}",
	    key);
	const char *cfg = write_config("proxy.json", cfg_text);
	char *check[] = { bin("cordon-proxy"), "-n", "--config", (char *)cfg,
		NULL };
	char *start[] = { bin("cordon-proxy"), "--listen", "127.0.0.1:0",
		"--config", (char *)cfg, NULL };
	char want[700];

	snprintf(want, sizeof(want),
	    "cordon-proxy: broker_key_file %s: not a key", key);
	ck_assert_int_eq(run(check), 78);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	assert_one_line();
	/* Starting says the same, with the same status. */
	ck_assert_int_eq(run(start), 78);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
}
END_TEST

START_TEST(hatch_missing_key)
{
	const char *cfg = write_config("hatch.json",
	    "{\"launcher_key_file\": \"/nonexistent/launcher.key\"}");
	char *check[] = { bin("cordon-hatch"), "-n", "--config", (char *)cfg,
		NULL };
	char *start[] = { bin("cordon-hatch"), "--listen", "127.0.0.1:0",
		"--config", (char *)cfg, NULL };
	const char *want = "cordon-hatch: launcher_key_file "
			   "/nonexistent/launcher.key: no such file;";

	ck_assert_int_eq(run(check), 78);
	ck_assert_ptr_null(strstr(out, "configuration ok"));
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	assert_one_line();
	/* The same status as the proxy's for the same failure. */
	ck_assert_int_eq(run(start), 78);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
}
END_TEST

/* The broker's -n reads the role keys that are there (a missing one is
 * written at start). */
START_TEST(broker_check_reads_its_keys)
{
	char dir[512], key[600], cfg_text[1024], want[700];

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(key, sizeof(key), "%s/admin.key", dir);
	harness_write_file(key, "crk_short\n");
	snprintf(cfg_text, sizeof(cfg_text),
	    "{\"keys_dir\": \"%s\", \"state_dir\": \"%s/state\"}", dir, dir);
	const char *cfg = write_config("broker.json", cfg_text);
	char *argv[] = { bin("cordon-broker"), "-n", "--config", (char *)cfg,
		NULL };

	ck_assert_int_eq(run(argv), 78);
	ck_assert_ptr_null(strstr(out, "configuration ok"));
	snprintf(want, sizeof(want), "cordon-broker: keys_dir %s: not a key",
	    key);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	assert_one_line();
}
END_TEST

/* A relative path in a config file is the file's directory's: each
 * program, started from / and from /tmp, names the same absolute file. */
START_TEST(relative_paths_are_the_config_files)
{
	char dir[512], real[4096], key[4200], want[4400], cfg[4200];
	const char *from[] = { "/", "/tmp" };
	struct {
		const char *prog, *sub, *text, *pre, *post;
	} c[] = {
		{ "cordon-proxy", NULL,
		    "{\"launcher_key_file\": \"keys/launcher.key\"}",
		    "cordon-proxy: launcher_key_file ",
		    "/keys/launcher.key: no such file" },
		{ "cordon-hatch", NULL,
		    "{\"launcher_key_file\": \"./keys/launcher.key\"}",
		    "cordon-hatch: launcher_key_file ",
		    "/keys/launcher.key: no such file" },
		{ "cordon", "serve",
		    "{\"launcher_key_file\": \"keys/launcher.key\"}",
		    "cordon serve: launcher_key_file ",
		    "/keys/launcher.key: no such file" },
		{ "cordon-broker", NULL,
		    "{\"keys_dir\": \"bkeys\", \"state_dir\": \"bstate\"}",
		    "cordon-broker: keys_dir ", "/bkeys/admin.key: not a key" },
	};

	snprintf(dir, sizeof(dir), "%s/conf", harness_tmpdir());
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_ptr_nonnull(realpath(dir, real));
	snprintf(key, sizeof(key), "%s/bkeys", real);
	ck_assert_int_eq(mkdir(key, 0700), 0);
	snprintf(key, sizeof(key), "%s/bkeys/admin.key", real);
	harness_write_file(key, "crk_short\n");
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(cfg, sizeof(cfg), "%s/%zu.json", real, i);
		harness_write_file(cfg, c[i].text);
		snprintf(want, sizeof(want), "%s%s%s", c[i].pre, real,
		    c[i].post);
		for (size_t f = 0; f < 2; f++) {
			char *argv[] = { "/bin/sh", "-c",
				"cd \"$0\" && exec \"$@\"", (char *)from[f],
				bin(c[i].prog), (char *)(c[i].sub ?: "-n"),
				"-n", "--config", cfg, NULL };

			if (c[i].sub == NULL)
				memmove(argv + 6, argv + 7, 3 * sizeof(char *));
			ck_assert_int_eq(run(argv), 78);
			ck_assert_msg(strstr(err, want) != NULL,
			    "%s from %s: %s (want %s)", c[i].prog, from[f], err,
			    want);
		}
	}
}
END_TEST

/* cordon run without its key says so and makes nothing on disk: not the
 * state directory, nor its run/ and log/. */
START_TEST(run_without_key_makes_nothing)
{
	char state[512], key[512], text[1400];
	struct stat sb;

	snprintf(state, sizeof(state), "%s/never-state", harness_tmpdir());
	snprintf(key, sizeof(key), "%s/nokeys/launcher.key", harness_tmpdir());
	snprintf(text, sizeof(text),
	    "{\"state_dir\": \"%s\", \"launcher_key_file\": \"%s\"}", state,
	    key);
	const char *cfg = write_config("nokey.json", text);
	char *argv[] = { bin("cordon"), "run", "--config", (char *)cfg,
		"--manifest", "m", "--", "/bin/true", NULL };
	char want[700];

	ck_assert_int_eq(run(argv), 78);
	snprintf(want, sizeof(want), "cordon run: launcher_key_file %s: ", key);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	ck_assert_msg(stat(state, &sb) < 0 && errno == ENOENT,
	    "%s was made before the key was read", state);
}
END_TEST

/* cordon serve -n reads the keys it is configured with. */
START_TEST(serve_check_missing_key)
{
	const char *cfg = write_config("serve.json",
	    "{\"launcher_key_file\": \"/nonexistent/launcher.key\"}");
	char *argv[] = { bin("cordon"), "serve", "-n", "--config", (char *)cfg,
		NULL };

	ck_assert_int_eq(run(argv), 78);
	ck_assert_ptr_null(strstr(out, "configuration ok"));
	ck_assert_msg(strstr(err,
			  "cordon serve: launcher_key_file "
			  "/nonexistent/launcher.key: no such file;") != NULL,
	    "%s", err);
	assert_one_line();
}
END_TEST

/* cordon serve -n names a callback_allow entry it could never match. */
START_TEST(serve_check_bad_callback_allow)
{
	const char *cfg = write_config("serve-allow.json",
	    "{\"callback_allow\": [\"hooks.internal\", \"ftp://x/\"]}");
	char *argv[] = { bin("cordon"), "serve", "-n", "--config", (char *)cfg,
		NULL };

	ck_assert_int_eq(run(argv), 78);
	ck_assert_msg(strstr(err,
			  "cordon serve: callback_allow[1] \"ftp://x/\" is "
			  "neither a host[:port] nor an "
			  "http://host[:port][/path] prefix") != NULL,
	    "%s", err);
	assert_one_line();
}
END_TEST

/* A source tree of its own: <tmp>/top with deploy/quickstart.sh and a
 * copy of cordon at build/bin/cordon, var/launcher.json written when
 * config is not NULL. The copy's path; top in top (the directory a run
 * of harness_run starts in is another). */
static const char *
fake_tree(const char *config, char *top, size_t len)
{
	static char copy[600];
	char path[600], buf[65536];
	size_t n;

	snprintf(top, len, "%s/top", harness_tmpdir());
	const char *dirs[] = { "", "/build", "/build/bin", "/deploy", "/var" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", top, dirs[i]);
		ck_assert_int_eq(mkdir(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/deploy/quickstart.sh", top);
	harness_write_file(path, "#!/bin/sh\n");
	if (config != NULL) {
		snprintf(path, sizeof(path), "%s/var/launcher.json", top);
		harness_write_file(path, config);
	}
	snprintf(copy, sizeof(copy), "%s/build/bin/cordon", top);
	FILE *in = fopen(harness_bin("cordon"), "rbe");
	FILE *o = fopen(copy, "wbe");
	ck_assert(in != NULL && o != NULL);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		ck_assert_uint_eq(fwrite(buf, 1, n, o), n);
	fclose(in);
	ck_assert_int_eq(fclose(o), 0);
	ck_assert_int_eq(chmod(copy, 0755), 0);
	return copy;
}

/* cordon run with no --config, from a directory that is not the tree's:
 * no file is found there, and the message names every place it looked
 * and the flag. */
START_TEST(run_without_config_says_where_it_looked)
{
	char top[512], want[1600];
	const char *copy = fake_tree(NULL, top, sizeof(top));
	char *argv[] = { (char *)copy, "run", "--manifest", "m", "--",
		"/bin/true", NULL };

	/* This machine's own installed configuration would be found. */
	if (access("/etc/cordon/launcher.json", F_OK) == 0)
		return;
	unsetenv("CORDON_CONFIG");
	ck_assert_int_eq(run(argv), 78);
	snprintf(want, sizeof(want),
	    "cordon run: no configuration: none of $CORDON_CONFIG (not set), "
	    "%s/var/launcher.json (./deploy/quickstart.sh writes it), "
	    "/etc/cordon/launcher.json is there; give --config FILE",
	    top);
	ck_assert_msg(strstr(err, want) != NULL, "want %s in %s", want, err);
	assert_one_line();
}
END_TEST

/* The tree's var/launcher.json is found from any directory, and what it
 * leaves unset is the tree's too (here the key), not the directory's. */
START_TEST(run_from_anywhere_finds_the_trees_config)
{
	char top[512], cfg[1200], want[1200], state[700];
	struct stat sb;

	const char *copy = fake_tree(NULL, top, sizeof(top));
	char *argv[] = { (char *)copy, "run", "--manifest", "m", "--",
		"/bin/true", NULL };

	snprintf(cfg, sizeof(cfg), "{\"state_dir\": \"%s/var/mine\"}", top);
	snprintf(state, sizeof(state), "%s/var/launcher.json", top);
	harness_write_file(state, cfg);

	unsetenv("CORDON_CONFIG");
	ck_assert_int_eq(run(argv), 78);
	snprintf(want, sizeof(want),
	    "cordon run: launcher_key_file %s/var/broker/keys/launcher.key: "
	    "no such file; start cordon-broker",
	    top);
	ck_assert_msg(strstr(err, want) != NULL, "want %s in %s", want, err);
	/* Nothing made without the key (the state directory neither). */
	snprintf(state, sizeof(state), "%s/var/mine", top);
	ck_assert_msg(stat(state, &sb) < 0, "%s made without the key", state);
	assert_one_line();
	/* The file is the one read: a key it must not hold is named. */
	snprintf(state, sizeof(state), "%s/var/launcher.json", top);
	harness_write_file(state, "{\"not_a_key\": 1}");
	ck_assert_int_eq(run(argv), 78);
	snprintf(want, sizeof(want), "config %s: unknown key \"not_a_key\"",
	    state);
	ck_assert_msg(strstr(err, want) != NULL, "want %s in %s", want, err);
}
END_TEST

/* $CORDON_CONFIG names the file when --config does not. */
START_TEST(cordon_config_names_the_file)
{
	char text[700];
	/* Its own state directory: the tree's is a person's. */
	snprintf(text, sizeof(text),
	    "{\"launcher_key_file\": \"/nonexistent/env.key\", "
	    "\"state_dir\": \"%s/state\"}",
	    harness_tmpdir());
	const char *cfg = write_config("env.json", text);
	char *argv[] = { bin("cordon"), "run", "--manifest", "m", "--",
		"/bin/true", NULL };

	setenv("CORDON_CONFIG", cfg, 1);
	int status = run(argv);
	unsetenv("CORDON_CONFIG");
	ck_assert_int_eq(status, 78);
	ck_assert_msg(strstr(err,
			  "cordon run: launcher_key_file /nonexistent/env.key: "
			  "no such file") != NULL,
	    "%s", err);
}
END_TEST

/* A user who is not root is told so before anything is made: no
 * "Permission denied" on a state directory. */
START_TEST(run_not_root)
{
	char *argv[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
		"--clear-groups", bin("cordon"), "run", "--manifest", "m", "--",
		"/bin/true", NULL };

	ck_assert_int_eq(run(argv), 125);
	ck_assert_ptr_null(strstr(err, "Permission denied"));
	ck_assert_msg(strncmp(err, "cordon run: must run as root", 28) == 0,
	    "%s", err);
	assert_one_line();
}
END_TEST

START_TEST(run_id_fd_checked)
{
	char *argv[] = { bin("cordon"), "run", "--id-fd", "3x", "--manifest",
		"m", "--", "/bin/true", NULL };

	ck_assert_int_eq(run(argv), 64);
	ck_assert_msg(strstr(err,
			  "cordon run: --id-fd is a descriptor number, not "
			  "\"3x\"") != NULL,
	    "%s", err);
}
END_TEST

/* A command is a path: the sandbox searches no PATH. */
START_TEST(command_must_be_a_path)
{
	char *argv[] = { bin("cordon"), "run", "--manifest", "m", "--",
		"python3", "x.py", NULL };
	const char *m = write_config("bare.json",
	    "{\"name\": \"bare\", \"command\": [\"python3\", \"x.py\"]}");
	char *lint[] = { bin("cordon"), "lint", (char *)m, NULL };

	ck_assert_int_eq(run(argv), 64);
	ck_assert_msg(strstr(err,
			  "cordon run: the command python3 is not a path "
			  "(the sandbox searches no PATH): give it as "
			  "/usr/bin/python3") != NULL,
	    "%s", err);
	assert_one_line();
	ck_assert_int_eq(run(lint), 1);
	ck_assert_msg(strstr(out, "command[0]: \"python3\" is not a path") !=
		NULL,
	    "%s", out);
}
END_TEST

/* --- what a job's result says ------------------------------------------ */

static struct stack st;

static void
put_manifest(const char *name, const char *rest)
{
	char path[128], text[1024];

	snprintf(text, sizeof(text), "{\"name\": \"%s\", %s}", name, rest);
	json_t *m = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(m);
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", path, st.admin, NULL, m));
}

static void
stack_setup(void)
{
	static const struct stack_options o = { .uid_base = 380000 };

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	put_manifest("big",
	    "\"limits\": {\"wall_seconds\": 60, "
	    "\"output_kb\": 2048}");
	put_manifest("flagged",
	    "\"limits\": {\"wall_seconds\": 60}, "
	    "\"return\": {\"protected\": [\".github/**\"]}");
	put_manifest("caches",
	    "\"limits\": {\"wall_seconds\": 60}, "
	    "\"return\": {\"exclude\": [\"__pycache__\", \"*.pyc\"]}");
}

static void
stack_teardown(void)
{
	stack_stop(&st);
}

static int
run_job(const char *manifest, const char *script, bool json)
{
	char *argv[] = { bin("cordon"), "run", "--config", st.launcher_cfg,
		"--manifest", (char *)manifest, "--", "/bin/sh", "-c",
		(char *)script, NULL, NULL };

	if (json) {
		memmove(argv + 3, argv + 2, sizeof(argv) - 3 * sizeof(char *));
		argv[2] = "--json";
	}
	return run(argv);
}

/* Output past what the launcher keeps is said to be cut, not whole. */
START_TEST(output_cut_is_truncated)
{
	int status = run_job("big",
	    "head -c 3000000 /dev/zero | tr '\\0' a; echo done >&2", true);
	json_t *j = json_loads(out, 0, NULL);

	ck_assert_msg(j != NULL, "status %d: %.300s %.300s", status, out, err);
	json_t *o = json_object_get(json_object_get(j, "output"), "stdout");
	const char *text = json_string_value(json_object_get(o, "text")) ?: "";
	ck_assert_msg(strlen(text) < 3000000, "all %zu bytes kept",
	    strlen(text));
	ck_assert_msg(json_is_true(json_object_get(o, "truncated")),
	    "%zu of 3000000 bytes kept, truncated: %s", strlen(text),
	    json_is_true(json_object_get(o, "truncated")) ? "true" : "false");
	json_decref(j);
}
END_TEST

/* What the manifest's output_kb allows is kept whole: the launcher's own
 * buffer is not a second, smaller cap. */
START_TEST(output_kept_up_to_output_kb)
{
	int status = run_job("big",
	    "head -c 1500000 /dev/zero | tr '\\0' a; echo done >&2", true);
	json_t *j = json_loads(out, 0, NULL);

	ck_assert_msg(j != NULL, "status %d: %.300s %.300s", status, out, err);
	json_t *o = json_object_get(json_object_get(j, "output"), "stdout");
	const char *text = json_string_value(json_object_get(o, "text")) ?: "";
	ck_assert_msg(strlen(text) == 1500000 &&
		json_is_false(json_object_get(o, "truncated")),
	    "%zu of 1500000 bytes kept under output_kb 2048, truncated: %s",
	    strlen(text),
	    json_is_true(json_object_get(o, "truncated")) ? "true" : "false");
	json_decref(j);
}
END_TEST

/* The summary line says why the verdict is what it is. */
START_TEST(summary_says_the_verdict_reason)
{
	int status = run_job("flagged",
	    "mkdir -p .github && echo 'on: push' >.github/ci.yml", false);
	char *summary = strstr(err, "cordon: job ");

	ck_assert_msg(summary != NULL, "status %d: %s", status, err);
	ck_assert_msg(strstr(summary, "needs-review: ") != NULL, "%s", summary);
	ck_assert_msg(strstr(summary, "protected_path .github/ci.yml") != NULL,
	    "%s", summary);
}
END_TEST

/* What return.exclude left out is counted where a person reads first:
 * the summary line, and the --json result. */
START_TEST(summary_counts_the_excluded)
{
	const char *script =
	    "mkdir -p __pycache__ && echo c >__pycache__/a.pyc "
	    "&& echo c >__pycache__/b.pyc && echo d >m.pyc "
	    "&& echo kept >result.txt";
	int status = run_job("caches", script, false);
	char *summary = strstr(err, "cordon: job ");

	ck_assert_msg(summary != NULL, "status %d: %s", status, err);
	ck_assert_msg(strstr(summary, "3 excluded by return.exclude") != NULL,
	    "%s", summary);
	status = run_job("caches", script, true);
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "status %d: %.300s %.300s", status, out, err);
	json_t *ex = json_object_get(j, "excluded");
	ck_assert_msg(json_is_object(ex), "no excluded in %.2000s", out);
	ck_assert_int_eq(json_integer_value(json_object_get(ex, "count")), 3);
	json_decref(j);
}
END_TEST

/* Tool caches go to a HOME outside /work: they never reach the patch. */
START_TEST(home_is_scratch)
{
	int status = run_job("flagged",
	    "echo \"home=$HOME\"; mkdir -p \"$HOME/.npm/_logs\" && "
	    "echo log >\"$HOME/.npm/_logs/debug.log\" && "
	    "echo kept >result.txt",
	    true);
	json_t *j = json_loads(out, 0, NULL);

	ck_assert_msg(j != NULL, "status %d: %.300s %.300s", status, out, err);
	const char *text =
	    json_string_value(
		json_object_get(json_object_get(json_object_get(j, "output"),
				    "stdout"),
		    "text"))
	    ?: "";
	ck_assert_msg(strncmp(text, "home=/work", 10) != 0 &&
		strncmp(text, "home=/", 6) == 0,
	    "%s", text);
	char patch[65536];
	const char *file =
	    json_string_value(json_object_get(j, "patch")) ?: "?";
	FILE *f = fopen(file, "r");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(patch, 1, sizeof(patch) - 1, f);
	fclose(f);
	patch[n] = '\0';
	ck_assert_msg(strstr(patch, "result.txt") != NULL, "%s", patch);
	ck_assert_msg(strstr(patch, ".npm") == NULL, "%s", patch);
	json_decref(j);
}
END_TEST

/* An input outside the hatch's roots names the roots and the setting. */
START_TEST(input_outside_roots_names_them)
{
	char *argv[] = { bin("cordon"), "run", "--config", st.launcher_cfg,
		"--manifest", "flagged", "--input", "/etc/hostname:h", "--",
		"/bin/true", NULL };
	char want[600];

	ck_assert_int_eq(run(argv), 125);
	snprintf(want, sizeof(want),
	    "not under any of the hatch's input_roots (%s): move it under "
	    "one, or add its directory to input_roots",
	    st.inputs);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("messages");
	TCase *tc = tcase_create("messages");

	tcase_add_test(tc, proxy_check_missing_key);
	tcase_add_test(tc, proxy_not_a_key);
	tcase_add_test(tc, hatch_missing_key);
	tcase_add_test(tc, broker_check_reads_its_keys);
	tcase_add_test(tc, serve_check_missing_key);
	tcase_add_test(tc, relative_paths_are_the_config_files);
	tcase_add_test(tc, run_without_key_makes_nothing);
	tcase_add_test(tc, serve_check_bad_callback_allow);
	tcase_add_test(tc, run_without_config_says_where_it_looked);
	tcase_add_test(tc, run_from_anywhere_finds_the_trees_config);
	tcase_add_test(tc, cordon_config_names_the_file);
	tcase_add_test(tc, run_not_root);
	tcase_add_test(tc, run_id_fd_checked);
	tcase_add_test(tc, command_must_be_a_path);
	suite_add_tcase(s, tc);
	tc = tcase_create("results");
	tcase_add_checked_fixture(tc, stack_setup, stack_teardown);
	tcase_add_test(tc, output_cut_is_truncated);
	tcase_add_test(tc, output_kept_up_to_output_kb);
	tcase_add_test(tc, summary_says_the_verdict_reason);
	tcase_add_test(tc, home_is_scratch);
	tcase_add_test(tc, summary_counts_the_excluded);
	tcase_add_test(tc, input_outside_roots_names_them);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
