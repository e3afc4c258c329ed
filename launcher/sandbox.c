/*
 * Building the sandbox, in the order that makes each step possible and
 * the next one safe:
 *
 *   parent                         child (pid 1 of a new pid namespace)
 *   clone(NEWPID|NEWNS|NEWNET|     setsid; only ctl and the job's stdout
 *     NEWIPC|NEWUTS|NEWCGROUP)     and stderr kept open (0-2 /dev/null);
 *                                  private mounts; lo up; listen on
 *                               ◄─ 127.0.0.1:3128, hand the socket over
 *                                  build the root on a tmpfs, pivot_root,
 *                                  fresh /proc, host information in it
 *                                  masked, root read-only
 *   write uid_map, gid_map      ◄─ unshare(NEWUSER), ask for the maps
 *   "go"                        ─► setresuid/gid to the job's, drop every
 *                                  capability, no_new_privs, rlimits,
 *                                  seccomp; fork the command (its fds
 *                                  exactly 0, 1, 2), reap
 *
 * Every failure in the child is one line written back on the control
 * socket, and the child exits: the parent reports it and kills what is
 * left. The child runs only async-signal-safe-ish code of its own: no
 * allocation after the root is built but what exec needs.
 */
#include "sandbox.h"

#include "cgroup.h"
#include "filter.h"
#include "path.h"
#include "truststore.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROOT "/tmp" /* where the new root is built, in our mount ns */
#define HOST_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct child_arg {
	const struct sandbox_spec *spec;
	int ctl; /* the child's end of the control socket */
	struct truststore java; /* read before the clone: none after */
};

/* --- the child ------------------------------------------------------------ */

/* Reports what failed on the control socket and exits. */
static void __attribute__((noreturn, format(printf, 2, 3)))
die(int ctl, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int n, saved = errno;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(msg) - 40)
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s",
		    strerror(saved));
	msg[0] = msg[0] == '\0' ? '?' : msg[0];
	(void)send(ctl, msg, strlen(msg), MSG_NOSIGNAL);
	_exit(126);
}

static void
write_file(int ctl, const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	size_t n = strlen(text);

	if (fd < 0 || write(fd, text, n) != (ssize_t)n)
		die(ctl, "write %s", path);
	close(fd);
}

static void
bind_ro(int ctl, const char *src, const char *dst, unsigned long extra)
{
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		die(ctl, "bind %s", src);
	if (mount(NULL, dst, NULL,
		MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | extra,
		NULL) < 0)
		die(ctl, "read-only %s", dst);
}

static void
lo_up(int ctl)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	strcpy(ifr.ifr_name, "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		die(ctl, "lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		die(ctl, "lo up");
	close(fd);
}

/* The socket the job's HTTP_PROXY points at, handed to the launcher. */
static void
proxy_socket(int ctl)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons(SANDBOX_PROXY_PORT),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char byte = 'L';
	struct iovec iov = { &byte, 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c = { 0 };
	struct msghdr msg = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = c.buf,
		.msg_controllen = sizeof(c.buf) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fd, 128) < 0)
		die(ctl, "listen on 127.0.0.1:%d", SANDBOX_PROXY_PORT);
	CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), &fd, sizeof(int));
	if (sendmsg(ctl, &msg, MSG_NOSIGNAL) != 1)
		die(ctl, "hand over the proxy socket");
	close(fd);
}

/* The trust bundle: the host's public roots (for passthrough rules) and
 * the job's CA (for terminated ones). */
static void
trust_bundle(int ctl, const char *path, const char *ca_pem)
{
	ssize_t n = 0;
	int in = open(HOST_BUNDLE, O_RDONLY | O_CLOEXEC);
	int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (out < 0)
		die(ctl, "write %s", path);
	/* In the kernel: 215 KB not copied through here and back. */
	while (in >= 0 && (n = sendfile(out, in, NULL, 1 << 20)) > 0)
		;
	if (n < 0)
		die(ctl, "write %s", path);
	if (in >= 0)
		close(in);
	if (ca_pem != NULL &&
	    (write(out, "\n", 1) != 1 ||
		write(out, ca_pem, strlen(ca_pem)) != (ssize_t)strlen(ca_pem)))
		die(ctl, "write %s", path);
	close(out);
}

