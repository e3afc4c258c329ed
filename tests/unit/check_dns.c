/*
 * The job's resolver (launcher/dns.c): the zone built from egress rules
 * (names, wildcards, stable addresses mapped back), and the answer to a
 * query: A for an allowed name, NODATA for AAAA, NXDOMAIN for the rest,
 * FORMERR/NOTIMP/REFUSED for what is not one plain question, nothing for
 * a response or a runt; every single-byte change of a query answered
 * sanely.
 */
#include "dns.h"

#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <string.h>

static struct dns_zone *
zone(const char *rules)
{
	json_t *j = json_loads(rules, 0, NULL);
	struct dns_zone *z = NULL;

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(dns_zone_new(j, &z), 0);
	json_decref(j);
	return z;
}

/* A query for name (dotted) of type, class IN, RD set, id 0x1234. */
static size_t
query(uint8_t *q, const char *name, unsigned type)
{
	size_t n = 12;
	const char *p = name;

	memset(q, 0, 12);
	q[0] = 0x12;
	q[1] = 0x34;
	q[2] = 0x01;
	q[5] = 1;
	while (*p != '\0') {
		const char *dot = strchr(p, '.');
		size_t l = dot != NULL ? (size_t)(dot - p) : strlen(p);
		q[n++] = (uint8_t)l;
		memcpy(q + n, p, l);
		n += l;
		p += l + (dot != NULL);
	}
	q[n++] = 0;
	q[n++] = (uint8_t)(type >> 8);
	q[n++] = (uint8_t)type;
	q[n++] = 0;
	q[n++] = 1;
	return n;
}

static const char *rules = "[{\"host\": \"api.example.test\", \"port\": 443},"
			   "{\"host\": \"api.example.test\", \"port\": 80},"
			   "{\"host\": \"*.cdn.test\"},"
			   "{\"host\": \"b.test\"}]";

START_TEST(test_zone)
{
	struct dns_zone *z = zone(rules);
	struct in_addr a, b;

	ck_assert_int_eq(dns_zone_lookup(z, "api.example.test", &a), 0);
	ck_assert_str_eq(inet_ntoa(a), "127.3.0.1");
	ck_assert_int_eq(dns_zone_lookup(z, "b.test", &a), 0);
	ck_assert_str_eq(inet_ntoa(a), "127.3.0.2");
	ck_assert_int_eq(dns_zone_lookup(z, "x.cdn.test", &a), 0);
	ck_assert_str_eq(inet_ntoa(a), "127.3.0.3");
	ck_assert_int_eq(dns_zone_lookup(z, "x.cdn.test", &b), 0);
	ck_assert_uint_eq(a.s_addr, b.s_addr); /* stable */
	ck_assert_str_eq(dns_zone_name(z, a), "x.cdn.test");
	ck_assert_int_eq(dns_zone_lookup(z, "cdn.test", &a), -ENOENT);
	ck_assert_int_eq(dns_zone_lookup(z, "xcdn.test", &a), -ENOENT);
	ck_assert_int_eq(dns_zone_lookup(z, "example.test", &a), -ENOENT);
	ck_assert_int_eq(dns_zone_lookup(z, "evil.example", &a), -ENOENT);
	inet_pton(AF_INET, "127.3.0.9", &a);
	ck_assert_ptr_null(dns_zone_name(z, a));
	inet_pton(AF_INET, "1.1.1.1", &a);
	ck_assert_ptr_null(dns_zone_name(z, a));
	dns_zone_free(z);

	json_t *bad = json_loads("[{\"host\": \"a b\"}]", 0, NULL);
	ck_assert_int_eq(dns_zone_new(bad, &z), -EINVAL);
	json_decref(bad);
}
END_TEST

START_TEST(test_answers)
{
	struct dns_zone *z = zone(rules);
	uint8_t q[DNS_MSG_MAX], out[DNS_MSG_MAX];
	char name[DNS_NAME_MAX + 1];
	size_t n, len;

	n = query(q, "API.example.test", 1);
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_ANSWERED);
	ck_assert_str_eq(name, "api.example.test");
	ck_assert_uint_eq(len, n + 16);
	ck_assert_uint_eq(out[0], 0x12);
	ck_assert_uint_eq(out[2] & 0x80, 0x80);
	ck_assert_uint_eq(out[3] & 0x0f, 0);
	ck_assert_uint_eq(out[7], 1); /* one answer */
	ck_assert_mem_eq(out + n + 12, "\x7f\x03\x00\x01", 4);

	n = query(q, "api.example.test", 28);
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_NODATA);
	ck_assert_uint_eq(out[3] & 0x0f, 0);
	ck_assert_uint_eq(out[7], 0);

	n = query(q, "secret.evil.example", 1);
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_NXDOMAIN);
	ck_assert_str_eq(name, "secret.evil.example");
	ck_assert_uint_eq(out[3] & 0x0f, 3);
	ck_assert_uint_eq(len, n);

	n = query(q, "api.example.test", 252); /* AXFR */
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_BAD);
	ck_assert_uint_eq(out[3] & 0x0f, 5);

	n = query(q, "api.example.test", 1);
	q[n - 1] = 3; /* class CHAOS */
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_BAD);
	ck_assert_uint_eq(out[3] & 0x0f, 5);

	n = query(q, "api.example.test", 1);
	q[2] |= 0x28; /* opcode 5, UPDATE */
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_BAD);
	ck_assert_uint_eq(out[3] & 0x0f, 4);

	n = query(q, "api.example.test", 1);
	q[5] = 2; /* two questions */
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_BAD);
	ck_assert_uint_eq(out[3] & 0x0f, 1);

	n = query(q, "api.example.test", 1);
	q[12] = 0xc0; /* a compression pointer */
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_BAD);
	ck_assert_str_eq(name, "");

	n = query(q, "api.example.test", 1);
	ck_assert_int_eq(dns_answer(z, q, n - 1, out, &len, name), DNS_BAD);
	q[2] |= 0x80; /* a response */
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_DROPPED);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(dns_answer(z, q, 11, out, &len, name), DNS_DROPPED);

	char big[300];
	memset(big, 'a', sizeof(big));
	for (int i = 60; i < 299; i += 61)
		big[i] = '.';
	big[299] = '\0';
	n = query(q, big, 1);
	ck_assert_int_eq(dns_answer(z, q, n, out, &len, name), DNS_BAD);
	dns_zone_free(z);
}
END_TEST

START_TEST(test_every_byte)
{
	struct dns_zone *z = zone(rules);
	uint8_t q[DNS_MSG_MAX], m[DNS_MSG_MAX], out[DNS_MSG_MAX];
	char name[DNS_NAME_MAX + 1];
	size_t n = query(q, "x.cdn.test", 1), len;

	for (size_t i = 0; i < n; i++)
		for (unsigned v = 0; v < 256; v++) {
			memcpy(m, q, n);
			m[i] = (uint8_t)v;
			enum dns_outcome o =
			    dns_answer(z, m, n, out, &len, name);
			ck_assert_uint_le(len, DNS_MSG_MAX);
			ck_assert(o == DNS_DROPPED ? len == 0 : len >= 12);
			ck_assert_uint_le(strlen(name), DNS_NAME_MAX);
			if (len > 0)
				ck_assert_mem_eq(out, m, 2);
		}
	dns_zone_free(z);
}
END_TEST

static Suite *
dns_suite(void)
{
	Suite *s = suite_create("dns");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_zone);
	tcase_add_test(tc, test_answers);
	tcase_add_test(tc, test_every_byte);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(dns_suite());
}
