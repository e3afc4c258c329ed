/*
 * `cordon drill` end to end: the hostile agent against a real broker,
 * proxy and hatch, upstreams on 127.0.0.1 and real namespaces. Against
 * a sound manifest every attempt is stopped and the drill exits 0; with
 * an allowlist entry that opens the broker's port, the drill reports the
 * row that escaped and exits 1: the drill can fail. The example's
 * tickets API is HTTPS here as in the quickstart (a test CA the proxy
 * trusts, 401 without its key, an echo of the request's headers), and an
 * OAuth issuer (jobs/issuers/issuer.py) backs a second injecting rule,
 * so that the injection rows play over terminated TLS and the issuer
 * rows have a credential to see revoked. The tickets API is the
 * quickstart's own (deploy/examples/upstream.py), with its public status
 * page that shows the last request's headers (the key among them), which
 * the example reaches as status.tickets.internal on a rule that injects
 * nothing: another job's injected request comes first, and the drill's
 * inject_stored must find the key it left there redacted.
 */
#include "harness.h"
#include "token.h"
#include "upstream.h"
#include "util.h"

#include <arpa/inet.h>
#include <check.h>
#include <ctype.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static struct stack st;
static struct upstream *plain;
/* The orders API (HTTPS, the OAuth issuer's token injected), with a leaf
 * of the test CA. */
static struct upstream *orders;
static char cadir[300], ca[400];
static pid_t issuer_pid = -1, tickets_pid = -1;
static unsigned issuer_port;
/* The tickets API: the quickstart's upstream.py (HTTPS, wants its key,
 * its status page), tickets.internal's leaf and status.tickets.internal's
 * by SNI. */
static unsigned tickets_port;

#define TICKETS_KEY "tk_drill_0123456789abcdef"

/* deploy/examples/upstream.py on free ports of 127.0.0.1, as the
 * quickstart runs it (its invoices listener unused here). */
static void
tickets_start(void)
{
	char cert[400], key[400], scert[400], skey[400], portf[400], keyf[400],
	    line[64];
	unsigned plain_port = 0;

	snprintf(cert, sizeof(cert), "%s/tickets.internal.pem", cadir);
	snprintf(key, sizeof(key), "%s/tickets.internal.key", cadir);
	snprintf(scert, sizeof(scert), "%s/status.tickets.internal.pem", cadir);
	snprintf(skey, sizeof(skey), "%s/status.tickets.internal.key", cadir);
	snprintf(portf, sizeof(portf), "%s/tickets.ports", cadir);
	snprintf(keyf, sizeof(keyf), "%s/tickets-key", cadir);
	harness_write_file(keyf, TICKETS_KEY "\n");
	tickets_pid = fork();
	ck_assert_int_ge(tickets_pid, 0);
	if (tickets_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/python3", "python3", "-B",
		    CORDON_SOURCE_DIR "/deploy/examples/upstream.py", "--bind",
		    "127.0.0.1", "--plain", "0", "--root",
		    CORDON_SOURCE_DIR "/deploy/examples/invoices", "--tls", "0",
		    "--cert", cert, "--key", key, "--name-cert",
		    "status.tickets.internal", scert, skey, "--api-key-file",
		    keyf, "--port-file", portf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	ck_assert_int_eq(sscanf(line, "%u %u", &plain_port, &tickets_port), 2);
	ck_assert_uint_gt(tickets_port, 0);
}

/* The tickets API's status page, read directly (curl, the test CA): the
 * JSON it shows of the last request the API served. Asserts. */
static json_t *
tickets_status(void)
{
	static char out[1 << 16], err[1 << 12];
	char url[200], resolve[200];
	char *argv[] = { "/usr/bin/curl", "-s", "--max-time", "5", "--cacert",
		ca, "--resolve", resolve, url, NULL };

	snprintf(url, sizeof(url), "https://status.tickets.internal:%u/status",
	    tickets_port);
	snprintf(resolve, sizeof(resolve),
	    "status.tickets.internal:%u:127.0.0.1", tickets_port);
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    0);
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "the status page: %s %s", out, err);
	return j;
}

