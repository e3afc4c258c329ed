/*
 * cordon-broker: main. Flags, log, config, -n check, state dir and keys,
 * listen, serve until SIGTERM, then let requests in flight finish.
 */
#include "broker.h"

#include "log.h"
#include "service.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

const struct config_option broker_options[] = {
	CONFIG_COMMON_OPTIONS(offsetof(struct broker_config, common)),
	{ "keys_dir", CONFIG_STRING, offsetof(struct broker_config, keys_dir),
	    0, 0 },
};
const size_t broker_noptions = ARRAY_SIZE(broker_options);

/*
 * Makes sure each role has a key (writing missing ones, mode 0600) and
 * loads their hashes. Paths are logged, values never.
 */
static int
broker_keys_open(struct broker *b)
{
	static const unsigned roles[] = { ROLE_ADMIN, ROLE_LAUNCHER,
		ROLE_VERIFIER };

	for (size_t i = 0; i < ARRAY_SIZE(roles); i++) {
		_cleanup_free_ char *path = NULL;
		bool created;
		int r;

		r = keys_ensure(
		    b->cfg.keys_dir, role_name(roles[i]), &path, &created);
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

static void
broker_config_free(struct broker_config *cfg)
{
	config_common_free(&cfg->common);
	free(cfg->keys_dir);
}

int
main(int argc, char **argv)
{
	struct broker b = { 0 };
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
	if (args.check_only) {
		r = service_config_ok(BROKER_PROG);
		goto out;
	}

	log_init("broker", b.cfg.common.log_level);
	r = service_open(&b.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	/* After service_open, so that the default is an absolute path. */
	if (b.cfg.keys_dir == NULL &&
	    asprintf(&b.cfg.keys_dir, "%s/keys", b.cfg.common.state_dir) < 0) {
		b.cfg.keys_dir = NULL;
		r = EXIT_OSERR;
		goto out;
	}
	if (broker_keys_open(&b) < 0) {
		r = EXIT_OSERR;
		goto out;
	}
	struct http_server_config http = {
		.svc = "broker",
		.listen_fd = steal_fd(&fd),
		.threads = 2,
		.ctx = &b,
		.keys = &b.keys,
	};
	r = service_serve(&http, &b.cfg.common, addr);
out:
	if (fd >= 0)
		close(fd);
	broker_config_free(&b.cfg);
	return r;
}
