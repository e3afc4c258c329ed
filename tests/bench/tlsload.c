/*
 * A benchmark helper: HTTPS through a forward proxy, which wrk cannot do.
 * Each connection sends "CONNECT host:port" to the proxy, then TLS inside
 * the tunnel (SNI: host); without -x it connects to host:port itself (the
 * name resolved as any client does, getaddrinfo, IPv4: inside a cordon job
 * that is the job's resolver and the transparent capture) and speaks TLS
 * at once. Then, by mode:
 *
 *   keepalive  GET requests one after another over that one tunnel
 *   new        one GET with "Connection: close" per tunnel, then a new
 *              TCP connection, CONNECT and full handshake (no resumption)
 *   idle       nothing: the tunnel is held open (for memory figures)
 *
 * The proxy's certificate is NOT verified (SSL_VERIFY_NONE): this measures,
 * it trusts nothing it reads; the figures are only the count of complete
 * 200 answers with the expected length. THREADS threads, each with its own
 * epoll loop and CONNS/THREADS connections, like wrk. -H adds a header
 * line to every request (at most 4), e.g. an Authorization with a token.
 *
 *   tlsload [-x PROXY_PORT] -h HOST -p PORT [-u PATH] [-c CONNS]
 *           [-t THREADS] [-d SECONDS] [-m keepalive|new|idle]
 *           [-H "Name: value"]...
 *
 * keepalive, new: prints "requests N errors E seconds S rps R p50_ms P
 * p99_ms Q": a request's latency from its first byte written (keepalive)
 * or from its TCP connect (new: connect, CONNECT, handshake and the
 * answer), in 10 us steps up to 2 s (a longer one counts as 2 s).
 * idle: opens the tunnels at most 32 at a time per thread, prints
 * "ready N failed F" once every one is open or has failed 3 times, then
 * holds them until its standard input closes or -d seconds pass.
 *
 * A measured window (keepalive, for a profiler of the proxy): -w W has
 * each connection make W requests first (its tunnel, handshakes and first
 * requests outside the window), then all wait; tlsload prints "warm N"
 * and reads a line on standard input, then -n N requests are made in all
 * (without -w: from the start), and once every answer is in it prints its
 * figures for those N alone and holds the tunnels open, idle, until its
 * standard input closes: nothing of the tunnels' closing falls in the
 * window. -d (seconds, a fraction allowed) is then only a limit: past
 * it, what was counted is printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (64 * 1024)
#define IDLE_RAMP 32
#define IDLE_TRIES 3
#define HEADERS_MAX 4
#define HIST_STEP_NS 10000 /* 10 us */
#define HIST_N 200000 /* up to 2 s */

enum mode { M_KEEPALIVE, M_NEW, M_IDLE };

enum state {
	S_TCP, /* connecting to the proxy */
	S_CONNECT_SEND,
	S_CONNECT_RECV,
	S_HANDSHAKE,
	S_SEND,
	S_RECV,
	S_IDLE,
	S_PARK, /* a window's request to wait for (-w, -n) */
	S_OFF,
};

struct worker;

struct conn {
	struct worker *w;
	int fd;
	SSL *ssl;
	enum state st;
	uint32_t mask, armed; /* wanted, and what epoll watches */
	bool close_after; /* the answer said Connection: close */
	size_t out_off;
	size_t len, need;
	int tries;
	long warm_done; /* -w: the requests it made before the window */
	bool ticketed; /* its request may go (an SSL_write again: no other) */
	int park_phase; /* S_PARK: the phase it parked in */
	struct timespec started; /* this request's */
	char buf[BUF_SIZE];
};

struct worker {
	pthread_t thread;
	int ep;
	struct conn *conns;
	size_t nconns, next; /* idle mode: the next to open */
	size_t inflight;
	int phase_seen; /* the phase its parked connections last woke to */
	atomic_uint_fast64_t requests, errors;
	uint32_t *hist; /* latencies, HIST_N steps of HIST_STEP_NS */
	atomic_size_t ready, failed;
};

