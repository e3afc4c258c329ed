/*
 * The broker's store on sqlite3. One writer thread owns the write
 * connection and commits whatever writes have queued up as one
 * transaction (each write in a savepoint of its own, so one failure does
 * not fail the others): many callers share one fsync, and the audit chain
 * has exactly one appender. Reads use a pool of connections; WAL lets them
 * run beside the writer and see each commit as soon as it is made.
 */
#include "store.h"

#include "log.h"
#include "store_pg.h"
#include "util.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define POOL_MAX 64
#define GENESIS                                                                \
	"0000000000000000000000000000000000000000000000000000000000000000"

/*
 * The rule bindings (store.h) of the stored manifest versions: every
 * egress rule with an inject gives (its secret, its host). ?1 a
 * manifest's name, ?2 its version, ?3 a secret: each NULL for any. The
 * canonical text the manifests are stored as is JSON that sqlite reads.
 */
#define BIND_RULES_SQL                                                         \
	"INSERT OR IGNORE INTO bindings (secret, kind, value, origin, "        \
	"created) SELECT json_extract(r.value, '$.inject.secret'), 'host', "   \
	"json_extract(r.value, '$.host'), 'rule', min(m.created) FROM "        \
	"manifests m, json_each(m.body, '$.egress') r WHERE "                  \
	"json_type(r.value, '$.inject.secret') = 'text' AND "                  \
	"json_type(r.value, '$.host') = 'text' AND (?1 IS NULL OR m.name = "   \
	"?1) AND (?2 IS NULL OR m.version = ?2) AND (?3 IS NULL OR "           \
	"json_extract(r.value, '$.inject.secret') = ?3) GROUP BY 1, 3"

enum stmt_id {
	ST_MANIFEST_CUR,
	ST_MANIFEST_VER,
	ST_MANIFEST_INS,
	ST_JOB_GET,
	ST_JOB_INS,
	ST_JOB_TOKENS,
	ST_JOB_LEASE,
	ST_JOB_REVOKE,
	ST_JOB_LAPSED,
	ST_JOB_COUNT_TOKEN,
	ST_TOKENS_REVOKE_JOB,
	ST_TOKEN_INS,
	ST_TOKEN_LOOKUP,
	ST_TOKEN_REVOKE,
	ST_REVOCATION_INS,
	ST_REVOCATION_OF_JOB,
	ST_REVOCATIONS_AFTER,
	ST_REVOCATION_HEAD,
	ST_AUDIT_INS,
	ST_AUDIT_HEAD,
	ST_AUDIT_AFTER,
	ST_AUDIT_AFTER_JOB,
	ST_AUDIT_ALL,
	ST_META_SET,
	ST_META_GET,
	ST_SECRET_CUR,
	ST_SECRET_INS,
	ST_SECRET_LIST,
	ST_SECRET_DEL,
	ST_SECRET_USED,
	ST_SECRET_HAS,
	ST_SECRET_VERSIONS,
	ST_SECRET_MANIFESTS,
	ST_MANIFEST_LIST,
	ST_BIND_RULES,
	ST_BIND_INS,
	ST_BIND_DEL_DECLARED,
	ST_BIND_DEL_SECRET,
	ST_BIND_LIST,
	ST_BIND_EPOCH_BUMP,
	ST_MAX,
};

static const char *const stmt_sql[ST_MAX] = {
	[ST_MANIFEST_CUR] = "SELECT version, sha256, body, created FROM "
			    "manifests WHERE name = ? ORDER BY version DESC "
			    "LIMIT 1",
	[ST_MANIFEST_VER] = "SELECT version, sha256, body, created FROM "
			    "manifests WHERE name = ? AND version = ?",
	[ST_MANIFEST_INS] = "INSERT INTO manifests (name, version, sha256, "
			    "body, created) VALUES (?, ?, ?, ?, ?)",
	[ST_JOB_GET] = "SELECT id, manifest, manifest_version, state, created, "
		       "deadline, lease_expires, stop_reason, tokens_revoked, "
		       "tokens_minted, revoked_at FROM jobs WHERE id = ?",
	[ST_JOB_INS] = "INSERT INTO jobs (id, manifest, manifest_version, "
		       "state, created, deadline, lease_expires) VALUES (?, ?, "
		       "?, 'running', ?, ?, ?)",
	[ST_JOB_TOKENS] = "SELECT id, capability, params, aud, iat, exp, "
			  "state FROM tokens WHERE job = ? ORDER BY iat, id",
	[ST_JOB_LEASE] = "UPDATE jobs SET lease_expires = min(?, deadline) "
			 "WHERE id = ? AND state = 'running'",
	[ST_JOB_REVOKE] = "UPDATE jobs SET state = 'revoked', stop_reason = "
			  "?, tokens_revoked = ?, revoked_at = ? WHERE id = ?",
	[ST_JOB_LAPSED] = "SELECT id, CASE WHEN deadline <= ?1 THEN "
			  "'deadline' ELSE 'lease_expired' END FROM jobs "
			  "WHERE state = 'running' AND (lease_expires <= ?1 "
			  "OR deadline <= ?1) LIMIT ?2",
	[ST_JOB_COUNT_TOKEN] = "UPDATE jobs SET tokens_minted = tokens_minted "
			       "+ 1 WHERE id = ?",
	[ST_TOKENS_REVOKE_JOB] = "UPDATE tokens SET state = 'revoked' WHERE "
				 "job = ? AND state = 'active'",
	[ST_TOKEN_INS] = "INSERT INTO tokens (hash, id, job, capability, "
			 "params, aud, iat, exp, state) VALUES (?, ?, ?, ?, ?, "
			 "?, ?, ?, 'active')",
	[ST_TOKEN_LOOKUP] = "SELECT t.id, t.job, t.capability, t.params, "
			    "t.aud, t.iat, t.exp, t.state, j.state FROM tokens "
			    "t JOIN jobs j ON j.id = t.job WHERE t.hash = ?",
	[ST_TOKEN_REVOKE] = "UPDATE tokens SET state = 'revoked' WHERE hash = "
			    "? AND state = 'active' RETURNING id, job",
	[ST_REVOCATION_INS] = "INSERT INTO revocations (job, token, at) "
			      "VALUES (?, ?, ?)",
	[ST_REVOCATION_OF_JOB] = "SELECT max(seq) FROM revocations WHERE job "
				 "= ? AND token IS NULL",
	[ST_REVOCATIONS_AFTER] = "SELECT seq, job, token FROM revocations "
				 "WHERE seq > ? ORDER BY seq LIMIT ?",
	[ST_REVOCATION_HEAD] = "SELECT coalesce(max(seq), 0) FROM revocations",
	[ST_AUDIT_INS] = "INSERT INTO audit (seq, ts, event, job, actor, "
			 "detail, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_AUDIT_HEAD] = "SELECT seq, hash FROM audit ORDER BY seq DESC "
			  "LIMIT 1",
	[ST_AUDIT_AFTER] = "SELECT seq, ts, event, job, actor, detail, prev, "
			   "hash FROM audit WHERE seq > ? ORDER BY seq LIMIT ?",
	[ST_AUDIT_AFTER_JOB] = "SELECT seq, ts, event, job, actor, detail, "
			       "prev, hash FROM audit WHERE seq > ? AND job = "
			       "? ORDER BY seq LIMIT ?",
	[ST_AUDIT_ALL] = "SELECT seq, ts, event, job, actor, detail, prev, "
			 "hash FROM audit ORDER BY seq",
	[ST_META_SET] = "INSERT INTO meta (key, value) VALUES (?, ?) ON "
			"CONFLICT (key) DO UPDATE SET value = excluded.value",
	[ST_META_GET] = "SELECT value FROM meta WHERE key = ?",
	[ST_SECRET_CUR] = "SELECT name, version, created, last_used, sealed "
			  "FROM secrets WHERE name = ? ORDER BY version DESC "
			  "LIMIT 1",
	[ST_SECRET_INS] = "INSERT INTO secrets (name, version, sealed, "
			  "created) VALUES (?, ?, ?, ?)",
	[ST_SECRET_LIST] = "SELECT name, max(version), max(created), "
			   "max(last_used) FROM secrets GROUP BY name ORDER "
			   "BY name",
	[ST_SECRET_DEL] = "DELETE FROM secrets WHERE name = ?",
	[ST_SECRET_USED] = "UPDATE secrets SET last_used = ? WHERE name = ? "
			   "AND version = ?",
	[ST_SECRET_HAS] = "SELECT 1 FROM secrets WHERE name = ? AND version = "
			  "?",
	[ST_SECRET_VERSIONS] = "SELECT version, sealed FROM secrets WHERE "
			       "name = ? ORDER BY version DESC LIMIT ?",
	/* Candidates: the canonical text is compact, so a rule naming the
	 * secret holds this exact string; the caller parses to be sure. */
	[ST_SECRET_MANIFESTS] = "SELECT m.name, m.body FROM manifests m WHERE "
				"m.version = (SELECT max(version) FROM "
				"manifests WHERE name = m.name) AND "
				"instr(m.body, ?) > 0 ORDER BY m.name",
	[ST_MANIFEST_LIST] = "SELECT m.name, m.version, m.sha256, (SELECT "
			     "min(created) FROM manifests WHERE name = "
			     "m.name), m.created FROM manifests m WHERE "
			     "m.name > ? AND m.version = (SELECT max(version) "
			     "FROM manifests WHERE name = m.name) ORDER BY "
			     "m.name LIMIT ?",
	[ST_BIND_RULES] = BIND_RULES_SQL,
	[ST_BIND_INS] = "INSERT OR IGNORE INTO bindings (secret, kind, value, "
			"origin, created) VALUES (?, ?, ?, ?, ?)",
	[ST_BIND_DEL_DECLARED] = "DELETE FROM bindings WHERE secret = ? AND "
				 "origin = 'declared'",
	/* A deleted secret keeps its seen and declared places (redteam3
	 * #8); its rule hosts come back from the manifests at a new PUT. */
	[ST_BIND_DEL_SECRET] = "DELETE FROM bindings WHERE secret = ? AND "
			       "origin = 'rule'",
	[ST_BIND_LIST] = "SELECT b.secret, b.kind, b.value, b.origin FROM "
			 "bindings b WHERE EXISTS (SELECT 1 FROM secrets s "
			 "WHERE s.name = b.secret) ORDER BY b.secret, b.kind, "
			 "b.value, b.origin",
	[ST_BIND_EPOCH_BUMP] = "INSERT INTO meta (key, value) VALUES "
			       "('bindings_epoch', '1') ON CONFLICT (key) DO "
			       "UPDATE SET value = CAST(value AS INTEGER) + 1",
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS manifests ("
    " name TEXT NOT NULL, version INTEGER NOT NULL, sha256 TEXT NOT NULL,"
    " body TEXT NOT NULL, created INTEGER NOT NULL,"
    " PRIMARY KEY (name, version)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS jobs ("
    " id TEXT PRIMARY KEY, manifest TEXT NOT NULL,"
    " manifest_version INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('running', 'revoked')),"
    " created INTEGER NOT NULL, deadline INTEGER NOT NULL,"
    " lease_expires INTEGER NOT NULL, stop_reason TEXT NOT NULL DEFAULT '',"
    " tokens_revoked INTEGER NOT NULL DEFAULT 0, revoked_at INTEGER,"
    " tokens_minted INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS jobs_running ON jobs (state, lease_expires);"
    "CREATE TABLE IF NOT EXISTS tokens ("
    " hash BLOB PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
    " job TEXT NOT NULL REFERENCES jobs (id), capability TEXT NOT NULL,"
    " params TEXT NOT NULL, aud TEXT NOT NULL, iat INTEGER NOT NULL,"
    " exp INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('active', 'revoked')))"
    " WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS tokens_job ON tokens (job);"
    /* token: NULL for the job's revocation, a token's id for its own. */
    "CREATE TABLE IF NOT EXISTS revocations ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL,"
    " at INTEGER NOT NULL, token TEXT);"
    "CREATE TABLE IF NOT EXISTS audit ("
    " seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, event TEXT NOT NULL,"
    " job TEXT, actor TEXT, detail TEXT NOT NULL, prev TEXT NOT NULL,"
    " hash TEXT NOT NULL);"
    "CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit"
    " BEGIN SELECT RAISE(ABORT, 'the audit is append-only'); END;"
    "CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit"
    " BEGIN SELECT RAISE(ABORT, 'the audit is append-only'); END;"
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)"
    " WITHOUT ROWID;"
    /* Sealed values only (secrets.h): the key is never in the database. */
    "CREATE TABLE IF NOT EXISTS secrets ("
    " name TEXT NOT NULL, version INTEGER NOT NULL, sealed BLOB NOT NULL,"
    " created INTEGER NOT NULL, last_used INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (name, version)) WITHOUT ROWID;"
    /* Where each secret has been or will be sent (store.h): hosts
     * (lowercase, no port) and addrs (ip:port, [v6]:port). */
    "CREATE TABLE IF NOT EXISTS bindings ("
    " secret TEXT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('host', 'addr')),"
    " value TEXT NOT NULL,"
    " origin TEXT NOT NULL CHECK (origin IN ('rule', 'declared', 'seen')),"
    " created INTEGER NOT NULL,"
    " PRIMARY KEY (secret, kind, value, origin)) WITHOUT ROWID;"
    /* Each secret version's reflections, fleet-wide (store.h): made
     * anew at the version's PUT; burned_at set once. */
    "CREATE TABLE IF NOT EXISTS secret_reflections ("
    " secret TEXT NOT NULL, version INTEGER NOT NULL,"
    " budget INTEGER NOT NULL, reflections INTEGER NOT NULL DEFAULT 0,"
    " tripped INTEGER NOT NULL DEFAULT 0, burned_at INTEGER,"
    " burned_reason TEXT, burned_job TEXT,"
    " PRIMARY KEY (secret, version)) WITHOUT ROWID;"
    /* The values burned, by keyed digest, fleet-wide (store.h). */
    "CREATE TABLE IF NOT EXISTS burned_values ("
    " digest BLOB PRIMARY KEY, secret TEXT NOT NULL,"
    " version INTEGER NOT NULL, burned_at INTEGER NOT NULL) WITHOUT ROWID;";

struct conn {
	sqlite3 *db;
	sqlite3_stmt *st[ST_MAX];
};

struct op;
typedef int (*op_fn)(struct store *s, struct op *op);

struct op {
	op_fn fn;
	void *arg;
	int result;
	bool done;
	/* Asynchronous ops: called after the commit, then the op is freed. */
	store_done_fn on_done;
	void *done_arg;
	struct op *next;
};

struct store {
	struct store_pg *pg; /* not NULL: PostgreSQL, and nothing below */
	char *path;
	struct conn w; /* the writer thread's */
	pthread_t writer;
	bool writer_started;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct op *head, *tail;
	bool closing;
	/* The audit chain's head: written by the writer thread only. */
	int64_t audit_seq;
	char audit_hash[65];

	pthread_mutex_t pool_mu;
	struct conn *pool[POOL_MAX];
	size_t npool;
};

/* --- connections -------------------------------------------------------- */

static int
sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_CANTOPEN:
		return -EACCES;
	default:
		return -EIO;
	}
}

