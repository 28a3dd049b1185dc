/*
 * `cjc audit` (audit.h).  An entry's metadata.json may have been written by
 * anyone who can write the store, so nothing it names runs before
 * audit_trust.h has decided, with stat and lstat alone, that nvcc and the host
 * compiler are the ones this machine would run for that compile and that no
 * recorded argument or variable makes them run anything else.  Only then do
 * --version and the rebuild run, and they run the checked paths, not the
 * recorded strings.  The rule is written down in audit_trust.h; beyond the
 * first design it also refuses words nvcc's shell would act on ($(...) in a
 * -D value runs), checks every -ccbin value and every options file the same
 * way, and drops PATH's relative entries, which would otherwise be searched
 * in the working directory the entry names.
 *
 * Scratch: one directory "$TMPDIR/cjc-audit.<host>.<pid>.<random>" (TMPDIR
 * made absolute first, for the audit works in the recorded directory),
 * registered for removal at exit and on SIGINT, SIGTERM and SIGHUP (fs.h).
 * A SIGKILL cannot be caught: each audit first removes the scratch
 * directories of audits on this host whose pid is dead (the rule `cjc gc`
 * applies to staging), and the children die with the audit
 * (PR_SET_PDEATHSIG), so nothing writes there afterwards.
 */
#include "audit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit_nvrtc.h"
#include "audit_trust.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/run.h"
#include "base/util.h"
#include "compile/diagnostics.h"
#include "keys/key.h"
#include "keys/metadata.h"
#include "keys/nvcc_args.h"
#include "keys/place.h"
#include "output.h"
#include "store/sign.h"
#include "store/store.h"

#define SCRATCH_PREFIX "cjc-audit"

/* The device code of an object, as objcopy extracts it. */
static const char *const device_sections[] = { ".nv_fatbin", "__nv_relfatbin", "__nv_module_id" };

/* One entry's audit (in a child process). */
struct audit {
	const char *scratch;
	struct cjc_entry entry; /* entry.meta: its parsed metadata.json */
	struct cjc_audit_trust run; /* the checked programs (audit_trust.h) */
	json_t *result;
	/* a JIT entry's request (metadata.h "jit"), its code copied from the entry */
	const char *jit_name;   /* the request's name */
	const char *jit_source; /* the artifact holding the code */
	struct cjc_buf code;    /* the code, as the entry holds it */
	char *keyed_source;     /* where the command names it: CJC_JIT_SOURCE_DIR/<name> */
	char *source_copy;      /* where the rebuild reads it: <scratch>/src/<name> */
	bool normalised_source; /* its path was dropped from messages (normalise_jit_source) */
};

static void add_note(struct audit *a, const char *list, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_note(struct audit *a, const char *list, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text;
	if (vasprintf(&text, fmt, ap) >= 0) {
		json_t *l = json_object_get(a->result, list);
		if (!l)
			json_object_set_new(a->result, list, l = json_array());
		json_array_append_new(l, json_string(text));
		free(text);
	}
	va_end(ap);
}

static const char *meta_text(json_t *v)
{
	return json_string_value(v) ? json_string_value(v) : "";
}

static const char *meta_str(json_t *o, const char *name)
{
	return meta_text(json_object_get(o, name));
}

/* Every recorded input must still hash as recorded; returns how many do not. */
static int check_inputs(struct audit *a)
{
	json_t *inputs = json_object_get(a->entry.meta, "inputs"), *in;
	size_t i;
	int changed = 0;
	json_array_foreach(inputs, i, in) {
		const char *path = meta_str(in, "path"), *want = meta_str(in, "sha256");
		unsigned char sha[CJC_DIGEST_LEN];
		char hex[CJC_HEX_LEN + 1];
		uint64_t n;
		/* a JIT entry's source (the first input) is the entry's copy of it */
		const char *read = i == 0 && a->source_copy ? a->source_copy : path;
		/* a regular file only: a FIFO or a device would hang the audit */
		int fd = cjc_open_regular(AT_FDCWD, read, O_RDONLY, 0);
		if (fd < 0 || cjc_hash_fd(fd, sha, &n)) {
			add_note(a, "details", "input %s cannot be read: %s", path,
				 errno == EINVAL ? "not a regular file" : strerror(errno));
			if (fd >= 0)
				close(fd);
			changed++;
			continue;
		}
		close(fd);
		cjc_hex(sha, CJC_DIGEST_LEN, hex);
		if (strcmp(hex, want)) {
			add_note(a, "details", "input %s changed (recorded sha256 %.16s, now %.16s)", path,
				 want, hex);
			changed++;
		}
	}
	return changed;
}

/* A checked compiler (run by the path audit_trust.h gave) must still print
 * the recorded --version; returns 0 or -1. */
static int check_compiler(struct audit *a, const char *what, const char *run, json_t *c)
{
	const char *path = meta_str(c, "path");
	char *argv[] = { (char *)run, "--version", NULL };
	struct cjc_buf out = CJC_BUF_INIT;
	int status = cjc_run_capture(argv, &out);
	int rc = 0;
	if (status) {
		add_note(a, "details", "%s %s cannot be run", what, run);
		rc = -1;
	} else if (strcmp(out.data ? out.data : "", meta_str(c, "version"))) {
		add_note(a, "details", "%s %s now prints another --version than when the entry was made",
			 what, path);
		rc = -1;
	}
	cjc_buf_release(&out);
	return rc;
}

/* Exactly the recorded values of the keyed variables nvcc reads (key.h),
 * as changes for the rebuild's environment (run.h); those that make a
 * compile uncacheable were not set when it was recorded, so none is. */
static void recorded_environment(json_t *recorded, struct cjc_strvec *env)
{
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *name = cjc_env_vars[i].name;
		if (cjc_env_vars[i].rule != CJC_ENV_KEYED && cjc_env_vars[i].rule != CJC_ENV_UNCACHEABLE)
			continue;
		const char *v = cjc_env_vars[i].rule == CJC_ENV_KEYED
			? json_string_value(json_object_get(recorded, name)) : NULL;
		char *change = v ? cjc_xasprintf("%s=%s", name, v) : cjc_xstrdup(name);
		cjc_strvec_push(env, change);
		free(change);
	}
}

