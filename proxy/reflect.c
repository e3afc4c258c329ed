/*
 * The released values of a job and the chain of scanners over an answer
 * (reflect.h). Between two stages the bytes wait in a buffer of this
 * file's, wiped before it is freed: a stage's output still holds the
 * values of the stages after it.
 */
#include "reflect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void
value_wipe(struct reflect_value *v)
{
	if (v->value != NULL) {
		explicit_bzero(v->value, v->len);
		free(v->value);
	}
	if (v->prep != NULL) {
		inject_scanner_free(v->prep);
		free(v->prep);
	}
	memset(v, 0, sizeof(*v));
}

/* Where a new value of the class borrowed goes in s: a free place, or
 * one dead at its issuer (at now) of that class when the class is full;
 * s->n when s must grow; -ENOSPC, -ENOMEM. */
static long
set_place(struct reflect_set *s, bool borrowed, int64_t now)
{
	size_t max = borrowed ? REFLECT_BORROWED_MAX : REFLECT_VALUES_MAX;
	size_t in_class = 0, dead = s->n;

	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].borrowed != borrowed)
			continue;
		in_class++;
		if (dead == s->n && s->v[i].expires != 0 &&
		    s->v[i].expires < now)
			dead = i;
	}
	/* Only a value dead at its issuer gives its place. */
	if (in_class >= max ||
	    s->n >= REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX)
		return dead < s->n ? (long)dead : -ENOSPC;
	if (s->n == s->cap) {
		size_t cap = s->cap == 0 ? 8 : 2 * s->cap;
		if (cap > REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX)
			cap = REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX;
		struct reflect_value *v = realloc(s->v, cap * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		memset(v + s->n, 0, (cap - s->n) * sizeof(*v));
		s->v = v;
		s->cap = cap;
	}
	return (long)s->n;
}

static int
set_put(struct reflect_set *s, const char *secret, int64_t version,
    const char *value, size_t len, int64_t now, int64_t expires, bool scan_only,
    bool borrowed)
{
	size_t sl = strlen(secret), i;
	char *copy;

	if (sl == 0 || sl >= sizeof(s->v[0].secret) || len == 0 ||
	    len > INJECT_VALUE_MAX)
		return -EINVAL;
	for (i = 0; i < s->n; i++)
		if (s->v[i].len == len &&
		    memcmp(s->v[i].value, value, len) == 0) {
			if (!scan_only)
				s->v[i].scan_only = s->v[i].borrowed = false;
			return 0;
		}
	long at = set_place(s, borrowed, now);
	if (at < 0)
		return (int)at;
	i = (size_t)at;
	struct inject_scanner *prep = malloc(sizeof(*prep));
	if (prep == NULL)
		return -ENOMEM;
	int rc = inject_scanner_init(prep, value, len);
	if (rc < 0) {
		free(prep);
		return rc;
	}
	if ((copy = malloc(len)) == NULL) {
		inject_scanner_free(prep);
		free(prep);
		return -ENOMEM;
	}
	memcpy(copy, value, len);
	if (i == s->n)
		s->n++;
	value_wipe(&s->v[i]);
	s->v[i].prep = prep;
	memcpy(s->v[i].secret, secret, sl + 1);
	s->v[i].version = version;
	s->v[i].value = copy;
	s->v[i].len = len;
	s->v[i].expires = expires;
	s->v[i].scan_only = scan_only;
	s->v[i].borrowed = borrowed;
	return 1;
}

int
reflect_set_put(struct reflect_set *s, const char *secret, int64_t version,
    const char *value, size_t len, int64_t now, int64_t expires)
{
	return set_put(s, secret, version, value, len, now, expires, false,
	    false);
}

int
reflect_set_put_scan(struct reflect_set *s, const char *secret, int64_t version,
    const char *value, size_t len, int64_t now, int64_t expires)
{
	return set_put(s, secret, version, value, len, now, expires, true,
	    false);
}

int
reflect_set_put_borrowed(struct reflect_set *s, const char *secret,
    int64_t version, const char *value, size_t len, int64_t now,
    int64_t expires)
{
	return set_put(s, secret, version, value, len, now, expires, true,
	    true);
}

size_t
reflect_set_reflected(struct reflect_set *s, const char *value, size_t len)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].len == len &&
		    memcmp(s->v[i].value, value, len) == 0)
			return ++s->v[i].reflected;
	return 0;
}

