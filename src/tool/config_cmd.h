/*
 * config_cmd.h - `cjc config`: the effective settings, where each came
 * from, which files were read and the store's state; `cjc config set KEY
 * VALUE`, which checks a setting and writes it into the user's settings
 * file; and the broken settings as `cjc stats` shows them (config.h).
 */
#ifndef CJC_CONFIG_CMD_H
#define CJC_CONFIG_CMD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* `cjc config [--json]`: 0, or 1 when a setting fails closed or the store
 * cannot keep anything. */
int cjc_config_show(bool json);
/* `cjc config set KEY VALUE` (argv[0] is "set"): 0, 1 when the file cannot
 * be written, 2 for an unknown setting or a bad value. */
int cjc_config_set(int argc, char **argv);
/* `cjc stats`: the compiles that ran with a broken setting, and which
 * (nothing when none did); --json: {name: compiles}. */
void cjc_config_stats_print(const struct cjc_store *s, const uint64_t *v);
json_t *cjc_config_stats_json(const struct cjc_store *s);

#endif
