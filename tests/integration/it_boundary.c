/*
 * The sandbox's boundary as a hostile job meets it (issue 15, items 1, 2,
 * 3, 7, 8). `cordon run`, the real binary, is started the way an operator's
 * root shell would start it: in a session whose controlling terminal is a
 * pty, in a process group with a stopped root process, holding
 * descriptors without O_CLOEXEC on a host directory (fd 7 and 13), on /
 * (fd 10 and 12), an O_PATH one (fd 9) and the terminal (fd 8). The job
 * (jobs/boundary/probe.py, copied in) lists its descriptors and tries
 * each way out: /proc/self/fd, openat, TIOCSTI on every fd, kill(0) and
 * kill(-1), F_SETOWN at the outside process, socket families off the allow
 * list, netlink's uevents, raw sockets, a host abstract socket, the masked
 * and read-only /proc paths and /sys. The shell side then checks that the
 * stopped process is still stopped and that nothing was typed into the
 * terminal. A second test reads the start tokens in
 * /run/cordon/tokens.json and sees them die at the stop; a third looks at
 * the descriptors of cordon serve's `cordon run` and of the sandbox's
 * PID 1 from outside.
 */
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct stack stk;

static pid_t first_child(pid_t pid);

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 360000 };
	char path[400], *text;
	FILE *f;
	long n;

	signal(SIGPIPE, SIG_IGN);
	stack_start(&stk, &o);
	json_t *m = json_pack("{s:s, s:[s], s:{s:s}, "
			      "s:[{s:s, s:s, s:{s:[s]}, s:i, s:s, s:b}], "
			      "s:[{s:s, s:i, s:[s], s:s}], "
			      "s:{s:i, s:i, s:i, s:i}}",
	    "name", "boundary", "command", "/bin/true", "env", "LANG",
	    "C.UTF-8", "capabilities", "name", "x.read", "audience", "api",
	    "params", "t", "1", "ttl_seconds", 900, "reason", "read x",
	    "mint_at_start", 1, "egress", "host", "api.test", "port", 8080,
	    "methods", "GET", "reason", "the api", "limits", "wall_seconds", 60,
	    "memory_mb", 512, "pids", 64, "output_kb", 256);
	json_decref(harness_expect(&stk.broker, 200, "PUT",
	    "/v1/manifests/boundary", stk.admin, NULL, m));

	/* The input: the probe, copied in as /work/repo/probe.py. */
	snprintf(path, sizeof(path), "%s/repo", stk.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	f = fopen(CORDON_SOURCE_DIR "/tests/integration/jobs/boundary/probe.py",
	    "re");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	snprintf(path, sizeof(path), "%s/repo/probe.py", stk.inputs);
	harness_write_file(path, text);
	free(text);
}

static void
teardown(void)
{
	stack_stop(&stk);
}

/* Reads fd into buf (capped, NUL-terminated) as long as it gives. */
static void
drain_into(int fd, char *buf, size_t cap, size_t *len, bool *eof)
{
	for (;;) {
		ssize_t n;
		if (*len + 1 >= cap) {
			char sink[4096];
			n = read(fd, sink, sizeof(sink));
		} else {
			n = read(fd, buf + *len, cap - 1 - *len);
			if (n > 0)
				*len += (size_t)n;
		}
		if (n == 0)
			*eof = true;
		if (n <= 0)
			break;
	}
	buf[*len] = '\0';
}

/* What the shell side saw once `cordon run` had ended. */
struct shell_report {
	char victim_state; /* /proc/<victim>/stat's state: 'T' stopped */
	int continued; /* waitpid saw WIFCONTINUED */
	int queued; /* bytes waiting in the terminal's input queue */
	int status; /* cordon run's exit status */
};

/* The lowest fd the shell's copies may take: above 0-2 and 7-13, the ones
 * it plants. */
#define PLANT_ABOVE 14

/* path opened (O_CLOEXEC: a source, not a planted fd) at PLANT_ABOVE or
 * above: the fd, or -1. */
static int
open_above(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC), moved;

	if (fd < 0)
		return -1;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, PLANT_ABOVE);
	close(fd);
	return moved;
}

/*
 * The operator's shell, in the child L: a session of its own with the pty
 * as its controlling terminal; a stopped root process V leading a process
 * group, and cordon run (C) in that group, with the inherited fds. Writes
 * a struct shell_report to rep and exits.
 */
