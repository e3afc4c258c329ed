/*
 * The systemd deployment, where systemd is not PID 1: the hatch and `cordon
 * run` started in the mount namespaces that deploy/systemd's units would
 * give them, read from the unit files themselves, and a job run through
 * them must bring back what it wrote as a patch, under its disk limit.
 *
 * The hatch mounts a tmpfs per workspace (the job's disk limit) and the
 * launcher mounts the job's overlay on it: both must see the same mounts.
 * systemd gives a unit a mount namespace of its own whenever one of its
 * file system options is set (exec_needs_mount_namespace() in src/core/
 * execute.c: ProtectSystem=, ProtectHome=, PrivateTmp=, PrivateDevices=,
 * ProtectKernelTunables=, ProtectKernelModules=, ProtectKernelLogs=,
 * ProtectControlGroups=, ...). setup_namespace() (src/core/namespace.c)
 * then makes every mount of it MS_SLAVE|MS_REC before anything else, so
 * that "nothing now mounted in the namespace shows up in the parent", sets
 * the unit's mounts up, and at the end remounts / with MountFlags=
 * (MS_SHARED by default) | MS_REC, which "will not reestablish propagation
 * from our side to the host, since what's disconnected is disconnected";
 * systemd.exec(5) of systemd 252 says so of MountFlags=shared too.
 *
 * The emulation (main's --as-unit, run as a wrapper before the program):
 * the unit's [Service] options are read; with none of the mount namespace
 * ones the program is run as it is. Otherwise: unshare(CLONE_NEWNS), / made
 * MS_SLAVE|MS_REC; PrivateTmp= a fresh tmpfs on /tmp and /var/tmp;
 * ProtectHome= /home, /root, /run/user read-only or hidden;
 * PrivateDevices= a /dev of null, zero, full, random, urandom, tty, pts and
 * shm; ProtectSystem=strict every mount read-only but /proc, /sys, /dev,
 * the private /tmp and the service's own directories (full and yes: /usr,
 * /boot, /efi, /etc as systemd lists them); ProtectKernelTunables=
 * /proc/sys and /sys read-only, ProtectControlGroups= /sys/fs/cgroup; then
 * / remounted MountFlags= (shared) | MS_REC. The other options (the
 * kernel's modules and logs, ProtectProc=, ...) only hide more in the same
 * namespace. The test's root directory (CORDON_IT_ROOT, under /tmp) stands
 * for /var/lib and /run, where the services' directories live: PrivateTmp=
 * does not hide it (it is bound again on the private /tmp). The test
 * process itself is the host: a mount namespace of its own whose / is
 * MS_SHARED|MS_REC, as systemd makes the host's at boot (this machine's is
 * private), so nothing of it touches the machine's mounts.
 */
#include "harness.h"
#include "path.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define HATCH_UNIT CORDON_SOURCE_DIR "/deploy/systemd/cordon-hatch.service.in"
#define LAUNCHER_UNIT                                                          \
	CORDON_SOURCE_DIR "/deploy/systemd/cordon-launcher.service.in"

static char self[PATH_MAX]; /* this test program, the wrapper */
static struct stack st;

/* What of a unit's [Service] section makes and shapes its mount namespace. */
struct unit {
	char why[512]; /* the options that give it a mount namespace */
	char protect_system[16], protect_home[16];
	bool private_tmp, private_devices, tunables, cgroups;
	unsigned long final; /* MountFlags=: MS_SHARED unless set */
};

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	fputs("as-unit: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(e));
	_exit(71);
}

static bool
yes(const char *v)
{
	return strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 ||
	    strcmp(v, "on") == 0 || strcmp(v, "1") == 0;
}

static bool
no(const char *v)
{
	return v[0] == '\0' || strcmp(v, "no") == 0 ||
	    strcmp(v, "false") == 0 || strcmp(v, "off") == 0 ||
	    strcmp(v, "0") == 0;
}

/* Adds "key=value" to u->why when the option asks for a namespace. */
static void
note(struct unit *u, const char *key, const char *v, bool asks)
{
	size_t n = strlen(u->why);

	if (asks)
		snprintf(u->why + n, sizeof(u->why) - n, "%s%s=%s",
		    n > 0 ? " " : "", key, v);
}

