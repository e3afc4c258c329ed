/*
 * `cordon run`: one job in the foreground, the whole path of docs/design.md
 * and docs/launcher.md. The broker makes the job, the hatch its workspace,
 * the proxy its channel; the sandbox runs the command; one libevent loop
 * then relays the job's 127.0.0.1:3128 to its channel, streams its
 * output, renews its lease and watches the broker for a revoke, until the
 * first of: the command ends, the wall clock, the output cap, an
 * operator's revoke, a signal. Then the stop path, always in this order:
 * revoke at the broker, kill the sandbox, close the channel, seal.
 */
#include "diagnose.h"
#include "launcher.h"

#include "capture.h"
#include "cgroup.h"
#include "digest.h"
#include "envelope.h"
#include "http_client.h"
#include "log.h"
#include "manifest.h"
#include "relay.h"
#include "sandbox.h"
#include "stoppath.h"
#include "summary.h"
#include "util.h"
#include "watch.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CALL_MS 5000
#define MAX_INPUTS 64
#define OUT_CHUNK 4096 /* PIPE_BUF: on a writable pipe, never blocks */
#define OUT_PENDING_MAX (1024 * 1024)
#define OUT_READ 16384 /* one read of the job's output */
/* --json without the broker's output_kb: the manifest's default. */
#define OUT_KEEP_DEFAULT (1024 * 1024)

enum phase {
	PH_BROKER,
	PH_WORKSPACE,
	PH_CHANNEL,
	PH_SPAWN,
	PH_RUN,
	PH_REVOKE,
	PH_KILL,
	PH_CLOSE,
	PH_SEAL,
	PHASES
};
static const char *const phase_names[PHASES] = { "broker", "workspace",
	"channel", "spawn", "run", "revoke", "kill", "close", "seal" };

struct run {
	struct launcher_config *cfg;
	char key[128];
	bool json;
	const char *patch_out;

	json_t *job; /* the broker's answer to POST /v1/jobs */
	const char *id;
	json_t *ws; /* the hatch's workspace */
	bool ws_asked; /* the hatch was asked for one (it may exist even
			  when the answer never came) */
	char *channel;
	char *ca_pem;
	uid_t uid;
	int uid_fd; /* holds the uid's lock */
	int record_fd; /* holds the lock on the job's record (recover.c) */
	const char *record_patch; /* where the record says the patch goes */
	struct cgroup_job cg; /* the job's cgroups, or none and why */

	struct event_base *base;
	struct sandbox sb;
	struct relay *relay; /* 127.0.0.1:3128 inside, to the channel */
	struct jobnet *net; /* its resolver, 127.0.0.53:53 inside */
	struct watch *watch; /* the lease and the job's state, at the broker */
	struct event *out_ev, *err_ev, *wall, *sigs[3], *chld;
	/* Without --json: the cleaned output waiting for fd 1 and 2. */
	struct evbuffer *pending[2];
	struct event *write_ev[2];
	bool out_watched[2]; /* the loop watches fd i + 1 (else: written) */
	bool out_paused[2]; /* the job's pipe i is not read meanwhile */
	int out_fd, err_fd;
	struct buf out, err; /* kept for --json, capped */
	uint64_t out_bytes;
	bool out_cut[2]; /* --json: stdout's (0), stderr's (1) bytes lost */
	uint64_t output_cap;

	/* Milliseconds each phase took, for the result. */
	struct timespec lap_at, started;
	double laps[PHASES];

	bool stopping;
	const char *stop_reason;
	const char *start_error; /* why the job did not start; NULL: it did */
	int status; /* the sandbox's, as waitpid gives it */
	bool exited;
};

/* --- calls to the services ------------------------------------------------ */

/* Ends phase ph: the time since the last lap is its. */
static void
lap(struct run *r, enum phase ph)
{
	r->laps[ph] = elapsed_ms(&r->lap_at);
	clock_gettime(CLOCK_MONOTONIC, &r->lap_at);
}

static int
call(struct run *r, const char *base, const char *method, const char *path,
    json_t *body, struct httpc_answer *a)
{
	int rc =
	    httpc_request(base, method, path, r->key, NULL, body, CALL_MS, a);

	json_decref(body);
	return rc;
}

/* --- stopping ------------------------------------------------------------- */

static void
stop(struct run *r, const char *reason)
{
	if (r->stopping)
		return;
	r->stopping = true;
	r->stop_reason = reason;
	event_base_loopexit(r->base, NULL);
}

/* --- output --------------------------------------------------------------- */

/* Writes all of data to fd: false when its reader is gone (EPIPE, with
 * SIGPIPE handled: see launcher_run) or it fails otherwise. */
static bool
write_all(int fd, const char *data, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, data, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		data += k;
		n -= (size_t)k;
	}
	return true;
}

/*
 * The job's output, streamed (without --json) to the launcher's stdout
 * and stderr without ever blocking the loop: what is cleaned waits in
 * pending[i] and goes out in writes of OUT_CHUNK when the descriptor is
 * writable (on a pipe, such a write never blocks; the descriptors stay
 * blocking, for they are the caller's). Past OUT_PENDING_MAX waiting, the
 * job's pipe is no longer read: the job waits, not the launcher. A
 * descriptor the loop cannot watch (a regular file, /dev/null) is
 * written at once.
 */
static void
output_resume(struct run *r, int i)
{
	struct event *ev = i == 0 ? r->out_ev : r->err_ev;

	if (r->out_paused[i] &&
	    evbuffer_get_length(r->pending[i]) < OUT_PENDING_MAX / 2) {
		r->out_paused[i] = false;
		event_add(ev, NULL);
	}
}

static void
on_writable(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	int i = fd == STDERR_FILENO ? 1 : 0;
	struct evbuffer *p = r->pending[i];
	size_t n = evbuffer_get_length(p);
	const char *data;

	(void)what;
	if (n > OUT_CHUNK)
		n = OUT_CHUNK;
	data = (const char *)evbuffer_pullup(p, (ev_ssize_t)n);
	if (n > 0) {
		ssize_t k = write((int)fd, data, n);
		if (k < 0 && errno != EINTR) {
			/* Its reader is gone (`cordon run ... | head`): the
			 * job is stopped, through the whole stop path. */
			evbuffer_drain(p, evbuffer_get_length(p));
			event_del(r->write_ev[i]);
			stop(r, "output_closed");
			return;
		}
		if (k > 0)
			evbuffer_drain(p, (size_t)k);
	}
	if (evbuffer_get_length(p) == 0)
		event_del(r->write_ev[i]);
	output_resume(r, i);
}

