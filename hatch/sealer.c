/*
 * The sealer helper and its workers (sealer.h). One request a datagram on
 * a SOCK_SEQPACKET pair: struct request, with four descriptors (the
 * workspace's directory, the output, the patch, the report); one answer a
 * datagram: struct answer. The helper parses nothing else, and nothing a
 * job wrote: its workers do, one forked per seal, each in its own
 * workspace as its root directory.
 */
#include "sealer.h"

#include "digest.h"
#include "path.h"
#include "seal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the hatch waits beyond the deadline for the helper's answer. */
#define GRACE_S 5
/* What the hatch waits at its stop for the helper to exit on its own. */
#define STOP_WAIT_MS 2000
#define JOB_MAX 128

/* The helper keeps these; a worker gives up CAP_SYS_CHROOT once in its
 * root, and CAP_SYS_ADMIN once it has read the opaque marks: it seals
 * with CAP_DAC_READ_SEARCH alone. */
#define CAPS_HELPER                                                            \
	((1ULL << CAP_DAC_READ_SEARCH) | (1ULL << CAP_SYS_ADMIN) |             \
	    (1ULL << CAP_SYS_CHROOT))
#define CAPS_WORKER ((1ULL << CAP_DAC_READ_SEARCH) | (1ULL << CAP_SYS_ADMIN))
#define CAPS_SEALING (1ULL << CAP_DAC_READ_SEARCH)

enum how { HOW_EXITED, HOW_SIGNALED, HOW_DEADLINE, HOW_NOT_STARTED };

struct request {
	char type; /* 'S' */
	char job[JOB_MAX + 1];
	int64_t output_kb;
};

struct answer {
	int32_t result; /* 0 or -errno */
	int32_t how; /* enum how */
	int32_t code; /* the exit status, the signal, or the errno */
	int32_t socket_refused;
	int64_t pid, uid, seccomp, no_new_privs;
	int64_t cap_eff;
};

/* What a worker tells its helper once confined. */
struct worker_state {
	int64_t uid, seccomp, no_new_privs, cap_eff;
	int32_t socket_refused;
};

/*
 * The helper's allow list: what it and its workers call to take a
 * request, fork, wait and kill at the deadline, and read a workspace, with
 * what libc, AddressSanitizer and jansson call beneath. Anything else
 * fails with EPERM: no open, creat, rename, link, unlink, mknod, mkdir,
 * symlink, truncate, name_to_handle_at or open_by_handle_at (with
 * CAP_DAC_READ_SEARCH the way out of any chroot, "shocker"), mount,
 * umount2, pivot_root, unshare, setns, ptrace, process_vm_*, socket, exec
 * or uid change. Besides: clone only as fork calls it (no thread, no
 * namespace), clone3 with ENOSYS (so that libc falls back to clone),
 * openat only to read; no kill(2) (no group, no pid 0 or -1), only
 * pidfd_send_signal with SIGKILL, and Landlock keeps even that to its own
 * workers. openat2 is allowed: its flags are in memory a filter cannot
 * read, and the walk needs its RESOLVE_BENEATH; Landlock refuses its
 * writes (landlock_beneath) as every other call's.
 */
static const char *const helper_allowed[] = {
	/* Requests, answers, workers. */
	"recvmsg", "sendmsg", "recvfrom", "sendto", "pipe2", "wait4", "waitid",
	"poll", "ppoll", "chroot", "chdir", "fchdir", "capget", "capset",
	"prctl", "seccomp", "landlock_create_ruleset", "landlock_add_rule",
	"landlock_restrict_self", "getpid", "getppid", "gettid", "getuid",
	"geteuid", "getgid", "getegid",
	/* Files, read. */
	"read", "pread64", "readv", "write", "writev", "close", "close_range",
	"lseek", "fstat", "newfstatat", "statx", "fstatfs", "statfs",
	"getdents64", "readlinkat", "readlink", "fgetxattr", "getxattr",
	"lgetxattr", "flistxattr", "listxattr", "llistxattr", "fcntl", "dup",
	"dup2", "dup3", "openat2",
	/* Memory, time, signals, exit. */
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "futex",
	"set_robust_list", "rseq", "getrandom", "clock_gettime",
	"clock_nanosleep", "nanosleep", "gettimeofday", "sched_yield",
	"sched_getaffinity", "sigaltstack", "rt_sigaction", "rt_sigprocmask",
	"rt_sigreturn", "getrlimit", "prlimit64", "sysinfo", "uname", "exit",
	"exit_group"
};

