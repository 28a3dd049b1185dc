/*
 * watch.h - whether anything a set of files is read through may have
 * changed since they were last checked, without a stat per file: the
 * change signal of the JIT library's handles (src/jit) and of the watching
 * helper (`cjc __watch`, compile/watcher.h).
 *
 * The kernel tells (inotify(7)): every directory a path is reached through
 * is watched, from / down, along the path as written and along where each
 * link leads (one link at a time, so each link of a chain is watched), for
 * a name that appears, goes or moves and for a child that is written or
 * whose attributes change; and each file itself, for a write through
 * another of its names (a hard link).  Each event, and each change to the
 * process's mount table (its poll of /proc/self/mountinfo), starts a new
 * generation.  Files checked in generation G, their paths watched before
 * the check began (cjc_watch_paths returned G), are unchanged while the
 * generation is G: a change after the watch is an event, and the check
 * after it saw any change before.  Not seen, by inotify or anything else
 * the kernel offers: a write through a shared memory mapping (mmap) of a
 * file, whether or not the writer still has it open (a review wrote
 * through a mapping whose descriptor was closed first: no event at all).
 *
 * A directory on a file system whose changes may come from another machine
 * (any but the local kinds of watch.c: NFS, FUSE, a host's read-only
 * mount), and a file in one, is stamped instead (stamp.h) and stat'ed at
 * each cjc_watch_generation: a few such paths cost a stat each, and past
 * CJC_WATCH_MAX_STAMPED cjc_watch_paths cannot vouch.  The signal is given
 * up for good (generation 0) where it cannot be had: no inotify, no /proc,
 * or the kernel's watch limit reached.  Any news, a queue overflow and a
 * watch the kernel dropped (its directory gone) start afresh: a new
 * generation and no watches, since a path may lead elsewhere now.  Where
 * nothing changed, asking costs one system call (epoll_wait over the queue
 * and the mount table).
 *
 * Calling sequence: cjc_watch_open; cjc_watch_generation at each ask;
 * cjc_watch_paths before a check by stat; cjc_watch_close.  Not thread
 * safe (the caller locks), and not to be used across a fork (the child
 * shares the parent's queue: close it there and open another, starting at
 * a generation past the parent's).
 */
#ifndef CJC_WATCH_H
#define CJC_WATCH_H

#include <stddef.h>
#include <stdint.h>

#define CJC_WATCH_MAX_WATCHED 8192
#define CJC_WATCH_MAX_STAMPED 64

struct cjc_watch;

/* A signal whose generations start at first (at least 1); one that cannot
 * be had answers generation 0 for good. */
struct cjc_watch *cjc_watch_open(uint64_t first);
/* The generation now, news read first; 0 when there is no signal to trust. */
uint64_t cjc_watch_generation(struct cjc_watch *w);
/* Watches every directory each of paths (absolute) is reached through,
 * and each file: the generation in which all of them are watched, to
 * check them in; 0 when they cannot be (a relative path, a limit; the
 * files must then be checked each time). */
uint64_t cjc_watch_paths(struct cjc_watch *w, const char *const *paths, size_t n);
/* How many paths are watched or stamped now. */
size_t cjc_watch_count(const struct cjc_watch *w);
void cjc_watch_close(struct cjc_watch *w);

#endif
