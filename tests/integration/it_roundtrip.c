/*
 * The return path's correctness test: over many seeded random trees and
 * random edits, a real overlay mounted as the launcher mounts it
 * (redirect_dir=off, metacopy=off, index=off), the edits made through it,
 * a seal by the real hatch, and the patch applied with `git apply` to a
 * pristine copy of the inputs must give exactly the tree the job left:
 * every file's bytes, its executable bit, every symlink's target.
 * (git carries neither empty directories nor modes beyond 644/755, so
 * neither is compared.)
 *
 *   CORDON_ROUNDTRIP_CASES   how many seeds (default 40)
 *   CORDON_ROUNDTRIP_SEED    the first seed (default 1)
 *   CORDON_ROUNDTRIP_KEEP    set: keep each workspace (with
 *                            CORDON_KEEP_TMP, to look at upper/)
 */
#include "harness.h"
#include "hatchjob.h"
#include "http_client.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY "crk_roundtrip-test-key-0123456789abcdefghij"
#define ARRAY_N(a) (sizeof(a) / sizeof((a)[0]))

static struct daemon hatch;
static struct hatchjob hj;
static char roots[300];
static unsigned long long rng;

static unsigned
rnd(unsigned n)
{
	/* xorshift64*: reproducible from the seed alone. */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (unsigned)((rng * 2685821657736338717ULL) >> 33) % n;
}

