/*
 * threads_test.c - the library used from 16 threads of one process: 16
 * writers publish one key at once (exactly one wins, every loser leaves the
 * winner alone and cleans its own staging), 16 more publish keys of their
 * own, every entry then verifies, and counters bumped from every thread add
 * up.  Usage: threads_test STORE-DIR.  Exit 0 when every check passed.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudajitcache.h"

#define THREADS 16
#define BUMPS 25

static struct cjc_store store;
static pthread_barrier_t barrier;
static atomic_int wins_shared, wins_own, errors;
static const char shared_key[] = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";

static void own_key(int id, char key[CJC_HEX_LEN + 1])
{
	char text[32];
	snprintf(text, sizeof text, "thread %d", id);
	cjc_hash_buf_hex(text, strlen(text), key);
}

/* Stages the bytes, waits for every thread, publishes under key. */
static void publish(const char *key, const char *bytes, atomic_int *wins)
{
	struct cjc_staging st;
	struct cjc_buf meta = CJC_BUF_INIT;
	char *argv[] = { "nvcc", "-c", "k.cu", NULL };
	bool won = false;
	if (cjc_staging_begin(&store, &st) ||
	    cjc_staging_add_data(&st, "output.o", bytes, strlen(bytes))) {
		atomic_fetch_add(&errors, 1);
		return;
	}
	struct cjc_metadata md = {
		.key = key, .argv = argv, .argc = 3, .cwd = "/", .compiler_path = "nvcc",
		.compiler_realpath = "/usr/local/cuda/bin/nvcc", .compiler_version = "13.0",
		.host_path = "gcc", .host_version = "12", .options = NULL,
		.files = st.files, .nfiles = st.nfiles, .duration_ms = 1,
	};
	json_t *options = json_pack("{s:s}", "kind", "object");
	md.options = options;
	int rc = cjc_metadata_format(&md, &meta, NULL);
	json_decref(options);
	pthread_barrier_wait(&barrier);
	if (rc || cjc_staging_publish(&store, &st, key, &meta, NULL, &won))
		atomic_fetch_add(&errors, 1);
	else if (won)
		atomic_fetch_add(wins, 1);
	cjc_buf_release(&meta);
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	char key[CJC_HEX_LEN + 1], bytes[64];
	publish(shared_key, "the same object from every thread", &wins_shared);
	own_key(id, key);
	snprintf(bytes, sizeof bytes, "object of thread %d", id);
	publish(key, bytes, &wins_own);
	for (int i = 0; i < BUMPS; i++)
		if (cjc_stats_bump(&store, CJC_STAT_HITS, 0))
			atomic_fetch_add(&errors, 1);
	return NULL;
}

static int verify_entry(const char *key, const char *dir, void *ctx)
{
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	int *bad = ctx;
	if (cjc_entry_open_dir(dir, key, &e, &why) != CJC_ENTRY_FOUND || cjc_entry_verify(&e, &why)) {
		fprintf(stderr, "entry %s is bad: %s\n", key, why.data);
		(*bad)++;
	}
	cjc_entry_release(&e);
	cjc_buf_release(&why);
	(*bad) += 1000; /* counts entries in the thousands */
	return 0;
}

static int count_staging(void)
{
	char *path = cjc_store_path(&store, "staging");
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	free(path);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 2 || cjc_store_open(&store, argv[1])) {
		fprintf(stderr, "usage: threads_test STORE-DIR (a usable directory)\n");
		return 2;
	}
	pthread_t t[THREADS];
	pthread_barrier_init(&barrier, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	int tally = 0;
	cjc_store_foreach_entry(&store, verify_entry, &tally);
	uint64_t v[CJC_STAT_COUNT];
	cjc_stats_read(&store, v);
	int failed = 0;
#define EXPECT(what, got, want)                                                          \
	if ((long long)(got) != (long long)(want))                                       \
		failed++, fprintf(stderr, "%s: %lld, expected %lld\n", what, (long long)(got), \
				  (long long)(want))
	EXPECT("errors", errors, 0);
	EXPECT("winners of the shared key", wins_shared, 1);
	EXPECT("winners of their own keys", wins_own, THREADS);
	EXPECT("entries", tally / 1000, THREADS + 1);
	EXPECT("bad entries", tally % 1000, 0);
	EXPECT("staging left", count_staging(), 0);
	EXPECT("hits counted", v[CJC_STAT_HITS], THREADS * BUMPS);
	printf("%d threads: %s\n", THREADS, failed ? "FAILED" : "all checks passed");
	cjc_store_close(&store);
	return failed ? 1 : 0;
}