/* Queues text for fd 1 (i 0) or 2 (i 1): false when its reader is gone. */
static bool
output_queue(struct run *r, int i, const char *text)
{
	if (!r->out_watched[i])
		return write_all(i + 1, text, strlen(text));
	if (evbuffer_add(r->pending[i], text, strlen(text)) < 0)
		return false;
	event_add(r->write_ev[i], NULL);
	if (evbuffer_get_length(r->pending[i]) > OUT_PENDING_MAX) {
		r->out_paused[i] = true;
		event_del(i == 0 ? r->out_ev : r->err_ev);
	}
	return true;
}

/* After the stop path: what waits, and what the job's pipes still hold,
 * written out (blocking: the job is over). */
static void
output_flush(struct run *r)
{
	char buf[16384];

	for (int i = 0; i < 2 && !r->json; i++) {
		struct evbuffer *p = r->pending[i];
		int fd = i == 0 ? r->out_fd : r->err_fd;
		size_t n = p != NULL ? evbuffer_get_length(p) : 0;
		bool ok = n == 0 ||
		    write_all(i + 1, (const char *)evbuffer_pullup(p, -1), n);
		ssize_t k;

		if (p != NULL)
			evbuffer_drain(p, n);
		/* Its writers are dead: the pipe ends (or, should one have
		 * outlived the kill, is read no further than it holds). */
		if (fd >= 0)
			(void)fcntl(fd, F_SETFL, O_NONBLOCK);
		while (ok && fd >= 0 && (k = read(fd, buf, sizeof(buf))) > 0) {
			json_t *c = envelope_clean((unsigned char *)buf,
			    (size_t)k, (size_t)k);
			const char *t =
			    json_string_value(json_object_get(c, "text"));
			ok = t == NULL || write_all(i + 1, t, strlen(t));
			json_decref(c);
		}
	}
}

static void
on_output(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	char buf[OUT_READ];
	ssize_t n = read(fd, buf, sizeof(buf));
	bool is_err = fd == r->err_fd;

	(void)what;
	if (n <= 0) {
		event_del(is_err ? r->err_ev : r->out_ev);
		return;
	}
	r->out_bytes += (uint64_t)n;
	launcher_output_tee(is_err, buf, (size_t)n); /* serve follows it */
	if (r->json)
		r->out_cut[is_err] |=
		    buf_append(is_err ? &r->err : &r->out, buf, (size_t)n) < 0;
	else {
		/* What the job wrote is data an attacker chose: no escape
		 * sequence reaches the terminal. */
		json_t *c =
		    envelope_clean((unsigned char *)buf, (size_t)n, (size_t)n);
		const char *t = json_string_value(json_object_get(c, "text"));
		bool gone = t != NULL && !output_queue(r, is_err ? 1 : 0, t);
		json_decref(c);
		if (gone) {
			/* Its reader is gone (`cordon run ... | head`): the job
			 * is stopped, through the whole stop path. */
			stop(r, "output_closed");
			return;
		}
	}
	if (r->output_cap > 0 && r->out_bytes > r->output_cap)
		stop(r, "output_limit");
}

/* --- timers and signals --------------------------------------------------- */

static void
on_wall(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stop(arg, "wall_clock");
}

/* The broker says the job no longer runs (watch.c). */
static void
on_broker_stop(void *arg, const char *reason)
{
	stop(arg, reason);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct run *r = arg;

	(void)what;
	if (sig == SIGCHLD) {
		int st = sandbox_wait(&r->sb, true);
		if (st >= 0) {
			r->status = st;
			r->exited = true;
			stop(r, "exit");
		}
		return;
	}
	/* SIGTERM is how cordon serve (and so cordon stop) asks. */
	stop(r, sig == SIGTERM ? "stopped" : "interrupted");
}

/* --- setting up ----------------------------------------------------------- */

/*
 * A uid of the configured range for this job alone, held by a lock on a
 * file named for it for as long as the launcher (and the sandbox's init,
 * which shares the descriptor) lives: a launcher that dies frees its uid
 * with it, and no two jobs ever share one.
 */
static int
take_uid(struct run *r)
{
	char dir[400], path[512];
	unsigned start;

	snprintf(dir, sizeof(dir), "%s/uids", r->cfg->common.runtime_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	start = (unsigned)getpid();
	for (long long i = 0; i < r->cfg->uid_count; i++) {
		uid_t uid = (uid_t)(r->cfg->uid_base +
		    (long long)((start + (unsigned long long)i) %
			(unsigned long long)r->cfg->uid_count));
		snprintf(path, sizeof(path), "%s/%u", dir, uid);
		int fd =
		    open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			continue;
		}
		if (ftruncate(fd, 0) == 0)
			dprintf(fd, "%d %s\n", (int)getpid(), r->id);
		r->uid_fd = fd;
		r->uid = uid;
		return 0;
	}
	return -EBUSY;
}

/* Right before the sandbox is told to go: the record no longer says the
 * job never ran, so that a recover after a crash seals its workspace. */
static int
record_started(void *arg)
{
	struct run *r = arg;

	return launcher_record_started(r->record_fd, r->id, r->record_patch);
}

/* Exactly the manifest's env and what the launcher sets itself. */
static char **
job_env(struct run *r)
{
	json_t *env = json_object_get(r->job, "env");
	size_t n = json_object_size(env), k = 0;
	size_t nfixed = 0;
	while (manifest_launcher_env[nfixed] != NULL)
		nfixed++;
	char **e = calloc(n + nfixed + 2, sizeof(char *));
	const char *name;
	json_t *v;

	if (e == NULL)
		return NULL;
	json_object_foreach(env, name, v)
	{
		if (json_is_string(v) &&
		    asprintf(&e[k], "%s=%s", name, json_string_value(v)) > 0)
			k++;
	}
	for (const char *const *f = manifest_launcher_env; *f != NULL; f++)
		e[k++] = strdup(*f);
	if (asprintf(&e[k], "CORDON_JOB=%s", r->id) > 0)
		k++;
	e[k] = NULL;
	return e;
}

