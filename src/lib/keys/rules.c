#include "keys/rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/compress.h"
#include "base/util.h"
#include "keys/key.h"

bool cjc_rules_epoch(void)
{
	return getenv("SOURCE_DATE_EPOCH") != NULL;
}

/* The length of the splice at p (a backslash or ??/, blanks, a newline), or 0. */
static size_t splice_at(const char *p, const char *end)
{
	const char *q = p;
	if (*q == '\\')
		q++;
	else if (end - q >= 3 && !memcmp(q, "?\?/", 3))
		q += 3;
	else
		return 0;
	while (q < end && (*q == ' ' || *q == '\t' || *q == '\f' || *q == '\v' || *q == '\r'))
		q++;
	return q < end && *q == '\n' ? (size_t)(q + 1 - p) : 0;
}

/* Whether text holds the trigraph ??/ (a backslash): a '?' is rarer than
 * memmem's setup is cheap. */
static bool has_trigraph_slash(const char *text, size_t len)
{
	const char *end = text + len;
	for (const char *p = text; (p = memchr(p, '?', (size_t)(end - p))); p++)
		if (end - p >= 3 && p[1] == '?' && p[2] == '/')
			return true;
	return false;
}

/* text with its line splices removed, in *joined when there are any;
 * returns the text to search and sets *n to its length. */
static const char *join_splices(const char *text, size_t len, struct cjc_buf *joined, size_t *n)
{
	*n = len;
	if (!memchr(text, '\\', len) && !has_trigraph_slash(text, len))
		return text;
	const char *p = text, *end = text + len;
	while (p < end) {
		size_t s = splice_at(p, end);
		if (s)
			p += s;
		else
			cjc_buf_add(joined, p++, 1);
	}
	*n = joined->len;
	return joined->data ? joined->data : "";
}

void cjc_rules_join_splices(const char *text, size_t len, struct cjc_buf *out)
{
	size_t n;
	const char *t = join_splices(text, len, out, &n);
	if (t != out->data)
		cjc_buf_add(out, t, n);
}

/* The time macros: with SOURCE_DATE_EPOCH, the first alone reads the clock. */
static const char *const macros[] = { "__TIMESTAMP__", "__DATE__", "__TIME__" };

static size_t clock_macros(bool epoch)
{
	return epoch ? 1 : sizeof macros / sizeof *macros;
}

/* The first time macro of t (one pass over its "__"s). */
static const char *clock_macro(const char *t, size_t n, bool epoch)
{
	const char *end = t + n;
	for (const char *p = t; (p = memchr(p, '_', (size_t)(end - p))); p++) {
		if (end - p < 3 || p[1] != '_' || (p[2] != 'T' && p[2] != 'D'))
			continue;
		for (size_t i = 0; i < clock_macros(epoch); i++) {
			size_t m = strlen(macros[i]);
			if ((size_t)(end - p) >= m && !memcmp(p, macros[i], m))
				return macros[i];
		}
	}
	return NULL;
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

const char *cjc_rules_time_macro(const char *text, size_t len, bool epoch)
{
	/* Every macro has a '_', and joining splices only takes bytes out. */
	if (!text || !memchr(text, '_', len))
		return NULL;
	struct cjc_buf joined = CJC_BUF_INIT;
	size_t n;
	const char *t = join_splices(text, len, &joined, &n);
	const char *found = clock_macro(t, n, epoch);
	cjc_buf_release(&joined);
	return found;
}

/* ---- what the preprocessor wrote ---- */

static bool digits_at(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

static bool month_at(const char *p)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	for (size_t i = 0; i < 12; i++)
		if (!memcmp(p, months + 3 * i, 3))
			return true;
	return false;
}

/* " dd " or "dd " (a day, as gcc pads it) at p, before a year or a time. */
static bool day_at(const char *p)
{
	return (p[0] == ' ' || digits_at(p, 1)) && digits_at(p + 1, 1) && p[2] == ' ';
}

/* __TIME__'s "hh:mm:ss", its first ':' at p. */
static bool time_at(const char *t, const char *p, const char *end)
{
	return p - t >= 2 && end - p >= 6 && digits_at(p - 2, 2) && digits_at(p + 1, 2) &&
	       p[3] == ':' && digits_at(p + 4, 2);
}

/* __TIMESTAMP__'s "Mmm dd " before the time at h (its first digit). */
static bool stamp_before(const char *t, const char *h)
{
	return h - t >= 7 && day_at(h - 3) && h[-4] == ' ' && month_at(h - 7);
}

/* __DATE__'s "Mmm dd yyyy" at p, its first ' ' at p + 3. */
static bool date_at(const char *t, const char *p, const char *end)
{
	return p - t >= 3 && end - p >= 8 && day_at(p + 1) && digits_at(p + 4, 4) &&
	       month_at(p - 3);
}

const char *cjc_rules_clock_expanded(const char *t, size_t n, bool epoch)
{
	const char *end = t + n;
	for (const char *p = t; (p = memchr(p, ':', (size_t)(end - p))); p++)
		if (time_at(t, p, end) && (!epoch || stamp_before(t, p - 2)))
			return stamp_before(t, p - 2) ? "__TIMESTAMP__" : "__TIME__";
	/* a loop, not memchr: blanks are too many for a call each */
	for (const char *p = t + 3; !epoch && end - p >= 8; p++)
		if (p[3] == ' ' && p[0] == ' ' && date_at(t, p, end))
			return "__DATE__";
	return NULL;
}

const char *cjc_rules_time_macro_words(char *const *words, size_t n, bool epoch)
{
	const char *found = NULL;
	for (size_t i = 0; !found && i < n; i++)
		if (words[i])
			found = cjc_rules_time_macro(words[i], strlen(words[i]), epoch);
	return found;
}

const char *cjc_rules_time_macro_env(const struct cjc_env *e, bool epoch, const char **name)
{
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *v = e->value[i];
		const char *found = v && cjc_env_vars[i].rule == CJC_ENV_KEYED
			? cjc_rules_time_macro(v, strlen(v), epoch) : NULL;
		if (found) {
			*name = cjc_env_vars[i].name;
			return found;
		}
	}
	return NULL;
}

