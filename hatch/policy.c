/*
 * The return-path policy. Nothing here trusts a path, a mode or a link
 * target: each is data the job chose, judged and reported, never used.
 */
#include "policy.h"

#include "buf.h"
#include "copyin.h"
#include "patch.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>

const char *const policy_default_protected[] = { ".github/**", ".gitlab-ci.yml",
	".circleci/**", ".ci/**", "Jenkinsfile", ".git/**", "**/.git/**",
	".gitmodules", ".gitattributes", "*.service", ".envrc", ".npmrc",
	".pypirc", NULL };

static const char *const verdict_names[] = {
	[VERDICT_CLEAN] = "clean",
	[VERDICT_NEEDS_REVIEW] = "needs-review",
	[VERDICT_REFUSED] = "refused",
};

const char *
policy_verdict_name(enum verdict v)
{
	return verdict_names[v];
}

int
policy_init(struct policy *p, const json_t *extra, const json_t *roots,
    uint64_t max_patch_bytes)
{
	size_t i;
	json_t *g;

	*p = (struct policy){ .protected = json_array(),
		.roots = roots != NULL ? json_deep_copy(roots) : json_array(),
		.max_patch_bytes = max_patch_bytes,
		.flags = json_array(),
		.verdict = VERDICT_CLEAN };
	if (p->protected == NULL || p->roots == NULL || p->flags == NULL) {
		policy_free(p);
		return -1;
	}
	for (i = 0; policy_default_protected[i] != NULL; i++)
		json_array_append_new(p->protected,
		    json_string(policy_default_protected[i]));
	json_array_foreach(extra, i, g)
	{
		if (json_is_string(g))
			json_array_append(p->protected, g);
	}
	return 0;
}

void
policy_free(struct policy *p)
{
	json_decref(p->protected);
	json_decref(p->roots);
	json_decref(p->flags);
	p->protected = p->roots = p->flags = NULL;
}

/* Matches one component's worth of pattern (no '/', no "**"). */
static bool
match_component(const char *pat, size_t plen, const char *s, size_t slen)
{
	size_t pi = 0, si = 0, star_p = (size_t)-1, star_s = 0;

	while (si < slen) {
		if (pi < plen && (pat[pi] == '?' || pat[pi] == s[si])) {
			pi++;
			si++;
		} else if (pi < plen && pat[pi] == '*') {
			star_p = pi++;
			star_s = si;
		} else if (star_p != (size_t)-1) {
			pi = star_p + 1;
			si = ++star_s;
		} else
			return false;
	}
	while (pi < plen && pat[pi] == '*')
		pi++;
	return pi == plen;
}

/* Matches a '/'-separated pattern against a '/'-separated path. */
static bool
match_path(const char *pat, const char *path)
{
	size_t pn = strcspn(pat, "/");

	if (pn == 2 && pat[0] == '*' && pat[1] == '*') {
		const char *rest = pat[2] == '/' ? pat + 3 : pat + 2;

		if (*rest == '\0')
			return true; /* "**" at the end: anything below */
		for (const char *s = path;;) {
			if (match_path(rest, s))
				return true;
			s = strchr(s, '/');
			if (s == NULL)
				return false;
			s++;
		}
	}
	size_t sn = strcspn(path, "/");
	if (!match_component(pat, pn, path, sn))
		return false;
	if (pat[pn] == '\0' || (pat[pn] == '/' && pat[pn + 1] == '\0'))
		return path[sn] == '\0';
	if (path[sn] == '\0')
		return false;
	return match_path(pat + pn + 1, path + sn + 1);
}

bool
policy_glob_match(const char *pattern, const char *path)
{
	size_t n = strlen(pattern);
	bool anchored = memchr(pattern, '/', n > 0 ? n - 1 : 0) != NULL;

	if (anchored)
		return match_path(pattern[0] == '/' ? pattern + 1 : pattern,
		    path);
	/* No '/': the last component, at any depth. */
	const char *base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	return match_component(pattern,
	    n > 0 && pattern[n - 1] == '/' ? n - 1 : n, base, strlen(base));
}

