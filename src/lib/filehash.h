/*
 * filehash.h - the SHA-256 and size of source and header files, as a compile
 * sees them now.
 *
 * Results are remembered for the life of the process, so a file listed by
 * several manifest records is read once.  cjc_filehash_get() returns 0, or -1
 * with errno when the file cannot be read (a missing header is simply a
 * mismatch for the caller).  cjc_filehash_forget() drops what is remembered
 * (for callers that change files, such as tests).
 */
#ifndef CJC_FILEHASH_H
#define CJC_FILEHASH_H

#include <stdint.h>

#include "hash.h"

int cjc_filehash_get(const char *path, uint64_t *size, unsigned char sha[CJC_DIGEST_LEN]);
void cjc_filehash_forget(void);

#endif
