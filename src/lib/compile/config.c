#include "compile/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <iniparser.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compress.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/run.h"
#include "keys/place.h"
#include "remote/remote.h"
#include "store/stats.h"
#include "store/store.h"

typedef int (*parse_fn)(const char *text, void *dst);

static int parse_string(const char *text, void *dst)
{
	char **s = dst;
	cjc_replace_string(s, text);
	return 0;
}

static int parse_path(const char *text, void *dst)
{
	if (!*text)
		return -1;
	return parse_string(text, dst);
}

static int parse_bool(const char *text, void *dst)
{
	static const char *yes[] = { "1", "true", "yes", "on" };
	static const char *no[] = { "0", "false", "no", "off" };
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(text, yes[i]))
			return *(bool *)dst = true, 0;
		if (!strcasecmp(text, no[i]))
			return *(bool *)dst = false, 0;
	}
	return -1;
}

/* Octal, as for umask(1); empty: keep the process's own. */
static int parse_umask(const char *text, void *dst)
{
	char *end;
	if (!*text)
		return *(int *)dst = -1, 0;
	long v = strtol(text, &end, 8);
	if (*end || v < 0 || v > 0777 || !isdigit((unsigned char)*text))
		return -1;
	*(int *)dst = (int)v;
	return 0;
}

/* An absolute directory, normalised; empty: unset. */
static int parse_base_dir(const char *text, void *dst)
{
	char **s = dst;
	char *dir = *text ? cjc_place_base_dir(text) : NULL;
	if (*text && !dir)
		return -1;
	free(*s);
	*s = dir;
	return 0;
}

/* Store URLs with attributes (remote.h); empty: none. */
static int parse_remote(const char *text, void *dst)
{
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = cjc_remote_check_setting(text, &why);
	cjc_buf_release(&why);
	return rc ? -1 : parse_string(text, dst);
}

/* A file name; empty: unset. */
static int parse_optional_path(const char *text, void *dst)
{
	char **s = dst;
	free(*s);
	*s = *text ? cjc_xstrdup(text) : NULL;
	return 0;
}

static int parse_size(const char *text, uint64_t bare, uint64_t *out);

/* A bare number is gibibytes here, as ccache's max_size ("20" is 20G). */
static int parse_size_setting(const char *text, void *dst)
{
	return parse_size(text, (uint64_t)1 << 30, dst);
}

/* A duration in seconds ("90", "45s", "2m"). */
static int parse_seconds(const char *text, void *dst)
{
	return cjc_parse_age(text, dst);
}

/* A fraction: "0.05", "5%", "0", "1". */
static int parse_fraction(const char *text, void *dst)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (end != text && *end == '%' && !end[1])
		v /= 100, end++;
	if (errno || end == text || *end || !(v >= 0 && v <= 1))
		return -1;
	*(double *)dst = v;
	return 0;
}

/* A zstd level: 0 (off) to CJC_COMPRESSION_MAX. */
static int parse_level(const char *text, void *dst)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < 0 || v > CJC_COMPRESSION_MAX)
		return -1;
	*(int *)dst = (int)v;
	return 0;
}

/* One row per setting: everything about it is here (config.h). */
struct setting_def {
	const char *name;
	const char *env;
	parse_fn parse;
	size_t offset;
	const char *def;    /* the default, as text (NULL: computed, see default_dir) */
	const char *expect; /* for messages */
	/* The allowlist (docs/trust.md, settings): may be set by a settings file
	 * that is not yours or root's, or that others can write.  Only what can
	 * neither run a program, nor direct a write, nor decide what is trusted
	 * or whether a build fails: the rest are taken from trusted files only. */
	bool foreign_ok;
	const char *help;   /* for `cjc config`, --help and the README's table */
};

#define BOOLEAN "a boolean (1/0, true/false, yes/no, on/off)"
#define AT(field) offsetof(struct cjc_config, field)

