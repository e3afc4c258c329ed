/*
 * The daemons' own filters (common/confine.c), applied for real in the
 * test's process (Check forks one per test): what each daemon never does
 * fails with the errno its profile says (exec, ptrace, a user namespace,
 * a mount, the keyring, BPF, io_uring, a packet socket, a uid change),
 * and what each still needs works: threads (clone3 falls back to clone),
 * fork, files, loopback and unix sockets, routing netlink, and for the
 * hatch a tmpfs mount, for cordon serve an exec and a user namespace in a
 * child. Each test runs in a mount namespace of its own, so that a mount
 * the filter should have refused cannot reach the host.
 */
#include "confine.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* LeakSanitizer's exit check: run now, before the filter (then not again
 * at exit), as check_filter does. */
extern void __lsan_do_leak_check(void) __attribute__((weak));

static const struct confine_profile *const profiles[] = { &confine_broker,
	&confine_proxy, &confine_hatch, &confine_serve, &confine_spawner };

/* A mount namespace of the test's own, then p's filter. */
static void
confined(const struct confine_profile *p)
{
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	if (__lsan_do_leak_check != NULL)
		__lsan_do_leak_check();
	ck_assert_int_eq(confine_apply(p), 0);
}

/* Expects a raw system call to fail with err. */
#define REFUSED(err, ...)                                                      \
	do {                                                                   \
		errno = 0;                                                     \
		long _r = syscall(__VA_ARGS__);                                \
		ck_assert_msg(_r == -1 && errno == (err), "%s: %ld, errno %d", \
		    #__VA_ARGS__, _r, errno);                                  \
	} while (0)

/* In a child: runs fn, _exits 0 when it returned 0, 1 otherwise. */
static int
in_child(int (*fn)(void))
{
	int st = 0;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fn() == 0 ? 0 : 1);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* An exec that works runs /bin/true (0); a refused one returns, and 42
 * says it was refused with EPERM. */
static int
exec_refused(void)
{
	char *const argv[] = { "/bin/true", NULL };

	execve("/bin/true", argv, NULL);
	_exit(errno == EPERM ? 42 : 1);
}

static int
exec_true(void)
{
	char *const argv[] = { "/bin/true", NULL };

	execve("/bin/true", argv, NULL);
	return -1;
}

/* What every profile refuses. */
static void
refused_by_all(void)
{
	struct io_uring_params params = { 0 };

#if !CONFINE_KEEPS_PTRACE
	REFUSED(EPERM, SYS_ptrace, (long)PTRACE_TRACEME, 0L, 0L, 0L);
	REFUSED(EPERM, SYS_ptrace, (long)PTRACE_ATTACH, 1L, 0L, 0L);
#endif
	REFUSED(EPERM, SYS_bpf, 0, NULL, 0);
	REFUSED(EPERM, SYS_io_uring_setup, 8, &params);
	REFUSED(EPERM, SYS_userfaultfd, 0);
	REFUSED(EPERM, SYS_perf_event_open, NULL, 0, -1, -1, 0UL);
	REFUSED(EPERM, SYS_keyctl, 0, 0, 0, 0, 0);
	REFUSED(EPERM, SYS_add_key, "user", "k", "v", 1, 0);
	REFUSED(EPERM, SYS_request_key, "user", "k", NULL, 0);
	REFUSED(EPERM, SYS_process_vm_readv, 1, NULL, 0UL, NULL, 0UL, 0UL);
	REFUSED(EPERM, SYS_kexec_load, 0UL, 0UL, NULL, 0UL);
	REFUSED(EPERM, SYS_init_module, NULL, 0UL, "");
	REFUSED(EPERM, SYS_swapoff, "/nonexistent");
	REFUSED(EPERM, SYS_reboot, 0, 0, 0, NULL);
	REFUSED(EPERM, SYS_settimeofday, NULL, NULL);
	REFUSED(EPERM, SYS_clock_settime, 0, NULL);
	REFUSED(EPERM, SYS_open_by_handle_at, 0, NULL, 0);
	REFUSED(EPERM, SYS_personality, 0x0400000L /* READ_IMPLIES_EXEC */);
	REFUSED(ENOSYS, SYS_clone3, NULL, 0);
	REFUSED(EAFNOSUPPORT, SYS_socket, (long)AF_PACKET, (long)SOCK_RAW, 0L);
	REFUSED(EAFNOSUPPORT, SYS_socket, 40L /* AF_VSOCK */, (long)SOCK_STREAM,
	    0L);
	REFUSED(EPROTONOSUPPORT, SYS_socket, (long)AF_NETLINK, (long)SOCK_RAW,
	    (long)NETLINK_KOBJECT_UEVENT);
}

START_TEST(the_broker_and_the_proxy_never_exec_mount_or_unshare)
{
	const struct confine_profile *p = profiles[_i];
	char *const argv[] = { "/bin/true", NULL };

	confined(p);
	refused_by_all();
	ck_assert_int_eq(in_child(exec_refused), 42);
	REFUSED(EPERM, SYS_execveat, AT_FDCWD, "/bin/true", argv, NULL, 0);
	REFUSED(EPERM, SYS_mount, "none", testutil_dir, "tmpfs", 0UL, NULL);
	REFUSED(EPERM, SYS_umount2, "/proc", 0);
	REFUSED(EPERM, SYS_fsopen, "tmpfs", 0);
	REFUSED(EPERM, SYS_unshare, (long)CLONE_NEWUSER);
	REFUSED(EPERM, SYS_unshare, (long)CLONE_NEWNET);
	REFUSED(EPERM, SYS_setns, 0, 0);
	REFUSED(EPERM, SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L,
	    0L);
	REFUSED(EPERM, SYS_chroot, "/");
	REFUSED(EPERM, SYS_setuid, 1000L);
	REFUSED(EPERM, SYS_setgroups, 0L, NULL);
	REFUSED(EPERM, SYS_sethostname, "x", 1L);
}
END_TEST

START_TEST(the_hatch_mounts_a_tmpfs_and_never_execs)
{
	char *const argv[] = { "/bin/true", NULL };

	confined(&confine_hatch);
	refused_by_all();
	ck_assert_int_eq(mount("tmpfs", testutil_dir, "tmpfs",
			     MS_NOSUID | MS_NODEV, "size=1m"),
	    0);
	ck_assert_int_eq(umount2(testutil_dir, 0), 0);
	ck_assert_int_eq(in_child(exec_refused), 42);
	REFUSED(EPERM, SYS_execveat, AT_FDCWD, "/bin/true", argv, NULL, 0);
	REFUSED(EPERM, SYS_unshare, (long)CLONE_NEWUSER);
	REFUSED(EPERM, SYS_setns, 0, 0);
	REFUSED(EPERM, SYS_chroot, "/");
	REFUSED(EPERM, SYS_setuid, 1000L);
}
END_TEST

/* What cordon run does first in serve's child: a user namespace, a uid. */
static int
sandbox_steps(void)
{
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	return 0;
}

static int
become_nobody(void)
{
	return setgroups(0, NULL) == 0 && setgid(65534) == 0 &&
		setuid(65534) == 0
	    ? 0
	    : -1;
}

START_TEST(serve_keeps_what_cordon_run_needs)
{
	/* serve's spawner: the cordon run it execs inherits its filter. */
	confined(&confine_spawner);
	refused_by_all();
	ck_assert_int_eq(in_child(exec_true), 0);
	ck_assert_int_eq(in_child(sandbox_steps), 0);
	ck_assert_int_eq(in_child(become_nobody), 0);
	ck_assert_int_eq(mount("tmpfs", testutil_dir, "tmpfs",
			     MS_NOSUID | MS_NODEV, "size=1m"),
	    0);
	ck_assert_int_eq(umount2(testutil_dir, 0), 0);
}
END_TEST

static void *
thread_main(void *arg)
{
	return arg;
}

/* The value of field in /proc/self/status, or -1. */
static long
status_field(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

START_TEST(what_every_daemon_still_does)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	pthread_t t;
	void *back = NULL;
	int sv[2], fd, st = 0;
	char path[PATH_MAX + 8];
	pid_t pid;

	confined(profiles[_i]);
	ck_assert_int_eq(status_field("Seccomp"), 2);
	ck_assert_int_eq(status_field("NoNewPrivs"), 1);
	ck_assert_int_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	/* A thread: libc's clone3 gets ENOSYS and falls back to clone. */
	ck_assert_int_eq(pthread_create(&t, NULL, thread_main, &sin), 0);
	ck_assert_int_eq(pthread_join(t, &back), 0);
	ck_assert_ptr_eq(back, &sin);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(7);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(st), 7);
	/* A file, a loopback listener, a unix pair, routing netlink. */
	snprintf(path, sizeof(path), "%s/f", testutil_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	close(fd);
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
	    0);
	close(sv[0]);
	close(sv[1]);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	ck_assert_int_ge(fd, 0);
	close(fd);
}
END_TEST

