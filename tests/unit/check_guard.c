/*
 * The guard's list and matcher (proxy/guard.c): a request reaches a
 * secret's binding by its host (case and one trailing dot aside), by the
 * IP of its upstream address when the binding names that IP as a host
 * (every port), or by the address itself (IP and port, v4 or v6, a v6
 * address that reaches a v4 one read as that v4); nothing else matches;
 * a bad list is refused whole with the old one kept; an address seen locally matches
 * until the broker's list holds it; issuer credentials are kept until
 * their expiry and wiped then.
 */
#include "guard.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *
list_of(void)
{
	json_t *l = json_loads(
	    "[{\"secret\": \"gh\", \"kind\": \"static\", \"version\": 3,"
	    "  \"hosts\": [\"API.GitHub.com.\", \"www.api.test\", \"10.0.0.7\","
	    "    \"2001:db8::1\"],"
	    "  \"addrs\": [\"140.82.112.6:443\", \"[2001:DB8:0::2]:8443\","
	    "    \"[::ffff:192.0.2.9]:80\"]},"
	    " {\"secret\": \"oa\", \"kind\": \"oauth_client_credentials\","
	    "  \"version\": 1, \"hosts\": [\"api.github.com\"], \"addrs\": "
	    "[]}]",
	    0, NULL);

	ck_assert_ptr_nonnull(l);
	return l;
}

/* The secrets host and addr match, comma-joined in the match's order
 * sorted (the list is sorted by secret). */
static const char *
names(const struct guard *g, const char *host, const char *addr)
{
	static char out[256];
	const struct guard_binding *m[GUARD_MATCH_MAX];
	size_t n = guard_match(g, host, addr, m);

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
		    i > 0 ? "," : "", m[i]->secret);
	return out;
}

START_TEST(hosts_match_whatever_their_case_and_trailing_dot)
{
	struct guard g = { 0 };
	json_t *l = list_of();
	char err[128] = "";

	ck_assert_int_eq(guard_load(&g, l, 1000, err, sizeof(err)), 0);
	ck_assert_str_eq(names(&g, "api.github.com", NULL), "gh,oa");
	ck_assert_str_eq(names(&g, "API.GITHUB.COM.", ""), "gh,oa");
	ck_assert_str_eq(names(&g, "www.api.test", NULL), "gh");
	ck_assert_str_eq(names(&g, "WWW.Api.Test.", NULL), "gh");
	ck_assert_str_eq(names(&g, "api.test", NULL), "");
	ck_assert_str_eq(names(&g, "github.com", NULL), "");
	ck_assert_str_eq(names(&g, "xapi.github.com", NULL), "");
	ck_assert_str_eq(names(&g, "api.github.com..", NULL), "");
	ck_assert_str_eq(names(&g, NULL, NULL), "");
	ck_assert_str_eq(names(&g, "", ""), "");
	const struct guard_binding *b = guard_binding_of(&g, "oa");
	ck_assert_ptr_nonnull(b);
	ck_assert(!b->is_static);
	ck_assert_int_eq(b->version, 1);
	b = guard_binding_of(&g, "gh");
	ck_assert_ptr_nonnull(b);
	ck_assert(b->is_static);
	ck_assert_int_eq(b->version, 3);
	ck_assert_ptr_null(guard_binding_of(&g, "nope"));
	json_decref(l);
	/* A kind the proxy does not know is asked for as a static one (the
	 * broker's refusal then fails closed), an issuer's is not. */
	l = json_loads("[{\"secret\": \"u\", \"kind\": \"unsealable\","
		       " \"version\": 1, \"hosts\": [\"u.test\"]},"
		       " {\"secret\": \"g\", \"kind\": \"github_app\","
		       " \"version\": 1, \"hosts\": [\"g.test\"]}]",
	    0, NULL);
	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(guard_load(&g, l, 2000, err, sizeof(err)), 0);
	ck_assert(guard_binding_of(&g, "u")->is_static);
	ck_assert(!guard_binding_of(&g, "g")->is_static);
	json_decref(l);
	guard_free(&g);
}
END_TEST