static void __attribute__((noreturn)) operators_shell(const char *slave_path,
    const char *hostdir, char **argv, int out, int err, int rep)
{
	int slave, st;
	struct shell_report r = { .victim_state = '?' };
	pid_t c, v;
	char path[64], stat[512] = "", vbuf[16], *p;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (setsid() < 0)
		_exit(120);
	/* No O_NOCTTY: a session leader opening a terminal makes it its
	 * controlling one, as a login does. */
	slave = open(slave_path, O_RDWR);
	if (slave < 0)
		_exit(121);
	v = fork();
	if (v == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	if (v < 0)
		_exit(122);
	setpgid(v, v);
	kill(v, SIGSTOP);
	if (waitpid(v, &st, WUNTRACED) != v || !WIFSTOPPED(st))
		_exit(123);
	/* The probe's arguments: the victim's pid, which is its group's. */
	snprintf(vbuf, sizeof(vbuf), "%d", (int)v);
	for (char **a = argv; *a != NULL; a++)
		if (strcmp(*a, "VICTIM") == 0)
			*a = vbuf;
	c = fork();
	if (c == 0) {
		/* Above every fd planted below, so that no dup2 lands on a
		 * source still to be planted (whatever the test inherited sits
		 * where these would otherwise open). */
		int null = open_above("/dev/null", O_RDONLY);
		int dir = open_above(hostdir, O_RDONLY | O_DIRECTORY);
		int opath = open_above(hostdir, O_PATH | O_DIRECTORY);
		int root = open_above("/", O_RDONLY | O_DIRECTORY);
		int tty = fcntl(slave, F_DUPFD_CLOEXEC, PLANT_ABOVE);
		int o = fcntl(out, F_DUPFD_CLOEXEC, PLANT_ABOVE);
		int e = fcntl(err, F_DUPFD_CLOEXEC, PLANT_ABOVE);
		/* In the stopped process's group, in the shell's session. */
		if (setpgid(0, v) < 0)
			_exit(124);
		/* Without O_CLOEXEC, as a careless parent leaves them; 12 and
		 * 13 as a shell's own leaked ones. */
		if (null < 0 || dir < 0 || opath < 0 || root < 0 || tty < 0 ||
		    o < 0 || e < 0 || dup2(null, 0) < 0 || dup2(o, 1) < 0 ||
		    dup2(e, 2) < 0 || dup2(dir, 7) < 0 || dup2(tty, 8) < 0 ||
		    dup2(opath, 9) < 0 || dup2(root, 10) < 0 ||
		    dup2(root, 12) < 0 || dup2(dir, 13) < 0)
			_exit(125);
		execv(argv[0], argv);
		_exit(126);
	}
	if (c < 0)
		_exit(127);
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (waitpid(v, &st, WNOHANG | WCONTINUED) == v && WIFCONTINUED(st))
		r.continued = 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)v);
	if (harness_read_line(path, stat, sizeof(stat)) == 0 &&
	    (p = strrchr(stat, ')')) != NULL && p[1] == ' ')
		r.victim_state = p[2];
	if (ioctl(slave, FIONREAD, &r.queued) < 0)
		r.queued = -1;
	kill(v, SIGKILL);
	waitpid(v, NULL, 0);
	if (write(rep, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(127);
	_exit(0);
}

/* The result the probe printed for name, or NULL. */
static const char *
probe_says(const char *text, const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	for (const char *p = text; p != NULL && *p != '\0';
	     p = strchr(p, '\n'), p = p != NULL ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			size_t l = strcspn(p + n + 1, "\n");
			snprintf(buf, len, "%.*s", (int)l, p + n + 1);
			return buf;
		}
	return NULL;
}

/* What the probe showed that it should not have: every one, so that a
 * failure lists them all. */
static char problems[1 << 14];

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
problem(const char *fmt, ...)
{
	size_t used = strlen(problems);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(problems + used, sizeof(problems) - used, fmt, ap);
	va_end(ap);
	used = strlen(problems);
	snprintf(problems + used, sizeof(problems) - used, "\n");
}

/* Every line of the probe whose name starts with prefix says want (one
 * of a '|'-separated list); at least one such line. */
static void
all_say(const char *text, const char *prefix, const char *want)
{
	size_t n = strlen(prefix), seen = 0;

	for (const char *p = text; p != NULL && *p != '\0';
	     p = strchr(p, '\n'), p = p != NULL ? p + 1 : NULL) {
		if (strncmp(p, prefix, n) != 0)
			continue;
		const char *v = strchr(p, ' ');
		size_t l = v != NULL ? strcspn(v + 1, "\n") : 0;
		bool ok = false;
		for (const char *w = want; v != NULL && *w != '\0';) {
			size_t wl = strcspn(w, "|");
			if (wl == l && strncmp(w, v + 1, l) == 0)
				ok = true;
			w += wl + (w[wl] == '|');
		}
		if (!ok)
			problem("%.*s (want %s)", (int)strcspn(p, "\n"), p,
			    want);
		seen++;
	}
	if (seen == 0)
		problem("no %s line", prefix);
}

START_TEST(the_callers_descriptors_session_and_group_stay_outside)
{
	static char out[1 << 18], err[1 << 16];
	char input[400], cfg[400], hostdir[300], path[400], slave_path[64];
	char abstract[64], b[256];
	size_t outlen = 0, errlen = 0;
	bool out_eof = false, err_eof = false;
	int po[2], pe[2], pr[2], master, ls, st;
	struct shell_report r = { 0 };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	time_t t0 = time(NULL);
	pid_t shell;

	snprintf(hostdir, sizeof(hostdir), "%s", harness_tmpdir());
	snprintf(path, sizeof(path), "%s/host-secret", hostdir);
	harness_write_file(path, "the host's\n");
	snprintf(input, sizeof(input), "%s/repo:repo", stk.inputs);
	snprintf(cfg, sizeof(cfg), "%s", stk.launcher_cfg);
	/* A host abstract unix socket: the job's netns has its own. */
	snprintf(abstract, sizeof(abstract), "cordon-boundary-%d",
	    (int)getpid());
	memcpy(sun.sun_path + 1, abstract, strlen(abstract));
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(ls, 0);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&sun,
			     (socklen_t)(offsetof(struct sockaddr_un,
					     sun_path) +
				 1 + strlen(abstract))),
	    0);
	ck_assert_int_eq(listen(ls, 8), 0);

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	ck_assert_int_eq(ptsname_r(master, slave_path, sizeof(slave_path)), 0);
	ck_assert_int_eq(pipe2(po, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(pipe2(pe, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(pipe2(pr, O_CLOEXEC), 0);

	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", cfg, "--manifest", "boundary", "--input", input,
		"--", "/usr/bin/python3", "/work/repo/probe.py", "VICTIM",
		"VICTIM", abstract, hostdir, NULL };
	fflush(NULL);
	shell = fork();
	ck_assert_int_ge(shell, 0);
	if (shell == 0)
		operators_shell(slave_path, hostdir, argv, po[1], pe[1], pr[1]);
	close(po[1]);
	close(pe[1]);
	close(pr[1]);
	while (!(out_eof && err_eof) && time(NULL) - t0 < 60) {
		struct pollfd p[2] = { { po[0], POLLIN, 0 },
			{ pe[0], POLLIN, 0 } };
		poll(p, 2, 200);
		drain_into(po[0], out, sizeof(out), &outlen, &out_eof);
		drain_into(pe[0], err, sizeof(err), &errlen, &err_eof);
	}
	ck_assert_msg(out_eof && err_eof, "cordon run did not end: %s", err);
	ck_assert_int_eq(read(pr[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	ck_assert_int_eq(waitpid(shell, &st, 0), shell);
	close(po[0]);
	close(pe[0]);
	close(pr[0]);
	close(master);
	close(ls);

	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (%d): %s\n%s",
	    r.status, out, err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	const char *etext = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stderr"),
		"text"));
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(probe_says(text, "end", b, sizeof(b)) != NULL,
	    "the probe did not finish:\n%s\n%s", text, etext ?: "");

	/* 1. Exactly 0, 1 and 2, none of them the host's. */
	all_say(text, "fds", "0,1,2");
	all_say(text, "host_reached", "none");
	all_say(text, "proc1_", "ENOENT|EACCES|EPERM");
	all_say(text, "dev_tty", "ENOENT|ENXIO|EACCES");
	all_say(text, "tiocsti_", "EPERM");
	all_say(text, "tioclinux_", "EPERM");
	/* A session and a group of the sandbox's own (its PID 1's), no
	 * controlling terminal. */
	all_say(text, "sid", "1");
	all_say(text, "pgrp", "1");
	all_say(text, "tty_nr", "0");
	/* 3. The stopped root process in the caller's group stayed stopped;
	 * nothing was typed into the caller's terminal; SIGIO owners can
	 * name nothing outside. */
	if (r.victim_state != 'T' || r.continued != 0)
		problem("the stopped process outside was resumed (state %c, "
			"continued %d)",
		    r.victim_state, r.continued);
	if (r.queued != 0)
		problem("%d bytes typed into the caller's terminal", r.queued);
	all_say(text, "setown_", "ESRCH");
	all_say(text, "kill_victim", "ESRCH");
	all_say(text, "pidfd_victim", "ESRCH");
	/* 2. Socket families: an allow list. */
	all_say(text, "socket_", "EAFNOSUPPORT");
	all_say(text, "netlink_KOBJECT_UEVENT", "EPROTONOSUPPORT");
	all_say(text, "netlink_SOCK_DIAG", "EPROTONOSUPPORT");
	all_say(text, "netlink_AUDIT", "EPROTONOSUPPORT");
	all_say(text, "netlink_NETFILTER", "EPROTONOSUPPORT");
	all_say(text, "netlink_GENERIC", "EPROTONOSUPPORT");
	all_say(text, "netlink_XFRM", "EPROTONOSUPPORT");
	all_say(text, "netlink_CONNECTOR", "EPROTONOSUPPORT");
	all_say(text, "netlink_ROUTE", "ok");
	all_say(text, "inetproto_", "EPROTONOSUPPORT");
	all_say(text, "inet_mptcp", "ok");
	all_say(text, "raw_inet", "EPERM|EACCES");
	all_say(text, "ping_inet", "EPERM|EACCES");
	all_say(text, "unix_abstract_host", "ECONNREFUSED");
	all_say(text, "inet_relay", "ok");
	all_say(text, "inet6", "ok");
	/* 7. Host information: masked, read-only, or not there. */
	all_say(text, "read_", "0|ENOENT");
	all_say(text, "list_/proc/", "0|ENOENT");
	all_say(text, "list_/sys", "ENOENT");
	all_say(text, "ro_", "ro|absent");
	if (r.status != 0)
		problem("cordon run exited %d", r.status);
	ck_assert_msg(problems[0] == '\0', "the boundary leaks:\n%s", problems);
	json_decref(j);
}
END_TEST

/* Starts argv (cordon run, streaming) with nothing open but 0 (/dev/null),
 * 1 and 2 (pipes, *ret_out and *ret_err, non-blocking): its pid. */
static pid_t
spawn_streaming(char **argv, int *ret_out, int *ret_err)
{
	int po[2], pe[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(po, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(pipe2(pe, O_CLOEXEC | O_NONBLOCK), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 ||
		    dup2(pe[1], 2) < 0)
			_exit(127);
		closefrom(3);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	*ret_out = po[0];
	*ret_err = pe[0];
	return pid;
}

/* Reads out and err until out holds word (60 s at most), asserting it
 * came. */
static void
wait_for(int outfd, int errfd, const char *word, char *out, size_t outcap)
{
	static char err[1 << 16];
	size_t outlen = 0, errlen = 0;
	bool out_eof = false, err_eof = false;
	time_t t0 = time(NULL);

	out[0] = err[0] = '\0';
	while (strstr(out, word) == NULL && !out_eof && time(NULL) - t0 < 60) {
		struct pollfd p[2] = { { outfd, POLLIN, 0 },
			{ errfd, POLLIN, 0 } };
		poll(p, 2, 200);
		drain_into(outfd, out, outcap, &outlen, &out_eof);
		drain_into(errfd, err, sizeof(err), &errlen, &err_eof);
	}
	ck_assert_msg(strstr(out, word) != NULL, "no %s: %s\n%s", word, out,
	    err);
}

START_TEST(start_tokens_are_in_the_file_and_die_at_the_stop)
{
	static char out[1 << 16];
	char input[400], b[4096];
	int outfd, errfd, st;
	pid_t pid;
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--config",
		stk.launcher_cfg, "--manifest", "boundary", "--input", input,
		"--", "/bin/sh", "-c",
		"stat -c 'mode=%a uid=%u' /run/cordon/tokens.json; "
		"echo env=$(env | grep -c crd_); "
		"echo tokens=$(cat /run/cordon/tokens.json); echo READY; "
		"exec sleep 60",
		NULL };

	snprintf(input, sizeof(input), "%s/repo:repo", stk.inputs);
	pid = spawn_streaming(argv, &outfd, &errfd);
	wait_for(outfd, errfd, "READY", out, sizeof(out));
	/* Read-only to the job's uid alone; in no environment variable. */
	ck_assert_msg(strstr(out, "mode=400 uid=1000") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "env=0") != NULL, "%s", out);
	const char *t = strstr(out, "tokens=");
	ck_assert_ptr_nonnull(t);
	json_t *file = json_loadb(t + 7, strcspn(t + 7, "\n"), 0, NULL);
	ck_assert_msg(file != NULL, "tokens.json is not JSON: %s", out);
	json_t *tokens = json_object_get(file, "tokens");
	ck_assert_int_eq(json_array_size(tokens), 1);
	json_t *one = json_array_get(tokens, 0);
	ck_assert_str_eq(json_string_value(json_object_get(one, "capability")),
	    "x.read");
	const char *tok =
	    json_string_value(json_object_get(one, "access_token"));
	ck_assert_ptr_nonnull(tok);
	snprintf(b, sizeof(b), "%s", tok);
	json_decref(file);
	ck_assert_msg(harness_token_active(&stk.broker, stk.verifier, b),
	    "the start token is not active while the job runs");

	/* The stop (SIGTERM to cordon run) revokes it. */
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	close(outfd);
	close(errfd);
	ck_assert(!harness_token_active(&stk.broker, stk.verifier, b));
}
END_TEST

/* The inode of an established socket on 127.0.0.1:3128 that has been
 * accepted, in the network namespace of pid, or 0. */
static unsigned long
accepted_relay_inode(pid_t pid)
{
	char path[64], line[512];
	unsigned long inode = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/tcp", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (inode == 0 && fgets(line, sizeof(line), f) != NULL) {
		unsigned local_port, state;
		unsigned long ino;
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line,
			" %*d: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*u %*u "
			"%lu",
			&local_port, &state, &ino) == 3 &&
		    local_port == 3128 && state == 1 /* ESTABLISHED */)
			inode = ino;
	}
	fclose(f);
	return inode;
}

