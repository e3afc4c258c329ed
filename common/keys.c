/*
 * Bearer keys: generation into 0600 files, and a keyring of their hashes.
 */
#include "keys.h"

#include "path.h"
#include "token.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	case ROLE_HATCH:
		return "hatch";
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
keyring_add_hash(struct keyring *ring, const char *hex, unsigned roles)
{
	static const char digits[] = "0123456789abcdef";

	if (hex == NULL || strlen(hex) != 64 || strspn(hex, digits) != 64)
		return -EINVAL;
	if (ring->n >= KEYRING_MAX)
		return -E2BIG;
	for (size_t i = 0; i < 32; i++)
		ring->keys[ring->n].hash[i] =
		    (unsigned char)((strchr(digits, hex[2 * i]) - digits) << 4 |
			(strchr(digits, hex[2 * i + 1]) - digits));
	ring->keys[ring->n++].roles = roles;
	return 0;
}

int
keyring_add_file(struct keyring *ring, const char *path, unsigned roles)
{
	char key[KEY_FILE_MAX + 1];
	int r;

	r = keys_read(path, key, sizeof(key));
	if (r < 0)
		return r;
	r = keyring_add(ring, key, strlen(key), roles);
	OPENSSL_cleanse(key, sizeof(key));
	return r;
}

int
keys_read(const char *path, char *out, size_t cap)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r;

	if (cap == 0)
		return -EINVAL;
	out[0] = '\0';
	r = path_read_file(path, KEY_FILE_MAX, &data, &len);
	if (r < 0)
		return r;
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		len--;
	if (len >= cap)
		r = -EFBIG;
	else if (len < KEY_MIN_LEN)
		r = -EINVAL;
	for (size_t i = 0; r == 0 && i < len; i++)
		if ((unsigned char)data[i] <= ' ' || data[i] == 0x7f)
			r = -EINVAL;
	if (r == 0) {
		memcpy(out, data, len);
		out[len] = '\0';
	}
	OPENSSL_cleanse(data, len);
	return r;
}

int
keys_check(const char *path)
{
	char key[KEY_FILE_MAX + 1];
	int r = keys_read(path, key, sizeof(key));

	OPENSSL_cleanse(key, sizeof(key));
	return r;
}

void
keys_explain(char *buf, size_t len, const char *setting, const char *path,
    int err)
{
	char cwd[PATH_MAX], where[PATH_MAX + 48] = "";
	const char *what, *todo;

	if (len == 0)
		return;
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		snprintf(where, sizeof(where), " (relative to %s)", cwd);
	switch (err) {
	case -ENOENT:
	case -ENOTDIR:
		what = "no such file";
		todo =
		    "start cordon-broker first (it writes its keys under "
		    "its state_dir/keys), then set it to the absolute path of "
		    "that key file";
		break;
	case -EACCES:
	case -EPERM:
		what = "this user may not read it";
		todo =
		    "run as the user the key belongs to (keys are mode 0600), "
		    "or copy the key to a file this user owns";
		break;
	case -EINVAL:
	case -EFBIG:
		what = "not a key (a key is one line of at least 32 printable "
		       "bytes, in a regular file)";
		todo = "point it at a key file cordon-broker wrote";
		break;
	default:
		what = strerror(-err);
		todo = "check the file";
		break;
	}
	snprintf(buf, len, "%s %s%s: %s; %s", setting, path, where, what, todo);
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

int
keys_check_setting(const char *prog, const char *setting, const char *path)
{
	char why[PATH_MAX + 512];
	int r;

	if (path == NULL || (r = keys_check(path)) == 0)
		return -1;
	keys_explain(why, sizeof(why), setting, path, r);
	fprintf(stderr, "%s: %s\n", prog, why);
	return EXIT_CONFIG;
}
