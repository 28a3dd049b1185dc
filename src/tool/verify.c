#include "verify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include "audit.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/run.h"
#include "base/util.h"
#include "compile/why.h"
#include "store/journal.h"
#include "store/maintain.h"
#include "store/stats.h"

/* Whether this hit is one of the sampled fraction. */
static bool sampled(double rate)
{
	uint64_t r;
	if (rate <= 0 || getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		return false;
	return (double)(r >> 11) / (double)(UINT64_C(1) << 53) < rate;
}

/* A free verifier slot of this user's, locked; -1 when every one is busy. */
static int take_slot(const struct cjc_store *s)
{
	if (cjc_store_make_dirs(s, "verify"))
		return -1;
	for (int i = 0; i < CJC_VERIFY_SLOTS; i++) {
		char name[64];
		snprintf(name, sizeof name, "slot-%u-%d", (unsigned)getuid(), i);
		int fd = cjc_store_own_file(s, "verify", name);
		if (fd >= 0 && !cjc_lock_bounded(fd, LOCK_EX))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

static void count(const struct cjc_verify *v, enum cjc_counter what)
{
	if (cjc_stats_bump(v->store, what, 0))
		cjc_log("cannot update the counters: %s", strerror(errno));
}

/* The journal's record of a mismatch (why.h: result "mismatch"). */
static void record_mismatch(const struct cjc_verify *v, json_t *differences)
{
	json_t *r = cjc_why_record("mismatch", v->cwd, v->source, v->output, v->target);
	const char *first = json_string_value(json_array_get(differences, 0));
	char *reason = cjc_xasprintf("entry %.12s did not reproduce when it was compiled again "
				     "(verify_rate): %s; it is never served again", v->key,
				     first ? first : "it differs");
	struct cjc_buf command = CJC_BUF_INIT;
	size_t argc = 0;
	while (v->argv[argc])
		argc++;
	cjc_shell_quote(&command, v->argv, argc);
	json_object_set_new(r, "entry", json_string(v->key));
	json_object_set_new(r, "reason", cjc_json_bytes(reason));
	json_object_set_new(r, "differences", json_incref(differences));
	json_object_set_new(r, "command", cjc_json_bytes(command.data ? command.data : ""));
	if (cjc_journal_append(v->store, r))
		cjc_log("cannot write the journal: %s", strerror(errno));
	json_decref(r);
	free(reason);
	cjc_buf_release(&command);
}

/* nvcc again into scratch; the differences from the entry (a JSON array). */
static json_t *compile_again(const struct cjc_verify *v, const struct cjc_entry *e,
			     const char *scratch)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	char *out = cjc_path_join(scratch, "output");
	for (size_t i = 0; v->argv[i]; i++)
		cjc_strvec_push(&argv, v->argv[i]);
	cjc_strvec_push(&argv, "-o");
	cjc_strvec_push(&argv, out);
	int status = cjc_run(argv.v, CJC_RUN_NULL, CJC_RUN_NULL);
	json_t *d;
	if (status) {
		d = json_array();
		json_array_append_new(d, json_sprintf("nvcc failed (status %d) where the hit was "
						      "served", status));
	} else {
		d = cjc_audit_compare_output(e, v->artifact, v->object, out, scratch);
	}
	cjc_strvec_clear(&argv);
	free(out);
	return d;
}

/* The verifier's work, in its own process. */
static void verify(const struct cjc_verify *v)
{
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	const char *tmp = getenv("TMPDIR");
	char *scratch = cjc_xasprintf("%s/cjc-verify.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(scratch) ||
	    cjc_store_open_entry(v->store, v->key, &e, &why) != CJC_ENTRY_FOUND) {
		count(v, CJC_STAT_VERIFY_SKIPPED);
	} else {
		json_t *differences = compile_again(v, &e, scratch);
		if (!json_array_size(differences)) {
			count(v, CJC_STAT_VERIFIED);
		} else {
			count(v, CJC_STAT_VERIFY_MISMATCHES);
			if (cjc_store_mark_unsound(v->store, v->key))
				cjc_log("cannot mark %s unsound: %s", v->key, strerror(errno));
			record_mismatch(v, differences);
			cjc_log("verify: entry %s did not reproduce; never served again", v->key);
		}
		json_decref(differences);
		cjc_entry_release(&e);
		(void)cjc_remove_tree(scratch);
	}
	free(scratch);
	cjc_buf_release(&why);
}

/* Closes every descriptor but 0-2, the store's and keep. */
static void close_others(int store_fd, int keep)
{
	int lo = store_fd < keep ? store_fd : keep, hi = store_fd < keep ? keep : store_fd;
	if (lo > 3)
		close_range(3, (unsigned)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
	close_range((unsigned)hi + 1, ~0U, 0);
}

/* Detaches this process from the build: a session of its own, /dev/null
 * for the standard streams, no other descriptor but those it needs. */
static void detach(const struct cjc_verify *v, int slot)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		(void)dup2(null, fd);
	if (null > 2)
		close(null);
	close_others(v->store->fd, slot);
	(void)setsid();
}

void cjc_verify_sample(const struct cjc_verify *v)
{
	if (!sampled(v->rate))
		return;
	int slot = v->device_debug ? -1 : take_slot(v->store);
	if (slot < 0) {
		cjc_log("verify: %s not compiled again: %s", v->key,
			v->device_debug ? "-G output is never the same twice" : "every verifier is busy");
		count(v, CJC_STAT_VERIFY_SKIPPED);
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		detach(v, slot);
		verify(v);
		_exit(0);
	}
	if (pid < 0)
		count(v, CJC_STAT_VERIFY_SKIPPED);
	close(slot); /* the child holds the lock until it exits */
}
