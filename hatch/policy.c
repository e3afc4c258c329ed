/*
 * The return-path policy. Nothing here trusts a path, a mode or a link
 * target: each is data the job chose, judged and reported, never used.
 * A path is judged as the checkout that applies the patch may read it:
 * on a case-insensitive file system, on Windows (trailing dots and
 * spaces dropped, a stream name after ':', backslashes as separators,
 * 8.3 short names) or on macOS (ignorable code points dropped); so a
 * protected glob matches a path in any of those spellings, at any depth.
 */
#include "policy.h"

#include "buf.h"
#include "copyin.h"
#include "envelope.h"
#include "hidden.h"
#include "patch.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Each with its source in docs/return-path.md; matching folds case. */
const char *const policy_default_protected[] = {
	/* CI systems. */
	".github/**", ".gitlab-ci.yml", ".gitlab/**", ".gitea/**",
	".forgejo/**", ".circleci/**", ".travis.yml", "azure-pipelines.yml",
	"azure-pipelines.yaml", ".azure-pipelines/**",
	"bitbucket-pipelines.yml", ".drone.yml", ".drone.yaml",
	".drone.jsonnet", ".drone.star", ".buildkite/**", "buildkite.yml",
	"buildkite.yaml", ".woodpecker/**", ".woodpecker.yml",
	".woodpecker.yaml", "jenkinsfile", "jenkinsfile.*", "*.jenkinsfile",
	".cirrus.yml", ".cirrus.star", ".semaphore/**", "appveyor.yml",
	".appveyor.yml", "codeship-*.yml", "codeship-*.yaml", ".tekton/**",
	".harness/**", "cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json",
	"buildspec.yml", "buildspec.yaml", ".teamcity/**", "bamboo-specs/**",
	".ci/**", "action.yml", "action.yaml", "codeowners", ".gitpod.yml",
	".gitpod.dockerfile", "renovate.json", "renovate.json5", ".renovaterc",
	".renovaterc.json", ".zuul.yaml", "zuul.yaml", ".zuul.d/**",
	"zuul.d/**", ".build.yml", ".builds/**", "bitrise.yml",
	"codemagic.yaml", ".prow.yaml", "screwdriver.yaml",
	/* Deploys built from the repository, bots that merge by its rules. */
	"netlify.toml", "vercel.json", "render.yaml", "amplify.yml",
	"appspec.yml", ".ebextensions/**", ".platform/**", ".platform.app.yaml",
	".mergify.yml", ".mergify/**", ".kodiak.toml",
	/* git itself: a .git anywhere (a directory or a gitfile). */
	".git", ".gitmodules", ".gitattributes", ".lfsconfig",
	/* Mercurial's .git (hgrc hooks), and what git and hg read at home. */
	".hg", ".hgrc", ".gitconfig", ".config/git/**",
	/* Hook runners. */
	".husky/**", ".pre-commit-config.yaml", ".pre-commit-config.yml",
	".pre-commit-hooks.yaml", "lefthook.yml", "lefthook.yaml",
	".lefthook.yml", ".lefthook.yaml", "lefthook-local.yml",
	"lefthook-local.yaml", ".lefthook/**", ".lefthook-local/**",
	".githooks/**", ".git-hooks/**", ".overcommit.yml",
	".simple-git-hooks.json", ".simple-git-hooks.js",
	".simple-git-hooks.cjs", "simple-git-hooks.json", ".lintstagedrc*",
	"lint-staged.config.*",
	/* Editors and dev environments that run what they find. */
	".vscode/**", ".devcontainer/**", ".devcontainer.json", ".idea/**",
	".run/**", ".fleet/**", ".zed/**", ".helix/**", ".nvim.lua", ".nvimrc",
	".exrc",
	/* What a debugger or an interpreter runs from the current directory. */
	".pdbrc", ".rprofile", ".irbrc", ".gdbinit", ".psqlrc",
	/* Environments and package managers: where code or credentials go. */
	".envrc", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs",
	".pnpmfile.mjs", "bunfig.toml", ".bunfig.toml", ".pypirc", "pip.conf",
	".condarc", ".cargo/**", ".mvn/**", "gradle/wrapper/**", ".bazelrc",
	".bundle/**", ".netrc", "mise.toml", ".mise.toml",
	/* What a host runs or lets in, when an input is a home or /etc. */
	"*.service", "*.timer", "*.socket", ".ssh/**", "authorized_keys",
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc",
	".zshenv", ".zprofile", ".bash_logout", ".zlogin", ".zlogout", ".vimrc",
	".gvimrc", ".config/nvim/**", ".emacs", ".emacs.d/**", ".tmux.conf",
	".xinitrc", ".xprofile", ".xsession", ".config/autostart/**",
	".config/fish/**", ".aws/config", ".aws/credentials", ".kube/config",
	".docker/config.json", ".gradle/init.d/**", ".gradle/init.gradle",
	".gradle/init.gradle.kts", ".gradle/gradle.properties", ".terraformrc",
	".forward", ".pam_environment",
	/* Where coding agents read their instructions and hooks. */
	"agents.md", "claude.md", "gemini.md", ".claude/**", ".cursor/**",
	".cursorrules", ".windsurfrules", ".clinerules", ".gemini/**",
	".mcp.json", ".aider.conf.yml", ".roomodes", ".roo/**", ".continue/**",
	".amazonq/**", ".junie/**", ".kiro/**", ".windsurf/**", ".goosehints",
	"opencode.json", ".opencode/**", NULL
};

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
		.max_entries = POLICY_MAX_ENTRIES,
		.flags = json_array(),
		.flag_counts = json_object(),
		.verdict = VERDICT_CLEAN };
	if (p->protected == NULL || p->roots == NULL || p->flags == NULL ||
	    p->flag_counts == NULL) {
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
	json_decref(p->flag_counts);
	json_decref(p->exclude);
	json_decref(p->excluded_sample);
	p->protected = p->roots = p->flags = p->flag_counts = NULL;
	p->exclude = p->excluded_sample = NULL;
}

