/*
 * The launcher's configuration: where the three services are, its key,
 * and the range of uids its jobs run as. By default everything is on
 * loopback. Nothing depends on the current directory: without --config
 * the file is $CORDON_CONFIG, else the one of the layout this cordon is
 * in (a source tree's var/launcher.json, which the quickstart writes, or
 * an installed /etc/cordon/launcher.json), and the keys and the state
 * directory a file leaves unset are that layout's too.
 */
#include "launcher.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An installed cordon's: the unit's --config, the broker's keys, the
 * launcher unit's StateDirectory. */
#define INSTALLED_CONFIG "/etc/cordon/launcher.json"
#define INSTALLED_KEYS "/var/lib/cordon-broker/keys"
#define INSTALLED_STATE "/var/lib/cordon-launcher"

#define CFG(field) offsetof(struct launcher_config, field)

const struct config_option launcher_options[] = {
	CONFIG_COMMON_OPTIONS(CFG(common)),
	{ "broker", CONFIG_LIST, CFG(broker), 0, 0 },
	{ "proxy", CONFIG_STRING, CFG(proxy), 0, 0 },
	{ "hatch", CONFIG_STRING, CFG(hatch), 0, 0 },
	{ "launcher_key_file", CONFIG_PATH, CFG(launcher_key_file), 0, 0 },
	{ "uid_base", CONFIG_INT, CFG(uid_base), 1000, 4000000000LL },
	{ "uid_count", CONFIG_INT, CFG(uid_count), 1, 1000000 },
	{ "cgroup_root", CONFIG_PATH, CFG(cgroup_root), 0, 0 },
	{ "drill_dir", CONFIG_PATH, CFG(drill_dir), 0, 0 },
	{ "verifier_key_file", CONFIG_PATH, CFG(verifier_key_file), 0, 0 },
	{ "callback_key_file", CONFIG_PATH, CFG(callback_key_file), 0, 0 },
	{ "callback_allow", CONFIG_STRINGS, CFG(callback_allow), 0, 0 },
	{ "admin_key_file", CONFIG_PATH, CFG(admin_key_file), 0, 0 },
	{ "serve", CONFIG_STRING, CFG(serve), 0, 0 },
	{ "decision_log", CONFIG_PATH, CFG(decision_log), 0, 0 },
	{ "serve_keep_jobs", CONFIG_INT, CFG(serve_keep_jobs), 1, 1000000 },
	{ "serve_keep_seconds", CONFIG_INT, CFG(serve_keep_seconds), 0,
	    31536000 },
	{ "serve_spawner_seconds", CONFIG_INT, CFG(serve_spawner_seconds), 1,
	    3600 },
};
const size_t launcher_noptions = ARRAY_SIZE(launcher_options);

