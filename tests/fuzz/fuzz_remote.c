/* fuzz_remote.c - libFuzzer: what a remote store returns (remote.h): an
 * entry record, which must round-trip whatever it accepts, its metadata
 * under the strict parser, its signature against a trusted key (sign.h),
 * the same bytes as a combined value (layout.h), which must round-trip
 * too, and as a manifest file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudajitcache.h"

static char trusted[64];

/* One trusted public key, written once (the sign tests make their own). */
static void make_trusted(void)
{
	static const char pem[] = "-----BEGIN PUBLIC KEY-----\n"
				  "MCowBQYDK2VwAyEAIgH3v6BQtxonPVcw56gFNwBhrId1dVrtn26WYF/9m8U=\n"
				  "-----END PUBLIC KEY-----\n";
	snprintf(trusted, sizeof trusted, "/tmp/fuzz_remote.%d.pem", (int)getpid());
	FILE *f = fopen(trusted, "w");
	if (!f || fputs(pem, f) < 0 || fclose(f))
		abort();
}

/* A combined value that decodes must encode to the same bytes, and stay
 * within its bounds. */
static void combined(const uint8_t *data, size_t size)
{
	struct cjc_remote_combined c;
	struct cjc_buf again = CJC_BUF_INIT;
	if (cjc_remote_decode_combined(data, size, &c))
		return;
	size_t total = 0;
	for (size_t i = 0; i < c.nfiles; i++)
		total += c.files[i].n;
	cjc_remote_encode_combined(&c, &again);
	if (again.len != size || memcmp(again.data, data, size) || total > CJC_REMOTE_INLINE_MAX ||
	    c.nfiles > CJC_REMOTE_INLINE_FILES || !c.record_len ||
	    (c.nfiles &&
	     cjc_remote_inline_find(&c, c.files[c.nfiles - 1].sha) != &c.files[c.nfiles - 1]))
		__builtin_trap(); /* what we read, we must write back the same; no hash twice */
	cjc_buf_release(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!trusted[0])
		make_trusted();
	struct cjc_buf meta = CJC_BUF_INIT, sig = CJC_BUF_INIT, why = CJC_BUF_INIT;
	struct cjc_buf again = CJC_BUF_INIT, meta2 = CJC_BUF_INIT, sig2 = CJC_BUF_INIT;
	if (!cjc_remote_decode_record(data, size, &meta, &sig)) {
		cjc_remote_encode_record(&meta, &sig, &again);
		if (cjc_remote_decode_record(again.data, again.len, &meta2, &sig2) ||
		    meta.len != meta2.len || memcmp(meta.data, meta2.data, meta.len) ||
		    sig.len != sig2.len || (sig.len && memcmp(sig.data, sig2.data, sig.len)))
			__builtin_trap(); /* what we encode, we must read */
		json_t *doc = cjc_metadata_parse(meta.data, meta.len, NULL, &why);
		json_decref(doc);
		(void)cjc_sign_verify(trusted, meta.data, meta.len, sig.data, sig.len, &why);
	}
	combined(data, size);
	/* the raw bytes as a signature over themselves, and as a manifest */
	(void)cjc_sign_verify(trusted, data, size, data, size, &why);
	struct cjc_manifest m;
	if (!cjc_manifest_decode_file(data, size, &m))
		cjc_manifest_release(&m);
	cjc_buf_release(&meta);
	cjc_buf_release(&sig);
	cjc_buf_release(&why);
	cjc_buf_release(&again);
	cjc_buf_release(&meta2);
	cjc_buf_release(&sig2);
	return 0;
}
