/*
 * What every service's main relies on: "host:port" strings are parsed
 * strictly (numeric addresses, "localhost" only, ports 0..65535 written
 * as plain digits); a listening socket on port 0 reports the port it got;
 * and the shared flags give the exit statuses the tests and operators
 * expect, with --help and --version on stdout and one line on stderr for a
 * mistake.
 */
#include "service.h"

#include "testutil.h"
#include "util.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* --- service_parse_addr ---------------------------------------------- */

START_TEST(test_parse_addr_ipv4)
{
	static const struct {
		const char *s, *ip;
		unsigned port;
	} rows[] = {
		{ "127.0.0.1:7701", "127.0.0.1", 7701 },
		{ "localhost:1", "127.0.0.1", 1 },
		{ "0.0.0.0:0", "0.0.0.0", 0 },
		{ "1.2.3.4:65535", "1.2.3.4", 65535 },
		{ "10.0.0.255:80", "10.0.0.255", 80 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sockaddr_storage ss;
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
		socklen_t len = 0;
		char ip[INET_ADDRSTRLEN];

		ck_assert_msg(service_parse_addr(rows[i].s, &ss, &len) == 0,
		    "\"%s\" refused", rows[i].s);
		ck_assert_int_eq(ss.ss_family, AF_INET);
		ck_assert_uint_eq(len, sizeof(struct sockaddr_in));
		ck_assert_uint_eq(ntohs(in4->sin_port), rows[i].port);
		ck_assert_ptr_nonnull(
		    inet_ntop(AF_INET, &in4->sin_addr, ip, sizeof(ip)));
		ck_assert_str_eq(ip, rows[i].ip);
	}
}
END_TEST

START_TEST(test_parse_addr_ipv6)
{
	static const struct {
		const char *s, *ip;
		unsigned port;
	} rows[] = {
		{ "[::1]:80", "::1", 80 },
		{ "[::]:8080", "::", 8080 },
		{ "[2001:db8::7]:65535", "2001:db8::7", 65535 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sockaddr_storage ss;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		socklen_t len = 0;
		char ip[INET6_ADDRSTRLEN];

		ck_assert_msg(service_parse_addr(rows[i].s, &ss, &len) == 0,
		    "\"%s\" refused", rows[i].s);
		ck_assert_int_eq(ss.ss_family, AF_INET6);
		ck_assert_uint_eq(len, sizeof(struct sockaddr_in6));
		ck_assert_uint_eq(ntohs(in6->sin6_port), rows[i].port);
		ck_assert_ptr_nonnull(
		    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip)));
		ck_assert_str_eq(ip, rows[i].ip);
	}
}
END_TEST

START_TEST(test_parse_addr_refused)
{
	static const char *const bad[] = { "", ":80", "1.2.3.4",
		"1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:+1",
		"1.2.3.4: 1", "host.example:80", "[::1]80", "[::1]:", "[::1]",
		"[::1", "::1:80", "localhost", "LOCALHOST:80", "1.2.3.4:80 ",
		"1.2.3.4:80x", "1.2.3.4:0x50", "1.2.3.4:99999999999999999999",
		"1.2.3:80", "256.1.1.1:80", " 1.2.3.4:80", "[]:80",
		"[fe80::1%lo]:80", "*:80" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sockaddr_storage ss;
		socklen_t len = 12345;

		ck_assert_msg(service_parse_addr(bad[i], &ss, &len) == -EINVAL,
		    "\"%s\" accepted", bad[i]);
		ck_assert_uint_eq(len, 12345);
	}
}
END_TEST

/* --- sockets --------------------------------------------------------- */

START_TEST(test_listen_port_zero)
{
	char addr[SERVICE_ADDR_MAX], want[SERVICE_ADDR_MAX];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	unsigned long port;
	char *end;
	int fd, flags, c;

	fd = service_listen("127.0.0.1:0");
	ck_assert_msg(fd >= 0, "listen: %s", strerror(-fd));
	ck_assert_int_eq(service_sockname(fd, addr, sizeof(addr)), 0);
	ck_assert_msg(strncmp(addr, "127.0.0.1:", 10) == 0, "got %s", addr);
	errno = 0;
	port = strtoul(addr + 10, &end, 10);
	ck_assert_int_eq(*end, '\0');
	ck_assert_int_eq(errno, 0);
	ck_assert_uint_gt(port, 0);
	ck_assert_uint_le(port, 65535);
	snprintf(want, sizeof(want), "127.0.0.1:%lu", port);
	ck_assert_str_eq(addr, want);

	/* Nonblocking and close-on-exec, as the header promises. */
	flags = fcntl(fd, F_GETFL);
	ck_assert_int_ne(flags & O_NONBLOCK, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);

	/* It really listens on that port. */
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(c, 0);
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sin, sizeof(sin)), 0);
	close(c);

	/* A second listener on the same port is refused. */
	ck_assert_int_eq(service_listen(addr), -EADDRINUSE);
	close(fd);
}
END_TEST