bool cjc_rules_may_include(const char *text, size_t len)
{
	if (!text)
		return false;
	struct cjc_buf joined = CJC_BUF_INIT;
	size_t n;
	const char *t = join_splices(text, len, &joined, &n);
	bool found = memmem(t, n, "include", 7) != NULL;
	cjc_buf_release(&joined);
	return found;
}

/* Whether a part of word (split at commas, blanks and '=') starts with a prefix. */
static bool part_starts(const char *word, const char *const *prefixes, size_t n)
{
	char *copy = cjc_xstrdup(word ? word : ""), *save = NULL;
	bool found = false;
	for (char *t = strtok_r(copy, ", \t\n=", &save); t && !found; t = strtok_r(NULL, ", \t\n=", &save))
		for (size_t i = 0; i < n && !found; i++)
			found = cjc_starts_with(t, prefixes[i]);
	free(copy);
	return found;
}

bool cjc_rules_stage_options_file(const char *word)
{
	static const char *const files[] = { "-optf", "--optf", "-options-file", "--options-file" };
	if (!word || (!strstr(word, "optf") && !strstr(word, "options-file")))
		return false; /* the common case, without a copy */
	return part_starts(word, files, sizeof files / sizeof *files);
}

const char *cjc_rules_nvrtc_option(const char *word)
{
	static const char *const writers[] = {
		"-pch",  "--pch",  "--create-pch",         "--use-pch",           "--pch-dir",
		"-time", "--time", "--fdevice-time-trace", "-fdevice-time-trace",
	};
	for (size_t k = 0; k < sizeof writers / sizeof *writers; k++)
		if (cjc_starts_with(word, writers[k]))
			return "an option reads or writes files of its own (precompiled headers, "
			       "timings)";
	if (!strcmp(word, "native") || cjc_ends_with(word, "=native"))
		return "an option names the GPU of this machine (native)";
	if (cjc_rules_stage_options_file(word))
		return "an option names a stage's options file, whose contents are not keyed";
	if (cjc_rules_time_macro(word, strlen(word), false))
		return "an option names __DATE__, __TIME__ or __TIMESTAMP__ (NVRTC ignores "
		       "SOURCE_DATE_EPOCH)";
	return NULL;
}

