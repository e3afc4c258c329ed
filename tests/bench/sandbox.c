/*
 * bench_sandbox: the launcher's sandbox alone, start to exit of /bin/true
 * (every namespace, the user namespace and its maps, the root, the
 * overlay at /work, the seccomp filter), N times: one line per run with
 * its milliseconds, for bench_launcher.sh to take the median of. With a
 * command after "--" it times that command instead (bwrap, unshare), the
 * same way: from this process, spawn to exit.
 *
 *   bench_sandbox N DIR [-- CMD ARGS...]   (DIR: an empty directory)
 */
#include "sandbox.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	char lower[512], upper[512], work[512], err[256];
	char *args[] = { "/bin/true", NULL };
	char *env[] = { "PATH=/usr/bin:/bin", NULL };
	int n;

	if (argc < 3 || (n = atoi(argv[1])) <= 0 ||
	    (argc > 3 && (argc < 5 || strcmp(argv[3], "--") != 0))) {
		fprintf(stderr,
		    "usage: bench_sandbox N DIR [-- CMD ARGS...]\n");
		return 64;
	}
	if (argc > 3) {
		extern char **environ;
		for (int i = 0; i < n; i++) {
			struct timespec a, b;
			pid_t pid;
			int st;
			clock_gettime(CLOCK_MONOTONIC, &a);
			if (posix_spawn(&pid, argv[4], NULL, NULL, argv + 4,
				environ) != 0 ||
			    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
			    WEXITSTATUS(st) != 0) {
				fprintf(stderr, "bench_sandbox: %s failed\n",
				    argv[4]);
				return 1;
			}
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("%.3f\n",
			    (double)(b.tv_sec - a.tv_sec) * 1e3 +
				(double)(b.tv_nsec - a.tv_nsec) / 1e6);
		}
		return 0;
	}
	snprintf(lower, sizeof(lower), "%s/lower", argv[2]);
	snprintf(upper, sizeof(upper), "%s/upper", argv[2]);
	snprintf(work, sizeof(work), "%s/work", argv[2]);
	for (int i = 0; i < n; i++) {
		struct sandbox sb;
		struct timespec a, b;
		struct sandbox_spec spec = { .argv = args,
			.envp = env,
			.lower = lower,
			.upper = upper,
			.work = work,
			.uid = 250000,
			.gid = 250000,
			.out_fd = 1,
			.err_fd = 2 };
		mkdir(lower, 0755);
		mkdir(upper, 0755);
		mkdir(work, 0755);
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (sandbox_spawn(&spec, &sb, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_sandbox: %s\n", err);
			return 1;
		}
		int st = sandbox_wait(&sb, false);
		clock_gettime(CLOCK_MONOTONIC, &b);
		close(sb.proxy_fd);
		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "bench_sandbox: /bin/true failed: %d\n",
			    st);
			return 1;
		}
		printf("%.3f\n",
		    (double)(b.tv_sec - a.tv_sec) * 1e3 +
			(double)(b.tv_nsec - a.tv_nsec) / 1e6);
	}
	return 0;
}
