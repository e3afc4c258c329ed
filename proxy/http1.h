/*
 * The proxy's strict HTTP/1.1 request parser: a pure library, no I/O, no
 * logging, no allocation. It reads a request head as a client sends it to
 * a forward proxy (absolute-form "GET http://host/p" or authority-form
 * "CONNECT host:443"), or, in origin mode, an inner request of a tunnel
 * whose TLS the proxy terminated ("GET /p" with Host). Whatever could be
 * read two ways is refused with a stable snake_case reason, the proxy's
 * decision log's "reason" (docs/egress.md, The reasons). Refusal reasons:
 *
 *   nul                 a NUL byte anywhere in the head
 *   bare_cr, bare_lf    a CR not followed by LF, an LF not preceded by CR
 *   line_too_long       a request line of more than HTTP1_LINE_MAX bytes
 *   headers_too_large   field lines of more than HTTP1_HEADERS_MAX bytes
 *                       (with their CRLFs) or more than HTTP1_FIELDS_MAX
 *   malformed           not "method SP target SP version", an empty line
 *                       before the request line, a field line without ':'
 *   bad_method          a method that is not a token
 *   bad_version         a version other than HTTP/1.1 and HTTP/1.0
 *   bad_target          a target of the wrong form for the method and mode
 *                       (origin-form or "*" to a forward proxy, https://,
 *                       a bad host or port, a character outside RFC 3986,
 *                       a bad %-escape)
 *   userinfo            "user@" in the target's authority
 *   fragment            '#' in the target
 *   obs_fold            a field line starting with SP or HTAB
 *   space_before_colon  whitespace between a field name and its ':'
 *   bad_header_name     a field name that is empty or not a token
 *   bad_header_value    a control character (other than HTAB) in a value
 *   duplicate_host      a second Host field
 *   bad_host            a Host value that is not host[:port]
 *   missing_host        no Host in HTTP/1.1 (in origin mode: ever)
 *   host_mismatch       Host differs from the target's authority (host
 *                       case-insensitively; a missing port is 80 for
 *                       http:// and 443 for CONNECT)
 *   bad_cl              Content-Length not 1*DIGIT, or over HTTP1_CL_MAX
 *   duplicate_cl        a second Content-Length, even an equal one
 *   unknown_te          Transfer-Encoding other than exactly "chunked"
 *   duplicate_te        a second Transfer-Encoding field
 *   duplicate_ct        a second Content-Type field (servers differ on
 *                       which they read; the override judge reads one)
 *   te_in_http10        Transfer-Encoding in an HTTP/1.0 request
 *   cl_and_te           both Content-Length and Transfer-Encoding
 *   bad_connection      a Connection value that is not a list of tokens
 *   connect_body        CONNECT with Transfer-Encoding or a Content-Length
 *                       other than 0
 *   body_on_get         GET, HEAD or TRACE with Transfer-Encoding or a
 *   body_on_head        Content-Length other than 0: a server that reads
 *   body_on_trace       no body there takes it as its next request
 *
 * The parser keeps offsets (struct http1_span) into the caller's bytes,
 * not pointers, so the caller may grow or move its buffer between calls.
 */
#ifndef CORDON_HTTP1_H
#define CORDON_HTTP1_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP1_LINE_MAX 8192 /* request line, without its CRLF */
#define HTTP1_HEADERS_MAX 65536 /* field lines, with their CRLFs */
#define HTTP1_FIELDS_MAX 100
/* The most bytes a complete head can take: size the read buffer by it. */
#define HTTP1_HEAD_MAX (HTTP1_LINE_MAX + 2 + HTTP1_HEADERS_MAX + 2)
/* The largest Content-Length or chunk size: 2^53 - 1, exact in JSON. */
#define HTTP1_CL_MAX ((UINT64_C(1) << 53) - 1)
/* A chunk-size line with its extensions, without its CRLF. */
#define HTTP1_CHUNK_LINE_MAX 4096
/* The port of the job's relay inside its sandbox (launcher/sandbox.h
 * SANDBOX_PROXY_PORT; the launcher's environment names it). */
#define HTTP1_RELAY_PORT 3128

/* len bytes at off in the caller's data. */
struct http1_span {
	size_t off;
	size_t len;
};

struct http1_header {
	struct http1_span name; /* case as sent */
	struct http1_span value; /* OWS around it trimmed */
};

enum http1_mode {
	HTTP1_MODE_PROXY, /* absolute-form http://, or CONNECT authority */
	HTTP1_MODE_ORIGIN, /* origin-form only, Host required: in a tunnel */
	/* The same, a missing Host port 80: a captured plain-HTTP connection
	 * (docs/egress.md, Transparent egress). */
	HTTP1_MODE_ORIGIN_PLAIN,
};

enum http1_form {
	HTTP1_FORM_ABSOLUTE, /* GET http://host[:port]/path?query */
	HTTP1_FORM_AUTHORITY, /* CONNECT host:port */
	HTTP1_FORM_ORIGIN, /* GET /path?query, HTTP1_MODE_ORIGIN only */
};

