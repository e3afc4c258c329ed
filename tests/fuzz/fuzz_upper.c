/*
 * Fuzzes the hatch's upper-directory walker and patch writer on real
 * trees. The input describes a small lower and upper directory (files
 * with contents and modes, setuid and all; directories, opaque or not;
 * symlinks; whiteouts; fifos, sockets, devices), which are made under a
 * fresh temporary directory beside an "outside" one, walked into a patch
 * against a policy, and removed. Properties, against a model of the
 * overlay (upper over lower, whiteouts and opaque directories as the
 * kernel reads them):
 *  - the walk ends with 0, or -E2BIG when the patch outgrew its cap;
 *  - the changes are exactly the model's (each path once, with its kind),
 *    less the files over the size cap (flagged file_too_large, each once)
 *    and what lies under a fifo, socket or device (flagged, never in the
 *    patch); a walk cut short lists only true changes, and says so;
 *  - the patch applies: read section by section (its quoting, modes,
 *    index lines with git's blob ids, text hunks with their counts and
 *    context, binary literals as zlib streams), it turns the lower
 *    version of each listed path into the merged one, and holds nothing
 *    else: no other path, no mode but 100644, 100755 and 120000;
 *  - nothing outside the tree is ever read: the outside file's contents
 *    never reach the patch, whatever the symlinks point at;
 *  - the flags: each fifo, socket and device; each setuid, setgid file;
 *    each written world-writable file and symlink (absolute, escaping or
 *    not, as its text says); a write under a default protected path (in
 *    any case, at any depth); a write outside both inputs; and the
 *    verdict is the worst of them;
 *  - every path in the report (changes, flags) is bare only when nothing
 *    in it would fool a reader (no control, no quote or backslash, no
 *    bidi, zero-width or tag character, valid UTF-8), else quoted with
 *    every such character escaped, and decodes to the path it names.
 *
 * The input, byte by byte (missing bytes read as 0): a head (bits 0-2 the
 * patch cap, 64 bytes to 1 MiB; bit 3 two extra protected globs), then up
 * to MAX_ENTRIES entries of op, parent, name and what the kind needs. op:
 * bit 0 the side (lower, upper); bits 1-3 the kind: 0 a file of raw bytes
 * (length: a byte and 4 bits of the next, then the bytes), 1 a file of
 * lines (start, count / 2, shape, tail; see content()), 2 a directory, 3
 * an opaque one (upper only), 4 a symlink (a byte: a known target below
 * 0xc0, else that many & 0x3f bytes of its own), 5 a whiteout (a fifo in
 * lower), 6 a fifo, socket or device, 7 a copy-up of a lower entry (pick,
 * edit); bits 4-7 a variant (the mode of a file, the spelling of an opaque
 * xattr, which special file). parent picks one of the side's directories
 * (0: the top), name one of names[].
 */
#include "fuzz.h"
#include "path.h"
#include "policy.h"
#include "readable.h"
#include "upper.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_ENTRIES 40
#define MAX_NODES 128 /* entries and the directories a copy-up makes */
#define MAX_FILE 4096 /* bytes of one raw file */
#define MAX_LINES 400 /* lines of one generated file */
#define MAX_BYTES 65536 /* bytes of all files together */
#define REL_MAX 1024

#define MARKER "OUTSIDE-THE-TREE-f00d"
#define NO_NEWLINE "\\ No newline at end of file\n"

enum kind { K_REG, K_DIR, K_LNK, K_FIFO, K_SOCK, K_DEV, K_WHITEOUT };

struct node {
	char path[REL_MAX];
	enum kind kind;
	mode_t mode; /* permission bits, setuid and setgid included */
	unsigned char *data; /* a file's content, a link's target */
	size_t len;
	bool opaque;
};

struct tree {
	struct node nodes[MAX_NODES];
	size_t n;
	size_t dirs[MAX_NODES]; /* indexes of the directories */
	size_t ndirs;
};

static struct tree lower, upper;
static char root[256];
static size_t budget;

static const char *const names[] = { "a", "b", "c.txt", "sub", ".git",
	".github", "x.service", "in", "src", "app", "with space", "tab\tname",
	"nl\nname", "q\"uote", "\303\251t\303\251", "back\\slash", ".envrc",
	"Jenkinsfile", "-dash", "\001ctl", "...", "\177del", ".GitHub",
	"\342\200\256rlo", "tag\363\240\201\251", "zz", ".HUSKY", "\033[1m",
	"zw\342\200\213j", "\302\233c1" };
#define NNAMES (sizeof(names) / sizeof(names[0]))

static const mode_t modes[] = { 0644, 0755, 0600, 04755, 02755, 0666, 0777,
	0444 };

static void from_report(const char *p, char *out);

/* --- Reading the input. --- */

struct input {
	const uint8_t *p;
	size_t n;
};

static unsigned
u8(struct input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

/* --- The trees. --- */

static struct node *
find(struct tree *t, const char *path)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->nodes[i].path, path) == 0)
			return &t->nodes[i];
	return NULL;
}

static void
tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->nodes[i].data);
	t->n = t->ndirs = 0;
}

static void
abs_path(char *out, size_t len, const struct tree *t, const char *rel)
{
	snprintf(out, len, "%s/%s/%s", root, t == &lower ? "lower" : "upper",
	    rel);
}

/* Makes the node at rel of kind k in t; records it when made. Steals
 * data. */