/* As written: clang-format would reformat the whole table whenever a row changes. */
/* clang-format off */
static const struct setting_def settings[CJC_SET_COUNT] = {
	[CJC_SET_DIR] = { "dir", "CJC_DIR", parse_path, AT(dir), NULL, "a directory", false,
			  "the store" },
	[CJC_SET_DISABLE] = { "disable", "CJC_DISABLE", parse_bool, AT(disable), "false", BOOLEAN,
			      true, "run nvcc uncached" },
	[CJC_SET_READONLY] = { "readonly", "CJC_READONLY", parse_bool, AT(readonly), "false",
			       BOOLEAN, true, "serve hits, publish nothing" },
	[CJC_SET_LOG] = { "log", "CJC_LOG", parse_string, AT(log), "", "a file name", false,
			  "log file: why each compile hit, missed or ran uncached" },
	[CJC_SET_DEBUG] = { "debug", "CJC_DEBUG", parse_bool, AT(debug), "false", BOOLEAN, true,
			    "log to stderr too" },
	[CJC_SET_MAX_SIZE] = { "max_size", "CJC_MAX_SIZE", parse_size_setting, AT(max_size), "5G",
			       "a size such as 20G, 1.5G, 512M (a bare number is G) or 0 for no "
			       "limit",
			       true,
			       "size limit: past it, least recently used entries are evicted" },
	[CJC_SET_REMOTE] = { "remote", "CJC_REMOTE", parse_remote, AT(remote), "",
			     "store URLs (redis://, redis+unix:, http://, https://, s3://), each "
			     "with |attributes "
			     "(docs/remote.md)",
			     false, "remote stores, tried in order after the local one" },
	[CJC_SET_UMASK] = { "umask", "CJC_UMASK", parse_umask, AT(umask), "",
			    "an octal mask such as 002, or empty", false,
			    "umask for the store's files (a store shared by a group)" },
	[CJC_SET_PRINT_COMMANDS] = { "print_commands", "CJC_PRINT_COMMANDS", parse_bool,
				     AT(print_commands), "false", BOOLEAN, true,
				     "print each real nvcc command on stderr" },
	[CJC_SET_KEEP_PTX] = { "keep_ptx", "CJC_KEEP_PTX", parse_bool, AT(keep_ptx), "false",
			       BOOLEAN, true, "keep nvcc's ptx in each entry" },
	[CJC_SET_KEEP_SASS] = { "keep_sass", "CJC_KEEP_SASS", parse_bool, AT(keep_sass), "false",
				BOOLEAN, false,
				"keep cuobjdump -sass of each output in its entry" }, /* runs
											 cuobjdump
										       */
	[CJC_SET_CHECK_SPILLS] = { "check_spills", "CJC_CHECK_SPILLS", parse_bool, AT(check_spills),
				   "false", BOOLEAN, false,
				   "fail a compile whose kernels spill" }, /* fails builds */
	[CJC_SET_BASE_DIR] = { "base_dir", "CJC_BASE_DIR", parse_base_dir, AT(base_dir), "",
			       "an absolute directory, or empty",
			       false, /* rewrites the command nvcc runs */
			       "absolute paths under it are rewritten relative to the working "
			       "directory" },
	[CJC_SET_SIGN_KEY] = { "sign_key", "CJC_SIGN_KEY", parse_optional_path, AT(sign_key), "",
			       "a file name, or empty", false,
			       "Ed25519 private key (PEM) that signs each published entry" },
	[CJC_SET_TRUSTED_KEYS] = { "trusted_keys", "CJC_TRUSTED_KEYS", parse_optional_path,
				   AT(trusted_keys), "", "a file name, or empty", false,
				   "Ed25519 public keys (PEM): remote entries, and local ones "
				   "others wrote, must be signed by one" },
	[CJC_SET_HASH_DIR] = { "hash_dir", "CJC_HASH_DIR", parse_bool, AT(hash_dir), "true",
			       BOOLEAN, false, /* decides what is keyed */
			       "false: -g, -G and -lineinfo compiles share entries across "
			       "directories and checkouts "
			       "(debug paths name the one that compiled)" },
	[CJC_SET_LEASE_WAIT] = { "lease_wait", "CJC_LEASE_WAIT", parse_seconds, AT(lease_wait),
				 "60s", "a duration such as 60s, 2m or 0 for no leases",
				 false, /* holds builds up */
				 "longest wait for another compile of the same key when none is "
				 "recorded; 0: no leases" },
	[CJC_SET_REMOTE_ONLY] = { "remote_only", "CJC_REMOTE_ONLY", parse_bool, AT(remote_only),
				  "false", BOOLEAN, false,
				  "with a remote store: keep no entries in the local store, only "
				  "there" },
	[CJC_SET_REMOTE_HELPER] = { "remote_helper", "CJC_REMOTE_HELPER", parse_bool,
				    AT(remote_helper), "true", BOOLEAN,
				    false, /* starts a process */
				    "false: no store is asked through a helper process (no process "
				    "outlives a compile)" },
	[CJC_SET_VERIFY_RATE] = { "verify_rate", "CJC_VERIFY_RATE", parse_fraction, AT(verify_rate),
		"0", "a fraction such as 0.02 or 2%", false, /* runs compiles */
		"the fraction of hits compiled again after they were served and compared; a "
		"difference is counted and the entry never served again" },
	[CJC_SET_COMPRESSION_LEVEL] = { "compression_level", "CJC_COMPRESSION_LEVEL", parse_level,
		AT(compression_level), "1", "a zstd level from 0 (off) to 19", true,
		"zstd level of the outputs stored; 0: stored as they are" },
	[CJC_SET_WATCHER] = { "watcher", "CJC_WATCHER", parse_bool, AT(watcher), "true", BOOLEAN,
		false, /* starts a process */
		"false: a hit checks its headers by stat, asking no watching helper (no process "
		"outlives a compile)" },
};
/* clang-format on */

