/*
 * audit.c - how the NVRTC shim reaches programs nobody changes: an audit
 * module of the dynamic loader (rtld-audit(7)), named by LD_AUDIT (`cjc
 * run` sets it; docs/nvrtc-shim.md).
 *
 * Whichever way a program loads NVRTC (linked with -lnvrtc, dlopen by
 * soname or by path, Python's ctypes), the loader asks this module where
 * the file is (la_objsearch).  The first NVRTC file found, libnvrtc.so.N,
 * is swapped for the shim built for major N (libcudajitcache-nvrtc.so.N in
 * the shim's directory), which exports NVRTC's calls with NVRTC's symbol
 * versions and needs CJC_REAL_NVRTC; that name is then bound here to the
 * file the program asked for, so the shim's calls it does not define are
 * NVRTC's own.  NVRTC's calls of the C library's file functions (watch.h)
 * are bound to trampolines into the shim (la_symbind64), so the shim sees
 * each file a compile reads.  A second, different NVRTC in one process is
 * left alone, and runs uncached.
 *
 * The module is loaded into every process that inherits LD_AUDIT, so it
 * costs as little as it can: it links no library at all (the loader maps
 * none for it), makes no system call until the loader looks for an NVRTC,
 * then reads its two settings from /proc/self/environ with raw system
 * calls.  With CJC_DISABLE true (docs/settings.md) it swaps nothing.
 * Where the shim lies: CJC_NVRTC_SHIM_DIR, else the directory it was
 * installed in (CJC_SHIM_DIR, set at build time).
 */
#include <link.h>
#include <stdint.h>

#include "watch.h"

#ifndef CJC_SHIM_DIR
#error "CJC_SHIM_DIR: where the shims are installed"
#endif

/* ---- system calls, without a C library ---- */

#if defined(__x86_64__)
enum { SYS_READ = 0, SYS_CLOSE = 3, SYS_OPENAT = 257, SYS_READLINKAT = 267, SYS_FSTATAT = 262 };
static long sys4(long n, long a, long b, long c, long d)
{
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}
#elif defined(__aarch64__)
enum { SYS_READ = 63, SYS_CLOSE = 57, SYS_OPENAT = 56, SYS_READLINKAT = 78, SYS_FSTATAT = 79 };
static long sys4(long n, long a, long b, long c, long d)
{
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c, x3 __asm__("x3") = d;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
}
#else
#error "the NVRTC shim's audit module knows the system calls of x86_64 and aarch64 only"
#endif

#define AT_CWD (-100)
#define PATH_MAX_ 4096

/* The identity of a file (following links), or 0 when there is none. */
struct file_id {
	uint64_t dev, ino;
};

