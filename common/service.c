/*
 * Flags, listening sockets and signals for the four programs.
 */
#include "service.h"

#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

/*
 * The flag getopt stopped at: the long one as typed (without "=value"),
 * or the short one, which may sit inside a group ("-xn").
 */
static const char *
flag_name(const char *arg, int opt, char *buf, size_t len)
{
	if (strncmp(arg, "--", 2) == 0)
		snprintf(buf, len, "%.*s", (int)strcspn(arg, "="), arg);
	else
		snprintf(buf, len, "-%c", opt != 0 ? opt : '?');
	return buf;
}

int
service_parse_args(int argc, char **argv, const char *prog, const char *summary,
    struct service_args *ret)
{
	char flag[64];
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*ret = (struct service_args){ 0 };
	optind = 0;
	opterr = 0;
	while (
	    (c = getopt_long(argc, argv, ":hVc:l:n", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("usage: %s [-n] [--config FILE] [--listen "
			       "ADDR]\n"
			       "\n%s\n\n"
			       "  --config FILE  JSON configuration (default: "
			       "built in, loopback, state under ./var/)\n"
			       "  --listen ADDR  host:port to serve HTTP on, "
			       "overriding the config\n"
			       "  -n             check the configuration and "
			       "exit\n"
			       "  --help         this text\n"
			       "  --version      the version\n",
			    prog, summary);
			return 0;
		case 'V':
			printf("%s %s\n", prog, CORDON_VERSION);
			return 0;
		case 'c':
			ret->config_path = optarg;
			break;
		case 'l':
			ret->listen = optarg;
			break;
		case 'n':
			ret->check_only = true;
			break;
		case ':':
			fprintf(stderr,
			    "%s: %s needs an argument (try --help)\n", prog,
			    flag_name(argv[optind - 1], optopt, flag,
				sizeof(flag)));
			return EXIT_USAGE;
		default:
			fprintf(stderr, "%s: unknown option %s (try --help)\n",
			    prog,
			    flag_name(argv[optind - 1], optopt, flag,
				sizeof(flag)));
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\" (try --help)\n",
		    prog, argv[optind]);
		return EXIT_USAGE;
	}
	return -1;
}

int
service_configure(const struct service_args *args, const char *prog,
    const char *svc, const char *default_listen,
    const struct config_option *opts, size_t nopts, void *cfg,
    struct config_common *common)
{
	struct sockaddr_storage addr;
	socklen_t alen;
	char err[512];

	common->log_level = LEVEL_INFO;
	if (common->listen == NULL &&
	    config_set_string(&common->listen, default_listen) < 0)
		goto nomem;
	if (args->config_path != NULL &&
	    config_load(args->config_path, opts, nopts, cfg, err, sizeof(err)) <
		0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return EXIT_CONFIG;
	}
	if (args->listen != NULL) {
		if (service_parse_addr(args->listen, &addr, &alen) < 0) {
			fprintf(stderr,
			    "%s: --listen %s: not a host:port with "
			    "a numeric address\n",
			    prog, args->listen);
			return EXIT_USAGE;
		}
		if (config_set_string(&common->listen, args->listen) < 0)
			goto nomem;
	}
	if (service_parse_addr(common->listen, &addr, &alen) < 0) {
		fprintf(stderr,
		    "%s: config: \"listen\" %s is not a host:port "
		    "with a numeric address\n",
		    prog, common->listen);
		return EXIT_CONFIG;
	}
	if (config_default_dirs(common, svc) < 0)
		goto nomem;
	return -1;
nomem:
	fprintf(stderr, "%s: out of memory\n", prog);
	return EXIT_OSERR;
}

int
service_open(struct config_common *common, int *ret_fd, char *ret_addr,
    size_t addrlen)
{
	const char *failed = NULL;
	int r, fd;

	r = config_make_dirs(common, &failed);
	if (r < 0) {
		log_error("state_dir_failed", "{s:s, s:s}", "path", failed,
		    "error", strerror(-r));
		return EXIT_OSERR;
	}
	fd = service_listen(common->listen);
	if (fd < 0) {
		log_error("listen_failed", "{s:s, s:s}", "addr", common->listen,
		    "error", strerror(-fd));
		return EXIT_OSERR;
	}
	if (service_sockname(fd, ret_addr, addrlen) < 0)
		snprintf(ret_addr, addrlen, "%s", common->listen);
	*ret_fd = fd;
	return -1;
}

/* service_notify_connect's socket, or -1. */
static int notify_fd = -1;

int
service_notify_connect(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n;
	int fd;

	if (path == NULL || path[0] == '\0' || notify_fd >= 0)
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sun.sun_path))
		return -EINVAL;
	memcpy(sun.sun_path, path, n);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun,
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	notify_fd = fd;
	return 0;
}

