/*
 * JSON-lines logging. Each line is built in full and written with a single
 * write(2), so lines from several threads never interleave. log_burst keeps
 * a small table of the lines a peer could repeat, to write each once per
 * window with a count.
 */
#include "log.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
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

/* The last second a thread formatted, as text: a line's timestamp is
 * then the milliseconds appended, gmtime_r and strftime once a second
 * (every decision line has one). Each thread its own: no lock. */
static _Thread_local struct {
	time_t sec;
	bool valid;
	size_t len;
	char text[32];
} ts_second;

void
log_timestamp_of(const struct timespec *t, char *buf, size_t len)
{
	char out[48];
	struct tm tm;

	if (len == 0)
		return;
	if (!ts_second.valid || ts_second.sec != t->tv_sec) {
		ts_second.len = gmtime_r(&t->tv_sec, &tm) == NULL
		    ? 0
		    : strftime(ts_second.text, sizeof(ts_second.text),
			  "%Y-%m-%dT%H:%M:%S", &tm);
		ts_second.sec = t->tv_sec;
		ts_second.valid = ts_second.len > 0;
	}
	long ms = t->tv_nsec / 1000000;
	size_t n = ts_second.len;
	memcpy(out, ts_second.text, n);
	out[n++] = '.';
	out[n++] = (char)('0' + ms / 100 % 10);
	out[n++] = (char)('0' + ms / 10 % 10);
	out[n++] = (char)('0' + ms % 10);
	out[n++] = 'Z';
	/* Cut short at len, as snprintf would. */
	if (n >= len)
		n = len - 1;
	memcpy(buf, out, n);
	buf[n] = '\0';
}

void
log_timestamp(char *buf, size_t len)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	log_timestamp_of(&ts, buf, len);
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

/* The line as an object, with ts, level, svc, event and the fields. */
static json_t *
log_build(enum log_level level, const char *event, const char *fields,
    va_list ap)
{
	char ts[40];
	json_t *line, *extra = NULL, *v;
	json_error_t err;
	const char *key;

	log_timestamp(ts, sizeof(ts));
	line = json_pack("{s:s, s:s, s:s, s:s}", "ts", ts, "level",
	    level_names[level], "svc", log_svc, "event", event);
	if (line == NULL) {
		/* The event name itself would not encode (bad UTF-8). */
		line = json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts", ts, "level",
		    level_names[level], "svc", log_svc, "event", "log_error",
		    "log_error", "event name is not valid UTF-8");
		if (line == NULL)
			return NULL;
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
	return line;
}

/* Writes line (taken) as one line of stderr. */
static void
log_write(json_t *line)
{
	char *text;

	if (line == NULL)
		return;
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
log_eventv(enum log_level level, const char *event, const char *fields,
    va_list ap)
{
	if (level < log_min)
		return;
	log_write(log_build(level, event, fields, ap));
}

/* A line being repeated: its text without "ts", when it was last written,
 * and how many times since then it was not. */
struct burst {
	uint64_t hash;
	struct timespec written;
	uint64_t suppressed;
	json_t *last; /* the last one suppressed, to write with its count */
};

#define BURSTS 32
static struct burst bursts[BURSTS];
static pthread_mutex_t bursts_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int64_t
ms_since(const struct timespec *t, const struct timespec *now)
{
	return (int64_t)(now->tv_sec - t->tv_sec) * 1000 +
	    (now->tv_nsec - t->tv_nsec) / 1000000;
}

/* The line to write for b's suppressed ones (taken from b), or NULL:
 * the last of them, standing for all ("repeated"). */
static json_t *
burst_take(struct burst *b, const struct timespec *now)
{
	json_t *line = b->last;

	if (line == NULL)
		return NULL;
	json_object_set_new(line, "repeated",
	    json_integer((json_int_t)b->suppressed));
	b->last = NULL;
	b->suppressed = 0;
	b->written = *now;
	return line;
}

void
log_burst(enum log_level level, const char *event, const char *fields, ...)
{
	struct timespec now;
	json_t *line, *key, *out = NULL;
	struct burst *b = NULL, *oldest = &bursts[0];
	va_list ap;
	char *text;

	if (level < log_min)
		return;
	va_start(ap, fields);
	line = log_build(level, event, fields, ap);
	va_end(ap);
	if (line == NULL)
		return;
	/* The same line but for its time is the same failure again. */
	key = json_deep_copy(line);
	json_object_del(key, "ts");
	text =
	    key != NULL ? json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(key);
	if (text == NULL) {
		log_write(line);
		return;
	}
	uint64_t h = fnv1a(text);
	free(text);
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&bursts_lock);
	for (size_t i = 0; i < BURSTS; i++) {
		if (bursts[i].hash == h &&
		    (bursts[i].written.tv_sec != 0 ||
			bursts[i].written.tv_nsec != 0)) {
			b = &bursts[i];
			break;
		}
		if (ms_since(&bursts[i].written, &now) >
		    ms_since(&oldest->written, &now))
			oldest = &bursts[i];
	}
	if (b != NULL && ms_since(&b->written, &now) < LOG_BURST_MS) {
		/* Within the window: counted, the newest kept for later. */
		b->suppressed++;
		json_decref(b->last);
		b->last = line;
		pthread_mutex_unlock(&bursts_lock);
		return;
	}
	if (b != NULL && b->last != NULL) {
		/* The window passed: this line stands for itself and the
		 * ones not written. */
		json_decref(b->last);
		b->last = line;
		b->suppressed++;
		out = burst_take(b, &now);
	} else {
		if (b == NULL) {
			/* A new one takes the slot written longest ago;
			 * what it was still counting is told now. */
			b = oldest;
			json_t *left = burst_take(b, &now);
			if (left != NULL) {
				pthread_mutex_unlock(&bursts_lock);
				log_write(left);
				pthread_mutex_lock(&bursts_lock);
			}
			b->hash = h;
		}
		b->written = now;
		out = line;
	}
	pthread_mutex_unlock(&bursts_lock);
	log_write(out);
}

void
log_burst_flush(void)
{
	struct timespec now;
	json_t *out[BURSTS];
	size_t n = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&bursts_lock);
	for (size_t i = 0; i < BURSTS; i++)
		if (bursts[i].last != NULL &&
		    ms_since(&bursts[i].written, &now) >= LOG_BURST_MS)
			out[n++] = burst_take(&bursts[i], &now);
	pthread_mutex_unlock(&bursts_lock);
	for (size_t i = 0; i < n; i++)
		log_write(out[i]);
}

void
log_event(enum log_level level, const char *event, const char *fields, ...)
{
	va_list ap;

	va_start(ap, fields);
	log_eventv(level, event, fields, ap);
	va_end(ap);
}
