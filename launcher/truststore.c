/*
 * The JVM's trust store in the job (truststore.h): the host's trusted
 * certificates and the job's CA as a PKCS12 store Java reads with no
 * option, and the host's /etc directories a JVM needs to start.
 *
 * A JKS store (magic FEEDFEED, version 1 or 2) is read as Java reads a
 * trust store, without its password: every trustedCertEntry, in order,
 * under its alias; key entries are skipped (a trust store holds none).
 * A PKCS12 store gives its certificate bags that carry Java's
 * trusted-key-usage attribute (the ones Java trusts), copied as they
 * are. No certificate is parsed here (Java parses them as it loads the
 * store): each must be one whole DER SEQUENCE. The store written
 * has one unencrypted SafeContents (Java loads a trust store with no
 * password, so its certificates must be readable without one) and a
 * SHA-256 MAC with "changeit", so `keytool -storepass changeit` opens it.
 */
#include "truststore.h"

#include "path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define JKS_MAGIC 0xFEEDFEEDu
#define JCEKS_MAGIC 0xCECECECEu
#define ALIAS_MAX 256 /* bytes of a host alias kept */

struct reader {
	const unsigned char *p;
	size_t left;
};

static bool
take(struct reader *r, size_t n, const unsigned char **ret)
{
	if (r->left < n)
		return false;
	*ret = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

static bool
u16(struct reader *r, uint32_t *v)
{
	const unsigned char *b;

	if (!take(r, 2, &b))
		return false;
	*v = (uint32_t)b[0] << 8 | b[1];
	return true;
}

static bool
u32(struct reader *r, uint32_t *v)
{
	const unsigned char *b;

	if (!take(r, 4, &b))
		return false;
	*v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
	    b[3];
	return true;
}

/* A Java modified-UTF-8 string: its bytes and length. */
static bool
utf(struct reader *r, const unsigned char **s, uint32_t *n)
{
	return u16(r, n) && take(r, *n, s);
}

/* A length-prefixed blob (a certificate, a key). */
static bool
blob(struct reader *r, const unsigned char **b, uint32_t *n)
{
	return u32(r, n) && *n <= r->left && take(r, *n, b);
}

/* One trusted certificate bag for a certificate's DER, as keytool
 * writes it: the DER in the bag as it is (parsing 144 certificates with
 * OpenSSL 3 took 20 ms a job; Java parses them when it loads the store),
 * its alias as friendlyName and the trusted-key-usage attribute. The DER
 * is checked to be one whole SEQUENCE. */
static int
add_trusted(STACK_OF(PKCS12_SAFEBAG) * bags, const unsigned char *der, size_t n,
    const char *alias)
{
	const unsigned char *p = der;
	long len;
	int tag, class, rc = -ENOMEM;
	ASN1_STRING *seq = NULL;
	ASN1_TYPE *any = NULL;
	ASN1_OBJECT *eku = NULL;
	PKCS12_SAFEBAG *bag = NULL;

	if (n > INT_MAX ||
	    (ASN1_get_object(&p, &len, &tag, &class, (long)n) & 0x80) != 0 ||
	    tag != V_ASN1_SEQUENCE || class != V_ASN1_UNIVERSAL ||
	    p + len != der + n)
		return -EINVAL;
	if ((seq = ASN1_STRING_type_new(V_ASN1_SEQUENCE)) == NULL ||
	    ASN1_STRING_set(seq, der, (int)n) != 1 ||
	    (any = ASN1_TYPE_new()) == NULL)
		goto out;
	ASN1_TYPE_set(any, V_ASN1_SEQUENCE, seq);
	seq = NULL;
	if ((bag = PKCS12_item_pack_safebag(any, ASN1_ITEM_rptr(ASN1_ANY),
		 NID_x509Certificate, NID_certBag)) != NULL &&
	    (eku = OBJ_txt2obj(TRUSTSTORE_ANY_EKU_OID, 1)) != NULL &&
	    PKCS12_add_friendlyname_utf8(bag, alias, -1) == 1 &&
	    PKCS12_add1_attr_by_txt(bag, TRUSTSTORE_TRUSTED_OID, V_ASN1_OBJECT,
		(const unsigned char *)eku, -1) == 1 &&
	    sk_PKCS12_SAFEBAG_push(bags, bag) > 0) {
		bag = NULL;
		rc = 0;
	}
out:
	PKCS12_SAFEBAG_free(bag);
	ASN1_OBJECT_free(eku);
	ASN1_TYPE_free(any);
	ASN1_STRING_free(seq);
	return rc;
}

/* A JKS alias, when it is printable ASCII (as keytool's and Debian's
 * are); any other gets a name of its own, "host-N": modified UTF-8 is
 * not UTF-8, and the name matters to no one's trust. */
static void
jks_alias(const unsigned char *s, uint32_t n, size_t i, char *out, size_t len)
{
	bool plain = n > 0 && n < len && n < ALIAS_MAX;

	for (uint32_t k = 0; plain && k < n; k++)
		plain = s[k] >= 0x20 && s[k] < 0x7f;
	if (plain) {
		memcpy(out, s, n);
		out[n] = '\0';
	} else
		snprintf(out, len, "host-%zu", i);
}

static int
from_jks(const unsigned char *data, size_t len, STACK_OF(PKCS12_SAFEBAG) * bags)
{
	struct reader r = { data, len };
	uint32_t magic, version, count, tag, n;
	const unsigned char *s, *b;
	char alias[ALIAS_MAX];
	int rc;

	if (!u32(&r, &magic) || !u32(&r, &version) || !u32(&r, &count) ||
	    (magic != JKS_MAGIC && magic != JCEKS_MAGIC) ||
	    (version != 1 && version != 2) || count > len / 16)
		return -EINVAL;
	for (uint32_t i = 0; i < count; i++) {
		if (!u32(&r, &tag) || !utf(&r, &s, &n) ||
		    !take(&r, 8, &b)) /* the date */
			return -EINVAL;
		jks_alias(s, n, i, alias, sizeof(alias));
		if (tag == 1) { /* a private key and its chain: skipped */
			uint32_t chain;
			if (!blob(&r, &b, &n) || !u32(&r, &chain) ||
			    chain > r.left)
				return -EINVAL;
			for (uint32_t c = 0; c < chain; c++)
				if ((version == 2 && !utf(&r, &s, &n)) ||
				    !blob(&r, &b, &n))
					return -EINVAL;
			continue;
		}
		if (tag != 2) /* a JCEKS secret key: a Java object */
			return -EINVAL;
		if ((version == 2 && !utf(&r, &s, &n)) || !blob(&r, &b, &n))
			return -EINVAL;
		if ((rc = add_trusted(bags, b, n, alias)) < 0)
			return rc;
	}
	/* What is left is the 20-byte keyed SHA-1, which Java does not
	 * check when it loads a trust store without a password. */
	return r.left == 20 ? 0 : -EINVAL;
}

/* Whether bag carries Java's trusted-key-usage attribute. */
static bool
java_trusted(const PKCS12_SAFEBAG *bag)
{
	const STACK_OF(X509_ATTRIBUTE) *attrs = PKCS12_SAFEBAG_get0_attrs(bag);
	ASN1_OBJECT *oid = OBJ_txt2obj(TRUSTSTORE_TRUSTED_OID, 1);
	bool found = false;

	for (int i = 0; oid != NULL && i < sk_X509_ATTRIBUTE_num(attrs); i++)
		found = found ||
		    OBJ_cmp(X509_ATTRIBUTE_get0_object(
				sk_X509_ATTRIBUTE_value(attrs, i)),
			oid) == 0;
	ASN1_OBJECT_free(oid);
	return found;
}

/* The host's trusted bags, copied as they are (Java's own). */
static int
from_bags(const STACK_OF(PKCS12_SAFEBAG) * in, STACK_OF(PKCS12_SAFEBAG) * bags)
{
	for (int i = 0; i < sk_PKCS12_SAFEBAG_num(in); i++) {
		const PKCS12_SAFEBAG *bag = sk_PKCS12_SAFEBAG_value(in, i);
		PKCS12_SAFEBAG *copy;

		if (PKCS12_SAFEBAG_get_nid(bag) != NID_certBag ||
		    PKCS12_SAFEBAG_get_bag_nid(bag) != NID_x509Certificate ||
		    !java_trusted(bag))
			continue;
		copy = ASN1_item_dup(ASN1_ITEM_rptr(PKCS12_SAFEBAG), bag);
		if (copy == NULL || sk_PKCS12_SAFEBAG_push(bags, copy) <= 0) {
			PKCS12_SAFEBAG_free(copy);
			return -ENOMEM;
		}
	}
	return 0;
}

static int
from_pkcs12(const unsigned char *data, size_t len,
    STACK_OF(PKCS12_SAFEBAG) * bags)
{
	const unsigned char *p = data;
	PKCS12 *p12 = d2i_PKCS12(NULL, &p, (long)len);
	STACK_OF(PKCS7) *safes = NULL;
	int rc = -EINVAL;

	if (p12 == NULL || p != data + len ||
	    (safes = PKCS12_unpack_authsafes(p12)) == NULL)
		goto out;
	for (int i = 0; i < sk_PKCS7_num(safes); i++) {
		PKCS7 *p7 = sk_PKCS7_value(safes, i);
		STACK_OF(PKCS12_SAFEBAG) *in = NULL;
		int nid = OBJ_obj2nid(p7->type);

		if (nid == NID_pkcs7_data)
			in = PKCS12_unpack_p7data(p7);
		else if (nid == NID_pkcs7_encrypted)
			in = PKCS12_unpack_p7encdata(p7, TRUSTSTORE_PASSWORD,
			    -1);
		else
			goto out;
		if (in == NULL)
			goto out;
		rc = from_bags(in, bags);
		sk_PKCS12_SAFEBAG_pop_free(in, PKCS12_SAFEBAG_free);
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	sk_PKCS7_pop_free(safes, PKCS7_free);
	PKCS12_free(p12);
	return rc;
}

/* The job's CA: the DER of its PEM (one CERTIFICATE). */
static int
from_pem(const char *pem, STACK_OF(PKCS12_SAFEBAG) * bags)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	long len = 0;
	int rc = -ENOMEM;

	if (bio == NULL)
		return rc;
	if (PEM_read_bio(bio, &name, &header, &der, &len) == 1 &&
	    strcmp(name, PEM_STRING_X509) == 0 && header[0] == '\0')
		rc = add_trusted(bags, der, (size_t)len, TRUSTSTORE_JOB_ALIAS);
	else
		rc = -EINVAL;
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(der);
	BIO_free(bio);
	return rc;
}

int
truststore_pkcs12(const unsigned char *host, size_t host_len,
    const char *ca_pem, unsigned char **ret_der, size_t *ret_len)
{
	STACK_OF(PKCS12_SAFEBAG) *bags = sk_PKCS12_SAFEBAG_new_null();
	STACK_OF(PKCS7) *safes = sk_PKCS7_new_null();
	PKCS7 *p7 = NULL;
	PKCS12 *p12 = NULL;
	unsigned char *der = NULL;
	int rc = -ENOMEM, n;

	if (bags == NULL || safes == NULL)
		goto out;
	if (host_len >= 4 && host[0] == 0xfe && host[1] == 0xed)
		rc = from_jks(host, host_len, bags);
	else if (host_len >= 4 && host[0] == 0xce && host[1] == 0xce)
		rc = from_jks(host, host_len, bags);
	else
		rc = from_pkcs12(host, host_len, bags);
	if (rc < 0 || (ca_pem != NULL && (rc = from_pem(ca_pem, bags)) < 0))
		goto out;
	rc = -ENOMEM;
	if ((p7 = PKCS12_pack_p7data(bags)) == NULL ||
	    sk_PKCS7_push(safes, p7) <= 0)
		goto out;
	p7 = NULL;
	if ((p12 = PKCS12_add_safes(safes, 0)) == NULL ||
	    PKCS12_set_mac(p12, TRUSTSTORE_PASSWORD, -1, NULL, 0,
		TRUSTSTORE_MAC_ITER, EVP_sha256()) != 1 ||
	    (n = i2d_PKCS12(p12, &der)) <= 0)
		goto out;
	*ret_der = der;
	*ret_len = (size_t)n;
	rc = 0;
out:
	PKCS7_free(p7);
	PKCS12_free(p12);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	return rc;
}

/* The host's /etc directories a JVM reads: the alternatives (Debian's
 * /usr/bin/java is a link through them) and java-*. */
static int
etc_dirs(struct truststore *t, const char *etc)
{
	DIR *d = opendir(etc);
	struct dirent *e;

	if (d == NULL)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) != NULL && t->netc < TRUSTSTORE_ETC_MAX) {
		struct stat st;

		if ((strcmp(e->d_name, "alternatives") != 0 &&
			fnmatch("java-*", e->d_name, 0) != 0) ||
		    strlen(e->d_name) >= sizeof(t->etc[0]) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		memcpy(t->etc[t->netc++], e->d_name, strlen(e->d_name) + 1);
	}
	closedir(d);
	return 0;
}

