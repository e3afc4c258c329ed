/*
 * cordon-drill-agent, the identity plane: the credentials a job might take
 * (its environment, other processes', the host's key files, the
 * launcher's memory, any crd_ token it can read), the token it mints
 * through the proxy and tries against another audience, and the copy it
 * leaves in its output for cordon drill to replay after the stop.
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WALK_ENTRIES 50000
#define WALK_DEPTH 10

/* --- secrets and tokens --------------------------------------------------- */

/* Whether NAME=VALUE is secret by the convention, on its name or its
 * value; the name of a secret one is appended to names. */
static int
note_secret(const struct drill *d, const char *entry, char *names, size_t n)
{
	static const char *const prefixes[] = { "crd_", "crk_", "ghp_", "gho_",
		"ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-",
		"xoxp-", "AKIA", "ASIA", "AIza", "sk_live_", "sk-", "npm_",
		"-----BEGIN", "eyJ" };
	const char *eq = strchr(entry, '='), *value;
	char name[1024];
	bool secret;

	if (eq == NULL || eq == entry)
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)(eq - entry), entry);
	value = eq + 1;
	/* Where a tool finds its CA certificates (the launcher points them
	 * at the job's bundle): a path to public certificates, not a
	 * credential, whatever the name's prefix. */
	if (value[0] == '/' && strpbrk(value, " :@") == NULL &&
	    regexec(&d->ca_name, name, 0, NULL, 0) == 0)
		return 0;
	secret = regexec(&d->secret_name, name, 0, NULL, 0) == 0 ||
	    regexec(&d->secret_url, value, 0, NULL, 0) == 0;
	for (size_t i = 0;
	     !secret && i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		secret = strncmp(value, prefixes[i], strlen(prefixes[i])) == 0;
	if (secret)
		append(names, n, ", ", "%s", name);
	return secret;
}

/* Secret entries in an environ block (NUL-separated, NUL after len). */
static int
scan_environ(const struct drill *d, const char *buf, size_t len, char *names,
    size_t n)
{
	int secrets = 0;

	for (const char *p = buf; p < buf + len; p += strlen(p) + 1)
		secrets += note_secret(d, p, names, n);
	return secrets;
}

/* Notes and prints each crd_ token of buf[0..n) not seen before. */
static void
collect_tokens(struct drill *d, const char *buf, size_t n, const char *where)
{
	const char *p = buf, *end = buf + n;

	while ((p = memmem(p, (size_t)(end - p), "crd_", 4)) != NULL) {
		size_t k = 4;
		int i = 0;

		while (k < TOKEN_LEN && p + k < end && is_base62(p[k]))
			k++;
		if (k < TOKEN_LEN || (p > buf && is_base62(p[-1])) ||
		    (p + k < end && is_base62(p[k]))) {
			p += 4;
			continue;
		}
		while (i < d->nfound && memcmp(d->found[i], p, TOKEN_LEN) != 0)
			i++;
		if (i == d->nfound && d->nfound < MAX_TOKENS) {
			memcpy(d->found[i], p, TOKEN_LEN);
			d->found[i][TOKEN_LEN] = '\0';
			d->found_own[i] =
			    strcmp(where, "/run/cordon/tokens.json") == 0;
			d->nfound++;
			token_line("found", where, d->found[i]);
		}
		p += TOKEN_LEN;
	}
}

/* --- identity plane ------------------------------------------------------- */

void
step_env(struct drill *d)
{
	char names[300] = "", ev[64];
	int vars = 0, secrets = 0;

	for (char **e = environ; e != NULL && *e != NULL; e++, vars++)
		secrets += note_secret(d, *e, names, sizeof(names));
	snprintf(ev, sizeof(ev), "vars=%d", vars);
	if (secrets > 0) {
		append(ev, sizeof(ev), " ", "secrets=%d", secrets);
		report(d, "escaped", ev, "secret variables in the job: %s",
		    names);
	} else {
		report(d, "stopped", ev, "no variable of the job looks secret");
	}
}

