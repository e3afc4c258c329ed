/*
 * Capped buffers: growth doubles, never past the cap the owner set.
 */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
buf_init(struct buf *b, size_t max)
{
	*b = (struct buf)BUF_INIT(max);
}

static int
buf_reserve(struct buf *b, size_t n)
{
	size_t want, cap;
	char *p;

	if (n > b->max || b->len > b->max - n)
		return -E2BIG;
	want = b->len + n;
	if (want <= b->cap && b->data != NULL)
		return 0;
	cap = b->cap < 64 ? 64 : b->cap;
	while (cap < want)
		cap = cap > b->max / 2 ? b->max : cap * 2;
	if (cap > b->max)
		cap = b->max;
	if (cap == SIZE_MAX) /* no room for the NUL */
		return -ENOMEM;
	if (b->wipe && b->data != NULL) {
		p = malloc(cap + 1);
		if (p == NULL)
			return -ENOMEM;
		memcpy(p, b->data, b->len + 1);
		explicit_bzero(b->data, b->cap + 1);
		free(b->data);
	} else {
		p = realloc(b->data, cap + 1);
	}
	if (p == NULL)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	int r = buf_reserve(b, n);

	if (r < 0)
		return r;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_append_u64(struct buf *b, uint64_t v)
{
	char d[20]; /* UINT64_MAX has 20 digits */
	size_t n = sizeof(d);

	do {
		d[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	return buf_append(b, d + n, sizeof(d) - n);
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

const char *
buf_str(const struct buf *b)
{
	return b->data != NULL ? b->data : "";
}

char *
buf_steal(struct buf *b, size_t *ret_len)
{
	char *p = b->data;

	if (p == NULL)
		p = strdup("");
	if (ret_len != NULL)
		*ret_len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

void
buf_free(struct buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
