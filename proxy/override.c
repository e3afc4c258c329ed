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
	/* PHP reads a name as a C string (a NUL ends it), strips leading
	 * spaces, then makes '.', ' ' and an unclosed '[' an '_'. */
	const char *nul = memchr(n, '\0', len);
	if (nul != NULL)
		len = (size_t)(nul - n);
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

/* Whether ctype[0..len) has a charset parameter other than one whose
 * ASCII bytes are ASCII (body-parser decodes utf-16, utf-7 with
 * iconv-lite, where "_method" may be +AF8-method). */
static bool
charset_unreadable(const char *ctype, size_t len)
{
	static const char *const ok[] = { "utf-8", "utf8", "us-ascii",
		"iso-8859-1", "latin1" };

	for (size_t i = 0; i + 8 <= len; i++) {
		if (strncasecmp(ctype + i, "charset=", 8) != 0)
			continue;
		size_t at = i + 8, end;
		if (at < len && ctype[at] == '"')
			at++;
		for (end = at; end < len && ctype[end] != '"' &&
		     ctype[end] != ';' && ctype[end] != ' ' &&
		     ctype[end] != '\t' && ctype[end] != ',';
		     end++)
			;
		bool known = false;
		for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
			known |= end - at == strlen(ok[k]) &&
			    strncasecmp(ctype + at, ok[k], end - at) == 0;
		if (!known)
			return true;
	}
	return false;
}

enum override_kind
override_kind_of(const char *ctype, size_t len)
{
	static const char form[] = "application/x-www-form-urlencoded";
	static const char multi[] = "multipart/";
	unsigned kind = OVERRIDE_NONE;

	if (ctype == NULL)
		return OVERRIDE_FORM;
	while (len > 0 && (*ctype == ' ' || *ctype == '\t')) {
		ctype++;
		len--;
	}
	/* Rack: an empty media type (nothing before ';' or ',') is a
	 * form, as no type is. */
	if (len == 0 || *ctype == ';' || *ctype == ',')
		kind |= OVERRIDE_FORM;
	else if (len >= sizeof(form) - 1 &&
	    strncasecmp(ctype, form, sizeof(form) - 1) == 0)
		kind |= OVERRIDE_FORM;
	else if (len >= sizeof(multi) - 1 &&
	    strncasecmp(ctype, multi, sizeof(multi) - 1) == 0)
		kind |= OVERRIDE_MULTIPART;
	/* application/json, text/json, application/...+json; Laravel's
	 * isJson takes "/json" or "+json" anywhere, parameters too. */
	for (size_t i = 0; i + 4 <= len; i++)
		if (strncasecmp(ctype + i, "json", 4) == 0 &&
		    (memchr(ctype, ';', i) == NULL ||
			(i > 0 &&
			    (ctype[i - 1] == '/' || ctype[i - 1] == '+'))))
			kind |= OVERRIDE_JSON;
	if (kind != OVERRIDE_NONE && charset_unreadable(ctype, len))
		kind |= OVERRIDE_UNREADABLE;
	return (enum override_kind)kind;
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
		/* RFC 2231's name*=charset'lang'value (busboy reads it). */
		bool ext = j < len && b[j] == '*';
		j += ext;
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
		if (ext) {
			const char *q1 = memchr(b + start, '\'', end - start);
			const char *q2 = q1 != NULL
			    ? memchr(q1 + 1, '\'', (size_t)(b + end - q1 - 1))
			    : NULL;
			if (q2 != NULL)
				start = (size_t)(q2 + 1 - b);
		}
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

	/* A JSON text in UTF-8 holds no NUL: one in UTF-16 or UTF-32
	 * (Python's json and body-parser read them) is not read here. */
	if (memchr(b, '\0', len) != NULL)
		return true;
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
	unsigned k = (unsigned)kind;

	if (k & OVERRIDE_UNREADABLE)
		return true;
	return ((k & OVERRIDE_FORM) && override_in_form(b, len)) ||
	    ((k & OVERRIDE_MULTIPART) && override_in_multipart(b, len)) ||
	    ((k & OVERRIDE_JSON) && override_in_json(b, len));
}
