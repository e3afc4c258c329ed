/*
 * The upper-directory walker. Entries are visited in byte order of their
 * names, so the same writes always give the same patch. Nothing read here
 * is followed or executed: symlinks are read as text, special files are
 * judged and left out.
 */
#include "upper.h"

#include "patch.h"
#include "path.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

struct walk {
	int lower, upper; /* the two roots */
	struct policy *p;
	struct buf *patch;
	json_t *changes;
	struct upper_stats *stats;
	upper_opaque_fn opaque; /* NULL: the xattr read here */
	void *opaque_ctx;
	uint64_t entries; /* listed in upper so far */
	bool overflow; /* the patch outgrew its buffer */
	bool cut; /* part of the tree was refused, not walked */
	bool stop; /* too many entries: nothing more is walked */
};

/* One side of a file: what git sees. */
struct side {
	unsigned mode; /* 0100644, 0100755, 0120000; 0 when absent */
	unsigned char *data;
	size_t len;
};

static unsigned
git_mode(mode_t m)
{
	if (S_ISLNK(m))
		return PATCH_MODE_SYMLINK;
	return (m & 0111) ? PATCH_MODE_EXEC : PATCH_MODE_FILE;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names in directory rel beneath root: *ret (free each and
 * it); -E2BIG, and nothing, when it holds more than max. */
static int
list_dir(int root, const char *rel, uint64_t max, char ***ret, size_t *ret_n)
{
	int fd = path_open_beneath(root, rel[0] ? rel : ".",
	    O_RDONLY | O_DIRECTORY, 0, true);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -errno;
	}
	while ((errno = 0, e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (n >= max) {
			errno = E2BIG;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **grown = realloc(names, cap * sizeof(*names));
			if (grown == NULL)
				break;
			names = grown;
		}
		if ((names[n] = strdup(e->d_name)) == NULL)
			break;
		n++;
	}
	int r = errno != 0 ? -errno : 0;
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		return r;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	*ret = names;
	*ret_n = n;
	return 0;
}

static void
free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* lstat of rel beneath root, without following anything: 0 or -errno. */
static int
stat_beneath(int root, const char *rel, struct stat *st)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(rel, '/');
	int dfd, r = 0;

	if (slash == NULL)
		return fstatat(root, rel, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno
								       : 0;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - rel), rel);
	dfd = path_open_beneath(root, parent, O_PATH | O_DIRECTORY, 0, true);
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, slash + 1, st, AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	close(dfd);
	return r;
}

