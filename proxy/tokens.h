/*
 * The cordon tokens of one request: every crd_ shape found in its head and
 * body, each distinct one once, with the broker's verdict once it came.
 * Bookkeeping only, no I/O: conn.c asks the broker about the next shape
 * not yet judged and records the answer here (verdict_token), so that
 * each token is introspected once per request and the first refusal is
 * the request's. Later features (an upstream credential swapped in for a
 * job's token) read the same set.
 */
#ifndef CORDON_PROXY_TOKENS_H
#define CORDON_PROXY_TOKENS_H

#include "token.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The most distinct tokens judged in one request: past it, refused
 * (too_many_tokens). Bounds the broker calls a request can cause. */
#define TOKENS_MAX 16

/* A token of the request, and what the broker said of it. */
struct token_judged {
	char tok[TOKEN_LEN + 1];
	bool done; /* judged */
	const char *why; /* NULL: good for this request; else the detail */
	char capability[72]; /* the broker's word, when good */
};

struct token_set {
	struct token_judged t[TOKENS_MAX];
	size_t n;
	size_t judging; /* the index being introspected */
	/* The request goes to a rule without an audience: a shape with a
	 * wrong checksum is refused "no_audience", not "bad_checksum". */
	bool no_audience;
	/* The last bytes of the body scanned (a token may span two reads). */
	char tail[TOKEN_LEN - 1];
	size_t tail_len;
};

/* Empties s (the tokens wiped) for a new request. */
void tokens_reset(struct token_set *s);

/*
 * Adds the token shape at shape (TOKEN_LEN bytes) to s: its index, or -1
 * when it is new and TOKENS_MAX are already held. A shape whose checksum
 * is wrong is no token the broker could know: it is judged at once,
 * without a call ("bad_checksum", or "no_audience" when s->no_audience).
 */
int tokens_add(struct token_set *s, const char *shape);

/* Adds every token shape in p[0..n) (glued to anything): 0, or -E2BIG
 * when there were more than TOKENS_MAX distinct ones. */
int tokens_collect(struct token_set *s, const char *p, size_t n);

/* The first refusal among the judged tokens of s, or NULL. */
const char *tokens_refusal(const struct token_set *s);

/* Records the verdict on token i (why NULL: good here). */
void tokens_judged(struct token_set *s, size_t i, const char *why);

/* The next token from s->judging on not yet judged, s->judging moved to
 * it: its index, or -1 when none is left. */
int tokens_next(struct token_set *s);

/* A body starts: nothing of it scanned yet. */
void tokens_body_start(struct token_set *s);

/*
 * Scans the next body bytes p[0..n) for a token this request has not
 * found good, with the tail of what went before (a token may span two
 * reads): true when there is one, with *ret_index its index (-1: past
 * TOKENS_MAX), and the tail kept as it was, so that the same bytes are
 * scanned again once it is judged; false when the bytes may go, the tail
 * moved past them.
 */
bool tokens_body_scan(struct token_set *s, const char *p, size_t n,
    int *ret_index);

#endif
