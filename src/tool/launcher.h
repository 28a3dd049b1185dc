/*
 * launcher.h - `cjc [--target NAME] [--] nvcc ARGS...`: serve a compile from
 * the store, or run nvcc, verify and publish what it made.
 *
 * cjc_launch() returns the exit status the build sees: nvcc's own on a miss
 * or an uncached run, 0 on a hit.  It never fails a build for a reason of
 * the cache's own: any such failure runs nvcc uncached, logged and counted.
 */
#ifndef CJC_LAUNCHER_H
#define CJC_LAUNCHER_H

/* wrap: a NULL-terminated list of words put in front of nvcc when it runs. */
int cjc_launch(const char *target, char *const *wrap, int argc, char **argv);

#endif
