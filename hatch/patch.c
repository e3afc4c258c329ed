/*
 * The patch writer. Output follows `git diff --full-index --binary` line
 * for line, so that `git apply` takes it and a reviewer reads what git
 * would have shown: the same headers, the same quoting, three lines of
 * context with git's hunk headers and function lines. Two things differ
 * on purpose. The line diff is Myers' O(ND) in linear space with a cost
 * budget (past it, the changed middle becomes one hunk, still exact), so
 * an ambiguous change may be drawn differently from git's heuristics. And
 * binary literals are zlib streams of stored blocks, since cordon has no
 * zlib: bigger than git's, but any inflater takes them.
 */
#include "patch.h"

#include "path.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CONTEXT 3 /* lines around each change, git's default */
#define BINARY_SCAN 8000 /* bytes git looks at for a NUL */
#define FUNC_MAX 80 /* bytes of a function line in a hunk header */
#define HUNK_HEADER_MAX 128 /* git's buffer for a whole hunk header */
#define MYERS_BUDGET 50000000UL /* steps before the diff gives up */
#define MYERS_MAX_LINES 4000000 /* past this, no diff: 32 bytes a line */
#define BASE85_LINE 52 /* bytes of data per line of a binary literal */
#define STORED_MAX 65535 /* bytes in one stored deflate block */
#define TYPE_MASK 0170000u

#define NO_NEWLINE "\\ No newline at end of file\n"

static const char zero_id[] = "0000000000000000000000000000000000000000";

/* Cuts out back to len, undoing the appends of a failed call. */
static void
out_restore(struct buf *out, size_t len)
{
	if (out->data != NULL && len <= out->len) {
		out->len = len;
		out->data[len] = '\0';
	}
}

bool
patch_is_binary(const unsigned char *data, size_t len)
{
	if (data == NULL)
		return false;
	return memchr(data, '\0', len < BINARY_SCAN ? len : BINARY_SCAN) !=
	    NULL;
}

/*
 * How git's quote_c_style treats a byte: 0 bare, the letter or character
 * that follows a backslash, or 1 for an octal escape.
 */
static int
quote_kind(unsigned char c)
{
	static const char letters[] = "abtnvfr"; /* 0x07 to 0x0d */

	if (c >= 0x07 && c <= 0x0d)
		return letters[c - 0x07];
	if (c == '"' || c == '\\')
		return c;
	if (c < 0x20 || c >= 0x7f)
		return 1;
	return 0;
}

static bool
needs_quote(const char *s)
{
	for (; *s != '\0'; s++)
		if (quote_kind((unsigned char)*s) != 0)
			return true;
	return false;
}

static int
append_escaped(struct buf *out, const char *s)
{
	int r = 0;

	while (*s != '\0' && r == 0) {
		size_t n = 0;
		int kind;

		while (s[n] != '\0' && quote_kind((unsigned char)s[n]) == 0)
			n++;
		r = buf_append(out, s, n);
		s += n;
		if (r < 0 || *s == '\0')
			break;
		kind = quote_kind((unsigned char)*s);
		if (kind == 1) {
			unsigned char c = (unsigned char)*s;

			r = buf_printf(out, "\\%o%o%o", (c >> 6) & 3,
			    (c >> 3) & 7, c & 7);
		} else {
			char esc[2] = { '\\', (char)kind };

			r = buf_append(out, esc, 2);
		}
		s++;
	}
	return r;
}

int
patch_quote_path(struct buf *out, const char *prefix, const char *path)
{
	size_t saved = out->len;
	int r;

	if (!needs_quote(prefix) && !needs_quote(path)) {
		r = buf_append(out, prefix, strlen(prefix));
		if (r == 0)
			r = buf_append(out, path, strlen(path));
	} else {
		r = buf_append(out, "\"", 1);
		if (r == 0)
			r = append_escaped(out, prefix);
		if (r == 0)
			r = append_escaped(out, path);
		if (r == 0)
			r = buf_append(out, "\"", 1);
	}
	if (r < 0)
		out_restore(out, saved);
	return r;
}

