/*
 * cordon serve's root part and the HTTP part's end of it (spawner.h).
 * Messages, one a datagram on a SOCK_SEQPACKET pair, at most
 * SPAWNER_MSG_MAX bytes:
 *   'R' then NUL-terminated fields, each a tag byte and its text: 'm' the
 *       manifest (once, first), 'i' an input (src:dst), 'c' a word of the
 *       command; four descriptors ride along (stdout, 3, 4, stderr).
 *   'C' recover. 'S' and a pid: stop that child. 'O' and a job id (no
 *   NUL): open <state_dir>/<job>.patch. 'D' and a job id: remove it (a
 *   job serve forgot).
 * Answers: 'P' and a pid or -errno (to R, C, O and D, in order; to O with
 * the descriptor when 0), 'X', a pid and
 * its wait status (whenever a child ends). The spawner builds each argv
 * itself: a request names no program, no option, no configuration.
 */
#include "spawner.h"

#include "confine.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARGV_MAX 4096
#define CHILDREN_MAX 1024
#define LIVE_FD 4
/* A wait for the spawner, in slices: another thread may take what it
 * waits for meanwhile. */
#define WAIT_SLICE_MS 10

/* --- the spawner ------------------------------------------------------ */

struct root {
	int fd;
	const char *cordon, *config_path, *state_dir;
	pid_t children[CHILDREN_MAX];
	size_t nchildren;
};

static void
say(int fd, char type, int32_t a, int32_t b)
{
	char m[9];

	m[0] = type;
	memcpy(m + 1, &a, 4);
	memcpy(m + 5, &b, 4);
	(void)send(fd, m, type == 'X' ? 9 : 5, MSG_NOSIGNAL);
}

/* 'P' and a, with fd (when not -1). */
static void
say_fd(int sock, int32_t a, int fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} c;
	char m[5] = { 'P' };
	struct iovec iov = { m, sizeof(m) };
	struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(m + 1, &a, 4);
	if (fd >= 0) {
		memset(&c, 0, sizeof(c));
		h.msg_control = c.space;
		h.msg_controllen = sizeof(c.space);
		struct cmsghdr *ch = CMSG_FIRSTHDR(&h);
		ch->cmsg_level = SOL_SOCKET;
		ch->cmsg_type = SCM_RIGHTS;
		ch->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(ch), &fd, sizeof(int));
	}
	(void)sendmsg(sock, &h, MSG_NOSIGNAL);
}

/* argv as a child: stdin /dev/null, stdout/3/4/stderr from fds (-1: none;
 * stdout then /dev/null), signals unblocked. Its pid, or -errno. */
static pid_t
fork_cordon(struct root *r, char **argv, const int *fds)
{
	pid_t pid;

	if (r->nchildren == CHILDREN_MAX)
		return -EAGAIN;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int moved[4];
		sigset_t none;

		/* Above 4 first: no dup2 below lands on a descriptor still to
		 * be moved. */
		for (int x = 0; fds != NULL && x < 4; x++)
			if ((moved[x] = fcntl(fds[x], F_DUPFD_CLOEXEC, 10)) < 0)
				_exit(125);
		if (fds != NULL)
			fds = moved;
		if (null < 0 || dup2(null, 0) < 0 ||
		    dup2(fds != NULL ? fds[0] : null, 1) < 0 ||
		    (fds != NULL &&
			(dup2(fds[1], 3) < 0 || dup2(fds[2], LIVE_FD) < 0 ||
			    dup2(fds[3], 2) < 0)))
			_exit(125);
		closefrom(fds != NULL ? LIVE_FD + 1 : 3);
		/* The HTTP part's handlers (serve's, or a test runner's that
		 * signals its whole group) are not the job's: a stop that
		 * lands before the exec ends the child, as exec would have
		 * it, instead of running one of them here. */
		for (int sig = 1; sig < NSIG; sig++) {
			struct sigaction sa;
			if (sigaction(sig, NULL, &sa) == 0 &&
			    sa.sa_handler != SIG_IGN &&
			    sa.sa_handler != SIG_DFL)
				(void)signal(sig, SIG_DFL);
		}
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(r->cordon, argv);
		_exit(125);
	}
	r->children[r->nchildren++] = pid;
	return pid;
}

