/*
 * Blocking HTTP/1.1 calls for cordon's own services, over TCP or a unix
 * socket: one request per connection (Connection: close), a deadline for
 * the whole exchange, the answer read by http_answer.h (strict framing,
 * capped). Small on purpose: every cordon program pays at each start for
 * what it loads, and libcurl with its dependencies (gnutls through
 * librtmp, Kerberos, LDAP, ssh2) cost `cordon run` 7 to 8 ms of every
 * job before it did anything.
 */
#include "http_client.h"

#include "config.h"
#include "http_answer.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)

_Static_assert(HTTPC_BASES_MAX == CONFIG_LIST_MAX,
    "a configured list fits the client's");

void
httpc_answer_free(struct httpc_answer *a)
{
	json_decref(a->json);
	a->json = NULL;
	buf_free(&a->body);
}

int
httpc_wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - monotonic_ms();
		struct pollfd p = { .fd = fd, .events = events };
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -EIO;
	}
}

/* Connects to base ("http://host[:port]" or "unix:/path"), the host for
 * the Host field in ret_host: the socket, or -errno. */
static int
dial(const char *base, char *ret_host, size_t hostlen, int64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, r, err = 0;

	if (strncmp(base, "unix:", 5) == 0) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
		if (strlen(base + 5) >= sizeof(sun->sun_path))
			return -ENAMETOOLONG;
		memset(sun, 0, sizeof(*sun));
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, base + 5);
		len = sizeof(*sun);
		snprintf(ret_host, hostlen, "localhost");
	} else {
		char host[256], port[8] = "80";
		const char *hp, *end, *colon;
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;

		if (strncmp(base, "http://", 7) != 0)
			return -EINVAL;
		hp = base + 7;
		end = hp + strcspn(hp, "/");
		if (*hp == '[') { /* [v6]:port */
			const char *rb = memchr(hp, ']', (size_t)(end - hp));
			if (rb == NULL)
				return -EINVAL;
			colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
			snprintf(host, sizeof(host), "%.*s", (int)(rb - hp - 1),
			    hp + 1);
		} else {
			colon = memchr(hp, ':', (size_t)(end - hp));
			snprintf(host, sizeof(host), "%.*s",
			    (int)((colon != NULL ? colon : end) - hp), hp);
		}
		if (colon != NULL)
			snprintf(port, sizeof(port), "%.*s",
			    (int)(end - colon - 1), colon + 1);
		snprintf(ret_host, hostlen, "%.*s", (int)(end - hp), hp);
		/* An address, as cordon's services are given, needs no
		 * resolver (and none of the files it reads). */
		hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
		if (getaddrinfo(host, port, &hints, &ai) != 0) {
			hints.ai_flags = 0;
			if (getaddrinfo(host, port, &hints, &ai) != 0)
				return -ECONNREFUSED;
		}
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		len = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
	fd =
	    socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN) {
			err = errno;
		} else if ((r = httpc_wait_fd(fd, POLLOUT, deadline)) < 0) {
			close(fd);
			return r;
		} else {
			socklen_t el = sizeof(err);
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
		}
	}
	if (err != 0) {
		close(fd);
		return err == ECONNREFUSED || err == ENOENT ||
			err == EHOSTUNREACH || err == ENETUNREACH
		    ? -ECONNREFUSED
		    : -EIO;
	}
	return fd;
}

static int
send_all(int fd, const char *p, size_t n, int64_t deadline)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		} else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			int r = httpc_wait_fd(fd, POLLOUT, deadline);
			if (r < 0)
				return r;
		} else {
			/* EPIPE, ECONNRESET: the peer stopped reading, maybe
			 * after an early answer (a 413) worth reading. */
			return k < 0 && (errno == EPIPE || errno == ECONNRESET)
			    ? -EPIPE
			    : -EIO;
		}
	}
	return 0;
}

/* The answer's bytes from the socket, for http_answer_read. */
struct reading {
	int fd;
	int64_t deadline;
	bool cut; /* the upload met a reset: so may the answer's end */
};

static ssize_t
recv_some(void *ctx, char *buf, size_t n)
{
	struct reading *rd = ctx;

	for (;;) {
		ssize_t k = recv(rd->fd, buf, n, 0);
		int r;

		if (k >= 0)
			return k;
		if (rd->cut && errno == ECONNRESET)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -EIO;
		if ((r = httpc_wait_fd(rd->fd, POLLIN, rd->deadline)) < 0)
			return r;
	}
}

/* One call to one base: httpc_request's contract for a single address;
 * *sent true once a byte of the request may have gone out. */
static int
request_one(const char *base, const char *method, const char *path,
    const char *bearer, const char *header, const json_t *body, long timeout_ms,
    struct httpc_answer *ret, bool *sent)
{
	_cleanup_free_ char *payload = NULL;
	struct httpc_answer a = { .body = BUF_INIT(0) };
	struct http_answer ans;
	struct buf req = BUF_INIT(HEAD_MAX + HTTPC_MAX_ANSWER);
	int64_t deadline = monotonic_ms() + timeout_ms;
	struct reading reading = { .deadline = deadline };
	char host[300];
	bool has_body = strcmp(method, "POST") == 0 ||
	    strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0;
	size_t vlen;
	const char *v;
	bool json;
	int fd, r;

