/*
 * Problem lists: the [{"field": ..., "problem": ...}] arrays a 422 answer
 * carries, so that a caller fixes everything in one round. Every service
 * and `cordon lint` build them the same way with these.
 */
#ifndef CORDON_PROBLEMS_H
#define CORDON_PROBLEMS_H

#include <jansson.h>
#include <stddef.h>

/* Appends {"field": field, "problem": the formatted text} to list. */
void problems_add(json_t *list, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Appends "unknown field" for each key of the object o that is not among
 * the n allowed, naming it "<where>.<key>" ("<key>" when where is ""),
 * the key cut at 64 bytes. A typo must not pass as "no restriction".
 */
void problems_unknown_keys(const json_t *o, const char *where,
    const char *const *allowed, size_t n, json_t *list);

#endif
