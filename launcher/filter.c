/*
 * Building the job's seccomp filter with libseccomp. Names that the
 * running kernel's libseccomp does not know are skipped (they cannot be
 * called either); anything else that fails refuses the whole filter.
 */
#include "filter.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Refused outright, whatever their arguments. */
static const char *const refused[] = {
	/* Docker's default profile, the calls it refuses without
	 * CAP_SYS_ADMIN and the like. */
	"acct", "add_key", "bpf", "clock_adjtime", "clock_settime",
	"create_module", "delete_module", "finit_module", "get_kernel_syms",
	"get_mempolicy", "init_module", "ioperm", "iopl", "kcmp",
	"kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind",
	"move_pages", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
	"perf_event_open", "pivot_root", "process_vm_readv",
	"process_vm_writev", "ptrace", "query_module", "quotactl", "reboot",
	"request_key", "set_mempolicy", "setns", "settimeofday", "stime",
	"swapoff", "swapon", "sysfs", "_sysctl", "uselib", "userfaultfd",
	"ustat", "vm86", "vm86old", "syslog", "vhangup",
	/* Every way to mount or change mounts. */
	"mount", "umount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "mount_setattr",
	/* io_uring: a second system-call interface no filter sees into. */
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	/* Namespaces and roots are the launcher's to set, not the job's. */
	"chroot", "unshare"
};

/* clone(2) flags that make a namespace: each refused. */
static const unsigned long ns_flags[] = { CLONE_NEWUSER, CLONE_NEWNS,
	CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP,
	CLONE_NEWTIME };

bool
filter_refuses(const char *name)
{
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (strcmp(refused[i], name) == 0)
			return true;
	return false;
}

unsigned
filter_refused_count(void)
{
	/* The list, clone with namespace flags, clone3, personality, socket
	 * and socketpair off the allow list, ioctl TIOCSTI and TIOCLINUX. */
	return (unsigned)(sizeof(refused) / sizeof(refused[0])) + 6;
}

/* The inet protocols a job may ask socket(2) for: the default, ICMP (ping
 * sockets, which the kernel still refuses to the job's gid), TCP, UDP,
 * ICMPv6, UDP-Lite, raw (for SOCK_RAW, refused for want of CAP_NET_RAW)
 * and MPTCP. Others (SCTP, DCCP, L2TP, SMC through AF_INET) are modules
 * the kernel loads on demand. Sorted. */
static const unsigned long inet_protocols[] = { 0, 1, 6, 17, 58, 136, 255,
	262 };

static bool
inet_allowed(unsigned long p)
{
	for (size_t i = 0;
	     i < sizeof(inet_protocols) / sizeof(inet_protocols[0]); i++)
		if (inet_protocols[i] == p)
			return true;
	return false;
}

/*
 * socket(AF_INET or AF_INET6, ...) with a protocol off inet_protocols:
 * EPROTONOSUPPORT. A filter compares one argument once a rule, so the
 * refused numbers up to the last allowed are covered by aligned blocks
 * (value, mask), and anything above by one comparison.
 */
static int
filter_inet_protocols(scmp_filter_ctx ctx, int family)
{
	const unsigned long top =
	    inet_protocols[sizeof(inet_protocols) / sizeof(inet_protocols[0]) -
		1];
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT),
	    SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, (unsigned long)family, 0),
	    SCMP_A2(SCMP_CMP_GT, top, 0));

	for (unsigned long v = 0; r == 0 && v <= top;) {
		unsigned long n = 1;
		if (inet_allowed(v)) {
			v++;
			continue;
		}
		/* The largest aligned block from v with nothing allowed. */
		for (bool grow = true; grow;) {
			unsigned long m = n * 2;
			grow = v % m == 0 && v + m - 1 <= top;
			for (unsigned long x = v; grow && x < v + m; x++)
				grow = !inet_allowed(x);
			if (grow)
				n = m;
		}
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT),
		    SCMP_SYS(socket), 2,
		    SCMP_A0(SCMP_CMP_EQ, (unsigned long)family, 0),
		    SCMP_A2(SCMP_CMP_MASKED_EQ, ~(n - 1), v));
		v += n;
	}
	return r;
}

/*
 * socket(2) and socketpair(2): an allow list of families, AF_UNIX,
 * AF_INET, AF_INET6 and AF_NETLINK (1, 2, 10, 16), and of netlink only
 * NETLINK_ROUTE (0, namespaced). Everything else fails with EAFNOSUPPORT
 * (a netlink protocol with EPROTONOSUPPORT): AF_VSOCK is not network-
 * namespaced, AF_PACKET, AF_ALG, AF_KEY, Bluetooth and the rest are
 * kernel surface no job needs (and a refused family loads no module).
 * The comparisons are on the whole 64-bit register: a value with upper
 * bits set (which the kernel would drop from its int) is refused too. So
 * is AF_INET with SOCK_PACKET, which the kernel turns into AF_PACKET.
 */
