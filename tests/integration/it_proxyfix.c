/*
 * Edges of cordon-proxy (proxyfix, issue 18's notes), each against
 * a real broker and proxy on loopback:
 *
 * - a connect that fails at once is answered at once: out of
 *   descriptors (the proxy's soft RLIMIT_NOFILE lowered to 0 once the
 *   job's connection is accepted) is 503 out_of_descriptors with
 *   Retry-After and EMFILE named, not 504 connect_timeout after
 *   connect_timeout_ms (60 s here; the client waits 20 s); a name whose
 *   first address fails at once (224.0.0.1: ENETUNREACH, nothing sent)
 *   goes on to its next one (127.0.0.1);
 * - a channel whose chmod fails after its bind leaves no socket file
 *   (the proxy run under a seccomp filter, installed by this program
 *   re-executed as its wrapper, that fails chmod to 0666 with EPERM);
 * - the descriptors kept from the jobs count the broker client's
 *   connections, 21 a broker: with three brokers and a limit of 1,024 the
 *   start line says a reserve of 127 and 112 connections a job;
 * - a bindings list asked before the one the guard holds, and older by
 *   its epoch, is not taken when it comes last: a relay between the
 *   proxy and the broker holds one job's egress answer until a newer
 *   GET /v1/bindings was taken, then lets it go.
 *
 * No job is spawned (no uid range used).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct daemon broker, proxy;
static char admin[128], launcher[128], verifier[128];
static char self_exe[400];

static void
broker_up(void)
{
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
}

/* Starts the proxy with brokers (a JSON value for "broker"), hosts (a
 * hosts file's text), extra config members (or NULL) and wrap (or NULL):
 * the daemon_start_wrapped status. */
static int
proxy_up(const char *brokers, const char *hosts, const char *extra,
    const char *const *wrap)
{
	char cfg[4096], keyf[400], hostsf[400];

	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf, hosts);
	snprintf(keyf, sizeof(keyf), "%s/verifier.key", harness_tmpdir());
	harness_write_file(keyf, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": %s, \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "\"follower\": \"proxyfix\", \"log_level\": \"info\"%s%s}",
	    brokers, keyf, harness_launcher_sha256(&broker), hostsf,
	    extra != NULL ? ", " : "", extra != NULL ? extra : "");
	return daemon_start_wrapped(&proxy, "proxy", cfg, wrap);
}

/* The broker's base as a JSON string, for proxy_up. */
static const char *
one_broker(void)
{
	static char q[128];

	snprintf(q, sizeof(q), "\"%s\"", broker.base);
	return q;
}

static void
stack_down(void)
{
	if (proxy.pid > 0)
		daemon_stop(&proxy);
	if (broker.pid > 0)
		daemon_stop(&broker);
}

/* A manifest name with one plain rule to host:port (127.0.0.0/8 and
 * 224.0.0.0/4 allowed), PUT, and a job of it at the broker: its id. */
static void
job_at_broker(const char *name, const char *host, unsigned port, char id[64])
{
	char path[200];
	json_t *egress = json_pack("[{s:s, s:i, s:[s], s:s, s:[s, s]}]", "host",
	    host, "port", port, "methods", "GET", "reason", "proxyfix",
	    "allow_cidrs", "127.0.0.0/8", "224.0.0.0/4");
	json_t *j;

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(harness_expect(&broker, 200, "PUT", path, admin, NULL,
	    injectkit_manifest(name, egress)));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", name));
	snprintf(id, 64, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

/* job_at_broker, then its channel at the proxy (asserted 201). */
static void
job_open(const char *name, const char *host, unsigned port, char id[64],
    char channel[300])
{
	char path[200];
	json_t *j;

	job_at_broker(name, host, port, id);
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, 300, "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
}

static long
metric(const char *name)
{
	return injectkit_metric(&proxy, name);
}

/* The proxy's decision lines (its decisions.log) holding both needles. */
static bool
decision_has(const char *a, const char *b)
{
	char path[400], line[4096];
	FILE *f;
	bool found = false;

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    proxy.dir);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, a) != NULL && strstr(line, b) != NULL;
	fclose(f);
	return found;
}

/* --- a connect that fails at once ---------------------------------------- */

