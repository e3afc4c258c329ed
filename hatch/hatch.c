/*
 * cordon-hatch: main. Flags, log, config (input roots resolved, the
 * launcher's key read), -n check, the sealer forked (sealer.h), state
 * dir, listen, the hatch's own capabilities dropped and its filter
 * applied, serve until SIGTERM.
 */
#include "hatch.h"

#include "confine.h"
#include "keys.h"
#include "log.h"
#include "path.h"
#include "sealer.h"
#include "service.h"
#include "util.h"
#include "workspace.h"

#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * What the hatch keeps once its sealer is forked: CAP_SYS_ADMIN (each
 * workspace's tmpfs mounted and unmounted), CAP_DAC_OVERRIDE (inputs read
 * and copied whatever their modes, workspaces removed whatever modes the
 * copies kept), CAP_KILL (a sealer that hangs is killed: it runs as
 * nobody). Nothing else, in any set (docs/threat-model.md).
 */
#define HATCH_CAPS                                                             \
	((1ULL << CAP_SYS_ADMIN) | (1ULL << CAP_DAC_OVERRIDE) |                \
	    (1ULL << CAP_KILL))

static const struct config_option hatch_options[] = {
	CONFIG_COMMON_OPTIONS(offsetof(struct hatch_config, common)),
	{ "input_roots", CONFIG_PATHS,
	    offsetof(struct hatch_config, input_roots), 0, 0 },
	{ "launcher_key_file", CONFIG_PATH,
	    offsetof(struct hatch_config, launcher_key_file), 0, 0 },
	{ "broker", CONFIG_LIST, offsetof(struct hatch_config, broker), 0, 0 },
	{ "broker_key_file", CONFIG_PATH,
	    offsetof(struct hatch_config, broker_key_file), 0, 0 },
	{ "seal_deadline_s", CONFIG_INT,
	    offsetof(struct hatch_config, seal_deadline_s), 1,
	    SEALER_MAX_DEADLINE_S },
	{ "lower_tmpfs_mb", CONFIG_INT,
	    offsetof(struct hatch_config, lower_tmpfs_mb), 0,
	    WORKSPACE_MAX_LOWER_MB },
	{ "launcher_key_sha256", CONFIG_STRING,
	    offsetof(struct hatch_config, launcher_key_sha256), 0, 0 },
};

/*
 * Resolves each input root (it must exist and be a directory), so that a
 * source is compared with what the roots really are: EXIT_CONFIG after
 * one line on stderr, or -1.
 */
static int
resolve_roots(struct config_strings *roots)
{
	for (size_t i = 0; i < roots->n; i++) {
		char *real = realpath(roots->v[i], NULL);

		if (real == NULL || roots->v[i][0] != '/') {
			fprintf(stderr, "%s: config: input_roots[%zu] %s: %s\n",
			    HATCH_PROG, i, roots->v[i],
			    real == NULL ? strerror(errno)
					 : "must be an absolute path");
			free(real);
			return EXIT_CONFIG;
		}
		free(roots->v[i]);
		roots->v[i] = real;
	}
	return -1;
}

/*
 * Settings that are gone and must not be taken for unknown typing:
 * EXIT_CONFIG after one line on stderr that says why, or -1.
 */
static int
refuse_gone_settings(const char *path)
{
	json_t *root = path != NULL ? json_load_file(path, 0, NULL) : NULL;
	bool named = json_object_get(root, "policy_from_request") != NULL;

	json_decref(root);
	if (!named)
		return -1;
	fprintf(stderr,
	    "%s: config %s: \"policy_from_request\" is gone: a job's "
	    "return policy and disk cap come from the broker alone (set "
	    "broker and broker_key_file; tests make their jobs there); "
	    "remove the setting\n",
	    HATCH_PROG, path);
	return EXIT_CONFIG;
}

/* Drops every capability but HATCH_CAPS from the bounding, permitted,
 * effective, inheritable and ambient sets: 0 or -errno. */
