/*
 * The format and the reflection scanner of inject.h. The patterns are
 * made once per released value; the scan is a plain search of each
 * pattern over the held bytes and the new ones (at most a few patterns
 * of at most 3 * INJECT_VALUE_MAX bytes), fast enough for the answers a
 * job reads and simple enough to be sure of.
 */
#include "inject.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char b64std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char hexd[] = "0123456789ABCDEF";

int
inject_format(const char *format, const char *value, size_t len, char *out,
    size_t cap)
{
	const char *hole = strstr(format, "{secret}");
	size_t pre, post;

	if (hole == NULL)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)value[i] < 0x20 ||
		    (unsigned char)value[i] > 0x7e)
			return -EINVAL;
	pre = (size_t)(hole - format);
	post = strlen(hole + 8);
	if (cap == 0 || pre + len + post >= cap) {
		if (cap > 0)
			explicit_bzero(out, cap);
		return -EMSGSIZE;
	}
	memcpy(out, format, pre);
	memcpy(out + pre, value, len);
	memcpy(out + pre + len, hole + 8, post);
	out[pre + len + post] = '\0';
	return 0;
}

/* Adds a pattern (taken) unless it is empty or one already held. */
static int
add_pattern(struct inject_scanner *s, char *text, size_t len, bool nocase)
{
	if (len == 0) {
		free(text);
		return 0;
	}
	for (size_t i = 0; i < s->npat; i++)
		if (s->pat[i].len == len &&
		    memcmp(s->pat[i].text, text, len) == 0) {
			explicit_bzero(text, len);
			free(text);
			return 0;
		}
	if (s->npat == INJECT_PATTERNS) {
		explicit_bzero(text, len);
		free(text);
		return -E2BIG;
	}
	s->pat[s->npat++] = (struct inject_pattern){ text, len, nocase };
	if (len > s->maxlen)
		s->maxlen = len;
	return 0;
}

static bool
unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* The percent form of v: every byte (all) or the reserved ones. */
static int
add_percent(struct inject_scanner *s, const char *v, size_t len, bool all)
{
	char *t = malloc(3 * len + 1);
	size_t n = 0;

	if (t == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if (!all && unreserved(c)) {
			t[n++] = (char)c;
			continue;
		}
		t[n++] = '%';
		t[n++] = hexd[c >> 4];
		t[n++] = hexd[c & 15];
	}
	return add_pattern(s, t, n, true);
}

/*
 * The base64 characters that depend on v's bits only, when v starts at
 * byte offset k (0..2) of a base64-encoded text: the characters whose
 * six bits lie wholly inside v.
 */
static int
add_base64(struct inject_scanner *s, const char *v, size_t len, size_t k,
    const char *alphabet)
{
	size_t bits = 8 * (k + len);
	size_t first = (8 * k + 5) / 6, last = bits / 6; /* [first, last) */
	char *t;
	size_t n = 0;

	if (last <= first)
		return 0;
	t = malloc(last - first + 1);
	if (t == NULL)
		return -ENOMEM;
	for (size_t j = first; j < last; j++) {
		unsigned idx = 0;
		for (size_t b = 6 * j; b < 6 * j + 6; b++) {
			size_t byte = b / 8;
			unsigned bit = 0;
			if (byte >= k)
				bit = ((unsigned char)v[byte - k] >>
					  (7 - b % 8)) &
				    1;
			idx = idx << 1 | bit;
		}
		t[n++] = alphabet[idx];
	}
	return add_pattern(s, t, n, false);
}

int
inject_scanner_init(struct inject_scanner *s, const char *value, size_t len)
{
	static const char fillers[] = "*#~!X";
	char *t;
	int r = 0;

	memset(s, 0, sizeof(*s));
	if (len == 0 || len > INJECT_VALUE_MAX)
		return -EINVAL;
	if ((t = malloc(len)) == NULL)
		return -ENOMEM;
	memcpy(t, value, len);
	r = add_pattern(s, t, len, false);
	if (r == 0 && (t = malloc(2 * len)) == NULL)
		r = -ENOMEM;
	if (r == 0) {
		for (size_t i = 0; i < len; i++) {
			t[2 * i] = hexd[(unsigned char)value[i] >> 4];
			t[2 * i + 1] = hexd[(unsigned char)value[i] & 15];
		}
		r = add_pattern(s, t, 2 * len, true);
	}
	if (r == 0)
		r = add_percent(s, value, len, true);
	if (r == 0)
		r = add_percent(s, value, len, false);
	for (size_t k = 0; r == 0 && k < 3; k++) {
		r = add_base64(s, value, len, k, b64std);
		if (r == 0)
			r = add_base64(s, value, len, k, b64url);
	}
	if (r == 0 && (s->hold = malloc(s->maxlen)) == NULL)
		r = -ENOMEM;
	s->holdcap = s->maxlen;
	if (r < 0) {
		inject_scanner_free(s);
		return r;
	}
	s->filler = '*';
	for (const char *f = fillers; *f != '\0'; f++) {
		bool used = false;
		for (size_t i = 0; i < s->npat && !used; i++)
			used =
			    memchr(s->pat[i].text, *f, s->pat[i].len) != NULL;
		if (!used) {
			s->filler = *f;
			break;
		}
	}
	return 0;
}

