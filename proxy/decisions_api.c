/*
 * GET /v1/decisions on the control port, for an admin (the proxy's
 * admin_key_sha256): the decision log read back from the proxy's own
 * files, rotated ones included, oldest first, a page at a time
 * (decisions.h caps what one call reads and keeps). `cordon logs` and
 * `cordon egress-report` read it; they need no file on the proxy's host.
 * docs/api.md has the route.
 *
 * A page reads up to 8 MiB, tens to hundreds of milliseconds: never on
 * the proxy's loop, which carries every job's traffic. The request is
 * deferred and one worker thread scans, one page at a time; a few pages
 * wait their turn, more are 503 busy with Retry-After. The worker tells
 * the loop through a pipe, and the loop resumes the request and answers:
 * the worker touches nothing of the loop's but the scan it was handed.
 */
#include "proxy.h"

#include "decisions.h"
#include "log.h"
#include "util.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

/* Pages that may wait behind the one being read; past them, 503. */
#define DECISIONS_WAITING_MAX 4

/* One page asked: the query's own copy, then the page the worker read. */
struct scan {
	TAILQ_ENTRY(scan) link;
	struct http_request *req;
	char job[JOB_ID_MAX + 1], verdict[8], cursor[DECISIONS_CURSOR_MAX];
	struct decisions_query q;
	int r; /* decisions_scan's */
	struct decisions_page page;
	bool stopping; /* the proxy stops: 503 */
};

TAILQ_HEAD(scan_list, scan);

struct decisions_worker {
	pthread_t thread;
	bool started, joined;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct scan_list todo, done; /* under mu */
	unsigned queued; /* on todo, or being read: under mu */
	bool stop; /* under mu */
	int pipe[2]; /* the worker writes a byte per page done */
	struct event *ev;
	char *logs_dir;
};

/* A 400 naming the parameter. */
static void
bad_parameter(struct http_response *res, const char *name, const char *what)
{
	char message[300];

	snprintf(message, sizeof(message), "%s: %s", name, what);
	http_reply_json(res, 400,
	    json_pack("{s:s, s:s, s:s}", "error", "malformed", "parameter",
		name, "message", message));
}

static bool
time_parameter(struct http_request *req, struct http_response *res,
    const char *name, int64_t *ret)
{
	const char *s = http_request_query(req, name);

	*ret = DECISIONS_NO_TIME;
	if (s == NULL)
		return true;
	if (decisions_parse_time(s, ret) < 0) {
		bad_parameter(res, name,
		    "an RFC 3339 time (2026-12-01T09:50:00Z) or Unix "
		    "seconds");
		return false;
	}
	return true;
}

static void *
worker_main(void *arg)
{
	struct decisions_worker *w = arg;
	sigset_t all;

	/* Signals are the loop's (libevent's handlers). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && TAILQ_EMPTY(&w->todo))
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		struct scan *s = TAILQ_FIRST(&w->todo);
		TAILQ_REMOVE(&w->todo, s, link);
		pthread_mutex_unlock(&w->mu);

		int dirfd =
		    open(w->logs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		s->r = dirfd < 0
		    ? -errno
		    : decisions_scan(dirfd, "decisions.log", &s->q, &s->page);
		if (dirfd >= 0)
			close(dirfd);

		pthread_mutex_lock(&w->mu);
		w->queued--;
		TAILQ_INSERT_TAIL(&w->done, s, link);
		/* A full pipe already says there is something to take. */
		(void)!write(w->pipe[1], "", 1);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* The pages done, resumed on the loop; their answers come from the
 * handler, called again. */
static void
resume_done(struct decisions_worker *w, bool stopping)
{
	struct scan_list done = TAILQ_HEAD_INITIALIZER(done);
	struct scan *s;

	pthread_mutex_lock(&w->mu);
	while ((s = TAILQ_FIRST(&w->done)) != NULL) {
		TAILQ_REMOVE(&w->done, s, link);
		TAILQ_INSERT_TAIL(&done, s, link);
	}
	if (stopping)
		while ((s = TAILQ_FIRST(&w->todo)) != NULL) {
			TAILQ_REMOVE(&w->todo, s, link);
			s->stopping = true;
			TAILQ_INSERT_TAIL(&done, s, link);
		}
	pthread_mutex_unlock(&w->mu);
	while ((s = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, s, link);
		http_request_resume(s->req);
	}
}

static void
on_done(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *p = arg;
	char drain[64];

	(void)what;
	while (read(fd, drain, sizeof(drain)) > 0)
		;
	resume_done(p->decisions, false);
	proxy_kick(p);
}

int
decisions_worker_start(struct proxy *p)
{
	struct decisions_worker *w = calloc(1, sizeof(*w));
	int r;

	if (w == NULL)
		return -ENOMEM;
	TAILQ_INIT(&w->todo);
	TAILQ_INIT(&w->done);
	w->pipe[0] = w->pipe[1] = -1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	p->decisions = w;
	if ((w->logs_dir = strdup(p->cfg.common.logs_dir)) == NULL)
		return -ENOMEM;
	if (pipe2(w->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		w->pipe[0] = w->pipe[1] = -1;
		return -errno;
	}
	w->ev =
	    event_new(p->base, w->pipe[0], EV_READ | EV_PERSIST, on_done, p);
	if (w->ev == NULL || event_add(w->ev, NULL) < 0)
		return -ENOMEM;
	if ((r = pthread_create(&w->thread, NULL, worker_main, w)) != 0)
		return -r;
	w->started = true;
	return 0;
}

void
decisions_stopping(struct proxy *p)
{
	struct decisions_worker *w = p->decisions;

	if (w == NULL)
		return;
	/* The page being read is finished, the rest answered 503. */
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->started && !w->joined) {
		pthread_join(w->thread, NULL);
		w->joined = true;
	}
	resume_done(w, true);
}

void
decisions_worker_free(struct proxy *p)
{
	struct decisions_worker *w = p->decisions;

	if (w == NULL)
		return;
	decisions_stopping(p);
	if (w->ev != NULL)
		event_free(w->ev);
	if (w->pipe[0] >= 0)
		close(w->pipe[0]);
	if (w->pipe[1] >= 0)
		close(w->pipe[1]);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->logs_dir);
	free(w);
	p->decisions = NULL;
}

