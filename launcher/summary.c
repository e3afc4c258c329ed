/*
 * summary_verdict_reason: the flag behind a verdict, for the summary line
 * of `cordon run` (a person reads it before opening the report). Only
 * listed flags are counted; flags_omitted stays the report's to say.
 * summary_excluded: the count of what return.exclude left out, so that
 * nothing leaves the patch without the summary saying so.
 */
#include "summary.h"

#include <stdio.h>
#include <string.h>

void
summary_verdict_reason(const json_t *report, char *out, size_t len)
{
	const char *verdict =
	    json_string_value(json_object_get(report, "verdict"));
	const json_t *first = NULL, *f;
	size_t i, more = 0;

	if (len == 0)
		return;
	out[0] = '\0';
	if (verdict == NULL || strcmp(verdict, "clean") == 0)
		return;
	json_array_foreach(json_object_get(report, "flags"), i, f)
	{
		const char *v =
		    json_string_value(json_object_get(f, "verdict"));

		if (v == NULL || strcmp(v, verdict) != 0)
			continue;
		if (first == NULL)
			first = f;
		else
			more++;
	}
	if (first == NULL)
		return;
	const char *path = json_string_value(json_object_get(first, "path"));
	int n = snprintf(out, len, "%s %s",
	    json_string_value(json_object_get(first, "flag")) ?: "?",
	    path ?: "?");
	if (more > 0 && n >= 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, " and %zu more", more);
}

void
summary_excluded(const json_t *report, char *out, size_t len)
{
	const json_t *ex = json_object_get(report, "excluded");
	json_int_t count = json_integer_value(json_object_get(ex, "count"));
	json_int_t bytes = json_integer_value(json_object_get(ex, "bytes"));

	if (len == 0)
		return;
	out[0] = '\0';
	if (count <= 0)
		return;
	snprintf(out, len, "%lld excluded by return.exclude (%lld bytes)",
	    (long long)count, (long long)bytes);
}

void
summary_upstream(const json_t *list, char *out, size_t len)
{
	size_t n = json_array_size(list), failed = 0, i;
	json_t *e;
	int k;

	if (len == 0)
		return;
	out[0] = '\0';
	if (n == 0)
		return;
	json_array_foreach(list, i, e)
	{
		if (!json_is_true(json_object_get(e, "ok")))
			failed++;
	}
	k = snprintf(out, len,
	    ", %zu upstream credential(s) revoked at their issuers",
	    n - failed);
	if (failed > 0 && k >= 0 && (size_t)k < len)
		snprintf(out + k, len - (size_t)k, ", %zu REVOCATION(S) FAILED",
		    failed);
}