int
policy_set_exclude(struct policy *p, const json_t *globs)
{
	size_t i;
	json_t *g;

	json_decref(p->exclude);
	p->exclude = json_array();
	if (p->exclude == NULL)
		return -ENOMEM;
	json_array_foreach(globs, i, g)
	{
		if (json_is_string(g) && json_array_append(p->exclude, g) < 0)
			return -ENOMEM;
	}
	return 0;
}

bool
policy_exclude(struct policy *p, const char *path, uint64_t bytes)
{
	bool hit = false;
	size_t i;
	json_t *g;

	json_array_foreach(p->exclude, i, g)
	{
		if (policy_glob_match(json_string_value(g), path)) {
			hit = true;
			break;
		}
	}
	if (!hit || policy_protected_by(p, path) != NULL)
		return false;
	p->excluded++;
	p->excluded_bytes += bytes;
	if (p->excluded_sample == NULL)
		p->excluded_sample = json_array();
	if (p->excluded_sample != NULL &&
	    json_array_size(p->excluded_sample) < POLICY_EXCLUDED_SAMPLE)
		json_array_append_new(p->excluded_sample,
		    policy_path_json(path));
	return true;
}

json_t *
policy_excluded_json(const struct policy *p)
{
	return json_pack("{s:I, s:I, s:o}", "count", (json_int_t)p->excluded,
	    "bytes", (json_int_t)p->excluded_bytes, "sample",
	    p->excluded_sample != NULL ? json_deep_copy(p->excluded_sample)
				       : json_array());
}

static char
lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Matches one component's worth of pattern (no '/', no "**"), folding
 * ASCII case. */