START_TEST(addresses_match_with_their_port_ips_on_every_port)
{
	struct guard g = { 0 };
	json_t *l = list_of();
	char err[128] = "";

	ck_assert_int_eq(guard_load(&g, l, 1000, err, sizeof(err)), 0);
	/* An address of the list: IP and port both. */
	ck_assert_str_eq(names(&g, "other.test", "140.82.112.6:443"), "gh");
	ck_assert_str_eq(names(&g, "other.test", "140.82.112.6:444"), "");
	ck_assert_str_eq(names(&g, "other.test", "140.82.112.7:443"), "");
	/* v6, as inet_ntop writes it (the list's was not). */
	ck_assert_str_eq(names(&g, NULL, "[2001:db8::2]:8443"), "gh");
	ck_assert_str_eq(names(&g, NULL, "[2001:db8::2]:8444"), "");
	/* An IPv4-mapped address of the list is its IPv4. */
	ck_assert_str_eq(names(&g, NULL, "192.0.2.9:80"), "gh");
	/* An IP among the hosts: that IP on every port. */
	ck_assert_str_eq(names(&g, NULL, "10.0.0.7:1"), "gh");
	ck_assert_str_eq(names(&g, NULL, "10.0.0.7:65535"), "gh");
	ck_assert_str_eq(names(&g, NULL, "10.0.0.8:80"), "");
	ck_assert_str_eq(names(&g, NULL, "[2001:db8::1]:443"), "gh");
	ck_assert_str_eq(names(&g, NULL, "[2001:db8::3]:443"), "");
	/* Host and address of the same binding: once. */
	ck_assert_str_eq(names(&g, "www.api.test", "140.82.112.6:443"), "gh");
	ck_assert_str_eq(names(&g, "api.github.com", "140.82.112.6:443"),
	    "gh,oa");
	/* An IPv6 address whose packets reach an IPv4 one is that IPv4
	 * (mapped, NAT64's prefix, 6to4: cidr_embedded_v4), with its port. */
	ck_assert_str_eq(names(&g, NULL, "[::ffff:140.82.112.6]:443"), "gh");
	ck_assert_str_eq(names(&g, NULL, "[64:ff9b::8c52:7006]:443"), "gh");
	ck_assert_str_eq(names(&g, NULL, "[2002:8c52:7006::1]:443"), "gh");
	ck_assert_str_eq(names(&g, NULL, "[64:ff9b::8c52:7006]:444"), "");
	ck_assert_str_eq(names(&g, NULL, "[::ffff:10.0.0.7]:8080"), "gh");
	/* Not an address: nothing, no crash. */
	ck_assert_str_eq(names(&g, NULL, "140.82.112.6"), "");
	ck_assert_str_eq(names(&g, NULL, "[2001:db8::2"), "");
	json_decref(l);
	guard_free(&g);
}
END_TEST

START_TEST(addresses_are_normalised)
{
	char out[GUARD_ADDR_MAX];

	ck_assert_int_eq(guard_addr_normalise("127.0.0.1:8080", out), 0);
	ck_assert_str_eq(out, "127.0.0.1:8080");
	ck_assert_int_eq(guard_addr_normalise("[::FFFF:127.0.0.1]:80", out), 0);
	ck_assert_str_eq(out, "127.0.0.1:80");
	ck_assert_int_eq(guard_addr_normalise("[2001:0db8::0001]:443", out), 0);
	ck_assert_str_eq(out, "[2001:db8::1]:443");
	ck_assert_int_eq(guard_addr_normalise("[64:ff9b::7f00:1]:80", out), 0);
	ck_assert_str_eq(out, "127.0.0.1:80");
	ck_assert_int_eq(guard_addr_normalise("127.0.0.1", out), -EINVAL);
	ck_assert_int_eq(guard_addr_normalise("127.0.0.1:0", out), -EINVAL);
	ck_assert_int_eq(guard_addr_normalise("127.0.0.1:65536", out), -EINVAL);
	ck_assert_int_eq(guard_addr_normalise("127.0.0.1:80x", out), -EINVAL);
	ck_assert_int_eq(guard_addr_normalise("2001:db8::1:443", out), -EINVAL);
	ck_assert_int_eq(guard_addr_normalise("api.test:443", out), -EINVAL);
	ck_assert_int_eq(guard_addr_normalise("", out), -EINVAL);
}
END_TEST