/* What a worker gives up on top of the helper's list. */
static const char *const worker_refused[] = { "clone", "kill", "pidfd_open",
	"pidfd_send_signal", "chroot", "capset", "seccomp",
	"landlock_create_ruleset", "landlock_add_rule",
	"landlock_restrict_self", "recvmsg", "sendmsg", "recvfrom", "sendto",
	"wait4", "waitid" };

/* Closes every fd from 3 up but the n in keep (sorted here). */
static void
close_others(int *keep, size_t n)
{
	unsigned from = 3;

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0)
			continue;
		if ((unsigned)keep[i] > from)
			(void)close_range(from, (unsigned)keep[i] - 1, 0);
		if ((unsigned)keep[i] + 1 > from)
			from = (unsigned)keep[i] + 1;
	}
	(void)close_range(from, ~0U, 0);
}

static int
set_caps(uint64_t caps)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	d[0].effective = d[0].permitted = (uint32_t)caps;
	d[1].effective = d[1].permitted = (uint32_t)(caps >> 32);
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

static int64_t
cap_eff(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	return (int64_t)(((uint64_t)d[1].effective << 32) | d[0].effective);
}

/*
 * The helper's drop, as root with every privilege: root as its root
 * directory, uid and gid nobody's, CAPS_HELPER in the bounding,
 * permitted and effective sets and none inheritable or ambient,
 * no_new_privs, not dumpable, dead with the hatch. 0 or -errno.
 */
