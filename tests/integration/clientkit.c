/*
 * The real-clients kit (clientkit.h): the HTTPS static server, the job
 * runs and the decision-line lookups that it_clients and it_jvm share.
 * Test code: failures are check assertions, buffers are capped.
 */
#include "clientkit.h"
#include "upstream.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void
clientkit_tls_prepare(struct clientkit_tls *t, const char *dir)
{
	const char *hosts[] = { "tls.test", NULL };

	memset(t, 0, sizeof(*t));
	t->pid = -1;
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	snprintf(t->cert, sizeof(t->cert), "%s/tls.test.pem", dir);
	snprintf(t->key, sizeof(t->key), "%s/tls.test.key", dir);
	snprintf(t->ca, sizeof(t->ca), "%s/ca.pem", dir);
	snprintf(t->srv, sizeof(t->srv), "%s/srv", dir);
	ck_assert_int_eq(mkdir(t->srv, 0755), 0);
}

void
clientkit_tls_start(struct clientkit_tls *t)
{
	static const char script[] =
	    "import functools, http.server, ssl, sys\n"
	    "h = functools.partial(http.server.SimpleHTTPRequestHandler,"
	    " directory=sys.argv[1])\n"
	    "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), h)\n"
	    "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
	    "c.load_cert_chain(sys.argv[2], sys.argv[3])\n"
	    "s.socket = c.wrap_socket(s.socket, server_side=True)\n"
	    "print(s.server_address[1], flush=True)\n"
	    "s.serve_forever()\n";
	char buf[32] = { 0 };
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	t->pid = fork();
	ck_assert_int_ge(t->pid, 0);
	if (t->pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(p[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execl("/usr/bin/python3", "python3", "-c", script, t->srv,
		    t->cert, t->key, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ck_assert_int_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	close(p[0]);
	t->port = (unsigned)strtoul(buf, NULL, 10);
	ck_assert_uint_gt(t->port, 0);
}

void
clientkit_tls_stop(struct clientkit_tls *t)
{
	if (t->pid > 1) {
		kill(t->pid, SIGTERM);
		waitpid(t->pid, NULL, 0);
	}
	t->pid = -1;
}

char *
clientkit_run(const struct stack *st, const char *manifest, const char *script,
    const char *debug, char **ret_err)
{
	static char out[1 << 20], err[1 << 16];
	char input[400], full[16384];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", (char *)st->launcher_cfg, "--manifest",
		(char *)manifest, "--input", input, "--", "/bin/sh", "-c", full,
		NULL };

	snprintf(input, sizeof(input), "%s/repo:repo", st->inputs);
	snprintf(full, sizeof(full), "cd repo\n%s", script);
	int status =
	    harness_run_for(argv, 110000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	json_t *o = json_object_get(j, "output");
	const char *text = json_string_value(
	    json_object_get(json_object_get(o, "stdout"), "text"));
	const char *etext = json_string_value(
	    json_object_get(json_object_get(o, "stderr"), "text"));
	char *copy = strdup(text != NULL ? text : "");
	if (getenv(debug) != NULL)
		fprintf(stderr,
		    "%s\n--- job's stderr ---\n%s\n--- stderr ---\n%s\n", copy,
		    etext != NULL ? etext : "", err);
	ck_assert_msg(status == 0, "cordon run: %d\n%s\n%s\n%s", status, copy,
	    etext != NULL ? etext : "", err);
	if (ret_err != NULL)
		*ret_err = strdup(etext != NULL ? etext : "");
	json_decref(j);
	return copy;
}

bool
clientkit_logged(const struct daemon *proxy, const char *host, const char *path,
    const char *decision, const char *reason, const char *kind)
{
	json_t *lines = daemon_log_lines(proxy), *l;
	bool seen = false;
	size_t i;

	json_array_foreach(lines, i, l)
	{
		const char *h = json_string_value(json_object_get(l, "host"));
		const char *p = json_string_value(json_object_get(l, "path"));
		const char *d =
		    json_string_value(json_object_get(l, "decision"));
		const char *r = json_string_value(json_object_get(l, "reason"));
		const char *k = json_string_value(json_object_get(l, "kind"));
		seen = seen ||
		    (h != NULL && d != NULL && strcmp(h, host) == 0 &&
			strcmp(d, decision) == 0 &&
			(path == NULL ||
			    (p != NULL &&
				strncmp(p, path, strlen(path)) == 0)) &&
			(reason == NULL ||
			    (r != NULL && strcmp(r, reason) == 0)) &&
			(kind == NULL || (k != NULL && strcmp(k, kind) == 0)));
	}
	json_decref(lines);
	return seen;
}
