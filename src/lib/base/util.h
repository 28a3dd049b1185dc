/*
 * util.h - small building blocks shared by every module.
 *
 * struct cjc_buf is a growable byte buffer that is always NUL-terminated, so
 * it can hold text or binary data.  struct cjc_strvec is a growable array of
 * owned strings, NULL-terminated so it can be handed to execv().
 *
 * Allocation failure is not an error these modules return: cjc_xmalloc() and
 * friends, and the buffers and vectors, hand it to oom.h, which ends the cjc
 * program (exit 70, as git's xmalloc does) and abandons a library call's
 * work (its guard answers "out of memory").  The cjc_*_try_* forms return
 * false instead, for code that must not be abandoned (oom.h says where).
 *
 * Ownership: a buffer or vector owns its storage; release it with
 * cjc_buf_release() / cjc_strvec_clear().  cjc_buf_detach() hands the
 * storage to the caller (free() it).
 */
#ifndef CJC_UTIL_H
#define CJC_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *cjc_xmalloc(size_t n);
void *cjc_xcalloc(size_t n, size_t size);
void *cjc_xrealloc(void *p, size_t n);
char *cjc_xstrdup(const char *s);
char *cjc_xstrndup(const char *s, size_t n);
char *cjc_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *cjc_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* *s = a copy of text (NULL: NULL), the old one freed: after the copy is
 * made, so that *s is never left freed (oom.h). */
void cjc_replace_string(char **s, const char *text);

struct cjc_buf {
	char *data;
	size_t len;
	size_t cap;
};
#define CJC_BUF_INIT { NULL, 0, 0 }

void cjc_buf_grow(struct cjc_buf *b, size_t extra);
void cjc_buf_add(struct cjc_buf *b, const void *p, size_t n);
bool cjc_buf_try_grow(struct cjc_buf *b, size_t extra);
bool cjc_buf_try_add(struct cjc_buf *b, const void *p, size_t n);
void cjc_buf_adds(struct cjc_buf *b, const char *s);
void cjc_buf_addf(struct cjc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cjc_buf_reset(struct cjc_buf *b);
void cjc_buf_release(struct cjc_buf *b);
char *cjc_buf_detach(struct cjc_buf *b);
/* For secrets (a password, a token, a text that holds one): the bytes are
 * wiped (explicit_bzero, which the compiler keeps) before they are freed,
 * so that no freed copy lingers in the heap or a core; NULL is nothing. */
void cjc_free_secret(char *s);
void cjc_buf_release_secret(struct cjc_buf *b);
/* Little-endian fixed-width integers, for the binary files; strings there
 * are a u32 length, then the bytes (no NUL). */
void cjc_buf_add_u32(struct cjc_buf *b, uint32_t v);
/* Overwrites the u32 at offset at (within b->len), once its value is known. */
void cjc_buf_set_u32(struct cjc_buf *b, size_t at, uint32_t v);
void cjc_buf_add_u64(struct cjc_buf *b, uint64_t v);
void cjc_buf_add_str(struct cjc_buf *b, const char *s);

/* A read cursor over a byte range; every getter fails once past the end. */
struct cjc_cursor {
	const unsigned char *p;
	size_t left;
	bool bad;
};
void cjc_cursor_init(struct cjc_cursor *c, const void *p, size_t n);
uint32_t cjc_cursor_u32(struct cjc_cursor *c);
uint64_t cjc_cursor_u64(struct cjc_cursor *c);
const void *cjc_cursor_bytes(struct cjc_cursor *c, size_t n);
/* The next string (malloc'd); NULL, the cursor bad, past the end, longer
 * than max or holding a NUL. */
char *cjc_cursor_str(struct cjc_cursor *c, size_t max);
/* The same in place, not copied: its bytes (no NUL among them, and none
 * after) and their count in *len; NULL as above. */
const char *cjc_cursor_chars(struct cjc_cursor *c, size_t max, size_t *len);

/* A lookup table's hash of n bytes (not a digest): eight bytes a step, so
 * the long shared prefixes of include paths cost a fifth of a byte loop. */
unsigned cjc_table_hash(const char *s, size_t n);

struct cjc_strvec {
	char **v;
	size_t n;
	size_t cap;
};
#define CJC_STRVEC_INIT { NULL, 0, 0 }

void cjc_strvec_push(struct cjc_strvec *sv, const char *s);
void cjc_strvec_pushn(struct cjc_strvec *sv, const char *s, size_t n);
bool cjc_strvec_try_push(struct cjc_strvec *sv, const char *s);
bool cjc_strvec_try_pushn(struct cjc_strvec *sv, const char *s, size_t n);
void cjc_strvec_pushv(struct cjc_strvec *sv, char *const *v, size_t n);
void cjc_strvec_clear(struct cjc_strvec *sv);
bool cjc_strvec_contains(const struct cjc_strvec *sv, const char *s);
/* Sorts the strings and removes duplicates. */
void cjc_strvec_sort_unique(struct cjc_strvec *sv);

/* Shell-quotes argv into one line that can be pasted into sh. */
void cjc_shell_quote(struct cjc_buf *out, char *const *argv, size_t argc);
/* Text a store, a server or another user wrote, made safe to print on a
 * terminal (SPEC 9): C0 controls, DEL and bytes that are not UTF-8 as
 * \xNN; C1 controls, the bidirectional controls (U+061C, U+200E-200F,
 * U+202A-202E, U+2066-2069) and U+2028-2029 as \u{XXXX}; the rest as it
 * is.  cjc_buf_add_printable appends n bytes of s so; cjc_printable is a
 * copy (the caller frees it). */
void cjc_buf_add_printable(struct cjc_buf *b, const char *s, size_t n);
char *cjc_printable(const char *s);
bool cjc_starts_with(const char *s, const char *prefix);
bool cjc_ends_with(const char *s, const char *suffix);
/* Milliseconds and nanoseconds on the monotonic and real clocks. */
int64_t cjc_now_ms(void);
int64_t cjc_wall_ns(void);

#endif