static int
drop_caps(void)
{
	struct __user_cap_header_struct hd = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	if (geteuid() != 0)
		return 0; /* a test's unprivileged -n, or no privilege at all */
	for (int cap = 0; cap < 64; cap++)
		if (!(HATCH_CAPS & (1ULL << cap)) &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	d[0].effective = d[0].permitted = (uint32_t)HATCH_CAPS;
	d[1].effective = d[1].permitted = (uint32_t)(HATCH_CAPS >> 32);
	if (syscall(SYS_capset, &hd, d) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* Set once the sealer is gone: the hatch then stops with EXIT_OSERR. */
static bool sealer_lost;

/*
 * Every second, on the main thread: a sealer that is gone (it died, hung
 * and was killed, or broke its protocol) cannot be forked again by a
 * hatch that has dropped its privileges, so the hatch stops (SIGTERM to
 * itself: requests in flight finish) and exits EXIT_OSERR, and its
 * supervisor (systemd's Restart=on-failure) starts it again with a new
 * sealer. A seal in progress holds the lock: the next tick looks.
 */
static void
hatch_tick(void *ctx)
{
	struct hatch *h = ctx;
	bool gone = false;
	char why[sizeof(h->sealer.gone)];

	if (sealer_lost || pthread_mutex_trylock(&h->mu) != 0)
		return;
	if (sealer_gone(&h->sealer)) {
		gone = true;
		snprintf(why, sizeof(why), "%s", h->sealer.gone);
	}
	pthread_mutex_unlock(&h->mu);
	if (!gone)
		return;
	sealer_lost = true;
	log_error("sealer_lost", "{s:s, s:s, s:i}", "reason", why, "effect",
	    "the hatch stops and exits 71 so that its supervisor starts it "
	    "again with a new sealer; seals answer 503 sealer_unavailable "
	    "until then",
	    "exit_status", EXIT_OSERR);
	(void)raise(SIGTERM);
}

static void
hatch_free(struct hatch *h)
{
	config_common_free(&h->cfg.common);
	config_strings_free(&h->cfg.input_roots);
	free(h->cfg.launcher_key_file);
	free(h->cfg.launcher_key_sha256);
	free(h->cfg.broker);
	free(h->cfg.broker_key_file);
	if (h->broker_key != NULL)
		explicit_bzero(h->broker_key, strlen(h->broker_key));
	free(h->broker_key);
	free(h->workspaces);
	sealer_stop(&h->sealer);
	pthread_mutex_destroy(&h->mu);
}

int
main(int argc, char **argv)
{
	struct hatch h = {
		.mu = PTHREAD_MUTEX_INITIALIZER,
		.cfg.lower_tmpfs_mb = WORKSPACE_DEFAULT_LOWER_MB,
		.cfg.seal_deadline_s = SEALER_DEFAULT_DEADLINE_S,
		.sealer = { .fd = -1 },
	};
	struct service_args args;
	char addr[SERVICE_ADDR_MAX];
	int fd = -1, r;

	service_block_signals();
	r = service_parse_args(argc, argv, HATCH_PROG,
	    "The return path: copy-in, size-capped overlays, patches out.",
	    &args);
	if (r >= 0)
		return r;
	if ((r = refuse_gone_settings(args.config_path)) >= 0)
		return r;
	r = service_configure(&args, HATCH_PROG, "hatch", HATCH_LISTEN,
	    hatch_options, ARRAY_SIZE(hatch_options), &h.cfg, &h.cfg.common);
	if (r < 0)
		r = resolve_roots(&h.cfg.input_roots);
	if (r >= 0)
		goto out;
	if ((r = keys_check_setting(HATCH_PROG, "launcher_key_file",
		 h.cfg.launcher_key_file)) >= 0 ||
	    (r = keys_check_setting(HATCH_PROG, "broker_key_file",
		 h.cfg.broker_key_file)) >= 0)
		goto out;
	if (h.cfg.launcher_key_sha256 != NULL &&
	    keyring_add_hash(&h.keys, h.cfg.launcher_key_sha256,
		ROLE_LAUNCHER) < 0) {
		fprintf(stderr,
		    "%s: launcher_key_sha256: not a SHA-256 (64 lowercase hex "
		    "digits: printf %%s \"$(cat launcher.key)\" | sha256sum)\n",
		    HATCH_PROG);
		r = EXIT_CONFIG;
		goto out;
	}
	if (args.check_only) {
		r = service_config_ok(HATCH_PROG);
		goto out;
	}

	log_init("hatch", h.cfg.common.log_level);
	r = service_open(&h.cfg.common, &fd, addr, sizeof(addr));
	if (r >= 0)
		goto out;
	if (asprintf(&h.workspaces, "%s/workspaces", h.cfg.common.state_dir) <
	    0) {
		h.workspaces = NULL;
		r = EXIT_OSERR;
		goto out;
	}
	/* The sealer before the keys are read, the filter applied or a
	 * thread started: it keeps no descriptor of the hatch's. */
	r = path_mkdir_p(h.workspaces, 0700) < 0 ? -errno : 0;
	if (r < 0 ||
	    (r = sealer_start(&h.sealer, h.workspaces,
		 (long)h.cfg.seal_deadline_s)) < 0) {
		log_error("sealer_failed", "{s:s, s:s}", "error", strerror(-r),
		    "reason",
		    h.sealer.gone[0] != '\0' ? h.sealer.gone
					     : "the workspaces directory");
		r = EXIT_OSERR;
		goto out;
	}
	log_info("sealer_started", "{s:I, s:I}", "pid",
	    (json_int_t)h.sealer.pid, "seal_deadline_s",
	    (json_int_t)h.cfg.seal_deadline_s);
	json_t *gone = json_array();
	if (gone == NULL) {
		r = EXIT_OSERR;
		goto out;
	}
	if (workspace_discard_unfinished(h.workspaces, gone) < 0)
		log_warn("workspace_discard_failed", "{s:s, s:s}", "root",
		    h.workspaces, "effect",
		    "an unfinished workspace is left; DELETE it");
	if (json_array_size(gone) > 0)
		log_info("workspaces_discarded", "{s:O, s:s}", "jobs", gone,
		    "reason",
		    "unfinished: the hatch stopped while making them");
	json_decref(gone);
	if (h.cfg.launcher_key_file == NULL &&
	    h.cfg.launcher_key_sha256 == NULL)
		log_warn("no_launcher_key", "{s:s}", "effect",
		    "every workspace call is refused until launcher_key_file "
		    "or launcher_key_sha256 is configured");
	else if (h.cfg.launcher_key_file != NULL &&
	    (r = keyring_add_file(&h.keys, h.cfg.launcher_key_file,
		 ROLE_LAUNCHER)) < 0) {
		log_error("key_failed", "{s:s, s:s}", "path",
		    h.cfg.launcher_key_file, "error", strerror(-r));
		r = EXIT_CONFIG;
		goto out;
	}
	if (h.cfg.broker_key_file != NULL) {
		char key[256];

		r = keys_read(h.cfg.broker_key_file, key, sizeof(key));
		if (r == 0 && (h.broker_key = strdup(key)) == NULL)
			r = -ENOMEM;
		explicit_bzero(key, sizeof(key));
		if (r < 0) {
			log_error("key_failed", "{s:s, s:s}", "path",
			    h.cfg.broker_key_file, "error", strerror(-r));
			r = EXIT_CONFIG;
			goto out;
		}
	}
	if (h.cfg.broker == NULL || h.broker_key == NULL)
		log_warn("no_broker", "{s:s}", "effect",
		    "every workspace is refused until broker and "
		    "broker_key_file are configured (a job's return policy "
		    "comes from the broker)");
	if (h.cfg.input_roots.n == 0)
		log_warn("no_input_roots", "{s:s}", "effect",
		    "every input is refused until input_roots is configured");
	struct http_server_config http = {
		.svc = "hatch",
		.listen_fd = steal_fd(&fd),
		.threads = 2,
		.routes = hatch_routes,
		.nroutes = hatch_nroutes,
		.ctx = &h,
		.keys = &h.keys,
	};
	/* Everything it needs is open: its own sandbox, late. */
	if ((r = drop_caps()) < 0) {
		log_error("drop_failed", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	if ((r = confine_apply(&confine_hatch)) < 0) {
		log_error("confine_failed", "{s:s}", "error", strerror(-r));
		r = EXIT_OSERR;
		goto out;
	}
	/* What the broker key grants, said at start when the broker is
	 * up (else before the first policy read). */
	hatch_broker_key_check(&h, 2000);
	r = service_serve(&http, &h.cfg.common, addr, hatch_tick, 1000);
	if (r == 0 && sealer_lost)
		r = EXIT_OSERR;
out:
	if (fd >= 0)
		close(fd);
	hatch_free(&h);
	return r;
}
