/*
 * cordon: the thin launcher. It holds no policy: it asks the broker for a
 * job's capabilities and allowlist, spawns the sandbox wired only to the
 * proxy, and on stop revokes the job's tokens at the broker before the
 * hatch emits the patch. `cordon serve` is its HTTP API for orchestrators.
 */
#ifndef CORDON_LAUNCHER_H
#define CORDON_LAUNCHER_H

#include "config.h"
#include "http_client.h"
#include "keys.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define LAUNCHER_PROG "cordon"
#define LAUNCHER_LISTEN "127.0.0.1:7704"

struct launcher_config {
	struct config_common common;
	char *broker; /* "http://127.0.0.1:7701" */
	char *proxy; /* the proxy's control API */
	char *hatch;
	char *launcher_key_file;
	long long uid_base; /* each job runs as its own uid of this range */
	long long uid_count;
	char *cgroup_root; /* NULL: found, /sys/fs/cgroup[/unified] */
	/* `cordon drill` only: where it stages its agent (a directory under
	 * one of the hatch's input_roots), and the broker's verifier key to
	 * replay a stopped job's token at introspection (NULL: not tried). */
	char *drill_dir;
	char *verifier_key_file;
	/* `cordon serve` only: the key that signs a job's callback (NULL:
	 * callbacks refused), and where a callback may go: URL prefixes
	 * ("http://host[:port][/path]") or hosts ("host[:port]"); empty:
	 * nowhere. */
	char *callback_key_file;
	struct config_strings callback_allow;
	/* The operator's commands (cordon manifest, jobs, logs, patch,
	 * revoke): the broker's admin key, where serve is, and the proxy's
	 * decision log (NULL: only the proxy's API is asked). */
	char *admin_key_file;
	char *serve;
	char *decision_log;
	/* cordon serve: finished jobs kept (records and patches), the
	 * newest serve_keep_jobs and any that ended within
	 * serve_keep_seconds */
	long long serve_keep_jobs;
	long long serve_keep_seconds;
	/* cordon serve: how long a request waits for the spawner's answer
	 * before the spawner is lost (spawner.h) */
	long long serve_spawner_seconds;
};

/* The options both `cordon run` and `cordon serve` read. */
extern const struct config_option launcher_options[];
extern const size_t launcher_noptions;

/* The defaults alone (the layout's key files, as launcher_source_tree
 * tells): 0 or -ENOMEM. */
int launcher_config_defaults(struct launcher_config *cfg);

/*
 * The source tree this program was built in: <top> of <top>/<build>/bin/
 * <program> when <top>/deploy/quickstart.sh is there, into out; -ENOENT
 * for an installed program.
 */
int launcher_source_tree(char *out, size_t len);

/*
 * The configuration used without --config: $CORDON_CONFIG when set (set
 * but empty: none, out ""), else the source tree's var/launcher.json (the
 * quickstart's) when there is one, else /etc/cordon/launcher.json when it
 * exists. 0 with the path in out, or -ENOENT with the places looked at in
 * looked.
 */
int launcher_config_find(char *out, size_t len, char *looked, size_t lookedlen);

/*
 * Defaults, then the file at path (NULL: the one launcher_config_find
 * finds, and none found is an error naming the places looked at), then
 * the directories, made when root: 0, or -1 with one line in err (and
 * nothing left to free).
 */
int launcher_config_load(struct launcher_config *cfg, const char *path,
    char *err, size_t errlen);

/* launcher_config_load without the directories: 0, or -1 with one line in
 * err (and nothing left to free). cordon run reads its key before it
 * makes any. */
int launcher_config_read(struct launcher_config *cfg, const char *path,
    char *err, size_t errlen);

/* The directories of cfg made (mode 0700) and made absolute, when root:
 * 0, or -1 with one line in err (cfg still to be freed). */
int launcher_config_make_dirs(struct launcher_config *cfg, char *err,
    size_t errlen);
void launcher_config_free(struct launcher_config *cfg);

struct sjob;

/* `cordon serve`: the jobs it runs, each a `cordon run` of its own. */
struct launcher {
	struct launcher_config cfg;
	const char *config_path; /* handed to each cordon run */
	char cordon[4096]; /* the cordon program each job runs as */
	struct keyring keys;
	pthread_mutex_t mu;
	struct sjob *jobs; /* a list, newest first */
	pid_t recover_pid; /* a `cordon recover` running, or 0 */
	time_t recover_at; /* when the next one runs */
};

/* Reads a key file into out with keys_read (common/keys.h): 0 or its
 * -errno. */
int launcher_read_key(const char *path, char *out, size_t len);

