/*
 * A list of broker addresses (a fleet's): the configuration's "broker" as
 * a string or an array (CONFIG_LIST), the blocking HTTP client (the
 * hatch's, the CLI's, cordon run's), the proxy's broker client and the
 * launcher's watch, each failing over along it. The servers here are
 * threads on loopback that answer one fixed status and body, or accept
 * and never answer; a port nobody listens on is a broker that is down.
 */
#include "brokerclient.h"
#include "config.h"
#include "http_client.h"
#include "watch.h"

#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A server thread: status 0 accepts and never answers. */
struct fake {
	int fd;
	int status;
	const char *body; /* the answer's JSON; NULL: {"status": N} */
	atomic_int requests;
	atomic_int posts; /* of them, POSTs */
	atomic_bool stop;
	pthread_t th;
	char base[64];
};

static void *
fake_main(void *arg)
{
	struct fake *f = arg;

	while (!atomic_load(&f->stop)) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		char buf[4096], out[512];
		int c, n;

		if (poll(&p, 1, 50) != 1)
			continue;
		if ((c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		/* The head (the tests send no body). */
		for (n = 0; n < (int)sizeof(buf) - 1;) {
			ssize_t k =
			    recv(c, buf + n, sizeof(buf) - 1 - (size_t)n, 0);
			if (k <= 0)
				break;
			n += (int)k;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n") != NULL)
				break;
		}
		atomic_fetch_add(&f->requests, 1);
		if (strncmp(buf, "POST ", 5) == 0)
			atomic_fetch_add(&f->posts, 1);
		if (f->status == 0) {
			/* Silent: held until the client gives up. */
			struct pollfd q = { .fd = c, .events = POLLIN };
			while (!atomic_load(&f->stop) && poll(&q, 1, 50) == 0)
				;
			close(c);
			continue;
		}
		char body[200];
		if (f->body != NULL)
			snprintf(body, sizeof(body), "%s", f->body);
		else
			snprintf(body, sizeof(body), "{\"status\":%d}",
			    f->status);
		n = snprintf(out, sizeof(out),
		    "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		    f->status, strlen(body), body);
		(void)send(c, out, (size_t)n, MSG_NOSIGNAL);
		close(c);
	}
	return NULL;
}

static void
fake_start_body(struct fake *f, int status, const char *body)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	memset(f, 0, sizeof(*f));
	f->status = status;
	f->body = body;
	f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(f->fd, 16), 0);
	ck_assert_int_eq(getsockname(f->fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%u",
	    ntohs(sa.sin_port));
	ck_assert_int_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void
fake_start(struct fake *f, int status)
{
	fake_start_body(f, status, NULL);
}

static void
fake_stop(struct fake *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->th, NULL);
	close(f->fd);
}

/* A loopback port nobody listens on: a broker that is down. */
static void
dead_base(char *out, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(out, len, "http://127.0.0.1:%u", ntohs(sa.sin_port));
	close(fd);
}

static long
status_of(const char *list, long timeout_ms, int *ret_rc)
{
	struct httpc_answer a;
	long status;

	*ret_rc = httpc_request(list, "GET", "/v1/x", NULL, NULL, NULL,
	    timeout_ms, &a);
	status = *ret_rc == 0 ? a.status : 0;
	httpc_answer_free(&a);
	return status;
}

START_TEST(bases_split)
{
	char b[HTTPC_BASES_MAX][HTTPC_BASE_MAX];
	char many[2048] = "http://a";

	ck_assert_int_eq(httpc_bases("http://a:1", b, HTTPC_BASES_MAX), 1);
	ck_assert_str_eq(b[0], "http://a:1");
	ck_assert_int_eq(httpc_bases("http://a:1,http://b:2", b,
			     HTTPC_BASES_MAX),
	    2);
	ck_assert_str_eq(b[1], "http://b:2");
	ck_assert_int_eq(httpc_bases("http://a,,http://b", b, HTTPC_BASES_MAX),
	    -EINVAL);
	ck_assert_int_eq(httpc_bases("http://a,", b, HTTPC_BASES_MAX), -EINVAL);
	ck_assert_int_eq(httpc_bases("", b, HTTPC_BASES_MAX), -EINVAL);
	for (int i = 1; i <= HTTPC_BASES_MAX; i++) {
		size_t at = strlen(many);
		snprintf(many + at, sizeof(many) - at, ",http://a");
	}
	ck_assert_int_eq(httpc_bases(many, b, HTTPC_BASES_MAX), -EINVAL);
}
END_TEST

START_TEST(down_then_up)
{
	struct fake up;
	char dead[64], list[200];
	int rc;

	fake_start(&up, 200);
	dead_base(dead, sizeof(dead));
	snprintf(list, sizeof(list), "%s,%s", dead, up.base);
	ck_assert_int_eq(status_of(list, 5000, &rc), 200);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(atomic_load(&up.requests), 1);
	/* Alone, the dead one is refused, as a single base always was. */
	ck_assert_int_eq(status_of(dead, 5000, &rc), 0);
	ck_assert_int_eq(rc, -ECONNREFUSED);
	fake_stop(&up);
}
END_TEST

START_TEST(a_503_is_passed_over_and_remembered)
{
	struct fake lost, up;
	char list[200];
	int rc;

	fake_start(&lost, 503);
	fake_start(&up, 200);
	snprintf(list, sizeof(list), "%s,%s", lost.base, up.base);
	ck_assert_int_eq(status_of(list, 5000, &rc), 200);
	ck_assert_int_eq(atomic_load(&lost.requests), 1);
	/* The next call goes first to the one that answered. */
	ck_assert_int_eq(status_of(list, 5000, &rc), 200);
	ck_assert_int_eq(atomic_load(&lost.requests), 1);
	ck_assert_int_eq(atomic_load(&up.requests), 2);
	fake_stop(&up);
	/* None answers but with 503: that 503 is the answer. */
	ck_assert_int_eq(status_of(list, 5000, &rc), 503);
	ck_assert_int_eq(rc, 0);
	fake_stop(&lost);
}
END_TEST

START_TEST(silence_is_passed_over)
{
	struct fake mute, up;
	char list[200];
	int rc;

	fake_start(&mute, 0);
	fake_start(&up, 200);
	snprintf(list, sizeof(list), "%s,%s", mute.base, up.base);
	ck_assert_int_eq(status_of(list, 300, &rc), 200);
	ck_assert_int_eq(atomic_load(&mute.requests), 1);
	fake_stop(&up);
	fake_stop(&mute);
}
END_TEST

/* A call's status at list by method and path: the rc in *ret_rc. */
static long
call_status(const char *list, const char *method, const char *path,
    long timeout_ms, int *ret_rc)
{
	struct httpc_answer a;
	long status;

	*ret_rc =
	    httpc_request(list, method, path, NULL, NULL, NULL, timeout_ms, &a);
	status = *ret_rc == 0 ? a.status : 0;
	httpc_answer_free(&a);
	return status;
}

/* A broker that took a mint or a job's creation and answers too late
 * may have carried it out: it is not sent to the next one (twice
 * granted, twice created). Refused at connect or answered 503, it was
 * not carried out, and it is; an idempotent POST goes on anyway. */
START_TEST(a_post_that_went_out_is_not_sent_twice)
{
	struct fake mute, lost, up;
	char dead[64], list[200];
	int rc;

	fake_start(&mute, 0);
	fake_start(&lost, 503);
	fake_start(&up, 200);
	dead_base(dead, sizeof(dead));
	snprintf(list, sizeof(list), "%s,%s", mute.base, up.base);
	ck_assert_int_eq(call_status(list, "POST", "/v1/token", 300, &rc), 0);
	ck_assert_int_eq(rc, -ETIMEDOUT);
	ck_assert_int_eq(atomic_load(&mute.posts), 1);
	ck_assert_int_eq(atomic_load(&up.posts), 0);
	ck_assert_int_eq(call_status(list, "POST", "/v1/jobs", 300, &rc), 0);
	ck_assert_int_eq(rc, -ETIMEDOUT);
	ck_assert_int_eq(atomic_load(&up.posts), 0);
	/* A revoke, a heartbeat, an introspection: the same twice. */
	ck_assert_int_eq(call_status(list, "POST", "/v1/jobs/j1/revoke", 300,
			     &rc),
	    200);
	ck_assert_int_eq(call_status(list, "POST", "/v1/jobs/j1/heartbeat", 300,
			     &rc),
	    200);
	ck_assert_int_eq(call_status(list, "POST", "/v1/introspect", 300, &rc),
	    200);
	ck_assert_int_eq(atomic_load(&up.posts), 3);
	/* Known not done: refused, or a 503. */
	snprintf(list, sizeof(list), "%s,%s", dead, up.base);
	ck_assert_int_eq(call_status(list, "POST", "/v1/token", 300, &rc), 200);
	snprintf(list, sizeof(list), "%s,%s", lost.base, up.base);
	ck_assert_int_eq(call_status(list, "POST", "/v1/jobs", 300, &rc), 200);
	ck_assert_int_eq(atomic_load(&up.posts), 5);
	ck_assert(!httpc_repeatable("POST", "/v1/token"));
	ck_assert(!httpc_repeatable("POST", "/v1/jobs"));
	ck_assert(!httpc_repeatable("POST", "/v1/jobs/j/secrets/s/release"));
	ck_assert(!httpc_repeatable("POST", "/v1/jobs/j/revoke/x"));
	ck_assert(!httpc_repeatable("PATCH", "/v1/x"));
	ck_assert(httpc_repeatable("POST", "/v1/revoke"));
	ck_assert(httpc_repeatable("GET", "/v1/token"));
	ck_assert(httpc_repeatable("PUT", "/v1/manifests/m"));
	ck_assert(httpc_repeatable("DELETE", "/v1/secrets/s"));
	fake_stop(&up);
	fake_stop(&lost);
	fake_stop(&mute);
}
END_TEST

START_TEST(nothing_answers)
{
	char a[64], b[64], list[200];
	int rc;

	dead_base(a, sizeof(a));
	dead_base(b, sizeof(b));
	snprintf(list, sizeof(list), "%s,%s", a, b);
	ck_assert_int_eq(status_of(list, 1000, &rc), 0);
	ck_assert_int_eq(rc, -ECONNREFUSED);
	ck_assert_int_eq(status_of("http://a,,http://b", 1000, &rc), 0);
	ck_assert_int_eq(rc, -EINVAL);
}
END_TEST

/* --- the proxy's broker client ---------------------------------------- */

/* A feed's answer that is also any call's: head 7, nothing revoked. */
#define FEED_BODY "{\"head\": 7, \"revocations\": []}"

struct answered {
	struct event_base *base;
	int status;
	bool done;
};

static void
on_answer(void *arg, int status, json_t *body)
{
	struct answered *a = arg;

	(void)body;
	a->status = status;
	a->done = true;
	event_base_loopbreak(a->base);
}

/* Runs base until a says done or 10 s passed. */
static void
run_until(struct event_base *base, const bool *done)
{
	struct timeval tick = { 0, 50 * 1000 };

	for (int i = 0; i < 200 && !*done; i++) {
		event_base_loopexit(base, &tick);
		event_base_dispatch(base);
	}
}

START_TEST(proxy_client_passes_a_503_over)
{
	struct fake lost, up;
	struct event_base *base = event_base_new();
	struct brokerclient *bc;
	struct answered a = { .base = base };
	char list[200], name[64];
	bool ok = false;

	fake_start(&lost, 503);
	fake_start_body(&up, 200, FEED_BODY);
	snprintf(list, sizeof(list), "%s,%s", lost.base, up.base);
	struct brokerclient_options o = { .base = list,
		.verifier_key = "crk_verifier",
		.follower = "host-t" };
	ck_assert_int_eq(brokerclient_new(base, &o, &bc), 0);
	/* Sent to the first broker with the feed's first poll: its 503
	 * sends it on to the second. */
	ck_assert_ptr_nonnull(brokerclient_call(bc, "GET", "/v1/jobs/j/rules",
	    NULL, on_answer, &a));
	run_until(base, &a.done);
	ck_assert_int_eq(a.status, 200);
	ck_assert_int_ge(atomic_load(&lost.requests), 1);
	/* The feed followed the second one too. */
	for (int i = 0; i < 200 && !ok; i++) {
		struct timeval tick = { 0, 50 * 1000 };
		event_base_loopexit(base, &tick);
		event_base_dispatch(base);
		ok = brokerclient_feed_ok(bc);
	}
	ck_assert(ok);
	ck_assert_int_eq(brokerclient_feed_seq(bc), 7);
	snprintf(name, sizeof(name), "%s", up.base + 7);
	ck_assert_str_eq(brokerclient_current(bc), name);
	brokerclient_free(bc);
	event_base_free(base);
	fake_stop(&up);
	fake_stop(&lost);
}
END_TEST

START_TEST(proxy_client_fails_closed_when_none_answers)
{
	struct fake lost;
	struct event_base *base = event_base_new();
	struct brokerclient *bc;
	struct answered a = { .base = base };
	char dead[64], list[200];

	fake_start(&lost, 503);
	dead_base(dead, sizeof(dead));
	snprintf(list, sizeof(list), "%s,%s", dead, lost.base);
	struct brokerclient_options o = { .base = list,
		.verifier_key = "crk_verifier",
		.follower = "host-t" };
	ck_assert_int_eq(brokerclient_new(base, &o, &bc), 0);
	ck_assert_ptr_nonnull(brokerclient_call(bc, "GET", "/v1/jobs/j/rules",
	    NULL, on_answer, &a));
	run_until(base, &a.done);
	ck_assert(a.done);
	ck_assert_int_eq(a.status, 503);
	ck_assert(!brokerclient_feed_ok(bc));
	brokerclient_free(bc);
	event_base_free(base);
	fake_stop(&lost);
}
END_TEST

/* The proxy's client: a secret's release that went out to a broker that
 * answers too late is not released again at the next (the callback hears
 * no answer); refused at connect, it is sent on. */
START_TEST(proxy_client_sends_a_post_that_went_out_once)
{
	struct fake mute, up;
	struct event_base *base = event_base_new();
	struct brokerclient *bc;
	struct answered a = { .base = base };
	char dead[64], list[200];

	fake_start(&mute, 0);
	fake_start_body(&up, 200, FEED_BODY);
	snprintf(list, sizeof(list), "%s,%s", mute.base, up.base);
	struct brokerclient_options o = { .base = list,
		.verifier_key = "crk_verifier",
		.follower = "host-t" };
	ck_assert_int_eq(brokerclient_new(base, &o, &bc), 0);
	ck_assert_ptr_nonnull(brokerclient_call(bc, "POST",
	    "/v1/jobs/j/secrets/s/release", NULL, on_answer, &a));
	run_until(base, &a.done);
	ck_assert(a.done);
	ck_assert_int_eq(a.status, 0);
	ck_assert_int_eq(atomic_load(&mute.posts), 1);
	ck_assert_int_eq(atomic_load(&up.posts), 0);
	brokerclient_free(bc);

	/* Refused: sent to the next one. */
	dead_base(dead, sizeof(dead));
	snprintf(list, sizeof(list), "%s,%s", dead, up.base);
	o.base = list;
	a.done = false;
	ck_assert_int_eq(brokerclient_new(base, &o, &bc), 0);
	ck_assert_ptr_nonnull(brokerclient_call(bc, "POST",
	    "/v1/jobs/j/secrets/s/release", NULL, on_answer, &a));
	run_until(base, &a.done);
	ck_assert_int_eq(a.status, 200);
	ck_assert_int_eq(atomic_load(&up.posts), 1);
	brokerclient_free(bc);
	event_base_free(base);
	fake_stop(&up);
	fake_stop(&mute);
}
END_TEST

/* --- the launcher's watch --------------------------------------------- */

struct stopped {
	struct event_base *base;
	char reason[32];
	bool done;
};

static void
on_stop(void *arg, const char *reason)
{
	struct stopped *s = arg;

	snprintf(s->reason, sizeof(s->reason), "%s", reason);
	s->done = true;
	event_base_loopbreak(s->base);
}

START_TEST(watch_turns_to_the_next_broker)
{
	/* The feed's answer and the job's: revoked. */
	struct fake up;
	struct event_base *base = event_base_new();
	struct stopped st = { .base = base };
	struct watch *w;
	char dead[64], list[200];

	fake_start_body(&up, 200,
	    "{\"head\": 7, \"revocations\": [], \"state\": \"revoked\", "
	    "\"stop_reason\": \"operator\"}");
	dead_base(dead, sizeof(dead));
	snprintf(list, sizeof(list), "%s,%s", dead, up.base);
	ck_assert_int_eq(watch_start(base, list, "crk_launcher", "j1", 600000,
			     on_stop, &st, &w),
	    0);
	run_until(base, &st.done);
	ck_assert_msg(st.done, "the watch never heard the second broker");
	ck_assert_str_eq(st.reason, "revoked");
	ck_assert_int_ge(atomic_load(&up.requests), 1);
	watch_free(w);
	event_base_free(base);
	fake_stop(&up);
}
END_TEST

/* --- the configuration ------------------------------------------------ */

struct cfg {
	char *broker;
};

static const struct config_option opts[] = {
	{ "broker", CONFIG_LIST, offsetof(struct cfg, broker), 0, 0 },
};

/* Loads text as a config: 0 or -EINVAL, the error in err. */
static int
load(const char *text, struct cfg *c, char *err, size_t errlen)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/check_failover.%d.json",
	    (int)getpid());
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	int r = config_load(path, opts, 1, c, err, errlen);
	unlink(path);
	return r;
}

