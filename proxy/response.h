/*
 * The proxy's strict HTTP/1.1 response head parser: a pure library, no
 * I/O, no logging, no allocation. The proxy forwards an upstream's
 * response bytes to the client unchanged, but it must know where the
 * response ends, to keep the client's connection and pool the upstream's,
 * and it must refuse a response that the client could frame differently
 * than the proxy does (a desync). Whatever could be read two ways is
 * refused with a stable snake_case reason, the proxy's decision log's
 * "reason", as http1.h does for requests. Refusal reasons:
 *
 *   nul                 a NUL byte anywhere in the head
 *   bare_cr, bare_lf    a CR not followed by LF, an LF not preceded by CR
 *   headers_too_large   a head of more than HTTP1_HEAD_MAX bytes, or more
 *                       than HTTP1_FIELDS_MAX field lines
 *   malformed           an empty line before the status line (left over
 *                       from the last response: a desync, not noise), a
 *                       control character other than HTAB in the reason
 *                       phrase, a field line without ':'
 *   bad_version         a version other than HTTP/1.1 and HTTP/1.0
 *   bad_status          a status code missing, not three digits followed
 *                       by SP or the line's end, or not in 100..599
 *   obs_fold            a field line starting with SP or HTAB
 *   space_before_colon  whitespace between a field name and its ':'
 *   bad_header_name     a field name that is empty or not a token
 *   bad_header_value    a control character (other than HTAB) in a value
 *   bad_cl              Content-Length not 1*DIGIT, or over HTTP1_CL_MAX
 *   duplicate_cl        a second Content-Length, even an equal one
 *   unknown_te          Transfer-Encoding other than exactly "chunked"
 *   duplicate_te        a second Transfer-Encoding field
 *   te_in_http10        Transfer-Encoding in an HTTP/1.0 response (RFC
 *                       9112 6.1: its framing is to be taken as faulty)
 *   cl_and_te           both Content-Length and Transfer-Encoding
 *   bad_connection      a Connection value that is not a list of tokens
 *
 * Every check is made on every response, those without a body too: a
 * 304 with a bad Content-Length is refused like a 200 with one.
 *
 * The status line may end right after its code ("HTTP/1.1 200"): RFC
 * 9112 4 wants the SP before an empty reason phrase, but servers that
 * leave it out are common, and reading the line either way gives the
 * same code. That is the only leniency.
 */
#ifndef CORDON_RESPONSE_H
#define CORDON_RESPONSE_H

#include "buf.h"
#include "http1.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the response's body is delimited (RFC 9112 6.3). */
enum http1_resp_body {
	HTTP1_RESP_NONE, /* no body: 1xx, 204, 304, or a response to HEAD */
	HTTP1_RESP_LENGTH, /* content_length bytes follow (may be 0) */
	HTTP1_RESP_CHUNKED, /* track it with http1_chunked_decode */
	HTTP1_RESP_CLOSE, /* delimited by the upstream closing: keep_alive
			     is then false */
};

/*
 * A complete response head. An interim response (1xx but 101) is one
 * too: the final response follows it on the connection, to be parsed
 * from head_len on, and it is that one's keep_alive that counts.
 */
struct http1_response {
	int minor_version; /* 1 for HTTP/1.1, 0 for HTTP/1.0 */
	unsigned status; /* 100..599 */
	enum http1_resp_body body;
	uint64_t content_length; /* HTTP1_RESP_LENGTH only, else 0 */
	/* The connection carries another response after this one's body:
	 * HTTP/1.1 without "Connection: close", HTTP/1.0 with
	 * "Connection: keep-alive"; never for HTTP1_RESP_CLOSE or 101. */
	bool keep_alive;
	/* Status 101, with or without an Upgrade field: a client takes the
	 * connection as switched either way. The caller tunnels it if it
	 * allowed the upgrade, and closes both sides if it did not. */
	bool upgrade;
	/* Status 101 with one Upgrade field, its value the one token
	 * "websocket" (any case): a switch to what a rule may allow. */
	bool upgrade_websocket;
	/* A Content-Encoding field whose value is not exactly "identity"
	 * (any case): gzip, br, a stacked or an empty list, an unknown
	 * coding, or a second field saying so. The body, if any, is then
	 * not what the reflection scanner can read (credentials.md). */
	bool coded;
	size_t head_len; /* up to and including the empty line's CRLF */
};

/*
 * Parses the response head at data. data[0..len) must be every byte of
 * the response received so far, from its first; the parser keeps no
 * state, so each call reads them all again (the head is at most
 * HTTP1_HEAD_MAX bytes). Bytes after the head are never read.
 * head_request says the request was HEAD, whose response has no body
 * whatever its fields say.
 *
 * Returns 0 when the head is complete, with *resp filled; -EAGAIN when
 * it needs more bytes; -EBADMSG when it is refused, with *ret_reason one
 * of the strings above (static; NULL after 0 and -EAGAIN). *resp is
 * written only when it returns 0. The bytes seen are judged in order, so
 * an answer other than -EAGAIN stays the same however many more bytes
 * come after it: a refusal comes as soon as its bytes are in.
 */
int http1_response_parse(const char *data, size_t len, bool head_request,
    struct http1_response *resp, const char **ret_reason);

/*
 * Writes to out the head the job's client gets: head[0..len) (a complete
 * head that http1_response_parse accepted) without its hop-by-hop fields
 * (Connection, Keep-Alive, TE, Trailer, Upgrade, Proxy-*, and every field
 * a Connection value names), plus "Connection: close" when the proxy will
 * close the client's connection after this answer. With upgrade (a 101 the
 * request asked for), Connection and Upgrade stay and nothing is added.
 * The framing fields stay: the body is relayed as it is. 0, -EINVAL for a
 * head without its empty line, or -E2BIG / -ENOMEM from out.
 */
int http1_response_rewrite(const char *head, size_t len, bool upgrade,
    bool close, struct buf *out);

/* For http1_response_rewrite_fields: drop Set-Cookie and Set-Cookie2 (an
 * injected answer's: a session bought with the key, credentials.md). */
#define HTTP1_RESP_DROP_COOKIES 0x1u

/*
 * http1_response_rewrite, and with HTTP1_RESP_DROP_COOKIES every
 * Set-Cookie and Set-Cookie2 field left out too; *ret_dropped (may be
 * NULL) is how many fields that flag left out. Same returns.
 */
int http1_response_rewrite_fields(const char *head, size_t len, bool upgrade,
    bool close, unsigned flags, size_t *ret_dropped, struct buf *out);

#endif
