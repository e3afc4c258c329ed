/*
 * Each process asks the broker with the least key it needs. The real
 * broker on loopback: its route table (broker/api.c, broker_routes) and
 * the table of docs/api.md ("method and path | key | does") must name the
 * same routes with the same roles, and every key of every role is tried on
 * every route: where the table does not list the role the answer is 403
 * forbidden, where it does it is anything else. The broker writes
 * keys/hatch.key beside the others (mode 0600); the hatch key reads a
 * job's return policy and nothing else; a hatch given a broader key starts
 * and warns once (broker_key_broad), one given the hatch key does not;
 * a hatch may know the launcher's key by its SHA-256 alone.
 */
#include "harness.h"

#include <check.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NROLES 4
static const char *const role_names[NROLES] = { "admin", "launcher", "verifier",
	"hatch" };

#define ROUTES_MAX 64

struct route {
	char method[8];
	char path[96]; /* the code's pattern, a * for each name */
	unsigned roles; /* bit i: role_names[i]; 0: anyone */
};

/* A whole file from the source tree (free() it). */
static char *
source_file(const char *rel)
{
	char path[600];
	FILE *f;
	char *text;
	long n;

	snprintf(path, sizeof(path), "%s/%s", CORDON_SOURCE_DIR, rel);
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

static unsigned
role_bit(const char *word, size_t len)
{
	for (unsigned i = 0; i < NROLES; i++)
		if (strlen(role_names[i]) == len &&
		    strncmp(word, role_names[i], len) == 0)
			return 1u << i;
	return 0;
}

/* broker_routes[] of broker/api.c: { "GET", "/v1/x", ROLE_A | ROLE_B, */
static size_t
code_routes(struct route *out)
{
	char *text = source_file("broker/api.c");
	char *p = strstr(text, "broker_routes[] = {"), *end;
	size_t n = 0;

	ck_assert_ptr_nonnull(p);
	end = strstr(p, "};");
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	while ((p = strchr(p + 1, '{')) != NULL) {
		char *m = strchr(p, '"'), *me, *pa, *pe, *ro;

		ck_assert_uint_lt(n, ROUTES_MAX);
		ck_assert_ptr_nonnull(m);
		me = strchr(m + 1, '"');
		pa = strchr(me + 1, '"');
		pe = strchr(pa + 1, '"');
		ck_assert_ptr_nonnull(pe);
		snprintf(out[n].method, sizeof(out[n].method), "%.*s",
		    (int)(me - m - 1), m + 1);
		snprintf(out[n].path, sizeof(out[n].path), "%.*s",
		    (int)(pe - pa - 1), pa + 1);
		out[n].roles = 0;
		/* The roles: up to the next comma, ROLE_X | ROLE_Y, ROLES_ALL
		 * or 0. */
		ro = strchr(pe, ',') + 1;
		for (char *q = ro; *q != ','; q++)
			if (strncmp(q, "ROLES_ALL", 9) == 0)
				out[n].roles |= (1u << NROLES) - 1;
			else if (strncmp(q, "ROLE_", 5) == 0) {
				size_t len =
				    strspn(q + 5, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
				char low[16];

				for (size_t k = 0; k < len && k < 15; k++)
					low[k] = (char)(q[5 + k] - 'A' + 'a');
				low[len < 15 ? len : 15] = '\0';
				unsigned bit = role_bit(low, strlen(low));
				ck_assert_msg(bit != 0,
				    "broker/api.c: role %.*s", (int)len + 5, q);
				out[n].roles |= bit;
				q += 4 + len;
			}
		n++;
		p = strchr(pe, '}');
		ck_assert_ptr_nonnull(p);
	}
	free(text);
	return n;
}

/* docs/api.md's broker table: each `METHOD /path` of a row's first
 * column (its [optional] and ?query parts dropped, {x} as *), with the
 * roles its second column names. */
static size_t
doc_routes(struct route *out)
{
	char *text = source_file("docs/api.md");
	char *sec = strstr(text, "\n## cordon-broker\n");
	char *head, *line;
	size_t n = 0;

	ck_assert_ptr_nonnull(sec);
	head = strstr(sec, "\n| method and path | key | does |\n");
	ck_assert_ptr_nonnull(head);
	line = strchr(head + 1, '\n') + 1; /* the | --- | line */
	line = strchr(line, '\n') + 1;
	while (line[0] == '|') {
		char *eol = strchr(line, '\n');
		char *c1 = line + 1, *c2 = strchr(c1, '|'), *c3;
		unsigned roles = 0;

		ck_assert_ptr_nonnull(eol);
		*eol = '\0';
		ck_assert_ptr_nonnull(c2);
		c3 = strchr(c2 + 1, '|');
		ck_assert_ptr_nonnull(c3);
		for (char *w = c2 + 1; w < c3;) {
			size_t len = strspn(w, "abcdefghijklmnopqrstuvwxyz");
			if (len > 0)
				roles |= role_bit(w, len);
			w += len > 0 ? len : 1;
		}
		for (char *b = c1;
		     b < c2 && (b = strchr(b, '`')) != NULL && b < c2;) {
			char *e = strchr(b + 1, '`'), *sp;
			ck_assert_ptr_nonnull(e);
			sp = memchr(b + 1, ' ', (size_t)(e - b - 1));
			if (sp != NULL && sp[1] == '/') {
				struct route *r = &out[n++];
				size_t k = 0;

				ck_assert_uint_le(n, ROUTES_MAX);
				snprintf(r->method, sizeof(r->method), "%.*s",
				    (int)(sp - b - 1), b + 1);
				for (char *q = sp + 1; q < e && *q != '[' &&
				     *q != '?' && k + 1 < sizeof(r->path);
				     q++) {
					if (*q == '{') {
						r->path[k++] = '*';
						q = strchr(q, '}');
					} else
						r->path[k++] = *q;
				}
				r->path[k] = '\0';
				r->roles = roles;
			}
			b = e + 1;
		}
		line = eol + 1;
	}
	free(text);
	return n;
}

static void
roles_text(unsigned roles, char *buf, size_t len)
{
	buf[0] = '\0';
	for (unsigned i = 0; i < NROLES; i++)
		if (roles & (1u << i))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
			    buf[0] != '\0' ? ", " : "", role_names[i]);
	if (buf[0] == '\0')
		snprintf(buf, len, "(anyone)");
}

static struct daemon broker;
static char keys[NROLES][128];

static void
start(void)
{
	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	for (unsigned i = 0; i < NROLES; i++)
		harness_broker_key(&broker, role_names[i], keys[i],
		    sizeof(keys[i]));
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&broker), 0);
}

