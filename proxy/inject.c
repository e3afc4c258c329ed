/*
 * The format and the reflection scanner of inject.h. The scan goes left
 * to right over the held bytes and the new ones: a table of the bytes
 * that can start a match skips the rest at once; where one can, the
 * value is read unit by unit (every way of reading the text followed at
 * once, as a set of offsets) and the base64 patterns are compared; a
 * match takes the furthest end any of them reaches. A place whose match
 * needs bytes not yet come stops the scan there, so the bytes from it on
 * are held and what is decided never depends on how the answer was cut.
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

/* --- the reflection scanner ----------------------------------------------- */

/* The outcome of reading the answer at one place: no, yes, not yet
 * (the bytes end inside what is being read and more may come), or past
 * the budget of steps (INJECT_STEPS_BYTE). */
enum { READ_NO = 0, READ_YES = 1, READ_MORE = -1, READ_COSTLY = -2 };

/* The most digits of an HTML numeric entity, leading zeros included. */
#define ENTITY_DIGITS_MAX 8
/* The most ends one unit can have at one place (inject.c's unit_ends). */
#define UNIT_ENDS 8

/* The answer as the matchers see it: t[0..n), and whether it ends at n
 * (final) or more bytes may follow. */
struct text {
	const unsigned char *t;
	size_t n;
	bool final;
};

/* What reading past the end of x means: no when the answer ended there,
 * not yet otherwise. */
static int
past_end(const struct text *x)
{
	return x->final ? READ_NO : READ_MORE;
}

