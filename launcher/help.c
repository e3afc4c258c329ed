/*
 * The --help of cordon's commands, whole: what each does, every flag, and
 * its exit statuses. One text per command, printed by `cordon CMD --help`
 * (cordon.c asks here before the command parses its flags). The man page,
 * deploy/man/cordon.1, says the same at more length.
 */
#include "launcher.h"

#include <errno.h>
#include <string.h>

static const char help_run[] =
    "usage: cordon run --manifest NAME [--input SRC[:DST]]... [--patch-out "
    "FILE]\n"
    "                  [--canaries N] [--json] [--config FILE] [-- CMD "
    "ARGS...]\n"
    "\n"
    "Runs one job in the foreground, as root: the broker makes the job, the\n"
    "hatch copies the inputs in, the proxy opens the job's channel, and the\n"
    "command runs in a sandbox wired only to that channel. Whatever ends it\n"
    "(its exit, the wall clock, the output cap, a revoke, SIGINT or SIGTERM),\n"
    "the stop path revokes its tokens first, kills it, closes the channel and\n"
    "seals its writes into a patch.\n"
    "\n"
    "  --manifest NAME     the manifest at the broker (required)\n"
    "  --input SRC[:DST]   copy SRC (under one of the hatch's input_roots) to\n"
    "                      /work/DST (default: SRC's last component); up to "
    "64\n"
    "  --patch-out FILE    where the patch goes (default "
    "<state_dir>/<job>.patch)\n"
    "  --canaries N        plant N canary tokens (0 to 8), whatever the "
    "manifest\n"
    "                      says\n"
    "  --json              print nothing but the result, one JSON object\n"
    "  --config FILE       the launcher's configuration (default:\n"
    "                      $CORDON_CONFIG, else a source tree's\n"
    "                      var/launcher.json, else /etc/cordon/launcher.json)\n"
    "  --id-fd N           write the job's id and a newline on descriptor N\n"
    "                      once the broker made it (cordon serve uses it);\n"
    "                      a socket must answer one byte before the job\n"
    "                      is made further, else it is revoked unstarted\n"
    "  -- CMD ARGS...      the command, a path inside the sandbox (default: "
    "the\n"
    "                      manifest's)\n"
    "  --help              this text\n"
    "\n"
    "Without --json the job's output is streamed with its control characters\n"
    "removed and a summary line ends on stderr.\n"
    "\n"
    "Exit status: the job's (128 + n when killed by signal n); 3 the revoke\n"
    "failed (the job was killed all the same); 4 the patch is not out, the\n"
    "workspace is kept for cordon recover; 64 a bad flag; 78 a bad\n"
    "configuration; 125 a launcher error (a service refused or did not\n"
    "answer, the sandbox could not be made).\n";

static const char help_stop[] =
    "usage: cordon stop JOB [--config FILE] [--serve URL]\n"
    "\n"
    "Asks cordon serve to stop one of its jobs: the job's stop path runs\n"
    "(revoke, kill, channel closed, seal; stop_reason \"stopped\") and "
    "serve's\n"
    "answer, the job with its result, is printed on stdout as JSON.\n"
    "\n"
    "  --config FILE   the configuration (the launcher's key is read from its\n"
    "                  launcher_key_file)\n"
    "  --serve URL     cordon serve (default http://127.0.0.1:7704)\n"
    "  --help          this text\n"
    "\n"
    "Exit status: 0 stopped; 1 serve refused (an unknown job); 64 usage;\n"
    "69 serve did not answer; 78 a bad configuration or an unreadable key.\n";

static const char help_serve[] =
    "usage: cordon serve [-n] [--config FILE] [--listen ADDR]\n"
    "\n"
    "The launcher's HTTP API for orchestrators (cordon-serve, beside cordon):\n"
    "each job a cordon run --json of its own. POST /v1/jobs runs one\n"
    "(Idempotency-Key, a callback where callback_allow lets it), GET\n"
    "/v1/jobs lists them, GET /v1/jobs/JOB[/output|/patch|/report] and POST\n"
    "/v1/jobs/JOB/stop; every call with the launcher's key (docs/api.md).\n"
    "Its jobs' records in <state_dir>/serve-jobs outlive a restart. It runs\n"
    "cordon recover at start and every 30 s. Its log is JSON lines on\n"
    "stderr.\n"
    "\n"
    "  --config FILE   JSON configuration (default: the one cordon run finds,\n"
    "                  $CORDON_CONFIG, a source tree's var/launcher.json,\n"
    "                  /etc/cordon/launcher.json; none: built in, loopback)\n"
    "  --listen ADDR   host:port to serve HTTP on, overriding the config\n"
    "  -n              check the configuration and exit\n"
    "  --help          this text\n"
    "  --version       the version\n"
    "\n"
    "Exit status: 0 stopped cleanly (SIGTERM, SIGINT), or -n found the\n"
    "configuration good; 64 a bad flag; 71 it could not listen or make its\n"
    "directories; 78 a bad configuration.\n";

