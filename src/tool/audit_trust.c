#include "audit_trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/util.h"
#include "keys/nvcc_args.h"

/* Characters /bin/sh acts on, quoted or not (nvcc pastes values into shell
 * commands, some in double quotes, some bare). */
static const char shell_chars[] = "$`\\\"';&|<>()*?[]{}~#!";

static const char *const ccbin_names[] = { "ccbin", "compiler-bindir" };
static const char *const optfile_names[] = { "optf", "options-file" };
static const char *const arch_names[] = { "arch", "code", "gencode", "generate-code",
					  "gpu-architecture", "gpu-code" };

#define COUNT(a) (sizeof(a) / sizeof *(a))
#define MAX_OPTIONS_FILE (1 << 20)

/* The recorded words nvcc would read, where they came from, what they name. */
struct scan {
	const char *cwd;
	struct cjc_buf *why;
	struct cjc_strvec ccbins;     /* every -ccbin value, in nvcc's order */
	struct cjc_strvec ccbin_from; /* where each was found */
	int depth;                    /* options files within options files */
};

static const char *meta_str(json_t *o, const char *name)
{
	const char *v = json_string_value(json_object_get(o, name));
	return v ? v : "";
}

/* Steps back over the last component of a resolved path ("" is /). */
static void step_up(struct cjc_buf *done)
{
	char *slash = done->len ? strrchr(done->data, '/') : NULL;
	if (slash) {
		*slash = '\0';
		done->len = (size_t)(slash - done->data);
	}
}

/*
 * Resolves an absolute path as exec() would, following symbolic links by
 * hand so that every directory and link met, in the targets too, is checked
 * (fs.h cjc_stat_others_can_change()); the file must be a regular one.  0 with *real, the path
 * without links, . or .., or -1 with why.
 */
static int walk(const char *path, char **real, struct cjc_buf *why)
{
	struct cjc_buf done = CJC_BUF_INIT;
	char *todo = cjc_xstrdup(path);
	const char *p = todo, *bad;
	struct stat st;
	int links = 0, rc = -1;
	if (lstat("/", &st) || (bad = cjc_stat_others_can_change(&st))) {
		cjc_buf_adds(why, "/ is not trusted");
		goto out;
	}
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/"), keep = done.len;
		const char *rest = p + n;
		if ((n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2))) {
			if (n == 2)
				step_up(&done);
			p = rest;
			continue;
		}
		cjc_buf_adds(&done, "/");
		cjc_buf_add(&done, p, n);
		if (lstat(done.data, &st)) {
			cjc_buf_addf(why, "%s: %s", done.data, strerror(errno));
			goto out;
		}
		if ((bad = cjc_stat_others_can_change(&st))) {
			cjc_buf_addf(why, "%s is %s", done.data, bad);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t len = readlink(done.data, target, sizeof target - 1);
			if (len <= 0 || ++links > 40) {
				cjc_buf_addf(why, "%s: %s", done.data,
					     len < 0 ? strerror(errno) : "too many or empty symbolic links");
				goto out;
			}
			target[len] = '\0';
			char *next = cjc_xasprintf("%s%s", target, rest);
			free(todo);
			p = todo = next;
			done.len = target[0] == '/' ? 0 : keep;
			done.data[done.len] = '\0';
			continue;
		}
		if (*rest && !S_ISDIR(st.st_mode)) {
			cjc_buf_addf(why, "%s is not a directory", done.data);
			goto out;
		}
		p = rest;
	}
	if (!done.len || lstat(done.data, &st) || !S_ISREG(st.st_mode)) {
		cjc_buf_addf(why, "%s is not a regular file", done.len ? done.data : "/");
		goto out;
	}
	*real = cjc_buf_detach(&done);
	rc = 0;
out:
	cjc_buf_release(&done);
	free(todo);
	return rc;
}

/* Where exec would find name: a bare name on PATH, a relative path from
 * cwd; NULL when it is not there. */