/* git's blob id: the SHA-1 of "blob <len>\0" and the data, in hex. */
static int
blob_id(const unsigned char *data, size_t len, char hex[41])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	char head[32];
	EVP_MD_CTX *ctx;
	int n, ok;

	n = snprintf(head, sizeof(head), "blob %zu", len);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -EINVAL;
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, head, (size_t)n + 1) == 1 &&
	    (len == 0 || EVP_DigestUpdate(ctx, data, len) == 1) &&
	    EVP_DigestFinal_ex(ctx, md, &md_len) == 1 && md_len == 20;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	for (unsigned int i = 0; i < md_len; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[40] = '\0';
	return 0;
}

/* --- Binary: "GIT binary patch" with literal hunks. --- */

static uint32_t
adler32(const unsigned char *p, size_t n)
{
	uint32_t a = 1, b = 0;

	while (n > 0) {
		/* 5552 bytes is the most that cannot overflow b. */
		size_t k = n < 5552 ? n : 5552;

		n -= k;
		while (k-- > 0) {
			a += *p++;
			b += a;
		}
		a %= 65521;
		b %= 65521;
	}
	return b << 16 | a;
}

/*
 * data as a zlib stream (RFC 1950) of stored deflate blocks (RFC 1951,
 * BTYPE 00): the 2-byte header, blocks of at most 65535 bytes each with
 * LEN and its complement, the last one flagged final, and the Adler-32
 * of the data, big-endian.
 */
static int
zlib_stored(const unsigned char *data, size_t len, unsigned char **ret,
    size_t *ret_len)
{
	size_t blocks = len == 0 ? 1 : (len - 1) / STORED_MAX + 1;
	size_t size, off = 0;
	unsigned char *z, *p;
	uint32_t sum;

	if (len > SIZE_MAX / 2)
		return -E2BIG;
	size = 2 + 5 * blocks + len + 4;
	z = malloc(size);
	if (z == NULL)
		return -ENOMEM;
	p = z;
	*p++ = 0x78; /* deflate, 32K window */
	*p++ = 0x01; /* no dictionary, fastest; (0x78 << 8 | 0x01) % 31 == 0 */
	for (size_t i = 0; i < blocks; i++) {
		size_t n = len - off < STORED_MAX ? len - off : STORED_MAX;

		*p++ = i + 1 == blocks ? 1 : 0; /* BFINAL, BTYPE 00 */
		*p++ = (unsigned char)(n & 0xff);
		*p++ = (unsigned char)(n >> 8);
		*p++ = (unsigned char)(~n & 0xff);
		*p++ = (unsigned char)((~n >> 8) & 0xff);
		if (n > 0)
			memcpy(p, data + off, n);
		p += n;
		off += n;
	}
	sum = adler32(data, len);
	*p++ = (unsigned char)(sum >> 24);
	*p++ = (unsigned char)(sum >> 16);
	*p++ = (unsigned char)(sum >> 8);
	*p++ = (unsigned char)sum;
	*ret = z;
	*ret_len = (size_t)(p - z);
	return 0;
}

/* git's base85: each 4 bytes (the last group padded with zeros) as 5
 * characters, most significant first. Writes 5 * ceil(n / 4) chars. */
static size_t
encode85(char *dst, const unsigned char *src, size_t n)
{
	static const char en85[] = "0123456789"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "abcdefghijklmnopqrstuvwxyz"
				   "!#$%&()*+-;<=>?@^_`{|}~";
	size_t w = 0;

	while (n > 0) {
		uint32_t acc = 0;

		for (int shift = 24; shift >= 0; shift -= 8) {
			acc |= (uint32_t)*src++ << shift;
			if (--n == 0)
				break;
		}
		for (int i = 4; i >= 0; i--) {
			dst[w + (size_t)i] = en85[acc % 85];
			acc /= 85;
		}
		w += 5;
	}
	return w;
}

/* "literal <len>", the base85 lines of the zlib stream, a blank line. */
static int
emit_literal(struct buf *out, const unsigned char *data, size_t len)
{
	_cleanup_free_ unsigned char *z = NULL;
	size_t z_len;
	int r;

	r = buf_printf(out, "literal %zu\n", len);
	if (r < 0)
		return r;
	r = zlib_stored(data, len, &z, &z_len);
	if (r < 0)
		return r;
	for (size_t off = 0; off < z_len; off += BASE85_LINE) {
		char line[1 + BASE85_LINE / 4 * 5 + 1];
		size_t n =
		    z_len - off < BASE85_LINE ? z_len - off : BASE85_LINE;
		size_t w;

		line[0] = n <= 26 ? (char)('A' + n - 1) : (char)('a' + n - 27);
		w = 1 + encode85(line + 1, z + off, n);
		line[w++] = '\n';
		r = buf_append(out, line, w);
		if (r < 0)
			return r;
	}
	return buf_append(out, "\n", 1);
}

