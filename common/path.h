/*
 * Safe path helpers. Paths that a caller or a job chose are checked before
 * use: relative ones must stay relative and never climb, and a tree that
 * someone else wrote is walked with openat2(RESOLVE_BENEATH) so that no
 * symlink or ".." can lead out of it. Every descriptor is O_CLOEXEC.
 */
#ifndef CORDON_PATH_H
#define CORDON_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * True when p is a non-empty relative path of at most PATH_MAX bytes whose
 * components are neither empty, "." nor "..": "a/b.txt" yes; "/a", "a//b",
 * "./a", "a/../b", "a/" no.
 */
bool path_is_safe_relative(const char *p);

/*
 * True when the absolute, normalised path lies at or under the absolute,
 * normalised root ("/srv/in" holds "/srv/in" and "/srv/in/x", not
 * "/srv/input"). Both must already be resolved (realpath).
 */
bool path_is_within(const char *root, const char *path);

/* mkdir -p with mode for each directory it creates: 0 or -errno. */
int path_mkdir_p(const char *path, mode_t mode);

/*
 * Creates path as mkdir -p would and returns its resolved absolute form in
 * *ret_abs (free() it): 0 or -errno.
 */
int path_make_dir(const char *path, mode_t mode, char **ret_abs);

/*
 * Opens rel beneath dirfd with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS), adding RESOLVE_NO_SYMLINKS when no_symlinks is
 * set: a descriptor, or -errno (-EXDEV for an escape, -ELOOP for a
 * symlink refused). O_CLOEXEC is always added.
 */
int path_open_beneath(int dirfd, const char *rel, int flags, mode_t mode,
    bool no_symlinks);

/*
 * Reads a whole file of at most max bytes into *ret_data (NUL-terminated,
 * free() it) and its length into *ret_len: 0, -EFBIG when larger, or
 * -errno.
 */
int path_read_file(const char *path, size_t max, char **ret_data,
    size_t *ret_len);

/* Writes all n bytes of data to fd, retrying short writes and EINTR:
 * 0 or -errno. */
int path_write_all(int fd, const void *data, size_t n);

/* Writes text to dir/file in one go (created 0644 if it is not there):
 * for the kernel's control files (uid_map, cgroup.procs, memory.max...).
 * 0 or -errno. */
int path_write_text(const char *dir, const char *file, const char *text);

/*
 * Writes a secret to a new file of mode 0600, failing with -EEXIST rather
 * than replacing one, and syncs it: 0 or -errno. On failure no partial
 * file is left behind.
 */
int path_write_secret(const char *path, const void *data, size_t len);

#endif
