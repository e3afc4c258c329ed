/*
 * The job's seccomp filter, applied for real in a child process: each call
 * a hostile job would try fails with EPERM (clone3 with ENOSYS, so libc
 * falls back to clone), a call through the i386 entry point is refused,
 * a socket family off the allow list fails with EAFNOSUPPORT (a netlink
 * protocol but NETLINK_ROUTE with EPROTONOSUPPORT), TIOCSTI and TIOCLINUX
 * fail with EPERM whatever the upper bits of the request, and what
 * ordinary programs do (fork, threads, files, sockets) works.
 */
#include "filter.h"
#include "testutil.h"
#include "util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* LeakSanitizer's exit check needs ptrace, which the filter refuses: run
 * it now, before the filter (it then does not run again at exit). */
extern void __lsan_do_leak_check(void) __attribute__((weak));

/* In the child: the filter, as the launcher will apply it: compiled
 * there (prepared) or here. Each test runs both ways. */
static int prepare_first;

static void
filtered(void)
{
	if (prepare_first)
		ck_assert_int_eq(filter_prepare(), 0);
	if (__lsan_do_leak_check != NULL)
		__lsan_do_leak_check();
	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(filter_apply(), 0);
}

/* Expects a raw system call to fail with err. */
#define REFUSED(err, ...)                                                      \
	do {                                                                   \
		errno = 0;                                                     \
		long _r = syscall(__VA_ARGS__);                                \
		ck_assert_msg(_r == -1 && errno == (err), "%s: %ld, errno %d", \
		    #__VA_ARGS__, _r, errno);                                  \
	} while (0)

START_TEST(what_a_hostile_job_tries_fails)
{
	struct io_uring_params params = { 0 };

	prepare_first = _i;
	filtered();
	REFUSED(EPERM, SYS_mount, "none", "/tmp", "tmpfs", 0UL, NULL);
	REFUSED(EPERM, SYS_umount2, "/", 0);
	REFUSED(EPERM, SYS_ptrace, 16L /* PTRACE_ATTACH */, 1L, 0L, 0L);
	REFUSED(EPERM, SYS_bpf, 0, NULL, 0);
	REFUSED(EPERM, SYS_io_uring_setup, 8, &params);
	REFUSED(EPERM, SYS_userfaultfd, 0);
	REFUSED(EPERM, SYS_perf_event_open, NULL, 0, -1, -1, 0UL);
	REFUSED(EPERM, SYS_keyctl, 0, 0, 0, 0, 0);
	REFUSED(EPERM, SYS_add_key, "user", "k", "v", 1, 0);
	REFUSED(EPERM, SYS_unshare, (long)CLONE_NEWUSER);
	REFUSED(EPERM, SYS_unshare, (long)CLONE_NEWNS);
	REFUSED(EPERM, SYS_setns, 0, 0);
	REFUSED(EPERM, SYS_kexec_load, 0UL, 0UL, NULL, 0UL);
	REFUSED(EPERM, SYS_init_module, NULL, 0UL, "");
	REFUSED(EPERM, SYS_open_by_handle_at, 0, NULL, 0);
	REFUSED(EPERM, SYS_chroot, "/");
	REFUSED(EPERM, SYS_fsopen, "tmpfs", 0);
	REFUSED(EPERM, SYS_open_tree, AT_FDCWD, "/", 0);
	/* A new user namespace by clone(2) is refused; clone3 says ENOSYS. */
	REFUSED(EPERM, SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L,
	    0L);
	REFUSED(ENOSYS, SYS_clone3, NULL, 0);
	/* personality: only the query and PER_LINUX. */
	REFUSED(EPERM, SYS_personality, (long)READ_IMPLIES_EXEC);
	ck_assert_int_ge(personality(0xffffffff), 0);
}
END_TEST

START_TEST(a_foreign_architecture_is_refused)
{
	filtered();
#if defined(__x86_64__)
	long r;

	/* getpid through the i386 entry point (eax 20): not our ABI. */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	ck_assert_int_eq(r, -EPERM);
	/* And through x32's (the native entry, bit 30 of the number). */
	REFUSED(EPERM, 0x40000000L | SYS_getpid);
#endif
	/* And the same call the native way still works. */
	ck_assert_int_eq(syscall(SYS_getpid), getpid());
}
END_TEST

/* The families a job may open; everything else is refused by number,
 * including the upper 32 bits the kernel drops from an int argument. */
START_TEST(socket_families_are_an_allow_list)
{
	static const long refused_families[] = { AF_UNSPEC, 3 /* AX25 */,
		4 /* IPX */, 9 /* X25 */, AF_KEY, AF_PACKET, 21 /* RDS */,
		24 /* PPPOX */, 29 /* CAN */, 30 /* TIPC */, 31 /* BLUETOOTH */,
		38 /* ALG */, 40 /* VSOCK */, 44 /* XDP */, 45 /* MCTP */, 46,
		255, 65536, 0x7fffffffL,
		/* AF_VSOCK and AF_INET with bits the kernel would drop */
		0x100000028L, 0x100000002L, -1L };
	static const long refused_netlink[] = { 15 /* KOBJECT_UEVENT */,
		4 /* SOCK_DIAG */, 9 /* AUDIT */, 12 /* NETFILTER */,
		16 /* GENERIC */, 6 /* XFRM */, 11 /* CONNECTOR */, 31,
		0x100000000L };
	static const long types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET,
		SOCK_RAW };
	int sv[2], fd;

	prepare_first = _i;
	filtered();
	for (size_t f = 0; f < ARRAY_SIZE(refused_families); f++)
		for (size_t t = 0; t < ARRAY_SIZE(types); t++) {
			REFUSED(EAFNOSUPPORT, SYS_socket, refused_families[f],
			    types[t], 0L);
			REFUSED(EAFNOSUPPORT, SYS_socketpair,
			    refused_families[f], types[t], 0L, sv);
		}
	for (size_t p = 0; p < ARRAY_SIZE(refused_netlink); p++) {
		REFUSED(EPROTONOSUPPORT, SYS_socket, (long)AF_NETLINK,
		    (long)SOCK_RAW, refused_netlink[p]);
		REFUSED(EPROTONOSUPPORT, SYS_socket, (long)AF_NETLINK,
		    (long)(SOCK_DGRAM | SOCK_CLOEXEC), refused_netlink[p]);
	}
	/* (AF_INET, SOCK_PACKET) is a packet socket in the kernel, whatever
	 * the family says; with flags, or upper bits, the same. With a
	 * protocol off the inet list too (htons(ETH_P_ALL)), the protocol's
	 * rule may answer first: refused either way. */
	REFUSED(EAFNOSUPPORT, SYS_socket, (long)AF_INET, (long)SOCK_PACKET, 0L);
	REFUSED(EAFNOSUPPORT, SYS_socket, (long)AF_INET,
	    (long)(SOCK_PACKET | SOCK_CLOEXEC | SOCK_NONBLOCK), 0L);
	REFUSED(EAFNOSUPPORT, SYS_socket, (long)AF_INET,
	    (long)(0x100000000L | SOCK_PACKET), 0L);
	errno = 0;
	ck_assert_int_eq(syscall(SYS_socket, (long)AF_INET, (long)SOCK_PACKET,
			     0x300L),
	    -1);
	ck_assert(errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT);
	/* An inet protocol off the list (SCTP, DCCP, L2TP, SMC through
	 * AF_INET: kernel modules loaded on demand): EPROTONOSUPPORT, where
	 * the kernel would load the module or say ESOCKTNOSUPPORT. */
	static const long inet_refused[][2] = { { SOCK_SEQPACKET, 132 },
		{ SOCK_STREAM, 132 }, { 6 /* SOCK_DCCP */, 33 },
		{ SOCK_DGRAM, 115 }, { SOCK_STREAM, 256 /* SMC */ },
		{ SOCK_STREAM, 2 }, { SOCK_STREAM, 263 },
		{ SOCK_STREAM, 0x100000006L } };
	for (size_t p = 0; p < ARRAY_SIZE(inet_refused); p++) {
		REFUSED(EPROTONOSUPPORT, SYS_socket, (long)AF_INET,
		    inet_refused[p][0], inet_refused[p][1]);
		REFUSED(EPROTONOSUPPORT, SYS_socket, (long)AF_INET6,
		    inet_refused[p][0], inet_refused[p][1]);
	}
	/* What is allowed still works. */
	static const long inet_allowed[][2] = { { SOCK_STREAM, 0 },
		{ SOCK_STREAM, IPPROTO_TCP }, { SOCK_DGRAM, IPPROTO_UDP },
		{ SOCK_STREAM, 262 /* MPTCP */ }, { SOCK_DGRAM, 136 } };
	for (size_t p = 0; p < ARRAY_SIZE(inet_allowed); p++) {
		fd = socket(AF_INET6, (int)inet_allowed[p][0],
		    (int)inet_allowed[p][1]);
		ck_assert_msg(fd >= 0, "inet6 %ld %ld: %s", inet_allowed[p][0],
		    inet_allowed[p][1], strerror(errno));
		close(fd);
	}
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[0]);
	close(sv[1]);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP);
	ck_assert_int_ge(fd, 0);
	close(fd);
