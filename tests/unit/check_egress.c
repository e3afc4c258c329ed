/*
 * The proxy's egress checks, as a job meets them: hosts normalised one
 * way, IP literals in every odd spelling refused, paths with two readings
 * refused, default deny with the reason a log line will carry, and every
 * address range no job may reach unless its rule lists it.
 */
#include "egress.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

static struct egress_rules rules;

static void
load(const char *json)
{
	char err[256] = "";
	json_t *v = testutil_json(json, 0);

	ck_assert_msg(egress_rules_load(v, &rules, err, sizeof(err)) == 0, "%s",
	    err);
	json_decref(v);
}

static void
unload(void)
{
	egress_rules_free(&rules);
}

START_TEST(hosts_normalise_one_way)
{
	char out[EGRESS_HOST_MAX + 1];
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "API.GitHub.com", "api.github.com" },
		{ "api.github.com.", "api.github.com" },
		{ "xn--bcher-kva.example", "xn--bcher-kva.example" },
		{ "a-b.c", "a-b.c" },
	};
	static const char *const bad[] = { "", ".", "a..b", "-a.com", "a-.com",
		"a.-b.com", "bücher.example", "a_b.com", "a b.com", "a/b",
		"a:80", "a@b", "a.com..",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aa."
		"com" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_int_eq(egress_host_normalise(good[i].in,
				     strlen(good[i].in), out),
		    0);
		ck_assert_str_eq(out, good[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(egress_host_normalise(bad[i], strlen(bad[i]),
				  out) < 0,
		    "\"%s\" was accepted", bad[i]);
	/* A NUL inside the name is not the end of it. */
	ck_assert_int_lt(egress_host_normalise("a.com\0.evil", 11, out), 0);
}
END_TEST

START_TEST(ip_literals_in_any_spelling)
{
	static const char *const literals[] = { "127.0.0.1", "2130706433",
		"0x7f.1", "0177.0.0.1", "127.1", "0x7f000001", "10.1", "::1",
		"[::1]", "::ffff:127.0.0.1", "[fe80::1]" };
	static const char *const names[] = { "localhost", "api.github.com",
		"1.example.com", "127.0.0.1.nip.io", "0x7f.example" };

	for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++)
		ck_assert_msg(egress_is_ip_literal(literals[i]),
		    "%s is a literal", literals[i]);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(!egress_is_ip_literal(names[i]), "%s is a name",
		    names[i]);
}
END_TEST

START_TEST(paths_with_one_reading)
{
	static const char *const ok[] = { "/", "/repos/acme/x", "/a..b/",
		"/a%20b", "/.well-known/x", "/a?q=../..", "/a/b/", "/x#../.." };
	static const char *const bad[] = { "", "x", "/a/../b", "/..", "/a/..",
		"/./a", "/a/.", "/a%2Fb", "/a%2fb", "/a%5Cb", "/a%2e%2e/b",
		"/%2E", "/a\\b", "/a%", "/a%4", "/a%zz", "/a%00b" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(egress_path_ok(ok[i], strlen(ok[i])) == 0,
		    "\"%s\" refused", ok[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(egress_path_ok(bad[i], strlen(bad[i])) < 0,
		    "\"%s\" accepted", bad[i]);
	ck_assert_int_lt(egress_path_ok("/a\0b", 4), 0);
}
END_TEST

/*
 * Issue 16, item 1: every spelling that some server in common use (Tomcat
 * and Spring, nginx, Apache, Express, Go, Python) reads as another path
 * than the text says. Each is refused, with what was wrong as its detail.
 */
static const struct {
	const char *path, *detail;
} two_readings[] = {
	/* Tomcat and Spring cut a segment at ';': "..;" is "..". */
	{ "/ok/..;/admin/secret.txt", "semicolon" },
	{ "/ok/..;x=1/admin/secret.txt", "semicolon" },
	{ "/ok/.;/..;/admin/secret.txt", "semicolon" },
	{ "/ok/a;jsessionid=1", "semicolon" },
	{ "/ok/..%3b/admin", "semicolon" },
	{ "/ok/..%3B/admin", "semicolon" },
	/* One more decoding makes a dot, a slash or a backslash. */
	{ "/ok/%252e%252e/x", "double_encoding" },
	{ "/ok/%252E%252E/x", "double_encoding" },
	{ "/ok/%25%32%65/x", "double_encoding" },
	{ "/ok/a%252fb", "double_encoding" },
	{ "/ok/%2e%2e/x", "encoded_dot" },
	{ "/ok/%2E./x", "encoded_dot" },
	{ "/ok/.%2e/x", "encoded_dot" },
	{ "/ok/%2e/x", "encoded_dot" },
	{ "/ok/a%2fb", "encoded_slash" },
	{ "/ok/a%2Fb", "encoded_slash" },
	{ "/ok/a%5cb", "backslash" },
	{ "/ok/a%5Cb", "backslash" },
	{ "/ok/..\\admin", "backslash" },
	{ "/ok\\..\\admin", "backslash" },
	/* NUL and control bytes, encoded (raw ones never pass the parser). */
	{ "/ok/a%00b", "control" },
	{ "/ok/..%00/x", "control" },
	{ "/ok/a%0ab", "control" },
	{ "/ok/a%0D%0Ab", "control" },
	{ "/ok/a%7fb", "control" },
	{ "/ok/a%09", "control" },
	/* Dot segments as sent, and segments that end in a dot (Windows
	 * servers drop it: "admin." is "admin"). */
	{ "/ok/../admin", "dot_segment" },
	{ "/ok/./x", "dot_segment" },
	{ "/ok/..", "dot_segment" },
	{ "/ok/.", "dot_segment" },
	{ "/ok/.../x", "dot_segment" },
	{ "/ok/admin./x", "trailing_dot" },
	{ "/ok/x.", "trailing_dot" },
	/* Empty segments: nginx merges them, others do not. */
	{ "/ok//admin", "empty_segment" },
	{ "//ok/x", "empty_segment" },
	{ "/ok/x//", "empty_segment" },
	/* Overlong and broken UTF-8, and characters that NFKC reads as
	 * '.', '/', '\' or ';'. */
	{ "/ok/%c0%ae%c0%ae/x", "bad_utf8" },
	{ "/ok/%C0%AF", "bad_utf8" },
	{ "/ok/%e0%80%ae", "bad_utf8" },
	{ "/ok/%f0%80%80%ae", "bad_utf8" },
	{ "/ok/%c3", "bad_utf8" },
	{ "/ok/%a9", "bad_utf8" },
	{ "/ok/%ed%a0%80", "bad_utf8" },
	{ "/ok/%f4%90%80%80", "bad_utf8" },
	{ "/ok/%ef%bc%8e%ef%bc%8e/x", "confusable" },
	{ "/ok/%ef%bc%8f", "confusable" },
	{ "/ok/%ef%bc%bc", "confusable" },
	{ "/ok/%e2%80%a4", "confusable" },
	/* '%' without two hex digits. */
	{ "/ok/a%", "bad_escape" },
	{ "/ok/a%4", "bad_escape" },
	{ "/ok/a%zz", "bad_escape" },
	{ "/ok/%u002e%u002e/x", "bad_escape" },
	{ "/ok/a%%32e", "bad_escape" },
	/* Not a path of its own. */
	{ "", "not_absolute" },
	{ "ok/x", "not_absolute" },
	{ "*", "not_absolute" },
};

START_TEST(paths_with_two_readings_are_refused)
{
	for (size_t i = 0; i < sizeof(two_readings) / sizeof(two_readings[0]);
	     i++) {
		const char *p = two_readings[i].path;
		const char *why = egress_path_problem(p, strlen(p));
		ck_assert_msg(egress_path_ok(p, strlen(p)) < 0,
		    "\"%s\" accepted", p);
		ck_assert_msg(why != NULL &&
			strcmp(why, two_readings[i].detail) == 0,
		    "\"%s\": %s, not %s", p, why ? why : "(null)",
		    two_readings[i].detail);
	}
	/* Raw bytes no server reads the same way either. */
	ck_assert_int_lt(egress_path_ok("/ok/\x01", 5), 0);
	ck_assert_int_lt(egress_path_ok("/ok/\xc3\xa9", 6), 0);
	ck_assert_int_lt(egress_path_ok("/ok/a b", 7), 0);
}
END_TEST

/* What still passes: one reading everywhere. */
START_TEST(paths_with_one_reading_still_pass)
{
	static const char *const ok[] = { "/ok/", "/ok/report", "/ok/a..b/c",
		"/ok/.well-known/x", "/ok/v1.2/x", "/ok/a%20b", "/ok/%41%42",
		"/ok/caf%C3%A9", "/ok/%e2%82%ac", "/ok/%f0%9f%98%80",
		"/ok/a-b_c~d", "/ok/x?q=../..;%2e%00", "/ok/x?", "/ok/%3f",
		"/ok/%23", "/ok/a=b&c", "/ok/%2B" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(egress_path_ok(ok[i], strlen(ok[i])) == 0,
		    "\"%s\" refused", ok[i]);
}
END_TEST

START_TEST(default_deny_with_reasons)
{
	const char *why = NULL;

	load("[{\"host\": \"api.github.com\", \"port\": 443, \"methods\": "
	     "[\"GET\"], \"paths\": [\"/repos/acme/\"], \"tls\": "
	     "\"terminate\", \"reason\": \"r\"},"
	     " {\"host\": \"*.example.com\", \"port\": 80, \"methods\": "
	     "[\"GET\", \"POST\"], \"paths\": [\"/\"], \"tls\": \"none\", "
	     "\"reason\": \"r\"}]");

	ck_assert_int_eq(egress_match(&rules, "api.github.com", 443, "GET",
			     "/repos/acme/widgets/issues/1", &why),
	    0);
	ck_assert_int_eq(egress_match(&rules, "api.github.com", 443, "GET",
			     "/repos/acme/x?page=2", &why),
	    0);
	ck_assert_int_eq(egress_match(&rules, "a.example.com", 80, "POST",
			     "/submit", &why),
	    1);
	ck_assert_int_eq(egress_match(&rules, "a.b.example.com", 80, "GET", "/",
			     &why),
	    1);
	/* CONNECT: host and port only. */
	ck_assert_int_eq(egress_match(&rules, "api.github.com", 443, "CONNECT",
			     NULL, &why),
	    0);

	static const struct {
		const char *host;
		int port;
		const char *method, *path, *why;
	} denied[] = {
		{ "evil.com", 443, "GET", "/", "no_rule" },
		{ "api.github.com", 80, "GET", "/repos/acme/", "no_rule" },
		{ "example.com", 80, "GET", "/", "no_rule" },
		{ "xexample.com", 80, "GET", "/", "no_rule" },
		{ "api.github.com", 443, "POST", "/repos/acme/", "method" },
		{ "api.github.com", 443, "GET", "/repos/other/", "path" },
		{ "api.github.com", 443, "GET", "/repos/acme", "path" },
		{ "api.github.com", 443, "GET", "/repos/acme/../other/",
		    "path" },
		{ "api.github.com", 443, "GET", "/repos/acme%2F..%2Fother/",
		    "path" },
		{ "a.example.com", 80, "DELETE", "/", "method" },
		{ "evil.com", 443, "CONNECT", NULL, "no_rule" },
	};
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		why = NULL;
		ck_assert_msg(egress_match(&rules, denied[i].host,
				  (uint16_t)denied[i].port, denied[i].method,
				  denied[i].path, &why) == -1,
		    "%s %s:%d%s allowed", denied[i].method, denied[i].host,
		    denied[i].port, denied[i].path ? denied[i].path : "");
		ck_assert_str_eq(why, denied[i].why);
	}
	unload();

	/* No rules: everything is denied. */
	load("[]");
	ck_assert_int_eq(egress_match(&rules, "api.github.com", 443, "GET", "/",
			     &why),
	    -1);
	ck_assert_str_eq(why, "no_rule");
	unload();
}
END_TEST

START_TEST(rules_that_cannot_be_read_are_refused)
{
	static const char *const bad[] = {
		"{}",
		"[1]",
		"[{\"port\": 443, \"methods\": [\"GET\"]}]",
		"[{\"host\": \"127.0.0.1\", \"port\": 443}]",
		"[{\"host\": \"a.com\", \"port\": 0}]",
		"[{\"host\": \"a.com\", \"port\": 443, \"methods\": "
		"[\"TRACE\"]}]",
		"[{\"host\": \"a.com\", \"port\": 443, \"tls\": \"maybe\"}]",
		"[{\"host\": \"a.com\", \"port\": 443, \"paths\": [\"/../\"]}]",
		"[{\"host\": \"a.com\", \"port\": 443, \"allow_cidrs\": "
		"[\"10.0.0.0\"]}]",
		"[{\"host\": \"a.com\", \"port\": 443, \"surprise\": 1}]",
		"[{\"host\": \"a.com\", \"port\": 443, \"audience\": 7}]",
		"[{\"host\": \"a.com\", \"port\": 443, \"audience\": \"\"}]",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *v = testutil_json(bad[i], JSON_DECODE_ANY);
		err[0] = '\0';
		ck_assert_msg(egress_rules_load(v, &rules, err, sizeof(err)) <
			0,
		    "%s loaded", bad[i]);
		ck_assert(err[0] != '\0');
		json_decref(v);
	}
	/* Thirteen rules: more than a policy. */
	json_t *many = json_array();
	for (int i = 0; i < 13; i++)
		json_array_append_new(many,
		    json_pack("{s:s, s:i, s:[s]}", "host", "a.com", "port",
			1000 + i, "methods", "GET"));
	ck_assert_int_lt(egress_rules_load(many, &rules, err, sizeof(err)), 0);
	json_decref(many);
}
END_TEST

static struct sockaddr_storage
addr(const char *text)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	if (inet_pton(AF_INET, text, &in4->sin_addr) == 1)
		in4->sin_family = AF_INET;
	else {
		ck_assert_int_eq(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
		in6->sin6_family = AF_INET6;
	}
	return ss;
}

START_TEST(refused_address_ranges)
{
	static const struct {
		const char *addr, *why;
	} refused[] = {
		{ "127.0.0.1", "loopback" },
		{ "127.255.255.254", "loopback" },
		{ "10.1.2.3", "private" },
		{ "172.16.0.1", "private" },
		{ "172.31.255.255", "private" },
		{ "192.168.1.1", "private" },
		{ "169.254.169.254", "link_local" },
		{ "100.64.0.1", "cgnat" },
		{ "100.127.255.255", "cgnat" },
		{ "0.0.0.0", "unspecified" },
		{ "224.0.0.1", "multicast" },
		{ "240.0.0.1", "reserved" },
		{ "255.255.255.255", "broadcast" },
		{ "192.0.2.1", "documentation" },
		{ "198.18.0.1", "benchmark" },
		{ "::1", "loopback" },
		{ "::", "unspecified" },
		{ "::ffff:127.0.0.1", "ipv4_mapped" },
		{ "::ffff:8.8.8.8", "ipv4_mapped" },
		{ "64:ff9b::a00:1", "translation" },
		{ "fe80::1", "link_local" },
		{ "fd00::1", "unique_local" },
		{ "fc00::1", "unique_local" },
		{ "ff02::1", "multicast" },
		{ "2002:7f00:1::", "6to4" },
		{ "2001::1", "teredo" },
		{ "2001:db8::1", "documentation" },
	};
	static const char *const public[] = { "8.8.8.8", "140.82.112.3",
		"172.32.0.1", "100.128.0.1", "2606:4700::1111",
		"2a00:1450:4001::200e" };

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct sockaddr_storage a = addr(refused[i].addr);
		const char *why =
		    egress_addr_refused((struct sockaddr *)&a, NULL);
		ck_assert_msg(why != NULL && strcmp(why, refused[i].why) == 0,
		    "%s: %s, not %s", refused[i].addr, why ? why : "allowed",
		    refused[i].why);
	}
	for (size_t i = 0; i < sizeof(public) / sizeof(public[0]); i++) {
		struct sockaddr_storage a = addr(public[i]);
		ck_assert_msg(egress_addr_refused((struct sockaddr *)&a,
				  NULL) == NULL,
		    "%s refused", public[i]);
	}

	/* A rule's allow_cidrs lets exactly its ranges through. */
	load("[{\"host\": \"db.internal\", \"port\": 5432, \"methods\": "
	     "[\"GET\"], \"allow_cidrs\": [\"10.1.2.0/24\", \"fd00::/64\"]}]");
	struct sockaddr_storage in = addr("10.1.2.77"), out = addr("10.1.3.1"),
				in6 = addr("fd00::5"), out6 = addr("fd00:1::5"),
				lo = addr("127.0.0.1");
	ck_assert_ptr_null(
	    egress_addr_refused((struct sockaddr *)&in, &rules.rule[0]));
	ck_assert_ptr_null(
	    egress_addr_refused((struct sockaddr *)&in6, &rules.rule[0]));
	ck_assert_str_eq(egress_addr_refused((struct sockaddr *)&out,
			     &rules.rule[0]),
	    "private");
	ck_assert_str_eq(egress_addr_refused((struct sockaddr *)&out6,
			     &rules.rule[0]),
	    "unique_local");
	ck_assert_str_eq(egress_addr_refused((struct sockaddr *)&lo,
			     &rules.rule[0]),
	    "loopback");
	unload();

	/* An IPv6 range that holds a spelling of an IPv4 address (6to4,
	 * NAT64, mapped) lets it through only where that IPv4 address may
	 * go: 169.254.169.254 is not reached by way of "2000::/3". */
	load("[{\"host\": \"v6.internal\", \"port\": 443, \"methods\": "
	     "[\"GET\"], \"allow_cidrs\": [\"2000::/3\", "
	     "\"64:ff9b::/96\", \"::ffff:0:0/96\", \"10.1.2.0/24\"]}]");
	static const struct {
		const char *addr, *why;
	} spelt[] = {
		{ "2002:a9fe:a9fe::", "link_local" },
		{ "64:ff9b::a9fe:a9fe", "link_local" },
		{ "::ffff:169.254.169.254", "link_local" },
		{ "2001:0:4136:e378:8000:63bf:5601:5601", "link_local" },
		{ "2002:7f00:1::", "loopback" },
		{ "64:ff9b::a00:1", "private" },
		{ "2002:808:808::", NULL },
		{ "::ffff:10.1.2.77", NULL },
		{ "2606:4700::1111", NULL },
	};
	for (size_t i = 0; i < sizeof(spelt) / sizeof(spelt[0]); i++) {
		struct sockaddr_storage a = addr(spelt[i].addr);
		const char *why =
		    egress_addr_refused((struct sockaddr *)&a, &rules.rule[0]);
		ck_assert_msg(why == spelt[i].why ||
			(why != NULL && spelt[i].why != NULL &&
			    strcmp(why, spelt[i].why) == 0),
		    "%s: %s, not %s", spelt[i].addr, why ? why : "allowed",
		    spelt[i].why ? spelt[i].why : "allowed");
	}
	unload();
}
END_TEST

/* The endpoints no rule reaches: the brokers' URLs and IPv4:port. */
START_TEST(protected_endpoints)
{
	struct egress_protected p = { .n = 0 };
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };

	ck_assert_int_eq(egress_protected_add(&p,
			     "http://127.0.0.1:7701,http://10.0.0.9:7711/x"),
	    0);
	ck_assert_int_eq(egress_protected_add(&p,
			     "127.0.0.1:7703,0.0.0.0:5432"),
	    0);
	ck_assert_int_eq(egress_protected_add(&p, NULL), 0);
	ck_assert_uint_eq(p.n, 4);
	in.sin_port = htons(7703);
	inet_pton(AF_INET, "127.0.0.2", &in.sin_addr);
	ck_assert(egress_protected_has(&p, (const void *)&in));
	in.sin_port = htons(5432);
	ck_assert(egress_protected_has(&p, (const void *)&in));
	inet_pton(AF_INET, "10.0.0.9", &in.sin_addr);
	ck_assert(!egress_protected_has(&p, (const void *)&in));
	in.sin_port = htons(7711);
	ck_assert(egress_protected_has(&p, (const void *)&in));
	in.sin_port = htons(7704);
	inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
	ck_assert(!egress_protected_has(&p, (const void *)&in));
	in6.sin6_port = htons(7701);
	inet_pton(AF_INET6, "::1", &in6.sin6_addr);
	ck_assert(egress_protected_has(&p, (const void *)&in6));
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
	ck_assert(egress_protected_has(&p, (const void *)&in6));
	inet_pton(AF_INET6, "2001:db8::1", &in6.sin6_addr);
	ck_assert(!egress_protected_has(&p, (const void *)&in6));
	/* Names and other shapes are refused: nothing is resolved. */
	static const char *const bad[] = { "localhost:7703", "127.0.0.1",
		"127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:7x", ":7703",
		"http://[::1]:7701", "127.0.0.1:7703,,x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct egress_protected q = { .n = 0 };
		ck_assert_msg(egress_protected_add(&q, bad[i]) == -EINVAL, "%s",
		    bad[i]);
	}
}
END_TEST

START_TEST(cidrs)
{
	struct cidr c;
	static const char *const bad[] = { "10.0.0.0", "10.0.0.0/33", "/8",
		"10.0.0.0/+8", "10.0.0.0/ 8", " 10.0.0.0/8", "foo:bar/64",
		"::/129", "10.0.0.0/8x", "10.0.0/8" };

	ck_assert_int_eq(cidr_parse("10.0.0.0/8", &c), 0);
	ck_assert_int_eq(c.bits, 8);
	ck_assert_int_eq(cidr_parse("0.0.0.0/0", &c), 0);
	ck_assert_int_eq(cidr_parse("2001:db8::/32", &c), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(cidr_parse(bad[i], &c) < 0, "%s accepted",
		    bad[i]);
	/* Boundaries: /31 holds two addresses, not a third. */
	ck_assert_int_eq(cidr_parse("192.0.2.0/31", &c), 0);
	struct sockaddr_storage a = addr("192.0.2.1"), b = addr("192.0.2.2");
	ck_assert(cidr_contains(&c, (struct sockaddr *)&a));
	ck_assert(!cidr_contains(&c, (struct sockaddr *)&b));
	/* Families do not mix. */
	struct sockaddr_storage m = addr("::ffff:192.0.2.1");
	ck_assert(!cidr_contains(&c, (struct sockaddr *)&m));
}
END_TEST

static Suite *
egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("egress");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, hosts_normalise_one_way);
	tcase_add_test(tc, ip_literals_in_any_spelling);
	tcase_add_test(tc, paths_with_one_reading);
	tcase_add_test(tc, paths_with_two_readings_are_refused);
	tcase_add_test(tc, paths_with_one_reading_still_pass);
	tcase_add_test(tc, default_deny_with_reasons);
	tcase_add_test(tc, rules_that_cannot_be_read_are_refused);
	tcase_add_test(tc, refused_address_ranges);
	tcase_add_test(tc, cidrs);
	tcase_add_test(tc, protected_endpoints);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(egress_suite());
}
