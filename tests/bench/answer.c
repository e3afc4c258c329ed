/*
 * bench_answer: what the proxy's reflection scan costs on the answer
 * bench_proxy's injected rows get (a 230-byte head and a 100-byte body
 * of nginx's), done as proxy/conn.c does it for every answer of a job
 * that was released a value: the scan made from the job's set
 * (reflect_scan_init: one stage, a copy of the set's joined scanner), the head fed and flushed, the body fed and
 * flushed, the chain freed. The value is 40 hex digits, as the bench's
 * secret. Prints the nanoseconds an answer (the best of ROUNDS rounds of
 * at least 0.3 s each), with memmem of the raw value over the same
 * bytes for scale, and a RESULT line for tests/bench/run. BORROWED
 * adds that many other jobs' issuer credentials (40-byte tokens) the set
 * borrows for the guard's scan (reflect_set_put_borrowed), BODY the
 * body's bytes (default 100).
 *
 *   bench_answer [ROUNDS [BORROWED [BODY]]]   (default 5 0 100)
 */
#include "reflect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char value[] = "3f9a1c07b2e4d8650a7f3c1e9b2d4a6081c5e7f3";
static const char head[] = "HTTP/1.1 200 OK\r\n"
			   "Server: nginx/1.22.1\r\n"
			   "Date: Tue, 01 Dec 2026 17:44:54 GMT\r\n"
			   "Content-Type: application/octet-stream\r\n"
			   "Content-Length: 100\r\n"
			   "Last-Modified: Tue, 01 Dec 2026 17:43:51 GMT\r\n"
			   "ETag: \"692dd3f7-64\"\r\n"
			   "Accept-Ranges: bytes\r\n"
			   "\r\n";

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One answer as conn.c scans it (send_request, down_head, down,
 * down_flush): 0, or -1 when the scan failed or changed a byte. */
static int
one(struct reflect_set *set, const char *body, size_t blen)
{
	struct reflect_scan r;
	struct buf a, b;
	int rc = 0;

	if (reflect_scan_init(&r, set) < 0)
		return -1;
	a = (struct buf)BUF_INIT(reflect_scan_out_max(&r, sizeof(head) - 1));
	if (reflect_scan_feed(&r, head, sizeof(head) - 1, &a, NULL) < 0 ||
	    reflect_scan_flush(&r, &a) < 0 || a.len != sizeof(head) - 1)
		rc = -1;
	buf_free(&a);
	b = (struct buf)BUF_INIT(reflect_scan_out_max(&r, blen));
	if (rc == 0 && reflect_scan_feed(&r, body, blen, &b, NULL) < 0)
		rc = -1;
	size_t fed = b.len;
	buf_free(&b);
	b = (struct buf)BUF_INIT(reflect_scan_out_max(&r, 0));
	if (rc == 0 && (reflect_scan_flush(&r, &b) < 0 || fed + b.len != blen))
		rc = -1;
	buf_free(&b);
	reflect_scan_free(&r);
	return rc;
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 5;
	long borrowed = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	long blen = argc > 3 ? strtol(argv[3], NULL, 10) : 100;
	struct reflect_set set = { .n = 0 };
	double best = 1e30, bestm = 1e30;
	volatile size_t sink = 0;

	if (borrowed < 0 || borrowed > REFLECT_BORROWED_MAX || blen < 1 ||
	    blen > (1L << 24)) {
		fprintf(stderr, "bench_answer: ROUNDS [BORROWED [BODY]]\n");
		return 2;
	}
	char *body = malloc((size_t)blen);
	if (body == NULL)
		return 1;
	memset(body, 'x', (size_t)blen - 1);
	body[blen - 1] = '\n';
	if (reflect_set_put(&set, "bench-key", 1, value, sizeof(value) - 1, 0,
		0) != 1) {
		fprintf(stderr, "bench_answer: no scanner\n");
		return 1;
	}
	for (long i = 0; i < borrowed; i++) {
		char tok[41];
		snprintf(tok, sizeof(tok), "oat_%036ld", i * 7919 + 13);
		if (reflect_set_put_borrowed(&set, "issuer-key", 0, tok, 40, 0,
			3600) != 1) {
			fprintf(stderr, "bench_answer: no borrowed scanner\n");
			return 1;
		}
	}
	for (int k = 0; k < rounds; k++) {
		size_t n = 0;
		double t0 = now(), t;
		do {
			for (int j = 0; j < 1000; j++)
				if (one(&set, body, (size_t)blen) < 0) {
					fprintf(stderr,
					    "bench_answer: failed\n");
					return 1;
				}
			n += 1000;
		} while ((t = now() - t0) < 0.3);
		if (t / (double)n < best)
			best = t / (double)n;
		n = 0;
		t0 = now();
		do {
			for (int j = 0; j < 1000; j++) {
				sink += memmem(head, sizeof(head) - 1, value,
					    sizeof(value) - 1) != NULL;
				sink += memmem(body, (size_t)blen, value,
					    sizeof(value) - 1) != NULL;
			}
			n += 1000;
		} while ((t = now() - t0) < 0.3);
		if (t / (double)n < bestm)
			bestm = t / (double)n;
	}
	reflect_set_clear(&set);
	free(body);
	fprintf(stderr,
	    "bench_answer: %.0f ns an answer of %ld bytes, %ld borrowed "
	    "(memmem %.0f ns)\n",
	    best * 1e9, blen, borrowed, bestm * 1e9);
	if (borrowed == 0 && blen == 100)
		printf("RESULT\treflection scan of a small answer\tns\tlower\t"
		       "%.0f\tmemmem\t%.0f\n",
		    best * 1e9, bestm * 1e9);
	else
		printf("RESULT\treflection scan of an answer of %ld bytes, %ld "
		       "borrowed\tns\tlower\t%.0f\tmemmem\t%.0f\n",
		    blen, borrowed, best * 1e9, bestm * 1e9);
	return (int)(sink & 0);
}
