/*
 * The job's resolver: a DNS server of the launcher's own on 127.0.0.53:53
 * (UDP and TCP) inside the job's network namespace, the only nameserver
 * in the job's resolv.conf. It knows the names the job's egress rules
 * allow and nothing else: each allowed name is answered (A) with a
 * synthetic address of its own, 127.3.x.y, stable for the job's life, so
 * that a connection to it can be mapped back to the name; every other
 * name is NXDOMAIN. It never forwards a query anywhere: a name no rule
 * allows reaches no resolver. Its parser reads what the hostile job
 * wrote: one question, no compression, capped, anything else FORMERR,
 * NOTIMP or REFUSED.
 */
#ifndef CORDON_LAUNCHER_DNS_H
#define CORDON_LAUNCHER_DNS_H

#include <event2/event.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DNS_ADDR "127.0.0.53" /* the job's nameserver */
#define DNS_PORT 53
#define DNS_MSG_MAX 512 /* a query or an answer, UDP or TCP */
#define DNS_NAME_MAX 253 /* a name in its dotted form */
#define DNS_NAMES_MAX 4096 /* names of one job with an address */
#define DNS_NET 0x7f030000u /* 127.3.0.0/16: the synthetic addresses */
#define DNS_TTL 60

/* What an answer said: the outcome dns_answer reports. */
enum dns_outcome {
	DNS_ANSWERED, /* NOERROR with an address */
	DNS_NODATA, /* NOERROR, no address of that type (AAAA, ...) */
	DNS_NXDOMAIN, /* a name no rule allows: a refusal, logged */
	DNS_BAD, /* FORMERR, NOTIMP or REFUSED: not a question we take */
	DNS_DROPPED, /* no answer at all (a response, or too short) */
};

struct dns_zone;

/*
 * A zone of the names in rules (the broker's egress rules, an array of
 * objects with "host": a name or a "*." wildcard). Names are given
 * addresses in the rules' order; a wildcard's names as they are asked.
 * 0 and *ret, or -errno (-EINVAL: a rule's host is not a name).
 */
int dns_zone_new(const json_t *rules, struct dns_zone **ret);

/* The name behind a synthetic address (network order), or NULL. */
const char *dns_zone_name(const struct dns_zone *z, struct in_addr addr);

/* The address of an allowed name (given one if a wildcard's): 0 and *ret,
 * -ENOENT when no rule allows it, -ENOSPC past DNS_NAMES_MAX. */
int dns_zone_lookup(struct dns_zone *z, const char *name, struct in_addr *ret);

void dns_zone_free(struct dns_zone *z);

/*
 * Answers the query q[0..qlen) into out (at least DNS_MSG_MAX bytes):
 * the outcome, *ret_len the answer's length (0 for DNS_DROPPED), and in
 * name (DNS_NAME_MAX + 1 bytes) the name asked, lowercase, or "".
 */
enum dns_outcome dns_answer(struct dns_zone *z, const uint8_t *q, size_t qlen,
    uint8_t *out, size_t *ret_len, char *name);

/*
 * The resolver's sockets, made inside the network namespace of pid (the
 * caller must be able to setns into it): UDP and TCP on DNS_ADDR:
 * DNS_PORT, into fds[0] and fds[1]. The calling thread is back in its
 * own namespace on return. 0 or -errno (nothing left open).
 */
int dns_sockets(pid_t pid, int fds[2]);

struct dns_server;

struct dns_counts {
	uint64_t answered, nodata, refused, bad;
};

/* Called with each name refused (NXDOMAIN), for the decision log. */
typedef void (*dns_refused_fn)(const char *name, void *arg);

/*
 * Serves zone (not taken: it must outlive the server) on fds (taken:
 * closed with the server, and on failure) on base. 0 and *ret, or
 * -errno.
 */
int dns_server_new(struct event_base *base, int fds[2], struct dns_zone *z,
    dns_refused_fn refused, void *arg, struct dns_server **ret);

void dns_server_counts(const struct dns_server *s, struct dns_counts *ret);

/* Closes its sockets and connections. NULL is fine. */
void dns_server_free(struct dns_server *s);

#endif
