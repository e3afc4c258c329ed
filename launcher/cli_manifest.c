/*
 * `cordon manifest put FILE... | get NAME [--version N] | list | diff NAME
 * FILE`: the broker's manifests from the command line, with the admin key
 * the configuration names. put says, per file, the version stored and the
 * planes the change touches (the broker's own answer); diff says the same
 * before anything is stored, and which fields changed. list asks the
 * broker's GET /v1/manifests, following next.
 */
#include "cli.h"

#include "manifest.h"
#include "path.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MANIFEST_FILE_MAX (1024 * 1024)
#define LIST_PAGE 1000 /* the broker's most per page */

/* Reads and parses a manifest file: the object, or NULL with the reason
 * printed. */
static json_t *
read_manifest(const char *file)
{
	_cleanup_free_ char *text = NULL;
	json_error_t err;
	size_t len;
	json_t *m;
	int r = path_read_file(file, MANIFEST_FILE_MAX, &text, &len);

	if (r < 0) {
		fprintf(stderr, "cordon manifest: %s: %s\n", file,
		    r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
		return NULL;
	}
	m = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!json_is_object(m)) {
		for (char *c = err.text; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		fprintf(stderr,
		    "cordon manifest: %s:%d:%d: not a JSON object%s%s\n", file,
		    err.line, err.column, m == NULL ? ": " : "",
		    m == NULL ? err.text : "");
		json_decref(m);
		return NULL;
	}
	return m;
}

/* Prints a list of {field, problem} as lint does: "FILE: kind field: ...". */
static void
print_problems(const char *file, const char *kind, const json_t *list)
{
	json_t *p;
	size_t i;

	json_array_foreach(list, i, p)
	{
		const char *field =
		    json_string_value(json_object_get(p, "field"));
		const char *problem =
		    json_string_value(json_object_get(p, "problem"));
		printf("%s: %s", file, kind);
		if (field != NULL && field[0] != '\0') {
			cli_print_clean(stdout, field, strlen(field));
			printf(": ");
		}
		if (problem != NULL)
			cli_print_clean(stdout, problem, strlen(problem));
		printf("\n");
	}
}

/* "a, b" of an array of strings into buf. */
static const char *
joined(const json_t *list, char *buf, size_t len)
{
	json_t *v;
	size_t i, used = 0;

	buf[0] = '\0';
	json_array_foreach(list, i, v)
	{
		int n = snprintf(buf + used, len - used, "%s%s",
		    i > 0 ? ", " : "", json_string_value(v) ?: "?");
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return buf;
}

static int
manifest_put(struct cli *c, int nfiles, char **files)
{
	int status = 0;

	for (int i = 0; i < nfiles; i++) {
		json_t *m = read_manifest(files[i]);
		struct httpc_answer a;
		char path[160], planes[128];
		const char *name;
		int r;

		if (m == NULL) {
			status = 1;
			continue;
		}
		name = json_string_value(json_object_get(m, "name"));
		if (name == NULL || !manifest_name_ok(name)) {
			printf("%s: name: required: the manifest's name, "
			       "[a-z0-9][a-z0-9._-]{0,63}\n",
			    files[i]);
			json_decref(m);
			status = 1;
			continue;
		}
		snprintf(path, sizeof(path), "/v1/manifests/%s", name);
		r = httpc_request(c->cfg.broker, "PUT", path, c->key, NULL, m,
		    20000, &a);
		if (r < 0) {
			fprintf(stderr,
			    "cordon manifest: %s did not answer (%s)\n",
			    c->cfg.broker, strerror(-r));
			json_decref(m);
			return EXIT_UNAVAIL;
		}
		if (a.status == 200) {
			json_t *pl = json_object_get(a.json, "planes");
			long long v = json_integer_value(
			    json_object_get(a.json, "version"));
			if (json_is_true(
				json_object_get(a.json, "new_version")))
				printf("%s: version %lld (planes: %s)\n", name,
				    v,
				    json_array_size(pl) > 0
					? joined(pl, planes, sizeof(planes))
					: "none");
			else
				printf("%s: version %lld, unchanged\n", name,
				    v);
			print_problems(files[i],
			    "warning: ", json_object_get(a.json, "warnings"));
		} else {
			status = 1;
			if (json_object_get(a.json, "problems") != NULL) {
				print_problems(files[i], "",
				    json_object_get(a.json, "problems"));
			} else {
				const char *msg = launcher_answer_message(&a);
				printf("%s: %ld: ", files[i], a.status);
				cli_print_clean(stdout, msg, strlen(msg));
				printf("\n");
			}
		}
		httpc_answer_free(&a);
		json_decref(m);
	}
	return status;
}

/* GET of NAME (version 0: the current): 0 with the answer, 1 when the
 * broker has none (quiet: NULL *a), or the exit status. */
static int
fetch(struct cli *c, const char *name, long long version, bool quiet,
    struct httpc_answer *a)
{
	char path[200];
	int r;

	if (version > 0)
		snprintf(path, sizeof(path), "/v1/manifests/%s?version=%lld",
		    name, version);
	else
		snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	if (quiet) {
		r = httpc_request(c->cfg.broker, "GET", path, c->key, NULL,
		    NULL, 20000, a);
		if (r < 0) {
			fprintf(stderr,
			    "cordon manifest: %s did not answer (%s)\n",
			    c->cfg.broker, strerror(-r));
			return EXIT_UNAVAIL;
		}
		if (a->status == 200)
			return 0;
		if (a->status == 404) {
			httpc_answer_free(a);
			return 1;
		}
		const char *msg = launcher_answer_message(a);
		fprintf(stderr, "cordon manifest: %ld: ", a->status);
		cli_print_clean(stderr, msg, strlen(msg));
		fputc('\n', stderr);
		httpc_answer_free(a);
		return 2;
	}
	return cli_call(c, c->cfg.broker, "GET", path, NULL, a);
}

static int
manifest_get(struct cli *c, const char *name, long long version, bool json)
{
	struct httpc_answer a;
	int r = fetch(c, name, version, false, &a);
	char *text;

	if (r != 0)
		return r;
	text = json
	    ? json_dumps(a.json, JSON_COMPACT)
	    : json_dumps(json_object_get(a.json, "manifest"), JSON_INDENT(2));
	if (text != NULL)
		printf("%s\n", text);
	free(text);
	httpc_answer_free(&a);
	return text != NULL ? 0 : 1;
}

/* Prints one line of a change: "- field: old" or "+ field: new". */
static void
print_value(char sign, const char *field, const json_t *v)
{
	char *text =
	    json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

	printf("%c %s: ", sign, field);
	if (text != NULL)
		cli_print_clean(stdout, text, strlen(text));
	printf("\n");
	free(text);
}

/* The fields that differ between old and new, one level into objects. */
static size_t
print_changes(const char *prefix, const json_t *old, const json_t *new)
{
	json_t *keys = json_array(), *v;
	const char *k;
	size_t n = 0, i;

	json_object_foreach((json_t *)old, k, v)
	    json_array_append_new(keys, json_string(k));
	json_object_foreach((json_t *)new, k, v)
	{
		if (json_object_get(old, k) == NULL)
			json_array_append_new(keys, json_string(k));
	}
	json_array_foreach(keys, i, v)
	{
		const char *key = json_string_value(v);
		json_t *a = json_object_get(old, key);
		json_t *b = json_object_get(new, key);
		char field[200];
		snprintf(field, sizeof(field), "%s%s", prefix, key);
		if (json_equal(a, b))
			continue;
		if (prefix[0] == '\0' && json_is_object(a) &&
		    json_is_object(b)) {
			char sub[200];
			snprintf(sub, sizeof(sub), "%s.", key);
			n += print_changes(sub, a, b);
			continue;
		}
		if (a != NULL)
			print_value('-', field, a);
		if (b != NULL)
			print_value('+', field, b);
		n++;
	}
	json_decref(keys);
	return n;
}

static int
manifest_diff(struct cli *c, const char *name, const char *file)
{
	json_t *m = read_manifest(file), *prev = NULL, *planes;
	json_t *problems = json_array(), *warnings = json_array();
	struct httpc_answer a;
	char sha[65], list[128];
	int r;

	if (m == NULL) {
		json_decref(problems);
		json_decref(warnings);
		return 2;
	}
	/* What the broker would refuse is said, and the diff still shown. */
	if (!manifest_validate(m, name, problems, warnings))
		print_problems(file, "refused: ", problems);
	json_decref(problems);
	json_decref(warnings);
	r = fetch(c, name, 0, true, &a);
	if (r > 1) {
		json_decref(m);
		return r;
	}
	if (r == 0)
		prev = json_incref(json_object_get(a.json, "manifest"));
	char *canon = manifest_canonical(m, sha);
	bool canon_ok = canon != NULL;
	free(canon);
	char have[65] = "";
	if (r == 0)
		snprintf(have, sizeof(have), "%s",
		    json_string_value(json_object_get(a.json, "sha256")) ?: "");
	long long version =
	    r == 0 ? json_integer_value(json_object_get(a.json, "version")) : 0;
	if (r == 0)
		httpc_answer_free(&a);
	if (have[0] != '\0' && canon_ok && strcmp(have, sha) == 0) {
		printf("%s: no change (version %lld, sha256 %.12s)\n", name,
		    version, sha);
		json_decref(prev);
		json_decref(m);
		return 0;
	}
	planes = manifest_planes(prev, m);
	if (prev == NULL)
		printf("%s: no version at the broker: %s would be version 1\n",
		    name, file);
	else
		printf("%s: version %lld -> %lld\n", name, version,
		    version + 1);
	printf("planes: %s\n",
	    json_array_size(planes) > 0 ? joined(planes, list, sizeof(list))
					: "none");
	json_t *empty = json_object();
	print_changes("", prev != NULL ? prev : empty, m);
	json_decref(empty);
	json_decref(planes);
	json_decref(prev);
	json_decref(m);
	return 1;
}

/* The current version of each manifest, by name, from the broker's
 * GET /v1/manifests, page after page. */
static int
manifest_list(struct cli *c, bool json)
{
	json_t *all = json_array(), *e;
	char after[80] = "";
	const char *next;
	size_t i;
	int r;

	do {
		struct httpc_answer a;
		char path[160];
		snprintf(path, sizeof(path), "/v1/manifests?limit=%d%s%s",
		    LIST_PAGE, after[0] != '\0' ? "&after=" : "", after);
		if ((r = cli_call(c, c->cfg.broker, "GET", path, NULL, &a)) !=
		    0) {
			json_decref(all);
			return r;
		}
		json_array_extend(all, json_object_get(a.json, "manifests"));
		next = json_string_value(json_object_get(a.json, "next"));
		/* A next that is no name (or no step forward) ends the walk:
		 * never a loop on a broker's word. */
		if (next != NULL &&
		    (!manifest_name_ok(next) || strcmp(next, after) <= 0))
			next = NULL;
		if (next != NULL)
			snprintf(after, sizeof(after), "%s", next);
		httpc_answer_free(&a);
	} while (next != NULL);
	if (json) {
		json_t *o = json_pack("{s:o}", "manifests", all);
		char *text = json_dumps(o, JSON_COMPACT);
		if (text != NULL)
			printf("%s\n", text);
		free(text);
		json_decref(o);
		return 0;
	}
	printf("%-32s %7s  %-12s  %-20s  %s\n", "NAME", "VERSION", "SHA256",
	    "CREATED", "UPDATED");
	json_array_foreach(all, i, e)
	{
		const char *name =
		    json_string_value(json_object_get(e, "name"));
		const char *sha =
		    json_string_value(json_object_get(e, "sha256"));
		char created[32], updated[32];
		printf("%-32s %7lld  %-12.12s  %-20s  %s\n",
		    name != NULL && manifest_name_ok(name) ? name : "?",
		    (long long)json_integer_value(
			json_object_get(e, "version")),
		    sha != NULL && name_ok(sha, 64, "") ? sha : "?",
		    cli_time(json_object_get(e, "created"), created,
			sizeof(created)),
		    cli_time(json_object_get(e, "updated"), updated,
			sizeof(updated)));
	}
	json_decref(all);
	return 0;
}

int
launcher_manifest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "version", required_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *verb;
	long long version = 0;
	bool json = false;
	struct cli c;
	int ch, r, nargs;
	char *end;

	opterr = 0;
	optind = 1;
	/* Flags anywhere: "manifest get NAME --version 2". */
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'v':
			errno = 0;
			version = strtoll(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    version < 1) {
				fprintf(stderr,
				    "cordon manifest: --version is "
				    "a number from 1\n");
				return EXIT_USAGE;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			config = optarg;
			break;
		case 'h':
			return launcher_help("manifest", stdout);
		default:
			launcher_help("manifest", stderr);
			return EXIT_USAGE;
		}
	}
	nargs = argc - optind;
	verb = nargs > 0 ? argv[optind] : "";
	if (!((strcmp(verb, "put") == 0 && nargs >= 2) ||
		(strcmp(verb, "get") == 0 && nargs == 2) ||
		(strcmp(verb, "list") == 0 && nargs == 1) ||
		(strcmp(verb, "diff") == 0 && nargs == 3)) ||
	    (version > 0 && strcmp(verb, "get") != 0) ||
	    (nargs >= 2 && strcmp(verb, "put") != 0 &&
		!manifest_name_ok(argv[optind + 1]))) {
		launcher_help("manifest", stderr);
		return EXIT_USAGE;
	}
	if ((r = cli_open(&c, "cordon manifest", config, CLI_KEY_ADMIN)) != 0)
		return r;
	if (strcmp(verb, "put") == 0)
		r = manifest_put(&c, nargs - 1, argv + optind + 1);
	else if (strcmp(verb, "get") == 0)
		r = manifest_get(&c, argv[optind + 1], version, json);
	else if (strcmp(verb, "list") == 0)
		r = manifest_list(&c, json);
	else
		r = manifest_diff(&c, argv[optind + 1], argv[optind + 2]);
	cli_close(&c);
	return r;
}