/* Reads a file's or a link's content into s (mode from st). */
static int
read_side(struct walk *w, int root, const char *rel, const struct stat *st,
    struct side *s)
{
	*s = (struct side){ .mode = git_mode(st->st_mode) };
	if (S_ISLNK(st->st_mode)) {
		char parent[PATH_MAX], target[PATH_MAX];
		const char *slash = strrchr(rel, '/');
		int dfd = root;
		ssize_t n;

		if (slash != NULL) {
			snprintf(parent, sizeof(parent), "%.*s",
			    (int)(slash - rel), rel);
			dfd = path_open_beneath(root, parent,
			    O_PATH | O_DIRECTORY, 0, true);
			if (dfd < 0)
				return dfd;
		}
		n = readlinkat(dfd, slash ? slash + 1 : rel, target,
		    sizeof(target));
		if (dfd != root)
			close(dfd);
		if (n < 0)
			return -errno;
		s->data = malloc((size_t)n + 1);
		if (s->data == NULL)
			return -ENOMEM;
		memcpy(s->data, target, (size_t)n);
		s->data[n] = '\0';
		s->len = (size_t)n;
		return 0;
	}
	if ((uint64_t)st->st_size > w->p->max_patch_bytes)
		return -EFBIG;
	_cleanup_close_ int fd = path_open_beneath(root, rel,
	    O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, true);
	if (fd < 0)
		return fd;
	s->data = malloc((size_t)st->st_size + 1);
	if (s->data == NULL)
		return -ENOMEM;
	while (s->len < (size_t)st->st_size) {
		ssize_t n =
		    read(fd, s->data + s->len, (size_t)st->st_size - s->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shorter than it said: take what is there */
		s->len += (size_t)n;
	}
	w->stats->bytes_read += s->len;
	return 0;
}

/* Appends one file's change to the patch; counts it. */
static int
emit(struct walk *w, const char *rel, const struct side *old,
    const struct side *new)
{
	struct patch_file f = {
		.old_path = old->mode ? rel : NULL,
		.new_path = new->mode ? rel : NULL,
		.old_mode = old->mode,
		.new_mode = new->mode,
		.old_data = old->data,
		.old_len = old->len,
		.new_data = new->data,
		.new_len = new->len,
	};
	const char *change;
	size_t before = w->patch->len;
	int r;

	if (w->overflow)
		return 0;
	r = patch_write_file(w->patch, &f);
	if (r == -E2BIG) {
		w->overflow = true;
		policy_flag(w->p, rel, "patch_too_large",
		    "the patch is over the job's max_patch_kb: it is cut short "
		    "here and must not be applied",
		    VERDICT_REFUSED);
		return 0;
	}
	if (r < 0)
		return r;
	if (w->patch->len == before) {
		/* A copy-up that changed nothing. */
		w->stats->unchanged++;
		return 0;
	}
	if (!old->mode) {
		change = "added";
		w->stats->added++;
	} else if (!new->mode) {
		change = "deleted";
		w->stats->deleted++;
	} else {
		change = "modified";
		w->stats->modified++;
	}
	json_array_append_new(w->changes,
	    json_pack("{s:o, s:s}", "path", policy_path_json(rel), "change",
		change));
	if (new->mode) {
		policy_check_text(w->p, rel, buf_str(w->patch) + before,
		    w->patch->len - before);
		policy_check_name(w->p, rel);
		if (new->mode != 0120000)
			policy_check_binary_text(w->p, rel, new->data,
			    new->len);
	}
	return 0;
}

static void
free_side(struct side *s)
{
	free(s->data);
	s->data = NULL;
}

static int
join(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s%s%s", dir, dir[0] ? "/" : "", name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Leaves rel (or what lies below it) out of the patch, refused: the
 * patch is then not whole, and the report says why. */
static void
refuse(struct walk *w, const char *rel, const char *flag, const char *reason)
{
	policy_flag(w->p, rel[0] != '\0' ? rel : ".", flag, reason,
	    VERDICT_REFUSED);
	w->cut = true;
}

static void
refuse_too_deep(struct walk *w, const char *rel)
{
	refuse(w, rel, "too_deep",
	    "directories nested deeper than the seal walks (128): what lies "
	    "below is not in the patch");
}

/* An entry the seal could not read (r < 0): left out, refused. */
static void
refuse_unreadable(struct walk *w, const char *rel, int r)
{
	char reason[160];

	snprintf(reason, sizeof(reason),
	    "the seal could not read it (%s): it is not in the patch",
	    strerror(-r));
	refuse(w, rel, "unreadable", reason);
}

/* Emits the deletion of everything at rel in lower (a file or a tree). */
static int
delete_lower(struct walk *w, const char *rel, int depth)
{
	struct side none = { 0 }, old;
	struct stat st;
	int r = stat_beneath(w->lower, rel, &st);

	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if (S_ISDIR(st.st_mode)) {
		char **names, child[PATH_MAX];
		size_t n;

		if (depth > UPPER_MAX_DEPTH) {
			refuse_too_deep(w, rel);
			return 0;
		}
		r = list_dir(w->lower, rel, UINT64_MAX, &names, &n);
		if (r < 0)
			return r;
		for (size_t i = 0; r == 0 && i < n && !w->stop; i++) {
			r = join(child, sizeof(child), rel, names[i]);
			if (r == 0)
				r = delete_lower(w, child, depth + 1);
		}
		free_names(names, n);
		return r;
	}
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return 0;
	/* return.exclude: counted in the report, not in the patch. */
	if (policy_exclude(w->p, rel, (uint64_t)st.st_size))
		return 0;
	policy_check_deletion(w->p, rel);
	r = read_side(w, w->lower, rel, &st, &old);
	if (r == -EFBIG) {
		/* Its deletion would not fit: as for a file written. */
		policy_flag(w->p, rel, "file_too_large",
		    "larger than the job's max_patch_kb: left out of the patch",
		    VERDICT_REFUSED);
		r = 0;
	} else if (r == 0)
		r = emit(w, rel, &old, &none);
	free_side(&old);
	return r;
}

/* Opaque as the kernel reads it: the launcher mounts the overlay in the
 * host's user namespace, where only trusted.overlay.* counts (a job
 * cannot set it) and user.overlay.opaque is any xattr a job may plant. */
static bool
is_opaque(const struct walk *w, const char *rel)
{
	if (w->opaque != NULL)
		return w->opaque(w->opaque_ctx, rel);
	_cleanup_close_ int fd =
	    path_open_beneath(w->upper, rel, O_RDONLY | O_DIRECTORY, 0, true);
	char v;

	if (fd < 0)
		return false;
	return fgetxattr(fd, "trusted.overlay.opaque", &v, 1) == 1 && v == 'y';
}

/*
 * Below an opaque directory nothing of lower shows through: emits the
 * deletion of every lower entry under rel that upper does not have at the
 * same path. What upper has there is walked as usual and compared with
 * lower, so a file deleted and written again comes out as a change.
 */
static int
delete_lower_not_in_upper(struct walk *w, const char *rel, int depth)
{
	char **names, child[PATH_MAX];
	size_t n;
	int r;

	if (depth > UPPER_MAX_DEPTH) {
		refuse_too_deep(w, rel);
		return 0;
	}
	r = list_dir(w->lower, rel, UINT64_MAX, &names, &n);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	for (size_t i = 0; r == 0 && i < n && !w->stop; i++) {
		struct stat ust, lst;
		int u;

		r = join(child, sizeof(child), rel, names[i]);
		if (r == 0)
			r = stat_beneath(w->lower, child, &lst);
		if (r < 0)
			break;
		u = stat_beneath(w->upper, child, &ust);
		if (u == -ENOENT || u == -ENOTDIR)
			r = delete_lower(w, child, depth + 1);
		else if (u < 0)
			r = u;
		else if (S_ISDIR(lst.st_mode) && S_ISDIR(ust.st_mode) &&
		    !is_opaque(w, child))
			r = delete_lower_not_in_upper(w, child, depth + 1);
		/* Otherwise upper's walk replaces it (a whiteout, or an
		 * opaque directory, whose walk deletes what it hides). */
	}
	free_names(names, n);
	return r;
}

static int walk_dir(struct walk *w, const char *rel, bool lower_dir, int depth);

/* One entry of upper at rel; lower_dir says whether lower has rel's
 * parent as a directory that shows through. */
static int
walk_entry(struct walk *w, const char *rel, bool lower_dir, int depth)
{
	struct stat ust, lst;
	bool in_lower = false;
	int r;

	r = stat_beneath(w->upper, rel, &ust);
	if (r < 0)
		return r;
	if (lower_dir) {
		r = stat_beneath(w->lower, rel, &lst);
		if (r == 0)
			in_lower = true;
		else if (r != -ENOENT && r != -ENOTDIR)
			return r;
		r = 0;
	}

	/* A whiteout: the job deleted what lower had here. */
	if (S_ISCHR(ust.st_mode) && ust.st_rdev == makedev(0, 0))
		return in_lower ? delete_lower(w, rel, depth) : 0;

	if (S_ISDIR(ust.st_mode)) {
		bool through =
		    in_lower && S_ISDIR(lst.st_mode) && !is_opaque(w, rel);

		/* Replaced: what lower had here goes first. */
		if (in_lower && !through) {
			if (S_ISDIR(lst.st_mode))
				r = delete_lower_not_in_upper(w, rel, depth);
			else
				r = delete_lower(w, rel, depth);
			if (r < 0)
				return r;
		}
		return walk_dir(w, rel,
		    through || (in_lower && S_ISDIR(lst.st_mode)), depth + 1);
	}

	if (!S_ISREG(ust.st_mode) && !S_ISLNK(ust.st_mode)) {
		/* Fifos, sockets, devices: judged, never part of a patch. */
		policy_check_entry(w->p, rel, ust.st_mode, NULL);
		return 0;
	}

	struct side old = { 0 }, new = { 0 };
	if (in_lower && S_ISDIR(lst.st_mode)) {
		r = delete_lower(w, rel, depth);
		in_lower = false;
	}
	/* return.exclude, before reading it: a tool cache larger than the
	 * patch is counted, not refused. */
	if (r == 0 && policy_exclude(w->p, rel, (uint64_t)ust.st_size))
		return 0;
	if (r == 0 && in_lower &&
	    (S_ISREG(lst.st_mode) || S_ISLNK(lst.st_mode)))
		r = read_side(w, w->lower, rel, &lst, &old);
	if (r == 0)
		r = read_side(w, w->upper, rel, &ust, &new);
	if (r == -EFBIG) {
		policy_flag(w->p, rel, "file_too_large",
		    "larger than the job's max_patch_kb: left out of the patch",
		    VERDICT_REFUSED);
		r = 0;
	} else if (r == 0) {
		size_t changes = json_array_size(w->changes);

		/* A change of type comes out as git writes it. */
		r = emit(w, rel, &old, &new);
		/* Judge what was written (not a copy-up left unchanged). */
		if (r == 0 && json_array_size(w->changes) > changes)
			policy_check_entry(w->p, rel, ust.st_mode,
			    S_ISLNK(ust.st_mode) ? (const char *)new.data
						 : NULL);
		else if (r == 0 && (ust.st_mode & (S_ISUID | S_ISGID)))
			policy_check_entry(w->p, rel, ust.st_mode, NULL);
	}
	free_side(&old);
	free_side(&new);
	return r;
}

static int
walk_dir(struct walk *w, const char *rel, bool lower_dir, int depth)
{
	char **names, child[PATH_MAX];
	bool too_long = false;
	size_t n;
	int r;

	if (depth > UPPER_MAX_DEPTH) {
		refuse_too_deep(w, rel);
		return 0;
	}
	r = list_dir(w->upper, rel, w->p->max_entries - w->entries, &names, &n);
	if (r == -E2BIG) {
		refuse(w, rel, "too_many_entries",
		    "more files and directories than the seal walks: the walk "
		    "stopped here, and the patch is not whole");
		w->stop = true;
		return 0;
	}
	if (r < 0)
		return r;
	w->entries += n;
	for (size_t i = 0; r == 0 && i < n && !w->stop; i++) {
		r = join(child, sizeof(child), rel, names[i]);
		if (r == -ENAMETOOLONG) {
			/* Once a directory: its other names are as long. */
			if (!too_long)
				refuse(w, rel, "path_too_long",
				    "a path under here is longer than "
				    "PATH_MAX: "
				    "it is not in the patch");
			too_long = true;
			r = 0;
			continue;
		}
		if (r == 0)
			r = walk_entry(w, child, lower_dir, depth);
		if (r < 0 && r != -ENOMEM) {
			refuse_unreadable(w, child, r);
			r = 0;
		}
	}
	free_names(names, n);
	return r;
}

int
upper_walk(int lower_fd, int upper_fd, struct policy *p, struct buf *patch,
    json_t *changes, struct upper_stats *stats)
{
	return upper_walk_opaque(lower_fd, upper_fd, p, patch, changes, stats,
	    NULL, NULL);
}

int
upper_walk_opaque(int lower_fd, int upper_fd, struct policy *p,
    struct buf *patch, json_t *changes, struct upper_stats *stats,
    upper_opaque_fn opaque, void *ctx)
{
	struct walk w = { .lower = lower_fd,
		.upper = upper_fd,
		.p = p,
		.patch = patch,
		.changes = changes,
		.stats = stats,
		.opaque = opaque,
		.opaque_ctx = ctx };
	int r = walk_dir(&w, "", true, 0);

	if (r == 0 && (w.overflow || w.cut))
		return -E2BIG;
	return r;
}
