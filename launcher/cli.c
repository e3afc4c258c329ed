/*
 * The operator's commands about jobs: `cordon jobs` and `cordon patch`
 * ask cordon serve (the launcher's key), `cordon logs` asks the broker's
 * audit and the proxy's decision log (GET /v1/decisions?job=, page after
 * page: the admin key, no file on the proxy's host needed), and, from a
 * proxy without the admin key, its in-memory log of the job (the
 * launcher's key) or the decision log file; `cordon revoke` asks the
 * broker (the admin key).
 * Everything a job or a service chose is printed without control
 * characters when it goes to a terminal.
 */
#include "cli.h"

#include "decisions.h"
#include "path.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DECISION_LINE_MAX (64 * 1024)
#define LOGS_DECISIONS_MAX 100000 /* lines of one job cordon logs holds */

int
cli_open(struct cli *c, const char *prog, const char *config, enum cli_key key)
{
	char err[400];
	const char *file;
	int r;

	memset(c, 0, sizeof(*c));
	c->prog = prog;
	if (launcher_config_load(&c->cfg, config, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return EXIT_CONFIG;
	}
	c->loaded = true;
	file = key == CLI_KEY_ADMIN ? c->cfg.admin_key_file
				    : c->cfg.launcher_key_file;
	if (file == NULL ||
	    (r = launcher_read_key(file, c->key, sizeof(c->key))) < 0) {
		fprintf(stderr, "%s: the %s key (%s): %s\n", prog,
		    key == CLI_KEY_ADMIN ? "admin" : "launcher",
		    file != NULL ? file : "no key file configured",
		    file == NULL       ? "set it in the configuration"
			: r == -EINVAL ? "shorter than 32 characters"
				       : strerror(-r));
		cli_close(c);
		return EXIT_CONFIG;
	}
	return 0;
}

void
cli_close(struct cli *c)
{
	explicit_bzero(c->key, sizeof(c->key));
	if (c->loaded)
		launcher_config_free(&c->cfg);
	c->loaded = false;
}

int
cli_call(struct cli *c, const char *base, const char *method, const char *path,
    const json_t *body, struct httpc_answer *a)
{
	int r = httpc_request(base, method, path, c->key, NULL, body, 20000, a);

	if (r < 0) {
		fprintf(stderr, "%s: %s did not answer (%s)\n", c->prog, base,
		    strerror(-r));
		return EXIT_UNAVAIL;
	}
	if (a->status >= 200 && a->status < 300)
		return 0;
	const char *code = json_string_value(json_object_get(a->json, "error"));
	const char *m = launcher_answer_message(a);
	fprintf(stderr, "%s: %ld %s: ", c->prog, a->status,
	    code != NULL ? code : "error");
	cli_print_clean(stderr, m, strlen(m));
	fputc('\n', stderr);
	httpc_answer_free(a);
	return 1;
}

void
cli_print_clean(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		fputc(ch < 0x20 && ch != '\n' && ch != '\t' ? '?'
			: ch == 0x7f                        ? '?'
							    : ch,
		    f);
	}
}

const char *
cli_time(const json_t *t, char *buf, size_t len)
{
	struct tm tm;
	time_t v;

	if (!json_is_integer(t)) {
		snprintf(buf, len, "-");
		return buf;
	}
	v = (time_t)json_integer_value(t);
	if (gmtime_r(&v, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "-");
	return buf;
}

/* A string of o for a table: its value, cleaned, or "-". */
static const char *
cell(const json_t *o, const char *name, char *buf, size_t len)
{
	json_t *v = json_object_get(o, name);

	if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v)) {
		snprintf(buf, len, "%s", json_string_value(v));
		for (char *p = buf; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
	} else
		snprintf(buf, len, "-");
	return buf;
}

/* getopt_long's state, reset for a subcommand's own flags. */
static void
flags_reset(void)
{
	opterr = 0;
	optind = 1;
}

/* --- cordon jobs ---------------------------------------------------------- */

