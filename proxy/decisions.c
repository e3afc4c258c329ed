/*
 * The decision log read back (decisions.h): the files listed oldest
 * first, each read through one capped buffer a line at a time, the start
 * found by bisection on the lines' times, the page cut at the caller's
 * limit, at the bytes kept and at the bytes read.
 */
#include "decisions.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Reads exactly n digits of s as a number, or -1. */
static int
digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int
decisions_parse_time(const char *s, int64_t *ret_ms)
{
	size_t n = strlen(s);
	struct tm tm = { 0 };
	int64_t ms = 0, off = 0;
	const char *p;

	if (n > 0 && n <= 12 && strspn(s, "0123456789") == n) {
		*ret_ms = (int64_t)strtoll(s, NULL, 10) * 1000;
		return 0;
	}
	if (n < 20 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
	    s[16] != ':')
		return -EINVAL;
	int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2),
	    h = digits(s + 11, 2), mi = digits(s + 14, 2),
	    sec = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 ||
	    h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60)
		return -EINVAL;
	p = s + 19;
	if (*p == '.') {
		int k = 0, scale = 100;
		for (p++; isdigit((unsigned char)*p); p++, k++) {
			ms += (*p - '0') * scale;
			scale /= 10;
		}
		if (k == 0 || k > 9)
			return -EINVAL;
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
		off = 0;
	else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int oh = digits(p + 1, 2), om = digits(p + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return -EINVAL;
		off = (int64_t)(oh * 60 + om) * 60 * (*p == '+' ? 1 : -1);
	} else
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	/* timegm normalises 31 February into March: refuse it. */
	struct tm back;
	if (t == (time_t)-1 || gmtime_r(&t, &back) == NULL ||
	    back.tm_mday != d || back.tm_mon != mo - 1)
		return -EINVAL;
	*ret_ms = ((int64_t)t - off) * 1000 + ms;
	return 0;
}

void
decisions_format_time(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	char base[32];

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf, len, "%s.%03dZ", base, (int)(ms - (int64_t)t * 1000));
}

/* One log file: its name, inode and size when listed. */
struct logfile {
	char name[300];
	ino_t ino;
	off_t size;
};

