/*
 * Sealing a workspace once its job has stopped: the patch of what the job
 * wrote and the report that judges it, written beside the workspace
 * (patch, report.json) and read back by the API. A seal interrupted (the
 * hatch killed) leaves nothing half written and can simply run again.
 */
#ifndef CORDON_HATCH_SEAL_H
#define CORDON_HATCH_SEAL_H

#include "sealer.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEAL_DEFAULT_OUTPUT_KB 1024
#define SEAL_MAX_OUTPUT_KB 65536

/*
 * Seals job's workspace under root through the sealer s (sealer.h): the
 * workspace's directory, the output and two temporary files opened here
 * and handed to a worker, the files renamed into place only when it
 * succeeded. output, when not NULL, is the job's output as the launcher
 * captured it: {"stdout": base64, "stderr": base64}, capped at output_kb
 * each in the report's envelope. A workspace already sealed answers its
 * report again (child->pid 0). *ret gets the report; *child who sealed
 * and, on failure, why. 0, -ENOENT (no workspace), -EINVAL (output not
 * base64), -ETIMEDOUT (past the deadline), -EIO (the worker died),
 * -EPIPE (no sealer), or -errno; nothing is sealed on failure.
 */
int seal_workspace(struct sealer *s, const char *root, const char *job,
    const json_t *output, long output_kb, json_t **ret,
    struct seal_child *child);

/* The opaque directories of a workspace's upper (trusted.overlay.opaque
 * "y"): their paths relative to upper, sorted. */
struct seal_marks {
	char **v;
	size_t n, cap;
	uint64_t entries; /* names listed while looking */
};

/*
 * Reads the opaque marks of rw/upper under dir_fd into m (empty when
 * called): the one part of a seal that needs CAP_SYS_ADMIN (the kernel
 * shows trusted.* xattrs to no lesser capability), so that a worker reads
 * them first, names and one xattr alone, and gives the capability up
 * before it reads a byte the job wrote. It looks where upper_walk would
 * (UPPER_MAX_DEPTH, POLICY_MAX_ENTRIES names, paths within PATH_MAX);
 * what it cannot open is left for the walk to refuse. 0 or -errno
 * (-ENOMEM; a missing upper is an empty m).
 */
int seal_marks_read(int dir_fd, struct seal_marks *m);

/* Frees what m holds; m is empty again. */
void seal_marks_free(struct seal_marks *m);

/*
 * The seal proper, in a sealer's worker: reads meta.json, lower/ and
 * rw/upper/ under dir_fd and the output JSON from output_fd, writes the
 * patch to patch_fd and the report to report_fd. marks, when not NULL,
 * say which directories are opaque (seal_marks_read); NULL reads each
 * directory's xattr as the walk meets it. 0 or -errno (-EINVAL: the
 * output is not an object of base64).
 */
int seal_compute(int dir_fd, const char *job, int output_fd, long output_kb,
    int patch_fd, int report_fd, const struct seal_marks *marks);

/* The sealed patch: 0, -ENOENT (no workspace), -EAGAIN (not sealed). */
int seal_patch(const char *root, const char *job, char **ret, size_t *ret_len);

/* The sealed report: 0, -ENOENT, -EAGAIN, as seal_patch. */
int seal_report(const char *root, const char *job, json_t **ret);

#endif