/* The reference of guard_addr_normalise for "a.b.c.d:port": inet_pton,
 * inet_ntop and the port read by strtoul, as it was before its fast path
 * for the proxy's own text. */
static int
v4_reference(const char *in, char out[GUARD_ADDR_MAX])
{
	const char *colon = strrchr(in, ':');
	char ip[INET6_ADDRSTRLEN + 1], norm[INET_ADDRSTRLEN];
	struct in_addr a;
	char *end;

	if (colon == NULL || colon == in ||
	    (size_t)(colon - in) > INET6_ADDRSTRLEN)
		return -EINVAL;
	memcpy(ip, in, (size_t)(colon - in));
	ip[colon - in] = '\0';
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	unsigned long p = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || p == 0 || p > 65535 ||
	    inet_pton(AF_INET, ip, &a) != 1 ||
	    inet_ntop(AF_INET, &a, norm, sizeof(norm)) == NULL)
		return -EINVAL;
	snprintf(out, GUARD_ADDR_MAX, "%s:%lu", norm, p);
	return 0;
}

START_TEST(ipv4_addresses_normalise_as_inet_ntop_writes_them)
{
	static const char *const odd[] = { "0.0.0.0:1", "255.255.255.255:65535",
		"256.0.0.1:80", "01.2.3.4:80", "1.2.3.04:80", "0.0.0.00:80",
		"1.2.3.4:080", "1.2.3.4:00080", "1.2.3.4:0", "1.2.3.4:65536",
		"1.2.3.4:99999999999999999999", "1.2.3:80", "1.2.3.4.5:80",
		"1..3.4:80", "1.2.3.4:", ":80", "1.2.3.4 :80", " 1.2.3.4:80",
		"1.2.3.4:+80", "1.2.3.4:8 0", "1.2.3.4:80\n", "1.2.3.4:80:80",
		"1.2.3.4444:80", "1.2.3.-4:80", "1000.2.3.4:80",
		"1.2.3.4:65535", "9.9.9.9:9", "10.0.0.255:443" };
	char out[GUARD_ADDR_MAX], want[GUARD_ADDR_MAX], in[64];
	unsigned seed = 18;

	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		int w = v4_reference(odd[i], want);
		ck_assert_msg(guard_addr_normalise(odd[i], out) == w,
		    "%s: %d, want %d", odd[i],
		    guard_addr_normalise(odd[i], out), w);
		if (w == 0)
			ck_assert_msg(strcmp(out, want) == 0, "%s: %s, want %s",
			    odd[i], out, want);
	}
	/* Octets and ports of every width, leading zeros now and then. */
	for (int k = 0; k < 20000; k++) {
		size_t n = 0;
		for (int part = 0; part < 5; part++) {
			seed = seed * 1103515245u + 12345u;
			unsigned v = (seed >> 8) % (part < 4 ? 300 : 70000);
			const char *zero = (seed >> 24) % 8 == 0 ? "0" : "";
			n += (size_t)snprintf(in + n, sizeof(in) - n, "%s%s%u",
			    part == 0      ? ""
				: part < 4 ? "."
					   : ":",
			    zero, v);
		}
		int w = v4_reference(in, want);
		ck_assert_msg(guard_addr_normalise(in, out) == w,
		    "%s: %d, want %d", in, guard_addr_normalise(in, out), w);
		if (w == 0)
			ck_assert_msg(strcmp(out, want) == 0, "%s: %s, want %s",
			    in, out, want);
	}
}
END_TEST

