/*
 * The job's own CA. The proxy makes one per job when it opens the job's
 * channel: ECDSA P-256, valid no longer than the job, name-constrained to
 * the job's allowlisted hosts (and to no IP address), its key only ever in
 * the proxy's memory and destroyed with the job. It signs a leaf for each
 * host the job reaches through a terminated rule, cached per host. A CA
 * that leaked could still not vouch for any other name.
 */
#ifndef CORDON_PROXY_CA_H
#define CORDON_PROXY_CA_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <time.h>

#define CA_MAX_LEAVES 64

struct job_ca;

/*
 * Makes a CA for job, permitted only the DNS names in hosts ("*.x.com"
 * permits the subdomains of x.com) and no IP address, valid from a minute
 * ago until not_after. 0, -EINVAL (no host, a bad name, not_after in the
 * past) or -EIO (OpenSSL failed).
 */
int ca_new(const char *job, const char *const *hosts, size_t nhosts,
    time_t not_after, struct job_ca **ret);

/* Destroys the CA, its key and its leaves. NULL is fine. */
void ca_free(struct job_ca *ca);

/* The CA certificate, PEM, as the launcher installs it in the sandbox's
 * trust bundle (owned by ca). */
const char *ca_pem(const struct job_ca *ca);

/*
 * A leaf for host (exactly, as its only SAN, and as its CN when it fits
 * a CN's 64 characters: a longer name has an empty subject and a critical
 * SAN), signed by ca, valid no longer than the CA, with a random serial;
 * made once per host and cached. The certificate and key stay owned by
 * ca. 0, -E2BIG (more than CA_MAX_LEAVES hosts), -EINVAL or -EIO. It does
 * not judge host: the rules do, before; the name constraints make a wrong
 * leaf worthless.
 */
int ca_leaf(struct job_ca *ca, const char *host, X509 **ret_cert,
    EVP_PKEY **ret_key);

#endif