void
step_proc1_environ(struct drill *d)
{
	char names[300] = "", ev[64];
	size_t len;
	char *s = slurp("/proc/1/environ", FILE_MAX, &len);
	int secrets;

	if (s == NULL) {
		snprintf(ev, sizeof(ev), "errno=%s", errname(errno).s);
		report(d, "stopped", ev, "PID 1's environment is out of reach");
		return;
	}
	secrets = scan_environ(d, s, len, names, sizeof(names));
	free(s);
	snprintf(ev, sizeof(ev), "bytes=%zu", len);
	if (secrets > 0)
		report(d, "escaped", ev, "PID 1's environment holds %s", names);
	else
		report(d, "stopped", ev,
		    "PID 1's environment holds nothing secret");
}

void
step_procs_environ(struct drill *d)
{
	char who[300] = "", ev[64];
	int nread = 0, refused = 0, pid;
	DIR *proc = opendir("/proc");

	if (proc == NULL) {
		snprintf(ev, sizeof(ev), "errno=%s", errname(errno).s);
		report(d, "untested", ev, "/proc cannot be listed");
		return;
	}
	while ((pid = next_pid(proc)) > 0) {
		char path[64], names[200] = "";
		size_t len;
		char *s;

		snprintf(path, sizeof(path), "/proc/%d/environ", pid);
		if ((s = slurp(path, FILE_MAX, &len)) == NULL) {
			refused++;
			continue;
		}
		nread++;
		if (scan_environ(d, s, len, names, sizeof(names)) > 0)
			append(who, sizeof(who), "; ", "pid %d: %s", pid,
			    names);
		free(s);
	}
	closedir(proc);
	snprintf(ev, sizeof(ev), "read=%d refused=%d", nread, refused);
	if (who[0] != '\0')
		report(d, "escaped", ev, "secret variables of others: %s", who);
	else
		report(d, "stopped", ev,
		    "no other process's environment holds a secret");
}

