/*
 * `cordon lint FILE...`: a manifest checked as the broker will check it,
 * before anyone sends it. One line per problem, naming the file and the
 * field, so that a reviewer or CI reads it like a compiler's output.
 */
#include "launcher.h"

#include "manifest.h"
#include "path.h"
#include "problems.h"
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

/*
 * What the broker refuses at its PUT and lint can see without it
 * (credentials.md, "Bindings"): a passthrough or upgrade rule whose host
 * reaches the host of one of the manifest's own injecting rules (the same
 * name, or "*." over it) of a secret it does not inject. The secrets'
 * other bindings are the broker's to know.
 */
static void
own_bindings(const json_t *m, json_t *problems)
{
	const json_t *egress = json_object_get(m, "egress"), *r, *q;
	size_t i, j;

	json_array_foreach(egress, i, r)
	{
		const char *tls = json_string_value(json_object_get(r, "tls"));
		const char *pat = json_string_value(json_object_get(r, "host"));
		const char *own = json_string_value(
		    json_object_get(json_object_get(r, "inject"), "secret"));
		bool pass = tls != NULL && strcmp(tls, "passthrough") == 0;
		char field[64];

		if (pat == NULL ||
		    (!pass && !json_is_true(json_object_get(r, "upgrade"))))
			continue;
		json_array_foreach(egress, j, q)
		{
			const char *h =
			    json_string_value(json_object_get(q, "host"));
			const char *s = json_string_value(
			    json_object_get(json_object_get(q, "inject"),
				"secret"));
			size_t hn = h != NULL ? strlen(h) : 0, sn;

			if (s == NULL || h == NULL ||
			    (own != NULL && strcmp(own, s) == 0))
				continue;
			sn = strlen(pat + 1);
			if (strncmp(pat, "*.", 2) == 0
				? !(hn > sn &&
				      strcmp(h + hn - sn, pat + 1) == 0)
				: strcmp(pat, h) != 0)
				continue;
			snprintf(field, sizeof(field), "egress[%zu].%s", i,
			    pass ? "tls" : "upgrade");
			problems_add(problems, field,
			    "host %s is where secret %s is injected "
			    "(egress[%zu]): the proxy must read what comes "
			    "back; %s",
			    h, s, j,
			    pass ? "use tls: terminate"
				 : "an upgraded connection is not read: "
				   "remove upgrade");
			break;
		}
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
	if (ok) {
		own_bindings(m, problems);
		ok = json_array_size(problems) == 0;
	}
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
