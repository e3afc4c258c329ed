/*
 * The issuers of short-lived upstream credentials (broker/issuers.c,
 * broker/issuer_http.c) without the daemons: an issuer's URL (https, or
 * plain http to loopback only), the checks of a secret's configuration
 * and what of it may be shown, the GitHub App's JWT (RS256, verified here
 * with the public key; iss, iat - 60, exp at most 10 minutes on), and an
 * OAuth issuer in a thread of this test on 127.0.0.1: the token obtained
 * once and held, obtained again once it expired, the job's revoke an RFC
 * 7009 request with the client's Basic authentication for each credential
 * still alive, a release after the revoke refused without asking the
 * issuer, requests at once served by one call to the issuer, what is
 * held kept sealed in a state file across a restart, an issuer
 * that is not there told as refused connections, and the counts. The
 * releases' queue: a job's calls at most ISSUER_JOB_CALLS at once, its
 * waiters at most ISSUER_JOB_WAITERS_MAX (then -EBUSY, another job not
 * refused), all answered by one call, and a stop answering every waiter
 * -ESHUTDOWN at once.
 */
#include "issuer_http.h"
#include "issuers.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* --- URLs and configurations ------------------------------------------ */

START_TEST(test_urls)
{
	struct ihttp_url u;

	ck_assert_int_eq(ihttp_parse_url("https://api.github.com", &u), 0);
	ck_assert(u.tls);
	ck_assert_str_eq(u.host, "api.github.com");
	ck_assert_str_eq(u.port, "443");
	ck_assert_str_eq(u.path, "/");
	ck_assert_int_eq(
	    ihttp_parse_url("https://id.example:8443/oauth/token?x=1", &u), 0);
	ck_assert_str_eq(u.port, "8443");
	ck_assert_str_eq(u.path, "/oauth/token?x=1");
	ck_assert_int_eq(ihttp_parse_url("http://127.0.0.1:9/t", &u), 0);
	ck_assert(!u.tls);
	ck_assert(u.literal);
	ck_assert_int_eq(ihttp_parse_url("http://[::1]:9/t", &u), 0);
	ck_assert_str_eq(u.host, "::1");
	/* Plain http elsewhere than loopback: refused, named apart. */
	ck_assert_int_eq(ihttp_parse_url("http://id.example/t", &u), -EPERM);
	ck_assert_int_eq(ihttp_parse_url("http://10.0.0.1/t", &u), -EPERM);
	ck_assert_int_eq(ihttp_parse_url("http://localhost/t", &u), -EPERM);
	ck_assert_int_eq(ihttp_parse_url("https://u:p@id.example/", &u),
	    -EINVAL);
	ck_assert_int_eq(ihttp_parse_url("https://id.example/#f", &u), -EINVAL);
	ck_assert_int_eq(ihttp_parse_url("https://id.example/a b", &u),
	    -EINVAL);
	ck_assert_int_eq(ihttp_parse_url("https://id.example:0/", &u), -EINVAL);
	ck_assert_int_eq(ihttp_parse_url("https://id.example:99999/", &u),
	    -EINVAL);
	ck_assert_int_eq(ihttp_parse_url("ftp://id.example/", &u), -EINVAL);
	ck_assert_int_eq(ihttp_parse_url("https:///x", &u), -EINVAL);
}
END_TEST

static char *
rsa_pem(int bits)
{
	EVP_PKEY *k = EVP_RSA_gen((unsigned)bits);
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out;
	long n;

	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL,
			     NULL),
	    1);
	n = BIO_get_mem_data(b, &data);
	out = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(out);
	memcpy(out, data, (size_t)n);
	out[n] = '\0';
	BIO_free(b);
	EVP_PKEY_free(k);
	return out;
}

static int
check(json_t *body, json_t **cfg, char *why, size_t len)
{
	int r = issuers_config_check(body, cfg, why, len);

	json_decref(body);
	return r;
}

