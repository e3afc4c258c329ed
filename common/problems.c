/*
 * Building problem lists.
 */
#include "problems.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Drops an incomplete UTF-8 sequence from the end of s. Names and values
 * come from jansson, so valid UTF-8; a cut at a byte count (%.64s, a full
 * buffer) can split the last character, and jansson refuses such a string.
 */
static void
utf8_trim_tail(char *s)
{
	size_t n = strlen(s), i = n, need;
	unsigned char lead;

	while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return;
	lead = (unsigned char)s[i - 1];
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

void
problems_add(json_t *list, const char *field, const char *fmt, ...)
{
	char name[200], msg[300];
	va_list ap;
	json_t *p;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(name, sizeof(name), "%s", field);
	utf8_trim_tail(name);
	utf8_trim_tail(msg);
	p = json_pack("{s:s, s:s}", "field", name, "problem", msg);
	/* A problem is never dropped: that would let the input through. */
	if (p == NULL)
		p = json_pack("{s:s, s:s}", "field", "", "problem",
		    "not valid UTF-8");
	json_array_append_new(list, p);
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
