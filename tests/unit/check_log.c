/*
 * JSON-lines logging as journald and the integration tests read it: each
 * log_event is exactly one line on stderr holding one JSON object whose
 * first keys are ts (RFC 3339, UTC, "Z"), level, svc and event, then the
 * caller's fields; lines below the minimum level are dropped; a format
 * that does not pack still gives a line, with "log_error"; and lines from
 * several threads never interleave. stderr is caught with dup2 into a
 * temporary file.
 */
#include "log.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINES 1024

static FILE *caught;
static int saved_stderr = -1;

static void
catch_begin(void)
{
	caught = tmpfile();
	ck_assert_ptr_nonnull(caught);
	saved_stderr = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_stderr, 0);
	fflush(stderr);
	ck_assert_int_ge(dup2(fileno(caught), STDERR_FILENO), 0);
}

/* Restores stderr and returns everything written to it (free() it). */
static char *
catch_end(void)
{
	long size;
	char *text;

	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	saved_stderr = -1;
	ck_assert_int_eq(fseek(caught, 0, SEEK_END), 0);
	size = ftell(caught);
	ck_assert_int_ge(size, 0);
	rewind(caught);
	text = calloc((size_t)size + 1, 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)size, caught), (size_t)size);
	fclose(caught);
	caught = NULL;
	ck_assert_msg(strlen(text) == (size_t)size, "NUL byte in the log");
	return text;
}

/* Splits text into its lines, each of which must end in '\n'; returns how
 * many. The pointers point into text. */
static size_t
split_lines(char *text, char **lines, size_t max)
{
	size_t n = 0;
	char *p = text;

	while (*p != '\0') {
		char *nl = strchr(p, '\n');

		ck_assert_msg(nl != NULL, "last line \"%s\" lacks a newline",
		    p);
		ck_assert_uint_lt(n, max);
		*nl = '\0';
		lines[n++] = p;
		p = nl + 1;
	}
	return n;
}

/* Parses one line, which must be a single JSON object and nothing else. */
static json_t *
parse_line(const char *line)
{
	json_error_t err;
	json_t *v = json_loads(line, JSON_REJECT_DUPLICATES, &err);

	ck_assert_msg(v != NULL, "line \"%s\" is not JSON: %s", line, err.text);
	ck_assert_msg(json_is_object(v), "line \"%s\" is not an object", line);
	return v;
}

static const char *
str_field(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_string(v), "\"%s\" is not a string", key);
	return json_string_value(v);
}

/* ts is RFC 3339 UTC with milliseconds and within a minute of now. */
static void
assert_timestamp(const char *ts)
{
	regex_t re;
	struct tm tm = { 0 };
	const char *end;
	time_t t;

	ck_assert_int_eq(regcomp(&re,
			     "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
			     "[0-9]{2}\\.[0-9]{3}Z$",
			     REG_EXTENDED | REG_NOSUB),
	    0);
	ck_assert_msg(regexec(&re, ts, 0, NULL, 0) == 0, "ts \"%s\"", ts);
	regfree(&re);
	end = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm);
	ck_assert_ptr_nonnull(end);
	t = timegm(&tm);
	ck_assert_msg(llabs((long long)(t - time(NULL))) < 60,
	    "ts \"%s\" is not now (UTC)", ts);
}

/* The line's keys, in order, start with ts, level, svc, event, then
 * exactly the n keys in extra; level, svc and event have these values. */
static void
assert_line(json_t *o, const char *level, const char *svc, const char *event,
    const char *const *extra, size_t n)
{
	static const char *const head[] = { "ts", "level", "svc", "event" };
	void *it = json_object_iter(o);
	size_t i = 0;

	for (; it != NULL; it = json_object_iter_next(o, it), i++) {
		const char *key = json_object_iter_key(it);
		const char *want = i < 4 ? head[i]
		    : i - 4 < n          ? extra[i - 4]
					 : "";

		ck_assert_msg(strcmp(key, want) == 0,
		    "key %zu is \"%s\", expected \"%s\"", i, key, want);
	}
	ck_assert_uint_eq(i, 4 + n);
	assert_timestamp(str_field(o, "ts"));
	ck_assert_str_eq(str_field(o, "level"), level);
	ck_assert_str_eq(str_field(o, "svc"), svc);
	ck_assert_str_eq(str_field(o, "event"), event);
}