/* Whether a setting may hold a secret: shown redacted (base/run.h). */
static bool secret(const struct setting_def *d)
{
	return cjc_secret_variable(d->env, strlen(d->env));
}

/* The settings that own a string (released by cjc_config_release). */
static bool owns_string(const struct setting_def *d)
{
	return d->parse == parse_string || d->parse == parse_path || d->parse == parse_base_dir ||
	       d->parse == parse_remote || d->parse == parse_optional_path;
}

const char *cjc_config_help(enum cjc_setting s)
{
	return settings[s].help;
}

const char *cjc_config_name(enum cjc_setting s)
{
	return settings[s].name;
}

const char *cjc_config_env(enum cjc_setting s)
{
	return settings[s].env;
}

/* The multiplier a size's unit means: "" (bare), "G", "GiB", "GB", "B"... or 0. */
static uint64_t size_unit(const char *u, uint64_t bare)
{
	static const char units[] = "KMGT";
	if (!*u)
		return bare;
	if ((*u == 'B' || *u == 'b') && !u[1])
		return 1;
	const char *p = strchr(units, toupper((unsigned char)*u));
	if (!p || !*u)
		return 0;
	uint64_t mult = (uint64_t)1 << (10 * (p - units + 1));
	u++;
	if (*u == 'i')
		u++;
	if (*u == 'B' || *u == 'b')
		u++;
	return *u ? 0 : mult;
}

int cjc_parse_size(const char *text, uint64_t *out)
{
	return parse_size(text, (uint64_t)1 << 30, out); /* as max_size reads it */
}

static int parse_size(const char *text, uint64_t bare, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)*text))
		return -1;
	errno = 0;
	unsigned long long whole = strtoull(text, &end, 10);
	if (errno)
		return -1;
	/* a decimal fraction ("1.5G"): at most 9 digits, exact to the byte */
	uint64_t frac = 0, scale = 1;
	if (*end == '.') {
		for (end++; isdigit((unsigned char)*end) && scale < 1000000000; end++)
			frac = frac * 10 + (uint64_t)(*end - '0'), scale *= 10;
		if (scale == 1 || isdigit((unsigned char)*end))
			return -1;
	}
	uint64_t mult = size_unit(end, bare);
	if (!mult || (whole && mult > UINT64_MAX / whole))
		return -1;
	uint64_t v = (uint64_t)whole * mult;
	uint64_t part = (uint64_t)((unsigned __int128)frac * mult / scale);
	if (v > UINT64_MAX - part)
		return -1;
	*out = v + part;
	return 0;
}

int cjc_parse_age(const char *text, int64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)*text))
		return -1;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	int64_t mult = 1;
	switch (*end) {
	case '\0': break;
	case 's': mult = 1; end++; break;
	case 'm': mult = 60; end++; break;
	case 'h': mult = 3600; end++; break;
	case 'd': mult = 86400; end++; break;
	default: return -1;
	}
	if (errno || *end || v > INT64_MAX / mult)
		return -1;
	*out = v * mult;
	return 0;
}

static void set_origin(struct cjc_config *cfg, enum cjc_setting s, const char *text, char *origin)
{
	free(cfg->text[s]);
	free(cfg->origin[s]);
	cfg->text[s] = secret(&settings[s]) ? cjc_remote_redact(text) : cjc_xstrdup(text);
	cfg->origin[s] = origin;
}