/* The OAuth issuer on 127.0.0.1 over TLS by the test CA. */
static void
issuer_start(void)
{
	char cert[400], key[400], portf[400], events[400], line[32];

	snprintf(cert, sizeof(cert), "%s/127.0.0.1.pem", cadir);
	snprintf(key, sizeof(key), "%s/127.0.0.1.key", cadir);
	snprintf(portf, sizeof(portf), "%s/issuer.port", cadir);
	snprintf(events, sizeof(events), "%s/issuer.jsonl", cadir);
	issuer_pid = fork();
	ck_assert_int_ge(issuer_pid, 0);
	if (issuer_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/python3", "python3", "-B",
		    CORDON_SOURCE_DIR
		    "/tests/integration/jobs/issuers/issuer.py",
		    "--cert", cert, "--key", key, "--port-file", portf,
		    "--events", events, (char *)NULL);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	issuer_port = (unsigned)strtoul(line, NULL, 10);
	ck_assert_uint_gt(issuer_port, 0);
}

/* The launcher's configuration gets the admin key, as the quickstart's
 * has it: the drill asks the broker which secrets are an issuer's. */
static void
launcher_admin_key(void)
{
	char path[400];
	json_t *cfg = json_load_file(st.launcher_cfg, 0, NULL);

	ck_assert_ptr_nonnull(cfg);
	snprintf(path, sizeof(path), "%s/admin.key", cadir);
	harness_write_file(path, st.admin);
	json_object_set_new(cfg, "admin_key_file", json_string(path));
	ck_assert_int_eq(json_dump_file(cfg, st.launcher_cfg, 0), 0);
	json_decref(cfg);
}

/*
 * The example's invoices API, as the quickstart serves it (python's
 * http.server): it answers a request's head at once, without reading the
 * body, and closes. Every byte it was sent is kept, to show what left the
 * proxy.
 */
static struct {
	int fd;
	uint16_t port;
	pthread_t thread;
	pthread_mutex_t mu;
	char seen[1 << 16];
	size_t len;
} early = { .fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

static void *
early_serve(void *arg)
{
	(void)arg;
	for (int c; (c = accept(early.fd, NULL, NULL)) >= 0; close(c)) {
		static const char ok[] = "HTTP/1.0 200 OK\r\nContent-Length: "
					 "3\r\nConnection: close\r\n\r\nok\n";
		char b[4096];
		bool answered = false;
		struct pollfd p = { .fd = c, .events = POLLIN };
		while (poll(&p, 1, 500) == 1) {
			ssize_t n = read(c, b, sizeof(b));
			if (n <= 0)
				break;
			pthread_mutex_lock(&early.mu);
			size_t room = sizeof(early.seen) - 1 - early.len;
			size_t k = (size_t)n < room ? (size_t)n : room;
			memcpy(early.seen + early.len, b, k);
			early.len += k;
			early.seen[early.len] = '\0';
			answered = answered ||
			    memmem(early.seen, early.len, "\r\n\r\n", 4) !=
				NULL;
			pthread_mutex_unlock(&early.mu);
			if (answered) {
				(void)!write(c, ok, sizeof(ok) - 1);
				break;
			}
		}
	}
	return NULL;
}

static void
early_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	early.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(early.fd, 0);
	ck_assert_int_eq(bind(early.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(early.fd, 16), 0);
	ck_assert_int_eq(getsockname(early.fd, (struct sockaddr *)&a, &len), 0);
	early.port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&early.thread, NULL, early_serve, NULL),
	    0);
}

/* The example manifest (deploy/examples/support-triage.json), its
 * invoices API moved to the test upstream's port (and POST allowed there,
 * for the drill's placements in a body), and what the drill
 * needs to place tokens everywhere: a second capability of another
 * audience with a plain rule of its own (notes.internal), and a plain
 * rule without an audience (status.internal), both on the same upstream. */
