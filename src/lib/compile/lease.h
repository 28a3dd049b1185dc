/*
 * lease.h - one compile per key at a time (docs/fleet.md: leases), for
 * cjc's launcher and the JIT library's nvcc path alike.
 *
 * A compile that missed everywhere takes a lease on its direct key (what
 * is known before nvcc runs) before it runs nvcc; another compile that
 * misses the same key meanwhile waits for the holder's entry instead of
 * compiling it too, then is served it.  Two leases:
 *
 *   - local: an OFD byte-range lock (fcntl F_OFD_SETLK) at an offset taken
 *     from the key, in stats/lease.<uid>, a file of this user's alone
 *     (cjc_store_own_file: mode 0600, one link, replaced when anything else
 *     is at its name).  No one else can open it, so no one else can hold
 *     it: users of a group store do not wait on each other.  The kernel
 *     drops it when its holder dies, however it dies; nvcc does not
 *     inherit it (O_CLOEXEC).
 *   - remote: NS/l/<direct key> in the first remote store that is not
 *     read-only and takes leases (remote.h; Redis SET NX PX), with the wait
 *     bound as its expiry, so a holder that dies costs at most that.  Only
 *     the holder of the local lease asks for it: one request per machine.
 *
 * cjc_lease_acquire() takes the local lease, then the remote one.  A
 * lease free at once is taken without looking again: a holder that
 * published and let go between the caller's lookup and now costs a second
 * compile (a window of microseconds, or of the remote lookup's round trip),
 * where looking again would count again what the lookup found (a damaged
 * or untrusted entry) on every miss.  Where a
 * lease is held by another, it waits for the holder to let go, polling with
 * a backoff (1 ms doubling to 50 ms for the local lock, 10 ms to 250 ms for
 * the remote lease, an EXISTS a poll), at most bound_ms in all; when the
 * holder lets go it looks for the entry (w->look: the local store, then
 * the remote stores) and serves it.  When the holder left without an entry
 * (its compile failed or it died), or the bound passed, the caller
 * compiles: nobody waits twice, so failures do not queue up.  Every remote
 * lease request (the SET NX, each poll, the second SET NX) ends by the
 * bound (remote.h: until), so no poll overruns it, however slowly the
 * server answers.
 *
 * A stalled lease server: a remote wait that ran to its bound with the
 * lease still held and no entry appearing writes a memo,
 * stats/stalled.<uid>.<16 hex digits of the SHA-256 of the store as
 * shown>, a file of this user's alone (cjc_store_own_file; read only when
 * it is ours, mode 0600, one link), holding the wall-clock ms until which
 * the server is not waited on: STALL_MEMO_MS (5 minutes) on.  Meanwhile a
 * compile of this user's on this store, in any process (the rest of the
 * build), that finds the remote lease held compiles at once (l->skipped),
 * so a server answering "held" to everything costs one bound, not one per
 * miss.  What could
 * not be taken (a read-only store, a lock file that cannot be made, a
 * store that fails) means no lease: the caller compiles, as before; a lock
 * file that cannot be made or locked is logged, and l->error asks the
 * caller to count it among the errors.
 * Nothing here fails a build; correctness never depends on a lease (the
 * store's first-writer-wins publication is what keeps entries whole).
 *
 * The bound (cjc_lease_bound): one and a half times the compile time
 * recorded for the key (the newest entry its manifest names: a compile of
 * the same source and command whose headers differed), plus a second, at
 * most the lease_wait setting (60 s by default), which is the bound when
 * nothing is recorded; lease_wait 0 turns leases off.  With remote stores
 * a local waiter waits up to twice the bound: its local holder may wait
 * for a remote holder, then compile.
 *
 * A compile that got CJC_LEASE_COMPILE calls cjc_lease_release() after it
 * published (locally and to the remote stores), or failed.
 */
#ifndef CJC_LEASE_H
#define CJC_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "keys/key.h"
#include "remote/remote.h"
#include "store/store.h"

struct cjc_lease_wait {
	const struct cjc_store *store; /* NULL: no local lease (readonly) */
	struct cjc_remotes *remotes;   /* or NULL */
	const char *direct_key;
	int64_t bound_ms;              /* cjc_lease_bound(); <= 0: no leases */
	/* Looks for the entry the holder published: in the local store (remote
	 * false), or there and then in the remote stores; served, the compile's
	 * result (>= 0); -1 when it is not there. */
	int (*look)(void *ctx, bool remote);
	void *ctx;
};

struct cjc_lease {
	int fd;                      /* the local lease, held; or -1 */
	struct cjc_remotes *remotes; /* the remote lease is held there; or NULL */
	char direct_key[CJC_HEX_LEN + 1];
	int64_t waited_ms;           /* how long this compile waited for another's */
	bool waited, timed_out;      /* it waited; it waited the whole bound */
	bool skipped;                /* held on a lease server that stalled lately: not waited for */
	int error;                   /* the local lease failed with this errno (logged): count it */
};

enum cjc_lease_result {
	CJC_LEASE_COMPILE, /* compile, then cjc_lease_release() */
	CJC_LEASE_SERVED   /* waited, and the entry was served: *served */
};

enum cjc_lease_result cjc_lease_acquire(const struct cjc_lease_wait *w, struct cjc_lease *l,
					int *served);
/* What a front end calls: w->bound_ms from what w->store records for the
 * key and lease_wait (seconds; 0: no leases), then cjc_lease_acquire(). */
enum cjc_lease_result cjc_lease_take(struct cjc_lease_wait *w, int64_t lease_wait_s,
				     struct cjc_lease *l, int *served);
void cjc_lease_release(struct cjc_lease *l);

/* The compile time recorded for direct_key in s (ms), or -1 when none is. */
int64_t cjc_lease_recorded_ms(const struct cjc_store *s, const char *direct_key);
/* The wait bound (ms) from that and the lease_wait setting (seconds). */
int64_t cjc_lease_bound(int64_t recorded_ms, int64_t lease_wait_s);

#endif
