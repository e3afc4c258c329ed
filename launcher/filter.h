/*
 * The job's seccomp filter. A deny list modelled on Docker's default
 * profile, plus what cordon's jobs never need and attackers like: io_uring,
 * bpf, userfaultfd, perf_event_open, keyctl, new user namespaces (clone and
 * unshare flags; clone3, whose flags a filter cannot read, is answered
 * ENOSYS so that libc falls back to clone), ptrace, every mount call, and
 * every foreign architecture (i386 and x32 entry points on x86_64), and
 * ioctl TIOCSTI and TIOCLINUX. A refused call fails with EPERM; nothing is
 * killed, so a job sees a plain error and the report can say what it
 * tried. socket(2) and socketpair(2) take an allow list of families
 * (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK with NETLINK_ROUTE alone): any
 * other family fails with EAFNOSUPPORT (AF_INET with SOCK_PACKET too),
 * another netlink protocol with EPROTONOSUPPORT, and so does an inet
 * protocol but 0, ICMP, TCP, UDP, ICMPv6, UDP-Lite, raw and MPTCP.
 */
#ifndef CORDON_LAUNCHER_FILTER_H
#define CORDON_LAUNCHER_FILTER_H

#include <stdbool.h>

/*
 * Loads the filter into the calling process (which must have set
 * no_new_privs, or hold CAP_SYS_ADMIN): every later exec keeps it. 0 or
 * -errno. Call it last before exec, after everything that needed a
 * refused call.
 */
int filter_apply(void);

/*
 * Compiles the filter once, in the calling process: every filter_apply
 * after it (in a child, say) loads the program as it is. 0 or -errno;
 * without it filter_apply compiles each time.
 */
int filter_prepare(void);

/* Whether the filter refuses the system call of this name whatever its
 * arguments (so that a report can say an EPERM came from seccomp). */
bool filter_refuses(const char *name);

/* How many system calls the filter refuses (for the run's report). */
unsigned filter_refused_count(void);

#endif