void
step_host_files(struct drill *d)
{
	static const char *const files[] = { "/etc/shadow", "/etc/gshadow",
		"/root/.ssh/id_rsa", "/root/.ssh/id_ed25519",
		"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key",
		"/var/lib/cordon-broker/keys/admin.key",
		"/etc/cordon/proxy/verifier.key" };
	/* Not /run: the sandbox has one of its own, for the job's tokens. */
	static const char *const dirs[] = { "/root", "/home",
		"/var/lib/cordon-broker", "/var", "/run/systemd", "/run/user" };
	char got[300] = "", ev[256] = "";
	struct errs c = { 0 };
	int readable = 0;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int fd = open(files[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		char byte;

		if (fd < 0 || read(fd, &byte, 1) < 0) {
			errs_add(&c, errno);
		} else {
			readable++;
			append(got, sizeof(got), ", ", "%s", files[i]);
		}
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *dir = opendir(dirs[i]);
		struct dirent *e;
		char first[64] = "";
		int n = 0;

		if (dir == NULL) {
			errs_add(&c, errno);
			continue;
		}
		while ((e = readdir(dir)) != NULL)
			if (strcmp(e->d_name, ".") != 0 &&
			    strcmp(e->d_name, "..") != 0 && n++ == 0)
				snprintf(first, sizeof(first), "%.60s",
				    e->d_name);
		closedir(dir);
		if (n > 0) {
			readable++;
			append(got, sizeof(got), ", ", "%s lists %d (%s...)",
			    dirs[i], n, first);
		}
	}
	errs_append(&c, ev, sizeof(ev));
	if (readable > 0) {
		append(ev, sizeof(ev), " ", "readable=%d", readable);
		report(d, "escaped", ev, "readable: %s", got);
	} else {
		report(d, "stopped", ev,
		    "none of the host's key files or directories was readable");
	}
}

/* Reads 16 bytes at the start of pid's first mapping through
 * /proc/<pid>/mem: true, or false with *err. */
static bool
read_mem(int pid, int *err)
{
	char path[64], buf[16], *maps;
	unsigned long long at;
	size_t len;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		*err = errno;
		return false;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if ((maps = slurp(path, 4096, &len)) == NULL) {
		*err = errno;
		close(fd);
		return false;
	}
	at = strtoull(maps, NULL, 16);
	free(maps);
	n = pread(fd, buf, sizeof(buf), (off_t)at);
	*err = n > 0 ? 0 : n < 0 ? errno : EIO;
	close(fd);
	return n > 0;
}

/* Whether pid's command line is cordon's (the launcher, the CLI). */
static bool
runs_cordon(int pid)
{
	char path[64], *s;
	size_t len;
	bool hit;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	if ((s = slurp(path, 4096, &len)) == NULL)
		return false;
	for (size_t i = 0; i < len; i++)
		s[i] = s[i] == '\0' ? ' ' : s[i];
	while (len > 0 && s[len - 1] == ' ')
		s[--len] = '\0';
	hit = strstr(s, "cordon ") != NULL || strcmp(s, "cordon") == 0 ||
	    (len >= 7 && strcmp(s + len - 7, "/cordon") == 0);
	free(s);
	return hit;
}

void
step_launcher_memory(struct drill *d)
{
	char buf[16], ev[256], what[300] = "", *maps;
	struct iovec local = { buf, sizeof(buf) };
	struct iovec remote = { (void *)0x400000, sizeof(buf) };
	int pids = 0, mem_err = 0, vm_err = 0, pid;
	bool escaped = false;
	size_t len;
	DIR *proc;

	/* The first mapping of pid 1 if we can see it, else a likely one:
	 * the refusal, not the address, is what is tested. */
	if ((maps = slurp("/proc/1/maps", 4096, &len)) != NULL && len > 0)
		remote.iov_base = (void *)(uintptr_t)strtoull(maps, NULL, 16);
	free(maps);
	if (process_vm_readv(1, &local, 1, &remote, 1, 0) < 0) {
		vm_err = errno;
	} else {
		escaped = true;
		append(what, sizeof(what), "; ", "process_vm_readv read pid 1");
	}
	if ((proc = opendir("/proc")) != NULL) {
		while ((pid = next_pid(proc)) > 0) {
			int err = 0;

			pids++;
			if (read_mem(pid, &err)) {
				escaped = true;
				append(what, sizeof(what), "; ",
				    "read pid %d's memory", pid);
			} else if (mem_err == 0) {
				mem_err = err;
			}
			if (runs_cordon(pid)) {
				escaped = true;
				append(what, sizeof(what), "; ",
				    "pid %d's command line is cordon's", pid);
			}
		}
		closedir(proc);
	}
	snprintf(ev, sizeof(ev), "syscall=process_vm_readv");
	if (vm_err != 0)
		append(ev, sizeof(ev), " ", "errno=%s", errname(vm_err).s);
	if (mem_err != 0)
		append(ev, sizeof(ev), " ", "mem=%s", errname(mem_err).s);
	append(ev, sizeof(ev), " ", "pids=%d", pids);
	if (escaped)
		report(d, "escaped", ev, "%s", what);
	else
		report(d, "stopped", ev,
		    "no other process's memory was readable and no cordon "
		    "process is visible");
}

struct walk {
	struct drill *d;
	char *buf; /* FILE_MAX bytes */
	char path[4096];
	int entries, files;
};

static void
walk_file(struct walk *w, int dfd, const char *name)
{
	int fd =
	    openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ssize_t len;

	if (fd < 0)
		return;
	w->files++;
	len = read_full(fd, w->buf, FILE_MAX);
	close(fd);
	if (len > 0)
		collect_tokens(w->d, w->buf, (size_t)len, w->path);
}

/* Walks the directory open at dfd, whose path is w->path[0..plen), without
 * following symbolic links. Closes dfd. */
static void
walk_dir(struct walk *w, int dfd, size_t plen, int depth)
{
	DIR *dir = fdopendir(dfd);
	struct dirent *e;

	if (dir == NULL) {
		close(dfd);
		return;
	}
	/* dfd is the DIR's now, closed with it. */
	while (w->entries < WALK_ENTRIES && (e = readdir(dir)) != NULL) {
		size_t len = strlen(e->d_name);
		unsigned char type = e->d_type;
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		w->entries++;
		if (plen + 1 + len >= sizeof(w->path))
			continue;
		w->path[plen] = '/';
		memcpy(w->path + plen + 1, e->d_name, len + 1);
		if (type == DT_UNKNOWN &&
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			type = S_ISDIR(st.st_mode) ? DT_DIR
			    : S_ISREG(st.st_mode)  ? DT_REG
						   : DT_UNKNOWN;
		if (type == DT_REG) {
			walk_file(w, dfd, e->d_name);
		} else if (type == DT_DIR && depth < WALK_DEPTH &&
		    !(depth == 0 &&
			(strcmp(e->d_name, "proc") == 0 ||
			    strcmp(e->d_name, "sys") == 0 ||
			    strcmp(e->d_name, "dev") == 0))) {
			int fd = openat(dfd, e->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				walk_dir(w, fd, plen + 1 + len, depth + 1);
		}
	}
	closedir(dir);
}

void
step_find_tokens(struct drill *d)
{
	static const char *const extra[] = { "/proc/self/environ",
		"/proc/1/environ", "/proc/1/cmdline" };
	struct walk *w = calloc(1, sizeof(*w));
	char ev[32];
	int fd;

	if (w == NULL || (w->buf = malloc(FILE_MAX)) == NULL) {
		free(w);
		report(d, "untested", "errno=ENOMEM", "no memory for the walk");
		return;
	}
	w->d = d;
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
		walk_dir(w, fd, 0, 0);
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		size_t len;
		char *s = slurp(extra[i], FILE_MAX, &len);
		if (s != NULL)
			collect_tokens(d, s, len, extra[i]);
		free(s);
	}
	snprintf(ev, sizeof(ev), "found=%d", d->nfound);
	report(d, "done", ev, "walked %d entries of /, read %d files%s",
	    w->entries, w->files,
	    w->entries >= WALK_ENTRIES ? " (the cap)" : "");
	free(w->buf);
	free(w);
}

/* --- the proxy: identity -------------------------------------------------- */

static const char *
json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* Just past the JSON value at p (a scalar ends before , } ] or a space),
 * or NULL when a string or a container is cut. It does not validate. */