bool cjc_rules_host_include(const char *word)
{
	/* gcc's long spellings: --include-directory[-after]=, --include=,
	 * --include-prefix=, --include-with-prefix*=, --include-barrier,
	 * --imacros=, --prefix= (-B, whose DIR/include is searched), --sysroot=;
	 * gcc 12 takes no abbreviation of them (measured) */
	static const char *const includes[] = {
		"-I",        "-iquote",   "-isystem", "-idirafter", "-iprefix",    "-iwithprefix",
		"-isysroot", "-include",  "-imacros", "-imultilib", "-imultiarch", "-B",
		"--include", "--imacros", "--prefix", "--sysroot",  "--embed-dir"
	};
	return part_starts(word, includes, sizeof includes / sizeof *includes);
}

/* ---- files the dependency list does not name ---- */

static bool ident_char(char c);

/* Whether word starts, in any case, with the lowercase prefix. */
static bool starts_nocase(const char *word, const char *prefix)
{
	return !strncasecmp(word, prefix, strlen(prefix));
}

/* Whether text names, in any case, an assembler directive that reads a
 * file (.incbin, .include); "incbin" needs no dot, as "." "incbin" are
 * joined by the compiler. */
static bool names_asm_file(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = (char)(t[i] | 0x20);
		if ((c == 'i' && n - i >= 6 && starts_nocase(t + i, "incbin")) ||
		    (t[i] == '.' && n - i >= 8 && starts_nocase(t + i + 1, "include") &&
		     (n - i == 8 || !ident_char(t[i + 8]))))
			return true;
	}
	return false;
}

/* p past blanks, newlines and comments. */
static const char *skip_blanks(const char *p, const char *end)
{
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ||
				   *p == '\f' || *p == '\v'))
			p++;
		if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			const char *e = memmem(p + 2, (size_t)(end - p - 2), "*/", 2);
			p = e ? e + 2 : end;
		} else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
			const char *e = memchr(p, '\n', (size_t)(end - p));
			p = e ? e : end;
		} else {
			return p;
		}
	}
}

/* Whether text holds the tokens GCC dependency in sequence (blanks and
 * comments between): #pragma GCC dependency, _Pragma("GCC dependency ..."),
 * or a macro's argument that one stringizes into _Pragma. */
static bool names_gcc_dependency(const char *t, size_t n)
{
	const char *end = t + n;
	for (const char *p = t; (p = memmem(p, (size_t)(end - p), "GCC", 3)); p += 3) {
		if (p > t && ident_char(p[-1]))
			continue;
		const char *q = skip_blanks(p + 3, end);
		if (q != p + 3 && end - q >= 10 && !memcmp(q, "dependency", 10) &&
		    (end - q == 10 || !ident_char(q[10])))
			return true;
	}
	return false;
}

const char *cjc_rules_unlisted_file(const char *text, size_t len)
{
	if (!text)
		return NULL;
	struct cjc_buf joined = CJC_BUF_INIT;
	size_t n;
	const char *t = join_splices(text, len, &joined, &n);
	const char *why = names_asm_file(t, n)         ? CJC_RULES_ASM_FILE
			  : names_gcc_dependency(t, n) ? CJC_RULES_GCC_DEPENDENCY
						       : NULL;
	cjc_buf_release(&joined);
	return why;
}

char *cjc_rules_unlisted_file_why(const char *text, size_t len, const char *path)
{
	const char *why = cjc_rules_unlisted_file(text, len);
	return why ? cjc_xasprintf("%s in %s", why, path) : NULL;
}

/* Whether a part of word, split at seps, passes test. */
static bool any_part(const char *word, const char *seps, bool (*test)(const char *part))
{
	char *copy = cjc_xstrdup(word ? word : ""), *save = NULL;
	bool found = false;
	for (char *t = strtok_r(copy, seps, &save); t && !found; t = strtok_r(NULL, seps, &save))
		found = test(t);
	free(copy);
	return found;
}

/* Whether a part of a host-compiler option reads or writes a file gcc
 * names after the output or by a name the key does not follow; "--x" is
 * gcc's spelling of "-fx". */
static bool host_file_part(const char *t)
{
	static const char *const files[] = { "-fprofile",
					     "-fauto-profile",
					     "-fbranch-probabilities",
					     "-ftest-coverage",
					     "--coverage",
					     "-coverage",
					     "-fcs-profile",
					     "-fdump-",
					     "-fcallgraph-info",
					     "-fstack-usage",
					     "-fopt-info",
					     "-save-temps",
					     "--save-temps",
					     "-gsplit-dwarf",
					     "-aux-info",
					     "-MD",
					     "-MMD",
					     "-MF",
					     "--MD",
					     "sarif-file",
					     "json-file" };
	char *f = t[0] == '-' && t[1] == '-' ? cjc_xasprintf("-f%s", t + 2) : NULL;
	bool found = false;
	for (size_t i = 0; i < sizeof files / sizeof *files && !found; i++)
		found = cjc_starts_with(t, files[i]) || (f && cjc_starts_with(f, files[i]));
	free(f);
	return found;
}

