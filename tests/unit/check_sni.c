/*
 * The ClientHello reader: real ClientHellos, from an OpenSSL client set
 * to TLS 1.2 and to TLS 1.3, with and without SNI, whole, a byte at a time
 * (-EAGAIN up to the last byte) and cut into records at every point; hand
 * built ones for each refusal beside the nearest one that passes; the
 * size limits at their boundary and one past; and every single-byte
 * change of a real ClientHello, whose answers must be sane and, once
 * given, hold as more bytes come.
 */
#include "sni.h"

#include "testutil.h"
#include "util.h"

#include <check.h>
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MAX (2 * SNI_READ_MAX)

static uint8_t *
alloc_buf(void)
{
	uint8_t *b = calloc(1, BUF_MAX);

	ck_assert_ptr_nonnull(b);
	return b;
}

/*
 * What an OpenSSL client sends first for version (TLS1_2_VERSION or
 * TLS1_3_VERSION, both the least and the most it will speak) and the SNI
 * name, or none if NULL: one handshake record. Returns its length.
 */
static size_t
openssl_hello(uint8_t *out, size_t max, int version, const char *name)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());
	SSL *ssl;
	int n;

	ck_assert_ptr_nonnull(ctx);
	ck_assert_ptr_nonnull(rbio);
	ck_assert_ptr_nonnull(wbio);
	ck_assert_int_eq(SSL_CTX_set_min_proto_version(ctx, version), 1);
	ck_assert_int_eq(SSL_CTX_set_max_proto_version(ctx, version), 1);
	ssl = SSL_new(ctx);
	ck_assert_ptr_nonnull(ssl);
	SSL_set_bio(ssl, rbio, wbio);
	if (name != NULL)
		ck_assert_int_eq(SSL_set_tlsext_host_name(ssl, name), 1);
	/* Nothing to read yet: it writes its ClientHello and waits. */
	n = SSL_connect(ssl);
	ck_assert_int_eq(n, -1);
	ck_assert_int_eq(SSL_get_error(ssl, n), SSL_ERROR_WANT_READ);
	n = BIO_read(wbio, out, (int)max);
	ck_assert_int_gt(n, 5);
	ck_assert_int_lt(n, (int)max);
	ck_assert_uint_eq(out[0], 22);
	ck_assert_uint_eq((size_t)out[3] << 8 | out[4], (size_t)n - 5);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)n;
}

static void
put_record_header(uint8_t *p, uint8_t type, size_t len)
{
	p[0] = type;
	p[1] = 3;
	p[2] = 1;
	p[3] = (uint8_t)(len >> 8);
	p[4] = (uint8_t)len;
}

/*
 * Frames the handshake bytes hs[0..n) as records of type 22: a first of
 * first bytes, then others of rest bytes, the last perhaps shorter.
 * Returns the length written to out.
 */
static size_t
frame(uint8_t *out, const uint8_t *hs, size_t n, size_t first, size_t rest)
{
	size_t w = 0, take;

	for (size_t i = 0; i < n; i += take) {
		take = i == 0 ? first : rest;
		if (take > n - i)
			take = n - i;
		put_record_header(out + w, 22, take);
		memcpy(out + w + 5, hs + i, take);
		w += 5 + take;
	}
	return w;
}

/*
 * A ClientHello handshake message, its header included, with the
 * extension entries ext[0..extlen), or with no extensions at all when ext
 * is NULL: legacy_version 3.3, a random of 0x11s, no session id, one
 * cipher suite, the null compression method. Returns its length.
 */
#define HS_FIXED 41 /* the body up to the extensions */
#define HS_EXT_OFF (4 + HS_FIXED) /* where the extensions' length goes */

static size_t
handshake(uint8_t *out, const void *ext, size_t extlen)
{
	size_t n = HS_FIXED + (ext != NULL ? 2 + extlen : 0);
	uint8_t *p = out;

	*p++ = 1;
	*p++ = (uint8_t)(n >> 16);
	*p++ = (uint8_t)(n >> 8);
	*p++ = (uint8_t)n;
	*p++ = 3;
	*p++ = 3;
	memset(p, 0x11, 32);
	p += 32;
	*p++ = 0; /* session id */
	*p++ = 0;
	*p++ = 2;
	*p++ = 0x13;
	*p++ = 0x01;
	*p++ = 1;
	*p++ = 0;
	if (ext != NULL) {
		*p++ = (uint8_t)(extlen >> 8);
		*p++ = (uint8_t)extlen;
		memcpy(p, ext, extlen);
		p += extlen;
	}
	ck_assert_uint_eq((size_t)(p - out), 4 + n);
	return 4 + n;
}

