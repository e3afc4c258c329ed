/*
 * A TLS upstream's close against its last data (tlsclose): an answer
 * without Content-Length and without chunking ends at the upstream's
 * close (HTTP/1.0, or HTTP/1.1 with Connection: close). The upstream here,
 * a TLS server in a thread of the test, writes the whole answer and its
 * close_notify as TLS records into memory, then on its socket in one
 * write, so that the proxy's reads find the last data and the close
 * together: bodies of 1 B, 4 KiB + 1, 16 KiB + 1 and 1 MiB, with a small
 * head and with one of 17,000 bytes (its first record is all head, the
 * second the head's end, the body and then the close_notify: libevent
 * reads the close in the read that holds that record and tells it before
 * the record is in the input), through a terminated rule that injects
 * nothing and one that injects (the answer scanned 4 KiB at a time under
 * the job's scan budget). The job's client, TLS over its channel, must
 * get every byte (its SHA-256) and an answer that says it is whole.
 *
 * The same upstream that closes without close_notify (a truncation: a
 * TCP FIN anyone on the path can send) must not give the job an answer
 * that looks whole: a read-to-close answer cannot say so, so the proxy
 * sends a job's HTTP/1.1 request its answer chunked, and the last chunk
 * only after the upstream's close_notify. A chunked answer cut short
 * ends without its last chunk too.
 *
 * And the injected header's bytes: after injected requests to the TLS
 * upstream, no readable byte of the proxy's memory holds the header line
 * that carried the key (libevent's copy of the head was freed unwiped,
 * and so was the scratch buffer's first block when it grew).
 *
 * The real broker and proxy (injectkit); no job runs.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define KEY "tk_tlsclose_0123456789abcdefghij"
/* A head field this long makes the head's first TLS record all head. */
#define BIG_PAD 17000

static struct injectkit kit;

/* --- the upstream --------------------------------------------------------- */

struct tserver {
	int lfd;
	uint16_t port;
	SSL_CTX *ctx;
	pthread_t thread;
	atomic_bool stop;
};

static struct tserver plain_up, inj_up;
static char plain_channel[300], plain_ca[4096];

/* The body of n bytes every case sends: letters from a generator seeded
 * by n, so that a byte out of place changes the digest. */
static unsigned char *
body_make(size_t n)
{
	unsigned char *b = malloc(n + 1);
	uint32_t x = (uint32_t)n * 2654435761u + 1;

	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (unsigned char)('a' + (x >> 16) % 26);
	}
	b[n] = '\0';
	return b;
}

static void
digest(const unsigned char *p, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	ck_assert_int_eq(EVP_Digest(p, n, out, &len, EVP_sha256(), NULL), 1);
}

/* Reads a decimal number at *s up to a '/' or ' ', and moves *s past it. */
static size_t
number(const char **s)
{
	size_t v = 0;

	while (**s >= '0' && **s <= '9') {
		v = v * 10 + (size_t)(**s - '0');
		(*s)++;
	}
	if (**s == '/')
		(*s)++;
	return v;
}

/* Writes all of p[0..n) on fd, blocking. */
static void
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/*
 * One connection: the request "GET /r/KIND/VERSION/PAD/N", answered with
 * N bytes of body_make after a head with a PAD-byte field, HTTP/1.VERSION
 * (1.1 with Connection: close), as TLS records written into memory, then
 * on fd in one write. KIND: "clean" ends with close_notify, "cut" without
 * (only the TCP close), "chunkcut" sends the body as one chunk, no last
 * chunk, no close_notify.
 */
