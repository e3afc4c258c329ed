/*
 * Fuzzes the job CA and the host normalisation its names go through.
 * Input: lines; those before the first empty line are the CA's hosts
 * ("*.x.com" for subdomains), those after are hosts asked a leaf for (at
 * most CA_HOSTS and LEAVES of each). Properties:
 *  - normalisation agrees with an independent reading of its contract
 *    (one trailing dot dropped, 1 to 253 bytes, labels of 1 to 63 ASCII
 *    letters, digits and '-' not at either end), answers the input
 *    lowercased, is idempotent, and ignores case;
 *  - the CA is made exactly when every host normalises; its PEM holds a
 *    critical name constraint permitting exactly those names (".x.com"
 *    for "*.x.com") and excluding every IPv4 and IPv6 address;
 *  - a leaf is made exactly when its host normalises, is cached per
 *    normalised name, names only that host (one DNS SAN; the CN, or for
 *    a name too long for one an empty subject and a critical SAN), ends no
 *    later than the CA; and it verifies against the CA alone, for that
 *    host as a TLS server, exactly when a constraint permits the name:
 *    otherwise it is refused for the name constraints.
 */
#include "ca.h"
#include "egress.h"
#include "fuzz.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CA_HOSTS 6
#define LEAVES 6
#define LINE_MAX_LEN 300

/* The contract, read independently: the normal form into out, or false. */
static bool
model_normalise(const char *in, size_t len, char *out)
{
	size_t start = 0;

	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0 || len > EGRESS_HOST_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && in[i] != '.') {
			unsigned char c = (unsigned char)in[i];
			if (!((c >= 'a' && c <= 'z') ||
				(c >= 'A' && c <= 'Z') ||
				(c >= '0' && c <= '9') || c == '-'))
				return false;
			continue;
		}
		/* A label ends at i. */
		if (i - start < 1 || i - start > 63 || in[start] == '-' ||
		    in[i - 1] == '-')
			return false;
		start = i + 1;
	}
	for (size_t i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)in[i]);
	out[len] = '\0';
	return true;
}

static void
check_normalise(const char *in, size_t len)
{
	char norm[EGRESS_HOST_MAX + 1], again[EGRESS_HOST_MAX + 1];
	char want[EGRESS_HOST_MAX + 2], upper[LINE_MAX_LEN];
	bool ok = model_normalise(in, len, want);
	int r = egress_host_normalise(in, len, norm);

	FUZZ_ASSERT(r == 0 || r == -EINVAL);
	FUZZ_ASSERT((r == 0) == ok);
	if (r < 0)
		return;
	FUZZ_ASSERT(strcmp(norm, want) == 0);
	size_t n = strlen(norm);
	FUZZ_ASSERT(n >= 1 && n <= EGRESS_HOST_MAX);
	FUZZ_ASSERT(norm[0] != '.' && norm[n - 1] != '.' && norm[0] != '-' &&
	    norm[n - 1] != '-' && strstr(norm, "..") == NULL);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(norm[i] == '.' || norm[i] == '-' ||
		    (norm[i] >= 'a' && norm[i] <= 'z') ||
		    (norm[i] >= '0' && norm[i] <= '9'));
	FUZZ_ASSERT(egress_host_normalise(norm, n, again) == 0);
	FUZZ_ASSERT(strcmp(norm, again) == 0);
	/* Case does not matter. */
	for (size_t i = 0; i < len; i++)
		upper[i] = (char)toupper((unsigned char)in[i]);
	FUZZ_ASSERT(egress_host_normalise(upper, len, again) == 0);
	FUZZ_ASSERT(strcmp(norm, again) == 0);
}

/* A CA host as a DNS constraint: "x.com", or ".x.com" for "*.x.com". */
static bool
model_constraint(const char *host, char *out)
{
	bool wild = strncmp(host, "*.", 2) == 0;
	const char *h = wild ? host + 2 : host;

	out[0] = '.';
	return model_normalise(h, strlen(h), wild ? out + 1 : out);
}

/* RFC 5280 as OpenSSL reads a DNS constraint: "x.com" holds x.com and
 * its subdomains, ".x.com" the subdomains only. */
