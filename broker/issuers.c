/*
 * Issuers of short-lived upstream credentials (issuers.h): the checks of
 * an issuer secret's configuration, the two ways to obtain a credential
 * (RFC 6749 section 4.4; a GitHub App's JWT and installation token), the
 * credentials held per job, and their revocation when the job's revoke
 * comes. Each credential held is a row, sealed alone (the job, secret and
 * version its associated data): in the database when the broker's store
 * gives an issuers_store (PostgreSQL: every broker of a fleet sees every
 * row, and a revoke at any of them claims the job's rows in one
 * statement, so each is revoked once), else in a list kept in a sealed
 * state file (sqlite: one broker). A job's revoke claims its rows on the
 * caller's thread and waits, with no thread, for one of the revoke
 * workers, which tries each within the revoke's budget. A revocation
 * that fails stays a revoking row, retried by a thread of its own with
 * backoff; the lease sweep and a tripwire only hand rows to that thread,
 * so that no issuer stalls them. A job revoked once is remembered (a
 * ring of recent ids), so that a credential obtained by a release that
 * raced the revoke is revoked instead of held for a job that has ended.
 */
#include "issuers.h"

#include "buf.h"
#include "issuer_http.h"
#include "path.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TOMBSTONES 1024
#define ID_MAX 80
#define FIELD_MAX 1024
#define PEM_MAX 3600
#define REPOS_MAX 100
#define PERMS_MAX 50
/* The calls to issuers that releases wait on: each waits on one, and
 * the workers' own (whose waiters all left) take the rest. */
#define CALLS_MAX (ISSUER_WAITERS_MAX + ISSUER_WORKERS)
/* The longest life an issuer's expires_in is taken for (a year). */
#define EXPIRES_IN_MAX (366LL * 24 * 3600)
/* Rows the background thread takes at a time. */
#define RETRY_BATCH 16

/* A credential, opened: what obtain_* fill in and revoke_one uses. */
struct held {
	char job[ID_MAX], secret[ID_MAX], kind[32];
	char issuer[IHTTP_URL_MAX];
	int64_t version, expires, refresh_at;
	char *value;
	size_t len;
	/* How to revoke it: NULL url when the issuer offers no way. */
	char *revoke_url;
	const char *revoke_method;
	char *revoke_head, *revoke_body;
};

/* A call to an issuer for (job, secret, version) and the releases
 * waiting for it: queued until a worker takes it (running). */
struct icall {
	bool used, running;
	uint64_t seq; /* the order queued */
	char job[ID_MAX], secret[ID_MAX];
	int64_t version;
	json_t *cfg; /* a copy, wiped when the call ends */
	struct issuers_wait *waiters;
};

/* A row of the file's store (no database). */
struct frow {
	struct frow *next;
	struct issued_row r;
	int64_t next_try;
};

struct issuers {
	SSL_CTX *tls;
	pthread_mutex_t lock;
	/* The releases waiting (issuers.h): the calls, the workers that
	 * make them and the thread that answers those past their deadline,
	 * all under lock. */
	struct icall calls[CALLS_MAX];
	uint64_t call_seq;
	unsigned waiting, running;
	bool releases_stopped;
	pthread_cond_t queued; /* a call for the workers */
	pthread_cond_t tick; /* a new deadline for the timer */
	pthread_t workers[ISSUER_WORKERS], timer;
	size_t nworkers;
	bool timer_started;
	atomic_uint_fast64_t releases_refused, releases_timed_out;
	/* The revokes waiting for a revoke worker (oldest first), and
	 * those in a worker's hands: under lock. */
	struct issuers_revoke *rq_head, *rq_tail;
	unsigned revokes;
	bool revokes_stopped;
	pthread_cond_t rqueued;
	pthread_t rworkers[ISSUER_REVOKE_WORKERS];
	size_t nrworkers;
	unsigned char key[ISSUERS_KEY_LEN];
	char tomb[TOMBSTONES][ID_MAX];
	size_t tomb_next;
	atomic_uint_fast64_t issued, issue_failed, revoked, revoke_failed;
	/* Where the rows are: the store's, or the file's own below. */
	struct issuers_store st;
	pthread_mutex_t flock; /* the file's rows */
	struct frow *rows;
	int64_t next_id;
	char *state; /* the state file, or NULL */
	/* The background revocations. */
	issuers_audit_fn audit;
	void *audit_arg;
	pthread_t worker;
	bool worker_started, kicked;
	atomic_bool stopping;
	pthread_cond_t wake;
};

static void
wipe_str(char *s)
{
	if (s != NULL) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

static void
held_free(struct held *h)
{
	if (h == NULL)
		return;
	if (h->value != NULL) {
		OPENSSL_cleanse(h->value, h->len);
		free(h->value);
	}
	free(h->revoke_url);
	wipe_str(h->revoke_head);
	wipe_str(h->revoke_body);
	free(h);
}

void
issued_rows_free(struct issued_row *rows, size_t n)
{
	for (size_t i = 0; rows != NULL && i < n; i++)
		free(rows[i].sealed);
	free(rows);
}

static int state_load(struct issuers *is);
static void file_store(struct issuers *is);
static void *worker_main(void *arg);
static void wipe_json(json_t *j);
static void *call_main(void *arg);
static void *timer_main(void *arg);
static void *revoke_main(void *arg);

int
issuers_open(const char *ca_file, const char *state_path,
    const unsigned char *key, const struct issuers_store *store,
    issuers_audit_fn audit, void *audit_arg, struct issuers **ret)
{
	struct issuers *is = calloc(1, sizeof(*is));
	int r = 0;

	if (is == NULL)
		return -ENOMEM;
	is->tls = ihttp_ctx_new(ca_file);
	if (is->tls == NULL) {
		free(is);
		return -EINVAL;
	}
	pthread_mutex_init(&is->lock, NULL);
	pthread_mutex_init(&is->flock, NULL);
	pthread_cond_init(&is->queued, NULL);
	pthread_cond_init(&is->tick, NULL);
	pthread_cond_init(&is->wake, NULL);
	pthread_cond_init(&is->rqueued, NULL);
	/* No key: memory only, a key of this process's. */
	if (key != NULL)
		memcpy(is->key, key, ISSUERS_KEY_LEN);
	else if (RAND_bytes(is->key, ISSUERS_KEY_LEN) != 1) {
		SSL_CTX_free(is->tls);
		free(is);
		return -EIO;
	}
	is->audit = audit;
	is->audit_arg = audit_arg;
	if (store != NULL)
		is->st = *store;
	else {
		file_store(is);
		if (state_path != NULL)
			r = (is->state = strdup(state_path)) == NULL
			    ? -ENOMEM
			    : state_load(is);
	}
	if (r == 0) {
		if (pthread_create(&is->worker, NULL, worker_main, is) != 0)
			r = -EAGAIN;
		else
			is->worker_started = true;
	}
	/* All made now: the broker's sandbox, applied later, may forbid
	 * making threads. */
	while (r == 0 && is->nworkers < ISSUER_WORKERS) {
		if (pthread_create(&is->workers[is->nworkers], NULL, call_main,
			is) != 0)
			r = -EAGAIN;
		else
			is->nworkers++;
	}
	while (r == 0 && is->nrworkers < ISSUER_REVOKE_WORKERS) {
		if (pthread_create(&is->rworkers[is->nrworkers], NULL,
			revoke_main, is) != 0)
			r = -EAGAIN;
		else
			is->nrworkers++;
	}
	if (r == 0) {
		if (pthread_create(&is->timer, NULL, timer_main, is) != 0)
			r = -EAGAIN;
		else
			is->timer_started = true;
	}
	if (r < 0) {
		issuers_close(is);
		return r;
	}
	*ret = is;
	return 0;
}

void
issuers_close(struct issuers *is)
{
	if (is == NULL)
		return;
	issuers_stop_releases(is);
	issuers_stop_revokes(is);
	pthread_mutex_lock(&is->lock);
	is->stopping = true;
	pthread_cond_broadcast(&is->wake);
	pthread_cond_broadcast(&is->queued);
	pthread_cond_broadcast(&is->tick);
	pthread_cond_broadcast(&is->rqueued);
	pthread_mutex_unlock(&is->lock);
	if (is->worker_started)
		pthread_join(is->worker, NULL);
	for (size_t i = 0; i < is->nworkers; i++)
		pthread_join(is->workers[i], NULL);
	for (size_t i = 0; i < is->nrworkers; i++)
		pthread_join(is->rworkers[i], NULL);
	if (is->timer_started)
		pthread_join(is->timer, NULL);
	for (size_t i = 0; i < CALLS_MAX; i++)
		if (is->calls[i].cfg != NULL) {
			wipe_json(is->calls[i].cfg);
			json_decref(is->calls[i].cfg);
		}
	while (is->rows != NULL) {
		struct frow *f = is->rows;
		is->rows = f->next;
		free(f->r.sealed);
		free(f);
	}
	SSL_CTX_free(is->tls);
	free(is->state);
	OPENSSL_cleanse(is->key, sizeof(is->key));
	pthread_cond_destroy(&is->wake);
	pthread_cond_destroy(&is->rqueued);
	pthread_cond_destroy(&is->queued);
	pthread_cond_destroy(&is->tick);
	pthread_mutex_destroy(&is->flock);
	pthread_mutex_destroy(&is->lock);
	free(is);
}

void
issuers_counts(struct issuers *is, struct issuers_counts *ret)
{
	ret->issued = atomic_load(&is->issued);
	ret->issue_failed = atomic_load(&is->issue_failed);
	ret->revoked = atomic_load(&is->revoked);
	ret->revoke_failed = atomic_load(&is->revoke_failed);
	ret->releases_refused = atomic_load(&is->releases_refused);
	ret->releases_timed_out = atomic_load(&is->releases_timed_out);
	pthread_mutex_lock(&is->lock);
	ret->releases_waiting = is->waiting;
	ret->calls_in_flight = is->running;
	ret->revokes_waiting = is->revokes;
	pthread_mutex_unlock(&is->lock);
}

/* --- sealing ---------------------------------------------------------------- */

#define STATE_MAX (64 * 1024 * 1024)
#define NONCE_LEN 12
#define TAG_LEN 16
static const char state_aad[] = "cordon-issued\n";

static void
wipe_json(json_t *j)
{
	const char *k;
	size_t i;
	json_t *v;

	if (json_is_string(j))
		OPENSSL_cleanse((char *)json_string_value(j),
		    json_string_length(j));
	else if (json_is_object(j))
		json_object_foreach(j, k, v) wipe_json(v);
	else if (json_is_array(j))
		json_array_foreach(j, i, v) wipe_json(v);
}

/* AES-256-GCM of in (len bytes) into out, aad its associated data:
 * nonce, text, tag when sealing (out holds len + NONCE_LEN + TAG_LEN),
 * the text when opening. 0 or -EBADMSG / -EIO. */
static int
state_aead(const struct issuers *is, bool seal, const char *aad,
    const unsigned char *in, size_t len, unsigned char *out)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	const unsigned char *nonce = seal ? out : in;
	int n = 0, fin = 0, ok;

	if (c == NULL)
		return -ENOMEM;
	if (seal) {
		ok = RAND_bytes(out, NONCE_LEN) == 1 &&
		    EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, is->key,
			nonce) == 1 &&
		    EVP_EncryptUpdate(c, NULL, &n, (const unsigned char *)aad,
			(int)strlen(aad)) == 1 &&
		    EVP_EncryptUpdate(c, out + NONCE_LEN, &n, in, (int)len) ==
			1 &&
		    EVP_EncryptFinal_ex(c, out + NONCE_LEN + n, &fin) == 1 &&
		    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN,
			out + NONCE_LEN + n + fin) == 1;
	} else {
		size_t clen = len - NONCE_LEN - TAG_LEN;
		unsigned char tag[TAG_LEN];
		memcpy(tag, in + len - TAG_LEN, TAG_LEN);
		ok = EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, is->key,
			 nonce) == 1 &&
		    EVP_DecryptUpdate(c, NULL, &n, (const unsigned char *)aad,
			(int)strlen(aad)) == 1 &&
		    EVP_DecryptUpdate(c, out, &n, in + NONCE_LEN, (int)clen) ==
			1 &&
		    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN,
			tag) == 1 &&
		    EVP_DecryptFinal_ex(c, out + n, &fin) == 1;
	}
	EVP_CIPHER_CTX_free(c);
	return ok ? 0 : seal ? -EIO : -EBADMSG;
}

