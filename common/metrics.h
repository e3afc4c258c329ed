/*
 * Prometheus text exposition: each service writes its own figures into the
 * /metrics answer with these, after the ones the HTTP glue keeps.
 */
#ifndef CORDON_METRICS_H
#define CORDON_METRICS_H

#include "buf.h"

#include <stdint.h>

/* "# HELP name help" and "# TYPE name type" ("counter", "gauge"). */
void metrics_header(struct buf *b, const char *name, const char *type,
    const char *help);

/* "name{labels} value"; labels is 'k="v",k2="v2"' or NULL. */
void metrics_sample(struct buf *b, const char *name, const char *labels,
    uint64_t value);

/* A header and one sample: the common case of an unlabelled figure. */
void metrics_one(struct buf *b, const char *name, const char *type,
    const char *help, uint64_t value);

#endif
