/*
 * Another job reads a stored key (issue 18's HIGH, redteam2's crossjob):
 * job A's injected request leaves up-key at a service that shows what it
 * stores; job B, under another manifest whose rule to that service
 * injects nothing and that was released nothing, must get it redacted.
 * The proxy guards every request to a place the secret was bound to at
 * the broker (a rule's host, a declared guard_hosts name, an upstream
 * address an injected request went to): before a byte of it goes up,
 * the job's answers are scanned for the secret (a scan release), and
 * what the proxy cannot read there (passthrough, an upgrade) is refused.
 * Cases: B under another name on the address A's request went to; B
 * under the same name (before any injection: the host alone); a
 * declared name reached through a wildcard rule; B's passthrough and
 * upgrade rules to the bound host (403 guarded), and a passthrough under
 * a name nobody bound to the address A's request went to (closed); the broker stopped (503
 * guard_unavailable, the upstream got nothing); a scan-released value
 * never injected (B's request at the upstream carries no key); an
 * issuer's token (per job: no scan release) scanned for from the ones
 * the proxy released to any job; a list the broker cannot give for three
 * refreshes refusing every request 503. No job is
 * spawned (no uid range used; base 1310000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "issuerkit.h"
#include "upstream.h"

#include <check.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static const char value[] = "sk_live_guard_0123456789abcdef";

static const char hosts[] =
    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
    "127.0.0.1 other.api.test\n127.0.0.1 pass.api.test\n";

/* The stack: broker, proxy, the secret up-key; the upstream apart. */
static void
stack(struct injectkit *k)
{
	k->up_pid = -1;
	injectkit_stack_start(k, hosts, "proxy-guard", NULL);
	injectkit_secret(k, "up-key", value);
}

/* Job A: the kit's injecting rule 0 on k->up_port (api.test /case/). */
static void
job_a(struct injectkit *k)
{
	injectkit_job_start(k, "writer", injectkit_writer_manifest(k));
}

/* One of B's rules: host on k's upstream port, GET, /open/, no inject;
 * more members from extra (taken) when not NULL. */
static json_t *
rule_b(const struct injectkit *k, const char *host, json_t *extra)
{
	json_t *r = injectkit_open_rule(k, host);

	ck_assert_ptr_nonnull(r);
	if (extra != NULL) {
		ck_assert_int_eq(json_object_update(r, extra), 0);
		json_decref(extra);
	}
	return r;
}

/* Job B of manifest "reader", PUT with egress (taken), its channel at
 * the proxy into chan; k's job stays A's. */
static void
job_b(struct injectkit *k, json_t *egress, char chan[300])
{
	injectkit_job_open(k, "reader", injectkit_manifest("reader", egress),
	    NULL, chan, NULL);
}

/* Whether the proxy's log has secret_reflected for a job other than
 * not_job (B's). */
static bool
reflected_for_other(const struct injectkit *k, const char *not_job)
{
	json_t *lines = daemon_log_lines(&k->proxy), *v;
	size_t i;
	bool found = false;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		const char *job = json_string_value(json_object_get(v, "job"));
		if (ev != NULL && strcmp(ev, "secret_reflected") == 0 &&
		    job != NULL && strcmp(job, not_job) != 0)
			found = true;
	}
	json_decref(lines);
	return found;
}

/* Whether the proxy logged event (guard_tripped: a job read a key it
 * was scanned for and never had, its answer ended before the key and its
 * channel closed). */
static bool
logged(const struct injectkit *k, const char *event)
{
	return injectkit_logged(&k->proxy, event);
}

/* The stored key, read by B under another name on the address A's
 * injected request went to: the answer ends before it (guard_tripped,
 * B's channel closed), secret_reflected for B, the decision line naming
 * the secret B was scanned for. */
