/*
 * The text half of a patch: the hunks of a line diff between two
 * versions of a file, as `git diff` draws them: three lines of context,
 * changes closer than six lines in one hunk, git's hunk headers with
 * their function lines, "\\ No newline at end of file" where it applies.
 * The diff is Myers' O(ND) in linear space with a cost budget (past it,
 * the changed middle becomes one hunk, still exact), so an ambiguous
 * change may be drawn differently from git's heuristics.
 */
#include "diff.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT 3 /* lines around each change, git's default */
#define FUNC_MAX 80 /* bytes of a function line in a hunk header */
#define HUNK_HEADER_MAX 128 /* git's buffer for a whole hunk header */
#define MYERS_BUDGET 50000000UL /* steps before the diff gives up */
#define MYERS_MAX_LINES 4000000 /* past this, no diff: 32 bytes a line */

#define NO_NEWLINE "\\ No newline at end of file\n"

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

int
diff_write(struct buf *out, const unsigned char *old, size_t old_len,
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
