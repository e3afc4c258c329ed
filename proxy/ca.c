/*
 * The job CA: key generation, the CA certificate with its name
 * constraints, and leaves per host. OpenSSL 3 EVP APIs throughout; every
 * failure is -EIO and leaves nothing half made.
 */
#include "ca.h"

#include "egress.h"

#include <errno.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CA_CN_MAX 64 /* characters in a commonName */

struct leaf {
	char host[EGRESS_HOST_MAX + 1];
	X509 *cert;
	EVP_PKEY *key;
};

struct job_ca {
	EVP_PKEY *key;
	X509 *cert;
	char *pem;
	time_t not_after;
	struct leaf leaves[CA_MAX_LEAVES];
	size_t nleaves;
};

static EVP_PKEY *
new_key(void)
{
	return EVP_EC_gen("P-256");
}

/* A random positive 127-bit serial: unguessable, never repeated. */
static int
random_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int ok;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return -EIO;
	b[0] &= 0x7f;
	bn = BN_bin2bn(b, sizeof(b), NULL);
	ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	return ok ? 0 : -EIO;
}

static int
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (e == NULL)
		return -EIO;
	int ok = X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok ? 0 : -EIO;
}

/* "critical,permitted;DNS.0:a.com,...,excluded;IP.0:0.0.0.0/0.0.0.0,..." */
static char *
constraints(const char *const *hosts, size_t n)
{
	size_t cap = 128 + n * (EGRESS_HOST_MAX + 24);
	char *s = malloc(cap);
	size_t len;

	if (s == NULL)
		return NULL;
	len = (size_t)snprintf(s, cap, "critical");
	for (size_t i = 0; i < n; i++) {
		const char *h = hosts[i];
		char norm[EGRESS_HOST_MAX + 1];
		bool wild = strncmp(h, "*.", 2) == 0;

		if (egress_host_normalise(wild ? h + 2 : h,
			strlen(wild ? h + 2 : h), norm) < 0) {
			free(s);
			return NULL;
		}
		/* A DNS constraint "x.com" holds x.com and its subdomains;
		 * ".x.com" the subdomains only, as "*.x.com" means. */
		len += (size_t)snprintf(s + len, cap - len,
		    ",permitted;DNS.%zu:%s%s", i, wild ? "." : "", norm);
	}
	snprintf(s + len, cap - len,
	    ",excluded;IP.0:0.0.0.0/0.0.0.0,excluded;IP.1:::/::");
	return s;
}

static int
set_validity(X509 *x, time_t from, time_t until)
{
	return X509_time_adj_ex(X509_getm_notBefore(x), 0, 0, &from) != NULL &&
		X509_time_adj_ex(X509_getm_notAfter(x), 0, 0, &until) != NULL
	    ? 0
	    : -EIO;
}

int
ca_new(const char *job, const char *const *hosts, size_t nhosts,
    time_t not_after, struct job_ca **ret)
{
	struct job_ca *ca;
	char cn[128], *nc = NULL;
	time_t now = time(NULL);
	BIO *bio = NULL;
	int r = -EIO;

	if (nhosts == 0 || not_after <= now)
		return -EINVAL;
	nc = constraints(hosts, nhosts);
	if (nc == NULL)
		return -EINVAL;
	ca = calloc(1, sizeof(*ca));
	if (ca == NULL) {
		free(nc);
		return -ENOMEM;
	}
	ca->not_after = not_after;
	ca->key = new_key();
	ca->cert = X509_new();
	if (ca->key == NULL || ca->cert == NULL)
		goto out;
	snprintf(cn, sizeof(cn), "cordon job CA %.80s", job);
	X509_NAME *name = X509_get_subject_name(ca->cert);
	if (X509_set_version(ca->cert, 2) != 1 || random_serial(ca->cert) < 0 ||
	    set_validity(ca->cert, now - 60, not_after) < 0 ||
	    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
		(const unsigned char *)"cordon", -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
		(const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(ca->cert, name) != 1 ||
	    X509_set_pubkey(ca->cert, ca->key) != 1 ||
	    add_ext(ca->cert, ca->cert, NID_basic_constraints,
		"critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(ca->cert, ca->cert, NID_key_usage,
		"critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") <
		0 ||
	    add_ext(ca->cert, ca->cert, NID_name_constraints, nc) < 0 ||
	    X509_sign(ca->cert, ca->key, EVP_sha256()) == 0)
		goto out;

	bio = BIO_new(BIO_s_mem());
	if (bio == NULL || PEM_write_bio_X509(bio, ca->cert) != 1)
		goto out;
	char *data;
	long len = BIO_get_mem_data(bio, &data);
	/* The BIO's bytes are not a string: no NUL after them. */
	ca->pem = malloc((size_t)len + 1);
	if (ca->pem == NULL)
		goto out;
	memcpy(ca->pem, data, (size_t)len);
	ca->pem[len] = '\0';
	r = 0;
out:
	BIO_free(bio);
	free(nc);
	if (r < 0) {
		ca_free(ca);
		return r;
	}
	*ret = ca;
	return 0;
}

void
ca_free(struct job_ca *ca)
{
	if (ca == NULL)
		return;
	for (size_t i = 0; i < ca->nleaves; i++) {
		X509_free(ca->leaves[i].cert);
		EVP_PKEY_free(ca->leaves[i].key);
	}
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key); /* OpenSSL clears private key material */
	free(ca->pem);
	free(ca);
}

