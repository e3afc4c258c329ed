/*
 * cordon-proxy: main. Flags, log, config, -n check, state dir, listen,
 * keys, the resolver, TLS, the broker client, then one libevent loop for
 * everything; SIGTERM stops accepting and lets control requests in flight
 * finish for up to 5 s, then closes every channel.
 */
#include "proxy.h"

#include "confine.h"
#include "log.h"
#include "service.h"
#include "tls.h"
#include "util.h"

#include <event2/dns.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define CFG(field) offsetof(struct proxy_config, field)

static const struct config_option proxy_options[] = {
	CONFIG_COMMON_OPTIONS(CFG(common)),
	{ "broker", CONFIG_LIST, CFG(broker), 0, 0 },
	{ "broker_key_file", CONFIG_PATH, CFG(broker_key_file), 0, 0 },
	{ "launcher_key_file", CONFIG_PATH, CFG(launcher_key_file), 0, 0 },
	{ "launcher_key_sha256", CONFIG_STRING, CFG(launcher_key_sha256), 0,
	    0 },
	{ "admin_key_file", CONFIG_PATH, CFG(admin_key_file), 0, 0 },
	{ "admin_key_sha256", CONFIG_STRING, CFG(admin_key_sha256), 0, 0 },
	{ "launcher_uid", CONFIG_INT, CFG(launcher_uid), 0, 4294967294LL },
	{ "upstream_ca_file", CONFIG_PATH, CFG(upstream_ca_file), 0, 0 },
	{ "hosts_file", CONFIG_PATH, CFG(hosts_file), 0, 0 },
	{ "follower", CONFIG_STRING, CFG(follower), 0, 0 },
	{ "max_conns_per_job", CONFIG_INT, CFG(max_conns_per_job), 1, 100000 },
	{ "connect_timeout_ms", CONFIG_INT, CFG(connect_timeout_ms), 100,
	    600000 },
	{ "idle_timeout_ms", CONFIG_INT, CFG(idle_timeout_ms), 100, 3600000 },
	{ "head_timeout_ms", CONFIG_INT, CFG(head_timeout_ms), 100, 600000 },
	{ "closed_job_linger_seconds", CONFIG_INT, CFG(closed_job_linger_s), 0,
	    86400 },
	{ "inject_cache_seconds", CONFIG_INT, CFG(inject_cache_s), 0, 3600 },
	{ "token_cache_seconds", CONFIG_INT, CFG(token_cache_s), 0, 60 },
	{ "bindings_refresh_seconds", CONFIG_INT, CFG(bindings_refresh_s), 1,
	    3600 },
	{ "reflect_limit", CONFIG_INT, CFG(reflect_limit), 0, 1000000 },
	{ "scan_steps_per_second", CONFIG_INT, CFG(scan_steps_per_s), 0,
	    1000000000 },
	{ "scan_steps_burst", CONFIG_INT, CFG(scan_steps_burst), 1000,
	    1000000000 },
	{ "allow_lines_per_second", CONFIG_INT, CFG(allow_lines_per_s), 1,
	    1000000 },
	{ "allow_lines_burst", CONFIG_INT, CFG(allow_lines_burst), 1, 1000000 },
	{ "protected", CONFIG_LIST, CFG(protected), 0, 0 },
};

void
proxy_kick(struct proxy *p)
{
	static const struct timeval now = { 0, 0 };

	if (p->http_tick != NULL)
		evtimer_add(p->http_tick, &now);
}

static void
on_sweep(evutil_socket_t fd, short what, void *cls)
{
	struct proxy *p = cls;

	(void)fd;
	(void)what;
	job_sweep(p);
	/* An issuer's credential kept for the scan is wiped at its expiry,
	 * whether or not a request looks. */
	guard_issued_expire(&p->guard, monotonic_ms() / 1000);
	log_burst_flush();
}

/* The feed revoked a job: its channel and connections close now. */
static void
on_revoked(void *ctx, const char *job, int64_t seq)
{
	struct pjob *j = job_find(ctx, job);

	if (j != NULL && !j->closed) {
		unsigned n = job_close(j, "revoked");
		log_info("job_revoked", "{s:s, s:I, s:i}", "job", job, "seq",
		    (json_int_t)seq, "connections_closed", (int)n);
	}
}

