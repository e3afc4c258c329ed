/*
 * Jobs for the hatch's tests through a real broker (hatchjob.h): one
 * manifest per job, "hj-<n>", with the return policy and disk cap the
 * test names, then POST /v1/jobs with the launcher's key.
 */
#include "hatchjob.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

void
hatchjob_start(struct hatchjob *hj)
{
	memset(hj, 0, sizeof(*hj));
	ck_assert_int_eq(daemon_start(&hj->broker, "broker", NULL), 0);
	harness_broker_key(&hj->broker, "admin", hj->admin, sizeof(hj->admin));
	harness_broker_key(&hj->broker, "launcher", hj->launcher,
	    sizeof(hj->launcher));
	snprintf(hj->hatch_config, sizeof(hj->hatch_config),
	    "\"broker\": \"%s\", \"broker_key_file\": "
	    "\"%s/var/broker/keys/hatch.key\"",
	    hj->broker.base, hj->broker.dir);
}

void
hatchjob_stop(struct hatchjob *hj)
{
	ck_assert_int_eq(daemon_stop(&hj->broker), 0);
}

const char *
hatchjob_new(struct hatchjob *hj, const json_t *ret, int disk_mb, char *id,
    size_t len)
{
	char name[32], path[64];
	json_t *m, *j;

	snprintf(name, sizeof(name), "hj-%u", ++hj->manifests);
	m = json_pack("{s:s, s:[s], s:{s:i}}", "name", name, "command",
	    "/bin/true", "limits", "wall_seconds", 600);
	ck_assert_ptr_nonnull(m);
	if (disk_mb > 0)
		json_object_set_new(json_object_get(m, "limits"), "disk_mb",
		    json_integer(disk_mb));
	if (ret != NULL)
		json_object_set_new(m, "return", json_deep_copy(ret));
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(
	    harness_expect(&hj->broker, 200, "PUT", path, hj->admin, NULL, m));
	j = harness_expect(&hj->broker, 201, "POST", "/v1/jobs", hj->launcher,
	    NULL, json_pack("{s:s}", "manifest", name));
	ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "job")));
	ck_assert_uint_lt(strlen(json_string_value(json_object_get(j, "job"))),
	    len);
	snprintf(id, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
	return id;
}

const char *
hatchjob_mint(struct hatchjob *hj, const char *tag, json_t *ret, int disk_mb)
{
	for (size_t i = 0; i < sizeof(hj->jobs) / sizeof(hj->jobs[0]); i++)
		if (hj->jobs[i].tag[0] == '\0') {
			snprintf(hj->jobs[i].tag, sizeof(hj->jobs[i].tag), "%s",
			    tag);
			hatchjob_new(hj, ret, disk_mb, hj->jobs[i].id,
			    sizeof(hj->jobs[i].id));
			json_decref(ret);
			return hj->jobs[i].id;
		}
	ck_abort_msg("more than 32 jobs");
	return NULL;
}

const char *
hatchjob_id(struct hatchjob *hj, const char *tag)
{
	for (size_t i = 0; i < sizeof(hj->jobs) / sizeof(hj->jobs[0]); i++)
		if (strcmp(hj->jobs[i].tag, tag) == 0)
			return hj->jobs[i].id;
	ck_abort_msg("no job tagged %s", tag);
	return NULL;
}