/* A row's associated data: a row moved to another job does not open. */
static void
row_aad(char *aad, size_t len, const char *job, const char *secret,
    int64_t version)
{
	snprintf(aad, len, "%s%s\n%s\n%lld", state_aad, job, secret,
	    (long long)version);
}

/* h sealed into row (what it is for, and its value and revocation
 * sealed): 0 or -errno. */
static int
row_seal(const struct issuers *is, const struct held *h, struct issued_row *row)
{
	char aad[256], *text;
	json_t *j = json_pack("{s:s, s:s, s:s%, s:s?, s:s?, s:s?, s:s?}",
	    "kind", h->kind, "issuer", h->issuer, "value", h->value, h->len,
	    "revoke_url", h->revoke_url, "revoke_method", h->revoke_method,
	    "revoke_head", h->revoke_head, "revoke_body", h->revoke_body);
	size_t n;
	int r;

	if (j == NULL)
		return -ENOMEM;
	text = json_dumps(j, JSON_COMPACT);
	wipe_json(j);
	json_decref(j);
	if (text == NULL)
		return -ENOMEM;
	memset(row, 0, sizeof(*row));
	snprintf(row->job, sizeof(row->job), "%s", h->job);
	snprintf(row->secret, sizeof(row->secret), "%s", h->secret);
	row->version = h->version;
	row->expires = h->expires;
	row->refresh_at = h->refresh_at;
	n = strlen(text);
	row->sealed = malloc(n + NONCE_LEN + TAG_LEN);
	row_aad(aad, sizeof(aad), h->job, h->secret, h->version);
	r = row->sealed == NULL
	    ? -ENOMEM
	    : state_aead(is, true, aad, (unsigned char *)text, n, row->sealed);
	row->len = n + NONCE_LEN + TAG_LEN;
	OPENSSL_cleanse(text, n);
	free(text);
	if (r < 0) {
		free(row->sealed);
		row->sealed = NULL;
	}
	return r;
}

static char *
dup_or_null(const json_t *v)
{
	return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* The credential of row, opened: a new held, or NULL when it does not
 * open with this broker's key (or memory ran out). */
static struct held *
row_open(const struct issuers *is, const struct issued_row *row)
{
	char aad[256];
	unsigned char *plain;
	struct held *h;
	json_t *j;
	size_t clen;

	if (row->len < NONCE_LEN + TAG_LEN ||
	    (plain = malloc(row->len)) == NULL)
		return NULL;
	clen = row->len - NONCE_LEN - TAG_LEN;
	row_aad(aad, sizeof(aad), row->job, row->secret, row->version);
	if (state_aead(is, false, aad, row->sealed, row->len, plain) < 0) {
		free(plain);
		return NULL;
	}
	j = json_loadb((char *)plain, clen, 0, NULL);
	OPENSSL_cleanse(plain, clen);
	free(plain);
	h = calloc(1, sizeof(*h));
	if (h == NULL || !json_is_string(json_object_get(j, "value"))) {
		wipe_json(j);
		json_decref(j);
		free(h);
		return NULL;
	}
	const char *m = json_string_value(json_object_get(j, "revoke_method"));
	snprintf(h->job, sizeof(h->job), "%s", row->job);
	snprintf(h->secret, sizeof(h->secret), "%s", row->secret);
	snprintf(h->kind, sizeof(h->kind), "%s",
	    json_string_value(json_object_get(j, "kind")) ?: "");
	snprintf(h->issuer, sizeof(h->issuer), "%s",
	    json_string_value(json_object_get(j, "issuer")) ?: "");
	h->version = row->version;
	h->expires = row->expires;
	h->refresh_at = row->refresh_at;
	h->len = json_string_length(json_object_get(j, "value"));
	h->value = dup_or_null(json_object_get(j, "value"));
	h->revoke_url = dup_or_null(json_object_get(j, "revoke_url"));
	h->revoke_method =
	    m != NULL && strcmp(m, "DELETE") == 0 ? "DELETE" : "POST";
	h->revoke_head = dup_or_null(json_object_get(j, "revoke_head"));
	h->revoke_body = dup_or_null(json_object_get(j, "revoke_body"));
	wipe_json(j);
	json_decref(j);
	if (h->value == NULL) {
		held_free(h);
		return NULL;
	}
	return h;
}

/* --- the file's store (no database) ------------------------------------ */

static const char hexd[] = "0123456789abcdef";

/* Rewrites the state file with every row: 0 or -errno. Under flock. */
static int
state_save(struct issuers *is)
{
	json_t *all;
	unsigned char *sealed;
	char *text, tmp[4096], aad[64];
	size_t n;
	int r;

	if (is->state == NULL)
		return 0;
	if ((all = json_array()) == NULL)
		return -ENOMEM;
	for (const struct frow *f = is->rows; f != NULL; f = f->next) {
		char *hex = malloc(2 * f->r.len + 1);
		if (hex == NULL) {
			json_decref(all);
			return -ENOMEM;
		}
		for (size_t i = 0; i < f->r.len; i++) {
			hex[2 * i] = hexd[f->r.sealed[i] >> 4];
			hex[2 * i + 1] = hexd[f->r.sealed[i] & 15];
		}
		hex[2 * f->r.len] = '\0';
		json_array_append_new(all,
		    json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:i, s:b, s:I, "
			      "s:s}",
			"id", (json_int_t)f->r.id, "job", f->r.job, "secret",
			f->r.secret, "version", (json_int_t)f->r.version,
			"expires", (json_int_t)f->r.expires, "refresh_at",
			(json_int_t)f->r.refresh_at, "attempts", f->r.attempts,
			"revoking", f->r.revoking, "next_try",
			(json_int_t)f->next_try, "sealed", hex));
		free(hex);
	}
	text = json_dumps(all, JSON_COMPACT);
	json_decref(all);
	if (text == NULL)
		return -ENOMEM;
	n = strlen(text);
	sealed = malloc(n + NONCE_LEN + TAG_LEN);
	snprintf(aad, sizeof(aad), "%s", state_aad);
	r = sealed == NULL
	    ? -ENOMEM
	    : state_aead(is, true, aad, (unsigned char *)text, n, sealed);
	free(text);
	if (r == 0 &&
	    snprintf(tmp, sizeof(tmp), "%s.tmp", is->state) >= (int)sizeof(tmp))
		r = -ENAMETOOLONG;
	if (r == 0) {
		(void)unlink(tmp);
		r = path_write_secret(tmp, sealed, n + NONCE_LEN + TAG_LEN);
		if (r == 0 && rename(tmp, is->state) < 0) {
			r = -errno;
			(void)unlink(tmp);
		}
	}
	free(sealed);
	return r;
}

static int
unhex(int c)
{
	return c >= '0' && c <= '9' ? c - '0'
	    : c >= 'a' && c <= 'f'  ? c - 'a' + 10
				    : -1;
}

/* One row of the state file (or, from a file of before rows, a held
 * credential, sealed now): a new frow or NULL. */