/* handshake() in one record. */
static size_t
hello(uint8_t *out, const void *ext, size_t extlen)
{
	uint8_t *hs = alloc_buf();
	size_t n = handshake(hs, ext, extlen);

	n = frame(out, hs, n, n, n);
	free(hs);
	return n;
}

/* A server_name extension of one host_name entry, name[0..n). */
static size_t
sni_ext(uint8_t *out, const char *name, size_t n)
{
	out[0] = 0;
	out[1] = 0;
	out[2] = (uint8_t)((n + 5) >> 8);
	out[3] = (uint8_t)(n + 5);
	out[4] = (uint8_t)((n + 3) >> 8);
	out[5] = (uint8_t)(n + 3);
	out[6] = 0;
	out[7] = (uint8_t)(n >> 8);
	out[8] = (uint8_t)n;
	memcpy(out + 9, name, n);
	return 9 + n;
}

/* The answer is one of the four, and out is what it should be with it. */
static void
assert_sane(int r, const char *out)
{
	size_t n = strlen(out);

	ck_assert(r == 0 || r == -ENOENT || r == -EAGAIN || r == -EBADMSG);
	if (r != 0) {
		ck_assert_uint_eq(n, 0);
		return;
	}
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_le(n, SNI_MAX);
	for (size_t i = 0; i < n; i++)
		ck_assert(out[i] >= 0x21 && out[i] <= 0x7e);
}

/*
 * Feeds data[0..n) a byte at a time: -EAGAIN until an answer, which must
 * then hold for every longer prefix. Returns it and where it came.
 */
static int
parse_bytewise(const uint8_t *data, size_t n, char out[SNI_MAX + 1], size_t *at)
{
	int r = -EAGAIN, first = -EAGAIN;
	char first_name[SNI_MAX + 1] = "";

	*at = n + 1;
	for (size_t i = 0; i <= n; i++) {
		memset(out, 'x', SNI_MAX + 1);
		r = sni_parse(data, i, out);
		assert_sane(r, out);
		if (first == -EAGAIN && r != -EAGAIN) {
			first = r;
			*at = i;
			memcpy(first_name, out, sizeof(first_name));
		} else if (first != -EAGAIN) {
			ck_assert_int_eq(r, first);
			ck_assert_str_eq(out, first_name);
		}
	}
	return r;
}

/* A name of n bytes: labels of 63 'a's and dots, ending in "b". */
static void
long_name(char *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (i + 1) % 64 == 0 ? '.' : 'a';
	out[n - 1] = 'b';
	out[n] = '\0';
}

struct real_case {
	int version;
	const char *name; /* NULL: no SNI */
};

static char name253[SNI_MAX + 1];

static const struct real_case real_cases[] = {
	{ TLS1_2_VERSION, "a.test" },
	{ TLS1_3_VERSION, "a.test" },
	{ TLS1_2_VERSION, NULL },
	{ TLS1_3_VERSION, NULL },
	{ TLS1_2_VERSION, "Example.COM." },
	{ TLS1_3_VERSION, "xn--bcher-kva.example" },
	{ TLS1_3_VERSION, name253 },
};

static void
real_setup(void)
{
	long_name(name253, SNI_MAX);
}

static void
assert_answer(int r, const char *out, const char *want)
{
	if (want == NULL) {
		ck_assert_int_eq(r, -ENOENT);
		ck_assert_str_eq(out, "");
	} else {
		ck_assert_int_eq(r, 0);
		ck_assert_str_eq(out, want);
	}
}

START_TEST(test_real_hello)
{
	const struct real_case *c = &real_cases[_i];
	uint8_t *b = alloc_buf();
	size_t n = openssl_hello(b, BUF_MAX, c->version, c->name);
	char out[SNI_MAX + 1];

	assert_answer(sni_parse(b, n, out), out, c->name);
	free(b);
}
END_TEST