START_TEST(test_oauth_config)
{
	json_t *cfg, *pub;
	char why[200];
	char *text;

	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_OAUTH, "token_url",
				   "https://id.example/token", "client_id",
				   "cid", "client_secret", "csecret"),
			     &cfg, why, sizeof(why)),
	    0);
	ck_assert_str_eq(json_string_value(json_object_get(cfg, "client_auth")),
	    "basic");
	ck_assert_str_eq(issuers_issuer(cfg), "https://id.example/token");
	pub = issuers_public(cfg);
	text = json_dumps(pub, 0);
	ck_assert_ptr_null(strstr(text, "csecret"));
	ck_assert_ptr_nonnull(strstr(text, "cid"));
	free(text);
	json_decref(pub);
	json_decref(cfg);

	/* Plain http to the world, an unknown field, a bad client_auth, a
	 * missing secret, a control byte: each refused and named. */
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_OAUTH, "token_url",
				   "http://id.example/token", "client_id", "c",
				   "client_secret", "s"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "loopback"));
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_OAUTH, "token_url",
				   "https://id.example/token", "client_id", "c",
				   "client_secret", "s", "audience", "x"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "audience"));
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_OAUTH, "token_url",
				   "https://id.example/token", "client_id", "c",
				   "client_secret", "s", "client_auth", "jwt"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s}", "kind",
				   ISSUER_OAUTH, "token_url",
				   "https://id.example/token", "client_id",
				   "c"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "client_secret"));
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_OAUTH, "token_url",
				   "https://id.example/token", "client_id",
				   "c\nd", "client_secret", "s"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_int_eq(check(json_pack("{s:s}", "kind", "static"), &cfg, why,
			     sizeof(why)),
	    -EINVAL);
}
END_TEST

START_TEST(test_github_config)
{
	char *pem = rsa_pem(2048), *small = rsa_pem(1024), why[200], *text;
	json_t *cfg, *pub;

	ck_assert_int_eq(
	    check(json_pack("{s:s, s:i, s:s, s:s, s:s, s:[s], s:{s:s}}", "kind",
		      ISSUER_GITHUB, "app_id", 12, "installation_id", "34",
		      "private_key", pem, "api", "https://ghe.example/api/v3/",
		      "repositories", "widgets", "permissions", "contents",
		      "read"),
		&cfg, why, sizeof(why)),
	    0);
	ck_assert_str_eq(json_string_value(json_object_get(cfg, "app_id")),
	    "12");
	ck_assert_str_eq(issuers_issuer(cfg), "https://ghe.example/api/v3");
	pub = issuers_public(cfg);
	text = json_dumps(pub, 0);
	ck_assert_ptr_null(strstr(text, "PRIVATE"));
	ck_assert_ptr_nonnull(strstr(text, "widgets"));
	free(text);
	json_decref(pub);
	json_decref(cfg);
	/* The default API. */
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_GITHUB, "app_id", "12",
				   "installation_id", "34", "private_key", pem),
			     &cfg, why, sizeof(why)),
	    0);
	ck_assert_str_eq(issuers_issuer(cfg), ISSUER_GITHUB_API);
	json_decref(cfg);

	/* A key too small, not a key, a bad id, a bad repository name, a
	 * permission level GitHub does not have. */
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_GITHUB, "app_id", "12",
				   "installation_id", "34", "private_key",
				   small),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "2048"));
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_GITHUB, "app_id", "12",
				   "installation_id", "34", "private_key",
				   "not a key"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s}", "kind",
				   ISSUER_GITHUB, "app_id", "12x",
				   "installation_id", "34", "private_key", pem),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s, s:[s]}", "kind",
				   ISSUER_GITHUB, "app_id", "12",
				   "installation_id", "34", "private_key", pem,
				   "repositories", "../etc"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s, s:{s:s}}",
				   "kind", ISSUER_GITHUB, "app_id", "12",
				   "installation_id", "34", "private_key", pem,
				   "permissions", "contents", "owner"),
			     &cfg, why, sizeof(why)),
	    -EINVAL);
	free(pem);
	free(small);
}
END_TEST

/* --- the JWT ------------------------------------------------------------ */

