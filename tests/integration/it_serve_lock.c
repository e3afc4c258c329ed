/*
 * cordon serve with its spawner held: the test stops the spawner (SIGSTOP
 * on serve's one child, its pid asserted > 1 first), so a request that
 * needs it (a finished job's patch: the spawner opens the root-only
 * file) waits for an answer that does not come. Meanwhile another
 * client's GET /v1/jobs and GET /healthz are answered (serve's lock is
 * not held across the spawner's round trip, nor the spawner's own across
 * an unbounded wait), and the patch request ends, with the spawner still
 * stopped, in 503 spawner_lost ("the spawner did not answer ..."), not a
 * hang. The spawner is lost then: /healthz says so with 503, the report,
 * another patch and a new job answer 503 at once, a job that ran is
 * lost (its patch served by a restarted serve once its own stop path
 * wrote it), and a SIGTERM stops serve though its spawner stays
 * stopped. The order is asserted,
 * never a time: the test knows the patch request is at the spawner when
 * the spawner's socket holds it unread (its receive queue, asked of the
 * kernel by sock_diag).
 */
#include "harness.h"
#include "servekit.h"

#include "http_client.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stack st;
static struct daemon serve;
static pid_t stopped = -1; /* the spawner while the test holds it */

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 1362000 };

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	servekit_repo(&st);
	servekit_manifest(&st, "lock-job", 0);
	/* 5 s, not the 30 s default: the test waits 30 s for each step. */
	servekit_start(&serve, &st,
	    json_pack("{s:i}", "serve_spawner_seconds", 5));
}

static void
teardown(void)
{
	/* A spawner left stopped would hold serve's stop. */
	if (stopped > 1)
		(void)kill(stopped, SIGCONT);
	stopped = -1;
	daemon_stop(&serve);
	stack_stop(&st);
}

/* A finished job that left a patch: its id (free it). */
static char *
run_job(void)
{
	return servekit_run(&serve, &st, "lock-job", "echo new > repo/NEW.md");
}

/* serve's one child, its spawner: asserted to be one, and > 1. */
static pid_t
spawner_of(pid_t serve_pid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = -1;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid <= 1)
			continue;
		if (servekit_parent_of((pid_t)pid, NULL) == serve_pid) {
			found = (pid_t)pid;
			n++;
		}
	}
	closedir(d);
	ck_assert_msg(n == 1,
	    "serve (pid %d) has %d children, not its one "
	    "spawner",
	    (int)serve_pid, n);
	ck_assert_int_gt(found, 1);
	return found;
}

/* The bytes unread in the receive queue of the unix socket whose inode
 * is ino (sock_diag, UDIAG_SHOW_RQLEN), or -1. */
static long
unix_rqueue(ino_t ino)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} q;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	static char buf[8192];
	long r = -1;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return -1;
	memset(&q, 0, sizeof(q));
	q.nlh.nlmsg_len = sizeof(q);
	q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nlh.nlmsg_flags = NLM_F_REQUEST;
	q.req.sdiag_family = AF_UNIX;
	q.req.udiag_states = ~0u;
	q.req.udiag_ino = (__u32)ino;
	q.req.udiag_show = UDIAG_SHOW_RQLEN;
	q.req.udiag_cookie[0] = q.req.udiag_cookie[1] = ~0u;
	if (sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&nl, sizeof(nl)) !=
	    (ssize_t)sizeof(q)) {
		close(fd);
		return -1;
	}
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	int left = n > 0 ? (int)n : 0;
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left);
	     h = NLMSG_NEXT(h, left)) {
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			break;
		struct unix_diag_msg *m = NLMSG_DATA(h);
		if (m->udiag_ino != (__u32)ino)
			continue;
		struct rtattr *a = (struct rtattr *)(m + 1);
		int alen = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
		for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen))
			if (a->rta_type == UNIX_DIAG_RQLEN) {
				struct unix_diag_rqlen rq;
				memcpy(&rq, RTA_DATA(a), sizeof(rq));
				r = rq.udiag_rqueue;
			}
	}
	close(fd);
	return r;
}

/* Stops the spawner sp (> 1), asserting it stopped. */
static void
hold(pid_t sp)
{
	char state = '?';

	ck_assert_int_gt(sp, 1);
	ck_assert_int_eq(kill(sp, SIGSTOP), 0);
	stopped = sp;
	for (int i = 0; i < 400 && state != 'T'; i++) {
		(void)servekit_parent_of(sp, &state);
		if (state != 'T')
			usleep(10000);
	}
	if (state != 'T')
		(void)kill(sp, SIGCONT);
	ck_assert_msg(state == 'T', "the spawner is not stopped: %c", state);
}