static void
serve_one(struct tserver *s, int fd)
{
	struct timeval tv = { 5, 0 };
	char req[4096];
	size_t got = 0;
	SSL *ssl = SSL_new(s->ctx);

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1)
		goto out;
	while (got < sizeof(req) - 1) {
		int r = SSL_read(ssl, req + got, (int)(sizeof(req) - 1 - got));
		if (r <= 0)
			goto out;
		got += (size_t)r;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	const char *p = strstr(req, " /r/");
	if (p == NULL)
		goto out;
	p += 4;
	const char *kind = p;
	p = strchr(p, '/');
	if (p == NULL)
		goto out;
	size_t klen = (size_t)(p - kind);
	p++;
	size_t version = number(&p), pad = number(&p), n = number(&p);
	bool chunked = klen == 8 && strncmp(kind, "chunkcut", 8) == 0;
	bool clean = klen == 5 && strncmp(kind, "clean", 5) == 0;

	size_t cap = 256 + pad + n + 64;
	char *ans = malloc(cap);
	ck_assert_ptr_nonnull(ans);
	int hl = snprintf(ans, cap,
	    "HTTP/1.%zu 200 OK\r\nContent-Type: text/plain\r\n%s%s",
	    version == 0 ? (size_t)0 : (size_t)1,
	    version == 0 ? "" : "Connection: close\r\n",
	    chunked ? "Transfer-Encoding: chunked\r\n" : "");
	size_t len = (size_t)hl;
	if (pad > 0) {
		memcpy(ans + len, "X-Pad: ", 7);
		len += 7;
		memset(ans + len, 'p', pad);
		len += pad;
		memcpy(ans + len, "\r\n", 2);
		len += 2;
	}
	memcpy(ans + len, "\r\n", 2);
	len += 2;
	if (chunked)
		len += (size_t)snprintf(ans + len, cap - len, "%zx\r\n", n);
	unsigned char *body = body_make(n);
	memcpy(ans + len, body, n);
	len += n;
	free(body);
	if (chunked) {
		memcpy(ans + len, "\r\n", 2);
		len += 2;
	}

	BIO *mem = BIO_new(BIO_s_mem());
	ck_assert_ptr_nonnull(mem);
	SSL_set0_wbio(ssl, mem);
	ck_assert_int_eq(SSL_write(ssl, ans, (int)len), (int)len);
	free(ans);
	if (clean)
		(void)SSL_shutdown(ssl);
	char *data;
	long m = BIO_get_mem_data(mem, &data);
	if (m > 0)
		write_all(fd, data, (size_t)m);
	/* The FIN; what the proxy still sends is read, so that the close
	 * is not a reset. */
	(void)shutdown(fd, SHUT_WR);
	tv.tv_sec = 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char sink[4096];
	while (read(fd, sink, sizeof(sink)) > 0)
		;
out:
	SSL_free(ssl);
	close(fd);
}

static void *
serve_main(void *arg)
{
	struct tserver *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = { s->lfd, POLLIN, 0 };
		if (poll(&p, 1, 100) != 1)
			continue;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			serve_one(s, fd);
	}
	return NULL;
}

static void
serve_start(struct tserver *s, const char *dir, const char *host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char cert[400], key[400];

	snprintf(cert, sizeof(cert), "%s/%s.pem", dir, host);
	snprintf(key, sizeof(key), "%s/%s.key", dir, host);
	s->ctx = SSL_CTX_new(TLS_server_method());
	ck_assert_ptr_nonnull(s->ctx);
	ck_assert_int_eq(SSL_CTX_use_certificate_file(s->ctx, cert,
			     SSL_FILETYPE_PEM),
	    1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(s->ctx, key,
			     SSL_FILETYPE_PEM),
	    1);
	/* No tickets: nothing of the server's comes after its answer. */
	SSL_CTX_set_num_tickets(s->ctx, 0);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->lfd, 0);
	ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(s->lfd, 16), 0);
	ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
	s->port = ntohs(sa.sin_port);
	atomic_store(&s->stop, false);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, serve_main, s), 0);
}

static void
serve_stop(struct tserver *s)
{
	if (s->ctx == NULL)
		return;
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	SSL_CTX_free(s->ctx);
	s->ctx = NULL;
}

/* --- the stack ------------------------------------------------------------ */

static json_t *
rule(const char *host, uint16_t port, bool inject)
{
	json_t *r =
	    json_pack("{s:s, s:i, s:s, s:[s], s:[s], s:s, s:[s]}", "host", host,
		"port", port, "tls", "terminate", "methods", "GET", "paths",
		"/r/", "reason", "read to close", "allow_cidrs", "127.0.0.0/8");

	ck_assert_ptr_nonnull(r);
	if (inject) {
		ck_assert_int_eq(json_object_set_new(r, "audience",
				     json_string("api")),
		    0);
		ck_assert_int_eq(json_object_set_new(r, "inject",
				     json_pack("{s:s, s:s, s:s, s:s}", "secret",
					 "up-key", "header", "X-Api-Key",
					 "format", "Key {secret}", "capability",
					 "x.read")),
		    0);
	}
	return r;
}