static int file_id(const char *path, struct file_id *id)
{
	struct stat st; /* the kernel's layout is the C library's on these two */
	if (sys4(SYS_FSTATAT, AT_CWD, (long)path, (long)&st, 0))
		return -1;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

/* ---- strings ---- */

static unsigned long len(const char *s)
{
	unsigned long n = 0;
	while (s[n])
		n++;
	return n;
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static int starts(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return 0;
	return 1;
}

static const char *base(const char *path)
{
	const char *b = path;
	for (const char *p = path; *p; p++)
		if (*p == '/')
			b = p + 1;
	return b;
}

/* dst = a + b (+ c), or 0 when it does not fit. */
static int join(char *dst, unsigned long size, const char *a, const char *b, const char *c)
{
	unsigned long la = len(a), lb = len(b), lc = c ? len(c) : 0;
	if (la + lb + lc + 1 > size)
		return 0;
	for (unsigned long i = 0; i < la; i++)
		dst[i] = a[i];
	for (unsigned long i = 0; i < lb; i++)
		dst[la + i] = b[i];
	for (unsigned long i = 0; i < lc; i++)
		dst[la + lb + i] = c[i];
	dst[la + lb + lc] = 0;
	return 1;
}

/* ---- settings ---- */

static int disabled;
static char shim_dir[PATH_MAX_] = CJC_SHIM_DIR;

/* Whether a and b are the same, in any case (ASCII). */
static int same_word(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if ((*a | 0x20) != (*b | 0x20))
			return 0;
	return *a == *b;
}

/* A true boolean setting, as cjc reads them (config.c): 1, true, yes, on. */
static int truthy(const char *v)
{
	return same(v, "1") || same_word(v, "true") || same_word(v, "yes") || same_word(v, "on");
}

static void setting(const char *entry)
{
	if (starts(entry, "CJC_DISABLE="))
		disabled = truthy(entry + 12);
	else if (starts(entry, "CJC_NVRTC_SHIM_DIR=") && entry[19] == '/')
		join(shim_dir, sizeof shim_dir, entry + 19, "", 0);
}

/* Reads the environment the process started with, entry by entry. */
static void read_settings(void)
{
	static char chunk[4096], entry[PATH_MAX_ + 32];
	unsigned long n = 0;
	long fd = sys4(SYS_OPENAT, AT_CWD, (long)"/proc/self/environ", 0 /* O_RDONLY */, 0);
	if (fd < 0)
		return;
	for (long got; (got = sys4(SYS_READ, fd, (long)chunk, sizeof chunk, 0)) > 0;)
		for (long i = 0; i < got; i++) {
			if (chunk[i]) {
				if (n < sizeof entry - 1)
					entry[n++] = chunk[i];
				continue;
			}
			entry[n] = 0;
			setting(entry);
			n = 0;
		}
	sys4(SYS_CLOSE, fd, 0, 0, 0);
}

/* ---- which file is NVRTC, and its shim ---- */

static struct {
	int chosen;                    /* an NVRTC was swapped for the shim, and the shim loaded */
	struct file_id id;             /* its file (or the one offered, until chosen) */
	char real[PATH_MAX_ + 4];      /* its path, as <dir>/./<name> (below) */
	char shim[PATH_MAX_];          /* the shim in its place */
	char asked[PATH_MAX_];         /* the path the shim was last offered for */
	uintptr_t shim_map, real_map;
} nvrtc;

/* NVRTC's major version from a file name (libnvrtc.so.13[.0.88]), following
 * the links of an unversioned libnvrtc.so; 0 when it is not NVRTC. */
static int major_of(const char *path)
{
	static char link[PATH_MAX_];
	const char *name = base(path);
	for (int hops = 0; same(name, "libnvrtc.so") && hops < 8; hops++) {
		long n = sys4(SYS_READLINKAT, AT_CWD, (long)path, (long)link, sizeof link - 1);
		if (n <= 0)
			return 0;
		link[n] = 0;
		name = base(link);
		if (link[0] == '/')
			path = link;
		else if (!same(name, "libnvrtc.so"))
			break;
		else
			return 0; /* a relative chain: not followed */
	}
	if (!starts(name, "libnvrtc.so.") || name[12] < '1' || name[12] > '9')
		return 0;
	int major = 0;
	for (const char *p = name + 12; *p >= '0' && *p <= '9' && major < 1000; p++)
		major = major * 10 + (*p - '0');
	return major;
}

/* The path of the shim for a major version, when it is installed. */
static int shim_for(int major, char *out, unsigned long size)
{
	char digits[8];
	int n = 0;
	for (int m = major; m && n < 7; m /= 10)
		n++;
	digits[n] = 0;
	for (int m = major, i = n; i > 0; m /= 10)
		digits[--i] = (char)('0' + m % 10);
	struct file_id id;
	return join(out, size, shim_dir, "/libcudajitcache-nvrtc.so.", digits) && !file_id(out, &id);
}

/* NVRTC's path as the shim's needed library: the same file under a name
 * no program uses (<dir>/./<name>), so that a program that loads NVRTC by
 * its path is not handed NVRTC itself, which the loader would find loaded
 * under that name, but is asked about here and given the shim. */
static int keep_real(const char *path)
{
	const char *name = base(path);
	unsigned long dir = (unsigned long)(name - path);
	if (!dir || dir + len(name) + 3 > sizeof nvrtc.real)
		return 0;
	for (unsigned long i = 0; i < dir; i++)
		nvrtc.real[i] = path[i];
	return join(nvrtc.real + dir, sizeof nvrtc.real - dir, "./", name, 0);
}

/* The shim in place of the NVRTC at path.  An NVRTC is chosen only once
 * the shim is loaded in its place (la_objopen): a lookup that loads nothing
 * (dlopen with RTLD_NOLOAD, as cuda-python's and CuPy's "is it loaded
 * already?" probe by soname does) must not make the NVRTC loaded next
 * "another NVRTC". */
static char *swap(const char *path)
{
	struct file_id id;
	if (file_id(path, &id))
		return (char *)path; /* the loader looks further */
	if (nvrtc.chosen) {
		if (id.dev != nvrtc.id.dev || id.ino != nvrtc.id.ino)
			return (char *)path; /* another NVRTC: left alone */
		return nvrtc.shim;
	}
	int major = major_of(path);
	if (!major || !shim_for(major, nvrtc.shim, sizeof nvrtc.shim) || !keep_real(path))
		return (char *)path;
	if (!join(nvrtc.asked, sizeof nvrtc.asked, path, "", 0))
		return (char *)path;
	nvrtc.id = id;
	return nvrtc.shim;
}

unsigned int la_version(unsigned int version)
{
	if (version < 1)
		return 0;
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag)
{
	(void)cookie;
	if (same(name, CJC_REAL_NVRTC)) {
		return nvrtc.chosen ? nvrtc.real : (char *)name;
	}
	const char *b = base(name);
	if (!starts(b, "libnvrtc.so") || (flag == LA_SER_ORIG && b == name))
		return (char *)name; /* a bare name: each place it may be is asked next */
	static int settings_read;
	if (!settings_read++)
		read_settings(); /* only in a process that looks for NVRTC */
	return disabled ? (char *)name : swap(name);
}

/* The shim and the NVRTC behind it are known by their maps' names: the
 * loader names the shim by the path it was offered for (a library it
 * searched for) or by the shim's own (one opened by its path).  A lookup
 * that loads nothing opens no object. */
unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)lmid;
	const char *name = map->l_name;
	if (!nvrtc.chosen && nvrtc.asked[0] && (same(name, nvrtc.asked) || same(name, nvrtc.shim))) {
		nvrtc.chosen = 1;
		nvrtc.shim_map = *cookie;
		return LA_FLG_BINDFROM | LA_FLG_BINDTO;
	}
	if (nvrtc.chosen && !nvrtc.real_map && same(name, nvrtc.real)) {
		nvrtc.real_map = *cookie;
		return LA_FLG_BINDFROM;
	}
	/* wherever NVRTC's calls may go: the C library, or a library that
	 * interposes on it (a sanitizer's runtime does); only NVRTC's own
	 * bindings are then reported (la_symbind64) */
	return LA_FLG_BINDTO;
}