START_TEST(config_list)
{
	struct cfg c = { 0 };
	char err[256];

	ck_assert_int_eq(load("{\"broker\": \"http://10.0.0.1:7701\"}", &c, err,
			     sizeof(err)),
	    0);
	ck_assert_str_eq(c.broker, "http://10.0.0.1:7701");
	ck_assert_int_eq(load("{\"broker\": [\"http://10.0.0.1:7701\", "
			      "\"http://10.0.0.2:7701\"]}",
			     &c, err, sizeof(err)),
	    0);
	ck_assert_str_eq(c.broker, "http://10.0.0.1:7701,http://10.0.0.2:7701");
	ck_assert_int_eq(load("{\"broker\": [\"http://a\"]}", &c, err,
			     sizeof(err)),
	    0);
	ck_assert_str_eq(c.broker, "http://a");

	ck_assert_int_eq(load("{\"broker\": []}", &c, err, sizeof(err)),
	    -EINVAL);
	ck_assert_msg(strstr(err, "\"broker\"") != NULL, "%s", err);
	ck_assert_int_eq(load("{\"broker\": [\"http://a,http://b\"]}", &c, err,
			     sizeof(err)),
	    -EINVAL);
	ck_assert_msg(strstr(err, "comma") != NULL, "%s", err);
	ck_assert_int_eq(load("{\"broker\": [\"http://a\", 7]}", &c, err,
			     sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(load("{\"broker\": [\"a\",\"a\",\"a\",\"a\",\"a\","
			      "\"a\",\"a\",\"a\",\"a\"]}",
			     &c, err, sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(load("{\"broker\": 7}", &c, err, sizeof(err)),
	    -EINVAL);
	/* A refused value leaves the last good one. */
	ck_assert_str_eq(c.broker, "http://a");
	free(c.broker);
}
END_TEST

static Suite *
failover_suite(void)
{
	Suite *s = suite_create("failover");
	TCase *tc = tcase_create("failover");

	tcase_add_test(tc, bases_split);
	tcase_add_test(tc, down_then_up);
	tcase_add_test(tc, a_503_is_passed_over_and_remembered);
	tcase_add_test(tc, silence_is_passed_over);
	tcase_add_test(tc, a_post_that_went_out_is_not_sent_twice);
	tcase_add_test(tc, nothing_answers);
	tcase_add_test(tc, proxy_client_passes_a_503_over);
	tcase_add_test(tc, proxy_client_fails_closed_when_none_answers);
	tcase_add_test(tc, proxy_client_sends_a_post_that_went_out_once);
	tcase_add_test(tc, watch_turns_to_the_next_broker);
	tcase_add_test(tc, config_list);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(failover_suite());
}