static bool
match_component(const char *pat, size_t plen, const char *s, size_t slen)
{
	size_t pi = 0, si = 0, star_p = (size_t)-1, star_s = 0;

	while (si < slen) {
		if (pi < plen &&
		    (pat[pi] == '?' || lower(pat[pi]) == lower(s[si]))) {
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

/* Matches a '/'-separated pattern against a '/'-separated path from its
 * start; "**" spans any number of components, none included. */
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
		/* A trailing "**" holds x itself too: a file or link x. */
		return strcmp(pat + pn, "/**") == 0;
	return match_path(pat + pn + 1, path + sn + 1);
}

/* Whether pattern matches path starting at one of its components. */
static bool
match_any_depth(const char *pattern, const char *path)
{
	size_t n = strlen(pattern);
	bool anchored = memchr(pattern, '/', n > 0 ? n - 1 : 0) != NULL;

	if (pattern[0] == '/')
		pattern++;
	for (const char *s = path;;) {
		size_t sn = strcspn(s, "/");

		if (anchored ? match_path(pattern, s)
			     : match_component(pattern,
				   n > 0 && pattern[n - 1] == '/' ? n - 1 : n,
				   s, sn))
			return true;
		if (s[sn] == '\0')
			return false;
		s += sn + 1;
	}
}

bool
policy_glob_match(const char *pattern, const char *path)
{
	return match_any_depth(pattern, path);
}

/*
 * path as a checkout on another file system may read it, into out (of
 * size len): backslashes as '/', code points macOS ignores dropped, a
 * code point a checkout reads as ASCII (U+0131 as i, U+212A as k:
 * fold_table.h) as that ASCII, each
 * component cut at ':' (an NTFS stream) and stripped of trailing dots
 * and spaces (Windows drops them). False when it does not fit.
 */
static bool
fold_path(const char *path, char *out, size_t len)
{
	size_t o = 0, comp = 0, n = strlen(path);
	bool cut = false;

	for (size_t i = 0; i <= n;) {
		unsigned char c = (unsigned char)path[i];
		uint32_t cp;
		size_t k;
		const char *to;

		if (c == '/' || c == '\\' || c == '\0') {
			while (o > comp &&
			    (out[o - 1] == '.' || out[o - 1] == ' '))
				o--;
			if (c == '\0')
				break;
			if (o + 1 >= len)
				return false;
			out[o++] = '/';
			comp = o;
			cut = false;
			i++;
			continue;
		}
		k = c >= 0x80
		    ? envelope_utf8_decode((const unsigned char *)path + i,
			  n - i, &cp)
		    : 1;
		if (k == 0)
			k = 1; /* not UTF-8: kept as it is */
		else if (c >= 0x80 && envelope_invisible(cp)) {
			i += k;
			continue;
		} else if (c >= 0x80 && !cut &&
		    (to = hidden_fold_ascii(cp)) != NULL) {
			size_t tn = strlen(to);

			if (o + tn >= len)
				return false;
			memcpy(out + o, to, tn);
			o += tn;
			i += k;
			continue;
		}
		if (c == ':')
			cut = true;
		if (!cut) {
			if (o + k >= len)
				return false;
			memcpy(out + o, path + i, k);
			o += k;
		}
		i += k;
	}
	out[o] = '\0';
	return true;
}

/* An NTFS 8.3 short name (GIT~1, GITHUB~1): on Windows it may be the
 * other name of a protected directory. */
static bool
short_name(const char *path)
{
	for (const char *s = path;;) {
		size_t sn = strcspn(s, "/");
		const char *t = memchr(s, '~', sn);

		if (t != NULL && t > s && t - s <= 6 && t + 1 < s + sn &&
		    t[1] >= '1' && t[1] <= '9') {
			const char *e = t + 2;
			while (e < s + sn && *e >= '0' && *e <= '9')
				e++;
			if (e == s + sn || (*e == '.' && s + sn - e <= 4))
				return true;
		}
		if (s[sn] == '\0')
			return false;
		s += sn + 1;
	}
}

/* How the report writes one code point: 0 as it is, else escaped. */
static bool
shown_escaped(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
	    cp == '"' || cp == '\\' || cp == 0x2028 || cp == 0x2029 ||
	    envelope_invisible(cp);
}

json_t *
policy_path_json(const char *path)
{
	static const char letters[] = "abtnvfr"; /* 0x07 to 0x0d */
	const unsigned char *s = (const unsigned char *)path;
	size_t n = strlen(path), i;
	struct buf b;
	json_t *j;
	int r;

	for (i = 0; i < n;) {
		uint32_t cp;
		size_t k = envelope_utf8_decode(s + i, n - i, &cp);

		if (k == 0 || shown_escaped(cp))
			break;
		i += k;
	}
	if (i == n)
		return json_string(path);
	/* git's quoted form, with \u for what git would show raw. */
	buf_init(&b, 10 * n + 8);
	r = buf_append(&b, "\"", 1);
	for (i = 0; r == 0 && i < n;) {
		uint32_t cp;
		size_t k = envelope_utf8_decode(s + i, n - i, &cp);

		if (k == 0) {
			r = buf_printf(&b, "\\%03o", s[i]);
			k = 1;
		} else if (cp >= 0x07 && cp <= 0x0d)
			r = buf_printf(&b, "\\%c", letters[cp - 0x07]);
		else if (cp == '"' || cp == '\\')
			r = buf_printf(&b, "\\%c", (int)cp);
		else if (cp < 0x20 || cp == 0x7f)
			r = buf_printf(&b, "\\%03o", (unsigned)cp);
		else if (shown_escaped(cp))
			r = cp > 0xffff
			    ? buf_printf(&b, "\\U%08x", (unsigned)cp)
			    : buf_printf(&b, "\\u%04x", (unsigned)cp);
		else
			r = buf_append(&b, s + i, k);
		i += k;
	}
	if (r == 0)
		r = buf_append(&b, "\"", 1);
	j = r == 0 ? json_stringn(b.data, b.len) : NULL;
	buf_free(&b);
	return j;
}

/* policy_flag with more fields (extra, an object, may be NULL; taken). */
static void
flag_with(struct policy *p, const char *path, const char *flag,
    const char *reason, enum verdict v, json_t *extra)
{
	json_int_t of_kind =
	    json_integer_value(json_object_get(p->flag_counts, flag));
	json_t *f;

	if (v > p->verdict)
		p->verdict = v;
	json_object_set_new(p->flag_counts, flag, json_integer(of_kind + 1));
	if (of_kind >= POLICY_MAX_FLAGS_OF_A_KIND ||
	    json_array_size(p->flags) >= POLICY_MAX_FLAGS) {
		p->flags_omitted++;
		json_decref(extra);
		return;
	}
	f = json_pack("{s:o, s:s, s:s, s:s}", "path", policy_path_json(path),
	    "flag", flag, "reason", reason, "verdict", verdict_names[v]);
	if (f != NULL && extra != NULL)
		json_object_update_missing(f, extra);
	json_decref(extra);
	json_array_append_new(p->flags, f);
}

void
policy_flag(struct policy *p, const char *path, const char *flag,
    const char *reason, enum verdict v)
{
	flag_with(p, path, flag, reason, v, NULL);
}

/* What a class of hidden text does to the one who reads it. */
static const char *
hidden_what(enum hidden_class c)
{
	switch (c) {
	case HIDDEN_BIDI:
		return "a bidi control, which reorders the line on the screen";
	case HIDDEN_INVISIBLE:
		return "an invisible character, which shows nothing";
	case HIDDEN_CONTROL:
		return "a control character, which a terminal acts on";
	case HIDDEN_SEPARATOR:
		return "a line separator, which ends the line for some readers "
		       "only";
	case HIDDEN_INVALID:
		return "a byte that is not UTF-8, which each viewer shows as "
		       "it "
		       "guesses";
	case HIDDEN_MIXED_SCRIPT:
		return "a look-alike of a Latin letter in a word (another "
		       "script's, fullwidth or mathematical), which reads as "
		       "the Latin one";
	case HIDDEN_CASE_CONFUSABLE:
		return "a letter that a case-insensitive checkout (NTFS, "
		       "APFS) reads as an ASCII one, so the name may be "
		       "another file's there";
	default:
		return "a character";
	}
}

void
policy_check_text(struct policy *p, const char *path, const char *section,
    size_t len)
{
	char reason[400], ch[16];
	struct hidden_text t;
	json_t *extra, *classes;
	int r = hidden_scan_patch(section, len, &t);

	if (r == 0 && t.lines == 0)
		return;
	if (t.lines == 0) {
		/* Fail closed: what cannot be read is not clean. */
		policy_flag(p, path, "hidden_text",
		    "the added lines could not be read for hidden text",
		    VERDICT_NEEDS_REVIEW);
		return;
	}
	if (t.first.cls == HIDDEN_INVALID)
		snprintf(ch, sizeof(ch), "0x%02X", (unsigned)t.first.cp);
	else
		snprintf(ch, sizeof(ch), "U+%04X", (unsigned)t.first.cp);
	classes = json_array();
	for (unsigned c = 0; c < HIDDEN_CLASSES; c++)
		if (t.classes & (1u << c))
			json_array_append_new(classes,
			    json_string(hidden_class_name(c)));
	snprintf(reason, sizeof(reason),
	    "added line %llu holds %s (%s at byte %zu): the text reads "
	    "otherwise than it applies (%llu added line%s in all)",
	    (unsigned long long)t.first_line, hidden_what(t.first.cls), ch,
	    t.first.col, (unsigned long long)t.lines, t.lines == 1 ? "" : "s");
	extra =
	    json_pack("{s:I, s:I, s:o, s:s}", "line", (json_int_t)t.first_line,
		"lines", (json_int_t)t.lines, "classes", classes, "char", ch);
	flag_with(p, path, "hidden_text", reason, VERDICT_NEEDS_REVIEW, extra);
}

void
policy_check_name(struct policy *p, const char *path)
{
	char reason[400], ch[16];
	struct hidden_hit h;
	unsigned classes =
	    hidden_name((const unsigned char *)path, strlen(path), &h);
	json_t *names;

	if (classes == 0)
		return;
	if (h.cls == HIDDEN_INVALID)
		snprintf(ch, sizeof(ch), "0x%02X", (unsigned)h.cp);
	else
		snprintf(ch, sizeof(ch), "U+%04X", (unsigned)h.cp);
	names = json_array();
	for (unsigned c = 0; c < HIDDEN_CLASSES; c++)
		if (classes & (1u << c))
			json_array_append_new(names,
			    json_string(hidden_class_name(c)));
	snprintf(reason, sizeof(reason),
	    "the path's name holds %s (%s at byte %zu): the change shows "
	    "under another name than the one it applies to",
	    hidden_what(h.cls), ch, h.col);
	flag_with(p, path, "hidden_text", reason, VERDICT_NEEDS_REVIEW,
	    json_pack("{s:s, s:o, s:s}", "in", "name", "classes", names, "char",
		ch));
}

void
policy_check_binary_text(struct policy *p, const char *path,
    const unsigned char *data, size_t len)
{
	if (!patch_is_binary(data, len))
		return; /* text to git: its patch's lines are scanned */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = data[i];
		if ((c < 0x20 && c != 0 && c != '\t' && c != '\n' &&
			c != '\r' && c != '\f') ||
		    c == 0x7f)
			return; /* a real binary */
	}
	flag_with(p, path, "hidden_text",
	    "a text file that a NUL byte makes binary: git and the patch show "
	    "it as 'Binary files differ' while it may run as source",
	    VERDICT_NEEDS_REVIEW, json_pack("{s:s}", "in", "binary"));
}

const char *
policy_protected_by(const struct policy *p, const char *path)
{
	char folded[PATH_MAX];
	size_t i;
	json_t *g;

	/* Too long to fold is too long to be applied anywhere: judged as
	 * it is, and refused by the walk. */
	if (!fold_path(path, folded, sizeof(folded)))
		snprintf(folded, sizeof(folded), "%s", path);
	json_array_foreach(p->protected, i, g)
	{
		const char *glob = json_string_value(g);

		if (match_any_depth(glob, folded))
			return glob;
	}
	return short_name(folded) ? "an NTFS short name (8.3)" : NULL;
}

/* Whether path is one of the inputs' destinations or lies beneath one. */
static bool
inside_inputs(const struct policy *p, const char *path)
{
	size_t i;
	json_t *root;

	json_array_foreach(p->roots, i, root)
	{
		const char *r = json_string_value(root);
		size_t n = r != NULL ? strlen(r) : 0;

		if (n > 0 && strncmp(path, r, n) == 0 &&
		    (path[n] == '/' || path[n] == '\0'))
			return true;
	}
	return false;
}

void
policy_check_deletion(struct policy *p, const char *path)
{
	if (policy_protected_by(p, path) != NULL)
		policy_flag(p, path, "protected_path",
		    "a deletion where CI, hooks or tools look for instructions "
		    "(protected)",
		    VERDICT_NEEDS_REVIEW);
}

void
policy_check_entry(struct policy *p, const char *path, mode_t mode,
    const char *link_target)
{
	const char *glob = policy_protected_by(p, path);

	if (glob != NULL)
		policy_flag(p, path, "protected_path",
		    "a write where CI, hooks or tools look for instructions "
		    "(protected)",
		    VERDICT_NEEDS_REVIEW);
	if (!inside_inputs(p, path))
		policy_flag(p, path, "outside_inputs",
		    "a write outside every input the job was given: nothing "
		    "the reviewer knows is there, and the path may land "
		    "anywhere once the patch is applied",
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