static int
conn_open(const char *path, struct conn *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	rc = sqlite3_open_v2(path, &c->db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	    NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close(c->db);
		c->db = NULL;
		return sqlite_errno(rc);
	}
	sqlite3_busy_timeout(c->db, 10000);
	rc = sqlite3_exec(c->db,
	    "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
	    "PRAGMA foreign_keys = ON; PRAGMA trusted_schema = OFF;",
	    NULL, NULL, NULL);
	return sqlite_errno(rc);
}

static void
conn_close(struct conn *c)
{
	for (size_t i = 0; i < ST_MAX; i++)
		sqlite3_finalize(c->st[i]);
	sqlite3_close(c->db);
	memset(c, 0, sizeof(*c));
}

/* The statement, prepared once per connection and reset for reuse. */
static sqlite3_stmt *
stmt(struct conn *c, enum stmt_id id)
{
	if (c->st[id] == NULL) {
		if (sqlite3_prepare_v3(c->db, stmt_sql[id], -1,
			SQLITE_PREPARE_PERSISTENT, &c->st[id],
			NULL) != SQLITE_OK)
			return NULL;
	} else {
		sqlite3_reset(c->st[id]);
		sqlite3_clear_bindings(c->st[id]);
	}
	return c->st[id];
}

static struct conn *
reader_get(struct store *s)
{
	struct conn *c = NULL;

	pthread_mutex_lock(&s->pool_mu);
	if (s->npool > 0)
		c = s->pool[--s->npool];
	pthread_mutex_unlock(&s->pool_mu);
	if (c != NULL)
		return c;
	c = malloc(sizeof(*c));
	if (c == NULL || conn_open(s->path, c) < 0) {
		if (c != NULL)
			conn_close(c);
		free(c);
		return NULL;
	}
	return c;
}

static void
reader_put(struct store *s, struct conn *c)
{
	for (size_t i = 0; i < ST_MAX; i++)
		if (c->st[i] != NULL)
			sqlite3_reset(c->st[i]);
	pthread_mutex_lock(&s->pool_mu);
	if (s->npool < POOL_MAX) {
		s->pool[s->npool++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&s->pool_mu);
	if (c != NULL) {
		conn_close(c);
		free(c);
	}
}

/* A pooled reader and its statement id: the statement, or NULL (and no
 * reader held) when either cannot be had. */
static sqlite3_stmt *
reader_stmt(struct store *s, enum stmt_id id, struct conn **ret)
{
	struct conn *c = reader_get(s);
	sqlite3_stmt *st;

	if (c == NULL)
		return NULL;
	st = stmt(c, id);
	if (st == NULL) {
		reader_put(s, c);
		return NULL;
	}
	*ret = c;
	return st;
}

/* Steps the bound statement st of reader c, one row(st) per row, into a
 * new array; gives the reader back. 0 or -errno. */
static int
collect(struct store *s, struct conn *c, sqlite3_stmt *st,
    json_t *(*row)(sqlite3_stmt *), json_t **ret)
{
	json_t *out = json_array();
	int rc;

	/* A row lost (out of memory) fails the whole list: a feed page
	 * with a hole would skip a revocation. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (json_array_append_new(out, row(st)) < 0) {
			rc = SQLITE_NOMEM;
			break;
		}
	reader_put(s, c);
	if (rc != SQLITE_DONE) {
		json_decref(out);
		return sqlite_errno(rc);
	}
	*ret = out;
	return 0;
}

static void
copy_col(char *dst, size_t len, sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);

	snprintf(dst, len, "%s", v != NULL ? (const char *)v : "");
}

static char *
dup_col(sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);

	return strdup(v != NULL ? (const char *)v : "");
}

/* --- the audit chain ----------------------------------------------------- */

/* The record hash both engines chain with (store_pg.h). */
void
store_audit_hash(const char *prev, int64_t seq, const char *ts,
    const char *event, const char *job, const char *actor, const char *detail,
    char out[65])
{
	unsigned char md[32];
	unsigned int n = sizeof(md);
	char seqs[24];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const char *parts[] = { prev, seqs, ts, event, job ? job : "",
		actor ? actor : "", detail };

	snprintf(seqs, sizeof(seqs), "%lld", (long long)seq);
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]));
		EVP_DigestUpdate(ctx, "\n", 1);
	}
	EVP_DigestFinal_ex(ctx, md, &n);
	EVP_MD_CTX_free(ctx);
	for (size_t i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int
audit_load_head(struct store *s)
{
	sqlite3_stmt *st = stmt(&s->w, ST_AUDIT_HEAD);
	int rc;

	if (st == NULL)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		s->audit_seq = sqlite3_column_int64(st, 0);
		copy_col(s->audit_hash, sizeof(s->audit_hash), st, 1);
	} else if (rc == SQLITE_DONE) {
		s->audit_seq = 0;
		snprintf(s->audit_hash, sizeof(s->audit_hash), "%s", GENESIS);
	} else
		return sqlite_errno(rc);
	sqlite3_reset(st);
	return 0;
}

