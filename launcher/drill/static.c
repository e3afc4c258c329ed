/*
 * What glibc gives a static program only by loading shared pieces of
 * itself at run time. The agent is static (the sandbox holds nothing but
 * /usr), and libssl's method tables pull in libcrypto's DSO loader
 * (dlopen) and its BIO name lookups (getaddrinfo, gethostbyname), which a
 * static glibc serves by dlopen'ing its NSS modules from whatever glibc the
 * sandbox has: the link warns of each. The agent calls none of them: it
 * resolves names by hand (egress.c asks the job's resolver in one UDP
 * question) or not at all (a name goes to the proxy in its request), and
 * OpenSSL's configuration, engines and providers are never loaded. So the
 * link wraps the three (-Wl,--wrap=..., CMakeLists.txt): every call to
 * them, libcrypto's, comes here and fails as a failure does (nothing
 * loaded, no name found), never into glibc's NSS. glibc's own code may
 * still be linked for a neighbour in its file (freeaddrinfo), uncalled.
 */
#include <netdb.h>
#include <stddef.h>

void *__wrap_dlopen(const char *file, int mode);
int __wrap_getaddrinfo(const char *node, const char *service,
    const struct addrinfo *hints, struct addrinfo **res);
struct hostent *__wrap_gethostbyname(const char *name);

/* dlopen in the agent: nothing is loaded, NULL (dlerror says nothing). */
void *
__wrap_dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}

/* getaddrinfo in the agent: no name is found, EAI_FAIL, *res NULL. */
int
__wrap_getaddrinfo(const char *node, const char *service,
    const struct addrinfo *hints, struct addrinfo **res)
{
	(void)node;
	(void)service;
	(void)hints;
	if (res != NULL)
		*res = NULL;
	return EAI_FAIL;
}

/* gethostbyname in the agent: no host, NULL with h_errno NO_RECOVERY. */
struct hostent *
__wrap_gethostbyname(const char *name)
{
	(void)name;
	h_errno = NO_RECOVERY;
	return NULL;
}
