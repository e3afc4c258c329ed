/*
 * GET /v1/decisions reads up to 8 MiB of log a call: that scan must not
 * hold the proxy's loop, through which every job's traffic goes. The
 * test catches the scan in the act: it sends a page request over a big
 * log, finds the proxy's thread whose read count climbs (its
 * /proc/PID/task/TID/io), and stops that thread alone with ptrace. While
 * it is stopped, a job's request through the proxy must be answered; a
 * second page waits its turn, and past the ones that may wait a page is
 * 503 with Retry-After at once. Then the thread goes on, and every page
 * is answered in full. On a proxy that scans on its loop, the thread
 * caught is the loop's, and the job's request gets no answer.
 *
 * The real broker and proxy; a job's channel, no job runs.
 */
#include "harness.h"
#include "upstream.h"

#include "digest.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct daemon broker, proxy;
static char admin[128], launcher[128], verifier[128], channel[300];

/* The read bytes (rchar) of thread tid of pid, or -1. */
static long long
rchar(pid_t pid, pid_t tid)
{
	char path[96], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/io", (int)pid, (int)tid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "rchar: ", 7) == 0)
			v = strtoll(line + 7, NULL, 10);
	fclose(f);
	return v;
}

#define TASKS_MAX 64

/* The threads of pid with their rchar: how many. */
static int
tasks(pid_t pid, pid_t *tid, long long *rc)
{
	char path[64];
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL && n < TASKS_MAX) {
		if (e->d_name[0] == '.')
			continue;
		tid[n] = (pid_t)strtol(e->d_name, NULL, 10);
		rc[n] = rchar(pid, tid[n]);
		n++;
	}
	closedir(d);
	return n;
}

/* A TCP connection to the proxy's control port with a GET of path with
 * the admin key written on it: the fd. */
static int
ask_page(const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char req[1024];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_port = htons((uint16_t)atoi(strrchr(proxy.addr, ':') + 1));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: proxy\r\nAuthorization: Bearer %s\r\n"
	    "Connection: close\r\n\r\n",
	    path, admin);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	return fd;
}

/* Whether fd has an answer to read (or was closed) within ms. */
static bool
answered(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms) == 1;
}

/* The whole answer on fd (until the close, 20 s at most), closed. */
static char *
read_all(int fd)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);

	ck_assert_ptr_nonnull(buf);
	while (answered(fd, 20000)) {
		if (n + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	close(fd);
	return buf;
}

/* Writes <logs>/decisions.log.1: lines of another job that all name
 * job_needle (so that each is parsed, and none selected), over 8 MiB. */
static void
big_log(void)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log.1",
	    proxy.dir);
	FILE *f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 60000; i++)
		fprintf(f,
		    "{\"ts\":\"2026-11-30T10:%02d:%02d.%03dZ\",\"job\":"
		    "\"job_other\",\"conn\":%d,\"req\":1,\"kind\":\"http\","
		    "\"method\":\"GET\",\"host\":\"api.test\",\"port\":80,"
		    "\"path\":\"/job_needle/%d\",\"decision\":\"deny\","
		    "\"reason\":\"path\",\"status\":403,\"bytes_up\":0,"
		    "\"bytes_down\":0,\"ms\":0.1}\n",
		    (i / 1000) % 60, (i / 17) % 60, i % 1000, i, i);
	ck_assert_int_eq(fclose(f), 0);
}

static void
setup(void)
{
	char cfg[2048], path[400], sha[SHA256_HEX_LEN + 1],
	    asha[SHA256_HEX_LEN + 1], job[64];
	json_t *j;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	sha256_hex(launcher, strlen(launcher), sha);
	sha256_hex(admin, strlen(admin), asha);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"admin_key_sha256\": \"%s\", "
	    "\"follower\": \"loop\"}",
	    broker.base, path, sha, asha);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/loop",
	    admin, NULL,
	    json_pack("{s:s, s:[s], s:[{s:s, s:i, s:[s], s:[s], s:s}]}", "name",
		"loop", "command", "/bin/true", "egress", "host", "api.test",
		"port", 80, "methods", "GET", "paths", "/", "reason",
		"a test")));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "loop"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
	big_log();
}

static void
teardown(void)
{
	daemon_stop(&proxy);
	daemon_stop(&broker);
}

#define PAGE "/v1/decisions?job=job_needle&limit=10"
#define WAITING 4 /* pages that may wait behind the one being read */