/* Runs the recorded compile; its output goes to scratch/output.<ext>. */
static int rebuild(struct audit *a, const struct cjc_compile *c, const struct cjc_diagnostics *d,
		   const char *output, const char *keep_dir)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	cjc_strvec_push(&argv, a->run.nvcc);
	cjc_strvec_pushv(&argv, c->nvcc_args.v, c->nvcc_args.n);
	cjc_diagnostics_add_args(d, keep_dir, &argv);
	char *extra[] = { "-o", (char *)output };
	cjc_strvec_pushv(&argv, extra, 2);
	char *err_path = cjc_path_join(a->scratch, "stderr");
	int err_fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	struct cjc_strvec env = CJC_STRVEC_INIT;
	recorded_environment(json_object_get(a->entry.meta, "environment"), &env);
	struct cjc_child child = CJC_CHILD_INIT(argv.v);
	child.env = env.v;
	child.in_fd = child.out_fd = CJC_RUN_NULL;
	child.err_fd = err_fd;
	int status = err_fd < 0 ? -1 : cjc_run_child(&child);
	cjc_strvec_clear(&env);
	if (status) {
		struct cjc_buf err = CJC_BUF_INIT;
		(void)cjc_read_file(err_path, &err);
		char *eol = err.data ? strchr(err.data, '\n') : NULL;
		if (eol)
			*eol = '\0';
		add_note(a, "details", "the recorded command failed with status %d%s%s", status,
			 err.len ? ": " : "", err.len ? err.data : "");
		cjc_buf_release(&err);
	}
	if (err_fd >= 0)
		close(err_fd);
	free(err_path);
	cjc_strvec_clear(&argv);
	return status ? -1 : 0;
}

/* Replaces each match of pattern with `with`; seen (may be NULL) gets each
 * text replaced, once.  Returns how many were. */
static size_t replace_matches(const char *text, const char *pattern, const char *with,
			      struct cjc_buf *out, struct cjc_strvec *seen)
{
	regex_t re;
	regmatch_t m;
	size_t n = 0;
	if (regcomp(&re, pattern, REG_EXTENDED)) {
		cjc_buf_adds(out, text);
		return 0;
	}
	const char *p = text;
	while (!regexec(&re, p, 1, &m, p == text ? 0 : REG_NOTBOL) && m.rm_eo > m.rm_so) {
		n++;
		cjc_buf_add(out, p, (size_t)m.rm_so);
		cjc_buf_adds(out, with);
		char *name = cjc_xstrndup(p + m.rm_so, (size_t)(m.rm_eo - m.rm_so));
		if (seen && !cjc_strvec_contains(seen, name))
			cjc_strvec_push(seen, name);
		free(name);
		p += m.rm_eo;
	}
	cjc_buf_adds(out, p);
	regfree(&re);
	return n;
}

/* Takes the prefix of nvcc's temporary file names (tmpxft_<hex>_<hex>-<n>_)
 * out, with the directory before it, and the directory of a kept file
 * (<output>.<tag>.keep/): a miss runs nvcc with -keep (compile/miss.h),
 * whose files are named without the prefix, in that directory, and an
 * older entry's, or a rebuild's, in the temporary directory with it.  A
 * message then names k.cpp1.ii either way. */
static void normalise(const char *text, struct cjc_buf *out, struct cjc_strvec *seen)
{
	struct cjc_buf kept = CJC_BUF_INIT, temporary = CJC_BUF_INIT;
	(void)replace_matches(text, "[^[:space:]\"'`]*\\.keep/", "", &kept, NULL);
	(void)replace_matches(kept.data ? kept.data : "",
			      "[^[:space:]\"'`]*/tmpxft_[0-9a-f]+_[0-9a-f]+-[0-9]+_", "",
			      &temporary, seen);
	(void)replace_matches(temporary.data ? temporary.data : "",
			      "tmpxft_[0-9a-f]+_[0-9a-f]+-[0-9]+_", "", out, seen);
	cjc_buf_release(&kept);
	cjc_buf_release(&temporary);
}

/*
 * A JIT entry's messages name its source by where it was compiled: the
 * library's private directory then (<dir>/src/<name>, which no entry
 * records), the scratch directory now.  Both become <name>.  Other texts
 * are copied as they are.
 */
static void normalise_jit_source(struct audit *a, const char *text, struct cjc_buf *out)
{
	const char *name = a->source_copy ? strrchr(a->source_copy, '/') + 1 : NULL;
	struct cjc_buf pattern = CJC_BUF_INIT;
	if (!name) {
		cjc_buf_adds(out, text);
		return;
	}
	cjc_buf_adds(&pattern, "[^[:space:]\"'`]*/src/");
	for (const char *c = name; *c; c++) /* a name is [A-Za-z0-9._+-] (metadata.h) */
		cjc_buf_addf(&pattern, "%s%c", *c == '.' || *c == '+' ? "\\" : "", *c);
	if (replace_matches(text, pattern.data, name, out, NULL))
		a->normalised_source = true;
	cjc_buf_release(&pattern);
}

/* The symbol table of an object, normalised, in its own order (sorted by
 * name, a normalised name would move); -1 when nm cannot read it. */
static int symbols(const char *object, struct cjc_buf *out, struct cjc_strvec *seen, size_t *count)
{
	char *argv[] = { "nm", "-a", "-P", "-p", (char *)object, NULL };
	struct cjc_buf raw = CJC_BUF_INIT;
	int status = cjc_run_capture(argv, &raw);
	if (!status)
		normalise(raw.data ? raw.data : "", out, seen);
	*count = 0;
	for (size_t i = 0; i < raw.len; i++)
		*count += raw.data[i] == '\n';
	cjc_buf_release(&raw);
	return status ? -1 : 0;
}

/* A section of an object, by objcopy; empty when the object has none. */
static int section(const char *object, const char *name, const char *dest, struct cjc_buf *out)
{
	char *only = cjc_xasprintf("--only-section=%s", name);
	char *argv[] = { "objcopy", "-O", "binary", only, (char *)object, (char *)dest, NULL };
	int status = cjc_run(argv, CJC_RUN_NULL, CJC_RUN_NULL);
	free(only);
	int rc = status || cjc_read_file(dest, out) ? -1 : 0;
	unlink(dest);
	return rc;
}

static void compare_sections(struct audit *a, const char *stored, const char *rebuilt)
{
	char *tmp = cjc_path_join(a->scratch, "section");
	for (size_t i = 0; i < sizeof device_sections / sizeof *device_sections; i++) {
		struct cjc_buf x = CJC_BUF_INIT, y = CJC_BUF_INIT;
		const char *name = device_sections[i];
		if (section(stored, name, tmp, &x) || section(rebuilt, name, tmp, &y))
			add_note(a, "differences", "objcopy cannot read the %s section", name);
		else if (x.len != y.len || (x.len && memcmp(x.data, y.data, x.len)))
			add_note(a, "differences", "%s differs (%zu bytes stored, %zu rebuilt)", name, x.len,
				 y.len);
		else if (x.len)
			add_note(a, "compared", "%s: %zu bytes identical", name, x.len);
		cjc_buf_release(&x);
		cjc_buf_release(&y);
	}
	free(tmp);
}

