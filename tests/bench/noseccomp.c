/*
 * A shim for bench_proxy.sh's instr part, LD_PRELOADed into the one
 * cordon-proxy it runs under valgrind: valgrind 3.19 (Debian 12's) does
 * not know seccomp(2) (syscall 317), so libseccomp finds no filter API,
 * refuses the thread-sync attribute with EOPNOTSUPP, the proxy's late
 * confine_apply fails and it exits. Here seccomp_attr_set and
 * seccomp_load do nothing and say they did: the filter is built (its
 * rules added to libseccomp's context) but never loaded; the rest of
 * confine_apply (no_new_privs, not dumpable) runs as always. A seccomp
 * filter runs in the kernel at each system call, so no user-space
 * instruction callgrind counts is missing; the proxy it runs in is only
 * ever the bench's, never a service. Built by the script (cc -shared),
 * never by CMake, linked against nothing.
 */
int seccomp_attr_set(void *ctx, int attr, unsigned int value);
int seccomp_load(const void *ctx);

/* Sets nothing: 0, as libseccomp's own on success. */
int
seccomp_attr_set(void *ctx, int attr, unsigned int value)
{
	(void)ctx;
	(void)attr;
	(void)value;
	return 0;
}

/* Loads no filter: 0, as libseccomp's own on success. */
int
seccomp_load(const void *ctx)
{
	(void)ctx;
	return 0;
}