static struct frow *
state_row(struct issuers *is, const json_t *e)
{
	const char *hex = json_string_value(json_object_get(e, "sealed"));
	const char *job = json_string_value(json_object_get(e, "job"));
	const char *secret = json_string_value(json_object_get(e, "secret"));
	struct frow *f;

	if (job == NULL || secret == NULL || strlen(job) >= ID_MAX ||
	    strlen(secret) >= ID_MAX || (f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	if (hex == NULL) {
		struct held h = { .version = 0 };
		const char *m =
		    json_string_value(json_object_get(e, "revoke_method"));
		json_t *v = json_object_get(e, "value");
		if (!json_is_string(v)) {
			free(f);
			return NULL;
		}
		snprintf(h.job, sizeof(h.job), "%s", job);
		snprintf(h.secret, sizeof(h.secret), "%s", secret);
		snprintf(h.kind, sizeof(h.kind), "%s",
		    json_string_value(json_object_get(e, "kind")) ?: "");
		snprintf(h.issuer, sizeof(h.issuer), "%s",
		    json_string_value(json_object_get(e, "issuer")) ?: "");
		h.version = json_integer_value(json_object_get(e, "version"));
		h.expires = json_integer_value(json_object_get(e, "expires"));
		h.refresh_at =
		    json_integer_value(json_object_get(e, "refresh_at"));
		h.value = (char *)json_string_value(v);
		h.len = json_string_length(v);
		h.revoke_url =
		    (char *)json_string_value(json_object_get(e, "revoke_url"));
		h.revoke_method =
		    m != NULL && strcmp(m, "DELETE") == 0 ? "DELETE" : "POST";
		h.revoke_head = (char *)json_string_value(
		    json_object_get(e, "revoke_head"));
		h.revoke_body = (char *)json_string_value(
		    json_object_get(e, "revoke_body"));
		if (row_seal(is, &h, &f->r) < 0) {
			free(f);
			return NULL;
		}
		f->r.id = ++is->next_id;
		return f;
	}
	size_t n = strlen(hex) / 2;
	if (strlen(hex) % 2 != 0 || (f->r.sealed = malloc(n + 1)) == NULL) {
		free(f);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			free(f->r.sealed);
			free(f);
			return NULL;
		}
		f->r.sealed[i] = (unsigned char)(hi << 4 | lo);
	}
	f->r.len = n;
	snprintf(f->r.job, sizeof(f->r.job), "%s", job);
	snprintf(f->r.secret, sizeof(f->r.secret), "%s", secret);
	f->r.id = json_integer_value(json_object_get(e, "id"));
	f->r.version = json_integer_value(json_object_get(e, "version"));
	f->r.expires = json_integer_value(json_object_get(e, "expires"));
	f->r.refresh_at = json_integer_value(json_object_get(e, "refresh_at"));
	f->r.attempts = (int)json_integer_value(json_object_get(e, "attempts"));
	f->r.revoking = json_is_true(json_object_get(e, "revoking"));
	f->next_try = json_integer_value(json_object_get(e, "next_try"));
	if (f->r.id > is->next_id)
		is->next_id = f->r.id;
	return f;
}

/* Reads the state file back (none: nothing held), dropping what has
 * expired: 0, -EBADMSG, -errno. */
static int
state_load(struct issuers *is)
{
	char *data = NULL, aad[64];
	unsigned char *plain;
	size_t len = 0, i;
	json_t *all, *e;
	struct frow **tail = &is->rows;
	int64_t now = (int64_t)time(NULL);
	int r = path_read_file(is->state, STATE_MAX, &data, &len);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r == -EFBIG ? -EBADMSG : r;
	if (len < NONCE_LEN + TAG_LEN) {
		free(data);
		return -EBADMSG;
	}
	plain = malloc(len + 1);
	snprintf(aad, sizeof(aad), "%s", state_aad);
	r = plain == NULL
	    ? -ENOMEM
	    : state_aead(is, false, aad, (unsigned char *)data, len, plain);
	free(data);
	if (r < 0) {
		free(plain);
		return r;
	}
	all = json_loadb((char *)plain, len - NONCE_LEN - TAG_LEN, 0, NULL);
	OPENSSL_cleanse(plain, len - NONCE_LEN - TAG_LEN);
	free(plain);
	if (!json_is_array(all)) {
		json_decref(all);
		return -EBADMSG;
	}
	json_array_foreach(all, i, e)
	{
		struct frow *f = state_row(is, e);
		if (f == NULL)
			continue;
		if (f->r.expires != 0 && f->r.expires <= now) {
			free(f->r.sealed);
			free(f);
			continue;
		}
		*tail = f;
		tail = &f->next;
	}
	wipe_json(all);
	json_decref(all);
	return 0;
}

static int
row_copy(const struct issued_row *from, struct issued_row *to)
{
	*to = *from;
	to->sealed = malloc(from->len);
	if (to->sealed == NULL)
		return -ENOMEM;
	memcpy(to->sealed, from->sealed, from->len);
	return 0;
}

static int
file_put(void *arg, const struct issued_row *row, int64_t *ret_id)
{
	struct issuers *is = arg;
	struct frow *f = calloc(1, sizeof(*f)), **pp;
	int64_t now = (int64_t)time(NULL);
	size_t all = 0, mine = 0;
	int r;

	if (f == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&is->flock);
	for (pp = &is->rows; *pp != NULL;) {
		struct frow *o = *pp;
		/* Dead ones of this job and secret go; the rest stay for
		 * the revoke. */
		if (strcmp(o->r.job, row->job) == 0 &&
		    strcmp(o->r.secret, row->secret) == 0 &&
		    o->r.expires != 0 && o->r.expires <= now) {
			*pp = o->next;
			free(o->r.sealed);
			free(o);
			continue;
		}
		all++;
		mine += strcmp(o->r.job, row->job) == 0;
		pp = &o->next;
	}
	r = all >= ISSUED_MAX || mine >= ISSUED_PER_JOB_MAX
	    ? -ENOSPC
	    : row_copy(row, &f->r);
	if (r == 0) {
		f->r.id = ++is->next_id;
		f->next_try = row->revoking ? (int64_t)time(NULL) : 0;
		*pp = f; /* the tail: the order obtained */
		if ((r = state_save(is)) < 0) {
			*pp = NULL;
			free(f->r.sealed);
		} else
			*ret_id = f->r.id;
	}
	pthread_mutex_unlock(&is->flock);
	if (r < 0)
		free(f);
	return r;
}

static int
file_find(void *arg, const char *job, const char *secret, int64_t version,
    int64_t now, struct issued_row *ret)
{
	struct issuers *is = arg;
	const struct frow *best = NULL;
	int r = -ENOENT;

	pthread_mutex_lock(&is->flock);
	for (const struct frow *f = is->rows; f != NULL; f = f->next)
		if (!f->r.revoking && f->r.version == version &&
		    strcmp(f->r.job, job) == 0 &&
		    strcmp(f->r.secret, secret) == 0 &&
		    (f->r.refresh_at == 0 || now < f->r.refresh_at))
			best = f;
	if (best != NULL)
		r = row_copy(&best->r, ret);
	pthread_mutex_unlock(&is->flock);
	return r;
}

static int
file_claim(void *arg, const char *job, int64_t lease_s, size_t max,
    struct issued_row **ret, size_t *n)
{
	struct issuers *is = arg;
	int64_t now = (int64_t)time(NULL);
	struct issued_row *out = calloc(max > 0 ? max : 1, sizeof(*out));
	bool changed = false;
	int r = 0;

	*n = 0;
	if (out == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&is->flock);
	for (struct frow *f = is->rows; f != NULL; f = f->next) {
		if (job != NULL && strcmp(f->r.job, job) != 0)
			continue;
		if (job != NULL && !f->r.revoking) {
			f->r.revoking = true;
			f->next_try = now;
			changed = true;
		}
		if (!f->r.revoking || f->next_try > now || *n >= max)
			continue;
		if ((r = row_copy(&f->r, &out[*n])) < 0)
			break;
		f->next_try = now + lease_s;
		f->r.attempts++;
		out[*n].attempts = f->r.attempts;
		(*n)++;
		changed = true;
	}
	if (changed && r == 0)
		r = state_save(is);
	pthread_mutex_unlock(&is->flock);
	if (r < 0) {
		issued_rows_free(out, *n);
		*n = 0;
		return r;
	}
	*ret = out;
	return 0;
}

static int
file_done(void *arg, int64_t id)
{
	struct issuers *is = arg;
	int r = 0;

	pthread_mutex_lock(&is->flock);
	for (struct frow **pp = &is->rows; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->r.id == id) {
			struct frow *f = *pp;
			*pp = f->next;
			free(f->r.sealed);
			free(f);
			r = state_save(is);
			break;
		}
	pthread_mutex_unlock(&is->flock);
	return r;
}

static int
file_retry(void *arg, int64_t id, int64_t delay_s, int attempts)
{
	struct issuers *is = arg;
	int r = -ENOENT;

	pthread_mutex_lock(&is->flock);
	for (struct frow *f = is->rows; f != NULL; f = f->next)
		if (f->r.id == id) {
			f->next_try = (int64_t)time(NULL) + delay_s;
			f->r.attempts = attempts;
			r = state_save(is);
			break;
		}
	pthread_mutex_unlock(&is->flock);
	return r;
}

static int
file_pending(void *arg, int64_t *ret)
{
	struct issuers *is = arg;

	*ret = 0;
	pthread_mutex_lock(&is->flock);
	for (const struct frow *f = is->rows; f != NULL; f = f->next)
		*ret += f->r.revoking;
	pthread_mutex_unlock(&is->flock);
	return 0;
}

static int
file_live(void *arg, const char *secret, int64_t now, size_t max,
    struct issued_row **ret, size_t *n)
{
	struct issuers *is = arg;
	struct issued_row *out = calloc(max > 0 ? max : 1, sizeof(*out));
	int r = 0;

	*n = 0;
	if (out == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&is->flock);
	for (const struct frow *f = is->rows; f != NULL && *n < max;
	     f = f->next) {
		if (strcmp(f->r.secret, secret) != 0 ||
		    (f->r.expires != 0 && f->r.expires <= now))
			continue;
		if ((r = row_copy(&f->r, &out[*n])) < 0)
			break;
		(*n)++;
	}
	pthread_mutex_unlock(&is->flock);
	if (r < 0) {
		issued_rows_free(out, *n);
		*n = 0;
		return r;
	}
	*ret = out;
	return 0;
}

static void
file_store(struct issuers *is)
{
	is->st = (struct issuers_store){ .arg = is,
		.put = file_put,
		.find = file_find,
		.claim = file_claim,
		.done = file_done,
		.retry = file_retry,
		.pending = file_pending,
		.live = file_live };
}

/* --- encodings ------------------------------------------------------------ */

/* application/x-www-form-urlencoded of s, appended to b. */
static int
form_append(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char e[3] = { '%', hex[c >> 4], hex[c & 15] };
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~';
		int r = plain ? buf_append(b, s, 1) : buf_append(b, e, 3);
		if (r < 0)
			return r;
	}
	return 0;
}

/* base64 (url: the URL-safe alphabet without padding) of in, appended. */
static int
b64_append(struct buf *b, const void *in, size_t len, bool url)
{
	size_t cap = 4 * ((len + 2) / 3) + 1;
	unsigned char *out = malloc(cap);
	int n, r;

	if (out == NULL)
		return -ENOMEM;
	n = EVP_EncodeBlock(out, in, (int)len);
	if (url) {
		while (n > 0 && out[n - 1] == '=')
			n--;
		for (int i = 0; i < n; i++)
			out[i] = out[i] == '+' ? '-'
			    : out[i] == '/'    ? '_'
					       : out[i];
	}
	r = buf_append(b, out, (size_t)n);
	OPENSSL_cleanse(out, cap);
	free(out);
	return r;
}

static char *
buf_take(struct buf *b)
{
	size_t len;
	char *s = buf_steal(b, &len);

	if (s == NULL)
		s = strdup("");
	return s;
}

/* --- the configurations --------------------------------------------------- */

static bool
printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static bool
digits(const char *s)
{
	if (*s == '\0' || strlen(s) > 20)
		return false;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* A printable string field of at most max bytes: 1 when present and
 * good, 0 when absent and optional, -1 otherwise (why says so). */
static int
take_str(const json_t *body, const char *key, bool required, size_t max,
    json_t *cfg, char *why, size_t whylen)
{
	json_t *v = json_object_get(body, key);

	if (v == NULL && !required)
		return 0;
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) > max ||
	    !printable(json_string_value(v), json_string_length(v))) {
		snprintf(why, whylen,
		    "%s must be a string of 1 to %zu printable ASCII bytes",
		    key, max);
		return -1;
	}
	json_object_set_new(cfg, key, json_string(json_string_value(v)));
	return 1;
}

static int
take_url(const json_t *body, const char *key, bool required, json_t *cfg,
    char *why, size_t whylen)
{
	int r =
	    take_str(body, key, required, IHTTP_URL_MAX - 1, cfg, why, whylen);
	struct ihttp_url u;

	if (r <= 0)
		return r;
	r = ihttp_parse_url(json_string_value(json_object_get(cfg, key)), &u);
	if (r == -EPERM) {
		snprintf(why, whylen,
		    "%s: plain http only to a loopback address; use https",
		    key);
		return -1;
	}
	if (r < 0) {
		snprintf(why, whylen,
		    "%s must be an https:// URL (no user, no fragment)", key);
		return -1;
	}
	return 1;
}

