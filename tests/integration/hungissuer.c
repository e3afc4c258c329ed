/*
 * The tests' issuer that hangs: a listener on 127.0.0.1 (plain HTTP, which
 * broker/issuers.c allows to loopback) that accepts and never answers,
 * counting the calls it holds, except POST /fast/token (a token at once)
 * and POST /oauth/revoke (counted, never answered); and the set-up and
 * the request-at-once helpers the tests that use it share (the broker,
 * the secrets, the manifest, answers read as they come).
 * it_issuer_slow, it_release_slow and it_revoke_async use it.
 */
#include "hungissuer.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 512

/* What the issuer answers at once: a token at /fast/token, then its end
 * of the connection closed (it reads on until the broker closes, so that
 * nothing is reset). */
static const char fast_answer[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    "Content-Length: 56\r\nConnection: close\r\n\r\n"
    "{\"access_token\":\"tok-fast-0123456789\",\"expires_in\":3600}";

static void *
hung_main(void *arg)
{
	struct hung_issuer *h = arg;
	struct pollfd p[MAX_FDS];
	bool seen[MAX_FDS] = { false }, fast[MAX_FDS] = { false };
	size_t n = 2;
	char buf[4096];
	ssize_t k;

	p[0] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = h->wake[0], .events = POLLIN };
	for (;;) {
		if (poll(p, n, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents != 0)
			break;
		if (p[0].revents & POLLIN) {
			int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0 && n < MAX_FDS) {
				seen[n] = fast[n] = false;
				p[n++] = (struct pollfd){ .fd = fd,
					.events = POLLIN };
				atomic_fetch_add(&h->accepted, 1);
				atomic_fetch_add(&h->open, 1);
			} else if (fd >= 0)
				close(fd);
		}
		for (size_t i = 2; i < n;) {
			/* Read what the broker sends; its close ends a call.
			 * The first bytes say which endpoint it called. */
			if (p[i].revents == 0) {
				i++;
				continue;
			}
			k = read(p[i].fd, buf, sizeof(buf) - 1);
			if (k > 0 && !seen[i]) {
				buf[k] = '\0';
				seen[i] = true;
				if (strncmp(buf, "POST /oauth/revoke ", 19) ==
				    0)
					atomic_fetch_add(&h->revokes, 1);
				if (strncmp(buf, "POST /fast/token ", 17) ==
				    0) {
					fast[i] = true;
					atomic_fetch_sub(&h->open, 1);
					if (write(p[i].fd, fast_answer,
						sizeof(fast_answer) - 1) < 0) {
						/* the broker went */
					}
					shutdown(p[i].fd, SHUT_WR);
				}
			}
			if (k <= 0) {
				close(p[i].fd);
				if (!fast[i])
					atomic_fetch_sub(&h->open, 1);
				p[i] = p[--n];
				seen[i] = seen[n];
				fast[i] = fast[n];
				continue;
			}
			i++;
		}
	}
	for (size_t i = 2; i < n; i++)
		close(p[i].fd);
	return NULL;
}

void
hung_issuer_start(struct hung_issuer *h)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(h->lfd, 0);
	ck_assert_int_eq(bind(h->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(h->lfd, 256), 0);
	ck_assert_int_eq(getsockname(h->lfd, (struct sockaddr *)&a, &alen), 0);
	h->port = ntohs(a.sin_port);
	ck_assert_int_eq(pipe2(h->wake, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&h->thread, NULL, hung_main, h), 0);
}

void
hung_issuer_stop(struct hung_issuer *h)
{
	if (h->lfd < 0)
		return;
	ck_assert_int_eq(write(h->wake[1], "x", 1), 1);
	pthread_join(h->thread, NULL);
	close(h->lfd);
	close(h->wake[0]);
	close(h->wake[1]);
	h->lfd = -1;
}

/* Waits (up to 20 s) until the issuer holds at least n calls at once. */
void
hung_issuer_wait_open(struct hung_issuer *h, unsigned n)
{
	for (int i = 0; i < 400 && atomic_load(&h->open) < n; i++)
		usleep(50000);
	ck_assert_msg(atomic_load(&h->open) >= n,
	    "the issuer holds %u calls, want %u", atomic_load(&h->open), n);
}

/* Waits (up to ms) until the issuer accepted more than before. */
void
hung_issuer_wait_accepted(struct hung_issuer *h, unsigned before, int ms)
{
	for (int i = 0; i < ms / 10 && atomic_load(&h->accepted) <= before; i++)
		usleep(10000);
}