static void
dev_node(int ctl, const char *name)
{
	char src[64], dst[64];

	snprintf(src, sizeof(src), "/dev/%s", name);
	snprintf(dst, sizeof(dst), ROOT "/dev/%s", name);
	write_file(ctl, dst, "", 0666);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		die(ctl, "bind %s", src);
}

static void
build_root(int ctl, const struct sandbox_spec *s, const int dirs_fd[3],
    const struct truststore *java)
{
	static const char *const links[][2] = { { "usr/bin", ROOT "/bin" },
		{ "usr/sbin", ROOT "/sbin" }, { "usr/lib", ROOT "/lib" },
		{ "usr/lib64", ROOT "/lib64" },
		{ "usr/lib32", ROOT "/lib32" } };
	static const char *const devs[] = { "null", "zero", "full", "random",
		"urandom" };
	static const char *const dirs[] = { "usr", "etc", "etc/ssl",
		"etc/ssl/certs", "etc/cordon", "proc", "dev", "tmp", "work",
		"run", ".oldroot" };
	char opts[4096], path[256];

	if (mount("cordon", ROOT, "tmpfs", MS_NOSUID | MS_NODEV,
		"mode=0755,size=16m") < 0)
		die(ctl, "tmpfs root");
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), ROOT "/%s", dirs[i]);
		if (mkdir(path, 0755) < 0)
			die(ctl, "mkdir %s", path);
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		char target[64];
		snprintf(target, sizeof(target), "/%s", links[i][0]);
		if (access(target, F_OK) == 0 &&
		    symlink(links[i][0], links[i][1]) < 0)
			die(ctl, "symlink %s", links[i][1]);
	}
	bind_ro(ctl, "/usr", ROOT "/usr", 0);

	write_file(ctl, ROOT "/etc/passwd",
	    "root:x:0:0:root:/:/usr/sbin/nologin\n"
	    "job:x:1000:1000:cordon job:" SANDBOX_HOME ":/bin/sh\n"
	    "nobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n",
	    0644);
	write_file(ctl, ROOT "/etc/group", "root:x:0:\njob:x:1000:\n", 0644);
	/* The host name too, as Debian writes it: programs look their own
	 * name up (git for its ident), and the resolver would log each as a
	 * refused name. */
	write_file(ctl, ROOT "/etc/hosts",
	    "127.0.0.1 localhost\n127.0.1.1 cordon\n::1 localhost\n", 0644);
	write_file(ctl, ROOT "/etc/hostname", "cordon\n", 0644);
	/* The job's own resolver (launcher/dns.c): it forwards nothing. */
	write_file(ctl, ROOT "/etc/resolv.conf", "nameserver 127.0.0.53\n",
	    0644);
	write_file(ctl, ROOT "/etc/nsswitch.conf",
	    "passwd: files\ngroup: files\nhosts: files dns\n", 0644);
	trust_bundle(ctl, ROOT "/etc/ssl/certs/ca-certificates.crt", s->ca_pem);
	if ((errno = -truststore_install(java, "/etc", ROOT, path,
		 sizeof(path))) != 0)
		die(ctl, "the JVM's /etc: %s", path);
	/* Where a job that goes looking for credentials will look: what it
	 * finds are canaries, and using one revokes the job. */
	if (s->canaries_text != NULL)
		write_file(ctl, ROOT "/etc/cordon/credentials",
		    s->canaries_text, 0644);

	if (mount("dev", ROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
		"mode=0755,size=64k,nr_inodes=64") < 0)
		die(ctl, "tmpfs /dev");
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		dev_node(ctl, devs[i]);
	if (mkdir(ROOT "/dev/shm", 01777) < 0 ||
	    symlink("/proc/self/fd", ROOT "/dev/fd") < 0)
		die(ctl, "/dev");
	if (mount("tmp", ROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
		"mode=1777,size=64m,nr_inodes=16384") < 0)
		die(ctl, "tmpfs /tmp");
	if (mkdir(ROOT SANDBOX_HOME, 0700) < 0 ||
	    chown(ROOT SANDBOX_HOME, s->uid, s->gid) < 0)
		die(ctl, "HOME");
	if (mount("run", ROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		"mode=0755,size=1m") < 0 ||
	    mkdir(ROOT "/run/cordon", 0755) < 0)
		die(ctl, "tmpfs /run");
	if (s->tokens_json != NULL) {
		write_file(ctl, ROOT "/run/cordon/tokens.json", s->tokens_json,
		    0400);
		if (chown(ROOT "/run/cordon/tokens.json", s->uid, s->gid) < 0)
			die(ctl, "chown tokens.json");
	}
	/* The hatch's directories: what the job writes lands in upper and
	 * comes back as a patch. No redirects, no metacopy, no index: the
	 * seal reads upper alone. */
	if (snprintf(opts, sizeof(opts),
		"lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,"
		"workdir=/proc/self/fd/%d,redirect_dir=off,metacopy=off,"
		"index=off",
		dirs_fd[0], dirs_fd[1], dirs_fd[2]) >= (int)sizeof(opts))
		die(ctl, "overlay options too long");
	if (mount("overlay", ROOT "/work", "overlay", MS_NOSUID | MS_NODEV,
		opts) < 0)
		die(ctl, "overlay /work");
}

