/*
 * The token set of tokens.h: a small array searched linearly (16 at
 * most), and the body scanner's tail of TOKEN_LEN - 1 bytes.
 */
#include "tokens.h"

#include <errno.h>
#include <string.h>

void
tokens_reset(struct token_set *s)
{
	explicit_bzero(s, sizeof(*s));
}

int
tokens_add(struct token_set *s, const char *shape)
{
	struct token_judged *j;

	for (size_t i = 0; i < s->n; i++)
		if (memcmp(s->t[i].tok, shape, TOKEN_LEN) == 0)
			return (int)i;
	if (s->n == TOKENS_MAX)
		return -1;
	j = &s->t[s->n];
	memcpy(j->tok, shape, TOKEN_LEN);
	j->tok[TOKEN_LEN] = '\0';
	j->done = token_parse(shape, TOKEN_LEN) < 0;
	j->why = NULL;
	/* To a host that may get no token, no shape of one goes either. */
	if (j->done)
		j->why = s->no_audience ? "no_audience" : "bad_checksum";
	return (int)s->n++;
}

int
tokens_collect(struct token_set *s, const char *p, size_t n)
{
	size_t off = 0;
	ssize_t at;

	while (off < n && (at = token_find(p + off, n - off)) >= 0) {
		if (tokens_add(s, p + off + (size_t)at) < 0)
			return -E2BIG;
		off += (size_t)at + TOKEN_PREFIX_LEN;
	}
	return 0;
}

const char *
tokens_refusal(const struct token_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].done && s->t[i].why != NULL)
			return s->t[i].why;
	return NULL;
}

void
tokens_judged(struct token_set *s, size_t i, const char *why)
{
	if (i >= s->n)
		return;
	s->t[i].done = true;
	s->t[i].why = why;
}

int
tokens_next(struct token_set *s)
{
	for (; s->judging < s->n; s->judging++)
		if (!s->t[s->judging].done)
			return (int)s->judging;
	return -1;
}

void
tokens_body_start(struct token_set *s)
{
	s->tail_len = 0;
}

/* The first token in p[0..n) that the request has not found good: its
 * offset, or -1; *ret_index its index (-1: past TOKENS_MAX). */
static ssize_t
first_new(struct token_set *s, const char *p, size_t n, int *ret_index)
{
	size_t off = 0;
	ssize_t at;

	while (off < n && (at = token_find(p + off, n - off)) >= 0) {
		int i = tokens_add(s, p + off + (size_t)at);
		if (i < 0 || !s->t[i].done || s->t[i].why != NULL) {
			*ret_index = i;
			return (ssize_t)off + at;
		}
		off += (size_t)at + TOKEN_PREFIX_LEN;
	}
	return -1;
}

bool
tokens_body_scan(struct token_set *s, const char *p, size_t n, int *ret_index)
{
	enum { TAIL = TOKEN_LEN - 1 };
	char edge[2 * TAIL];
	size_t m = n < TAIL ? n : TAIL;

	/* A token that starts in the tail and ends in p, then any in p. */
	memcpy(edge, s->tail, s->tail_len);
	memcpy(edge + s->tail_len, p, m);
	if (first_new(s, edge, s->tail_len + m, ret_index) >= 0 ||
	    first_new(s, p, n, ret_index) >= 0)
		return true;
	/* Keep the last bytes for a token that starts here and ends in the
	 * next read. */
	if (n >= TAIL) {
		memcpy(s->tail, p + n - TAIL, TAIL);
		s->tail_len = TAIL;
	} else {
		size_t keep = s->tail_len + n > TAIL ? TAIL - n : s->tail_len;
		memmove(s->tail, s->tail + s->tail_len - keep, keep);
		memcpy(s->tail + keep, p, n);
		s->tail_len = keep + n;
	}
	return false;
}