static int
drop(const char *root, pid_t hatch)
{
	const struct passwd *pw = getpwnam("nobody");
	uid_t uid = pw != NULL ? pw->pw_uid : 65534;
	gid_t gid = pw != NULL ? pw->pw_gid : 65534;
	char sha[65];

	if (uid == 0)
		return -EPERM;
	/* OpenSSL loads what it needs on the first digest: before the root
	 * directory changes. */
	sha256_hex("", 0, sha);
	if (chroot(root) < 0 || chdir("/") < 0)
		return -errno;
	for (int cap = 0; cap < 64; cap++)
		if (!(CAPS_HELPER & (1ULL << cap)) &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (setgroups(0, NULL) < 0 || prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 ||
	    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	int r = set_caps(CAPS_HELPER);
	if (r < 0)
		return r;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	/* The change of uid cleared the parent-death signal. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (getppid() != hatch)
		return -ESRCH;
	return 0;
}

/* Landlock as the kernel's uapi has it: the build's headers may be older
 * than the kernel it runs on. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_NET_BIND_CONNECT_TCP ((1ULL << 0) | (1ULL << 1))
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

/* Every right on files that Landlock's ABI abi knows. */
static uint64_t
ll_fs_rights(long abi)
{
	uint64_t r = (1ULL << 13) - 1; /* 1: execute, write, read, make... */

	if (abi >= 2)
		r |= 1ULL << 13; /* refer: a link or rename elsewhere */
	if (abi >= 3)
		r |= 1ULL << 14; /* truncate */
	if (abi >= 5)
		r |= 1ULL << 15; /* ioctl on a device */
	return r;
}

/*
 * A Landlock domain on top of the process's own: every right on files
 * the kernel knows is handled and only reading files and listing
 * directories beneath dir_fd is granted, so nothing anywhere is written,
 * created, removed, renamed, linked, truncated or executed, whatever
 * call opens it (openat2 included), and nothing outside dir_fd is read
 * even past a chroot escape; no TCP bind or connect (ABI 4); from ABI 6
 * no signal to a process outside the domain (a worker is inside its
 * helper's) and no abstract unix socket out of it. Needs no_new_privs.
 * 0 or -errno (-EOPNOTSUPP: the kernel has no Landlock, or it is off).
 */
static int
landlock_beneath(int dir_fd)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LL_CREATE_RULESET_VERSION);
	struct ll_ruleset_attr attr = { 0 };
	struct ll_path_beneath_attr pb = { .allowed_access =
					       LL_FS_READ_FILE | LL_FS_READ_DIR,
		.parent_fd = dir_fd };
	size_t size = sizeof(attr.handled_access_fs);
	int rs, r = 0;

	if (abi < 0)
		return errno == ENOSYS || errno == EOPNOTSUPP ? -EOPNOTSUPP
							      : -errno;
	attr.handled_access_fs = ll_fs_rights(abi);
	if (abi >= 4) {
		attr.handled_access_net = LL_NET_BIND_CONNECT_TCP;
		size = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return -errno;
	if (syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0) <
		0 ||
	    syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		r = -errno;
	close(rs);
	return r;
}

static int
rule(scmp_filter_ctx ctx, uint32_t action, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture: nothing calls it */
	return seccomp_rule_add(ctx, action, nr, 0);
}

/* The helper's allow list (helper_allowed): 0 or -errno. */
static int
confine_helper(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r;

	if (ctx == NULL)
		return -ENOMEM;
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_ERRNO(EPERM));
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(helper_allowed); i++)
		r = rule(ctx, SCMP_ACT_ALLOW, helper_allowed[i]);
	/* fork(3) as glibc makes it: no shared memory, no namespace. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_EQ,
			CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD,
			0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
		    SCMP_SYS(clone3), 0);
	/* Signals: SIGKILL alone, through a pidfd (no kill(2): no group,
	 * no pid 0 or -1); which process, the code's check (a worker it
	 * forked) and Landlock's scope. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(pidfd_open),
		    1, SCMP_A1_32(SCMP_CMP_EQ, 0, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
		    SCMP_SYS(pidfd_send_signal), 3,
		    SCMP_A1_32(SCMP_CMP_EQ, SIGKILL, 0),
		    SCMP_A2(SCMP_CMP_EQ, 0, 0), SCMP_A3_32(SCMP_CMP_EQ, 0, 0));
	/* openat to read only: no write, no creation, no truncation. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC,
			0));
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}

/* A worker's second filter, worker_refused on top of the helper's. */
static int
confine_worker(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = 0;

	if (ctx == NULL)
		return -ENOMEM;
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(worker_refused); i++)
		r = rule(ctx, SCMP_ACT_ERRNO(EPERM), worker_refused[i]);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}

int
sealer_worker_confine(int dir_fd, struct seal_marks *marks)
{
	int r;

	/* Its workspace as its root: no other job's files, no way back. */
	if (fchdir(dir_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		return -errno;
	r = set_caps(CAPS_WORKER);
	if (r == 0)
		r = landlock_beneath(dir_fd);
	/* The opaque marks, while it may read trusted.*: names and one
	 * xattr, no byte the job wrote; then CAP_SYS_ADMIN goes. */
	if (r == 0 && marks != NULL)
		r = seal_marks_read(dir_fd, marks);
	if (r == 0)
		r = set_caps(CAPS_SEALING);
	return r < 0 ? r : confine_worker();
}

/* The worker, forked for one seal: never returns. */
static void
worker(pid_t helper, const struct request *q, int *fds, int state_fd, int go_fd)
{
	struct worker_state st = { 0 };
	int keep[] = { fds[0], fds[1], fds[2], fds[3], state_fd };
	char go = 0;
	int r;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != helper)
		_exit(ESRCH);
	/* Not before the helper holds a pidfd of it (serve_one). */
	while ((r = (int)read(go_fd, &go, 1)) < 0 && errno == EINTR)
		;
	if (r != 1 || go != 'g')
		_exit(ECANCELED);
	close_others(keep, ARRAY_SIZE(keep));
	struct seal_marks marks = { 0 };
	r = sealer_worker_confine(fds[0], &marks);
	if (r < 0)
		_exit(-r & 0xff);
	st.uid = (int64_t)getuid();
	st.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	st.no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	st.cap_eff = cap_eff();
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0)
		close(s);
	st.socket_refused = s < 0;
	(void)path_write_all(state_fd, &st, sizeof(st));
	close(state_fd);
	r = seal_compute(fds[0], q->job, fds[1], (long)q->output_kb, fds[2],
	    fds[3], &marks);
	seal_marks_free(&marks);
	_exit(r < 0 ? (-r & 0xff) : 0);
}