START_TEST(another_name_on_the_same_address_is_redacted)
{
	struct injectkit k;
	char chan[300], *resp;

	stack(&k);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a(&k);
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	job_b(&k, json_pack("[o]", rule_b(&k, "www.api.test", NULL)), chan);
	resp = injectkit_get_open(&k, chan, "www.api.test", "fields");
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "job B read job A's key: %s", resp);
	free(resp);
	ck_assert(reflected_for_other(&k, k.job));
	ck_assert(logged(&k, "guard_tripped"));
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));
	ck_assert_int_ge(injectkit_metric(&k.proxy,
			     "cordon_proxy_guard_scan_releases_total"),
	    1);
	ck_assert_int_ge(injectkit_metric(&k.proxy,
			     "cordon_proxy_guarded_requests_total"),
	    1);
	injectkit_stop(&k);
}
END_TEST

/* B under the same name, on a rule of its own that injects nothing:
 * guarded by the host before any injection (no address known yet), and
 * the key stored after is redacted. */
START_TEST(the_same_name_is_guarded_by_its_host)
{
	struct injectkit k;
	char chan[300], *resp;

	stack(&k);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a(&k);
	job_b(&k, json_pack("[o]", rule_b(&k, "api.test", NULL)), chan);
	resp = injectkit_get_open(&k, chan, "api.test", "fields");
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "X-Echo: none") != NULL, "%.400s", resp);
	free(resp);
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	resp = injectkit_get_open(&k, chan, "api.test", "fields");
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "job B read job A's key: %s", resp);
	free(resp);
	injectkit_stop(&k);
}
END_TEST

/* A name declared in the secret's guard_hosts, reached by B through a
 * wildcard rule: guarded by that name before any injection. */
START_TEST(a_declared_name_through_a_wildcard_rule_is_guarded)
{
	struct injectkit k;
	char chan[300], *resp;

	stack(&k);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	json_decref(harness_expect(&k.broker, 200, "PUT", "/v1/secrets/up-key",
	    k.admin, NULL,
	    json_pack("{s:s, s:[s]}", "value", value, "guard_hosts",
		"other.api.test")));
	job_a(&k);
	job_b(&k, json_pack("[o]", rule_b(&k, "*.api.test", NULL)), chan);
	resp = injectkit_get_open(&k, chan, "other.api.test", "fields");
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	ck_assert(
	    injectkit_decisions_hold(&k.proxy, "\"host\":\"other.api.test\""));
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	resp = injectkit_get_open(&k, chan, "other.api.test", "fields");
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "job B read job A's key: %s", resp);
	free(resp);
	ck_assert(logged(&k, "guard_tripped"));
	injectkit_stop(&k);
}
END_TEST

/* B's passthrough and upgrade rules to the bound host, made before the
 * binding was (the broker refuses them once it is): 403 guarded. */
