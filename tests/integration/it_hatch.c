/*
 * cordon-hatch, the real daemon on loopback, as root (it mounts): copy-in
 * that copies what it should and refuses the rest whole, the tmpfs that
 * caps the job's writes, removal that leaves nothing mounted, and bad
 * input of every kind. Each job is made at a real broker, with the return
 * policy and disk cap the test names, as production makes it; a test
 * calls its jobs by tags, the broker names them.
 */
#include "harness.h"
#include "hatchjob.h"
#include "http_client.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define KEY "crk_hatch-test-key-0123456789abcdefghijkl"

static struct daemon hatch;
static struct hatchjob hj;
static char roots[300], outside[300];

/* A new job for tag, of a manifest returning ret (taken; NULL: none)
 * with disk_mb (0: the default): its id. */
static const char *
mint(const char *tag, json_t *ret, int disk_mb)
{
	return hatchjob_mint(&hj, tag, ret, disk_mb);
}

/* The id of tag's job (minted before). */
static const char *
J(const char *tag)
{
	return hatchjob_id(&hj, tag);
}

/* "/v1/workspaces/<tag's id><suffix>", in one of four buffers. */
static const char *
wpath(const char *tag, const char *suffix)
{
	static char paths[4][256];
	static unsigned n;
	char *p = paths[n++ % 4];

	snprintf(p, sizeof(paths[0]), "/v1/workspaces/%s%s", J(tag), suffix);
	return p;
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void
start(void)
{
	char cfg[2048], keyfile[400], p[400];

	/* Inputs live under roots; a file outside them is refused. */
	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(outside, sizeof(outside), "%s", harness_tmpdir());
	snprintf(keyfile, sizeof(keyfile), "%s/launcher.key", outside);
	write_file(keyfile, KEY "\n", 0600);
	snprintf(p, sizeof(p), "%s/secret.txt", outside);
	write_file(p, "not for jobs\n", 0644);
	hatchjob_start(&hj);
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_file\": \"%s\", "
	    "%s}",
	    roots, keyfile, hj.hatch_config);
	ck_assert_int_eq(daemon_start(&hatch, "hatch", cfg), 0);
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	hatchjob_stop(&hj);
}

static json_t *
expect(long want, const char *method, const char *path, const char *key,
    json_t *body)
{
	return harness_expect(&hatch, want, method, path, key, NULL, body);
}

/* A small repository under the roots: its path (static). */
static const char *
make_repo(const char *name)
{
	static char repo[400];
	char p[500];

	snprintf(repo, sizeof(repo), "%s/%s", roots, name);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	write_file(p, "hello\n", 0644);
	snprintf(p, sizeof(p), "%s/run.sh", repo);
	write_file(p, "#!/bin/sh\n", 04755);
	snprintf(p, sizeof(p), "%s/src", repo);
	ck_assert_int_eq(mkdir(p, 0750), 0);
	snprintf(p, sizeof(p), "%s/src/main.c", repo);
	write_file(p, "int main(void) { return 0; }\n", 0644);
	snprintf(p, sizeof(p), "%s/src/readme", repo);
	ck_assert_int_eq(symlink("../README", p), 0);
	return repo;
}

static bool
mounted(const char *path)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found = false;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, path) != NULL)
			found = true;
	fclose(f);
	return found;
}