static const char help_recover[] =
    "usage: cordon recover [--json | --log] [--config FILE]\n"
    "\n"
    "Finishes the jobs of launchers that died (a record under\n"
    "<state_dir>/running whose lock is free): revoke (reason launcher_lost),\n"
    "channel closed, seal, patch written where the record says, workspace\n"
    "removed. A live launcher's job is never touched. cordon serve runs it\n"
    "by itself.\n"
    "\n"
    "  --json          one JSON object on stdout: {\"jobs\": [...], \"left\": "
    "N}\n"
    "  --log           a JSON log line per job on stderr, as serve logs\n"
    "  --config FILE   the launcher's configuration\n"
    "  --help          this text\n"
    "\n"
    "Exit status: 0 nothing is left; 1 a job is left for the next try;\n"
    "64 usage; 78 a bad configuration.\n";

static const char help_manifest[] =
    "usage: cordon manifest put FILE...\n"
    "       cordon manifest get NAME [--version N] [--json]\n"
    "       cordon manifest list [--json]\n"
    "       cordon manifest diff NAME FILE\n"
    "       (each also takes --config FILE)\n"
    "\n"
    "The broker's manifests, with the admin key the configuration names\n"
    "(admin_key_file; never a key on the command line).\n"
    "\n"
    "  put FILE...    store each file as its manifest's next version: one "
    "line\n"
    "                 per file, \"NAME: version N (planes: ...)\" or \"NAME:\n"
    "                 version N, unchanged\", then its warnings; a refused "
    "file\n"
    "                 prints every problem, \"FILE: field: problem\"\n"
    "  get NAME       the current version (--version N: that one), as "
    "indented\n"
    "                 JSON; --json: the broker's whole answer\n"
    "  list           every manifest: name, current version, sha256, when it\n"
    "                 was stored (read from the broker's audit)\n"
    "  diff NAME FILE what storing FILE would change: the planes it touches\n"
    "                 (identity, reachability, return) and each field, \"-\n"
    "                 old\" and \"+ new\"\n"
    "  --version N    with get: version N\n"
    "  --json         with get and list: JSON\n"
    "  --config FILE  the configuration (admin_key_file, broker)\n"
    "  --help         this text\n"
    "\n"
    "Exit status: 0 done (diff: no change); 1 a manifest was refused or not\n"
    "found (diff: there is a change); 2 diff could not read FILE; 64 usage;\n"
    "69 the broker did not answer; 78 a bad configuration or key.\n";

static const char help_jobs[] =
    "usage: cordon jobs [--state running|done|lost] [--manifest NAME]\n"
    "                   [--limit N] [--after JOB] [--json] [--serve URL]\n"
    "                   [--config FILE]\n"
    "\n"
    "The jobs cordon serve holds, newest first: job, state, manifest, when it\n"
    "started and ended (UTC), exit code, stop reason, verdict. When there are\n"
    "more than one page, the next page's command is said on stderr.\n"
    "\n"
    "  --state S       running, done or lost (serve died while it ran)\n"
    "  --manifest NAME only the jobs of this manifest\n"
    "  --limit N       at most N (1 to 1000, default 100)\n"
    "  --after JOB     the page after JOB\n"
    "  --json          serve's answer as it is\n"
    "  --serve URL     cordon serve (default: serve in the configuration,\n"
    "                  http://127.0.0.1:7704)\n"
    "  --config FILE   the configuration (launcher_key_file, serve)\n"
    "  --help          this text\n"
    "\n"
    "Exit status: 0 listed; 1 serve refused; 64 usage; 69 serve did not\n"
    "answer; 78 a bad configuration or key.\n";

static const char help_logs[] =
    "usage: cordon logs JOB [--json] [--config FILE]\n"
    "\n"
    "What was decided about a job, in time order: the broker's audit of it\n"
    "(created, each token minted, revoked, and by whom) and every egress\n"
    "decision of the proxy (allow or deny, the method, host, port and path,\n"
    "the reason, the status), read from the proxy's decision log over its\n"
    "GET /v1/decisions with the admin key (the proxy's admin_key_sha256 or\n"
    "admin_key_file): no file on the proxy's host is needed. A proxy that\n"
    "does not know the key answers 401; then the job's log it keeps\n"
    "(closed_job_linger_seconds) is read, or the file decision_log in the\n"
    "configuration names. Everything a job chose is printed without\n"
    "control characters.\n"
    "\n"
    "  --json          {\"job\", \"audit\": [...], \"decisions\": [...],\n"
    "                  \"decisions_from\"} as JSON\n"
    "  --config FILE   the configuration (admin_key_file, launcher_key_file,\n"
    "                  broker, proxy, decision_log)\n"
    "  --help          this text\n"
    "\n"
    "Exit status: 0 printed; 1 neither the broker nor the proxy knows the\n"
    "job, or the broker refused; 64 usage; 69 the broker did not answer;\n"
    "78 a bad configuration or key.\n";

