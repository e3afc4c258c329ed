/*
 * Fuzzes what the proxy decides from names a job chose: host
 * normalisation (one spelling, or refused), IP-literal detection, path
 * checks and the rule match. Input: host, NUL, path, NUL, method.
 * Properties: a normalised host normalises to itself; an accepted path
 * holds no dot segment, encoded separator, ';', %25 or "//"; a match is
 * only ever for the rule's host and port.
 */
#include "egress.h"
#include "fuzz.h"

#include <string.h>

static struct egress_rules rules;
static bool loaded;

static void
load(void)
{
	char err[128];
	json_t *v = json_loads(
	    "[{\"host\": \"api.github.com\", \"port\": 443, \"methods\": "
	    "[\"GET\"], \"paths\": [\"/repos/acme/\"], \"tls\": \"terminate\"},"
	    " {\"host\": \"*.example.com\", \"port\": 80, \"methods\": "
	    "[\"GET\", \"POST\"], \"paths\": [\"/\"], \"tls\": \"none\"}]",
	    0, NULL);

	FUZZ_ASSERT(egress_rules_load(v, &rules, err, sizeof(err)) == 0);
	json_decref(v);
	loaded = true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[4096], norm[EGRESS_HOST_MAX + 1], again[EGRESS_HOST_MAX + 1];
	const char *host, *path, *method, *why;

	if (!loaded)
		load();
	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	/* Up to three NUL-separated parts: host, path, method. */
	const char *part[3] = { buf, "", "" };
	char *at = buf;
	for (int k = 1; k < 3; k++) {
		char *z = memchr(at, '\0', (size_t)(buf + size - at));
		if (z == NULL || z == buf + size)
			break;
		part[k] = at = z + 1;
	}
	host = part[0];
	path = part[1];
	method = part[2];

	if (egress_host_normalise(host, strlen(host), norm) == 0) {
		FUZZ_ASSERT(
		    egress_host_normalise(norm, strlen(norm), again) == 0);
		FUZZ_ASSERT(strcmp(norm, again) == 0);
		for (const char *c = norm; *c; c++)
			FUZZ_ASSERT(!(*c >= 'A' && *c <= 'Z'));
		(void)egress_is_ip_literal(norm);
		int i = egress_match(&rules, norm, 443, method, path, &why);
		if (i >= 0) {
			FUZZ_ASSERT(i == 0);
			FUZZ_ASSERT(strcmp(norm, "api.github.com") == 0);
		}
		i = egress_match(&rules, norm, 80, method, path, &why);
		if (i >= 0) {
			size_t n = strlen(norm);
			FUZZ_ASSERT(n > 12 &&
			    strcmp(norm + n - 12, ".example.com") == 0);
		}
	}
	if (egress_path_ok(path, strlen(path)) == 0) {
		/* The path proper, before any query or fragment. */
		size_t q = strcspn(path, "?#");
		char p[4096];
		memcpy(p, path, q);
		p[q] = '\0';
		FUZZ_ASSERT(p[0] == '/');
		FUZZ_ASSERT(
		    strstr(p, "%2f") == NULL && strstr(p, "%2F") == NULL);
		FUZZ_ASSERT(
		    strstr(p, "/../") == NULL && strstr(p, "/./") == NULL);
		/* One reading: no segment cut (';'), no second decoding
		 * (%25), no merged slashes ("//"). */
		FUZZ_ASSERT(strchr(p, ';') == NULL &&
		    strstr(p, "%3b") == NULL && strstr(p, "%3B") == NULL);
		FUZZ_ASSERT(strstr(p, "%25") == NULL);
		FUZZ_ASSERT(strstr(p, "//") == NULL);
	}
	return 0;
}