START_TEST(copy_in_and_remove)
{
	const char *repo = make_repo("repo");
	char p[600], target[64];
	struct stat st;
	struct statvfs vfs;
	json_t *v;

	v = expect(201, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}]}", "job", mint("job_a", NULL, 8),
		"inputs", "src", repo, "dst", "checkout/repo"));
	const char *lower = json_string_value(json_object_get(v, "lower"));
	const char *upper = json_string_value(json_object_get(v, "upper"));
	ck_assert_ptr_nonnull(lower);
	ck_assert_ptr_nonnull(upper);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(json_object_get(v,
								"inputs"),
						 0),
				 "files")),
	    3);

	/* Contents, modes (setuid dropped), the link as a link. */
	snprintf(p, sizeof(p), "%s/checkout/repo/src/main.c", lower);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_size, 29);
	snprintf(p, sizeof(p), "%s/checkout/repo/run.sh", lower);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	snprintf(p, sizeof(p), "%s/checkout/repo/src", lower);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	snprintf(p, sizeof(p), "%s/checkout/repo/src/readme", lower);
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ssize_t n = readlink(p, target, sizeof(target) - 1);
	ck_assert_int_gt(n, 0);
	target[n] = '\0';
	ck_assert_str_eq(target, "../README");

	/* The upper directory is on its own tmpfs of the job's size. */
	ck_assert_int_eq(statvfs(upper, &vfs), 0);
	ck_assert_uint_eq((uint64_t)vfs.f_blocks * vfs.f_frsize,
	    8ULL * 1024 * 1024);
	char rw[600];
	snprintf(rw, sizeof(rw), "%s", upper);
	*strrchr(rw, '/') = '\0';
	ck_assert(mounted(rw));

	/* One workspace per job. */
	json_decref(expect(409, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[]}", "job", J("job_a"), "inputs")));

	/* Removal unmounts and leaves nothing. */
	char dir[600];
	snprintf(dir, sizeof(dir), "%s", lower);
	*strrchr(dir, '/') = '\0';
	json_decref(expect(200, "DELETE", wpath("job_a", ""), KEY, NULL));
	ck_assert_int_eq(access(dir, F_OK), -1);
	ck_assert(!mounted(dir));
	json_decref(expect(404, "DELETE", wpath("job_a", ""), KEY, NULL));
	json_decref(v);
	/* A job gets one workspace: removed, it is closed. */
	json_decref(expect(409, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[]}", "job", J("job_a"), "inputs")));
	/* And a DELETE that finds none closes it too: a create from a
	 * launcher that died before its answer cannot come after. */
	mint("job_late", NULL, 0);
	json_decref(expect(404, "DELETE", wpath("job_late", ""), KEY, NULL));
	v = expect(409, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[]}", "job", J("job_late"), "inputs"));
	ck_assert_str_eq(json_string_value(json_object_get(v, "error")),
	    "workspace_closed");
	json_decref(v);
}
END_TEST

/*
 * A workspace the hatch was making when it stopped (no meta.json yet: its
 * create never answered, so no job ran in it) is removed at the next
 * start, tmpfs and all, as is what a removal cut short left; a finished
 * one is kept, to be sealed.
 */
START_TEST(an_unfinished_workspace_goes_at_start)
{
	const char *repo = make_repo("repo");
	char half[600], rw[700], p[700], trash[700];
	json_t *v;

	v = expect(201, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}]}", "job", mint("job_done", NULL, 0),
		"inputs", "src", repo, "dst", "repo"));
	snprintf(half, sizeof(half), "%s",
	    json_string_value(json_object_get(v, "lower")));
	json_decref(v);
	/* Beside it, one as a crash would leave it: lower copied, the tmpfs
	 * mounted, meta.json half written. */
	*strrchr(half, '/') = '\0';
	*strrchr(half, '/') = '\0';
	strcat(half, "/job_half");
	ck_assert_int_eq(mkdir(half, 0700), 0);
	snprintf(p, sizeof(p), "%s/lower", half);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lower/x", half);
	write_file(p, "x\n", 0644);
	snprintf(rw, sizeof(rw), "%s/rw", half);
	ck_assert_int_eq(mkdir(rw, 0755), 0);
	ck_assert_int_eq(mount("tmpfs", rw, "tmpfs", MS_NOSUID | MS_NODEV,
			     "size=1m"),
	    0);
	snprintf(p, sizeof(p), "%s/meta.json.part", half);
	write_file(p, "{\"job\": \"job_h", 0600);

	/* And one a removal cut short: renamed aside, its tmpfs mounted. */
	snprintf(trash, sizeof(trash), "%s", half);
	strcpy(strrchr(trash, '/') + 1, ".job_gone.deleting");
	ck_assert_int_eq(mkdir(trash, 0700), 0);
	snprintf(p, sizeof(p), "%s/rw", trash);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV,
			     "size=1m"),
	    0);

	ck_assert_int_eq(daemon_stop(&hatch), 0);
	ck_assert_int_eq(daemon_restart(&hatch), 0);
	ck_assert_int_eq(access(half, F_OK), -1);
	ck_assert(!mounted(half));
	ck_assert_int_eq(access(trash, F_OK), -1);
	ck_assert(!mounted(trash));
	json_decref(
	    expect(404, "DELETE", "/v1/workspaces/job_half", KEY, NULL));
	/* The finished one is there, and seals. */
	v = expect(200, "POST", wpath("job_done", "/seal"), KEY, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(v, "verdict")),
	    "clean");
	json_decref(v);
	json_decref(expect(200, "DELETE", wpath("job_done", ""), KEY, NULL));
}
END_TEST