/* Everything cordon run opens is O_CLOEXEC: its relay's accepted
 * connections too (it started with 0-2 alone, so every other fd is its
 * own). */
START_TEST(the_launchers_own_descriptors_are_cloexec)
{
	static char out[1 << 16];
	char input[400], path[64], want[64], target[64], info[512];
	int outfd, errfd, st;
	unsigned long inode = 0;
	pid_t pid, init = 0;
	bool found = false;
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--config",
		stk.launcher_cfg, "--manifest", "boundary", "--input", input,
		"--", "/usr/bin/python3", "-c",
		"import socket, time\n"
		"s = socket.create_connection(('127.0.0.1', 3128))\n"
		"print('READY', flush=True)\n"
		"time.sleep(60)\n",
		NULL };

	snprintf(input, sizeof(input), "%s/repo:repo", stk.inputs);
	pid = spawn_streaming(argv, &outfd, &errfd);
	wait_for(outfd, errfd, "READY", out, sizeof(out));
	/* Accepted once the server side has an inode in the job's netns. */
	for (int i = 0; i < 100 && inode == 0; i++) {
		init = first_child(pid);
		inode = init > 0 ? accepted_relay_inode(init) : 0;
		if (inode == 0)
			usleep(100000);
	}
	ck_assert_msg(inode != 0, "the relay did not accept");
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	for (int fd = 3; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		found |= strcmp(target, want) == 0;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid,
		    fd);
		/* "pos:" first, then "flags:\t0NNNNNNN" (octal) */
		FILE *f = fopen(path, "re");
		unsigned long flags = 0;
		ck_assert_ptr_nonnull(f);
		while (fgets(info, sizeof(info), f) != NULL)
			if (sscanf(info, "flags: %lo", &flags) == 1)
				break;
		fclose(f);
		ck_assert_msg(flags & O_CLOEXEC,
		    "cordon run's fd %d (%s) is not O_CLOEXEC", fd, target);
	}
	ck_assert_msg(found, "cordon run holds no %s", want);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	close(outfd);
	close(errfd);
}
END_TEST

