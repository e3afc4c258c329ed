/*
 * The injection-test kit: the set-up the proxy's injection and reflection
 * tests share. One call starts a broker (its admin, launcher and verifier
 * keys), a python upstream script on a free loopback port, a proxy that
 * resolves api.test and www.api.test to 127.0.0.1, PUTs the secret up-key
 * and the manifest "redteam" (rule 0: api.test's /case/ injects up-key
 * into a header; rule 1: www.api.test's /open/ injects nothing), creates a
 * job at the broker and the proxy and asks, through the job's channel, for
 * an x.read token. The helpers send raw requests on the channel and read
 * the proxy's /metrics. Every failure is a check assertion.
 */
#ifndef CORDON_IT_INJECTKIT_H
#define CORDON_IT_INJECTKIT_H

#include "harness.h"
#include "upstream.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What differs between the tests that use the kit. */
struct injectkit_opts {
	const char *script; /* the upstream's python script, a full path */
	const char *port_file; /* its --port-file's name in harness_tmpdir() */
	const char *follower; /* the proxy's "follower" */
	const char *proxy_extra; /* more members of the proxy's config ("\"k\":
				  v"), or NULL */
	const char *value; /* up-key's value */
	bool post; /* rule 0 allows POST besides GET and HEAD */
	const char *header; /* rule 0's inject header, NULL: X-Api-Key */
	const char *format; /* rule 0's inject format, NULL: "Key {secret}" */
};

/* A running stack; filled by injectkit_start. */
struct injectkit {
	struct daemon broker, proxy;
	char admin[128], launcher[128], verifier[128];
	char job[64], channel[300], tok[512];
	char ca_pem[4096]; /* the job's CA, as the proxy gave it */
	pid_t up_pid;
	unsigned up_port;
};

/*
 * Starts the python upstream script (a full path) with "--port-file
 * <tmpdir>/port_file" and "--key key" when key is not NULL, waits (10 s
 * at most) until it wrote its port and returns its pid (> 1) with the
 * port in *port. Asserts on failure.
 */
pid_t injectkit_upstream_start(const char *script, const char *port_file,
    const char *key, unsigned *port);

/*
 * injectkit_upstream_start of tests/integration/jobs/<script> (a path
 * "dir/name.py"), its port file "name.py.port".
 */
pid_t injectkit_jobs_upstream(const char *script, const char *key,
    unsigned *port);

/*
 * Kills (SIGKILL) and reaps the upstream *pid when it is > 1, and sets
 * *pid to -1. Safe to call again.
 */
void injectkit_upstream_stop(pid_t *pid);

/*
 * Starts k's broker (its three keys in k), writes hosts (a hosts file's
 * text) and k's verifier key to harness_tmpdir() and starts k's proxy with
 * them, follower and proxy_extra (more config members, or NULL); SIGPIPE
 * ignored. Asserts on failure.
 */
void injectkit_stack_start(struct injectkit *k, const char *hosts,
    const char *follower, const char *proxy_extra);

/*
 * injectkit_stack_start with the broker's configuration broker_cfg (a
 * JSON object's text, not NULL) in place of {"log_level": "info"}.
 */
void injectkit_stack_start_cfg(struct injectkit *k, const char *broker_cfg,
    const char *hosts, const char *follower, const char *proxy_extra);

/* PUTs the secret name with value at k's broker (asserts 200). */
void injectkit_secret(struct injectkit *k, const char *name, const char *value);

/*
 * PUTs the secret name at k's broker (asserts 200) as the test issuer's
 * (issuerkit.h) OAuth client on 127.0.0.1:iport: kind
 * oauth_client_credentials, its /oauth/token and /oauth/revoke, client
 * cordon-test with secret s3cret-client, scope things:read.
 */
void injectkit_oauth_secret(struct injectkit *k, const char *name,
    unsigned iport);

/*
 * PUTs the manifest m (taken; not NULL, asserted) as name, creates a job
 * of it at k's broker and proxy (k->job, k->channel, k->ca_pem) and asks,
 * on the channel, for a token of capability x.read with params {"t": "1"}
 * (k->tok). Asserts on failure.
 */
void injectkit_job_start(struct injectkit *k, const char *name, json_t *m);

/*
 * PUTs the manifest m (taken; not NULL, asserted) as name and creates a
 * job of it at k's broker and proxy: its id into job, its channel's path
 * into channel, the proxy's CA for it into ca_pem (job and ca_pem may be
 * NULL: not kept). k's own job is left as it was. Asserts on failure.
 */
void injectkit_job_open(struct injectkit *k, const char *name, json_t *m,
    char job[64], char channel[300], char ca_pem[4096]);