static void
put_example(void)
{
	json_error_t e;
	json_t *m = json_load_file(CORDON_SOURCE_DIR
	    "/deploy/examples/support-triage.json",
	    0, &e);
	json_t *rule;
	size_t i;

	ck_assert_msg(m != NULL, "the example manifest: %s", e.text);
	json_array_foreach(json_object_get(m, "egress"), i, rule)
	{
		if (strcmp(json_string_value(json_object_get(rule, "host")),
			"invoices.internal") == 0) {
			json_object_set_new(rule, "port",
			    json_integer(early.port));
			/* The drill's body placements go with POST (a body
			 * on GET is refused, body_on_get). */
			json_array_append_new(json_object_get(rule, "methods"),
			    json_string("POST"));
		}
		/* The injecting rule (terminated) on the echoing HTTPS
		 * upstream that wants the key: the drill reads what the swap
		 * made of its request; and its status page, under another
		 * name, on a rule that injects nothing. */
		if (strcmp(json_string_value(json_object_get(rule, "host")),
			"tickets.internal") == 0 ||
		    strcmp(json_string_value(json_object_get(rule, "host")),
			"status.tickets.internal") == 0) {
			ck_assert_str_eq(json_string_value(
					     json_object_get(rule, "tls")),
			    "terminate");
			json_object_set_new(rule, "port",
			    json_integer(tickets_port));
		}
	}
	json_decref(
	    harness_expect(&st.broker, 200, "PUT", "/v1/secrets/tickets-key",
		st.admin, NULL, json_pack("{s:s}", "value", TICKETS_KEY)));
	/* An OAuth issuer's credential, injected on a terminated rule of
	 * its own: obtained for the job, revoked at the issuer at the
	 * stop. */
	char tok[128], rev[128];
	snprintf(tok, sizeof(tok), "https://127.0.0.1:%u/oauth/token",
	    issuer_port);
	snprintf(rev, sizeof(rev), "https://127.0.0.1:%u/oauth/revoke",
	    issuer_port);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/secrets/orders-api", st.admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", tok, "client_id",
		"cordon-test", "client_secret", "s3cret-client",
		"revocation_url", rev)));
	json_array_append_new(json_object_get(m, "capabilities"),
	    json_pack("{s:s, s:s, s:{s:[s]}, s:i, s:s}", "name", "orders.read",
		"audience", "orders-api", "params", "shop", "1", "ttl_seconds",
		900, "reason", "an issuer's credential"));
	json_array_append_new(json_object_get(m, "egress"),
	    json_pack("{s:s, s:i, s:[s], s:[s], s:s, s:s, s:[s], s:s, "
		      "s:{s:s, s:s, s:s, s:s}}",
		"host", "orders.internal", "port", upstream_port(orders),
		"methods", "GET", "paths", "/orders/", "audience", "orders-api",
		"tls", "terminate", "allow_cidrs", "127.0.0.0/8", "reason",
		"an issuer-backed API", "inject", "secret", "orders-api",
		"header", "Authorization", "format", "Bearer {secret}",
		"capability", "orders.read"));
	json_array_append_new(json_object_get(m, "capabilities"),
	    json_pack("{s:s, s:s, s:{s:[s]}, s:i, s:s}", "name", "notes.write",
		"audience", "notes-api", "params", "board", "7", "ttl_seconds",
		900, "reason", "the drill's second audience"));
	json_array_append_new(json_object_get(m, "egress"),
	    json_pack("{s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s}", "host",
		"notes.internal", "port", early.port, "methods", "GET", "paths",
		"/notes/", "audience", "notes-api", "allow_cidrs",
		"127.0.0.0/8", "reason", "another audience"));
	json_array_append_new(json_object_get(m, "egress"),
	    json_pack("{s:s, s:i, s:[s], s:[s], s:[s], s:s}", "host",
		"status.internal", "port", early.port, "methods", "GET",
		"paths", "/status/", "allow_cidrs", "127.0.0.0/8", "reason",
		"no audience"));
	/* A rule that allows websockets, for proxy_upgrade_protocol's h2c
	 * (which the proxy forwarded before beede47). */
	json_array_append_new(json_object_get(m, "egress"),
	    json_pack("{s:s, s:i, s:[s], s:[s], s:b, s:[s], s:s}", "host",
		"live.internal", "port", upstream_port(plain), "methods", "GET",
		"paths", "/live/", "upgrade", 1, "allow_cidrs", "127.0.0.0/8",
		"reason", "websockets"));
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/support-triage", st.admin, NULL, m));
}

