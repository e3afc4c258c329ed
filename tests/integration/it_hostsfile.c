/*
 * The proxy's hosts_file pins a name even when /etc/hosts has it: a
 * hosts_file line "127.0.0.2 localhost" sends a rule to localhost to
 * 127.0.0.2, not to /etc/hosts' 127.0.0.1 (libevent's resolver gives a
 * name's entries in the order they were loaded and the proxy dials the
 * first one the rule may reach, so the file loaded first wins).
 *
 * Two tiny listeners of this test on the same port, 127.0.0.2 answering
 * "pinned" and 127.0.0.1 answering "etc-hosts": the body and the decision
 * line's addr say which one the proxy dialled. A real broker and proxy;
 * the job is opened at both (no launcher, no uids).
 */
#include "harness.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct daemon broker, proxy;
static char launcher[128], verifier[128], admin[128];

/* --- a listener answering one fixed body ----------------------------------- */

struct tiny {
	int fd;
	const char *body;
	atomic_bool stop;
	pthread_t thread;
};

static void *
tiny_run(void *arg)
{
	struct tiny *t = arg;

	while (!atomic_load(&t->stop)) {
		struct pollfd pfd = { .fd = t->fd, .events = POLLIN };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		int c = accept4(t->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* Reads the head (the test's GET has no body), then answers
		 * and closes. */
		char buf[4096];
		size_t n = 0;
		while (n < sizeof(buf) - 1) {
			struct pollfd cp = { .fd = c, .events = POLLIN };
			if (poll(&cp, 1, 5000) <= 0)
				break;
			ssize_t r = read(c, buf + n, sizeof(buf) - 1 - n);
			if (r <= 0)
				break;
			n += (size_t)r;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n") != NULL)
				break;
		}
		char out[256];
		int len = snprintf(out, sizeof(out),
		    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		    strlen(t->body), t->body);
		(void)send(c, out, (size_t)len, MSG_NOSIGNAL);
		close(c);
	}
	return NULL;
}

/* Listens on addr:port (port 0: any) and serves body: 0, or -errno. */
static int
tiny_start(struct tiny *t, const char *addr, uint16_t port, const char *body)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons(port) };
	int one = 1;

	memset(t, 0, sizeof(*t));
	t->body = body;
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	t->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->fd < 0)
		return -errno;
	(void)setsockopt(t->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(t->fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(t->fd, 16) < 0) {
		int e = -errno;
		close(t->fd);
		return e;
	}
	if (pthread_create(&t->thread, NULL, tiny_run, t) != 0) {
		close(t->fd);
		return -EAGAIN;
	}
	return 0;
}

static uint16_t
tiny_port(const struct tiny *t)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if (getsockname(t->fd, (struct sockaddr *)&sin, &len) < 0)
		return 0;
	return ntohs(sin.sin_port);
}

static void
tiny_stop(struct tiny *t)
{
	atomic_store(&t->stop, true);
	pthread_join(t->thread, NULL);
	close(t->fd);
}

/* --- the case ---------------------------------------------------------------- */

/* True when /etc/hosts names localhost 127.0.0.1 (every Debian's does). */
static bool
etc_hosts_has_localhost(void)
{
	FILE *f = fopen("/etc/hosts", "re");
	char line[512];
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char *save = NULL, *hash = strchr(line, '#');
		if (hash != NULL)
			*hash = '\0';
		char *w = strtok_r(line, " \t\r\n", &save);
		if (w == NULL || strcmp(w, "127.0.0.1") != 0)
			continue;
		while ((w = strtok_r(NULL, " \t\r\n", &save)) != NULL)
			if (strcmp(w, "localhost") == 0)
				found = true;
	}
	fclose(f);
	return found;
}

/* The last decision line of the proxy's log with the given job, parsed
 * (json_decref it), or NULL. */
