/*
 * JSON-lines logging. Each line is built in full and written with a single
 * write(2), so lines from several threads never interleave.
 */
#include "log.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_svc = "cordon";
static enum log_level log_min = LEVEL_INFO;

static const char *const level_names[] = {
	[LEVEL_DEBUG] = "debug",
	[LEVEL_INFO] = "info",
	[LEVEL_WARN] = "warn",
	[LEVEL_ERROR] = "error",
};

void
log_init(const char *svc, enum log_level min)
{
	log_svc = svc;
	log_min = min;
}

int
log_level_parse(const char *s, enum log_level *ret_level)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]);
	     i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*ret_level = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void
log_timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

static void
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere left to report it */
		}
		p += w;
		n -= (size_t)w;
	}
}

/* The four fields every line starts with; an event's own may not clash. */
static bool
reserved(const char *key)
{
	return strcmp(key, "ts") == 0 || strcmp(key, "level") == 0 ||
	    strcmp(key, "svc") == 0 || strcmp(key, "event") == 0;
}

void
log_eventv(enum log_level level, const char *event, const char *fields,
    va_list ap)
{
	char ts[40];
	json_t *line, *extra = NULL, *v;
	json_error_t err;
	const char *key;
	char *text;

	if (level < log_min)
		return;
	log_timestamp(ts, sizeof(ts));
	line = json_pack("{s:s, s:s, s:s, s:s}", "ts", ts, "level",
	    level_names[level], "svc", log_svc, "event", event);
	if (line == NULL) {
		/* The event name itself would not encode (bad UTF-8). */
		line = json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts", ts, "level",
		    level_names[level], "svc", log_svc, "event", "log_error",
		    "log_error", "event name is not valid UTF-8");
		if (line == NULL)
			return;
		fields = NULL;
	}
	if (fields != NULL) {
		extra = json_vpack_ex(&err, 0, fields, ap);
		if (extra == NULL)
			json_object_set_new(line, "log_error",
			    json_string(err.text));
		else if (!json_is_object(extra))
			json_object_set_new(line, "log_error",
			    json_string("fields is not an object"));
		else
			json_object_foreach(extra, key, v)
			{
				if (reserved(key))
					json_object_set_new(line, "log_error",
					    json_string("a field tried to "
							"replace ts, level, "
							"svc or event"));
				else
					json_object_set(line, key, v);
			}
		json_decref(extra);
	}
	text = json_dumps(line,
	    JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(line);
	if (text == NULL)
		return;
	size_t n = strlen(text);
	char *out = realloc(text, n + 2);
	if (out == NULL) {
		free(text);
		return;
	}
	out[n] = '\n';
	write_all(STDERR_FILENO, out, n + 1);
	free(out);
}

void
log_event(enum log_level level, const char *event, const char *fields, ...)
{
	va_list ap;

	va_start(ap, fields);
	log_eventv(level, event, fields, ap);
	va_end(ap);
}
