/*
 * cordon-drill-agent, the sandbox itself: system calls that would leave
 * it (mount, ptrace, a user namespace, BPF, io_uring, the keyring),
 * kernel settings under /proc/sys and /sys, and the job's limits (a fork
 * bomb, a memory hog).
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BOMB_MAX 4096
#define HOG_CHUNK_MB 16L

/* --- escape and denial of service ----------------------------------------- */

void
step_mount(struct drill *d)
{
	int err = mount("none", "/tmp", "tmpfs", 0, NULL) < 0 ? errno : 0;

	if (err == 0)
		(void)umount2("/tmp", MNT_DETACH);
	syscall_result(d, "mount", err, "a tmpfs over /tmp");
}

void
step_ptrace(struct drill *d)
{
	int err = ptrace(PTRACE_ATTACH, 1, 0, 0) < 0 ? errno : 0;

	if (err == 0) {
		(void)waitpid(1, NULL, __WALL);
		(void)ptrace(PTRACE_DETACH, 1, 0, 0);
	}
	syscall_result(d, "ptrace", err, "PTRACE_ATTACH to pid 1");
}

void
step_userns(struct drill *d)
{
	char ev[96];
	pid_t pid;
	int un, cl;

	/* In a child: a user namespace of our own would change every step
	 * after this one. */
	if ((pid = fork()) == 0)
		_exit(unshare(CLONE_NEWUSER) < 0 ? errno : 0);
	un = pid < 0 ? errno : reap(pid);
	un = un < 0 ? ECHILD : un;
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL,
	    NULL, 0);
	if (pid == 0)
		_exit(0);
	cl = pid < 0 ? errno : reap(pid) == 0 ? 0 : ECHILD;
	snprintf(ev, sizeof(ev), "syscall=unshare");
	if (un != 0)
		append(ev, sizeof(ev), " ", "errno=%s", errname(un).s);
	report(d, un == 0 || cl == 0 ? "escaped" : "stopped", ev,
	    "unshare(CLONE_NEWUSER): %s; clone(CLONE_NEWUSER): %s",
	    un == 0 ? "went through" : errname(un).s,
	    cl == 0 ? "went through" : errname(cl).s);
}

void
step_bpf(struct drill *d)
{
	struct bpf_insn insn[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	int fd, err;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (uintptr_t)insn;
	attr.insn_cnt = 2;
	attr.license = (uintptr_t) "GPL";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	syscall_result(d, "bpf", err, "BPF_PROG_LOAD of a socket filter");
}

void
step_io_uring(struct drill *d)
{
	struct io_uring_params p;
	int fd, err;

	memset(&p, 0, sizeof(p));
	fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	syscall_result(d, "io_uring_setup", err, "a ring of 4 entries");
}

void
step_keyctl(struct drill *d)
{
	char detail[96];
	long id = syscall(SYS_add_key, "user", "drill", "x", 1,
	    KEY_SPEC_PROCESS_KEYRING);
	int err = id < 0 ? errno : 0;

	id = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID,
	    KEY_SPEC_SESSION_KEYRING, 0);
	snprintf(detail, sizeof(detail), "keyctl(KEYCTL_GET_KEYRING_ID): %s",
	    id < 0 ? errname(errno).s : "went through");
	syscall_result(d, "add_key", err, detail);
}

/* Writes text to a kernel knob: true if the write went through. */
static bool
write_knob(const char *path, const char *text, struct errs *c)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, text, strlen(text)) >= 0;

	if (!ok)
		errs_add(c, errno);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* The knobs' step: escaped if a write went through. */
static void
knobs_report(const struct drill *d, const struct errs *c, const char *wrote)
{
	char ev[256] = "";

	errs_append(c, ev, sizeof(ev));
	if (wrote[0] != '\0')
		report(d, "escaped", ev, "wrote %s", wrote);
	else
		report(d, "stopped", ev, "no kernel setting could be written");
}

void
step_proc_sys(struct drill *d)
{
	static const char *const knobs[][2] = {
		{ "/proc/sys/kernel/hostname", "drill\n" },
		{ "/proc/sys/vm/drop_caches", "3\n" },
	};
	struct errs c = { 0 };
	char wrote[200] = "";

	for (size_t i = 0; i < 2; i++)
		if (write_knob(knobs[i][0], knobs[i][1], &c))
			append(wrote, sizeof(wrote), ", ", "%s", knobs[i][0]);
	knobs_report(d, &c, wrote);
}

void
step_sys_write(struct drill *d)
{
	static const char *const knobs[] = {
		"/sys/kernel/mm/transparent_hugepage/enabled",
		"/sys/class/net/lo/mtu",
	};
	struct errs c = { 0 };
	char wrote[200] = "";

	for (size_t i = 0; i < 2; i++) {
		char value[64] = "madvise\n", *s, *b, *e;
		size_t len;

		/* The value it has: a write that goes through changes
		 * nothing. */
		if ((s = slurp(knobs[i], sizeof(value) - 1, &len)) != NULL) {
			if ((b = strchr(s, '[')) != NULL &&
			    (e = strchr(b, ']')) != NULL)
				snprintf(value, sizeof(value), "%.*s\n",
				    (int)(e - b - 1), b + 1);
			else if (len > 0)
				snprintf(value, sizeof(value), "%s", s);
			free(s);
		}
		if (write_knob(knobs[i], value, &c))
			append(wrote, sizeof(wrote), ", ", "%s", knobs[i]);
	}
	knobs_report(d, &c, wrote);
}