static const char help_patch[] =
    "usage: cordon patch JOB [--output FILE] [--serve URL] [--config FILE]\n"
    "\n"
    "A finished job's patch, from cordon serve: the file cordon run wrote,\n"
    "byte for byte (git apply reproduces the job's writes). On a terminal its\n"
    "control characters are shown as '?': the patch is what the job wrote.\n"
    "\n"
    "  --output FILE, -o FILE  write it to FILE instead of stdout\n"
    "  --serve URL     cordon serve (default: serve in the configuration)\n"
    "  --config FILE   the configuration (launcher_key_file, serve)\n"
    "  --help          this text\n"
    "\n"
    "Exit status: 0 written; 1 serve refused (an unknown job, one still\n"
    "running, one that left no patch); 64 usage; 69 serve did not answer;\n"
    "78 a bad configuration or key.\n";

static const char help_revoke[] =
    "usage: cordon revoke JOB --reason TEXT [--json] [--config FILE]\n"
    "\n"
    "Revokes a job at the broker with the admin key: every token of the job\n"
    "dies at once, every proxy following the revocation feed closes the\n"
    "job's connections, and its launcher stops it within a second\n"
    "(stop_reason \"revoked\"). Says how many tokens died and which proxies\n"
    "acknowledged.\n"
    "\n"
    "  --reason TEXT   why (required; the audit and the job keep it)\n"
    "  --json          the broker's answer as it is\n"
    "  --config FILE   the configuration (admin_key_file, broker)\n"
    "  --help          this text\n"
    "\n"
    "Exit status: 0 revoked (or revoked already); 1 the broker refused (an\n"
    "unknown job); 64 usage; 69 the broker did not answer; 78 a bad\n"
    "configuration or key.\n";

static const char help_egress_report[] =
    "usage: cordon egress-report [--manifest NAME] [--since 7d] [--json]\n"
    "                            [--config FILE]\n"
    "\n"
    "What the jobs tried to reach and were refused: the proxy's denials of\n"
    "the period (its GET /v1/decisions, rotated log files too) grouped by\n"
    "host, method and path with counts, first and last seen and the jobs;\n"
    "each manifest's rules with no hit in the period (stale) and whether it\n"
    "is over the warning of 6 rules; and, for requests denied 2 times or\n"
    "more for want of a rule (no_rule, method, path), the narrowest rules\n"
    "that would have allowed them, as a unified diff of the manifest's\n"
    "JSON. A proposed path is exactly a path that was asked for, never a\n"
    "common prefix and never \"/\"; at most 8 a host. Denials no rule should\n"
    "allow (token, malformed, private_addr, ...), addresses, lookups and\n"
    "refused CONNECTs are listed apart, with why. Nothing is applied:\n"
    "review the diff, then cordon manifest put.\n"
    "\n"
    "  --manifest NAME  only this manifest's jobs and rules (default: all)\n"
    "  --since WHEN     30m, 12h, 7d (default) before now, or an RFC 3339\n"
    "                   time (2026-12-01T09:00:00Z)\n"
    "  --json           the same as one JSON document (docs/operations.md)\n"
    "  --config FILE    the configuration (admin_key_file, broker, proxy)\n"
    "  --help           this text\n"
    "\n"
    "Exit status: 0 reported; 1 a service refused; 64 usage (a bad --since);\n"
    "69 the broker or the proxy did not answer; 78 a bad configuration or\n"
    "key.\n";

static const struct {
	const char *cmd;
	const char *text;
} helps[] = {
	{ "run", help_run },
	{ "stop", help_stop },
	{ "serve", help_serve },
	{ "recover", help_recover },
	{ "manifest", help_manifest },
	{ "jobs", help_jobs },
	{ "logs", help_logs },
	{ "patch", help_patch },
	{ "revoke", help_revoke },
	{ "egress-report", help_egress_report },
};

int
launcher_help(const char *cmd, FILE *f)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		if (strcmp(helps[i].cmd, cmd) == 0) {
			fputs(helps[i].text, f);
			return 0;
		}
	return -ENOENT;
}