/* --- Text: a line diff. --- */

struct line {
	const unsigned char *p;
	size_t len; /* with its '\n', when it has one */
	uint64_t hash;
};

struct side {
	struct line *lines;
	size_t *id; /* equal lines, equal ids */
	unsigned char *changed; /* outside the common subsequence */
	size_t n;
};

static void
side_free(struct side *s)
{
	free(s->lines);
	free(s->id);
	free(s->changed);
	*s = (struct side){ 0 };
}

static uint64_t
fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Lines are bytes up to and including '\n'; the last may lack it. */
static int
side_split(struct side *s, const unsigned char *data, size_t len)
{
	/* No data (an added or deleted file's other side): no lines, and
	 * no arithmetic on NULL. */
	const unsigned char *p = data, *end = data != NULL ? data + len : data;
	size_t n = 0, i = 0;

	for (const unsigned char *q = p; q < end; n++) {
		const unsigned char *nl = memchr(q, '\n', (size_t)(end - q));

		q = nl != NULL ? nl + 1 : end;
	}
	s->n = n;
	s->lines = calloc(n + 1, sizeof(*s->lines));
	s->id = calloc(n + 1, sizeof(*s->id));
	s->changed = calloc(n + 1, 1);
	if (s->lines == NULL || s->id == NULL || s->changed == NULL)
		return -ENOMEM;
	while (p < end) {
		const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
		const unsigned char *q = nl != NULL ? nl + 1 : end;

		s->lines[i].p = p;
		s->lines[i].len = (size_t)(q - p);
		s->lines[i].hash = fnv1a(p, s->lines[i].len);
		i++;
		p = q;
	}
	return 0;
}

/* Gives every distinct line of a and b a number, from 0 up; the count of
 * numbers in *ret_n. */
static int
number_lines(struct side *a, struct side *b, size_t *ret_n)
{
	_cleanup_free_ size_t *slots = NULL; /* 1 + the line's index in a|b */
	size_t total = a->n + b->n, cap = 16, mask, ids = 0;

	if (total > SIZE_MAX / 8)
		return -ENOMEM;
	while (cap < 2 * total)
		cap *= 2;
	mask = cap - 1;
	slots = calloc(cap, sizeof(*slots));
	if (slots == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < total; k++) {
		struct side *s = k < a->n ? a : b;
		size_t at = k < a->n ? k : k - a->n;
		const struct line *l = &s->lines[at];
		size_t i = (size_t)l->hash & mask;

		for (;; i = (i + 1) & mask) {
			size_t other = slots[i];
			const struct side *os;
			const struct line *o;

			if (other == 0) {
				slots[i] = k + 1;
				s->id[at] = ids++;
				break;
			}
			other--;
			os = other < a->n ? a : b;
			other = other < a->n ? other : other - a->n;
			o = &os->lines[other];
			if (o->hash == l->hash && o->len == l->len &&
			    memcmp(o->p, l->p, l->len) == 0) {
				s->id[at] = os->id[other];
				break;
			}
		}
	}
	*ret_n = ids;
	return 0;
}

/*
 * Myers' O(ND) diff in linear space ("An O(ND) Difference Algorithm and
 * Its Variations", 1986, section 4b): find a point on a shortest edit
 * path, split there, recurse. Diagonal k holds the points with x - y == k.
 */
struct myers {
	const size_t *a, *b;
	unsigned char *ca, *cb; /* changed flags, as a and b */
	long *vf, *vb; /* furthest x per diagonal, forward and backward */
	long voff; /* index of diagonal 0 in vf and vb */
	unsigned long cost;
};

#define NONE (-1L)

/*
 * A point (x, y) on a shortest path from (0, 0) to (n, m) for a and b,
 * neither end, where a[0] != b[0], a[n-1] != b[m-1] and n, m > 0.
 */
