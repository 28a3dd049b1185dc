/*
 * The JIT's settings, DeepJIT's way: for each row, PREFIX_JIT_<NAME> (the
 * prefix given to cjc_jit_open), then the global variable (CJC_JIT_<NAME>,
 * or the row's own name for it), then the cjc setting the row falls back to,
 * then the default.  An empty variable counts as unset; a set one, "0"
 * included, wins over every weaker source.  Unprefixed JIT_* variables are
 * never read.  A malformed value fails cjc_jit_open with a message naming
 * the variable; a PREFIX_JIT_* or CJC_JIT_* variable that no row reads (a
 * misspelling) is named too, and ignored (jit_settings_unknown), and so is
 * a value with a control character (C0 or DEL), which cjc refuses in any
 * setting (config.c): the next source decides, as if it were unset, since
 * the JIT never fails a program over it.  DUMP_ASM
 * is DeepJIT's "both": it sets DUMP_PTX and DUMP_SASS.  docs/jit.md has the
 * table for users.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "jit_internal.h"

enum kind { BOOL, PATH, COMPILER, STD };

/* Where a row falls back to in the cjc settings (config.h). */
enum from_cjc { NONE, CJC_DIR, CJC_PRINT_COMMANDS, CJC_KEEP_PTX, CJC_KEEP_SASS, CJC_CHECK_SPILLS };

struct row {
	const char *name;
	const char *global; /* NULL: CJC_JIT_<name> */
	enum kind kind;
	enum from_cjc from;
	const char *fallback; /* the default when nothing sets it */
};

static const struct row rows[JIT_SETTING_COUNT] = {
	[JIT_CACHE_DIR] = { "CACHE_DIR", NULL, PATH, CJC_DIR, "" },
	[JIT_NVCC_COMPILER] = { "NVCC_COMPILER", "CJC_JIT_NVCC", PATH, NONE, "" },
	[JIT_NVRTC_LIBRARY] = { "NVRTC_LIBRARY", NULL, PATH, NONE, "" },
	[JIT_COMPILER] = { "COMPILER", NULL, COMPILER, NONE, "nvcc" },
	[JIT_PRINT_COMPILER_COMMAND] = { "PRINT_COMPILER_COMMAND", NULL, BOOL, CJC_PRINT_COMMANDS, "0" },
	[JIT_PTXAS_VERBOSE] = { "PTXAS_VERBOSE", NULL, BOOL, NONE, "0" },
	[JIT_PRINT_LOAD_TIME] = { "PRINT_LOAD_TIME", NULL, BOOL, NONE, "0" },
	[JIT_DUMP_PTX] = { "DUMP_PTX", NULL, BOOL, CJC_KEEP_PTX, "0" },
	[JIT_DUMP_SASS] = { "DUMP_SASS", NULL, BOOL, CJC_KEEP_SASS, "0" },
	[JIT_CHECK_NO_SPILLS] = { "CHECK_NO_SPILLS", NULL, BOOL, CJC_CHECK_SPILLS, "0" },
	[JIT_WITH_LINEINFO] = { "WITH_LINEINFO", NULL, BOOL, NONE, "0" },
	[JIT_CPP_STANDARD] = { "CPP_STANDARD", NULL, STD, NONE, "" },
	[JIT_DEBUG] = { "DEBUG", NULL, BOOL, NONE, "0" },
	[JIT_DUMP_ASM] = { "DUMP_ASM", NULL, BOOL, NONE, "0" },
	/* cjc's check_spills fails on both (diagnostics.h) */
	[JIT_CHECK_NO_LOCAL_MEMORY] = { "CHECK_NO_LOCAL_MEMORY", NULL, BOOL, CJC_CHECK_SPILLS, "0" },
};

/* CJC_JIT_* variables that are not settings but are ours: the Python
 * package's (python/cudajitcache/_lib.py). */
static const char *const other_globals[] = { "CJC_JIT_LIBRARY" };

int jit_setting_find(const char *name)
{
	for (int i = 0; i < JIT_SETTING_COUNT; i++)
		if (!strcmp(rows[i].name, name))
			return i;
	return -1;
}

static int parse_bool(const char *text, bool *out)
{
	static const char *const words[][2] = {
		{ "1", "0" }, { "true", "false" }, { "yes", "no" }, { "on", "off" },
	};
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		for (int v = 0; v < 2; v++)
			if (!strcasecmp(text, words[i][v])) {
				*out = v == 0;
				return 0;
			}
	return -1;
}

