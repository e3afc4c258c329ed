/*
 * The format and the reflection scanner of inject.h. The scanner's keys
 * are every run of INJECT_WINDOW bytes in a row (in lower case) of each
 * target: the value, its base64 forms, and the secrets decoded from a
 * base64 word of it (a shorter target is one key, whole); they are
 * sorted, so the keys a run of bytes can still be the start of are a
 * range, narrowed a byte at a time. The scan goes left to right over the
 * held bytes and the new ones: a table of the two bytes at a place
 * (pass2), then tables of the bytes that can start a key (and of the
 * keys' first two bytes, where only raw units can be read) skip most
 * places at once; where one can start, every way of reading
 * the text unit by unit is followed at once, and the bytes a reading of
 * a key covers are marked. The marks' union is what is redacted, so a
 * run of the value of any length is, however long, and no byte of it is
 * overwritten before every reading of it was made. A place whose
 * reading needs bytes not yet come stops the scan there, so the bytes
 * from it on are held (with their marks) and what is decided never
 * depends on how the answer was cut.
 */
#include "inject.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
/* The most units that can start at one place (units_at), and with a
 * line break's before them (units_after). */
#define UNIT_ENDS 12
/* The shortest secret decoded from a base64 word of the value that is
 * looked for (shorter ones would match common text), and the shortest
 * such word. */
#define DECODED_MIN 6
#define BASE64_WORD_MIN 12

/* The answer as the matchers see it: t[0..n), and whether it ends at n
 * (final) or more bytes may follow. */
struct text {
	const unsigned char *t;
	size_t n;
	bool final;
	bool lines; /* a plain line break may come between two units */
};

/* One unit of the answer: where it ends and the byte (in lower case) it
 * stands for. */
struct unit {
	size_t end;
	unsigned char c;
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

/* k hex digits (either case) at x->t[o]: their value in *v. */
static int
hex_digits(const struct text *x, size_t o, size_t k, unsigned *v)
{
	*v = 0;
	for (size_t i = 0; i < k; i++) {
		int d;
		if (o + i >= x->n)
			return past_end(x);
		if ((d = hex_digit((unsigned char)x->t[o + i])) < 0)
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

/* The HTML entities at x->t[o] ('&'): into u[*nu]. */
static int
entity(const uint8_t *inkey, const struct text *x, size_t o, struct unit *u,
    int *nu)
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
			    ? hex_digit((unsigned char)t[p])
			    : (t[p] >= '0' && t[p] <= '9' ? t[p] - '0' : -1);
			if (d < 0)
				break;
			v = v * base + (unsigned)d;
			/* The value only grows; past the cap, no entity. */
			if (++digits > ENTITY_DIGITS_MAX || v > 0xff)
				return READ_NO;
		}
		if (digits > 0 && t[p] == ';')
			u[(*nu)++] =
			    (struct unit){ p + 1, fold((unsigned char)v) };
		return READ_YES;
	}
	for (size_t k = 0; k < sizeof(entities) / sizeof(entities[0]); k++) {
		const char *name = entities[k].name;
		size_t l, j;
		/* One that stands for no key's byte is not read. */
		if (!inkey[fold(entities[k].c)])
			continue;
		l = strlen(name);
		for (j = 0; j <= l; j++) {
			if (p + j >= x->n)
				return past_end(x);
			if (j == l ? t[p + j] != ';'
				   : fold(t[p + j]) != (unsigned char)name[j])
				break;
		}
		if (j > l && *nu < UNIT_ENDS)
			u[(*nu)++] =
			    (struct unit){ p + l + 1, fold(entities[k].c) };
	}
	return READ_YES;
}

/*
 * Every unit of the answer that starts at x->t[o]: into u (UNIT_ENDS),
 * their count; READ_MORE when the bytes end where one may go on. The
 * units: the byte (in either case); the byte then NUL, NUL then a byte,
 * NUL a byte NUL (UTF-16, LE and BE); two hex digits; %HH and =HH;
 * \uHHHH (up to 00FF) and \xHH; a backslash before punctuation, JSON's
 * \b \f \n \r \t; &#NN; and &#xHH; (8 digits at most); the named
 * entities above. Every hex digit in either case.
 */
static int
units_at(const uint8_t *inkey, const struct text *x, size_t o, struct unit *u)
{
	static const char shorts[] = "b\bf\fn\nr\rt\t";
	const unsigned char *t = x->t;
	int nu = 0, h, l, r;
	unsigned v;

	if (o >= x->n)
		return x->final ? 0 : READ_MORE;
	u[nu++] = (struct unit){ o + 1, fold(t[o]) };
	if (o + 1 >= x->n)
		return x->final ? nu : READ_MORE;
	if (t[o + 1] == '\0')
		u[nu++] = (struct unit){ o + 2, fold(t[o]) };
	if ((h = hex_digit((unsigned char)t[o])) >= 0 &&
	    (l = hex_digit((unsigned char)t[o + 1])) >= 0)
		u[nu++] =
		    (struct unit){ o + 2, fold((unsigned char)(h << 4 | l)) };
	switch (t[o]) {
	case '\0':
		/* NUL b, and NUL b NUL: inside UTF-16LE text a match can
		 * start at the NUL before it and still end on its own. */
		u[nu++] = (struct unit){ o + 2, fold(t[o + 1]) };
		if (o + 2 >= x->n) {
			if (!x->final)
				return READ_MORE;
		} else if (t[o + 2] == '\0')
			u[nu++] = (struct unit){ o + 3, fold(t[o + 1]) };
		break;
	case '%':
	case '=':
		if ((r = hex_digits(x, o + 1, 2, &v)) == READ_MORE)
			return r;
		if (r == READ_YES)
			u[nu++] =
			    (struct unit){ o + 3, fold((unsigned char)v) };
		break;
	case '\\':
		if (t[o + 1] == 'u' || t[o + 1] == 'x') {
			size_t k = t[o + 1] == 'u' ? 4 : 2;
			if ((r = hex_digits(x, o + 2, k, &v)) == READ_MORE)
				return r;
			if (r == READ_YES && v <= 0xff)
				u[nu++] = (struct unit){ o + 2 + k,
					fold((unsigned char)v) };
		} else if (t[o + 1] > 0x20 && t[o + 1] < 0x7f &&
		    !isalnum(t[o + 1]))
			u[nu++] = (struct unit){ o + 2, fold(t[o + 1]) };
		else
			for (size_t k = 0; shorts[k] != '\0'; k += 2)
				if (t[o + 1] == (unsigned char)shorts[k])
					u[nu++] = (struct unit){ o + 2,
						(unsigned char)shorts[k + 1] };
		break;
	case '&':
		if ((r = entity(inkey, x, o, u, &nu)) == READ_MORE)
			return r;
		break;
	default:
		break;
	}
	return nu;
}