void
reflect_set_clear(struct reflect_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		value_wipe(&s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* reflect_scan_add, with prep's copy when it is not NULL (value's
 * scanner, never fed). */
static int
stage_add(struct reflect_scan *r, const char *secret,
    const struct inject_scanner *prep, const char *value, size_t len, bool trip)
{
	size_t sl = strlen(secret);

	if (sl >= sizeof(r->secret[0]) || len == 0 || len > INJECT_VALUE_MAX)
		return -EINVAL;
	if (r->n == r->cap) {
		/* The stages, their names and counts in one block (one
		 * allocation an answer): scanners first, for alignment. */
		size_t cap = r->cap == 0 ? 4 : 2 * r->cap;
		char *b = malloc(cap *
		    (sizeof(*r->s) + sizeof(*r->told) + sizeof(*r->secret) +
			sizeof(*r->trip)));
		if (b == NULL)
			return -ENOMEM;
		struct inject_scanner *s = (struct inject_scanner *)(void *)b;
		size_t *told = (size_t *)(void *)(s + cap);
		char(*names)[65] = (char(*)[65])(void *)(told + cap);
		bool *trip_of = (bool *)(void *)(names + cap);
		if (r->n > 0) {
			memcpy(s, r->s, r->n * sizeof(*s));
			memcpy(told, r->told, r->n * sizeof(*told));
			memcpy(names, r->secret, r->n * sizeof(*names));
			memcpy(trip_of, r->trip, r->n * sizeof(*trip_of));
		}
		free(r->s);
		r->s = s;
		r->told = told;
		r->secret = names;
		r->trip = trip_of;
		r->cap = cap;
	}
	int rc = prep != NULL ? inject_scanner_copy(&r->s[r->n], prep)
			      : inject_scanner_init(&r->s[r->n], value, len);
	if (rc < 0)
		return rc;
	memcpy(r->secret[r->n], secret, sl + 1);
	r->told[r->n] = 0;
	r->trip[r->n] = trip;
	/* An answer chunked from its start: a stage added in its middle
	 * does not know where the framing is, and matches the bytes as
	 * they come (a value split by the framing is then missed). */
	r->n++;
	return 0;
}

int
reflect_scan_add(struct reflect_scan *r, const char *secret, const char *value,
    size_t len)
{
	return stage_add(r, secret, NULL, value, len, false);
}

int
reflect_scan_add_trip(struct reflect_scan *r, const char *secret,
    const char *value, size_t len)
{
	return stage_add(r, secret, NULL, value, len, true);
}

int
reflect_scan_init(struct reflect_scan *r, const struct reflect_set *set)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < set->n; i++) {
		int rc = stage_add(r, set->v[i].secret, set->v[i].prep,
		    set->v[i].value, set->v[i].len, set->v[i].scan_only);
		if (rc < 0) {
			reflect_scan_free(r);
			return rc;
		}
	}
	return 0;
}

bool
reflect_scan_has(const struct reflect_scan *r, const char *value, size_t len)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->s[i].len == len &&
		    memcmp(r->s[i].value, value, len) == 0)
			return true;
	return false;
}

size_t
reflect_scan_out_max(const struct reflect_scan *r, size_t n)
{
	return n + (r->n + 1) * INJECT_HOLD_MAX;
}

static void
tmp_free(struct buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->len);
	buf_free(b);
}

/*
 * Feeds p[0..n) to stages from..r->n, each one's output the next one's
 * input, the last one's appended to out; with flush, each stage is
 * flushed after its feed (the answer ended). 0 or -errno, out unchanged.
 */
static int
chain(struct reflect_scan *r, const char *p, size_t n, bool flush,
    struct buf *out, size_t *ret_found)
{
	size_t max = reflect_scan_out_max(r, n), found = 0;
	struct buf tmp[2] = { BUF_INIT(max), BUF_INIT(max) };
	size_t outlen = out->len;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		struct buf *dst = i + 1 == r->n ? out : &tmp[i % 2];
		size_t f = 0;
		if (dst != out)
			buf_reset(dst);
		if (n > 0)
			rc = inject_scanner_feed(&r->s[i], p, n, dst, &f);
		if (rc == 0 && flush) {
			size_t before = r->s[i].found;
			rc = inject_scanner_flush(&r->s[i], dst);
			f += r->s[i].found - before;
		}
		found += f;
		/* A scan-only value's match: nothing of this feed goes. */
		if (rc == 0 && f > 0 && r->trip[i])
			rc = -EPERM;
		p = dst->data;
		n = dst == out ? 0 : dst->len;
	}
	if (r->n == 0 && n > 0)
		rc = buf_append(out, p, n);
	tmp_free(&tmp[0]);
	tmp_free(&tmp[1]);
	if (rc < 0 && out->len > outlen) {
		explicit_bzero(out->data + outlen, out->len - outlen);
		out->len = outlen;
		out->data[outlen] = '\0';
	}
	if (ret_found != NULL)
		*ret_found = rc == 0 ? found : 0;
	return rc;
}

int
reflect_scan_feed(struct reflect_scan *r, const char *p, size_t n,
    struct buf *out, size_t *ret_found)
{
	return chain(r, p, n, false, out, ret_found);
}

int
reflect_scan_flush(struct reflect_scan *r, struct buf *out)
{
	return chain(r, NULL, 0, true, out, NULL);
}

void
reflect_scan_chunked(struct reflect_scan *r)
{
	for (size_t i = 0; i < r->n; i++)
		inject_scanner_chunked(&r->s[i]);
	r->chunked = true;
}

size_t
reflect_scan_news(struct reflect_scan *r, size_t i, const char **ret_secret)
{
	size_t n = r->s[i].found - r->told[i];

	r->told[i] = r->s[i].found;
	*ret_secret = r->secret[i];
	return n;
}

bool
reflect_scan_trips(const struct reflect_scan *r, size_t i)
{
	return r->trip[i];
}

void
reflect_scan_free(struct reflect_scan *r)
{
	for (size_t i = 0; i < r->n; i++)
		inject_scanner_free(&r->s[i]);
	free(r->s); /* with the names and counts (stage_add) */
	memset(r, 0, sizeof(*r));
}