/* Whether a part of a cudafe++ option may read a file: every option but
 * the diagnostics' (an allowlist: cudafe++ documents none of its options,
 * and EDG's take files under many names: --preinclude, --include_directory,
 * --sys_include, --use_pch, --options_file...); a value alone (no '-')
 * must be a plain word, no name of a file. */
static bool cudafe_file_part(const char *t)
{
	static const char *const inert[] = { "--diag_suppress",
					     "--diag_warning",
					     "--diag_error",
					     "--diag_remark",
					     "--diag_once",
					     "--display_error_number",
					     "--no_display_error_number",
					     "--diag-suppress",
					     "--diag-warning",
					     "--diag-error",
					     "--diag-remark" };
	bool known = t[0] != '-' && !strpbrk(t, "./\\=");
	for (size_t i = 0; i < sizeof inert / sizeof *inert && !known; i++)
		known = cjc_starts_with(t, inert[i]) &&
			(!t[strlen(inert[i])] || t[strlen(inert[i])] == '=') && !strpbrk(t, "./\\");
	return !known;
}

const char *cjc_rules_stage_option(const char *option, const char *value)
{
	if (!option || !strcmp(option, "Xcompiler") || !strcmp(option, "compiler-options"))
		return any_part(value, ", \t\n=", host_file_part) ? CJC_RULES_HOST_FILES : NULL;
	if (!strcmp(option, "Xcudafe") || !strcmp(option, "cudafe-options"))
		return any_part(value, ", \t\n", cudafe_file_part) ? CJC_RULES_CUDAFE_FILES : NULL;
	return NULL;
}

/* The cudafe++ options among flags' words (-Xcudafe V, -Xcudafe=V,
 * --cudafe-options V, --cudafe-options=V), each as its option word would. */
static bool flags_cudafe_files(const char *flags)
{
	char *copy = cjc_xstrdup(flags), *save = NULL;
	bool files = false, value = false;
	for (char *w = strtok_r(copy, " \t\n", &save); w && !files;
	     w = strtok_r(NULL, " \t\n", &save)) {
		const char *name = w + (w[0] == '-' && w[1] == '-' ? 2 : w[0] == '-');
		bool option = cjc_starts_with(name, "Xcudafe") ||
			      cjc_starts_with(name, "cudafe-options");
		const char *eq = option ? strchr(w, '=') : NULL;
		if (value || eq)
			files = cjc_rules_stage_option("Xcudafe", value ? w : eq + 1) != NULL;
		value = option && !eq;
	}
	free(copy);
	return files || value;
}

const char *cjc_rules_flag_variable(const char *flags)
{
	if (!flags)
		return NULL;
	if (cjc_rules_stage_option(NULL, flags))
		return CJC_RULES_HOST_FILES;
	return flags_cudafe_files(flags) ? CJC_RULES_CUDAFE_FILES : NULL;
}

/* ---- paths ---- */

enum { AT_SITE = 1, ANYWHERE = 2 }; /* what a macro expands to: the two kinds above */

struct macro {
	const char *name, *body;
	size_t nlen, blen;
	int kind;
	size_t group;
};

struct group {
	const char *name;
	size_t nlen;
	int kind;
};

struct name_scan {
	struct macro *macros;
	size_t nmacros, cap;
	struct group *groups;
	size_t ngroups;
	size_t *slots; /* group index + 1, 0 empty */
	size_t nslots;
};

/* Whether text holds tok as a whole identifier. */
static bool has_token(const char *text, size_t len, const char *tok, size_t toklen)
{
	const char *end = text + len, *p = text;
	while (p < end && (p = memmem(p, (size_t)(end - p), tok, toklen))) {
		if ((p == text || !ident_char(p[-1])) && (p + toklen == end || !ident_char(p[toklen])))
			return true;
		p++;
	}
	return false;
}