/* Reads path's [Service] options into u: 0, or -1 when it is unreadable. */
static int
unit_read(const char *path, struct unit *u)
{
	/* Each of these with any value (a list of paths, an image). */
	static const char *const lists[] = { "ReadWritePaths", "ReadOnlyPaths",
		"InaccessiblePaths", "ExecPaths", "NoExecPaths", "BindPaths",
		"BindReadOnlyPaths", "TemporaryFileSystem", "MountImages",
		"ExtensionImages", "ExtensionDirectories", "RootImage" };
	static const char *const bools[] = { "PrivateMounts", "PrivateIPC",
		"ProtectKernelModules", "ProtectKernelLogs" };
	char line[1024];
	bool service = false;
	FILE *f = fopen(path, "re");

	memset(u, 0, sizeof(*u));
	u->final = MS_SHARED;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *v, *k = line;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '[') {
			service = strcmp(line, "[Service]") == 0;
			continue;
		}
		if (!service || line[0] == '#' ||
		    (v = strchr(line, '=')) == NULL)
			continue;
		*v++ = '\0';
		for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
			note(u, k, v, strcmp(k, lists[i]) == 0 && v[0] != '\0');
		for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
			note(u, k, v, strcmp(k, bools[i]) == 0 && yes(v));
		if (strcmp(k, "ProtectSystem") == 0 && !no(v)) {
			snprintf(u->protect_system, sizeof(u->protect_system),
			    "%s", v);
			note(u, k, v, true);
		} else if (strcmp(k, "ProtectHome") == 0 && !no(v)) {
			snprintf(u->protect_home, sizeof(u->protect_home), "%s",
			    v);
			note(u, k, v, true);
		} else if (strcmp(k, "PrivateTmp") == 0)
			note(u, k, v, (u->private_tmp = yes(v)));
		else if (strcmp(k, "PrivateDevices") == 0)
			note(u, k, v, (u->private_devices = yes(v)));
		else if (strcmp(k, "ProtectKernelTunables") == 0)
			note(u, k, v, (u->tunables = yes(v)));
		else if (strcmp(k, "ProtectControlGroups") == 0)
			note(u, k, v, (u->cgroups = yes(v)));
		else if (strcmp(k, "ProtectProc") == 0)
			note(u, k, v, strcmp(v, "default") != 0);
		else if (strcmp(k, "ProcSubset") == 0)
			note(u, k, v, strcmp(v, "all") != 0);
		else if (strcmp(k, "MountFlags") == 0) {
			u->final = strcmp(v, "slave") == 0 ? MS_SLAVE
			    : strcmp(v, "private") == 0    ? MS_PRIVATE
							   : MS_SHARED;
			note(u, k, v, u->final != MS_SHARED);
		}
	}
	fclose(f);
	return 0;
}

static bool
under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/' || strcmp(dir, "/") == 0);
}

/* mountinfo's escapes (\040 and the like) undone in place. */
static void
unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r != '\0'; w++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' &&
		    r[2] != '\0' && r[3] != '\0') {
			*w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 +
			    (r[3] - '0'));
			r += 4;
		} else
			*w = *r++;
	}
	*w = '\0';
}

/* The flags a read-only bind remount of a mount with options opts keeps. */
static unsigned long
kept_flags(const char *opts)
{
	static const struct {
		const char *name;
		unsigned long flag;
	} names[] = { { "nosuid", MS_NOSUID }, { "nodev", MS_NODEV },
		{ "noexec", MS_NOEXEC }, { "noatime", MS_NOATIME },
		{ "nodiratime", MS_NODIRATIME }, { "relatime", MS_RELATIME } };
	unsigned long f = 0;
	char buf[256], *save, *o;

	snprintf(buf, sizeof(buf), "%s", opts);
	for (o = strtok_r(buf, ",", &save); o != NULL;
	     o = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(o, names[i].name) == 0)
				f |= names[i].flag;
	return f;
}

/*
 * Remounts read-only every mount at or under one of dirs (NULL-terminated)
 * except those at or under one of keep and those exactly at one of exact:
 * systemd's bind_remount_recursive().
 */
static void
remount_ro(const char *const *dirs, const char *const *keep,
    const char *const *exact)
{
	char line[8192];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (f == NULL)
		die("mountinfo");
	while (fgets(line, sizeof(line), f) != NULL) {
		char *field[6], *p = line, *save;
		bool in = false, out = false;
		size_t n = 0;

		for (char *t = strtok_r(p, " ", &save); t != NULL && n < 6;
		     t = strtok_r(NULL, " ", &save))
			field[n++] = t;
		if (n < 6)
			continue;
		unescape(field[4]);
		for (size_t i = 0; dirs[i] != NULL; i++)
			in |= under(field[4], dirs[i]);
		for (size_t i = 0; keep[i] != NULL; i++)
			out |= under(field[4], keep[i]);
		for (size_t i = 0; exact[i] != NULL; i++)
			out |= strcmp(field[4], exact[i]) == 0;
		if (!in || out)
			continue;
		if (mount(NULL, field[4], NULL,
			MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(field[5]),
			NULL) < 0 &&
		    errno != ENOENT && errno != EACCES)
			die("read-only %s", field[4]);
	}
	fclose(f);
}

