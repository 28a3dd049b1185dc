/*
 * oom.h - what a failed allocation does (util.h's cjc_x* functions).
 *
 * In the cjc program it ends the process (exit 70), as git's xmalloc does.
 * The libraries (libcudajitcache, the NVRTC shim) run inside someone else's
 * program, which they must never end.  Each of their entry points runs its
 * work under a guard; an allocation that fails under a guard abandons the
 * work: what the work holds that anyone waits for is let go (the undo
 * records below, newest first), the workers it started are joined, and
 * control returns to the guard (longjmp), whose entry point answers "out of
 * memory" (the JIT's -1, the shim's NVRTC_ERROR_OUT_OF_MEMORY).  What the
 * abandoned work had allocated stays allocated, and descriptors it had open
 * (other than those recorded) stay open: leaked, once, after memory ran out.
 *
 *     struct cjc_oom_guard g;
 *     cjc_oom_enter(&g);
 *     if (setjmp(g.jb))
 *             return answer_out_of_memory();  // g has been left already
 *     int rc = work();
 *     cjc_oom_leave(&g);
 *     return rc;
 *
 * Locals of the entry point that the work changes must not be read after
 * the jump (setjmp(3)); keep the work in a function of its own, or let
 * cjc_oom_run() hold the guard:
 *
 *     int rc = cjc_oom_run(work, &args);   // CJC_OOM_RAN_OUT when abandoned
 *
 * The rules for code that can run under a guard:
 *  - a mutex is taken with cjc_oom_lock() and given back with
 *    cjc_oom_unlock(), and the state it guards is whole at every allocation
 *    made while it is held (allocate first, then link in);
 *  - anything else that others wait for while it is held (an flock, a
 *    record lock) is recorded with cjc_oom_undo_push() and dropped from the
 *    record with cjc_oom_undo_pop() once let go;
 *  - a worker started with cjc_thread_start() (thread.h) runs under a guard
 *    of its own and is joined with cjc_thread_join(), which abandons the
 *    joiner's work too when the worker ran out of memory;
 *  - code that runs inside another library's frames (the recorder of
 *    NVRTC's file calls, libcurl's write callbacks, cjc_jit_bytes_set() in
 *    the user's hook) must not jump over them: it allocates only with
 *    util.h's *_try_* forms or the C library's calls and says what it could
 *    not do (curl's callers raise once curl has returned); a library call
 *    made from such frames runs under a guard of its own.
 *
 * With no guard entered on the thread (the cjc program), a failed
 * allocation ends the process as before.
 */
#ifndef CJC_OOM_H
#define CJC_OOM_H

#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

#define CJC_OOM_UNDO_MAX 16
#define CJC_OOM_WORKERS_MAX 16

struct cjc_oom_undo {
	void (*fn)(void *arg);
	void *arg;
};

struct cjc_oom_guard {
	jmp_buf jb;
	struct cjc_oom_guard *outer;
	struct cjc_oom_undo undo[CJC_OOM_UNDO_MAX];
	unsigned nundo;
	pthread_t workers[CJC_OOM_WORKERS_MAX];
	unsigned nworkers;
};

void cjc_oom_enter(struct cjc_oom_guard *g);
void cjc_oom_leave(struct cjc_oom_guard *g);

/* fn(ctx) under a guard: its result, or CJC_OOM_RAN_OUT when abandoned
 * (fn must never return that). */
#define CJC_OOM_RAN_OUT (-70)
int cjc_oom_run(int (*fn)(void *ctx), void *ctx);

/* Whether this thread is under a guard. */
bool cjc_oom_guarded(void);

/* A failed allocation of n bytes: abandons the guarded work, or ends the
 * process where there is no guard. */
_Noreturn void cjc_oom_raise(size_t n);

/* fn(arg) is run if the work is abandoned before the matching pop, which
 * takes the newest record with this fn and arg.  More than
 * CJC_OOM_UNDO_MAX at once on one thread is a bug: the process aborts. */
void cjc_oom_undo_push(void (*fn)(void *), void *arg);
void cjc_oom_undo_pop(void (*fn)(void *), void *arg);

/* pthread_mutex_lock/unlock, recorded as above. */
void cjc_oom_lock(pthread_mutex_t *m);
void cjc_oom_unlock(pthread_mutex_t *m);

/* A descriptor that holds a lock others wait on (an flock, an OFD lock):
 * closed if the work is abandoned before cjc_oom_fd_let_go(fd), which the
 * holder calls just before it closes it. */
void cjc_oom_fd_held(int fd);
void cjc_oom_fd_let_go(int fd);

/* For thread.c: whether another worker may start under the current guard
 * (always, with none); one started, joined by the unwinding if not by
 * then; and its removal once joined. */
bool cjc_oom_worker_room(void);
void cjc_oom_worker_started(pthread_t t);
void cjc_oom_worker_joined(pthread_t t);

#endif
