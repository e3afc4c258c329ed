/*
 * The revocation feed's page, one source of truth for the three processes
 * that speak it: the broker answers GET /v1/revocations with at most
 * FEED_PAGE_MAX revocations, the proxy reads a page that full as "more
 * follow" (it polls again before it calls itself in sync), and the
 * launcher's watch reads an answer of at most FEED_ANSWER_MAX bytes.
 *
 * An entry is of one of two kinds: {"seq", "job"}, the job revoked (as
 * the feed has always said it), or {"seq", "job", "token"}, one token of
 * the job revoked alone, named by its id (tok_..., never the token). A
 * follower that knows only the first kind takes the second for the job's
 * revoke: it revokes too much, never too little. feed_entry_parse is the
 * one reading of an entry the proxy and the launcher share.
 */
#ifndef CORDON_COMMON_FEED_PAGE_H
#define CORDON_COMMON_FEED_PAGE_H

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

/* Revocations in one answer of the feed. */
#define FEED_PAGE_MAX 1000

/* The longest id of a job or of a token an entry names. */
#define FEED_ID_MAX 63

/* The longest revocation entry: {"seq": 19 digits, "job": an id of at
 * most 63 bytes, "token": another} with JSON's punctuation and spaces is
 * about 180 bytes. */
#define FEED_ENTRY_MAX 192

/* The bytes of a full page's answer, head and array included. */
#define FEED_ANSWER_MAX (256 * 1024)

_Static_assert(FEED_ANSWER_MAX >= FEED_PAGE_MAX * FEED_ENTRY_MAX,
    "a full page of the feed must fit the launcher's answer cap");

/* One entry of a feed answer; the strings are the entry's (borrowed). */
struct feed_entry {
	int64_t seq;
	const char *job;
	const char *token; /* NULL: the whole job is revoked */
};

/* Whether s is an id an entry may name: 1 to FEED_ID_MAX bytes. */
static inline int
feed_id_ok(const char *s)
{
	return s != NULL && s[0] != '\0' && strlen(s) <= FEED_ID_MAX;
}

/*
 * Reads entry v into *ret: 0, or -EINVAL when it is no entry (a seq that
 * is not a positive integer, a job that is not an id). A "token" that is
 * present but not an id makes the entry the job's: fail closed, the whole
 * job is taken as revoked.
 */
static inline int
feed_entry_parse(const json_t *v, struct feed_entry *ret)
{
	json_t *seq = json_object_get(v, "seq");
	const char *job = json_string_value(json_object_get(v, "job"));
	const char *token = json_string_value(json_object_get(v, "token"));

	if (!json_is_integer(seq) || json_integer_value(seq) <= 0 ||
	    !feed_id_ok(job))
		return -EINVAL;
	ret->seq = json_integer_value(seq);
	ret->job = job;
	ret->token = feed_id_ok(token) ? token : NULL;
	return 0;
}

#endif