static void
strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static long long
limit(const struct run *r, const char *name)
{
	json_t *v = json_object_get(json_object_get(r->job, "limits"), name);

	return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* --- the stop path -------------------------------------------------------- */

/* A call to the proxy on a thread of its own, while the main thread
 * calls the hatch: the two never need each other's answer. */
struct proxy_call {
	struct run *r;
	pthread_t thread;
	bool threaded;
	const char *method;
	char path[160];
	int rc;
	struct httpc_answer a;
	double ms;
};

static void *
proxy_call_run(void *arg)
{
	struct proxy_call *pc = arg;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pc->rc =
	    call(pc->r, pc->r->cfg->proxy, pc->method, pc->path, NULL, &pc->a);
	pc->ms = elapsed_ms(&t0);
	return NULL;
}

static void
proxy_call_start(struct proxy_call *pc)
{
	pc->threaded =
	    pthread_create(&pc->thread, NULL, proxy_call_run, pc) == 0;
	if (!pc->threaded)
		proxy_call_run(pc);
}

static void
proxy_call_wait(struct proxy_call *pc)
{
	if (pc->threaded)
		pthread_join(pc->thread, NULL);
	pc->threaded = false;
}

struct outcome {
	struct stoppath_outcome s; /* stoppath.c's */
	struct relay_counts relay;
	struct dns_counts dns;
	struct capture_counts capture;
};

/* Where the patch goes: --patch-out, or the state directory. */
static void
patch_path(const struct run *r, char *out, size_t len)
{
	if (r->patch_out != NULL)
		snprintf(out, len, "%s", r->patch_out);
	else
		snprintf(out, len, "%s/%s.patch", r->cfg->common.state_dir,
		    r->id);
}

/* Step 2 of the stop path: every process of the sandbox. */
static void
kill_job(void *arg)
{
	struct run *r = arg;

	cgroup_job_kill(&r->cg);
	if (r->sb.pid > 0) {
		sandbox_kill(&r->sb);
		int st = sandbox_wait(&r->sb, false);
		if (st >= 0 && !r->exited) {
			r->status = st;
			r->exited = true;
		}
	}
	/* What its cgroups counted, and whether its disk is full, before
	 * they go. */
	cgroup_job_end(&r->cg,
	    json_string_value(json_object_get(r->ws, "upper")));
}

static void
stop_path(struct run *r, struct outcome *o)
{
	char dest[PATH_MAX];

	/* The relay's connections go before anything else: the job's
	 * network is cut, and their descriptors are the stop path's. */
	relay_counts(r->relay, &o->relay);
	jobnet_dns_counts(r->net, &o->dns);
	jobnet_capture_counts(r->net, &o->capture);
	jobnet_stop(r->net); /* its held slots are the relay's */
	relay_free(r->relay);
	r->relay = NULL;
	watch_free(r->watch);
	r->watch = NULL;
	patch_path(r, dest, sizeof(dest));
	struct stoppath_job j = {
		.cfg = r->cfg,
		.key = r->key,
		.job = r->id,
		.reason = r->stop_reason,
		.patch = dest,
		.channel = r->channel != NULL,
		.workspace = r->ws_asked,
		/* Until the sandbox's init was told to go, nothing of the
		 * job ran: its workspace holds nothing of its. */
		.never_ran = !r->sb.go_given,
		.kill = kill_job,
		.kill_arg = r,
		.record_fd = r->record_fd,
	};
	stoppath_run(&j, &o->s);
	r->record_fd = -1; /* closed, and the record gone when finished */
	if (r->uid_fd >= 0)
		close(r->uid_fd);
	r->uid_fd = -1;
	r->laps[PH_REVOKE] = o->s.ms_revoke;
	r->laps[PH_KILL] = o->s.ms_kill;
	r->laps[PH_CLOSE] = o->s.ms_close;
	r->laps[PH_SEAL] = o->s.ms_seal;
}

/* --- flags ---------------------------------------------------------------- */

static const char run_usage[] =
    "usage: cordon run --manifest NAME [--input SRC[:DST]]... "
    "[--patch-out FILE]\n"
    "                  [--canaries N] [--json] [--config FILE] "
    "[-- CMD ARGS...]\n";

struct run_flags {
	const char *manifest, *config, *patch_out;
	bool json;
	int id_fd; /* told the job's id once the broker made it; -1: none */
	int canaries; /* planted in the sandbox; -1: as the manifest says */
	const char *inputs[MAX_INPUTS];
	size_t ninputs;
	char **cmd;
};

static int
parse_flags(int argc, char **argv, struct run_flags *f)
{
	static const struct option opts[] = {
		{ "manifest", required_argument, NULL, 'm' },
		{ "input", required_argument, NULL, 'i' },
		{ "patch-out", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "config", required_argument, NULL, 'c' },
		{ "id-fd", required_argument, NULL, 'f' },
		{ "canaries", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			f->manifest = optarg;
			break;
		case 'i':
			if (f->ninputs == MAX_INPUTS) {
				fprintf(stderr,
				    "cordon run: at most %d inputs\n",
				    MAX_INPUTS);
				return EXIT_USAGE;
			}
			f->inputs[f->ninputs++] = optarg;
			break;
		case 'p':
			if (strlen(optarg) > 1024) {
				fprintf(stderr,
				    "cordon run: --patch-out is longer than "
				    "1024 bytes\n");
				return EXIT_USAGE;
			}
			f->patch_out = optarg;
			break;
		case 'j':
			f->json = true;
			break;
		case 'c':
			f->config = optarg;
			break;
		case 'f': {
			char *end;
			long fd;

			errno = 0;
			fd = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    fd < 0 || fd > INT_MAX) {
				fprintf(stderr,
				    "cordon run: --id-fd is a descriptor "
				    "number, not \"%s\"\n",
				    optarg);
				return EXIT_USAGE;
			}
			f->id_fd = (int)fd;
			break;
		}
		case 'k':
			if (optarg[0] < '0' || optarg[0] > '8' ||
			    optarg[1] != '\0') {
				fprintf(stderr,
				    "cordon run: --canaries is a count from 0 "
				    "to 8\n");
				return EXIT_USAGE;
			}
			f->canaries = optarg[0] - '0';
			break;
		case 'h': /* cordon.c answers it first; the same text */
			return launcher_help("run", stdout) == 0 ? 0
								 : EXIT_USAGE;
		default:
			fprintf(stderr,
			    "cordon run: unknown or incomplete flag %s\n%s",
			    argv[optind - 1], run_usage);
			return EXIT_USAGE;
		}
	}
	if (f->manifest == NULL) {
		fprintf(stderr, "cordon run: --manifest is required\n%s",
		    run_usage);
		return EXIT_USAGE;
	}
	f->cmd = optind < argc ? argv + optind : NULL;
	if (f->cmd != NULL && strchr(f->cmd[0], '/') == NULL) {
		/* The job's PATH, looked up here: /usr is the host's. */
		static const char *const dirs[] = { "/usr/local/bin",
			"/usr/bin", "/bin" };
		char path[PATH_MAX] = "";
		for (size_t i = 0; i < ARRAY_SIZE(dirs) && path[0] == '\0'; i++)
			if ((size_t)snprintf(path, sizeof(path), "%s/%s",
				dirs[i], f->cmd[0]) >= sizeof(path) ||
			    access(path, X_OK) != 0)
				path[0] = '\0';
		fprintf(stderr,
		    "cordon run: the command %s is not a path (the sandbox "
		    "searches no PATH): give it as %s\n",
		    f->cmd[0], path[0] != '\0' ? path : "an absolute path");
		return EXIT_USAGE;
	}
	return -1;
}

