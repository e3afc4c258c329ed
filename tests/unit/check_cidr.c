/*
 * CIDR ranges and the IPv4 address an IPv6 one carries: every spelling of
 * 169.254.169.254 in IPv6 (mapped, compatible, NAT64's well-known prefix,
 * 6to4, Teredo) reads as that address, so a judgement of IPv4 ranges (a
 * metadata service's) sees it; IPv6's own addresses, ::, ::1 and NAT64's
 * local-use prefix read as none; and a range of one family never holds an
 * address of the other.
 */
#include "cidr.h"

#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>

static struct sockaddr_in6
v6(const char *text, unsigned port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
		.sin6_port = htons((uint16_t)port) };

	ck_assert_msg(inet_pton(AF_INET6, text, &a.sin6_addr) == 1, "%s", text);
	return a;
}

/* The IPv4 address text carries, as inet_ntop writes it, or "none". */
static const char *
embedded(const char *text, char *out, size_t len)
{
	struct sockaddr_in6 a = v6(text, 443);
	struct sockaddr_in v4;

	if (!cidr_embedded_v4((struct sockaddr *)&a, &v4))
		return "none";
	ck_assert_int_eq(v4.sin_family, AF_INET);
	ck_assert_int_eq(ntohs(v4.sin_port), 443);
	ck_assert_ptr_nonnull(inet_ntop(AF_INET, &v4.sin_addr, out, len));
	return out;
}

START_TEST(every_ipv6_spelling_of_the_metadata_address)
{
	static const char *const spellings[] = {
		"::ffff:169.254.169.254", /* mapped */
		"::ffff:a9fe:a9fe",
		"0:0:0:0:0:ffff:a9fe:a9fe",
		"::169.254.169.254", /* compatible */
		"::a9fe:a9fe",
		"64:ff9b::a9fe:a9fe", /* NAT64, well-known prefix */
		"64:ff9b::169.254.169.254",
		"2002:a9fe:a9fe::", /* 6to4 */
		"2002:a9fe:a9fe:1:2:3:4:5",
		"2001:0:4136:e378:8000:63bf:5601:5601", /* Teredo, ~client */
		"2001::ffff:5601:5601",
	};
	char out[INET_ADDRSTRLEN];

	for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++)
		ck_assert_msg(strcmp(embedded(spellings[i], out, sizeof(out)),
				  "169.254.169.254") == 0,
		    "%s read as %s", spellings[i], out);
}
END_TEST

START_TEST(ipv6_addresses_of_their_own_carry_none)
{
	static const char *const own[] = { "::", "::1", "2001:db8::1",
		"fe80::1", "fd00:ec2::254", "2606:4700::1111",
		"64:ff9b:1::a9fe:a9fe", /* local-use: no fixed place */
		"64:ff9b:0:0:0:1:a9fe:a9fe", "::fffe:a9fe:a9fe",
		"2003:a9fe:a9fe::", "2001:1::ffff:5601:5601" };
	char out[INET_ADDRSTRLEN];

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		ck_assert_msg(strcmp(embedded(own[i], out, sizeof(out)),
				  "none") == 0,
		    "%s read as %s", own[i], out);
}
END_TEST

START_TEST(an_ipv4_address_is_not_read_again)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, v4 = { 0 };

	a.sin_addr.s_addr = htonl(0xa9fea9fe);
	ck_assert(!cidr_embedded_v4((struct sockaddr *)&a, &v4));
	ck_assert_int_eq(v4.sin_family, 0);
}
END_TEST

/* A judgement of IPv4 ranges holds each spelling once it is read as the
 * IPv4 it carries, and does not hold it before. */
START_TEST(a_range_judges_the_embedded_address)
{
	struct cidr link;
	struct sockaddr_in6 a = v6("64:ff9b::a9fe:a9fe", 80);
	struct sockaddr_in v4;

	ck_assert_int_eq(cidr_parse("169.254.0.0/16", &link), 0);
	ck_assert(!cidr_contains(&link, (struct sockaddr *)&a));
	ck_assert(cidr_embedded_v4((struct sockaddr *)&a, &v4));
	ck_assert(cidr_contains(&link, (struct sockaddr *)&v4));
	a = v6("2002:0a00:0001::", 80);
	ck_assert(cidr_embedded_v4((struct sockaddr *)&a, &v4));
	ck_assert(!cidr_contains(&link, (struct sockaddr *)&v4));
	ck_assert_int_eq(ntohl(v4.sin_addr.s_addr), 0x0a000001);
}
END_TEST

START_TEST(parse_is_strict)
{
	static const char *const bad[] = { "10/8", " 10.0.0.0/8", "10.0.0.0/ 8",
		"10.0.0.0/+8", "10.0.0.0/33", "::/129", "10.0.0.0", "/8",
		"10.0.0.0/8x", "10.0.0.0/0008" };
	struct cidr c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(cidr_parse(bad[i], &c) != 0, "%s taken", bad[i]);
	ck_assert_int_eq(cidr_parse("::ffff:0:0/96", &c), 0);
	ck_assert_int_eq(c.family, AF_INET6);
	ck_assert_uint_eq(c.bits, 96);
}
END_TEST

static Suite *
cidr_suite(void)
{
	Suite *s = suite_create("cidr");
	TCase *tc = tcase_create("cidr");

	tcase_add_test(tc, every_ipv6_spelling_of_the_metadata_address);
	tcase_add_test(tc, ipv6_addresses_of_their_own_carry_none);
	tcase_add_test(tc, an_ipv4_address_is_not_read_again);
	tcase_add_test(tc, a_range_judges_the_embedded_address);
	tcase_add_test(tc, parse_is_strict);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(cidr_suite());
}
