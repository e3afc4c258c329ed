/*
 * cordon serve's root part. Before serve reads its keys or opens its
 * socket it forks the spawner, joined to it by a SOCK_SEQPACKET
 * socketpair; the HTTP part then drops root (spawner_drop_root) and a
 * profile with no exec, mounts, namespaces or id changes. The spawner
 * keeps what cordon run needs to build a sandbox and does three things,
 * asked in capped, fixed-format messages: run a job (`cordon run --json`
 * with a manifest, inputs and a command it puts in its own argv, the
 * result, id, live and stderr pipes passed in over SCM_RIGHTS), run
 * `cordon recover --log`, stop (SIGTERM) a child of its own, and open a
 * job's patch in its state directory, read-only, for the HTTP part. It
 * answers with the child's pid and tells each child's exit status. When
 * the HTTP part's end closes it stops its children, waits for them and
 * exits.
 */
#ifndef CORDON_SPAWNER_H
#define CORDON_SPAWNER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SPAWNER_MSG_MAX (128 * 1024)
#define SPAWNER_EXITED_MAX 4096
/* How long a request waits for the spawner's answer. One that does not
 * come makes the spawner lost: asked nothing more (a late answer would be
 * taken for the next request's), its end shut down (a spawner that comes
 * back stops its children and exits), every later request -ETIMEDOUT. */
#define SPAWNER_ANSWER_MS 30000 /* the default: serve_spawner_seconds */

/* The HTTP part's end: the statuses told and not yet asked for. mu guards
 * the rest and is never held across a wait; ask_mu keeps one request at
 * a time (the answers come in order), held across its wait, which
 * SPAWNER_ANSWER_MS bounds. */
struct spawner {
	int fd; /* -1: none */
	pid_t pid;
	int answer_ms; /* a request's wait (0: SPAWNER_ANSWER_MS) */
	pthread_mutex_t mu, ask_mu;
	struct {
		pid_t pid;
		int status;
	} exited[SPAWNER_EXITED_MAX];
	size_t nexited;
	bool asking; /* a request waits for its answer */
	bool answered;
	int32_t answer;
	int answer_fd; /* a descriptor with the answer, or -1 */
	bool gone; /* its end closed: no status will come */
	bool lost; /* it did not answer in time: gone too */
};

/*
 * Forks the spawner, which confines itself (confine_spawner) and runs
 * cordon (the program's path) with --config config_path (NULL: none)
 * for each request, and opens <state_dir>/<job>.patch. Call it before any thread starts and before keys
 * are read. 0 or -errno.
 */
int spawner_start(struct spawner *sp, const char *cordon,
    const char *config_path, const char *state_dir);

/*
 * Asks for `cordon run --json --id-fd 3 [--config] --manifest manifest
 * [--input in]... [-- command...]` with stdout, fd 3, fd 4 and stderr
 * on fds[0..3]. The child's pid, or -errno (-E2BIG: the request exceeds
 * SPAWNER_MSG_MAX).
 */
pid_t spawner_run(struct spawner *sp, const char *manifest,
    const char *const *inputs, size_t ninputs, const char *const *command,
    size_t ncommand, const int fds[4]);

/* Asks for `cordon recover --log [--config]`, its output to the
 * spawner's stderr: the child's pid, or -errno. */
pid_t spawner_recover(struct spawner *sp);

/* Asks the spawner to open <state_dir>/<job>.patch (cordon run writes it
 * as root, 0600) read-only: the descriptor, or -errno (-EINVAL: job is
 * not a name). */
int spawner_open_patch(struct spawner *sp, const char *job);

/* Asks the spawner to remove <state_dir>/<job>.patch (a job forgotten):
 * 0, or -errno (-ENOENT: there was none; -EINVAL: job is not a name). */
int spawner_remove_patch(struct spawner *sp, const char *job);

/* Asks the spawner to send SIGTERM to its child pid, never waiting: 0 or
 * -errno (-EAGAIN: its socket is full). */
int spawner_stop(struct spawner *sp, pid_t pid);

/*
 * Whether the child pid ended, as waitpid would say, waiting up to
 * timeout_ms (0: not at all): 1 with *status, 0 not yet, -EPIPE when the
 * spawner is gone (its children too: it stops them as it goes).
 */
int spawner_reaped(struct spawner *sp, pid_t pid, int *status, int timeout_ms);

/* 0 while the spawner answers; -ETIMEDOUT once it is lost (a request
 * got no answer in SPAWNER_ANSWER_MS), -EPIPE once it is gone. */
int spawner_status(struct spawner *sp);

/* Closes the HTTP part's end (the spawner stops what runs) and waits for
 * the spawner (a lost one at most SPAWNER_ANSWER_MS): its exit status as
 * waitpid's, or -1. */
int spawner_close(struct spawner *sp);

/* The user the HTTP part drops to: cordon-serve, else nobody. 0, or
 * -ENOENT when neither exists (or it is root). */
int spawner_serve_user(uid_t *ret_uid, gid_t *ret_gid);

/*
 * The HTTP part's drop, when it runs as root: to the user cordon-serve
 * (else nobody), no supplementary groups, every capability gone from
 * the bounding set, the permitted and effective sets empty. 0 (also when
 * not root: nothing to drop), or -errno.
 */
int spawner_drop_root(void);

#endif
