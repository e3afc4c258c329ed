/*
 * What cordon serve keeps of a job across its own restarts, for real,
 * beyond the records it_serve_persist covers: a finished job's output
 * (GET .../output after a SIGTERM and after a SIGKILL, the file 0600 as
 * the record), a callback that had not gone out when serve stopped or
 * died (sent after the restart to a receiver on 127.0.0.1, with the same
 * Idempotency-Key and signature, and judged again by callback_allow as
 * it is then), a followed output held to the job's output_kb as the
 * envelope is, the start's sweep of output files no record names
 * (only serve's own: by name and owner), and a record that does not parse
 * moved aside as <name>.bad, its output kept.
 */
#include "harness.h"
#include "servekit.h"

#include "http_client.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CALLBACK_KEY "callback-key-for-the-keep-tests-0123456789"

static struct stack st;
static struct daemon serve;
static char serve_cfg[8192];

/* serve's configuration: the stack's launcher's, a callback key, and
 * callback_allow as allow (a JSON array), then more's keys (NULL: none;
 * taken). */
static const char *
config_more(const char *allow, json_t *more)
{
	char path[400], *text;
	json_t *a = json_loads(allow, 0, NULL), *extra;

	snprintf(path, sizeof(path), "%s/callback.key", st.launcher_dir);
	harness_write_file(path, CALLBACK_KEY "\n");
	ck_assert_ptr_nonnull(a);
	extra = json_pack("{s:s, s:o}", "callback_key_file", path,
	    "callback_allow", a);
	if (more != NULL) {
		json_object_update(extra, more);
		json_decref(more);
	}
	text = servekit_config(&st, extra);
	ck_assert_uint_lt(strlen(text), sizeof(serve_cfg));
	snprintf(serve_cfg, sizeof(serve_cfg), "%s", text);
	free(text);
	return serve_cfg;
}

static const char *
config_with(const char *allow)
{
	return config_more(allow, NULL);
}

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 860000 };

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	servekit_repo(&st);
	servekit_manifest(&st, "keep-job", 256);
	servekit_manifest(&st, "tiny-job", 1);
	ck_assert_int_eq(daemon_start(&serve, "launcher",
			     config_with("[\"127.0.0.1\"]")),
	    0);
}

static void
teardown(void)
{
	daemon_stop(&serve);
	stack_stop(&st);
}

/* Restarts serve with callback_allow as allow. */
static void
restart_with(const char *allow)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/config.json", serve.dir);
	harness_write_file(path, config_with(allow));
	ck_assert_int_eq(daemon_restart(&serve), 0);
}

static const char *
state(const json_t *j)
{
	return json_string_value(json_object_get(j, "state")) ?: "(none)";
}

/* GET path: the body as text (free it) and the status. */
static char *
get_raw(const char *path, long *ret_status)
{
	struct httpc_answer a;
	char *body;

	ck_assert_int_eq(httpc_request(serve.base, "GET", path, st.launcher,
			     NULL, NULL, 10000, &a),
	    0);
	*ret_status = a.status;
	body = strndup(a.body.data != NULL ? a.body.data : "", a.body.len);
	httpc_answer_free(&a);
	return body;
}

/* Waits until serve wrote job id's output file, and asserts it is
 * 0600. */
static void
wait_output_file(const char *id)
{
	char path[600];
	struct stat sb;

	servekit_wait_output(&st, id, path, sizeof(path));
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_msg((sb.st_mode & 0777) == 0600, "%s is %o", path,
	    sb.st_mode & 0777);
}

