/*
 * The injection-test kit (injectkit.h): the broker, upstream, proxy,
 * secret, manifest, job and token set-up that the injection and
 * reflection integration tests share, and their small helpers. Test code:
 * failures are check assertions, buffers are capped.
 */
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t
injectkit_upstream_start(const char *script, const char *port_file,
    const char *key, unsigned *port)
{
	char portf[400], line[32];
	pid_t pid;

	snprintf(portf, sizeof(portf), "%s/%s", harness_tmpdir(), port_file);
	unlink(portf);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (key != NULL)
			execl("/usr/bin/python3", "python3", "-B", script,
			    "--port-file", portf, "--key", key, (char *)NULL);
		else
			execl("/usr/bin/python3", "python3", "-B", script,
			    "--port-file", portf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	*port = (unsigned)strtoul(line, NULL, 10);
	ck_assert_uint_gt(*port, 0);
	return pid;
}

pid_t
injectkit_jobs_upstream(const char *script, const char *key, unsigned *port)
{
	char path[600], portf[300];
	const char *slash = strchr(script, '/');

	snprintf(path, sizeof(path), "%s/tests/integration/jobs/%s",
	    CORDON_SOURCE_DIR, script);
	snprintf(portf, sizeof(portf), "%s.port",
	    slash != NULL ? slash + 1 : script);
	return injectkit_upstream_start(path, portf, key, port);
}

void
injectkit_upstream_stop(pid_t *pid)
{
	if (*pid > 1) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

char *
injectkit_send_on(const char *channel, const char *req)
{
	int fd = unix_connect(channel);
	char *out;

	if (fd < 0)
		return strdup("");
	out = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	return out != NULL ? out : strdup("");
}

char *
injectkit_send(const struct injectkit *k, const char *req)
{
	return injectkit_send_on(k->channel, req);
}

long
injectkit_metric(const struct daemon *proxy, const char *name)
{
	char cmd[300], line[300];
	long v = -1;
	size_t n = strlen(name);
	FILE *f;

	snprintf(cmd, sizeof(cmd), "curl -s %s/metrics", proxy->base);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == ' ')
			v = strtol(line + n + 1, NULL, 10);
	pclose(f);
	return v;
}

bool
injectkit_decisions_hold(const struct daemon *proxy, const char *needle)
{
	enum { cap = 4 << 20 };
	char path[400], *data = malloc(cap);
	FILE *f;
	size_t n;
	bool found;

	ck_assert_ptr_nonnull(data);
	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    proxy->dir);
	if ((f = fopen(path, "rbe")) == NULL) {
		free(data);
		return false;
	}
	n = fread(data, 1, cap, f);
	fclose(f);
	found = memmem(data, n, needle, strlen(needle)) != NULL;
	free(data);
	return found;
}

bool
injectkit_logged(const struct daemon *d, const char *event)
{
	json_t *lines = daemon_log_lines(d), *v;
	size_t i;
	bool found = false;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		if (ev != NULL && strcmp(ev, event) == 0)
			found = true;
	}
	json_decref(lines);
	return found;
}

bool
injectkit_holds_piece(const char *value, const char *resp)
{
	for (size_t i = 0; i + 6 <= strlen(value); i++)
		if (memmem(resp, strlen(resp), value + i, 6) != NULL)
			return true;
	return false;
}

void
injectkit_request_to(const struct injectkit *k, char *out, size_t cap,
    const char *host, const char *method, const char *path, bool with_token,
    const char *conn)
{
	char auth[600] = "";

	if (with_token)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    k->tok);
	snprintf(out, cap,
	    "%s http://%s:%u%s HTTP/1.1\r\nHost: %s:%u\r\n%s"
	    "Connection: %s\r\n\r\n",
	    method, host, k->up_port, path, host, k->up_port, auth, conn);
}

