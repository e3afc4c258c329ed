/*
 * Every value released to a job, and the scan of every answer the job
 * reads for all of them (credentials.md, "What is scanned"): a service
 * behind an injecting rule may keep what it was sent (a request log) and
 * show it on another rule, or after a rotation; so once anything was
 * released to a job, each answer the proxy reads for it, whatever its
 * rule, goes through one reflection scanner (inject.h) for all of them
 * at once (inject_scanner_join: every answer byte looked at once,
 * whatever the number of values), each match overwritten and counted as
 * the value's it is; a value released while an answer is being read is
 * one more scanner after it, in a chain (the first's output the
 * second's input) for the rest of that answer. The values are kept for the
 * job's life (wiped when its channel closes), at most REFLECT_VALUES_MAX
 * of its own (released to it, to use or for a scan release) and
 * REFLECT_BORROWED_MAX borrowed (other jobs' issuer credentials the proxy
 * keeps for the guard's scan: counted apart, so that they never take the
 * job's own places); past either a release is refused rather than
 * scanned for less. Pure: no I/O; every buffer capped.
 */
#ifndef CORDON_PROXY_REFLECT_H
#define CORDON_PROXY_REFLECT_H

#include "buf.h"
#include "inject.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most values a job may have been released: its rules' secrets
 * (EGRESS_MAX_RULES), rotated, or an issuer's tokens renewed. */
#define REFLECT_VALUES_MAX 32
/* The most borrowed values a job may hold: every issuer credential the
 * proxy keeps for the scan (at least guard.h's GUARD_ISSUED_MAX). */
#define REFLECT_BORROWED_MAX 256

struct reflect_value {
	char secret[65];
	int64_t version;
	char *value; /* len bytes, wiped before it is freed */
	size_t len;
	int64_t expires; /* monotonic seconds it is dead after; 0: never */
	/* Released for the scan only (a guard's scan release, another
	 * job's issuer credential): never the job's to use, so a match of
	 * it ends the answer (reflect_scan_feed's -EPERM), not redacted. */
	bool scan_only;
	/* Another job's issuer credential (reflect_set_put_borrowed):
	 * scan-only, counted against REFLECT_BORROWED_MAX, not the job's
	 * REFLECT_VALUES_MAX. */
	bool borrowed;
	size_t reflected; /* answers of the job that reflected it */
	uint64_t stamp; /* which put of the set it was (the joined
			 * scanner's values are known by it) */
};

struct reflect_set {
	struct reflect_value *v; /* n of cap, grown as values come */
	size_t n, cap;
	/* Every value's scanner at once (inject_scanner_join), never fed:
	 * each answer's first stage is a copy of it. Made at the first scan
	 * after a put, from itself (the values it has) and a scanner made
	 * for each new value (joined stamps: tstamp, its values). */
	struct inject_scanner *joined;
	uint64_t *tstamp;
	uint64_t stamps; /* the last given */
};

/*
 * Keeps a copy of value[0..len), secret's of version, unless the same
 * bytes are kept already. expires (monotonic seconds, 0 for none) is
 * when the value is dead at its issuer: past it, at now, its place may
 * be taken by a new value when the set is full. 1 when added, 0 when
 * held already, -EINVAL for a name or value out of bounds, -ENOSPC when
 * full of values still alive, -ENOMEM.
 */
int reflect_set_put(struct reflect_set *s, const char *secret, int64_t version,
    const char *value, size_t len, int64_t now, int64_t expires);

/*
 * reflect_set_put of a value released to the job for the scan only
 * (scan_only): a value held already keeps what it was (one the job was
 * released to use stays so). reflect_set_put of a value held scan-only
 * makes it the job's (scan_only false).
 */
int reflect_set_put_scan(struct reflect_set *s, const char *secret,
    int64_t version, const char *value, size_t len, int64_t now,
    int64_t expires);

/*
 * reflect_set_put_scan of another job's issuer credential, borrowed for
 * the guard's scan: counted against REFLECT_BORROWED_MAX only (-ENOSPC
 * past it, of values still alive); a value held already keeps what it
 * was.
 */
int reflect_set_put_borrowed(struct reflect_set *s, const char *secret,
    int64_t version, const char *value, size_t len, int64_t now,
    int64_t expires);

/* One more answer reflected value[0..len): the answers that did so far,
 * this one counted (0 when s does not hold it). */
size_t reflect_set_reflected(struct reflect_set *s, const char *value,
    size_t len);

