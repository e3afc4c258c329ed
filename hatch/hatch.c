/*
 * cordon-hatch: main. Flags, log, config, -n check, state dir, listen,
 * serve until SIGTERM, then let requests in flight finish.
 */
#include "hatch.h"

#include "log.h"
#include "service.h"
#include "util.h"

static const struct config_option hatch_options[] = {
	CONFIG_COMMON_OPTIONS(offsetof(struct hatch_config, common)),
};

int
main(int argc, char **argv)
{
	struct hatch h = { 0 };
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	service_block_signals();
	r = service_parse_args(argc, argv, HATCH_PROG,
	    "The return path: copy-in, size-capped overlays, patches out.",
	    &args);
	if (r >= 0)
		return r;
	r = service_configure(&args, HATCH_PROG, "hatch", HATCH_LISTEN,
	    hatch_options, ARRAY_SIZE(hatch_options), &h.cfg, &h.cfg.common);
	if (r >= 0)
		goto out;
	if (args.check_only) {
		r = service_config_ok(HATCH_PROG);
		goto out;
	}

	log_init("hatch", h.cfg.common.log_level);
	r = service_open(&h.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	struct http_server_config http = {
		.svc = "hatch",
		.listen_fd = steal_fd(&fd),
		.threads = 2,
		.ctx = &h,
	};
	r = service_serve(&http, &h.cfg.common, addr, NULL, 0);
out:
	if (fd >= 0)
		close(fd);
	config_common_free(&h.cfg.common);
	return r;
}
