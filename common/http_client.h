/*
 * A blocking HTTP/1.1 JSON client of our own, for calls between cordon's
 * processes: to a TCP address ("http://127.0.0.1:7701") or to a unix
 * socket ("unix:/run/cordon/proxy/job.sock"). Answers are read with a cap
 * and parsed as JSON when they say they are JSON. A base may be a list of
 * addresses joined by commas ("http://10.0.0.1:7701,http://10.0.0.2:7701",
 * a fleet's brokers): a call fails over along it (httpc_request). Nothing
 * else is retried here: the caller decides, and on any failure it must
 * deny.
 */
#ifndef CORDON_HTTP_CLIENT_H
#define CORDON_HTTP_CLIENT_H

#include "buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTPC_MAX_ANSWER (8 * 1024 * 1024)
/* At most so many addresses in a list, each at most so long. */
#define HTTPC_BASES_MAX 8
#define HTTPC_BASE_MAX 128

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
 * -EBADMSG (said JSON, was not), -EINVAL (a bad base) or -EIO, and *ret
 * is empty. Release the answer with httpc_answer_free.
 *
 * When base is a list, a call that met no server (refused, unreachable,
 * nothing sent) or a 503 goes to the next address, each with timeout_ms
 * of its own; so does one that got no answer in time or whole when it
 * may be repeated (httpc_repeatable), while one that may not (a mint, a
 * job's creation) returns that failure: it may have been carried out.
 * The last one's result is returned. The address that answered is tried
 * first by the next call with this list (in any thread of the process).
 */
int httpc_request(const char *base, const char *method, const char *path,
    const char *bearer, const char *header, const json_t *body, long timeout_ms,
    struct httpc_answer *ret);

void httpc_answer_free(struct httpc_answer *a);

/*
 * Whether a call may be sent again at another broker after it may have
 * reached one that did not answer (a timeout, a reset, a broken answer):
 * GET, HEAD, PUT, DELETE and OPTIONS, and the broker's POSTs that are
 * idempotent (/v1/introspect, /v1/revoke, /v1/jobs/<job>/revoke and
 * /v1/jobs/<job>/heartbeat). Any other POST (a mint, a job's creation, a
 * secret's release) or PATCH is not: it may have been carried out.
 */
bool httpc_repeatable(const char *method, const char *path);

/* Waits for events (poll's) on fd until deadline (monotonic_ms): 0, or
 * -ETIMEDOUT, or -EIO. */
int httpc_wait_fd(int fd, short events, int64_t deadline);

/*
 * Splits list (one base, or several joined by commas) into out: how many
 * (1..max), or -EINVAL when an entry is empty, longer than HTTPC_BASE_MAX
 * - 1, or there are more than max.
 */
int httpc_bases(const char *list, char out[][HTTPC_BASE_MAX], size_t max);

#endif
