/*
 * config.h - the effective settings and where each came from.
 *
 * Sources, strongest first: the environment (CJC_*), the file named by
 * $CJC_CONFIG (else $CJC_DIR/cudajitcache.conf), /etc/cudajitcache.conf, and
 * the defaults.  Files are INI (iniparser): `key = value` at the top or in a
 * [cache] section.  Every setting is one row of the table in config.c: name,
 * environment variable, parser, field, default, what a value must look like,
 * whether a file of someone else's may set it, and its help; `cjc config`,
 * `cjc --help` and the README's table (checked by a test) come from it.  A
 * new setting is a new enum value, a field below and a row there.
 *
 * cjc_config_load() always leaves a usable configuration (a bad value keeps
 * the weaker source's value).  What is malformed is judged by what it could
 * do (docs/settings.md#mistakes):
 *
 *   - an unknown setting (in a file yours or root's, or a CJC_* variable one
 *     or two letters off a setting's), or a bad value of a setting that
 *     cannot weaken trust, is a warning in `notes` ("did you mean" where a
 *     setting is near) and is ignored: the weaker value stands and the
 *     cache goes on;
 *   - a bad `remote` turns the remote stores off (remote = ""), a warning
 *     too, with why in remote_problem: the local store goes on;
 *   - a bad value of a setting that decides trust or where writes go with
 *     whose permissions (sign_key, trusted_keys, umask), an unknown name
 *     one or two letters off such a setting, a syntax error in a file, or a
 *     $CJC_CONFIG that cannot be read (it may set trust) fails closed: the
 *     function returns -1 and `error` holds one message per problem, each
 *     naming the variable or the file and line.  The caller decides the
 *     policy: for a compile, compiling without the cache.
 *
 * Either way the name of each broken setting is in `bad` (as shown: a
 * setting's name, or "NAME (unknown)"), for cjc_config_count() to count in
 * the store (stats.h: bad_settings and the stats/settings breakdown), so
 * `cjc stats`, the report and the metrics say the cache ran with it.
 *
 * A file that is not owned by this user or root, or that others can write
 * (a store's cudajitcache.conf in a shared store), may set only an
 * allowlist (docs/trust.md): what can neither run a program, nor direct a
 * write, nor decide what is trusted or whether a build fails (disable,
 * readonly, debug, max_size, print_commands, keep_ptx).  Any other setting
 * there (dir, log, umask, remote, keep_sass, which runs cuobjdump,
 * check_spills, base_dir, sign_key, trusted_keys, hash_dir, lease_wait,
 * remote_only, remote_helper, and any added later) is
 * ignored and `notes` says so, naming the file, line and setting, once; the
 * compile goes on.  Files are read without blocking (a FIFO is an error)
 * and only up to 1 MiB.  A trusted file is also a regular file with one
 * name (not a member's hard link to a file of root's).  The store's file is
 * opened without following a link (a link there is ignored, with a note);
 * $CJC_CONFIG's and /etc's are the user's and root's choice and may be
 * links.  Problems in a file that is not trusted, other than the one
 * $CJC_CONFIG names (unreadable, a syntax error, an unknown setting, a bad
 * value) are notes, not errors: a member cannot fail root's compile or
 * cjc_jit_open.  No message echoes text from a file that is not trusted.
 *
 * A value with a control character (C0 or DEL) is bad whatever the
 * setting, and judged as any other bad value of it (a note, remote off, or
 * fail closed); no message shows such a character raw.
 *
 * A setting that may hold a secret (remote) is shown with each URL's user
 * info as *** (cjc_remote_redact), and a value of it that is rejected shows
 * no more than its schemes: the message never echoes it whole.
 */
#ifndef CJC_CONFIG_H
#define CJC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

enum cjc_setting {
	CJC_SET_DIR,
	CJC_SET_DISABLE,
	CJC_SET_READONLY,
	CJC_SET_LOG,
	CJC_SET_DEBUG,
	CJC_SET_MAX_SIZE,
	CJC_SET_REMOTE,
	CJC_SET_UMASK,
	CJC_SET_PRINT_COMMANDS,
	CJC_SET_KEEP_PTX,
	CJC_SET_KEEP_SASS,
	CJC_SET_CHECK_SPILLS,
	CJC_SET_BASE_DIR,
	CJC_SET_SIGN_KEY,
	CJC_SET_TRUSTED_KEYS,
	CJC_SET_HASH_DIR,
	CJC_SET_LEASE_WAIT,
	CJC_SET_REMOTE_ONLY,
	CJC_SET_REMOTE_HELPER,
	CJC_SET_VERIFY_RATE,
	CJC_SET_COMPRESSION_LEVEL,
	CJC_SET_WATCHER,
	CJC_SET_COUNT
};

