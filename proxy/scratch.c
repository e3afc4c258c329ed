/*
 * The scratch buffers of scratch.h: a struct buf reset in place, wiped
 * after each use; freed when a use made it large.
 */
#include "scratch.h"

#include <stdlib.h>
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

char *
scratch_room(struct buf *b, size_t cap)
{
	if (cap == 0)
		return NULL;
	if (b->data == NULL || b->cap < cap) {
		scratch_free(b);
		/* As buf.c allocates: cap bytes and a NUL. */
		if ((b->data = malloc(cap + 1)) == NULL)
			return NULL;
		b->cap = cap;
	}
	/* The whole room counts as held: scratch_done wipes it all. */
	b->len = b->max = cap - 1;
	b->data[0] = '\0';
	return b->data;
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
