/*
 * A hostile review of the cross-job guard (redteam3): the holes tried
 * that are closed, kept as regression tests. Job B is the attacker's
 * (its own manifest, nothing injected); job A's manifest injects up-key
 * at api.test. Cases: B's broker route (the proxy's verifier key rides
 * on it) does not reach the bindings' route nor a scan release; B's
 * kept-alive connection opened before A's first injection is guarded at
 * its next request, on the same upstream connection, once the address is
 * bound; B's `*.api.test` passthrough rule, PUT before any binding, is
 * refused at an address an injected request went to under a name nobody
 * bound (the address alone decides, after the connect). The holes found
 * are kept outside the tree (/work/coord/redteam3/). No job is spawned
 * (uid base 1380000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char value[] = "sk_live_redteam3_0123456789abcdef";

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n";

/* The stack on the C upstream u: broker, proxy, up-key. */
static void
stack(struct injectkit *k, struct upstream *u)
{
	k->up_pid = -1;
	injectkit_stack_start(k, hosts, "proxy-redteam3", NULL);
	injectkit_secret(k, "up-key", value);
	k->up_port = upstream_port(u);
}

/* Job A: the kit's injecting rule 0 (api.test /case/), its channel k's. */
static void
job_a(struct injectkit *k)
{
	injectkit_job_start(k, "writer", injectkit_writer_manifest(k));
}

/* A's injected request: 200, and its address bound. */
static void
a_injects(struct injectkit *k)
{
	char *resp = injectkit_ask(k, "GET", "/case/x", true);

	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "%.400s", resp);
	free(resp);
}

/* PUTs manifest "reader" with egress (taken), then opens a job of it at
 * the proxy: its channel into chan. */
static void
job_b(struct injectkit *k, json_t *egress, char chan[300])
{
	injectkit_job_open(k, "reader", injectkit_manifest("reader", egress),
	    NULL, chan, NULL);
}

/* B's plain rule: www.api.test on k's port, GET, /open/, no inject. */
static json_t *
rule_b(const struct injectkit *k)
{
	return injectkit_open_rule(k, "www.api.test");
}

/* Whether a line of the proxy's decisions.log holds both a and b. */
static bool
decision_has(const struct daemon *proxy, const char *a, const char *b)
{
	char path[400], line[8192];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    proxy->dir);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, a) != NULL && strstr(line, b) != NULL;
	fclose(f);
	return found;
}

/* B's requests to broker.cordon's bindings and scan release routes: the
 * broker route takes POST /v1/token alone (403 broker_path), and the
 * broker heard of neither. */