int
launcher_jobs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "manifest", required_argument, NULL, 'm' },
		{ "limit", required_argument, NULL, 'l' },
		{ "after", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "serve", required_argument, NULL, 'S' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *q[4] = { NULL },
		   *names[4] = { "state", "manifest", "limit", "after" };
	const char *config = NULL, *serve = NULL;
	bool json = false;
	struct httpc_answer a;
	struct cli c;
	struct buf path = BUF_INIT(1024);
	int ch, r;

	flags_reset();
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			q[0] = optarg;
			break;
		case 'm':
			q[1] = optarg;
			break;
		case 'l':
			q[2] = optarg;
			break;
		case 'a':
			q[3] = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			serve = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'h':
			return launcher_help("jobs", stdout);
		default:
			launcher_help("jobs", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		launcher_help("jobs", stderr);
		return EXIT_USAGE;
	}
	/* What goes into the query is checked here, so that it cannot
	 * become another query: serve checks the values. */
	for (int i = 0; i < 4; i++)
		if (q[i] != NULL && !name_ok(q[i], 64, "._-")) {
			fprintf(stderr,
			    "cordon jobs: --%s: not a value serve "
			    "takes\n",
			    names[i]);
			return EXIT_USAGE;
		}
	if ((r = cli_open(&c, "cordon jobs", config, CLI_KEY_LAUNCHER)) != 0)
		return r;
	(void)buf_printf(&path, "/v1/jobs");
	for (int i = 0, k = 0; i < 4; i++)
		if (q[i] != NULL)
			(void)buf_printf(&path, "%c%s=%s", k++ == 0 ? '?' : '&',
			    names[i], q[i]);
	r = cli_call(&c, serve != NULL ? serve : c.cfg.serve, "GET",
	    buf_str(&path), NULL, &a);
	buf_free(&path);
	cli_close(&c);
	if (r != 0)
		return r;
	if (json) {
		printf("%.*s", (int)a.body.len, a.body.data);
		httpc_answer_free(&a);
		return 0;
	}
	json_t *jobs = json_object_get(a.json, "jobs"), *j;
	size_t i;
	printf("%-26s %-8s %-20s %-20s %-20s %5s %-14s %s\n", "JOB", "STATE",
	    "MANIFEST", "STARTED", "ENDED", "EXIT", "STOP_REASON", "VERDICT");
	json_array_foreach(jobs, i, j)
	{
		char b[8][80];
		printf("%-26s %-8s %-20s %-20s %-20s %5s %-14s %s\n",
		    cell(j, "job", b[0], sizeof(b[0])),
		    cell(j, "state", b[1], sizeof(b[1])),
		    cell(j, "manifest", b[2], sizeof(b[2])),
		    cli_time(json_object_get(j, "started"), b[3], sizeof(b[3])),
		    cli_time(json_object_get(j, "ended"), b[4], sizeof(b[4])),
		    cell(j, "exit_code", b[5], sizeof(b[5])),
		    cell(j, "stop_reason", b[6], sizeof(b[6])),
		    cell(j, "verdict", b[7], sizeof(b[7])));
	}
	const char *next = json_string_value(json_object_get(a.json, "next"));
	if (next != NULL && name_ok(next, 63, "_-"))
		fprintf(stderr, "cordon jobs: more: cordon jobs --after %s\n",
		    next);
	httpc_answer_free(&a);
	return 0;
}

/* --- cordon patch --------------------------------------------------------- */