/* The settings whose bad value fails closed (config.h): they decide what
 * is trusted, or with whose permissions the store's files are written. */
static const enum cjc_setting fail_closed[] = { CJC_SET_SIGN_KEY, CJC_SET_TRUSTED_KEYS,
						CJC_SET_UMASK };

static bool decides_trust(int s)
{
	for (size_t i = 0; i < sizeof fail_closed / sizeof *fail_closed; i++)
		if ((int)fail_closed[i] == s)
			return true;
	return false;
}

static void add_bad(struct cjc_config *cfg, const char *name)
{
	if (!cjc_strvec_contains(&cfg->bad, name))
		cjc_strvec_push(&cfg->bad, name);
}

static void add_note(struct cjc_config *cfg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A value with a control character (C0 or DEL) is refused whatever the
 * setting: it would reach terminals and logs in every message that names
 * the value (an escape sequence in CJC_REMOTE, a newline in a path). */
#define CONTROL_CHARACTERS "no control characters (it holds one, shown as \\xNN)"

static bool has_control(const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return true;
	return false;
}

/* Applies one value: 0, or -1 (nothing said) when it is malformed; the old
 * value stays.  origin is taken. */
static int apply(struct cjc_config *cfg, enum cjc_setting s, const char *text, char *origin)
{
	const struct setting_def *d = &settings[s];
	if (has_control(text) || d->parse(text, (char *)cfg + d->offset)) {
		free(origin);
		return -1;
	}
	set_origin(cfg, s, text, origin);
	return 0;
}

/* A bad remote turns every remote store off; the local store goes on. */
static void remote_off(struct cjc_config *cfg, const char *text, const char *origin)
{
	struct cjc_buf why = CJC_BUF_INIT;
	if (text && has_control(text))
		cjc_buf_adds(&why, "expected " CONTROL_CHARACTERS);
	else
		cjc_remote_check_setting(text ? text : "", &why);
	char *problem = cjc_buf_detach(&why); /* before the free: base/oom.h */
	free(cfg->remote_problem);
	cfg->remote_problem = problem;
	if (!cfg->remote_problem || !*cfg->remote_problem) {
		cjc_replace_string(&cfg->remote_problem, "malformed");
	}
	cjc_replace_string(&cfg->remote, "");
	set_origin(cfg, CJC_SET_REMOTE, "", cjc_xasprintf("off: %s is malformed", origin));
}

/* Says what is wrong with a value apply() refused (its text not echoed when
 * NULL): -1 when the setting fails closed (into error), else 0 (a note, the
 * value before stands; remote is turned off).  Counted either way. */
static int refused(struct cjc_config *cfg, enum cjc_setting s, const char *text, const char *origin,
		   struct cjc_buf *error)
{
	const struct setting_def *d = &settings[s];
	struct cjc_buf msg = CJC_BUF_INIT;
	char *shown = !text ? NULL : cjc_config_shown_rejected(s, text);
	char *where = cjc_printable(origin);
	cjc_buf_addf(&msg, "cjc: %s: bad value%s%s%s for %s", where, shown ? " '" : "",
		     shown ? shown : "", shown ? "'" : "", d->name);
	if (s != CJC_SET_REMOTE)
		cjc_buf_addf(&msg, ": expected %s",
			     text && has_control(text) ? CONTROL_CHARACTERS : d->expect);
	free(shown);
	free(where);
	add_bad(cfg, d->name);
	int rc = 0;
	if (decides_trust(s)) {
		cjc_buf_addf(error, "%s\n", msg.data);
		rc = -1;
	} else if (s == CJC_SET_REMOTE) {
		remote_off(cfg, text, origin);
		add_note(cfg, "%s: %s; the remote stores are off, the local store goes on\n", msg.data,
			 text ? cfg->remote_problem : "malformed");
	} else {
		char *stays = cjc_printable(cfg->text[s]);
		add_note(cfg, "%s; ignored: %s stays %s (%s)\n", msg.data, d->name,
			 *stays ? stays : "empty", cfg->origin[s]);
		free(stays);
	}
	cjc_buf_release(&msg);
	return rc;
}

static char ini_message[512];

static int ini_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t used = strlen(ini_message);
	vsnprintf(ini_message + used, sizeof ini_message - used, fmt, ap);
	va_end(ap);
	return 0;
}