int
truststore_prepare(struct truststore *t, const char *etc, const char *ca_pem,
    char *why, size_t whylen)
{
	char path[512], *host = NULL;
	size_t len = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	if ((rc = etc_dirs(t, etc)) < 0) {
		snprintf(why, whylen, "%s: %s", etc, strerror(-rc));
		return rc;
	}
	if (snprintf(path, sizeof(path), "%s/" TRUSTSTORE_PATH, etc) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = path_read_file(path, TRUSTSTORE_MAX, &host, &len);
	if (rc == -ENOENT)
		return 0; /* no java store on the host: none in the job */
	if (rc == 0)
		rc = truststore_pkcs12((unsigned char *)host, len, ca_pem,
		    &t->store, &t->store_len);
	free(host);
	if (rc < 0)
		snprintf(why, whylen, "the JVM's trust store %s: %s", path,
		    rc == -EINVAL ? "neither JKS nor PKCS12 (or a bad CA)"
				  : strerror(-rc));
	return rc;
}

int
truststore_install(const struct truststore *t, const char *etc,
    const char *root, char *why, size_t whylen)
{
	char src[512], dst[512];
	int fd, rc;

	for (size_t i = 0; i < t->netc; i++) {
		snprintf(src, sizeof(src), "%s/%s", etc, t->etc[i]);
		snprintf(dst, sizeof(dst), "%s/etc/%s", root, t->etc[i]);
		if ((mkdir(dst, 0755) < 0 && errno != EEXIST) ||
		    mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    mount(NULL, dst, NULL,
			MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
			NULL) < 0)
			goto fail;
	}
	if (t->store == NULL)
		return 0;
	snprintf(dst, sizeof(dst), "%s/etc/ssl/certs/java", root);
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		goto fail;
	snprintf(dst, sizeof(dst), "%s/etc/" TRUSTSTORE_PATH, root);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	rc = path_write_all(fd, t->store, t->store_len);
	close(fd);
	if (rc == 0)
		return 0;
	errno = -rc;
fail:
	rc = -errno;
	snprintf(why, whylen, "%s", dst);
	return rc;
}

void
truststore_release(struct truststore *t)
{
	if (t == NULL)
		return;
	OPENSSL_free(t->store);
	t->store = NULL;
	t->store_len = 0;
}