/* ---- the trampolines ---- */

static const struct cjc_watch_table *table;

static int hello(const struct cjc_watch_table *t)
{
	if (!t || t->version != CJC_WATCH_VERSION)
		return 0;
	__atomic_store_n(&table, t, __ATOMIC_RELEASE);
	return CJC_WATCH_VERSION;
}

#define TRAMPOLINE(name, ret, params, args)                                                  \
	static uintptr_t libc_##name;                                                         \
	static ret t_##name params                                                            \
	{                                                                                     \
		const struct cjc_watch_table *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);   \
		if (t && t->name)                                                             \
			return t->name args;                                                  \
		return ((ret(*) params)libc_##name) args;                                     \
	}
CJC_WATCHED(TRAMPOLINE)
CJC_FORBIDDEN(TRAMPOLINE)

static uintptr_t bind(const char *symbol, uintptr_t value)
{
#define BIND(name, ret, params, args)                                                        \
	if (same(symbol, #name)) {                                                            \
		libc_##name = value;                                                          \
		return (uintptr_t)t_##name;                                                   \
	}
	CJC_WATCHED(BIND)
	CJC_FORBIDDEN(BIND)
#undef BIND
	return value;
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
		       unsigned int *flags, const char *symname)
{
	(void)ndx, (void)defcook, (void)flags;
	if (*refcook == nvrtc.shim_map && nvrtc.shim_map && same(symname, "cjc_nvrtc_audit_hello"))
		return (uintptr_t)hello;
	if (*refcook == nvrtc.real_map && nvrtc.real_map)
		return bind(symname, sym->st_value);
	return sym->st_value;
}