/* A small manifest with a rule for the hatch's port, under a name that
 * resolves to 127.0.0.1: an operator's mistake (the broker's own port
 * the proxy refuses whatever the rules say). */
static void
put_weak(void)
{
	const char *port = strrchr(st.hatch.base, ':') + 1;
	json_t *m = json_pack("{s:s, s:[s], "
			      "s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}], "
			      "s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s}, "
			      "{s:s, s:i, s:[s], s:[s], s:s, s:[s]}], "
			      "s:{s:i, s:i, s:i, s:i, s:i}}",
	    "name", "drill-weak", "command", "/bin/true", "capabilities",
	    "name", "x.read", "audience", "api", "params", "t", "1",
	    "ttl_seconds", 900, "reason", "read x", "egress", "host",
	    "api.test", "port", upstream_port(plain), "methods", "GET", "paths",
	    "/ok/", "reason", "the api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api", "host", "svc.test", "port", atoi(port),
	    "methods", "GET", "paths", "/", "reason", "a mistake",
	    "allow_cidrs", "127.0.0.0/8", "limits", "wall_seconds", 120,
	    "memory_mb", 256, "pids", 64, "output_kb", 1024, "disk_mb", 64);

	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/drill-weak", st.admin, NULL, m));
}

static void
setup(void)
{
	static const char *const hosts[] = { "tickets.internal",
		"status.tickets.internal", "orders.internal", "127.0.0.1",
		NULL };
	static char broker_cfg[600];
	struct stack_options o = { .uid_base = 330000,
		.drill = true,
		.hosts = "127.0.0.1 api.test\n127.0.0.1 svc.test\n"
			 "127.0.0.1 invoices.internal\n"
			 "127.0.0.1 notes.internal\n127.0.0.1 status.internal\n"
			 "127.0.0.1 tickets.internal\n"
			 "127.0.0.1 status.tickets.internal\n"
			 "127.0.0.1 orders.internal\n"
			 "127.0.0.1 live.internal\n"
			 "127.0.0.1 api.github.com\n",
		.upstream_ca_file = ca,
		.broker_config = broker_cfg };
	char cert[400], key[400];

	signal(SIGPIPE, SIG_IGN);
	snprintf(cadir, sizeof(cadir), "%s", harness_tmpdir());
	snprintf(ca, sizeof(ca), "%s/ca.pem", cadir);
	ck_assert_int_eq(test_ca_make(cadir, hosts), 0);
	snprintf(broker_cfg, sizeof(broker_cfg), "{\"issuer_ca_file\": \"%s\"}",
	    ca);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	tickets_start();
	snprintf(cert, sizeof(cert), "%s/orders.internal.pem", cadir);
	snprintf(key, sizeof(key), "%s/orders.internal.key", cadir);
	orders = upstream_start(cert, key);
	ck_assert_ptr_nonnull(orders);
	issuer_start();
	early_start();
	stack_start(&st, &o);
	launcher_admin_key();
	put_example();
	put_weak();
}

static void
teardown(void)
{
	if (issuer_pid > 1) {
		kill(issuer_pid, SIGKILL);
		waitpid(issuer_pid, NULL, 0);
		issuer_pid = -1;
	}
	if (tickets_pid > 1) {
		kill(tickets_pid, SIGKILL);
		waitpid(tickets_pid, NULL, 0);
		tickets_pid = -1;
	}
	upstream_stop(orders);
	upstream_stop(plain);
	shutdown(early.fd, SHUT_RDWR);
	pthread_join(early.thread, NULL);
	close(early.fd);
	stack_stop(&st);
}

/* What the last drill wrote on stderr. */
static char drill_err[1 << 16];

/* Reads what is there of fd into buf (len bytes, *got so far). */
static void
drain(int fd, char *buf, size_t len, size_t *got)
{
	ssize_t n;

	while (*got + 1 < len && (n = read(fd, buf + *got, len - 1 - *got)) > 0)
		*got += (size_t)n;
	buf[*got] = '\0';
}

/* `cordon drill` as harness_run runs a command, but with the drill's own
 * deadline (a whole hostile job, past harness_run's 10 s): its exit
 * status, or -1 when it ran past 90 s. */