/* The units of base64 text at x->t[o]: the byte (in either case), and
 * '/' written as JSON's "\\/". */
static int
units_raw(const struct text *x, size_t o, struct unit *u)
{
	const unsigned char *t = x->t;
	int nu = 0;

	if (o >= x->n)
		return x->final ? 0 : READ_MORE;
	u[nu++] = (struct unit){ o + 1, fold(t[o]) };
	if (t[o] == '\\') {
		if (o + 1 >= x->n)
			return x->final ? nu : READ_MORE;
		if (t[o + 1] == '/')
			u[nu++] = (struct unit){ o + 2, '/' };
	}
	return nu;
}

/* The units at o, and (brk) after a line break there: a quoted-printable
 * soft break ("=\r\n", "=\n") or, where x->lines, a plain one ("\r\n",
 * "\n"). */
static int
units_after(const struct inject_keys *ks, const struct text *x, size_t o,
    bool brk, struct unit *u)
{
	const unsigned char *t = x->t;
	size_t p = 0;
	int nu = ks->raw ? units_raw(x, o, u) : units_at(ks->inkey, x, o, u),
	    more;

	if (nu < 0 || !brk || o >= x->n)
		return nu;
	if (t[o] == '=') {
		if (o + 1 >= x->n)
			return x->final ? nu : READ_MORE;
		if (t[o + 1] == '\n')
			p = o + 2;
		else if (t[o + 1] == '\r') {
			if (o + 2 >= x->n)
				return x->final ? nu : READ_MORE;
			if (t[o + 2] == '\n')
				p = o + 3;
		}
	} else if (t[o] == '\r' && x->lines) {
		if (o + 1 >= x->n)
			return x->final ? nu : READ_MORE;
		if (t[o + 1] == '\n')
			p = o + 2;
	} else if (t[o] == '\n' && x->lines)
		p = o + 1;
	if (p == 0)
		return nu;
	if ((more = ks->raw ? units_raw(x, p, u + nu)
			    : units_at(ks->inkey, x, p, u + nu)) < 0)
		return more;
	return nu + more;
}

/* Byte k (0 the first) of a key. */
static unsigned char
key_byte(uint64_t key, unsigned k)
{
	return (unsigned char)(key >> (56 - 8 * k));
}

/* The keys of [lo, hi) (their bytes before k the same) whose byte k is
 * c: into [*rlo, *rhi); whether there is one. */
static bool
narrow(const struct inject_keys *ks, uint32_t lo, uint32_t hi, unsigned k,
    unsigned char c, uint32_t *rlo, uint32_t *rhi)
{
	uint32_t a = lo, b = hi;

	if (k == 0) {
		*rlo = ks->r0[c];
		*rhi = ks->r0[c + 1];
		return *rlo < *rhi;
	}
	if (k == 1 && ks->r1 != NULL) {
		unsigned p = (unsigned)key_byte(ks->keys[lo].bytes, 0) << 8 | c;
		*rlo = ks->r1[p];
		*rhi = ks->r1[p + 1];
		return *rlo < *rhi;
	}
	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		if (key_byte(ks->keys[m].bytes, k) < c)
			a = m + 1;
		else
			b = m;
	}
	if (a == hi || key_byte(ks->keys[a].bytes, k) != c)
		return false;
	*rlo = a;
	b = hi;
	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		if (key_byte(ks->keys[m].bytes, k) <= c)
			a = m + 1;
		else
			b = m;
	}
	*rhi = a;
	return true;
}

/* The lowest value of the keys from lo of the same bytes as keys[lo]
 * that a reading of width bytes completes (a shorter key's zeros are a
 * value's NULs too). */
static uint16_t
key_owner(const struct inject_keys *ks, uint32_t lo, unsigned width)
{
	uint16_t o = ks->keys[lo].owner;

	for (size_t j = lo + 1; o > 0 && j < ks->nkeys &&
	     ks->keys[j].bytes == ks->keys[lo].bytes &&
	     ks->keys[j].width <= width;
	     j++)
		if (ks->keys[j].owner < o)
			o = ks->keys[j].owner;
	return o;
}

/* The most values whose matches at one place are told apart; more
 * share the last one's (the lowest value's filler, the furthest end). */
#define HITS_MAX 8

/* The matches that start at one place: for each value (owner) whose
 * key a reading there is, the furthest end such a reading reaches. */
struct hits {
	struct {
		size_t end;
		uint16_t owner;
	} h[HITS_MAX];
	int n;
};

static void
hit_add(struct hits *hs, uint16_t owner, size_t end)
{
	int k;

	for (k = 0; k < hs->n && hs->h[k].owner != owner; k++)
		;
	if (k == hs->n && hs->n < HITS_MAX)
		hs->h[hs->n++].end = 0;
	else if (k == hs->n) {
		/* Full: the last stands for both, covering no less. */
		k = HITS_MAX - 1;
		if (owner > hs->h[k].owner)
			owner = hs->h[k].owner;
	}
	hs->h[k].owner = owner;
	if (end > hs->h[k].end)
		hs->h[k].end = end;
}

/*
 * Whether a run of units from x->t[i] reads as a key (INJECT_WINDOW
 * bytes in a row of a target, or a shorter target whole): every way of
 * reading the text is followed at once (a set of readings, each its
 * offset and the keys its bytes so far are the start of, none dropped),
 * and the furthest end a reading of a key of each value reaches goes to
 * hits (the lowest value of equal keys). rd is the room for the
 * readings (the caller's: nothing of one place is kept for the next).
 */
static int
window_at(struct inject_scanner *s, const struct inject_keys *ks,
    const struct text *x, size_t i,
    struct inject_reading (*rd)[INJECT_READINGS], struct hits *hits)
{
	struct inject_reading *cur = rd[0], *nxt = rd[1], *tmp;
	size_t ncur = 1;
	bool best = false;

