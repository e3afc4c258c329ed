/*
 * The released values of a job and the scan of an answer for all of them
 * (reflect.h): one scanner joined from every value of the set, made again
 * after a put (from the one before and a scanner for each new value, so
 * a value more costs a merge of keys, not the values' remaking), copied
 * for each answer; a value added midway is a stage after it. Between two
 * stages the bytes wait in a buffer of this file's, wiped before it is
 * freed: a stage's output still holds the values of the stages after it.
 */
#include "reflect.h"
#include "keyshape.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void
value_wipe(struct reflect_value *v)
{
	if (v->value != NULL) {
		explicit_bzero(v->value, v->len);
		free(v->value);
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

/* Whether b[0..blen) is a's tail but for at most KEYSHAPE_CONTEXT
 * bytes: a value's cut for the scan only, a[0..alen) its own. */
static bool
cut_of(const char *a, size_t alen, const char *b, size_t blen)
{
	return blen < alen && alen - blen <= KEYSHAPE_CONTEXT &&
	    memcmp(a + alen - blen, b, blen) == 0;
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
	/* One value's two cuts (conn.c): the job's own from up to 7 bytes
	 * before its secret part, a scan-only one from its secret part
	 * (a trip needs 8 secret bytes). Held as one, the job's own: else
	 * the job's echo of its own key would trip it. */
	for (i = 0; i < s->n; i++) {
		struct reflect_value *h = &s->v[i];
		if (strcmp(h->secret, secret) != 0)
			continue;
		if (scan_only && !h->scan_only &&
		    cut_of(h->value, h->len, value, len))
			return 0;
		if (scan_only || !h->scan_only ||
		    !cut_of(value, len, h->value, h->len))
			continue;
		if ((copy = malloc(len)) == NULL)
			return -ENOMEM;
		memcpy(copy, value, len);
		explicit_bzero(h->value, h->len);
		free(h->value);
		h->value = copy;
		h->len = len;
		h->version = version;
		h->expires = expires;
		h->scan_only = h->borrowed = false;
		h->stamp = ++s->stamps; /* the joined scanner is behind */
		return 1;
	}
	long at = set_place(s, borrowed, now);
	if (at < 0)
		return (int)at;
	i = (size_t)at;
	if ((copy = malloc(len)) == NULL)
		return -ENOMEM;
	memcpy(copy, value, len);
	if (i == s->n)
		s->n++;
	value_wipe(&s->v[i]);
	s->v[i].stamp = ++s->stamps; /* the joined scanner is behind */
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
	if (s->joined != NULL) {
		inject_scanner_free(s->joined); /* answers may hold copies */
		free(s->joined);
		s->joined = NULL;
	}
	free(s->tstamp);
	s->tstamp = NULL;
}

_Static_assert(REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX <= INJECT_VALUES_MAX,
    "one scanner joins every value of a set");

/* Whether s->joined is every value of s, in s's order. */
static bool
set_joined(const struct reflect_set *s)
{
	if (s->joined == NULL || inject_scanner_values(s->joined) != s->n)
		return false;
	for (size_t i = 0; i < s->n; i++)
		if (s->tstamp[i] != s->v[i].stamp)
			return false;
	return true;
}

/* s->joined made again for s's values: the ones it has taken from it, a
 * scanner made for each of the others. 0 or -errno (s as it was). */
static int
set_join(struct reflect_set *s)
{
	struct inject_part *parts = calloc(s->n, sizeof(*parts));
	struct inject_scanner *ones = calloc(s->n, sizeof(*ones));
	struct inject_scanner *joined = malloc(sizeof(*joined));
	uint64_t *stamps = malloc(s->n * sizeof(*stamps));
	size_t had = s->joined != NULL ? inject_scanner_values(s->joined) : 0;
	size_t nones = 0;
	int rc = -ENOMEM;

	if (parts == NULL || ones == NULL || joined == NULL || stamps == NULL)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		size_t j = i < had && s->tstamp[i] == s->v[i].stamp ? i : had;
		for (size_t k = 0; j == had && k < had; k++)
			if (s->tstamp[k] == s->v[i].stamp)
				j = k;
		stamps[i] = s->v[i].stamp;
		if (j < had) {
			parts[i] = (struct inject_part){ s->joined, j,
				s->v[i].secret };
			continue;
		}
		if ((rc = inject_scanner_init(&ones[nones], s->v[i].value,
			 s->v[i].len)) < 0)
			goto out;
		parts[i] =
		    (struct inject_part){ &ones[nones++], 0, s->v[i].secret };
	}
	if ((rc = inject_scanner_join(joined, parts, s->n)) < 0)
		goto out;
	if (s->joined != NULL) {
		inject_scanner_free(s->joined);
		free(s->joined);
	}
	free(s->tstamp);
	s->joined = joined;
	s->tstamp = stamps;
	joined = NULL;
	stamps = NULL;
out:
	for (size_t k = 0; k < nones; k++)
		inject_scanner_free(&ones[k]);
	free(ones);
	free(parts);
	free(joined);
	free(stamps);
	return rc;
}

/* Room for one more stage and one more value: 0 or -ENOMEM. */
static int
scan_room(struct reflect_scan *r, size_t values)
{
	if (r->nstages == r->scap) {
		size_t cap = r->scap == 0 ? 4 : 2 * r->scap;
		struct inject_scanner *st = realloc(r->s, cap * sizeof(*r->s));
		if (st == NULL)
			return -ENOMEM;
		r->s = st;
		size_t *base = realloc(r->base, cap * sizeof(*base));
		if (base == NULL)
			return -ENOMEM;
		r->base = base;
		char(*names)[65] = realloc(r->secret, cap * sizeof(*names));
		if (names == NULL)
			return -ENOMEM;
		r->secret = names;
		r->scap = cap;
	}
	if (r->n + values > r->cap) {
		size_t cap = r->cap == 0 ? 4 : r->cap;
		while (cap < r->n + values)
			cap *= 2;
		bool *trip = realloc(r->trip, cap * sizeof(*trip));
		if (trip == NULL)
			return -ENOMEM;
		r->trip = trip;
		size_t *told = realloc(r->told, cap * sizeof(*told));
		if (told == NULL)
			return -ENOMEM;
		r->told = told;
		r->cap = cap;
		/* The stages read their values' flags where they are. */
		for (size_t k = 0; k < r->nstages; k++)
			r->s[k].flags = r->trip + r->base[k];
	}
	return 0;
}

/* A stage of src's copy (src made for values [r->n, r->n + values)):
 * 0 or -ENOMEM. */
static int
stage_add(struct reflect_scan *r, const struct inject_scanner *src,
    size_t values)
{
	int rc = scan_room(r, values);

	if (rc == 0)
		rc = inject_scanner_copy(&r->s[r->nstages], src);
	if (rc < 0)
		return rc;
	r->base[r->nstages] = r->n;
	r->secret[r->nstages][0] = '\0';
	memset(r->told + r->n, 0, values * sizeof(*r->told));
	memset(r->trip + r->n, 0, values * sizeof(*r->trip));
	r->s[r->nstages].flags = r->trip + r->n;
	r->nstages++;
	r->n += values;
	return 0;
}

/* reflect_scan_add and _add_trip. */
static int
value_add(struct reflect_scan *r, const char *secret, const char *value,
    size_t len, bool trip)
{
	struct inject_scanner one;
	size_t sl = strlen(secret);

	if (sl >= sizeof(r->secret[0]) || len == 0 || len > INJECT_VALUE_MAX)
		return -EINVAL;
	int rc = inject_scanner_init(&one, value, len);
	if (rc == 0)
		rc = stage_add(r, &one, 1);
	inject_scanner_free(&one);
	if (rc < 0)
		return rc;
	memcpy(r->secret[r->nstages - 1], secret, sl + 1);
	r->trip[r->n - 1] = trip;
	/* An answer chunked from its start: a stage added in its middle
	 * does not know where the framing is, and matches the bytes as
	 * they come (a value split by the framing is then missed). */
	return 0;
}

int
reflect_scan_add(struct reflect_scan *r, const char *secret, const char *value,
    size_t len)
{
	return value_add(r, secret, value, len, false);
}

int
reflect_scan_add_trip(struct reflect_scan *r, const char *secret,
    const char *value, size_t len)
{
	return value_add(r, secret, value, len, true);
}

void
reflect_scan_end(struct reflect_scan *r)
{
	for (size_t i = 0; i < r->nstages; i++)
		inject_scanner_free(&r->s[i]); /* wipes its held bytes */
	r->nstages = r->n = r->unread = 0;
	r->chunked = false;
}

int
reflect_scan_reset(struct reflect_scan *r, struct reflect_set *set)
{
	int rc = 0;

	reflect_scan_end(r);
	if (set->n == 0)
		return 0;
	if (!set_joined(set))
		rc = set_join(set);
	if (rc == 0)
		rc = stage_add(r, set->joined, set->n);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < set->n; i++)
		r->trip[i] = set->v[i].scan_only;
	return 0;
}

