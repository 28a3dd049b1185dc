/*
 * remote_cmd.h - `cjc remote check` and `cjc remote upload` (docs/remote.md).
 *
 * check: for each store of the `remote` setting (each shard), connect,
 * read, write a small content-addressed probe and read it back, and say
 * which step failed; the key files of sign_key and trusted_keys are checked
 * too.  upload: sends every local entry that a manifest names, with the
 * manifest record, to every store that is not read-only (seeding a CI cache
 * from a developer machine); entries a store has already are skipped.
 * Both return the exit status: 0, or 1 when a store failed or none is set.
 */
#ifndef CJC_REMOTE_CMD_H
#define CJC_REMOTE_CMD_H

#include <stdbool.h>

#include "compile/config.h"
#include "store/store.h"

int cjc_remote_command(const struct cjc_config *cfg, const struct cjc_store *store,
		       const char *what, bool json);

#endif
