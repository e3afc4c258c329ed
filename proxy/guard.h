/*
 * The guard (credentials.md, "What is scanned"): the places a secret was
 * or will be sent, its bindings at the broker (a rule's host, a declared
 * other name, an upstream address an injected request went to), and the
 * match of a request's host and upstream address against them. A job's
 * request to such a place, whatever its job, has its answer scanned for
 * that secret (conn.c asks the broker for a scan release first), and what
 * cannot be read there (passthrough, an upgrade) is refused. The list is
 * the broker's (GET /v1/bindings, and the egress answer at each channel
 * open), replaced whole at each read; an address this proxy saw an
 * injected request go to is added here at once, and told to the broker.
 * Also kept here: every issuer credential the proxy released for any job
 * or a scan release gave (the broker's every live one, any proxy's),
 * scan-only, until its expiry. Pure: no I/O; lookups allocate nothing
 * (sorted arrays, bsearch).
 */
#ifndef CORDON_PROXY_GUARD_H
#define CORDON_PROXY_GUARD_H

#include <arpa/inet.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bindings, and host, IP or address keys in all, one list
 * holds; a bigger list is refused whole (the last one stays). */
#define GUARD_BINDINGS_MAX 1024
#define GUARD_KEYS_MAX 16384
/* The most bindings one request matches (more are not told). */
#define GUARD_MATCH_MAX 16
/* Addresses seen here and not yet in the broker's list. */
#define GUARD_LOCAL_MAX 256
/* Issuer credentials kept for the scan, proxy-wide; past it, an issuer's
 * credential is not injected (conn.c: 503 guard_unavailable issued_cap). */
#define GUARD_ISSUED_MAX 256
/* An issuer credential without an expiry is kept this long. */
#define GUARD_ISSUED_DEFAULT_S 3600
/* "[v6]:port" at most. */
#define GUARD_ADDR_MAX (INET6_ADDRSTRLEN + 8)
#define GUARD_NAME_MAX 64

struct guard_binding {
	char secret[GUARD_NAME_MAX + 1];
	char kind[GUARD_NAME_MAX + 1]; /* "static", or the issuer's kind */
	int64_t version; /* the secret's current version */
	bool is_static; /* not an issuer's (oauth_client_credentials,
			 * github_app): the broker's scan release */
};

/* A host, an IP or an "ip:port", and the binding it belongs to. */
struct guard_key {
	char *key;
	uint32_t b;
};

/* An address an injected request of job went to, not in the list yet. */
struct guard_local {
	char secret[GUARD_NAME_MAX + 1];
	char job[GUARD_NAME_MAX + 1];
	char addr[GUARD_ADDR_MAX];
	bool told; /* the broker took it */
	bool asking; /* its POST /v1/bindings in flight */
};

struct guard_issued {
	char secret[GUARD_NAME_MAX + 1];
	char *value; /* len bytes, wiped before it is freed */
	size_t len;
	int64_t expires; /* monotonic seconds */
};

struct guard {
	struct guard_binding *b; /* sorted by secret */
	size_t nb;
	struct guard_key *hosts, *ips, *addrs; /* each sorted by key */
	size_t nhosts, nips, naddrs;
	int64_t read_ms; /* monotonic ms of the last read; 0: none */
	struct guard_local local[GUARD_LOCAL_MAX];
	size_t nlocal;
	struct guard_issued issued[GUARD_ISSUED_MAX];
	size_t nissued;
};

/*
 * Replaces g's list by bindings, the broker's array ([{"secret", "kind",
 * "version", "hosts": [..], "addrs": ["ip:port", ..]}]), read at now_ms
 * (monotonic ms): hosts lowercased, one trailing dot dropped, an IP
 * literal among them matching that IP on every port; addrs in the
 * proxy's own text ("a.b.c.d:port", "[v6]:port", a v6 address whose
 * packets reach an IPv4 one, as cidr_embedded_v4 reads it, as IPv4). Local addresses the list holds now are forgotten. 0; -EINVAL
 * (not such an array, a field out of bounds: err says which) or -E2BIG
 * (past the caps) or -ENOMEM, the old list kept then.
 */
int guard_load(struct guard *g, const json_t *bindings, int64_t now_ms,
    char *err, size_t errlen);

/* Whether a list was read within max_age_ms of now_ms. */
bool guard_fresh(const struct guard *g, int64_t now_ms, int64_t max_age_ms);

/*
 * The bindings a request to host (a name as the job asked it; NULL or ""
 * for none) sent to addr (the upstream address as the proxy writes it;
 * NULL or "" before one is known) reaches: by host, by the IP of addr,
 * or by addr itself (IP and port; a v6 addr that reaches an IPv4 one as
 * that). Writes at most GUARD_MATCH_MAX
 * pointers into ret (each binding once, valid until the next load) and
 * returns how many. Allocates nothing.
 */
size_t guard_match(const struct guard *g, const char *host, const char *addr,
    const struct guard_binding *ret[GUARD_MATCH_MAX]);

/* secret's binding, or NULL. */
const struct guard_binding *guard_binding_of(const struct guard *g,
    const char *secret);

/*
 * An injected request of job's secret went to addr: whether the list or
 * the local addresses hold it for that secret already. When not, it is
 * added locally (found by guard_match from now on) and *ret_local is
 * where (NULL when there was no room: the broker is still told, the
 * match then waits for its list). 1 when it was added (the broker is to
 * be told), 0 when held already, -EINVAL (a name or an address out of
 * bounds).
 */
int guard_local_add(struct guard *g, const char *secret, const char *job,
    const char *addr, struct guard_local **ret_local);

/* A local address whose telling failed (told and asking false), or
 * NULL: the next to tell the broker again. */
struct guard_local *guard_local_due(struct guard *g);

/* Normalises an address ("ip:port", "[v6]:port") into out as the proxy
 * writes it: 0, or -EINVAL. */
int guard_addr_normalise(const char *in, char out[GUARD_ADDR_MAX]);

/*
 * Keeps issuer credential value[0..len) of secret for the scan until
 * expires (monotonic seconds, its own expiry however far; 0: now_s +
 * GUARD_ISSUED_DEFAULT_S), the dead ones wiped first. 1 when added, 0 when held, -ENOSPC when
 * full of live ones, -EINVAL, -ENOMEM.
 */
int guard_issued_put(struct guard *g, const char *secret, const char *value,
    size_t len, int64_t expires, int64_t now_s);

/* Wipes the issuer credentials dead at now_s. */
void guard_issued_expire(struct guard *g, int64_t now_s);

/*
 * The issuer secrets a job was given the broker's scan set of (every
 * live credential of the secret, any job's, any proxy's), each with the
 * list read it was asked after (struct guard's read_ms): asked again
 * once a newer list was read (conn.c), so a credential another proxy
 * released reaches the job's scan within a bindings refresh. The oldest
 * gives its place past GUARD_ASKED_MAX (asked again: never less
 * scanned).
 */
#define GUARD_ASKED_MAX 16
struct guard_asked {
	struct {
		char secret[GUARD_NAME_MAX + 1];
		int64_t read_ms;
	} v[GUARD_ASKED_MAX];
	size_t n;
};

/* Whether secret's scan set is to be asked for a's job: never asked,
 * or asked before the list read at read_ms. */
bool guard_asked_due(const struct guard_asked *a, const char *secret,
    int64_t read_ms);

/* secret's scan set was given with the list read at read_ms the newest. */
void guard_asked_set(struct guard_asked *a, const char *secret,
    int64_t read_ms);

/* Wipes and frees everything g holds. A zeroed g is fine. */
void guard_free(struct guard *g);

#endif