static void
setup(void)
{
	const char *hosts[] = { "plain.test", "api.test", NULL };
	char dir[300], extra[400];

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	serve_start(&plain_up, dir, "plain.test");
	serve_start(&inj_up, dir, "api.test");
	snprintf(extra, sizeof(extra), "\"upstream_ca_file\": \"%s/ca.pem\"",
	    dir);
	injectkit_stack_start(&kit,
	    "127.0.0.1 plain.test\n127.0.0.1 api.test\n", "tlsclose", extra);
	injectkit_secret(&kit, "up-key", KEY);
	injectkit_job_open(&kit, "plain",
	    injectkit_manifest("plain",
		json_pack("[o]", rule("plain.test", plain_up.port, false))),
	    NULL, plain_channel, plain_ca);
	injectkit_job_start(&kit, "inj",
	    injectkit_manifest("inj",
		json_pack("[o]", rule("api.test", inj_up.port, true))));
}

static void
teardown(void)
{
	daemon_stop(&kit.proxy);
	daemon_stop(&kit.broker);
	serve_stop(&plain_up);
	serve_stop(&inj_up);
}

/* --- the job's client ----------------------------------------------------- */

struct answer {
	char *raw; /* what came, head and body as sent */
	size_t len;
	bool tls_clean; /* the proxy's close came with close_notify */
};

/* CONNECT host on channel, TLS with ca_pem over it, req inside, and
 * everything until the proxy closes (20 s at most). */
static void
fetch(const char *channel, const char *ca_pem, const char *host, uint16_t port,
    const char *req, struct answer *a)
{
	char connect[256];
	int fd = unix_connect(channel);
	struct timeval tv = { 20, 0 };

	ck_assert_int_ge(fd, 0);
	snprintf(connect, sizeof(connect),
	    "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", host, port, host,
	    port);
	char *resp = http_exchange(fd, connect, strlen(connect), 5000);
	ck_assert_msg(http_status(resp) == 200, "CONNECT: %.300s", resp);
	free(resp);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	ck_assert_ptr_nonnull(ctx);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	BIO *bio = BIO_new_mem_buf(ca_pem, -1);
	X509 *ca = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	ck_assert_ptr_nonnull(ca);
	X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
	X509_free(ca);
	BIO_free(bio);
	SSL *ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	SSL_set_tlsext_host_name(ssl, host);
	SSL_set1_host(ssl, host);
	SSL_set_fd(ssl, fd);
	ck_assert_msg(SSL_connect(ssl) == 1, "handshake with the job's CA");
	ck_assert_int_eq(SSL_write(ssl, req, (int)strlen(req)),
	    (int)strlen(req));
	size_t cap = 2 << 20;
	a->raw = malloc(cap + 1);
	a->len = 0;
	a->tls_clean = false;
	ck_assert_ptr_nonnull(a->raw);
	for (;;) {
		if (a->len == cap) {
			cap *= 2;
			a->raw = realloc(a->raw, cap + 1);
			ck_assert_ptr_nonnull(a->raw);
		}
		int r = SSL_read(ssl, a->raw + a->len, (int)(cap - a->len));
		if (r <= 0) {
			a->tls_clean =
			    SSL_get_error(ssl, r) == SSL_ERROR_ZERO_RETURN;
			break;
		}
		a->len += (size_t)r;
	}
	a->raw[a->len] = '\0';
	ERR_clear_error();
	SSL_free(ssl);
	close(fd);
}

/* The answer a as the job reads it. */
struct reading {
	int status;
	bool chunked, last_chunk, bad_framing;
	unsigned char *body;
	size_t blen;
};

static void
read_answer(const struct answer *a, struct reading *r)
{
	memset(r, 0, sizeof(*r));
	r->status = http_status(a->raw);
	char *end = memmem(a->raw, a->len, "\r\n\r\n", 4);
	r->body = malloc(a->len + 1);
	ck_assert_ptr_nonnull(r->body);
	if (end == NULL)
		return;
	size_t hlen = (size_t)(end - a->raw) + 4;
	char *head = strndup(a->raw, hlen);
	ck_assert_ptr_nonnull(head);
	r->chunked =
	    strcasestr(head, "\r\nTransfer-Encoding: chunked\r\n") != NULL;
	free(head);
	const char *p = a->raw + hlen, *lim = a->raw + a->len;
	if (!r->chunked) {
		memcpy(r->body, p, (size_t)(lim - p));
		r->blen = (size_t)(lim - p);
		return;
	}
	for (;;) {
		size_t size = 0;
		const char *q = p;
		while (q < lim &&
		    strchr("0123456789abcdefABCDEF", *q) != NULL &&
		    *q != '\0') {
			size = size * 16 +
			    (size_t)(*q <= '9' ? *q - '0'
					       : (*q | 0x20) - 'a' + 10);
			q++;
		}
		if (q == p || lim - q < 2) {
			r->bad_framing = q == p && q < lim;
			return; /* cut before or inside a size line */
		}
		if (q[0] != '\r' || q[1] != '\n') {
			r->bad_framing = true;
			return;
		}
		q += 2;
		if (size == 0) {
			r->last_chunk =
			    lim - q >= 2 && q[0] == '\r' && q[1] == '\n';
			return;
		}
		if ((size_t)(lim - q) < size) {
			memcpy(r->body + r->blen, q, (size_t)(lim - q));
			r->blen += (size_t)(lim - q);
			return; /* cut inside the chunk */
		}
		memcpy(r->body + r->blen, q, size);
		r->blen += size;
		q += size;
		if (lim - q < 2)
			return;
		if (q[0] != '\r' || q[1] != '\n') {
			r->bad_framing = true;
			return;
		}
		p = q + 2;
	}
}

