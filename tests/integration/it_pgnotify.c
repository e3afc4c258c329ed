/*
 * A fleet's acknowledgements wait for no WAL flush (issue 18, pgnotify).
 * On PostgreSQL a broker passes each of its followers' acknowledgements
 * to the others as a transaction that only NOTIFYs cordon_acks
 * (store_pg.c's notifier_main), inside the revoke's 2 s window. Such a
 * commit writes a commit record but waits for no flush: PostgreSQL
 * flushes at a commit only when the transaction wrote WAL before it.
 * This pins that: two stores share one private server
 * (tests/integration/pg.c), one publishes K acknowledgements, each sent
 * alone (the next only once the other store heard it), and the
 * server's pg_stat_wal.wal_sync must have grown by less than K (with a
 * row lock taken in the notifier's transaction: 41 for 40). The WAL
 * writer's own flushes are made rare (wal_writer_delay 10 s), and the
 * count is read with every backend of the stores gone (a backend's WAL
 * counts reach pg_stat_wal at the latest when it exits), so nothing but
 * the test's writes moves it.
 *
 * Without PostgreSQL it fails and says so, unless CORDON_TEST_NO_PG=1.
 */
#include "harness.h"
#include "pg.h"
#include "store_pg.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACKS 40

static struct pg_server pg;

struct heard {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	long long acked; /* the last acknowledgement heard, -1 for none */
	long long count;
};

static void
on_ack(void *arg, const char *follower, int64_t acked, bool polling)
{
	struct heard *h = arg;

	(void)polling;
	if (strcmp(follower, "host-pgnotify") != 0)
		return;
	pthread_mutex_lock(&h->mu);
	h->acked = acked;
	h->count++;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void
on_seq(void *arg, int64_t seq)
{
	(void)arg;
	(void)seq;
}

/* Waits up to ms for acked to be heard: true when it was. */
static bool
heard_within(struct heard *h, long long acked, int ms)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&h->mu);
	while (h->acked != acked &&
	    pthread_cond_timedwait(&h->cv, &h->mu, &until) == 0)
		;
	ok = h->acked == acked;
	pthread_mutex_unlock(&h->mu);
	return ok;
}

static long long
now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static long long
wal_syncs(const char *url)
{
	char out[64];
	char *end;
	long long n;

	ck_assert_int_eq(pg_sql(url, "SELECT wal_sync FROM pg_stat_wal", out,
			     sizeof(out)),
	    0);
	errno = 0;
	n = strtoll(out, &end, 10);
	ck_assert_msg(errno == 0 && end != out && *end == '\0',
	    "pg_stat_wal.wal_sync: '%s'", out);
	return n;
}

/* Waits until no backend is connected to database name (each has sent
 * its WAL counts on its way out). */
static void
backends_gone(const char *url, const char *name)
{
	char sql[200], out[64];

	snprintf(sql, sizeof(sql),
	    "SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'", name);
	for (int i = 0; i < 300; i++) {
		ck_assert_int_eq(pg_sql(url, sql, out, sizeof(out)), 0);
		if (strcmp(out, "0") == 0)
			return;
		usleep(100 * 1000);
	}
	ck_abort_msg("backends of %s still connected after 30 s: %s", name,
	    out);
}

/* Two stores on url; the second hears the first's acknowledgements. */
static void
stores_open(const char *url, struct store_pg **a, struct store_pg **b,
    struct heard *h)
{
	ck_assert_int_eq(store_pg_open(url, a), 0);
	ck_assert_int_eq(store_pg_open(url, b), 0);
	ck_assert_int_eq(store_pg_watch_acks(*b, on_ack, h), 0);
	ck_assert_int_eq(store_pg_watch_revocations(*b, on_seq, NULL), 0);
	/* Until the listener LISTENs a notification is not heard: publish
	 * a mark until one comes through. */
	for (int i = 0;; i++) {
		ck_assert_msg(i < 100, "no acknowledgement heard in 20 s");
		ck_assert_int_eq(store_pg_ack_publish(*a, "host-pgnotify",
				     1000000 + i, true),
		    0);
		if (heard_within(h, 1000000 + i, 200))
			break;
	}
}

START_TEST(acknowledgements_wait_for_no_flush)
{
	char db[64], url[400], sql[200];
	struct store_pg *a, *b;
	struct heard h = { .acked = -1 };
	long long before, after, total_us = 0, max_us = 0;

	pthread_mutex_init(&h.mu, NULL);
	pthread_cond_init(&h.cv, NULL);
	snprintf(db, sizeof(db), "pgnotify%d", (int)getpid());
	ck_assert_int_eq(pg_create_db(&pg, db, url, sizeof(url)), 0);
	/* The WAL writer flushes asynchronous commits every
	 * wal_writer_delay: at its longest it moves the count at most once
	 * in this test's few seconds. */
	ck_assert_int_eq(pg_sql(pg.url,
			     "ALTER SYSTEM SET wal_writer_delay = '10s'", NULL,
			     0),
	    0);
	ck_assert_int_eq(pg_sql(pg.url, "SELECT pg_reload_conf()", NULL, 0), 0);

	/* The schema's migration and the listener's start, uncounted. */
	stores_open(url, &a, &b, &h);
	store_pg_close(a);
	store_pg_close(b);
	backends_gone(pg.url, db);

	h.acked = -1;
	stores_open(url, &a, &b, &h);
	before = wal_syncs(pg.url);
	for (long long i = 0; i < ACKS; i++) {
		long long t0 = now_us(), us;

		ck_assert_int_eq(store_pg_ack_publish(a, "host-pgnotify", i,
				     i % 2 == 0),
		    0);
		ck_assert_msg(heard_within(&h, i, 10000),
		    "acknowledgement %lld not heard in 10 s", i);
		us = now_us() - t0;
		total_us += us;
		max_us = us > max_us ? us : max_us;
	}
	store_pg_close(a);
	store_pg_close(b);
	backends_gone(pg.url, db);
	after = wal_syncs(pg.url);

	snprintf(sql, sizeof(sql), "%lld acknowledgements", (long long)ACKS);
	fprintf(stderr,
	    "it_pgnotify: %s, each its own transaction: wal_sync %lld -> "
	    "%lld (+%lld); published to heard %lld us mean, %lld us max\n",
	    sql, before, after, after - before, total_us / ACKS, max_us);
	ck_assert_msg(after - before < ACKS,
	    "%d acknowledgements, each its own transaction, made %lld WAL "
	    "flushes (wal_sync %lld -> %lld): each waited for the disk",
	    ACKS, after - before, before, after);
	pthread_cond_destroy(&h.cv);
	pthread_mutex_destroy(&h.mu);
}
END_TEST

static Suite *
pgnotify_suite(void)
{
	Suite *s = suite_create("pgnotify");
	TCase *tc = tcase_create("acks");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, acknowledgements_wait_for_no_flush);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	char err[512];
	int rc;

	if (!pg_wanted()) {
		printf("it_pgnotify: CORDON_TEST_NO_PG=1: skipped\n");
		return 0;
	}
	if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_pgnotify: %s\n", err);
		return 1;
	}
	rc = harness_main(pgnotify_suite());
	pg_destroy(&pg);
	return rc;
}
