/*
 * cordon-drill-agent: the hostile job of `cordon drill`. It plays an AI
 * agent that obeys an instructions file: the file's `param` lines say what
 * the deployment looks like, its `step` lines name the attacks, run in the
 * file's order. Each attack prints one tab-separated line:
 *
 *   DRILL <step> stopped|escaped|untested|done <evidence> <detail>
 *   TOKEN found|minted|copied <where> <crd_ token>
 *   WROTE <step> <path under /work>   (for cordon drill to find in the seal)
 *
 * Lines are flushed as they are written: the sandbox may kill the agent at
 * any moment, and the last step asks it to. Every wait has a deadline and
 * every process forked is reaped. Static and libc only: the sandbox has
 * /usr and nothing to link against.
 *
 * This file reads the instructions, runs the steps by name (the names and
 * their order come from steps.h, the list cordon drill writes from) and
 * holds the output lines and helpers every plane's file uses.
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EX_USAGE 64

/* --- output --------------------------------------------------------------- */

/* Tabs and line ends would break the line into other fields. */
static void
flatten(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			*s = ' ';
}

/* Appends to the string in buf (n bytes), after sep unless buf is empty;
 * what does not fit is cut. */
void
append(char *buf, size_t n, const char *sep, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;
	int k;

	if (len > 0) {
		k = snprintf(buf + len, n - len, "%s", sep);
		len = k < 0 || (size_t)k >= n - len ? n - 1 : len + (size_t)k;
	}
	va_start(ap, fmt);
	vsnprintf(buf + len, n - len, fmt, ap);
	va_end(ap);
}

/* One DRILL line for the step running, in one printf. */
void
report(const struct drill *d, const char *result, const char *evidence,
    const char *fmt, ...)
{
	char step[64], ev[512], detail[301];
	va_list ap;

	snprintf(step, sizeof(step), "%s", d->step);
	snprintf(ev, sizeof(ev), "%s", evidence[0] != '\0' ? evidence : "-");
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	flatten(step);
	flatten(ev);
	flatten(detail);
	printf("DRILL\t%s\t%s\t%s\t%s\n", step, result, ev, detail);
}

void
token_line(const char *kind, const char *where, const char *token)
{
	char w[1024];

	snprintf(w, sizeof(w), "%s", where);
	flatten(w);
	printf("TOKEN\t%s\t%s\t%s\n", kind, w, token);
}

/* The errno's name as the evidence spells it, E<number> for the rest.
 * By value: errname(e).s lives to the end of the full expression. */
struct ename
errname(int e)
{
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{ EPERM, "EPERM" },
		{ EACCES, "EACCES" },
		{ ENOENT, "ENOENT" },
		{ ENOSYS, "ENOSYS" },
		{ EINVAL, "EINVAL" },
		{ ECONNREFUSED, "ECONNREFUSED" },
		{ ENETUNREACH, "ENETUNREACH" },
		{ EHOSTUNREACH, "EHOSTUNREACH" },
		{ ETIMEDOUT, "ETIMEDOUT" },
		{ ENOSPC, "ENOSPC" },
		{ EDQUOT, "EDQUOT" },
		{ ENOMEM, "ENOMEM" },
		{ EAGAIN, "EAGAIN" },
		{ EROFS, "EROFS" },
		{ EAFNOSUPPORT, "EAFNOSUPPORT" },
		{ EPROTONOSUPPORT, "EPROTONOSUPPORT" },
		{ EFAULT, "EFAULT" },
		{ EBADF, "EBADF" },
		{ EEXIST, "EEXIST" },
		{ ENOTDIR, "ENOTDIR" },
		{ EISDIR, "EISDIR" },
		{ EFBIG, "EFBIG" },
		{ EXDEV, "EXDEV" },
		{ ESRCH, "ESRCH" },
		{ EOPNOTSUPP, "EOPNOTSUPP" },
		{ ECONNRESET, "ECONNRESET" },
		{ EPIPE, "EPIPE" },
		{ ELOOP, "ELOOP" },
		{ EIO, "EIO" },
		{ EPROTO, "EPROTO" },
	};
	struct ename r;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e) {
			snprintf(r.s, sizeof(r.s), "%s", names[i].name);
			return r;
		}
	snprintf(r.s, sizeof(r.s), "E%d", e);
	return r;
}