START_TEST(test_line_shape)
{
	static const char *const extra[] = { "addr", "pid", "ok", "nothing",
		"ms" };
	char *text, *lines[MAX_LINES];
	json_t *o;

	log_init("broker", LEVEL_DEBUG);
	catch_begin();
	log_info("listening", "{s:s, s:i, s:b, s:n, s:f}", "addr",
	    "127.0.0.1:7701", "pid", 42, "ok", 1, "nothing", "ms", 1.5);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 1);
	o = parse_line(lines[0]);
	assert_line(o, "info", "broker", "listening", extra, 5);
	ck_assert_str_eq(str_field(o, "addr"), "127.0.0.1:7701");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "pid")), 42);
	ck_assert(json_is_true(json_object_get(o, "ok")));
	ck_assert(json_is_null(json_object_get(o, "nothing")));
	ck_assert(json_real_value(json_object_get(o, "ms")) == 1.5);
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_no_fields)
{
	char *text, *lines[MAX_LINES];
	json_t *o;

	log_init("proxy", LEVEL_INFO);
	catch_begin();
	log_info("stopped", NULL);
	log_info("empty", "{}");
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 2);
	o = parse_line(lines[0]);
	assert_line(o, "info", "proxy", "stopped", NULL, 0);
	json_decref(o);
	o = parse_line(lines[1]);
	assert_line(o, "info", "proxy", "empty", NULL, 0);
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_each_level)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };
	char *text, *lines[MAX_LINES];

	log_init("hatch", LEVEL_DEBUG);
	catch_begin();
	log_debug("e0", NULL);
	log_info("e1", NULL);
	log_warn("e2", NULL);
	log_error("e3", NULL);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 4);
	for (size_t i = 0; i < 4; i++) {
		char event[4] = { 'e', (char)('0' + i), '\0' };
		json_t *o = parse_line(lines[i]);

		assert_line(o, names[i], "hatch", event, NULL, 0);
		json_decref(o);
	}
	free(text);
}
END_TEST

START_TEST(test_level_filter)
{
	char *text, *lines[MAX_LINES];
	json_t *o;

	log_init("launcher", LEVEL_WARN);
	catch_begin();
	log_debug("dropped_debug", "{s:s}", "k", "v");
	log_info("dropped_info", NULL);
	log_warn("kept_warn", NULL);
	log_error("kept_error", "{s:i}", "n", 1);
	log_info("dropped_again", NULL);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 2);
	o = parse_line(lines[0]);
	ck_assert_str_eq(str_field(o, "event"), "kept_warn");
	ck_assert_str_eq(str_field(o, "level"), "warn");
	json_decref(o);
	o = parse_line(lines[1]);
	ck_assert_str_eq(str_field(o, "event"), "kept_error");
	ck_assert_str_eq(str_field(o, "level"), "error");
	json_decref(o);
	free(text);

	/* Error only: warn goes too. */
	log_init("launcher", LEVEL_ERROR);
	catch_begin();
	log_warn("dropped_warn", NULL);
	log_error("kept", NULL);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 1);
	ck_assert_ptr_nonnull(strstr(lines[0], "\"event\":\"kept\""));
	free(text);
}
END_TEST

