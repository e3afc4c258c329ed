/*
 * Reading the decision log back, for an admin: the proxy's
 * <logs_dir>/decisions.log and the files a rotation left beside it
 * (decisions.log.1 .. decisions.log.16, the higher the older; compressed
 * ones are not read), scanned oldest first with a cap on the bytes read
 * and the bytes kept per call, so that a week of log is never in memory
 * and a call never holds the proxy's loop for long. A page ends with a
 * cursor (the file's inode and an offset) that the next call resumes at,
 * across a rotation. Pure: it reads the files under a directory
 * descriptor it is given, and the time helpers serve the CLI too.
 */
#ifndef CORDON_PROXY_DECISIONS_H
#define CORDON_PROXY_DECISIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DECISIONS_ROTATED_MAX 16
#define DECISIONS_LINE_MAX (64 * 1024) /* longer lines are skipped */
#define DECISIONS_LIMIT_MAX 1000
#define DECISIONS_SCAN_MAX (8 * 1024 * 1024) /* bytes read a call */
#define DECISIONS_KEEP_MAX (1024 * 1024) /* bytes of lines kept a call */
#define DECISIONS_CURSOR_MAX 48
#define DECISIONS_NO_TIME INT64_MIN

/*
 * An RFC 3339 time ("2026-12-01T09:50:00Z", "...T09:50:00.250+01:00";
 * 't', 'z' and a space for 'T' accepted) or whole Unix seconds
 * ("1796118600") as milliseconds since the epoch: 0, or -EINVAL.
 */
int decisions_parse_time(const char *s, int64_t *ret_ms);

/* ms as the log writes times, "2026-12-01T09:50:00.250Z", into buf (at
 * least 25 bytes). */
void decisions_format_time(int64_t ms, char *buf, size_t len);

struct decisions_query {
	const char *job; /* NULL: every job */
	const char *verdict; /* "allow", "deny", "error"; NULL: all */
	int64_t since_ms, until_ms; /* DECISIONS_NO_TIME: unbounded */
	size_t limit; /* 1 .. DECISIONS_LIMIT_MAX */
	const char *cursor; /* a page's next; NULL: from the oldest line */
	size_t scan_max; /* 0: DECISIONS_SCAN_MAX */
};

struct decisions_page {
	json_t *decisions; /* the lines, oldest first, parsed */
	/* Where the next call resumes; "" when the scan reached the end of
	 * the newest file (or until). A page may hold fewer than limit
	 * lines, even none, and still have a next: the read cap was met. */
	char next[DECISIONS_CURSOR_MAX];
	size_t scanned; /* bytes read */
	unsigned files; /* log files found */
};

/* True when s is a cursor's shape (what decisions_scan gives as next). */
bool decisions_cursor_ok(const char *s);

/*
 * Scans the log named name (and name.1 .. name.16) under dirfd for the
 * lines q selects: 0 with *ret filled (ret->decisions is a new array), or
 * -EINVAL (a bad cursor), -ENOENT (no log file at all: an empty page is
 * not an error, the caller decides), or another -errno. Lines that are
 * not JSON objects with a "ts" are skipped. The log is in time order, so
 * since is found by bisection in each file and the scan stops at the
 * first line past until.
 */
int decisions_scan(int dirfd, const char *name, const struct decisions_query *q,
    struct decisions_page *ret);

#endif