START_TEST(outputs_survive_sigterm_and_sigkill)
{
	char path[300], *id, *before, *after, *run, *lost;
	long status;
	json_t *j;

	j = servekit_post(&serve, &st, "keep-job",
	    "echo kept-out; echo kept-err >&2", NULL);
	id = servekit_job_id(j);
	json_decref(j);
	json_decref(servekit_wait_state(&serve, &st, id, "done"));
	snprintf(path, sizeof(path), "/v1/jobs/%s/output", id);
	before = get_raw(path, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_ptr_nonnull(strstr(before, "kept-out"));
	ck_assert_ptr_nonnull(strstr(before, "kept-err"));
	/* One running when serve dies: its output went with that serve. */
	j = servekit_post(&serve, &st, "keep-job", "echo running; sleep 60",
	    NULL);
	run = servekit_job_id(j);
	json_decref(j);
	json_decref(servekit_wait_state(&serve, &st, run, "running"));

	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	after = get_raw(path, &status);
	ck_assert_msg(status == 200, "after a SIGTERM: %ld %s", status, after);
	ck_assert_str_eq(after, before);
	free(after);
	/* The followed output of a finished job ends with it too. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/output?follow=1&wait=0", id);
	j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_object_get(json_object_get(j,
								 "envelope"),
						 "stdout"),
				 "text")),
	    "kept-out\n");
	json_decref(j);

	/* On disk before the kill (written off the request path). */
	wait_output_file(id);
	j = servekit_post(&serve, &st, "keep-job", "echo dying; sleep 60",
	    NULL);
	lost = servekit_job_id(j);
	json_decref(j);
	json_decref(servekit_wait_state(&serve, &st, lost, "running"));
	daemon_kill(&serve);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	snprintf(path, sizeof(path), "/v1/jobs/%s/output", id);
	after = get_raw(path, &status);
	ck_assert_msg(status == 200, "after a SIGKILL: %ld %s", status, after);
	ck_assert_str_eq(after, before);
	free(after);
	/* What cannot be kept says what, and why. */
	json_decref(servekit_wait_state(&serve, &st, lost, "lost"));
	snprintf(path, sizeof(path), "/v1/jobs/%s/output", lost);
	j = harness_expect(&serve, 410, "GET", path, st.launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "error")),
	    "output_gone");
	ck_assert_msg(strstr(json_string_value(json_object_get(j, "message"))
			      ?: "",
			  "serve stopped while this job ran") != NULL,
	    "%s", json_string_value(json_object_get(j, "message")));
	json_decref(j);
	free(before);
	free(id);
	free(run);
	free(lost);
}
END_TEST

/* A followed output is held to output_kb (1 KiB here) on each stream as
 * the envelope is: the chunks spell what the envelope keeps, and both
 * say truncated. */
START_TEST(a_followed_output_is_held_to_output_kb)
{
	char path[300], *id;
	json_t *j = servekit_post(&serve, &st, "tiny-job",
	    "echo err-line >&2; head -c 3000 /dev/zero | tr '\\0' a; "
	    "sleep 5",
	    NULL);
	size_t out = 0, err = 0;
	long next = 0;
	bool cut = false;
	json_t *envelope = NULL;

	id = servekit_job_id(j);
	json_decref(j);
	for (int i = 0; i < 60 && envelope == NULL; i++) {
		snprintf(path, sizeof(path),
		    "/v1/jobs/%s/output?follow=1&offset=%ld&wait=5", id, next);
		j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL,
		    NULL);
		json_t *c;
		size_t k;
		json_array_foreach(json_object_get(j, "chunks"), k, c)
		{
			const char *s =
			    json_string_value(json_object_get(c, "stream"));
			size_t n =
			    strlen(json_string_value(json_object_get(c, "text"))
				    ?: "");
			*(strcmp(s, "stdout") == 0 ? &out : &err) += n;
		}
		next = (long)json_integer_value(json_object_get(j, "next"));
		cut |= json_is_true(json_object_get(j, "truncated"));
		if (json_is_object(json_object_get(j, "envelope")))
			envelope = json_incref(json_object_get(j, "envelope"));
		json_decref(j);
	}
	ck_assert_msg(envelope != NULL, "the job never ended");
	json_t *so = json_object_get(envelope, "stdout");
	size_t kept = strlen(json_string_value(json_object_get(so, "text")));
	ck_assert_msg(out == 1024 && kept == 1024,
	    "followed %zu bytes of stdout, the envelope keeps %zu, output_kb "
	    "1",
	    out, kept);
	ck_assert(json_is_true(json_object_get(so, "truncated")));
	ck_assert_msg(cut, "the follow did not say truncated");
	ck_assert_uint_eq(err, strlen("err-line\n"));
	json_decref(envelope);
	free(id);
}
END_TEST

