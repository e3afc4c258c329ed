/*
 * The patch writer, judged by git itself. The round trip: random old and
 * new trees (text drawn from a small vocabulary so that versions share
 * lines, binary with NULs and past the 64 KiB of a stored block, adds,
 * deletes, mode flips, symlinks, type changes, names that need quoting),
 * the old one written to disk, the patch applied to it with the real
 * `git apply`, and the result compared with the new tree byte for byte
 * and mode for mode; then `git apply -R` must give the old tree back. The
 * exact output: for fixed trees, what `git diff --cached --full-index
 * --binary` prints, the same after the compressed binary data is set
 * aside on both sides (ours is decoded and checked against the blob ids).
 * And the pieces: quoting, the binary rule, minimal diffs against an LCS
 * table, the budget fallback, the cap and malformed input.
 */
#include "buf.h"
#include "patch.h"
#include "path.h"
#include "testutil.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* For loops: Check records every passing ck_assert (a write to its
 * pipe), which would cost more than the work checked. */
#define MUST(expr)                                                             \
	do {                                                                   \
		if (!(expr))                                                   \
			ck_abort_msg("failed: %s", #expr);                     \
	} while (0)

#define MAX_ENTRIES 48
#define PATCH_CAP (64u << 20)
#define CASES_PER_LOOP 50
#define LOOPS 8 /* 400 random round trips */

/* --- Trees in memory and on disk. --- */

struct entry {
	char *path;
	unsigned mode; /* PATCH_MODE_* */
	unsigned char *data; /* a symlink's target */
	size_t len;
};

struct tree {
	struct entry e[MAX_ENTRIES];
	size_t n;
};

/* a, sep and b joined into out, which must hold them. */
static void
join(char out[PATH_MAX], const char *a, const char *sep, const char *b)
{
	int n = snprintf(out, PATH_MAX, "%s%s%s", a, sep, b);

	ck_assert(n > 0 && n < PATH_MAX);
}

static void
tree_add(struct tree *t, const char *path, unsigned mode, const void *data,
    size_t len)
{
	struct entry *e;

	ck_assert_uint_lt(t->n, MAX_ENTRIES);
	e = &t->e[t->n++];
	e->path = strdup(path);
	e->mode = mode;
	e->data = malloc(len + 1);
	ck_assert_ptr_nonnull(e->path);
	ck_assert_ptr_nonnull(e->data);
	if (len > 0)
		memcpy(e->data, data, len);
	e->data[len] = '\0';
	e->len = len;
}

static void
tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].path);
		free(t->e[i].data);
	}
	t->n = 0;
}

static struct entry *
tree_find(const struct tree *t, const char *path)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->e[i].path, path) == 0)
			return (struct entry *)&t->e[i];
	return NULL;
}

static int
entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path,
	    ((const struct entry *)b)->path);
}

static void
tree_write(const char *root, const struct tree *t)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < t->n; i++) {
		const struct entry *e = &t->e[i];
		char *slash;
		int fd;

		join(path, root, "/", e->path);
		slash = strrchr(path, '/');
		*slash = '\0';
		ck_assert_int_eq(path_mkdir_p(path, 0755), 0);
		*slash = '/';
		if (e->mode == PATCH_MODE_SYMLINK) {
			ck_assert_int_eq(symlink((const char *)e->data, path),
			    0);
			continue;
		}
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		ck_assert_int_ge(fd, 0);
		for (size_t off = 0; off < e->len;) {
			ssize_t w = write(fd, e->data + off, e->len - off);

			ck_assert_int_gt(w, 0);
			off += (size_t)w;
		}
		ck_assert_int_eq(fchmod(fd,
				     e->mode == PATCH_MODE_EXEC ? 0755 : 0644),
		    0);
		ck_assert_int_eq(close(fd), 0);
	}
}

/* Regular files and symlinks under root/rel; directories only as paths.
 * The executable bit decides between 100644 and 100755, as git does. */
static void
tree_read(const char *root, const char *rel, struct tree *t)
{
	char dir[PATH_MAX], full[PATH_MAX], sub[PATH_MAX];
	struct dirent *de;
	DIR *d;

	join(dir, root, *rel ? "/" : "", rel);
	d = opendir(dir);
	ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		join(sub, rel, *rel ? "/" : "", de->d_name);
		join(full, root, "/", sub);
		ck_assert_int_eq(lstat(full, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			tree_read(root, sub, t);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlink(full, target, sizeof(target));

			ck_assert_int_gt(n, 0);
			tree_add(t, sub, PATCH_MODE_SYMLINK, target, (size_t)n);
		} else {
			unsigned char *data = malloc((size_t)st.st_size + 1);
			size_t n;

			ck_assert_msg(S_ISREG(st.st_mode), "%s: odd type", sub);
			ck_assert_ptr_nonnull(data);
			n = testutil_read_file(full, data, (size_t)st.st_size);
			ck_assert_uint_eq(n, (size_t)st.st_size);
			tree_add(t, sub,
			    (st.st_mode & 0100) ? PATCH_MODE_EXEC
						: PATCH_MODE_FILE,
			    data, n);
			free(data);
		}
	}
	closedir(d);
}

/* got must equal want: the same paths, types, modes and bytes. */
static void
tree_assert_equal(struct tree *got, struct tree *want, const char *what,
    uint64_t seed)
{
	qsort(got->e, got->n, sizeof(got->e[0]), entry_cmp);
	qsort(want->e, want->n, sizeof(want->e[0]), entry_cmp);
	for (size_t i = 0; i < got->n || i < want->n; i++) {
		const char *gp = i < got->n ? got->e[i].path : "(none)";
		const char *wp = i < want->n ? want->e[i].path : "(none)";

		ck_assert_msg(strcmp(gp, wp) == 0,
		    "seed %llu, %s: entry %zu is \"%s\", want \"%s\"",
		    (unsigned long long)seed, what, i, gp, wp);
		ck_assert_msg(got->e[i].mode == want->e[i].mode,
		    "seed %llu, %s: \"%s\" has mode %o, want %o",
		    (unsigned long long)seed, what, gp, got->e[i].mode,
		    want->e[i].mode);
		ck_assert_msg(got->e[i].len == want->e[i].len &&
			memcmp(got->e[i].data, want->e[i].data,
			    got->e[i].len) == 0,
		    "seed %llu, %s: \"%s\" differs (%zu bytes, want %zu)",
		    (unsigned long long)seed, what, gp, got->e[i].len,
		    want->e[i].len);
	}
}

/* Every path of old and new once, in strcmp order, through the writer:
 * the way the upper walker feeds it. */