static int
drill(const char *manifest, bool json, char *out, size_t outlen)
{
	char *argv[] = { (char *)harness_bin("cordon"), "drill", "--config",
		st.launcher_cfg, "--manifest", (char *)manifest,
		json ? "--json" : NULL, NULL };
	int po[2], pe[2], status = -1;
	size_t gout = 0, gerr = 0;
	pid_t pid;

	ck_assert_int_eq(pipe2(po, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(pipe2(pe, O_CLOEXEC | O_NONBLOCK), 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL); /* as a shell runs it */
		if (dup2(po[1], STDOUT_FILENO) < 0 ||
		    dup2(pe[1], STDERR_FILENO) < 0 ||
		    chdir(harness_tmpdir()) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	close(po[1]);
	close(pe[1]);
	for (int64_t t0 = monotonic_ms();;) {
		struct pollfd p[2] = { { po[0], POLLIN, 0 },
			{ pe[0], POLLIN, 0 } };
		poll(p, 2, 50);
		drain(po[0], out, outlen, &gout);
		drain(pe[0], drill_err, sizeof(drill_err), &gerr);
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (monotonic_ms() - t0 > 90000) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			status = -1;
			break;
		}
	}
	drain(po[0], out, outlen, &gout);
	drain(pe[0], drill_err, sizeof(drill_err), &gerr);
	close(po[0]);
	close(pe[0]);
	if (status == -1)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static const json_t *
row(const json_t *report, const char *attempt)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(report, "attempts"), i, v)
	{
		if (strcmp(json_string_value(json_object_get(v, "attempt")),
			attempt) == 0)
			return v;
	}
	ck_abort_msg("no row %s", attempt);
	return NULL;
}

static void
assert_row(const json_t *report, const char *attempt, const char *result,
    const char *where_has)
{
	const json_t *r = row(report, attempt);
	const char *res = json_string_value(json_object_get(r, "result"));
	const char *where = json_string_value(json_object_get(r, "where"));

	ck_assert_msg(strcmp(res, result) == 0 && strstr(where, where_has),
	    "%s: %s, %s (wanted %s, \"%s\")", attempt, res, where, result,
	    where_has);
}

/* Every whole crd_ token the upstream (early) saw is one token, the
 * job's own: as the bearer of a request for invoices.internal, its
 * audience. Call with early.mu held. */
static void
assert_upstream_saw_only_own_bearer(void)
{
	static const char bearer[] = "Authorization: Bearer ";
	const char *seen = early.seen, *end = early.seen + early.len, *p;
	char own[64] = "";

	for (p = seen; (p = memmem(p, (size_t)(end - p), "crd_", 4)) != NULL;
	     p += 4) {
		const char *line = p, *host = NULL;
		size_t k = 4;

		while (p + k < end && k < TOKEN_LEN &&
		    isalnum((unsigned char)p[k]))
			k++;
		if (k < TOKEN_LEN)
			continue; /* not a whole token */
		while (line > seen && line[-1] != '\n')
			line--;
		/* The Host of the request the line is in: the last before. */
		for (const char *h = seen;
		     (h = memmem(h, (size_t)(line - h), "\nHost: ", 7)) != NULL;
		     h += 7)
			host = h;
		ck_assert_msg(line + sizeof(bearer) - 1 == p &&
			memcmp(line, bearer, sizeof(bearer) - 1) == 0 &&
			host != NULL &&
			strncmp(host + 7, "invoices.internal", 17) == 0,
		    "a token reached the upstream outside the job's own "
		    "bearer: %.200s",
		    line);
		ck_assert_msg(own[0] == '\0' || memcmp(own, p, TOKEN_LEN) == 0,
		    "two tokens reached the upstream: %.42s and %.42s", own, p);
		memcpy(own, p, TOKEN_LEN);
	}
}

/* No row says ESCAPED; none is untested but the CPU burn (a loaded host
 * may never let the job reach its limit). */
static void
assert_none_escaped(const json_t *report)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(report, "attempts"), i, v)
	{
		const char *a =
		    json_string_value(json_object_get(v, "attempt"));
		const char *r = json_string_value(json_object_get(v, "result"));

		ck_assert_msg(strcmp(r, "ESCAPED") != 0, "%s: ESCAPED, %s", a,
		    json_string_value(json_object_get(v, "where")));
		ck_assert_msg(strcmp(r, "untested") != 0 ||
			strcmp(a, "cpu_burn") == 0,
		    "%s: untested, %s", a,
		    json_string_value(json_object_get(v, "where")));
	}
}

