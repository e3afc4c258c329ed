/*
 * Prometheus text exposition helpers. A full buffer truncates the answer
 * rather than failing it: figures are for people, and the cap is generous.
 */
#include "metrics.h"

#include <inttypes.h>

void
metrics_header(struct buf *b, const char *name, const char *type,
    const char *help)
{
	(void)buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
	    type);
}

void
metrics_sample(struct buf *b, const char *name, const char *labels,
    uint64_t value)
{
	if (labels != NULL)
		(void)buf_printf(b, "%s{%s} %" PRIu64 "\n", name, labels,
		    value);
	else
		(void)buf_printf(b, "%s %" PRIu64 "\n", name, value);
}

void
metrics_one(struct buf *b, const char *name, const char *type, const char *help,
    uint64_t value)
{
	metrics_header(b, name, type, help);
	metrics_sample(b, name, NULL, value);
}
