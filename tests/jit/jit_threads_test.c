/*
 * jit_threads_test - the JIT library under threads and fork(), driven by
 * tests/jit_test.sh, which sets CJC_DIR and the nvcc (CJC_JIT_NVCC).
 *
 *     jit_threads_test threads       16 threads over 4 keys, all at once (a
 *                                    barrier), then again: the same bytes per
 *                                    key, every second round a hit
 *     jit_threads_test nonblocking FLAG RELEASE
 *                                    while one thread's nvcc is held (the
 *                                    wrapper creates FLAG, then waits for
 *                                    RELEASE), another thread's hit completes
 *     jit_threads_test fork          a child of fork() hits what its parent
 *                                    compiled, compiles a new key, and the
 *                                    parent then hits the child's
 *
 * Prints one line per failed check and exits 1 when any failed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cudajitcache/jit.h"

static const char *const code =
	"#ifndef VARIANT\n#define VARIANT 0\n#endif\n"
	"extern \"C\" __global__ void scale(float *a, int n)\n"
	"{\n\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"\tif (i < n)\n\t\ta[i] = a[i] * 2.0f + VARIANT;\n}\n";

static cjc_jit *open_jit(void)
{
	char err[512];
	cjc_jit *jit = cjc_jit_open("JITTEST", err, sizeof err);
	if (!jit) {
		fprintf(stderr, "cjc_jit_open: %s\n", err);
		exit(1);
	}
	return jit;
}

/* Compiles variant v (an extra option too, when given); 0 or -1. */
static int compile(cjc_jit *jit, int v, const char *extra, struct cjc_jit_result *res)
{
	char define[32];
	snprintf(define, sizeof define, "-DVARIANT=%d", v);
	const char *opts[] = { define, extra };
	struct cjc_jit_request req = { .name = "scale.cu", .code = code, .options = opts,
				       .noptions = extra ? 2 : 1, .arch = "sm_80",
				       .format = CJC_JIT_CUBIN };
	int rc = cjc_jit_compile(jit, &req, res);
	if (rc)
		fprintf(stderr, "compile of variant %d: %s\n%s", v, cjc_jit_error(jit),
			res->log ? res->log : "");
	return rc;
}

#define THREADS 16
#define KEYS 4

struct worker {
	cjc_jit *jit;
	pthread_barrier_t *barrier;
	int variant;
	int rc;
	struct cjc_jit_result res;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	pthread_barrier_wait(w->barrier);
	w->rc = compile(w->jit, w->variant, NULL, &w->res);
	return NULL;
}

static void round_of(cjc_jit *jit, struct worker *w, int round)
{
	pthread_t t[THREADS];
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .jit = jit, .barrier = &barrier, .variant = i % KEYS };
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&barrier);
	for (int i = 0; i < THREADS; i++) {
		const struct worker *a = &w[i], *b = &w[i % KEYS];
		CHECK(!a->rc, "round %d: thread %d failed", round, i);
		CHECK(a->rc || (a->res.size == b->res.size && !memcmp(a->res.data, b->res.data, a->res.size) &&
				!strcmp(a->res.key, b->res.key)),
		      "round %d: thread %d's result differs from thread %d's", round, i, i % KEYS);
		CHECK(round == 0 || a->res.hit, "round %d: thread %d did not hit", round, i);
		CHECK(strlen(a->res.key) == 64, "round %d: thread %d has no key", round, i);
	}
	for (int i = 1; i < KEYS; i++)
		CHECK(strcmp(w[0].res.key, w[i].res.key), "variants 0 and %d share a key", i);
}

static void test_threads(void)
{
	cjc_jit *jit = open_jit();
	struct worker first[THREADS], second[THREADS];
	round_of(jit, first, 0);
	round_of(jit, second, 1);
	for (int i = 0; i < THREADS; i++)
		CHECK(!strcmp(first[i].res.key, second[i].res.key), "thread %d: the key changed", i);
	for (int i = 0; i < THREADS; i++) {
		cjc_jit_result_free(&first[i].res);
		cjc_jit_result_free(&second[i].res);
	}
	cjc_jit_close(jit);
}

struct held {
	cjc_jit *jit;
	atomic_int done;
	int rc;
	struct cjc_jit_result res;
};

static void *compile_held(void *arg)
{
	struct held *h = arg;
	h->rc = compile(h->jit, 1, "-DJIT_BLOCK", &h->res);
	atomic_store(&h->done, 1);
	return NULL;
}

/* Waits for a file to exist: a state, not a while (the suite's timeout bounds it). */
static void wait_for(const char *path)
{
	struct stat st;
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	while (stat(path, &st))
		nanosleep(&tick, NULL);
}

static void test_nonblocking(const char *flag, const char *release)
{
	cjc_jit *jit = open_jit();
	struct cjc_jit_result res;
	CHECK(!compile(jit, 0, NULL, &res) && !res.hit, "the first compile of variant 0 is a miss");
	cjc_jit_result_free(&res);
	struct held h = { .jit = jit };
	pthread_t t;
	pthread_create(&t, NULL, compile_held, &h);
	wait_for(flag); /* the other thread's nvcc is running, and stays until RELEASE */
	CHECK(!compile(jit, 0, NULL, &res) && res.hit, "variant 0 hits while variant 1 compiles");
	CHECK(!atomic_load(&h.done), "the held compile was still running during the hit");
	cjc_jit_result_free(&res);
	FILE *f = fopen(release, "w");
	if (f)
		fclose(f);
	pthread_join(t, NULL);
	CHECK(!h.rc && !h.res.hit, "the held compile finished as a miss");
	cjc_jit_result_free(&h.res);
	cjc_jit_close(jit);
}

static void test_fork(void)
{
	cjc_jit *jit = open_jit();
	struct cjc_jit_result res;
	CHECK(!compile(jit, 0, NULL, &res) && !res.hit, "the parent's first compile is a miss");
	cjc_jit_result_free(&res);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = compile(jit, 0, NULL, &res) || !res.hit;
		cjc_jit_result_free(&res);
		bad |= compile(jit, 2, NULL, &res) || res.hit;
		cjc_jit_result_free(&res);
		cjc_jit_close(jit);
		_exit(bad);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the child hit its parent's entry and compiled its own");
	CHECK(!compile(jit, 2, NULL, &res) && res.hit, "the parent hits the child's entry");
	cjc_jit_result_free(&res);
	cjc_jit_close(jit);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "threads"))
		test_threads();
	else if (argc == 4 && !strcmp(argv[1], "nonblocking"))
		test_nonblocking(argv[2], argv[3]);
	else if (argc == 2 && !strcmp(argv[1], "fork"))
		test_fork();
	else
		return fprintf(stderr, "usage: jit_threads_test threads|nonblocking FLAG RELEASE|fork\n"), 2;
	printf("%s: %d failed\n", argv[1], failures);
	return failures ? 1 : 0;
}
