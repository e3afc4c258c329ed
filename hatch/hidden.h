/*
 * Text that reads otherwise than it applies (hidden.c): what in a line a
 * job added is shown one way and applied another. Trojan Source's bidi
 * controls (CVE-2021-42574) reorder a line on the screen, invisible
 * characters split an identifier or spell out text no one sees, control
 * characters rewrite the terminal under cat, line separators end a line
 * for one reader and not for another, and bytes that are not UTF-8 are
 * shown as each viewer guesses, and a letter of another script in a Latin
 * word (a Cyrillic a in "admin") reads as the Latin one. The patch must
 * carry them as they are; the report names where they are
 * (policy_check_text).
 */
#ifndef CORDON_HATCH_HIDDEN_H
#define CORDON_HATCH_HIDDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hidden_class {
	HIDDEN_BIDI, /* U+202A..U+202E, U+2066..U+2069, U+200E, U+200F,
		      * U+061C */
	HIDDEN_INVISIBLE, /* Default_Ignorable code points (envelope's) */
	HIDDEN_CONTROL, /* C0 but tab, LF, FF and a CR ending the line; DEL;
			 * C1 */
	HIDDEN_SEPARATOR, /* U+2028, U+2029 */
	HIDDEN_INVALID, /* not UTF-8: stray, overlong, surrogate, cut */
	HIDDEN_MIXED_SCRIPT, /* a word mixing Latin with Cyrillic, Greek or
			      * Armenian; a fullwidth or mathematical
			      * look-alike of a Latin letter */
	HIDDEN_CASE_CONFUSABLE, /* in a path's name only (hidden_name): a
				 * letter a checkout reads as an ASCII one
				 * (U+0131 as I, U+212A as k) */
	HIDDEN_CLASSES,
};

/* One thing found: its class and its code point (for HIDDEN_INVALID the
 * first byte that is not UTF-8), at byte col of its line. */
struct hidden_hit {
	enum hidden_class cls;
	uint32_t cp;
	size_t col;
};

/* What the added lines of one file hold. */
struct hidden_text {
	uint64_t lines; /* added lines holding at least one */
	unsigned classes; /* 1u << HIDDEN_* of every class found */
	uint64_t first_line; /* the first of them, 1-based in the new file */
	struct hidden_hit first; /* the first hit on it */
};

/*
 * Scans one line (n bytes, its '\n' left out) and returns the classes
 * (1u << HIDDEN_*) it holds, 0 for none, with the first hit in *ret when
 * ret is not NULL. first_line says the line starts the file: a BOM there
 * is no hit. Exempt, as text in other scripts and emoji use them: a
 * variation selector after a visible character that is not ASCII, and a
 * zero-width joiner or non-joiner between two such characters; a CR is a
 * control unless it ends the line (CRLF). A word (a run of letters,
 * digits, underscores and combining marks) is mixed-script when it holds
 * a Latin letter and a Cyrillic, Greek or Armenian letter or a fullwidth
 * digit (the hit: the first of these), or a fullwidth Latin letter or a
 * mathematical alphanumeric at all; a word wholly in one script is not.
 */
unsigned hidden_line(const unsigned char *line, size_t n, bool first_line,
    struct hidden_hit *ret);

/*
 * Scans the added lines ('+' lines of the hunks, numbered by the hunk
 * headers) of one or more "diff --git" sections as patch_write_file
 * writes them (len bytes at section): headers, context, removed lines,
 * the function text of a hunk header and binary literals are not read.
 * Fills *ret (zeroed first). 0, or -EINVAL when a hunk is malformed or
 * cut short (*ret then holds what was found before it).
 */
int hidden_scan_patch(const char *section, size_t len, struct hidden_text *ret);

/*
 * Scans a path's name (n bytes) as hidden_line does a line, and also for
 * HIDDEN_CASE_CONFUSABLE: a code point past ASCII whose simple case
 * mapping or canonical decomposition is one ASCII character
 * (fold_table.h's flagged rows). Returns the classes, the first hit in
 * *ret when ret is not NULL.
 */
unsigned hidden_name(const unsigned char *name, size_t n,
    struct hidden_hit *ret);

/*
 * The ASCII (lowercase) a case-insensitive or normalizing checkout may
 * read the code point cp as (U+0131 "i", U+017F "s", U+212A "k", U+FB01
 * "fi": fold_table.h), or NULL when it is read as no ASCII.
 */
const char *hidden_fold_ascii(uint32_t cp);

/* The class's name in a report: bidi_control, invisible, control,
 * line_separator, invalid_utf8, mixed_script, case_confusable. */
const char *hidden_class_name(enum hidden_class c);

#endif
