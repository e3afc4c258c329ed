/*
 * An issuer's 503 is not a broker's failure (issue 18): two
 * cordon-brokers on one database of a private PostgreSQL (pg.h) and a
 * proxy given both (A first). The secret up-key is an issuer's (OAuth
 * client credentials) whose token endpoint is a loopback port nobody
 * listens on, so a release at either broker is 503 issuer_unavailable at
 * once: an answer of a live broker. What it shows: the job's injected
 * request is answered 503 issuer_unavailable as the broker said it, the
 * proxy logs no broker_failover, its current broker (and the feed's) is
 * still A, and B was never asked for the release (its log has no
 * upstream_issue_failed). A broker that stops with the release waiting
 * at an issuer that never answers (hungissuer.c) still answers 503
 * broker_stopping, which does turn the proxy to B (broker_failover, the
 * feed on B). No jobs are spawned: no uid range is used.
 *
 * Without PostgreSQL it fails and says so, unless CORDON_TEST_NO_PG=1.
 */
#include "harness.h"
#include "hungissuer.h"
#include "injectkit.h"
#include "pg.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct pg_server pg;
static char url[400], dir[300];
static struct daemon A, B;
static struct injectkit k;
static struct hung_issuer hung = { .lfd = -1 };

static void
read_key(const char *role, char *out, size_t len)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/keys/%s.key", dir, role);
	ck_assert_int_eq(harness_read_line(path, out, len), 0);
}

/* A loopback port nobody listens on (bound, then closed). */
static unsigned
dead_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* The proxy's /healthz: its feed's broker, when the feed answers. */
static bool
follows(const struct daemon *p, const char *addr)
{
	for (int i = 0; i < 100; i++) {
		long status;
		json_t *h = harness_get_json(p, "/healthz", &status);
		const char *at =
		    json_string_value(json_object_get(h, "feed_broker"));
		const char *feed =
		    json_string_value(json_object_get(h, "feed"));
		bool yes = status == 200 && at != NULL && feed != NULL &&
		    strcmp(at, addr) == 0 && strcmp(feed, "ok") == 0;

		json_decref(h);
		if (yes)
			return true;
		usleep(100000);
	}
	return false;
}

/* Whether d's log has a line of event. */
static bool
logged(const struct daemon *d, const char *event)
{
	json_t *lines = daemon_log_lines(d), *l;
	bool seen = false;
	size_t i;

	json_array_foreach(lines, i, l)
	{
		const char *e = json_string_value(json_object_get(l, "event"));
		seen |= e != NULL && strcmp(e, event) == 0;
	}
	json_decref(lines);
	return seen;
}

static void
setup(void)
{
	char err[512], name[64], cfg[1500], hosts[400], vkey[400], lsha[80];

	if (!pg_wanted())
		return;
	signal(SIGPIPE, SIG_IGN);
	ck_assert_msg(pg_start(&pg, err, sizeof(err)) == 0, "%s", err);
	snprintf(name, sizeof(name), "it%d", (int)getpid());
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"keys_dir\": \"%s/keys\", \"pepper\": "
	    "\"%s/pepper\", \"lease_seconds\": 3600, \"log_level\": \"info\"}",
	    url, dir, dir);
	ck_assert_int_eq(daemon_start(&A, "broker", cfg), 0);
	ck_assert_int_eq(daemon_start(&B, "broker", cfg), 0);
	read_key("admin", k.admin, sizeof(k.admin));
	read_key("launcher", k.launcher, sizeof(k.launcher));
	read_key("verifier", k.verifier, sizeof(k.verifier));
	/* The kit's calls go to A; the proxy knows both. */
	k.broker = A;
	k.up_pid = -1;
	k.up_port = dead_port();
	snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
	harness_write_file(hosts, "127.0.0.1 api.test\n");
	snprintf(vkey, sizeof(vkey), "%s/keys/launcher.key", dir);
	snprintf(lsha, sizeof(lsha), "%s", harness_key_sha256(vkey));
	snprintf(vkey, sizeof(vkey), "%s/keys/verifier.key", dir);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": [\"%s\", \"%s\"], \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "\"follower\": \"host-f\", \"log_level\": \"info\"}",
	    A.base, B.base, vkey, lsha, hosts);
	ck_assert_int_eq(daemon_start(&k.proxy, "proxy", cfg), 0);
	ck_assert_msg(follows(&k.proxy, A.addr), "the proxy never followed A");
}