/* A run request's fields into argv: the child's pid or -errno. */
static pid_t
run(struct root *r, char *m, size_t len, const int *fds)
{
	static char *argv[ARGV_MAX];
	size_t n = 0, i = 1;
	bool manifest = false, dashes = false;

	argv[n++] = "cordon";
	argv[n++] = "run";
	argv[n++] = "--json";
	argv[n++] = "--id-fd";
	argv[n++] = "3";
	if (r->config_path != NULL) {
		argv[n++] = "--config";
		argv[n++] = (char *)r->config_path;
	}
	/* The message ends in a NUL (checked by the caller). */
	while (i < len) {
		char tag = m[i];
		char *text = m + i + 1;
		size_t tlen = strlen(text);

		if (n + 3 >= ARGV_MAX || i + 1 >= len)
			return -E2BIG;
		if (tag == 'm' && !manifest && n < 10) {
			argv[n++] = "--manifest";
			manifest = true;
		} else if (tag == 'i' && manifest && !dashes) {
			argv[n++] = "--input";
		} else if (tag == 'c' && manifest) {
			if (!dashes)
				argv[n++] = "--";
			dashes = true;
		} else {
			return -EINVAL;
		}
		argv[n++] = text;
		i += 1 + tlen + 1;
	}
	if (!manifest)
		return -EINVAL;
	argv[n] = NULL;
	return fork_cordon(r, argv, fds);
}

static void
handle(struct root *r)
{
	static char m[SPAWNER_MSG_MAX + 1];
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} c;
	struct iovec iov = { m, SPAWNER_MSG_MAX };
	struct msghdr h = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = c.space,
		.msg_controllen = sizeof(c.space) };
	int fds[4], nfds = 0;
	ssize_t len = recvmsg(r->fd, &h, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	pid_t pid;

	if (len <= 0)
		return;
	for (struct cmsghdr *ch = CMSG_FIRSTHDR(&h); ch != NULL;
	     ch = CMSG_NXTHDR(&h, ch))
		if (ch->cmsg_level == SOL_SOCKET &&
		    ch->cmsg_type == SCM_RIGHTS) {
			size_t k = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int got[4];
			if (k > 4)
				k = 4;
			memcpy(got, CMSG_DATA(ch), k * sizeof(int));
			for (size_t x = 0; x < k; x++) {
				if (nfds < 4)
					fds[nfds++] = got[x];
				else
					close(got[x]);
			}
		}
	if (m[0] == 'R') {
		if (nfds != 4 || (h.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
		    m[len - 1] != '\0')
			pid = -EINVAL;
		else
			pid = run(r, m, (size_t)len, fds);
		say(r->fd, 'P', pid, 0);
	} else if (m[0] == 'C' && len == 1) {
		char *argv[] = { "cordon", "recover", "--log", "--config",
			(char *)r->config_path, NULL };
		if (r->config_path == NULL)
			argv[3] = NULL;
		say(r->fd, 'P', fork_cordon(r, argv, NULL), 0);
	} else if ((m[0] == 'O' || m[0] == 'D') && len > 1 && len <= 65) {
		char path[4096];
		bool ok = true;
		int fd = -1;
		for (ssize_t x = 1; x < len; x++)
			ok &= (m[x] >= 'a' && m[x] <= 'z') ||
			    (m[x] >= 'A' && m[x] <= 'Z') ||
			    (m[x] >= '0' && m[x] <= '9') || m[x] == '_' ||
			    m[x] == '-';
		errno = EINVAL;
		ok = ok && r->state_dir != NULL &&
		    snprintf(path, sizeof(path), "%s/%.*s.patch", r->state_dir,
			(int)(len - 1), m + 1) < (int)sizeof(path);
		if (m[0] == 'D') {
			/* unlink never follows a link: the name alone goes. */
			int32_t rc = -EINVAL;
			if (ok)
				rc = unlink(path) == 0 ? 0 : -errno;
			say(r->fd, 'P', rc, 0);
			goto done;
		}
		if (ok)
			fd = open(path,
			    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
				O_NOFOLLOW);
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
			errno = EINVAL;
		}
		say_fd(r->fd, fd >= 0 ? 0 : ok ? -errno : -EINVAL, fd);
		if (fd >= 0)
			close(fd);
	} else if (m[0] == 'S' && len == 5) {
		int32_t p;
		memcpy(&p, m + 1, 4);
		for (size_t x = 0; x < r->nchildren; x++)
			if (r->children[x] == p)
				(void)kill(p, SIGTERM);
	} else {
		/* Not a request: the HTTP part is not what it was. */
		say(r->fd, 'P', -EINVAL, 0);
	}
done:
	for (int x = 0; x < nfds; x++)
		close(fds[x]);
}

/* Tells each child of its own that ended. */
static void
reap_children(struct root *r)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		for (size_t x = 0; x < r->nchildren; x++)
			if (r->children[x] == p) {
				r->children[x] = r->children[--r->nchildren];
				say(r->fd, 'X', p, st);
				break;
			}
}

