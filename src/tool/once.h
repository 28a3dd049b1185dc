/*
 * once.h - a warning said once per build, not once per compile.
 *
 * A build whose every compile meets the same trouble (a cache directory it
 * cannot use or write, a remote store's refused credentials) says it once.
 * "A build" is what one session (getsid(2): a terminal, or a CI job's step)
 * compiles without a minute's pause: each compile that meets the trouble
 * renews that minute, so the next build after a pause says it again, and
 * so does a build in another session.  The memo is a file per session and
 * message in the user's own run-time directory (cjc_user_run_dir(), fs.h),
 * locked while it is read and renewed, so that of two compiles meeting it
 * at once only one says it; where there is no such directory, every
 * compile says it.  A memo no compile renewed for CJC_ONCE_KEEP_S is
 * removed when a new one is made (that is, at most once per message and
 * build), so they are bounded by the messages said in that time.
 */
#ifndef CJC_ONCE_H
#define CJC_ONCE_H

#include <stdbool.h>

/* Seconds a memo lasts without a compile that renews it. */
#define CJC_ONCE_QUIET_S 60
/* Seconds a memo is kept without a compile that renews it (long past its
 * quiet minute: removing it then changes nothing that is said). */
#define CJC_ONCE_KEEP_S 3600

/* Whether message is to be said now (and then it is remembered as said). */
bool cjc_say_once(const char *message);

#endif
