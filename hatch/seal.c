/*
 * Seal: policy from the workspace's meta.json, the upper walk, the output
 * envelope, then patch and report written to temporary files and renamed
 * into place, report last: a report on disk means a complete seal.
 *
 * The reading and judging (meta.json, the walk of the job's upper
 * directory, hostile names and bytes, the job's output) is seal_compute,
 * run by a worker of the sealer helper (sealer.c) with the workspace as
 * its root directory; this side opens the workspace, the output and the
 * two temporary files, hands them over, and renames what came back into
 * place only when the worker exited 0. A worker that died, was killed,
 * outlived the seal deadline or failed is a failed seal, with its reason,
 * and nothing is renamed into place.
 */
#include "seal.h"

#include "buf.h"
#include "digest.h"
#include "envelope.h"
#include "log.h"
#include "path.h"
#include "policy.h"
#include "upper.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define META_MAX (1024 * 1024)
#define REPORT_MAX (16 * 1024 * 1024)
/* The output as the seal's request carried it: two fields of base64 of
 * at most SEAL_MAX_OUTPUT_KB... the HTTP body's own cap is lower. */
#define OUTPUT_MAX ((size_t)256 * 1024 * 1024)

static int
ws_dir(char *out, size_t len, const char *root, const char *job)
{
	struct stat st;
	int n = snprintf(out, len, "%s/%s", root, job);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (stat(out, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOENT;
}

/* Decodes base64 field of output into a new buffer: 0 or -EINVAL. */
static int
decode(const json_t *output, const char *field, unsigned char **ret,
    size_t *ret_len)
{
	const char *s = json_string_value(json_object_get(output, field));
	size_t n = s != NULL ? strlen(s) : 0, pad = 0;
	unsigned char *out;
	int len;

	*ret = NULL;
	*ret_len = 0;
	if (s == NULL)
		return json_object_get(output, field) == NULL ? 0 : -EINVAL;
	if (n % 4 != 0)
		return -EINVAL;
	out = malloc(n / 4 * 3 + 1);
	if (out == NULL)
		return -ENOMEM;
	len = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
	if (len < 0) {
		free(out);
		return -EINVAL;
	}
	/* EVP_DecodeBlock counts the padding as bytes: take them back. */
	while (pad < 2 && n > pad && s[n - 1 - pad] == '=')
		pad++;
	*ret = out;
	*ret_len = (size_t)len - pad;
	return 0;
}

/* Reads the regular file name under dir_fd (or fd itself, name NULL,
 * from its start) into a new NUL-terminated buffer of at most max bytes:
 * 0 or -errno (-EFBIG past max, -EINVAL not a regular file). */
static int
read_all(int dir_fd, const char *name, size_t max, char **ret)
{
	_cleanup_close_ int own = -1;
	struct buf b = BUF_INIT(max);
	char chunk[16384];
	struct stat st;
	off_t off = 0;
	int fd = dir_fd;

	if (name != NULL) {
		/* O_NONBLOCK: a fifo named as a file must not hang us. */
		own = fd = openat(dir_fd, name,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
		if (fd < 0)
			return -errno;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	for (;;) {
		ssize_t n = pread(fd, chunk, sizeof(chunk), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			buf_free(&b);
			return -errno;
		}
		if (n == 0)
			break;
		int e = buf_append(&b, chunk, (size_t)n);
		if (e < 0) {
			buf_free(&b);
			return e == -E2BIG ? -EFBIG : e;
		}
		off += n;
	}
	*ret = buf_steal(&b, NULL);
	if (*ret == NULL)
		*ret = strdup("");
	return *ret != NULL ? 0 : -ENOMEM;
}

static int
marks_add(struct seal_marks *m, const char *rel)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		char **v = realloc(m->v, cap * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	if ((m->v[m->n] = strdup(rel)) == NULL)
		return -ENOMEM;
	m->n++;
	return 0;
}

/* Directory rel of upper, depth levels down, and what lies below it. */
static int
marks_scan(int upper, const char *rel, int depth, struct seal_marks *m)
{
	struct dirent *e;
	int fd, r = 0;
	DIR *d;

	if (depth > UPPER_MAX_DEPTH)
		return 0;
	fd = path_open_beneath(upper, rel[0] != '\0' ? rel : ".",
	    O_RDONLY | O_DIRECTORY, 0, true);
	if (fd < 0)
		return 0; /* the walk says why */
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while (r == 0 && (e = readdir(d)) != NULL) {
		char child[PATH_MAX], v;
		struct stat st;
		int n, cfd;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (++m->entries > POLICY_MAX_ENTRIES)
			break;
		if (e->d_type != DT_DIR &&
		    (e->d_type != DT_UNKNOWN ||
			fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			    0 ||
			!S_ISDIR(st.st_mode)))
			continue;
		n = snprintf(child, sizeof(child), "%s%s%s", rel,
		    rel[0] != '\0' ? "/" : "", e->d_name);
		if (n < 0 || (size_t)n >= sizeof(child))
			continue;
		cfd = openat(dirfd(d), e->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		if (fgetxattr(cfd, "trusted.overlay.opaque", &v, 1) == 1 &&
		    v == 'y')
			r = marks_add(m, child);
		close(cfd);
		if (r == 0)
			r = marks_scan(upper, child, depth + 1, m);
	}
	closedir(d);
	return r;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
seal_marks_read(int dir_fd, struct seal_marks *m)
{
	_cleanup_close_ int upper = path_open_beneath(dir_fd, "rw/upper",
	    O_RDONLY | O_DIRECTORY, 0, true);
	int r;

	*m = (struct seal_marks){ 0 };
	if (upper < 0)
		return 0; /* seal_compute says why */
	r = marks_scan(upper, "", 0, m);
	if (r < 0) {
		seal_marks_free(m);
		return r;
	}
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_str);
	return 0;
}

void
seal_marks_free(struct seal_marks *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	*m = (struct seal_marks){ 0 };
}

/* upper_opaque_fn over seal_marks. */
static bool
marked(void *ctx, const char *rel)
{
	const struct seal_marks *m = ctx;

	return m->n > 0 &&
	    bsearch(&rel, m->v, m->n, sizeof(*m->v), cmp_str) != NULL;
}

int
seal_compute(int dir_fd, const char *job, int output_fd, long output_kb,
    int patch_fd, int report_fd, const struct seal_marks *marks)
{
	char sha[65], ts[40];
	_cleanup_free_ char *meta_text = NULL, *output_text = NULL;
	_cleanup_close_ int lower = -1, upper = -1;
	unsigned char *out = NULL, *err = NULL;
	size_t outlen = 0, errlen = 0;
	json_t *meta = NULL, *changes = NULL, *report = NULL, *output = NULL;
	struct upper_stats stats = { 0 };
	struct policy pol = { 0 };
	struct buf patch;
	struct statvfs vfs;
	int r;

	r = read_all(output_fd, NULL, OUTPUT_MAX, &output_text);
	if (r < 0)
		goto out;
	output = output_text[0] != '\0' ? json_loads(output_text, 0, NULL)
					: json_object();
	if (!json_is_object(output)) {
		r = -EINVAL;
		goto out;
	}
	if ((r = decode(output, "stdout", &out, &outlen)) < 0 ||
	    (r = decode(output, "stderr", &err, &errlen)) < 0)
		goto out;

	r = read_all(dir_fd, "meta.json", META_MAX, &meta_text);
	if (r < 0)
		goto out;
	meta = json_loads(meta_text, 0, NULL);
	if (meta == NULL) {
		r = -EIO;
		goto out;
	}
	json_t *ret_pol = json_object_get(meta, "return");
	json_t *max_kb = json_object_get(ret_pol, "max_patch_kb");
	uint64_t max_patch =
	    (uint64_t)(json_is_integer(max_kb) ? json_integer_value(max_kb)
					       : 4096) *
	    1024;
	json_t *dsts = json_array(), *in;
	size_t i;
	json_array_foreach(json_object_get(meta, "inputs"), i, in)
	    json_array_append(dsts, json_object_get(in, "dst"));
	r = policy_init(&pol, json_object_get(ret_pol, "protected"), dsts,
	    max_patch);
	json_decref(dsts);
	if (r == 0)
		r = policy_set_exclude(&pol,
		    json_object_get(ret_pol, "exclude"));
	if (r < 0) {
		r = -ENOMEM;
		goto out;
	}

	lower = openat(dir_fd, "lower",
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	upper = path_open_beneath(dir_fd, "rw/upper", O_RDONLY | O_DIRECTORY, 0,
	    true);
	if (upper < 0)
		errno = -upper;
	if (lower < 0 || upper < 0) {
		r = -errno;
		goto out;
	}
	buf_init(&patch, max_patch);
	changes = json_array();
	r = upper_walk_opaque(lower, upper, &pol, &patch, changes, &stats,
	    marks != NULL ? marked : NULL, (void *)marks);
	if (r < 0 && r != -E2BIG) {
		buf_free(&patch);
		goto out;
	}
	/* A full tmpfs: the job may not have written all it meant to. */
	bool full = fstatvfs(upper, &vfs) == 0 && vfs.f_bavail == 0;
	if (full)
		policy_flag(&pol, ".", "disk_full",
		    "the job filled its disk: what it wrote before is in the "
		    "patch, what it meant to write after may be missing",
		    VERDICT_NEEDS_REVIEW);

	bool complete = r == 0;
	sha256_hex(buf_str(&patch), patch.len, sha);
	log_timestamp(ts, sizeof(ts));
	report = json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I, s:I}, "
			   "s:{s:I, s:s, s:b}, s:b, s:I, s:O, s:o}",
	    "job", job, "sealed", ts, "verdict",
	    policy_verdict_name(pol.verdict), "flags", json_incref(pol.flags),
	    "changes", changes, "stats", "added", (json_int_t)stats.added,
	    "modified", (json_int_t)stats.modified, "deleted",
	    (json_int_t)stats.deleted, "unchanged_copy_ups",
	    (json_int_t)stats.unchanged, "patch", "bytes",
	    (json_int_t)patch.len, "sha256", sha, "complete", complete,
	    "disk_full", full, "flags_omitted", (json_int_t)pol.flags_omitted,
	    "flag_counts", pol.flag_counts, "output",
	    envelope_make(out, outlen, err, errlen, (size_t)output_kb * 1024));
	changes = NULL;
	/* Without memory for it, no report (-ENOMEM below): fail closed. */
	if (report != NULL &&
	    json_object_set_new(report, "excluded",
		policy_excluded_json(&pol)) < 0) {
		json_decref(report);
		report = NULL;
	}
	r = path_write_all(patch_fd, buf_str(&patch), patch.len);
	buf_free(&patch);
	if (r == 0) {
		char *text = json_dumps(report, JSON_COMPACT);
		r = text != NULL ? path_write_all(report_fd, text, strlen(text))
				 : -ENOMEM;
		free(text);
	}
out:
	json_decref(report);
	json_decref(changes);
	json_decref(meta);
	json_decref(output);
	policy_free(&pol);
	free(out);
	free(err);
	return r;
}

/* Opens dir/.name.tmp for writing. */
static int
open_tmp(const char *dir, const char *name)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	return open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
}

/* fsyncs fd, then renames dir/.name.tmp to dir/name: 0 or -errno. */
static int
commit_tmp(const char *dir, const char *name, int fd)
{
	char tmp[PATH_MAX], dst[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	if (fsync(fd) < 0 || rename(tmp, dst) < 0)
		return -errno;
	return 0;
}

static void
drop_tmp(const char *dir, const char *name)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	(void)unlink(tmp);
}

/* The output (a JSON object, may be NULL) in a memory file: its fd or
 * -errno. */
static int
output_file(const json_t *output)
{
	char *text = output != NULL ? json_dumps(output, JSON_COMPACT) : NULL;
	int fd = memfd_create("cordon-seal-output", MFD_CLOEXEC), r = 0;

	if (fd < 0) {
		free(text);
		return -errno;
	}
	if (text != NULL)
		r = path_write_all(fd, text, strlen(text));
	else if (output != NULL)
		r = -ENOMEM;
	free(text);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int
seal_workspace(struct sealer *s, const char *root, const char *job,
    const json_t *output, long output_kb, json_t **ret,
    struct seal_child *child)
{
	char dir[PATH_MAX - 64], path[PATH_MAX];
	_cleanup_close_ int patch_fd = -1, report_fd = -1, dir_fd = -1,
			    out_fd = -1;
	int r;

	*child = (struct seal_child){ .pid = 0,
		.uid = -1,
		.seccomp = -1,
		.no_new_privs = -1,
		.cap_eff = -1 };
	r = ws_dir(dir, sizeof(dir), root, job);
	if (r < 0)
		return r;
	/* Sealed already: the same answer again. */
	if (seal_report(root, job, ret) == 0)
		return 0;
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dir_fd < 0)
		return -errno;
	patch_fd = open_tmp(dir, "patch");
	report_fd = open_tmp(dir, "report.json");
	if (patch_fd < 0 || report_fd < 0) {
		r = -errno;
		goto fail;
	}
	out_fd = output_file(output);
	if (out_fd < 0) {
		r = out_fd;
		goto fail;
	}
	r = sealer_seal(s, dir_fd, job, out_fd, output_kb, patch_fd, report_fd,
	    child);
	if (r < 0)
		goto fail;
	/* The patch first, the report last: a report means a whole seal. */
	r = commit_tmp(dir, "patch", patch_fd);
	if (r == 0)
		r = commit_tmp(dir, "report.json", report_fd);
	if (r < 0)
		goto fail;
	r = seal_report(root, job, ret);
	if (r < 0)
		return r == -EAGAIN ? -EIO : r;
	/* A tree the seal could not take whole is refused; its evidence is
	 * the report and the patch, both bounded. The job's tmpfs (its RAM)
	 * goes now, not when someone removes the workspace (which unmounts
	 * it, should this fail). */
	if (!json_is_true(
		json_object_get(json_object_get(*ret, "patch"), "complete"))) {
		snprintf(path, sizeof(path), "%s/rw", dir);
		(void)umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	}
	return 0;
fail:
	drop_tmp(dir, "patch");
	drop_tmp(dir, "report.json");
	return r;
}

int
seal_patch(const char *root, const char *job, char **ret, size_t *ret_len)
{
	char dir[PATH_MAX - 64], path[PATH_MAX];
	struct stat st;
	int r = ws_dir(dir, sizeof(dir), root, job);

	if (r < 0)
		return r;
	/* The report is renamed into place last: without it, no seal. */
	snprintf(path, sizeof(path), "%s/report.json", dir);
	if (stat(path, &st) < 0)
		return -EAGAIN;
	snprintf(path, sizeof(path), "%s/patch", dir);
	return path_read_file(path, (size_t)1 << 30, ret, ret_len);
}

int
seal_report(const char *root, const char *job, json_t **ret)
{
	char dir[PATH_MAX - 64], path[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	int r = ws_dir(dir, sizeof(dir), root, job);

	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/report.json", dir);
	r = path_read_file(path, REPORT_MAX, &text, NULL);
	if (r == -ENOENT)
		return -EAGAIN;
	if (r < 0)
		return r;
	*ret = json_loads(text, 0, NULL);
	return *ret != NULL ? 0 : -EIO;
}