static int
myers_split(struct myers *my, const size_t *a, long n, const size_t *b, long m,
    long *ret_x, long *ret_y)
{
	long delta = n - m, dmax = (n + m + 1) / 2;
	long *vf = my->vf + my->voff, *vb = my->vb + my->voff;
	bool odd = (delta & 1) != 0;

	for (long k = -(m + dmax + 1); k <= n + dmax + 1; k++)
		vf[k] = vb[k] = NONE;
	my->cost += (unsigned long)(n + m + 2 * dmax);
	for (long d = 0; d <= dmax; d++) {
		my->cost += 2 * (unsigned long)d + 2;
		if (my->cost > MYERS_BUDGET)
			return -E2BIG;
		/* Forward, from (0, 0). */
		for (long k = -d; k <= d; k += 2) {
			long x = NONE, y, x0;

			if (d == 0) {
				x = 0;
			} else {
				/* From k - 1 by a deletion, from k + 1 by an
				 * insertion, whichever lies further. */
				if (vf[k - 1] != NONE && vf[k - 1] < n)
					x = vf[k - 1] + 1;
				if (vf[k + 1] != NONE &&
				    vf[k + 1] - (k + 1) < m && vf[k + 1] > x)
					x = vf[k + 1];
			}
			if (x == NONE) {
				vf[k] = NONE;
				continue;
			}
			x0 = x;
			y = x - k;
			while (x < n && y < m && a[x] == b[y]) {
				x++;
				y++;
			}
			my->cost += (unsigned long)(x - x0);
			vf[k] = x;
			if (odd && k >= delta - (d - 1) &&
			    k <= delta + (d - 1) && vb[k] != NONE &&
			    x >= vb[k]) {
				*ret_x = x;
				*ret_y = y;
				return 0;
			}
		}
		/* Backward, from (n, m). */
		for (long kk = -d; kk <= d; kk += 2) {
			long k = kk + delta, x = NONE, y, x0;

			if (d == 0) {
				x = n;
			} else {
				/* From k + 1 by a deletion, from k - 1 by an
				 * insertion, whichever lies further back. */
				if (vb[k + 1] != NONE && vb[k + 1] > 0)
					x = vb[k + 1] - 1;
				if (vb[k - 1] != NONE && vb[k - 1] - k >= 0 &&
				    (x == NONE || vb[k - 1] < x))
					x = vb[k - 1];
			}
			if (x == NONE) {
				vb[k] = NONE;
				continue;
			}
			x0 = x;
			y = x - k;
			while (x > 0 && y > 0 && a[x - 1] == b[y - 1]) {
				x--;
				y--;
			}
			my->cost += (unsigned long)(x0 - x);
			vb[k] = x;
			if (!odd && k >= -d && k <= d && vf[k] != NONE &&
			    vf[k] >= x) {
				*ret_x = x;
				*ret_y = y;
				return 0;
			}
		}
	}
	return -EINVAL; /* not reached: the paths meet by d == dmax */
}

static void
mark(unsigned char *changed, long from, long to)
{
	if (to > from)
		memset(changed + from, 1, (size_t)(to - from));
}

/* Marks the lines of a[o1, l1) and b[o2, l2) outside a longest common
 * subsequence of the two. */
static int
myers_diff(struct myers *my, long o1, long l1, long o2, long l2)
{
	for (;;) {
		long x, y;
		int r;

		while (o1 < l1 && o2 < l2 && my->a[o1] == my->b[o2]) {
			o1++;
			o2++;
		}
		while (o1 < l1 && o2 < l2 && my->a[l1 - 1] == my->b[l2 - 1]) {
			l1--;
			l2--;
		}
		if (o1 == l1 || o2 == l2) {
			mark(my->ca, o1, l1);
			mark(my->cb, o2, l2);
			return 0;
		}
		r = myers_split(my, my->a + o1, l1 - o1, my->b + o2, l2 - o2,
		    &x, &y);
		if (r < 0)
			return r;
		if ((x == 0 && y == 0) || (x == l1 - o1 && y == l2 - o2)) {
			/* Cannot happen; never loop on it. */
			mark(my->ca, o1, l1);
			mark(my->cb, o2, l2);
			return 0;
		}
		r = myers_diff(my, o1, o1 + x, o2, o2 + y);
		if (r < 0)
			return r;
		o1 += x;
		o2 += y;
	}
}

