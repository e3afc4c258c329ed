/*
 * A private PostgreSQL for tests (pg.h): the server's programs found
 * under /usr/lib/postgresql/<version>/bin, run as nobody with setpriv,
 * the client work done with psql. Every helper reports failure as -1 with
 * a reason; none asserts, so that a test's main can use them too.
 */
#include "pg.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG_UID 65534 /* nobody */
#define PG_GID 65534

static char bindir[200];

static int
find_bindir(void)
{
	glob_t g;

	if (bindir[0] != '\0')
		return 0;
	if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0)
		return -1;
	/* The newest version: glob sorts, and versions here are 2 digits. */
	snprintf(bindir, sizeof(bindir), "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	*strrchr(bindir, '/') = '\0';
	return 0;
}

bool
pg_wanted(void)
{
	const char *v = getenv("CORDON_TEST_NO_PG");

	return v == NULL || strcmp(v, "1") != 0;
}

/* Runs argv (as nobody when drop) in dir, output to log: exit status. */
static int
run(char *const argv[], bool drop, const char *dir, const char *log)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log != NULL ? log : "/dev/null",
		    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (dir != NULL && chdir(dir) < 0)
			_exit(126);
		setenv("LC_ALL", "C", 1);
		unsetenv("PGHOST");
		unsetenv("PGPORT");
		if (drop) {
			if (setgroups(0, NULL) < 0 || setgid(PG_GID) < 0 ||
			    setuid(PG_UID) < 0)
				_exit(126);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void
remove_dir(const char *dir)
{
	char *argv[] = { "/bin/rm", "-rf", (char *)dir, NULL };

	if (dir[0] == '/' && strncmp(dir, "/tmp/cordon-pg-", 15) == 0)
		run(argv, false, "/", NULL);
}

static int
ctl(struct pg_server *pg, const char *action, const char *mode)
{
	char ctlpath[256], data[160], log[160], opts[300];
	char *argv[] = { ctlpath, "-D", data, "-l", log, "-w", "-t", "60", "-o",
		opts, (char *)action, "-m", (char *)mode, NULL };

	snprintf(ctlpath, sizeof(ctlpath), "%s/pg_ctl", bindir);
	snprintf(data, sizeof(data), "%s/data", pg->dir);
	snprintf(log, sizeof(log), "%s/server.log", pg->dir);
	snprintf(opts, sizeof(opts),
	    "-k %s -p %d -c listen_addresses= -c max_connections=200 "
	    "-c shared_buffers=16MB",
	    pg->dir, pg->port);
	if (mode == NULL)
		argv[11] = NULL;
	return run(argv, true, pg->dir, NULL) == 0 ? 0 : -1;
}

/* The watchdog: waits for the test process to end (its pipe's EOF),
 * then stops the server and removes the directory. */
static int
watchdog(struct pg_server *pg)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char c;

		close(p[1]);
		/* Its own group: a signal to the test's group spares it. */
		setpgid(0, 0);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		while (read(p[0], &c, 1) != 0 && errno == EINTR)
			;
		ctl(pg, "stop", "immediate");
		remove_dir(pg->dir);
		_exit(0);
	}
	close(p[0]);
	pg->watchdog_fd = p[1];
	return 0;
}

int
pg_start(struct pg_server *pg, char *err, size_t errlen)
{
	char initdb[256], data[160], log[160];
	char *argv[] = { initdb, "-D", data, "-A", "trust", "-U", "cordon",
		"-E", "UTF8", "--no-sync", NULL };

	memset(pg, 0, sizeof(*pg));
	pg->watchdog_fd = -1;
	if (find_bindir() < 0) {
		snprintf(err, errlen,
		    "PostgreSQL is not installed (no "
		    "/usr/lib/postgresql/*/bin/initdb): run "
		    "deploy/install-deps.sh, or set CORDON_TEST_NO_PG=1 to "
		    "skip the PostgreSQL tests");
		return -1;
	}
	snprintf(pg->dir, sizeof(pg->dir), "/tmp/cordon-pg-XXXXXX");
	if (mkdtemp(pg->dir) == NULL) {
		snprintf(err, errlen, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	pg->port = 5432;
	snprintf(pg->url, sizeof(pg->url),
	    "postgresql:///postgres?host=%s&port=%d&user=cordon", pg->dir,
	    pg->port);
	if (chown(pg->dir, PG_UID, PG_GID) < 0 || chmod(pg->dir, 0755) < 0 ||
	    watchdog(pg) < 0) {
		snprintf(err, errlen, "%s: %s", pg->dir, strerror(errno));
		remove_dir(pg->dir);
		return -1;
	}
	snprintf(initdb, sizeof(initdb), "%s/initdb", bindir);
	snprintf(data, sizeof(data), "%s/data", pg->dir);
	snprintf(log, sizeof(log), "%s/initdb.log", pg->dir);
	if (run(argv, true, pg->dir, log) != 0) {
		snprintf(err, errlen, "initdb failed: see %s", log);
		return -1;
	}
	if (ctl(pg, "start", NULL) < 0) {
		snprintf(err, errlen, "pg_ctl start failed: see %s/server.log",
		    pg->dir);
		return -1;
	}
	return 0;
}

int
pg_stop(struct pg_server *pg, const char *mode)
{
	return ctl(pg, "stop", mode);
}

int
pg_restart(struct pg_server *pg)
{
	return ctl(pg, "start", NULL);
}

int
pg_create_db(struct pg_server *pg, const char *name, char *out, size_t len)
{
	char psql[256], sql[200];
	char *argv[] = { psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d",
		pg->url, "-c", sql, NULL };

	snprintf(psql, sizeof(psql), "%s/psql", bindir);
	snprintf(sql, sizeof(sql), "CREATE DATABASE \"%s\"", name);
	if (run(argv, false, "/", NULL) != 0)
		return -1;
	snprintf(out, len, "postgresql:///%s?host=%s&port=%d&user=cordon", name,
	    pg->dir, pg->port);
	return 0;
}

int
pg_sql(const char *url, const char *sql, char *out, size_t len)
{
	char psql[256], log[] = "/tmp/cordon-pg-sql-XXXXXX";
	char *argv[] = { psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-d", (char *)url, "-c", (char *)sql, NULL };
	int fd, r;
	ssize_t n = 0;

	if (find_bindir() < 0)
		return -1;
	snprintf(psql, sizeof(psql), "%s/psql", bindir);
	fd = mkstemp(log);
	if (fd < 0)
		return -1;
	r = run(argv, false, "/", log);
	if (out != NULL && len > 0) {
		n = pread(fd, out, len - 1, 0);
		out[n > 0 ? n : 0] = '\0';
		if (n > 0 && out[n - 1] == '\n')
			out[n - 1] = '\0';
	}
	close(fd);
	unlink(log);
	return r == 0 ? 0 : -1;
}

void
pg_destroy(struct pg_server *pg)
{
	if (pg->watchdog_fd < 0)
		return;
	ctl(pg, "stop", "fast");
	/* The watchdog sees EOF, finds the server gone, removes the dir. */
	close(pg->watchdog_fd);
	pg->watchdog_fd = -1;
}