/* Appends a record; in the writer thread, inside the op's savepoint. */
static int
audit_append(struct store *s, const char *event, const char *job,
    const char *actor, json_t *detail)
{
	char ts[40], hash[65], seqs[24];
	json_t *empty = detail == NULL ? json_object() : NULL;
	char *text = json_dumps(detail != NULL ? detail : empty,
	    JSON_COMPACT | JSON_SORT_KEYS);
	sqlite3_stmt *st;
	int64_t seq = s->audit_seq + 1;
	int rc;

	json_decref(empty);
	if (text == NULL)
		return -ENOMEM;
	log_timestamp(ts, sizeof(ts));
	store_audit_hash(s->audit_hash, seq, ts, event, job, actor, text, hash);
	st = stmt(&s->w, ST_AUDIT_INS);
	if (st == NULL) {
		free(text);
		return -EIO;
	}
	sqlite3_bind_int64(st, 1, seq);
	sqlite3_bind_text(st, 2, ts, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, event, -1, SQLITE_STATIC);
	if (job != NULL)
		sqlite3_bind_text(st, 4, job, -1, SQLITE_STATIC);
	if (actor != NULL)
		sqlite3_bind_text(st, 5, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, text, -1, free);
	sqlite3_bind_text(st, 7, s->audit_hash, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 8, hash, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	/* The chain's length is kept beside it: a cut tail is seen too. */
	st = stmt(&s->w, ST_META_SET);
	snprintf(seqs, sizeof(seqs), "%lld", (long long)seq);
	sqlite3_bind_text(st, 1, "audit_head", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, seqs, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	s->audit_seq = seq;
	memcpy(s->audit_hash, hash, sizeof(hash));
	return 0;
}

/* --- the writer ---------------------------------------------------------- */

static int
exec(struct conn *c, const char *sql)
{
	return sqlite_errno(sqlite3_exec(c->db, sql, NULL, NULL, NULL));
}

static void
run_batch(struct store *s, struct op *batch)
{
	int r = exec(&s->w, "BEGIN IMMEDIATE");

	for (struct op *op = batch; op != NULL; op = op->next) {
		int64_t seq = s->audit_seq;
		char hash[65];

		if (r < 0) {
			op->result = r;
			continue;
		}
		memcpy(hash, s->audit_hash, sizeof(hash));
		op->result = exec(&s->w, "SAVEPOINT op");
		if (op->result == 0)
			op->result = op->fn(s, op);
		if (op->result < 0) {
			exec(&s->w, "ROLLBACK TO op");
			s->audit_seq = seq;
			memcpy(s->audit_hash, hash, sizeof(hash));
		}
		exec(&s->w, "RELEASE op");
	}
	if (r == 0 && (r = exec(&s->w, "COMMIT")) < 0) {
		/* Nothing of the batch is durable: every caller is told. */
		exec(&s->w, "ROLLBACK");
		for (struct op *op = batch; op != NULL; op = op->next)
			if (op->result == 0)
				op->result = r;
		audit_load_head(s);
	}
}

static void *
writer_main(void *arg)
{
	struct store *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct op *batch;

		while (s->head == NULL && !s->closing)
			pthread_cond_wait(&s->work, &s->mu);
		if (s->head == NULL)
			break;
		batch = s->head;
		s->head = s->tail = NULL;
		pthread_mutex_unlock(&s->mu);

		run_batch(s, batch);

		/* Asynchronous ops are answered and freed here; the others'
		 * callers wait on s->done, and their ops (on their stacks)
		 * stay valid while s->mu is held. */
		struct op *waiting = NULL;
		for (struct op *op = batch, *next; op != NULL; op = next) {
			next = op->next;
			if (op->on_done != NULL) {
				op->on_done(op->done_arg, op->result);
				free(op->arg);
				free(op);
			} else {
				op->next = waiting;
				waiting = op;
			}
		}
		pthread_mutex_lock(&s->mu);
		for (struct op *op = waiting; op != NULL; op = op->next)
			op->done = true;
		pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Queues fn for the writer and waits until its transaction committed. */
static int
store_write(struct store *s, op_fn fn, void *arg)
{
	struct op op = { .fn = fn, .arg = arg };

	pthread_mutex_lock(&s->mu);
	if (s->closing) {
		pthread_mutex_unlock(&s->mu);
		return -ESHUTDOWN;
	}
	if (s->tail != NULL)
		s->tail->next = &op;
	else
		s->head = &op;
	s->tail = &op;
	pthread_cond_signal(&s->work);
	while (!op.done)
		pthread_cond_wait(&s->done, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return op.result;
}

/* Queues fn for the writer and returns; on_done(done_arg, result) runs in
 * the writer thread after the commit. arg is heap memory, freed after. */
static int
store_write_async(struct store *s, op_fn fn, void *arg, store_done_fn on_done,
    void *done_arg)
{
	struct op *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return -ENOMEM;
	op->fn = fn;
	op->arg = arg;
	op->on_done = on_done;
	op->done_arg = done_arg;
	pthread_mutex_lock(&s->mu);
	if (s->closing) {
		pthread_mutex_unlock(&s->mu);
		free(op);
		return -ESHUTDOWN;
	}
	if (s->tail != NULL)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/*
 * The schema version the database says it has: 1 for one made before
 * versions were kept (or a fresh one, which has no meta table yet).
 */
static int64_t
schema_version(struct conn *c)
{
	sqlite3_stmt *st;
	int64_t v = 1;

	if (sqlite3_prepare_v2(c->db,
		"SELECT value FROM meta WHERE key = 'schema_version'", -1, &st,
		NULL) != SQLITE_OK)
		return 1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Version 1 to 2: the jobs' mint count, from the tokens they hold. */
static const char migrate_1_2[] =
    "ALTER TABLE jobs ADD COLUMN tokens_minted INTEGER NOT NULL DEFAULT 0;"
    "UPDATE jobs SET tokens_minted = (SELECT count(*) FROM tokens t WHERE"
    " t.job = jobs.id AND t.capability != '" CANARY_CAPABILITY "');";

/* Version 2 to 3: a token revoked alone has a revocation of its own. */
static const char migrate_2_3[] =
    "ALTER TABLE revocations ADD COLUMN token TEXT;";

/* Whether table has column: 1, 0, or -EIO. */
static int
has_column(struct conn *c, const char *table, const char *column)
{
	sqlite3_stmt *st;
	int n = -EIO;

	if (sqlite3_prepare_v2(c->db,
		"SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", -1,
		&st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0) > 0;
	sqlite3_finalize(st);
	return n;
}

/* Adds the rule bindings of manifest name at version (0: any), NULL for
 * any, of secret (NULL: any) on c: the number added, or -errno. */
static int
bind_rules(struct conn *c, const char *name, int64_t version,
    const char *secret)
{
	sqlite3_stmt *st = stmt(c, ST_BIND_RULES);
	int rc;

	if (st == NULL)
		return -EIO;
	if (name != NULL)
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (version > 0)
		sqlite3_bind_int64(st, 2, version);
	if (secret != NULL)
		sqlite3_bind_text(st, 3, secret, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	return sqlite3_changes(c->db);
}

/* The bindings' list changed: its epoch moves on. 0 or -errno. */
static int
epoch_bump(struct conn *c)
{
	sqlite3_stmt *st = stmt(c, ST_BIND_EPOCH_BUMP);
	int rc;

	if (st == NULL)
		return -EIO;
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return sqlite_errno(rc);
}

/* Brings the schema to STORE_SCHEMA_VERSION, in one transaction. A fresh
 * database has every column from the schema already: each migration
 * runs only when its column is missing. */
static int
schema_upgrade(struct conn *c)
{
	int64_t v = schema_version(c);
	sqlite3_stmt *st;
	int r;

	if (v > STORE_SCHEMA_VERSION)
		return -EPROTONOSUPPORT;
	r = exec(c, schema);
	if (r < 0 || v == STORE_SCHEMA_VERSION)
		return r;
	r = exec(c, "BEGIN IMMEDIATE");
	if (r < 0)
		return r;
	if ((r = has_column(c, "jobs", "tokens_minted")) == 0)
		r = exec(c, migrate_1_2);
	if (r >= 0 && (r = has_column(c, "revocations", "token")) == 0)
		r = exec(c, migrate_2_3);
	if (r > 0)
		r = 0;
	/* Version 3 to 4: the rule bindings of every manifest version
	 * stored (the table is the schema's). */
	if (r == 0 && v < 4 && (r = bind_rules(c, NULL, 0, NULL)) >= 0)
		r = epoch_bump(c);
	if (r == 0 && (st = stmt(c, ST_META_SET)) == NULL)
		r = -EIO;
	if (r == 0) {
		sqlite3_bind_text(st, 1, "schema_version", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, STORE_SCHEMA_VERSION);
		r = sqlite_errno(sqlite3_step(st));
		sqlite3_reset(st);
	}
	if (r == 0)
		r = exec(c, "COMMIT");
	if (r < 0)
		exec(c, "ROLLBACK");
	return r;
}

int
store_open(const char *path, struct store **ret)
{
	struct store *s = calloc(1, sizeof(*s));
	int r;

	if (s == NULL)
		return -ENOMEM;
	if (store_pg_is_url(path)) {
		r = store_pg_open(path, &s->pg);
		if (r < 0) {
			free(s);
			return r;
		}
		*ret = s;
		return 0;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->pool_mu, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done, NULL);
	s->path = strdup(path);
	if (s->path == NULL) {
		store_close(s);
		return -ENOMEM;
	}
	r = conn_open(path, &s->w);
	if (r == 0)
		r = schema_upgrade(&s->w);
	if (r == 0)
		r = audit_load_head(s);
	if (r == 0 && pthread_create(&s->writer, NULL, writer_main, s) != 0)
		r = -EAGAIN;
	if (r < 0) {
		store_close(s);
		return r;
	}
	s->writer_started = true;
	*ret = s;
	return 0;
}

void
store_close(struct store *s)
{
	if (s == NULL)
		return;
	if (s->pg != NULL) {
		store_pg_close(s->pg);
		free(s);
		return;
	}
	if (s->writer_started) {
		pthread_mutex_lock(&s->mu);
		s->closing = true;
		pthread_cond_signal(&s->work);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->writer, NULL);
	}
	for (size_t i = 0; i < s->npool; i++) {
		conn_close(s->pool[i]);
		free(s->pool[i]);
	}
	if (s->w.db != NULL)
		conn_close(&s->w);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->pool_mu);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->done);
	free(s->path);
	free(s);
}

/* --- the bindings' caps (store.h) ----------------------------------------- */

int
store_bindings_over(const struct store_bind_counts *before,
    const struct store_bind_counts *after, struct store_bind_over *ret)
{
	struct store_bind_over o = { NULL, 0 };

	if (after->addrs > before->addrs &&
	    after->addrs > STORE_BINDINGS_SEEN_MAX)
		o = (struct store_bind_over){ "seen", after->addrs };
	else if (after->secrets > before->secrets &&
	    after->secrets > STORE_BINDINGS_SECRETS_MAX)
		o = (struct store_bind_over){ "secrets", after->secrets };
	else if (after->keys > before->keys &&
	    after->keys > STORE_BINDINGS_KEYS_MAX)
		o = (struct store_bind_over){ "keys", after->keys };
	if (o.cap == NULL)
		return 0;
	if (ret != NULL)
		*ret = o;
	return -EDQUOT;
}

/* The list's counts on c (store_bind_counts): of secret ("" for none),
 * the rows of unlisted (""; or a secret's name: counted as if it did not
 * exist, as before its put) left out: each distinct (secret, kind,
 * value) once, as the list counts them. 0 or -errno. */
static int
bind_count(struct conn *c, const char *secret, const char *unlisted,
    struct store_bind_counts *ret)
{
	static const char sql[] =
	    "SELECT count(DISTINCT secret), count(*), coalesce(sum(CASE "
	    "WHEN secret = ?1 THEN 1 ELSE 0 END), 0), coalesce(sum(CASE "
	    "WHEN secret = ?1 AND kind = 'addr' THEN 1 ELSE 0 END), 0) FROM "
	    "(SELECT DISTINCT b.secret, b.kind, b.value FROM bindings b "
	    "WHERE EXISTS (SELECT 1 FROM secrets s WHERE s.name = b.secret) "
	    "AND b.secret <> ?2)";
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	sqlite3_bind_text(st, 1, secret, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, unlisted, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		ret->secrets = sqlite3_column_int64(st, 0);
		ret->keys = sqlite3_column_int64(st, 1);
		ret->of = sqlite3_column_int64(st, 2);
		ret->addrs = sqlite3_column_int64(st, 3);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sqlite_errno(rc);
}

/* --- manifests ----------------------------------------------------------- */

struct manifest_put {
	const char *name, *text, *sha256, *actor;
	int64_t version;
	json_t *prev;
	bool added;
	struct store_bind_over over;
};

static int
op_manifest_put(struct store *s, struct op *op)
{
	struct manifest_put *a = op->arg;
	sqlite3_stmt *st = stmt(&s->w, ST_MANIFEST_CUR);
	int64_t cur = 0;
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		cur = sqlite3_column_int64(st, 0);
		if (strcmp((const char *)sqlite3_column_text(st, 1),
			a->sha256) == 0) {
			a->version = cur;
			a->added = false;
			sqlite3_reset(st);
			return 0;
		}
		a->prev = json_loads((const char *)sqlite3_column_text(st, 2),
		    0, NULL);
	} else if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	sqlite3_reset(st);

	st = stmt(&s->w, ST_MANIFEST_INS);
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, cur + 1);
	sqlite3_bind_text(st, 3, a->sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, a->text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)time(NULL));
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	a->version = cur + 1;
	a->added = true;
	json_t *d = json_pack("{s:s, s:I, s:s}", "manifest", a->name, "version",
	    (json_int_t)a->version, "sha256", a->sha256);
	rc = audit_append(s, "manifest_put", NULL, a->actor, d);
	json_decref(d);
	/* Its injecting rules' hosts are bound from this version on, within
	 * the caps. */
	struct store_bind_counts before, after;
	if (rc == 0)
		rc = bind_count(&s->w, "", "", &before);
	if (rc == 0 &&
	    (rc = bind_rules(&s->w, a->name, a->version, NULL)) > 0 &&
	    (rc = bind_count(&s->w, "", "", &after)) == 0 &&
	    (rc = store_bindings_over(&before, &after, &a->over)) == 0)
		rc = epoch_bump(&s->w);
	return rc < 0 ? rc : 0;
}

int
store_manifest_put(struct store *s, const char *name, const char *text,
    const char *sha256, const char *actor, int64_t *ret_version,
    json_t **ret_prev, bool *ret_new)
{
	return store_manifest_put_over(s, name, text, sha256, actor,
	    ret_version, ret_prev, ret_new, NULL);
}

int
store_manifest_put_over(struct store *s, const char *name, const char *text,
    const char *sha256, const char *actor, int64_t *ret_version,
    json_t **ret_prev, bool *ret_new, struct store_bind_over *ret_over)
{
	if (s->pg != NULL)
		return store_pg_manifest_put(s->pg, name, text, sha256, actor,
		    ret_version, ret_prev, ret_new, ret_over);
	struct manifest_put a = { name, text, sha256, actor, 0, NULL, false,
		{ NULL, 0 } };
	int r = store_write(s, op_manifest_put, &a);

	if (r < 0) {
		json_decref(a.prev);
		if (r == -EDQUOT && ret_over != NULL)
			*ret_over = a.over;
		return r;
	}
	*ret_version = a.version;
	*ret_prev = a.prev;
	*ret_new = a.added;
	return 0;
}

int
store_manifest_get(struct store *s, const char *name, int64_t version,
    struct manifest_version *ret)
{
	if (s->pg != NULL)
		return store_pg_manifest_get(s->pg, name, version, ret);
	struct conn *c;
	sqlite3_stmt *st =
	    reader_stmt(s, version > 0 ? ST_MANIFEST_VER : ST_MANIFEST_CUR, &c);
	int rc, r = 0;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (version > 0)
		sqlite3_bind_int64(st, 2, version);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		ret->version = sqlite3_column_int64(st, 0);
		copy_col(ret->sha256, sizeof(ret->sha256), st, 1);
		ret->body = json_loads((const char *)sqlite3_column_text(st, 2),
		    0, NULL);
		ret->created = sqlite3_column_int64(st, 3);
		if (ret->body == NULL)
			r = -EIO;
	} else
		r = rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	reader_put(s, c);
	return r;
}

void
manifest_version_free(struct manifest_version *m)
{
	json_decref(m->body);
	m->body = NULL;
}

static json_t *
manifest_list_row(sqlite3_stmt *st)
{
	return json_pack("{s:s, s:I, s:s, s:I, s:I}", "name",
	    (const char *)sqlite3_column_text(st, 0), "version",
	    (json_int_t)sqlite3_column_int64(st, 1), "sha256",
	    (const char *)sqlite3_column_text(st, 2), "created",
	    (json_int_t)sqlite3_column_int64(st, 3), "updated",
	    (json_int_t)sqlite3_column_int64(st, 4));
}

int
store_manifest_list(struct store *s, const char *after, size_t max,
    json_t **ret)
{
	if (s->pg != NULL)
		return store_pg_manifest_list(s->pg, after, max, ret);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_MANIFEST_LIST, &c);

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, after != NULL ? after : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	return collect(s, c, st, manifest_list_row, ret);
}

/* --- jobs ---------------------------------------------------------------- */

static int
insert_token(struct store *s, const struct token_row *t, const char *actor)
{
	sqlite3_stmt *st = stmt(&s->w, ST_TOKEN_INS);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_blob(st, 1, t->hash, STORE_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, t->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, t->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, t->capability, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, t->params, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, t->audience, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, t->iat);
	sqlite3_bind_int64(st, 8, t->exp);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	json_t *d =
	    json_pack("{s:s, s:s, s:o, s:s, s:I}", "token", t->id, "capability",
		t->capability, "params", json_loads(t->params, 0, NULL), "aud",
		t->audience, "exp", (json_int_t)t->exp);
	rc = audit_append(s, "token_minted", t->job, actor, d);
	json_decref(d);
	if (rc < 0 || strcmp(t->capability, CANARY_CAPABILITY) == 0)
		return rc;
	st = stmt(&s->w, ST_JOB_COUNT_TOKEN);
	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, t->job, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

struct job_create {
	const struct job *j;
	const struct token_row *tokens;
	size_t ntokens;
	const char *actor;
};

static int
op_job_create(struct store *s, struct op *op)
{
	struct job_create *a = op->arg;
	const struct job *j = a->j;
	sqlite3_stmt *st = stmt(&s->w, ST_JOB_INS);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, j->manifest, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, j->manifest_version);
	sqlite3_bind_int64(st, 4, j->created);
	sqlite3_bind_int64(st, 5, j->deadline);
	sqlite3_bind_int64(st, 6, j->lease_expires);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	json_t *d = json_pack("{s:s, s:I, s:I}", "manifest", j->manifest,
	    "manifest_version", (json_int_t)j->manifest_version, "deadline",
	    (json_int_t)j->deadline);
	rc = audit_append(s, "job_created", j->id, a->actor, d);
	json_decref(d);
	for (size_t i = 0; rc == 0 && i < a->ntokens; i++)
		rc = insert_token(s, &a->tokens[i], a->actor);
	return rc;
}

int
store_job_create(struct store *s, const struct job *j,
    const struct token_row *tokens, size_t ntokens, const char *actor)
{
	if (s->pg != NULL)
		return store_pg_job_create(s->pg, j, tokens, ntokens, actor);
	struct job_create a = { j, tokens, ntokens, actor };

	return store_write(s, op_job_create, &a);
}

static void
read_job(sqlite3_stmt *st, struct job *j)
{
	copy_col(j->id, sizeof(j->id), st, 0);
	copy_col(j->manifest, sizeof(j->manifest), st, 1);
	j->manifest_version = sqlite3_column_int64(st, 2);
	copy_col(j->state, sizeof(j->state), st, 3);
	j->created = sqlite3_column_int64(st, 4);
	j->deadline = sqlite3_column_int64(st, 5);
	j->lease_expires = sqlite3_column_int64(st, 6);
	copy_col(j->stop_reason, sizeof(j->stop_reason), st, 7);
	j->tokens_revoked = sqlite3_column_int64(st, 8);
	j->tokens_minted = sqlite3_column_int64(st, 9);
	j->revoked_at = sqlite3_column_int64(st, 10); /* NULL: 0 */
}

/* Reads job id on connection c: 0, -ENOENT or -errno. */
static int
job_read(struct conn *c, const char *id, struct job *ret)
{
	sqlite3_stmt *st = stmt(c, ST_JOB_GET);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		read_job(st, ret);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
}

int
store_job_get(struct store *s, const char *id, struct job *ret,
    json_t **ret_tokens)
{
	if (s->pg != NULL)
		return store_pg_job_get(s->pg, id, ret, ret_tokens);
	struct conn *c = reader_get(s);
	sqlite3_stmt *st;
	int r;

	if (c == NULL)
		return -EIO;
	r = job_read(c, id, ret);
	if (r < 0 || ret_tokens == NULL) {
		reader_put(s, c);
		return r;
	}
	json_t *tokens = json_array();
	st = stmt(c, ST_JOB_TOKENS);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *params =
		    json_loads((const char *)sqlite3_column_text(st, 2), 0,
			NULL);
		json_array_append_new(tokens,
		    json_pack("{s:s, s:s, s:o, s:s, s:I, s:I, s:s}", "id",
			(const char *)sqlite3_column_text(st, 0), "capability",
			(const char *)sqlite3_column_text(st, 1), "params",
			params != NULL ? params : json_object(), "aud",
			(const char *)sqlite3_column_text(st, 3), "iat",
			(json_int_t)sqlite3_column_int64(st, 4), "exp",
			(json_int_t)sqlite3_column_int64(st, 5), "state",
			(const char *)sqlite3_column_text(st, 6)));
	}
	reader_put(s, c);
	*ret_tokens = tokens;
	return 0;
}

