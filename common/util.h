/*
 * Small things every cordon file may use: cleanup attributes for locals,
 * ownership transfer, array sizes and the sysexits codes our programs exit
 * with. Nothing here allocates or logs.
 */
#ifndef CORDON_UTIL_H
#define CORDON_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Exit statuses, after sysexits(3). */
#define EXIT_USAGE 64 /* a bad flag or argument */
#define EXIT_UNAVAIL 69 /* a service we depend on is down */
#define EXIT_SOFTWARE 70
#define EXIT_OSERR 71 /* could not listen, create the state dir, ... */
#define EXIT_CONFIG 78

#define _cleanup_(f) __attribute__((cleanup(f)))

/* Returns *p and leaves NULL behind, so a _cleanup_ local hands over. */
#define steal_pointer(p)                                                       \
	({                                                                     \
		__typeof__(*(p)) _stolen = *(p);                               \
		*(p) = NULL;                                                   \
		_stolen;                                                       \
	})

static inline void
freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void
closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

/* Returns *fd and leaves -1 behind. */
static inline int
steal_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

/* The value of hex digit c, either case; -1 for any other byte. */
static inline int
hex_digit(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The monotonic clock, in milliseconds. */
static inline int64_t
monotonic_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Milliseconds since t, on the monotonic clock. */
static inline double
elapsed_ms(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) * 1e3 +
	    (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

/* s is 1 to max of ASCII letters, digits and the bytes of extra: a name
 * that is safe in a path, a URL and a log line (job ids, followers). */
static inline bool
name_ok(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
			(s[i] >= 'A' && s[i] <= 'Z') ||
			(s[i] >= '0' && s[i] <= '9') ||
			strchr(extra, s[i]) != NULL))
			return false;
	return true;
}

#endif
