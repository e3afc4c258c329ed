/*
 * Table-driven JSON configuration with unknown keys refused and every error
 * reported as one line a person can act on. A relative path setting is
 * resolved against the directory of the file that holds it, so that a file
 * means the same from whatever directory a program starts in.
 */
#include "config.h"

#include "path.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int
config_set_string(char **slot, const char *value)
{
	char *copy = NULL;

	if (value != NULL && (copy = strdup(value)) == NULL)
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

void
config_strings_free(struct config_strings *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

void
config_common_free(struct config_common *c)
{
	free(c->listen);
	free(c->state_dir);
	free(c->runtime_dir);
	free(c->logs_dir);
	c->listen = c->state_dir = c->runtime_dir = c->logs_dir = NULL;
}

static const char *
json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* A CONFIG_LIST: a string as it is, or an array's strings joined by
 * commas (none holding one), at most CONFIG_LIST_MAX of them. */
static int
set_list(const struct config_option *o, json_t *v, char **slot, char *err,
    size_t errlen)
{
	_cleanup_free_ char *joined = NULL;
	size_t i, len = 0, at = 0;
	json_t *e;

	if (json_is_string(v) && json_string_length(v) > 0 &&
	    strlen(json_string_value(v)) == json_string_length(v))
		return config_set_string(slot, json_string_value(v));
	if (!json_is_array(v) || json_array_size(v) == 0 ||
	    json_array_size(v) > CONFIG_LIST_MAX) {
		snprintf(err, errlen,
		    "\"%s\" must be a non-empty string or an array of 1 to "
		    "%d of them, not %s",
		    o->key, CONFIG_LIST_MAX, json_type_name(v));
		return -EINVAL;
	}
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || json_string_length(e) == 0 ||
		    strlen(json_string_value(e)) != json_string_length(e) ||
		    strchr(json_string_value(e), ',') != NULL) {
			snprintf(err, errlen,
			    "\"%s\"[%zu] must be a non-empty string "
			    "without a comma",
			    o->key, i);
			return -EINVAL;
		}
		len += json_string_length(e) + 1;
	}
	if ((joined = calloc(1, len)) == NULL)
		return -ENOMEM;
	json_array_foreach(v, i, e)
	{
		if (i > 0)
			joined[at++] = ',';
		memcpy(joined + at, json_string_value(e),
		    json_string_length(e));
		at += json_string_length(e);
	}
	return config_set_string(slot, joined);
}

/* value as the file at base means it: itself when absolute, else under
 * base ("./" prefixes dropped), in *ret (malloc'd): 0 or -ENOMEM. */
static int
resolve_path(const char *base, const char *value, char **ret)
{
	const char *rel = value;

	if (value[0] == '/')
		return (*ret = strdup(value)) != NULL ? 0 : -ENOMEM;
	while (rel[0] == '.' && rel[1] == '/') {
		rel += 2;
		while (rel[0] == '/')
			rel++;
	}
	if (rel[0] == '\0' || strcmp(rel, ".") == 0)
		return (*ret = strdup(base)) != NULL ? 0 : -ENOMEM;
	if (asprintf(ret, "%s%s%s", base, strcmp(base, "/") == 0 ? "" : "/",
		rel) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The absolute, resolved directory of the file at path, or NULL. */
static char *
file_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir = NULL;

	if (slash == NULL)
		return realpath(".", NULL);
	if (slash == path)
		return strdup("/");
	if ((dir = strndup(path, (size_t)(slash - path))) == NULL)
		return NULL;
	return realpath(dir, NULL);
}

static int
set_option(const struct config_option *o, json_t *v, void *cfg,
    const char *base, char *err, size_t errlen)
{
	char *field = (char *)cfg + o->offset;

	switch (o->type) {
	case CONFIG_PATH: {
		char *abs;
		int r;

		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(err, errlen,
			    "\"%s\" must be a non-empty path, not %s", o->key,
			    json_type_name(v));
			return -EINVAL;
		}
		r = resolve_path(base, json_string_value(v), &abs);
		if (r < 0)
			return r;
		free(*(char **)field);
		*(char **)field = abs;
		return 0;
	}
	case CONFIG_STRING:
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(err, errlen,
			    "\"%s\" must be a non-empty string, "
			    "not %s",
			    o->key, json_type_name(v));
			return -EINVAL;
		}
		return config_set_string((char **)field, json_string_value(v));
	case CONFIG_INT: {
		long long n;

		if (!json_is_integer(v)) {
			snprintf(err, errlen,
			    "\"%s\" must be an integer, not %s", o->key,
			    json_type_name(v));
			return -EINVAL;
		}
		n = json_integer_value(v);
		if (n < o->min || n > o->max) {
			snprintf(err, errlen,
			    "\"%s\" is %lld, outside %lld..%lld", o->key, n,
			    o->min, o->max);
			return -EINVAL;
		}
		*(long long *)field = n;
		return 0;
	}
	case CONFIG_BOOL:
		if (!json_is_boolean(v)) {
			snprintf(err, errlen,
			    "\"%s\" must be true or false, not %s", o->key,
			    json_type_name(v));
			return -EINVAL;
		}
		*(bool *)field = json_is_true(v);
		return 0;
	case CONFIG_LEVEL:
		if (!json_is_string(v) ||
		    log_level_parse(json_string_value(v),
			(enum log_level *)field) < 0) {
			snprintf(err, errlen,
			    "\"%s\" must be one of \"debug\", "
			    "\"info\", \"warn\", \"error\"",
			    o->key);
			return -EINVAL;
		}
		return 0;
	case CONFIG_STRINGS:
	case CONFIG_PATHS: {
		struct config_strings *s = (struct config_strings *)field;
		struct config_strings n = { 0 };
		size_t i;
		json_t *e;

		if (!json_is_array(v)) {
			snprintf(err, errlen,
			    "\"%s\" must be an array of strings, "
			    "not %s",
			    o->key, json_type_name(v));
			return -EINVAL;
		}
		n.v = calloc(json_array_size(v) + 1, sizeof(char *));
		if (n.v == NULL)
			return -ENOMEM;
		json_array_foreach(v, i, e)
		{
			if (!json_is_string(e) || json_string_length(e) == 0 ||
			    strlen(json_string_value(e)) !=
				json_string_length(e)) {
				snprintf(err, errlen,
				    "\"%s\"[%zu] must be a "
				    "non-empty string",
				    o->key, i);
				config_strings_free(&n);
				return -EINVAL;
			}
			if (o->type == CONFIG_PATHS) {
				if (resolve_path(base, json_string_value(e),
					&n.v[n.n]) < 0)
					n.v[n.n] = NULL;
			} else
				n.v[n.n] = strdup(json_string_value(e));
			if (n.v[n.n++] == NULL) {
				config_strings_free(&n);
				return -ENOMEM;
			}
		}
		config_strings_free(s);
		*s = n;
		return 0;
	}
	case CONFIG_LIST:
		return set_list(o, v, (char **)field, err, errlen);
	}
	return -EINVAL;
}