/* A job of a fresh manifest "rl-<n>": its id (static). */
static const char *
new_job(const json_t *ret)
{
	static char id[128];
	static unsigned seq;
	char name[32], path[64];
	json_t *m, *j;

	snprintf(name, sizeof(name), "rl-%u", ++seq);
	m = json_pack("{s:s, s:[s], s:{s:i, s:i}}", "name", name, "command",
	    "/bin/true", "limits", "wall_seconds", 600, "disk_mb", 8);
	if (ret != NULL)
		json_object_set_new(m, "return", json_deep_copy(ret));
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&broker, 200, "PUT", path, keys[0], NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", keys[1], NULL,
	    json_pack("{s:s}", "manifest", name));
	snprintf(id, sizeof(id), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	return id;
}

START_TEST(the_code_and_the_doc_name_the_same_roles)
{
	struct route code[ROUTES_MAX], doc[ROUTES_MAX];
	size_t nc = code_routes(code), nd = doc_routes(doc);
	char a[64], b[64];
	int bad = 0;

	ck_assert_uint_ge(nc, 19);
	for (size_t i = 0; i < nc; i++) {
		size_t k;
		for (k = 0; k < nd; k++)
			if (strcmp(code[i].method, doc[k].method) == 0 &&
			    strcmp(code[i].path, doc[k].path) == 0)
				break;
		if (k == nd) {
			fprintf(stderr,
			    "%s %s: served (broker/api.c), not in "
			    "docs/api.md's table\n",
			    code[i].method, code[i].path);
			bad++;
			continue;
		}
		if (code[i].roles != doc[k].roles) {
			roles_text(code[i].roles, a, sizeof(a));
			roles_text(doc[k].roles, b, sizeof(b));
			fprintf(stderr,
			    "%s %s: the code takes %s, docs/api.md says %s\n",
			    code[i].method, code[i].path, a, b);
			bad++;
		}
	}
	for (size_t k = 0; k < nd; k++) {
		size_t i;
		for (i = 0; i < nc; i++)
			if (strcmp(code[i].method, doc[k].method) == 0 &&
			    strcmp(code[i].path, doc[k].path) == 0)
				break;
		if (i == nc) {
			fprintf(stderr, "%s %s: in docs/api.md, not served\n",
			    doc[k].method, doc[k].path);
			bad++;
		}
	}
	ck_assert_msg(bad == 0,
	    "%d differences between broker_routes and "
	    "docs/api.md (above)",
	    bad);
}
END_TEST

