#include "compile/diagnostics.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/run.h"
#include "base/util.h"
#include "keys/metadata.h"
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Beside nvcc (the toolkit's own), else on PATH (nvcc may be a wrapper). */
char *cjc_diagnostics_find_tool(const char *nvcc_realpath, const char *name)
{
	char *dir = nvcc_realpath ? cjc_dirname(nvcc_realpath) : NULL;
	char *path = dir ? cjc_path_join(dir, name) : NULL;
	free(dir);
	if (path && !access(path, X_OK))
		return path;
	free(path);
	path = cjc_find_program(name);
	if (path && access(path, X_OK)) {
		free(path);
		path = NULL;
	}
	return path;
}

void cjc_diagnostics_init(struct cjc_diagnostics *d, bool keep_ptx, bool keep_sass,
			  bool check_spills, const char *nvcc_realpath)
{
	d->keep_ptx = keep_ptx;
	d->keep_sass = keep_sass;
	d->check_spills = check_spills;
	d->cuobjdump = keep_sass ? cjc_diagnostics_find_tool(nvcc_realpath, "cuobjdump") : NULL;
}

void cjc_diagnostics_from_json(struct cjc_diagnostics *d, json_t *o, const char *nvcc_realpath)
{
	cjc_diagnostics_init(d, json_is_true(json_object_get(o, "keep_ptx")),
			     json_is_true(json_object_get(o, "keep_sass")),
			     json_is_true(json_object_get(o, "check_spills")), nvcc_realpath);
}

void cjc_diagnostics_release(struct cjc_diagnostics *d)
{
	free(d->cuobjdump);
	d->cuobjdump = NULL;
}

json_t *cjc_diagnostics_json(const struct cjc_diagnostics *d)
{
	bool sass = d->keep_sass && d->cuobjdump;
	if (!d->keep_ptx && !sass && !d->check_spills)
		return NULL;
	return json_pack("{s:b, s:b, s:b}", "keep_ptx", d->keep_ptx, "keep_sass", sass,
			 "check_spills", d->check_spills);
}

void cjc_diagnostics_add_key(const struct cjc_diagnostics *d, struct cjc_compile *c)
{
	const char *words[3];
	size_t n = 0;
	if (d->keep_ptx)
		words[n++] = "cjc:keep_ptx";
	if (d->keep_sass && d->cuobjdump)
		words[n++] = "cjc:keep_sass";
	if (d->check_spills)
		words[n++] = "cjc:check_spills";
	cjc_strvec_pushv(&c->key_args, (char *const *)words, n);
	cjc_strvec_pushv(&c->key_units, (char *const *)words, n);
}

void cjc_diagnostics_add_args(const struct cjc_diagnostics *d, const char *keep_dir,
			      struct cjc_strvec *argv)
{
	if (d->check_spills) {
		cjc_strvec_push(argv, "-Xptxas");
		cjc_strvec_push(argv, "-warn-spills,-warn-lmem-usage");
	}
	if (keep_dir) {
		cjc_strvec_push(argv, "-keep");
		cjc_strvec_push(argv, "-keep-dir");
		cjc_strvec_push(argv, keep_dir);
	}
}

static int stage_kept_ptx(const char *keep_dir, struct cjc_staging *st, struct cjc_buf *why)
{
	DIR *dir = opendir(keep_dir);
	if (!dir) {
		cjc_buf_addf(why, "cannot read %s: %s", keep_dir, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (struct dirent *de; !rc && (de = readdir(dir));) {
		if (!cjc_ends_with(de->d_name, ".ptx"))
			continue;
		char *name = cjc_xasprintf("kept-%s", de->d_name);
		char *path = cjc_path_join(keep_dir, de->d_name);
		if (!cjc_artifact_name_ok(name))
			cjc_log("keep_ptx: %s has a name the store cannot hold; not kept", path);
		else if ((rc = cjc_staging_add_file(st, name, path)))
			cjc_buf_addf(why, "cannot keep %s: %s", path, strerror(errno));
		free(path);
		free(name);
	}
	closedir(dir);
	return rc;
}

/* cuobjdump tells a file's type by its name: it reads a link named output.<ext>.
 * A listing cuobjdump cannot make is logged; the entry is kept without it. */
static int stage_sass(const char *cuobjdump, const char *output, const char *ext,
		      struct cjc_staging *st, struct cjc_buf *why)
{
	char *named = cjc_xasprintf("%s.sass.%s", output, ext);
	char *argv[] = { (char *)cuobjdump, "-sass", named, NULL };
	struct cjc_buf sass = CJC_BUF_INIT;
	int status = link(output, named) ? -1 : cjc_run_capture(argv, &sass);
	int rc = 0;
	unlink(named);
	if (status)
		cjc_log("keep_sass: %s -sass failed on %s (status %d); no SASS kept", cuobjdump, output,
			status);
	else if (sass.len && (rc = cjc_staging_add_data(st, "sass.txt", sass.data, sass.len)))
		cjc_buf_addf(why, "cannot keep the SASS: %s", strerror(errno));
	cjc_buf_release(&sass);
	free(named);
	return rc;
}

int cjc_diagnostics_stage(const struct cjc_diagnostics *d, const char *keep_dir,
			  const char *output, const char *ext, struct cjc_staging *st,
			  struct cjc_buf *why)
{
	if (d->keep_ptx && stage_kept_ptx(keep_dir, st, why))
		return -1;
	if (d->keep_sass && d->cuobjdump && stage_sass(d->cuobjdump, output, ext, st, why))
		return -1;
	return 0;
}

/* What one line of nvcc's stderr reports: a ptxas warning from
 * -warn-spills or -warn-lmem-usage, or a -v line with spills. */
static unsigned ptxas_line(const char *line, size_t n)
{
	char *s = cjc_xstrndup(line, n);
	unsigned long stores = 0, loads = 0;
	const char *v = strstr(s, "bytes spill stores");
	bool warning = strstr(s, "ptxas warning");
	unsigned said = 0;
	if ((warning && strstr(s, "spilled")) ||
	    (v && sscanf(s, "%*[^,], %lu bytes spill stores, %lu bytes spill loads", &stores,
			 &loads) == 2 && (stores || loads)))
		said |= CJC_PTXAS_SPILLS;
	if (warning && strstr(s, "Local memory used"))
		said |= CJC_PTXAS_LOCAL_MEMORY;
	free(s);
	return said;
}

unsigned cjc_diagnostics_ptxas(const char *err, size_t len)
{
	unsigned said = 0;
	for (const char *p = err, *end = err + len; err && p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
		said |= ptxas_line(p, n);
		p += n + 1;
	}
	return said;
}

bool cjc_diagnostics_spilled(const char *err, size_t len)
{
	return cjc_diagnostics_ptxas(err, len) != 0;
}

void cjc_diagnostics_print_command(char *const *argv)
{
	struct cjc_buf line = CJC_BUF_INIT;
	size_t n = 0;
	while (argv[n])
		n++;
	cjc_buf_adds(&line, "Running command: ");
	cjc_shell_quote(&line, argv, n);
	cjc_buf_add(&line, "\n", 1);
	(void)!cjc_write_all(2, line.data, line.len);
	cjc_buf_release(&line);
}