START_TEST(test_real_hello_bytewise)
{
	const struct real_case *c = &real_cases[_i];
	uint8_t *b = alloc_buf();
	size_t n = openssl_hello(b, BUF_MAX, c->version, c->name), at;
	char out[SNI_MAX + 1];
	int r;

	/* What may follow at once: ChangeCipherSpec, then early data. */
	memcpy(b + n, "\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x02zz", 13);
	r = parse_bytewise(b, n + 13, out, &at);
	ck_assert_uint_eq(at, n);
	assert_answer(r, out, c->name);
	free(b);
}
END_TEST

/* The handshake re-framed as two records, split at every point, and as
 * records of every size from 1 byte up. */
START_TEST(test_real_hello_records)
{
	const struct real_case *c = &real_cases[_i];
	uint8_t *b = alloc_buf(), *f = alloc_buf();
	size_t n = openssl_hello(b, BUF_MAX, c->version, c->name), m, at;
	const uint8_t *hs = b + 5;
	size_t hslen = n - 5;
	char out[SNI_MAX + 1];

	for (size_t cut = 1; cut < hslen; cut++) {
		m = frame(f, hs, hslen, cut, hslen);
		ck_assert_uint_eq(m, n + 5);
		assert_answer(sni_parse(f, m, out), out, c->name);
		/* Not done until the second record is whole. */
		ck_assert_int_eq(sni_parse(f, m - 1, out), -EAGAIN);
	}
	for (size_t frag = 1; frag <= hslen; frag++) {
		size_t nrec = (hslen + frag - 1) / frag;

		m = frame(f, hs, hslen, frag, frag);
		if (nrec > SNI_RECORDS_MAX) {
			ck_assert_int_eq(sni_parse(f, m, out), -EBADMSG);
			continue;
		}
		assert_answer(sni_parse(f, m, out), out, c->name);
	}
	/* Cut in three, fed a byte at a time. */
	m = frame(f, hs, hslen, 7, hslen / 2);
	assert_answer(parse_bytewise(f, m, out, &at), out, c->name);
	ck_assert_uint_eq(at, m);
	free(f);
	free(b);
}
END_TEST

/* A record of another type between two pieces of the ClientHello. */
START_TEST(test_interleaved_record)
{
	static const uint8_t types[] = { 20, 21, 23, 24 };
	uint8_t *b = alloc_buf(), *f = alloc_buf();
	size_t n = openssl_hello(b, BUF_MAX, TLS1_3_VERSION, "a.test"), m;
	char out[SNI_MAX + 1];

	for (size_t t = 0; t < ARRAY_SIZE(types); t++) {
		m = frame(f, b + 5, 100, 100, 100);
		put_record_header(f + m, types[t], 1);
		f[m + 5] = 1;
		m += 6;
		m += frame(f + m, b + 105, n - 105, n, n);
		ck_assert_int_eq(sni_parse(f, m, out), -EBADMSG);
		/* Refused as soon as its type byte is in. */
		ck_assert_int_eq(sni_parse(f, 106, out), -EBADMSG);
		ck_assert_int_eq(sni_parse(f, 105, out), -EAGAIN);
	}
	free(f);
	free(b);
}
END_TEST

START_TEST(test_not_tls)
{
	static const char *const texts[] = {
		"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\n\r\n",
		"SSH-2.0-OpenSSH_9.6\r\n",
		"\x80\x2e\x01\x03\x01", /* an SSLv2-framed ClientHello */
		"\x16\x02\x00", /* major version 2 */
		"\x15\x03\x03\x00\x02\x02\x28", /* an alert */
	};
	char out[SNI_MAX + 1];
	size_t at;

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		const uint8_t *t = (const uint8_t *)texts[i];
		size_t n = strlen(texts[i]);

		ck_assert_int_eq(sni_parse(t, n, out), -EBADMSG);
		ck_assert_int_eq(parse_bytewise(t, n, out, &at), -EBADMSG);
		ck_assert_uint_le(at, 2);
	}
	ck_assert_int_eq(sni_parse(NULL, 0, out), -EAGAIN);
	ck_assert_int_eq(sni_parse((const uint8_t *)"\x16\x03\x01\x01", 4, out),
	    -EAGAIN);
}
END_TEST