/* path bound on itself (made a mount point), recursively. */
static int
bind_self(const char *path)
{
	return mount(path, path, NULL, MS_BIND | MS_REC, NULL);
}

/* PrivateTmp=: a fresh /tmp and /var/tmp; the test's root (standing for
 * /var/lib and /run, which PrivateTmp= leaves alone), the directory of the
 * program run (standing for /usr/bin: a clean clone built under /tmp, as
 * CI may make one) and the working directory bound again on it. */
static void
private_tmp(const char *program, const char *cwd)
{
	char keep[3][PATH_MAX], fdpath[64];
	int fd[3] = { -1, -1, -1 };
	const char *root = getenv("CORDON_IT_ROOT");
	char *slash;

	snprintf(keep[0], sizeof(keep[0]), "%s", root != NULL ? root : "");
	snprintf(keep[1], sizeof(keep[1]), "%s", program);
	if ((slash = strrchr(keep[1], '/')) != NULL)
		*slash = '\0';
	snprintf(keep[2], sizeof(keep[2]), "%s", cwd);
	for (size_t i = 0; i < 3; i++)
		if (keep[i][0] == '/' && under(keep[i], "/tmp") &&
		    (fd[i] = open(keep[i], O_PATH | O_DIRECTORY | O_CLOEXEC)) <
			0)
			die("open %s", keep[i]);
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") <
		0 ||
	    mount("tmpfs", "/var/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
		"mode=1777") < 0)
		die("private /tmp");
	for (size_t i = 0; i < 3; i++) {
		if (fd[i] < 0)
			continue;
		if (path_mkdir_p(keep[i], 0755) < 0)
			die("mkdir %s", keep[i]);
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd[i]);
		if (mount(fdpath, keep[i], NULL, MS_BIND | MS_REC, NULL) < 0)
			die("bind %s again", keep[i]);
		close(fd[i]);
	}
}

/* ProtectHome=: read-only, or hidden by an empty read-only tmpfs. */
static void
protect_home(const char *how)
{
	static const char *const dirs[] = { "/home", "/root", "/run/user" };
	struct stat sb;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (stat(dirs[i], &sb) < 0)
			continue;
		if (strcmp(how, "read-only") == 0) {
			const char *one[] = { dirs[i], NULL },
				   *none[] = { NULL };
			if (bind_self(dirs[i]) < 0)
				die("bind %s", dirs[i]);
			remount_ro(one, none, none);
		} else if (mount("tmpfs", dirs[i], "tmpfs",
			       MS_RDONLY | MS_NOSUID | MS_NODEV,
			       strcmp(how, "tmpfs") == 0 ? "mode=0755"
							 : "mode=0000") < 0)
			die("hide %s", dirs[i]);
	}
}

/* PrivateDevices=: a /dev of a few nodes of the host's, bound by
 * descriptor over a fresh tmpfs, as systemd's mount_private_dev(). */
static void
private_devices(void)
{
	static const char *const nodes[] = { "null", "zero", "full", "random",
		"urandom", "tty" };
	static const char *const dirs[] = { "pts", "shm" };
	int nfd[6], dfd[2];
	char src[64], dst[64];

	for (size_t i = 0; i < 6; i++) {
		snprintf(dst, sizeof(dst), "/dev/%s", nodes[i]);
		nfd[i] = open(dst, O_PATH | O_CLOEXEC);
	}
	for (size_t i = 0; i < 2; i++) {
		snprintf(dst, sizeof(dst), "/dev/%s", dirs[i]);
		dfd[i] = open(dst, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME,
		"mode=0755") < 0)
		die("private /dev");
	for (size_t i = 0; i < 6; i++) {
		if (nfd[i] < 0)
			continue;
		snprintf(dst, sizeof(dst), "/dev/%s", nodes[i]);
		snprintf(src, sizeof(src), "/proc/self/fd/%d", nfd[i]);
		int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0 || close(fd) < 0 ||
		    mount(src, dst, NULL, MS_BIND, NULL) < 0)
			die("bind %s", dst);
		close(nfd[i]);
	}
	for (size_t i = 0; i < 2; i++) {
		if (dfd[i] < 0)
			continue;
		snprintf(dst, sizeof(dst), "/dev/%s", dirs[i]);
		snprintf(src, sizeof(src), "/proc/self/fd/%d", dfd[i]);
		if (mkdir(dst, 0755) < 0 ||
		    mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			die("bind %s", dst);
		close(dfd[i]);
	}
	if (symlink("pts/ptmx", "/dev/ptmx") < 0 ||
	    symlink("/proc/self/fd", "/dev/fd") < 0 ||
	    symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "/dev/stdout") < 0 ||
	    symlink("/proc/self/fd/2", "/dev/stderr") < 0)
		die("/dev links");
}

