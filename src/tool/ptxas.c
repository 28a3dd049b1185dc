/*
 * `cjc ptxas`: ptxas's command line read against one table, a key, the one
 * lookup (lookup.h) and the one publish (publish.h).  ptxas.h says what is
 * keyed and why.
 */
#include "ptxas.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/run.h"
#include "base/util.h"
#include "compile/config.h"
#include "compile/lookup.h"
#include "compile/publish.h"
#include "compile/why.h"
#include "keys/filehash.h"
#include "keys/key.h"
#include "keys/metadata.h"
#include "output.h"
#include "self.h"
#include "store/identity.h"
#include "store/journal.h"
#include "store/stats.h"
#include "store/store.h"

#define PTXAS_TARGET "ptxas"
#define PTXAS_ARTIFACT "output.cubin"
#define PTXAS_DEFAULT_OUTPUT "elf.o" /* where ptxas writes without -o */

/* What an option does to the key. */
enum rule {
	KEYED,       /* the word (and its value) is keyed */
	OUTPUT,      /* -o: where the cubin goes, keyed only with DEBUG */
	DEBUG,       /* -g: keyed; the cubin records the command line, names and all */
	QUERY,       /* answers a question; ptxas runs as given */
	UNCACHEABLE, /* reads what the key cannot see */
};

/* ptxas's options (ptxas --help, CUDA 13.0), by long name. */
static const struct option {
	const char *name, *abbrev;
	bool value;
	enum rule rule;
} options[] = {
	{ "Ofast-compile", "Ofc", true, KEYED },
	{ "allow-expensive-optimizations", "allow-expensive-optimizations", true, KEYED },
	{ "compile-as-tools-patch", "astoolspatch", false, KEYED },
	{ "compile-only", "c", false, KEYED },
	{ "compiler-annotations", "annotate", false, KEYED },
	{ "def-load-cache", "dlcm", true, KEYED },
	{ "def-store-cache", "dscm", true, KEYED },
	{ "device-debug", "g", false, DEBUG },
	{ "device-function-maxrregcount", "func-maxrregcount", true, KEYED },
	{ "device-stack-protector", "device-stack-protector", true, KEYED },
	{ "disable-optimizer-constants", "disable-optimizer-consts", false, KEYED },
	{ "disable-warnings", "w", false, KEYED },
	{ "dont-merge-basicblocks", "no-bb-merge", false, KEYED },
	{ "entry", "e", true, KEYED },
	{ "extensible-whole-program", "ewp", false, KEYED },
	{ "fmad", "fmad", true, KEYED },
	{ "force-load-cache", "flcm", true, KEYED },
	{ "force-store-cache", "fscm", true, KEYED },
	{ "g-tensor-memory-access-check", "g-tmem-access-check", false, KEYED },
	{ "generate-line-info", "lineinfo", false, KEYED },
	{ "gno-tensor-memory-access-check", "gno-tmem-access-check", false, KEYED },
	{ "gpu-name", "arch", true, KEYED },
	{ "help", "h", false, QUERY },
	{ "input-as-string", "ias", true, UNCACHEABLE },
	{ "legacy-bar-warp-wide-behavior", "legacy-bar-warp-wide-behavior", false, KEYED },
	{ "list-version", "version-ls", false, QUERY },
	{ "machine", "m", true, KEYED },
	{ "make-errors-visible-at-exit", "make-errors-visible-at-exit", false, KEYED },
	{ "maxntid", "maxntid", true, KEYED },
	{ "maxrregcount", "maxrregcount", true, KEYED },
	{ "minnctapersm", "minnctapersm", true, KEYED },
	{ "opt-level", "O", true, KEYED },
	{ "optimize-float-atomics", "opt-fp-atomics", false, KEYED },
	{ "options-file", "optf", true, UNCACHEABLE },
	{ "output-file", "o", true, OUTPUT },
	{ "override-directive-values", "override-directive-values", false, KEYED },
	{ "position-independent-code", "pic", true, KEYED },
	{ "preserve-relocs", "preserve-relocs", false, KEYED },
	{ "register-usage-level", "regUsageLevel", true, KEYED },
	{ "return-at-end", "ret-end", false, KEYED },
	{ "sanitize", "sanitize", true, KEYED },
	{ "sp-bounds-check", "sp-bounds-check", false, KEYED },
	{ "split-compile", "split-compile", true, KEYED },
	{ "suppress-async-bulk-multicast-advisory-warning",
	  "suppress-async-bulk-multicast-advisory-warning", false, KEYED },
	{ "suppress-debug-info", "suppress-debug-info", false, KEYED },
	{ "suppress-double-demote-warning", "suppress-double-demote-warning", false, KEYED },
	{ "suppress-sparse-mma-advisory-info", "suppress-sparse-mma-advisory-info", false, KEYED },
	{ "suppress-stack-size-warning", "suppress-stack-size-warning", false, KEYED },
	{ "verbose", "v", false, KEYED },
	{ "version", "V", false, QUERY },
	{ "warn-on-double-precision-use", "warn-double-usage", false, KEYED },
	{ "warn-on-local-memory-usage", "warn-lmem-usage", false, KEYED },
	{ "warn-on-spills", "warn-spills", false, KEYED },
	{ "warning-as-error", "Werror", false, KEYED },
};