static bool
model_permits(char (*cons)[EGRESS_HOST_MAX + 2], size_t n, const char *host)
{
	size_t hl = strlen(host);

	for (size_t i = 0; i < n; i++) {
		const char *c = cons[i];
		size_t cl = strlen(c);

		if (c[0] == '.') {
			if (hl > cl && strcmp(host + hl - cl, c) == 0)
				return true;
		} else if (strcmp(host, c) == 0 ||
		    (hl > cl && host[hl - cl - 1] == '.' &&
			strcmp(host + hl - cl, c) == 0))
			return true;
	}
	return false;
}

static bool
ia5_is(const ASN1_IA5STRING *s, const char *want)
{
	return s != NULL && (size_t)s->length == strlen(want) &&
	    memcmp(s->data, want, (size_t)s->length) == 0;
}

/* The CA as the launcher installs it: its PEM, with the constraints. */
static X509 *
check_ca_pem(const struct job_ca *ca, char (*cons)[EGRESS_HOST_MAX + 2],
    size_t n)
{
	BIO *bio = BIO_new_mem_buf(ca_pem(ca), -1);
	X509 *cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	NAME_CONSTRAINTS *nc;
	int crit = -1;

	BIO_free(bio);
	FUZZ_ASSERT(cert != NULL);
	FUZZ_ASSERT(X509_check_ca(cert) == 1);
	nc = X509_get_ext_d2i(cert, NID_name_constraints, &crit, NULL);
	FUZZ_ASSERT(nc != NULL && crit == 1);
	FUZZ_ASSERT((size_t)sk_GENERAL_SUBTREE_num(nc->permittedSubtrees) == n);
	for (size_t i = 0; i < n; i++) {
		GENERAL_SUBTREE *t =
		    sk_GENERAL_SUBTREE_value(nc->permittedSubtrees, (int)i);
		FUZZ_ASSERT(t->base->type == GEN_DNS);
		FUZZ_ASSERT(ia5_is(t->base->d.dNSName, cons[i]));
	}
	FUZZ_ASSERT(sk_GENERAL_SUBTREE_num(nc->excludedSubtrees) == 2);
	for (int i = 0; i < 2; i++) {
		GENERAL_SUBTREE *t =
		    sk_GENERAL_SUBTREE_value(nc->excludedSubtrees, i);
		ASN1_OCTET_STRING *ip = t->base->d.iPAddress;
		FUZZ_ASSERT(t->base->type == GEN_IPADD);
		/* Address and mask, all zeros: every address. */
		FUZZ_ASSERT(ip->length == (i == 0 ? 8 : 32));
		for (int k = 0; k < ip->length; k++)
			FUZZ_ASSERT(ip->data[k] == 0);
	}
	NAME_CONSTRAINTS_free(nc);
	return cert;
}

/* The leaf names host alone, and verifies exactly when permitted. */
static void
check_leaf(X509 *ca_cert, X509 *leaf, const char *host, bool permitted)
{
	GENERAL_NAMES *san;
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	char cn[EGRESS_HOST_MAX + 2];
	int crit = -1, ok, err;

	san = X509_get_ext_d2i(leaf, NID_subject_alt_name, &crit, NULL);
	FUZZ_ASSERT(san != NULL && sk_GENERAL_NAME_num(san) == 1);
	GENERAL_NAME *g = sk_GENERAL_NAME_value(san, 0);
	FUZZ_ASSERT(g->type == GEN_DNS && ia5_is(g->d.dNSName, host));
	GENERAL_NAMES_free(san);
	/* The CN too when it fits; else no subject, and the SAN critical. */
	if (strlen(host) <= 64) {
		FUZZ_ASSERT(
		    X509_NAME_get_text_by_NID(X509_get_subject_name(leaf),
			NID_commonName, cn, sizeof(cn)) == (int)strlen(host));
		FUZZ_ASSERT(strcmp(cn, host) == 0);
	} else {
		FUZZ_ASSERT(
		    X509_NAME_entry_count(X509_get_subject_name(leaf)) == 0);
		FUZZ_ASSERT(crit == 1);
	}
	FUZZ_ASSERT(X509_check_ca(leaf) == 0);
	FUZZ_ASSERT(ASN1_TIME_compare(X509_get0_notAfter(leaf),
			X509_get0_notAfter(ca_cert)) <= 0);

	FUZZ_ASSERT(store != NULL && ctx != NULL);
	FUZZ_ASSERT(X509_STORE_add_cert(store, ca_cert) == 1);
	FUZZ_ASSERT(X509_STORE_CTX_init(ctx, store, leaf, NULL) == 1);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	FUZZ_ASSERT(X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx),
			host, 0) == 1);
	ok = X509_verify_cert(ctx);
	err = X509_STORE_CTX_get_error(ctx);
	if (permitted) {
		if (ok != 1)
			fprintf(stderr, "%s: %s\n", host,
			    X509_verify_cert_error_string(err));
		FUZZ_ASSERT(ok == 1);
	} else {
		FUZZ_ASSERT(ok != 1);
		FUZZ_ASSERT(err == X509_V_ERR_PERMITTED_VIOLATION);
	}
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
}

