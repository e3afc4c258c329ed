/*
 * Bearer keys: generation into 0600 files, and a keyring of their hashes.
 */
#include "keys.h"

#include "path.h"
#include "token.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define KEY_MIN_LEN 32
#define KEY_FILE_MAX 4096

const char *
role_name(unsigned role)
{
	switch (role) {
	case ROLE_ADMIN:
		return "admin";
	case ROLE_LAUNCHER:
		return "launcher";
	case ROLE_VERIFIER:
		return "verifier";
	default:
		return NULL;
	}
}

static int
sha256(const void *p, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	return EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 ? 0 : -EIO;
}

int
keyring_add(struct keyring *ring, const char *key, size_t len, unsigned roles)
{
	if (len < KEY_MIN_LEN)
		return -EINVAL;
	if (ring->n >= KEYRING_MAX)
		return -E2BIG;
	if (sha256(key, len, ring->keys[ring->n].hash) < 0)
		return -EIO;
	ring->keys[ring->n++].roles = roles;
	return 0;
}

int
keyring_add_file(struct keyring *ring, const char *path, unsigned roles)
{
	_cleanup_free_ char *key = NULL;
	size_t len;
	int r;

	r = path_read_file(path, KEY_FILE_MAX, &key, &len);
	if (r < 0)
		return r;
	while (len > 0 && (key[len - 1] == '\n' || key[len - 1] == '\r'))
		len--;
	r = keyring_add(ring, key, len, roles);
	OPENSSL_cleanse(key, len);
	return r;
}

unsigned
keyring_roles(const struct keyring *ring, const char *key, size_t len)
{
	unsigned char hash[32];
	unsigned roles = 0;

	if (len < KEY_MIN_LEN || sha256(key, len, hash) < 0)
		return 0;
	/* Every entry is compared, so timing says nothing about which. */
	for (size_t i = 0; i < ring->n; i++)
		if (CRYPTO_memcmp(hash, ring->keys[i].hash, 32) == 0)
			roles |= ring->keys[i].roles;
	return roles;
}

int
keys_ensure(const char *dir, const char *name, char **ret_path,
    bool *ret_created)
{
	_cleanup_free_ char *path = NULL;
	char key[TOKEN_LEN + 2];
	struct stat st;
	int r;

	if (asprintf(&path, "%s/%s.key", dir, name) < 0)
		return -ENOMEM;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		*ret_created = false;
		*ret_path = steal_pointer(&path);
		return 0;
	}
	if (errno != ENOENT)
		return -errno;
	r = path_mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	r = token_generate(key);
	if (r < 0)
		return r;
	memcpy(key, KEY_PREFIX, strlen(KEY_PREFIX));
	key[TOKEN_LEN] = '\n';
	r = path_write_secret(path, key, TOKEN_LEN + 1);
	OPENSSL_cleanse(key, sizeof(key));
	if (r < 0)
		return r;
	*ret_created = true;
	*ret_path = steal_pointer(&path);
	return 0;
}
