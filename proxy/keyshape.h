/*
 * Which part of a secret's value the reflection scanner looks for
 * (credentials.md, "The public part of a key"). The scanner redacts any
 * INJECT_WINDOW bytes in a row of a value, so a value whose format has a
 * public part matched text that is not the key: a type prefix every key
 * of the kind carries (`sk_live_`, `ghp_`, `github_pat_`, `xoxb-`,
 * `glpat-`: an answer that names the format, Stripe's own 401) or a
 * JWT's header and claims (every HS256 token's `eyJhbGciOiJIUzI1NiIs`,
 * another user's token). The scan part leaves those out but for their
 * last KEYSHAPE_CONTEXT bytes: it is the value from 7 bytes before the
 * secret part (after such a prefix, a JWT's signature segment), and only
 * when the secret part is at least KEYSHAPE_REST_MIN bytes; otherwise
 * the whole value (fail closed). Every secret byte lies in the scan
 * part, so each of its runs is still matched in every encoding, and no
 * window of it is public bytes only. Pure: no I/O.
 */
#ifndef CORDON_PROXY_KEYSHAPE_H
#define CORDON_PROXY_KEYSHAPE_H

#include <stddef.h>

/* The fewest bytes a scan part may have: a value that would leave fewer
 * is scanned whole. */
#define KEYSHAPE_REST_MIN 16
/* The longest type prefix left out (`github_pat_` is 11). */
#define KEYSHAPE_PREFIX_MAX 16
/* The words of a type prefix, at most, and the longest word. */
#define KEYSHAPE_WORDS_MAX 2
#define KEYSHAPE_WORD_MAX 6
/* The longest JWT header decoded to see that it is one. */
#define KEYSHAPE_HEADER_MAX 1024

/* The public part's last bytes kept in the scan part: one less than the
 * scanner's window (inject.h's INJECT_WINDOW), so that every window of
 * the scan part holds a secret byte (public text alone never matches)
 * while a cut of the key just after its public part (a quotation of
 * "sk_live_" and 1 to 7 secret bytes) is still a window of it. */
#define KEYSHAPE_CONTEXT 7

/*
 * How many of value[0..len)'s first bytes are public by its format: a
 * type prefix, 1 to KEYSHAPE_WORDS_MAX words, each followed by '_' or
 * '-', at most KEYSHAPE_PREFIX_MAX bytes in all (the first word 2 to
 * KEYSHAPE_WORD_MAX lowercase letters, the others 1 to KEYSHAPE_WORD_MAX
 * lowercase letters or digits), or one of the longer prefixes of
 * vendors named in keyshape.c (`sk-ant-api03-`), the longest that leaves
 * KEYSHAPE_REST_MIN bytes, when what it leaves looks random (a digit or
 * an upper-case letter in it, no word of three lowercase letters or more
 * between its '_' and '-': else the value is words, a passphrase's, and
 * whole); or a JWT's header and claims, the whole value
 * being three base64url segments whose first decodes to a JSON object
 * naming "alg" and the second to an object, when its signature has
 * KEYSHAPE_REST_MIN bytes. Anything else, and len 0: 0.
 */
size_t keyshape_public_len(const char *value, size_t len);

/*
 * The part of value[0..len) to scan for: its offset in *ret_off and its
 * length (returned): the value but its public part, of which the last
 * KEYSHAPE_CONTEXT bytes are kept; the whole value when none.
 */
size_t keyshape_scan_part(const char *value, size_t len, size_t *ret_off);

#endif
