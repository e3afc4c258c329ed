/*
 * The sealer's confinement, installed for real: a child of the test
 * confines itself as the hatch's sealer helper does (sealer_helper_confine:
 * nobody, a root of its own, its capabilities, Landlock and its seccomp
 * filter), and forks a worker that confines itself on top
 * (sealer_worker_confine). Each then tries what a takeover would: write
 * or create through openat2, open, creat, the shocker's
 * open_by_handle_at, renames, links, removals, mknod, mount, ptrace,
 * another process's memory, signals to processes not its own, and a
 * chroot escape; each result (the errno, or 0 when the call worked) is
 * written to a pipe and compared here. Needs root (it sets up the real
 * drop). The victim of the signals is a process of the test's own, run as
 * nobody; no pid is signalled before it is checked to be > 1.
 */
#include "seal.h"
#include "sealer.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

struct probe {
	char name[28];
	int32_t err; /* 0: the call worked; else its errno */
};

static int out_fd = -1;
static char root[PATH_MAX + 16], secret[PATH_MAX + 16];
static pid_t victim;
static union {
	struct file_handle fh;
	char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
} handle;

static void
tell(const char *name, long r)
{
	struct probe p = { .err = r < 0 ? errno : 0 };

	snprintf(p.name, sizeof(p.name), "%s", name);
	if (write(out_fd, &p, sizeof(p)) != (ssize_t)sizeof(p))
		_exit(3);
}

static long
open2(const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? 0644 : 0 };
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	if (fd >= 0)
		close((int)fd);
	return fd;
}

/* A child that waits to be killed. */
static pid_t
sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0)
		for (;;) {
			struct timespec t = { 1, 0 };
			(void)nanosleep(&t, NULL);
		}
	return pid;
}

/* What a worker may and may not do, in a child of the helper. */
static void
worker_probes(int ws_fd)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	struct seal_marks marks = { 0 };
	int r = sealer_worker_confine(ws_fd, &marks);
	char v;

	tell("w_confine", r < 0 ? (errno = -r, -1) : 0);
	if (r < 0)
		_exit(2);
	/* It read the opaque mark, then gave CAP_SYS_ADMIN up. */
	errno = EBADMSG;
	tell("w_marks",
	    marks.n == 1 && strcmp(marks.v[0], "gone") == 0 ? 0 : -1);
	seal_marks_free(&marks);
	tell("w_trusted_xattr",
	    fgetxattr(ws_fd, "trusted.overlay.opaque", &v, 1) < 0 ||
		    lgetxattr("/rw/upper/gone", "trusted.overlay.opaque", &v,
			1) < 0
		? -1
		: 0);
	errno = EBADMSG;
	tell("w_cap_dac_read_search_alone",
	    syscall(SYS_capget, &h, d) == 0 &&
		    d[0].effective == (1U << CAP_DAC_READ_SEARCH) &&
		    d[0].permitted == (1U << CAP_DAC_READ_SEARCH) &&
		    d[1].effective == 0 && d[1].permitted == 0
		? 0
		: -1);
	tell("w_openat2_create", open2("/open/new-w", O_WRONLY | O_CREAT));
	tell("w_openat2_rdwr", open2("/open/file", O_RDWR));
	tell("w_openat2_read", open2("/open/file", O_RDONLY));
	tell("w_chroot", chroot("."));
	tell("w_socket", socket(AF_UNIX, SOCK_STREAM, 0));
	tell("w_open_by_handle_at",
	    syscall(SYS_open_by_handle_at, AT_FDCWD, &handle.fh, O_RDONLY));
	tell("w_ptrace", ptrace(PTRACE_ATTACH, victim, NULL, NULL));
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	tell("w_fork", c);
	/* Last: if it works, the worker is gone. */
	tell("w_kill_self", kill(getpid(), SIGKILL));
	_exit(0);
}