/*
 * Fills a->changed and b->changed. The common head and tail are left out
 * first, then the lines that have no equal on the other side (they are
 * changed whatever the alignment, and dropping them shortens the paths
 * Myers has to walk), as git's xdiff does.
 */
static int
diff_sides(struct side *a, struct side *b)
{
	_cleanup_free_ unsigned char *seen = NULL; /* per id: 1 in a, 2 in b */
	_cleanup_free_ size_t *ra = NULL, *rb = NULL, *ia = NULL, *ib = NULL;
	_cleanup_free_ unsigned char *ca = NULL, *cb = NULL;
	_cleanup_free_ long *vf = NULL, *vb = NULL;
	size_t head = 0, tail = 0, ea, eb, na = 0, nb = 0, nids;
	struct myers my = { 0 };
	long dmax, vsize;
	int r;

	r = number_lines(a, b, &nids);
	if (r < 0)
		return r;
	while (head < a->n && head < b->n && a->id[head] == b->id[head])
		head++;
	while (tail < a->n - head && tail < b->n - head &&
	    a->id[a->n - 1 - tail] == b->id[b->n - 1 - tail])
		tail++;
	ea = a->n - tail;
	eb = b->n - tail;
	if (ea - head > LONG_MAX / 4 || eb - head > LONG_MAX / 4)
		return -ENOMEM;

	seen = calloc(nids + 1, 1);
	ra = calloc(ea - head + 1, sizeof(*ra));
	ia = calloc(ea - head + 1, sizeof(*ia));
	rb = calloc(eb - head + 1, sizeof(*rb));
	ib = calloc(eb - head + 1, sizeof(*ib));
	if (seen == NULL || ra == NULL || ia == NULL || rb == NULL ||
	    ib == NULL)
		return -ENOMEM;
	for (size_t i = head; i < ea; i++)
		seen[a->id[i]] |= 1;
	for (size_t i = head; i < eb; i++)
		seen[b->id[i]] |= 2;
	for (size_t i = head; i < ea; i++) {
		if (seen[a->id[i]] == 3) {
			ra[na] = a->id[i];
			ia[na++] = i;
		} else {
			a->changed[i] = 1;
		}
	}
	for (size_t i = head; i < eb; i++) {
		if (seen[b->id[i]] == 3) {
			rb[nb] = b->id[i];
			ib[nb++] = i;
		} else {
			b->changed[i] = 1;
		}
	}

	if (na + nb > MYERS_MAX_LINES) {
		/* Too big to diff: the whole middle changes, still exact. */
		for (size_t i = 0; i < na; i++)
			a->changed[ia[i]] = 1;
		for (size_t i = 0; i < nb; i++)
			b->changed[ib[i]] = 1;
		return 0;
	}
	dmax = ((long)na + (long)nb + 1) / 2;
	vsize = (long)na + (long)nb + 2 * dmax + 3;
	ca = calloc(na + 1, 1);
	cb = calloc(nb + 1, 1);
	vf = calloc((size_t)vsize, sizeof(*vf));
	vb = calloc((size_t)vsize, sizeof(*vb));
	if (ca == NULL || cb == NULL || vf == NULL || vb == NULL)
		return -ENOMEM;
	my = (struct myers){
		.a = ra,
		.b = rb,
		.ca = ca,
		.cb = cb,
		.vf = vf,
		.vb = vb,
		.voff = (long)nb + dmax + 1,
	};
	r = myers_diff(&my, 0, (long)na, 0, (long)nb);
	if (r == -E2BIG) {
		/* Too costly: the whole middle changes, still exact. */
		memset(ca, 1, na);
		memset(cb, 1, nb);
	} else if (r < 0) {
		return r;
	}
	for (size_t i = 0; i < na; i++)
		a->changed[ia[i]] = ca[i];
	for (size_t i = 0; i < nb; i++)
		b->changed[ib[i]] = cb[i];
	return 0;
}

/* One run of changed lines: a's [a, a + na) became b's [b, b + nb). */
struct change {
	size_t a, na, b, nb;
};

