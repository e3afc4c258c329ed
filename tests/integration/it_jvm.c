/*
 * The JVM inside a real `cordon run` job, with nothing set by the job:
 * `java Client.java` (a single-file source, Java 11+) reaches an allowed
 * HTTPS upstream on 127.0.0.1 whose TLS the proxy terminates with the
 * job's CA, and gets the proxy's 403 for a path no rule allows, each with
 * a decision line. Java reads no HTTPS_PROXY and takes no CA from the
 * environment: it trusts the job's CA through the trust store the
 * launcher writes at /etc/ssl/certs/java/cacerts (launcher/truststore.c),
 * and the launcher's capture carries its direct connections to the proxy.
 * -Djava.net.useSystemProxies=true changes nothing (Java's system proxies
 * on Linux are GNOME's settings, and it still goes direct); a JVM given
 * -Dhttps.proxyHost goes through the relay instead, and is judged the same.
 * No JAVA_TOOL_OPTIONS (Java would say "Picked up" on every start). The
 * store itself is looked at with keytool: the job's CA and the host's
 * roots, each a trustedCertEntry, password "changeit". Without a java
 * the test exits 77, saying so.
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

#define JAVA "/usr/bin/java"
#define KEYTOOL "/usr/bin/keytool"
#define CLIENT CORDON_SOURCE_DIR "/tests/integration/jobs/jvm/Client.java"

static struct stack st;
static pid_t server = -1;
static unsigned tls_port;

/* An HTTPS static server on 127.0.0.1 over dir/srv, its port read back. */
static void
start_server(const char *dir, const char *cert, const char *key)
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
	char root[600], buf[32] = { 0 };
	int p[2];

	snprintf(root, sizeof(root), "%s/srv", dir);
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
	tls_port = (unsigned)strtoul(buf, NULL, 10);
	ck_assert_uint_gt(tls_port, 0);
}

static void
setup(void)
{
	const char *hosts[] = { "tls.test", NULL };
	const char *dir = harness_tmpdir();
	char cert[400], key[400], ca[400], path[600], cmd[1500];
	struct stack_options o = { .uid_base = 546000,
		.hosts = "127.0.0.1 tls.test\n",
		.upstream_ca_file = ca };

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	snprintf(cert, sizeof(cert), "%s/tls.test.pem", dir);
	snprintf(key, sizeof(key), "%s/tls.test.key", dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(path, sizeof(path), "%s/srv", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/srv/ok", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/srv/ok/jvm.txt", dir);
	harness_write_file(path, "hello jvm\n");
	chmod(path, 0644);
	snprintf(path, sizeof(path), "%s/srv/ok/relay.txt", dir);
	harness_write_file(path, "hello relay\n");
	chmod(path, 0644);
	start_server(dir, cert, key);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/Client.java'", CLIENT, path);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);

	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:i, s:s, s:[s], "
			      "s:[s], s:s, s:[s]}], s:{s:i, s:i, s:i}}",
	    "name", "jvm-job", "command", "/bin/true", "egress", "host",
	    "tls.test", "port", (int)tls_port, "tls", "terminate", "methods",
	    "GET", "paths", "/ok/", "reason", "the files", "allow_cidrs",
	    "127.0.0.0/8", "limits", "wall_seconds", 120, "memory_mb", 1024,
	    "pids", 256);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/jvm-job", st.admin, NULL, m));
}

static void
teardown(void)
{
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
		server = -1;
	}
	stack_stop(&st);
}

/* Runs `cordon run --json` of jvm-job with script under /bin/sh -c (in
 * the input's directory): the job's stdout (free it); the result's
 * stderr text into err_text when not NULL. */
static char *
run_stdout(const char *script, char **err_text)
{
	static char out[1 << 20], err[1 << 16];
	char input[400], full[8192];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "jvm-job", "--input",
		input, "--", "/bin/sh", "-c", full, NULL };

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
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
	if (getenv("JVM_DEBUG") != NULL)
		fprintf(stderr,
		    "%s\n--- job's stderr ---\n%s\n--- stderr ---\n%s\n", copy,
		    etext != NULL ? etext : "", err);
	ck_assert_msg(status == 0, "cordon run: %d\n%s\n%s\n%s", status, copy,
	    etext != NULL ? etext : "", err);
	if (err_text != NULL)
		*err_text = strdup(etext != NULL ? etext : "");
	json_decref(j);
	return copy;
}

/* Whether the proxy logged a line of host with decision, kind and
 * reason (each NULL: any) for a path that starts with path (NULL: any). */