static char *locate(const char *name, const char *cwd)
{
	if (!*name)
		return NULL;
	char *found = strchr(name, '/') ? cjc_xstrdup(name) : cjc_find_program(name);
	if (found && found[0] != '/') {
		char *abs = cjc_path_join(cwd, found);
		free(found);
		found = abs;
	}
	return found;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Whether a file name is a C or C++ compiler's, as nvcc accepts them. */
static bool compiler_name(const char *name)
{
	regex_t re;
	bool ok = false;
	if (!regcomp(&re, "^([A-Za-z0-9_.]+-)*(gcc|g\\+\\+|cc|c\\+\\+|clang|clang\\+\\+|nvc|nvc\\+\\+|icx|icpx)"
		     "(-[0-9]+(\\.[0-9]+)*)?$", REG_EXTENDED | REG_NOSUB)) {
		ok = !regexec(&re, name, 0, NULL, 0);
		regfree(&re);
	}
	return ok;
}

/* Whether word spells one of names (one or two dashes); *value is what
 * follows '=', or, with attach, what follows the name; NULL: the next word. */
static bool spells(const char *word, const char *const *names, size_t n, bool attach,
		   const char **value)
{
	if (word[0] != '-')
		return false;
	const char *w = word + (word[1] == '-' ? 2 : 1);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		if (strncmp(w, names[i], len))
			continue;
		if (w[len] && w[len] != '=' && !attach)
			continue;
		*value = !w[len] ? NULL : w + len + (w[len] == '=');
		return true;
	}
	return false;
}

/* The first character of word that nvcc's shell would act on, or 0. */
static int shell_char(const char *word, bool arch_value)
{
	for (const unsigned char *s = (const unsigned char *)word; *s; s++) {
		if (*s < 0x20 || *s == 0x7f)
			return *s;
		if (strchr(shell_chars, *s) && !(arch_value && (*s == '[' || *s == ']')))
			return *s;
	}
	return 0;
}

static int check_word(struct scan *s, const char *word, bool arch_value, const char *from)
{
	int c = shell_char(word, arch_value);
	const char *names = NULL, *opt = c ? NULL : cjc_host_program_option(word, &names);
	if (c && (c < 0x20 || c == 0x7f))
		cjc_buf_addf(s->why, "the argument '%s' (%s) holds the control character 0x%02x, "
			     "which nvcc's shell would act on", word, from, c);
	else if (c)
		cjc_buf_addf(s->why, "the argument '%s' (%s) holds '%c', which nvcc's shell would act on",
			     word, from, c);
	else if (opt)
		cjc_buf_addf(s->why, "the argument '%s' (%s) names %s (%s)", word, from, names, opt);
	return c || opt ? -1 : 0;
}

static void split_blanks(const char *text, struct cjc_strvec *words)
{
	const char *blanks = " \t\n\r\v\f";
	for (const char *p = text + strspn(text, blanks); *p; p += strspn(p, blanks)) {
		size_t n = strcspn(p, blanks);
		cjc_strvec_pushn(words, p, n);
		p += n;
	}
}

static int scan_words(struct scan *s, char *const *w, size_t n, const char *from);

/* An options file nvcc would read: trusted like a program, then its words. */
static int scan_options_file(struct scan *s, const char *path, const char *from)
{
	char *abs = path[0] == '/' ? cjc_xstrdup(path) : cjc_path_join(s->cwd, path);
	char *real = NULL, *in = cjc_xasprintf("in the options file %s", path);
	struct cjc_buf bad = CJC_BUF_INIT, text = CJC_BUF_INIT;
	struct cjc_strvec words = CJC_STRVEC_INIT;
	int rc = -1;
	if (s->depth >= 4) {
		cjc_buf_addf(s->why, "options files (%s) are nested too deeply", from);
	} else if (walk(abs, &real, &bad)) {
		cjc_buf_addf(s->why, "the options file %s (%s) is not trusted: %s", path, from, bad.data);
	} else if (cjc_read_bounded(AT_FDCWD, real, O_NOFOLLOW, MAX_OPTIONS_FILE, &text)) {
		cjc_buf_addf(s->why, "the options file %s (%s) cannot be read: %s", path, from,
			     strerror(errno));
	} else {
		split_blanks(text.data ? text.data : "", &words);
		s->depth++;
		rc = scan_words(s, words.v, words.n, in);
		s->depth--;
	}
	cjc_strvec_clear(&words);
	cjc_buf_release(&text);
	cjc_buf_release(&bad);
	free(real);
	free(abs);
	free(in);
	return rc;
}