/* The descriptors of process pid that are /dev/null (the device, from
 * wherever it is mounted), as "0,5". */
static void
null_fds(pid_t pid, char *buf, size_t len)
{
	char path[64];
	struct stat null, sb;

	buf[0] = '\0';
	ck_assert_int_eq(stat("/dev/null", &null), 0);
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		if (stat(path, &sb) == 0 && S_ISCHR(sb.st_mode) &&
		    sb.st_rdev == null.st_rdev)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%d",
			    buf[0] != '\0' ? "," : "", fd);
	}
}

/* The descriptors of process pid, as "0,1,2". */
static void
all_fds(pid_t pid, char *buf, size_t len)
{
	char path[64];
	struct stat sb;

	buf[0] = '\0';
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		if (lstat(path, &sb) == 0)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%d",
			    buf[0] != '\0' ? "," : "", fd);
	}
}

/* The first child of pid (its main thread's), or 0. */
static pid_t
first_child(pid_t pid)
{
	char path[64], line[256];
	DIR *d;
	struct dirent *e;
	pid_t child = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return 0;
	while (child == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children",
		    (int)pid, e->d_name);
		if (harness_read_line(path, line, sizeof(line)) == 0)
			child = (pid_t)strtol(line, NULL, 10);
	}
	closedir(d);
	return child;
}

