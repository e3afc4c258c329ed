/*
 * cordon: the command line. Each subcommand is a function that returns the
 * exit status; this file only dispatches, prints the usage, and answers a
 * command's --help from help.c.
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
    "jobs:\n"
    "  run       one job in the foreground\n"
    "  serve     the HTTP API for orchestrators\n"
    "  stop      stop a job of cordon serve\n"
    "  jobs      the jobs cordon serve holds\n"
    "  logs      what the broker and the proxy decided about a job\n"
    "  patch     a finished job's patch, from cordon serve\n"
    "  revoke    revoke a job at the broker: its tokens die, it stops\n"
    "  recover   finish the jobs of launchers that died\n"
    "manifests:\n"
    "  manifest  put, get, list and diff the broker's manifests\n"
    "  lint      check manifests as the broker will\n"
    "  drill     run a hostile job against a manifest\n"
    "  egress-report  a period's denials, stale rules, a proposed diff\n"
    "\n"
    "cordon COMMAND --help says the rest; so does man cordon.\n"
    "Keys are read from the files the configuration names, never from the\n"
    "command line.\n"
    "\n"
    "  cordon --help | --version\n"
    "\n"
    "Exit status: the command's; 64 an unknown command.\n";

/* Whether argv (a command's arguments) asks for --help before any "--". */
static bool
asks_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

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
	/* A command's whole help, from help.c, before its flags are parsed. */
	if (asks_help(argc - 1, argv + 1) &&
	    launcher_help(argv[1], stdout) == 0)
		return 0;
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
	if (strcmp(argv[1], "manifest") == 0)
		return launcher_manifest(argc - 1, argv + 1);
	if (strcmp(argv[1], "jobs") == 0)
		return launcher_jobs(argc - 1, argv + 1);
	if (strcmp(argv[1], "logs") == 0)
		return launcher_logs(argc - 1, argv + 1);
	if (strcmp(argv[1], "patch") == 0)
		return launcher_patch(argc - 1, argv + 1);
	if (strcmp(argv[1], "revoke") == 0)
		return launcher_revoke(argc - 1, argv + 1);
	if (strcmp(argv[1], "egress-report") == 0)
		return launcher_egress_report(argc - 1, argv + 1);
	fprintf(stderr, "cordon: unknown command \"%s\" (try cordon --help)\n",
	    argv[1]);
	return EXIT_USAGE;
}
