/*
 * The hidden-text scan: the lines a job added, as the patch carries them,
 * read for what a reviewer would not see as it applies. It reads the
 * patch text the writer produced (patch.c, diff.c), not the files, so
 * that it judges exactly the '+' lines a reviewer is shown, numbered as
 * the new file numbers them, and costs in proportion to what the job
 * changed. Printable ASCII, tab and form feed are passed over a byte at a
 * time (a letter noted for the word it is in); anything else is decoded
 * as UTF-8 and classed. Nothing here allocates or logs.
 */
#include "hidden.h"

#include "envelope.h"
#include "fold_table.h"

#include <errno.h>
#include <string.h>

#define HUNK_PREFIX "@@ -"

static bool
bidi(uint32_t cp)
{
	return (cp >= 0x202a && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f ||
	    cp == 0x061c;
}

/* Variation selectors: they pick a glyph of the character before. */
static bool
selector(uint32_t cp)
{
	return (cp >= 0xfe00 && cp <= 0xfe0f) ||
	    (cp >= 0xe0100 && cp <= 0xe01ef) ||
	    (cp >= 0x180b && cp <= 0x180d) || cp == 0x180f;
}

/* The class of a decoded code point past ASCII, or HIDDEN_CLASSES. */
static enum hidden_class
classify(uint32_t cp)
{
	/* Most text past ASCII (Latin, Cyrillic, Greek, Arabic, Indic, CJK)
	 * lies between the ranges below: passed at once. */
	if (cp < 0x2000) {
		if (cp > 0xad && cp != 0x34f && cp != 0x61c &&
		    (cp < 0x115f || cp > 0x1160) &&
		    (cp < 0x17b4 || cp > 0x180f))
			return HIDDEN_CLASSES;
	} else if (cp >= 0x2070 && cp < 0xfe00 && cp != 0x3164)
		return HIDDEN_CLASSES;
	if (cp <= 0x9f)
		return HIDDEN_CONTROL; /* C1: acts like ESC on a terminal */
	if (bidi(cp))
		return HIDDEN_BIDI;
	if (cp == 0x2028 || cp == 0x2029)
		return HIDDEN_SEPARATOR;
	if (envelope_invisible(cp))
		return HIDDEN_INVISIBLE;
	return HIDDEN_CLASSES;
}

/*
 * What a character is to a word (letters, digits and underscore: an
 * identifier, a value in a config), for the mixed-script look: TR39's
 * mixed-script confusables, narrowed to the scripts whose letters pass
 * for Latin ones and to Latin's own look-alike forms. A small table of
 * ranges, not the Unicode Script property: what it leaves out ends a
 * word, so a letter it does not know cannot join two words into one.
 */
enum word_kind {
	W_NONE, /* ends a word: punctuation, symbols, other scripts */
	W_NEUTRAL, /* a digit, underscore, combining mark: no script */
	W_LATIN, /* a Latin letter */
	W_LOOKALIKE, /* Cyrillic, Greek, Armenian: flagged beside Latin */
	W_FULL_DIGIT, /* a fullwidth digit: flagged beside Latin */
	W_LATIN_FORM, /* a fullwidth Latin letter or underscore, a
		       * mathematical alphanumeric: flagged in any word */
};

struct word_range {
	uint32_t lo, hi;
	enum word_kind kind;
};

/* In order, not overlapping; past ASCII. */
static const struct word_range word_ranges[] = {
	{ 0x00b5, 0x00b5, W_NEUTRAL }, /* the micro sign */
	{ 0x00c0, 0x00d6, W_LATIN }, { 0x00d8, 0x00f6, W_LATIN },
	{ 0x00f8, 0x02af, W_LATIN }, /* Latin Extended-A, -B, IPA */
	{ 0x0300, 0x036f, W_NEUTRAL }, /* combining diacritics */
	{ 0x0370, 0x0373, W_LOOKALIKE }, /* Greek */
	{ 0x0376, 0x0377, W_LOOKALIKE }, { 0x037b, 0x037d, W_LOOKALIKE },
	{ 0x037f, 0x037f, W_LOOKALIKE }, { 0x0386, 0x0386, W_LOOKALIKE },
	{ 0x0388, 0x03ff, W_LOOKALIKE },
	{ 0x0400, 0x0481, W_LOOKALIKE }, /* Cyrillic */
	{ 0x0483, 0x0489, W_NEUTRAL }, { 0x048a, 0x052f, W_LOOKALIKE },
	{ 0x0531, 0x0556, W_LOOKALIKE }, /* Armenian */
	{ 0x0560, 0x0588, W_LOOKALIKE }, { 0x1ab0, 0x1aff, W_NEUTRAL },
	{ 0x1c80, 0x1c8f, W_LOOKALIKE }, /* Cyrillic Extended-C */
	{ 0x1d00, 0x1d25, W_LATIN }, /* small capitals */
	{ 0x1dc0, 0x1dff, W_NEUTRAL },
	{ 0x1e00, 0x1eff, W_LATIN }, /* Latin Extended Additional */
	{ 0x1f00, 0x1fbc, W_LOOKALIKE }, /* Greek Extended */
	{ 0x1fc2, 0x1fcc, W_LOOKALIKE }, { 0x1fd0, 0x1fdb, W_LOOKALIKE },
	{ 0x1fe0, 0x1fec, W_LOOKALIKE }, { 0x1ff2, 0x1ffc, W_LOOKALIKE },
	{ 0x20d0, 0x20ff, W_NEUTRAL },
	{ 0x2c60, 0x2c7f, W_LATIN }, /* Latin Extended-C */
	{ 0x2de0, 0x2dff, W_NEUTRAL },
	{ 0xa640, 0xa66d, W_LOOKALIKE }, /* Cyrillic Extended-B */
	{ 0xa66f, 0xa67d, W_NEUTRAL }, { 0xa67f, 0xa69d, W_LOOKALIKE },
	{ 0xa69e, 0xa69f, W_NEUTRAL },
	{ 0xa720, 0xa7ff, W_LATIN }, /* Latin Extended-D */
	{ 0xab30, 0xab6f, W_LATIN }, /* Latin Extended-E */
	{ 0xfb00, 0xfb06, W_LATIN }, /* ff, fi, fl ligatures */
	{ 0xfb13, 0xfb17, W_LOOKALIKE }, /* Armenian ligatures */
	{ 0xfe20, 0xfe2f, W_NEUTRAL }, { 0xff10, 0xff19, W_FULL_DIGIT },
	{ 0xff21, 0xff3a, W_LATIN_FORM }, /* fullwidth A-Z */
	{ 0xff3f, 0xff3f, W_LATIN_FORM }, /* fullwidth _ */
	{ 0xff41, 0xff5a, W_LATIN_FORM }, /* fullwidth a-z */
	{ 0x1d400, 0x1d7ff, W_LATIN_FORM }, /* mathematical alphanumerics */
};

/* The word kind of a visible code point past ASCII. */
static enum word_kind
word_kind(uint32_t cp)
{
	size_t lo = 0, hi = sizeof(word_ranges) / sizeof(word_ranges[0]);

	if (cp < 0xb5 || cp > 0x1d7ff || (cp >= 0x3000 && cp < 0xa640))
		return W_NONE; /* CJK, emoji: at once */
	if (cp < 0x2b0)
		return cp == 0xd7 || cp == 0xf7 ? W_NONE
		    : cp >= 0xc0                ? W_LATIN
		    : cp == 0xb5                ? W_NEUTRAL
						: W_NONE;
	if (cp >= 0x400 && cp <= 0x52f && (cp < 0x482 || cp > 0x489))
		return W_LOOKALIKE; /* Cyrillic: at once */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < word_ranges[mid].lo)
			hi = mid;
		else if (cp > word_ranges[mid].hi)
			lo = mid + 1;
		else
			return word_ranges[mid].kind;
	}
	return W_NONE;
}