/* The feed revoked one token of a job alone: its cached answers go now,
 * before the proxy acknowledges; the job and its connections go on. */
static void
on_token_revoked(void *ctx, const char *job, const char *token_id, int64_t seq)
{
	struct pjob *j = job_find(ctx, job);

	if (j != NULL && !j->closed) {
		size_t n = tokcache_revoke(&j->tokcache, token_id,
		    monotonic_ms() / 1000);
		log_info("token_revoked", "{s:s, s:s, s:I, s:i}", "job", job,
		    "token_id", token_id, "seq", (json_int_t)seq, "cached",
		    (int)n);
	}
}

/* The broker's list of the secrets' bindings (GET /v1/bindings): the
 * guard's from now on; a list it cannot read leaves the last one, which
 * ages into every request refused (conn.c, bindings_unavailable). */
static void
on_bindings(void *ctx, const json_t *body, uint64_t asked)
{
	proxy_bindings(ctx, json_object_get(body, "bindings"),
	    json_object_get(body, "epoch"), asked);
}

static uint64_t
on_bindings_asking(void *ctx)
{
	return proxy_bindings_asking(ctx);
}

uint64_t
proxy_bindings_asking(struct proxy *p)
{
	return ++p->lists_asked;
}

/* The versions the list says are burned go from every job's cache at
 * once (credentials.md, the fleet's reflection budget): the next
 * injected request asks the broker, which refuses them; the jobs' scans
 * keep them. */
static void
burned_forget(struct proxy *p)
{
	struct pjob *j;

	TAILQ_FOREACH(j, &p->jobs, link)
	{
		for (size_t i = 0; i < j->secrets.n;) {
			const struct inject_cached *e = &j->secrets.e[i];
			int64_t version = e->version;
			char secret[sizeof(e->secret)];
			if (!guard_burned(&p->guard, e->secret, version)) {
				i++;
				continue;
			}
			memcpy(secret, e->secret, sizeof(secret));
			(void)inject_cache_forget(&j->secrets, secret, version);
			log_info("burned_forgotten", "{s:s, s:s, s:I}", "job",
			    j->id, "secret", secret, "version",
			    (json_int_t)version);
		}
	}
}

void
proxy_bindings(struct proxy *p, const json_t *bindings, const json_t *epoch,
    uint64_t asked)
{
	char err[160] = "";

	/* The broker's epoch only grows (but for a new database): a list
	 * asked before the one held was taken, and older, is stale. One
	 * asked after it is taken whatever its epoch. */
	if (json_is_integer(epoch) && p->guard.has_epoch &&
	    json_integer_value(epoch) < p->guard.epoch &&
	    asked <= p->list_taken_at) {
		log_info("bindings_stale", "{s:I, s:I}", "epoch",
		    json_integer_value(epoch), "held_epoch",
		    (json_int_t)p->guard.epoch);
		return;
	}
	int r =
	    guard_load(&p->guard, bindings, monotonic_ms(), err, sizeof(err));

	if (r == 0 && json_is_integer(epoch))
		guard_epoch(&p->guard, json_integer_value(epoch));
	if (r == 0)
		p->list_taken_at = p->lists_asked;
	if (r == 0) {
		burned_forget(p);
		conn_guard_sweep(p);
	}
	if (r < 0)
		log_burst(LEVEL_WARN, "bindings_refused", "{s:s, s:s}", "error",
		    err[0] != '\0' ? err : strerror(-r), "effect",
		    "the last list is kept; every request is refused once it "
		    "is three refreshes old");
}

/* The feed went silent: what cannot be judged request by request goes. */
static void
on_feed_lost(void *ctx)
{
	job_feed_lost(ctx);
}

/* libevent's own complaints (an accept that failed, a socket error) come
 * from what peers do: one line per burst, as JSON. */
static void
on_libevent_log(int severity, const char *msg)
{
	if (severity >= EVENT_LOG_WARN)
		log_burst(severity >= EVENT_LOG_ERR ? LEVEL_ERROR : LEVEL_WARN,
		    "libevent", "{s:s}", "message", msg);
}

