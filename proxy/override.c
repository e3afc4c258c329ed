/*
 * The method override readers of override.h. Each reads a name into a
 * small buffer, decoded as the framework would (percent-encoding, '+' a
 * space in a form, a JSON string's escapes), and asks whether PHP or
 * Rack would read it as "_method"; a longer name is not one.
 */
#include "override.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_READ 32

/* Whether the decoded name n[0..len) is read as _method. */
static bool
is_override(const char *n, size_t len)
{
	/* PHP strips leading spaces, then makes '.', ' ' and an unclosed
	 * '[' an '_'. */
	while (len > 0 && *n == ' ') {
		n++;
		len--;
	}
	return len == 7 && (n[0] == '_' || n[0] == '.' || n[0] == '[') &&
	    strncasecmp(n + 1, "method", 6) == 0;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes p[0..len) (%HH, and '+' as a space when plus) into out, at
 * most NAME_MAX_READ bytes: the length, or NAME_MAX_READ + 1 when
 * longer. */
static size_t
decode(const char *p, size_t len, bool plus, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)p[i];
		if (c == '%' && i + 2 < len && hexval(p[i + 1]) >= 0 &&
		    hexval(p[i + 2]) >= 0) {
			c = hexval(p[i + 1]) * 16 + hexval(p[i + 2]);
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		if (n == NAME_MAX_READ)
			return NAME_MAX_READ + 1;
		out[n++] = (char)c;
	}
	return n;
}

enum override_kind
override_kind_of(const char *ctype, size_t len)
{
	static const char form[] = "application/x-www-form-urlencoded";
	static const char multi[] = "multipart/";

	if (ctype == NULL)
		return OVERRIDE_FORM;
	while (len > 0 && (*ctype == ' ' || *ctype == '\t')) {
		ctype++;
		len--;
	}
	if (len == 0)
		return OVERRIDE_FORM;
	if (len >= sizeof(form) - 1 &&
	    strncasecmp(ctype, form, sizeof(form) - 1) == 0)
		return OVERRIDE_FORM;
	if (len >= sizeof(multi) - 1 &&
	    strncasecmp(ctype, multi, sizeof(multi) - 1) == 0)
		return OVERRIDE_MULTIPART;
	/* application/json, text/json, application/...+json */
	for (size_t i = 0; i + 4 <= len && ctype[i] != ';'; i++)
		if (strncasecmp(ctype + i, "json", 4) == 0)
			return OVERRIDE_JSON;
	return OVERRIDE_NONE;
}

bool
override_in_form(const char *q, size_t len)
{
	char name[NAME_MAX_READ];

	for (size_t at = 0; at < len;) {
		size_t end = at;
		while (end < len && q[end] != '&' && q[end] != ';' &&
		    q[end] != '=')
			end++;
		size_t n = decode(q + at, end - at, true, name);
		if (n <= NAME_MAX_READ && is_override(name, n))
			return true;
		while (end < len && q[end] != '&' && q[end] != ';')
			end++;
		at = end + 1;
	}
	return false;
}

bool
override_in_multipart(const char *b, size_t len)
{
	char name[NAME_MAX_READ];

	for (size_t i = 0; i + 4 < len; i++) {
		if (strncasecmp(b + i, "name", 4) != 0)
			continue;
		/* A parameter of its own: after ';' or a space, not
		 * filename= or another word ending so. */
		if (i > 0 && b[i - 1] != ';' && b[i - 1] != ' ' &&
		    b[i - 1] != '\t')
			continue;
		size_t j = i + 4;
		while (j < len && (b[j] == ' ' || b[j] == '\t'))
			j++;
		if (j >= len || b[j] != '=')
			continue;
		j++;
		while (j < len && (b[j] == ' ' || b[j] == '\t'))
			j++;
		size_t start = j, end;
		if (j < len && b[j] == '"') {
			start = ++j;
			while (j < len && b[j] != '"' && b[j] != '\r' &&
			    b[j] != '\n')
				j++;
		} else {
			while (j < len && b[j] != ';' && b[j] != ' ' &&
			    b[j] != '\t' && b[j] != '\r' && b[j] != '\n')
				j++;
		}
		end = j;
		size_t n = decode(b + start, end - start, false, name);
		if (n <= NAME_MAX_READ && is_override(name, n))
			return true;
	}
	return false;
}

/* Reads the JSON string whose opening quote is b[*at] into name (its
 * escapes read, at most NAME_MAX_READ bytes): the decoded length (or
 * NAME_MAX_READ + 1), *at past its closing quote (or len). */
static size_t
json_string(const char *b, size_t len, size_t *at, char *name)
{
	size_t i = *at + 1, n = 0;

	while (i < len && b[i] != '"') {
		int c = (unsigned char)b[i++];
		if (c == '\\' && i < len) {
			int e = (unsigned char)b[i++];
			c = e == 'n'   ? '\n'
			    : e == 't' ? '\t'
			    : e == 'r' ? '\r'
			    : e == 'b' ? '\b'
			    : e == 'f' ? '\f'
				       : e;
			if (e == 'u' && i + 4 <= len) {
				int v = 0;
				for (size_t k = 0; k < 4 && v >= 0; k++) {
					int h = hexval(b[i + k]);
					v = h < 0 ? -1 : v * 16 + h;
				}
				if (v >= 0) {
					c = v < 256 ? v : 0xff;
					i += 4;
				}
			}
		}
		if (n < NAME_MAX_READ + 1) {
			if (n < NAME_MAX_READ)
				name[n] = (char)c;
			n++;
		}
	}
	*at = i < len ? i + 1 : len;
	return n;
}

bool
override_in_json(const char *b, size_t len)
{
	char name[NAME_MAX_READ];

	for (size_t i = 0; i < len;) {
		if (b[i] != '"') {
			i++;
			continue;
		}
		size_t n = json_string(b, len, &i, name);
		size_t j = i;
		while (j < len &&
		    (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' ||
			b[j] == '\n'))
			j++;
		if (j < len && b[j] == ':' && n <= NAME_MAX_READ &&
		    is_override(name, n))
			return true;
	}
	return false;
}

bool
override_in_body(enum override_kind kind, const char *b, size_t len)
{
	switch (kind) {
	case OVERRIDE_FORM:
		return override_in_form(b, len);
	case OVERRIDE_MULTIPART:
		return override_in_multipart(b, len);
	case OVERRIDE_JSON:
		return override_in_json(b, len);
	case OVERRIDE_NONE:
		break;
	}
	return false;
}