struct job_lease {
	const char *id;
	int64_t lease;
	struct job *out;
};

static int
op_job_heartbeat(struct store *s, struct op *op)
{
	struct job_lease *a = op->arg;
	sqlite3_stmt *st = stmt(&s->w, ST_JOB_LEASE);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_int64(st, 1, (int64_t)time(NULL) + a->lease);
	sqlite3_bind_text(st, 2, a->id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	rc = job_read(&s->w, a->id, a->out);
	if (rc < 0)
		return rc;
	return strcmp(a->out->state, "running") == 0 ? 0 : -ESTALE;
}

int
store_job_heartbeat(struct store *s, const char *id, int64_t lease_seconds,
    struct job *ret)
{
	if (s->pg != NULL)
		return store_pg_job_heartbeat(s->pg, id, lease_seconds, ret);
	struct job_lease a = { id, lease_seconds, ret };

	return store_write(s, op_job_heartbeat, &a);
}

struct job_revoke {
	const char *id, *reason, *actor;
	struct revoke_result *out;
};

static int
op_job_revoke(struct store *s, struct op *op)
{
	struct job_revoke *a = op->arg;
	struct revoke_result *out = a->out;
	struct job j;
	sqlite3_stmt *st;
	int rc = job_read(&s->w, a->id, &j);

	if (rc < 0)
		return rc;
	if (strcmp(j.state, "revoked") == 0) {
		out->already = true;
		out->tokens_revoked = j.tokens_revoked;
		snprintf(out->reason, sizeof(out->reason), "%s", j.stop_reason);
		st = stmt(&s->w, ST_REVOCATION_OF_JOB);
		sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			out->seq = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		return 0;
	}
	st = stmt(&s->w, ST_TOKENS_REVOKE_JOB);
	sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	out->tokens_revoked = sqlite3_changes(s->w.db);

	st = stmt(&s->w, ST_JOB_REVOKE);
	sqlite3_bind_text(st, 1, a->reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, out->tokens_revoked);
	sqlite3_bind_int64(st, 3, (int64_t)time(NULL));
	sqlite3_bind_text(st, 4, a->id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);

	st = stmt(&s->w, ST_REVOCATION_INS);
	sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
	sqlite3_bind_null(st, 2);
	sqlite3_bind_int64(st, 3, (int64_t)time(NULL));
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	out->seq = sqlite3_last_insert_rowid(s->w.db);
	out->already = false;
	snprintf(out->reason, sizeof(out->reason), "%s", a->reason);

	json_t *d =
	    json_pack("{s:s, s:I, s:I}", "reason", a->reason, "tokens_revoked",
		(json_int_t)out->tokens_revoked, "seq", (json_int_t)out->seq);
	rc = audit_append(s, "job_revoked", a->id, a->actor, d);
	json_decref(d);
	return rc;
}

int
store_job_revoke(struct store *s, const char *id, const char *reason,
    const char *actor, struct revoke_result *ret)
{
	if (s->pg != NULL)
		return store_pg_job_revoke(s->pg, id, reason, actor, ret);
	struct job_revoke a = { id, reason, actor, ret };

	memset(ret, 0, sizeof(*ret));
	return store_write(s, op_job_revoke, &a);
}

static json_t *
lapsed_row(sqlite3_stmt *st)
{
	return json_pack("{s:s, s:s}", "job",
	    (const char *)sqlite3_column_text(st, 0), "reason",
	    (const char *)sqlite3_column_text(st, 1));
}

int
store_jobs_lapsed(struct store *s, int64_t now, size_t max, json_t **ret_ids)
{
	if (s->pg != NULL)
		return store_pg_jobs_lapsed(s->pg, now, max, ret_ids);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_JOB_LAPSED, &c);

	if (st == NULL)
		return -EIO;
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	return collect(s, c, st, lapsed_row, ret_ids);
}

