/*
 * Bearer keys for service-to-service and operator calls. A key is a secret
 * of the host, kept in a file of mode 0600 that only the service user can
 * read, never inside a sandbox. A keyring holds only the SHA-256 of each
 * key with the roles it grants, and compares in constant time.
 */
#ifndef CORDON_KEYS_H
#define CORDON_KEYS_H

#include <stdbool.h>
#include <stddef.h>

enum role {
	ROLE_ADMIN = 1u << 0, /* put manifests, revoke any job, audit */
	ROLE_LAUNCHER = 1u << 1, /* create, heartbeat, stop its jobs */
	ROLE_VERIFIER = 1u << 2, /* introspect, egress policy, revocations */
};

#define KEY_PREFIX "crk_"
#define KEYRING_MAX 16

struct keyring {
	size_t n;
	struct {
		unsigned char hash[32];
		unsigned roles;
	} keys[KEYRING_MAX];
};

/* "admin", "launcher", "verifier" for one role bit; NULL otherwise. */
const char *role_name(unsigned role);

/* Adds a key granting roles: 0, -E2BIG when full, -EINVAL if shorter than
 * 32 bytes. */
int keyring_add(struct keyring *ring, const char *key, size_t len,
    unsigned roles);

/* Reads a key file (trailing newline allowed) and adds it: 0 or -errno. */
int keyring_add_file(struct keyring *ring, const char *path, unsigned roles);

/* The roles that key grants, 0 for an unknown key. Constant time in the
 * key's value. */
unsigned keyring_roles(const struct keyring *ring, const char *key, size_t len);

/*
 * Makes sure <dir>/<name>.key exists, writing a fresh key (mode 0600) when
 * it does not. *ret_path gets the file's path (free() it); *ret_created
 * says whether it was written now. 0 or -errno.
 */
int keys_ensure(const char *dir, const char *name, char **ret_path,
    bool *ret_created);

#endif
