/*
 * metadata.h - metadata.json, the record of how an entry was built.
 *
 * One JSON object (docs/metadata.md), written before publication, read strictly:
 *
 *   format         "cudajitcache.entry.v1", exactly
 *   key            the entry's key, 64 lowercase hex, equal to its directory name
 *   created        RFC 3339 UTC time, e.g. "2026-11-30T10:52:38Z"
 *   files          object, artifact name -> {"size": positive integer,
 *                  "sha256": 64 lowercase hex}; names are [A-Za-z0-9._-],
 *                  at most 64 bytes, not "metadata.json", not starting with '.'.
 *                  size and sha256 are the artifact's own bytes.  A record
 *                  with "zstd": {"size", "sha256"} (the same types) is of an
 *                  artifact stored as one zstd frame: the file holds that
 *                  many bytes, hashing to that sha256, and decompresses to
 *                  the artifact (store.h).  Without it, the file is the
 *                  artifact itself (every entry written before compression)
 *   command        the compile as one shell-quoted line
 *   argv           the same as an array of strings
 *   cwd            the working directory of the compile
 *   base_dir       (optional) the base_dir setting, when set (place.h)
 *   hash_dir       (optional) false when the hash_dir setting was false and
 *                  the output records directories (-g, -G, -lineinfo) the
 *                  key does not hold: debug paths name the cwd recorded here
 *   command_run    (optional) when base_dir rewrote paths: the command as
 *   argv_run       nvcc ran it (paths under base_dir relative to cwd), with
 *                  -o and the output, less the dependency-file options cjc
 *                  handles itself
 *   compiler       {"path", "realpath", "version"} of nvcc
 *   host_compiler  {"path", "version"}
 *   options        the parsed compile: kind, archs, defines, include_dirs, std,
 *                  optimize, debug, line_info, fast_math, rdc, extra
 *   inputs         array of {"path", "sha256"}: the source and every dependency
 *   environment    object: the key-relevant variables that were set; one that
 *                  may hold a secret (key.h: NVCC_PREPEND_FLAGS,
 *                  NVCC_APPEND_FLAGS) as {"sha256": hex of its value}
 *   options_files  (optional) array of {"path", "sha256", "private"}: the
 *                  options files read; the words of a private one (others
 *                  cannot read it) are not listed in `options`
 *   target         the build-target label, or null
 *   tool           {"name": "cudajitcache", "version"}
 *   duration_ms    how long nvcc ran, a non-negative integer
 *   diagnostics    (optional) {"keep_ptx", "keep_sass", "check_spills"}: the
 *                  settings that shaped the entry (the tool's diagnostics.h);
 *                  kept files (kept-*.ptx, sass.txt) are listed in files
 *   jit            (optional) entries of the JIT library (docs/jit.md):
 *                  {"name": the request's file name (cjc_request_name_ok),
 *                  "source": the artifact holding the request's code
 *                  (CJC_JIT_SOURCE_FILE), "extra_signature" (optional),
 *                  "hook" (optional: the post-compile hook's identity)}.
 *                  The command names the source CJC_JIT_SOURCE_DIR/<name>,
 *                  where no file can be: the compile ran on a private copy.
 *                  nvcc's argv is `nvcc --cubin|--fatbin|--ptx -arch=...
 *                  OPTIONS... SOURCE`; NVRTC's is `nvrtc OPTIONS... SOURCE`,
 *                  its compiler the library it loaded (version "NVRTC M.N")
 *                  and its host_compiler path "none"
 *
 * Every path, command word, environment value and compiler string is a JSON
 * string when it is UTF-8, else {"bytes": "<hex>"} (cjc_json_bytes), so any
 * byte string round-trips (cjc_json_text); `command` stays one line of text,
 * a word that is not UTF-8 spelling its other bytes with printf.
 *
 * cjc_metadata_format() builds the document; cjc_metadata_parse() checks one
 * and returns the parsed object (json_decref() it) or NULL with the reason in
 * `why`.  Nothing is served from an entry whose metadata fails the check.
 */
