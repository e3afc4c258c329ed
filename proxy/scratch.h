/*
 * A connection's scratch buffers: the bytes of one step of an exchange
 * on their way (the request's head as it goes upstream, the answer's
 * head, what the reflection scan lets down, the injected credential's
 * header value), kept from one exchange to the next instead of a malloc
 * and a free each. A request's head holds an injected key, so every use
 * ends wiped: no byte of one exchange is left for the next to carry or
 * for the allocator to hand out.
 */
#ifndef CORDON_PROXY_SCRATCH_H
#define CORDON_PROXY_SCRATCH_H

#include "buf.h"

#include <stddef.h>

/* Past this, a buffer's memory is freed at the end of its use: a large
 * answer's reads are not kept for the connection's life. */
#define SCRATCH_KEEP 4096

/*
 * Makes b (a zeroed struct buf, or one scratch_done left) empty and
 * capped at max for its next use, keeping its memory; returns b. Its
 * memory holds nothing of the last use (scratch_done wiped it).
 */
struct buf *scratch_take(struct buf *b, size_t max);

/*
 * Ends a use of b: every byte it held (and its NUL) overwritten with
 * zeros, b empty; its memory kept for the next scratch_take, or freed
 * when over SCRATCH_KEEP. b's memory outside its bytes was wiped by the
 * uses before. NULL data (never used, or freed) is fine.
 */
void scratch_done(struct buf *b);

/*
 * A use of b as room for a string the caller writes (at most cap - 1
 * bytes and its NUL): b's memory when it has cap bytes, else new memory
 * (the old freed: the uses before wiped it); NULL for cap 0 or -ENOMEM
 * (b then empty). scratch_done wipes all cap bytes, whatever the caller
 * wrote.
 */
char *scratch_room(struct buf *b, size_t cap);

/* Wipes and frees b's memory (at the connection's close). */
void scratch_free(struct buf *b);

#endif