/* Wipes and frees every value (and the array). A zeroed s is fine. */
void reflect_set_clear(struct reflect_set *s);

/* One answer's scan for a set's values: its stages, in chain order (the
 * set's joined values, then one a value added midway), and its values,
 * the first stage's in their order, then one a stage after. */
struct reflect_scan {
	struct inject_scanner *s; /* nstages of scap */
	size_t *base; /* each stage's first value */
	size_t nstages, scap;
	char (*secret)[65]; /* the name of each value added midway */
	bool *trip; /* each one's match ends the answer (scan-only) */
	size_t *told; /* each one's matches already reported */
	size_t n, cap; /* values */
	size_t unread; /* matches found and not yet reported (news) */
	bool chunked;
};

/*
 * Prepares r for every value of set (none: a scan that changes
 * nothing), making set's joined scanner again first when a value was put
 * since. 0, -ENOMEM (r is then empty). Free with reflect_scan_free.
 */
int reflect_scan_init(struct reflect_scan *r, struct reflect_set *set);

/*
 * reflect_scan_init for the next answer of a connection, keeping what r's
 * last answer allocated (its arrays of stages and values) instead of a
 * malloc and a free of each an answer: r zeroed, or left by
 * reflect_scan_init, _reset or _end. 0, -ENOMEM (r is then empty). Free
 * with reflect_scan_free.
 */
int reflect_scan_reset(struct reflect_scan *r, struct reflect_set *set);

/*
 * The answer's end: every stage's held bytes wiped and freed (as
 * reflect_scan_free does), r scanning nothing (no stage, no value); its
 * arrays are kept for reflect_scan_reset, and hold no byte of a value.
 */
void reflect_scan_end(struct reflect_scan *r);

/*
 * Adds value[0..len) (secret's) at the end of the chain, for the rest of
 * an answer being read: bytes the chain holds now are scanned for it
 * too, as they leave the stages before. 0, -EINVAL, -ENOMEM.
 */
int reflect_scan_add(struct reflect_scan *r, const char *secret,
    const char *value, size_t len);

/* reflect_scan_add of a scan-only value: a match of it ends the answer
 * (reflect_scan_feed's -EPERM). */
int reflect_scan_add_trip(struct reflect_scan *r, const char *secret,
    const char *value, size_t len);

/* Whether value[0..len) is one the chain scans for. */
bool reflect_scan_has(const struct reflect_scan *r, const char *value,
    size_t len);

/* Value i (below r->n) of the scan: its bytes, len in *ret_len. */
const char *reflect_scan_value(const struct reflect_scan *r, size_t i,
    size_t *ret_len);

/* The stages an answer's bytes go through (1 for a set's values, one
 * more a value added midway; 0 for none). */
size_t reflect_scan_stages(const struct reflect_scan *r);

/* The most bytes one feed of n bytes (or a flush, n 0) may append. */
size_t reflect_scan_out_max(const struct reflect_scan *r, size_t n);

/*
 * inject_scanner_feed through the chain: appends to out what can go now,
 * every value's matches overwritten. 0, -E2BIG (a stage past its steps'
 * budget: the caller ends the answer), -EPERM (a scan-only value's stage
 * matched: the caller ends the answer there, nothing of this feed goes;
 * reflect_scan_news tells which), or -ENOMEM; out is left as it was
 * on failure. *ret_found (may be NULL) gets the matches this call found.
 */
int reflect_scan_feed(struct reflect_scan *r, const char *p, size_t n,
    struct buf *out, size_t *ret_found);

/* The answer ended: what each stage holds goes through the rest, to out.
 * 0 or -errno (-EPERM as reflect_scan_feed's, out as it was). */
int reflect_scan_flush(struct reflect_scan *r, struct buf *out);

/* inject_scanner_chunked for every stage (nothing held: after a flush),
 * and for any added later. */
void reflect_scan_chunked(struct reflect_scan *r);

/*
 * The matches of value i found since the last call for it, and its
 * secret's name in *ret_secret; i below r->n. r->unread is 0 once every
 * value's were taken.
 */
size_t reflect_scan_news(struct reflect_scan *r, size_t i,
    const char **ret_secret);

/* Whether value i (below r->n) is a scan-only one. */
bool reflect_scan_trips(const struct reflect_scan *r, size_t i);

/* Wipes and frees what r holds. A zeroed r is fine. */
void reflect_scan_free(struct reflect_scan *r);

#endif
