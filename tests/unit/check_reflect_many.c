/*
 * One scan for many values (proxy/inject.c inject_scanner_join,
 * proxy/reflect.c): a job's set of up to 288 values (its own 32 and 256
 * borrowed) is scanned by one scanner joined from all of them, each
 * answer byte looked at once, instead of a chain of one scanner a value.
 * Differential: over random and adversarial values (shared prefixes
 * such as "sk_live_", one value a slice of another, short ones, one
 * holding a line break) and answers (the values raw, in upper case,
 * %-encoded, in hex, base64 at each offset, JSON's \u00XX, slices of
 * them, noise), cut at random, plain and chunked, the joined scan must
 * redact exactly the union of what each value's own scanner redacts on
 * the raw answer, each byte with the filler of the lowest value that
 * covers it, count each value's runs as those bytes' owners give them,
 * and, against the old chain kept here as the reference, redact at
 * least what it does, and the same bytes with the same counts where no
 * two values cover one byte. A scan-only value's match ends the answer
 * (-EPERM) where and only where a byte it owns would go, nothing of it
 * out, as the chain's did. The set's joined scanner is made again after
 * a put from the one before, and an answer's scan is one stage.
 */
#include "inject.h"
#include "reflect.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VMAX (REFLECT_VALUES_MAX + REFLECT_BORROWED_MAX)
#define TEXT_MAX 6000

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n == 0 ? 0 : (uint32_t)(rng % n);
}

struct values {
	char v[VMAX][96];
	size_t len[VMAX];
	bool trip[VMAX];
	size_t n;
};

