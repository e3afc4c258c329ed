/*
 * What the operator's commands share (cordon manifest, jobs, logs, patch,
 * revoke): the configuration and the key it names, a call that says what
 * went wrong on stderr, and printing what a service or a job chose on a
 * terminal without its control characters. Keys come from the files the
 * configuration names, never from the command line.
 */
#ifndef CORDON_CLI_H
#define CORDON_CLI_H

#include "launcher.h"

#include <stdio.h>

#define CLI_KEY_MAX 128

struct cli {
	const char *prog; /* "cordon jobs": the prefix of each message */
	struct launcher_config cfg;
	bool loaded;
	char key[CLI_KEY_MAX];
};

/* The key a command needs. */
enum cli_key {
	CLI_KEY_LAUNCHER,
	CLI_KEY_ADMIN,
};

/*
 * Loads the configuration at config (NULL: the defaults) and the key it
 * names: 0, or the exit status (78) with the reason printed.
 */
int cli_open(struct cli *c, const char *prog, const char *config,
    enum cli_key key);

/* Wipes the key and frees the configuration; a second call is fine. */
void cli_close(struct cli *c);

/*
 * Calls method base+path with c's key and body (borrowed): 0 when a 2xx
 * answer came (release *a with httpc_answer_free), else the exit status
 * with the reason printed: 1 when the service refused (its error and
 * message), 69 when it did not answer. *a is empty then.
 */
int cli_call(struct cli *c, const char *base, const char *method,
    const char *path, const json_t *body, struct httpc_answer *a);

/* Prints s on f with every control character but newline and tab shown as
 * '?': what a job or a peer chose never drives the terminal. */
void cli_print_clean(FILE *f, const char *s, size_t len);

/* Unix time t as "2026-12-01T09:50:00Z" into buf (>= 21 bytes); "-" for
 * a null or missing time. */
const char *cli_time(const json_t *t, char *buf, size_t len);

#endif