static bool
matches(const struct inject_pattern *p, const char *at)
{
	if (!p->nocase)
		return memcmp(at, p->text, p->len) == 0;
	for (size_t i = 0; i < p->len; i++)
		if (tolower((unsigned char)at[i]) !=
		    tolower((unsigned char)p->text[i]))
			return false;
	return true;
}

/* Overwrites every match in w[0..n): how many. */
static size_t
redact(struct inject_scanner *s, char *w, size_t n)
{
	size_t found = 0;

	for (size_t i = 0; i < s->npat; i++) {
		const struct inject_pattern *p = &s->pat[i];
		for (size_t at = 0; p->len <= n && at <= n - p->len; at++)
			if (matches(p, w + at)) {
				memset(w + at, s->filler, p->len);
				found++;
				at += p->len - 1;
			}
	}
	return found;
}

/* The framing of a chunked body, leniently (the proxy's own parser
 * checks it; this one only says which bytes are data). */
enum { CH_SIZE, CH_EXT, CH_DATA, CH_DATA_END, CH_TRAILER };

/* Advances ch past byte b: whether b is a data byte. */
static bool
chunk_step(struct inject_chunking *ch, unsigned char b)
{
	switch (ch->state) {
	case CH_SIZE:
		if (isxdigit(b)) {
			if (ch->left < (UINT64_MAX >> 4))
				ch->left = ch->left << 4 |
				    (uint64_t)(isdigit(b)
					    ? b - '0'
					    : tolower(b) - 'a' + 10);
		} else if (b == '\n')
			ch->state = ch->left > 0 ? CH_DATA : CH_TRAILER;
		else if (b != '\r')
			ch->state = CH_EXT;
		return false;
	case CH_EXT:
		if (b == '\n')
			ch->state = ch->left > 0 ? CH_DATA : CH_TRAILER;
		return false;
	case CH_DATA:
		if (--ch->left == 0)
			ch->state = CH_DATA_END;
		return true;
	case CH_DATA_END:
		if (b == '\n')
			ch->state = CH_SIZE;
		return false;
	default:
		return false;
	}
}

/*
 * Redacts the data bytes of w[0..n) (chunk framing from *ch on) as one
 * text: each match found there is overwritten in w. *ch ends at w[n];
 * when cut is not NULL, *ret_cut is the position of the data byte
 * maxlen - 1 from the last (n when fewer) and *cut the state there.
 */
