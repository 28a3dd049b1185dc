/*
 * remote_backend.h - the backend seam: what a backend (remote_redis.c,
 * remote_http.c, remote_oci.c, and helper.c's helped backend) shares
 * with the seam that picks and calls it (remote.c, remote.h).  Private to
 * this folder, but for helper.h: the helper's process
 * (src/tool/helper_cmd.c) runs a backend of its own.
 *
 * A backend is given a store's URL with its attributes (struct
 * cjc_remote_url, parsed by setting.c), answers each call with one enum
 * cjc_remote_result, and says why in `why` on CJC_REMOTE_ERROR or
 * CJC_REMOTE_TIMEOUT, in a message that names no secret, prefixed
 * "setting: " when the user's settings are at fault (refused credentials,
 * a bad URL), so that the tool says it once.  It never prints or exits.
 *
 * The deadline: before each call the seam sets u->deadline_ms to what is
 * left of the handle's operation-timeout (remote.h); the backend stops
 * waiting at it (cjc_remote_time_left), and a call that would start after
 * it is a timeout.
 *
 * Nothing here uses the seam: a backend includes this header, layout.h
 * (the values it may look into) and its own, never remote.h.
 */
#ifndef CJC_REMOTE_BACKEND_H
#define CJC_REMOTE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

enum cjc_remote_result { CJC_REMOTE_OK, CJC_REMOTE_ABSENT, CJC_REMOTE_ERROR, CJC_REMOTE_TIMEOUT };

/* The largest artifact fetched from a remote store: fetched whole into
 * memory to be checked, so a record that names more is not believed. */
#define CJC_REMOTE_MAX_ARTIFACT ((uint64_t)1 << 30)

/* What a backend was asked to reach, parsed from one URL and its attributes.
 * A backend keeps a pointer to it (it outlives the backend) and reads
 * deadline_ms at each request. */
struct cjc_remote_url {
	char *url;      /* as written, shard name substituted */
	char *shown;    /* with any password as *** (for messages, stats, logs) */
	bool read_only;
	long connect_ms, operation_ms;
	char *bearer_token_file; /* http(s), oci */
	char *credentials_file;  /* oci: one line USER:SECRET */
	char *ca_file;           /* https, s3, oci */
	bool helper;             /* http(s), s3, oci: through the store's helper (helper.h), unless no-helper */
	long helper_idle_ms;     /* how long that helper waits for clients before it exits */
	int64_t deadline_ms;     /* cjc_now_ms() by which the request must end; 0: operation_ms from its start */
};

/* Milliseconds left to a request starting now: to u's deadline, or
 * operation_ms where none is set; <= 0 when it has passed.  A connection
 * waits the smaller of this and connect_ms. */
long cjc_remote_time_left(const struct cjc_remote_url *u);

/* A backend's calls.  Each returns an enum cjc_remote_result, with a
 * message in why on CJC_REMOTE_ERROR/TIMEOUT (above). */
struct cjc_remote_backend;
struct cjc_remote_ops {
	struct cjc_remote_backend *(*open)(const struct cjc_remote_url *u, struct cjc_buf *why);
	int (*get)(struct cjc_remote_backend *b, const char *name, size_t max, struct cjc_buf *out,
		   struct cjc_buf *why);
	/* only_if_absent: leave an existing value (first writer wins). */
	int (*put)(struct cjc_remote_backend *b, const char *name, const void *p, size_t n,
		   bool only_if_absent, struct cjc_buf *why);
	int (*exists)(struct cjc_remote_backend *b, const char *name, struct cjc_buf *why);
	void (*close)(struct cjc_remote_backend *b);
	/* Leases (optional: NULL where the backend has none).  lease takes
	 * name with value for ttl_ms unless it is there: CJC_REMOTE_OK, taken;
	 * CJC_REMOTE_ABSENT, not taken (another holds it).  unlease removes
	 * it, or lets it expire at once, when it still holds value. */
	int (*lease)(struct cjc_remote_backend *b, const char *name, const char *value, long ttl_ms,
		     struct cjc_buf *why);
	int (*unlease)(struct cjc_remote_backend *b, const char *name, const char *value,
		       struct cjc_buf *why);
	/* Whether the store keeps combined values (NS/x, remote.h), as any
	 * other value: not a registry, which embeds an entry in its manifests
	 * instead (remote_oci.c) and has no place for them. */
	bool combined;
};

extern const struct cjc_remote_ops cjc_remote_redis_ops; /* redis://, redis+unix: */
extern const struct cjc_remote_ops cjc_remote_http_ops;  /* http://, https://, s3:// */
extern const struct cjc_remote_ops cjc_remote_oci_ops;   /* oci://, oci+http:// */

#endif