static json_t *
inputs_json(const struct run_flags *f)
{
	json_t *list = json_array();

	for (size_t i = 0; i < f->ninputs; i++) {
		const char *s = f->inputs[i], *colon = strchr(s, ':');
		const char *base = strrchr(s, '/');
		json_t *in = colon != NULL
		    ? json_pack("{s:s%, s:s}", "src", s, (size_t)(colon - s),
			  "dst", colon + 1)
		    : json_pack("{s:s, s:s}", "src", s, "dst",
			  base != NULL && base[1] != '\0' ? base + 1 : s);
		json_array_append_new(list, in);
	}
	return list;
}

/* --- the report ----------------------------------------------------------- */

static int
exit_code(const struct run *r)
{
	if (!r->exited)
		return STOPPATH_EXIT_LAUNCHER;
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status)
				    : 128 + WTERMSIG(r->status);
}

static json_t *
canary_digests(const json_t *job)
{
	json_t *list = json_object_get(job, "canaries"), *v, *out;
	size_t i;

	if (json_array_size(list) == 0 || (out = json_array()) == NULL)
		return NULL;
	json_array_foreach(list, i, v)
	{
		char hex[SHA256_HEX_LEN + 1];
		const char *t = json_string_value(v) ?: "";

		sha256_hex(t, strlen(t), hex);
		json_array_append_new(out, json_string(hex));
	}
	return out;
}

static void
report(struct run *r, const struct outcome *o)
{
	int code = exit_code(r);

	if (r->json) {
		/* Without the broker's limits, the manifest's default. */
		long long lo, hi, kb = 1024;
		(void)manifest_limit_range("output_kb", &lo, &hi, &kb);
		json_t *out = envelope_make((unsigned char *)r->out.data,
		    r->out.len, (unsigned char *)r->err.data, r->err.len,
		    r->output_cap > 0 ? r->output_cap : (uint64_t)kb * 1024);
		/* Bytes past what the launcher keeps are cut too. */
		static const char *const stream[2] = { "stdout", "stderr" };
		for (int i = 0; i < 2; i++)
			if (r->out_cut[i])
				json_object_set_new(json_object_get(out,
							stream[i]),
				    "truncated", json_true());
		json_t *j =
		    json_pack("{s:s, s:i, s:s, s:b, s:I, s:s?, s:s?, "
			      "s:{s:I, s:I, s:I}, s:{s:s, s:s, s:s, s:s, s:s}, "
			      "s:o, s:s?}",
			"job", r->id, "exit_code", code, "stop_reason",
			r->stop_reason, "revoked", o->s.revoke_ok,
			"tokens_revoked", (json_int_t)o->s.tokens_revoked,
			"patch", o->s.c.patch[0] != '\0' ? o->s.c.patch : NULL,
			"verdict",
			o->s.c.verdict[0] != '\0' ? o->s.c.verdict : NULL,
			"egress", "allowed", (json_int_t)o->s.allowed, "denied",
			(json_int_t)o->s.denied, "upstream_errors",
			(json_int_t)o->s.upstream_errors, "limits",
			"wall_clock", "launcher_timer", "memory",
			r->sb.limits.memory, "pids", r->sb.limits.pids, "disk",
			"hatch_tmpfs", "output", "launcher_count", "output",
			out, "revoke_error",
			o->s.revoke_ok ? NULL : o->s.revoke_error);
		cgroup_job_report(&r->cg, j, r->stop_reason, o->s.c.report);
		/* A job that never ran has no patch and no verdict: it says
		 * so, and why. */
		json_object_set_new(j, "started", json_boolean(r->sb.go_given));
		if (r->start_error != NULL)
			json_object_set_new(j, "start_error",
			    json_string(r->start_error));
		json_object_set_new(j, "upstream_revocations",
		    stoppath_upstream_json(&o->s));
		if (o->s.c.kept[0] != '\0')
			json_object_set_new(j, "workspace_kept",
			    json_string(o->s.c.kept));
		/* A close that failed gives no figure, and says so. */
		if (!o->s.egress_known) {
			json_object_set_new(j, "egress", json_null());
			json_object_set_new(j, "close_error",
			    json_string(o->s.close_error));
		}
		json_object_set_new(j, "relay",
		    json_pack("{s:I, s:I, s:i}", "accepted",
			(json_int_t)o->relay.accepted, "refused",
			(json_int_t)o->relay.refused, "max", RELAY_MAX_CONNS));
		json_object_set_new(j, "dns",
		    json_pack("{s:I, s:I, s:I, s:I}", "answered",
			(json_int_t)o->dns.answered, "nodata",
			(json_int_t)o->dns.nodata, "refused",
			(json_int_t)o->dns.refused, "bad",
			(json_int_t)o->dns.bad));
		json_object_set_new(j, "capture",
		    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "captured",
			(json_int_t)o->capture.captured, "refused",
			(json_int_t)o->capture.refused, "direct",
			(json_int_t)o->capture.direct, "unannounced",
			(json_int_t)o->capture.unannounced, "accept_paused",
			(json_int_t)o->capture.accept_paused, "local_closed",
			(json_int_t)o->capture.local_closed));
		json_t *t = json_object();
		/* The workspace and the channel overlap: the total is the
		 * time from the first call to the seal, not their sum. */
		double total = elapsed_ms(&r->started);
		for (int i = 0; i < PHASES; i++)
			json_object_set_new(t, phase_names[i],
			    json_real(
				(double)(long long)(r->laps[i] * 1000) / 1000));
		json_object_set_new(t, "total",
		    json_real((double)(long long)(total * 1000) / 1000));
		json_object_set_new(j, "ms", t);
		/* What the hatch flagged and what the patch holds. */
		if (o->s.c.report != NULL) {
			json_object_set(j, "flags",
			    json_object_get(o->s.c.report, "flags"));
			json_object_set(j, "changes",
			    json_object_get(o->s.c.report, "changes"));
			/* What return.exclude left out, never silently. */
			json_t *ex = json_object_get(o->s.c.report, "excluded");
			if (ex != NULL)
				json_object_set(j, "excluded", ex);
		}
		/* The canaries planted, as digests: whoever holds a token
		 * can tell whether it was one of them. */
		json_t *digests = canary_digests(r->job);
		if (digests != NULL)
			json_object_set_new(j, "canary_sha256", digests);
		char *text = j != NULL
		    ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6))
		    : NULL;
		if (text != NULL)
			printf("%s\n", text);
		free(text);
		json_decref(j);
		return;
	}
	const char *hit = cgroup_job_hit(&r->cg, r->stop_reason, o->s.c.report);
	char egress[300], why[600], excluded[100], upstream[160];
	summary_verdict_reason(o->s.c.report, why, sizeof(why));
	summary_excluded(o->s.c.report, excluded, sizeof(excluded));
	json_t *up = stoppath_upstream_json(&o->s);
	summary_upstream(up, upstream, sizeof(upstream));
	if (o->s.egress_known)
		snprintf(egress, sizeof(egress),
		    "%lld allowed, %lld denied, %lld upstream error(s)",
		    o->s.allowed, o->s.denied, o->s.upstream_errors);
	else
		snprintf(egress, sizeof(egress), "unknown (%s)",
		    o->s.close_error);
	fprintf(stderr,
	    "cordon: job %s stopped (%s): exit %d; %lld token(s) revoked%s%s; "
	    "egress %s; relay %llu accepted, %llu refused; patch %s (%s%s%s); "
	    "%s%s%s%s\n",
	    r->id, r->stop_reason, code, o->s.tokens_revoked,
	    o->s.revoke_ok ? "" : " -- REVOKE FAILED", upstream, egress,
	    (unsigned long long)o->relay.accepted,
	    (unsigned long long)o->relay.refused,
	    o->s.c.patch[0] != '\0' ? o->s.c.patch : "none",
	    o->s.c.verdict[0] != '\0' ? o->s.c.verdict
		: r->sb.go_given      ? "no verdict"
				      : "the job never ran",
	    why[0] != '\0' ? ": " : "", why, excluded,
	    excluded[0] != '\0' ? "; " : "",
	    hit != NULL ? "limit hit: " : "no limit hit", hit ?: "");
	if (!o->s.revoke_ok)
		fprintf(stderr, "cordon: the revoke failed: %s\n",
		    o->s.revoke_error);
	/* A failed upstream revocation is told, never hidden. */
	size_t ui;
	json_t *ue;
	json_array_foreach(up, ui, ue)
	{
		if (!json_is_true(json_object_get(ue, "ok")))
			fprintf(stderr,
			    "cordon: the upstream credential of secret %s (%s) "
			    "was not revoked at its issuer: %s\n",
			    json_string_value(json_object_get(ue, "secret")),
			    json_string_value(json_object_get(ue, "kind")),
			    json_string_value(json_object_get(ue, "error")));
	}
	json_decref(up);
	if (o->s.c.kept[0] != '\0')
		fprintf(stderr,
		    "cordon: the workspace of %s is kept at the hatch: %s\n",
		    r->id, o->s.c.kept);
}