static struct node *
make(struct tree *t, const char *rel, enum kind k, mode_t mode,
    unsigned char *data, size_t len, unsigned opaque)
{
	char p[PATH_MAX];
	int r = -1, fd;

	if (t->n == MAX_NODES || find(t, rel) != NULL ||
	    strlen(rel) >= REL_MAX) {
		free(data);
		return NULL;
	}
	abs_path(p, sizeof(p), t, rel);
	switch (k) {
	case K_REG:
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			break;
		r = path_write_all(fd, data, len);
		/* chmod: the umask would drop bits otherwise. */
		if (r == 0)
			r = fchmod(fd, mode);
		close(fd);
		break;
	case K_DIR:
		r = mkdir(p, 0755);
		if (r == 0 && opaque != 0) {
			static const struct {
				const char *name, *value;
			} xattrs[] = { { "trusted.overlay.opaque", "y" },
				{ "user.overlay.opaque", "y" },
				{ "trusted.overlay.opaque", "n" },
				{ "user.overlay.opaque", "yy" } };
			unsigned x = (opaque - 1) % 4;
			/* Where it cannot be set, the directory is plain; and
			 * user.overlay.opaque is an xattr like any other (the
			 * overlay is mounted in the host's user namespace):
			 * a job may forge it, and it hides nothing. */
			opaque = setxattr(p, xattrs[x].name, xattrs[x].value,
				     strlen(xattrs[x].value), 0) == 0 &&
			    strcmp(xattrs[x].value, "y") == 0 &&
			    strncmp(xattrs[x].name, "trusted.", 8) == 0;
		}
		break;
	case K_LNK:
		r = symlink((const char *)data, p);
		break;
	case K_FIFO:
		r = mkfifo(p, mode & 0777);
		if (r == 0)
			r = chmod(p, mode & 0777);
		break;
	case K_SOCK:
		r = mknod(p, S_IFSOCK | 0755, 0);
		break;
	case K_DEV:
		r = mknod(p, S_IFCHR | 0666, makedev(1, 3));
		break;
	case K_WHITEOUT:
		r = mknod(p, S_IFCHR, makedev(0, 0));
		break;
	}
	if (r != 0) {
		free(data);
		unlink(p);
		return NULL;
	}
	/* The mode it got: what the walker sees. */
	struct stat st;
	FUZZ_ASSERT(lstat(p, &st) == 0);
	struct node *n = &t->nodes[t->n];
	*n = (struct node){ .kind = k,
		.mode = st.st_mode & 07777,
		.data = data,
		.len = len,
		.opaque = k == K_DIR && opaque != 0 };
	snprintf(n->path, sizeof(n->path), "%s", rel);
	if (k == K_DIR)
		t->dirs[t->ndirs++] = t->n;
	t->n++;
	return n;
}

/* A file's bytes: raw, or numbered lines (some altered), for diffs. */
static unsigned char *
content(struct input *in, bool lines, size_t *ret_len)
{
	unsigned char *d;
	size_t len = 0;

	if (!lines) {
		size_t want = u8(in);

		want |= (size_t)(u8(in) & 0x0f) << 8;

		if (want > in->n)
			want = in->n;
		if (want > budget)
			want = budget;
		d = malloc(want + 1);
		FUZZ_ASSERT(d != NULL);
		memcpy(d, in->p, want);
		in->p += want;
		in->n -= want;
		len = want;
	} else {
		/* Lines "line <v>", v counting up from start, or cycling
		 * through mod + 1 values (repeated lines, for the line diff to
		 * align); every every-th one spelt "LINE". */
		unsigned start = u8(in), count = u8(in) * 2, shape = u8(in);
		unsigned tail = u8(in), mod = shape & 0x0f, every = shape >> 4;
		size_t cap =
		    (size_t)(count > MAX_LINES ? MAX_LINES : count) * 16;

		if (cap > budget)
			cap = budget;
		d = malloc(cap + 1);
		FUZZ_ASSERT(d != NULL);
		for (unsigned i = 0; i < count && i < MAX_LINES; i++) {
			unsigned v = mod ? (start + i) % (mod + 1) : start + i;
			char line[32];
			int n = snprintf(line, sizeof(line), "%s %u\n",
			    every > 1 && (start + i) % every == 0 ? "LINE"
								  : "line",
			    v);
			if (len + (size_t)n > cap)
				break;
			memcpy(d + len, line, (size_t)n);
			len += (size_t)n;
		}
		if ((tail & 1) && len > 0)
			len--; /* no newline at the end */
	}
	budget -= len;
	*ret_len = len;
	return d;
}

/* The parent's path joined with a name. */
static bool
child_path(char *out, const struct tree *t, unsigned parent, const char *name)
{
	const char *dir = "";
	int n;

	parent %= (unsigned)t->ndirs + 1;
	if (parent > 0)
		dir = t->nodes[t->dirs[parent - 1]].path;
	n = snprintf(out, REL_MAX, "%s%s%s", dir, dir[0] ? "/" : "", name);
	return n > 0 && n < REL_MAX;
}

/* mkdir -p of rel's parents in upper, as a copy-up makes them. */
static bool
upper_parents(const char *rel)
{
	char p[REL_MAX];

	for (const char *s = strchr(rel, '/'); s != NULL;
	     s = strchr(s + 1, '/')) {
		struct node *n;

		snprintf(p, sizeof(p), "%.*s", (int)(s - rel), rel);
		n = find(&upper, p);
		if (n == NULL)
			n = make(&upper, p, K_DIR, 0755, NULL, 0, 0);
		if (n == NULL || n->kind != K_DIR)
			return false;
	}
	return true;
}

static const char *const targets[] = { "../outside/secret",
	"../../outside/secret", "../../../outside/secret", "../outside",
	"/etc/passwd", "a", "sub/a", ".", "..", "../a", "sub/../../x", "c.txt",
	"./././a", "sub//a", NULL /* the outside, absolute */ };
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

static unsigned char *
link_target(struct input *in, size_t *ret_len)
{
	unsigned t = u8(in);
	char buf[PATH_MAX];

	if (t < 0xc0) {
		const char *s = targets[t % NTARGETS];

		if (s == NULL)
			snprintf(buf, sizeof(buf), "%s/outside/secret", root);
		else
			snprintf(buf, sizeof(buf), "%s", s);
	} else {
		size_t n = t & 0x3f;
		if (n > in->n)
			n = in->n;
		memcpy(buf, in->p, n);
		buf[n] = '\0';
		in->p += n;
		in->n -= n;
		if (buf[0] == '\0')
			snprintf(buf, sizeof(buf), "x");
	}
	*ret_len = strlen(buf);
	return (unsigned char *)strdup(buf);
}

