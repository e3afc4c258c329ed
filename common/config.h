/*
 * Configuration: a JSON file, then flags, over defaults that run on
 * loopback with state under ./var/<service>. A relative path in a file is
 * the file's directory's. Each program describes its
 * keys in a table of config_option; a key that is not in the table, a
 * value of the wrong type or out of range is an error naming the key, and
 * the program exits 78. Under systemd, $STATE_DIRECTORY,
 * $RUNTIME_DIRECTORY and $LOGS_DIRECTORY supply the directories that the
 * file leaves unset.
 */
#ifndef CORDON_CONFIG_H
#define CORDON_CONFIG_H

#include "log.h"

#include <stdbool.h>
#include <stddef.h>

#define CONFIG_MAX_BYTES (1024 * 1024)

enum config_type {
	CONFIG_STRING, /* char *, strdup'd */
	CONFIG_INT, /* long long, within [min, max] */
	CONFIG_BOOL, /* bool */
	CONFIG_STRINGS, /* struct config_strings */
	CONFIG_LEVEL, /* enum log_level, from "debug" .. "error" */
	/* char *: a string, or an array of 1 to CONFIG_LIST_MAX strings
	 * without commas, kept joined by commas ("broker": a fleet's) */
	CONFIG_LIST,
	/* char *: a path; a relative one is taken relative to the directory
	 * of the file that names it (never the current directory) */
	CONFIG_PATH,
	/* struct config_strings: paths, each as CONFIG_PATH's */
	CONFIG_PATHS,
};

#define CONFIG_LIST_MAX 8 /* = HTTPC_BASES_MAX, the client's list */

struct config_strings {
	char **v;
	size_t n;
};

struct config_option {
	const char *key;
	enum config_type type;
	size_t offset; /* of the field in the program's config struct */
	long long min, max;
};

/* What every service has; each program's config struct embeds it. */
struct config_common {
	char *listen;
	char *state_dir;
	char *runtime_dir;
	char *logs_dir;
	enum log_level log_level;
};

/* The config_option rows for struct config_common at offset base. */
#define CONFIG_COMMON_OPTIONS(base)                                            \
	{ "listen", CONFIG_STRING,                                             \
		(base) + offsetof(struct config_common, listen), 0, 0 },       \
	    { "state_dir", CONFIG_PATH,                                        \
		    (base) + offsetof(struct config_common, state_dir), 0,     \
		    0 },                                                       \
	    { "runtime_dir", CONFIG_PATH,                                      \
		    (base) + offsetof(struct config_common, runtime_dir), 0,   \
		    0 },                                                       \
	    { "logs_dir", CONFIG_PATH,                                         \
		    (base) + offsetof(struct config_common, logs_dir), 0, 0 }, \
	{                                                                      \
		"log_level", CONFIG_LEVEL,                                     \
		    (base) + offsetof(struct config_common, log_level), 0, 0   \
	}

/*
 * Loads the JSON object in path into cfg, one option per key. Keys absent
 * from the file keep the value already in cfg. On error writes one line
 * (path, position, key, what is wrong) into err and returns -EINVAL (or
 * -errno when the file cannot be read); cfg may then be partly set. A
 * relative CONFIG_PATH or CONFIG_PATHS value is made absolute against the
 * directory of path (itself made absolute against the current directory
 * at the time of the call, symbolic links resolved).
 */
int config_load(const char *path, const struct config_option *opts,
    size_t nopts, void *cfg, char *err, size_t errlen);

/* Replaces *slot with a copy of value (NULL clears): 0 or -ENOMEM. */
int config_set_string(char **slot, const char *value);

/*
 * Fills the directories left unset: state_dir from $STATE_DIRECTORY or
 * ./var/<svc>; runtime_dir from $RUNTIME_DIRECTORY or <state>/run;
 * logs_dir from $LOGS_DIRECTORY or <state>/log. Creates nothing.
 */
int config_default_dirs(struct config_common *c, const char *svc);

/*
 * Creates the three directories (mode 0700) and replaces each path with
 * its absolute form: 0, or -errno with the failing path in *ret_failed.
 */
int config_make_dirs(struct config_common *c, const char **ret_failed);

void config_strings_free(struct config_strings *s);
void config_common_free(struct config_common *c);

#endif
