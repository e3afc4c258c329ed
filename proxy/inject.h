/*
 * Credential injection (issue 18, docs/credentials.md), the proxy's pure
 * half: the header value a rule's "inject" format makes of a released
 * secret, and the reflection scanner that keeps the secret from coming
 * back to the job in an upstream's answer. The scanner reads the answer
 * unit by unit: at each byte it accepts any one unit that stands for a
 * byte (the byte itself in either case, %HH, =HH, two hex digits, JSON's
 * and JavaScript's escapes, an HTML entity, the byte as UTF-16 in either
 * order), mixed at will, and redacts every run of INJECT_WINDOW units
 * that reads as INJECT_WINDOW bytes in a row of a target (a target
 * shorter than that: the whole target): the value; its base64 forms
 * (standard and URL-safe, at each of the three offsets a value can have
 * inside a longer base64 text); and, when the value holds a base64 word
 * that decodes to printable text (Basic's "user:password"), the secret
 * side of that text and its base64 forms. Runs that overlap are one:
 * a slice of the value INJECT_WINDOW bytes long or more, the whole value
 * among them, is overwritten wherever it stands, so at most
 * INJECT_WINDOW - 1 bytes of it in a row come back at one place. A match
 * is overwritten in place with as many filler bytes, so the answer's
 * length (and its framing) is kept. A match may span reads: the scanner
 * holds back the bytes from the first position whose match it cannot
 * yet decide, so the answer comes out the same however it was cut. In a
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
/* A run of this many bytes in a row of a target is redacted wherever
 * it stands; a shorter target is matched whole. */
#define INJECT_WINDOW 8
/* The longest unit of the answer read for one byte of the value:
 * "&#x" with 8 digits and ";" (12) after a quoted-printable soft line
 * break "=\r\n" (3). */
#define INJECT_UNIT_MAX 15
/* The unit matcher's steps a byte fed, at most, over an answer (and
 * this many a byte of the longest match to start with): real answers
 * take a few; text built to be read many ways at once is refused. */
#define INJECT_STEPS_BYTE 64
/* The strings one scanner looks for, at most: the value and its six
 * base64 forms, and the same of each secret decoded from it. */
#define INJECT_TARGETS 24
/* The readings of one place followed at once, at most (past it the scan
 * is refused as too costly). */
#define INJECT_READINGS 128

/*
 * Writes format (validated: manifest_inject_format_ok) with its one
 * "{secret}" replaced by value[0..len) into out (cap bytes, with a NUL):
 * 0, -EINVAL when format has no "{secret}" or value is not printable
 * ASCII (it goes in a header), -EMSGSIZE when out is short. out is wiped
 * on failure.
 */
int inject_format(const char *format, const char *value, size_t len, char *out,
    size_t cap);

/* Where a chunked body's framing is, byte by byte (inject.c). */
struct inject_chunking {
	int state;
	uint64_t left; /* data bytes left in the chunk */
};

/* A key: INJECT_WINDOW bytes of a target in lower case, the first in
 * the top byte, zeros after width bytes. */
struct inject_key {
	uint64_t bytes;
	uint8_t width;
};

/* One way of reading the answer from a place: where it is, and the keys
 * [lo, hi) its bytes so far are the start of. */
struct inject_reading {
	size_t off;
	uint32_t lo, hi;
};

/* The keys of some targets, sorted, and what the scan's first look at a
 * place reads of them. */
struct inject_keys {
	struct inject_key *keys; /* nkeys, wiped at free */
	size_t nkeys;
	bool raw; /* base64 forms: read as bytes (and JSON's "\\/") only */
	uint32_t r0[257]; /* the keys whose first byte is c: [r0[c], r0[c+1]) */
	uint8_t lead[256]; /* the bytes that can start a reading of a key */
	uint8_t plain[256]; /* the bytes that start no unit but themselves */
	uint8_t inkey[256]; /* the bytes of the keys */
	uint8_t after[2][256]; /* the bytes after '\\' ([0]) and '&' ([1])
				* that can start a unit of a first byte */
	uint64_t *pairs; /* 65536 bits: a key's first two bytes; 65536
			  * more: its first three, hashed */
	bool pairs_ok, trios_ok; /* every key has two (three) bytes */
};

struct inject_scanner {
	/* The scanners that share value, ks, all and their tables (made
	 * once by inject_scanner_init, read only after it; a copy of
	 * inject_scanner_copy shares them): the last one frees them. */
	size_t *refs;
	char *value; /* len bytes, wiped at free */
	size_t len;
	size_t ndecoded; /* secrets decoded from a base64 word of it */
	/* The value and the decoded secrets, read unit by unit; their
	 * base64 forms, read as bytes. */
	struct inject_keys *ks; /* [2], then all: one block, shared */
	struct inject_keys *all; /* their tables' union (no keys): ks + 2 */
	/* 65536 bits: whether a place whose first two bytes are a, b (as
	 * they came, either case) may start a reading of a key of either
	 * set (all's first look, its last byte aside): the places it rules
	 * out are passed over two bytes' look at a time. */
	uint64_t *pass2;
	size_t maxspan; /* the most answer bytes one key's reading takes */
	char *hold; /* holdcap bytes, nhold held, as they came */
	uint8_t *hmark; /* for each held byte: redacted by the raw scan (1),
			 * by the chunked data's (2); in hold's block */
	size_t nhold, holdcap;
	size_t resume; /* hold[0..resume): already judged by the raw scan */
	size_t dresume; /* the same of the data scan, in data bytes */
	bool in_run; /* the last byte given out was redacted */
	char filler; /* a byte that is in no unit of a key */
	bool keep_lines; /* a line break is never overwritten: no target
			  * holds one */
	size_t found; /* runs redacted so far */
	size_t steps; /* units read by the matcher so far (its cost) */
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
 * Prepares dst for src's value without making its tables again: dst
 * shares them (they are read only), with its own state for an answer.
 * src must not have been fed (a scanner kept for copies only). 0, or
 * -ENOMEM (dst is then zeroed). Free each with inject_scanner_free: the
 * last one wipes what they shared.
 */
int inject_scanner_copy(struct inject_scanner *dst,
    const struct inject_scanner *src);

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
