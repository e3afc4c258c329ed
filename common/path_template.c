/*
 * The templates of path_template.h. A template is walked once, its
 * literal bytes compared as they are and each placeholder replaced by a
 * value that passed path_template_value_ok: the match is as strict as a
 * plain prefix, and a value can only ever be one segment.
 */
#include "path_template.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool
path_template_is(const char *prefix)
{
	return strchr(prefix, '{') != NULL || strchr(prefix, '}') != NULL;
}

static bool
name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
	    c == '.' || c == '-';
}

int
path_template_parse(const char *prefix,
    char names[][PATH_TEMPLATE_NAME_MAX + 1], size_t *ret_n,
    const char **ret_why)
{
	size_t n = 0;

	for (const char *p = prefix; *p != '\0'; p++) {
		size_t len;

		if (*p == '}') {
			*ret_why = "unclosed";
			return -EINVAL;
		}
		if (*p != '{')
			continue;
		if (p == prefix || p[-1] != '/') {
			*ret_why = "not_a_segment";
			return -EINVAL;
		}
		len = 0;
		while (name_char(p[1 + len]))
			len++;
		if (p[1 + len] != '}') {
			*ret_why = p[1 + len] == '\0' ? "unclosed" : "bad_name";
			return -EINVAL;
		}
		if (len == 0 || len > PATH_TEMPLATE_NAME_MAX) {
			*ret_why = "bad_name";
			return -EINVAL;
		}
		if (p[2 + len] != '/' && p[2 + len] != '\0') {
			*ret_why = "not_a_segment";
			return -EINVAL;
		}
		if (n == PATH_TEMPLATE_MAX) {
			*ret_why = "too_many";
			return -EINVAL;
		}
		if (names != NULL) {
			memcpy(names[n], p + 1, len);
			names[n][len] = '\0';
		}
		n++;
		p += 1 + len;
	}
	if (ret_n != NULL)
		*ret_n = n;
	return 0;
}

bool
path_template_value_ok(const json_t *v, char out[PATH_TEMPLATE_VALUE_MAX + 1])
{
	char tmp[PATH_TEMPLATE_VALUE_MAX + 1];
	const char *s;
	size_t len, dots = 0;

	if (json_is_integer(v)) {
		int w = snprintf(tmp, sizeof(tmp), "%lld",
		    (long long)json_integer_value(v));
		if (w < 0 || (size_t)w >= sizeof(tmp))
			return false;
		s = tmp;
		len = (size_t)w;
	} else if (json_is_string(v)) {
		s = json_string_value(v);
		len = json_string_length(v);
		/* A NUL inside is where a C reader would stop. */
		if (strlen(s) != len)
			return false;
	} else
		return false;
	if (len == 0 || len > PATH_TEMPLATE_VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			(c >= '0' && c <= '9') || c == '.' || c == '_' ||
			c == '~' || c == '-'))
			return false;
		dots += c == '.';
	}
	/* "." and ".." are segments of their own kind; "x." is "x" to a
	 * Windows server. */
	if (dots == len || s[len - 1] == '.')
		return false;
	if (out != NULL) {
		memmove(out, s, len);
		out[len] = '\0';
	}
	return true;
}

bool
path_template_match(const char *prefix, const char *path, size_t len,
    const json_t *params, const char **ret_why)
{
	size_t at = 0;

	for (const char *p = prefix; *p != '\0'; p++) {
		char name[PATH_TEMPLATE_NAME_MAX + 1],
		    value[PATH_TEMPLATE_VALUE_MAX + 1];
		const json_t *v;
		size_t n = 0, vl;

		if (*p != '{') {
			if (at >= len || path[at] != *p) {
				*ret_why = "param_mismatch";
				return false;
			}
			at++;
			continue;
		}
		while (p[1 + n] != '}' && p[1 + n] != '\0' &&
		    n < PATH_TEMPLATE_NAME_MAX)
			n++;
		if (p[1 + n] != '}') {
			/* Not a template path_template_parse took. */
			*ret_why = "param_mismatch";
			return false;
		}
		memcpy(name, p + 1, n);
		name[n] = '\0';
		p += 1 + n;
		v = params != NULL ? json_object_get(params, name) : NULL;
		if (v == NULL) {
			*ret_why = "param_missing";
			return false;
		}
		if (!path_template_value_ok(v, value)) {
			*ret_why = "param_value";
			return false;
		}
		vl = strlen(value);
		/* The value, then a segment's end: "widgets-evil" is not
		 * "widgets". */
		if (len - at < vl || memcmp(path + at, value, vl) != 0 ||
		    (at + vl < len && path[at + vl] != '/')) {
			*ret_why = "param_mismatch";
			return false;
		}
		at += vl;
	}
	return true;
}