static void
start(void)
{
	char cfg[2048], keyfile[400];
	int fd;

	hatchjob_start(&hj);
	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(keyfile, sizeof(keyfile), "%s/launcher.key", harness_tmpdir());
	fd = open(keyfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_eq(write(fd, KEY "\n", strlen(KEY) + 1),
	    (ssize_t)strlen(KEY) + 1);
	close(fd);
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

/* Names that make quoting earn its keep. */
static const char *const names[] = { "a", "b.txt", "with space", "quote\"d",
	"new\nline", "tab\there", "back\\slash", "ünïcödé", "run.sh",
	"data.bin", ".hidden", "c" };

static void
random_name(char *out, size_t len)
{
	snprintf(out, len, "%s%u", names[rnd(ARRAY_N(names))], rnd(4));
}

/* True when anything, even a dangling link, is at p. */
static bool
exists(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0;
}

static void
write_random(const char *path, bool binary, mode_t mode)
{
	static const char *const words[] = { "alpha\n", "beta\n", "gamma\n",
		"delta\n", "epsilon zeta\n", "\n", "eta theta iota\n" };
	size_t n =
	    binary ? rnd(3) == 0 ? 70000 + rnd(9000) : rnd(3000) : rnd(40);
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	for (size_t i = 0; i < n; i++) {
		if (binary)
			fputc((int)rnd(256), f);
		else
			fputs(words[rnd(ARRAY_N(words))], f);
	}
	if (!binary && rnd(3) == 0)
		fputs("no final newline", f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

/* A random tree of depth at most 3 under dir. */
static void
random_tree(const char *dir, int depth)
{
	unsigned n = 2 + rnd(5);

	for (unsigned i = 0; i < n; i++) {
		char name[64], p[PATH_MAX];
		unsigned kind = rnd(10);

		random_name(name, sizeof(name));
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (exists(p))
			continue;
		if (kind < 2 && depth < 3) {
			ck_assert_int_eq(mkdir(p, 0755), 0);
			random_tree(p, depth + 1);
		} else if (kind == 2) {
			ck_assert_int_eq(symlink(names[rnd(ARRAY_N(names))], p),
			    0);
		} else
			write_random(p, kind == 3, rnd(3) == 0 ? 0755 : 0644);
	}
}

/* Collects the files and links under dir, recursively, as "path\0..." */
static void
collect(const char *dir, const char *rel, char ***list, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char p[PATH_MAX], r[PATH_MAX];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		snprintf(r, sizeof(r), "%s%s%s", rel, rel[0] ? "/" : "",
		    e->d_name);
		ck_assert_int_eq(lstat(p, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			collect(p, r, list, n);
			continue;
		}
		*list = realloc(*list, (*n + 1) * sizeof(**list));
		(*list)[(*n)++] = strdup(r);
	}
	closedir(d);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A description of one entry: type, exec bit, content or target. */
static char *
describe(const char *path, size_t *ret_len)
{
	struct stat st;
	char *out;
	FILE *m;

	ck_assert_int_eq(lstat(path, &st), 0);
	m = open_memstream(&out, ret_len);
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlink(path, t, sizeof(t) - 1);
		ck_assert_int_ge(n, 0);
		t[n] = '\0';
		fprintf(m, "link:%s", t);
	} else {
		FILE *f = fopen(path, "rb");
		int c;
		ck_assert_ptr_nonnull(f);
		fprintf(m, "file:%c:", (st.st_mode & 0100) ? 'x' : '-');
		while ((c = fgetc(f)) != EOF)
			fputc(c, m);
		fclose(f);
	}
	fclose(m);
	return out;
}

/* Asserts the trees at a and b hold the same files and links. */
static void
assert_same_tree(const char *a, const char *b, unsigned seed)
{
	char **la = NULL, **lb = NULL;
	size_t na = 0, nb = 0;

	collect(a, "", &la, &na);
	collect(b, "", &lb, &nb);
	if (na > 1)
		qsort(la, na, sizeof(*la), cmp_str);
	if (nb > 1)
		qsort(lb, nb, sizeof(*lb), cmp_str);
	for (size_t i = 0; i < na || i < nb; i++) {
		ck_assert_msg(i < na && i < nb && strcmp(la[i], lb[i]) == 0,
		    "seed %u: the trees differ at \"%s\" / \"%s\"", seed,
		    i < na ? la[i] : "(none)", i < nb ? lb[i] : "(none)");
		char pa[PATH_MAX], pb[PATH_MAX];
		snprintf(pa, sizeof(pa), "%s/%s", a, la[i]);
		snprintf(pb, sizeof(pb), "%s/%s", b, lb[i]);
		size_t lena, lenb;
		char *da = describe(pa, &lena), *db = describe(pb, &lenb);
		ck_assert_msg(lena == lenb && memcmp(da, db, lena) == 0,
		    "seed %u: \"%s\" differs after the patch", seed, la[i]);
		free(da);
		free(db);
		free(la[i]);
		free(lb[i]);
	}
	free(la);
	free(lb);
}

/* A random existing path under dir (files, links or dirs), or NULL. */
static bool
pick(const char *dir, char *out, size_t len, int want_dir)
{
	for (int tries = 0; tries < 20; tries++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		char found[PATH_MAX] = "";
		unsigned seen = 0;

		if (d == NULL)
			return false;
		while ((e = readdir(d)) != NULL) {
			struct stat st;
			char p[PATH_MAX];
			if (e->d_name[0] == '.' &&
			    (e->d_name[1] == '\0' ||
				(e->d_name[1] == '.' && e->d_name[2] == '\0')))
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			if (lstat(p, &st) < 0)
				continue;
			if (S_ISDIR(st.st_mode) && !want_dir && rnd(2) == 0) {
				closedir(d);
				return pick(p, out, len, want_dir);
			}
			if ((want_dir == 1) != S_ISDIR(st.st_mode))
				continue;
			if (rnd(++seen) == 0)
				snprintf(found, sizeof(found), "%s", p);
		}
		closedir(d);
		if (found[0] != '\0') {
			snprintf(out, len, "%s", found);
			return true;
		}
	}
	return false;
}

static void
rm_rf(const char *p)
{
	char *argv[] = { "/bin/rm", "-rf", (char *)p, NULL };
	static char o[256], e[256];

	ck_assert_int_eq(harness_run(argv, o, sizeof(o), e, sizeof(e)), 0);
}

/* Random edits through the mounted overlay at m. */
static void
random_edits(const char *m)
{
	unsigned n = 1 + rnd(8);
	char p[PATH_MAX], q[PATH_MAX], name[64];

	for (unsigned i = 0; i < n; i++) {
		switch (rnd(11)) {
		case 0: /* edit */
			if (pick(m, p, sizeof(p), 0) && exists(p)) {
				struct stat st;
				/* Through a link would write its target. */
				if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
					write_random(p, rnd(4) == 0, 0644);
			}
			break;
		case 1: { /* append */
			if (!pick(m, p, sizeof(p), 0))
				break;
			struct stat st;
			if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
				FILE *f = fopen(p, "ab");
				fputs("appended\n", f);
				fclose(f);
			}
			break;
		}
		case 2: /* truncate */
			if (pick(m, p, sizeof(p), 0))
				(void)!truncate(p, rnd(10));
			break;
		case 3: /* delete */
			if (pick(m, p, sizeof(p), 0))
				unlink(p);
			break;
		case 4: /* add */
			random_name(name, sizeof(name));
			snprintf(p, sizeof(p), "%s/%s", m, name);
			if (!exists(p))
				write_random(p, rnd(3) == 0, 0644);
			break;
		case 5: { /* chmod +x / -x */
			struct stat st;
			if (pick(m, p, sizeof(p), 0) && lstat(p, &st) == 0 &&
			    S_ISREG(st.st_mode))
				chmod(p, (st.st_mode & 0100) ? 0644 : 0755);
			break;
		}
		case 6: /* a file becomes a directory */
			if (pick(m, p, sizeof(p), 0) && unlink(p) == 0) {
				ck_assert_int_eq(mkdir(p, 0755), 0);
				snprintf(q, sizeof(q), "%s/inside", p);
				write_random(q, false, 0644);
			}
			break;
		case 7: /* a directory becomes a file */
			if (pick(m, p, sizeof(p), 1)) {
				rm_rf(p);
				write_random(p, false, 0644);
			}
			break;
		case 8: /* a symlink inside the tree */
			random_name(name, sizeof(name));
			snprintf(p, sizeof(p), "%s/%s", m, name);
			if (!exists(p))
				(void)!symlink(names[rnd(ARRAY_N(names))], p);
			break;
		case 9: /* a directory replaced by a new one: opaque in upper */
			if (pick(m, p, sizeof(p), 1)) {
				rm_rf(p);
				ck_assert_int_eq(mkdir(p, 0755), 0);
				random_tree(p, 2);
			}
			break;
		default: /* a new directory with files */
			random_name(name, sizeof(name));
			snprintf(p, sizeof(p), "%s/%s", m, name);
			if (mkdir(p, 0755) == 0)
				random_tree(p, 2);
			break;
		}
	}
}

static json_t *
call(long want, const char *method, const char *path, json_t *body)
{
	return harness_expect(&hatch, want, method, path, KEY, NULL, body);
}

static void
one_case(unsigned seed)
{
	char src[PATH_MAX], job[128], path[256], mnt[PATH_MAX],
	    opts[PATH_MAX * 3], snap[PATH_MAX], pristine[PATH_MAX],
	    patchfile[PATH_MAX], tmp[300];
	struct httpc_answer a;

	/* harness_tmpdir's buffer is reused: keep a copy. */
	snprintf(tmp, sizeof(tmp), "%s", harness_tmpdir());

	rng = 0x9e3779b97f4a7c15ULL ^ ((unsigned long long)seed << 17) ^ seed;
	snprintf(src, sizeof(src), "%s/case%u", roots, seed);
	ck_assert_int_eq(mkdir(src, 0755), 0);
	random_tree(src, 0);

	/* The broker's job, of a manifest with disk_mb 64. */
	hatchjob_new(&hj, NULL, 64, job, sizeof(job));
	json_t *ws = call(201, "POST", "/v1/workspaces",
	    json_pack("{s:s, s:[{s:s, s:s}]}", "job", job, "inputs", "src", src,
		"dst", "repo"));
	snprintf(mnt, sizeof(mnt), "%s/merged", tmp);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	snprintf(opts, sizeof(opts),
	    "lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,"
	    "metacopy=off,index=off",
	    json_string_value(json_object_get(ws, "lower")),
	    json_string_value(json_object_get(ws, "upper")),
	    json_string_value(json_object_get(ws, "work")));
	ck_assert_msg(mount("overlay", mnt, "overlay", 0, opts) == 0,
	    "mount overlay: %s", strerror(errno));
	json_decref(ws);

	char repo[PATH_MAX];
	snprintf(repo, sizeof(repo), "%s/repo", mnt);
	random_edits(repo);

	/* What the job left, before the overlay goes. */
	snprintf(snap, sizeof(snap), "%s/snapshot", tmp);
	char *cp[] = { "/bin/cp", "-a", mnt, snap, NULL };
	static char o[4096], e[4096];
	ck_assert_int_eq(harness_run(cp, o, sizeof(o), e, sizeof(e)), 0);
	ck_assert_int_eq(umount(mnt), 0);

	snprintf(path, sizeof(path), "/v1/workspaces/%s/seal", job);
	json_t *report = call(200, "POST", path, NULL);
	json_decref(report);
	snprintf(path, sizeof(path), "/v1/workspaces/%s/patch", job);
	ck_assert_int_eq(httpc_request(hatch.base, "GET", path, KEY, NULL, NULL,
			     10000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	snprintf(patchfile, sizeof(patchfile), "%s/job.patch", tmp);
	FILE *f = fopen(patchfile, "wb");
	if (a.body.len > 0) /* no change at all is an empty patch */
		fwrite(a.body.data, 1, a.body.len, f);
	fclose(f);
	httpc_answer_free(&a);

	/* A pristine copy of the inputs, laid out as the workspace was. */
	snprintf(pristine, sizeof(pristine), "%s/pristine", tmp);
	ck_assert_int_eq(mkdir(pristine, 0755), 0);
	char dst[PATH_MAX];
	snprintf(dst, sizeof(dst), "%s/repo", pristine);
	char *cp2[] = { "/bin/cp", "-a", src, dst, NULL };
	ck_assert_int_eq(harness_run(cp2, o, sizeof(o), e, sizeof(e)), 0);
	char *apply[] = { "/usr/bin/git", "-C", pristine, "apply",
		"--allow-empty", "--whitespace=nowarn", patchfile, NULL };
	int st = harness_run(apply, o, sizeof(o), e, sizeof(e));
	ck_assert_msg(st == 0, "seed %u: git apply failed: %s (patch %s)", seed,
	    e, patchfile);
	assert_same_tree(snap, pristine, seed);

	if (getenv("CORDON_ROUNDTRIP_KEEP") == NULL) {
		snprintf(path, sizeof(path), "/v1/workspaces/%s", job);
		json_decref(call(200, "DELETE", path, NULL));
	}
}

START_TEST(patch_reproduces_the_tree)
{
	const char *cases = getenv("CORDON_ROUNDTRIP_CASES");
	const char *first = getenv("CORDON_ROUNDTRIP_SEED");
	unsigned n = cases != NULL ? (unsigned)strtoul(cases, NULL, 10) : 40;
	unsigned s0 = first != NULL ? (unsigned)strtoul(first, NULL, 10) : 1;

	for (unsigned seed = s0; seed < s0 + n; seed++)
		one_case(seed);
}
END_TEST

static Suite *
roundtrip_suite(void)
{
	Suite *s = suite_create("roundtrip");
	TCase *tc = tcase_create("overlay_seal_apply");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, patch_reproduces_the_tree);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(roundtrip_suite());
}