START_TEST(out_of_descriptors_is_answered_at_once)
{
	struct upstream *up = upstream_start(NULL, NULL);
	char id[64], channel[300], req[400], *resp;
	struct rlimit old, low;
	unsigned port;
	int fd;

	ck_assert_ptr_nonnull(up);
	port = upstream_port(up);
	broker_up();
	ck_assert_int_eq(proxy_up(one_broker(), "127.0.0.1 up.test\n",
			     "\"connect_timeout_ms\": 60000", NULL),
	    0);
	job_open("fdlimit", "up.test", port, id, channel);
	snprintf(req, sizeof(req),
	    "GET http://up.test:%u/one HTTP/1.1\r\nHost: up.test:%u\r\n"
	    "Connection: close\r\n\r\n",
	    port, port);
	/* (No request before this one: its upstream, kept in the job's
	 * pool, would serve it without a connect.) */
	/* A connection accepted, then no descriptor left for its upstream. */
	fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 200 && metric("cordon_proxy_connections") != 1; i++)
		usleep(50000);
	ck_assert_int_eq(metric("cordon_proxy_connections"), 1);
	ck_assert_int_gt(proxy.pid, 1);
	ck_assert_int_eq(prlimit(proxy.pid, RLIMIT_NOFILE, NULL, &old), 0);
	low = old;
	low.rlim_cur = 0;
	ck_assert_int_eq(prlimit(proxy.pid, RLIMIT_NOFILE, &low, NULL), 0);
	resp = http_exchange(fd, req, strlen(req), 20000);
	ck_assert_int_eq(prlimit(proxy.pid, RLIMIT_NOFILE, &old, NULL), 0);
	close(fd);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(resp[0] != '\0',
	    "no answer in 20 s (connect_timeout_ms is 60 s): the failed "
	    "connect waited for its timeout");
	ck_assert_msg(http_status(resp) == 503 &&
		strcasestr(resp, "\r\nRetry-After: 1\r\n") != NULL &&
		strstr(resp, "X-Cordon-Error: upstream") != NULL &&
		strstr(resp, "out_of_descriptors") != NULL &&
		strstr(resp, "EMFILE") != NULL,
	    "want 503 out_of_descriptors (EMFILE), Retry-After 1: %.600s",
	    resp);
	free(resp);
	for (int i = 0; i < 100 &&
	     !decision_has("\"detail\":\"out_of_"
			   "descriptors\"",
		 "\"status\":503");
	     i++)
		usleep(50000);
	ck_assert_msg(decision_has("\"detail\":\"out_of_descriptors\"",
			  "\"status\":503"),
	    "no decision line with detail out_of_descriptors");
	/* And the proxy goes on once it has descriptors again. */
	resp = injectkit_send_on(channel, req);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	free(resp);
	stack_down();
	upstream_stop(up);
}
END_TEST

START_TEST(an_address_that_fails_at_once_gives_way_to_the_next)
{
	struct upstream *up = upstream_start(NULL, NULL);
	char id[64], channel[300], req[400], *resp;
	unsigned port;

	ck_assert_ptr_nonnull(up);
	port = upstream_port(up);
	broker_up();
	/* 224.0.0.1 first: a TCP connect to a multicast address fails at
	 * once (ENETUNREACH) and sends nothing. */
	ck_assert_int_eq(proxy_up(one_broker(),
			     "224.0.0.1 two.test\n127.0.0.1 two.test\n"
			     "224.0.0.1 one.test\n",
			     "\"connect_timeout_ms\": 60000", NULL),
	    0);
	job_open("twoaddr", "two.test", port, id, channel);
	snprintf(req, sizeof(req),
	    "GET http://two.test:%u/two HTTP/1.1\r\nHost: two.test:%u\r\n"
	    "Connection: close\r\n\r\n",
	    port, port);
	resp = injectkit_send_on(channel, req);
	ck_assert_msg(http_status(resp) == 200,
	    "two.test's second address was not tried: %.400s", resp);
	ck_assert_uint_eq(upstream_requests(up), 1);
	free(resp);

	/* A name with that address alone: 502 at once, the errno named. */
	char id2[64], channel2[300];
	job_open("oneaddr", "one.test", port, id2, channel2);
	snprintf(req, sizeof(req),
	    "GET http://one.test:%u/one HTTP/1.1\r\nHost: one.test:%u\r\n"
	    "Connection: close\r\n\r\n",
	    port, port);
	int fd = unix_connect(channel2);
	ck_assert_int_ge(fd, 0);
	resp = http_exchange(fd, req, strlen(req), 20000);
	close(fd);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(http_status(resp) == 502 &&
		strstr(resp, "connect_failed") != NULL &&
		strstr(resp, "ENETUNREACH") != NULL,
	    "want 502 connect_failed (ENETUNREACH) at once: %.600s", resp);
	free(resp);
	stack_down();
	upstream_stop(up);
}
END_TEST