/* The 1-based line where a key is last set in the file's text (the value
 * iniparser keeps), or 0. */
static int line_of_key(const char *text, const char *key)
{
	int line = 1, found = 0;
	for (const char *p = text; *p; line++) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		const char *k = p;
		while (k < p + n && isspace((unsigned char)*k))
			k++;
		size_t klen = strlen(key);
		if ((size_t)(p + n - k) >= klen && !strncasecmp(k, key, klen)) {
			const char *after = k + klen;
			while (after < p + n && isspace((unsigned char)*after))
				after++;
			if (after < p + n && (*after == '=' || *after == ':'))
				found = line;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return found;
}

static int find_setting(const char *name)
{
	for (int s = 0; s < CJC_SET_COUNT; s++)
		if (!strcmp(settings[s].name, name))
			return s;
	return -1;
}

#define CONFIG_MAX ((size_t)1 << 20)

/* Reads a settings file, never blocking on a FIFO, and says whether what is
 * at path is trusted (also when it cannot be read: then whether the failure
 * is an error or a note).  The store's file (follow false: in $CJC_DIR,
 * which a group may write) is opened without following a link, else a
 * member's link to a file of root's would be judged by root's file and its
 * text taken as root's settings; a link there is "not a regular file".  The
 * file $CJC_CONFIG names, and /etc's, are the user's and root's own choice
 * (a link in a dotfiles setup, say): a link there is followed and judged by
 * its target. */
static int read_settings(const char *path, bool follow, struct cjc_buf *text, bool *trusted)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	int e = errno;
	bool seen = !(fd >= 0 ? fstat(fd, &st) : follow ? stat(path, &st) : lstat(path, &st));
	*trusted = seen && cjc_stat_trusted(&st); /* one name: a hard link to root's file is not root's word */
	if (fd < 0) {
		errno = e == ELOOP && seen && S_ISLNK(st.st_mode) ? EINVAL : e;
		return -1;
	}
	return cjc_read_regular_and_close(fd, CONFIG_MAX, text);
}

/* iniparser reads a file by name: it gets the bytes we checked, in memory. */
static dictionary *parse_settings(const struct cjc_buf *text)
{
	int fd = memfd_create("cjc-config", MFD_CLOEXEC);
	if (fd < 0 || cjc_write_all(fd, text->data, text->len)) {
		if (fd >= 0)
			close(fd);
		snprintf(ini_message, sizeof ini_message, "%s", strerror(errno));
		return NULL;
	}
	char name[64];
	snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
	dictionary *d = iniparser_load(name);
	close(fd);
	return d;
}

static void add_note(struct cjc_config *cfg, const char *fmt, ...)
{
	struct cjc_buf b = CJC_BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	char *line = cjc_xvasprintf(fmt, ap);
	va_end(ap);
	if (cfg->notes)
		cjc_buf_adds(&b, cfg->notes);
	cjc_buf_adds(&b, line);
	free(line);
	char *notes = cjc_buf_detach(&b); /* before the free: base/oom.h */
	free(cfg->notes);
	cfg->notes = notes;
}

#define UNTRUSTED "the file is not owned by you or root, or others can write it or link to it " \
	"(make it yours, with one name, and chmod go-w)"

static void refuse(struct cjc_config *cfg, const char *path, int line, const char *name)
{
	add_note(cfg, "cjc: %s:%d: ignoring %s: " UNTRUSTED "\n", path, line, name);
}

/* The line of iniparser's "syntax error in NAME (LINE):" (NAME is
 * /proc/self/fd/N: no parenthesis), or 0. */
static int ini_error_line(void)
{
	const char *open = strchr(ini_message, '(');
	return open ? atoi(open + 1) : 0;
}

/* Levenshtein's distance between a and b, or 3 when it is more than 2 or
 * either is long: a misspelling is one or two letters off. */