/* --- tokens -------------------------------------------------------------- */

struct token_insert {
	const struct token_row *t;
	int64_t max_tokens;
	const char *actor;
};

static int
op_token_insert(struct store *s, struct op *op)
{
	struct token_insert *a = op->arg;
	struct job j;
	int rc = job_read(&s->w, a->t->job, &j);

	if (rc < 0)
		return rc;
	/* Checked in the same transaction: a revoke cannot slip between. */
	if (strcmp(j.state, "running") != 0)
		return -ESTALE;
	/* So is the count: parallel mints queue here, one at a time. */
	if (j.tokens_minted >= a->max_tokens)
		return -EDQUOT;
	return insert_token(s, a->t, a->actor);
}

int
store_mint_take(struct store *s, const char *job, int64_t per_minute,
    int64_t burst, bool *ret_first, int64_t *ret_retry_after)
{
	if (s->pg != NULL)
		return store_pg_mint_take(s->pg, job, per_minute, burst,
		    ret_first, ret_retry_after);
	return -ENOTSUP;
}

int
store_token_insert_async(struct store *s, const struct token_row *t,
    int64_t max_tokens, const char *actor, store_done_fn on_done,
    void *done_arg)
{
	if (s->pg != NULL)
		return store_pg_token_insert_async(s->pg, t, max_tokens, actor,
		    on_done, done_arg);
	struct token_insert *a = malloc(sizeof(*a));
	int r;

	if (a == NULL)
		return -ENOMEM;
	a->t = t;
	a->max_tokens = max_tokens;
	a->actor = actor;
	r = store_write_async(s, op_token_insert, a, on_done, done_arg);
	if (r < 0)
		free(a);
	return r;
}

int
store_token_lookup(struct store *s, const unsigned char hash[STORE_HASH_LEN],
    struct token_row *ret, char ret_job_state[16])
{
	if (s->pg != NULL)
		return store_pg_token_lookup(s->pg, hash, ret, ret_job_state);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_TOKEN_LOOKUP, &c);
	int rc, r = 0;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_blob(st, 1, hash, STORE_HASH_LEN, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		memcpy(ret->hash, hash, STORE_HASH_LEN);
		copy_col(ret->id, sizeof(ret->id), st, 0);
		copy_col(ret->job, sizeof(ret->job), st, 1);
		copy_col(ret->capability, sizeof(ret->capability), st, 2);
		ret->params = dup_col(st, 3);
		copy_col(ret->audience, sizeof(ret->audience), st, 4);
		ret->iat = sqlite3_column_int64(st, 5);
		ret->exp = sqlite3_column_int64(st, 6);
		copy_col(ret->state, sizeof(ret->state), st, 7);
		copy_col(ret_job_state, 16, st, 8);
		if (ret->params == NULL)
			r = -ENOMEM;
	} else
		r = rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	reader_put(s, c);
	return r;
}

struct token_revoke {
	const unsigned char *hash;
	const char *actor;
	struct token_revoke_result *out;
};

static int
op_token_revoke(struct store *s, struct op *op)
{
	struct token_revoke *a = op->arg;
	struct token_revoke_result *out = a->out;
	sqlite3_stmt *st = stmt(&s->w, ST_TOKEN_REVOKE);
	int rc;

	memset(out, 0, sizeof(*out));
	if (st == NULL)
		return -EIO;
	sqlite3_bind_blob(st, 1, a->hash, STORE_HASH_LEN, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
	}
	copy_col(out->id, sizeof(out->id), st, 0);
	copy_col(out->job, sizeof(out->job), st, 1);
	while (sqlite3_step(st) == SQLITE_ROW)
		;
	sqlite3_reset(st);

	/* Its own revocation on the feed, in the same transaction: the
	 * proxies drop the token from their caches before they ack. */
	st = stmt(&s->w, ST_REVOCATION_INS);
	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, out->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, out->id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)time(NULL));
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	out->seq = sqlite3_last_insert_rowid(s->w.db);
	json_t *d = json_pack("{s:s, s:I}", "token", out->id, "seq",
	    (json_int_t)out->seq);
	rc = audit_append(s, "token_revoked", out->job, a->actor, d);
	json_decref(d);
	if (rc == 0)
		out->found = true;
	return rc;
}

int
store_token_revoke(struct store *s, const unsigned char hash[STORE_HASH_LEN],
    const char *actor, struct token_revoke_result *ret)
{
	if (s->pg != NULL)
		return store_pg_token_revoke(s->pg, hash, actor, ret);
	struct token_revoke a = { hash, actor, ret };
	int r = store_write(s, op_token_revoke, &a);

	if (r < 0)
		memset(ret, 0, sizeof(*ret));
	return r;
}

/* --- revocation feed ----------------------------------------------------- */

/* {seq, job}, and a token revoked alone's id as "token": a job's entry
 * is as it always was, so that older followers read it. */
static json_t *
revocation_row(sqlite3_stmt *st)
{
	json_t *row = json_pack("{s:I, s:s}", "seq",
	    (json_int_t)sqlite3_column_int64(st, 0), "job",
	    (const char *)sqlite3_column_text(st, 1));

	if (row != NULL && sqlite3_column_type(st, 2) != SQLITE_NULL &&
	    json_object_set_new(row, "token",
		json_string((const char *)sqlite3_column_text(st, 2))) < 0) {
		json_decref(row);
		return NULL;
	}
	return row;
}

int
store_revocations_after(struct store *s, int64_t seq, size_t max, json_t **ret)
{
	if (s->pg != NULL)
		return store_pg_revocations_after(s->pg, seq, max, ret);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_REVOCATIONS_AFTER, &c);

	if (st == NULL)
		return -EIO;
	sqlite3_bind_int64(st, 1, seq);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	return collect(s, c, st, revocation_row, ret);
}

int
store_revocation_head(struct store *s, int64_t *ret)
{
	if (s->pg != NULL)
		return store_pg_revocation_head(s->pg, ret);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_REVOCATION_HEAD, &c);
	int rc;

	if (st == NULL)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	reader_put(s, c);
	return rc == SQLITE_ROW ? 0 : sqlite_errno(rc);
}

/* --- secrets ------------------------------------------------------------ */

struct secret_put {
	const char *name, *actor;
	int64_t version;
	const unsigned char *sealed;
	size_t len;
	const json_t *hosts; /* NULL: the declared hosts kept */
	int64_t budget; /* 0: the version before's */
};

static int reflect_row_put(struct store *s, const struct secret_put *a);
static int op_release_unburned(struct store *s, struct op *op);

/* Inserts binding (secret, kind, value, origin) on the writer's
 * connection: 1 added, 0 there already, or -errno. */
static int
bind_insert(struct store *s, const char *secret, const char *kind,
    const char *value, const char *origin)
{
	sqlite3_stmt *st = stmt(&s->w, ST_BIND_INS);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, secret, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, value, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, origin, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)time(NULL));
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	return sqlite3_changes(s->w.db) > 0;
}

/* Runs the one-parameter statement id with secret on the writer's
 * connection: 0 or -errno. */
static int
bind_by_secret(struct store *s, enum stmt_id id, const char *secret)
{
	sqlite3_stmt *st = stmt(&s->w, id);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, secret, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return sqlite_errno(rc);
}

/* A secret's put, after its row: its declared hosts replaced when
 * given, the rules' bindings of a name (re)created, the epoch moved. */
