/*
 * Fuzzes configuration loading with every option type: any input either
 * loads or is refused with a one-line message; nothing crashes or leaks.
 */
#include "config.h"
#include "fuzz.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct fuzz_config {
	struct config_common common;
	long long n;
	bool flag;
	struct config_strings list;
};

static const struct config_option options[] = {
	CONFIG_COMMON_OPTIONS(offsetof(struct fuzz_config, common)),
	{ "n", CONFIG_INT, offsetof(struct fuzz_config, n), -5, 5 },
	{ "flag", CONFIG_BOOL, offsetof(struct fuzz_config, flag), 0, 0 },
	{ "list", CONFIG_STRINGS, offsetof(struct fuzz_config, list), 0, 0 },
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_config cfg = { 0 };
	char path[64], err[512] = "";
	int fd = memfd_create("config", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		int r = config_load(path, options,
		    sizeof(options) / sizeof(options[0]), &cfg, err,
		    sizeof(err));
		if (r < 0)
			FUZZ_ASSERT(
			    err[0] != '\0' && strchr(err, '\n') == NULL);
		else
			FUZZ_ASSERT(cfg.n >= -5 && cfg.n <= 5);
	}
	close(fd);
	config_common_free(&cfg.common);
	config_strings_free(&cfg.list);
	return 0;
}