static void
tree_patch(const struct tree *old, const struct tree *new, struct buf *out)
{
	const char *paths[2 * MAX_ENTRIES];
	size_t n = 0;

	for (size_t i = 0; i < old->n; i++)
		paths[n++] = old->e[i].path;
	for (size_t i = 0; i < new->n; i++)
		if (tree_find(old, new->e[i].path) == NULL)
			paths[n++] = new->e[i].path;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(paths[j - 1], paths[j]) > 0;
		     j--) {
			const char *tmp = paths[j];

			paths[j] = paths[j - 1];
			paths[j - 1] = tmp;
		}
	for (size_t i = 0; i < n; i++) {
		const struct entry *o = tree_find(old, paths[i]);
		const struct entry *w = tree_find(new, paths[i]);
		struct patch_file f = {
			.old_path = o ? o->path : NULL,
			.new_path = w ? w->path : NULL,
			.old_mode = o ? o->mode : 0,
			.new_mode = w ? w->mode : 0,
			.old_data = o ? o->data : NULL,
			.old_len = o ? o->len : 0,
			.new_data = w ? w->data : NULL,
			.new_len = w ? w->len : 0,
		};

		ck_assert_int_eq(patch_write_file(out, &f), 0);
	}
}

/* --- Running git. --- */

/*
 * Runs git with argv in dir, stdout to out_path (or /dev/null), stderr
 * to err_path; returns its exit status. Outside a repository `git apply`
 * patches the working directory, which is what we want: dir is a plain
 * copy of the inputs. GIT_CEILING_DIRECTORIES stops the search for a
 * repository at dir, so a /tmp inside someone's checkout cannot make it
 * a repository-relative apply (which would skip paths outside the
 * current directory); the user's and the system's git config are kept
 * out so that nothing there (quotePath, autocrlf, whitespace) counts.
 */
