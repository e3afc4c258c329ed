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
		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };
			r = buf_append(b, esc, 2);
		} else if (c >= 0x80)
			r = buf_append(b, "?", 1);
		else
			r = buf_printf(b, "\\u%04x", c);
	}
	if (r == 0)
		r = buf_append(b, "\"", 1);
	return r;
}

/* Appends v in decimal, as %lld does. */
static int
put_i64(struct buf *b, int64_t v)
{
	if (v >= 0)
		return buf_append_u64(b, (uint64_t)v);
	int r = buf_append(b, "-", 1);
	return r ?: buf_append_u64(b, (uint64_t)0 - (uint64_t)v);
}

/* Appends ms with three decimals, rounded to the microsecond (%.3f but
 * for a value exactly halfway, which a double of elapsed time never is);
 * printf's own for what is negative, huge or not a number. */
static int
put_ms(struct buf *b, double ms)
{
	if (!(ms >= 0 && ms < 1e12))
		return buf_printf(b, "%.3f", ms);
	uint64_t us = (uint64_t)(ms * 1000.0 + 0.5);
	char frac[4] = { '.', (char)('0' + us / 100 % 10),
		(char)('0' + us / 10 % 10), (char)('0' + us % 10) };
	int r = buf_append_u64(b, us / 1000);
	return r ?: buf_append(b, frac, sizeof(frac));
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
	r = BUF_LIT(&b, "{\"ts\":\"");
	r = r ?: buf_append(&b, ts, strlen(ts));
	r = r ?: BUF_LIT(&b, "\",\"job\":");
	r = r ?: put_field(&b, d->job, 128, NULL);
	r = r ?: BUF_LIT(&b, ",\"conn\":");
	r = r ?: buf_append_u64(&b, d->conn);
	r = r ?: BUF_LIT(&b, ",\"req\":");
	r = r ?: buf_append_u64(&b, d->req);
	r = r ?: BUF_LIT(&b, ",\"kind\":");
	r = r ?: put_field(&b, d->kind, 16, NULL);
	r = r ?: buf_append(&b, ",\"method\":", 10);
	r = r ?: put_field(&b, d->method, 32, NULL);
	r = r ?: buf_append(&b, ",\"host\":", 8);
	r = r ?: put_field(&b, d->host, 253, NULL);
	r = r ?: BUF_LIT(&b, ",\"port\":");
	r = r ?: buf_append_u64(&b, d->port);
	r = r ?: BUF_LIT(&b, ",\"path\":");
	r = r ?: put_field(&b, d->path, 2048, "?#");
	r = r ?: buf_append(&b, ",\"sni\":", 7);
	r = r ?: put_field(&b, d->sni, 253, NULL);
	r = r ?: buf_append(&b, ",\"addr\":", 8);
	r = r ?: put_field(&b, d->addr, 64, NULL);
	r = r ?: BUF_LIT(&b, ",\"rule\":");
	if (r == 0 && d->rule >= 0)
		r = put_i64(&b, d->rule);
	else if (r == 0)
		r = BUF_LIT(&b, "null");
	if (r == 0 && d->error)
		r = BUF_LIT(&b, ",\"decision\":\"error\",\"reason\":");
	else if (r == 0 && d->allow)
		r = BUF_LIT(&b, ",\"decision\":\"allow\",\"reason\":");
	else if (r == 0)
		r = BUF_LIT(&b, ",\"decision\":\"deny\",\"reason\":");
	r = r
	    ?: put_field(&b,
		   d->error       ? "upstream_error"
		       : d->allow ? NULL
				  : d->reason,
		   64, NULL);
	r = r ?: buf_append(&b, ",\"detail\":", 10);
	r = r ?: put_field(&b, d->detail, 64, NULL);
	r = r ?: BUF_LIT(&b, ",\"status\":");
	r = r ?: put_i64(&b, d->status);
	r = r ?: BUF_LIT(&b, ",\"bytes_up\":");
	r = r ?: buf_append_u64(&b, d->bytes_up);
	r = r ?: BUF_LIT(&b, ",\"bytes_down\":");
	r = r ?: buf_append_u64(&b, d->bytes_down);
	r = r ?: BUF_LIT(&b, ",\"ms\":");
	r = r ?: put_ms(&b, d->ms);
	if (r == 0 && d->secret != NULL) {
		r = BUF_LIT(&b, ",\"secret\":");
		r = r ?: put_field(&b, d->secret, 64, NULL);
		r = r ?: BUF_LIT(&b, ",\"secret_version\":");
		r = r ?: put_i64(&b, d->secret_version);
		r = r ?: BUF_LIT(&b, ",\"reflected\":");
		r = r ?: buf_append_u64(&b, d->reflected);
		r = r ?: BUF_LIT(&b, ",\"cookies_dropped\":");
		r = r ?: buf_append_u64(&b, d->cookies_dropped);
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
	if (r == 0 && d->count > 0) {
		r = BUF_LIT(&b, ",\"count\":");
		r = r ?: buf_append_u64(&b, d->count);
	}
	r = r ?: buf_append(&b, "}\n", 2);
	if (r != 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}