/* --- the channel's socket file -------------------------------------------- */

/*
 * This program as the proxy's wrapper: a seccomp filter that fails
 * chmod and fchmodat to mode 0666 with EPERM (the channel's, and
 * nothing else the proxy does), then the program. Never returns.
 */
static int
chmod_fails_exec(char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 8),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_chmod, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0666, 3, 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fchmodat, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0666, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
		.filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("seccomp");
		return 126;
	}
	execv(argv[0], argv);
	perror(argv[0]);
	return 127;
}

START_TEST(a_channel_whose_chmod_failed_leaves_no_socket)
{
	const char *const wrap[] = { self_exe, "--chmod-fails", NULL };
	char id[64], path[200], sock[600];
	long status;
	json_t *j;
	struct stat st;

	broker_up();
	ck_assert_int_eq(proxy_up(one_broker(), "127.0.0.1 up.test\n", NULL,
			     wrap),
	    0);
	job_at_broker("chmodfail", "up.test", 80, id);
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	j = harness_call(&proxy, "POST", path, launcher, NULL, NULL, &status);
	ck_assert_msg(status == 500 &&
		strcmp(json_string_value(json_object_get(j, "error")),
		    "channel_failed") == 0,
	    "want 500 channel_failed, got %ld", status);
	json_decref(j);
	snprintf(sock, sizeof(sock), "%s/var/proxy/run/channels/%s.sock",
	    proxy.dir, id);
	ck_assert_msg(lstat(sock, &st) < 0 && errno == ENOENT,
	    "the failed channel's socket %s is left behind", sock);
	stack_down();
}
END_TEST

/* --- the reserve of descriptors ------------------------------------------ */

/* The proxy's first log line of event, parsed (json_decref it), or NULL. */
static json_t *
log_event(const char *event)
{
	json_t *lines = daemon_log_lines(&proxy), *v, *found = NULL;
	size_t i;

	json_array_foreach(lines, i, v)
	{
		const char *e = json_string_value(json_object_get(v, "event"));
		if (found == NULL && e != NULL && strcmp(e, event) == 0)
			found = json_incref(v);
	}
	json_decref(lines);
	return found;
}

START_TEST(the_reserve_counts_the_broker_clients_connections)
{
	enum { TRY = 120 };
	const char *const wrap[] = { "/usr/bin/prlimit", "--nofile=1024:1024",
		NULL };
	char brokers[400], id[64], channel[300];
	int fds[TRY], closed = 0;
	json_t *line;

	broker_up();
	snprintf(brokers, sizeof(brokers), "[\"%s\", \"%s\", \"%s\"]",
	    broker.base, broker.base, broker.base);
	ck_assert_int_eq(proxy_up(brokers, "127.0.0.1 up.test\n",
			     "\"head_timeout_ms\": 120000", wrap),
	    0);
	/* 64 for the rest and 21 connections a broker (4 for calls, 16 for
	 * releases, the feed's): 127; a job may hold a quarter of the other
	 * 897 descriptors, two a connection: 112. */
	line = log_event("descriptors");
	ck_assert_ptr_nonnull(line);
	ck_assert_msg(json_integer_value(json_object_get(line, "nofile")) ==
		    1024 &&
		json_integer_value(json_object_get(line, "reserve")) == 127 &&
		json_integer_value(json_object_get(line, "conns_per_job")) ==
		    112,
	    "want nofile 1024, reserve 127, conns_per_job 112: %s",
	    json_dumps(line, JSON_COMPACT));
	json_decref(line);

	/* And a job gets that many: 120 connections, 112 held, 8 closed at
	 * once. */
	job_open("share", "up.test", 80, id, channel);
	for (int i = 0; i < TRY; i++) {
		fds[i] = unix_connect(channel);
		ck_assert_int_ge(fds[i], 0);
	}
	for (int tries = 0; tries < 400; tries++) {
		closed = 0;
		for (int i = 0; i < TRY; i++) {
			struct pollfd pf = { .fd = fds[i], .events = POLLIN };
			char c;
			if (poll(&pf, 1, 0) == 1 &&
			    recv(fds[i], &c, 1, MSG_PEEK) == 0)
				closed++;
		}
		if (closed + metric("cordon_proxy_connections") == TRY)
			break;
		usleep(50000);
	}
	long held = metric("cordon_proxy_connections");
	for (int i = 0; i < TRY; i++)
		close(fds[i]);
	ck_assert_msg(held == 112 && closed == TRY - 112,
	    "want 112 connections held and %d closed at once, got %ld and %d",
	    TRY - 112, held, closed);
	stack_down();
}
END_TEST

