/*
 * An issuer that accepts and never answers, for the broker's and the
 * proxy's slow-issuer tests (hungissuer.c).
 */
#ifndef CORDON_TESTS_HUNGISSUER_H
#define CORDON_TESTS_HUNGISSUER_H

#include <pthread.h>
#include <stdatomic.h>

struct hung_issuer {
	int lfd, wake[2];
	unsigned port;
	pthread_t thread;
	/* Calls accepted, held open now, and revocations asked. */
	atomic_uint accepted, open, revokes;
};

/* Listens on a free loopback port (h->port) and serves it on a thread of
 * its own; h->lfd is -1 until then. Asserts on failure. */
void hung_issuer_start(struct hung_issuer *h);
/* Stops the thread and closes every call; nothing when not started. */
void hung_issuer_stop(struct hung_issuer *h);
/* Waits (up to 20 s) until the issuer holds at least n calls at once;
 * asserts it does. */
void hung_issuer_wait_open(struct hung_issuer *h, unsigned n);
/* Waits (up to ms) until the issuer accepted more calls than before. */
void hung_issuer_wait_accepted(struct hung_issuer *h, unsigned before, int ms);

#endif
