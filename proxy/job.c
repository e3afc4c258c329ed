/*
 * A job as the proxy knows it: its rules, its CA, its channel (the unix
 * socket the launcher relays the sandbox's traffic to), its open
 * connections and its decision log. Closing a job (revoked at the broker,
 * or deleted by the launcher) closes the channel and every connection at
 * once; its log stays readable for closed_job_linger_seconds.
 */
#include "proxy.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct pjob *
job_find(struct proxy *p, const char *id)
{
	struct pjob *j;

	TAILQ_FOREACH(j, &p->jobs, link)
	if (strcmp(j->id, id) == 0)
		return j;
	return NULL;
}

/*
 * A connection on the channel. The socket's mode keeps nobody out (the
 * proxy cannot chown it to the launcher unless it runs as root), so the
 * peer's uid is what decides: the launcher's, or nothing.
 */
/*
 * Whether j may have one more connection, counted in descriptors (two a
 * connection: the job's and the upstream's; one an idle pooled upstream):
 * NULL, or why not. The limit is read each time, so it follows a limit
 * changed while the proxy runs.
 */
static const char *
accept_budget(struct pjob *j)
{
	struct proxy *p = j->p;
	struct rlimit rl;
	uint64_t limit = 1024, usable, used = p->fd_reserve;
	struct pjob *o;

	if (j->nconns >= (unsigned)p->cfg.max_conns_per_job)
		return "max_conns_per_job";
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		limit = rl.rlim_cur;
	usable = limit > 2 * p->fd_reserve ? limit - p->fd_reserve : limit / 2;
	if (2 * ((uint64_t)j->nconns + 1) + j->pool.n > usable / PROXY_FD_SHARE)
		return "job_share";
	TAILQ_FOREACH(o, &p->jobs, link)
	used += 2 * (uint64_t)o->nconns + o->pool.n + (o->listener != NULL);
	if (used + 2 > limit)
		return "proxy_full";
	return NULL;
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct pjob *j = arg;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	const char *full;

	(void)l;
	(void)sa;
	(void)salen;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (long long)cred.uid != j->p->cfg.launcher_uid) {
		close(fd);
		job_refuse(j, "peer_uid", "not the launcher's uid");
		return;
	}
	full = j->closed ? NULL : accept_budget(j);
	if (j->closed || full != NULL) {
		close(fd);
		job_refuse(j, j->closed ? "revoked" : "too_many_connections",
		    full);
		return;
	}
	conn_accept(j, fd);
}

static void
on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
	struct pjob *j = arg;

	(void)fd;
	(void)what;
	if (j->listener != NULL)
		evconnlistener_enable(j->listener);
}

/*
 * accept() failed other than for a retry: out of descriptors, most
 * likely. The listener rests 100 ms instead of spinning on a socket that
 * stays readable, and the failure is one line per burst, however often a
 * job tries.
 */
static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	static const struct timeval rest = { 0, 100 * 1000 };
	struct pjob *j = arg;
	int err = EVUTIL_SOCKET_ERROR();

	log_burst(LEVEL_WARN, "accept_failed", "{s:s, s:s}", "job", j->id,
	    "error", strerror(err));
	if (j->accept_retry != NULL) {
		evconnlistener_disable(l);
		evtimer_add(j->accept_retry, &rest);
	}
}

/* Writes d, whatever the budget. */
static void job_write(struct pjob *j, const struct decision *d);

/* Tells the allowed decisions held past the budget: one line a slot
 * (host, status and injected secret), and the overflow line. */
static void
allow_held_flush(struct pjob *j)
{
	for (size_t i = 0; i < ALLOW_HELD_MAX; i++) {
		if (j->allow_held[i].count == 0)
			continue;
		struct decision d = { .job = j->id,
			.kind = j->allow_held[i].kind,
			.host = j->allow_held[i].host,
			.addr = "",
			.rule = -1,
			.allow = true,
			.status = j->allow_held[i].status,
			.detail = "held_past_budget",
			.count = j->allow_held[i].count };
		if (j->allow_held[i].secret[0] != '\0') {
			d.secret = j->allow_held[i].secret;
			d.secret_version = j->allow_held[i].secret_version;
			d.reflected = j->allow_held[i].reflected;
		}
		job_write(j, &d);
		j->allow_held[i].count = 0;
		j->allow_held[i].reflected = 0;
		j->allow_held[i].host[0] = '\0';
		j->allow_held[i].secret[0] = '\0';
	}
	if (j->allow_over > 0) {
		struct decision d = { .job = j->id,
			.kind = "http",
			.addr = "",
			.rule = -1,
			.allow = true,
			.detail = "held_overflow",
			.count = j->allow_over };
		job_write(j, &d);
		j->allow_over = 0;
	}
}