static unsigned distance(const char *a, const char *b)
{
	enum { MAX = 64 };
	size_t n = strlen(a), m = strlen(b);
	if (n >= MAX || m >= MAX || (n > m ? n - m : m - n) > 2)
		return 3;
	unsigned row[MAX + 1];
	for (size_t j = 0; j <= m; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= n; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= m; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[m] > 2 ? 3 : row[m];
}

const char *cjc_did_you_mean(const char *name, const char *const *known, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (distance(name, known[k]) <= 2)
			return known[k];
	return NULL;
}

/* The setting name is one or two letters off, or -1. */
static int near_setting(const char *name)
{
	const char *names[CJC_SET_COUNT];
	for (int s = 0; s < CJC_SET_COUNT; s++)
		names[s] = settings[s].name;
	const char *near = cjc_did_you_mean(name, names, CJC_SET_COUNT);
	return near ? find_setting(near) : -1;
}

/* An unknown setting in a file whose problems count (shown: its name, or
 * NULL when the file's text is not to be echoed): ignored with a note,
 * unless it is near a setting that fails closed: then -1, into error. */
static int unknown_key(struct cjc_config *cfg, const char *path, int line, const char *shown,
		       const char *name, struct cjc_buf *error)
{
	int near = shown ? near_setting(name) : -1;
	struct cjc_buf msg = CJC_BUF_INIT;
	char *bad = shown ? cjc_xasprintf("%s (unknown)", shown) : cjc_xstrdup("(unknown)");
	add_bad(cfg, bad);
	free(bad);
	cjc_buf_addf(&msg, "cjc: %s:%d: unknown setting%s%s%s", path, line, shown ? " '" : "",
		     shown ? shown : "", shown ? "'" : "");
	if (near >= 0)
		cjc_buf_addf(&msg, " (did you mean '%s'?)", settings[near].name);
	int rc = near >= 0 && decides_trust(near) ? -1 : 0;
	if (rc)
		cjc_buf_addf(error, "%s: it may be meant to decide trust\n", msg.data);
	else
		add_note(cfg, "%s; ignored\n", msg.data);
	cjc_buf_release(&msg);
	return rc;
}

/*
 * Problems in a trusted file (yours or root's), or in the one $CJC_CONFIG
 * names (required: the caller's own explicit choice), are errors.  In any
 * other file that is not trusted (a member's in a shared store) they are
 * notes: the file, line or setting is ignored and the build goes on, so a
 * member can neither fail root's compiles nor cjc_jit_open.  The text of a
 * file that is not trusted is never echoed (it may be a file only root can
 * read that a member linked there): messages name the file and line only.
 */
static int load_file(struct cjc_config *cfg, const char *path, bool required, bool follow,
		     struct cjc_buf *error)
{
	struct cjc_buf text = CJC_BUF_INIT;
	bool trusted;
	if (read_settings(path, follow, &text, &trusted)) {
		int e = errno;
		cjc_buf_release(&text);
		if (!required && (e == ENOENT || e == ENOTDIR))
			return 0;
		const char *why = e == EINVAL ? "not a regular file" : strerror(e);
		if (!trusted && !required) {
			add_note(cfg, "cjc: %s: ignored: cannot read: %s\n", path, why);
			return 0;
		}
		cjc_buf_addf(error, "cjc: %s: cannot read: %s\n", path, why);
		add_bad(cfg, required ? "CJC_CONFIG" : path);
		return -1;
	}
	ini_message[0] = '\0';
	iniparser_set_error_callback(ini_error);
	dictionary *d = parse_settings(&text);
	if (!d) {
		char *nl;
		while ((nl = strchr(ini_message, '\n')))
			*nl = ' ';
		if (trusted)
			cjc_buf_addf(error, "cjc: %s: malformed configuration: %s\n", path,
				     ini_message[0] ? ini_message : "cannot parse");
		else if (required)
			cjc_buf_addf(error, "cjc: %s:%d: malformed configuration: syntax error\n", path,
				     ini_error_line());
		else
			add_note(cfg, "cjc: %s:%d: ignored: syntax error; " UNTRUSTED "\n", path,
				 ini_error_line());
		cjc_buf_release(&text);
		if (trusted || required)
			add_bad(cfg, required ? "CJC_CONFIG" : path);
		return trusted || required ? -1 : 0;
	}
	bool strict = trusted || required;
	int rc = 0;
	for (int i = 0; i < d->size; i++) {
		const char *key = d->key[i];
		if (!key || !d->val[i])
			continue;
		/* iniparser names keys "section:key"; top-level ones ":key". */
		const char *colon = strchr(key, ':');
		size_t seclen = colon ? (size_t)(colon - key) : 0;
		const char *name = colon ? colon + 1 : key;
		bool section_ok = seclen == 0 || (seclen == 5 && !strncmp(key, "cache", 5));
		int line = line_of_key(text.data, name);
		int s = find_setting(name);
		if ((!section_ok || s < 0) && !strict) {
			add_note(cfg, "cjc: %s:%d: ignoring an unknown setting: " UNTRUSTED "\n", path, line);
			continue;
		}
		if (!section_ok || s < 0) {
			if (unknown_key(cfg, path, line, trusted ? (seclen ? key : name) : NULL, name,
					error))
				rc = -1;
			continue;
		}
		if (!settings[s].foreign_ok && !trusted) {
			refuse(cfg, path, line, settings[s].name);
			continue;
		}
		char *origin = cjc_xasprintf("%s:%d", path, line);
		if (!apply(cfg, s, d->val[i], cjc_xstrdup(origin)))
			;
		else if (strict && refused(cfg, s, trusted ? d->val[i] : NULL, origin, error))
			rc = -1;
		else if (!strict)
			add_note(cfg, "cjc: %s:%d: ignoring a bad value for %s: " UNTRUSTED "\n",
				 path, line, settings[s].name);
		free(origin);
	}
	iniparser_freedict(d);
	cjc_buf_release(&text);
	return rc;
}

/* $XDG_CACHE_HOME/cudajitcache, else $HOME/.cache/cudajitcache; without
 * HOME (root under env -i, a systemd unit, an entrypoint), the user's home
 * directory from the password database, never a shared one such as /tmp
 * that another user could have made first: and without that, no store
 * (empty, which cjc_store_open refuses, saying so). */
static char *default_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg && *xdg)
		return cjc_path_join(xdg, "cudajitcache");
	const char *home = getenv("HOME");
	if (!home || !*home) {
		struct passwd *pw = getpwuid(geteuid());
		home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
	}
	return home ? cjc_xasprintf("%s/.cache/cudajitcache", home) : cjc_xstrdup("");
}

