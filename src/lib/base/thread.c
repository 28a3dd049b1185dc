#include "base/thread.h"

#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/util.h"

/* What a thread started away from its creator's CPU needs first. */
struct start {
	void *(*fn)(void *);
	void *arg;
	cpu_set_t allowed; /* the creator's CPUs, given back */
};

static void *begin(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	(void)pthread_setaffinity_np(pthread_self(), sizeof s.allowed, &s.allowed);
	return s.fn(s.arg);
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

int cjc_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	struct start *s = cjc_xmalloc(sizeof *s);
	cpu_set_t away;
	pthread_attr_t attr;
	int rc = -1;
	if (cpus_away(&s->allowed, &away) && !pthread_attr_init(&attr)) {
		s->fn = fn;
		s->arg = arg;
		if (!pthread_attr_setaffinity_np(&attr, sizeof away, &away))
			rc = pthread_create(thread, &attr, begin, s);
		pthread_attr_destroy(&attr);
	}
	if (rc) { /* not away: as it comes */
		free(s);
		rc = pthread_create(thread, NULL, fn, arg);
	}
	return rc;
}