/* True when problems hold one naming path (or field) with the text. */
static bool
has_problem(const json_t *v, const char *key, const char *name,
    const char *says)
{
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(v, "problems"), i, p)
	{
		const char *k = json_string_value(json_object_get(p, key));
		const char *t =
		    json_string_value(json_object_get(p, "problem"));
		if (k != NULL && t != NULL && strcmp(k, name) == 0 &&
		    strstr(t, says) != NULL)
			return true;
	}
	return false;
}

START_TEST(refuses_what_it_must_not_copy)
{
	const char *repo = make_repo("hostile");
	char p[600], ws[600];
	json_t *v;

	snprintf(p, sizeof(p), "%s/pipe", repo);
	ck_assert_int_eq(mkfifo(p, 0644), 0);
	snprintf(p, sizeof(p), "%s/null", repo);
	ck_assert_int_eq(mknod(p, S_IFCHR | 0644, makedev(1, 3)), 0);
	snprintf(p, sizeof(p), "%s/src/passwd", repo);
	ck_assert_int_eq(symlink("/etc/passwd", p), 0);
	snprintf(p, sizeof(p), "%s/src/up", repo);
	ck_assert_int_eq(symlink("../../..", p), 0);

	v = expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}]}", "job", mint("job_h", NULL, 0),
		"inputs", "src", repo, "dst", "repo"));
	ck_assert(has_problem(v, "path", "pipe", "fifo"));
	ck_assert(has_problem(v, "path", "null", "device"));
	ck_assert(has_problem(v, "path", "src/passwd", "leads out"));
	ck_assert(has_problem(v, "path", "src/up", "leads out"));
	json_decref(v);
	/* Nothing is left of it. */
	snprintf(ws, sizeof(ws), "%s/var/hatch/workspaces/%s", hatch.dir,
	    J("job_h"));
	ck_assert_int_eq(access(ws, F_OK), -1);
}
END_TEST