static int
secret_put_bindings(struct store *s, const struct secret_put *a)
{
	struct store_bind_counts before = { 0 }, after = { 0 };
	size_t i;
	json_t *h;
	/* A new name's kept places and rules count from this put on; a
	 * rotation without guard_hosts moves no place (not counted). */
	bool moves = a->hosts != NULL || a->version == 1;
	int r = moves ? bind_count(&s->w, a->name,
			    a->version == 1 ? a->name : "", &before)
		      : 0;

	if (r == 0 && a->hosts != NULL)
		r = bind_by_secret(s, ST_BIND_DEL_DECLARED, a->name);
	json_array_foreach(a->hosts, i, h)
	{
		if (r < 0)
			break;
		if (!json_is_string(h))
			return -EINVAL;
		r = bind_insert(s, a->name, "host", json_string_value(h),
		    "declared");
	}
	if (r >= 0 && a->version == 1)
		r = bind_rules(&s->w, NULL, 0, a->name);
	if (r >= 0 && moves)
		r = bind_count(&s->w, a->name, "", &after);
	if (r >= 0 && moves)
		r = store_bindings_over(&before, &after, NULL);
	if (r >= 0)
		r = epoch_bump(&s->w);
	return r < 0 ? r : 0;
}

static int
op_secret_put(struct store *s, struct op *op)
{
	struct secret_put *a = op->arg;
	sqlite3_stmt *st = stmt(&s->w, ST_SECRET_CUR);
	int64_t cur = 0;
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		cur = sqlite3_column_int64(st, 1);
	else if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	sqlite3_reset(st);
	if (a->version != cur + 1)
		return -EEXIST;
	if ((st = stmt(&s->w, ST_SECRET_INS)) == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a->version);
	sqlite3_bind_blob(st, 3, a->sealed, (int)a->len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (int64_t)time(NULL));
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	json_t *d = json_pack("{s:s, s:I}", "secret", a->name, "version",
	    (json_int_t)a->version);
	if (d != NULL && a->hosts != NULL)
		json_object_set(d, "guard_hosts", (json_t *)a->hosts);
	rc = audit_append(s, "secret_put", NULL, a->actor, d);
	json_decref(d);
	if (rc == 0)
		rc = secret_put_bindings(s, a);
	if (rc == 0)
		rc = reflect_row_put(s, a);
	return rc;
}

int
store_secret_put_budget(struct store *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const json_t *guard_hosts,
    int64_t budget, const char *actor)
{
	if ((guard_hosts != NULL &&
		(!json_is_array(guard_hosts) ||
		    json_array_size(guard_hosts) >
			STORE_BINDINGS_DECLARED_MAX)) ||
	    budget < 0 || budget > STORE_REFLECT_BUDGET_MAX)
		return -EINVAL;
	if (s->pg != NULL)
		return store_pg_secret_put(s->pg, name, version, sealed, len,
		    guard_hosts, budget, actor);
	struct secret_put a = { name, actor, version, sealed, len, guard_hosts,
		budget };

	if (len == 0 || len > INT32_MAX)
		return -EINVAL;
	return store_write(s, op_secret_put, &a);
}

int
store_secret_put_bound(struct store *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const json_t *guard_hosts,
    const char *actor)
{
	return store_secret_put_budget(s, name, version, sealed, len,
	    guard_hosts, 0, actor);
}

int
store_secret_put(struct store *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const char *actor)
{
	return store_secret_put_bound(s, name, version, sealed, len, NULL,
	    actor);
}

int
store_secret_get(struct store *s, const char *name, struct secret_meta *ret,
    unsigned char **ret_sealed, size_t *ret_len)
{
	if (s->pg != NULL)
		return store_pg_secret_get(s->pg, name, ret, ret_sealed,
		    ret_len);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_SECRET_CUR, &c);
	int rc, r = 0;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		struct secret_meta m = { .version = 0 };
		copy_col(m.name, sizeof(m.name), st, 0);
		m.version = sqlite3_column_int64(st, 1);
		m.created = sqlite3_column_int64(st, 2);
		m.last_used = sqlite3_column_int64(st, 3);
		if (ret_sealed != NULL) {
			int n = sqlite3_column_bytes(st, 4);
			const void *b = sqlite3_column_blob(st, 4);
			unsigned char *copy = n > 0 ? malloc((size_t)n) : NULL;
			if (copy == NULL)
				r = n > 0 ? -ENOMEM : -EIO;
			else {
				memcpy(copy, b, (size_t)n);
				*ret_sealed = copy;
				*ret_len = (size_t)n;
			}
		}
		if (r == 0)
			*ret = m;
	} else
		r = rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	reader_put(s, c);
	return r;
}

static json_t *
secret_row(sqlite3_stmt *st)
{
	return json_pack("{s:s, s:I, s:I, s:I}", "name",
	    (const char *)sqlite3_column_text(st, 0), "version",
	    (json_int_t)sqlite3_column_int64(st, 1), "created",
	    (json_int_t)sqlite3_column_int64(st, 2), "last_used",
	    (json_int_t)sqlite3_column_int64(st, 3));
}

int
store_secret_list(struct store *s, json_t **ret)
{
	if (s->pg != NULL)
		return store_pg_secret_list(s->pg, ret);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_SECRET_LIST, &c);

	if (st == NULL)
		return -EIO;
	return collect(s, c, st, secret_row, ret);
}

static json_t *
manifest_body_row(sqlite3_stmt *st)
{
	json_t *body =
	    json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);

	return json_pack("{s:s, s:o}", "name",
	    (const char *)sqlite3_column_text(st, 0), "body",
	    body != NULL ? body : json_null());
}

int
store_secret_manifests(struct store *s, const char *name, json_t **ret)
{
	if (s->pg != NULL)
		return store_pg_secret_manifests(s->pg, name, ret);
	char needle[128];
	struct conn *c;
	sqlite3_stmt *st;

	if (snprintf(needle, sizeof(needle), "\"secret\":\"%s\"", name) >=
	    (int)sizeof(needle))
		return -EINVAL;
	if ((st = reader_stmt(s, ST_SECRET_MANIFESTS, &c)) == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, needle, -1, SQLITE_TRANSIENT);
	return collect(s, c, st, manifest_body_row, ret);
}

struct secret_del {
	const char *name, *actor;
	bool found;
};

static int
op_secret_delete(struct store *s, struct op *op)
{
	struct secret_del *a = op->arg;
	sqlite3_stmt *st = stmt(&s->w, ST_SECRET_DEL);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	a->found = sqlite3_changes(s->w.db) > 0;
	if (!a->found)
		return 0;
	json_t *d = json_pack("{s:s}", "secret", a->name);
	rc = audit_append(s, "secret_deleted", NULL, a->actor, d);
	json_decref(d);
	if (rc == 0)
		rc = bind_by_secret(s, ST_BIND_DEL_SECRET, a->name);
	if (rc == 0)
		rc = epoch_bump(&s->w);
	return rc;
}

int
store_secret_delete(struct store *s, const char *name, const char *actor,
    bool *ret_found)
{
	if (s->pg != NULL)
		return store_pg_secret_delete(s->pg, name, actor, ret_found);
	struct secret_del a = { name, actor, false };
	int r = store_write(s, op_secret_delete, &a);

	if (r == 0)
		*ret_found = a.found;
	return r;
}

struct secret_used {
	const char *name, *job, *actor;
	int64_t version;
	const char *host, *addr; /* a scan release's; NULL for an injection */
	bool scan;
	const json_t *values; /* a scan set's (store_secret_scanned_set) */
};

static int
op_secret_released(struct store *s, struct op *op)
{
	struct secret_used *a = op->arg;
	/* A scan release leaves last_used as it is (the last release for
	 * an injection); the version must still be there all the same. */
	sqlite3_stmt *st =
	    stmt(&s->w, a->scan ? ST_SECRET_HAS : ST_SECRET_USED);
	json_t *d;
	int rc;

	if (st == NULL)
		return -EIO;
	if (a->scan) {
		sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, a->version);
	} else {
		sqlite3_bind_int64(st, 1, (int64_t)time(NULL));
		sqlite3_bind_text(st, 2, a->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, a->version);
	}
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (a->scan && rc == SQLITE_DONE)
		return -ENOENT; /* deleted or rotated away meanwhile */
	if (a->scan && rc == SQLITE_ROW)
		rc = SQLITE_DONE;
	else if (rc == SQLITE_DONE && sqlite3_changes(s->w.db) == 0)
		return -ENOENT;
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	d = json_pack("{s:s, s:I}", "secret", a->name, "version",
	    (json_int_t)a->version);
	if (d != NULL && a->scan) {
		json_object_set_new(d, "purpose", json_string("scan"));
		if (a->host != NULL)
			json_object_set_new(d, "host", json_string(a->host));
		if (a->addr != NULL)
			json_object_set_new(d, "addr", json_string(a->addr));
		if (a->values != NULL)
			json_object_set(d, "values", (json_t *)a->values);
	}
	rc = audit_append(s, "secret_released", a->job, a->actor, d);
	json_decref(d);
	return rc;
}

int
store_secret_released(struct store *s, const char *name, int64_t version,
    const char *job, const char *actor)
{
	if (s->pg != NULL)
		return store_pg_secret_released(s->pg, name, version, job,
		    actor);
	struct secret_used a = { name, job, actor, version, NULL, NULL, false,
		NULL };

	return store_write(s, op_release_unburned, &a);
}

int
store_secret_scanned(struct store *s, const char *name, int64_t version,
    const char *job, const char *host, const char *addr, const char *actor)
{
	if (s->pg != NULL)
		return store_pg_secret_scanned(s->pg, name, version, job, host,
		    addr, actor);
	struct secret_used a = { name, job, actor, version, host, addr, true,
		NULL };

	return store_write(s, op_secret_released, &a);
}

int
store_secret_scanned_set(struct store *s, const char *name, int64_t version,
    const char *job, const char *host, const char *addr, const json_t *values,
    const char *actor)
{
	if (s->pg != NULL)
		return store_pg_secret_scanned_set(s->pg, name, version, job,
		    host, addr, values, actor);
	struct secret_used a = { name, job, actor, version, host, addr, true,
		values };

	return store_write(s, op_secret_released, &a);
}

void
secret_sealed_free(struct secret_sealed *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		free(v[i].sealed);
	free(v);
}

int
store_secret_versions(struct store *s, const char *name, size_t max,
    struct secret_sealed **ret, size_t *n)
{
	if (max == 0 || max > INT32_MAX)
		return -EINVAL;
	if (s->pg != NULL)
		return store_pg_secret_versions(s->pg, name, max, ret, n);
	struct secret_sealed *out = calloc(max, sizeof(*out));
	struct conn *c;
	sqlite3_stmt *st;
	size_t k = 0;
	int rc = SQLITE_DONE, r = 0;

