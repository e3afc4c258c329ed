/*
 * A client that knows nothing of proxies, run inside a job by it_capture:
 * argv[1] a name and argv[2] a port, resolved by getaddrinfo and
 * connected with a plain connect(), one HTTP/1.1 GET /ok/raw written by
 * hand, the status line printed ("raw HTTP/1.1 200 OK"); then a connect
 * to each of argv[3..] ("addr:port"), each line saying how it ended and
 * in how many milliseconds (printed, not judged: the machine is shared).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1000 + (double)t.tv_nsec / 1e6;
}

static int
dial(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET,
		.ai_socktype = SOCK_STREAM },
			*ai;
	int fd, r = getaddrinfo(host, port, &hints, &ai);

	if (r != 0) {
		printf("resolve %s: %s\n", host, gai_strerror(r));
		return -1;
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		int e = errno;
		close(fd);
		fd = -1;
		errno = e;
	}
	freeaddrinfo(ai);
	return fd;
}

int
main(int argc, char **argv)
{
	char req[512], buf[4096];
	ssize_t n;
	size_t got = 0;

	if (argc < 3)
		return 2;
	int fd = dial(argv[1], argv[2]);
	if (fd < 0) {
		printf("raw connect: %s\n", strerror(errno));
	} else {
		snprintf(req, sizeof(req),
		    "GET /ok/raw HTTP/1.1\r\nHost: %s:%s\r\n"
		    "Connection: close\r\n\r\n",
		    argv[1], argv[2]);
		if (write(fd, req, strlen(req)) < 0)
			printf("raw write: %s\n", strerror(errno));
		while (got < sizeof(buf) - 1 &&
		    (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)n;
		buf[got] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
		printf("raw %s\n", buf);
		close(fd);
	}
	for (int i = 3; i < argc; i++) {
		char addr[64], *colon;
		snprintf(addr, sizeof(addr), "%s", argv[i]);
		if ((colon = strrchr(addr, ':')) == NULL)
			continue;
		*colon = '\0';
		double t0 = now_ms();
		int d = dial(addr, colon + 1);
		int e = errno;
		if (d >= 0) {
			/* Accepted by someone: does anything come back? */
			n = read(d, buf, 1);
			printf("direct %s: connected, then %s (%.1f ms)\n",
			    argv[i], n == 0 ? "closed" : "more", now_ms() - t0);
			close(d);
		} else {
			printf("direct %s: %s (%.1f ms)\n", argv[i],
			    strerror(e), now_ms() - t0);
		}
	}
	return 0;
}