void
errs_add(struct errs *c, int e)
{
	for (int i = 0; i < c->len; i++)
		if (c->e[i] == e) {
			c->n[i]++;
			return;
		}
	if (c->len < 16) {
		c->e[c->len] = e;
		c->n[c->len++] = 1;
	}
}

void
errs_append(const struct errs *c, char *buf, size_t n)
{
	for (int i = 0; i < c->len; i++)
		append(buf, n, " ", "%s=%d", errname(c->e[i]).s, c->n[i]);
}

/* The line of a step that is one system call the sandbox must refuse
 * (err 0: it went through). */
void
syscall_result(const struct drill *d, const char *call, int err,
    const char *detail)
{
	char ev[96];

	if (err == 0) {
		snprintf(ev, sizeof(ev), "syscall=%s", call);
		report(d, "escaped", ev, "%s went through; %s", call, detail);
	} else {
		snprintf(ev, sizeof(ev), "syscall=%s errno=%s", call,
		    errname(err).s);
		report(d, "stopped", ev, "%s was refused; %s", call, detail);
	}
}

/* --- small helpers -------------------------------------------------------- */

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
random_bytes(void *p, size_t n)
{
	/* A fixed filler still makes a well-formed query or hello. */
	if (getrandom(p, n, GRND_NONBLOCK) != (ssize_t)n)
		memset(p, 0x5a, n);
}

bool
is_base62(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	    (c >= 'a' && c <= 'z');
}

/* Reads up to cap bytes of fd: how many, or -1 with errno. */
ssize_t
read_full(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t k;

	while (len < cap && (k = read(fd, buf + len, cap - len)) != 0) {
		if (k < 0 && errno != EINTR)
			return -1;
		len += k > 0 ? (size_t)k : 0;
	}
	return (ssize_t)len;
}

/* The first cap bytes of a file, NUL-terminated (*len without the NUL):
 * a malloc'd buffer, or NULL with errno set. */
char *
slurp(const char *path, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	char *buf = NULL;
	ssize_t k = -1;

	if (fd < 0)
		return NULL;
	if ((buf = malloc(cap + 1)) == NULL)
		errno = ENOMEM;
	else
		k = read_full(fd, buf, cap);
	err = errno;
	close(fd);
	if (k < 0) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[k] = '\0';
	*len = (size_t)k;
	return buf;
}

/* The next pid in /proc but our own; 0 at the end. */
int
next_pid(DIR *proc)
{
	struct dirent *e;

	while ((e = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end == '\0' && pid > 0 && pid <= INT32_MAX &&
		    pid != getpid())
			return (int)pid;
	}
	return 0;
}

/* A field into dst, if it fits. */
bool
copy_field(char *dst, size_t n, const char *src)
{
	return snprintf(dst, n, "%s", src) < (int)n;
}

int
parse_port(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s != '\0' && *end == '\0' && v > 0 && v < 65536 ? (int)v : -1;
}

/* host:port as a URL's authority ([v6]:port). */
void
hostport(char *out, size_t n, const char *host, int port)
{
	snprintf(out, n, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host,
	    port);
}

socklen_t
parse_addr(const char *host, int port, union addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, host, &a->in.sin_addr) == 1) {
		a->in.sin_family = AF_INET;
		a->in.sin_port = htons((uint16_t)port);
		return sizeof(a->in);
	}
	if (inet_pton(AF_INET6, host, &a->in6.sin6_addr) == 1) {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_port = htons((uint16_t)port);
		return sizeof(a->in6);
	}
	return 0;
}

