/*
 * A raw-socket client for it_clients.c, run inside a job: getaddrinfo
 * of the name (the job's resolver), connect() to its address, a request
 * written by hand, the status line read back. No proxy, no library: the
 * launcher's capture is the only way this reaches anything. Prints
 * "raw HOST PATH <status line>", or why it could not.
 *
 *   raw HOST PORT PATH
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_family = AF_INET,
		.ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char req[1024], resp[512];
	ssize_t n, got = 0;
	int fd, r;

	if (argc != 4) {
		fprintf(stderr, "usage: raw HOST PORT PATH\n");
		return 64;
	}
	if ((r = getaddrinfo(argv[1], argv[2], &hints, &ai)) != 0) {
		printf("raw %s %s resolve: %s\n", argv[1], argv[3],
		    gai_strerror(r));
		return 0;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		printf("raw %s %s connect: %m\n", argv[1], argv[3]);
		freeaddrinfo(ai);
		return 0;
	}
	freeaddrinfo(ai);
	n = snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n",
	    argv[3], argv[1], argv[2]);
	if (n < 0 || (size_t)n >= sizeof(req) ||
	    write(fd, req, (size_t)n) != n) {
		printf("raw %s %s write failed\n", argv[1], argv[3]);
		return 0;
	}
	while (got < (ssize_t)sizeof(resp) - 1 &&
	    (n = read(fd, resp + got, sizeof(resp) - 1 - (size_t)got)) > 0)
		got += n;
	resp[got] = '\0';
	resp[strcspn(resp, "\r\n")] = '\0';
	printf("raw %s %s %s\n", argv[1], argv[3], got > 0 ? resp : "(closed)");
	close(fd);
	return 0;
}
