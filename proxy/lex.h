/*
 * The lexical pieces of HTTP/1.1 (RFC 9110 5.6) that the request parser
 * and the response parser share: tokens, optional whitespace, the list
 * syntax of Connection, case-insensitive names.
 */
#ifndef CORDON_PROXY_LEX_H
#define CORDON_PROXY_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

static inline bool
lex_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static inline bool
lex_token(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lex_tchar((unsigned char)s[i]))
			return false;
	return true;
}

static inline bool
lex_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/* s[0..n) equals the NUL-terminated lit, ignoring ASCII case. */
static inline bool
lex_eq_nocase(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

/* name[0..n) is one of the tokens of the comma list v[0..vn). */
static inline bool
lex_list_has(const char *v, size_t vn, const char *name, size_t n)
{
	size_t i = 0;

	while (i < vn) {
		size_t s;
		while (i < vn && (lex_ows((unsigned char)v[i]) || v[i] == ','))
			i++;
		s = i;
		while (i < vn && v[i] != ',' && !lex_ows((unsigned char)v[i]))
			i++;
		if (i - s == n && strncasecmp(v + s, name, n) == 0)
			return true;
	}
	return false;
}

/* A control character that no field value may hold (HTAB may). */
static inline bool
lex_bad_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

/*
 * Splits a field line s[0..n) (without its CRLF) into a name s[0..*ret_nlen)
 * and a value s[*ret_vs..*ret_ve), whitespace around it trimmed: NULL, or
 * the refusal (obs_fold, malformed, space_before_colon, bad_header_name,
 * bad_header_value). Requests and responses are read the same way.
 */
static inline const char *
lex_field_line(const char *s, size_t n, size_t *ret_nlen, size_t *ret_vs,
    size_t *ret_ve)
{
	const char *colon;
	size_t nlen, vs, ve;

	if (lex_ows((unsigned char)s[0]))
		return "obs_fold";
	colon = memchr(s, ':', n);
	if (colon == NULL)
		return "malformed";
	nlen = (size_t)(colon - s);
	if (nlen > 0 && lex_ows((unsigned char)s[nlen - 1]))
		return "space_before_colon";
	if (!lex_token(s, nlen))
		return "bad_header_name";
	vs = nlen + 1;
	ve = n;
	while (vs < ve && lex_ows((unsigned char)s[vs]))
		vs++;
	while (ve > vs && lex_ows((unsigned char)s[ve - 1]))
		ve--;
	for (size_t i = vs; i < ve; i++)
		if (lex_bad_ctl((unsigned char)s[i]))
			return "bad_header_value";
	*ret_nlen = nlen;
	*ret_vs = vs;
	*ret_ve = ve;
	return NULL;
}

/* A Content-Length value, 1*DIGIT up to max, into *ret: true, or false
 * for anything else (the caller's "bad_cl"). */
static inline bool
lex_content_length(const char *v, size_t n, uint64_t max, uint64_t *ret)
{
	uint64_t cl = 0;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		cl = cl * 10 + (uint64_t)(v[i] - '0');
		if (cl > max)
			return false;
	}
	*ret = cl;
	return true;
}

/*
 * A Connection value: a comma list of tokens, empty elements allowed.
 * Sets *close and *keep when it names close or keep-alive; NULL, or the
 * refusal "bad_connection".
 */
static inline const char *
lex_connection(const char *v, size_t n, bool *close, bool *keep)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (lex_ows((unsigned char)v[i]) || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',' && !lex_ows((unsigned char)v[i]))
			i++;
		e = i;
		while (i < n && lex_ows((unsigned char)v[i]))
			i++;
		if (i < n && v[i] != ',')
			return "bad_connection";
		if (e == s)
			continue;
		if (!lex_token(v + s, e - s))
			return "bad_connection";
		if (lex_eq_nocase(v + s, e - s, "close"))
			*close = true;
		else if (lex_eq_nocase(v + s, e - s, "keep-alive"))
			*keep = true;
	}
	return NULL;
}

#endif