/* An id given as digits, or as a positive integer. */
static int
take_id(const json_t *body, const char *key, json_t *cfg, char *why,
    size_t whylen)
{
	json_t *v = json_object_get(body, key);
	char s[32];

	if (json_is_integer(v) && json_integer_value(v) > 0)
		snprintf(s, sizeof(s), "%lld",
		    (long long)json_integer_value(v));
	else if (json_is_string(v) && digits(json_string_value(v)))
		snprintf(s, sizeof(s), "%s", json_string_value(v));
	else {
		snprintf(why, whylen, "%s must be a positive integer", key);
		return -1;
	}
	json_object_set_new(cfg, key, json_string(s));
	return 0;
}

static bool
only_keys(const json_t *body, const char *const *keys, size_t n, char *why,
    size_t whylen)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)body, k, v)
	{
		bool known = false;
		for (size_t i = 0; i < n; i++)
			known |= strcmp(k, keys[i]) == 0;
		if (!known) {
			snprintf(why, whylen, "unknown field %.64s", k);
			return false;
		}
	}
	return true;
}

static EVP_PKEY *
load_key(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k;

	if (bio == NULL)
		return NULL;
	k = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	return k;
}

static int
check_oauth(const json_t *body, json_t *cfg, char *why, size_t whylen)
{
	static const char *const keys[] = { "kind", "token_url", "client_id",
		"client_secret", "scope", "revocation_url", "client_auth" };
	const char *auth;

	if (!only_keys(body, keys, sizeof(keys) / sizeof(keys[0]), why,
		whylen) ||
	    take_url(body, "token_url", true, cfg, why, whylen) < 0 ||
	    take_str(body, "client_id", true, 256, cfg, why, whylen) < 0 ||
	    take_str(body, "client_secret", true, FIELD_MAX, cfg, why, whylen) <
		0 ||
	    take_str(body, "scope", false, FIELD_MAX, cfg, why, whylen) < 0 ||
	    take_url(body, "revocation_url", false, cfg, why, whylen) < 0 ||
	    take_str(body, "client_auth", false, 8, cfg, why, whylen) < 0)
		return -EINVAL;
	auth = json_string_value(json_object_get(cfg, "client_auth"));
	if (auth == NULL)
		json_object_set_new(cfg, "client_auth", json_string("basic"));
	else if (strcmp(auth, "basic") != 0 && strcmp(auth, "post") != 0) {
		snprintf(why, whylen,
		    "client_auth must be \"basic\" (the default) or \"post\"");
		return -EINVAL;
	}
	return 0;
}

static int
check_github(const json_t *body, json_t *cfg, char *why, size_t whylen)
{
	static const char *const keys[] = { "kind", "app_id", "installation_id",
		"private_key", "api", "repositories", "permissions" };
	json_t *repos = json_object_get(body, "repositories"),
	       *perms = json_object_get(body, "permissions"), *v;
	const char *pem, *k;
	EVP_PKEY *key;
	size_t i;
	int ok;

	if (!only_keys(body, keys, sizeof(keys) / sizeof(keys[0]), why,
		whylen) ||
	    take_id(body, "app_id", cfg, why, whylen) < 0 ||
	    take_id(body, "installation_id", cfg, why, whylen) < 0 ||
	    take_url(body, "api", false, cfg, why, whylen) < 0)
		return -EINVAL;
	v = json_object_get(body, "private_key");
	pem = json_string_value(v);
	if (pem == NULL || json_string_length(v) > PEM_MAX ||
	    strlen(pem) != json_string_length(v)) {
		snprintf(why, whylen,
		    "private_key must be the App's RSA key in PEM");
		return -EINVAL;
	}
	key = load_key(pem);
	ok = key != NULL && EVP_PKEY_base_id(key) == EVP_PKEY_RSA &&
	    EVP_PKEY_get_bits(key) >= 2048;
	EVP_PKEY_free(key);
	if (!ok) {
		snprintf(why, whylen,
		    "private_key must be the App's RSA key (2048 bits or more) "
		    "in PEM");
		return -EINVAL;
	}
	json_object_set_new(cfg, "private_key", json_string(pem));
	if (json_object_get(cfg, "api") == NULL)
		json_object_set_new(cfg, "api", json_string(ISSUER_GITHUB_API));
	else {
		/* The paths are appended: no trailing slash. */
		char api[IHTTP_URL_MAX];
		snprintf(api, sizeof(api), "%s",
		    json_string_value(json_object_get(cfg, "api")));
		for (size_t n = strlen(api); n > 0 && api[n - 1] == '/'; n--)
			api[n - 1] = '\0';
		if (strchr(api, '?') != NULL) {
			snprintf(why, whylen, "api must have no query");
			return -EINVAL;
		}
		json_object_set_new(cfg, "api", json_string(api));
	}
	if (repos != NULL) {
		if (!json_is_array(repos) || json_array_size(repos) == 0 ||
		    json_array_size(repos) > REPOS_MAX) {
			snprintf(why, whylen,
			    "repositories must be 1 to %d repository names",
			    REPOS_MAX);
			return -EINVAL;
		}
		json_array_foreach(repos, i, v)
		{
			const char *s = json_string_value(v);
			size_t n = json_string_length(v);
			if (s == NULL || n == 0 || n > 100 ||
			    strspn(s,
				"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
				"UVWXYZ"
				"0123456789._-") != n) {
				snprintf(why, whylen,
				    "repositories[%zu] must be a repository "
				    "name ([A-Za-z0-9._-], at most 100)",
				    i);
				return -EINVAL;
			}
		}
		json_object_set_new(cfg, "repositories", json_deep_copy(repos));
	}
	if (perms != NULL) {
		if (!json_is_object(perms) || json_object_size(perms) == 0 ||
		    json_object_size(perms) > PERMS_MAX) {
			snprintf(why, whylen,
			    "permissions must be an object of 1 to %d "
			    "permissions",
			    PERMS_MAX);
			return -EINVAL;
		}
		json_object_foreach(perms, k, v)
		{
			const char *s = json_string_value(v);
			size_t n = strlen(k);
			if (n == 0 || n > 64 ||
			    strspn(k, "abcdefghijklmnopqrstuvwxyz_") != n ||
			    s == NULL ||
			    (strcmp(s, "read") != 0 &&
				strcmp(s, "write") != 0 &&
				strcmp(s, "admin") != 0)) {
				snprintf(why, whylen,
				    "permissions: each a name ([a-z_]) and "
				    "\"read\", \"write\" or \"admin\"");
				return -EINVAL;
			}
		}
		json_object_set_new(cfg, "permissions", json_deep_copy(perms));
	}
	return 0;
}

int
issuers_config_check(const json_t *body, json_t **ret_cfg, char *why,
    size_t whylen)
{
	const char *kind = json_string_value(json_object_get(body, "kind"));
	json_t *cfg;
	int r;

	if (kind == NULL ||
	    (strcmp(kind, ISSUER_OAUTH) != 0 &&
		strcmp(kind, ISSUER_GITHUB) != 0)) {
		snprintf(why, whylen, "kind must be \"%s\" or \"%s\"",
		    ISSUER_OAUTH, ISSUER_GITHUB);
		return -EINVAL;
	}
	cfg = json_pack("{s:s}", "kind", kind);
	if (cfg == NULL)
		return -ENOMEM;
	r = strcmp(kind, ISSUER_OAUTH) == 0
	    ? check_oauth(body, cfg, why, whylen)
	    : check_github(body, cfg, why, whylen);
	if (r < 0) {
		json_decref(cfg);
		return r;
	}
	*ret_cfg = cfg;
	return 0;
}

const char *
issuers_issuer(const json_t *cfg)
{
	const char *kind = json_string_value(json_object_get(cfg, "kind"));

	if (kind != NULL && strcmp(kind, ISSUER_OAUTH) == 0)
		return json_string_value(json_object_get(cfg, "token_url"));
	return json_string_value(json_object_get(cfg, "api"));
}

json_t *
issuers_public(const json_t *cfg)
{
	static const char *const shown[] = { "kind", "token_url",
		"revocation_url", "client_id", "scope", "client_auth", "api",
		"app_id", "installation_id", "repositories", "permissions" };
	json_t *out = json_object();

	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		json_t *v = json_object_get(cfg, shown[i]);
		/* Copies: the caller wipes cfg's strings. */
		if (v != NULL)
			json_object_set_new(out, shown[i], json_deep_copy(v));
	}
	return out;
}

/* --- obtaining -------------------------------------------------------------- */

static const char *
cfg_str(const json_t *cfg, const char *key)
{
	return json_string_value(json_object_get(cfg, key));
}

/* Refreshed a minute before it expires, or at 3/4 of a short life. */
static int64_t
refresh_at(int64_t now, int64_t expires)
{
	int64_t life = expires - now;

	if (expires == 0)
		return 0;
	if (life <= 0)
		return now;
	return expires - (life >= 240 ? 60 : life / 4);
}

/* Why an exchange failed, in words. */
static void
call_failed(int r, const char *what, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s: %s", what,
	    r == -ECONNREFUSED    ? "connection refused"
		: r == -ETIMEDOUT ? "no answer in time"
		: r == -EPROTO    ? "TLS failed (certificate or handshake)"
		: r == -EFBIG     ? "answer too large"
				  : "malformed answer");
}

