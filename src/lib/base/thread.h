/*
 * thread.h - starting a worker thread that runs at once.
 *
 * A thread a busy thread creates may wait on its creator's CPU until the
 * creator's time slice ends: measured on this project's 2-vCPU machine,
 * a new thread first ran 1.5 to 3.8 ms later in 6 of 8 tries, beside an
 * idle CPU (docs/fleet.md).  The workers here (a remote fetch beside the
 * match, the hashing of a manifest's files or of a compiler's, removals)
 * are started exactly so that they run beside their creator, which then
 * goes on working.
 *
 * cjc_thread_start starts fn(arg) on a thread allowed, at first, on every
 * CPU of the caller's but the one the caller is on, so the scheduler puts
 * it on another at once; as soon as it is placed, the caller allows it
 * all of its CPUs again, so that where every other CPU is busy, the
 * caller's can still take it once the caller waits (a test program on
 * that machine, loaded by another job: it first ran 0.15 to 0.5 ms later;
 * 0.3 to 7 ms with pthread_create alone).  Where the caller has only one
 * CPU, or that cannot be told, it is an ordinary pthread_create.  Returns
 * pthread_create's result, or EAGAIN where the caller's guard (oom.h) has
 * no room for another worker; join the thread with cjc_thread_join.  The
 * new thread starts with the caller's signal mask, as with pthread_create.
 *
 * Started by a thread under a guard (oom.h), fn runs under a guard of its
 * own: if it runs out of memory it is abandoned, and cjc_thread_join then
 * abandons the joiner's work too, as if the joiner had run out.
 */
#ifndef CJC_THREAD_H
#define CJC_THREAD_H

#include <pthread.h>

int cjc_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);
void cjc_thread_join(pthread_t thread);

#endif