int
reflect_scan_init(struct reflect_scan *r, struct reflect_set *set)
{
	memset(r, 0, sizeof(*r));
	int rc = reflect_scan_reset(r, set);
	if (rc < 0)
		reflect_scan_free(r);
	return rc;
}

/* The stage value i is in (below r->n), and its place there. */
static size_t
stage_of(const struct reflect_scan *r, size_t i, size_t *ret_at)
{
	size_t lo = 0, hi = r->nstages;

	while (hi - lo > 1) {
		size_t m = lo + (hi - lo) / 2;
		if (r->base[m] <= i)
			lo = m;
		else
			hi = m;
	}
	*ret_at = i - r->base[lo];
	return lo;
}

const char *
reflect_scan_value(const struct reflect_scan *r, size_t i, size_t *ret_len)
{
	size_t at, k = stage_of(r, i, &at);

	return inject_scanner_value(&r->s[k], at, ret_len, NULL);
}

bool
reflect_scan_has(const struct reflect_scan *r, const char *value, size_t len)
{
	for (size_t i = 0; i < r->n; i++) {
		size_t l;
		const char *v = reflect_scan_value(r, i, &l);
		if (l == len && memcmp(v, value, len) == 0)
			return true;
	}
	return false;
}

size_t
reflect_scan_stages(const struct reflect_scan *r)
{
	return r->nstages;
}

