/*
 * Building problem lists.
 */
#include "problems.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void
problems_add(json_t *list, const char *field, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(list,
	    json_pack("{s:s, s:s}", "field", field, "problem", msg));
}

void
problems_unknown_keys(const json_t *o, const char *where,
    const char *const *allowed, size_t n, json_t *list)
{
	const char *key;
	json_t *v;
	char field[160];

	json_object_foreach((json_t *)o, key, v)
	{
		bool known = false;

		for (size_t i = 0; i < n && !known; i++)
			known = strcmp(key, allowed[i]) == 0;
		if (known)
			continue;
		snprintf(field, sizeof(field), "%s%s%.64s", where,
		    where[0] ? "." : "", key);
		problems_add(list, field, "unknown field");
	}
}
