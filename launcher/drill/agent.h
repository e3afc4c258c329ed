/*
 * cordon-drill-agent's shared parts: what the instructions said (struct
 * drill), the output lines every step prints, the small helpers and the
 * client for requests through the sandbox's relay to cordon-proxy. The
 * steps live by plane: identity.c, inject.c (the injected credential),
 * reach.c (network, proxy), sandbox.c (system calls, files, limits),
 * ret.c (the return path); tls.c speaks TLS on terminated rules; agent.c
 * reads the instructions and runs them. Static: libc, and OpenSSL for
 * tls.c.
 */
#ifndef CORDON_DRILL_AGENT_H
#define CORDON_DRILL_AGENT_H

#include "token.h" /* common/: macros only, nothing to link */

#include <dirent.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define INSTRUCTIONS_MAX (1024 * 1024)
#define MAX_SERVICES 8
#define MAX_NAMESERVERS 4
#define MAX_CAPS 8
#define MAX_RULES 32
#define MAX_TOKENS 64
#define MAX_PROBES 24
#define MAX_INHERITED 8
#define MAX_ISSUERS 4
#define MAX_RULE_PATHS 8 /* a rule's paths the agent is told (param path) */
#define PROXY_PORT 3128 /* the sandbox's relay to cordon-proxy */
#define PROXY_MS 15000 /* the proxy may wait for DNS */
#define HEAD_MAX 8192
#define BODY_MAX 65536
#define FILE_MAX (256 * 1024) /* what is read of one file */
#define MIB (1024L * 1024)

struct service {
	char name[64], addr[64];
	int port;
};

struct capability {
	char name[128], audience[128], params[2048];
};

struct rule {
	char host[256], tls[16], audience[128], method[16], path[1024];
	int port;
	/* A rule that injects a credential (param inject): its secret's
	 * name, the header and the capability; "" for none. */
	char inject_secret[72], inject_header[72], inject_cap[128];
	/* Its index in the manifest's egress, and every path of it (param
	 * path; path above is the first). */
	int index, npaths;
	char paths[MAX_RULE_PATHS][256];
	bool upgrade; /* the rule allows an upgrade (param upgrade) */
};

/* An injecting rule's secret that is an issuer's (param issuer): the
 * broker obtains a credential there for the job, and revokes it at the
 * stop. */
struct issuer {
	char secret[72], kind[32], url[600]; /* url: the token endpoint */
};

struct drill {
	const char *step; /* the step running, which report() names */
	struct issuer issuer[MAX_ISSUERS];
	int nissuer;
	bool issuers_unknown; /* cordon drill could not ask the broker */
	struct service svc[MAX_SERVICES];
	char ns[MAX_NAMESERVERS][64];
	struct capability cap[MAX_CAPS];
	struct rule rule[MAX_RULES];
	int nsvc, nns, ncap, nrule;
	int rule_lines; /* param rule lines read, parsed or not: the index */
	long memory_mb, pids; /* 0: unknown */
	regex_t secret_name, secret_url, ca_name;
	char minted[TOKEN_LEN + 1]; /* "" until mint */
	const struct capability *minted_cap;
	char found[MAX_TOKENS][TOKEN_LEN + 1]; /* by find_tokens */
	bool found_own[MAX_TOKENS]; /* in /run/cordon/tokens.json: the job's */
	int nfound;
	/* Descriptors cordon drill left open for cordon run (param
	 * inherited_fd N KIND), and what the agent held when it started. */
	int inherited[MAX_INHERITED];
	char inherited_kind[MAX_INHERITED][16];
	int ninherited;
	int start_fds[MAX_INHERITED]; /* beyond 0, 1 and 2 */
	char start_fd_what[MAX_INHERITED][80];
	int nstart_fds, start_fds_more; /* more: past MAX_INHERITED */
};

/* Every step of the one list, step_<name>(d): it makes its attempt, with a
 * deadline, reaps what it forks, and prints one DRILL line for it (or a
 * few, the last one counting: the job may be stopped at any moment). */
#define DRILL_ROW(step, plane, what, judge) void step_##step(struct drill *d);
#define DRILL_QUIET(step) void step_##step(struct drill *d);
#define DRILL_HOST(step, plane, what, judge)
#include "steps.h"
#undef DRILL_ROW
#undef DRILL_QUIET
#undef DRILL_HOST

