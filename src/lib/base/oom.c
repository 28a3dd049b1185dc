#include "base/oom.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static __thread struct cjc_oom_guard *top;

void cjc_oom_enter(struct cjc_oom_guard *g)
{
	g->outer = top;
	g->nundo = 0;
	g->nworkers = 0;
	top = g;
}

void cjc_oom_leave(struct cjc_oom_guard *g)
{
	top = g->outer;
}

int cjc_oom_run(int (*fn)(void *ctx), void *ctx)
{
	struct cjc_oom_guard g;
	cjc_oom_enter(&g);
	if (setjmp(g.jb))
		return CJC_OOM_RAN_OUT;
	int rc = fn(ctx);
	cjc_oom_leave(&g);
	return rc;
}

bool cjc_oom_guarded(void)
{
	return top != NULL;
}

_Noreturn void cjc_oom_raise(size_t n)
{
	struct cjc_oom_guard *g = top;
	if (!g) {
		fprintf(stderr, "cjc: out of memory allocating %zu bytes\n", n);
		exit(70);
	}
	while (g->nundo) {
		struct cjc_oom_undo u = g->undo[--g->nundo];
		u.fn(u.arg);
	}
	while (g->nworkers) /* they may use what the work made: done before it goes */
		pthread_join(g->workers[--g->nworkers], NULL);
	top = g->outer;
	longjmp(g->jb, 1);
}

void cjc_oom_undo_push(void (*fn)(void *), void *arg)
{
	struct cjc_oom_guard *g = top;
	if (!g)
		return;
	if (g->nundo == CJC_OOM_UNDO_MAX)
		abort(); /* a bug: held things do not nest this deep */
	g->undo[g->nundo++] = (struct cjc_oom_undo){ fn, arg };
}

void cjc_oom_undo_pop(void (*fn)(void *), void *arg)
{
	for (struct cjc_oom_guard *g = top; g; g = g->outer)
		for (unsigned i = g->nundo; i-- > 0;)
			if (g->undo[i].fn == fn && g->undo[i].arg == arg) {
				for (unsigned k = i + 1; k < g->nundo; k++)
					g->undo[k - 1] = g->undo[k];
				g->nundo--;
				return;
			}
}

static void unlock(void *m)
{
	pthread_mutex_unlock(m);
}

void cjc_oom_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	cjc_oom_undo_push(unlock, m);
}

void cjc_oom_unlock(pthread_mutex_t *m)
{
	cjc_oom_undo_pop(unlock, m);
	pthread_mutex_unlock(m);
}

static void close_fd(void *fd)
{
	close((int)(intptr_t)fd);
}

void cjc_oom_fd_held(int fd)
{
	cjc_oom_undo_push(close_fd, (void *)(intptr_t)fd);
}

void cjc_oom_fd_let_go(int fd)
{
	cjc_oom_undo_pop(close_fd, (void *)(intptr_t)fd);
}

bool cjc_oom_worker_room(void)
{
	return !top || top->nworkers < CJC_OOM_WORKERS_MAX;
}

void cjc_oom_worker_started(pthread_t t)
{
	if (top && top->nworkers < CJC_OOM_WORKERS_MAX)
		top->workers[top->nworkers++] = t;
}

void cjc_oom_worker_joined(pthread_t t)
{
	for (struct cjc_oom_guard *g = top; g; g = g->outer)
		for (unsigned i = 0; i < g->nworkers; i++)
			if (pthread_equal(g->workers[i], t)) {
				g->workers[i] = g->workers[--g->nworkers];
				return;
			}
}
