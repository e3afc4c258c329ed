/*
 * Formatting decisions. Every string a job could have chosen (method,
 * host, path, SNI) goes through the same redaction before it is written,
 * and jansson escapes whatever it holds: one line, always.
 */
#include "decision.h"

#include "log.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static bool
is_base62(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	    (c >= 'a' && c <= 'z');
}

size_t
decision_redact(char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i + 4 <= len; i++) {
		if (!(s[i] == 'c' && s[i + 1] == 'r' &&
			(s[i + 2] == 'd' || s[i + 2] == 'k') &&
			s[i + 3] == '_'))
			continue;
		size_t k = i + 4;
		while (k < len && is_base62(s[k]))
			k++;
		/* A token's shape, or the start of one: nothing of it stays. */
		if (k - (i + 4) >= 8) {
			memset(s + i + 4, '*', k - (i + 4));
			n++;
		}
		i = k - 1;
	}
	return n;
}

/* A copy of s, at most max bytes, redacted, cut at any of cut's bytes. */
static json_t *
field(const char *s, size_t max, const char *cut)
{
	size_t len;
	char *copy;
	json_t *v;

	if (s == NULL)
		return json_null();
	len = cut != NULL ? strcspn(s, cut) : strlen(s);
	if (len > max)
		len = max;
	copy = strndup(s, len);
	if (copy == NULL)
		return NULL;
	decision_redact(copy, len);
	/* Bytes that are not UTF-8 cannot go in JSON as they are. */
	v = json_stringn(copy, len);
	if (v == NULL) {
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)copy[i] >= 0x80)
				copy[i] = '?';
		v = json_stringn(copy, len);
	}
	free(copy);
	return v;
}

char *
decision_format(const struct decision *d)
{
	char ts[40];
	json_t *line;
	char *text, *out;
	size_t n;

	log_timestamp(ts, sizeof(ts));
	line = json_pack("{s:s, s:o, s:I, s:I, s:s?, s:o, s:o, s:i, s:o, s:o, "
			 "s:s?, s:o, s:s, s:s?, s:s?, s:i, s:I, s:I, s:f}",
	    "ts", ts, "job", field(d->job, 128, NULL), "conn",
	    (json_int_t)d->conn, "req", (json_int_t)d->req, "kind", d->kind,
	    "method", field(d->method, 32, NULL), "host",
	    field(d->host, 253, NULL), "port", (int)d->port, "path",
	    field(d->path, 2048, "?#"), "sni", field(d->sni, 253, NULL), "addr",
	    d->addr, "rule", d->rule >= 0 ? json_integer(d->rule) : json_null(),
	    "decision", d->allow ? "allow" : "deny", "reason",
	    d->allow ? NULL : d->reason, "detail", d->detail, "status",
	    d->status, "bytes_up", (json_int_t)d->bytes_up, "bytes_down",
	    (json_int_t)d->bytes_down, "ms", d->ms);
	if (line == NULL)
		return NULL;
	text = json_dumps(line,
	    JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII |
		JSON_REAL_PRECISION(6));
	json_decref(line);
	if (text == NULL)
		return NULL;
	n = strlen(text);
	out = realloc(text, n + 2);
	if (out == NULL) {
		free(text);
		return NULL;
	}
	out[n] = '\n';
	out[n + 1] = '\0';
	return out;
}