enum http1_body {
	HTTP1_BODY_NONE, /* no Content-Length, no Transfer-Encoding */
	HTTP1_BODY_LENGTH, /* content_length bytes follow (may be 0) */
	HTTP1_BODY_CHUNKED, /* decode with struct http1_chunked */
};

/*
 * A complete request head. Spans are into the data given to http1_parse.
 * host is as sent, an IPv6 literal with its brackets; for origin-form it
 * and port come from the Host field. path runs from its '/' to '?' or the
 * end and is empty for "http://host" and "http://host?q"; query is what
 * follows '?', without it, and has_query says whether there was a '?'.
 * scheme is empty but for absolute-form.
 */
struct http1_request {
	struct http1_span method;
	struct http1_span target;
	int minor_version; /* 1 for HTTP/1.1, 0 for HTTP/1.0 */
	enum http1_form form;
	bool connect; /* method is exactly "CONNECT" */
	struct http1_span scheme;
	struct http1_span host;
	uint16_t port; /* given or the default: 80, or 443 for origin-form
			  (80 in HTTP1_MODE_ORIGIN_PLAIN) */
	struct http1_span path;
	struct http1_span query;
	bool has_query;
	enum http1_body body;
	uint64_t content_length; /* HTTP1_BODY_LENGTH only, else 0 */
	bool keep_alive; /* per version and Connection close / keep-alive */
	bool upgrade; /* an Upgrade field is present, whatever its value */
	/* One Upgrade field only, its value the one token "websocket" (any
	 * case): the only upgrade a rule may allow (egress.md). */
	bool upgrade_websocket;
	size_t nheaders;
	struct http1_header headers[HTTP1_FIELDS_MAX]; /* in order */
};

/* One request's parsing state. Opaque but for req and reason. */
struct http1_parser {
	enum http1_mode mode;
	int state;
	size_t scan; /* next byte to look at */
	size_t line_start;
	size_t headers_start;
	size_t consumed;
	bool seen_cl, seen_te, seen_host, seen_ct;
	struct http1_span host_value;
	const char *reason; /* set when http1_parse refused */
	struct http1_request req; /* valid once http1_parse returned 0 */
};

/*
 * The line the launcher writes first on every connection it opens on a
 * job's channel, before any byte of the job's, so that the job can never
 * write one itself (its bytes only ever follow the launcher's line):
 *
 *   CORDON/1 relay CRLF              the relay: a client's proxy requests
 *   CORDON/1 capture CRLF            a CONNECT of the capture follows
 *   CORDON/1 capture-http HOST PORT CRLF
 *                                    origin-form requests to HOST:PORT
 *   CORDON/1 dns CRLF                a refused name's CONNECT name:53
 *   CORDON/1 direct tcp|udp CRLF     a CONNECT for an address:port the
 *                                    namespace refused (nothing listens)
 *
 * A channel connection without it (a client of the channel itself, as the
 * tests are) is read as the relay's.
 */
#define HTTP1_ORIGIN_PREFIX "CORDON/1 "
#define HTTP1_ORIGIN_MAX 300 /* the line with its CRLF */

enum http1_origin {
	HTTP1_ORIGIN_RELAY,
	HTTP1_ORIGIN_CAPTURE,
	HTTP1_ORIGIN_CAPTURE_HTTP,
	HTTP1_ORIGIN_DNS,
	HTTP1_ORIGIN_DIRECT_TCP,
	HTTP1_ORIGIN_DIRECT_UDP,
};

struct http1_origin_line {
	enum http1_origin kind;
	char host[254]; /* capture-http only: as written, at most 253 */
	uint16_t port; /* capture-http only, 1-65535 */
};

/*
 * Reads the launcher's line at the start of data[0..len): 0 with *o and
 * *ret_used (the line's length with its CRLF); -ENOENT when data cannot
 * start with one (nothing used); -EAGAIN when it may, and more bytes
 * are needed; -EBADMSG for a line that starts so and is not one of the
 * above, or is longer than HTTP1_ORIGIN_MAX.
 */
int http1_origin_parse(const char *data, size_t len,
    struct http1_origin_line *o, size_t *ret_used);

/* Readies p for one request in mode. */
void http1_parser_init(struct http1_parser *p, enum http1_mode mode);

/*
 * Parses the request head at data. data[0..len) must be every byte
 * received so far, from the request's first byte: each call gives the
 * same bytes as the last one and perhaps more (the buffer may move).
 * Bytes after the head (a body, a pipelined request) are never read.
 * Returns 0 when the head is complete: p->req is filled and
 * *ret_consumed is its length, up to and including the empty line's
 * CRLF; -EAGAIN when it needs more bytes; -EBADMSG when it is refused,
 * with p->reason one of the strings above; -EINVAL when len is shorter
 * than a previous call's. Once it returned 0 or -EBADMSG it answers the
 * same again. The head never exceeds HTTP1_HEAD_MAX bytes.
 */
int http1_parse(struct http1_parser *p, const char *data, size_t len,
    size_t *ret_consumed);

/* Whether req has a body: Transfer-Encoding, or a Content-Length other
 * than 0. */
bool http1_has_body(const struct http1_request *req);