/* --- the run -------------------------------------------------------------- */

static int
start(struct run *r, const struct run_flags *f, char *err, size_t errlen)
{
	struct httpc_answer a = { 0 };
	int pipes[2][2] = { { -1, -1 }, { -1, -1 } };
	int rc;

	/* 2. The workspace and the channel, asked for at once: neither
	 * needs the other. */
	struct proxy_call cc = { .r = r, .method = "POST" };
	struct timespec t0;

	snprintf(cc.path, sizeof(cc.path), "/v1/jobs/%s", r->id);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	proxy_call_start(&cc);
	r->ws_asked = true;
	/* The hatch reads the job's return policy and disk cap from the
	 * broker: the launcher holds no policy. */
	rc = call(r, r->cfg->hatch, "POST", "/v1/workspaces",
	    json_pack("{s:s, s:o}", "job", r->id, "inputs", inputs_json(f)),
	    &a);
	r->laps[PH_WORKSPACE] = elapsed_ms(&t0);
	proxy_call_wait(&cc);
	r->laps[PH_CHANNEL] = cc.ms;
	clock_gettime(CLOCK_MONOTONIC, &r->lap_at);
	/* Whatever was made is undone by the stop path, even if the other
	 * was refused. */
	if (rc == 0 && a.status == 201)
		r->ws = json_incref(a.json);
	if (cc.rc == 0 && cc.a.status == 201) {
		r->channel = strdup(
		    json_string_value(json_object_get(cc.a.json, "channel"))
			?: "");
		r->ca_pem = strdup(
		    json_string_value(json_object_get(cc.a.json, "ca_pem"))
			?: "");
	}
	if (rc < 0 || a.status != 201) {
		snprintf(err, errlen, "the hatch: %s",
		    rc < 0 ? "no answer" : launcher_answer_message(&a));
		rc = -EIO;
	} else if (cc.rc < 0 || cc.a.status != 201) {
		snprintf(err, errlen, "the proxy: %s",
		    cc.rc < 0 ? "no answer" : launcher_answer_message(&cc.a));
		rc = -EIO;
	}
	if (a.status != 0 || a.json != NULL || a.body.data != NULL)
		httpc_answer_free(&a);
	if (cc.rc == 0)
		httpc_answer_free(&cc.a);
	if (rc < 0)
		return rc;

	/* 3. The sandbox. */
	const char *lower = json_string_value(json_object_get(r->ws, "lower"));
	const char *upper = json_string_value(json_object_get(r->ws, "upper"));
	const char *work = json_string_value(json_object_get(r->ws, "work"));
	if (lower == NULL || upper == NULL || work == NULL) {
		snprintf(err, errlen, "the hatch gave no directories");
		return -EIO;
	}
	/* The directories here must be the ones the hatch made: a hatch
	 * whose mounts do not reach this mount namespace leaves empty ones
	 * (the job would run on nothing, and its writes be lost). */
	json_t *ids = json_object_get(r->ws, "ids");
	const char *dirs[] = { lower, upper, work };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		const char *which = i == 0 ? "lower"
		    : i == 1               ? "upper"
					   : "work";
		const char *id = json_string_value(json_object_get(ids, which));
		if (id == NULL) {
			snprintf(err, errlen,
			    "the hatch gave no identity (ids.%s) for its "
			    "workspace: a cordon-hatch older than this cordon? "
			    "run the hatch of the same build",
			    which);
			return -EPROTO;
		}
		if ((rc = sandbox_workspace_check(dirs[i], id)) < 0) {
			snprintf(err, errlen,
			    "the hatch's workspace %s is not the one the hatch "
			    "made (%s, in this mount namespace): the hatch's "
			    "mounts do not reach the launcher; run the hatch "
			    "in the host's mount namespace, and cordon run "
			    "where its mounts propagate "
			    "(docs/operations.md#the-hatchs-mounts)",
			    dirs[i],
			    rc == -ESTALE ? "another directory is there"
				: rc == -EINVAL
				? "the hatch's id is not DEV:INO"
				: strerror(-rc));
			return rc;
		}
	}
	if ((rc = take_uid(r)) < 0) {
		if (rc == -EBUSY)
			snprintf(err, errlen,
			    "no free uid for the job: all %lld of uid_base "
			    "%lld.. are held by running jobs (raise uid_count)",
			    (long long)r->cfg->uid_count,
			    (long long)r->cfg->uid_base);
		else
			snprintf(err, errlen,
			    "a uid for the job: the lock files in %s/uids: %s",
			    r->cfg->common.runtime_dir, strerror(-rc));
		return rc;
	}
	if ((rc = sandbox_own_tree(lower, upper, work, r->uid, r->uid)) < 0) {
		snprintf(err, errlen,
		    "handing the workspace (%s, its upper and work) to the "
		    "job's uid %u: %s",
		    lower, (unsigned)r->uid, strerror(-rc));
		return rc;
	}
	char **envp = job_env(r);
	char **argv = f->cmd;
	char **mine = NULL;
	if (argv == NULL) {
		json_t *cmd = json_object_get(r->job, "command"), *v;
		size_t i;
		mine = calloc(json_array_size(cmd) + 1, sizeof(char *));
		if (mine != NULL)
			json_array_foreach(cmd, i, v) mine[i] =
			    strdup(json_string_value(v) ?: "");
		argv = mine;
	}
	if (envp == NULL || argv == NULL || argv[0] == NULL) {
		strv_free(envp);
		strv_free(mine);
		snprintf(err, errlen, "no command to run");
		return -EINVAL;
	}
	/* Its cgroups (else its cgroup says why, and rlimits apply). */
	(void)cgroup_job_create(&r->cg, r->cfg->cgroup_root, NULL, r->id,
	    json_object_get(r->job, "limits"));
	if (pipe2(pipes[0], O_CLOEXEC) < 0 || pipe2(pipes[1], O_CLOEXEC) < 0) {
		strv_free(envp);
		strv_free(mine);
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	/* The broker's canaries for this job, as a decoy file. */
	char canaries[1024] = "";
	json_t *cv;
	size_t ci;
	json_array_foreach(json_object_get(r->job, "canaries"), ci, cv)
	{
		size_t used = strlen(canaries);
		snprintf(canaries + used, sizeof(canaries) - used,
		    "CORDON_%s_TOKEN=%s\n", ci == 0 ? "DEPLOY" : "ADMIN",
		    json_string_value(cv) ?: "");
	}
	/* The broker's start tokens (mint_at_start), for the job's
	 * /run/cordon/tokens.json: never its environment. */
	json_t *minted = json_object_get(r->job, "tokens");
	minted = json_array_size(minted) > 0
	    ? json_pack("{s:O}", "tokens", minted)
	    : NULL;
	char *tokens = minted != NULL ? json_dumps(minted, JSON_COMPACT) : NULL;
	json_decref(minted);
	/* The names its resolver answers: its manifest's egress hosts. */
	(void)jobnet_fetch(r->cfg->broker, r->key, r->job, &r->net);
	struct sandbox_spec spec = {
		.tokens_json = tokens,
		.canaries_text = canaries[0] != '\0' ? canaries : NULL,
		.argv = argv,
		.envp = envp,
		.lower = lower,
		.upper = upper,
		.work = work,
		.ca_pem = r->ca_pem,
		.uid = r->uid,
		.gid = r->uid,
		.memory_mb = limit(r, "memory_mb"),
		.pids = limit(r, "pids"),
		.cgroup_dir = cgroup_job_dirs(&r->cg),
		.out_fd = pipes[0][1],
		.err_fd = pipes[1][1],
		.secret = r->key,
		.secret_len = sizeof(r->key),
		.in_netns = jobnet_enter, /* NULL net: the spawn fails */
		.netns_arg = r->net,
		.before_go = record_started,
		.go_arg = r,
	};
	rc = sandbox_spawn(&spec, &r->sb, err, errlen);
	if (rc < 0) {
		/* The step that failed says little; the host's reason more. */
		char why[1024];
		size_t used = strlen(err);

		if (diagnose_sandbox("", why, sizeof(why)) > 0 && used < errlen)
			snprintf(err + used, errlen - used, " (this host: %s)",
			    why);
	}
	explicit_bzero(canaries, sizeof(canaries));
	if (tokens != NULL)
		explicit_bzero(tokens, strlen(tokens));
	free(tokens);
	lap(r, PH_SPAWN);
	close(pipes[0][1]);
	close(pipes[1][1]);
	strv_free(envp);
	strv_free(mine);
	r->out_fd = pipes[0][0];
	r->err_fd = pipes[1][0];
	return rc;
}