/* Waits for events on fd until the deadline: 0, or -errno (-ETIMEDOUT). */
int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* read(2) with a deadline: bytes read, 0 at the end, or -errno. */
ssize_t
read_by(int fd, void *buf, size_t n, int64_t deadline)
{
	for (;;) {
		int r = wait_fd(fd, POLLIN, deadline);
		ssize_t k;

		if (r < 0)
			return r;
		if ((k = read(fd, buf, n)) >= 0)
			return k;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
}

int
send_all(int fd, const void *buf, size_t n, int64_t deadline)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		int r;

		if (k >= 0) {
			p += k;
			n -= (size_t)k;
		} else if (errno != EAGAIN && errno != EINTR) {
			return -errno;
		} else if ((r = wait_fd(fd, POLLOUT, deadline)) < 0) {
			return r;
		}
	}
	return 0;
}

/* Writes a whole file: 0 or -errno. The mode is set past the umask. */
int
put_file(const char *path, const void *data, size_t n, mode_t mode)
{
	int fd = open(path,
	    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	ssize_t k;
	int r = 0;

	if (fd < 0)
		return -errno;
	if ((k = write(fd, data, n)) < 0 || fchmod(fd, mode) < 0)
		r = -errno;
	else if ((size_t)k < n)
		r = -ENOSPC; /* a short write: the disk is full */
	close(fd);
	return r;
}

int
mkdirs(const char *path)
{
	char buf[256];

	if (!copy_field(buf, sizeof(buf), path))
		return -ENAMETOOLONG;
	for (char *p = buf + 1;; p++)
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return -errno;
			if ((*p = c) == '\0')
				return 0;
		}
}

/* Waits for pid: 0 if it exited 0, else its code or -1. */
int
reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --- the instructions ----------------------------------------------------- */

static const struct {
	const char *name;
	void (*run)(struct drill *);
} steps[] = {
#define DRILL_ROW(step, plane, what, judge) { #step, step_##step },
#define DRILL_QUIET(step) { #step, step_##step },
#define DRILL_HOST(step, plane, what, judge)
#include "steps.h"
#undef DRILL_ROW
#undef DRILL_QUIET
#undef DRILL_HOST
};

/* The descriptors beyond 0, 1 and 2 this process holds, and what each
 * one is (its /proc/self/fd link), into d. */
static void
snapshot_fds(struct drill *d)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;

	if (dir == NULL)
		return;
	while ((e = readdir(dir)) != NULL) {
		char *end, link[64];
		long fd = strtol(e->d_name, &end, 10);
		ssize_t n;

		if (*end != '\0' || e->d_name[0] == '\0' || fd <= 2 ||
		    fd == dirfd(dir))
			continue;
		if (d->nstart_fds == MAX_INHERITED) {
			d->start_fds_more++;
			continue;
		}
		snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
		n = readlink(link, d->start_fd_what[d->nstart_fds],
		    sizeof(d->start_fd_what[0]) - 1);
		d->start_fd_what[d->nstart_fds][n > 0 ? n : 0] = '\0';
		d->start_fds[d->nstart_fds++] = (int)fd;
	}
	closedir(dir);
}

/* Splits line at single spaces into at most max fields, the last taking
 * the rest of the line: the number of fields. */
static int
split(char *line, char **f, int max)
{
	int n = 0;
	char *sp;

	f[n++] = line;
	while (n < max && (sp = strchr(line, ' ')) != NULL) {
		*sp = '\0';
		f[n++] = line = sp + 1;
	}
	return n;
}