/* One run of ptxas through the cache. */
struct ptxas_job {
	int argc;
	char **argv; /* argv[0] is the real ptxas once found */
	struct cjc_config cfg;
	struct cjc_store store;
	bool have_store;
	struct cjc_identity id;
	const char *input, *output;
	bool debug;
	bool query;
	const char *uncacheable;
	struct cjc_strvec key_args; /* the words keyed, in order */
	struct cjc_env env;
	struct cjc_strvec env_set; /* the keyed variables that are set, NAME=value */
	char cwd[PATH_MAX];
	unsigned char input_sha[CJC_DIGEST_LEN];
	uint64_t input_size;
	char direct_key[CJC_HEX_LEN + 1];
	char *lookup;   /* on a miss: what the lookup found */
	json_t *record; /* the journal's record (why.h) */
	mode_t user_umask;
};

bool cjc_ptxas_named(const char *name)
{
	return !strcmp(name, "ptxas") || cjc_starts_with(name, "ptxas-");
}

/* ---- the real ptxas ---- */

static char *beside(const char *dir, const char *name)
{
	return dir && *dir ? cjc_xasprintf("%s/%s", dir, name) : NULL;
}

/* The candidates (ptxas.h), each asked only when those before it are not
 * there: on a hit as on a miss, PATH is walked once where nvcc's directory
 * holds ptxas. */
static char *as_called(const char *called)
{
	return strchr(called, '/') ? cjc_xstrdup(called) : NULL;
}

static char *as_set(const char *called)
{
	(void)called;
	const char *setting = getenv("CJC_PTXAS");
	return setting && *setting ? cjc_xstrdup(setting) : NULL;
}

static char *in_home(const char *called)
{
	(void)called;
	return beside(getenv("CUDA_HOME"), "bin/ptxas");
}

static char *in_cuda_path(const char *called)
{
	(void)called;
	return beside(getenv("CUDA_PATH"), "bin/ptxas");
}

static char *beside_nvcc(const char *called)
{
	(void)called;
	char *nvcc = cjc_self_find_beyond("nvcc");
	char *dir = nvcc ? cjc_dirname(nvcc) : NULL;
	char *ptxas = beside(dir, "ptxas");
	free(nvcc);
	free(dir);
	return ptxas;
}

static char *on_path(const char *called)
{
	(void)called;
	return cjc_self_find_beyond("ptxas");
}

static char *in_toolkit(const char *called)
{
	(void)called;
	return cjc_xstrdup("/usr/local/cuda/bin/ptxas");
}

/* The candidates in order (ptxas.h), the first that is not cjc. */
static char *find_real(const char *called)
{
	static char *(*const candidates[])(const char *called) = {
		as_called, as_set, in_home, in_cuda_path, beside_nvcc, on_path, in_toolkit,
	};
	for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
		char *c = candidates[i](called);
		if (c && cjc_self_other(c))
			return c;
		free(c);
	}
	return NULL;
}