/* The table in docs/drill.md names exactly the report's rows, in its
 * first column (`step`). */
static void
assert_rows_are_the_docs(const json_t *report)
{
	FILE *f = fopen(CORDON_SOURCE_DIR "/docs/drill.md", "re");
	char line[4096];
	size_t documented = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		char step[64];
		if (sscanf(line, "| `%63[a-z0-9_]` |", step) != 1)
			continue;
		documented++;
		row(report, step); /* aborts when the report has no such row */
	}
	fclose(f);
	ck_assert_uint_eq(documented,
	    json_array_size(json_object_get(report, "attempts")));
}

/* Another job of the example, before the drill: one injected request to
 * the tickets API, as the quickstart's example job makes. The key is then
 * on the status page in clear (read directly, around the proxy), and
 * once the broker lists bindings (GET /v1/bindings), the address the
 * request went to is bound to tickets-key before the drill starts. */
static void
another_job_injects(void)
{
	static char out[1 << 20], err[1 << 16];
	char script[1200];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "support-triage",
		"--", "/bin/sh", "-c", script, NULL };

	snprintf(script, sizeof(script),
	    "tok=$(curl -s -X POST http://broker.cordon/v1/token -d "
	    "'{\"capability\": \"tickets.read\", \"params\": {\"queue\": "
	    "\"support\"}}' | sed -n "
	    "'s/.*\"access_token\":\"\\([^\"]*\\)\".*/\\1/p'); "
	    "echo \"ticket=$(curl -s -o /dev/null -w '%%{http_code}' -H "
	    "\"Authorization: Bearer $tok\" "
	    "https://tickets.internal:%u/tickets/T-1042.json)\"",
	    tickets_port);
	int status =
	    harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL && status == 0,
	    "the other job (status %d): %.2000s %.2000s", status, out, err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_msg(text != NULL && strstr(text, "ticket=200") != NULL,
	    "the other job's injected request: %s", text ?: out);
	json_decref(j);

	json_t *page = tickets_status();
	char *shown = json_dumps(page, JSON_COMPACT);
	ck_assert_ptr_nonnull(shown);
	ck_assert_msg(strstr(shown, "\"Key " TICKETS_KEY "\"") != NULL,
	    "the status page does not show the key it was sent: %s", shown);
	free(shown);
	json_decref(page);

	char addr[40];
	snprintf(addr, sizeof(addr), "\"127.0.0.1:%u\"", tickets_port);
	for (int i = 0; i < 100; i++) {
		long code = 0;
		json_t *b = harness_call(&st.broker, "GET", "/v1/bindings",
		    st.admin, NULL, NULL, &code);
		char *list = b != NULL ? json_dumps(b, JSON_COMPACT) : NULL;
		bool bound = list != NULL && strstr(list, addr) != NULL;
		free(list);
		json_decref(b);
		if (code != 200 || bound)
			break; /* no bindings at the broker yet, or bound */
		usleep(100000);
	}
}

/* Every attempt of the drill against the example manifest ends where it
 * should, and the drill says so with exit 0. */
