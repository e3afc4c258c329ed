/*
 * What a JVM needs in the job's synthesised /etc to start and to trust
 * the job's CA with no option set: Debian's `java` is a link through
 * /etc/alternatives, its configuration (java.security, the policies) is
 * /etc/java-<N>-openjdk, and its trust store is
 * /etc/ssl/certs/java/cacerts. The launcher, before the sandbox is
 * cloned, reads the host's store (JKS, as Debian 12's
 * ca-certificates-java writes it, or PKCS12) and writes a PKCS12 store of
 * its trusted certificates plus the job's CA, each a certificate bag
 * carrying Java's trusted-key-usage attribute (what `keytool -importcert`
 * writes), MAC'd with the password "changeit"; the sandbox's PID 1 then
 * binds the host's directories read-only and writes the store, with no
 * allocation (it is a clone of a threaded process).
 */
#ifndef CORDON_LAUNCHER_TRUSTSTORE_H
#define CORDON_LAUNCHER_TRUSTSTORE_H

#include <stddef.h>

#define TRUSTSTORE_PATH "ssl/certs/java/cacerts" /* under /etc */
#define TRUSTSTORE_PASSWORD "changeit"
#define TRUSTSTORE_JOB_ALIAS "cordon-job-ca"
#define TRUSTSTORE_MAX (16u << 20) /* a host store larger is refused */
#define TRUSTSTORE_ETC_MAX 8 /* host /etc directories bound */
#define TRUSTSTORE_MAC_ITER 2048

/* Java's trusted-key-usage attribute, and the value keytool gives it. */
#define TRUSTSTORE_TRUSTED_OID "2.16.840.1.113894.746875.1.1"
#define TRUSTSTORE_ANY_EKU_OID "2.5.29.37.0"

struct truststore {
	/* The job's store (PKCS12 DER, OPENSSL_free'd by release), or NULL:
	 * the host has no java store, and the job gets none. */
	unsigned char *store;
	size_t store_len;
	/* Directories of the host's /etc bound read-only at the same place
	 * in the job's ("alternatives", "java-17-openjdk"). */
	char etc[TRUSTSTORE_ETC_MAX][64];
	size_t netc;
};

/*
 * The job's store from a host store's bytes (JKS or PKCS12; a PKCS12's
 * encrypted bags opened with "changeit") and the job's CA in PEM (NULL:
 * none added): every trusted certificate of the host's under its alias,
 * then the CA as TRUSTSTORE_JOB_ALIAS. 0 with *ret_der (OPENSSL_free it)
 * and *ret_len, -EINVAL for a store or a PEM that does not parse (a
 * JCEKS secret key included), -ENOMEM.
 */
int truststore_pkcs12(const unsigned char *host, size_t host_len,
    const char *ca_pem, unsigned char **ret_der, size_t *ret_len);

/*
 * Fills *t for a job from the host's /etc at etc (normally "/etc"): the
 * JVM's directories there, and the store when etc/TRUSTSTORE_PATH exists.
 * 0, or -errno with what failed in why (a store that does not read or
 * parse: the job is not started without the trust it would expect).
 */
int truststore_prepare(struct truststore *t, const char *etc,
    const char *ca_pem, char *why, size_t whylen);

/*
 * In the sandbox, before pivot_root: binds each of t's directories from
 * etc (the host's) read-only onto root/etc, and writes the store to
 * root/etc/TRUSTSTORE_PATH (0644). Async-signal-safe: no allocation. 0,
 * or -errno with the path in why.
 */
int truststore_install(const struct truststore *t, const char *etc,
    const char *root, char *why, size_t whylen);

/* Frees what prepare allocated; t may be zeroed or NULL. */
void truststore_release(struct truststore *t);

#endif
