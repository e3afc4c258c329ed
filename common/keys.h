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
	ROLE_HATCH = 1u << 3, /* a job's return policy, nothing else */
};

/* Every role, in the order the broker writes their keys. */
#define ROLES_ALL (ROLE_ADMIN | ROLE_LAUNCHER | ROLE_VERIFIER | ROLE_HATCH)
#define ROLES_COUNT 4

#define KEY_PREFIX "crk_"
#define KEYRING_MAX 16

struct keyring {
	size_t n;
	struct {
		unsigned char hash[32];
		unsigned roles;
	} keys[KEYRING_MAX];
};

/* "admin", "launcher", "verifier", "hatch" for one role bit; NULL
 * otherwise. */
const char *role_name(unsigned role);

/* Adds a key granting roles: 0, -E2BIG when full, -EINVAL if shorter than
 * 32 bytes. */
int keyring_add(struct keyring *ring, const char *key, size_t len,
    unsigned roles);

/*
 * Adds a key known by its SHA-256 alone: hex is 64 lowercase hex digits,
 * as sha256sum prints it for the key without its newline. A process that
 * only checks a key then holds nothing a service would take. 0, -EINVAL
 * for another shape, -E2BIG when full.
 */
int keyring_add_hash(struct keyring *ring, const char *hex, unsigned roles);

/* Reads a key file with keys_read and adds it: 0 or -errno. */
int keyring_add_file(struct keyring *ring, const char *path, unsigned roles);

/*
 * The one reader of key files. Reads path (not through a symlink, at most
 * 4 KiB) into out (cap bytes, NUL-terminated), a trailing newline
 * dropped: 0, or -ENOENT (no such file), -EACCES (this user may not read
 * it), -EINVAL (not a key: shorter than 32 bytes, or with whitespace or
 * control bytes inside), -EFBIG (larger than cap - 1 or than 4 KiB), or
 * another -errno. out is wiped on failure. A program that cannot use a
 * key file it is configured with exits EXIT_CONFIG (78) after the line
 * keys_explain writes.
 */
int keys_read(const char *path, char *out, size_t cap);

/* keys_read into a scratch buffer that is wiped: 0 or its -errno. What
 * each program's -n calls for every key file it is configured with. */
int keys_check(const char *path);

/*
 * One line for a key file that could not be used, naming the setting, the
 * file (with the current directory when path is relative) and what to
 * do: "<setting> <path>: <what is wrong>; <what to do>". err is keys_read's
 * -errno. Always NUL-terminates buf.
 */
void keys_explain(char *buf, size_t len, const char *setting, const char *path,
    int err);

/*
 * For a program's start and its -n alike: when path (the value of the
 * setting; NULL when unset) is set but keys_check fails, writes
 * "<prog>: " and keys_explain's line to stderr and returns EXIT_CONFIG;
 * otherwise -1, "go on", as service_configure does.
 */
int keys_check_setting(const char *prog, const char *setting, const char *path);

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
