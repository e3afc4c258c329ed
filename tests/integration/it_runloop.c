/*
 * The loop of `cordon run` while a job runs, and how it ends: no write of
 * the launcher can kill it (SIGPIPE at its default, as any shell leaves
 * it), a closed stdout stops the job through its stop path, a flood of
 * relay connections neither starves the stop path of descriptors nor
 * freezes the loop (SIGTERM still stops the job at once, and the result
 * tells the truth), and a broker that stops answering does not freeze the
 * job's traffic or output.
 *
 * The real broker, proxy and hatch, an upstream on 127.0.0.1, and `cordon
 * run` making real namespaces (as root). The broker's lease is long
 * (300 s), so that nothing here is stopped by a lapsed lease: whatever
 * stops a job is the launcher. Every wait has a deadline.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct stack st;
static struct upstream *plain, *tls_up;

static void
put_manifest(const char *name, int wall)
{
	json_t *m =
	    json_pack("{s:s, s:[s], s:{s:s}, "
		      "s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}], "
		      "s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s}, "
		      "{s:s, s:i, s:s, s:[s], s:[s, s, s], s:s, s:[s]}], "
		      "s:{s:i, s:i, s:i, s:i}}",
		"name", name, "command", "/bin/true", "env", "LANG", "C.UTF-8",
		"capabilities", "name", "x.read", "audience", "api", "params",
		"t", "1", "ttl_seconds", 900, "reason", "read x", "egress",
		"host", "api.test", "port", upstream_port(plain), "methods",
		"GET", "paths", "/ok/", "reason", "the api", "allow_cidrs",
		"127.0.0.0/8", "audience", "api",
		/* terminated TLS */
		"host", "tls.test", "port", upstream_port(tls_up), "tls",
		"terminate", "methods", "GET", "paths", "/ok/", "/bytes/",
		"/close", "reason", "tls", "allow_cidrs", "127.0.0.0/8",
		"limits", "wall_seconds", wall, "memory_mb", 1024, "pids", 64,
		"output_kb", 4096);
	char path[128];

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", path, st.admin, NULL, m));
}

