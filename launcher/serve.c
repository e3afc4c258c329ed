/*
 * `cordon serve`: the launcher's HTTP API for orchestrators. Each job is a
 * `cordon run --json` of its own, a child of serve: the same code path as
 * the command line, and a job whose launcher dies is still revoked by the
 * broker's lease. serve answers POST /v1/jobs once the child has the job
 * from the broker and serve's record of it is on disk (the child waits
 * for that before it makes the job further: a serve that dies first
 * leaves nothing no record names), reaps children and keeps their
 * results (read back at a restart), and stops a job by SIGTERM, which
 * runs the child's stop path. It lists its jobs,
 * serves a finished job's patch and report, turns every line its children
 * write on stderr into a JSON log line (and keeps the reason a job could
 * not run), replays a POST that carries an Idempotency-Key it has seen,
 * tells a job's callback URL (one callback_allow lets through, at an
 * address judged once), in a signed POST, that the job ended, and
 * lets a client follow a running job's output (long-polled pages of what
 * the job wrote, cleaned, then the envelope).
 */
#include "launcher.h"

#include "buf.h"
#include "cidr.h"
#include "confine.h"
#include "digest.h"
#include "http_client.h"
#include "http_server.h"
#include "log.h"
#include "manifest.h"
#include "metrics.h"
#include "path.h"
#include "problems.h"
#include "service.h"
#include "spawner.h"
#include "stoppath.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

/* A result's room beyond the output it carries (flags, changes, the
 * figures): the hatch's report fits in it. */
#define RESULT_REST (20 * 1024 * 1024)
#define STOP_WAIT_MS 15000
/* Finished jobs kept for GET, with their records and patches: the newest
 * serve_keep_jobs, and any that ended less than serve_keep_seconds ago
 * (1000 and 60 by default). */
/* `cordon recover` runs this often, at start, and soon after a job whose
 * stop path may not have finished. */
#define RECOVER_EVERY 30
/* The manifest's own caps: serve takes what the broker would. */
#define MAX_INPUTS 64
#define MAX_COMMAND 256
#define IDEM_MAX 128
/* POSTs with an Idempotency-Key being started at once. */
#define STARTING_MAX 16
/* Finished jobs a tick forgets at most (the rest at the next). */
#define FORGET_PER_TICK 64
#define CALLBACK_URL_MAX 1024
#define CALLBACK_TRIES 3
#define CALLBACK_MS 5000
/* A patch is fetched from the hatch within the client's cap: no larger
 * one is ever written. */
#define PATCH_MAX HTTPC_MAX_ANSWER
#define LIST_DEFAULT 100
#define LIST_MAX 1000
/* The live copy of a job's output: cordon run writes it on this
 * descriptor (launcher_output_tee), serve keeps this much of it. */
#define LIVE_FD 4
#define LIVE_MAX (2 * 1024 * 1024)
#define LIVE_LINE_MAX (256 * 1024)
#define LIVE_PIPE (1024 * 1024)
/* A finished job's output, beside its record <job>.json. */
#define OUTPUT_SUFFIX ".output.json"
/* What a lost spawner (spawner.h) means: serve's HTTP part, without
 * root, cannot make another. */
#define SPAWNER_LOST_EFFECT                                                    \
	"serve starts no job and serves no patch until it is restarted "       \
	"(its running jobs are told lost)"
/* What a job running when the spawner was lost says. */
#define SPAWNER_LOST_ERROR                                                     \
	"serve lost its spawner while this job ran, and its result is lost; "  \
	"its own cordon run runs its stop path (or `cordon recover` "          \
	"finishes it once serve is restarted); the patch, once written, is "   \
	"at GET /v1/jobs/{job}/patch after a restart of serve"
#define FOLLOW_WAIT_DEFAULT 25
#define FOLLOW_WAIT_MAX 30

struct sjob {
	struct sjob *next;
	char id[64];
	char manifest[65];
	pid_t pid; /* 0 once reaped */
	int result_fd; /* the child's stdout: its JSON result */
	int err_fd; /* the child's stderr: its lines become log lines */
	int live_fd; /* the live copy of the job's output, JSON lines */
	struct buf live_line; /* a live line not yet whole */
	json_t *chunks; /* [{stream, text}] as they came */
	size_t live_bytes;
	bool live_truncated;
	bool live_full; /* LIVE_MAX reached: nothing more kept */
	size_t live_cap; /* each stream's cap (output_kb), 0 until told */
	size_t live_stream[2]; /* the text kept of stdout, of stderr */
	struct buf result;
	json_t *res; /* the result, parsed once the child ended */
	char line[1024]; /* a stderr line not yet whole */
	size_t linelen;
	char error[512]; /* why cordon run failed, in its words; "" */
	int status;
	bool done;
	time_t started, ended;
	int64_t started_ms;
	int64_t order; /* the wall clock at the start, in ms: the list's order
			  across restarts */
	char idem[IDEM_MAX + 1]; /* its Idempotency-Key, or "" */
	char idem_sha[SHA256_HEX_LEN + 1]; /* of the body that came with it */
	char *callback; /* told when the job ends, or NULL */
	json_t *callback_body; /* the summary to send, kept until it is sent */
	bool callback_done; /* sent, or given up: never sent again */
	bool lost; /* serve stopped while it ran: its result is lost */
	bool from_record; /* read back at start: no output kept */
	bool record_stale; /* its record still says running */
};

/* A GET of a job's output with follow=1, waiting for more. */
struct follower {
	struct follower *next;
	struct http_request *req;
	char job[64];
	size_t offset;
	int64_t deadline_ms;
};

/* A callback to send: the signed body and where (copies of the job's:
 * the job may be forgotten meanwhile). */
struct callback {
	struct callback *next;
	char job[64];
	char *url;
	json_t *body;
};

/* Where a finished job's output envelope is: out (a reference), or its
 * kept file name, to be read without l->mu (a big output read there
 * would hold every other request); neither: status and why say so. */
struct output_ref {
	json_t *out;
	char name[80]; /* <job>.output.json, or "" */
	char job[64];
	long status; /* 410, 502 when there is none */
	char why[768];
};

static const char *const stop_reasons[] = { "exit", "wall_clock",
	"output_limit", "output_closed", "revoked", "tripwire", "stopped",
	"interrupted", "launcher_error", "none", "other" };
static const unsigned duration_le[] = { 1, 5, 10, 30, 60, 300, 900, 3600 };

/* serve's state: the launcher's, and what the API adds; l.mu guards all
 * of it. */
struct serve {
	struct launcher l;
	struct spawner sp; /* the root part that forks each child */
	unsigned char callback_key[256];
	size_t callback_key_len; /* 0: callbacks refused */
	char starting[STARTING_MAX][IDEM_MAX + 1];
	uint64_t started_total, not_started_total;
	uint64_t ended_total[ARRAY_SIZE(stop_reasons)];
	uint64_t duration_bucket[ARRAY_SIZE(duration_le)];
	uint64_t duration_count;
	double duration_sum;
	uint64_t callbacks_sent, callbacks_failed;
	struct callback *queue, **queue_tail;
	pthread_cond_t queue_cond;
	pthread_t callback_thread;
	bool callback_thread_started, stopping;
	bool http_stopping; /* the server stops: no follower waits */
	struct follower *followers;
	int records_fd; /* <state_dir>/serve-jobs, the jobs' records; -1 */
	bool record_warned; /* a failed write was logged once (its thread's) */
	bool spawner_warned; /* its loss was logged */
	/* The records to write, in the order asked, by a thread of their own:
	 * no fsync holds l.mu. */
	struct record_op *records, **records_tail;
	pthread_cond_t records_cond;
	pthread_t records_thread;
	bool records_thread_started, records_stopping;
	bool records_busy; /* an op is being carried out */
};

/* A job's record to write whole (text), with its output first when
 * output is set, or to remove with its output (text NULL); then cb, if
 * any, is handed to the callbacks' thread: a callback goes out only once
 * its record, which keeps it until it is sent, is on disk. */
struct record_op {
	struct record_op *next;
	char id[64];
	char *text;
	char *output;
	struct callback *cb;
};

/* The most a child's result can be: the envelope of the most output a
 * manifest may allow (output_kb's ceiling, both streams together, each
 * byte at most two in JSON) and the rest. A cap of serve's own would cut
 * the result a manifest allowed, and lose it whole. */
static size_t
result_max(void)
{
	long long lo, hi = 0, def;

	(void)manifest_limit_range("output_kb", &lo, &hi, &def);
	return (size_t)2 * ((size_t)hi * 1024 + 64 * 1024) + RESULT_REST;
}

static int read_capped(int fd, size_t max, char **ret, size_t *ret_len);
static bool idem_ok(const char *k);
static void output_ref(const struct serve *s, const struct sjob *j,
    struct output_ref *o);
static json_t *output_load(const struct serve *s, struct output_ref *o);
static bool spawner_unavailable(struct serve *s, struct http_response *res,
    int r);

static struct sjob *
find(struct launcher *l, const char *id)
{
	for (struct sjob *j = l->jobs; j != NULL; j = j->next)
		if (strcmp(j->id, id) == 0)
			return j;
	return NULL;
}

/* The job's state as the API says it. */
static const char *
state_of(const struct sjob *j)
{
	return j->lost ? "lost" : j->done ? "done" : "running";
}

static void
sjob_free(struct sjob *j)
{
	if (j == NULL)
		return;
	if (j->result_fd >= 0)
		close(j->result_fd);
	if (j->err_fd >= 0)
		close(j->err_fd);
	if (j->live_fd >= 0)
		close(j->live_fd);
	buf_free(&j->live_line);
	json_decref(j->chunks);
	buf_free(&j->result);
	json_decref(j->res);
	free(j->callback);
	json_decref(j->callback_body);
	free(j);
}

/* One line cordon run wrote on stderr, as a log line of serve's: its own
 * JSON log lines pass with the job added, any other is wrapped; the first
 * "cordon run: " line is why the job failed. */
static void
said(struct sjob *j, const char *line)
{
	json_t *o = line[0] == '{' ? json_loads(line, 0, NULL) : NULL;

	if (json_is_object(o)) {
		if (j->id[0] != '\0' && json_object_get(o, "job") == NULL)
			json_object_set_new(o, "job", json_string(j->id));
		char *text = json_dumps(o, JSON_COMPACT);
		if (text != NULL) {
			size_t n = strlen(text);
			text[n] = '\n';
			/* One write: a line never mixes with another's. */
			if (write(2, text, n + 1) < 0) {
				/* the log is gone: nothing to tell */
			}
			free(text);
		}
		json_decref(o);
		return;
	}
	json_decref(o);
	log_warn("job_said", "{s:s?, s:s, s:s}", "job",
	    j->id[0] != '\0' ? j->id : NULL, "manifest", j->manifest, "line",
	    line);
	if (j->error[0] == '\0' && strncmp(line, "cordon run: ", 12) == 0)
		snprintf(j->error, sizeof(j->error), "%s", line + 12);
}

/* Reads what a child wrote on stderr, without waiting: each whole line is
 * said; at the end (eof), a line cut short too. */
