#include "base/thread.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/oom.h"

/* What a worker that ran out of memory returns (oom.h). */
static char ran_out;

struct start {
	void *(*fn)(void *);
	void *arg;
};

/* A worker under a guard of its own. */
static void *guarded(void *arg)
{
	struct start s = *(struct start *)arg;
	free(arg);
	struct cjc_oom_guard g;
	cjc_oom_enter(&g);
	if (setjmp(g.jb))
		return &ran_out;
	void *rc = s.fn(s.arg);
	cjc_oom_leave(&g);
	return rc;
}

/* The caller's CPUs in *allowed, and in *away all of them but the one it is
 * on: false when there is no other, or it cannot be told. */
static bool cpus_away(cpu_set_t *allowed, cpu_set_t *away)
{
	int here = sched_getcpu();
	if (here < 0 || here >= CPU_SETSIZE || sched_getaffinity(0, sizeof *allowed, allowed) ||
	    !CPU_ISSET(here, allowed) || CPU_COUNT(allowed) < 2)
		return false;
	*away = *allowed;
	CPU_CLR(here, away);
	return true;
}

static int start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	cpu_set_t allowed, away;
	pthread_attr_t attr;
	int rc = -1;
	if (cpus_away(&allowed, &away) && !pthread_attr_init(&attr)) {
		if (!pthread_attr_setaffinity_np(&attr, sizeof away, &away))
			rc = pthread_create(thread, &attr, fn, arg);
		pthread_attr_destroy(&attr);
	}
	if (rc) /* not away: as it comes */
		return pthread_create(thread, NULL, fn, arg);
	/* placed on another CPU by now; where that one is busy, this one can
	 * still take it when it blocks */
	(void)pthread_setaffinity_np(*thread, sizeof allowed, &allowed);
	return 0;
}

int cjc_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	if (!cjc_oom_guarded())
		return start(thread, fn, arg);
	struct start *s = cjc_oom_worker_room() ? malloc(sizeof *s) : NULL;
	if (!s)
		return EAGAIN;
	*s = (struct start){ fn, arg };
	int rc = start(thread, guarded, s);
	if (rc)
		free(s);
	else
		cjc_oom_worker_started(*thread);
	return rc;
}

void cjc_thread_join(pthread_t thread)
{
	void *rc = NULL;
	pthread_join(thread, &rc);
	cjc_oom_worker_joined(thread);
	if (rc == &ran_out)
		cjc_oom_raise(0);
}