START_TEST(the_broker_route_reaches_no_binding_nor_scan_release)
{
	struct injectkit k;
	struct upstream *u = upstream_start(NULL, NULL);
	char chan[300], req[1024], path[300], *resp;
	static const char body[] =
	    "{\"secret\":\"up-key\",\"job\":\"x\",\"addr\":\"127.0.0.1:1\"}";

	ck_assert_ptr_nonnull(u);
	stack(&k, u);
	job_a(&k);
	job_b(&k, json_pack("[o]", rule_b(&k)), chan);
	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/bindings HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(http_status(resp) == 403, "%.400s", resp);
	ck_assert_msg(strstr(resp, "broker_path") != NULL, "%.400s", resp);
	free(resp);
	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/up-key/release?purpose=scan&host=api.test",
	    k.job);
	snprintf(req, sizeof(req),
	    "POST http://broker.cordon%s HTTP/1.1\r\nHost: broker.cordon\r\n"
	    "Content-Length: 0\r\nConnection: close\r\n\r\n",
	    path);
	resp = injectkit_send_on(chan, req);
	ck_assert_msg(http_status(resp) == 403, "%.400s", resp);
	ck_assert_msg(strstr(resp, "broker_path") != NULL, "%.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "%.400s", resp);
	free(resp);
	ck_assert_int_eq(injectkit_metric(&k.proxy,
			     "cordon_proxy_guard_scan_releases_total"),
	    0);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/* B's kept-alive connection, its first request before A's injection
 * (nothing bound at www.api.test or the address yet: no guard), its
 * second after, on the same client and upstream connections: guarded. */
START_TEST(a_kept_alive_connection_is_guarded_once_its_address_is_bound)
{
	struct injectkit k;
	struct upstream *u = upstream_start(NULL, NULL);
	char chan[300], req[1024], *resp;

	ck_assert_ptr_nonnull(u);
	stack(&k, u);
	job_a(&k);
	job_b(&k, json_pack("[o]", rule_b(&k)), chan);
	int fd = unix_connect(chan);
	ck_assert_int_ge(fd, 0);
	injectkit_request_to(&k, req, sizeof(req), "www.api.test", "GET",
	    "/open/first", false, "keep-alive");
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_msg(resp != NULL && http_status(resp) == 200, "%.400s", resp);
	free(resp);
	ck_assert(decision_has(&k.proxy, "/open/first", "\"decision\""));
	ck_assert(!decision_has(&k.proxy, "/open/first", "\"guard\""));
	unsigned conns = upstream_connections(u);

	a_injects(&k);
	injectkit_request_to(&k, req, sizeof(req), "www.api.test", "GET",
	    "/open/second", false, "keep-alive");
	resp = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	ck_assert_msg(resp != NULL && http_status(resp) == 200, "%.400s", resp);
	free(resp);
	ck_assert_msg(decision_has(&k.proxy, "/open/second",
			  "\"guard\":[\"up-key\"]"),
	    "B's second request on its kept-alive connection was not guarded");
	/* A's one connection more: B's second went on its first. */
	ck_assert_uint_eq(upstream_connections(u), conns + 1);
	char *head = upstream_last_head(u);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strstr(head, "/open/second") != NULL, "%s", head);
	ck_assert_msg(!injectkit_holds_piece(value, head), "%s", head);
	free(head);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/* B's "*.api.test" passthrough rule (PUT before any binding), to
 * www.api.test once A's injected request bound its address: CONNECT
 * answered (the name is bound to nothing), then, the ClientHello read and
 * the upstream connected, the tunnel refused by its address: 403 guarded
 * passthrough on the decision line, no byte of B's handshake sent up. */
START_TEST(a_wildcard_passthrough_is_refused_at_a_bound_address)
{
	struct injectkit k;
	struct upstream *u = upstream_start(NULL, NULL);
	char chan[300], req[512], *resp;

	ck_assert_ptr_nonnull(u);
	stack(&k, u);
	json_decref(harness_expect(&k.broker, 200, "PUT",
	    "/v1/manifests/reader", k.admin, NULL,
	    injectkit_manifest("reader",
		json_pack("[{s:s, s:i, s:s, s:[s], s:s, s:[s]}]", "host",
		    "*.api.test", "port", k.up_port, "tls", "passthrough",
		    "methods", "GET", "reason", "opaque", "allow_cidrs",
		    "127.0.0.0/8"))));
	job_a(&k);
	a_injects(&k);
	injectkit_job_of(&k, "reader", 0, NULL, chan, NULL);
	unsigned before = upstream_requests(u);

	int fd = unix_connect(chan);
	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "CONNECT www.api.test:%u HTTP/1.1\r\nHost: www.api.test:%u\r\n\r\n",
	    k.up_port, k.up_port);
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_msg(resp != NULL && http_status(resp) == 200, "%.400s", resp);
	free(resp);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	ck_assert_ptr_nonnull(ctx);
	SSL *ssl = SSL_new(ctx);
	ck_assert_ptr_nonnull(ssl);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, "www.api.test");
	ck_assert_int_ne(SSL_connect(ssl), 1);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	for (int i = 0; i < 100 &&
	     !decision_has(&k.proxy, "\"reason\":\"guarded\"", "passthrough");
	     i++)
		usleep(50000);
	ck_assert(decision_has(&k.proxy, "\"host\":\"www.api.test\"",
	    "\"reason\":\"guarded\""));
	ck_assert(decision_has(&k.proxy, "\"reason\":\"guarded\"",
	    "\"detail\":\"passthrough\""));
	ck_assert_uint_eq(upstream_requests(u), before);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam3_guard");
	TCase *tc = tcase_create("guard");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc,
	    the_broker_route_reaches_no_binding_nor_scan_release);
	tcase_add_test(tc,
	    a_kept_alive_connection_is_guarded_once_its_address_is_bound);
	tcase_add_test(tc,
	    a_wildcard_passthrough_is_refused_at_a_bound_address);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
