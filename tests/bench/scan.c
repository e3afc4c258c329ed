/*
 * bench_scan: the proxy's reflection scanner (proxy/inject.c) alone, on
 * the answer it sees most: a 1 MiB JSON body (records with numbers, URLs
 * with JSON's "\/", an HTML-escaped field, a percent-encoded query) fed
 * in 16 KiB reads for a 40-byte value that occurs once near the end. The
 * peer is a plain memmem of the raw value over the same bytes, the least
 * any scanner does. Prints MB/s of each (the best of ROUNDS rounds, each
 * at least 0.3 s) and a RESULT line for tests/bench/run.
 *
 *   bench_scan [ROUNDS]   (default 5)
 */
#include "inject.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ANSWER (1u << 20)
#define READ (16u << 10)

static const char value[] = "sk_live_51Hq8zZkeyABCDEFGHIJ0123456789xy";

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

	if (inject_scanner_init(&s, value, strlen(value)) != 0)
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
	char *a = answer();
	size_t fs, fm;
	double s, m;

	if (a == NULL || rounds <= 0)
		return 1;
	s = rate(scan_once, a, rounds, &fs);
	m = rate(memmem_once, a, rounds, &fm);
	fprintf(stderr,
	    "bench_scan: 1 MiB JSON, %zu-byte value, %u-byte reads: scanner "
	    "%.1f MB/s (%zu found), memmem %.1f MB/s (%zu found), ratio "
	    "%.3f\n",
	    strlen(value), READ, s, fs, m, fm, s / m);
	printf("RESULT\treflection scanner, 1 MiB JSON, 40-byte value\tMB/s\t"
	       "higher\t%.1f\tmemmem\t%.1f\n",
	    s, m);
	free(a);
	return fs >= 1 && fm == 1 ? 0 : 1;
}