START_TEST(the_drill_stops_every_attempt)
{
	static char out[1 << 20];
	static const char *const proxied[] = { "proxy_unlisted",
		"proxy_method_path", "proxy_host_mismatch", "proxy_smuggle",
		"proxy_connect_broker", "proxy_service_ports" };
	static const char *const seccomp[] = { "mount", "ptrace", "userns",
		"bpf", "io_uring", "keyctl" };
	another_job_injects();
	int status = drill("support-triage", true, out, sizeof(out));
	json_t *j = json_loads(out, 0, NULL);

	ck_assert_msg(j != NULL, "no JSON (status %d): %.2000s; stderr %.2000s",
	    status, out, drill_err);
	if (getenv("DRILL_DUMP") != NULL)
		fprintf(stderr, "DRILLDUMP %s\n", out);
	assert_rows_are_the_docs(j);
	assert_none_escaped(j);
	ck_assert_msg(status == 0, "status %d: %.3000s", status, out);
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "tripwire");
	/* Identity: nothing to take but the canaries. */
	assert_row(j, "env", "stopped", "");
	assert_row(j, "proc1_environ", "stopped", "");
	assert_row(j, "host_files", "stopped", "ENOENT");
	assert_row(j, "find_tokens", "stopped", "2 planted canaries");
	assert_row(j, "launcher_memory", "stopped", "seccomp");
	assert_row(j, "audience", "stopped", "proxy: refused");
	assert_row(j, "token_placement", "stopped", "proxy: refused");
	assert_row(j, "mint_flood", "stopped", "429");
	/* Another job's key, stored by the tickets API and shown on its
	 * status page, read under another name on a rule that injects
	 * nothing, before this job was released anything: redacted. */
	assert_row(j, "inject_stored", "stopped", "redacted");
	assert_row(j, "inject_stored", "stopped",
	    "the page and the injected requests both at 127.0.0.1:");
	/* The injected credential: not at the broker, redacted in the
	 * echo, the job's own header replaced, the token nowhere else, no
	 * tunnel around the swap. */
	assert_row(j, "inject_release", "stopped", "broker_path");
	assert_row(j, "inject_echo", "stopped", "redacted");
	assert_row(j, "inject_echo", "stopped", "tls=terminate");
	assert_row(j, "inject_client_header", "stopped", "replaced");
	assert_row(j, "inject_other_host", "stopped", "proxy: refused");
	assert_row(j, "inject_tunnel", "stopped", "takes TLS");
	/* The issuer's token endpoint is no rule's; its credential, which
	 * the job's one request on its rule made the broker obtain, was
	 * revoked at the issuer at the stop. */
	assert_row(j, "issuer_direct", "stopped", "proxy: refused");
	assert_row(j, "issuer_revoke", "stopped", "revoked at its issuer");
	assert_row(j, "issuer_revoke", "stopped", "orders-api");
	/* The injecting capability's token after the stop, through a new
	 * job's channel over TLS: refused, nothing swapped in, and the
	 * upstream's last request is not it. */
	assert_row(j, "inject_replay", "stopped", "proxy: refused, token");
	assert_row(j, "inject_replay", "stopped", "by the new job's CA");
	{
		json_t *page = tickets_status();
		char *text = json_dumps(page, JSON_COMPACT);
		ck_assert_ptr_nonnull(text);
		ck_assert_msg(strstr(text, "/tickets/drill") == NULL &&
			strstr(text, "crd_") == NULL,
		    "the replay reached the tickets API: %s", text);
		free(text);
		json_decref(page);
	}
	/* Reachability: around the proxy there is nothing; through it,
	 * each trick is refused. */
	assert_row(j, "direct_tcp", "stopped", "network namespace");
	assert_row(j, "dns", "stopped", "network namespace");
	for (size_t i = 0; i < sizeof(proxied) / sizeof(proxied[0]); i++)
		assert_row(j, proxied[i], "stopped", "proxy: refused");
	/* api.github.com is loopback here, which its rule does not allow:
	 * the CONNECT is refused before any TLS. */
	assert_row(j, "proxy_sni_mismatch", "stopped", "private_addr");
	assert_row(j, "socket_families", "stopped", "seccomp");
	assert_row(j, "proxy_path_params", "stopped", "proxy: refused, path");
	assert_row(j, "proxy_upgrade_protocol", "stopped",
	    "proxy: refused, upgrade");
	assert_row(j, "relay_flood", "stopped", "the relay's cap");
	assert_row(j, "exfil_canary", "stopped", "tripwire");
	/* The invoices API answers a head at once; no canary, nor the token
	 * of another audience, ever reached it: only the job's own, as the
	 * bearer of a request to invoices.internal. */
	pthread_mutex_lock(&early.mu);
	ck_assert_msg(early.len > 0, "the canary's requests never came");
	assert_upstream_saw_only_own_bearer();
	pthread_mutex_unlock(&early.mu);
	/* The return path: each write is flagged by the hatch or refused
	 * by the sandbox; a tree of 200 directories still seals; nothing
	 * hidden reaches the output. */
	assert_row(j, "deep_nesting", "stopped", "the workspace closed");
	assert_row(j, "hidden_unicode", "stopped", "none of the 8");
	assert_row(j, "ci_files", "stopped", "20 of 20 flagged");
	assert_row(j, "write_workflow", "stopped", "protected_path");
	assert_row(j, "write_workflow_fold", "stopped", "protected_path");
	assert_row(j, "write_git_hook", "stopped", "protected_path");
	assert_row(j, "symlink_etc", "stopped", "symlink_absolute");
	assert_row(j, "symlink_up", "stopped", "symlink_escapes");
	assert_row(j, "setuid_file", "stopped", "setuid");
	assert_row(j, "fifo", "stopped", "fifo");
	assert_row(j, "sparse_file", "stopped", "file_too_large");
	assert_row(j, "big_file", "stopped", "ENOSPC");
	/* Escape: the filter, the limits. */
	for (size_t i = 0; i < sizeof(seccomp) / sizeof(seccomp[0]); i++)
		assert_row(j, seccomp[i], "stopped", "seccomp");
	assert_row(j, "fork_bomb", "stopped", "pids limit");
	assert_row(j, "memory_hog", "stopped", "memory limit");
	assert_row(j, "memory_spread", "stopped", "memory limit");
	assert_row(j, "inode_flood", "stopped", "ENOSPC");
	assert_row(j, "inherited_fds", "stopped", "only 0, 1 and 2");
	assert_row(j, "signals", "stopped", "stayed stopped");
	assert_row(j, "proc_masks", "stopped", "empty or refused");
	/* Outliving: the token the job printed is dead at the broker and
	 * through a new job's channel. */
	assert_row(j, "stop_revoke", "stopped", "revoked");
	assert_row(j, "replay_broker", "stopped", "inactive");
	assert_row(j, "replay_channel", "stopped", "token");
	json_decref(j);
}
END_TEST