char *
injectkit_get_open(const struct injectkit *k, const char *channel,
    const char *host, const char *what)
{
	char req[1024], path[300];

	snprintf(path, sizeof(path), "/open/%s", what);
	injectkit_request_to(k, req, sizeof(req), host, "GET", path, false,
	    "close");
	return injectkit_send_on(channel, req);
}

char *
injectkit_ask(const struct injectkit *k, const char *method, const char *path,
    bool with_token)
{
	char req[1024];

	injectkit_request_to(k, req, sizeof(req), "api.test", method, path,
	    with_token, "close");
	return injectkit_send(k, req);
}

json_t *
injectkit_inject_rule(const struct injectkit *k, bool post, const char *header,
    const char *format)
{
	json_t *methods = json_pack("[s,s]", "GET", "HEAD");

	ck_assert_ptr_nonnull(methods);
	if (post)
		ck_assert_int_eq(json_array_append_new(methods,
				     json_string("POST")),
		    0);
	return json_pack("{s:s, s:i, s:o, s:[s], s:s, s:[s], s:s,"
			 " s:{s:s, s:s, s:s, s:s}}",
	    "host", "api.test", "port", k->up_port, "methods", methods, "paths",
	    "/case/", "reason", "the api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api", "inject", "secret", "up-key", "header",
	    header != NULL ? header : "X-Api-Key", "format",
	    format != NULL ? format : "Key {secret}", "capability", "x.read");
}

json_t *
injectkit_open_rule(const struct injectkit *k, const char *host)
{
	return json_pack("{s:s, s:i, s:[s], s:[s], s:s, s:[s]}", "host", host,
	    "port", k->up_port, "methods", "GET", "paths", "/open/", "reason",
	    "the public part", "allow_cidrs", "127.0.0.0/8");
}

json_t *
injectkit_writer_manifest(const struct injectkit *k)
{
	return injectkit_manifest("writer",
	    json_pack("[o]", injectkit_inject_rule(k, false, NULL, NULL)));
}

json_t *
injectkit_manifest(const char *name, json_t *egress)
{
	ck_assert_ptr_nonnull(egress);
	return json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
			 " s:o}",
	    "name", name, "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", egress);
}

/* The manifest "redteam" of injectkit.h, on k's upstream port. */
static json_t *
manifest(const struct injectkit *k, const struct injectkit_opts *o)
{
	return injectkit_manifest("redteam",
	    json_pack("[o, {s:s, s:i, s:[s,s], s:[s], s:s, s:[s]}]",
		injectkit_inject_rule(k, o->post, o->header, o->format),
		/* rule 1: the same service under another name, nothing
		 * injected */
		"host", "www.api.test", "port", k->up_port, "methods", "GET",
		"HEAD", "paths", "/open/", "reason", "the public part",
		"allow_cidrs", "127.0.0.0/8"));
}

void
injectkit_stack_start_cfg(struct injectkit *k, const char *broker_cfg,
    const char *hosts, const char *follower, const char *proxy_extra)
{
	char cfg[2048], path[400], hostsf[400];

	signal(SIGPIPE, SIG_IGN);
	ck_assert_ptr_nonnull(broker_cfg);
	ck_assert_int_eq(daemon_start(&k->broker, "broker", broker_cfg), 0);
	harness_broker_key(&k->broker, "admin", k->admin, sizeof(k->admin));
	harness_broker_key(&k->broker, "launcher", k->launcher,
	    sizeof(k->launcher));
	harness_broker_key(&k->broker, "verifier", k->verifier,
	    sizeof(k->verifier));
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf, hosts);
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, k->verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"%s\"%s%s}",
	    k->broker.base, path, harness_launcher_sha256(&k->broker), hostsf,
	    follower, proxy_extra != NULL ? ", " : "",
	    proxy_extra != NULL ? proxy_extra : "");
	ck_assert_int_eq(daemon_start(&k->proxy, "proxy", cfg), 0);
}

void
injectkit_stack_start(struct injectkit *k, const char *hosts,
    const char *follower, const char *proxy_extra)
{
	injectkit_stack_start_cfg(k, "{\"log_level\": \"info\"}", hosts,
	    follower, proxy_extra);
}