/* The files of the log, oldest first: how many (0 when none). */
static unsigned
list_files(int dirfd, const char *name, struct logfile *out)
{
	unsigned n = 0;
	struct stat st;

	for (int i = DECISIONS_ROTATED_MAX; i >= 0; i--) {
		struct logfile *f = &out[n];
		int w = i > 0
		    ? snprintf(f->name, sizeof(f->name), "%s.%d", name, i)
		    : snprintf(f->name, sizeof(f->name), "%s", name);
		if (w < 0 || (size_t)w >= sizeof(f->name))
			continue;
		if (fstatat(dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		f->ino = st.st_ino;
		f->size = st.st_size;
		n++;
	}
	return n;
}

bool
decisions_cursor_ok(const char *s)
{
	uint64_t ino, off;
	int used = 0;

	if (s == NULL || strlen(s) >= DECISIONS_CURSOR_MAX ||
	    strspn(s, "0123456789abcdef.") != strlen(s))
		return false;
	if (sscanf(s, "%" SCNx64 ".%" SCNx64 "%n", &ino, &off, &used) != 2 ||
	    (size_t)used != strlen(s))
		return false;
	return true;
}

/* A line reader over one file: a buffer of DECISIONS_LINE_MAX + 1. */
struct reader {
	int fd;
	char *buf;
	size_t have, at; /* bytes in buf, bytes of them consumed */
	off_t pos; /* the file offset of buf[0] */
	bool eof;
};

/*
 * The next whole line at or after the reader's position: its text
 * (NUL-terminated in place, without the newline), its offset and its
 * length with the newline; 1, 0 at the end (a last line without its
 * newline is not yet a line), or -errno. Lines too long to fit are
 * skipped whole.
 */
static int
next_line(struct reader *r, char **ret, off_t *ret_off, size_t *ret_len)
{
	bool skipping = false;

	for (;;) {
		char *nl = memchr(r->buf + r->at, '\n', r->have - r->at);
		if (nl != NULL) {
			size_t len = (size_t)(nl - (r->buf + r->at)) + 1;
			char *line = r->buf + r->at;
			off_t off = r->pos + (off_t)r->at;
			r->at += len;
			if (skipping) {
				skipping = false;
				continue;
			}
			*nl = '\0';
			*ret = line;
			*ret_off = off;
			*ret_len = len;
			return 1;
		}
		if (r->eof)
			return 0;
		/* Keep the partial line at the front; if it fills the
		 * buffer, it is too long: drop it and skip to its end. */
		if (r->at == 0 && r->have == DECISIONS_LINE_MAX) {
			r->pos += (off_t)r->have;
			r->have = 0;
			skipping = true;
		} else {
			memmove(r->buf, r->buf + r->at, r->have - r->at);
			r->pos += (off_t)r->at;
			r->have -= r->at;
			r->at = 0;
		}
		ssize_t got = pread(r->fd, r->buf + r->have,
		    DECISIONS_LINE_MAX - r->have, r->pos + (off_t)r->have);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (got == 0)
			r->eof = true;
		r->have += (size_t)got;
	}
}

static void
reader_seek(struct reader *r, off_t pos)
{
	r->pos = pos;
	r->have = r->at = 0;
	r->eof = false;
}

/* The time of a decision line, or DECISIONS_NO_TIME when it has none. */
static int64_t
line_time(const json_t *d)
{
	const char *ts = json_string_value(json_object_get(d, "ts"));
	int64_t ms;

	if (ts == NULL || decisions_parse_time(ts, &ms) < 0)
		return DECISIONS_NO_TIME;
	return ms;
}

/* The time of the first whole line starting at or after pos (the line
 * that contains pos - 1 is skipped), with its offset; *ret_off is the
 * file's size when there is none. */
static int
probe(struct reader *r, off_t pos, off_t size, int64_t *ret_ms, off_t *ret_off)
{
	char *line;
	off_t off;
	size_t len;
	int k;

	reader_seek(r, pos > 0 ? pos - 1 : 0);
	if (pos > 0) {
		/* The rest of the line holding pos - 1. */
		if ((k = next_line(r, &line, &off, &len)) <= 0) {
			*ret_off = size;
			return k;
		}
	}
	for (;;) {
		if ((k = next_line(r, &line, &off, &len)) <= 0) {
			*ret_off = size;
			return k;
		}
		json_t *d = json_loads(line, 0, NULL);
		int64_t ms = line_time(d);
		json_decref(d);
		if (ms != DECISIONS_NO_TIME) {
			*ret_ms = ms;
			*ret_off = off;
			return 1;
		}
	}
}

/* The offset of the first line at or after since, by bisection over the
 * byte offsets (the log is in time order): 0 or -errno. */
static int
find_since(struct reader *r, off_t size, int64_t since, off_t *ret)
{
	off_t lo = 0, hi = size, off;
	int64_t ms = 0;
	int k;

	while (lo < hi) {
		off_t mid = lo + (hi - lo) / 2;
		if ((k = probe(r, mid, size, &ms, &off)) < 0)
			return k;
		if (k == 0 || ms >= since)
			hi = mid;
		else
			lo = mid + 1;
	}
	if ((k = probe(r, lo, size, &ms, &off)) < 0)
		return k;
	*ret = off;
	return 0;
}

static bool
selected(const struct decisions_query *q, const json_t *d, int64_t ms)
{
	const char *job = json_string_value(json_object_get(d, "job"));

	if (q->job != NULL && (job == NULL || strcmp(job, q->job) != 0))
		return false;
	if (q->verdict != NULL) {
		const char *v =
		    json_string_value(json_object_get(d, "decision"));
		if (v == NULL || strcmp(v, q->verdict) != 0)
			return false;
	}
	return q->since_ms == DECISIONS_NO_TIME || ms >= q->since_ms;
}

int
decisions_scan(int dirfd, const char *name, const struct decisions_query *q,
    struct decisions_page *ret)
{
	struct logfile files[DECISIONS_ROTATED_MAX + 1];
	unsigned n = list_files(dirfd, name, files), first = 0;
	size_t scan_max = q->scan_max > 0 ? q->scan_max : DECISIONS_SCAN_MAX;
	size_t scanned = 0, kept = 0;
	off_t start = 0;
	bool resumed = false, done = false;
	json_t *out;
	struct reader r = { .fd = -1 };
	int k = 0;

	char verdict[40] = "";

	memset(ret, 0, sizeof(*ret));
	if (q->verdict != NULL)
		snprintf(verdict, sizeof(verdict), "\"decision\":\"%.16s\"",
		    q->verdict);
	if (q->cursor != NULL) {
		uint64_t ino, off;
		if (!decisions_cursor_ok(q->cursor))
			return -EINVAL;
		sscanf(q->cursor, "%" SCNx64 ".%" SCNx64, &ino, &off);
		/* The file the cursor was in, wherever the rotation moved
		 * it; gone: from the oldest left. A file now shorter than
		 * the offset was truncated: from its start. */
		for (unsigned i = 0; i < n; i++)
			if ((uint64_t)files[i].ino == ino) {
				first = i;
				start = (off_t)off <= files[i].size ? (off_t)off
								    : 0;
				resumed = true;
				break;
			}
	}
	if (n == 0)
		return -ENOENT;
	r.buf = malloc(DECISIONS_LINE_MAX + 1);
	out = json_array();
	if (r.buf == NULL || out == NULL) {
		free(r.buf);
		json_decref(out);
		return -ENOMEM;
	}
	ret->files = n;
	for (unsigned i = first; i < n && !done; i++) {
		r.fd = openat(dirfd, files[i].name,
		    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
		if (r.fd < 0) {
			if (errno == ENOENT)
				continue; /* rotated away meanwhile */
			k = -errno;
			break;
		}
		struct stat st;
		if (fstat(r.fd, &st) < 0) {
			k = -errno;
			break;
		}
		off_t pos = i == first && resumed ? start : 0;
		if (!(i == first && resumed) &&
		    q->since_ms != DECISIONS_NO_TIME &&
		    (k = find_since(&r, st.st_size, q->since_ms, &pos)) < 0)
			break;
		reader_seek(&r, pos);
		for (;;) {
			char *line;
			off_t off;
			size_t len;
			if (scanned >= scan_max) {
				snprintf(ret->next, sizeof(ret->next),
				    "%" PRIx64 ".%" PRIx64, (uint64_t)st.st_ino,
				    (uint64_t)(r.pos + (off_t)r.at));
				done = true;
				break;
			}
			if ((k = next_line(&r, &line, &off, &len)) <= 0)
				break;
			scanned += len;
			/* What cannot match is not parsed: the proxy writes
			 * "decision":"deny" exactly so (decision.c). */
			if ((q->job != NULL && strstr(line, q->job) == NULL) ||
			    (verdict[0] != '\0' &&
				strstr(line, verdict) == NULL))
				continue;
			json_t *d = json_loads(line, 0, NULL);
			int64_t ms = line_time(d);
			if (!json_is_object(d) || ms == DECISIONS_NO_TIME) {
				json_decref(d);
				continue;
			}
			if (q->until_ms != DECISIONS_NO_TIME &&
			    ms > q->until_ms) {
				json_decref(d);
				done = true;
				break;
			}
			if (!selected(q, d, ms)) {
				json_decref(d);
				continue;
			}
			json_array_append_new(out, d);
			kept += len;
			if (json_array_size(out) >= q->limit ||
			    kept >= DECISIONS_KEEP_MAX) {
				snprintf(ret->next, sizeof(ret->next),
				    "%" PRIx64 ".%" PRIx64, (uint64_t)st.st_ino,
				    (uint64_t)(off + (off_t)len));
				done = true;
				break;
			}
		}
		close(r.fd);
		r.fd = -1;
		if (k < 0)
			break;
	}
	if (r.fd >= 0)
		close(r.fd);
	free(r.buf);
	if (k < 0) {
		json_decref(out);
		memset(ret, 0, sizeof(*ret));
		return k;
	}
	ret->decisions = out;
	ret->scanned = scanned;
	return 0;
}
