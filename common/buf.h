/*
 * Capped buffers. Every buffer that a peer fills has a hard maximum set
 * when it is made; an append that would pass it fails whole and leaves the
 * buffer as it was. The contents are always NUL-terminated, so text can be
 * read in place.
 */
#ifndef CORDON_BUF_H
#define CORDON_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	char *data; /* NULL until the first append */
	size_t len;
	size_t cap; /* allocated, not counting the terminating NUL */
	size_t max; /* hard cap on len */
	/* Growing moves the bytes to new memory and wipes the old (which a
	 * realloc would free as it was): for bytes a key may be among. */
	bool wipe;
};

#define BUF_INIT(m)                                                            \
	{                                                                      \
		.data = NULL, .len = 0, .cap = 0, .max = (m)                   \
	}

void buf_init(struct buf *b, size_t max);

/* Appends n bytes: 0, -E2BIG when len + n would pass max, or -ENOMEM. */
int buf_append(struct buf *b, const void *p, size_t n);

/* Appends the string literal s, no printf for fixed text: as
 * buf_append. */
#define BUF_LIT(b, s) buf_append((b), "" s, sizeof(s) - 1)

/* Appends v in decimal, as %llu writes it: as buf_append. */
int buf_append_u64(struct buf *b, uint64_t v);

/* Appends formatted text: 0, -E2BIG or -ENOMEM, as buf_append. */
int buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The contents as a string; "" when empty. Valid until the next append. */
const char *buf_str(const struct buf *b);

/* Hands the contents to the caller (free() them) and empties b. */
char *buf_steal(struct buf *b, size_t *ret_len);

/* Empties b, keeping its memory and its cap. */
void buf_reset(struct buf *b);

/* Frees the contents; b may be reused after buf_init. NULL is fine. */
void buf_free(struct buf *b);

#endif