/* ---- the command line ---- */

static const struct option *find_option(const char *word, size_t len, bool abbrev)
{
	for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
		const char *name = abbrev ? options[i].abbrev : options[i].name;
		if (strlen(name) == len && !strncmp(name, word, len))
			return &options[i];
	}
	return NULL;
}

/* Reads one word (and its value, the next word unless given after '='):
 * the index of the next word. */
static int parse_word(struct ptxas_job *j, int i)
{
	const char *w = j->argv[i];
	if (w[0] != '-' || !w[1]) {
		if (j->input)
			j->uncacheable = "more than one input";
		j->input = w;
		return i + 1;
	}
	bool abbrev = w[1] != '-';
	const char *name = w + (abbrev ? 1 : 2);
	const char *eq = strchr(name, '=');
	const struct option *o = find_option(name, eq ? (size_t)(eq - name) : strlen(name), abbrev);
	if (!o && abbrev && name[0] == 'O' && name[1] >= '0' && name[1] <= '9' && !name[2]) {
		cjc_strvec_push(&j->key_args, w); /* -O3: a value ptxas takes joined */
		return i + 1;
	}
	if (!o || (eq && !o->value)) {
		j->uncacheable = "an option cjc does not know";
		return i + 1;
	}
	const char *value = eq ? eq + 1 : NULL;
	int next = i + 1;
	if (o->value && !eq) {
		if (next >= j->argc) {
			j->uncacheable = "an option without its value";
			return next;
		}
		value = j->argv[next++];
	}
	if (o->rule == QUERY)
		j->query = true;
	else if (o->rule == UNCACHEABLE)
		j->uncacheable = "an option names a file or text cjc does not key";
	else if (o->rule == OUTPUT)
		j->output = value;
	else if (o->rule == DEBUG)
		j->debug = true;
	if (o->rule == KEYED || o->rule == DEBUG)
		cjc_strvec_pushv(&j->key_args, j->argv + i, (size_t)(next - i));
	return next;
}

static void parse(struct ptxas_job *j)
{
	for (int i = 1; i < j->argc;)
		i = parse_word(j, i);
	if (!j->output)
		j->output = PTXAS_DEFAULT_OUTPUT;
	if (!j->input && !j->uncacheable)
		j->uncacheable = "no input";
	if (j->debug) { /* -g records the command line in the cubin: names keyed */
		cjc_strvec_push(&j->key_args, "--input-named");
		cjc_strvec_push(&j->key_args, j->input ? j->input : "");
		cjc_strvec_push(&j->key_args, "--output-named");
		cjc_strvec_push(&j->key_args, j->output);
	}
	struct stat st; /* a link too: a hit's rename would replace it */
	if (!j->uncacheable && !lstat(j->output, &st) && !S_ISREG(st.st_mode))
		j->uncacheable = "the output is not a regular file";
}

/* ---- counting and the journal ---- */

static void count(struct ptxas_job *j, enum cjc_counter what, uint64_t saved_ms)
{
	if (j->have_store &&
	    (cjc_stats_bump(&j->store, what, saved_ms) ||
	     cjc_stats_bump_named(&j->store, CJC_STATS_BY_TARGET, PTXAS_TARGET, what, saved_ms)))
		cjc_log("cannot update the counters: %s", strerror(errno));
}

/* Counted uncacheable, and under its reason (stats/uncacheable). */
static void count_uncacheable(struct ptxas_job *j, const char *reason)
{
	count(j, CJC_STAT_UNCACHEABLE, 0);
	if (j->have_store &&
	    cjc_stats_bump_named(&j->store, CJC_STATS_BY_REASON, reason, CJC_STAT_UNCACHEABLE, 0))
		cjc_log("cannot update the counters: %s", strerror(errno));
}

static void count_event(void *ctx, enum cjc_counter what, uint64_t saved_ms)
{
	count(ctx, what, saved_ms);
}