static int
run_git(const char *dir, const char *const argv[], const char *out_path,
    const char *err_path)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int out = open(out_path ? out_path : "/dev/null",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int err = open(err_path ? err_path : "/dev/null",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (out < 0 || err < 0 || dup2(out, 1) < 0 ||
		    dup2(err, 2) < 0 || chdir(dir) < 0)
			_exit(126);
		setenv("GIT_CEILING_DIRECTORIES", dir, 1);
		setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
		setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
		setenv("HOME", dir, 1);
		setenv("LC_ALL", "C", 1);
		unsetenv("GIT_DIR");
		unsetenv("GIT_WORK_TREE");
		execvp("git", (char *const *)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Shows what git said when it refused a patch. */
static const char *
slurp_small(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	out[n > 0 ? n : 0] = '\0';
	return out;
}

/*
 * `git apply` of the patch text in dir/work: -p1 strips a/ and b/; no
 * --unsafe-paths, since every path stays inside; --binary is a no-op
 * kept for old gits. Returns git's exit status; on failure its stderr
 * and the head of the patch are printed.
 */
static int
apply(const char *dir, const struct buf *patch, bool reverse)
{
	char work[PATH_MAX], ppath[PATH_MAX], epath[PATH_MAX], msg[2048];
	const char *fwd[] = { "git", "apply", "--whitespace=nowarn", "-p1",
		"--binary", ppath, NULL };
	const char *rev[] = { "git", "apply", "--whitespace=nowarn", "-p1",
		"--binary", "-R", ppath, NULL };
	int status;

	join(work, dir, "/work", "");
	join(ppath, dir, "/patch", "");
	join(epath, dir, "/apply.err", "");
	testutil_write_file(ppath, patch->data, patch->len);
	status = run_git(work, reverse ? rev : fwd, NULL, epath);
	if (status != 0)
		fprintf(stderr,
		    "git apply%s: %s\n--- patch head ---\n%.2000s\n",
		    reverse ? " -R" : "", slurp_small(epath, msg, sizeof(msg)),
		    buf_str(patch));
	return status;
}

/*
 * The round trip for one pair of trees: old on disk, the patch applied,
 * the result equal to new; reversed, equal to old again.
 */
static void
roundtrip(const char *dir, const struct tree *old, const struct tree *new,
    uint64_t seed)
{
	struct buf patch = BUF_INIT(PATCH_CAP);
	struct tree got = { 0 }, want = { 0 };
	char work[PATH_MAX];

	join(work, dir, "/work", "");
	ck_assert_int_eq(path_mkdir_p(work, 0755), 0);
	tree_write(work, old);
	tree_patch(old, new, &patch);

	for (size_t i = 0; i < new->n; i++)
		tree_add(&want, new->e[i].path, new->e[i].mode, new->e[i].data,
		    new->e[i].len);
	if (patch.len == 0) {
		/* git apply refuses an empty patch; nothing changed. */
		for (size_t i = 0; i < old->n; i++)
			tree_add(&got, old->e[i].path, old->e[i].mode,
			    old->e[i].data, old->e[i].len);
		tree_assert_equal(&got, &want, "empty patch", seed);
		goto done;
	}
	ck_assert_msg(apply(dir, &patch, false) == 0,
	    "seed %llu: git apply failed", (unsigned long long)seed);
	tree_read(work, "", &got);
	tree_assert_equal(&got, &want, "applied", seed);
	tree_free(&got);
	tree_free(&want);

	ck_assert_msg(apply(dir, &patch, true) == 0,
	    "seed %llu: git apply -R failed", (unsigned long long)seed);
	for (size_t i = 0; i < old->n; i++)
		tree_add(&want, old->e[i].path, old->e[i].mode, old->e[i].data,
		    old->e[i].len);
	tree_read(work, "", &got);
	tree_assert_equal(&got, &want, "reversed", seed);
done:
	tree_free(&got);
	tree_free(&want);
	buf_free(&patch);
	testutil_remove_tree(work);
}

/* --- Random trees. --- */

static uint64_t rng_state;

static uint64_t
rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static size_t
pick(size_t n)
{
	return (size_t)(rng() % n);
}

static const char *const vocab[] = {
	"alpha",
	"beta",
	"gamma",
	"delta",
	"{",
	"}",
	"",
	"\tindented",
	"    return 0;",
	"int main(void)",
	"static int helper(void)",
	"-minus",
	"+plus",
	" space",
	"\\ backslash",
	"@@ -1 +1 @@",
	"diff --git a/x b/x",
	"--- a/x",
	"+++ b/x",
	"crlf\r",
	"trailing  ",
	"\303\274n\303\257c\303\266d\303\251",
	"GIT binary patch",
	"literal 3",
};

static const char *const leaves[] = {
	"a",
	"b.txt",
	"sp ace",
	"two  spaces",
	"tab\there",
	"quo\"te",
	"new\nline",
	"back\\slash",
	"\xc3\xbctf-8 \xe2\x9c\x93",
	"\xe6\x97\xa5\xe6\x9c\xac.txt",
	" lead",
	"trail ",
	"b x",
	"-dash",
	"#hash",
	"dollar$",
	"del\x7f",
	"bell\a",
	"esc\x1b[0m",
	"high\xff",
	"cr\rx",
	"semi;colon",
};

static const char *const dirs[] = {
	"",
	"",
	"dir/",
	"sub dir/",
	"x b/",
	"q\"d/",
	"dir/deep/",
	"\xc3\xbcn\xc3\xaf/",
	"t\tab/",
};

static const char *const targets[] = {
	"target",
	"dir/a",
	"../up",
	"sp ace",
	"tab\there",
	"nl\nx",
	"/abs/path",
	"\xc3\xa9t\xc3\xa9",
	"a-much-longer-target-name-that-goes-on-and-on/and/on/and/on/and/on",
};

static void
gen_text(struct buf *b)
{
	size_t n = pick(100) < 5 ? 1000 + pick(2000) : pick(40);

	for (size_t i = 0; i < n; i++) {
		const char *w = vocab[pick(sizeof(vocab) / sizeof(vocab[0]))];

		MUST(buf_printf(b, "%s\n", w) == 0);
	}
	if (b->len > 0 && pick(100) < 30)
		b->data[--b->len] = '\0';
	if (pick(100) < 3) {
		/* A NUL past git's 8000 bytes: still text, NUL in a hunk. */
		while (b->len < 9000)
			MUST(buf_printf(b, "padding line\n") == 0);
		MUST(buf_append(b, "nul\0here\n", 9) == 0);
	}
}

static void
gen_binary(struct buf *b)
{
	size_t r = pick(100), n;

	if (r < 65)
		n = 1 + pick(4000);
	else if (r < 85)
		n = 60000 + pick(80000);
	else {
		static const size_t edges[] = { 65534, 65535, 65536, 65537,
			131070, 131071 };

		n = edges[pick(sizeof(edges) / sizeof(edges[0]))];
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = pick(10) == 0 ? 0 : (unsigned char)rng();

		MUST(buf_append(b, &c, 1) == 0);
	}
	b->data[pick(n < 8000 ? n : 8000)] = '\0';
}

/* Edits of old's lines: some deleted, replaced, inserted; the final
 * newline sometimes toggled. Shares most lines with old. */
static void
mutate_text(const struct entry *old, struct buf *b)
{
	const unsigned char *p = old->data, *end = old->data + old->len;

	while (p < end) {
		const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
		const unsigned char *q = nl ? nl + 1 : end;
		size_t r = pick(100);

		if (r < 8 || (r < 16)) {
			if (r >= 8)
				MUST(buf_printf(b, "%s\n",
					 vocab[pick(sizeof(vocab) /
					     sizeof(vocab[0]))]) == 0);
		} else {
			if (r < 22)
				MUST(buf_printf(b, "%s\n",
					 vocab[pick(sizeof(vocab) /
					     sizeof(vocab[0]))]) == 0);
			MUST(buf_append(b, p, (size_t)(q - p)) == 0);
		}
		p = q;
	}
	for (size_t i = pick(3); i > 0; i--)
		MUST(buf_printf(b, "%s\n",
			 vocab[pick(sizeof(vocab) / sizeof(vocab[0]))]) == 0);
	if (pick(100) < 20) {
		if (b->len > 0 && b->data[b->len - 1] == '\n')
			b->data[--b->len] = '\0';
		else
			MUST(buf_append(b, "\n", 1) == 0);
	}
}

static void
mutate_binary(const struct entry *old, struct buf *b)
{
	size_t flips = 1 + pick(20);

	MUST(buf_append(b, old->data, old->len) == 0);
	for (size_t i = 0; i < flips && b->len > 0; i++)
		b->data[pick(b->len)] = (char)rng();
	if (pick(4) == 0)
		for (size_t i = pick(70000); i > 0; i--) {
			char c = (char)rng();

			MUST(buf_append(b, &c, 1) == 0);
		}
	else if (pick(4) == 0 && b->len > 1)
		b->len = 1 + pick(b->len - 1);
	if (b->len > 0)
		b->data[pick(b->len < 8000 ? b->len : 8000)] = '\0';
}

/* Fresh content for a regular file: text, binary or empty. */
static void
gen_content(struct buf *b)
{
	size_t r = pick(100);

	if (r < 65)
		gen_text(b);
	else if (r < 88)
		gen_binary(b);
}

static void
add_generated(struct tree *t, const char *path, unsigned mode, struct buf *b)
{
	tree_add(t, path, mode, b->data, b->len);
	buf_reset(b);
}

static unsigned
random_file_mode(void)
{
	return pick(4) == 0 ? PATCH_MODE_EXEC : PATCH_MODE_FILE;
}

static void
random_path(char *out, size_t size)
{
	snprintf(out, size, "%s%s", dirs[pick(sizeof(dirs) / sizeof(dirs[0]))],
	    leaves[pick(sizeof(leaves) / sizeof(leaves[0]))]);
}

/*
 * old: up to 8 files, links among them; new: each kept, modified,
 * deleted, flipped, or turned into the other type, and up to 3 added.
 * Leaf names and directory names never meet, so no path is both.
 */
static void
gen_case(uint64_t seed, struct tree *old, struct tree *new)
{
	struct buf b = BUF_INIT(PATCH_CAP);
	char path[256];
	size_t n = pick(9);

	rng_state = seed * 0x2545f4914f6cdd1dULL + 1;
	for (size_t i = 0; i < n; i++) {
		random_path(path, sizeof(path));
		if (tree_find(old, path) != NULL)
			continue;
		if (pick(8) == 0) {
			const char *t =
			    targets[pick(sizeof(targets) / sizeof(targets[0]))];

			tree_add(old, path, PATCH_MODE_SYMLINK, t, strlen(t));
			continue;
		}
		gen_content(&b);
		add_generated(old, path, random_file_mode(), &b);
	}
	for (size_t i = 0; i < old->n; i++) {
		const struct entry *o = &old->e[i];
		bool link = o->mode == PATCH_MODE_SYMLINK;
		bool bin = patch_is_binary(o->data, o->len);
		size_t r = pick(100);
		unsigned mode = o->mode;

		if (r < 35) { /* kept */
			tree_add(new, o->path, o->mode, o->data, o->len);
		} else if (r < 45) { /* deleted */
			continue;
		} else if (r < 55 && !link) { /* mode flip alone */
			mode = mode == PATCH_MODE_EXEC ? PATCH_MODE_FILE
						       : PATCH_MODE_EXEC;
			tree_add(new, o->path, mode, o->data, o->len);
		} else if (r < 62) { /* the other type */
			if (link) {
				gen_content(&b);
				add_generated(new, o->path, random_file_mode(),
				    &b);
			} else {
				const char *t = targets[pick(
				    sizeof(targets) / sizeof(targets[0]))];

				tree_add(new, o->path, PATCH_MODE_SYMLINK, t,
				    strlen(t));
			}
		} else if (link) { /* another target */
			const char *t =
			    targets[pick(sizeof(targets) / sizeof(targets[0]))];

			tree_add(new, o->path, PATCH_MODE_SYMLINK, t,
			    strlen(t));
		} else {
			/* Modified, sometimes rewritten as the other kind,
			 * sometimes with the mode flipped too. */
			size_t how = pick(100);

			if (how < 10)
				gen_content(&b);
			else if (bin)
				mutate_binary(o, &b);
			else
				mutate_text(o, &b);
			if (pick(5) == 0)
				mode = mode == PATCH_MODE_EXEC
				    ? PATCH_MODE_FILE
				    : PATCH_MODE_EXEC;
			add_generated(new, o->path, mode, &b);
		}
	}
	for (size_t i = pick(4); i > 0; i--) {
		random_path(path, sizeof(path));
		if (tree_find(old, path) != NULL ||
		    tree_find(new, path) != NULL)
			continue;
		if (pick(6) == 0) {
			const char *t =
			    targets[pick(sizeof(targets) / sizeof(targets[0]))];

			tree_add(new, path, PATCH_MODE_SYMLINK, t, strlen(t));
			continue;
		}
		gen_content(&b);
		add_generated(new, path, random_file_mode(), &b);
	}
	buf_free(&b);
}

START_TEST(test_roundtrip_random)
{
	for (int i = 0; i < CASES_PER_LOOP; i++) {
		uint64_t seed = (uint64_t)(_i * CASES_PER_LOOP + i);
		struct tree old = { 0 }, new = { 0 };

		gen_case(seed, &old, &new);
		roundtrip(testutil_dir, &old, &new, seed);
		tree_free(&old);
		tree_free(&new);
	}
}
END_TEST

/* --- Fixed round trips the random ones do not reach. --- */

START_TEST(test_roundtrip_file_becomes_directory)
{
	struct tree old = { 0 }, new = { 0 };

	tree_add(&old, "x", PATCH_MODE_FILE, "file\n", 5);
	tree_add(&old, "d/y", PATCH_MODE_EXEC, "in a dir\n", 9);
	tree_add(&new, "x/inside", PATCH_MODE_FILE, "now a dir\n", 10);
	tree_add(&new, "d", PATCH_MODE_SYMLINK, "x", 1);
	roundtrip(testutil_dir, &old, &new, 0);
	tree_free(&old);
	tree_free(&new);
}
END_TEST

START_TEST(test_roundtrip_rename)
{
	struct buf patch = BUF_INIT(PATCH_CAP);
	struct tree old = { 0 }, got = { 0 }, want = { 0 };
	unsigned char bin[300];
	char work[PATH_MAX];
	const struct patch_file renames[] = {
		{ .old_path = "r1",
		    .new_path = "r2 moved",
		    .old_mode = PATCH_MODE_FILE,
		    .new_mode = PATCH_MODE_FILE,
		    .old_data = (const unsigned char *)"same\n",
		    .old_len = 5,
		    .new_data = (const unsigned char *)"same\n",
		    .new_len = 5 },
		{ .old_path = "t1",
		    .new_path = "sub/t\t2",
		    .old_mode = PATCH_MODE_FILE,
		    .new_mode = PATCH_MODE_EXEC,
		    .old_data = (const unsigned char *)"a\nb\nc\n",
		    .old_len = 6,
		    .new_data = (const unsigned char *)"a\nB\nc\n",
		    .new_len = 6 },
		{ .old_path = "b1",
		    .new_path = "b2",
		    .old_mode = PATCH_MODE_FILE,
		    .new_mode = PATCH_MODE_FILE,
		    .old_data = bin,
		    .old_len = sizeof(bin),
		    .new_data = bin,
		    .new_len = 100 },
	};

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(i * 7);
	tree_add(&old, "r1", PATCH_MODE_FILE, "same\n", 5);
	tree_add(&old, "t1", PATCH_MODE_FILE, "a\nb\nc\n", 6);
	tree_add(&old, "b1", PATCH_MODE_FILE, bin, sizeof(bin));
	tree_add(&want, "r2 moved", PATCH_MODE_FILE, "same\n", 5);
	tree_add(&want, "sub/t\t2", PATCH_MODE_EXEC, "a\nB\nc\n", 6);
	tree_add(&want, "b2", PATCH_MODE_FILE, bin, 100);
	for (size_t i = 0; i < sizeof(renames) / sizeof(renames[0]); i++)
		ck_assert_int_eq(patch_write_file(&patch, &renames[i]), 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&patch),
	    "diff --git a/r1 b/r2 moved\nrename from r1\nrename to r2 moved\n"
	    "diff --git")); /* a pure rename: no index line, no hunk */
	ck_assert_ptr_nonnull(strstr(buf_str(&patch),
	    "rename from t1\nrename to \"sub/t\\t2\"\n"));

	join(work, testutil_dir, "/work", "");
	ck_assert_int_eq(path_mkdir_p(work, 0755), 0);
	tree_write(work, &old);
	ck_assert_int_eq(apply(testutil_dir, &patch, false), 0);
	tree_read(work, "", &got);
	tree_assert_equal(&got, &want, "renamed", 0);
	tree_free(&got);
	ck_assert_int_eq(apply(testutil_dir, &patch, true), 0);
	tree_read(work, "", &got);
	tree_assert_equal(&got, &old, "rename reversed", 0);
	tree_free(&got);
	tree_free(&old);
	tree_free(&want);
	buf_free(&patch);
}
END_TEST

/* A big file with three changes far apart: three small hunks, quickly. */
START_TEST(test_roundtrip_large_sparse)
{
	struct buf a = BUF_INIT(PATCH_CAP), b = BUF_INIT(PATCH_CAP);
	struct buf patch = BUF_INIT(PATCH_CAP);
	struct tree old = { 0 }, new = { 0 };
	size_t hunks = 0;

	for (int i = 0; i < 200000; i++) {
		MUST(buf_printf(&a, "line %d\n", i % 1000) == 0);
		if (i == 10 || i == 100000 || i == 199990)
			MUST(buf_printf(&b, "changed %d\n", i) == 0);
		else
			MUST(buf_printf(&b, "line %d\n", i % 1000) == 0);
	}
	tree_add(&old, "big", PATCH_MODE_FILE, a.data, a.len);
	tree_add(&new, "big", PATCH_MODE_FILE, b.data, b.len);
	tree_patch(&old, &new, &patch);
	for (const char *p = buf_str(&patch); (p = strstr(p, "\n@@ ")); p++)
		hunks++;
	ck_assert_uint_eq(hunks, 3);
	ck_assert_uint_lt(patch.len, 2000);
	roundtrip(testutil_dir, &old, &new, 0);
	tree_free(&old);
	tree_free(&new);
	buf_free(&a);
	buf_free(&b);
	buf_free(&patch);
}
END_TEST

/* Two unrelated big files: past the budget the middle is one hunk, and
 * the patch is still exact. */
START_TEST(test_roundtrip_budget_fallback)
{
	struct buf a = BUF_INIT(PATCH_CAP), b = BUF_INIT(PATCH_CAP);
	struct buf patch = BUF_INIT(PATCH_CAP);
	struct tree old = { 0 }, new = { 0 };
	size_t hunks = 0;

	rng_state = 42;
	MUST(buf_printf(&a, "shared head\n") == 0);
	MUST(buf_printf(&b, "shared head\n") == 0);
	for (int i = 0; i < 30000; i++) {
		MUST(buf_printf(&a, "w%zu\n", pick(3000)) == 0);
		MUST(buf_printf(&b, "w%zu\n", pick(3000)) == 0);
	}
	MUST(buf_printf(&a, "shared tail") == 0);
	MUST(buf_printf(&b, "shared tail") == 0);
	tree_add(&old, "big", PATCH_MODE_FILE, a.data, a.len);
	tree_add(&new, "big", PATCH_MODE_FILE, b.data, b.len);
	tree_patch(&old, &new, &patch);
	for (const char *p = buf_str(&patch); (p = strstr(p, "\n@@ ")); p++)
		hunks++;
	ck_assert_uint_eq(hunks, 1);
	ck_assert_ptr_nonnull(strstr(buf_str(&patch),
	    "\n@@ -1,30002 +1,30002 @@\n shared head\n"));
	roundtrip(testutil_dir, &old, &new, 0);
	tree_free(&old);
	tree_free(&new);
	buf_free(&a);
	buf_free(&b);
	buf_free(&patch);
}
END_TEST

/* --- Exact output against git diff. --- */

/* Our own decoder of a binary literal, independent of the writer: base85
 * lines, then the zlib stream of stored blocks, checked to the end. */
static void
decode_literal(const char *lines, size_t n_lines_len, size_t want,
    struct buf *out)
{
	static const char en85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "abcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@"
				   "^_`{|}~";
	struct buf z = BUF_INIT(PATCH_CAP);
	const char *p = lines, *end = lines + n_lines_len;
	const unsigned char *s;
	size_t off, zl;
	uint32_t a = 1, bsum = 0, sum;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len, groups;
		char c = *p;

		MUST(nl != NULL);
		len = c >= 'A' && c <= 'Z' ? (size_t)(c - 'A' + 1)
					   : (size_t)(c - 'a' + 27);
		groups = (len + 3) / 4;
		MUST((size_t)(nl - p) == 1 + 5 * groups);
		for (size_t g = 0; g < groups; g++) {
			uint32_t acc = 0;
			unsigned char bytes[4];

			for (int k = 0; k < 5; k++) {
				const char *d = strchr(en85, p[1 + 5 * g + k]);

				MUST(d != NULL && *d != '\0');
				acc = acc * 85 + (uint32_t)(d - en85);
			}
			for (int k = 0; k < 4; k++)
				bytes[k] = (unsigned char)(acc >> (24 - 8 * k));
			MUST(buf_append(&z, bytes,
				 len - 4 * g < 4 ? len - 4 * g : 4) == 0);
		}
		p = nl + 1;
	}
	s = (const unsigned char *)z.data;
	zl = z.len;
	ck_assert_uint_ge(zl, 2 + 5 + 4);
	ck_assert_uint_eq((s[0] * 256u + s[1]) % 31, 0);
	ck_assert_uint_eq(s[0] & 0x0f, 8); /* deflate */
	off = 2;
	for (;;) {
		unsigned len, nlen;
		bool final;

		ck_assert_uint_le(off + 5, zl);
		final = s[off] & 1;
		ck_assert_uint_eq((s[off] >> 1) & 3, 0); /* stored */
		len = s[off + 1] | s[off + 2] << 8;
		nlen = s[off + 3] | s[off + 4] << 8;
		ck_assert_uint_eq(len ^ 0xffff, nlen);
		off += 5;
		ck_assert_uint_le(off + len, zl);
		MUST(buf_append(out, s + off, len) == 0);
		off += len;
		if (final)
			break;
	}
	ck_assert_uint_eq(off + 4, zl);
	for (size_t i = 0; i < out->len; i++) {
		a = (a + (unsigned char)out->data[i]) % 65521;
		bsum = (bsum + a) % 65521;
	}
	sum = (uint32_t)s[off] << 24 | (uint32_t)s[off + 1] << 16 |
	    (uint32_t)s[off + 2] << 8 | s[off + 3];
	ck_assert_uint_eq(sum, bsum << 16 | a);
	ck_assert_uint_eq(out->len, want);
	buf_free(&z);
}