struct cjc_config {
	char *dir;
	bool disable;
	bool readonly;
	char *log;
	bool debug;
	uint64_t max_size; /* bytes; 0: no limit */
	char *remote;
	int umask; /* for files in the store, so a group can share it; -1: inherit */
	/* Diagnostics: print each real nvcc command; keep ptx / SASS in entries;
	 * fail a compile whose kernels spill or use local memory. */
	bool print_commands;
	bool keep_ptx;
	bool keep_sass;
	bool check_spills;
	/* Absolute paths under it are rewritten relative to the working directory
	 * (place.h); normalised, "" for /; NULL when unset. */
	char *base_dir;
	/* Signed entries (sign.h): the private key file to sign with, the file
	 * of public keys a remote entry must be signed by; NULL when unset. */
	char *sign_key;
	char *trusted_keys;
	/* false: with -g, -G or -lineinfo, the directories the output records
	 * (the working directory, a checkout under base_dir) are not keyed, so
	 * checkouts share entries whose debug paths name the one that compiled
	 * it (place.h: share_dirs); ccache's hash_dir. */
	bool hash_dir;
	/* Leases (lease.h): the longest a miss waits for another compile of its
	 * key when no compile of it is recorded, in seconds; 0: no leases. */
	int64_t lease_wait;
	/* With a remote store: entries are neither looked up in nor written to
	 * the local store, only in the remote ones (ccache's remote_only). */
	bool remote_only;
	/* `cjc nvcc` asks http, https and s3 stores through a helper process
	 * (remote/helper.h) unless a store says no-helper; false: none does. */
	bool remote_helper;
	/* The fraction of hits compiled again after they were served and
	 * compared with the entry (tool/verify.h); 0: none. */
	double verify_rate;
	/* zstd level of the artifacts published (store.h); 0: stored as they are. */
	int compression_level;
	/* `cjc nvcc` asks the watching helper (watcher.h) whether a record's
	 * files changed, starting it where none lives; false: it stats. */
	bool watcher;
	/* Settings ignored because the file that set them is not trusted and
	 * they are not on the allowlist (docs/trust.md): messages to show, or NULL. */
	char *notes;
	/* The settings file read after /etc's: $CJC_CONFIG, else the store's
	 * cudajitcache.conf (what `cjc config set` writes). */
	char *file;
	/* Broken settings (above): their names, and what was wrong with remote. */
	struct cjc_strvec bad;
	char *remote_problem;
	/* For `cjc config`: the text of each value and where it came from. */
	char *text[CJC_SET_COUNT];
	char *origin[CJC_SET_COUNT];
};

int cjc_config_load(struct cjc_config *cfg, struct cjc_buf *error);
void cjc_config_release(struct cjc_config *cfg);
const char *cjc_config_name(enum cjc_setting s);
const char *cjc_config_env(enum cjc_setting s);
const char *cjc_config_help(enum cjc_setting s);
/* "20G", "1.5G", "512M", "512MiB", "4096B", "4096" -> bytes (K, M, G, T:
 * powers of 1024, with or without "iB"/"B"); returns 0 or -1.  A bare
 * number is gibibytes, as in the max_size setting and in ccache ("20" is
 * 20G, "0" no limit); "B" alone is bytes. */
int cjc_parse_size(const char *text, uint64_t *out);
/* The setting a name means: its index, or -1. */
int cjc_config_find(const char *name);
/* Checks and normalises one value of a setting as `cjc config set` writes it:
 * 0, or -1 with why (the value as expected). */
int cjc_config_check_value(enum cjc_setting s, const char *text, struct cjc_buf *why);
/* A rejected value of a setting as a message may show it: a secret's no
 * more than its schemes (cjc_remote_redact_rejected), any other's with
 * its control characters escaped (cjc_printable); the caller frees it. */
char *cjc_config_shown_rejected(enum cjc_setting s, const char *text);
/* The one of n names within two letters of name (a misspelling), or NULL:
 * every "did you mean" (settings, variables, the JIT library's). */
const char *cjc_did_you_mean(const char *name, const char *const *known, size_t n);
/* Counts the broken settings of cfg (`bad`) in the store at cfg->dir, once
 * per call: bad_settings and one row per name (stats.h).  Nothing when none,
 * or with disable (which touches no store). */
void cjc_config_count(const struct cjc_config *cfg);
/* The same in an open store (the JIT library's, once per handle). */
struct cjc_store;
void cjc_config_count_in(const struct cjc_config *cfg, const struct cjc_store *store);
/* "7d", "12h", "30m", "45s", "100" (seconds) -> seconds; returns 0 or -1. */
int cjc_parse_age(const char *text, int64_t *out);

#endif
