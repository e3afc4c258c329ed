/*
 * A "GIT binary patch" literal hunk (binary.c): what patch.c writes for a
 * file git would call binary, once forward and once in reverse.
 */
#ifndef CORDON_HATCH_BINARY_H
#define CORDON_HATCH_BINARY_H

#include "buf.h"

#include <stddef.h>

/*
 * Appends "literal <len>", the base85 lines of data as a zlib stream and
 * a blank line to out. data may be NULL only when len is 0.
 * Returns 0, -E2BIG (out's cap, or len too large) or -ENOMEM; on failure
 * out may hold part of the hunk (the caller cuts it back).
 */
int binary_literal(struct buf *out, const unsigned char *data, size_t len);

#endif