START_TEST(each_profile_says_what_it_refuses)
{
	ck_assert(confine_refuses(&confine_broker, "execve"));
	ck_assert(confine_refuses(&confine_proxy, "mount"));
	ck_assert(confine_refuses(&confine_hatch, "execve"));
	ck_assert(!confine_refuses(&confine_hatch, "mount"));
	ck_assert(!confine_refuses(&confine_spawner, "execve"));
	ck_assert(!confine_refuses(&confine_spawner, "unshare"));
	/* serve's HTTP part asks its spawner for every child. */
	ck_assert(confine_refuses(&confine_serve, "execve"));
	ck_assert(confine_refuses(&confine_serve, "unshare"));
	ck_assert(confine_refuses(&confine_serve, "mount"));
	ck_assert(confine_refuses(&confine_serve, "setresuid"));
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		ck_assert(confine_refuses(profiles[i], "keyctl"));
		ck_assert(confine_refuses(profiles[i], "bpf"));
		ck_assert(!confine_refuses(profiles[i], "read"));
		ck_assert(confine_refuses(profiles[i], "ptrace") ==
		    !CONFINE_KEEPS_PTRACE);
	}
}
END_TEST

static Suite *
confine_suite(void)
{
	Suite *s = suite_create("confine");
	TCase *tc = tcase_create("confine");

	testutil_tmp_fixture(tc, "confine");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_loop_test(tc,
	    the_broker_and_the_proxy_never_exec_mount_or_unshare, 0, 2);
	tcase_add_test(tc, the_hatch_mounts_a_tmpfs_and_never_execs);
	tcase_add_test(tc, serve_keeps_what_cordon_run_needs);
	tcase_add_loop_test(tc, what_every_daemon_still_does, 0, 4);
	tcase_add_test(tc, each_profile_says_what_it_refuses);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(confine_suite());
}
