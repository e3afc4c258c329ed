/*
 * Replays a corpus through a harness without libFuzzer, so that every
 * seed and every past finding runs in ./tests/run under ASan and UBSan
 * with the ordinary compiler. Arguments: files or directories.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	static uint8_t data[1 << 20];
	size_t n;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	LLVMFuzzerTestOneInput(data, n);
	return 0;
}

int
main(int argc, char **argv)
{
	unsigned runs = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		if (d == NULL) {
			perror(argv[i]);
			return 1;
		}
		while ((e = readdir(d)) != NULL) {
			char p[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
			if (replay_file(p) < 0)
				return 1;
			runs++;
		}
		closedir(d);
	}
	printf("replayed %u inputs\n", runs);
	return runs > 0 ? 0 : 1;
}
