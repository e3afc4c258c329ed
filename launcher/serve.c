/*
 * `cordon serve`: the launcher's HTTP API for orchestrators. Each job is a
 * `cordon run --json` of its own, a child of serve: the same code path as
 * the command line, and a job whose launcher dies is still revoked by the
 * broker's lease. serve answers POST /v1/jobs once the child has the job
 * from the broker, reaps children and keeps their results, and stops a
 * job by SIGTERM, which runs the child's stop path.
 */
#include "launcher.h"

#include "buf.h"
#include "http_client.h"
#include "http_server.h"
#include "log.h"
#include "problems.h"
#include "service.h"
#include "util.h"

#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define RESULT_MAX (4 * 1024 * 1024)
#define STOP_WAIT_MS 15000
/* Finished jobs kept for GET: the newest this many, and any that ended
 * less than KEEP_SECONDS ago. */
#define KEEP_DONE 1000
#define KEEP_SECONDS 60
/* `cordon recover` runs this often, at start, and soon after a job whose
 * stop path may not have finished. */
#define RECOVER_EVERY 30

struct sjob {
	struct sjob *next;
	char id[64];
	pid_t pid; /* 0 once reaped */
	int result_fd; /* the child's stdout: its JSON result */
	struct buf result;
	int status;
	bool done;
	time_t started, ended;
};

static struct sjob *
find(struct launcher *l, const char *id)
{
	for (struct sjob *j = l->jobs; j != NULL; j = j->next)
		if (strcmp(j->id, id) == 0)
			return j;
	return NULL;
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
}

/* Reads what j's child wrote and reaps it if it ended; l->mu held. */
static void
reap(struct launcher *l, struct sjob *j)
{
	int st;

	if (j->done)
		return;
	drain(j);
	if (waitpid(j->pid, &st, WNOHANG) != j->pid)
		return;
	drain(j);
	close(j->result_fd);
	j->result_fd = -1;
	j->status = st;
	j->pid = 0;
	j->done = true;
	j->ended = time(NULL);
	log_info("job_done", "{s:s, s:i}", "job", j->id, "status",
	    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	/* Killed, or its revoke or its patch not done: cordon run left its
	 * record, and recover finishes the job. */
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 3 || WEXITSTATUS(st) == 4 ||
	    WEXITSTATUS(st) == 125)
		l->recover_at = 0;
}

/* cordon with argv, as a child: stdin from /dev/null, stdout to out (or
 * /dev/null when -1), fd 3 to fd3 (when not -1), stderr serve's, signals
 * unblocked. The child's pid, or -1. */
static pid_t
fork_cordon(struct launcher *l, char **argv, int out, int fd3)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* O_CLOEXEC: its copies on 0 (and 1) are what cordon gets. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		sigset_t none;
		if (dup2(null, 0) < 0 || dup2(out >= 0 ? out : null, 1) < 0 ||
		    (fd3 >= 0 && dup2(fd3, 3) < 0))
			_exit(125);
		/* Nothing else of serve's, nor what serve's parent left
		 * open without O_CLOEXEC. */
		closefrom(fd3 >= 0 ? 4 : 3);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(l->cordon, argv);
		_exit(125);
	}
	return pid;
}

/* `cordon recover --log` as a child of its own, when it is time and none
 * runs; its JSON log lines go to serve's stderr. l->mu held. */
static void
recover_tick(struct launcher *l, time_t now)
{
	char *argv[] = { "cordon", "recover", "--log", "--config",
		(char *)l->config_path, NULL };
	int st;

	if (l->recover_pid > 0) {
		if (waitpid(l->recover_pid, &st, WNOHANG) != l->recover_pid)
			return;
		l->recover_pid = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			log_warn("recover_left", "{s:i, s:s}", "status",
			    WIFEXITED(st) ? WEXITSTATUS(st)
					  : 128 + WTERMSIG(st),
			    "effect", "a job is not finished; tried again");
	}
	if (now < l->recover_at)
		return;
	l->recover_at = now + RECOVER_EVERY;
	if (l->config_path == NULL)
		argv[3] = NULL;
	l->recover_pid = fork_cordon(l, argv, -1, -1);
	if (l->recover_pid < 0) {
		l->recover_pid = 0;
		log_warn("recover_failed", "{s:s}", "error", strerror(errno));
	}
}