	*ret = (struct httpc_answer){ .body = BUF_INIT(0) };
	*sent = false;
	if (body != NULL && (payload = json_dumps(body, JSON_COMPACT)) == NULL)
		return -ENOMEM;
	fd = dial(base, host, sizeof(host), deadline);
	if (fd < 0)
		return fd;
	reading.fd = fd;
	r = buf_printf(&req,
	    "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, path,
	    host);
	if (r == 0 && bearer != NULL)
		r = buf_printf(&req, "Authorization: Bearer %s\r\n", bearer);
	if (r == 0 && header != NULL)
		r = buf_printf(&req, "%s\r\n", header);
	if (r == 0 && payload != NULL)
		r = buf_printf(&req,
		    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		    "\r\n%s",
		    strlen(payload), payload);
	else if (r == 0)
		r = buf_printf(&req, "%s\r\n",
		    has_body ? "Content-Length: 0\r\n" : "");
	if (r == 0) {
		*sent = true;
		r = send_all(fd, req.data, req.len, deadline);
	}
	if (req.data != NULL)
		explicit_bzero(req.data, req.len); /* the bearer key */
	buf_free(&req);
	/* A server that refuses a body answers before it has read it all,
	 * then closes, and the rest of the upload meets a reset: its answer
	 * is already here, as curl finds it. */
	reading.cut = r == -EPIPE;
	if (reading.cut)
		r = 0;
	http_answer_init(&ans, strcmp(method, "HEAD") == 0, HEAD_MAX,
	    HTTPC_MAX_ANSWER);
	if (r == 0)
		r = http_answer_read(&ans, recv_some, &reading);
	close(fd);
	if (r < 0)
		goto out;
	a.status = ans.status;
	v = http_answer_field(&ans, "Content-Type", &vlen);
	json = v != NULL && vlen >= 16 &&
	    strncasecmp(v, "application/json", 16) == 0;
	a.body = ans.body;
	ans.body = (struct buf)BUF_INIT(0);
	if (json && a.body.len > 0) {
		a.json = json_loadb(a.body.data, a.body.len, 0, NULL);
		if (a.json == NULL) {
			r = -EBADMSG;
			goto out;
		}
	}
	http_answer_free(&ans);
	*ret = a;
	return 0;
out:
	http_answer_free(&ans);
	httpc_answer_free(&a);
	return r;
}

int
httpc_bases(const char *list, char out[][HTTPC_BASE_MAX], size_t max)
{
	size_t n = 0;
	const char *p = list;

	for (;;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= HTTPC_BASE_MAX || n == max)
			return -EINVAL;
		memcpy(out[n], p, len);
		out[n++][len] = '\0';
		if (p[len] == '\0')
			return (int)n;
		p += len + 1;
	}
}

/* Whether path is /v1/jobs/<one segment>/<tail>. */
static bool
job_route(const char *path, const char *tail)
{
	const char *p = path + 9, *slash;

	if (strncmp(path, "/v1/jobs/", 9) != 0 ||
	    (slash = strchr(p, '/')) == NULL || slash == p)
		return false;
	return strcmp(slash + 1, tail) == 0;
}

bool
httpc_repeatable(const char *method, const char *path)
{
	static const char *const safe[] = { "GET", "HEAD", "PUT", "DELETE",
		"OPTIONS" };

	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (strcmp(method, safe[i]) == 0)
			return true;
	if (strcmp(method, "POST") != 0)
		return false;
	return strcmp(path, "/v1/introspect") == 0 ||
	    strcmp(path, "/v1/revoke") == 0 || job_route(path, "revoke") ||
	    job_route(path, "heartbeat");
}

/* Which address of a list answered last, kept per list (by its hash, in a
 * few slots, without a lock): the hash's upper bits and the index. */
#define PREFER_SLOTS 8
static _Atomic uint64_t prefer[PREFER_SLOTS];

static uint64_t
list_hash(const char *list)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (const char *p = list; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h & ~(uint64_t)0xff;
}

static size_t
preferred(uint64_t h, size_t n)
{
	uint64_t v = atomic_load(&prefer[(h >> 8) % PREFER_SLOTS]);

	return (v & ~(uint64_t)0xff) == h && (v & 0xff) < n ? (size_t)(v & 0xff)
							    : 0;
}

/* Whether another address may do what this one could not: it said 503
 * (a broker without its database), or it met no server (nothing was
 * sent), or no answer came in time or whole to a call that may be
 * repeated (httpc_repeatable): one that is not may have been carried
 * out, and is not sent twice. */
static bool
worth_another(int r, const struct httpc_answer *a, bool sent, bool repeatable)
{
	if (r == 0)
		return a->status == 503;
	if (r != -ECONNREFUSED && r != -ETIMEDOUT && r != -EIO)
		return false;
	return !sent || repeatable;
}

int
httpc_request(const char *base, const char *method, const char *path,
    const char *bearer, const char *header, const json_t *body, long timeout_ms,
    struct httpc_answer *ret)
{
	char bases[HTTPC_BASES_MAX][HTTPC_BASE_MAX];
	bool sent = false, repeatable = httpc_repeatable(method, path);
	uint64_t h;
	size_t first, i;
	int n, r = -EINVAL;

	/* A unix socket's path is one address, whatever it holds. */
	if (strchr(base, ',') == NULL || strncmp(base, "unix:", 5) == 0)
		return request_one(base, method, path, bearer, header, body,
		    timeout_ms, ret, &sent);
	*ret = (struct httpc_answer){ .body = BUF_INIT(0) };
	if ((n = httpc_bases(base, bases, HTTPC_BASES_MAX)) < 0)
		return n;
	h = list_hash(base);
	first = preferred(h, (size_t)n);
	for (i = 0; i < (size_t)n; i++) {
		size_t at = (first + i) % (size_t)n;

		r = request_one(bases[at], method, path, bearer, header, body,
		    timeout_ms, ret, &sent);
		if (!worth_another(r, ret, sent, repeatable)) {
			if (at != first)
				atomic_store(&prefer[(h >> 8) % PREFER_SLOTS],
				    h | at);
			return r;
		}
		if (i + 1 < (size_t)n && r == 0)
			httpc_answer_free(ret);
	}
	return r;
}