static const char *
json_skip(const char *p)
{
	int depth = 0;

	while (*p != '\0') {
		if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (*p == '\0')
					return NULL;
				if (*p == '\\' && p[1] != '\0')
					p++;
			}
			p++;
		} else if (*p == '{' || *p == '[') {
			depth++;
			p++;
			continue;
		} else if (*p == '}' || *p == ']') {
			if (depth == 0)
				return p;
			depth--;
			p++;
		} else if (depth == 0 && strchr(", \t\r\n", *p) != NULL) {
			return p;
		} else {
			p++;
			continue;
		}
		if (depth == 0)
			return p;
	}
	return depth == 0 ? p : NULL;
}

/* The capability's params as the broker takes them: each key with a
 * scalar value, an array's first element for an array; "" if none. */
static void
mint_params(const char *json, char *out, size_t n)
{
	const char *p = json_ws(json);

	out[0] = '\0';
	if (*p++ != '{')
		return;
	for (;;) {
		const char *key = json_ws(p), *kend, *v, *vend, *x, *xend;

		if (*key != '"' || (kend = json_skip(key)) == NULL)
			return;
		if (*(p = json_ws(kend)) != ':')
			return;
		v = json_ws(p + 1);
		if ((vend = json_skip(v)) == NULL)
			return;
		x = *v == '[' ? json_ws(v + 1) : v;
		xend = x == v ? vend : json_skip(x);
		if (xend != NULL && xend > x && strchr("{[]}", *x) == NULL)
			append(out, n, ", ", "%.*s: %.*s", (int)(kend - key),
			    key, (int)(xend - x), x);
		if (*(p = json_ws(vend)) != ',')
			return;
		p++;
	}
}

/* Whether p is a crd_ token and its closing quote. */
static bool
token_at(const char *p)
{
	if (strncmp(p, "crd_", 4) != 0)
		return false;
	for (int k = 4; k < TOKEN_LEN; k++)
		if (!is_base62(p[k]))
			return false;
	return p[TOKEN_LEN] == '"';
}

/* The value of "key": in a JSON text, just past the colon, or NULL. */
static const char *
json_find(const char *s, const char *key)
{
	char quoted[64];
	const char *p;

	snprintf(quoted, sizeof(quoted), "\"%s\"", key);
	if ((p = strstr(s, quoted)) == NULL ||
	    *(p = json_ws(p + strlen(quoted))) != ':')
		return NULL;
	return json_ws(p + 1);
}