/* A stop asked for before the loop watches for one (serve stops a job it
 * has just started, while its workspace, channel and sandbox are being
 * made): kept, and carried out as soon as the loop runs, through the
 * whole stop path. Without it SIGTERM's default killed cordon run there,
 * its result lost and its job left for recover. */
static volatile sig_atomic_t early_signal;

static void
on_early_signal(int sig)
{
	early_signal = sig;
}

static int
loop(struct run *r)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct timeval wall = { limit(r, "wall_seconds") > 0
		    ? (time_t)limit(r, "wall_seconds")
		    : 900,
		0 };
	json_t *lease = json_object_get(r->job, "lease_seconds");
	long long lease_ms =
	    json_is_integer(lease) ? json_integer_value(lease) * 1000 : 30000;

	int rc = relay_new(r->base, r->sb.proxy_fd, r->channel, &r->relay);
	r->sb.proxy_fd = -1; /* taken, whatever the outcome */
	if (rc == 0)
		rc = jobnet_start(r->net, r->base, r->relay);
	if (rc < 0)
		return rc;
	rc = watch_start(r->base, r->cfg->broker, r->key, r->id, lease_ms,
	    on_broker_stop, r, &r->watch);
	if (rc < 0)
		return rc;
	r->out_ev =
	    event_new(r->base, r->out_fd, EV_READ | EV_PERSIST, on_output, r);
	r->err_ev =
	    event_new(r->base, r->err_fd, EV_READ | EV_PERSIST, on_output, r);
	r->wall = evtimer_new(r->base, on_wall, r);
	r->chld = evsignal_new(r->base, SIGCHLD, on_signal, r);
	if (r->out_ev == NULL || r->err_ev == NULL || r->wall == NULL ||
	    r->chld == NULL)
		return -ENOMEM;
	event_add(r->out_ev, NULL);
	event_add(r->err_ev, NULL);
	for (int i = 0; i < 2 && !r->json; i++) {
		r->pending[i] = evbuffer_new();
		r->write_ev[i] = event_new(r->base, i + 1,
		    EV_WRITE | EV_PERSIST, on_writable, r);
		if (r->pending[i] == NULL || r->write_ev[i] == NULL)
			return -ENOMEM;
		/* epoll refuses a regular file (and /dev/null): those are
		 * written at once, and never block for long. */
		r->out_watched[i] = event_add(r->write_ev[i], NULL) == 0;
		if (r->out_watched[i])
			event_del(r->write_ev[i]);
	}
	event_add(r->wall, &wall);
	event_add(r->chld, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		r->sigs[i] = evsignal_new(r->base, sigs[i], on_signal, r);
		if (r->sigs[i] != NULL)
			event_add(r->sigs[i], NULL);
	}
	/* Asked to stop before the loop watched for it: stopped now. */
	if (early_signal != 0)
		stop(r, early_signal == SIGTERM ? "stopped" : "interrupted");
	/* The command may have ended before SIGCHLD was watched. */
	int st = sandbox_wait(&r->sb, true);
	if (st >= 0) {
		r->status = st;
		r->exited = true;
		stop(r, "exit");
	} else {
		event_base_dispatch(r->base);
	}
	/* What the job wrote before it ended is still in the pipes. */
	if (r->exited)
		for (int i = 0; i < 64; i++) {
			if (event_base_loop(r->base, EVLOOP_NONBLOCK) != 0)
				break;
			if (!event_pending(r->out_ev, EV_READ, NULL) &&
			    !event_pending(r->err_ev, EV_READ, NULL))
				break;
		}
	return 0;
}