static enum mode mode = M_KEEPALIVE;
static struct sockaddr_in proxy = { .sin_family = AF_INET };
static bool direct; /* no -x: to host:port itself, no CONNECT */
static const char *host;
static SSL_CTX *ctx;
static char connect_req[512], get_req[4096];
static size_t connect_len, get_len;
static atomic_bool stopping;
static struct timespec deadline;
/* -w, -n: phase 0 the warm-up, 1 the window; the window's tickets. */
static long warm, window_n;
static atomic_int phase;
static atomic_long tickets;
static atomic_size_t parked[2]; /* the connections parked in each phase */

static bool
past(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t->tv_sec ||
	    (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* Counts the latency of the request c started. */
static void
latency_add(struct worker *w, const struct conn *c)
{
	struct timespec now;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (long long)(now.tv_sec - c->started.tv_sec) * 1000000000LL +
	    (now.tv_nsec - c->started.tv_nsec);
	ns /= HIST_STEP_NS;
	w->hist[ns < 0 ? 0 : ns >= HIST_N ? HIST_N - 1 : ns]++;
}

/* The latency in ms under which a share q of the n counted fall. */
static double
percentile(const uint64_t *hist, uint64_t n, double q)
{
	uint64_t want = (uint64_t)((double)n * q + 0.999999), seen = 0;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < HIST_N; i++) {
		seen += hist[i];
		if (seen >= want)
			return (double)(i + 1) * HIST_STEP_NS / 1e6;
	}
	return (double)HIST_N * HIST_STEP_NS / 1e6;
}

static void
conn_drop(struct conn *c)
{
	if (c->ssl != NULL)
		SSL_free(c->ssl);
	c->ssl = NULL;
	if (c->fd >= 0)
		close(c->fd); /* also leaves the epoll set */
	c->fd = -1;
	c->st = S_OFF;
	c->mask = c->armed = 0;
}

static int
conn_open(struct conn *c)
{
	static const int one = 1;
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&proxy, sizeof(proxy)) < 0 &&
	    errno != EINPROGRESS) {
		conn_drop(c);
		return -1;
	}
	c->st = S_TCP;
	clock_gettime(CLOCK_MONOTONIC, &c->started);
	c->mask = c->armed = EPOLLOUT;
	c->out_off = 0;
	c->len = 0;
	c->ticketed = false;
	if (epoll_ctl(c->w->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		conn_drop(c);
		return -1;
	}
	return 0;
}

/* The value of header name in the head, or NULL. */
static const char *
header(const char *head, size_t len, const char *name, size_t *ret_len)
{
	size_t n = strlen(name);
	const char *p = memchr(head, '\n', len), *end = head + len;

	while (p != NULL && p + 1 < end) {
		const char *line = p + 1;
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (eol == NULL)
			break;
		if ((size_t)(eol - line) > n + 1 && line[n] == ':' &&
		    strncasecmp(line, name, n) == 0) {
			const char *v = line + n + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			const char *ve = eol;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
				ve--;
			*ret_len = (size_t)(ve - v);
			return v;
		}
		p = eol;
	}
	return NULL;
}

/* A complete answer in c->buf: 1, with c->need its length and
 * c->close_after set when the server ends the connection after it; 0 when
 * more is needed; -1 when it is not a 200 with a Content-Length. */
static int
answer_complete(struct conn *c)
{
	const char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
	const char *v;
	size_t head, vlen;
	char num[24];

	if (c->need > 0)
		return c->len >= c->need;
	if (end == NULL)
		return c->len < BUF_SIZE ? 0 : -1;
	head = (size_t)(end - c->buf) + 4;
	if (head < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0 ||
	    memcmp(c->buf + 9, "200", 3) != 0)
		return -1;
	v = header(c->buf, head, "Content-Length", &vlen);
	if (v == NULL || vlen == 0 || vlen >= sizeof(num))
		return -1;
	memcpy(num, v, vlen);
	num[vlen] = '\0';
	c->need = head + strtoul(num, NULL, 10);
	if (c->need > BUF_SIZE)
		return -1;
	v = header(c->buf, head, "Connection", &vlen);
	c->close_after =
	    v != NULL && vlen == 5 && strncasecmp(v, "close", 5) == 0;
	return c->len >= c->need;
}