int
launcher_source_tree(char *out, size_t len)
{
	char self[PATH_MAX], probe[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -ENOENT;
	self[n] = '\0';
	/* <top>/<build>/bin/<program>: three components off. */
	for (int i = 0; i < 3; i++) {
		char *slash = strrchr(self, '/');
		if (slash == NULL || slash == self)
			return -ENOENT;
		*slash = '\0';
	}
	if ((size_t)snprintf(probe, sizeof(probe), "%s/deploy/quickstart.sh",
		self) >= sizeof(probe) ||
	    access(probe, F_OK) < 0)
		return -ENOENT;
	if ((size_t)snprintf(out, len, "%s", self) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
launcher_config_find(char *out, size_t len, char *looked, size_t lookedlen)
{
	const char *env = getenv("CORDON_CONFIG");
	char top[PATH_MAX], tree[PATH_MAX + 32] = "";

	/* Set but empty: no file, the built-in defaults (cordon serve's
	 * jobs, when serve found none). */
	if (env != NULL) {
		if ((size_t)snprintf(out, len, "%s", env) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (launcher_source_tree(top, sizeof(top)) == 0) {
		snprintf(tree, sizeof(tree), "%s/var/launcher.json", top);
		if (access(tree, F_OK) == 0) {
			if ((size_t)snprintf(out, len, "%s", tree) >= len)
				return -ENAMETOOLONG;
			return 0;
		}
	}
	if (access(INSTALLED_CONFIG, F_OK) == 0) {
		if ((size_t)snprintf(out, len, "%s", INSTALLED_CONFIG) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	snprintf(looked, lookedlen, "$CORDON_CONFIG (not set), %s%s%s",
	    tree[0] != '\0' ? tree : "",
	    tree[0] != '\0' ? " (./deploy/quickstart.sh writes it), " : "",
	    INSTALLED_CONFIG);
	return -ENOENT;
}

int
launcher_config_defaults(struct launcher_config *cfg)
{
	char top[PATH_MAX], keys[PATH_MAX + 16];
	char key[PATH_MAX + 32], admin[PATH_MAX + 32];

	memset(cfg, 0, sizeof(*cfg));
	cfg->common.log_level = LEVEL_INFO;
	cfg->uid_base = 200000;
	cfg->uid_count = 10000;
	cfg->serve_keep_jobs = 1000;
	cfg->serve_keep_seconds = 60;
	cfg->serve_spawner_seconds = 30; /* spawner.h's SPAWNER_ANSWER_MS */
	/* The layout's paths, never the current directory's. */
	if (launcher_source_tree(top, sizeof(top)) == 0)
		snprintf(keys, sizeof(keys), "%s/var/broker/keys", top);
	else
		snprintf(keys, sizeof(keys), "%s", INSTALLED_KEYS);
	snprintf(key, sizeof(key), "%s/launcher.key", keys);
	snprintf(admin, sizeof(admin), "%s/admin.key", keys);
	if (config_set_string(&cfg->broker, "http://127.0.0.1:7701") < 0 ||
	    config_set_string(&cfg->proxy, "http://127.0.0.1:7702") < 0 ||
	    config_set_string(&cfg->hatch, "http://127.0.0.1:7703") < 0 ||
	    config_set_string(&cfg->launcher_key_file, key) < 0 ||
	    config_set_string(&cfg->admin_key_file, admin) < 0 ||
	    config_set_string(&cfg->serve, "http://127.0.0.1:7704") < 0)
		return -ENOMEM;
	return 0;
}

/* The state directory of the layout, for a command whose file did not
 * name one (cordon serve's is a daemon's, ./var/launcher, and it hands
 * it to its jobs as STATE_DIRECTORY). */
static int
layout_state_dir(struct launcher_config *cfg)
{
	char top[PATH_MAX], state[PATH_MAX + 16];

	if (cfg->common.state_dir != NULL || getenv("STATE_DIRECTORY") != NULL)
		return 0;
	if (launcher_source_tree(top, sizeof(top)) == 0)
		snprintf(state, sizeof(state), "%s/var/launcher", top);
	else
		snprintf(state, sizeof(state), "%s", INSTALLED_STATE);
	return config_set_string(&cfg->common.state_dir, state);
}

int
launcher_config_read(struct launcher_config *cfg, const char *path, char *err,
    size_t errlen)
{
	char found[PATH_MAX], looked[3 * PATH_MAX];
	int r;

	if (launcher_config_defaults(cfg) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (path == NULL) {
		r = launcher_config_find(found, sizeof(found), looked,
		    sizeof(looked));
		if (r < 0) {
			snprintf(err, errlen,
			    "no configuration: none of %s is there; give "
			    "--config FILE (or set CORDON_CONFIG)",
			    r == -ENOENT ? looked : "its paths");
			launcher_config_free(cfg);
			return -1;
		}
		path = found[0] != '\0' ? found : NULL;
	}
	if (path != NULL &&
	    config_load(path, launcher_options, launcher_noptions, cfg, err,
		errlen) < 0) {
		launcher_config_free(cfg);
		return -1;
	}
	if (layout_state_dir(cfg) < 0) {
		snprintf(err, errlen, "out of memory");
		launcher_config_free(cfg);
		return -1;
	}
	if (config_default_dirs(&cfg->common, "launcher") < 0) {
		snprintf(err, errlen, "out of memory");
		launcher_config_free(cfg);
		return -1;
	}
	return 0;
}

int
launcher_config_make_dirs(struct launcher_config *cfg, char *err, size_t errlen)
{
	const char *failed = NULL;
	int r;

	/* Only root writes there (cordon run, recover, drill): a command a
	 * user runs makes no directory it could not write. */
	if (geteuid() == 0 &&
	    (r = config_make_dirs(&cfg->common, &failed)) < 0) {
		snprintf(err, errlen, "%s: %s", failed ? failed : "directories",
		    strerror(-r));
		return -1;
	}
	return 0;
}

int
launcher_config_load(struct launcher_config *cfg, const char *path, char *err,
    size_t errlen)
{
	if (launcher_config_read(cfg, path, err, errlen) < 0)
		return -1;
	if (launcher_config_make_dirs(cfg, err, errlen) < 0) {
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