/* The helper's probes, in a child of the test's, as the hatch's child. */
static void
helper_probes(void)
{
	int ws_fd, status;
	char buf[8];
	struct iovec local = { buf, sizeof(buf) },
		     remote = { buf, sizeof(buf) };

	/* Its own process group: a signal to its group reaches no one else. */
	if (setpgid(0, 0) < 0 || getpgrp() != getpid() || getpid() <= 1)
		_exit(2);
	int r = sealer_helper_confine(root, getppid());
	tell("confine", r < 0 ? (errno = -r, -1) : 0);
	if (r < 0)
		_exit(2);
	tell("openat2_create", open2("/ws/open/new", O_WRONLY | O_CREAT));
	tell("openat2_rdwr", open2("/ws/open/file", O_RDWR));
	tell("openat2_trunc", open2("/ws/open/file", O_RDONLY | O_TRUNC));
	tell("openat2_read", open2("/ws/open/file", O_RDONLY));
	tell("openat_write",
	    syscall(SYS_openat, AT_FDCWD, "/ws/open/file", O_WRONLY));
	tell("open_creat",
	    syscall(SYS_open, "/ws/open/new2", O_WRONLY | O_CREAT, 0644));
	tell("creat", syscall(SYS_creat, "/ws/open/new3", 0644));
	struct {
		struct file_handle fh;
		char more[MAX_HANDLE_SZ];
	} mine = { .fh.handle_bytes = MAX_HANDLE_SZ };
	int mnt;
	tell("name_to_handle_at",
	    syscall(SYS_name_to_handle_at, AT_FDCWD, "/ws", &mine.fh, &mnt, 0));
	tell("open_by_handle_at",
	    syscall(SYS_open_by_handle_at, AT_FDCWD, &handle.fh, O_RDONLY));
	tell("rename", syscall(SYS_rename, "/ws/open/file", "/ws/open/m"));
	tell("renameat2",
	    syscall(SYS_renameat2, AT_FDCWD, "/ws/open/file", AT_FDCWD,
		"/ws/open/m", 0));
	tell("unlink", syscall(SYS_unlink, "/ws/open/file"));
	tell("unlinkat", syscall(SYS_unlinkat, AT_FDCWD, "/ws/open/file", 0));
	tell("link", syscall(SYS_link, "/ws/open/file", "/ws/open/l"));
	tell("linkat",
	    syscall(SYS_linkat, AT_FDCWD, "/ws/open/file", AT_FDCWD,
		"/ws/open/l", 0));
	tell("symlinkat", syscall(SYS_symlinkat, "/x", AT_FDCWD, "/ws/open/s"));
	tell("mknodat",
	    syscall(SYS_mknodat, AT_FDCWD, "/ws/open/fifo", S_IFIFO | 0600, 0));
	tell("mkdirat", syscall(SYS_mkdirat, AT_FDCWD, "/ws/open/d", 0755));
	tell("mount", syscall(SYS_mount, "none", "/ws", "tmpfs", 0L, NULL));
	tell("umount2", syscall(SYS_umount2, "/ws", MNT_DETACH));
	tell("pivot_root", syscall(SYS_pivot_root, "/ws", "/ws/open"));
	tell("socket", socket(AF_UNIX, SOCK_STREAM, 0));
	tell("ptrace", ptrace(PTRACE_ATTACH, victim, NULL, NULL));
	tell("process_vm_readv",
	    syscall(SYS_process_vm_readv, victim, &local, 1UL, &remote, 1UL,
		0UL));
	tell("kill_term_other", kill(victim, SIGTERM));
	tell("kill_other", kill(victim, SIGKILL));
	/* A pidfd of a process not its own: only Landlock's scope stops
	 * its SIGKILL (ABI 6). */
	int vfd = (int)syscall(SYS_pidfd_open, victim, 0);
	tell("pidfd_kill_other",
	    vfd < 0 ? vfd
		    : syscall(SYS_pidfd_send_signal, vfd, SIGKILL, NULL, 0));
	if (vfd >= 0)
		close(vfd);
	/* Its own group holds itself alone: if these work, it is gone. */
	tell("kill_group", kill(0, SIGKILL));
	tell("kill_neg_group", kill(-getpid(), SIGKILL));

	/* Its own workers: killed, by pid and by pidfd, SIGKILL only. */
	pid_t w = sleeper();
	tell("fork", w);
	if (w > 1) {
		tell("kill_own", kill(w, SIGKILL));
		int pfd = (int)syscall(SYS_pidfd_open, w, 0);
		(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		(void)waitpid(w, &status, 0);
		close(pfd);
	}
	w = sleeper();
	if (w > 1) {
		int pfd = (int)syscall(SYS_pidfd_open, w, 0);
		tell("pidfd_open_own", pfd);
		tell("pidfd_term_own",
		    syscall(SYS_pidfd_send_signal, pfd, SIGTERM, NULL, 0));
		tell("pidfd_kill_own",
		    syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0));
		(void)waitpid(w, &status, 0);
		close(pfd);
	}

	/* A worker, in the workspace. */
	ws_fd = (int)syscall(SYS_openat, AT_FDCWD, "/ws",
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tell("open_ws", ws_fd);
	w = fork();
	if (w == 0)
		worker_probes(ws_fd);
	if (w > 1 && waitpid(w, &status, 0) == w) {
		errno = WIFSIGNALED(status) ? WTERMSIG(status) + 1000
					    : WEXITSTATUS(status);
		tell("w_status", errno != 0 ? -1 : 0);
	}
	close(ws_fd);

	/* Last, as it changes its root: the old chroot escape, then a file
	 * outside its root that only CAP_DAC_READ_SEARCH could read. */
	long e = syscall(SYS_chroot, "/ws");
	for (int i = 0; e == 0 && i < 64; i++)
		e = syscall(SYS_chdir, "..");
	if (e == 0)
		e = syscall(SYS_chroot, ".");
	tell("escape_chroot", e);
	tell("escape_read", open2(secret, O_RDONLY));
	_exit(0);
}

static void
mkdir_mode(const char *path, mode_t mode)
{
	ck_assert_int_eq(mkdir(path, mode), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void
setup(void)
{
	char p[PATH_MAX + 64];
	int mnt;

	testutil_dir_setup();
	snprintf(root, sizeof(root), "%s/root", testutil_dir);
	snprintf(secret, sizeof(secret), "%s/secret", testutil_dir);
	testutil_write_text(secret, "the host's secret\n");
	ck_assert_int_eq(chmod(secret, 0600), 0);
	mkdir_mode(root, 0755);
	snprintf(p, sizeof(p), "%s/ws", root);
	mkdir_mode(p, 0755);
	/* Writable by anyone, nobody included: only the confinement stops
	 * a write there. */
	snprintf(p, sizeof(p), "%s/ws/open", root);
	mkdir_mode(p, 0777);
	snprintf(p, sizeof(p), "%s/ws/open/file", root);
	testutil_write_text(p, "old\n");
	ck_assert_int_eq(chmod(p, 0666), 0);
	/* A workspace's upper with one opaque directory, one not. */
	snprintf(p, sizeof(p), "%s/ws/rw", root);
	mkdir_mode(p, 0755);
	snprintf(p, sizeof(p), "%s/ws/rw/upper", root);
	mkdir_mode(p, 0755);
	snprintf(p, sizeof(p), "%s/ws/rw/upper/kept", root);
	mkdir_mode(p, 0700);
	snprintf(p, sizeof(p), "%s/ws/rw/upper/gone", root);
	mkdir_mode(p, 0700);
	ck_assert_int_eq(setxattr(p, "trusted.overlay.opaque", "y", 1, 0), 0);
	handle.fh.handle_bytes = MAX_HANDLE_SZ;
	ck_assert_int_eq(name_to_handle_at(AT_FDCWD, secret, &handle.fh, &mnt,
			     0),
	    0);
}

static void
teardown(void)
{
	testutil_dir_teardown();
}

/* The victim: a process of nobody's, not a child of the sealer's. */
static pid_t
start_victim(void)
{
	const struct passwd *pw = getpwnam("nobody");
	pid_t pid = fork();

	ck_assert_ptr_nonnull(pw);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
			_exit(2);
		for (;;)
			pause();
	}
	return pid;
}

/* What was told for name, or -1 when nothing was. */
static int
told(const struct probe *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return v[i].err;
	return -1;
}

START_TEST(the_sealer_cannot_do_what_a_takeover_wants)
{
	/* Landlock refuses a truncation from ABI 3 (Linux 6.2) and a signal
	 * out of its domain from ABI 6 (6.12); before, only the seccomp
	 * filter and the uid stand there (docs/threat-model.md). */
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U);
	int trunc = abi >= 3 ? EACCES : 0, other = abi >= 6 ? EPERM : 0;
	const struct {
		const char *name;
		int want;
	} cases[] = {
		{ "confine", 0 },
		/* Writes: refused however the file is opened. */
		{ "openat2_create", EACCES },
		{ "openat2_rdwr", EACCES },
		{ "openat2_trunc", trunc },
		{ "openat2_read", 0 },
		{ "openat_write", EPERM },
		{ "open_creat", EPERM },
		{ "creat", EPERM },
		/* The shocker: no handles, CAP_DAC_READ_SEARCH or not. */
		{ "name_to_handle_at", EPERM },
		{ "open_by_handle_at", EPERM },
		{ "rename", EPERM },
		{ "renameat2", EPERM },
		{ "unlink", EPERM },
		{ "unlinkat", EPERM },
		{ "link", EPERM },
		{ "linkat", EPERM },
		{ "symlinkat", EPERM },
		{ "mknodat", EPERM },
		{ "mkdirat", EPERM },
		{ "mount", EPERM },
		{ "umount2", EPERM },
		{ "pivot_root", EPERM },
		{ "socket", EPERM },
		{ "ptrace", EPERM },
		{ "process_vm_readv", EPERM },
		/* Signals: SIGKILL alone, to a pid, to its own processes. */
		{ "kill_term_other", EPERM },
		{ "kill_other", EPERM },
		{ "pidfd_kill_other", other },
		{ "kill_group", EPERM },
		{ "kill_neg_group", EPERM },
		{ "fork", 0 },
		{ "kill_own", EPERM },
		{ "pidfd_open_own", 0 },
		{ "pidfd_term_own", EPERM },
		{ "pidfd_kill_own", 0 },
		{ "open_ws", 0 },
		/* The worker. */
		{ "w_confine", 0 },
		{ "w_marks", 0 },
		{ "w_trusted_xattr", ENODATA },
		{ "w_cap_dac_read_search_alone", 0 },
		{ "w_openat2_create", EACCES },
		{ "w_openat2_rdwr", EACCES },
		{ "w_openat2_read", 0 },
		{ "w_chroot", EPERM },
		{ "w_socket", EPERM },
		{ "w_open_by_handle_at", EPERM },
		{ "w_ptrace", EPERM },
		{ "w_fork", EPERM },
		{ "w_kill_self", EPERM },
		{ "w_status", 0 },
		/* The old escape: chroot works (each worker's root), but what
		 * lies outside the workspaces stays closed. */
		{ "escape_read", EACCES },
	};
	struct probe v[128];
	size_t n = 0;
	int pipefd[2], status;
	ssize_t got;

	ck_assert_msg(geteuid() == 0, "check_sealer needs root");
	victim = start_victim();
	ck_assert_int_gt(victim, 1);
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	pid_t helper = fork();
	ck_assert_int_ge(helper, 0);
	if (helper == 0) {
		close(pipefd[0]);
		out_fd = pipefd[1];
		helper_probes();
	}
	close(pipefd[1]);
	while (n < sizeof(v) / sizeof(v[0]) &&
	    (got = read(pipefd[0], &v[n], sizeof(v[0]))) ==
		(ssize_t)sizeof(v[0]))
		n++;
	close(pipefd[0]);
	ck_assert_int_eq(waitpid(helper, &status, 0), helper);
	/* The victim lives: nothing of the sealer's reached it. */
	pid_t gone = waitpid(victim, NULL, WNOHANG);
	if (gone == 0)
		ck_assert_int_eq(kill(victim, SIGKILL), 0);
	(void)waitpid(victim, NULL, 0);
	/* Every difference at once. */
	char bad[4096] = "";
	size_t used = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int e = told(v, n, cases[i].name);
		if (e == cases[i].want || used >= sizeof(bad) - 1)
			continue;
		int k = snprintf(bad + used, sizeof(bad) - used,
		    "\n  %s: %s, want %s", cases[i].name,
		    e < 0           ? "not told"
			: e == 0    ? "it worked"
			: e >= 1000 ? "killed by a signal"
				    : strerror(e),
		    cases[i].want == 0 ? "it works" : strerror(cases[i].want));
		if (k > 0)
			used += (size_t)k < sizeof(bad) - used
			    ? (size_t)k
			    : sizeof(bad) - used - 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    (gone != 0 && other != 0))
		snprintf(bad + used, sizeof(bad) - used,
		    "\n  the helper %s %d after \"%s\"; the victim (pid %d, "
		    "not the sealer's) %s",
		    WIFSIGNALED(status) ? "was killed by signal" : "exited",
		    WIFSIGNALED(status) ? WTERMSIG(status)
					: WEXITSTATUS(status),
		    n > 0 ? v[n - 1].name : "(nothing)", (int)victim,
		    gone == 0 ? "lives" : "died");
	if (abi < 6)
		fprintf(stderr,
		    "check_sealer: Landlock ABI %ld: %s%s not refused here\n",
		    abi, abi < 3 ? "truncation and " : "",
		    "a signal out of the sealer's domain");
	ck_assert_msg(bad[0] == '\0', "the sealer could:%s", bad);
}
END_TEST