/* Checks each word; notes each -ccbin; reads each options file. */
static int scan_words(struct scan *s, char *const *w, size_t n, const char *from)
{
	bool arch_value = false; /* the word is the value of -gencode, -arch or -code */
	for (size_t i = 0; i < n; i++) {
		const char *value = NULL;
		bool arch = spells(w[i], arch_names, COUNT(arch_names), false, &value);
		if (check_word(s, w[i], arch_value || (arch && value), from))
			return -1;
		arch_value = arch && !value;
		if (spells(w[i], ccbin_names, COUNT(ccbin_names), true, &value)) {
			if (!value && i + 1 < n)
				value = w[i + 1];
			if (value) {
				cjc_strvec_push(&s->ccbins, value);
				cjc_strvec_push(&s->ccbin_from, from);
			}
		} else if (spells(w[i], optfile_names, COUNT(optfile_names), false, &value)) {
			if (!value && i + 1 < n)
				value = w[i + 1];
			if (value && scan_options_file(s, value, from))
				return -1;
		}
	}
	return 0;
}

static const char *recorded_env(json_t *meta, const char *name)
{
	return json_string_value(json_object_get(json_object_get(meta, "environment"), name));
}

/* The recorded command as nvcc reads it: NVCC_PREPEND_FLAGS, the command
 * less argv[0], NVCC_APPEND_FLAGS; the command is words [*command_at,
 * *command_end). */
static void nvcc_words(json_t *meta, struct cjc_strvec *words, size_t *command_at, size_t *command_end)
{
	const char *prepend = recorded_env(meta, "NVCC_PREPEND_FLAGS");
	const char *append = recorded_env(meta, "NVCC_APPEND_FLAGS");
	json_t *argv = json_object_get(meta, "argv"), *w;
	size_t i;
	split_blanks(prepend ? prepend : "", words);
	*command_at = words->n;
	json_array_foreach(argv, i, w)
		if (i > 0)
			cjc_strvec_push(words, json_string_value(w) ? json_string_value(w) : "");
	*command_end = words->n;
	split_blanks(append ? append : "", words);
}

static bool same(const char *x, const char *y)
{
	return x == y || (x && y && !strcmp(x, y));
}

/* NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS may not make the command one cjc
 * does not cache (--run, -keep...), nor name outputs of their own. */
static int check_flag_variables(struct cjc_strvec *words, size_t at, size_t end, struct cjc_buf *why)
{
	if (at == 0 && end == words->n)
		return 0;
	struct cjc_compile alone, all;
	cjc_compile_parse((int)(end - at), words->v + at, NULL, &alone);
	cjc_compile_parse((int)words->n, words->v, NULL, &all);
	int rc = 0;
	if (all.uncacheable && !alone.uncacheable) {
		cjc_buf_addf(why, "with the recorded NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS the command "
			     "is not one cjc caches: %s", all.uncacheable);
		rc = -1;
	} else if (!alone.uncacheable &&
		   (!same(alone.output, all.output) || !same(alone.dep_file, all.dep_file) ||
		    !same(alone.dep_target, all.dep_target) || alone.dep_requested != all.dep_requested ||
		    alone.dep_phony != all.dep_phony)) {
		cjc_buf_adds(why, "the recorded NVCC_PREPEND_FLAGS or NVCC_APPEND_FLAGS names an output "
			     "or dependency file");
		rc = -1;
	}
	cjc_compile_release(&alone);
	cjc_compile_release(&all);
	return rc;
}

/* Every recorded word nvcc would read. */
static int scan_recorded(struct scan *s, json_t *meta, struct cjc_buf *why)
{
	struct cjc_strvec words = CJC_STRVEC_INIT;
	size_t at, end;
	nvcc_words(meta, &words, &at, &end);
	const char *ccbin = recorded_env(meta, "NVCC_CCBIN");
	int rc = scan_words(s, words.v, at, "in NVCC_PREPEND_FLAGS") ||
		 scan_words(s, words.v + at, end - at, "in the recorded command") ||
		 scan_words(s, words.v + end, words.n - end, "in NVCC_APPEND_FLAGS") ||
		 (ccbin && check_word(s, ccbin, false, "NVCC_CCBIN")) ||
		 check_flag_variables(&words, at, end, why) ? -1 : 0;
	cjc_strvec_clear(&words);
	return rc;
}