	cur[0] = (struct inject_reading){ i, 0, (uint32_t)ks->nkeys };
	for (unsigned k = 0; k < INJECT_WINDOW && ncur > 0; k++) {
		size_t nn = 0;
		for (size_t a = 0; a < ncur; a++) {
			struct unit u[2 * UNIT_ENDS];
			int nu = units_after(ks, x, cur[a].off, k > 0, u);
			if (nu < 0)
				return nu;
			if (++s->steps > s->allow)
				return READ_COSTLY;
			for (int j = 0; j < nu; j++) {
				uint32_t lo, hi;
				size_t b;
				if (!narrow(ks, cur[a].lo, cur[a].hi, k, u[j].c,
					&lo, &hi))
					continue;
				if (ks->keys[lo].width <= k + 1) {
					hit_add(hits, key_owner(ks, lo, k + 1),
					    u[j].end);
					best = true;
				}
				if (k + 1 == INJECT_WINDOW)
					continue;
				for (b = 0; b < nn; b++)
					if (nxt[b].off == u[j].end &&
					    nxt[b].lo == lo)
						break;
				if (b < nn)
					continue;
				if (nn == INJECT_READINGS)
					return READ_COSTLY;
				nxt[nn++] =
				    (struct inject_reading){ u[j].end, lo, hi };
			}
		}
		tmp = cur;
		cur = nxt;
		nxt = tmp;
		ncur = nn;
	}
	return best ? READ_YES : READ_NO;
}

/* Whether the keys' first two bytes can be a, b. */
static bool
pair_has(const struct inject_keys *ks, unsigned char a, unsigned char b)
{
	unsigned p = (unsigned)a << 8 | b;

	return (ks->pairs[p / 64] >> (p % 64)) & 1;
}

/* The bit of the keys' first three bytes a, b, c in s->pairs' second
 * half. */
static unsigned
trio(unsigned char a, unsigned char b, unsigned char c)
{
	return (((unsigned)a * 2654435761u ^ (unsigned)b * 40503u ^
		    (unsigned)c * 2246822519u) >>
		   16) &
	    0xffff;
}

/* Whether the keys' first three bytes can be a, b, c (a false yes is
 * fine: the matcher then reads the place). */
static bool
trio_has(const struct inject_keys *ks, unsigned char a, unsigned char b,
    unsigned char c)
{
	unsigned p = trio(a, b, c);

	return (ks->pairs[1024 + p / 64] >> (p % 64)) & 1;
}

/* Whether a place whose first two bytes are a, b may start a reading of
 * a key (the scanner's pass2). */
static bool
pass2_has(const uint64_t *pass2, unsigned char a, unsigned char b)
{
	unsigned p = (unsigned)a << 8 | b;

	return (pass2[p / 64] >> (p % 64)) & 1;
}

/* Whether a reading of one of ks's keys may start at w[i]: the tables of
 * the bytes that can start one and, where the first units can only be
 * the bytes themselves, of the keys' first two and three bytes, rule
 * most places out at once. */
static bool
might_start(const struct inject_keys *ks, const unsigned char *w, size_t n,
    size_t i)
{
	unsigned char a = w[i], b;

	if (!ks->lead[a])
		return false;
	/* A backslash or an ampersand: only some bytes after them start a
	 * unit that stands for a key's first byte. */
	if ((a == '\\' || a == '&') && !ks->raw && i + 1 < n)
		return ks->after[a == '&'][w[i + 1]];
	if (!ks->pairs_ok || !ks->plain[a] || i + 1 >= n ||
	    !ks->plain[w[i + 1]])
		return true;
	b = fold(w[i + 1]);
	if (!pair_has(ks, fold(a), b))
		return false;
	return !ks->trios_ok || i + 2 >= n || !ks->plain[w[i + 2]] ||
	    trio_has(ks, fold(a), b, fold(w[i + 2]));
}

/*
 * Marks (bit) in mark[] every byte of w[from..n) that a reading of a
 * key from some place covers (a line break kept), places left to right,
 * so that the marked bytes are the union of every such reading: a run of
 * the value longer than a key is covered whole. Returns where it
 * stopped: n, or the first place whose reading needs bytes past n (never
 * when final), or where the budget of steps ran out (*costly set). What
 * it decides depends on the bytes alone, not on where n falls. *marked
 * is set when it marked a byte.
 */
static size_t
scan(struct inject_scanner *s, const unsigned char *w, size_t n, size_t from,
    bool final, bool lines, uint16_t *mark, bool *costly, bool *marked)
{
	struct text x = { w, n, final, lines };
	struct inject_reading rd[2][INJECT_READINGS];
	const uint64_t *pass2 = s->pass2;
	struct hits hits;
	size_t i = from;

	while (i < n) {
		int r = READ_NO;
		/* The places whose first two bytes start no reading of a
		 * key: all's first look would say no at each (pass2 is
		 * that look without the third byte's). */
		while (i + 1 < n && !pass2_has(pass2, w[i], w[i + 1]))
			i++;
		if (!might_start(s->all, w, n, i)) {
			i++;
			continue;
		}
		hits.n = 0;
		for (size_t q = 0; q < 2 && r != READ_MORE && r != READ_COSTLY;
		     q++) {
			int rq;
			if (!might_start(&s->ks[q], w, n, i))
				continue;
			rq = window_at(s, &s->ks[q], &x, i, rd, &hits);
			if (rq != READ_NO)
				r = rq;
		}
		if (r == READ_MORE)
			return i;
		if (r == READ_COSTLY) {
			*costly = true;
			return i;
		}
		for (int h = 0; r == READ_YES && h < hits.n; h++) {
			/* A line break inside is kept: the head's lines
			 * and the chunks' framing stay where they were
			 * (unless a target holds one: a value's byte). */
			uint16_t o = hits.h[h].owner;
			bool keep = s->t->v[o].keep_lines;
			for (size_t k = i; k < hits.h[h].end; k++)
				if ((!keep || (w[k] != '\r' && w[k] != '\n')) &&
				    (mark[k] == 0 || mark[k] > o + 1))
					mark[k] = (uint16_t)(o + 1);
			*marked = true;
		}
		i++;
	}
	return n;
}

/* The base64 characters that depend on v's bits only, when v starts at
 * byte offset k (0..2) of a base64-encoded text: the characters whose
 * six bits lie wholly inside v; into t (room for 4 * len / 3 + 1): their
 * count. */
static size_t
base64_inner(const char *v, size_t len, size_t k, const char *alphabet, char *t)
{
	size_t bits = 8 * (k + len);
	size_t first = (8 * k + 5) / 6, last = bits / 6; /* [first, last) */
	size_t n = 0;

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
	return n;
}

static int
base64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/*
 * The base64 word w[0..n) (standard or URL-safe, '=' padding dropped
 * before) decoded into out (room for 3 * n / 4): its length, or 0 when
 * it does not decode to printable ASCII.
 */
