/*
 * Fuzzes the clients' HTTP/1.1 answer reader (common/http_answer.h). The
 * input is a selector byte (bit 0: the request was HEAD; bit 1: the peer
 * closes after the bytes; bits 2-7: a cut) and then the peer's bytes.
 * The oracle is the reader's own promise: the result is the same however
 * the bytes are cut, so the whole input fed at once, cut in two where
 * the selector says, and (for inputs up to BYTEWISE_MAX) a byte at a
 * time, must give the same result, reason, status, head, body and bytes
 * taken. Besides: a refusal has a reason and a result -EIO or -EFBIG
 * (-ENOMEM aside); an answer's head ends in CRLF CRLF and holds no NUL,
 * its body is within its cap and NUL-terminated, and its status is
 * 200..599. Every feed gets an exactly-sized copy, so that ASan sees an
 * over-read.
 */
#include "fuzz.h"
#include "http_answer.h"

#include <errno.h>
#include <string.h>

#define HEAD_MAX 512
#define BODY_MAX 1024
#define BYTEWISE_MAX 2048

struct outcome {
	int r;
	const char *reason;
	int status;
	size_t used, hlen, blen;
	char head[HEAD_MAX], body[BODY_MAX];
};

/* Feeds data[0..n) in pieces of at most step bytes (the first piece cut
 * at first, when not 0), then the close when asked. */
static void
run(const uint8_t *data, size_t n, bool no_body, bool closes, size_t first,
    size_t step, struct outcome *o)
{
	struct http_answer a;
	size_t at = 0;
	int r = 0;

	http_answer_init(&a, no_body, HEAD_MAX, BODY_MAX);
	memset(o, 0, sizeof(*o));
	while (r == 0 && at < n) {
		size_t k = first != 0 && at == 0 ? first : step, used = 0;
		uint8_t *piece;

		if (k > n - at)
			k = n - at;
		piece = malloc(k);
		FUZZ_ASSERT(piece != NULL);
		memcpy(piece, data + at, k);
		r = http_answer_feed(&a, piece, k, &used);
		free(piece);
		FUZZ_ASSERT(used <= k);
		FUZZ_ASSERT(r != 0 || used == k);
		o->used = at + used;
		at += k;
	}
	if (r == 0 && closes) {
		r = http_answer_close(&a);
		o->used = n;
	}
	o->r = r;
	o->reason = a.reason;
	if (r == 1) {
		FUZZ_ASSERT(a.reason == NULL);
		FUZZ_ASSERT(a.status >= 200 && a.status <= 599);
		FUZZ_ASSERT(a.head.len >= 4 && a.head.len <= HEAD_MAX);
		FUZZ_ASSERT(
		    memcmp(a.head.data + a.head.len - 4, "\r\n\r\n", 4) == 0);
		FUZZ_ASSERT(memchr(a.head.data, '\0', a.head.len) == NULL);
		FUZZ_ASSERT(a.body.data != NULL && a.body.len <= BODY_MAX &&
		    a.body.data[a.body.len] == '\0');
		o->status = a.status;
		o->hlen = a.head.len;
		o->blen = a.body.len;
		memcpy(o->head, a.head.data, a.head.len);
		memcpy(o->body, a.body.data, a.body.len);
	} else if (r < 0) {
		FUZZ_ASSERT(a.reason != NULL);
		FUZZ_ASSERT(r == -EIO || r == -EFBIG || r == -ENOMEM);
	}
	http_answer_free(&a);
}

static void
same(const struct outcome *x, const struct outcome *y)
{
	FUZZ_ASSERT(x->r == y->r);
	FUZZ_ASSERT((x->reason == NULL) == (y->reason == NULL));
	FUZZ_ASSERT(x->reason == NULL || strcmp(x->reason, y->reason) == 0);
	if (x->r != 1)
		return;
	FUZZ_ASSERT(x->status == y->status && x->used == y->used);
	FUZZ_ASSERT(
	    x->hlen == y->hlen && memcmp(x->head, y->head, x->hlen) == 0);
	FUZZ_ASSERT(
	    x->blen == y->blen && memcmp(x->body, y->body, x->blen) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome whole, cut, bytewise;
	bool no_body, closes;
	size_t first, n;

	if (size < 1)
		return 0;
	no_body = data[0] & 1;
	closes = data[0] & 2;
	data++;
	n = size - 1;
	first = n > 0 ? (size_t)(data[-1] >> 2) * n / 64 : 0;
	run(data, n, no_body, closes, 0, n > 0 ? n : 1, &whole);
	run(data, n, no_body, closes, first, n > 0 ? n : 1, &cut);
	same(&whole, &cut);
	if (n <= BYTEWISE_MAX) {
		run(data, n, no_body, closes, 0, 1, &bytewise);
		same(&whole, &bytewise);
	}
	return 0;
}
