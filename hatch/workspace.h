/*
 * Workspaces: one per job, under <state_dir>/workspaces/<job>/:
 *   lower/     the inputs, copied in (the overlay's read-only layer), on
 *              a tmpfs of its own: no inode of a copy-in on the disk
 *   rw/        a tmpfs of the job's disk limit, holding
 *   rw/upper/  the overlay's upper directory: everything the job writes
 *   rw/work/   the overlay's work directory
 * The launcher mounts lower, upper and work as an overlay at the job's
 * /work; after the job stops, the hatch reads upper alone.
 */
#ifndef CORDON_HATCH_WORKSPACE_H
#define CORDON_HATCH_WORKSPACE_H

#include "config.h"

#include <jansson.h>
#include <stdbool.h>

#define WORKSPACE_MAX_INPUTS 64
#define WORKSPACE_DEFAULT_DISK_MB 256
#define WORKSPACE_MAX_DISK_MB 65536
#define WORKSPACE_DEFAULT_LOWER_MB 1024
#define WORKSPACE_MAX_LOWER_MB 1048576

struct workspace_input {
	const char *src; /* resolved, under an input root */
	const char *dst; /* relative, safe */
};

/* True when s can name a job (and a directory): [A-Za-z0-9._-]{1,128},
 * not starting with '.'. */
bool workspace_job_ok(const char *s);

/*
 * Checks one input against the roots: src absolute, existing, resolving
 * (realpath) under one of roots (themselves resolved); dst a safe relative
 * path. Appends problems ({"field", "problem"}, field like
 * "inputs[2].src") and returns the resolved src (free() it), or NULL
 * when src or dst is refused.
 */
char *workspace_check_input(const struct config_strings *roots, size_t i,
    const char *src, const char *dst, json_t *problems);

/*
 * Creates job's workspace under root (the workspaces directory): copies
 * each input into lower/<dst>, mounts a tmpfs of disk_mb at rw/, makes
 * upper/ and work/ in it. lower/ is a tmpfs of at most lower_mb (only
 * what is copied takes memory); inputs that do not fit it are copied
 * again to the disk beneath, as they are with lower_mb 0. -EEXIST when the job has one, -ESTALE when its
 * workspace was closed (workspace_delete); -EINVAL with
 * problems listed (a fifo in an input, a link out of it, two inputs at
 * one dst), and nothing left behind; -ENOSPC, -EPERM (no right to mount)
 * or -errno otherwise. ret_policy (the manifest's "return": protected
 * globs, max_patch_kb; may be NULL) is kept in meta.json for the seal.
 * *ret gets {job, lower, upper, work, disk_mb, inputs: [{src, dst, files,
 * dirs, symlinks, bytes}], ids: {lower, upper, work}}, each id the
 * directory's "DEV:INO" (st_dev, st_ino) for the launcher to check.
 */
int workspace_create(const char *root, const char *job,
    const struct workspace_input *inputs, size_t ninputs, long disk_mb,
    long lower_mb, const json_t *ret_policy, json_t *problems, json_t **ret);

/*
 * Unmounts and removes job's workspace: 0, or -ENOENT when it has none.
 * Either way the job's workspace is then closed: a later workspace_create
 * for it answers -ESTALE (a job gets one workspace).
 */
int workspace_delete(const char *root, const char *job);

/*
 * At start: removes every workspace under root that has no meta.json, and
 * what a removal cut short left (and forgets closed jobs after a week). A workspace without meta.json was being
 * made when the hatch stopped; its create never answered, so no job ran in
 * it. Tmpfs mounts are unmounted. The names of what went are appended to
 * discarded. 0, or -EIO when one could not
 * be removed (the others still are).
 */
int workspace_discard_unfinished(const char *root, json_t *discarded);

#endif