static size_t
base64_printable(const char *w, size_t n, char *out)
{
	size_t o = 0;
	unsigned acc = 0, nb = 0;

	if (n % 4 == 1)
		return 0;
	for (size_t i = 0; i < n; i++) {
		acc = acc << 6 | (unsigned)base64_val((unsigned char)w[i]);
		nb += 6;
		if (nb >= 8) {
			nb -= 8;
			unsigned char c = (unsigned char)(acc >> nb);
			if (c < 0x20 || c > 0x7e)
				return 0;
			out[o++] = (char)c;
			acc &= (1u << nb) - 1;
		}
	}
	/* The bits left over are a padding's zeros in an encoder's text. */
	return acc == 0 ? o : 0;
}

/* The strings a scanner looks for while it is made. */
struct targets {
	struct {
		char *p;
		size_t len;
		bool form; /* a base64 form of another */
	} t[INJECT_TARGETS];
	size_t n;
};

/* Adds a copy of p[0..len) unless it is empty or held; 0, -ENOMEM. */
static int
target_add(struct targets *ts, const char *p, size_t len, bool form)
{
	if (len == 0 || ts->n == INJECT_TARGETS)
		return 0;
	for (size_t i = 0; i < ts->n; i++)
		if (ts->t[i].len == len && memcmp(ts->t[i].p, p, len) == 0)
			return 0;
	if ((ts->t[ts->n].p = malloc(len)) == NULL)
		return -ENOMEM;
	memcpy(ts->t[ts->n].p, p, len);
	ts->t[ts->n].form = form;
	ts->t[ts->n++].len = len;
	return 0;
}

/* p[0..len) and its base64 forms (standard and URL-safe, at each of
 * the three offsets). */
static int
target_add_forms(struct targets *ts, const char *p, size_t len)
{
	static const char *const alphabets[] = {
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		"+/",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		"-_",
	};
	char *b = malloc(4 * len / 3 + 4);
	int r = target_add(ts, p, len, false);

	if (b == NULL)
		return -ENOMEM;
	for (size_t k = 0; r == 0 && k < 3; k++)
		for (size_t a = 0; r == 0 && a < 2; a++) {
			size_t n = base64_inner(p, len, k, alphabets[a], b);
			r = target_add(ts, b, n, true);
			explicit_bzero(b, n);
		}
	free(b);
	return r;
}

/*
 * The secrets of a value stored as it goes on the wire: each base64 word
 * in it (BASE64_WORD_MIN characters or more, '=' padding allowed) that
 * decodes to printable text is what an upstream may decode and show
 * (Basic's "user:password"). Its secret is the text after the first ':'
 * (a password, a token), or before it when nothing comes after ("key:",
 * a key as the user), or the whole text without a ':'; a user name
 * (an e-mail, an account id) is not one. Added with their forms when
 * DECODED_MIN bytes or more.
 */
static int
targets_decoded(struct targets *ts, size_t *ret_n, const char *v, size_t len)
{
	char *d = malloc(3 * len / 4 + 1);
	int r = 0;

	*ret_n = 0;
	if (d == NULL)
		return -ENOMEM;
	for (size_t i = 0; r == 0 && i < len && ts->n + 7 <= INJECT_TARGETS;) {
		size_t j = i, pad = 0, dl;
		while (j < len && base64_val((unsigned char)v[j]) >= 0)
			j++;
		while (j + pad < len && v[j + pad] == '=' && pad < 2)
			pad++;
		if (j - i >= BASE64_WORD_MIN &&
		    (j + pad == len ||
			base64_val((unsigned char)v[j + pad]) < 0) &&
		    (dl = base64_printable(v + i, j - i, d)) > 0) {
			const char *colon = memchr(d, ':', dl);
			const char *sp = d;
			size_t sl = dl;
			if (colon != NULL && colon + 1 < d + dl) {
				sp = colon + 1;
				sl = (size_t)(d + dl - sp);
			} else if (colon != NULL)
				sl = (size_t)(colon - d);
			if (sl >= DECODED_MIN) {
				size_t before = ts->n;
				r = target_add_forms(ts, sp, sl);
				*ret_n += ts->n > before;
			}
			explicit_bzero(d, dl);
		}
		i = j + pad + (j + pad == i);
	}
	free(d);
	return r;
}

static void
targets_free(struct targets *ts)
{
	for (size_t i = 0; i < ts->n; i++) {
		explicit_bzero(ts->t[i].p, ts->t[i].len);
		free(ts->t[i].p);
	}
	ts->n = 0;
}

static int
key_cmp(const void *a, const void *b)
{
	const struct inject_key *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	if (x->width != y->width)
		return (int)x->width - (int)y->width;
	return (int)x->owner - (int)y->owner;
}

/* Whether c can be the filler: in no unit of a key (not a letter or
 * digit, no escape's own byte, no line break, not a byte of a target in
 * either case). */
static bool
filler_ok(const struct targets *ts, unsigned char c)
{
	static const char syntax[] = "%=\\&#;+/-_";

	if (c == '\0' || c == '\r' || c == '\n' || isalnum(c) ||
	    memchr(syntax, c, sizeof(syntax) - 1) != NULL)
		return false;
	for (size_t k = 0; k < ts->n; k++)
		for (size_t i = 0; i < ts->t[k].len; i++)
			if (fold((unsigned char)ts->t[k].p[i]) == fold(c))
				return false;
	return true;
}

/* The keys of the targets that are base64 forms (raw) or not, sorted,
 * each once, of value 0. */
static int
keys_collect(struct inject_keys *ks, const struct targets *ts, bool raw)
{
	size_t n = 0, m = 0;

	ks->raw = raw;
	for (size_t k = 0; k < ts->n; k++)
		n += ts->t[k].form != raw ? 0
		    : ts->t[k].len <= INJECT_WINDOW
		    ? 1
		    : ts->t[k].len - INJECT_WINDOW + 1;
	if ((ks->keys = calloc(n + 1, sizeof(*ks->keys))) == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < ts->n; k++) {
		const unsigned char *p = (const unsigned char *)ts->t[k].p;
		if (ts->t[k].form != raw)
			continue;
		size_t len = ts->t[k].len,
		       w = len < INJECT_WINDOW ? len : INJECT_WINDOW;
		for (size_t j = 0; j + w <= len; j++) {
			uint64_t key = 0;
			for (size_t b = 0; b < INJECT_WINDOW; b++)
				key = key << 8 | (b < w ? fold(p[j + b]) : 0);
			ks->keys[m++] =
			    (struct inject_key){ key, 0, (uint8_t)w };
		}
	}
	qsort(ks->keys, m, sizeof(*ks->keys), key_cmp);
	n = 0;
	for (size_t j = 0; j < m; j++)
		if (n == 0 || key_cmp(&ks->keys[n - 1], &ks->keys[j]) != 0)
			ks->keys[n++] = ks->keys[j];
	explicit_bzero(ks->keys + n, (m - n) * sizeof(*ks->keys));
	ks->nkeys = n;
	return 0;
}

