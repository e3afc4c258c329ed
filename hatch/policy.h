/*
 * The return-path policy: what in a job's writes a person must look at,
 * and what must not be applied at all. Each flag carries its reason; the
 * verdict is the worst of them: clean, needs-review or refused.
 */
#ifndef CORDON_HATCH_POLICY_H
#define CORDON_HATCH_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum verdict {
	VERDICT_CLEAN,
	VERDICT_NEEDS_REVIEW,
	VERDICT_REFUSED,
};

/* Flags listed in a report; past them each is only counted. */
#define POLICY_MAX_FLAGS 1000
/* Entries of upper a seal walks; past them the rest is refused. */
#define POLICY_MAX_ENTRIES 100000

struct policy {
	json_t *protected; /* array of globs: the defaults plus the job's */
	json_t *roots; /* the inputs' dst: globs also match beneath them */
	uint64_t max_patch_bytes;
	uint64_t max_entries; /* POLICY_MAX_ENTRIES unless a test lowers it */
	json_t *flags; /* [{path, flag, reason, verdict}] */
	uint64_t flags_omitted; /* flagged past POLICY_MAX_FLAGS */
	enum verdict verdict;
};

/* The default protected globs (DESIGN.md), NULL-terminated. */
extern const char *const policy_default_protected[];

/*
 * Sets p up with the defaults plus extra (an array of globs, may be NULL),
 * the inputs' destinations and the patch size limit. 0 or -ENOMEM.
 */
int policy_init(struct policy *p, const json_t *extra, const json_t *roots,
    uint64_t max_patch_bytes);
void policy_free(struct policy *p);

/*
 * Matches path against a glob as .gitignore does: a pattern without a '/'
 * matches the last component at any depth; one with a '/' matches the
 * whole path; '*' and '?' stay within a component, '**' spans any number
 * of them.
 */
bool policy_glob_match(const char *pattern, const char *path);

/*
 * A path for the report: as it is when it is UTF-8, else as the patch
 * names it (git's quoted form, "\377bad"), so that no change and no flag
 * goes missing from the report for its name. NULL only without memory.
 */
json_t *policy_path_json(const char *path);

/* The glob of p's protected list that path matches, or NULL. */
const char *policy_protected_by(const struct policy *p, const char *path);

/* Flags path (relative to the workspace) with a reason and a verdict. */
void policy_flag(struct policy *p, const char *path, const char *flag,
    const char *reason, enum verdict v);

/*
 * Judges one written entry: its path against the protected globs (also
 * relative to each input's destination), its mode (setuid, setgid,
 * world-writable), its type (symlinks; devices, fifos and sockets), a
 * symlink's target. Flags what it finds.
 */
void policy_check_entry(struct policy *p, const char *path, mode_t mode,
    const char *link_target);

/* Judges the deletion of a file or link of lower: a protected path. */
void policy_check_deletion(struct policy *p, const char *path);

const char *policy_verdict_name(enum verdict v);

#endif
