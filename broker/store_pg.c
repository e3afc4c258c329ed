/*
 * The broker's store on PostgreSQL, for a fleet: several brokers on one
 * database, none keeping state of its own that a revoke depends on.
 *
 * Every write is a transaction that first locks the one row of
 * audit_head (SELECT ... FOR UPDATE): the audit chain's head and the
 * revocation sequence are serialised inside the database, so brokers
 * appending at once still make one chain with no gap, and revocations
 * commit in the order of their sequence numbers. Locks are always taken
 * in one order (audit_head, then a job's row), so writers never
 * deadlock; a serialisation failure or a deadlock report is retried.
 * Asynchronous writes (mints, refused keys) queue for one writer thread
 * that commits whatever has queued as one transaction, each write in a
 * savepoint of its own (a group commit). A revoke notifies the channel
 * cordon_revocations in its transaction; a listener thread per broker
 * hears every broker's revocations and hands their sequence numbers to
 * the broker's feed. Reads use a pool of connections. A connection lost
 * is dropped and a new one made on the next call: while the database is
 * away calls fail with -ENOTCONN (the API answers 503) and recover by
 * themselves.
 *
 * A database that does not answer (a host gone silent, a server that
 * accepts and says nothing) costs one call its deadline, not every call:
 * a connection attempt is given 2 s (connect_timeout), a statement 5 s
 * on the server (statement_timeout) and an answer PG_ANSWER_MS here;
 * an attempt that fails or an answer that does not come marks the store
 * down, and from then on every call needing a new connection fails at
 * once with -ENOTCONN while the listener thread reconnects in the
 * background; its connection made and LISTENing, the store is up again.
 */
#include "store_pg.h"

#include "issuers.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define PG_POOL_MAX 16
#define PG_STATEMENT_MS 5000 /* statement_timeout, on the server */
#define PG_ANSWER_MS (PG_STATEMENT_MS + 1000) /* a statement's, here */
#define PG_RETRIES 8
#define PG_PARAMS_MAX 12
#define PG_CHANNEL "cordon_revocations"
#define PG_ACKS "cordon_acks"
#define PG_ACKS_QUEUED_MAX 4096
#define GENESIS                                                                \
	"0000000000000000000000000000000000000000000000000000000000000000"

/*
 * The rule bindings (store.h) of the stored manifest versions: every
 * egress rule with an inject gives (its secret, its host). name, version
 * and secret are SQL expressions (a parameter or NULL, each NULL for
 * any).
 */
#define BIND_RULES_SQL(name, version, secret)                                  \
	"INSERT INTO bindings (secret, kind, value, origin, created) SELECT "  \
	"r->'inject'->>'secret', 'host', r->>'host', 'rule', min(m.created) "  \
	"FROM manifests m CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN "  \
	"jsonb_typeof(m.body::jsonb->'egress') = 'array' THEN "                \
	"m.body::jsonb->'egress' ELSE '[]'::jsonb END) r WHERE "               \
	"jsonb_typeof(r->'inject'->'secret') = 'string' AND "                  \
	"jsonb_typeof(r->'host') = 'string' AND (" name "::text IS NULL OR "   \
	"m.name = " name ") AND (" version                                     \
	"::bigint IS NULL OR m.version = " version ") AND (" secret            \
	"::text IS NULL OR r->'inject'->>'secret' "                            \
	"= " secret ") GROUP BY 1, 3 ON CONFLICT DO NOTHING"
#define BIND_EPOCH_BUMP_SQL                                                    \
	"INSERT INTO meta VALUES ('bindings_epoch', '1') ON CONFLICT (key) "   \
	"DO UPDATE SET value = (meta.value::bigint + 1)::text"

/* The migrations, one per version: migrations[v] brings v to v + 1. */
static const char *const migrations[STORE_PG_SCHEMA_VERSION] = {
	"CREATE TABLE manifests ("
	" name TEXT NOT NULL, version BIGINT NOT NULL, sha256 TEXT NOT NULL,"
	" body TEXT NOT NULL, created BIGINT NOT NULL,"
	" PRIMARY KEY (name, version));"
	"CREATE TABLE jobs ("
	" id TEXT PRIMARY KEY, manifest TEXT NOT NULL,"
	" manifest_version BIGINT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('running', 'revoked')),"
	" created BIGINT NOT NULL, deadline BIGINT NOT NULL,"
	" lease_expires BIGINT NOT NULL, stop_reason TEXT NOT NULL DEFAULT '',"
	" tokens_revoked BIGINT NOT NULL DEFAULT 0, revoked_at BIGINT,"
	" tokens_minted BIGINT NOT NULL DEFAULT 0);"
	"CREATE INDEX jobs_running ON jobs (state, lease_expires);"
	"CREATE TABLE tokens ("
	" hash BYTEA PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
	" job TEXT NOT NULL REFERENCES jobs (id), capability TEXT NOT NULL,"
	" params TEXT NOT NULL, aud TEXT NOT NULL, iat BIGINT NOT NULL,"
	" exp BIGINT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('active', 'revoked')));"
	"CREATE INDEX tokens_job ON tokens (job);"
	"CREATE TABLE revocations ("
	" seq BIGINT PRIMARY KEY, job TEXT NOT NULL, at BIGINT NOT NULL);"
	"CREATE INDEX revocations_job ON revocations (job);"
	"CREATE TABLE audit ("
	" seq BIGINT PRIMARY KEY, ts TEXT NOT NULL, event TEXT NOT NULL,"
	" job TEXT, actor TEXT, detail TEXT NOT NULL, prev TEXT NOT NULL,"
	" hash TEXT NOT NULL);"
	"CREATE INDEX audit_job ON audit (job, seq);"
	"CREATE TABLE audit_head ("
	" id INTEGER PRIMARY KEY CHECK (id = 1), seq BIGINT NOT NULL,"
	" hash TEXT NOT NULL);"
	"INSERT INTO audit_head VALUES (1, 0, '" GENESIS "');"
	"CREATE FUNCTION cordon_audit_append_only() RETURNS trigger"
	" LANGUAGE plpgsql AS $$ BEGIN"
	" RAISE EXCEPTION 'the audit is append-only'; END $$;"
	"CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit"
	" FOR EACH ROW EXECUTE FUNCTION cordon_audit_append_only();"
	"CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit"
	" FOR EACH STATEMENT EXECUTE FUNCTION cordon_audit_append_only();",
	/* 2: secrets (credentials.md), sealed values only: the key is never
	 * in the database. */
	"CREATE TABLE secrets ("
	" name TEXT NOT NULL, version BIGINT NOT NULL, sealed BYTEA NOT NULL,"
	" created BIGINT NOT NULL, last_used BIGINT NOT NULL DEFAULT 0,"
	" PRIMARY KEY (name, version));",
	/* 3: each job's mint bucket, one for the fleet (store_pg_mint_take):
	 * mints left, when they were counted (the database's clock), and
	 * whether a run of refusals is audited already. A table of its own,
	 * so that taking a mint never waits for the lock a mint's insert
	 * holds on the job's row until its group commit. */
	"CREATE TABLE IF NOT EXISTS mint_buckets ("
	" job TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL,"
	" at DOUBLE PRECISION NOT NULL,"
	" limited BOOLEAN NOT NULL DEFAULT false);",
	/* 4: the upstream credentials held for jobs (issuers.h), each
	 * sealed with secrets.aead, so that a revoke at any broker revokes
	 * them all, once; a revoking row is one to retry at next_try (the
	 * database's clock). */
	"CREATE TABLE IF NOT EXISTS upstream_held ("
	" id BIGSERIAL PRIMARY KEY, job TEXT NOT NULL, secret TEXT NOT NULL,"
	" version BIGINT NOT NULL, expires BIGINT NOT NULL,"
	" refresh_at BIGINT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('held', 'revoking')),"
	" next_try DOUBLE PRECISION NOT NULL DEFAULT 0,"
	" attempts INTEGER NOT NULL DEFAULT 0, sealed BYTEA NOT NULL);"
	"CREATE INDEX IF NOT EXISTS upstream_held_job ON upstream_held (job);"
	"CREATE INDEX IF NOT EXISTS upstream_held_due ON upstream_held (state, "
	"next_try);",
	/* 5: a token revoked alone has a revocation of its own on the feed,
	 * naming its id (NULL: the job's revocation). */
	"ALTER TABLE revocations ADD COLUMN IF NOT EXISTS token TEXT;",
	/* 6: where each secret has been or will be sent (store.h), the
	 * rules of every manifest version stored backfilled, and the
	 * list's epoch. */
	"CREATE TABLE IF NOT EXISTS bindings ("
	" secret TEXT NOT NULL,"
	" kind TEXT NOT NULL CHECK (kind IN ('host', 'addr')),"
	" value TEXT NOT NULL,"
	" origin TEXT NOT NULL CHECK (origin IN ('rule', 'declared', 'seen')),"
	" created BIGINT NOT NULL,"
	" PRIMARY KEY (secret, kind, value, origin));" BIND_RULES_SQL("NULL",
	    "NULL", "NULL") ";"
			    "INSERT INTO meta VALUES ('bindings_epoch', "
			    "'1') ON CONFLICT (key) DO NOTHING;",
};

/* An asynchronous write, queued for the writer thread. */
struct pg_op;
struct wctx;
typedef int (*pg_write_fn)(struct wctx *w, void *arg);

struct pg_op {
	pg_write_fn fn;
	void *arg; /* heap memory, freed after on_done */
	void (*arg_free)(void *arg);
	int result;
	store_done_fn on_done;
	void *done_arg;
	struct pg_op *next;
};

struct store_pg {
	char *url;
	pthread_mutex_t pool_mu;
	PGconn *pool[PG_POOL_MAX];
	size_t npool;
	/* A connection attempt failed or an answer did not come: no new
	 * connection is tried by a call until the listener has made one. */
	atomic_bool down;

	pthread_mutex_t mu;
	pthread_cond_t work;
	struct pg_op *head, *tail;
	bool closing;
	pthread_t writer;
	bool writer_started;

	pthread_t listener;
	bool listener_started;
	int wake[2]; /* the listener's stop pipe */
	store_seq_fn on_seq;
	void *seq_arg;

	/* The fleet's followers: what this broker tells (in order, by one
	 * thread) and what it hears from the others (by id, never its own). */
	char id[17];
	store_ack_fn on_ack;
	void *ack_arg;
	pthread_mutex_t amu;
	pthread_cond_t acks_queued;
	struct ack_msg *ahead, *atail;
	size_t nacks;
	bool aclosing;
	pthread_t notifier;
	bool notifier_started;
};

struct ack_msg {
	char text[128]; /* "<id> <polling> <acked> <follower>" */
	struct ack_msg *next;
};

/* A write transaction: its connection and the audit head it locked. */
struct wctx {
	PGconn *c;
	int64_t audit_seq;
	char audit_hash[65];
};

/* --- connections -------------------------------------------------------- */

bool
store_pg_is_url(const char *addr)
{
	return addr != NULL &&
	    (strncmp(addr, "postgresql://", 13) == 0 ||
		strncmp(addr, "postgres://", 11) == 0);
}

