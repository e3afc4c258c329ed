/*
 * Fuzzes the job's resolver (launcher/dns.c). The input is a query the
 * hostile job wrote. Properties: an answer is at most DNS_MSG_MAX bytes,
 * none for DNS_DROPPED and a header at least otherwise, carrying the
 * query's id and QR set; an answer of an address gives one in 127.3/16
 * that maps back to the name asked; a name is at most DNS_NAME_MAX bytes
 * of lowercase letters, digits, '-', '_' and '.'. Every call gets an
 * exactly-sized copy of its bytes, so that ASan sees an over-read.
 */
#include "dns.h"
#include "fuzz.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dns_zone *z;
	uint8_t out[DNS_MSG_MAX];
	char name[DNS_NAME_MAX + 1];
	size_t len;

	if (z == NULL) {
		json_t *rules = json_loads("[{\"host\": \"api.test\"}, "
					   "{\"host\": \"*.cdn.test\"}]",
		    0, NULL);
		FUZZ_ASSERT(rules != NULL && dns_zone_new(rules, &z) == 0);
		json_decref(rules);
	}
	uint8_t *q = malloc(size > 0 ? size : 1);
	FUZZ_ASSERT(q != NULL);
	memcpy(q, data, size);
	enum dns_outcome o = dns_answer(z, q, size, out, &len, name);
	FUZZ_ASSERT(len <= DNS_MSG_MAX);
	FUZZ_ASSERT(o == DNS_DROPPED ? len == 0 : len >= 12);
	if (len > 0)
		FUZZ_ASSERT(memcmp(out, q, 2) == 0 && (out[2] & 0x80) != 0);
	FUZZ_ASSERT(strlen(name) <= DNS_NAME_MAX);
	for (const char *c = name; *c != '\0'; c++)
		FUZZ_ASSERT((*c >= 'a' && *c <= 'z') ||
		    (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' ||
		    *c == '.');
	if (o == DNS_ANSWERED) {
		struct in_addr a;
		memcpy(&a.s_addr, out + len - 4, 4);
		const char *back = dns_zone_name(z, a);
		FUZZ_ASSERT(back != NULL && strcmp(back, name) == 0);
	}
	free(q);
	return 0;
}