START_TEST(a_held_spawner_holds_no_other_request)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int step = 0, ends = 0;
	struct servekit_call patch = { .serve = &serve,
		.key = st.launcher,
		.method = "GET",
		.mu = &mu,
		.step = &step,
		.ends = &ends,
		.ended_at = -1 };
	struct servekit_call list = patch, health = patch;
	char *id = run_job(), path[200], fdpath[64];
	struct stat sb;
	long queued = -1;

	/* The patch is served while the spawner answers. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", id);
	long status = 0;
	json_decref(harness_call(&serve, "GET", path, st.launcher, NULL, NULL,
	    &status));
	ck_assert_int_eq(status, 200);

	pid_t sp = spawner_of(serve.pid);
	snprintf(fdpath, sizeof(fdpath), "/proc/%d/fd/3", (int)sp);
	ck_assert_msg(stat(fdpath, &sb) == 0 && S_ISSOCK(sb.st_mode),
	    "the spawner's fd 3 is not its socket");
	/* Nothing waits there yet (a tick's request is read at once). */
	for (int i = 0; i < 100 && unix_rqueue(sb.st_ino) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(unix_rqueue(sb.st_ino), 0);
	hold(sp);

	/* step 0: the patch asked for. */
	snprintf(patch.path, sizeof(patch.path), "%s", path);
	ck_assert_int_eq(pthread_create(&patch.thread, NULL, servekit_call_run,
			     &patch),
	    0);
	/* Its 'O' request (the job's id after one byte) waits, unread, in
	 * the stopped spawner's socket. */
	for (int i = 0; i < 600 && servekit_call_ended(&patch) < 0; i++) {
		queued = unix_rqueue(sb.st_ino);
		if (queued >= (long)strlen(id) + 1)
			break;
		usleep(50000);
	}
	/* An assertion ends this process without the teardown: no spawner
	 * is left stopped behind it. */
	if (queued < (long)strlen(id) + 1)
		(void)kill(sp, SIGCONT);
	ck_assert_msg(queued >= (long)strlen(id) + 1,
	    "the patch request never reached the spawner (%ld bytes queued, "
	    "patch ended at step %d, %ld)",
	    queued, servekit_call_ended(&patch), patch.status);
	servekit_step(&mu, &step, 1); /* serve waits for the spawner */

	snprintf(list.path, sizeof(list.path), "/v1/jobs");
	snprintf(health.path, sizeof(health.path), "/healthz");
	ck_assert_int_eq(pthread_create(&list.thread, NULL, servekit_call_run,
			     &list),
	    0);
	ck_assert_int_eq(pthread_create(&health.thread, NULL, servekit_call_run,
			     &health),
	    0);
	/* At most 30 s each for the list and the health, then for the
	 * patch: then the spawner is let go whatever came. */
	for (int i = 0; i < 600 &&
	     (servekit_call_ended(&list) < 0 ||
		 servekit_call_ended(&health) < 0);
	     i++)
		usleep(50000);
	servekit_step(&mu, &step, 2); /* the list and the health came, or not */
	for (int i = 0; i < 600 && servekit_call_ended(&patch) < 0; i++)
		usleep(50000);
	servekit_step(&mu, &step, 3); /* the spawner let go */
	ck_assert_int_eq(kill(sp, SIGCONT), 0);
	stopped = -1;
	pthread_join(list.thread, NULL);
	pthread_join(health.thread, NULL);
	pthread_join(patch.thread, NULL);

	ck_assert_msg(list.ended_at == 1 && health.ended_at == 1 &&
		list.status == 200 && health.status == 200 &&
		list.end_index < patch.end_index &&
		health.end_index < patch.end_index,
	    "with the spawner stopped and a patch request waiting for it, GET "
	    "/v1/jobs answered %ld at step %d (end #%d), /healthz %ld at step "
	    "%d (end #%d), the patch %ld at step %d (end #%d) (step 1: the "
	    "patch request at the spawner, 2: the list and the health given "
	    "30 s, 3: the spawner let go)",
	    list.status, list.ended_at, list.end_index, health.status,
	    health.ended_at, health.end_index, patch.status, patch.ended_at,
	    patch.end_index);
	ck_assert_msg(patch.ended_at == 2 && patch.status == 503 &&
		strcmp(patch.error, "spawner_lost") == 0 &&
		strstr(patch.message, "the spawner did not answer") != NULL,
	    "the patch request, the spawner stopped, ended at step %d with "
	    "%ld %s: %s (want 503 spawner_lost before step 3)",
	    patch.ended_at, patch.status, patch.error, patch.message);

	/* Lost, the spawner is asked nothing more: each answer at once. */
	json_t *h = harness_get_json(&serve, "/healthz", &status);
	ck_assert_int_eq(status, 503);
	ck_assert_str_eq(json_string_value(json_object_get(h, "spawner")) ?: "",
	    "lost");
	json_decref(h);
	json_decref(
	    harness_expect(&serve, 503, "GET", path, st.launcher, NULL, NULL));
	snprintf(path, sizeof(path), "/v1/jobs/%s/report", id);
	json_decref(
	    harness_expect(&serve, 503, "GET", path, st.launcher, NULL, NULL));
	char src[400];
	snprintf(src, sizeof(src), "%s/repo", st.inputs);
	json_t *e = harness_expect(&serve, 503, "POST", "/v1/jobs", st.launcher,
	    NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s]}", "manifest", "lock-job",
		"inputs", "src", src, "dst", "repo", "command", "/bin/true"));
	ck_assert_str_eq(json_string_value(json_object_get(e, "error")),
	    "spawner_lost");
	json_decref(e);
	/* The finished job is still told. */
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	e = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(e, "state")),
	    "done");
	json_decref(e);
	/* serve stops as ever, its spawner let go; the loss was logged
	 * once. */
	ck_assert_int_eq(daemon_stop(&serve), 0);
	json_t *lines = daemon_log_lines(&serve), *l;
	size_t k, told = 0;
	json_array_foreach(lines, k, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		told += ev != NULL && strcmp(ev, "spawner_lost") == 0;
	}
	json_decref(lines);
	ck_assert_uint_eq(told, 1);
	free(id);
}
END_TEST

