/*
 * place.h - where a compile happens, as its key sees it (docs/key.md: base_dir).
 *
 * The working directory reaches nvcc's output in three ways (measured with
 * nvcc 13.0):
 *
 *   - through relative paths: with -lineinfo (and -g, -G) the output records
 *     each file's directory as the working directory joined with the path as
 *     written, unnormalised ("/w/build/../src");
 *   - with -G, the device debug information records the working directory;
 *   - with -g, the host compiler records it as its compile directory, unless
 *     the command maps it away (-fdebug-compilation-dir=, or a
 *     -fdebug-prefix-map= / -ffile-prefix-map= whose old prefix covers it).
 *
 * With the same absolute paths and no -G or unmapped -g, two working
 * directories give byte-identical output (-lineinfo included).  So the key
 * holds, for each relative path (the source, include directories, each
 * dependency), the path it resolves to: the working directory joined with
 * it (cjc_place_resolve); and the working directory itself only when
 * keys_cwd says the output records it.
 *
 * base_dir, as ccache has it: an absolute path under base_dir is rewritten
 * relative to the working directory, in the command nvcc runs and in the key
 * (cjc_place_relativize).  A relative path that resolves under base_dir is
 * then keyed as written, not by where it resolves, unless the output records
 * directories (records_dirs): so two checkouts with the same layout under
 * base_dir share entries, except for -lineinfo, -g and -G output, which
 * names each checkout's own directories and must differ.
 *
 * share_dirs (the hash_dir = false setting, as ccache has it): the user
 * accepts debug paths that name another directory.  The directories the
 * output records are then not keyed: records_dirs and keys_cwd stay unset
 * (relative paths under base_dir are keyed as written, the working
 * directory is not keyed), and the key holds the word "cjc:hash_dir=false"
 * instead, so that such entries are never served to a compile that keys
 * its directories.  Only the debug paths differ: the code is the same.
 *
 * root (path-free keys, docs/key.md): without base_dir, and where no path
 * can reach the output (rules.h), the files are keyed by their layout
 * relative to the root, the deepest directory that holds both the working
 * directory and the source (cjc_place_root), not by its absolute name: a
 * path that starts with the root is keyed as "<root>/" and the rest
 * (cjc_place_key_path), so the same tree at another random directory (pip's
 * /tmp/pip-req-build-XXXX) has the same key.  A record made under one root
 * is read under another by rebasing its paths (cjc_place_rebase).  A miss
 * whose output can name a path (__FILE__, an _INTERNAL_ symbol) is recorded
 * exact: its entry key holds the root and the source as nvcc names it
 * (source, made absolute against cwd), so it is served only there.
 *
 * Strings are borrowed: a place points at the caller's cwd and base_dir.
 */
#ifndef CJC_PLACE_H
#define CJC_PLACE_H

#include <stdbool.h>
#include <stddef.h>

struct cjc_place {
	const char *cwd;      /* the working directory; NULL: relative paths are keyed as written */
	const char *base_dir; /* absolute, without a trailing slash ("" is /); NULL when unset */
	bool records_dirs;    /* -lineinfo, -g or -G: the output names directories */
	const char *keys_cwd; /* "-G", or "-g" not mapped away: the option that records the
				 working directory itself, which the key then holds; else NULL */
	bool share_dirs;      /* hash_dir = false: set by the caller, before parsing */
	bool dirs_shared;     /* share_dirs applied: the output records directories
				 that the key does not hold (set by the parser) */
	const char *root;     /* path-free keys: the root, normalised; NULL: paths kept */
	const char *source;   /* the source as nvcc gets it, for exact records; NULL: none */
};

/* The deepest directory over both cwd and the source (as nvcc gets it),
 * normalised and malloc'd; NULL when that is "/" (nothing to leave out).
 * cwd NULL: the command names no relative path, so the working directory
 * bears on nothing read, and the root is the source's own directory (a
 * JIT's uuid-named directory below its working one). */
char *cjc_place_root(const char *cwd, const char *source);
/* With a root: the key's form of a path (a relative one resolved against
 * cwd) that starts with the root, "<root>/rest" (malloc'd); else NULL. */
char *cjc_place_key_path(const struct cjc_place *p, const char *path);
/* A path that starts with the directory from, moved under to (malloc'd); NULL
 * when it does not. */
char *cjc_place_rebase(const char *path, const char *from, const char *to);
/* The source's absolute name as nvcc derives its _INTERNAL_ prefix from it
 * (cwd joined with a relative one, unnormalised; malloc'd), or NULL. */
char *cjc_place_source_name(const struct cjc_place *p);

/* With base_dir: an absolute path under it, relative to the working
 * directory (malloc'd); NULL when the path stays as written. */
char *cjc_place_relativize(const struct cjc_place *p, const char *path);
/* The absolute path the key binds a path to (malloc'd), or NULL when the
 * path as written is all the key needs (it is absolute, or it is relative,
 * resolves under base_dir and the output records no directories). */
char *cjc_place_resolve(const struct cjc_place *p, const char *path);
/* Whether a host-compiler option (one word, maybe a comma-separated
 * -Xcompiler list) maps the working directory out of debug information. */
bool cjc_place_maps_cwd(const char *word, const char *cwd);
/* How the key treats the working directory, in words, for `cjc why` (malloc'd). */
char *cjc_place_rule(const struct cjc_place *p);
/* "a/./b/../c" -> "a/c" for an absolute path, lexically (malloc'd). */
char *cjc_path_normalize(const char *path);
/* Checks and normalises a base_dir setting; NULL when it is not absolute. */
char *cjc_place_base_dir(const char *text);

#endif