static int
filter_sockets(scmp_filter_ctx ctx, int nr)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
	    SCMP_A0(SCMP_CMP_GT, AF_NETLINK, 0));

	for (unsigned long f = 0; r == 0 && f < AF_NETLINK; f++)
		if (f != AF_UNIX && f != AF_INET && f != AF_INET6)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
			    nr, 1, SCMP_A0(SCMP_CMP_EQ, f, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), nr,
		    2, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK, 0),
		    SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE, 0));
	/* The kernel makes (AF_INET, SOCK_PACKET) an AF_PACKET socket: the
	 * type's low four bits are its kind, the rest flags. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 2,
		    SCMP_A0(SCMP_CMP_EQ, AF_INET, 0),
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_PACKET));
	return r;
}

static int
filter_build(scmp_filter_ctx *ret)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = 0;

	if (ctx == NULL)
		return -ENOMEM;
	/* A call through another architecture's entry point (int 0x80, x32)
	 * is refused as a whole. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_ERRNO(EPERM));
	for (size_t i = 0; r == 0 && i < sizeof(refused) / sizeof(refused[0]);
	     i++) {
		int nr = seccomp_syscall_resolve_name(refused[i]);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	/* clone with any namespace flag: refused; a plain fork or thread
	 * goes through. */
	for (size_t i = 0; r == 0 && i < sizeof(ns_flags) / sizeof(ns_flags[0]);
	     i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	/* personality(2): not the flags that turn protections off (ASLR,
	 * non-executable data); the query and PER_LINUX go through. */
	static const unsigned long weakening[] = { READ_IMPLIES_EXEC,
		ADDR_NO_RANDOMIZE, ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO };
	for (size_t i = 0;
	     r == 0 && i < sizeof(weakening) / sizeof(weakening[0]); i++)
		/* Bit 31 is in no personality, but is in the query
		 * (0xffffffff): requiring it clear lets the query through. */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(personality), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, weakening[i] | 0x80000000UL,
			weakening[i]));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
		    SCMP_SYS(clone3), 0);
	if (r == 0)
		r = filter_sockets(ctx, SCMP_SYS(socket));
	if (r == 0)
		r = filter_sockets(ctx, SCMP_SYS(socketpair));
	if (r == 0)
		r = filter_inet_protocols(ctx, AF_INET);
	if (r == 0)
		r = filter_inet_protocols(ctx, AF_INET6);
	/* Typing into a terminal (TIOCSTI) and TIOCLINUX (its selection and
	 * console tricks), on whatever descriptor: the kernel reads the
	 * request as 32 bits, so only those are compared. */
	static const unsigned long tty_requests[] = { TIOCSTI, TIOCLINUX };
	for (size_t i = 0;
	     r == 0 && i < sizeof(tty_requests) / sizeof(tty_requests[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, tty_requests[i]));
	if (r < 0) {
		seccomp_release(ctx);
		return r;
	}
	*ret = ctx;
	return 0;
}

/* The filter compiled once, in the launcher: each sandbox loads the
 * program as it is (libseccomp's compilation took 0.65 ms a start). */
static struct sock_fprog prepared;

int
filter_prepare(void)
{
	scmp_filter_ctx ctx;
	struct stat st;
	int fd, r;

	if (prepared.filter != NULL)
		return 0;
	if ((r = filter_build(&ctx)) < 0)
		return r;
	fd = memfd_create("cordon-filter", MFD_CLOEXEC);
	if (fd < 0) {
		seccomp_release(ctx);
		return -errno;
	}
	r = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (r == 0 &&
	    (fstat(fd, &st) < 0 || st.st_size <= 0 ||
		st.st_size % sizeof(struct sock_filter) != 0))
		r = -EIO;
	if (r == 0) {
		struct sock_filter *f = malloc((size_t)st.st_size);
		if (f == NULL ||
		    pread(fd, f, (size_t)st.st_size, 0) != st.st_size) {
			free(f);
			r = -EIO;
		} else {
			prepared.filter = f;
			prepared.len = (unsigned short)(st.st_size /
			    sizeof(struct sock_filter));
		}
	}
	close(fd);
	return r;
}

int
filter_apply(void)
{
	scmp_filter_ctx ctx;
	int r;

	if (prepared.filter != NULL)
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prepared) < 0
		    ? -errno
		    : 0;
	if ((r = filter_build(&ctx)) < 0)
		return r;
	r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}
