/*
 * remote_internal.h - what the seam's files share (private to this folder):
 * a handle's stores and servers, the requests to them, and the parsed
 * `remote` setting.  remote.c opens a handle and makes its requests
 * (remote_call and the three below it: the deadline, the failure policy,
 * the counting of remote.h); setting.c parses the setting; fetch.c,
 * send.c, leases.c and check.c are built on those.  Nothing here is a
 * backend's: the backends see remote_backend.h alone.
 */
#ifndef CJC_REMOTE_INTERNAL_H
#define CJC_REMOTE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"
#include "remote/remote_backend.h"
#include "store/stats.h"

#define MAX_SHARDS 64

struct cjc_store;

/* One server: a URL, or one shard of a sharded URL. */
struct remote_server {
	struct cjc_remote_url u;
	const struct cjc_remote_ops *ops;
	struct cjc_remote_backend *b;
	char *shard;   /* the shard's name, or NULL */
	double weight;
	bool failed;   /* for the rest of this handle (docs/remote.md: failure) */
};

/* One store of the setting: its servers, its counters. */
struct remote_group {
	char *shown;
	bool read_only;
	struct remote_server *servers;
	size_t n;
	uint64_t counts[CJC_STAT_COUNT];
	long operation_ms; /* what all its requests of this handle may take together */
	int64_t spent_ms;  /* what they took so far */
	char broken[CJC_HEX_LEN + 1]; /* an entry whose record is here but an artifact is not */
	bool combined;                /* its backend keeps combined values (remote_backend.h) */
};

struct cjc_remotes {
	struct remote_group *groups;
	size_t n;
	const struct cjc_store *local;
	char *sign_key;     /* signs the manifests this handle writes (remote.h) */
	char *trusted_keys;
	void (*report)(const char *store, const char *message); /* cjc_remote_report_fn */
	char ns[64];
	long budget_ms;   /* what all requests to all stores may take together: the largest operation-timeout */
	int64_t spent_ms; /* what they took so far */
	char *lease_value; /* what this handle's lease holds: its holder's name */
	bool lease_taken;
};


/* --- the setting (setting.c) -------------------------------------------- */

/* One store word of the setting, parsed: URL|attr|attr... */
struct remote_spec {
	struct cjc_remote_url u; /* url with the '*' still in it */
	char *shown;             /* the url as shown (with any password as ***) */
	struct cjc_strvec shards;
	double weights[MAX_SHARDS];
	enum { HELPER_DEFAULT, HELPER_ON, HELPER_OFF } helper; /* as written */
};

/* Parses one word into sp (released by remote_spec_release, whatever the
 * result): 0, or -1 with why. */
int remote_parse_store(const char *word, struct remote_spec *sp, struct cjc_buf *why);
void remote_spec_release(struct remote_spec *sp);
/* Calls fn for each store word of the setting; stops at the first failure. */
int remote_foreach_word(const char *text, int (*fn)(const char *word, void *ctx), void *ctx);
/* The backend this cjc was built with for url's scheme, or NULL. */
const struct cjc_remote_ops *remote_ops_for(const char *url);

/* --- requests (remote.c) -------------------------------------------------- */

enum remote_op { REMOTE_GET, REMOTE_PUT, REMOTE_PUT_NEW, REMOTE_EXISTS, REMOTE_LEASE, REMOTE_UNLEASE };

/* A request to the server of g that holds name, within what is left of the
 * store's operation-timeout and of the handle's (remote.h: the deadline);
 * an error or a timeout fails the server for the handle, counted and
 * logged.  max: a get's bound, a lease's milliseconds; data: what a get
 * reads into, what a put or a lease sends.  An enum cjc_remote_result. */
int remote_call(struct cjc_remotes *r, struct remote_group *g, enum remote_op op, const char *name,
		size_t max, struct cjc_buf *data);
/* The name of kind ('c', 'e', 'x', 'm', 'l') and hex in the handle's namespace
 * (NS/kind/hex, remote.h), malloc'd. */
char *remote_name(const struct cjc_remotes *r, char kind, const char *hex);
/* remote_call for the value NS/kind/hex: out reset first, for a get. */
int remote_get(struct cjc_remotes *r, struct remote_group *g, char kind, const char *hex, size_t max,
	       struct cjc_buf *out);
int remote_put(struct cjc_remotes *r, struct remote_group *g, char kind, const char *hex, bool only_new,
	       struct cjc_buf *data);
int remote_exists(struct cjc_remotes *r, struct remote_group *g, char kind, const char *hex);
/* A whole compile's worth of bad data from one store: that store is done
 * for the handle (counted once).  Returns -1. */
int remote_bad_data(struct cjc_remotes *r, struct remote_group *g, const char *what, const char *key,
		    const char *reason);

#endif