/* The issuer refused: its status and, when it said, its error code. */
static void
refused(const struct ihttp_answer *a, const char *what, char *why,
    size_t whylen)
{
	json_t *j = json_loadb(a->body.data, a->body.len, 0, NULL);
	const char *e = json_string_value(json_object_get(j, "error"));
	const char *m = json_string_value(json_object_get(j, "message"));
	char code[80] = "";

	if (e != NULL)
		snprintf(code, sizeof(code), "%.64s", e);
	else if (m != NULL)
		snprintf(code, sizeof(code), "%.64s", m);
	for (char *p = code; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	snprintf(why, whylen, "%s answered %ld%s%s", what, a->status,
	    code[0] != '\0' ? ": " : "", code);
	json_decref(j);
}

static bool
value_good(const char *v, size_t len)
{
	return v != NULL && len > 0 && len <= ISSUED_VALUE_MAX &&
	    printable(v, len);
}

/* The client's authentication (RFC 6749 section 2.3.1) as a header, or
 * in the body for "post". */
static int
client_auth(const json_t *cfg, struct buf *head, struct buf *body)
{
	struct buf pair = BUF_INIT(4 * FIELD_MAX);
	int r = 0;

	if (strcmp(cfg_str(cfg, "client_auth"), "post") == 0) {
		r = buf_printf(body, "&client_id=");
		if (r == 0)
			r = form_append(body, cfg_str(cfg, "client_id"));
		if (r == 0)
			r = buf_printf(body, "&client_secret=");
		if (r == 0)
			r = form_append(body, cfg_str(cfg, "client_secret"));
		return r;
	}
	r = form_append(&pair, cfg_str(cfg, "client_id"));
	if (r == 0)
		r = buf_append(&pair, ":", 1);
	if (r == 0)
		r = form_append(&pair, cfg_str(cfg, "client_secret"));
	if (r == 0)
		r = buf_printf(head, "Authorization: Basic ");
	if (r == 0)
		r = b64_append(head, pair.data, pair.len, false);
	if (r == 0)
		r = buf_printf(head, "\r\n");
	if (pair.data != NULL)
		OPENSSL_cleanse(pair.data, pair.len);
	buf_free(&pair);
	return r;
}

static int
obtain_oauth(struct issuers *is, const json_t *cfg, struct held *h,
    long *ret_status, char *why, size_t whylen)
{
	struct buf head = BUF_INIT(16 * 1024), body = BUF_INIT(16 * 1024);
	struct ihttp_answer a;
	const char *scope = cfg_str(cfg, "scope"), *tok;
	json_t *j = NULL, *exp;
	int64_t now = (int64_t)time(NULL);
	int r;

	r = buf_printf(&head,
	    "Content-Type: application/x-www-form-urlencoded\r\n"
	    "Accept: application/json\r\n");
	if (r == 0)
		r = buf_printf(&body, "grant_type=client_credentials");
	if (r == 0 && scope != NULL) {
		r = buf_printf(&body, "&scope=");
		if (r == 0)
			r = form_append(&body, scope);
	}
	if (r == 0)
		r = client_auth(cfg, &head, &body);
	if (r == 0) {
		r = ihttp_request(is->tls, cfg_str(cfg, "token_url"), "POST",
		    head.data, body.data, body.len, ISSUER_CALL_MS, &a);
		if (r < 0)
			call_failed(r, "the token endpoint", why, whylen);
	}
	if (r == 0) {
		*ret_status = a.status;
		j = a.status == 200
		    ? json_loadb(a.body.data, a.body.len, 0, NULL)
		    : NULL;
		tok = json_string_value(json_object_get(j, "access_token"));
		exp = json_object_get(j, "expires_in");
		if (a.status != 200) {
			refused(&a, "the token endpoint", why, whylen);
			r = -EPROTO;
		} else if (!value_good(tok,
			       json_string_length(
				   json_object_get(j, "access_token"))) ||
		    (exp != NULL &&
			(!json_is_integer(exp) ||
			    json_integer_value(exp) <= 0))) {
			snprintf(why, whylen,
			    "the token endpoint's answer has no usable "
			    "access_token and expires_in");
			r = -EIO;
		} else {
			h->len = strlen(tok);
			h->value = strdup(tok);
			/* An issuer's figure, capped: no overflow from it. */
			json_int_t life =
			    exp != NULL ? json_integer_value(exp) : 0;
			h->expires = exp != NULL ? now +
				(life > EXPIRES_IN_MAX ? EXPIRES_IN_MAX
						       : (int64_t)life)
						 : 0;
			if (h->value == NULL)
				r = -ENOMEM;
		}
		if (j != NULL) {
			/* The token's copy inside jansson. */
			json_t *t = json_object_get(j, "access_token");
			if (json_is_string(t))
				OPENSSL_cleanse((char *)json_string_value(t),
				    json_string_length(t));
		}
		json_decref(j);
		ihttp_answer_free(&a);
	}
	/* RFC 7009 where the issuer offers it: the same client
	 * authentication, the token and its type. */
	if (r == 0 && cfg_str(cfg, "revocation_url") != NULL) {
		struct buf rb = BUF_INIT(16 * 1024);
		r = buf_printf(&rb, "token=");
		if (r == 0)
			r = form_append(&rb, h->value);
		if (r == 0)
			r = buf_printf(&rb, "&token_type_hint=access_token");
		buf_reset(&head);
		if (r == 0)
			r = buf_printf(&head,
			    "Content-Type: "
			    "application/x-www-form-urlencoded\r\n"
			    "Accept: application/json\r\n");
		if (r == 0)
			r = client_auth(cfg, &head, &rb);
		h->revoke_url = strdup(cfg_str(cfg, "revocation_url"));
		h->revoke_method = "POST";
		h->revoke_body = buf_take(&rb);
		h->revoke_head = buf_take(&head);
		if (h->revoke_url == NULL || h->revoke_body == NULL ||
		    h->revoke_head == NULL)
			r = -ENOMEM;
	}
	if (head.data != NULL)
		OPENSSL_cleanse(head.data, head.len);
	if (body.data != NULL)
		OPENSSL_cleanse(body.data, body.len);
	buf_free(&head);
	buf_free(&body);
	return r;
}

int
issuers_github_jwt(const char *pem, const char *app_id, int64_t now, char **ret)
{
	struct buf t = BUF_INIT(8192);
	char claims[160];
	unsigned char sig[1024];
	size_t siglen = sizeof(sig);
	EVP_PKEY *key = load_key(pem);
	EVP_MD_CTX *md = NULL;
	int r = 0;

	if (key == NULL || EVP_PKEY_base_id(key) != EVP_PKEY_RSA ||
	    !digits(app_id)) {
		EVP_PKEY_free(key);
		return -EINVAL;
	}
	/* GitHub: iat a minute back for clock drift, exp at most 10
	 * minutes ahead of iat. */
	snprintf(claims, sizeof(claims),
	    "{\"iat\":%lld,\"exp\":%lld,"
	    "\"iss\":\"%s\"}",
	    (long long)(now - 60), (long long)(now + 540), app_id);
	r = b64_append(&t, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}", 27, true);
	if (r == 0)
		r = buf_append(&t, ".", 1);
	if (r == 0)
		r = b64_append(&t, claims, strlen(claims), true);
	if (r == 0 &&
	    ((md = EVP_MD_CTX_new()) == NULL ||
		EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
		EVP_DigestSign(md, sig, &siglen, (unsigned char *)t.data,
		    t.len) != 1))
		r = -EIO;
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	if (r == 0)
		r = buf_append(&t, ".", 1);
	if (r == 0)
		r = b64_append(&t, sig, siglen, true);
	if (r < 0) {
		buf_free(&t);
		return r;
	}
	*ret = buf_take(&t);
	return *ret != NULL ? 0 : -ENOMEM;
}

/* "2026-12-01T12:00:00Z" in unix seconds, or 0. */
static int64_t
iso_time(const char *s)
{
	struct tm tm = { 0 };
	char z = 0;

	if (s == NULL ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon,
		&tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) != 7 ||
	    z != 'Z')
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm);
}

static const char gh_fields[] = "Accept: application/vnd.github+json\r\n"
				"X-GitHub-Api-Version: 2022-11-28\r\n";

static int
obtain_github(struct issuers *is, const json_t *cfg, struct held *h,
    long *ret_status, char *why, size_t whylen)
{
	struct buf head = BUF_INIT(16 * 1024);
	char url[IHTTP_URL_MAX + 64], *jwt = NULL, *body = NULL;
	json_t *narrow = json_object(), *j = NULL;
	struct ihttp_answer a;
	const char *tok;
	int r;

	if (narrow == NULL)
		return -ENOMEM;
	if (json_object_get(cfg, "repositories") != NULL)
		json_object_set(narrow, "repositories",
		    json_object_get(cfg, "repositories"));
	if (json_object_get(cfg, "permissions") != NULL)
		json_object_set(narrow, "permissions",
		    json_object_get(cfg, "permissions"));
	body = json_dumps(narrow, JSON_COMPACT);
	json_decref(narrow);
	snprintf(url, sizeof(url), "%s/app/installations/%s/access_tokens",
	    cfg_str(cfg, "api"), cfg_str(cfg, "installation_id"));
	r = body == NULL
	    ? -ENOMEM
	    : issuers_github_jwt(cfg_str(cfg, "private_key"),
		  cfg_str(cfg, "app_id"), (int64_t)time(NULL), &jwt);
	if (r == 0)
		r = buf_printf(&head,
		    "Authorization: Bearer %s\r\n%sContent-Type: "
		    "application/json\r\n",
		    jwt, gh_fields);
	wipe_str(jwt);
	if (r == 0) {
		r = ihttp_request(is->tls, url, "POST", head.data, body,
		    strlen(body), ISSUER_CALL_MS, &a);
		if (r < 0)
			call_failed(r, "the installation token endpoint", why,
			    whylen);
	}
	free(body);
	if (r == 0) {
		*ret_status = a.status;
		j = a.status == 201 || a.status == 200
		    ? json_loadb(a.body.data, a.body.len, 0, NULL)
		    : NULL;
		tok = json_string_value(json_object_get(j, "token"));
		if (a.status != 201 && a.status != 200) {
			refused(&a, "the installation token endpoint", why,
			    whylen);
			r = -EPROTO;
		} else if (!value_good(tok,
			       json_string_length(
				   json_object_get(j, "token")))) {
			snprintf(why, whylen,
			    "the installation token endpoint's answer has no "
			    "usable token");
			r = -EIO;
		} else {
			h->len = strlen(tok);
			h->value = strdup(tok);
			h->expires = iso_time(json_string_value(
			    json_object_get(j, "expires_at")));
			if (h->value == NULL)
				r = -ENOMEM;
		}
		if (j != NULL) {
			json_t *t = json_object_get(j, "token");
			if (json_is_string(t))
				OPENSSL_cleanse((char *)json_string_value(t),
				    json_string_length(t));
		}
		json_decref(j);
		ihttp_answer_free(&a);
	}
	if (r == 0) {
		buf_reset(&head);
		r = buf_printf(&head, "Authorization: Bearer %s\r\n%s",
		    h->value, gh_fields);
		snprintf(url, sizeof(url), "%s/installation/token",
		    cfg_str(cfg, "api"));
		h->revoke_url = strdup(url);
		h->revoke_method = "DELETE";
		h->revoke_head = buf_take(&head);
		if (r == 0 && (h->revoke_url == NULL || h->revoke_head == NULL))
			r = -ENOMEM;
	}
	if (head.data != NULL)
		OPENSSL_cleanse(head.data, head.len);
	buf_free(&head);
	return r;
}

/* --- held credentials --------------------------------------------------- */

static bool
tombstoned(const struct issuers *is, const char *job)
{
	for (size_t i = 0; i < TOMBSTONES; i++)
		if (is->tomb[i][0] != '\0' && strcmp(is->tomb[i], job) == 0)
			return true;
	return false;
}

/* Waits on c until woken (0) or the monotonic deadline passed (-1). */
static int
cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t until)
{
	struct timespec ts;
	int64_t left = until - monotonic_ms();

	if (left <= 0)
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_cond_timedwait(c, m, &ts) == 0 ? 0 : -1;
}

/* Revokes h at its issuer within timeout_ms (<= 0: not tried, untried
 * says why): the result object. */