/* Tells the denials held past the budget: one line per reason. */
static void
deny_held_flush(struct pjob *j)
{
	for (size_t i = 0; i < DENY_HELD_MAX; i++) {
		if (j->deny_held[i].count == 0)
			continue;
		struct decision d = { .job = j->id,
			.kind = j->deny_held[i].kind,
			.addr = "",
			.rule = -1,
			.reason = j->deny_held[i].reason,
			.detail = "held_past_budget",
			.count = j->deny_held[i].count };
		job_write(j, &d);
		j->deny_held[i].count = 0;
		j->deny_held[i].reason = NULL;
	}
	allow_held_flush(j);
}

/* Whether an allowed decision gets a line of its own now: the budget
 * refills at allow_lines_per_second, up to allow_lines_burst (a job's
 * flood of allowed requests, a mint flood's 429s among them, was a line
 * each: about 1 GB of decisions.log an hour). */
static bool
allow_line_ok(struct pjob *j)
{
	const struct proxy_config *cfg = &j->p->cfg;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (j->allow_at.tv_sec == 0 && j->allow_at.tv_nsec == 0)
		j->allow_tokens = (double)cfg->allow_lines_burst;
	else
		j->allow_tokens +=
		    ((double)(now.tv_sec - j->allow_at.tv_sec) +
			(double)(now.tv_nsec - j->allow_at.tv_nsec) / 1e9) *
		    (double)cfg->allow_lines_per_s;
	if (j->allow_tokens > (double)cfg->allow_lines_burst)
		j->allow_tokens = (double)cfg->allow_lines_burst;
	j->allow_at = now;
	if (j->allow_tokens < 1)
		return false;
	j->allow_tokens -= 1;
	return true;
}

/* An allowed decision past the budget: counted by host, status and
 * injected secret and version, told in one line each (deny_held_flush).
 * One that finds every slot taken by others has them told at once
 * (ALLOW_EARLY_FLUSHES a sweep), then is counted in the overflow line,
 * or, injected, written whole: it is never added to another's slot. */
static void
allow_hold(struct pjob *j, const struct decision *d)
{
	const char *host = d->host != NULL ? d->host : "";
	const char *secret = d->secret != NULL ? d->secret : "";
	size_t i, free_slot = ALLOW_HELD_MAX;

	for (i = 0; i < ALLOW_HELD_MAX; i++) {
		if (j->allow_held[i].count > 0 &&
		    j->allow_held[i].status == d->status &&
		    strcmp(j->allow_held[i].host, host) == 0 &&
		    strcmp(j->allow_held[i].secret, secret) == 0 &&
		    (secret[0] == '\0' ||
			j->allow_held[i].secret_version == d->secret_version))
			break;
		if (j->allow_held[i].count == 0 && free_slot == ALLOW_HELD_MAX)
			free_slot = i;
	}
	if (i == ALLOW_HELD_MAX && free_slot == ALLOW_HELD_MAX &&
	    j->allow_early < ALLOW_EARLY_FLUSHES) {
		j->allow_early++;
		allow_held_flush(j);
		free_slot = 0;
	}
	if (i == ALLOW_HELD_MAX && free_slot == ALLOW_HELD_MAX) {
		if (secret[0] != '\0')
			job_write(j, d);
		else
			j->allow_over++;
		return;
	}
	if (i == ALLOW_HELD_MAX) {
		i = free_slot;
		snprintf(j->allow_held[i].host, sizeof(j->allow_held[i].host),
		    "%s", host);
		snprintf(j->allow_held[i].secret,
		    sizeof(j->allow_held[i].secret), "%s", secret);
		j->allow_held[i].secret_version = d->secret_version;
		j->allow_held[i].status = d->status;
		j->allow_held[i].kind = d->kind;
	}
	j->allow_held[i].count++;
	j->allow_held[i].reflected += d->reflected;
}

/* Whether a denial gets a line of its own now: the budget refills at
 * DENY_LINES_RATE a second, up to DENY_LINES_BURST. */
static bool
deny_line_ok(struct pjob *j)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (j->deny_at.tv_sec == 0 && j->deny_at.tv_nsec == 0)
		j->deny_tokens = DENY_LINES_BURST;
	else
		j->deny_tokens +=
		    ((double)(now.tv_sec - j->deny_at.tv_sec) +
			(double)(now.tv_nsec - j->deny_at.tv_nsec) / 1e9) *
		    DENY_LINES_RATE;
	if (j->deny_tokens > DENY_LINES_BURST)
		j->deny_tokens = DENY_LINES_BURST;
	j->deny_at = now;
	if (j->deny_tokens < 1)
		return false;
	j->deny_tokens -= 1;
	return true;
}

