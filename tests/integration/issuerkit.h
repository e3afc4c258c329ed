/*
 * The test issuer's kit: jobs/issuers/issuer.py (OAuth client
 * credentials, RFC 7009 revocation and GitHub's installation tokens over
 * TLS on 127.0.0.1, a test CA's leaf) started on a free port or a given
 * one, stopped, and its events read back, as it_issuers and
 * it_issuers_fleet use it. Every failure is a check assertion.
 */
#ifndef CORDON_IT_ISSUERKIT_H
#define CORDON_IT_ISSUERKIT_H

#include <jansson.h>
#include <sys/types.h>

/*
 * Starts the issuer with its certificate for 127.0.0.1 from a test CA in
 * dir (made when dir/ca.pem is not there yet), its port file in dir, its
 * events appended to the file events, and args (more arguments,
 * NULL-terminated, at most 8; NULL: none); waits (10 s at most) for its
 * port. Returns its pid (> 1) with the port in *ret_port. Asserts.
 */
pid_t issuerkit_start(const char *dir, const char *events,
    const char *const *args, unsigned *ret_port);

/* Kills (SIGKILL) and reaps *pid when it is > 1; sets it to -1. */
void issuerkit_kill(pid_t *pid);

/* The issuer's events in the file events so far, of kind event (NULL:
 * all): a new array (json_decref it). */
json_t *issuerkit_events(const char *events, const char *event);

#endif