static int
build_changes(const struct side *a, const struct side *b, struct change **ret,
    size_t *ret_n)
{
	struct change *ch;
	size_t i = 0, j = 0, n = 0;

	ch = calloc(a->n + b->n + 1, sizeof(*ch));
	if (ch == NULL)
		return -ENOMEM;
	while (i < a->n || j < b->n) {
		if ((i < a->n && a->changed[i]) ||
		    (j < b->n && b->changed[j])) {
			struct change *c = &ch[n++];

			c->a = i;
			c->b = j;
			while (i < a->n && a->changed[i])
				i++;
			while (j < b->n && b->changed[j])
				j++;
			c->na = i - c->a;
			c->nb = j - c->b;
		} else if (i < a->n && j < b->n && a->id[i] == b->id[j]) {
			i++;
			j++;
		} else {
			free(ch);
			return -EINVAL; /* the unchanged lines do not pair */
		}
	}
	*ret = ch;
	*ret_n = n;
	return 0;
}

/* One line with its prefix, and git's marker when it has no '\n'. */
static int
emit_line(struct buf *out, char prefix, const struct line *l)
{
	int r = buf_append(out, &prefix, 1);

	if (r == 0)
		r = buf_append(out, l->p, l->len);
	if (r == 0 && (l->len == 0 || l->p[l->len - 1] != '\n'))
		r = buf_append(out, "\n" NO_NEWLINE,
		    sizeof("\n" NO_NEWLINE) - 1);
	return r;
}

/* git's default function line (xdiff's def_ff): one that starts with a
 * letter, '_' or '$', cut to 80 bytes and stripped of trailing space. */
static bool
func_line(const struct line *l, size_t *ret_len)
{
	unsigned char c;
	size_t n;

	if (l->len == 0)
		return false;
	c = l->p[0];
	if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		c == '$'))
		return false;
	n = l->len < FUNC_MAX ? l->len : FUNC_MAX;
	while (n > 0 &&
	    (l->p[n - 1] == ' ' || l->p[n - 1] == '\t' || l->p[n - 1] == '\n' ||
		l->p[n - 1] == '\r'))
		n--;
	*ret_len = n;
	return true;
}

/* "-s,c" or "+s,c" as xdiff writes a range: 1-based start, the line
 * before when empty, the count left out when it is 1. */
static int
range(char *dst, size_t size, char sign, size_t start, size_t count)
{
	if (count == 1)
		return snprintf(dst, size, "%c%zu", sign, start + 1);
	return snprintf(dst, size, "%c%zu,%zu", sign,
	    count == 0 ? start : start + 1, count);
}

static int
emit_hunk_header(struct buf *out, size_t s1, size_t c1, size_t s2, size_t c2,
    const struct line *func, size_t func_len)
{
	char head[HUNK_HEADER_MAX];
	int n, r;

	n = snprintf(head, sizeof(head), "@@ ");
	n += range(head + n, sizeof(head) - (size_t)n, '-', s1, c1);
	n += snprintf(head + n, sizeof(head) - (size_t)n, " ");
	n += range(head + n, sizeof(head) - (size_t)n, '+', s2, c2);
	n += snprintf(head + n, sizeof(head) - (size_t)n, " @@");
	if (n < 0 || (size_t)n >= sizeof(head))
		return -EINVAL;
	r = buf_append(out, head, (size_t)n);
	if (r == 0 && func != NULL && func_len > 0) {
		/* xdiff cuts the function line to fit its 128 bytes. */
		size_t room = sizeof(head) - (size_t)n - 2;

		r = buf_append(out, " ", 1);
		if (r == 0)
			r = buf_append(out, func->p,
			    func_len < room ? func_len : room);
	}
	if (r == 0)
		r = buf_append(out, "\n", 1);
	return r;
}