START_TEST(test_listen_ipv6)
{
	char addr[SERVICE_ADDR_MAX];
	int fd = service_listen("[::1]:0");

	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
		return; /* no IPv6 loopback here */
	ck_assert_msg(fd >= 0, "listen: %s", strerror(-fd));
	ck_assert_int_eq(service_sockname(fd, addr, sizeof(addr)), 0);
	ck_assert_msg(strncmp(addr, "[::1]:", 6) == 0 && addr[6] != '0' &&
		addr[6] != '\0',
	    "got %s", addr);
	close(fd);
}
END_TEST

START_TEST(test_listen_errors)
{
	char addr[SERVICE_ADDR_MAX];
	int fd;

	ck_assert_int_eq(service_listen("nowhere:80"), -EINVAL);
	ck_assert_int_eq(service_listen(""), -EINVAL);
	fd = service_listen("127.0.0.1:0");
	ck_assert_int_ge(fd, 0);
	/* Too small a buffer is reported, not truncated silently. */
	ck_assert_int_eq(service_sockname(fd, addr, 8), -ENAMETOOLONG);
	close(fd);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(service_sockname(fd, addr, sizeof(addr)), -ENOTSOCK);
	close(fd);
}
END_TEST

/* --- service_parse_args ---------------------------------------------- */

struct output {
	char out[4096];
	char err[4096];
};

