/*
 * Copy-in. The source is walked by descriptor, every entry opened with
 * O_NOFOLLOW relative to its directory, so a link or a rename under our
 * feet cannot send the copy elsewhere. Data moves with copy_file_range
 * (a reflink where the filesystem has one), falling back to read/write.
 */
#include "copyin.h"

#include "path.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct walk {
	int src_root; /* the source directory, for link checks */
	json_t *problems;
	struct copyin_stats *stats;
};

static void
refuse(struct walk *w, const char *rel, const char *why)
{
	json_array_append_new(w->problems,
	    json_pack("{s:s, s:s}", "path", rel[0] ? rel : ".", "problem",
		why));
}

bool
copyin_link_inside(const char *link_rel, const char *target)
{
	long depth = 0;
	const char *c;

	if (target[0] == '/' || target[0] == '\0')
		return false;
	/* The link's own directory: one level per '/' in its path. */
	for (c = link_rel; *c != '\0'; c++)
		depth += *c == '/';
	for (c = target;;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (--depth < 0)
				return false;
		} else if (!(n == 0 || (n == 1 && c[0] == '.')))
			depth++;
		if (c[n] == '\0')
			return true;
		c += n + 1;
	}
}

/* Copies every byte of in to out: 0 or -errno. */
static int
copy_data(int in, int out, uint64_t *bytes)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n > 0) {
			*bytes += (uint64_t)n;
			continue;
		}
		if (n == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
		    errno != EOPNOTSUPP)
			return -errno;
		break; /* not between these filesystems: do it by hand */
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int r = path_write_all(out, buf, (size_t)n);
		if (r < 0)
			return r;
		*bytes += (uint64_t)n;
	}
	return 0;
}

/*
 * Copies the regular file name of src_dir to a new dst_name in dst_dir
 * with mode; rel names it in problems. 0 (check problems) or -errno.
 */
static int
copy_file(struct walk *w, int src_dir, const char *name, int dst_dir,
    const char *dst_name, const char *rel, mode_t mode)
{
	/* O_NONBLOCK: swapped for a fifo since it was looked at, it must not
	 * hang us; the fstat below refuses it. */
	_cleanup_close_ int in = openat(src_dir, name,
	    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	_cleanup_close_ int out = -1;
	struct stat st;
	int r;

	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		refuse(w, rel, "changed while it was being copied");
		return 0;
	}
	out = openat(dst_dir, dst_name,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	r = copy_data(in, out, &w->stats->bytes);
	if (r == 0 && fchmod(out, mode) < 0)
		r = -errno;
	w->stats->files++;
	return r;
}

/* Checks that the symlink at rel (target given) stays in the source. */
static bool
link_stays(struct walk *w, const char *rel, const char *target)
{
	char path[PATH_MAX * 2];
	const char *slash = strrchr(rel, '/');
	int fd;

	if (target[0] == '/' || target[0] == '\0')
		return false;
	if (slash != NULL)
		snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - rel), rel,
		    target);
	else
		snprintf(path, sizeof(path), "%s", target);
	/* The kernel resolves it, links and all, and refuses an escape. */
	fd = path_open_beneath(w->src_root, path, O_PATH, 0, false);
	if (fd >= 0) {
		close(fd);
		return true;
	}
	/* Dangling: judge the text. */
	return fd == -ENOENT && copyin_link_inside(rel, target);
}

static int copy_dir(struct walk *w, int src_dir, int dst_dir, const char *rel,
    int depth);

