/*
 * bench_scan: the proxy's reflection scanner (proxy/inject.c) alone, on
 * the answer it sees most: a 1 MiB JSON body (records with numbers, URLs
 * with JSON's "\/", an HTML-escaped field, a percent-encoded query) fed
 * in 16 KiB reads for a 40-byte value that occurs once near the end. The
 * peer is a plain memmem of the raw value over the same bytes, the least
 * any scanner does. Prints MB/s of each (the best of ROUNDS rounds, each
 * at least 0.3 s), the matcher's steps a byte, and a RESULT line for
 * tests/bench/run. BORROWED scans for that many 40-byte issuer tokens
 * ("oat_" and 36 random letters and digits) more, joined with the value into one scanner (inject_scanner_join, as
 * a job's set is: proxy/reflect.c).
 *
 *   bench_scan [ROUNDS [BORROWED]]   (default 5 0)
 */
#include "inject.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ANSWER (1u << 20)
#define READ (16u << 10)

static const char value[] = "sk_live_51Hq8zZkeyABCDEFGHIJ0123456789xy";

/* The scanner each scan copies: the value's, or joined with BORROWED
 * tokens; the last scan's steps. */
static struct inject_scanner prep;
static size_t steps;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A JSON answer of ANSWER bytes, the value once at about 7/8 of it. */
static char *
answer(void)
{
	char *a = malloc(ANSWER), rec[512];
	size_t n = 0;
	unsigned id = 1000;
	int put = 0;

	if (a == NULL)
		return NULL;
	a[n++] = '[';
	while (n < ANSWER - sizeof(rec) - 2) {
		int l = snprintf(rec, sizeof(rec),
		    "{\"id\": %u, \"name\": \"widget-%u\", \"url\": "
		    "\"https:\\/\\/api.example.com\\/v1\\/items\\/"
		    "%u?page=%u&amp;"
		    "per=50\", \"q\": \"a%%20b%%2Fc=%u\", \"desc\": \"A "
		    "&lt;b&gt;"
		    "bold&lt;\\/b&gt; item, \\\"quoted\\\" \\u00e9t\\u00e9\", "
		    "\"price\": %u.%02u, \"tags\": [\"x\", \"y\"]},\n",
		    id, id, id, id % 7, id * 3, id % 97, id % 100);
		if (l <= 0 || (size_t)l >= sizeof(rec))
			break;
		memcpy(a + n, rec, (size_t)l);
		n += (size_t)l;
		if (!put && n > ANSWER / 8 * 7) {
			int m = snprintf(rec, sizeof(rec),
			    "{\"echo\": \"Bearer %s\"},\n", value);
			memcpy(a + n, rec, (size_t)m);
			n += (size_t)m;
			put = 1;
		}
		id++;
	}
	while (n < ANSWER - 1)
		a[n++] = ' ';
	a[n++] = ']';
	return a;
}

/* One scan of the answer in READ-byte reads: matches found. */
static size_t
scan_once(const char *a)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(2 * ANSWER);
	size_t found;

	if (inject_scanner_copy(&s, &prep) != 0)
		abort();
	for (size_t off = 0; off < ANSWER; off += READ) {
		size_t n = ANSWER - off < READ ? ANSWER - off : READ;
		if (inject_scanner_feed(&s, a + off, n, &out, NULL) != 0)
			abort();
		/* As the proxy does: the bytes go down, the buffer is
		 * reused. */
		out.len = 0;
	}
	if (inject_scanner_flush(&s, &out) != 0)
		abort();
	found = s.found;
	steps = s.steps;
	inject_scanner_free(&s);
	buf_free(&out);
	return found;
}

static size_t
memmem_once(const char *a)
{
	size_t found = 0, vl = strlen(value);
	const char *p = a, *end = a + ANSWER;

	while ((p = memmem(p, (size_t)(end - p), value, vl)) != NULL) {
		found++;
		p += vl;
	}
	return found;
}

/* The best MB/s of rounds rounds of f over a. */
static double
rate(size_t (*f)(const char *), const char *a, int rounds, size_t *ret_found)
{
	double best = 0;

	for (int r = 0; r < rounds; r++) {
		double t0 = now(), t;
		size_t times = 0;
		do {
			*ret_found = f(a);
			times++;
		} while ((t = now() - t0) < 0.3);
		double mbs = (double)times * ANSWER / t / 1e6;
		if (mbs > best)
			best = mbs;
	}
	return best;
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 5;
	long borrowed = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	char *a = answer();
	size_t fs, fm;
	double s, m;

	if (a == NULL || rounds <= 0 || borrowed < 0 || borrowed > 1000)
		return 1;
	struct inject_scanner *one = calloc((size_t)borrowed + 1, sizeof(*one));
	struct inject_part *parts =
	    calloc((size_t)borrowed + 1, sizeof(*parts));
	if (one == NULL || parts == NULL ||
	    inject_scanner_init(&one[0], value, strlen(value)) != 0)
		return 1;
	/* Tokens as issuers mint them: a prefix and random letters and
	 * digits (a fixed sequence). */
	uint64_t x = 88172645463325252u;
	for (long i = 1; i <= borrowed; i++) {
		static const char an[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
					 "KLMNOPQRSTUVWXYZ0123456789";
		char tok[41] = "oat_";
		for (size_t k = 4; k < 40; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			tok[k] = an[x % 62];
		}
		if (inject_scanner_init(&one[i], tok, 40) != 0)
			return 1;
	}
	for (long i = 0; i <= borrowed; i++)
		parts[i] = (struct inject_part){ &one[i], 0, NULL };
	if (inject_scanner_join(&prep, parts, (size_t)borrowed + 1) != 0)
		return 1;
	for (long i = 0; i <= borrowed; i++)
		inject_scanner_free(&one[i]);
	free(one);
	free(parts);
	s = rate(scan_once, a, rounds, &fs);
	m = rate(memmem_once, a, rounds, &fm);
	fprintf(stderr,
	    "bench_scan: 1 MiB JSON, %zu-byte value and %ld borrowed, %u-byte "
	    "reads: scanner %.1f MB/s (%zu found, %.2f steps a byte), memmem "
	    "%.1f MB/s (%zu found), ratio %.3f\n",
	    strlen(value), borrowed, READ, s, fs, (double)steps / ANSWER, m, fm,
	    s / m);
	if (borrowed == 0)
		printf("RESULT\treflection scanner, 1 MiB JSON, 40-byte "
		       "value\tMB/s\thigher\t%.1f\tmemmem\t%.1f\n",
		    s, m);
	else
		printf("RESULT\treflection scanner, 1 MiB JSON, 40-byte value "
		       "and %ld borrowed\tMB/s\thigher\t%.1f\tmemmem\t%.1f\n",
		    borrowed, s, m);
	inject_scanner_free(&prep);
	free(a);
	return fs >= 1 && fm == 1 ? 0 : 1;
}