/* Every 100 ms: results read, children reaped, `cordon recover` run when
 * due, and the oldest finished
 * jobs past KEEP_DONE forgotten (their GET answers 404 then). */
static void
tick(void *ctx)
{
	struct launcher *l = ctx;
	time_t now = time(NULL);
	size_t done = 0;

	pthread_mutex_lock(&l->mu);
	for (struct sjob **p = &l->jobs, *j; (j = *p) != NULL;) {
		reap(l, j);
		if (j->done && ++done > KEEP_DONE &&
		    now - j->ended > KEEP_SECONDS) {
			*p = j->next;
			buf_free(&j->result);
			free(j);
			continue;
		}
		p = &j->next;
	}
	recover_tick(l, now);
	pthread_mutex_unlock(&l->mu);
}

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
	json_t *result = j->done
	    ? json_loadb(j->result.data != NULL ? j->result.data : "",
		  j->result.len, 0, NULL)
	    : NULL;

	return json_pack("{s:s, s:s, s:I, s:o?}", "job", j->id, "state",
	    j->done ? "done" : "running", "started", (json_int_t)j->started,
	    "result", result);
}

/* Starts `cordon run --json` for the request: the child, and the job id
 * it says once the broker made the job. */
static int
spawn(struct launcher *l, json_t *body, struct sjob *j, char *err,
    size_t errlen)
{
	const char *manifest =
	    json_string_value(json_object_get(body, "manifest"));
	json_t *inputs = json_object_get(body, "inputs");
	json_t *command = json_object_get(body, "command");
	char *argv[256], *owned[128];
	char buf[128];
	size_t n = 0, nowned = 0, i;
	int out[2], idp[2];
	json_t *v;

	argv[n++] = "cordon";
	argv[n++] = "run";
	argv[n++] = "--json";
	argv[n++] = "--id-fd";
	argv[n++] = "3";
	if (l->config_path != NULL) {
		argv[n++] = "--config";
		argv[n++] = (char *)l->config_path;
	}
	argv[n++] = "--manifest";
	argv[n++] = (char *)manifest;
	json_array_foreach(inputs, i, v)
	{
		const char *src = json_string_value(json_object_get(v, "src"));
		const char *dst = json_string_value(json_object_get(v, "dst"));
		char *arg;
		if (n > 180 || asprintf(&arg, "%s:%s", src, dst) < 0)
			break;
		argv[n++] = "--input";
		argv[n++] = owned[nowned++] = arg;
	}
	if (json_array_size(command) > 0) {
		argv[n++] = "--";
		json_array_foreach(command, i, v)
		{
			if (n > 250)
				break;
			argv[n++] = (char *)json_string_value(v);
		}
	}
	argv[n] = NULL;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(idp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	j->pid = fork_cordon(l, argv, out[1], idp[1]);
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	close(out[1]);
	close(idp[1]);
	if (j->pid < 0) {
		close(out[0]);
		close(idp[0]);
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -EIO;
	}
	j->result_fd = out[0];
	(void)fcntl(out[0], F_SETFL, O_NONBLOCK);
	/* The job's id comes once the broker made it; a refusal closes the
	 * pipe without one and the child's result says why. */
	struct pollfd p = { .fd = idp[0], .events = POLLIN };
	ssize_t k = 0;
	if (poll(&p, 1, 15000) == 1)
		k = read(idp[0], buf, sizeof(buf) - 1);
	close(idp[0]);
	if (k <= 1 || buf[k - 1] != '\n') {
		snprintf(err, errlen, "cordon run gave no job");
		return -EIO;
	}
	buf[k - 1] = '\0';
	if (!name_ok(buf, sizeof(j->id) - 1, "_-")) {
		snprintf(err, errlen, "cordon run gave no job");
		return -EIO;
	}
	memcpy(j->id, buf, strlen(buf) + 1);
	return 0;
}

static void
jobs_post(void *ctx, struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = { "manifest", "inputs", "command" };
	struct launcher *l = ctx;
	json_t *body = http_request_body(req);
	const char *manifest =
	    json_string_value(json_object_get(body, "manifest"));
	json_t *inputs = json_object_get(body, "inputs");
	json_t *command = json_object_get(body, "command"), *v;
	json_t *problems = json_array();
	struct sjob *j;
	char err[256];
	size_t i;

	/* A typo must not pass as "not asked for". */
	problems_unknown_keys(body, "", fields, ARRAY_SIZE(fields), problems);
	if (manifest == NULL || !name_ok(manifest, 64, "._-"))
		problems_add(problems, "manifest",
		    "required: a manifest's name");
	/* The hatch takes at most 64; more would be cut short below. */
	if (inputs != NULL &&
	    (!json_is_array(inputs) || json_array_size(inputs) > 64))
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
	if (command != NULL &&
	    (!json_is_array(command) || json_array_size(command) > 64))
		problems_add(problems, "command",
		    "a list of at most 64 strings");
	json_array_foreach(command, i, v) if (!json_is_string(v))
	    problems_add(problems, "command", "a list of strings");
	if (json_array_size(problems) > 0) {
		http_reply_problems(res, "invalid_job",
		    "the job cannot be run as asked", problems);
		return;
	}
	json_decref(problems);
	j = calloc(1, sizeof(*j));
	if (j == NULL) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	buf_init(&j->result, RESULT_MAX);
	j->result_fd = -1;
	j->started = time(NULL);
	if (spawn(l, body, j, err, sizeof(err)) < 0) {
		if (j->pid > 0) {
			/* What it said (a refused manifest, say) is the answer. */
			int st;
			waitpid(j->pid, &st, 0);
			drain(j);
			json_t *result =
			    json_loadb(j->result.data != NULL ? j->result.data
							      : "",
				j->result.len, 0, NULL);
			http_reply_json(res, 502,
			    json_pack("{s:s, s:s, s:o?}", "error",
				"job_not_started", "message", err, "result",
				result));
		} else {
			http_reply_error(res, 500, "spawn_failed", "%s", err);
		}
		if (j->result_fd >= 0)
			close(j->result_fd);
		buf_free(&j->result);
		free(j);
		return;
	}
	log_info("job_started", "{s:s, s:s, s:i}", "job", j->id, "manifest",
	    manifest, "pid", (int)j->pid);
	pthread_mutex_lock(&l->mu);
	j->next = l->jobs;
	l->jobs = j;
	http_reply_json(res, 201, job_json(j));
	pthread_mutex_unlock(&l->mu);
}

static void
job_get(void *ctx, struct http_request *req, struct http_response *res)
{
	struct launcher *l = ctx;
	struct sjob *j;

	pthread_mutex_lock(&l->mu);
	j = find_or_404(l, req, res);
	if (j != NULL) {
		reap(l, j); /* a poller sees the end at once, not at the tick */
		http_reply_json(res, 200, job_json(j));
	}
	pthread_mutex_unlock(&l->mu);
}

static void
job_stop(void *ctx, struct http_request *req, struct http_response *res)
{
	struct launcher *l = ctx;
	struct sjob *j;
	bool done = false;

	/* Whatever the body holds is a mistake, refused before anything is
	 * stopped. */
	if (http_refuse_body_fields(req, res))
		return;
	pthread_mutex_lock(&l->mu);
	j = find_or_404(l, req, res);
	if (j != NULL && !j->done)
		kill(j->pid, SIGTERM);
	pthread_mutex_unlock(&l->mu);
	if (j == NULL)
		return;
	/* The child runs the stop path; its result is the answer. */
	for (int waited = 0; waited < STOP_WAIT_MS && !done; waited += 10) {
		pthread_mutex_lock(&l->mu);
		reap(l, j);
		done = j->done;
		pthread_mutex_unlock(&l->mu);
		if (!done)
			usleep(10 * 1000);
	}
	pthread_mutex_lock(&l->mu);
	http_reply_json(res, done ? 200 : 202, job_json(j));
	pthread_mutex_unlock(&l->mu);
}

static void
job_output(void *ctx, struct http_request *req, struct http_response *res)
{
	struct launcher *l = ctx;
	struct sjob *j;

	pthread_mutex_lock(&l->mu);
	j = find_or_404(l, req, res);
	if (j == NULL) {
		pthread_mutex_unlock(&l->mu);
		return;
	}
	if (!j->done)
		http_reply_error(res, 409, "running",
		    "the output is given once the job has stopped");
	else {
		json_t *all = job_json(j);
		json_t *out =
		    json_object_get(json_object_get(all, "result"), "output");
		if (out != NULL)
			http_reply_json(res, 200, json_incref(out));
		else
			http_reply_error(res, 502, "no_output",
			    "the job ended without a result");
		json_decref(all);
	}
	pthread_mutex_unlock(&l->mu);
}

static const struct http_route serve_routes[] = {
	{ "POST", "/v1/jobs", ROLE_LAUNCHER, BODY_JSON, jobs_post },
	{ "GET", "/v1/jobs/*", ROLE_LAUNCHER, BODY_NONE, job_get },
	{ "POST", "/v1/jobs/*/stop", ROLE_LAUNCHER, BODY_JSON_OPTIONAL,
	    job_stop },
	{ "GET", "/v1/jobs/*/output", ROLE_LAUNCHER, BODY_NONE, job_output },
};

int
launcher_serve(int argc, char **argv)
{
	struct launcher l = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	service_block_signals();
	if (launcher_config_defaults(&l.cfg) < 0)
		return EXIT_OSERR;
	r = service_parse_args(argc, argv, "cordon serve",
	    "The launcher's HTTP API for orchestrators.", &args);
	if (r >= 0)
		goto out;
	l.config_path = args.config_path;
	if ((r = launcher_sibling("cordon", l.cordon, sizeof(l.cordon))) < 0) {
		fprintf(stderr, "cordon serve: cannot find cordon: %s\n",
		    strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	r = service_configure(&args, "cordon serve", "launcher",
	    LAUNCHER_LISTEN, launcher_options, launcher_noptions, &l.cfg,
	    &l.cfg.common);
	if (r >= 0)
		goto out;
	if (args.check_only) {
		r = service_config_ok("cordon serve");
		goto out;
	}

	log_init("launcher", l.cfg.common.log_level);
	/* Without its key serve still answers /healthz, and refuses every
	 * job: the broker would refuse them anyway. */
	if ((r = keyring_add_file(&l.keys, l.cfg.launcher_key_file,
		 ROLE_LAUNCHER)) < 0)
		log_warn("no_launcher_key", "{s:s, s:s, s:s}", "path",
		    l.cfg.launcher_key_file, "error", strerror(-r), "effect",
		    "every call is refused until the key can be read");
	r = service_open(&l.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	struct http_server_config http = {
		.svc = "launcher",
		.listen_fd = steal_fd(&fd),
		.threads = 2,
		.routes = serve_routes,
		.nroutes = ARRAY_SIZE(serve_routes),
		.ctx = &l,
		.keys = &l.keys,
	};
	r = service_serve(&http, &l.cfg.common, addr, tick, 100);
	/* Jobs die with their launcher: each runs its stop path. */
	for (struct sjob *j = l.jobs; j != NULL; j = j->next)
		if (!j->done)
			kill(j->pid, SIGTERM);
	for (struct sjob *j = l.jobs; j != NULL; j = j->next)
		if (!j->done)
			waitpid(j->pid, NULL, 0);
	if (l.recover_pid > 0)
		waitpid(l.recover_pid, NULL, 0);
out:
	if (fd >= 0)
		close(fd);
	while (l.jobs != NULL) {
		struct sjob *j = l.jobs;
		l.jobs = j->next;
		if (j->result_fd >= 0)
			close(j->result_fd);
		buf_free(&j->result);
		free(j);
	}
	launcher_config_free(&l.cfg);
	return r;
}
