/*
 * The tests' issuer that hangs: a listener on 127.0.0.1 (plain HTTP, which
 * broker/issuers.c allows to loopback) that accepts and never answers,
 * counting the calls it holds, except POST /fast/token (a token at once)
 * and POST /oauth/revoke (counted, never answered). it_issuer_slow and
 * it_release_slow use it.
 */
#include "hungissuer.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS 512

/* What the issuer answers at once: a token at /fast/token, then its end
 * of the connection closed (it reads on until the broker closes, so that
 * nothing is reset). */
static const char fast_answer[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    "Content-Length: 56\r\nConnection: close\r\n\r\n"
    "{\"access_token\":\"tok-fast-0123456789\",\"expires_in\":3600}";

static void *
hung_main(void *arg)
{
	struct hung_issuer *h = arg;
	struct pollfd p[MAX_FDS];
	bool seen[MAX_FDS] = { false }, fast[MAX_FDS] = { false };
	size_t n = 2;
	char buf[4096];
	ssize_t k;

	p[0] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = h->wake[0], .events = POLLIN };
	for (;;) {
		if (poll(p, n, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents != 0)
			break;
		if (p[0].revents & POLLIN) {
			int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0 && n < MAX_FDS) {
				seen[n] = fast[n] = false;
				p[n++] = (struct pollfd){ .fd = fd,
					.events = POLLIN };
				atomic_fetch_add(&h->accepted, 1);
				atomic_fetch_add(&h->open, 1);
			} else if (fd >= 0)
				close(fd);
		}
		for (size_t i = 2; i < n;) {
			/* Read what the broker sends; its close ends a call.
			 * The first bytes say which endpoint it called. */
			if (p[i].revents == 0) {
				i++;
				continue;
			}
			k = read(p[i].fd, buf, sizeof(buf) - 1);
			if (k > 0 && !seen[i]) {
				buf[k] = '\0';
				seen[i] = true;
				if (strncmp(buf, "POST /oauth/revoke ", 19) ==
				    0)
					atomic_fetch_add(&h->revokes, 1);
				if (strncmp(buf, "POST /fast/token ", 17) ==
				    0) {
					fast[i] = true;
					atomic_fetch_sub(&h->open, 1);
					if (write(p[i].fd, fast_answer,
						sizeof(fast_answer) - 1) < 0) {
						/* the broker went */
					}
					shutdown(p[i].fd, SHUT_WR);
				}
			}
			if (k <= 0) {
				close(p[i].fd);
				if (!fast[i])
					atomic_fetch_sub(&h->open, 1);
				p[i] = p[--n];
				seen[i] = seen[n];
				fast[i] = fast[n];
				continue;
			}
			i++;
		}
	}
	for (size_t i = 2; i < n; i++)
		close(p[i].fd);
	return NULL;
}

void
hung_issuer_start(struct hung_issuer *h)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(h->lfd, 0);
	ck_assert_int_eq(bind(h->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(h->lfd, 256), 0);
	ck_assert_int_eq(getsockname(h->lfd, (struct sockaddr *)&a, &alen), 0);
	h->port = ntohs(a.sin_port);
	ck_assert_int_eq(pipe2(h->wake, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&h->thread, NULL, hung_main, h), 0);
}

void
hung_issuer_stop(struct hung_issuer *h)
{
	if (h->lfd < 0)
		return;
	ck_assert_int_eq(write(h->wake[1], "x", 1), 1);
	pthread_join(h->thread, NULL);
	close(h->lfd);
	close(h->wake[0]);
	close(h->wake[1]);
	h->lfd = -1;
}

/* Waits (up to 20 s) until the issuer holds at least n calls at once. */
void
hung_issuer_wait_open(struct hung_issuer *h, unsigned n)
{
	for (int i = 0; i < 400 && atomic_load(&h->open) < n; i++)
		usleep(50000);
	ck_assert_msg(atomic_load(&h->open) >= n,
	    "the issuer holds %u calls, want %u", atomic_load(&h->open), n);
}

/* Waits (up to ms) until the issuer accepted more than before. */
void
hung_issuer_wait_accepted(struct hung_issuer *h, unsigned before, int ms)
{
	for (int i = 0; i < ms / 10 && atomic_load(&h->accepted) <= before; i++)
		usleep(10000);
}
