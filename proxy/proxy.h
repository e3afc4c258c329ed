/*
 * cordon-proxy: the reachability plane. Default-deny egress per job: each
 * job reaches the world only through its own channel, a unix socket the
 * proxy made for it, and every decision is a log line. Single process,
 * event-driven on libevent; the control API is the common HTTP glue run
 * from the same event loop.
 */
#ifndef CORDON_PROXY_H
#define CORDON_PROXY_H

#include "config.h"
#include "http_server.h"

#include <event2/event.h>
#include <stdbool.h>
#include <time.h>

#define PROXY_PROG "cordon-proxy"
#define PROXY_LISTEN "127.0.0.1:7702"

struct proxy_config {
	struct config_common common;
};

struct proxy {
	struct proxy_config cfg;
	struct event_base *base;
	struct http_server *http;
	struct event *http_ev; /* the control API's descriptor */
	struct event *http_tick; /* its timeouts */
	struct event *sigs[3];
	struct event *drain; /* after SIGTERM: wait for requests in flight */
	struct event *watchdog; /* WATCHDOG=1 while the loop turns */
	struct timespec stop_at;
};

#endif
