/*
 * `cjc config` and `cjc config set` (config_cmd.h).
 */
#include "config_cmd.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/run.h"
#include "base/util.h"
#include "compile/config.h"
#include "compile/diagnostics.h"
#include "output.h"
#include "remote/remote.h"
#include "store/stats.h"

/* keep_sass is set: says so when the nvcc on PATH has no cuobjdump to go with it. */
static void note_keep_sass(void)
{
	struct cjc_diagnostics d;
	char *nvcc = cjc_find_program("nvcc");
	char *real = nvcc ? realpath(nvcc, NULL) : NULL;
	cjc_diagnostics_init(&d, false, true, false, real);
	if (!d.cuobjdump)
		fprintf(stderr, "cjc config: keep_sass is set but cuobjdump is not installed (beside %s "
			"or on PATH): entries will keep no SASS\n", real ? real : "nvcc");
	cjc_diagnostics_release(&d);
	free(real);
	free(nvcc);
}

/* config: the store's state in one line (on stderr too when it is not
 * usable, so that --json says it); 1 when compiles cannot keep anything in
 * it: unusable, or read-only without the readonly setting. */
static int store_status(const struct cjc_config *cfg, bool json)
{
	struct cjc_store st;
	const char *dir = cfg->dir ? cfg->dir : "";
	char *status;
	int bad = 0;
	if (cjc_store_open_existing(&st, dir)) {
		bad = errno != ENOENT;
		status = bad ? cjc_xasprintf("unusable: %s; compiles run without the cache",
					     cjc_store_strerror(errno))
			     : cjc_xstrdup("not made yet (the first compile makes it)");
	} else {
		bool ro = faccessat(AT_FDCWD, st.dir, W_OK, AT_EACCESS) &&
			  (errno == EACCES || errno == EROFS || errno == EPERM);
		bad = ro && !cfg->readonly;
		status = cjc_xstrdup(!ro ? "usable" : bad ? "read-only for you: hits are served, misses "
				     "are not kept (set readonly if that is meant)" : "read-only, as readonly says");
		cjc_store_close(&st);
	}
	char *shown = cjc_printable(dir);
	if (!json)
		printf("\nstore: %s: %s\n", shown, status);
	if (bad)
		fprintf(stderr, "cjc config: cache directory %s is %s\n", shown, status);
	free(shown);
	free(status);
	return bad;
}

/* Whether a settings file is there, for "files read". */
static const char *file_state(const char *path)
{
	struct stat st;
	return !stat(path, &st) ? "read" : errno == ENOENT ? "absent" : "unreadable";
}

/* One line of `cjc config`: a value and its origin (a file's name) may
 * hold what a terminal would act on. */
static void print_setting(int s, const char *text, const char *origin)
{
	char *value = cjc_printable(text), *from = cjc_printable(origin);
	printf("%-14s = %-40s (%s)\n", cjc_config_name(s), value, from);
	free(value);
	free(from);
}

int cjc_config_show(bool json)
{
	struct cjc_config cfg;
	struct cjc_buf problems = CJC_BUF_INIT;
	int bad = cjc_config_load(&cfg, &problems);
	if (bad)
		fputs(problems.data, stderr);
	if (cfg.notes)
		fputs(cfg.notes, stderr);
	json_t *o = json_object();
	for (int i = 0; i < CJC_SET_COUNT; i++) {
		if (json)
			json_object_set_new(o, cjc_config_name(i), json_pack("{s:o, s:o, s:s, s:s}",
				"value", cjc_json_bytes(cfg.text[i]), "origin", cjc_json_bytes(cfg.origin[i]),
				"env", cjc_config_env(i), "help", cjc_config_help(i)));
		else
			print_setting(i, cfg.text[i], cfg.origin[i]);
	}
	if (json) {
		cjc_print_json(o);
	} else {
		char *shown = cjc_printable(cfg.file);
		printf("\nfiles: /etc/cudajitcache.conf (%s), %s (%s; `cjc config set KEY VALUE` "
		       "writes here)\n", file_state("/etc/cudajitcache.conf"), shown, file_state(cfg.file));
		free(shown);
		json_decref(o);
	}
	if (cfg.keep_sass)
		note_keep_sass();
	bad |= store_status(&cfg, json);
	cjc_buf_release(&problems);
	cjc_config_release(&cfg);
	return bad ? 1 : 0;
}