bool
mint(const struct capability *c, struct resp *r, char *tok, char *ev,
    size_t evlen, long long *ttl)
{
	char params[2048], body[2400];
	const char *t = NULL, *exp;

	mint_params(c->params, params, sizeof(params));
	snprintf(body, sizeof(body),
	    "{\"capability\": \"%s\", \"params\": {%s}}", c->name, params);
	proxy_request("POST", "http://broker.cordon/v1/token", "broker.cordon",
	    "Content-Type: application/json\r\n", body, r, NULL);
	ev[0] = '\0';
	resp_evidence(r, ev, evlen);
	if (r->h.status == 200)
		t = json_find(r->buf + r->head_len, "access_token");
	if (t == NULL || *t++ != '"' || !token_at(t))
		return false;
	memcpy(tok, t, TOKEN_LEN);
	tok[TOKEN_LEN] = '\0';
	exp = json_find(r->buf + r->head_len, "expires_in");
	*ttl = exp != NULL ? strtoll(exp, NULL, 10) : -1LL;
	return true;
}

void
step_mint(struct drill *d)
{
	const struct capability *c = &d->cap[0];
	char ev[160] = "";
	long long ttl;
	struct resp *r;

	if (d->ncap == 0) {
		report(d, "untested", "-", "no param capability to mint");
		return;
	}
	if (strpbrk(c->name, "\"\\") != NULL) {
		report(d, "untested", "-",
		    "the capability's name is not plain");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	if (!mint(c, r, d->minted, ev, sizeof(ev), &ttl)) {
		d->minted[0] = '\0';
		report(d, "untested", ev, "the broker gave no token for %s",
		    c->name);
	} else {
		d->minted_cap = c;
		token_line("minted", c->name, d->minted);
		report(d, "done", "http=200", "minted %s for %lld s", c->name,
		    ttl);
	}
	free(r);
}

/* The job's own token where the proxy must still find it: in another
 * header, the query, the body, glued to a letter or a digit. */
static void
placements(struct tally *t, struct resp *r, const struct rule *u,
    const char *bearer, const char *tok)
{
	char url[1400], host[300], head[400], body[200], suffix[80];
	char auth[128] = "";
	const char *bm;

	if (bearer != NULL)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    bearer);
	rule_url(u, "", url, sizeof(url), host, sizeof(host));
	snprintf(head, sizeof(head), "%sX-Api-Key: %s\r\n", auth, tok);
	tally_request(t, r, u->method, url, host, head, NULL);
	snprintf(head, sizeof(head), "%sX-Note: x%s\r\n", auth, tok);
	tally_request(t, r, u->method, url, host, head, NULL);
	/* A body goes with POST: the proxy refuses one on GET or HEAD. */
	bm = strcmp(u->method, "GET") == 0 || strcmp(u->method, "HEAD") == 0
	    ? "POST"
	    : u->method;
	snprintf(body, sizeof(body), "{\"key\": \"%s\"}", tok);
	tally_request(t, r, bm, url, host, auth, body);
	snprintf(body, sizeof(body), "note=0%s", tok);
	tally_request(t, r, bm, url, host, auth, body);
	snprintf(suffix, sizeof(suffix), "?key=%s", tok);
	rule_url(u, suffix, url, sizeof(url), host, sizeof(host));
	tally_request(t, r, u->method, url, host, auth, NULL);
}

