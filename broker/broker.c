/*
 * cordon-broker: main. Flags, log, config, -n check, state dir and keys,
 * listen, serve until SIGTERM, then let requests in flight finish.
 */
#include "broker.h"

#include "confine.h"
#include "issuers.h"
#include "log.h"
#include "secrets.h"
#include "service.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const struct config_option broker_options[] = {
	CONFIG_COMMON_OPTIONS(offsetof(struct broker_config, common)),
	{ "keys_dir", CONFIG_PATH, offsetof(struct broker_config, keys_dir), 0,
	    0 },
	{ "db", CONFIG_PATH, offsetof(struct broker_config, db), 0, 0 },
	{ "store", CONFIG_STRING, offsetof(struct broker_config, store), 0, 0 },
	{ "pepper", CONFIG_PATH, offsetof(struct broker_config, pepper), 0, 0 },
	{ "lease_seconds", CONFIG_INT,
	    offsetof(struct broker_config, lease_seconds), 2, 3600 },
	{ "issuer_ca_file", CONFIG_PATH,
	    offsetof(struct broker_config, issuer_ca_file), 0, 0 },
};
const size_t broker_noptions = ARRAY_SIZE(broker_options);

/* One key file per role, <keys_dir>/<role>.key: each process is given
 * the least key it needs (docs/threat-model.md). */
static const unsigned broker_key_roles[] = { ROLE_ADMIN, ROLE_LAUNCHER,
	ROLE_VERIFIER, ROLE_HATCH };

/*
 * Makes sure each role has a key (writing missing ones, mode 0600) and
 * loads their hashes. Paths are logged, values never.
 */
static int
broker_keys_open(struct broker *b)
{
	const unsigned *roles = broker_key_roles;

	for (size_t i = 0; i < ARRAY_SIZE(broker_key_roles); i++) {
		_cleanup_free_ char *path = NULL;
		bool created;
		int r;

		r = keys_ensure(b->cfg.keys_dir, role_name(roles[i]), &path,
		    &created);
		if (r == 0)
			r = keyring_add_file(&b->keys, path, roles[i]);
		if (r < 0) {
			log_error("key_failed", "{s:s, s:s, s:s}", "role",
			    role_name(roles[i]), "dir", b->cfg.keys_dir,
			    "error", strerror(-r));
			return r;
		}
		log_info(created ? "key_created" : "key_loaded", "{s:s, s:s}",
		    "role", role_name(roles[i]), "path", path);
	}
	return 0;
}

/* -n: each role key that is there must be one this user can read (a
 * missing one is written at start); each is listed on stdout, "<prog>:
 * <role> key <path>", with " (written at start)" when missing. -1 when
 * all are, else EXIT_CONFIG after one line on stderr. */
static int
broker_keys_check(const struct broker *b)
{
	const unsigned *roles = broker_key_roles;
	_cleanup_free_ char *def = NULL;
	const char *dir = b->cfg.keys_dir;

	if (dir == NULL &&
	    asprintf(&def, "%s/keys", b->cfg.common.state_dir) < 0)
		return EXIT_OSERR;
	if (dir == NULL)
		dir = def;
	for (size_t i = 0; i < ARRAY_SIZE(broker_key_roles); i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;
		int r;

		if (asprintf(&path, "%s/%s.key", dir, role_name(roles[i])) < 0)
			return EXIT_OSERR;
		if (lstat(path, &st) < 0 && errno == ENOENT) {
			printf("%s: %s key %s (written at start)\n",
			    BROKER_PROG, role_name(roles[i]), path);
			continue;
		}
		printf("%s: %s key %s\n", BROKER_PROG, role_name(roles[i]),
		    path);
		r = keys_check_setting(BROKER_PROG, "keys_dir", path);
		if (r >= 0)
			return r;
	}
	return -1;
}