static size_t
redact_chunked(struct inject_scanner *s, char *w, size_t n,
    struct inject_chunking *ch, size_t *ret_cut, struct inject_chunking *cut,
    int *ret_err)
{
	size_t *at = malloc((n + 1) * sizeof(*at)), nd = 0, found = 0, keep;
	char *d = malloc(n + 1);
	struct inject_chunking start = *ch;

	*ret_err = 0;
	if (at == NULL || d == NULL) {
		free(at);
		free(d);
		*ret_err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (chunk_step(ch, (unsigned char)w[i])) {
			at[nd] = i;
			d[nd++] = w[i];
		}
	found = redact(s, d, nd);
	for (size_t k = 0; k < nd; k++)
		w[at[k]] = d[k];
	if (ret_cut != NULL) {
		keep = s->maxlen - 1 < nd ? s->maxlen - 1 : nd;
		*ret_cut = keep > 0 ? at[nd - keep] : n;
		*cut = start;
		for (size_t i = 0; i < *ret_cut; i++)
			(void)chunk_step(cut, (unsigned char)w[i]);
	}
	explicit_bzero(d, nd);
	free(d);
	free(at);
	return found;
}

int
inject_scanner_feed(struct inject_scanner *s, const char *p, size_t n,
    struct buf *out, size_t *ret_found)
{
	size_t total = s->nhold + n, keep, found, cut;
	struct inject_chunking ch = s->chunk, at_cut = s->chunk;
	char *w;
	int r;

	if (ret_found != NULL)
		*ret_found = 0;
	if (n == 0)
		return 0;
	if ((w = malloc(total)) == NULL)
		return -ENOMEM;
	memcpy(w, s->hold, s->nhold);
	memcpy(w + s->nhold, p, n);
	found = redact(s, w, total);
	keep = s->maxlen - 1 < total ? s->maxlen - 1 : total;
	if (s->chunked) {
		found += redact_chunked(s, w, total, &ch, &cut, &at_cut, &r);
		if (r < 0)
			goto out;
		/* Hold from the first data byte that may start a match, but
		 * never more than INJECT_HOLD_MAX. */
		if (total - cut > keep)
			keep = total - cut;
		if (keep > INJECT_HOLD_MAX && INJECT_HOLD_MAX >= s->maxlen) {
			keep = INJECT_HOLD_MAX;
			at_cut = s->chunk;
			for (size_t i = 0; i < total - keep; i++)
				(void)chunk_step(&at_cut, (unsigned char)w[i]);
		} else if (total - cut < keep) {
			/* The raw hold reaches further back than the data's. */
			at_cut = s->chunk;
			for (size_t i = 0; i < total - keep; i++)
				(void)chunk_step(&at_cut, (unsigned char)w[i]);
		}
	}
	if (keep > s->holdcap) {
		char *h = malloc(keep);
		if (h == NULL) {
			r = -ENOMEM;
			goto out;
		}
		explicit_bzero(s->hold, s->holdcap);
		free(s->hold);
		s->hold = h;
		s->holdcap = keep;
	}
	r = buf_append(out, w, total - keep);
	if (r == 0) {
		memcpy(s->hold, w + total - keep, keep);
		s->nhold = keep;
		s->chunk = at_cut;
		s->found += found;
		if (ret_found != NULL)
			*ret_found = found;
	}
out:
	explicit_bzero(w, total);
	free(w);
	return r;
}

int
inject_scanner_flush(struct inject_scanner *s, struct buf *out)
{
	int r = 0;

	/* The held bytes were redacted as they came: no match fits in
	 * fewer than maxlen bytes unless it was seen already. */
	s->found += redact(s, s->hold, s->nhold);
	if (s->chunked) {
		struct inject_chunking ch = s->chunk;
		s->found +=
		    redact_chunked(s, s->hold, s->nhold, &ch, NULL, NULL, &r);
		if (r < 0)
			return r;
	}
	r = buf_append(out, s->hold, s->nhold);
	if (r == 0) {
		explicit_bzero(s->hold, s->nhold);
		s->nhold = 0;
	}
	return r;
}

void
inject_scanner_chunked(struct inject_scanner *s)
{
	s->chunked = true;
	s->chunk = (struct inject_chunking){ CH_SIZE, 0 };
}

void
inject_scanner_free(struct inject_scanner *s)
{
	for (size_t i = 0; i < s->npat; i++) {
		explicit_bzero(s->pat[i].text, s->pat[i].len);
		free(s->pat[i].text);
	}
	if (s->hold != NULL) {
		explicit_bzero(s->hold, s->holdcap);
		free(s->hold);
	}
	memset(s, 0, sizeof(*s));
}

/* --- the cache of released values ----------------------------------------- */

static void
cached_wipe(struct inject_cached *e)
{
	if (e->value != NULL) {
		explicit_bzero(e->value, e->len + 1);
		free(e->value);
	}
	memset(e, 0, sizeof(*e));
}

const struct inject_cached *
inject_cache_get(const struct inject_cache *c, const char *secret, int64_t now,
    int64_t ttl)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct inject_cached *e = &c->e[i];
		if (strcmp(e->secret, secret) != 0)
			continue;
		if (ttl <= 0 || now - e->fetched >= ttl || now < e->fetched ||
		    (e->expires != 0 && now >= e->expires))
			return NULL;
		return e;
	}
	return NULL;
}

int
inject_cache_put(struct inject_cache *c, const char *secret, int64_t version,
    const char *value, size_t len, int64_t now, int64_t expires)
{
	size_t sl = strlen(secret), i;
	char *copy;

	if (sl == 0 || sl >= sizeof(c->e[0].secret) || len == 0 ||
	    len > INJECT_VALUE_MAX)
		return -EINVAL;
	for (i = 0; i < c->n && strcmp(c->e[i].secret, secret) != 0; i++)
		;
	if (i == INJECT_CACHE_MAX)
		return -ENOMEM;
	if ((copy = malloc(len + 1)) == NULL)
		return -ENOMEM;
	memcpy(copy, value, len);
	copy[len] = '\0';
	if (i == c->n)
		c->n++;
	cached_wipe(&c->e[i]);
	memcpy(c->e[i].secret, secret, sl + 1);
	c->e[i].version = version;
	c->e[i].value = copy;
	c->e[i].len = len;
	c->e[i].fetched = now;
	c->e[i].expires = expires;
	return 0;
}

void
inject_cache_clear(struct inject_cache *c)
{
	for (size_t i = 0; i < c->n && i < INJECT_CACHE_MAX; i++)
		cached_wipe(&c->e[i]);
	c->n = 0;
}