json_t *
policy_path_json(const char *path)
{
	json_t *j = json_string(path);
	struct buf b;

	if (j != NULL)
		return j;
	buf_init(&b, 4 * PATH_MAX + 8);
	if (patch_quote_path(&b, "", path) == 0)
		j = json_stringn(b.data, b.len);
	buf_free(&b);
	return j;
}

void
policy_flag(struct policy *p, const char *path, const char *flag,
    const char *reason, enum verdict v)
{
	json_array_append_new(p->flags,
	    json_pack("{s:o, s:s, s:s, s:s}", "path", policy_path_json(path),
		"flag", flag, "reason", reason, "verdict", verdict_names[v]));
	if (v > p->verdict)
		p->verdict = v;
}

/* The glob of p's protected list that path (or its part beneath one of
 * the inputs' destinations) matches, or NULL. */
static const char *
protected_by(const struct policy *p, const char *path)
{
	size_t i, k;
	json_t *g, *root;

	json_array_foreach(p->protected, i, g)
	{
		const char *glob = json_string_value(g);

		if (policy_glob_match(glob, path))
			return glob;
		json_array_foreach(p->roots, k, root)
		{
			const char *r = json_string_value(root);
			size_t n = strlen(r);
			if (strncmp(path, r, n) == 0 && path[n] == '/' &&
			    policy_glob_match(glob, path + n + 1))
				return glob;
		}
	}
	return NULL;
}

void
policy_check_deletion(struct policy *p, const char *path)
{
	if (protected_by(p, path) != NULL)
		policy_flag(p, path, "protected_path",
		    "a deletion where CI, hooks or tools look for instructions "
		    "(protected)",
		    VERDICT_NEEDS_REVIEW);
}

void
policy_check_entry(struct policy *p, const char *path, mode_t mode,
    const char *link_target)
{
	const char *glob = protected_by(p, path);

	if (glob != NULL)
		policy_flag(p, path, "protected_path",
		    "a write where CI, hooks or tools look for instructions "
		    "(protected)",
		    VERDICT_NEEDS_REVIEW);
	if (S_ISLNK(mode)) {
		if (link_target == NULL || link_target[0] == '/')
			policy_flag(p, path, "symlink_absolute",
			    "a symlink to an absolute path: it would point "
			    "outside the tree wherever it is applied",
			    VERDICT_REFUSED);
		else if (!copyin_link_inside(path, link_target))
			policy_flag(p, path, "symlink_escapes",
			    "a symlink whose target leaves the tree",
			    VERDICT_REFUSED);
		else
			policy_flag(p, path, "symlink",
			    "a symlink inside the tree: check where it points",
			    VERDICT_NEEDS_REVIEW);
		return;
	}
	if (S_ISCHR(mode) || S_ISBLK(mode))
		policy_flag(p, path, "device",
		    "a device node: never part of a change", VERDICT_REFUSED);
	else if (S_ISFIFO(mode))
		policy_flag(p, path, "fifo", "a fifo: never part of a change",
		    VERDICT_REFUSED);
	else if (S_ISSOCK(mode))
		policy_flag(p, path, "socket",
		    "a socket: never part of a change", VERDICT_REFUSED);
	if (mode & S_ISUID)
		policy_flag(p, path, "setuid",
		    "setuid: it would run as its owner", VERDICT_REFUSED);
	if (mode & S_ISGID)
		policy_flag(p, path, "setgid",
		    "setgid: it would run with its group", VERDICT_REFUSED);
	if ((mode & S_IWOTH) && !S_ISLNK(mode))
		policy_flag(p, path, "world_writable",
		    "world-writable: anyone could change it after it is "
		    "applied",
		    VERDICT_REFUSED);
}