/*
 * Raises the soft descriptor limit to the hard one: every connection of a
 * job costs two, and systemd's default soft limit is 1,024. Logs what the
 * proxy has, what it keeps from the jobs (p->fd_reserve, the broker
 * client's connections in it) and what one job may take of the rest.
 */
static void
raise_nofile(const struct proxy *p)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	long long limit =
	    rl.rlim_cur == RLIM_INFINITY ? -1 : (long long)rl.rlim_cur;
	long long reserve = (long long)p->fd_reserve;
	long long share = limit > 2 * reserve
	    ? (limit - reserve) / PROXY_FD_SHARE / 2
	    : limit / 2 / PROXY_FD_SHARE / 2;
	log_info("descriptors", "{s:I, s:I, s:I}", "nofile", limit,
	    "conns_per_job",
	    share < p->cfg.max_conns_per_job ? share : p->cfg.max_conns_per_job,
	    "reserve", reserve);
	if (limit >= 0 && limit < 4096)
		log_warn("few_descriptors", "{s:I, s:s}", "nofile", limit,
		    "effect",
		    "jobs get fewer connections than max_conns_per_job; set "
		    "LimitNOFILE=65536");
}

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

/* SIGHUP: decisions.log opened anew, for a rotation that renamed it
 * (logrotate's default, then kill -HUP); the old descriptor is kept when
 * the new file cannot be opened. */
static void
reopen_decision_log(struct proxy *p)
{
	char path[4096];
	int fd;

	if (snprintf(path, sizeof(path), "%s/decisions.log",
		p->cfg.common.logs_dir) >= (int)sizeof(path))
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_error("decision_log_reopen_failed", "{s:s, s:s}", "path",
		    path, "error", strerror(errno));
		return;
	}
	if (p->log_fd >= 0)
		close(p->log_fd);
	p->log_fd = fd;
	log_info("decision_log_reopened", "{s:s}", "path", path);
}

