/*
 * Fuzzes manifest validation, the broker's widest parser of hostile
 * input: whatever the document, every problem is a {field, problem} pair,
 * and a manifest it accepts keeps every promise the rest of cordon relies
 * on (at most 12 egress rules, each with a port and a TLS mode; limits in
 * range; a canonical form that validates the same).
 */
#include "fuzz.h"
#include "manifest.h"

#include <jansson.h>
#include <string.h>

static void
check_list(const json_t *list)
{
	size_t i;
	json_t *p;

	json_array_foreach(list, i, p)
	{
		FUZZ_ASSERT(json_is_string(json_object_get(p, "field")));
		FUZZ_ASSERT(json_is_string(json_object_get(p, "problem")));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *m =
	    json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *problems = json_array(), *warnings = json_array();
	char sha[65], sha2[65];

	if (m == NULL)
		goto out;
	bool ok = manifest_validate(m, NULL, problems, warnings);
	check_list(problems);
	check_list(warnings);
	FUZZ_ASSERT(ok == (json_array_size(problems) == 0));
	if (!ok)
		goto out;

	json_t *egress = manifest_egress(m), *r;
	size_t i;
	FUZZ_ASSERT(json_array_size(egress) <= MANIFEST_MAX_EGRESS);
	json_array_foreach(egress, i, r)
	{
		json_int_t port =
		    json_integer_value(json_object_get(r, "port"));
		FUZZ_ASSERT(port >= 1 && port <= 65535);
		FUZZ_ASSERT(json_is_string(json_object_get(r, "tls")));
		FUZZ_ASSERT(json_is_string(json_object_get(r, "reason")));
	}
	json_decref(egress);

	json_t *limits = manifest_limits(m);
	FUZZ_ASSERT(
	    json_integer_value(json_object_get(limits, "wall_seconds")) >= 1);
	json_decref(limits);

	json_t *planes = manifest_planes(NULL, m);
	FUZZ_ASSERT(json_array_size(planes) == 3);
	json_decref(planes);

	char *text = manifest_canonical(m, sha);
	FUZZ_ASSERT(text != NULL);
	json_t *again = json_loads(text, 0, NULL);
	FUZZ_ASSERT(again != NULL);
	json_t *p2 = json_array(), *w2 = json_array();
	FUZZ_ASSERT(manifest_validate(again, NULL, p2, w2));
	char *text2 = manifest_canonical(again, sha2);
	FUZZ_ASSERT(strcmp(sha, sha2) == 0);
	free(text);
	free(text2);
	json_decref(again);
	json_decref(p2);
	json_decref(w2);
out:
	json_decref(m);
	json_decref(problems);
	json_decref(warnings);
	return 0;
}