START_TEST(a_lost_spawner_does_not_hold_serves_stop)
{
	char *id = run_job(), path[200], *running;
	long status = 0;
	char state = '?';
	int stop = -2;

	/* A job that runs while the spawner is lost. */
	json_t *e = servekit_post(&serve, &st, "lock-job",
	    "echo run > repo/RUN.md; sleep 50", NULL);
	running = servekit_job_id(e);
	json_decref(e);

	pid_t sp = spawner_of(serve.pid);
	hold(sp);
	snprintf(path, sizeof(path), "/v1/jobs/%s/report", id);
	e = harness_call(&serve, "GET", path, st.launcher, NULL, NULL, &status);
	/* Lost, the spawner tells no child's end: the running job is lost,
	 * and says why. */
	snprintf(path, sizeof(path), "/v1/jobs/%s", running);
	long run_status = 0;
	json_t *r = harness_call(&serve, "GET", path, st.launcher, NULL, NULL,
	    &run_status);
	char run_state[16], run_error[512];
	snprintf(run_state, sizeof(run_state), "%s",
	    json_string_value(json_object_get(r, "state")) ?: "(none)");
	snprintf(run_error, sizeof(run_error), "%s",
	    json_string_value(json_object_get(r, "error")) ?: "(none)");
	json_decref(r);
	/* SIGTERM with the spawner still stopped: serve does not wait for
	 * it for ever (the harness kills it after 10 s: -1). */
	if (status == 503)
		stop = daemon_stop(&serve);
	(void)servekit_parent_of(sp, &state);
	ck_assert_int_eq(kill(sp, SIGCONT), 0);
	stopped = -1;
	ck_assert_msg(status == 503 &&
		strcmp(json_string_value(json_object_get(e, "error")) ?: "",
		    "spawner_lost") == 0,
	    "the report, the spawner stopped: %ld %s", status,
	    json_string_value(json_object_get(e, "error")) ?: "(none)");
	json_decref(e);
	ck_assert_msg(strcmp(run_state, "lost") == 0 &&
		strstr(run_error, "lost its spawner") != NULL,
	    "the job running when the spawner was lost: %s: %s", run_state,
	    run_error);
	ck_assert_msg(stop == 0 && state == 'T',
	    "serve's stop, its spawner lost and still stopped (%c): %d", state,
	    stop);
	/* Let go, the spawner finds its end shut, and exits. */
	for (int i = 0; i < 600; i++) {
		state = '?';
		if (servekit_parent_of(sp, &state) < 0 || state == 'Z')
			break;
		usleep(50000);
	}
	ck_assert_msg(state == '?' || state == 'Z',
	    "the spawner (pid %d) let go of a serve that stopped is still "
	    "there: %c",
	    (int)sp, state);
	/* It stopped its child, whose stop path wrote the patch: a serve
	 * restarted (a new spawner) tells the job lost and serves it. */
	ck_assert_int_eq(daemon_restart(&serve), 0);
	snprintf(path, sizeof(path), "/v1/jobs/%s", running);
	e = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(e, "state")),
	    "lost");
	json_decref(e);
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", running);
	status = 0;
	json_decref(harness_call(&serve, "GET", path, st.launcher, NULL, NULL,
	    &status));
	ck_assert_int_eq(status, 200);
	free(running);
	free(id);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("serve_lock");
	TCase *tc = tcase_create("serve_lock");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, a_held_spawner_holds_no_other_request);
	tcase_add_test(tc, a_lost_spawner_does_not_hold_serves_stop);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
