/*
 * bench_hidden: what the hidden-text scan (hatch/hidden.c) adds to a
 * seal. A 4 MiB text file, added whole, is written as its patch
 * (patch_write_file, as the seal does) and then scanned
 * (hidden_scan_patch), in two kinds of text: ASCII source, and prose
 * with a non-ASCII character every few words (accents, CJK, emoji with
 * their selectors and joiners) that the scan must decode. Prints MB/s of
 * the writer and of the scan (the best of ROUNDS rounds) and the scan's
 * cost as a share of the writer's.
 *
 *   bench_hidden [ROUNDS]   (default 5)
 */
#include "hidden.h"
#include "buf.h"
#include "patch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEXT (4u << 20)

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* TEXT bytes of lines made of words, each line ending in '\n'. */
static unsigned char *
text(const char *const *words, size_t nwords)
{
	unsigned char *t = malloc(TEXT);
	size_t n = 0, w = 0, col = 0;

	if (t == NULL)
		return NULL;
	while (n < TEXT - 64) {
		const char *word = words[w++ % nwords];
		size_t l = strlen(word);

		memcpy(t + n, word, l);
		n += l;
		col += l;
		t[n++] = col > 60 ? '\n' : ' ';
		col = col > 60 ? 0 : col + 1;
	}
	while (n < TEXT)
		t[n++] = '\n';
	return t;
}

static int
run(const char *name, const unsigned char *t, int rounds)
{
	struct patch_file f = { .new_path = "repo/big.txt",
		.new_mode = PATCH_MODE_FILE,
		.new_data = t,
		.new_len = TEXT };
	double best_w = 1e9, best_s = 1e9;
	struct hidden_text h = { 0 };

	for (int r = 0; r < rounds; r++) {
		struct buf b;
		double t0, t1, t2;

		buf_init(&b, 64u << 20);
		t0 = now();
		if (patch_write_file(&b, &f) < 0)
			return 1;
		t1 = now();
		if (hidden_scan_patch(buf_str(&b), b.len, &h) < 0)
			return 1;
		t2 = now();
		best_w = t1 - t0 < best_w ? t1 - t0 : best_w;
		best_s = t2 - t1 < best_s ? t2 - t1 : best_s;
		buf_free(&b);
	}
	printf("%s: patch writer %.0f MB/s, scan %.0f MB/s, the scan %.1f%% "
	       "of the writer (%llu lines flagged)\n",
	    name, TEXT / best_w / 1e6, TEXT / best_s / 1e6,
	    100.0 * best_s / best_w, (unsigned long long)h.lines);
	printf("RESULT hatch: hidden-text scan of 4 MiB added %s|MB/s|higher|"
	       "%.0f|patch writer|%.0f\n",
	    name, TEXT / best_s / 1e6, TEXT / best_w / 1e6);
	return 0;
}

int
main(int argc, char **argv)
{
	static const char *const code[] = { "static", "int", "x", "=",
		"foo(bar,", "baz);", "if", "(n", ">", "0)", "return",
		"-EINVAL;", "/*", "a", "comment", "*/", "\tfor", "(size_t", "i",
		"=", "0;" };
	static const char *const prose[] = { "caf\xc3\xa9", "the",
		"na\xc3\xafve", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
		"report", "\xe2\x9a\xa0\xef\xb8\x8f", "done", "with",
		"\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x92\xbb", "and",
		"r\xc3\xa9sum\xc3\xa9",
		"\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", "of",
		"it" };
	int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 5;
	unsigned char *a = text(code, sizeof(code) / sizeof(code[0]));
	unsigned char *p = text(prose, sizeof(prose) / sizeof(prose[0]));
	int rc = 1;

	if (rounds < 1)
		rounds = 1;
	if (a != NULL && p != NULL)
		rc = run("ASCII source", a, rounds) || run("prose", p, rounds);
	free(a);
	free(p);
	return rc;
}