struct ext_case {
	int want; /* 0, -ENOENT or -EBADMSG */
	const char *name; /* for 0 */
	const char *ext;
	size_t len;
};

#define E(w, n, e)                                                             \
	{                                                                      \
		.want = (w), .name = (n), .ext = (e), .len = sizeof(e) - 1     \
	}
/* The server_name extension, its list, one entry, one name. */
#define SN_A                                                                   \
	"\x00\x00\x00\x0b\x00\x09\x00\x00\x06"                                 \
	"a.test"
#define GROUPS "\x00\x0a\x00\x04\x00\x02\x00\x1d"
#define ALPN "\x00\x10\x00\x05\x00\x03\x02h2"

/* Extension blocks: each refusal beside the nearest that passes. */
static const struct ext_case ext_cases[] = {
	E(0, "a.test", SN_A),
	E(0, "a.test", GROUPS SN_A ALPN),
	E(-ENOENT, NULL, GROUPS ALPN),
	E(-ENOENT, NULL, ""),
	E(-EBADMSG, NULL, SN_A SN_A),
	E(-EBADMSG, NULL, SN_A GROUPS SN_A),
	E(-EBADMSG, NULL,
	    SN_A "\x00\x00\x00\x0b\x00\x09\x00\x00\x06"
		 "b.test"),
	/* The extension empty, or its list. */
	E(-EBADMSG, NULL, "\x00\x00\x00\x00"),
	E(-EBADMSG, NULL, "\x00\x00\x00\x02\x00\x00"),
	/* The list shorter or longer than the extension. */
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x0c\x00\x09\x00\x00\x06"
	    "a.test!"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x0b\x00\x0a\x00\x00\x06"
	    "a.test"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x0b\x00\x08\x00\x00\x06"
	    "a.test"),
	/* The name overruns the list, or leaves bytes in it. */
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x0b\x00\x09\x00\x00\x07"
	    "a.test"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x0b\x00\x09\x00\x00\x05"
	    "a.test"),
	/* Two entries, or one not a host_name. */
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x14\x00\x12\x00\x00\x06"
	    "a.test"
	    "\x00\x00\x06"
	    "b.test"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x14\x00\x12\x00\x00\x06"
	    "a.test"
	    "\x01\x00\x06"
	    "b.test"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x0b\x00\x09\x01\x00\x06"
	    "a.test"),
	/* What the name may hold. */
	E(-EBADMSG, NULL, "\x00\x00\x00\x05\x00\x03\x00\x00\x00"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x08\x00\x06\x00\x00\x03"
	    "a\0b"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x08\x00\x06\x00\x00\x03"
	    "a b"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x08\x00\x06\x00\x00\x03"
	    "a\tb"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x08\x00\x06\x00\x00\x03"
	    "a\x7f"
	    "b"),
	E(-EBADMSG, NULL,
	    "\x00\x00\x00\x09\x00\x07\x00\x00\x04"
	    "\xc3\xa9.b"),
	E(0, "A-b_~.",
	    "\x00\x00\x00\x0b\x00\x09\x00\x00\x06"
	    "A-b_~."),
	E(0, "a",
	    "\x00\x00\x00\x06\x00\x04\x00\x00\x01"
	    "a"),
	/* An extension overruns the block, or the block ends in the middle
	 * of one's header. */
	E(-EBADMSG, NULL, GROUPS "\x00\x10\x00\x06\x00\x03\x02h2"),
	E(-EBADMSG, NULL, SN_A "\x00"),
	E(-EBADMSG, NULL, SN_A "\x00\x10\x00"),
	E(0, "a.test", SN_A "\x00\x15\x00\x00"),
};

START_TEST(test_ext_table)
{
	const struct ext_case *c = &ext_cases[_i];
	uint8_t *b = alloc_buf();
	size_t n = hello(b, c->ext, c->len), at;
	char out[SNI_MAX + 1];
	int r;

	r = sni_parse(b, n, out);
	ck_assert_msg(r == c->want, "case %d: %d, not %d", _i, r, c->want);
	if (c->want == 0)
		ck_assert_str_eq(out, c->name);
	else
		ck_assert_str_eq(out, "");
	ck_assert_int_eq(parse_bytewise(b, n, out, &at), c->want);
	free(b);
}
END_TEST