START_TEST(a_job_is_answered_while_the_log_is_read)
{
	pid_t pid = proxy.pid, tid[TASKS_MAX], held = 0;
	long long rc0[TASKS_MAX], rc[TASKS_MAX];
	int page = -1;

	ck_assert_int_gt(pid, 1);
	/* Catch the thread that reads the log, in the middle of a page;
	 * a page read whole before it is caught is asked again. */
	for (int attempt = 0; attempt < 20 && held == 0; attempt++) {
		int n0 = tasks(pid, tid, rc0);
		pid_t t0[TASKS_MAX];
		memcpy(t0, tid, sizeof(t0));
		page = ask_page(PAGE);
		struct timespec start, now;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do {
			int n = tasks(pid, tid, rc);
			for (int i = 0; i < n && held == 0; i++) {
				long long before = 0;
				for (int k = 0; k < n0; k++)
					if (t0[k] == tid[i])
						before = rc0[k];
				if (rc[i] - before > 512 * 1024)
					held = tid[i];
			}
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (held == 0 && !answered(page, 0) &&
		    now.tv_sec - start.tv_sec < 10);
		if (held == 0) {
			free(read_all(page));
			continue;
		}
		ck_assert_int_gt(held, 1);
		ck_assert_msg(ptrace(PTRACE_SEIZE, held, 0, 0) == 0,
		    "PTRACE_SEIZE %d: %s", (int)held, strerror(errno));
		ck_assert_int_eq(ptrace(PTRACE_INTERRUPT, held, 0, 0), 0);
		int st;
		ck_assert_int_eq(waitpid(held, &st, __WALL), held);
		if (answered(page, 0)) {
			/* The page was done as it was caught. */
			ck_assert_int_eq(ptrace(PTRACE_DETACH, held, 0, 0), 0);
			free(read_all(page));
			held = 0;
		}
	}
	ck_assert_msg(held != 0, "the scan was never caught reading");

	/* The reader is stopped: the job's request is still answered. */
	int fd = unix_connect(channel);
	ck_assert_int_ge(fd, 0);
	static const char req[] =
	    "GET http://elsewhere.test/ HTTP/1.1\r\nHost: elsewhere.test\r\n"
	    "\r\n";
	char *resp = http_exchange(fd, req, strlen(req), 10000);
	close(fd);
	bool job_answered = http_status(resp) == 403;
	char first[200];
	snprintf(first, sizeof(first), "%.150s", resp);
	free(resp);

	/* Pages behind it wait; one more than may wait is 503 at once
	 * (whichever of them the proxy read last). */
	struct pollfd more[WAITING + 1];
	char *busy_resp = NULL;
	int nbusy = 0;
	if (job_answered) {
		for (int i = 0; i <= WAITING; i++)
			more[i] = (struct pollfd){ ask_page(PAGE), POLLIN, 0 };
		ck_assert_int_eq(poll(more, WAITING + 1, 10000), 1);
		for (int i = 0; i <= WAITING; i++)
			if (more[i].revents != 0) {
				busy_resp = read_all(more[i].fd);
				more[i].fd = -1;
				nbusy++;
			}
	}
	ck_assert_int_eq(ptrace(PTRACE_DETACH, held, 0, 0), 0);
	ck_assert_msg(job_answered,
	    "the job's request got no answer while the decision log was "
	    "read (thread %d of %d held): %s",
	    (int)held, (int)pid, first);
	ck_assert_msg(nbusy == 1, "%d pages past the queue answered", nbusy);
	ck_assert_msg(http_status(busy_resp) == 503 &&
		strcasestr(busy_resp, "\r\nRetry-After: ") != NULL &&
		strstr(busy_resp, "\"busy\"") != NULL,
	    "%.400s", busy_resp);
	free(busy_resp);

	/* Every page held is answered in full once the reader goes on. */
	resp = read_all(page);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	json_t *body = json_loads(strstr(resp, "\r\n\r\n") + 4, 0, NULL);
	ck_assert_ptr_nonnull(body);
	ck_assert_ptr_nonnull(json_object_get(body, "next"));
	ck_assert_int_eq(json_array_size(json_object_get(body, "decisions")),
	    0);
	ck_assert_int_ge(json_integer_value(
			     json_object_get(body, "scanned_bytes")),
	    8 * 1024 * 1024 - 64 * 1024);
	json_decref(body);
	free(resp);
	for (int i = 0; i <= WAITING; i++) {
		if (more[i].fd < 0)
			continue;
		resp = read_all(more[i].fd);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		free(resp);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("decisions_loop");
	TCase *tc = tcase_create("loop");

	tcase_set_timeout(tc, 90);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_job_is_answered_while_the_log_is_read);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