/* A lower entry made again in upper: the same, or edited. */
static void
copy_up(struct input *in)
{
	unsigned pick = u8(in), edit = u8(in);
	struct node *l;
	unsigned char *d = NULL;
	size_t len;
	mode_t mode;

	if (lower.n == 0)
		return;
	l = &lower.nodes[pick % lower.n];
	if (!upper_parents(l->path))
		return;
	if (l->kind == K_DIR) {
		make(&upper, l->path, K_DIR, 0755, NULL, 0, 0);
		return;
	}
	if (l->kind != K_REG && l->kind != K_LNK)
		return;
	len = l->len;
	d = malloc(len + 16);
	FUZZ_ASSERT(d != NULL);
	if (len > 0)
		memcpy(d, l->data, len);
	mode = l->mode;
	switch (edit & 7) {
	case 1: /* one byte changed */
		if (len > 0)
			d[(edit >> 3) * len / 32] ^=
			    l->kind == K_LNK ? 1 : 0x20;
		break;
	case 2: /* a line appended */
		memcpy(d + len, "added\n", 6);
		len += l->kind == K_LNK ? 2 : 6;
		break;
	case 3: /* the middle cut out */
		if (len >= 4) {
			memmove(d + len / 4, d + len / 2, len - len / 2);
			len -= len / 2 - len / 4;
		}
		break;
	case 4: /* another mode */
		mode = modes[(edit >> 3) % 8];
		break;
	case 5: /* a NUL: binary */
		if (len > 0)
			d[(edit >> 3) * len / 32] = 0;
		break;
	default: /* the same */
		break;
	}
	if (l->kind == K_LNK) {
		d[len] = '\0';
		len = strlen((char *)d);
		if (len == 0) {
			free(d);
			return;
		}
	}
	make(&upper, l->path, l->kind, mode, d, len, 0);
}

static void
build(struct input *in)
{
	for (int e = 0; e < MAX_ENTRIES && in->n > 0; e++) {
		unsigned op = u8(in), parent = u8(in), name = u8(in);
		struct tree *t = (op & 1) ? &upper : &lower;
		unsigned kind = (op >> 1) & 7, variant = op >> 4;
		char rel[REL_MAX];
		unsigned char *d;
		size_t len;

		if (kind == 7) {
			copy_up(in);
			continue;
		}
		if (!child_path(rel, t, parent, names[name % NNAMES]))
			continue;
		switch (kind) {
		case 0:
		case 1:
			d = content(in, kind == 1, &len);
			make(t, rel, K_REG, modes[variant % 8], d, len, 0);
			break;
		case 2:
			make(t, rel, K_DIR, 0755, NULL, 0, 0);
			break;
		case 3: /* opaque in upper, in one of its spellings */
			make(t, rel, K_DIR, 0755, NULL, 0,
			    t == &upper ? 1 + variant : 0);
			break;
		case 4:
			d = link_target(in, &len);
			make(t, rel, K_LNK, 0777, d, len, 0);
			break;
		case 5:
			make(t, rel, t == &upper ? K_WHITEOUT : K_FIFO, 0644,
			    NULL, 0, 0);
			break;
		default: {
			static const enum kind special[] = { K_FIFO, K_SOCK,
				K_DEV, K_FIFO };
			make(t, rel, special[variant % 4],
			    variant & 4 ? 0666 : 0644, NULL, 0, 0);
			break;
		}
		}
	}
}

/* --- The model of the overlay. --- */

static bool
is_file(const struct node *n)
{
	return n != NULL && (n->kind == K_REG || n->kind == K_LNK);
}

static bool
is_special(const struct node *n)
{
	return n != NULL &&
	    (n->kind == K_FIFO || n->kind == K_SOCK || n->kind == K_DEV);
}

static unsigned
git_mode(const struct node *n)
{
	if (n->kind == K_LNK)
		return 0120000;
	return (n->mode & 0111) ? 0100755 : 0100644;
}

/* What the merged tree has at path: an upper or a lower node, or NULL. */
static const struct node *
merged(const char *path)
{
	char prefix[REL_MAX];
	bool lower_visible = true;

	for (const char *s = path;;) {
		const char *slash = strchr(s, '/');
		struct node *u, *l;

		snprintf(prefix, sizeof(prefix), "%.*s",
		    (int)(slash != NULL ? slash - path : (long)strlen(path)),
		    path);
		u = find(&upper, prefix);
		l = lower_visible ? find(&lower, prefix) : NULL;
		if (slash == NULL) {
			if (u != NULL)
				return u->kind == K_WHITEOUT ? NULL : u;
			return l;
		}
		if (u != NULL) {
			if (u->kind != K_DIR)
				return NULL;
			lower_visible =
			    l != NULL && l->kind == K_DIR && !u->opaque;
		} else if (l == NULL || l->kind != K_DIR)
			return NULL;
		s = slash + 1;
	}
}

/* At or under a fifo, socket or device of upper: the walker leaves it. */
static bool
under_special(const char *path)
{
	char prefix[REL_MAX];

	for (const char *s = path;;) {
		const char *slash = strchr(s, '/');

		snprintf(prefix, sizeof(prefix), "%.*s",
		    (int)(slash != NULL ? slash - path : (long)strlen(path)),
		    path);
		if (is_special(find(&upper, prefix)))
			return true;
		if (slash == NULL)
			return false;
		s = slash + 1;
	}
}

/* Read by the walker and over the cap: left out, flagged. */
static bool
too_large(const char *path, uint64_t max)
{
	const struct node *l = find(&lower, path), *u = find(&upper, path);

	if (under_special(path))
		return false;
	if (u != NULL && u->kind == K_REG && u->len > max)
		return true;
	return l != NULL && l->kind == K_REG && l->len > max &&
	    merged(path) != l;
}

/* The change the model expects at path: NULL for none. */
static const char *
expected_change(const char *path, uint64_t max)
{
	const struct node *l = find(&lower, path), *m = merged(path);

	if (under_special(path) || too_large(path, max))
		return NULL;
	if (!is_file(l))
		l = NULL;
	if (!is_file(m))
		m = NULL;
	if (l == NULL && m == NULL)
		return NULL;
	if (l == NULL)
		return "added";
	if (m == NULL)
		return "deleted";
	if (git_mode(l) == git_mode(m) && l->len == m->len &&
	    (l->len == 0 || memcmp(l->data, m->data, l->len) == 0))
		return NULL;
	return "modified";
}

