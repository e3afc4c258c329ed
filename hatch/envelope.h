/*
 * The output envelope: a job's stdout and stderr as the return path hands
 * them on. Whatever the job printed is text an attacker chose, so it comes
 * back capped, with terminal escape sequences and other control characters
 * removed (and counted), invalid UTF-8 replaced, and marked untrusted.
 */
#ifndef CORDON_HATCH_ENVELOPE_H
#define CORDON_HATCH_ENVELOPE_H

#include <jansson.h>
#include <stddef.h>

/*
 * Cleans len bytes of output, keeping at most cap bytes of what remains:
 * {"text": "...", "bytes": len, "truncated": bool, "removed": n}, where
 * removed counts escape sequences and control characters taken out
 * (newlines and tabs stay) and bytes of invalid UTF-8 replaced by '?'.
 */
json_t *envelope_clean(const unsigned char *data, size_t len, size_t cap);

/* {"trust": "untrusted", "stdout": ..., "stderr": ...}. */
json_t *envelope_make(const unsigned char *out, size_t outlen,
    const unsigned char *err, size_t errlen, size_t cap);

#endif
