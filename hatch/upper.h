/*
 * Reading an overlay's upper directory: what the job wrote, compared with
 * the lower directory it was written over, as a git-style patch. Only
 * upper is walked, so sealing costs in proportion to what the job changed,
 * not to the size of the inputs. This is exact only for an overlay mounted
 * with redirect_dir=off, metacopy=off and index=off: then upper holds
 * every changed file whole, a whiteout (character device 0/0) for each
 * deletion, and an opaque directory for each directory replaced.
 */
#ifndef CORDON_HATCH_UPPER_H
#define CORDON_HATCH_UPPER_H

#include "buf.h"
#include "policy.h"

#include <jansson.h>

#define UPPER_MAX_DEPTH 128

struct upper_stats {
	uint64_t added, modified, deleted, unchanged, bytes_read;
};

/*
 * Walks upper_fd (the upper directory) against lower_fd (the lower one),
 * appending each changed file's patch to patch and judging each written
 * entry with p. Every path is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS). changes gets {path, change} per file ("added",
 * "modified", "deleted"); a file or link p excludes (policy_exclude) is
 * counted in p, not in the patch nor in changes. 0; -E2BIG when the patch is not whole, each
 * cut flagged `refused` in p with its reason: the patch outgrew its buffer
 * (the walk went on to judge the rest), or part of the tree was left out
 * (deeper than UPPER_MAX_DEPTH, a path past PATH_MAX, more than
 * p->max_entries entries, an entry that could not be read); or -errno
 * (-ENOMEM, or upper itself unreadable). No tree a job can make is an
 * error.
 */
int upper_walk(int lower_fd, int upper_fd, struct policy *p, struct buf *patch,
    json_t *changes, struct upper_stats *stats);

/* Whether directory rel (relative to upper) is opaque. */
typedef bool (*upper_opaque_fn)(void *ctx, const char *rel);

/* upper_walk, with opaque (when not NULL) telling opaque directories
 * instead of their trusted.overlay.opaque xattr, which takes
 * CAP_SYS_ADMIN to read (the sealer's worker reads them first, then
 * gives the capability up: seal_marks_read). */
int upper_walk_opaque(int lower_fd, int upper_fd, struct policy *p,
    struct buf *patch, json_t *changes, struct upper_stats *stats,
    upper_opaque_fn opaque, void *ctx);

#endif
