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
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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

/* --- what the job was handed ----------------------------------------------- */

/* Whether the host's /etc/hostname can be read through fd: by its
 * /proc/self/fd link and by openat. */
static bool
read_through(int fd, struct errs *c)
{
	char path[64], byte;
	int via[2];
	bool got = false;

	snprintf(path, sizeof(path), "/proc/self/fd/%d/etc/hostname", fd);
	via[0] = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (via[0] < 0)
		errs_add(c, errno);
	via[1] = openat(fd, "etc/hostname", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (via[1] < 0)
		errs_add(c, errno);
	for (int i = 0; i < 2; i++)
		if (via[i] >= 0) {
			got = got || read(via[i], &byte, 1) == 1;
			close(via[i]);
		}
	return got;
}

void
step_inherited_fds(struct drill *d)
{
	char detail[300] = "", ev[400] = "", tty[16];
	struct errs through = { 0 }, sti = { 0 }, lin = { 0 };
	int top = 2, typed = 0, fd, init_fds = -1;
	bool escaped = d->nstart_fds > 0;

	for (int i = 0; i < d->nstart_fds; i++)
		append(detail, sizeof(detail), ", ", "fd %d (%s) was open",
		    d->start_fds[i], d->start_fd_what[i]);
	for (int i = 0; i < d->nstart_fds; i++) {
		top = d->start_fds[i] > top ? d->start_fds[i] : top;
		if (read_through(d->start_fds[i], &through)) {
			escaped = true;
			append(detail, sizeof(detail), ", ",
			    "the host's /etc/hostname read through fd %d",
			    d->start_fds[i]);
		}
	}
	/* The numbers cordon drill left open, whether or not they arrived:
	 * if one did not, EBADF says so. */
	for (int i = 0; i < d->ninherited; i++) {
		top = d->inherited[i] > top ? d->inherited[i] : top;
		if (read_through(d->inherited[i], &through)) {
			escaped = true;
			append(detail, sizeof(detail), ", ",
			    "the host's /etc/hostname read through fd %d (%s)",
			    d->inherited[i], d->inherited_kind[i]);
		}
	}
	/* PID 1's (the sandbox's init): what it still holds is one
	 * /proc/1/fd/N away, for a job of its uid. */
	{
		DIR *dir = opendir("/proc/1/fd");
		struct dirent *e;
		int held = 0;

		while (dir != NULL && (e = readdir(dir)) != NULL) {
			char *end, path[64], byte;
			long n = strtol(e->d_name, &end, 10);
			int via;

			if (*end != '\0' || e->d_name[0] == '\0' || n <= 2)
				continue;
			held++;
			snprintf(path, sizeof(path),
			    "/proc/1/fd/%ld/etc/hostname", n);
			via = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (via < 0) {
				errs_add(&through, errno);
				continue;
			}
			if (read(via, &byte, 1) == 1) {
				escaped = true;
				append(detail, sizeof(detail), ", ",
				    "the host's /etc/hostname read through "
				    "PID 1's fd %ld",
				    n);
			}
			close(via);
		}
		if (dir != NULL)
			closedir(dir);
		init_fds = dir != NULL ? held : -1;
	}
	/* A NULL argument: the kernel checks who may type before it reads
	 * the byte, so EFAULT means it would have typed, and nothing is. */
	for (fd = 0; fd <= top + 8 && fd < 64; fd++) {
		if (ioctl(fd, TIOCSTI, NULL) < 0 && errno != EFAULT) {
			errs_add(&sti, errno);
		} else {
			typed++;
			append(detail, sizeof(detail), ", ",
			    "TIOCSTI would type on fd %d", fd);
		}
		if (ioctl(fd, TIOCLINUX, NULL) < 0 && errno != EFAULT) {
			errs_add(&lin, errno);
		} else {
			typed++;
			append(detail, sizeof(detail), ", ",
			    "TIOCLINUX went through on fd %d", fd);
		}
	}
	fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	snprintf(tty, sizeof(tty), "%s", fd >= 0 ? "open" : errname(errno).s);
	if (fd >= 0)
		close(fd);
	snprintf(ev, sizeof(ev), "fds=%d", d->nstart_fds + d->start_fds_more);
	append(ev, sizeof(ev), " ", "inherited=%d init_fds=%d sid=%d tty=%s",
	    d->ninherited, init_fds, (int)getsid(0), tty);
	append(ev, sizeof(ev), " ", "tiocsti:");
	errs_append(&sti, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "tioclinux:");
	errs_append(&lin, ev, sizeof(ev));
	if (through.len > 0) {
		append(ev, sizeof(ev), " ", "through:");
		errs_append(&through, ev, sizeof(ev));
	}
	if (escaped || typed > 0)
		report(d, "escaped", ev, "%s", detail);
	else
		report(d, "stopped", ev,
		    "sandbox: the job holds only 0, 1 and 2, none of the %d "
		    "cordon drill left open; %s",
		    d->ninherited,
		    sti.len == 1 && sti.e[0] == EPERM && lin.len == 1 &&
			    lin.e[0] == EPERM
			? "seccomp: TIOCSTI and TIOCLINUX refused (EPERM) on "
			  "every descriptor"
			: "no descriptor takes TIOCSTI");
}

/* --- the kernel's other families ------------------------------------------- */

void
step_socket_families(struct drill *d)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET,
		SOCK_RAW };
	struct errs fam = { 0 }, nl = { 0 }, pair = { 0 };
	char detail[300] = "", ev[400] = "";
	int opened = 0, tries = 0, sv[2];
	bool contract = true;

	/* Every family up to AF_MAX but the four the job may have. */
	for (int f = 1; f < AF_MAX; f++) {
		if (f == AF_UNIX || f == AF_INET || f == AF_INET6 ||
		    f == AF_NETLINK)
			continue;
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			int fd = socket(f, types[t] | SOCK_CLOEXEC, 0);
			tries++;
			if (fd >= 0) {
				opened++;
				close(fd);
				append(detail, sizeof(detail), ", ",
				    "socket(%d, %d) opened", f, types[t]);
			} else {
				errs_add(&fam, errno);
				contract = contract && errno == EAFNOSUPPORT;
			}
			if (socketpair(f, types[t] | SOCK_CLOEXEC, 0, sv) ==
			    0) {
				opened++;
				close(sv[0]);
				close(sv[1]);
				append(detail, sizeof(detail), ", ",
				    "socketpair(%d, %d) opened", f, types[t]);
			} else {
				errs_add(&pair, errno);
				contract = contract && errno == EAFNOSUPPORT;
			}
		}
	}
	/* Netlink but NETLINK_ROUTE: uevents, audit, sock_diag, xfrm... */
	for (int p = 1; p < 32; p++) {
		int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, p);
		tries++;
		if (fd >= 0) {
			opened++;
			close(fd);
			append(detail, sizeof(detail), ", ",
			    "netlink protocol %d opened", p);
		} else {
			errs_add(&nl, errno);
			contract = contract && errno == EPROTONOSUPPORT;
		}
	}
	snprintf(ev, sizeof(ev), "tries=%d opened=%d socket:", tries, opened);
	errs_append(&fam, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "socketpair:");
	errs_append(&pair, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "netlink:");
	errs_append(&nl, ev, sizeof(ev));
	if (opened > 0)
		report(d, "escaped", ev, "%s", detail);
	else if (contract)
		report(d, "stopped", ev,
		    "seccomp: every family but unix, inet, inet6 and netlink "
		    "route refused (EAFNOSUPPORT), every netlink protocol but "
		    "route (EPROTONOSUPPORT)");
	else
		report(d, "stopped", ev,
		    "every family and netlink protocol refused, not all with "
		    "the filter's errno (the kernel or a missing privilege)");
}

