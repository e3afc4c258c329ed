/*
 * A private PostgreSQL server for a test: initdb in a fresh temporary
 * directory owned by an unprivileged user (nobody), the postmaster on a
 * unix socket in that directory only (no TCP), trust authentication for
 * the superuser "cordon". A watchdog process stops the server with
 * `pg_ctl stop -m immediate` and removes the directory when the test
 * process ends, however it ends (it reads a pipe only the test holds).
 *
 * When PostgreSQL is not installed the start fails with a message that
 * says so, unless CORDON_TEST_NO_PG=1 asks to skip (pg_wanted() false).
 */
#ifndef CORDON_TEST_PG_H
#define CORDON_TEST_PG_H

#include <stdbool.h>
#include <stddef.h>

struct pg_server {
	char dir[128]; /* the temporary directory: data/ and the socket */
	char url[300]; /* postgresql:///postgres?host=<dir>&port=..&user=.. */
	int port; /* the socket's port number (its name, .s.PGSQL.<port>) */
	int watchdog_fd; /* the pipe's write end; -1 when not started */
};

/* False when CORDON_TEST_NO_PG=1 is set: the caller skips, and says so. */
bool pg_wanted(void);

/*
 * Starts a fresh server: 0, or -1 with the reason in err. Run as root
 * (the server is started as nobody through setpriv).
 */
int pg_start(struct pg_server *pg, char *err, size_t errlen);

/* pg_ctl stop -m mode ("fast", "immediate"): 0 or -1. */
int pg_stop(struct pg_server *pg, const char *mode);

/* Starts the stopped server again on the same socket: 0 or -1. */
int pg_restart(struct pg_server *pg);

/* Creates database name and writes its URL into out: 0 or -1. */
int pg_create_db(struct pg_server *pg, const char *name, char *out, size_t len);

/* Runs sql with psql on url (unaligned, tuples only); its output, the
 * last newline dropped, into out when not NULL: 0 or -1. */
int pg_sql(const char *url, const char *sql, char *out, size_t len);

/* Stops the server and removes its directory (the watchdog exits). */
void pg_destroy(struct pg_server *pg);

#endif
