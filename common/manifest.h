/*
 * Manifests: a job's definition, reviewed like code. The broker validates
 * each version it stores, and `cordon lint` does the same before anyone
 * sends one. Validation refuses everything docs/manifest.md lists and reports
 * every problem at once; the planes a new version touches answer the
 * review question "which of identity, reachability and return does this
 * change?".
 */
#ifndef CORDON_MANIFEST_H
#define CORDON_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define MANIFEST_MAX_EGRESS 12
#define MANIFEST_WARN_EGRESS 6
#define MANIFEST_MAX_TTL 900
/* The mint limits' defaults (manifest.md, "mint"). */
#define MANIFEST_MINT_MAX_TOKENS 256
#define MANIFEST_MINT_PER_MINUTE 60
#define MANIFEST_MINT_BURST 20

/*
 * Validates m against every rule. Appends each problem to problems as
 * {"field": "egress[2].host", "problem": "..."} and each warning to
 * warnings likewise. Returns true when there is no problem. name, when not
 * NULL, is the name the manifest is stored under and must match m's.
 */
bool manifest_validate(const json_t *m, const char *name, json_t *problems,
    json_t *warnings);

/* Whether an egress host is a package registry (or a wildcard covering
 * one): its rule needs "registry": true (docs/manifest.md). */
bool manifest_registry_host(const char *host);

/* The check of a manifest's "return" object (r not NULL) alone, for the
 * hatch, which reads it from the broker: the same problems, appended. */
void manifest_check_return(const json_t *r, json_t *problems);

/*
 * The one list of the variables the launcher gives every job besides the
 * manifest's env: "NAME=value", NULL-terminated, in the order set;
 * CORDON_JOB=<the job's id> is added per job. A manifest may set none of
 * these names, nor CORDON_JOB. HOME is the sandbox's SANDBOX_HOME.
 */
extern const char *const manifest_launcher_env[];

/*
 * The range and the default of the integer limit key ("wall_seconds",
 * "memory_mb", "pids", "disk_mb", "output_kb"): the one table of them,
 * which the broker applies, the launcher falls back on and
 * docs/manifest.md shows (check_env compares). 0, or -ENOENT for another
 * key.
 */
int manifest_limit_range(const char *key, long long *ret_min,
    long long *ret_max, long long *ret_default);

/* True when s is a valid manifest name: [a-z0-9][a-z0-9._-]{0,63}. */
bool manifest_name_ok(const char *s);

/*
 * The planes that a change from prev (NULL for a first version) to next
 * touches, as a new array of "identity", "reachability", "return".
 */
json_t *manifest_planes(const json_t *prev, const json_t *next);

/*
 * The canonical text of m (sorted keys, compact) and its sha256 in hex
 * (65 bytes with the NUL): the text to free(), or NULL.
 */
char *manifest_canonical(const json_t *m, char ret_sha256[65]);

/* The manifest's limits with defaults filled in: a new object. */
json_t *manifest_limits(const json_t *m);

/* A job's mint limits: tokens it may ever hold, and its rate. */
struct manifest_mint {
	int64_t max_tokens, per_minute, burst;
};

/* m's (validated) mint limits with the defaults filled in, into *ret. */
void manifest_mint(const json_t *m, struct manifest_mint *ret);

/* The capability named name in m, borrowed, or NULL. */
json_t *manifest_capability(const json_t *m, const char *name);

/* The longest "format" of an egress rule's "inject". */
#define MANIFEST_INJECT_FORMAT_MAX 512

/* Whether h may be the header an egress rule's "inject" sets: a token of
 * letters, digits and '-' (at most 64), neither Host nor a framing or hop
 * header (Content-Length, Transfer-Encoding, Connection, ...) nor
 * X-Cordon-*. */
bool manifest_inject_header_ok(const char *h);

/* Whether f may be an "inject" format: printable ASCII, at most
 * MANIFEST_INJECT_FORMAT_MAX bytes, exactly one "{secret}" and no other
 * brace. */
bool manifest_inject_format_ok(const char *f);

/* Egress rules with defaults filled in (port, tls, paths): a new array. */
json_t *manifest_egress(const json_t *m);

#endif