/* A receiver on 127.0.0.1 for callbacks: every request it got, answered
 * 503 until ok is set. */
struct receiver {
	int fd;
	unsigned port;
	pthread_t thread;
	pthread_mutex_t mu;
	bool ok, stop;
	char req[8][8192];
	size_t n;
};

static void *
receive(void *arg)
{
	struct receiver *r = arg;

	for (;;) {
		int c = accept(r->fd, NULL, NULL);
		char buf[8192];
		size_t len = 0;
		if (c < 0)
			return NULL;
		pthread_mutex_lock(&r->mu);
		bool stop = r->stop;
		pthread_mutex_unlock(&r->mu);
		if (stop) {
			close(c);
			return NULL;
		}
		for (;;) {
			ssize_t k = read(c, buf + len, sizeof(buf) - 1 - len);
			if (k <= 0)
				break;
			len += (size_t)k;
			buf[len] = '\0';
			char *body = strstr(buf, "\r\n\r\n");
			char *cl = strcasestr(buf, "content-length:");
			if (body != NULL && cl != NULL &&
			    len - (size_t)(body + 4 - buf) >=
				strtoul(cl + 15, NULL, 10))
				break;
		}
		buf[len] = '\0';
		pthread_mutex_lock(&r->mu);
		const char *say = r->ok
		    ? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
		    : "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n";
		if (r->n < 8)
			memcpy(r->req[r->n++], buf, len + 1);
		pthread_mutex_unlock(&r->mu);
		if (write(c, say, strlen(say)) < 0) {
			/* serve gone: seen by the test */
		}
		close(c);
	}
}

static void
receiver_start(struct receiver *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(r->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(r->fd, 8), 0);
	ck_assert_int_eq(getsockname(r->fd, (struct sockaddr *)&sa, &sl), 0);
	r->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&r->thread, NULL, receive, r), 0);
}

static void
receiver_stop(struct receiver *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)r->port) };
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_mutex_unlock(&r->mu);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	(void)connect(c, (struct sockaddr *)&sa, sizeof(sa));
	close(c);
	pthread_join(r->thread, NULL);
	close(r->fd);
	pthread_mutex_destroy(&r->mu);
}