static void
run_free(struct run *r)
{
	jobnet_free(r->net);
	relay_free(r->relay);
	watch_free(r->watch);
	struct event *evs[] = { r->out_ev, r->err_ev, r->wall, r->chld,
		r->sigs[0], r->sigs[1], r->sigs[2], r->write_ev[0],
		r->write_ev[1] };
	for (size_t i = 0; i < ARRAY_SIZE(evs); i++)
		if (evs[i] != NULL)
			event_free(evs[i]);
	for (int i = 0; i < 2; i++)
		if (r->pending[i] != NULL)
			evbuffer_free(r->pending[i]);
	if (r->base != NULL)
		event_base_free(r->base);
	if (r->sb.proxy_fd >= 0)
		close(r->sb.proxy_fd);
	if (r->out_fd >= 0)
		close(r->out_fd);
	if (r->err_fd >= 0)
		close(r->err_fd);
	json_decref(r->job);
	json_decref(r->ws);
	free(r->channel);
	free(r->ca_pem);
	buf_free(&r->out);
	buf_free(&r->err);
	explicit_bzero(r->key, sizeof(r->key));
}

/* When the job could not start: why, if the broker says it was stopped
 * meanwhile (an orchestrator's revoke as the proxy was asked for its
 * channel, a canary, its deadline); NULL when it still runs or the broker
 * does not say. */
static const char *
stopped_meanwhile(struct run *r)
{
	struct httpc_answer a;
	const char *why = NULL;
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s", r->id);
	if (call(r, r->cfg->broker, "GET", path, NULL, &a) < 0)
		return NULL;
	const char *state = json_string_value(json_object_get(a.json, "state"));
	if (a.status == 200 && state != NULL && strcmp(state, "running") != 0)
		why = watch_reason(a.json);
	httpc_answer_free(&a);
	return why;
}

/* Tells the job's id and a newline on --id-fd fd (closed after; -1:
 * none). A socket (cordon serve's) answers one byte once the caller has
 * recorded the job: 0 then, -1 when it closed first. A pipe answers
 * nothing: 0. */
static int
tell_id(int fd, const char *id)
{
	struct stat sb;
	ssize_t n = 1;
	char c;

	if (fd < 0)
		return 0;
	bool sock = fstat(fd, &sb) == 0 && S_ISSOCK(sb.st_mode);
	if (dprintf(fd, "%s\n", id) < 0 && sock)
		n = 0;
	else if (sock)
		do
			n = read(fd, &c, 1);
		while (n < 0 && errno == EINTR);
	close(fd);
	return n == 1 ? 0 : -1;
}

/* SIGPIPE's handler: nothing. A write to a gone reader (a closed stdout,
 * a relay connection or a service's socket closed) fails with EPIPE and
 * the caller decides; it never kills the launcher and skips its stop
 * path. A handler rather than SIG_IGN: exec resets a handled signal to
 * its default, so the job's processes get SIGPIPE as any program
 * expects, whatever disposition cordon run was started with. */
static void
on_sigpipe(int sig)
{
	(void)sig;
}

