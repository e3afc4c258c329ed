/*
 * The revocation feed's page, one source of truth for the three processes
 * that speak it: the broker answers GET /v1/revocations with at most
 * FEED_PAGE_MAX revocations, the proxy reads a page that full as "more
 * follow" (it polls again before it calls itself in sync), and the
 * launcher's watch reads an answer of at most FEED_ANSWER_MAX bytes.
 */
#ifndef CORDON_COMMON_FEED_PAGE_H
#define CORDON_COMMON_FEED_PAGE_H

/* Revocations in one answer of the feed. */
#define FEED_PAGE_MAX 1000

/* The longest revocation entry: {"seq": 19 digits, "job": an id of at
 * most 63 bytes} with JSON's punctuation and spaces is about 105 bytes. */
#define FEED_ENTRY_MAX 128

/* The bytes of a full page's answer, head and array included. */
#define FEED_ANSWER_MAX (256 * 1024)

_Static_assert(FEED_ANSWER_MAX >= FEED_PAGE_MAX * FEED_ENTRY_MAX,
    "a full page of the feed must fit the launcher's answer cap");

#endif
