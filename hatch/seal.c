/*
 * Seal: policy from the workspace's meta.json, the upper walk, the output
 * envelope, then patch and report written to temporary files and renamed
 * into place, report last: a report on disk means a complete seal.
 *
 * The reading and judging (meta.json, the walk of the job's upper
 * directory, hostile names and bytes) runs in a child forked for the one
 * seal, holding none of the hatch's fds, under its own filters
 * (confine_seal: on top of the hatch's, no mounts; then no sockets),
 * which writes into the two temporary files its parent opened and tells
 * its parent its own seccomp state through a pipe. The parent
 * waits at most SEAL_CHILD_DEADLINE_S; a child that died, was killed or
 * failed is a failed seal, and nothing is renamed into place.
 */
#include "seal.h"

#include "buf.h"
#include "confine.h"
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
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define META_MAX (1024 * 1024)
#define REPORT_MAX (16 * 1024 * 1024)
#define SEAL_CHILD_DEADLINE_S 300

/*
 * The sealer's profile: a child forked for one seal, which reads the
 * workspace (meta.json, lower, the job's upper) and writes the patch and
 * report into files its parent opened. On top of the hatch's filter it
 * gives up the mounts too: no exec, mounts, namespaces or id changes.
 */
static const struct confine_profile confine_seal = { .name = "seal" };

/* Sockets the sealer refuses (EPERM) on top of confine_seal: it needs
 * none, and it must not use the hatch's listening socket it inherited. */
static const char *const seal_no_sockets[] = { "socket", "socketpair",
	"connect", "bind", "listen", "accept", "accept4" };

/* Closes every fd from 3 up but the n in keep (the hatch's sockets, its
 * other workspaces' files: the sealer needs none of them). */
static void
close_others(int *keep, size_t n)
{
	unsigned from = 3;

	/* keep sorted (n is 3: a small insertion sort). */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if ((unsigned)keep[i] > from)
			(void)close_range(from, (unsigned)keep[i] - 1, 0);
		if ((unsigned)keep[i] + 1 > from)
			from = (unsigned)keep[i] + 1;
	}
	(void)close_range(from, ~0U, 0);
}

/* confine_seal, then a second filter refusing seal_no_sockets: 0 or
 * -errno. */
static int
confine_sealer(void)
{
	scmp_filter_ctx ctx;
	int r = confine_apply(&confine_seal);

	if (r < 0)
		return r;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx == NULL)
		return -ENOMEM;
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(seal_no_sockets); i++) {
		int nr = seccomp_syscall_resolve_name(seal_no_sockets[i]);
		if (nr != __NR_SCMP_ERROR)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}

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

/* The seal proper, in the child: writes the patch to patch_fd and the
 * report to report_fd. 0 or -errno. */
static int
seal_compute(const char *dir, const char *job, const json_t *output,
    long output_kb, int patch_fd, int report_fd)
{
	char path[PATH_MAX], sha[65], ts[40];
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
	if (r == 0)
		r = policy_set_exclude(&pol,
		    json_object_get(ret_pol, "exclude"));
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
	policy_free(&pol);
	free(out);
	free(err);
	return r;
}

/* The Seccomp_filters and NoNewPrivs fields of /proc/self/status and
 * whether socket(2) is refused, as "filters nnp refused\n" to fd (best
 * effort: the parent only logs them). */
static void
tell_state(int fd)
{
	char line[256], out[64];
	long filters = -1, nnp = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Seccomp_filters:", 16) == 0)
			filters = strtol(line + 16, NULL, 10);
		else if (strncmp(line, "NoNewPrivs:", 11) == 0)
			nnp = strtol(line + 11, NULL, 10);
	}
	if (f != NULL)
		fclose(f);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0)
		close(s);
	int n = snprintf(out, sizeof(out), "%ld %ld %d\n", filters, nnp,
	    s < 0 ? 1 : 0);
	(void)path_write_all(fd, out, (size_t)n);
}

/* Waits for pid at most SEAL_CHILD_DEADLINE_S, then kills it: 0 for an
 * exit status of 0, -errno for the child's own failure, -EIO for a child
 * that died otherwise or ran out of time. */
static int
wait_child(pid_t pid)
{
	struct timespec start, now, nap = { 0, 1000000 };
	int status;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -errno;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= SEAL_CHILD_DEADLINE_S) {
			kill(pid, SIGKILL);
			(void)waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 50000000)
			nap.tv_nsec *= 2;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status) == 0 ? 0 : -WEXITSTATUS(status);
	return -EIO;
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

int
seal_workspace(const char *root, const char *job, const json_t *output,
    long output_kb, json_t **ret, struct seal_child *child)
{
	char dir[PATH_MAX - 64], path[PATH_MAX], state[64] = "";
	_cleanup_close_ int patch_fd = -1, report_fd = -1;
	int pipefd[2], r;
	pid_t pid;

	r = ws_dir(dir, sizeof(dir), root, job);
	if (r < 0)
		return r;
	/* Sealed already: the same answer again. */
	if (seal_report(root, job, ret) == 0)
		return 0;
	patch_fd = open_tmp(dir, "patch");
	report_fd = open_tmp(dir, "report.json");
	if (patch_fd < 0 || report_fd < 0) {
		r = -errno;
		goto fail;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		goto fail;
	}
	if (pid == 0) {
		int keep[] = { pipefd[1], patch_fd, report_fd };
		close(pipefd[0]);
		close_others(keep, ARRAY_SIZE(keep));
		r = confine_sealer();
		if (r == 0) {
			tell_state(pipefd[1]);
			r = seal_compute(dir, job, output, output_kb, patch_fd,
			    report_fd);
		}
		_exit(r < 0 ? (-r & 0xff) : 0);
	}
	close(pipefd[1]);
	r = wait_child(pid);
	ssize_t n = read(pipefd[0], state, sizeof(state) - 1);
	close(pipefd[0]);
	if (child != NULL) {
		child->pid = pid;
		child->seccomp_filters = -1;
		child->no_new_privs = -1;
		if (n > 0) {
			char *end;
			state[n] = '\0';
			child->seccomp_filters = strtol(state, &end, 10);
			child->no_new_privs = strtol(end, &end, 10);
			child->socket_refused = strtol(end, NULL, 10) == 1;
		}
	}
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