static void
notice_drop(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static PGconn *
pg_connect(const char *url)
{
	/* The URI's own values override the defaults before it. */
	static const char *const keys[] = { "connect_timeout",
		"application_name", "keepalives_idle", "keepalives_interval",
		"keepalives_count", "options", "dbname", NULL };
	const char *vals[] = { "2", "cordon-broker", "10", "5", "3",
		"-c statement_timeout=5000", url, NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);

	if (c != NULL && PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		c = NULL;
	}
	/* A library does not write to stderr: notices go nowhere. */
	if (c != NULL)
		PQsetNoticeProcessor(c, notice_drop, NULL);
	return c;
}

/* A pooled connection, else a new one unless the store is down and the
 * listener reconnects (then NULL at once). */
static PGconn *
conn_get(struct store_pg *s)
{
	PGconn *c = NULL;

	pthread_mutex_lock(&s->pool_mu);
	if (s->npool > 0)
		c = s->pool[--s->npool];
	pthread_mutex_unlock(&s->pool_mu);
	if (c != NULL || (atomic_load(&s->down) && s->listener_started))
		return c;
	if ((c = pg_connect(s->url)) == NULL)
		atomic_store(&s->down, true);
	return c;
}

/* Drops every pooled connection: one was lost, so all likely were. */
static void
pool_flush(struct store_pg *s)
{
	PGconn *old[PG_POOL_MAX];
	size_t n;

	pthread_mutex_lock(&s->pool_mu);
	n = s->npool;
	memcpy(old, s->pool, n * sizeof(old[0]));
	s->npool = 0;
	pthread_mutex_unlock(&s->pool_mu);
	for (size_t i = 0; i < n; i++)
		PQfinish(old[i]);
}

static void
conn_put(struct store_pg *s, PGconn *c)
{
	if (PQstatus(c) != CONNECTION_OK ||
	    PQtransactionStatus(c) != PQTRANS_IDLE) {
		/* Still busy: its answer did not come in time (q), so the
		 * others' will not either. */
		if (PQstatus(c) == CONNECTION_OK &&
		    PQtransactionStatus(c) == PQTRANS_ACTIVE)
			atomic_store(&s->down, true);
		if (PQstatus(c) != CONNECTION_OK ||
		    PQtransactionStatus(c) == PQTRANS_ACTIVE)
			pool_flush(s);
		PQfinish(c);
		return;
	}
	pthread_mutex_lock(&s->pool_mu);
	if (s->npool < PG_POOL_MAX) {
		s->pool[s->npool++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&s->pool_mu);
	if (c != NULL)
		PQfinish(c);
}

/* --- statements --------------------------------------------------------- */

struct params {
	const char *v[PG_PARAMS_MAX];
	int len[PG_PARAMS_MAX];
	int fmt[PG_PARAMS_MAX];
	char num[PG_PARAMS_MAX][24];
	int n;
};

static void
p_text(struct params *p, const char *v)
{
	p->v[p->n] = v;
	p->len[p->n] = 0;
	p->fmt[p->n] = 0;
	p->n++;
}

static void
p_int(struct params *p, int64_t v)
{
	snprintf(p->num[p->n], sizeof(p->num[0]), "%lld", (long long)v);
	p_text(p, p->num[p->n]);
}

static void
p_hash(struct params *p, const unsigned char *hash)
{
	p->v[p->n] = (const char *)hash;
	p->len[p->n] = STORE_HASH_LEN;
	p->fmt[p->n] = 1;
	p->n++;
}

/* A binary parameter: len bytes at v (a sealed secret). */
static void
p_blob(struct params *p, const unsigned char *v, size_t len)
{
	p->v[p->n] = (const char *)v;
	p->len[p->n] = (int)len;
	p->fmt[p->n] = 1;
	p->n++;
}

/* What a failed result means: -EAGAIN for a retryable conflict,
 * -ENOTCONN for a lost connection, -EEXIST, -ENOSPC or -EIO. */
static int
pg_errno(PGconn *c, const PGresult *res)
{
	const char *state =
	    res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (PQstatus(c) != CONNECTION_OK)
		return -ENOTCONN;
	if (state == NULL)
		return -EIO;
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
		return -EAGAIN;
	if (strcmp(state, "23505") == 0)
		return -EEXIST;
	if (strncmp(state, "53", 2) == 0)
		return -ENOSPC;
	if (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
	    strcmp(state, "57P03") == 0)
		return -ENOTCONN;
	if (strcmp(state, "57014") == 0)
		return -ETIMEDOUT; /* statement_timeout */
	return -EIO;
}

/* Waits until c's answer can be read, up to deadline: 0, -ETIMEDOUT, or
 * -ENOTCONN. */
static int
wait_answer(PGconn *c, int64_t deadline)
{
	while (PQisBusy(c)) {
		struct pollfd p = { .fd = PQsocket(c), .events = POLLIN };
		int64_t left = deadline - monotonic_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -ENOTCONN;
		if (PQconsumeInput(c) == 0)
			return -ENOTCONN;
	}
	return 0;
}

/* Runs sql with p (may be NULL): 0 with *ret (PQclear it, may be NULL
 * to drop the rows), or -errno. */
static int
q(PGconn *c, const char *sql, const struct params *p, PGresult **ret)
{
	int64_t deadline = monotonic_ms() + PG_ANSWER_MS;
	PGresult *res = NULL, *next;
	ExecStatusType st;
	int r = 0;

	/* Without parameters, the simple protocol: a migration's several
	 * statements go as one. PQexec's answer, with a deadline: the
	 * last result (the last with rows, if any), or the error that
	 * stopped the rest. An answer that does not come leaves c busy,
	 * for conn_put to drop. */
	if ((p == NULL ? PQsendQuery(c, sql)
		       : PQsendQueryParams(c, sql, p->n, NULL, p->v, p->len,
			     p->fmt, 0)) == 0)
		return pg_errno(c, NULL);
	for (;;) {
		if ((r = wait_answer(c, deadline)) < 0) {
			PQclear(res);
			return r;
		}
		if ((next = PQgetResult(c)) == NULL)
			break;
		/* An error stays; else rows stay over a later command's
		 * plain answer (a COMMIT after an UPDATE ... RETURNING). */
		if (res != NULL &&
		    (PQresultStatus(res) == PGRES_FATAL_ERROR ||
			(PQresultStatus(res) == PGRES_TUPLES_OK &&
			    PQresultStatus(next) != PGRES_FATAL_ERROR))) {
			PQclear(next);
		} else {
			PQclear(res);
			res = next;
		}
	}
	st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		r = pg_errno(c, res);
	if (r < 0 || ret == NULL)
		PQclear(res);
	else
		*ret = res;
	return r;
}

static int
cmd(PGconn *c, const char *sql)
{
	return q(c, sql, NULL, NULL);
}

static int64_t
col_int(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col)
	    ? 0
	    : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static void
col_copy(char *dst, size_t len, const PGresult *res, int row, int col)
{
	snprintf(dst, len, "%s", PQgetvalue(res, row, col));
}

static const char *
col_str(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* --- transactions -------------------------------------------------------- */

typedef int (*pg_read_fn)(PGconn *c, void *arg);

/* Runs a read on a pooled connection; once more on a fresh one when the
 * pooled one turned out to be lost (the database restarted). */
static int
pg_read(struct store_pg *s, pg_read_fn fn, void *arg)
{
	int r = -ENOTCONN;

	for (int i = 0; i < 2 && r == -ENOTCONN; i++) {
		PGconn *c = conn_get(s);

		if (c == NULL)
			return -ENOTCONN;
		r = fn(c, arg);
		conn_put(s, c);
	}
	return r;
}

/* Locks the audit head: every write transaction's first step. */
static int
audit_lock(struct wctx *w)
{
	PGresult *res;
	int r = q(w->c,
	    "SELECT seq, hash FROM audit_head WHERE id = 1 FOR "
	    "UPDATE",
	    NULL, &res);

	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -EIO;
	}
	w->audit_seq = col_int(res, 0, 0);
	col_copy(w->audit_hash, sizeof(w->audit_hash), res, 0, 1);
	PQclear(res);
	return 0;
}

/*
 * Runs fns[i](w, args[i]) in one transaction after the audit head's
 * lock, each in a savepoint (results[i] its result; a failed one is
 * rolled back alone). Retried from the start on a conflict or a lost
 * connection found at BEGIN. Returns the transaction's own result: when
 * it is not 0 nothing of it is durable.
 */
static int
pg_write_many(struct store_pg *s, size_t n, pg_write_fn const *fns,
    void *const *args, int *results)
{
	int r = -EAGAIN;

	for (int attempt = 0; attempt < PG_RETRIES && r == -EAGAIN; attempt++) {
		struct wctx w = { .c = conn_get(s) };

		if (w.c == NULL)
			return -ENOTCONN;
		r = cmd(w.c, "BEGIN");
		if (r == -ENOTCONN && attempt == 0)
			r = -EAGAIN; /* a pooled connection, lost: again */
		if (r == 0)
			r = audit_lock(&w);
		for (size_t i = 0; r == 0 && i < n; i++) {
			int64_t seq = w.audit_seq;
			char hash[65];

			memcpy(hash, w.audit_hash, sizeof(hash));
			if (n > 1 && (r = cmd(w.c, "SAVEPOINT op")) < 0)
				break;
			results[i] = fns[i](&w, args[i]);
			if (results[i] == -EAGAIN || results[i] == -ENOTCONN) {
				r = results[i];
				break;
			}
			if (n > 1 && results[i] < 0) {
				r = cmd(w.c, "ROLLBACK TO SAVEPOINT op");
				w.audit_seq = seq;
				memcpy(w.audit_hash, hash, sizeof(hash));
			} else if (n > 1)
				r = cmd(w.c, "RELEASE SAVEPOINT op");
			else if (results[i] < 0)
				r = results[i];
		}
		if (r == 0)
			r = cmd(w.c, "COMMIT");
		else if (PQstatus(w.c) == CONNECTION_OK)
			cmd(w.c, "ROLLBACK");
		conn_put(s, w.c);
		if (n == 1 && r < 0 && r != -EAGAIN)
			results[0] = r;
	}
	return r;
}

/* One write in a transaction of its own: its result. */
static int
pg_write(struct store_pg *s, pg_write_fn fn, void *arg)
{
	int result = 0;
	int r = pg_write_many(s, 1, &fn, &arg, &result);

	return r < 0 ? r : result;
}

/* --- the audit chain ----------------------------------------------------- */

/* Appends a record in w's transaction, which holds the head's lock. */
static int
audit_append(struct wctx *w, const char *event, const char *job,
    const char *actor, json_t *detail)
{
	char ts[40], hash[65];
	json_t *empty = detail == NULL ? json_object() : NULL;
	_cleanup_free_ char *text = json_dumps(detail != NULL ? detail : empty,
	    JSON_COMPACT | JSON_SORT_KEYS);
	int64_t seq = w->audit_seq + 1;
	struct params p = { 0 };
	int r;

	json_decref(empty);
	if (text == NULL)
		return -ENOMEM;
	log_timestamp(ts, sizeof(ts));
	store_audit_hash(w->audit_hash, seq, ts, event, job, actor, text, hash);
	p_int(&p, seq);
	p_text(&p, ts);
	p_text(&p, event);
	p_text(&p, job);
	p_text(&p, actor);
	p_text(&p, text);
	p_text(&p, w->audit_hash);
	p_text(&p, hash);
	r = q(w->c,
	    "INSERT INTO audit (seq, ts, event, job, actor, detail, prev, "
	    "hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
	    &p, NULL);
	if (r < 0)
		return r;
	p.n = 0;
	p_int(&p, seq);
	p_text(&p, hash);
	r = q(w->c, "UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1",
	    &p, NULL);
	if (r < 0)
		return r;
	w->audit_seq = seq;
	memcpy(w->audit_hash, hash, sizeof(hash));
	return 0;
}

/* --- the writer thread and the listener ---------------------------------- */

static void *
writer_main(void *arg)
{
	struct store_pg *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct pg_op *batch;
		size_t n = 0;

		while (s->head == NULL && !s->closing)
			pthread_cond_wait(&s->work, &s->mu);
		if (s->head == NULL)
			break;
		batch = s->head;
		s->head = s->tail = NULL;
		pthread_mutex_unlock(&s->mu);

		for (struct pg_op *op = batch; op != NULL; op = op->next)
			n++;
		pg_write_fn *fns = calloc(n, sizeof(*fns));
		void **args = calloc(n, sizeof(*args));
		int *results = calloc(n, sizeof(*results));
		int r = fns != NULL && args != NULL && results != NULL
		    ? 0
		    : -ENOMEM;
		size_t i = 0;

		for (struct pg_op *op = batch; r == 0 && op != NULL;
		     op = op->next, i++) {
			fns[i] = op->fn;
			args[i] = op->arg;
		}
		if (r == 0)
			r = pg_write_many(s, n, fns, args, results);
		i = 0;
		for (struct pg_op *op = batch, *next; op != NULL;
		     op = next, i++) {
			next = op->next;
			/* Nothing of the batch is durable unless it committed. */
			op->on_done(op->done_arg, r < 0 ? r : results[i]);
			op->arg_free(op->arg);
			free(op);
		}
		free(fns);
		free(args);
		free(results);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int
write_async(struct store_pg *s, pg_write_fn fn, void *arg,
    void (*arg_free)(void *), store_done_fn on_done, void *done_arg)
{
	struct pg_op *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return -ENOMEM;
	*op = (struct pg_op){ .fn = fn,
		.arg = arg,
		.arg_free = arg_free,
		.on_done = on_done,
		.done_arg = done_arg };
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

/* Waits up to ms for the stop pipe: true when stopping. */
static bool
listener_sleep(struct store_pg *s, int fd, int ms)
{
	struct pollfd p[2] = { { s->wake[0], POLLIN, 0 }, { fd, POLLIN, 0 } };

	return poll(p, fd >= 0 ? 2 : 1, ms) > 0 && (p[0].revents != 0);
}

static void
listener_publish_head(struct store_pg *s, PGconn *c)
{
	PGresult *res;

	if (q(c, "SELECT coalesce(max(seq), 0) FROM revocations", NULL, &res) ==
	    0) {
		s->on_seq(s->seq_arg, col_int(res, 0, 0));
		PQclear(res);
	}
}

/* Another broker's word on its follower: "<id> <0|1> <acked> <name>". */
static void
ack_heard(struct store_pg *s, const char *text)
{
	const char *p = text;
	char *end;
	bool polling;
	long long acked;

	if (strlen(text) < 21 || strncmp(text, s->id, 16) == 0 ||
	    text[16] != ' ' || (text[17] != '0' && text[17] != '1') ||
	    text[18] != ' ')
		return; /* our own, or not ours to read */
	polling = text[17] == '1';
	p = text + 19;
	errno = 0;
	acked = strtoll(p, &end, 10);
	if (errno != 0 || end == p || *end != ' ' || end[1] == '\0')
		return;
	s->on_ack(s->ack_arg, end + 1, (int64_t)acked, polling);
}

/* Sends the queued acknowledgements, a batch a transaction (one
 * transaction's notifications arrive together and in order). While the
 * database is away they are dropped: a revoke then declares the
 * follower gone, which is what it is to the fleet.
 *
 * The commit waits for no WAL flush, and needs no synchronous_commit
 * off for it: PostgreSQL flushes at a commit only when the transaction
 * wrote WAL before its commit record, and NOTIFY writes none (the WAL
 * writer flushes the record later; it_pgnotify counts
 * pg_stat_wal.wal_sync). Nothing durable rides on it: the revocation
 * acknowledged was flushed at its own commit, and an acknowledgement is
 * kept in no table, so one lost is never read again (the revoke names
 * the follower gone, and the follower reads the revocation from the
 * table at its next poll). Keep this transaction free of writes: one
 * would make every acknowledgement wait for the disk inside the
 * revoke's FEED_ACK_WAIT_MS. */
static void *
notifier_main(void *arg)
{
	struct store_pg *s = arg;

	pthread_mutex_lock(&s->amu);
	for (;;) {
		struct ack_msg *batch;

		while (s->ahead == NULL && !s->aclosing)
			pthread_cond_wait(&s->acks_queued, &s->amu);
		if (s->ahead == NULL)
			break;
		batch = s->ahead;
		s->ahead = s->atail = NULL;
		s->nacks = 0;
		pthread_mutex_unlock(&s->amu);

		PGconn *c = conn_get(s);
		int r = c != NULL ? cmd(c, "BEGIN") : -ENOTCONN;

		for (struct ack_msg *m = batch, *next; m != NULL; m = next) {
			struct params p = { 0 };

			next = m->next;
			p_text(&p, m->text);
			if (r == 0)
				r = q(c, "SELECT pg_notify('" PG_ACKS "', $1)",
				    &p, NULL);
			free(m);
		}
		if (c != NULL) {
			if (r == 0)
				cmd(c, "COMMIT");
			else if (PQstatus(c) == CONNECTION_OK)
				cmd(c, "ROLLBACK");
			conn_put(s, c);
		}
		pthread_mutex_lock(&s->amu);
	}
	pthread_mutex_unlock(&s->amu);
	return NULL;
}

int
store_pg_watch_acks(struct store_pg *s, store_ack_fn fn, void *arg)
{
	if (s->listener_started)
		return -EBUSY;
	s->on_ack = fn;
	s->ack_arg = arg;
	return 0;
}

int
store_pg_ack_publish(struct store_pg *s, const char *follower, int64_t acked,
    bool polling)
{
	struct ack_msg *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return -ENOMEM;
	snprintf(m->text, sizeof(m->text), "%s %d %lld %s", s->id,
	    polling ? 1 : 0, (long long)acked, follower);
	pthread_mutex_lock(&s->amu);
	if (s->aclosing || s->nacks >= PG_ACKS_QUEUED_MAX) {
		pthread_mutex_unlock(&s->amu);
		free(m);
		return -ENOBUFS;
	}
	if (s->atail != NULL)
		s->atail->next = m;
	else
		s->ahead = m;
	s->atail = m;
	s->nacks++;
	pthread_cond_signal(&s->acks_queued);
	pthread_mutex_unlock(&s->amu);
	return 0;
}

/* LISTENs for every broker's revocations; after each (re)connection it
 * hands over the head too, for what was missed while away. */
static void *
listener_main(void *arg)
{
	struct store_pg *s = arg;

	for (;;) {
		PGconn *c = pg_connect(s->url);

		if (c == NULL || cmd(c, "LISTEN " PG_CHANNEL) < 0 ||
		    (s->on_ack != NULL && cmd(c, "LISTEN " PG_ACKS) < 0)) {
			PQfinish(c);
			if (listener_sleep(s, -1, 500))
				return NULL;
			continue;
		}
		/* The database answers: calls may connect again. */
		atomic_store(&s->down, false);
		listener_publish_head(s, c);
		for (;;) {
			PGnotify *n;

			if (listener_sleep(s, PQsocket(c), 500)) {
				PQfinish(c);
				return NULL;
			}
			/* A call found the database silent: this connection
			 * may be as stuck as its was; a new one tells. */
			if (atomic_load(&s->down))
				break;
			if (PQconsumeInput(c) == 0)
				break;
			while ((n = PQnotifies(c)) != NULL) {
				if (strcmp(n->relname, PG_ACKS) == 0)
					ack_heard(s, n->extra);
				else
					s->on_seq(s->seq_arg,
					    strtoll(n->extra, NULL, 10));
				PQfreemem(n);
			}
			if (PQstatus(c) != CONNECTION_OK)
				break;
		}
		PQfinish(c);
	}
}

int
store_pg_watch_revocations(struct store_pg *s, store_seq_fn fn, void *arg)
{
	if (s->listener_started)
		return -EBUSY;
	s->on_seq = fn;
	s->seq_arg = arg;
	if (pthread_create(&s->listener, NULL, listener_main, s) != 0)
		return -EAGAIN;
	s->listener_started = true;
	return 0;
}

/* --- open and close ------------------------------------------------------ */

/* Brings the schema to STORE_PG_SCHEMA_VERSION in one transaction, under
 * an advisory lock, so that brokers starting at once migrate once. */
static int
schema_upgrade(PGconn *c)
{
	PGresult *res;
	int64_t v = 0;
	int r = cmd(c, "BEGIN");

	if (r == 0)
		r = cmd(c, "SELECT pg_advisory_xact_lock(7701)");
	if (r == 0)
		r = cmd(c,
		    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY "
		    "KEY, value TEXT NOT NULL)");
	/* Each secret version's reflections (store.h): a table without a
	 * backfill, so no version of its own. */
	if (r == 0)
		r = cmd(c,
		    "CREATE TABLE IF NOT EXISTS secret_reflections ("
		    " secret TEXT NOT NULL, version BIGINT NOT NULL,"
		    " budget BIGINT NOT NULL,"
		    " reflections BIGINT NOT NULL DEFAULT 0,"
		    " tripped BIGINT NOT NULL DEFAULT 0, burned_at BIGINT,"
		    " burned_reason TEXT, burned_job TEXT,"
		    " PRIMARY KEY (secret, version))");
	/* The values burned, by keyed digest, fleet-wide (store.h). */
	if (r == 0)
		r = cmd(c,
		    "CREATE TABLE IF NOT EXISTS burned_values ("
		    " digest BYTEA PRIMARY KEY, secret TEXT NOT NULL,"
		    " version BIGINT NOT NULL, burned_at BIGINT NOT NULL)");
	if (r == 0 &&
	    (r = q(c, "SELECT value FROM meta WHERE key = 'schema_version'",
		 NULL, &res)) == 0) {
		if (PQntuples(res) == 1)
			v = col_int(res, 0, 0);
		PQclear(res);
	}
	if (r == 0 && v > STORE_PG_SCHEMA_VERSION)
		r = -EPROTONOSUPPORT;
	for (; r == 0 && v < STORE_PG_SCHEMA_VERSION; v++) {
		struct params p = { 0 };

		r = cmd(c, migrations[v]);
		p_int(&p, v + 1);
		if (r == 0)
			r = q(c,
			    "INSERT INTO meta VALUES ('schema_version', $1) "
			    "ON CONFLICT (key) DO UPDATE SET value = "
			    "excluded.value",
			    &p, NULL);
	}
	if (r == 0)
		r = cmd(c, "COMMIT");
	else if (PQstatus(c) == CONNECTION_OK)
		cmd(c, "ROLLBACK");
	return r;
}

int
store_pg_open(const char *url, struct store_pg **ret)
{
	struct store_pg *s = calloc(1, sizeof(*s));
	PGconn *c;
	int r;

	if (s == NULL)
		return -ENOMEM;
	pthread_mutex_init(&s->pool_mu, NULL);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_mutex_init(&s->amu, NULL);
	pthread_cond_init(&s->acks_queued, NULL);
	s->wake[0] = s->wake[1] = -1;
	s->url = strdup(url);
	r = s->url != NULL ? 0 : -ENOMEM;
	if (r == 0 && pipe2(s->wake, O_CLOEXEC) < 0)
		r = -errno;
	if (r == 0 && (c = pg_connect(url)) == NULL)
		r = -ENOTCONN;
	if (r == 0) {
		r = schema_upgrade(c);
		conn_put(s, c);
	}
	if (r == 0) {
		unsigned char raw[8];

		if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
			r = -EIO;
		for (size_t i = 0; r == 0 && i < sizeof(raw); i++)
			snprintf(s->id + 2 * i, 3, "%02x", raw[i]);
	}
	if (r == 0 && pthread_create(&s->writer, NULL, writer_main, s) != 0)
		r = -EAGAIN;
	if (r == 0)
		s->writer_started = true;
	if (r == 0 && pthread_create(&s->notifier, NULL, notifier_main, s) != 0)
		r = -EAGAIN;
	if (r < 0) {
		store_pg_close(s);
		return r;
	}
	s->notifier_started = true;
	*ret = s;
	return 0;
}

void
store_pg_close(struct store_pg *s)
{
	if (s == NULL)
		return;
	if (s->writer_started) {
		pthread_mutex_lock(&s->mu);
		s->closing = true;
		pthread_cond_signal(&s->work);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->writer, NULL);
	}
	if (s->notifier_started) {
		pthread_mutex_lock(&s->amu);
		s->aclosing = true;
		pthread_cond_signal(&s->acks_queued);
		pthread_mutex_unlock(&s->amu);
		pthread_join(s->notifier, NULL);
	}
	if (s->listener_started) {
		char c = 1;

		if (write(s->wake[1], &c, 1) < 0) {
			/* A pipe this fresh takes one byte. */
		}
		pthread_join(s->listener, NULL);
	}
	pool_flush(s);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	pthread_mutex_destroy(&s->pool_mu);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->work);
	pthread_mutex_destroy(&s->amu);
	pthread_cond_destroy(&s->acks_queued);
	free(s->url);
	free(s);
}

/* --- secret bindings, in a write ----------------------------------------- */

/* The bindings' list changed: its epoch moves on. */
static int
epoch_bump(struct wctx *w)
{
	return cmd(w->c, BIND_EPOCH_BUMP_SQL);
}

/* Adds the rule bindings of manifest name at version (NULL, 0: any) of
 * secret (NULL: any) in w's transaction, the epoch moved when any was
 * added: 0 or -errno. */
static int
bind_rules(struct wctx *w, const char *name, int64_t version,
    const char *secret)
{
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_text(&p, name);
	if (version > 0)
		p_int(&p, version);
	else
		p_text(&p, NULL);
	p_text(&p, secret);
	r = q(w->c, BIND_RULES_SQL("$1", "$2", "$3"), &p, &res);
	if (r < 0)
		return r;
	bool added = strtoll(PQcmdTuples(res), NULL, 10) > 0;
	PQclear(res);
	return added ? epoch_bump(w) : 0;
}

/* The list's counts in w's transaction, as bind_count of store.c (the
 * audit head's lock held: no other write counts or writes meanwhile). */
static int
bind_count(struct wctx *w, const char *secret, const char *unlisted,
    struct store_bind_counts *ret)
{
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_text(&p, secret);
	p_text(&p, unlisted);
	r = q(w->c,
	    "SELECT count(DISTINCT secret), count(*), coalesce(sum(CASE "
	    "WHEN secret = $1 THEN 1 ELSE 0 END), 0), coalesce(sum(CASE "
	    "WHEN secret = $1 AND kind = 'addr' THEN 1 ELSE 0 END), 0) FROM "
	    "(SELECT DISTINCT b.secret, b.kind, b.value FROM bindings b "
	    "WHERE EXISTS (SELECT 1 FROM secrets s WHERE s.name = b.secret) "
	    "AND b.secret <> $2) t",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -EIO;
	}
	ret->secrets = col_int(res, 0, 0);
	ret->keys = col_int(res, 0, 1);
	ret->of = col_int(res, 0, 2);
	ret->addrs = col_int(res, 0, 3);
	PQclear(res);
	return 0;
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
op_manifest_put(struct wctx *w, void *arg)
{
	struct manifest_put *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int64_t cur = 0;
	int r;

	json_decref(a->prev);
	a->prev = NULL;
	p_text(&p, a->name);
	r = q(w->c,
	    "SELECT version, sha256, body FROM manifests WHERE name = $1 "
	    "ORDER BY version DESC LIMIT 1",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) == 1) {
		cur = col_int(res, 0, 0);
		if (strcmp(PQgetvalue(res, 0, 1), a->sha256) == 0) {
			a->version = cur;
			a->added = false;
			PQclear(res);
			return 0;
		}
		a->prev = json_loads(PQgetvalue(res, 0, 2), 0, NULL);
	}
	PQclear(res);
	p.n = 0;
	p_text(&p, a->name);
	p_int(&p, cur + 1);
	p_text(&p, a->sha256);
	p_text(&p, a->text);
	p_int(&p, (int64_t)time(NULL));
	r = q(w->c,
	    "INSERT INTO manifests (name, version, sha256, body, created) "
	    "VALUES ($1, $2, $3, $4, $5)",
	    &p, NULL);
	if (r < 0)
		return r;
	a->version = cur + 1;
	a->added = true;
	json_t *d = json_pack("{s:s, s:I, s:s}", "manifest", a->name, "version",
	    (json_int_t)a->version, "sha256", a->sha256);
	r = audit_append(w, "manifest_put", NULL, a->actor, d);
	json_decref(d);
	/* Its injecting rules' hosts are bound from this version on, within
	 * the caps. */
	struct store_bind_counts before, after;
	if (r == 0)
		r = bind_count(w, "", "", &before);
	if (r == 0)
		r = bind_rules(w, a->name, a->version, NULL);
	if (r == 0)
		r = bind_count(w, "", "", &after);
	if (r == 0)
		r = store_bindings_over(&before, &after, &a->over);
	return r;
}

int
store_pg_manifest_put(struct store_pg *s, const char *name, const char *text,
    const char *sha256, const char *actor, int64_t *ret_version,
    json_t **ret_prev, bool *ret_new, struct store_bind_over *ret_over)
{
	struct manifest_put a = { name, text, sha256, actor, 0, NULL, false,
		{ NULL, 0 } };
	int r = pg_write(s, op_manifest_put, &a);

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

struct manifest_get {
	const char *name;
	int64_t version;
	struct manifest_version *out;
};

static int
read_manifest(PGconn *c, void *arg)
{
	struct manifest_get *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_text(&p, a->name);
	if (a->version > 0)
		p_int(&p, a->version);
	r = q(c,
	    a->version > 0
		? "SELECT version, sha256, body, created FROM manifests "
		  "WHERE name = $1 AND version = $2"
		: "SELECT version, sha256, body, created FROM manifests "
		  "WHERE name = $1 ORDER BY version DESC LIMIT 1",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) == 1) {
		a->out->version = col_int(res, 0, 0);
		col_copy(a->out->sha256, sizeof(a->out->sha256), res, 0, 1);
		a->out->body = json_loads(PQgetvalue(res, 0, 2), 0, NULL);
		a->out->created = col_int(res, 0, 3);
		r = a->out->body != NULL ? 0 : -EIO;
	} else
		r = -ENOENT;
	PQclear(res);
	return r;
}

int
store_pg_manifest_get(struct store_pg *s, const char *name, int64_t version,
    struct manifest_version *ret)
{
	struct manifest_get a = { name, version, ret };

	return pg_read(s, read_manifest, &a);
}

/* --- jobs ---------------------------------------------------------------- */

static const char job_cols[] =
    "id, manifest, manifest_version, state, created, deadline, "
    "lease_expires, stop_reason, tokens_revoked, tokens_minted, "
    "coalesce(revoked_at, 0)";

/* Reads job id (locked FOR UPDATE when lock): 0, -ENOENT or -errno. */
static int
job_read(PGconn *c, const char *id, bool lock, struct job *j)
{
	char sql[300];
	struct params p = { 0 };
	PGresult *res;
	int r;

	snprintf(sql, sizeof(sql), "SELECT %s FROM jobs WHERE id = $1%s",
	    job_cols, lock ? " FOR UPDATE" : "");
	p_text(&p, id);
	r = q(c, sql, &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -ENOENT;
	}
	col_copy(j->id, sizeof(j->id), res, 0, 0);
	col_copy(j->manifest, sizeof(j->manifest), res, 0, 1);
	j->manifest_version = col_int(res, 0, 2);
	col_copy(j->state, sizeof(j->state), res, 0, 3);
	j->created = col_int(res, 0, 4);
	j->deadline = col_int(res, 0, 5);
	j->lease_expires = col_int(res, 0, 6);
	col_copy(j->stop_reason, sizeof(j->stop_reason), res, 0, 7);
	j->tokens_revoked = col_int(res, 0, 8);
	j->tokens_minted = col_int(res, 0, 9);
	j->revoked_at = col_int(res, 0, 10);
	PQclear(res);
	return 0;
}

static int
insert_token(struct wctx *w, const struct token_row *t, const char *actor)
{
	struct params p = { 0 };
	int r;

	p_hash(&p, t->hash);
	p_text(&p, t->id);
	p_text(&p, t->job);
	p_text(&p, t->capability);
	p_text(&p, t->params);
	p_text(&p, t->audience);
	p_int(&p, t->iat);
	p_int(&p, t->exp);
	r = q(w->c,
	    "INSERT INTO tokens (hash, id, job, capability, params, aud, iat, "
	    "exp, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active')",
	    &p, NULL);
	if (r < 0)
		return r;
	json_t *d =
	    json_pack("{s:s, s:s, s:o, s:s, s:I}", "token", t->id, "capability",
		t->capability, "params", json_loads(t->params, 0, NULL), "aud",
		t->audience, "exp", (json_int_t)t->exp);
	r = audit_append(w, "token_minted", t->job, actor, d);
	json_decref(d);
	if (r < 0 || strcmp(t->capability, CANARY_CAPABILITY) == 0)
		return r;
	p.n = 0;
	p_text(&p, t->job);
	return q(w->c,
	    "UPDATE jobs SET tokens_minted = tokens_minted + 1 WHERE id = $1",
	    &p, NULL);
}

struct job_create {
	const struct job *j;
	const struct token_row *tokens;
	size_t ntokens;
	const char *actor;
};

static int
op_job_create(struct wctx *w, void *arg)
{
	struct job_create *a = arg;
	const struct job *j = a->j;
	struct params p = { 0 };
	int r;

	p_text(&p, j->id);
	p_text(&p, j->manifest);
	p_int(&p, j->manifest_version);
	p_int(&p, j->created);
	p_int(&p, j->deadline);
	p_int(&p, j->lease_expires);
	r = q(w->c,
	    "INSERT INTO jobs (id, manifest, manifest_version, state, "
	    "created, deadline, lease_expires) VALUES ($1, $2, $3, "
	    "'running', $4, $5, $6)",
	    &p, NULL);
	if (r < 0)
		return r;
	json_t *d = json_pack("{s:s, s:I, s:I}", "manifest", j->manifest,
	    "manifest_version", (json_int_t)j->manifest_version, "deadline",
	    (json_int_t)j->deadline);
	r = audit_append(w, "job_created", j->id, a->actor, d);
	json_decref(d);
	for (size_t i = 0; r == 0 && i < a->ntokens; i++)
		r = insert_token(w, &a->tokens[i], a->actor);
	return r;
}

int
store_pg_job_create(struct store_pg *s, const struct job *j,
    const struct token_row *tokens, size_t ntokens, const char *actor)
{
	struct job_create a = { j, tokens, ntokens, actor };

	return pg_write(s, op_job_create, &a);
}

struct job_get {
	const char *id;
	struct job *out;
	json_t *tokens; /* NULL when not asked for */
	bool want_tokens;
};

static int
read_job_get(PGconn *c, void *arg)
{
	struct job_get *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	/* One snapshot: the job and its tokens agree. */
	r = cmd(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	if (r == 0)
		r = job_read(c, a->id, false, a->out);
	if (r == 0 && a->want_tokens) {
		p_text(&p, a->id);
		r = q(c,
		    "SELECT id, capability, params, aud, iat, exp, state "
		    "FROM tokens WHERE job = $1 ORDER BY iat, id",
		    &p, &res);
		if (r == 0) {
			json_decref(a->tokens);
			a->tokens = json_array();
			for (int i = 0; i < PQntuples(res); i++) {
				json_t *params =
				    json_loads(PQgetvalue(res, i, 2), 0, NULL);

				json_array_append_new(a->tokens,
				    json_pack("{s:s, s:s, s:o, s:s, s:I, s:I, "
					      "s:s}",
					"id", PQgetvalue(res, i, 0),
					"capability", PQgetvalue(res, i, 1),
					"params",
					params != NULL ? params : json_object(),
					"aud", PQgetvalue(res, i, 3), "iat",
					(json_int_t)col_int(res, i, 4), "exp",
					(json_int_t)col_int(res, i, 5), "state",
					PQgetvalue(res, i, 6)));
			}
			PQclear(res);
		}
	}
	if (PQstatus(c) == CONNECTION_OK)
		cmd(c, r == 0 ? "COMMIT" : "ROLLBACK");
	return r;
}

int
store_pg_job_get(struct store_pg *s, const char *id, struct job *ret,
    json_t **ret_tokens)
{
	struct job_get a = { id, ret, NULL, ret_tokens != NULL };
	int r = pg_read(s, read_job_get, &a);

	if (r < 0) {
		json_decref(a.tokens);
		return r;
	}
	if (ret_tokens != NULL)
		*ret_tokens = a.tokens;
	return 0;
}

struct job_lease {
	const char *id;
	int64_t lease;
	struct job *out;
};

static int
op_job_heartbeat(struct wctx *w, void *arg)
{
	struct job_lease *a = arg;
	struct params p = { 0 };
	int r;

	p_int(&p, (int64_t)time(NULL) + a->lease);
	p_text(&p, a->id);
	r = q(w->c,
	    "UPDATE jobs SET lease_expires = least($1::bigint, deadline) "
	    "WHERE id = $2 AND state = 'running'",
	    &p, NULL);
	if (r == 0)
		r = job_read(w->c, a->id, false, a->out);
	if (r < 0)
		return r;
	return strcmp(a->out->state, "running") == 0 ? 0 : -ESTALE;
}

int
store_pg_job_heartbeat(struct store_pg *s, const char *id,
    int64_t lease_seconds, struct job *ret)
{
	struct job_lease a = { id, lease_seconds, ret };

	return pg_write(s, op_job_heartbeat, &a);
}

struct job_revoke {
	const char *id, *reason, *actor;
	struct revoke_result *out;
};

/*
 * Appends the revocation of job (token NULL) or of one token of it (by
 * id) with the next sequence number, in *ret_seq, and notifies every
 * broker's listener at the commit. The number is taken under the audit
 * head's lock: revocations commit in the order of their numbers, so no
 * follower reads past a gap. 0 or -errno.
 */
static int
revocation_insert(struct wctx *w, const char *job, const char *token,
    int64_t *ret_seq)
{
	struct params p = { 0 };
	PGresult *res;
	int64_t seq;
	int r = q(w->c, "SELECT coalesce(max(seq), 0) + 1 FROM revocations",
	    NULL, &res);

	if (r < 0)
		return r;
	seq = col_int(res, 0, 0);
	PQclear(res);
	p_int(&p, seq);
	p_text(&p, job);
	p_text(&p, token); /* NULL: SQL's NULL */
	p_int(&p, (int64_t)time(NULL));
	r = q(w->c,
	    "INSERT INTO revocations (seq, job, token, at) VALUES ($1, $2, "
	    "$3, $4)",
	    &p, NULL);
	if (r == 0) {
		p.n = 0;
		p_int(&p, seq);
		/* Delivered to every broker's listener at the commit. */
		r = q(w->c, "SELECT pg_notify('" PG_CHANNEL "', $1)", &p, NULL);
	}
	if (r == 0)
		*ret_seq = seq;
	return r;
}

static int
op_job_revoke(struct wctx *w, void *arg)
{
	struct job_revoke *a = arg;
	struct revoke_result *out = a->out;
	struct params p = { 0 };
	PGresult *res;
	struct job j;
	int r = job_read(w->c, a->id, true, &j);

	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	p_text(&p, a->id);
	if (strcmp(j.state, "revoked") == 0) {
		out->already = true;
		out->tokens_revoked = j.tokens_revoked;
		snprintf(out->reason, sizeof(out->reason), "%s", j.stop_reason);
		r = q(w->c,
		    "SELECT max(seq) FROM revocations WHERE job = $1 AND "
		    "token IS NULL",
		    &p, &res);
		if (r == 0) {
			out->seq = col_int(res, 0, 0);
			PQclear(res);
		}
		return r;
	}
	r = q(w->c,
	    "UPDATE tokens SET state = 'revoked' WHERE job = $1 AND state = "
	    "'active'",
	    &p, &res);
	if (r < 0)
		return r;
	out->tokens_revoked = strtoll(PQcmdTuples(res), NULL, 10);
	PQclear(res);

	p.n = 0;
	p_text(&p, a->reason);
	p_int(&p, out->tokens_revoked);
	p_int(&p, (int64_t)time(NULL));
	p_text(&p, a->id);
	r = q(w->c,
	    "UPDATE jobs SET state = 'revoked', stop_reason = $1, "
	    "tokens_revoked = $2, revoked_at = $3 WHERE id = $4",
	    &p, NULL);
	if (r < 0)
		return r;
	r = revocation_insert(w, a->id, NULL, &out->seq);
	if (r < 0)
		return r;
	out->already = false;
	snprintf(out->reason, sizeof(out->reason), "%s", a->reason);
	json_t *d =
	    json_pack("{s:s, s:I, s:I}", "reason", a->reason, "tokens_revoked",
		(json_int_t)out->tokens_revoked, "seq", (json_int_t)out->seq);
	r = audit_append(w, "job_revoked", a->id, a->actor, d);
	json_decref(d);
	return r;
}

int
store_pg_job_revoke(struct store_pg *s, const char *id, const char *reason,
    const char *actor, struct revoke_result *ret)
{
	struct job_revoke a = { id, reason, actor, ret };

	memset(ret, 0, sizeof(*ret));
	return pg_write(s, op_job_revoke, &a);
}

/* A query's rows, each made into JSON by row(), into a->out. */
struct rows {
	const char *sql;
	struct params p;
	json_t *(*row)(const PGresult *res, int i);
	json_t *out;
};

static int
read_rows(PGconn *c, void *arg)
{
	struct rows *a = arg;
	PGresult *res;
	int r = q(c, a->sql, &a->p, &res);

	if (r < 0)
		return r;
	json_decref(a->out);
	a->out = json_array();
	/* A row lost (out of memory) fails the whole list: a feed page
	 * with a hole would skip a revocation. */
	for (int i = 0; i < PQntuples(res); i++)
		if (json_array_append_new(a->out, a->row(res, i)) < 0) {
			PQclear(res);
			return -ENOMEM;
		}
	PQclear(res);
	return 0;
}

static int
rows_run(struct store_pg *s, struct rows *a, json_t **ret)
{
	int r = pg_read(s, read_rows, a);

	if (r < 0) {
		json_decref(a->out);
		return r;
	}
	*ret = a->out;
	return 0;
}

static json_t *
manifest_list_row(const PGresult *res, int i)
{
	return json_pack("{s:s, s:I, s:s, s:I, s:I}", "name",
	    PQgetvalue(res, i, 0), "version", (json_int_t)col_int(res, i, 1),
	    "sha256", PQgetvalue(res, i, 2), "created",
	    (json_int_t)col_int(res, i, 3), "updated",
	    (json_int_t)col_int(res, i, 4));
}

int
store_pg_manifest_list(struct store_pg *s, const char *after, size_t max,
    json_t **ret)
{
	/* COLLATE "C": bytewise, as sqlite orders, whatever the database's
	 * collation, so after= pages the same on both engines. */
	struct rows a = { .row = manifest_list_row,
		.sql = "SELECT m.name, m.version, m.sha256, (SELECT "
		       "min(created) FROM manifests WHERE name = m.name), "
		       "m.created FROM manifests m WHERE m.name COLLATE \"C\" "
		       "> $1 AND m.version = (SELECT max(version) FROM "
		       "manifests WHERE name = m.name) ORDER BY m.name "
		       "COLLATE \"C\" LIMIT $2" };

	p_text(&a.p, after != NULL ? after : "");
	p_int(&a.p, (int64_t)max);
	return rows_run(s, &a, ret);
}

static json_t *
lapsed_row(const PGresult *res, int i)
{
	return json_pack("{s:s, s:s}", "job", PQgetvalue(res, i, 0), "reason",
	    PQgetvalue(res, i, 1));
}

int
store_pg_jobs_lapsed(struct store_pg *s, int64_t now, size_t max,
    json_t **ret_ids)
{
	struct rows a = { .sql = "SELECT id, CASE WHEN deadline <= $1 THEN "
				 "'deadline' ELSE 'lease_expired' END FROM "
				 "jobs WHERE state = 'running' AND "
				 "(lease_expires <= $1 OR deadline <= $1) "
				 "LIMIT $2",
		.row = lapsed_row };

	p_int(&a.p, now);
	p_int(&a.p, (int64_t)max);
	return rows_run(s, &a, ret_ids);
}

/* --- tokens -------------------------------------------------------------- */

struct token_insert {
	const struct token_row *t;
	int64_t max_tokens;
	const char *actor;
};

static int
op_token_insert(struct wctx *w, void *arg)
{
	struct token_insert *a = arg;
	struct job j;
	int r = job_read(w->c, a->t->job, true, &j);

	if (r < 0)
		return r;
	/* Checked in the transaction of the insert, on the locked row: a
	 * revoke at any broker cannot slip between, nor a parallel mint. */
	if (strcmp(j.state, "running") != 0)
		return -ESTALE;
	if (j.tokens_minted >= a->max_tokens)
		return -EDQUOT;
	return insert_token(w, a->t, a->actor);
}

int
store_pg_token_insert_async(struct store_pg *s, const struct token_row *t,
    int64_t max_tokens, const char *actor, store_done_fn on_done,
    void *done_arg)
{
	struct token_insert *a = malloc(sizeof(*a));
	int r;

	if (a == NULL)
		return -ENOMEM;
	*a = (struct token_insert){ t, max_tokens, actor };
	r = write_async(s, op_token_insert, a, free, on_done, done_arg);
	if (r < 0)
		free(a);
	return r;
}

struct mint_take {
	const char *job;
	double burst, rate; /* mints, mints a second */
	bool pass, first;
	double tokens;
};

/* The bucket brought up to date and one mint taken, or a refusal noted,
 * in one statement on its locked row: brokers asking at once take
 * turns, and the clock is the database's, one for the fleet. Its commit
 * waits for no disk (synchronous_commit off): the bucket is a limit, not
 * a grant, and a crash that forgets its last updates gives back a few
 * mints the durable ceiling still bounds; waiting would cost each mint a
 * flush of its own, outside the mints' group commit. */
/* One round trip: the values are literals (the job's escaped), a job
 * new to the buckets starts with a full one, and q keeps the UPDATE's
 * rows. */
#define MINT_TAKE_SQL                                                          \
	"BEGIN; SET LOCAL synchronous_commit TO OFF;"                          \
	" INSERT INTO mint_buckets VALUES (%1$s, %2$s::float8,"                \
	" extract(epoch FROM clock_timestamp())::float8, false)"               \
	" ON CONFLICT (job) DO NOTHING;"                                       \
	" WITH n AS (SELECT extract(epoch FROM clock_timestamp())::float8"     \
	" AS t), b AS (SELECT m.job, n.t, least(%2$s::float8, m.tokens +"      \
	" greatest(0::float8, n.t - m.at) * %3$s::float8) AS tokens,"          \
	" m.limited FROM mint_buckets m, n WHERE m.job = %1$s"                 \
	" FOR UPDATE OF m)"                                                    \
	" UPDATE mint_buckets SET at = b.t, tokens = CASE WHEN b.tokens >= 1"  \
	" THEN b.tokens - 1 ELSE b.tokens END, limited = CASE WHEN"            \
	" b.tokens >= 1 THEN b.limited AND b.tokens < %2$s::float8 ELSE true"  \
	" END FROM b WHERE mint_buckets.job = b.job"                           \
	" RETURNING b.tokens, b.limited AND b.tokens < %2$s::float8;"          \
	" COMMIT"

static int
op_mint_take(PGconn *c, void *arg)
{
	struct mint_take *a = arg;
	char burst[32], rate[32], sql[sizeof(MINT_TAKE_SQL) + 512];
	char *job = PQescapeLiteral(c, a->job, strlen(a->job));
	PGresult *res;
	int r;

	if (job == NULL)
		return PQstatus(c) == CONNECTION_OK ? -ENOMEM : -ENOTCONN;
	snprintf(burst, sizeof(burst), "%.17g", a->burst);
	snprintf(rate, sizeof(rate), "%.17g", a->rate);
	r = snprintf(sql, sizeof(sql), MINT_TAKE_SQL, job, burst, rate);
	PQfreemem(job);
	if (r < 0 || (size_t)r >= sizeof(sql))
		return -ENAMETOOLONG;
	r = q(c, sql, NULL, &res);
	if (r == 0) {
		if (PQntuples(res) != 1) {
			r = -ENOENT;
		} else {
			a->tokens = strtod(PQgetvalue(res, 0, 0), NULL);
			a->pass = a->tokens >= 1.0;
			a->first =
			    !a->pass && strcmp(PQgetvalue(res, 0, 1), "t") != 0;
		}
		PQclear(res);
	}
	/* A statement failed: the rest were skipped, COMMIT too. */
	if (PQstatus(c) == CONNECTION_OK &&
	    PQtransactionStatus(c) == PQTRANS_INERROR)
		cmd(c, "ROLLBACK");
	return r;
}

int
store_pg_mint_take(struct store_pg *s, const char *job, int64_t per_minute,
    int64_t burst, bool *ret_first, int64_t *ret_retry_after)
{
	struct mint_take a = { .job = job,
		.burst = (double)burst,
		.rate = (double)per_minute / 60.0 };
	int r = pg_read(s, op_mint_take, &a);
	double wait;

	if (r < 0)
		return r;
	if (a.pass)
		return 0;
	wait = ceil((1.0 - a.tokens) / a.rate);
	*ret_first = a.first;
	*ret_retry_after = wait < 1.0 ? 1 : (int64_t)wait;
	return -EAGAIN;
}

struct token_lookup {
	const unsigned char *hash;
	struct token_row *out;
	char *job_state;
};

static int
read_token(PGconn *c, void *arg)
{
	struct token_lookup *a = arg;
	struct token_row *t = a->out;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_hash(&p, a->hash);
	r = q(c,
	    "SELECT t.id, t.job, t.capability, t.params, t.aud, t.iat, t.exp, "
	    "t.state, j.state FROM tokens t JOIN jobs j ON j.id = t.job WHERE "
	    "t.hash = $1",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -ENOENT;
	}
	memcpy(t->hash, a->hash, STORE_HASH_LEN);
	col_copy(t->id, sizeof(t->id), res, 0, 0);
	col_copy(t->job, sizeof(t->job), res, 0, 1);
	col_copy(t->capability, sizeof(t->capability), res, 0, 2);
	free(t->params);
	t->params = strdup(PQgetvalue(res, 0, 3));
	col_copy(t->audience, sizeof(t->audience), res, 0, 4);
	t->iat = col_int(res, 0, 5);
	t->exp = col_int(res, 0, 6);
	col_copy(t->state, sizeof(t->state), res, 0, 7);
	col_copy(a->job_state, 16, res, 0, 8);
	PQclear(res);
	return t->params != NULL ? 0 : -ENOMEM;
}

int
store_pg_token_lookup(struct store_pg *s,
    const unsigned char hash[STORE_HASH_LEN], struct token_row *ret,
    char ret_job_state[16])
{
	struct token_lookup a = { hash, ret, ret_job_state };

	ret->params = NULL;
	return pg_read(s, read_token, &a);
}

struct token_revoke {
	const unsigned char *hash;
	const char *actor;
	struct token_revoke_result *out;
};

static int
op_token_revoke(struct wctx *w, void *arg)
{
	struct token_revoke *a = arg;
	struct token_revoke_result *out = a->out;
	struct params p = { 0 };
	PGresult *res;
	int r;

	/* A retried transaction starts from nothing. */
	memset(out, 0, sizeof(*out));
	p_hash(&p, a->hash);
	r = q(w->c,
	    "UPDATE tokens SET state = 'revoked' WHERE hash = $1 AND state = "
	    "'active' RETURNING id, job",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return 0;
	}
	col_copy(out->id, sizeof(out->id), res, 0, 0);
	col_copy(out->job, sizeof(out->job), res, 0, 1);
	PQclear(res);
	/* Its own revocation on the feed, in the same transaction. */
	r = revocation_insert(w, out->job, out->id, &out->seq);
	if (r < 0)
		return r;
	json_t *d = json_pack("{s:s, s:I}", "token", out->id, "seq",
	    (json_int_t)out->seq);
	r = audit_append(w, "token_revoked", out->job, a->actor, d);
	json_decref(d);
	if (r == 0)
		out->found = true;
	return r;
}

int
store_pg_token_revoke(struct store_pg *s,
    const unsigned char hash[STORE_HASH_LEN], const char *actor,
    struct token_revoke_result *ret)
{
	struct token_revoke a = { hash, actor, ret };
	int r = pg_write(s, op_token_revoke, &a);

	if (r < 0)
		memset(ret, 0, sizeof(*ret));
	return r;
}

/* --- revocation feed ----------------------------------------------------- */

/* {seq, job}, and a token revoked alone's id as "token" (store.c's). */
static json_t *
revocation_row(const PGresult *res, int i)
{
	json_t *row = json_pack("{s:I, s:s}", "seq",
	    (json_int_t)col_int(res, i, 0), "job", PQgetvalue(res, i, 1));
	const char *token = col_str(res, i, 2);

	if (row != NULL && token != NULL &&
	    json_object_set_new(row, "token", json_string(token)) < 0) {
		json_decref(row);
		return NULL;
	}
	return row;
}

int
store_pg_revocations_after(struct store_pg *s, int64_t seq, size_t max,
    json_t **ret)
{
	struct rows a = { .sql = "SELECT seq, job, token FROM revocations "
				 "WHERE seq > $1 ORDER BY seq LIMIT $2",
		.row = revocation_row };

	p_int(&a.p, seq);
	p_int(&a.p, (int64_t)max);
	return rows_run(s, &a, ret);
}

static json_t *
head_row(const PGresult *res, int i)
{
	return json_integer(col_int(res, i, 0));
}

int
store_pg_revocation_head(struct store_pg *s, int64_t *ret)
{
	struct rows a = { .sql = "SELECT coalesce(max(seq), 0) FROM "
				 "revocations",
		.row = head_row };
	json_t *list;
	int r = rows_run(s, &a, &list);

	if (r < 0)
		return r;
	*ret = json_integer_value(json_array_get(list, 0));
	json_decref(list);
	return 0;
}

/* --- audit --------------------------------------------------------------- */

struct audit_one {
	const char *event;
	json_t *detail;
};

static int
op_audit(struct wctx *w, void *arg)
{
	struct audit_one *a = arg;

	return audit_append(w, a->event,
	    json_string_value(json_object_get(a->detail, "job")),
	    json_string_value(json_object_get(a->detail, "actor")), a->detail);
}

static void
audit_one_free(void *arg)
{
	struct audit_one *a = arg;

	json_decref(a->detail);
	free(a);
}

static void
audit_async_done(void *arg, int result)
{
	(void)arg;
	/* Nobody waits for this one: a failure can only be told here. */
	if (result < 0)
		log_error("audit_failed", "{s:s}", "error", strerror(-result));
}

int
store_pg_audit_async(struct store_pg *s, const char *event, json_t *detail)
{
	struct audit_one *a = malloc(sizeof(*a));
	int r;

	if (a == NULL) {
		json_decref(detail);
		return -ENOMEM;
	}
	*a = (struct audit_one){ event, detail };
	r = write_async(s, op_audit, a, audit_one_free, audit_async_done, NULL);
	if (r < 0)
		audit_one_free(a);
	return r;
}

static json_t *
audit_row(const PGresult *res, int i)
{
	json_t *detail = json_loads(PQgetvalue(res, i, 5), 0, NULL);

	return json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:o, s:s, s:s}", "seq",
	    (json_int_t)col_int(res, i, 0), "ts", PQgetvalue(res, i, 1),
	    "event", PQgetvalue(res, i, 2), "job", col_str(res, i, 3), "actor",
	    col_str(res, i, 4), "detail", detail != NULL ? detail : json_null(),
	    "prev", PQgetvalue(res, i, 6), "hash", PQgetvalue(res, i, 7));
}

int
store_pg_audit_list(struct store_pg *s, const char *job, int64_t after,
    size_t max, json_t **ret)
{
	struct rows a = { .row = audit_row };

	p_int(&a.p, after);
	if (job != NULL) {
		a.sql = "SELECT seq, ts, event, job, actor, detail, prev, hash "
			"FROM audit WHERE seq > $1 AND job = $2 ORDER BY seq "
			"LIMIT $3";
		p_text(&a.p, job);
	} else
		a.sql = "SELECT seq, ts, event, job, actor, detail, prev, hash "
			"FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2";
	p_int(&a.p, (int64_t)max);
	return rows_run(s, &a, ret);
}

struct verify {
	bool ok;
	int64_t first_bad, records;
};

static int
read_verify(PGconn *c, void *arg)
{
	struct verify *v = arg;
	char prev[65] = GENESIS, hash[65];
	int64_t expect = 1, head = 0;
	PGresult *res;
	int r;

	v->ok = true;
	v->first_bad = 0;
	/* One snapshot: the chain and its recorded head agree. */
	r = cmd(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	if (r == 0 &&
	    (r = q(c, "SELECT seq FROM audit_head WHERE id = 1", NULL, &res)) ==
		0) {
		head = PQntuples(res) == 1 ? col_int(res, 0, 0) : 0;
		PQclear(res);
	}
	if (r == 0)
		r = cmd(c,
		    "DECLARE chain NO SCROLL CURSOR FOR SELECT seq, ts, "
		    "event, job, actor, detail, prev, hash FROM audit "
		    "ORDER BY seq");
	while (r == 0 && v->ok) {
		int n;

		r = q(c, "FETCH 1000 FROM chain", NULL, &res);
		if (r < 0)
			break;
		n = PQntuples(res);
		for (int i = 0; i < n && v->ok; i++) {
			int64_t seq = col_int(res, i, 0);
			const char *rprev = PQgetvalue(res, i, 6);
			const char *rhash = PQgetvalue(res, i, 7);

			store_audit_hash(prev, seq, PQgetvalue(res, i, 1),
			    PQgetvalue(res, i, 2), col_str(res, i, 3),
			    col_str(res, i, 4), PQgetvalue(res, i, 5), hash);
			if (seq != expect || strcmp(rprev, prev) != 0 ||
			    strcmp(rhash, hash) != 0) {
				v->ok = false;
				v->first_bad = seq != expect ? expect : seq;
				break;
			}
			snprintf(prev, sizeof(prev), "%s", rhash);
			expect++;
		}
		PQclear(res);
		if (n == 0)
			break;
	}
	if (PQstatus(c) == CONNECTION_OK)
		cmd(c, "ROLLBACK");
	if (r < 0)
		return r;
	if (v->ok && expect - 1 != head) {
		v->ok = false;
		v->first_bad = expect;
	}
	v->records = expect - 1;
	return 0;
}

int
store_pg_audit_verify(struct store_pg *s, bool *ret_ok, int64_t *ret_first_bad,
    int64_t *ret_records)
{
	struct verify v = { 0 };
	int r = pg_read(s, read_verify, &v);

	if (r < 0)
		return r;
	*ret_ok = v.ok;
	*ret_first_bad = v.first_bad;
	*ret_records = v.records;
	return 0;
}

/* --- secrets ------------------------------------------------------------- */

struct secret_put {
	const char *name, *actor;
	int64_t version;
	const unsigned char *sealed;
	size_t len;
	const json_t *hosts; /* NULL: the declared hosts kept */
	int64_t budget; /* 0: the version before's */
};

static int reflect_row_put(struct wctx *w, const struct secret_put *a);
static int op_release_unburned(struct wctx *w, void *arg);

/* A secret's put, after its row: its declared hosts replaced when
 * given, the rules' bindings of a name (re)created, the epoch moved. */
static int
secret_put_bindings(struct wctx *w, const struct secret_put *a)
{
	struct store_bind_counts before = { 0 }, after = { 0 };
	struct params p = { 0 };
	size_t i;
	json_t *h;
	/* A new name's kept places and rules count from this put on; a
	 * rotation without guard_hosts moves no place (not counted). */
	bool moves = a->hosts != NULL || a->version == 1;
	int r = moves
	    ? bind_count(w, a->name, a->version == 1 ? a->name : "", &before)
	    : 0;

	p_text(&p, a->name);
	if (r == 0 && a->hosts != NULL)
		r = q(w->c,
		    "DELETE FROM bindings WHERE secret = $1 AND origin = "
		    "'declared'",
		    &p, NULL);
	json_array_foreach(a->hosts, i, h)
	{
		if (r < 0)
			break;
		if (!json_is_string(h))
			return -EINVAL;
		p.n = 0;
		p_text(&p, a->name);
		p_text(&p, json_string_value(h));
		p_int(&p, (int64_t)time(NULL));
		r = q(w->c,
		    "INSERT INTO bindings (secret, kind, value, origin, "
		    "created) VALUES ($1, 'host', $2, 'declared', $3) ON "
		    "CONFLICT DO NOTHING",
		    &p, NULL);
	}
	if (r == 0 && a->version == 1)
		r = bind_rules(w, NULL, 0, a->name);
	if (r == 0 && moves)
		r = bind_count(w, a->name, "", &after);
	if (r == 0 && moves)
		r = store_bindings_over(&before, &after, NULL);
	if (r == 0)
		r = epoch_bump(w);
	return r;
}

static int
op_secret_put(struct wctx *w, void *arg)
{
	struct secret_put *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int64_t cur = 0;
	int r;

	/* Under the audit head's lock: two brokers putting at once make
	 * versions one after the other, and one of them is refused. */
	p_text(&p, a->name);
	r = q(w->c, "SELECT max(version) FROM secrets WHERE name = $1", &p,
	    &res);
	if (r < 0)
		return r;
	cur = col_int(res, 0, 0);
	PQclear(res);
	if (a->version != cur + 1)
		return -EEXIST;
	p.n = 0;
	p_text(&p, a->name);
	p_int(&p, a->version);
	p_blob(&p, a->sealed, a->len);
	p_int(&p, (int64_t)time(NULL));
	r = q(w->c,
	    "INSERT INTO secrets (name, version, sealed, created) VALUES "
	    "($1, $2, $3, $4)",
	    &p, NULL);
	if (r < 0)
		return r;
	json_t *d = json_pack("{s:s, s:I}", "secret", a->name, "version",
	    (json_int_t)a->version);
	if (d != NULL && a->hosts != NULL)
		json_object_set(d, "guard_hosts", (json_t *)a->hosts);
	r = audit_append(w, "secret_put", NULL, a->actor, d);
	json_decref(d);
	if (r == 0)
		r = secret_put_bindings(w, a);
	if (r == 0)
		r = reflect_row_put(w, a);
	return r;
}

int
store_pg_secret_put(struct store_pg *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const json_t *guard_hosts,
    int64_t budget, const char *actor)
{
	struct secret_put a = { name, actor, version, sealed, len, guard_hosts,
		budget };

	if (len == 0 || len > INT32_MAX)
		return -EINVAL;
	return pg_write(s, op_secret_put, &a);
}

struct secret_get {
	const char *name;
	struct secret_meta *out;
	unsigned char **sealed;
	size_t *len;
};

static int
read_secret(PGconn *c, void *arg)
{
	struct secret_get *a = arg;
	struct params p = { 0 };
	struct secret_meta m = { .version = 0 };
	PGresult *res;
	int r;

	p_text(&p, a->name);
	r = q(c,
	    "SELECT name, version, created, last_used, sealed FROM secrets "
	    "WHERE name = $1 ORDER BY version DESC LIMIT 1",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -ENOENT;
	}
	col_copy(m.name, sizeof(m.name), res, 0, 0);
	m.version = col_int(res, 0, 1);
	m.created = col_int(res, 0, 2);
	m.last_used = col_int(res, 0, 3);
	if (a->sealed != NULL) {
		size_t n = 0;
		unsigned char *raw =
		    PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0,
					4),
			&n);
		unsigned char *copy = raw != NULL && n > 0 ? malloc(n) : NULL;

		if (copy != NULL)
			memcpy(copy, raw, n);
		if (raw != NULL) {
			explicit_bzero(raw, n);
			PQfreemem(raw);
		}
		if (copy == NULL) {
			PQclear(res);
			return n > 0 || raw == NULL ? -ENOMEM : -EIO;
		}
		*a->sealed = copy;
		*a->len = n;
	}
	PQclear(res);
	*a->out = m;
	return 0;
}