static const char *const at_site[] = { "__FILE__", "__FILE_NAME__", "assert" };
static const char *const anywhere[] = { "__BASE_FILE__", "__builtin_FILE", "__builtin_FILE_NAME" };

/* The macros' names in an open-addressed table (a power of two of slots,
 * at most half full): one lookup per identifier of a text, where a search
 * per macro made a miss quadratic in the macros its headers define. */
static size_t name_hash(const char *p, size_t n)
{
	size_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

/* The slot of the name p (n bytes): its group's, or the empty one where it
 * would go. */
static size_t *slot_of(const struct name_scan *s, const char *p, size_t n)
{
	size_t i = name_hash(p, n) & (s->nslots - 1);
	for (;; i = (i + 1) & (s->nslots - 1)) {
		size_t g = s->slots[i];
		if (!g || (s->groups[g - 1].nlen == n && !memcmp(s->groups[g - 1].name, p, n)))
			return &s->slots[i];
	}
}

static struct group *group_of(const struct name_scan *s, const char *p, size_t n)
{
	size_t g = s->nslots ? *slot_of(s, p, n) : 0;
	return g ? &s->groups[g - 1] : NULL;
}

/* One group per name, whose kind is its macros' together. */
static void index_macros(struct name_scan *s)
{
	s->nslots = 16;
	while (s->nslots < 2 * s->nmacros + 2)
		s->nslots *= 2;
	s->slots = cjc_xcalloc(s->nslots, sizeof *s->slots);
	s->groups = cjc_xcalloc(s->nmacros + 1, sizeof *s->groups);
	for (size_t m = 0; m < s->nmacros; m++) {
		struct macro *mc = &s->macros[m];
		size_t *slot = slot_of(s, mc->name, mc->nlen);
		if (!*slot) {
			s->groups[s->ngroups] = (struct group){ mc->name, mc->nlen, 0 };
			*slot = ++s->ngroups;
		}
		mc->group = *slot - 1;
		s->groups[mc->group].kind |= mc->kind;
	}
}

static int word_kind(const char *p, size_t n)
{
	for (size_t i = 0; i < sizeof at_site / sizeof *at_site; i++)
		if (strlen(at_site[i]) == n && !memcmp(at_site[i], p, n))
			return AT_SITE;
	for (size_t i = 0; i < sizeof anywhere / sizeof *anywhere; i++)
		if (strlen(anywhere[i]) == n && !memcmp(anywhere[i], p, n))
			return ANYWHERE;
	return 0;
}

/* The kinds (AT_SITE, ANYWHERE) of the words and macros text names. */
static int kinds_in(const struct name_scan *s, const char *text, size_t len, int want)
{
	int k = 0;
	const char *p = text, *end = text + len;
	while (p < end && (want & ~k)) {
		if (!ident_char(*p)) {
			p++;
			continue;
		}
		const char *t = p;
		while (p < end && ident_char(*p))
			p++;
		k |= word_kind(t, (size_t)(p - t)) & want;
		const struct group *g = group_of(s, t, (size_t)(p - t));
		if (g)
			k |= g->kind & want;
	}
	return k;
}

/* The end of the logical line at p (backslash-newlines joined). */
static const char *line_end(const char *p, const char *end)
{
	const char *nl = p;
	while ((nl = memchr(nl, '\n', (size_t)(end - nl))) && nl > p && nl[-1] == '\\')
		nl++;
	return nl ? nl : end;
}

/* The #define at line [p, e), or false. */
static bool define_at(const char *p, const char *e, struct macro *m)
{
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	if (p == e || *p++ != '#')
		return false;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(e - p) < 7 || strncmp(p, "define", 6) || (p[6] != ' ' && p[6] != '\t'))
		return false;
	for (p += 7; p < e && (*p == ' ' || *p == '\t'); p++)
		;
	m->name = p;
	while (p < e && ident_char(*p))
		p++;
	m->nlen = (size_t)(p - m->name);
	m->body = p;
	m->blen = (size_t)(e - p);
	m->kind = 0;
	return m->nlen > 0;
}

/* Whether line [p, e) is a directive (#if __has_builtin(__builtin_FILE)
 * expands nothing into the output). */
static bool directive(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	return p < e && *p == '#';
}

/* Each #define of b, or (macros false) whether a line that is no directive
 * names an ANYWHERE macro. */