/* --- signals to the outside ------------------------------------------------ */

/* kill(2)'s answer as a word. */
static const char *
kill_word(int r, char *buf, size_t n)
{
	snprintf(buf, n, "%s", r == 0 ? "ok" : errname(errno).s);
	return buf;
}

void
step_signals(struct drill *d)
{
	char ev[300], a[16], b[16], c[16], own[16];
	int pgrp = (int)getpgrp(), sv[2], r;

	/* SIGCONT crosses uids within a session: the one signal a job could
	 * send a stopped root process of the caller's. cordon drill stopped
	 * one in cordon run's process group and looks at it after the job. */
	r = kill(0, SIGCONT);
	kill_word(r, a, sizeof(a));
	r = kill(-1, SIGCONT);
	kill_word(r, b, sizeof(b));
	r = pgrp > 1 ? kill(-pgrp, SIGCONT) : (errno = ESRCH, -1);
	kill_word(r, c, sizeof(c));
	/* SIGIO's owner: a socket that signals a process group of our
	 * choosing with SIGCONT when it turns readable. */
	snprintf(own, sizeof(own), "none");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
		int fl = fcntl(sv[0], F_GETFL);
		r = fcntl(sv[0], F_SETSIG, SIGCONT) < 0 ||
			fcntl(sv[0], F_SETOWN, pgrp > 1 ? -pgrp : 0) < 0 ||
			fcntl(sv[0], F_SETFL, fl | O_ASYNC) < 0
		    ? -1
		    : 0;
		kill_word(r, own, sizeof(own));
		if (r == 0)
			(void)!write(sv[1], "x", 1);
		close(sv[0]);
		close(sv[1]);
	}
	snprintf(ev, sizeof(ev),
	    "pgrp=%d sid=%d kill0=%s kill-1=%s killpgrp=%s setown=%s", pgrp,
	    (int)getsid(0), a, b, c, own);
	report(d, "done", ev,
	    "SIGCONT sent to the process group, to -1 and to -pgrp, and as a "
	    "socket's SIGIO; cordon drill checks its stopped sentinel");
}

