/*
 * cudajitcache.h - every module of the store library, for the unit tests
 * and the fuzzers.  The modules, by layer (HACKING.md, "Layers"; each uses
 * only its own layer and those listed before it):
 *
 * base/     what any program might have
 *   util.h        buffers, string vectors, allocation
 *   fs.h          file helpers, temporary files, what may be trusted
 *   hash.h        SHA-256
 *   stamp.h       file stamps and the racy-clean rule
 *   log.h         the log
 *   dl.h          libraries loaded at run time, their functions into a table
 *   run.h         subprocesses, and the variables no child gets
 *   blob.h        CRC-guarded small binary files, in memory
 *   watch.h       whether watched files may have changed (inotify)
 *   helperproc.h  a per-user helper process: its key, lock, socket, start
 * keys/     what a compile is, in memory: nvcc's model, paths, hashes, keys
 *   place.h       where a compile happens: relative paths and base_dir
 *   includescan.h include candidates that must stay absent
 *   depfile.h     Make dependency files
 *   nvcc_args.h   nvcc's options: the table and the parser
 *   key.h         the direct key and the entry key
 *   metadata.h    metadata.json
 *   manifest.h    direct key -> entry key without a preprocessor
 *   filehash.h    hashes of source files
 *   metamemo.h    metadata.json documents already checked
 * store/    the artifact store on disk and what it keeps
 *   store.h       entries: reading, staging, publishing
 *   records.h     the store's small files: manifests, hash caches, memos
 *   index.h       what `cjc ls` shows of each entry, kept beside them
 *   stats.h       counters
 *   evict.h       the size limit, least recently used first
 *   maintain.h    clean, quarantine, and what gc reclaims besides entries
 *   journal.h     the record of recent compiles
 *   identity.h    compiler identities
 *   sign.h        signed entries (Ed25519)
 * remote/   remote stores
 *   remote.h      the backend seam, fetching and publishing
 * compile/  the steps that cjc and the JIT library share
 *   config.h      settings and where they came from
 *   diagnostics.h print_commands, keep_ptx, keep_sass, check_spills
 *   lease.h       one compile per key at a time, locally and across machines
 *   miss.h        what nvcc read on a miss: the manifest record
 *   publish.h     what a miss does after the compiler ran
 *   nvrtc.h       NVRTC's functions (dlopen) and one compile
 *   watcher.h     the watching helper: a hit with no stat per header
 *   why.h         the journal's records of compiles, for `cjc why`
 */
#ifndef CUDAJITCACHE_H
#define CUDAJITCACHE_H

#include "base/blob.h"
#include "base/dl.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/helperproc.h"
#include "base/log.h"
#include "base/run.h"
#include "base/stamp.h"
#include "base/util.h"
#include "base/watch.h"
#include "compile/config.h"
#include "compile/diagnostics.h"
#include "compile/lease.h"
#include "compile/lookup.h"
#include "compile/miss.h"
#include "compile/nvrtc.h"
#include "compile/publish.h"
#include "compile/watcher.h"
#include "compile/why.h"
#include "keys/depfile.h"
#include "keys/filehash.h"
#include "keys/includescan.h"
#include "keys/key.h"
#include "keys/manifest.h"
#include "keys/metadata.h"
#include "keys/metamemo.h"
#include "keys/nvcc_args.h"
#include "keys/place.h"
#include "keys/rules.h"
#include "remote/remote.h"
#include "store/evict.h"
#include "store/identity.h"
#include "store/index.h"
#include "store/journal.h"
#include "store/maintain.h"
#include "store/records.h"
#include "store/sign.h"
#include "store/stats.h"
#include "store/store.h"

#endif