/*
 * --as-unit UNIT DIRS PROGRAM ARGS...: runs PROGRAM in the mount namespace
 * systemd would give UNIT's service, DIRS (":"-separated, "." the current
 * directory) the service's own writable directories (StateDirectory= and
 * the like). Does not return.
 */
static void __attribute__((noreturn)) as_unit(char **argv)
{
	static char dirs[16][PATH_MAX], cwd[PATH_MAX];
	const char *rw[17] = { NULL }, *none[] = { NULL };
	struct unit u;
	char list[4096], *save;
	size_t n = 0;

	if (argv[0] == NULL || argv[1] == NULL || argv[2] == NULL)
		die("usage: --as-unit UNIT DIRS PROGRAM ARGS...");
	if (unit_read(argv[0], &u) < 0)
		die("%s", argv[0]);
	if (u.why[0] == '\0') {
		fprintf(stderr, "as-unit: %s: no mount namespace\n", argv[0]);
		execv(argv[2], argv + 2);
		die("exec %s", argv[2]);
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		die("getcwd");
	snprintf(list, sizeof(list), "%s", argv[1]);
	for (char *d = strtok_r(list, ":", &save); d != NULL && n < 16;
	     d = strtok_r(NULL, ":", &save)) {
		if (realpath(d, dirs[n]) == NULL)
			die("%s", d);
		rw[n] = dirs[n];
		n++;
	}
	fprintf(stderr,
	    "as-unit: %s: a mount namespace of its own (%s): MS_SLAVE|MS_REC, "
	    "then the unit's mounts, then %s|MS_REC\n",
	    argv[0], u.why,
	    u.final == MS_SHARED      ? "MS_SHARED"
		: u.final == MS_SLAVE ? "MS_SLAVE"
				      : "MS_PRIVATE");
	if (unshare(CLONE_NEWNS) < 0)
		die("unshare");
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
		die("MS_SLAVE /");
	if (u.private_tmp)
		private_tmp(argv[2], cwd);
	if (u.private_devices)
		private_devices();
	if (u.protect_home[0] != '\0')
		protect_home(u.protect_home);
	/* The service's own directories stay writable: mount points of
	 * their own, left out of the read-only passes. */
	for (size_t i = 0; i < n; i++)
		if (bind_self(rw[i]) < 0)
			die("bind %s", rw[i]);
	if (strcmp(u.protect_system, "strict") == 0) {
		const char *all[] = { "/", NULL };
		const char *keep[20] = { "/proc", "/sys", "/dev" };
		const char *tmp[] = { u.private_tmp ? "/tmp" : "/",
			u.private_tmp ? "/var/tmp" : "/", NULL };
		for (size_t i = 0; i < n; i++)
			keep[3 + i] = rw[i];
		remount_ro(all, keep, tmp);
	} else if (u.protect_system[0] != '\0') {
		const char *sys[] = { "/usr", "/boot", "/efi", NULL, NULL };
		if (strcmp(u.protect_system, "full") == 0)
			sys[3] = "/etc";
		for (size_t i = 0; sys[i] != NULL; i++)
			(void)bind_self(sys[i]);
		remount_ro(sys, rw, none);
	}
	if (u.tunables) {
		const char *k[] = { "/proc/sys", "/sys", NULL };
		if (bind_self("/proc/sys") < 0)
			die("bind /proc/sys");
		remount_ro(k, rw, none);
	}
	if (u.cgroups) {
		const char *k[] = { "/sys/fs/cgroup", NULL };
		remount_ro(k, rw, none);
	}
	if (mount(NULL, "/", NULL, u.final | MS_REC, NULL) < 0)
		die("remount / with MountFlags=");
	/* The working directory was taken before the mounts: taken again,
	 * as systemd's WorkingDirectory= is, in the namespace made. */
	if (chdir(cwd) < 0)
		die("chdir %s", cwd);
	execv(argv[2], argv + 2);
	die("exec %s", argv[2]);
}

static void
put_manifest(void)
{
	json_t *m = json_pack("{s:s, s:[s], s:{s:i, s:i, s:i}}", "name",
	    "units-job", "command", "/bin/true", "limits", "wall_seconds", 60,
	    "disk_mb", 16, "memory_mb", 512);

	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/units-job", st.admin, NULL, m));
}

static void
setup(void)
{
	static const char *wrap[] = { self, "--as-unit", HATCH_UNIT, ".",
		NULL };
	static const struct stack_options o = { .uid_base = 910000,
		.hatch_wrap = wrap };
	char path[400];

	signal(SIGPIPE, SIG_IGN);
	/* The host as systemd leaves it: a namespace of this test's (the
	 * machine's mounts untouched) whose mounts are all shared. */
	ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare: %s",
	    strerror(errno));
	ck_assert_msg(mount(NULL, "/", NULL, MS_SHARED | MS_REC, NULL) == 0,
	    "MS_SHARED /: %s", strerror(errno));
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	put_manifest();
}