START_TEST(test_name_length)
{
	uint8_t *b = alloc_buf(), ext[512];
	char name[SNI_MAX + 2], out[SNI_MAX + 1];
	size_t n;

	long_name(name, SNI_MAX);
	n = hello(b, ext, sni_ext(ext, name, SNI_MAX));
	ck_assert_int_eq(sni_parse(b, n, out), 0);
	ck_assert_str_eq(out, name);

	long_name(name, SNI_MAX + 1);
	n = hello(b, ext, sni_ext(ext, name, SNI_MAX + 1));
	ck_assert_int_eq(sni_parse(b, n, out), -EBADMSG);
	/* And so from OpenSSL, which sends up to 255. */
	n = openssl_hello(b, BUF_MAX, TLS1_3_VERSION, name);
	ck_assert_int_eq(sni_parse(b, n, out), -EBADMSG);
	free(b);
}
END_TEST

/* Where the fields of hello()'s record lie. */
#define R_TYPE 0
#define R_MAJOR 1
#define R_LEN 3
#define H_TYPE 5
#define H_LEN 6
#define H_VERSION 9
#define H_SID 43
#define H_CS 44
#define H_COMP 48
#define H_EXT 50

static size_t
sni_hello(uint8_t *b)
{
	return hello(b, SN_A, sizeof(SN_A) - 1);
}

static void
put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put24(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 16);
	put16(p + 1, v);
}

static size_t
get16(const uint8_t *p)
{
	return (size_t)p[0] << 8 | p[1];
}

START_TEST(test_outer_fields)
{
	uint8_t *b = alloc_buf();
	size_t n = sni_hello(b), rlen = n - 5, hlen = rlen - 4;
	char out[SNI_MAX + 1];

	ck_assert_uint_eq(get16(b + R_LEN), rlen);
	ck_assert_uint_eq(b[H_EXT + 1], sizeof(SN_A) - 1);
	ck_assert_int_eq(sni_parse(b, n, out), 0);
	ck_assert_str_eq(out, "a.test");

#define POKE(off, val, want)                                                   \
	do {                                                                   \
		uint8_t save_ = b[(off)];                                      \
		b[(off)] = (val);                                              \
		ck_assert_int_eq(sni_parse(b, n, out), (want));                \
		b[(off)] = save_;                                              \
	} while (0)

	POKE(R_TYPE, 23, -EBADMSG);
	POKE(R_MAJOR, 2, -EBADMSG);
	POKE(H_TYPE, 2, -EBADMSG); /* server_hello */
	POKE(H_TYPE, 0, -EBADMSG);
	POKE(H_VERSION, 2, -EBADMSG);
	POKE(H_VERSION, 3, 0);
	POKE(H_SID, 33, -EBADMSG);
	POKE(H_CS + 1, 0, -EBADMSG);
	POKE(H_CS + 1, 3, -EBADMSG);
	POKE(H_COMP, 0, -EBADMSG);
	POKE(H_EXT + 1, sizeof(SN_A), -EBADMSG);
	POKE(H_EXT + 1, sizeof(SN_A) - 2, -EBADMSG);
	/* A record shorter than the message: what follows it is no record
	 * header; a zero-length one; one over 2^14. */
	put16(b + R_LEN, rlen - 1);
	ck_assert_int_eq(sni_parse(b, n, out), -EBADMSG);
	put16(b + R_LEN, 0);
	ck_assert_int_eq(sni_parse(b, n, out), -EBADMSG);
	put16(b + R_LEN, SNI_RECORD_MAX + 1);
	ck_assert_int_eq(sni_parse(b, n, out), -EBADMSG);
	/* A record longer than the message, even by a byte of padding. */
	put16(b + R_LEN, rlen + 1);
	b[n] = 0;
	ck_assert_int_eq(sni_parse(b, n + 1, out), -EBADMSG);
	ck_assert_int_eq(sni_parse(b, n, out), -EBADMSG);
	put16(b + R_LEN, rlen);
	/* The message's length one more or one less than its fields. */
	put16(b + R_LEN, rlen + 1);
	put24(b + H_LEN, hlen + 1);
	ck_assert_int_eq(sni_parse(b, n + 1, out), -EBADMSG);
	put16(b + R_LEN, rlen - 1);
	put24(b + H_LEN, hlen - 1);
	ck_assert_int_eq(sni_parse(b, n - 1, out), -EBADMSG);
	/* Too short to hold even the fixed fields. */
	put16(b + R_LEN, 4 + 10);
	put24(b + H_LEN, 10);
	ck_assert_int_eq(sni_parse(b, 5 + 4 + 10, out), -EBADMSG);
	put16(b + R_LEN, 4);
	put24(b + H_LEN, 0);
	ck_assert_int_eq(sni_parse(b, 5 + 4, out), -EBADMSG);
	put16(b + R_LEN, rlen);
	put24(b + H_LEN, hlen);
	ck_assert_int_eq(sni_parse(b, n, out), 0);
#undef POKE
	free(b);
}
END_TEST

