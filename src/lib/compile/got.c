/* A loaded library's imports, found by name and rebound (got.h). */
#include "compile/got.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define R_SYM ELF64_R_SYM /* x86_64 and aarch64: 64-bit objects */
#define R_TYPE ELF64_R_TYPE
#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "got.c knows the relocations of x86_64 and aarch64 only"
#endif

/* The object as it lies in memory: its program headers (dl_iterate_phdr). */
struct object {
	Elf64_Addr base;
	const char *name;
	const Elf64_Phdr *phdr;
	size_t nphdr;
	bool seen;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct object *o = data;
	if (info->dlpi_addr != o->base || strcmp(info->dlpi_name ? info->dlpi_name : "", o->name))
		return 0;
	o->phdr = info->dlpi_phdr;
	o->nphdr = info->dlpi_phnum;
	o->seen = true;
	return 1;
}

/* Whether [p, p + len) lies in a loaded segment (writable ones alone when asked). */
static bool mapped(const struct object *o, uintptr_t p, size_t len, bool writable)
{
	for (size_t i = 0; i < o->nphdr; i++) {
		const Elf64_Phdr *h = &o->phdr[i];
		uintptr_t start = o->base + h->p_vaddr;
		if (h->p_type == PT_LOAD && (!writable || (h->p_flags & PF_W)) && p >= start &&
		    p - start <= h->p_memsz && len <= h->p_memsz - (p - start))
			return true;
	}
	return false;
}

/* What a dynamic entry points at: the loader may have relocated it in
 * place, or not (some architectures keep .dynamic read-only). */
static const void *pointer(const struct object *o, Elf64_Addr d_ptr)
{
	if (mapped(o, d_ptr, 1, false))
		return (const void *)d_ptr;
	if (mapped(o, o->base + d_ptr, 1, false))
		return (const void *)(o->base + d_ptr);
	return NULL;
}

/* The dynamic section's tables. */
struct tables {
	const Elf64_Sym *symtab;
	const char *strtab;
	size_t strsz;
	const Elf64_Rela *rela[2];
	size_t nrela[2];
	uintptr_t relro_start, relro_end; /* the pages the loader made read-only */
};

static int read_dynamic(const struct object *o, struct tables *t, struct cjc_buf *why)
{
	const Elf64_Dyn *dyn = NULL;
	long page = sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < o->nphdr; i++) {
		const Elf64_Phdr *h = &o->phdr[i];
		if (h->p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(o->base + h->p_vaddr);
		if (h->p_type == PT_GNU_RELRO) {
			t->relro_start = (o->base + h->p_vaddr) & ~(uintptr_t)(page - 1);
			t->relro_end = (o->base + h->p_vaddr + h->p_memsz) & ~(uintptr_t)(page - 1);
		}
	}
	if (!dyn)
		return cjc_buf_addf(why, "%s has no dynamic section", o->name), -1;
	Elf64_Addr pltrel = DT_RELA, symtab = 0, strtab = 0, rela = 0, jmprel = 0;
	size_t relasz = 0, pltrelsz = 0, relaent = sizeof(Elf64_Rela);
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = dyn->d_un.d_ptr; break;
		case DT_STRTAB: strtab = dyn->d_un.d_ptr; break;
		case DT_STRSZ: t->strsz = dyn->d_un.d_val; break;
		case DT_RELA: rela = dyn->d_un.d_ptr; break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		case DT_RELAENT: relaent = dyn->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn->d_un.d_ptr; break;
		case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
		case DT_PLTREL: pltrel = dyn->d_un.d_val; break;
		case DT_REL:
		case DT_RELSZ: return cjc_buf_addf(why, "%s has REL relocations", o->name), -1;
		}
	}
	t->symtab = pointer(o, symtab);
	t->strtab = pointer(o, strtab);
	t->rela[0] = rela ? pointer(o, rela) : NULL;
	t->rela[1] = jmprel ? pointer(o, jmprel) : NULL;
	t->nrela[0] = t->rela[0] ? relasz / sizeof(Elf64_Rela) : 0;
	t->nrela[1] = t->rela[1] ? pltrelsz / sizeof(Elf64_Rela) : 0;
	if (!t->symtab || !t->strtab || !t->strsz || pltrel != DT_RELA ||
	    relaent != sizeof(Elf64_Rela) || (rela && !t->rela[0]) || (jmprel && !t->rela[1]))
		return cjc_buf_addf(why, "%s's dynamic section is not as expected", o->name), -1;
	return 0;
}