const char *
ca_pem(const struct job_ca *ca)
{
	return ca->pem;
}

int
ca_leaf(struct job_ca *ca, const char *host, X509 **ret_cert,
    EVP_PKEY **ret_key)
{
	char norm[EGRESS_HOST_MAX + 1], san[EGRESS_HOST_MAX + 16];
	time_t now = time(NULL);
	struct leaf *l;

	if (egress_host_normalise(host, strlen(host), norm) < 0)
		return -EINVAL;
	for (size_t i = 0; i < ca->nleaves; i++)
		if (strcmp(ca->leaves[i].host, norm) == 0) {
			*ret_cert = ca->leaves[i].cert;
			*ret_key = ca->leaves[i].key;
			return 0;
		}
	if (ca->nleaves == CA_MAX_LEAVES)
		return -E2BIG;
	l = &ca->leaves[ca->nleaves];
	l->key = new_key();
	l->cert = X509_new();
	/* A commonName holds at most 64 characters (RFC 5280's
	 * ub-common-name): a longer name goes without one, its subject
	 * empty and so its SAN critical (RFC 5280, 4.1.2.6). */
	bool cn = strlen(norm) <= CA_CN_MAX;
	snprintf(san, sizeof(san), "%sDNS:%s", cn ? "" : "critical,", norm);
	X509_NAME *name =
	    l->cert != NULL ? X509_get_subject_name(l->cert) : NULL;
	if (l->key == NULL || l->cert == NULL ||
	    X509_set_version(l->cert, 2) != 1 || random_serial(l->cert) < 0 ||
	    set_validity(l->cert, now - 60, ca->not_after) < 0 ||
	    (cn &&
		X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
		    (const unsigned char *)norm, -1, -1, 0) != 1) ||
	    X509_set_issuer_name(l->cert, X509_get_subject_name(ca->cert)) !=
		1 ||
	    X509_set_pubkey(l->cert, l->key) != 1 ||
	    add_ext(l->cert, ca->cert, NID_basic_constraints,
		"critical,CA:FALSE") < 0 ||
	    add_ext(l->cert, ca->cert, NID_key_usage,
		"critical,digitalSignature") < 0 ||
	    add_ext(l->cert, ca->cert, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(l->cert, ca->cert, NID_authority_key_identifier,
		"keyid:always") < 0 ||
	    add_ext(l->cert, ca->cert, NID_subject_alt_name, san) < 0 ||
	    X509_sign(l->cert, ca->key, EVP_sha256()) == 0) {
		X509_free(l->cert);
		EVP_PKEY_free(l->key);
		memset(l, 0, sizeof(*l));
		return -EIO;
	}
	snprintf(l->host, sizeof(l->host), "%s", norm);
	ca->nleaves++;
	*ret_cert = l->cert;
	*ret_key = l->key;
	return 0;
}