int
store_pg_secret_get(struct store_pg *s, const char *name,
    struct secret_meta *ret, unsigned char **ret_sealed, size_t *ret_len)
{
	struct secret_get a = { name, ret, ret_sealed, ret_len };

	return pg_read(s, read_secret, &a);
}

static json_t *
secret_row(const PGresult *res, int i)
{
	return json_pack("{s:s, s:I, s:I, s:I}", "name", PQgetvalue(res, i, 0),
	    "version", (json_int_t)col_int(res, i, 1), "created",
	    (json_int_t)col_int(res, i, 2), "last_used",
	    (json_int_t)col_int(res, i, 3));
}

int
store_pg_secret_list(struct store_pg *s, json_t **ret)
{
	/* As sqlite answers: by name bytewise, the newest version's
	 * number, created and the last release of any. */
	struct rows a = { .row = secret_row,
		.sql = "SELECT name, max(version), max(created), "
		       "max(last_used) FROM secrets GROUP BY name ORDER BY "
		       "name COLLATE \"C\"" };

	return rows_run(s, &a, ret);
}

static json_t *
manifest_body_row(const PGresult *res, int i)
{
	json_t *body = json_loads(PQgetvalue(res, i, 1), 0, NULL);

	return json_pack("{s:s, s:o}", "name", PQgetvalue(res, i, 0), "body",
	    body != NULL ? body : json_null());
}

