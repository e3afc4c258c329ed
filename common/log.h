/*
 * JSON-lines logging on stderr, one object per line:
 *   {"ts":"2026-11-29T08:29:00.123Z","level":"info","svc":"broker",
 *    "event":"listening","addr":"127.0.0.1:7701"}
 * journald picks the lines up as they are. Library code never logs; the
 * program's main and its request handlers do, once, where they decide.
 */
#ifndef CORDON_LOG_H
#define CORDON_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <time.h>

enum log_level {
	LEVEL_DEBUG,
	LEVEL_INFO,
	LEVEL_WARN,
	LEVEL_ERROR,
};

/* Names the service in every line and drops lines below min. */
void log_init(const char *svc, enum log_level min);

/* Parses "debug", "info", "warn" or "error"; 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *ret_level);

/*
 * Writes one line. fields is a jansson json_pack() format for an object
 * ("{s:s, s:i}") followed by its arguments, or NULL for none. A format
 * that does not pack still yields a line, with the packing error, so no
 * event is ever silently lost.
 */
void log_event(enum log_level level, const char *event, const char *fields,
    ...);
void log_eventv(enum log_level level, const char *event, const char *fields,
    va_list ap);

#define log_debug(...) log_event(LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_event(LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_event(LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_event(LEVEL_ERROR, __VA_ARGS__)

/*
 * log_event for a failure a peer can repeat (an accept that fails, a
 * library's complaint about a bad request): the first line of a burst is
 * written at once; the same event with the same fields again within
 * LOG_BURST_MS is only counted, and the next line of it written after the
 * window, or by log_burst_flush, carries "repeated": how many attempts
 * it stands for (itself and those not written). So a peer can make at
 * most about one line per window per distinct line, never one per
 * attempt. Thread-safe.
 */
#define LOG_BURST_MS 1000
void log_burst(enum log_level level, const char *event, const char *fields,
    ...);
/* Writes the count of every burst whose window has passed: call it from
 * a timer (a burst that stops is then still told). */
void log_burst_flush(void);

/* Formats now as RFC 3339 UTC with milliseconds into buf (>= 25 bytes). */
void log_timestamp(char *buf, size_t len);

/* log_timestamp of the time *t (CLOCK_REALTIME's): the text of its
 * second kept per thread, made again when the second changes; cut short
 * at len bytes as snprintf would. */
void log_timestamp_of(const struct timespec *t, char *buf, size_t len);

#endif
