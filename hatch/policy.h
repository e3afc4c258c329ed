/*
 * The return-path policy: what in a job's writes a person must look at,
 * and what must not be applied at all. Each flag carries its reason; the
 * verdict is the worst of them: clean, needs-review or refused.
 */
#ifndef CORDON_HATCH_POLICY_H
#define CORDON_HATCH_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum verdict {
	VERDICT_CLEAN,
	VERDICT_NEEDS_REVIEW,
	VERDICT_REFUSED,
};

/* Flags listed in a report, in all and of one kind (so that a flood of
 * one hides no other); past them each is only counted. */
#define POLICY_MAX_FLAGS 1000
#define POLICY_MAX_FLAGS_OF_A_KIND 100
/* Entries of upper a seal walks; past them the rest is refused. */
#define POLICY_MAX_ENTRIES 100000

struct policy {
	json_t *protected; /* array of globs: the defaults plus the job's */
	json_t *roots; /* the inputs' dst: a write elsewhere is flagged */
	uint64_t max_patch_bytes;
	uint64_t max_entries; /* POLICY_MAX_ENTRIES unless a test lowers it */
	json_t *flags; /* [{path, flag, reason, verdict}] */
	uint64_t flags_omitted; /* flagged, not listed */
	json_t *flag_counts; /* {flag: n}, every flag, listed or not */
	enum verdict verdict;
	json_t *exclude; /* array of globs: the manifest's return.exclude */
	uint64_t excluded, excluded_bytes; /* left out of the patch */
	json_t *excluded_sample; /* the first POLICY_EXCLUDED_SAMPLE paths */
};

/* Paths of excluded entries a report lists; past them each is counted. */
#define POLICY_EXCLUDED_SAMPLE 20
/* Globs a manifest's return.exclude (and return.protected) may hold. */
#define POLICY_MAX_GLOBS 64

/* The default protected globs (docs/return-path.md), NULL-terminated. */
extern const char *const policy_default_protected[];

/*
 * Sets p up with the defaults plus extra (an array of globs, may be NULL),
 * the inputs' destinations and the patch size limit. 0 or -ENOMEM.
 */
int policy_init(struct policy *p, const json_t *extra, const json_t *roots,
    uint64_t max_patch_bytes);
void policy_free(struct policy *p);

/*
 * Sets p's exclude list to globs (an array of strings, may be NULL; other
 * elements are skipped). 0 or -ENOMEM.
 */
int policy_set_exclude(struct policy *p, const json_t *globs);

/*
 * Whether path (a file, link or deletion of one, of bytes bytes) is left
 * out of the patch: it matches a glob of p's exclude list
 * (policy_glob_match) and is not protected (policy_protected_by: a
 * protected path is never excluded, it stays in the patch with its flag).
 * When it is, it is counted in excluded and excluded_bytes and, among the
 * first POLICY_EXCLUDED_SAMPLE, listed in excluded_sample.
 */
bool policy_exclude(struct policy *p, const char *path, uint64_t bytes);

/* The report's "excluded": {count, bytes, sample}. NULL only without
 * memory. */
json_t *policy_excluded_json(const struct policy *p);

/*
 * Matches path against a glob at any depth, folding ASCII case: a pattern
 * without a '/' matches any one component; one with a '/' matches
 * consecutive components starting at any of them; '*' and '?' stay within
 * a component, '**' spans any number of them, none too (a trailing one
 * holds the directory itself).
 */
bool policy_glob_match(const char *pattern, const char *path);

/*
 * A path for the report: as it is when it is valid UTF-8 with nothing
 * that could fool a reader (no control, '"', '\\', C1 control, line
 * separator or envelope_invisible character), else in double quotes with
 * git's escapes (\n, \033), octal for bytes that are not UTF-8 (\377)
 * and \u202e or \U000e0069 for such code points, so that no change and
 * no flag goes missing for its name, nor shows other than it is. NULL
 * only without memory.
 */
json_t *policy_path_json(const char *path);

/* The glob of p's protected list that path matches (policy_glob_match,
 * after folding path as Windows and macOS read names: backslashes as
 * '/', ignorable code points dropped, a component cut at ':' and at its
 * trailing dots and spaces; an 8.3 short name is protected too), or
 * NULL. */
const char *policy_protected_by(const struct policy *p, const char *path);

/* Flags path (relative to the workspace) with a reason and a verdict.
 * Every flag counts in flag_counts and the verdict; past
 * POLICY_MAX_FLAGS_OF_A_KIND of its kind or POLICY_MAX_FLAGS in all it is
 * not listed (flags_omitted). */
void policy_flag(struct policy *p, const char *path, const char *flag,
    const char *reason, enum verdict v);

/*
 * Judges the text a job added to path: section is what patch_write_file
 * appended for it (len bytes). An added line holding a bidi control, an
 * invisible character, a control character, a line separator or bytes
 * that are not UTF-8 (hidden.h) flags path hidden_text, needs-review,
 * with the first such line ("line"), how many ("lines"), their classes
 * ("classes") and the first character as "U+XXXX" or a byte as "0xXX"
 * ("char"), never the raw bytes. Hunks it cannot read flag it too.
 */
void policy_check_text(struct policy *p, const char *path, const char *section,
    size_t len);

/*
 * Judges the name of a path the job wrote: one holding a bidi control,
 * an invisible character, a control character, a line separator or
 * bytes that are not UTF-8 (hidden_line) shows otherwise than it applies
 * (invoice_U+202Etxt.exe reads invoice_exe.txt; config.py and
 * config<U+200B>.py look alike): flags path hidden_text, needs-review,
 * with "in": "name", its classes and the first character as "U+XXXX" or
 * "0xXX", never the raw bytes.
 */
void policy_check_name(struct policy *p, const char *path);

/*
 * Judges a regular file's new content data[0..len): one that git, and
 * the patch, carry as binary (patch_is_binary: a NUL in its first
 * PATCH_BINARY_SCAN bytes), and that is text otherwise (no control byte
 * but NUL, tab, LF, CR and FF, no DEL), shows as "Binary files differ"
 * while it runs as source (node takes a NUL in a comment): flags path
 * hidden_text, needs-review, with "in": "binary".
 */
void policy_check_binary_text(struct policy *p, const char *path,
    const unsigned char *data, size_t len);

/*
 * Judges one written entry: its path against the protected globs and
 * against the inputs' destinations (outside all: outside_inputs), its
 * mode (setuid, setgid, world-writable), its type (symlinks; devices,
 * fifos and sockets), a symlink's target. Flags what it finds.
 */
void policy_check_entry(struct policy *p, const char *path, mode_t mode,
    const char *link_target);

/* Judges the deletion of a file or link of lower: a protected path. */
void policy_check_deletion(struct policy *p, const char *path);

const char *policy_verdict_name(enum verdict v);

#endif