/*
 * Creates a job of the manifest name, already PUT, at k's broker and its
 * channel at k's proxy, into job, channel and ca_pem as
 * injectkit_job_open (which is its PUT and this). wait_ms > 0: while the
 * proxy answers 503 (its feed not back yet, as after a broker's restart)
 * the channel is asked again, for wait_ms at most; 0: once. k's own job
 * is left as it was. Asserts on failure.
 */
void injectkit_job_of(struct injectkit *k, const char *name, int wait_ms,
    char job[64], char channel[300], char ca_pem[4096]);

/*
 * Asks, on the job channel at path channel, for a token of capability
 * x.read with params {"t": "1"} into tok (len bytes). Asserts on failure.
 */
void injectkit_mint_on(const char *channel, char *tok, size_t len);

/*
 * The injecting rule 0 of the manifests of injectkit.h: api.test on k's
 * upstream port, GET and HEAD (and POST when post), paths /case/, up-key
 * injected into header (NULL: X-Api-Key) as format (NULL: "Key {secret}")
 * for capability x.read. A new reference, NULL when out of memory.
 */
json_t *injectkit_inject_rule(const struct injectkit *k, bool post,
    const char *header, const char *format);

/*
 * A reading job's rule that injects nothing: host on k's upstream port,
 * GET, paths /open/, reason "the public part", 127.0.0.0/8. A new
 * reference, NULL when out of memory.
 */
json_t *injectkit_open_rule(const struct injectkit *k, const char *host);

/*
 * The manifest "writer" (injectkit_manifest) of the injecting rule 0
 * alone, GET and HEAD, its header and format the defaults. A new
 * reference, NULL when out of memory.
 */
json_t *injectkit_writer_manifest(const struct injectkit *k);

/*
 * A manifest named name with command /bin/true, capability x.read
 * (audience api, params t: 1, 600 s) and egress, an array (taken; not
 * NULL, asserted). A new reference, NULL when out of memory.
 */
json_t *injectkit_manifest(const char *name, json_t *egress);

/*
 * Starts the whole stack described above into k, with SIGPIPE ignored.
 * Asserts on every failure (the daemons die with the test process).
 */
void injectkit_start(struct injectkit *k, const struct injectkit_opts *o);

/* Stops the proxy, the upstream and the broker of k. */
void injectkit_stop(struct injectkit *k);

/*
 * Defines a test file's check fixture: static setup, injectkit_start of
 * the kit k with the options o, and static teardown, injectkit_stop of k.
 */
#define INJECTKIT_FIXTURE(k, o)                                                \
	static void setup(void)                                                \
	{                                                                      \
		injectkit_start(&(k), &(o));                                   \
	}                                                                      \
	static void teardown(void)                                             \
	{                                                                      \
		injectkit_stop(&(k));                                          \
	}

/*
 * Sends req (a whole raw request) on the job channel at path channel, and
 * returns what came back in 5 s, "" when the connect or the exchange
 * failed; never NULL; the caller frees it.
 */
char *injectkit_send_on(const char *channel, const char *req);

/*
 * Sends a reading job's "GET http://host:<k's upstream port>/open/<what>"
 * with no token and "Connection: close" on the job channel at path
 * channel; returns the answer as injectkit_send_on.
 */
char *injectkit_get_open(const struct injectkit *k, const char *channel,
    const char *host, const char *what);

/* injectkit_send_on on k's channel. */
char *injectkit_send(const struct injectkit *k, const char *req);

/*
 * The value of the metric line "name <value>" of the proxy's /metrics
 * (read with curl; a broker's as well), -1 when there is no such line.
 */
long injectkit_metric(const struct daemon *proxy, const char *name);

/*
 * Whether the proxy's decisions.log (its first 4 MiB) holds needle; false
 * when it cannot be opened.
 */
bool injectkit_decisions_hold(const struct daemon *proxy, const char *needle);

/* Whether d's log (daemon_log_lines) has a line of event. */
bool injectkit_logged(const struct daemon *d, const char *event);

/* Whether resp holds any 6 bytes in a row of value. */
bool injectkit_holds_piece(const char *value, const char *resp);

/*
 * Writes into out (cap bytes, truncated) the job's raw request "method
 * http://host:<k's upstream port>path" with a Host header, k's token as
 * a bearer Authorization when with_token, and "Connection: conn".
 */
void injectkit_request_to(const struct injectkit *k, char *out, size_t cap,
    const char *host, const char *method, const char *path, bool with_token,
    const char *conn);

/*
 * Sends a "Connection: close" request for method path to api.test (the
 * injecting rule's host) on k's channel, k's token when with_token;
 * returns the answer as injectkit_send.
 */
char *injectkit_ask(const struct injectkit *k, const char *method,
    const char *path, bool with_token);

#endif
