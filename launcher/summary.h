/*
 * What the launcher's one-line summary says about a result beyond its
 * figures: why the hatch's verdict is what it is, what return.exclude
 * left out of the patch, and how the revocations of its upstream
 * credentials went.
 */
#ifndef CORDON_SUMMARY_H
#define CORDON_SUMMARY_H

#include <jansson.h>
#include <stddef.h>

/*
 * Why the seal's report (the hatch's JSON, borrowed; NULL when there is
 * none) has its verdict: the first flag of that verdict as "<flag>
 * <path>", and "and N more" when other flags share it, into out (always
 * NUL-terminated). "" for a clean verdict or a report without flags.
 */
void summary_verdict_reason(const json_t *report, char *out, size_t len);

/*
 * How many paths the manifest's return.exclude left out of the patch, as
 * the report (borrowed; NULL: none) counts them: "N excluded by
 * return.exclude (B bytes)" into out (always NUL-terminated), "" when
 * none was.
 */
void summary_excluded(const json_t *report, char *out, size_t len);

/*
 * The job's upstream credentials revoked at their issuers, as
 * stoppath_upstream_json lists them (borrowed): ", N upstream
 * credential(s) revoked at their issuers" and, when some failed, ", F
 * REVOCATION(S) FAILED", into out (always NUL-terminated); "" when the
 * job had none.
 */
void summary_upstream(const json_t *list, char *out, size_t len);

#endif