static _Noreturn void
root_main(struct root *r)
{
	bool closed = false, termed = false;

	for (;;) {
		struct pollfd p = { .fd = r->fd, .events = POLLIN };
		int k = poll(&p, 1, 100);

		if (!closed && k == 1 && (p.revents & POLLIN)) {
			char peek;
			if (recv(r->fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
				closed = true;
			else
				handle(r);
		} else if (!closed && k == 1) {
			closed = true;
		}
		if (closed && !termed) {
			/* The HTTP part is gone: each job runs its stop path. */
			for (size_t x = 0; x < r->nchildren; x++)
				(void)kill(r->children[x], SIGTERM);
			termed = true;
		}
		reap_children(r);
		if (closed && r->nchildren == 0)
			_exit(0);
		if (closed)
			usleep(100 * 1000);
	}
}

int
spawner_start(struct spawner *sp, const char *cordon, const char *config_path,
    const char *state_dir)
{
	int sv[2], buf = 4 * SPAWNER_MSG_MAX;
	pid_t pid;

	sp->fd = -1;
	sp->nexited = 0;
	sp->asking = sp->answered = false;
	sp->answer_fd = -1;
	sp->gone = sp->lost = false;
	pthread_mutex_init(&sp->mu, NULL);
	pthread_mutex_init(&sp->ask_mu, NULL);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	(void)setsockopt(sv[1], SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	if (pid == 0) {
		static struct root r;
		/* Its signals stay blocked as serve's: it ends when the HTTP
		 * part's end closes, whatever killed that. */
		close(sv[0]);
		if (sv[1] != 3 && dup2(sv[1], 3) < 0)
			_exit(125);
		closefrom(4);
		r.fd = 3;
		(void)fcntl(3, F_SETFD, FD_CLOEXEC);
		r.cordon = cordon;
		r.config_path = config_path;
		r.state_dir = state_dir;
		if (confine_apply(&confine_spawner) < 0)
			_exit(125);
		root_main(&r);
	}
	close(sv[1]);
	sp->fd = sv[0];
	sp->pid = pid;
	return 0;
}

/* --- the HTTP part's end ---------------------------------------------- */

/* Takes the spawner lost: nothing more is asked of it, and its end is
 * shut down (the descriptor stays open for whoever polls it). sp->mu
 * held. */
static void
lose(struct spawner *sp)
{
	if (!sp->gone && sp->fd >= 0)
		(void)shutdown(sp->fd, SHUT_RDWR);
	sp->lost = true;
	sp->gone = true;
}

/* What the spawner sent, never waiting: its 'X' into the table, its 'P'
 * the answer of the request that waits (a descriptor with it kept; one
 * nobody waits for is dropped). 0, or -EPIPE when it is gone. sp->mu
 * held. */
static int
take(struct spawner *sp)
{
	for (;;) {
		char m[16];
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(sizeof(int))];
		} c;
		struct iovec iov = { m, sizeof(m) };
		struct msghdr h = { .msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = c.space,
			.msg_controllen = sizeof(c.space) };
		ssize_t n;
		int32_t a = 0, b;
		int fd = -1;

		if (sp->gone || sp->fd < 0)
			return -EPIPE;
		n = recvmsg(sp->fd, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		for (struct cmsghdr *ch = n > 0 ? CMSG_FIRSTHDR(&h) : NULL;
		     ch != NULL; ch = CMSG_NXTHDR(&h, ch))
			if (ch->cmsg_level == SOL_SOCKET &&
			    ch->cmsg_type == SCM_RIGHTS &&
			    ch->cmsg_len == CMSG_LEN(sizeof(int)))
				memcpy(&fd, CMSG_DATA(ch), sizeof(int));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0) {
			sp->gone = true;
			return -EPIPE;
		}
		if (n >= 5)
			memcpy(&a, m + 1, 4);
		if (m[0] == 'P' && n == 5 && sp->asking && !sp->answered) {
			sp->answer = a;
			sp->answered = true;
			sp->answer_fd = steal_fd(&fd);
		} else if (m[0] == 'X' && n == 9 &&
		    sp->nexited < SPAWNER_EXITED_MAX) {
			memcpy(&b, m + 5, 4);
			sp->exited[sp->nexited].pid = a;
			sp->exited[sp->nexited].status = b;
			sp->nexited++;
		}
		if (fd >= 0)
			close(fd);
	}
}

/* Waits, without sp->mu, until the spawner's end has something to read
 * (or events), at most timeout_ms. The descriptor is open until
 * spawner_close. */
static void
wait_for(struct spawner *sp, short events, int timeout_ms)
{
	struct pollfd p = { .fd = sp->fd, .events = events };

	(void)poll(&p, 1, timeout_ms);
}

/* The error of a request to a spawner lost or gone. sp->mu held. */
static int
gone_error(const struct spawner *sp)
{
	return sp->lost ? -ETIMEDOUT : -EPIPE;
}

/* Sends m (and fds) and waits for the pid answer, at most
 * SPAWNER_ANSWER_MS in all: then the spawner is lost (-ETIMEDOUT). One
 * request at a time (sp->ask_mu); sp->mu only between waits. */
static pid_t
ask(struct spawner *sp, const char *m, size_t len, const int *fds, int *got_fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} c;
	struct iovec iov = { (void *)m, len };
	struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1 };
	int64_t deadline = monotonic_ms() +
	    (sp->answer_ms > 0 ? sp->answer_ms : SPAWNER_ANSWER_MS);
	int32_t answer;
	bool sent = false;

	if (fds != NULL) {
		memset(&c, 0, sizeof(c));
		h.msg_control = c.space;
		h.msg_controllen = sizeof(c.space);
		struct cmsghdr *ch = CMSG_FIRSTHDR(&h);
		ch->cmsg_level = SOL_SOCKET;
		ch->cmsg_type = SCM_RIGHTS;
		ch->cmsg_len = CMSG_LEN(4 * sizeof(int));
		memcpy(CMSG_DATA(ch), fds, 4 * sizeof(int));
	}
	pthread_mutex_lock(&sp->ask_mu);
	pthread_mutex_lock(&sp->mu);
	for (;;) {
		int64_t left = deadline - monotonic_ms();

		if (sent)
			(void)take(sp);
		if (sent && sp->answered) {
			answer = sp->answer;
			if (got_fd != NULL)
				*got_fd = steal_fd(&sp->answer_fd);
			break;
		}
		if (sp->gone || sp->fd < 0) {
			answer = gone_error(sp);
			break;
		}
		if (!sent) {
			ssize_t n =
			    sendmsg(sp->fd, &h, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n == (ssize_t)len) {
				sent = true;
				sp->asking = true;
				sp->answered = false;
				sp->answer_fd = -1;
				continue;
			}
			if (n >= 0 || (errno != EAGAIN && errno != EINTR)) {
				/* Its end closed: gone; else this request's
				 * own failure (too big, no memory). */
				int e = n < 0 ? errno : EIO;
				answer = e == EMSGSIZE ? -E2BIG : -e;
				if (e == EPIPE || e == ECONNRESET ||
				    e == ENOTCONN) {
					sp->gone = true;
					answer = -EPIPE;
				}
				break;
			}
		}
		if (left <= 0) {
			/* Its answer, should it come late, would be taken
			 * for the next request's. */
			lose(sp);
			answer = -ETIMEDOUT;
			break;
		}
		/* In slices: another thread may take the answer meanwhile
		 * (spawner_reaped reads what comes too). */
		pthread_mutex_unlock(&sp->mu);
		wait_for(sp, sent ? POLLIN : POLLOUT,
		    left < WAIT_SLICE_MS ? (int)left : WAIT_SLICE_MS);
		pthread_mutex_lock(&sp->mu);
	}
	sp->asking = false;
	sp->answered = false;
	if (sp->answer_fd >= 0)
		close(sp->answer_fd);
	sp->answer_fd = -1;
	pthread_mutex_unlock(&sp->mu);
	pthread_mutex_unlock(&sp->ask_mu);
	return answer;
}