static void
scan_free(void *arg)
{
	struct scan *s = arg;

	json_decref(s->page.decisions);
	free(s);
}

/* The answer to a page the worker read. */
static void
scan_reply(struct scan *s, struct http_response *res)
{
	if (s->stopping) {
		http_reply_error(res, 503, "stopping", "the proxy is stopping");
		return;
	}
	if (s->r == -ENOENT) {
		http_reply_json(res, 200,
		    json_pack("{s:s, s:[], s:i, s:i}", "order", "oldest_first",
			"decisions", "files", 0, "scanned_bytes", 0));
		return;
	}
	if (s->r < 0) {
		http_reply_error(res, 500, "log_unreadable",
		    "the decision log cannot be read: %s", strerror(-s->r));
		return;
	}
	json_t *out = json_pack("{s:s, s:O, s:i, s:I}", "order", "oldest_first",
	    "decisions", s->page.decisions, "files", (int)s->page.files,
	    "scanned_bytes", (json_int_t)s->page.scanned);
	if (out != NULL && s->page.next[0] != '\0')
		json_object_set_new(out, "next", json_string(s->page.next));
	http_reply_json(res, 200, out);
}

void
decisions_get(void *ctx, struct http_request *req, struct http_response *res)
{
	struct proxy *p = ctx;
	struct scan *resumed = http_request_state(req);

	if (resumed != NULL) {
		scan_reply(resumed, res);
		return;
	}
	const char *job = http_request_query(req, "job");
	const char *verdict = http_request_query(req, "verdict");
	const char *limit = http_request_query(req, "limit");
	const char *cursor = http_request_query(req, "cursor");
	struct decisions_query q = { .job = job,
		.verdict = verdict,
		.cursor = cursor,
		.limit = 100 };

	if (job != NULL && !name_ok(job, JOB_ID_MAX, "_-")) {
		bad_parameter(res, "job", "a job id, 1 to 63 of [A-Za-z0-9_-]");
		return;
	}
	if (verdict != NULL && strcmp(verdict, "allow") != 0 &&
	    strcmp(verdict, "deny") != 0 && strcmp(verdict, "error") != 0) {
		bad_parameter(res, "verdict", "allow, deny or error");
		return;
	}
	if (http_request_query(req, "manifest") != NULL) {
		bad_parameter(res, "manifest",
		    "the proxy does not know a job's manifest: ask the "
		    "broker for its jobs (cordon egress-report does)");
		return;
	}
	if (limit != NULL) {
		char *end;
		errno = 0;
		long long v = strtoll(limit, &end, 10);
		if (limit[0] < '0' || limit[0] > '9' || *end != '\0' ||
		    errno != 0 || v < 1 || v > DECISIONS_LIMIT_MAX) {
			bad_parameter(res, "limit",
			    "an integer from 1 to 1000");
			return;
		}
		q.limit = (size_t)v;
	}
	if (cursor != NULL && !decisions_cursor_ok(cursor)) {
		bad_parameter(res, "cursor",
		    "not a cursor this proxy gave (a page's next)");
		return;
	}
	if (!time_parameter(req, res, "since", &q.since_ms) ||
	    !time_parameter(req, res, "until", &q.until_ms))
		return;
	if (q.since_ms != DECISIONS_NO_TIME &&
	    q.until_ms != DECISIONS_NO_TIME && q.until_ms < q.since_ms) {
		bad_parameter(res, "until", "before since");
		return;
	}
	struct decisions_worker *w = p->decisions;
	if (w == NULL || !w->started) {
		http_reply_error(res, 503, "stopping", "the proxy is stopping");
		return;
	}
	struct scan *sc = calloc(1, sizeof(*sc));
	if (sc == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	/* The worker reads its own copy of the query: MHD's strings stay
	 * the loop's. */
	sc->req = req;
	sc->q = q;
	sc->q.job = sc->q.verdict = sc->q.cursor = NULL;
	if (job != NULL) {
		snprintf(sc->job, sizeof(sc->job), "%s", job);
		sc->q.job = sc->job;
	}
	if (verdict != NULL) {
		snprintf(sc->verdict, sizeof(sc->verdict), "%s", verdict);
		sc->q.verdict = sc->verdict;
	}
	if (cursor != NULL) {
		snprintf(sc->cursor, sizeof(sc->cursor), "%s", cursor);
		sc->q.cursor = sc->cursor;
	}
	pthread_mutex_lock(&w->mu);
	bool busy = w->stop || w->queued > DECISIONS_WAITING_MAX;
	if (!busy) {
		w->queued++;
		http_request_set_state(req, sc, scan_free);
		http_request_defer(req);
		TAILQ_INSERT_TAIL(&w->todo, sc, link);
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	if (busy) {
		free(sc);
		http_reply_error(res, 503, "busy",
		    "%d pages of the decision log are being read or waiting: "
		    "ask again",
		    DECISIONS_WAITING_MAX + 1);
		(void)http_reply_header(res, "Retry-After", "1");
	}
}
