/*
 * Method overrides a framework reads from a request's query or body
 * (credentials.md, "Method overrides"): Rails (Rack::MethodOverride),
 * Laravel and Symfony take a parameter _method of a POST form as the
 * request's method, Laravel also a JSON body's key, so a credential
 * injected on a rule that allows POST would go with DELETE. PHP makes a
 * parameter named ".method" or "[method" (and with leading spaces)
 * "_method"; those count too, in any case, with any byte
 * percent-encoded. Pure: no I/O, no allocation.
 */
#ifndef CORDON_PROXY_OVERRIDE_H
#define CORDON_PROXY_OVERRIDE_H

#include <stdbool.h>
#include <stddef.h>

/* The most body bytes held to be judged: a form bigger than this on an
 * injected request is refused (form_unjudged). Fits in conn.c's
 * READ_HIGH past the head. */
#define OVERRIDE_BODY_MAX (64 * 1024)

/* How a body is read for an override, by its Content-Type: the readers
 * of every framework that may read it, a set of these bits. */
enum override_kind {
	OVERRIDE_NONE = 0, /* a type no framework reads parameters from */
	OVERRIDE_FORM = 1, /* urlencoded, or no type (Rack reads it) */
	OVERRIDE_MULTIPART = 2,
	OVERRIDE_JSON = 4,
	/* with one of the above: a charset whose bytes are not ASCII's,
	 * so the body counts as an override unread */
	OVERRIDE_UNREADABLE = 8,
};

/* The kind of a body of Content-Type ctype[0..len) (NULL: none): a
 * media type Rack reads as a form (none, or empty before ';' or ','),
 * multipart/, "json" in the type or "/json" or "+json" anywhere
 * (Laravel), each bit of those that apply, and OVERRIDE_UNREADABLE
 * beside them for a charset other than utf-8, us-ascii, iso-8859-1. */
enum override_kind override_kind_of(const char *ctype, size_t len);

/* Whether query or urlencoded form q[0..len) has a parameter that
 * overrides the method (split at '&' and ';', as Rack did). */
bool override_in_form(const char *q, size_t len);

/* Whether a multipart body b[0..len) has a part named so (any
 * "name=" parameter, quoted or not, outside filename=; RFC 2231's
 * name*=charset'lang'value too). */
bool override_in_multipart(const char *b, size_t len);

/* Whether a JSON body b[0..len) has a key that does, at any depth, its
 * escapes read (a NUL cuts a key as PHP does); true for a body holding a
 * NUL byte (UTF-16 or UTF-32, not read). */
bool override_in_json(const char *b, size_t len);

/* Whether body b[0..len) of kind overrides the method: by any reader
 * of kind's bits; always for OVERRIDE_UNREADABLE. */
bool override_in_body(enum override_kind kind, const char *b, size_t len);

#endif