size_t
reflect_scan_out_max(const struct reflect_scan *r, size_t n)
{
	return n + (r->nstages + 1) * INJECT_HOLD_MAX;
}

static void
tmp_free(struct buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->len);
	buf_free(b);
}

/*
 * Feeds p[0..n) to the stages, each one's output the next one's input,
 * the last one's appended to out; with flush, each stage is flushed
 * after its feed (the answer ended). 0 or -errno, out unchanged.
 */
static int
chain(struct reflect_scan *r, const char *p, size_t n, bool flush,
    struct buf *out, size_t *ret_found)
{
	size_t max = reflect_scan_out_max(r, n), found = 0;
	struct buf tmp[2] = { BUF_INIT(max), BUF_INIT(max) };
	size_t outlen = out->len;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < r->nstages; i++) {
		struct inject_scanner *s = &r->s[i];
		struct buf *dst = i + 1 == r->nstages ? out : &tmp[i % 2];
		size_t before = s->found, flagged = s->flagged;
		if (dst != out)
			buf_reset(dst);
		if (n > 0)
			rc = inject_scanner_feed(s, p, n, dst, NULL);
		if (rc == 0 && flush)
			rc = inject_scanner_flush(s, dst);
		found += s->found - before;
		r->unread += s->found - before;
		/* A scan-only value's match: nothing of this feed goes. */
		if (rc == 0 && s->flagged > flagged)
			rc = -EPERM;
		p = dst->data;
		n = dst == out ? 0 : dst->len;
	}
	if (r->nstages == 0 && n > 0)
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
	for (size_t i = 0; i < r->nstages; i++)
		inject_scanner_chunked(&r->s[i]);
	r->chunked = true;
}

size_t
reflect_scan_news(struct reflect_scan *r, size_t i, const char **ret_secret)
{
	size_t at, k = stage_of(r, i, &at), len;
	size_t found = inject_scanner_found(&r->s[k], at),
	       n = found - r->told[i];
	const char *label;

	inject_scanner_value(&r->s[k], at, &len, &label);
	r->told[i] = found;
	r->unread -= n < r->unread ? n : r->unread;
	*ret_secret = label != NULL ? label : r->secret[k];
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
	for (size_t i = 0; i < r->nstages; i++)
		inject_scanner_free(&r->s[i]);
	free(r->s);
	free(r->base);
	free(r->secret);
	free(r->trip);
	free(r->told);
	memset(r, 0, sizeof(*r));
}
