#include "keys/metadata.h"

#include "keys/key.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The civil date of a day counted from 1970-01-01 (Howard Hinnant's
 * days_from_civil, inverted): gmtime_r would do, but glibc's reads the time
 * zone on its first call (tzset), a file read that a JIT's first request
 * would pay for a UTC stamp. */
static void civil(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
	days += 719468;
	int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	unsigned doe = (unsigned)(days - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void cjc_rfc3339(int64_t t, char out[32])
{
	int64_t secs = t % 86400, y;
	unsigned m, d;
	if (secs < 0)
		secs += 86400;
	civil((t - secs) / 86400, &y, &m, &d);
	snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02uZ", (unsigned)(y % 10000), m, d,
		 (unsigned)(secs / 3600), (unsigned)(secs / 60 % 60), (unsigned)(secs % 60));
}

void cjc_rfc3339_now(char out[32])
{
	cjc_rfc3339((int64_t)time(NULL), out);
}

json_t *cjc_json_bytes(const char *s)
{
	json_t *text = json_string(s);
	if (text)
		return text;
	size_t n = strlen(s);
	char *hex = cjc_xmalloc(2 * n + 1);
	cjc_hex((const unsigned char *)s, n, hex);
	json_t *o = json_pack("{s:s}", "bytes", hex);
	free(hex);
	return o;
}

char *cjc_json_text(json_t *v)
{
	if (json_is_string(v))
		return cjc_xstrdup(json_string_value(v));
	const char *hex = json_string_value(json_object_get(v, "bytes"));
	size_t n = hex ? strlen(hex) : 1;
	if (!json_is_object(v) || json_object_size(v) != 1 || n % 2)
		return NULL;
	char *s = cjc_xmalloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		unsigned byte;
		if (sscanf(hex + 2 * i, "%2x", &byte) != 1 || !byte) {
			free(s);
			return NULL;
		}
		s[i] = (char)byte;
	}
	s[n / 2] = '\0';
	return s;
}

char *cjc_json_shown(json_t *v, const char *none)
{
	char *text = cjc_json_text(v);
	char *shown = cjc_printable(text ? text : none);
	free(text);
	return shown;
}

static bool is_text(json_t *v)
{
	if (json_is_string(v)) /* all but bytes that are not UTF-8: no copy */
		return true;
	char *s = cjc_json_text(v);
	bool text = s != NULL;
	free(s);
	return text;
}

static json_t *str_or_null(const char *s)
{
	return s ? cjc_json_bytes(s) : json_null();
}

static json_t *string_array(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, cjc_json_bytes(v[i]));
	return a;
}

/* The command as one line for sh: a word that is not UTF-8 gets its other
 * bytes from printf, so the line is text and still pastes. */
static void quote_command(struct cjc_buf *out, char *const *argv, size_t argc)
{
	for (size_t i = 0; i < argc; i++) {
		json_t *text = json_string(argv[i]);
		cjc_buf_adds(out, i ? " " : "");
		if (text) {
			cjc_shell_quote(out, argv + i, 1);
			json_decref(text);
			continue;
		}
		cjc_buf_adds(out, "'");
		for (const unsigned char *s = (const unsigned char *)argv[i]; *s; s++) {
			if (*s >= 0x80 || *s < 0x20)
				cjc_buf_addf(out, "'\"$(printf '\\%03o')\"'", *s);
			else if (*s == '\'')
				cjc_buf_adds(out, "'\\''");
			else
				cjc_buf_add(out, s, 1);
		}
		cjc_buf_adds(out, "'");
	}
}

static json_t *inputs_json(const struct cjc_dep *deps, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		char hex[CJC_HEX_LEN + 1];
		cjc_hex(deps[i].sha, CJC_DIGEST_LEN, hex);
		json_array_append_new(a, json_pack("{s:o, s:s}", "path", cjc_json_bytes(deps[i].path),
						   "sha256", hex));
	}
	return a;
}

json_t *cjc_environment_json(char *const *env, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(env[i], '=');
		const char *value = eq ? eq + 1 : "";
		char *name = cjc_xstrndup(env[i], eq ? (size_t)(eq - env[i]) : strlen(env[i]));
		char hex[CJC_HEX_LEN + 1];
		cjc_hash_buf_hex(value, strlen(value), hex);
		json_object_set_new(o, name, cjc_key_env_private(name) ? json_pack("{s:s}", "sha256", hex)
								     : cjc_json_bytes(value));
		free(name);
	}
	return o;
}

static json_t *files_json(const struct cjc_artifact *files, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_pack("{s:I, s:s}", "size", (json_int_t)files[i].size, "sha256",
				      files[i].sha256);
		if (files[i].stored_size)
			json_object_set_new(f, "zstd",
					    json_pack("{s:I, s:s}", "size",
						      (json_int_t)files[i].stored_size, "sha256",
						      files[i].stored_sha256));
		json_object_set_new(o, files[i].name, f);
	}
	return o;
}

