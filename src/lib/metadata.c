#include "metadata.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void cjc_rfc3339_now(char out[32])
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *string_array(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *inputs_json(const struct cjc_dep *deps, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		char hex[CJC_HEX_LEN + 1];
		cjc_hex(deps[i].sha, CJC_DIGEST_LEN, hex);
		json_array_append_new(a, json_pack("{s:s, s:s}", "path", deps[i].path, "sha256", hex));
	}
	return a;
}

static json_t *environment_json(char *const *env, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(env[i], '=');
		char *name = cjc_xstrndup(env[i], eq ? (size_t)(eq - env[i]) : strlen(env[i]));
		json_object_set_new(o, name, json_string(eq ? eq + 1 : ""));
		free(name);
	}
	return o;
}

static json_t *files_json(const struct cjc_artifact *files, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, files[i].name,
				    json_pack("{s:I, s:s}", "size", (json_int_t)files[i].size,
					      "sha256", files[i].sha256));
	return o;
}

int cjc_metadata_format(const struct cjc_metadata *md, struct cjc_buf *out)
{
	char created[32];
	struct cjc_buf command = CJC_BUF_INIT;
	cjc_rfc3339_now(created);
	cjc_shell_quote(&command, md->argv, md->argc);
	json_t *root = json_object();
	json_object_set_new(root, "format", json_string(CJC_ENTRY_FORMAT));
	json_object_set_new(root, "key", json_string(md->key));
	json_object_set_new(root, "created", json_string(created));
	json_object_set_new(root, "files", files_json(md->files, md->nfiles));
	json_object_set_new(root, "command", json_string(command.data));
	json_object_set_new(root, "argv", string_array(md->argv, md->argc));
	json_object_set_new(root, "cwd", json_string(md->cwd));
	if (md->base_dir)
		json_object_set_new(root, "base_dir", json_string(*md->base_dir ? md->base_dir : "/"));
	if (md->argv_run) {
		cjc_buf_reset(&command);
		cjc_shell_quote(&command, md->argv_run, md->argc_run);
		json_object_set_new(root, "command_run", json_string(command.data));
		json_object_set_new(root, "argv_run", string_array(md->argv_run, md->argc_run));
	}
	json_object_set_new(root, "compiler", json_pack("{s:s, s:s, s:s}", "path", md->compiler_path,
		"realpath", md->compiler_realpath, "version", md->compiler_version));
	json_object_set_new(root, "host_compiler", json_pack("{s:s, s:s}", "path", md->host_path,
		"version", md->host_version));
	json_object_set_new(root, "options", md->options ? json_incref(md->options) : json_object());
	json_object_set_new(root, "inputs", inputs_json(md->inputs, md->ninputs));
	json_object_set_new(root, "environment", environment_json(md->environment, md->nenvironment));
	json_object_set_new(root, "target", str_or_null(md->target));
	json_object_set_new(root, "tool", json_pack("{s:s, s:s}", "name", "cudajitcache",
		"version", CJC_VERSION));
	json_object_set_new(root, "duration_ms", json_integer(md->duration_ms));
	if (md->diagnostics)
		json_object_set(root, "diagnostics", md->diagnostics);
	cjc_buf_release(&command);
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
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
	if (!n || n > 64 || name[0] == '.' || !strcmp(name, "metadata.json"))
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
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

static const char *check_files(json_t *files)
{
	if (!json_is_object(files) || json_object_size(files) == 0)
		return "'files' is missing or empty";
	const char *name;
	json_t *f;
	json_object_foreach(files, name, f) {
		json_t *size = json_object_get(f, "size");
		json_t *sha = json_object_get(f, "sha256");
		if (!cjc_artifact_name_ok(name))
			return "an artifact has an unsafe name";
		if (!json_is_object(f))
			return "an artifact's record is not an object";
		if (!json_is_integer(size) || json_integer_value(size) <= 0)
			return "an artifact's 'size' is not a positive integer";
		if (!json_is_string(sha) || !cjc_is_hex64(json_string_value(sha)))
			return "an artifact's 'sha256' is not 64 lowercase hex digits";
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
		if (!json_is_string(v))
			return "'argv' holds a non-string";
	json_t *inputs = json_object_get(root, "inputs");
	if (!json_is_array(inputs))
		return "'inputs' is not an array";
	static const char *const input_keys[] = { "path", "sha256", NULL };
	json_array_foreach(inputs, i, v)
		if (!has_strings(v, input_keys))
			return "an input lacks 'path' or 'sha256'";
	return NULL;
}

static const char *check(json_t *root, const char *expected_key)
{
	static const char *const top[] = { "format", "key", "created", "command", "cwd", NULL };
	static const char *const compiler[] = { "path", "realpath", "version", NULL };
	static const char *const host[] = { "path", "version", NULL };
	static const char *const tool[] = { "name", "version", NULL };
	if (!json_is_object(root))
		return "not a JSON object";
	if (!has_strings(root, top))
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
	if (!has_strings(json_object_get(root, "compiler"), compiler) ||
	    !has_strings(json_object_get(root, "host_compiler"), host) ||
	    !has_strings(json_object_get(root, "tool"), tool))
		return "'compiler', 'host_compiler' or 'tool' is incomplete";
	if (!json_is_object(json_object_get(root, "options")) ||
	    !json_is_object(json_object_get(root, "environment")))
		return "'options' or 'environment' is not an object";
	json_t *target = json_object_get(root, "target");
	if (!json_is_string(target) && !json_is_null(target))
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
		(*n)++;
	}
	qsort(a, *n, sizeof *a, cmp_artifact);
	return a;
}

void cjc_artifacts_free(struct cjc_artifact *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(a[i].name);
	free(a);
}