int
launcher_patch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "serve", required_argument, NULL, 'S' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *serve = NULL, *output = NULL;
	struct httpc_answer a;
	char path[160];
	struct cli c;
	int ch, r;

	flags_reset();
	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (ch == 'o')
			output = optarg;
		else if (ch == 'S')
			serve = optarg;
		else if (ch == 'c')
			config = optarg;
		else if (ch == 'h')
			return launcher_help("patch", stdout);
		else {
			launcher_help("patch", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !name_ok(argv[optind], 63, "_-")) {
		launcher_help("patch", stderr);
		return EXIT_USAGE;
	}
	if ((r = cli_open(&c, "cordon patch", config, CLI_KEY_LAUNCHER)) != 0)
		return r;
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", argv[optind]);
	r = cli_call(&c, serve != NULL ? serve : c.cfg.serve, "GET", path, NULL,
	    &a);
	cli_close(&c);
	if (r != 0)
		return r;
	const char *data = a.body.data != NULL ? a.body.data : "";
	if (output != NULL) {
		int fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0644);
		if (fd < 0 || path_write_all(fd, data, a.body.len) < 0 ||
		    close(fd) < 0) {
			fprintf(stderr, "cordon patch: %s: %s\n", output,
			    strerror(errno));
			httpc_answer_free(&a);
			return 1;
		}
	} else if (isatty(1)) {
		/* The patch holds what the job wrote: on a terminal, no
		 * byte of it may be an escape sequence. */
		cli_print_clean(stdout, data, a.body.len);
	} else if (fwrite(data, 1, a.body.len, stdout) != a.body.len) {
		httpc_answer_free(&a);
		return 1;
	}
	httpc_answer_free(&a);
	return 0;
}

/* --- cordon revoke -------------------------------------------------------- */

int
launcher_revoke(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reason", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *reason = NULL;
	bool json = false;
	struct httpc_answer a;
	char path[160];
	struct cli c;
	int ch, r;

	flags_reset();
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'r')
			reason = optarg;
		else if (ch == 'j')
			json = true;
		else if (ch == 'c')
			config = optarg;
		else if (ch == 'h')
			return launcher_help("revoke", stdout);
		else {
			launcher_help("revoke", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !name_ok(argv[optind], 63, "_-") ||
	    reason == NULL || reason[0] == '\0') {
		launcher_help("revoke", stderr);
		return EXIT_USAGE;
	}
	if ((r = cli_open(&c, "cordon revoke", config, CLI_KEY_ADMIN)) != 0)
		return r;
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", argv[optind]);
	json_t *body = json_pack("{s:s}", "reason", reason);
	r = cli_call(&c, c.cfg.broker, "POST", path, body, &a);
	json_decref(body);
	cli_close(&c);
	if (r != 0)
		return r;
	if (json) {
		printf("%.*s", (int)a.body.len, a.body.data);
		httpc_answer_free(&a);
		return 0;
	}
	json_t *prop = json_object_get(a.json, "propagated"), *v;
	size_t i;
	char b[2][200];
	printf("%s revoked (%s): %lld token(s) revoked; proxies acknowledged:",
	    cell(a.json, "job", b[0], sizeof(b[0])),
	    cell(a.json, "reason", b[1], sizeof(b[1])),
	    (long long)json_integer_value(
		json_object_get(a.json, "tokens_revoked")));
	json_array_foreach(json_object_get(prop, "acknowledged"), i, v)
	{
		char s[80];
		snprintf(s, sizeof(s), "%s", json_string_value(v) ?: "?");
		printf(" ");
		cli_print_clean(stdout, s, strlen(s));
	}
	if (json_array_size(json_object_get(prop, "acknowledged")) == 0)
		printf(" none");
	if (json_array_size(json_object_get(prop, "gone")) > 0)
		printf("; gone: %zu",
		    json_array_size(json_object_get(prop, "gone")));
	printf("\n");
	httpc_answer_free(&a);
	return 0;
}

/* --- cordon logs ---------------------------------------------------------- */

struct logline {
	char ts[40];
	char *text;
};

static int
by_ts(const void *a, const void *b)
{
	return strcmp(((const struct logline *)a)->ts,
	    ((const struct logline *)b)->ts);
}

/* One decision, readable. */
static char *
decision_text(const json_t *d)
{
	char b[9][300], ms[32] = "-";
	json_t *reason = json_object_get(d, "reason");
	json_t *detail = json_object_get(d, "detail");
	char *text = NULL;

	if (json_is_number(json_object_get(d, "ms")))
		snprintf(ms, sizeof(ms), "%.2f",
		    json_number_value(json_object_get(d, "ms")));
	if (asprintf(&text,
		"proxy   %-6s %s %s %s:%s%s%s%s%s%s status=%s ms=%s",
		cell(d, "decision", b[0], sizeof(b[0])),
		cell(d, "kind", b[1], sizeof(b[1])),
		cell(d, "method", b[2], sizeof(b[2])),
		cell(d, "host", b[3], sizeof(b[3])),
		cell(d, "port", b[4], sizeof(b[4])),
		cell(d, "path", b[5], sizeof(b[5])),
		json_is_string(reason) ? " reason=" : "",
		json_is_string(reason) ? cell(d, "reason", b[6], sizeof(b[6]))
				       : "",
		json_is_string(detail) ? " detail=" : "",
		json_is_string(detail) ? cell(d, "detail", b[7], sizeof(b[7]))
				       : "",
		cell(d, "status", b[8], sizeof(b[8])), ms) < 0)
		return NULL;
	return text;
}

