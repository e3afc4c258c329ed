/*
 * `cordon serve`: the launcher's HTTP API for orchestrators. Flags, log,
 * config, -n check, state dir, listen, serve until SIGTERM.
 */
#include "launcher.h"

#include "log.h"
#include "service.h"
#include "util.h"

int
launcher_serve(int argc, char **argv)
{
	struct launcher l = { 0 };
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	service_block_signals();
	r = service_parse_args(argc, argv, "cordon serve",
	    "The launcher's HTTP API for orchestrators.", &args);
	if (r >= 0)
		return r;
	r = service_configure(&args, "cordon serve", "launcher",
	    LAUNCHER_LISTEN, launcher_options, launcher_noptions, &l.cfg,
	    &l.cfg.common);
	if (r >= 0)
		goto out;
	if (args.check_only) {
		r = service_config_ok("cordon serve");
		goto out;
	}

	log_init("launcher", l.cfg.common.log_level);
	r = service_open(&l.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	struct http_server_config http = {
		.svc = "launcher",
		.listen_fd = steal_fd(&fd),
		.threads = 2,
		.ctx = &l,
	};
	r = service_serve(&http, &l.cfg.common, addr, NULL, 0);
out:
	if (fd >= 0)
		close(fd);
	launcher_config_free(&l.cfg);
	return r;
}