/* Host information in the fresh /proc, as Docker's default hides it:
 * files masked by /dev/null, directories by an empty read-only tmpfs; and
 * the paths that write to the kernel, read-only. Absent ones are skipped.
 * /sys is not mounted at all. */
static void
mask_proc(int ctl)
{
	static const char *const masked[] = { "/proc/asound", "/proc/acpi",
		"/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/proc/cmdline", "/proc/config.gz" };
	static const char *const read_only[] = { "/proc/bus", "/proc/fs",
		"/proc/irq", "/proc/sys", "/proc/sysrq-trigger" };
	struct stat st;

	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		if (lstat(masked[i], &st) < 0) {
			if (errno == ENOENT)
				continue;
			die(ctl, "stat %s", masked[i]);
		}
		if (S_ISDIR(st.st_mode)) {
			if (mount("masked", masked[i], "tmpfs",
				MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				"mode=0555,size=4k") < 0)
				die(ctl, "mask %s", masked[i]);
		} else if (mount("/dev/null", masked[i], NULL, MS_BIND, NULL) <
			0 ||
		    mount(NULL, masked[i], NULL,
			MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
			    MS_NOEXEC,
			NULL) < 0)
			die(ctl, "mask %s", masked[i]);
	}
	for (size_t i = 0; i < sizeof(read_only) / sizeof(read_only[0]); i++) {
		if (lstat(read_only[i], &st) < 0) {
			if (errno == ENOENT)
				continue;
			die(ctl, "stat %s", read_only[i]);
		}
		bind_ro(ctl, read_only[i], read_only[i], MS_NOEXEC);
	}
}