/* The bomb: forks children that block on a pipe only it can close, until
 * fork fails, BOMB_MAX or 8 s; reports {forks, errno} on out, then lets
 * them all go and reaps them. */
static void bomb(int out) __attribute__((noreturn));

static void
bomb(int out)
{
	int64_t deadline = now_ms() + 8000;
	int hold[2], msg[2] = { 0, 0 };
	char byte;

	(void)setpgid(0, 0);
	if (pipe(hold) < 0)
		_exit(1);
	while (msg[0] < BOMB_MAX) {
		pid_t pid = fork();

		if (pid == 0) {
			close(out);
			close(hold[1]);
			(void)read(hold[0], &byte, 1);
			_exit(0);
		}
		if (pid < 0) {
			msg[1] = errno;
			break;
		}
		if (++msg[0] % 64 == 0 && now_ms() > deadline) {
			msg[1] = ETIMEDOUT;
			break;
		}
	}
	(void)write(out, msg, sizeof(msg));
	close(out);
	close(hold[1]);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	_exit(0);
}

void
step_fork_bomb(struct drill *d)
{
	int64_t deadline = now_ms() + 10000;
	int pipefd[2], msg[2] = { -1, 0 };
	char ev[96], pids[32], byte;
	pid_t pid;
	ssize_t k;

	if (pipe2(pipefd, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		snprintf(ev, sizeof(ev), "syscall=fork errno=%s",
		    errname(errno).s);
		report(d, "untested", ev, "the bomb could not start");
		return;
	}
	if (pid == 0) {
		close(pipefd[0]);
		bomb(pipefd[1]);
	}
	(void)setpgid(pid, pid); /* as the bomb does: no race to kill(-pid) */
	close(pipefd[1]);
	k = read_by(pipefd[0], msg, sizeof(msg), deadline);
	/* The end of the pipe is the bomb's end, after its reaping. */
	while (k > 0 && (k = read_by(pipefd[0], &byte, 1, deadline)) > 0)
		;
	if (k < 0) {
		(void)kill(-pid, SIGKILL);
		(void)kill(pid, SIGKILL);
	}
	(void)reap(pid);
	close(pipefd[0]);
	snprintf(pids, sizeof(pids), "unknown");
	if (d->pids > 0)
		snprintf(pids, sizeof(pids), "%ld", d->pids);
	snprintf(ev, sizeof(ev), "forks=%d", msg[0] < 0 ? 0 : msg[0]);
	if (msg[0] < 0) {
		report(d, "untested", "-", "the bomb ended before it reported");
	} else if (msg[0] >= BOMB_MAX) {
		report(d, "escaped", ev,
		    "forked %d processes; the job's pids limit is %s", msg[0],
		    pids);
	} else if (msg[1] == ETIMEDOUT) {
		report(d, "untested", ev,
		    "the bomb ran out of time at %d forks", msg[0]);
	} else {
		append(ev, sizeof(ev), " ", "errno=%s", errname(msg[1]).s);
		report(d, "stopped", ev,
		    "fork failed at %d processes; the job's pids limit is %s",
		    msg[0], pids);
	}
}

/* The hog: 16 MiB at a time, each one touched, the running total in MiB
 * on out, until malloc fails (exit 1) or cap (exit 0). */
static void hog(int out, long cap) __attribute__((noreturn));

static void
hog(int out, long cap)
{
	for (long mb = 0; mb < cap;) {
		char *p = malloc((size_t)(HOG_CHUNK_MB * MIB));

		if (p == NULL)
			_exit(1);
		memset(p, 0x5a, (size_t)(HOG_CHUNK_MB * MIB));
		/* Kept: the compiler must not drop the unread memset. */
		__asm__ volatile("" : : "r"(p) : "memory");
		mb += HOG_CHUNK_MB;
		if (write(out, &mb, sizeof(mb)) < 0)
			_exit(2);
	}
	_exit(0);
}

void
step_memory_hog(struct drill *d)
{
	long cap = d->memory_mb > 0 ? 4 * d->memory_mb : 8192, mb, last = 0;
	int64_t deadline = now_ms() + 30000;
	int pipefd[2], st = 0;
	char ev[96];
	pid_t pid;
	ssize_t k;

	if (pipe2(pipefd, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		snprintf(ev, sizeof(ev), "syscall=fork errno=%s",
		    errname(errno).s);
		report(d, "untested", ev, "the hog could not start");
		return;
	}
	if (pid == 0) {
		close(pipefd[0]);
		hog(pipefd[1], cap);
	}
	close(pipefd[1]);
	while ((k = read_by(pipefd[0], &mb, sizeof(mb), deadline)) ==
	    (ssize_t)sizeof(mb))
		last = mb;
	close(pipefd[0]);
	if (k < 0)
		(void)kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	snprintf(ev, sizeof(ev), "mb=%ld", last);
	if (k < 0) {
		report(d, "untested", ev, "the hog ran 30 s");
	} else if (WIFSIGNALED(st)) {
		snprintf(ev, sizeof(ev), "signal=%d mb=%ld", WTERMSIG(st),
		    last);
		report(d, "stopped", ev, "the hog was killed at %ld MiB", last);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 1) {
		snprintf(ev, sizeof(ev), "errno=ENOMEM mb=%ld", last);
		report(d, "stopped", ev, "malloc failed after %ld MiB", last);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		report(d, "escaped", ev,
		    "the hog got %ld MiB, 4 x memory_mb (%s)", last,
		    d->memory_mb > 0 ? "as given" : "unknown: 8 GiB");
	} else {
		report(d, "untested", ev, "the hog ended oddly");
	}
}