/* The route's pattern with its * filled in: jobs, manifests, secrets. */
static void
concrete(const char *pattern, const char *job, char *out, size_t len)
{
	size_t k = 0;
	const char *prev = "";

	for (const char *p = pattern; *p != '\0' && k + 80 < len; p++) {
		if (*p != '*') {
			out[k++] = *p;
			continue;
		}
		/* What the segment before names. */
		const char *seg = p - 1;
		while (seg > pattern && seg[-1] != '/')
			seg--;
		if (strncmp(seg - 1, "/jobs/", 6) == 0)
			prev = job;
		else if (strncmp(seg - 1, "/manifests/", 11) == 0)
			prev = "rl-none";
		else
			prev = "rl-secret";
		k += (size_t)snprintf(out + k, len - k, "%s", prev);
	}
	out[k] = '\0';
	if (strcmp(pattern, "/v1/revocations") == 0)
		snprintf(out + k, len - k, "?wait=0");
}

START_TEST(every_role_on_every_route)
{
	struct route code[ROUTES_MAX];
	size_t nc = code_routes(code);
	struct stat st;
	char path[600], what[700];
	const char *job;
	int bad = 0;

	start();
	/* The hatch's key, beside the others, as private as they are. */
	snprintf(path, sizeof(path), "%s/var/broker/keys/hatch.key",
	    broker.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	job = new_job(NULL);
	for (size_t i = 0; i < nc; i++)
		for (unsigned r = 0; r < NROLES; r++) {
			bool listed =
			    code[i].roles == 0 || (code[i].roles & (1u << r));
			json_t *body = NULL, *a;
			const char *err;
			long status;

			concrete(code[i].path, job, path, sizeof(path));
			/* A body no handler takes: nothing is changed by a
			 * call that gets past the key (422, 404). */
			if (strcmp(code[i].method, "GET") != 0 &&
			    strcmp(code[i].method, "DELETE") != 0 &&
			    strstr(path, "/release") == NULL &&
			    strstr(path, "/heartbeat") == NULL)
				body = json_pack("{s:i}", "rl_probe", 1);
			a = harness_call(&broker, code[i].method, path, keys[r],
			    NULL, body, &status);
			json_decref(body);
			err = json_string_value(json_object_get(a, "error"));
			bool forbidden = status == 403 && err != NULL &&
			    strcmp(err, "forbidden") == 0;
			snprintf(what, sizeof(what),
			    "%s %s with the %s key: %ld %s", code[i].method,
			    path, role_names[r], status,
			    err != NULL ? err : "");
			fprintf(stderr, "%s\n", what);
			if (status == 0 || status == 401 ||
			    forbidden == listed) {
				fprintf(stderr, "  ^ %s\n",
				    listed
					? "the table lets this role call it"
					: "the table does not list this role");
				bad++;
			}
			json_decref(a);
		}
	ck_assert_msg(bad == 0, "%d calls answered against the table (above)",
	    bad);
	stop();
}
END_TEST

/* A hatch whose broker_key_file is role's key; one root to copy from. */
static struct daemon hatch;
static char roots[300], repo[400];

static void
start_hatch(const char *role)
{
	char cfg[1400], p[500];

	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(repo, sizeof(repo), "%s/repo", roots);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	harness_write_file(p, "hello\n");
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_file\": "
	    "\"%s/var/broker/keys/launcher.key\", \"broker\": \"%s\", "
	    "\"broker_key_file\": \"%s/var/broker/keys/%s.key\"}",
	    roots, broker.dir, broker.base, broker.dir, role);
	ck_assert_int_eq(daemon_start(&hatch, "hatch", cfg), 0);
}

/* A hatch that knows the launcher's key by its SHA-256 alone (sha
 * NULL: by its file), asking the broker with the hatch key. */
static void
start_hatch_by_hash(const char *sha)
{
	char cfg[1400], p[500];

	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(repo, sizeof(repo), "%s/repo", roots);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	harness_write_file(p, "hello\n");
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_sha256\": \"%s\", "
	    "\"broker\": \"%s\", "
	    "\"broker_key_file\": \"%s/var/broker/keys/hatch.key\"}",
	    roots, sha, broker.base, broker.dir);
	ck_assert_int_eq(daemon_start(&hatch, "hatch", cfg), 0);
}

/* A workspace for a new job, made and removed: the hatch read the
 * job's return policy with its key. */
static void
one_workspace(void)
{
	const char *job = new_job(NULL);
	char p[300];
	json_t *ws =
	    harness_expect(&hatch, 201, "POST", "/v1/workspaces", keys[1], NULL,
		json_pack("{s:s, s:[{s:s, s:s}]}", "job", job, "inputs", "src",
		    repo, "dst", "repo"));

	ck_assert_int_eq(json_integer_value(json_object_get(ws, "disk_mb")), 8);
	json_decref(ws);
	snprintf(p, sizeof(p), "/v1/workspaces/%s", job);
	json_decref(
	    harness_expect(&hatch, 200, "DELETE", p, keys[1], NULL, NULL));
}

