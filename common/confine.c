/*
 * The daemons' own seccomp filters (confine.h). Every profile refuses
 * what no cordon daemon calls and an attacker inside one would want: the
 * kernel's debugging and keyring interfaces, modules and kexec, BPF,
 * io_uring, userfaultfd, the clock, swap and reboot, other processes'
 * memory, weakening personalities, socket families but unix, inet, inet6
 * and routing netlink. What a daemon keeps beyond that is its profile's,
 * below. Names this architecture does not have are skipped (nothing can
 * call them); anything else that fails refuses the whole filter.
 */
#include "confine.h"

#include <errno.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A comparison's unused second operand is spelt out (0): clang's
 * -Wmissing-field-initializers refuses libseccomp's macros without it. */

/* Refused by every profile, whatever the arguments. */
static const char *const refused_always[] = {
	/* The kernel's keyring: no daemon keeps its keys there. */
	"add_key",
	"keyctl",
	"request_key",
	/* Code into the kernel, and a kernel's replacement. */
	"bpf",
	"init_module",
	"finit_module",
	"delete_module",
	"create_module",
	"query_module",
	"get_kernel_syms",
	"kexec_load",
	"kexec_file_load",
	"uselib",
	/* Observing or steering other processes. */
	"perf_event_open",
	"process_vm_readv",
	"process_vm_writev",
	"pidfd_getfd",
	"kcmp",
	"lookup_dcookie",
	"fanotify_init",
	/* Second system-call interfaces and kernel races made easy. */
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"userfaultfd",
	/* The host's clock, swap, power, quotas, accounting, consoles. */
	"settimeofday",
	"stime",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"swapon",
	"swapoff",
	"reboot",
	"acct",
	"quotactl",
	"quotactl_fd",
	"syslog",
	"vhangup",
	"ioperm",
	"iopl",
	"vm86",
	"vm86old",
	/* Files by handle (past every path check), relics. */
	"open_by_handle_at",
	"name_to_handle_at",
	"nfsservctl",
	"sysfs",
	"_sysctl",
	"ustat",
	/* Memory placement: Docker's default refuses it; nothing here asks. */
	"mbind",
	"set_mempolicy",
	"migrate_pages",
	"move_pages",
};

static const char *const refused_ptrace[] = { "ptrace" };

static const char *const refused_exec[] = { "execve", "execveat" };

static const char *const refused_mount[] = { "mount", "umount", "umount2",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
	"mount_setattr" };

static const char *const refused_namespaces[] = { "unshare", "setns", "chroot",
	"pivot_root", "sethostname", "setdomainname" };

static const char *const refused_setid[] = { "setuid", "setgid", "setreuid",
	"setregid", "setresuid", "setresgid", "setgroups", "setfsuid",
	"setfsgid", "capset", "setuid32", "setgid32", "setreuid32",
	"setregid32", "setresuid32", "setresgid32", "setgroups32", "setfsuid32",
	"setfsgid32" };

/* clone(2) flags that make a namespace. */
static const unsigned long ns_flags[] = { CLONE_NEWUSER, CLONE_NEWNS,
	CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP,
	CLONE_NEWTIME };

/*
 * The broker: HTTP, sqlite or libpq, its keys and pepper read at start.
 * It never execs, mounts, enters a namespace or changes its ids.
 */
const struct confine_profile confine_broker = { .name = "broker" };

/*
 * The proxy: hostile bytes from jobs and upstreams, TLS, the job CAs'
 * keys. It binds each job's unix socket and connects upstream; it never
 * execs, mounts, enters a namespace or changes its ids.
 */
const struct confine_profile confine_proxy = { .name = "proxy" };

/*
 * The hatch mounts and unmounts each workspace's tmpfs: it keeps the mount
 * calls. It never execs, enters a namespace or changes its ids; its
 * sealer, forked before this, reads the overlays under an allow list of
 * its own (hatch/sealer.c).
 */
const struct confine_profile confine_hatch = { .name = "hatch", .mount = true };

/*
 * cordon serve's HTTP part: libmicrohttpd, the callbacks, the jobs'
 * pipes. It has dropped root before this (launcher/spawner.c) and asks
 * the spawner for every child: it never execs, mounts, enters a
 * namespace or changes its ids.
 */
const struct confine_profile confine_serve = { .name = "serve" };

/*
 * cordon serve's spawner forks and execs cordon run, which inherits this
 * filter and must still build the sandbox (clone with namespace flags,
 * unshare, mounts, pivot_root, sethostname, the job's uid and
 * capabilities): it keeps all of those, and parses nothing but its
 * fixed-format requests (docs/threat-model.md).
 */