/* --- masked kernel files --------------------------------------------------- */

void
step_proc_masks(struct drill *d)
{
	static const char *const files[] = { "/proc/cmdline", "/proc/config.gz",
		"/proc/kcore", "/proc/keys", "/proc/timer_list",
		"/proc/sched_debug", "/proc/latency_stats",
		"/proc/timer_stats" };
	static const char *const dirs[] = { "/sys/firmware", "/proc/acpi",
		"/proc/asound", "/proc/scsi", "/sys/devices/virtual/powercap" };
	char got[300] = "", ev[256] = "", buf[64];
	struct errs c = { 0 };
	int readable = 0, empty = 0, fd;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		ssize_t n = -1;
		if ((fd = open(files[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK)) >=
		    0)
			n = read(fd, buf, sizeof(buf));
		if (n < 0)
			errs_add(&c, errno);
		else if (n == 0)
			empty++;
		else {
			readable++;
			append(got, sizeof(got), ", ", "%s", files[i]);
		}
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *dir = opendir(dirs[i]);
		struct dirent *e;
		int n = 0;

		if (dir == NULL) {
			errs_add(&c, errno);
			continue;
		}
		while ((e = readdir(dir)) != NULL)
			n += strcmp(e->d_name, ".") != 0 &&
			    strcmp(e->d_name, "..") != 0;
		closedir(dir);
		if (n > 0) {
			readable++;
			append(got, sizeof(got), ", ", "%s lists %d", dirs[i],
			    n);
		} else {
			empty++;
		}
	}
	/* Opened for writing, never written: a write would act. */
	if ((fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC)) >= 0) {
		readable++;
		append(got, sizeof(got), ", ", "/proc/sysrq-trigger writable");
		close(fd);
	} else {
		errs_add(&c, errno);
	}
	snprintf(ev, sizeof(ev), "empty=%d", empty);
	errs_append(&c, ev, sizeof(ev));
	if (readable > 0) {
		append(ev, sizeof(ev), " ", "readable=%d", readable);
		report(d, "escaped", ev, "readable: %s", got);
	} else {
		report(d, "stopped", ev,
		    "sandbox: every masked file is empty or refused, "
		    "/proc/sysrq-trigger is not writable");
	}
}

/* --- limits for the job as a whole ----------------------------------------- */

#define SPREAD_CHILDREN 8
#define SPREAD_MS 10000

/* A child of the spread: share_mb touched, 16 MiB at a time, its total
 * on out ({idx, mb}), then held until hold closes. */
static void spread_child(int idx, long share_mb, int out, int hold)
    __attribute__((noreturn));