/* At most len - 1 bytes of s with control bytes as '?': an error
 * message stays one line whatever key a file holds. */
static const char *
printable(const char *s, char *out, size_t len)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < len; i++)
		out[i] =
		    (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[i] = '\0';
	return out;
}

int
config_load(const char *path, const struct config_option *opts, size_t nopts,
    void *cfg, char *err, size_t errlen)
{
	_cleanup_free_ char *text = NULL, *base = NULL;
	json_error_t jerr;
	const char *key;
	json_t *root, *v;
	size_t len;
	int r;

	r = path_read_file(path, CONFIG_MAX_BYTES, &text, &len);
	if (r < 0) {
		snprintf(err, errlen, "config %s: %s", path,
		    r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
		return r;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		char near[sizeof(jerr.text)];

		/* jansson quotes the file's bytes near the error. */
		snprintf(err, errlen, "config %s: line %d column %d: %s", path,
		    jerr.line, jerr.column,
		    printable(jerr.text, near, sizeof(near)));
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "config %s: must be a JSON object", path);
		json_decref(root);
		return -EINVAL;
	}
	/* Relative paths in the file are its directory's. */
	if ((base = file_dir(path)) == NULL) {
		r = errno != 0 ? -errno : -ENOMEM;
		snprintf(err, errlen, "config %s: its directory: %s", path,
		    strerror(-r));
		json_decref(root);
		return r;
	}
	r = 0;
	json_object_foreach(root, key, v)
	{
		const struct config_option *o = NULL;
		char why[256], shown[65];

		for (size_t i = 0; i < nopts; i++)
			if (strcmp(opts[i].key, key) == 0)
				o = &opts[i];
		if (o == NULL) {
			snprintf(err, errlen, "config %s: unknown key \"%s\"",
			    path, printable(key, shown, sizeof(shown)));
			r = -EINVAL;
			break;
		}
		r = set_option(o, v, cfg, base, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "config %s: %s", path,
			    r == -ENOMEM ? "out of memory" : why);
			break;
		}
	}
	json_decref(root);
	return r;
}

/* The first of a colon-separated systemd directory list, or NULL. */
static char *
systemd_dir(const char *var)
{
	const char *v = getenv(var);

	/* An empty first entry (":/x") is no directory at all. */
	if (v == NULL || v[0] == '\0' || v[0] == ':')
		return NULL;
	return strndup(v, strcspn(v, ":"));
}

static int
default_dir(char **slot, const char *env, const char *base, const char *sub)
{
	char *p;

	if (*slot != NULL)
		return 0;
	p = systemd_dir(env);
	if (p == NULL && asprintf(&p, "%s/%s", base, sub) < 0)
		return -ENOMEM;
	*slot = p;
	return 0;
}

int
config_default_dirs(struct config_common *c, const char *svc)
{
	int r;

	r = default_dir(&c->state_dir, "STATE_DIRECTORY", "./var", svc);
	if (r == 0)
		r = default_dir(&c->runtime_dir, "RUNTIME_DIRECTORY",
		    c->state_dir, "run");
	if (r == 0)
		r = default_dir(&c->logs_dir, "LOGS_DIRECTORY", c->state_dir,
		    "log");
	return r;
}

int
config_make_dirs(struct config_common *c, const char **ret_failed)
{
	char **dirs[] = { &c->state_dir, &c->runtime_dir, &c->logs_dir };

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char *abs;
		int r = path_make_dir(*dirs[i], 0700, &abs);

		if (r < 0) {
			*ret_failed = *dirs[i];
			return r;
		}
		free(*dirs[i]);
		*dirs[i] = abs;
	}
	return 0;
}
