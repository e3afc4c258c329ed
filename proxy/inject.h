/*
 * Credential injection (issue 18, docs/credentials.md), the proxy's pure
 * half: the header value a rule's "inject" format makes of a released
 * secret, and the reflection scanner that keeps the secret from coming
 * back to the job in an upstream's answer. The scanner reads the value
 * unit by unit: at each byte of the value it accepts any one unit of the
 * answer that stands for that byte (the byte itself in either case, %HH,
 * =HH, two hex digits, JSON's and JavaScript's escapes, an HTML entity,
 * the byte as UTF-16 in either order), so each of those escapings, and
 * any mix of them in one occurrence, is one match; base64 (standard and
 * URL-safe, at each of the three offsets a value can have inside a
 * longer base64 text) is matched as whole patterns. A match is
 * overwritten in place with as many filler bytes, so the answer's length
 * (and its framing) is kept. A match may span reads: the scanner holds
 * back the bytes from the first position whose match it cannot yet
 * decide, so the answer comes out the same however it was cut. In a
 * chunked body a match may also span the framing between chunks: the
 * data is matched apart from it (at most INJECT_HOLD_MAX bytes held for
 * that). No I/O; every buffer capped.
 */
#ifndef CORDON_PROXY_INJECT_H
#define CORDON_PROXY_INJECT_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest secret value (the broker's SECRETS_VALUE_MAX). */
#define INJECT_VALUE_MAX 4096
/* The most bytes held back across reads: a match split by more chunk
 * framing than this (absurd framing) is no longer seen whole. */
#define INJECT_HOLD_MAX (64 * 1024)
/* The longest unit of the answer read for one byte of the value:
 * "&#x" with 8 digits and ";" (12) after a quoted-printable soft line
 * break "=\r\n" (3). INJECT_VALUE_MAX units fit in INJECT_HOLD_MAX. */
#define INJECT_UNIT_MAX 15
/* The unit matcher's steps a byte fed, at most, over an answer (and
 * this many a byte of the longest match to start with): real answers
 * take under one; near copies of a value that repeats itself, escaped,
 * take one a byte of the value at each place, and are refused. */
#define INJECT_STEPS_BYTE 64
/* The whole-value patterns (base64) of one value, at most. */
#define INJECT_PATTERNS 6

/*
 * Writes format (validated: manifest_inject_format_ok) with its one
 * "{secret}" replaced by value[0..len) into out (cap bytes, with a NUL):
 * 0, -EINVAL when format has no "{secret}" or value is not printable
 * ASCII (it goes in a header), -EMSGSIZE when out is short. out is wiped
 * on failure.
 */
int inject_format(const char *format, const char *value, size_t len, char *out,
    size_t cap);

struct inject_pattern {
	char *text;
	size_t len;
};

/* Where a chunked body's framing is, byte by byte (inject.c). */
struct inject_chunking {
	int state;
	uint64_t left; /* data bytes left in the chunk */
};

struct inject_scanner {
	char *value; /* len bytes, wiped at free */
	size_t len;
	struct inject_pattern pat[INJECT_PATTERNS]; /* base64 forms */
	size_t npat;
	uint8_t first[256]; /* the matchers a byte can start: bit 0 the
			     * units, bit 1 + i pattern i */
	uint8_t escape[256]; /* bytes that can start a unit but the raw */
	uint16_t *border; /* KMP's, of the value in lower case: len + 1 */
	size_t maxspan; /* the most answer bytes one match can take */
	uint64_t *ways[2]; /* the unit matcher's sets of offsets */
	char *hold; /* holdcap bytes, nhold held */
	size_t nhold, holdcap;
	size_t resume; /* hold[0..resume): already judged by the scan */
	char filler; /* a byte that is in no unit of the value */
	size_t found; /* matches redacted so far */
	size_t steps; /* units read by the unit matcher so far (its cost) */
	size_t allow; /* the steps allowed so far (INJECT_STEPS_BYTE) */
	/* A chunked body: also matched in its data alone, the framing
	 * skipped; the state is the one at hold[0]. */
	bool chunked;
	struct inject_chunking chunk;
};

/*
 * Prepares s for value[0..len) (1 to INJECT_VALUE_MAX bytes): 0, -EINVAL,
 * or -ENOMEM. Free with inject_scanner_free, which wipes what it held.
 */
int inject_scanner_init(struct inject_scanner *s, const char *value,
    size_t len);

/*
 * Scans the next n bytes of an answer: appends to out every byte that
 * can go now, each match of the value overwritten with filler bytes;
 * the bytes from the first one whose match is not yet decided stay held
 * (fewer than maxspan, or in a chunked body at most INJECT_HOLD_MAX).
 * What comes out is the same however the answer was cut into feeds. 0,
 * or buf_append's -errno, -ENOMEM, or -E2BIG when the scan would take
 * more than INJECT_STEPS_BYTE steps a byte (then nothing was appended
 * and the bytes are not held: the caller ends the answer). *ret_found
 * (may be NULL) gets the matches redacted in this call.
 */
int inject_scanner_feed(struct inject_scanner *s, const char *p, size_t n,
    struct buf *out, size_t *ret_found);

/* The answer ended: appends the held bytes (redacted) to out. 0 or
 * -errno. */
int inject_scanner_flush(struct inject_scanner *s, struct buf *out);

/*
 * The answer's body from now on is chunked (RFC 9112 7.1): matches are
 * looked for in the chunks' data as well, across the framing between
 * them ("...sk_li\r\n5\r\nve_..."); the framing bytes go as they came.
 * Call it with nothing held (after a flush).
 */
void inject_scanner_chunked(struct inject_scanner *s);

/* Wipes and frees what s holds. A zeroed s is fine. */
void inject_scanner_free(struct inject_scanner *s);

/*
 * A job's released values (credentials.md, "The cache"): the broker is
 * asked once per job, secret and version, and again only once an entry
 * is older than the proxy's inject_cache_seconds (the window in which a
 * rotation is not yet seen) or past its own expiry. Forgotten, wiped,
 * when the job's channel closes, for any reason (its revoke too).
 */
#define INJECT_CACHE_MAX 12 /* a job's rules (EGRESS_MAX_RULES) */

struct inject_cached {
	char secret[65];
	int64_t version;
	char *value; /* len bytes and a NUL, wiped before it is freed */
	size_t len;
	int64_t fetched, expires; /* monotonic seconds; expires 0: none */
};

struct inject_cache {
	struct inject_cached e[INJECT_CACHE_MAX];
	size_t n;
};

/*
 * The cached value of secret at now (monotonic seconds) when one was put
 * less than ttl seconds ago and has not expired: the entry (its value
 * stays the cache's), else NULL. ttl 0: never.
 */
const struct inject_cached *inject_cache_get(const struct inject_cache *c,
    const char *secret, int64_t now, int64_t ttl);

/*
 * Keeps a copy of value[0..len) as secret's, of version, put at now
 * (replacing the one before, wiped); expires (monotonic seconds, 0 for
 * none) ends it sooner. 0, -EINVAL for a name or value out of bounds, or
 * -ENOMEM.
 */
int inject_cache_put(struct inject_cache *c, const char *secret,
    int64_t version, const char *value, size_t len, int64_t now,
    int64_t expires);

/* Wipes and frees every value, and forgets every entry. A zeroed c is
 * fine. */
void inject_cache_clear(struct inject_cache *c);

#endif