void
injectkit_secret(struct injectkit *k, const char *name, const char *value)
{
	char path[300];

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	json_decref(harness_expect(&k->broker, 200, "PUT", path, k->admin, NULL,
	    json_pack("{s:s}", "value", value)));
}

void
injectkit_oauth_secret(struct injectkit *k, const char *name, unsigned iport)
{
	char path[300], url[128], rev[128];

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/oauth/token", iport);
	snprintf(rev, sizeof(rev), "https://127.0.0.1:%u/oauth/revoke", iport);
	json_decref(harness_expect(&k->broker, 200, "PUT", path, k->admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", url, "client_id",
		"cordon-test", "client_secret", "s3cret-client", "scope",
		"things:read", "revocation_url", rev)));
}

void
injectkit_job_open(struct injectkit *k, const char *name, json_t *m,
    char job[64], char channel[300], char ca_pem[4096])
{
	char path[400];

	ck_assert_ptr_nonnull(m);
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&k->broker, 200, "PUT", path, k->admin, NULL, m));
	injectkit_job_of(k, name, 0, job, channel, ca_pem);
}

void
injectkit_job_of(struct injectkit *k, const char *name, int wait_ms,
    char job[64], char channel[300], char ca_pem[4096])
{
	char path[400], id[64];
	long status = 0;
	json_t *j;

	j = harness_expect(&k->broker, 201, "POST", "/v1/jobs", k->launcher,
	    NULL, json_pack("{s:s}", "manifest", name));
	snprintf(id, sizeof(id), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	if (job != NULL)
		snprintf(job, 64, "%s", id);
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	if (wait_ms <= 0)
		j = harness_expect(&k->proxy, 201, "POST", path, k->launcher,
		    NULL, NULL);
	else {
		for (int waited = 0;; waited += 50) {
			j = harness_call(&k->proxy, "POST", path, k->launcher,
			    NULL, NULL, &status);
			if (status != 503 || waited >= wait_ms)
				break;
			json_decref(j);
			usleep(50 * 1000);
		}
		ck_assert_msg(status == 201, "the proxy's channel: %ld",
		    status);
	}
	snprintf(channel, 300, "%s",
	    json_string_value(json_object_get(j, "channel")));
	if (ca_pem != NULL)
		snprintf(ca_pem, 4096, "%s",
		    json_string_value(json_object_get(j, "ca_pem")));
	json_decref(j);
}

void
injectkit_job_start(struct injectkit *k, const char *name, json_t *m)
{
	injectkit_job_open(k, name, m, k->job, k->channel, k->ca_pem);
	injectkit_mint_on(k->channel, k->tok, sizeof(k->tok));
}

void
injectkit_mint_on(const char *channel, char *tok, size_t len)
{
	static const char b[] =
	    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}";
	char req[1024], *resp;

	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(b), b);
	resp = injectkit_send_on(channel, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	char *t = strstr(resp, "crd_"),
	     *end = t != NULL ? strchr(t, '"') : NULL;
	ck_assert_ptr_nonnull(end);
	snprintf(tok, len, "%.*s", (int)(end - t), t);
	free(resp);
}

void
injectkit_start(struct injectkit *k, const struct injectkit_opts *o)
{
	k->up_pid = -1;
	injectkit_stack_start(k, "127.0.0.1 api.test\n127.0.0.1 www.api.test\n",
	    o->follower, o->proxy_extra);
	k->up_pid = injectkit_upstream_start(o->script, o->port_file, NULL,
	    &k->up_port);
	injectkit_secret(k, "up-key", o->value);
	injectkit_job_start(k, "redteam", manifest(k, o));
}

void
injectkit_stop(struct injectkit *k)
{
	daemon_stop(&k->proxy);
	injectkit_upstream_stop(&k->up_pid);
	daemon_stop(&k->broker);
}