/* The word being read: whether it holds a Latin letter, and the first
 * letter that is flagged once it does (at its byte). */
struct word {
	bool latin, pending;
	uint32_t cp;
	size_t col;
};

/* envelope_utf8_decode, with the two- and three-byte forms of most text
 * past ASCII decoded here. */
static inline size_t
decode(const unsigned char *p, size_t n, uint32_t *ret_cp)
{
	if (n >= 2 && p[0] >= 0xc2 && p[0] <= 0xdf && (p[1] & 0xc0) == 0x80) {
		*ret_cp = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
		return 2;
	}
	if (n >= 3 && p[0] >= 0xe1 && p[0] <= 0xec && (p[1] & 0xc0) == 0x80 &&
	    (p[2] & 0xc0) == 0x80) {
		*ret_cp = (uint32_t)(p[0] & 0x0f) << 12 |
		    (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		return 3;
	}
	return envelope_utf8_decode(p, n, ret_cp);
}

/* Whether the code point at p (n bytes left) is visible and not ASCII. */
static bool
visible_beyond_ascii(const unsigned char *p, size_t n)
{
	uint32_t cp;

	if (n == 0 || p[0] < 0x80 || decode(p, n, &cp) == 0)
		return false;
	return classify(cp) == HIDDEN_CLASSES;
}

/* Records a hit of cls: the first of the line in *ret. */
static void
hit(unsigned *classes, struct hidden_hit *ret, enum hidden_class cls,
    uint32_t cp, size_t col)
{
	if (*classes == 0 && ret != NULL)
		*ret = (struct hidden_hit){ .cls = cls, .cp = cp, .col = col };
	*classes |= 1u << cls;
}

/* A Latin letter joins the word: a look-alike waiting in it is a hit. */
static void
word_latin(struct word *w, unsigned *classes, struct hidden_hit *ret)
{
	w->latin = true;
	if (w->pending) {
		hit(classes, ret, HIDDEN_MIXED_SCRIPT, w->cp, w->col);
		w->pending = false;
	}
}

/* A visible code point past ASCII (at byte col) in the word. */
static void
word_add(struct word *w, uint32_t cp, size_t col, unsigned *classes,
    struct hidden_hit *ret)
{
	switch (word_kind(cp)) {
	case W_NONE:
		*w = (struct word){ 0 };
		break;
	case W_NEUTRAL:
		break;
	case W_LATIN:
		word_latin(w, classes, ret);
		break;
	case W_LOOKALIKE:
	case W_FULL_DIGIT:
		if (w->latin)
			hit(classes, ret, HIDDEN_MIXED_SCRIPT, cp, col);
		else if (!w->pending)
			*w = (struct word){ .pending = true,
				.cp = cp,
				.col = col };
		break;
	case W_LATIN_FORM:
		hit(classes, ret, HIDDEN_MIXED_SCRIPT, cp, col);
		break;
	}
}

static inline bool
ascii_letter(unsigned char c)
{
	return (unsigned)((c | 0x20) - 'a') < 26u;
}

static inline bool
ascii_word(unsigned char c)
{
	return ascii_letter(c) || (unsigned)(c - '0') < 10u || c == '_';
}

/*
 * Passes over the printable ASCII from line[i] (one at least) and returns
 * where it ends. Only its ends matter to the word: the word before it
 * goes on into its first characters (a Latin letter there meets a
 * look-alike waiting), and its last word goes on into what follows.
 */
static size_t
ascii_run(const unsigned char *line, size_t i, size_t n, struct word *w,
    unsigned *classes, struct hidden_hit *ret)
{
	size_t j = i + 1, k;

	while (j < n && line[j] >= 0x20 && line[j] < 0x7f)
		j++;
	if (w->latin || w->pending) {
		for (k = i; k < j && ascii_word(line[k]); k++)
			if (!w->latin && ascii_letter(line[k]))
				word_latin(w, classes, ret);
		if (k == j)
			return j; /* the word goes on past the run */
		*w = (struct word){ 0 };
	}
	if (j < n)
		for (k = j; k > i && ascii_word(line[k - 1]); k--)
			if (ascii_letter(line[k - 1])) {
				w->latin = true;
				break;
			}
	return j;
}

unsigned
hidden_line(const unsigned char *line, size_t n, bool first_line,
    struct hidden_hit *ret)
{
	/* After a visible character past ASCII (kept across the selectors
	 * that follow it): an emoji, a letter of another script. */
	bool after_wide = false;
	unsigned classes = 0;
	struct word w = { 0 };
	size_t i = 0;

	while (i < n) {
		unsigned char c = line[i];
		enum hidden_class cls = HIDDEN_CLASSES;
		uint32_t cp = c;
		size_t len = 1;

		if (c >= 0x20 && c < 0x7f) {
			after_wide = false;
			i = ascii_run(line, i, n, &w, &classes, ret);
			continue;
		}
		if (c < 0x80) {
			if (c != '\t' && c != '\f' && (c != '\r' || i + 1 < n))
				cls =
				    HIDDEN_CONTROL; /* C0, DEL, a CR mid-line */
			after_wide = false;
			w = (struct word){ 0 };
		} else if ((len = decode(line + i, n - i, &cp)) == 0) {
			cls = HIDDEN_INVALID;
			len = 1;
			after_wide = false;
		} else {
			/* What is left alone below is nothing to a word
			 * either: a selector or joiner does not end it. */
			cls = classify(cp);
			if (cls == HIDDEN_CLASSES) {
				after_wide = true;
				word_add(&w, cp, i, &classes, ret);
			} else if (cp == 0xfeff && first_line && i == 0)
				cls =
				    HIDDEN_CLASSES; /* the BOM, where it goes */
			else if (selector(cp) && after_wide)
				cls = HIDDEN_CLASSES;
			else if ((cp == 0x200c || cp == 0x200d) && after_wide &&
			    visible_beyond_ascii(line + i + len, n - i - len))
				cls = HIDDEN_CLASSES; /* an emoji sequence */
			else
				after_wide = false;
		}
		if (cls != HIDDEN_CLASSES) {
			w = (struct word){ 0 };
			hit(&classes, ret, cls, cp, i);
		}
		i += len;
	}
	return classes;
}

/* Reads decimal digits at *p (before end) into *ret: false for none or
 * past 2^62. */
static bool
number(const char **p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;

	while (s < end && *s >= '0' && *s <= '9') {
		if (v > (UINT64_C(1) << 62) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (s == *p)
		return false;
	*p = s;
	*ret = v;
	return true;
}

/* "start[,count]": count 1 when left out, as xdiff writes a range. */
static bool
range(const char **p, const char *end, uint64_t *start, uint64_t *count)
{
	*count = 1;
	if (!number(p, end, start))
		return false;
	if (*p < end && **p == ',') {
		(*p)++;
		return number(p, end, count);
	}
	return true;
}

/* Parses "@@ -a[,b] +c[,d] @@" at the start of [s, end). */
static bool
hunk_header(const char *s, const char *end, uint64_t *old_count,
    uint64_t *new_start, uint64_t *new_count)
{
	uint64_t old_start;

	s += sizeof(HUNK_PREFIX) - 1;
	if (!range(&s, end, &old_start, old_count) || end - s < 2 ||
	    memcmp(s, " +", 2) != 0)
		return false;
	s += 2;
	return range(&s, end, new_start, new_count) && end - s >= 3 &&
	    memcmp(s, " @@", 3) == 0;
}

int
hidden_scan_patch(const char *section, size_t len, struct hidden_text *ret)
{
	const char *p = section, *end = section + len;

	*ret = (struct hidden_text){ 0 };
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl != NULL ? nl : end;
		uint64_t old_left, new_left, line;

		if ((size_t)(e - p) < sizeof(HUNK_PREFIX) - 1 ||
		    memcmp(p, HUNK_PREFIX, sizeof(HUNK_PREFIX) - 1) != 0) {
			/* A header or a literal; a hunk's line out of its
			 * hunk is no patch the writer wrote. */
			if ((*p == '+' || *p == '-' || *p == ' ') &&
			    ((size_t)(e - p) < 4 ||
				(memcmp(p, "+++ ", 4) != 0 &&
				    memcmp(p, "--- ", 4) != 0)))
				return -EINVAL;
			p = nl != NULL ? nl + 1 : end;
			continue;
		}
		if (!hunk_header(p, e, &old_left, &line, &new_left))
			return -EINVAL;
		p = nl != NULL ? nl + 1 : end;
		while (old_left > 0 || new_left > 0) {
			struct hidden_hit hit;
			unsigned found;

			if (p >= end)
				return -EINVAL; /* cut short */
			nl = memchr(p, '\n', (size_t)(end - p));
			e = nl != NULL ? nl : end;
			switch (*p) {
			case ' ':
				if (old_left == 0 || new_left == 0)
					return -EINVAL;
				old_left--, new_left--, line++;
				break;
			case '-':
				if (old_left == 0)
					return -EINVAL;
				old_left--;
				break;
			case '+':
				if (new_left == 0)
					return -EINVAL;
				found =
				    hidden_line((const unsigned char *)p + 1,
					(size_t)(e - p - 1), line == 1, &hit);
				if (found != 0) {
					if (ret->lines++ == 0) {
						ret->first_line = line;
						ret->first = hit;
					}
					ret->classes |= found;
				}
				new_left--, line++;
				break;
			case '\\':
				break; /* "\ No newline at end of file" */
			default:
				return -EINVAL;
			}
			p = nl != NULL ? nl + 1 : end;
		}
	}
	return 0;
}

/* The row of fold_table for cp, or NULL. */
static const struct fold_row *
fold_row(uint32_t cp)
{
	size_t lo = 0, hi = sizeof(fold_table) / sizeof(fold_table[0]);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fold_table[mid].cp == cp)
			return &fold_table[mid];
		if (fold_table[mid].cp < cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *
hidden_fold_ascii(uint32_t cp)
{
	const struct fold_row *r = cp >= 0x80 ? fold_row(cp) : NULL;

	return r != NULL ? r->to : NULL;
}

unsigned
hidden_name(const unsigned char *name, size_t n, struct hidden_hit *ret)
{
	unsigned classes = hidden_line(name, n, false, ret);

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = name[i] >= 0x80 ? decode(name + i, n - i, &cp) : 1;
		const struct fold_row *r;

		if (k == 0) {
			i++;
			continue;
		}
		if (name[i] >= 0x80 && (r = fold_row(cp)) != NULL && r->flag) {
			hit(&classes, ret, HIDDEN_CASE_CONFUSABLE, cp, i);
			break;
		}
		i += k;
	}
	return classes;
}

const char *
hidden_class_name(enum hidden_class c)
{
	static const char *const names[HIDDEN_CLASSES] = {
		[HIDDEN_BIDI] = "bidi_control",
		[HIDDEN_INVISIBLE] = "invisible",
		[HIDDEN_CONTROL] = "control",
		[HIDDEN_SEPARATOR] = "line_separator",
		[HIDDEN_INVALID] = "invalid_utf8",
		[HIDDEN_MIXED_SCRIPT] = "mixed_script",
		[HIDDEN_CASE_CONFUSABLE] = "case_confusable",
	};

	return (unsigned)c < HIDDEN_CLASSES ? names[c] : "unknown";
}