/* One exchange: the job's HTTP/1.1 GET /r/kind/version/pad/n on the plain
 * or the injecting rule, read as the job reads it into *r. */
static void
exchange(bool inject, const char *kind, int version, size_t pad, size_t n,
    struct reading *r)
{
	struct tserver *s = inject ? &inj_up : &plain_up;
	const char *host = inject ? "api.test" : "plain.test";
	char req[1024], auth[600] = "";
	struct answer a;

	if (inject)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    kit.tok);
	snprintf(req, sizeof(req),
	    "GET /r/%s/%d/%zu/%zu HTTP/1.1\r\nHost: %s:%u\r\n%s\r\n", kind,
	    version, pad, n, host, s->port, auth);
	fetch(inject ? kit.channel : plain_channel,
	    inject ? kit.ca_pem : plain_ca, host, s->port, req, &a);
	read_answer(&a, r);
	if (r->status != 200)
		fprintf(stderr, "%s %s/%d/%zu/%zu: %.300s\n",
		    inject ? "injected" : "plain", kind, version, pad, n,
		    a.raw);
	free(a.raw);
}

static const size_t sizes[] = { 1, 4097, 16385, 1 << 20 };

/* Every size, with a small and a big head, HTTP/1.0 and 1.1, plain and
 * injected, reps times each (twice for 1 MiB): the whole body, and then
 * an answer that says it is whole (chunked, its last chunk there). */
static void
every_byte(bool inject, int reps)
{
	const char *how = inject ? "injected" : "plain";
	char unsaid[200] = "";

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
		for (int rep = 0; rep < (sizes[si] > 65536 ? 2 : reps); rep++)
			for (int big = 0; big < 2; big++) {
				size_t n = sizes[si], pad = big ? BIG_PAD : 0;
				int version = rep % 2;
				unsigned char want[32], have[32];
				unsigned char *body = body_make(n);
				struct reading r;

				digest(body, n, want);
				free(body);
				exchange(inject, "clean", version, pad, n, &r);
				digest(r.body, r.blen, have);
				ck_assert_msg(r.status == 200,
				    "%s, %zu B, head pad %zu, HTTP/1.%d: "
				    "status %d, not the answer",
				    how, n, pad, version, r.status);
				ck_assert_msg(r.blen == n &&
					memcmp(want, have, 32) == 0,
				    "%s, %zu B, head pad %zu, HTTP/1.%d: "
				    "%zu bytes of body came, not the %zu sent",
				    how, n, pad, version, r.blen, n);
				if ((!r.chunked || !r.last_chunk ||
					r.bad_framing) &&
				    unsaid[0] == '\0')
					snprintf(unsaid, sizeof(unsaid),
					    "%zu B, HTTP/1.%d: chunked %d, "
					    "last chunk %d, bad framing %d",
					    n, version, r.chunked, r.last_chunk,
					    r.bad_framing);
				free(r.body);
			}
	ck_assert_msg(unsaid[0] == '\0',
	    "%s: every byte came, but not an answer that says it is whole "
	    "(read to the close, a cut one reads the same): %s",
	    how, unsaid);
}

START_TEST(every_byte_of_a_read_to_close_answer_comes)
{
	every_byte(false, 4);
}
END_TEST

START_TEST(every_byte_of_a_scanned_read_to_close_answer_comes)
{
	every_byte(true, 4);
}
END_TEST

/* The upstream closes without close_notify: no answer that looks whole.
 * Nor one cut inside its chunks. */