static void
on_signal(evutil_socket_t sig, short what, void *cls)
{
	static const struct timeval tick = { 0, 10 * 1000 };
	struct proxy *p = cls;

	(void)what;
	if (sig == SIGHUP) {
		reopen_decision_log(p);
		return;
	}
	if (p->drain != NULL)
		return;
	service_notify("STOPPING=1");
	log_info("stopping", "{s:s}", "signal", sigabbrev_np(sig));
	http_server_quiesce(p->http);
	/* Jobs stop reaching anything with the proxy: no half-open channel
	 * outlives it. */
	struct pjob *j;
	TAILQ_FOREACH(j, &p->jobs, link)
	job_close(j, "deleted");
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

/* The control API's stopping hook: the decision log's pages, then the
 * channel opens waiting on the broker. */
static void
proxy_stopping(void *ctx)
{
	decisions_stopping(ctx);
	control_stopping(ctx);
}

static int
proxy_events(struct proxy *p)
{
	static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
	int wd = service_watchdog_ms();
	int r;

	if ((r = decisions_worker_start(p)) < 0)
		return r;

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
	p->sweep = event_new(p->base, -1, EV_PERSIST, on_sweep, p);
	struct timeval second = { 1, 0 };
	if (p->sweep == NULL || event_add(p->sweep, &second) < 0)
		return -ENOMEM;
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
	while (!TAILQ_EMPTY(&p->jobs)) {
		struct pjob *j = TAILQ_FIRST(&p->jobs);
		TAILQ_REMOVE(&p->jobs, j, link);
		job_free(j);
	}
	/* Before the events go: stopping the control API resumes what it
	 * held and kicks http_tick. */
	http_server_stop(p->http, 0);
	decisions_worker_free(p);
	if (p->sweep != NULL)
		event_free(p->sweep);
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
	brokerclient_free(p->bclient);
	guard_free(&p->guard);
	if (p->dns != NULL)
		evdns_base_free(p->dns, 1);
	if (p->base != NULL)
		event_base_free(p->base);
	SSL_CTX_free(p->mitm_ctx);
	SSL_CTX_free(p->up_ctx);
	if (p->verifier_key != NULL) {
		explicit_bzero(p->verifier_key, strlen(p->verifier_key));
		free(p->verifier_key);
	}
	if (p->log_fd >= 0)
		close(p->log_fd);
	free(p->channels);
	free(p->cfg.broker);
	free(p->cfg.protected);
	free(p->cfg.broker_key_file);
	free(p->cfg.launcher_key_file);
	free(p->cfg.launcher_key_sha256);
	free(p->cfg.admin_key_file);
	free(p->cfg.admin_key_sha256);
	free(p->cfg.upstream_ca_file);
	free(p->cfg.hosts_file);
	free(p->cfg.follower);
	config_common_free(&p->cfg.common);
}

/* The verifier key the proxy shows the broker, read once. */
static int
read_key(const char *path, char **ret)
{
	char key[256];
	int r = keys_read(path, key, sizeof(key));

	if (r < 0)
		return r;
	*ret = strdup(key);
	explicit_bzero(key, sizeof(key));
	return *ret != NULL ? 0 : -ENOMEM;
}

/* Keys, directories, the decision log, the resolver, TLS and the broker
 * link: EXIT_* or -1 when all is ready. */
static int
proxy_setup(struct proxy *p)
{
	int r;

	/* The launcher's key by its hash: the proxy parses what jobs send
	 * all day, and the key itself creates and stops any job at the
	 * broker. */
	if (p->cfg.launcher_key_sha256 != NULL &&
	    (r = keyring_add_hash(&p->keys, p->cfg.launcher_key_sha256,
		 ROLE_LAUNCHER)) < 0) {
		log_error("key_failed", "{s:s, s:s}", "setting",
		    "launcher_key_sha256", "error", strerror(-r));
		return EXIT_CONFIG;
	}
	if (p->cfg.launcher_key_file == NULL &&
	    p->cfg.launcher_key_sha256 == NULL)
		log_warn("no_launcher_key", "{s:s}", "effect",
		    "every control call is refused until launcher_key_sha256 "
		    "is configured");
	else if (p->cfg.launcher_key_file != NULL &&
	    (r = keyring_add_file(&p->keys, p->cfg.launcher_key_file,
		 ROLE_LAUNCHER)) < 0) {
		log_error("key_failed", "{s:s, s:s}", "path",
		    p->cfg.launcher_key_file, "error", strerror(-r));
		return EXIT_CONFIG;
	} else if (p->cfg.launcher_key_file != NULL)
		log_warn("launcher_key_broad", "{s:s, s:s, s:s}", "path",
		    p->cfg.launcher_key_file, "effect",
		    "the proxy holds the launcher's key, which creates and "
		    "stops any job at the broker: whoever took over the proxy "
		    "could use it there",
		    "fix",
		    "set launcher_key_sha256 to its SHA-256 (printf %s "
		    "\"$(cat launcher.key)\" | sha256sum) and drop "
		    "launcher_key_file");
	/* An admin reads the decision log back (GET /v1/decisions): by
	 * the key, or better by its hash alone. */
	if (p->cfg.admin_key_file != NULL &&
	    (r = keyring_add_file(&p->keys, p->cfg.admin_key_file,
		 ROLE_ADMIN)) < 0) {
		log_error("key_failed", "{s:s, s:s}", "path",
		    p->cfg.admin_key_file, "error", strerror(-r));
		return EXIT_CONFIG;
	}
	if (p->cfg.admin_key_sha256 != NULL &&
	    (r = keyring_add_hash(&p->keys, p->cfg.admin_key_sha256,
		 ROLE_ADMIN)) < 0) {
		log_error("key_failed", "{s:s, s:s}", "setting",
		    "admin_key_sha256", "error", strerror(-r));
		return EXIT_CONFIG;
	}
	if (p->cfg.broker_key_file == NULL)
		log_warn("no_broker_key", "{s:s}", "effect",
		    "no channel can be opened until broker_key_file (the "
		    "broker's verifier key) is configured");
	else if ((r = read_key(p->cfg.broker_key_file, &p->verifier_key)) < 0) {
		log_error("key_failed", "{s:s, s:s}", "path",
		    p->cfg.broker_key_file, "error", strerror(-r));
		return EXIT_CONFIG;
	}
	if (asprintf(&p->channels, "%s/channels", p->cfg.common.runtime_dir) <
	    0) {
		p->channels = NULL;
		return EXIT_OSERR;
	}
	if (mkdir(p->channels, 0711) < 0 && errno != EEXIST) {
		log_error("mkdir_failed", "{s:s, s:s}", "path", p->channels,
		    "error", strerror(errno));
		return EXIT_OSERR;
	}
	(void)chmod(p->channels, 0711);
	char *path;
	if (asprintf(&path, "%s/decisions.log", p->cfg.common.logs_dir) < 0)
		return EXIT_OSERR;
	p->log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (p->log_fd < 0) {
		log_error("open_failed", "{s:s, s:s}", "path", path, "error",
		    strerror(errno));
		free(path);
		return EXIT_OSERR;
	}
	free(path);
	p->dns = evdns_base_new(p->base,
	    EVDNS_BASE_INITIALIZE_NAMESERVERS |
		EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	if (p->dns == NULL)
		p->dns = evdns_base_new(p->base, 0);
	if (p->dns == NULL) {
		log_error("resolver_failed", NULL);
		return EXIT_OSERR;
	}
	/* The order matters: libevent gives a name's entries in the order
	 * they were loaded and the proxy dials the first one a rule may
	 * reach, and the nameservers' set-up above loaded /etc/hosts. With a
	 * hosts_file, it is loaded first and /etc/hosts after (its absence
	 * ignored), so a name the operator pins there is not /etc/hosts'. */
	if (p->cfg.hosts_file != NULL) {
		evdns_base_clear_host_addresses(p->dns);
		if (evdns_base_load_hosts(p->dns, p->cfg.hosts_file) != 0) {
			log_error("hosts_file_failed", "{s:s}", "path",
			    p->cfg.hosts_file);
			return EXIT_CONFIG;
		}
		(void)evdns_base_load_hosts(p->dns, "/etc/hosts");
	}
	if (tls_init(p) < 0)
		return EXIT_CONFIG;
	struct brokerclient_options bo = { .base = p->cfg.broker,
		.verifier_key = p->verifier_key,
		.follower = p->cfg.follower,
		.hooks = { .revoked = on_revoked,
		    .token_revoked = on_token_revoked,
		    .feed_lost = on_feed_lost,
		    .bindings = on_bindings,
		    .bindings_asking = on_bindings_asking,
		    .ctx = p },
		.bindings_refresh_s = p->cfg.bindings_refresh_s };
	r = brokerclient_new(p->base, &bo, &p->bclient);
	if (r == -EINVAL) {
		log_error("bad_broker", "{s:s, s:s}", "broker", p->cfg.broker,
		    "error", "want http://IPv4:port");
		return EXIT_CONFIG;
	}
	if (r < 0)
		return EXIT_OSERR;
	p->fd_reserve =
	    PROXY_FD_RESERVE + (uint64_t)brokerclient_descriptors(p->bclient);
	/* No rule reaches a broker of the list, nor a protected endpoint. */
	if (egress_protected_add(&p->protected, p->cfg.broker) < 0 ||
	    egress_protected_add(&p->protected, p->cfg.protected) < 0) {
		log_error("bad_protected", "{s:s, s:s?, s:s}", "broker",
		    p->cfg.broker, "protected", p->cfg.protected, "error",
		    "want IPv4:port or http://IPv4:port, at most 32 in all");
		return EXIT_CONFIG;
	}
	return -1;
}

int
main(int argc, char **argv)
{
	struct proxy p = { .log_fd = -1,
		.cfg = { .launcher_uid = 0,
		    .max_conns_per_job = 1024,
		    .connect_timeout_ms = 10000,
		    .idle_timeout_ms = 60000,
		    .head_timeout_ms = 10000,
		    .closed_job_linger_s = 600,
		    .inject_cache_s = 30,
		    .token_cache_s = 5,
		    .bindings_refresh_s = 5,
		    .reflect_limit = 3,
		    .scan_steps_per_s = SCANBUDGET_RATE,
		    .scan_steps_burst = SCANBUDGET_BURST,
		    .allow_lines_per_s = 100,
		    .allow_lines_burst = 1000 } };
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	signal(SIGPIPE, SIG_IGN);
	if (config_set_string(&p.cfg.broker, PROXY_BROKER) < 0 ||
	    config_set_string(&p.cfg.follower, "proxy") < 0)
		return EXIT_OSERR;
	r = service_parse_args(argc, argv, PROXY_PROG,
	    "The reachability plane: default-deny egress per job, TLS "
	    "terminated, every decision logged.",
	    &args);
	if (r >= 0)
		goto out;
	r = service_configure(&args, PROXY_PROG, "proxy", PROXY_LISTEN,
	    proxy_options, ARRAY_SIZE(proxy_options), &p.cfg, &p.cfg.common);
	if (r >= 0)
		goto out;
	if (!name_ok(p.cfg.follower, 63, "._-")) {
		fprintf(stderr,
		    "%s: follower: 1 to 63 of [A-Za-z0-9._-], not \"%s\"\n",
		    PROXY_PROG, p.cfg.follower);
		r = EXIT_CONFIG;
		goto out;
	}
	if ((r = keys_check_setting(PROXY_PROG, "launcher_key_file",
		 p.cfg.launcher_key_file)) >= 0 ||
	    (r = keys_check_setting(PROXY_PROG, "broker_key_file",
		 p.cfg.broker_key_file)) >= 0 ||
	    (r = keys_check_setting(PROXY_PROG, "admin_key_file",
		 p.cfg.admin_key_file)) >= 0)
		goto out;
	/* A hash of another shape stops it, under -n too. */
	static const char *const hashes[] = { "launcher_key_sha256",
		"admin_key_sha256" };
	const char *hash_values[] = { p.cfg.launcher_key_sha256,
		p.cfg.admin_key_sha256 };
	for (size_t i = 0; i < ARRAY_SIZE(hashes); i++) {
		const char *v = hash_values[i];
		if (v != NULL &&
		    (strlen(v) != 64 || strspn(v, "0123456789abcdef") != 64)) {
			fprintf(stderr,
			    "%s: %s: 64 lowercase hex digits, the SHA-256 of "
			    "the %s key (printf %%s \"$(cat %s.key)\" | "
			    "sha256sum)\n",
			    PROXY_PROG, hashes[i],
			    i == 0 ? "launcher" : "admin",
			    i == 0 ? "launcher" : "admin");
			r = EXIT_CONFIG;
			goto out;
		}
	}
	if (args.check_only) {
		r = service_config_ok(PROXY_PROG);
		goto out;
	}

	log_init("proxy", p.cfg.common.log_level);
	event_set_log_callback(on_libevent_log);
	r = service_open(&p.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	p.self_len = sizeof(p.self_addr);
	(void)getsockname(fd, (struct sockaddr *)&p.self_addr, &p.self_len);
	TAILQ_INIT(&p.jobs);
	TAILQ_INIT(&p.opens);
	p.base = event_base_new();
	if (p.base == NULL) {
		log_error("event_base_failed", NULL);
		r = EXIT_OSERR;
		goto out;
	}
	r = proxy_setup(&p);
	if (r >= 0)
		goto out;
	raise_nofile(&p);
	struct http_server_config http = {
		.svc = "proxy",
		.listen_fd = steal_fd(&fd),
		.threads = 0,
		.routes = control_routes,
		.nroutes = control_nroutes,
		.ctx = &p,
		.keys = &p.keys,
		.health = control_health,
		.metrics = control_metrics,
		.stopping = proxy_stopping,
	};
	r = http_server_start(&http, &p.http);
	if (r == 0)
		r = proxy_events(&p);
	if (r < 0) {
		log_error("http_failed", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	/* Everything it needs is open: its own sandbox, late. */
	if ((r = confine_apply(&confine_proxy)) < 0) {
		log_error("confine_failed", "{s:s}", "error", strerror(-r));
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
