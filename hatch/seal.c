/*
 * Seal: policy from the workspace's meta.json, the upper walk, the output
 * envelope, then patch and report written to temporary files and renamed
 * into place, report last: a report on disk means a complete seal.
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

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define META_MAX (1024 * 1024)
#define REPORT_MAX (16 * 1024 * 1024)

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

/* Writes data to dir/name atomically (a temporary file, fsync, rename). */
static int
write_atomic(const char *dir, const char *name, const void *data, size_t len)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int fd, r;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd < 0)
		return -errno;
	r = path_write_all(fd, data, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
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

int
seal_workspace(const char *root, const char *job, const json_t *output,
    long output_kb, json_t **ret)
{
	char dir[PATH_MAX - 64], path[PATH_MAX], sha[65], ts[40];
	_cleanup_free_ char *meta_text = NULL;
	_cleanup_close_ int lower = -1, upper = -1;
	unsigned char *out = NULL, *err = NULL;
	size_t outlen = 0, errlen = 0;
	json_t *meta = NULL, *changes = NULL, *report = NULL;
	struct upper_stats stats = { 0 };
	struct policy pol = { 0 };
	struct buf patch;
	struct statvfs vfs;
	int r;

	r = ws_dir(dir, sizeof(dir), root, job);
	if (r < 0)
		return r;
	/* Sealed already: the same answer again. */
	if (seal_report(root, job, ret) == 0)
		return 0;
	if ((r = decode(output, "stdout", &out, &outlen)) < 0 ||
	    (r = decode(output, "stderr", &err, &errlen)) < 0)
		goto out;

	snprintf(path, sizeof(path), "%s/meta.json", dir);
	r = path_read_file(path, META_MAX, &meta_text, NULL);
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
	if (r < 0) {
		r = -ENOMEM;
		goto out;
	}

	snprintf(path, sizeof(path), "%s/lower", dir);
	lower = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	snprintf(path, sizeof(path), "%s/rw/upper", dir);
	upper = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (lower < 0 || upper < 0) {
		r = -errno;
		goto out;
	}
	buf_init(&patch, max_patch);
	changes = json_array();
	r = upper_walk(lower, upper, &pol, &patch, changes, &stats);
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
	r = write_atomic(dir, "patch", buf_str(&patch), patch.len);
	buf_free(&patch);
	if (r == 0) {
		char *text = json_dumps(report, JSON_COMPACT);
		r = text != NULL
		    ? write_atomic(dir, "report.json", text, strlen(text))
		    : -ENOMEM;
		free(text);
	}
	/* A tree the seal could not take whole is refused; its evidence is
	 * the report and the patch, both bounded. The job's tmpfs (its RAM)
	 * goes now, not when someone removes the workspace (which unmounts
	 * it, should this fail). */
	if (r == 0 && !complete) {
		snprintf(path, sizeof(path), "%s/rw", dir);
		(void)umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	}
	if (r == 0)
		*ret = json_incref(report);
out:
	json_decref(report);
	json_decref(changes);
	json_decref(meta);
	policy_free(&pol);
	free(out);
	free(err);
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