/* A path under the state directory unless the config named one. */
static int
default_path(char **slot, const char *state_dir, const char *name)
{
	if (*slot != NULL)
		return 0;
	if (asprintf(slot, "%s/%s", state_dir, name) < 0) {
		*slot = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The store's address as a log line may show it: a URI's password (in
 * its user part or its query) is never written. */
static void
store_shown(const char *addr, char *out, size_t len)
{
	const char *scheme = strstr(addr, "://");
	const char *at = scheme != NULL ? strchr(scheme + 3, '@') : NULL;
	const char *slash = scheme != NULL ? strchr(scheme + 3, '/') : NULL;

	if (strstr(addr, "password") != NULL)
		snprintf(out, len, "postgresql (the address holds a password)");
	else if (at != NULL && (slash == NULL || at < slash))
		snprintf(out, len, "%.*s://%s", (int)(scheme - addr), addr,
		    at + 1);
	else
		snprintf(out, len, "%s", addr);
}

/* A revocation some broker of the fleet committed: this one's followers
 * hear of it as if it were made here. */
static void
broker_revocation_seen(void *arg, int64_t seq)
{
	feed_publish(arg, seq);
}

/* A follower of this broker acknowledged, or started or ended a poll:
 * the fleet's other brokers hear of it through the database. */
static void
broker_ack_share(void *arg, const char *name, int64_t acked, bool polling)
{
	struct broker *b = arg;

	/* Dropped when the queue is full or the database away: the other
	 * brokers then declare the follower gone, as it is to them. */
	(void)store_ack_publish(b->store, name, acked, polling);
}

/* Another broker's follower: this broker's revokes wait for it too. */
static void
broker_ack_heard(void *arg, const char *name, int64_t acked, bool polling)
{
	feed_remote(arg, name, acked, polling);
}

/* The key that seals secrets, <keys_dir>/secrets.aead, made at first
 * start: never in the database. Logs what fails. */
static int
broker_secrets_key(struct broker *b)
{
	char path[4096];
	bool created = false;
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", b->cfg.keys_dir,
		SECRETS_KEY_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = secrets_key_load(path, b->secrets_key, &created);
	if (r < 0) {
		log_error("secrets_key_failed", "{s:s, s:s}", "path", path,
		    "error",
		    r == -EINVAL ? "not 32 bytes: refusing to guess"
				 : strerror(-r));
		return r;
	}
	log_info(created ? "secrets_key_created" : "secrets_key_loaded",
	    "{s:s}", "path", path);
	return 0;
}

/* Opens the database, the pepper and the feed; logs what fails. */
static int
broker_open(struct broker *b)
{
	const char *addr = b->cfg.db;
	char shown[512];
	bool created;
	int64_t head = 0;
	int r;

	if (b->cfg.store != NULL && strcmp(b->cfg.store, "sqlite") != 0) {
		if (!store_is_postgresql(b->cfg.store)) {
			log_error("store_failed", "{s:s}", "error",
			    "store must be \"sqlite\" or a postgresql:// URI");
			return -EINVAL;
		}
		addr = b->cfg.store;
	}
	store_shown(addr, shown, sizeof(shown));
	r = store_open(addr, &b->store);
	if (r < 0) {
		log_error("store_failed", "{s:s, s:s}", "db", shown, "error",
		    strerror(-r));
		return r;
	}
	r = capability_pepper(b->cfg.pepper, b->pepper, &created);
	if (r < 0) {
		log_error("pepper_failed", "{s:s, s:s}", "path", b->cfg.pepper,
		    "error",
		    r == -EINVAL ? "not 32 bytes: refusing to guess"
				 : strerror(-r));
		return r;
	}
	log_info(created ? "pepper_created" : "pepper_loaded", "{s:s}", "path",
	    b->cfg.pepper);
	r = broker_secrets_key(b);
	if (r < 0)
		return r;
	/* Credential issuers' TLS: their CA read now, before the sandbox;
	 * and the credentials held for running jobs, sealed on disk. */
	char issued[4096];
	if (snprintf(issued, sizeof(issued), "%s/%s", b->cfg.common.state_dir,
		ISSUERS_STATE_FILE) >= (int)sizeof(issued))
		return -ENAMETOOLONG;
	r = secrets_issuers_open(b, b->cfg.issuer_ca_file, issued,
	    store_is_postgresql(addr));
	if (r < 0) {
		log_error("issuers_failed", "{s:s, s:s}", "error",
		    r == -EINVAL ? "the issuer CA file does not load"
			: r == -EBADMSG
			? "the held credentials do not open with "
			  "secrets.aead: remove the file to start without them"
			: strerror(-r),
		    "path",
		    r == -EINVAL
			? (b->cfg.issuer_ca_file ?: "the system's store")
			: issued);
		return r;
	}
	r = store_revocation_head(b->store, &head);
	if (r == 0 && (b->feed = feed_new(head)) == NULL)
		r = -ENOMEM;
	if (r == 0 && (b->throttle = throttle_new()) == NULL)
		r = -ENOMEM;
	/* Several brokers on one database: every revocation reaches every
	 * follower, whichever broker it follows. sqlite has no others. */
	if (r == 0 &&
	    (r = store_watch_acks(b->store, broker_ack_heard, b->feed)) == 0)
		feed_set_share(b->feed, broker_ack_share, b);
	if (r == 0)
		r = store_watch_revocations(b->store, broker_revocation_seen,
		    b->feed);
	if (r == -EOPNOTSUPP)
		r = 0;
	if (r < 0)
		log_error("feed_failed", "{s:s}", "error", strerror(-r));
	else
		log_info("store_opened", "{s:s, s:I}", "db", shown,
		    "revocation_head", (json_int_t)head);
	return r;
}

static void
broker_close(struct broker *b)
{
	/* First: its threads write to the store until they are joined. */
	issuers_close(b->issuers);
	store_close(b->store);
	feed_free(b->feed);
	throttle_free(b->throttle);
	OPENSSL_cleanse(b->pepper, sizeof(b->pepper));
	OPENSSL_cleanse(b->secrets_key, sizeof(b->secrets_key));
	config_common_free(&b->cfg.common);
	free(b->cfg.keys_dir);
	free(b->cfg.db);
	free(b->cfg.store);
	free(b->cfg.pepper);
	free(b->cfg.issuer_ca_file);
}

int
main(int argc, char **argv)
{
	struct broker b = { .cfg.lease_seconds = 30 };
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	service_block_signals();
	r = service_parse_args(argc, argv, BROKER_PROG,
	    "The identity plane: manifests, jobs, capability tokens, "
	    "revocation, audit.",
	    &args);
	if (r >= 0)
		return r;
	r = service_configure(&args, BROKER_PROG, "broker", BROKER_LISTEN,
	    broker_options, broker_noptions, &b.cfg, &b.cfg.common);
	if (r >= 0)
		goto out;
	/* The value is not echoed: a URI may hold a password. */
	if (b.cfg.store != NULL && strcmp(b.cfg.store, "sqlite") != 0 &&
	    !store_is_postgresql(b.cfg.store)) {
		fprintf(stderr,
		    "%s: store: \"sqlite\" or a postgresql:// URI\n",
		    BROKER_PROG);
		r = EXIT_CONFIG;
		goto out;
	}
	if (args.check_only) {
		r = broker_keys_check(&b);
		if (r < 0)
			r = service_config_ok(BROKER_PROG);
		goto out;
	}

	log_init("broker", b.cfg.common.log_level);
	r = service_open(&b.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	/* After service_open, so that the defaults are absolute paths. */
	if (default_path(&b.cfg.keys_dir, b.cfg.common.state_dir, "keys") < 0 ||
	    default_path(&b.cfg.db, b.cfg.common.state_dir, "broker.db") < 0 ||
	    default_path(&b.cfg.pepper, b.cfg.common.state_dir, "pepper") < 0 ||
	    broker_keys_open(&b) < 0 || broker_open(&b) < 0) {
		r = EXIT_OSERR;
		goto out;
	}
	struct http_server_config http = {
		.svc = "broker",
		.listen_fd = steal_fd(&fd),
		.threads = BROKER_THREADS,
		.routes = broker_routes,
		.nroutes = broker_nroutes,
		.ctx = &b,
		.keys = &b.keys,
		.health = broker_health,
		.metrics = broker_metrics,
		.stopping = broker_stopping,
		.auth_failed = broker_auth_failed,
	};
	/* Everything it needs is open: its own sandbox, late. */
	if ((r = confine_apply(&confine_broker)) < 0) {
		log_error("confine_failed", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	r = service_serve(&http, &b.cfg.common, addr, broker_sweep, 250);
out:
	if (fd >= 0)
		close(fd);
	broker_close(&b);
	return r;
}