/* Past this many keys a set of them has r1. */
#define KEYS_R1_MIN 4096

/* The tables of ks's keys (sorted; the tables zeroed before): the bytes
 * that can start one, its first two and three bytes. 0 or -ENOMEM. */
static int
keys_tables(struct inject_keys *ks)
{
	size_t n = ks->nkeys;
	bool raw = ks->raw;
	unsigned nibbles = 0;

	if (ks->pairs == NULL &&
	    (ks->pairs = calloc(2 * 65536 / 64, sizeof(uint64_t))) == NULL)
		return -ENOMEM;
	for (unsigned c = 0, j = 0; c <= 256; c++) {
		while (j < n && key_byte(ks->keys[j].bytes, 0) < c)
			j++;
		ks->r0[c] = j;
	}
	/* Many keys: their first two bytes' ranges at once, not searched
	 * (the scan's cost then little more than one value's). */
	if (n > KEYS_R1_MIN && ks->r1 == NULL) {
		if ((ks->r1 = malloc((65536 + 1) * sizeof(*ks->r1))) == NULL)
			return -ENOMEM;
		for (unsigned p = 0, j = 0; p <= 65536; p++) {
			while (j < n && (ks->keys[j].bytes >> 48) < p)
				j++;
			ks->r1[p] = (uint32_t)j;
		}
	}
	ks->pairs_ok = ks->trios_ok = true;
	for (size_t j = 0; j < n; j++) {
		unsigned char a = key_byte(ks->keys[j].bytes, 0),
			      b = key_byte(ks->keys[j].bytes, 1);
		ks->lead[a] = 1;
		if (a >= 'a' && a <= 'z')
			ks->lead[a - 32] = 1;
		if (ks->keys[j].width < 2)
			ks->pairs_ok = false;
		else {
			unsigned p = (unsigned)a << 8 | b;
			ks->pairs[p / 64] |= (uint64_t)1 << (p % 64);
		}
		if (ks->keys[j].width < 3)
			ks->trios_ok = false;
		else {
			unsigned p = trio(a, b, key_byte(ks->keys[j].bytes, 2));
			ks->pairs[1024 + p / 64] |= (uint64_t)1 << (p % 64);
		}
		for (unsigned k = 0; k < ks->keys[j].width; k++) {
			unsigned char c = key_byte(ks->keys[j].bytes, k);
			/* A letter's hex may be of either case: 59 is Y. */
			nibbles |= 1u << (c >> 4);
			if (c >= 'a' && c <= 'z')
				nibbles |= 1u << ((c ^ 0x20) >> 4);
			ks->inkey[c] = 1;
		}
	}
	/* A unit other than the byte itself: NUL, the escapes, and a hex
	 * digit that is some key byte's first nibble; a line break; in
	 * base64, JSON's "\\/" and a line break. */
	for (unsigned c = 0; raw && c < 256; c++) {
		ks->plain[c] = !(c == '\\' || c == '\r' || c == '\n');
		if (c == '\\' && ks->r0['/'] < ks->r0['/' + 1])
			ks->lead[c] = 1;
	}
	for (unsigned c = 0; !raw && c < 256; c++) {
		bool first = ks->r0[fold((unsigned char)c)] <
		    ks->r0[fold((unsigned char)c) + 1];
		/* What may follow a backslash, an ampersand, for a unit
		 * that stands for a key's first byte. */
		if (first && c > 0x20 && c < 0x7f && !isalnum((int)c))
			ks->after[0][c] = 1;
		int h = hex_digit((unsigned char)c);
		bool hex = h >= 0 && (nibbles >> h & 1);
		ks->plain[c] = !(c == '\0' || c == '%' || c == '=' ||
		    c == '\\' || c == '&' || c == '\r' || c == '\n' || hex);
		if (!ks->plain[c] && c != '\r' && c != '\n')
			ks->lead[c] = 1;
	}
	for (const char *sh = "b\bf\fn\nr\rt\t"; !raw && *sh != '\0'; sh += 2)
		if (ks->r0[(unsigned char)sh[1]] <
		    ks->r0[(unsigned char)sh[1] + 1])
			ks->after[0][(unsigned char)sh[0]] = 1;
	for (size_t k = 0; !raw && k < sizeof(entities) / sizeof(entities[0]);
	     k++) {
		unsigned char e = fold(entities[k].c),
			      l = (unsigned char)entities[k].name[0];
		if (ks->r0[e] < ks->r0[e + 1])
			ks->after[1][l] = ks->after[1][l ^ 0x20] = 1;
	}
	ks->after[0]['u'] = ks->after[0]['x'] = ks->after[1]['#'] = 1;
	/* A key that starts with the backslash or the ampersand itself:
	 * any byte may follow it. */
	for (unsigned c = 0; c < 256; c++) {
		if (ks->r0['\\'] < ks->r0['\\' + 1])
			ks->after[0][c] = 1;
		if (ks->r0['&'] < ks->r0['&' + 1])
			ks->after[1][c] = 1;
	}
	return 0;
}

/* t->pass2 from t->all: the bit of a, b set where might_start(&t->all)
 * can say yes at a place of those two bytes (with one after them or
 * none). */
static void
pass2_make(struct inject_table *t)
{
	const struct inject_keys *a = &t->all;
	uint64_t *p = t->pass2;

	memset(p, 0, sizeof(t->pass2));
	for (unsigned x = 0; x < 256; x++) {
		if (!a->lead[x])
			continue;
		if (!a->pairs_ok || !a->plain[x]) {
			memset(p + x * 4, 0xff, 4 * sizeof(*p));
			continue;
		}
		for (unsigned y = 0; y < 256; y++)
			if (!a->plain[y] ||
			    pair_has(a, fold((unsigned char)x),
				fold((unsigned char)y)))
				p[x * 4 + y / 64] |= (uint64_t)1 << (y % 64);
	}
}

/* t's tables from its two sets' keys: theirs, both sets' first look at
 * once (all: a place neither can start at is passed over by one), and
 * pass2. 0 or -ENOMEM. */
