/*
 * Sealing a workspace once its job has stopped: the patch of what the job
 * wrote and the report that judges it, written beside the workspace
 * (patch, report.json) and read back by the API. A seal interrupted (the
 * hatch killed) leaves nothing half written and can simply run again.
 */
#ifndef CORDON_HATCH_SEAL_H
#define CORDON_HATCH_SEAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SEAL_DEFAULT_OUTPUT_KB 1024
#define SEAL_MAX_OUTPUT_KB 65536

/* Who sealed: the child's pid, and its Seccomp_filters and NoNewPrivs as
 * it read them from its own /proc/self/status once confined (-1 unknown),
 * and whether a socket(2) it tried then was refused. */
struct seal_child {
	long pid;
	long seccomp_filters;
	long no_new_privs;
	bool socket_refused;
};

/*
 * Seals job's workspace under root, in a child forked for it and
 * confined (confine_seal), waited for at most 300 s. output, when not
 * NULL, is the job's output as the launcher captured it: {"stdout":
 * base64, "stderr": base64}, capped at output_kb each in the report's
 * envelope. A workspace already sealed answers its report again (child
 * untouched). *ret gets the report; *child, when not NULL, who sealed. 0,
 * -ENOENT (no workspace), -EINVAL (output not base64), -ETIMEDOUT, -EIO
 * (the child died), or -errno.
 */
int seal_workspace(const char *root, const char *job, const json_t *output,
    long output_kb, json_t **ret, struct seal_child *child);

/* The sealed patch: 0, -ENOENT (no workspace), -EAGAIN (not sealed). */
int seal_patch(const char *root, const char *job, char **ret, size_t *ret_len);

/* The sealed report: 0, -ENOENT, -EAGAIN, as seal_patch. */
int seal_report(const char *root, const char *job, json_t **ret);

#endif