/* The client side of TLS on c's socket, SNI host: 0, or -1. */
static int
tls_start(struct conn *c)
{
	c->ssl = SSL_new(ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
	    SSL_set_tlsext_host_name(c->ssl, host) != 1)
		return -1;
	SSL_set_connect_state(c->ssl);
	return 0;
}

/* Whether c may send its next request now (false: it parks until the next
 * phase). */
static bool
ticket(struct conn *c, int ph)
{
	if (warm == 0 && window_n == 0)
		return true;
	if (ph == 0)
		return c->warm_done < warm ? (c->warm_done++, true) : false;
	return atomic_fetch_add(&tickets, 1) < window_n;
}

/* Runs c's state machine until it must wait: 0 (c->mask set), or -1. */
static int
advance(struct conn *c)
{
	struct worker *w = c->w;
	ssize_t n;
	int r, e;

	for (;;) {
		switch (c->st) {
		case S_TCP: {
			int err = 0;
			socklen_t len = sizeof(err);
			if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err,
				&len) < 0 ||
			    err != 0)
				return -1;
			c->st = S_CONNECT_SEND;
			if (direct) {
				c->st = S_HANDSHAKE;
				if (tls_start(c) < 0)
					return -1;
			}
			break;
		}
		case S_CONNECT_SEND:
			n = write(c->fd, connect_req + c->out_off,
			    connect_len - c->out_off);
			if (n < 0) {
				if (errno != EAGAIN)
					return -1;
				c->mask = EPOLLOUT;
				return 0;
			}
			c->out_off += (size_t)n;
			if (c->out_off == connect_len) {
				c->st = S_CONNECT_RECV;
				c->len = 0;
			}
			break;
		case S_CONNECT_RECV:
			n = read(c->fd, c->buf + c->len, BUF_SIZE - c->len);
			if (n < 0) {
				if (errno != EAGAIN)
					return -1;
				c->mask = EPOLLIN;
				return 0;
			}
			if (n == 0)
				return -1;
			c->len += (size_t)n;
			char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
			if (end == NULL) {
				if (c->len == BUF_SIZE)
					return -1;
				break;
			}
			/* Nothing may follow the answer before the client
			 * speaks TLS. */
			if (c->len < 12 || memcmp(c->buf + 9, "200", 3) != 0 ||
			    end + 4 != c->buf + c->len)
				return -1;
			if (tls_start(c) < 0)
				return -1;
			c->st = S_HANDSHAKE;
			break;
		case S_HANDSHAKE:
			r = SSL_do_handshake(c->ssl);
			if (r == 1) {
				c->st = mode == M_IDLE ? S_IDLE : S_SEND;
				c->out_off = 0;
				if (mode == M_IDLE) {
					atomic_fetch_add(&w->ready, 1);
					w->inflight--;
					c->mask = EPOLLIN;
					return 0;
				}
				break;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ ||
			    e == SSL_ERROR_WANT_WRITE) {
				c->mask = e == SSL_ERROR_WANT_READ ? EPOLLIN
								   : EPOLLOUT;
				return 0;
			}
			return -1;
		case S_SEND:
			if (mode == M_KEEPALIVE && !c->ticketed) {
				int ph = atomic_load(&phase);
				if (!ticket(c, ph)) {
					c->st = S_PARK;
					c->mask = 0; /* an error or a hang-up */
					c->park_phase = ph;
					atomic_fetch_add(&parked[ph], 1);
					return 0;
				}
				c->ticketed = true; /* until its answer */
			}
			/* new: the latency counts from the connect */
			if (mode == M_KEEPALIVE)
				clock_gettime(CLOCK_MONOTONIC, &c->started);
			r = SSL_write(c->ssl, get_req, (int)get_len);
			if (r <= 0) {
				e = SSL_get_error(c->ssl, r);
				if (e == SSL_ERROR_WANT_READ ||
				    e == SSL_ERROR_WANT_WRITE) {
					c->mask = e == SSL_ERROR_WANT_READ
					    ? EPOLLIN
					    : EPOLLOUT;
					return 0;
				}
				return -1;
			}
			c->st = S_RECV;
			c->len = 0;
			c->need = 0;
			c->close_after = false;
			break;
		case S_RECV:
			r = SSL_read(c->ssl, c->buf + c->len,
			    (int)(BUF_SIZE - c->len));
			if (r <= 0) {
				e = SSL_get_error(c->ssl, r);
				if (e == SSL_ERROR_WANT_READ ||
				    e == SSL_ERROR_WANT_WRITE) {
					c->mask = e == SSL_ERROR_WANT_READ
					    ? EPOLLIN
					    : EPOLLOUT;
					return 0;
				}
				return -1;
			}
			c->len += (size_t)r;
			r = answer_complete(c);
			if (r < 0 || (r == 1 && c->len > c->need))
				return -1; /* or an answer nobody asked for */
			if (r == 0)
				break;
			w->requests++;
			c->ticketed = false;
			latency_add(w, c);
			if (stopping)
				return 1;
			if (mode == M_NEW || c->close_after) {
				conn_drop(c);
				return conn_open(c) < 0 ? -1 : 1;
			}
			c->st = S_SEND;
			break;
		case S_IDLE: {
			/* A session ticket, or the end: either way, drain. */
			char scratch[4096];
			r = SSL_read(c->ssl, scratch, sizeof(scratch));
			if (r > 0)
				break;
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ) {
				c->mask = EPOLLIN;
				return 0;
			}
			atomic_fetch_sub(&w->ready, 1);
			atomic_fetch_add(&w->failed, 1);
			conn_drop(c);
			return 1;
		}
		case S_PARK:
			return -1; /* the tunnel failed while it waited */
		case S_OFF:
			return 1;
		}
	}
}

