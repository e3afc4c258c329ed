/*
 * The decision log: one JSON line per decision the proxy makes, allow or
 * deny, with the fields docs/egress.md fixes. Never a token, a header value,
 * a secret's value or a query string: the path is cut at '?' and '#', and anything shaped
 * like a cordon token or key (crd_..., crk_...) in any field is replaced.
 */
#ifndef CORDON_PROXY_DECISION_H
#define CORDON_PROXY_DECISION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct decision {
	const char *job;
	uint64_t conn, req;
	/* "http", "connect", "mitm", or as the launcher's first line on
	 * the channel says (http1.h): "capture", "dns", "direct". */
	const char *kind;
	const char *method;
	const char *host;
	uint16_t port;
	const char *path; /* as requested: cut here, never logged whole */
	const char *sni;
	const char *addr; /* the address connected to, "" before */
	int rule; /* the rule's index, -1 for none */
	bool allow;
	/* The upstream failed (no address, refused, TLS, timeout, a bad
	 * answer): logged as decision "error", reason "upstream_error", the
	 * detail saying which; counted apart from allow and deny. */
	bool error;
	const char *reason; /* why denied ("no_rule", ...); NULL if allowed */
	/* More about it, one of our own constant strings, never the job's:
	 * the parser's refusal ("cl_and_te"), the address class
	 * ("loopback"), what was wrong with a token ("other_job"), or, on an
	 * allowed passthrough, "opaque" (method and path were not seen). */
	const char *detail;
	int status; /* the status answered, 0 when none yet */
	uint64_t bytes_up, bytes_down;
	double ms;
	/* When not 0: the line stands for this many refusals of the same
	 * kind in one burst (connections refused at accept). */
	uint64_t count;
	/* A credential injected (credentials.md): the secret's name (one of
	 * the rules', never its value) and the version released; and how
	 * many times the answer carried it back, redacted. NULL: none. */
	const char *secret;
	int64_t secret_version;
	uint64_t reflected;
	/* With secret: the answer's Set-Cookie fields dropped (a rule
	 * without "cookies": true). */
	uint64_t cookies_dropped;
	/* The secrets whose bindings the request reached, its answer
	 * scanned for (the guard): names joined by ','; NULL: none. */
	const char *guard;
};

/* The decision as one JSON line with its newline (free() it), or NULL
 * when out of memory. Fields that are NULL come out as null. */
char *decision_format(const struct decision *d);

/* Replaces, in place, every crd_/crk_ token shape in s (len bytes) by
 * "crd_" or "crk_" and 38 '*': what a log must never hold. Returns how
 * many it replaced. */
size_t decision_redact(char *s, size_t len);

#endif