START_TEST(a_bad_list_is_refused_whole_and_the_old_one_kept)
{
	struct guard g = { 0 };
	json_t *l = list_of();
	char err[128] = "";
	static const char *const bad[] = {
		"{}",
		"[1]",
		"[{\"kind\": \"static\", \"version\": 1, \"hosts\": [],"
		" \"addrs\": []}]",
		"[{\"secret\": \"a\", \"kind\": \"static\", \"version\": 1,"
		" \"hosts\": [\"bad host\"], \"addrs\": []}]",
		"[{\"secret\": \"a\", \"kind\": \"static\", \"version\": 1,"
		" \"hosts\": [], \"addrs\": [\"api.test:80\"]}]",
		"[{\"secret\": \"a\", \"kind\": \"static\", \"version\": 1,"
		" \"hosts\": [7], \"addrs\": []}]",
	};

	ck_assert(!guard_fresh(&g, 1000, 15000));
	ck_assert_int_eq(guard_load(&g, l, 1000, err, sizeof(err)), 0);
	ck_assert(guard_fresh(&g, 16000, 15000));
	ck_assert(!guard_fresh(&g, 16001, 15000));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *b = json_loads(bad[i], 0, NULL);
		ck_assert_ptr_nonnull(b);
		err[0] = '\0';
		ck_assert_int_eq(guard_load(&g, b, 2000, err, sizeof(err)),
		    -EINVAL);
		ck_assert_msg(err[0] != '\0', "%s: no reason", bad[i]);
		json_decref(b);
	}
	/* The old list, and its time. */
	ck_assert_str_eq(names(&g, "www.api.test", NULL), "gh");
	ck_assert(!guard_fresh(&g, 16001, 15000));
	json_t *empty = json_array();
	ck_assert_int_eq(guard_load(&g, empty, 3000, err, sizeof(err)), 0);
	ck_assert_str_eq(names(&g, "www.api.test", NULL), "");
	json_decref(empty);
	json_decref(l);
	guard_free(&g);
}
END_TEST

START_TEST(an_address_seen_here_matches_until_the_list_holds_it)
{
	struct guard g = { 0 };
	json_t *l = list_of();
	char err[128] = "";
	struct guard_local *loc = NULL, *again = NULL;

	ck_assert_int_eq(guard_load(&g, l, 1000, err, sizeof(err)), 0);
	/* In the list already: nothing to add. */
	ck_assert_int_eq(guard_local_add(&g, "gh", "job1", "140.82.112.6:443",
			     &loc),
	    0);
	ck_assert_str_eq(names(&g, NULL, "127.0.0.1:9000"), "");
	ck_assert_int_eq(guard_local_add(&g, "gh", "job1", "127.0.0.1:9000",
			     &loc),
	    1);
	ck_assert_ptr_nonnull(loc);
	ck_assert_str_eq(loc->job, "job1");
	ck_assert_str_eq(names(&g, "x.test", "127.0.0.1:9000"), "gh");
	ck_assert_str_eq(names(&g, "x.test", "127.0.0.1:9001"), "");
	/* Once is enough, whoever asks. */
	ck_assert_int_eq(guard_local_add(&g, "gh", "job2", "127.0.0.1:9000",
			     &again),
	    0);
	ck_assert_ptr_null(again);
	ck_assert_int_eq(guard_addr_known(&g, "gh", "127.0.0.1:9000"), 1);
	ck_assert_int_eq(guard_addr_known(&g, "gh", "127.0.0.1:9001"), 0);
	/* The broker's next list holds it: forgotten here, still matched. */
	json_array_append_new(json_object_get(json_array_get(l, 0), "addrs"),
	    json_string("127.0.0.1:9000"));
	ck_assert_int_eq(guard_load(&g, l, 2000, err, sizeof(err)), 0);
	ck_assert_uint_eq(g.nlocal, 0);
	ck_assert_str_eq(names(&g, "x.test", "127.0.0.1:9000"), "gh");
	ck_assert_int_eq(guard_local_add(&g, "gh", "job1", "bad", &again),
	    -EINVAL);
	json_decref(l);
	guard_free(&g);
}
END_TEST

/* A refusal (the broker's 409 bindings_cap) is remembered by secret and
 * address in any spelling, until its time, the list's epoch moving, or
 * the broker's 200 for it. */
