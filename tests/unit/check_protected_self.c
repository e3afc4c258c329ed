/*
 * A protected entry on 0.0.0.0 (proxy/egress.c, operations.md's
 * "protected"): a service bound to every address of the host (PostgreSQL
 * with listen_addresses '*', a hatch on 0.0.0.0) is reached as well on the
 * host's own non-loopback addresses, so a rule whose allow_cidrs holds one
 * of them (a LAN range) reached it (redteam2). The host's addresses are
 * read with getifaddrs; this machine has eth0's.
 */
#include "egress.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>

START_TEST(an_entry_on_every_address_covers_the_hosts_own)
{
	struct egress_protected p = { 0 };
	struct ifaddrs *ifa = NULL;
	struct sockaddr_in own = { 0 }, far = { 0 };
	bool found = false;

	ck_assert_int_eq(egress_protected_add(&p, "0.0.0.0:5432"), 0);
	ck_assert_int_eq(getifaddrs(&ifa), 0);
	for (struct ifaddrs *i = ifa; i != NULL && !found; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		memcpy(&own, i->ifa_addr, sizeof(own));
		found = (ntohl(own.sin_addr.s_addr) >> 24) != 127;
	}
	freeifaddrs(ifa);
	ck_assert_msg(found, "no IPv4 address but loopback on this host");
	own.sin_port = htons(5432);
	ck_assert_msg(egress_protected_has(&p, (struct sockaddr *)&own),
	    "0.0.0.0:5432 does not cover the host's own %s:5432",
	    inet_ntoa(own.sin_addr));
	/* Another host's 5432 is not the host's. */
	far.sin_family = AF_INET;
	far.sin_port = htons(5432);
	inet_pton(AF_INET, "198.51.100.7", &far.sin_addr);
	ck_assert(!egress_protected_has(&p, (struct sockaddr *)&far));
	own.sin_port = htons(5433);
	ck_assert(!egress_protected_has(&p, (struct sockaddr *)&own));
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("protected_self");
	TCase *tc = tcase_create("self");

	tcase_add_test(tc, an_entry_on_every_address_covers_the_hosts_own);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
