/*
 * The patch writer: one changed file in, its git-style patch out. The
 * walker of the upper directory (upper.c) calls it once per file; the
 * concatenation is what `git apply` applies to a pristine copy of the
 * inputs to give exactly the tree the job left, bytes and modes. Text gets
 * a line diff with three lines of context, anything git would call binary
 * a "GIT binary patch" with both literal hunks, so the patch also reverses.
 * Nothing here logs, and nothing here trusts the names: they are checked
 * and quoted as git quotes them.
 */
#ifndef CORDON_HATCH_PATCH_H
#define CORDON_HATCH_PATCH_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>

/* The git modes a patch can carry. */
#define PATCH_MODE_FILE 0100644u
#define PATCH_MODE_EXEC 0100755u
#define PATCH_MODE_SYMLINK 0120000u

struct patch_file {
	const char *old_path; /* relative path in the inputs; NULL: added */
	const char *new_path; /* relative path in the result; NULL: deleted */
	unsigned old_mode, new_mode; /* PATCH_MODE_*; 0 when absent */
	const unsigned char *old_data; /* a symlink's data is its target */
	size_t old_len;
	const unsigned char *new_data;
	size_t new_len;
};

/*
 * Appends one file's git-style patch to out: nothing when path, mode and
 * content are all the same. A change of type (file to symlink or back) is
 * written as git writes it, a deletion followed by a creation; different
 * old and new paths make a rename. Index lines carry full 40-hex blob ids.
 * Paths must be safe relative paths (path_is_safe_relative), a path must
 * be given exactly when its mode is, and data may be NULL only when its
 * length is 0.
 * Returns 0, -EINVAL for a malformed f, -E2BIG when out's cap is reached
 * or -ENOMEM; on failure out is left as it was.
 */
int patch_write_file(struct buf *out, const struct patch_file *f);

/* The bytes git looks at for a NUL (xdiff-interface.c's FIRST_FEW_BYTES):
 * the patch writer's and the binary-text flag's one rule. */
#define PATCH_BINARY_SCAN 8000

/* True when data looks binary as git decides: a NUL in its first
 * PATCH_BINARY_SCAN bytes. */
bool patch_is_binary(const unsigned char *data, size_t len);

/*
 * Appends prefix and path as git quotes a name in a patch (core.quotePath
 * on, its default): bare when nothing in either needs quoting, otherwise
 * the two together in double quotes with C escapes (\a \b \t \n \v \f \r
 * \" \\) and octal \ooo for other control bytes, DEL and bytes >= 0x80.
 * Returns 0, -E2BIG or -ENOMEM; on failure out is left as it was.
 */
int patch_quote_path(struct buf *out, const char *prefix, const char *path);

#endif