void
job_refuse_flush(struct pjob *j, bool now)
{
	deny_held_flush(j);
	if (j->refused.count == 0 ||
	    (!now && elapsed_ms(&j->refused_since) < REFUSAL_BURST_MS))
		return;
	job_log(j, &j->refused);
	j->refused.count = 0;
	clock_gettime(CLOCK_MONOTONIC, &j->refused_since);
}

void
job_refuse(struct pjob *j, const char *reason, const char *detail)
{
	struct decision d = { .job = j->id,
		.conn = ++j->next_conn,
		.kind = "connect",
		.addr = "",
		.rule = -1,
		.reason = reason,
		.detail = detail };

	/* Within a burst of the same refusal: counted, told later. */
	if (j->refused.reason != NULL &&
	    strcmp(j->refused.reason, reason) == 0 &&
	    elapsed_ms(&j->refused_since) < REFUSAL_BURST_MS) {
		j->refused.count++;
		j->refused.conn = d.conn;
		return;
	}
	job_refuse_flush(j, true);
	job_log(j, &d);
	j->refused = d;
	j->refused.count = 0;
	clock_gettime(CLOCK_MONOTONIC, &j->refused_since);
}

/* The CA may sign only for the hosts whose TLS the proxy terminates; a
 * job without one gets a CA that can sign for nothing of use. */
static int
job_ca(struct pjob *j)
{
	const char *hosts[EGRESS_MAX_RULES];
	char names[EGRESS_MAX_RULES][EGRESS_HOST_MAX + 3];
	size_t n = 0;

	for (size_t i = 0; i < j->rules.n; i++) {
		const struct egress_rule *r = &j->rules.rule[i];
		if (r->tls != EGRESS_TLS_TERMINATE)
			continue;
		snprintf(names[n], sizeof(names[n]), "%s%s",
		    r->wildcard ? "*." : "", r->host);
		hosts[n] = names[n];
		n++;
	}
	if (n == 0)
		hosts[n++] = "invalid";
	return ca_new(j->id, hosts, n, j->deadline, &j->ca);
}

static int
job_channel(struct pjob *j)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, r;

	if (asprintf(&j->channel, "%s/%s.sock", j->p->channels, j->id) < 0) {
		j->channel = NULL;
		return -ENOMEM;
	}
	if (strlen(j->channel) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, j->channel, strlen(j->channel) + 1);
	(void)unlink(j->channel);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	/* From here the file is the channel's: every failure removes it
	 * (job_close does once the listener holds it). */
	if (chmod(j->channel, 0666) < 0) {
		r = -errno;
		close(fd);
		(void)unlink(j->channel);
		return r;
	}
	j->listener = evconnlistener_new(j->p->base, on_accept, j,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 128, fd);
	if (j->listener == NULL) {
		close(fd);
		(void)unlink(j->channel);
		return -ENOMEM;
	}
	j->accept_retry = evtimer_new(j->p->base, on_accept_retry, j);
	if (j->accept_retry == NULL)
		return -ENOMEM;
	evconnlistener_set_error_cb(j->listener, on_accept_error);
	return 0;
}

int
job_open(struct proxy *p, const char *id, const json_t *egress,
    struct pjob **ret, char *err, size_t errlen)
{
	struct pjob *j;
	json_t *deadline = json_object_get(egress, "deadline");
	int r;

	if (job_find(p, id) != NULL)
		return -EEXIST;
	if (!json_is_integer(deadline) ||
	    json_integer_value(deadline) <= time(NULL)) {
		snprintf(err, errlen, "the job's deadline has passed");
		return -EINVAL;
	}
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return -ENOMEM;
	j->p = p;
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->deadline = (time_t)json_integer_value(deadline);
	TAILQ_INIT(&j->conns);
	pool_init(&j->pool);
	buf_init(&j->log, JOB_LOG_MAX);
	r = egress_rules_load(json_object_get(egress, "egress"), &j->rules, err,
	    errlen);
	if (r < 0)
		goto fail;
	r = job_ca(j);
	if (r < 0) {
		snprintf(err, errlen, "could not make the job's CA");
		goto fail;
	}
	r = job_channel(j);
	if (r < 0) {
		snprintf(err, errlen, "could not open the channel: %s",
		    strerror(-r));
		goto fail;
	}
	TAILQ_INSERT_TAIL(&p->jobs, j, link);
	*ret = j;
	return 0;
fail:
	job_free(j);
	return r;
}