void
hung_broker_start(struct daemon *broker, char *admin, char *launcher,
    char *verifier, size_t len)
{
	ck_assert_int_eq(daemon_start(broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(broker, "admin", admin, len);
	harness_broker_key(broker, "launcher", launcher, len);
	harness_broker_key(broker, "verifier", verifier, len);
}

void
hung_issuer_secret(const struct hung_issuer *h, const struct daemon *broker,
    const char *admin, const char *name, const char *token_path,
    bool revocation)
{
	char url[128], rev[128], path[200];
	json_t *s;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s", h->port,
	    token_path);
	snprintf(rev, sizeof(rev), "http://127.0.0.1:%u/oauth/revoke", h->port);
	s = json_pack("{s:s, s:s, s:s, s:s}", "kind",
	    "oauth_client_credentials", "token_url", url, "client_id",
	    "cordon-test", "client_secret", "s3cret-client");
	ck_assert_ptr_nonnull(s);
	if (revocation)
		json_object_set_new(s, "revocation_url", json_string(rev));
	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	json_decref(harness_expect(broker, 200, "PUT", path, admin, NULL, s));
}

void
hung_manifest(const struct daemon *broker, const char *admin, const char *name,
    const char *secret, unsigned port)
{
	char path[200];
	json_t *rule = json_pack("{s:s, s:i, s:[s], s:s, s:[s], s:s}", "host",
	    "api.test", "port", (int)port, "methods", "GET", "reason",
	    "the api", "allow_cidrs", "127.0.0.0/8", "audience", "api");

	ck_assert_ptr_nonnull(rule);
	if (secret != NULL)
		json_object_set_new(rule, "inject",
		    json_pack("{s:s, s:s, s:s, s:s}", "secret", secret,
			"header", "Authorization", "format", "Bearer {secret}",
			"capability", "x.read"));
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(harness_expect(broker, 200, "PUT", path, admin, NULL,
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[o]}",
		"name", name, "command", "/bin/true", "capabilities", "name",
		"x.read", "audience", "api", "params", "t", "1", "ttl_seconds",
		600, "reason", "read x", "egress", rule)));
}

void
hung_new_job(const struct daemon *broker, const char *launcher, const char *m,
    char *job, size_t len)
{
	json_t *j = harness_expect(broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", m));

	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

char *
hung_mint(const struct daemon *broker, const char *verifier, const char *job)
{
	char hdr[128];
	json_t *j;
	char *tok;

	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);
	j = harness_expect(broker, 200, "POST", "/v1/token", verifier, hdr,
	    json_pack("{s:s, s:{s:s}}", "capability", "x.read", "params", "t",
		"1"));
	tok = strdup(json_string_value(json_object_get(j, "access_token")));
	json_decref(j);
	return tok;
}

double
hung_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

int
hung_send(const struct daemon *broker, const char *method, const char *path,
    const char *key, const char *header, const char *body)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	const char *colon = strrchr(broker->addr, ':');
	char req[2048];
	int fd, n;

	ck_assert_ptr_nonnull(colon);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	n = snprintf(req, sizeof(req),
	    "%s %s HTTP/1.1\r\nHost: %s\r\n%s%s%s%s%sConnection: close\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    method, path, broker->addr,
	    key != NULL ? "Authorization: Bearer " : "", key != NULL ? key : "",
	    key != NULL ? "\r\n" : "", header != NULL ? header : "",
	    header != NULL ? "\r\n" : "", body != NULL ? strlen(body) : 0,
	    body != NULL ? body : "");
	ck_assert_int_lt(n, (int)sizeof(req));
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	return fd;
}

int
hung_send_revoke(const struct daemon *broker, const char *launcher,
    const char *job)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	return hung_send(broker, "POST", path, launcher, NULL,
	    "{\"reason\":\"done\"}");
}

void
hung_pending_init(struct hung_pending *p, int fd, int tag)
{
	*p = (struct hung_pending){ .fd = fd,
		.sent = hung_now_ms(),
		.order = -1,
		.tag = tag };
}

size_t
hung_collect(struct hung_pending *p, size_t n, int limit_ms,
    void (*on_answer)(struct hung_pending *p))
{
	double t0 = hung_now_ms();
	size_t got = 0;
	struct pollfd pf[MAX_FDS];

	ck_assert_uint_le(n, MAX_FDS);
	while (got < n && hung_now_ms() - t0 < limit_ms) {
		for (size_t i = 0; i < n; i++)
			pf[i] = (struct pollfd){ .fd = p[i].order < 0 ? p[i].fd
								      : -1,
				.events = POLLIN };
		if (poll(pf, n, 200) <= 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (pf[i].fd < 0 || pf[i].revents == 0)
				continue;
			p[i].answered_ms = hung_now_ms() - p[i].sent;
			p[i].resp = http_exchange(p[i].fd, "", 0, 5000);
			ck_assert_ptr_nonnull(p[i].resp);
			if (on_answer != NULL)
				on_answer(&p[i]);
			p[i].order = (int)got++;
			close(p[i].fd);
			p[i].fd = -1;
		}
	}
	return got;
}

void
hung_pending_free(struct hung_pending *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i].fd >= 0)
			close(p[i].fd);
		free(p[i].resp);
	}
}

json_t *
hung_body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");
	json_t *j;

	ck_assert_msg(b != NULL, "no answer: '%.300s'", resp);
	j = json_loads(b + 4, 0, NULL);
	ck_assert_msg(j != NULL, "not JSON: '%.300s'", resp);
	return j;
}
