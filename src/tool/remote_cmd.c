#include "remote_cmd.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "keys/manifest.h"
#include "output.h"
#include "remote/remote.h"
#include "store/records.h"
#include "store/sign.h"

static void report(const char *store, const char *message)
{
	fprintf(stderr, "cjc: remote store %s (setting remote, %s): %s\n", store,
		cjc_config_env(CJC_SET_REMOTE), message);
}

/* The key files' own check: one line each into out; -1 when one is bad. */
static int check_keys(const struct cjc_config *cfg, struct cjc_buf *out)
{
	struct cjc_buf why = CJC_BUF_INIT;
	size_t n = 0;
	int rc = 0;
	if (cfg->sign_key && cjc_sign_check_private(cfg->sign_key, &why))
		rc = -1, cjc_buf_addf(out, "sign_key: %s\n", why.data);
	else if (cfg->sign_key)
		cjc_buf_addf(out, "sign_key: an Ed25519 private key\n");
	cjc_buf_reset(&why);
	if (cfg->trusted_keys && cjc_sign_check_trusted(cfg->trusted_keys, &n, &why))
		rc = -1, cjc_buf_addf(out, "trusted_keys: %s\n", why.data);
	else if (cfg->trusted_keys)
		cjc_buf_addf(out, "trusted_keys: %zu Ed25519 public key%s\n", n, n == 1 ? "" : "s");
	cjc_buf_release(&why);
	return rc;
}

static int check(const struct cjc_config *cfg, struct cjc_remotes *r, bool json)
{
	json_t *stores = json_array();
	struct cjc_buf keys = CJC_BUF_INIT;
	int rc = check_keys(cfg, &keys) ? 1 : 0;
	for (size_t i = 0; i < cjc_remote_count(r); i++) {
		struct cjc_buf text = CJC_BUF_INIT;
		bool ok = !cjc_remote_check(r, i, &text);
		rc |= !ok;
		if (json)
			json_array_append_new(stores, json_pack("{s:s, s:b, s:s}", "store", cjc_remote_shown(r, i),
								"ok", ok, "report", text.data));
		else
			fputs(text.data, stdout);
		cjc_buf_release(&text);
	}
	if (json)
		cjc_print_json(json_pack("{s:o, s:s, s:b}", "stores", stores, "keys", keys.len ? keys.data : "",
					 "ok", !rc));
	else
		fputs(keys.len ? keys.data : "", stdout), json_decref(stores);
	cjc_buf_release(&keys);
	return rc;
}

struct upload {
	const struct cjc_config *cfg;
	const struct cjc_store *store;
	struct cjc_remotes *r;
	unsigned long records, sent;
};

static int upload_manifest(const char *direct_key, const char *path, void *ctx)
{
	struct upload *u = ctx;
	struct cjc_manifest m;
	char *name = cjc_store_manifest_name(direct_key);
	(void)path;
	if (!cjc_manifest_read(u->store, name, &m)) {
		for (size_t i = 0; i < m.n; i++, u->records++)
			if (cjc_remote_publish(u->r, m.recs[i].entry_key, direct_key, &m.recs[i]))
				u->sent++;
		cjc_manifest_release(&m);
	}
	free(name);
	return 0;
}

static int upload(const struct cjc_config *cfg, const struct cjc_store *store, struct cjc_remotes *r,
		  bool json)
{
	struct upload u = { cfg, store, r, 0, 0 };
	if (cjc_store_foreach_manifest(store, upload_manifest, &u))
		fprintf(stderr, "cjc remote upload: cannot list the manifests: %s\n", strerror(errno));
	if (json)
		cjc_print_json(json_pack("{s:I, s:I}", "records", (json_int_t)u.records, "sent",
					 (json_int_t)u.sent));
	else
		printf("%lu entries named by manifests; %lu now held by a remote store "
		       "(see `cjc stats` for bytes and errors)\n", u.records, u.sent);
	return u.sent == u.records ? 0 : 1;
}

int cjc_remote_command(const struct cjc_config *cfg, const struct cjc_store *store,
		       const char *what, bool json)
{
	if (strcmp(what, "check") && strcmp(what, "upload")) {
		fprintf(stderr, "cjc remote: expected `check` or `upload`, not '%s'\n", what);
		return 2;
	}
	if (cfg->remote_problem) { /* config.h: a bad value turned the remote stores off */
		char *why = cjc_printable(cfg->remote_problem);
		fprintf(stderr, "cjc remote %s: the setting remote (%s) is malformed: %s; no remote "
			"store is used until it is fixed\n", what, cjc_config_env(CJC_SET_REMOTE), why);
		free(why);
		return 1;
	}
	struct cjc_remotes *r = cjc_remote_open(cfg->remote, store, cfg->sign_key, cfg->trusted_keys,
						report);
	if (!r) {
		fprintf(stderr, "cjc remote %s: no remote store is set (setting remote, %s)\n", what,
			cjc_config_env(CJC_SET_REMOTE));
		return 1;
	}
	int rc = !strcmp(what, "check") ? check(cfg, r, json) : upload(cfg, store, r, json);
	cjc_remote_close(r);
	return rc;
}
