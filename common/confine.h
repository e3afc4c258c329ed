/*
 * A daemon's own sandbox, applied late: once its sockets, files, keys and
 * threads are open, each daemon's main calls confine_apply with its
 * profile, which sets no_new_privs, makes the process non-dumpable (no
 * core file, no /proc/PID/mem or ptrace by its own uid: the proxy holds
 * the job CAs' keys, the broker the token pepper) and loads a seccomp
 * filter into every thread of the process (TSYNC). The filter is a deny
 * list: an allow list would have to follow sqlite, libpq, OpenSSL,
 * libevent, libmicrohttpd and NSS, which nobody here audits. A refused
 * call fails with EPERM (clone3 with ENOSYS, so that libc falls back to
 * clone, whose flags a filter can read); a call through another
 * architecture's entry point is refused whole. Every exec after it keeps
 * the filter: cordon serve's jobs (cordon run) inherit its spawner's,
 * which is why that profile keeps exec, mounts and namespaces.
 */
#ifndef CORDON_CONFINE_H
#define CORDON_CONFINE_H

#include <stdbool.h>

/* LeakSanitizer stops the process's threads with ptrace at exit: a build
 * with AddressSanitizer keeps ptrace, or every daemon's leak check (and
 * so its test) would fail. A release build refuses it. */
#if defined(__SANITIZE_ADDRESS__)
#define CONFINE_KEEPS_PTRACE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CONFINE_KEEPS_PTRACE 1
#endif
#endif
#ifndef CONFINE_KEEPS_PTRACE
#define CONFINE_KEEPS_PTRACE 0
#endif

/* What a daemon keeps beyond the calls every profile keeps. */
struct confine_profile {
	const char *name; /* "broker", ... for the log */
	bool exec; /* execve, execveat */
	bool mount; /* mount, umount2, the new mount API */
	bool namespaces; /* unshare, setns, clone with namespace flags,
			    chroot, pivot_root, sethostname, setdomainname */
	bool setid; /* setuid, setgid, setgroups and the rest, capset */
};

/* The daemons' profiles (serve's two parts: serve, spawner) (confine.c says why each keeps what). */
extern const struct confine_profile confine_broker;
extern const struct confine_profile confine_proxy;
extern const struct confine_profile confine_hatch;
extern const struct confine_profile confine_serve;
extern const struct confine_profile confine_spawner;

/*
 * Sets no_new_privs and PR_SET_DUMPABLE 0, then loads p's filter into
 * every thread of the calling process. Irreversible; call it once, last
 * before serving. 0, or -errno (the process is then unchanged but for
 * no_new_privs and dumpable, and the caller should refuse to serve).
 */
int confine_apply(const struct confine_profile *p);

/* Whether p refuses the system call of this name whatever its arguments
 * (for tests and the documentation's table). */
bool confine_refuses(const struct confine_profile *p, const char *name);

#endif
