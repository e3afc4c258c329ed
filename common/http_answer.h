/*
 * One HTTP/1.1 answer reader for cordon's blocking clients (http_client.c
 * to cordon's services, broker/issuer_http.c to credential issuers): no
 * I/O of its own, fed bytes as they arrive (http_answer_feed) or pulled
 * through a read callback (http_answer_read), the same result however
 * the bytes are cut. Its only memory is two capped bufs, the head and the
 * decoded body. It is as strict as the proxy's response parser
 * (proxy/response.h): whatever two readers could frame differently is
 * refused, with -EIO and a stable snake_case reason in a->reason:
 *
 *   nul                 a NUL byte in the head or trailers
 *   bare_cr, bare_lf    a CR not followed by LF, an LF not after a CR
 *   malformed           an empty line before the status line, no
 *                       "HTTP/" at its start, a control byte (not HTAB)
 *                       in the reason phrase, a field line without ':'
 *   bad_version         a version other than HTTP/1.1 and HTTP/1.0
 *   bad_status          not 3 digits then SP or the line's end, not in
 *                       100..599
 *   obs_fold            a field line starting with SP or HTAB
 *   space_before_colon  whitespace between a field name and its ':'
 *   bad_header_name     an empty name, or not a token
 *   bad_header_value    a control byte (not HTAB) in a value
 *   bad_cl              Content-Length not 1*DIGIT (at most 19)
 *   duplicate_cl        a second Content-Length, even an equal one
 *   unknown_te          Transfer-Encoding other than exactly "chunked"
 *   duplicate_te        a second Transfer-Encoding
 *   te_in_http10        Transfer-Encoding in an HTTP/1.0 answer
 *   cl_and_te           both Content-Length and Transfer-Encoding
 *   upgrade             a 101: nothing here asks to switch protocols
 *   bad_chunk           a chunk-size line not 1*16HEXDIG [BWS ";" ext],
 *                       longer than 256 bytes, a control byte in its
 *                       extension, or chunk data not followed by CRLF
 *   cut_short           the peer closed before the answer's end (its
 *                       head, its Content-Length, its last chunk and
 *                       trailers)
 *
 * and -EFBIG with headers_too_large (the head, every interim head and
 * the trailers together past head_max) or body_too_large (a
 * Content-Length, a chunk or the bytes to the close past body_max).
 * Every check is made on every answer, bodiless ones too.
 *
 * Accepted: "HTTP/1.1 200" with no SP or reason; interim answers (1xx
 * but 101), each checked and skipped: the final answer's head is the
 * one kept; chunk extensions (ignored); trailers (checked as fields,
 * then dropped: never in the head); obs-text (0x80-0xff) in values and
 * the reason. No body for an answer to HEAD (no_body), a 204 or a 304,
 * whatever it says; else chunked, Content-Length, or to the close
 * (http_answer_close). Bytes after a complete answer are not consumed.
 */
#ifndef CORDON_HTTP_ANSWER_H
#define CORDON_HTTP_ANSWER_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The longest chunk-size line, its extensions included. */
#define HTTP_ANSWER_CHUNK_LINE_MAX 256

struct http_answer {
	/* Once complete: */
	int status; /* 100..599 */
	int minor; /* 1 for HTTP/1.1, 0 for HTTP/1.0 */
	struct buf head; /* the final answer's head as sent, up to its
			    blank line's CRLF */
	struct buf body; /* decoded; NUL-terminated, data never NULL */
	const char *reason; /* why it was refused, else NULL */

	/* The reader's own. */
	size_t head_max;
	bool no_body;
	int state, result;
	size_t line; /* where the current line starts in head */
	size_t head_seen; /* head bytes so far, interim and trailers too */
	size_t trailers; /* where the trailers start in head */
	uint64_t left; /* of a chunk, or of the Content-Length */
	unsigned chunk_line, chunk_digits;
	bool seen_cl, seen_te;
	uint64_t cl;
};

/*
 * Makes a reader for one answer to a request (no_body: it was HEAD): its
 * head (interim heads and trailers counted in) at most head_max bytes,
 * its decoded body at most body_max. Release it with http_answer_free.
 */
void http_answer_init(struct http_answer *a, bool no_body, size_t head_max,
    size_t body_max);

/*
 * Feeds the next n bytes of the connection: 1 when the answer is
 * complete (*ret_used says how many of the n were its last; the rest
 * belong to nothing), 0 when all n were taken and more are wanted,
 * -EIO or -EFBIG (a->reason) when it is refused, -ENOMEM. After 1 or an
 * error, it returns that again and takes nothing. ret_used may be NULL.
 */
int http_answer_feed(struct http_answer *a, const void *p, size_t n,
    size_t *ret_used);

/* The peer closed: 1 when that ends the answer (one framed by the close,
 * or one already complete), else -EIO cut_short (or the error before). */
int http_answer_close(struct http_answer *a);

/* A transport's read: at most n bytes into buf, their count, 0 at the
 * end, or -errno (which http_answer_read returns as it is). */
typedef ssize_t (*http_answer_reader)(void *ctx, char *buf, size_t n);

/*
 * Reads one answer through rd until it is complete: 0, or rd's -errno,
 * or what http_answer_feed and http_answer_close refuse. Reads no byte
 * past the answer's end that the transport did not deliver with it; its
 * own buffer is wiped before it returns (answers carry credentials).
 */
int http_answer_read(struct http_answer *a, http_answer_reader rd, void *ctx);

/* The value of the first field name (case-insensitive) of a complete
 * answer's head, without surrounding blanks, its length in *ret_len; NULL
 * when absent. */
const char *http_answer_field(const struct http_answer *a, const char *name,
    size_t *ret_len);

/* Wipes and frees the head and the body (a caller that took the body
 * leaves BUF_INIT(0) in its place). NULL is fine. */
void http_answer_free(struct http_answer *a);

#endif
