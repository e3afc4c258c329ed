/*
 * A blocking HTTP/1.1 JSON client of our own, for calls between cordon's
 * processes: to a TCP address ("http://127.0.0.1:7701") or to a unix
 * socket ("unix:/run/cordon/proxy/job.sock"). Answers are read with a cap
 * and parsed as JSON when they say they are JSON. Nothing is retried here:
 * the caller decides, and on any failure it must deny.
 */
#ifndef CORDON_HTTP_CLIENT_H
#define CORDON_HTTP_CLIENT_H

#include "buf.h"

#include <jansson.h>

#define HTTPC_MAX_ANSWER (8 * 1024 * 1024)

struct httpc_answer {
	long status;
	json_t *json; /* the body when it is JSON, else NULL */
	struct buf body; /* the raw body, always */
};

/*
 * Sends method base+path with an optional bearer key, an optional extra
 * header ("Name: value") and an optional JSON body (borrowed), waiting at
 * most timeout_ms. Returns 0 when an answer arrived, whatever its status;
 * otherwise -ECONNREFUSED, -ETIMEDOUT, -EFBIG (answer over the cap),
 * -EBADMSG (said JSON, was not) or -EIO, and *ret is empty. Release the
 * answer with httpc_answer_free.
 */
int httpc_request(const char *base, const char *method, const char *path,
    const char *bearer, const char *header, const json_t *body, long timeout_ms,
    struct httpc_answer *ret);

void httpc_answer_free(struct httpc_answer *a);

#endif
