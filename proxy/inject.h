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
 * that). A scanner may look for many values at once (inject_scanner_join,
 * a job's set: reflect.h): their keys in one table, each answer byte read
 * once, a match counted as the value's whose key it reads. No I/O; every
 * buffer capped.
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
 * the top byte, zeros after width bytes; owner: the value (of the
 * scanner's) whose target it is. */
struct inject_key {
	uint64_t bytes;
	uint16_t owner;
	uint8_t width;
};

/* One way of reading the answer from a place: where it is, and the keys
 * [lo, hi) its bytes so far are the start of. */
struct inject_reading {
	size_t off;
	uint32_t lo, hi;
};

/* The keys of some targets, sorted (equal ones: the lowest owner
 * first), and what the scan's first look at a place reads of them. */
struct inject_keys {
	struct inject_key *keys; /* nkeys, wiped at free */
	size_t nkeys;
	bool raw; /* base64 forms: read as bytes (and JSON's "\\/") only */
	uint32_t r0[257]; /* the keys whose first byte is c: [r0[c], r0[c+1]) */
	/* Many keys (a joined scanner's): those whose first two bytes are
	 * a, b, [r1[a << 8 | b], r1[(a << 8 | b) + 1]); else NULL. */
	uint32_t *r1;
	uint8_t lead[256]; /* the bytes that can start a reading of a key */
	uint8_t plain[256]; /* the bytes that start no unit but themselves */
	uint8_t inkey[256]; /* the bytes of the keys */
	uint8_t after[2][256]; /* the bytes after '\\' ([0]) and '&' ([1])
				* that can start a unit of a first byte */
	uint64_t *pairs; /* 65536 bits: a key's first two bytes; 65536
			  * more: its first three, hashed */
	bool pairs_ok, trios_ok; /* every key has two (three) bytes */
};

/* The most values one scanner looks for at once (a job's own and
 * borrowed ones, reflect.h). */
#define INJECT_VALUES_MAX 1024

/* One value a scanner looks for. */
struct inject_value {
	char *value; /* len bytes, wiped at free */
	size_t len;
	char *label; /* the caller's name for it (inject_scanner_join), or
		      * NULL */
	size_t ndecoded; /* secrets decoded from a base64 word of it */
	char filler; /* a byte that is in no unit of its keys */
	bool keep_lines; /* a line break is never overwritten: no target
			  * of it holds one */
};

/* What the scanners of one or more values share, read only once made:
 * the values, their keys (every value's in one sorted array a set, so
 * that each answer byte is looked at once for all of them) and tables;
 * the last scanner that holds it frees it. */
struct inject_table {
	size_t refs;
	struct inject_value *v; /* nv */
	size_t nv;
	/* The values and the decoded secrets, read unit by unit; their
	 * base64 forms, read as bytes; their tables' union (no keys). */
	struct inject_keys ks[2], all;
	/* 65536 bits: whether a place whose first two bytes are a, b (as
	 * they came, either case) may start a reading of a key of either
	 * set (all's first look, its last byte aside): the places it rules
	 * out are passed over two bytes' look at a time. */
	uint64_t pass2[65536 / 64];
};

struct inject_scanner {
	/* The tables (made by inject_scanner_init or _join, shared by
	 * inject_scanner_copy's copies), and views into them: value 0's
	 * bytes, decoded secrets and filler. */
	struct inject_table *t;
	const char *value;
	size_t len;
	size_t ndecoded;
	char filler;
	struct inject_keys *ks; /* t->ks */
	struct inject_keys *all; /* &t->all */
	const uint64_t *pass2; /* t->pass2 */
	size_t maxspan; /* the most answer bytes one key's reading takes */
	char *hold; /* holdcap bytes, nhold held, as they came */
	uint16_t *hmark; /* for each held byte: 0, or 1 + the lowest value
			  * a reading of whose keys covers it; in hold's
			  * block */
	size_t nhold, holdcap;
	size_t resume; /* hold[0..resume): already judged by the raw scan */
	size_t dresume; /* the same of the data scan, in data bytes */
	bool in_run; /* the last byte given out was redacted */
	uint16_t run_owner; /* whose run it was */
	size_t found; /* runs redacted so far, of every value */
	size_t *vfound; /* of each value (t->nv > 1; made at the first) */
	/* The caller's flags of the values (t->nv), or NULL: the runs of
	 * a flagged one are counted in flagged too. */
	const bool *flags;
	size_t flagged;
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
 * Prepares dst for src's values without making their tables again: dst
 * shares them (they are read only), with its own state for an answer.
 * src must not have been fed (a scanner kept for copies only). 0, or
 * -ENOMEM (dst is then zeroed). Free each with inject_scanner_free: the
 * last one wipes what they shared.
 */
int inject_scanner_copy(struct inject_scanner *dst,
    const struct inject_scanner *src);

/* One value of a scanner joined: value i of s (never fed), named
 * label (copied; may be NULL). */
struct inject_part {
	const struct inject_scanner *s;
	size_t i;
	const char *label;
};

/*
 * Makes dst a scanner (never fed: kept for copies) for the n values of
 * parts (1 to INJECT_VALUES_MAX) at once: its value k is parts[k]'s,
 * its keys taken from that scanner, not made again (they are merged:
 * the cost is the keys', not the values' remaking). One scan then looks
 * at each answer byte once for all the values; a byte that readings of
 * several values' keys cover is overwritten with the filler of the
 * lowest of them and counted in its runs (as a chain of one scanner a
 * value in that order would, where their matches do not overlap; where
 * they do, every covered byte is overwritten). 0, -EINVAL, -ENOMEM.
 */
int inject_scanner_join(struct inject_scanner *dst,
    const struct inject_part *parts, size_t n);

/* The values s looks for. */
size_t inject_scanner_values(const struct inject_scanner *s);

/* Value i (below inject_scanner_values) of s: its bytes (len in *ret_len)
 * and its label in *ret_label (NULL when none; ret_label may be NULL). */
const char *inject_scanner_value(const struct inject_scanner *s, size_t i,
    size_t *ret_len, const char **ret_label);

/* The runs of value i that s redacted so far. */
size_t inject_scanner_found(const struct inject_scanner *s, size_t i);

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

/* Wipes and forgets secret's entry when it is of version (burned):
 * whether there was one. */
bool inject_cache_forget(struct inject_cache *c, const char *secret,
    int64_t version);

/* Wipes and frees every value, and forgets every entry. A zeroed c is
 * fine. */
void inject_cache_clear(struct inject_cache *c);

#endif