	if (out == NULL)
		return -ENOMEM;
	if ((st = reader_stmt(s, ST_SECRET_VERSIONS, &c)) == NULL) {
		free(out);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	while (k < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int len = sqlite3_column_bytes(st, 1);
		const void *b = sqlite3_column_blob(st, 1);
		if (len <= 0 || (out[k].sealed = malloc((size_t)len)) == NULL) {
			r = len <= 0 ? -EIO : -ENOMEM;
			break;
		}
		memcpy(out[k].sealed, b, (size_t)len);
		out[k].len = (size_t)len;
		out[k].version = sqlite3_column_int64(st, 0);
		k++;
	}
	if (r == 0 && k < max && rc != SQLITE_DONE)
		r = sqlite_errno(rc);
	reader_put(s, c);
	if (r == 0 && k == 0)
		r = -ENOENT;
	if (r < 0) {
		secret_sealed_free(out, k);
		return r;
	}
	*ret = out;
	*n = k;
	return 0;
}

/* --- secret bindings ------------------------------------------------------ */

static json_t *
binding_row(sqlite3_stmt *st)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "secret",
	    (const char *)sqlite3_column_text(st, 0), "kind",
	    (const char *)sqlite3_column_text(st, 1), "value",
	    (const char *)sqlite3_column_text(st, 2), "origin",
	    (const char *)sqlite3_column_text(st, 3));
}

int
store_bindings_list(struct store *s, json_t **ret, int64_t *ret_epoch)
{
	if (s->pg != NULL)
		return store_pg_bindings_list(s->pg, ret, ret_epoch);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s, ST_META_GET, &c);
	int64_t epoch = 0;
	int rc, r;

	if (st == NULL)
		return -EIO;
	/* The epoch first: the rows read after it are at least as new. */
	sqlite3_bind_text(st, 1, "bindings_epoch", -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		epoch = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		reader_put(s, c);
		return sqlite_errno(rc);
	}
	if ((st = stmt(c, ST_BIND_LIST)) == NULL) {
		reader_put(s, c);
		return -EIO;
	}
	r = collect(s, c, st, binding_row, ret);
	if (r == 0)
		*ret_epoch = epoch;
	return r;
}

struct binding_seen {
	const char *secret, *addr, *job, *actor;
	bool added;
	struct store_bind_over over;
};

static int
op_binding_seen(struct store *s, struct op *op)
{
	struct binding_seen *a = op->arg;
	sqlite3_stmt *st = stmt(&s->w, ST_SECRET_CUR);
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->secret, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return sqlite_errno(rc);
	/* Counted and written in the writer's one transaction. */
	struct store_bind_counts before, after;
	if ((rc = bind_count(&s->w, a->secret, "", &before)) < 0)
		return rc;
	if ((rc = bind_insert(s, a->secret, "addr", a->addr, "seen")) <= 0)
		return rc;
	after = (struct store_bind_counts){ before.secrets + (before.of == 0),
		before.keys + 1, before.of + 1, before.addrs + 1 };
	if ((rc = store_bindings_over(&before, &after, &a->over)) < 0)
		return rc;
	a->added = true;
	json_t *d =
	    json_pack("{s:s, s:s}", "secret", a->secret, "addr", a->addr);
	rc = audit_append(s, "binding_seen", a->job, a->actor, d);
	json_decref(d);
	if (rc == 0)
		rc = epoch_bump(&s->w);
	return rc;
}

int
store_binding_seen(struct store *s, const char *secret, const char *addr,
    const char *job, const char *actor, bool *ret_added,
    struct store_bind_over *ret_over)
{
	if (s->pg != NULL)
		return store_pg_binding_seen(s->pg, secret, addr, job, actor,
		    ret_added, ret_over);
	struct binding_seen a = { secret, addr, job, actor, false,
		{ NULL, 0 } };
	int r = store_write(s, op_binding_seen, &a);

	if (r == 0)
		*ret_added = a.added;
	if (r == -EDQUOT && ret_over != NULL)
		*ret_over = a.over;
	return r;
}

/* --- reflections ---------------------------------------------------------- */

/* Prepares sql on c (once a call: these run a few times a job at most).
 * NULL when it cannot be. */
static sqlite3_stmt *
prepare(struct conn *c, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

/* A version's row made anew at its put (a name deleted and put again
 * starts at version 1: an old row of that number is replaced), its
 * budget a's or the version before's. On the writer's connection. */
static int
reflect_row_put(struct store *s, const struct secret_put *a)
{
	sqlite3_stmt *st = prepare(&s->w,
	    "INSERT OR REPLACE INTO secret_reflections (secret, version, "
	    "budget) VALUES (?1, ?2, CASE WHEN ?3 > 0 THEN ?3 ELSE "
	    "coalesce((SELECT budget FROM secret_reflections WHERE secret = "
	    "?1 AND version = ?2 - 1), ?4) END)");
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a->version);
	sqlite3_bind_int64(st, 3, a->budget);
	sqlite3_bind_int64(st, 4, STORE_REFLECT_BUDGET_DEFAULT);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

/* The columns budget, reflections, tripped, burned_at, burned_reason,
 * burned_job of st from col into *ret. */
static void
reflect_row_read(sqlite3_stmt *st, int col, struct secret_reflections *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->budget = sqlite3_column_int64(st, col);
	ret->reflections = sqlite3_column_int64(st, col + 1);
	ret->tripped = sqlite3_column_int64(st, col + 2);
	ret->burned_at = sqlite3_column_int64(st, col + 3);
	copy_col(ret->burned_reason, sizeof(ret->burned_reason), st, col + 4);
	copy_col(ret->burned_job, sizeof(ret->burned_job), st, col + 5);
}

/* An injection's release: refused (-EKEYREVOKED) when the version is
 * burned, in the writer's transaction, so that no report burning it
 * can come between the check and the release's record. */
static int
op_release_unburned(struct store *s, struct op *op)
{
	struct secret_used *a = op->arg;
	sqlite3_stmt *st = prepare(&s->w,
	    "SELECT 1 FROM secret_reflections WHERE secret = ? AND version = "
	    "? AND burned_at IS NOT NULL");
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a->version);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return -EKEYREVOKED;
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	return op_secret_released(s, op);
}

int
store_secret_reflections(struct store *s, const char *name, int64_t version,
    struct secret_reflections *ret)
{
	if (s->pg != NULL)
		return store_pg_secret_reflections(s->pg, name, version, ret);
	struct conn *c = reader_get(s);
	sqlite3_stmt *st;
	int rc;

	if (c == NULL)
		return -EIO;
	st = prepare(c,
	    "SELECT budget, reflections, tripped, burned_at, burned_reason, "
	    "burned_job FROM secret_reflections WHERE secret = ? AND version "
	    "= ?");
	if (st == NULL) {
		reader_put(s, c);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, version);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		reflect_row_read(st, 0, ret);
	else if (rc == SQLITE_DONE) {
		memset(ret, 0, sizeof(*ret));
		ret->budget = STORE_REFLECT_BUDGET_DEFAULT;
	}
	sqlite3_finalize(st);
	reader_put(s, c);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

struct reflected {
	const char *name, *job, *event, *actor;
	int64_t version, count;
	bool trip;
	struct secret_reflections row;
	bool burned_now;
};

static int
op_secret_reflected(struct store *s, struct op *op)
{
	struct reflected *a = op->arg;
	int64_t now = (int64_t)time(NULL);
	sqlite3_stmt *st = stmt(&s->w, ST_SECRET_HAS);
	json_t *d;
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a->version);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return sqlite_errno(rc);
	/* The writer alone writes: what was is what the update sees. */
	if ((st = prepare(&s->w,
		 "SELECT 1 FROM secret_reflections WHERE secret = ? AND "
		 "version = ? AND burned_at IS NOT NULL")) == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a->version);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlite_errno(rc);
	bool was_burned = rc == SQLITE_ROW;
	/* One statement: the count, and the burn when it reaches the
	 * budget (or at a trip), set once. */
	st = prepare(&s->w,
	    "INSERT INTO secret_reflections (secret, version, budget, "
	    "reflections, tripped, burned_at, burned_reason, burned_job) "
	    "VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN ?5 > 0 OR ?4 >= ?3 THEN ?6 "
	    "END, CASE WHEN ?5 > 0 THEN 'guard_tripped' WHEN ?4 >= ?3 THEN "
	    "'reflect_budget' END, CASE WHEN ?5 > 0 OR ?4 >= ?3 THEN ?7 END) "
	    "ON CONFLICT (secret, version) DO UPDATE SET reflections = "
	    "reflections + ?4, tripped = tripped + ?5, burned_reason = CASE "
	    "WHEN burned_at IS NOT NULL THEN burned_reason WHEN ?5 > 0 THEN "
	    "'guard_tripped' WHEN reflections + ?4 >= budget THEN "
	    "'reflect_budget' END, burned_job = CASE WHEN burned_at IS NOT "
	    "NULL THEN burned_job WHEN ?5 > 0 OR reflections + ?4 >= budget "
	    "THEN ?7 END, burned_at = CASE WHEN burned_at IS NOT NULL THEN "
	    "burned_at WHEN ?5 > 0 OR reflections + ?4 >= budget THEN ?6 END "
	    "RETURNING budget, reflections, tripped, burned_at, "
	    "burned_reason, burned_job");
	if (st == NULL)
		return -EIO;
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a->version);
	sqlite3_bind_int64(st, 3, STORE_REFLECT_BUDGET_DEFAULT);
	sqlite3_bind_int64(st, 4, a->count);
	sqlite3_bind_int64(st, 5, a->trip ? 1 : 0);
	sqlite3_bind_int64(st, 6, now);
	sqlite3_bind_text(st, 7, a->job, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		reflect_row_read(st, 0, &a->row);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -EIO : sqlite_errno(rc);
	a->burned_now = !was_burned && a->row.burned_at != 0;
	d = json_pack("{s:s, s:I, s:s, s:I, s:I, s:I}", "secret", a->name,
	    "version", (json_int_t)a->version, "event", a->event, "count",
	    (json_int_t)a->count, "reflections", (json_int_t)a->row.reflections,
	    "budget", (json_int_t)a->row.budget);
	rc = audit_append(s, "secret_reflected", a->job, a->actor, d);
	json_decref(d);
	if (rc == 0 && a->burned_now) {
		d = json_pack("{s:s, s:I, s:s, s:I, s:I}", "secret", a->name,
		    "version", (json_int_t)a->version, "reason",
		    a->row.burned_reason, "reflections",
		    (json_int_t)a->row.reflections, "budget",
		    (json_int_t)a->row.budget);
		rc = audit_append(s, "secret_burned", a->job, a->actor, d);
		json_decref(d);
		/* The list carries the burned versions: it moved. */
		if (rc == 0)
			rc = epoch_bump(&s->w);
	}
	return rc;
}