static const char alnum[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/* n values: random tokens; adversarial ones mostly behind a common
 * prefix, some slices of others, a few short, one now and then with a
 * line break. None holds a filler byte (the chain's fillers would be its
 * later stages' text). */
static void
make_values(struct values *vs, size_t n, bool trips, bool adv)
{
	static const char *const prefixes[] = { "sk_live_", "oat_", "ghp_", "",
		"xoxb-", "sk_live_", "github_pat_" };

	vs->n = n;
	for (size_t i = 0; i < n; i++) {
		char *v = vs->v[i];
		size_t l = 0;
		uint32_t kind = adv ? rnd(20) : 20;
		if (kind == 0 && i > 0) {
			/* A slice of one before. */
			size_t j = rnd((uint32_t)i), from;
			size_t sl = 8 + rnd(12);
			if (sl > vs->len[j])
				sl = vs->len[j];
			from = rnd((uint32_t)(vs->len[j] - sl + 1));
			memcpy(v, vs->v[j] + from, sl);
			l = sl;
		} else if (kind == 1) {
			/* Short: matched whole. */
			for (l = 0; l < 4 + rnd(4); l++)
				v[l] = alnum[rnd(62)];
		} else {
			const char *p = adv ? prefixes[rnd(7)] : "";
			l = strlen(p);
			memcpy(v, p, l);
			for (size_t k = 12 + rnd(30); k > 0; k--)
				v[l++] = alnum[rnd(62)];
			if (kind == 2)
				v[l / 2] = '\n';
		}
		v[l] = '\0';
		vs->len[i] = l;
		vs->trip[i] = trips && rnd(4) == 0;
		/* A value twice is one in a set, and so are a value and its
		 * tail but for 7 bytes or fewer (its two cuts, reflect.c):
		 * made anew. */
		for (size_t j = 0; j < i; j++) {
			size_t a = vs->len[j] > l ? vs->len[j] : l;
			size_t b = vs->len[j] > l ? l : vs->len[j];
			const char *la = vs->len[j] > l ? vs->v[j] : v;
			const char *sb = vs->len[j] > l ? v : vs->v[j];
			if (a - b <= 7 && memcmp(la + a - b, sb, b) == 0) {
				i--;
				break;
			}
		}
	}
}

static size_t
put_hex(char *o, unsigned char c, bool upper, const char *pre)
{
	static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
	const char *d = upper ? up : lo;
	size_t n = strlen(pre);

	memcpy(o, pre, n);
	o[n++] = d[c >> 4];
	o[n++] = d[c & 15];
	return n;
}

static size_t
put_base64(char *o, const char *v, size_t len, size_t off)
{
	static const char a[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char in[200];
	size_t n = 0, m = off + len;

	memset(in, 'Q', off);
	memcpy(in + off, v, len);
	for (size_t i = 0; i < m; i += 3) {
		unsigned x = (unsigned)in[i] << 16 |
		    (i + 1 < m ? (unsigned)in[i + 1] << 8 : 0) |
		    (i + 2 < m ? in[i + 2] : 0);
		o[n++] = a[x >> 18 & 63];
		o[n++] = a[x >> 12 & 63];
		o[n++] = i + 1 < m ? a[x >> 6 & 63] : '=';
		o[n++] = i + 2 < m ? a[x & 63] : '=';
	}
	return n;
}

/* An answer: noise and the values written many ways, whole and sliced;
 * its length. */
static size_t
make_text(const struct values *vs, char *t, size_t cap)
{
	static const char *const noise[] = { " ", "\r\n", "{\"key\": \"",
		"\", ", "&amp;", "%2F", "\\u00e9", "\\/", "=\r\n", "sk_live_",
		"oat_", "Authorization: Bearer ", "0123456789abcdef", "&#x41;",
		"lorem ipsum ", "\n" };
	size_t n = 0;

	while (n + 300 < cap) {
		uint32_t what = rnd(10);
		if (what < 8 || vs->n == 0) {
			const char *s = noise[rnd(16)];
			memcpy(t + n, s, strlen(s));
			n += strlen(s);
			if (rnd(3) == 0)
				t[n++] = alnum[rnd(62)];
			continue;
		}
		size_t i = rnd((uint32_t)vs->n), from = 0, len = vs->len[i];
		const char *v = vs->v[i];
		if (rnd(3) == 0) {
			/* A slice: of 8 bytes or more is redacted, less not. */
			size_t sl = 5 + rnd(10);
			if (sl < len) {
				from = rnd((uint32_t)(len - sl + 1));
				len = sl;
			}
		}
		switch (rnd(7)) {
		case 0:
		case 1:
			memcpy(t + n, v + from, len);
			n += len;
			break;
		case 2:
			for (size_t k = 0; k < len; k++) {
				char c = v[from + k];
				t[n++] =
				    c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
			}
			break;
		case 3:
			for (size_t k = 0; k < len; k++)
				n += put_hex(t + n, (unsigned char)v[from + k],
				    rnd(2), "%");
			break;
		case 4:
			for (size_t k = 0; k < len; k++)
				n += put_hex(t + n, (unsigned char)v[from + k],
				    false, "");
			break;
		case 5:
			n += put_base64(t + n, v + from, len, rnd(3));
			break;
		default:
			for (size_t k = 0; k < len; k++)
				if (rnd(2) == 0)
					n += put_hex(t + n,
					    (unsigned char)v[from + k], false,
					    "\\u00");
				else
					t[n++] = v[from + k];
			break;
		}
	}
	return n;
}

/* text as a chunked body of random chunk sizes: into o, its length. */
static size_t
chunked(const char *text, size_t n, char *o)
{
	size_t m = 0;

	for (size_t at = 0; at < n;) {
		size_t k = 1 + rnd(200);
		if (k > n - at)
			k = n - at;
		m += (size_t)snprintf(o + m, 16, "%zx\r\n", k);
		memcpy(o + m, text + at, k);
		m += k;
		memcpy(o + m, "\r\n", 2);
		m += 2;
		at += k;
	}
	memcpy(o + m, "0\r\n\r\n", 5);
	return m + 5;
}

/* What value v's own scanner redacts of t (whole): mask[k] set. */
static void
own_mask(const char *v, size_t vl, const char *t, size_t n, bool chunk,
    uint8_t *mask)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(1 << 20);

	ck_assert_int_eq(inject_scanner_init(&s, v, vl), 0);
	if (chunk)
		inject_scanner_chunked(&s);
	ck_assert_int_eq(inject_scanner_feed(&s, t, n, &out, NULL), 0);
	ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
	ck_assert_uint_eq(out.len, n);
	for (size_t k = 0; k < n; k++)
		mask[k] = out.data[k] != t[k];
	inject_scanner_free(&s);
	buf_free(&out);
}

/* The old chain, one scanner a value (reflect.c before the join): t cut
 * at random, into out; each value's runs into found; -EPERM when a trip
 * value's stage matched (out then what went before), else 0. */
static int
old_chain(const struct values *vs, const char *t, size_t n, bool chunk,
    struct buf *out, size_t *found)
{
	struct inject_scanner *s = calloc(vs->n, sizeof(*s));
	struct buf tmp[2];
	int rc = 0;

	for (size_t i = 0; i < vs->n; i++) {
		ck_assert_int_eq(inject_scanner_init(&s[i], vs->v[i],
				     vs->len[i]),
		    0);
		if (chunk)
			inject_scanner_chunked(&s[i]);
	}
	for (size_t at = 0; rc == 0 && at <= n;) {
		size_t k = at == n ? 0 : 1 + rnd(700);
		bool flush = at == n;
		if (k > n - at)
			k = n - at;
		const char *p = t + at;
		size_t m = k, before = out->len;
		buf_init(&tmp[0], 1 << 20);
		buf_init(&tmp[1], 1 << 20);
		for (size_t i = 0; rc == 0 && i < vs->n; i++) {
			struct buf *dst = i + 1 == vs->n ? out : &tmp[i % 2];
			size_t f0 = s[i].found;
			if (dst != out)
				buf_reset(dst);
			if (m > 0)
				ck_assert_int_eq(inject_scanner_feed(&s[i], p,
						     m, dst, NULL),
				    0);
			if (flush)
				ck_assert_int_eq(inject_scanner_flush(&s[i],
						     dst),
				    0);
			if (s[i].found > f0 && vs->trip[i])
				rc = -EPERM;
			p = dst->data;
			m = dst == out ? 0 : dst->len;
		}
		buf_free(&tmp[0]);
		buf_free(&tmp[1]);
		if (rc < 0)
			out->len = before;
		if (flush)
			break;
		at += k;
	}
	for (size_t i = 0; i < vs->n; i++) {
		found[i] = s[i].found;
		inject_scanner_free(&s[i]);
	}
	free(s);
	return rc;
}

/* The joined scan of set r over t cut at random: into out, -EPERM or 0
 * as reflect_scan_feed says; each value's runs into found. */
static int
joined(struct reflect_scan *r, const struct values *vs, const char *t, size_t n,
    struct buf *out, size_t *found)
{
	int rc = 0;

	for (size_t at = 0; rc == 0 && at < n;) {
		size_t k = 1 + rnd(700);
		if (k > n - at)
			k = n - at;
		rc = reflect_scan_feed(r, t + at, k, out, NULL);
		at += k;
	}
	if (rc == 0)
		rc = reflect_scan_flush(r, out);
	for (size_t i = 0; i < vs->n; i++) {
		const char *name;
		found[i] = reflect_scan_news(r, i, &name);
	}
	ck_assert_uint_eq(r->unread, 0);
	return rc;
}

/* One trial: nv values, an answer, both scans, the oracles. */
static void
trial(size_t nv, bool trips, bool chunk, bool adv)
{
	static struct values vs;
	static char text[TEXT_MAX], body[2 * TEXT_MAX];
	static uint8_t masks[VMAX][2 * TEXT_MAX];
	static size_t jfound[VMAX], cfound[VMAX], runs[VMAX];
	static int owner[2 * TEXT_MAX];
	struct reflect_set set = { 0 };
	struct reflect_scan r;
	struct buf jo = BUF_INIT(1 << 22), co = BUF_INIT(1 << 22);
	const char *t = text;
	size_t n;
	bool overlap = false;

	make_values(&vs, nv, trips, adv);
	n = make_text(&vs, text, 1000 + rnd(TEXT_MAX - 1000));
	if (chunk) {
		n = chunked(text, n, body);
		t = body;
	}
	for (size_t i = 0; i < nv; i++) {
		/* Past the job's own 32, borrowed, then (not a trip) put for
		 * use: the job's own, as a set lets one become. */
		int rc = i < REFLECT_VALUES_MAX && !vs.trip[i]
		    ? reflect_set_put(&set, "own", 1, vs.v[i], vs.len[i], 0, 0)
		    : reflect_set_put_borrowed(&set, "iss", 0, vs.v[i],
			  vs.len[i], 0, 0);
		ck_assert_int_eq(rc, 1);
		if (!vs.trip[i] && i >= REFLECT_VALUES_MAX)
			ck_assert_int_eq(reflect_set_put(&set, "iss", 0,
					     vs.v[i], vs.len[i], 0, 0),
			    0);
		own_mask(vs.v[i], vs.len[i], t, n, chunk, masks[i]);
	}
	ck_assert_int_eq(reflect_scan_init(&r, &set), 0);
	ck_assert_uint_eq(reflect_scan_stages(&r), 1);
	if (chunk)
		reflect_scan_chunked(&r);
	/* Each byte's owner: the lowest value whose own scan covers it. */
	int first_trip = -1;
	for (size_t k = 0; k < n; k++) {
		size_t cover = 0;
		owner[k] = -1;
		for (size_t i = 0; i < nv; i++)
			if (masks[i][k]) {
				cover++;
				if (owner[k] < 0)
					owner[k] = (int)i;
			}
		overlap |= cover > 1;
		if (owner[k] >= 0 && vs.trip[owner[k]] && first_trip < 0)
			first_trip = (int)k;
	}
	int jrc = joined(&r, &vs, t, n, &jo, jfound);
	int crc = old_chain(&vs, t, n, chunk, &co, cfound);
	if (first_trip < 0) {
		/* Exactly the union of the values' own scans. */
		ck_assert_int_eq(jrc, 0);
		ck_assert_uint_eq(jo.len, n);
		memset(runs, 0, nv * sizeof(*runs));
		int run = -1;
		for (size_t k = 0; k < n; k++) {
			if (owner[k] >= 0) {
				char f = set.joined->t->v[owner[k]].filler;
				ck_assert_msg(jo.data[k] == f,
				    "byte %zu: %02x, not value %d's filler "
				    "(%zu values)",
				    k, (unsigned char)jo.data[k], owner[k], nv);
				if (run != owner[k])
					runs[owner[k]]++;
				run = owner[k];
			} else {
				ck_assert_msg(jo.data[k] == t[k],
				    "byte %zu redacted, no value's own scan "
				    "covers it (%zu values)",
				    k, nv);
				if (!chunk && t[k] != '\r' && t[k] != '\n')
					run = -1;
			}
		}
		for (size_t i = 0; !chunk && i < nv; i++)
			ck_assert_msg(jfound[i] == runs[i],
			    "value %zu: %zu runs counted, %zu owned", i,
			    jfound[i], runs[i]);
		/* The chain: no more redacted; with no byte of two values,
		 * the same. */
		ck_assert_int_eq(crc, 0);
		ck_assert_uint_eq(co.len, n);
		for (size_t k = 0; k < n; k++)
			ck_assert_msg(co.data[k] == t[k] || jo.data[k] != t[k],
			    "byte %zu: the chain redacted it, the join not", k);
		if (!overlap) {
			ck_assert_mem_eq(jo.data, co.data, n);
			for (size_t i = 0; i < nv; i++)
				ck_assert_uint_eq(jfound[i], cfound[i]);
		}
	} else {
		/* Ended where a scan-only value's byte would go: what went
		 * before is the answer redacted, none of its bytes. */
		ck_assert_int_eq(jrc, -EPERM);
		ck_assert_uint_le(jo.len, (size_t)first_trip);
		for (size_t k = 0; k < jo.len; k++)
			ck_assert(owner[k] >= 0 ? jo.data[k] != t[k]
						: jo.data[k] == t[k]);
		if (!overlap)
			ck_assert_int_eq(crc, -EPERM);
	}
	reflect_scan_free(&r);
	reflect_set_clear(&set);
	buf_free(&jo);
	buf_free(&co);
}

START_TEST(the_joined_scan_redacts_what_each_values_own_would)
{
	static const size_t sizes[] = { 1, 2, 3, 5, 8, 17, 40 };

	for (size_t k = 0; k < 70; k++)
		trial(sizes[k % 7], k % 3 == 2, k % 4 == 3, k % 2 == 1);
}
END_TEST

/* A full set: the job's own 32 and 256 borrowed, one stage. */
START_TEST(a_full_set_is_one_stage_and_redacts_the_same)
{
	trial(VMAX, false, false, false);
	trial(VMAX, false, false, true);
	trial(VMAX, true, false, true);
	trial(VMAX / 2, false, true, false);
}
END_TEST

/* The joined scanner is made again after a put, from the one before:
 * a value replaced (dead at its issuer) is no longer scanned for, the
 * new one is, an answer begun before keeps its own. */
START_TEST(a_put_makes_the_joined_scanner_again)
{
	struct reflect_set set = { 0 };
	struct reflect_scan before, after;
	struct buf o1 = BUF_INIT(4096), o2 = BUF_INIT(4096);
	char v[40], v9[40] = "";
	const char *name;

	for (size_t i = 0; i < REFLECT_BORROWED_MAX; i++) {
		memcpy(v, "oat_", 4);
		for (size_t k = 4; k < 24; k++)
			v[k] = alnum[rnd(62)];
		v[24] = '\0';
		if (i == 9)
			memcpy(v9, v, sizeof(v));
		ck_assert_int_eq(reflect_set_put_borrowed(&set, "iss", 0, v,
				     strlen(v), 0, i == 9 ? 100 : 0),
		    1);
	}
	ck_assert_int_eq(reflect_scan_init(&before, &set), 0);
	const struct inject_table *t = set.joined->t;
	ck_assert_int_eq(reflect_scan_init(&after, &set), 0);
	ck_assert_ptr_eq(set.joined->t, t); /* not made again */
	reflect_scan_free(&after);
	/* Value 9 dead at 100: its place goes to a new one. */
	ck_assert_int_eq(reflect_set_put_borrowed(&set, "iss", 0,
			     "oat_brand_new_value_0", 21, 101, 0),
	    1);
	ck_assert_int_eq(reflect_set_put(&set, "own", 1, "sk_live_mine_0123",
			     17, 101, 0),
	    1);
	ck_assert_int_eq(reflect_scan_init(&after, &set), 0);
	ck_assert_ptr_ne(set.joined->t, t);
	ck_assert_uint_eq(reflect_scan_stages(&after), 1);
	ck_assert_uint_eq(after.n, REFLECT_BORROWED_MAX + 1);
	ck_assert_int_eq(reflect_scan_feed(&after, v9, strlen(v9), &o2, NULL),
	    0);
	ck_assert_int_eq(reflect_scan_feed(&after, " sk_live_mine_0123 ", 19,
			     &o2, NULL),
	    0);
	ck_assert_int_eq(reflect_scan_flush(&after, &o2), 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&o2), v9));
	ck_assert_ptr_null(strstr(buf_str(&o2), "mine_0123"));
	ck_assert_uint_eq(reflect_scan_news(&after, REFLECT_BORROWED_MAX,
			      &name),
	    1);
	ck_assert_str_eq(name, "own");
	ck_assert_int_eq(reflect_scan_feed(&after, "oat_brand_new_value_0", 21,
			     &o2, NULL),
	    -EPERM);
	/* The answer begun before: the old value trips, the new is not
	 * its. */
	ck_assert_int_eq(reflect_scan_feed(&before, "x oat_brand_new_value_0 ",
			     24, &o1, NULL),
	    0);
	ck_assert_int_eq(reflect_scan_feed(&before, v9, strlen(v9), &o1, NULL),
	    -EPERM);
	ck_assert_uint_eq(reflect_scan_news(&before, 9, &name), 1);
	ck_assert_str_eq(name, "iss");
	reflect_scan_free(&before);
	reflect_scan_free(&after);
	reflect_set_clear(&set);
	buf_free(&o1);
	buf_free(&o2);
}
END_TEST

