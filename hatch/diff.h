/*
 * The line diff of a text file's two versions, written as a patch's hunks
 * (diff.c). patch.c writes the headers above them.
 */
#ifndef CORDON_HATCH_DIFF_H
#define CORDON_HATCH_DIFF_H

#include "buf.h"

#include <stddef.h>

/*
 * Appends the hunks that turn old into new (either may be NULL when its
 * length is 0) to out, each "@@ -a,b +c,d @@ func" and its lines; nothing
 * when they are equal.
 * Returns 0, -E2BIG when out's cap is reached or -ENOMEM; on failure out
 * may hold part of the hunks (the caller cuts it back).
 */
int diff_write(struct buf *out, const unsigned char *old, size_t old_len,
    const unsigned char *new, size_t new_len);

#endif