unsigned
job_close(struct pjob *j, const char *why)
{
	unsigned n = 0;

	if (j->listener != NULL) {
		evconnlistener_free(j->listener);
		j->listener = NULL;
		(void)unlink(j->channel);
	}
	if (j->accept_retry != NULL) {
		event_free(j->accept_retry);
		j->accept_retry = NULL;
	}
	if (j->trip != NULL) {
		event_free(j->trip);
		j->trip = NULL;
	}
	if (j->scan_refill != NULL) {
		event_free(j->scan_refill);
		j->scan_refill = NULL;
	}
	job_refuse_flush(j, true);
	while (!TAILQ_EMPTY(&j->conns)) {
		conn_close(TAILQ_FIRST(&j->conns));
		n++;
	}
	pool_clear(&j->pool);
	/* Only the job itself could ask, and it is gone: after the last
	 * connection's line. */
	denials_clear(&j->denials);
	/* Nothing released for it is kept past its right to use it. */
	inject_cache_clear(&j->secrets);
	reflect_set_clear(&j->released);
	/* Nor any answer on its tokens: a revoke from the feed comes
	 * here before the proxy acknowledges it. */
	tokcache_clear(&j->tokcache);
	/* The CA's key dies with the job's right to reach anything. */
	ca_free(j->ca);
	j->ca = NULL;
	if (!j->closed) {
		j->closed = true;
		j->closed_why = why;
		j->closed_at = time(NULL);
	}
	return n;
}

void
job_feed_lost(struct proxy *p)
{
	struct pjob *j;
	struct pconn *c, *next;

	TAILQ_FOREACH(j, &p->jobs, link)
	{
		/* A revoke may have been missed: every token is asked again. */
		tokcache_clear(&j->tokcache);
		for (c = TAILQ_FIRST(&j->conns); c != NULL; c = next) {
			next = conn_next(c);
			conn_feed_lost(c);
		}
	}
}

void
job_free(struct pjob *j)
{
	if (j == NULL)
		return;
	job_close(j, "deleted");
	egress_rules_free(&j->rules);
	free(j->channel);
	buf_free(&j->log);
	free(j);
}

void
job_sweep(struct proxy *p)
{
	struct pjob *j, *next;
	time_t now = time(NULL);

	for (j = TAILQ_FIRST(&p->jobs); j != NULL; j = next) {
		next = TAILQ_NEXT(j, link);
		pool_expire(&j->pool);
		job_refuse_flush(j, false);
		j->allow_early = 0; /* a sweep a second (proxy.c) */
		if (j->closed &&
		    now - j->closed_at >= j->p->cfg.closed_job_linger_s) {
			TAILQ_REMOVE(&p->jobs, j, link);
			job_free(j);
		}
	}
}

void
job_log(struct pjob *j, const struct decision *d)
{
	if (d->error) {
		j->upstream_errors++;
		j->p->upstream_errors++;
		job_write(j, d);
		return;
	}
	/* Kept for the job to ask why, whatever the budget of lines. */
	(void)denials_add(&j->denials, d);
	if (d->allow) {
		j->allowed++;
		j->p->allowed++;
		if (d->count == 0 && !allow_line_ok(j)) {
			allow_hold(j, d);
			return;
		}
	} else {
		j->denied += d->count > 0 ? d->count : 1;
		j->p->denied += d->count > 0 ? d->count : 1;
	}
	if (!d->allow && d->count == 0 && !deny_line_ok(j)) {
		size_t i, free_slot = DENY_HELD_MAX;
		for (i = 0; i < DENY_HELD_MAX; i++) {
			if (j->deny_held[i].reason != NULL &&
			    d->reason != NULL &&
			    strcmp(j->deny_held[i].reason, d->reason) == 0)
				break;
			if (j->deny_held[i].reason == NULL &&
			    free_slot == DENY_HELD_MAX)
				free_slot = i;
		}
		if (i == DENY_HELD_MAX)
			i = free_slot != DENY_HELD_MAX ? free_slot
						       : DENY_HELD_MAX - 1;
		if (j->deny_held[i].reason == NULL)
			j->deny_held[i].reason = d->reason;
		j->deny_held[i].kind = d->kind;
		j->deny_held[i].count++;
		return;
	}
	job_write(j, d);
}

static void
job_write(struct pjob *j, const struct decision *d)
{
	char *line = decision_format(d);
	size_t n;

	if (line == NULL) {
		log_error("decision_lost", "{s:s}", "job", j->id);
		return;
	}
	n = strlen(line);
	if (j->p->log_fd >= 0 && write(j->p->log_fd, line, n) != (ssize_t)n)
		log_error("decision_log_failed", "{s:s}", "error",
		    strerror(errno));
	if (write(STDERR_FILENO, line, n) < 0) {
		/* stderr gone: the file has it. */
	}
	if (buf_append(&j->log, line, n) < 0)
		j->log_dropped++;
	free(line);
}