static void note(void *ctx, const char *line)
{
	(void)ctx;
	cjc_log("%s", line);
}

static void warn(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "cjc: %s\n", line);
}

static void record_start(struct ptxas_job *j, const char *result, const char *reason)
{
	json_decref(j->record);
	j->record = cjc_why_record(result, j->cwd[0] ? j->cwd : NULL, j->input, j->output,
				   PTXAS_TARGET);
	if (reason)
		json_object_set_new(j->record, "reason", cjc_json_bytes(reason));
	if (!j->id.digest[0])
		return;
	/* NVRTC's facts (words and a library, no host compiler), but ptxas
	 * reads the environment that nvcc's stages do */
	json_t *facts = cjc_why_facts_nvrtc(j->key_args.v, j->key_args.n, &j->id);
	json_object_set_new(facts, "compiler", json_string("ptxas"));
	json_object_set_new(facts, "env", cjc_environment_json(j->env_set.v, j->env_set.n));
	json_object_set_new(j->record, "facts", facts);
}

static void record_write(struct ptxas_job *j)
{
	if (j->record && j->have_store && cjc_journal_append(&j->store, j->record))
		cjc_log("cannot write the journal: %s", strerror(errno));
	json_decref(j->record);
	j->record = NULL;
}

/* Runs ptxas as given, replacing this process. */
static int run_uncached(struct ptxas_job *j, const char *why)
{
	if (why)
		cjc_log("running ptxas uncached: %s", why);
	record_write(j);
	if (j->cfg.umask >= 0)
		umask(j->user_umask);
	cjc_exec(j->argv);
	fprintf(stderr, "cjc: cannot run %s: %s\n", j->argv[0], strerror(errno));
	return 127;
}

/* ---- the key and the lookup ---- */

/* ptxas's identity: remembered while its binary keeps its stamp, else
 * worked out from its --version. */
static int identify(struct ptxas_job *j, struct cjc_buf *why)
{
	char real[PATH_MAX];
	if (!realpath(j->argv[0], real)) {
		cjc_buf_addf(why, "cannot resolve %s: %s", j->argv[0], strerror(errno));
		return -1;
	}
	if (!cjc_identity_library(&j->store, "ptxas", real, NULL, NULL, 0, &j->id))
		return 0;
	char *version_argv[] = { real, "--version", NULL };
	char *files[] = { real };
	struct cjc_buf version = CJC_BUF_INIT;
	int rc = cjc_run_capture(version_argv, &version) ? -1 : 0;
	if (!rc)
		rc = cjc_identity_library(&j->store, "ptxas", real,
					  version.data ? version.data : "", files, 1, &j->id);
	if (rc)
		cjc_buf_addf(why, "cannot identify %s", real);
	cjc_buf_release(&version);
	return rc;
}

static int direct_key(struct ptxas_job *j, struct cjc_buf *why)
{
	struct cjc_key_input in = {
		.kind = "ptxas",
		.nvcc_digest = j->id.digest,
		.host_digest = "ptxas",
		.args = j->key_args.v,
		.nargs = j->key_args.n,
		.cwd = "", /* names are keyed (-g) or reach nothing */
		.as = "",  /* ptxas runs no assembler */
		.env = &j->env,
	};
	if (cjc_filehash_get(j->input, &j->input_size, in.source_sha)) {
		cjc_buf_addf(why, "cannot read %s: %s", j->input, strerror(errno));
		return -1;
	}
	memcpy(j->input_sha, in.source_sha, CJC_DIGEST_LEN);
	cjc_key_direct(&in, j->direct_key);
	return 0;
}

