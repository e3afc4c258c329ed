/*
 * What every cordon program owes its operator, checked on the real
 * binaries: flags, a config that is wrong said in one line with the right
 * exit status, /healthz and /metrics, JSON-lines logs, and a SIGTERM that
 * stops it cleanly even with a client connected.
 */
#include "harness.h"
#include "http_client.h"
#include "service.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static const struct prog {
	const char *name; /* the service, as in logs and /healthz */
	const char *bin; /* the executable */
	const char *sub; /* its subcommand, if any */
	const char *display; /* how it names itself */
} progs[] = {
	{ "broker", "cordon-broker", NULL, "cordon-broker" },
	{ "proxy", "cordon-proxy", NULL, "cordon-proxy" },
	{ "hatch", "cordon-hatch", NULL, "cordon-hatch" },
	{ "launcher", "cordon", "serve", "cordon serve" },
};
#define NPROGS (sizeof(progs) / sizeof(progs[0]))

static char out[65536], err[65536];

/* Runs the program with up to four arguments; the exit status. */
static int
run(const struct prog *p, const char *a1, const char *a2, const char *a3,
    const char *a4)
{
	char bin[512];
	char *argv[8];
	int n = 0;

	snprintf(bin, sizeof(bin), "%s", harness_bin(p->bin));
	argv[n++] = bin;
	if (p->sub != NULL)
		argv[n++] = (char *)p->sub;
	const char *rest[] = { a1, a2, a3, a4 };
	for (int i = 0; i < 4 && rest[i] != NULL; i++)
		argv[n++] = (char *)rest[i];
	argv[n] = NULL;
	return harness_run(argv, out, sizeof(out), err, sizeof(err));
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* Writes text to a fresh file and returns its path (static). */
static const char *
write_config(const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/config.json", harness_tmpdir());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return path;
}

START_TEST(flags)
{
	const struct prog *p = &progs[_i];
	char want[128];

	ck_assert_int_eq(run(p, "--version", NULL, NULL, NULL), 0);
	snprintf(want, sizeof(want), "%s %s\n", p->display, CORDON_VERSION);
	ck_assert_str_eq(out, want);

	ck_assert_int_eq(run(p, "--help", NULL, NULL, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "--config FILE"));
	ck_assert_ptr_nonnull(strstr(out, "--listen ADDR"));

	static const char *const bad[][2] = {
		{ "--bogus", NULL },
		{ "stray", NULL },
		{ "--config", NULL },
		{ "--listen", "1.2.3.4" },
		{ "--listen", "example.com:80" },
		{ "--listen", "127.0.0.1:99999" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int st = run(p, bad[i][0], bad[i][1], NULL, NULL);
		ck_assert_msg(st == 64, "%s %s %s: exit %d", p->display,
		    bad[i][0], bad[i][1] ? bad[i][1] : "", st);
		ck_assert_msg(count_lines(err) == 1, "%s %s: stderr \"%s\"",
		    p->display, bad[i][0], err);
		ck_assert_msg(strncmp(err, p->display, strlen(p->display)) == 0,
		    "stderr names the program: %s", err);
	}
}
END_TEST

START_TEST(config_errors)
{
	const struct prog *p = &progs[_i];
	static const struct {
		const char *text, *says;
	} cases[] = {
		{ "{\"listen\": ", "line 1" },
		{ "{\"no_such_key\": 1}", "unknown key \"no_such_key\"" },
		{ "{\"listen\": 7701}",
		    "\"listen\" must be a non-empty string" },
		{ "{\"listen\": \"nowhere\"}", "\"listen\" nowhere" },
		{ "{\"log_level\": \"loud\"}", "\"log_level\" must be one of" },
		{ "{\"state_dir\": \"\"}",
		    "\"state_dir\" must be a non-empty" },
		{ "{\"listen\": \"127.0.0.1:1\", \"listen\": \"127.0.0.1:2\"}",
		    "duplicate" },
		{ "[1, 2]", "must be a JSON object" },
		{ "\"\\u0000\"", "line 1" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = write_config(cases[i].text);
		int st = run(p, "-n", "--config", path, NULL);

		ck_assert_msg(st == 78, "%s with %s: exit %d", p->display,
		    cases[i].text, st);
		ck_assert_msg(count_lines(err) == 1, "one line, not \"%s\"",
		    err);
		ck_assert_msg(strstr(err, cases[i].says) != NULL,
		    "%s with %s: \"%s\" does not say \"%s\"", p->display,
		    cases[i].text, err, cases[i].says);
	}

	ck_assert_int_eq(run(p, "-n", "--config", "/nonexistent/cordon.json",
			     NULL),
	    78);
	ck_assert_ptr_nonnull(strstr(err, "No such file"));

	char text[1024], state[300], key[300] = "";
	snprintf(state, sizeof(state), "%s/state", harness_tmpdir());
	/* cordon serve -n reads its launcher key (by default under ./var). */
	if (strcmp(p->display, "cordon serve") == 0) {
		snprintf(key, sizeof(key), "%s/launcher.key", harness_tmpdir());
		harness_write_file(key,
		    "crk_0123456789abcdef0123456789abcdef\n");
	}
	snprintf(text, sizeof(text),
	    "{\"log_level\": \"debug\", \"listen\": \"127.0.0.1:17999\", "
	    "\"state_dir\": \"%s\"%s%s%s}",
	    state, key[0] != '\0' ? ", \"launcher_key_file\": \"" : "", key,
	    key[0] != '\0' ? "\"" : "");
	ck_assert_int_eq(run(p, "-n", "--config", write_config(text), NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "configuration ok"));
	/* -n checks; it creates nothing. */
	ck_assert_int_eq(access(state, F_OK), -1);
}
END_TEST

/* Opens a keep-alive connection that has had one answer and stays idle. */
static int
idle_client(const struct daemon *d)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	struct sockaddr_storage sa;
	socklen_t len;
	char buf[2048];
	int fd;

	ck_assert_int_eq(service_parse_addr(d->addr, &sa, &len), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, len), 0);
	ck_assert_int_eq(write(fd, req, sizeof(req) - 1),
	    (ssize_t)sizeof(req) - 1);
	ck_assert_int_gt(read(fd, buf, sizeof(buf)), 0);
	ck_assert_int_eq(strncmp(buf, "HTTP/1.1 200 ", 13), 0);
	return fd;
}

START_TEST(serve_and_stop)
{
	const struct prog *p = &progs[_i];
	struct daemon d;
	json_t *v, *lines, *line;
	long status;
	char want[128], path[400];
	struct stat st;
	size_t i;

	ck_assert_int_eq(daemon_start(&d, p->name, NULL), 0);

	v = harness_get_json(&d, "/healthz", &status);
	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "ok");
	ck_assert_str_eq(json_string_value(json_object_get(v, "svc")), p->name);
	ck_assert_str_eq(json_string_value(json_object_get(v, "version")),
	    CORDON_VERSION);
	json_decref(v);

	v = harness_get_json(&d, "/no/such/path", &status);
	ck_assert_int_eq(status, 404);
	ck_assert_str_eq(json_string_value(json_object_get(v, "error")),
	    "not_found");
	json_decref(v);

	struct httpc_answer a;
	ck_assert_int_eq(httpc_request(d.base, "GET", "/metrics", NULL, NULL,
			     NULL, 5000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	snprintf(out, sizeof(out), "%s", buf_str(&a.body));
	httpc_answer_free(&a);
	snprintf(want, sizeof(want),
	    "cordon_build_info{svc=\"%s\",version=\"%s\"} 1\n", p->name,
	    CORDON_VERSION);
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_ptr_nonnull(
	    strstr(out, "cordon_http_responses_total{code=\"404\"} 1\n"));

	/* State lives under ./var/<service> by default, private. */
	snprintf(path, sizeof(path), "%s/var/%s", d.dir, p->name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);

	/* An idle client must not hold the stop past the grace period. */
	int fd = idle_client(&d);
	ck_assert_int_eq(daemon_stop(&d), 0);
	close(fd);

	lines = daemon_log_lines(&d);
	bool stopping = false, stopped = false;
	json_array_foreach(lines, i, line)
	{
		const char *ev =
		    json_string_value(json_object_get(line, "event"));
		ck_assert_msg(json_is_object(line), "not JSON: %s",
		    json_string_value(line));
		ck_assert_ptr_nonnull(json_object_get(line, "ts"));
		/* "info" unless the config asks for more. */
		ck_assert_str_ne(json_string_value(
				     json_object_get(line, "level")),
		    "debug");
		ck_assert_str_eq(json_string_value(
				     json_object_get(line, "svc")),
		    p->name);
		ck_assert_ptr_nonnull(ev);
		stopping |= strcmp(ev, "stopping") == 0;
		stopped |= strcmp(ev, "stopped") == 0;
	}
	ck_assert(stopping && stopped);
	json_decref(lines);
}
END_TEST

START_TEST(port_in_use)
{
	const struct prog *p = &progs[_i];
	struct daemon d;

	ck_assert_int_eq(daemon_start(&d, p->name, NULL), 0);
	int st = run(p, "--listen", d.addr, NULL, NULL);
	ck_assert_int_eq(st, 71);
	ck_assert_ptr_nonnull(strstr(err, "\"event\":\"listen_failed\""));
	ck_assert_ptr_nonnull(strstr(err, "Address already in use"));
	ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

static void
read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

START_TEST(broker_keys)
{
	static const char *const roles[] = { "admin", "launcher", "verifier" };
	char path[400], keys[3][128], again[128], cfg[512], logtext[65536];
	struct daemon d, d2;
	struct stat st;

	ck_assert_int_eq(daemon_start(&d, "broker", NULL), 0);
	ck_assert_int_eq(daemon_stop(&d), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/var/broker/keys/%s.key", d.dir,
		    roles[i]);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 0600);
		read_file(path, keys[i], sizeof(keys[i]));
		ck_assert_int_eq(strncmp(keys[i], "crk_", 4), 0);
		ck_assert_uint_eq(strlen(keys[i]), 43);
		keys[i][42] = '\0';
	}
	ck_assert_str_ne(keys[0], keys[1]);
	ck_assert_str_ne(keys[1], keys[2]);
	read_file(d.log, logtext, sizeof(logtext));
	ck_assert_ptr_nonnull(strstr(logtext, "\"event\":\"key_created\""));
	for (int i = 0; i < 3; i++)
		ck_assert_msg(strstr(logtext, keys[i]) == NULL,
		    "the %s key's value is in the log", roles[i]);

	/* A restart on the same state keeps the keys. */
	snprintf(cfg, sizeof(cfg), "{\"state_dir\": \"%s/var/broker\"}", d.dir);
	ck_assert_int_eq(daemon_start(&d2, "broker", cfg), 0);
	ck_assert_int_eq(daemon_stop(&d2), 0);
	read_file(d2.log, logtext, sizeof(logtext));
	ck_assert_ptr_null(strstr(logtext, "\"event\":\"key_created\""));
	ck_assert_ptr_nonnull(strstr(logtext, "\"event\":\"key_loaded\""));
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/var/broker/keys/%s.key", d.dir,
		    roles[i]);
		read_file(path, again, sizeof(again));
		ck_assert_int_eq(strncmp(again, keys[i], 42), 0);
	}
}
END_TEST

