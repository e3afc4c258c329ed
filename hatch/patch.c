/*
 * The patch writer. Output follows `git diff --full-index --binary` line
 * for line, so that `git apply` takes it and a reviewer reads what git
 * would have shown: the same headers, the same quoting, index lines with
 * git's blob ids. This file writes a file's section and its headers; the
 * hunks below them come from diff.c (text) or binary.c (literals).
 */
#include "patch.h"

#include "binary.h"
#include "diff.h"
#include "path.h"
#include "util.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#define TYPE_MASK 0170000u

static const char zero_id[] = "0000000000000000000000000000000000000000";

/* Cuts out back to len, undoing the appends of a failed call. */
static void
out_restore(struct buf *out, size_t len)
{
	if (out->data != NULL && len <= out->len) {
		out->len = len;
		out->data[len] = '\0';
	}
}

bool
patch_is_binary(const unsigned char *data, size_t len)
{
	if (data == NULL)
		return false;
	return memchr(data, '\0',
		   len < PATCH_BINARY_SCAN ? len : PATCH_BINARY_SCAN) != NULL;
}

/*
 * How git's quote_c_style treats a byte: 0 bare, the letter or character
 * that follows a backslash, or 1 for an octal escape.
 */
static int
quote_kind(unsigned char c)
{
	static const char letters[] = "abtnvfr"; /* 0x07 to 0x0d */

	if (c >= 0x07 && c <= 0x0d)
		return letters[c - 0x07];
	if (c == '"' || c == '\\')
		return c;
	if (c < 0x20 || c >= 0x7f)
		return 1;
	return 0;
}

static bool
needs_quote(const char *s)
{
	for (; *s != '\0'; s++)
		if (quote_kind((unsigned char)*s) != 0)
			return true;
	return false;
}

static int
append_escaped(struct buf *out, const char *s)
{
	int r = 0;

	while (*s != '\0' && r == 0) {
		size_t n = 0;
		int kind;

		while (s[n] != '\0' && quote_kind((unsigned char)s[n]) == 0)
			n++;
		r = buf_append(out, s, n);
		s += n;
		if (r < 0 || *s == '\0')
			break;
		kind = quote_kind((unsigned char)*s);
		if (kind == 1) {
			unsigned char c = (unsigned char)*s;

			r = buf_printf(out, "\\%o%o%o", (c >> 6) & 3,
			    (c >> 3) & 7, c & 7);
		} else {
			char esc[2] = { '\\', (char)kind };

			r = buf_append(out, esc, 2);
		}
		s++;
	}
	return r;
}

int
patch_quote_path(struct buf *out, const char *prefix, const char *path)
{
	size_t saved = out->len;
	int r;

	if (!needs_quote(prefix) && !needs_quote(path)) {
		r = buf_append(out, prefix, strlen(prefix));
		if (r == 0)
			r = buf_append(out, path, strlen(path));
	} else {
		r = buf_append(out, "\"", 1);
		if (r == 0)
			r = append_escaped(out, prefix);
		if (r == 0)
			r = append_escaped(out, path);
		if (r == 0)
			r = buf_append(out, "\"", 1);
	}
	if (r < 0)
		out_restore(out, saved);
	return r;
}

/* git's blob id: the SHA-1 of "blob <len>\0" and the data, in hex. */
static int
blob_id(const unsigned char *data, size_t len, char hex[41])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	char head[32];
	EVP_MD_CTX *ctx;
	int n, ok;

	n = snprintf(head, sizeof(head), "blob %zu", len);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -EINVAL;
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, head, (size_t)n + 1) == 1 &&
	    (len == 0 || EVP_DigestUpdate(ctx, data, len) == 1) &&
	    EVP_DigestFinal_ex(ctx, md, &md_len) == 1 && md_len == 20;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	for (unsigned int i = 0; i < md_len; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[40] = '\0';
	return 0;
}

/* --- One file. --- */

static bool
mode_valid(unsigned mode)
{
	return mode == PATCH_MODE_FILE || mode == PATCH_MODE_EXEC ||
	    mode == PATCH_MODE_SYMLINK;
}

static bool
side_valid(const char *path, unsigned mode, const unsigned char *data,
    size_t len)
{
	if (path == NULL)
		return mode == 0 && len == 0;
	return mode_valid(mode) && path_is_safe_relative(path) &&
	    (data != NULL || len == 0);
}

/* "--- a/x" or "+++ b/x", or /dev/null; git ends a name holding a space
 * with a tab, so that patch(1) finds where it stops. */
static int
emit_label(struct buf *out, const char *sign, const char *prefix,
    const char *path)
{
	int r = buf_printf(out, "%s ", sign);

	if (r < 0)
		return r;
	if (path == NULL)
		return buf_append(out, "/dev/null\n", 10);
	r = patch_quote_path(out, prefix, path);
	if (r == 0 && strchr(path, ' ') != NULL)
		r = buf_append(out, "\t", 1);
	if (r == 0)
		r = buf_append(out, "\n", 1);
	return r;
}

