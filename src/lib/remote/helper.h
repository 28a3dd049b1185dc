/*
 * helper.h - the HTTP helper (docs/remote.md#the-http-helper): a process of
 * this user's that keeps libcurl loaded and its connections open for every
 * cjc compile of one http://, https://, s3:// or oci:// store (the OCI
 * backend's bearer tokens too), or of a redis:// store whose URL has the
 * helper attribute (its connection, AUTH done), as ccache's storage
 * helpers and sccache's server do.  Loading libcurl and the thirty
 * libraries it brings costs each process more than a whole remote hit of
 * ccache's (measured: 14 to 19 ms here); asking the helper costs a local
 * socket.
 *
 * Used for every such store unless its `no-helper` attribute, or the
 * remote_helper setting, says not; only `cjc nvcc` uses it
 * (cjc_helper_allow), never the JIT library or the shim, which live in
 * users' processes.  Only gets go through it (a hit's requests); puts,
 * exists and leases, which come after a compile, stay in the process.
 *
 * Where: a directory only this user can enter, $XDG_RUNTIME_DIR/cudajitcache
 * (when XDG_RUNTIME_DIR is this user's) or /tmp/cudajitcache-<uid>, made
 * 0700 and checked to be this user's own, 0700, a real directory (else no
 * helper: the compile asks the server itself).  In it the user's secret,
 * `key` (32 random bytes, 0600), and for each store's settings <name>.sock
 * and <name>.lock, <name> a hash, keyed with that secret (a socket's name
 * is in /proc/net/unix for everyone to read), of everything that decides
 * what the helper does: the URL (credentials included), the token's
 * bytes, the CA files and their stamps, the network namespace,
 * the connect timeout, the variables libcurl and what it loads read, the
 * helper's format.  Paths are reached through the directory's fd
 * (/proc/self/fd/N/...), never by name again.  The helper's environment
 * holds only those variables and XDG_RUNTIME_DIR, and it is not dumpable
 * (its /proc files are not its user's to read).
 *
 * Who: the helper takes peers of its own user only (SO_PEERCRED), and a
 * client talks only to a helper of its own user.  The helper holds the
 * store's lock (flock) while it lives, so two never serve one name; a
 * client starts one (posix_spawn, its own session, all other fds closed,
 * the settings on a pipe, never in argv) only when that lock is free, and
 * asks the server itself meanwhile.
 *
 * Bounded: a helper serves at most CJC_HELPER_MAX_CLIENTS clients at once,
 * each request within the deadline its client sent; it exits after the
 * store's helper-idle time without clients, or once its socket is no
 * longer at its name (its directory removed, say).  A client waits for
 * the helper at most the store's connect-timeout to be greeted and its
 * own deadline for an answer, checks that every answer is well formed and
 * within the bound it asked for, and on any failure of the helper asks
 * the server itself for the rest of the compile.  Nothing a helper does
 * fails a build.
 *
 * The protocol, in host byte order (both ends are this machine's cjc):
 *     greeting, helper to client:  "CJCH" u32 CJC_HELPER_VERSION
 *     get request:                 u8 'g', u16 name length, name,
 *                                  u64 max, u32 milliseconds left
 *     answer:                      u8 result (enum cjc_remote_result),
 *                                  u64 length, the value (CJC_REMOTE_OK,
 *                                  at most max) or a message (errors, at
 *                                  most CJC_HELPER_MAX_MESSAGE)
 */
#ifndef CJC_HELPER_H
#define CJC_HELPER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/hash.h"
#include "remote/remote_backend.h"

#define CJC_HELPER_VERSION 1u
#define CJC_HELPER_MAX_CLIENTS 64
#define CJC_HELPER_MAX_MESSAGE 1024
#define CJC_HELPER_MAX_NAME 1024
/* A build's compiles come seconds apart; past a minute, the next start costs
 * one helper start (docs/remote.md#the-http-helper). */
#define CJC_HELPER_DEFAULT_IDLE_MS (60 * 1000L)

/* The helped backend: gets through the store's helper when it can,
 * everything else (and every get, where no helper answers) through the
 * store's backend (cjc_helper_backend_ops) in this process.  The leasing
 * one, for a backend that takes leases (Redis), passes them through. */
extern const struct cjc_remote_ops cjc_remote_helped_ops;
extern const struct cjc_remote_ops cjc_remote_helped_leasing_ops;

/* The backend a helper (and the helped backend in this process) asks the
 * store through: cjc_remote_oci_ops for oci:// and oci+http://,
 * cjc_remote_redis_ops for redis:// and redis+unix:, else
 * cjc_remote_http_ops. */
const struct cjc_remote_ops *cjc_helper_backend_ops(const char *url);

/* Lets this process use and start helpers (`cjc nvcc`); without it the
 * helped backend is the http backend. */
void cjc_helper_allow(void);

/* The store's name in it (hex, CJC_HEX_LEN + 1 bytes), keyed with the
 * user's secret there (32 bytes). */
void cjc_helper_name(const struct cjc_remote_url *u, const unsigned char *key, char *name);

/* One get asked of the helper connected at fd (greeted): the store's
 * result (enum cjc_remote_result), its value in out (at most max bytes) or
 * its message in why; or CJC_HELPER_BROKEN when the helper failed or
 * answered out of bounds.  Exported for tests/fuzz/fuzz_helper.c. */
#define CJC_HELPER_BROKEN (-100)
int cjc_helper_get(int fd, const struct cjc_remote_url *u, const char *name, size_t max,
		   struct cjc_buf *out, struct cjc_buf *why);

/* The settings a helper is started with, on its stdin (JSON: its name and
 * the store's settings, the files' paths absolute), and back. */
void cjc_helper_encode_settings(const struct cjc_remote_url *u, const char *name,
				struct cjc_buf *out);
int cjc_helper_decode_settings(const char *text, size_t len, struct cjc_remote_url *u,
			       char *name);

#endif
