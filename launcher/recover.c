/*
 * Jobs a launcher did not finish. Each `cordon run` keeps a record,
 * <state_dir>/running/<job>, from the moment the broker made the job until
 * its stop path has revoked it and brought its workspace back, and holds a
 * lock on it all that time (so does the sandbox's init, which shares the
 * descriptor). A record whose lock is free is a launcher that died, or a
 * stop path that could not finish (the broker or the hatch down).
 *
 * `cordon recover` finishes each such job in the stop path's order: the
 * revoke at the broker first, then the channel at the proxy, then the
 * seal, the patch written out and the workspace removed. The record goes
 * only when all of that is done; otherwise the next recover tries again.
 * cordon serve runs it at start, every 30 s, and when one of its jobs
 * ends badly.
 */
#include "launcher.h"

#include "cgroup.h"
#include "log.h"
#include "stoppath.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int
launcher_record_open(const char *state_dir, const char *job, const char *patch,
    int *ret_fd)
{
	char dir[PATH_MAX], path[PATH_MAX + 80], part[PATH_MAX + 80];
	json_t *rec;
	char *text;
	int fd, r = 0;

	snprintf(dir, sizeof(dir), "%s/running", state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	/* Made under a name recover skips, locked and written, then renamed:
	 * a recover never sees the record unlocked. */
	snprintf(path, sizeof(path), "%s/%s", dir, job);
	snprintf(part, sizeof(part), "%s/.%s", dir, job);
	fd = open(part, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd < 0)
		return -errno;
	/* Until launcher_record_started: nothing of the job has run. */
	rec = json_pack("{s:s, s:i, s:s, s:b}", "job", job, "pid",
	    (int)getpid(), "patch", patch, "never_ran", 1);
	text = rec != NULL ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	if (flock(fd, LOCK_EX) < 0)
		r = -errno;
	else if (text == NULL)
		r = -ENOMEM;
	else if (dprintf(fd, "%s\n", text) < 0)
		r = -EIO;
	else if (rename(part, path) < 0)
		r = -errno;
	free(text);
	if (r < 0) {
		unlink(part);
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

int
launcher_record_started(int fd, const char *job, const char *patch)
{
	json_t *rec = json_pack("{s:s, s:i, s:s}", "job", job, "pid",
	    (int)getpid(), "patch", patch);
	char *text = rec != NULL ? json_dumps(rec, JSON_COMPACT) : NULL;
	struct stat st;
	char *buf;
	size_t n;
	int r = 0;

	json_decref(rec);
	if (text == NULL)
		return -ENOMEM;
	n = strlen(text);
	/* The same length, padded with spaces, in one write: a record is
	 * never seen half rewritten. */
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (st.st_size < (off_t)n + 1 || st.st_size > 3 * PATH_MAX)
		r = -EINVAL;
	else if ((buf = malloc((size_t)st.st_size)) == NULL)
		r = -ENOMEM;
	else {
		memset(buf, ' ', (size_t)st.st_size);
		memcpy(buf, text, n);
		buf[st.st_size - 1] = '\n';
		ssize_t k = pwrite(fd, buf, (size_t)st.st_size, 0);
		r = k == st.st_size ? 0 : k < 0 ? -errno : -EIO;
		free(buf);
	}
	free(text);
	return r;
}

void
launcher_record_close(const char *state_dir, const char *job, int fd,
    bool finished)
{
	char path[PATH_MAX + 80];

	if (fd < 0)
		return;
	/* Unlinked while still locked: no recover can take it between. */
	if (finished) {
		snprintf(path, sizeof(path), "%s/running/%s", state_dir, job);
		unlink(path);
	}
	close(fd);
}

/* A record's contents: its job and where its patch goes (NULL: the state
 * directory's default). */
static json_t *
record_read(int fd, const char *name)
{
	char buf[3 * PATH_MAX];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	json_t *rec;

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	rec = json_loads(buf, 0, NULL);
	if (rec == NULL ||
	    strcmp(json_string_value(json_object_get(rec, "job")) ?: "",
		name) != 0) {
		json_decref(rec);
		return NULL;
	}
	return rec;
}

/*
 * The record's lock, if its launcher is gone. A launcher that has just
 * died may leave its sandbox's init holding the lock for a moment (it
 * dies by PDEATHSIG): when the launcher's pid is gone, the lock is waited
 * for, a second at most.
 */
static bool
take_lock(int fd, const char *name)
{
	json_t *rec;
	pid_t pid;

	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return true;
	rec = record_read(fd, name);
	pid = (pid_t)json_integer_value(json_object_get(rec, "pid"));
	json_decref(rec);
	if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH)
		return false; /* its launcher lives */
	for (int i = 0; i < 20; i++) {
		usleep(50000);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return true;
	}
	return false;
}

/*
 * Finishes the job of the record name in dir, when its launcher is gone.
 * Adds what it did to out (an object per job; "left" set when the record
 * stays). Returns 1 when a job was finished, 0 when there was nothing to
 * do (its launcher lives), -1 when the job is left for another try.
 */
struct sweep {
	const struct launcher_config *cfg;
	const char *job;
};

/* The kill step of a job whose launcher died: its cgroups. */
static void
sweep_job(void *arg)
{
	const struct sweep *sw = arg;

	(void)cgroup_job_sweep(sw->cfg->cgroup_root, NULL, sw->job);
}

static int
recover_one(const struct launcher_config *cfg, const char *key, int dirfd,
    const char *name, json_t *out)
{
	char dest[2 * PATH_MAX];
	struct stat st;
	json_t *rec, *e;
	int fd;

	fd = openat(dirfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0; /* finished meanwhile */
	if (!take_lock(fd, name) || fstat(fd, &st) < 0 || st.st_nlink == 0) {
		close(fd); /* its launcher lives, or another recover took it */
		return 0;
	}
	e = json_pack("{s:s}", "job", name);
	/* A record cut short (its launcher died writing it) still names the
	 * job; only where the patch goes is lost, and the default is used. */
	rec = record_read(fd, name);
	const char *patch = json_string_value(json_object_get(rec, "patch"));
	if (patch == NULL || patch[0] == '\0')
		snprintf(dest, sizeof(dest), "%s/%s.patch",
		    cfg->common.state_dir, name);
	else if ((size_t)snprintf(dest, sizeof(dest), "%s", patch) >=
	    sizeof(dest))
		dest[0] = '\0'; /* refused by launcher_collect below */

	/* The stop path's order, as cordon run's: a job the broker does not
	 * know has no tokens; its processes died with its init, its cgroups
	 * stay until the kill step sweeps them; the channel is closed for a
	 * proxy that missed the feed; then the workspace. */
	struct sweep sw = { .cfg = cfg, .job = name };
	struct stoppath_job j = {
		.cfg = cfg,
		.key = key,
		.job = name,
		.reason = "launcher_lost",
		.patch = dest,
		.channel = true,
		.workspace = true,
		.recovering = true,
		/* Its launcher died before its sandbox was told to go. */
		.never_ran = json_is_true(json_object_get(rec, "never_ran")),
		.kill = sweep_job,
		.kill_arg = &sw,
		.record_fd = fd,
	};
	struct stoppath_outcome o;
	char left[sizeof(o.c.kept)] = "";
	stoppath_run(&j, &o);
	/* As cordon run's result: each upstream credential the revoke
	 * revoked at its issuer, or failed to (then retried there). */
	json_object_set_new(e, "upstream_revocations",
	    stoppath_upstream_json(&o));
	if (!o.revoke_ok)
		snprintf(left, sizeof(left), "%s%s",
		    o.revoke_answered ? "the revoke failed: " : "",
		    o.revoke_answered ? o.revoke_error
				      : "the broker did not answer the revoke");
	else {
		json_object_set_new(e, "revoked",
		    json_string(o.unknown_job ? "unknown_job" : "revoked"));
		if (o.c.kept[0] != '\0')
			snprintf(left, sizeof(left), "%s", o.c.kept);
		else if (o.c.none)
			json_object_set_new(e, "workspace",
			    json_string("none at the hatch"));
		else if (o.released)
			json_object_set_new(e, "workspace",
			    json_string("released: the job never ran"));
		else
			json_object_set_new(e, "workspace",
			    json_pack("{s:s, s:s}", "patch", o.c.patch,
				"verdict", o.c.verdict));
	}
	if (left[0] != '\0')
		json_object_set_new(e, "left", json_string(left));
	json_decref(o.c.report);
	json_array_append_new(out, e);
	json_decref(rec);
	return left[0] != '\0' ? -1 : 1;
}

int
launcher_recover_all(const struct launcher_config *cfg, const char *key,
    json_t *out)
{
	char dir[PATH_MAX];
	struct dirent *d;
	int dirfd, left = 0;
	DIR *dp;

	/* Cgroups no record names any more (a launcher that died before
	 * making its record, or whose state went): empty, a minute old. */
	(void)cgroup_sweep_stale(cfg->cgroup_root, NULL, 60);
	snprintf(dir, sizeof(dir), "%s/running", cfg->common.state_dir);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? 0 : -errno;
	dp = fdopendir(dirfd);
	if (dp == NULL) {
		close(dirfd);
		return -errno;
	}
	while ((d = readdir(dp)) != NULL) {
		/* A record its launcher died making (before the broker's job
		 * had a workspace): nothing to finish, the lease revokes. One
		 * a minute old, so as not to race a launcher making it. */
		if (d->d_name[0] == '.' && name_ok(d->d_name + 1, 63, "_-")) {
			int fd = openat(dirfd, d->d_name,
			    O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			struct stat st;
			if (fd >= 0 && fstat(fd, &st) == 0 &&
			    time(NULL) - st.st_mtime > 60 &&
			    flock(fd, LOCK_EX | LOCK_NB) == 0)
				unlinkat(dirfd, d->d_name, 0);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (name_ok(d->d_name, 63, "_-") &&
		    recover_one(cfg, key, dirfd, d->d_name, out) < 0)
			left++;
	}
	closedir(dp);
	return left;
}

static const char recover_usage[] =
    "usage: cordon recover [--json | --log] [--config FILE]\n";

int
launcher_recover(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "log", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct launcher_config cfg;
	const char *config = NULL;
	char err[300], key[128];
	bool as_json = false, as_log = false;
	json_t *out, *e;
	size_t i;
	int c, left;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'c')
			config = optarg;
		else if (c == 'j')
			as_json = true;
		else if (c == 'l')
			as_log = true;
		else if (c == 'h') /* cordon.c answers it first */
			return launcher_help("recover", stdout) == 0
			    ? 0
			    : EXIT_USAGE;
		else {
			fputs(recover_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fputs(recover_usage, stderr);
		return EXIT_USAGE;
	}
	if (launcher_config_load(&cfg, config, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon recover: %s\n", err);
		return EXIT_CONFIG;
	}
	if (launcher_read_key(cfg.launcher_key_file, key, sizeof(key)) < 0) {
		fprintf(stderr,
		    "cordon recover: cannot read the launcher key %s\n",
		    cfg.launcher_key_file);
		launcher_config_free(&cfg);
		return EXIT_CONFIG;
	}
	log_init("launcher", as_log ? LEVEL_INFO : LEVEL_WARN);
	out = json_array();
	left = out != NULL ? launcher_recover_all(&cfg, key, out) : -ENOMEM;
	explicit_bzero(key, sizeof(key));
	if (left < 0) {
		fprintf(stderr, "cordon recover: %s/running: %s\n",
		    cfg.common.state_dir, strerror(-left));
		json_decref(out);
		launcher_config_free(&cfg);
		return EXIT_OSERR;
	}
	if (as_json) {
		json_t *j = json_pack("{s:O, s:i}", "jobs", out, "left", left);
		char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
		if (text != NULL)
			printf("%s\n", text);
		free(text);
		json_decref(j);
	}
	json_array_foreach(out, i, e)
	{
		const char *job = json_string_value(json_object_get(e, "job"));
		const char *why = json_string_value(json_object_get(e, "left"));
		json_t *ws = json_object_get(e, "workspace");
		if (as_json)
			break;
		if (as_log) {
			if (why != NULL)
				log_warn("job_left", "{s:s, s:s}", "job", job,
				    "reason", why);
			else
				log_info("job_recovered", "{s:s, s:O?, s:O?}",
				    "job", job, "revoked",
				    json_object_get(e, "revoked"), "workspace",
				    ws);
			continue;
		}
		if (why != NULL)
			fprintf(stderr,
			    "cordon recover: %s: left for the next try: %s\n",
			    job, why);
		else if (json_is_string(ws))
			fprintf(stderr,
			    "cordon recover: %s: %s; no workspace\n", job,
			    json_string_value(json_object_get(e, "revoked")));
		else
			fprintf(stderr,
			    "cordon recover: %s: %s; patch %s (%s)\n", job,
			    json_string_value(json_object_get(e, "revoked")),
			    json_string_value(json_object_get(ws, "patch")),
			    json_string_value(json_object_get(ws, "verdict")));
		size_t ui;
		json_t *ue;
		json_array_foreach(json_object_get(e, "upstream_revocations"),
		    ui, ue)
		{
			bool ok = json_is_true(json_object_get(ue, "ok"));
			fprintf(stderr,
			    "cordon recover: %s: the upstream credential of "
			    "secret %s (%s) %s%s\n",
			    job,
			    json_string_value(json_object_get(ue, "secret")),
			    json_string_value(json_object_get(ue, "kind")),
			    ok ? "is revoked at its issuer"
			       : "was not revoked at its issuer: ",
			    ok ? ""
			       : json_string_value(
				     json_object_get(ue, "error")));
		}
	}
	json_decref(out);
	launcher_config_free(&cfg);
	return left > 0 ? 1 : 0;
}