/* One "diff --git" section; f's two sides are of the same type, or one
 * of them is absent. */
static int
emit_section(struct buf *out, const struct patch_file *f)
{
	const char *a_name = f->old_path != NULL ? f->old_path : f->new_path;
	const char *b_name = f->new_path != NULL ? f->new_path : f->old_path;
	const unsigned char *old = f->old_data, *new = f->new_data;
	size_t old_len = f->old_len, new_len = f->new_len;
	bool rename = strcmp(a_name, b_name) != 0;
	/* Absent reads as empty, but an empty file and no file have
	 * different ids: only content on both sides can be the same. */
	bool empty_both = old_len == 0 && new_len == 0;
	bool same = old_len == new_len &&
	    (old_len == 0 || memcmp(old, new, old_len) == 0) &&
	    f->old_path != NULL && f->new_path != NULL;
	char old_id[41], new_id[41];
	int r;

	if (same && f->old_mode == f->new_mode && !rename)
		return 0;
	memcpy(old_id, zero_id, sizeof(old_id));
	memcpy(new_id, zero_id, sizeof(new_id));
	if (f->old_path != NULL && (r = blob_id(old, old_len, old_id)) < 0)
		return r;
	if (f->new_path != NULL && (r = blob_id(new, new_len, new_id)) < 0)
		return r;

	if ((r = buf_append(out, "diff --git ", 11)) < 0 ||
	    (r = patch_quote_path(out, "a/", a_name)) < 0 ||
	    (r = buf_append(out, " ", 1)) < 0 ||
	    (r = patch_quote_path(out, "b/", b_name)) < 0 ||
	    (r = buf_append(out, "\n", 1)) < 0)
		return r;
	if (f->old_path == NULL)
		r = buf_printf(out, "new file mode %06o\n", f->new_mode);
	else if (f->new_path == NULL)
		r = buf_printf(out, "deleted file mode %06o\n", f->old_mode);
	else if (f->old_mode != f->new_mode)
		r = buf_printf(out, "old mode %06o\nnew mode %06o\n",
		    f->old_mode, f->new_mode);
	if (r < 0)
		return r;
	if (rename) {
		if ((r = buf_append(out, "rename from ", 12)) < 0 ||
		    (r = patch_quote_path(out, "", a_name)) < 0 ||
		    (r = buf_append(out, "\nrename to ", 11)) < 0 ||
		    (r = patch_quote_path(out, "", b_name)) < 0 ||
		    (r = buf_append(out, "\n", 1)) < 0)
			return r;
	}
	if (same)
		return 0; /* a mode change or a rename alone: no index line */
	r = buf_printf(out, "index %s..%s", old_id, new_id);
	if (r == 0 && f->old_mode == f->new_mode)
		r = buf_printf(out, " %06o", f->old_mode);
	if (r == 0)
		r = buf_append(out, "\n", 1);
	if (r < 0 || empty_both)
		return r; /* an empty file added or deleted: no hunk */

	if (patch_is_binary(old, old_len) || patch_is_binary(new, new_len)) {
		/* Forward, then reverse, as git writes them. */
		r = buf_append(out, "GIT binary patch\n", 17);
		if (r == 0)
			r = binary_literal(out, new, new_len);
		if (r == 0)
			r = binary_literal(out, old, old_len);
		return r;
	}
	if ((r = emit_label(out, "---", "a/", f->old_path)) < 0 ||
	    (r = emit_label(out, "+++", "b/", f->new_path)) < 0)
		return r;
	return diff_write(out, old, old_len, new, new_len);
}

int
patch_write_file(struct buf *out, const struct patch_file *f)
{
	size_t saved = out->len;
	int r;

	if (f == NULL || (f->old_path == NULL && f->new_path == NULL) ||
	    !side_valid(f->old_path, f->old_mode, f->old_data, f->old_len) ||
	    !side_valid(f->new_path, f->new_mode, f->new_data, f->new_len))
		return -EINVAL;
	if (f->old_path != NULL && f->new_path != NULL &&
	    (f->old_mode & TYPE_MASK) != (f->new_mode & TYPE_MASK)) {
		/* A file became a symlink or the reverse: git writes the
		 * deletion and then the creation. */
		struct patch_file gone = {
			.old_path = f->old_path,
			.old_mode = f->old_mode,
			.old_data = f->old_data,
			.old_len = f->old_len,
		};
		struct patch_file born = {
			.new_path = f->new_path,
			.new_mode = f->new_mode,
			.new_data = f->new_data,
			.new_len = f->new_len,
		};

		r = emit_section(out, &gone);
		if (r == 0)
			r = emit_section(out, &born);
	} else {
		r = emit_section(out, f);
	}
	if (r < 0)
		out_restore(out, saved);
	return r;
}
