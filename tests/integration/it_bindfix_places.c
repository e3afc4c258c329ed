/*
 * The places a secret was sent to outlive its value (issue 18,
 * redteam3's #8): a DELETE of a secret used to drop every binding, and a
 * PUT of it again brought back only the stored manifests' rule hosts, so
 * the addresses injected requests had gone to and the declared names
 * were forgotten while a storing service there still held the old key.
 * Now a DELETE keeps the seen and declared bindings (places, not the
 * value): the list leaves the secret out while it does not exist, and
 * has them all again once it does. And an address a proxy tells after
 * the job ended (within 15 minutes) is bound: the address is a fact
 * either way. On sqlite and on PostgreSQL (a
 * private server; skipped with CORDON_TEST_NO_PG=1). No job is spawned
 * (uid base 1396000 reserved).
 */
#include "bindkit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The entry of secret in list, or NULL. */
static json_t *
binding_in(json_t *list, const char *secret)
{
	json_t *e;
	size_t i;

	json_array_foreach(list, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "secret")),
			secret) == 0)
			return e;
	}
	return NULL;
}

/* The strings of array a joined by commas (a static buffer). */
static const char *
joined(json_t *a)
{
	static char out[1024];
	json_t *v;
	size_t i, n = 0;

	out[0] = '\0';
	json_array_foreach(a, i, v)
	{
		int w = snprintf(out + n, sizeof(out) - n, "%s%s",
		    i > 0 ? "," : "", json_string_value(v));
		if (w < 0 || (size_t)w >= sizeof(out) - n)
			break;
		n += (size_t)w;
	}
	return out;
}

START_TEST(a_deleted_secret_put_again_keeps_its_places)
{
	char a[64];
	json_t *j, *e;

	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s, s:[s]}", "value", "sk_place_0123456789abcdef",
		"guard_hosts", "www.api.test"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	bindkit_job_of("a", a, sizeof(a));
	json_decref(harness_expect(&bk.broker, 200, "POST", "/v1/bindings",
	    bk.verifier, NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", a, "addr",
		"127.0.0.4:8443")));

	json_decref(harness_expect(&bk.broker, 200, "DELETE",
	    "/v1/secrets/up-key", bk.admin, NULL, NULL));
	json_decref(harness_expect(&bk.broker, 404, "GET", "/v1/secrets/up-key",
	    bk.admin, NULL, NULL));
	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	ck_assert_ptr_null(
	    binding_in(json_object_get(j, "bindings"), "up-key"));
	json_decref(j);

	/* The same value again, without guard_hosts. */
	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_place_0123456789abcdef"));
	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	e = binding_in(json_object_get(j, "bindings"), "up-key");
	ck_assert_ptr_nonnull(e);
	ck_assert_msg(strcmp(joined(json_object_get(e, "addrs")),
			  "127.0.0.4:8443") == 0,
	    "addrs after the deletion and a new PUT: [%s]",
	    joined(json_object_get(e, "addrs")));
	ck_assert_msg(strcmp(joined(json_object_get(e, "hosts")),
			  "api.test,www.api.test") == 0,
	    "hosts after the deletion and a new PUT: [%s]",
	    joined(json_object_get(e, "hosts")));
	json_decref(j);
	j = harness_expect(&bk.broker, 200, "GET", "/v1/secrets/up-key",
	    bk.admin, NULL, NULL);
	ck_assert_str_eq(joined(json_object_get(j, "guard_hosts")),
	    "www.api.test");
	json_decref(j);
}
END_TEST

/* README "Noticed" (redteam3): a proxy's tell that lands after a short
 * job ended used to be 409 job_not_running, and the address was never
 * bound at the broker. */
START_TEST(an_address_told_after_the_job_ended_is_bound)
{
	char a[64], b[64], path[200];
	json_t *j;

	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_place_0123456789abcdef"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	json_decref(bindkit_manifest_put(200, "b",
	    json_pack("[o]", bindkit_rule("other.test", NULL))));
	bindkit_job_of("a", a, sizeof(a));
	bindkit_job_of("b", b, sizeof(b));
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", a);
	json_decref(harness_expect(&bk.broker, 200, "POST", path, bk.launcher,
	    NULL, NULL));
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", b);
	json_decref(harness_expect(&bk.broker, 200, "POST", path, bk.launcher,
	    NULL, NULL));

	j = harness_expect(&bk.broker, 200, "POST", "/v1/bindings", bk.verifier,
	    NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", a, "addr",
		"127.0.0.4:8443"));
	ck_assert(json_is_true(json_object_get(j, "added")));
	json_decref(j);
	/* Still only for what its manifest injects, and for a real job. */
	j = harness_expect(&bk.broker, 409, "POST", "/v1/bindings", bk.verifier,
	    NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", b, "addr",
		"127.0.0.5:8443"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "error")),
	    "not_injected");
	json_decref(j);
	json_decref(harness_expect(&bk.broker, 404, "POST", "/v1/bindings",
	    bk.verifier, NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", "job_nope",
		"addr", "127.0.0.5:8443")));
	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	ck_assert_str_eq(joined(json_object_get(binding_in(json_object_get(j,
							       "bindings"),
						    "up-key"),
			     "addrs")),
	    "127.0.0.4:8443");
	json_decref(j);
}
END_TEST

static TCase *
tests(const char *name, void (*up)(void), bool sqlite)
{
	(void)sqlite;
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, up, bindkit_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_deleted_secret_put_again_keeps_its_places);
	tcase_add_test(tc, an_address_told_after_the_job_ended_is_bound);
	return tc;
}

int
main(void)
{
	return bindkit_main("it_bindfix_places", "bindfix_places", tests);
}
