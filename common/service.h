/*
 * What the four programs' mains share: the flags every service takes,
 * listening sockets from "host:port", and signal handling. main stays a
 * straight line: flags, log, config, -n check, open sockets, serve, stop.
 */
#ifndef CORDON_SERVICE_H
#define CORDON_SERVICE_H

#include "config.h"
#include "http_server.h"

#include <stdbool.h>
#include <sys/socket.h>

struct service_args {
	const char *config_path;
	const char *listen;
	bool check_only;
};

/*
 * Parses --help, --version, --config FILE, --listen ADDR and -n. Returns
 * -1 when the program should go on, or the status to exit with: 0 after
 * --help or --version (printed on stdout), EXIT_USAGE after one line on
 * stderr for a bad flag or a stray argument.
 */
int service_parse_args(int argc, char **argv, const char *prog,
    const char *summary, struct service_args *ret);

/*
 * Builds the configuration: default_listen and log level "info", then the
 * file named by --config (if any) through opts into cfg, then --listen;
 * fills the directories left unset. Returns -1 when the program should go
 * on, or the status to exit with after one line on stderr: EXIT_CONFIG for
 * a bad file or value, EXIT_USAGE for a bad --listen.
 */
int service_configure(const struct service_args *args, const char *prog,
    const char *svc, const char *default_listen,
    const struct config_option *opts, size_t nopts, void *cfg,
    struct config_common *common);

/*
 * Creates the state, runtime and logs directories and opens the listening
 * socket. Returns -1 when the program should go on, with *ret_fd set and
 * the bound "host:port" in ret_addr, or EXIT_OSERR after logging why.
 */
int service_open(struct config_common *common, int *ret_fd, char *ret_addr,
    size_t addrlen);

/*
 * Tells systemd the state ("READY=1", "WATCHDOG=1", "STOPPING=1") over
 * $NOTIFY_SOCKET; nothing when it is unset. 0 or -errno; never waits: a
 * socket its reader left full is -EAGAIN and the message is lost.
 */
int service_notify(const char *state);

/*
 * Connects a socket to $NOTIFY_SOCKET now, for every later
 * service_notify: a process that gives up its uid keeps the right to
 * tell systemd (cordon serve's HTTP part). 0 (also when it is unset) or
 * -errno.
 */
int service_notify_connect(void);

/* How often to send WATCHDOG=1: half of $WATCHDOG_USEC in ms (when
 * $WATCHDOG_PID is unset or ours), or 0 when there is no watchdog. */
int service_watchdog_ms(void);

/* Says the service is serving: the "listening" line that tests and
 * operators wait for, with the address and directories, and READY=1. */
void service_ready(const struct config_common *common, const char *addr);

#define SERVICE_ADDR_MAX 64

/*
 * Parses "127.0.0.1:7701", "[::1]:7701" or "localhost:7701" (the only
 * name allowed; no resolver is asked) into addr: 0 or -EINVAL.
 */
int service_parse_addr(const char *s, struct sockaddr_storage *addr,
    socklen_t *ret_len);

/* Opens a listening TCP socket on s (nonblocking, cloexec): fd or -errno. */
int service_listen(const char *s);

/* Writes the bound address of fd as "host:port" into buf: 0 or -errno. */
int service_sockname(int fd, char *buf, size_t len);

/*
 * Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (threads started
 * later inherit the mask) and ignores SIGPIPE, so that the main thread
 * alone takes them with service_wait_signal.
 */
void service_block_signals(void);

/* Waits up to timeout_ms for a blocked signal: its number, or 0. */
int service_wait_signal(int timeout_ms);

/* Waits for SIGTERM or SIGINT (SIGHUP is logged and ignored for now),
 * calling tick(ctx) every tick_ms when tick is not NULL and answering the
 * watchdog, then says STOPPING=1 and logs "stopping" with the signal. */
void service_wait_stop(void (*tick)(void *ctx), void *ctx, int tick_ms);

/* Prints "<prog>: configuration ok" for -n and returns 0. */
int service_config_ok(const char *prog);

/* How long a stopping service lets requests in flight finish. */
#define SERVICE_GRACE_MS 5000

/*
 * Serves http (its own threads) until SIGTERM or SIGINT, calling tick
 * (when not NULL) with http->ctx every tick_ms meanwhile, then lets the
 * requests in flight finish for up to SERVICE_GRACE_MS. Returns the exit
 * status: 0, or EXIT_OSERR when the server could not start.
 */
int service_serve(struct http_server_config *http,
    const struct config_common *common, const char *addr,
    void (*tick)(void *ctx), int tick_ms);

#endif
