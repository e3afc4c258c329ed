/*
 * The Python client and the OpenAPI description, against the real
 * services: the broker, the proxy, the hatch and cordon serve start on
 * loopback here, and two Python programs run against them with the
 * addresses and key files in their environment.
 * clients/python/tests/test_client.py drives cordon_client (put a
 * manifest, run, wait, patch, report, revoke, typed errors, a callback
 * verified, pip install); tests/integration/check_openapi.py checks that
 * every route the C code serves is in docs/openapi.yaml and that real
 * answers of every service validate against it.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CALLBACK_KEY "callback-key-for-the-python-tests-0123456789"

static struct stack st;
static struct daemon serve;

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 450000,
		.hosts = "127.0.0.1 api.test\n" };
	static char cfg[8192];
	char path[400];
	FILE *f;
	size_t n;

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	snprintf(path, sizeof(path), "%s/callback.key", st.launcher_dir);
	harness_write_file(path, CALLBACK_KEY "\n");
	f = fopen(st.launcher_cfg, "re");
	ck_assert_ptr_nonnull(f);
	n = fread(cfg, 1, sizeof(cfg) - 1, f);
	fclose(f);
	while (n > 0 && cfg[n - 1] != '}')
		n--;
	ck_assert_int_gt(n, 0);
	snprintf(cfg + n - 1, sizeof(cfg) - n + 1,
	    ", \"callback_key_file\": \"%s\", "
	    "\"callback_allow\": [\"127.0.0.1\"]}",
	    path);
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);
}

static void
teardown(void)
{
	daemon_stop(&serve);
	stack_stop(&st);
}

static void
env_key(const char *name, const char *role)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/var/broker/keys/%s.key", st.broker.dir,
	    role);
	setenv(name, path, 1);
}

/* Runs python3 with script and its environment: the exit status, with its
 * output printed when it is not 0. At most 300 s. */
static int
python(const char *script)
{
	char cb[400], client[400], openapi[400], log[400];
	int status = -1;
	pid_t pid;

	setenv("CORDON_BROKER", st.broker.base, 1);
	setenv("CORDON_PROXY", st.proxy.base, 1);
	setenv("CORDON_HATCH", st.hatch.base, 1);
	setenv("CORDON_SERVE", serve.base, 1);
	env_key("CORDON_ADMIN_KEY_FILE", "admin");
	env_key("CORDON_LAUNCHER_KEY_FILE", "launcher");
	env_key("CORDON_VERIFIER_KEY_FILE", "verifier");
	snprintf(cb, sizeof(cb), "%s/callback.key", st.launcher_dir);
	setenv("CORDON_CALLBACK_KEY_FILE", cb, 1);
	setenv("CORDON_INPUTS", st.inputs, 1);
	snprintf(client, sizeof(client), "%s/clients/python",
	    CORDON_SOURCE_DIR);
	setenv("CORDON_CLIENT_DIR", client, 1);
	snprintf(openapi, sizeof(openapi), "%s/docs/openapi.yaml",
	    CORDON_SOURCE_DIR);
	setenv("CORDON_OPENAPI", openapi, 1);
	setenv("CORDON_SOURCE_DIR", CORDON_SOURCE_DIR, 1);
	/* No __pycache__ left in the source tree. */
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	snprintf(log, sizeof(log), "%s/python.log", harness_tmpdir());

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		FILE *f = freopen(log, "w", stdout);
		if (f == NULL || dup2(1, 2) < 0)
			_exit(127);
		execlp("python3", "python3", script, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (i == 2999) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
		usleep(100000);
	}
	status =
	    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (status != 0) {
		char line[4096];
		FILE *f = fopen(log, "re");
		fprintf(stderr, "----- %s (exit %d) -----\n", script, status);
		while (f != NULL && fgets(line, sizeof(line), f) != NULL)
			fputs(line, stderr);
		if (f != NULL)
			fclose(f);
		fprintf(stderr, "----- end -----\n");
	}
	return status;
}

START_TEST(the_python_client)
{
	ck_assert_int_eq(python(CORDON_SOURCE_DIR
			     "/clients/python/tests/test_client.py"),
	    0);
}
END_TEST

START_TEST(the_openapi_description)
{
	ck_assert_int_eq(python(CORDON_SOURCE_DIR
			     "/tests/integration/check_openapi.py"),
	    0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("openapi");
	TCase *tc = tcase_create("openapi");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 320);
	tcase_add_test(tc, the_python_client);
	tcase_add_test(tc, the_openapi_description);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