/* The first line where two texts differ, for the report. */
static void first_difference(const char *x, const char *y, struct cjc_buf *out)
{
	size_t i = 0, line = 0;
	while (x[i] && x[i] == y[i])
		if (x[i++] == '\n')
			line = i;
	x += line;
	y += line;
	const char *ex = strchr(x, '\n'), *ey = strchr(y, '\n');
	cjc_buf_addf(out, "'%.*s' stored, '%.*s' rebuilt", (int)(ex ? ex - x : (long)strlen(x)), x,
		     (int)(ey ? ey - y : (long)strlen(y)), y);
}

static void compare_symbols(struct audit *a, const char *stored, const char *rebuilt)
{
	struct cjc_buf x = CJC_BUF_INIT, y = CJC_BUF_INIT;
	struct cjc_strvec seen_stored = CJC_STRVEC_INIT, seen_rebuilt = CJC_STRVEC_INIT;
	size_t nx, ny;
	if (symbols(stored, &x, &seen_stored, &nx) || symbols(rebuilt, &y, &seen_rebuilt, &ny)) {
		add_note(a, "differences", "nm cannot read the symbol table");
	} else if (x.len != y.len || (x.len && memcmp(x.data, y.data, x.len))) {
		struct cjc_buf d = CJC_BUF_INIT;
		first_difference(x.data ? x.data : "", y.data ? y.data : "", &d);
		add_note(a, "differences", "symbols differ (%zu stored, %zu rebuilt): %s", nx, ny, d.data);
		cjc_buf_release(&d);
	} else {
		add_note(a, "compared", "symbol table: %zu symbols identical", nx);
	}
	for (size_t i = 0; i < seen_stored.n; i++)
		add_note(a, "normalised", "temporary file name %s in the stored object's symbol table",
			 seen_stored.v[i]);
	for (size_t i = 0; i < seen_rebuilt.n; i++)
		add_note(a, "normalised", "temporary file name %s in the rebuilt object's symbol table",
			 seen_rebuilt.v[i]);
	cjc_strvec_clear(&seen_stored);
	cjc_strvec_clear(&seen_rebuilt);
	cjc_buf_release(&x);
	cjc_buf_release(&y);
}

/* Copies a stored artifact (verified as it is read) into the scratch directory. */
static char *stored_copy(struct audit *a, const char *name)
{
	char *path = cjc_xasprintf("%s/stored.%s", a->scratch, name);
	struct cjc_buf why = CJC_BUF_INIT;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || cjc_entry_copy(&a->entry, name, fd, &why)) {
		add_note(a, "differences", "cannot read the stored %s: %s", name,
			 why.len ? why.data : strerror(errno));
		free(path);
		path = NULL;
	}
	if (fd >= 0)
		close(fd);
	cjc_buf_release(&why);
	return path;
}

/* Byte for byte: a rebuilt file against a stored artifact. */
static void compare_bytes(struct audit *a, const char *name, const char *rebuilt)
{
	const struct cjc_artifact *art = cjc_entry_artifact(&a->entry, name);
	unsigned char sha[CJC_DIGEST_LEN];
	char hex[CJC_HEX_LEN + 1];
	uint64_t n;
	if (cjc_hash_file(rebuilt, sha, &n)) {
		add_note(a, "differences", "%s was not made by the rebuild", name);
		return;
	}
	cjc_hex(sha, CJC_DIGEST_LEN, hex);
	if (strcmp(hex, art->sha256))
		add_note(a, "differences", "%s differs (stored sha256 %.16s, %llu bytes; rebuilt %.16s, "
			 "%llu bytes)", name, art->sha256, (unsigned long long)art->size, hex,
			 (unsigned long long)n);
	else
		add_note(a, "compared", "%s: %llu bytes identical", name, (unsigned long long)n);
}

static void compare_object(struct audit *a, const char *name, const char *rebuilt)
{
	char *stored = stored_copy(a, name);
	if (!stored)
		return;
	compare_sections(a, stored, rebuilt);
	compare_symbols(a, stored, rebuilt);
	add_note(a, "normalised", "host code is not compared: nvcc names its temporary files "
		 "after its process id");
	free(stored);
}

/* A stored text artifact (read and verified) against a rebuilt text, both normalised. */
static void compare_text(struct audit *a, const char *name, const char *what,
			 const struct cjc_buf *rebuilt)
{
	struct cjc_buf stored = CJC_BUF_INIT, x = CJC_BUF_INIT, y = CJC_BUF_INIT, why = CJC_BUF_INIT;
	struct cjc_buf sx = CJC_BUF_INIT, sy = CJC_BUF_INIT;
	if (cjc_entry_artifact(&a->entry, name))
		(void)cjc_entry_read(&a->entry, name, &stored, &why);
	normalise_jit_source(a, stored.data ? stored.data : "", &sx);
	normalise_jit_source(a, rebuilt->data ? rebuilt->data : "", &sy);
	normalise(sx.data ? sx.data : "", &x, NULL);
	normalise(sy.data ? sy.data : "", &y, NULL);
	if (x.len != y.len || (x.len && memcmp(x.data, y.data, x.len)))
		add_note(a, "differences", "%s differ (%zu bytes recorded, %zu now)", what, stored.len,
			 rebuilt->len);
	else if (x.len)
		add_note(a, "compared", "%s: %zu bytes identical", name, stored.len);
	cjc_buf_release(&stored);
	cjc_buf_release(&x);
	cjc_buf_release(&y);
	cjc_buf_release(&sx);
	cjc_buf_release(&sy);
	cjc_buf_release(&why);
}

static void compare_stderr(struct audit *a)
{
	struct cjc_buf rebuilt = CJC_BUF_INIT;
	char *path = cjc_path_join(a->scratch, "stderr");
	(void)cjc_read_file(path, &rebuilt);
	compare_text(a, "stderr", "nvcc's messages", &rebuilt);
	free(path);
	cjc_buf_release(&rebuilt);
}

/* keep_sass: cuobjdump -sass of the rebuilt output against sass.txt. */
static void compare_sass(struct audit *a, const struct cjc_diagnostics *d, const char *output)
{
	struct cjc_buf sass = CJC_BUF_INIT;
	char *argv[] = { d->cuobjdump, "-sass", (char *)output, NULL };
	if (!d->cuobjdump) /* metadata that lists sass.txt but does not record keep_sass */
		add_note(a, "differences", "sass.txt is kept but keep_sass is not recorded");
	else if (cjc_run_capture(argv, &sass))
		add_note(a, "differences", "%s -sass failed on the rebuilt output", d->cuobjdump);
	else
		compare_text(a, "sass.txt", "the SASS listings", &sass);
	cjc_buf_release(&sass);
}

/* Every stored artifact against what the rebuild made (a JIT entry's
 * source is what it was made from). */
