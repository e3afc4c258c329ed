/*
 * The issuer credentials kept for the scan, full (redteam3's #3, issue
 * 18): the proxy keeps every issuer credential it released, proxy-wide,
 * for the guard's scan (GUARD_ISSUED_MAX, 256, each until its own
 * expiry), and one released past that was injected all the same but kept
 * for no one's scan: after 256 tokens of 16 other issuer secrets, job A's
 * injected request stored A's token at the storing service and job B,
 * under another name at that address, read it in clear. Now a credential
 * that cannot be kept is not injected: 503 guard_unavailable issued_cap,
 * and B reads nothing of it. And those kept credentials do not fill a
 * job's own values (redteam3 #4): they are borrowed into a guarded job's
 * set apart from its REFLECT_VALUES_MAX (32), where the 33rd job of one
 * issuer secret within the hour (one manifest run 33 times) was refused
 * 403 inject released_values_cap. No job is spawned (uid bases 1391000
 * and 1397000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "issuerkit.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The issuer's port, once stack() started it. */
static unsigned issuer_port;

/* The stack: the issuer (pid into *ipid), broker, proxy, the oauth
 * secret up-key and the storing service (k->up_port). */
static void
stack(struct injectkit *k, pid_t *ipid)
{
	char dir[300], cfg[2048], path[400];
	unsigned iport;

	k->up_pid = -1;
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	*ipid = issuerkit_start(dir, path, NULL, &iport);
	ck_assert_int_gt(*ipid, 1);
	snprintf(cfg, sizeof(cfg),
	    "{\"log_level\": \"info\", \"issuer_ca_file\": \"%s/ca.pem\"}",
	    dir);
	injectkit_stack_start_cfg(k, cfg, hosts, "proxy-issued", NULL);
	issuer_port = iport;
	injectkit_oauth_secret(k, "up-key", iport);
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
	injectkit_oauth_secret(k, secret, issuer_port);
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

/* 16 issuer secrets of 16 jobs each (256 tokens kept), then A's. */
START_TEST(a_token_past_the_kept_ones_is_not_injected)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *echo[16];
	char chan[300], req[1024], why[512] = "", *resp;
	pid_t ipid;

	stack(&k, &ipid);
	for (int i = 0; i < 16; i++) {
		echo[i] = upstream_start(NULL, NULL);
		ck_assert_ptr_nonnull(echo[i]);
		int ok =
		    fill(&k, i, upstream_port(echo[i]), 16, why, sizeof(why));
		ck_assert_msg(ok == 16, "%d of 16; %s", ok, why);
	}
	/* Job A stores its own token of up-key; B reads it. */
	injectkit_job_start(&k, "writer", injectkit_writer_manifest(&k));
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 503 &&
		strstr(resp, "issued_cap") != NULL,
	    "job A's token past the 256 kept was injected: %.400s", resp);
	free(resp);
	injectkit_job_open(&k, "reader",
	    injectkit_manifest("reader",
		json_pack("[o]", injectkit_open_rule(&k, "www.api.test"))),
	    NULL, chan, NULL);
	injectkit_request_to(&k, req, sizeof(req), "www.api.test", "GET",
	    "/open/fields", false, "close");
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(strstr(resp, "oat_") == NULL,
	    "job B read job A's token after 256 others were kept: %.300s",
	    resp);
	free(resp);
	injectkit_stop(&k);
	for (int i = 0; i < 16; i++)
		upstream_stop(echo[i]);
	issuerkit_kill(&ipid);
}
END_TEST

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
	issuerkit_kill(&ipid);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("guardfix_issued");
	TCase *tc = tcase_create("issued");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_token_past_the_kept_ones_is_not_injected);
	tcase_add_test(tc, the_33rd_job_of_an_issuer_secret_is_not_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