static void
setup(void)
{
	const char *tls_hosts[] = { "tls.test", NULL };
	char path[400], cert[400], key[400], ca[400];
	const char *cadir = harness_tmpdir();
	struct stack_options o = { .uid_base = 390000,
		.hosts = "127.0.0.1 api.test tls.test\n",
		.broker_config = "{\"lease_seconds\": 300}",
		.upstream_ca_file = ca };

	/* The test itself must not die of a write to a gone reader either;
	 * every cordon it starts has SIGPIPE at its default (harness.c). */
	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	ck_assert_int_eq(test_ca_make(cadir, tls_hosts), 0);
	snprintf(cert, sizeof(cert), "%s/tls.test.pem", cadir);
	snprintf(key, sizeof(key), "%s/tls.test.key", cadir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", cadir);
	tls_up = upstream_start(cert, key);
	ck_assert_ptr_nonnull(tls_up);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	put_manifest("loop-job", 120);
}

static void
teardown(void)
{
	kill(st.broker.pid, SIGCONT);
	kill(st.proxy.pid, SIGCONT);
	upstream_stop(tls_up);
	upstream_stop(plain);
	stack_stop(&st);
}

/* A `cordon run` of the test's own, its stdout and stderr on pipes
 * (read ends in out_fd, err_fd), SIGPIPE at its default; with nofile,
 * RLIMIT_NOFILE's soft limit set to it (the hard one kept). */
struct launched {
	pid_t pid;
	int out_fd, err_fd;
	char out[1 << 16], err[1 << 16];
	size_t nout, nerr;
};

static bool ignore_sigpipe; /* launch as cordon serve does: SIG_IGN */
/* launch as a careless caller does: SIGHUP and SIGINT ignored (nohup),
 * SIGTERM and SIGUSR1 blocked */
static bool careless_caller;

static void
launch(struct launched *l, bool json, rlim_t nofile, const char *script)
{
	char input[400];
	int po[2], pe[2];

	memset(l, 0, sizeof(*l));
	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	ck_assert_int_eq(pipe(po), 0);
	ck_assert_int_eq(pipe(pe), 0);
	fflush(NULL);
	l->pid = fork();
	ck_assert_int_ge(l->pid, 0);
	if (l->pid == 0) {
		const char *argv[] = { harness_bin("cordon"), "run", "--config",
			st.launcher_cfg, "--manifest", "loop-job", "--input",
			input, "--", "/bin/sh", "-c", script, NULL, NULL };
		struct rlimit rl;

		if (json) { /* "--json" before the "--" */
			memmove(argv + 9, argv + 8, 5 * sizeof(argv[0]));
			argv[8] = "--json";
		}

		signal(SIGPIPE, ignore_sigpipe ? SIG_IGN : SIG_DFL);
		if (careless_caller) {
			sigset_t b;
			signal(SIGHUP, SIG_IGN);
			signal(SIGINT, SIG_IGN);
			sigemptyset(&b);
			sigaddset(&b, SIGTERM);
			sigaddset(&b, SIGUSR1);
			sigprocmask(SIG_BLOCK, &b, NULL);
		}
		if (nofile > 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			rl.rlim_cur = nofile;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		close(po[1]);
		close(pe[1]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	l->out_fd = po[0];
	l->err_fd = pe[0];
}

/* Reads what came on fd into buf (past its end, read and dropped);
 * false at EOF (or on a closed fd). */
static bool
take(int fd, char *buf, size_t len, size_t *n)
{
	ssize_t k;

	if (fd < 0)
		return false;
	if (*n + 1 >= len) { /* full: the rest is read and dropped */
		char drop[16384];
		return read(fd, drop, sizeof(drop)) > 0;
	}
	k = read(fd, buf + *n, len - 1 - *n);
	if (k <= 0)
		return false;
	*n += (size_t)k;
	buf[*n] = '\0';
	return true;
}

/* Reads both pipes until want shows on stdout (want NULL: until both
 * end), ms at most: whether it came. */
static bool
read_until(struct launched *l, const char *want, int ms)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p[2] = { { l->out_fd, POLLIN, 0 },
			{ l->err_fd, POLLIN, 0 } };
		if (want != NULL && strstr(l->out, want) != NULL)
			return true;
		if (want == NULL && l->out_fd < 0 && l->err_fd < 0)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (now.tv_sec - t0.tv_sec) * 1000 +
		    (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent > ms)
			return false;
		if (poll(p, 2, 100) <= 0)
			continue;
		if (p[0].revents != 0 &&
		    !take(l->out_fd, l->out, sizeof(l->out), &l->nout)) {
			close(l->out_fd);
			l->out_fd = -1;
		}
		if (p[1].revents != 0 &&
		    !take(l->err_fd, l->err, sizeof(l->err), &l->nerr)) {
			close(l->err_fd);
			l->err_fd = -1;
		}
	}
}

/* Waits for l to exit, ms at most: its status as a shell gives it, or -1
 * when it did not exit (it is killed then). */
static int
finish(struct launched *l, int ms)
{
	int status = 0;

	(void)read_until(l, NULL, ms);
	for (int i = 0; i < ms / 100; i++) {
		if (waitpid(l->pid, &status, WNOHANG) == l->pid)
			goto done;
		usleep(100000);
	}
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	return -1;
done:
	if (l->out_fd >= 0)
		close(l->out_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The value after key in text, as a long (-1 when absent). */
static long
number_after(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p != NULL ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* The job's id in the launcher's summary line on stderr. */
static char *
summary_job(const char *err)
{
	const char *p = strstr(err, "cordon: job ");

	ck_assert_msg(p != NULL, "no summary: %.3000s", err);
	p += strlen("cordon: job ");
	return strndup(p, strcspn(p, " "));
}

/* The proxy's log of job: its state and its allowed count. */
static long
proxy_allowed(const char *job, char *state, size_t len)
{
	char path[160];
	json_t *log;
	long allowed;

	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	log = harness_expect(&st.proxy, 200, "GET", path, st.launcher, NULL,
	    NULL);
	snprintf(state, len, "%s",
	    json_string_value(json_object_get(log, "state")) ?: "");
	allowed = (long)json_integer_value(json_object_get(log, "allowed"));
	json_decref(log);
	return allowed;
}

/* The launcher's records of jobs in flight: how many. */
static int
records(void)
{
	char dir[400];
	struct dirent *d;
	int n = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/state/running", st.launcher_dir);
	if ((dp = opendir(dir)) == NULL)
		return 0;
	while ((d = readdir(dp)) != NULL)
		if (d->d_name[0] != '.')
			n++;
	closedir(dp);
	return n;
}

#define GET_TOKEN                                                              \
	"T=$(curl -s -X POST http://broker.cordon/v1/token "                   \
	"-d '{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}' | "         \
	"sed -n 's/.*access_token\":\"\\([^\"]*\\)\".*/\\1/p'); "

/* The token the job printed as TOKEN=... */
static char *
printed_token(const char *out)
{
	const char *t = strstr(out, "TOKEN=crd_");

	ck_assert_msg(t != NULL, "no token printed: %.3000s", out);
	return strndup(t + 6,
	    strspn(t + 6,
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
		"QRSTUVWXYZ0123456789_-"));
}

/*
 * 15.4: the proxy ends a connection (Connection: close), and the job
 * sends on it after: the launcher's write to the channel meets a closed
 * socket. Then curl's several requests on one connection. The launcher
 * lives through all of it and reports the job's exit.
 */
START_TEST(a_write_to_a_closed_channel_does_not_kill_the_launcher)
{
	char script[2048];
	struct launched l;

	snprintf(script, sizeof(script),
	    "python3 -c '\n"
	    "import socket, time\n"
	    "for i in range(5):\n"
	    "    s = socket.create_connection((\"127.0.0.1\", 3128))\n"
	    "    s.sendall(b\"GET http://api.test:%u/ok/x HTTP/1.1\\r\\n"
	    "Host: api.test:%u\\r\\nConnection: close\\r\\n\\r\\n\")\n"
	    "    while s.recv(65536):\n"
	    "        pass\n"
	    "    time.sleep(0.2)\n"
	    "    try:\n"
	    "        for k in range(20):\n"
	    "            s.sendall(b\"x\" * 65536)\n"
	    "            time.sleep(0.01)\n"
	    "    except OSError:\n"
	    "        pass\n"
	    "    s.close()\n"
	    "print(\"sent-after-close\")'; "
	    "curl -s -o /dev/null -w '%%{http_code} %%{http_code} ' "
	    "http://api.test:%u/ok/a http://api.test:%u/ok/b; echo curl-done",
	    upstream_port(plain), upstream_port(plain), upstream_port(plain),
	    upstream_port(plain));
	launch(&l, true, 0, script);
	int status = finish(&l, 60000);
	ck_assert_msg(status == 0, "cordon run: status %d\n%.1500s\n%.1500s",
	    status, l.out, l.err);
	json_t *j = json_loads(l.out, 0, NULL);
	ck_assert_msg(j != NULL, "no result: %.1500s\n%.1500s", l.out, l.err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_ptr_nonnull(strstr(text, "sent-after-close"));
	ck_assert_ptr_nonnull(strstr(text, "curl-done"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "exit");
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	json_decref(j);
}
END_TEST

/*
 * 15.4: several https requests through the relay (curl, one tunnel for
 * two), a download whose reader goes early (`| head -c 10`: curl dies
 * of SIGPIPE mid-stream, and the proxy still sends), and an answer that
 * ends with the upstream's close (the proxy closes first; curl's
 * close_notify then meets a closed channel). The launcher lives through
 * it and reports the job's exit.
 */
START_TEST(https_jobs_whose_clients_close_early)
{
	char script[1024];
	struct launched l;

	snprintf(script, sizeof(script),
	    "for i in 1 2 3; do curl -s -o /dev/null -o /dev/null "
	    "-w '%%{http_code} ' https://tls.test:%u/ok/a "
	    "https://tls.test:%u/ok/b; "
	    "curl -s https://tls.test:%u/bytes/4000000 | head -c 10; "
	    "curl -s https://tls.test:%u/close; "
	    "echo; done; echo https-done",
	    upstream_port(tls_up), upstream_port(tls_up), upstream_port(tls_up),
	    upstream_port(tls_up));
	launch(&l, true, 0, script);
	int status = finish(&l, 60000);
	ck_assert_msg(status == 0, "cordon run: status %d\n%.1500s\n%.1500s",
	    status, l.out, l.err);
	json_t *j = json_loads(l.out, 0, NULL);
	ck_assert_msg(j != NULL, "no result: %.3000s", l.err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_msg(strstr(text, "200 200 xxxxxxxxxxbye") != NULL, "%s",
	    text);
	ck_assert_ptr_nonnull(strstr(text, "https-done"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "exit");
	json_decref(j);
}
END_TEST

/*
 * Whatever its caller ignored or blocked, cordon run still stops on
 * SIGTERM, and the job's processes start as any program expects: no
 * signal ignored, none blocked (a job that inherited a blocked SIGTERM
 * would outlive a polite stop of its own children).
 */
START_TEST(a_careless_callers_signals_reach_neither_cordon_nor_the_job)
{
	struct launched l;

	careless_caller = true;
	launch(&l, false, 0,
	    "grep -E '^Sig(Ign|Blk):' /proc/self/status; echo started; "
	    "sleep 60");
	careless_caller = false;
	ck_assert_msg(read_until(&l, "started", 30000), "the job never ran: %s",
	    l.err);
	ck_assert_int_eq(kill(l.pid, SIGTERM), 0);
	int status = finish(&l, 30000);
	ck_assert_msg(status >= 0,
	    "cordon run did not stop within 30 s of SIGTERM:\n%.3000s", l.err);
	ck_assert_msg(strstr(l.err, " stopped (stopped)") != NULL, "%s", l.err);
	const char *ign = strstr(l.out, "SigIgn:"),
		   *blk = strstr(l.out, "SigBlk:");
	ck_assert_msg(ign != NULL && blk != NULL, "%s", l.out);
	ck_assert_msg(strtoull(ign + 7, NULL, 16) == 0,
	    "the job's processes ignore signals: %s", l.out);
	ck_assert_msg(strtoull(blk + 7, NULL, 16) == 0,
	    "the job's processes block signals: %s", l.out);
}
END_TEST

/*
 * 15.4: whatever disposition cordon run was started with (cordon serve
 * ignores SIGPIPE), the job's processes have SIGPIPE at its default, as
 * any program expects (`yes | head` ends).
 */
START_TEST(the_job_gets_sigpipe_at_its_default)
{
	struct launched l;

	ignore_sigpipe = true;
	launch(&l, true, 0,
	    "grep '^SigIgn:' /proc/self/status; "
	    "yes | head -c 4 >/dev/null; echo yes-ended");
	int status = finish(&l, 60000);
	ck_assert_msg(status == 0, "status %d\n%.3000s", status, l.err);
	json_t *j = json_loads(l.out, 0, NULL);
	ck_assert_msg(j != NULL, "no result: %.3000s", l.err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	const char *ign = strstr(text, "SigIgn:");
	ck_assert_msg(ign != NULL, "%s", text);
	unsigned long long mask = strtoull(ign + 7, NULL, 16);
	ck_assert_msg((mask & (1ULL << (SIGPIPE - 1))) == 0,
	    "the job's processes ignore SIGPIPE: SigIgn %llx", mask);
	ck_assert_ptr_nonnull(strstr(text, "yes-ended"));
	json_decref(j);
}
END_TEST

/*
 * 15.4: `cordon run ... | head -c 10`: the reader of the launcher's
 * stdout is gone while the job still prints. The job is stopped through
 * its stop path (its token dead), the patch is written and the record
 * removed, and the launcher says why on stderr.
 */
START_TEST(a_closed_stdout_stops_the_job_through_its_stop_path)
{
	struct launched l;

	launch(&l, false, 0,
	    GET_TOKEN "echo TOKEN=$T >&2; echo fixed > repo/README.md; "
		      "i=0; while [ $i -lt 200000 ]; do echo line $i; "
		      "i=$((i+1)); done; sleep 100");
	/* The reader goes, as head's does once it has its ten bytes. */
	close(l.out_fd);
	l.out_fd = -1;
	int status = finish(&l, 60000);
	ck_assert_msg(status != 141,
	    "cordon run died of SIGPIPE, its stop path skipped:\n%.3000s",
	    l.err);
	ck_assert_msg(status == 128 + 9, "status %d\n%.3000s", status, l.err);
	ck_assert_msg(strstr(l.err, "stopped (output_closed)") != NULL,
	    "%.3000s", l.err);
	ck_assert_msg(strstr(l.err, "REVOKE FAILED") == NULL, "%.3000s", l.err);
	char *tok = printed_token(l.err);
	ck_assert(!harness_token_active(&st.broker, st.verifier, tok));
	free(tok);
	/* The patch is out, and the record of the job is gone. */
	char *job = summary_job(l.err);
	char patch[600];
	struct stat sb;
	snprintf(patch, sizeof(patch), "%s/state/%s.patch", st.launcher_dir,
	    job);
	ck_assert_msg(stat(patch, &sb) == 0 && sb.st_size > 0, "%s: %.3000s",
	    patch, l.err);
	ck_assert_int_eq(records(), 0);
	free(job);
}
END_TEST

/*
 * 15.6: a job that makes one allowed request, then opens 2,000
 * connections to 127.0.0.1:3128 and holds them, with the launcher at a
 * soft limit of 1,024 descriptors (systemd's default). SIGTERM during the
 * flood stops the job at once: its token is dead when cordon run exits,
 * the channel is closed, and the result's egress count is the proxy's
 * (or the result says that the count could not be had).
 */
START_TEST(a_flood_of_connections_starves_nothing)
{
	char script[2048];
	struct launched l;

	snprintf(script, sizeof(script),
	    GET_TOKEN "echo TOKEN=$T; "
		      "curl -s -o /dev/null http://api.test:%u/ok/x; "
		      "python3 -c '\n"
		      "import resource, socket, sys\n"
		      "h = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
		      "resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))\n"
		      "held = []\n"
		      "for i in range(2000):\n"
		      "    s = socket.socket()\n"
		      "    s.setblocking(False)\n"
		      "    try:\n"
		      "        s.connect((\"127.0.0.1\", 3128))\n"
		      "    except BlockingIOError:\n"
		      "        pass\n"
		      "    except OSError:\n"
		      "        s.close(); continue\n"
		      "    held.append(s)\n"
		      "print(\"FLOODED\", len(held)); sys.stdout.flush()\n"
		      "import time; time.sleep(100)'",
	    upstream_port(plain));
	launch(&l, false, 1024, script);
	ck_assert_msg(read_until(&l, "FLOODED", 60000),
	    "the job never flooded:\n%.1500s\n%.1500s", l.out, l.err);
	char *tok = printed_token(l.out);
	/* Let the launcher meet the flood, then ask it to stop. */
	sleep(2);
	ck_assert_int_eq(kill(l.pid, SIGTERM), 0);
	int status = finish(&l, 60000);
	ck_assert_msg(status != -1,
	    "cordon run did not stop within 60 s of SIGTERM:\n%.3000s", l.err);
	/* Right after: not a lease later (the lease is 300 s). */
	ck_assert(!harness_token_active(&st.broker, st.verifier, tok));
	ck_assert_msg(strstr(l.err, "stopped (stopped)") != NULL, "%.3000s",
	    l.err);
	ck_assert_msg(strstr(l.err, "REVOKE FAILED") == NULL, "%.3000s", l.err);
	ck_assert_msg(status == 128 + 9, "status %d\n%.3000s", status, l.err);
	char *job = summary_job(l.err);
	char state[32];
	long allowed = proxy_allowed(job, state, sizeof(state));
	ck_assert_str_ne(state, "open");
	ck_assert_int_ge(allowed, 1);
	/* The truth, or a failure said as one: never a wrong figure. */
	long said = number_after(l.err, "egress ");
	ck_assert_msg(said == allowed ||
		strstr(l.err, "egress unknown") != NULL,
	    "the result says %ld allowed, the proxy %ld:\n%.3000s", said,
	    allowed, l.err);
	ck_assert_msg(strstr(l.err, "refused") != NULL,
	    "the relay's refusals are not reported:\n%.3000s", l.err);
	ck_assert_int_eq(records(), 0);
	free(job);
	free(tok);
}
END_TEST

/*
 * 17.4: the broker stops answering (SIGSTOP) while the job streams
 * through the relay. The job's requests and output go on meanwhile: 20
 * more lines arrive while the broker is stopped.
 */
START_TEST(a_stopped_broker_does_not_freeze_the_job)
{
	char script[1024];
	struct launched l;

	snprintf(script, sizeof(script),
	    "i=0; while [ $i -lt 2000 ]; do "
	    "c=$(curl -s -m 20 -o /dev/null -w '%%{http_code}' "
	    "http://api.test:%u/ok/x); echo req $i $c; i=$((i+1)); done",
	    upstream_port(plain));
	launch(&l, false, 0, script);
	ck_assert_msg(read_until(&l, "req 3 ", 60000),
	    "no traffic:\n%.1500s\n%.1500s", l.out, l.err);
	ck_assert_int_eq(kill(st.broker.pid, SIGSTOP), 0);
	/* What the job did before the broker stopped is counted out: then
	 * 20 more lines, past several heartbeats or watches of the broker,
	 * while it is still stopped. */
	(void)read_until(&l, "\x01", 1000);
	size_t at = l.nout;
	bool moved = false;
	for (int i = 0; i < 150 && !moved; i++) {
		(void)read_until(&l, "\x01", 100);
		int lines = 0;
		for (const char *p = l.out + at; (p = strchr(p, '\n')) != NULL;
		     p++)
			lines++;
		moved = lines >= 20;
	}
	kill(st.broker.pid, SIGCONT);
	ck_assert_msg(moved,
	    "the job's traffic froze while the broker was stopped:\n%.2000s",
	    l.out + at);
	kill(l.pid, SIGTERM);
	int status = finish(&l, 60000);
	ck_assert_msg(status != -1, "cordon run did not stop:\n%.3000s", l.err);
	ck_assert_msg(strstr(l.err, "stopped (stopped)") != NULL, "%.3000s",
	    l.err);
}
END_TEST

/*
 * 17.4: the reader of cordon run's stdout stops reading (a pager held)
 * while the job prints on. The loop does not wait on that write: SIGTERM
 * starts the stop path at once, and the token is dead while the reader
 * still reads nothing. Once it reads again, cordon run ends.
 */
START_TEST(a_stalled_reader_does_not_hold_up_the_stop)
{
	struct launched l;
	bool dead = false;

	launch(&l, false, 0, GET_TOKEN "echo TOKEN=$T >&2; yes line");
	for (int i = 0; i < 600 && strstr(l.err, "TOKEN=crd_") == NULL; i++) {
		struct pollfd p = { l.err_fd, POLLIN, 0 };
		if (poll(&p, 1, 100) == 1)
			(void)take(l.err_fd, l.err, sizeof(l.err), &l.nerr);
	}
	char *tok = printed_token(l.err);
	/* Our end of its stdout is full by now, and stays so. */
	sleep(1);
	ck_assert_int_eq(kill(l.pid, SIGTERM), 0);
	for (int i = 0; i < 150 && !dead; i++) {
		dead = !harness_token_active(&st.broker, st.verifier, tok);
		if (!dead)
			usleep(200000);
	}
	ck_assert_msg(dead,
	    "SIGTERM did not stop the job while its output waited");
	int status = finish(&l, 60000);
	ck_assert_msg(status == 128 + 9, "status %d\n%.3000s", status, l.err);
	ck_assert_msg(strstr(l.err, "stopped (stopped)") != NULL, "%.3000s",
	    l.err);
	ck_assert_int_eq(records(), 0);
	free(tok);
}
END_TEST

/*
 * A job revoked before the launcher had its channel (an orchestrator's
 * revoke right after it asked for the job): the proxy refuses the
 * channel, and the result says the job was revoked, not that the
 * launcher failed. The proxy is held (SIGSTOP) while the revoke lands.
 */
START_TEST(a_job_revoked_before_it_ran_is_reported_revoked)
{
	char input[400], idline[128] = "", path[160];
	int po[2], pe[2], idp[2];
	size_t n = 0;
	pid_t pid;

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	ck_assert_int_eq(pipe(po), 0);
	ck_assert_int_eq(pipe(pe), 0);
	ck_assert_int_eq(pipe(idp), 0);
	ck_assert_int_eq(kill(st.proxy.pid, SIGSTOP), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		dup2(idp[1], 3);
		execl(harness_bin("cordon"), "cordon", "run", "--json",
		    "--config", st.launcher_cfg, "--manifest", "loop-job",
		    "--input", input, "--id-fd", "3", "--", "/bin/true",
		    (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	close(idp[1]);
	while (strchr(idline, '\n') == NULL && n < sizeof(idline) - 1) {
		struct pollfd p = { idp[0], POLLIN, 0 };
		ck_assert_msg(poll(&p, 1, 30000) == 1, "no job id");
		ssize_t k = read(idp[0], idline + n, sizeof(idline) - 1 - n);
		ck_assert_int_gt(k, 0);
		n += (size_t)k;
		idline[n] = '\0';
	}
	idline[strcspn(idline, "\n")] = '\0';
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", idline);
	json_decref(harness_expect(&st.broker, 200, "POST", path, st.admin,
	    NULL, json_pack("{s:s}", "reason", "early")));
	ck_assert_int_eq(kill(st.proxy.pid, SIGCONT), 0);
	struct launched l = { .pid = pid, .out_fd = po[0], .err_fd = pe[0] };
	int status = finish(&l, 60000);
	close(idp[0]);
	json_t *j = json_loads(l.out, 0, NULL);
	ck_assert_msg(j != NULL, "no result (status %d): %.3000s", status,
	    l.err);
	ck_assert_msg(strcmp(json_string_value(
				 json_object_get(j, "stop_reason"))
			      ?: "",
			  "revoked") == 0,
	    "stop_reason %s: %.3000s",
	    json_string_value(json_object_get(j, "stop_reason")), l.err);
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	ck_assert_int_eq(records(), 0);
	json_decref(j);
}
END_TEST

/*
 * 17.4: the launcher learns of an operator's revoke from the broker's
 * revocation feed, as a watcher: while its job runs its long poll waits
 * at the broker (feed_watchers), and the revoke, which waits for the
 * feed's followers, does not wait for it (the proxy is the one follower).
 */
START_TEST(the_launcher_follows_the_revocation_feed)
{
	struct launched l;
	long status = 0;
	long watchers = 0;

	launch(&l, true, 0, "echo started; sleep 100");
	for (int i = 0; i < 200 && watchers < 1; i++) {
		json_t *h = harness_get_json(&st.broker, "/healthz", &status);
		watchers = (long)json_integer_value(
		    json_object_get(h, "feed_watchers"));
		json_decref(h);
		if (watchers < 1)
			usleep(100000);
	}
	ck_assert_msg(watchers >= 1,
	    "no launcher waits on the broker's revocation feed");
	/* The job's id: the only job the broker ran in this test. */
	json_t *jobs = harness_expect(&st.broker, 200, "GET",
	    "/v1/audit?limit=100", st.admin, NULL, NULL);
	const char *job = NULL;
	json_t *rec;
	size_t i;
	json_array_foreach(json_object_get(jobs, "records"), i, rec)
	{
		if (strcmp(json_string_value(json_object_get(rec, "event"))
			    ?: "",
			"job_created") == 0)
			job = json_string_value(json_object_get(rec, "job"));
	}
	ck_assert_ptr_nonnull(job);
	char path[160];
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_t *rv = harness_expect(&st.broker, 200, "POST", path, st.admin,
	    NULL, json_pack("{s:s}", "reason", "operator test"));
	json_t *prop = json_object_get(rv, "propagated");
	ck_assert_int_eq(json_integer_value(json_object_get(prop, "followers")),
	    1);
	ck_assert_int_eq(json_array_size(json_object_get(prop, "gone")), 0);
	json_decref(rv);
	json_decref(jobs);
	int code = finish(&l, 60000);
	ck_assert_msg(code == 128 + 9, "status %d\n%.3000s", code, l.err);
	json_t *j = json_loads(l.out, 0, NULL);
	ck_assert_msg(j != NULL, "no result: %.3000s", l.err);
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "revoked");
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("runloop");
	TCase *tc = tcase_create("runloop");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc,
	    a_write_to_a_closed_channel_does_not_kill_the_launcher);
	tcase_add_test(tc, a_closed_stdout_stops_the_job_through_its_stop_path);
	tcase_add_test(tc, the_job_gets_sigpipe_at_its_default);
	tcase_add_test(tc, https_jobs_whose_clients_close_early);
	tcase_add_test(tc, a_flood_of_connections_starves_nothing);
	tcase_add_test(tc, a_stopped_broker_does_not_freeze_the_job);
	tcase_add_test(tc, the_launcher_follows_the_revocation_feed);
	tcase_add_test(tc, a_stalled_reader_does_not_hold_up_the_stop);
	tcase_add_test(tc, a_job_revoked_before_it_ran_is_reported_revoked);
	tcase_add_test(tc,
	    a_careless_callers_signals_reach_neither_cordon_nor_the_job);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