/*
 * Whether req has a body on a method other than POST, PUT and PATCH
 * (DELETE, OPTIONS, an extension method), which some servers do not read:
 * such a request goes upstream with "Connection: close" and its upstream
 * connection is never reused, so that a server that takes the body for a
 * request of its own is told to read nothing after it. data: its head.
 */
bool http1_close_after_body(const struct http1_request *req, const char *data);

/* The first header of req named name (case-insensitive), or NULL. */
const struct http1_header *http1_find_header(const struct http1_request *req,
    const char *data, const char *name);

/* An extra field for http1_serialize: a token name and a value without
 * control characters other than HTAB. */
struct http1_field {
	const char *name;
	const char *value;
};

#define HTTP1_KEEP_UPGRADE 0x1u /* keep Upgrade, add "Connection: upgrade" */
/* Drop Authorization, Cookie and every X-Cordon-* field: for a request
 * the proxy sends on the job's behalf with credentials of its own. */
#define HTTP1_DROP_CREDENTIALS 0x2u

/*
 * Writes req's head for the upstream, in origin-form, to out:
 *
 *   METHOD SP path ["?" query] SP "HTTP/1.1" CRLF   (path "/" if empty)
 *   each of extra, in order                          (e.g. Host)
 *   each field of the client's that is kept, in order, as name ": " value
 *   "Connection: upgrade"      with HTTP1_KEEP_UPGRADE and an Upgrade field
 *   "Content-Length: N"        for HTTP1_BODY_LENGTH (N without zeros ahead)
 *   "Transfer-Encoding: chunked"   for HTTP1_BODY_CHUNKED
 *   CRLF
 *
 * Not kept: Host (the caller adds the one it checked), Content-Length and
 * Transfer-Encoding (written again from the parsed framing, as above),
 * Connection, every field named in a Connection value, Keep-Alive, TE,
 * Trailer, Upgrade (but with HTTP1_KEEP_UPGRADE), and every field whose
 * name starts with "Proxy-" (Proxy-Connection, Proxy-Authorization,
 * Proxy-Authenticate, ...). Names compare case-insensitively.
 * Returns 0; -EINVAL for a CONNECT request or a bad extra field; -E2BIG
 * or -ENOMEM from out, which is then left as it was.
 */
int http1_serialize(const struct http1_request *req, const char *data,
    const struct http1_field *extra, size_t nextra, unsigned flags,
    struct buf *out);

/*
 * Decodes a chunked body (RFC 9112 7.1) incrementally. Chunk extensions
 * are read (no control characters but HTAB) and dropped. Trailer fields
 * are refused: the proxy re-frames the body and would have to vet them
 * like headers, and a request has no need of them. Reasons: nul, bare_cr,
 * bare_lf, bad_chunk_size (not hex, or over HTTP1_CL_MAX), bad_chunk (no
 * CRLF after a chunk's data, a control character in an extension),
 * chunk_line_too_long (over HTTP1_CHUNK_LINE_MAX), body_too_large (the
 * chunk sizes add up to more than the max given), trailers.
 */
struct http1_chunked {
	int state;
	uint64_t size; /* of the chunk being read or sent */
	uint64_t total; /* data bytes so far */
	uint64_t max_total;
	size_t line_len;
	const char *reason; /* set when refused */
	/* http1_chunked_init_response: trailer fields are read, not
	 * refused; trailer_part says the last call's bytes were trailer
	 * field lines (with their CRLFs), which a call never mixes with
	 * other bytes. */
	bool trailers_ok, trailer_part;
	size_t trailer_bytes, tname_len;
};

/* Readies c for one body of at most max_body data bytes. */
void http1_chunked_init(struct http1_chunked *c, uint64_t max_body);

/*
 * The same for an upstream's answer, whose trailer fields (RFC 9112
 * 7.1.2) are read as its header fields are: a token name, ':', a value
 * without control characters but HTAB, CRLF; no obs-fold; at most
 * HTTP1_HEADERS_MAX bytes in all. They are framing for the decoder: it
 * returns no data for them, and a call that takes them takes nothing
 * else (c->trailer_part), so that the caller may relay them or leave
 * them out ("0" CRLF CRLF stays a whole body). Further reasons:
 * bad_trailer, trailers_too_large.
 */
void http1_chunked_init_response(struct http1_chunked *c, uint64_t max_body);

/*
 * Reads in[0..len): framing bytes, and at most one run of data, which it
 * points at with *ret_data_off (from in) and *ret_data_len (0 if none).
 * *ret_used is how many bytes of in it took, framing and data. Returns
 * -EAGAIN when the body goes on: call again with in + *ret_used, or with
 * new bytes when it took them all (it takes at least one byte of a
 * non-empty in); 0 when the body ended, *ret_used counting its last
 * CRLF (what follows belongs to the next request); -EBADMSG, with
 * c->reason, when it is refused. After 0 or -EBADMSG it answers the same.
 */
int http1_chunked_decode(struct http1_chunked *c, const char *in, size_t len,
    size_t *ret_used, size_t *ret_data_off, size_t *ret_data_len);

#endif
