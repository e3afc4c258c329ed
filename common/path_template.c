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

/* --- query bindings ------------------------------------------------------- */

static bool
query_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* a[0..an) and b[0..bn) as a lenient server may read names: case folded,
 * '.' and '-' as '_' (PHP's $_GET, some frameworks' snake_case). */
static bool
query_names_alike(const char *a, size_t an, const char *b, size_t bn)
{
	if (an != bn)
		return false;
	for (size_t i = 0; i < an; i++) {
		char x = a[i], y = b[i];
		x = (x >= 'A' && x <= 'Z') ? (char)(x - 'A' + 'a') : x;
		y = (y >= 'A' && y <= 'Z') ? (char)(y - 'A' + 'a') : y;
		x = (x == '.' || x == '-') ? '_' : x;
		y = (y == '.' || y == '-') ? '_' : y;
		if (x != y)
			return false;
	}
	return true;
}

int
path_template_query_parse(const json_t *query,
    struct path_template_query out[PATH_TEMPLATE_MAX], size_t *ret_n,
    const char **ret_why)
{
	const char *key;
	const json_t *v;
	size_t n = 0;

	*ret_n = 0;
	if (!json_is_object(query)) {
		*ret_why = "not_an_object";
		return -EINVAL;
	}
	json_object_foreach((json_t *)query, key, v)
	{
		size_t kl = strlen(key), pl;
		const char *s = json_string_value(v);

		if (n == PATH_TEMPLATE_MAX) {
			*ret_why = "too_many";
			return -EINVAL;
		}
		if (kl == 0 || kl > PATH_TEMPLATE_NAME_MAX ||
		    strspn(key,
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			"0123456789_.-") != kl) {
			*ret_why = "bad_name";
			return -EINVAL;
		}
		pl = s != NULL ? strlen(s) : 0;
		if (s == NULL || pl < 3 || pl - 2 > PATH_TEMPLATE_NAME_MAX ||
		    s[0] != '{' || s[pl - 1] != '}') {
			*ret_why = "not_a_placeholder";
			return -EINVAL;
		}
		for (size_t i = 1; i + 1 < pl; i++)
			if (!name_char(s[i])) {
				*ret_why = "not_a_placeholder";
				return -EINVAL;
			}
		for (size_t k = 0; k < n; k++)
			if (query_names_alike(out[k].name, strlen(out[k].name),
				key, kl)) {
				*ret_why = "same_name";
				return -EINVAL;
			}
		memcpy(out[n].name, key, kl + 1);
		memcpy(out[n].param, s + 1, pl - 2);
		out[n].param[pl - 2] = '\0';
		n++;
	}
	*ret_n = n;
	return 0;
}

bool
path_template_query_match(const struct path_template_query *b, size_t n,
    const char *q, size_t len, const json_t *params, const char **ret_why)
{
	char value[PATH_TEMPLATE_MAX][PATH_TEMPLATE_VALUE_MAX + 1];
	unsigned seen[PATH_TEMPLATE_MAX] = { 0 };
	bool wrong[PATH_TEMPLATE_MAX] = { false };

	if (n == 0)
		return true;
	if (n > PATH_TEMPLATE_MAX) {
		*ret_why = "param_mismatch";
		return false;
	}
	for (size_t k = 0; k < n; k++) {
		const json_t *v =
		    params != NULL ? json_object_get(params, b[k].param) : NULL;
		if (v == NULL) {
			*ret_why = "param_missing";
			return false;
		}
		if (!path_template_value_ok(v, value[k])) {
			*ret_why = "param_value";
			return false;
		}
	}
	if (memchr(q, ';', len) != NULL) {
		*ret_why = "query_separator";
		return false;
	}
	for (size_t at = 0; at < len;) {
		const char *amp = memchr(q + at, '&', len - at);
		size_t pl = amp != NULL ? (size_t)(amp - (q + at)) : len - at;
		const char *p = q + at, *eq = memchr(p, '=', pl);
		size_t nl = eq != NULL ? (size_t)(eq - p) : pl;

		at += pl + 1;
		if (pl == 0)
			continue; /* "a=1&&b=2": an empty pair names nothing */
		if (nl == 0) {
			*ret_why = "query_name";
			return false;
		}
		for (size_t i = 0; i < nl; i++)
			if (!query_name_char(p[i])) {
				*ret_why = "query_name";
				return false;
			}
		for (size_t k = 0; k < n; k++) {
			size_t bl = strlen(b[k].name);
			if (!query_names_alike(p, nl, b[k].name, bl))
				continue;
			if (memcmp(p, b[k].name, bl) != 0) {
				*ret_why = "query_spelling";
				return false;
			}
			seen[k]++;
			const char *val = eq != NULL ? eq + 1 : NULL;
			size_t vl = eq != NULL ? pl - nl - 1 : 0;
			wrong[k] |= val == NULL || vl != strlen(value[k]) ||
			    memcmp(val, value[k], vl) != 0;
		}
	}
	for (size_t k = 0; k < n; k++) {
		if (seen[k] > 1) {
			*ret_why = "query_duplicate";
			return false;
		}
		if (seen[k] == 0) {
			*ret_why = "query_missing";
			return false;
		}
		if (wrong[k]) {
			*ret_why = "param_mismatch";
			return false;
		}
	}
	return true;
}
