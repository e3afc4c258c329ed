/*
 * The denial report's core, pure (no I/O): `cordon egress-report` feeds
 * it the manifests at the broker, each job's manifest and the rules of the
 * version it ran, and the proxy's decision lines; it groups the denials by
 * manifest, host, port, method, path and reason (counts, first and last
 * seen, the jobs), counts each rule's hits to find the stale ones, and
 * proposes the narrowest rules that would have allowed the denials seen at
 * least twice, as a proposed manifest and a unified diff of its JSON.
 * Nothing is applied: the proposal is text for a person to review.
 *
 * Narrow, and not steerable by the job whose denials it reads: a
 * proposed path is exactly a path the job asked for (a rule's prefix, so
 * what starts with it is allowed too), never a common prefix of several
 * and never "/"; past REPORT_PATHS_MAX paths on one host they are listed,
 * not proposed. A host no rule names is proposed only for the paths
 * REPORT_MIN_JOBS_NEW_HOST different jobs were denied (one job alone
 * could get its exfiltration host proposed); a path on a known host may
 * come from one job, and says so. Every proposed rule names its manifest
 * and how many jobs asked. Only no_rule, method and path (with no second reading)
 * are proposable; every other reason, a lookup that never connected, a
 * CONNECT whose method and path were not seen, an address instead of a
 * name and a line held past the proxy's budget are listed apart with why.
 */
#ifndef CORDON_REPORT_H
#define CORDON_REPORT_H

#include <jansson.h>
#include <stdint.h>

#define REPORT_MIN_REPEATS 2 /* denials of one request before a proposal */
#define REPORT_MIN_JOBS_NEW_HOST 2 /* jobs denied a path of a new host */
#define REPORT_PATHS_MAX 8 /* paths proposed for one host and port */
#define REPORT_GROUPS_MAX 20000 /* past it, denials are counted only */
#define REPORT_JOBS_SHOWN 16 /* jobs named in a group; the rest counted */

struct report;

/* A new report for the period [since_ms, until_ms] (as the lines' times
 * say; the caller selected them): NULL when out of memory. */
struct report *report_new(int64_t since_ms, int64_t until_ms);

void report_free(struct report *r);

/* A manifest to report on: its name, current version and body (copied).
 * 0, -EEXIST when given twice, -EINVAL when it has no egress array. */
int report_manifest(struct report *r, const char *name, int64_t version,
    const json_t *body);

/* A job seen in the log: its manifest and the egress rules of the
 * version it ran (copied; NULL when unknown: its allowed requests then
 * count as hits of no rule). A job of a manifest not given to
 * report_manifest is counted apart. 0 or -errno. */
int report_job(struct report *r, const char *job, const char *manifest,
    const json_t *egress);

/* One decision line of the proxy's log (borrowed). Lines of jobs not
 * given to report_job are counted as unattributed. 0 or -ENOMEM. */
int report_decision(struct report *r, const json_t *d);

/* The report as one JSON document (docs/operations.md describes it): a
 * new object, or NULL when out of memory. */
json_t *report_document(struct report *r);

/*
 * A unified diff (3 lines of context) of old_text and new_text, line by
 * line, with the labels on its ---/+++ lines: a new string ("" when they
 * are equal), or NULL when out of memory or either has more than 4,000
 * lines.
 */
char *report_unified_diff(const char *old_text, const char *new_text,
    const char *old_label, const char *new_label);

#endif