/* Appends tag and s to m: false when it does not fit. */
static bool
field(char *m, size_t *len, char tag, const char *s)
{
	size_t n = strlen(s);

	if (*len + 2 + n > SPAWNER_MSG_MAX)
		return false;
	m[(*len)++] = tag;
	memcpy(m + *len, s, n + 1);
	*len += n + 1;
	return true;
}

pid_t
spawner_run(struct spawner *sp, const char *manifest, const char *const *inputs,
    size_t ninputs, const char *const *command, size_t ncommand,
    const int fds[4])
{
	char *m = malloc(SPAWNER_MSG_MAX);
	size_t len = 0;
	bool ok;
	pid_t pid;

	if (m == NULL)
		return -ENOMEM;
	m[len++] = 'R';
	ok = field(m, &len, 'm', manifest);
	for (size_t i = 0; ok && i < ninputs; i++)
		ok = field(m, &len, 'i', inputs[i]);
	for (size_t i = 0; ok && i < ncommand; i++)
		ok = field(m, &len, 'c', command[i]);
	if (!ok) {
		free(m);
		return -E2BIG;
	}
	pid = ask(sp, m, len, fds, NULL);
	free(m);
	return pid;
}

pid_t
spawner_recover(struct spawner *sp)
{
	return ask(sp, "C", 1, NULL, NULL);
}

