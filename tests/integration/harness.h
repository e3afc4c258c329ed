/*
 * The integration harness: starts the real cordon programs on free
 * loopback ports, each in a temporary directory of its own, waits until
 * they answer /healthz, and always stops them: they die with the test
 * process (PR_SET_PDEATHSIG), however it ends. harness_main runs a suite
 * and prints the logs of every daemon of a failed test.
 */
#ifndef CORDON_HARNESS_H
#define CORDON_HARNESS_H

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct daemon {
	const char *name; /* "broker", "proxy", "hatch", "launcher" */
	pid_t pid;
	bool has_config;
	size_t listening_seen; /* "listening" lines of earlier starts */
	char dir[256]; /* its working directory; state under dir/var */
	char log[300]; /* its stderr and stdout */
	char addr[64]; /* "127.0.0.1:port" */
	char base[96]; /* "http://127.0.0.1:port" */
	/* Run before the program, which is appended to it (NULL: none): a
	 * wrapper that sets up what a systemd unit would, then execs it. */
	const char *const *wrap;
};

/* Runs the suite (each test in its own process), prints the logs of the
 * daemons of failed tests, removes the temporary files: the exit status. */
int harness_main(Suite *suite);

/* The path of a built program ("cordon-broker", "cordon"): storage of its
 * own, valid and unchanged until exit, whatever is called after. */
const char *harness_bin(const char *prog);

/* A fresh temporary directory for one test (removed at exit): its path. */
const char *harness_tmpdir(void);

/*
 * Starts the service name with --listen 127.0.0.1:0 in a new temporary
 * directory; when config is not NULL it is written to dir/config.json and
 * passed with --config. Returns 0 once /healthz answers 200, or -1 (and
 * the log is printed) when it did not within 10 s.
 */
int daemon_start(struct daemon *d, const char *name, const char *config);

/* daemon_start with the program run by wrap (argv, NULL-terminated, at
 * most 8 entries, kept by reference): wrap... program args... */
int daemon_start_wrapped(struct daemon *d, const char *name, const char *config,
    const char *const *wrap);

/*
 * Sends SIGTERM and waits up to 10 s: the exit status (0..255), 128+sig
 * when killed by a signal, or -1 when it had to be killed after 10 s. The
 * log is printed when the status is not 0.
 */
int daemon_stop(struct daemon *d);

/* Prints the daemon's log to stderr under a header. */
void daemon_dump_log(const struct daemon *d);

/* The daemon's log as JSON lines, parsed: an array (json_decref it). A
 * line that is not JSON is kept as a string, so a test can see it. */
json_t *daemon_log_lines(const struct daemon *d);

/* Runs argv (argv[0] a path) with a 10 s limit, capturing stdout and
 * stderr into the buffers given (NUL-terminated): the exit status or -1. */
int harness_run(char *const argv[], char *out, size_t outlen, char *err,
    size_t errlen);
/* The same with a limit of limit_ms. */
int harness_run_for(char *const argv[], int limit_ms, char *out, size_t outlen,
    char *err, size_t errlen);

/* GET base+path; NULL with *ret_status 0 when no answer came. */
json_t *harness_get_json(const struct daemon *d, const char *path,
    long *ret_status);

/*
 * Calls method path on d with an optional bearer key, an optional extra
 * header ("Name: value") and an optional JSON body (borrowed). Returns the
 * answer's JSON (json_decref it; NULL when it was not JSON) and its status
 * in *ret_status (0 when no answer came).
 */
json_t *harness_call(const struct daemon *d, const char *method,
    const char *path, const char *key, const char *header, json_t *body,
    long *ret_status);

/*
 * harness_call, then asserts the status is want and that an error (4xx,
 * 5xx) is JSON with "error" and "message". Takes body; returns the JSON.
 */
json_t *harness_expect(const struct daemon *d, long want, const char *method,
    const char *path, const char *key, const char *header, json_t *body);

/* How many of the broker's last 1,000 audit records are of event (GET
 * /v1/audit with admin, asserted 200). */
int harness_audit_count(const struct daemon *broker, const char *admin,
    const char *event);

/* Kills d with SIGKILL and reaps it: a crash, on purpose. */
void daemon_kill(struct daemon *d);

/* Restarts d in its own directory, with the same arguments and on the
 * same address: 0 or -1. */
int daemon_restart(struct daemon *d);

/* Writes text to path (mode 0600), asserting it worked. */
void harness_write_file(const char *path, const char *text);

/* The broker's key for role ("admin", "launcher", "verifier"), as it
 * wrote it under its state directory: asserted to be there. */
/* The SHA-256 (hex) of the key in the file at path, as a proxy's
 * launcher_key_sha256 takes it: a static buffer, until the next call. */
const char *harness_key_sha256(const char *path);
/* harness_key_sha256 of broker's launcher key: what a test's proxy is
 * given instead of the key file. */
const char *harness_launcher_sha256(const struct daemon *broker);

void harness_broker_key(const struct daemon *broker, const char *role,
    char *out, size_t len);

/* The mount points at or under root, in mount order (strdup'd: free
 * each), at most max: how many. */
size_t harness_mounts_under(const char *root, char **out, size_t max);

/* Reads a file's first line into buf (newline dropped): 0 or -1. */
int harness_read_line(const char *path, char *buf, size_t len);

/* Whether every thread of pid is stopped (state T in its
 * /proc/PID/task/TID/stat), waiting up to 5 s for a SIGSTOP's group stop
 * to complete. */
bool harness_all_stopped(pid_t pid);

/* Whether broker's introspection, asked with the verifier key, says tok
 * is active (asserting it answered 200). */
bool harness_token_active(const struct daemon *broker, const char *verifier,
    const char *tok);

/*
 * The three services and a launcher's configuration, as the tests of
 * `cordon run` use them: the broker (with broker_config, NULL for the
 * defaults) and its three keys; the proxy, with the verifier key's copy
 * and a hosts_file of hosts (lines "127.0.0.1 name"); the hatch, whose
 * input root is inputs; and launcher_cfg, a launcher configuration for
 * them with its own state, runtime directory and uids [uid_base,
 * uid_base + 1000); with drill, also the verifier key's copy and a
 * drill_dir under the input root, for `cordon drill`.
 */
struct stack {
	struct daemon broker, proxy, hatch;
	char admin[128], launcher[128], verifier[128];
	char verifier_file[400]; /* the copy of the verifier key */
	char inputs[300]; /* the hatch's input root */
	char launcher_cfg[400];
	char launcher_dir[300]; /* state/ and run/ of the launcher */
};

struct stack_options {
	const char *broker_config;
	const char *hosts;
	int uid_base;
	bool drill;
	const char *upstream_ca_file; /* the proxy's, for TLS upstreams */
	const char *const *hatch_wrap; /* daemon_start_wrapped's, the hatch's */
};

/* Starts s as o says, asserting each step. */
void stack_start(struct stack *s, const struct stack_options *o);

/* Stops the hatch, the proxy and the broker. */
void stack_stop(struct stack *s);

#endif
