/*
 * The server name a TLS client asks for, read from its ClientHello without
 * terminating TLS: for tls "passthrough" rules the proxy answers CONNECT,
 * reads what the client sends next, and relays it upstream only if the
 * SNI is the host the CONNECT named. A pure library: no I/O, no logging,
 * no allocation, no OpenSSL.
 *
 * It is strict, since whatever it lets through reaches a server that may
 * read the same bytes otherwise: a name it cannot be sure of is refused,
 * not guessed. Refused (-EBADMSG):
 *
 *   - a record other than handshake (22), or with a major version other
 *     than 3, or empty, or longer than SNI_RECORD_MAX; a record of
 *     another type between two pieces of the ClientHello
 *   - a handshake message other than client_hello (1), or longer than
 *     SNI_HELLO_MAX, its 4-byte header included
 *   - a record that goes on past the end of the ClientHello (nothing may
 *     share its last record), or the ClientHello in more than
 *     SNI_RECORDS_MAX records
 *   - any length that overruns what holds it, or that leaves bytes over in
 *     it: the session id (at most 32), the cipher suites (even, not
 *     empty), the compression methods (not empty), the extensions, each
 *     extension, the server_name list, the name
 *   - a second server_name extension
 *   - a server_name list that is not exactly one host_name (0) entry: a
 *     second name, or a name of another type (RFC 6066 leaves their
 *     format open, and OpenSSL refuses them too)
 *   - an empty name, one longer than SNI_MAX, or one with a byte outside
 *     the visible ASCII range 0x21..0x7e (NUL, space, controls, UTF-8)
 *
 * A ClientHello without extensions (TLS 1.2 and before allow it) has no
 * SNI: -ENOENT, as when the extensions hold no server_name.
 */
#ifndef CORDON_PROXY_SNI_H
#define CORDON_PROXY_SNI_H

#include <stddef.h>
#include <stdint.h>

#define SNI_MAX 253 /* a DNS name's longest text form, no trailing dot */
#define SNI_RECORD_MAX 16384 /* a plaintext record's fragment, RFC 8446 5.1 */
#define SNI_HELLO_MAX 65536 /* the handshake message, header included */
/* Legitimate clients use one record, rarely a few; tools that split the
 * ClientHello into tiny records to dodge inspection get this many. */
#define SNI_RECORDS_MAX 256
/*
 * The most bytes a ClientHello sni_parse accepts can take, record headers
 * included: sni_parse answers -EAGAIN to no len of this or more, so a
 * buffer of this size always gets an answer.
 */
#define SNI_READ_MAX (SNI_HELLO_MAX + 5 * SNI_RECORDS_MAX)

/*
 * Reads the ClientHello at data. data[0..len) must be every byte the
 * client sent so far, from its first: each call starts again from there.
 * Bytes after the ClientHello's last record (a ChangeCipherSpec, early
 * data) are never read. Returns 0 with the name in out: of the host_name
 * type, as sent (neither lowercased nor stripped of a trailing dot),
 * NUL-terminated; -ENOENT when the complete ClientHello has no
 * server_name; -EAGAIN when it needs more bytes; -EBADMSG when the bytes
 * are not a TLS ClientHello or are refused as above, which it says as
 * soon as the bytes so far show it. Once it answered other than -EAGAIN,
 * more bytes get the same answer. out is the empty string unless it
 * returns 0.
 */
int sni_parse(const uint8_t *data, size_t len, char out[SNI_MAX + 1]);

#endif
