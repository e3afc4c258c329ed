/*
 * What the integration tests of cordon-proxy talk to: an upstream HTTP/1.1
 * server in threads of the test process, on 127.0.0.1 (plain or TLS only),
 * a test CA made with the openssl tool, and raw exchanges over a socket.
 *
 * Start an upstream inside the test (Check forks each test), not in an
 * unchecked fixture: its threads do not survive a fork.
 */
#ifndef CORDON_UPSTREAM_H
#define CORDON_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

struct upstream; /* opaque */

/*
 * Starts listening on 127.0.0.1:0; with cert_file and key_file (PEM, not
 * NULL) it speaks TLS only. Returns NULL on failure (the reason printed).
 *
 * Every request is answered HTTP/1.1 and the connection kept alive unless
 * the request says Connection: close (or is HTTP/1.0 without keep-alive).
 * Request bodies are read by Content-Length or chunked (decoded); an
 * Expect: 100-continue is answered. By path (the target without its query;
 * an absolute-form target counts by its path):
 *   /redirect   302, Location: http://elsewhere.test/, empty body
 *   /chunked    200, chunked in three chunks "a", "bb", "ccc"
 *   /close      200 "bye" without Content-Length, then the connection closes
 *   /bytes/N    200, N bytes of 'x' with Content-Length
 *   /slow       the echo below, after 3 s
 *   /echo-chunked  the echo below as a chunked body of 5-byte chunks
 *   /records    200 "the second record\n" with Content-Length, the head and
 *               the body in two writes (TLS: two records) sent as one TCP
 *               segment, as python's http.server answers
 *   /upgrade    with Upgrade: websocket, 101 Switching Protocols (with a
 *               Sec-WebSocket-Accept when there was a key), then it echoes
 *               bytes back until the peer closes; without, the echo below
 *   otherwise   200, Content-Type: application/json, Content-Length:
 *               {"method", "target", "host" (the Host header or null),
 *                "headers": [[name, value], ...] (as received, in order),
 *                "body_len": N, "body": the body when < 4 KiB and UTF-8,
 *                else null}
 * HEAD gets the head alone. A malformed request gets 400 and a close.
 */
struct upstream *upstream_start(const char *cert_file, const char *key_file);

uint16_t upstream_port(const struct upstream *u);

/*
 * From now on u answers 401 "no key" to every request without a field
 * name (any case) of exactly value, as an API that wants a key does (set
 * it before the first request: the threads read it unlocked). 0 or -1.
 */
int upstream_require(struct upstream *u, const char *name, const char *value);

/* Connections accepted so far (TCP, whether TLS then worked or not). */
unsigned upstream_connections(const struct upstream *u);

/* Requests answered so far: counted before the answer is sent, so a client
 * that has its answer sees it counted. */
unsigned upstream_requests(const struct upstream *u);

/* The raw head of the last request received (request line and headers,
 * with their CRLFs, up to and including the blank line), malloc'd (free
 * it), or NULL when none came yet. */
char *upstream_last_head(struct upstream *u);

/* Closes the listener and every connection (shutdown() on each, so no
 * thread stays blocked), joins all threads and frees u. NULL is fine. */
void upstream_stop(struct upstream *u);

/*
 * In dir, makes ca.pem/ca.key (a self-signed CA, EC P-256) and, for each
 * host in hosts (NULL-terminated), <host>.pem/<host>.key: a leaf signed by
 * the CA for serverAuth with subjectAltName DNS:<host> (and IP:<host> when
 * host is an IP address, such as "127.0.0.1"). Valid from now for 2 days.
 * Host names are limited to letters, digits and ".-_*:". Returns 0, or -1
 * after printing openssl's stderr.
 */
int test_ca_make(const char *dir, const char *const *hosts);

/* Connects to the unix socket at path: the fd (close it) or -1. */
int unix_connect(const char *path);

/*
 * Sends all of data on fd (any stream socket), then reads the answer until
 * the peer closes, timeout_ms passes (from the call), or a whole HTTP
 * response arrived: the head and a Content-Length or chunked body, or the
 * head alone for 1xx, 204, 304, an answer to HEAD, or a 2xx to CONNECT
 * (by data's first request line). Bytes that came along after it are kept.
 * Returns a malloc'd NUL-terminated string of what was read (free it;
 * empty when nothing came), or NULL when out of memory.
 */
char *http_exchange(int fd, const char *data, size_t len, int timeout_ms);

/* The status code of the HTTP/1.x answer resp begins with; 0 if it does
 * not begin with a status line. */
int http_status(const char *resp);

#endif