/* One audit record, readable. */
static char *
audit_text(const json_t *rec)
{
	char b[3][200];
	char *detail = json_dumps(json_object_get(rec, "detail"),
	    JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	char *text = NULL;

	if (asprintf(&text, "broker  %-14s by %s %s",
		cell(rec, "event", b[0], sizeof(b[0])),
		cell(rec, "actor", b[1], sizeof(b[1])),
		detail != NULL ? detail : "") < 0)
		text = NULL;
	free(detail);
	return text;
}

static void
add_line(struct logline **lines, size_t *n, size_t *cap, const char *ts,
    char *text)
{
	if (text == NULL)
		return;
	if (*n == *cap) {
		size_t c = *cap == 0 ? 64 : *cap * 2;
		struct logline *l = realloc(*lines, c * sizeof(*l));
		if (l == NULL) {
			free(text);
			return;
		}
		*lines = l;
		*cap = c;
	}
	snprintf((*lines)[*n].ts, sizeof((*lines)[*n].ts), "%s",
	    ts != NULL ? ts : "");
	(*lines)[(*n)++].text = text;
}

/* The job's decisions from the proxy's decision log file: a new array,
 * or NULL when the file cannot be read. */
static json_t *
decisions_from_file(const char *file, const char *job)
{
	FILE *f = fopen(file, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	json_t *out;

	if (f == NULL)
		return NULL;
	out = json_array();
	while ((n = getline(&line, &cap, f)) > 0) {
		if (n > DECISION_LINE_MAX || strstr(line, job) == NULL)
			continue;
		json_t *d = json_loadb(line, (size_t)n, 0, NULL);
		const char *dj = json_string_value(json_object_get(d, "job"));
		if (dj != NULL && strcmp(dj, job) == 0)
			json_array_append(out, d);
		json_decref(d);
	}
	free(line);
	fclose(f);
	return out;
}

/*
 * The job's decisions from the proxy's GET /v1/decisions (the admin key),
 * page after page: a new array; NULL when the proxy did not answer or
 * refused (*ret_status its status, 0 for no answer).
 */
static json_t *
decisions_from_api(struct cli *admin, const char *job, long *ret_status)
{
	char path[200], cursor[DECISIONS_CURSOR_MAX] = "";
	json_t *out = json_array();

	*ret_status = 0;
	for (;;) {
		struct httpc_answer a;
		snprintf(path, sizeof(path),
		    "/v1/decisions?job=%s&limit=%d%s%s", job,
		    DECISIONS_LIMIT_MAX, cursor[0] != '\0' ? "&cursor=" : "",
		    cursor);
		if (httpc_request(admin->cfg.proxy, "GET", path, admin->key,
			NULL, NULL, 20000, &a) < 0) {
			json_decref(out);
			return NULL;
		}
		*ret_status = a.status;
		if (a.status != 200) {
			httpc_answer_free(&a);
			json_decref(out);
			return NULL;
		}
		json_array_extend(out, json_object_get(a.json, "decisions"));
		const char *next =
		    json_string_value(json_object_get(a.json, "next"));
		bool more = next != NULL && decisions_cursor_ok(next) &&
		    json_array_size(out) < LOGS_DECISIONS_MAX;
		if (more)
			snprintf(cursor, sizeof(cursor), "%s", next);
		httpc_answer_free(&a);
		if (!more)
			return out;
	}
}

int
launcher_logs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *job, *source = "proxy";
	bool json = false;
	struct httpc_answer a;
	struct cli admin, launcher;
	json_t *audit = NULL, *decisions = NULL, *v;
	char path[200];
	int ch, r;
	size_t i;

	flags_reset();
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'j')
			json = true;
		else if (ch == 'c')
			config = optarg;
		else if (ch == 'h')
			return launcher_help("logs", stdout);
		else {
			launcher_help("logs", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !name_ok(argv[optind], 63, "_-")) {
		launcher_help("logs", stderr);
		return EXIT_USAGE;
	}
	job = argv[optind];
	if ((r = cli_open(&admin, "cordon logs", config, CLI_KEY_ADMIN)) != 0)
		return r;
	if ((r = cli_open(&launcher, "cordon logs", config,
		 CLI_KEY_LAUNCHER)) != 0) {
		cli_close(&admin);
		return r;
	}
	/* The broker's side: the job's creation, its mints, its revoke. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s&limit=10000", job);
	if ((r = cli_call(&admin, admin.cfg.broker, "GET", path, NULL, &a)) !=
	    0)
		goto out;
	audit = json_incref(json_object_get(a.json, "records"));
	httpc_answer_free(&a);
	/* The proxy's: its decision log, rotated files too, with the admin
	 * key; from a proxy without it (401, 403), the job's log it holds,
	 * then the decision log file. */
	long status;
	decisions = decisions_from_api(&admin, job, &status);
	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	if (decisions == NULL && status != 0)
		fprintf(stderr,
		    "cordon logs: the proxy answered %ld to GET "
		    "/v1/decisions%s\n",
		    status,
		    status == 401 || status == 403
			? " (give it admin_key_sha256 to read its decision "
			  "log)"
			: "");
	if (decisions == NULL &&
	    httpc_request(launcher.cfg.proxy, "GET", path, launcher.key, NULL,
		NULL, 20000, &a) == 0) {
		if (a.status == 200)
			decisions =
			    json_incref(json_object_get(a.json, "decisions"));
		httpc_answer_free(&a);
	}
	if (decisions == NULL && launcher.cfg.decision_log != NULL) {
		source = launcher.cfg.decision_log;
		decisions = decisions_from_file(launcher.cfg.decision_log, job);
		if (decisions == NULL)
			fprintf(stderr, "cordon logs: %s: %s\n",
			    launcher.cfg.decision_log, strerror(errno));
	}
	if (decisions == NULL) {
		source = NULL;
		fprintf(stderr, "cordon logs: the proxy holds no log of %s%s\n",
		    job,
		    launcher.cfg.decision_log == NULL
			? " (set decision_log in the configuration to read "
			  "the proxy's file)"
			: "");
	}
	if (json_array_size(audit) == 0 && json_array_size(decisions) == 0) {
		fprintf(stderr,
		    "cordon logs: nothing of %s at the broker or "
		    "the proxy\n",
		    job);
		r = 1;
		goto out;
	}
	if (json) {
		json_t *o = json_pack("{s:s, s:O, s:O?, s:s?}", "job", job,
		    "audit", audit, "decisions", decisions, "decisions_from",
		    source);
		char *text = json_dumps(o, JSON_COMPACT);
		if (text != NULL)
			printf("%s\n", text);
		free(text);
		json_decref(o);
		goto out;
	}
	struct logline *lines = NULL;
	size_t n = 0, cap = 0;
	json_array_foreach(audit, i, v) add_line(&lines, &n, &cap,
	    json_string_value(json_object_get(v, "ts")), audit_text(v));
	json_array_foreach(decisions, i, v) add_line(&lines, &n, &cap,
	    json_string_value(json_object_get(v, "ts")), decision_text(v));
	qsort(lines, n, sizeof(*lines), by_ts);
	for (i = 0; i < n; i++) {
		cli_print_clean(stdout, lines[i].ts, strlen(lines[i].ts));
		fputc(' ', stdout);
		cli_print_clean(stdout, lines[i].text, strlen(lines[i].text));
		fputc('\n', stdout);
		free(lines[i].text);
	}
	free(lines);
out:
	json_decref(audit);
	json_decref(decisions);
	cli_close(&admin);
	cli_close(&launcher);
	return r;
}