static json_t *
revoke_one(struct issuers *is, const struct held *h, long timeout_ms,
    const char *untried, bool *retry)
{
	json_t *out =
	    json_pack("{s:s, s:I, s:s, s:s}", "secret", h->secret, "version",
		(json_int_t)h->version, "kind", h->kind, "issuer", h->issuer);
	int64_t now = (int64_t)time(NULL);
	struct ihttp_answer a;
	char why[200];
	int r;

	*retry = false;
	if (out == NULL) {
		*retry = true;
		return NULL;
	}
	if (h->expires != 0 && h->expires <= now) {
		json_object_set_new(out, "ok", json_true());
		json_object_set_new(out, "expired", json_true());
		return out;
	}
	if (h->revoke_url == NULL) {
		atomic_fetch_add(&is->revoke_failed, 1);
		json_object_set_new(out, "ok", json_false());
		json_object_set_new(out, "error",
		    json_string("the issuer has no revocation endpoint: the "
				"credential lives until it expires"));
		if (h->expires != 0)
			json_object_set_new(out, "expires",
			    json_integer(h->expires));
		return out;
	}
	*retry = true;
	if (timeout_ms <= 0) {
		atomic_fetch_add(&is->revoke_failed, 1);
		json_object_set_new(out, "ok", json_false());
		json_object_set_new(out, "error", json_string(untried));
		return out;
	}
	r = ihttp_request(is->tls, h->revoke_url, h->revoke_method,
	    h->revoke_head, h->revoke_body,
	    h->revoke_body != NULL ? strlen(h->revoke_body) : 0, timeout_ms,
	    &a);
	if (r < 0) {
		call_failed(r, "the revocation endpoint", why, sizeof(why));
		atomic_fetch_add(&is->revoke_failed, 1);
		json_object_set_new(out, "ok", json_false());
		json_object_set_new(out, "error", json_string(why));
		return out;
	}
	json_object_set_new(out, "status", json_integer(a.status));
	json_object_set_new(out, "ok", json_boolean(a.status / 100 == 2));
	if (a.status / 100 == 2) {
		*retry = false;
		atomic_fetch_add(&is->revoked, 1);
	} else {
		refused(&a, "the revocation endpoint", why, sizeof(why));
		json_object_set_new(out, "error", json_string(why));
		atomic_fetch_add(&is->revoke_failed, 1);
	}
	ihttp_answer_free(&a);
	return out;
}

static void
give(const struct held *h, struct issued *ret, bool fresh)
{
	memcpy(ret->value, h->value, h->len);
	ret->value[h->len] = '\0';
	ret->len = h->len;
	ret->expires = h->expires;
	ret->fresh = fresh;
}

/* The held credential of (job, secret, version) that is not due for a
 * refresh, into ret: 0, or -ENOENT (none, or it does not open). */
static int
give_held(struct issuers *is, const char *job, const char *secret,
    int64_t version, struct issued *ret)
{
	struct issued_row row;
	struct held *h;
	int r = is->st.find(is->st.arg, job, secret, version,
	    (int64_t)time(NULL), &row);

	if (r < 0)
		return r;
	h = row_open(is, &row);
	free(row.sealed);
	if (h == NULL)
		return -ENOENT;
	give(h, ret, false);
	held_free(h);
	return 0;
}

void
issued_live_free(struct issued_live *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		if (v[i].value != NULL) {
			OPENSSL_cleanse(v[i].value, v[i].len);
			free(v[i].value);
		}
	free(v);
}

/* 64 bits of x mixed (splitmix64's finaliser). */
static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The generation of n live rows (issuers_scan_gen): a sum of each row's
 * hash (FNV-1a of its id, version, expiry and job), so the rows' order
 * does not count, mixed with n; 1..INT64_MAX. */
static int64_t
rows_gen(const struct issued_row *rows, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t h = 0xcbf29ce484222325ULL;
		int64_t f[3] = { rows[i].id, rows[i].version, rows[i].expires };
		const unsigned char *p = (const unsigned char *)f;
		for (size_t k = 0; k < sizeof(f); k++)
			h = (h ^ p[k]) * 0x100000001b3ULL;
		for (const char *j = rows[i].job; *j != '\0'; j++)
			h = (h ^ (unsigned char)*j) * 0x100000001b3ULL;
		sum += mix64(h);
	}
	uint64_t g = mix64(sum ^ mix64((uint64_t)n + 1)) & INT64_MAX;
	return g == 0 ? 1 : (int64_t)g;
}

int
issuers_scan_gen(struct issuers *is, const char *secret, int64_t now,
    size_t max, int64_t *ret)
{
	struct issued_row *rows = NULL;
	size_t nrows = 0;
	int r;

	if (is->st.live == NULL)
		return -EOPNOTSUPP;
	r = is->st.live(is->st.arg, secret, now, max + 1, &rows, &nrows);
	if (r < 0)
		return r;
	*ret = rows_gen(rows, nrows);
	issued_rows_free(rows, nrows);
	return 0;
}

int
issuers_scan_set(struct issuers *is, const char *secret, int64_t now,
    size_t max, struct issued_live **ret, size_t *n, int64_t *ret_gen)
{
	struct issued_row *rows = NULL;
	struct issued_live *out;
	size_t nrows = 0, k = 0;
	int r;

	*n = 0;
	if (is->st.live == NULL)
		return -EOPNOTSUPP;
	/* One more than max: more live than that is refused whole. */
	r = is->st.live(is->st.arg, secret, now, max + 1, &rows, &nrows);
	if (r < 0)
		return r;
	if (ret_gen != NULL)
		*ret_gen = rows_gen(rows, nrows);
	if (nrows > max) {
		issued_rows_free(rows, nrows);
		return -E2BIG;
	}
	out = calloc(nrows > 0 ? nrows : 1, sizeof(*out));
	if (out == NULL) {
		issued_rows_free(rows, nrows);
		return -ENOMEM;
	}
	for (; k < nrows; k++) {
		struct held *h = row_open(is, &rows[k]);
		if (h == NULL) {
			r = -EBADMSG;
			break;
		}
		snprintf(out[k].job, sizeof(out[k].job), "%s", h->job);
		out[k].version = h->version;
		out[k].expires = h->expires;
		out[k].value = h->value; /* taken */
		out[k].len = h->len;
		h->value = NULL;
		held_free(h);
	}
	issued_rows_free(rows, nrows);
	if (r < 0) {
		issued_live_free(out, k);
		return r;
	}
	*ret = out;
	*n = nrows;
	return 0;
}

static void
kick(struct issuers *is)
{
	pthread_mutex_lock(&is->lock);
	is->kicked = true;
	pthread_cond_broadcast(&is->wake);
	pthread_mutex_unlock(&is->lock);
}

int
issuers_release_held(struct issuers *is, const char *job, const char *secret,
    int64_t version, const json_t *cfg, struct issued *ret, char *why,
    size_t whylen)
{
	bool gone;

	why[0] = '\0';
	if (cfg_str(cfg, "kind") == NULL || issuers_issuer(cfg) == NULL ||
	    strlen(job) >= ID_MAX || strlen(secret) >= ID_MAX) {
		snprintf(why, whylen, "the secret's configuration is broken");
		OPENSSL_cleanse(ret, sizeof(*ret));
		return -EINVAL;
	}
	if (give_held(is, job, secret, version, ret) == 0)
		return 0;
	OPENSSL_cleanse(ret, sizeof(*ret));
	pthread_mutex_lock(&is->lock);
	gone = tombstoned(is, job);
	pthread_mutex_unlock(&is->lock);
	if (gone) {
		snprintf(why, whylen, "the job is revoked");
		return -ESTALE;
	}
	return -EAGAIN;
}

/*
 * Obtains a credential for c at its issuer and keeps it, before it is
 * given (a restart, or another broker, still revokes it): 0 with *got
 * filled, or as issuers_release. One obtained but not kept is left in
 * *ret_undo, to be revoked once the waiters have their answer; *ret_kick
 * when it was kept as revoking (the background thread's).
 */
static int
obtain(struct issuers *is, const struct icall *c, struct issued *got,
    long *ret_status, char *why, size_t whylen, struct held **ret_undo,
    bool *ret_kick)
{
	const char *kind = cfg_str(c->cfg, "kind");
	int64_t now = (int64_t)time(NULL), id = 0;
	struct issued_row row;
	struct held *h;
	int r;

	*ret_undo = NULL;
	*ret_kick = false;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return -ENOMEM;
	snprintf(h->job, sizeof(h->job), "%s", c->job);
	snprintf(h->secret, sizeof(h->secret), "%s", c->secret);
	snprintf(h->kind, sizeof(h->kind), "%s", kind);
	snprintf(h->issuer, sizeof(h->issuer), "%s", issuers_issuer(c->cfg));
	h->version = c->version;
	r = strcmp(kind, ISSUER_OAUTH) == 0
	    ? obtain_oauth(is, c->cfg, h, ret_status, why, whylen)
	    : obtain_github(is, c->cfg, h, ret_status, why, whylen);
	if (r < 0) {
		atomic_fetch_add(&is->issue_failed, 1);
		/* A credential obtained but not kept is ended. */
		if (h->value != NULL && h->revoke_url != NULL)
			*ret_undo = h;
		else
			held_free(h);
		return r;
	}
	atomic_fetch_add(&is->issued, 1);
	h->refresh_at = refresh_at(now, h->expires);
	/* Under the lock, so that a revoke here either sees the row or
	 * left its tombstone first. */
	r = row_seal(is, h, &row);
	if (r == 0) {
		pthread_mutex_lock(&is->lock);
		row.revoking = tombstoned(is, c->job);
		r = is->st.put(is->st.arg, &row, &id);
		if (r == 0 && row.revoking)
			r = -ESTALE;
		pthread_mutex_unlock(&is->lock);
		free(row.sealed);
	}
	if (r == 0) {
		give(h, got, true);
		held_free(h);
		return 0;
	}
	snprintf(why, whylen, "%s",
	    r == -ESTALE       ? "the job was revoked meanwhile"
		: r == -ENOSPC ? "the broker holds too many credentials"
			       : "the broker could not record the credential");
	if (r == -ESTALE) {
		*ret_kick = true; /* the row is kept as revoking */
		held_free(h);
	} else
		*ret_undo = h;
	return r == -ESTALE || r == -ENOSPC ? r : -EIO;
}

/* Ends a call that runs no more, its waiters taken. Under the lock. */
static void
call_drop(struct icall *c)
{
	wipe_json(c->cfg);
	json_decref(c->cfg);
	memset(c, 0, sizeof(*c));
}

/* Unlists c's waiters: the list. Under the lock. */
static struct issuers_wait *
call_take_waiters(struct issuers *is, struct icall *c)
{
	struct issuers_wait *ws = c->waiters;

	for (struct issuers_wait *w = ws; w != NULL; w = w->next)
		is->waiting--;
	c->waiters = NULL;
	return ws;
}

/* Answers each waiter of ws with r (and why): not under the lock. */
static void
answer(struct issuers_wait *ws, int r, const struct issued *got, long status,
    const char *why)
{
	bool first = true;

	while (ws != NULL) {
		struct issuers_wait *w = ws;

		ws = w->next;
		w->next = NULL;
		w->result = r;
		w->status = status;
		snprintf(w->why, sizeof(w->why), "%s", why);
		if (r == 0) {
			w->got = *got;
			/* One release tells of a new credential. */
			w->got.fresh = got->fresh && first;
			first = false;
		} else
			OPENSSL_cleanse(&w->got, sizeof(w->got));
		w->done(w);
	}
}