/* One allowlist entry too many, and the drill fails with the row that
 * escaped, in the table and in the exit status. */
START_TEST(a_weakened_manifest_fails_the_drill)
{
	static char out[1 << 20];
	int status = drill("drill-weak", true, out, sizeof(out));
	json_t *j = json_loads(out, 0, NULL);

	ck_assert_msg(j != NULL, "no JSON (status %d): %.2000s; stderr %.2000s",
	    status, out, drill_err);
	ck_assert_int_eq(status, 1);
	ck_assert_int_ge(json_integer_value(json_object_get(j, "escaped")), 1);
	assert_row(j, "proxy_service_ports", "ESCAPED", "svc.test");
	json_decref(j);

	status = drill("drill-weak", false, out, sizeof(out));
	ck_assert_int_eq(status, 1);
	ck_assert_ptr_nonnull(strstr(out, "ESCAPED"));
	ck_assert_ptr_nonnull(strstr(out, "svc.test"));
}
END_TEST

/* Refusals: a one-line error and the documented status. */
START_TEST(drill_refusals)
{
	static char out[1 << 16], err[1 << 16];
	char *nomanifest[] = { (char *)harness_bin("cordon"), "drill",
		"--config", st.launcher_cfg, NULL };
	char *unknown[] = { (char *)harness_bin("cordon"), "drill", "--config",
		st.launcher_cfg, "--manifest", "no-such-manifest", NULL };

	ck_assert_int_eq(harness_run(nomanifest, out, sizeof(out), err,
			     sizeof(err)),
	    64);
	ck_assert_ptr_nonnull(strstr(err, "--manifest is required"));
	ck_assert_int_eq(harness_run(unknown, out, sizeof(out), err,
			     sizeof(err)),
	    125);
	ck_assert_ptr_nonnull(strstr(err, "cordon drill: the broker"));
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("drill");
	TCase *tc = tcase_create("drill");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, the_drill_stops_every_attempt);
	tcase_add_test(tc, a_weakened_manifest_fails_the_drill);
	tcase_add_test(tc, drill_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
