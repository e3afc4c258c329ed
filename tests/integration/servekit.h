/*
 * The serve-test kit (servekit.c): what the integration tests of cordon
 * serve share: the input repo, a job's manifest, serve started with the
 * stack's launcher configuration, a job posted and waited for, the paths
 * serve keeps a job under, and a process's parent read from /proc.
 */
#ifndef CORDON_TESTS_SERVEKIT_H
#define CORDON_TESTS_SERVEKIT_H

#include "harness.h"

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

/* Makes <st->inputs>/repo with a README.md ("hello\n"), asserting it. */
void servekit_repo(const struct stack *st);

/* PUTs manifest name at the stack's broker: /bin/true, LANG C.UTF-8,
 * wall_seconds 60, memory_mb 512, pids 64, and output_kb when it is > 0;
 * asserts 200. */
void servekit_manifest(const struct stack *st, const char *name, int output_kb);

/* The stack's launcher configuration with extra's keys set over it, as
 * compact JSON text (free it). Takes extra (NULL: none). Asserts. */
char *servekit_config(const struct stack *st, json_t *extra);

/* Starts serve (daemon "launcher") with servekit_config(st, extra),
 * asserting it started. Takes extra. */
void servekit_start(struct daemon *serve, const struct stack *st,
    json_t *extra);

/* The body of a POST /v1/jobs: manifest, <inputs>/repo copied in as repo,
 * /bin/sh -c script, and callback when it is not NULL (a new reference). */
json_t *servekit_job(const struct stack *st, const char *manifest,
    const char *script, const char *callback);

/* POSTs servekit_job(...) to serve as the launcher, asserting 201: the
 * answer (decref it). */
json_t *servekit_post(const struct daemon *serve, const struct stack *st,
    const char *manifest, const char *script, const char *callback);

/* The "job" of an answer, asserted there (free it). */
char *servekit_job_id(const json_t *j);

/* GETs /v1/jobs/<id> from serve until its state is want, up to 30 s:
 * that answer (decref it); asserts it came. */
json_t *servekit_wait_state(const struct daemon *serve, const struct stack *st,
    const char *id, const char *want);

/* servekit_post, then servekit_wait_state(..., "done"): the job's id
 * (free it). */
char *servekit_run(const struct daemon *serve, const struct stack *st,
    const char *manifest, const char *script);

/* <launcher_dir>/state/serve-jobs/<name> into out. */
void servekit_kept_path(const struct stack *st, char *out, size_t len,
    const char *name);

/* Waits (up to 10 s) until serve wrote job id's output file (records are
 * written off the request path), asserting it is there; its path into
 * out. */
void servekit_wait_output(const struct stack *st, const char *id, char *out,
    size_t len);

/* The parent pid of pid, and its state letter into *state when state is
 * not NULL: -1 when /proc cannot tell. */
pid_t servekit_parent_of(pid_t pid, char *state);

/* A call to serve on its own connection, on a thread of its own
 * (servekit_call_run): what came back and when it ended, in the order of
 * the test's steps and of the calls' ends. The test sets serve, key,
 * method (NULL: GET), path, mu, step, ends (NULL: not counted) and
 * ended_at -1. */
struct servekit_call {
	pthread_t thread;
	const struct daemon *serve;
	const char *key;
	const char *method;
	char path[200];
	long status; /* 0: no answer */
	char error[64], message[512]; /* a JSON answer's */
	pthread_mutex_t *mu;
	int *step; /* the test's steps so far */
	int *ends; /* the calls ended so far */
	int ended_at; /* *step when the answer came; -1: none yet */
	int end_index; /* its place among the calls' ends */
};

/* The thread of a struct servekit_call (arg): makes the call (90 s at
 * most) and notes its end under c->mu. */
void *servekit_call_run(void *arg);
/* Sets the test's *step to to under mu. */
void servekit_step(pthread_mutex_t *mu, int *step, int to);
/* c's ended_at, read under its lock. */
int servekit_call_ended(struct servekit_call *c);

#endif