int
launcher_run(int argc, char **argv)
{
	struct launcher_config cfg;
	struct run r = { .cfg = &cfg,
		.out_fd = -1,
		.err_fd = -1,
		.uid_fd = -1,
		.record_fd = -1 };
	struct run_flags f = { .id_fd = -1, .canaries = -1 };
	struct outcome o = { 0 };
	struct httpc_answer a;
	char err[2048] = "";
	int rc;

	struct sigaction pipe_sa = { .sa_handler = on_sigpipe,
		.sa_flags = SA_RESTART };
	sigset_t none;
	sigemptyset(&pipe_sa.sa_mask);
	sigaction(SIGPIPE, &pipe_sa, NULL);
	struct sigaction early_sa = { .sa_handler = on_early_signal,
		.sa_flags = SA_RESTART };
	sigemptyset(&early_sa.sa_mask);
	sigaction(SIGTERM, &early_sa, NULL);
	sigaction(SIGINT, &early_sa, NULL);
	sigaction(SIGHUP, &early_sa, NULL);
	/* A caller that blocked SIGTERM or SIGINT must not keep them from
	 * starting the stop path. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	rc = parse_flags(argc, argv, &f);
	if (rc >= 0)
		return rc;
	/* Before the configuration, which makes the state directories: a
	 * user who is not root hears that, not "Permission denied". */
	if (geteuid() != 0) {
		fprintf(stderr,
		    "cordon run: must run as root: the sandbox "
		    "needs namespaces and mounts\n");
		return STOPPATH_EXIT_LAUNCHER;
	}
	if (launcher_config_read(&cfg, f.config, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon run: %s\n", err);
		return EXIT_CONFIG;
	}
	r.json = f.json;
	r.patch_out = f.patch_out;
	r.sb.pid = -1;
	/* Until a sandbox says how it enforced them: not at all. */
	r.sb.limits.memory = r.sb.limits.pids = "none";
	r.sb.proxy_fd = -1;
	buf_init(&r.out, OUT_KEEP_DEFAULT);
	buf_init(&r.err, OUT_KEEP_DEFAULT);
	log_init("launcher", LEVEL_WARN);
	if (cfg.launcher_key_file == NULL) {
		fprintf(stderr,
		    "cordon run: launcher_key_file is not set; set it in "
		    "--config to the launcher.key cordon-broker wrote\n");
		rc = EXIT_CONFIG;
		goto out;
	}
	if ((rc = launcher_read_key(cfg.launcher_key_file, r.key,
		 sizeof(r.key))) < 0) {
		keys_explain(err, sizeof(err), "launcher_key_file",
		    cfg.launcher_key_file, rc);
		fprintf(stderr, "cordon run: %s\n", err);
		rc = EXIT_CONFIG;
		goto out;
	}
	/* Only now, with the key read: a user without it makes nothing. */
	if (launcher_config_make_dirs(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon run: %s\n", err);
		rc = EXIT_CONFIG;
		goto out;
	}
	if ((r.base = event_base_new()) == NULL) {
		fprintf(stderr, "cordon run: out of memory\n");
		rc = STOPPATH_EXIT_LAUNCHER;
		goto out;
	}
	/* 1. The job, at the broker. */
	clock_gettime(CLOCK_MONOTONIC, &r.lap_at);
	r.started = r.lap_at;
	json_t *ask = json_pack("{s:s}", "manifest", f.manifest);
	if (ask != NULL && f.canaries >= 0)
		json_object_set_new(ask, "canaries", json_integer(f.canaries));
	rc = call(&r, cfg.broker, "POST", "/v1/jobs", ask, &a);
	if (rc < 0 || a.status != 201) {
		fprintf(stderr, "cordon run: the broker: %s\n",
		    rc < 0 ? "no answer" : launcher_answer_message(&a));
		if (rc == 0)
			httpc_answer_free(&a);
		rc = STOPPATH_EXIT_LAUNCHER;
		goto out;
	}
	r.job = json_incref(a.json);
	httpc_answer_free(&a);
	r.id = json_string_value(json_object_get(r.job, "job"));
	lap(&r, PH_BROKER);
	r.output_cap = (uint64_t)limit(&r, "output_kb") * 1024;
	/* serve's follow keeps as much of each stream. */
	launcher_output_tee_cap(r.output_cap);
	/* --json keeps what output_kb allows of each stream, and one read
	 * past it, so that the envelope sees the cut and says truncated:
	 * no second, smaller cap of the launcher's own. */
	if (r.output_cap > 0) {
		buf_init(&r.out, (size_t)r.output_cap + OUT_READ);
		buf_init(&r.err, (size_t)r.output_cap + OUT_READ);
	}

	/* From here on, whatever happens ends in the stop path; the record
	 * lets `cordon recover` end it if this launcher cannot. */
	char dest[PATH_MAX], cwd[PATH_MAX], where[2 * PATH_MAX];
	patch_path(&r, dest, sizeof(dest));
	/* Absolute: recover runs from anywhere. */
	if (dest[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		snprintf(where, sizeof(where), "%s/%s", cwd, dest);
	else
		snprintf(where, sizeof(where), "%s", dest);
	r.record_patch = where;
	rc = launcher_record_open(cfg.common.state_dir, r.id, where,
	    &r.record_fd);
	/* The id told once the record is there (a caller that dies next
	 * leaves a job recover finishes), and made no further when the
	 * caller cannot say it took it. */
	bool taken = tell_id(f.id_fd, r.id) == 0;
	if (rc < 0) {
		fprintf(stderr,
		    "cordon run: the job's record in %s/running: %s\n",
		    cfg.common.state_dir, strerror(-rc));
		r.stop_reason = "launcher_error";
	} else if (!taken) {
		fprintf(stderr,
		    "cordon run: the caller that asked for the job's id "
		    "(--id-fd, cordon serve) closed before it said it "
		    "recorded the job: not started\n");
		r.stop_reason = "launcher_error";
	} else if (start(&r, &f, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon run: %s\n", err);
		r.start_error = err;
		r.stop_reason = stopped_meanwhile(&r) ?: "launcher_error";
	} else if (loop(&r) < 0) {
		r.stop_reason = "launcher_error";
	}
	lap(&r, PH_RUN);
	if (r.stop_reason == NULL)
		r.stop_reason = "launcher_error";
	bool recorded = r.record_fd >= 0;
	stop_path(&r, &o);
	output_flush(&r);
	report(&r, &o);
	if (!o.s.finished && recorded)
		fprintf(stderr,
		    "cordon: job %s is left for `cordon recover` to finish\n",
		    r.id);
	rc = stoppath_exit_status(&o.s,
	    strcmp(r.stop_reason, "launcher_error") == 0, exit_code(&r));
	json_decref(o.s.c.report);
out:
	run_free(&r);
	launcher_config_free(&cfg);
	return rc;
}
