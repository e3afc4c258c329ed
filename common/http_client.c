/*
 * Blocking HTTP/JSON calls over libcurl, TCP or unix socket.
 */
#include "http_client.h"

#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int
httpc_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

void
httpc_answer_free(struct httpc_answer *a)
{
	json_decref(a->json);
	a->json = NULL;
	buf_free(&a->body);
}

struct sink {
	struct buf *body;
	bool over;
};

static size_t
on_body(char *p, size_t size, size_t n, void *cls)
{
	struct sink *s = cls;

	/* Returning less than given makes curl fail with a write error. */
	if (buf_append(s->body, p, size * n) == 0)
		return size * n;
	s->over = true;
	return 0;
}

static int
curl_errno(CURLcode c, bool over)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_WRITE_ERROR:
		return over ? -EFBIG : -EIO;
	default:
		return -EIO;
	}
}

int
httpc_request(const char *base, const char *method, const char *path,
    const char *bearer, const char *header, const json_t *body, long timeout_ms,
    struct httpc_answer *ret)
{
	_cleanup_free_ char *url = NULL, *auth = NULL, *payload = NULL;
	struct curl_slist *headers = NULL;
	struct httpc_answer a = { .body = BUF_INIT(HTTPC_MAX_ANSWER) };
	struct sink sink = { .body = &a.body };
	const char *ctype = NULL;
	CURLcode c;
	CURL *h;
	int r = 0;

	*ret = (struct httpc_answer){ .body = BUF_INIT(0) };
	h = curl_easy_init();
	if (h == NULL)
		return -ENOMEM;
	if (strncmp(base, "unix:", 5) == 0) {
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, base + 5);
		r = asprintf(&url, "http://localhost%s", path);
	} else
		r = asprintf(&url, "%s%s", base, path);
	if (r < 0) {
		url = NULL;
		r = -ENOMEM;
		goto out;
	}
	r = 0;
	if (bearer != NULL) {
		if (asprintf(&auth, "Authorization: Bearer %s", bearer) < 0) {
			auth = NULL;
			r = -ENOMEM;
			goto out;
		}
		headers = curl_slist_append(headers, auth);
	}
	if (header != NULL)
		headers = curl_slist_append(headers, header);
	/* No "Expect: 100-continue" round trip on loopback. */
	headers = curl_slist_append(headers, "Expect:");
	if (body != NULL) {
		payload = json_dumps(body, JSON_COMPACT);
		if (payload == NULL) {
			r = -ENOMEM;
			goto out;
		}
		headers = curl_slist_append(headers,
		    "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE,
		    (long)strlen(payload));
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	c = curl_easy_perform(h);
	if (c != CURLE_OK) {
		r = curl_errno(c, sink.over);
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.status);
	curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ctype);
	if (ctype != NULL && a.body.len > 0 &&
	    strncasecmp(ctype, "application/json", 16) == 0) {
		a.json = json_loadb(a.body.data, a.body.len, 0, NULL);
		if (a.json == NULL) {
			r = -EBADMSG;
			goto out;
		}
	}
	*ret = a;
	a = (struct httpc_answer){ .body = BUF_INIT(0) };
out:
	httpc_answer_free(&a);
	curl_slist_free_all(headers);
	curl_easy_cleanup(h);
	return r;
}
