/*
 * The job's network, the launcher's side (capture.h): the resolver's
 * zone, the sockets made inside the job's namespace, and their server on
 * the loop.
 */
#include "capture.h"

#include "http_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define FETCH_MS 5000

struct jobnet {
	struct dns_zone *zone;
	int dns_fds[2]; /* made by jobnet_enter, until jobnet_start */
	struct dns_server *dns;
};

int
jobnet_new(const json_t *rules, struct jobnet **ret)
{
	struct jobnet *n = calloc(1, sizeof(*n));
	int r;

	if (n == NULL)
		return -ENOMEM;
	n->dns_fds[0] = n->dns_fds[1] = -1;
	if ((r = dns_zone_new(rules, &n->zone)) < 0) {
		free(n);
		return r;
	}
	*ret = n;
	return 0;
}

int
jobnet_fetch(const char *base, const char *key, const json_t *job,
    struct jobnet **ret)
{
	const char *name = json_string_value(json_object_get(job, "manifest"));
	json_t *v = json_object_get(job, "manifest_version");
	struct httpc_answer a = { 0 };
	char path[300];
	int r, n;

	if (name == NULL || !json_is_integer(v))
		return -EIO;
	n = snprintf(path, sizeof(path), "/v1/manifests/%s?version=%lld", name,
	    (long long)json_integer_value(v));
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if ((r = httpc_request(base, "GET", path, key, NULL, NULL, FETCH_MS,
		 &a)) < 0)
		return r;
	json_t *rules =
	    json_object_get(json_object_get(a.json, "manifest"), "egress");
	r = a.status == 200 && json_is_array(rules) ? jobnet_new(rules, ret)
						    : -EIO;
	httpc_answer_free(&a);
	return r;
}

int
jobnet_enter(pid_t pid, void *arg)
{
	struct jobnet *n = arg;

	if (n == NULL)
		return -ENODATA;
	if (n->dns_fds[0] >= 0)
		return -EALREADY;
	return dns_sockets(pid, n->dns_fds);
}

int
jobnet_start(struct jobnet *n, struct event_base *base)
{
	int r;

	if (n == NULL || n->dns_fds[0] < 0)
		return -EINVAL;
	r = dns_server_new(base, n->dns_fds, n->zone, NULL, NULL, &n->dns);
	n->dns_fds[0] = n->dns_fds[1] = -1; /* taken */
	return r;
}

void
jobnet_dns_counts(const struct jobnet *n, struct dns_counts *ret)
{
	dns_server_counts(n != NULL ? n->dns : NULL, ret);
}

void
jobnet_stop(struct jobnet *n)
{
	if (n == NULL)
		return;
	dns_server_free(n->dns);
	n->dns = NULL;
	for (int i = 0; i < 2; i++)
		if (n->dns_fds[i] >= 0)
			close(n->dns_fds[i]);
	n->dns_fds[0] = n->dns_fds[1] = -1;
}

void
jobnet_free(struct jobnet *n)
{
	if (n == NULL)
		return;
	jobnet_stop(n);
	dns_zone_free(n->zone);
	free(n);
}
