/*
 * Formatting decisions. Every string a job could have chosen (method,
 * host, path, SNI) goes through the same redaction before it is written,
 * and is escaped as JSON: one line, always.
 */
#include "decision.h"

#include "buf.h"
#include "log.h"
#include "token.h"

#include <stdlib.h>
#include <string.h>

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
		while (k < len && token_is_base62(s[k]))
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

/*
 * Appends s as a JSON string: at most max bytes, cut at any of cut's
 * bytes, redacted, with quotes, backslashes and control characters
 * escaped and any byte over 0x7f written as '?' (what the proxy parses is
 * ASCII; anything else is shown, not trusted). NULL is null.
 */
static int
put_field(struct buf *b, const char *s, size_t max, const char *cut)
{
	char copy[2048 + 1];
	size_t len;
	int r = 0;

	if (s == NULL)
		return buf_append(b, "null", 4);
	len = cut != NULL ? strcspn(s, cut) : strlen(s);
	if (len > max)
		len = max;
	if (len > sizeof(copy) - 1)
		len = sizeof(copy) - 1;
	memcpy(copy, s, len);
	decision_redact(copy, len);
	r = buf_append(b, "\"", 1);
	for (size_t i = 0, run = 0; r == 0 && i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)copy[i] : 0;
		if (i < len && c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			continue;
		/* The plain run before this byte, then the byte escaped. */
		r = buf_append(b, copy + run, i - run);
		run = i + 1;
		if (r != 0 || i == len)
			break;
		if (c == '"' || c == '\\')
			r = buf_printf(b, "\\%c", c);
		else if (c >= 0x80)
			r = buf_append(b, "?", 1);
		else
			r = buf_printf(b, "\\u%04x", c);
	}
	if (r == 0)
		r = buf_append(b, "\"", 1);
	return r;
}

char *
decision_format(const struct decision *d)
{
	char ts[40];
	struct buf b;
	int r;

	/* By hand, not through jansson: one line per request is the proxy's
	 * hottest path after the relay itself. */
	buf_init(&b, 16384);
	log_timestamp(ts, sizeof(ts));
	r = buf_printf(&b, "{\"ts\":\"%s\",\"job\":", ts);
	r = r ?: put_field(&b, d->job, 128, NULL);
	r = r
	    ?: buf_printf(&b, ",\"conn\":%llu,\"req\":%llu,\"kind\":",
		   (unsigned long long)d->conn, (unsigned long long)d->req);
	r = r ?: put_field(&b, d->kind, 16, NULL);
	r = r ?: buf_append(&b, ",\"method\":", 10);
	r = r ?: put_field(&b, d->method, 32, NULL);
	r = r ?: buf_append(&b, ",\"host\":", 8);
	r = r ?: put_field(&b, d->host, 253, NULL);
	r = r ?: buf_printf(&b, ",\"port\":%u,\"path\":", (unsigned)d->port);
	r = r ?: put_field(&b, d->path, 2048, "?#");
	r = r ?: buf_append(&b, ",\"sni\":", 7);
	r = r ?: put_field(&b, d->sni, 253, NULL);
	r = r ?: buf_append(&b, ",\"addr\":", 8);
	r = r ?: put_field(&b, d->addr, 64, NULL);
	if (r == 0 && d->rule >= 0)
		r = buf_printf(&b, ",\"rule\":%d", d->rule);
	else if (r == 0)
		r = buf_append(&b, ",\"rule\":null", 12);
	r = r
	    ?: buf_printf(&b, ",\"decision\":\"%s\",\"reason\":",
		   d->error       ? "error"
		       : d->allow ? "allow"
				  : "deny");
	r = r
	    ?: put_field(&b,
		   d->error       ? "upstream_error"
		       : d->allow ? NULL
				  : d->reason,
		   64, NULL);
	r = r ?: buf_append(&b, ",\"detail\":", 10);
	r = r ?: put_field(&b, d->detail, 64, NULL);
	r = r
	    ?: buf_printf(&b,
		   ",\"status\":%d,\"bytes_up\":%llu,\"bytes_down\":%llu,"
		   "\"ms\":%.3f",
		   d->status, (unsigned long long)d->bytes_up,
		   (unsigned long long)d->bytes_down, d->ms);
	if (r == 0 && d->secret != NULL) {
		r = buf_append(&b, ",\"secret\":", 10);
		r = r ?: put_field(&b, d->secret, 64, NULL);
		r = r
		    ?: buf_printf(&b,
			   ",\"secret_version\":%lld,\"reflected\":%llu"
			   ",\"cookies_dropped\":%llu",
			   (long long)d->secret_version,
			   (unsigned long long)d->reflected,
			   (unsigned long long)d->cookies_dropped);
	}
	/* The guard's secrets, by name: a JSON array. */
	if (r == 0 && d->guard != NULL && d->guard[0] != '\0') {
		const char *g = d->guard;
		r = buf_append(&b, ",\"guard\":[", 10);
		while (r == 0 && g != NULL) {
			const char *comma = strchr(g, ',');
			size_t n =
			    comma != NULL ? (size_t)(comma - g) : strlen(g);
			char name[128];
			if (n >= sizeof(name))
				n = sizeof(name) - 1;
			memcpy(name, g, n);
			name[n] = '\0';
			if (g != d->guard)
				r = buf_append(&b, ",", 1);
			r = r ?: put_field(&b, name, 64, NULL);
			g = comma != NULL ? comma + 1 : NULL;
		}
		r = r ?: buf_append(&b, "]", 1);
	}
	if (r == 0 && d->count > 0)
		r = buf_printf(&b, ",\"count\":%llu",
		    (unsigned long long)d->count);
	r = r ?: buf_append(&b, "}\n", 2);
	if (r != 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}