/* Milliseconds from now to end (0 when past). */
static int
ms_left(const struct timespec *end)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	long long ms = (end->tv_sec - now.tv_sec) * 1000LL +
	    (end->tv_nsec - now.tv_nsec) / 1000000;
	return ms <= 0 ? 0 : ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* One seal, in the helper: the answer. */
static void
serve_one(pid_t self, long deadline_s, const struct request *q, int *fds,
    struct answer *a)
{
	struct worker_state st = { -1, -1, -1, -1, 0 };
	struct timespec end;
	int pipefd[2], go[2], status = 0, pidfd;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		a->how = HOW_NOT_STARTED;
		a->result = -errno;
		return;
	}
	if (pipe2(go, O_CLOEXEC) < 0) {
		a->how = HOW_NOT_STARTED;
		a->result = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		close(go[1]);
		worker(self, q, fds, pipefd[1], go[0]);
	}
	close(pipefd[1]);
	close(go[0]);
	if (pid <= 1) {
		a->how = HOW_NOT_STARTED;
		a->result = pid < 0 ? -errno : -ECHILD;
		close(pipefd[0]);
		close(go[1]);
		return;
	}
	a->pid = pid;
	/* Its one way to signal: a pidfd of the worker it just forked (no
	 * kill(2) in its filter). Without one the worker is never told to
	 * start, and goes. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 || write(go[1], "g", 1) != 1) {
		a->how = HOW_NOT_STARTED;
		a->result = pidfd < 0 ? -errno : -EIO;
		close(go[1]);
		if (pidfd >= 0)
			(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL,
			    NULL, 0);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (pidfd >= 0)
			close(pidfd);
		close(pipefd[0]);
		return;
	}
	close(go[1]);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += deadline_s;
	for (;;) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int n = poll(&p, 1, ms_left(&end));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Out of time: killed. */
			(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL,
			    NULL, 0);
			a->how = HOW_DEADLINE;
		}
		break;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	close(pidfd);
	if (read(pipefd[0], &st, sizeof(st)) != (ssize_t)sizeof(st))
		st = (struct worker_state){ -1, -1, -1, -1, 0 };
	close(pipefd[0]);
	a->uid = st.uid;
	a->seccomp = st.seccomp;
	a->no_new_privs = st.no_new_privs;
	a->cap_eff = st.cap_eff;
	a->socket_refused = st.socket_refused;
	if (a->how == HOW_DEADLINE) {
		a->result = -ETIMEDOUT;
	} else if (WIFEXITED(status)) {
		a->how = HOW_EXITED;
		a->code = WEXITSTATUS(status);
		a->result = -a->code;
	} else {
		a->how = HOW_SIGNALED;
		a->code = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
		a->result = -EIO;
	}
}

