/*
 * cordon-serve: `cordon serve`, the launcher's HTTP API for orchestrators,
 * as a program of its own (cordon execs it), so that the command line
 * never loads the HTTP server.
 */
#include "launcher.h"

int
main(int argc, char **argv)
{
	return launcher_serve(argc, argv);
}