static void
enter_root(int ctl)
{
	if (chdir(ROOT) < 0 || syscall(SYS_pivot_root, ".", ".oldroot") < 0)
		die(ctl, "pivot_root");
	if (chdir("/") < 0 || umount2("/.oldroot", MNT_DETACH) < 0 ||
	    rmdir("/.oldroot") < 0)
		die(ctl, "leave the old root");
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		"hidepid=2") < 0)
		die(ctl, "mount /proc");
	mask_proc(ctl);
	if (mount(NULL, "/", NULL,
		MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		die(ctl, "read-only root");
	if (sethostname("cordon", 6) < 0)
		die(ctl, "hostname");
}

/* Becomes the job's uid in a user namespace of its own, with nothing. */
static void
become_job(int ctl, const struct sandbox_spec *s)
{
	char go;

	if (unshare(CLONE_NEWUSER) < 0)
		die(ctl, "user namespace");
	if (send(ctl, "M", 1, MSG_NOSIGNAL) != 1 || read(ctl, &go, 1) != 1 ||
	    go != 'G')
		die(ctl, "uid map");
	if (setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 ||
	    setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
		die(ctl, "become the job's uid");
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		(void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	if (syscall(SYS_capset, &h, d) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		die(ctl, "drop capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(ctl, "no_new_privs");
	/* The change of uid cleared the parent-death signal: armed again,
	 * or a launcher killed from here on would leave its job running.
	 * One that died before holds its end of ctl no more. */
	struct pollfd p = { .fd = ctl, .events = POLLIN };
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		die(ctl, "parent-death signal");
	if (poll(&p, 1, 0) != 0)
		_exit(126);
	(void)s;
}

static void
limits(int ctl, const struct sandbox_spec *s)
{
	struct rlimit core = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &core) < 0)
		die(ctl, "rlimit core");
	if (s->memory_mb > 0 && s->cgroup_dir == NULL) {
		rlim_t b = (rlim_t)s->memory_mb * 1024 * 1024;
		struct rlimit as = { b, b };
		if (setrlimit(RLIMIT_AS, &as) < 0)
			die(ctl, "rlimit memory");
	}
	if (s->pids > 0 && s->cgroup_dir == NULL) {
		/* Counted per real uid: the job's own, so per job. */
		struct rlimit np = { (rlim_t)s->pids, (rlim_t)s->pids };
		if (setrlimit(RLIMIT_NPROC, &np) < 0)
			die(ctl, "rlimit pids");
	}
}

/* The command starts as any program expects, whatever its caller left:
 * every signal at its default (exec keeps an ignored one: nohup's SIGHUP,
 * serve's SIGPIPE) and none blocked (exec keeps the mask too). */
static void
default_signals(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &dfl, NULL); /* KILL, STOP: EINVAL */
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Closes every descriptor from lo up but the ones in keep (at most 3,
 * each >= lo): 0 or -errno. */
static int
close_all_but(int lo, const int *keep, size_t n)
{
	int k[3];

	if (n > 3)
		return -EINVAL;
	if (n > 0)
		memcpy(k, keep, n * sizeof(int));
	for (size_t i = 1; i < n; i++) /* sorted, three at most */
		for (size_t j = i; j > 0 && k[j - 1] > k[j]; j--) {
			int t = k[j];
			k[j] = k[j - 1];
			k[j - 1] = t;
		}
	for (size_t i = 0; i <= n; i++) {
		unsigned int hi = i < n ? (unsigned int)k[i] - 1 : ~0U;
		if (i < n && k[i] < lo)
			return -EINVAL;
		if ((unsigned int)lo <= hi &&
		    syscall(SYS_close_range, (unsigned int)lo, hi, 0) < 0)
			return -errno;
		if (i < n)
			lo = k[i] + 1;
	}
	return 0;
}

/*
 * PID 1 holds a copy of every descriptor the launcher had, its own and any
 * its parent left without O_CLOEXEC (a directory, a terminal): it keeps
 * the control socket and the job's stdout and stderr (moved above 2 if
 * need be), puts /dev/null on 0, 1 and 2, and closes everything else.
 */
static void
only_our_fds(int *ctl, int *out, int *err)
{
	int *fds[3] = { ctl, out, err };
	int null;

	for (int i = 0; i < 3; i++)
		if (*fds[i] <= 2) {
			int moved = fcntl(*fds[i], F_DUPFD_CLOEXEC, 3);
			if (moved < 0)
				_exit(126); /* not even ctl to say why */
			*fds[i] = moved;
		}
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(null, 2) < 0)
		die(*ctl, "/dev/null");
	int keep[3] = { *ctl, *out, *err };
	errno = -close_all_but(3, keep, *out == *err ? 2 : 3);
	if (errno != 0)
		die(*ctl, "close the launcher's descriptors");
}

static int
child_main(void *arg)
{
	const struct child_arg *a = arg;
	const struct sandbox_spec *s = a->spec;
	int ctl = a->ctl, out = s->out_fd, err = s->err_fd, st;
	pid_t job;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(126);
	/* A session and a process group of the sandbox's own, with no
	 * controlling terminal: kill(0, ...) from the job, the terminal's
	 * signals and a job control SIGCONT stay inside. */
	if (setsid() < 0)
		die(ctl, "setsid");
	only_our_fds(&ctl, &out, &err);
	/* PID 1 is a copy of the launcher: nothing of the launcher's
	 * environment or key stays in it, not even in /proc/1/environ. */
	for (char **e = environ; e != NULL && *e != NULL; e++)
		explicit_bzero(*e, strlen(*e));
	clearenv();
	if (s->secret != NULL)
		explicit_bzero(s->secret, s->secret_len);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die(ctl, "private mounts");
	lo_up(ctl);
	proxy_socket(ctl);
	/* Held open before the new root covers where they are (the hatch's
	 * directories may live under /tmp); named by descriptor, no path of
	 * theirs needs escaping in the mount options. */
	int dirs_fd[3];
	const char *dirs[3] = { s->lower, s->upper, s->work };
	for (int i = 0; i < 3; i++) {
		dirs_fd[i] = open(dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirs_fd[i] < 0)
			die(ctl, "open %s", dirs[i]);
	}
	build_root(ctl, s, dirs_fd, &a->java);
	for (int i = 0; i < 3; i++)
		close(dirs_fd[i]);
	enter_root(ctl);
	become_job(ctl, s);
	if (chdir("/work") < 0)
		die(ctl, "chdir /work");
	if (filter_apply() < 0)
		die(ctl, "seccomp");
	job = fork();
	if (job < 0)
		die(ctl, "fork");
	if (job == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(err, 2) < 0)
			die(ctl, "stdio");
		/* The limits bind the command alone: the init stays able to
		 * reap and report whatever the command does. */
		limits(ctl, s);
		default_signals();
		/* The command holds 0, 1 and 2, nothing else. */
		if (close_all_but(3, NULL, 0) < 0) {
			dprintf(2, "cordon: cannot close descriptors\n");
			_exit(126);
		}
		execve(s->argv[0], s->argv, s->envp);
		dprintf(2, "cordon: cannot run %s: %s\n", s->argv[0],
		    strerror(errno));
		_exit(127);
	}
	/* Told, the launcher stops waiting; then pid 1 reaps until the
	 * command ends, and its end is the sandbox's. */
	(void)send(ctl, "R", 1, MSG_NOSIGNAL);
	close(ctl);
	close(out);
	if (err != out)
		close(err);
	for (;;) {
		pid_t r = wait(&st);
		if (r == job)
			break;
		if (r < 0 && errno != EINTR)
			_exit(126);
	}
	kill(-1, SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* --- the parent ----------------------------------------------------------- */

static int
recv_fd(int ctl, int *ret_fd, char *err, size_t errlen)
{
	char buf[256];
	struct iovec iov = { buf, sizeof(buf) - 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct msghdr msg = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = c.buf,
		.msg_controllen = sizeof(c.buf) };
	ssize_t n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
	struct cmsghdr *h = CMSG_FIRSTHDR(&msg);

	if (n == 1 && buf[0] == 'L' && h != NULL &&
	    h->cmsg_type == SCM_RIGHTS) {
		memcpy(ret_fd, CMSG_DATA(h), sizeof(int));
		return 0;
	}
	buf[n > 0 ? n : 0] = '\0';
	snprintf(err, errlen, "%s", n > 0 ? buf : "the sandbox died");
	return -EIO;
}

int
sandbox_spawn(const struct sandbox_spec *spec, struct sandbox *ret, char *err,
    size_t errlen)
{
	int sv[2], r;
	char map[64], buf[256], proc[32];
	struct child_arg a = { .spec = spec };
	ssize_t n;

	memset(ret, 0, sizeof(*ret));
	ret->pid = -1;
	if ((r = filter_prepare()) < 0) {
		snprintf(err, errlen, "seccomp filter: %s", strerror(-r));
		return r;
	}
	ret->proxy_fd = -1;
	ret->limits.memory = spec->memory_mb <= 0 ? "none"
	    : spec->cgroup_dir != NULL ? cgroup_kind(spec->cgroup_dir)
				       : "rlimit_as";
	ret->limits.pids = spec->pids <= 0 ? "none"
	    : spec->cgroup_dir != NULL     ? cgroup_kind(spec->cgroup_dir)
					   : "rlimit_nproc";
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -errno;
	}
	a.ctl = sv[1];
	if ((r = truststore_prepare(&a.java, "/etc", spec->ca_pem, buf,
		 sizeof(buf))) < 0) {
		snprintf(err, errlen, "%s", buf);
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	/* clone as fork does, on a copy of this stack: the child is pid 1
	 * of its namespace and runs child_main to its end. */
	ret->pid = (pid_t)syscall(SYS_clone,
	    CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
		CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD,
	    NULL, NULL, NULL, 0);
	if (ret->pid == 0)
		_exit(child_main(&a));
	r = -errno;
	truststore_release(&a.java); /* the child has its copy */
	close(sv[1]);
	if (ret->pid < 0) {
		close(sv[0]);
		snprintf(err, errlen, "clone: %s", strerror(-r));
		return r;
	}
	r = recv_fd(sv[0], &ret->proxy_fd, err, errlen);
	if (r < 0)
		goto fail;
	n = read(sv[0], buf, sizeof(buf) - 1);
	if (n != 1 || buf[0] != 'M') {
		buf[n > 0 ? n : 0] = '\0';
		snprintf(err, errlen, "%s", n > 0 ? buf : "the sandbox died");
		r = -EIO;
		goto fail;
	}
	if (spec->in_netns != NULL &&
	    (r = spec->in_netns(ret->pid, spec->netns_arg)) < 0) {
		snprintf(err, errlen, "the job's network: %s", strerror(-r));
		goto fail;
	}
	snprintf(proc, sizeof(proc), "/proc/%d", (int)ret->pid);
	snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_UID, spec->uid);
	if ((r = path_write_text(proc, "uid_map", map)) < 0 ||
	    (r = path_write_text(proc, "setgroups", "deny")) < 0) {
		snprintf(err, errlen, "uid_map: %s", strerror(-r));
		goto fail;
	}
	snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_UID, spec->gid);
	if ((r = path_write_text(proc, "gid_map", map)) < 0) {
		snprintf(err, errlen, "gid_map: %s", strerror(-r));
		goto fail;
	}
	/* Into the job's cgroup before the command is forked: everything
	 * it starts is counted there. */
	if (spec->cgroup_dir != NULL &&
	    (r = cgroup_add(spec->cgroup_dir, ret->pid)) < 0) {
		snprintf(err, errlen, "cgroup: %s", strerror(-r));
		goto fail;
	}
	if (spec->before_go != NULL &&
	    (r = spec->before_go(spec->go_arg)) < 0) {
		snprintf(err, errlen, "before the job could start: %s",
		    strerror(-r));
		goto fail;
	}
	ret->go_given = true;
	if (write(sv[0], "G", 1) != 1) {
		snprintf(err, errlen, "the sandbox died");
		r = -EIO;
		goto fail;
	}
	n = read(sv[0], buf, sizeof(buf) - 1);
	if (n != 1 || buf[0] != 'R') {
		buf[n > 0 ? n : 0] = '\0';
		snprintf(err, errlen, "%s", n > 0 ? buf : "the sandbox died");
		r = -EIO;
		goto fail;
	}
	close(sv[0]);
	return 0;
fail:
	close(sv[0]);
	sandbox_kill(ret);
	(void)sandbox_wait(ret, false);
	if (ret->proxy_fd >= 0)
		close(ret->proxy_fd);
	ret->proxy_fd = -1;
	return r;
}

void
sandbox_kill(struct sandbox *sb)
{
	if (sb->pid > 0)
		(void)kill(sb->pid, SIGKILL);
}

int
sandbox_wait(struct sandbox *sb, bool nohang)
{
	int st;
	pid_t r;

	if (sb->pid <= 0)
		return -ECHILD;
	do
		r = waitpid(sb->pid, &st, nohang ? WNOHANG : 0);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -EAGAIN;
	if (r < 0)
		return -errno;
	sb->pid = -1;
	return st;
}

static uid_t own_uid;
static gid_t own_gid;

static int
own_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return lchown(path, own_uid, own_gid) < 0 ? -1 : 0;
}

int
sandbox_own_tree(const char *lower, const char *upper, const char *work,
    uid_t uid, gid_t gid)
{
	own_uid = uid;
	own_gid = gid;
	if (nftw(lower, own_one, 32, FTW_PHYS) != 0 ||
	    chown(upper, uid, gid) < 0 || chown(work, uid, gid) < 0)
		return -errno;
	return 0;
}

int
sandbox_workspace_check(const char *path, const char *id)
{
	unsigned long long dev, ino;
	struct stat sb;
	char *end;

	if (id == NULL || path == NULL)
		return -EINVAL;
	errno = 0;
	dev = strtoull(id, &end, 10);
	if (errno != 0 || end == id || *end != ':' || id[0] == '-')
		return -EINVAL;
	const char *rest = end + 1;
	ino = strtoull(rest, &end, 10);
	if (errno != 0 || end == rest || *end != '\0' || rest[0] == '-')
		return -EINVAL;
	if (lstat(path, &sb) < 0)
		return -errno;
	if (!S_ISDIR(sb.st_mode) || (unsigned long long)sb.st_dev != dev ||
	    (unsigned long long)sb.st_ino != ino)
		return -ESTALE;
	return 0;
}