static json_t *
last_decision(const char *job)
{
	char path[400], line[8192];
	json_t *last = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    proxy.dir);
	f = fopen(path, "re");
	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL) {
		json_t *v = json_loads(line, 0, NULL);
		const char *j = json_string_value(json_object_get(v, "job"));
		if (v != NULL && j != NULL && strcmp(j, job) == 0) {
			json_decref(last);
			last = v;
		} else
			json_decref(v);
	}
	fclose(f);
	return last;
}

START_TEST(a_hosts_file_name_wins_over_etc_hosts)
{
	struct tiny pinned, wrong;
	char cfg[2048], path[400], hostsf[400], req[512], chan[300];
	const char *dir = harness_tmpdir();
	uint16_t port = 0;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_msg(etc_hosts_has_localhost(),
	    "the precondition: /etc/hosts names localhost 127.0.0.1");

	/* 127.0.0.2:PORT pinned, and 127.0.0.1 at the same port, so that a
	 * dial of /etc/hosts' address is answered, not merely refused. */
	for (int i = 0; i < 20 && port == 0; i++) {
		ck_assert_int_eq(tiny_start(&pinned, "127.0.0.2", 0, "pinned"),
		    0);
		if (tiny_start(&wrong, "127.0.0.1", tiny_port(&pinned),
			"etc-hosts") == 0)
			port = tiny_port(&pinned);
		else
			tiny_stop(&pinned);
	}
	ck_assert_uint_ne(port, 0);

	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", dir);
	harness_write_file(hostsf, "127.0.0.2 localhost\n");
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "\"follower\": \"hostsfile-test\"}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);

	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:i, s:[s], s:[s], s:s,"
			      " s:[s]}], s:{s:i}}",
	    "name", "pin", "command", "/bin/true", "egress", "host",
	    "localhost", "port", port, "methods", "GET", "paths", "/", "reason",
	    "the pinned name", "allow_cidrs", "127.0.0.0/8", "limits",
	    "wall_seconds", 600);
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/pin",
	    admin, NULL, m));
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", "pin"));
	const char *job = json_string_value(json_object_get(j, "job"));
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	json_t *o =
	    harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(chan, sizeof(chan), "%s",
	    json_string_value(json_object_get(o, "channel")));
	json_decref(o);

	snprintf(req, sizeof(req),
	    "GET http://localhost:%u/x HTTP/1.1\r\nHost: localhost:%u\r\n"
	    "Connection: close\r\n\r\n",
	    (unsigned)port, (unsigned)port);
	int fd = unix_connect(chan);
	ck_assert_int_ge(fd, 0);
	char *resp = http_exchange(fd, req, strlen(req), 10000);
	close(fd);
	ck_assert_ptr_nonnull(resp);

	json_t *d = last_decision(job);
	const char *addr = json_string_value(json_object_get(d, "addr"));
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.2:%u", (unsigned)port);
	printf("localhost:%u through the proxy: %d, %s; decision addr %s\n",
	    (unsigned)port, http_status(resp),
	    strstr(resp, "etc-hosts") != NULL    ? "etc-hosts"
		: strstr(resp, "pinned") != NULL ? "pinned"
						 : "neither",
	    addr != NULL ? addr : "(none)");
	fflush(stdout);
	ck_assert_msg(http_status(resp) == 200 &&
		strstr(resp, "\r\n\r\npinned") != NULL,
	    "want 200 from 127.0.0.2 (pinned), got: %.300s", resp);
	ck_assert_msg(addr != NULL && strcmp(addr, want) == 0,
	    "decision addr %s, want %s", addr != NULL ? addr : "(none)", want);

	free(resp);
	json_decref(d);
	json_decref(j);
	daemon_stop(&proxy);
	daemon_stop(&broker);
	tiny_stop(&wrong);
	tiny_stop(&pinned);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("hostsfile");
	TCase *tc = tcase_create("pin");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_hosts_file_name_wins_over_etc_hosts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
