/*
 * The launcher's configuration: where the three services are, its key,
 * and the range of uids its jobs run as. By default everything is on
 * loopback and the key is the one the broker wrote under ./var, as the
 * quickstart runs it.
 */
#include "launcher.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CFG(field) offsetof(struct launcher_config, field)

const struct config_option launcher_options[] = {
	CONFIG_COMMON_OPTIONS(CFG(common)),
	{ "broker", CONFIG_LIST, CFG(broker), 0, 0 },
	{ "proxy", CONFIG_STRING, CFG(proxy), 0, 0 },
	{ "hatch", CONFIG_STRING, CFG(hatch), 0, 0 },
	{ "launcher_key_file", CONFIG_STRING, CFG(launcher_key_file), 0, 0 },
	{ "uid_base", CONFIG_INT, CFG(uid_base), 1000, 4000000000LL },
	{ "uid_count", CONFIG_INT, CFG(uid_count), 1, 1000000 },
	{ "cgroup_root", CONFIG_STRING, CFG(cgroup_root), 0, 0 },
	{ "drill_dir", CONFIG_STRING, CFG(drill_dir), 0, 0 },
	{ "verifier_key_file", CONFIG_STRING, CFG(verifier_key_file), 0, 0 },
	{ "callback_key_file", CONFIG_STRING, CFG(callback_key_file), 0, 0 },
	{ "callback_allow", CONFIG_STRINGS, CFG(callback_allow), 0, 0 },
	{ "admin_key_file", CONFIG_STRING, CFG(admin_key_file), 0, 0 },
	{ "serve", CONFIG_STRING, CFG(serve), 0, 0 },
	{ "decision_log", CONFIG_STRING, CFG(decision_log), 0, 0 },
};
const size_t launcher_noptions = ARRAY_SIZE(launcher_options);

int
launcher_config_defaults(struct launcher_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->common.log_level = LEVEL_INFO;
	cfg->uid_base = 200000;
	cfg->uid_count = 10000;
	if (config_set_string(&cfg->broker, "http://127.0.0.1:7701") < 0 ||
	    config_set_string(&cfg->proxy, "http://127.0.0.1:7702") < 0 ||
	    config_set_string(&cfg->hatch, "http://127.0.0.1:7703") < 0 ||
	    config_set_string(&cfg->launcher_key_file,
		"var/broker/keys/launcher.key") < 0 ||
	    config_set_string(&cfg->admin_key_file,
		"var/broker/keys/admin.key") < 0 ||
	    config_set_string(&cfg->serve, "http://127.0.0.1:7704") < 0)
		return -ENOMEM;
	return 0;
}

int
launcher_config_load(struct launcher_config *cfg, const char *path, char *err,
    size_t errlen)
{
	const char *failed = NULL;
	int r;

	if (launcher_config_defaults(cfg) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (path != NULL &&
	    config_load(path, launcher_options, launcher_noptions, cfg, err,
		errlen) < 0) {
		launcher_config_free(cfg);
		return -1;
	}
	if ((r = config_default_dirs(&cfg->common, "launcher")) < 0 ||
	    (r = config_make_dirs(&cfg->common, &failed)) < 0) {
		snprintf(err, errlen, "%s: %s", failed ? failed : "directories",
		    strerror(-r));
		launcher_config_free(cfg);
		return -1;
	}
	return 0;
}

void
launcher_config_free(struct launcher_config *cfg)
{
	free(cfg->broker);
	free(cfg->proxy);
	free(cfg->hatch);
	free(cfg->launcher_key_file);
	free(cfg->cgroup_root);
	free(cfg->drill_dir);
	free(cfg->verifier_key_file);
	free(cfg->callback_key_file);
	config_strings_free(&cfg->callback_allow);
	free(cfg->admin_key_file);
	free(cfg->serve);
	free(cfg->decision_log);
	config_common_free(&cfg->common);
}

int
launcher_read_key(const char *path, char *out, size_t len)
{
	return keys_read(path, out, len);
}

int
launcher_sibling(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n < 0)
		return -errno;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash == NULL)
		return -EINVAL;
	*slash = '\0';
	if ((size_t)snprintf(out, len, "%s/%s", self, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}
