/*
 * The job CA as a client and an auditor meet it: a client that trusts
 * only the job's CA completes TLS with the proxy's leaf for an allowed
 * host, and `openssl verify` refuses a leaf for any other name, because
 * the CA itself is name-constrained to the job's hosts.
 */
#include "ca.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const hosts[] = { "api.github.com", "*.example.com" };

static void
write_pem(const char *path, X509 *cert)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(PEM_write_X509(f, cert), 1);
	fclose(f);
}

/* Runs `openssl verify` of leaf against the CA alone: its exit status,
 * and its output in out. */
static int
openssl_verify(struct job_ca *ca, const char *host, char *out, size_t len)
{
	char capath[PATH_MAX], leafpath[PATH_MAX];
	X509 *cert;
	EVP_PKEY *key;
	char *argv[] = { "/usr/bin/openssl", "verify", "-CAfile", capath,
		"-purpose", "sslserver", leafpath, NULL };
	int pipefd[2], status;
	FILE *f;

	testutil_at(capath, "ca.pem");
	testutil_at(leafpath, "leaf.pem");
	f = fopen(capath, "w");
	fputs(ca_pem(ca), f);
	fclose(f);
	ck_assert_int_eq(ca_leaf(ca, host, &cert, &key), 0);
	write_pem(leafpath, cert);
	ck_assert_int_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	/* openssl writes in pieces: read to the end. */
	size_t got = 0;
	ssize_t n;
	while (got + 1 < len &&
	    (n = read(pipefd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(verify_accepts_only_the_jobs_hosts)
{
	struct job_ca *ca;
	char out[4096];

	ck_assert_int_eq(ca_new("job_x", hosts, 2, time(NULL) + 600, &ca), 0);
	ck_assert_msg(openssl_verify(ca, "api.github.com", out, sizeof(out)) ==
		0,
	    "%s", out);
	ck_assert_msg(openssl_verify(ca, "a.example.com", out, sizeof(out)) ==
		0,
	    "%s", out);
	ck_assert_msg(openssl_verify(ca, "deep.a.example.com", out,
			  sizeof(out)) == 0,
	    "%s", out);
	/* Outside the constraints: the CA's signature is worth nothing. */
	static const char *const outside[] = { "evil.com", "example.com",
		"github.com", "api.github.com.evil.com", "xexample.com" };
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		ck_assert_msg(openssl_verify(ca, outside[i], out,
				  sizeof(out)) != 0,
		    "%s verified", outside[i]);
		ck_assert_msg(strstr(out, "subtree") != NULL ||
			strstr(out, "name constraint") != NULL,
		    "%s: %s", outside[i], out);
	}
	ca_free(ca);
}
END_TEST

START_TEST(ca_and_leaves)
{
	struct job_ca *ca, *other;
	X509 *a, *b, *c;
	EVP_PKEY *ka, *kb, *kc;
	time_t until = time(NULL) + 600;

	ck_assert_int_eq(ca_new("job_x", hosts, 2, until, &ca), 0);
	ck_assert_int_eq(ca_new("job_y", hosts, 2, until, &other), 0);
	ck_assert_ptr_nonnull(strstr(ca_pem(ca), "BEGIN CERTIFICATE"));

	/* A leaf per host, cached. */
	ck_assert_int_eq(ca_leaf(ca, "api.github.com", &a, &ka), 0);
	ck_assert_int_eq(ca_leaf(ca, "API.GitHub.com", &b, &kb), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_int_eq(ca_leaf(ca, "a.example.com", &c, &kc), 0);
	ck_assert_ptr_ne(a, c);
	/* Random serials: leaves and CAs differ. */
	ck_assert_int_ne(ASN1_INTEGER_cmp(X509_get_serialNumber(a),
			     X509_get_serialNumber(c)),
	    0);
	/* ECDSA P-256, never valid past the job. */
	ck_assert_int_eq(EVP_PKEY_get_id(ka), EVP_PKEY_EC);
	ck_assert_int_eq(EVP_PKEY_get_bits(ka), 256);
	ck_assert_int_le(X509_cmp_time(X509_get0_notAfter(a), &until), 0);
	time_t later = until + 1;
	ck_assert_int_lt(X509_cmp_time(X509_get0_notAfter(a), &later), 0);
	/* The SAN is the host, exactly. */
	ck_assert_int_eq(X509_check_host(a, "api.github.com", 0, 0, NULL), 1);
	ck_assert_int_ne(X509_check_host(a, "x.api.github.com", 0, 0, NULL), 1);

	/* Refusals. */
	struct job_ca *bad;
	ck_assert_int_eq(ca_new("j", hosts, 0, until, &bad), -EINVAL);
	ck_assert_int_eq(ca_new("j", hosts, 2, time(NULL) - 1, &bad), -EINVAL);
	static const char *const odd[] = { "not a host" };
	ck_assert_int_eq(ca_new("j", odd, 1, until, &bad), -EINVAL);
	ck_assert_int_eq(ca_leaf(ca, "bad host", &a, &ka), -EINVAL);
	ca_free(ca);
	ca_free(other);
}
END_TEST

/* Moves bytes between the two ends of a memory TLS connection. */
static void
pump(BIO *from, BIO *to)
{
	char buf[16384];
	int n;

	while ((n = BIO_read(from, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(BIO_write(to, buf, n), n);
}

START_TEST(a_client_trusting_only_the_ca_completes_tls)
{
	struct job_ca *ca;
	X509 *leaf;
	EVP_PKEY *key;

	ck_assert_int_eq(ca_new("job_tls", hosts, 2, time(NULL) + 600, &ca), 0);
	ck_assert_int_eq(ca_leaf(ca, "api.github.com", &leaf, &key), 0);

	SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	ck_assert_int_eq(SSL_CTX_use_certificate(sctx, leaf), 1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey(sctx, key), 1);
	/* The client trusts the job CA and nothing else. */
	X509_STORE *store = SSL_CTX_get_cert_store(cctx);
	BIO *pem = BIO_new_mem_buf(ca_pem(ca), -1);
	X509 *cacert = PEM_read_bio_X509(pem, NULL, NULL, NULL);
	ck_assert_int_eq(X509_STORE_add_cert(store, cacert), 1);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);

	SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
	BIO *s_in = BIO_new(BIO_s_mem()), *s_out = BIO_new(BIO_s_mem());
	BIO *c_in = BIO_new(BIO_s_mem()), *c_out = BIO_new(BIO_s_mem());
	SSL_set_bio(s, s_in, s_out);
	SSL_set_bio(c, c_in, c_out);
	SSL_set_accept_state(s);
	SSL_set_connect_state(c);
	SSL_set_tlsext_host_name(c, "api.github.com");
	SSL_set1_host(c, "api.github.com");

	int cr = -1, sr = -1;
	for (int i = 0; i < 20 && (cr != 1 || sr != 1); i++) {
		cr = SSL_do_handshake(c);
		pump(c_out, s_in);
		sr = SSL_do_handshake(s);
		pump(s_out, c_in);
	}
	ck_assert_int_eq(cr, 1);
	ck_assert_int_eq(sr, 1);
	ck_assert_int_eq(SSL_get_verify_result(c), X509_V_OK);

	SSL_free(s);
	SSL_free(c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	X509_free(cacert);
	BIO_free(pem);
	ca_free(ca);
}
END_TEST

static Suite *
ca_suite(void)
{
	Suite *s = suite_create("ca");
	TCase *tc = tcase_create("ca");

	testutil_tmp_fixture(tc, "ca");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, verify_accepts_only_the_jobs_hosts);
	tcase_add_test(tc, ca_and_leaves);
	tcase_add_test(tc, a_client_trusting_only_the_ca_completes_tls);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(ca_suite());
}