/* nvcc: compiler.path, found as the launcher found it, is the recorded
 * compiler.realpath, a trusted file named nvcc. */
static int check_nvcc(json_t *meta, const char *cwd, struct cjc_audit_trust *t, struct cjc_buf *why)
{
	json_t *compiler = json_object_get(meta, "compiler");
	const char *path = meta_str(compiler, "path"), *recorded = meta_str(compiler, "realpath");
	struct cjc_buf bad = CJC_BUF_INIT;
	int rc = -1;
	t->nvcc = locate(path, cwd);
	if (!t->nvcc)
		cjc_buf_addf(why, "the recorded compiler '%s' is not found here", path);
	else if (walk(t->nvcc, &t->nvcc_realpath, &bad))
		cjc_buf_addf(why, "the recorded compiler %s is not a trusted nvcc: %s", path, bad.data);
	else if (strcmp(base_name(t->nvcc_realpath), "nvcc"))
		cjc_buf_addf(why, "the recorded compiler %s is not a trusted nvcc: %s is not named nvcc",
			     path, t->nvcc_realpath);
	else if (strcmp(t->nvcc_realpath, recorded))
		cjc_buf_addf(why, "the recorded compiler %s is %s here, not %s as recorded", path,
			     t->nvcc_realpath, recorded);
	else
		rc = 0;
	cjc_buf_release(&bad);
	return rc;
}

/* One host compiler nvcc might run: value as -ccbin or NVCC_CCBIN gives it. */
static int check_host(const char *value, const char *from, const char *cwd, char **named,
		      char **real, struct cjc_buf *why)
{
	char *name = cjc_is_dir(value) ? cjc_path_join(value, "gcc") : cjc_xstrdup(value);
	struct cjc_buf bad = CJC_BUF_INIT;
	int rc = -1;
	free(*named);
	free(*real);
	*real = NULL;
	*named = locate(name, cwd);
	if (!*named)
		cjc_buf_addf(why, "the host compiler %s (%s) is not found here", name, from);
	else if (walk(*named, real, &bad))
		cjc_buf_addf(why, "the host compiler %s (%s) is not trusted: %s", *named, from, bad.data);
	else if (!compiler_name(base_name(*named)))
		cjc_buf_addf(why, "the host compiler %s (%s) is not named like a C or C++ compiler",
			     *named, from);
	else
		rc = 0;
	cjc_buf_release(&bad);
	free(name);
	return rc;
}

/* The host compiler: every -ccbin passes; nvcc's choice is the recorded one. */
static int check_hosts(struct scan *s, json_t *meta, struct cjc_audit_trust *t, struct cjc_buf *why)
{
	const char *ccbin = recorded_env(meta, "NVCC_CCBIN");
	char *real = NULL;
	int rc = 0;
	for (size_t i = 0; !rc && i < s->ccbins.n; i++)
		rc = check_host(s->ccbins.v[i], s->ccbin_from.v[i], s->cwd, &t->host, &real, why);
	if (!rc && !s->ccbins.n)
		rc = ccbin && *ccbin ? check_host(ccbin, "NVCC_CCBIN", s->cwd, &t->host, &real, why)
				     : check_host("gcc", "the default", s->cwd, &t->host, &real, why);
	const char *path = meta_str(json_object_get(meta, "host_compiler"), "path");
	char *recorded = rc ? NULL : locate(path, s->cwd);
	char resolved[PATH_MAX];
	if (!rc && (!recorded || !realpath(recorded, resolved) || strcmp(resolved, real))) {
		cjc_buf_addf(why, "nvcc would run the host compiler %s here, not %s as recorded",
			     t->host, *path ? path : "(none)");
		rc = -1;
	}
	free(recorded);
	free(real);
	return rc;
}

