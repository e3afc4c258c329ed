/*
 * cordon-proxy: the reachability plane. Default-deny egress per job: each
 * job reaches the world only through its own channel, a unix socket the
 * proxy made for it, and every decision is a log line. Single process,
 * event-driven on libevent; the control API is the common HTTP glue run
 * from the same event loop.
 *
 * The files: proxy.c (main, config, the loop; wires the broker client's
 * revocations to the jobs), control.c (the control API), brokerclient.c
 * (the proxy's client of cordon-broker: rules, introspection, the
 * revocation feed; it knows no job), job.c (a job: its channel, its
 * admission of connections, CA and log), pool.c (a job's idle upstream
 * connections), tls.c (both sides' TLS), conn.c (the state machine of
 * one connection, request by request). In the testable core library
 * (cordon_proxy_core): verdict.c (pure: a request head, the job's rules
 * and the feed's state -> a decision; the broker's word on a token; the
 * address to connect to; the refusal the job reads), tokens.c (a
 * request's token shapes and their verdicts), forward.c (the head as it
 * goes upstream), egress.c (the rules), http1.c, response.c, sni.c, ca.c,
 * decision.c. A new input (a connection captured by SNI or Host) enters
 * as a CONNECT or an absolute-form request and meets the same verdict; a
 * change to what goes upstream (a credential swapped for a token) lands
 * in forward.c, after every verdict.
 */
#ifndef CORDON_PROXY_H
#define CORDON_PROXY_H

#include "brokerclient.h"
#include "buf.h"
#include "ca.h"
#include "config.h"
#include "decision.h"
#include "denials.h"
#include "egress.h"
#include "guard.h"
#include "http_server.h"
#include "inject.h"
#include "keys.h"
#include "pool.h"
#include "reflect.h"
#include "scanbudget.h"
#include "tokcache.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

#define PROXY_PROG "cordon-proxy"
#define PROXY_LISTEN "127.0.0.1:7702"
#define PROXY_BROKER "http://127.0.0.1:7701"

#define JOB_ID_MAX 63
/* A revoked or deleted job's log stays readable this long. */
/* Per job, the decision lines kept for GET /v1/jobs/{job}/log. */
#define JOB_LOG_MAX (4 * 1024 * 1024)
/* Descriptors kept for everything but the jobs' connections and the
 * broker client's (counted apart: brokerclient_descriptors): the control
 * API, the resolver, the logs, the listeners. */
#define PROXY_FD_RESERVE 64
/* One job may hold at most this share of the rest (1/4): it takes four
 * flooding jobs to fill the proxy, and then only with new connections. */
#define PROXY_FD_SHARE 4
/* A refusal a job can repeat (at accept) is one line per this long. */
#define REFUSAL_BURST_MS 1000
/* Denials a job may have written as lines of their own: a burst of this
 * many, then this many a second; past it they are counted, by reason, and
 * told in one line each second with their "count". */
#define DENY_LINES_BURST 200
#define DENY_LINES_RATE 20
#define DENY_HELD_MAX 24 /* more than there are reasons */
/* The same of allowed decisions (the proxy's allow_lines_burst and
 * allow_lines_per_second), held past it by host, status and injected
 * secret, this many kinds of them at once. One that finds them all taken
 * has them told at once, this many times a second; past that it is
 * counted in the job's one overflow line (host null, held_overflow), or,
 * injected, gets a line of its own: never added to another's. */
#define ALLOW_HELD_MAX 16
#define ALLOW_EARLY_FLUSHES 4