/* Idle mode: opens the next tunnels while fewer than IDLE_RAMP are on
 * their way. */
static void
ramp(struct worker *w)
{
	while (w->inflight < IDLE_RAMP && w->next < w->nconns) {
		struct conn *c = &w->conns[w->next++];
		w->inflight++;
		if (conn_open(c) < 0) {
			w->inflight--;
			atomic_fetch_add(&w->failed, 1);
		}
	}
}

static void
on_event(struct conn *c)
{
	struct worker *w = c->w;
	int r = advance(c);

	if (r < 0) {
		w->errors++;
		if (c->st == S_PARK)
			atomic_fetch_sub(&parked[c->park_phase], 1);
		conn_drop(c);
		if (mode == M_IDLE) {
			if (++c->tries < IDLE_TRIES && conn_open(c) == 0)
				return;
			w->inflight--;
			atomic_fetch_add(&w->failed, 1);
			ramp(w);
			return;
		}
		if (!stopping)
			(void)conn_open(c);
		return;
	}
	if (mode == M_IDLE)
		ramp(w);
	if (r > 0 || c->fd < 0 || c->mask == c->armed)
		return;
	struct epoll_event ev = { .events = c->mask, .data.ptr = c };
	if (epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		w->errors++;
		conn_drop(c);
		return;
	}
	c->armed = c->mask;
}

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[256];

	if (mode == M_IDLE) {
		ramp(w);
	} else {
		for (size_t i = 0; i < w->nconns; i++)
			if (conn_open(&w->conns[i]) < 0)
				w->errors++;
	}
	while (!stopping) {
		int n = epoll_wait(w->ep, evs, 256, 100);
		if (mode != M_IDLE && past(&deadline))
			break;
		for (int i = 0; i < n; i++)
			on_event(evs[i].data.ptr);
		int ph = atomic_load(&phase);
		if (ph != w->phase_seen) {
			/* The next phase: every parked connection sends. */
			w->phase_seen = ph;
			for (size_t i = 0; i < w->nconns; i++) {
				struct conn *c = &w->conns[i];
				if (c->st != S_PARK)
					continue;
				atomic_fetch_sub(&parked[c->park_phase], 1);
				c->st = S_SEND;
				on_event(c);
			}
		}
	}
	return NULL;
}

/* Whether every one of the conns connections is parked in phase ph, or the
 * time is up (then false). */
