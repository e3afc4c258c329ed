/*
 * The path check of egress_path.h: a percent-decoding walk that refuses
 * every byte, escape and segment some server in common use reads as
 * another path, then a walk over the segments as sent.
 */
#include "egress_path.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

/* Code points that NFKC (IIS, .NET, some Java and Python stacks) reads as
 * '.', '..', '...', '/', '\', ';' or '%'. */
static const uint32_t confusables[] = { 0x037e, 0x2024, 0x2025, 0x2026, 0xfe52,
	0xfe54, 0xfe68, 0xfe6a, 0xff05, 0xff0e, 0xff0f, 0xff1b, 0xff3c };

/* A strict UTF-8 reader over the decoded bytes of a path: shortest form
 * only, no surrogates, nothing past U+10FFFF. */
struct utf8 {
	unsigned need; /* continuation bytes still to come */
	uint32_t cp, min;
};

/* Feeds one decoded byte: NULL, or what is wrong. */
static const char *
utf8_feed(struct utf8 *u, unsigned char b)
{
	if (u->need > 0) {
		if ((b & 0xc0) != 0x80)
			return "bad_utf8";
		u->cp = (u->cp << 6) | (b & 0x3f);
		if (--u->need > 0)
			return NULL;
		if (u->cp < u->min || u->cp > 0x10ffff ||
		    (u->cp >= 0xd800 && u->cp <= 0xdfff))
			return "bad_utf8";
		for (size_t k = 0;
		     k < sizeof(confusables) / sizeof(*confusables); k++)
			if (u->cp == confusables[k])
				return "confusable";
		return NULL;
	}
	if (b < 0x80)
		return NULL;
	if ((b & 0xe0) == 0xc0) {
		u->need = 1;
		u->cp = b & 0x1f;
		u->min = 0x80;
	} else if ((b & 0xf0) == 0xe0) {
		u->need = 2;
		u->cp = b & 0x0f;
		u->min = 0x800;
	} else if ((b & 0xf8) == 0xf0) {
		u->need = 3;
		u->cp = b & 0x07;
		u->min = 0x10000;
	} else
		return "bad_utf8";
	return NULL;
}

const char *
egress_path_problem(const char *path, size_t len)
{
	struct utf8 u = { 0 };
	const char *why;

	if (len == 0 || path[0] != '/')
		return "not_absolute";
	/* The query and the fragment are not part of the path. */
	for (size_t i = 0; i < len; i++)
		if (path[i] == '?' || path[i] == '#') {
			len = i;
			break;
		}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		bool encoded = c == '%';

		if (encoded) {
			int hi = i + 2 < len
			    ? hex_digit((unsigned char)path[i + 1])
			    : -1;
			int lo = i + 2 < len
			    ? hex_digit((unsigned char)path[i + 2])
			    : -1;
			if (hi < 0 || lo < 0)
				return "bad_escape";
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
		}
		if (u.need > 0 && c < 0x80)
			return "bad_utf8";
		if (c == '\\')
			return "backslash";
		/* Tomcat and Spring cut a segment at ';': "..;x" is "..". */
		if (c == ';')
			return "semicolon";
		if (c < 0x20 || c == 0x7f)
			return "control";
		if (!encoded && (c == ' ' || c >= 0x80))
			return "raw_byte";
		if (encoded) {
			/* One more decoding (a server behind a server, a
			 * framework that decodes again) reads %25XX as XX. */
			if (c == '%')
				return "double_encoding";
			if (c == '.')
				return "encoded_dot";
			if (c == '/')
				return "encoded_slash";
			if ((why = utf8_feed(&u, c)) != NULL)
				return why;
		}
	}
	if (u.need > 0)
		return "bad_utf8";
	/* Segments, as sent: every '.' and '/' in them is a real one now. */
	for (size_t i = 0; i < len; i++) {
		size_t n = 0, dots = 0;

		if (path[i] != '/')
			continue;
		while (i + 1 + n < len && path[i + 1 + n] != '/') {
			dots += path[i + 1 + n] == '.';
			n++;
		}
		if (n == 0 && i + 1 < len)
			return "empty_segment"; /* nginx merges "//" */
		if (n > 0 && dots == n)
			return "dot_segment";
		/* Windows servers drop a trailing dot: "admin." is "admin". */
		if (n > 0 && path[i + n] == '.')
			return "trailing_dot";
	}
	return NULL;
}

int
egress_path_ok(const char *path, size_t len)
{
	return egress_path_problem(path, len) == NULL ? 0 : -EINVAL;
}