int
service_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n;
	socklen_t len;
	int fd, r = 0;

	if (path == NULL || path[0] == '\0')
		return 0;
	/* Never waits: a full socket (its reader too busy) is -EAGAIN, the
	 * message lost, rather than the daemon's loop stopped in a send. */
	if (notify_fd >= 0)
		return send(notify_fd, state, strlen(state),
			   MSG_NOSIGNAL | MSG_DONTWAIT) < 0
		    ? -errno
		    : 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sun.sun_path))
		return -EINVAL;
	memcpy(sun.sun_path, path, n);
	if (path[0] == '@')
		sun.sun_path[0] = '\0'; /* an abstract socket */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT,
		(struct sockaddr *)&sun, len) < 0)
		r = -errno;
	close(fd);
	return r;
}

int
service_watchdog_ms(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	char *end;
	unsigned long long us;

	if (usec == NULL)
		return 0;
	/* Meant for another process (a child of ours, say): not us. */
	if (pid != NULL && strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	errno = 0;
	us = strtoull(usec, &end, 10);
	if (errno != 0 || *end != '\0' || us == 0)
		return 0;
	/* Ping at half the interval, as sd_watchdog_enabled advises. */
	us /= 2000;
	return us == 0 ? 1 : us > 3600000 ? 3600000 : (int)us;
}

void
service_ready(const struct config_common *common, const char *addr)
{
	char status[128];

	log_info("listening", "{s:s, s:s, s:s, s:s, s:i}", "addr", addr,
	    "state_dir", common->state_dir, "runtime_dir", common->runtime_dir,
	    "logs_dir", common->logs_dir, "pid", (int)getpid());
	snprintf(status, sizeof(status), "READY=1\nSTATUS=listening on %s",
	    addr);
	service_notify(status);
}

int
service_parse_addr(const char *s, struct sockaddr_storage *addr,
    socklen_t *ret_len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = s;
	size_t hlen;
	char *end;
	long port;

	memset(addr, 0, sizeof(*addr));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || errno != 0 || port > 65535)
		return -EINVAL;
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");

	struct sockaddr_in *in4 = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*ret_len = sizeof(*in4);
		return 0;
	}
	if (s[0] == '[' && inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

int
service_listen(const char *s)
{
	struct sockaddr_storage addr;
	_cleanup_close_ int fd = -1;
	socklen_t len;
	int one = 1;

	if (service_parse_addr(s, &addr, &len) < 0)
		return -EINVAL;
	fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (addr.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, len) < 0)
		return -errno;
	if (listen(fd, SOMAXCONN) < 0)
		return -errno;
	return steal_fd(&fd);
}

int
service_sockname(int fd, char *buf, size_t len)
{
	struct sockaddr_storage addr;
	socklen_t alen = sizeof(addr);
	char host[INET6_ADDRSTRLEN];
	int n;

	if (getsockname(fd, (struct sockaddr *)&addr, &alen) < 0)
		return -errno;
	if (addr.ss_family == AF_INET) {
		struct sockaddr_in *in4 = (struct sockaddr_in *)&addr;
		inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
		n = snprintf(buf, len, "%s:%u", host, ntohs(in4->sin_port));
	} else if (addr.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&addr;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		n = snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else
		return -EAFNOSUPPORT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static sigset_t
service_sigset(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	return set;
}

void
service_block_signals(void)
{
	sigset_t set = service_sigset();

	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int
service_wait_signal(int timeout_ms)
{
	sigset_t set = service_sigset();
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long)(timeout_ms % 1000) * 1000000,
	};
	int sig = sigtimedwait(&set, NULL, &ts);

	return sig > 0 ? sig : 0;
}

void
service_wait_stop(void (*tick)(void *ctx), void *ctx, int tick_ms)
{
	int wd = service_watchdog_ms(), wait = tick != NULL ? tick_ms : 60000;
	int sig;

	if (wd > 0 && wd < wait)
		wait = wd;
	while ((sig = service_wait_signal(wait)) == 0 || sig == SIGHUP) {
		if (sig == SIGHUP)
			log_info("sighup_ignored", NULL);
		else if (tick != NULL)
			tick(ctx);
		/* Alive as long as this loop turns. */
		if (wd > 0)
			service_notify("WATCHDOG=1");
	}
	service_notify("STOPPING=1");
	log_info("stopping", "{s:s}", "signal", sigabbrev_np(sig));
}

int
service_config_ok(const char *prog)
{
	printf("%s: configuration ok\n", prog);
	return 0;
}

int
service_serve(struct http_server_config *http,
    const struct config_common *common, const char *addr,
    void (*tick)(void *ctx), int tick_ms)
{
	struct http_server *srv;
	int r;

	r = http_server_start(http, &srv);
	if (r < 0) {
		log_error("http_failed", "{s:s}", "error", strerror(-r));
		return EXIT_OSERR;
	}
	service_ready(common, addr);
	service_wait_stop(tick, http->ctx, tick_ms);
	http_server_stop(srv, SERVICE_GRACE_MS);
	log_info("stopped", NULL);
	return 0;
}