static void
test_blob_id(const void *data, size_t len, char hex[41])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char head[40];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int hl = snprintf(head, sizeof(head), "blob %zu", len);

	ck_assert_ptr_nonnull(ctx);
	ck_assert(EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1);
	ck_assert(EVP_DigestUpdate(ctx, head, (size_t)hl + 1) == 1);
	ck_assert(EVP_DigestUpdate(ctx, data, len) == 1);
	ck_assert(EVP_DigestFinal_ex(ctx, md, &n) == 1);
	EVP_MD_CTX_free(ctx);
	for (unsigned int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/*
 * Copies a patch with each "GIT binary patch" section's hunks (git's
 * deflated literals or deltas, or our stored literals) replaced by one
 * marker line. With check set, each of our literals is decoded and must
 * be the blob its index line names: forward the new id, reverse the old.
 */
static void
normalise(const char *text, size_t len, bool check, struct buf *out)
{
	const char *p = text, *end = text + len;
	char old_id[41] = "", new_id[41] = "";

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		if (n > 6 && memcmp(p, "index ", 6) == 0) {
			ck_assert_uint_ge(n, 6 + 40 + 2 + 40);
			memcpy(old_id, p + 6, 40);
			memcpy(new_id, p + 6 + 42, 40);
			old_id[40] = new_id[40] = '\0';
		}
		MUST(buf_append(out, p, n) == 0);
		p += n;
		if (n != 17 || memcmp(p - n, "GIT binary patch\n", 17) != 0)
			continue;
		MUST(buf_printf(out, "[binary hunks]\n") == 0);
		for (int hunk = 0; hunk < 2; hunk++) {
			const char *data, *blank;
			unsigned long size;
			struct buf dec = BUF_INIT(PATCH_CAP);
			char id[41];
			const char *want_id = hunk == 0 ? new_id : old_id;

			ck_assert_msg(sscanf(p, "literal %lu\n", &size) == 1 ||
				sscanf(p, "delta %lu\n", &size) == 1,
			    "not a binary hunk: %.20s", p);
			data = strchr(p, '\n') + 1;
			blank = strstr(data, "\n\n");
			ck_assert_ptr_nonnull(blank);
			if (check) {
				ck_assert_msg(strncmp(p, "literal ", 8) == 0,
				    "we only write literals");
				decode_literal(data, (size_t)(blank + 1 - data),
				    size, &dec);
				if (strcmp(want_id,
					"00000000000000000000"
					"00000000000000000000") == 0) {
					ck_assert_uint_eq(dec.len, 0);
				} else {
					test_blob_id(dec.data, dec.len, id);
					ck_assert_str_eq(id, want_id);
				}
			}
			buf_free(&dec);
			p = blank + 2;
		}
	}
}