static void set_defaults(struct cjc_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	char *dir = default_dir();
	for (int s = 0; s < CJC_SET_COUNT; s++) {
		const char *text = settings[s].def ? settings[s].def : dir;
		settings[s].parse(text, (char *)cfg + settings[s].offset);
		set_origin(cfg, s, text, cjc_xstrdup("default"));
	}
	free(dir);
}

/* Variables read elsewhere, or by the JIT library (which says its own). */
static bool other_variable(const char *name)
{
	static const char *const others[] = { "CJC_CONFIG", "CJC_NVRTC_SHIM_DIR", "CJC_SHIM_DIR" };
	for (size_t i = 0; i < sizeof others / sizeof *others; i++)
		if (!strcmp(name, others[i]))
			return true;
	return cjc_starts_with(name, "CJC_JIT_");
}

/* A CJC_* variable one or two letters off a setting's (CJC_MAX_SIZ): said,
 * counted and ignored, or -1 when the setting it is near fails closed.
 * Others (CJC_* names a build uses for its own ends) are left alone. */
static int misspelt_variables(struct cjc_config *cfg, struct cjc_buf *error)
{
	extern char **environ;
	const char *envs[CJC_SET_COUNT + 1];
	for (int s = 0; s < CJC_SET_COUNT; s++)
		envs[s] = settings[s].env;
	envs[CJC_SET_COUNT] = "CJC_CONFIG";
	int rc = 0;
	for (char **e = environ; e && *e; e++) {
		if (!cjc_starts_with(*e, "CJC_"))
			continue;
		char *name = cjc_xstrndup(*e, strcspn(*e, "="));
		bool known = false;
		for (int s = 0; s < CJC_SET_COUNT + 1; s++)
			known = known || !strcmp(envs[s], name);
		const char *near = known || other_variable(name) ? NULL :
				   cjc_did_you_mean(name, envs, CJC_SET_COUNT + 1);
		if (near) {
			int s = -1;
			for (int k = 0; k < CJC_SET_COUNT; k++)
				if (!strcmp(envs[k], near))
					s = k;
			char *bad = cjc_xasprintf("%s (unknown)", name);
			add_bad(cfg, bad);
			free(bad);
			if (s >= 0 && decides_trust(s)) {
				cjc_buf_addf(error, "cjc: environment variable %s is not a setting (did you "
					     "mean %s?): it may be meant to decide trust\n", name, near);
				rc = -1;
			} else {
				add_note(cfg, "cjc: environment variable %s is not a setting (did you mean "
					 "%s?); ignored\n", name, near);
			}
		}
		free(name);
	}
	return rc;
}

