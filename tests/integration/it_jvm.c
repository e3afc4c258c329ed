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
#include "clientkit.h"
#include "harness.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JAVA "/usr/bin/java"
#define KEYTOOL "/usr/bin/keytool"
#define CLIENT CORDON_SOURCE_DIR "/tests/integration/jobs/jvm/Client.java"

static struct stack st;
static struct clientkit_tls tls;

static void
setup(void)
{
	const char *dir = harness_tmpdir();
	char path[600], cmd[1500];
	struct stack_options o = { .uid_base = 546000,
		.hosts = "127.0.0.1 tls.test\n",
		.upstream_ca_file = tls.ca };

	signal(SIGPIPE, SIG_IGN);
	clientkit_tls_prepare(&tls, dir);
	snprintf(path, sizeof(path), "%s/ok", tls.srv);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/ok/jvm.txt", tls.srv);
	harness_write_file(path, "hello jvm\n");
	chmod(path, 0644);
	snprintf(path, sizeof(path), "%s/ok/relay.txt", tls.srv);
	harness_write_file(path, "hello relay\n");
	chmod(path, 0644);
	clientkit_tls_start(&tls);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/Client.java'", CLIENT, path);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);

	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:i, s:s, s:[s], "
			      "s:[s], s:s, s:[s]}], s:{s:i, s:i, s:i}}",
	    "name", "jvm-job", "command", "/bin/true", "egress", "host",
	    "tls.test", "port", (int)tls.port, "tls", "terminate", "methods",
	    "GET", "paths", "/ok/", "reason", "the files", "allow_cidrs",
	    "127.0.0.0/8", "limits", "wall_seconds", 120, "memory_mb", 1024,
	    "pids", 256);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/jvm-job", st.admin, NULL, m));
}

static void
teardown(void)
{
	clientkit_tls_stop(&tls);
	stack_stop(&st);
}

/* The proxy's decision line (clientkit_logged). */
static bool
logged(const char *host, const char *path, const char *decision,
    const char *reason, const char *kind)
{
	return clientkit_logged(&st.proxy, host, path, decision, reason, kind);
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

	snprintf(u, sizeof(u), "https://tls.test:%u", tls.port);
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
	out = clientkit_run(&st, "jvm-job", script, "JVM_DEBUG", &err);
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