static size_t
received(struct receiver *r)
{
	pthread_mutex_lock(&r->mu);
	size_t n = r->n;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* Waits (20 s at most) until r got more than n requests. */
static bool
wait_received(struct receiver *r, size_t n)
{
	for (int i = 0; i < 400; i++) {
		if (received(r) > n)
			return true;
		usleep(50000);
	}
	return false;
}

/* Request i of r: a signed POST for job id with Idempotency-Key: id, its
 * body's state. */
static const char *
check_callback(struct receiver *r, size_t i, const char *id)
{
	static char got[32];
	unsigned char mac[32];
	unsigned maclen = sizeof(mac);
	char hex[65], want[160];
	const char *req = r->req[i];
	const char *b = strstr(req, "\r\n\r\n");

	ck_assert_msg(b != NULL, "%s", req);
	b += 4;
	HMAC(EVP_sha256(), CALLBACK_KEY, strlen(CALLBACK_KEY),
	    (const unsigned char *)b, strlen(b), mac, &maclen);
	for (size_t k = 0; k < 32; k++)
		snprintf(hex + 2 * k, 3, "%02x", mac[k]);
	snprintf(want, sizeof(want), "X-Cordon-Signature: sha256=%s\r\n", hex);
	ck_assert_msg(strcasestr(req, want) != NULL, "want %s in %s", want,
	    req);
	snprintf(want, sizeof(want), "\r\nIdempotency-Key: %s\r\n", id);
	ck_assert_msg(strcasestr(req, want) != NULL, "want %s in %s", want,
	    req);
	json_t *body = json_loads(b, 0, NULL);
	ck_assert_msg(body != NULL, "%s", req);
	ck_assert_str_eq(json_string_value(json_object_get(body, "job")), id);
	snprintf(got, sizeof(got), "%s", state(body));
	json_decref(body);
	return got;
}

/* Callbacks that had not gone out when serve was killed are sent by the
 * next serve: the finished job's (refused once with a 503 before) as it
 * was, the running job's telling it was lost. */
START_TEST(a_callback_survives_a_sigkill)
{
	struct receiver r;
	char url[128], *done, *run;
	json_t *j;

	receiver_start(&r);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", r.port);
	j = servekit_post(&serve, &st, "keep-job", "exit 4", url);
	done = servekit_job_id(j);
	json_decref(j);
	j = servekit_post(&serve, &st, "keep-job", "echo up; sleep 60", url);
	run = servekit_job_id(j);
	json_decref(j);
	json_decref(servekit_wait_state(&serve, &st, run, "running"));
	/* Its first try answered 503; the next is a second away. */
	ck_assert_msg(wait_received(&r, 0), "no first try");
	ck_assert_str_eq(check_callback(&r, 0, done), "done");
	daemon_kill(&serve);
	size_t seen = received(&r);
	pthread_mutex_lock(&r.mu);
	r.ok = true;
	pthread_mutex_unlock(&r.mu);
	ck_assert_int_eq(daemon_restart(&serve), 0);

	bool got_done = false, got_lost = false;
	for (size_t i = seen; i < 8 && !(got_done && got_lost); i++) {
		ck_assert_msg(wait_received(&r, i),
		    "after the restart: %zu callbacks, done %d, lost %d",
		    received(&r) - seen, got_done, got_lost);
		const char *id = strstr(r.req[i], done) != NULL ? done : run;
		const char *s = check_callback(&r, i, id);
		if (id == done) {
			ck_assert_str_eq(s, "done");
			got_done = true;
		} else {
			ck_assert_str_eq(s, "lost");
			got_lost = true;
		}
	}
	ck_assert(got_done && got_lost);
	receiver_stop(&r);
	free(done);
	free(run);
}
END_TEST

/* A callback refused when serve is told to stop waits in its record: the
 * next serve sends it, but only while callback_allow still lets it
 * through, as the list is at that start. */
START_TEST(a_callback_survives_a_sigterm_and_is_judged_again)
{
	struct receiver r;
	char url[128], *a, *b;
	json_t *j;

	receiver_start(&r);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", r.port);
	j = servekit_post(&serve, &st, "keep-job", "true", url);
	a = servekit_job_id(j);
	json_decref(j);
	ck_assert_msg(wait_received(&r, 0), "no first try");
	j = servekit_post(&serve, &st, "keep-job", "true", url);
	b = servekit_job_id(j);
	json_decref(j);
	ck_assert_msg(wait_received(&r, 1), "no first try for %s", b);
	ck_assert_int_eq(daemon_stop(&serve), 0);
	size_t seen = received(&r);

	/* 127.0.0.1 no longer listed: refused at delivery, and final. */
	restart_with("[\"127.0.0.9\"]");
	bool refused = false;
	for (int i = 0; i < 200 && !refused; i++) {
		json_t *lines = daemon_log_lines(&serve), *l;
		size_t k;
		json_array_foreach(lines, k, l)
		{
			const char *ev =
			    json_string_value(json_object_get(l, "event"));
			const char *e =
			    json_string_value(json_object_get(l, "error"));
			refused |= ev != NULL &&
			    strcmp(ev, "callback_failed") == 0 && e != NULL &&
			    strstr(e, "callback_allow") != NULL;
		}
		json_decref(lines);
		if (!refused)
			usleep(50000);
	}
	ck_assert_msg(refused, "no callback_failed naming callback_allow");
	ck_assert_uint_eq(received(&r), seen);

	/* Allowed again: nothing is sent, it was given up. */
	pthread_mutex_lock(&r.mu);
	r.ok = true;
	pthread_mutex_unlock(&r.mu);
	ck_assert_int_eq(daemon_stop(&serve), 0);
	restart_with("[\"127.0.0.1\"]");
	j = servekit_post(&serve, &st, "keep-job", "true", url);
	char *c = servekit_job_id(j);
	json_decref(j);
	ck_assert_msg(wait_received(&r, seen), "no callback for %s", c);
	/* The first sent: a or b sent again would come before it. */
	ck_assert_str_eq(check_callback(&r, seen, c), "done");
	receiver_stop(&r);
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(a_callback_refused_at_a_sigterm_is_sent_after_the_restart)
{
	struct receiver r;
	char url[128], *a;
	json_t *j;

	receiver_start(&r);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", r.port);
	j = servekit_post(&serve, &st, "keep-job", "true", url);
	a = servekit_job_id(j);
	json_decref(j);
	ck_assert_msg(wait_received(&r, 0), "no first try");
	ck_assert_int_eq(daemon_stop(&serve), 0);
	size_t seen = received(&r);
	pthread_mutex_lock(&r.mu);
	r.ok = true;
	pthread_mutex_unlock(&r.mu);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	ck_assert_msg(wait_received(&r, seen),
	    "the callback refused before the SIGTERM was not sent after");
	ck_assert_str_eq(check_callback(&r, seen, a), "done");
	receiver_stop(&r);
	free(a);
}
END_TEST

/* A forgotten job's record goes only once its patch has (here the
 * patch's name is a directory, which unlink refuses): no patch of
 * serve's is left that no record names; a later start removes both. */
START_TEST(a_record_stays_until_its_patch_is_removed)
{
	char path[160], pa[600], rec[700], name[100], *a, *b;
	struct stat sb;
	long status;
	json_t *j;

	ck_assert_int_eq(daemon_stop(&serve), 0);
	snprintf(path, sizeof(path), "%s/config.json", serve.dir);
	harness_write_file(path,
	    config_more("[]",
		json_pack("{s:i, s:i}", "serve_keep_jobs", 1,
		    "serve_keep_seconds", 0)));
	ck_assert_int_eq(daemon_restart(&serve), 0);
	j = servekit_post(&serve, &st, "keep-job", "echo a > repo/A.md", NULL);
	a = servekit_job_id(j);
	json_decref(j);
	json_decref(servekit_wait_state(&serve, &st, a, "done"));
	snprintf(pa, sizeof(pa), "%s/state/%s.patch", st.launcher_dir, a);
	ck_assert_int_eq(unlink(pa), 0);
	ck_assert_int_eq(mkdir(pa, 0700), 0);
	j = servekit_post(&serve, &st, "keep-job", "true", NULL);
	b = servekit_job_id(j);
	json_decref(j);
	json_decref(servekit_wait_state(&serve, &st, b, "done"));
	snprintf(path, sizeof(path), "/v1/jobs/%s", a);
	for (int i = 0; i < 100; i++) {
		free(get_raw(path, &status));
		if (status == 404)
			break;
		usleep(100 * 1000);
	}
	ck_assert_int_eq(status, 404);
	/* A stop writes every record asked for first. */
	ck_assert_int_eq(daemon_stop(&serve), 0);
	snprintf(name, sizeof(name), "%s.json", a);
	servekit_kept_path(&st, rec, sizeof(rec), name);
	ck_assert_msg(stat(rec, &sb) == 0,
	    "%s removed while its patch %s is still there", rec, pa);
	json_t *lines = daemon_log_lines(&serve), *l;
	size_t k;
	bool logged = false;
	json_array_foreach(lines, k, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		const char *job = json_string_value(json_object_get(l, "job"));
		logged |= ev != NULL && strcmp(ev, "patch_not_removed") == 0 &&
		    job != NULL && strcmp(job, a) == 0;
	}
	json_decref(lines);
	ck_assert_msg(logged, "no patch_not_removed for %s", a);

	/* The patch removable again: the next start removes it, then the
	 * record. */
	ck_assert_int_eq(rmdir(pa), 0);
	harness_write_file(pa, "diff\n");
	ck_assert_int_eq(daemon_restart(&serve), 0);
	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_msg(stat(pa, &sb) < 0, "%s outlived its record", pa);
	ck_assert_msg(stat(rec, &sb) < 0, "%s outlived its patch", rec);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	free(a);
	free(b);
}
END_TEST

/* At start serve removes the output files no record names, its own by
 * name and owner, and only those. */
START_TEST(orphaned_outputs_are_swept_and_only_serves)
{
	char dir[600], path[700], *id;
	struct stat sb;
	json_t *j;

	j = servekit_post(&serve, &st, "keep-job", "echo mine", NULL);
	id = servekit_job_id(j);
	json_decref(j);
	json_decref(servekit_wait_state(&serve, &st, id, "done"));
	wait_output_file(id);
	ck_assert_int_eq(daemon_stop(&serve), 0);
	servekit_kept_path(&st, dir, sizeof(dir), "");
	ck_assert_int_eq(stat(dir, &sb), 0);
	uid_t serve_uid = sb.st_uid;
	gid_t serve_gid = sb.st_gid;

	static const char *const names[] = {
		"job_orphanAAAAAAAAAAAAAAAA.output.json", /* serve's: swept */
		"job_strangerBBBBBBBBBBBBBB.output.json", /* another's */
		"notes.output.txt", /* not serve's name */
	};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", dir, names[i]);
		harness_write_file(path, "{}");
		uid_t u = i == 1 ? serve_uid + 1 : serve_uid;
		ck_assert_int_eq(chown(path, u, serve_gid), 0);
	}
	/* A patch of a job serve never recorded: a `cordon run`'s, kept. */
	snprintf(path, sizeof(path), "%s/state/job_cliCCCCCCCCCCCCCCCCC.patch",
	    st.launcher_dir);
	harness_write_file(path, "diff\n");
	ck_assert_int_eq(daemon_restart(&serve), 0);

	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", dir, names[i]);
		ck_assert_msg((stat(path, &sb) == 0) == (i != 0), "%s %s", path,
		    i == 0 ? "kept" : "removed");
	}
	snprintf(path, sizeof(path), "%s/state/job_cliCCCCCCCCCCCCCCCCC.patch",
	    st.launcher_dir);
	ck_assert_msg(stat(path, &sb) == 0, "%s removed", path);
	char own[100];
	snprintf(own, sizeof(own), "%s.output.json", id);
	snprintf(path, sizeof(path), "%s%s", dir, own);
	ck_assert_msg(stat(path, &sb) == 0, "%s, named, removed", path);
	json_t *lines = daemon_log_lines(&serve), *l;
	size_t k, logged = 0;
	json_array_foreach(lines, k, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		const char *p = json_string_value(json_object_get(l, "path"));
		if (ev != NULL && strcmp(ev, "orphan_removed") == 0 &&
		    p != NULL)
			logged += strcmp(p, names[0]) == 0 ? 1 : 100;
	}
	json_decref(lines);
	ck_assert_msg(logged == 1, "orphan_removed lines: %zu", logged);
	free(id);
}
END_TEST