/* --- Reading the patch back. --- */

struct cursor {
	const char *p, *end;
};

/* The next line, without its '\n' (which every line has). */
static bool
next_line(struct cursor *c, const char **ret, size_t *ret_len)
{
	const char *nl;

	if (c->p >= c->end)
		return false;
	nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	FUZZ_ASSERT(nl != NULL);
	*ret = c->p;
	*ret_len = (size_t)(nl - c->p);
	c->p = nl + 1;
	return true;
}

static bool
peek_prefix(const struct cursor *c, const char *prefix)
{
	size_t n = strlen(prefix);

	return (size_t)(c->end - c->p) >= n && memcmp(c->p, prefix, n) == 0;
}

static bool
needs_quote(const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return true;
	}
	return false;
}

/*
 * One name as git writes it, prefix and path, at *s (up to end): bare, or
 * in double quotes with C escapes. Into out; *s moves past it. A bare
 * name runs to end.
 */
static void
unquote(const char **s, const char *end, char *out, size_t cap)
{
	size_t n = 0;
	const char *p = *s;

	if (p < end && *p == '"') {
		static const char esc[] = "abtnvfr";
		p++;
		for (;;) {
			FUZZ_ASSERT(p < end && n + 1 < cap);
			if (*p == '"') {
				p++;
				break;
			}
			if (*p != '\\') {
				out[n++] = *p++;
				continue;
			}
			p++;
			FUZZ_ASSERT(p < end);
			const char *e = strchr(esc, *p);
			if (*p == '"' || *p == '\\') {
				out[n++] = *p++;
			} else if (*p != '\0' && e != NULL) {
				out[n++] = (char)(0x07 + (e - esc));
				p++;
			} else {
				FUZZ_ASSERT(end - p >= 3 && p[0] >= '0' &&
				    p[0] <= '3' && p[1] >= '0' && p[1] <= '7' &&
				    p[2] >= '0' && p[2] <= '7');
				out[n++] = (char)((p[0] - '0') << 6 |
				    (p[1] - '0') << 3 | (p[2] - '0'));
				p += 3;
			}
		}
		out[n] = '\0';
		/* Quoted only when it had to be. */
		FUZZ_ASSERT(needs_quote(out));
	} else {
		FUZZ_ASSERT((size_t)(end - p) < cap);
		n = (size_t)(end - p);
		memcpy(out, p, n);
		out[n] = '\0';
		p = end;
		FUZZ_ASSERT(!needs_quote(out));
	}
	*s = p;
}

/* "diff --git a/X b/X": X, which the two names agree on. */
static void
section_path(const char *line, size_t len, char *out)
{
	const char *s = line + 11, *end = line + len;
	char a[2 * REL_MAX], b[2 * REL_MAX];

	FUZZ_ASSERT(len > 11 && memcmp(line, "diff --git ", 11) == 0);
	if (*s == '"') {
		unquote(&s, end, a, sizeof(a));
		FUZZ_ASSERT(s < end && *s == ' ');
		s++;
		unquote(&s, end, b, sizeof(b));
	} else {
		/* Bare: "a/X b/X", X of (len - 11 - 5) / 2 bytes. */
		size_t x = (len - 11 - 5) / 2;
		FUZZ_ASSERT(len - 11 == 2 * x + 5);
		unquote(&s, s + 2 + x, a, sizeof(a));
		FUZZ_ASSERT(*s == ' ');
		s++;
		unquote(&s, end, b, sizeof(b));
	}
	FUZZ_ASSERT(s == end);
	FUZZ_ASSERT(strncmp(a, "a/", 2) == 0 && strncmp(b, "b/", 2) == 0);
	FUZZ_ASSERT(strcmp(a + 2, b + 2) == 0);
	FUZZ_ASSERT(strlen(a + 2) < REL_MAX);
	memcpy(out, a + 2, strlen(a + 2) + 1);
}