static int
table_tables(struct inject_table *t)
{
	struct inject_keys *a = &t->all;
	int r = keys_tables(&t->ks[0]);

	if (r == 0)
		r = keys_tables(&t->ks[1]);
	if (r == 0 && (a->pairs = calloc(2 * 65536 / 64, 8)) == NULL)
		r = -ENOMEM;
	if (r < 0)
		return r;
	a->pairs_ok = t->ks[0].pairs_ok && t->ks[1].pairs_ok;
	a->trios_ok = t->ks[0].trios_ok && t->ks[1].trios_ok;
	for (unsigned c = 0; c < 256; c++) {
		a->lead[c] = t->ks[0].lead[c] | t->ks[1].lead[c];
		a->plain[c] = t->ks[0].plain[c] & t->ks[1].plain[c];
		a->after[0][c] = a->after[1][c] = 1;
	}
	for (size_t k = 0; k < 2 * 65536 / 64; k++)
		a->pairs[k] = t->ks[0].pairs[k] | t->ks[1].pairs[k];
	a->raw = true; /* after[] not used */
	pass2_make(t);
	return 0;
}

static void
table_free(struct inject_table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; t->v != NULL && i < t->nv; i++) {
		if (t->v[i].value != NULL) {
			explicit_bzero(t->v[i].value, t->v[i].len);
			free(t->v[i].value);
		}
		free(t->v[i].label);
	}
	free(t->v);
	for (size_t q = 0; q < 3; q++) {
		struct inject_keys *ks = q < 2 ? &t->ks[q] : &t->all;
		if (ks->keys != NULL) {
			explicit_bzero(ks->keys, ks->nkeys * sizeof(*ks->keys));
			free(ks->keys);
		}
		if (ks->pairs != NULL) {
			explicit_bzero(ks->pairs, 2 * 65536 / 8);
			free(ks->pairs);
		}
		if (ks->r1 != NULL) {
			explicit_bzero(ks->r1, (65536 + 1) * sizeof(*ks->r1));
			free(ks->r1);
		}
	}
	/* The tables tell which bytes the values hold. */
	explicit_bzero(t, sizeof(*t));
	free(t);
}

/* A scanner never fed for table t (its one reference): the views of its
 * value 0. */
static void
scanner_on(struct inject_scanner *s, struct inject_table *t)
{
	memset(s, 0, sizeof(*s));
	s->t = t;
	s->value = t->v[0].value;
	s->len = t->v[0].len;
	s->ndecoded = t->v[0].ndecoded;
	s->filler = t->v[0].filler;
	s->ks = t->ks;
	s->all = &t->all;
	s->pass2 = t->pass2;
	/* The longest reading of a key: every unit its longest, a line
	 * break before all but the first. */
	s->maxspan = INJECT_WINDOW * INJECT_UNIT_MAX;
	s->allow = INJECT_STEPS_BYTE * s->maxspan;
}

int
inject_scanner_init(struct inject_scanner *s, const char *value, size_t len)
{
	static const char fillers[] = "*~!^|`";
	struct targets ts = { .n = 0 };
	struct inject_table *t;
	struct inject_value *v;
	int r;

	memset(s, 0, sizeof(*s));
	if (len == 0 || len > INJECT_VALUE_MAX)
		return -EINVAL;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->refs = 1;
	if ((t->v = v = calloc(1, sizeof(*t->v))) == NULL ||
	    (v->value = malloc(len)) == NULL) {
		table_free(t);
		return -ENOMEM;
	}
	t->nv = 1;
	memcpy(v->value, value, len);
	v->len = len;
	r = target_add_forms(&ts, value, len);
	if (r == 0)
		r = targets_decoded(&ts, &v->ndecoded, value, len);
	if (r == 0)
		r = keys_collect(&t->ks[0], &ts, false);
	if (r == 0)
		r = keys_collect(&t->ks[1], &ts, true);
	if (r == 0)
		r = table_tables(t);
	if (r < 0) {
		targets_free(&ts);
		table_free(t);
		return r;
	}
	v->keep_lines = !(t->ks[0].inkey['\r'] || t->ks[0].inkey['\n']);
	v->filler = '*';
	for (const char *f = fillers; *f != '\0'; f++)
		if (filler_ok(&ts, (unsigned char)*f)) {
			v->filler = *f;
			goto made;
		}
	for (unsigned c = 0x21; c <= 0xff; c++)
		if (filler_ok(&ts, (unsigned char)c)) {
			v->filler = (char)c;
			break;
		}
made:
	targets_free(&ts);
	scanner_on(s, t);
	return 0;
}

/* Merges the sorted runs of a (n keys; run k is [at[k], at[k + 1]),
 * nruns of them) into one, two at a time, b the room for as many: the
 * array that holds the result ends in *ret (a or b). */
static void
runs_merge(struct inject_key *a, struct inject_key *b, size_t *at, size_t nruns,
    struct inject_key **ret)
{
	while (nruns > 1) {
		size_t out = 0, k;
		for (k = 0; k + 1 < nruns; k += 2) {
			size_t i = at[k], j = at[k + 1], e = at[k + 2];
			size_t o = at[k];
			while (i < at[k + 1] && j < e)
				b[o++] = key_cmp(&a[i], &a[j]) <= 0 ? a[i++]
								    : a[j++];
			while (i < at[k + 1])
				b[o++] = a[i++];
			while (j < e)
				b[o++] = a[j++];
			at[out++] = at[k];
		}
		if (k < nruns) {
			memcpy(b + at[k], a + at[k],
			    (at[k + 1] - at[k]) * sizeof(*a));
			at[out++] = at[k];
		}
		at[out] = at[nruns];
		nruns = out;
		struct inject_key *swap = a;
		a = b;
		b = swap;
	}
	*ret = a;
}

/* The keys of set q of the parts' values, merged into t->ks[q]: each
 * source scanner's keys of the values taken (its run, sorted), renamed
 * to their place in t. 0 or -ENOMEM. */
