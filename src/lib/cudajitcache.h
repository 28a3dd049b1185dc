/*
 * cudajitcache.h - the library's public API, one header per module:
 *
 *   util.h        buffers, string vectors, allocation
 *   hash.h        SHA-256
 *   fs.h          file helpers, temporary files
 *   run.h         subprocesses
 *   log.h         the log
 *   config.h      settings and where they came from
 *   blob.h        CRC-guarded small binary files
 *   depfile.h     Make dependency files
 *   includescan.h include candidates that must stay absent
 *   stamp.h       file stamps and the racy-clean rule
 *   filehash.h    hashes of source files
 *   manifest.h    direct key -> entry key without a preprocessor
 *   metadata.h    metadata.json
 *   metamemo.h    metadata.json documents already checked
 *   store.h       the artifact store
 *   stats.h       counters
 *   evict.h       the size limit, least recently used first
 *   maintain.h    clean, quarantine, and what gc reclaims besides entries
 *   identity.h    compiler identities
 *   place.h       where a compile happens: relative paths and base_dir
 *   key.h         the direct key and the entry key
 *   journal.h     the record of recent compiles
 *   index.h       what `cjc ls` shows of each entry, kept beside them
 *   miss.h        the steps of a miss that cjc and the JIT library share
 *   nvcc_args.h   nvcc's options: the table and the parser
 *   diagnostics.h print_commands, keep_ptx, keep_sass, check_spills
 *   remote.h      remote stores: the backend seam, fetching and publishing
 *   sign.h        signed entries (Ed25519)
 *   dl.h          libraries loaded at run time, their functions into a table
 */
#ifndef CUDAJITCACHE_H
#define CUDAJITCACHE_H

#include "blob.h"
#include "config.h"
#include "depfile.h"
#include "diagnostics.h"
#include "dl.h"
#include "evict.h"
#include "filehash.h"
#include "fs.h"
#include "hash.h"
#include "identity.h"
#include "includescan.h"
#include "index.h"
#include "journal.h"
#include "key.h"
#include "maintain.h"
#include "log.h"
#include "manifest.h"
#include "metadata.h"
#include "metamemo.h"
#include "miss.h"
#include "nvcc_args.h"
#include "place.h"
#include "remote.h"
#include "run.h"
#include "sign.h"
#include "stamp.h"
#include "stats.h"
#include "store.h"
#include "util.h"

#endif
