/*
 * Safe path helpers: lexical checks for paths chosen by others, openat2
 * beneath a directory, and whole-file reads with a size cap.
 */
#include "path.h"

#include "buf.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

bool
path_is_safe_relative(const char *p)
{
	size_t len = strlen(p);
	const char *c = p;

	if (len == 0 || len >= PATH_MAX || p[0] == '/')
		return false;
	for (;;) {
		const char *slash = strchr(c, '/');
		size_t n = slash != NULL ? (size_t)(slash - c) : strlen(c);

		if (n == 0 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (slash == NULL)
			return true;
		c = slash + 1;
	}
}

bool
path_is_within(const char *root, const char *path)
{
	size_t n = strlen(root);

	if (root[0] != '/' || path[0] != '/')
		return false;
	if (strcmp(root, "/") == 0)
		return true;
	if (strncmp(root, path, n) != 0)
		return false;
	return path[n] == '\0' || path[n] == '/';
}

int
path_mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *copy = NULL;
	struct stat st;

	if (path[0] == '\0')
		return -EINVAL;
	copy = strdup(path);
	if (copy == NULL)
		return -ENOMEM;
	for (char *p = copy + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			return -errno;
		if (stat(copy, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		if (c == '\0')
			return 0;
		*p = c;
	}
}

int
path_make_dir(const char *path, mode_t mode, char **ret_abs)
{
	char *abs;
	int r;

	if (path[0] == '\0')
		return -EINVAL;
	r = path_mkdir_p(path, mode);
	if (r < 0)
		return r;
	abs = realpath(path, NULL);
	if (abs == NULL)
		return -errno;
	*ret_abs = abs;
	return 0;
}

int
path_open_beneath(int dirfd, const char *rel, int flags, mode_t mode,
    bool no_symlinks)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		/* O_TMPFILE contains O_DIRECTORY: test all of its bits. */
		.mode = ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		    ? mode
		    : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
		    (no_symlinks ? RESOLVE_NO_SYMLINKS : 0),
	};
	long fd;

	do
		fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : (int)fd;
}

int
path_read_file(const char *path, size_t max, char **ret_data, size_t *ret_len)
{
	/* O_NONBLOCK: a fifo named as a file must not hang us. */
	_cleanup_close_ int fd =
	    open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct buf b = BUF_INIT(max);
	char chunk[16384];
	struct stat st;
	int r = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		r = buf_append(&b, chunk, (size_t)n);
		if (r < 0) {
			r = r == -E2BIG ? -EFBIG : r;
			break;
		}
	}
	if (r < 0) {
		buf_free(&b);
		return r;
	}
	*ret_data = buf_steal(&b, ret_len);
	return *ret_data != NULL ? 0 : -ENOMEM;
}

int
path_write_all(int fd, const void *data, size_t n)
{
	const char *p = data;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int
path_write_text(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	int fd, r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = path_write_all(fd, text, strlen(text));
	close(fd);
	return r;
}

int
path_write_secret(const char *path, const void *data, size_t len)
{
	_cleanup_close_ int fd = open(path,
	    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	int r;

	if (fd < 0)
		return -errno;
	r = path_write_all(fd, data, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		unlink(path);
	return r;
}