#if defined(__x86_64__)
	long r;

	/* socketcall(SYS_SOCKET, {AF_VSOCK, ...}) through the i386 entry
	 * point (eax 102): refused with the rest of that architecture. */
	unsigned int args[3] = { 40, SOCK_STREAM, 0 };
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(102L), "b"(1L), "c"(args)
			 : "memory");
	ck_assert_int_eq(r, -EPERM);
#endif
}
END_TEST

/* Typing into a terminal (TIOCSTI) and TIOCLINUX: refused whatever the fd,
 * and whatever the upper 32 bits of the request, which the kernel drops. */
START_TEST(terminal_injection_is_refused)
{
	int fd;
	char c = 'x';

	prepare_first = _i;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	filtered();
	for (int f = -1; f <= fd; f++) {
		REFUSED(EPERM, SYS_ioctl, (long)f, (long)TIOCSTI, &c);
		REFUSED(EPERM, SYS_ioctl, (long)f,
		    (long)(0x100000000UL | TIOCSTI), &c);
		REFUSED(EPERM, SYS_ioctl, (long)f,
		    (long)(0xffffffff00000000UL | TIOCSTI), &c);
		REFUSED(EPERM, SYS_ioctl, (long)f, (long)TIOCLINUX, &c);
		REFUSED(EPERM, SYS_ioctl, (long)f,
		    (long)(0x100000000UL | TIOCLINUX), &c);
	}
	/* Other ioctls still reach the kernel. */
	REFUSED(ENOTTY, SYS_ioctl, (long)fd, (long)TIOCGWINSZ, &c);
	close(fd);
}
END_TEST

static void *
thread_main(void *arg)
{
	return arg;
}

START_TEST(ordinary_programs_work)
{
	char path[64];
	pthread_t t;
	int fd, st;
	pid_t pid;

	filtered();
	/* fork, exec and wait. */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Threads (clone with CLONE_THREAD and friends). */
	ck_assert_int_eq(pthread_create(&t, NULL, thread_main, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* Files and sockets. */
	snprintf(path, sizeof(path), "/tmp/cordon-seccomp-%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	ck_assert_int_eq(unlink(path), 0);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_gt(filter_refused_count(), 50);
}
END_TEST

static Suite *
seccomp_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc = tcase_create("filter");

	/* Each test runs in its own forked child (Check's default), so the
	 * filter never reaches the runner. */
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, what_a_hostile_job_tries_fails, 0, 2);
	tcase_add_test(tc, a_foreign_architecture_is_refused);
	tcase_add_loop_test(tc, socket_families_are_an_allow_list, 0, 2);
	tcase_add_loop_test(tc, terminal_injection_is_refused, 0, 2);
	tcase_add_test(tc, ordinary_programs_work);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(seccomp_suite());
}
