/*
 * The real-clients kit: what it_clients and it_jvm share around a real
 * `cordon run` job. An HTTPS static server on 127.0.0.1 for tls.test (a
 * test CA's leaf, the CA for the proxy's upstream_ca_file) over a
 * directory the test fills; a run of a manifest's job under /bin/sh -c
 * in its input's directory; the proxy's decision lines looked up. Every
 * failure is a check assertion.
 */
#ifndef CORDON_IT_CLIENTKIT_H
#define CORDON_IT_CLIENTKIT_H

#include "harness.h"

#include <stdbool.h>
#include <sys/types.h>

/* The HTTPS static server and its CA. */
struct clientkit_tls {
	char ca[400]; /* the test CA's certificate */
	char srv[400]; /* the directory it serves, dir/srv */
	char cert[400], key[400]; /* tls.test's leaf */
	pid_t pid; /* > 1 while it runs */
	unsigned port;
};

/*
 * Makes a test CA and tls.test's leaf in dir and the empty directory
 * dir/srv (its files the caller's). Asserts on failure.
 */
void clientkit_tls_prepare(struct clientkit_tls *t, const char *dir);

/* Starts the server over t->srv with the leaf: t->pid and t->port.
 * Asserts on failure. */
void clientkit_tls_start(struct clientkit_tls *t);

/* Stops the server (SIGTERM, reaped) when it runs. Safe to call again. */
void clientkit_tls_stop(struct clientkit_tls *t);

/*
 * Runs `cordon run --json` of manifest with st's launcher configuration,
 * st->inputs/repo as the input repo, and script under /bin/sh -c in it,
 * 110 s at most; asserts the result is JSON and the exit status 0 (the
 * job's stdout and stderr and cordon's stderr printed otherwise; also
 * when the environment variable debug is set). Returns the job's stdout
 * (free it); its stderr into *ret_err when not NULL (free it).
 */
char *clientkit_run(const struct stack *st, const char *manifest,
    const char *script, const char *debug, char **ret_err);

/*
 * Whether proxy logged a line for host with decision, and reason and
 * kind when not NULL, for a path that starts with path (NULL: any).
 */
bool clientkit_logged(const struct daemon *proxy, const char *host,
    const char *path, const char *decision, const char *reason,
    const char *kind);

#endif