static void
cut_case(bool inject)
{
	const char *how = inject ? "injected" : "plain";

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si];
		struct reading r;

		for (int version = 0; version < 2; version++) {
			exchange(inject, "cut", version, 0, n, &r);
			ck_assert_msg(r.status == 200 && !r.bad_framing,
			    "%s cut, %zu B: status %d, bad framing %d", how, n,
			    r.status, r.bad_framing);
			ck_assert_msg(r.chunked && !r.last_chunk,
			    "%s, %zu B, HTTP/1.%d, the upstream's close "
			    "without close_notify: the job got an answer "
			    "that looks whole (chunked %d, last chunk %d, "
			    "%zu bytes)",
			    how, n, version, r.chunked, r.last_chunk, r.blen);
			free(r.body);
		}
		exchange(inject, "chunkcut", 1, 0, n, &r);
		ck_assert_msg(r.status == 200 && r.chunked && !r.last_chunk,
		    "%s, %zu B, a chunked answer cut short: status %d, "
		    "chunked %d, last chunk %d",
		    how, n, r.status, r.chunked, r.last_chunk);
		free(r.body);
	}
	ck_assert_msg(injectkit_decisions_hold(&kit.proxy,
			  "\"detail\":\"upstream_truncated\""),
	    "no decision line says upstream_truncated");
}

START_TEST(a_close_without_close_notify_is_no_whole_answer)
{
	cut_case(false);
}
END_TEST

START_TEST(a_scanned_close_without_close_notify_is_no_whole_answer)
{
	cut_case(true);
}
END_TEST

/* --- the injected header's bytes ---------------------------------------- */

/* Whether the readable mappings of pid hold needle; those of more than
 * 256 MiB are left out (AddressSanitizer's shadow: zeros, terabytes). */
static bool
memory_holds(pid_t pid, const char *needle)
{
	enum { CHUNK = 1 << 20 };
	char path[64], line[512];
	size_t nlen = strlen(needle);
	bool found = false;

	ck_assert_int_gt(pid, 1);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *maps = fopen(path, "re");
	ck_assert_ptr_nonnull(maps);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int mem = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(mem, 0);
	char *buf = malloc(CHUNK + nlen);
	ck_assert_ptr_nonnull(buf);
	while (!found && fgets(line, sizeof(line), maps) != NULL) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 ||
		    perms[0] != 'r' || strstr(line, "[vvar]") != NULL ||
		    strstr(line, "[vsyscall]") != NULL || hi - lo > 256UL << 20)
			continue;
		for (unsigned long at = lo; at < hi && !found; at += CHUNK) {
			size_t want = hi - at < CHUNK + nlen - 1
			    ? hi - at
			    : CHUNK + nlen - 1;
			ssize_t got = pread(mem, buf, want, (off_t)at);
			if (got <= 0)
				break;
			found = memmem(buf, (size_t)got, needle, nlen) != NULL;
		}
	}
	free(buf);
	close(mem);
	fclose(maps);
	return found;
}

/* The injected request's head went to libevent as a copy that is wiped
 * once written: after the requests, no byte of the proxy's memory holds
 * the header line (evbuffer_add's copy was freed unwiped, and under
 * AddressSanitizer's quarantine it stayed). The proxy still holds the
 * value itself (its scan, its cache): the look finds what is there. */
START_TEST(no_copy_of_the_injected_header_outlives_its_send)
{
	char line[128];

	snprintf(line, sizeof(line), "X-Api-Key: Key %s", KEY);
	for (int i = 0; i < 3; i++) {
		struct reading r;
		exchange(true, "clean", 1, 0, 100, &r);
		ck_assert_msg(r.status == 200, "the injected request: %d",
		    r.status);
		free(r.body);
	}
	ck_assert_msg(memory_holds(kit.proxy.pid, KEY),
	    "the proxy's memory does not hold the value it scans for: the "
	    "look reads nothing");
	ck_assert_msg(!memory_holds(kit.proxy.pid, line),
	    "the proxy's memory still holds the injected header line "
	    "(\"%s\") after its requests ended",
	    line);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("tlsclose");
	TCase *tc = tcase_create("read_to_close");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, every_byte_of_a_read_to_close_answer_comes);
	tcase_add_test(tc, every_byte_of_a_scanned_read_to_close_answer_comes);
	tcase_add_test(tc, a_close_without_close_notify_is_no_whole_answer);
	tcase_add_test(tc,
	    a_scanned_close_without_close_notify_is_no_whole_answer);
	tcase_add_test(tc, no_copy_of_the_injected_header_outlives_its_send);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