/* A record serve cannot read back (not JSON, or not a record of the job
 * it is named for) is moved aside as <name>.bad at start, with a log line,
 * and its output kept: evidence, never deleted, never read again. */
START_TEST(a_record_that_does_not_parse_is_moved_aside)
{
	static const char *const ids[] = { "job_badjsonAAAAAAAAAAAAAA",
		"job_badjobBBBBBBBBBBBBBBB" };
	static const char *const texts[] = { "{\"job\": \"job_badjsonAA",
		"{\"job\": \"job_someoneElse\", \"manifest\": \"keep-job\", "
		"\"state\": \"done\"}" };
	char name[100], path[700], bad[700], text[200];
	struct stat sb;

	ck_assert_int_eq(daemon_stop(&serve), 0);
	/* Written as serve writes its own: by the user it runs as. */
	servekit_kept_path(&st, path, sizeof(path), "");
	ck_assert_int_eq(stat(path, &sb), 0);
	uid_t uid = sb.st_uid;
	gid_t gid = sb.st_gid;
	for (size_t i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%s.json", ids[i]);
		servekit_kept_path(&st, path, sizeof(path), name);
		harness_write_file(path, texts[i]);
		ck_assert_int_eq(chown(path, uid, gid), 0);
		snprintf(name, sizeof(name), "%s.output.json", ids[i]);
		servekit_kept_path(&st, path, sizeof(path), name);
		harness_write_file(path, "{}");
		ck_assert_int_eq(chown(path, uid, gid), 0);
	}
	ck_assert_int_eq(daemon_restart(&serve), 0);
	for (size_t i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%s.json", ids[i]);
		servekit_kept_path(&st, path, sizeof(path), name);
		snprintf(bad, sizeof(bad), "%s.bad", path);
		ck_assert_msg(stat(path, &sb) < 0,
		    "%s is still there after the start: not removed, not moved "
		    "aside",
		    path);
		ck_assert_msg(harness_read_line(bad, text, sizeof(text)) == 0 &&
			strcmp(text, texts[i]) == 0,
		    "%s does not hold the record as it was", bad);
		snprintf(name, sizeof(name), "%s.output.json", ids[i]);
		servekit_kept_path(&st, path, sizeof(path), name);
		ck_assert_msg(stat(path, &sb) == 0,
		    "%s, the output of a record moved aside, removed", path);
		snprintf(path, sizeof(path), "/v1/jobs/%s", ids[i]);
		json_decref(harness_expect(&serve, 404, "GET", path,
		    st.launcher, NULL, NULL));
	}
	json_t *lines = daemon_log_lines(&serve), *l;
	size_t k, logged = 0;
	json_array_foreach(lines, k, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		const char *job = json_string_value(json_object_get(l, "job"));
		if (ev != NULL && strcmp(ev, "record_bad") == 0 && job != NULL)
			logged += strcmp(job, ids[0]) == 0 ||
			    strcmp(job, ids[1]) == 0;
	}
	json_decref(lines);
	ck_assert_msg(logged == 2, "record_bad lines: %zu (want 2)", logged);
	/* Moved aside once: the next start neither reads nor moves it. */
	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	snprintf(name, sizeof(name), "%s.json.bad", ids[0]);
	servekit_kept_path(&st, path, sizeof(path), name);
	ck_assert_msg(stat(path, &sb) == 0, "%s gone after a restart", path);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("serve_keep");
	TCase *tc = tcase_create("serve_keep");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, outputs_survive_sigterm_and_sigkill);
	tcase_add_test(tc, a_followed_output_is_held_to_output_kb);
	tcase_add_test(tc, a_callback_survives_a_sigkill);
	tcase_add_test(tc,
	    a_callback_refused_at_a_sigterm_is_sent_after_the_restart);
	tcase_add_test(tc, a_callback_survives_a_sigterm_and_is_judged_again);
	tcase_add_test(tc, orphaned_outputs_are_swept_and_only_serves);
	tcase_add_test(tc, a_record_stays_until_its_patch_is_removed);
	tcase_add_test(tc, a_record_that_does_not_parse_is_moved_aside);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
