/*
 * Address ranges in CIDR form ("10.1.2.0/24", "fd00::/8"): parsed strictly
 * (an address inet_pton reads, a decimal prefix length within the family's
 * bits, nothing else) and matched against socket addresses. The broker
 * checks a manifest's allow_cidrs with them; the proxy applies them.
 */
#ifndef CORDON_CIDR_H
#define CORDON_CIDR_H

#include <stdbool.h>
#include <sys/socket.h>

struct cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned bits;
};

/* Parses s into *ret: 0 or -EINVAL. */
int cidr_parse(const char *s, struct cidr *ret);

/* True when addr is of c's family and its first c->bits bits are c's. */
bool cidr_contains(const struct cidr *c, const struct sockaddr *addr);

#endif