START_TEST(passthrough_and_upgrade_to_a_bound_host_are_refused)
{
	struct injectkit k;
	char chan[300], req[512], *resp;
	json_t *egress;

	stack(&k);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	/* B's manifest first: api.test is bound by A's, after. */
	egress = json_pack("[o, o, o]",
	    json_pack("{s:s, s:i, s:s, s:[s], s:s, s:[s]}", "host", "api.test",
		"port", k.up_port + 0, "tls", "passthrough", "methods", "GET",
		"reason", "opaque", "allow_cidrs", "127.0.0.0/8"),
	    rule_b(&k, "www.api.test", json_pack("{s:b}", "upgrade", 1)),
	    json_pack("{s:s, s:i, s:s, s:[s], s:s, s:[s]}", "host",
		"pass.api.test", "port", k.up_port + 0, "tls", "passthrough",
		"methods", "GET", "reason", "opaque", "allow_cidrs",
		"127.0.0.0/8"));
	ck_assert_ptr_nonnull(egress);
	json_decref(
	    harness_expect(&k.broker, 200, "PUT", "/v1/manifests/reader",
		k.admin, NULL, injectkit_manifest("reader", egress)));
	job_a(&k);
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	injectkit_job_of(&k, "reader", 0, NULL, chan, NULL);
	snprintf(req, sizeof(req),
	    "CONNECT api.test:%u HTTP/1.1\r\nHost: api.test:%u\r\n\r\n",
	    k.up_port, k.up_port);
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(http_status(resp) == 403, "%.400s", resp);
	ck_assert_msg(strstr(resp, "X-Cordon-Deny: guarded") != NULL, "%.400s",
	    resp);
	ck_assert_msg(strstr(resp, "passthrough") != NULL, "%.400s", resp);
	free(resp);
	snprintf(req, sizeof(req),
	    "GET http://www.api.test:%u/open/upgrade HTTP/1.1\r\n"
	    "Host: www.api.test:%u\r\nConnection: Upgrade\r\nUpgrade: "
	    "websocket\r\n\r\n",
	    k.up_port, k.up_port);
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(http_status(resp) == 403, "%.400s", resp);
	ck_assert_msg(strstr(resp, "X-Cordon-Deny: guarded") != NULL, "%.400s",
	    resp);
	ck_assert_msg(strstr(resp, "upgrade") != NULL, "%.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "%.400s", resp);
	free(resp);
	/* A name no binding holds, passthrough, resolved to the address A's
	 * injected request went to: the tunnel closes once the address is
	 * known (after the ClientHello), before a byte of it goes. */
	int fd = unix_connect(chan);
	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "CONNECT pass.api.test:%u HTTP/1.1\r\nHost: pass.api.test:%u\r\n"
	    "\r\n",
	    k.up_port, k.up_port);
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	ck_assert_ptr_nonnull(ctx);
	SSL *ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	SSL_set_tlsext_host_name(ssl, "pass.api.test");
	/* A tunnel let through would hold the handshake: 5 s at most. */
	struct timeval rcv = { 5, 0 };
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv,
			     sizeof(rcv)),
	    0);
	SSL_set_fd(ssl, fd);
	ck_assert_int_ne(SSL_connect(ssl), 1);
	SSL_free(ssl);
	close(fd);
	bool refused = false;
	for (int i = 0; i < 100 && !refused; i++) {
		json_t *lines = daemon_log_lines(&k.proxy), *v;
		size_t n;
		json_array_foreach(lines, n, v)
		{
			const char *h =
			    json_string_value(json_object_get(v, "host"));
			const char *r =
			    json_string_value(json_object_get(v, "reason"));
			const char *d =
			    json_string_value(json_object_get(v, "detail"));
			refused |= h != NULL &&
			    strcmp(h, "pass.api.test") == 0 && r != NULL &&
			    strcmp(r, "guarded") == 0 && d != NULL &&
			    strcmp(d, "passthrough") == 0;
		}
		json_decref(lines);
		if (!refused)
			usleep(50000);
	}
	ck_assert_msg(refused, "no guarded passthrough line for pass.api.test");
	injectkit_stop(&k);
}
END_TEST

/*
 * On the echoing upstream (upstream.c): A's injected request, then B's
 * scan-released request carries no key (the value scanned for is never
 * injected); then, the broker stopped, B's next request to the bound
 * host (a new job's, nothing released yet) is 503 guard_unavailable and
 * the upstream gets nothing.
 */
START_TEST(a_scan_release_is_never_injected_and_fails_closed)
{
	struct injectkit k;
	char chan[300], chan2[300], *resp;
	struct upstream *u = upstream_start(NULL, NULL);

	ck_assert_ptr_nonnull(u);
	stack(&k);
	k.up_port = upstream_port(u);
	job_a(&k);
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "%.400s", resp);
	free(resp);
	job_b(&k, json_pack("[o]", rule_b(&k, "www.api.test", NULL)), chan);
	resp = injectkit_get_open(&k, chan, "www.api.test", "x");
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	char *head = upstream_last_head(u);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strstr(head, "www.api.test") != NULL, "%s", head);
	ck_assert_msg(!injectkit_holds_piece(value, head), "%s", head);
	ck_assert_msg(strstr(head, "X-Api-Key") == NULL, "%s", head);
	free(head);
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));

	/* A second reader, released nothing yet. */
	job_b(&k, json_pack("[o]", rule_b(&k, "www.api.test", NULL)), chan2);
	unsigned before = upstream_requests(u);
	ck_assert_int_gt(k.broker.pid, 1);
	ck_assert_int_eq(kill(k.broker.pid, SIGSTOP), 0);
	ck_assert_msg(harness_all_stopped(k.broker.pid),
	    "the broker (pid %d) did not stop", (int)k.broker.pid);
	/* Past the release's 5 s timeout: not injectkit_send's 5 s. */
	char req[1024];
	injectkit_request_to(&k, req, sizeof(req), "www.api.test", "GET",
	    "/open/x", false, "close");
	int fd = unix_connect(chan2);
	ck_assert_int_ge(fd, 0);
	resp = http_exchange(fd, req, strlen(req), 20000);
	close(fd);
	ck_assert_int_eq(kill(k.broker.pid, SIGCONT), 0);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(http_status(resp) == 503, "%.400s", resp);
	ck_assert_msg(strstr(resp, "guard_unavailable") != NULL, "%.400s",
	    resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(u), before);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/*
 * An issuer's secret: job A's injected request stores A's own token
 * (oat_...) at the service; the broker gives no scan release of an
 * issuer's secret (its credentials are per job), so B, under another
 * name at the same address, is scanned for the tokens the proxy released
 * to any job: the answer ends before it (guard_tripped), secret_reflected
 * for B.
 */
