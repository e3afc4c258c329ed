/*
 * `cordon stop JOB`: asks cordon serve to stop one of its jobs, and
 * prints the job's result.
 */
#include "launcher.h"

#include "http_client.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int
launcher_stop(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "serve", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct launcher_config cfg;
	const char *config = NULL, *serve = "http://127.0.0.1:7704";
	char err[300], key[128], path[160];
	struct httpc_answer a;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'c')
			config = optarg;
		else if (c == 's')
			serve = optarg;
		else {
			fprintf(stderr,
			    "usage: cordon stop JOB [--config FILE] "
			    "[--serve URL]\n");
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !name_ok(argv[optind], 63, "_-")) {
		fprintf(stderr,
		    "usage: cordon stop JOB [--config FILE] [--serve URL]\n");
		return EXIT_USAGE;
	}
	if (launcher_config_load(&cfg, config, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon stop: %s\n", err);
		return EXIT_CONFIG;
	}
	if (launcher_read_key(cfg.launcher_key_file, key, sizeof(key)) < 0) {
		fprintf(stderr, "cordon stop: cannot read %s\n",
		    cfg.launcher_key_file);
		launcher_config_free(&cfg);
		return EXIT_CONFIG;
	}
	launcher_config_free(&cfg);
	snprintf(path, sizeof(path), "/v1/jobs/%s/stop", argv[optind]);
	if (httpc_request(serve, "POST", path, key, NULL, NULL, 20000, &a) <
	    0) {
		explicit_bzero(key, sizeof(key));
		fprintf(stderr,
		    "cordon stop: cordon serve at %s did not answer\n", serve);
		return EXIT_UNAVAIL;
	}
	explicit_bzero(key, sizeof(key));
	if (a.status != 200) {
		fprintf(stderr, "cordon stop: %ld: %.*s\n", a.status,
		    (int)a.body.len, a.body.data != NULL ? a.body.data : "");
		httpc_answer_free(&a);
		return 1;
	}
	printf("%.*s", (int)a.body.len, a.body.data != NULL ? a.body.data : "");
	httpc_answer_free(&a);
	return 0;
}
