/*
 * Issue 15's "done when": a new user's `cordon run` of `git clone
 * https://...` works from a plain shell, every time. A real git, in the
 * sandbox, clones a real repository from an HTTPS server on 127.0.0.1
 * (python3's http.server over TLS, git's "dumb" protocol) through the
 * proxy, which terminates TLS with the job's CA; `cordon run` is started
 * as a shell starts it, SIGPIPE at its default. Before 15.4, git clones
 * through the relay killed cordon run with SIGPIPE (status 141) and
 * skipped its stop path.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CLONES 5

static struct stack st;
static pid_t server = -1;
static unsigned server_port;

/* git, on the host, makes a bare repository under dir for the server. */
static void
make_repo(const char *dir)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
	    "set -e; cd '%s'; git init -q -b main work; cd work; "
	    "printf 'cloned through cordon\\n' > README.md; "
	    "git -c user.name=t -c user.email=t@t add README.md; "
	    "git -c user.name=t -c user.email=t@t commit -q -m one; cd ..; "
	    "git clone -q --bare work srv/repo.git; "
	    "git -C srv/repo.git update-server-info",
	    dir);
	ck_assert_msg(system(cmd) == 0, "the test repository: %s", cmd);
}

/* An HTTPS static server on 127.0.0.1 over srv/, its port read back. */
static void
start_server(const char *dir, const char *cert, const char *key)
{
	char script[1500], root[600], buf[32] = { 0 };
	int p[2];

	snprintf(root, sizeof(root), "%s/srv", dir);
	snprintf(script, sizeof(script),
	    "import functools, http.server, ssl, sys\n"
	    "h = functools.partial(http.server.SimpleHTTPRequestHandler,"
	    " directory=sys.argv[1])\n"
	    "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), h)\n"
	    "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
	    "c.load_cert_chain(sys.argv[2], sys.argv[3])\n"
	    "s.socket = c.wrap_socket(s.socket, server_side=True)\n"
	    "print(s.server_address[1], flush=True)\n"
	    "s.serve_forever()\n");
	ck_assert_int_eq(pipe(p), 0);
	server = fork();
	ck_assert_int_ge(server, 0);
	if (server == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(p[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execl("/usr/bin/python3", "python3", "-c", script, root, cert,
		    key, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ck_assert_int_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	close(p[0]);
	server_port = (unsigned)strtoul(buf, NULL, 10);
	ck_assert_uint_gt(server_port, 0);
}

static void
setup(void)
{
	const char *hosts[] = { "git.test", NULL };
	const char *dir = harness_tmpdir();
	char cert[400], key[400], ca[400], path[400];
	struct stack_options o = { .uid_base = 395000,
		.hosts = "127.0.0.1 git.test\n",
		.upstream_ca_file = ca };

	signal(SIGPIPE, SIG_IGN); /* the test's; cordon's is its default */
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	snprintf(cert, sizeof(cert), "%s/git.test.pem", dir);
	snprintf(key, sizeof(key), "%s/git.test.key", dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	make_repo(dir);
	start_server(dir, cert, key);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/in", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);

	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:i, s:s, s:[s, s], "
			      "s:[s], s:s, s:[s]}], s:{s:i, s:i, s:i}}",
	    "name", "git-job", "command", "/bin/true", "egress", "host",
	    "git.test", "port", (int)server_port, "tls", "terminate", "methods",
	    "GET", "HEAD", "paths", "/repo.git/", "reason", "the repository",
	    "allow_cidrs", "127.0.0.0/8", "limits", "wall_seconds", 120,
	    "memory_mb", 1024, "pids", 128);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/git-job", st.admin, NULL, m));
}

static void
teardown(void)
{
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
		server = -1;
	}
	stack_stop(&st);
}

START_TEST(git_clone_over_https_from_a_plain_shell)
{
	char script[1200], input[500];
	static char out[1 << 17], err[1 << 16];
	int status;

	snprintf(input, sizeof(input), "%s/in:in", st.inputs);
	snprintf(script, sizeof(script),
	    "for i in $(seq %d); do rm -rf /tmp/c; "
	    "git clone -q https://git.test:%u/repo.git /tmp/c || exit 9; "
	    "cat /tmp/c/README.md; done; echo clones-done",
	    CLONES, server_port);
	/* As a shell runs it: harness_run keeps SIGPIPE at its default in
	 * the child (harness.c). */
	char *const argv[] = { (char *)harness_bin("cordon"), "run", "--config",
		(char *)st.launcher_cfg, "--manifest", "git-job", "--input",
		input, "--json", "--", "/bin/sh", "-c", script, NULL };
	status =
	    harness_run_for(argv, 100000, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(status == 0, "cordon run: status %d\n%.2000s\n%.2000s",
	    status, out, err);
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no result: %.2000s", err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_ptr_nonnull(text);
	int n = 0;
	for (const char *p = text; (p = strstr(p, "cloned through cordon"));
	     p++)
		n++;
	ck_assert_msg(n == CLONES, "%d of %d clones: %s", n, CLONES, text);
	ck_assert_ptr_nonnull(strstr(text, "clones-done"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "exit");
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	json_t *e = json_object_get(j, "egress");
	ck_assert_int_gt(json_integer_value(json_object_get(e, "allowed")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "denied")), 0);
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("gitclone");
	TCase *tc = tcase_create("clone");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, git_clone_over_https_from_a_plain_shell);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