/*
 * What git prints for old -> new: both trees staged in a scratch
 * repository, then `git diff --cached --full-index --binary
 * --no-renames HEAD`. (git diff --no-index would name the files by their
 * paths on disk, old/x and new/x, and need its headers rewritten; a
 * repository gives exactly the a/x b/x the walker passes us.)
 */
static void
git_diff(const struct tree *old, const struct tree *new, struct buf *out)
{
	char repo[PATH_MAX], gitdir[PATH_MAX], otree[PATH_MAX], ntree[PATH_MAX],
	    outp[PATH_MAX], errp[PATH_MAX], msg[1024];
	char gd[PATH_MAX], owt[PATH_MAX], nwt[PATH_MAX];
	const char *init[] = { "git", "init", "-q", repo, NULL };
	const char *add_old[] = { "git", gd, owt, "add", "-A", NULL };
	const char *commit[] = { "git", gd, owt, "-c", "user.name=cordon", "-c",
		"user.email=cordon@example.invalid", "commit", "-q",
		"--allow-empty", "-m", "old", NULL };
	const char *add_new[] = { "git", gd, nwt, "add", "-A", NULL };
	const char *diff[] = { "git", gd, nwt, "diff", "--cached",
		"--full-index", "--binary", "--no-renames", "--no-color",
		"--no-ext-diff", "--no-textconv", "HEAD", NULL };
	const char *const *steps[] = { init, add_old, commit, add_new, diff };
	char *text;
	size_t len;

	testutil_at(repo, "repo");
	testutil_at(otree, "old");
	testutil_at(ntree, "new");
	testutil_at(outp, "git.out");
	testutil_at(errp, "git.err");
	join(gitdir, repo, "/.git", "");
	join(gd, "--git-dir=", "", gitdir);
	join(owt, "--work-tree=", "", otree);
	join(nwt, "--work-tree=", "", ntree);
	ck_assert_int_eq(path_mkdir_p(otree, 0755), 0);
	ck_assert_int_eq(path_mkdir_p(ntree, 0755), 0);
	tree_write(otree, old);
	tree_write(ntree, new);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		ck_assert_msg(run_git(testutil_dir,
				  (const char *const *)steps[i], outp,
				  errp) == 0,
		    "git %s: %s", steps[i][3] ? steps[i][3] : "",
		    slurp_small(errp, msg, sizeof(msg)));
	ck_assert_int_eq(path_read_file(outp, PATCH_CAP, &text, &len), 0);
	MUST(buf_append(out, text, len) == 0);
	free(text);
}

