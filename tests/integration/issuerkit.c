/*
 * The test issuer's kit (issuerkit.h): jobs/issuers/issuer.py started,
 * stopped and its events read, for the short-lived credential tests.
 * Test code: failures are check assertions, buffers are capped.
 */
#include "issuerkit.h"
#include "harness.h"
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
issuerkit_start(const char *dir, const char *events, const char *const *args,
    unsigned *ret_port)
{
	char cert[400], key[400], portf[400], ca[400], line[32];
	const char *const hosts[] = { "127.0.0.1", NULL };
	const char *argv[24];
	size_t argc = 0;
	pid_t pid;

	snprintf(cert, sizeof(cert), "%s/127.0.0.1.pem", dir);
	snprintf(key, sizeof(key), "%s/127.0.0.1.key", dir);
	snprintf(portf, sizeof(portf), "%s/issuer.port", dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	if (access(ca, R_OK) != 0)
		ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	argv[argc++] = "python3";
	argv[argc++] = "-B";
	argv[argc++] = CORDON_SOURCE_DIR "/tests/integration/jobs/issuers/"
					 "issuer.py";
	argv[argc++] = "--cert";
	argv[argc++] = cert;
	argv[argc++] = "--key";
	argv[argc++] = key;
	argv[argc++] = "--port-file";
	argv[argc++] = portf;
	argv[argc++] = "--events";
	argv[argc++] = events;
	for (size_t i = 0; args != NULL && args[i] != NULL; i++) {
		ck_assert_uint_lt(i, 8);
		argv[argc++] = args[i];
	}
	argv[argc] = NULL;
	unlink(portf);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv("/usr/bin/python3", (char *const *)argv);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	*ret_port = (unsigned)strtoul(line, NULL, 10);
	ck_assert_uint_gt(*ret_port, 0);
	return pid;
}

void
issuerkit_kill(pid_t *pid)
{
	if (*pid > 1) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

json_t *
issuerkit_events(const char *events, const char *event)
{
	FILE *f = fopen(events, "re");
	json_t *out = json_array();
	char line[1 << 14];

	ck_assert_ptr_nonnull(out);
	if (f == NULL)
		return out;
	while (fgets(line, sizeof(line), f) != NULL) {
		json_t *e = json_loads(line, 0, NULL);
		const char *ev = json_string_value(json_object_get(e, "event"));
		if (e != NULL &&
		    (event == NULL || (ev != NULL && strcmp(ev, event) == 0)))
			json_array_append(out, e);
		json_decref(e);
	}
	fclose(f);
	return out;
}
