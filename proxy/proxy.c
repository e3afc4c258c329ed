/*
 * cordon-proxy: main. Flags, log, config, -n check, state dir, listen,
 * then one libevent loop for everything; SIGTERM stops accepting and lets
 * requests in flight finish for up to 5 s.
 */
#include "proxy.h"

#include "log.h"
#include "service.h"
#include "util.h"

#include <signal.h>
#include <string.h>

static const struct config_option proxy_options[] = {
	CONFIG_COMMON_OPTIONS(offsetof(struct proxy_config, common)),
};

/* Runs the control API and re-arms its timer for MHD's next timeout. */
static void
on_http(evutil_socket_t fd, short what, void *cls)
{
	struct proxy *p = cls;
	int ms;

	(void)fd;
	(void)what;
	http_server_run(p->http);
	ms = http_server_timeout_ms(p->http);
	if (ms >= 0) {
		struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
		evtimer_add(p->http_tick, &tv);
	}
}

static void
on_drain(evutil_socket_t fd, short what, void *cls)
{
	struct proxy *p = cls;
	struct timespec now;

	(void)fd;
	(void)what;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (http_server_in_flight(p->http) == 0 ||
	    now.tv_sec > p->stop_at.tv_sec ||
	    (now.tv_sec == p->stop_at.tv_sec &&
		now.tv_nsec >= p->stop_at.tv_nsec))
		event_base_loopbreak(p->base);
}

static void
on_signal(evutil_socket_t sig, short what, void *cls)
{
	static const struct timeval tick = { 0, 10 * 1000 };
	struct proxy *p = cls;

	(void)what;
	if (sig == SIGHUP) {
		log_info("sighup_ignored", NULL);
		return;
	}
	if (p->drain != NULL)
		return;
	service_notify("STOPPING=1");
	log_info("stopping", "{s:s}", "signal", sigabbrev_np(sig));
	http_server_quiesce(p->http);
	clock_gettime(CLOCK_MONOTONIC, &p->stop_at);
	p->stop_at.tv_sec += SERVICE_GRACE_MS / 1000;
	p->drain = event_new(p->base, -1, EV_PERSIST, on_drain, p);
	if (p->drain == NULL || event_add(p->drain, &tick) < 0)
		event_base_loopbreak(p->base);
}

/* Answers systemd's watchdog from the event loop: if the loop hangs, the
 * pings stop and systemd restarts the proxy. */
static void
on_watchdog(evutil_socket_t fd, short what, void *cls)
{
	(void)fd;
	(void)what;
	(void)cls;
	service_notify("WATCHDOG=1");
}

static int
proxy_events(struct proxy *p)
{
	static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
	int wd = service_watchdog_ms();

	p->http_ev = event_new(p->base, http_server_fd(p->http),
	    EV_READ | EV_PERSIST, on_http, p);
	p->http_tick = evtimer_new(p->base, on_http, p);
	if (p->http_ev == NULL || p->http_tick == NULL ||
	    event_add(p->http_ev, NULL) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++) {
		p->sigs[i] = evsignal_new(p->base, signals[i], on_signal, p);
		if (p->sigs[i] == NULL || event_add(p->sigs[i], NULL) < 0)
			return -ENOMEM;
	}
	if (wd > 0) {
		struct timeval tv = { wd / 1000, (wd % 1000) * 1000 };
		p->watchdog =
		    event_new(p->base, -1, EV_PERSIST, on_watchdog, p);
		if (p->watchdog == NULL || event_add(p->watchdog, &tv) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void
proxy_free(struct proxy *p)
{
	if (p->http_ev != NULL)
		event_free(p->http_ev);
	if (p->http_tick != NULL)
		event_free(p->http_tick);
	if (p->drain != NULL)
		event_free(p->drain);
	if (p->watchdog != NULL)
		event_free(p->watchdog);
	for (size_t i = 0; i < ARRAY_SIZE(p->sigs); i++)
		if (p->sigs[i] != NULL)
			event_free(p->sigs[i]);
	http_server_stop(p->http, 0);
	if (p->base != NULL)
		event_base_free(p->base);
	config_common_free(&p->cfg.common);
}

int
main(int argc, char **argv)
{
	struct proxy p = { 0 };
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	signal(SIGPIPE, SIG_IGN);
	r = service_parse_args(argc, argv, PROXY_PROG,
	    "The reachability plane: default-deny egress per job, TLS "
	    "terminated, every decision logged.",
	    &args);
	if (r >= 0)
		return r;
	r = service_configure(&args, PROXY_PROG, "proxy", PROXY_LISTEN,
	    proxy_options, ARRAY_SIZE(proxy_options), &p.cfg, &p.cfg.common);
	if (r >= 0)
		goto out;
	if (args.check_only) {
		r = service_config_ok(PROXY_PROG);
		goto out;
	}

	log_init("proxy", p.cfg.common.log_level);
	r = service_open(&p.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	p.base = event_base_new();
	if (p.base == NULL) {
		log_error("event_base_failed", NULL);
		r = EXIT_OSERR;
		goto out;
	}
	struct http_server_config http = {
		.svc = "proxy",
		.listen_fd = steal_fd(&fd),
		.threads = 0,
		.ctx = &p,
	};
	r = http_server_start(&http, &p.http);
	if (r == 0)
		r = proxy_events(&p);
	if (r < 0) {
		log_error("http_failed", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	service_ready(&p.cfg.common, addr);

	event_base_dispatch(p.base);
	log_info("stopped", NULL);
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	proxy_free(&p);
	return r;
}