/* Reads datagrams from fd for up to ms, appending them to out. */
static void
collect_notify(int fd, char *into, size_t len, int ms)
{
	size_t used = strlen(into);

	for (int waited = 0; waited < ms; waited += 10) {
		char msg[512];
		ssize_t n = recv(fd, msg, sizeof(msg) - 1, MSG_DONTWAIT);
		if (n > 0) {
			msg[n] = '\0';
			used += (size_t)snprintf(into + used, len - used, "%s|",
			    msg);
			continue;
		}
		usleep(10 * 1000);
	}
}

START_TEST(systemd_notify_and_watchdog)
{
	const struct prog *p = &progs[_i];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	static char seen[16384];
	struct daemon d;
	int fd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/notify",
	    harness_tmpdir());
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	setenv("NOTIFY_SOCKET", sun.sun_path, 1);
	setenv("WATCHDOG_USEC", "200000", 1); /* a ping every 100 ms */
	ck_assert_int_eq(daemon_start(&d, p->name, NULL), 0);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");

	seen[0] = '\0';
	collect_notify(fd, seen, sizeof(seen), 600);
	ck_assert_msg(strstr(seen, "READY=1\nSTATUS=listening on 127.0.0.1:") !=
		NULL,
	    "%s: %s", p->name, seen);
	/* Several pings in 600 ms: the watchdog is answered. */
	char *w = strstr(seen, "WATCHDOG=1");
	ck_assert_msg(w != NULL && strstr(w + 1, "WATCHDOG=1") != NULL,
	    "%s: %s", p->name, seen);
	ck_assert_int_eq(daemon_stop(&d), 0);
	collect_notify(fd, seen, sizeof(seen), 100);
	ck_assert_msg(strstr(seen, "STOPPING=1") != NULL, "%s: %s", p->name,
	    seen);
	close(fd);
}
END_TEST

static Suite *
services_suite(void)
{
	Suite *s = suite_create("services");
	TCase *tc = tcase_create("every_program");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, flags, 0, NPROGS);
	tcase_add_loop_test(tc, config_errors, 0, NPROGS);
	tcase_add_loop_test(tc, serve_and_stop, 0, NPROGS);
	tcase_add_loop_test(tc, port_in_use, 0, NPROGS);
	tcase_add_loop_test(tc, systemd_notify_and_watchdog, 0, NPROGS);
	suite_add_tcase(s, tc);

	tc = tcase_create("broker");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, broker_keys);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(services_suite());
}