/* Where the fields of handshake()'s message lie. */
#define M_SID 38
#define M_CS 39
#define M_COMP 43
#define M_EXT 45

/* Makes room for k bytes of fill at at in the message hs[0..n), whose
 * length it mends. Returns the new length. */
static size_t
widen(uint8_t *hs, size_t n, size_t at, size_t k, uint8_t fill)
{
	memmove(hs + at + k, hs + at, n - at);
	memset(hs + at, fill, k);
	put24(hs + 1, n + k - 4);
	return n + k;
}

/* hs[0..n) in one record into b: the answer. */
static int
parse_one_record(uint8_t *b, const uint8_t *hs, size_t n, char *out)
{
	return sni_parse(b, frame(b, hs, n, n, n), out);
}

START_TEST(test_hello_fields)
{
	uint8_t *hs = alloc_buf(), *b = alloc_buf();
	size_t n, base;
	char out[SNI_MAX + 1];

	/* No extensions at all: a TLS 1.2 ClientHello may end there. */
	n = handshake(hs, NULL, 0);
	n = frame(b, hs, n, n, n);
	ck_assert_int_eq(sni_parse(b, n, out), -ENOENT);
	ck_assert_int_eq(sni_parse(b, n - 1, out), -EAGAIN);

	base = handshake(hs, SN_A, sizeof(SN_A) - 1);
	ck_assert_uint_eq(hs[M_SID], 0);
	ck_assert_uint_eq(get16(hs + M_CS), 2);
	ck_assert_uint_eq(hs[M_COMP], 1);
	ck_assert_uint_eq(get16(hs + M_EXT), sizeof(SN_A) - 1);

	/* A session id of 32 bytes, and of 33. */
	n = widen(hs, base, M_SID + 1, 32, 0x22);
	hs[M_SID] = 32;
	ck_assert_int_eq(parse_one_record(b, hs, n, out), 0);
	ck_assert_str_eq(out, "a.test");
	n = widen(hs, n, M_SID + 1, 1, 0x22);
	hs[M_SID] = 33;
	ck_assert_int_eq(parse_one_record(b, hs, n, out), -EBADMSG);

	/* Two cipher suites, and one and a half. */
	base = handshake(hs, SN_A, sizeof(SN_A) - 1);
	n = widen(hs, base, M_COMP, 2, 0x02);
	put16(hs + M_CS, 4);
	ck_assert_int_eq(parse_one_record(b, hs, n, out), 0);
	base = handshake(hs, SN_A, sizeof(SN_A) - 1);
	n = widen(hs, base, M_COMP, 1, 0x02);
	put16(hs + M_CS, 3);
	ck_assert_int_eq(parse_one_record(b, hs, n, out), -EBADMSG);

	/* Two compression methods. */
	base = handshake(hs, SN_A, sizeof(SN_A) - 1);
	n = widen(hs, base, M_EXT, 1, 0x01);
	hs[M_COMP] = 2;
	ck_assert_int_eq(parse_one_record(b, hs, n, out), 0);
	free(b);
	free(hs);
}
END_TEST

/* A later record that goes on past the end of the ClientHello: refused
 * from its header, before its extra byte comes. */