static long name_index(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return (long)i;
	return -1;
}

/* One relocation: a slot when it imports a name wanted; -1 when it is not
 * as expected. */
static int take(const struct object *o, const struct tables *t, const Elf64_Rela *r,
		const char *const *names, size_t n, struct cjc_got_slot *slot, struct cjc_buf *why)
{
	size_t sym = R_SYM(r->r_info);
	unsigned type = (unsigned)R_TYPE(r->r_info);
	slot->at = NULL;
	if (!sym)
		return 0;
	const Elf64_Sym *s = &t->symtab[sym];
	if (!mapped(o, (uintptr_t)s, sizeof *s, false) || s->st_name >= t->strsz)
		return cjc_buf_addf(why, "%s: a symbol out of its table", o->name), -1;
	long k = name_index(t->strtab + s->st_name, names, n);
	if (k < 0)
		return 0;
	uintptr_t at = o->base + r->r_offset;
	const char *name = names[k];
	if ((type != R_JUMP_SLOT && type != R_GLOB_DAT) || r->r_addend)
		return cjc_buf_addf(why, "%s: a relocation of %s of type %u", o->name, name, type),
		       -1;
	if (s->st_shndx != SHN_UNDEF)
		return cjc_buf_addf(why, "%s defines %s itself", o->name, name), -1;
	if (at % sizeof(void *) || !mapped(o, at, sizeof(void *), true))
		return cjc_buf_addf(why, "%s: the slot of %s is not in its data", o->name, name),
		       -1;
	*slot = (struct cjc_got_slot){ (void **)at, (size_t)k,
				       at >= t->relro_start && at < t->relro_end };
	return 0;
}

int cjc_got_find(void *lib, const char *const *names, size_t n, struct cjc_got_slot **slots,
		 size_t *nslots, struct cjc_buf *why)
{
	struct link_map *lm = NULL;
	*slots = NULL;
	*nslots = 0;
	if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) || !lm)
		return cjc_buf_addf(why, "no loaded object for the handle: %s", dlerror()), -1;
	struct object o = { .base = lm->l_addr, .name = lm->l_name ? lm->l_name : "" };
	struct tables t = { 0 };
	dl_iterate_phdr(find_object, &o);
	if (!o.seen)
		return cjc_buf_addf(why, "%s is not among the loaded objects", o.name), -1;
	if (read_dynamic(&o, &t, why))
		return -1;
	for (int table = 0; table < 2; table++)
		for (size_t i = 0; i < t.nrela[table]; i++) {
			struct cjc_got_slot slot;
			if (take(&o, &t, &t.rela[table][i], names, n, &slot, why)) {
				free(*slots);
				*slots = NULL;
				*nslots = 0;
				return -1;
			}
			if (!slot.at)
				continue;
			*slots = cjc_xrealloc(*slots, (*nslots + 1) * sizeof **slots);
			(*slots)[(*nslots)++] = slot;
		}
	return 0;
}

int cjc_got_write(const struct cjc_got_slot *slot, void *value, struct cjc_buf *why)
{
	long size = sysconf(_SC_PAGESIZE);
	void *page = (void *)((uintptr_t)slot->at & ~(uintptr_t)(size - 1));
	if (slot->readonly && mprotect(page, (size_t)size, PROT_READ | PROT_WRITE))
		return cjc_buf_addf(why, "cannot make a page writable: %s", strerror(errno)), -1;
	__atomic_store_n(slot->at, value, __ATOMIC_RELEASE);
	if (slot->readonly && mprotect(page, (size_t)size, PROT_READ))
		return cjc_buf_addf(why, "cannot make a page read-only: %s", strerror(errno)), -1;
	return 0;
}