/* --- config set --------------------------------------------------------- */

/* A value as the file holds it: quoted when INI would cut or trim it. */
static char *ini_value(const char *v)
{
	bool plain = *v && !strpbrk(v, ";#\"") && !isspace((unsigned char)*v) &&
		     !isspace((unsigned char)v[strlen(v) - 1]);
	return plain ? cjc_xstrdup(v) : cjc_xasprintf("\"%s\"", v);
}

/* Whether line (n bytes) sets key: "  key = ..." or "key: ...". */
static bool sets_key(const char *line, size_t n, const char *key)
{
	const char *p = line, *end = line + n;
	while (p < end && isspace((unsigned char)*p))
		p++;
	size_t klen = strlen(key);
	if ((size_t)(end - p) < klen || strncasecmp(p, key, klen))
		return false;
	for (p += klen; p < end && isspace((unsigned char)*p); p++)
		;
	return p < end && (*p == '=' || *p == ':');
}

/* The file's text with key's last line set to value, or the line added
 * (under [cache] when the file has sections). */
static void edit_text(const struct cjc_buf *old, const char *key, const char *value,
		      struct cjc_buf *out)
{
	const char *text = old->data ? old->data : "";
	const char *last = NULL, *last_end = NULL;
	bool sections = false;
	for (const char *p = text; *p;) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		if (sets_key(p, n, key))
			last = p, last_end = p + n;
		sections = sections || p[strspn(p, " \t")] == '[';
		p += n + (eol != NULL);
	}
	char *line = cjc_xasprintf("%s = %s", key, value);
	if (last) {
		cjc_buf_add(out, text, (size_t)(last - text));
		cjc_buf_adds(out, line);
		cjc_buf_adds(out, last_end);
	} else {
		cjc_buf_adds(out, text);
		if (out->len && out->data[out->len - 1] != '\n')
			cjc_buf_adds(out, "\n");
		cjc_buf_addf(out, "%s%s\n", sections ? "[cache]\n" : "", line);
	}
	free(line);
}

/* Reads the user's file (none yet is empty); -1 when it is there but not a
 * regular file this cjc may replace. */
static int read_old(const char *path, struct cjc_buf *text, mode_t *mode)
{
	struct stat st;
	*mode = 0644;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	*mode = st.st_mode & 07777;
	return cjc_read_file(path, text);
}

/* Writes key = value into path, by a rename; 0 or -1 with errno. */
static int write_setting(const char *path, const char *key, const char *value)
{
	struct cjc_buf old = CJC_BUF_INIT, text = CJC_BUF_INIT;
	mode_t mode;
	char *dir = cjc_xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int rc = read_old(path, &old, &mode);
	if (!rc && slash && *dir)
		rc = cjc_mkdirs(dir, 0700);
	if (!rc) {
		char *v = ini_value(value);
		edit_text(&old, key, v, &text);
		free(v);
		rc = cjc_replace_file_at(AT_FDCWD, path, text.data, text.len, mode);
	}
	int e = errno;
	free(dir);
	cjc_buf_release(&old);
	cjc_buf_release(&text);
	errno = e;
	return rc;
}

/* The user's settings file: $CJC_CONFIG's target (a link there is the
 * user's own choice), else the store's cudajitcache.conf. */
static char *target_file(const struct cjc_config *cfg)
{
	const char *file = getenv("CJC_CONFIG");
	char *real = file && *file ? realpath(file, NULL) : NULL;
	return real ? real : cjc_xstrdup(cfg->file);
}