/* Our patch for old -> new must be git's, but for the binary data. */
static void
assert_like_git(const struct tree *old, const struct tree *new)
{
	struct buf ours = BUF_INIT(PATCH_CAP), theirs = BUF_INIT(PATCH_CAP);
	struct buf n_ours = BUF_INIT(PATCH_CAP), n_theirs = BUF_INIT(PATCH_CAP);

	tree_patch(old, new, &ours);
	git_diff(old, new, &theirs);
	ck_assert_uint_gt(theirs.len, 0);
	normalise(ours.data, ours.len, true, &n_ours);
	normalise(theirs.data, theirs.len, false, &n_theirs);
	if (strcmp(buf_str(&n_ours), buf_str(&n_theirs)) != 0) {
		fprintf(stderr, "=== ours ===\n%s=== git ===\n%s=== end ===\n",
		    buf_str(&n_ours), buf_str(&n_theirs));
		ck_abort_msg("our patch is not git's");
	}
	buf_free(&ours);
	buf_free(&theirs);
	buf_free(&n_ours);
	buf_free(&n_theirs);
}

/* Lines "line 1".."line n", with edits: "X" replaces a line, "+" inserts
 * before it, "-" deletes it. */
static void
numbered(struct buf *b, int n, const char *edit_at, bool final_newline)
{
	for (int i = 1; i <= n; i++) {
		char e = edit_at != NULL ? edit_at[i - 1] : '.';

		if (e == '+')
			MUST(buf_printf(b, "inserted before %d\n", i) == 0);
		if (e == 'X')
			MUST(buf_printf(b, "replaced %d\n", i) == 0);
		else if (e != '-')
			MUST(buf_printf(b,
				 i % 10 == 0 ? "function_%d(void)\n"
					     : "\tline %d\n",
				 i) == 0);
	}
	if (!final_newline && b->len > 0)
		b->data[--b->len] = '\0';
}

START_TEST(test_exact_text_hunks)
{
	struct buf a = BUF_INIT(1 << 20), b = BUF_INIT(1 << 20);
	struct tree old = { 0 }, new = { 0 };
	char edits[61];

	/* Changes 6 unchanged lines apart share a hunk (lines 2 and 9, 21
	 * and 27), 7 apart do not (46 and 54); hunks under function lines;
	 * the last line losing its '\n'. */
	memset(edits, '.', 60);
	edits[60] = '\0';
	edits[1] = 'X';
	edits[8] = 'X';
	edits[20] = '-';
	edits[26] = '+';
	edits[44] = 'X';
	edits[45] = 'X';
	edits[53] = 'X';
	numbered(&a, 60, NULL, true);
	numbered(&b, 60, edits, false);
	tree_add(&old, "src/main.c", PATCH_MODE_FILE, a.data, a.len);
	tree_add(&new, "src/main.c", PATCH_MODE_FILE, b.data, b.len);
	/* Both without a final newline, the last line changed. */
	tree_add(&old, "nonl", PATCH_MODE_FILE, "one\ntwo", 7);
	tree_add(&new, "nonl", PATCH_MODE_FILE, "one\nTWO", 7);
	/* Only the final newline added; and a context line that lacks it. */
	tree_add(&old, "addnl", PATCH_MODE_FILE, "x\ny", 3);
	tree_add(&new, "addnl", PATCH_MODE_FILE, "x\ny\n", 4);
	tree_add(&old, "ctxnl", PATCH_MODE_FILE, "1\n2\n3\n4\n5", 9);
	tree_add(&new, "ctxnl", PATCH_MODE_FILE, "1\nII\n3\n4\n5", 10);
	/* Emptied and filled: git's -1,2 +0,0 and -0,0 +1 ranges. */
	tree_add(&old, "emptied", PATCH_MODE_FILE, "a\nb\n", 4);
	tree_add(&new, "emptied", PATCH_MODE_FILE, "", 0);
	tree_add(&old, "filled", PATCH_MODE_FILE, "", 0);
	tree_add(&new, "filled", PATCH_MODE_FILE, "only\n", 5);
	/* A function line longer than 80 bytes, cut as git cuts it. */
	tree_add(&old, "long", PATCH_MODE_FILE,
	    "static void a_very_long_function_name_that_goes_past_eighty_"
	    "bytes_of_header(int x)   \n1\n2\n3\n4\n5\n",
	    96);
	tree_add(&new, "long", PATCH_MODE_FILE,
	    "static void a_very_long_function_name_that_goes_past_eighty_"
	    "bytes_of_header(int x)   \n1\n2\n3\n4\nfive\n",
	    99);
	assert_like_git(&old, &new);
	tree_free(&old);
	tree_free(&new);
	buf_free(&a);
	buf_free(&b);
}
END_TEST

START_TEST(test_exact_adds_deletes_modes)
{
	struct tree old = { 0 }, new = { 0 };

	tree_add(&old, "gone", PATCH_MODE_FILE, "bye\nnow\n", 8);
	tree_add(&old, "gone-empty", PATCH_MODE_FILE, "", 0);
	tree_add(&new, "born", PATCH_MODE_EXEC, "#!/bin/sh\necho hi\n", 18);
	tree_add(&new, "born-empty", PATCH_MODE_FILE, "", 0);
	tree_add(&old, "flip", PATCH_MODE_FILE, "same\n", 5);
	tree_add(&new, "flip", PATCH_MODE_EXEC, "same\n", 5);
	tree_add(&old, "flop", PATCH_MODE_EXEC, "a\nb\n", 4);
	tree_add(&new, "flop", PATCH_MODE_FILE, "a\nc\n", 4);
	tree_add(&old, "kept", PATCH_MODE_FILE, "kept\n", 5);
	tree_add(&new, "kept", PATCH_MODE_FILE, "kept\n", 5);
	assert_like_git(&old, &new);
	tree_free(&old);
	tree_free(&new);
}
END_TEST