/* --- the bindings list's order -------------------------------------------- */

/*
 * A relay from 127.0.0.1:port to the broker, a thread a connection. The
 * answer to a request holding hold (one job's egress) is not read from
 * the broker until released; once block_bindings is set, no answer to a
 * GET /v1/bindings is.
 */
struct relay {
	int lfd;
	uint16_t port;
	struct sockaddr_in to;
	char hold[200]; /* written once, before hold_set */
	atomic_bool hold_set, released, block_bindings, held_seen;
	atomic_uint bindings_answered;
};

struct relay_pair {
	struct relay *r;
	int cfd, bfd;
};

static bool
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static void *
relay_pump(void *arg)
{
	struct relay_pair *pp = arg;
	struct relay *r = pp->r;
	bool holding = false, bindings = false;
	char buf[16384];

	for (;;) {
		bool stop_reading = (holding && !atomic_load(&r->released)) ||
		    (bindings && atomic_load(&r->block_bindings));
		struct pollfd pf[2] = { { .fd = pp->cfd, .events = POLLIN },
			{ .fd = pp->bfd,
			    .events = stop_reading ? 0 : POLLIN } };
		if (poll(pf, 2, 50) < 0)
			break;
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = read(pp->cfd, buf, sizeof(buf));
			if (n <= 0 || !write_all(pp->bfd, buf, (size_t)n))
				break;
			/* A request's first bytes: what it is. */
			if (memmem(buf, (size_t)n, "HTTP/1.1\r\n", 10) !=
			    NULL) {
				holding = atomic_load(&r->hold_set) &&
				    memmem(buf, (size_t)n, r->hold,
					strlen(r->hold)) != NULL;
				bindings = memmem(buf, (size_t)n,
					       "GET /v1/bindings ", 17) != NULL;
				if (holding)
					atomic_store(&r->held_seen, true);
			}
		}
		if (!stop_reading && (pf[1].revents & (POLLIN | POLLHUP))) {
			ssize_t n = read(pp->bfd, buf, sizeof(buf));
			if (n <= 0 || !write_all(pp->cfd, buf, (size_t)n))
				break;
			if (bindings)
				atomic_fetch_add(&r->bindings_answered, 1);
		}
	}
	close(pp->cfd);
	close(pp->bfd);
	free(pp);
	return NULL;
}

static void *
relay_accept(void *arg)
{
	struct relay *r = arg;

	for (;;) {
		int c = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct relay_pair *pp = calloc(1, sizeof(*pp));
		pthread_t t;
		if (b < 0 || pp == NULL ||
		    connect(b, (struct sockaddr *)&r->to, sizeof(r->to)) < 0) {
			close(c);
			if (b >= 0)
				close(b);
			free(pp);
			continue;
		}
		pp->r = r;
		pp->cfd = c;
		pp->bfd = b;
		if (pthread_create(&t, NULL, relay_pump, pp) != 0) {
			close(c);
			close(b);
			free(pp);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

static void
relay_start(struct relay *r, const char *broker_addr)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	char host[64];
	const char *colon = strrchr(broker_addr, ':');
	pthread_t t;

	ck_assert_ptr_nonnull(colon);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - broker_addr),
	    broker_addr);
	r->to.sin_family = AF_INET;
	r->to.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
	ck_assert_int_eq(inet_pton(AF_INET, host, &r->to.sin_addr), 1);
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(r->lfd, 0);
	ck_assert_int_eq(bind(r->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(r->lfd, 64), 0);
	ck_assert_int_eq(getsockname(r->lfd, (struct sockaddr *)&a, &len), 0);
	r->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&t, NULL, relay_accept, r), 0);
	pthread_detach(t);
}

struct open_call {
	char path[200];
	long status;
};