static int
join_keys(struct inject_table *t, const struct inject_table **src,
    const long *const *map, size_t nsrc, unsigned q)
{
	struct inject_keys *ks = &t->ks[q];
	size_t total = 0, *at = malloc((nsrc + 2) * sizeof(*at)), nruns = 0;
	struct inject_key *a, *b, *res;

	if (at == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < nsrc; k++)
		for (size_t j = 0; j < src[k]->ks[q].nkeys; j++)
			total += map[k][src[k]->ks[q].keys[j].owner] >= 0;
	a = calloc(total + 1, sizeof(*a));
	b = calloc(total + 1, sizeof(*b));
	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		free(at);
		return -ENOMEM;
	}
	total = 0;
	for (size_t k = 0; k < nsrc; k++) {
		const struct inject_keys *from = &src[k]->ks[q];
		size_t begin = total;
		for (size_t j = 0; j < from->nkeys; j++) {
			long to = map[k][from->keys[j].owner];
			if (to < 0)
				continue;
			a[total] = from->keys[j];
			a[total++].owner = (uint16_t)to;
		}
		/* Renamed, equal keys may be out of their owners' order:
		 * put back (a few at most share one). */
		for (size_t j = begin + 1; j < total; j++)
			for (size_t i = j;
			     i > begin && key_cmp(&a[i - 1], &a[i]) > 0; i--) {
				struct inject_key x = a[i];
				a[i] = a[i - 1];
				a[i - 1] = x;
			}
		if (total > begin)
			at[nruns++] = begin;
	}
	at[nruns] = total;
	runs_merge(a, b, at, nruns, &res);
	explicit_bzero(res == a ? b : a, (total + 1) * sizeof(*a));
	free(res == a ? b : a);
	free(at);
	ks->keys = res;
	ks->nkeys = total;
	ks->raw = q == 1;
	return 0;
}

int
inject_scanner_join(struct inject_scanner *dst, const struct inject_part *parts,
    size_t n)
{
	const struct inject_table **src = NULL;
	long **map = NULL;
	size_t nsrc = 0;
	struct inject_table *t = NULL;
	int r = -ENOMEM;

	memset(dst, 0, sizeof(*dst));
	if (n == 0 || n > INJECT_VALUES_MAX)
		return -EINVAL;
	for (size_t k = 0; k < n; k++)
		if (parts[k].s == NULL || parts[k].s->t == NULL ||
		    parts[k].i >= parts[k].s->t->nv)
			return -EINVAL;
	if ((src = calloc(n, sizeof(*src))) == NULL ||
	    (map = calloc(n, sizeof(*map))) == NULL ||
	    (t = calloc(1, sizeof(*t))) == NULL ||
	    (t->v = calloc(n, sizeof(*t->v))) == NULL)
		goto out;
	t->refs = 1;
	/* Each source scanner once, and which of its values go where. */
	for (size_t k = 0; k < n; k++) {
		const struct inject_table *from = parts[k].s->t;
		size_t j;
		for (j = 0; j < nsrc && src[j] != from; j++)
			;
		if (j == nsrc) {
			if ((map[j] = malloc(from->nv * sizeof(**map))) == NULL)
				goto out;
			for (size_t i = 0; i < from->nv; i++)
				map[j][i] = -1;
			src[nsrc++] = from;
		}
		if (map[j][parts[k].i] >= 0) {
			r = -EINVAL; /* a value twice */
			goto out;
		}
		map[j][parts[k].i] = (long)k;
	}
	for (size_t k = 0; k < n; k++) {
		const struct inject_value *from = &parts[k].s->t->v[parts[k].i];
		struct inject_value *v = &t->v[k];
		*v = *from;
		v->value = NULL;
		v->label = NULL;
		t->nv = k + 1;
		if ((v->value = malloc(from->len)) == NULL)
			goto out;
		memcpy(v->value, from->value, from->len);
		if (parts[k].label != NULL &&
		    (v->label = strdup(parts[k].label)) == NULL)
			goto out;
	}
	for (unsigned q = 0; q < 2; q++)
		if ((r = join_keys(t, src, (const long *const *)map, nsrc, q)) <
		    0)
			goto out;
	if ((r = table_tables(t)) < 0)
		goto out;
	scanner_on(dst, t);
	t = NULL;
	r = 0;
out:
	for (size_t j = 0; map != NULL && j < n; j++)
		free(map[j]);
	free(map);
	free(src);
	table_free(t);
	return r;
}

size_t
inject_scanner_values(const struct inject_scanner *s)
{
	return s->t != NULL ? s->t->nv : 0;
}

const char *
inject_scanner_value(const struct inject_scanner *s, size_t i, size_t *ret_len,
    const char **ret_label)
{
	*ret_len = s->t->v[i].len;
	if (ret_label != NULL)
		*ret_label = s->t->v[i].label;
	return s->t->v[i].value;
}

size_t
inject_scanner_found(const struct inject_scanner *s, size_t i)
{
	if (s->t == NULL || s->t->nv <= 1)
		return i == 0 ? s->found : 0;
	return s->vfound != NULL ? s->vfound[i] : 0;
}

