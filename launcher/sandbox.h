/*
 * The sandbox: one job's processes in new pid, mount, net, ipc, uts and
 * cgroup namespaces, then a user namespace of their own, as an
 * unprivileged uid of the job's own, with no capabilities, no_new_privs
 * and the seccomp filter, in a session of their own (no controlling
 * terminal), the command holding descriptors 0, 1 and 2 and nothing
 * else. Their root is a read-only tmpfs holding the host's /usr and a
 * synthesised /etc; /proc is theirs (the host's information in it
 * masked), no /sys, /dev minimal, /tmp a tmpfs, /work the overlay of the
 * hatch's directories. The network
 * namespace has only lo: a socket listening on 127.0.0.1:3128 inside it
 * is handed to the launcher, which relays each connection to the job's
 * proxy channel. Nothing else leaves.
 *
 * The launcher must run as root: it makes the namespaces and mounts.
 */
#ifndef CORDON_LAUNCHER_SANDBOX_H
#define CORDON_LAUNCHER_SANDBOX_H

#include <stdbool.h>
#include <sys/types.h>

#define SANDBOX_UID 1000 /* the job's uid inside its user namespace */
#define SANDBOX_PROXY_PORT 3128
/* The job's HOME: a directory of its own on its /tmp, outside /work, so
 * that tool caches (.npm, .cache, .gitconfig) never reach the patch. */
#define SANDBOX_HOME "/tmp/home"

struct sandbox_spec {
	char *const *argv; /* the command; argv[0] a path inside */
	char *const *envp; /* the whole environment: nothing is inherited */
	const char *lower, *upper, *work; /* the hatch's directories */
	const char *ca_pem; /* the job's CA, added to the trust bundle */
	/* /run/cordon/tokens.json (0400, the job's), or NULL: none. */
	const char *tokens_json;
	/* Canary tokens planted as a decoy credentials file, or NULL. */
	const char *canaries_text;
	uid_t uid; /* the job's uid outside, its own */
	gid_t gid;
	long long memory_mb, pids; /* 0: no limit */
	/* The job's cgroups (memory and pids set there): its v2 directory,
	 * or its v1 directories one per line (cgroup_job_dirs); or NULL:
	 * then memory and pids are rlimits of the command. */
	const char *cgroup_dir;
	int out_fd, err_fd; /* the job's stdout and stderr */
	/* The launcher's secret (its key), wiped from the sandbox's copy of
	 * the launcher's memory, as is the launcher's environment. */
	char *secret;
	size_t secret_len;
	/* Called with the init's pid once its network namespace exists and
	 * before the command runs (the launcher's own sockets in it, such
	 * as the job's resolver), or NULL. 0 or -errno: the spawn fails. */
	int (*in_netns)(pid_t pid, void *arg);
	void *netns_arg;
	/* Called right before the init is told to go (the command may run
	 * from then on); < 0 stops the spawn there. NULL: none. */
	int (*before_go)(void *arg);
	void *go_arg;
};

/* How each limit was enforced, for the run's report. */
struct sandbox_limits {
	const char *memory; /* "cgroup_v2", "cgroup_v1", "rlimit_as" or
			       "none" */
	const char *pids; /* "cgroup_v2", "cgroup_v1", "rlimit_nproc" (per
			     job: its own uid) or "none" */
};

struct sandbox {
	pid_t pid; /* the pid namespace's init, in ours */
	int proxy_fd; /* listening on 127.0.0.1:3128 in the job's netns */
	/* The init was told to go on: from then on the command may have
	 * run, whatever sandbox_spawn returns. */
	bool go_given;
	struct sandbox_limits limits;
};

/*
 * Starts the sandbox and the command in it. Returns 0 with *ret filled
 * once the command is about to be executed (or has failed to be: its
 * init then exits 127), or -errno with a one-line reason in err.
 */
int sandbox_spawn(const struct sandbox_spec *spec, struct sandbox *ret,
    char *err, size_t errlen);

/* Kills every process of the sandbox: its init, and with it its pid
 * namespace. Idempotent. */
void sandbox_kill(struct sandbox *sb);

/* Waits for the init: its status as waitpid gives it, or -errno. With
 * nohang, -EAGAIN while it runs. */
int sandbox_wait(struct sandbox *sb, bool nohang);

/*
 * Whether path, as this mount namespace sees it, is the directory the
 * hatch made: id is the hatch's "DEV:INO" of it (its workspace answer's
 * "ids"; st_dev and st_ino are the same in every mount namespace that
 * sees the directory). 0; -ENOENT (or another -errno of lstat) when
 * nothing is there, -ESTALE when another directory is (a hatch's tmpfs
 * that does not reach this namespace leaves the empty directory beneath
 * it), -EINVAL when id is not DEV:INO.
 */
int sandbox_workspace_check(const char *path, const char *id);

/* Hands the job's work tree to its uid: lchown of every file under
 * lower, and of upper and work (the launcher does this before the
 * spawn; the tree is the hatch's private copy). 0 or -errno. */
int sandbox_own_tree(const char *lower, const char *upper, const char *work,
    uid_t uid, gid_t gid);

#endif
