/*
 * Copy-in: a job's inputs copied from the host into its private lower
 * directory. Regular files, directories and symlinks that stay inside the
 * source are copied; a symlink is copied as a link, never followed; a
 * device, fifo, socket or a link out of the source refuses the whole copy.
 * setuid and setgid bits are dropped.
 */
#ifndef CORDON_HATCH_COPYIN_H
#define CORDON_HATCH_COPYIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define COPYIN_MAX_DEPTH 128

struct copyin_stats {
	uint64_t files, dirs, symlinks, bytes;
};

/*
 * Copies src (an absolute, resolved path: a directory or a regular file)
 * to dst_rel beneath the directory dst_dirfd, creating dst_rel's parents.
 * Everything that refuses the copy is appended to problems as {"path",
 * "problem"} (paths relative to src); the copy goes on to list them all,
 * and the caller must then throw the destination away. Returns 0 (check
 * problems) or -errno for a failure of the copy itself (-ENOSPC, -EIO).
 */
int copyin(const char *src, int dst_dirfd, const char *dst_rel,
    json_t *problems, struct copyin_stats *stats);

/*
 * True when the relative symlink target, read from a link at the relative
 * path link_rel inside a tree, stays inside that tree once resolved
 * lexically. Absolute targets never do.
 */
bool copyin_link_inside(const char *link_rel, const char *target);

#endif
