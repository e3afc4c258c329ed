/*
 * The scratch buffers of scratch.h: a struct buf reset in place, wiped
 * after each use; freed when a use made it large.
 */
#include "scratch.h"

#include <string.h>

struct buf *
scratch_take(struct buf *b, size_t max)
{
	b->len = 0;
	b->max = max;
	b->wipe = true; /* a head may hold an injected key as it grows */
	if (b->data != NULL)
		b->data[0] = '\0';
	return b;
}

void
scratch_done(struct buf *b)
{
	if (b->data == NULL)
		return;
	explicit_bzero(b->data, b->len + 1);
	b->len = 0;
	if (b->cap > SCRATCH_KEEP)
		buf_free(b);
}

void
scratch_free(struct buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->cap + 1);
	buf_free(b);
}