static void compare(struct audit *a, bool object, const struct cjc_diagnostics *d,
		    const char *output, const char *keep_dir)
{
	for (size_t i = 0; i < a->entry.nfiles; i++) {
		const char *name = a->entry.files[i].name;
		if (a->jit_source && !strcmp(name, a->jit_source))
			continue; /* the code it was rebuilt from */
		char *kept = cjc_starts_with(name, "kept-") ? cjc_path_join(keep_dir, name + 5) : NULL;
		if (cjc_starts_with(name, "output."))
			(object ? compare_object : compare_bytes)(a, name, output);
		else if (kept)
			compare_bytes(a, name, kept);
		else if (!strcmp(name, "sass.txt"))
			compare_sass(a, d, output);
		else if (strcmp(name, "stdout") && strcmp(name, "stderr"))
			add_note(a, "normalised", "%s is not compared", name);
		free(kept);
	}
	compare_stderr(a);
	if (a->normalised_source)
		add_note(a, "normalised", "the source's directory in the compiler's messages: the JIT "
			 "library compiled a private copy, and the audit another");
}

static void set_status(struct audit *a, const char *status)
{
	json_object_set_new(a->result, "status", json_string(status));
}

/* The recorded base_dir as place.h has it ("" for /), or NULL. */
static const char *base_dir(json_t *meta)
{
	const char *b = json_string_value(json_object_get(meta, "base_dir"));
	return b && !strcmp(b, "/") ? "" : b;
}

/* PATH less its relative entries, which would be searched in the working
 * directory the entry names. */
static void drop_relative_path_entries(void)
{
	const char *path = getenv("PATH");
	struct cjc_buf kept = CJC_BUF_INIT;
	for (const char *p = path; p;) {
		size_t n = strcspn(p, ":");
		if (p[0] == '/') {
			if (kept.len)
				cjc_buf_adds(&kept, ":");
			cjc_buf_add(&kept, p, n);
		}
		p = p[n] ? p + n + 1 : NULL;
	}
	if (path)
		setenv("PATH", kept.data ? kept.data : "", 1);
	cjc_buf_release(&kept);
}

/* Nothing runs before audit_trust.h allows it; then the versions, by the
 * checked paths.  0, or -1 with the reason noted. */
static int check_programs(struct audit *a, const char *cwd)
{
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = cjc_audit_trust_check(a->entry.meta, cwd, &a->run, &why);
	if (rc)
		add_note(a, "details", "%s", why.data);
	cjc_buf_release(&why);
	if (rc || check_inputs(a) ||
	    check_compiler(a, "nvcc", a->run.nvcc, json_object_get(a->entry.meta, "compiler")) ||
	    check_compiler(a, "the host compiler", a->run.host,
			   json_object_get(a->entry.meta, "host_compiler")))
		return -1;
	return 0;
}

/* A text field of the metadata as bytes in memory: {"bytes": hex} decoded
 * (metadata.h).  The audit's copy only; nothing is written back. */
static void plain_text(json_t *parent, const char *name)
{
	json_t *v = json_object_get(parent, name);
	char *text = json_is_object(v) ? cjc_json_text(v) : NULL;
	if (text)
		json_object_set_new(parent, name, json_string_nocheck(text));
	free(text);
}

static void plain_array(json_t *array, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(array, i, v) {
		char *text = name ? NULL : json_is_object(v) ? cjc_json_text(v) : NULL;
		if (name)
			plain_text(v, name);
		else if (text)
			json_array_set_new(array, i, json_string_nocheck(text));
		free(text);
	}
}

/*
 * A variable recorded by its hash (it may hold a secret, key.h) is rebuilt
 * with this environment's value when that hashes the same; otherwise the
 * entry cannot be rebuilt here.
 */
static int plain_environment(struct audit *a, json_t *env)
{
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *name = cjc_env_vars[i].name, *now = getenv(name);
		if (cjc_env_vars[i].rule != CJC_ENV_KEYED)
			continue;
		const char *want = json_string_value(json_object_get(json_object_get(env, name), "sha256"));
		char hex[CJC_HEX_LEN + 1];
		if (!want) {
			plain_text(env, name);
			continue;
		}
		if (now)
			cjc_hash_buf_hex(now, strlen(now), hex);
		if (!now || strcmp(hex, want)) {
			add_note(a, "details", "%s is recorded by its hash only (it may hold a secret): "
				 "set it as it was to audit this entry", name);
			return -1;
		}
		json_object_set_new(env, name, json_string_nocheck(now));
	}
	return 0;
}

static int plain_texts(struct audit *a)
{
	json_t *m = a->entry.meta;
	plain_text(m, "cwd");
	plain_array(json_object_get(m, "argv"), NULL);
	plain_array(json_object_get(m, "inputs"), "path");
	plain_array(json_object_get(m, "options_files"), "path");
	static const char *const fields[] = { "path", "realpath", "version" };
	for (size_t i = 0; i < 3; i++) {
		plain_text(json_object_get(m, "compiler"), fields[i]);
		plain_text(json_object_get(m, "host_compiler"), fields[i]);
	}
	return plain_environment(a, json_object_get(m, "environment"));
}

/* trusted_keys for this audit (audit.h); the children inherit it. */
static const char *audit_trusted_keys;

/* 0 when the entry's recorded command may run: you or root wrote it, or a
 * trusted key signed it (audit.h).  Else -1, with the reason noted. */
static int check_writer(struct audit *a)
{
	uid_t writer;
	if (cjc_sign_written_by_self(&a->entry, &writer))
		return 0;
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = audit_trusted_keys ? cjc_sign_verify_entry(a->entry.dfd, audit_trusted_keys, &why) : -1;
	if (rc)
		add_note(a, "details", "written by uid %ld, not you or root, and %s: nothing it records is run",
			 (long)writer, audit_trusted_keys ? why.data : "trusted_keys is not set");
	cjc_buf_release(&why);
	return rc ? -1 : 0;
}

/*
 * A JIT entry (metadata.h "jit") holds its request's code: read from the
 * entry (verified), and written into the scratch directory as src/<name>
 * for the word of the command that names it CJC_JIT_SOURCE_DIR/<name>,
 * where no file can be.  An entry made with a post-compile hook cannot be
 * rebuilt: the hook's code is not in it.  0, also for cjc's entries; -1
 * with the reason noted.
 */
