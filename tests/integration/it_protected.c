/*
 * Services on their own port (issue 18's review): the proxy refused only
 * its control port and the current broker's, so a loopback allow_cidrs
 * rule on the port of another broker of its fleet list, the hatch,
 * cordon serve or PostgreSQL reached it. Now every broker of the list
 * and every endpoint of the proxy's "protected" setting is 403
 * protected_endpoint, a decision line, whatever the rule says; a service
 * on another port is reached as before. Upstreams: jobs/smuggle/upstream.py
 * standing for each.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct daemon broker, proxy;
static char admin[128], launcher[128], verifier[128], channel[300];
static char tok[512];
static pid_t up_pid = -1, up2_pid = -1, up3_pid = -1;
static unsigned up_port, up2_port, up3_port;

/* Starts script (under tests/integration/jobs/) on a free port. */
static void
upstream_run(const char *script, pid_t *pid, unsigned *port, const char *key)
{
	char portf[400], line[32], path[600];

	snprintf(portf, sizeof(portf), "%s/%s.port", harness_tmpdir(),
	    strchr(script, '/') + 1);
	snprintf(path, sizeof(path), "%s/tests/integration/jobs/%s",
	    CORDON_SOURCE_DIR, script);
	unlink(portf);
	*pid = fork();
	ck_assert_int_ge(*pid, 0);
	if (*pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (key != NULL)
			execl("/usr/bin/python3", "python3", "-B", path,
			    "--port-file", portf, "--key", key, (char *)NULL);
		else
			execl("/usr/bin/python3", "python3", "-B", path,
			    "--port-file", portf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	*port = (unsigned)strtoul(line, NULL, 10);
	ck_assert_uint_gt(*port, 0);
}

static char *
send_on(const char *req)
{
	int fd = unix_connect(channel);
	char *out;

	if (fd < 0)
		return strdup("");
	out = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	return out != NULL ? out : strdup("");
}

static void
setup_with(bool with_protected)
{
	char prot[128] = "", cfg[2048], path[400], hostsf[400], job[64],
	     req[1024], *resp;
	json_t *m, *j;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	/* up: a second broker of the fleet, up2: the hatch, up3: a service
	 * a rule may reach. */
	upstream_run("smuggle/upstream.py", &up_pid, &up_port, NULL);
	upstream_run("smuggle/upstream.py", &up2_pid, &up2_port, NULL);
	upstream_run("smuggle/upstream.py", &up3_pid, &up3_port, NULL);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf,
	    "127.0.0.1 fleet.test\n127.0.0.1 hatch.test\n"
	    "127.0.0.1 svc.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	if (with_protected)
		snprintf(prot, sizeof(prot),
		    ", \"protected\": [\"127.0.0.1:%u\"]", up2_port);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": [\"%s\", \"http://127.0.0.1:%u\"], "
	    "\"broker_key_file\": \"%s\", \"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-protected\"%s}",
	    broker.base, up_port, path, harness_launcher_sha256(&broker),
	    hostsf, prot);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s]},"
		      "    {s:s, s:i, s:[s], s:[s], s:s, s:[s]},"
		      "    {s:s, s:i, s:[s], s:[s], s:s, s:[s]}]}",
	    "name", "protected", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress",
	    /* a manifest's mistake: loopback rules on cordon's own ports */
	    "host", "fleet.test", "port", up_port, "methods", "GET", "paths",
	    "/", "reason", "another broker", "allow_cidrs", "127.0.0.0/8",
	    "host", "hatch.test", "port", up2_port, "methods", "GET", "paths",
	    "/", "reason", "the hatch", "allow_cidrs", "127.0.0.0/8", "host",
	    "svc.test", "port", up3_port, "methods", "GET", "paths", "/",
	    "reason", "a service", "allow_cidrs", "127.0.0.0/8");
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&broker, 200, "PUT",
	    "/v1/manifests/protected", admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "protected"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);

	static const char b[] =
	    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}";
	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(b), b);
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	char *t = strstr(resp, "crd_"),
	     *end = t != NULL ? strchr(t, '"') : NULL;
	ck_assert_ptr_nonnull(end);
	snprintf(tok, sizeof(tok), "%.*s", (int)(end - t), t);
	free(resp);
}

static void
setup(void)
{
	setup_with(true);
}

static void
setup_fleet_only(void)
{
	setup_with(false);
}

static void
teardown(void)
{
	daemon_stop(&proxy);
	if (up_pid > 1) {
		kill(up_pid, SIGKILL);
		waitpid(up_pid, NULL, 0);
	}
	up_pid = -1;
	if (up2_pid > 1) {
		kill(up2_pid, SIGKILL);
		waitpid(up2_pid, NULL, 0);
	}
	up2_pid = -1;
	if (up3_pid > 1) {
		kill(up3_pid, SIGKILL);
		waitpid(up3_pid, NULL, 0);
	}
	up3_pid = -1;
	daemon_stop(&broker);
}

static bool
decisions_hold(const char *needle)
{
	static char data[1 << 20];
	char path[400];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    proxy.dir);
	if ((f = fopen(path, "rbe")) == NULL)
		return false;
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	return memmem(data, n, needle, strlen(needle)) != NULL;
}

static char *
get(const char *host, unsigned port)
{
	char req[512];

	snprintf(req, sizeof(req),
	    "GET http://%s:%u/x HTTP/1.1\r\nHost: %s:%u\r\n"
	    "Connection: close\r\n\r\n",
	    host, port, host, port);
	return send_on(req);
}

static void
refused(char *resp, const char *what)
{
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "X-Cordon-Deny: protected_endpoint\r\n") != NULL,
	    "%s: %.400s", what, resp);
	free(resp);
}

START_TEST(no_rule_reaches_a_broker_of_the_list_or_a_protected_endpoint)
{
	char *resp;

	refused(get("fleet.test", up_port), "another broker of the list");
	refused(get("hatch.test", up2_port), "a protected endpoint");
	resp = get("svc.test", up3_port);
	ck_assert_msg(http_status(resp) == 200 &&
		strstr(resp, "public\n") != NULL,
	    "%.400s", resp);
	free(resp);
	ck_assert(decisions_hold("\"host\":\"hatch.test\""));
	ck_assert(decisions_hold("\"reason\":\"protected_endpoint\""));
}
END_TEST

START_TEST(the_fleet_is_refused_without_a_protected_setting)
{
	char *resp;

	refused(get("fleet.test", up_port), "another broker of the list");
	resp = get("hatch.test", up2_port);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("protected");
	TCase *tc = tcase_create("protected");
	TCase *tf = tcase_create("fleet");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    no_rule_reaches_a_broker_of_the_list_or_a_protected_endpoint);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tf, 60);
	tcase_add_checked_fixture(tf, setup_fleet_only, teardown);
	tcase_add_test(tf, the_fleet_is_refused_without_a_protected_setting);
	suite_add_tcase(s, tf);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