static void
drain_err(struct sjob *j, bool eof)
{
	char buf[4096];
	ssize_t n;

	while (j->err_fd >= 0 && (n = read(j->err_fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n' ||
			    j->linelen == sizeof(j->line) - 1) {
				j->line[j->linelen] = '\0';
				said(j, j->line);
				j->linelen = 0;
				if (buf[i] == '\n')
					continue;
			}
			j->line[j->linelen++] = buf[i];
		}
	if (eof && j->linelen > 0) {
		j->line[j->linelen] = '\0';
		said(j, j->line);
		j->linelen = 0;
	}
}

/*
 * One live line: cordon run's {"output_cap": N} (before any chunk: each
 * stream's output_kb in bytes), or a chunk, kept while its stream's text
 * is within that cap and all of it under LIVE_MAX. A chunk that crosses
 * the cap is cut there, at a character's start, as the envelope cuts the
 * stream: the chunks of a stream then spell what the envelope keeps, and
 * truncated says so as its own does.
 */
static void
live_said(struct sjob *j, const char *line, size_t len)
{
	json_t *c = json_loadb(line, len, 0, NULL);
	const char *stream = json_string_value(json_object_get(c, "stream"));
	const char *text = json_string_value(json_object_get(c, "text"));
	json_t *cap = json_object_get(c, "output_cap");

	if (json_is_integer(cap) && json_integer_value(cap) > 0 &&
	    j->live_cap == 0 && json_array_size(j->chunks) == 0 &&
	    !j->live_truncated) {
		j->live_cap = (size_t)json_integer_value(cap);
	} else if (stream != NULL && text != NULL &&
	    (strcmp(stream, "stdout") == 0 || strcmp(stream, "stderr") == 0)) {
		int k = stream[3] == 'e'; /* stderr */
		size_t n = strlen(text);
		if (j->live_cap > 0 && j->live_stream[k] + n > j->live_cap) {
			n = j->live_cap - j->live_stream[k];
			while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
				n--;
			j->live_truncated = true;
		}
		if (j->live_full || j->live_bytes + n > LIVE_MAX) {
			j->live_full = j->live_truncated = true;
		} else if (n > 0) {
			j->live_bytes += n;
			j->live_stream[k] += n;
			json_array_append_new(j->chunks,
			    json_pack("{s:s, s:s%}", "stream", stream, "text",
				text, n));
		}
		/* The stream is at its cap: nothing more of it is kept. */
		if (j->live_cap > 0 && n < strlen(text))
			j->live_stream[k] = j->live_cap;
	}
	json_decref(c);
}

/* Reads the live copy of the job's output, without waiting. */
static void
drain_live(struct sjob *j)
{
	char buf[16384];
	ssize_t n;

	while (j->live_fd >= 0 && (n = read(j->live_fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				live_said(j,
				    j->live_line.data != NULL
					? j->live_line.data
					: "",
				    j->live_line.len);
				buf_reset(&j->live_line);
			} else if (buf_append(&j->live_line, buf + i, 1) < 0) {
				/* A line past the cap: the copy ends. */
				j->live_truncated = true;
				close(j->live_fd);
				j->live_fd = -1;
				return;
			}
		}
}

/* Reads what a child wrote of its result, without waiting. */
static void
drain(struct sjob *j)
{
	char buf[16384];
	ssize_t n;

	while (
	    j->result_fd >= 0 && (n = read(j->result_fd, buf, sizeof(buf))) > 0)
		(void)buf_append(&j->result, buf, (size_t)n);
	drain_err(j, false);
	drain_live(j);
}

static size_t
reason_index(const char *reason)
{
	if (reason == NULL)
		return ARRAY_SIZE(stop_reasons) - 2; /* none */
	for (size_t i = 0; i < ARRAY_SIZE(stop_reasons) - 2; i++)
		if (strcmp(stop_reasons[i], reason) == 0)
			return i;
	return ARRAY_SIZE(stop_reasons) - 1; /* other */
}

/* A field of a finished job's result, or NULL. */
static json_t *
result_get(const struct sjob *j, const char *name)
{
	return json_object_get(j->res, name);
}

/* A finished job's summary: what GET /v1/jobs lists and what a callback
 * says. */
static json_t *
summary_json(const struct sjob *j)
{
	return json_pack("{s:s, s:s, s:s, s:I, s:o, s:O?, s:O?, s:O?, s:s?}",
	    "job", j->id, "state", state_of(j), "manifest", j->manifest,
	    "started", (json_int_t)j->started, "ended",
	    j->done ? json_integer((json_int_t)j->ended) : json_null(),
	    "exit_code", result_get(j, "exit_code"), "stop_reason",
	    result_get(j, "stop_reason"), "verdict", result_get(j, "verdict"),
	    "error", j->error[0] != '\0' ? j->error : NULL);
}

/* j's callback: its body (j->callback_body, which its record keeps
 * until the callback is sent or given up) to its URL, or NULL (logged);
 * l->mu held. */
static struct callback *
callback_make(struct serve *s, struct sjob *j)
{
	struct callback *c = calloc(1, sizeof(*c));

	if (c == NULL || j->callback_body == NULL ||
	    (c->url = strdup(j->callback)) == NULL) {
		free(c);
		s->callbacks_failed++;
		log_warn("callback_failed", "{s:s, s:s}", "job", j->id, "error",
		    "out of memory");
		return NULL;
	}
	memcpy(c->job, j->id, sizeof(c->job));
	c->body = json_incref(j->callback_body);
	return c;
}

/* Hands c (taken; NULL: nothing) to the callbacks' thread; l->mu held. */
static void
callback_push(struct serve *s, struct callback *c)
{
	if (c == NULL)
		return;
	*s->queue_tail = c;
	s->queue_tail = &c->next;
	pthread_cond_signal(&s->queue_cond);
}

static void
callback_free(struct callback *c)
{
	if (c == NULL)
		return;
	free(c->url);
	json_decref(c->body);
	free(c);
}

/* --- the jobs' records -------------------------------------------------- */

/* What a restarted serve says of a job that ran when it stopped. */
#define LOST_ERROR                                                             \
	"serve stopped while this job ran, and its result is lost; its "       \
	"stop path ran in its own cordon run, or `cordon recover` finishes "   \
	"it (revoke, seal, patch: serve runs it at start and every 30 s); "    \
	"the patch, once written, is at GET /v1/jobs/{job}/patch"

/* A job's record: what GET answers of it after a restart (its result
 * without the output, which is <job>.output.json beside it), and its
 * callback: where, and the body until it was sent. */
static json_t *
record_json(const struct sjob *j)
{
	json_t *res = j->res != NULL ? json_copy(j->res) : NULL;

	if (res != NULL)
		json_object_del(res, "output");
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:s, s:s, s:s?, s:o, "
			 "s:s?, s:O?, s:b}",
	    "job", j->id, "manifest", j->manifest, "state", state_of(j),
	    "started", (json_int_t)j->started, "order", (json_int_t)j->order,
	    "ended", j->done ? json_integer((json_int_t)j->ended) : json_null(),
	    "idem", j->idem, "idem_sha", j->idem_sha, "error",
	    j->error[0] != '\0' ? j->error : NULL, "result",
	    res != NULL ? res : json_null(), "callback", j->callback,
	    "callback_body", j->callback_body, "callback_done",
	    j->callback_done);
}

static int
write_all_fd(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Queues op for the records' thread (text, output and cb taken); l->mu
 * held. Without an op, cb goes at once. */
static void
record_queue(struct serve *s, const char *id, char *text, char *output,
    struct callback *cb)
{
	struct record_op *op = calloc(1, sizeof(*op));

	if (op == NULL) {
		free(text);
		free(output);
		callback_push(s, cb);
		return;
	}
	snprintf(op->id, sizeof(op->id), "%s", id);
	op->text = text;
	op->output = output;
	op->cb = cb;
	*s->records_tail = op;
	s->records_tail = &op->next;
	/* Its thread, and serve's end waiting for the ops to be done. */
	pthread_cond_broadcast(&s->records_cond);
}

/* Writes text whole as name in the records' directory: a file (0600)
 * fsync'd, renamed over the old, then the directory fsync'd (a crash
 * leaves the old file or the new, never half of one). 0 or -errno. */
static int
store_file(struct serve *s, const char *name, const char *text)
{
	char tmp[NAME_MAX + 1];
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(s->records_fd, tmp,
	    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	r = write_all_fd(fd, text, strlen(text));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 &&
	    (renameat(s->records_fd, tmp, s->records_fd, name) < 0 ||
		fsync(s->records_fd) < 0))
		r = -errno;
	if (r < 0)
		(void)unlinkat(s->records_fd, tmp, 0);
	return r;
}

/* Carries out op, on the records' thread: the output first, then the
 * record (a record that says done finds its output, or says why not),
 * each written whole; or both removed. A failure is logged, the
 * record's once. */
static void
record_store(struct serve *s, const struct record_op *op)
{
	char name[80], out[80];
	int r;

	snprintf(name, sizeof(name), "%s.json", op->id);
	snprintf(out, sizeof(out), "%s" OUTPUT_SUFFIX, op->id);
	if (op->text == NULL) {
		(void)unlinkat(s->records_fd, out, 0);
		(void)unlinkat(s->records_fd, name, 0);
		return;
	}
	if (op->output != NULL && (r = store_file(s, out, op->output)) < 0)
		log_warn("output_not_kept", "{s:s, s:s, s:s}", "job", op->id,
		    "error", strerror(-r), "effect",
		    "after a restart of serve its output answers 410");
	if ((r = store_file(s, name, op->text)) < 0) {
		if (!s->record_warned)
			log_warn("record_failed", "{s:s, s:s, s:s}", "job",
			    op->id, "error", strerror(-r), "effect",
			    "a restart of serve forgets this job");
		s->record_warned = true;
	}
}

/* The records' own thread: each op in turn; once serve stops, the ones
 * left, then it ends. */
static void *
records_worker(void *arg)
{
	struct serve *s = arg;
	struct launcher *l = &s->l;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct record_op *op = s->records;
		if (op == NULL) {
			if (s->records_stopping)
				break;
			pthread_cond_wait(&s->records_cond, &l->mu);
			continue;
		}
		s->records = op->next;
		if (s->records == NULL)
			s->records_tail = &s->records;
		s->records_busy = true;
		pthread_mutex_unlock(&l->mu);
		record_store(s, op);
		free(op->text);
		free(op->output);
		pthread_mutex_lock(&l->mu);
		callback_push(s, op->cb);
		free(op);
		s->records_busy = false;
		pthread_cond_broadcast(&s->records_cond);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* Asks for j's record to be written as j is now, with its output when
 * with_output (the job just ended), then for cb (taken, or NULL) to go;
 * l->mu held. */
static void
record_write_as(struct serve *s, const struct sjob *j, bool with_output,
    struct callback *cb)
{
	json_t *rec, *out = with_output ? result_get(j, "output") : NULL;
	char *text = NULL, *output = NULL;

	if (s->records_fd < 0) {
		callback_push(s, cb);
		return;
	}
	rec = record_json(j);
	if (rec != NULL)
		text = json_dumps(rec, JSON_COMPACT);
	json_decref(rec);
	if (text != NULL && out != NULL &&
	    (output = json_dumps(out, JSON_COMPACT)) == NULL)
		log_warn("output_not_kept", "{s:s, s:s, s:s}", "job", j->id,
		    "error", "out of memory", "effect",
		    "after a restart of serve its output answers 410");
	if (text != NULL)
		record_queue(s, j->id, text, output, cb);
	else
		callback_push(s, cb);
}

static void
record_write(struct serve *s, const struct sjob *j)
{
	record_write_as(s, j, false, NULL);
}

/* Writes the record of j, a job just started, on this thread (j is in no
 * list yet: no later write of its can be queued before this one). */
static void
record_first(struct serve *s, const struct sjob *j)
{
	char name[80], *text = NULL;
	json_t *rec;
	int r = -ENOMEM;

	if (s->records_fd < 0)
		return;
	snprintf(name, sizeof(name), "%s.json", j->id);
	if ((rec = record_json(j)) != NULL &&
	    (text = json_dumps(rec, JSON_COMPACT)) != NULL)
		r = store_file(s, name, text);
	json_decref(rec);
	free(text);
	if (r < 0)
		log_warn("record_failed", "{s:s, s:s, s:s}", "job", j->id,
		    "error", strerror(-r), "effect",
		    "a restart of serve forgets this job");
}

/* A job forgotten: the patch cordon run wrote for it,
 * <state_dir>/<job>.patch (named by no other record: one job's), goes
 * by the spawner, whose directory it is, then its record and output.
 * A patch that cannot be removed keeps its record (the next start tries
 * again): serve cannot tell a patch of its own that no record names from
 * a command line's cordon run's, so it leaves none. Without l->mu (the
 * spawner's round trip holds no request); takes it. */
static void
record_forget(struct serve *s, const char *id)
{
	int r = spawner_remove_patch(&s->sp, id);

	if (r < 0 && r != -ENOENT) {
		log_warn("patch_not_removed", "{s:s, s:s, s:s}", "job", id,
		    "error", strerror(-r), "effect",
		    "its record stays; removed at the next start");
		return;
	}
	pthread_mutex_lock(&s->l.mu);
	if (s->records_fd >= 0)
		record_queue(s, id, NULL, NULL, NULL);
	pthread_mutex_unlock(&s->l.mu);
}

/*
 * The records' directory, <state_dir>/serve-jobs, made (0700) by the
 * root part for the user the HTTP part drops to, and opened: the part
 * keeps the descriptor, and needs no way into the root-only state
 * directory. 0 or -errno.
 */
static int
records_open(struct serve *s)
{
	char path[PATH_MAX];
	struct stat st;
	uid_t uid;
	gid_t gid;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/serve-jobs",
		s->l.cfg.common.state_dir) >= sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (geteuid() == 0 && spawner_serve_user(&uid, &gid) == 0 &&
	    (st.st_uid != uid || st.st_gid != gid) &&
	    (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	s->records_fd = fd;
	return 0;
}

/* A record that cannot be read back, moved aside as <name>.bad (never
 * read again, never deleted: what it held is evidence) and logged. */
static void
record_set_aside(struct serve *s, const char *name, const char *id,
    const char *why)
{
	char bad[80];

	snprintf(bad, sizeof(bad), "%s.bad", name);
	if (renameat(s->records_fd, name, s->records_fd, bad) == 0)
		log_warn("record_bad", "{s:s, s:s, s:s, s:s}", "job", id,
		    "path", name, "moved_to", bad, "why", why);
	else
		log_warn("record_bad", "{s:s, s:s, s:s, s:s}", "job", id,
		    "path", name, "why", why, "error", strerror(errno));
}

/* Reads the record at name in the records' directory: a job, or NULL. A
 * name that is no record's (<job>.json) is left alone; a record that is
 * not JSON, or not a record of the job it is named for, is moved aside as
 * <name>.bad with a log line (record_set_aside). */
static struct sjob *
record_read(struct serve *s, const char *name)
{
	size_t n = strlen(name), len = 0;
	char id[64], *text = NULL;
	struct sjob *j = NULL;
	json_t *rec = NULL;
	int fd, r;

	if (n <= 5 || n - 5 >= sizeof(id) || strcmp(name + n - 5, ".json") != 0)
		return NULL;
	memcpy(id, name, n - 5);
	id[n - 5] = '\0';
	if (!name_ok(id, sizeof(id) - 1, "_-"))
		return NULL;
	fd = openat(s->records_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	r = read_capped(fd, RESULT_REST, &text, &len);
	if (r == 0)
		rec = json_loadb(text, len, 0, NULL);
	free(text);
	if (rec == NULL) {
		/* Not the record's fault (no memory, an I/O error): left for
		 * the next start. */
		if (r == 0 || r == -EFBIG)
			record_set_aside(s, name, id,
			    r == 0 ? "not JSON" : "over its size cap");
		return NULL;
	}
	const char *job = json_string_value(json_object_get(rec, "job"));
	const char *manifest =
	    json_string_value(json_object_get(rec, "manifest"));
	const char *state = json_string_value(json_object_get(rec, "state"));
	const char *idem = json_string_value(json_object_get(rec, "idem"));
	const char *sha = json_string_value(json_object_get(rec, "idem_sha"));
	const char *error = json_string_value(json_object_get(rec, "error"));
	json_t *res = json_object_get(rec, "result");
	if (job == NULL || strcmp(job, id) != 0 || manifest == NULL ||
	    !name_ok(manifest, 64, "._-") || state == NULL ||
	    (strcmp(state, "running") != 0 && strcmp(state, "done") != 0 &&
		strcmp(state, "lost") != 0) ||
	    (res != NULL && !json_is_object(res) && !json_is_null(res))) {
		record_set_aside(s, name, id,
		    "not a record of the job it is named for");
		json_decref(rec);
		return NULL;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		json_decref(rec);
		return NULL;
	}
	memcpy(j->id, id, strlen(id) + 1);
	snprintf(j->manifest, sizeof(j->manifest), "%s", manifest);
	j->result_fd = j->err_fd = j->live_fd = -1;
	j->chunks = json_array();
	j->started =
	    (time_t)json_integer_value(json_object_get(rec, "started"));
	j->ended = (time_t)json_integer_value(json_object_get(rec, "ended"));
	j->order = (int64_t)json_integer_value(json_object_get(rec, "order"));
	if (idem != NULL && idem_ok(idem) && sha != NULL &&
	    strlen(sha) == SHA256_HEX_LEN) {
		snprintf(j->idem, sizeof(j->idem), "%s", idem);
		snprintf(j->idem_sha, sizeof(j->idem_sha), "%s", sha);
	}
	if (error != NULL)
		snprintf(j->error, sizeof(j->error), "%s", error);
	if (json_is_object(res))
		j->res = json_incref(res);
	/* Its callback (sent again after a restart, until it was sent): the
	 * URL is judged again, against callback_allow as it is now. */
	const char *cb = json_string_value(json_object_get(rec, "callback"));
	json_t *cbody = json_object_get(rec, "callback_body");
	if (cb != NULL && strlen(cb) <= CALLBACK_URL_MAX &&
	    (j->callback = strdup(cb)) != NULL) {
		j->callback_done =
		    json_is_true(json_object_get(rec, "callback_done"));
		if (json_is_object(cbody))
			j->callback_body = json_incref(cbody);
	}
	j->done = true;
	j->from_record = true;
	/* It ran when serve stopped: what it became is not known here. */
	if (strcmp(state, "done") != 0) {
		j->lost = true;
		j->record_stale = strcmp(state, "running") == 0;
		if (j->ended == 0)
			j->ended = time(NULL);
		snprintf(j->error, sizeof(j->error), "%s", LOST_ERROR);
	}
	json_decref(rec);
	return j;
}

/*
 * At start: removes each <job>.output.json of the records' directory
 * that no <job>.json names (its record removed, the output's removal cut
 * short by a crash), logging each. Only files serve makes, by their name
 * (a job's, and the suffix) and their owner (the user serve runs as): a
 * file another wrote is left. d is the directory, read once already.
 */
static void
sweep_orphans(struct serve *s, DIR *d)
{
	size_t sl = strlen(OUTPUT_SUFFIX);
	struct dirent *e;
	struct stat st;

	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char id[64], rec[80];
		if (len <= sl || len - sl >= sizeof(id) ||
		    strcmp(e->d_name + len - sl, OUTPUT_SUFFIX) != 0)
			continue;
		memcpy(id, e->d_name, len - sl);
		id[len - sl] = '\0';
		snprintf(rec, sizeof(rec), "%s.json", id);
		if (!name_ok(id, sizeof(id) - 1, "_-") ||
		    fstatat(s->records_fd, rec, &st, AT_SYMLINK_NOFOLLOW) ==
			0 ||
		    errno != ENOENT)
			continue;
		/* A record moved aside (record_set_aside) keeps its output. */
		snprintf(rec, sizeof(rec), "%s.json.bad", id);
		if (fstatat(s->records_fd, rec, &st, AT_SYMLINK_NOFOLLOW) ==
			0 ||
		    errno != ENOENT ||
		    fstatat(s->records_fd, e->d_name, &st,
			AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (unlinkat(s->records_fd, e->d_name, 0) == 0)
			log_info("orphan_removed", "{s:s, s:s, s:s}", "job", id,
			    "path", e->d_name, "why",
			    "no record names it: a crash cut its job's "
			    "removal short");
	}
}

static int
newest_first(const void *a, const void *b)
{
	const struct sjob *x = *(struct sjob *const *)a;
	const struct sjob *y = *(struct sjob *const *)b;

	if (x->order != y->order)
		return x->order > y->order ? -1 : 1;
	return strcmp(y->id, x->id);
}

/* Reads the records back at start, newest first, at most serve_keep_jobs (the
 * older ones removed); a job that was running is lost, and its record
 * says so from now on; a callback not yet sent is queued again. Before
 * any request; takes l->mu. */
static void
records_load(struct serve *s)
{
	struct sjob **all = NULL, *j;
	size_t n = 0, cap = 0, lost = 0;
	struct dirent *e;
	DIR *d;
	int fd;

	if (s->records_fd < 0 || (fd = dup(s->records_fd)) < 0)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.')
			continue;
		/* A write a crash cut short: the record before it stands. */
		if (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) {
			(void)unlinkat(s->records_fd, e->d_name, 0);
			continue;
		}
		if ((j = record_read(s, e->d_name)) == NULL)
			continue;
		if (n == cap) {
			size_t ncap = cap != 0 ? 2 * cap : 64;
			struct sjob **m = realloc(all, ncap * sizeof(*m));
			if (m == NULL) {
				sjob_free(j);
				break;
			}
			all = m;
			cap = ncap;
		}
		all[n++] = j;
	}
	sweep_orphans(s, d);
	closedir(d);
	if (n > 0)
		qsort(all, n, sizeof(*all), newest_first);
	/* The callbacks' thread runs already, and looks its jobs up. */
	pthread_mutex_lock(&s->l.mu);
	struct sjob **tail = &s->l.jobs;
	for (size_t i = 0; i < n && i < (size_t)s->l.cfg.serve_keep_jobs; i++) {
		j = all[i];
		if (j->lost)
			lost++;
		/* A callback not yet sent: again, at least once. A job lost
		 * before it ended tells that it was lost. */
		bool call = j->callback != NULL && !j->callback_done;
		if (call && j->callback_body == NULL)
			j->callback_body = summary_json(j);
		if (j->record_stale || call)
			record_write_as(s, j, false,
			    call ? callback_make(s, j) : NULL);
		*tail = j;
		tail = &j->next;
	}
	pthread_mutex_unlock(&s->l.mu);
	/* The rest forgotten, without the lock. */
	for (size_t i = (size_t)s->l.cfg.serve_keep_jobs; i < n; i++) {
		record_forget(s, all[i]->id);
		sjob_free(all[i]);
	}
	free(all);
	log_info("jobs_loaded", "{s:I, s:I}", "jobs",
	    (json_int_t)(n < (size_t)s->l.cfg.serve_keep_jobs
		    ? n
		    : (size_t)s->l.cfg.serve_keep_jobs),
	    "lost", (json_int_t)lost);
}

/* Reads what j's child wrote and reaps it if it ended; l->mu held. */
static void
reap(struct serve *s, struct sjob *j)
{
	struct launcher *l = &s->l;
	int st;

	if (j->done)
		return;
	drain(j);
	/* The spawner lost or gone, the child's end cannot be told here:
	 * status unknown (125, as a child that could not exec), and without
	 * its result the job is lost (its own cordon run runs its stop path:
	 * a spawner gone, or back, stops its children as it goes). */
	int k = spawner_reaped(&s->sp, j->pid, &st, 0);
	if (k == 0)
		return;
	if (k < 0)
		st = 125 << 8;
	drain(j);
	drain_err(j, true);
	close(j->result_fd);
	j->result_fd = -1;
	if (j->err_fd >= 0)
		close(j->err_fd);
	j->err_fd = -1;
	if (j->live_fd >= 0)
		close(j->live_fd);
	j->live_fd = -1;
	buf_free(&j->live_line);
	j->status = st;
	j->pid = 0;
	j->done = true;
	j->ended = time(NULL);
	j->res = json_loadb(j->result.data != NULL ? j->result.data : "",
	    j->result.len, 0, NULL);
	if (!json_is_object(j->res)) {
		json_decref(j->res);
		j->res = NULL;
	}
	if (k < 0 && j->res == NULL) {
		j->lost = true;
		snprintf(j->error, sizeof(j->error), "%s", SPAWNER_LOST_ERROR);
	}
	/* The text is in res now; the buffer would double the memory. */
	buf_free(&j->result);
	log_info("job_done", "{s:s, s:i}", "job", j->id, "status",
	    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	s->ended_total[reason_index(
	    json_string_value(result_get(j, "stop_reason")))]++;
	double secs = (double)(monotonic_ms() - j->started_ms) / 1000;
	for (size_t i = 0; i < ARRAY_SIZE(duration_le); i++)
		if (secs <= duration_le[i])
			s->duration_bucket[i]++;
	s->duration_count++;
	s->duration_sum += secs;
	/* The callback's body is in the record before it is sent: a serve
	 * that dies first sends it at its next start. */
	if (j->callback != NULL)
		j->callback_body = summary_json(j);
	record_write_as(s, j, true,
	    j->callback != NULL ? callback_make(s, j) : NULL);
	/* Killed, or its revoke or its patch not done: cordon run left its
	 * record, and recover finishes the job. */
	if (stoppath_left_for_recover(st))
		l->recover_at = 0;
}

/* Whether `cordon recover --log` is to start now, as a child of the
 * spawner (recover_start), the one before it reaped: when it is time
 * and none runs; its JSON log lines go to serve's stderr. l->mu held. */
static bool
recover_due(struct serve *s, time_t now)
{
	struct launcher *l = &s->l;
	int st, k;

	if (l->recover_pid > 0) {
		if ((k = spawner_reaped(&s->sp, l->recover_pid, &st, 0)) == 0)
			return false;
		if (k < 0)
			st = 125 << 8;
		l->recover_pid = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			log_warn("recover_left", "{s:i, s:s}", "status",
			    WIFEXITED(st) ? WEXITSTATUS(st)
					  : 128 + WTERMSIG(st),
			    "effect", "a job is not finished; tried again");
	}
	if (now < l->recover_at)
		return false;
	l->recover_at = now + RECOVER_EVERY;
	return true;
}

/* Starts the recover recover_due asked for, on the tick's thread: the
 * spawner's round trip without l->mu; takes it. */
static void
recover_start(struct serve *s)
{
	pid_t pid = spawner_recover(&s->sp);

	if (pid < 0) {
		log_warn("recover_failed", "{s:s}", "error", strerror(-pid));
		pid = 0;
	}
	pthread_mutex_lock(&s->l.mu);
	s->l.recover_pid = pid;
	pthread_mutex_unlock(&s->l.mu);
}

/* Logs, once, that the spawner is lost (why -ETIMEDOUT) or gone (why
 * -EPIPE); takes l->mu. */
static void
spawner_lost_told(struct serve *s, int why)
{
	bool first;

	pthread_mutex_lock(&s->l.mu);
	first = !s->spawner_warned;
	s->spawner_warned = true;
	pthread_mutex_unlock(&s->l.mu);
	if (first)
		log_error("spawner_lost", "{s:s, s:s}", "error",
		    why == -ETIMEDOUT ? "it did not answer in time"
				      : "it is gone",
		    "effect", SPAWNER_LOST_EFFECT);
}

/* Resumes the followers with something to be told: more output, the
 * job's end, their wait over (all when stopping or all is true). l->mu
 * held. */
static void
wake_followers(struct serve *s, bool all)
{
	int64_t now = monotonic_ms();

	for (struct follower **p = &s->followers, *f; (f = *p) != NULL;) {
		struct sjob *j = find(&s->l, f->job);
		if (all || s->http_stopping || j == NULL || j->done ||
		    json_array_size(j->chunks) > f->offset ||
		    now >= f->deadline_ms) {
			*p = f->next;
			http_request_resume(f->req);
			free(f);
			continue;
		}
		p = &f->next;
	}
}

/* The http server stops: every follower is answered now. */
static void
serve_stopping(void *ctx)
{
	struct serve *s = ctx;

	pthread_mutex_lock(&s->l.mu);
	s->http_stopping = true;
	wake_followers(s, true);
	pthread_mutex_unlock(&s->l.mu);
}

/* Every 100 ms: results read, children reaped, `cordon recover` run when
 * due, and the oldest finished jobs past serve_keep_jobs forgotten
 * (their GET answers 404 then). What asks the spawner (a patch's
 * removal, a recover's start) runs after l->mu is let go: a spawner that
 * does not answer holds no request. */
static void
tick(void *ctx)
{
	struct serve *s = ctx;
	struct launcher *l = &s->l;
	time_t now = time(NULL);
	size_t done = 0, nforgot = 0;
	char forgot[FORGET_PER_TICK][64];
	bool recover;
	int lost;

	pthread_mutex_lock(&l->mu);
	for (struct sjob **p = &l->jobs, *j; (j = *p) != NULL;) {
		reap(s, j);
		if (j->done && ++done > (size_t)l->cfg.serve_keep_jobs &&
		    now - j->ended > l->cfg.serve_keep_seconds &&
		    nforgot < FORGET_PER_TICK) {
			*p = j->next;
			memcpy(forgot[nforgot++], j->id, sizeof(j->id));
			sjob_free(j);
			continue;
		}
		p = &j->next;
	}
	recover = recover_due(s, now);
	wake_followers(s, false);
	pthread_mutex_unlock(&l->mu);
	for (size_t i = 0; i < nforgot; i++)
		record_forget(s, forgot[i]);
	if (recover)
		recover_start(s);
	if ((lost = spawner_status(&s->sp)) < 0)
		spawner_lost_told(s, lost);
}

/* --- where a callback may go --------------------------------------------- */

/* A callback URL, or an entry of callback_allow, in parts. */
struct url_parts {
	char host[256]; /* lower case; an IPv6 literal without brackets */
	unsigned port; /* an entry's 0: any port */
	char path[CALLBACK_URL_MAX + 1]; /* "" when it names none */
	bool is_url; /* an entry given as a URL prefix */
};

/*
 * Parses "http://host[:port][/path]" or, when url is false, also
 * "host[:port]" (an entry of callback_allow): 0 or -EINVAL. The host is
 * letters, digits, '.', '-', '_' or a bracketed IPv6 literal (no
 * userinfo, nothing a second reader could split elsewhere); the port
 * 1..65535; the path visible ASCII without '#'. A URL without a port is
 * port 80, as the client dials it.
 */
static int
url_parse(const char *s, bool url, struct url_parts *p)
{
	const char *h = s, *end;
	size_t n = strlen(s), hl;

	memset(p, 0, sizeof(*p));
	if (n == 0 || n > CALLBACK_URL_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '#')
			return -EINVAL;
	if (strncmp(s, "http://", 7) == 0) {
		p->is_url = true;
		h = s + 7;
	} else if (url || strstr(s, "://") != NULL) {
		return -EINVAL;
	}
	if (*h == '[') {
		end = strchr(h, ']');
		if (end == NULL || end == h + 1)
			return -EINVAL;
		hl = (size_t)(end - h - 1);
		if (hl >= sizeof(p->host))
			return -EINVAL;
		memcpy(p->host, h + 1, hl);
		for (size_t i = 0; i < hl; i++)
			if (!isxdigit((unsigned char)p->host[i]) &&
			    p->host[i] != ':' && p->host[i] != '.')
				return -EINVAL;
		end++;
	} else {
		hl = strcspn(h, ":/?");
		if (hl == 0 || hl >= sizeof(p->host))
			return -EINVAL;
		for (size_t i = 0; i < hl; i++) {
			char c = h[i];
			if (!isalnum((unsigned char)c) && c != '.' &&
			    c != '-' && c != '_')
				return -EINVAL;
			p->host[i] = (char)tolower((unsigned char)c);
		}
		end = h + hl;
	}
	for (char *c = p->host; *c != '\0'; c++)
		*c = (char)tolower((unsigned char)*c);
	if (*end == ':') {
		char *e;
		errno = 0;
		unsigned long port = strtoul(end + 1, &e, 10);
		if (errno != 0 || e == end + 1 || port < 1 || port > 65535 ||
		    !isdigit((unsigned char)end[1]))
			return -EINVAL;
		p->port = (unsigned)port;
		end = e;
	} else if (p->is_url) {
		p->port = 80;
	}
	if (*end != '\0' && (*end != '/' || !p->is_url))
		return -EINVAL;
	snprintf(p->path, sizeof(p->path), "%s", end);
	return 0;
}

/* Whether entry e of callback_allow lets URL u through: the same host;
 * a host entry's port, if any; a URL prefix's port and path (a path not
 * ending in '/' matches itself, or itself followed by '/' or '?'). */
static bool
url_allowed_by(const struct url_parts *e, const struct url_parts *u)
{
	size_t n = strlen(e->path);

	if (strcmp(e->host, u->host) != 0)
		return false;
	if (!e->is_url)
		return e->port == 0 || e->port == u->port;
	if (e->port != u->port)
		return false;
	if (n == 0)
		return true;
	const char *up = u->path[0] != '\0' ? u->path : "/";
	if (strncmp(up, e->path, n) != 0)
		return false;
	return e->path[n - 1] == '/' || up[n] == '\0' || up[n] == '/' ||
	    up[n] == '?';
}

/* Whether callback_allow lets url through. */
static bool
url_allowed(const struct config_strings *allow, const struct url_parts *u)
{
	struct url_parts e;

	for (size_t i = 0; i < allow->n; i++)
		if (url_parse(allow->v[i], false, &e) == 0 &&
		    url_allowed_by(&e, u))
			return true;
	return false;
}

/* Link-local addresses, and the clouds' metadata services on others. */
static const char *const metadata_ranges[] = { "169.254.0.0/16",
	"100.100.100.200/32", "fe80::/10", "fd00:ec2::254/128" };

/* Whether a is link-local or a metadata address: an IPv6 address that
 * carries an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) is judged
 * as that IPv4 address, whichever way it is spelt. */
static bool
addr_metadata(const struct sockaddr *a)
{
	struct sockaddr_in v4;
	struct cidr c;

	if (cidr_embedded_v4(a, &v4))
		a = (const struct sockaddr *)&v4;
	for (size_t i = 0; i < ARRAY_SIZE(metadata_ranges); i++)
		if (cidr_parse(metadata_ranges[i], &c) == 0 &&
		    cidr_contains(&c, a))
			return true;
	return false;
}

/* Whether the address text (inet_ntop's) is the host of an entry of
 * callback_allow: listed explicitly, not reached through a name. */
static bool
addr_listed(const struct config_strings *allow, const char *text)
{
	struct url_parts e;

	for (size_t i = 0; i < allow->n; i++)
		if (url_parse(allow->v[i], false, &e) == 0 &&
		    strcmp(e.host, text) == 0)
			return true;
	return false;
}

/*
 * Resolves u's host (an address needs no resolver) and judges every
 * address: 0 with the first as "http://a:port" or "http://[a]:port" in
 * base, -EACCES when one is link-local or a metadata address that
 * callback_allow does not list by itself, -ENOENT when the host has no
 * address; why says which.
 */
static int
url_resolve(const struct config_strings *allow, const struct url_parts *u,
    char *base, size_t baselen, char *why, size_t whylen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *x;
	char port[8], text[INET6_ADDRSTRLEN];
	int r = -ENOENT;

	snprintf(port, sizeof(port), "%u", u->port);
	base[0] = '\0';
	if (getaddrinfo(u->host, port, &hints, &ai) != 0) {
		snprintf(why, whylen, "%s has no address", u->host);
		return -ENOENT;
	}
	for (x = ai; x != NULL; x = x->ai_next) {
		const void *in = x->ai_family == AF_INET
		    ? (const void *)&((struct sockaddr_in *)x->ai_addr)
			  ->sin_addr
		    : (const void *)&((struct sockaddr_in6 *)x->ai_addr)
			  ->sin6_addr;
		if ((x->ai_family != AF_INET && x->ai_family != AF_INET6) ||
		    inet_ntop(x->ai_family, in, text, sizeof(text)) == NULL)
			continue;
		if (addr_metadata(x->ai_addr) && !addr_listed(allow, text)) {
			snprintf(why, whylen,
			    "%s is %s, a link-local or metadata address: "
			    "callback_allow must list that address itself",
			    u->host, text);
			r = -EACCES;
			break;
		}
		if (base[0] == '\0') {
			snprintf(base, baselen,
			    x->ai_family == AF_INET6 ? "http://[%s]:%s"
						     : "http://%s:%s",
			    text, port);
			r = 0;
		}
	}
	freeaddrinfo(ai);
	if (r == -ENOENT)
		snprintf(why, whylen, "%s has no address", u->host);
	return r;
}

/* --- callbacks ------------------------------------------------------------ */

/* POSTs c's body to its URL, signed, with Idempotency-Key: <job> (the
 * same on every try, after a restart too: a receiver drops a second
 * one), if callback_allow still lets it through, at the address judged
 * when it was resolved (no second lookup to rebind): 1 when a 2xx came
 * back, 0 for a failure worth another try, -1 for one that is final (not
 * allowed, the address refused, a redirect answered: none is
 * followed). */
static int
callback_send(struct serve *s, const struct callback *c, char *err,
    size_t errlen)
{
	struct url_parts u;
	char base[INET6_ADDRSTRLEN + 16], header[256], hex[65];
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned maclen = 0;
	struct httpc_answer a;
	char *text;
	int ok, r;

	if (url_parse(c->url, true, &u) < 0) {
		snprintf(err, errlen, "not a URL serve can call");
		return -1;
	}
	/* The list may have changed since the job was posted (a restart). */
	if (!url_allowed(&s->l.cfg.callback_allow, &u)) {
		snprintf(err, errlen,
		    "%s is no longer allowed by serve's callback_allow",
		    c->url);
		return -1;
	}
	r = url_resolve(&s->l.cfg.callback_allow, &u, base, sizeof(base), err,
	    errlen);
	if (r < 0)
		return r == -EACCES ? -1 : 0;
	/* The bytes signed are the bytes the client sends: the same dump. */
	text = json_dumps(c->body, JSON_COMPACT);
	if (text == NULL ||
	    HMAC(EVP_sha256(), s->callback_key, (int)s->callback_key_len,
		(unsigned char *)text, strlen(text), mac, &maclen) == NULL) {
		free(text);
		snprintf(err, errlen, "cannot sign the body");
		return false;
	}
	free(text);
	for (unsigned i = 0; i < maclen && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	/* Two fields on one line each; the job's id is a name (name_ok). */
	snprintf(header, sizeof(header),
	    "X-Cordon-Signature: sha256=%s\r\nIdempotency-Key: %s", hex,
	    c->job);
	r = httpc_request(base, "POST", u.path[0] != '\0' ? u.path : "/", NULL,
	    header, c->body, CALLBACK_MS, &a);
	if (r < 0) {
		snprintf(err, errlen, "no answer: %s", strerror(-r));
		return 0;
	}
	ok = a.status >= 200 && a.status < 300 ? 1 : 0;
	if (a.status >= 300 && a.status < 400) {
		/* Where it points was never judged: not followed. */
		snprintf(err, errlen, "answered %ld, a redirect: not followed",
		    a.status);
		ok = -1;
	} else if (!ok) {
		snprintf(err, errlen, "answered %ld", a.status);
	}
	httpc_answer_free(&a);
	return ok;
}

/* The callbacks' own thread: each is tried up to CALLBACK_TRIES times, 1 s
 * then 4 s apart; once serve stops, each left is tried once. */
static void *
callback_worker(void *arg)
{
	struct serve *s = arg;
	struct launcher *l = &s->l;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct callback *c = s->queue;
		if (c == NULL) {
			if (s->stopping)
				break;
			pthread_cond_wait(&s->queue_cond, &l->mu);
			continue;
		}
		s->queue = c->next;
		if (s->queue == NULL)
			s->queue_tail = &s->queue;
		char err[300] = "";
		int ok = 0;
		int tries = 0;
		while (ok == 0 && tries < CALLBACK_TRIES) {
			if (tries > 0) {
				/* Woken early when serve stops. */
				struct timespec until;
				clock_gettime(CLOCK_REALTIME, &until);
				until.tv_sec += tries == 1 ? 1 : 4;
				if (s->stopping)
					break;
				pthread_cond_timedwait(&s->queue_cond, &l->mu,
				    &until);
			}
			tries++;
			pthread_mutex_unlock(&l->mu);
			ok = callback_send(s, c, err, sizeof(err));
			pthread_mutex_lock(&l->mu);
		}
		/* Cut short by serve's stop: its record keeps it for the
		 * next start. */
		bool kept = ok == 0 && s->stopping;
		if (ok > 0) {
			s->callbacks_sent++;
			log_info("callback_sent", "{s:s, s:i}", "job", c->job,
			    "tries", tries);
		} else if (kept) {
			log_warn("callback_pending", "{s:s, s:i, s:s, s:s}",
			    "job", c->job, "tries", tries, "error", err,
			    "effect", "sent again when serve starts");
		} else {
			s->callbacks_failed++;
			log_warn("callback_failed", "{s:s, s:i, s:s}", "job",
			    c->job, "tries", tries, "error", err);
		}
		struct sjob *j = kept ? NULL : find(l, c->job);
		if (j != NULL && !j->callback_done) {
			j->callback_done = true;
			json_decref(j->callback_body);
			j->callback_body = NULL;
			record_write(s, j);
		}
		callback_free(c);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* --- the API -------------------------------------------------------------- */

/* The job the request names, or NULL with a 404 answered; l->mu held. */
static struct sjob *
find_or_404(struct launcher *l, struct http_request *req,
    struct http_response *res)
{
	struct sjob *j = find(l, http_request_param(req, 0));

	if (j == NULL)
		http_reply_error(res, 404, "unknown_job",
		    "this launcher runs no such job");
	return j;
}

static json_t *
job_json(const struct sjob *j)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:o, s:O?}", "job", j->id,
	    "state", state_of(j), "manifest", j->manifest, "started",
	    (json_int_t)j->started, "ended",
	    j->done ? json_integer((json_int_t)j->ended) : json_null(),
	    "result", j->res);

	if (o != NULL && j->error[0] != '\0')
		json_object_set_new(o, "error", json_string(j->error));
	return o;
}

/* Starts `cordon run --json` for the request (the spawner forks it: the
 * argv it builds is spawner.c's): the child, and the job id it says once
 * the broker made it, on a socket (*ret_ack) that cordon run then waits
 * on before it makes anything more of the job: one byte sent says serve
 * recorded it, the socket closed first (serve died) has it revoked
 * unstarted. *ret_ack is -1 unless 0 is returned. */
static int
spawn(struct serve *s, json_t *body, struct sjob *j, int *ret_ack, char *err,
    size_t errlen)
{
	json_t *inputs = json_object_get(body, "inputs");
	json_t *command = json_object_get(body, "command");
	const char *words[MAX_COMMAND];
	char *owned[MAX_INPUTS];
	char buf[128];
	size_t nwords = 0, nowned = 0, i;
	int out[2], idp[2], errp[2], live[2];
	json_t *v;

	/* Checked by jobs_post: at most MAX_INPUTS, MAX_COMMAND. */
	json_array_foreach(inputs, i, v)
	{
		const char *src = json_string_value(json_object_get(v, "src"));
		const char *dst = json_string_value(json_object_get(v, "dst"));
		char *arg;
		if (asprintf(&arg, "%s:%s", src, dst) < 0)
			break;
		owned[nowned++] = arg;
	}
	json_array_foreach(command, i, v) words[nwords++] =
	    json_string_value(v);
	*ret_ack = -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, idp) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		return -errno;
	}
	if (pipe2(errp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		close(idp[0]);
		close(idp[1]);
		return -errno;
	}
	if (pipe2(live, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		close(idp[0]);
		close(idp[1]);
		close(errp[0]);
		close(errp[1]);
		return -errno;
	}
	/* Room for a burst of output between two ticks; a copy that finds
	 * the pipe full stops (tee.c). */
	(void)fcntl(live[0], F_SETPIPE_SZ, LIVE_PIPE);
	const int fds[4] = { out[1], idp[1], live[1], errp[1] };
	j->pid = spawner_run(&s->sp, j->manifest, (const char *const *)owned,
	    nowned, words, nwords, fds);
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	close(out[1]);
	close(idp[1]);
	close(errp[1]);
	close(live[1]);
	if (j->pid < 0) {
		int e = -j->pid;
		j->pid = 0;
		close(out[0]);
		close(idp[0]);
		close(errp[0]);
		close(live[0]);
		snprintf(err, errlen, "spawner: %s", strerror(e));
		return -e;
	}
	j->result_fd = out[0];
	j->err_fd = errp[0];
	j->live_fd = live[0];
	(void)fcntl(out[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(errp[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(live[0], F_SETFL, O_NONBLOCK);
	/* The job's id comes once the broker made it; a refusal closes the
	 * pipe without one and the child's result says why. */
	struct pollfd p = { .fd = idp[0], .events = POLLIN };
	ssize_t k = 0;
	if (poll(&p, 1, 15000) == 1)
		k = read(idp[0], buf, sizeof(buf) - 1);
	/* Closed on a failure: a cordon run that told an id starts nothing
	 * of a job serve did not take. */
	if (k <= 1 || buf[k - 1] != '\n') {
		close(idp[0]);
		snprintf(err, errlen, "cordon run gave no job");
		return -EIO;
	}
	buf[k - 1] = '\0';
	if (!name_ok(buf, sizeof(j->id) - 1, "_-")) {
		close(idp[0]);
		snprintf(err, errlen, "cordon run gave no job");
		return -EIO;
	}
	memcpy(j->id, buf, strlen(buf) + 1);
	*ret_ack = idp[0];
	return 0;
}

/* Tells the job's cordon run, on ack (closed), that its record is on disk
 * (or that serve keeps none): it goes on to make the job. */
static void
spawn_ack(struct sjob *j, int ack)
{
	if (send(ack, "k", 1, MSG_NOSIGNAL) != 1)
		log_warn("job_not_told", "{s:s, s:s, s:s}", "job", j->id,
		    "error", strerror(errno), "effect",
		    "its cordon run ends it unstarted (its result says why)");
	close(ack);
}

/* An Idempotency-Key serve takes: 1 to IDEM_MAX visible ASCII bytes. */
static bool
idem_ok(const char *k)
{
	size_t n = strlen(k);

	if (n == 0 || n > IDEM_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (k[i] <= 0x20 || k[i] >= 0x7f)
			return false;
	return true;
}

/* A callback's problem, if any, added to problems: a URL serve can call,
 * that callback_allow lets through, whose host is no link-local or
 * metadata address callback_allow does not name itself. */
static void
check_callback(struct serve *s, const json_t *callback, json_t *problems)
{
	const struct config_strings *allow = &s->l.cfg.callback_allow;
	struct url_parts u;
	char base[INET6_ADDRSTRLEN + 16], why[400];

	if (!json_is_string(callback) ||
	    url_parse(json_string_value(callback), true, &u) < 0) {
		problems_add(problems, "callback",
		    "an http://host[:port][/path] URL of at most 1024 visible "
		    "characters");
		return;
	}
	if (s->callback_key_len == 0) {
		problems_add(problems, "callback",
		    "serve has no callback_key_file: a callback is signed, "
		    "or not sent");
		return;
	}
	if (!url_allowed(allow, &u)) {
		problems_add(problems, "callback",
		    allow->n == 0
			? "serve's callback_allow is empty: a callback goes "
			  "only where it lists (URL prefixes or hosts)"
			: "not allowed by serve's callback_allow: add its URL "
			  "prefix or its host there");
		return;
	}
	/* A name may lead where no one listed: judged now, and again when
	 * the callback is sent. */
	if (url_resolve(allow, &u, base, sizeof(base), why, sizeof(why)) ==
	    -EACCES)
		problems_add(problems, "callback", "%s", why);
}

/* The body's problems, each added to problems. */
static void
check_job(struct serve *s, json_t *body, json_t *problems)
{
	static const char *const fields[] = { "manifest", "inputs", "command",
		"callback" };
	const char *manifest =
	    json_string_value(json_object_get(body, "manifest"));
	json_t *inputs = json_object_get(body, "inputs");
	json_t *command = json_object_get(body, "command"), *v;
	json_t *callback = json_object_get(body, "callback");
	size_t i;

	/* A typo must not pass as "not asked for". */
	problems_unknown_keys(body, "", fields, ARRAY_SIZE(fields), problems);
	if (manifest == NULL || !name_ok(manifest, 64, "._-"))
		problems_add(problems, "manifest",
		    "required: a manifest's name");
	/* The hatch takes at most 64. */
	if (inputs != NULL &&
	    (!json_is_array(inputs) || json_array_size(inputs) > MAX_INPUTS))
		problems_add(problems, "inputs",
		    "a list of at most 64 {src, dst}");
	else
		json_array_foreach(inputs, i, v)
		{
			const char *src =
			    json_string_value(json_object_get(v, "src"));
			const char *dst =
			    json_string_value(json_object_get(v, "dst"));
			if (src == NULL || dst == NULL ||
			    json_object_size(v) != 2 ||
			    strchr(src, ':') != NULL ||
			    strchr(dst, ':') != NULL)
				problems_add(problems, "inputs",
				    "each input is {src, dst}, without ':'");
		}
	/* The manifest's cap, so that a command the broker would store is
	 * one serve runs. */
	if (command != NULL &&
	    (!json_is_array(command) || json_array_size(command) > MAX_COMMAND))
		problems_add(problems, "command",
		    "a list of at most 256 strings");
	json_array_foreach(command, i, v) if (!json_is_string(v))
	    problems_add(problems, "command", "a list of strings");
	if (callback != NULL)
		check_callback(s, callback, problems);
}

/* With an Idempotency-Key: the job it made (answered again), or a refusal,
 * or a slot taken while this POST starts the job. true when answered;
 * l->mu held. */
static bool
idem_claim(struct serve *s, const char *key, const char *sha,
    struct http_response *res, int *ret_slot)
{
	struct launcher *l = &s->l;
	int free_slot = -1;

	for (struct sjob *j = l->jobs; j != NULL; j = j->next) {
		if (strcmp(j->idem, key) != 0)
			continue;
		if (strcmp(j->idem_sha, sha) != 0) {
			http_reply_error(res, 422, "idempotency_key_reused",
			    "this Idempotency-Key came with another body "
			    "(job %s)",
			    j->id);
			return true;
		}
		reap(s, j);
		http_reply_json(res, 200, job_json(j));
		http_reply_header(res, "Idempotent-Replayed", "true");
		return true;
	}
	for (int i = 0; i < STARTING_MAX; i++) {
		if (strcmp(s->starting[i], key) == 0) {
			http_reply_error(res, 409, "idempotency_key_in_use",
			    "a job with this Idempotency-Key is starting; "
			    "ask again");
			return true;
		}
		if (s->starting[i][0] == '\0' && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) {
		http_reply_error(res, 503, "unavailable",
		    "too many jobs with an Idempotency-Key are starting");
		return true;
	}
	snprintf(s->starting[free_slot], sizeof(s->starting[free_slot]), "%s",
	    key);
	*ret_slot = free_slot;
	return false;
}

static void
jobs_post(void *ctx, struct http_request *req, struct http_response *res)
{
	struct serve *s = ctx;
	struct launcher *l = &s->l;
	json_t *body = http_request_body(req);
	const char *key = http_request_header(req, "Idempotency-Key");
	json_t *problems = json_array();
	char err[512], sha[SHA256_HEX_LEN + 1] = "";
	struct sjob *j;
	int slot = -1, ack = -1, r;

	check_job(s, body, problems);
	if (key != NULL && !idem_ok(key))
		problems_add(problems, "Idempotency-Key",
		    "1 to 128 visible ASCII characters");
	if (json_array_size(problems) > 0) {
		http_reply_problems(res, "invalid_job",
		    "the job cannot be run as asked", problems);
		return;
	}
	json_decref(problems);
	if (key != NULL) {
		char *canon = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
		if (canon == NULL) {
			http_reply_error(res, 500, "internal", "out of memory");
			return;
		}
		sha256_hex(canon, strlen(canon), sha);
		free(canon);
		pthread_mutex_lock(&l->mu);
		bool answered = idem_claim(s, key, sha, res, &slot);
		pthread_mutex_unlock(&l->mu);
		if (answered)
			return;
	}
	j = calloc(1, sizeof(*j));
	if (j == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		goto out;
	}
	buf_init(&j->result, result_max());
	buf_init(&j->live_line, LIVE_LINE_MAX);
	j->result_fd = j->err_fd = j->live_fd = -1;
	j->chunks = json_array();
	j->started = time(NULL);
	j->started_ms = monotonic_ms();
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	j->order = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	snprintf(j->manifest, sizeof(j->manifest), "%s",
	    json_string_value(json_object_get(body, "manifest")));
	if (key != NULL) {
		snprintf(j->idem, sizeof(j->idem), "%s", key);
		memcpy(j->idem_sha, sha, sizeof(j->idem_sha));
	}
	if (json_object_get(body, "callback") != NULL &&
	    (j->callback = strdup(json_string_value(
		 json_object_get(body, "callback")))) == NULL) {
		sjob_free(j);
		http_reply_error(res, 500, "internal", "out of memory");
		goto out;
	}
	if ((r = spawn(s, body, j, &ack, err, sizeof(err))) < 0) {
		if (j->pid > 0) {
			/* What it said (a refused manifest, say) is the answer. */
			int st;
			while (spawner_reaped(&s->sp, j->pid, &st, 1000) == 0)
				drain(j);
			drain(j);
			drain_err(j, true);
			json_t *result =
			    json_loadb(j->result.data != NULL ? j->result.data
							      : "",
				j->result.len, 0, NULL);
			http_reply_json(res, 502,
			    json_pack("{s:s, s:s, s:o?}", "error",
				"job_not_started", "message",
				j->error[0] != '\0' ? j->error : err, "result",
				result));
			log_warn("job_not_started", "{s:s, s:s}", "manifest",
			    j->manifest, "error",
			    j->error[0] != '\0' ? j->error : err);
		} else if (!spawner_unavailable(s, res, r)) {
			http_reply_error(res, 500, "spawn_failed", "%s", err);
		}
		sjob_free(j);
		pthread_mutex_lock(&l->mu);
		s->not_started_total++;
		pthread_mutex_unlock(&l->mu);
		goto out;
	}
	log_info("job_started", "{s:s, s:s, s:i}", "job", j->id, "manifest",
	    j->manifest, "pid", (int)j->pid);
	/* Write-ahead: its first record is on disk (the job is no one else's
	 * yet: no lock) before its cordon run, told so, makes its workspace
	 * or anything a patch comes of, and before the 201. A serve killed
	 * before this write leaves nothing of the job but a job its cordon
	 * run revokes; after it, a record that a restart tells as lost. */
	record_first(s, j);
	spawn_ack(j, ack);
	pthread_mutex_lock(&l->mu);
	s->started_total++;
	j->next = l->jobs;
	l->jobs = j;
	http_reply_json(res, 201, job_json(j));
	pthread_mutex_unlock(&l->mu);
out:
	if (slot >= 0) {
		pthread_mutex_lock(&l->mu);
		s->starting[slot][0] = '\0';
		pthread_mutex_unlock(&l->mu);
	}
}

/* GET /v1/jobs?state=&manifest=&limit=&after=: newest first. */
static void
jobs_list(void *ctx, struct http_request *req, struct http_response *res)
{
	struct serve *s = ctx;
	struct launcher *l = &s->l;
	const char *state = http_request_query(req, "state");
	const char *manifest = http_request_query(req, "manifest");
	const char *limit_s = http_request_query(req, "limit");
	const char *after = http_request_query(req, "after");
	json_t *problems = json_array(), *list;
	long limit = LIST_DEFAULT;
	struct sjob *j, *last = NULL;

	if (state != NULL && strcmp(state, "running") != 0 &&
	    strcmp(state, "done") != 0 && strcmp(state, "lost") != 0)
		problems_add(problems, "state", "running, done or lost");
	if (manifest != NULL && !name_ok(manifest, 64, "._-"))
		problems_add(problems, "manifest", "a manifest's name");
	if (limit_s != NULL) {
		char *end;
		errno = 0;
		limit = strtol(limit_s, &end, 10);
		if (errno != 0 || end == limit_s || *end != '\0' || limit < 1 ||
		    limit > LIST_MAX)
			problems_add(problems, "limit", "1 to 1000");
	}
	pthread_mutex_lock(&l->mu);
	j = l->jobs;
	if (after != NULL) {
		j = find(l, after);
		if (j == NULL)
			problems_add(problems, "after",
			    "no such job here (forgotten, or never run)");
		else
			j = j->next;
	}
	if (json_array_size(problems) > 0) {
		pthread_mutex_unlock(&l->mu);
		http_reply_problems(res, "invalid_query",
		    "the list cannot be given as asked", problems);
		return;
	}
	json_decref(problems);
	list = json_array();
	for (; j != NULL; j = j->next) {
		reap(s, j);
		if ((state != NULL && strcmp(state, state_of(j)) != 0) ||
		    (manifest != NULL && strcmp(manifest, j->manifest) != 0))
			continue;
		if ((long)json_array_size(list) == limit)
			break;
		json_array_append_new(list, summary_json(j));
		last = j;
	}
	/* next only when a job past the page matches. */
	http_reply_json(res, 200,
	    json_pack("{s:o, s:s?}", "jobs", list, "next",
		j != NULL && last != NULL ? last->id : NULL));
	pthread_mutex_unlock(&l->mu);
}

static void
job_get(void *ctx, struct http_request *req, struct http_response *res)
{
	struct serve *s = ctx;
	struct launcher *l = &s->l;
	struct sjob *j;

	struct output_ref o = { .out = NULL };
	json_t *reply = NULL, *out;

	pthread_mutex_lock(&l->mu);
	j = find_or_404(l, req, res);
	if (j != NULL) {
		reap(s, j); /* a poller sees the end at once, not at the tick */
		reply = job_json(j);
		/* Read back after a restart, its result lacks the output kept
		 * beside its record: read without the lock, into a copy. */
		if (reply != NULL && j->from_record && !j->lost &&
		    j->res != NULL && result_get(j, "output") == NULL) {
			json_object_set_new(reply, "result", json_copy(j->res));
			output_ref(s, j, &o);
		}
	}
	pthread_mutex_unlock(&l->mu);
	if (j == NULL)
		return;
	if (o.name[0] != '\0' && (out = output_load(s, &o)) != NULL)
		json_object_set_new(json_object_get(reply, "result"), "output",
		    out);
	http_reply_json(res, 200, reply);
}

static void
job_stop(void *ctx, struct http_request *req, struct http_response *res)
{
	struct serve *s = ctx;
	struct launcher *l = &s->l;
	struct sjob *j;
	bool done = false;

	/* Whatever the body holds is a mistake, refused before anything is
	 * stopped. */
	if (http_refuse_body_fields(req, res))
		return;
	pthread_mutex_lock(&l->mu);
	j = find_or_404(l, req, res);
	if (j != NULL && !j->done)
		(void)spawner_stop(&s->sp, j->pid);
	pthread_mutex_unlock(&l->mu);
	if (j == NULL)
		return;
	/* The child runs the stop path; its result is the answer. */
	for (int waited = 0; waited < STOP_WAIT_MS && !done; waited += 10) {
		pthread_mutex_lock(&l->mu);
		reap(s, j);
		done = j->done;
		pthread_mutex_unlock(&l->mu);
		if (!done)
			usleep(10 * 1000);
	}
	pthread_mutex_lock(&l->mu);
	http_reply_json(res, done ? 200 : 202, job_json(j));
	pthread_mutex_unlock(&l->mu);
}

/* The finished job the request names, or NULL with the answer given (404
 * unknown, 409 running); l->mu held. */
static struct sjob *
find_done(struct serve *s, struct http_request *req, struct http_response *res,
    const char *what)
{
	struct sjob *j = find_or_404(&s->l, req, res);

	if (j == NULL)
		return NULL;
	reap(s, j);
	if (!j->done) {
		http_reply_error(res, 409, "running",
		    "the %s is given once the job has stopped", what);
		return NULL;
	}
	return j;
}

/*
 * Where the output envelope of finished job j is: its result's, or after
 * a restart <state_dir>/serve-jobs/<job>.output.json, which serve wrote
 * when the job ended (output_load reads it). l->mu held.
 */
static void
output_ref(const struct serve *s, const struct sjob *j, struct output_ref *o)
{
	json_t *out = result_get(j, "output");

	memset(o, 0, sizeof(*o));
	o->status = 410;
	snprintf(o->job, sizeof(o->job), "%s", j->id);
	if (out != NULL) {
		o->out = json_incref(out);
	} else if (j->lost && !j->from_record) {
		snprintf(o->why, sizeof(o->why),
		    "serve lost its spawner while this job ran: its output was "
		    "not kept (its patch is, once written: GET "
		    "/v1/jobs/%s/patch after a restart of serve)",
		    j->id);
	} else if (j->lost) {
		snprintf(o->why, sizeof(o->why),
		    "serve stopped while this job ran: its output went to the "
		    "serve that stopped and was not kept (its patch is, once "
		    "written: GET /v1/jobs/%s/patch)",
		    j->id);
	} else if (!j->from_record || j->res == NULL) {
		o->status = 502;
		snprintf(o->why, sizeof(o->why),
		    "the job ended without a result");
	} else if (s->records_fd >= 0) {
		snprintf(o->name, sizeof(o->name), "%s" OUTPUT_SUFFIX, j->id);
	} else {
		snprintf(o->why, sizeof(o->why),
		    "serve restarted since the job ended, and keeps no "
		    "records (logged as no_records at its start)");
	}
}

/*
 * The envelope o names (a new reference), read from its kept file when
 * it is one, without l->mu; NULL when there is none, with o's status and
 * why, exactly. The records' descriptor is serve's until it ends.
 */
static json_t *
output_load(const struct serve *s, struct output_ref *o)
{
	char *text = NULL;
	size_t len = 0;
	json_t *out;
	int fd, r;

	if (o->out != NULL || o->name[0] == '\0') {
		out = o->out;
		o->out = NULL;
		return out;
	}
	fd = openat(s->records_fd, o->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	r = fd < 0 ? -errno : read_capped(fd, result_max(), &text, &len);
	out = NULL;
	if (r == 0 && (out = json_loadb(text, len, 0, NULL)) == NULL)
		r = -EBADMSG;
	free(text);
	if (r < 0)
		snprintf(o->why, sizeof(o->why),
		    "serve restarted since the job ended, and its output, "
		    "kept at %s/serve-jobs/%s, cannot be read: %s (a job that "
		    "ended under a serve that kept no outputs, or whose write "
		    "failed: logged as output_not_kept; or forgotten since)",
		    s->l.cfg.common.state_dir, o->name, strerror(-r));
	return out;
}

/* GET /v1/jobs/{job}/output?follow=1&offset=N&wait=S: the chunks of
 * output from the N-th on, at once when there are some, else once there
 * are, or the job ended, or S seconds passed; with the envelope once the
 * job ended. l->mu held. The page to answer, its envelope still to be
 * set from env (output_load, without l->mu); NULL when answered (a bad
 * query) or deferred. */
static json_t *
follow_page(struct serve *s, struct http_request *req,
    struct http_response *res, struct sjob *j, struct output_ref *env)
{
	const char *off_s = http_request_query(req, "offset");
	const char *wait_s = http_request_query(req, "wait");
	long long offset = 0, wait = FOLLOW_WAIT_DEFAULT;
	json_t *chunks, *problems = json_array();
	char *end;

	if (off_s != NULL) {
		errno = 0;
		offset = strtoll(off_s, &end, 10);
		if (errno != 0 || end == off_s || *end != '\0' || offset < 0)
			problems_add(problems, "offset",
			    "a chunk's index, from 0");
	}
	if (wait_s != NULL) {
		errno = 0;
		wait = strtoll(wait_s, &end, 10);
		if (errno != 0 || end == wait_s || *end != '\0' || wait < 0 ||
		    wait > FOLLOW_WAIT_MAX)
			problems_add(problems, "wait", "0 to 30 seconds");
	}
	if (json_array_size(problems) > 0) {
		http_reply_problems(res, "invalid_query",
		    "the output cannot be followed as asked", problems);
		return NULL;
	}
	json_decref(problems);
	size_t n = json_array_size(j->chunks);
	/* Nothing new yet, and this is the first call: wait for it. */
	if (http_request_state(req) == NULL && !j->done &&
	    (size_t)offset >= n && wait > 0 && !s->http_stopping) {
		struct follower *f = calloc(1, sizeof(*f));
		int *mark = malloc(sizeof(*mark));
		if (f != NULL && mark != NULL) {
			http_request_set_state(req, mark, free);
			http_request_defer(req);
			f->req = req;
			memcpy(f->job, j->id, sizeof(f->job));
			f->offset = (size_t)offset;
			f->deadline_ms = monotonic_ms() + wait * 1000;
			f->next = s->followers;
			s->followers = f;
			return NULL;
		}
		free(f);
		free(mark);
	}
	chunks = json_array();
	for (size_t i = (size_t)offset; i < n; i++)
		json_array_append(chunks, json_array_get(j->chunks, i));
	if (j->done)
		output_ref(s, j, env);
	return json_pack("{s:s, s:s, s:I, s:I, s:o, s:b}", "job", j->id,
	    "state", state_of(j), "offset", (json_int_t)offset, "next",
	    (json_int_t)((size_t)offset > n ? (size_t)offset : n), "chunks",
	    chunks, "truncated", j->live_truncated);
}

static void
job_output(void *ctx, struct http_request *req, struct http_response *res)
{
	struct serve *s = ctx;
	const char *follow = http_request_query(req, "follow");
	struct output_ref o = { .out = NULL };
	json_t *page = NULL, *out;
	struct sjob *j;

	pthread_mutex_lock(&s->l.mu);
	if (follow != NULL && strcmp(follow, "1") == 0) {
		j = find_or_404(&s->l, req, res);
		if (j != NULL) {
			reap(s, j);
			page = follow_page(s, req, res, j, &o);
		}
		pthread_mutex_unlock(&s->l.mu);
		if (page == NULL)
			return;
		/* The envelope once the job ended, if there is one. */
		out = o.job[0] != '\0' ? output_load(s, &o) : NULL;
		json_object_set_new(page, "envelope",
		    out != NULL ? out : json_null());
		http_reply_json(res, 200, page);
		return;
	}
	j = find_done(s, req, res, "output");
	if (j != NULL)
		output_ref(s, j, &o);
	pthread_mutex_unlock(&s->l.mu);
	if (j == NULL)
		return;
	if ((out = output_load(s, &o)) != NULL)
		http_reply_json(res, 200, out);
	else
		http_reply_error(res, (unsigned)o.status,
		    o.status == 410 ? "output_gone" : "no_output", "%s", o.why);
}

/* Reads fd (closed after) whole, at most max bytes: 0 with the text, or
 * -errno (-EFBIG: larger). */
static int
read_capped(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct buf b = BUF_INIT(max);
	char chunk[16384];
	int r = 0;

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		if ((r = buf_append(&b, chunk, (size_t)n)) < 0) {
			r = r == -E2BIG ? -EFBIG : r;
			break;
		}
	}
	close(fd);
	if (r < 0) {
		buf_free(&b);
		return r;
	}
	*ret = buf_steal(&b, ret_len);
	return *ret != NULL ? 0 : -ENOMEM;
}

/* What identifies a finished job's patch, copied under l->mu: the patch
 * is read after it, without it (read_patch: the spawner's round trip and
 * the read of up to PATCH_MAX bytes hold no other request). */
struct patch_ref {
	char job[64];
	char at[PATH_MAX]; /* where its result says it is, or "" */
	char kept[PATH_MAX]; /* its result's workspace_kept, or "" */
	bool lost;
};

/* The patch_ref of finished job j; l->mu held. */
static void
patch_ref_of(const struct sjob *j, struct patch_ref *p)
{
	const char *at = json_string_value(result_get(j, "patch"));
	const char *kept = json_string_value(result_get(j, "workspace_kept"));

	snprintf(p->job, sizeof(p->job), "%s", j->id);
	snprintf(p->at, sizeof(p->at), "%s", at != NULL ? at : "");
	snprintf(p->kept, sizeof(p->kept), "%s", kept != NULL ? kept : "");
	p->lost = j->lost;
}

/* When r, a spawner request's error, is the spawner's being lost or gone:
 * 503 spawner_lost answered, and true. */
static bool
spawner_unavailable(struct serve *s, struct http_response *res, int r)
{
	int why;

	if ((r != -ETIMEDOUT && r != -EPIPE) ||
	    (why = spawner_status(&s->sp)) == 0)
		return false;
	spawner_lost_told(s, why);
	if (why == -ETIMEDOUT)
		http_reply_error(res, 503, "spawner_lost",
		    "the spawner did not answer within %d s: %s",
		    s->sp.answer_ms / 1000, SPAWNER_LOST_EFFECT);
	else
		http_reply_error(res, 503, "spawner_lost",
		    "the spawner is gone: %s", SPAWNER_LOST_EFFECT);
	return true;
}

/* Reads the patch p names: 0 with the text, or an answer given (and -1).
 * Without l->mu; the file is the one cordon run wrote whole. */
static int
read_patch(struct serve *s, const struct patch_ref *p,
    struct http_response *res, char **ret, size_t *ret_len)
{
	char lost_at[PATH_MAX];
	const char *at = p->at;
	int r;

	/* Lost, its result with it: the patch is where cordon run (or
	 * recover) writes one, if it did. */
	if (at[0] == '\0' && p->lost) {
		snprintf(lost_at, sizeof(lost_at), "%s/%s.patch",
		    s->l.cfg.common.state_dir, p->job);
		r = spawner_open_patch(&s->sp, p->job);
		if (r == -ENOENT) {
			http_reply_error(res, 404, "no_patch",
			    "no patch at %s yet: %s", lost_at, LOST_ERROR);
			return -1;
		}
		at = lost_at;
		goto read;
	}
	if (at[0] == '\0') {
		http_reply_error(res, 404, "no_patch",
		    "the job left no patch%s%s",
		    p->kept[0] != '\0'
			? ": its workspace is kept at the hatch: "
			: "",
		    p->kept);
		return -1;
	}
	/* cordon run wrote it as root, 0600, at <state_dir>/<job>.patch:
	 * the spawner opens it for this unprivileged part. */
	r = spawner_open_patch(&s->sp, p->job);
read:
	if (spawner_unavailable(s, res, r))
		return -1;
	if (r >= 0)
		r = read_capped(r, PATCH_MAX, ret, ret_len);
	if (r == -ENOENT) {
		http_reply_error(res, 410, "patch_gone",
		    "the patch is no longer at %s", at);
		return -1;
	}
	if (r < 0) {
		http_reply_error(res, 500, "patch_unreadable", "%s: %s", at,
		    strerror(-r));
		return -1;
	}
	return 0;
}

static void
job_patch(void *ctx, struct http_request *req, struct http_response *res)
{
	struct serve *s = ctx;
	struct patch_ref p;
	struct sjob *j;
	char *text = NULL;
	size_t len = 0;

	pthread_mutex_lock(&s->l.mu);
	j = find_done(s, req, res, "patch");
	if (j != NULL)
		patch_ref_of(j, &p);
	pthread_mutex_unlock(&s->l.mu);
	if (j != NULL && read_patch(s, &p, res, &text, &len) == 0)
		http_reply_text(res, 200, "text/x-diff", text, len);
	free(text);
}

static void
job_report(void *ctx, struct http_request *req, struct http_response *res)
{
	struct serve *s = ctx;
	struct patch_ref p;
	struct sjob *j;
	char *text = NULL, sha[SHA256_HEX_LEN + 1];
	size_t len = 0;
	json_t *report = NULL, *patch = json_null();

	/* The report but its patch under the lock (copies); the patch read
	 * after. */
	pthread_mutex_lock(&s->l.mu);
	j = find_done(s, req, res, "report");
	if (j != NULL) {
		patch_ref_of(j, &p);
		json_t *shared = json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, "
					   "s:O?, s:O?, s:O?, s:s?}",
		    "job", j->id, "verdict", result_get(j, "verdict"),
		    "stop_reason", result_get(j, "stop_reason"), "exit_code",
		    result_get(j, "exit_code"), "flags", result_get(j, "flags"),
		    "changes", result_get(j, "changes"), "excluded",
		    result_get(j, "excluded"), "workspace_kept",
		    result_get(j, "workspace_kept"), "error",
		    j->lost ? j->error : NULL);
		/* Its own: no reference to the job's result outlives the
		 * lock. */
		report = json_deep_copy(shared);
		json_decref(shared);
	}
	pthread_mutex_unlock(&s->l.mu);
	if (j == NULL)
		return;
	if (report == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	if (p.lost) {
		/* The patch its stop path or recover wrote, if one did. */
		int fd = spawner_open_patch(&s->sp, p.job);
		char at[PATH_MAX];
		if (spawner_unavailable(s, res, fd))
			goto out;
		snprintf(at, sizeof(at), "%s/%s.patch",
		    s->l.cfg.common.state_dir, p.job);
		if (fd >= 0 && read_capped(fd, PATCH_MAX, &text, &len) == 0) {
			sha256_hex(text, len, sha);
			patch = json_pack("{s:s, s:I, s:s}", "path", at,
			    "bytes", (json_int_t)len, "sha256", sha);
		}
	} else if (p.at[0] != '\0') {
		if (read_patch(s, &p, res, &text, &len) < 0)
			goto out;
		sha256_hex(text, len, sha);
		patch = json_pack("{s:s, s:I, s:s}", "path", p.at, "bytes",
		    (json_int_t)len, "sha256", sha);
	}
	json_object_set_new(report, "patch",
	    patch != NULL ? patch : json_null());
	patch = NULL;
	http_reply_json(res, 200, report);
	report = NULL;
out:
	json_decref(patch);
	json_decref(report);
	free(text);
}

/* /metrics: the jobs kept, started, refused and ended, how long they
 * ran, and the callbacks. */
static void
metrics(void *ctx, struct buf *out)
{
	struct serve *s = ctx;
	uint64_t running = 0, done = 0, lost = 0;
	char label[64];

	pthread_mutex_lock(&s->l.mu);
	for (struct sjob *j = s->l.jobs; j != NULL; j = j->next)
		j->lost ? lost++ : j->done ? done++ : running++;
	metrics_header(out, "cordon_serve_jobs", "gauge",
	    "jobs serve holds, by state");
	metrics_sample(out, "cordon_serve_jobs", "state=\"running\"", running);
	metrics_sample(out, "cordon_serve_jobs", "state=\"done\"", done);
	metrics_sample(out, "cordon_serve_jobs", "state=\"lost\"", lost);
	metrics_one(out, "cordon_serve_jobs_started_total", "counter",
	    "jobs started (the broker made them)", s->started_total);
	metrics_one(out, "cordon_serve_jobs_not_started_total", "counter",
	    "POST /v1/jobs answered 502 or 500: no job", s->not_started_total);
	metrics_header(out, "cordon_serve_jobs_ended_total", "counter",
	    "jobs ended, by the result's stop_reason");
	for (size_t i = 0; i < ARRAY_SIZE(stop_reasons); i++) {
		snprintf(label, sizeof(label), "stop_reason=\"%s\"",
		    stop_reasons[i]);
		metrics_sample(out, "cordon_serve_jobs_ended_total", label,
		    s->ended_total[i]);
	}
	metrics_header(out, "cordon_serve_job_duration_seconds", "histogram",
	    "from POST /v1/jobs to the child's end");
	for (size_t i = 0; i < ARRAY_SIZE(duration_le); i++) {
		snprintf(label, sizeof(label), "le=\"%u\"", duration_le[i]);
		metrics_sample(out, "cordon_serve_job_duration_seconds_bucket",
		    label, s->duration_bucket[i]);
	}
	metrics_sample(out, "cordon_serve_job_duration_seconds_bucket",
	    "le=\"+Inf\"", s->duration_count);
	(void)buf_printf(out, "cordon_serve_job_duration_seconds_sum %.3f\n",
	    s->duration_sum);
	metrics_sample(out, "cordon_serve_job_duration_seconds_count", NULL,
	    s->duration_count);
	metrics_header(out, "cordon_serve_callbacks_total", "counter",
	    "callbacks, by outcome");
	metrics_sample(out, "cordon_serve_callbacks_total", "outcome=\"sent\"",
	    s->callbacks_sent);
	metrics_sample(out, "cordon_serve_callbacks_total",
	    "outcome=\"failed\"", s->callbacks_failed);
	pthread_mutex_unlock(&s->l.mu);
}

/* /healthz: "spawner" ok, lost (it did not answer in time) or gone, and
 * 503 unless ok: a serve without its spawner starts no job. */
static int
serve_health(void *ctx, json_t *out)
{
	struct serve *s = ctx;
	int r = spawner_status(&s->sp);

	json_object_set_new(out, "spawner",
	    json_string(r == 0        ? "ok"
		    : r == -ETIMEDOUT ? "lost"
				      : "gone"));
	return r < 0 ? -1 : 0;
}

static const struct http_route serve_routes[] = {
	{ "POST", "/v1/jobs", ROLE_LAUNCHER, BODY_JSON, jobs_post },
	{ "GET", "/v1/jobs", ROLE_LAUNCHER, BODY_NONE, jobs_list },
	{ "GET", "/v1/jobs/*", ROLE_LAUNCHER, BODY_NONE, job_get },
	{ "POST", "/v1/jobs/*/stop", ROLE_LAUNCHER, BODY_JSON_OPTIONAL,
	    job_stop },
	{ "GET", "/v1/jobs/*/output", ROLE_LAUNCHER, BODY_NONE, job_output },
	{ "GET", "/v1/jobs/*/patch", ROLE_LAUNCHER, BODY_NONE, job_patch },
	{ "GET", "/v1/jobs/*/report", ROLE_LAUNCHER, BODY_NONE, job_report },
};

/* Every entry of callback_allow is one serve can match: -1, or
 * EXIT_CONFIG after a line naming the entry. */
static int
check_allow(const struct config_strings *allow)
{
	struct url_parts e;

	for (size_t i = 0; i < allow->n; i++)
		if (url_parse(allow->v[i], false, &e) < 0) {
			fprintf(stderr,
			    "cordon serve: callback_allow[%zu] \"%s\" is "
			    "neither a host[:port] nor an "
			    "http://host[:port][/path] prefix\n",
			    i, allow->v[i]);
			return EXIT_CONFIG;
		}
	return -1;
}

/* Reads the callback key: callbacks are refused without one. */
static void
load_callback_key(struct serve *s)
{
	char key[sizeof(s->callback_key)];
	int r;

	if (s->l.cfg.callback_key_file == NULL)
		return;
	r = launcher_read_key(s->l.cfg.callback_key_file, key, sizeof(key));
	if (r < 0) {
		log_warn("no_callback_key", "{s:s, s:s, s:s}", "path",
		    s->l.cfg.callback_key_file, "error",
		    r == -EINVAL ? "shorter than 32 characters" : strerror(-r),
		    "effect", "a job with a callback is refused");
		explicit_bzero(key, sizeof(key));
		return;
	}
	s->callback_key_len = strlen(key);
	memcpy(s->callback_key, key, s->callback_key_len);
	explicit_bzero(key, sizeof(key));
}

int
launcher_serve(int argc, char **argv)
{
	static struct serve s = { .l = { .mu = PTHREAD_MUTEX_INITIALIZER },
		.sp = { .fd = -1 },
		.queue_cond = PTHREAD_COND_INITIALIZER,
		.records_fd = -1,
		.records_cond = PTHREAD_COND_INITIALIZER };
	struct launcher *l = &s.l;
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	s.queue_tail = &s.queue;
	s.records_tail = &s.records;
	/* Each cordon run copies the job's output on LIVE_FD (tee.c); set
	 * before any thread starts. */
	if (setenv("CORDON_OUTPUT_FD", "4", 1) < 0)
		return EXIT_OSERR;
	service_block_signals();
	if (launcher_config_defaults(&l->cfg) < 0)
		return EXIT_OSERR;
	r = service_parse_args(argc, argv, "cordon serve",
	    "The launcher's HTTP API for orchestrators.", &args);
	if (r >= 0)
		goto out;
	/* Without --config, the file cordon run would find: serve and the
	 * jobs it runs read the same one (none: the built-in defaults). */
	static char found[PATH_MAX];
	char looked[3 * PATH_MAX];
	if (args.config_path == NULL &&
	    launcher_config_find(found, sizeof(found), looked,
		sizeof(looked)) == 0 &&
	    found[0] != '\0')
		args.config_path = found;
	l->config_path = args.config_path;
	r = service_configure(&args, "cordon serve", "launcher",
	    LAUNCHER_LISTEN, launcher_options, launcher_noptions, &l->cfg,
	    &l->cfg.common);
	if (r >= 0)
		goto out;
	/* Its jobs' cordon run see what serve sees: no file when it has none
	 * (an empty CORDON_CONFIG), and its state directory, where they
	 * write the patches it serves. Before the spawner is forked. */
	char cwd[PATH_MAX], state[2 * PATH_MAX + 2];
	const char *sd = l->cfg.common.state_dir;
	if (sd[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		snprintf(state, sizeof(state), "%s/%s", cwd, sd);
	else
		snprintf(state, sizeof(state), "%s", sd);
	if ((l->config_path == NULL && setenv("CORDON_CONFIG", "", 1) < 0) ||
	    setenv("STATE_DIRECTORY", state, 1) < 0) {
		r = EXIT_OSERR;
		goto out;
	}
	if ((r = check_allow(&l->cfg.callback_allow)) >= 0)
		goto out;
	if (args.check_only) {
		/* At start a missing key is a warning (serve answers /healthz
		 * and refuses jobs); -n says what start would meet. */
		if ((r = keys_check_setting("cordon serve", "launcher_key_file",
			 l->cfg.launcher_key_file)) < 0 &&
		    (r = keys_check_setting("cordon serve", "callback_key_file",
			 l->cfg.callback_key_file)) < 0)
			r = service_config_ok("cordon serve");
		goto out;
	}

	log_init("launcher", l->cfg.common.log_level);
	/* A log line, as every line serve writes once its log is up. */
	if ((r = launcher_sibling("cordon", l->cordon, sizeof(l->cordon))) <
	    0) {
		log_error("no_cordon", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	/* The root part, forked before the keys are read and the socket
	 * opened: it holds neither (spawner.h). */
	s.sp.answer_ms = (int)(l->cfg.serve_spawner_seconds * 1000);
	if ((r = spawner_start(&s.sp, l->cordon, l->config_path,
		 l->cfg.common.state_dir)) < 0) {
		log_error("no_spawner", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	/* Without its key serve still answers /healthz, and refuses every
	 * job: the broker would refuse them anyway. */
	if ((r = keyring_add_file(&l->keys, l->cfg.launcher_key_file,
		 ROLE_LAUNCHER)) < 0)
		log_warn("no_launcher_key", "{s:s, s:s, s:s}", "path",
		    l->cfg.launcher_key_file, "error", strerror(-r), "effect",
		    "every call is refused until the key can be read");
	load_callback_key(&s);
	r = service_open(&l->cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	/* Its jobs' records, kept across restarts: a directory the HTTP
	 * part owns, opened before the drop. */
	if ((r = records_open(&s)) < 0)
		log_warn("no_records", "{s:s, s:s, s:s}", "path",
		    l->cfg.common.state_dir, "error", strerror(-r), "effect",
		    "a restart of serve forgets its jobs");
	/* Keys read, socket open, systemd's socket connected: root is not
	 * needed here any more. */
	(void)service_notify_connect();
	if ((r = spawner_drop_root()) < 0) {
		log_error("drop_root_failed", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	if (pthread_create(&s.callback_thread, NULL, callback_worker, &s) !=
	    0) {
		log_error("callback_thread", "{s:s}", "error", strerror(errno));
		r = EXIT_OSERR;
		goto out;
	}
	s.callback_thread_started = true;
	if (pthread_create(&s.records_thread, NULL, records_worker, &s) != 0) {
		log_error("records_thread", "{s:s}", "error", strerror(errno));
		r = EXIT_OSERR;
		goto out;
	}
	s.records_thread_started = true;
	records_load(&s);
	struct http_server_config http = {
		.svc = "launcher",
		.listen_fd = steal_fd(&fd),
		.threads = 2,
		.routes = serve_routes,
		.nroutes = ARRAY_SIZE(serve_routes),
		.ctx = &s,
		.keys = &l->keys,
		.metrics = metrics,
		.health = serve_health,
		.stopping = serve_stopping,
	};
	/* Its own sandbox, late: no exec, mounts, namespaces or id changes
	 * (the spawner keeps those for cordon run, confine.c). */
	if ((r = confine_apply(&confine_serve)) < 0) {
		log_error("confine_failed", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	r = service_serve(&http, &l->cfg.common, addr, tick, 100);
	/* Jobs die with their launcher: each runs its stop path. */
	for (struct sjob *j = l->jobs; j != NULL; j = j->next)
		if (!j->done)
			(void)spawner_stop(&s.sp, j->pid);
	/* Reaped as the tick does, their results read meanwhile (a child
	 * must not block on a full pipe), their callbacks sent still. */
	for (bool left = true; left;) {
		left = false;
		pthread_mutex_lock(&l->mu);
		for (struct sjob *j = l->jobs; j != NULL; j = j->next) {
			reap(&s, j);
			left |= !j->done;
		}
		pthread_mutex_unlock(&l->mu);
		if (left)
			usleep(10 * 1000);
	}
	if (l->recover_pid > 0) {
		int st;
		while (spawner_reaped(&s.sp, l->recover_pid, &st, 1000) == 0)
			;
	}
out:
	/* The records asked for so far written (the callbacks they hold
	 * handed on), then the callbacks, then what their ends wrote. */
	if (s.records_thread_started) {
		pthread_mutex_lock(&l->mu);
		while (s.records != NULL || s.records_busy)
			pthread_cond_wait(&s.records_cond, &l->mu);
		pthread_mutex_unlock(&l->mu);
	}
	if (s.callback_thread_started) {
		pthread_mutex_lock(&l->mu);
		s.stopping = true;
		pthread_cond_broadcast(&s.queue_cond);
		pthread_mutex_unlock(&l->mu);
		pthread_join(s.callback_thread, NULL);
	}
	/* Every record asked for is written before serve ends. */
	if (s.records_thread_started) {
		pthread_mutex_lock(&l->mu);
		s.records_stopping = true;
		pthread_cond_broadcast(&s.records_cond);
		pthread_mutex_unlock(&l->mu);
		pthread_join(s.records_thread, NULL);
	}
	while (s.records != NULL) {
		struct record_op *op = s.records;
		s.records = op->next;
		free(op->text);
		free(op->output);
		callback_free(op->cb);
		free(op);
	}
	/* Handed on after their thread ended: their records keep them. */
	while (s.queue != NULL) {
		struct callback *c = s.queue;
		s.queue = c->next;
		callback_free(c);
	}
	if (fd >= 0)
		close(fd);
	/* Its end closed, the spawner stops what is left and exits. */
	(void)spawner_close(&s.sp);
	while (l->jobs != NULL) {
		struct sjob *j = l->jobs;
		l->jobs = j->next;
		sjob_free(j);
	}
	explicit_bzero(s.callback_key, sizeof(s.callback_key));
	if (s.records_fd >= 0)
		close(s.records_fd);
	launcher_config_free(&l->cfg);
	return r;
}
