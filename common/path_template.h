/*
 * Param-templated path prefixes (credentials.md, "Param binding"): an
 * egress rule's prefix may name a parameter of the capability whose token
 * the request presents, "/repos/acme/{repo}/", so that a token for
 * repo=widgets reaches /repos/acme/widgets/... and nothing beside it. The
 * broker checks a template and the values it may take when a manifest is
 * put (manifest.c); the proxy matches a request's path with the token's
 * own params (verdict.c). A placeholder stands for one whole segment, and
 * a value is a plain segment: nothing an upstream could decode or split
 * into another path. Pure functions, no I/O.
 */
#ifndef CORDON_PATH_TEMPLATE_H
#define CORDON_PATH_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The longest parameter name in a placeholder, and value of one. */
#define PATH_TEMPLATE_NAME_MAX 64
#define PATH_TEMPLATE_VALUE_MAX 128
/* The most placeholders in one prefix. */
#define PATH_TEMPLATE_MAX 8

/* Whether prefix has a placeholder ('{') at all. */
bool path_template_is(const char *prefix);

/*
 * Checks the placeholders of prefix: each "{name}" with name of
 * [a-z0-9_.-] (1 to PATH_TEMPLATE_NAME_MAX), right after a '/' and
 * followed by '/' or the prefix's end, no brace outside one, at most
 * PATH_TEMPLATE_MAX. On success 0 and, when names is not NULL, the names
 * in order (NUL-terminated) and *ret_n their count; -EINVAL with
 * *ret_why a constant reason ("unclosed", "bad_name", "not_a_segment",
 * "too_many") otherwise.
 */
int path_template_parse(const char *prefix,
    char names[][PATH_TEMPLATE_NAME_MAX + 1], size_t *ret_n,
    const char **ret_why);

/*
 * Whether a parameter value may stand in a path segment: a JSON string
 * of 1 to PATH_TEMPLATE_VALUE_MAX bytes of [A-Za-z0-9._~-], not all dots
 * and not ending in one (no "/", "%", ";", NUL, "..", nothing empty), or
 * a JSON integer (written in decimal). On success, when out is not NULL,
 * writes the segment's text to out (PATH_TEMPLATE_VALUE_MAX + 1 bytes).
 */
bool path_template_value_ok(const json_t *v,
    char out[PATH_TEMPLATE_VALUE_MAX + 1]);

/*
 * Matches path[0..len) (no query) against prefix with params (a JSON
 * object, may be NULL): true when the path starts with prefix, each
 * placeholder replaced by its param's value, byte for byte (no case
 * folding, no decoding), a placeholder's value ending at a '/' or the
 * path's end. false with *ret_why "param_missing" (a placeholder's param
 * is not in params), "param_value" (its value cannot stand in a path) or
 * "param_mismatch" (the path is elsewhere).
 */
bool path_template_match(const char *prefix, const char *path, size_t len,
    const json_t *params, const char **ret_why);

/*
 * Query bindings (credentials.md, "Param binding"): a rule's "query",
 * {"repo": "{repo}"}, says that the request's query carries parameter
 * "repo" once, with the value of the token's param "repo", byte for byte.
 */
struct path_template_query {
	char name[PATH_TEMPLATE_NAME_MAX + 1]; /* the query's parameter */
	char param[PATH_TEMPLATE_NAME_MAX + 1]; /* the token's param */
};

/*
 * Reads a rule's "query" (a JSON object) into out: each key a parameter
 * name of [A-Za-z0-9_.-] (1 to PATH_TEMPLATE_NAME_MAX), each value one
 * placeholder "{param}" with a name as path_template_parse takes, no two
 * names alike once read as a lenient server may (case folded, '.' and '-'
 * as '_'), at most PATH_TEMPLATE_MAX. 0 with *ret_n, or -EINVAL with
 * *ret_why "not_an_object", "too_many", "bad_name", "not_a_placeholder"
 * or "same_name" (static).
 */
int path_template_query_parse(const json_t *query,
    struct path_template_query out[PATH_TEMPLATE_MAX], size_t *ret_n,
    const char **ret_why);

/*
 * Matches a request's query q[0..len) (after the '?', without the
 * fragment; len 0 for none) against the n bindings b with params (a JSON
 * object, may be NULL). With no binding (n 0) every query matches. Else
 * true when every parameter name is plain ([A-Za-z0-9_.-], 1 or more: no
 * '%', '+', '[', nothing a server decodes into another name), no ';' is
 * in the query, and each bound name is there exactly once, spelt exactly
 * (no other case, no '.' or '-' for '_'), with its param's value (a value
 * path_template_value_ok takes) byte for byte. false with *ret_why
 * "query_separator", "query_name", "query_spelling", "query_duplicate",
 * "query_missing", "param_missing", "param_value" or "param_mismatch".
 */
bool path_template_query_match(const struct path_template_query *b, size_t n,
    const char *q, size_t len, const json_t *params, const char **ret_why);

#endif