int cjc_metadata_format(const struct cjc_metadata *md, struct cjc_buf *out, json_t **doc)
{
	char created[32];
	struct cjc_buf command = CJC_BUF_INIT;
	cjc_rfc3339_now(created);
	quote_command(&command, md->argv, md->argc);
	json_t *root = json_object();
	json_object_set_new(root, "format", json_string(CJC_ENTRY_FORMAT));
	json_object_set_new(root, "key", json_string(md->key));
	json_object_set_new(root, "created", json_string(created));
	json_object_set_new(root, "files", files_json(md->files, md->nfiles));
	json_object_set_new(root, "command", json_string(command.data));
	json_object_set_new(root, "argv", string_array(md->argv, md->argc));
	json_object_set_new(root, "cwd", cjc_json_bytes(md->cwd));
	if (md->base_dir)
		json_object_set_new(root, "base_dir", cjc_json_bytes(*md->base_dir ? md->base_dir : "/"));
	if (md->dirs_shared)
		json_object_set_new(root, "hash_dir", json_false());
	if (md->argv_run) {
		cjc_buf_reset(&command);
		quote_command(&command, md->argv_run, md->argc_run);
		json_object_set_new(root, "command_run", json_string(command.data));
		json_object_set_new(root, "argv_run", string_array(md->argv_run, md->argc_run));
	}
	json_object_set_new(root, "compiler", json_pack("{s:o, s:o, s:o}", "path",
		cjc_json_bytes(md->compiler_path), "realpath", cjc_json_bytes(md->compiler_realpath),
		"version", cjc_json_bytes(md->compiler_version)));
	json_object_set_new(root, "host_compiler", json_pack("{s:o, s:o}", "path",
		cjc_json_bytes(md->host_path), "version", cjc_json_bytes(md->host_version)));
	json_object_set_new(root, "options", md->options ? json_incref(md->options) : json_object());
	json_object_set_new(root, "inputs", inputs_json(md->inputs, md->ninputs));
	json_object_set_new(root, "environment", cjc_environment_json(md->environment, md->nenvironment));
	if (md->options_files)
		json_object_set(root, "options_files", md->options_files);
	json_object_set_new(root, "target", str_or_null(md->target));
	json_object_set_new(root, "tool", json_pack("{s:s, s:s}", "name", "cudajitcache",
		"version", CJC_VERSION));
	json_object_set_new(root, "duration_ms", json_integer(md->duration_ms));
	if (md->diagnostics)
		json_object_set(root, "diagnostics", md->diagnostics);
	if (md->jit)
		json_object_set(root, "jit", md->jit);
	cjc_buf_release(&command);
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (doc && text)
		*doc = root;
	else
		json_decref(root);
	if (!text)
		return -1;
	cjc_buf_adds(out, text);
	cjc_buf_add(out, "\n", 1);
	free(text);
	return 0;
}

bool cjc_artifact_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (!n || n > 64 || name[0] == '.' || !strcmp(name, "metadata.json") ||
	    !strcmp(name, "metadata.sig"))
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

bool cjc_request_name_ok(const char *name)
{
	size_t n = strlen(name);
	return n && n <= 128 && name[0] != '.' && cjc_ends_with(name, ".cu") &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+") == n;
}

static bool is_str(json_t *o, const char *k)
{
	return json_is_string(json_object_get(o, k));
}

static bool has_strings(json_t *o, const char *const *keys)
{
	if (!json_is_object(o))
		return false;
	for (; *keys; keys++)
		if (!is_str(o, *keys))
			return false;
	return true;
}

/* Fields that hold paths or command words: strings or {"bytes": hex}. */
static bool has_texts(json_t *o, const char *const *keys)
{
	if (!json_is_object(o))
		return false;
	for (; *keys; keys++)
		if (!is_text(json_object_get(o, *keys)))
			return false;
	return true;
}

/* Whether f holds a positive "size" and a hex "sha256" (the record of a
 * file's bytes); the reason it does not, or NULL. */
static const char *check_bytes(json_t *f)
{
	json_t *size = json_object_get(f, "size");
	json_t *sha = json_object_get(f, "sha256");
	if (!json_is_integer(size) || json_integer_value(size) <= 0)
		return "an artifact's 'size' is not a positive integer";
	if (!json_is_string(sha) || !cjc_is_hex64(json_string_value(sha)))
		return "an artifact's 'sha256' is not 64 lowercase hex digits";
	return NULL;
}

static const char *check_files(json_t *files)
{
	if (!json_is_object(files) || json_object_size(files) == 0)
		return "'files' is missing or empty";
	const char *name;
	json_t *f;
	json_object_foreach(files, name, f) {
		json_t *zstd = json_object_get(f, "zstd");
		const char *why = NULL;
		if (!cjc_artifact_name_ok(name))
			return "an artifact has an unsafe name";
		if (!json_is_object(f))
			return "an artifact's record is not an object";
		if ((why = check_bytes(f)))
			return why;
		if (zstd && !json_is_object(zstd))
			return "an artifact's 'zstd' is not an object";
		if (zstd && (why = check_bytes(zstd)))
			return why;
	}
	return NULL;
}