/* "17", "c++17", "gnu++20" -> "c++17" / "gnu++20" (nvcc's -std). */
static char *parse_std(const char *text)
{
	const char *digits = text;
	if (cjc_starts_with(text, "c++"))
		digits = text + 3;
	else if (cjc_starts_with(text, "gnu++"))
		digits = text + 5;
	if (strlen(digits) != 2 || strspn(digits, "0123456789") != 2)
		return NULL;
	return digits == text ? cjc_xasprintf("c++%s", text) : cjc_xstrdup(text);
}

static const char *cjc_fallback(const struct row *r, const struct cjc_config *cfg)
{
	switch (r->from) {
	case CJC_DIR: return cfg->dir;
	case CJC_PRINT_COMMANDS: return cfg->print_commands ? "1" : "0";
	case CJC_KEEP_PTX: return cfg->keep_ptx ? "1" : "0";
	case CJC_KEEP_SASS: return cfg->keep_sass ? "1" : "0";
	case CJC_CHECK_SPILLS: return cfg->check_spills ? "1" : "0";
	case NONE: break;
	}
	return NULL;
}

/* The compiler when no variable names it: CUDA_HOME's, PATH's, the usual place. */
static char *default_nvcc(void)
{
	const char *home = getenv("CUDA_HOME");
	if (home && *home) {
		char *p = cjc_xasprintf("%s/bin/nvcc", home);
		if (!access(p, X_OK))
			return p;
		free(p);
	}
	char *p = cjc_find_program("nvcc");
	return p ? p : cjc_xstrdup("/usr/local/cuda/bin/nvcc");
}

/* Checks and stores one value; -1 with the message in err. */
static int take(struct jit_settings *s, int i, const char *text, const char *origin,
		struct cjc_buf *err)
{
	const struct row *r = &rows[i];
	char *value = NULL;
	bool flag = false;
	switch (r->kind) {
	case BOOL:
		if (parse_bool(text, &flag))
			break;
		value = cjc_xstrdup(flag ? "1" : "0");
		break;
	case PATH:
		value = cjc_xstrdup(text);
		break;
	case COMPILER:
		if (!strcmp(text, "nvcc") || !strcmp(text, "nvrtc"))
			value = cjc_xstrdup(text);
		break;
	case STD:
		value = *text ? parse_std(text) : cjc_xstrdup("");
		break;
	}
	if (!value) {
		static const char *const expected[] = {
			[BOOL] = "1 or 0 (true/false, yes/no, on/off)",
			[PATH] = "a path",
			[COMPILER] = "nvcc or nvrtc",
			[STD] = "a C++ standard such as 17 or c++20",
		};
		cjc_buf_addf(err, "%s%s=%s: expected %s", err->len ? "; " : "", origin, text,
			     expected[r->kind]);
		return -1;
	}
	free(s->text[i]);
	s->text[i] = value;
	s->flag[i] = flag;
	return 0;
}

/* Whether a value holds a C0 control or DEL (escaped wherever it is shown). */
static bool holds_control(const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return true;
	return false;
}

static int load_row(struct jit_settings *s, int i, const char *prefix,
		    const struct cjc_config *cfg, struct cjc_buf *err)
{
	const struct row *r = &rows[i];
	char *names[2] = {
		prefix && *prefix ? cjc_xasprintf("%s_JIT_%s", prefix, r->name) : NULL,
		r->global ? cjc_xstrdup(r->global) : cjc_xasprintf("CJC_JIT_%s", r->name),
	};
	int rc = 1;
	for (int k = 0; k < 2 && rc == 1; k++) {
		const char *v = names[k] ? getenv(names[k]) : NULL;
		if (v && *v && !holds_control(v)) { /* else named by jit_settings_unknown */
			rc = take(s, i, v, names[k], err);
			s->origin[i] = rc ? NULL : k ? r->global ? r->global : "CJC_JIT_*" : "PREFIX_JIT_*";
		}
	}
	if (rc == 1) {
		const char *v = cjc_fallback(r, cfg);
		rc = take(s, i, v ? v : r->fallback, "default", err);
		s->origin[i] = v ? "cjc" : "default";
	}
	free(names[0]);
	free(names[1]);
	return rc;
}