static unsigned char *
b64url_decode(const char *s, size_t n, size_t *ret_len)
{
	char *std = calloc(1, n + 4);
	unsigned char *out = calloc(1, n + 4);
	size_t m = n;
	int k;

	for (size_t i = 0; i < n; i++)
		std[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
	while (m % 4 != 0)
		std[m++] = '=';
	k = EVP_DecodeBlock(out, (unsigned char *)std, (int)m);
	ck_assert_int_ge(k, 0);
	*ret_len = (size_t)k - (n % 4 == 2 ? 2 : n % 4 == 3 ? 1 : 0);
	free(std);
	return out;
}

START_TEST(test_github_jwt)
{
	char *pem = rsa_pem(2048), *jwt;
	int64_t now = 1796000000;
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t hl, cl, sl;

	ck_assert_int_eq(issuers_github_jwt(pem, "4242", now, &jwt), 0);
	char *dot1 = strchr(jwt, '.'), *dot2 = strrchr(jwt, '.');
	ck_assert_ptr_nonnull(dot1);
	ck_assert_ptr_ne(dot1, dot2);
	unsigned char *head = b64url_decode(jwt, (size_t)(dot1 - jwt), &hl);
	unsigned char *claims =
	    b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &cl);
	unsigned char *sig = b64url_decode(dot2 + 1, strlen(dot2 + 1), &sl);
	ck_assert_str_eq((char *)head, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
	json_t *c = json_loads((char *)claims, 0, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(json_string_value(json_object_get(c, "iss")), "4242");
	ck_assert_int_eq(json_integer_value(json_object_get(c, "iat")),
	    now - 60);
	ck_assert_int_eq(json_integer_value(json_object_get(c, "exp")),
	    now + 540);
	json_decref(c);
	ck_assert_uint_eq(sl, 256);
	/* The signature holds under the public key, and only over these
	 * bytes. */
	ck_assert_int_eq(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k),
	    1);
	ck_assert_int_eq(EVP_DigestVerify(md, sig, sl, (unsigned char *)jwt,
			     (size_t)(dot2 - jwt)),
	    1);
	EVP_MD_CTX_free(md);
	md = EVP_MD_CTX_new();
	jwt[3] ^= 1;
	ck_assert_int_eq(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k),
	    1);
	ck_assert_int_ne(EVP_DigestVerify(md, sig, sl, (unsigned char *)jwt,
			     (size_t)(dot2 - jwt)),
	    1);
	ck_assert_int_eq(issuers_github_jwt("nope", "4242", now, &jwt),
	    -EINVAL);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
	BIO_free(b);
	free(head);
	free(claims);
	free(sig);
	free(jwt);
	free(pem);
}
END_TEST

/* --- an OAuth issuer in a thread ----------------------------------------- */

struct fake {
	int fd;
	unsigned port;
	long long expires_in;
	int delay_ms; /* before each answer */
	int revoke_status; /* a revocation's answer; 0: 200 */
	pthread_t t;
	pthread_mutex_t lock;
	char last_token[64];
	char reqs[8][2048]; /* the requests seen, head and body */
	size_t nreqs;
	bool stop;
};

static void *
fake_run(void *arg)
{
	struct fake *f = arg;
	unsigned serial = 0;

	for (;;) {
		int c = accept(f->fd, NULL, NULL);
		char req[2048] = "", answer[512], body[200];
		size_t n = 0;

		if (c < 0)
			return NULL;
		/* One request: the head and a Content-Length body. */
		for (;;) {
			ssize_t k = read(c, req + n, sizeof(req) - 1 - n);
			char *he, *cl;
			if (k <= 0)
				break;
			n += (size_t)k;
			req[n] = '\0';
			he = strstr(req, "\r\n\r\n");
			cl = strstr(req, "Content-Length: ");
			if (he != NULL && cl != NULL &&
			    n >= (size_t)(he + 4 - req) +
				    strtoul(cl + 16, NULL, 10))
				break;
		}
		pthread_mutex_lock(&f->lock);
		if (f->nreqs < 8)
			snprintf(f->reqs[f->nreqs++], sizeof(f->reqs[0]), "%s",
			    req);
		if (strncmp(req, "POST /token ", 12) == 0) {
			snprintf(f->last_token, sizeof(f->last_token),
			    "tok-%u-abcdef", ++serial);
			snprintf(body, sizeof(body),
			    "{\"access_token\":\"%s\",\"token_type\":"
			    "\"Bearer\","
			    "\"expires_in\":%lld}",
			    f->last_token, f->expires_in);
		} else {
			body[0] = '\0';
		}
		int code = strncmp(req, "POST /revoke ", 13) == 0 &&
			f->revoke_status != 0
		    ? f->revoke_status
		    : 200;
		pthread_mutex_unlock(&f->lock);
		if (f->delay_ms > 0)
			usleep((useconds_t)f->delay_ms * 1000);
		snprintf(answer, sizeof(answer),
		    "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		    code, strlen(body), body);
		if (write(c, answer, strlen(answer)) < 0) {
			/* the client went */
		}
		close(c);
	}
}

static void
fake_start(struct fake *f, int expires_in)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	memset(f, 0, sizeof(*f));
	f->expires_in = expires_in;
	pthread_mutex_init(&f->lock, NULL);
	f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->fd, 0);
	ck_assert_int_eq(bind(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(f->fd, 8), 0);
	getsockname(f->fd, (struct sockaddr *)&a, &al);
	f->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&f->t, NULL, fake_run, f), 0);
}