START_TEST(an_issuers_token_stored_by_another_job_is_redacted)
{
	struct injectkit k = { .up_pid = -1 };
	char dir[300], cfg[2048], path[400], chan[300], *resp;
	unsigned iport;
	pid_t ipid;

	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	ipid = issuerkit_start(dir, path, NULL, &iport);
	snprintf(cfg, sizeof(cfg),
	    "{\"log_level\": \"info\", \"issuer_ca_file\": \"%s/ca.pem\"}",
	    dir);
	injectkit_stack_start_cfg(&k, cfg, hosts, "proxy-guard", NULL);
	injectkit_oauth_secret(&k, "up-key", iport);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a(&k);
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	job_b(&k, json_pack("[o]", rule_b(&k, "www.api.test", NULL)), chan);
	resp = injectkit_get_open(&k, chan, "www.api.test", "fields");
	ck_assert_msg(strstr(resp, "oat_") == NULL,
	    "job B read job A's token: %s", resp);
	free(resp);
	ck_assert(reflected_for_other(&k, k.job));
	ck_assert(logged(&k, "guard_tripped"));
	ck_assert(injectkit_decisions_hold(&k.proxy, "\"guard\":[\"up-key\"]"));
	injectkit_stop(&k);
	issuerkit_kill(&ipid);
}
END_TEST

/*
 * The broker answers the feed but not the bindings (its table renamed
 * under it: a store failure of that query alone): once the proxy has not
 * read a list for three bindings_refresh_seconds, every request is
 * refused 503 bindings_unavailable, the injected one too.
 */
START_TEST(an_unread_bindings_list_refuses_every_request)
{
	struct injectkit k = { .up_pid = -1 };
	char cmd[600], *resp = NULL;
	bool refused = false;

	injectkit_stack_start(&k, hosts, "proxy-guard",
	    "\"bindings_refresh_seconds\": 1");
	injectkit_secret(&k, "up-key", value);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a(&k);
	resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	snprintf(cmd, sizeof(cmd),
	    "sqlite3 -cmd '.timeout 10000' %s/var/broker/broker.db "
	    "'ALTER TABLE bindings RENAME TO bindings_gone'",
	    k.broker.dir);
	ck_assert_int_eq(system(cmd), 0);
	for (int i = 0; i < 200 && !refused; i++) {
		resp = injectkit_ask(&k, "GET", "/case/x", true);
		refused = http_status(resp) == 503 &&
		    strstr(resp, "bindings_unavailable") != NULL;
		if (!refused) {
			ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
			free(resp);
			usleep(100000);
		}
	}
	ck_assert_msg(refused, "never refused bindings_unavailable");
	free(resp);
	injectkit_stop(&k);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("guard");
	TCase *tc = tcase_create("guard");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, another_name_on_the_same_address_is_redacted);
	tcase_add_test(tc, the_same_name_is_guarded_by_its_host);
	tcase_add_test(tc, a_declared_name_through_a_wildcard_rule_is_guarded);
	tcase_add_test(tc, passthrough_and_upgrade_to_a_bound_host_are_refused);
	tcase_add_test(tc, a_scan_release_is_never_injected_and_fails_closed);
	tcase_add_test(tc, an_issuers_token_stored_by_another_job_is_redacted);
	tcase_add_test(tc, an_unread_bindings_list_refuses_every_request);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