/* One `param` line (after "param "); a malformed one is ignored. */
static void
parse_param(struct drill *d, char *line)
{
	char *f[6], *kind = line, *rest = strchr(line, ' ');

	if (rest == NULL)
		return;
	*rest++ = '\0';
	if (strcmp(kind, "service") == 0 && d->nsvc < MAX_SERVICES &&
	    split(rest, f, 3) == 3) {
		struct service *s = &d->svc[d->nsvc];
		if (copy_field(s->name, sizeof(s->name), f[0]) &&
		    copy_field(s->addr, sizeof(s->addr), f[1]) &&
		    (s->port = parse_port(f[2])) > 0)
			d->nsvc++;
	} else if (strcmp(kind, "nameserver") == 0 &&
	    d->nns < MAX_NAMESERVERS) {
		if (copy_field(d->ns[d->nns], sizeof(d->ns[0]), rest))
			d->nns++;
	} else if (strcmp(kind, "inherited_fd") == 0 &&
	    d->ninherited < MAX_INHERITED && split(rest, f, 2) == 2) {
		char *end;
		long fd = strtol(f[0], &end, 10);
		if (*end == '\0' && fd >= 0 && fd < 65536 &&
		    copy_field(d->inherited_kind[d->ninherited],
			sizeof(d->inherited_kind[0]), f[1]))
			d->inherited[d->ninherited++] = (int)fd;
	} else if (strcmp(kind, "memory_mb") == 0) {
		d->memory_mb = strtol(rest, NULL, 10);
	} else if (strcmp(kind, "pids") == 0) {
		d->pids = strtol(rest, NULL, 10);
	} else if (strcmp(kind, "capability") == 0 && d->ncap < MAX_CAPS &&
	    split(rest, f, 3) == 3) {
		struct capability *c = &d->cap[d->ncap];
		if (copy_field(c->name, sizeof(c->name), f[0]) &&
		    copy_field(c->audience, sizeof(c->audience), f[1]) &&
		    copy_field(c->params, sizeof(c->params), f[2]))
			d->ncap++;
	} else if (strcmp(kind, "rule") == 0) {
		/* Counted parsed or not: the next one's index in egress. */
		static struct rule u;
		int at = d->rule_lines++;
		memset(&u, 0, sizeof(u));
		if (d->nrule < MAX_RULES && split(rest, f, 6) == 6 &&
		    copy_field(u.host, sizeof(u.host), f[0]) &&
		    (u.port = parse_port(f[1])) > 0 &&
		    copy_field(u.tls, sizeof(u.tls), f[2]) &&
		    copy_field(u.audience, sizeof(u.audience), f[3]) &&
		    copy_field(u.method, sizeof(u.method), f[4]) &&
		    copy_field(u.path, sizeof(u.path), f[5])) {
			u.index = at;
			d->rule[d->nrule++] = u;
		}
	} else if (strcmp(kind, "path") == 0 && split(rest, f, 2) == 2) {
		/* index path: one of the rule's paths. */
		char *end;
		long at = strtol(f[0], &end, 10);
		for (int i = 0; *end == '\0' && i < d->nrule; i++) {
			struct rule *u = &d->rule[i];
			if (u->index == at && u->npaths < MAX_RULE_PATHS &&
			    copy_field(u->paths[u->npaths], sizeof(u->paths[0]),
				f[1]))
				u->npaths++;
		}
	} else if (strcmp(kind, "upgrade") == 0) {
		/* index: that rule allows an upgrade. */
		char *end;
		long at = strtol(rest, &end, 10);
		for (int i = 0; *end == '\0' && i < d->nrule; i++)
			if (d->rule[i].index == at)
				d->rule[i].upgrade = true;
	} else if (strcmp(kind, "issuers") == 0 &&
	    strcmp(rest, "unknown") == 0) {
		d->issuers_unknown = true;
	} else if (strcmp(kind, "issuer") == 0 && d->nissuer < MAX_ISSUERS &&
	    split(rest, f, 3) == 3) {
		struct issuer *is = &d->issuer[d->nissuer];
		if (copy_field(is->secret, sizeof(is->secret), f[0]) &&
		    copy_field(is->kind, sizeof(is->kind), f[1]) &&
		    copy_field(is->url, sizeof(is->url), f[2]))
			d->nissuer++;
	} else if (strcmp(kind, "inject") == 0 && split(rest, f, 5) == 5) {
		/* host port secret header capability: the rule's injection. */
		for (int i = 0; i < d->nrule; i++) {
			struct rule *u = &d->rule[i];
			if (strcmp(u->host, f[0]) != 0 ||
			    u->port != parse_port(f[1]))
				continue;
			if (!copy_field(u->inject_secret,
				sizeof(u->inject_secret), f[2]) ||
			    !copy_field(u->inject_header,
				sizeof(u->inject_header), f[3]) ||
			    !copy_field(u->inject_cap, sizeof(u->inject_cap),
				f[4]))
				u->inject_secret[0] = '\0';
			break;
		}
	}
}