struct proxy_config {
	struct config_common common;
	char *broker; /* "http://127.0.0.1:7701" */
	char *protected; /* endpoints no rule reaches (egress.h), or NULL */
	char *broker_key_file; /* the verifier key */
	char *launcher_key_file; /* for the control API (broader) */
	char *launcher_key_sha256; /* the launcher's key by its hash alone */
	char *admin_key_file; /* GET /v1/decisions (decisions_api.c) */
	char *admin_key_sha256; /* or the admin key by its hash alone */
	long long launcher_uid; /* the only peer a channel accepts */
	char *upstream_ca_file; /* NULL: the system's trust store */
	char *hosts_file; /* extra names for the resolver (tests) */
	char *follower; /* the name the feed knows this proxy by */
	long long max_conns_per_job;
	long long connect_timeout_ms;
	long long idle_timeout_ms;
	long long head_timeout_ms;
	long long closed_job_linger_s; /* a closed job's log stays this long */
	long long inject_cache_s; /* a released value is reused this long */
	long long token_cache_s; /* a token's good answer is reused this long */
	long long bindings_refresh_s; /* GET /v1/bindings this often */
	/* A job's budget of scan steps (scanbudget.h): a second's, and
	 * the most held at once; 0 steps a second: none. */
	long long scan_steps_per_s, scan_steps_burst;
	/* Allowed decisions a job may have written as lines of their own:
	 * a burst, then so many a second; past it counted (job.c). */
	long long allow_lines_per_s, allow_lines_burst;
	long long reflect_limit; /* a job's answers that reflect a value of
				  * its own */
};

struct pconn;

/* POST /v1/bindings calls in flight at once (conn.c, the guard): one a
 * secret and address, the injected requests that wait for its answer
 * before a byte goes there on its list. */
#define GUARD_TELLS 16
struct guard_tell {
	struct proxy *p;
	char secret[GUARD_NAME_MAX + 1];
	char job[GUARD_NAME_MAX + 1];
	char addr[GUARD_ADDR_MAX]; /* normalised (guard_addr_normalise) */
	bool used;
	LIST_HEAD(, pconn) waiters;
};

struct release_flight;
struct pjob;
struct control_open;
TAILQ_HEAD(pconn_list, pconn);
TAILQ_HEAD(pjob_list, pjob);
TAILQ_HEAD(open_list, control_open);

/* A job the launcher opened a channel for. */
struct pjob {
	TAILQ_ENTRY(pjob) link;
	struct proxy *p;
	char id[JOB_ID_MAX + 1];
	struct egress_rules rules;
	struct job_ca *ca;
	time_t deadline;
	char *channel; /* the socket's path */
	struct evconnlistener *listener; /* NULL once closed */
	struct pconn_list conns;
	unsigned nconns;
	struct pool pool; /* idle upstream connections (pool.c) */
	uint64_t next_conn;
	bool closed; /* deleted or revoked: no more bytes */
	const char *closed_why; /* "revoked", "deleted" */
	time_t closed_at;
	struct buf log; /* decision lines, up to JOB_LOG_MAX */
	uint64_t log_dropped;
	uint64_t allowed, denied;
	uint64_t upstream_errors; /* decisions with error set, apart */
	/* The last denials, for http://cordon.local/v1/denials (denials.h);
	 * forgotten when the channel closes. */
	struct denials denials;
	/* The values released for the job's injecting rules (inject.h),
	 * wiped when the channel closes. */
	struct inject_cache secrets;
	/* Every value released to it in its life, each version: what
	 * every answer it reads is scanned for (reflect.h), wiped when the
	 * channel closes. */
	struct reflect_set released;
	/* The close a trip asked for (conn.c: an answer showed a key the
	 * job must not read). */
	struct event *trip;
	/* Its budget of scan steps (conn.c, scanbudget.h), and the timer
	 * that lets its held connections read again once it has steps;
	 * the connection served first at the last refill (its id). */
	struct scanbudget scan_budget;
	struct event *scan_refill;
	uint64_t scan_first;
	/* The broker's good answers on its tokens (tokcache.h), dropped
	 * when the channel closes or the feed is lost. */
	struct tokcache tokcache;
	/* The issuer secrets whose scan set it was given (guard.h), with
	 * the list read each was asked after; the static ones', with the
	 * version each was asked at (its own release is no scan for the
	 * versions before). */
	struct guard_asked asked, asked_versions;
	/* Its releases at the broker in flight, one a secret, each with
	 * the requests waiting for its answer (conn.c); NULL: none. */
	struct release_flight *flights;
	/* Refusals at accept, one line per burst: the one being counted. */
	struct decision refused;
	struct timespec refused_since;
	struct event *accept_retry; /* the listener rests after EMFILE */
	/* The budget of denial lines, and the denials held past it. */
	double deny_tokens;
	struct timespec deny_at;
	struct {
		const char *reason, *kind;
		uint64_t count;
	} deny_held[DENY_HELD_MAX];
	double allow_tokens;
	struct timespec allow_at;
	struct {
		char host[EGRESS_HOST_MAX + 1];
		char secret[GUARD_NAME_MAX + 1]; /* "": none injected */
		int64_t secret_version;
		const char *kind;
		int status;
		uint64_t count, reflected;
	} allow_held[ALLOW_HELD_MAX];
	uint64_t allow_over; /* held past every slot: the overflow line */
	unsigned allow_early; /* early flushes since the last sweep */
};