static void
teardown(void)
{
	stack_stop(&st);
}

/* What the job does: a file written in its input, 32 MiB tried on /work
 * (its disk_mb is 16), how far that got, and the big file removed so that
 * the patch carries the small one alone. */
static const char job[] = "echo written-inside >repo/NEW.txt; "
			  "dd if=/dev/zero of=big bs=1M count=32 2>&1; "
			  "echo big=$(wc -c <big); rm -f big";

/*
 * Runs the job through `cordon run --json`, wrapped by --as-unit unit when
 * unit is not NULL (the launcher's own directories writable), and checks
 * what came back: the patch names the file with its text, and the write
 * stopped at the workspace's tmpfs, below 17 MiB.
 */
static void
run_and_check(const char *unit)
{
	static char out[1 << 20], err[1 << 16], patch[1 << 16];
	char input[400];
	char *argv[24];
	size_t argc = 0;
	int status;

	if (unit != NULL) {
		argv[argc++] = self;
		argv[argc++] = "--as-unit";
		argv[argc++] = (char *)unit;
		argv[argc++] = st.launcher_dir;
	}
	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	char *run[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "units-job",
		"--input", input, "--", "/bin/sh", "-c", (char *)job, NULL };
	for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++)
		argv[argc++] = run[i];
	status =
	    harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL && status == 0,
	    "cordon run (status %d) did not run the job: %.2000s\n%.4000s",
	    status, out, err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_ptr_nonnull(text);
	const char *big = strstr(text, "big=");
	ck_assert_msg(big != NULL, "%s", text);
	long bytes = strtol(big + 4, NULL, 10);
	ck_assert_msg(strstr(text, "No space left") != NULL &&
		bytes < 17L * 1024 * 1024,
	    "the disk limit (16 MiB) did not hold: %s", text);
	const char *pp = json_string_value(json_object_get(j, "patch"));
	ck_assert_msg(pp != NULL, "no patch: %.2000s", out);
	FILE *f = fopen(pp, "re");
	ck_assert_msg(f != NULL, "%s: %s", pp, strerror(errno));
	size_t n = fread(patch, 1, sizeof(patch) - 1, f);
	patch[n] = '\0';
	fclose(f);
	ck_assert_msg(strstr(patch, "repo/NEW.txt") != NULL &&
		strstr(patch, "+written-inside") != NULL,
	    "the patch does not carry what the job wrote: [%s] (verdict %s)",
	    patch, json_string_value(json_object_get(j, "verdict")) ?: "none");
	json_decref(j);
}

/* `cordon run` from a shell (the host's namespace), the hatch under its
 * unit's namespace options. */
START_TEST(a_job_run_from_the_host_gets_its_patch)
{
	run_and_check(NULL);
}
END_TEST

/* `cordon run` as cordon serve runs it under cordon-launcher.service:
 * in the launcher unit's namespace, the hatch under its own. */
START_TEST(a_job_run_by_the_launcher_unit_gets_its_patch)
{
	run_and_check(LAUNCHER_UNIT);
}
END_TEST

int
main(int argc, char **argv)
{
	Suite *s = suite_create("units");
	TCase *tc = tcase_create("units");

	if (argc > 1 && strcmp(argv[1], "--as-unit") == 0)
		as_unit(argv + 2);
	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_job_run_from_the_host_gets_its_patch);
	tcase_add_test(tc, a_job_run_by_the_launcher_unit_gets_its_patch);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
