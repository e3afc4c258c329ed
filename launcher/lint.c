/*
 * `cordon lint FILE...`: a manifest checked as the broker will check it,
 * before anyone sends it. One line per problem, naming the file and the
 * field, so that a reviewer or CI reads it like a compiler's output.
 */
#include "launcher.h"

#include "manifest.h"
#include "path.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define EXIT_NOINPUT 66

static void
print_list(const char *file, const char *kind, const json_t *list)
{
	size_t i;
	json_t *p;

	json_array_foreach(list, i, p)
	{
		const char *field =
		    json_string_value(json_object_get(p, "field"));
		printf("%s: %s%s%s%s\n", file, kind,
		    field != NULL && field[0] != '\0' ? field : "",
		    field != NULL && field[0] != '\0' ? ": " : "",
		    json_string_value(json_object_get(p, "problem")));
	}
}

/* Lints one file: 0 valid, 1 refused, EXIT_NOINPUT unreadable. */
static int
lint_one(const char *file)
{
	_cleanup_free_ char *text = NULL;
	json_t *m, *problems, *warnings;
	json_error_t err;
	size_t len;
	int r = path_read_file(file, 1024 * 1024, &text, &len);

	if (r < 0) {
		fprintf(stderr, "cordon lint: %s: %s\n", file,
		    r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
		return EXIT_NOINPUT;
	}
	m = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (m == NULL) {
		/* jansson quotes the file near the error: keep it one line. */
		for (char *c = err.text; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		printf("%s:%d:%d: not valid JSON: %s\n", file, err.line,
		    err.column, err.text);
		return 1;
	}
	problems = json_array();
	warnings = json_array();
	bool ok = manifest_validate(m, NULL, problems, warnings);
	print_list(file, "", problems);
	print_list(file, "warning: ", warnings);
	if (ok) {
		char sha[65];
		/* The same digest the broker will answer for this version. */
		char *canon = manifest_canonical(m, sha);
		printf("%s: ok (sha256 %s)\n", file, canon != NULL ? sha : "?");
		free(canon);
	}
	json_decref(problems);
	json_decref(warnings);
	json_decref(m);
	return ok ? 0 : 1;
}

int
launcher_lint(int argc, char **argv)
{
	int status = 0;

	if (argc < 2 || strcmp(argv[1], "--help") == 0) {
		fputs("usage: cordon lint MANIFEST.json...\n"
		      "\n"
		      "Checks each manifest against every rule the broker "
		      "applies\n(docs/manifest.md) and prints one line per "
		      "problem.\nExit status: 0 all valid, 1 a manifest is "
		      "refused, 66 a file\ncannot be read, 64 usage.\n",
		    argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (int i = 1; i < argc; i++) {
		int r = lint_one(argv[i]);
		if (r > status)
			status = r;
	}
	return status;
}