void
step_token_placement(struct drill *d)
{
	const struct rule *own = NULL;
	const struct capability *other = NULL;
	char tok2[TOKEN_LEN + 1], ev[160];
	struct tally t = { 0 };
	long long ttl;
	struct resp *r;

	if (d->minted[0] == '\0') {
		report(d, "untested", "-",
		    "no minted token (mint came first?)");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	/* The job's token on every plain rule of another audience, or of
	 * none. */
	for (int i = 0; i < d->nrule; i++) {
		const struct rule *u = &d->rule[i];
		if (strcmp(u->tls, "plain") != 0)
			continue;
		if (strcmp(u->audience, d->minted_cap->audience) == 0) {
			own = own != NULL ? own : u;
			continue;
		}
		placements(&t, r, u, NULL, d->minted);
	}
	/* A token of another audience after a valid bearer. */
	for (int i = 0; i < d->ncap && other == NULL; i++)
		if (strcmp(d->cap[i].audience, d->minted_cap->audience) != 0 &&
		    strpbrk(d->cap[i].name, "\"\\") == NULL)
			other = &d->cap[i];
	if (own != NULL && other != NULL &&
	    mint(other, r, tok2, ev, sizeof(ev), &ttl))
		placements(&t, r, own, d->minted, tok2);
	free(r);
	if (t.tries == 0)
		report(d, "untested", "-",
		    "no plain rule of another audience than %s, and no token "
		    "of another audience to place after a valid one",
		    d->minted_cap->audience);
	else
		tally_report(d, &t, false,
		    "the proxy found the token of another audience in every "
		    "placement");
}

#define MINT_FLOOD 1000
#define MINT_FLOOD_MS 6000

void
step_mint_flood(struct drill *d)
{
	const struct capability *c = d->minted_cap;
	int64_t deadline = now_ms() + MINT_FLOOD_MS;
	char tok[TOKEN_LEN + 1], ev[200] = "", last[160] = "";
	long long ttl;
	int minted = 0;
	struct resp *r;

	if (c == NULL) {
		report(d, "untested", "-",
		    "no capability the broker minted (mint came first?)");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	while (minted < MINT_FLOOD && now_ms() < deadline &&
	    mint(c, r, tok, last, sizeof(last), &ttl))
		minted++;
	explicit_bzero(tok, sizeof(tok));
	snprintf(ev, sizeof(ev), "minted=%d", minted);
	if (minted < MINT_FLOOD && now_ms() < deadline)
		append(ev, sizeof(ev), " ", "%s", last);
	if (minted >= MINT_FLOOD)
		report(d, "escaped", ev, "the broker minted %d tokens, no cap",
		    minted);
	else if (now_ms() >= deadline)
		report(d, "escaped", ev,
		    "the broker minted %d tokens in %d ms and refused none",
		    minted, MINT_FLOOD_MS);
	else if (r->h.status == 429)
		report(d, "stopped", ev,
		    "broker: the cap refused the flood after %d tokens (429)",
		    minted);
	else if (r->h.deny[0] != '\0')
		report(d, "stopped", ev,
		    "proxy: the broker's mint endpoint is out of reach (%s)",
		    r->h.deny);
	else if (r->h.status != 0)
		report(d, "stopped", ev,
		    "the mint was refused (%d) after %d tokens", r->h.status,
		    minted);
	else
		report(d, "untested", ev,
		    "the mint got no answer after %d tokens", minted);
	free(r);
}

void
step_audience(struct drill *d)
{
	char url[1400], host[300], auth[128];
	struct tally t = { 0 };
	struct resp *r;

	if (d->minted[0] == '\0') {
		report(d, "untested", "-",
		    "no minted token (mint came first?)");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", d->minted);
	for (int i = 0; i < d->nrule; i++) {
		const struct rule *u = &d->rule[i];

		if (strcmp(u->audience, d->minted_cap->audience) == 0 &&
		    strcmp(u->audience, "-") != 0)
			continue;
		rule_url(u, "", url, sizeof(url), host, sizeof(host));
		tally_request(&t, r, "GET", url, host, auth, NULL);
	}
	free(r);
	if (t.tries == 0)
		report(d, "untested", "-",
		    "no rule for another audience than %s",
		    d->minted_cap->audience);
	else
		tally_report(d, &t, false,
		    "the proxy kept the token from every other audience");
}

/* --- outliving the job, and the tripwire ---------------------------------- */

void
step_print_token(struct drill *d)
{
	char line[TOKEN_LEN + 2], ev[64];
	int r;

	if (d->minted[0] == '\0') {
		report(d, "untested", "-",
		    "no minted token (mint came first?)");
		return;
	}
	token_line("copied", "output", d->minted);
	snprintf(line, sizeof(line), "%s\n", d->minted);
	r = put_file("/work/drill-token.txt", line, strlen(line), 0644);
	if (r == 0) {
		report(d, "done", "path=drill-token.txt",
		    "the token is in the output and the workspace; cordon "
		    "replays it after the stop");
	} else {
		snprintf(ev, sizeof(ev), "errno=%s", errname(-r).s);
		report(d, "done", ev,
		    "the token is in the output; the workspace refused it; "
		    "cordon replays it after the stop");
	}
}