START_TEST(test_exact_symlinks)
{
	struct tree old = { 0 }, new = { 0 };

	tree_add(&new, "link-new", PATCH_MODE_SYMLINK, "target", 6);
	tree_add(&old, "link-gone", PATCH_MODE_SYMLINK, "../t", 4);
	tree_add(&old, "link-moved", PATCH_MODE_SYMLINK, "a", 1);
	tree_add(&new, "link-moved", PATCH_MODE_SYMLINK, "b b", 3);
	tree_add(&old, "to-link", PATCH_MODE_FILE, "was a file\n", 11);
	tree_add(&new, "to-link", PATCH_MODE_SYMLINK, "to-file", 7);
	tree_add(&old, "to-file", PATCH_MODE_SYMLINK, "to-link", 7);
	tree_add(&new, "to-file", PATCH_MODE_EXEC, "now a file\n", 11);
	assert_like_git(&old, &new);
	tree_free(&old);
	tree_free(&new);
}
END_TEST

START_TEST(test_exact_quoted_names)
{
	static const char *const names[] = {
		"sp ace",
		"tab\there",
		"quo\"te",
		"new\nline",
		"back\\slash",
		"\xc3\xbctf-8",
		"del\x7f",
		"bell\a",
		"high\xff",
		"dir with space/x",
		"q\"d/plain",
		"trail ",
		"both space\tand tab",
	};
	struct tree old = { 0 }, new = { 0 };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char text[64];
		int n = snprintf(text, sizeof(text), "file %zu\n", i);

		/* Modified, added, deleted: every line that names them. */
		if (i % 3 != 1)
			tree_add(&old, names[i], PATCH_MODE_FILE, text,
			    (size_t)n);
		if (i % 3 != 2)
			tree_add(&new, names[i], PATCH_MODE_FILE, "changed\n",
			    8);
	}
	tree_add(&new, "bin ary\t", PATCH_MODE_FILE, "\0\1\2", 3);
	assert_like_git(&old, &new);
	tree_free(&old);
	tree_free(&new);
}
END_TEST

START_TEST(test_exact_binary)
{
	struct tree old = { 0 }, new = { 0 };
	size_t big = 200000;
	unsigned char *a = malloc(big), *b = malloc(big);

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	rng_state = 7;
	for (size_t i = 0; i < big; i++)
		a[i] = b[i] = (unsigned char)(rng() % 5);
	b[100] ^= 0xff;
	b[150000] ^= 0xff;
	tree_add(&old, "big.bin", PATCH_MODE_FILE, a, big);
	tree_add(&new, "big.bin", PATCH_MODE_FILE, b, big - 10);
	tree_add(&new, "new.bin", PATCH_MODE_EXEC, b, 70000);
	tree_add(&old, "old.bin", PATCH_MODE_FILE, a, 3);
	tree_add(&old, "to-text", PATCH_MODE_FILE, "\0\0\0", 3);
	tree_add(&new, "to-text", PATCH_MODE_FILE, "text\n", 5);
	tree_add(&old, "to-bin", PATCH_MODE_FILE, "text\n", 5);
	tree_add(&new, "to-bin", PATCH_MODE_EXEC, "te\0t\n", 5);
	tree_add(&old, "emptied.bin", PATCH_MODE_FILE, "\0", 1);
	tree_add(&new, "emptied.bin", PATCH_MODE_FILE, "", 0);
	assert_like_git(&old, &new);
	roundtrip(testutil_dir, &old, &new, 0);
	tree_free(&old);
	tree_free(&new);
	free(a);
	free(b);
}
END_TEST

/* --- The pieces. --- */

START_TEST(test_quote_path_table)
{
	static const struct {
		const char *prefix, *path, *want;
	} table[] = {
		{ "a/", "plain.txt", "a/plain.txt" },
		{ "a/", "sp ace", "a/sp ace" },
		{ "b/", "tab\tx", "\"b/tab\\tx\"" },
		{ "", "quo\"te", "\"quo\\\"te\"" },
		{ "", "back\\slash", "\"back\\\\slash\"" },
		{ "", "nl\ncr\r", "\"nl\\ncr\\r\"" },
		{ "", "\a\b\v\f", "\"\\a\\b\\v\\f\"" },
		{ "", "\x01\x1b\x7f", "\"\\001\\033\\177\"" },
		{ "a/", "\xc3\xa9", "\"a/\\303\\251\"" },
		{ "a/", "\xff", "\"a/\\377\"" },
		{ "a\t", "x", "\"a\\tx\"" },
		{ "a/", "$#!;'`~", "a/$#!;'`~" },
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct buf b = BUF_INIT(256);

		ck_assert_int_eq(patch_quote_path(&b, table[i].prefix,
				     table[i].path),
		    0);
		ck_assert_str_eq(buf_str(&b), table[i].want);
		buf_free(&b);
	}
}
END_TEST

START_TEST(test_quote_path_cap)
{
	struct buf b = BUF_INIT(8);

	MUST(buf_append(&b, "ab", 2) == 0);
	ck_assert_int_eq(patch_quote_path(&b, "a/", "t\tlong"), -E2BIG);
	ck_assert_str_eq(buf_str(&b), "ab");
	ck_assert_int_eq(patch_quote_path(&b, "a/", "x"), 0);
	ck_assert_str_eq(buf_str(&b), "aba/x");
	buf_free(&b);
}
END_TEST

START_TEST(test_is_binary_rule)
{
	unsigned char d[9000];

	memset(d, 'x', sizeof(d));
	ck_assert(!patch_is_binary(d, sizeof(d)));
	ck_assert(!patch_is_binary(NULL, 0));
	ck_assert(!patch_is_binary(d, 0));
	d[7999] = '\0';
	ck_assert(patch_is_binary(d, sizeof(d)));
	ck_assert(!patch_is_binary(d, 7999));
	d[7999] = 'x';
	d[8000] = '\0';
	ck_assert(!patch_is_binary(d, sizeof(d)));
	d[0] = '\0';
	ck_assert(patch_is_binary(d, 1));
}
END_TEST

/* Changed lines in the hunks of a patch: '-' and '+' after the first @@. */
static void
count_changes(const char *p, size_t *del, size_t *add)
{
	p = strstr(p, "\n@@ ");
	*del = *add = 0;
	while (p != NULL && *p != '\0') {
		p++;
		if (*p == '-')
			(*del)++;
		else if (*p == '+')
			(*add)++;
		p = strchr(p, '\n');
	}
}

/* The writer's diff is minimal: as many changed lines as an LCS table
 * says, over many small random pairs. */