static bool scan_lines(struct name_scan *s, const struct cjc_buf *b, bool macros)
{
	const char *p = b->data, *end = b->data + b->len;
	while (p && p < end) {
		const char *e = line_end(p, end);
		struct macro m;
		if (define_at(p, e, &m)) {
			if (macros && s->nmacros == s->cap) {
				s->cap = s->cap ? 2 * s->cap : 1024;
				s->macros = cjc_xrealloc(s->macros, s->cap * sizeof *s->macros);
			}
			if (macros)
				s->macros[s->nmacros++] = m;
		} else if (!macros && !directive(p, e) && kinds_in(s, p, (size_t)(e - p), ANYWHERE)) {
			return true;
		}
		p = e + 1;
	}
	return false;
}

/* Each macro's kinds, closed over the macros its body names. */
static void close_macros(struct name_scan *s)
{
	bool changed = true;
	index_macros(s);
	while (changed) {
		changed = false;
		for (size_t i = 0; i < s->nmacros; i++) {
			struct macro *m = &s->macros[i];
			int k = m->kind | kinds_in(s, m->body, m->blen, (AT_SITE | ANYWHERE) & ~m->kind);
			changed = changed || k != m->kind;
			m->kind = k;
			s->groups[m->group].kind |= k;
		}
	}
}

/* Whether an option word asks for debug or line information. */
static bool debug_word(const char *word)
{
	static const char *const parts[] = { "lineinfo", "line-info", "debug" };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		if (strstr(word, parts[i]))
			return true;
	char *copy = cjc_xstrdup(word), *save = NULL;
	bool found = false;
	for (char *t = strtok_r(copy, " ,=", &save); t && !found; t = strtok_r(NULL, " ,=", &save))
		found = !strcmp(t, "-G") || (t[0] == '-' && t[1] == 'g' &&
					     (!t[2] || (t[2] >= '0' && t[2] <= '9') ||
					      cjc_starts_with(t + 2, "gdb") || cjc_starts_with(t + 2, "dwarf")));
	free(copy);
	return found;
}


/* Whether an option word of options (one per line) asks for debug or line information. */
static bool options_debug(const char *options, size_t len)
{
	bool found = false;
	char *copy = cjc_xstrndup(options ? options : "", len), *save = NULL;
	for (char *w = strtok_r(copy, "\n", &save); w && !found; w = strtok_r(NULL, "\n", &save))
		found = debug_word(w);
	free(copy);
	return found;
}

/* Whether any text named as relocated names an AT_SITE word or macro. */
static bool named_at_site(const struct name_scan *s, const struct cjc_buf *joined, size_t n,
			  const bool *relocated, size_t nrelocated)
{
	for (size_t i = 0; i < n && i < nrelocated; i++)
		if (relocated[i] &&
		    kinds_in(s, joined[i].data ? joined[i].data : "", joined[i].len, AT_SITE))
			return true;
	return false;
}

static bool paths_reach(const struct cjc_buf *texts, size_t n, const bool *relocated,
			size_t nrelocated, const char *options, size_t options_len)
{
	struct cjc_buf joined_options = CJC_BUF_INIT;
	size_t olen;
	const char *o = join_splices(options ? options : "", options_len, &joined_options, &olen);
	if (options_debug(o, olen)) {
		cjc_buf_release(&joined_options);
		return true;
	}
	struct cjc_buf *joined = cjc_xcalloc(n + 1, sizeof *joined);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *t = join_splices(texts[i].data ? texts[i].data : "", texts[i].len, &joined[i], &len);
		if (t != joined[i].data)
			cjc_buf_add(&joined[i], t, len);
	}
	struct name_scan s = { 0 };
	for (size_t i = 0; i < n; i++)
		scan_lines(&s, &joined[i], true);
	close_macros(&s);
	bool reaches = false;
	for (size_t i = 0; i < n && !reaches; i++)
		reaches = scan_lines(&s, &joined[i], false);
	reaches = reaches || named_at_site(&s, joined, n, relocated, nrelocated) ||
		  kinds_in(&s, o, olen, AT_SITE | ANYWHERE);
	for (size_t i = 0; i < n; i++)
		cjc_buf_release(&joined[i]);
	free(joined);
	free(s.macros);
	free(s.groups);
	free(s.slots);
	cjc_buf_release(&joined_options);
	return reaches;
}