START_TEST(test_last_record_overruns)
{
	uint8_t *hs = alloc_buf(), *b = alloc_buf();
	size_t n = handshake(hs, SN_A, sizeof(SN_A) - 1), m;
	char out[SNI_MAX + 1];

	m = frame(b, hs, n, 10, n);
	ck_assert_int_eq(sni_parse(b, m, out), 0);
	ck_assert_uint_eq(get16(b + 15 + 3), n - 10);
	put16(b + 15 + 3, n - 10 + 1);
	b[m] = 0;
	ck_assert_int_eq(sni_parse(b, m + 1, out), -EBADMSG);
	ck_assert_int_eq(sni_parse(b, 15 + 5, out), -EBADMSG);
	ck_assert_int_eq(sni_parse(b, 15 + 4, out), -EAGAIN);
	/* The same before the message's length is known: the header cut
	 * after its type byte. */
	m = frame(b, hs, n, 1, n);
	ck_assert_int_eq(sni_parse(b, m, out), 0);
	put16(b + 6 + 3, n - 1 + 1);
	b[m] = 0;
	ck_assert_int_eq(sni_parse(b, m + 1, out), -EBADMSG);
	free(b);
	free(hs);
}
END_TEST

/*
 * The largest ClientHello: a handshake message of SNI_HELLO_MAX bytes (a
 * padding extension fills it) in SNI_RECORDS_MAX records, exactly
 * SNI_READ_MAX bytes. One byte more, or one record more, is refused.
 */
static size_t
big_handshake(uint8_t *hs, size_t msglen)
{
	size_t extlen = msglen - HS_EXT_OFF - 2;
	uint8_t *ext = alloc_buf();
	size_t s = sni_ext(ext, "a.test", 6), n;

	ext[s] = 0;
	ext[s + 1] = 21; /* padding */
	put16(ext + s + 2, extlen - s - 4);
	memset(ext + s + 4, 0, extlen - s - 4);
	n = handshake(hs, ext, extlen);
	ck_assert_uint_eq(n, msglen);
	free(ext);
	return n;
}

START_TEST(test_limits)
{
	uint8_t *hs = alloc_buf(), *b = alloc_buf();
	size_t n, m, at;
	char out[SNI_MAX + 1];

	n = big_handshake(hs, SNI_HELLO_MAX);
	m = frame(b, hs, n, n / SNI_RECORDS_MAX, n / SNI_RECORDS_MAX);
	ck_assert_uint_eq(m, SNI_READ_MAX);
	ck_assert_int_eq(parse_bytewise(b, m, out, &at), 0);
	ck_assert_uint_eq(at, SNI_READ_MAX);
	ck_assert_str_eq(out, "a.test");
	/* In records of the largest size, 2^14: four of them. */
	m = frame(b, hs, n, SNI_RECORD_MAX, SNI_RECORD_MAX);
	ck_assert_uint_eq(m, n + 4 * 5);
	ck_assert_int_eq(sni_parse(b, m, out), 0);
	/* And one byte over it, refused from the first header. */
	m = frame(b, hs, n, SNI_RECORD_MAX + 1, SNI_RECORD_MAX + 1);
	ck_assert_int_eq(sni_parse(b, m, out), -EBADMSG);
	ck_assert_int_eq(sni_parse(b, 5, out), -EBADMSG);
	/* One record more than allowed: the first byte of the last record
	 * moved into one of its own. */
	m = frame(b, hs, n, 1, n / SNI_RECORDS_MAX);
	ck_assert_int_eq(sni_parse(b, m, out), -EBADMSG);
	ck_assert_int_eq(sni_parse(b, SNI_READ_MAX, out), -EBADMSG);

	/* A byte more in the message. */
	n = big_handshake(hs, SNI_HELLO_MAX + 1);
	m = frame(b, hs, n, SNI_RECORD_MAX, SNI_RECORD_MAX);
	ck_assert_int_eq(sni_parse(b, m, out), -EBADMSG);
	/* Said by the message's header, before the rest comes. */
	ck_assert_int_eq(sni_parse(b, 5 + 4, out), -EBADMSG);
	ck_assert_int_eq(sni_parse(b, 5 + 3, out), -EAGAIN);

	/* Tiny records never make it wait past SNI_READ_MAX. */
	n = big_handshake(hs, SNI_HELLO_MAX);
	/* (Its first 12000 bytes are enough to go past that.) */
	m = frame(b, hs, 12000, 1, 1);
	ck_assert_uint_gt(m, SNI_READ_MAX);
	ck_assert_int_eq(parse_bytewise(b, SNI_READ_MAX, out, &at), -EBADMSG);
	ck_assert_uint_le(at, SNI_READ_MAX);
	free(b);
	free(hs);
}
END_TEST