static int copy_jit_source(struct audit *a)
{
	json_t *jit = json_object_get(a->entry.meta, "jit"), *hook = json_object_get(jit, "hook");
	if (!jit)
		return 0;
	a->jit_name = json_string_value(json_object_get(jit, "name"));
	a->jit_source = json_string_value(json_object_get(jit, "source"));
	if (hook) {
		char *id = cjc_json_shown(hook, CJC_JSON_NOT_TEXT);
		add_note(a, "details", "made with the post-compile hook %s, whose code the entry does not "
			 "hold", id);
		free(id);
		return -1;
	}
	/* the NVRTC shim keeps a program's name, whatever it is, and its code as source.cu */
	bool shim = json_is_true(json_object_get(jit, "shim"));
	bool named = a->jit_name &&
		     (shim ? *a->jit_name != '\0' : cjc_request_name_ok(a->jit_name));
	/* the shim keeps no source.cu for an empty source (src/jit/program.c) */
	bool empty = shim && a->jit_source && !cjc_entry_artifact(&a->entry, a->jit_source);
	if (!named || !a->jit_source || (!empty && !cjc_entry_artifact(&a->entry, a->jit_source))) {
		add_note(a, "details", "its \"jit\" object does not name the request (a file name ending "
			 "in .cu) and the artifact that holds its code");
		return -1;
	}
	struct cjc_buf why = CJC_BUF_INIT;
	char *dir = cjc_path_join(a->scratch, "src");
	a->keyed_source = cjc_xasprintf("%s/%s", CJC_JIT_SOURCE_DIR, a->jit_name);
	a->source_copy = cjc_path_join(dir, shim ? a->jit_source : a->jit_name);
	int rc = 0;
	if (empty)
		cjc_buf_add(&a->code, "", 0);
	else
		rc = cjc_entry_read(&a->entry, a->jit_source, &a->code, &why);
	if (rc)
		add_note(a, "details", "cannot read its %s: %s", a->jit_source, why.data);
	else if ((rc = mkdir(dir, 0700) ||
		       cjc_write_new_file(a->source_copy, a->code.data, a->code.len, 0600)))
		add_note(a, "details", "cannot write %s: %s", a->source_copy, strerror(errno));
	else if ((rc = memchr(a->code.data, '\0', a->code.len) != NULL))
		add_note(a, "details", "its %s holds a NUL byte, which no request's code does",
			 a->jit_source);
	free(dir);
	cjc_buf_release(&why);
	return rc ? -1 : 0;
}

/* The recorded command less argv[0]; a JIT entry's source word becomes its
 * copy (copy_jit_source).  -1, noted, when a JIT entry's command does not
 * name its source. */
static int recorded_words(struct audit *a, struct cjc_strvec *words)
{
	json_t *argv = json_object_get(a->entry.meta, "argv"), *w;
	size_t i;
	bool named = !a->keyed_source;
	json_array_foreach(argv, i, w) {
		const char *word = json_string_value(w) ? json_string_value(w) : "";
		bool source = i > 0 && a->keyed_source && !strcmp(word, a->keyed_source);
		if (i > 0)
			cjc_strvec_push(words, source ? a->source_copy : word);
		named = named || source;
	}
	if (!named)
		add_note(a, "details", "the recorded command does not name the request's source %s",
			 a->keyed_source);
	return named ? 0 : -1;
}

/* Writes a rebuilt file into the scratch directory; -1, noted, when it cannot. */
static int scratch_file(struct audit *a, const char *name, const struct cjc_buf *b)
{
	char *path = cjc_path_join(a->scratch, name);
	int rc = cjc_write_new_file(path, b->data ? b->data : "", b->len, 0600);
	if (rc)
		add_note(a, "details", "cannot write %s: %s", path, strerror(errno));
	free(path);
	return rc;
}

/* NVRTC's compile of the entry's code with the recorded options (the
 * command less "nvrtc" and the source, which is last), in this process;
 * its output and log go to the scratch directory as a rebuild's do. */
static int rebuild_nvrtc(struct audit *a, const char *library, const char *kind)
{
	json_t *argv = json_object_get(a->entry.meta, "argv");
	struct cjc_strvec options = CJC_STRVEC_INIT;
	struct cjc_buf out = CJC_BUF_INIT, log = CJC_BUF_INIT, why = CJC_BUF_INIT;
	for (size_t i = 1; i + 1 < json_array_size(argv); i++)
		cjc_strvec_push(&options, meta_text(json_array_get(argv, i)));
	struct cjc_audit_nvrtc in = {
		.library = library,
		.version = meta_str(json_object_get(a->entry.meta, "compiler"), "version"),
		.name = a->jit_name, .code = a->code.data, .options = options.v,
		.noptions = options.n, .ptx = !strcmp(kind, "ptx"),
	};
	int rc = cjc_audit_nvrtc_compile(&in, &out, &log, &why);
	if (rc) {
		size_t eol = log.len ? strcspn(log.data, "\n") : 0;
		add_note(a, "details", "the recorded compile failed: %s%s%.*s", why.data, eol ? ": " : "",
			 (int)eol, log.data ? log.data : "");
	}
	char *output = cjc_xasprintf("output.%s", kind);
	if (!rc)
		rc = scratch_file(a, output, &out) || scratch_file(a, "stderr", &log) ? -1 : 0;
	free(output);
	cjc_strvec_clear(&options);
	cjc_buf_release(&out);
	cjc_buf_release(&log);
	cjc_buf_release(&why);
	return rc;
}

/* An NVRTC shim's entry's program: its name expressions (the "jit"
 * object's) and string headers (headers.json). */
static int program_of(struct audit *a, struct cjc_audit_program *p)
{
	json_t *jit = json_object_get(a->entry.meta, "jit"), *e, *doc = NULL;
	json_t *exprs = json_object_get(jit, "name_expressions");
	struct cjc_buf text = CJC_BUF_INIT, why = CJC_BUF_INIT;
	size_t i;
	bool ok = json_is_array(exprs);
	json_array_foreach(exprs, i, e) {
		ok = ok && json_is_string(e);
		if (ok)
			cjc_strvec_push(&p->expressions, json_string_value(e));
	}
	const char *headers = json_string_value(json_object_get(jit, "headers"));
	if (ok && headers) {
		ok = !cjc_entry_read(&a->entry, headers, &text, &why) &&
		     (doc = json_loadb(text.data ? text.data : "", text.len, 0, NULL)) &&
		     json_is_array(doc);
		json_array_foreach(doc, i, e) {
			const char *name = json_string_value(json_object_get(e, "name"));
			const char *code = json_string_value(json_object_get(e, "text"));
			ok = ok && name && code;
			if (ok) {
				cjc_strvec_push(&p->header_names, name);
				cjc_strvec_push(&p->headers, code);
			}
		}
	}
	if (!ok)
		add_note(a, "details", "its name expressions or headers cannot be read%s%s",
			 why.len ? ": " : "", why.len ? why.data : "");
	json_decref(doc);
	cjc_buf_release(&text);
	cjc_buf_release(&why);
	return ok ? 0 : -1;
}

/* NVRTC's compile of an NVRTC shim's program, its outputs written to the
 * scratch directory under the entry's names. */
