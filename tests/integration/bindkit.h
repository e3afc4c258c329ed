/*
 * The broker the bindings tests share (it_bindings, it_bindfix_places,
 * it_bindfix_listcap): one broker on sqlite or on a fresh PostgreSQL
 * database of a private server, its admin, launcher and verifier keys,
 * and the manifests, jobs and secrets they put. No proxy, no job spawned.
 */
#ifndef CORDON_TEST_BINDKIT_H
#define CORDON_TEST_BINDKIT_H

#include "harness.h"
#include "pg.h"

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct bindkit {
	struct daemon broker;
	char admin[128], launcher[128], verifier[128];
	struct pg_server pg;
};

/* The test executable's one kit. */
extern struct bindkit bk;

/* Fixtures: the broker on sqlite, or on a new database of bk.pg; and its
 * stop, asserted clean. */
void bindkit_setup(void);
void bindkit_setup_pg(void);
void bindkit_teardown(void);

/* A rule to host (port 8443, GET, audience api) that injects secret
 * (terminated TLS), or nothing when secret is NULL. */
json_t *bindkit_rule(const char *host, const char *secret);

/* PUTs manifest name (capability x.read, audience api) with egress
 * (stolen): the answer, asserted want. */
json_t *bindkit_manifest_put(long want, const char *name, json_t *egress);

/* A new job of manifest, its id into job (len bytes). */
void bindkit_job_of(const char *manifest, char *job, size_t len);

/* GET /v1/secrets/name's field key (an integer, or a boolean as 0/1). */
long long bindkit_secret_field(const char *name, const char *key);

/* PUTs secret name with body (stolen), asserted want. */
void bindkit_secret_put(long want, const char *name, json_t *body);

/* Runs suite name: tests("sqlite", bindkit_setup, true), then, unless
 * CORDON_TEST_NO_PG=1, tests("pg", bindkit_setup_pg, false) on a private
 * PostgreSQL server. prog names the test in its messages. */
int bindkit_main(const char *prog, const char *name,
    TCase *(*tests)(const char *name, void (*up)(void), bool sqlite));

#endif