const struct confine_profile confine_spawner = { .name = "spawner",
	.exec = true,
	.mount = true,
	.namespaces = true,
	.setid = true };

static bool
in_list(const char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

bool
confine_refuses(const struct confine_profile *p, const char *name)
{
	return in_list(refused_always, NELEM(refused_always), name) ||
	    (!CONFINE_KEEPS_PTRACE &&
		in_list(refused_ptrace, NELEM(refused_ptrace), name)) ||
	    (!p->exec && in_list(refused_exec, NELEM(refused_exec), name)) ||
	    (!p->mount && in_list(refused_mount, NELEM(refused_mount), name)) ||
	    (!p->namespaces &&
		in_list(refused_namespaces, NELEM(refused_namespaces), name)) ||
	    (!p->setid && in_list(refused_setid, NELEM(refused_setid), name));
}

/* Refuses each call of list that this architecture has: 0 or -errno. */
static int
refuse_all(scmp_filter_ctx ctx, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(list[i]);
		int r;

		if (nr == __NR_SCMP_ERROR)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * socket(2), socketpair(2): AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK
 * with NETLINK_ROUTE (getaddrinfo's AI_ADDRCONFIG, the launcher's routes)
 * are kept; any other family fails with EAFNOSUPPORT, another netlink
 * protocol with EPROTONOSUPPORT, as in the job's filter.
 */
static int
refuse_families(scmp_filter_ctx ctx, int nr)
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
	/* (AF_INET, SOCK_PACKET) is an AF_PACKET socket to the kernel. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 2,
		    SCMP_A0(SCMP_CMP_EQ, AF_INET, 0),
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_PACKET));
	return r;
}

static int
build(const struct confine_profile *p, scmp_filter_ctx ctx)
{
	int r;

	/* int 0x80 and x32 entry points are refused whole; the filter
	 * reaches every thread, or none. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_ERRNO(EPERM));
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	/* The kernel's errno from seccomp_load, not -ECANCELED. */
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	if (r == 0)
		r = refuse_all(ctx, refused_always, NELEM(refused_always));
	if (r == 0 && !CONFINE_KEEPS_PTRACE)
		r = refuse_all(ctx, refused_ptrace, NELEM(refused_ptrace));
	if (r == 0 && !p->exec)
		r = refuse_all(ctx, refused_exec, NELEM(refused_exec));
	if (r == 0 && !p->mount)
		r = refuse_all(ctx, refused_mount, NELEM(refused_mount));
	if (r == 0 && !p->setid)
		r = refuse_all(ctx, refused_setid, NELEM(refused_setid));
	if (r == 0 && !p->namespaces) {
		r = refuse_all(ctx, refused_namespaces,
		    NELEM(refused_namespaces));
		for (size_t i = 0; r == 0 && i < NELEM(ns_flags); i++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
			    SCMP_SYS(clone), 1,
			    SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i],
				ns_flags[i]));
	}
	/* clone3's flags are in memory, out of a filter's reach: ENOSYS,
	 * and libc falls back to clone, whose flags the rules above read. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
		    SCMP_SYS(clone3), 0);
	/* personality(2): not the flags that turn ASLR or NX off; bit 31,
	 * in the query 0xffffffff alone, lets the query through. */
	static const unsigned long weakening[] = { READ_IMPLIES_EXEC,
		ADDR_NO_RANDOMIZE, ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO };
	for (size_t i = 0; r == 0 && i < NELEM(weakening); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(personality), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, weakening[i] | 0x80000000UL,
			weakening[i]));
	/* Typing into a terminal, on any descriptor (32 bits compared, as
	 * the kernel reads the request). */
	static const unsigned long tty_requests[] = { TIOCSTI, TIOCLINUX };
	for (size_t i = 0; r == 0 && i < NELEM(tty_requests); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, tty_requests[i]));
	if (r == 0)
		r = refuse_families(ctx, SCMP_SYS(socket));
	if (r == 0)
		r = refuse_families(ctx, SCMP_SYS(socketpair));
	return r;
}

int
confine_apply(const struct confine_profile *p)
{
	scmp_filter_ctx ctx;
	int r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* No core file and no /proc/PID/mem for the daemon's own uid: its
	 * keys stay in its memory. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx == NULL)
		return -ENOMEM;
	r = build(p, ctx);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	/* With TSYNC, a thread that could not be synchronised comes back as
	 * a positive thread id: the filter is on no thread. */
	return r > 0 ? -EAGAIN : r;
}