static int set_usage(void)
{
	fputs("cjc config set: expected `cjc config set KEY VALUE`, e.g. `cjc config set max_size 20G`; "
	      "see 'cjc --help'\n", stderr);
	return 2;
}

/* The key and value, checked: 0, or 2 having said why. */
static int check_set(const char *key, const char *value)
{
	int s = cjc_config_find(key);
	if (s < 0) {
		const char *names[CJC_SET_COUNT];
		for (int i = 0; i < CJC_SET_COUNT; i++)
			names[i] = cjc_config_name(i);
		const char *near = cjc_did_you_mean(key, names, CJC_SET_COUNT);
		char *shown = cjc_printable(key);
		fprintf(stderr, "cjc config set: unknown setting '%s'%s%s%s; `cjc config` lists them\n",
			shown, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
		free(shown);
		return 2;
	}
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = cjc_config_check_value(s, value, &why);
	if (rc) {
		char *shown = cjc_config_shown_rejected(s, value);
		fprintf(stderr, "cjc config set: bad value '%s' for %s: %s; nothing written\n", shown,
			key, why.data ? why.data : "malformed");
		free(shown);
	}
	cjc_buf_release(&why);
	return rc ? 2 : 0;
}

int cjc_config_set(int argc, char **argv)
{
	if (argc != 3)
		return set_usage();
	const char *key = argv[1], *value = argv[2];
	int rc = check_set(key, value);
	if (rc)
		return rc;
	struct cjc_config cfg;
	struct cjc_buf problems = CJC_BUF_INIT;
	(void)cjc_config_load(&cfg, &problems); /* only for where the file is */
	char *path = target_file(&cfg);
	char *shown = cjc_printable(path);
	if (write_setting(path, key, value)) {
		fprintf(stderr, "cjc config set: cannot write %s: %s\n", shown, strerror(errno));
		rc = 1;
	} else {
		char *v = cjc_config_find(key) == CJC_SET_REMOTE ? cjc_remote_redact(value) : cjc_xstrdup(value);
		printf("%s = %s written to %s\n", key, v, shown);
		free(v);
		const char *env = cjc_config_env(cjc_config_find(key));
		if (getenv(env))
			printf("note: environment variable %s is set, and overrides it\n", env);
	}
	free(shown);
	free(path);
	cjc_buf_release(&problems);
	cjc_config_release(&cfg);
	return rc;
}

/* --- in `cjc stats` ------------------------------------------------------ */

void cjc_config_stats_print(const struct cjc_store *s, const uint64_t *v)
{
	struct cjc_stats_row *rows = NULL;
	size_t n = 0;
	cjc_stats_read_named(s, CJC_STATS_BY_SETTING, &rows, &n);
	if (v[CJC_STAT_BAD_SETTINGS] || n) {
		printf("%-16s %llu compiles ran with a broken setting (run `cjc config`):",
		       "bad settings", (unsigned long long)v[CJC_STAT_BAD_SETTINGS]);
		for (size_t i = 0; i < n; i++) {
			char *name = cjc_printable(rows[i].name);
			printf("%s%s (%llu)", i ? ", " : " ", name,
			       (unsigned long long)rows[i].v[CJC_STAT_BAD_SETTINGS]);
			free(name);
		}
		printf("\n");
	}
	cjc_stats_rows_free(rows, n);
}

json_t *cjc_config_stats_json(const struct cjc_store *s)
{
	struct cjc_stats_row *rows = NULL;
	size_t n = 0;
	json_t *o = json_object();
	cjc_stats_read_named(s, CJC_STATS_BY_SETTING, &rows, &n);
	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, rows[i].name, json_integer((json_int_t)rows[i].v[CJC_STAT_BAD_SETTINGS]));
	cjc_stats_rows_free(rows, n);
	return o;
}