/* Writes data to path by rename, with the user's umask. */
static int write_output(const struct ptxas_job *j, const struct cjc_buf *data, struct cjc_buf *why)
{
	char *tmp = cjc_unique_name(j->output);
	mode_t store_mask = umask(j->user_umask);
	cjc_tempfile_add(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	int rc = fd < 0 || cjc_write_all(fd, data->data, data->len) ? -1 : 0;
	if (fd >= 0 && close(fd))
		rc = -1;
	if (!rc && rename(tmp, j->output))
		rc = -1;
	if (rc)
		cjc_buf_addf(why, "cannot write %s: %s", j->output, strerror(errno));
	umask(store_mask);
	if (rc)
		cjc_tempfile_remove(tmp);
	else
		cjc_tempfile_forget(tmp);
	free(tmp);
	return rc;
}

/* lookup.h's deliver: the cubin where -o says, then ptxas's messages. */
static int deliver(void *ctx, const struct cjc_entry *e, const struct cjc_manifest_record *rec,
		   struct cjc_buf *why)
{
	(void)rec;
	struct ptxas_job *j = ctx;
	struct cjc_buf cubin = CJC_BUF_INIT, out = CJC_BUF_INIT, err = CJC_BUF_INIT;
	int rc = cjc_entry_read(e, PTXAS_ARTIFACT, &cubin, why);
	if (!rc && cjc_entry_artifact(e, "stdout"))
		rc = cjc_entry_read(e, "stdout", &out, why);
	if (!rc && cjc_entry_artifact(e, "stderr"))
		rc = cjc_entry_read(e, "stderr", &err, why);
	if (rc)
		rc = -1;
	else if (write_output(j, &cubin, why))
		rc = CJC_LOOKUP_UNWRITTEN;
	else
		cjc_replay(&out, &err);
	cjc_buf_release(&cubin);
	cjc_buf_release(&out);
	cjc_buf_release(&err);
	return rc;
}

/*
 * A record names the input at a path where no file can be (as the JIT's
 * NVRTC records name their source), by its bytes: the input's name is not
 * keyed, and its bytes are in the direct key already.
 */
#define PTXAS_INPUT_RECORDED "/dev/null/ptxas/input.ptx"

static void record_of(const struct ptxas_job *j, struct cjc_manifest_record *rec,
		      struct cjc_dep *dep)
{
	*dep = (struct cjc_dep){ .path = (char *)PTXAS_INPUT_RECORDED, .size = j->input_size };
	memcpy(dep->sha, j->input_sha, CJC_DIGEST_LEN);
	*rec = (struct cjc_manifest_record){ .deps = dep, .ndeps = 1 };
	cjc_key_entry(j->direct_key, rec, NULL, rec->entry_key);
}

/* lookup.h's match: the record this input makes, when the manifest holds it. */
static long match(void *ctx, const struct cjc_manifest *m)
{
	const struct ptxas_job *j = ctx;
	struct cjc_manifest_record want;
	struct cjc_dep dep;
	record_of(j, &want, &dep);
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->recs[i].entry_key, want.entry_key))
			return (long)i;
	return -1;
}

/* -1 for a miss, else 0 (a hit). */
static int try_hit(struct ptxas_job *j)
{
	struct cjc_lookup_request q = {
		.store = &j->store,
		.direct_key = j->direct_key,
		.trusted_keys = j->cfg.trusted_keys,
		.touch = !j->cfg.readonly,
		.max_size = j->cfg.max_size,
		.match = match,
		.deliver = deliver,
		.ctx = j,
		.count = count_event,
		.note = note,
		.events = j,
	};
	struct cjc_lookup_result r = { 0 };
	cjc_lookup_local(&q, &r);
	int rc = -1;
	if (r.why)
		j->lookup = cjc_xstrdup(r.why);
	if (r.status == CJC_LOOKUP_HIT) {
		cjc_log("hit %s for ptxas %s", r.entry_key, j->input);
		record_start(j, "hit", NULL);
		json_object_set_new(j->record, "entry", json_string(r.entry_key));
		json_object_set_new(j->record, "saved_ms", json_integer(r.duration_ms));
		rc = 0;
	}
	cjc_lookup_result_release(&r);
	return rc;
}

/* ---- a miss ---- */

struct ptxas_run {
	int status;
	int64_t duration_ms;
	struct cjc_buf out, err, cubin;
};