/* A worker's call: the credential held meanwhile, or the issuer's; then
 * every release waiting on it is answered. */
static void
run_call(struct issuers *is, struct icall *c)
{
	struct issued *got = calloc(1, sizeof(*got));
	char why[ISSUER_WHY_MAX] = "";
	struct held *undo = NULL;
	struct issuers_wait *ws;
	bool kick_after = false, gone;
	long status = 0;
	int r;

	if (got == NULL)
		r = -ENOMEM;
	else if (give_held(is, c->job, c->secret, c->version, got) == 0)
		r = 0; /* obtained meanwhile: by a call just ended, or
			* another broker */
	else {
		pthread_mutex_lock(&is->lock);
		gone = tombstoned(is, c->job);
		pthread_mutex_unlock(&is->lock);
		if (gone) {
			snprintf(why, sizeof(why), "the job is revoked");
			r = -ESTALE;
		} else
			r = obtain(is, c, got, &status, why, sizeof(why), &undo,
			    &kick_after);
	}
	pthread_mutex_lock(&is->lock);
	ws = call_take_waiters(is, c);
	/* Nobody is left to tell of a new credential: told here, so that
	 * each one obtained is audited. */
	json_t *issued = r == 0 && got->fresh && ws == NULL
	    ? json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:s}", "job", c->job,
		  "secret", c->secret, "version", (json_int_t)c->version,
		  "kind", cfg_str(c->cfg, "kind"), "issuer",
		  issuers_issuer(c->cfg), "expires", (json_int_t)got->expires,
		  "actor", "broker")
	    : NULL;
	call_drop(c);
	is->running--;
	pthread_cond_broadcast(&is->queued); /* the job may run another */
	pthread_mutex_unlock(&is->lock);
	answer(ws, r, got, status, why);
	if (issued != NULL && is->audit != NULL)
		is->audit(is->audit_arg, "upstream_issued", issued);
	else
		json_decref(issued);
	if (got != NULL) {
		OPENSSL_cleanse(got, sizeof(*got));
		free(got);
	}
	if (undo != NULL) {
		bool retry;
		json_decref(revoke_one(is, undo, ISSUER_CALL_MS, NULL, &retry));
		held_free(undo);
	}
	if (kick_after)
		kick(is);
}

/* How many of job's calls run now. Under the lock. */
static unsigned
job_running(const struct issuers *is, const char *job)
{
	unsigned n = 0;

	for (size_t i = 0; i < CALLS_MAX; i++)
		n += is->calls[i].used && is->calls[i].running &&
		    strcmp(is->calls[i].job, job) == 0;
	return n;
}

/* The oldest queued call with waiters whose job may run one more, or
 * NULL; queued calls whose waiters all left are dropped. Under the
 * lock. */
static struct icall *
call_next(struct issuers *is)
{
	struct icall *best = NULL;

	for (size_t i = 0; i < CALLS_MAX; i++) {
		struct icall *c = &is->calls[i];

		if (!c->used || c->running)
			continue;
		if (c->waiters == NULL) {
			call_drop(c);
			continue;
		}
		if ((best == NULL || c->seq < best->seq) &&
		    job_running(is, c->job) < ISSUER_JOB_CALLS)
			best = c;
	}
	return best;
}

static void *
call_main(void *arg)
{
	struct issuers *is = arg;
	struct icall *c = NULL;

	for (;;) {
		pthread_mutex_lock(&is->lock);
		while (!is->stopping && (c = call_next(is)) == NULL)
			pthread_cond_wait(&is->queued, &is->lock);
		if (is->stopping) {
			pthread_mutex_unlock(&is->lock);
			return NULL;
		}
		c->running = true;
		is->running++;
		pthread_mutex_unlock(&is->lock);
		run_call(is, c);
	}
}

/* Answers the waiters past their deadline, as they pass. */
static void *
timer_main(void *arg)
{
	struct issuers *is = arg;

	pthread_mutex_lock(&is->lock);
	while (!is->stopping) {
		int64_t now = monotonic_ms(), next = now + 1000;
		struct issuers_wait *late = NULL;

		for (size_t i = 0; i < CALLS_MAX; i++) {
			struct icall *c = &is->calls[i];

			for (struct issuers_wait **p = &c->waiters;
			     c->used && *p != NULL;) {
				struct issuers_wait *w = *p;

				if (w->deadline > now) {
					if (w->deadline < next)
						next = w->deadline;
					p = &w->next;
					continue;
				}
				*p = w->next;
				is->waiting--;
				/* Nobody else sees w now. */
				snprintf(w->why, sizeof(w->why),
				    c->running
					? "no answer from the issuer in %d ms"
					: "the broker's calls to issuers were "
					  "all taken for %d ms",
				    ISSUER_WAIT_MS);
				w->next = late;
				late = w;
			}
			/* Nobody waits for it: it is not made. */
			if (c->used && !c->running && c->waiters == NULL)
				call_drop(c);
		}
		if (late == NULL) {
			(void)cond_wait_until(&is->tick, &is->lock, next);
			continue;
		}
		pthread_mutex_unlock(&is->lock);
		while (late != NULL) {
			struct issuers_wait *w = late;

			late = w->next;
			w->next = NULL;
			w->result = -ETIMEDOUT;
			w->status = 0;
			OPENSSL_cleanse(&w->got, sizeof(w->got));
			atomic_fetch_add(&is->releases_timed_out, 1);
			w->done(w);
		}
		pthread_mutex_lock(&is->lock);
	}
	pthread_mutex_unlock(&is->lock);
	return NULL;
}

int
issuers_release_queue(struct issuers *is, const char *job, const char *secret,
    int64_t version, const json_t *cfg, struct issuers_wait *w)
{
	struct icall *c = NULL, *free_slot = NULL;
	json_t *copy;
	unsigned of_job = 0;
	int r = 0;

	w->why[0] = '\0';
	w->next = NULL;
	w->result = 0;
	w->status = 0;
	if (strlen(job) >= ID_MAX || strlen(secret) >= ID_MAX ||
	    cfg_str(cfg, "kind") == NULL || issuers_issuer(cfg) == NULL) {
		snprintf(w->why, sizeof(w->why),
		    "the secret's configuration is broken");
		return -EINVAL;
	}
	copy = json_deep_copy(cfg);
	pthread_mutex_lock(&is->lock);
	for (size_t i = 0; i < CALLS_MAX; i++) {
		struct icall *k = &is->calls[i];

		if (!k->used) {
			if (free_slot == NULL)
				free_slot = k;
			continue;
		}
		if (strcmp(k->job, job) != 0)
			continue;
		for (const struct issuers_wait *x = k->waiters; x != NULL;
		     x = x->next)
			of_job++;
		if (strcmp(k->secret, secret) == 0 && k->version == version)
			c = k;
	}
	if (is->releases_stopped || is->stopping) {
		snprintf(w->why, sizeof(w->why), "the broker is stopping");
		r = -ESHUTDOWN;
	} else if (is->waiting >= ISSUER_WAITERS_MAX) {
		snprintf(w->why, sizeof(w->why),
		    "%d releases wait for issuers already; retry later",
		    ISSUER_WAITERS_MAX);
		r = -EBUSY;
	} else if (of_job >= ISSUER_JOB_WAITERS_MAX) {
		snprintf(w->why, sizeof(w->why),
		    "%d releases of job %s wait for issuers already; retry "
		    "later",
		    ISSUER_JOB_WAITERS_MAX, job);
		r = -EBUSY;
	} else if (c == NULL && free_slot == NULL) {
		/* Not reached: a call queued has a waiter, and CALLS_MAX
		 * leaves room for every worker's. */
		snprintf(w->why, sizeof(w->why),
		    "every call to issuers is taken; retry later");
		r = -EBUSY;
	} else if (c == NULL && copy == NULL) {
		snprintf(w->why, sizeof(w->why), "out of memory");
		r = -ENOMEM;
	} else {
		/* A call already asked for (queued or running): its answer
		 * is this release's too. */
		if (c == NULL) {
			c = free_slot;
			c->used = true;
			c->seq = ++is->call_seq;
			snprintf(c->job, sizeof(c->job), "%s", job);
			snprintf(c->secret, sizeof(c->secret), "%s", secret);
			c->version = version;
			c->cfg = copy;
			copy = NULL;
			pthread_cond_broadcast(&is->queued);
		}
		w->deadline = monotonic_ms() + ISSUER_WAIT_MS;
		w->next = c->waiters;
		c->waiters = w;
		is->waiting++;
		pthread_cond_signal(&is->tick);
	}
	if (r == -EBUSY)
		atomic_fetch_add(&is->releases_refused, 1);
	pthread_mutex_unlock(&is->lock);
	if (copy != NULL) {
		wipe_json(copy);
		json_decref(copy);
	}
	return r;
}

void
issuers_stop_releases(struct issuers *is)
{
	struct issuers_wait *all = NULL;

	pthread_mutex_lock(&is->lock);
	is->releases_stopped = true;
	for (size_t i = 0; i < CALLS_MAX; i++) {
		struct icall *c = &is->calls[i];
		struct issuers_wait *ws;

		if (!c->used)
			continue;
		ws = call_take_waiters(is, c);
		while (ws != NULL) {
			struct issuers_wait *w = ws;
			ws = w->next;
			w->next = all;
			all = w;
		}
		if (!c->running)
			call_drop(c);
	}
	pthread_mutex_unlock(&is->lock);
	answer(all, -ESHUTDOWN, NULL, 0, "the broker is stopping");
}

/* The waiter of issuers_release: a thread that waits. */
struct sync_wait {
	struct issuers_wait w;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done;
};

static void
sync_done(struct issuers_wait *w)
{
	struct sync_wait *s = w->arg;

	pthread_mutex_lock(&s->m);
	s->done = true;
	pthread_cond_signal(&s->c);
	pthread_mutex_unlock(&s->m);
}

int
issuers_release(struct issuers *is, const char *job, const char *secret,
    int64_t version, const json_t *cfg, struct issued *ret, long *ret_status,
    char *why, size_t whylen)
{
	struct sync_wait *s;
	int r;

	*ret_status = 0;
	r = issuers_release_held(is, job, secret, version, cfg, ret, why,
	    whylen);
	if (r != -EAGAIN)
		return r;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	pthread_mutex_init(&s->m, NULL);
	pthread_cond_init(&s->c, NULL);
	s->w.done = sync_done;
	s->w.arg = s;
	r = issuers_release_queue(is, job, secret, version, cfg, &s->w);
	if (r == 0) {
		pthread_mutex_lock(&s->m);
		while (!s->done)
			pthread_cond_wait(&s->c, &s->m);
		pthread_mutex_unlock(&s->m);
		r = s->w.result;
		*ret_status = s->w.status;
		if (r == 0)
			*ret = s->w.got;
	}
	snprintf(why, whylen, "%s", s->w.why);
	if (r < 0)
		OPENSSL_cleanse(ret, sizeof(*ret));
	OPENSSL_cleanse(&s->w.got, sizeof(s->w.got));
	pthread_cond_destroy(&s->c);
	pthread_mutex_destroy(&s->m);
	free(s);
	return r;
}