int
spawner_open_patch(struct spawner *sp, const char *job)
{
	char m[65] = { 'O' };
	size_t n = strlen(job);
	int fd = -1, r;

	if (n == 0 || n > 64)
		return -EINVAL;
	memcpy(m + 1, job, n);
	r = ask(sp, m, n + 1, NULL, &fd);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd >= 0 ? fd : -EIO;
}

int
spawner_remove_patch(struct spawner *sp, const char *job)
{
	char m[65] = { 'D' };
	size_t n = strlen(job);

	if (n == 0 || n > 64)
		return -EINVAL;
	memcpy(m + 1, job, n);
	return ask(sp, m, n + 1, NULL, NULL);
}

int
spawner_stop(struct spawner *sp, pid_t pid)
{
	char m[5] = { 'S' };
	int32_t p = pid;
	int r = 0;

	memcpy(m + 1, &p, 4);
	pthread_mutex_lock(&sp->mu);
	if (sp->gone || sp->fd < 0)
		r = gone_error(sp);
	else if (send(sp->fd, m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    sizeof(m))
		r = errno == EAGAIN ? -EAGAIN : -EPIPE;
	pthread_mutex_unlock(&sp->mu);
	return r;
}

int
spawner_reaped(struct spawner *sp, pid_t pid, int *status, int timeout_ms)
{
	int64_t deadline = monotonic_ms() + timeout_ms;
	int r;

	pthread_mutex_lock(&sp->mu);
	for (;;) {
		int64_t left;

		(void)take(sp);
		for (size_t i = 0; i < sp->nexited; i++)
			if (sp->exited[i].pid == pid) {
				*status = sp->exited[i].status;
				sp->exited[i] = sp->exited[--sp->nexited];
				pthread_mutex_unlock(&sp->mu);
				return 1;
			}
		if (sp->gone) {
			r = -EPIPE;
			break;
		}
		if ((left = deadline - monotonic_ms()) <= 0) {
			r = 0;
			break;
		}
		pthread_mutex_unlock(&sp->mu);
		wait_for(sp, POLLIN,
		    left < WAIT_SLICE_MS ? (int)left : WAIT_SLICE_MS);
		pthread_mutex_lock(&sp->mu);
	}
	pthread_mutex_unlock(&sp->mu);
	return r;
}

int
spawner_status(struct spawner *sp)
{
	int r;

	pthread_mutex_lock(&sp->mu);
	(void)take(sp);
	r = sp->gone || sp->fd < 0 ? gone_error(sp) : 0;
	pthread_mutex_unlock(&sp->mu);
	return r;
}

int
spawner_close(struct spawner *sp)
{
	int st;
	pid_t p = 0;

	if (sp->fd < 0)
		return -1;
	close(sp->fd);
	sp->fd = -1;
	/* A lost one may never end (stopped, hung): not waited for long. */
	int limit = sp->answer_ms > 0 ? sp->answer_ms : SPAWNER_ANSWER_MS;
	for (int waited = 0; sp->lost && p == 0; waited += 10) {
		if ((p = waitpid(sp->pid, &st, WNOHANG)) == 0) {
			if (waited >= limit)
				return -1;
			usleep(10 * 1000);
		}
	}
	sp->gone = true;
	if (p == 0)
		p = waitpid(sp->pid, &st, 0);
	if (p != sp->pid)
		return -1;
	pthread_mutex_destroy(&sp->mu);
	pthread_mutex_destroy(&sp->ask_mu);
	return st;
}

int
spawner_serve_user(uid_t *ret_uid, gid_t *ret_gid)
{
	const struct passwd *pw = getpwnam("cordon-serve");

	if (pw == NULL)
		pw = getpwnam("nobody");
	if (pw == NULL || pw->pw_uid == 0)
		return -ENOENT;
	*ret_uid = pw->pw_uid;
	*ret_gid = pw->pw_gid;
	return 0;
}

int
spawner_drop_root(void)
{
	uid_t uid;
	gid_t gid;
	int r;

	if (geteuid() != 0)
		return 0;
	if ((r = spawner_serve_user(&uid, &gid)) < 0)
		return r;
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		(void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	/* Root is not coming back. */
	if (setresuid(0, 0, 0) == 0 || geteuid() == 0)
		return -EPERM;
	return 0;
}