static int rebuild_program(struct audit *a, const char *library, const struct cjc_audit_program *p)
{
	json_t *argv = json_object_get(a->entry.meta, "argv");
	struct cjc_strvec options = CJC_STRVEC_INIT;
	struct cjc_nvrtc_outputs out = { 0 };
	struct cjc_buf why = CJC_BUF_INIT, results = CJC_BUF_INIT;
	for (size_t i = 1; i + 1 < json_array_size(argv); i++)
		cjc_strvec_push(&options, meta_text(json_array_get(argv, i)));
	struct cjc_audit_nvrtc in = {
		.library = library,
		.version = meta_str(json_object_get(a->entry.meta, "compiler"), "version"),
		.name = a->jit_name, .code = a->code.data, .options = options.v, .noptions = options.n,
	};
	int rc = cjc_audit_nvrtc_program(&in, p, &out, &why);
	if (rc) {
		size_t eol = out.log.len ? strcspn(out.log.data, "\n") : 0;
		add_note(a, "details", "the recorded compile failed: %s%s%.*s", why.data, eol ? ": " : "",
			 (int)eol, out.log.data ? out.log.data : "");
	}
	json_t *doc = rc ? NULL : cjc_nvrtc_outputs_json(&out, &p->expressions);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	cjc_buf_adds(&results, text ? text : "");
	rc = rc || scratch_file(a, "nvrtc.json", &results) || scratch_file(a, "stderr", &out.log);
	for (int k = 0; !rc && k < CJC_NVRTC_KINDS; k++) {
		char *name = cjc_xasprintf("output.%s", cjc_nvrtc_kind_name[k]);
		if (out.result[k] == CJC_NVRTC_SUCCESS && out.code[k].len)
			rc = scratch_file(a, name, &out.code[k]);
		free(name);
	}
	free(text);
	json_decref(doc);
	cjc_nvrtc_outputs_release(&out);
	cjc_strvec_clear(&options);
	cjc_buf_release(&why);
	cjc_buf_release(&results);
	return rc ? -1 : 0;
}

/* Each stored artifact against the rebuild's file of its name. */
static void compare_program(struct audit *a)
{
	for (size_t i = 0; i < a->entry.nfiles; i++) {
		const char *name = a->entry.files[i].name;
		if (!strcmp(name, a->jit_source) || !strcmp(name, "headers.json") ||
		    !strcmp(name, "stderr"))
			continue; /* what it was made from; the log is compared below */
		char *rebuilt = cjc_path_join(a->scratch, name);
		compare_bytes(a, name, rebuilt);
		free(rebuilt);
	}
	compare_stderr(a);
}

/* Enters the recorded working directory, or says why not.  One that is
 * gone is marked ("cwd_gone"): the summary counts those apart, since every
 * entry of a build whose directory was removed afterwards (pip's) is one. */
static int enter_cwd(struct audit *a, const char *cwd)
{
	if (!chdir(cwd))
		return 0;
	int e = errno;
	bool gone = e == ENOENT || e == ENOTDIR;
	add_note(a, "details", "the working directory %s %s: %s", cwd,
		 gone ? "is gone" : "cannot be entered", strerror(e));
	if (gone)
		json_object_set_new(a->result, "cwd_gone", json_true());
	return -1;
}

/* An NVRTC shim's entry (docs/nvrtc-shim.md): its program compiled again
 * by the NVRTC it records, in its working directory, when audit_trust.h
 * allows that library and every recorded input is unchanged. */
static void audit_program_entry(struct audit *a)
{
	struct cjc_audit_program p = { CJC_STRVEC_INIT, CJC_STRVEC_INIT, CJC_STRVEC_INIT };
	struct cjc_buf why = CJC_BUF_INIT;
	char *library = NULL;
	const char *cwd = meta_str(a->entry.meta, "cwd");
	int rc = -1;
	if (program_of(a, &p))
		;
	else if (cjc_audit_trust_nvrtc(a->entry.meta, &library, &why))
		add_note(a, "details", "%s", why.data);
	else if (enter_cwd(a, cwd))
		;
	else if (!check_inputs(a))
		rc = rebuild_program(a, library, &p);
	if (!rc)
		compare_program(a);
	set_status(a, rc ? "cannot rebuild" : json_object_get(a->result, "differences") ? "differs"
							 : "reproducible");
	cjc_strvec_clear(&p.header_names);
	cjc_strvec_clear(&p.headers);
	cjc_strvec_clear(&p.expressions);
	free(library);
	cjc_buf_release(&why);
}

/* An NVRTC entry of the JIT library (docs/jit.md): nothing runs but NVRTC,
 * loaded in this child when audit_trust.h allows that file. */
static void audit_nvrtc_entry(struct audit *a)
{
	json_t *meta = a->entry.meta, *argv = json_object_get(meta, "argv");
	size_t n = json_array_size(argv);
	const char *kind = meta_str(json_object_get(meta, "options"), "kind");
	const char *last = n > 1 ? json_string_value(json_array_get(argv, n - 1)) : NULL;
	if (last && !strcmp(last, a->keyed_source) && !strcmp(kind, "nvrtc")) {
		audit_program_entry(a);
		return;
	}
	char *artifact = cjc_xasprintf("output.%s", kind), *library = NULL;
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = -1;
	if (!last || strcmp(last, a->keyed_source))
		add_note(a, "details", "the recorded command does not end with the request's source %s",
			 a->keyed_source);
	else if ((strcmp(kind, "cubin") && strcmp(kind, "ptx")) ||
		 !cjc_entry_artifact(&a->entry, artifact))
		add_note(a, "details", "an NVRTC entry holds output.cubin or output.ptx, of its kind");
	else if (cjc_audit_trust_nvrtc(meta, &library, &why))
		add_note(a, "details", "%s", why.data);
	else if (!check_inputs(a))
		rc = rebuild_nvrtc(a, library, kind);
	if (!rc) {
		char *output = cjc_path_join(a->scratch, artifact), *keep_dir = cjc_path_join(a->scratch, "keep");
		struct cjc_diagnostics none = { 0 };
		compare(a, false, &none, output, keep_dir);
		free(output);
		free(keep_dir);
	}
	set_status(a, rc ? "cannot rebuild" : json_object_get(a->result, "differences") ? "differs"
							 : "reproducible");
	free(artifact);
	free(library);
	cjc_buf_release(&why);
}