/* The path of the program name beside this one (cordon and cordon-serve
 * are installed side by side): 0 or -errno. */
int launcher_sibling(const char *name, char *out, size_t len);

/* A service's error as one line: its message, and the first of its
 * problems when it lists them (a buffer of the thread's). */
const char *launcher_answer_message(const struct httpc_answer *a);

/* What the hatch gave back at a job's end. */
struct collected {
	bool none; /* the hatch has no workspace for the job */
	char verdict[32]; /* "" when there was no seal */
	char patch
	    [PATH_MAX]; /* where the patch was written whole; "" when not */
	json_t *report; /* the seal's answer, or NULL */
	/* Why the workspace is kept at the hatch; "" when it was removed (or
	 * there was none). */
	char kept[800];
};

/*
 * Seals job's workspace at hatch, fetches the patch, checks it against the
 * seal's sha256 and writes it whole to patch_path, and only then removes
 * the workspace. When a step fails the workspace stays and c->kept says
 * why. json_decref(c->report) after.
 */
void launcher_collect(const char *hatch, const char *key, const char *job,
    const char *patch_path, struct collected *c);

/*
 * The record of a job in flight, <state_dir>/running/<job>, created and
 * locked for as long as the descriptor in *ret_fd is open: 0 or -errno.
 * launcher_record_close removes it only when finished says the stop path
 * got to its end; otherwise `cordon recover` finishes the job.
 */
int launcher_record_open(const char *state_dir, const char *job,
    const char *patch, int *ret_fd);
void launcher_record_close(const char *state_dir, const char *job, int fd,
    bool finished);
/* Marks the record (fd, as launcher_record_open made it) started: it says
 * "never_ran" until the job's sandbox is about to be told to go, and from
 * then on recover seals the workspace rather than release it. Rewritten
 * in place, padded to the same length, in one write: 0 or -errno. */
int launcher_record_started(int fd, const char *job, const char *patch);

/* Finishes every job whose record is not held by a live launcher; one
 * object per job tried is appended to out. The number left for another
 * try, or -errno. */
int launcher_recover_all(const struct launcher_config *cfg, const char *key,
    json_t *out);

/* `cordon recover [--json | --log] [--config FILE]`: argv[0] is
 * "recover". Exit 0 when nothing is left, 1 when a job is left for the
 * next try. */
int launcher_recover(int argc, char **argv);

/* `cordon serve [flags]`, run by cordon-serve: cordon execs it, so that
 * the command line never loads the HTTP server (libmicrohttpd and gnutls
 * cost every `cordon run` 4.5 ms at start). Returns the exit status. */
int launcher_serve(int argc, char **argv);

/* `cordon run --manifest NAME ...`: argv[0] is "run". */
int launcher_run(int argc, char **argv);

/* `cordon stop JOB [--config FILE]`: asks cordon serve to stop JOB. */
int launcher_stop(int argc, char **argv);

/* `cordon drill --manifest NAME [--json]`: argv[0] is "drill". */
int launcher_drill(int argc, char **argv);

/* `cordon lint FILE...`: argv[0] is "lint". Returns the exit status. */
int launcher_lint(int argc, char **argv);

/* The operator's commands, each with argv[0] its name: `cordon manifest
 * put|get|list|diff`, `cordon jobs`, `cordon logs JOB`, `cordon patch JOB`,
 * `cordon revoke JOB --reason R`. Each returns the exit status. */
int launcher_manifest(int argc, char **argv);
int launcher_jobs(int argc, char **argv);
int launcher_logs(int argc, char **argv);
int launcher_patch(int argc, char **argv);
int launcher_revoke(int argc, char **argv);
/* `cordon egress-report [--manifest NAME] [--since 7d] [--json]`: the
 * denial report (cli_report.c, report.c). */
int launcher_egress_report(int argc, char **argv);

/*
 * Copies a chunk of the job's output (stderr when is_err), cleaned, as one
 * JSON line to the pipe CORDON_OUTPUT_FD names, when cordon serve gave one;
 * otherwise does nothing. Never blocks: a reader that is gone, or a full
 * pipe, turns the copy off.
 */
void launcher_output_tee(bool is_err, const void *data, size_t len);

/* Tells that pipe, before any chunk, each stream's cap (output_kb in
 * bytes) as {"output_cap": cap}; nothing without a pipe or a cap. */
void launcher_output_tee_cap(uint64_t cap);

/* The whole --help of command cmd ("run", "stop", ...) on f: 0, or -ENOENT
 * for a command without one here. */
int launcher_help(const char *cmd, FILE *f);

#endif
