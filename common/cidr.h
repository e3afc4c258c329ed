/*
 * Address ranges in CIDR form ("10.1.2.0/24", "fd00::/8"): parsed strictly
 * (an address inet_pton reads, a decimal prefix length within the family's
 * bits, nothing else) and matched against socket addresses. The broker
 * checks a manifest's allow_cidrs with them; the proxy applies them. An
 * IPv6 address that carries an IPv4 one (mapped, compatible, NAT64's
 * well-known prefix, 6to4, Teredo) can be read as that IPv4 address, so
 * that a judgement of IPv4 ranges is not passed by another spelling.
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

/*
 * When addr is an IPv6 address whose packets reach an IPv4 address, that
 * address (the port kept) in *ret, and true; else false and *ret
 * untouched. The forms: IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible
 * ::a.b.c.d (not :: nor ::1, which are IPv6's own), NAT64's well-known
 * prefix 64:ff9b::/96 (the last 32 bits), 6to4 2002::/16 (bits 16..48)
 * and Teredo 2001::/32 (the client's address, the last 32 bits
 * inverted: where the relay delivers). NAT64's local-use 64:ff9b:1::/48
 * is not read: where its IPv4 sits depends on a prefix length the
 * address does not carry.
 */
bool cidr_embedded_v4(const struct sockaddr *addr, struct sockaddr_in *ret);

#endif