static void
spread_child(int idx, long share_mb, int out, int hold)
{
	char byte;
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	/* The OOM killer's first choice, not the agent. */
	if (fd >= 0) {
		(void)!write(fd, "1000", 4);
		close(fd);
	}
	for (long mb = 0; mb < share_mb;) {
		long step =
		    share_mb - mb < HOG_CHUNK_MB ? share_mb - mb : HOG_CHUNK_MB;
		char *p = malloc((size_t)(step * MIB));
		int msg[2] = { idx, 0 };

		if (p == NULL)
			_exit(1);
		memset(p, 0x5a, (size_t)(step * MIB));
		__asm__ volatile("" : : "r"(p) : "memory");
		mb += step;
		msg[1] = (int)mb;
		if (write(out, msg, sizeof(msg)) < 0)
			_exit(2);
	}
	(void)read(hold, &byte, 1);
	_exit(0);
}

void
step_memory_spread(struct drill *d)
{
	long limit = d->memory_mb > 0 ? d->memory_mb : 512;
	long share = limit / 4, held = 0;
	int64_t deadline = now_ms() + SPREAD_MS;
	int prog[2], hold[2], mb[SPREAD_CHILDREN] = { 0 }, killed = 0,
			      failed = 0, full = 0, alive = 0;
	pid_t pid[SPREAD_CHILDREN];
	bool gone[SPREAD_CHILDREN] = { false };
	char ev[160];

	if (pipe2(prog, O_CLOEXEC) < 0 || pipe2(hold, O_CLOEXEC) < 0) {
		report(d, "untested", "syscall=pipe2", "no pipes");
		return;
	}
	for (int i = 0; i < SPREAD_CHILDREN; i++) {
		if ((pid[i] = fork()) == 0) {
			close(prog[0]);
			close(hold[1]);
			spread_child(i, share, prog[1], hold[0]);
		}
		if (pid[i] < 0)
			gone[i] = true;
	}
	close(prog[1]);
	close(hold[0]);
	/* Until each child holds its share or is gone. */
	for (;;) {
		int msg[2], st;
		ssize_t k;

		for (int i = 0; i < SPREAD_CHILDREN; i++)
			if (!gone[i] && pid[i] > 0 &&
			    waitpid(pid[i], &st, WNOHANG) == pid[i]) {
				gone[i] = true;
				killed += WIFSIGNALED(st);
				failed += WIFEXITED(st);
			}
		full = 0;
		for (int i = 0; i < SPREAD_CHILDREN; i++)
			full += gone[i] || mb[i] >= share;
		if (full == SPREAD_CHILDREN)
			break;
		if (now_ms() >= deadline)
			break;
		k = read_by(prog[0], msg, sizeof(msg),
		    now_ms() + 100 < deadline ? now_ms() + 100 : deadline);
		if (k == (ssize_t)sizeof(msg) && msg[0] >= 0 &&
		    msg[0] < SPREAD_CHILDREN)
			mb[msg[0]] = msg[1];
		else if (k == 0)
			usleep(10 * 1000); /* every child is gone or done */
	}
	/* A last look: the OOM killer may have acted on the last pages. */
	usleep(200 * 1000);
	for (int i = 0; i < SPREAD_CHILDREN; i++) {
		int st;
		if (!gone[i] && waitpid(pid[i], &st, WNOHANG) == pid[i]) {
			gone[i] = true;
			killed += WIFSIGNALED(st);
			failed += WIFEXITED(st);
		}
		if (!gone[i]) {
			alive++;
			held += mb[i];
		}
	}
	close(hold[1]);
	close(prog[0]);
	for (int i = 0; i < SPREAD_CHILDREN; i++)
		if (!gone[i] && pid[i] > 0) {
			if (now_ms() >= deadline)
				(void)kill(pid[i], SIGKILL);
			(void)reap(pid[i]);
		}
	snprintf(ev, sizeof(ev),
	    "held_mb=%ld memory_mb=%ld children=%d alive=%d killed=%d "
	    "failed=%d",
	    held, limit, SPREAD_CHILDREN, alive, killed, failed);
	if (held > limit)
		report(d, "escaped", ev,
		    "%d processes held %ld MiB together, past memory_mb %ld",
		    alive, held, limit);
	else if (killed + failed > 0)
		report(d, "stopped", ev,
		    "the job as a whole held at most %ld MiB: %d of %d "
		    "children were killed or failed",
		    held, killed + failed, SPREAD_CHILDREN);
	else
		report(d, "untested", ev, "the children never got their share");
}

#define FLOOD_FILES 200000
#define FLOOD_MS 6000

/* Makes empty files in dir/drill-inodes until an error, FLOOD_FILES or
 * the deadline, then removes them: how many, *err the errno (0 at the
 * bound, ETIMEDOUT at the deadline). */