START_TEST(bad_input_gets_the_right_status)
{
	char p[600];
	json_t *v;

	make_repo("ok");
	snprintf(p, sizeof(p), "%s/ok", roots);
	/* Relative, missing, outside the roots, escaping dst: all listed. */
	v = expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}, {s:s, "
		      "s:s}]}",
		"job", "job_b", "inputs", "src", "relative/path", "dst", "a",
		"src", "/nonexistent/x", "dst", "b", "src", outside, "dst", "c",
		"src", p, "dst", "../escape"));
	ck_assert(has_problem(v, "field", "inputs[0].src", "absolute"));
	ck_assert(has_problem(v, "field", "inputs[1].src", "does not exist"));
	ck_assert(has_problem(v, "field", "inputs[2].src", "input_roots"));
	ck_assert(has_problem(v, "field", "inputs[3].dst", "relative"));
	json_decref(v);

	/* A link inside the roots that points out of them is out. */
	snprintf(p, sizeof(p), "%s/sneaky", roots);
	ck_assert_int_eq(symlink(outside, p), 0);
	v = expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}]}", "job", "job_c", "inputs", "src",
		p, "dst", "x"));
	ck_assert(has_problem(v, "field", "inputs[0].src", "input_roots"));
	json_decref(v);

	/* Overlapping destinations, bad job names, types, sizes, fields. */
	snprintf(p, sizeof(p), "%s/ok", roots);
	json_decref(expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}]}", "job", "job_d",
		"inputs", "src", p, "dst", "a", "src", p, "dst", "a/b")));
	json_decref(expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[]}", "job", "../x", "inputs")));
	/* The policy is the broker's: a request cannot carry one. */
	v = expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[], s:i}", "job", "j", "inputs", "disk_mb", 8));
	ck_assert(has_problem(v, "field", "disk_mb", "unknown field"));
	json_decref(v);
	json_decref(expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[], s:b}", "job", "j", "inputs", "extra", 1)));
	json_decref(expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:s}", "job", "j", "inputs", "all")));
	v = expect(422, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[], s:{s:[s]}}", "job", "j", "inputs", "return",
		"protected", "nothing/**"));
	ck_assert(has_problem(v, "field", "return", "unknown field"));
	json_decref(v);
	/* Keys. */
	json_decref(expect(401, "POST", "/v1/workspaces", NULL,
	    json_pack("{s:s, s:[]}", "job", "j", "inputs")));
	json_decref(expect(401, "DELETE", "/v1/workspaces/j",
	    "crk_some-other-key-0123456789abcdefghijklmn", NULL));
	json_decref(expect(404, "DELETE", "/v1/workspaces/nothing", KEY, NULL));
	json_decref(expect(200, "GET", "/healthz", NULL, NULL));
}
END_TEST

/* A workspace for job over a fresh small repo: its upper directory. */
static char *
workspace(const char *job, int disk_mb)
{
	const char *repo = make_repo(job);
	const char *id = mint(job,
	    json_pack("{s:[s]}", "protected", "docs/secret/**"), disk_mb);
	json_t *v = expect(201, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}]}", "job", id, "inputs", "src", repo,
		"dst", "repo"));
	char *upper = strdup(json_string_value(json_object_get(v, "upper")));

	json_decref(v);
	return upper;
}

/* Seals job (with output, may be NULL) and returns the report. */
static json_t *
seal(const char *job, json_t *output)
{
	return expect(200, "POST", wpath(job, "/seal"), KEY, output);
}

/* Whether report's changes hold path with the change given. */
static bool
changed(const json_t *report, const char *path, const char *change)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(report, "changes"), i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "path")),
			path) == 0 &&
		    strcmp(json_string_value(json_object_get(c, "change")),
			change) == 0)
			return true;
	}
	return false;
}

static bool
flagged(const json_t *report, const char *path, const char *flag,
    const char *verdict)
{
	size_t i;
	json_t *f;

	json_array_foreach(json_object_get(report, "flags"), i, f)
	{
		if (strcmp(json_string_value(json_object_get(f, "path")),
			path) == 0 &&
		    strcmp(json_string_value(json_object_get(f, "flag")),
			flag) == 0 &&
		    strcmp(json_string_value(json_object_get(f, "verdict")),
			verdict) == 0)
			return true;
	}
	return false;
}

static const char *
verdict(const json_t *report)
{
	return json_string_value(json_object_get(report, "verdict"));
}