START_TEST(test_bad_format_still_logs)
{
	static const char *const extra[] = { "log_error" };
	char *text, *lines[MAX_LINES];
	json_t *o;

	log_init("broker", LEVEL_INFO);
	catch_begin();
	log_error("bad_char", "{s:q}", "k", 1);
	log_error("null_string", "{s:s}", "k", (char *)NULL);
	log_error("unclosed", "{s:s", "k", "v");
	log_error("bad_utf8", "{s:s}", "k", "\xff\xfe");
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 4);
	for (size_t i = 0; i < 4; i++) {
		static const char *const events[] = { "bad_char", "null_string",
			"unclosed", "bad_utf8" };

		o = parse_line(lines[i]);
		assert_line(o, "error", "broker", events[i], extra, 1);
		ck_assert_msg(strlen(str_field(o, "log_error")) > 0,
		    "line \"%s\" does not say what went wrong", lines[i]);
		json_decref(o);
	}
	free(text);

	/* A format for something other than an object is refused too. */
	catch_begin();
	log_error("not_object", "[i]", 1);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 1);
	o = parse_line(lines[0]);
	assert_line(o, "error", "broker", "not_object", extra, 1);
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_fields_cannot_replace_head)
{
	char *text, *lines[MAX_LINES];
	json_t *o;

	/*
	 * A caller's field named like one of the four may not forge them:
	 * the real ones stay, the rest of the fields come through, and the
	 * line says what was tried.
	 */
	log_init("broker", LEVEL_INFO);
	catch_begin();
	log_info("real_event", "{s:s, s:s, s:s, s:s, s:i}", "ts",
	    "1970-01-01T00:00:00.000Z", "level", "debug", "svc", "proxy",
	    "event", "forged", "n", 7);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 1);
	o = parse_line(lines[0]);
	assert_timestamp(str_field(o, "ts"));
	ck_assert_str_eq(str_field(o, "level"), "info");
	ck_assert_str_eq(str_field(o, "svc"), "broker");
	ck_assert_str_eq(str_field(o, "event"), "real_event");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "n")), 7);
	ck_assert_msg(strlen(str_field(o, "log_error")) > 0,
	    "line \"%s\" does not say a field was refused", lines[0]);
	ck_assert_uint_eq(json_object_size(o), 6);
	json_decref(o);
	free(text);

	/* One of them alone is enough to be refused. */
	catch_begin();
	log_warn("alone", "{s:s}", "event", "forged");
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 1);
	o = parse_line(lines[0]);
	ck_assert_str_eq(str_field(o, "event"), "alone");
	ck_assert_str_eq(str_field(o, "level"), "warn");
	ck_assert_msg(strlen(str_field(o, "log_error")) > 0, "line \"%s\"",
	    lines[0]);
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_fields_not_object_says_so)
{
	static const char *const extra[] = { "log_error" };
	char *text, *lines[MAX_LINES];
	json_t *o;

	log_init("broker", LEVEL_INFO);
	catch_begin();
	log_error("array_fields", "[i]", 1);
	log_error("string_fields", "s", "just text");
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 2);
	o = parse_line(lines[0]);
	assert_line(o, "error", "broker", "array_fields", extra, 1);
	ck_assert_str_eq(str_field(o, "log_error"), "fields is not an object");
	json_decref(o);
	o = parse_line(lines[1]);
	assert_line(o, "error", "broker", "string_fields", extra, 1);
	ck_assert_str_eq(str_field(o, "log_error"), "fields is not an object");
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_bad_utf8_event_name_still_logs)
{
	static const char *const extra[] = { "log_error" };
	char *text, *lines[MAX_LINES];
	json_t *o;

	/* An event name that will not encode is no reason to lose the line. */
	log_init("hatch", LEVEL_INFO);
	catch_begin();
	log_warn("bad\xff\xfename", NULL);
	log_error("\xc3", "{s:i}", "n", 1);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 2);
	o = parse_line(lines[0]);
	assert_line(o, "warn", "hatch", "log_error", extra, 1);
	ck_assert_msg(strlen(str_field(o, "log_error")) > 0, "line \"%s\"",
	    lines[0]);
	json_decref(o);
	o = parse_line(lines[1]);
	ck_assert_str_eq(str_field(o, "event"), "log_error");
	ck_assert_str_eq(str_field(o, "level"), "error");
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_escaping_keeps_one_line)
{
	const char *nasty = "two\nlines \"quoted\" \\ tab\t bell\a caf\xc3\xa9";
	char *text, *lines[MAX_LINES];
	json_t *o;

	log_init("broker", LEVEL_INFO);
	catch_begin();
	log_warn("odd", "{s:s, s:s}", "value", nasty, "key\nwith newline", "x");
	text = catch_end();
	for (const char *p = text; *p != '\0'; p++)
		ck_assert_msg((unsigned char)*p < 0x80,
		    "non-ASCII byte in log");
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 1);
	o = parse_line(lines[0]);
	ck_assert_str_eq(str_field(o, "value"), nasty);
	ck_assert_str_eq(str_field(o, "key\nwith newline"), "x");
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_long_line)
{
	char *big = malloc(100001), *text, *lines[MAX_LINES];
	json_t *o;

	ck_assert_ptr_nonnull(big);
	memset(big, 'a', 100000);
	big[100000] = '\0';
	log_init("broker", LEVEL_INFO);
	catch_begin();
	log_info("big", "{s:s}", "body", big);
	text = catch_end();
	ck_assert_uint_eq(split_lines(text, lines, MAX_LINES), 1);
	o = parse_line(lines[0]);
	ck_assert_str_eq(str_field(o, "body"), big);
	json_decref(o);
	free(text);
	free(big);
}
END_TEST