/* The hatch's broker_key_broad lines; the last one in *ret (new). */
static int
broad_lines(json_t **ret)
{
	json_t *lines = daemon_log_lines(&hatch), *l;
	size_t i;
	int n = 0;

	*ret = NULL;
	json_array_foreach(lines, i, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		if (ev == NULL || strcmp(ev, "broker_key_broad") != 0)
			continue;
		n++;
		json_decref(*ret);
		*ret = json_incref(l);
	}
	json_decref(lines);
	return n;
}

START_TEST(the_hatch_key_reads_the_return_policy_alone)
{
	json_t *l;

	start();
	start_hatch("hatch");
	one_workspace();
	one_workspace();
	ck_assert_int_eq(broad_lines(&l), 0);
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	stop();
}
END_TEST

START_TEST(a_hatch_given_a_broader_key_warns_once)
{
	static const char *const broader[] = { "launcher", "admin",
		"verifier" };
	json_t *l;

	start();
	for (size_t i = 0; i < 3; i++) {
		start_hatch(broader[i]);
		/* The launcher's key still reads the policy: an upgrade
		 * keeps working. */
		if (i == 0) {
			one_workspace();
			one_workspace();
		}
		ck_assert_int_eq(broad_lines(&l), 1);
		json_t *roles = json_object_get(l, "roles");
		ck_assert_uint_eq(json_array_size(roles), 1);
		ck_assert_str_eq(json_string_value(json_array_get(roles, 0)),
		    broader[i]);
		ck_assert_str_eq(json_string_value(json_object_get(l, "level")),
		    "warn");
		json_decref(l);
		ck_assert_int_eq(daemon_stop(&hatch), 0);
	}
	stop();
}
END_TEST

/* The hatch holds no key the broker takes as the launcher's: it checks
 * the launcher's calls by the key's SHA-256. */
START_TEST(the_hatch_knows_the_launcher_key_by_its_hash)
{
	char sha[65], path[400], cfg[300], out[4096], err[4096];
	unsigned char md[32];
	unsigned int mdlen = 0;
	char *argv[] = { (char *)harness_bin("cordon-hatch"), "-n", "--config",
		path, NULL };
	long status;
	json_t *l;

	start();
	ck_assert_int_eq(EVP_Digest(keys[1], strlen(keys[1]), md, &mdlen,
			     EVP_sha256(), NULL),
	    1);
	for (unsigned i = 0; i < 32; i++)
		snprintf(sha + 2 * i, 3, "%02x", md[i]);
	start_hatch_by_hash(sha);
	one_workspace();
	/* Any other key is unknown to it. */
	json_decref(harness_call(&hatch, "GET", "/v1/workspaces/job_x/report",
	    keys[3], NULL, NULL, &status));
	ck_assert_int_eq(status, 401);
	ck_assert_int_eq(broad_lines(&l), 0);
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	/* A value of another shape stops it, under -n too. */
	snprintf(path, sizeof(path), "%s/hatch.json", harness_tmpdir());
	sha[0] = 'G';
	snprintf(cfg, sizeof(cfg), "{\"launcher_key_sha256\": \"%s\"}", sha);
	harness_write_file(path, cfg);
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    78);
	ck_assert_msg(strstr(err, "launcher_key_sha256") != NULL, "%s", err);
	stop();
}
END_TEST

/* cordon-broker -n names every key file, the hatch's with the others. */
START_TEST(the_brokers_check_lists_the_hatch_key)
{
	char dir[400], cfg[900], path[500], want[700], out[4096], err[4096];
	char *argv[] = { (char *)harness_bin("cordon-broker"), "-n", "--config",
		path, NULL };

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(path, sizeof(path), "%s/broker.json", dir);
	snprintf(cfg, sizeof(cfg),
	    "{\"keys_dir\": \"%s/keys\", \"state_dir\": \"%s/state\"}", dir,
	    dir);
	harness_write_file(path, cfg);
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    0);
	for (unsigned i = 0; i < NROLES; i++) {
		snprintf(want, sizeof(want),
		    "cordon-broker: %s key %s/keys/%s.key (written at start)\n",
		    role_names[i], dir, role_names[i]);
		ck_assert_msg(strstr(out, want) != NULL, "no %s in: %s", want,
		    out);
	}
	ck_assert_ptr_nonnull(strstr(out, "configuration ok"));
}
END_TEST

static Suite *
roles_suite(void)
{
	Suite *s = suite_create("roles");
	TCase *tc = tcase_create("roles");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, the_code_and_the_doc_name_the_same_roles);
	tcase_add_test(tc, every_role_on_every_route);
	tcase_add_test(tc, the_hatch_key_reads_the_return_policy_alone);
	tcase_add_test(tc, a_hatch_given_a_broader_key_warns_once);
	tcase_add_test(tc, the_brokers_check_lists_the_hatch_key);
	tcase_add_test(tc, the_hatch_knows_the_launcher_key_by_its_hash);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(roles_suite());
}