int cjc_audit_trust_check(json_t *meta, const char *cwd, struct cjc_audit_trust *t,
			  struct cjc_buf *why)
{
	struct scan s = { .cwd = cwd, .why = why };
	memset(t, 0, sizeof *t);
	int rc = cwd[0] != '/' ? -1 : 0;
	if (rc)
		cjc_buf_addf(why, "the recorded working directory '%s' is not absolute", cwd);
	if (!rc)
		rc = scan_recorded(&s, meta, why);
	if (!rc)
		rc = check_nvcc(meta, cwd, t, why);
	if (!rc)
		rc = check_hosts(&s, meta, t, why);
	cjc_strvec_clear(&s.ccbins);
	cjc_strvec_clear(&s.ccbin_from);
	if (rc)
		cjc_audit_trust_release(t);
	return rc;
}

void cjc_audit_trust_release(struct cjc_audit_trust *t)
{
	free(t->nvcc);
	free(t->nvcc_realpath);
	free(t->host);
	memset(t, 0, sizeof *t);
}

/* A file NVRTC is loaded from (exact: with no link on its way), or loads: trusted (walk). */
static int trusted_library(const char *path, bool exact, struct cjc_buf *why)
{
	char *real = NULL;
	struct cjc_buf bad = CJC_BUF_INIT;
	int rc = -1;
	if (path[0] != '/')
		cjc_buf_addf(why, "the recorded NVRTC '%s' is not an absolute path", path);
	else if (walk(path, &real, &bad))
		cjc_buf_addf(why, "the recorded NVRTC %s is not trusted: %s", path, bad.data);
	else if (exact && strcmp(real, path))
		cjc_buf_addf(why, "the recorded NVRTC %s is %s here", path, real);
	else
		rc = 0;
	cjc_buf_release(&bad);
	free(real);
	return rc;
}

static bool nvrtc_name(const char *name)
{
	regex_t re;
	bool ok = false;
	if (!regcomp(&re, "^libnvrtc(\\.[a-z]+)?\\.so(\\.[0-9]+)*$", REG_EXTENDED | REG_NOSUB)) {
		ok = !regexec(&re, name, 0, NULL, 0);
		regfree(&re);
	}
	return ok;
}

/* The options of a JIT library's NVRTC entry: none that makes NVRTC read a
 * file.  The NVRTC shim's entries record what NVRTC read (their inputs). */
static int check_nvrtc_options(json_t *meta, struct cjc_buf *why)
{
	static const char *const reads[] = { "-I", "--include-path", "-include", "--pre-include" };
	static const char not_held[] = "makes NVRTC read files the entry does not hold: it "
				       "cannot be rebuilt from the entry alone";
	json_t *argv = json_object_get(meta, "argv"), *w;
	size_t i;
	if (json_is_true(json_object_get(json_object_get(meta, "jit"), "shim")))
		return 0;
	json_array_foreach(argv, i, w) {
		const char *word = json_string_value(w) ? json_string_value(w) : "";
		for (size_t k = 0; i > 0 && k < COUNT(reads); k++)
			if (cjc_starts_with(word, reads[k])) {
				cjc_buf_addf(why, "the argument '%s' %s", word, not_held);
				return -1;
			}
	}
	return 0;
}

int cjc_audit_trust_nvrtc(json_t *meta, char **library, struct cjc_buf *why)
{
	json_t *compiler = json_object_get(meta, "compiler");
	const char *path = meta_str(compiler, "realpath"), *version = meta_str(compiler, "version");
	int major, minor;
	*library = NULL;
	if (check_nvrtc_options(meta, why) || trusted_library(path, true, why))
		return -1;
	if (!nvrtc_name(base_name(path))) {
		cjc_buf_addf(why, "the recorded NVRTC %s is not named libnvrtc.so", path);
		return -1;
	}
	if (sscanf(version, "NVRTC %d.%d", &major, &minor) != 2) {
		cjc_buf_addf(why, "the recorded NVRTC version '%s' is not NVRTC M.N", version);
		return -1;
	}
	char *dir = cjc_dirname(path);
	char *builtins = cjc_xasprintf("%s/libnvrtc-builtins.so.%d.%d", dir, major, minor);
	struct stat st;
	int rc = lstat(builtins, &st) ? 0 : trusted_library(builtins, false, why);
	free(dir);
	free(builtins);
	if (!rc)
		*library = cjc_xstrdup(path);
	return rc;
}
