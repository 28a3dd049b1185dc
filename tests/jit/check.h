/*
 * check.h - the JIT test drivers' check: a failed condition prints one line
 * (file, line, the message) and is counted in failures; the driver exits 1
 * when any failed.
 */
#ifndef CJC_TEST_CHECK_H
#define CJC_TEST_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

#endif