/* Copies the entry name of src_dir to dst_dir; rel is its path. */
static int
copy_entry(struct walk *w, int src_dir, int dst_dir, const char *name,
    const char *rel, int depth)
{
	struct stat st;
	int r = 0;

	if (fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/* Modes are kept, except setuid and setgid. */
	mode_t mode = st.st_mode & 01777;

	if (S_ISREG(st.st_mode))
		return copy_file(w, src_dir, name, dst_dir, name, rel, mode);
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int in = -1, out = -1;

		if (depth >= COPYIN_MAX_DEPTH) {
			refuse(w, rel, "deeper than 128 directories");
			return 0;
		}
		in = openat(src_dir, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0)
			return -errno;
		if (mkdirat(dst_dir, name, 0700) < 0)
			return -errno;
		out = openat(dst_dir, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (out < 0)
			return -errno;
		r = copy_dir(w, in, out, rel, depth + 1);
		/* The mode last, so a read-only directory can be filled. */
		if (r == 0 && fchmod(out, mode) < 0)
			r = -errno;
		w->stats->dirs++;
		return r;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n =
		    readlinkat(src_dir, name, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (!link_stays(w, rel, target)) {
			refuse(w, rel,
			    "a symlink that leads out of the source");
			return 0;
		}
		if (symlinkat(target, dst_dir, name) < 0)
			return -errno;
		w->stats->symlinks++;
		return 0;
	}
	refuse(w, rel,
	    S_ISFIFO(st.st_mode)       ? "a fifo: only files, directories and "
					 "symlinks are copied"
		: S_ISSOCK(st.st_mode) ? "a socket: only files, directories "
					 "and symlinks are copied"
				       : "a device: only files, directories "
					 "and symlinks are copied");
	return 0;
}

static int
copy_dir(struct walk *w, int src_dir, int dst_dir, const char *rel, int depth)
{
	int fd = dup(src_dir);
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -errno;
	}
	while (r == 0 && (errno = 0, e = readdir(d)) != NULL) {
		char child[PATH_MAX];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (snprintf(child, sizeof(child), "%s%s%s", rel,
			rel[0] ? "/" : "", e->d_name) >= (int)sizeof(child)) {
			refuse(w, rel, "a path longer than PATH_MAX");
			continue;
		}
		r = copy_entry(w, src_dir, dst_dir, e->d_name, child, depth);
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	return r;
}

int
copyin(const char *src, int dst_dirfd, const char *dst_rel, json_t *problems,
    struct copyin_stats *stats)
{
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int src_fd = -1, parent_fd = -1;
	struct walk w = { .problems = problems, .stats = stats };
	const char *base;
	struct stat st;
	int r;

	src_fd = open(src, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (src_fd < 0)
		return -errno;
	if (fstat(src_fd, &st) < 0)
		return -errno;

	/* dst_rel's parents, created beneath dst_dirfd. */
	parent = strdup(dst_rel);
	if (parent == NULL)
		return -ENOMEM;
	char *slash = strrchr(parent, '/');
	base = slash != NULL ? dst_rel + (slash - parent) + 1 : dst_rel;
	parent_fd = dup(dst_dirfd);
	if (parent_fd < 0)
		return -errno;
	if (slash != NULL) {
		*slash = '\0';
		for (char *c = parent;;) {
			char *next = strchr(c, '/');
			if (next != NULL)
				*next = '\0';
			if (mkdirat(parent_fd, c, 0755) < 0 && errno != EEXIST)
				return -errno;
			int fd = path_open_beneath(parent_fd, c,
			    O_RDONLY | O_DIRECTORY, 0, true);
			if (fd < 0)
				return fd;
			close(parent_fd);
			parent_fd = fd;
			if (next == NULL)
				break;
			c = next + 1;
		}
	}

	if (S_ISDIR(st.st_mode)) {
		w.src_root =
		    openat(src_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (w.src_root < 0)
			return -errno;
		if (mkdirat(parent_fd, base, 0700) < 0) {
			close(w.src_root);
			return -errno;
		}
		_cleanup_close_ int out = path_open_beneath(parent_fd, base,
		    O_RDONLY | O_DIRECTORY, 0, true);
		if (out < 0) {
			close(w.src_root);
			return out;
		}
		r = copy_dir(&w, w.src_root, out, "", 1);
		if (r == 0 && fchmod(out, st.st_mode & 01777) < 0)
			r = -errno;
		stats->dirs++;
		close(w.src_root);
		return r;
	}
	if (S_ISREG(st.st_mode)) {
		/* A single file: no links to check, no tree to walk. */
		return copy_file(&w, AT_FDCWD, src, parent_fd, base, "",
		    st.st_mode & 01777);
	}
	refuse(&w, "", "the source must be a regular file or a directory");
	return 0;
}