static void *
open_in_thread(void *arg)
{
	struct open_call *o = arg;

	json_decref(harness_call(&proxy, "POST", o->path, launcher, NULL, NULL,
	    &o->status));
	return NULL;
}

/* PUTs the secret name with guard_hosts [host]: one more binding. */
static void
guarded_secret(const char *name, const char *host)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	json_decref(harness_expect(&broker, 200, "PUT", path, admin, NULL,
	    json_pack("{s:s, s:[s]}", "value", "proxyfix-value-0123456789",
		"guard_hosts", host)));
}

START_TEST(an_older_list_that_comes_last_is_not_taken)
{
	static struct relay r;
	char brokers[100], id[64];
	struct open_call o = { .status = -1 };
	pthread_t t;

	broker_up();
	relay_start(&r, broker.addr);
	snprintf(brokers, sizeof(brokers), "\"http://127.0.0.1:%u\"", r.port);
	guarded_secret("first-key", "first.test");
	ck_assert_int_eq(proxy_up(brokers, "127.0.0.1 up.test\n",
			     "\"bindings_refresh_seconds\": 1", NULL),
	    0);
	for (int i = 0; i < 200 && metric("cordon_proxy_guard_bindings") != 1;
	     i++)
		usleep(50000);
	ck_assert_int_eq(metric("cordon_proxy_guard_bindings"), 1);

	/* The job's egress answer (with the list of one binding) is held at
	 * the relay. */
	job_at_broker("order", "up.test", 80, id);
	snprintf(r.hold, sizeof(r.hold), "GET /v1/jobs/%s/egress ", id);
	atomic_store(&r.hold_set, true);
	snprintf(o.path, sizeof(o.path), "/v1/jobs/%s", id);
	ck_assert_int_eq(pthread_create(&t, NULL, open_in_thread, &o), 0);
	for (int i = 0; i < 200 && !atomic_load(&r.held_seen); i++)
		usleep(50000);
	ck_assert_msg(atomic_load(&r.held_seen), "the egress call never came");

	/* A second binding, read by a GET /v1/bindings asked after it. */
	guarded_secret("second-key", "second.test");
	for (int i = 0; i < 200 && metric("cordon_proxy_guard_bindings") != 2;
	     i++)
		usleep(50000);
	ck_assert_int_eq(metric("cordon_proxy_guard_bindings"), 2);
	/* No list read again from here (the next would hide the fault)... */
	atomic_store(&r.block_bindings, true);
	unsigned answered = atomic_load(&r.bindings_answered);
	/* ...then the older answer comes. */
	atomic_store(&r.released, true);
	pthread_join(t, NULL);
	ck_assert_int_eq(o.status, 201);
	long n = metric("cordon_proxy_guard_bindings");
	ck_assert_msg(atomic_load(&r.bindings_answered) == answered,
	    "a list was read after the block");
	ck_assert_msg(n == 2,
	    "the egress answer asked first and answered last replaced the "
	    "newer list: %ld bindings, not 2",
	    n);
	json_t *stale = log_event("bindings_stale");
	ck_assert_msg(stale != NULL &&
		json_integer_value(json_object_get(stale, "epoch")) <
		    json_integer_value(json_object_get(stale, "held_epoch")),
	    "no bindings_stale line with an epoch below the one held");
	json_decref(stale);
	stack_down();
}
END_TEST

static Suite *
proxyfix_suite(void)
{
	Suite *s = suite_create("proxyfix");
	TCase *t;

	t = tcase_create("connect");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, out_of_descriptors_is_answered_at_once);
	tcase_add_test(t, an_address_that_fails_at_once_gives_way_to_the_next);
	suite_add_tcase(s, t);
	t = tcase_create("channel");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, a_channel_whose_chmod_failed_leaves_no_socket);
	suite_add_tcase(s, t);
	t = tcase_create("reserve");
	tcase_set_timeout(t, 90);
	tcase_add_test(t, the_reserve_counts_the_broker_clients_connections);
	suite_add_tcase(s, t);
	t = tcase_create("order");
	tcase_set_timeout(t, 90);
	tcase_add_test(t, an_older_list_that_comes_last_is_not_taken);
	suite_add_tcase(s, t);
	return s;
}

int
main(int argc, char **argv)
{
	ssize_t n;

	if (argc > 2 && strcmp(argv[1], "--chmod-fails") == 0)
		return chmod_fails_exec(argv + 2);
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = '\0';
	return harness_main(proxyfix_suite());
}