START_TEST(test_diff_minimal)
{
	enum { MAXL = 40 };
	static int lcs[MAXL + 1][MAXL + 1];

	rng_state = 1234;
	for (int round = 0; round < 3000; round++) {
		int n = (int)pick(MAXL + 1), m = (int)pick(MAXL + 1);
		char a[MAXL], b[MAXL], ta[2 * MAXL + 1], tb[2 * MAXL + 1];
		size_t alpha = 2 + pick(5), del, add;
		struct buf out = BUF_INIT(1 << 20);
		struct patch_file f = {
			.old_path = "f",
			.new_path = "f",
			.old_mode = PATCH_MODE_FILE,
			.new_mode = PATCH_MODE_FILE,
			.old_data = (unsigned char *)ta,
			.old_len = 2 * (size_t)n,
			.new_data = (unsigned char *)tb,
			.new_len = 2 * (size_t)m,
		};

		for (int i = 0; i < n; i++) {
			a[i] = (char)('a' + pick(alpha));
			ta[2 * i] = a[i];
			ta[2 * i + 1] = '\n';
		}
		for (int j = 0; j < m; j++) {
			b[j] = (char)('a' + pick(alpha));
			tb[2 * j] = b[j];
			tb[2 * j + 1] = '\n';
		}
		for (int i = n; i >= 0; i--)
			for (int j = m; j >= 0; j--) {
				if (i == n || j == m)
					lcs[i][j] = 0;
				else if (a[i] == b[j])
					lcs[i][j] = 1 + lcs[i + 1][j + 1];
				else
					lcs[i][j] =
					    lcs[i + 1][j] > lcs[i][j + 1]
					    ? lcs[i + 1][j]
					    : lcs[i][j + 1];
			}
		ck_assert_int_eq(patch_write_file(&out, &f), 0);
		count_changes(buf_str(&out), &del, &add);
		ck_assert_msg(del == (size_t)(n - lcs[0][0]) &&
			add == (size_t)(m - lcs[0][0]),
		    "round %d: -%zu +%zu, want -%d +%d\n%s", round, del, add,
		    n - lcs[0][0], m - lcs[0][0], buf_str(&out));
		buf_free(&out);
	}
}
END_TEST

START_TEST(test_cap_leaves_out_unchanged)
{
	struct buf full = BUF_INIT(PATCH_CAP);
	unsigned char bin[1000];
	struct patch_file f = {
		.new_path = "b",
		.new_mode = PATCH_MODE_FILE,
		.new_data = bin,
		.new_len = sizeof(bin),
	};

	memset(bin, 0, sizeof(bin));
	MUST(buf_append(&full, "head\n", 5) == 0);
	ck_assert_int_eq(patch_write_file(&full, &f), 0);
	/* An exact fit works; one byte less fails and leaves the head. */
	for (size_t cap = full.len - 1; cap <= full.len; cap++) {
		struct buf b = BUF_INIT(cap);

		MUST(buf_append(&b, "head\n", 5) == 0);
		ck_assert_int_eq(patch_write_file(&b, &f),
		    cap == full.len ? 0 : -E2BIG);
		if (cap == full.len)
			ck_assert_str_eq(buf_str(&b), buf_str(&full));
		else
			ck_assert_str_eq(buf_str(&b), "head\n");
		buf_free(&b);
	}
	/* Every smaller cap fails whole too, text and binary alike. */
	for (size_t cap = 5; cap < full.len; cap += 37) {
		struct buf b = BUF_INIT(cap);

		MUST(buf_append(&b, "head\n", 5) == 0);
		ck_assert_int_eq(patch_write_file(&b, &f), -E2BIG);
		ck_assert_uint_eq(b.len, 5);
		buf_free(&b);
	}
	buf_free(&full);
}
END_TEST

START_TEST(test_malformed_refused)
{
	const unsigned char *d = (const unsigned char *)"x\n";
	const struct patch_file bad[] = {
		{ 0 },
		{ .new_path = "x",
		    .new_mode = 0100664,
		    .new_data = d,
		    .new_len = 2 },
		{ .new_path = "x", .new_mode = 0, .new_data = d, .new_len = 2 },
		{ .new_path = "x", .new_mode = 040000 },
		{ .new_path = "../x", .new_mode = PATCH_MODE_FILE },
		{ .new_path = "/etc/x", .new_mode = PATCH_MODE_FILE },
		{ .new_path = "a//b", .new_mode = PATCH_MODE_FILE },
		{ .new_path = "", .new_mode = PATCH_MODE_FILE },
		{ .new_path = "x", .new_mode = PATCH_MODE_FILE, .new_len = 3 },
		{ .new_path = "x",
		    .new_mode = PATCH_MODE_FILE,
		    .old_mode = PATCH_MODE_FILE },
		{ .new_path = "x",
		    .new_mode = PATCH_MODE_FILE,
		    .old_len = 1,
		    .old_data = d },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf b = BUF_INIT(1024);

		MUST(buf_append(&b, "keep", 4) == 0);
		ck_assert_msg(patch_write_file(&b, &bad[i]) == -EINVAL,
		    "case %zu accepted", i);
		ck_assert_str_eq(buf_str(&b), "keep");
		buf_free(&b);
	}
}
END_TEST

START_TEST(test_unchanged_writes_nothing)
{
	struct buf b = BUF_INIT(1024);
	const struct patch_file same[] = {
		{ .old_path = "x",
		    .new_path = "x",
		    .old_mode = PATCH_MODE_FILE,
		    .new_mode = PATCH_MODE_FILE,
		    .old_data = (const unsigned char *)"a\n",
		    .old_len = 2,
		    .new_data = (const unsigned char *)"a\n",
		    .new_len = 2 },
		{ .old_path = "e",
		    .new_path = "e",
		    .old_mode = PATCH_MODE_EXEC,
		    .new_mode = PATCH_MODE_EXEC },
		{ .old_path = "l",
		    .new_path = "l",
		    .old_mode = PATCH_MODE_SYMLINK,
		    .new_mode = PATCH_MODE_SYMLINK,
		    .old_data = (const unsigned char *)"t",
		    .old_len = 1,
		    .new_data = (const unsigned char *)"t",
		    .new_len = 1 },
	};

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		ck_assert_int_eq(patch_write_file(&b, &same[i]), 0);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

static Suite *
patch_suite(void)
{
	Suite *s = suite_create("patch");
	TCase *tc;

	tc = tcase_create("pieces");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_quote_path_table);
	tcase_add_test(tc, test_quote_path_cap);
	tcase_add_test(tc, test_is_binary_rule);
	tcase_add_test(tc, test_diff_minimal);
	tcase_add_test(tc, test_cap_leaves_out_unchanged);
	tcase_add_test(tc, test_malformed_refused);
	tcase_add_test(tc, test_unchanged_writes_nothing);
	suite_add_tcase(s, tc);

	tc = tcase_create("like_git");
	tcase_set_timeout(tc, 60);
	testutil_tmp_fixture(tc, "patch");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, test_exact_text_hunks);
	tcase_add_test(tc, test_exact_adds_deletes_modes);
	tcase_add_test(tc, test_exact_symlinks);
	tcase_add_test(tc, test_exact_quoted_names);
	tcase_add_test(tc, test_exact_binary);
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip");
	tcase_set_timeout(tc, 60);
	testutil_tmp_fixture(tc, "patch");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_loop_test(tc, test_roundtrip_random, 0, LOOPS);
	tcase_add_test(tc, test_roundtrip_file_becomes_directory);
	tcase_add_test(tc, test_roundtrip_rename);
	tcase_add_test(tc, test_roundtrip_large_sparse);
	tcase_add_test(tc, test_roundtrip_budget_fallback);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(patch_suite());
}
