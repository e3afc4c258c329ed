/*
 * The issuer credentials the proxy keeps for the scan do not fill a
 * job's own values (redteam3 #4): every job guarded at an issuer
 * secret's binding scans its answers for every credential of that secret
 * the proxy released to other jobs (kept until each one's expiry, up to
 * GUARD_ISSUED_MAX), and a job injecting the secret is guarded at its own
 * rule's binding. Those borrowed credentials were put in the job's own
 * set of REFLECT_VALUES_MAX (32) values, so the 33rd job of one issuer
 * secret within the hour (one manifest run 33 times) was refused 403
 * inject released_values_cap. No job is spawned (uid base 1397000
 * reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
			    "127.0.0.1 fill0.test\n127.0.0.1 fill1.test\n"
			    "127.0.0.1 fill2.test\n127.0.0.1 fill3.test\n"
			    "127.0.0.1 fill4.test\n127.0.0.1 fill5.test\n"
			    "127.0.0.1 fill6.test\n127.0.0.1 fill7.test\n"
			    "127.0.0.1 fill8.test\n127.0.0.1 fill9.test\n"
			    "127.0.0.1 fill10.test\n127.0.0.1 fill11.test\n"
			    "127.0.0.1 fill12.test\n127.0.0.1 fill13.test\n"
			    "127.0.0.1 fill14.test\n127.0.0.1 fill15.test\n";

/* The issuer (jobs/issuers/issuer.py, TLS on 127.0.0.1 with a test CA
 * made in dir): its pid (> 1), its port in *port. */
static pid_t
issuer_start(const char *dir, unsigned *port)
{
	char cert[400], key[400], portf[400], events[400], line[32];
	const char *const leaf[] = { "127.0.0.1", NULL };
	pid_t pid;

	snprintf(cert, sizeof(cert), "%s/127.0.0.1.pem", dir);
	snprintf(key, sizeof(key), "%s/127.0.0.1.key", dir);
	snprintf(portf, sizeof(portf), "%s/issuer.port", dir);
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	ck_assert_int_eq(test_ca_make(dir, leaf), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/python3", "python3", "-B",
		    CORDON_SOURCE_DIR
		    "/tests/integration/jobs/issuers/issuer.py",
		    "--cert", cert, "--key", key, "--port-file", portf,
		    "--events", events, (char *)NULL);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	*port = (unsigned)strtoul(line, NULL, 10);
	ck_assert_uint_gt(*port, 0);
	return pid;
}

/* An oauth secret name at the issuer on iport. */
static void
oauth_secret(struct injectkit *k, const char *name, unsigned iport)
{
	char path[128], url[128], rev[128];

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/oauth/token", iport);
	snprintf(rev, sizeof(rev), "https://127.0.0.1:%u/oauth/revoke", iport);
	json_decref(harness_expect(&k->broker, 200, "PUT", path, k->admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", url, "client_id",
		"cordon-test", "client_secret", "s3cret-client", "scope",
		"things:read", "revocation_url", rev)));
}

/* The issuer's port, once stack() started it. */
static unsigned issuer_port;

/* The stack: the issuer (pid into *ipid), broker, proxy, the oauth
 * secret up-key and the storing service (k->up_port). */
static void
stack(struct injectkit *k, pid_t *ipid)
{
	char dir[300], cfg[2048], path[400], hostsf[400];
	unsigned iport;

	k->up_pid = -1;
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	*ipid = issuer_start(dir, &iport);
	ck_assert_int_gt(*ipid, 1);
	snprintf(cfg, sizeof(cfg),
	    "{\"log_level\": \"info\", \"issuer_ca_file\": \"%s/ca.pem\"}",
	    dir);
	ck_assert_int_eq(daemon_start(&k->broker, "broker", cfg), 0);
	harness_broker_key(&k->broker, "admin", k->admin, sizeof(k->admin));
	harness_broker_key(&k->broker, "launcher", k->launcher,
	    sizeof(k->launcher));
	harness_broker_key(&k->broker, "verifier", k->verifier,
	    sizeof(k->verifier));
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", dir);
	harness_write_file(hostsf, hosts);
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	harness_write_file(path, k->verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "\"follower\": \"proxy-issuedstage\"}",
	    k->broker.base, path, harness_launcher_sha256(&k->broker), hostsf);
	ck_assert_int_eq(daemon_start(&k->proxy, "proxy", cfg), 0);
	issuer_port = iport;
	oauth_secret(k, "up-key", iport);
	k->up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k->up_port);
}

/*
 * n jobs of manifest "filler<i>", each injected its own token of the
 * oauth secret "mine<i>" at fill<i>.test on port (an echo): how many were
 * answered 200 (the first refusal printed into why).
 */
static int
fill(struct injectkit *k, int i, unsigned port, int n, char *why, size_t cap)
{
	struct injectkit f = *k;
	char secret[32], host[32], name[32];
	int ok = 0;

	snprintf(secret, sizeof(secret), "mine%d", i);
	snprintf(host, sizeof(host), "fill%d.test", i);
	snprintf(name, sizeof(name), "filler%d", i);
	oauth_secret(k, secret, issuer_port);
	f.up_port = port;
	json_t *rule = injectkit_inject_rule(&f, false, NULL, NULL);
	ck_assert_int_eq(json_object_set_new(rule, "host", json_string(host)),
	    0);
	ck_assert_int_eq(json_object_set_new(json_object_get(rule, "inject"),
			     "secret", json_string(secret)),
	    0);
	json_t *m = injectkit_manifest(name, json_pack("[o]", rule));
	for (int j = 0; j < n; j++) {
		char req[1024];
		injectkit_job_start(&f, name, json_incref(m));
		injectkit_request_to(&f, req, sizeof(req), host, "GET",
		    "/case/x", true, "close");
		char *resp = injectkit_send_on(f.channel, req);
		if (http_status(resp) == 200)
			ok++;
		else if (why[0] == '\0')
			snprintf(why, cap, "job %d of %s: %.300s", j, secret,
			    resp);
		free(resp);
	}
	json_decref(m);
	return ok;
}

/* One issuer secret for 40 jobs within the hour: every one injected. */
START_TEST(the_33rd_job_of_an_issuer_secret_is_not_refused)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *echo = upstream_start(NULL, NULL);
	char why[512] = "";
	pid_t ipid;

	ck_assert_ptr_nonnull(echo);
	stack(&k, &ipid);
	int ok = fill(&k, 0, upstream_port(echo), 40, why, sizeof(why));
	ck_assert_msg(ok == 40, "%d of 40 jobs injected; %s", ok, why);
	injectkit_stop(&k);
	upstream_stop(echo);
	kill(ipid, SIGKILL);
	waitpid(ipid, NULL, 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("issuedstage");
	TCase *tc = tcase_create("issued");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_33rd_job_of_an_issuer_secret_is_not_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
