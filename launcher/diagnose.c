/*
 * diagnose_sandbox: the known reasons a host refuses the sandbox (a
 * chroot, user namespaces switched off or restricted by AppArmor, a
 * container without CAP_SYS_ADMIN), read from /proc and two marker files,
 * each said with what to do. It only reads; it is called after the
 * sandbox failed, so nothing it finds changes what cordon does.
 */
#include "diagnose.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAP_SYS_ADMIN_BIT 21

static FILE *
open_under(const char *root, const char *path)
{
	char full[PATH_MAX];

	if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >=
	    sizeof(full))
		return NULL;
	return fopen(full, "re");
}

static bool
exists_under(const char *root, const char *path)
{
	char full[PATH_MAX];

	if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >=
	    sizeof(full))
		return false;
	return access(full, F_OK) == 0;
}

/* The integer in a /proc/sys file, or -1 when it cannot be read. */
static long long
sysctl_value(const char *root, const char *path)
{
	FILE *f = open_under(root, path);
	long long v = -1;

	if (f == NULL)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* 1 when a line of mountinfo has "/" as its mount point, 0 when none
 * has, -1 when it cannot be read. */
static int
root_is_mount(const char *root)
{
	FILE *f = open_under(root, "/proc/self/mountinfo");
	char line[4096];
	int found = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		/* id parent major:minor root mount-point ... */
		char *field = line;

		for (int i = 0; i < 4 && field != NULL; i++) {
			field = strchr(field, ' ');
			if (field != NULL)
				field++;
		}
		if (field != NULL && field[0] == '/' && field[1] == ' ') {
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

/* 1 when CapEff lacks CAP_SYS_ADMIN, 0 when it has it, -1 unknown. */
static int
no_sys_admin(const char *root)
{
	FILE *f = open_under(root, "/proc/self/status");
	char line[256];
	int r = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *end;
		unsigned long long caps;

		if (strncmp(line, "CapEff:", 7) != 0)
			continue;
		caps = strtoull(line + 7, &end, 16);
		if (end != line + 7)
			r = (caps >> CAP_SYS_ADMIN_BIT) & 1 ? 0 : 1;
		break;
	}
	fclose(f);
	return r;
}

static void
add(char *out, size_t len, int *n, const char *finding)
{
	size_t used = strlen(out);

	if (used < len)
		snprintf(out + used, len - used, "%s%s", *n > 0 ? "; " : "",
		    finding);
	(*n)++;
}

int
diagnose_sandbox(const char *root, char *out, size_t len)
{
	int n = 0;
	bool in_container = exists_under(root, "/.dockerenv") ||
	    exists_under(root, "/run/.containerenv");

	if (len == 0)
		return 0;
	out[0] = '\0';
	if (root_is_mount(root) == 0)
		add(out, len, &n,
		    "/ is not a mount point (a chroot?): the sandbox needs "
		    "private mounts of a real root; run cordon on the host or "
		    "in a VM, not in a chroot");
	if (sysctl_value(root, "/proc/sys/kernel/unprivileged_userns_clone") ==
	    0)
		add(out, len, &n,
		    "user namespaces are switched off "
		    "(kernel.unprivileged_userns_clone = 0): sysctl -w "
		    "kernel.unprivileged_userns_clone=1");
	if (sysctl_value(root, "/proc/sys/user/max_user_namespaces") == 0)
		add(out, len, &n,
		    "no user namespaces may be made (user.max_user_namespaces "
		    "= 0): sysctl -w user.max_user_namespaces=15000");
	if (sysctl_value(root,
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
		add(out, len, &n,
		    "AppArmor restricts user namespaces "
		    "(kernel.apparmor_restrict_unprivileged_userns = 1, as on "
		    "Ubuntu 23.10 and later): sysctl -w "
		    "kernel.apparmor_restrict_unprivileged_userns=0, or give "
		    "cordon an AppArmor profile that allows userns");
	int no_admin = no_sys_admin(root);
	if (no_admin == 1)
		add(out, len, &n,
		    "CAP_SYS_ADMIN is missing (an unprivileged container?): "
		    "run cordon as root on the host, or the container "
		    "privileged (docker run --privileged)");
	/* A container's marker alone says nothing when CAP_SYS_ADMIN is
	 * there (a privileged container makes the sandbox): only when the
	 * capabilities cannot be read. */
	else if (in_container && no_admin < 0)
		add(out, len, &n,
		    "this is a container (/.dockerenv or /run/.containerenv): "
		    "one that is not privileged refuses namespaces and mounts; "
		    "run it privileged (docker run --privileged) or cordon on "
		    "the host");
	return n;
}
