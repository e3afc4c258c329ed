/*
 * One job cannot stall the proxy's shared loop with answers built to be
 * costly to scan (redteam4 hole 1): job A had something released (one
 * injected request), so every answer it reads is scanned; it then reads,
 * on many connections at once of its plain rule, answers of "sk_live" in
 * UTF-16 repeated (each byte read many ways by the scanner, never past
 * its steps' budget) that end with the key itself, raw and in UTF-16.
 * Meanwhile job B, which nothing was released to, opens its channel and
 * makes plain requests. What a user cares about: B's channel opens and
 * each of its requests is answered while A's answers are still coming;
 * the proxy never takes its own load for the broker's silence (no
 * feed_silent, no feed_lost); A's answers all arrive, whole, the key in
 * each overwritten; A was held past its budget (scan_throttled logged,
 * cordon_proxy_scan_throttled_total counted). The budget is set low for
 * the ASan build (scan_steps_per_second), so that A is held on any
 * machine; nothing here measures a time.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNS 128
#define KIB 8
#define B_REQUESTS 5

static const char key[] = "sk_live_scanbudget_0123456789abcdef";

static struct injectkit k;
static atomic_bool a_done;

struct answer {
	char *data;
	size_t len, cap;
	int fd;
	bool closed;
};
static struct answer ans[CONNS];

/* A's connections: each asks for its costly answer, all read at once
 * until every one is closed (60 s of silence at most between reads). */
