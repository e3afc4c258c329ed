/*
 * The ClientHello reader (see sni.h for the contract and what it refuses).
 * The handshake message may come in pieces, one per record, so it is read
 * through a cursor that walks the records as it goes rather than copied
 * together: no buffer, and one pass over the bytes whatever the record
 * sizes. Every length is checked against the structure that holds it
 * before any byte of what it counts is looked at, so a bad length is
 * refused even before the bytes it claims arrive, and no length is ever
 * trusted to stay within data: each step forward is bounded by len.
 */
#include "sni.h"

#include <errno.h>
#include <stdbool.h>

#define REC_HANDSHAKE 22
#define HS_CLIENT_HELLO 1
#define HS_HEADER_LEN 4
#define EXT_SERVER_NAME 0
#define NAME_TYPE_HOST 0
#define SESSION_ID_MAX 32

/* A cursor over the handshake message's bytes, across its records. */
struct hs {
	const uint8_t *data;
	size_t len;
	size_t off; /* in data: the next byte of the current fragment */
	size_t rec_end; /* in data: where that fragment ends, as declared */
	size_t pos; /* in the message: the next byte */
	size_t msg_end; /* in the message: its length, SIZE_MAX until known */
	unsigned nrec; /* records entered */
};

/*
 * Enters the record whose header is at rec_end, once the current one is
 * used up and the message needs more bytes. The header's bytes are judged
 * one by one as they arrive, so that what is not TLS (an HTTP request) is
 * refused from its first byte.
 */
static int
next_record(struct hs *h)
{
	size_t at = h->rec_end, have = h->len - at, n;

	/* Checked before the header is whole, so that no len of
	 * SNI_READ_MAX or more is ever answered -EAGAIN. */
	if (h->nrec == SNI_RECORDS_MAX)
		return -EBADMSG;
	if (have >= 1 && h->data[at] != REC_HANDSHAKE)
		return -EBADMSG;
	if (have >= 2 && h->data[at + 1] != 3)
		return -EBADMSG;
	if (have < 5)
		return -EAGAIN;
	n = (size_t)h->data[at + 3] << 8 | h->data[at + 4];
	/* Zero-length handshake fragments are forbidden (RFC 8446 5.1). */
	if (n == 0 || n > SNI_RECORD_MAX)
		return -EBADMSG;
	/* The ClientHello must end with a record: a client has nothing to
	 * send in the handshake after it until the server answers. */
	if (h->msg_end != SIZE_MAX && n > h->msg_end - h->pos)
		return -EBADMSG;
	h->nrec++;
	h->off = at + 5;
	h->rec_end = h->off + n;
	return 0;
}

/* Makes the message's next byte readable at data[off]. */
static int
need(struct hs *h)
{
	int r;

	/* Records are never empty: one step finds a byte, or its lack. */
	if (h->off == h->rec_end && (r = next_record(h)) != 0)
		return r;
	if (h->off == h->len)
		return -EAGAIN;
	return 0;
}

/* A big-endian integer of size bytes (1 to 3) that must fit before end. */
static int
get_uint(struct hs *h, size_t end, size_t size, size_t *ret)
{
	size_t v = 0;
	int r;

	if (h->pos > end || size > end - h->pos)
		return -EBADMSG;
	for (size_t i = 0; i < size; i++) {
		if ((r = need(h)) != 0)
			return r;
		v = v << 8 | h->data[h->off++];
		h->pos++;
	}
	*ret = v;
	return 0;
}

/* Passes over n bytes that must fit before end. */
static int
skip(struct hs *h, size_t end, size_t n)
{
	int r;

	if (h->pos > end || n > end - h->pos)
		return -EBADMSG;
	while (n > 0) {
		size_t take = n;

		if ((r = need(h)) != 0)
			return r;
		/* rec_end may lie past len, in a record still arriving. */
		if (take > h->rec_end - h->off)
			take = h->rec_end - h->off;
		if (take > h->len - h->off)
			take = h->len - h->off;
		h->off += take;
		h->pos += take;
		n -= take;
	}
	return 0;
}