int
inject_scanner_copy(struct inject_scanner *dst,
    const struct inject_scanner *src)
{
	if (src->t == NULL) {
		memset(dst, 0, sizeof(*dst));
		return -ENOMEM;
	}
	/* The answer's own state, as inject_scanner_init leaves it (the
	 * views copied: a test's pass2 stays). */
	*dst = *src;
	dst->hold = NULL;
	dst->hmark = NULL;
	dst->nhold = dst->holdcap = dst->resume = dst->dresume = 0;
	dst->in_run = false;
	dst->run_owner = 0;
	dst->found = dst->steps = dst->flagged = 0;
	dst->vfound = NULL;
	dst->flags = NULL;
	dst->allow = INJECT_STEPS_BYTE * dst->maxspan;
	dst->chunked = false;
	dst->chunk = (struct inject_chunking){ 0, 0 };
	dst->t->refs++;
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

/* The most bytes a scan step marks on the stack (more: on the heap). */
#define SCAN_STACK 2048

/* The held bytes' room: cap bytes or more. 0 or -ENOMEM. */
static int
hold_room(struct inject_scanner *s, size_t cap)
{
	char *h;

	if (cap <= s->holdcap)
		return 0;
	cap = (cap + 7) & ~(size_t)7; /* hmark aligned */
	/* The bytes and their marks in one block (hmark after them, freed
	 * with hold). */
	if ((h = calloc(3, cap)) == NULL)
		return -ENOMEM;
	if (s->hold != NULL) {
		memcpy(h, s->hold, s->nhold);
		memcpy(h + cap, s->hmark, s->nhold * sizeof(*s->hmark));
		explicit_bzero(s->hold, 3 * s->holdcap);
		free(s->hold);
	}
	s->hold = h;
	s->hmark = (uint16_t *)(void *)(h + cap);
	s->holdcap = cap;
	return 0;
}

/*
 * Feeds and flushes share this: the held bytes and p[0..n) scanned, the
 * raw text first, then (chunked) the data apart from its framing, only
 * as far as the raw scan decided, both reading the bytes as they came
 * and marking what they cover; what can go is appended to out (each
 * marked byte the filler), the rest held with its marks.
 */
static int
scan_step(struct inject_scanner *s, const char *p, size_t n, bool final,
    struct buf *out, size_t *ret_found)
{
	size_t total = s->nhold + n, found = 0, cut, hold_at, nd = 0;
	size_t dcut = 0, before = 0, *at = NULL, start = out->len;
	bool costly = false, marked = false;
	unsigned char *w = NULL, *d = NULL;
	const unsigned char *wr;
	uint16_t *m, *dm = NULL, mstack[SCAN_STACK];
	int r = 0;

	s->allow = n > (SIZE_MAX - s->allow) / INJECT_STEPS_BYTE
	    ? SIZE_MAX
	    : s->allow + INJECT_STEPS_BYTE * n;
	/* Nothing held: the scan reads the caller's bytes where they are;
	 * a small step's marks are on the stack. */
	m = total < SCAN_STACK ? mstack : malloc((total + 1) * sizeof(*m));
	if (s->nhold == 0)
		wr = n > 0 ? (const unsigned char *)p
			   : (const unsigned char *)"";
	else
		wr = w = malloc(total + 1);
	if ((s->nhold > 0 && w == NULL) || m == NULL) {
		r = -ENOMEM;
		goto out;
	}
	memset(m, 0, (total + 1) * sizeof(*m));
	if (s->nhold > 0) {
		memcpy(w, s->hold, s->nhold);
		memcpy(m, s->hmark, s->nhold * sizeof(*m));
		for (size_t i = 0; i < s->nhold && !marked; i++)
			marked = s->hmark[i] != 0;
		if (n > 0)
			memcpy(w + s->nhold, p, n);
	}
	/* A chunked body's raw bytes are not read across a plain line
	 * break: it would take the framing in (a size line, "\r\n5\r\n"),
	 * which the data's scan reads apart. */
	cut = scan(s, wr, total, s->resume, final, !s->chunked, m, &costly,
	    &marked);
	hold_at = cut;
	if (s->chunked && !costly) {
		/* The data in w[0..cut) as one text (the framing's state at
		 * w[0] is s->chunk). */
		struct inject_chunking ch = s->chunk;
		at = malloc((cut + 1) * sizeof(*at));
		d = calloc(cut + 1, 1); /* (gcc 12 sees d read unset) */
		dm = calloc(cut + 1, sizeof(*dm));
		if (at == NULL || d == NULL || dm == NULL) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < cut; i++)
			if (chunk_step(&ch, wr[i])) {
				at[nd] = i;
				d[nd++] = wr[i];
			}
		dcut = scan(s, d, nd, s->dresume < nd ? s->dresume : nd, final,
		    true, dm, &costly, &marked);
		for (size_t k = 0; k < nd; k++)
			if (dm[k] != 0 && (m[at[k]] == 0 || dm[k] < m[at[k]]))
				m[at[k]] = dm[k];
		if (dcut < nd && at[dcut] < hold_at)
			hold_at = at[dcut];
		/* Absurd framing: past INJECT_HOLD_MAX the older data goes
		 * (cut is within it: maxspan fits). */
		if (total - hold_at > INJECT_HOLD_MAX)
			hold_at = total - INJECT_HOLD_MAX;
		while (before < nd && at[before] < hold_at)
			before++;
	}
	if (costly) {
		r = -E2BIG;
		goto out;
	}
	if ((r = hold_room(s, total - hold_at)) < 0)
		goto out;
	/* The runs of each value counted apart (made at the first). */
	if (marked && s->vfound == NULL && s->t->nv > 1 &&
	    (s->vfound = calloc(s->t->nv, sizeof(*s->vfound))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = buf_append(out, (const char *)wr, hold_at)) < 0)
		goto out;
	/* A run of redacted bytes is one match: line breaks inside it
	 * and a chunked body's framing do not end it. Nothing marked (and
	 * not chunked): a byte not a line break ends a run before. */
	for (size_t i = hold_at; !marked && !s->chunked && i > 0 && s->in_run;
	     i--)
		if (wr[i - 1] != '\r' && wr[i - 1] != '\n')
			s->in_run = false;
	for (size_t i = 0; (marked || s->chunked) && i < hold_at; i++) {
		bool data = !s->chunked || chunk_step(&s->chunk, wr[i]);
		if (m[i] != 0) {
			uint16_t o = (uint16_t)(m[i] - 1);
			out->data[start + i] = s->t->v[o].filler;
			if (!s->in_run || s->run_owner != o) {
				found++;
				if (s->vfound != NULL)
					s->vfound[o]++;
				if (s->flags != NULL && s->flags[o])
					s->flagged++;
			}
			s->in_run = true;
			s->run_owner = o;
		} else if (data && wr[i] != '\r' && wr[i] != '\n')
			s->in_run = false;
	}
	if (total > hold_at) {
		memcpy(s->hold, wr + hold_at, total - hold_at);
		memcpy(s->hmark, m + hold_at, (total - hold_at) * sizeof(*m));
	}
	if (s->nhold > total - hold_at)
		explicit_bzero(s->hold + total - hold_at,
		    s->nhold - (total - hold_at));
	s->nhold = total - hold_at;
	s->resume = cut - hold_at;
	s->dresume = dcut > before ? dcut - before : 0;
	s->found += found;
	if (ret_found != NULL)
		*ret_found = found;
out:
	if (d != NULL) {
		explicit_bzero(d, nd);
		free(d);
	}
	free(dm);
	free(at);
	if (w != NULL) {
		explicit_bzero(w, total);
		free(w);
	}
	if (m != mstack)
		free(m);
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
	/* Another copy may still read the tables: only this one's own. */
	if (s->t != NULL && --s->t->refs == 0)
		table_free(s->t);
	if (s->hold != NULL) {
		explicit_bzero(s->hold, 3 * s->holdcap);
		free(s->hold); /* and hmark */
	}
	free(s->vfound);
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

bool
inject_cache_forget(struct inject_cache *c, const char *secret, int64_t version)
{
	for (size_t i = 0; i < c->n && i < INJECT_CACHE_MAX; i++) {
		if (strcmp(c->e[i].secret, secret) != 0 ||
		    c->e[i].version != version)
			continue;
		cached_wipe(&c->e[i]);
		/* The last entry takes its place (the order means nothing). */
		if (i != c->n - 1) {
			c->e[i] = c->e[c->n - 1];
			memset(&c->e[c->n - 1], 0, sizeof(c->e[0]));
		}
		c->n--;
		return true;
	}
	return false;
}

void
inject_cache_clear(struct inject_cache *c)
{
	for (size_t i = 0; i < c->n && i < INJECT_CACHE_MAX; i++)
		cached_wipe(&c->e[i]);
	c->n = 0;
}