static void
run_step(struct drill *d, const char *line)
{
	char name[64];

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(line, " "), line);
	d->step = name;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (strcmp(steps[i].name, name) == 0) {
			steps[i].run(d);
			return;
		}
	report(d, "untested", "-", "unknown step");
}

int
main(int argc, char **argv)
{
	static const char secret_name[] =
	    "SECRET|TOKEN|PASSW|[A-Z0-9]_PWD$|API_?KEY|PRIVATE|CREDENTIAL|"
	    "AUTH|COOKIE|SESSION|_KEY$|^AWS_|^GCP_|^AZURE_|DSN$|DATABASE_URL";
	static struct drill start; /* only its start_fds */
	struct drill *d;
	char *text, **lines;
	size_t len, nlines = 1;

	if (argc != 2) {
		fprintf(stderr,
		    "usage: cordon-drill-agent INSTRUCTIONS_FILE\n");
		return EX_USAGE;
	}
	/* A job never runs as root; the host's root would get what the
	 * attempts ask for (a mount over /tmp, a new hostname). */
	if (geteuid() == 0) {
		fprintf(stderr,
		    "cordon-drill-agent: refusing to run as root: it is "
		    "cordon drill's hostile job, for its sandbox only\n");
		return EX_USAGE;
	}
	/* What the job was given, before the agent opens anything. */
	snapshot_fds(&start);
	if ((text = slurp(argv[1], INSTRUCTIONS_MAX, &len)) == NULL) {
		fprintf(stderr, "cordon-drill-agent: %s: %s\n", argv[1],
		    strerror(errno));
		return EX_USAGE;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A closed pipe or a file size limit is an errno, not our end. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	for (size_t i = 0; i < len; i++)
		nlines += text[i] == '\n';
	d = calloc(1, sizeof(*d));
	lines = calloc(nlines, sizeof(*lines));
	if (d != NULL) {
		memcpy(d->start_fds, start.start_fds, sizeof(d->start_fds));
		memcpy(d->start_fd_what, start.start_fd_what,
		    sizeof(d->start_fd_what));
		d->nstart_fds = start.nstart_fds;
		d->start_fds_more = start.start_fds_more;
	}
	if (d == NULL || lines == NULL ||
	    regcomp(&d->secret_name, secret_name,
		REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0 ||
	    regcomp(&d->secret_url, "://[^/?#@:[:space:]]*:[^/?#@[:space:]]+@",
		REG_EXTENDED | REG_NOSUB) != 0 ||
	    regcomp(&d->ca_name,
		"(CA_BUNDLE|CAINFO|CA_CERTS|CAFILE|CERT_FILE|CERT_DIR|_CERT)$",
		REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0) {
		fprintf(stderr, "cordon-drill-agent: cannot start\n");
		return 70;
	}
	nlines = 0;
	for (char *p = text, *nl; p != NULL; p = nl != NULL ? nl + 1 : NULL) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl = '\0';
		if ((len = strlen(p)) > 0 && p[len - 1] == '\r')
			p[len - 1] = '\0';
		lines[nlines++] = p;
	}
	/* Every param first: a step may come before the line it needs. */
	for (size_t i = 0; i < nlines; i++)
		if (strncmp(lines[i], "param ", 6) == 0)
			parse_param(d, lines[i] + 6);
	for (size_t i = 0; i < nlines; i++)
		if (strncmp(lines[i], "step ", 5) == 0)
			run_step(d, lines[i] + 5);
	regfree(&d->secret_name);
	regfree(&d->secret_url);
	regfree(&d->ca_name);
	free(lines);
	free(d);
	free(text);
	return 0;
}
