/*
 * The output envelope: a job's stdout and stderr as the return path hands
 * them on. Whatever the job printed is text an attacker chose, so it comes
 * back capped, with terminal escape sequences and other control characters
 * removed (and counted), the Unicode characters that reorder or hide text
 * (bidi controls, zero-width characters, tag characters) removed (and
 * counted), invalid UTF-8 replaced, and marked untrusted. The same
 * character classes decide how the report shows a path (policy.c).
 */
#ifndef CORDON_COMMON_ENVELOPE_H
#define CORDON_COMMON_ENVELOPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the UTF-8 sequence at p (n > 0 bytes left): its length, with
 * the code point in *ret_cp; 0 when it is not valid UTF-8 (a stray or
 * missing continuation byte, an overlong form, a surrogate, past
 * U+10FFFF, cut short by n).
 */
size_t envelope_utf8_decode(const unsigned char *p, size_t n, uint32_t *ret_cp);

/*
 * True for a code point that changes how text around it is shown or hides
 * text without showing anything itself: Unicode's Default_Ignorable_Code_Point
 * set (zero-width characters, bidi controls, the BOM, variation selectors,
 * tag characters and fillers, DerivedCoreProperties.txt), the Arabic letter
 * mark and the interlinear annotation controls.
 */
bool envelope_invisible(uint32_t cp);

/*
 * Cleans len bytes of output, keeping at most cap bytes of what remains:
 * {"text": "...", "bytes": len, "truncated": bool, "removed": n,
 * "invisible": k}, where removed counts escape sequences and control
 * characters taken out (newlines and tabs stay), invisible characters
 * taken out (k of them, envelope_invisible), line and paragraph
 * separators made newlines, and C1 controls and bytes of invalid UTF-8
 * replaced by '?'.
 */
json_t *envelope_clean(const unsigned char *data, size_t len, size_t cap);

/* {"trust": "untrusted", "stdout": ..., "stderr": ...}. */
json_t *envelope_make(const unsigned char *out, size_t outlen,
    const unsigned char *err, size_t errlen, size_t cap);

#endif