int cjc_config_load(struct cjc_config *cfg, struct cjc_buf *error)
{
	int rc = 0;
	set_defaults(cfg);
	if (load_file(cfg, "/etc/cudajitcache.conf", false, true, error))
		rc = -1;
	const char *file = getenv("CJC_CONFIG");
	const char *env_dir = getenv("CJC_DIR");
	if (file && !*file) {
		cjc_buf_adds(error, "cjc: environment variable CJC_CONFIG is empty: unset it or name a file\n");
		add_bad(cfg, "CJC_CONFIG");
		rc = -1;
	}
	char *path = file && *file ? cjc_xstrdup(file)
		: cjc_path_join(env_dir && *env_dir ? env_dir : cfg->dir, "cudajitcache.conf");
	/* The store's file is read without following a link (read_settings). */
	if (load_file(cfg, path, file && *file, file && *file, error))
		rc = -1;
	cfg->file = path;
	for (int s = 0; s < CJC_SET_COUNT; s++) {
		const char *v = getenv(settings[s].env);
		/* empty means unset, except where empty is a value or the setting is the store */
		if (!v || (!*v && s != CJC_SET_LOG && s != CJC_SET_REMOTE && s != CJC_SET_BASE_DIR &&
			   s != CJC_SET_DIR))
			continue;
		char *origin = cjc_xasprintf("environment variable %s", settings[s].env);
		if (apply(cfg, s, v, cjc_xstrdup(origin)) && refused(cfg, s, v, origin, error))
			rc = -1;
		free(origin);
	}
	if (misspelt_variables(cfg, error))
		rc = -1;
	return rc;
}

int cjc_config_find(const char *name)
{
	return find_setting(name);
}

int cjc_config_check_value(enum cjc_setting s, const char *text, struct cjc_buf *why)
{
	struct cjc_config scratch;
	memset(&scratch, 0, sizeof scratch);
	const struct setting_def *d = &settings[s];
	if (has_control(text)) {
		cjc_buf_adds(why, "expected " CONTROL_CHARACTERS);
		return -1;
	}
	int rc = d->parse(text, (char *)&scratch + d->offset);
	if (rc && s == CJC_SET_REMOTE)
		cjc_remote_check_setting(text, why);
	else if (rc)
		cjc_buf_addf(why, "expected %s", d->expect);
	if (owns_string(d))
		free(*(char **)((char *)&scratch + d->offset));
	return rc;
}

char *cjc_config_shown_rejected(enum cjc_setting s, const char *text)
{
	char *redacted = secret(&settings[s]) ? cjc_remote_redact_rejected(text) : NULL;
	char *shown = cjc_printable(redacted ? redacted : text);
	free(redacted);
	return shown;
}

void cjc_config_count_in(const struct cjc_config *cfg, const struct cjc_store *store)
{
	if (!cfg->bad.n)
		return;
	uint64_t delta[CJC_STAT_COUNT] = { 0 };
	delta[CJC_STAT_BAD_SETTINGS] = 1;
	if (cjc_stats_add(store, delta))
		cjc_log("cannot count the broken settings: %s", strerror(errno));
	for (size_t i = 0; i < cfg->bad.n; i++)
		(void)cjc_stats_add_named(store, CJC_STATS_BY_SETTING, cfg->bad.v[i], delta);
}

void cjc_config_count(const struct cjc_config *cfg)
{
	struct cjc_store store;
	/* disable: nvcc runs without touching the store, counters included */
	if (!cfg->bad.n || cfg->disable || !cfg->dir || !*cfg->dir || cjc_store_open(&store, cfg->dir))
		return;
	cjc_config_count_in(cfg, &store);
	cjc_store_close(&store);
}

void cjc_config_release(struct cjc_config *cfg)
{
	free(cfg->notes);
	free(cfg->remote_problem);
	free(cfg->file);
	cjc_strvec_clear(&cfg->bad);
	for (int s = 0; s < CJC_SET_COUNT; s++) {
		if (owns_string(&settings[s]))
			free(*(char **)((char *)cfg + settings[s].offset));
		free(cfg->text[s]);
		free(cfg->origin[s]);
	}
	memset(cfg, 0, sizeof *cfg);
}
