/*
 * The hatch's sealer: one helper process the hatch forks at start, before
 * it reads its keys, opens its socket, confines itself or starts a
 * thread, and asks for every seal over a seqpacket pair. The helper keeps
 * only what a seal needs (docs/threat-model.md): uid nobody, no root
 * directory but the workspaces', CAP_DAC_READ_SEARCH (the job's files,
 * whatever their modes), CAP_SYS_ADMIN (the overlay's trusted.overlay.*
 * xattrs) and CAP_SYS_CHROOT (each worker's root), no_new_privs, a
 * Landlock domain that reads beneath the workspaces and writes nowhere,
 * and an allow list of system calls. For each seal it forks a worker,
 * which takes its workspace as its root directory and a Landlock domain
 * beneath it, gives up CAP_SYS_CHROOT, reads the opaque marks, gives up
 * CAP_SYS_ADMIN, fork and signals, and reads the job's tree with
 * CAP_DAC_READ_SEARCH alone; the helper kills a worker that outlives the
 * seal deadline, through a pidfd (it has no kill(2)). Nothing a job wrote
 * reaches the helper itself: a worker that a hostile tree subverts holds
 * one workspace's files, read-only, and the two output files, and dies
 * with its seal. A helper that is gone is not forked again (sealer_gone).
 */
#ifndef CORDON_HATCH_SEALER_H
#define CORDON_HATCH_SEALER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SEALER_DEFAULT_DEADLINE_S 300
#define SEALER_MAX_DEADLINE_S 86400

struct sealer {
	pid_t pid; /* the helper; 0 once reaped */
	int fd; /* the hatch's end of the pair; -1 once the helper is gone */
	long deadline_s;
	char gone[200]; /* why there is no helper ("" while there is) */
};

/* Who sealed: the worker's pid and uid, its seccomp mode, no_new_privs
 * and effective capabilities as it read them once confined (-1
 * unknown), whether a socket(2) it tried then was refused; and, for a
 * seal that failed, why, in words. */
struct seal_child {
	long pid;
	long uid;
	long seccomp;
	long no_new_privs;
	long long cap_eff;
	bool socket_refused;
	char reason[240];
};

/*
 * Forks the helper, which takes root (an existing directory: the
 * workspaces) as its root directory and drops to what a seal needs
 * before it answers; deadline_s bounds each seal. Call it while the
 * process has one thread and every privilege. 0, or -errno (no helper:
 * s->gone says why).
 */
int sealer_start(struct sealer *s, const char *root, long deadline_s);

/*
 * Has the helper seal the workspace open at dir_fd for job, writing the
 * patch to patch_fd and the report to report_fd; output_fd holds the
 * job's output ({"stdout", "stderr"} in base64) as JSON, read from its
 * start, capped at output_kb each in the report. Waits at most the
 * deadline and a few seconds more. 0; -ETIMEDOUT (the worker outlived the
 * deadline and was killed); -EIO (the worker died); -EPIPE (no helper, or
 * it died or hung: killed, and every later call answers -EPIPE;
 * sealer_gone then says so);
 * -EINVAL (output not base64); or the worker's own -errno. child gets who
 * sealed and, on failure, the reason.
 */
int sealer_seal(struct sealer *s, int dir_fd, const char *job, int output_fd,
    long output_kb, int patch_fd, int report_fd, struct seal_child *child);

/*
 * Whether the helper is gone: a seal lost it (sealer_seal's -EPIPE), or
 * it died while idle (then reaped here). s->gone says why. The helper is
 * never forked again: only a process that can still drop to nobody could
 * (the hatch's filter refuses uid changes), so the hatch stops with
 * EXIT_OSERR and its supervisor starts it again (hatch.c). Call it under
 * the lock sealer_seal is called under.
 */
bool sealer_gone(struct sealer *s);

/* Closes the pair and reaps the helper (it exits when the pair closes;
 * one that has not within 2 s, hung, is killed). Safe on a sealer never
 * started or already stopped. */
void sealer_stop(struct sealer *s);

/*
 * What the helper does to itself at start, as root in a process of one
 * thread whose parent is parent: root (a directory) as its root
 * directory, nobody, its capabilities and its filter. 0 or -errno. It
 * cannot be undone: sealer_start's child calls it, and tests in a child
 * of their own.
 */
int sealer_helper_confine(const char *root, pid_t parent);

struct seal_marks;

/*
 * What a worker does to itself, in a child of a confined helper: the
 * directory dir_fd (a workspace) as its root directory, CAP_SYS_CHROOT
 * given up, Landlock's read-only domain beneath it, the workspace's
 * opaque marks read into marks (seal.h; skipped when NULL), then
 * CAP_SYS_ADMIN given up and its filter on top of the helper's. 0 or
 * -errno. It cannot be undone.
 */
int sealer_worker_confine(int dir_fd, struct seal_marks *marks);

#endif