/* The wait before attempt + 1, after attempt failed. */
static int64_t
backoff(int attempt)
{
	int64_t d = ISSUER_RETRY_MIN_S;

	for (int i = 1; i < attempt && d < ISSUER_RETRY_MAX_S; i++)
		d *= 2;
	return d < ISSUER_RETRY_MAX_S ? d : ISSUER_RETRY_MAX_S;
}

/* Revokes the claimed row within timeout_ms (<= 0: not tried, untried
 * says why) and settles it (gone, or due again after its backoff): the
 * result object, or NULL. */
static json_t *
settle(struct issuers *is, const struct issued_row *row, long timeout_ms,
    const char *untried)
{
	struct held *h = row_open(is, row);
	int64_t now = (int64_t)time(NULL);
	bool retry = true;
	json_t *out;

	if (h == NULL) {
		out = json_pack("{s:s, s:I, s:b, s:s}", "secret", row->secret,
		    "version", (json_int_t)row->version, "ok", 0, "error",
		    "the held credential does not open with this broker's "
		    "secrets.aead");
		atomic_fetch_add(&is->revoke_failed, 1);
		retry = row->expires == 0 || row->expires > now;
	} else {
		out = revoke_one(is, h, timeout_ms, untried, &retry);
		held_free(h);
	}
	if (out != NULL)
		json_object_set_new(out, "attempt",
		    json_integer(row->attempts));
	/* Nothing left to revoke once it expired. */
	if (retry && row->expires != 0 && row->expires <= now)
		retry = false;
	if (retry) {
		/* Not tried (timeout_ms <= 0): due again at once. */
		int64_t d = timeout_ms <= 0 ? 0 : backoff(row->attempts);
		(void)is->st.retry(is->st.arg, row->id, d, row->attempts);
		if (out != NULL) {
			json_object_set_new(out, "pending", json_true());
			json_object_set_new(out, "retry_in", json_integer(d));
		}
	} else
		(void)is->st.done(is->st.arg, row->id);
	return out;
}

/* Settles rows[0..n) untried (why), each appended to list. */
static void
settle_untried(struct issuers *is, struct issued_row *rows, size_t n,
    json_t *list, const char *why)
{
	for (size_t i = 0; i < n; i++) {
		json_t *one = settle(is, &rows[i], 0, why);
		if (one != NULL && list != NULL)
			json_array_append_new(list, one);
		else
			json_decref(one);
	}
}

static const char untried_stopping[] =
    "not tried here: the broker is stopping; the background revocations "
    "(of the next start, or another broker) try it";

/* A revoke worker's: w's rows tried in turn within its deadline (what
 * its time does not reach is left due at once), then w answered. */
static void
revoke_run(struct issuers *is, struct issuers_revoke *w)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		long left = (long)(w->deadline - monotonic_ms());
		bool stop;

		pthread_mutex_lock(&is->lock);
		stop = is->revokes_stopped;
		pthread_mutex_unlock(&is->lock);
		if (stop)
			break;
		json_t *one = settle(is, &w->rows[i],
		    left < ISSUER_CALL_MS ? left : ISSUER_CALL_MS,
		    "not tried: the revocations' time ran out; the broker's "
		    "background revocations try it now");
		if (one != NULL && w->list != NULL)
			json_array_append_new(w->list, one);
		else
			json_decref(one);
	}
	settle_untried(is, w->rows + i, w->n - i, w->list, untried_stopping);
	kick(is); /* what is pending now, untried ones due at once */
	issued_rows_free(w->rows, w->n);
	w->rows = NULL;
	w->n = 0;
	pthread_mutex_lock(&is->lock);
	is->revokes--;
	pthread_mutex_unlock(&is->lock);
	w->done(w);
}

static void *
revoke_main(void *arg)
{
	struct issuers *is = arg;

	for (;;) {
		struct issuers_revoke *w;

		pthread_mutex_lock(&is->lock);
		while (!is->stopping && is->rq_head == NULL)
			pthread_cond_wait(&is->rqueued, &is->lock);
		if ((w = is->rq_head) == NULL) { /* stopping */
			pthread_mutex_unlock(&is->lock);
			return NULL;
		}
		if ((is->rq_head = w->next) == NULL)
			is->rq_tail = NULL;
		w->next = NULL;
		pthread_mutex_unlock(&is->lock);
		revoke_run(is, w);
	}
}

int
issuers_revoke_queue(struct issuers *is, const char *job,
    struct issuers_revoke *w)
{
	bool now = false, stopping = false;

	w->next = NULL;
	w->rows = NULL;
	w->n = 0;
	w->deadline = monotonic_ms() + ISSUER_REVOKE_BUDGET_MS;
	w->list = json_array();
	pthread_mutex_lock(&is->lock);
	if (!tombstoned(is, job)) {
		snprintf(is->tomb[is->tomb_next], ID_MAX, "%s", job);
		is->tomb_next = (is->tomb_next + 1) % TOMBSTONES;
	}
	pthread_mutex_unlock(&is->lock);
	if (is->st.claim(is->st.arg, job, ISSUER_CLAIM_S, ISSUED_PER_JOB_MAX,
		&w->rows, &w->n) < 0) {
		kick(is);
		return 1;
	}
	if (w->n == 0) {
		issued_rows_free(w->rows, 0);
		w->rows = NULL;
		return 1;
	}
	pthread_mutex_lock(&is->lock);
	stopping = is->revokes_stopped || is->stopping;
	if (stopping || is->revokes >= ISSUER_REVOKES_MAX)
		now = true;
	else {
		is->revokes++;
		if (is->rq_tail != NULL)
			is->rq_tail->next = w;
		else
			is->rq_head = w;
		is->rq_tail = w;
		pthread_cond_signal(&is->rqueued);
	}
	pthread_mutex_unlock(&is->lock);
	if (!now)
		return 0;
	/* None tried here: the background thread's, at once. */
	settle_untried(is, w->rows, w->n, w->list,
	    stopping ? untried_stopping
		     : "not tried here: too many revokes wait for issuers; the "
		       "broker's background revocations try it now");
	issued_rows_free(w->rows, w->n);
	w->rows = NULL;
	w->n = 0;
	kick(is);
	return 1;
}

void
issuers_stop_revokes(struct issuers *is)
{
	struct issuers_revoke *all;

	pthread_mutex_lock(&is->lock);
	is->revokes_stopped = true;
	all = is->rq_head;
	is->rq_head = is->rq_tail = NULL;
	pthread_mutex_unlock(&is->lock);
	while (all != NULL) {
		struct issuers_revoke *w = all;

		all = w->next;
		w->next = NULL;
		settle_untried(is, w->rows, w->n, w->list, untried_stopping);
		issued_rows_free(w->rows, w->n);
		w->rows = NULL;
		w->n = 0;
		pthread_mutex_lock(&is->lock);
		is->revokes--;
		pthread_mutex_unlock(&is->lock);
		w->done(w);
	}
}

/* The waiter of issuers_revoke_job: a thread that waits. */
struct sync_revoke {
	struct issuers_revoke w;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done;
};

static void
sync_revoked(struct issuers_revoke *w)
{
	struct sync_revoke *s = w->arg;

	pthread_mutex_lock(&s->m);
	s->done = true;
	pthread_cond_signal(&s->c);
	pthread_mutex_unlock(&s->m);
}

json_t *
issuers_revoke_job(struct issuers *is, const char *job, bool later)
{
	struct issued_row *rows = NULL;
	struct sync_revoke *s;
	size_t n = 0;
	json_t *out;

	if (later) {
		pthread_mutex_lock(&is->lock);
		if (!tombstoned(is, job)) {
			snprintf(is->tomb[is->tomb_next], ID_MAX, "%s", job);
			is->tomb_next = (is->tomb_next + 1) % TOMBSTONES;
		}
		pthread_mutex_unlock(&is->lock);
		/* Turned revoking now (durable), revoked by the thread. */
		if (is->st.claim(is->st.arg, job, ISSUER_CLAIM_S, 0, &rows,
			&n) == 0)
			issued_rows_free(rows, n);
		kick(is);
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	pthread_mutex_init(&s->m, NULL);
	pthread_cond_init(&s->c, NULL);
	s->w.done = sync_revoked;
	s->w.arg = s;
	if (issuers_revoke_queue(is, job, &s->w) == 0) {
		pthread_mutex_lock(&s->m);
		while (!s->done)
			pthread_cond_wait(&s->c, &s->m);
		pthread_mutex_unlock(&s->m);
	}
	out = s->w.list;
	pthread_cond_destroy(&s->c);
	pthread_mutex_destroy(&s->m);
	free(s);
	return out;
}

int
issuers_retry_due(struct issuers *is)
{
	struct issued_row *rows = NULL;
	size_t n = 0;

	if (is->st.claim(is->st.arg, NULL, ISSUER_CLAIM_S, RETRY_BATCH, &rows,
		&n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		/* A broker stopping waits for one call at most: the rest
		 * are given back untried, due at once, for the next start
		 * (or another broker). */
		if (atomic_load(&is->stopping)) {
			(void)is->st.retry(is->st.arg, rows[i].id, 0,
			    rows[i].attempts - 1);
			continue;
		}
		json_t *one = settle(is, &rows[i], ISSUER_CALL_MS, NULL);
		if (one == NULL)
			continue;
		bool ok = json_is_true(json_object_get(one, "ok"));
		const char *ev = json_is_true(json_object_get(one, "expired"))
		    ? "upstream_expired"
		    : ok ? "upstream_revoked"
			 : "upstream_revoke_failed";
		json_object_set_new(one, "job", json_string(rows[i].job));
		json_object_set_new(one, "actor", json_string("broker"));
		if (is->audit != NULL)
			is->audit(is->audit_arg, ev, one);
		else
			json_decref(one);
	}
	issued_rows_free(rows, n);
	return (int)n;
}

int64_t
issuers_pending(struct issuers *is)
{
	int64_t n = 0;
	int r = is->st.pending(is->st.arg, &n);

	return r < 0 ? r : n;
}

static void *
worker_main(void *arg)
{
	struct issuers *is = arg;

	for (;;) {
		pthread_mutex_lock(&is->lock);
		if (!is->stopping && !is->kicked)
			(void)cond_wait_until(&is->wake, &is->lock,
			    monotonic_ms() + 1000);
		bool stop = is->stopping;
		is->kicked = false;
		pthread_mutex_unlock(&is->lock);
		if (stop)
			return NULL;
		/* A full batch: there may be more due. */
		while (issuers_retry_due(is) == RETRY_BATCH && !is->stopping)
			;
	}
}