/* The hunks: changes closer than 2 * CONTEXT unchanged lines share one. */
static int
emit_hunks(struct buf *out, const struct side *a, const struct side *b,
    const struct change *ch, size_t n)
{
	const struct line *func = NULL;
	size_t func_len = 0, searched = 0; /* a's lines [0, searched) seen */
	int r;

	for (size_t i = 0; i < n;) {
		size_t j = i, s1, s2, e1, lead, trail, pa, pb;

		while (j + 1 < n &&
		    ch[j + 1].a - (ch[j].a + ch[j].na) <= 2 * CONTEXT)
			j++;
		lead = ch[i].a - (i > 0 ? ch[i - 1].a + ch[i - 1].na : 0);
		lead = lead < CONTEXT ? lead : CONTEXT;
		s1 = ch[i].a - lead;
		s2 = ch[i].b - lead;
		trail = a->n - (ch[j].a + ch[j].na);
		if (b->n - (ch[j].b + ch[j].nb) < trail)
			trail = b->n - (ch[j].b + ch[j].nb);
		trail = trail < CONTEXT ? trail : CONTEXT;
		e1 = ch[j].a + ch[j].na + trail;

		/* The last function line above the hunk, as xdiff finds it:
		 * the nearest one not yet searched, else the one before. */
		for (size_t l = s1; l > searched; l--) {
			size_t len;

			if (func_line(&a->lines[l - 1], &len)) {
				func = &a->lines[l - 1];
				func_len = len;
				break;
			}
		}
		searched = s1 > searched ? s1 : searched;

		r = emit_hunk_header(out, s1, e1 - s1, s2,
		    ch[j].b + ch[j].nb + trail - s2, func, func_len);
		if (r < 0)
			return r;
		pa = s1;
		pb = s2;
		for (size_t k = i; k <= j; k++) {
			for (; pa < ch[k].a; pa++, pb++)
				if ((r = emit_line(out, ' ', &b->lines[pb])) <
				    0)
					return r;
			for (; pa < ch[k].a + ch[k].na; pa++)
				if ((r = emit_line(out, '-', &a->lines[pa])) <
				    0)
					return r;
			for (; pb < ch[k].b + ch[k].nb; pb++)
				if ((r = emit_line(out, '+', &b->lines[pb])) <
				    0)
					return r;
		}
		for (; pa < e1; pa++, pb++)
			if ((r = emit_line(out, ' ', &b->lines[pb])) < 0)
				return r;
		i = j + 1;
	}
	return 0;
}

static int
emit_text_diff(struct buf *out, const unsigned char *old, size_t old_len,
    const unsigned char *new, size_t new_len)
{
	struct side a = { 0 }, b = { 0 };
	_cleanup_free_ struct change *ch = NULL;
	size_t n;
	int r;

	r = side_split(&a, old, old_len);
	if (r == 0)
		r = side_split(&b, new, new_len);
	if (r == 0)
		r = diff_sides(&a, &b);
	if (r == 0)
		r = build_changes(&a, &b, &ch, &n);
	if (r == 0)
		r = emit_hunks(out, &a, &b, ch, n);
	side_free(&a);
	side_free(&b);
	return r;
}

/* --- One file. --- */

static bool
mode_valid(unsigned mode)
{
	return mode == PATCH_MODE_FILE || mode == PATCH_MODE_EXEC ||
	    mode == PATCH_MODE_SYMLINK;
}

static bool
side_valid(const char *path, unsigned mode, const unsigned char *data,
    size_t len)
{
	if (path == NULL)
		return mode == 0 && len == 0;
	return mode_valid(mode) && path_is_safe_relative(path) &&
	    (data != NULL || len == 0);
}

/* "--- a/x" or "+++ b/x", or /dev/null; git ends a name holding a space
 * with a tab, so that patch(1) finds where it stops. */
static int
emit_label(struct buf *out, const char *sign, const char *prefix,
    const char *path)
{
	int r = buf_printf(out, "%s ", sign);

	if (r < 0)
		return r;
	if (path == NULL)
		return buf_append(out, "/dev/null\n", 10);
	r = patch_quote_path(out, prefix, path);
	if (r == 0 && strchr(path, ' ') != NULL)
		r = buf_append(out, "\t", 1);
	if (r == 0)
		r = buf_append(out, "\n", 1);
	return r;
}

/* One "diff --git" section; f's two sides are of the same type, or one
 * of them is absent. */
