/*
 * cordon: the thin launcher. It holds no policy: it asks the broker for a
 * job's capabilities and allowlist, spawns the sandbox wired only to the
 * proxy, and on stop revokes the job's tokens at the broker before the
 * hatch emits the patch. `cordon serve` is its HTTP API for orchestrators.
 */
#ifndef CORDON_LAUNCHER_H
#define CORDON_LAUNCHER_H

#include "config.h"

#define LAUNCHER_PROG "cordon"
#define LAUNCHER_LISTEN "127.0.0.1:7704"

struct launcher_config {
	struct config_common common;
};

struct launcher {
	struct launcher_config cfg;
};

/* `cordon serve [flags]`: argv[0] is "serve". Returns the exit status. */
int launcher_serve(int argc, char **argv);

/* `cordon lint FILE...`: argv[0] is "lint". Returns the exit status. */
int launcher_lint(int argc, char **argv);

#endif