int
store_secret_reflected(struct store *s, const char *name, int64_t version,
    const char *job, const char *event, int64_t count, bool trip,
    const char *actor, struct secret_reflections *ret, bool *ret_burned_now)
{
	if (count < 1 || count > 1000)
		return -EINVAL;
	if (s->pg != NULL)
		return store_pg_secret_reflected(s->pg, name, version, job,
		    event, count, trip, actor, ret, ret_burned_now);
	struct reflected a = { .name = name,
		.job = job,
		.event = event,
		.actor = actor,
		.version = version,
		.count = count,
		.trip = trip };
	int r = store_write(s, op_secret_reflected, &a);

	if (r == 0) {
		*ret = a.row;
		*ret_burned_now = a.burned_now;
	}
	return r;
}

struct burned_value {
	const unsigned char *digest;
	const char *secret;
	int64_t version, burned_at;
};

static int
op_burned_value_add(struct store *s, struct op *op)
{
	struct burned_value *a = op->arg;
	sqlite3_stmt *st = prepare(&s->w,
	    "INSERT INTO burned_values (digest, secret, version, burned_at) "
	    "VALUES (?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING");
	int rc;

	if (st == NULL)
		return -EIO;
	sqlite3_bind_blob(st, 1, a->digest, STORE_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->secret, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, a->version);
	sqlite3_bind_int64(st, 4, a->burned_at);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

int
store_burned_value_add(struct store *s,
    const unsigned char digest[STORE_HASH_LEN], const char *secret,
    int64_t version, int64_t burned_at)
{
	if (s->pg != NULL)
		return store_pg_burned_value_add(s->pg, digest, secret, version,
		    burned_at);
	struct burned_value a = { digest, secret, version, burned_at };

	return store_write(s, op_burned_value_add, &a);
}

int
store_burned_value_find(struct store *s,
    const unsigned char digest[STORE_HASH_LEN], char *ret_secret, size_t cap,
    int64_t *ret_version, int64_t *ret_burned_at)
{
	if (s->pg != NULL)
		return store_pg_burned_value_find(s->pg, digest, ret_secret,
		    cap, ret_version, ret_burned_at);
	struct conn *c = reader_get(s);
	sqlite3_stmt *st;
	int rc;

	if (c == NULL)
		return -EIO;
	st = prepare(c,
	    "SELECT secret, version, burned_at FROM burned_values WHERE "
	    "digest = ?");
	if (st == NULL) {
		reader_put(s, c);
		return -EIO;
	}
	sqlite3_bind_blob(st, 1, digest, STORE_HASH_LEN, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		snprintf(ret_secret, cap, "%s", name != NULL ? name : "");
		*ret_version = sqlite3_column_int64(st, 1);
		*ret_burned_at = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	reader_put(s, c);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
}

int
store_secrets_burned(struct store *s, json_t **ret)
{
	if (s->pg != NULL)
		return store_pg_secrets_burned(s->pg, ret);
	struct conn *c = reader_get(s);
	sqlite3_stmt *st;
	json_t *out = json_object();
	int rc;

	if (c == NULL || out == NULL) {
		if (c != NULL)
			reader_put(s, c);
		json_decref(out);
		return c == NULL ? -EIO : -ENOMEM;
	}
	st = prepare(c,
	    "SELECT r.secret, r.version FROM secret_reflections r JOIN "
	    "secrets s ON s.name = r.secret AND s.version = r.version WHERE "
	    "r.burned_at IS NOT NULL ORDER BY r.secret, r.version");
	if (st == NULL) {
		reader_put(s, c);
		json_decref(out);
		return -EIO;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		json_t *a = json_object_get(out, name);
		if (a == NULL) {
			a = json_array();
			if (json_object_set_new(out, name, a) < 0)
				break;
		}
		if (json_array_append_new(a,
			json_integer(sqlite3_column_int64(st, 1))) < 0)
			break;
	}
	sqlite3_finalize(st);
	reader_put(s, c);
	if (rc != SQLITE_DONE) {
		json_decref(out);
		return rc == SQLITE_ROW ? -ENOMEM : sqlite_errno(rc);
	}
	*ret = out;
	return 0;
}

/* --- audit ---------------------------------------------------------------- */

/* A record with no job and no actor: a refused key, say. */
struct audit_one {
	const char *event;
	json_t *detail;
};

static int
op_audit(struct store *s, struct op *op)
{
	struct audit_one *a = op->arg;

	/* The record's job and actor, when the detail names them. */
	return audit_append(s, a->event,
	    json_string_value(json_object_get(a->detail, "job")),
	    json_string_value(json_object_get(a->detail, "actor")), a->detail);
}

static void
audit_async_done(void *arg, int result)
{
	/* Nobody waits for this one: a failure can only be told here. */
	if (result < 0)
		log_error("audit_failed", "{s:s}", "error", strerror(-result));
	json_decref(arg);
}

int
store_audit_async(struct store *s, const char *event, json_t *detail)
{
	if (s->pg != NULL)
		return store_pg_audit_async(s->pg, event, detail);
	struct audit_one *a = malloc(sizeof(*a));
	int r;

	if (a == NULL) {
		json_decref(detail);
		return -ENOMEM;
	}
	*a = (struct audit_one){ event, detail };
	r = store_write_async(s, op_audit, a, audit_async_done, detail);
	if (r < 0) {
		free(a);
		json_decref(detail);
	}
	return r;
}

static json_t *
audit_row(sqlite3_stmt *st)
{
	json_t *detail =
	    json_loads((const char *)sqlite3_column_text(st, 5), 0, NULL);

	return json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:o, s:s, s:s}", "seq",
	    (json_int_t)sqlite3_column_int64(st, 0), "ts",
	    (const char *)sqlite3_column_text(st, 1), "event",
	    (const char *)sqlite3_column_text(st, 2), "job",
	    (const char *)sqlite3_column_text(st, 3), "actor",
	    (const char *)sqlite3_column_text(st, 4), "detail",
	    detail != NULL ? detail : json_null(), "prev",
	    (const char *)sqlite3_column_text(st, 6), "hash",
	    (const char *)sqlite3_column_text(st, 7));
}

int
store_audit_list(struct store *s, const char *job, int64_t after, size_t max,
    json_t **ret)
{
	if (s->pg != NULL)
		return store_pg_audit_list(s->pg, job, after, max, ret);
	struct conn *c;
	sqlite3_stmt *st = reader_stmt(s,
	    job != NULL ? ST_AUDIT_AFTER_JOB : ST_AUDIT_AFTER, &c);

	if (st == NULL)
		return -EIO;
	sqlite3_bind_int64(st, 1, after);
	if (job != NULL) {
		sqlite3_bind_text(st, 2, job, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)max);
	} else
		sqlite3_bind_int64(st, 2, (int64_t)max);
	return collect(s, c, st, audit_row, ret);
}

int
store_audit_verify(struct store *s, bool *ret_ok, int64_t *ret_first_bad,
    int64_t *ret_records)
{
	if (s->pg != NULL)
		return store_pg_audit_verify(s->pg, ret_ok, ret_first_bad,
		    ret_records);
	struct conn *c = reader_get(s);
	char prev[65] = GENESIS, hash[65];
	int64_t expect = 1, head = 0;
	sqlite3_stmt *st;
	int rc;

	if (c == NULL)
		return -EIO;
	/* One read transaction: the chain and its recorded length agree. */
	exec(c, "BEGIN");
	st = stmt(c, ST_META_GET);
	sqlite3_bind_text(st, 1, "audit_head", -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		head = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);

	*ret_ok = true;
	*ret_first_bad = 0;
	st = stmt(c, ST_AUDIT_ALL);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t seq = sqlite3_column_int64(st, 0);
		const char *col[8];

		for (int i = 1; i < 8; i++)
			col[i] = (const char *)sqlite3_column_text(st, i);
		store_audit_hash(prev, seq, col[1] ? col[1] : "",
		    col[2] ? col[2] : "", col[3], col[4], col[5] ? col[5] : "",
		    hash);
		if (seq != expect || col[6] == NULL ||
		    strcmp(col[6], prev) != 0 || col[7] == NULL ||
		    strcmp(col[7], hash) != 0) {
			*ret_ok = false;
			*ret_first_bad = seq != expect ? expect : seq;
			break;
		}
		memcpy(prev, col[7], sizeof(prev));
		expect++;
	}
	sqlite3_reset(st);
	exec(c, "COMMIT");
	if (*ret_ok && expect - 1 != head) {
		*ret_ok = false;
		*ret_first_bad = expect;
	}
	*ret_records = expect - 1;
	reader_put(s, c);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

int
store_watch_revocations(struct store *s, store_seq_fn fn, void *arg)
{
	return s->pg != NULL ? store_pg_watch_revocations(s->pg, fn, arg)
			     : -EOPNOTSUPP;
}

bool
store_is_postgresql(const char *addr)
{
	return store_pg_is_url(addr);
}

int
store_watch_acks(struct store *s, store_ack_fn fn, void *arg)
{
	return s->pg != NULL ? store_pg_watch_acks(s->pg, fn, arg)
			     : -EOPNOTSUPP;
}

int
store_ack_publish(struct store *s, const char *follower, int64_t acked,
    bool polling)
{
	return s->pg != NULL
	    ? store_pg_ack_publish(s->pg, follower, acked, polling)
	    : -EOPNOTSUPP;
}

int
store_upstream_put(struct store *s, const struct issued_row *row,
    int64_t *ret_id)
{
	return s->pg != NULL ? store_pg_upstream_put(s->pg, row, ret_id)
			     : -EOPNOTSUPP;
}

int
store_upstream_find(struct store *s, const char *job, const char *secret,
    int64_t version, int64_t now, struct issued_row *ret)
{
	return s->pg != NULL
	    ? store_pg_upstream_find(s->pg, job, secret, version, now, ret)
	    : -EOPNOTSUPP;
}

int
store_upstream_claim(struct store *s, const char *job, int64_t lease_s,
    size_t max, struct issued_row **ret, size_t *n)
{
	return s->pg != NULL
	    ? store_pg_upstream_claim(s->pg, job, lease_s, max, ret, n)
	    : -EOPNOTSUPP;
}

int
store_upstream_done(struct store *s, int64_t id)
{
	return s->pg != NULL ? store_pg_upstream_done(s->pg, id) : -EOPNOTSUPP;
}

int
store_upstream_retry(struct store *s, int64_t id, int64_t delay_s, int attempts)
{
	return s->pg != NULL
	    ? store_pg_upstream_retry(s->pg, id, delay_s, attempts)
	    : -EOPNOTSUPP;
}

int
store_upstream_pending(struct store *s, int64_t *ret)
{
	return s->pg != NULL ? store_pg_upstream_pending(s->pg, ret)
			     : -EOPNOTSUPP;
}

int
store_upstream_live(struct store *s, const char *secret, int64_t now,
    size_t max, struct issued_row **ret, size_t *n)
{
	return s->pg != NULL
	    ? store_pg_upstream_live(s->pg, secret, now, max, ret, n)
	    : -EOPNOTSUPP;
}