static int
emit_section(struct buf *out, const struct patch_file *f)
{
	const char *a_name = f->old_path != NULL ? f->old_path : f->new_path;
	const char *b_name = f->new_path != NULL ? f->new_path : f->old_path;
	const unsigned char *old = f->old_data, *new = f->new_data;
	size_t old_len = f->old_len, new_len = f->new_len;
	bool rename = strcmp(a_name, b_name) != 0;
	/* Absent reads as empty, but an empty file and no file have
	 * different ids: only content on both sides can be the same. */
	bool empty_both = old_len == 0 && new_len == 0;
	bool same = old_len == new_len &&
	    (old_len == 0 || memcmp(old, new, old_len) == 0) &&
	    f->old_path != NULL && f->new_path != NULL;
	char old_id[41], new_id[41];
	int r;

	if (same && f->old_mode == f->new_mode && !rename)
		return 0;
	memcpy(old_id, zero_id, sizeof(old_id));
	memcpy(new_id, zero_id, sizeof(new_id));
	if (f->old_path != NULL && (r = blob_id(old, old_len, old_id)) < 0)
		return r;
	if (f->new_path != NULL && (r = blob_id(new, new_len, new_id)) < 0)
		return r;

	if ((r = buf_append(out, "diff --git ", 11)) < 0 ||
	    (r = patch_quote_path(out, "a/", a_name)) < 0 ||
	    (r = buf_append(out, " ", 1)) < 0 ||
	    (r = patch_quote_path(out, "b/", b_name)) < 0 ||
	    (r = buf_append(out, "\n", 1)) < 0)
		return r;
	if (f->old_path == NULL)
		r = buf_printf(out, "new file mode %06o\n", f->new_mode);
	else if (f->new_path == NULL)
		r = buf_printf(out, "deleted file mode %06o\n", f->old_mode);
	else if (f->old_mode != f->new_mode)
		r = buf_printf(out, "old mode %06o\nnew mode %06o\n",
		    f->old_mode, f->new_mode);
	if (r < 0)
		return r;
	if (rename) {
		if ((r = buf_append(out, "rename from ", 12)) < 0 ||
		    (r = patch_quote_path(out, "", a_name)) < 0 ||
		    (r = buf_append(out, "\nrename to ", 11)) < 0 ||
		    (r = patch_quote_path(out, "", b_name)) < 0 ||
		    (r = buf_append(out, "\n", 1)) < 0)
			return r;
	}
	if (same)
		return 0; /* a mode change or a rename alone: no index line */
	r = buf_printf(out, "index %s..%s", old_id, new_id);
	if (r == 0 && f->old_mode == f->new_mode)
		r = buf_printf(out, " %06o", f->old_mode);
	if (r == 0)
		r = buf_append(out, "\n", 1);
	if (r < 0 || empty_both)
		return r; /* an empty file added or deleted: no hunk */

	if (patch_is_binary(old, old_len) || patch_is_binary(new, new_len)) {
		/* Forward, then reverse, as git writes them. */
		r = buf_append(out, "GIT binary patch\n", 17);
		if (r == 0)
			r = emit_literal(out, new, new_len);
		if (r == 0)
			r = emit_literal(out, old, old_len);
		return r;
	}
	if ((r = emit_label(out, "---", "a/", f->old_path)) < 0 ||
	    (r = emit_label(out, "+++", "b/", f->new_path)) < 0)
		return r;
	return emit_text_diff(out, old, old_len, new, new_len);
}

int
patch_write_file(struct buf *out, const struct patch_file *f)
{
	size_t saved = out->len;
	int r;

	if (f == NULL || (f->old_path == NULL && f->new_path == NULL) ||
	    !side_valid(f->old_path, f->old_mode, f->old_data, f->old_len) ||
	    !side_valid(f->new_path, f->new_mode, f->new_data, f->new_len))
		return -EINVAL;
	if (f->old_path != NULL && f->new_path != NULL &&
	    (f->old_mode & TYPE_MASK) != (f->new_mode & TYPE_MASK)) {
		/* A file became a symlink or the reverse: git writes the
		 * deletion and then the creation. */
		struct patch_file gone = {
			.old_path = f->old_path,
			.old_mode = f->old_mode,
			.old_data = f->old_data,
			.old_len = f->old_len,
		};
		struct patch_file born = {
			.new_path = f->new_path,
			.new_mode = f->new_mode,
			.new_data = f->new_data,
			.new_len = f->new_len,
		};

		r = emit_section(out, &gone);
		if (r == 0)
			r = emit_section(out, &born);
	} else {
		r = emit_section(out, f);
	}
	if (r < 0)
		out_restore(out, saved);
	return r;
}