START_TEST(verdicts)
{
	char p[700];
	json_t *r;

	/* Nothing flagged: clean. */
	char *u = workspace("v_clean", 8);
	snprintf(p, sizeof(p), "%s/repo", u);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/NOTES", u);
	write_file(p, "a note\n", 0644);
	r = seal("v_clean", NULL);
	ck_assert_str_eq(verdict(r), "clean");
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(r, "stats"),
				 "added")),
	    1);
	json_decref(r);
	free(u);

	/* A CI workflow, and a protected path of the job's own. */
	u = workspace("v_ci", 8);
	static const char *const dirs[] = { "repo", "repo/.github",
		"repo/.github/workflows" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", u, dirs[i]);
		ck_assert_int_eq(mkdir(p, 0755), 0);
	}
	snprintf(p, sizeof(p), "%s/repo/.github/workflows/x.yml", u);
	write_file(p, "on: push\n", 0644);
	r = seal("v_ci", NULL);
	ck_assert_str_eq(verdict(r), "needs-review");
	ck_assert(flagged(r, "repo/.github/workflows/x.yml", "protected_path",
	    "needs-review"));
	json_decref(r);
	free(u);

	/* Symlinks: inside needs review; to /etc or ../.. is refused. */
	u = workspace("v_links", 8);
	snprintf(p, sizeof(p), "%s/repo", u);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/inside", u);
	ck_assert_int_eq(symlink("README", p), 0);
	snprintf(p, sizeof(p), "%s/repo/etc", u);
	ck_assert_int_eq(symlink("/etc", p), 0);
	snprintf(p, sizeof(p), "%s/repo/up", u);
	ck_assert_int_eq(symlink("../..", p), 0);
	r = seal("v_links", NULL);
	ck_assert_str_eq(verdict(r), "refused");
	ck_assert(flagged(r, "repo/inside", "symlink", "needs-review"));
	ck_assert(flagged(r, "repo/etc", "symlink_absolute", "refused"));
	ck_assert(flagged(r, "repo/up", "symlink_escapes", "refused"));
	json_decref(r);
	free(u);

	/* setuid, a fifo, a file over the patch limit: refused. */
	u = workspace("v_bad", 8);
	snprintf(p, sizeof(p), "%s/repo", u);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/su", u);
	write_file(p, "#!/bin/sh\n", 04755);
	snprintf(p, sizeof(p), "%s/repo/pipe", u);
	ck_assert_int_eq(mkfifo(p, 0644), 0);
	/* A name that is not UTF-8 is in the report as the patch names it,
	 * with its flags: nothing goes missing for its name. */
	snprintf(p, sizeof(p), "%s/repo/\377su", u);
	write_file(p, "#!/bin/sh\n", 04755);
	r = seal("v_bad", NULL);
	ck_assert_str_eq(verdict(r), "refused");
	ck_assert(flagged(r, "repo/su", "setuid", "refused"));
	ck_assert(flagged(r, "repo/pipe", "fifo", "refused"));
	ck_assert(flagged(r, "\"repo/\\377su\"", "setuid", "refused"));
	ck_assert(changed(r, "\"repo/\\377su\"", "added"));
	json_decref(r);
	free(u);
}
END_TEST

START_TEST(oversize_and_full_disk)
{
	char p[700], block[65536];
	json_t *r;

	/* A file bigger than max_patch_kb (4 MiB by default). */
	char *u = workspace("big", 16);
	snprintf(p, sizeof(p), "%s/repo", u);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/big.bin", u);
	FILE *f = fopen(p, "wb");
	memset(block, 'x', sizeof(block));
	for (int i = 0; i < 80; i++)
		fwrite(block, 1, sizeof(block), f);
	fclose(f);
	r = seal("big", NULL);
	ck_assert_str_eq(verdict(r), "refused");
	ck_assert(flagged(r, "repo/big.bin", "file_too_large", "refused"));
	json_decref(r);
	free(u);

	/* The disk fills: the report says so, and what was written before
	 * is in the patch. */
	u = workspace("full", 1);
	snprintf(p, sizeof(p), "%s/repo", u);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/first.txt", u);
	write_file(p, "written before the disk filled\n", 0644);
	snprintf(p, sizeof(p), "%s/repo/filler", u);
	f = fopen(p, "wb");
	while (fwrite(block, 1, sizeof(block), f) == sizeof(block) &&
	    fflush(f) == 0)
		;
	fclose(f);
	r = seal("full", NULL);
	ck_assert(json_is_true(json_object_get(r, "disk_full")));
	ck_assert(flagged(r, ".", "disk_full", "needs-review"));
	bool first = false;
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(r, "changes"), i, c)
	{
		first |= strcmp(json_string_value(json_object_get(c, "path")),
			     "repo/first.txt") == 0;
	}
	ck_assert(first);
	json_decref(r);
	free(u);
}
END_TEST