/*
 * The server_name extension's data, which ends at end: a list that holds
 * exactly one host_name and nothing after it (RFC 6066 3).
 */
static int
server_name(struct hs *h, size_t end, char out[SNI_MAX + 1])
{
	size_t n, type, c;
	int r;

	if ((r = get_uint(h, end, 2, &n)) != 0)
		return r;
	if (n == 0 || n != end - h->pos)
		return -EBADMSG;
	if ((r = get_uint(h, end, 1, &type)) != 0)
		return r;
	if (type != NAME_TYPE_HOST)
		return -EBADMSG;
	if ((r = get_uint(h, end, 2, &n)) != 0)
		return r;
	/* A name that does not fill the list is followed by another. */
	if (n == 0 || n > SNI_MAX || n != end - h->pos)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		if ((r = get_uint(h, end, 1, &c)) != 0)
			return r;
		if (c < 0x21 || c > 0x7e)
			return -EBADMSG;
		out[i] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

/* The handshake message, from its header to the end of its extensions
 * (RFC 8446 4.1.2; RFC 5246 7.4.1.2 for the same layout before 1.3). */
static int
client_hello(struct hs *h, char out[SNI_MAX + 1])
{
	size_t v, n, end, type;
	bool seen = false;
	int r;

	if ((r = get_uint(h, HS_HEADER_LEN, 1, &v)) != 0)
		return r;
	if (v != HS_CLIENT_HELLO)
		return -EBADMSG;
	if ((r = get_uint(h, HS_HEADER_LEN, 3, &n)) != 0)
		return r;
	if (n > SNI_HELLO_MAX - HS_HEADER_LEN)
		return -EBADMSG;
	end = h->msg_end = HS_HEADER_LEN + n;
	/* next_record checks the records still to come; this one, the
	 * header's last, was entered before the end was known. */
	if (h->rec_end - h->off > end - h->pos)
		return -EBADMSG;

	if ((r = get_uint(h, end, 2, &v)) != 0) /* legacy_version */
		return r;
	if (v >> 8 != 3)
		return -EBADMSG;
	if ((r = skip(h, end, 32)) != 0) /* random */
		return r;
	if ((r = get_uint(h, end, 1, &n)) != 0) /* legacy_session_id */
		return r;
	if (n > SESSION_ID_MAX)
		return -EBADMSG;
	if ((r = skip(h, end, n)) != 0)
		return r;
	if ((r = get_uint(h, end, 2, &n)) != 0) /* cipher_suites */
		return r;
	if (n == 0 || n % 2 != 0)
		return -EBADMSG;
	if ((r = skip(h, end, n)) != 0)
		return r;
	if ((r = get_uint(h, end, 1, &n)) != 0) /* compression_methods */
		return r;
	if (n == 0)
		return -EBADMSG;
	if ((r = skip(h, end, n)) != 0)
		return r;
	/* TLS 1.2 and before let a ClientHello end here. */
	if (h->pos == end)
		return -ENOENT;

	if ((r = get_uint(h, end, 2, &n)) != 0)
		return r;
	if (n != end - h->pos)
		return -EBADMSG;
	while (h->pos < end) {
		if ((r = get_uint(h, end, 2, &type)) != 0)
			return r;
		if ((r = get_uint(h, end, 2, &n)) != 0)
			return r;
		if (n > end - h->pos)
			return -EBADMSG;
		if (type != EXT_SERVER_NAME)
			r = skip(h, end, n);
		else if (seen)
			return -EBADMSG;
		else {
			seen = true;
			r = server_name(h, h->pos + n, out);
		}
		if (r != 0)
			return r;
	}
	return seen ? 0 : -ENOENT;
}

int
sni_parse(const uint8_t *data, size_t len, char out[SNI_MAX + 1])
{
	struct hs h = {
		.data = data,
		.len = len,
		.msg_end = SIZE_MAX,
	};
	int r;

	out[0] = '\0';
	r = client_hello(&h, out);
	if (r != 0)
		out[0] = '\0';
	return r;
}