/* The opaque marks a worker reads before it gives CAP_SYS_ADMIN up:
 * every directory marked, at any depth, and no other. */
START_TEST(the_marks_are_every_opaque_directory)
{
	static const char *const dirs[] = { "ws", "ws/rw", "ws/rw/upper",
		"ws/rw/upper/a", "ws/rw/upper/a/b", "ws/rw/upper/c",
		"ws/rw/upper/c/d", "ws/rw/upper/c/d/e" };
	static const char *const opaque[] = { "a", "a/b", "c/d" };
	char p[PATH_MAX + 64];
	struct seal_marks m;

	ck_assert_msg(geteuid() == 0, "check_sealer needs root");
	snprintf(p, sizeof(p), "%s/t", testutil_dir);
	mkdir_mode(p, 0755);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/t/%s", testutil_dir, dirs[i]);
		mkdir_mode(p, 0755);
	}
	for (size_t i = 0; i < sizeof(opaque) / sizeof(opaque[0]); i++) {
		snprintf(p, sizeof(p), "%s/t/ws/rw/upper/%s", testutil_dir,
		    opaque[i]);
		ck_assert_int_eq(setxattr(p, "trusted.overlay.opaque", "y", 1,
				     0),
		    0);
	}
	/* A user.* mark is anyone's: not opaque. */
	snprintf(p, sizeof(p), "%s/t/ws/rw/upper/c", testutil_dir);
	ck_assert_int_eq(setxattr(p, "user.overlay.opaque", "y", 1, 0), 0);
	snprintf(p, sizeof(p), "%s/t/ws/rw/upper/c/file", testutil_dir);
	testutil_write_text(p, "x\n");
	snprintf(p, sizeof(p), "%s/t/ws", testutil_dir);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(seal_marks_read(fd, &m), 0);
	close(fd);
	ck_assert_uint_eq(m.n, 3);
	for (size_t i = 0; i < 3; i++)
		ck_assert_str_eq(m.v[i], opaque[i]);
	ck_assert_uint_eq(m.entries, 6);
	seal_marks_free(&m);
	ck_assert_uint_eq(m.n, 0);
}
END_TEST

static Suite *
sealer_suite(void)
{
	Suite *s = suite_create("sealer");
	TCase *tc = tcase_create("confined");

	testutil_tmp_fixture(tc, "sealer");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, the_sealer_cannot_do_what_a_takeover_wants);
	tcase_add_test(tc, the_marks_are_every_opaque_directory);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(sealer_suite());
}