/* The helper's loop: until the hatch closes its end. */
static void
helper_main(int sock, long deadline_s)
{
	pid_t self = getpid();

	for (;;) {
		struct request q;
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(4 * sizeof(int))];
		} c;
		struct iovec iov = { &q, sizeof(q) };
		struct msghdr h = { .msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = c.space,
			.msg_controllen = sizeof(c.space) };
		struct answer a = { .pid = -1,
			.uid = -1,
			.seccomp = -1,
			.no_new_privs = -1,
			.cap_eff = -1 };
		int fds[4] = { -1, -1, -1, -1 }, nfds = 0;
		ssize_t n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		for (struct cmsghdr *ch = CMSG_FIRSTHDR(&h); ch != NULL;
		     ch = CMSG_NXTHDR(&h, ch))
			if (ch->cmsg_level == SOL_SOCKET &&
			    ch->cmsg_type == SCM_RIGHTS) {
				size_t k =
				    (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int got[4];
				memcpy(got, CMSG_DATA(ch),
				    (k > 4 ? 4 : k) * sizeof(int));
				for (size_t i = 0; i < k && i < 4; i++)
					fds[nfds++] = got[i];
			}
		if (n != (ssize_t)sizeof(q) || q.type != 'S' || nfds != 4 ||
		    (h.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
		    memchr(q.job, '\0', sizeof(q.job)) == NULL) {
			a.how = HOW_NOT_STARTED;
			a.result = -EPROTO;
		} else {
			serve_one(self, deadline_s, &q, fds, &a);
		}
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (send(sock, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
			_exit(0);
	}
}

int
sealer_helper_confine(const char *root, pid_t parent)
{
	int r = drop(root, parent), fd;

	if (r < 0)
		return r;
	/* Its root, the workspaces, is all it may read, and only read. */
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = landlock_beneath(fd);
	close(fd);
	return r < 0 ? r : confine_helper();
}

int
sealer_start(struct sealer *s, const char *root, long deadline_s)
{
	int pair[2];
	pid_t hatch = getpid(), pid;

	s->pid = 0;
	s->fd = -1;
	s->deadline_s = deadline_s;
	snprintf(s->gone, sizeof(s->gone), "the sealer was not started");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(pair[0]);
		close(pair[1]);
		return r;
	}
	if (pid == 0) {
		int keep[] = { pair[1] };
		close(pair[0]);
		close_others(keep, 1);
		int r = sealer_helper_confine(root, hatch);
		if (r < 0) {
			/* Told as the first answer's place: a short datagram. */
			int32_t e = r;
			(void)send(pair[1], &e, sizeof(e), MSG_NOSIGNAL);
			_exit(1);
		}
		int32_t ok = 0;
		if (send(pair[1], &ok, sizeof(ok), MSG_NOSIGNAL) != sizeof(ok))
			_exit(1);
		helper_main(pair[1], deadline_s);
		_exit(0);
	}
	close(pair[1]);
	s->pid = pid;
	s->fd = pair[0];
	/* The helper says once whether it could drop and confine itself. */
	int32_t first = -EIO;
	ssize_t n;
	while (
	    (n = recv(s->fd, &first, sizeof(first), 0)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(first) || first != 0) {
		int r = n == (ssize_t)sizeof(first) ? first : -EIO;
		if (r == -EOPNOTSUPP)
			snprintf(s->gone, sizeof(s->gone),
			    "the sealer could not confine itself: the kernel "
			    "has no Landlock (CONFIG_SECURITY_LANDLOCK, and "
			    "landlock in its lsm= list)");
		else
			snprintf(s->gone, sizeof(s->gone),
			    "the sealer could not drop its privileges (%s)",
			    strerror(-r));
		sealer_stop(s);
		return r;
	}
	s->gone[0] = '\0';
	return 0;
}

/* The helper is gone for good (why): killed if it still runs, reaped. */
static void
lose(struct sealer *s, const char *why)
{
	snprintf(s->gone, sizeof(s->gone), "%s", why);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->pid > 1) {
		(void)kill(s->pid, SIGKILL);
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
		s->pid = 0;
	}
}

int
sealer_seal(struct sealer *s, int dir_fd, const char *job, int output_fd,
    long output_kb, int patch_fd, int report_fd, struct seal_child *child)
{
	struct request q = { .type = 'S', .output_kb = output_kb };
	struct answer a;
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} c;
	struct iovec iov = { &q, sizeof(q) };
	struct msghdr h = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = c.space,
		.msg_controllen = sizeof(c.space) };
	int fds[4] = { dir_fd, output_fd, patch_fd, report_fd };
	struct timespec end;
	ssize_t n;

	*child = (struct seal_child){ .pid = -1,
		.uid = -1,
		.seccomp = -1,
		.no_new_privs = -1,
		.cap_eff = -1 };
	if (s->fd < 0) {
		snprintf(child->reason, sizeof(child->reason), "%s", s->gone);
		return -EPIPE;
	}
	if (strlen(job) > JOB_MAX)
		return -ENAMETOOLONG;
	memcpy(q.job, job, strlen(job) + 1);
	memset(&c, 0, sizeof(c));
	struct cmsghdr *ch = CMSG_FIRSTHDR(&h);
	ch->cmsg_level = SOL_SOCKET;
	ch->cmsg_type = SCM_RIGHTS;
	ch->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(ch), fds, sizeof(fds));
	while ((n = sendmsg(s->fd, &h, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(q)) {
		lose(s,
		    "the sealer is gone (it could not be asked); the hatch "
		    "stops to be started again with a new one");
		snprintf(child->reason, sizeof(child->reason), "%s", s->gone);
		return -EPIPE;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += s->deadline_s + GRACE_S;
	for (;;) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		int k = poll(&p, 1, ms_left(&end));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			lose(s,
			    "the sealer did not answer within the seal "
			    "deadline and was killed; the hatch stops to be "
			    "started again with a new one");
			snprintf(child->reason, sizeof(child->reason), "%s",
			    s->gone);
			return -EPIPE;
		}
		break;
	}
	while ((n = recv(s->fd, &a, sizeof(a), 0)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(a)) {
		lose(s,
		    "the sealer died; the hatch stops to be started again "
		    "with a new one");
		snprintf(child->reason, sizeof(child->reason), "%s", s->gone);
		return -EPIPE;
	}
	child->pid = a.pid;
	child->uid = a.uid;
	child->seccomp = a.seccomp;
	child->no_new_privs = a.no_new_privs;
	child->cap_eff = a.cap_eff;
	child->socket_refused = a.socket_refused != 0;
	switch (a.how) {
	case HOW_DEADLINE:
		snprintf(child->reason, sizeof(child->reason),
		    "the sealer (pid %lld) took longer than seal_deadline_s "
		    "(%ld s) and was killed; nothing was sealed",
		    (long long)a.pid, s->deadline_s);
		return -ETIMEDOUT;
	case HOW_SIGNALED:
		snprintf(child->reason, sizeof(child->reason),
		    "the sealer (pid %lld) was killed by signal %d; nothing "
		    "was sealed",
		    (long long)a.pid, a.code);
		return -EIO;
	case HOW_NOT_STARTED:
		snprintf(child->reason, sizeof(child->reason),
		    "the sealer could not start a seal (%s)",
		    strerror(-a.result));
		return a.result < 0 ? a.result : -EIO;
	default:
		if (a.result < 0)
			snprintf(child->reason, sizeof(child->reason),
			    "the sealer (pid %lld) failed (%s); nothing was "
			    "sealed",
			    (long long)a.pid, strerror(-a.result));
		return a.result;
	}
}

bool
sealer_gone(struct sealer *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN | POLLRDHUP };

	if (s->fd < 0)
		return true;
	/* Idle, the helper sends nothing: anything to read, or a hang-up,
	 * means it is gone (or broke the protocol, which is as bad). */
	if (poll(&p, 1, 0) == 0)
		return false;
	lose(s, "the sealer died while no seal was asked of it");
	return true;
}

void
sealer_stop(struct sealer *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->pid <= 1)
		return;
	/* It exits once its pair closes; one that hangs (stopped, stuck in
	 * a seal) is killed after STOP_WAIT_MS, so that it never holds the
	 * hatch's exit. */
	for (int waited = 0;; waited += 10) {
		pid_t r = waitpid(s->pid, NULL, WNOHANG);
		struct timespec t = { 0, 10 * 1000 * 1000 };

		if (r == s->pid || (r < 0 && errno != EINTR))
			break;
		if (waited >= STOP_WAIT_MS) {
			(void)kill(s->pid, SIGKILL);
			while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
				;
			break;
		}
		(void)nanosleep(&t, NULL);
	}
	s->pid = 0;
}