static bool
logged(const char *host, const char *path, const char *decision,
    const char *reason, const char *kind)
{
	json_t *lines = daemon_log_lines(&st.proxy), *l;
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

#define EXPECT(...)                                                            \
	do {                                                                   \
		char want_[512];                                               \
		snprintf(want_, sizeof(want_), __VA_ARGS__);                   \
		ck_assert_msg(strstr(out, want_) != NULL, "no \"%s\" in:\n%s", \
		    want_, out);                                               \
	} while (0)

/* How many entries keytool says a store holds (-1: it did not say). */
static long
keytool_entries(const char *text)
{
	const char *p = strstr(text, "Your keystore contains ");

	return p != NULL
	    ? strtol(p + strlen("Your keystore contains "), NULL, 10)
	    : -1;
}

START_TEST(java_reaches_the_allowed_and_is_refused_the_rest)
{
	char script[4096], u[128], *out, *err = NULL;
	static char o[1 << 18], e[4096];
	char *kt[] = { KEYTOOL, "-list", "-keystore",
		"/etc/ssl/certs/java/cacerts", "-storepass", "changeit", NULL };
	long host_entries;

	/* What the host's store trusts, to be found inside too. */
	ck_assert_int_eq(harness_run_for(kt, 60000, o, sizeof(o), e, sizeof(e)),
	    0);
	host_entries = keytool_entries(o);
	ck_assert_int_gt(host_entries, 0);

	snprintf(u, sizeof(u), "https://tls.test:%u", tls_port);
	snprintf(script, sizeof(script),
	    "echo JAVA_TOOL_OPTIONS=${JAVA_TOOL_OPTIONS-unset}\n"
	    "echo AWS_CA_BUNDLE=${AWS_CA_BUNDLE-unset}\n"
	    /* Debian's alternatives, bound for java: awk's too. */
	    "[ -L /usr/bin/awk ] && echo alternatives | awk '{print \"awk-\" "
	    "$1}'\n"
	    "java Client.java %s/ok/jvm.txt %s/no/jvm.txt "
	    "https://deny.test/x\n"
	    "echo java=$?\n"
	    /* The system's proxies: nothing on Linux without GNOME's
	     * settings, so still direct (and captured). */
	    "java -Djava.net.useSystemProxies=true Client.java %s/ok/jvm.txt "
	    "| sed 's/^jvm-/sysproxy-/'\n"
	    /* Told the proxy, as a JVM is (system properties, not the
	     * environment): through the relay on 127.0.0.1:3128. */
	    "java -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128 "
	    "Client.java %s/ok/relay.txt | sed 's/^jvm-/explicit-/'\n"
	    "keytool -list -cacerts -storepass changeit > /tmp/kt.txt; "
	    "echo keytool=$?\n"
	    "grep -c trustedCertEntry /tmp/kt.txt | sed 's/^/trusted=/'\n"
	    "grep '^Your keystore' /tmp/kt.txt\n"
	    "grep -q '^cordon-job-ca, .*, trustedCertEntry,' /tmp/kt.txt && "
	    "echo job-ca=trustedCertEntry\n"
	    "keytool -list -cacerts -storepass wrong >/dev/null 2>&1; "
	    "echo wrong=$?\n",
	    u, u, u, u);
	out = run_stdout(script, &err);
	EXPECT("JAVA_TOOL_OPTIONS=unset\n");
	struct stat awk;
	if (lstat("/usr/bin/awk", &awk) == 0 && S_ISLNK(awk.st_mode))
		EXPECT("awk-alternatives\n");
	/* The AWS SDKs (but Java's) at the bundle. */
	EXPECT("AWS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt\n");
	EXPECT("java=0\n");
	/* Java reads no proxy variable: it goes direct, and is captured. */
	EXPECT("jvm-proxy %s/ok/jvm.txt DIRECT\n", u);
	EXPECT("jvm-http %s/ok/jvm.txt 200 - hello jvm\n", u);
	EXPECT("jvm-url %s/ok/jvm.txt 200\n", u);
	EXPECT("jvm-http %s/no/jvm.txt 403 path ", u);
	EXPECT("jvm-url %s/no/jvm.txt 403\n", u);
	EXPECT(
	    "jvm-http https://deny.test/x error java.net.ConnectException\n");
	EXPECT("jvm-url https://deny.test/x error "
	       "java.net.UnknownHostException\n");
	EXPECT("sysproxy-proxy %s/ok/jvm.txt DIRECT\n", u);
	EXPECT("sysproxy-http %s/ok/jvm.txt 200 - hello jvm\n", u);
	EXPECT("explicit-proxy %s/ok/relay.txt HTTP @ ", u);
	EXPECT("explicit-http %s/ok/relay.txt 200 - hello relay\n", u);
	/* The store: the host's entries and the job's CA, each trusted,
	 * behind the password "changeit". */
	EXPECT("keytool=0\n");
	EXPECT("trusted=%ld\n", host_entries + 1);
	EXPECT("Your keystore contains %ld entries\n", host_entries + 1);
	EXPECT("job-ca=trustedCertEntry\n");
	EXPECT("wrong=1\n");
	ck_assert_msg(strstr(err, "Picked up") == NULL, "%s", err);
	free(out);
	free(err);
	/* A decision line each: the captured connection, the allowed
	 * request and the refused path, and the refused name. */
	ck_assert(logged("tls.test", NULL, "allow", NULL, "capture"));
	/* The JVM told of the proxy: a CONNECT through the relay. */
	ck_assert(logged("tls.test", NULL, "allow", NULL, "connect"));
	ck_assert(logged("tls.test", "/ok/relay.txt", "allow", NULL, "mitm"));
	ck_assert(logged("tls.test", "/ok/jvm.txt", "allow", NULL, NULL));
	ck_assert(logged("tls.test", "/no/jvm.txt", "deny", "path", NULL));
	ck_assert(logged("deny.test", NULL, "deny", "no_rule", NULL));
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("jvm");
	TCase *tc = tcase_create("jvm");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, java_reaches_the_allowed_and_is_refused_the_rest);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	static char out[1 << 16], err[4096];
	char *modules[] = { JAVA, "--list-modules", NULL };

	if (access(JAVA, X_OK) != 0 || access(KEYTOOL, X_OK) != 0) {
		printf("it_jvm: skipped: no %s or %s "
		       "(openjdk-17-jdk-headless)\n",
		    JAVA, KEYTOOL);
		return 77;
	}
	/* A single-file source needs the JDK's compiler, not a JRE alone. */
	if (harness_run_for(modules, 60000, out, sizeof(out), err,
		sizeof(err)) != 0 ||
	    strstr(out, "jdk.compiler@") == NULL) {
		printf("it_jvm: skipped: %s has no jdk.compiler (a JRE: "
		       "install openjdk-17-jdk-headless)\n",
		    JAVA);
		return 77;
	}
	return harness_main(suite());
}