/* up-key an issuer's whose token endpoint is at port, and a job whose
 * rule injects it (k.job, k.channel, k.tok). */
static void
job_with_issuer_at(unsigned port)
{
	char tok[200];

	snprintf(tok, sizeof(tok), "http://127.0.0.1:%u/oauth/token", port);
	json_decref(
	    harness_expect(&A, 200, "PUT", "/v1/secrets/up-key", k.admin, NULL,
		json_pack("{s:s, s:s, s:s, s:s}", "kind",
		    "oauth_client_credentials", "token_url", tok, "client_id",
		    "cordon-test", "client_secret", "s3cret-client")));
	injectkit_job_start(&k, "fleet503",
	    injectkit_manifest("fleet503",
		json_pack("[o]",
		    injectkit_inject_rule(&k, false, NULL, NULL))));
}

static void
teardown(void)
{
	if (!pg_wanted())
		return;
	daemon_stop(&k.proxy);
	if (A.pid > 0)
		ck_assert_int_eq(daemon_stop(&A), 0);
	ck_assert_int_eq(daemon_stop(&B), 0);
	pg_destroy(&pg);
	hung_issuer_stop(&hung);
}

START_TEST(an_issuers_503_moves_no_proxy_off_its_broker)
{
	char *resp;

	if (!pg_wanted()) {
		printf("CORDON_TEST_NO_PG=1: skipped\n");
		return;
	}
	job_with_issuer_at(dead_port());
	resp = injectkit_ask(&k, "GET", "/case/1", true);
	ck_assert_msg(http_status(resp) == 503, "%.500s", resp);
	ck_assert_msg(strstr(resp, "issuer_unavailable") != NULL, "%.500s",
	    resp);
	free(resp);
	/* The feed answered meanwhile (a poll a second): still A's. */
	ck_assert_msg(!logged(&k.proxy, "broker_failover"),
	    "the proxy turned to the next broker on an issuer's 503");
	ck_assert_msg(follows(&k.proxy, A.addr),
	    "the proxy's current broker is no longer A");
	ck_assert_msg(!logged(&B, "upstream_issue_failed"),
	    "the release was asked again at broker B");
	ck_assert_msg(logged(&A, "upstream_issue_failed"),
	    "broker A never tried the issuer");
}
END_TEST

START_TEST(a_stopping_broker_turns_the_proxy_to_the_next)
{
	char req[1024], *resp;
	int fd;

	if (!pg_wanted()) {
		printf("CORDON_TEST_NO_PG=1: skipped\n");
		return;
	}
	hung_issuer_start(&hung);
	job_with_issuer_at(hung.port);
	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET", "/case/1",
	    true, "close");
	fd = unix_connect(k.channel);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	/* The release waits at A for the issuer; A stops. */
	hung_issuer_wait_open(&hung, 1);
	ck_assert_int_eq(daemon_stop(&A), 0);
	resp = http_exchange(fd, "", 0, 20000);
	close(fd);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(http_status(resp) == 503, "%.500s", resp);
	printf("after A stopped: %s\n",
	    strstr(resp, "\r\n\r\n") ?: "(no body)");
	free(resp);
	ck_assert_msg(logged(&k.proxy, "broker_failover"),
	    "a stopping broker's 503 turned the proxy nowhere");
	ck_assert_msg(follows(&k.proxy, B.addr),
	    "the proxy's current broker is not B");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fleet_issuer503");
	TCase *tc = tcase_create("fleet_issuer503");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, an_issuers_503_moves_no_proxy_off_its_broker);
	tcase_add_test(tc, a_stopping_broker_turns_the_proxy_to_the_next);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