static void
fake_stop(struct fake *f)
{
	shutdown(f->fd, SHUT_RDWR);
	pthread_join(f->t, NULL);
	close(f->fd);
	pthread_mutex_destroy(&f->lock);
}

static json_t *
fake_cfg(const struct fake *f)
{
	char url[80], rev[80], why[200];
	json_t *cfg;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/token", f->port);
	snprintf(rev, sizeof(rev), "http://127.0.0.1:%u/revoke", f->port);
	ck_assert_int_eq(check(json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
				   "kind", ISSUER_OAUTH, "token_url", url,
				   "client_id", "my app", "client_secret",
				   "p&ss", "scope", "a b", "revocation_url",
				   rev),
			     &cfg, why, sizeof(why)),
	    0);
	return cfg;
}

START_TEST(test_oauth_held_refreshed_and_revoked)
{
	struct issuers *is;
	struct issuers_counts n;
	struct issued got;
	struct fake f;
	json_t *cfg, *list;
	long status;
	char why[200];

	fake_start(&f, 1);
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_open(NULL, NULL, NULL, NULL, NULL, NULL, &is),
	    0);
	ck_assert_int_eq(issuers_release(is, "job_a", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	ck_assert(got.fresh);
	ck_assert_str_eq(got.value, "tok-1-abcdef");
	ck_assert_int_gt(got.expires, 0);
	/* RFC 6749 4.4: a form POST, the client's Basic authentication of
	 * its form-encoded id and secret ("my app", "p&ss"). */
	pthread_mutex_lock(&f.lock);
	ck_assert_ptr_nonnull(strstr(f.reqs[0],
	    "Content-Type: application/x-www-form-urlencoded\r\n"));
	ck_assert_ptr_nonnull(
	    strstr(f.reqs[0], "Authorization: Basic bXklMjBhcHA6cCUyNnNz\r\n"));
	ck_assert_ptr_nonnull(strstr(f.reqs[0],
	    "\r\n\r\ngrant_type=client_credentials&scope=a%20b"));
	pthread_mutex_unlock(&f.lock);
	/* Once it expired (1 s), the next release obtains another. */
	sleep(2);
	pthread_mutex_lock(&f.lock);
	f.expires_in = 3600;
	pthread_mutex_unlock(&f.lock);
	ck_assert_int_eq(issuers_release(is, "job_a", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	ck_assert(got.fresh);
	ck_assert_str_eq(got.value, "tok-2-abcdef");
	json_decref(cfg);

	/* A long-lived one for another job is held. */
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_release(is, "job_b", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	ck_assert_str_eq(got.value, "tok-3-abcdef");
	ck_assert_int_eq(issuers_release(is, "job_b", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	ck_assert(!got.fresh);
	ck_assert_str_eq(got.value, "tok-3-abcdef");
	/* A new version of the secret is a new credential. */
	ck_assert_int_eq(issuers_release(is, "job_b", "api", 2, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	ck_assert(got.fresh);
	ck_assert_str_eq(got.value, "tok-4-abcdef");

	/* job_a's revoke: the expired one was dropped when the next came,
	 * the live one is revoked with RFC 7009. */
	list = issuers_revoke_job(is, "job_a", false);
	ck_assert_uint_eq(json_array_size(list), 1);
	json_t *e = json_array_get(list, 0);
	ck_assert(json_is_true(json_object_get(e, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 200);
	json_decref(list);
	pthread_mutex_lock(&f.lock);
	ck_assert_uint_eq(f.nreqs, 5);
	ck_assert_int_eq(strncmp(f.reqs[4], "POST /revoke ", 13), 0);
	ck_assert_ptr_nonnull(strstr(f.reqs[4],
	    "\r\n\r\ntoken=tok-2-abcdef&token_type_hint=access_token"));
	ck_assert_ptr_nonnull(
	    strstr(f.reqs[4], "Authorization: Basic bXklMjBhcHA6cCUyNnNz\r\n"));
	pthread_mutex_unlock(&f.lock);
	/* Revoked: a release after it gets nothing, and the issuer is not
	 * asked. */
	ck_assert_int_eq(issuers_release(is, "job_a", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    -ESTALE);
	pthread_mutex_lock(&f.lock);
	ck_assert_uint_eq(f.nreqs, 5);
	pthread_mutex_unlock(&f.lock);
	list = issuers_revoke_job(is, "job_a", false);
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);
	/* job_b's two, in the order obtained. */
	list = issuers_revoke_job(is, "job_b", false);
	ck_assert_uint_eq(json_array_size(list), 2);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(list, 1),
				 "version")),
	    2);
	json_decref(list);
	issuers_counts(is, &n);
	ck_assert_uint_eq(n.issued, 4);
	ck_assert_uint_eq(n.revoked, 3);
	ck_assert_uint_eq(n.revoke_failed, 0);
	json_decref(cfg);
	issuers_close(is);
	fake_stop(&f);
}
END_TEST

struct racer {
	struct issuers *is;
	json_t *cfg;
	struct issued got;
	int r;
};

static void *
race(void *arg)
{
	struct racer *x = arg;
	long status;
	char why[200];

	x->r = issuers_release(x->is, "job_d", "api", 1, x->cfg, &x->got,
	    &status, why, sizeof(why));
	return NULL;
}

START_TEST(test_one_call_for_requests_at_once)
{
	struct racer x[4];
	pthread_t t[4];
	struct issuers *is;
	struct fake f;
	json_t *cfg, *list;

	fake_start(&f, 3600);
	f.delay_ms = 300; /* the others arrive while the first asks */
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_open(NULL, NULL, NULL, NULL, NULL, NULL, &is),
	    0);
	for (int i = 0; i < 4; i++) {
		x[i] = (struct racer){ .is = is, .cfg = cfg };
		ck_assert_int_eq(pthread_create(&t[i], NULL, race, &x[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(x[i].r, 0);
		ck_assert_str_eq(x[i].got.value, "tok-1-abcdef");
	}
	pthread_mutex_lock(&f.lock);
	ck_assert_uint_eq(f.nreqs, 1);
	pthread_mutex_unlock(&f.lock);
	list = issuers_revoke_job(is, "job_d", false);
	ck_assert_uint_eq(json_array_size(list), 1);
	json_decref(list);
	json_decref(cfg);
	issuers_close(is);
	fake_stop(&f);
}
END_TEST

/* A waiter of issuers_release_queue whose answer is counted. */
struct counted {
	struct issuers_wait w;
	atomic_int *answered;
};

static void
counted_done(struct issuers_wait *w)
{
	struct counted *c = w->arg;

	atomic_fetch_add(c->answered, 1);
}

static void
counts_now(struct issuers *is, uint64_t *waiting, uint64_t *running)
{
	struct issuers_counts ic;

	issuers_counts(is, &ic);
	*waiting = ic.releases_waiting;
	*running = ic.calls_in_flight;
}

START_TEST(test_queue_bounds_a_jobs_calls_and_stops)
{
	enum { N = ISSUER_JOB_CALLS + 2 };
	struct counted c[N + 1];
	atomic_int answered = 0;
	struct issuers *is;
	uint64_t waiting, running;
	struct fake f;
	char secret[16];
	json_t *cfg;

	fake_start(&f, 3600);
	f.delay_ms = 1000; /* one answer at a time, each a second late */
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_open(NULL, NULL, NULL, NULL, NULL, NULL, &is),
	    0);
	/* One job's releases of N secrets: ISSUER_JOB_CALLS calls run, the
	 * rest wait their turn, none on a thread of the caller's. */
	for (int i = 0; i < N; i++) {
		c[i] = (struct counted){ .answered = &answered };
		c[i].w.done = counted_done;
		c[i].w.arg = &c[i];
		snprintf(secret, sizeof(secret), "api-%d", i);
		ck_assert_int_eq(issuers_release_queue(is, "job_q", secret, 1,
				     cfg, &c[i].w),
		    0);
	}
	for (int i = 0; i < 100; i++) {
		counts_now(is, &waiting, &running);
		if (running >= ISSUER_JOB_CALLS)
			break;
		usleep(10000);
	}
	usleep(200000); /* a third would have started by now */
	counts_now(is, &waiting, &running);
	ck_assert_uint_eq(running, ISSUER_JOB_CALLS);
	ck_assert_uint_eq(waiting, N);
	ck_assert_int_eq(atomic_load(&answered), 0);

	/* The stop answers every waiter now, running call or not, and any
	 * later one at once; the calls end in issuers_close. */
	issuers_stop_releases(is);
	ck_assert_int_eq(atomic_load(&answered), N);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(c[i].w.result, -ESHUTDOWN);
		ck_assert_str_eq(c[i].w.why, "the broker is stopping");
	}
	counts_now(is, &waiting, &running);
	ck_assert_uint_eq(waiting, 0);
	c[N] = (struct counted){ .answered = &answered };
	c[N].w.done = counted_done;
	c[N].w.arg = &c[N];
	ck_assert_int_eq(issuers_release_queue(is, "job_q", "api-0", 1, cfg,
			     &c[N].w),
	    -ESHUTDOWN);
	issuers_close(is);
	ck_assert_int_eq(atomic_load(&answered), N);
	json_decref(cfg);
	fake_stop(&f);
}
END_TEST

START_TEST(test_queue_caps_a_jobs_waiters)
{
	enum { N = ISSUER_JOB_WAITERS_MAX };
	static struct counted c[N + 1];
	atomic_int answered = 0;
	struct issuers *is;
	struct issuers_counts ic;
	struct fake f;
	json_t *cfg;

	fake_start(&f, 3600);
	f.delay_ms = 400; /* two calls, one after the other, within 2 s */
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_open(NULL, NULL, NULL, NULL, NULL, NULL, &is),
	    0);
	for (int i = 0; i <= N; i++) {
		c[i] = (struct counted){ .answered = &answered };
		c[i].w.done = counted_done;
		c[i].w.arg = &c[i];
		ck_assert_int_eq(issuers_release_queue(is, "job_c", "api", 1,
				     cfg, &c[i].w),
		    i < N ? 0 : -EBUSY);
	}
	ck_assert_ptr_nonnull(strstr(c[N].w.why, "of job job_c wait"));
	/* Another job is not refused for it. */
	ck_assert_int_eq(issuers_release(is, "job_other", "api", 1, cfg,
			     &c[N].w.got, &c[N].w.status, c[N].w.why,
			     sizeof(c[N].w.why)),
	    0);
	issuers_counts(is, &ic);
	ck_assert_uint_eq(ic.releases_refused, 1);
	/* The job's waiters all get the one call's credential. */
	for (int i = 0; i < 600 && atomic_load(&answered) < N; i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&answered), N);
	int fresh = 0;
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(c[i].w.result, 0);
		ck_assert_str_eq(c[i].w.got.value, c[0].w.got.value);
		fresh += c[i].w.got.fresh;
	}
	ck_assert_int_eq(fresh, 1); /* one tells of a new credential */
	issuers_close(is);
	json_decref(cfg);
	fake_stop(&f);
}
END_TEST

START_TEST(test_state_kept_sealed_across_a_restart)
{
	static const unsigned char key[ISSUERS_KEY_LEN] =
	    "0123456789abcdef0123456789abcde";
	unsigned char other[ISSUERS_KEY_LEN];
	char dir[] = "/tmp/check_issuers.XXXXXX", path[300], *data = NULL;
	struct issuers *is;
	struct issued got;
	struct fake f;
	json_t *cfg, *list;
	long status;
	char why[200];
	FILE *fp;
	size_t n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, ISSUERS_STATE_FILE);
	fake_start(&f, 3600);
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_open(NULL, path, key, NULL, NULL, NULL, &is),
	    0);
	ck_assert_int_eq(issuers_release(is, "job_e", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	issuers_close(is);
	/* Sealed: neither the token nor the client's secret in clear. */
	fp = fopen(path, "rbe");
	ck_assert_ptr_nonnull(fp);
	data = calloc(1, 1 << 16);
	n = fread(data, 1, (1 << 16) - 1, fp);
	fclose(fp);
	ck_assert_uint_gt(n, 0);
	ck_assert_ptr_null(memmem(data, n, "tok-1", 5));
	ck_assert_ptr_null(memmem(data, n, "p%26ss", 6));
	free(data);
	/* Another key: refused, not started empty. */
	memcpy(other, key, sizeof(other));
	other[0] ^= 1;
	ck_assert_int_eq(issuers_open(NULL, path, other, NULL, NULL, NULL, &is),
	    -EBADMSG);
	/* The same key: held as before, and revoked at the job's revoke. */
	ck_assert_int_eq(issuers_open(NULL, path, key, NULL, NULL, NULL, &is),
	    0);
	ck_assert_int_eq(issuers_release(is, "job_e", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	ck_assert(!got.fresh);
	ck_assert_str_eq(got.value, "tok-1-abcdef");
	list = issuers_revoke_job(is, "job_e", false);
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert(json_is_true(json_object_get(json_array_get(list, 0), "ok")));
	json_decref(list);
	issuers_close(is);
	/* Nothing held any more after a restart. */
	ck_assert_int_eq(issuers_open(NULL, path, key, NULL, NULL, NULL, &is),
	    0);
	list = issuers_revoke_job(is, "job_e", false);
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);
	issuers_close(is);
	pthread_mutex_lock(&f.lock);
	ck_assert_uint_eq(f.nreqs, 2);
	pthread_mutex_unlock(&f.lock);
	json_decref(cfg);
	fake_stop(&f);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* An issuer's expires_in past any date: taken as a year, no overflow
 * (UBSan stops the test on one). */
START_TEST(test_a_huge_expires_in)
{
	struct issuers *is;
	struct issued got;
	struct fake f;
	json_t *cfg, *list;
	long status;
	char why[200];

	fake_start(&f, 60);
	f.expires_in = 9223372036854775807LL;
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_open(NULL, NULL, NULL, NULL, NULL, NULL, &is),
	    0);
	ck_assert_int_eq(issuers_release(is, "job_f", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	ck_assert_int_gt(got.expires, (int64_t)time(NULL));
	ck_assert_int_le(got.expires, (int64_t)time(NULL) + 366LL * 24 * 3600);
	list = issuers_revoke_job(is, "job_f", false);
	json_decref(list);
	json_decref(cfg);
	issuers_close(is);
	fake_stop(&f);
}
END_TEST

START_TEST(test_issuer_away)
{
	struct issuers *is;
	struct issuers_counts n;
	struct issued got;
	struct fake f;
	json_t *cfg, *list;
	long status;
	char why[200];

	/* An address nobody listens on any more. */
	fake_start(&f, 60);
	cfg = fake_cfg(&f);
	fake_stop(&f);
	ck_assert_int_eq(issuers_open(NULL, NULL, NULL, NULL, NULL, NULL, &is),
	    0);
	ck_assert_int_eq(issuers_release(is, "job_c", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    -ECONNREFUSED);
	ck_assert_ptr_nonnull(strstr(why, "connection refused"));
	ck_assert_str_eq(got.value, "");
	list = issuers_revoke_job(is, "job_c", false);
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);
	issuers_counts(is, &n);
	ck_assert_uint_eq(n.issued, 0);
	ck_assert_uint_eq(n.issue_failed, 1);
	json_decref(cfg);
	issuers_close(is);
	ck_assert_int_eq(issuers_open("/nonexistent/ca.pem", NULL, NULL, NULL,
			     NULL, NULL, &is),
	    -EINVAL);
}
END_TEST

/* The background revocations' audit, as the broker's hook hears it. */
struct heard {
	pthread_mutex_t lock;
	int revoked, failed;
};

static void
hear(void *arg, const char *event, json_t *detail)
{
	struct heard *h = arg;

	pthread_mutex_lock(&h->lock);
	h->revoked += strcmp(event, "upstream_revoked") == 0;
	h->failed += strcmp(event, "upstream_revoke_failed") == 0;
	pthread_mutex_unlock(&h->lock);
	json_decref(detail);
}

/* One broker (no database): a revocation the issuer refuses stays
 * pending in the state file, across a restart, and the background
 * thread revokes it once the issuer answers, audited. */
START_TEST(test_a_refused_revocation_is_retried)
{
	char dir[] = "/tmp/check_issuers_XXXXXX", path[300];
	unsigned char key[ISSUERS_KEY_LEN] = { 7 };
	struct heard h = { .revoked = 0 };
	struct issuers *is;
	struct issued got;
	struct fake f;
	json_t *cfg, *list, *e;
	long status;
	char why[200];
	int revoked = 0;

	pthread_mutex_init(&h.lock, NULL);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, ISSUERS_STATE_FILE);
	fake_start(&f, 3600);
	cfg = fake_cfg(&f);
	ck_assert_int_eq(issuers_open(NULL, path, key, NULL, hear, &h, &is), 0);
	ck_assert_int_eq(issuers_release(is, "job_r", "api", 1, cfg, &got,
			     &status, why, sizeof(why)),
	    0);
	pthread_mutex_lock(&f.lock);
	f.revoke_status = 503;
	pthread_mutex_unlock(&f.lock);
	list = issuers_revoke_job(is, "job_r", false);
	ck_assert_uint_eq(json_array_size(list), 1);
	e = json_array_get(list, 0);
	ck_assert(json_is_false(json_object_get(e, "ok")));
	ck_assert(json_is_true(json_object_get(e, "pending")));
	ck_assert_int_eq(json_integer_value(json_object_get(e, "attempt")), 1);
	json_decref(list);
	ck_assert_int_eq(issuers_pending(is), 1);
	/* Durable: a restarted broker still has it to do. */
	issuers_close(is);
	ck_assert_int_eq(issuers_open(NULL, path, key, NULL, hear, &h, &is), 0);
	ck_assert_int_eq(issuers_pending(is), 1);
	pthread_mutex_lock(&f.lock);
	f.revoke_status = 0;
	pthread_mutex_unlock(&f.lock);
	for (int i = 0; i < 200 && revoked == 0; i++) {
		usleep(50000);
		pthread_mutex_lock(&h.lock);
		revoked = h.revoked;
		pthread_mutex_unlock(&h.lock);
	}
	ck_assert_int_eq(revoked, 1);
	ck_assert_int_eq(issuers_pending(is), 0);
	issuers_close(is);
	json_decref(cfg);
	fake_stop(&f);
	unlink(path);
	rmdir(dir);
	pthread_mutex_destroy(&h.lock);
}
END_TEST

static Suite *
issuers_suite(void)
{
	Suite *s = suite_create("issuers");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_urls);
	tcase_add_test(tc, test_oauth_config);
	tcase_add_test(tc, test_github_config);
	tcase_add_test(tc, test_github_jwt);
	tcase_add_test(tc, test_oauth_held_refreshed_and_revoked);
	tcase_add_test(tc, test_one_call_for_requests_at_once);
	tcase_add_test(tc, test_queue_bounds_a_jobs_calls_and_stops);
	tcase_add_test(tc, test_queue_caps_a_jobs_waiters);
	tcase_add_test(tc, test_state_kept_sealed_across_a_restart);
	tcase_add_test(tc, test_a_huge_expires_in);
	tcase_add_test(tc, test_issuer_away);
	tcase_add_test(tc, test_a_refused_revocation_is_retried);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(issuers_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
