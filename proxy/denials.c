/*
 * The ring of a job's recent denials (denials.h) and the proxy's own
 * answer at http://cordon.local/v1/denials. Every string a job chose
 * (method, host, path) is copied cut, redacted as the decision log is,
 * and with any byte outside printable ASCII shown as '?', so that the
 * JSON is always valid and never holds a token or a query string. The
 * rule offered for a denial is narrow_rule's (common/narrow.h), the one
 * cordon egress-report offers too.
 */
#include "denials.h"

#include "log.h"
#include "narrow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Copies s into out[cap], cut at any byte of cut, redacted, printable. */
static void
copy_field(char *out, size_t cap, const char *s, const char *cut)
{
	size_t n;

	if (s == NULL) {
		out[0] = '\0';
		return;
	}
	n = cut != NULL ? strcspn(s, cut) : strlen(s);
	if (n > cap - 1)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = '\0';
	decision_redact(out, n);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 ||
		    (unsigned char)out[i] >= 0x7f)
			out[i] = '?';
}

int
denials_add(struct denials *ring, const struct decision *d)
{
	struct denial *e;

	if (d->allow || d->error)
		return 0;
	if (ring->ring == NULL) {
		ring->ring = calloc(DENIALS_MAX, sizeof(*ring->ring));
		if (ring->ring == NULL)
			return -ENOMEM;
	}
	e = &ring->ring[ring->next];
	memset(e, 0, sizeof(*e));
	log_timestamp(e->ts, sizeof(e->ts));
	copy_field(e->kind, sizeof(e->kind), d->kind, NULL);
	copy_field(e->method, sizeof(e->method), d->method, NULL);
	copy_field(e->host, sizeof(e->host), d->host, NULL);
	copy_field(e->path, sizeof(e->path), d->path, "?#");
	copy_field(e->reason, sizeof(e->reason), d->reason, NULL);
	copy_field(e->detail, sizeof(e->detail), d->detail, NULL);
	copy_field(e->addr, sizeof(e->addr), d->addr, NULL);
	e->port = d->port;
	e->count = d->count;
	ring->next = (ring->next + 1) % DENIALS_MAX;
	if (ring->n < DENIALS_MAX)
		ring->n++;
	ring->total += d->count > 0 ? d->count : 1;
	return 0;
}

void
denials_clear(struct denials *ring)
{
	free(ring->ring);
	memset(ring, 0, sizeof(*ring));
}

bool
denials_is_local(const char *host, size_t len)
{
	size_t n = sizeof(DENIALS_HOST) - 1;

	if (len == n + 1 && host[n] == '.')
		len = n;
	return len == n && strncasecmp(host, DENIALS_HOST, n) == 0;
}

json_t *
denials_rule(const struct denial *e, const char **ret_fix)
{
	struct narrow_denial d = { .kind = e->kind,
		.method = e->method,
		.host = e->host,
		.path = e->path,
		.reason = e->reason,
		.detail = e->detail,
		.addr = e->addr,
		.port = e->port };
	struct narrow_rule rule;

	if (narrow_rule(&d, &rule, ret_fix) < 0)
		return NULL;
	return narrow_rule_json(&rule);
}

json_t *
denials_json(const struct denials *ring, const char *job)
{
	json_t *list = json_array(), *out;

	if (list == NULL)
		return NULL;
	for (size_t k = 0; k < ring->n; k++) {
		/* Newest first. */
		size_t i = (ring->next + DENIALS_MAX - 1 - k) % DENIALS_MAX;
		const struct denial *e = &ring->ring[i];
		const char *fix = NULL;
		json_t *rule = denials_rule(e, &fix);
		json_t *o = json_pack("{s:s, s:s, s:s?, s:s, s:i, s:s?, s:s, "
				      "s:s?, s:o, s:s}",
		    "ts", e->ts, "kind", e->kind, "method",
		    e->method[0] != '\0' ? e->method : NULL, "host", e->host,
		    "port", (int)e->port, "path",
		    e->path[0] != '\0' ? e->path : NULL, "reason", e->reason,
		    "detail", e->detail[0] != '\0' ? e->detail : NULL, "rule",
		    rule != NULL ? rule : json_null(), "fix", fix);
		if (o != NULL && e->count > 0)
			(void)json_object_set_new(o, "count",
			    json_integer((json_int_t)e->count));
		if (o == NULL || json_array_append_new(list, o) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	out = json_pack("{s:s, s:o, s:I, s:I, s:i}", "job", job, "denials",
	    list, "kept", (json_int_t)ring->n, "total", (json_int_t)ring->total,
	    "max", DENIALS_MAX);
	return out;
}

int
denials_answer(const struct denials *ring, const char *job, const char *method,
    const char *path, bool connect, struct buf *out)
{
	unsigned status = 200;
	const char *phrase = "OK", *message = NULL;
	json_t *body;
	char *text;
	int r;

	if (connect) {
		status = 403;
		phrase = "Forbidden";
		message = "cordon.local is the proxy itself and answers plain "
			  "http only: GET http://cordon.local/v1/denials";
	} else if (strcmp(path, DENIALS_PATH) != 0) {
		status = 404;
		phrase = "Not Found";
		message = "cordon.local answers GET /v1/denials only";
	} else if (strcmp(method, "GET") != 0) {
		status = 405;
		phrase = "Method Not Allowed";
		message = "GET /v1/denials only";
	}
	body = message == NULL ? denials_json(ring, job)
			       : json_pack("{s:s, s:s}", "error",
				     status == 403 ? "local_only" : "not_found",
				     "message", message);
	text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (text == NULL)
		return -ENOMEM;
	r = buf_printf(out,
	    "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
	    "Cache-Control: no-store\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s\n",
	    status, phrase, strlen(text) + 1, text);
	free(text);
	return r;
}