/* A shorter value's key is its bytes and zeros: where a value holds
 * NULs the two are equal keys, and the lower value still owns the match
 * (fuzz_inject's joined-nul-owner: the shorter one, sorted first, was
 * given it, so a scan-only value's NULs went as the job's own, redacted,
 * not tripped). */
START_TEST(equal_keys_of_a_short_value_and_nuls_go_to_the_lower)
{
	static const char scan_only[] = "tok\0\0\0\0\0\0\0\0\0_end";
	struct reflect_set set = { 0 };
	struct reflect_scan r;
	struct buf out = BUF_INIT(4096);
	char text[32] = "a ";

	ck_assert_int_eq(reflect_set_put_borrowed(&set, "iss", 0, scan_only,
			     sizeof(scan_only) - 1, 0, 0),
	    1);
	ck_assert_int_eq(reflect_set_put(&set, "own", 1, "\0\0\0\0\0", 5, 0, 0),
	    1);
	ck_assert_int_eq(reflect_scan_init(&r, &set), 0);
	/* Eight NULs: a run of the scan-only value (and the own one). */
	int rc = reflect_scan_feed(&r, text, 12, &out, NULL);
	if (rc == 0)
		rc = reflect_scan_flush(&r, &out);
	ck_assert_int_eq(rc, -EPERM);
	ck_assert_uint_le(out.len, 2);
	reflect_scan_free(&r);
	reflect_set_clear(&set);
	buf_free(&out);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reflect_many");
	TCase *tc = tcase_create("many");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, the_joined_scan_redacts_what_each_values_own_would);
	tcase_add_test(tc, a_full_set_is_one_stage_and_redacts_the_same);
	tcase_add_test(tc, a_put_makes_the_joined_scanner_again);
	tcase_add_test(tc,
	    equal_keys_of_a_short_value_and_nuls_go_to_the_lower);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