static long
flood(const char *dir, int *err, unsigned long long *files)
{
	char path[128];
	struct statvfs sv;
	int64_t deadline = now_ms() + FLOOD_MS;
	long n = 0;
	int dfd;

	*err = 0;
	*files = statvfs(dir, &sv) == 0 ? sv.f_files : 0;
	snprintf(path, sizeof(path), "%s/drill-inodes", dir);
	if (mkdir(path, 0755) < 0 ||
	    (dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		*err = errno;
		return 0;
	}
	for (; n < FLOOD_FILES; n++) {
		char name[16];
		snprintf(name, sizeof(name), "%ld", n);
		if (mknodat(dfd, name, S_IFREG | 0644, 0) < 0) {
			*err = errno;
			break;
		}
		if (n % 1024 == 0 && now_ms() > deadline) {
			*err = ETIMEDOUT;
			break;
		}
	}
	for (long i = 0; i < n + 1; i++) {
		char name[16];
		snprintf(name, sizeof(name), "%ld", i);
		(void)unlinkat(dfd, name, 0);
	}
	close(dfd);
	(void)rmdir(path);
	return n;
}

void
step_inode_flood(struct drill *d)
{
	static const char *const dirs[] = { "/tmp", "/work" };
	char ev[200] = "", detail[300] = "";
	bool escaped = false, untested = false;

	for (int i = 0; i < 2; i++) {
		unsigned long long files;
		int err;
		long n = flood(dirs[i], &err, &files);

		append(ev, sizeof(ev), " ", "%s=%ld:%s", dirs[i] + 1, n,
		    err == 0 ? "bound" : errname(err).s);
		append(ev, sizeof(ev), " ", "%s_inodes=%llu", dirs[i] + 1,
		    files);
		if (err == 0 || (err == ETIMEDOUT && n >= FLOOD_FILES / 2)) {
			escaped = true;
			append(detail, sizeof(detail), "; ",
			    "%ld files in %s and no cap", n, dirs[i]);
		} else if (err == ETIMEDOUT || n == 0) {
			untested = true;
			append(detail, sizeof(detail), "; ",
			    "%s: %ld files, then %s", dirs[i], n,
			    errname(err).s);
		} else {
			append(detail, sizeof(detail), "; ",
			    "%s stopped at %ld files (%s)", dirs[i], n,
			    errname(err).s);
		}
	}
	report(d,
	    escaped        ? "escaped"
		: untested ? "untested"
			   : "stopped",
	    ev, "%s", detail);
}

#define BURN_MS 3000

void
step_cpu_burn(struct drill *d)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t start = now_ms(), wall;
	struct rusage before, ru;
	pid_t pid[64];
	int n = 0;
	char ev[160];

	/* Twice the cores: on a busy host the job still wants more than
	 * its share. */
	cores = cores < 1 ? 2 : cores > 32 ? 64 : 2 * cores;
	getrusage(RUSAGE_CHILDREN, &before); /* the earlier steps' children */
	for (; n < cores; n++) {
		if ((pid[n] = fork()) == 0) {
			int64_t end = now_ms() + BURN_MS;
			volatile unsigned long spin = 0;
			while (now_ms() < end)
				for (int k = 0; k < 100000; k++)
					spin++;
			_exit(0);
		}
		if (pid[n] < 0)
			break;
	}
	for (int i = 0; i < n; i++)
		(void)reap(pid[i]);
	wall = now_ms() - start;
	getrusage(RUSAGE_CHILDREN, &ru);
	long long cpu =
	    ((long long)ru.ru_utime.tv_sec - before.ru_utime.tv_sec +
		ru.ru_stime.tv_sec - before.ru_stime.tv_sec) *
		1000 +
	    (ru.ru_utime.tv_usec - before.ru_utime.tv_usec +
		ru.ru_stime.tv_usec - before.ru_stime.tv_usec) /
		1000;
	snprintf(ev, sizeof(ev), "burners=%d wall_ms=%lld children_cpu_ms=%lld",
	    n, (long long)wall, cpu);
	report(d, "done", ev,
	    "%d processes spun %d ms each; cordon drill judges by the run's "
	    "cpu limit (on a loaded host the job may never reach it)",
	    n, BURN_MS);
}
