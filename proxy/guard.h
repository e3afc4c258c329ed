/*
 * The guard (credentials.md, "What is scanned"): the places a secret was
 * or will be sent, its bindings at the broker (a rule's host, a declared
 * other name, an upstream address an injected request went to), and the
 * match of a request's host and upstream address against them. A job's
 * request to such a place, whatever its job, has its answer scanned for
 * that secret (conn.c asks the broker for a scan release first), and what
 * cannot be read there (passthrough, an upgrade) is refused. The list is
 * the broker's (GET /v1/bindings, and the egress answer at each channel
 * open), replaced whole at each read; an address an injected request is
 * to go to and the list does not hold is told to the broker first
 * (conn.c waits for its 200, then adds it here until a list holds it; a
 * 409 bindings_cap is remembered here as a refusal).
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
/* Addresses the broker took and its list read here does not hold yet. */
#define GUARD_LOCAL_MAX 256
/* Refusals remembered (the oldest forgotten first), and how long. */
#define GUARD_REFUSED_MAX 64
#define GUARD_REFUSED_MS 60000
/* Issuer credentials kept for the scan, proxy-wide; past it, an issuer's
 * credential is not injected (conn.c: 503 guard_unavailable issued_cap). */
#define GUARD_ISSUED_MAX 256
/* An issuer credential without an expiry is kept this long. */
#define GUARD_ISSUED_DEFAULT_S 3600
/* "[v6]:port" at most. */
#define GUARD_ADDR_MAX (INET6_ADDRSTRLEN + 8)
#define GUARD_NAME_MAX 64

/* A static secret's burned versions a binding holds, the newest. */
#define GUARD_BURNED_MAX 16

struct guard_binding {
	char secret[GUARD_NAME_MAX + 1];
	char kind[GUARD_NAME_MAX + 1]; /* "static", or the issuer's kind */
	int64_t version; /* the secret's current version */
	bool is_static; /* not an issuer's (oauth_client_credentials,
			 * github_app): the broker's scan release */
	/* Burned versions (the list's "burned"): never injected from a
	 * job's cache again (the broker refuses them too); still scanned. */
	int64_t burned[GUARD_BURNED_MAX];
	size_t nburned;
	/* An issuer secret's scan set generation (the list's "scan_gen"):
	 * its set is asked again only once this moved (guard_scan_mark). */
	int64_t scan_gen;
	bool has_gen;
};

/* A host, an IP or an "ip:port", and the binding it belongs to. */
struct guard_key {
	char *key;
	uint32_t b;
};

/* An address the broker took (its 200 to POST /v1/bindings) for job's
 * injected request, not in the list read yet. */
struct guard_local {
	char secret[GUARD_NAME_MAX + 1];
	char job[GUARD_NAME_MAX + 1];
	char addr[GUARD_ADDR_MAX];
};

/* An address the broker refused to bind (409 bindings_cap): its injected
 * requests are refused here without asking again until the list's epoch
 * moves or GUARD_REFUSED_MS pass. */
struct guard_refused {
	char secret[GUARD_NAME_MAX + 1];
	char addr[GUARD_ADDR_MAX];
	int64_t until_ms; /* monotonic */
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
	struct guard_refused refused[GUARD_REFUSED_MAX];
	size_t nrefused;
	int64_t epoch; /* the list's bindings_epoch last given */
	bool has_epoch;
	struct guard_issued issued[GUARD_ISSUED_MAX];
	size_t nissued;
};

/*
 * Replaces g's list by bindings, the broker's array ([{"secret", "kind",
 * "version", "hosts": [..], "addrs": ["ip:port", ..], and optionally
 * "burned": [version, ..] (the newest GUARD_BURNED_MAX kept) and
 * "scan_gen": n}]), read at now_ms
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

/* Whether the list says version of secret is burned (not to be injected
 * from a job's cache: the broker is asked, and refuses it). */
bool guard_burned(const struct guard *g, const char *secret, int64_t version);

/*
 * Whether secret's binding in the list, or the addresses the broker took
 * here (guard_local_add), hold addr: 1, 0 (the broker is to be asked
 * before a byte of an injected request goes there), -EINVAL (a name or
 * an address out of bounds). Allocates nothing.
 */
int guard_addr_known(const struct guard *g, const char *secret,
    const char *addr);

/*
 * The broker took addr for job's injected request of secret (its 200 to
 * POST /v1/bindings): unless the list or the local addresses hold it
 * already, it is added locally (found by guard_match until a list holds
 * it; the oldest gives its place past GUARD_LOCAL_MAX) and *ret_local is
 * where, and its refusal (guard_refused_put) is forgotten. 1 when it was
 * added, 0 when held already, -EINVAL (a name or an address out of
 * bounds).
 */
int guard_local_add(struct guard *g, const char *secret, const char *job,
    const char *addr, struct guard_local **ret_local);

/*
 * The broker refused to bind addr for secret (409 bindings_cap) at
 * now_ms (monotonic): remembered until the list's epoch moves
 * (guard_epoch) or GUARD_REFUSED_MS pass, the oldest forgotten past
 * GUARD_REFUSED_MAX. 0 or -EINVAL.
 */
int guard_refused_put(struct guard *g, const char *secret, const char *addr,
    int64_t now_ms);

/* Whether a refusal of addr for secret is remembered at now_ms (the
 * ones past their time forgotten first). */
bool guard_refused_has(struct guard *g, const char *secret, const char *addr,
    int64_t now_ms);

/*
 * The list's epoch as the broker gave it with a list (GET /v1/bindings'
 * "epoch", an egress answer's "bindings_epoch"): when it differs from
 * the last one given, every refusal remembered is forgotten (room may
 * have been made). An epoch read before any is taken as it is.
 */
void guard_epoch(struct guard *g, int64_t epoch);

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
		int64_t gen; /* the set's scan_gen, when has_gen */
		bool has_gen;
	} v[GUARD_ASKED_MAX];
	size_t n;
};

/* Whether secret's scan set is to be asked for a's job: never asked,
 * or asked before the list read at read_ms. */
bool guard_asked_due(const struct guard_asked *a, const char *secret,
    int64_t read_ms);

/*
 * Whether an issuer secret's scan set (b's, of g's list) is to be asked
 * for a's job: never asked, or a list was read after the one it was
 * asked with (guard_asked_put) and that list's scan_gen for it is not
 * the set's (either without one: any newer list read). So a set is
 * asked again when it changed (a credential obtained, revoked, expired,
 * at any broker of a fleet), not at every list read.
 */
bool guard_asked_stale(const struct guard_asked *a, const struct guard *g,
    const struct guard_binding *b);

/* secret's scan set was asked with the list read at read_ms the newest,
 * and the broker gave it with its generation gen (has_gen false: none
 * given). */
void guard_asked_put(struct guard_asked *a, const char *secret, int64_t read_ms,
    bool has_gen, int64_t gen);

/* secret's scan set was given with the list read at read_ms the newest. */
void guard_asked_set(struct guard_asked *a, const char *secret,
    int64_t read_ms);

/* Wipes and frees everything g holds. A zeroed g is fine. */
void guard_free(struct guard *g);

#endif