static bool
all_parked(int ph, long conns)
{
	while (!past(&deadline)) {
		if (atomic_load(&parked[ph]) == (size_t)conns)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* -w, -n: the warm-up, "warm N" and a line read, the window (its start in
 * *t0, its end in *t1, the counts and latencies only its own), then the
 * figures are the caller's to print, the tunnels held until standard
 * input closes. */
static void
window(struct worker *ws, long threads, long conns, struct timespec *t0,
    struct timespec *t1)
{
	char b[64];

	if (warm > 0) {
		bool ok = all_parked(0, conns);
		uint64_t n = 0;
		for (long i = 0; i < threads; i++)
			n += atomic_load(&ws[i].requests);
		printf("warm %llu%s\n", (unsigned long long)n,
		    ok ? "" : " timeout");
		fflush(stdout);
		/* Every connection parked: no worker counts now. */
		for (long i = 0; i < threads; i++) {
			atomic_store(&ws[i].requests, 0);
			atomic_store(&ws[i].errors, 0);
			memset(ws[i].hist, 0, HIST_N * sizeof(*ws[i].hist));
		}
		if (fgets(b, sizeof(b), stdin) == NULL)
			return;
		clock_gettime(CLOCK_MONOTONIC, t0);
		atomic_store(&phase, 1);
	} else {
		clock_gettime(CLOCK_MONOTONIC, t0);
	}
	(void)all_parked(1, conns);
	clock_gettime(CLOCK_MONOTONIC, t1);
}

/* After a window: holds the tunnels until standard input closes. */
static void
hold(void)
{
	char b[64];

	while (fgets(b, sizeof(b), stdin) != NULL)
		;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: tlsload -x PROXY_PORT -h HOST -p PORT [-u PATH] "
	    "[-c CONNS] [-t THREADS] [-d SECONDS] [-m keepalive|new|idle] "
	    "[-w WARM -n REQUESTS] [-H \"Name: value\"]...\n");
	exit(64);
}

int
main(int argc, char **argv)
{
	const char *path = "/", *headers[HEADERS_MAX];
	size_t nheaders = 0;
	char extra[2048] = "";
	long conns = 50, threads = 2, pport = 0, port = 0;
	double secs = 10;
	struct worker *ws;
	struct timespec t0, t1;
	int opt;

	while ((opt = getopt(argc, argv, "x:h:p:u:c:t:d:m:H:w:n:")) != -1) {
		switch (opt) {
		case 'x':
			pport = strtol(optarg, NULL, 10);
			break;
		case 'h':
			host = optarg;
			break;
		case 'p':
			port = strtol(optarg, NULL, 10);
			break;
		case 'u':
			path = optarg;
			break;
		case 'c':
			conns = strtol(optarg, NULL, 10);
			break;
		case 't':
			threads = strtol(optarg, NULL, 10);
			break;
		case 'd':
			secs = strtod(optarg, NULL);
			break;
		case 'w':
			warm = strtol(optarg, NULL, 10);
			break;
		case 'n':
			window_n = strtol(optarg, NULL, 10);
			break;
		case 'H':
			if (nheaders == HEADERS_MAX || strpbrk(optarg, "\r\n"))
				usage();
			headers[nheaders++] = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "keepalive") == 0)
				mode = M_KEEPALIVE;
			else if (strcmp(optarg, "new") == 0)
				mode = M_NEW;
			else if (strcmp(optarg, "idle") == 0)
				mode = M_IDLE;
			else
				usage();
			break;
		default:
			usage();
		}
	}
	direct = pport == 0;
	if (host == NULL || pport < 0 || pport > 65535 || port <= 0 ||
	    port > 65535 || conns <= 0 || threads <= 0 || !(secs > 0) ||
	    secs > 86400 || warm < 0 || window_n < 0 ||
	    ((warm > 0 || window_n > 0) &&
		(mode != M_KEEPALIVE || window_n == 0)))
		usage();
	if (threads > conns)
		threads = conns;
	signal(SIGPIPE, SIG_IGN);
	if (direct) {
		/* Where the name leads, as any client would look it up. */
		struct addrinfo hints = { .ai_family = AF_INET,
			.ai_socktype = SOCK_STREAM },
				*ai;
		int gr = getaddrinfo(host, NULL, &hints, &ai);
		if (gr != 0) {
			fprintf(stderr, "tlsload: %s: %s\n", host,
			    gai_strerror(gr));
			return 1;
		}
		memcpy(&proxy, ai->ai_addr, sizeof(proxy));
		freeaddrinfo(ai);
		pport = port;
	} else {
		proxy.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	proxy.sin_port = htons((uint16_t)pport);
	for (size_t i = 0; i < nheaders; i++) {
		size_t used = strlen(extra);
		int n = snprintf(extra + used, sizeof(extra) - used, "%s\r\n",
		    headers[i]);
		if (n < 0 || (size_t)n >= sizeof(extra) - used)
			usage();
	}
	connect_len = (size_t)snprintf(connect_req, sizeof(connect_req),
	    "CONNECT %s:%ld HTTP/1.1\r\nHost: %s:%ld\r\n\r\n", host, port, host,
	    port);
	get_len = (size_t)snprintf(get_req, sizeof(get_req),
	    "GET %s HTTP/1.1\r\nHost: %s:%ld\r\n%s%s\r\n", path, host, port,
	    extra, mode == M_NEW ? "Connection: close\r\n" : "");
	if (connect_len >= sizeof(connect_req) || get_len >= sizeof(get_req))
		usage();

	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL)
		return 1;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);

	ws = calloc((size_t)threads, sizeof(*ws));
	if (ws == NULL)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	deadline = t0;
	deadline.tv_sec += (time_t)secs;
	deadline.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	atomic_store(&phase, warm > 0 ? 0 : 1);
	for (long i = 0; i < threads; i++) {
		struct worker *w = &ws[i];
		w->nconns = (size_t)(conns / threads + (i < conns % threads));
		w->conns = calloc(w->nconns, sizeof(*w->conns));
		w->ep = epoll_create1(EPOLL_CLOEXEC);
		w->hist = calloc(HIST_N, sizeof(*w->hist));
		if (w->conns == NULL || w->ep < 0 || w->hist == NULL)
			return 1;
		for (size_t k = 0; k < w->nconns; k++) {
			w->conns[k].w = w;
			w->conns[k].fd = -1;
			w->conns[k].st = S_OFF;
		}
		w->phase_seen = atomic_load(&phase);
		if (pthread_create(&w->thread, NULL, worker_run, w) != 0)
			return 1;
	}
	if (window_n > 0)
		window(ws, threads, conns, &t0, &t1);

	if (mode == M_IDLE) {
		size_t ready, failed;
		do {
			usleep(50 * 1000);
			ready = failed = 0;
			for (long i = 0; i < threads; i++) {
				ready += atomic_load(&ws[i].ready);
				failed += atomic_load(&ws[i].failed);
			}
		} while (ready + failed < (size_t)conns && !past(&deadline));
		printf("ready %zu failed %zu\n", ready, failed);
		fflush(stdout);
		/* Held until stdin closes or the time is up. */
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		char b[64];
		while (!past(&deadline)) {
			if (poll(&pfd, 1, 100) > 0 &&
			    read(0, b, sizeof(b)) <= 0)
				break;
		}
	}
	/* Idle mode and a window stop here; the others at the deadline, on
	 * their own. */
	if (mode == M_IDLE || window_n > 0)
		stopping = true;
	uint64_t requests = 0, errors = 0;
	static uint64_t hist[HIST_N];
	for (long i = 0; i < threads; i++) {
		pthread_join(ws[i].thread, NULL);
		requests += atomic_load(&ws[i].requests);
		errors += atomic_load(&ws[i].errors);
		for (size_t k = 0; k < HIST_N; k++)
			hist[k] += ws[i].hist[k];
	}
	if (window_n == 0)
		clock_gettime(CLOCK_MONOTONIC, &t1);
	if (mode != M_IDLE) {
		double s = (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		printf("requests %llu errors %llu seconds %.2f rps %.1f "
		       "p50_ms %.2f p99_ms %.2f\n",
		    (unsigned long long)requests, (unsigned long long)errors, s,
		    (double)requests / s, percentile(hist, requests, 0.50),
		    percentile(hist, requests, 0.99));
	}
	if (window_n > 0) {
		fflush(stdout);
		hold();
	}
	return 0;
}