int
store_pg_secret_manifests(struct store_pg *s, const char *name, json_t **ret)
{
	/* Candidates, as store.c's: the canonical text is compact, so a
	 * rule naming the secret holds this exact string. */
	struct rows a = { .row = manifest_body_row,
		.sql = "SELECT m.name, m.body FROM manifests m WHERE "
		       "m.version = (SELECT max(version) FROM manifests "
		       "WHERE name = m.name) AND strpos(m.body, $1) > 0 "
		       "ORDER BY m.name COLLATE \"C\"" };
	char needle[128];

	if (snprintf(needle, sizeof(needle), "\"secret\":\"%s\"", name) >=
	    (int)sizeof(needle))
		return -EINVAL;
	p_text(&a.p, needle);
	return rows_run(s, &a, ret);
}

struct secret_del {
	const char *name, *actor;
	bool found;
};

static int
op_secret_delete(struct wctx *w, void *arg)
{
	struct secret_del *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_text(&p, a->name);
	r = q(w->c, "DELETE FROM secrets WHERE name = $1", &p, &res);
	if (r < 0)
		return r;
	a->found = strtoll(PQcmdTuples(res), NULL, 10) > 0;
	PQclear(res);
	if (!a->found)
		return 0;
	json_t *d = json_pack("{s:s}", "secret", a->name);
	r = audit_append(w, "secret_deleted", NULL, a->actor, d);
	json_decref(d);
	if (r == 0)
		r = q(w->c,
		    "DELETE FROM bindings WHERE secret = $1 AND origin = "
		    "'rule'",
		    &p, NULL); /* seen and declared places kept (store.c) */
	if (r == 0)
		r = epoch_bump(w);
	return r;
}