#ifndef CJC_METADATA_H
#define CJC_METADATA_H

#include <jansson.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"
#include "keys/manifest.h"

#define CJC_ENTRY_FORMAT "cudajitcache.entry.v1"

/* JIT entries: where their command names the source, and the artifact that
 * holds it (above, "jit"). */
#define CJC_JIT_SOURCE_DIR "/dev/null/jit"
#define CJC_JIT_SOURCE_FILE "source.cu"

struct cjc_artifact {
	char *name;
	uint64_t size;                /* of the artifact's own bytes, */
	char sha256[CJC_HEX_LEN + 1]; /* and their hash */
	/* Stored zstd-compressed in stored_size bytes hashing to stored_sha256;
	 * 0: stored as it is. */
	uint64_t stored_size;
	char stored_sha256[CJC_HEX_LEN + 1];
};

/* The size of the file that holds a, and its hash: what a remote store
 * keeps it by (remote.h). */
uint64_t cjc_artifact_stored_size(const struct cjc_artifact *a);
const char *cjc_artifact_stored_sha(const struct cjc_artifact *a);

struct cjc_metadata {
	const char *key;
	char *const *argv;
	size_t argc;
	const char *cwd;
	const char *base_dir;     /* or NULL */
	bool dirs_shared;         /* hash_dir false applied (place.h): "hash_dir": false */
	char *const *argv_run;    /* or NULL: the command ran as given */
	size_t argc_run;
	const char *compiler_path;
	const char *compiler_realpath;
	const char *compiler_version;
	const char *host_path;
	const char *host_version;
	json_t *options; /* borrowed */
	const struct cjc_dep *inputs;
	size_t ninputs;
	char *const *environment; /* "NAME=value" */
	size_t nenvironment;
	const char *target; /* or NULL */
	int64_t duration_ms;
	const struct cjc_artifact *files;
	size_t nfiles;
	json_t *diagnostics; /* borrowed, or NULL */
	json_t *options_files; /* borrowed, or NULL */
	json_t *jit; /* borrowed, or NULL: a JIT request's own facts (docs/metadata.md) */
};

/* doc, when not NULL, gets the document itself (json_decref it). */
int cjc_metadata_format(const struct cjc_metadata *md, struct cjc_buf *out, json_t **doc);
/* expected_key may be NULL to skip the key comparison. */
json_t *cjc_metadata_parse(const char *text, size_t len, const char *expected_key,
			   struct cjc_buf *why);
/* The artifacts of a parsed document, in name order; free with cjc_artifacts_free(). */
struct cjc_artifact *cjc_metadata_artifacts(json_t *root, size_t *n);
void cjc_artifacts_free(struct cjc_artifact *a, size_t n);
bool cjc_artifact_name_ok(const char *name);
/* A JIT request's name: a file name nvcc takes as CUDA source (ends in .cu;
 * letters, digits and ._-+; not starting with '.'; at most 128 bytes). */
bool cjc_request_name_ok(const char *name);
/* The environment as recorded: "NAME=value" strings to an object, private
 * values by their SHA-256 (key.h). */
json_t *cjc_environment_json(char *const *env, size_t n);
/* A string as JSON: a string when it is UTF-8, else {"bytes": "<hex>"}. */
json_t *cjc_json_bytes(const char *s);
/* The bytes of either form (malloc'd), or NULL when v is neither. */
char *cjc_json_text(json_t *v);
/* Either form for a terminal (cjc_printable), or `none` when v is neither (malloc'd):
 * CJC_JSON_NOT_TEXT where a string belongs. */
#define CJC_JSON_NOT_TEXT "(invalid: not a string)"
char *cjc_json_shown(json_t *v, const char *none);
/* A time in seconds since the epoch, and the current time, as RFC 3339 UTC
 * (years past 9999 wrap). */
void cjc_rfc3339(int64_t t, char out[32]);
void cjc_rfc3339_now(char out[32]);

#endif