/* Whether pid is blocked in wait4(2): the sandbox's PID 1 is once it has
 * started the job and closed its own descriptors (it calls it nowhere
 * else), so what it holds then is what it keeps. */
static bool
reaping(pid_t pid)
{
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	return harness_read_line(path, line, sizeof(line)) == 0 &&
	    strtol(line, NULL, 10) == SYS_wait4;
}

/* cordon serve's `cordon run` children hold no stray copy of serve's
 * /dev/null, and the sandbox's PID 1 holds /dev/null on 0-2 and nothing
 * else, whatever the launcher had open; the job holds 0-2 alone. PID 1 is
 * looked at once it reaps: between the job's fork and that, it still
 * holds its control socket and the job's stdout and stderr ("the
 * sandbox's PID 1 holds 0,1,2,10,12,14" in 1 run of 20 at load 10). */
START_TEST(serve_and_the_sandbox_init_leak_no_descriptor)
{
	struct daemon serve;
	char cfg[2048], path[160], fds[256];
	pid_t run = 0, init = 0, job = 0;
	json_t *j;

	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"proxy\": \"%s\", \"hatch\": \"%s\", "
	    "\"launcher_key_file\": \"%s/var/broker/keys/launcher.key\", "
	    "\"uid_base\": 361000}",
	    stk.broker.base, stk.proxy.base, stk.hatch.base, stk.broker.dir);
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);
	snprintf(path, sizeof(path), "%s/repo", stk.inputs);
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", stk.launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s]}", "manifest", "boundary",
		"inputs", "src", path, "dst", "repo", "command", "/bin/sleep",
		"60"));
	const char *id = json_string_value(json_object_get(j, "job"));
	ck_assert_ptr_nonnull(id);
	/* serve -> its spawner -> cordon run -> the sandbox's PID 1 ->
	 * sleep, once PID 1 reaps and sleep runs (no longer PID 1's copy). */
	for (int i = 0; i < 300 && init == 0; i++) {
		pid_t spawner = first_child(serve.pid);
		char exe[64] = "";
		run = spawner > 0 ? first_child(spawner) : 0;
		init = run > 0 ? first_child(run) : 0;
		job = init > 0 ? first_child(init) : 0;
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)job);
		if (job > 0 && readlink(path, exe, sizeof(exe) - 1) < 0)
			exe[0] = '\0';
		if (job == 0 || !reaping(init) || strstr(exe, "sleep") == NULL)
			init = 0; /* not yet the job's */
		if (init == 0)
			usleep(100000);
	}
	ck_assert_msg(init > 0,
	    "no sandbox under serve (or its PID 1 never in wait4, its job "
	    "never sleep)");
	null_fds(run, fds, sizeof(fds));
	ck_assert_msg(strcmp(fds, "0") == 0, "cordon run holds /dev/null on %s",
	    fds);
	all_fds(init, fds, sizeof(fds));
	ck_assert_msg(strcmp(fds, "0,1,2") == 0, "the sandbox's PID 1 holds %s",
	    fds);
	null_fds(init, fds, sizeof(fds));
	ck_assert_str_eq(fds, "0,1,2");
	all_fds(job, fds, sizeof(fds));
	ck_assert_msg(strcmp(fds, "0,1,2") == 0, "the job holds %s", fds);
	snprintf(path, sizeof(path), "/v1/jobs/%s/stop", id);
	json_decref(harness_call(&serve, "POST", path, stk.launcher, NULL, NULL,
	    &(long){ 0 }));
	json_decref(j);
	ck_assert_int_eq(daemon_stop(&serve), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("boundary");
	TCase *tc = tcase_create("boundary");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    the_callers_descriptors_session_and_group_stay_outside);
	tcase_add_test(tc, start_tokens_are_in_the_file_and_die_at_the_stop);
	tcase_add_test(tc, serve_and_the_sandbox_init_leak_no_descriptor);
	tcase_add_test(tc, the_launchers_own_descriptors_are_cloexec);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