START_TEST(a_refused_address_is_remembered_until_the_list_moves)
{
	struct guard g = { 0 };
	struct guard_local *loc = NULL;

	guard_epoch(&g, 7);
	ck_assert_int_eq(guard_refused_put(&g, "gh", "[::ffff:127.0.0.1]:9000",
			     1000),
	    0);
	ck_assert(guard_refused_has(&g, "gh", "127.0.0.1:9000", 1000));
	ck_assert(!guard_refused_has(&g, "gh", "127.0.0.1:9001", 1000));
	ck_assert(!guard_refused_has(&g, "other", "127.0.0.1:9000", 1000));
	ck_assert(guard_refused_has(&g, "gh", "127.0.0.1:9000",
	    1000 + GUARD_REFUSED_MS - 1));
	/* The same epoch again: kept; another: forgotten. */
	guard_epoch(&g, 7);
	ck_assert(guard_refused_has(&g, "gh", "127.0.0.1:9000", 2000));
	guard_epoch(&g, 8);
	ck_assert(!guard_refused_has(&g, "gh", "127.0.0.1:9000", 2000));
	/* Past its time; and the broker's 200 since. */
	ck_assert_int_eq(guard_refused_put(&g, "gh", "127.0.0.1:9000", 3000),
	    0);
	ck_assert(!guard_refused_has(&g, "gh", "127.0.0.1:9000",
	    3000 + GUARD_REFUSED_MS));
	ck_assert_int_eq(guard_refused_put(&g, "gh", "127.0.0.1:9000", 4000),
	    0);
	ck_assert_int_eq(guard_local_add(&g, "gh", "job1", "127.0.0.1:9000",
			     &loc),
	    1);
	ck_assert(!guard_refused_has(&g, "gh", "127.0.0.1:9000", 4000));
	ck_assert_int_eq(guard_refused_put(&g, "gh", "bad", 4000), -EINVAL);
	/* Full: the oldest gives its place. */
	char a[32];
	for (int i = 0; i <= GUARD_REFUSED_MAX; i++) {
		snprintf(a, sizeof(a), "127.0.0.2:%d", i + 1);
		ck_assert_int_eq(guard_refused_put(&g, "gh", a, 5000), 0);
	}
	ck_assert(!guard_refused_has(&g, "gh", "127.0.0.2:1", 5000));
	ck_assert(guard_refused_has(&g, "gh", a, 5000));
	guard_free(&g);
}
END_TEST

START_TEST(issuer_credentials_are_kept_until_their_expiry)
{
	struct guard g = { 0 };

	ck_assert_int_eq(guard_issued_put(&g, "oa", "tok_one", 7, 200, 100), 1);
	ck_assert_int_eq(guard_issued_put(&g, "oa", "tok_one", 7, 200, 100), 0);
	/* No expiry: an hour. */
	ck_assert_int_eq(guard_issued_put(&g, "oa", "tok_two", 7, 0, 100), 1);
	ck_assert_int_eq(g.issued[1].expires, 100 + GUARD_ISSUED_DEFAULT_S);
	/* One good for a day or more: kept that long, its own expiry (it
	 * may be stored at a service all that time; redteam3 #10). */
	ck_assert_int_eq(guard_issued_put(&g, "oa", "tok_thr", 7, 100 + 99999,
			     100),
	    1);
	ck_assert_int_eq(g.issued[2].expires, 100 + 99999);
	guard_issued_expire(&g, 100 + 2 * 3600);
	ck_assert_uint_eq(g.nissued, 1);
	ck_assert_int_eq(guard_issued_put(&g, "oa", "tok_one", 7, 200, 100), 1);
	ck_assert_int_eq(guard_issued_put(&g, "oa", "tok_two", 7, 0, 100), 1);
	ck_assert_uint_eq(g.nissued, 3);
	guard_issued_expire(&g, 201);
	ck_assert_uint_eq(g.nissued, 2);
	for (size_t i = 0; i < g.nissued; i++)
		ck_assert(memcmp(g.issued[i].value, "tok_one", 7) != 0);
	ck_assert_int_eq(guard_issued_put(&g, "oa", "", 0, 0, 100), -EINVAL);
	guard_free(&g);
	ck_assert_uint_eq(g.nissued, 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("guard");
	TCase *tc = tcase_create("guard");

	tcase_add_test(tc, hosts_match_whatever_their_case_and_trailing_dot);
	tcase_add_test(tc, addresses_match_with_their_port_ips_on_every_port);
	tcase_add_test(tc, addresses_are_normalised);
	tcase_add_test(tc, ipv4_addresses_normalise_as_inet_ntop_writes_them);
	tcase_add_test(tc, a_bad_list_is_refused_whole_and_the_old_one_kept);
	tcase_add_test(tc,
	    an_address_seen_here_matches_until_the_list_holds_it);
	tcase_add_test(tc,
	    a_refused_address_is_remembered_until_the_list_moves);
	tcase_add_test(tc, issuer_credentials_are_kept_until_their_expiry);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