bool cjc_rules_path_reaches(const struct cjc_buf *texts, size_t n, const char *options,
			    size_t options_len)
{
	static const bool source_only[] = { true };
	return paths_reach(texts, n, source_only, n ? 1 : 0, options, options_len);
}

bool cjc_rules_paths_reach(const struct cjc_buf *texts, size_t n, const bool *relocated,
			   const char *options, size_t options_len)
{
	return paths_reach(texts, n, relocated, relocated ? n : 0, options, options_len);
}

/* Whether a line of preprocessed text that is no directive (a line
 * marker, -dD's #define) names a file of names, or a builtin that the
 * compiler, not the preprocessor, turns into a file's name. */
bool cjc_rules_preprocessed_names(const char *text, size_t len, char *const *names, size_t n)
{
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		size_t line = (size_t)(e - p);
		for (size_t i = 0; i < n && !directive(p, e); i++)
			if (memmem(p, line, names[i], strlen(names[i])))
				return true;
		for (size_t i = 0; i < sizeof anywhere / sizeof *anywhere && !directive(p, e); i++)
			if (has_token(p, line, anywhere[i], strlen(anywhere[i])))
				return true;
		p = e + 1;
	}
	return false;
}

/* ---- what the output names ---- */

static bool hex8(const unsigned char *p)
{
	for (int i = 0; i < 8; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

static uint64_t le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Whether bytes name an _INTERNAL_<8 hex> symbol. */
static bool names_internal(const unsigned char *p, size_t len)
{
	const unsigned char *end = p + len;
	for (const unsigned char *q = p;
	     q < end && (q = memmem(q, (size_t)(end - q), "_INTERNAL_", 10)); q++)
		if (end - q >= 18 && hex8(q + 10))
			return true;
	return false;
}

/* Whether a compressed fatbin entry's payload (zstd, nvcc 13's default for
 * PTX) names one; true when it cannot be read (compress.h: within the
 * size the entry records). */
static bool compressed_names_internal(const unsigned char *payload, uint64_t size, uint64_t full)
{
	struct cjc_buf out = CJC_BUF_INIT;
	bool named = full > ((uint64_t)1 << 31) ||
		     cjc_inflate_all(payload, (size_t)size, full, &out, NULL) || out.len != full ||
		     names_internal((const unsigned char *)out.data, out.len);
	cjc_buf_release(&out);
	return named;
}

/* Whether an entry of a fatbin stored compressed names an _INTERNAL_
 * symbol, or cannot be read (true).  The layout, as nvcc 13 writes it: a
 * header (u32 magic, u16 version, u16 header size, u64 size of the
 * entries), then entries (u16 kind, u16, u32 header size, u64 payload
 * size, u32 compressed size at 16, u64 flags at 40 (0x8000: zstd, 0x2000:
 * an older compression), u64 uncompressed size at 56); the uncompressed
 * ones are read as they are (cjc_rules_output_names_path). */
static bool fatbin_names_internal(const unsigned char *p, const unsigned char *end)
{
	if (end - p < 16)
		return true;
	uint64_t hsize = le(p + 6, 2), size = le(p + 8, 8);
	if (hsize < 16 || (uint64_t)(end - p) < hsize || size > (uint64_t)(end - p) - hsize)
		return true;
	const unsigned char *e = p + hsize, *stop = e + size;
	while (e < stop) {
		if (stop - e < 64)
			return true;
		uint64_t eh = le(e + 4, 4), payload = le(e + 8, 8), flags = le(e + 40, 8);
		if (eh < 64 || eh > (uint64_t)(stop - e) || payload > (uint64_t)(stop - e) - eh)
			return true;
		bool zstd = flags & 0x8000, compressed = zstd || (flags & 0x2000) || le(e + 56, 8);
		if (compressed && (!zstd || le(e + 16, 4) > payload ||
				   compressed_names_internal(e + eh, le(e + 16, 4), le(e + 56, 8))))
			return true;
		e += eh + payload;
	}
	return false;
}

bool cjc_rules_output_names_path(const void *data, size_t len)
{
	static const unsigned char magic[] = { 0x50, 0xed, 0x55, 0xba };
	const unsigned char *p = data, *end = p + len;
	if (names_internal(p, len))
		return true;
	for (const unsigned char *q = p; q < end && (q = memmem(q, (size_t)(end - q), magic, 4));
	     q++)
		if (fatbin_names_internal(q, end))
			return true;
	return false;
}