#define THREADS 4
#define PER_THREAD 200

static void *
log_many(void *arg)
{
	int id = (int)(long)arg;

	for (int i = 0; i < PER_THREAD; i++)
		log_info("tick", "{s:i, s:i, s:s}", "thread", id, "i", i, "pad",
		    "0123456789012345678901234567890123456789");
	return NULL;
}

START_TEST(test_threads_do_not_interleave)
{
	pthread_t t[THREADS];
	char *text, *lines[MAX_LINES];
	int seen[THREADS] = { 0 };
	size_t n;

	log_init("broker", LEVEL_INFO);
	catch_begin();
	for (long i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, log_many,
				     (void *)i),
		    0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	text = catch_end();
	n = split_lines(text, lines, MAX_LINES);
	ck_assert_uint_eq(n, THREADS * PER_THREAD);
	for (size_t i = 0; i < n; i++) {
		json_t *o = parse_line(lines[i]);
		json_int_t id =
		    json_integer_value(json_object_get(o, "thread"));
		json_int_t k = json_integer_value(json_object_get(o, "i"));

		ck_assert(id >= 0 && id < THREADS);
		/* Each thread's lines arrive in its own order. */
		ck_assert_int_eq(k, seen[id]);
		seen[id]++;
		json_decref(o);
	}
	free(text);
}
END_TEST

/* A failure a peer repeats is one line per burst, with a count, never a
 * line per attempt (issue 16, item 3); other lines are not held back. */
START_TEST(test_burst_is_one_line_with_a_count)
{
	char *text, *lines[MAX_LINES];
	size_t n, told = 0;
	json_int_t attempts = 0;

	log_init("test", LEVEL_INFO);
	catch_begin();
	for (int i = 0; i < 5000; i++)
		log_burst(LEVEL_WARN, "accept_failed", "{s:s}", "error",
		    "Too many open files");
	log_burst(LEVEL_WARN, "accept_failed", "{s:s}", "error", "other");
	log_event(LEVEL_WARN, "accept_failed", "{s:s}", "error", "plain");
	/* Past the window, the flush tells how many were not written. */
	usleep((LOG_BURST_MS + 200) * 1000);
	log_burst_flush();
	text = catch_end();
	n = split_lines(text, lines, MAX_LINES);
	/* The first, the other one, the plain one, the count; one more for
	 * every window the loop outlasted on a slow machine. */
	ck_assert_msg(n >= 4 && n < 20, "%zu lines", n);
	for (size_t i = 0; i < n; i++) {
		json_t *o = parse_line(lines[i]);
		json_t *c = json_object_get(o, "repeated");
		if (strcmp(str_field(o, "error"), "Too many open files") == 0)
			attempts +=
			    json_is_integer(c) ? json_integer_value(c) : 1;
		told += json_is_integer(c);
		json_decref(o);
	}
	ck_assert_uint_ge(told, 1);
	/* Every attempt is accounted for: written, or counted. */
	ck_assert_int_eq(attempts, 5000);
	free(text);
}
END_TEST

START_TEST(test_level_parse)
{
	static const struct {
		const char *s;
		enum log_level level;
	} good[] = { { "debug", LEVEL_DEBUG }, { "info", LEVEL_INFO },
		{ "warn", LEVEL_WARN }, { "error", LEVEL_ERROR } };
	static const char *const bad[] = { "", "DEBUG", "Info", "warning",
		"err", "info ", " info", "fatal", "trace", "errors" };
	enum log_level level;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		level =
		    good[i].level == LEVEL_DEBUG ? LEVEL_ERROR : LEVEL_DEBUG;
		ck_assert_int_eq(log_level_parse(good[i].s, &level), 0);
		ck_assert_int_eq(level, good[i].level);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		level = LEVEL_WARN;
		ck_assert_msg(log_level_parse(bad[i], &level) == -EINVAL,
		    "\"%s\" accepted", bad[i]);
		ck_assert_int_eq(level, LEVEL_WARN);
	}
}
END_TEST