/* DUMP_ASM sets DUMP_PTX and DUMP_SASS, as if they were set where it was. */
static void dump_asm(struct jit_settings *s)
{
	static const int both[] = { JIT_DUMP_PTX, JIT_DUMP_SASS };
	for (size_t k = 0; s->flag[JIT_DUMP_ASM] && k < sizeof both / sizeof *both; k++) {
		int i = both[k];
		if (s->flag[i])
			continue;
		cjc_replace_string(&s->text[i], "1");
		s->flag[i] = true;
		s->origin[i] = s->origin[JIT_DUMP_ASM];
	}
}

int jit_settings_load(struct jit_settings *s, const char *prefix, const struct cjc_config *cfg,
		      struct cjc_buf *err)
{
	memset(s, 0, sizeof *s);
	int rc = 0;
	for (int i = 0; i < JIT_SETTING_COUNT; i++)
		if (load_row(s, i, prefix, cfg, err))
			rc = -1;
	if (rc)
		return -1;
	if (!*s->text[JIT_NVCC_COMPILER]) {
		free(s->text[JIT_NVCC_COMPILER]);
		s->text[JIT_NVCC_COMPILER] = default_nvcc();
	}
	s->compiler = !strcmp(s->text[JIT_COMPILER], "nvrtc") ? JIT_NVRTC : JIT_NVCC;
	dump_asm(s);
	return 0;
}

/* Every name a setting is read from: PREFIX_JIT_<name> and the global one. */
static void known_names(const char *prefix, struct cjc_strvec *known)
{
	for (int i = 0; i < JIT_SETTING_COUNT; i++) {
		char *global = rows[i].global ? cjc_xstrdup(rows[i].global)
					      : cjc_xasprintf("CJC_JIT_%s", rows[i].name);
		cjc_strvec_push(known, global);
		free(global);
		if (prefix && *prefix) {
			char *own = cjc_xasprintf("%s_JIT_%s", prefix, rows[i].name);
			cjc_strvec_push(known, own);
			free(own);
		}
	}
	cjc_strvec_pushv(known, (char *const *)other_globals,
			 sizeof other_globals / sizeof *other_globals);
}

/* A setting's value that holds a control character, said with the
 * characters escaped. */
static void refused_value(const char *name, const char *value, struct cjc_strvec *lines)
{
	char *shown = cjc_printable(value);
	char *line = cjc_xasprintf("%s='%s' is ignored: a setting's value holds no control "
				   "characters (shown as \\xNN)",
				   name, shown);
	cjc_strvec_push(lines, line);
	free(line);
	free(shown);
}

void jit_settings_unknown(const char *prefix, struct cjc_strvec *lines)
{
	extern char **environ;
	char *own = prefix && *prefix ? cjc_xasprintf("%s_JIT_", prefix) : NULL;
	struct cjc_strvec known = CJC_STRVEC_INIT;
	for (char **e = environ; e && *e; e++) {
		if (!cjc_starts_with(*e, "CJC_JIT_") && !(own && cjc_starts_with(*e, own)))
			continue; /* most of them: nothing made for them */
		if (!known.n)
			known_names(prefix, &known);
		char *name = cjc_xstrndup(*e, strcspn(*e, "="));
		bool setting = cjc_strvec_contains(&known, name);
		if (setting && holds_control(*e + strlen(name) + 1))
			refused_value(name, *e + strlen(name) + 1, lines);
		else if (!setting) {
			const char *near = cjc_did_you_mean(name, (const char *const *)known.v, known.n);
			char *line = cjc_xasprintf("%s is not a setting of the JIT library, and is "
						   "ignored%s%s%s", name, near ? " (did you mean " : "",
						   near ? near : "", near ? "?)" : "");
			cjc_strvec_push(lines, line);
			free(line);
		}
		free(name);
	}
	cjc_strvec_clear(&known);
	free(own);
}

void jit_settings_release(struct jit_settings *s)
{
	for (int i = 0; i < JIT_SETTING_COUNT; i++)
		free(s->text[i]);
	memset(s, 0, sizeof *s);
}

const char *cjc_jit_setting(const cjc_jit *jit, const char *name)
{
	int i = jit_setting_find(name);
	return i < 0 ? NULL : jit->set.text[i];
}