/* From a verified entry: checks, rebuild, comparison. */
static void audit_verified(struct audit *a)
{
	if (check_writer(a) || plain_texts(a) || copy_jit_source(a))
		return set_status(a, "cannot rebuild");
	json_t *argv = json_object_get(a->entry.meta, "argv");
	if (a->keyed_source && !strcmp(meta_text(json_array_get(argv, 0)), "nvrtc"))
		return audit_nvrtc_entry(a);
	const char *cwd = meta_str(a->entry.meta, "cwd");
	if (enter_cwd(a, cwd))
		return set_status(a, "cannot rebuild");
	drop_relative_path_entries();
	struct cjc_strvec words = CJC_STRVEC_INIT;
	if (recorded_words(a, &words) || check_programs(a, cwd)) {
		cjc_strvec_clear(&words);
		return set_status(a, "cannot rebuild");
	}
	struct cjc_compile c;
	struct cjc_diagnostics d;
	/* base_dir rewrites the recorded command as it did then (place.h) */
	struct cjc_place where = { .cwd = cwd, .base_dir = base_dir(a->entry.meta),
				   .share_dirs = json_is_false(json_object_get(a->entry.meta, "hash_dir")) };
	cjc_compile_parse((int)words.n, words.v, &where, &c);
	/* cuobjdump beside the checked nvcc or on PATH, never where the entry says */
	cjc_diagnostics_from_json(&d, json_object_get(a->entry.meta, "diagnostics"),
				  a->run.nvcc_realpath);
	char *output = cjc_xasprintf("%s/output.%s", a->scratch, cjc_kind_ext(c.kind));
	char *keep_dir = cjc_path_join(a->scratch, "keep");
	if (c.uncacheable) {
		add_note(a, "details", "the recorded command is not one cjc caches: %s", c.uncacheable);
		set_status(a, "cannot rebuild");
	} else if (d.keep_sass && !d.cuobjdump) {
		add_note(a, "details", "the entry keeps SASS, and cuobjdump is not installed here");
		set_status(a, "cannot rebuild");
	} else if ((d.keep_ptx && mkdir(keep_dir, 0700)) ||
		   rebuild(a, &c, &d, output, d.keep_ptx ? keep_dir : NULL)) {
		set_status(a, "cannot rebuild");
	} else {
		compare(a, c.kind == CJC_KIND_OBJECT || c.kind == CJC_KIND_RDC_OBJECT, &d, output,
			keep_dir);
		set_status(a, json_object_get(a->result, "differences") ? "differs" : "reproducible");
	}
	free(output);
	free(keep_dir);
	cjc_diagnostics_release(&d);
	cjc_compile_release(&c);
	cjc_strvec_clear(&words);
}

static json_t *audit_entry(const char *key, const char *dir, const char *scratch)
{
	struct audit a = { .scratch = scratch, .result = json_object() };
	struct cjc_buf why = CJC_BUF_INIT;
	json_object_set_new(a.result, "key", json_string(key));
	if (cjc_entry_open_dir(dir, key, &a.entry, &why) != CJC_ENTRY_FOUND ||
	    cjc_entry_verify(&a.entry, &why)) {
		add_note(&a, "details", "the entry is damaged: %s (run `cjc verify --fix`)", why.data);
		set_status(&a, "cannot rebuild");
	} else {
		json_t *opts = json_object_get(a.entry.meta, "options");
		json_object_set(a.result, "kind", json_object_get(opts, "kind"));
		json_object_set(a.result, "source",
				json_object_get(json_array_get(json_object_get(a.entry.meta, "inputs"), 0), "path"));
		json_object_set(a.result, "command", json_object_get(a.entry.meta, "command"));
		json_object_set(a.result, "target", json_object_get(a.entry.meta, "target"));
		audit_verified(&a);
	}
	if (a.entry.dir)
		cjc_entry_release(&a.entry);
	cjc_audit_trust_release(&a.run);
	free(a.keyed_source);
	free(a.source_copy);
	cjc_buf_release(&a.code);
	cjc_buf_release(&why);
	return a.result;
}

/* ---- many entries: children, results, report ---- */

struct job_list {
	struct cjc_strvec keys, dirs;
};

/* path made absolute against the current directory: the children work in
 * the recorded ones (CJC_DIR=cache or TMPDIR=tmp must still mean the same). */
static char *absolute(const char *path)
{
	char cwd[PATH_MAX];
	if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
		return cjc_xstrdup(path);
	return cjc_path_join(cwd, path);
}

static int collect(const char *key, const char *dir, void *ctx)
{
	struct job_list *l = ctx;
	char *abs = absolute(dir);
	cjc_strvec_push(&l->keys, key);
	cjc_strvec_push(&l->dirs, abs);
	free(abs);
	return 0;
}

/* Runs one audit in a child that writes its result to result_path. */
static pid_t start_child(const char *key, const char *dir, const char *scratch, const char *result_path)
{
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid)
		return pid;
	/* a child dies with the audit: nobody would read its result, and it
	 * would write into a scratch directory that is being removed */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	int rc = 1;
	if (!mkdir(scratch, 0700)) {
		json_t *r = audit_entry(key, dir, scratch);
		rc = json_dump_file(r, result_path, JSON_COMPACT) ? 1 : 0;
		json_decref(r);
	}
	_exit(rc);
}

/* A result's field for the terminal: escaped, since source, kind and target
 * come from the entry's metadata as another member wrote it. */
static char *shown(json_t *r, const char *name)
{
	json_t *v = json_object_get(r, name);
	return v ? cjc_json_shown(v, CJC_JSON_NOT_TEXT) : cjc_xstrdup("");
}

static void print_result(json_t *r)
{
	static const char *const lists[] = { "details", "differences", "compared", "normalised" };
	static const char *const fields[] = { "status", "key", "source", "kind" };
	char *f[4];
	for (size_t i = 0; i < 4; i++)
		f[i] = shown(r, fields[i]);
	json_t *t = json_object_get(r, "target");
	char *target = t && !json_is_null(t) ? shown(r, "target") : NULL;
	printf("%-15s %.12s  %s (%s%s%s)\n", f[0], f[1], f[2], f[3], target ? ", target " : "",
	       target ? target : "");
	for (size_t i = 0; i < 4; i++)
		free(f[i]);
	free(target);
	for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
		size_t i;
		json_t *line;
		json_array_foreach(json_object_get(r, lists[l]), i, line) {
			char *text = cjc_json_shown(line, CJC_JSON_NOT_TEXT);
			printf("  %s: %s\n", lists[l], text);
			free(text);
		}
	}
}

struct tally {
	size_t reproducible, differs, cannot, done, total;
	size_t cwd_gone; /* of cannot: the working directory is gone */
};

static void count_result(struct tally *t, json_t *r)
{
	const char *status = meta_str(r, "status");
	if (!strcmp(status, "reproducible"))
		t->reproducible++;
	else if (!strcmp(status, "differs"))
		t->differs++;
	else
		t->cannot++;
	t->cwd_gone += json_is_true(json_object_get(r, "cwd_gone"));
	t->done++;
}

static void progress(const struct tally *t)
{
	if (isatty(2))
		fprintf(stderr, "\r\033[Kaudited %zu/%zu: %zu reproducible, %zu differ, %zu cannot rebuild",
			t->done, t->total, t->reproducible, t->differs, t->cannot);
}

