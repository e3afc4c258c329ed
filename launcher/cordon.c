/*
 * cordon: the command line. Each subcommand is a function that returns the
 * exit status; this file only dispatches and prints the usage.
 */
#include "launcher.h"

#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: cordon COMMAND [ARGS]\n"
    "\n"
    "Runs code an AI agent wrote without handing it anything it could\n"
    "abuse: no long-lived secret inside the sandbox, default-deny egress,\n"
    "writes returned as a patch.\n"
    "\n"
    "commands:\n"
    "  run       one job in the foreground (cordon run --help)\n"
    "  stop      stop a job of cordon serve (cordon stop JOB)\n"
    "  serve     the HTTP API for orchestrators (see cordon serve --help)\n"
    "  drill     run a hostile job against a manifest (cordon drill --help)\n"
    "  lint      check manifests as the broker will (cordon lint FILE...)\n"
    "  recover   finish the jobs of launchers that died (cordon recover)\n"
    "\n"
    "  cordon --help | --version\n";

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("%s %s\n", LAUNCHER_PROG, CORDON_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "run") == 0)
		return launcher_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "stop") == 0)
		return launcher_stop(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0) {
		char path[4096];
		int r = launcher_sibling("cordon-serve", path, sizeof(path));
		if (r == 0) {
			argv[1] = path;
			execv(path, argv + 1);
			r = -errno;
		}
		fprintf(stderr, "cordon: cannot run cordon-serve: %s\n",
		    strerror(-r));
		return EXIT_OSERR;
	}
	if (strcmp(argv[1], "drill") == 0)
		return launcher_drill(argc - 1, argv + 1);
	if (strcmp(argv[1], "lint") == 0)
		return launcher_lint(argc - 1, argv + 1);
	if (strcmp(argv[1], "recover") == 0)
		return launcher_recover(argc - 1, argv + 1);
	fprintf(stderr, "cordon: unknown command \"%s\" (try cordon --help)\n",
	    argv[1]);
	return EXIT_USAGE;
}