struct proxy {
	struct proxy_config cfg;
	struct event_base *base;
	struct evdns_base *dns;
	struct http_server *http;
	struct keyring keys;
	char *verifier_key; /* for the broker; NULL when not configured */
	struct brokerclient *bclient; /* brokerclient.c */
	/* Descriptors kept from the jobs: PROXY_FD_RESERVE and the broker
	 * client's connections, set once it is made. */
	uint64_t fd_reserve;
	SSL_CTX *mitm_ctx; /* server side of terminated tunnels */
	SSL_CTX *up_ctx; /* client side towards upstreams, verifying */
	struct pjob_list jobs;
	struct open_list opens; /* POST /v1/jobs/{job} waiting on the broker */
	char *channels; /* runtime_dir/channels */
	int log_fd; /* logs_dir/decisions.log */
	struct sockaddr_storage self_addr; /* the control port */
	struct egress_protected protected; /* the brokers, cfg.protected */
	socklen_t self_len;
	uint64_t conns_open;
	uint64_t allowed, denied; /* decisions, for /metrics */
	uint64_t upstream_errors; /* decision "error", for /metrics */
	uint64_t injected, reflected; /* credentials.md, for /metrics */
	uint64_t token_cache_hits; /* tokens judged from tokcache, ditto */
	uint64_t encoded_refused; /* injected answers in a coding: 502 */
	uint64_t scan_throttled; /* holds of a job past its scan budget */
	uint64_t partial_refused; /* injected answers in part (206): 502 */
	/* The secrets' bindings and the issuer credentials kept for the
	 * scan (guard.h); requests guarded and scan releases, for /metrics;
	 * the broker being told addresses. */
	struct guard guard;
	/* The lists of bindings asked of the broker (GET /v1/bindings, the
	 * jobs' egress answers), and how many had been when the list held
	 * was taken (proxy_bindings). */
	uint64_t lists_asked, list_taken_at;
	uint64_t guarded, scan_releases;
	uint64_t bindings_told; /* POST /v1/bindings sent, for /metrics */
	struct guard_tell tells[GUARD_TELLS];

	struct event *http_ev; /* the control API's descriptor */
	struct event *http_tick; /* its timeouts */
	struct event *sigs[3];
	struct event *drain; /* after SIGTERM: wait for requests in flight */
	struct event *watchdog; /* WATCHDOG=1 while the loop turns */
	struct event *sweep; /* forgets lingering jobs */
	struct timespec stop_at;
	struct decisions_worker *decisions; /* decisions_api.c */
};

/* Runs the control API's next round soon (after a deferred answer). */
void proxy_kick(struct proxy *p);
/* A list of the bindings is being asked of the broker: the number to
 * give proxy_bindings with its answer. */