int
store_pg_secret_delete(struct store_pg *s, const char *name, const char *actor,
    bool *ret_found)
{
	struct secret_del a = { name, actor, false };
	int r = pg_write(s, op_secret_delete, &a);

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
op_secret_released(struct wctx *w, void *arg)
{
	struct secret_used *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	/* A scan release leaves last_used as it is (the last release for
	 * an injection); the version must still be there all the same. */
	p_int(&p, a->scan ? 0 : (int64_t)time(NULL));
	p_text(&p, a->name);
	p_int(&p, a->version);
	r = q(w->c,
	    a->scan ? "SELECT 1 FROM secrets WHERE $1::bigint = 0 AND name = "
		      "$2 AND version = $3"
		    : "UPDATE secrets SET last_used = $1 WHERE name = $2 AND "
		      "version = $3",
	    &p, &res);
	if (r < 0)
		return r;
	bool changed = a->scan ? PQntuples(res) > 0
			       : strtoll(PQcmdTuples(res), NULL, 10) > 0;
	PQclear(res);
	if (!changed)
		return -ENOENT; /* deleted or rotated away meanwhile */
	json_t *d = json_pack("{s:s, s:I}", "secret", a->name, "version",
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
	r = audit_append(w, "secret_released", a->job, a->actor, d);
	json_decref(d);
	return r;
}

int
store_pg_secret_released(struct store_pg *s, const char *name, int64_t version,
    const char *job, const char *actor)
{
	struct secret_used a = { name, job, actor, version, NULL, NULL, false,
		NULL };

	return pg_write(s, op_release_unburned, &a);
}

int
store_pg_secret_scanned(struct store_pg *s, const char *name, int64_t version,
    const char *job, const char *host, const char *addr, const char *actor)
{
	struct secret_used a = { name, job, actor, version, host, addr, true,
		NULL };

	return pg_write(s, op_secret_released, &a);
}

int
store_pg_secret_scanned_set(struct store_pg *s, const char *name,
    int64_t version, const char *job, const char *host, const char *addr,
    const json_t *values, const char *actor)
{
	struct secret_used a = { name, job, actor, version, host, addr, true,
		values };

	return pg_write(s, op_secret_released, &a);
}

struct secret_versions {
	const char *name;
	size_t max;
	struct secret_sealed **out;
	size_t *n;
};

static int
read_secret_versions(PGconn *c, void *arg)
{
	struct secret_versions *a = arg;
	struct params p = { 0 };
	struct secret_sealed *out;
	PGresult *res;
	int r, rows;

	p_text(&p, a->name);
	p_int(&p, (int64_t)a->max);
	r = q(c,
	    "SELECT version, sealed FROM secrets WHERE name = $1 ORDER BY "
	    "version DESC LIMIT $2",
	    &p, &res);
	if (r < 0)
		return r;
	rows = PQntuples(res);
	if (rows <= 0) {
		PQclear(res);
		return -ENOENT;
	}
	if ((out = calloc((size_t)rows, sizeof(*out))) == NULL) {
		PQclear(res);
		return -ENOMEM;
	}
	for (int i = 0; i < rows && r == 0; i++) {
		size_t n = 0;
		unsigned char *raw =
		    PQunescapeBytea((const unsigned char *)PQgetvalue(res, i,
					1),
			&n);
		if (raw == NULL || n == 0 ||
		    (out[i].sealed = malloc(n)) == NULL)
			r = raw != NULL && n == 0 ? -EIO : -ENOMEM;
		else {
			memcpy(out[i].sealed, raw, n);
			out[i].len = n;
			out[i].version = col_int(res, i, 0);
		}
		if (raw != NULL) {
			explicit_bzero(raw, n);
			PQfreemem(raw);
		}
	}
	PQclear(res);
	if (r < 0) {
		secret_sealed_free(out, (size_t)rows);
		return r;
	}
	*a->out = out;
	*a->n = (size_t)rows;
	return 0;
}

int
store_pg_secret_versions(struct store_pg *s, const char *name, size_t max,
    struct secret_sealed **ret, size_t *n)
{
	struct secret_versions a = { name, max, ret, n };

	return pg_read(s, read_secret_versions, &a);
}

/* --- secret bindings ------------------------------------------------------ */

struct bindings_read {
	json_t *out;
	int64_t epoch;
};

static int
read_bindings(PGconn *c, void *arg)
{
	struct bindings_read *a = arg;
	PGresult *res;
	int r;

	/* One snapshot: the epoch and the rows it counts. */
	r = cmd(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	if (r == 0)
		r = q(c, "SELECT value FROM meta WHERE key = 'bindings_epoch'",
		    NULL, &res);
	if (r == 0) {
		a->epoch = PQntuples(res) == 1 ? col_int(res, 0, 0) : 0;
		PQclear(res);
		r = q(c,
		    "SELECT b.secret, b.kind, b.value, b.origin FROM bindings "
		    "b WHERE EXISTS (SELECT 1 FROM secrets s WHERE s.name = "
		    "b.secret) ORDER BY b.secret COLLATE \"C\", b.kind, "
		    "b.value COLLATE \"C\", b.origin",
		    NULL, &res);
	}
	if (r == 0) {
		json_decref(a->out);
		a->out = json_array();
		for (int i = 0; r == 0 && i < PQntuples(res); i++)
			if (json_array_append_new(a->out,
				json_pack("{s:s, s:s, s:s, s:s}", "secret",
				    PQgetvalue(res, i, 0), "kind",
				    PQgetvalue(res, i, 1), "value",
				    PQgetvalue(res, i, 2), "origin",
				    PQgetvalue(res, i, 3))) < 0)
				r = -ENOMEM;
		PQclear(res);
	}
	if (PQstatus(c) == CONNECTION_OK)
		cmd(c, r == 0 ? "COMMIT" : "ROLLBACK");
	return r;
}

int
store_pg_bindings_list(struct store_pg *s, json_t **ret, int64_t *ret_epoch)
{
	struct bindings_read a = { NULL, 0 };
	int r = pg_read(s, read_bindings, &a);

	if (r < 0) {
		json_decref(a.out);
		return r;
	}
	*ret = a.out;
	*ret_epoch = a.epoch;
	return 0;
}

static int
read_burned(PGconn *c, void *arg)
{
	json_t **out = arg;
	PGresult *res;
	int r = q(c,
	    "SELECT r.secret, r.version FROM secret_reflections r JOIN "
	    "secrets s ON s.name = r.secret AND s.version = r.version WHERE "
	    "r.burned_at IS NOT NULL ORDER BY r.secret COLLATE \"C\", "
	    "r.version",
	    NULL, &res);

	if (r < 0)
		return r;
	json_decref(*out);
	*out = json_object();
	for (int i = 0; r == 0 && i < PQntuples(res); i++) {
		const char *name = PQgetvalue(res, i, 0);
		json_t *a = json_object_get(*out, name);
		if (a == NULL &&
		    json_object_set_new(*out, name, a = json_array()) < 0)
			r = -ENOMEM;
		if (r == 0 &&
		    json_array_append_new(a, json_integer(col_int(res, i, 1))) <
			0)
			r = -ENOMEM;
	}
	PQclear(res);
	return r;
}

int
store_pg_secrets_burned(struct store_pg *s, json_t **ret)
{
	json_t *out = NULL;
	int r = pg_read(s, read_burned, &out);

	if (r < 0 || out == NULL) {
		json_decref(out);
		return r < 0 ? r : -EIO;
	}
	*ret = out;
	return 0;
}

struct binding_seen {
	const char *secret, *addr, *job, *actor;
	bool added;
	struct store_bind_over over;
};

static int
op_binding_seen(struct wctx *w, void *arg)
{
	struct binding_seen *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	a->added = false;
	p_text(&p, a->secret);
	r = q(w->c, "SELECT 1 FROM secrets WHERE name = $1 LIMIT 1", &p, &res);
	if (r < 0)
		return r;
	bool exists = PQntuples(res) > 0;
	PQclear(res);
	if (!exists)
		return -ENOENT;
	/* Counted and written under the audit head's lock. */
	struct store_bind_counts before, after;
	if ((r = bind_count(w, a->secret, "", &before)) < 0)
		return r;
	p_text(&p, a->addr);
	p_int(&p, (int64_t)time(NULL));
	r = q(w->c,
	    "INSERT INTO bindings (secret, kind, value, origin, created) "
	    "VALUES ($1, 'addr', $2, 'seen', $3) ON CONFLICT DO NOTHING",
	    &p, &res);
	if (r < 0)
		return r;
	a->added = strtoll(PQcmdTuples(res), NULL, 10) > 0;
	PQclear(res);
	if (!a->added)
		return 0;
	after = (struct store_bind_counts){ before.secrets + (before.of == 0),
		before.keys + 1, before.of + 1, before.addrs + 1 };
	if ((r = store_bindings_over(&before, &after, &a->over)) < 0) {
		a->added = false; /* the transaction is rolled back */
		return r;
	}
	json_t *d =
	    json_pack("{s:s, s:s}", "secret", a->secret, "addr", a->addr);
	r = audit_append(w, "binding_seen", a->job, a->actor, d);
	json_decref(d);
	if (r == 0)
		r = epoch_bump(w);
	return r;
}

int
store_pg_binding_seen(struct store_pg *s, const char *secret, const char *addr,
    const char *job, const char *actor, bool *ret_added,
    struct store_bind_over *ret_over)
{
	struct binding_seen a = { secret, addr, job, actor, false,
		{ NULL, 0 } };
	int r = pg_write(s, op_binding_seen, &a);

	if (r == 0)
		*ret_added = a.added;
	if (r == -EDQUOT && ret_over != NULL)
		*ret_over = a.over;
	return r;
}

/* --- reflections ---------------------------------------------------------- */

#define REFLECT_COLS                                                           \
	"budget, reflections, tripped, burned_at, burned_reason, burned_job"

/* A version's row made anew at its put (a name deleted and put again
 * starts at version 1 again), its budget a's or the version before's. */
static int
reflect_row_put(struct wctx *w, const struct secret_put *a)
{
	struct params p = { 0 };

	p_text(&p, a->name);
	p_int(&p, a->version);
	p_int(&p, a->budget);
	p_int(&p, STORE_REFLECT_BUDGET_DEFAULT);
	return q(w->c,
	    "INSERT INTO secret_reflections (secret, version, budget) VALUES "
	    "($1, $2, CASE WHEN $3::bigint > 0 THEN $3::bigint ELSE "
	    "coalesce((SELECT budget FROM secret_reflections WHERE secret = $1 "
	    "AND version = $2::bigint - 1), $4::bigint) END) ON CONFLICT "
	    "(secret, version) DO UPDATE SET budget = excluded.budget, "
	    "reflections = 0, tripped = 0, burned_at = NULL, burned_reason = "
	    "NULL, burned_job = NULL",
	    &p, NULL);
}

static void
reflect_row_read(const PGresult *res, struct secret_reflections *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->budget = col_int(res, 0, 0);
	ret->reflections = col_int(res, 0, 1);
	ret->tripped = col_int(res, 0, 2);
	ret->burned_at = col_int(res, 0, 3);
	col_copy(ret->burned_reason, sizeof(ret->burned_reason), res, 0, 4);
	col_copy(ret->burned_job, sizeof(ret->burned_job), res, 0, 5);
}

/* An injection's release: refused (-EKEYREVOKED) when the version is
 * burned. Every write holds the audit head's lock: no broker's report
 * burns it between the check and the release's record. */
static int
op_release_unburned(struct wctx *w, void *arg)
{
	struct secret_used *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_text(&p, a->name);
	p_int(&p, a->version);
	r = q(w->c,
	    "SELECT 1 FROM secret_reflections WHERE secret = $1 AND version = "
	    "$2 AND burned_at IS NOT NULL",
	    &p, &res);
	if (r < 0)
		return r;
	bool burned = PQntuples(res) > 0;
	PQclear(res);
	return burned ? -EKEYREVOKED : op_secret_released(w, arg);
}

struct reflections_get {
	const char *name;
	int64_t version;
	struct secret_reflections *out;
};

static int
read_reflections(PGconn *c, void *arg)
{
	struct reflections_get *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_text(&p, a->name);
	p_int(&p, a->version);
	r = q(c,
	    "SELECT " REFLECT_COLS " FROM secret_reflections WHERE secret = "
	    "$1 AND version = $2",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) == 1)
		reflect_row_read(res, a->out);
	else {
		memset(a->out, 0, sizeof(*a->out));
		a->out->budget = STORE_REFLECT_BUDGET_DEFAULT;
	}
	PQclear(res);
	return 0;
}

struct burned_value {
	const unsigned char *digest;
	const char *secret;
	int64_t version, burned_at;
	char *ret_secret;
	size_t cap;
	int64_t ret_version, ret_burned_at;
};

static int
op_burned_value_add(struct wctx *w, void *arg)
{
	struct burned_value *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_hash(&p, a->digest);
	p_text(&p, a->secret);
	p_int(&p, a->version);
	p_int(&p, a->burned_at);
	r = q(w->c,
	    "INSERT INTO burned_values (digest, secret, version, burned_at) "
	    "VALUES ($1, $2, $3, $4) ON CONFLICT (digest) DO NOTHING",
	    &p, &res);
	if (r == 0)
		PQclear(res);
	return r;
}

int
store_pg_burned_value_add(struct store_pg *s, const unsigned char *digest,
    const char *secret, int64_t version, int64_t burned_at)
{
	struct burned_value a = { .digest = digest,
		.secret = secret,
		.version = version,
		.burned_at = burned_at };

	return pg_write(s, op_burned_value_add, &a);
}

static int
read_burned_value(PGconn *c, void *arg)
{
	struct burned_value *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_hash(&p, a->digest);
	r = q(c,
	    "SELECT secret, version, burned_at FROM burned_values WHERE "
	    "digest = $1",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -ENOENT;
	}
	snprintf(a->ret_secret, a->cap, "%s", PQgetvalue(res, 0, 0));
	a->ret_version = col_int(res, 0, 1);
	a->ret_burned_at = col_int(res, 0, 2);
	PQclear(res);
	return 0;
}

int
store_pg_burned_value_find(struct store_pg *s, const unsigned char *digest,
    char *ret_secret, size_t cap, int64_t *ret_version, int64_t *ret_burned_at)
{
	struct burned_value a = { .digest = digest,
		.ret_secret = ret_secret,
		.cap = cap };
	int r = pg_read(s, read_burned_value, &a);

	if (r == 0) {
		*ret_version = a.ret_version;
		*ret_burned_at = a.ret_burned_at;
	}
	return r;
}

int
store_pg_secret_reflections(struct store_pg *s, const char *name,
    int64_t version, struct secret_reflections *ret)
{
	struct reflections_get a = { name, version, ret };

	return pg_read(s, read_reflections, &a);
}

struct reflected {
	const char *name, *job, *event, *actor;
	int64_t version, count;
	bool trip;
	struct secret_reflections row;
	bool burned_now;
};

static int
op_secret_reflected(struct wctx *w, void *arg)
{
	struct reflected *a = arg;
	struct params p = { 0 };
	PGresult *res;
	json_t *d;
	int r;

	p_text(&p, a->name);
	p_int(&p, a->version);
	r = q(w->c,
	    "SELECT (SELECT burned_at IS NOT NULL FROM secret_reflections "
	    "WHERE secret = $1 AND version = $2) FROM secrets WHERE name = $1 "
	    "AND version = $2",
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -ENOENT; /* deleted meanwhile */
	}
	/* Under the audit head's lock, as every write: what was is what
	 * the update sees, whichever broker asks. */
	bool was_burned = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	p.n = 0;
	p_text(&p, a->name);
	p_int(&p, a->version);
	p_int(&p, STORE_REFLECT_BUDGET_DEFAULT);
	p_int(&p, a->count);
	p_int(&p, a->trip ? 1 : 0);
	p_int(&p, (int64_t)time(NULL));
	p_text(&p, a->job);
	r = q(w->c,
	    "INSERT INTO secret_reflections AS r (secret, version, budget, "
	    "reflections, tripped, burned_at, burned_reason, burned_job) "
	    "VALUES ($1, $2, $3, $4, $5, CASE WHEN $5::bigint > 0 OR "
	    "$4::bigint >= $3::bigint THEN $6::bigint END, CASE WHEN "
	    "$5::bigint > 0 THEN 'guard_tripped' WHEN $4::bigint >= $3::bigint "
	    "THEN 'reflect_budget' END, CASE WHEN $5::bigint > 0 OR $4::bigint "
	    ">= $3::bigint THEN $7 END) ON CONFLICT (secret, version) DO "
	    "UPDATE "
	    "SET reflections = r.reflections + $4::bigint, tripped = r.tripped "
	    "+ $5::bigint, burned_reason = CASE WHEN r.burned_at IS NOT NULL "
	    "THEN r.burned_reason WHEN $5::bigint > 0 THEN 'guard_tripped' "
	    "WHEN r.reflections + $4::bigint >= r.budget THEN 'reflect_budget' "
	    "END, burned_job = CASE WHEN r.burned_at IS NOT NULL THEN "
	    "r.burned_job WHEN $5::bigint > 0 OR r.reflections + $4::bigint >= "
	    "r.budget THEN $7 END, burned_at = CASE WHEN r.burned_at IS NOT "
	    "NULL THEN r.burned_at WHEN $5::bigint > 0 OR r.reflections + "
	    "$4::bigint >= r.budget THEN $6::bigint END "
	    "RETURNING " REFLECT_COLS,
	    &p, &res);
	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -EIO;
	}
	reflect_row_read(res, &a->row);
	PQclear(res);
	a->burned_now = !was_burned && a->row.burned_at != 0;
	d = json_pack("{s:s, s:I, s:s, s:I, s:I, s:I}", "secret", a->name,
	    "version", (json_int_t)a->version, "event", a->event, "count",
	    (json_int_t)a->count, "reflections", (json_int_t)a->row.reflections,
	    "budget", (json_int_t)a->row.budget);
	r = audit_append(w, "secret_reflected", a->job, a->actor, d);
	json_decref(d);
	if (r == 0 && a->burned_now) {
		d = json_pack("{s:s, s:I, s:s, s:I, s:I}", "secret", a->name,
		    "version", (json_int_t)a->version, "reason",
		    a->row.burned_reason, "reflections",
		    (json_int_t)a->row.reflections, "budget",
		    (json_int_t)a->row.budget);
		r = audit_append(w, "secret_burned", a->job, a->actor, d);
		json_decref(d);
		/* The list carries the burned versions: it moved. */
		if (r == 0)
			r = epoch_bump(w);
	}
	return r;
}

int
store_pg_secret_reflected(struct store_pg *s, const char *name, int64_t version,
    const char *job, const char *event, int64_t count, bool trip,
    const char *actor, struct secret_reflections *ret, bool *ret_burned_now)
{
	struct reflected a = { .name = name,
		.job = job,
		.event = event,
		.actor = actor,
		.version = version,
		.count = count,
		.trip = trip };
	int r = pg_write(s, op_secret_reflected, &a);

	if (r == 0) {
		*ret = a.row;
		*ret_burned_now = a.burned_now;
	}
	return r;
}

/* --- upstream credentials held (issuers.h) ------------------------------ */

/* A row of upstream_held as issuers.h has it, from res's row i (id, job,
 * secret, version, expires, refresh_at, attempts, state, sealed). */
static int
upstream_row(const PGresult *res, int i, struct issued_row *row)
{
	size_t n = 0;
	unsigned char *raw =
	    PQunescapeBytea((const unsigned char *)PQgetvalue(res, i, 8), &n);

	memset(row, 0, sizeof(*row));
	if (raw == NULL)
		return -ENOMEM;
	row->sealed = malloc(n > 0 ? n : 1);
	if (row->sealed != NULL)
		memcpy(row->sealed, raw, n);
	PQfreemem(raw);
	if (row->sealed == NULL)
		return -ENOMEM;
	row->len = n;
	row->id = col_int(res, i, 0);
	col_copy(row->job, sizeof(row->job), res, i, 1);
	col_copy(row->secret, sizeof(row->secret), res, i, 2);
	row->version = col_int(res, i, 3);
	row->expires = col_int(res, i, 4);
	row->refresh_at = col_int(res, i, 5);
	row->attempts = (int)col_int(res, i, 6);
	row->revoking = strcmp(PQgetvalue(res, i, 7), "revoking") == 0;
	return 0;
}

#define UPSTREAM_COLS                                                          \
	"id, job, secret, version, expires, refresh_at, attempts, state, "     \
	"sealed"
#define PG_NOW "extract(epoch from clock_timestamp())"

struct upstream_put {
	const struct issued_row *row;
	int64_t *id;
};

/* The job's row locked against its revoke: a revoke that committed is
 * seen, one that comes later sees this row. */
static int
upstream_put_tx(PGconn *c, void *arg)
{
	struct upstream_put *a = arg;
	struct params p = { 0 };
	PGresult *res;
	bool running;
	int64_t mine;
	int r = cmd(c, "BEGIN");

	p_text(&p, a->row->job);
	if (r == 0 &&
	    (r = q(c,
		 "SELECT state = 'running' FROM jobs WHERE id = $1 FOR "
		 "SHARE",
		 &p, &res)) == 0) {
		running = PQntuples(res) == 1 &&
		    strcmp(PQgetvalue(res, 0, 0), "t") == 0;
		PQclear(res);
		/* Dead ones of this job and secret go; the rest stay for
		 * the revoke. */
		struct params d = { 0 };
		p_text(&d, a->row->job);
		p_text(&d, a->row->secret);
		p_int(&d, (int64_t)time(NULL));
		r = q(c,
		    "DELETE FROM upstream_held WHERE job = $1 AND secret = $2 "
		    "AND expires <> 0 AND expires <= $3",
		    &d, NULL);
		if (r == 0 &&
		    (r = q(c,
			 "SELECT count(*) FROM upstream_held WHERE job = $1",
			 &p, &res)) == 0) {
			mine = col_int(res, 0, 0);
			PQclear(res);
			if (mine >= ISSUED_PER_JOB_MAX)
				r = -ENOSPC;
		}
		if (r == 0) {
			struct params v = { 0 };
			p_text(&v, a->row->job);
			p_text(&v, a->row->secret);
			p_int(&v, a->row->version);
			p_int(&v, a->row->expires);
			p_int(&v, a->row->refresh_at);
			p_text(&v,
			    running && !a->row->revoking ? "held" : "revoking");
			p_blob(&v, a->row->sealed, a->row->len);
			r = q(c,
			    "INSERT INTO upstream_held (job, secret, version, "
			    "expires, refresh_at, state, sealed) VALUES ($1, "
			    "$2, $3, $4, $5, $6, $7) RETURNING id",
			    &v, &res);
			if (r == 0) {
				*a->id = col_int(res, 0, 0);
				PQclear(res);
				if (!running)
					r = -ESTALE;
			}
		}
	}
	if (r == 0 || r == -ESTALE) {
		int c2 = cmd(c, "COMMIT");
		return c2 < 0 ? c2 : r;
	}
	if (PQstatus(c) == CONNECTION_OK)
		cmd(c, "ROLLBACK");
	return r;
}

int
store_pg_upstream_put(struct store_pg *s, const struct issued_row *row,
    int64_t *ret_id)
{
	struct upstream_put a = { row, ret_id };

	return pg_read(s, upstream_put_tx, &a);
}

struct upstream_find {
	const char *job, *secret;
	int64_t version, now;
	struct issued_row *out;
};

static int
upstream_find_q(PGconn *c, void *arg)
{
	struct upstream_find *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	p_text(&p, a->job);
	p_text(&p, a->secret);
	p_int(&p, a->version);
	p_int(&p, a->now);
	r = q(c,
	    "SELECT " UPSTREAM_COLS " FROM upstream_held WHERE job = $1 AND "
	    "secret = $2 AND version = $3 AND state = 'held' AND "
	    "(refresh_at = 0 OR refresh_at > $4) ORDER BY id DESC LIMIT 1",
	    &p, &res);
	if (r < 0)
		return r;
	r = PQntuples(res) == 1 ? upstream_row(res, 0, a->out) : -ENOENT;
	PQclear(res);
	return r;
}

int
store_pg_upstream_find(struct store_pg *s, const char *job, const char *secret,
    int64_t version, int64_t now, struct issued_row *ret)
{
	struct upstream_find a = { job, secret, version, now, ret };

	return pg_read(s, upstream_find_q, &a);
}

struct upstream_claim {
	const char *job;
	int64_t lease, max;
	struct issued_row **out;
	size_t *n;
};

/* The job's held rows turned revoking, then the due ones taken: a row
 * locked by another broker's claim is skipped, and one it moved on is no
 * longer due, so each is taken by one claim at a time. */
static int
upstream_claim_q(PGconn *c, void *arg)
{
	struct upstream_claim *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r = 0, n;

	p_text(&p, a->job != NULL ? a->job : "");
	if (a->job != NULL)
		r = q(c,
		    "UPDATE upstream_held SET state = 'revoking', next_try = "
		    "0 WHERE job = $1 AND state = 'held'",
		    &p, NULL);
	if (r < 0 || a->max == 0)
		return r;
	p_int(&p, a->lease);
	p_int(&p, a->max);
	r = q(c,
	    "UPDATE upstream_held SET next_try = " PG_NOW " + $2, attempts = "
	    "attempts + 1 WHERE id IN (SELECT id FROM upstream_held WHERE "
	    "state = 'revoking' AND next_try <= " PG_NOW " AND ($1 = '' OR "
	    "job = $1) ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED) "
	    "RETURNING " UPSTREAM_COLS,
	    &p, &res);
	if (r < 0)
		return r;
	n = PQntuples(res);
	*a->out = calloc(n > 0 ? (size_t)n : 1, sizeof(**a->out));
	if (*a->out == NULL)
		r = -ENOMEM;
	for (int i = 0; r == 0 && i < n; i++) {
		/* In the order obtained. */
		size_t at = *a->n;
		if ((r = upstream_row(res, i, &(*a->out)[at])) < 0)
			break;
		while (at > 0 && (*a->out)[at - 1].id > (*a->out)[at].id) {
			struct issued_row t = (*a->out)[at - 1];
			(*a->out)[at - 1] = (*a->out)[at];
			(*a->out)[at] = t;
			at--;
		}
		(*a->n)++;
	}
	PQclear(res);
	return r;
}

int
store_pg_upstream_claim(struct store_pg *s, const char *job, int64_t lease_s,
    size_t max, struct issued_row **ret, size_t *n)
{
	struct upstream_claim a = { job, lease_s, (int64_t)max, ret, n };
	int r;

	*ret = NULL;
	*n = 0;
	r = pg_read(s, upstream_claim_q, &a);
	if (r < 0) {
		issued_rows_free(*ret, *n);
		*ret = NULL;
		*n = 0;
	}
	return r;
}

struct upstream_set {
	const char *sql;
	int64_t a, b, c;
	int np;
	int64_t *out;
};

static int
upstream_set_q(PGconn *c, void *arg)
{
	struct upstream_set *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r;

	if (a->np > 0)
		p_int(&p, a->a);
	if (a->np > 1)
		p_int(&p, a->b);
	if (a->np > 2)
		p_int(&p, a->c);
	r = q(c, a->sql, a->np > 0 ? &p : NULL, a->out != NULL ? &res : NULL);
	if (r == 0 && a->out != NULL) {
		*a->out = PQntuples(res) == 1 ? col_int(res, 0, 0) : 0;
		PQclear(res);
	}
	return r;
}

int
store_pg_upstream_done(struct store_pg *s, int64_t id)
{
	struct upstream_set a = { "DELETE FROM upstream_held WHERE id = $1", id,
		0, 0, 1, NULL };

	return pg_read(s, upstream_set_q, &a);
}

int
store_pg_upstream_retry(struct store_pg *s, int64_t id, int64_t delay_s,
    int attempts)
{
	struct upstream_set a = { "UPDATE upstream_held SET next_try = " PG_NOW
				  " + $2, attempts = $3 WHERE id = $1",
		id, delay_s, attempts, 3, NULL };

	return pg_read(s, upstream_set_q, &a);
}

int
store_pg_upstream_pending(struct store_pg *s, int64_t *ret)
{
	struct upstream_set a = { "SELECT count(*) FROM upstream_held WHERE "
				  "state = 'revoking'",
		0, 0, 0, 0, ret };

	return pg_read(s, upstream_set_q, &a);
}

struct upstream_live {
	const char *secret;
	int64_t now, max;
	struct issued_row **out;
	size_t *n;
};

/* Every row of secret not yet revoked at its issuer nor expired, held
 * or revoking (a failed revocation leaves it live), oldest first: at
 * most max. */
static int
upstream_live_q(PGconn *c, void *arg)
{
	struct upstream_live *a = arg;
	struct params p = { 0 };
	PGresult *res;
	int r, n;

	p_text(&p, a->secret);
	p_int(&p, a->now);
	p_int(&p, a->max);
	r = q(c,
	    "SELECT " UPSTREAM_COLS " FROM upstream_held WHERE secret = $1 "
	    "AND (expires = 0 OR expires > $2) ORDER BY id LIMIT $3",
	    &p, &res);
	if (r < 0)
		return r;
	n = PQntuples(res);
	*a->out = calloc(n > 0 ? (size_t)n : 1, sizeof(**a->out));
	if (*a->out == NULL)
		r = -ENOMEM;
	for (int i = 0; r == 0 && i < n; i++) {
		if ((r = upstream_row(res, i, &(*a->out)[i])) < 0)
			break;
		(*a->n)++;
	}
	PQclear(res);
	if (r < 0) {
		issued_rows_free(*a->out, *a->n);
		*a->out = NULL;
		*a->n = 0;
	}
	return r;
}

int
store_pg_upstream_live(struct store_pg *s, const char *secret, int64_t now,
    size_t max, struct issued_row **ret, size_t *n)
{
	struct upstream_live a = { secret, now, (int64_t)max, ret, n };

	*n = 0;
	*ret = NULL;
	return pg_read(s, upstream_live_q, &a);
}