static void *
job_a(void *arg)
{
	char req[512];
	int open = 0;

	(void)arg;
	for (int i = 0; i < CONNS; i++) {
		int n = snprintf(req, sizeof(req),
		    "GET http://www.api.test:%u/open/big/%d HTTP/1.1\r\n"
		    "Host: www.api.test:%u\r\nConnection: close\r\n\r\n",
		    k.up_port, KIB, k.up_port);
		ans[i].fd = unix_connect(k.channel);
		if (ans[i].fd < 0 ||
		    send(ans[i].fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
			ans[i].closed = true;
			continue;
		}
		open++;
	}
	while (open > 0) {
		struct pollfd p[CONNS];
		int np = 0, at[CONNS];
		for (int i = 0; i < CONNS; i++)
			if (!ans[i].closed) {
				p[np] = (struct pollfd){ ans[i].fd, POLLIN, 0 };
				at[np++] = i;
			}
		if (poll(p, (nfds_t)np, 60000) <= 0)
			break;
		for (int x = 0; x < np; x++) {
			struct answer *a = &ans[at[x]];
			if (!(p[x].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (a->len + 65536 > a->cap) {
				a->cap = 2 * a->cap + 65536;
				a->data = realloc(a->data, a->cap);
				if (a->data == NULL)
					abort();
			}
			ssize_t got = read(a->fd, a->data + a->len, 65536);
			if (got <= 0) {
				a->closed = true;
				close(a->fd);
				open--;
				continue;
			}
			a->len += (size_t)got;
		}
	}
	atomic_store(&a_done, true);
	return NULL;
}

/* Whether mem[0..len) holds n bytes in a row of s[0..slen) anywhere. */
static bool
holds_run(const char *mem, size_t len, const char *s, size_t slen, size_t n)
{
	for (size_t i = 0; i + n <= slen; i++)
		if (memmem(mem, len, s + i, n) != NULL)
			return true;
	return false;
}

/* Checks answer i: a 200 whose body is KIB KiB of the UTF-16 pattern,
 * then the key's two copies, overwritten, of their length. */
static void
check_answer(int i)
{
	struct answer *a = &ans[i];
	char key16[2 * sizeof(key)];
	size_t klen = strlen(key);

	for (size_t x = 0; x < klen; x++) {
		key16[2 * x] = key[x];
		key16[2 * x + 1] = '\0';
	}
	ck_assert_msg(a->len > 12 && memcmp(a->data, "HTTP/1.1 200", 12) == 0,
	    "A's answer %d: %zu bytes, %.*s", i, a->len,
	    (int)(a->len < 200 ? a->len : 200), a->data ? a->data : "");
	char *body = memmem(a->data, a->len, "\r\n\r\n", 4);
	ck_assert_ptr_nonnull(body);
	body += 4;
	size_t blen = a->len - (size_t)(body - a->data);
	size_t want = KIB * 1024 + 2 + klen + 2 + 2 * klen;
	ck_assert_msg(blen == want,
	    "A's answer %d came short or long: %zu bytes of body, %zu sent", i,
	    blen, want);
	for (size_t x = 0; x < KIB * 1024; x++)
		ck_assert_msg(body[x] == "s\0k\0_\0l\0i\0v\0e\0"[x % 14],
		    "A's answer %d changed at byte %zu", i, x);
	ck_assert_msg(!holds_run(body, blen, key, klen, 8),
	    "A's answer %d holds the key raw", i);
	ck_assert_msg(!holds_run(body, blen, key16, 2 * klen, 16),
	    "A's answer %d holds the key in UTF-16", i);
}

/* The proxy's log, whole (NUL-terminated; the caller frees it). */
static char *
proxy_log(void)
{
	FILE *f = fopen(k.proxy.log, "re");
	char *s = calloc(1, 16 << 20);
	size_t n = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(s);
	n = fread(s, 1, (16 << 20) - 1, f);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* Sends req on channel and reads the answer until the proxy closes it
 * (Connection: close), waiting as long as it takes (120 s at most). */
static char *
send_wait(const char *channel, const char *req)
{
	int fd = unix_connect(channel);
	size_t len = 0, cap = 65536;
	char *out = calloc(1, cap);

	ck_assert_ptr_nonnull(out);
	if (fd < 0)
		return out;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
		close(fd);
		return out;
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 120000) != 1)
			break;
		ssize_t got = read(fd, out + len, cap - 1 - len);
		if (got <= 0)
			break;
		len += (size_t)got;
		if (len + 1 >= cap)
			break;
	}
	out[len] = '\0';
	close(fd);
	return out;
}

START_TEST(a_costly_job_slows_only_itself)
{
	char req[1024];
	pthread_t ta;

	k.up_pid = -1;
	injectkit_stack_start(&k,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n", "scanbudget",
	    "\"reflect_limit\": 1000000, \"scan_steps_per_second\": 400000, "
	    "\"scan_steps_burst\": 20000");
	k.up_pid =
	    injectkit_jobs_upstream("scanbudget/upstream.py", key, &k.up_port);
	injectkit_secret(&k, "up-key", key);
	injectkit_job_start(&k, "costly",
	    injectkit_manifest("costly",
		json_pack("[o, {s:s, s:i, s:[s], s:[s], s:s, s:[s]}]",
		    injectkit_inject_rule(&k, false, NULL, NULL), "host",
		    "www.api.test", "port", k.up_port, "methods", "GET",
		    "paths", "/open/", "reason", "the public part",
		    "allow_cidrs", "127.0.0.0/8")));
	/* One injected request: from now on A's every answer is scanned. */
	char *r = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(r) == 200, "the injected request: %.300s", r);
	free(r);
	struct injectkit a = k;

	ck_assert_int_eq(pthread_create(&ta, NULL, job_a, NULL), 0);
	/* A's answers are being scanned: the upstream sent them at once. */
	for (int i = 0; i < 600; i++) {
		size_t got = 0;
		for (int x = 0; x < CONNS; x++)
			got += ans[x].len;
		if (got > 0 || atomic_load(&a_done))
			break;
		usleep(50000);
	}

	/* B: its channel, then plain requests, each answered. */
	injectkit_job_start(&k, "plain",
	    injectkit_manifest("plain",
		json_pack("[{s:s, s:i, s:[s], s:[s], s:s, s:[s]}]", "host",
		    "www.api.test", "port", a.up_port, "methods", "GET",
		    "paths", "/open/", "reason", "the public part",
		    "allow_cidrs", "127.0.0.0/8")));
	int answered_while_a = 0;
	for (int i = 0; i < B_REQUESTS; i++) {
		injectkit_request_to(&k, req, sizeof(req), "www.api.test",
		    "GET", "/open/small", false, "close");
		r = send_wait(k.channel, req);
		ck_assert_msg(http_status(r) == 200 &&
			strstr(r, "\r\n\r\nok") != NULL,
		    "B's request %d: %.400s", i, r);
		free(r);
		if (!atomic_load(&a_done))
			answered_while_a++;
	}
	ck_assert_msg(answered_while_a > 0,
	    "B's requests were answered only once A's answers had all come: "
	    "B waited behind A's scans");

	/* The jobs' leases renewed (no launcher here) until A is done. */
	for (int i = 0; !atomic_load(&a_done); i++) {
		if (i % 20 == 0) {
			char path[200];
			snprintf(path, sizeof(path), "/v1/jobs/%s/heartbeat",
			    a.job);
			json_decref(harness_expect(&k.broker, 200, "POST", path,
			    k.launcher, NULL, NULL));
			snprintf(path, sizeof(path), "/v1/jobs/%s/heartbeat",
			    k.job);
			json_decref(harness_expect(&k.broker, 200, "POST", path,
			    k.launcher, NULL, NULL));
		}
		usleep(250000);
	}
	pthread_join(ta, NULL);
	for (int i = 0; i < CONNS; i++)
		check_answer(i);
	char *log = proxy_log();
	ck_assert_msg(strstr(log, "\"feed_silent\"") == NULL &&
		strstr(log, "\"feed_lost\"") == NULL &&
		strstr(log, "feed_unavailable") == NULL,
	    "the proxy took its own load for the broker's silence");
	ck_assert_msg(strstr(log, "\"scan_throttled\"") != NULL,
	    "A was never held past its scan budget");
	ck_assert_msg(strstr(log, key) == NULL, "the key is in the log");
	free(log);
	ck_assert_int_gt(injectkit_metric(&k.proxy,
			     "cordon_proxy_scan_throttled_total"),
	    0);
	for (int i = 0; i < CONNS; i++)
		free(ans[i].data);
	daemon_stop(&k.proxy);
	injectkit_upstream_stop(&k.up_pid);
	daemon_stop(&k.broker);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("scanbudget");
	TCase *tc = tcase_create("scanbudget");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, a_costly_job_slows_only_itself);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