static void
blob_id(const unsigned char *data, size_t len, char hex[41])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char head[32];
	int h = snprintf(head, sizeof(head), "blob %zu", len);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	FUZZ_ASSERT(ctx != NULL);
	FUZZ_ASSERT(EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, head, (size_t)h + 1) == 1 &&
	    EVP_DigestUpdate(ctx, data, len) == 1 &&
	    EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 20);
	EVP_MD_CTX_free(ctx);
	for (unsigned i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* One path's version as a patch section sees it. */
struct version {
	bool present;
	unsigned mode;
	unsigned char *data;
	size_t len;
};

static void
version_of(const struct node *n, struct version *v)
{
	*v = (struct version){ 0 };
	if (!is_file(n))
		return;
	v->present = true;
	v->mode = git_mode(n);
	v->data = malloc(n->len + 1);
	FUZZ_ASSERT(v->data != NULL);
	if (n->len > 0)
		memcpy(v->data, n->data, n->len);
	v->len = n->len;
}

static int
decode85(char c)
{
	static const char en85[] = "0123456789"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "abcdefghijklmnopqrstuvwxyz"
				   "!#$%&()*+-;<=>?@^_`{|}~";
	const char *p = c != '\0' ? strchr(en85, c) : NULL;

	FUZZ_ASSERT(p != NULL);
	return (int)(p - en85);
}

/* "literal N", base85 lines of a zlib stream of stored blocks, a blank
 * line: the N bytes, into *ret. */
static void
read_literal(struct cursor *c, unsigned char **ret, size_t *ret_len)
{
	const char *line;
	size_t len, want, zlen = 0, zcap = 64, at, out = 0;
	unsigned char *z = malloc(zcap), *d;
	char *endp;

	FUZZ_ASSERT(z != NULL);
	FUZZ_ASSERT(next_line(c, &line, &len) && len > 8 &&
	    memcmp(line, "literal ", 8) == 0);
	want = strtoul(line + 8, &endp, 10);
	FUZZ_ASSERT(endp == line + len);
	for (;;) {
		size_t n;

		FUZZ_ASSERT(next_line(c, &line, &len));
		if (len == 0)
			break;
		n = line[0] >= 'A' && line[0] <= 'Z'
		    ? (size_t)(line[0] - 'A' + 1)
		    : line[0] >= 'a' && line[0] <= 'z'
		    ? (size_t)(line[0] - 'a' + 27)
		    : 0;
		FUZZ_ASSERT(n > 0 && len == 1 + (n + 3) / 4 * 5);
		while (zlen + n + 4 > zcap) {
			zcap *= 2;
			z = realloc(z, zcap);
			FUZZ_ASSERT(z != NULL);
		}
		for (size_t g = 0; g < (n + 3) / 4; g++) {
			uint32_t acc = 0;
			for (int k = 0; k < 5; k++)
				acc = acc * 85 +
				    (uint32_t)decode85(line[1 + g * 5 + k]);
			for (int k = 0; k < 4; k++)
				if (g * 4 + (size_t)k < n)
					z[zlen + g * 4 + (size_t)k] =
					    (unsigned char)(acc >>
						(24 - 8 * k));
		}
		zlen += n;
	}
	/* zlib: header, stored blocks, Adler-32. */
	FUZZ_ASSERT(zlen >= 2 + 5 + 4 && (z[0] & 0x0f) == 8 &&
	    ((unsigned)z[0] << 8 | z[1]) % 31 == 0 && !(z[1] & 0x20));
	d = malloc(want + 1);
	FUZZ_ASSERT(d != NULL);
	for (at = 2;;) {
		size_t n;
		bool final;

		FUZZ_ASSERT(at + 5 <= zlen && (z[at] & 0x06) == 0);
		final = z[at] & 1;
		n = z[at + 1] | (size_t)z[at + 2] << 8;
		FUZZ_ASSERT(
		    (n ^ 0xffff) == (z[at + 3] | (size_t)z[at + 4] << 8));
		at += 5;
		FUZZ_ASSERT(at + n <= zlen && out + n <= want);
		memcpy(d + out, z + at, n);
		out += n;
		at += n;
		if (final)
			break;
	}
	FUZZ_ASSERT(out == want && at + 4 == zlen);
	uint32_t a = 1, b = 0;
	for (size_t i = 0; i < out; i++) {
		a = (a + d[i]) % 65521;
		b = (b + a) % 65521;
	}
	FUZZ_ASSERT(((uint32_t)z[at] << 24 | (uint32_t)z[at + 1] << 16 |
			(uint32_t)z[at + 2] << 8 | z[at + 3]) == (b << 16 | a));
	free(z);
	*ret = d;
	*ret_len = out;
}

/* The lines of data: starts and lengths (with the '\n'). */
static size_t
split(const unsigned char *data, size_t len, size_t *starts, size_t *lens,
    size_t cap)
{
	size_t n = 0, at = 0;

	while (at < len) {
		const unsigned char *nl = memchr(data + at, '\n', len - at);
		size_t e = nl != NULL ? (size_t)(nl - data) + 1 : len;

		FUZZ_ASSERT(n < cap);
		starts[n] = at;
		lens[n++] = e - at;
		at = e;
	}
	return n;
}

/* "-s,c" or "+s,c": its start and count. */
static const char *
parse_range(const char *s, char sign, size_t *start, size_t *count)
{
	char *e;

	FUZZ_ASSERT(*s == sign);
	*start = strtoul(s + 1, &e, 10);
	*count = 1;
	if (*e == ',')
		*count = strtoul(e + 1, &e, 10);
	return e;
}

/* The text hunks at c applied to old: the new content, into *ret. */
static void
apply_hunks(struct cursor *c, const struct version *old, unsigned char **ret,
    size_t *ret_len)
{
	static size_t starts[MAX_BYTES + 2], lens[MAX_BYTES + 2];
	size_t nold = split(old->data, old->len, starts, lens, MAX_BYTES + 2);
	size_t cap = old->len + (size_t)(c->end - c->p) + 1, out = 0;
	size_t at = 0, nout = 0; /* old lines used; new lines made */
	unsigned char *d = malloc(cap);
	bool any = false;

	FUZZ_ASSERT(d != NULL);
	while (peek_prefix(c, "@@ -")) {
		size_t s1, c1, s2, c2, used = 0, made = 0;
		const char *line, *e;
		size_t len;

		any = true;
		FUZZ_ASSERT(next_line(c, &line, &len));
		e = parse_range(line + 3, '-', &s1, &c1);
		FUZZ_ASSERT(*e == ' ');
		e = parse_range(e + 1, '+', &s2, &c2);
		FUZZ_ASSERT(strncmp(e, " @@", 3) == 0);
		/* The lines before it come over unchanged. */
		size_t first = c1 == 0 ? s1 : s1 - 1;
		FUZZ_ASSERT(first >= at && first <= nold);
		for (; at < first; at++, nout++) {
			memcpy(d + out, old->data + starts[at], lens[at]);
			out += lens[at];
		}
		FUZZ_ASSERT(nout == (c2 == 0 ? s2 : s2 - 1));
		while (used < c1 || made < c2) {
			const char *text;
			size_t tlen;
			char kind;

			FUZZ_ASSERT(next_line(c, &line, &len) && len >= 1);
			kind = line[0];
			FUZZ_ASSERT(kind == ' ' || kind == '-' || kind == '+');
			text = line + 1;
			tlen = len; /* with its '\n' */
			if (peek_prefix(c, NO_NEWLINE)) {
				c->p += sizeof(NO_NEWLINE) - 1;
				tlen--;
			}
			if (kind != '+') {
				FUZZ_ASSERT(at < nold && lens[at] == tlen &&
				    memcmp(old->data + starts[at], text,
					tlen) == 0);
				at++;
				used++;
			}
			if (kind != '-') {
				FUZZ_ASSERT(out + tlen <= cap);
				memcpy(d + out, text, tlen);
				out += tlen;
				nout++;
				made++;
			}
		}
		FUZZ_ASSERT(used == c1 && made == c2);
	}
	FUZZ_ASSERT(any);
	for (; at < nold; at++) {
		memcpy(d + out, old->data + starts[at], lens[at]);
		out += lens[at];
	}
	*ret = d;
	*ret_len = out;
}

/* A "--- a/X" or "+++ b/X" label, or /dev/null. */
static void
check_label(struct cursor *c, const char *sign, const char *prefix,
    const char *path, bool present)
{
	const char *line, *s;
	size_t len;
	char name[2 * REL_MAX], want[2 * REL_MAX];

	FUZZ_ASSERT(next_line(c, &line, &len) && len > 4 &&
	    memcmp(line, sign, 3) == 0 && line[3] == ' ');
	if (!present) {
		FUZZ_ASSERT(len == 13 && memcmp(line + 4, "/dev/null", 9) == 0);
		return;
	}
	if (strchr(path, ' ') != NULL) {
		FUZZ_ASSERT(line[len - 1] == '\t');
		len--;
	}
	s = line + 4;
	unquote(&s, line + len, name, sizeof(name));
	FUZZ_ASSERT(s == line + len);
	snprintf(want, sizeof(want), "%s%s", prefix, path);
	FUZZ_ASSERT(strcmp(name, want) == 0);
}

static bool
valid_mode(unsigned m)
{
	return m == 0100644 || m == 0100755 || m == 0120000;
}

/* One "diff --git" section, applied to v. */
static void
apply_section(struct cursor *c, const char *path, struct version *v)
{
	const char *line;
	size_t len;
	unsigned old_mode = v->mode, new_mode = v->mode, m;
	bool created = false, deleted = false, index = false;
	char old_id[41], new_id[41], want[41];
	struct version out;

	/* The extended header. */
	while (c->p < c->end && !peek_prefix(c, "diff --git ") &&
	    !peek_prefix(c, "--- ") && !peek_prefix(c, "GIT binary patch\n")) {
		FUZZ_ASSERT(next_line(c, &line, &len));
		char text[128];
		snprintf(text, sizeof(text), "%.*s", (int)len, line);
		if (sscanf(text, "new file mode %o", &m) == 1) {
			FUZZ_ASSERT(!v->present && valid_mode(m));
			created = true;
			new_mode = m;
		} else if (sscanf(text, "deleted file mode %o", &m) == 1) {
			FUZZ_ASSERT(v->present && m == v->mode);
			deleted = true;
		} else if (sscanf(text, "old mode %o", &m) == 1) {
			FUZZ_ASSERT(v->present && m == v->mode);
		} else if (sscanf(text, "new mode %o", &m) == 1) {
			FUZZ_ASSERT(
			    v->present && valid_mode(m) && m != v->mode);
			new_mode = m;
		} else if (strncmp(text, "index ", 6) == 0) {
			FUZZ_ASSERT(len == 6 + 40 + 2 + 40 ||
			    (len == 6 + 82 + 7 && text[88] == ' '));
			memcpy(old_id, text + 6, 40);
			old_id[40] = '\0';
			FUZZ_ASSERT(text[46] == '.' && text[47] == '.');
			memcpy(new_id, text + 48, 40);
			new_id[40] = '\0';
			if (len > 88)
				FUZZ_ASSERT(sscanf(text + 89, "%o", &m) == 1 &&
				    m == old_mode && v->present && !created &&
				    !deleted);
			index = true;
		} else {
			FUZZ_ASSERT(!"an unknown header line");
		}
	}
	FUZZ_ASSERT(created || v->present);
	FUZZ_ASSERT(!(created && deleted));
	/* The content: hunks, a binary patch or (index alone) none. */
	out = (struct version){ .present = !deleted, .mode = new_mode };
	if (peek_prefix(c, "GIT binary patch\n")) {
		unsigned char *back;
		size_t back_len;

		FUZZ_ASSERT(index);
		c->p += 17;
		read_literal(c, &out.data, &out.len);
		read_literal(c, &back, &back_len);
		FUZZ_ASSERT(back_len == (v->present ? v->len : 0) &&
		    (back_len == 0 || memcmp(back, v->data, back_len) == 0));
		free(back);
	} else if (peek_prefix(c, "--- ")) {
		FUZZ_ASSERT(index);
		struct version empty = { 0 };
		check_label(c, "---", "a/", path, !created);
		check_label(c, "+++", "b/", path, !deleted);
		apply_hunks(c, created ? &empty : v, &out.data, &out.len);
	} else {
		/* Empty added or deleted, or a mode change alone. */
		FUZZ_ASSERT(index || (!created && !deleted));
		FUZZ_ASSERT(!created || index);
		if (!created && !deleted) {
			out.data = malloc(v->len + 1);
			FUZZ_ASSERT(out.data != NULL);
			if (v->len > 0)
				memcpy(out.data, v->data, v->len);
			out.len = v->len;
		} else {
			FUZZ_ASSERT(created || v->len == 0);
			out.data = malloc(1);
		}
	}
	if (deleted)
		FUZZ_ASSERT(out.len == 0);
	if (index) {
		if (created)
			FUZZ_ASSERT(
			    strcmp(old_id,
				"0000000000000000000000000000000000000000") ==
			    0);
		else {
			blob_id(v->data, v->len, want);
			FUZZ_ASSERT(strcmp(old_id, want) == 0);
		}
		if (deleted)
			FUZZ_ASSERT(
			    strcmp(new_id,
				"0000000000000000000000000000000000000000") ==
			    0);
		else {
			blob_id(out.data, out.len, want);
			FUZZ_ASSERT(strcmp(new_id, want) == 0);
		}
	}
	if (deleted)
		out = (struct version){ .present = false, .data = out.data };
	free(v->data);
	*v = out;
}

/* The path of a report's entry (a change or a flag), decoded. */
static const char *
entry_path(const json_t *e, char *out)
{
	const char *p = json_string_value(json_object_get(e, "path"));

	FUZZ_ASSERT(p != NULL);
	from_report(p, out);
	return out;
}

static bool
flagged(const json_t *flags, const char *path, const char *flag)
{
	char fp[REL_MAX];
	size_t i;
	json_t *f;

	json_array_foreach(flags, i, f)
	{
		if (strcmp(entry_path(f, fp), path) == 0 &&
		    strcmp(json_string_value(json_object_get(f, "flag")),
			flag) == 0)
			return true;
	}
	return false;
}

static size_t
count_flags(const json_t *flags, const char *path, const char *flag)
{
	char fp[REL_MAX];
	size_t i, n = 0;
	json_t *f;

	json_array_foreach(flags, i, f)
	{
		if ((path == NULL || strcmp(entry_path(f, fp), path) == 0) &&
		    strcmp(json_string_value(json_object_get(f, "flag")),
			flag) == 0)
			n++;
	}
	return n;
}

/* The link's target read as text leaves the tree. */
static bool
escapes(const char *link, const char *target)
{
	long depth = 0;

	for (const char *c = link; *c != '\0'; c++)
		depth += *c == '/';
	for (const char *c = target;;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.')
			depth--;
		else if (n > 0 && !(n == 1 && c[0] == '.'))
			depth++;
		if (depth < 0)
			return true;
		if (c[n] == '\0')
			return false;
		c += n + 1;
	}
}

/* A few of the default protected globs, read independently: each
 * matches a component at any depth, in any case. */
static bool
protected_path(const char *path)
{
	static const char *const bases[] = { ".envrc", "Jenkinsfile",
		".gitmodules", ".gitattributes", ".gitlab-ci.yml", ".npmrc",
		".pypirc", ".git", ".github", ".husky" };

	for (const char *s = path;;) {
		size_t n = strcspn(s, "/");

		for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
			if (n == strlen(bases[i]) &&
			    strncasecmp(s, bases[i], n) == 0)
				return true;
		if (n >= 8 && strncasecmp(s + n - 8, ".service", 8) == 0)
			return true;
		if (s[n] == '\0')
			return false;
		s += n + 1;
	}
}

/* One of the inputs the walk is given ("in", "src/app"), or under one. */
static bool
inside_inputs(const char *path)
{
	return strncmp(path, "in/", 3) == 0 || strcmp(path, "in") == 0 ||
	    strncmp(path, "src/app/", 8) == 0 || strcmp(path, "src/app") == 0;
}

/* A path as the report shows it, back to the path it names (into out of
 * REL_MAX), its form asserted (readable.h). */
static void
from_report(const char *p, char *out)
{
	(void)fuzz_report_path(p, strlen(p), out, REL_MAX);
}

static void
check_flags(const json_t *flags, enum verdict verdict, const json_t *changes,
    uint64_t max, int r)
{
	enum verdict worst = VERDICT_CLEAN;
	size_t i;
	json_t *f, *c;

	json_array_foreach(flags, i, f)
	{
		const char *v =
		    json_string_value(json_object_get(f, "verdict"));
		FUZZ_ASSERT(json_is_string(json_object_get(f, "path")));
		FUZZ_ASSERT(json_is_string(json_object_get(f, "flag")));
		FUZZ_ASSERT(json_is_string(json_object_get(f, "reason")));
		FUZZ_ASSERT(v != NULL);
		enum verdict fv = strcmp(v, "refused") == 0 ? VERDICT_REFUSED
		    : strcmp(v, "needs-review") == 0 ? VERDICT_NEEDS_REVIEW
						     : VERDICT_CLEAN;
		FUZZ_ASSERT(fv != VERDICT_CLEAN);
		if (fv > worst)
			worst = fv;
	}
	FUZZ_ASSERT(verdict == worst);
	FUZZ_ASSERT(count_flags(flags, NULL, "patch_too_large") ==
	    (r == -E2BIG ? 1u : 0u));

	for (i = 0; i < upper.n; i++) {
		const struct node *u = &upper.nodes[i];
		static const char *const special[] = { [K_FIFO] = "fifo",
			[K_SOCK] = "socket",
			[K_DEV] = "device" };

		if (is_special(u))
			FUZZ_ASSERT(flagged(flags, u->path, special[u->kind]));
		if (u->kind == K_WHITEOUT)
			FUZZ_ASSERT(count_flags(flags, u->path, "device") == 0);
		if (u->kind == K_REG && !too_large(u->path, max)) {
			if (u->mode & S_ISUID)
				FUZZ_ASSERT(flagged(flags, u->path, "setuid"));
			if (u->mode & S_ISGID)
				FUZZ_ASSERT(flagged(flags, u->path, "setgid"));
		}
	}
	/* Each file over the cap, once; nothing else. */
	FUZZ_ASSERT(
	    count_flags(flags, NULL, "file_too_large") <= lower.n + upper.n);
	json_array_foreach(flags, i, f)
	{
		char p[REL_MAX];
		entry_path(f, p);
		if (strcmp(json_string_value(json_object_get(f, "flag")),
			"file_too_large") == 0)
			FUZZ_ASSERT(too_large(p, max));
	}
	for (int s = 0; s < 2; s++) {
		const struct tree *t = s ? &upper : &lower;
		for (i = 0; i < t->n; i++)
			if (too_large(t->nodes[i].path, max))
				FUZZ_ASSERT(count_flags(flags, t->nodes[i].path,
						"file_too_large") == 1);
	}
	/* What was written is judged. */
	json_array_foreach(changes, i, c)
	{
		char p[REL_MAX];
		const struct node *u = find(&upper, entry_path(c, p));

		if (!is_file(u) || merged(p) != u) {
			/* A deletion: under a protected path, flagged too. */
			if (protected_path(p))
				FUZZ_ASSERT(
				    flagged(flags, p, "protected_path"));
			continue;
		}
		if (u->kind == K_REG && (u->mode & S_IWOTH))
			FUZZ_ASSERT(flagged(flags, p, "world_writable"));
		if (protected_path(p))
			FUZZ_ASSERT(flagged(flags, p, "protected_path"));
		FUZZ_ASSERT(
		    flagged(flags, p, "outside_inputs") == !inside_inputs(p));
		if (u->kind == K_LNK) {
			const char *t = (const char *)u->data;
			size_t n = count_flags(flags, p, "symlink") +
			    count_flags(flags, p, "symlink_absolute") +
			    count_flags(flags, p, "symlink_escapes");
			FUZZ_ASSERT(n == 1);
			if (t[0] == '/')
				FUZZ_ASSERT(
				    flagged(flags, p, "symlink_absolute"));
			else if (escapes(p, t))
				FUZZ_ASSERT(
				    flagged(flags, p, "symlink_escapes"));
			else
				FUZZ_ASSERT(flagged(flags, p, "symlink"));
		}
	}
}

/* The changes against the model, and the patch against both. */
static void
check_walk(const struct buf *patch, const json_t *changes,
    const struct upper_stats *st, uint64_t max, int r)
{
	const char *text = buf_str(patch); /* "" when nothing was written */
	struct cursor c = { text, text + patch->len };
	uint64_t added = 0, modified = 0, deleted = 0;
	size_t i, listed = 0;
	json_t *ch;

	FUZZ_ASSERT(patch->len <= max);
	if (patch->len > 0)
		FUZZ_ASSERT(text[patch->len - 1] == '\n');
	json_array_foreach(changes, i, ch)
	{
		char p[REL_MAX];
		const char *kind =
		    json_string_value(json_object_get(ch, "change"));
		const char *want;
		struct version v;
		char sp[REL_MAX];
		const char *line;
		size_t len, sections = 0;

		entry_path(ch, p);
		FUZZ_ASSERT(kind != NULL && json_object_size(ch) == 2);
		FUZZ_ASSERT(path_is_safe_relative(p));
		want = expected_change(p, max);
		FUZZ_ASSERT(want != NULL && strcmp(want, kind) == 0);
		added += strcmp(kind, "added") == 0;
		modified += strcmp(kind, "modified") == 0;
		deleted += strcmp(kind, "deleted") == 0;
		for (size_t k = 0; k < i; k++)
			FUZZ_ASSERT(
			    strcmp(json_string_value(
				       json_object_get(json_array_get(changes,
							   k),
					   "path")),
				json_string_value(
				    json_object_get(ch, "path"))) != 0);
		/* Its sections turn lower's version into the merged one. */
		version_of(find(&lower, p), &v);
		while (peek_prefix(&c, "diff --git ")) {
			struct cursor at = c;
			FUZZ_ASSERT(next_line(&at, &line, &len));
			section_path(line, len, sp);
			if (strcmp(sp, p) != 0)
				break;
			c = at;
			apply_section(&c, p, &v);
			sections++;
		}
		FUZZ_ASSERT(sections == 1 || sections == 2);
		struct version m;
		version_of(merged(p), &m);
		FUZZ_ASSERT(v.present == m.present);
		if (m.present)
			FUZZ_ASSERT(v.mode == m.mode && v.len == m.len &&
			    (m.len == 0 || memcmp(v.data, m.data, m.len) == 0));
		free(v.data);
		free(m.data);
		listed++;
	}
	/* Nothing else in the patch. */
	FUZZ_ASSERT(c.p == c.end);
	FUZZ_ASSERT(st->added == added && st->modified == modified &&
	    st->deleted == deleted);
	if (r == 0) {
		/* Every expected change is listed. */
		size_t want = 0, unchanged = 0;
		for (int s = 0; s < 2; s++) {
			const struct tree *t = s ? &upper : &lower;
			for (i = 0; i < t->n; i++) {
				const char *p = t->nodes[i].path;
				if (expected_change(p, max) != NULL &&
				    (s == 0 || find(&lower, p) == NULL))
					want++;
			}
		}
		FUZZ_ASSERT(listed == want);
		for (i = 0; i < upper.n; i++) {
			const struct node *u = &upper.nodes[i];
			if (is_file(u) && is_file(find(&lower, u->path)) &&
			    !too_large(u->path, max) &&
			    expected_change(u->path, max) == NULL)
				unchanged++;
		}
		FUZZ_ASSERT(st->unchanged == unchanged);
	}
}

/* --- One run. --- */

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

static void
rm_tree(const char *p)
{
	nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t caps[] = { 64, 300, 1024, 4096, 16384, 65536,
		1 << 20, 1 << 20 };
	struct input in = { data, size };
	const char *tmp = getenv("TMPDIR");
	char p[PATH_MAX + 32];
	unsigned head = u8(&in);
	uint64_t max = caps[head & 7];
	struct policy pol;
	struct upper_stats st = { 0 };
	struct buf patch;
	json_t *changes, *roots, *extra;
	int lfd, ufd, fd, r;

	if (tmp == NULL || tmp[0] == '\0')
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(root, sizeof(root), "%s/fuzz_upper.XXXXXX", tmp);
	FUZZ_ASSERT(mkdtemp(root) != NULL);
	for (int i = 0; i < 3; i++) {
		static const char *const dirs[] = { "lower", "upper",
			"outside" };
		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		FUZZ_ASSERT(mkdir(p, 0755) == 0);
	}
	/* What no walk may read: a file and a directory outside. */
	snprintf(p, sizeof(p), "%s/outside/secret", root);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(path_write_all(fd, MARKER "\n" MARKER "\n",
			2 * sizeof(MARKER)) == 0);
	close(fd);
	budget = MAX_BYTES;
	build(&in);

	snprintf(p, sizeof(p), "%s/lower", root);
	lfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/upper", root);
	ufd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_ASSERT(lfd >= 0 && ufd >= 0);
	roots = json_pack("[s, s]", "in", "src/app");
	extra = (head & 8) ? json_pack("[s, s]", "*.txt", "sub/**") : NULL;
	FUZZ_ASSERT(policy_init(&pol, extra, roots, max) == 0);
	buf_init(&patch, max);
	changes = json_array();

	r = upper_walk(lfd, ufd, &pol, &patch, changes, &st);
	if (r != 0 && r != -E2BIG)
		fprintf(stderr, "upper_walk: %s\n", strerror(-r));
	FUZZ_ASSERT(r == 0 || r == -E2BIG);
	check_walk(&patch, changes, &st, max, r);
	check_flags(pol.flags, pol.verdict, changes, max, r);
	/* Nothing from outside, unless the input wrote it itself. */
	if (memmem(data, size, MARKER, sizeof(MARKER) - 1) == NULL &&
	    patch.len > 0)
		FUZZ_ASSERT(memmem(patch.data, patch.len, MARKER,
				sizeof(MARKER) - 1) == NULL);

	buf_free(&patch);
	json_decref(changes);
	json_decref(roots);
	json_decref(extra);
	policy_free(&pol);
	close(lfd);
	close(ufd);
	tree_free(&lower);
	tree_free(&upper);
	rm_tree(root);
	return 0;
}