static void run_real(struct ptxas_job *j, struct ptxas_run *r)
{
	int out_fd = memfd_create("cjc-stdout", MFD_CLOEXEC);
	int err_fd = memfd_create("cjc-stderr", MFD_CLOEXEC);
	mode_t store_mask = umask(j->user_umask);
	int64_t t0 = cjc_now_ms();
	r->status = out_fd < 0 || err_fd < 0 ? -1 : cjc_run(j->argv, out_fd, err_fd);
	r->duration_ms = cjc_now_ms() - t0;
	umask(store_mask);
	if (out_fd >= 0)
		cjc_read_memfd(out_fd, &r->out);
	if (err_fd >= 0)
		cjc_read_memfd(err_fd, &r->err);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static bool holds(const struct cjc_buf *b, const char *name)
{
	return b->len && *name && memmem(b->data, b->len, name, strlen(name));
}

/* Why this miss may not be published although it succeeded, or NULL: a
 * file name the key left out reached what ptxas made. */
static const char *names_reach(const struct ptxas_job *j, const struct ptxas_run *r)
{
	if (j->debug)
		return NULL;
	const char *names[] = { base_name(j->input), base_name(j->output) };
	const struct cjc_buf *made[] = { &r->cubin, &r->out, &r->err };
	for (size_t n = 0; n < 2; n++)
		for (size_t m = 0; m < 3; m++)
			if (holds(made[m], names[n]))
				return "a file name reaches what ptxas made";
	return NULL;
}

static json_t *options_json(const struct ptxas_job *j)
{
	json_t *extra = json_array();
	for (size_t i = 0; i < j->key_args.n; i++)
		json_array_append_new(extra, cjc_json_bytes(j->key_args.v[i]));
	return json_pack("{s:s, s:b, s:o}", "kind", "ptxas", "debug", j->debug, "extra", extra);
}

static bool publish(struct ptxas_job *j, const struct ptxas_run *r,
		    const struct cjc_manifest_record *rec)
{
	struct cjc_dep input = { .path = (char *)j->input, .size = j->input_size };
	memcpy(input.sha, j->input_sha, CJC_DIGEST_LEN);
	json_t *options = options_json(j);
	struct cjc_metadata md = {
		.argv = j->argv,
		.argc = (size_t)j->argc,
		.cwd = j->cwd,
		.compiler_path = j->id.path,
		.compiler_realpath = j->id.realpath,
		.compiler_version = j->id.version,
		.host_path = "none",
		.host_version = "ptxas runs no host compiler",
		.options = options,
		.inputs = &input,
		.ninputs = 1,
		.environment = j->env_set.v,
		.nenvironment = j->env_set.n,
		.target = PTXAS_TARGET,
		.duration_ms = r->duration_ms,
	};
	struct cjc_publish p = {
		.store = &j->store,
		.key = rec->entry_key,
		.what = j->input,
		.direct_key = j->direct_key,
		.rec = rec,
		.artifact = PTXAS_ARTIFACT,
		.artifact_data = r->cubin.data,
		.artifact_size = r->cubin.len,
		.out = &r->out,
		.err = &r->err,
		.md = &md,
		.sign_key = j->cfg.sign_key,
		.sign_setting = cjc_config_env(CJC_SET_SIGN_KEY),
		.max_size = j->cfg.max_size,
		.note = note,
		.warn = warn,
	};
	bool won;
	enum cjc_published rc = cjc_publish(&p, &won);
	if (rc == CJC_PUBLISH_FAILED || rc == CJC_PUBLISHED_NO_MANIFEST)
		count(j, CJC_STAT_ERRORS, 0);
	json_decref(options);
	return rc != CJC_PUBLISH_FAILED;
}

/* ptxas runs as given (its output is plain ptxas's), then what it made is
 * published; returns its exit status. */
static int compile_miss(struct ptxas_job *j)
{
	struct ptxas_run r = { .out = CJC_BUF_INIT, .err = CJC_BUF_INIT, .cubin = CJC_BUF_INIT };
	struct cjc_manifest_record rec;
	struct cjc_dep dep;
	record_of(j, &rec, &dep);
	run_real(j, &r);
	cjc_replay(&r.out, &r.err);
	if (r.status < 0) {
		fprintf(stderr, "cjc: cannot run %s: %s\n", j->argv[0], strerror(errno));
		count(j, CJC_STAT_ERRORS, 0);
		r.status = 127;
	} else if (r.status) {
		count(j, CJC_STAT_COMPILE_FAILED, 0);
		record_start(j, "failed", NULL);
	} else {
		const char *not_kept = cjc_read_file(j->output, &r.cubin)
					       ? "the output cannot be read"
					       : names_reach(j, &r);
		bool published = !not_kept && !j->cfg.readonly && publish(j, &r, &rec);
		cjc_log("miss for ptxas %s%s%s", j->input, not_kept ? ", not published: " : "",
			not_kept ? not_kept : "");
		if (not_kept)
			count_uncacheable(j, not_kept);
		else
			count(j, CJC_STAT_MISSES, 0);
		record_start(j, not_kept ? "uncacheable" : "miss", not_kept ? not_kept : j->lookup);
		json_object_set_new(j->record, "entry", json_string(rec.entry_key));
		json_object_set_new(j->record, "published", json_boolean(published));
		json_object_set_new(j->record, "duration_ms", json_integer(r.duration_ms));
	}
	cjc_buf_release(&r.out);
	cjc_buf_release(&r.err);
	cjc_buf_release(&r.cubin);
	return r.status;
}

/* ---- the whole run ---- */

/* Everything before the lookup; the reason to run uncached, or NULL. */
static const char *prepare(struct ptxas_job *j, struct cjc_buf *why)
{
	if (cjc_store_open(&j->store, j->cfg.dir))
		return "the cache directory cannot be used";
	j->have_store = true;
	if (!cjc_getpwd(j->cwd, sizeof j->cwd))
		j->cwd[0] = '\0';
	cjc_env_read(&j->env);
	const char *environment = cjc_key_env_uncacheable_in(&j->env, false);
	const char *reason = j->uncacheable ? j->uncacheable : environment;
	if (reason) {
		count_uncacheable(j, reason);
		record_start(j, "uncacheable", reason);
		return reason;
	}
	cjc_key_environment(&j->env, &j->env_set);
	if (identify(j, why) || direct_key(j, why)) {
		count(j, CJC_STAT_ERRORS, 0);
		record_start(j, "error", why->data);
		return why->data;
	}
	return NULL;
}

static void job_release(struct ptxas_job *j)
{
	json_decref(j->record);
	free(j->lookup);
	cjc_strvec_clear(&j->key_args);
	cjc_strvec_clear(&j->env_set);
	cjc_identity_release(&j->id);
	if (j->have_store)
		cjc_store_close(&j->store);
	cjc_config_release(&j->cfg);
	cjc_filehash_forget();
}

int cjc_ptxas(int argc, char **argv)
{
	char *real = find_real(argv[0]);
	if (!real) {
		fprintf(stderr,
			"cjc: no ptxas other than cjc itself found: set CJC_PTXAS, CUDA_HOME, "
			"or put the toolkit's bin/ on PATH\n");
		return 127;
	}
	argv[0] = real; /* kept: argv outlives the run */
	struct ptxas_job j = { .argc = argc, .argv = argv };
	struct cjc_buf why = CJC_BUF_INIT;
	j.user_umask = umask(0);
	umask(j.user_umask);
	int bad = cjc_config_load(&j.cfg, &why);
	cjc_log_setup(j.cfg.log, j.cfg.debug);
	if (j.cfg.umask >= 0)
		umask((mode_t)j.cfg.umask);
	parse(&j);
	int rc;
	const char *reason = NULL;
	if (j.query || bad || j.cfg.disable)
		rc = run_uncached(&j, j.query ? NULL
				      : bad   ? "malformed configuration"
					      : "disabled");
	else if ((reason = prepare(&j, &why)))
		rc = run_uncached(&j, reason);
	else if ((rc = try_hit(&j)) < 0)
		rc = compile_miss(&j);
	record_write(&j);
	job_release(&j);
	cjc_buf_release(&why);
	return rc;
}