static const char *check_arrays(json_t *root)
{
	json_t *argv = json_object_get(root, "argv"), *v;
	size_t i;
	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return "'argv' is not a non-empty array";
	json_array_foreach(argv, i, v)
		if (!is_text(v))
			return "'argv' holds a non-string";
	json_t *inputs = json_object_get(root, "inputs");
	if (!json_is_array(inputs))
		return "'inputs' is not an array";
	static const char *const path[] = { "path", NULL }, *const sha[] = { "sha256", NULL };
	json_array_foreach(inputs, i, v)
		if (!has_texts(v, path) || !has_strings(v, sha))
			return "an input lacks 'path' or 'sha256'";
	return NULL;
}

static const char *check(json_t *root, const char *expected_key)
{
	static const char *const top[] = { "format", "key", "created", "command", NULL };
	static const char *const cwd[] = { "cwd", NULL };
	static const char *const compiler[] = { "path", "realpath", "version", NULL };
	static const char *const host[] = { "path", "version", NULL };
	static const char *const tool[] = { "name", "version", NULL };
	if (!json_is_object(root))
		return "not a JSON object";
	if (!has_strings(root, top) || !has_texts(root, cwd))
		return "a required string field (format, key, created, command, cwd) is missing";
	if (strcmp(json_string_value(json_object_get(root, "format")), CJC_ENTRY_FORMAT))
		return "unknown 'format' (not " CJC_ENTRY_FORMAT ")";
	const char *key = json_string_value(json_object_get(root, "key"));
	if (!cjc_is_hex64(key) || (expected_key && strcmp(key, expected_key)))
		return "'key' does not match the entry";
	const char *why = check_files(json_object_get(root, "files"));
	if (!why)
		why = check_arrays(root);
	if (why)
		return why;
	if (!has_texts(json_object_get(root, "compiler"), compiler) ||
	    !has_texts(json_object_get(root, "host_compiler"), host) ||
	    !has_strings(json_object_get(root, "tool"), tool))
		return "'compiler', 'host_compiler' or 'tool' is incomplete";
	if (!json_is_object(json_object_get(root, "options")) ||
	    !json_is_object(json_object_get(root, "environment")))
		return "'options' or 'environment' is not an object";
	json_t *target = json_object_get(root, "target");
	if (!is_text(target) && !json_is_null(target))
		return "'target' is neither a string nor null";
	json_t *d = json_object_get(root, "duration_ms");
	if (!json_is_integer(d) || json_integer_value(d) < 0)
		return "'duration_ms' is not a non-negative integer";
	return NULL;
}

json_t *cjc_metadata_parse(const char *text, size_t len, const char *expected_key,
			   struct cjc_buf *why)
{
	json_error_t err;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!root) {
		cjc_buf_addf(why, "metadata.json is not valid JSON (line %d: %s)", err.line, err.text);
		return NULL;
	}
	const char *problem = check(root, expected_key);
	if (problem) {
		cjc_buf_addf(why, "metadata.json: %s", problem);
		json_decref(root);
		return NULL;
	}
	return root;
}

static int cmp_artifact(const void *a, const void *b)
{
	return strcmp(((const struct cjc_artifact *)a)->name, ((const struct cjc_artifact *)b)->name);
}

/* How an artifact is stored, from its checked record's "zstd" (or NULL). */
static void stored_as(json_t *zstd, struct cjc_artifact *a)
{
	if (!zstd)
		return;
	a->stored_size = (uint64_t)json_integer_value(json_object_get(zstd, "size"));
	memcpy(a->stored_sha256, json_string_value(json_object_get(zstd, "sha256")),
	       CJC_HEX_LEN + 1);
}

struct cjc_artifact *cjc_metadata_artifacts(json_t *root, size_t *n)
{
	json_t *files = json_object_get(root, "files"), *f;
	const char *name;
	struct cjc_artifact *a = cjc_xcalloc(json_object_size(files) + 1, sizeof *a);
	*n = 0;
	json_object_foreach(files, name, f) {
		a[*n].name = cjc_xstrdup(name);
		a[*n].size = (uint64_t)json_integer_value(json_object_get(f, "size"));
		memcpy(a[*n].sha256, json_string_value(json_object_get(f, "sha256")), CJC_HEX_LEN + 1);
		stored_as(json_object_get(f, "zstd"), &a[*n]);
		(*n)++;
	}
	qsort(a, *n, sizeof *a, cmp_artifact);
	return a;
}

uint64_t cjc_artifact_stored_size(const struct cjc_artifact *a)
{
	return a->stored_size ? a->stored_size : a->size;
}

const char *cjc_artifact_stored_sha(const struct cjc_artifact *a)
{
	return a->stored_size ? a->stored_sha256 : a->sha256;
}

void cjc_artifacts_free(struct cjc_artifact *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(a[i].name);
	free(a);
}