uint64_t proxy_bindings_asking(struct proxy *p);
/* The broker's array of the secrets' bindings (GET /v1/bindings, or the
 * egress answer's), read now with its epoch (an integer, or NULL) and
 * asked (proxy_bindings_asking's when it was asked): the guard's list
 * (guard.h); a bad one is logged and the last one kept, and so is the
 * list held when this one was asked before it was taken and is older by
 * its epoch (an answer that came last of two in flight). */
void proxy_bindings(struct proxy *p, const json_t *bindings,
    const json_t *epoch, uint64_t asked);

/* --- control.c ------------------------------------------------------------ */

extern const struct http_route control_routes[];
extern const size_t control_nroutes;
void control_stopping(void *ctx);
int control_health(void *ctx, json_t *out);
void control_metrics(void *ctx, struct buf *out);
/* GET /v1/decisions, the decision log for an admin (decisions_api.c):
 * read by the worker thread, answered on the loop. */
void decisions_get(void *ctx, struct http_request *req,
    struct http_response *res);
/* Starts the thread that reads the decision log for GET /v1/decisions,
 * and its pipe's event on p->base: 0 or -errno (what was made is freed
 * by decisions_worker_free). */
int decisions_worker_start(struct proxy *p);
/* The control API stops: the page being read is finished, the thread
 * joined, every page held resumed (those not read answer 503). */
void decisions_stopping(struct proxy *p);
/* decisions_stopping, then frees the worker. NULL worker is fine. */
void decisions_worker_free(struct proxy *p);

/* --- job.c ---------------------------------------------------------------- */

/* Makes the job from the broker's egress answer and opens its channel:
 * 0, -EEXIST, -EINVAL (with err), or -errno. */
int job_open(struct proxy *p, const char *id, const json_t *egress,
    struct pjob **ret, char *err, size_t errlen);
struct pjob *job_find(struct proxy *p, const char *id);
/* Closes the channel and every connection now; the log stays a while.
 * why: "revoked" or "deleted". Returns the number of connections closed. */
unsigned job_close(struct pjob *j, const char *why);
void job_free(struct pjob *j);
/* The revocation feed went silent: closes what cannot be judged request by
 * request (passthrough and upgraded tunnels) in every job. */
void job_feed_lost(struct proxy *p);
/* Forgets jobs closed longer than closed_job_linger_seconds ago, and idle
 * pooled connections. */
void job_sweep(struct proxy *p);
/* Writes one decision: to the log file, stderr and the job's log. A
 * denial past the job's budget of lines (DENY_LINES_*) is counted instead,
 * and told by job_refuse_flush. */
void job_log(struct pjob *j, const struct decision *d);
/*
 * Refuses a connection at accept (reason, detail: constant strings) with
 * a decision line, but one line per burst: the same refusal again within
 * REFUSAL_BURST_MS is counted, and told by one line with its "count" when
 * the burst ends (at the next sweep, or a different refusal).
 */
void job_refuse(struct pjob *j, const char *reason, const char *detail);
/* Writes the line of a burst of refusals whose window has passed (all, if
 * now), and the counts of denials held past the job's budget. */
void job_refuse_flush(struct pjob *j, bool now);

/* --- conn.c --------------------------------------------------------------- */

/* Takes a new connection on j's channel (fd owned), admitted by job.c:
 * the job open and within its share of the descriptors. */
void conn_accept(struct pjob *j, int fd);
/* Closes c at once, logging its open decision, if any. */
void conn_close(struct pconn *c);
/* Closes c if it is a tunnel of opaque bytes (the feed is lost). */
void conn_feed_lost(struct pconn *c);
/* The next connection of the same job, or NULL. */
struct pconn *conn_next(struct pconn *c);
/* After a binding was added (a list load, an address seen here): ends
 * every open exchange of any job at a bound place whose secret it does
 * not scan for, and every tunnel there (bound_midway, guard.h). */
void conn_guard_sweep(struct proxy *p);

#endif