/* Splits data into NUL-terminated lines in buf: their count. */
static size_t
split_lines(const uint8_t *data, size_t size, char *buf, char **lines,
    size_t *lens, size_t max)
{
	size_t n = 0, at = 0;

	memcpy(buf, data, size);
	buf[size] = '\0';
	while (at <= size && n < max) {
		char *nl = memchr(buf + at, '\n', size - at);
		size_t end = nl != NULL ? (size_t)(nl - buf) : size;

		buf[end] = '\0';
		lines[n] = buf + at;
		lens[n++] = end - at;
		if (nl == NULL)
			break;
		at = end + 1;
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[2 * CA_HOSTS * LINE_MAX_LEN], *lines[CA_HOSTS + LEAVES + 1];
	char cons[CA_HOSTS][EGRESS_HOST_MAX + 2];
	size_t lens[CA_HOSTS + LEAVES + 1], nlines, nhosts = 0, first_leaf;
	const char *hosts[CA_HOSTS];
	bool all_ok = true;
	struct job_ca *ca = NULL;
	int r;

	if (size >= sizeof(buf))
		return 0;
	nlines =
	    split_lines(data, size, buf, lines, lens, CA_HOSTS + LEAVES + 1);
	for (size_t i = 0; i < nlines; i++)
		if (lens[i] < LINE_MAX_LEN)
			check_normalise(lines[i], lens[i]);
	while (nhosts < nlines && nhosts < CA_HOSTS && lens[nhosts] > 0) {
		hosts[nhosts] = lines[nhosts];
		/* ca_new reads C strings: up to a NUL. */
		if (!model_constraint(hosts[nhosts], cons[nhosts]))
			all_ok = false;
		nhosts++;
	}
	first_leaf = nhosts + 1;

	r = ca_new("job_fuzz", hosts, nhosts, time(NULL) + 3600, &ca);
	if (nhosts == 0 || !all_ok) {
		FUZZ_ASSERT(r == -EINVAL);
		return 0;
	}
	FUZZ_ASSERT(r == 0);
	X509 *ca_cert = check_ca_pem(ca, cons, nhosts);

	for (size_t i = first_leaf; i < nlines && i < first_leaf + LEAVES;
	     i++) {
		char norm[EGRESS_HOST_MAX + 2], shout[LINE_MAX_LEN + 1];
		const char *h = lines[i];
		X509 *cert, *again;
		EVP_PKEY *key, *key2;
		bool valid = model_normalise(h, strlen(h), norm);

		r = ca_leaf(ca, h, &cert, &key);
		FUZZ_ASSERT(r == 0 || r == -EINVAL);
		FUZZ_ASSERT((r == 0) == valid);
		if (r < 0)
			continue;
		FUZZ_ASSERT(cert != NULL && key != NULL);
		FUZZ_ASSERT(X509_check_private_key(cert, key) == 1);
		check_leaf(ca_cert, cert, norm,
		    model_permits(cons, nhosts, norm));
		/* Another spelling of the name: the same leaf. */
		snprintf(shout, sizeof(shout), "%s", h);
		for (char *c = shout; *c != '\0'; c++)
			*c = (char)toupper((unsigned char)*c);
		FUZZ_ASSERT(ca_leaf(ca, shout, &again, &key2) == 0);
		FUZZ_ASSERT(again == cert && key2 == key);
	}
	X509_free(ca_cert);
	ca_free(ca);
	return 0;
}