START_TEST(test_timestamp)
{
	char ts[25];

	memset(ts, 'x', sizeof(ts));
	log_timestamp(ts, sizeof(ts));
	ck_assert_uint_eq(strlen(ts), 24);
	assert_timestamp(ts);
}
END_TEST

/* log_timestamp_of against strftime and snprintf, as log_timestamp wrote
 * it before it kept each second's text: the same second again, the next
 * one, one back, a minute, a day, a year away, in one thread and in
 * another (each thread keeps its own second). */
static void
assert_timestamp_of(time_t sec, long nsec)
{
	struct timespec t = { .tv_sec = sec, .tv_nsec = nsec };
	char got[64], want[64], base[32];
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(want, sizeof(want), "%s.%03ldZ", base, nsec / 1000000);
	memset(got, 'x', sizeof(got));
	log_timestamp_of(&t, got, sizeof(got));
	ck_assert_msg(strcmp(got, want) == 0, "%lld.%09ld: \"%s\", want \"%s\"",
	    (long long)sec, nsec, got, want);
}

static void *
timestamps_of(void *arg)
{
	static const time_t at[] = { 1796169599, 1796169600, 1796169600,
		1796169599, 1796169659, 1796256000, 1827705600, 951782400,
		951868799, 0, 4102444800 };
	static const long ns[] = { 999999999, 0, 1000000, 999000000, 500000000,
		123456789, 7000000, 0, 999999, 0, 1 };
	long shift = *(const long *)arg;

	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
			assert_timestamp_of(at[i] + shift, ns[i]);
	for (long k = 0; k < 5000; k++)
		assert_timestamp_of(1796169600 + shift + k / 7 * 61 % 4000,
		    k * 7919 % 1000 * 1000000 + k % 1000);
	return NULL;
}

START_TEST(test_timestamp_of_each_second)
{
	long mine = 0, other = 3601;
	pthread_t th;
	char ts[25];

	timestamps_of(&mine);
	ck_assert_int_eq(pthread_create(&th, NULL, timestamps_of, &other), 0);
	timestamps_of(&mine);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	timestamps_of(&mine);
	/* Cut short as snprintf would. */
	struct timespec t = { .tv_sec = 1796169600, .tv_nsec = 42000000 };
	memset(ts, 'x', sizeof(ts));
	log_timestamp_of(&t, ts, 11);
	ck_assert_str_eq(ts, "2026-12-02");
	log_timestamp_of(&t, ts, sizeof(ts));
	ck_assert_str_eq(ts, "2026-12-02T00:00:00.042Z");
}
END_TEST

static Suite *
log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc;

	tc = tcase_create("lines");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_line_shape);
	tcase_add_test(tc, test_no_fields);
	tcase_add_test(tc, test_each_level);
	tcase_add_test(tc, test_level_filter);
	tcase_add_test(tc, test_bad_format_still_logs);
	tcase_add_test(tc, test_fields_cannot_replace_head);
	tcase_add_test(tc, test_fields_not_object_says_so);
	tcase_add_test(tc, test_bad_utf8_event_name_still_logs);
	tcase_add_test(tc, test_escaping_keeps_one_line);
	tcase_add_test(tc, test_long_line);
	tcase_add_test(tc, test_threads_do_not_interleave);
	tcase_add_test(tc, test_burst_is_one_line_with_a_count);
	suite_add_tcase(s, tc);

	tc = tcase_create("helpers");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_level_parse);
	tcase_add_test(tc, test_timestamp);
	tcase_add_test(tc, test_timestamp_of_each_second);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	/* A zone far from UTC, so that a local time in "ts" shows. */
	setenv("TZ", "CRD-5:30", 1);
	tzset();
	return testutil_run(log_suite());
}