START_TEST(seal_api)
{
	char *u = workspace("s_api", 8);
	json_t *r, *again, *v;
	struct httpc_answer a;

	/* Not sealed yet: no patch, no report. */
	json_decref(expect(409, "GET", wpath("s_api", "/patch"), KEY, NULL));
	json_decref(expect(409, "GET", wpath("s_api", "/report"), KEY, NULL));
	json_decref(
	    expect(404, "POST", "/v1/workspaces/nothing/seal", KEY, NULL));
	json_decref(expect(422, "POST", wpath("s_api", "/seal"), KEY,
	    json_pack("{s:s}", "stdout", "not base64!")));
	v = expect(422, "POST", wpath("s_api", "/seal"), KEY,
	    json_pack("{s:i, s:b}", "stderr", 5, "extra", 1));
	ck_assert(has_problem(v, "field", "stderr", "base64"));
	ck_assert(has_problem(v, "field", "extra", "unknown field"));
	json_decref(v);

	/* The output comes back clean, capped, marked untrusted. */
	r = seal("s_api",
	    json_pack("{s:s, s:s, s:i}", "stdout",
		/* "hi \e[31mred\e[0m\r\n" */
		"aGkgG1szMW1yZWQbWzBtDQo=", "stderr", "", "output_kb", 1));
	json_t *out = json_object_get(r, "output");
	ck_assert_str_eq(json_string_value(json_object_get(out, "trust")),
	    "untrusted");
	json_t *so = json_object_get(out, "stdout");
	ck_assert_str_eq(json_string_value(json_object_get(so, "text")),
	    "hi red\n");
	ck_assert_int_eq(json_integer_value(json_object_get(so, "removed")), 3);
	/* Sealing again answers the same report. */
	again = seal("s_api", NULL);
	ck_assert(json_equal(r, again));
	json_decref(again);
	json_decref(r);

	ck_assert_int_eq(httpc_request(hatch.base, "GET",
			     wpath("s_api", "/patch"), KEY, NULL, NULL, 5000,
			     &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	httpc_answer_free(&a);
	json_decref(expect(200, "DELETE", wpath("s_api", ""), KEY, NULL));
	free(u);
}
END_TEST

START_TEST(whiteouts_and_opaque_directories)
{
	char mnt[600], opts[2048], p[700];
	json_t *v, *r;

	make_repo("wo");
	snprintf(p, sizeof(p), "%s/wo/Jenkinsfile", roots);
	write_file(p, "pipeline {}\n", 0644);
	snprintf(p, sizeof(p), "%s/wo", roots);
	v = expect(201, "POST", "/v1/workspaces", KEY,
	    json_pack("{s:s, s:[{s:s, s:s}]}", "job", mint("wo", NULL, 8),
		"inputs", "src", p, "dst", "repo"));
	snprintf(mnt, sizeof(mnt), "%s", harness_tmpdir());
	snprintf(opts, sizeof(opts),
	    "lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,"
	    "metacopy=off,index=off",
	    json_string_value(json_object_get(v, "lower")),
	    json_string_value(json_object_get(v, "upper")),
	    json_string_value(json_object_get(v, "work")));
	json_decref(v);
	ck_assert_int_eq(mount("overlay", mnt, "overlay", 0, opts), 0);
	/* A deletion (a whiteout), and src/ replaced whole (opaque): its
	 * main.c rewritten, its link gone, a new file beside. */
	snprintf(p, sizeof(p), "%s/repo/README", mnt);
	ck_assert_int_eq(unlink(p), 0);
	/* Deleting a protected path is a change to where CI looks, too. */
	snprintf(p, sizeof(p), "%s/repo/Jenkinsfile", mnt);
	ck_assert_int_eq(unlink(p), 0);
	snprintf(p, sizeof(p), "%s/repo/src/readme", mnt);
	ck_assert_int_eq(unlink(p), 0);
	snprintf(p, sizeof(p), "%s/repo/src/main.c", mnt);
	ck_assert_int_eq(unlink(p), 0);
	snprintf(p, sizeof(p), "%s/repo/src", mnt);
	ck_assert_int_eq(rmdir(p), 0);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/src/main.c", mnt);
	write_file(p, "int main(void) { return 1; }\n", 0644);
	snprintf(p, sizeof(p), "%s/repo/src/new.c", mnt);
	write_file(p, "/* new */\n", 0644);
	ck_assert_int_eq(umount(mnt), 0);

	r = seal("wo", NULL);
	ck_assert(changed(r, "repo/README", "deleted"));
	ck_assert(changed(r, "repo/src/readme", "deleted"));
	ck_assert(changed(r, "repo/src/main.c", "modified"));
	ck_assert(changed(r, "repo/src/new.c", "added"));
	ck_assert(changed(r, "repo/Jenkinsfile", "deleted"));
	ck_assert(
	    flagged(r, "repo/Jenkinsfile", "protected_path", "needs-review"));
	ck_assert_str_eq(verdict(r), "needs-review");
	ck_assert_int_eq(json_array_size(json_object_get(r, "changes")), 5);
	json_decref(r);
}
END_TEST

/* The hatch alone once took a job's policy from the request
 * (policy_from_request, for its tests): a configuration that still names
 * it, true or false, is refused with the reason, not started. */
START_TEST(a_config_naming_policy_from_request_is_refused)
{
	static const char *const values[] = { "true", "false" };
	char cfg[400], out[1024], err[2048], text[128];

	for (size_t i = 0; i < 2; i++) {
		snprintf(cfg, sizeof(cfg), "%s/hatch-%zu.json",
		    harness_tmpdir(), i);
		snprintf(text, sizeof(text), "{\"policy_from_request\": %s}",
		    values[i]);
		harness_write_file(cfg, text);
		char *argv[] = { (char *)harness_bin("cordon-hatch"), "-n",
			"--config", cfg, NULL };
		int st = harness_run(argv, out, sizeof(out), err, sizeof(err));
		ck_assert_msg(st == 78, "exit %d: %s%s", st, out, err);
		ck_assert_msg(strstr(err, "policy_from_request") != NULL &&
			strstr(err, "broker") != NULL,
		    "stderr: %s", err);
	}
}
END_TEST

static Suite *
hatch_suite(void)
{
	Suite *s = suite_create("hatch");
	TCase *tc = tcase_create("workspaces");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, copy_in_and_remove);
	tcase_add_test(tc, refuses_what_it_must_not_copy);
	tcase_add_test(tc, bad_input_gets_the_right_status);
	tcase_add_test(tc, verdicts);
	tcase_add_test(tc, oversize_and_full_disk);
	tcase_add_test(tc, seal_api);
	tcase_add_test(tc, whiteouts_and_opaque_directories);
	tcase_add_test(tc, an_unfinished_workspace_goes_at_start);
	suite_add_tcase(s, tc);
	TCase *cf = tcase_create("config");
	tcase_add_test(cf, a_config_naming_policy_from_request_is_refused);
	suite_add_tcase(s, cf);
	return s;
}

int
main(void)
{
	return harness_main(hatch_suite());
}