/* ASCII's lower case; no other byte is folded. */
static unsigned char
fold(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = fold(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* k hex digits (either case) at x->t[o]: their value in *v. */
static int
hex_digits(const struct text *x, size_t o, size_t k, unsigned *v)
{
	*v = 0;
	for (size_t i = 0; i < k; i++) {
		int d;
		if (o + i >= x->n)
			return past_end(x);
		if ((d = hexval(x->t[o + i])) < 0)
			return READ_NO;
		*v = *v << 4 | (unsigned)d;
	}
	return READ_YES;
}

/* The named HTML entities of the characters a credential can hold (and
 * a few more): matched in either case, with their ';'. */
static const struct {
	const char *name;
	unsigned char c;
} entities[] = {
	{ "amp", '&' },
	{ "lt", '<' },
	{ "gt", '>' },
	{ "quot", '"' },
	{ "apos", '\'' },
	{ "sol", '/' },
	{ "bsol", '\\' },
	{ "equals", '=' },
	{ "plus", '+' },
	{ "num", '#' },
	{ "percnt", '%' },
	{ "colon", ':' },
	{ "semi", ';' },
	{ "period", '.' },
	{ "comma", ',' },
	{ "lowbar", '_' },
	{ "underbar", '_' },
	{ "excl", '!' },
	{ "quest", '?' },
	{ "commat", '@' },
	{ "dollar", '$' },
	{ "ast", '*' },
	{ "midast", '*' },
	{ "lpar", '(' },
	{ "rpar", ')' },
	{ "lsqb", '[' },
	{ "lbrack", '[' },
	{ "rsqb", ']' },
	{ "rbrack", ']' },
	{ "lcub", '{' },
	{ "lbrace", '{' },
	{ "rcub", '}' },
	{ "rbrace", '}' },
	{ "verbar", '|' },
	{ "vert", '|' },
	{ "hat", '^' },
	{ "grave", '`' },
	{ "tab", '\t' },
	{ "newline", '\n' },
};

/* An HTML entity for b at x->t[o] ('&'): its end into e[*ne]. */
static int
entity(const struct text *x, size_t o, unsigned char b, size_t *e, size_t *ne)
{
	const unsigned char *t = x->t;
	size_t p = o + 1;

	if (p >= x->n)
		return past_end(x);
	if (t[p] == '#') {
		unsigned base = 10, v = 0, digits = 0;
		if (++p >= x->n)
			return past_end(x);
		if (t[p] == 'x' || t[p] == 'X') {
			base = 16;
			p++;
		}
		for (;; p++) {
			int d;
			if (p >= x->n)
				return past_end(x);
			d = base == 16
			    ? hexval(t[p])
			    : (t[p] >= '0' && t[p] <= '9' ? t[p] - '0' : -1);
			if (d < 0)
				break;
			v = v * base + (unsigned)d;
			/* The value only grows; past the cap, no entity. */
			if (++digits > ENTITY_DIGITS_MAX || v > b)
				return READ_NO;
		}
		if (digits > 0 && t[p] == ';' && v == b)
			e[(*ne)++] = p + 1;
		return READ_YES;
	}
	for (size_t k = 0; k < sizeof(entities) / sizeof(entities[0]); k++) {
		const char *name = entities[k].name;
		size_t l, j;
		if (entities[k].c != b)
			continue;
		l = strlen(name);
		for (j = 0; j <= l; j++) {
			if (p + j >= x->n)
				return past_end(x);
			if (j == l ? t[p + j] != ';'
				   : fold(t[p + j]) != (unsigned char)name[j])
				break;
		}
		if (j > l)
			e[(*ne)++] = p + l + 1;
	}
	return READ_YES;
}

/*
 * The ends of every unit of the answer that starts at x->t[o] and
 * stands for byte b: into e (UNIT_ENDS), their count; READ_MORE when the
 * bytes end inside one. The units: b (a letter in either case); b then
 * NUL, NUL then b, NUL b NUL (UTF-16, LE and BE); two hex digits; %HH and =HH;
 * \uHHHH and \xHH; a backslash before b when b is punctuation, JSON's
 * \b \f \n \r \t for their bytes; &#NN; and &#xHH; (8 digits at most);
 * the named entities above. Every hex digit in either case.
 */
static int
unit_ends(const struct text *x, size_t o, unsigned char b, size_t *e)
{
	static const char shorts[] = "b\bf\fn\nr\rt\t";
	const unsigned char *t = x->t;
	size_t ne = 0;
	unsigned v;
	int r;

	if (o >= x->n)
		return past_end(x) == READ_MORE ? READ_MORE : 0;
	if (fold(t[o]) == fold(b)) {
		e[ne++] = o + 1;
		if (o + 1 >= x->n) {
			if (!x->final)
				return READ_MORE;
		} else if (t[o + 1] == '\0')
			e[ne++] = o + 2;
	}
	if (hexval(t[o]) == b >> 4) {
		if (o + 1 >= x->n) {
			if (!x->final)
				return READ_MORE;
		} else if (hexval(t[o + 1]) == (b & 15))
			e[ne++] = o + 2;
	}
	switch (t[o]) {
	case '\0':
		/* NUL b, and NUL b NUL: inside UTF-16LE text a match can
		 * start at the NUL before it and still end on its own. */
		if (o + 1 >= x->n) {
			if (!x->final)
				return READ_MORE;
		} else if (fold(t[o + 1]) == fold(b)) {
			e[ne++] = o + 2;
			if (o + 2 >= x->n) {
				if (!x->final)
					return READ_MORE;
			} else if (t[o + 2] == '\0')
				e[ne++] = o + 3;
		}
		break;
	case '%':
	case '=':
		if ((r = hex_digits(x, o + 1, 2, &v)) == READ_MORE)
			return r;
		if (r == READ_YES && v == b)
			e[ne++] = o + 3;
		break;
	case '\\':
		if (o + 1 >= x->n) {
			if (!x->final)
				return READ_MORE;
			break;
		}
		if (t[o + 1] == 'u' || t[o + 1] == 'x') {
			size_t k = t[o + 1] == 'u' ? 4 : 2;
			if ((r = hex_digits(x, o + 2, k, &v)) == READ_MORE)
				return r;
			if (r == READ_YES && v == b)
				e[ne++] = o + 2 + k;
		} else if (t[o + 1] == b && b > 0x20 && b < 0x7f && !isalnum(b))
			e[ne++] = o + 2;
		else
			for (size_t k = 0; shorts[k] != '\0'; k += 2)
				if (t[o + 1] == (unsigned char)shorts[k] &&
				    b == (unsigned char)shorts[k + 1])
					e[ne++] = o + 2;
		break;
	case '&':
		if ((r = entity(x, o, b, e, &ne)) == READ_MORE)
			return r;
		break;
	default:
		break;
	}
	return (int)ne;
}

/* Adds offset rel to the set w, widening its bounds [*lo, *hi]. */
static void
way_add(uint64_t *w, size_t rel, size_t *lo, size_t *hi)
{
	w[rel / 64] |= (uint64_t)1 << (rel % 64);
	if (rel < *lo)
		*lo = rel;
	if (rel > *hi)
		*hi = rel;
}

/* The units for b at o, and after a quoted-printable soft line break
 * there when soft: their ends (less base) into the set nxt. */
static int
units_into(const struct text *x, size_t o, unsigned char b, bool soft,
    size_t base, uint64_t *nxt, size_t *lo, size_t *hi)
{
	size_t e[UNIT_ENDS], p = 0;
	int ne = unit_ends(x, o, b, e);

	if (ne < 0)
		return READ_MORE;
	for (int j = 0; j < ne; j++)
		way_add(nxt, e[j] - base, lo, hi);
	if (!soft || o >= x->n || x->t[o] != '=')
		return READ_YES;
	if (o + 1 >= x->n)
		return x->final ? READ_YES : READ_MORE;
	if (x->t[o + 1] == '\n')
		p = o + 2;
	else if (x->t[o + 1] == '\r') {
		if (o + 2 >= x->n)
			return x->final ? READ_YES : READ_MORE;
		if (x->t[o + 2] == '\n')
			p = o + 3;
	}
	if (p == 0)
		return READ_YES;
	if ((ne = unit_ends(x, p, b, e)) < 0)
		return READ_MORE;
	for (int j = 0; j < ne; j++)
		way_add(nxt, e[j] - base, lo, hi);
	return READ_YES;
}

/*
 * The value read unit by unit from x->t[i]: every way of reading the
 * text is followed at once (a set of offsets, one bit each, so none is
 * ever dropped), and a match ends at the furthest offset any reading
 * reaches. known units are taken as read already, one raw byte each
 * (scan knows them: see there). *ret_end on READ_YES; on READ_NO,
 * *ret_pure is how many units from the start were each one plain byte
 * read raw, the only way to read it. The sets are left empty.
 */
static int
match_units(struct inject_scanner *s, const struct text *x, size_t i,
    size_t known, size_t *ret_end, size_t *ret_pure)
{
	uint64_t *cur = s->ways[0], *nxt = s->ways[1], *tmp;
	size_t lo = known, hi = known, pure = known;
	bool still = true;
	int r = READ_YES;

	cur[known / 64] = (uint64_t)1 << (known % 64);
	for (size_t k = known; k < s->len; k++) {
		size_t nlo = SIZE_MAX, nhi = 0;
		unsigned char b = (unsigned char)s->value[k];
		for (size_t w = lo / 64; w <= hi / 64; w++) {
			uint64_t bits = cur[w];
			cur[w] = 0;
			while (bits != 0 && r >= 0) {
				size_t o =
				    i + w * 64 + (size_t)__builtin_ctzll(bits);
				bits &= bits - 1;
				r = units_into(x, o, b, k > 0, i, nxt, &nlo,
				    &nhi);
				if (++s->steps > s->allow && r >= 0)
					r = READ_COSTLY;
			}
		}
		if (r < 0 || nlo == SIZE_MAX) {
			if (nlo != SIZE_MAX)
				memset(nxt + nlo / 64, 0,
				    (nhi / 64 - nlo / 64 + 1) * sizeof(*nxt));
			*ret_pure = pure;
			return r < 0 ? r : READ_NO;
		}
		still = still && lo == hi && nlo == nhi && nlo == lo + 1 &&
		    !s->escape[x->t[i + lo]];
		if (still)
			pure = k + 1;
		tmp = cur;
		cur = nxt;
		nxt = tmp;
		lo = nlo;
		hi = nhi;
	}
	memset(cur + lo / 64, 0, (hi / 64 - lo / 64 + 1) * sizeof(*cur));
	*ret_end = i + hi;
	return READ_YES;
}

/* A base64 pattern at x->t[i], its '/' also as JSON's "\/", a line
 * break ("\r\n" or "\n", MIME's and PEM's wrapping) allowed between two
 * of its characters. */
static int
match_base64(const struct inject_pattern *p, const struct text *x, size_t i,
    size_t *ret_end)
{
	const unsigned char *t = x->t;
	size_t o = i;

	for (size_t j = 0; j < p->len; j++) {
		unsigned char c = (unsigned char)p->text[j];
		if (j > 0 && o < x->n && t[o] == '\r') {
			if (o + 1 >= x->n)
				return past_end(x);
			if (t[o + 1] != '\n')
				return READ_NO;
			o++;
		}
		if (j > 0 && o < x->n && t[o] == '\n')
			o++;
		if (o >= x->n)
			return past_end(x);
		if (t[o] == c) {
			o++;
			continue;
		}
		if (c != '/' || t[o] != '\\')
			return READ_NO;
		if (o + 1 >= x->n)
			return past_end(x);
		if (t[o + 1] != '/')
			return READ_NO;
		o += 2;
	}
	*ret_end = o;
	return READ_YES;
}

/* The matchers of f (first's bits) at x->t[i], the unit matcher's first
 * known units taken as read: the furthest end of those that match;
 * *ret_pure as match_units says (0 when it was not run). */
static int
match_at(struct inject_scanner *s, const struct text *x, size_t i, unsigned f,
    size_t known, size_t *ret_end, size_t *ret_pure)
{
	size_t best = 0, end;
	int r;

	*ret_pure = 0;
	if (f & 1) {
		r = match_units(s, x, i, known, &end, ret_pure);
		if (r < 0)
			return r;
		if (r == READ_YES)
			best = end;
	}
	for (size_t k = 0; k < s->npat; k++) {
		if (!(f & (2u << k)))
			continue;
		if ((r = match_base64(&s->pat[k], x, i, &end)) == READ_MORE)
			return r;
		if (r == READ_YES && end > best)
			best = end;
	}
	if (best == 0)
		return READ_NO;
	*ret_end = best;
	return READ_YES;
}

/*
 * Redacts every match in w[from..n), left to right, a match's every
 * byte overwritten, the scan going on after it; the matches are added
 * to *found. Returns where it stopped: n, or the first position whose
 * match needs bytes past n (never when final: the answer ends at n), or
 * where the budget of steps ran out (*costly set). What it decides
 * depends on the bytes alone, not on where n falls.
 *
 * Where the unit matcher failed after p units each one plain byte read
 * raw (a byte no other unit can start with), those bytes are the value's
 * first p, and only raw units read them: as KMP does, no match can start
 * before the value's border of p (in lower case) lines up, and there its
 * first border[p] units are read already. So near copies of a value
 * that repeats itself (a...ab over a...a) cost a step a byte, not one a
 * byte of the value at each place.
 */
static size_t
scan(struct inject_scanner *s, char *w, size_t n, size_t from, bool final,
    size_t *found, bool *costly)
{
	struct text x = { (const unsigned char *)w, n, final };
	size_t i = from, end, pure, units_at = from, known = 0;

	while (i < n) {
		unsigned f;
		int r;
		if (i >= units_at)
			while (i < n && s->first[(unsigned char)w[i]] == 0)
				i++;
		if (i == n)
			break;
		f = s->first[(unsigned char)w[i]];
		if (i < units_at)
			f &= ~1u;
		if (f == 0) {
			i++;
			continue;
		}
		r = match_at(s, &x, i, f, i == units_at ? known : 0, &end,
		    &pure);
		if (r == READ_MORE)
			return i;
		if (r == READ_COSTLY) {
			*costly = true;
			return i;
		}
		if (r == READ_YES) {
			memset(w + i, s->filler, end - i);
			(*found)++;
			units_at = i = end;
			known = 0;
			continue;
		}
		if (f & 1) {
			units_at = i + (pure == 0 ? 1 : pure - s->border[pure]);
			known = pure == 0 ? 0 : s->border[pure];
		}
		i++;
	}
	return n;
}

/* Adds a pattern (taken) unless it is empty or one already held. */
static int
add_pattern(struct inject_scanner *s, char *text, size_t len)
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
	s->pat[s->npat++] = (struct inject_pattern){ text, len };
	return 0;
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
	return add_pattern(s, t, n);
}

/* Whether c can be the filler: in no unit of the value (not a letter or
 * digit, no escape's own byte, not a byte of the value in either case)
 * and in no base64 pattern. */
static bool
filler_ok(const struct inject_scanner *s, unsigned char c)
{
	static const char syntax[] = "%=\\&#;+/-_";

	if (c == '\0' || c == '\r' || c == '\n' || isalnum(c) ||
	    memchr(syntax, c, sizeof(syntax) - 1) != NULL)
		return false;
	for (size_t i = 0; i < s->len; i++)
		if (fold((unsigned char)s->value[i]) == fold(c))
			return false;
	return true;
}

int
inject_scanner_init(struct inject_scanner *s, const char *value, size_t len)
{
	static const char fillers[] = "*~!^|`";
	unsigned char b;
	size_t words;
	int r = 0;

	memset(s, 0, sizeof(*s));
	if (len == 0 || len > INJECT_VALUE_MAX)
		return -EINVAL;
	if ((s->value = malloc(len)) == NULL)
		return -ENOMEM;
	memcpy(s->value, value, len);
	s->len = len;
	for (size_t k = 0; r == 0 && k < 3; k++) {
		r = add_base64(s, value, len, k, b64std);
		if (r == 0)
			r = add_base64(s, value, len, k, b64url);
	}
	/* The longest match: every unit of its longest form, a soft line
	 * break before all but the first; a pattern of "\/" and line
	 * breaks. */
	s->maxspan = INJECT_UNIT_MAX * len - 3;
	for (size_t k = 0; k < s->npat; k++)
		if (4 * s->pat[k].len - 2 > s->maxspan)
			s->maxspan = 4 * s->pat[k].len - 2;
	words = s->maxspan / 64 + 1;
	s->allow = INJECT_STEPS_BYTE * s->maxspan;
	if (r == 0 &&
	    ((s->ways[0] = calloc(words, sizeof(uint64_t))) == NULL ||
		(s->ways[1] = calloc(words, sizeof(uint64_t))) == NULL))
		r = -ENOMEM;
	if (r < 0) {
		inject_scanner_free(s);
		return r;
	}
	if ((s->border = calloc(len + 1, sizeof(uint16_t))) == NULL) {
		inject_scanner_free(s);
		return -ENOMEM;
	}
	for (size_t j = 1, k = 0; j < len; j++) {
		while (k > 0 &&
		    fold((unsigned char)value[j]) !=
			fold((unsigned char)value[k]))
			k = s->border[k];
		if (fold((unsigned char)value[j]) ==
		    fold((unsigned char)value[k]))
			k++;
		s->border[j + 1] = (uint16_t)k;
	}
	/* The bytes that start a unit other than the raw one, for any
	 * byte of the value. */
	for (size_t j = 0; j < len; j++) {
		unsigned char h =
		    (unsigned char)hexd[(unsigned char)value[j] >> 4];
		s->escape[h] = 1;
		s->escape[fold(h)] = 1;
	}
	s->escape['\0'] = s->escape['%'] = s->escape['='] = 1;
	s->escape['\\'] = s->escape['&'] = 1;
	/* The bytes that can start a match: a unit of the value's first
	 * byte, or a pattern's first character. */
	b = (unsigned char)value[0];
	s->first[b] |= 1;
	s->first[fold(b)] |= 1;
	if (fold(b) != b || (b >= 'a' && b <= 'z'))
		s->first[b ^ 0x20] |= 1;
	s->first[(unsigned char)hexd[b >> 4]] |= 1;
	s->first[fold((unsigned char)hexd[b >> 4])] |= 1;
	s->first['\0'] |= 1;
	s->first['%'] |= 1;
	s->first['='] |= 1;
	s->first['\\'] |= 1;
	s->first['&'] |= 1;
	for (size_t k = 0; k < s->npat; k++) {
		s->first[(unsigned char)s->pat[k].text[0]] |=
		    (uint8_t)(2u << k);
		if (s->pat[k].text[0] == '/')
			s->first['\\'] |= (uint8_t)(2u << k);
	}
	s->filler = '*';
	for (const char *f = fillers; *f != '\0'; f++)
		if (filler_ok(s, (unsigned char)*f)) {
			s->filler = *f;
			return 0;
		}
	for (unsigned c = 0x21; c <= 0xff; c++)
		if (filler_ok(s, (unsigned char)c)) {
			s->filler = (char)c;
			break;
		}
	return 0;
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
 * A chunked body's data in w[0..lim) (the framing's state at w[0] is
 * s->chunk), scanned from its first byte as one text (final: the answer
 * ends at lim), each match overwritten in w; *ret_cut is where in w the
 * scan stopped (the first undecided data byte, else lim). 0 or -ENOMEM.
 */
static int
scan_data(struct inject_scanner *s, char *w, size_t lim, bool final,
    size_t *ret_cut, size_t *found, bool *costly)
{
	size_t *at = malloc((lim + 1) * sizeof(*at)), nd = 0, cut;
	char *d = malloc(lim + 1);
	struct inject_chunking ch = s->chunk;

	if (at == NULL || d == NULL) {
		free(at);
		free(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < lim; i++)
		if (chunk_step(&ch, (unsigned char)w[i])) {
			at[nd] = i;
			d[nd++] = w[i];
		}
	cut = scan(s, d, nd, 0, final, found, costly);
	for (size_t k = 0; k < nd; k++)
		w[at[k]] = d[k];
	*ret_cut = cut < nd ? at[cut] : lim;
	explicit_bzero(d, nd);
	free(d);
	free(at);
	return 0;
}

/*
 * Feeds and flushes share this: the held bytes and p[0..n) scanned, the
 * raw text first, then (chunked) the data apart from its framing, only
 * as far as the raw scan decided, so each sees what a scan of the whole
 * answer would; what can go is appended to out, the rest held.
 */
static int
scan_step(struct inject_scanner *s, const char *p, size_t n, bool final,
    struct buf *out, size_t *ret_found)
{
	size_t total = s->nhold + n, found = 0, cut, hold_at;
	bool costly = false;
	char *w;
	int r = 0;

	s->allow = n > (SIZE_MAX - s->allow) / INJECT_STEPS_BYTE
	    ? SIZE_MAX
	    : s->allow + INJECT_STEPS_BYTE * n;
	if ((w = malloc(total + 1)) == NULL)
		return -ENOMEM;
	if (s->nhold > 0)
		memcpy(w, s->hold, s->nhold);
	if (n > 0)
		memcpy(w + s->nhold, p, n);
	cut = scan(s, w, total, s->resume, final, &found, &costly);
	hold_at = cut;
	if (s->chunked && !costly) {
		size_t dcut;
		r = scan_data(s, w, cut, final, &dcut, &found, &costly);
		if (r < 0)
			goto out;
		if (dcut < hold_at)
			hold_at = dcut;
		/* Absurd framing: past INJECT_HOLD_MAX the older data goes
		 * (cut is within it: maxspan fits). */
		if (total - hold_at > INJECT_HOLD_MAX)
			hold_at = total - INJECT_HOLD_MAX;
	}
	if (costly) {
		r = -E2BIG;
		goto out;
	}
	if (total - hold_at > s->holdcap) {
		char *h = malloc(total - hold_at);
		if (h == NULL) {
			r = -ENOMEM;
			goto out;
		}
		if (s->hold != NULL) {
			explicit_bzero(s->hold, s->holdcap);
			free(s->hold);
		}
		s->hold = h;
		s->holdcap = total - hold_at;
	}
	if ((r = buf_append(out, w, hold_at)) < 0)
		goto out;
	for (size_t i = 0; s->chunked && i < hold_at; i++)
		(void)chunk_step(&s->chunk, (unsigned char)w[i]);
	if (total > hold_at)
		memcpy(s->hold, w + hold_at, total - hold_at);
	if (s->nhold > total - hold_at)
		explicit_bzero(s->hold + total - hold_at,
		    s->nhold - (total - hold_at));
	s->nhold = total - hold_at;
	s->resume = cut - hold_at;
	s->found += found;
	if (ret_found != NULL)
		*ret_found = found;
out:
	explicit_bzero(w, total);
	free(w);
	return r;
}

int
inject_scanner_feed(struct inject_scanner *s, const char *p, size_t n,
    struct buf *out, size_t *ret_found)
{
	if (ret_found != NULL)
		*ret_found = 0;
	if (n == 0)
		return 0;
	return scan_step(s, p, n, false, out, ret_found);
}

int
inject_scanner_flush(struct inject_scanner *s, struct buf *out)
{
	/* Even with nothing held: out is then made (buf_append). */
	return scan_step(s, NULL, 0, true, out, NULL);
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
	if (s->value != NULL) {
		explicit_bzero(s->value, s->len);
		free(s->value);
	}
	if (s->hold != NULL) {
		explicit_bzero(s->hold, s->holdcap);
		free(s->hold);
	}
	free(s->ways[0]);
	free(s->ways[1]);
	free(s->border);
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
