/*
 * CIDR parsing and matching. Strict on purpose: what sscanf or inet_aton
 * would also take (" 10.0.0.0/ 8", "10/8", "/+8") is refused.
 */
#include "cidr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int
cidr_parse(const char *s, struct cidr *ret)
{
	const char *slash = strchr(s, '/');
	char host[64];
	size_t len, digits;
	long bits;

	if (slash == NULL || (len = (size_t)(slash - s)) == 0 ||
	    len >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, len);
	host[len] = '\0';
	memset(ret, 0, sizeof(*ret));
	ret->family = strchr(host, ':') != NULL ? AF_INET6 : AF_INET;
	if (inet_pton(ret->family, host, ret->addr) != 1)
		return -EINVAL;
	digits = strspn(slash + 1, "0123456789");
	if (digits == 0 || digits > 3 || slash[1 + digits] != '\0')
		return -EINVAL;
	bits = strtol(slash + 1, NULL, 10);
	if (bits > (ret->family == AF_INET ? 32 : 128))
		return -EINVAL;
	ret->bits = (unsigned)bits;
	return 0;
}

/* True when the first bits of a and b agree. */
static bool
prefix_equal(const unsigned char *a, const unsigned char *b, unsigned bits)
{
	unsigned bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes) != 0)
		return false;
	if (rest == 0)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (a[bytes] & mask) == (b[bytes] & mask);
}

bool
cidr_contains(const struct cidr *c, const struct sockaddr *addr)
{
	if (addr->sa_family != c->family)
		return false;
	if (c->family == AF_INET)
		return prefix_equal(c->addr,
		    (const unsigned char *)&((const struct sockaddr_in *)addr)
			->sin_addr,
		    c->bits);
	return prefix_equal(c->addr,
	    ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr, c->bits);
}

bool
cidr_embedded_v4(const struct sockaddr *addr, struct sockaddr_in *ret)
{
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const unsigned char zero[12] = { 0 };
	static const unsigned char nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	const unsigned char *a;
	unsigned char v4[4];

	if (addr->sa_family != AF_INET6)
		return false;
	a = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0) {
		memcpy(v4, a + 12, 4);
	} else if (memcmp(a, zero, 12) == 0) {
		/* ::/96 holds IPv6's unspecified and loopback addresses too. */
		if (a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] <= 1)
			return false;
		memcpy(v4, a + 12, 4);
	} else if (a[0] == 0x20 && a[1] == 0x02) {
		memcpy(v4, a + 2, 4);
	} else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
		for (int i = 0; i < 4; i++)
			v4[i] = (unsigned char)~a[12 + i];
	} else {
		return false;
	}
	memset(ret, 0, sizeof(*ret));
	ret->sin_family = AF_INET;
	ret->sin_port = ((const struct sockaddr_in6 *)addr)->sin6_port;
	memcpy(&ret->sin_addr, v4, 4);
	return true;
}