/* --- output (agent.c) ----------------------------------------------------- */

/* Appends to the string in buf (n bytes), after sep unless buf is empty;
 * what does not fit is cut. */
void append(char *buf, size_t n, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prints one DRILL line for the step running, in one printf, flushed:
 * result is stopped, escaped, untested or done. */
void report(const struct drill *d, const char *result, const char *evidence,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Prints one TOKEN line: kind is found, minted or copied. */
void token_line(const char *kind, const char *where, const char *token);

struct ename {
	char s[16];
};

/* The errno's name as the evidence spells it, E<number> for the rest.
 * By value: errname(e).s lives to the end of the full expression. */
struct ename errname(int e);

/* How many times each errno came back, in the order first seen. */
struct errs {
	int e[16], n[16], len;
};

/* Counts one e in c (the first 16 distinct ones). */
void errs_add(struct errs *c, int e);

/* Appends "ENAME=count" for each errno counted to buf (n bytes). */
void errs_append(const struct errs *c, char *buf, size_t n);

/* The line of a step that is one system call the sandbox must refuse
 * (err 0: it went through). */
void syscall_result(const struct drill *d, const char *call, int err,
    const char *detail);

/* --- small helpers (agent.c) ---------------------------------------------- */

/* CLOCK_MONOTONIC in milliseconds. */
int64_t now_ms(void);

/* n random bytes into p; a fixed filler if the kernel has none. */
void random_bytes(void *p, size_t n);

/* Whether c is [0-9A-Za-z]. */
bool is_base62(char c);

/* Reads up to cap bytes of fd: how many, or -1 with errno. */
ssize_t read_full(int fd, char *buf, size_t cap);

/* The first cap bytes of a file, NUL-terminated (*len without the NUL):
 * a malloc'd buffer, or NULL with errno set. */
char *slurp(const char *path, size_t cap, size_t *len);

/* The next pid in /proc but our own; 0 at the end. */
int next_pid(DIR *proc);

/* src into dst (n bytes): whether it fit. */
bool copy_field(char *dst, size_t n, const char *src);

/* A port 1..65535 from s, or -1. */
int parse_port(const char *s);

/* host:port as a URL's authority ([v6]:port) into out (n bytes). */
void hostport(char *out, size_t n, const char *host, int port);

union addr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* A numeric IPv4 or IPv6 host and port into a: its length, or 0. */
socklen_t parse_addr(const char *host, int port, union addr *a);

/* Waits for events on fd until the deadline: 0, or -errno (-ETIMEDOUT). */
int wait_fd(int fd, short events, int64_t deadline);

/* read(2) with a deadline: bytes read, 0 at the end, or -errno. */
ssize_t read_by(int fd, void *buf, size_t n, int64_t deadline);

/* Sends all of buf by the deadline: 0 or -errno. */
int send_all(int fd, const void *buf, size_t n, int64_t deadline);

/* Writes a whole file: 0 or -errno. The mode is set past the umask. */
int put_file(const char *path, const void *data, size_t n, mode_t mode);

/* mkdir -p of an absolute path shorter than 256 bytes: 0 or -errno. */
int mkdirs(const char *path);

/* Waits for pid: its exit code, or -1 if it did not exit. */
int reap(pid_t pid);

/* --- the proxy (proxy.c) -------------------------------------------------- */

struct head {
	int status; /* 0: no answer */
	char deny[64], error[64]; /* X-Cordon-Deny, X-Cordon-Error */
	long long clen; /* -1: no Content-Length */
};

struct resp {
	struct head h;
	int err; /* why there is no answer, when h.status is 0 */
	char tls[48]; /* what TLS said when a handshake failed, or "" */
	size_t len, head_len;
	char buf[HEAD_MAX + BODY_MAX + 1];
};

/* The head of the HTTP response at the start of buf[0..len): its length
 * (at most HEAD_MAX), 0 while it is not all there, -1 when this is not
 * HTTP. */
ssize_t parse_head(const char *buf, size_t len, struct head *h);

/* A response without a body to wait for (CONNECT's tunnel included). */
bool bodiless(const struct head *h, bool tunnel);

/* Reads one response into r: the head, and at most BODY_MAX of the body
 * (its Content-Length, or until the end). */
void read_response(int fd, struct resp *r, bool tunnel, int64_t deadline);

/* Reads what read_response reads, from rd: bytes read into buf (at most
 * n), 0 at the end, or -errno; ctx is rd's. */
typedef ssize_t (*reader)(void *ctx, char *buf, size_t n, int64_t deadline);
void read_response_from(reader rd, void *ctx, struct resp *r, bool tunnel,
    int64_t deadline);

/* A fresh connection to the relay: the fd, or -errno. */
int proxy_open(int64_t deadline);

/* One request through the proxy on a fresh connection, its answer in r.
 * headers are extra header lines ("Name: value\r\n"); a body gets its
 * Content-Length. keep, if not NULL, gets a CONNECT's open tunnel. */
void proxy_request(const char *method, const char *target, const char *host,
    const char *headers, const char *body, struct resp *r, int *keep);

/* An answer: none, a refusal by the proxy, or through (an upstream's
 * answer, or a CONNECT's tunnel). */
enum verdict { V_NONE, V_REFUSED, V_THROUGH };

/* The verdict on a response head. */
enum verdict verdict(const struct head *h, bool tunnel);

/* Appends "http=N deny=REASON" (or error=) to ev (n bytes). */
void head_evidence(const struct head *h, char *ev, size_t n);

/* head_evidence, or "errno=E" when there was no answer. */
void resp_evidence(const struct resp *r, char *ev, size_t n);

/* The answers of a step that makes several requests. */
struct tally {
	int tries, through, refused;
	char first[3][128]; /* the first evidence of each verdict */
	char all[320]; /* every answer's, "; "-separated */
	char reached[300]; /* what got through, for the detail */
};

/* Counts one answer; what names the request in the detail. */
void tally_add(struct tally *t, const struct resp *r, bool tunnel,
    const char *what);

/* The step's line: escaped when anything got through, stopped when the
 * proxy refused, else untested. The evidence is every answer's (all) or
 * the first of the verdict's with tries=<n>. */
void tally_report(const struct drill *d, const struct tally *t, bool all,
    const char *stopped);

/* Sends one request and counts its answer. */
void tally_request(struct tally *t, struct resp *r, const char *method,
    const char *url, const char *host, const char *headers, const char *body);

/* The first rule whose tls is one of the two given, or NULL. */
const struct rule *find_rule(const struct drill *d, const char *tls,
    const char *or_tls);

/* http://host:port<path><suffix> into url, and host:port for the Host
 * header into host. */
void rule_url(const struct rule *r, const char *suffix, char *url, size_t n,
    char *host, size_t hn);

/* Answers seen through the proxy so far: from an upstream (through), and
 * with X-Cordon-Error (maybe: the proxy may have allowed the request and
 * failed upstream). cordon drill compares them with the proxy's count of
 * allowed requests. */
extern long proxy_through, proxy_maybe;

/* Counts one answer into proxy_through and proxy_maybe. */
void proxy_count(const struct head *h, bool tunnel);

/* One request on a terminated rule (tls.c): a CONNECT to its host and
 * port through the relay, TLS inside verified against the job's CA bundle
 * and the host's name, then method <path><suffix> in origin form. r gets
 * the CONNECT's answer when it was refused, else the one inside (r->tls
 * says why a handshake failed). */
void tls_request(const struct rule *u, const char *method, const char *suffix,
    const char *headers, const char *body, struct resp *r);

/* One request on rule u as a client would make it: through the proxy as
 * an absolute URL on a plain rule, tls_request on a terminated one. */
void rule_request(const struct rule *u, const char *method, const char *suffix,
    const char *headers, const char *body, struct resp *r);

/* A response buffer (free it), or NULL after an untested line. */
struct resp *resp_new(const struct drill *d);

/* --- identity (identity.c) ------------------------------------------------ */

/* Mints c through the proxy's path to the broker: the token into tok
 * (TOKEN_LEN + 1 bytes) and true, or false; the answer's evidence in ev,
 * its expires_in in *ttl. */
bool mint(const struct capability *c, struct resp *r, char *tok, char *ev,
    size_t evlen, long long *ttl);

#endif