/* Waits for one child and takes its result into results[i]; returns i, or -1. */
static long reap(pid_t *pids, size_t n, json_t **results, const char *tmp, const struct job_list *l)
{
	int status;
	pid_t pid = wait(&status);
	for (size_t i = 0; i < n; i++) {
		if (pids[i] != pid || pid <= 0)
			continue;
		pids[i] = 0;
		char *path = cjc_xasprintf("%s/%zu.json", tmp, i);
		results[i] = json_load_file(path, 0, NULL);
		if (!json_is_object(results[i])) {
			json_decref(results[i]);
			results[i] = json_pack("{s:s, s:s, s:[s]}", "key", l->keys.v[i], "status",
					       "cannot rebuild", "details", "the audit itself failed");
		}
		free(path);
		return (long)i;
	}
	return -1;
}

static int report(json_t **results, size_t n, const struct tally *t, bool json)
{
	if (json) {
		json_t *list = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append(list, results[i]);
		json_t *doc = json_pack("{s:o, s:I, s:I, s:I, s:I}", "entries", list, "reproducible",
					(json_int_t)t->reproducible, "differs", (json_int_t)t->differs,
					"cannot_rebuild", (json_int_t)t->cannot, "cwd_gone",
					(json_int_t)t->cwd_gone);
		cjc_print_json(doc);
	} else {
		for (size_t i = 0; i < n; i++)
			print_result(results[i]);
		printf("audited %zu %s: %zu reproducible, %zu differ, %zu cannot rebuild", n,
		       n == 1 ? "entry" : "entries", t->reproducible, t->differs, t->cannot);
		if (t->cwd_gone)
			printf(" (%zu because the working directory is gone)", t->cwd_gone);
		putchar('\n');
	}
	return t->reproducible == n ? 0 : 1;
}

/* Removes the scratch directories of audits on this host that are gone
 * (killed, so they could not remove their own); ours only. */
static void reclaim_scratch(const char *base)
{
	char *prefix = cjc_xasprintf(SCRATCH_PREFIX ".%s.", cjc_hostname());
	DIR *d = opendir(base);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char *end;
		if (!cjc_starts_with(de->d_name, prefix))
			continue;
		long pid = strtol(de->d_name + strlen(prefix), &end, 10);
		if (pid <= 0 || *end != '.' || !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		char *path = cjc_path_join(base, de->d_name);
		struct stat st;
		if (!lstat(path, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
			(void)cjc_remove_tree(path);
		free(path);
	}
	if (d)
		closedir(d);
	free(prefix);
}

/* This audit's scratch directory, registered for removal (fs.h); NULL with errno. */
static char *make_scratch(const char *base)
{
	char *prefix = cjc_path_join(base, SCRATCH_PREFIX), *dir = NULL;
	for (int tries = 0; !dir && tries < 8; tries++) {
		dir = cjc_unique_name(prefix);
		if (mkdir(dir, 0700)) {
			int e = errno;
			free(dir);
			dir = NULL;
			errno = e;
			if (e != EEXIST)
				break;
		}
	}
	if (dir)
		cjc_tempfile_add(dir);
	free(prefix);
	return dir;
}

/* $TMPDIR (else /tmp), made absolute, also for the nvcc the audit runs. */
static char *scratch_base(void)
{
	const char *tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir)
		return cjc_xstrdup("/tmp");
	char *base = absolute(tmpdir);
	if (strcmp(base, tmpdir))
		setenv("TMPDIR", base, 1);
	return base;
}

static int audit_list(const struct job_list *l, int jobs, bool json)
{
	size_t n = l->keys.n;
	char *base = scratch_base();
	reclaim_scratch(base);
	char *tmp = make_scratch(base);
	if (!tmp) {
		fprintf(stderr, "cjc audit: cannot make a scratch directory in %s: %s (set TMPDIR)\n",
			base, strerror(errno));
		free(base);
		return 1;
	}
	free(base);
	json_t **results = cjc_xcalloc(n + 1, sizeof *results);
	pid_t *pids = cjc_xcalloc(n + 1, sizeof *pids);
	struct tally t = { .total = n };
	size_t running = 0;
	for (size_t i = 0; i < n || running; ) {
		if (i < n && running < (size_t)jobs) {
			char *scratch = cjc_xasprintf("%s/%zu", tmp, i);
			char *result = cjc_xasprintf("%s/%zu.json", tmp, i);
			pids[i] = start_child(l->keys.v[i], l->dirs.v[i], scratch, result);
			running += pids[i] > 0;
			free(scratch);
			free(result);
			i++;
			continue;
		}
		long done = reap(pids, n, results, tmp, l);
		if (done < 0 && errno == ECHILD)
			break;
		if (done >= 0) {
			running--;
			count_result(&t, results[done]);
			progress(&t);
		}
	}
	if (isatty(2) && n)
		fputs("\r\033[K", stderr);
	for (size_t k = 0; k < n; k++)
		if (!results[k]) {
			results[k] = json_pack("{s:s, s:s, s:[s]}", "key", l->keys.v[k], "status",
					       "cannot rebuild", "details", "the audit could not start");
			count_result(&t, results[k]);
		}
	int rc = report(results, n, &t, json);
	for (size_t k = 0; k < n; k++)
		json_decref(results[k]);
	free(results);
	free(pids);
	cjc_tempfile_remove(tmp);
	free(tmp);
	return rc;
}

int cjc_audit(const struct cjc_store *s, const struct cjc_audit_options *o)
{
	struct job_list l = { 0 };
	const char *prefix = strcmp(o->what, "all") ? o->what : NULL;
	audit_trusted_keys = o->trusted_keys;
	struct cjc_key_match m = { 0 };
	if (prefix && (strlen(prefix) > CJC_HEX_LEN || strspn(prefix, "0123456789abcdef") != strlen(prefix))) {
		fprintf(stderr, "cjc audit: '%s' is not a key or key prefix (lowercase hex) nor 'all'\n", prefix);
		return 2;
	}
	if (prefix)
		cjc_store_find_key(s, prefix, &m);
	else
		cjc_store_foreach_entry(s, collect, &l);
	int rc = 0;
	if (prefix && m.matches != 1) {
		fprintf(stderr, "cjc audit: %s entry matches '%s'\n", m.matches ? "more than one" : "no",
			prefix);
		rc = 1;
	} else if (prefix) {
		collect(m.key, m.dir, &l);
	}
	if (!rc)
		rc = audit_list(&l, o->jobs, o->json);
	free(m.dir);
	cjc_strvec_clear(&l.keys);
	cjc_strvec_clear(&l.dirs);
	return rc;
}

json_t *cjc_audit_compare_output(const struct cjc_entry *e, const char *name, bool object,
				 const char *rebuilt, const char *scratch)
{
	struct audit a = { .scratch = scratch, .entry = *e, .result = json_object() };
	(object ? compare_object : compare_bytes)(&a, name, rebuilt);
	json_t *d = json_object_get(a.result, "differences");
	d = d ? json_incref(d) : json_array();
	json_decref(a.result);
	return d;
}
