#include "base/thread.h"

#include <sched.h>
#include <stdbool.h>

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