static void
read_back(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Runs service_parse_args with stdout and stderr caught in o. */
static int
parse(char **argv, struct service_args *a, struct output *o)
{
	FILE *out = tmpfile(), *err = tmpfile();
	int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
	int argc = 0, r;

	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_ge(saved_out, 0);
	ck_assert_int_ge(saved_err, 0);
	while (argv[argc] != NULL)
		argc++;
	fflush(stdout);
	fflush(stderr);
	ck_assert_int_ge(dup2(fileno(out), STDOUT_FILENO), 0);
	ck_assert_int_ge(dup2(fileno(err), STDERR_FILENO), 0);
	r = service_parse_args(argc, argv, "cordon-test", "A test program.", a);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	read_back(out, o->out, sizeof(o->out));
	read_back(err, o->err, sizeof(o->err));
	return r;
}

/* The status is EXIT_USAGE, nothing went to stdout, and stderr is one line
 * that names the program and contains what. */
static void
assert_usage_error(char **argv, const char *what)
{
	struct service_args a;
	struct output o;
	int r = parse(argv, &a, &o);

	ck_assert_msg(r == EXIT_USAGE, "%s ... gave %d, not %d", argv[1], r,
	    EXIT_USAGE);
	ck_assert_str_eq(o.out, "");
	ck_assert_msg(strncmp(o.err, "cordon-test: ", 13) == 0, "stderr \"%s\"",
	    o.err);
	ck_assert_msg(strchr(o.err, '\n') == o.err + strlen(o.err) - 1,
	    "stderr \"%s\" is not one line", o.err);
	ck_assert_msg(strstr(o.err, what) != NULL, "stderr \"%s\" lacks %s",
	    o.err, what);
}

START_TEST(test_args_version)
{
	char *argv[] = { "cordon-test", "--version", NULL };
	struct service_args a;
	struct output o;

	ck_assert_int_eq(parse(argv, &a, &o), 0);
	ck_assert_str_eq(o.out, "cordon-test " CORDON_VERSION "\n");
	ck_assert_str_eq(o.err, "");
}
END_TEST

START_TEST(test_args_help)
{
	char *argv[] = { "cordon-test", "--help", NULL };
	char *argv2[] = { "cordon-test", "-h", NULL };
	struct service_args a;
	struct output o;

	ck_assert_int_eq(parse(argv, &a, &o), 0);
	ck_assert_msg(strncmp(o.out, "usage: cordon-test ", 19) == 0,
	    "stdout \"%s\"", o.out);
	ck_assert_ptr_nonnull(strstr(o.out, "A test program."));
	ck_assert_ptr_nonnull(strstr(o.out, "--config"));
	ck_assert_ptr_nonnull(strstr(o.out, "--listen"));
	ck_assert_str_eq(o.err, "");
	ck_assert_int_eq(parse(argv2, &a, &o), 0);
	ck_assert_msg(strncmp(o.out, "usage: ", 7) == 0, "stdout \"%s\"",
	    o.out);
}
END_TEST

START_TEST(test_args_captured)
{
	char *argv[] = { "cordon-test", "--config", "/etc/cordon/b.json",
		"--listen", "127.0.0.1:7701", "-n", NULL };
	struct service_args a;
	struct output o;

	ck_assert_int_eq(parse(argv, &a, &o), -1);
	ck_assert_str_eq(a.config_path, "/etc/cordon/b.json");
	ck_assert_str_eq(a.listen, "127.0.0.1:7701");
	ck_assert(a.check_only);
	ck_assert_str_eq(o.out, "");
	ck_assert_str_eq(o.err, "");
}
END_TEST

START_TEST(test_args_forms)
{
	char *eq[] = { "cordon-test", "--config=x.json", "--listen=[::1]:1",
		NULL };
	char *none[] = { "cordon-test", NULL };
	char *shortc[] = { "cordon-test", "-n", "-c", "y.json", NULL };
	struct service_args a;
	struct output o;

	ck_assert_int_eq(parse(eq, &a, &o), -1);
	ck_assert_str_eq(a.config_path, "x.json");
	ck_assert_str_eq(a.listen, "[::1]:1");
	ck_assert(!a.check_only);
	/* No flags: every field empty, even after a call that set them. */
	ck_assert_int_eq(parse(none, &a, &o), -1);
	ck_assert_ptr_null(a.config_path);
	ck_assert_ptr_null(a.listen);
	ck_assert(!a.check_only);
	ck_assert_int_eq(parse(shortc, &a, &o), -1);
	ck_assert_str_eq(a.config_path, "y.json");
	ck_assert(a.check_only);
}
END_TEST

START_TEST(test_args_repeated_calls)
{
	/* Each call starts afresh, even after one that stopped inside a
	 * cluster of short flags or after a stray argument. */
	char *cluster[] = { "cordon-test", "-hn", NULL };
	char *stray[] = { "cordon-test", "extra", "-n", NULL };
	char *none[] = { "cordon-test", NULL };
	char *listen[] = { "cordon-test", "--listen", "127.0.0.1:1", NULL };
	struct service_args a;
	struct output o;

	ck_assert_int_eq(parse(cluster, &a, &o), 0);
	ck_assert_int_eq(parse(none, &a, &o), -1);
	ck_assert(!a.check_only);
	ck_assert_int_eq(parse(stray, &a, &o), EXIT_USAGE);
	ck_assert_int_eq(parse(listen, &a, &o), -1);
	ck_assert_str_eq(a.listen, "127.0.0.1:1");
	ck_assert(!a.check_only);
	ck_assert_str_eq(o.err, "");
}
END_TEST

START_TEST(test_args_unknown_flag)
{
	char *a1[] = { "cordon-test", "--bogus", NULL };
	char *a2[] = { "cordon-test", "-x", NULL };
	char *a3[] = { "cordon-test", "-n", "--verbose", NULL };
	char *a4[] = { "cordon-test", "--version=2", NULL };

	assert_usage_error(a1, "--bogus");
	assert_usage_error(a2, "-x");
	assert_usage_error(a3, "--verbose");
	assert_usage_error(a4, "--version");
}
END_TEST

START_TEST(test_args_missing_argument)
{
	char *a1[] = { "cordon-test", "--config", NULL };
	char *a2[] = { "cordon-test", "-n", "--listen", NULL };
	char *a3[] = { "cordon-test", "-c", NULL };

	assert_usage_error(a1, "--config");
	assert_usage_error(a2, "--listen");
	assert_usage_error(a3, "-c");
}
END_TEST

/* The status is EXIT_USAGE and stderr is exactly want. */
static void
assert_usage_line(char **argv, const char *want)
{
	struct service_args a;
	struct output o;
	int r = parse(argv, &a, &o);

	ck_assert_msg(r == EXIT_USAGE, "%s ... gave %d, not %d", argv[1], r,
	    EXIT_USAGE);
	ck_assert_str_eq(o.out, "");
	ck_assert_str_eq(o.err, want);
}

START_TEST(test_args_names_the_flag)
{
	/*
	 * The line names the flag itself: not the program (a short flag
	 * inside a group), not the group, not a value given with "=".
	 */
	char *a1[] = { "cordon-test", "-xn", NULL };
	char *a2[] = { "cordon-test", "-nx", NULL };
	char *a3[] = { "cordon-test", "--bogus=1", NULL };
	char *a4[] = { "cordon-test", "--config", NULL };
	char *a5[] = { "cordon-test", "-nc", NULL };
	char *a6[] = { "cordon-test", "--listen", NULL };

	assert_usage_line(a1, "cordon-test: unknown option -x (try --help)\n");
	assert_usage_line(a2, "cordon-test: unknown option -x (try --help)\n");
	assert_usage_line(a3,
	    "cordon-test: unknown option --bogus (try --help)\n");
	assert_usage_line(a4,
	    "cordon-test: --config needs an argument (try --help)\n");
	assert_usage_line(a5,
	    "cordon-test: -c needs an argument (try --help)\n");
	assert_usage_line(a6,
	    "cordon-test: --listen needs an argument (try --help)\n");
}
END_TEST

START_TEST(test_args_stray_argument)
{
	char *a1[] = { "cordon-test", "serve", NULL };
	char *a2[] = { "cordon-test", "--config", "a.json", "extra", NULL };
	char *a3[] = { "cordon-test", "extra", "-n", NULL };

	assert_usage_error(a1, "\"serve\"");
	assert_usage_error(a2, "\"extra\"");
	assert_usage_error(a3, "\"extra\"");
}
END_TEST

/* A notify socket nobody reads (a systemd too busy, a test that reads
 * later) fills up: service_notify must say so, never wait, for the
 * daemon's loop sends its watchdog pings from there. Both ways: the
 * connected socket and one sendto a message. */
static void
notify_never_waits(bool connected)
{
	char dir[] = "/tmp/check_service_XXXXXX", path[64];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, r = 0, i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	setenv("NOTIFY_SOCKET", path, 1);
	if (connected)
		ck_assert_int_eq(service_notify_connect(), 0);
	/* A datagram socket's queue holds a few hundred: past them a
	 * blocking send would wait for ever (the test's timeout). */
	for (i = 0; i < 100000 && r == 0; i++)
		r = service_notify("WATCHDOG=1");
	ck_assert_msg(r == -EAGAIN, "after %d sends: %d", i, r);
	unsetenv("NOTIFY_SOCKET");
	close(fd);
	unlink(path);
	rmdir(dir);
}

START_TEST(test_notify_full_socket_waits_not)
{
	notify_never_waits(false);
}
END_TEST

START_TEST(test_notify_full_connected_socket_waits_not)
{
	notify_never_waits(true);
}
END_TEST

static Suite *
service_suite(void)
{
	Suite *s = suite_create("service");
	TCase *tc;

	tc = tcase_create("parse_addr");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_parse_addr_ipv4);
	tcase_add_test(tc, test_parse_addr_ipv6);
	tcase_add_test(tc, test_parse_addr_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("listen");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_listen_port_zero);
	tcase_add_test(tc, test_listen_ipv6);
	tcase_add_test(tc, test_listen_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("args");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_args_version);
	tcase_add_test(tc, test_args_help);
	tcase_add_test(tc, test_args_captured);
	tcase_add_test(tc, test_args_forms);
	tcase_add_test(tc, test_args_repeated_calls);
	tcase_add_test(tc, test_args_unknown_flag);
	tcase_add_test(tc, test_args_missing_argument);
	tcase_add_test(tc, test_args_names_the_flag);
	tcase_add_test(tc, test_args_stray_argument);
	suite_add_tcase(s, tc);

	tc = tcase_create("notify");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_notify_full_socket_waits_not);
	tcase_add_test(tc, test_notify_full_connected_socket_waits_not);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(service_suite());
}