/*
 * Every byte of real ClientHellos (one record, and cut in three) changed
 * in a few ways: no crash, no read past the bytes given (the sanitizers
 * watch), answers as assert_sane wants, and stable once given.
 */
START_TEST(test_every_byte_changed)
{
	static const uint8_t deltas[] = { 0x01, 0x80, 0xff };
	uint8_t *b = alloc_buf(), *f = alloc_buf(), *copy;
	size_t n = openssl_hello(b, BUF_MAX,
		   _i ? TLS1_3_VERSION : TLS1_2_VERSION, "a.test"),
	       m, at;
	char out[SNI_MAX + 1];

	m = frame(f, b + 5, n - 5, 40, 120);
	for (int pass = 0; pass < 2; pass++) {
		const uint8_t *src = pass == 0 ? b : f;
		size_t len = pass == 0 ? n : m;

		for (size_t i = 0; i < len; i++) {
			for (size_t d = 0; d < ARRAY_SIZE(deltas); d++) {
				/* Exactly len bytes, so ASan sees overreads. */
				copy = malloc(len);
				ck_assert_ptr_nonnull(copy);
				memcpy(copy, src, len);
				copy[i] ^= deltas[d];
				if (d == 0)
					(void)parse_bytewise(copy, len, out,
					    &at);
				else
					assert_sane(sni_parse(copy, len, out),
					    out);
				free(copy);
			}
			copy = malloc(i + 1);
			ck_assert_ptr_nonnull(copy);
			memcpy(copy, src, i + 1);
			assert_sane(sni_parse(copy, i + 1, out), out);
			free(copy);
		}
	}
	free(f);
	free(b);
}
END_TEST

/* Random bytes behind a valid record and handshake header. */
START_TEST(test_random_bytes)
{
	uint32_t x = 2463534242u;
	uint8_t *b;
	char out[SNI_MAX + 1];

	for (int round = 0; round < 20000; round++) {
		size_t len, hlen;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		len = 9 + x % 300;
		b = malloc(len);
		ck_assert_ptr_nonnull(b);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			b[i] = (uint8_t)x;
		}
		hlen = len - 9;
		if (x % 4 == 0 && hlen > 0)
			hlen--;
		put_record_header(b, 22, len - 5);
		b[5] = 1;
		put24(b + 6, hlen);
		/* Small lengths, so some of them make sense. */
		if (len > 45)
			b[43] %= 33;
		if (len > 46)
			b[44] = 0;
		assert_sane(sni_parse(b, len, out), out);
		free(b);
	}
}
END_TEST

static Suite *
sni_suite(void)
{
	Suite *s = suite_create("sni");
	TCase *tc;

	tc = tcase_create("real");
	tcase_set_timeout(tc, 60);
	tcase_add_unchecked_fixture(tc, real_setup, NULL);
	tcase_add_loop_test(tc, test_real_hello, 0,
	    (int)ARRAY_SIZE(real_cases));
	tcase_add_loop_test(tc, test_real_hello_bytewise, 0,
	    (int)ARRAY_SIZE(real_cases));
	tcase_add_loop_test(tc, test_real_hello_records, 0,
	    (int)ARRAY_SIZE(real_cases));
	tcase_add_test(tc, test_interleaved_record);
	tcase_add_test(tc, test_not_tls);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_ext_table, 0, (int)ARRAY_SIZE(ext_cases));
	tcase_add_test(tc, test_name_length);
	tcase_add_test(tc, test_outer_fields);
	tcase_add_test(tc, test_hello_fields);
	tcase_add_test(tc, test_last_record_overruns);
	tcase_add_test(tc, test_limits);
	suite_add_tcase(s, tc);

	tc = tcase_create("robust");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_every_byte_changed, 0, 2);
	tcase_add_test(tc, test_random_bytes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(sni_suite());
}
