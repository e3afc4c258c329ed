/*
 * Workspaces on disk: creation (copy-in, a size-capped tmpfs for the
 * upper directory) and removal. A workspace that cannot be made whole is
 * not left half made.
 */
#include "workspace.h"

#include "copyin.h"
#include "path.h"
#include "problems.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Beside the workspaces, under names no job has (a job's never starts with
 * a dot): .<job>.deleting, a workspace being removed, and .<job>.gone, a
 * job whose workspace is closed for good (workspace_delete), kept a week. */
#define TRASH_SUFFIX ".deleting"
#define GONE_SUFFIX ".gone"
#define GONE_KEEP_S (7 * 24 * 3600)

/* Whether name is .<something><suffix>. */
static bool
dot_suffixed(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return name[0] == '.' && n > k + 1 && strcmp(name + n - k, suffix) == 0;
}

bool
workspace_job_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 128 || s[0] == '.')
		return false;
	return strspn(s,
		   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "0123456789._-") == n;
}

char *
workspace_check_input(const struct config_strings *roots, size_t i,
    const char *src, const char *dst, json_t *problems)
{
	char field[48];
	char *real;

	bool dst_ok = dst != NULL && path_is_safe_relative(dst);

	snprintf(field, sizeof(field), "inputs[%zu].dst", i);
	if (!dst_ok)
		problems_add(problems, field,
		    "a relative path without \"..\", \".\" or empty parts");
	snprintf(field, sizeof(field), "inputs[%zu].src", i);
	if (src == NULL || src[0] != '/') {
		problems_add(problems, field, "an absolute path is required");
		return NULL;
	}
	real = realpath(src, NULL);
	if (real == NULL) {
		problems_add(problems, field,
		    errno == ENOENT ? "does not exist" : "cannot be resolved");
		return NULL;
	}
	for (size_t k = 0; k < roots->n; k++)
		if (path_is_within(roots->v[k], real)) {
			if (dst_ok)
				return real;
			free(real);
			return NULL;
		}
	if (roots->n == 0) {
		problems_add(problems, field,
		    "no input_roots are configured: the hatch copies nothing "
		    "until an operator sets input_roots in its configuration");
	} else {
		/* The roots, so that the caller knows where to put it. */
		char list[1024] = "";
		for (size_t k = 0; k < roots->n; k++) {
			size_t used = strlen(list);
			snprintf(list + used, sizeof(list) - used, "%s%s",
			    k > 0 ? ", " : "", roots->v[k]);
		}
		problems_add(problems, field,
		    "not under any of the hatch's input_roots (%s): move it "
		    "under one, or add its directory to input_roots in the "
		    "hatch's configuration",
		    list);
	}
	free(real);
	return NULL;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* Unmounts rw/ and lower/ if mounted and removes dir; never crosses a
 * mount. */
static int
remove_workspace_dir(const char *dir)
{
	char rw[PATH_MAX];

	static const char *const mounts[] = { "rw", "lower" };

	for (size_t i = 0; i < ARRAY_SIZE(mounts); i++) {
		snprintf(rw, sizeof(rw), "%.*s/%s", PATH_MAX - 8, dir,
		    mounts[i]);
		if (umount2(rw, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 &&
		    errno != EINVAL && errno != ENOENT)
			return -errno;
	}
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
		return -EIO;
	return 0;
}

/*
 * Copies each input beneath lower_fd, appending to copied what went in
 * and to problems what was refused: 0 (check problems) or -errno.
 */
static int
copy_inputs(int lower_fd, const struct workspace_input *inputs, size_t ninputs,
    json_t *problems, json_t *copied)
{
	for (size_t i = 0; i < ninputs; i++) {
		struct copyin_stats st = { 0 };
		size_t before = json_array_size(problems);
		int r;

		r = copyin(inputs[i].src, lower_fd, inputs[i].dst, problems,
		    &st);
		if (r == -EEXIST) {
			char field[48];
			snprintf(field, sizeof(field), "inputs[%zu].dst", i);
			problems_add(problems, field,
			    "overlaps another input's destination");
			continue;
		}
		if (r < 0)
			return r;
		/* Copy problems name paths inside the input: say which. */
		for (size_t k = before; k < json_array_size(problems); k++) {
			json_t *p = json_array_get(problems, k);
			json_object_set_new(p, "input", json_integer((int)i));
		}
		json_array_append_new(copied,
		    json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "src",
			inputs[i].src, "dst", inputs[i].dst, "files",
			(json_int_t)st.files, "dirs", (json_int_t)st.dirs,
			"symlinks", (json_int_t)st.symlinks, "bytes",
			(json_int_t)st.bytes));
	}
	return 0;
}

/*
 * The lower layer: a tmpfs of at most lower_mb at lower (made), the
 * inputs copied onto it. Each file or directory made on a disk costs a
 * journalled inode (a third of a millisecond each on ext4 here, most of
 * a short job's time), and the copy needs no durability: the job's
 * writes live on a tmpfs too, so a crash of the machine loses the pair
 * together. Inputs that do not fit are copied again to the disk under
 * the unmounted tmpfs, as they are with lower_mb 0 (copy_file_range may
 * reflink them there). 0 (check problems) or -errno.
 */
static int
make_lower(const char *lower, long lower_mb,
    const struct workspace_input *inputs, size_t ninputs, json_t *problems,
    json_t *copied)
{
	size_t before = json_array_size(problems);
	char opts[64];
	int fd, r;

	if (mkdir(lower, 0755) < 0)
		return -errno;
	if (lower_mb > 0) {
		snprintf(opts, sizeof(opts), "size=%ldm,mode=0755", lower_mb);
		if (mount("tmpfs", lower, "tmpfs", MS_NOSUID | MS_NODEV, opts) <
		    0)
			return -errno;
		fd = open(lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		r = copy_inputs(fd, inputs, ninputs, problems, copied);
		close(fd);
		if (r != -ENOSPC)
			return r;
		/* Too big for the memory it may take: on the disk. */
		if (umount2(lower, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
			return -errno;
		while (json_array_size(problems) > before)
			json_array_remove(problems,
			    json_array_size(problems) - 1);
		json_array_clear(copied);
	}
	fd = open(lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = copy_inputs(fd, inputs, ninputs, problems, copied);
	close(fd);
	return r;
}

int
workspace_create(const char *root, const char *job,
    const struct workspace_input *inputs, size_t ninputs, long disk_mb,
    long lower_mb, const json_t *ret_policy, json_t *problems, json_t **ret)
{
	/* dir is shorter, so that what is built on it always fits. */
	char dir[PATH_MAX - 64], lower[PATH_MAX], rw[PATH_MAX - 32],
	    upper[PATH_MAX], work[PATH_MAX], opts[64];
	json_t *copied = json_array();
	int r;

	if (path_mkdir_p(root, 0700) < 0)
		return -errno;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/.%s" GONE_SUFFIX, root,
		job) >= sizeof(dir)) {
		json_decref(copied);
		return -ENAMETOOLONG;
	}
	if (access(dir, F_OK) == 0) {
		json_decref(copied);
		return -ESTALE;
	}
	snprintf(dir, sizeof(dir), "%s/%s", root, job);
	snprintf(lower, sizeof(lower), "%s/lower", dir);
	snprintf(rw, sizeof(rw), "%s/rw", dir);
	snprintf(upper, sizeof(upper), "%s/upper", rw);
	snprintf(work, sizeof(work), "%s/work", rw);
	if (mkdir(dir, 0700) < 0) {
		json_decref(copied);
		return -errno;
	}
	r = make_lower(lower, lower_mb, inputs, ninputs, problems, copied);
	if (r < 0)
		goto fail;
	if (json_array_size(problems) > 0) {
		r = -EINVAL;
		goto fail;
	}
	/* The upper layer lives on its own tmpfs: the job's disk limit. An
	 * empty file costs no block but an inode of kernel memory: one inode
	 * per 4 KiB page of the size, no more files than full pages fit. */
	snprintf(opts, sizeof(opts), "size=%ldm,nr_inodes=%ld,mode=0755",
	    disk_mb, disk_mb * 256);
	if (mkdir(rw, 0755) < 0 ||
	    mount("tmpfs", rw, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
		r = -errno;
		goto fail;
	}
	if (mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0) {
		r = -errno;
		goto fail;
	}
	/* What the seal needs to judge the job's writes. */
	json_t *meta = json_pack("{s:s, s:i, s:O, s:o}", "job", job, "disk_mb",
	    (int)disk_mb, "inputs", copied, "return",
	    ret_policy != NULL ? json_deep_copy(ret_policy) : json_object());
	char *text = meta != NULL ? json_dumps(meta, JSON_COMPACT) : NULL;
	char metapath[PATH_MAX], part[PATH_MAX];
	json_decref(meta);
	/* Written whole, then renamed: a workspace has its meta.json only
	 * once it is complete (workspace_discard_unfinished). */
	snprintf(metapath, sizeof(metapath), "%s/meta.json", dir);
	snprintf(part, sizeof(part), "%s/meta.json.part", dir);
	r = text != NULL ? path_write_secret(part, text, strlen(text))
			 : -ENOMEM;
	free(text);
	if (r == 0 && rename(part, metapath) < 0)
		r = -errno;
	if (r < 0)
		goto fail;
	/* Each directory's device and inode, as the hatch sees it: the
	 * launcher checks it sees the same ones (a hatch whose mounts do not
	 * reach it would hand it empty directories). */
	char ids[3][48];
	const char *dirs[3] = { lower, upper, work };
	for (int i = 0; i < 3; i++) {
		struct stat sb;
		if (stat(dirs[i], &sb) < 0) {
			r = -errno;
			goto fail;
		}
		snprintf(ids[i], sizeof(ids[i]), "%ju:%ju",
		    (uintmax_t)sb.st_dev, (uintmax_t)sb.st_ino);
	}
	*ret = json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:{s:s, s:s, s:s}}",
	    "job", job, "lower", lower, "upper", upper, "work", work, "disk_mb",
	    (int)disk_mb, "inputs", copied, "ids", "lower", ids[0], "upper",
	    ids[1], "work", ids[2]);
	return 0;
fail:
	json_decref(copied);
	remove_workspace_dir(dir);
	return r;
}

int
workspace_discard_unfinished(const char *root, json_t *discarded)
{
	DIR *d = opendir(root);
	struct dirent *e;
	int r = 0;

	if (d == NULL)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) != NULL) {
		char dir[PATH_MAX - 64], meta[PATH_MAX];
		bool trash = dot_suffixed(e->d_name, TRASH_SUFFIX);
		struct stat st;

		snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
		if (dot_suffixed(e->d_name, GONE_SUFFIX)) {
			if (lstat(dir, &st) == 0 && S_ISREG(st.st_mode) &&
			    time(NULL) - st.st_mtime > GONE_KEEP_S)
				unlink(dir);
			continue;
		}
		if (!trash && !workspace_job_ok(e->d_name))
			continue;
		snprintf(meta, sizeof(meta), "%s/meta.json", dir);
		if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (!trash && (lstat(meta, &st) == 0 || errno != ENOENT))
			continue;
		if (remove_workspace_dir(dir) < 0)
			r = -EIO;
		else
			json_array_append_new(discarded,
			    json_string(e->d_name));
	}
	closedir(d);
	return r;
}

int
workspace_delete(const char *root, const char *job)
{
	char dir[PATH_MAX - 64], trash[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", root, job) >=
	    sizeof(dir))
		return -ENAMETOOLONG;
	if (lstat(dir, &st) < 0) {
		/* None: the job's workspace is closed all the same, so that a
		 * create still on its way (from a launcher that died) cannot
		 * make one that no one would ever remove. */
		int r = -errno;
		if (r == -ENOENT) {
			snprintf(trash, sizeof(trash), "%s/.%s" GONE_SUFFIX,
			    root, job);
			int fd = open(trash,
			    O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
			if (fd >= 0)
				close(fd);
		}
		return r;
	}
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* Out of sight first, in one step: a hatch that dies while removing
	 * it leaves no half of a workspace under the job's name, only trash
	 * that the next start clears. */
	snprintf(trash, sizeof(trash), "%s/.%s" TRASH_SUFFIX, root, job);
	if (rename(dir, trash) < 0)
		return -errno;
	return remove_workspace_dir(trash);
}
