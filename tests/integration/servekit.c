/*
 * The serve-test kit (servekit.h): the set-up the integration tests of
 * cordon serve share (a repo to copy in, a manifest, serve started from
 * the stack's launcher configuration) and their helpers (a job posted and
 * waited for, serve's kept files, /proc's parent of a process). Test code:
 * failures are check assertions, buffers are capped.
 */
#include "servekit.h"

#include "http_client.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void
servekit_repo(const struct stack *st)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/repo", st->inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st->inputs);
	harness_write_file(path, "hello\n");
}

void
servekit_manifest(const struct stack *st, const char *name, int output_kb)
{
	json_t *m = json_pack("{s:s, s:[s], s:{s:s}, s:{s:i, s:i, s:i}}",
	    "name", name, "command", "/bin/true", "env", "LANG", "C.UTF-8",
	    "limits", "wall_seconds", 60, "memory_mb", 512, "pids", 64);
	char path[128];

	ck_assert_ptr_nonnull(m);
	if (output_kb > 0)
		json_object_set_new(json_object_get(m, "limits"), "output_kb",
		    json_integer(output_kb));
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&st->broker, 200, "PUT", path, st->admin, NULL, m));
}

char *
servekit_config(const struct stack *st, json_t *extra)
{
	json_t *cfg = json_load_file(st->launcher_cfg, 0, NULL);
	char *text;

	ck_assert_ptr_nonnull(cfg);
	if (extra != NULL) {
		ck_assert_int_eq(json_object_update(cfg, extra), 0);
		json_decref(extra);
	}
	text = json_dumps(cfg, JSON_COMPACT);
	ck_assert_ptr_nonnull(text);
	json_decref(cfg);
	return text;
}

void
servekit_start(struct daemon *serve, const struct stack *st, json_t *extra)
{
	char *text = servekit_config(st, extra);

	ck_assert_int_eq(daemon_start(serve, "launcher", text), 0);
	free(text);
}

json_t *
servekit_job(const struct stack *st, const char *manifest, const char *script,
    const char *callback)
{
	char src[400];

	snprintf(src, sizeof(src), "%s/repo", st->inputs);
	return json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s], s:s*}", "manifest",
	    manifest, "inputs", "src", src, "dst", "repo", "command", "/bin/sh",
	    "-c", script, "callback", callback);
}

json_t *
servekit_post(const struct daemon *serve, const struct stack *st,
    const char *manifest, const char *script, const char *callback)
{
	return harness_expect(serve, 201, "POST", "/v1/jobs", st->launcher,
	    NULL, servekit_job(st, manifest, script, callback));
}

char *
servekit_job_id(const json_t *j)
{
	const char *id = json_string_value(json_object_get(j, "job"));

	ck_assert_ptr_nonnull(id);
	return strdup(id);
}

json_t *
servekit_wait_state(const struct daemon *serve, const struct stack *st,
    const char *id, const char *want)
{
	char path[160];

	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	for (int i = 0; i < 600; i++) {
		json_t *j = harness_expect(serve, 200, "GET", path,
		    st->launcher, NULL, NULL);
		const char *s = json_string_value(json_object_get(j, "state"));
		if (s != NULL && strcmp(s, want) == 0)
			return j;
		json_decref(j);
		usleep(50000);
	}
	ck_abort_msg("job %s never %s", id, want);
	return NULL;
}

char *
servekit_run(const struct daemon *serve, const struct stack *st,
    const char *manifest, const char *script)
{
	json_t *j = servekit_post(serve, st, manifest, script, NULL);
	char *id = servekit_job_id(j);

	json_decref(j);
	json_decref(servekit_wait_state(serve, st, id, "done"));
	return id;
}

void
servekit_kept_path(const struct stack *st, char *out, size_t len,
    const char *name)
{
	snprintf(out, len, "%s/state/serve-jobs/%s", st->launcher_dir, name);
}

void
servekit_wait_output(const struct stack *st, const char *id, char *out,
    size_t len)
{
	char name[160];
	struct stat sb;

	snprintf(name, sizeof(name), "%s.output.json", id);
	servekit_kept_path(st, out, len, name);
	for (int i = 0; i < 200 && stat(out, &sb) != 0; i++)
		usleep(50000);
	ck_assert_msg(stat(out, &sb) == 0, "no %s", out);
}

pid_t
servekit_parent_of(pid_t pid, char *state)
{
	char path[64], buf[512];
	FILE *f;
	int ppid = -1;
	char c = '?';

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) != NULL) {
		char *close_paren = strrchr(buf, ')');
		if (close_paren == NULL ||
		    sscanf(close_paren + 1, " %c %d", &c, &ppid) != 2)
			ppid = -1;
	}
	fclose(f);
	if (state != NULL)
		*state = c;
	return ppid;
}

void *
servekit_call_run(void *arg)
{
	struct servekit_call *c = arg;
	struct httpc_answer a;
	int r =
	    httpc_request(c->serve->base, c->method != NULL ? c->method : "GET",
		c->path, c->key, NULL, NULL, 90000, &a);

	pthread_mutex_lock(c->mu);
	c->status = r == 0 ? a.status : 0;
	if (r == 0 && a.json != NULL) {
		snprintf(c->error, sizeof(c->error), "%s",
		    json_string_value(json_object_get(a.json, "error")) ?: "");
		snprintf(c->message, sizeof(c->message), "%s",
		    json_string_value(json_object_get(a.json, "message"))
			?: "");
	}
	c->ended_at = *c->step;
	if (c->ends != NULL)
		c->end_index = (*c->ends)++;
	pthread_mutex_unlock(c->mu);
	if (r == 0)
		httpc_answer_free(&a);
	return NULL;
}

void
servekit_step(pthread_mutex_t *mu, int *step, int to)
{
	pthread_mutex_lock(mu);
	*step = to;
	pthread_mutex_unlock(mu);
}

int
servekit_call_ended(struct servekit_call *c)
{
	pthread_mutex_lock(c->mu);
	int e = c->ended_at;
	pthread_mutex_unlock(c->mu);
	return e;
}
